#include "memsnap/report/oom_render.h"

#include <algorithm>
#include <sstream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "memsnap/report/table_render.h"
#include "memsnap/util/format.h"
#include "memsnap/util/strings.h"
#include "memsnap/util/table.h"
#include "report/render_util.h"

namespace memsnap::report {

namespace {

using Json = nlohmann::ordered_json;
using analysis::OomDevice;
using analysis::OomExplanation;
using analysis::OomHolder;
using analysis::OomRemedy;
using analysis::OomReport;

Json EventJson(uint32_t e) { return e == analysis::kPreexistingEvent ? Json(nullptr) : Json(e); }

const OomDevice* DeviceOf(const OomReport& r, int32_t device) {
  for (const OomDevice& d : r.devices) {
    if (d.device == device) return &d;
  }
  return nullptr;
}

std::string Plural(int64_t n, std::string_view one, std::string_view many) {
  return absl::StrCat(FormatCount(n), " ", Sv(n == 1 ? one : many));
}

std::string ShareOrDash(int64_t part, int64_t whole) {
  return whole <= 0 ? std::string("-")
                    : FormatPercent(static_cast<double>(part) / static_cast<double>(whole));
}

std::string RemedyResult(const OomRemedy& m) {
  if (m.fits) return "fits";
  if (m.fails_at == analysis::kPreexistingEvent) {
    return absl::StrCat("fails before the trace (", FormatBytes(m.fail_requested), ")");
  }
  return absl::StrCat("fails at event:", m.fails_at, " (", FormatBytes(m.fail_requested), ")");
}

std::string SettingName(const OomRemedy& m) {
  if (m.conf == "recorded") return absl::StrCat("recorded (", m.settings, ")");
  return m.conf;
}

std::string Cat(const analysis::CategoryNames& names, analysis::Category c) {
  return std::string(names.Name(c));
}

// The verdict sentence, capitalised for a line of its own.
std::string Sentence(const std::string& s) {
  std::string out = s;
  if (!out.empty()) out[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(out[0])));
  return out + ".";
}

// What could make room for one failure. `by_category`: also a lever per category of the live
// memory (left out when the device's verdict already named them, at its peak).
std::vector<std::string> Levers(const OomExplanation& o, bool by_category,
                                analysis::Workload workload, const analysis::CategoryNames& names) {
  std::vector<std::string> out;
  if (o.shortfall > 0 && !o.holders.empty()) {
    const auto& h = o.holders[0];
    out.push_back(absl::StrCat("the largest holder, ", h.site, ", holds ", FormatBytes(h.bytes),
                               " in ", Plural(h.blocks, "block", "blocks"), ": ",
                               h.bytes >= o.shortfall
                                   ? absl::StrCat(FormatPercent(static_cast<double>(o.shortfall) /
                                                                static_cast<double>(h.bytes)),
                                                  " less of it would make room")
                                   : std::string("even all of it would not make room")));
  }
  for (const auto& h : o.holders) {
    if (h.site == o.site) {
      out.push_back(absl::StrCat("the failing request's own site already holds ",
                                 FormatBytes(h.bytes), " in ", Plural(h.blocks, "block", "blocks"),
                                 " (", ShareOrDash(h.bytes, o.holders_bytes),
                                 " of the live memory)"));
      break;
    }
  }
  for (const auto& c : o.categories) {
    if (!by_category) break;
    std::string_view lever = CategoryLever(c.category, workload);
    if (lever.empty() || c.bytes < o.shortfall) continue;
    out.push_back(absl::StrCat(Cat(names, c.category), " holds ", FormatBytes(c.bytes), " (",
                               ShareOrDash(c.bytes, o.holders_bytes), "): ", Sv(lever)));
  }
  return out;
}

// The settings replayed on a device: what happened under each (text only; the JSON keeps its
// `fits` booleans, RemedyJson).
Table RemediesTable(const OomDevice& d) {
  Table t;
  t.AddColumn("setting", "setting", Unit::kText);
  t.AddColumn("result", "result", Unit::kText);
  t.AddColumn("peak_reserved_bytes", "peak reserved", Unit::kBytes);
  t.AddColumn("headroom_bytes", "headroom", Unit::kBytes);
  const bool searched = std::any_of(d.remedies.begin(), d.remedies.end(),
                                    [](const OomRemedy& m) { return m.fits_on > 0; });
  if (searched) {
    // In text with the decimals it takes not to read as the device's own size: a setting that
    // fails on 11.0 GiB fits on 11.03 GiB, not on "11.0 GiB".
    t.AddColumn("fits_on_bytes", "fits on", Unit::kBytes).in_text = false;
    Column& text = t.AddColumn("fits_on", "fits on", Unit::kText);
    text.align = Align::kRight;
    text.in_data = false;
  }
  for (const OomRemedy& m : d.remedies) {
    std::vector<Cell> row = {SettingName(m), RemedyResult(m), m.peak_reserved,
                             m.fits ? Cell(m.headroom) : Cell()};
    if (searched) {
      row.push_back(m.fits_on > 0 ? Cell(m.fits_on) : Cell());
      row.push_back(m.fits_on > 0 ? Cell(FormatBytesApart(m.fits_on, d.capacity)) : Cell());
    }
    t.AddRow(std::move(row));
  }
  return t;
}

// The largest sites live at a failure.
Table HoldersTable(const OomExplanation& o, const analysis::CategoryNames& names) {
  Table t;
  t.AddColumn("bytes", "bytes", Unit::kBytes);
  t.AddColumn("share", "share", Unit::kRatio);
  t.AddColumn("blocks", "blocks", Unit::kCount);
  t.AddColumn("site", "site", Unit::kText);
  t.AddColumn("category", "category", Unit::kText);
  for (const auto& h : o.holders) {
    const Cell share =
        o.holders_bytes <= 0
            ? Cell()
            : Cell(static_cast<double>(h.bytes) / static_cast<double>(o.holders_bytes));
    t.AddRow({h.bytes, share, h.blocks, h.site, Cat(names, h.category)});
  }
  return t;
}

Json RemedyJson(const OomRemedy& m) {
  return {{"conf", m.conf},
          {"fits_on_bytes", m.fits_on > 0 ? Json(m.fits_on) : Json(nullptr)},
          {"settings", m.settings},
          {"fits", m.fits},
          {"peak_reserved_bytes", m.peak_reserved},
          {"headroom_bytes", m.fits ? Json(m.headroom) : Json(nullptr)},
          {"fails_at_event", m.fits ? Json(nullptr) : EventJson(m.fails_at)}};
}

// Where the device's live peak is, as text: "at event:19335 (+562.9 ms)".
std::string PeakWhere(const OomDevice& d) {
  std::string where = d.trace_peak_event.is_start()
                          ? std::string("before its first event")
                          : absl::StrCat("at event:", d.trace_peak_event.index());
  if (d.trace_peak_time_us != kNoTime && d.start_time_us != kNoTime) {
    absl::StrAppend(&where, " (", FormatRelativeTime(d.trace_peak_time_us - d.start_time_us), ")");
  }
  return where;
}

// The smallest device memory the run fits on (the `fits on` column), as one line: the best
// setting, and the recorded settings' figure beside it.
void RenderSmallestFit(const OomDevice& d, std::ostream& out) {
  if (d.smallest_fit < 0) return;
  const OomRemedy* best = &d.remedies[d.smallest_fit];
  out << "  smallest device memory the run fits on, by replay from "
      << (d.fit_warm ? "the recorded state" : "a cold start") << ": "
      << FormatBytesApart(best->fits_on, d.capacity);
  if (best != &d.remedies[0]) {
    out << " with PYTORCH_CUDA_ALLOC_CONF=" << best->settings;
    if (d.remedies[0].fits_on > 0) {
      out << " (" << FormatBytesApart(d.remedies[0].fits_on, d.capacity)
          << " with the recorded settings)";
    }
  } else {
    out << " with the recorded settings (no candidate needs "
        << FormatPercent(analysis::kFitMinGain) << " less)";
  }
  out << "; the live peak alone is " << FormatBytesApart(d.trace_peak_live, d.capacity) << "\n";
}

void RenderRemedies(const OomDevice& d, bool demand, std::ostream& out) {
  out << "  remedies, each replayed on " << FormatBytes(d.capacity)
      << " (applied on top of the recorded settings):\n";
  RenderTableText(RemediesTable(d), out, {"    ", true});
  std::string same;
  for (const OomRemedy& m : d.remedies) {
    if (m.same_as.empty()) continue;
    absl::StrAppend(&same, same.empty() ? "" : ", ", m.conf);
  }
  if (!same.empty()) {
    out << "    (" << same
        << ": no block of this run reaches that size, so the oversize rules never apply and "
           "every block is placed as under the recorded settings; that replay stands for them)\n";
  }
  const int fitting = d.fitting_candidates;
  const OomRemedy* best = d.best_fitting >= 0 ? &d.remedies[d.best_fitting] : nullptr;
  const size_t candidates = d.remedies.empty() ? 0 : d.remedies.size() - 1;
  if (d.fits()) {
    out << "  the recorded settings fit: peak reserved " << FormatBytes(d.remedies[0].peak_reserved)
        << ", headroom " << FormatBytes(d.remedies[0].headroom) << "\n";
  } else if (best != nullptr) {
    out << "  " << fitting << " of the " << candidates
        << " candidate settings fit, verified by replaying the whole trace; the lowest peak: "
           "PYTORCH_CUDA_ALLOC_CONF="
        << best->settings << " (peak reserved " << FormatBytes(best->peak_reserved) << ", headroom "
        << FormatBytes(best->headroom) << ")\n";
  } else if (candidates > 0) {
    out << "  none of the " << candidates << " candidate settings fits on "
        << FormatBytes(d.capacity)
        << (demand ? ": the live memory itself has to shrink"
                   : ": the live memory would fit, but no layout tried does; try other settings "
                     "(--conf) or a lower peak of live memory")
        << "\n";
  }
  RenderSmallestFit(d, out);
}

// The device's answer (analysis::OomAnswer) in three lines ahead of the evidence: why it fails,
// what setting fits (or how much memory the run needs), and what to cut when no setting fits.
std::vector<OomAnswerLine> Answer(const OomDevice& d, const analysis::OomAnswer& a,
                                  const OomExplanation& first,
                                  const analysis::CategoryNames& names) {
  std::vector<OomAnswerLine> lines;
  auto line = [&](std::string_view label, std::string text) {
    lines.push_back({std::string(label), std::move(text)});
  };
  const std::string cap = FormatBytes(d.capacity);
  const std::string where = OomWhereAt(first);
  if (a.peak_too_big) {
    line("answer",
         absl::StrCat("demand: the run's live memory peaks at ", FormatBytes(d.trace_peak_live),
                      " ", PeakWhere(d), ", ", FormatBytes(a.excess), " more than ", cap,
                      "; no allocator setting can fit that"));
  } else {
    switch (a.verdict) {
      case analysis::OomVerdict::kDemand:
        line("answer",
             absl::StrCat("demand: ", where, " the live memory (", FormatBytes(first.allocated),
                          ") and the ", FormatBytes(first.rounded), " request come to ",
                          FormatBytes(a.excess), " more than ", cap));
        break;
      case analysis::OomVerdict::kFragmentation:
        line("answer",
             absl::StrCat("fragmentation: ", where, " ", FormatBytes(first.free_bytes),
                          " was free, but no free block holds the ", FormatBytes(first.rounded),
                          " asked for, and a new segment needs ", FormatBytes(first.segment_bytes),
                          " of the ", FormatBytes(first.device_free), " the device had left"));
        break;
      case analysis::OomVerdict::kCacheNotReleased:
        line("answer",
             absl::StrCat("cached memory not released: ", where,
                          " a free cached block would hold the ", FormatBytes(first.rounded),
                          " request, but the allocator may not use it (below)"));
        break;
      case analysis::OomVerdict::kNotReproduced:
        line("answer", absl::StrCat("the replay did not reproduce the failure ", where,
                                    "; only its recorded figures are known"));
        return lines;
    }
  }
  if (d.best_fitting >= 0) {
    const OomRemedy& best = d.remedies[d.best_fitting];
    std::string text =
        absl::StrCat("PYTORCH_CUDA_ALLOC_CONF=", best.settings, ": the whole trace replays on ",
                     cap, " with ", FormatBytes(best.headroom), " to spare");
    if (d.fitting_candidates > 1) {
      absl::StrAppend(&text, " (", d.fitting_candidates, " of the ", d.remedies.size() - 1,
                      " candidate settings fit)");
    }
    line("fix", text);
    return lines;
  }
  std::string fix = absl::StrCat(
      "no allocator setting fits ", cap, " (",
      Plural(static_cast<int64_t>(d.remedies.size()), "setting", "settings"), " replayed)");
  if (d.smallest_fit >= 0) {
    const OomRemedy& smallest = d.remedies[d.smallest_fit];
    absl::StrAppend(&fix, "; the run needs ", FormatBytesApart(smallest.fits_on, d.capacity),
                    d.smallest_fit == 0
                        ? std::string(" with its recorded settings")
                        : absl::StrCat(" with PYTORCH_CUDA_ALLOC_CONF=", smallest.settings));
  }
  line("fix", fix);
  if (a.cut == analysis::OomCut::kRequest) {
    line("cut", absl::StrCat("the ", FormatBytes(first.rounded), " request alone is more than the ",
                             cap, " device: ",
                             first.site_synthetic || first.site.empty()
                                 ? std::string("the operation that asked")
                                 : first.site,
                             " has to ask for less (smaller chunks, batch or sequence)"));
    return lines;
  }
  if (a.cut != analysis::OomCut::kLive) return lines;
  std::string what = a.cut_approximate ? absl::StrCat("about ", FormatBytes(a.cut_bytes))
                                       : absl::StrCat(FormatBytes(a.cut_bytes), " or more");
  absl::StrAppend(&what, a.peak_too_big ? " at the peak" : " at the failure");
  // The kinds whose levers apply, largest first, until they cover the cut; and plainly when
  // all of them together cannot.
  for (size_t k = 0; k < a.cut_kinds.size(); ++k) {
    const OomHolder& kind = a.cut_kinds[k];
    absl::StrAppend(&what, k == 0 ? ": " : "; ", Cat(names, kind.category), " holds ",
                    FormatBytes(kind.bytes), ", try ",
                    Sv(CategoryLever(kind.category, d.workload.kind)));
  }
  if (!a.cut_kinds.empty() && a.cut_levered_bytes < a.cut_bytes) {
    absl::StrAppend(&what, "; together the kinds with a lever hold only ",
                    FormatBytes(a.cut_levered_bytes), ", less than the ", FormatBytes(a.cut_bytes),
                    " to cut: the rest is of unknown kind, and these levers alone cannot make "
                    "the run fit");
  } else if (a.cut_kinds.empty()) {
    absl::StrAppend(&what, ": no kind of memory with a known lever is live there");
  }
  // How much smaller the batch would have to be, as a replay found it (OomDevice).
  if (d.batch_share_fits) {
    const int percent = static_cast<int>(*d.batch_share_fits * 100.0);  // floor: it fits there
    absl::StrAppend(
        &what, percent > 0
                   ? absl::StrCat("; a batch about ", percent,
                                  "% as large fits (replayed with the activations, temporaries "
                                  "and inputs at ",
                                  percent, "% of their sizes)")
                   : std::string("; a replay without any activations, temporaries or inputs "
                                 "does not fit either"));
  }
  if (a.cut_site) {
    absl::StrAppend(&what, "; the largest site is ", first.holders[0].site, " (",
                    FormatBytes(first.holders[0].bytes), ")");
  }
  line("cut", what);
  return lines;
}

// What is live at the device's peak by kind, when the peak itself does not fit, and the levers
// of the kinds after the first (which the answer's `cut` line names).
void RenderPeakKinds(const OomDevice& d, const analysis::CategoryNames& names, std::ostream& out) {
  if (d.peak_categories.empty()) return;
  std::string cats;
  for (const OomHolder& c : d.peak_categories) {
    absl::StrAppend(&cats, cats.empty() ? "" : ", ", Cat(names, c.category), " ",
                    FormatBytes(c.bytes));
  }
  out << "  at the peak " << cats << "\n";
  bool first = true;  // the first kind with a lever is in the answer's `cut` line
  for (const OomHolder& c : d.peak_categories) {
    std::string_view lever = CategoryLever(c.category, d.workload.kind);
    if (lever.empty()) continue;
    if (std::exchange(first, false) || c.bytes < d.trace_peak_live - d.capacity) continue;
    out << "  lever       " << Cat(names, c.category) << " " << FormatBytes(c.bytes)
        << " at the peak: " << lever << "\n";
  }
}

// Last step's gradients alive in the peak's forward pass, and what zero_grad before it does when
// replayed on the device (analysis::ZeroGradLever).
void RenderZeroGradLever(const OomDevice& d, std::ostream& out) {
  if (!d.zero_grad) return;
  const analysis::ZeroGradLever& z = *d.zero_grad;
  out << "  lever       last step's gradients are still alive in the peak's forward pass (from "
      << "event:" << z.forward_start << "): " << FormatBytes(z.bytes) << " in "
      << Plural(z.blocks, "block", "blocks")
      << (z.freed_by_zero_grad > 0 ? ", freed by zero_grad after it" : ", freed after it")
      << "; optimizer.zero_grad(set_to_none=True) before the forward: replayed, "
      << (z.fits ? "the run fits (peak reserved " : "it still does not fit (reserved ")
      << FormatBytes(z.peak_reserved) << (z.fits ? ")" : " at the first failure)") << "\n";
}

void RenderOne(const OomExplanation& o, const analysis::CategoryNames& names, size_t index,
               size_t count, bool category_levers, analysis::Workload workload, std::ostream& out) {
  out << "\nOOM " << index << " of " << count << ": device " << o.device << ", " << OomWhere(o);
  if (o.recorded) {
    out << (o.reproduced ? ", recorded oom entry, reproduced by the replay"
                         : ", recorded oom entry (not reproduced by the replay)");
  } else {
    out << ", predicted by the replay";
  }
  out << "\n";
  auto line = [&](std::string_view label, const std::string& text) {
    out << absl::StrFormat("  %-11s %s\n", label, text);
  };
  std::string asked = FormatBytes(o.requested);
  if (o.reproduced) {
    absl::StrAppend(&asked, " (rounded ", FormatBytes(o.rounded), "; a new segment needs ",
                    FormatBytes(o.segment_bytes), "), ", o.is_small ? "small" : "large",
                    " pool, stream ", o.stream);
  } else {
    absl::StrAppend(&asked, " (rounded), stream ", o.stream);
  }
  line("asked for", asked);
  line("site", absl::StrCat(o.site, "  [", Cat(names, o.category), "]"));
  if (o.reproduced) {
    std::string dev = absl::StrCat(FormatBytes(o.device_free), " free of ", FormatBytes(o.capacity),
                                   "; reserved ", FormatBytes(o.reserved), ", allocated ",
                                   FormatBytes(o.allocated));
    if (o.recorded_device_free && *o.recorded_device_free != o.device_free) {
      absl::StrAppend(&dev, " (the trace recorded ", FormatBytes(*o.recorded_device_free),
                      " free)");
    }
    line("device", dev);
    if (o.released_segments > 0) {
      line("retry",
           absl::StrCat("no cached block fit; the allocator released ",
                        Plural(o.released_segments, "cached segment", "cached segments"), " (",
                        FormatBytes(o.released_bytes), ") and retried, and still failed"));
    } else {
      line("retry", absl::StrCat("no cached block fit, and no whole free segment was left to "
                                 "release (reserved ",
                                 FormatBytes(o.reserved_before), ")"));
    }
  } else {
    line("device", absl::StrCat(FormatBytes(o.device_free), " free of ", FormatBytes(o.capacity),
                                " (as recorded)"));
  }
  line("verdict", Sentence(OomVerdictText(o)));
  if (!o.holders.empty()) {
    line("holders",
         absl::StrCat("live blocks at the failure: ", FormatBytes(o.holders_bytes), " in ",
                      Plural(o.holders_blocks, "block", "blocks"), "; the largest sites:"));
    RenderTableText(HoldersTable(o, names), out, {"    ", true});
    bool all_unknown = std::all_of(o.categories.begin(), o.categories.end(), [](const auto& c) {
      return c.category == analysis::Category::kUnknown;
    });
    if (all_unknown) {
      line("categories", "not attributed yet (every block is \"unknown\")");
    } else {
      std::string cats;
      for (const auto& c : o.categories) {
        absl::StrAppend(&cats, cats.empty() ? "" : ", ", Cat(names, c.category), " ",
                        FormatBytes(c.bytes));
      }
      line("categories", cats);
    }
  }
  if (o.reproduced) {
    line("shortfall",
         o.shortfall > 0
             ? absl::StrCat(FormatBytes(o.shortfall), " (", FormatExactBytes(o.shortfall),
                            "): live memory must shrink by at least this for the request to fit")
             : std::string("0 B here: the live memory and this request fit the device; the "
                           "layout does not"));
  }
  for (const std::string& l : Levers(o, category_levers, workload, names)) line("lever", l);
}

}  // namespace

std::string_view CapacitySourceName(analysis::CapacitySource source) {
  return source == analysis::CapacitySource::kFlag ? "--device-memory"
                                                   : "oom entry (device_free + reserved)";
}

std::vector<std::string> OomReportNotes(const OomReport& r) {
  std::vector<std::string> notes;
  for (int32_t device : r.devices_without_capacity) {
    auto rejected = std::find_if(r.rejected_capacities.begin(), r.rejected_capacities.end(),
                                 [&](const auto& c) { return c.device == device; });
    if (rejected != r.rejected_capacities.end()) {
      notes.push_back(absl::StrCat(
          "device ", device, ": its oom entry implies ", FormatBytes(rejected->implied),
          " of device memory (device_free + reserved), which cannot be right: ", rejected->why,
          "; give --device-memory SIZE to ask whether it fits"));
      continue;
    }
    notes.push_back(absl::StrCat(
        "device ", device,
        ": no oom entry in its trace; give --device-memory SIZE to ask whether it fits"));
  }
  return notes;
}

std::vector<std::string> OomDeviceNotes(const OomDevice& d) {
  std::vector<std::string> notes;
  if (d.preexisting_blocks > 0) {
    notes.push_back(absl::StrCat(
        d.preexisting_blocks, " blocks (", FormatBytes(d.preexisting_bytes),
        ") were allocated before the trace began; ",
        d.warm_start ? "every replay starts from the segments alive then"
                     : "every replay allocates them first, in address order (the trace does not "
                       "say when they were allocated)"));
  }
  if (d.unexplained_ooms > 0) {
    notes.push_back(absl::StrCat(d.unexplained_ooms, " more failed allocations after the first ",
                                 analysis::kMaxExplainedOoms, " are not explained"));
  }
  return notes;
}

std::string OomWhereAt(const OomExplanation& o) {
  return o.event == analysis::kPreexistingEvent ? OomWhere(o) : absl::StrCat("at ", OomWhere(o));
}

std::string OomWhere(const OomExplanation& o) {
  if (o.event == analysis::kPreexistingEvent) {
    return "before the trace (re-creating the blocks alive when it began)";
  }
  std::string s = absl::StrCat("event:", o.event);
  if (o.time_us != kNoTime && o.start_time_us != kNoTime) {
    absl::StrAppend(&s, " (", FormatRelativeTime(o.time_us - o.start_time_us), ")");
  }
  return s;
}

Json OomToJson(const OomReport& r) {
  const analysis::CategoryNames& names = r.categories;
  Json j;
  j["file"] = r.file;
  if (r.device_memory) {
    j["device_memory_bytes"] = *r.device_memory;
  } else if (!r.devices.empty()) {
    j["device_memory_bytes"] = r.devices[0].capacity;
  } else {
    j["device_memory_bytes"] = nullptr;
  }
  Json ooms = Json::array();
  for (const OomExplanation& o : r.ooms) {
    Json oj;
    oj["device"] = o.device;
    oj["event_index"] = EventJson(o.event);
    oj["time_us"] = internal::TimeToJson(o.time_us);
    oj["time_rel_us"] = o.time_us == kNoTime || o.start_time_us == kNoTime
                            ? Json(nullptr)
                            : Json(o.time_us - o.start_time_us);
    oj["recorded"] = o.recorded;
    oj["reproduced"] = o.reproduced;
    oj["requested_bytes"] = o.requested;
    oj["rounded_bytes"] = o.rounded;
    oj["segment_bytes"] = o.segment_bytes;
    oj["pool"] = o.is_small ? "small" : "large";
    oj["stream"] = o.stream;
    oj["site"] = o.site;
    oj["category"] = Cat(names, o.category);
    oj["capacity_bytes"] = o.capacity;
    oj["device_free_bytes"] = o.device_free;
    oj["recorded_device_free_bytes"] =
        o.recorded_device_free ? Json(*o.recorded_device_free) : Json(nullptr);
    oj["reserved_bytes"] = o.reserved;
    oj["allocated_bytes"] = o.allocated;
    oj["retry"] = {{"reserved_before_bytes", o.reserved_before},
                   {"released_segments", o.released_segments},
                   {"released_bytes", o.released_bytes}};
    oj["verdict"] = std::string(analysis::OomVerdictName(o.verdict));
    oj["verdict_text"] = OomVerdictText(o);
    oj["largest_free_block_bytes"] = o.largest_free_block;
    oj["free_bytes"] = o.free_bytes;
    oj["cached_free"] = {{"same_stream_bytes", o.free.pool_free},
                         {"other_streams_bytes", o.free.other_streams_free},
                         {"other_streams_largest_block_bytes", o.free.other_streams_largest},
                         {"other_pool_bytes", o.free.other_pool_free}};
    Json holders = Json::array();
    for (const auto& h : o.holders) {
      holders.push_back({{"site", h.site},
                         {"category", Cat(names, h.category)},
                         {"bytes", h.bytes},
                         {"blocks", h.blocks}});
    }
    oj["holders"] = holders;
    Json cats = Json::array();
    for (const auto& c : o.categories) {
      cats.push_back(
          {{"category", Cat(names, c.category)}, {"bytes", c.bytes}, {"blocks", c.blocks}});
    }
    oj["categories"] = cats;
    oj["live_bytes"] = o.holders_bytes;
    Json remedies = Json::array();
    if (const OomDevice* d = DeviceOf(r, o.device)) {
      for (const OomRemedy& m : d->remedies) remedies.push_back(RemedyJson(m));
    }
    oj["remedies"] = remedies;
    oj["shortfall_bytes"] = o.shortfall;
    ooms.push_back(std::move(oj));
  }
  j["ooms"] = ooms;
  Json devices = Json::array();
  for (const OomDevice& d : r.devices) {
    Json dj;
    dj["device"] = d.device;
    dj["capacity_bytes"] = d.capacity;
    dj["capacity_source"] = CapacitySourceName(d.capacity_source);
    dj["events"] = d.events;
    dj["recorded_ooms"] = d.recorded_ooms;
    dj["start"] = d.warm_start ? "warm" : "cold";
    dj["fit_start"] = d.fit_warm ? "recorded" : "cold";
    dj["fits"] = d.fits();
    dj["trace_peak_live_bytes"] = d.trace_peak_live;
    dj["trace_peak_event"] = d.trace_peak_event.index();
    dj["trace_peak_fits"] = d.trace_peak_live <= d.capacity;
    Json peak_categories = Json::array();
    for (const OomHolder& c : d.peak_categories) {
      peak_categories.push_back(
          {{"category", Cat(names, c.category)}, {"bytes", c.bytes}, {"blocks", c.blocks}});
    }
    dj["trace_peak_categories"] = peak_categories;
    if (d.zero_grad) {  // only where it applies: other files' JSON is unchanged
      const analysis::ZeroGradLever& z = *d.zero_grad;
      dj["last_step_gradients"] = {{"forward_start_event", z.forward_start},
                                   {"bytes", z.bytes},
                                   {"blocks", z.blocks},
                                   {"freed_by_zero_grad", z.freed_by_zero_grad},
                                   {"lever", "optimizer.zero_grad(set_to_none=True)"},
                                   {"replay_fits", z.fits},
                                   {"replay_peak_reserved_bytes", z.peak_reserved}};
    }
    Json remedies = Json::array();
    for (const OomRemedy& m : d.remedies) remedies.push_back(RemedyJson(m));
    dj["remedies"] = remedies;
    dj["batch_share_fits"] = d.batch_share_fits ? Json(*d.batch_share_fits) : Json(nullptr);
    dj["notes"] = OomDeviceNotes(d);
    dj["workload"] = internal::WorkloadToJson(d.workload);
    devices.push_back(std::move(dj));
  }
  j["devices"] = devices;
  j["notes"] = OomReportNotes(r);
  return j;
}

void RenderOomText(const OomReport& r, std::ostream& out) {
  out << "oom " << r.file << "\n";
  for (const std::string& n : OomReportNotes(r)) out << "note: " << n << "\n";
  for (const OomDevice& d : r.devices) {
    out << "\ndevice " << d.device << ": " << FormatBytes(d.capacity) << " ("
        << (d.capacity_source == analysis::CapacitySource::kFlag
                ? std::string("--device-memory")
                : std::string("implied by its oom entry: device_free + reserved"))
        << "), " << Plural(d.events, "trace event", "trace events") << ", "
        << Plural(d.recorded_ooms, "oom entry", "oom entries") << "\n";
    out << "  workload    " << WorkloadText(d.workload) << "\n";
    for (const std::string& n : OomDeviceNotes(d)) out << "  note: " << n << "\n";
    std::vector<const OomExplanation*> mine;
    for (const OomExplanation& o : r.ooms) {
      if (o.device == d.device) mine.push_back(&o);
    }
    if (mine.empty()) {
      out << "  no allocation fails on " << FormatBytes(d.capacity)
          << " under the recorded settings: peak reserved "
          << FormatBytes(d.remedies.empty() ? 0 : d.remedies[0].peak_reserved) << ", headroom "
          << FormatBytes(d.remedies.empty() ? 0 : d.remedies[0].headroom) << "\n";
    }
    // A run whose own live peak exceeds the capacity fails on it whatever the allocator does:
    // that is the answer, ahead of how the first failure happened.
    const bool peak_too_big = d.answer && d.answer->peak_too_big;
    RenderAnswerLines(OomAnswerLines(r, d), out);
    if (peak_too_big) RenderPeakKinds(d, r.categories, out);
    RenderZeroGradLever(d, out);
    for (size_t i = 0; i < mine.size(); ++i)
      RenderOne(*mine[i], r.categories, i + 1, mine.size(), !peak_too_big, d.workload.kind, out);
    out << "\n";
    const bool demand =
        peak_too_big || std::any_of(mine.begin(), mine.end(), [](const OomExplanation* o) {
          return o->verdict == analysis::OomVerdict::kDemand;
        });
    RenderRemedies(d, demand, out);
  }
}

std::vector<OomAnswerLine> OomAnswerLines(const OomReport& r, const OomDevice& d) {
  if (!d.answer) return {};
  return Answer(d, *d.answer, r.ooms[d.answer->first], r.categories);
}

std::string_view CategoryLever(analysis::Category category, analysis::Workload workload) {
  using analysis::Workload;
  const bool backward = analysis::HasBackward(workload);
  const bool without_backward = analysis::WithoutBackward(workload);
  switch (category) {
    case analysis::Category::kActivation:
      // Without a backward pass nothing is kept for it: checkpointing saves nothing.
      if (without_backward) {
        return "a smaller batch or sequence length (no backward pass: activation checkpointing "
               "does not apply)";
      }
      return backward ? "activation checkpointing or a smaller batch"
                      : "a smaller batch or sequence length, or activation checkpointing if "
                        "the run trains";
    case analysis::Category::kGradient:
      if (without_backward) {
        return "torch.no_grad() or torch.inference_mode() around the model (nothing needs "
               "these gradients)";
      }
      return workload == Workload::kFineTuning
                 ? "fewer trainable parameters (freeze the base model, train adapters), or "
                   "sharded gradients"
                 : "sharded gradients (FSDP, ZeRO-2), or freeing them as soon as the optimizer "
                   "step used them (zero_grad(set_to_none=True))";
    case analysis::Category::kOptimizerState:
      return workload == Workload::kFineTuning
                 ? "fewer trainable parameters (adapters such as LoRA), or a lighter optimizer "
                   "state (8-bit, sharded, offloaded)"
                 : "a lighter optimizer state (8-bit, sharded, offloaded)";
    case analysis::Category::kParameter:
      if (without_backward)
        return "quantized weights (8-bit, 4-bit) or layers offloaded to the CPU";
      return workload == Workload::kFineTuning
                 ? "a quantized frozen base model (4-bit or 8-bit, as QLoRA does) or sharded "
                   "parameters"
                 : "lower-precision or sharded parameters (FSDP, ZeRO-3)";
    case analysis::Category::kTemporary:
      return "smaller chunks for the operation that needs it";
    case analysis::Category::kInput:
      return "a smaller batch or sequence length";
    case analysis::Category::kKvCache:
      return "a shorter maximum length, a smaller batch, or a quantized or paged KV cache";
    case analysis::Category::kAutocastCache:
      return "keeping the weights in the low precision (model.to(torch.bfloat16)) or "
             "torch.autocast(..., cache_enabled=False)";
    case analysis::Category::kState:
      return "freeing or shrinking the buffers the object that made them keeps";
    case analysis::Category::kUnknown:
      return "";
  }
  return "";
}

std::string OomVerdictText(const OomExplanation& o) {
  const std::string req = FormatBytes(o.rounded);
  switch (o.verdict) {
    case analysis::OomVerdict::kNotReproduced:
      return absl::StrCat(
          "not reproduced: replaying the trace on ", FormatBytes(o.capacity), " served this ", req,
          " request, so only the recorded figures are known (the trace may have begun after "
          "memory the replay cannot see was allocated)");
    case analysis::OomVerdict::kDemand:
      return absl::StrCat("demand: the live blocks (", FormatBytes(o.allocated),
                          ") plus this request (", req, ") come to ",
                          FormatBytes(o.allocated + o.rounded), ", ", FormatBytes(o.shortfall),
                          " more than the ", FormatBytes(o.usable_capacity),
                          " the device has: it would not fit even with no fragmentation at all");
    case analysis::OomVerdict::kCacheNotReleased:
      if (o.free.other_streams_largest >= o.rounded) {
        return absl::StrCat(
            "cache not released: a free ", FormatBytes(o.free.other_streams_largest),
            " block that would hold this ", req, " request is cached for stream ",
            o.free.other_streams_stream, ", not for stream ", o.stream,
            " that asked; a cached block serves only its own stream, and the retry releases "
            "whole free segments only, not that one (",
            FormatBytes(o.free_bytes), " free in total)");
      }
      return absl::StrCat(
          "cache not released: a free ", FormatBytes(o.free.oversize_refused),
          " block on this stream would hold this ", req,
          " request, but the oversize rules of max_split_size (",
          o.max_split_size == sim::kUnlimitedSize ? std::string("unlimited")
                                                  : FormatBytes(o.max_split_size),
          ") refuse to serve it from a block that large, and the retry could not release it");
    case analysis::OomVerdict::kFragmentation:
      break;
  }
  const int64_t cached = o.reserved - o.allocated;
  if (cached == 0 && o.segment_bytes > o.rounded) {
    return absl::StrCat(
        "fragmentation: this ", req, " request would fit in the ", FormatBytes(o.device_free),
        " the device has left, but nothing is cached and the allocator reserves a whole ",
        FormatBytes(o.segment_bytes), " segment for a request of this size");
  }
  return absl::StrCat("fragmentation: ", FormatBytes(o.free_bytes), " is free (",
                      FormatBytes(o.device_free), " on the device, ", FormatBytes(cached),
                      " cached in segments that still hold live blocks), enough for this ", req,
                      " request, but the largest free block is ", FormatBytes(o.largest_free_block),
                      " and the device cannot supply the ", FormatBytes(o.segment_bytes),
                      " a new segment needs");
}

std::string OomBrief(const OomReport& r) {
  std::ostringstream out;
  for (const OomDevice& d : r.devices) {
    const std::vector<OomAnswerLine> answer = OomAnswerLines(r, d);
    if (answer.empty()) continue;
    const OomExplanation* first = nullptr;
    for (const OomExplanation& o : r.ooms) {
      if (o.device == d.device && first == nullptr) first = &o;
    }
    out << "device " << d.device << " fails " << OomWhereAt(*first) << ": "
        << FormatBytes(first->requested) << " from " << first->site << "\n";
    for (const OomAnswerLine& l : answer) out << "  " << l.label << ": " << l.text << "\n";
    for (size_t i = 0; i < first->holders.size() && i < 3; ++i) {
      out << "  holder " << FormatBytes(first->holders[i].bytes) << "  " << first->holders[i].site
          << "\n";
    }
  }
  return out.str();
}

}  // namespace memsnap::report
