// The one search behind every "fits on" and "needs" (include/memsnap/analysis/allocator/fit.h):
// the smallest device memory each (device, setting) replays its whole trace on, searched for all
// of them in parallel, with the work that can be shared shared (docs/simulator.md, "The search for
// the smallest memory that fits").
#include "memsnap/analysis/allocator/fit.h"

#include <algorithm>
#include <exception>
#include <future>

#include "analysis/allocator/replay_internal.h"
#include "memsnap/util/parallel.h"
#include "memsnap/util/timer.h"

namespace memsnap::analysis {

std::string_view FitStartName(FitStart start) {
  return start == FitStart::kCold ? "cold" : "recorded";
}

std::optional<FitStart> ParseFitStart(std::string_view text) {
  if (text == "recorded" || text == "warm") return FitStart::kRecorded;
  if (text == "cold") return FitStart::kCold;
  return std::nullopt;
}

int64_t FitUnit(const sim::AllocatorConfig& config) {
  constexpr int64_t kMiB = int64_t{1} << 20;
  return config.memory_fraction ? kMiB : 2 * kMiB;
}

int SmallestFitIndex(std::span<const int64_t> fits_on) {
  int best = -1;
  for (size_t k = 0; k < fits_on.size(); ++k) {
    const int64_t need = fits_on[k];
    if (need <= 0) continue;
    if (best < 0) {
      best = static_cast<int>(k);
      continue;
    }
    const auto current = static_cast<double>(fits_on[static_cast<size_t>(best)]);
    if (static_cast<double>(need) <= current * (1.0 - kFitMinGain)) best = static_cast<int>(k);
  }
  return best;
}

RunOptions FitRunOptions(const Snapshot& snap, const DeviceTrace& trace,
                         const PreparedTrace& prepared, FitStart start) {
  RunOptions ro;
  ro.events = snap.EventsOf(trace);
  ro.warm = StartsWarm(prepared, start);
  return ro;
}

bool StartsWarm(const PreparedTrace& prepared, FitStart start) {
  return start == FitStart::kRecorded && prepared.warm_ok && !prepared.warm.empty();
}

void SearchSmallestFits(std::span<FitJob> jobs, std::span<const std::function<void()>> beside,
                        int max_threads, std::string_view who) {
  struct Search {
    size_t job = 0;
    size_t config = 0;
  };
  std::vector<Search> searches;
  for (size_t d = 0; d < jobs.size(); ++d) {
    FitJob& job = jobs[d];
    job.fits_on.assign(job.configs->size(), 0);
    job.unbounded.assign(job.configs->size(), ConfigResult{});
    for (size_t k = 0; k < job.configs->size(); ++k) {
      if ((*job.same_as)[k] == k) searches.push_back({d, k});
    }
  }
  auto config_of = [&](const Search& s) -> const ReplayConfig& {
    return (*jobs[s.job].configs)[s.config];
  };
  // A setting that differs from another searched one of its device (without a memory fraction)
  // only in its memory fraction and garbage collection is searched from that one's unbounded
  // replay, once it is known that the replay never reached the fraction's limits
  // (docs/simulator.md, "One unbounded replay for two settings"): `twin[i]`, the search whose
  // replay it waits for.
  auto strip = [](sim::AllocatorConfig c) {
    c.memory_fraction.reset();
    c.garbage_collection_threshold = 0.0;
    return c;
  };
  std::vector<size_t> twin(searches.size());
  std::vector<bool> shares(searches.size(), false);
  for (size_t i = 0; i < searches.size(); ++i) {
    twin[i] = i;
    const sim::AllocatorConfig& c = config_of(searches[i]).config;
    for (size_t j = 0; j < i && twin[i] == i; ++j) {
      const sim::AllocatorConfig& o = config_of(searches[j]).config;
      if (searches[j].job == searches[i].job && c.memory_fraction && !o.memory_fraction &&
          strip(o) == strip(c)) {
        twin[i] = j;
        shares[j] = true;
      }
    }
  }
  std::vector<RunOutput> shared(searches.size());
  std::vector<std::promise<void>> replayed(searches.size());
  std::vector<std::shared_future<void>> replayed_done;
  for (auto& p : replayed) replayed_done.push_back(p.get_future().share());
  // Jobs in an order that keeps every core busy to the end: the searches whose unbounded replay
  // another waits for (they finish it first), then the longest chains of replays: the tasks
  // beside (the caller's, about eight replays from the start each), a memory fraction's search
  // (about six that fit), expandable segments (replayed from the start), the rest (most of their
  // replays fail within the first iteration).
  auto rank = [&](size_t i) {
    const sim::AllocatorConfig& c = config_of(searches[i]).config;
    return shares[i] ? 0 : c.memory_fraction ? 2 : c.expandable_segments ? 3 : 4;
  };
  std::vector<std::pair<int, size_t>> order;  // (rank, task); a task >= searches.size(): beside
  for (size_t i = 0; i < searches.size(); ++i) order.emplace_back(rank(i), i);
  for (size_t b = 0; b < beside.size(); ++b) order.emplace_back(1, searches.size() + b);
  std::stable_sort(order.begin(), order.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<FitSearchStats> stats(searches.size());
  ParallelFor(
      order.size(),
      [&](size_t n) {
        const size_t i = order[n].second;
        if (i >= searches.size()) {
          beside[i - searches.size()]();
          return;
        }
        const Search& s = searches[i];
        FitJob& job = jobs[s.job];
        const ReplayConfig& config = config_of(s);
        RunOutput own;
        const RunOutput* given = nullptr;
        if (twin[i] != i) {
          replayed_done[twin[i]].get();  // ranked before this one: taken, running or done
          if (UnboundedReplayStandsFor(config_of(searches[twin[i]]).config, shared[twin[i]],
                                       config.config)) {
            given = &shared[twin[i]];
          }
        } else if (shares[i]) {
          try {
            shared[i] = UnboundedReplay(*job.prepared, config, job.run, &stats[i]);
          } catch (...) {
            replayed[i].set_exception(std::current_exception());
            throw;
          }
          replayed[i].set_value();
          given = &shared[i];
        }
        if (given == nullptr) {
          own = UnboundedReplay(*job.prepared, config, job.run, &stats[i]);
          given = &own;
        }
        job.unbounded[s.config] = given->result;
        job.fits_on[s.config] = SmallestFittingCapacity(*job.prepared, config, job.run,
                                                        /*exact=*/s.config == 0, given, &stats[i]);
      },
      static_cast<size_t>(std::max(0, max_threads)));
  // Stand-ins take the answer of the setting whose replay stands for them.
  for (FitJob& job : jobs) {
    for (size_t k = 0; k < job.configs->size(); ++k) {
      const size_t j = (*job.same_as)[k];
      if (j == k) continue;
      job.fits_on[k] = job.fits_on[j];
      job.unbounded[k] = job.unbounded[j];
    }
  }
  if (!searches.empty()) ScopedTimer note(FitSearchNote(who, stats));  // a line of --timings
}

}  // namespace memsnap::analysis
