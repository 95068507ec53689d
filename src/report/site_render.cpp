#include "memsnap/report/site_render.h"

#include "memsnap/util/strings.h"

namespace memsnap::report {

bool RenderCallerLines(const analysis::SiteInfo& site, const analysis::SiteLabel& label,
                       size_t context, std::string_view indent, bool count_more,
                       std::ostream& out) {
  size_t more = 0;
  bool marked = false;
  for (const analysis::CallerLine& c : analysis::CallerLines(site, label, context, &more)) {
    out << indent << kCallerArrow << c.text << (c.tells ? kDiffersMark : "") << "\n";
    marked = marked || c.tells;
  }
  if (count_more && more > 0) {
    out << indent << kCallerArrow << "\u2026 " << more
        << (more == 1 ? " more frame\n" : " more frames\n");
  }
  return marked;
}

}  // namespace memsnap::report
