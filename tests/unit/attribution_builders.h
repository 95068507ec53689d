// A tiny snapshot builder for attribution tests: frames written as text, stacks innermost first,
// one device's trace, and optional blocks older than the trace.
#pragma once

#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "memsnap/model/snapshot.h"

namespace memsnap::testing {

/// One frame: function name, file name, line (0 for native frames).
struct F {
  std::string name;
  std::string file = "??";
  int64_t line = 0;
};

/// The caching allocator's malloc, as PyTorch 2.x writes the frame with C++ context.
inline const F kMalloc{
    "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(signed char, "
    "unsigned long, CUstream_st*)",
    "CUDACachingAllocator.cpp"};

/// An ATen operator's native frame: at::_ops::NAME::call.
inline F Op(const std::string& name) {
  return F{"at::_ops::" + name + "::call(at::Tensor const&)"};
}
/// A Python frame: NAME at FILE:LINE.
inline F Py(const std::string& file, int64_t line, const std::string& name) {
  return F{name, file, line};
}

class MiniTrace {
 public:
  /// Interns a stack given innermost first.
  StackId Stack(const std::vector<F>& frames) {
    std::vector<FrameId> ids;
    for (const F& f : frames) {
      ids.push_back(snap_.frames.Intern(
          Frame{snap_.strings.Intern(f.name), snap_.strings.Intern(f.file), f.line}));
    }
    return snap_.stacks.Intern(ids);
  }
  /// Appends an event (addr as given; time = event index).
  uint32_t Event(Action action, uint64_t addr, int64_t size, StackId stack = StackId()) {
    TraceEvent e;
    e.action = action;
    e.addr = addr;
    e.size = size;
    e.stack = stack;
    e.time_us = static_cast<int64_t>(snap_.events.size());
    snap_.events.push_back(e);
    return static_cast<uint32_t>(snap_.events.size() - 1);
  }
  uint32_t Alloc(uint64_t addr, int64_t size, StackId stack) {
    return Event(Action::kAlloc, addr, size, stack);
  }
  /// Gives event `event` the `user_metadata` `text` (events are added in order, so the extras
  /// stay sorted).
  void Metadata(uint32_t event, const std::string& text) {
    EventExtra x;
    x.event = event;
    x.user_metadata = snap_.strings.Intern(text);
    snap_.event_extras.push_back(x);
  }
  void Free(uint64_t addr, int64_t size, StackId stack = StackId()) {
    Event(Action::kFreeRequested, addr, size, stack);
    Event(Action::kFreeCompleted, addr, size, stack);
  }
  /// A block live before the trace and at its end (a ghost), in its own segment.
  void Ghost(uint64_t addr, int64_t size, StackId stack = StackId()) {
    Segment seg;
    seg.address = addr;
    seg.total_size = size;
    seg.allocated_size = seg.active_size = seg.requested_size = size;
    seg.first_block = static_cast<uint32_t>(snap_.blocks.size());
    seg.num_blocks = 1;
    snap_.segments.push_back(seg);
    Block b;
    b.address = addr;
    b.size = b.requested_size = size;
    b.state = BlockState::kActiveAllocated;
    b.stack = stack;
    b.segment = SegmentId(static_cast<uint32_t>(snap_.segments.size() - 1));
    snap_.blocks.push_back(b);
  }
  Snapshot Finish() {
    snap_.traces.push_back({0, 0, static_cast<uint32_t>(snap_.events.size())});
    snap_.source.path = "mini.pickle";
    Normalize(snap_);
    return std::move(snap_);
  }

 private:
  Snapshot snap_;
};

}  // namespace memsnap::testing
