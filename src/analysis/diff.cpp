// Diff of two snapshots: rows of both sides grouped with the same options, then merged by key text.
#include "memsnap/analysis/diff.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "memsnap/analysis/summary.h"

namespace memsnap::analysis {

namespace {

bool HasTrace(const Snapshot& s) { return !s.events.empty(); }

std::vector<std::pair<std::string, std::string>> SettingsList(const AllocatorSettings& s) {
  std::vector<std::pair<std::string, std::string>> out;
  if (!s.present) return out;
  out.emplace_back("PYTORCH_CUDA_ALLOC_CONF", absl::StrCat("\"", s.conf, "\""));
  out.emplace_back("max_split_size", absl::StrCat(s.max_split_size));
  out.emplace_back("garbage_collection_threshold", absl::StrFormat("%g", s.garbage_collection_threshold));
  out.emplace_back("expandable_segments", s.expandable_segments ? "true" : "false");
  out.emplace_back("release_lock_on_cudamalloc", s.release_lock_on_cudamalloc ? "true" : "false");
  out.emplace_back("pinned_use_cuda_host_register", s.pinned_use_cuda_host_register ? "true" : "false");
  out.emplace_back("pinned_num_register_threads", absl::StrCat(s.pinned_num_register_threads));
  std::string div;
  for (size_t i = 0; i < s.roundup_power2_divisions.size(); ++i) {
    absl::StrAppend(&div, i ? "," : "", s.roundup_power2_divisions[i]);
  }
  out.emplace_back("roundup_power2_divisions", div);
  return out;
}

void AddScope(std::map<std::tuple<int32_t, int, std::string>, ScopeDelta>& scopes, int32_t device,
              int kind, std::string name, const Totals& t, bool after) {
  ScopeDelta& s = scopes[{device, kind, name}];
  s.scope = std::move(name);
  s.device = device;
  auto set = [after](Delta& d, int64_t v) { (after ? d.after : d.before) = v; };
  set(s.reserved, t.reserved_bytes);
  set(s.allocated, t.allocated_bytes);
  set(s.requested, t.requested_bytes);
  set(s.segments, t.segments);
  set(s.blocks, t.blocks);
}

void AddScopes(std::map<std::tuple<int32_t, int, std::string>, ScopeDelta>& scopes,
               const SummaryReport& rep, bool after) {
  for (const DeviceSummary& d : rep.devices) {
    AddScope(scopes, d.device, 0, absl::StrCat("device ", d.device), d.totals, after);
    for (const PoolSummary& p : d.pools) {
      std::string pool = p.pool.is_default() ? "default"
                                             : absl::StrCat("(", p.pool.first, ",", p.pool.second, ")");
      AddScope(scopes, d.device, 1,
               absl::StrCat("device ", d.device, " pool ", pool, p.is_small ? " small" : " large"),
               p.totals, after);
    }
    for (const StreamSummary& s : d.streams) {
      AddScope(scopes, d.device, 2, absl::StrFormat("device %d stream 0x%x", d.device, s.stream),
               s.totals, after);
    }
  }
}

}  // namespace

std::string_view PresenceName(Presence p) {
  switch (p) {
    case Presence::kBoth: return "both";
    case Presence::kOnlyBefore: return "only_before";
    case Presence::kOnlyAfter: return "only_after";
  }
  return "?";
}

TimelineOptions DiffTimelineOptions(const DiffOptions& options) {
  TimelineOptions to;
  to.keep = KeepLifetimes::kLiveAt;
  to.moment = options.at;
  to.curve = false;
  return to;
}

absl::StatusOr<DiffReport> DiffSnapshots(const Snapshot& before, const Snapshot& after,
                                         const DiffOptions& options) {
  // The peak check comes before the timelines, as in the overload.
  if (options.at.kind == Moment::Kind::kPeak && (!HasTrace(before) || !HasTrace(after))) {
    return DiffSnapshots(before, after, Timeline{}, Timeline{}, options);
  }
  const TimelineOptions to = DiffTimelineOptions(options);
  absl::StatusOr<Timeline> b = ReconstructTimeline(before, to);
  if (!b.ok()) return b.status();
  return DiffSnapshots(before, after, b, ReconstructTimeline(after, to), options);
}

absl::StatusOr<DiffReport> DiffSnapshots(const Snapshot& before, const Snapshot& after,
                                         const absl::StatusOr<Timeline>& before_timeline,
                                         const absl::StatusOr<Timeline>& after_timeline,
                                         const DiffOptions& options) {
  if (options.at.kind == Moment::Kind::kPeak) {
    for (const Snapshot* s : {&before, &after}) {
      if (!HasTrace(*s)) {
        return absl::InvalidArgumentError(absl::StrCat(
            s->source.path, ": --at peak needs a trace (this file has no device_traces events); "
                            "use --at end"));
      }
    }
  }
  DiffReport rep;
  rep.options = options;
  rep.before_path = before.source.path;
  rep.after_path = after.source.path;

  const Timeline* tl[2];
  GroupReport groups[2];
  const Snapshot* snaps[2] = {&before, &after};
  const absl::StatusOr<Timeline>* timelines[2] = {&before_timeline, &after_timeline};
  for (int side = 0; side < 2; ++side) {
    if (!timelines[side]->ok()) return timelines[side]->status();
    tl[side] = &**timelines[side];
    auto g = GroupLive(*snaps[side], *tl[side], options.at, options.group);
    if (!g.ok()) return g.status();
    groups[side] = std::move(*g);
  }
  rep.live_bytes = {groups[0].total_bytes, groups[1].total_bytes};
  rep.live_count = {groups[0].total_count, groups[1].total_count};

  // Merge by key text (rows are unique per key on each side).
  std::map<std::string, SiteDelta> merged;
  for (int side = 0; side < 2; ++side) {
    for (const GroupRow& r : groups[side].rows) {
      auto [it, inserted] = merged.try_emplace(r.key);
      SiteDelta& s = it->second;
      if (inserted) {
        s.key = r.key;
        s.frames = r.frames;
        s.synthetic = r.synthetic;
        s.presence = side == 0 ? Presence::kOnlyBefore : Presence::kOnlyAfter;
      } else {
        s.presence = Presence::kBoth;
      }
      (side == 0 ? s.before_bytes : s.after_bytes) += r.bytes;
      (side == 0 ? s.before_count : s.after_count) += r.count;
    }
  }
  for (auto& [key, s] : merged) {
    if (s.presence == Presence::kOnlyBefore) ++rep.sites_only_before;
    if (s.presence == Presence::kOnlyAfter) ++rep.sites_only_after;
    int64_t d = s.delta_bytes();
    if (d == 0 && s.delta_count() == 0) ++rep.sites_unchanged;
    bool shown = d != 0 && (d >= options.min_delta || -d >= options.min_delta);
    (shown ? rep.sites : rep.other_sites).push_back(std::move(s));
  }
  std::sort(rep.sites.begin(), rep.sites.end(), [](const SiteDelta& a, const SiteDelta& b) {
    int64_t x = a.delta_bytes(), y = b.delta_bytes();
    int64_t ax = x < 0 ? -x : x, ay = y < 0 ? -y : y;
    if (ax != ay) return ax > ay;
    if (x != y) return x > y;  // growth before shrinkage of the same size
    return a.key < b.key;
  });

  std::map<std::tuple<int32_t, int, std::string>, ScopeDelta> scopes;
  AddScopes(scopes, Summarize(before), false);
  AddScopes(scopes, Summarize(after), true);
  for (auto& [k, s] : scopes) rep.scopes.push_back(std::move(s));
  std::stable_sort(rep.scopes.begin(), rep.scopes.end(), [](const ScopeDelta& a, const ScopeDelta& b) {
    return a.device < b.device;
  });

  std::map<int32_t, DeviceDelta> devs;
  for (int side = 0; side < 2; ++side) {
    for (const DeviceTimeline& dt : tl[side]->devices) {
      DeviceDelta& d = devs[dt.device];
      d.device = dt.device;
      (side == 0 ? d.peak.before : d.peak.after) = dt.peak_requested;
    }
    for (const DeviceMoment& m : groups[side].devices) {
      (side == 0 ? devs[m.device].live.before : devs[m.device].live.after) = m.live_bytes;
    }
  }
  for (auto& [dev, d] : devs) {
    const DeviceTimeline* b = tl[0]->Find(dev);
    const DeviceTimeline* a = tl[1]->Find(dev);
    d.has_peak = b && a && b->num_events > 0 && a->num_events > 0;
    rep.devices.push_back(d);
  }

  auto sb = SettingsList(before.settings), sa = SettingsList(after.settings);
  if (before.settings.present != after.settings.present) {
    rep.settings.push_back({"allocator_settings", before.settings.present ? "present" : "absent",
                            after.settings.present ? "present" : "absent"});
  } else {
    for (size_t i = 0; i < sb.size(); ++i) {
      if (sb[i].second != sa[i].second) rep.settings.push_back({sb[i].first, sb[i].second, sa[i].second});
    }
  }
  return rep;
}

}  // namespace memsnap::analysis
