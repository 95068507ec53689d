#include "memsnap/analysis/sites/blocks.h"

#include <algorithm>
#include <regex>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "memsnap/analysis/sites/group.h"

namespace memsnap::analysis {

absl::StatusOr<BlocksReport> SelectBlocks(const Snapshot& snap, const Timeline& timeline,
                                          const BlockQuery& query) {
  GroupOptions group;
  group.filter = query.filter;
  group.categories = query.categories;
  auto made = GroupContext::Create(snap, group);
  if (!made.ok()) return made.status();
  GroupContext& context = **made;
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
  rep.categories = query.categories;
  absl::flat_hash_map<uint32_t, int32_t> stack_index;  // StackId -> index into rep.stacks
  SiteLabels labels(context.attribution());
  std::vector<size_t> site_of_row;
  for (const DeviceTimeline& dt : timeline.devices) {
    // The device's annotate entries by address: (device-local event, metadata), in trace order.
    absl::flat_hash_map<uint64_t, std::vector<std::pair<uint32_t, StrId>>> annotated;
    for (uint32_t i = 0; i < dt.num_events; ++i) {
      const uint32_t g = dt.event_begin + i;
      if (snap.events[g].action != Action::kAnnotate) continue;
      const EventExtra* x = snap.ExtraOf(g);
      annotated[snap.events[g].addr].emplace_back(i, x == nullptr ? StrId() : x->user_metadata);
    }
    const TimelinePoint at = query.all ? TimelinePoint() : ResolveMoment(snap, dt, query.at);
    for (const BlockLifetime& lt : dt.blocks) {
      if (!query.all && !lt.LiveAt(at)) continue;
      if (lt.requested_size < query.min_size) continue;
      if (query.stream && lt.stream != *query.stream) continue;
      if (!matches(lt.stack)) continue;
      BlockRow& row = rep.rows.emplace_back();
      row.device = dt.device;
      row.lifetime = lt;
      row.alloc_time_us = dt.TimeOf(snap, lt.alloc_event);
      row.free_time_us = dt.TimeOf(snap, lt.free_completed_event);
      row.category = context.Categorize(dt, lt);
      if (const EventExtra* x = AllocExtraOf(snap, dt, lt)) {
        if (x->user_metadata.valid()) row.user_metadata = snap.strings.Get(x->user_metadata);
        if (x->compile_context.valid()) row.compile_context = snap.strings.Get(x->compile_context);
      }
      if (auto it = annotated.find(lt.address); it != annotated.end()) {
        const uint32_t from = lt.alloc_event.index().value_or(0);
        const uint32_t to = lt.free_requested_event.index().value_or(
            lt.free_completed_event.index().value_or(dt.num_events));
        for (const auto& [i, text] : it->second) {
          if (i <= from && lt.alloc_event.seen()) continue;
          if (i >= to) break;
          row.annotations.emplace_back(text.valid() ? snap.strings.Get(text) : "");
        }
      }
      if (lt.stack.valid() && !snap.stacks.Get(lt.stack).empty()) {
        auto [it, inserted] =
            stack_index.try_emplace(lt.stack.v, static_cast<int32_t>(rep.stacks.size()));
        if (inserted) {
          std::vector<std::string>& texts = rep.stacks.emplace_back();
          for (FrameId f : context.filter().Filtered(lt.stack)) {
            texts.push_back(FrameKeyText(snap, f, false));
          }
        }
        row.stack = it->second;
      }
      site_of_row.push_back(labels.Add(dt, lt, row.category.rule));
      rep.total_bytes += lt.requested_size;
    }
  }
  labels.Finish();
  for (size_t i = 0; i < rep.rows.size(); ++i) {
    BlockRow& row = rep.rows[i];
    const SiteInfo& site = labels.Site(site_of_row[i]);
    const SiteLabel& label = labels.Parts(site_of_row[i]);
    row.site = label.text;
    row.head = label.head;
    const size_t context = query.frames_shown > 0 ? query.frames_shown - 1 : 0;
    for (const CallerLine& c : CallerLines(site, label, context, nullptr)) {
      row.context.emplace_back(std::string(c.text), c.tells);
    }
  }
  auto first = [](const BlockLifetime& l) { return l.live_from(); };
  std::sort(rep.rows.begin(), rep.rows.end(), [&](const BlockRow& a, const BlockRow& b) {
    const BlockLifetime &x = a.lifetime, &y = b.lifetime;
    if (!query.all && x.requested_size != y.requested_size)
      return x.requested_size > y.requested_size;
    if (a.device != b.device) return a.device < b.device;
    if (query.all && first(x) != first(y)) return first(x) < first(y);
    if (x.address != y.address) return x.address < y.address;
    return x.version < y.version;
  });
  return rep;
}

}  // namespace memsnap::analysis
