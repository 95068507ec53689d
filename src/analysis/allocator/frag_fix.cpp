// The `fix` line of `memsnap frag`: which allocator setting lowers the device memory a trace needs
// the most, proven by replaying it through the simulator under each candidate (the candidates of
// `memsnap oom`, docs/oom.md "The remedies"): the smallest capacity each setting fits on, from the
// one fit search (fit.h), so the figure is `oom`'s and `check --fits`'s. Not the peak reserved on
// no limit: under pressure the allocator releases its cache, so a setting that only caches less
// would look like a saving it is not.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "analysis/allocator/replay_internal.h"
#include "memsnap/analysis/allocator/frag.h"
#include "memsnap/analysis/allocator/oom.h"
#include "memsnap/util/status_macros.h"
#include "memsnap/util/timer.h"

namespace memsnap::analysis {

absl::StatusOr<std::vector<FragFix>> FindFragFixes(const Snapshot& snap,
                                                   const FragFixOptions& options) {
  const sim::AllocatorConfig recorded = sim::ConfigFromSettings(snap.settings);
  std::vector<ReplayConfig> configs = {{"recorded", recorded}};
  const std::vector<std::string> confs =
      options.candidates.empty() ? DefaultOomCandidates(recorded) : options.candidates;
  RETURN_IF_ERROR(AppendConfs(recorded, confs, configs));

  // What one device's searches share: the preparation and start of every fit answer (the
  // failed requests kept: a run fits only where they are served).
  struct Device {
    const DeviceTrace* trace = nullptr;
    PreparedTrace prepared;
    std::vector<size_t> same_as;
  };
  std::vector<Device> devices;
  const std::vector<DeviceTrace> traces = FitTraces(snap);
  {
    ScopedTimer t("frag: prepare replays");
    for (const DeviceTrace& t : traces) {
      Device& d = devices.emplace_back();
      d.trace = &t;
      d.prepared = PrepareTrace(snap, t, EmptyCacheMode::kHeuristic, recorded,
                                /*capacity_known=*/true);
      d.same_as = ReplayStandIns(d.prepared, configs);
    }
  }
  std::vector<FitJob> jobs(devices.size());
  for (size_t i = 0; i < devices.size(); ++i) {
    jobs[i].prepared = &devices[i].prepared;
    jobs[i].run = FitRunOptions(snap, *devices[i].trace, devices[i].prepared, options.start);
    jobs[i].configs = &configs;
    jobs[i].same_as = &devices[i].same_as;
  }
  {
    ScopedTimer t(absl::StrCat("frag: ", configs.size(), " settings on ", jobs.size(),
                               " devices, each searched for the smallest memory it fits on"));
    SearchSmallestFits(jobs, {}, options.max_threads, "frag");
  }

  std::vector<FragFix> out;
  for (size_t i = 0; i < devices.size(); ++i) {
    const Device& d = devices[i];
    const FitJob& job = jobs[i];
    FragFix fix;
    fix.device = d.trace->device;
    fix.trace_events = static_cast<int64_t>(d.trace->size());
    fix.warm = job.run.warm;
    for (const TraceEvent& e : snap.EventsOf(*d.trace)) {
      fix.recorded_ooms += e.action == Action::kOom;
    }
    for (size_t k = 0; k < configs.size(); ++k) {
      FragSetting s;
      s.conf = configs[k].label;
      s.settings = sim::FormatAllocatorConf(configs[k].config);
      s.peak_reserved = job.unbounded[k].peak_reserved;
      s.fits_on = job.fits_on[k];
      if (d.same_as[k] != k) s.same_as = configs[d.same_as[k]].label;
      fix.settings.push_back(std::move(s));
    }
    fix.live_peak = job.unbounded[0].peak_requested;
    // The setting that fits on the least memory, the one rule of every fit answer.
    const int best = SmallestFitIndex(job.fits_on);
    fix.best = best > 0 ? best : -1;
    out.push_back(std::move(fix));
  }
  std::sort(out.begin(), out.end(),
            [](const FragFix& a, const FragFix& b) { return a.device < b.device; });
  return out;
}

}  // namespace memsnap::analysis
