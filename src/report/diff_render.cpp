#include "memsnap/report/diff_render.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "memsnap/report/device_sections.h"
#include "memsnap/report/site_render.h"
#include "memsnap/report/table_render.h"
#include "memsnap/util/format.h"
#include "memsnap/util/strings.h"

namespace memsnap::report {

using analysis::Delta;
using analysis::SiteDelta;
using Json = nlohmann::ordered_json;

namespace {
constexpr size_t kCallers = 2;  // callers shown under a row (more when one tells it apart)

Json DeltaJson(const Delta& d) {
  return {{"before", d.before}, {"after", d.after}, {"delta", d.delta()}};
}
std::string MomentText(const analysis::Moment& m) {
  return m.kind == analysis::Moment::Kind::kPeak ? "peak" : "end";
}
// Why diff chose its moment: "both files have a trace", "B has no trace, so no peak"; "" when the
// user chose.
std::string MomentReason(const analysis::DiffReport& rep) {
  switch (rep.moment_choice) {
    case analysis::MomentChoice::kGiven:
      return "";
    case analysis::MomentChoice::kBothTraced:
      return "both files have a trace";
    case analysis::MomentChoice::kUntraced:
      return absl::StrCat(rep.untraced_file, " has no trace, so no peak");
  }
  return "";
}

// "at each file's peak (both files have a trace; --at end compares the final states)".
std::string MomentHeader(const analysis::DiffReport& rep) {
  if (!rep.options.at_label.empty()) return absl::StrCat("at ", rep.options.at_label);
  const bool peak = rep.options.at.kind == analysis::Moment::Kind::kPeak;
  std::string s = peak ? "at each file's peak" : "at the end";
  if (const std::string reason = MomentReason(rep); !reason.empty()) {
    absl::StrAppend(&s, " (", reason, peak ? "; --at end compares the final states)" : ")");
  }
  return s;
}
// "gradients", "optimizer states": the rows of one kind, as a sentence names them.
std::string_view KindPlural(analysis::Category c) {
  switch (c) {
    case analysis::Category::kParameter:
      return "parameters";
    case analysis::Category::kGradient:
      return "gradients";
    case analysis::Category::kOptimizerState:
      return "optimizer states";
    case analysis::Category::kActivation:
      return "activations";
    case analysis::Category::kTemporary:
      return "temporaries";
    case analysis::Category::kInput:
      return "inputs";
    case analysis::Category::kKvCache:
      return "KV cache";
    case analysis::Category::kAutocastCache:
      return "autocast's cached weight casts";
    case analysis::Category::kState:
      return "state your objects keep";
    case analysis::Category::kUnknown:
      break;
  }
  return "memory of unknown kind";
}
// What grew in the user's terms, before the sites say where. Nothing when no kind changed.
void RenderKinds(const analysis::DiffReport& rep, std::ostream& out) {
  const std::string text =
      KindChangesText(rep.before_by_category, rep.after_by_category, rep.options.group.categories);
  if (!text.empty()) out << "by kind: " << text << "\n";
}
}  // namespace

std::string KindChangesText(const analysis::CategoryBytes& before,
                            const analysis::CategoryBytes& after,
                            const analysis::CategoryNames& names) {
  std::vector<int> kinds;
  std::string same;  // the kinds that did not change, after those that did
  for (int c = 0; c < names.size(); ++c) {
    if (before[c] != after[c]) {
      kinds.push_back(c);
    } else if (after[c] != 0) {
      absl::StrAppend(&same, ", ", Sv(names.Name(static_cast<analysis::Category>(c))), " ",
                      FormatBytes(after[c]), " (unchanged)");
    }
  }
  if (kinds.empty()) return "";
  auto delta = [&](int c) { return after[c] - before[c]; };
  std::stable_sort(kinds.begin(), kinds.end(),
                   [&](int a, int b) { return std::llabs(delta(a)) > std::llabs(delta(b)); });
  std::string text;
  for (int c : kinds) {
    absl::StrAppend(&text, text.empty() ? "" : ", ",
                    Sv(names.Name(static_cast<analysis::Category>(c))), " ", FormatBytes(before[c]),
                    " -> ", FormatBytes(after[c]), " (", FormatDelta(delta(c)), ")");
  }
  return text + same;
}

Json KindChangesJson(const analysis::CategoryBytes& before, const analysis::CategoryBytes& after,
                     const analysis::CategoryNames& names) {
  Json kinds = Json::object();
  for (int c = 0; c < names.size(); ++c) {
    kinds[std::string(names.Name(static_cast<analysis::Category>(c)))] =
        DeltaJson({before[c], after[c]});
  }
  return kinds;
}

namespace {
// The scope of a whole device ("device 3"), not one of its pools or streams.
bool IsDeviceScope(const analysis::ScopeDelta& s) {
  return s.scope == absl::StrCat("device ", s.device);
}
}  // namespace

void RenderDiffText(const analysis::DiffReport& rep, size_t top, std::ostream& out) {
  out << "before: " << rep.before_path << "\nafter:  " << rep.after_path << "\n";
  out << "live memory " << MomentHeader(rep) << " by "
      << analysis::GroupByName(rep.options.group.by) << ": " << FormatBytes(rep.live_bytes.before)
      << " -> " << FormatBytes(rep.live_bytes.after) << " (" << FormatDelta(rep.live_bytes.delta())
      << "), blocks " << FormatCount(rep.live_count.before) << " -> "
      << FormatCount(rep.live_count.after) << "\n";
  if (rep.no_stacks) {
    out << "note: neither file has a stack for the memory live "
        << (rep.options.at.kind == analysis::Moment::Kind::kPeak ? "at its peak" : "at the end")
        << ", so sites cannot be told apart"
        << (rep.both_traced && rep.options.at.kind != analysis::Moment::Kind::kPeak
                ? "; the traces record stacks: try --at peak"
                : "; record with torch.cuda.memory._record_memory_history() for stacks")
        << "\n";
  }
  RenderKinds(rep, out);
  out << "\n";
  Table sites;
  sites.AddColumn("before_bytes", "before", Unit::kBytes).min_width = 12;
  sites.AddColumn("after_bytes", "after", Unit::kBytes).min_width = 12;
  sites.AddColumn("delta_bytes", "delta", Unit::kDelta).min_width = 12;
  Column& count = sites.AddColumn("delta_count", "count", Unit::kText);
  count.min_width = 9;
  count.align = Align::kRight;  // "=", "+3"
  sites.AddColumn("category", "category", Unit::kText).min_width = 16;
  sites.AddColumn("site", "site", Unit::kText);
  size_t n = top == 0 ? rep.sites.size() : std::min(top, rep.sites.size());
  for (size_t i = 0; i < n; ++i) {
    const SiteDelta& s = rep.sites[i];
    std::string tag = s.presence == analysis::Presence::kOnlyBefore     ? " [gone]"
                      : s.presence == analysis::Presence::kOnlyAfter    ? " [new]"
                      : s.compile == analysis::CompileChange::kCompiled ? " [compiled]"
                      : s.compile == analysis::CompileChange::kEager    ? " [eager]"
                      : s.by_parameter                                  ? " [same parameters]"
                      : s.before_key.empty()                            ? ""
                                             : MovedTag(s.site, s.info, s.label, s.moved, kCallers);
    sites.AddRow({s.before_bytes, s.after_bytes, s.delta_bytes(),
                  s.delta_count() == 0 ? std::string("=") : absl::StrFormat("%+d", s.delta_count()),
                  std::string(rep.options.group.categories.Name(s.category())),
                  absl::StrCat(s.label.head.empty() ? s.site : s.label.head, tag)});
  }
  const std::string under_site(FixedColumnStart(sites, "site", FixedWidths()), ' ');
  bool any_differs = false;
  RenderTableText(sites, out, FixedWidths(), [&](size_t i, std::ostream& os) {
    const SiteDelta& s = rep.sites[i];
    any_differs =
        RenderCallerLines(s.info, s.label, kCallers, under_site, false, os) || any_differs;
  });
  if (any_differs) out << kDiffersNote;
  if (n < rep.sites.size())
    out << "... " << rep.sites.size() - n << " more sites (--top 0 shows all)\n";
  out << "sites: " << rep.sites_only_before << " only before, " << rep.sites_only_after
      << " only after, " << rep.sites_unchanged << " unchanged";
  if (rep.sites_moved > 0) out << ", " << rep.sites_moved << " paired across moved lines";
  if (rep.sites_compiled > 0) {
    // Pairs whose figures did not change are not rows: say so, or the count would not add up.
    const int64_t same =
        std::count_if(rep.other_sites.begin(), rep.other_sites.end(), [](const SiteDelta& s) {
          return s.compile != analysis::CompileChange::kNone && s.delta_bytes() == 0 &&
                 s.delta_count() == 0;
        });
    out << ", " << rep.sites_compiled << " run eagerly in one file and compiled in the other";
    if (same > 0) out << " (" << same << " unchanged)";
  }
  if (rep.sites_by_parameter > 0) {
    out << ", " << rep.sites_by_parameter
        << (rep.sites_by_parameter == 1 ? " gradient row" : " gradient rows")
        << " of the same parameters made by other autograd nodes";
  }
  out << "\n";
  for (const analysis::FoldedRows& f : rep.folded) {
    out << f.rows << " rows that cancel within " << KindPlural(f.category) << " folded (\u00b1"
        << FormatBytes(f.bytes) << ")\n";
  }
  out << "\n";

  Table totals;
  totals.AddColumn("scope", "totals", Unit::kText).min_width = 42;
  totals.AddColumn("before", "before", Unit::kBytes).min_width = 12;
  totals.AddColumn("after", "after", Unit::kBytes).min_width = 12;
  totals.AddColumn("delta", "delta", Unit::kDelta).min_width = 12;
  Column& segments = totals.AddColumn("segments", "segments", Unit::kText);
  segments.min_width = 9;
  segments.align = Align::kRight;  // "3->4"
  // Past kFullDeviceSections devices, one line per device: its reserved bytes (the pools,
  // streams, allocated bytes and peaks of one device: --device N).
  size_t devices = 0;
  for (const analysis::ScopeDelta& s : rep.scopes) devices += IsDeviceScope(s) ? 1 : 0;
  const bool compact = CompactDevices(std::max(devices, rep.devices.size()));
  if (compact) {
    out << CompactDevicesNote(std::max(devices, rep.devices.size()), "diff") << "\n";
    totals.rows.reserve(devices);
  }
  for (const analysis::ScopeDelta& s : rep.scopes) {
    if (compact && !IsDeviceScope(s)) continue;
    totals.AddRow({absl::StrCat(s.scope, " reserved"), s.reserved.before, s.reserved.after,
                   s.reserved.delta(), absl::StrCat(s.segments.before, "->", s.segments.after)});
    if (compact) continue;  // a device's reserved bytes alone
    totals.AddRow({absl::StrCat(s.scope, " allocated"), s.allocated.before, s.allocated.after,
                   s.allocated.delta(), std::string()});
  }
  for (const analysis::DeviceDelta& d : rep.devices) {
    if (!d.has_peak || compact) continue;
    totals.AddRow({absl::StrCat("device ", d.device, " peak live"), d.peak.before, d.peak.after,
                   d.peak.delta(), std::string()});
  }
  RenderTableText(totals, out, FixedWidths());
  if (!rep.settings.empty()) {
    out << "\nallocator settings that differ:\n";
    for (const analysis::SettingDelta& s : rep.settings) {
      out << "  " << s.name << ": " << s.before << " -> " << s.after << "\n";
    }
  }
}

Json DiffToJson(const analysis::DiffReport& rep) {
  Json j;
  j["before"] = rep.before_path;
  j["after"] = rep.after_path;
  j["at"] = rep.options.at_label.empty() ? MomentText(rep.options.at) : rep.options.at_label;
  j["at_reason"] =
      rep.moment_choice == analysis::MomentChoice::kGiven ? Json(nullptr) : Json(MomentReason(rep));
  j["no_stacks"] = rep.no_stacks;
  j["by"] = std::string(analysis::GroupByName(rep.options.group.by));
  j["min_delta"] = rep.options.min_delta;
  j["live_bytes"] = DeltaJson(rep.live_bytes);
  j["live_count"] = DeltaJson(rep.live_count);
  j["live_bytes_by_category"] =
      KindChangesJson(rep.before_by_category, rep.after_by_category, rep.options.group.categories);
  j["sites_only_before"] = rep.sites_only_before;
  j["sites_only_after"] = rep.sites_only_after;
  j["sites_unchanged"] = rep.sites_unchanged;
  j["sites_moved"] = rep.sites_moved;
  j["sites_compiled"] = rep.sites_compiled;
  j["sites_by_parameter"] = rep.sites_by_parameter;
  Json folded = Json::array();
  for (const analysis::FoldedRows& f : rep.folded) {
    folded.push_back({{"category", std::string(rep.options.group.categories.Name(f.category))},
                      {"rows", f.rows},
                      {"bytes", f.bytes}});
  }
  j["folded"] = folded;
  Json sites = Json::array();
  for (const SiteDelta& s : rep.sites) {
    Json o;
    o["key"] = s.key;
    o["site"] = s.site;
    o["category"] = std::string(rep.options.group.categories.Name(s.category()));
    o["frames"] = s.frames;
    if (!s.info.forward_lines.empty()) o["forward_lines"] = s.info.forward_lines;
    o["presence"] = std::string(analysis::PresenceName(s.presence));
    o["before_key"] = s.before_key.empty() ? Json(nullptr) : Json(s.before_key);
    o["moved"] = s.moved;
    if (s.compile != analysis::CompileChange::kNone) {
      o["compile"] = {{"change", std::string(analysis::CompileChangeName(s.compile))},
                      {"eager_ops", s.eager_ops},
                      {"before_keys", s.before_keys},
                      {"after_keys", s.after_keys}};
    }
    if (s.by_parameter) {
      o["by_parameter"] = {{"before_keys", s.before_keys}, {"after_keys", s.after_keys}};
    }
    o["before_bytes"] = s.before_bytes;
    o["after_bytes"] = s.after_bytes;
    o["delta_bytes"] = s.delta_bytes();
    o["before_count"] = s.before_count;
    o["after_count"] = s.after_count;
    o["delta_count"] = s.delta_count();
    o["synthetic"] = s.synthetic;
    sites.push_back(std::move(o));
  }
  j["sites"] = sites;
  Json scopes = Json::array();
  for (const analysis::ScopeDelta& s : rep.scopes) {
    scopes.push_back({{"scope", s.scope},
                      {"device", s.device},
                      {"reserved_bytes", DeltaJson(s.reserved)},
                      {"allocated_bytes", DeltaJson(s.allocated)},
                      {"requested_bytes", DeltaJson(s.requested)},
                      {"segments", DeltaJson(s.segments)},
                      {"blocks", DeltaJson(s.blocks)}});
  }
  j["scopes"] = scopes;
  Json devs = Json::array();
  for (const analysis::DeviceDelta& d : rep.devices) {
    devs.push_back({{"device", d.device},
                    {"live_bytes", DeltaJson(d.live)},
                    {"peak_bytes", d.has_peak ? DeltaJson(d.peak) : Json(nullptr)}});
  }
  j["devices"] = devs;
  Json settings = Json::array();
  for (const analysis::SettingDelta& s : rep.settings) {
    settings.push_back({{"name", s.name}, {"before", s.before}, {"after", s.after}});
  }
  j["settings"] = settings;
  return j;
}

void RenderDiffFolded(const analysis::DiffReport& rep, std::ostream& out) {
  std::vector<const SiteDelta*> all;
  for (const SiteDelta& s : rep.sites) all.push_back(&s);
  for (const SiteDelta& s : rep.other_sites) all.push_back(&s);
  std::sort(all.begin(), all.end(),
            [](const SiteDelta* a, const SiteDelta* b) { return a->key < b->key; });
  for (const SiteDelta* s : all) {
    out << s->key << " " << s->before_bytes << " " << s->after_bytes << "\n";
  }
}

}  // namespace memsnap::report
