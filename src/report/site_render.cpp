#include "memsnap/report/site_render.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
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

std::vector<std::string_view> UnseenMoves(const std::string& site, const analysis::SiteInfo& info,
                                          const analysis::SiteLabel& label,
                                          const std::vector<std::string>& moved,
                                          size_t callers_shown) {
  std::string shown = label.head.empty() ? site : label.head;
  for (const analysis::CallerLine& c : analysis::CallerLines(info, label, callers_shown, nullptr))
    absl::StrAppend(&shown, "\n", Sv(c.text));
  std::vector<std::string_view> unseen;
  for (const std::string& m : moved) {
    if (shown.find(m) == std::string::npos) unseen.push_back(m);
  }
  return unseen;
}

std::string MovedTag(const std::string& site, const analysis::SiteInfo& info,
                     const analysis::SiteLabel& label, const std::vector<std::string>& moved,
                     size_t callers_shown) {
  if (moved.empty()) return " [lines moved]";
  std::vector<std::string_view> unseen = UnseenMoves(site, info, label, moved, callers_shown);
  if (unseen.empty()) return "";
  std::string_view first = unseen[0];
  first.remove_prefix(std::min(first.size(), first.rfind('/', first.find(':')) + 1));
  return absl::StrCat(" [moved: ", Sv(first),
                      unseen.size() > 1 ? absl::StrCat(" +", unseen.size() - 1) : "", "]");
}

}  // namespace memsnap::report
