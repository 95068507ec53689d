#include "memsnap/report/leaks_render.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "memsnap/query/leaks.h"
#include "memsnap/report/site_render.h"
#include "memsnap/report/table_render.h"
#include "memsnap/util/format.h"
#include "memsnap/util/strings.h"
#include "memsnap/util/table.h"
#include "report/render_util.h"

namespace memsnap::report {

namespace {

using Json = nlohmann::ordered_json;
using analysis::LeakReport;
using analysis::LeakSite;
using analysis::Verdict;

constexpr int kNumVerdicts = 6;
constexpr size_t kMaxValuesShown = 8;  // per site: first 3, "...", last 3 beyond this
constexpr size_t kMaxStepsShown = 12;  // step table rows in text mode
constexpr size_t kMaxMovesShown = 6;   // moved lines listed per step in text mode

std::string Relative(int64_t t, int64_t t0) {
  if (t == kNoTime || t0 == kNoTime) return "-";
  if (std::llabs(t - t0) >= 600'000'000) return FormatRelativeTime(t - t0);  // "+3 h 20 min"
  return absl::StrFormat("%+.3f s", static_cast<double>(t - t0) / 1e6);
}

int64_t FirstTime(const std::vector<int64_t>& times) {
  for (int64_t t : times) {
    if (t != kNoTime) return t;
  }
  return kNoTime;
}

// "a -> b -> c", eliding the middle of long series.
template <class F>
std::string Series(const std::vector<int64_t>& v, F format) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) {
    if (v.size() > kMaxValuesShown && i == 3) {
      absl::StrAppend(&s, " -> ...");
      i = v.size() - 4;
      continue;
    }
    absl::StrAppend(&s, i == 0 ? "" : " -> ", format(v[i]));
  }
  return s;
}

constexpr size_t kCallersShown = 5;

// The label and the category; `head`: the first line of a label continued below (SiteLabel).
std::string SiteName(const LeakSite& s, const analysis::CategoryNames& names, bool head = false) {
  const std::string& label = head && !s.label.head.empty() ? s.label.head : s.site;
  return absl::StrCat(label, " (", Sv(names.Name(s.category())), ")");
}

// A verdict in words: "growing in every step", "growing then flat", ...
std::string_view VerdictText(Verdict v) {
  switch (v) {
    case Verdict::kGrowing:
      return "growing in every step";
    case Verdict::kGrowingThenFlat:
      return "growing then flat";
    case Verdict::kGrowingWithPauses:
      return "growing with pauses";
    case Verdict::kFluctuating:
      return "fluctuating";
    case Verdict::kShrinking:
      return "shrinking";
    case Verdict::kSteady:
      return "steady";
  }
  return "steady";
}

// Where the device memory comes from: "--device-memory", "OOM entry in FILE", "".
std::string MemorySourceText(const LeakReport& r) {
  switch (r.device_memory_source) {
    case analysis::LeakMemorySource::kNone:
      return "";
    case analysis::LeakMemorySource::kFlag:
      return "--device-memory";
    case analysis::LeakMemorySource::kOomEntry:
      return r.device_memory_file.empty() ? "OOM entry"
                                          : absl::StrCat("OOM entry in ", r.device_memory_file);
  }
  return "";
}

std::string PointNoun(const LeakReport& r) { return r.mode == "series" ? "snapshot" : "step end"; }

Json SiteToJson(const LeakSite& s, const LeakReport& r) {
  Json j;
  j["key"] = s.key;
  j["site"] = s.site;
  j["category"] = std::string(r.options.group.categories.Name(s.category()));
  j["frames"] = s.frames;
  j["synthetic"] = s.synthetic;
  j["verdict"] = std::string(analysis::VerdictName(s.verdict));
  j["leak"] = s.leak;
  j["growth_bytes"] = s.growth();
  j["bytes_per_step"] = s.bytes_per_step;
  j["full_at_step"] = s.full_at_step ? Json(*s.full_at_step) : Json(nullptr);
  j["bytes"] = s.bytes;
  j["counts"] = s.counts;
  if (!s.retained.empty()) j["retained_next_step_bytes"] = s.retained;
  if (r.mode == "series") {
    j["earlier_keys"] = s.earlier_keys;
    j["moved"] = s.moved;
  }
  return j;
}

void RenderSteps(const LeakReport& r, std::ostream& out) {
  const analysis::StepInfo& st = *r.steps;
  out << absl::StrFormat("Steps (device %d, by %s): %d found", st.device, st.method,
                         st.ranges.size());
  if (st.method == "periodicity" && !st.ranges.empty()) {
    out << absl::StrFormat(", period ~%s events, autocorrelation %.2f",
                           FormatCount(st.period_events), st.score);
  }
  out << "\n";
  if (st.ranges.empty()) return;
  const int64_t t0 = FirstTime(st.begin_time);
  // Widths one more than the gap-free columns they follow: two spaces between figures.
  Table t;
  t.AddColumn("step", "step", Unit::kId).min_width = 5;
  Column& events = t.AddColumn("events", "events", Unit::kText);
  events.align = Align::kRight;
  events.min_width = 18;
  Column& end = t.AddColumn("end_time", "end time", Unit::kText);
  end.align = Align::kRight;
  end.min_width = 12;
  t.AddColumn("live_bytes", "live at end", Unit::kBytes).min_width = 13;
  t.AddColumn("blocks", "blocks", Unit::kCount).min_width = 10;
  for (size_t k = 0; k < st.ranges.size(); ++k) {
    if (st.ranges.size() > kMaxStepsShown && k == kMaxStepsShown - 2) {
      t.AddRow({std::string("..."), std::string(), std::string(), std::string(), std::string()});
      k = st.ranges.size() - 2;
    }
    t.AddRow({static_cast<int64_t>(k),
              absl::StrCat(st.ranges[k].first_event(), "..", st.ranges[k].to.index()),
              Relative(st.end_time[k], t0),
              k < r.live_bytes.size() ? Cell(r.live_bytes[k]) : Cell(),
              k < r.live_counts.size() ? Cell(r.live_counts[k]) : Cell()});
  }
  RenderTableText(t, out, {"  ", true});
}

// The directory every label starts with ("runs/a/" of "runs/a/1.pickle" and "runs/a/2.pickle"),
// "" when they do not share one: the table shows the rest.
size_t CommonDirLength(const std::vector<std::string>& labels) {
  if (labels.size() < 2) return 0;
  size_t n = labels[0].size();
  for (const std::string& l : labels) {
    size_t k = 0;
    while (k < n && k < l.size() && l[k] == labels[0][k]) ++k;
    n = k;
  }
  const size_t slash = labels[0].rfind('/', n == 0 ? 0 : n - 1);
  return n == 0 || slash == std::string::npos ? 0 : slash + 1;
}

// The series' snapshots, their paths without the directory `dir` they all share.
void RenderPoints(const LeakReport& r, size_t dir, std::ostream& out) {
  const int64_t t0 = FirstTime(r.times);
  Table t;
  t.AddColumn("index", "#", Unit::kId).min_width = 2;
  t.AddColumn("snapshot", "snapshot", Unit::kText).min_width = 8;
  Column& time = t.AddColumn("time", "time", Unit::kText);
  time.align = Align::kRight;
  time.min_width = 12;
  t.AddColumn("live_bytes", "live", Unit::kBytes).min_width = 13;
  t.AddColumn("blocks", "blocks", Unit::kCount).min_width = 10;
  for (size_t i = 0; i < r.labels.size(); ++i) {
    t.AddRow({static_cast<int64_t>(i), r.labels[i].substr(dir), Relative(r.times[i], t0),
              r.live_bytes[i], r.live_counts[i]});
  }
  RenderTableText(t, out, {"  ", true});
}

// "dir/benchmark.py:222→223, :327→335, other.py:5→7": a move of the file before shows its line.
std::string MovesText(const std::vector<std::string>& moves) {
  if (moves.empty()) return "lines the labels do not show";
  std::string out;
  std::string_view file_before;
  for (const std::string& m : moves) {
    const std::string_view move = m;
    const std::string_view file = move.substr(0, move.rfind(':'));
    absl::StrAppend(&out, out.empty() ? "" : ", ",
                    Sv(file == file_before ? move.substr(file.size()) : move));
    file_before = file;
  }
  return out;
}

// The lines that moved between consecutive snapshots, whose sites were paired (LeakReport::moves).
void RenderMoves(const LeakReport& r, std::ostream& out) {
  if (r.moves.empty()) return;
  out << absl::StrFormat(
      "\nLines moved between snapshots (the script was edited); %s site%s paired across them, "
      "one row each:\n",
      FormatCount(r.sites_moved), r.sites_moved == 1 ? "" : "s");
  for (const analysis::LineMoves& m : r.moves) {
    std::vector<std::string> shown(m.moves.begin(),
                                   m.moves.begin() + std::min(m.moves.size(), kMaxMovesShown));
    std::string more = m.moves.size() > kMaxMovesShown
                           ? absl::StrCat(" +", m.moves.size() - kMaxMovesShown, " more")
                           : "";
    out << absl::StrFormat("  #%d -> #%d  %s%s (%s site%s)\n", m.from, m.from + 1, MovesText(shown),
                           more, FormatCount(m.sites), m.sites == 1 ? "" : "s");
  }
}

// " [moved: ...]" after a site paired across moved lines when none of its lines as shown (the
// label and `callers_shown` callers) shows a move; the list above the table names them all.
std::string MovedTagOf(const LeakSite& s, size_t callers_shown) {
  if (s.earlier_keys.empty()) return "";
  if (UnseenMoves(s.site, s.info, s.label, s.moved, callers_shown).size() < s.moved.size()) {
    return "";
  }
  return MovedTag(s.site, s.info, s.label, s.moved, callers_shown);
}

std::string FullAtText(const std::optional<int64_t>& step, const LeakReport& r) {
  if (!step) return "";
  return absl::StrCat("device full at ", PointNoun(r), " #", FormatCount(*step));
}

// Returns whether a caller was marked as telling the site apart.
bool RenderLeak(const LeakSite& s, size_t index, const LeakReport& r, std::ostream& out) {
  const size_t steps = s.bytes.size() - 1;
  out << absl::StrFormat("#%d  %s over %d steps (%s per step)", index + 1, FormatDelta(s.growth()),
                         steps, FormatDelta(s.bytes_per_step));
  if (s.full_at_step) out << ", " << FullAtText(s.full_at_step, r);
  out << "\n";
  out << "    live:   " << Series(s.bytes, [](int64_t b) { return FormatBytes(b); }) << "\n";
  out << "    blocks: " << Series(s.counts, [](int64_t c) { return FormatCount(c); }) << "\n";
  if (!s.retained.empty()) {
    out << "    kept by the next step (allocated in step k, live at the end of step k+1): "
        << Series(s.retained, [](int64_t b) { return FormatBytes(b); }) << "\n";
  }
  out << "    site: " << SiteName(s, r.options.group.categories, true)
      << MovedTagOf(s, kCallersShown) << "\n";
  return RenderCallerLines(s.info, s.label, kCallersShown, "      ", true, out);
}

}  // namespace

std::string LeaksNote(const LeakReport& r) {
  if (r.steps && r.steps->ranges.size() < 2) return query::StepsNote(*r.steps);
  std::vector<std::string> parts;
  if (r.too_few_steps) {
    parts.push_back(absl::StrCat("only ", *r.too_few_steps,
                                 " step(s): growth cannot be told apart from a warm-up; leaks need "
                                 "at least ",
                                 r.options.min_steps + 1, " snapshots (or steps)"));
  }
  if (r.out_of_order_point > 0) {
    const size_t i = r.out_of_order_point;
    parts.push_back(absl::StrCat("snapshot ", i, "'s trace ends ",
                                 FormatDuration(r.out_of_order_by_us), " before snapshot ", i - 1,
                                 "'s: the series is compared in the order given, not in time "
                                 "order (--sort time orders it by the traces' times)"));
  }
  if (r.layers_suspected) {
    parts.push_back(
        "live memory climbs at every detected step end by more than half of a step's own swing: "
        "the repeating pattern may be the layers of one pass (a forward pass keeps activations "
        "for backward) rather than training steps; give --step-annotation NAME or --steps N to "
        "choose the step");
  }
  return absl::StrJoin(parts, "; ");
}

Json LeaksToJson(const LeakReport& r) {
  Json j;
  j["mode"] = r.mode;
  j["by"] = std::string(analysis::GroupByName(r.options.group.by));
  j["min_growth_bytes"] = r.options.min_growth;
  j["points"] = Json::array();
  for (size_t i = 0; i < r.labels.size(); ++i) {
    Json p;
    p["label"] = r.labels[i];
    p["time_us"] = internal::TimeToJson(r.times[i]);
    p["live_bytes"] = r.live_bytes[i];
    p["live_count"] = r.live_counts[i];
    j["points"].push_back(p);
  }
  if (r.steps) {
    const analysis::StepInfo& st = *r.steps;
    Json s;
    s["method"] = st.method;
    s["device"] = st.device;
    s["period_events"] = st.period_events;
    s["score"] = st.score;
    s["note"] = query::StepsNote(st);
    s["steps"] = Json::array();
    for (size_t k = 0; k < st.ranges.size(); ++k) {
      s["steps"].push_back(Json{{"begin_event", st.ranges[k].first_event()},
                                {"end_event", st.ranges[k].end_event()},
                                {"begin_time_us", internal::TimeToJson(st.begin_time[k])},
                                {"end_time_us", internal::TimeToJson(st.end_time[k])}});
    }
    j["steps"] = s;
  }
  j["total_verdict"] = r.labels.size() >= 2
                           ? Json(std::string(analysis::VerdictName(r.total_verdict)))
                           : Json(nullptr);
  j["device_memory_bytes"] = r.device_memory > 0 ? Json(r.device_memory) : Json(nullptr);
  j["device_memory_source"] = MemorySourceText(r);
  j["num_leaks"] = r.num_leaks;
  j["leak_bytes_per_step"] = r.leak_bytes_per_step;
  j["full_at_step"] = r.full_at_step ? Json(*r.full_at_step) : Json(nullptr);
  j["sites_total"] = r.sites_total;
  if (r.mode == "series") {
    j["pair_moved"] = r.options.pair_moved;
    j["sites_moved"] = r.sites_moved;
    j["moves"] = Json::array();
    for (const analysis::LineMoves& m : r.moves) {
      j["moves"].push_back(Json{{"from_point", m.from},
                                {"to_point", m.from + 1},
                                {"moved", m.moves},
                                {"sites", m.sites}});
    }
  }
  Json counts = Json::object();
  for (int v = 0; v < kNumVerdicts; ++v) {
    counts[std::string(analysis::VerdictName(static_cast<Verdict>(v)))] = r.verdict_counts[v];
  }
  j["verdict_counts"] = counts;
  j["leaks"] = Json::array();
  j["other_sites"] = Json::array();
  for (const LeakSite& s : r.sites) j[s.leak ? "leaks" : "other_sites"].push_back(SiteToJson(s, r));
  j["note"] = LeaksNote(r);
  return j;
}

void RenderLeaksText(const LeakReport& r, std::ostream& out) {
  const std::string by(analysis::GroupByName(r.options.group.by));
  if (r.mode == "series") {
    const size_t dir = CommonDirLength(r.labels);
    out << absl::StrFormat("memsnap leaks: %d snapshots%s, grouped by %s\n", r.labels.size(),
                           dir == 0 ? "" : absl::StrCat(" in ", r.labels[0].substr(0, dir)), by);
    RenderPoints(r, dir, out);
    RenderMoves(r, out);
  } else {
    out << absl::StrFormat("memsnap leaks: one trace, grouped by %s\n", by);
    RenderSteps(r, out);
  }
  if (r.labels.size() < 2) {
    out << "\nNo leak analysis: " << LeaksNote(r) << "\n";
    return;
  }
  out << "\nTotal live: " << Series(r.live_bytes, [](int64_t b) { return FormatBytes(b); }) << " ("
      << VerdictText(r.total_verdict) << ")\n";
  if (r.device_memory > 0) {
    out << "Device memory: " << FormatBytes(r.device_memory) << " (" << MemorySourceText(r) << ")";
    if (r.full_at_step) out << "; at the leak rate, " << FullAtText(r.full_at_step, r);
    out << "\n";
  }
  if (const std::string note = LeaksNote(r); !note.empty()) out << "Note: " << note << "\n";
  out << "\n";
  if (r.num_leaks == 0) {
    out << "No leak: no site grows in every step by at least " << FormatBytes(r.options.min_growth)
        << " in total.\n";
  } else {
    out << absl::StrFormat(
        "%d leak%s: site%s growing in every step, by at least %s in total "
        "(%s per step together)\n\n",
        r.num_leaks, r.num_leaks == 1 ? "" : "s", r.num_leaks == 1 ? "" : "s",
        FormatBytes(r.options.min_growth), FormatDelta(r.leak_bytes_per_step));
  }
  size_t index = 0, others = 0;
  bool any_differs = false;
  for (const LeakSite& s : r.sites) {
    if (s.leak)
      any_differs = RenderLeak(s, index++, r, out) || any_differs;
    else
      ++others;
  }
  if (any_differs) out << kDiffersNote;
  if (others > 0) {
    out << absl::StrFormat("\nOther sites that changed by at least %s:\n",
                           FormatBytes(r.options.min_growth));
    Table t;
    t.AddColumn("verdict", "verdict", Unit::kText).min_width = 20;
    t.AddColumn("growth_bytes", "growth", Unit::kDelta).min_width = 12;
    t.AddColumn("first_bytes", "first", Unit::kBytes).min_width = 12;
    t.AddColumn("last_bytes", "last", Unit::kBytes).min_width = 12;
    t.AddColumn("site", "site (category)", Unit::kText);
    for (const LeakSite& s : r.sites) {
      if (s.leak) continue;
      t.AddRow({std::string(analysis::VerdictName(s.verdict)), s.growth(), s.bytes.front(),
                s.bytes.back(), SiteName(s, r.options.group.categories) + MovedTagOf(s, 0)});
    }
    RenderTableText(t, out, {"  ", true});
  }
  out << "\nSites: " << FormatCount(r.sites_total);
  std::string sep = " (";
  for (int v = 0; v < kNumVerdicts; ++v) {
    if (r.verdict_counts[v] == 0) continue;
    out << sep << VerdictText(static_cast<Verdict>(v)) << " " << FormatCount(r.verdict_counts[v]);
    sep = ", ";
  }
  out << (sep == ", " ? ")" : "");
  if (r.sites_moved > 0) {
    out << ", " << FormatCount(r.sites_moved)
        << " paired across moved lines (--exact-lines splits them)";
  }
  out << "\n";
}

}  // namespace memsnap::report
