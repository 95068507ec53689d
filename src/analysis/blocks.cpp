#include "memsnap/analysis/blocks.h"

#include <algorithm>
#include <regex>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "memsnap/analysis/group.h"

namespace memsnap::analysis {

absl::StatusOr<BlocksReport> SelectBlocks(const Snapshot& snap, const Timeline& timeline,
                                          const BlockQuery& query) {
  auto filter = FrameFilter::Create(snap, query.filter);
  if (!filter.ok()) return filter.status();
  std::optional<std::regex> stack_re;
  if (!query.stack_regex.empty()) {
    try {
      stack_re.emplace(query.stack_regex, std::regex::ECMAScript | std::regex::optimize);
    } catch (const std::regex_error& e) {
      return absl::InvalidArgumentError(
          absl::StrCat("--stack ", query.stack_regex, ": invalid regex: ", e.what()));
    }
  }
  absl::flat_hash_map<uint32_t, bool> stack_match;  // StackId -> matches --stack
  auto matches = [&](StackId s) {
    if (!stack_re) return true;
    if (!s.valid()) return false;
    auto [it, inserted] = stack_match.emplace(s.v, false);
    if (inserted) {
      for (FrameId f : snap.stacks.Get(s)) {
        if (std::regex_search(snap.FrameText(f), *stack_re)) {
          it->second = true;
          break;
        }
      }
    }
    return it->second;
  };

  BlocksReport rep;
  for (const DeviceTimeline& dt : timeline.devices) {
    int64_t e = query.all ? 0 : ResolveMoment(snap, dt, query.at);
    for (const BlockLifetime& lt : dt.blocks) {
      if (!query.all && !lt.LiveAfter(e)) continue;
      if (lt.requested_size < query.min_size) continue;
      if (query.stream && lt.stream != *query.stream) continue;
      if (!matches(lt.stack)) continue;
      BlockRow& row = rep.rows.emplace_back();
      row.device = dt.device;
      row.lifetime = lt;
      if (lt.alloc_event != kNoEvent) row.alloc_time_us = dt.TimeOf(snap, lt.alloc_event);
      if (lt.free_completed_event != kNoEvent) row.free_time_us = dt.TimeOf(snap, lt.free_completed_event);
      const std::vector<FrameId>& fr = filter->Filtered(lt.stack);
      for (size_t k = 0; k < std::min(fr.size(), query.frames_shown); ++k) {
        row.frames.push_back(FrameKeyText(snap, fr[k], false));
      }
      rep.total_bytes += lt.requested_size;
    }
  }
  auto first = [](const BlockLifetime& l) {
    return l.alloc_event != kNoEvent ? static_cast<int64_t>(l.alloc_event) : -1;
  };
  std::sort(rep.rows.begin(), rep.rows.end(), [&](const BlockRow& a, const BlockRow& b) {
    const BlockLifetime &x = a.lifetime, &y = b.lifetime;
    if (!query.all && x.requested_size != y.requested_size) return x.requested_size > y.requested_size;
    if (a.device != b.device) return a.device < b.device;
    if (query.all && first(x) != first(y)) return first(x) < first(y);
    if (x.address != y.address) return x.address < y.address;
    return x.version < y.version;
  });
  return rep;
}

}  // namespace memsnap::analysis
