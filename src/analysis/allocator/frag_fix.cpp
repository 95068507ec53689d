// The `fix` line of `memsnap frag`: which allocator setting lowers the device memory a trace needs
// the most, proven by replaying it through the simulator under each candidate (the candidates and
// the search of `memsnap oom`, docs/oom.md "The remedies"): the smallest capacity each setting
// fits on. Not the peak reserved on no limit: under pressure the allocator releases its cache, so
// a setting that only caches less would look like a saving it is not.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "analysis/allocator/replay_internal.h"
#include "memsnap/analysis/allocator/frag.h"
#include "memsnap/analysis/allocator/oom.h"
#include "memsnap/util/parallel.h"
#include "memsnap/util/status_macros.h"
#include "memsnap/util/timer.h"

namespace memsnap::analysis {

namespace {

// What one device's replays share.
struct FixJob {
  const DeviceTrace* trace = nullptr;
  PreparedTrace prepared;
  std::vector<ConfigResult> results;
  std::vector<int64_t> fits_on;
  std::vector<size_t> same_as;  // same_as[k] = j < k: setting k takes setting j's decisions
};

// The search's resolution: 2 MiB or 0.25% of the answer, as `oom`'s.
constexpr int64_t kFragFitStep = int64_t{2} << 20;

}  // namespace

absl::StatusOr<std::vector<FragFix>> FindFragFixes(const Snapshot& snap,
                                                   const FragFixOptions& options) {
  const sim::AllocatorConfig recorded = sim::ConfigFromSettings(snap.settings);
  std::vector<ReplayConfig> configs = {{"recorded", recorded}};
  std::vector<std::string> confs = options.candidates;
  if (confs.empty()) {
    // A garbage-collection threshold acts only under a memory fraction of a known capacity; on
    // no limit it would replay the recorded settings again.
    for (std::string& c : DefaultOomCandidates(recorded)) {
      if (c.find("garbage_collection_threshold") == std::string::npos) confs.push_back(c);
    }
  }
  RETURN_IF_ERROR(AppendConfs(recorded, confs, configs));

  std::vector<FixJob> jobs;
  {
    ScopedTimer t("frag: prepare replays");
    for (const DeviceTrace& t : snap.traces) {
      if (t.size() == 0) continue;
      FixJob& job = jobs.emplace_back();
      job.trace = &t;
      job.prepared = PrepareTrace(snap, t, EmptyCacheMode::kHeuristic, recorded,
                                  /*capacity_known=*/false);
      // A malloc that failed got no memory in the run: on no limit the replay would serve it
      // and peak above anything the run reserved. What fits the card is `oom`'s question.
      std::erase_if(job.prepared.ops, [](const Op& op) { return op.kind == OpKind::kOomMalloc; });
      job.results.resize(configs.size());
      job.fits_on.resize(configs.size());
      job.same_as = ReplayStandIns(job.prepared, configs);
    }
  }
  std::vector<std::pair<size_t, size_t>> runs;
  for (size_t d = 0; d < jobs.size(); ++d) {
    for (size_t k = 0; k < configs.size(); ++k) {
      if (jobs[d].same_as[k] == k) runs.emplace_back(d, k);
    }
  }
  std::vector<FitSearchStats> search_stats(runs.size());
  {
    ScopedTimer t(
        absl::StrCat("frag: ", runs.size(),
                     " settings replayed, each searched for the smallest memory it fits on"));
    ParallelFor(
        runs.size(),
        [&](size_t i) {
          auto [d, k] = runs[i];
          FixJob& job = jobs[d];
          RunOptions ro;
          ro.events = snap.EventsOf(*job.trace);
          ro.reserved_records = true;  // they bound the search's replays
          RunOutput unbounded = RunConfig(job.prepared, configs[k], ro);
          ro.reserved_records = false;
          job.fits_on[k] = SmallestFittingCapacity(job.prepared, configs[k], ro,
                                                   /*live_floor=*/-1, kFragFitStep, &unbounded,
                                                   &search_stats[i]);
          job.results[k] = std::move(unbounded.result);
        },
        static_cast<size_t>(std::max(0, options.max_threads)));
  }
  { ScopedTimer note(FitSearchNote("frag", search_stats)); }  // a line of --timings

  std::vector<FragFix> out;
  for (FixJob& job : jobs) {
    FragFix fix;
    fix.device = job.trace->device;
    fix.trace_events = static_cast<int64_t>(job.trace->size());
    for (const TraceEvent& e : snap.EventsOf(*job.trace))
      fix.recorded_ooms += e.action == Action::kOom;
    for (size_t k = 0; k < configs.size(); ++k) {
      FragSetting s;
      s.conf = configs[k].label;
      s.settings = sim::FormatAllocatorConf(configs[k].config);
      s.peak_reserved = job.results[job.same_as[k]].peak_reserved;
      s.fits_on = job.fits_on[job.same_as[k]];
      if (job.same_as[k] != k) s.same_as = configs[job.same_as[k]].label;
      fix.settings.push_back(std::move(s));
    }
    fix.live_peak = job.results[0].peak_requested;
    // The candidate that fits on the least memory (the first on ties), if it needs
    // kFragFixMinGain less than the recorded settings (or they fit on none).
    const int64_t base = fix.settings[0].fits_on;
    for (size_t k = 1; k < fix.settings.size(); ++k) {
      const int64_t need = fix.settings[k].fits_on;
      if (need <= 0) continue;
      if (base > 0 &&
          static_cast<double>(base - need) < kFragFixMinGain * static_cast<double>(base)) {
        continue;
      }
      if (fix.best < 0 || need < fix.settings[static_cast<size_t>(fix.best)].fits_on) {
        fix.best = static_cast<int>(k);
      }
    }
    out.push_back(std::move(fix));
  }
  std::sort(out.begin(), out.end(),
            [](const FragFix& a, const FragFix& b) { return a.device < b.device; });
  return out;
}

}  // namespace memsnap::analysis
