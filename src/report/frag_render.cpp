#include "memsnap/report/frag_render.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "memsnap/report/answer.h"
#include "memsnap/report/device_sections.h"
#include "memsnap/report/ranks_render.h"
#include "memsnap/report/summary_render.h"
#include "memsnap/report/table_render.h"
#include "memsnap/util/format.h"
#include "memsnap/util/strings.h"
#include "memsnap/util/table.h"
#include "report/render_util.h"

namespace memsnap::report {

namespace {

using Json = nlohmann::ordered_json;
using analysis::FragFigures;
using analysis::FragReport;

Json JsonRatio(double x) { return RoundRatio(x); }

std::string MomentName(const FragReport& r) {
  switch (r.at) {
    case analysis::FragMoment::kMoment:
      return r.moment.kind == analysis::Moment::Kind::kEvent
                 ? absl::StrCat("event:", r.moment.value)
                 : absl::StrCat(r.moment.value);
    case analysis::FragMoment::kEnd:
      return "end";
    case analysis::FragMoment::kPeakReserved:
      return "peak-reserved";
    case analysis::FragMoment::kPeakAllocated:
      return "peak-allocated";
  }
  return "end";
}

// A moment's time from the trace's start, written as summary and the page write it ("+40 us").
std::string Seconds(int64_t time_us, int64_t start_us) {
  if (time_us == kNoTime || start_us == kNoTime) return "";
  return FormatRelativeTime(time_us - start_us);
}

std::string EventName(int64_t index) {
  return index < 0 ? std::string("before the first event")
                   : absl::StrCat("after event ", FormatCount(index));
}

std::string Share(int64_t part, int64_t whole) {
  if (whole <= 0) return "";
  return absl::StrCat("(", FormatPercent(static_cast<double>(part) / static_cast<double>(whole)),
                      ")");
}

Json SampleToJson(const analysis::FragSample& s) {
  Json j;
  j["device"] = s.device;
  j["event_index"] = s.event_index;
  j["time_us"] = internal::TimeToJson(s.time_us);
  j.update(FragFiguresToJson(s.figures));
  j["external_fragmentation"] = JsonRatio(s.external_fragmentation);
  return j;
}

// One character per cell of the segment: the state holding most bytes of the cell
// ('#' allocated, '%' pending free, '.' free; ties favour allocated, then pending).
std::string Bar(const analysis::SegmentFrag& s, int width) {
  std::string bar;
  int64_t total = std::max<int64_t>(1, s.figures.reserved_bytes);
  size_t span = 0;
  int64_t span_begin = 0;
  for (int c = 0; c < width; ++c) {
    int64_t lo = total * c / width, hi = total * (c + 1) / width;
    int64_t bytes[3] = {0, 0, 0};
    while (span < s.spans.size()) {
      int64_t b_lo = span_begin, b_hi = span_begin + s.spans[span].size;
      int64_t overlap = std::min(hi, b_hi) - std::max(lo, b_lo);
      if (overlap > 0) bytes[static_cast<int>(s.spans[span].state)] += overlap;
      if (b_hi > hi) break;
      span_begin = b_hi;
      ++span;
    }
    int best = 0;
    for (int k = 1; k < 3; ++k) {
      if (bytes[k] > bytes[best]) best = k;
    }
    bar.push_back("#%."[best]);
  }
  return bar;
}

std::string SegmentType(const analysis::SegmentFrag& s) {
  std::string t = s.is_small ? "small" : "large";
  if (s.is_expandable) t += "*";
  if (!s.pool.is_default()) absl::StrAppend(&t, " ", PoolName(s.pool));
  return t;
}

Column& Col(Table& t, const char* key, const char* label, Unit unit, int min_width) {
  Column& c = t.AddColumn(key, label, unit);
  c.min_width = min_width;
  return c;
}

// Free space per (device, pool, stream, small/large). The text joins pool and type in one
// column; the JSON keeps them apart.
Table GroupsTable(const FragReport& r) {
  Table t;
  Col(t, "device", "device", Unit::kId, 6).align = Align::kLeft;
  Col(t, "pool", "pool", Unit::kText, 0).in_text = false;
  Col(t, "pool_type", "pool type", Unit::kText, 0).in_text = false;
  Col(t, "pool_and_type", "pool", Unit::kText, 14).in_data = false;
  Col(t, "stream", "stream", Unit::kId, 14);
  Col(t, "segments", "segments", Unit::kCount, 9);
  Col(t, "reserved_bytes", "reserved", Unit::kBytes, 11);
  Col(t, "free_bytes", "free", Unit::kBytes, 11);
  Col(t, "pending_free_bytes", "pending", Unit::kBytes, 11);
  Col(t, "free_blocks", "blocks", Unit::kCount, 7);
  Col(t, "largest_free_bytes", "largest", Unit::kBytes, 11);
  Col(t, "external_fragmentation", "ext frag", Unit::kRatio, 9);
  for (const auto& g : r.groups) {
    std::string type = g.is_small ? "small" : "large";
    t.AddRow({int64_t{g.device}, PoolName(g.pool), type, absl::StrCat(PoolName(g.pool), " ", type),
              g.stream, g.segments, g.reserved_bytes, g.free_bytes, g.pending_free_bytes,
              g.free_blocks, g.largest_free_bytes, g.external_fragmentation});
  }
  return t;
}

Table FitsTable(const FragReport& r) {
  Table t;
  Col(t, "device", "device", Unit::kId, 6).align = Align::kLeft;
  Col(t, "pool", "pool", Unit::kText, 10);
  Col(t, "stream", "stream", Unit::kId, 14);
  Col(t, "small_pool_bytes", "small pool", Unit::kBytes, 12);
  Col(t, "large_pool_bytes", "large pool", Unit::kBytes, 12);
  Col(t, "largest_bytes", "largest", Unit::kBytes, 12);
  for (const auto& w : r.fits) {
    t.AddRow({int64_t{w.device}, PoolName(w.pool), w.stream, w.small_pool_bytes, w.large_pool_bytes,
              w.largest_bytes});
  }
  return t;
}

// Free blocks by power-of-two size class; the text adds the class's end and a bar of its count.
Table HistogramTable(const FragReport& r) {
  Table t;
  t.AddColumn("min_bytes", "from", Unit::kBytes);
  t.AddColumn("below_bytes", "below", Unit::kBytes).in_data = false;
  t.AddColumn("blocks", "blocks", Unit::kCount);
  t.AddColumn("bar", "", Unit::kText).in_data = false;
  t.AddColumn("bytes", "bytes", Unit::kBytes);
  int64_t most = 0;
  for (const auto& b : r.histogram) most = std::max(most, b.blocks);
  for (const auto& b : r.histogram) {
    const int bar = static_cast<int>((b.blocks * 30 + most - 1) / most);
    t.AddRow({int64_t{1} << b.log2, int64_t{1} << (b.log2 + 1), b.blocks, std::string(bar, '#'),
              b.bytes});
  }
  return t;
}

// The totals: one line a figure, with what it means.
Table TotalsTable(const FragReport& r) {
  const FragFigures& t = r.totals;
  Table table;
  table.AddColumn("figure", "", Unit::kText).min_width = 14;  // as wide as "  state" above
  table.AddColumn("bytes", "", Unit::kBytes).min_width = 12;
  table.AddColumn("note", "", Unit::kText);
  table.AddRow(
      {"reserved", t.reserved_bytes,
       absl::StrCat("in ", FormatCount(t.segments), " segments (", FormatCount(t.free_segments),
                    " entirely free), ", FormatCount(t.blocks), " blocks")});
  table.AddRow({"allocated", t.allocated_bytes, Share(t.allocated_bytes, t.reserved_bytes)});
  table.AddRow(
      {"pending free", t.pending_free_bytes,
       absl::StrCat(Share(t.pending_free_bytes, t.reserved_bytes),
                    t.pending_free_bytes > 0 ? " freed, waiting on other streams' work" : "")});
  table.AddRow(
      {"free", t.free_bytes,
       absl::StrCat(Share(t.free_bytes, t.reserved_bytes), " in ", FormatCount(t.free_blocks),
                    " blocks, largest ", FormatBytes(t.largest_free_bytes))});
  // What the free (and pending) memory is, the way empty_cache() sees it: these two lines are
  // the headline, not the fragmentation ratio below (docs/fragmentation.md).
  const bool expandable =
      std::any_of(r.segments.begin(), r.segments.end(),
                  [](const analysis::SegmentFrag& s) { return s.is_expandable; });
  table.AddRow({"releasable", t.releasable_bytes,
                absl::StrCat(expandable ? "segments and pages" : "segments",
                             " holding no allocation: empty_cache() would release them")});
  table.AddRow({"stranded", t.stranded_bytes,
                "free blocks inside segments in use: empty_cache() cannot release them"});
  table.AddRow({"requested", t.requested_bytes, ""});
  table.AddRow(
      {"internal waste", t.internal_waste_bytes, "block size - requested, on active blocks"});
  table.AddRow({"external frag", FormatPercent(r.external_fragmentation),
                t.releasable_bytes > t.stranded_bytes
                    ? "1 - largest free / free, per pool and stream (mostly whole free segments)"
                    : "1 - largest free / free, per pool and stream"});
  return table;
}

// The figures of the state after an event (a peak, a timeline sample) shared by the peaks and
// timeline tables.
void AddSampleColumns(Table& t) {
  Col(t, "reserved_bytes", "reserved", Unit::kBytes, 11);
  Col(t, "allocated_bytes", "allocated", Unit::kBytes, 11);
  Col(t, "pending_free_bytes", "pending", Unit::kBytes, 11);
  Col(t, "free_bytes", "free", Unit::kBytes, 11);
  Col(t, "largest_free_bytes", "largest", Unit::kBytes, 11);
  Col(t, "external_fragmentation", "ext frag", Unit::kRatio, 9);
  Col(t, "stranded_bytes", "stranded", Unit::kBytes, 11);
  Col(t, "releasable_bytes", "releasable", Unit::kBytes, 11).in_text = false;
}

std::vector<Cell> SampleCells(const analysis::FragSample& s) {
  const FragFigures& f = s.figures;
  return {f.reserved_bytes,     f.allocated_bytes,        f.pending_free_bytes, f.free_bytes,
          f.largest_free_bytes, s.external_fragmentation, f.stranded_bytes,     f.releasable_bytes};
}

void Append(std::vector<Cell>& row, std::vector<Cell> more) {
  for (Cell& c : more) row.push_back(std::move(c));
}

Table PeaksTable(const FragReport& r) {
  Table t;
  Col(t, "device", "device", Unit::kId, 6).align = Align::kLeft;
  Col(t, "moment", "moment", Unit::kText, 15);
  Col(t, "when", "when", Unit::kText, 28);
  AddSampleColumns(t);
  t.columns[t.Find("pending_free_bytes")].in_text = false;
  for (const auto& p : r.peaks) {
    for (int k = 0; k < 2; ++k) {
      const auto& s = k == 0 ? p.peak_reserved : p.peak_allocated;
      std::string when = EventName(s.event_index);
      std::string secs = Seconds(s.time_us, p.trace_start_us);
      if (!secs.empty()) absl::StrAppend(&when, " ", secs);
      std::vector<Cell> row = {int64_t{p.device}, k == 0 ? "peak reserved" : "peak allocated",
                               when};
      Append(row, SampleCells(s));
      t.AddRow(std::move(row));
    }
  }
  return t;
}

// The samples of the fragmentation timeline; `start_us` gives the text's relative times.
Table TimelineTable(const std::vector<const analysis::FragSample*>& samples, int64_t start_us) {
  Table t;
  Col(t, "device", "device", Unit::kId, 0).in_text = false;
  Col(t, "event_index", "event", Unit::kId, 0).in_text = false;
  Col(t, "event", "event", Unit::kCount, 10).in_data = false;
  Col(t, "time_us", "time", Unit::kId, 0).in_text = false;
  Col(t, "time", "time", Unit::kText, 11).in_data = false;
  t.columns.back().align = Align::kRight;
  AddSampleColumns(t);
  for (const analysis::FragSample* s : samples) {
    std::vector<Cell> row = {int64_t{s->device}, s->event_index,
                             s->event_index < 0 ? Cell(std::string("start")) : Cell(s->event_index),
                             s->time_us == kNoTime ? Cell() : Cell(s->time_us),
                             Seconds(s->time_us, start_us)};
    Append(row, SampleCells(*s));
    t.AddRow(std::move(row));
  }
  return t;
}

// The `shown` largest segments and a "[N others]" footer summing the rest.
Table SegmentMapTable(const FragReport& r, size_t shown, int bar_width) {
  Table t;
  Col(t, "device", "dev", Unit::kId, 3).align = Align::kLeft;
  Col(t, "address", "address", Unit::kAddress, 14).align = Align::kLeft;
  Col(t, "type", "type", Unit::kText, 12);
  Col(t, "stream", "stream", Unit::kId, 14);
  Col(t, "reserved_bytes", "size", Unit::kBytes, 11);
  Col(t, "allocated_bytes", "allocated", Unit::kBytes, 11);
  Col(t, "free_bytes", "free", Unit::kBytes, 11);
  Col(t, "external_fragmentation", "ext frag", Unit::kRatio, 9);
  Col(t, "map", "map", Unit::kText, 0);
  for (size_t i = 0; i < shown; ++i) {
    const auto& s = r.segments[i];
    t.AddRow({int64_t{s.device}, static_cast<int64_t>(s.address), SegmentType(s), s.stream,
              s.figures.reserved_bytes, s.figures.allocated_bytes, s.figures.free_bytes,
              s.external_fragmentation, absl::StrCat("|", Bar(s, bar_width), "|")});
  }
  if (shown < r.segments.size()) {
    FragFigures rest;
    for (size_t i = shown; i < r.segments.size(); ++i) rest += r.segments[i].figures;
    std::string none;
    t.AddFooter({absl::StrCat("[", r.segments.size() - shown, " others]"), none, none, none,
                 rest.reserved_bytes, rest.allocated_bytes, rest.free_bytes, none, none});
  }
  return t;
}

// "146.6 MiB (0.3%)": an amount and its share of the reserved bytes.
std::string Amount(int64_t bytes, int64_t reserved) {
  return absl::StrCat(FormatBytes(bytes), " ", Share(bytes, reserved));
}

// Where the answer is: "at the reserved peak (after event 19,045, +0.294 s)".
std::string CostMoment(const analysis::FragCost& c) {
  if (!c.at_peak) return "at the end of the snapshot (no trace, so its peak is unknown)";
  std::string when = EventName(c.event_index);
  std::string secs = Seconds(c.time_us, c.trace_start_us);
  if (!secs.empty()) absl::StrAppend(&when, ", ", secs);
  return absl::StrCat("at the reserved peak (", when, ")");
}

const analysis::FragFix* FixOf(const FragReport& r, int32_t device) {
  for (const auto& f : r.fixes) {
    if (f.device == device) return &f;
  }
  return nullptr;
}

// The `fix` line: the setting that lowers the peak, proven by the replays; or why none is given.
std::string FixText(const FragReport& r, const analysis::FragCost& c) {
  const analysis::FragFix* fix = FixOf(r, c.device);
  if (!c.at_peak) {
    const std::string record =
        "record a trace with torch.cuda.memory._record_memory_history(max_entries=1000000) "
        "before the run, and frag replays each allocator setting on it";
    if (fix == nullptr || fix->settings.empty() || fix->settings[0].fits_on <= 0) {
      return absl::StrCat("cannot be proven without a trace: ", record);
    }
    return absl::StrCat(
        "no trace, so no setting can be proven to lower a peak; the dumped state "
        "fits on ",
        FormatBytes(fix->settings[0].fits_on), " with the recorded settings (its live memory is ",
        FormatBytes(fix->live_peak), "): ", record);
  }
  if (fix == nullptr || fix->settings.empty()) {
    return "not replayed (--no-replay); without the flag frag replays each allocator setting on "
           "the trace";
  }
  const analysis::FragSetting& base = fix->settings[0];
  const size_t tried = fix->settings.size() - 1;
  // The least memory each setting replays the whole trace on: what a setting saves on a card.
  const std::string live = absl::StrCat("its live peak is ", FormatBytes(fix->live_peak));
  // Where every replay started (docs/figures.md, "The start state").
  const std::string from = fix->warm ? "from the recorded state" : "from a cold start";
  std::string text;
  if (fix->best >= 0) {
    const analysis::FragSetting& best = fix->settings[static_cast<size_t>(fix->best)];
    if (base.fits_on > 0) {
      const int64_t saved = base.fits_on - best.fits_on;
      text = absl::StrCat(
          "PYTORCH_CUDA_ALLOC_CONF=", best.settings, ": the run fits on ",
          FormatBytesApart(best.fits_on, base.fits_on), " instead of ",
          FormatBytesApart(base.fits_on, best.fits_on), " (-", FormatBytes(saved), ", -",
          FormatPercent(static_cast<double>(saved) / static_cast<double>(base.fits_on)),
          "), replayed ", from, " (the best of ", tried, " settings; ", live, ")");
    } else {
      text = absl::StrCat("PYTORCH_CUDA_ALLOC_CONF=", best.settings, ": the run fits on ",
                          FormatBytes(best.fits_on),
                          ", where no memory size tried fits it with the recorded settings, "
                          "replayed ",
                          from, " (the best of ", tried, " settings; ", live, ")");
    }
  } else if (base.fits_on > 0) {
    text = absl::StrCat("none: with the recorded settings the run fits on ",
                        FormatBytes(base.fits_on), " (", live, ", so the allocator's layout costs ",
                        FormatBytes(std::max<int64_t>(0, base.fits_on - fix->live_peak)),
                        "), and no setting tried needs ", FormatPercent(analysis::kFitMinGain),
                        " less (", tried, " settings replayed ", from, ")");
  } else {
    text = absl::StrCat("none: no replay of the ", tried + 1, " settings tried ", from,
                        " completes the trace on any memory size");
  }
  // The replay starts from what the trace shows; say when it does not land on the recorded peak.
  const int64_t traced = c.figures.reserved_bytes;
  if (traced > 0 && std::abs(base.peak_reserved - traced) * 100 > traced) {
    absl::StrAppend(&text, "; with no memory limit the recorded settings would reserve up to ",
                    FormatBytes(base.peak_reserved), ", the trace recorded ", FormatBytes(traced));
  }
  if (fix->recorded_ooms > 0) {
    absl::StrAppend(&text,
                    "; the run hit an OOM: each fit serves its failed requests, and `memsnap oom` "
                    "explains the failure on its card");
  }
  return text;
}

}  // namespace

std::string FragRankVerdict(const analysis::FragRank& rank) {
  if (!rank.answer) return "";
  const analysis::FragAnswer& a = *rank.answer;
  std::string verdict = absl::StrCat(
      Sv(analysis::FragVerdictName(a.verdict)), ": ", FormatBytes(a.stranded_bytes), " (",
      FormatPercent(a.stranded_share), ") ", a.at_peak ? "at the peak" : "at the end");
  if (rank.many_devices) absl::StrAppend(&verdict, ", device ", a.device);
  return verdict;
}

namespace {

// The per-rank table with its note columns: each rank's verdict and its warnings.
analysis::RankTable WithFragNotes(analysis::RankTable t,
                                  const std::vector<analysis::FragRank>& ranks) {
  // The answer of each rank, as `frag FILE` opens with it.
  analysis::RankNote& verdicts =
      t.notes.emplace_back(analysis::RankNote{"verdict", "fragmentation", {}, true});
  for (const analysis::FragRank& r : ranks) verdicts.values.push_back(FragRankVerdict(r));
  // Warnings say a figure at a peak is approximate: count them where they apply.
  if (std::any_of(ranks.begin(), ranks.end(),
                  [](const analysis::FragRank& r) { return r.warnings > 0; })) {
    analysis::RankNote& notes =
        t.notes.emplace_back(analysis::RankNote{"notes", "notes", {}, true});
    for (const analysis::FragRank& r : ranks) {
      notes.values.push_back(r.warnings == 0
                                 ? ""
                                 : absl::StrCat(r.warnings, " reconstruction warning(s): ",
                                                "run frag on the file alone to see them"));
    }
  }
  return t;
}

}  // namespace

analysis::RankTable FragRanksTable(const std::vector<analysis::FragRank>& ranks) {
  return WithFragNotes(analysis::CompareFragRanks(ranks), ranks);
}

std::vector<AnswerLine> FragAnswer(const FragReport& r, const analysis::FragCost& c) {
  std::vector<AnswerLine> lines;
  const FragFigures& f = c.figures;
  const std::string moment = CostMoment(c);
  const int64_t unused = f.stranded_bytes + f.releasable_bytes;
  std::string answer;
  if (f.stranded_bytes <= 0) {
    answer = absl::StrCat(
        "fragmentation costs nothing ", moment, ": ",
        unused > 0 ? "every free byte is in a whole free segment" : "nothing reserved is free");
  } else {
    answer =
        absl::StrCat("fragmentation costs ", FormatBytes(f.stranded_bytes), " (",
                     FormatPercent(static_cast<double>(f.stranded_bytes) /
                                   static_cast<double>(std::max<int64_t>(1, f.reserved_bytes))),
                     " of the ", FormatBytes(f.reserved_bytes), " reserved) ", moment, ": ",
                     Sv(analysis::FragVerdictName(c.verdict)));
    // A large share of a small run: say why the verdict ignores it.
    if (c.verdict == analysis::FragVerdict::kSmall &&
        static_cast<double>(f.stranded_bytes) >=
            analysis::kFragModerateShare *
                static_cast<double>(std::max<int64_t>(1, f.reserved_bytes))) {
      absl::StrAppend(&answer, " (less than ", FormatBytes(analysis::kFragMinBytes), ")");
    }
  }
  lines.push_back({"answer", answer});
  if (unused > 0) {
    const bool expandable =
        std::any_of(r.segments.begin(), r.segments.end(),
                    [](const analysis::SegmentFrag& s) { return s.is_expandable; });
    std::string free = absl::StrCat(
        Amount(unused, f.reserved_bytes),
        " held no live tensor: ", Amount(f.stranded_bytes, f.reserved_bytes),
        " stranded in segments still in use (the fragmentation: neither empty_cache() nor the "
        "allocator's OOM retry frees it) and ",
        Amount(f.releasable_bytes, f.reserved_bytes),
        expandable ? " releasable in whole free segments and pages"
                   : " releasable in whole free segments",
        " (cache: freed by empty_cache(), or when memory runs short)");
    lines.push_back({"free", free});
  }
  lines.push_back({"fix", FixText(r, c)});
  // The sites that pin the stranded space, when it matters.
  if (c.verdict == analysis::FragVerdict::kModerate || c.verdict == analysis::FragVerdict::kLarge) {
    for (const analysis::StrandedPin& p : c.pins) {
      // A block without a recorded stack names no line of the user's code ("[...]" rows): the
      // JSON keeps it, the text leaves it out.
      if (p.synthetic) continue;
      lines.push_back(
          {"pinned by",
           absl::StrCat(p.site, " [", Sv(r.categories.Name(p.category)),
                        "]: ", FormatCount(p.blocks), p.blocks == 1 ? " block (" : " blocks (",
                        FormatBytes(p.allocated_bytes), p.blocks == 1 ? ") keeps " : ") keep ",
                        FormatCount(p.segments), p.segments == 1 ? " segment" : " segments",
                        " with ", FormatBytes(p.stranded_bytes), " stranded from being released")});
    }
  }
  return lines;
}

Json FragAnswerToJson(const FragReport& r, const analysis::FragCost& c) {
  const FragFigures& f = c.figures;
  auto share = [&](int64_t part) {
    return f.reserved_bytes > 0
               ? JsonRatio(static_cast<double>(part) / static_cast<double>(f.reserved_bytes))
               : Json(0.0);
  };
  Json j;
  j["device"] = c.device;
  j["at"] = c.at_peak ? "peak-reserved" : "end";
  j["event_index"] = c.at_peak ? Json(c.event_index) : Json(nullptr);
  j["time_us"] = c.at_peak && c.time_us != kNoTime ? Json(c.time_us) : Json(nullptr);
  j["reserved_bytes"] = f.reserved_bytes;
  j["allocated_bytes"] = f.allocated_bytes;
  j["stranded_bytes"] = f.stranded_bytes;
  j["stranded_share"] = share(f.stranded_bytes);
  j["releasable_bytes"] = f.releasable_bytes;
  j["releasable_share"] = share(f.releasable_bytes);
  j["verdict"] = std::string(analysis::FragVerdictName(c.verdict));
  Json pins = Json::array();
  for (const auto& p : c.pins) {
    pins.push_back({{"site", p.site},
                    {"category", std::string(r.categories.Name(p.category))},
                    {"blocks", p.blocks},
                    {"allocated_bytes", p.allocated_bytes},
                    {"segments", p.segments},
                    {"stranded_bytes", p.stranded_bytes}});
  }
  j["pins"] = pins;
  Json fix;
  const analysis::FragFix* ff = FixOf(r, c.device);
  fix["replayed"] = ff != nullptr && !ff->settings.empty();
  // Without a trace the replays place the dumped state on the device: the fit oom and check give.
  fix["dumped_state_only"] = !c.at_peak;
  if (ff != nullptr && !ff->settings.empty()) {
    const auto& base = ff->settings[0];
    fix["recorded_peak_reserved_bytes"] = base.peak_reserved;
    fix["recorded_fits_on_bytes"] = base.fits_on > 0 ? Json(base.fits_on) : Json(nullptr);
    fix["live_peak_bytes"] = ff->live_peak;
    if (ff->best >= 0) {
      const auto& b = ff->settings[static_cast<size_t>(ff->best)];
      fix["best"] = {
          {"conf", b.conf},
          {"settings", b.settings},
          {"peak_reserved_bytes", b.peak_reserved},
          {"fits_on_bytes", b.fits_on},
          {"saved_bytes", base.fits_on > 0 ? Json(base.fits_on - b.fits_on) : Json(nullptr)}};
    } else {
      fix["best"] = nullptr;
    }
    Json tried = Json::array();
    for (const auto& m : ff->settings) {
      tried.push_back({{"conf", m.conf},
                       {"settings", m.settings},
                       {"peak_reserved_bytes", m.peak_reserved},
                       {"fits_on_bytes", m.fits_on > 0 ? Json(m.fits_on) : Json(nullptr)},
                       {"same_as", m.same_as.empty() ? Json(nullptr) : Json(m.same_as)}});
    }
    fix["settings"] = tried;
    fix["recorded_ooms"] = ff->recorded_ooms;
    fix["start"] = ff->warm ? "recorded" : "cold";
  } else {
    fix["reason"] = c.at_peak ? "not replayed (--no-replay)" : "no trace";
  }
  j["fix"] = fix;
  j["lines"] = AnswerLinesToJson(FragAnswer(r, c));
  return j;
}

Json FragFiguresToJson(const FragFigures& f) {
  Json j;
  j["segments"] = f.segments;
  j["blocks"] = f.blocks;
  j["reserved_bytes"] = f.reserved_bytes;
  j["allocated_bytes"] = f.allocated_bytes;
  j["pending_free_bytes"] = f.pending_free_bytes;
  j["free_bytes"] = f.free_bytes;
  j["requested_bytes"] = f.requested_bytes;
  j["internal_waste_bytes"] = f.internal_waste_bytes;
  j["free_blocks"] = f.free_blocks;
  j["largest_free_bytes"] = f.largest_free_bytes;
  j["stranded_bytes"] = f.stranded_bytes;
  j["releasable_bytes"] = f.releasable_bytes;
  j["free_segments"] = f.free_segments;
  return j;
}

std::string UndoProblemsText(const analysis::UndoProblems& p) {
  std::vector<std::string> parts;
  auto add = [&](int64_t n, const char* what) {
    if (n > 0) parts.push_back(absl::StrCat(n, " ", what));
  };
  add(p.alloc_without_block, "alloc(s) of a block not live");
  add(p.free_of_live_block, "free(s) of a block already live");
  add(p.block_outside_segment, "event(s) outside any known segment");
  add(p.segment_with_blocks, "segment creation(s) over live blocks");
  add(p.segment_overlap, "segment release(s) over a live segment");
  return absl::StrJoin(parts, ", ");
}

std::vector<std::string> RewindWarnings(const analysis::RewindCaveats& c) {
  std::vector<std::string> out;
  if (c.pre_window_blocks > 0) {
    out.push_back(absl::StrCat(
        TraceStartWarning(c.device, c.trace_start, c.pre_window_blocks, c.pre_window_bytes),
        ": peaks and the timeline cover the trace window only"));
  }
  if (c.problems.any()) {
    out.push_back(absl::StrCat("device ", c.device,
                               ": the trace could not be undone consistently (",
                               UndoProblemsText(c.problems),
                               "); states reconstructed before those events are approximate"));
  }
  return out;
}

std::vector<std::string> FragWarnings(const FragReport& r) {
  std::vector<std::string> out;
  for (const analysis::RewindCaveats& c : r.rewind) {
    for (std::string& w : RewindWarnings(c)) out.push_back(std::move(w));
  }
  return out;
}

Json FragToJson(const FragReport& r) {
  Json j;
  j["file"] = r.source.path;
  j["at"] = MomentName(r);
  // The answer first, as the text opens with it (its own moment: each device's reserved peak).
  Json answers = Json::array();
  for (const auto& c : r.costs) answers.push_back(FragAnswerToJson(r, c));
  j["answers"] = answers;
  j.update(FragFiguresToJson(r.totals));
  j["external_fragmentation"] = JsonRatio(r.external_fragmentation);
  j["max_split_size"] = r.max_split_size;
  Json devices = Json::array();
  for (const auto& d : r.devices) {
    Json dj;
    dj["device"] = d.device;
    dj["reconstructed"] = d.reconstructed;
    if (d.reconstructed) {
      dj["event_index"] = d.event_index;
      dj["time_us"] = internal::TimeToJson(d.time_us);
    }
    dj.update(FragFiguresToJson(d.figures));
    dj["external_fragmentation"] = JsonRatio(d.external_fragmentation);
    devices.push_back(dj);
  }
  j["devices"] = devices;
  j["groups"] = TableToJson(GroupsTable(r));
  j["what_fits"] = TableToJson(FitsTable(r));
  j["free_size_histogram"] = TableToJson(HistogramTable(r));
  Json peaks = Json::array();
  for (const auto& p : r.peaks) {
    peaks.push_back(Json{{"device", p.device},
                         {"peak_reserved", SampleToJson(p.peak_reserved)},
                         {"peak_allocated", SampleToJson(p.peak_allocated)},
                         {"peak_overhead", JsonRatio(p.peak_overhead)}});
  }
  j["peaks"] = peaks;
  if (!r.timeline.empty()) {
    Json tl = Json::array();
    for (const auto& s : r.timeline) tl.push_back(SampleToJson(s));
    j["timeline"] = tl;
  }
  Json segs = Json::array();
  for (const auto& s : r.segments) {
    Json sj;
    sj["device"] = s.device;
    sj["address"] = FormatAddress(s.address);
    sj["stream"] = s.stream;
    sj["pool"] = PoolName(s.pool);
    sj["pool_type"] = s.is_small ? "small" : "large";
    sj["expandable"] = s.is_expandable;
    sj.update(FragFiguresToJson(s.figures));
    sj.erase("segments");
    sj["external_fragmentation"] = JsonRatio(s.external_fragmentation);
    segs.push_back(sj);
  }
  j["segments_detail"] = segs;
  j["warnings"] = FragWarnings(r);
  return j;
}

// Past kFullDeviceSections devices, each device's answer in one line: where, the figures behind
// the verdict, the verdict.
Table CostsTable(const FragReport& r) {
  Table t;
  AddDeviceColumn(t);
  Col(t, "at", "at", Unit::kText, 14);
  Col(t, "reserved_bytes", "reserved", Unit::kBytes, 12);
  Col(t, "stranded_bytes", "stranded", Unit::kBytes, 12);
  Col(t, "releasable_bytes", "releasable", Unit::kBytes, 12);
  Col(t, "verdict", "verdict", Unit::kText, 0);
  t.rows.reserve(r.costs.size());
  for (const analysis::FragCost& c : r.costs) {
    t.AddRow({int64_t{c.device}, c.at_peak ? EventName(c.event_index) : std::string("end"),
              c.figures.reserved_bytes, c.figures.stranded_bytes, c.figures.releasable_bytes,
              std::string(c.figures.stranded_bytes <= 0 ? std::string_view("none")
                                                        : analysis::FragVerdictName(c.verdict))});
  }
  return t;
}

void RenderFragText(const FragReport& r, const FragRenderOptions& o, std::ostream& out) {
  out << r.source.path << "\n";
  const bool compact = CompactDevices(r.costs.size()) || CompactDevices(r.devices.size());
  if (compact) {
    // One line per device: the answer's figures; `--device N` gives a device its full answer.
    out << CompactDevicesNote(std::max(r.costs.size(), r.devices.size()), "frag") << "\n";
    out << "answers (at: the reserved peak's event, or the end of a device without a trace)\n";
    RenderTableText(CostsTable(r), out, {"  ", true});
    out << "\n";
  }
  // The answer first, per device; the figures below are its evidence.
  for (const auto& c : r.costs) {
    if (compact) break;
    out << "device " << c.device << "\n";
    RenderAnswerLines(FragAnswer(r, c), out);
    out << "\n";
  }
  if (r.at == analysis::FragMoment::kEnd) {
    out << "  state          end of the snapshot (its segments)\n";
  } else {
    out << "  state          "
        << (r.at == analysis::FragMoment::kMoment ? "at " + MomentName(r) : MomentName(r))
        << ", reconstructed from the trace:";
    const char* sep = " ";
    if (compact) {
      out << " each device at its own moment (--device N names it)";
      sep = "";
    }
    for (const auto& d : r.devices) {
      if (compact) break;
      if (!d.reconstructed) continue;
      out << sep << "device " << d.device << " " << EventName(d.event_index);
      for (const auto& p : r.peaks) {
        std::string secs = p.device == d.device ? Seconds(d.time_us, p.trace_start_us) : "";
        if (!secs.empty()) out << " (" << secs << ")";
      }
      sep = "; ";
    }
    out << "\n";
  }
  const TextTableOptions indented{"  ", true};
  RenderTableText(TotalsTable(r), out, {"  ", false});
  if (!compact) {
    out << "\nfree space by pool and stream\n";
    RenderTableText(GroupsTable(r), out, indented);

    out << "\nwhat fits (largest request served from cached blocks, without new memory)\n";
    RenderTableText(FitsTable(r), out, indented);
    if (r.max_split_size >= 0) {
      out << "  (max_split_size " << FormatBytes(r.max_split_size) << " applied)\n";
    }
  } else {
    out << "\n(free space by pool and stream, what fits and the peaks of each device: "
           "--device N, or --json for every device)\n";
  }

  if (!r.peaks.empty() && !compact) {
    out << "\npeaks (reconstructed from the trace; `--at peak` for the full report there)\n";
    RenderTableText(PeaksTable(r), out, indented);
    for (const auto& p : r.peaks) {
      out << "  device " << p.device
          << ": 1 - peak allocated / peak reserved = " << FormatPercent(p.peak_overhead) << "\n";
    }
  }

  if (!r.histogram.empty()) {
    out << "\nfree block sizes\n";
    RenderTableText(HistogramTable(r), out, indented);
  }

  size_t shown =
      o.top <= 0 ? r.segments.size() : std::min(r.segments.size(), static_cast<size_t>(o.top));
  out << "\nsegment map (" << shown << " of " << r.segments.size()
      << " segments, most stranded first; # allocated, % pending free, . free; * expandable)\n";
  RenderTableText(SegmentMapTable(r, shown, o.bar_width), out, indented);
  if (const std::vector<std::string> warnings = FragWarnings(r); !warnings.empty()) {
    out << "\nwarnings\n";
    for (const auto& w : warnings) out << "  - " << w << "\n";
  }
}

void RenderFragTimelineText(const FragReport& r, std::ostream& out) {
  out << r.source.path << "\n";
  if (r.timeline.empty()) {
    out << "  no trace: no timeline\n";
    return;
  }
  // One table per device: its times count from the device's first event.
  for (size_t i = 0; i < r.timeline.size();) {
    const int32_t device = r.timeline[i].device;
    std::vector<const analysis::FragSample*> samples;
    for (; i < r.timeline.size() && r.timeline[i].device == device; ++i) {
      samples.push_back(&r.timeline[i]);
    }
    int64_t start = kNoTime;
    for (const auto& p : r.peaks) {
      if (p.device == device) start = p.trace_start_us;
    }
    out << "\ndevice " << device << "\n";
    RenderTableText(TimelineTable(samples, start), out, {"  ", true});
  }
}

void RenderFragTimelineCsv(const FragReport& r, std::ostream& out) {
  std::vector<const analysis::FragSample*> samples;
  for (const auto& s : r.timeline) samples.push_back(&s);
  RenderTableCsv(TimelineTable(samples, kNoTime), out);
}

void RenderFragRanksText(const query::FragRanksResult& result, std::ostream& out) {
  out << "fragmentation at the "
      << (result.at == "end"              ? "end of each snapshot"
          : result.at == "peak-allocated" ? "peak allocated of each device"
          : result.moment == analysis::FragMoment::kMoment
              ? absl::StrCat("moment ", result.at, " of each device")
              : "peak reserved of each device")
      << "\n\n";
  RenderRankTableText(WithFragNotes(result.table, result.ranks), out);
}

nlohmann::ordered_json FragRanksToJson(const query::FragRanksResult& result) {
  nlohmann::ordered_json j;
  j["at"] = result.at;
  j["ranks"] = RankTableToJson(WithFragNotes(result.table, result.ranks));
  return j;
}

void RenderFragRanksCsv(const query::FragRanksResult& result, std::ostream& out) {
  RenderTableCsv(RankTableToTable(WithFragNotes(result.table, result.ranks)), out);
}

}  // namespace memsnap::report
