#include "memsnap/analysis/sites/stale_gradients.h"

namespace memsnap::analysis {

std::optional<StaleGradients> FindStaleGradients(GroupContext& context, const DeviceTimeline& dt,
                                                 TimelinePoint moment) {
  const std::optional<uint32_t> at = moment.event();
  if (!at) return std::nullopt;
  // A categorizer of its own: the phase runs it reads are the device's, whoever asks.
  LifetimeCategorizer phases(context.attribution(), dt);
  if (phases.PhaseAtEvent(*at) != StepPhase::kForward) return std::nullopt;
  uint32_t start = *at;
  while (start > 0 && phases.PhaseAtEvent(start - 1) == StepPhase::kForward) --start;
  const Snapshot& snap = context.snapshot();
  const size_t num_events = dt.num_events;
  StaleGradients out;
  out.device = dt.device;
  out.forward_start = start;
  for (uint32_t i : LiveBlocksAt(dt, moment)) {
    const BlockLifetime& lt = dt.blocks[i];
    if (lt.alloc_event.seen() && *lt.alloc_event.index() >= start) continue;
    if (!lt.free_requested_event.seen() && !lt.free_completed_event.seen()) continue;
    if (context.Categorize(dt, lt).category != Category::kGradient) continue;
    out.lifetimes.push_back(i);
    out.bytes += lt.requested_size;
    ++out.blocks;
    const LocalEvent free =
        lt.free_requested_event.seen() ? lt.free_requested_event : lt.free_completed_event;
    const uint32_t f = *free.index();
    if (f < num_events &&
        context.attribution().Site(snap.events[dt.event_begin + f].stack).zero_grad) {
      ++out.freed_by_zero_grad;
    }
  }
  if (out.blocks == 0) return std::nullopt;
  return out;
}

}  // namespace memsnap::analysis
