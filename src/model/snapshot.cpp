#include "memsnap/model/snapshot.h"

#include <algorithm>
#include <array>
#include <set>
#include <tuple>

#include "absl/hash/hash.h"
#include "absl/strings/str_cat.h"
#include "memsnap/util/format.h"
#include "memsnap/util/strings.h"

namespace memsnap {

namespace {
constexpr std::array<std::string_view, kNumActions> kActionNames = {
    "alloc",        "free_requested", "free_completed", "segment_alloc",
    "segment_free", "segment_map",    "segment_unmap",  "snapshot",
    "oom",          "annotate",       "unknown"};
}  // namespace

std::string_view ActionName(Action action) { return kActionNames[static_cast<int>(action)]; }

Action ParseAction(std::string_view name) {
  for (int i = 0; i + 1 < kNumActions; ++i) {
    if (kActionNames[i] == name) return static_cast<Action>(i);
  }
  return Action::kUnknown;
}

std::string_view BlockStateName(BlockState state) {
  switch (state) {
    case BlockState::kActiveAllocated:
      return "active_allocated";
    case BlockState::kActivePendingFree:
      return "active_pending_free";
    case BlockState::kInactive:
      return "inactive";
  }
  return "inactive";
}

FrameId FrameTable::Intern(const Frame& frame) {
  auto [it, inserted] = index_.try_emplace(frame, static_cast<uint32_t>(frames_.size()));
  if (inserted) frames_.push_back(frame);
  return FrameId(it->second);
}

StackTable::StackTable() {
  offsets_.push_back(0);
  offsets_.push_back(0);  // StackId 0: the empty stack
  index_[absl::HashOf(std::vector<uint32_t>{})].push_back(0);
}

StackId StackTable::Intern(std::span<const FrameId> frames) {
  // Hash the raw frame ids; FrameId is a 32-bit value so this hashes the sequence.
  uint64_t h = absl::HashOf(std::vector<uint32_t>{});
  if (!frames.empty()) {
    h = absl::HashOf(absl::Span<const uint32_t>(reinterpret_cast<const uint32_t*>(frames.data()),
                                                frames.size()));
  }
  std::vector<uint32_t>& bucket = index_[h];
  for (uint32_t id : bucket) {
    auto existing = Get(StackId(id));
    if (std::equal(existing.begin(), existing.end(), frames.begin(), frames.end())) {
      return StackId(id);
    }
  }
  uint32_t id = static_cast<uint32_t>(offsets_.size() - 1);
  frames_.insert(frames_.end(), frames.begin(), frames.end());
  offsets_.push_back(static_cast<uint32_t>(frames_.size()));
  bucket.push_back(id);
  return StackId(id);
}

StreamId StreamTable::InternSlow(int64_t value) {
  if (values_.size() > kScanned) {
    if (auto it = index_.find(value); it != index_.end()) return StreamId(it->second);
  }
  if (values_.size() >= kMaxStreams) return StreamId::Invalid();
  const auto id = static_cast<uint16_t>(values_.size());
  values_.push_back(value);
  if (id >= kScanned) index_.emplace(value, id);
  return StreamId(id);
}

std::vector<int32_t> Snapshot::Devices() const {
  std::set<int32_t> devices;
  for (const Segment& s : segments) devices.insert(s.device);
  for (const DeviceTrace& t : traces) {
    if (t.size() > 0) devices.insert(t.device);
  }
  return {devices.begin(), devices.end()};
}

const DeviceTrace* Snapshot::TraceOf(int32_t device) const {
  // The readers index `traces` by device ordinal: a pass over 100,000 devices asks 100,000 times.
  if (device >= 0 && static_cast<size_t>(device) < traces.size() &&
      traces[static_cast<size_t>(device)].device == device) {
    return &traces[static_cast<size_t>(device)];
  }
  for (const DeviceTrace& t : traces) {
    if (t.device == device) return &t;
  }
  return nullptr;
}

SegmentsByDevice::SegmentsByDevice(const Snapshot& snap) : order_(snap.segments.size()) {
  for (uint32_t i = 0; i < order_.size(); ++i) order_[i] = i;
  std::stable_sort(order_.begin(), order_.end(), [&](uint32_t a, uint32_t b) {
    return snap.segments[a].device < snap.segments[b].device;
  });
  for (uint32_t k = 0; k < order_.size(); ++k) {
    const int32_t device = snap.segments[order_[k]].device;
    if (devices_.empty() || devices_.back().first != device) devices_.emplace_back(device, k);
  }
}

std::span<const uint32_t> SegmentsByDevice::Of(int32_t device) const {
  auto it = std::lower_bound(devices_.begin(), devices_.end(), device,
                             [](const auto& d, int32_t want) { return d.first < want; });
  if (it == devices_.end() || it->first != device) return {};
  const uint32_t end =
      it + 1 == devices_.end() ? static_cast<uint32_t>(order_.size()) : (it + 1)->second;
  return std::span<const uint32_t>(order_).subspan(it->second, end - it->second);
}

const EventExtra* Snapshot::ExtraOf(uint32_t event) const {
  auto it = std::lower_bound(event_extras.begin(), event_extras.end(), event,
                             [](const EventExtra& x, uint32_t e) { return x.event < e; });
  return it != event_extras.end() && it->event == event ? &*it : nullptr;
}

std::string Snapshot::FrameText(FrameId id) const {
  if (!id.valid()) return "";
  const Frame& f = frames.Get(id);
  return absl::StrCat(Sv(strings.Get(f.filename)), ":", f.line == kUnknownLine ? 0 : f.line, ":",
                      Sv(strings.Get(f.name)));
}

void Normalize(Snapshot& snap) {
  // Sizes and addresses first: everything below relies on their bounds (model/limits.h).
  CheckSegmentsAndBlocks(snap);
  for (uint32_t si = 0; si < snap.segments.size(); ++si) {
    Segment& seg = snap.segments[si];
    uint64_t cursor = seg.address;
    // Unsigned: thousands of 1 TiB blocks must not overflow a signed sum.
    uint64_t covered = 0;
    bool contiguous = true;
    for (uint32_t bi = seg.first_block; bi < seg.first_block + seg.num_blocks; ++bi) {
      Block& b = snap.blocks[bi];
      b.segment = SegmentId(si);
      if (b.address == kUnknownAddress) {
        b.address = cursor;
        snap.source.has_block_addresses = false;
      }
      if (b.address != cursor) contiguous = false;
      cursor = b.address + static_cast<uint64_t>(b.size);
      covered += static_cast<uint64_t>(b.size);
      // Requested size is only meaningful on active blocks (docs/snapshot-format.md §2.3): never
      // trust stale ones.
      if (b.state == BlockState::kInactive) b.requested_size = 0;
      if (b.is_active() && b.requested_size <= 0) b.requested_size = b.size;
    }
    if (seg.num_blocks > 0 && (!contiguous || covered != static_cast<uint64_t>(seg.total_size))) {
      snap.diagnostics.Warn(absl::StrCat("segment ", si, " at ", FormatAddress(seg.address),
                                         " (device ", seg.device, "): blocks cover ", covered,
                                         " bytes of ", seg.total_size,
                                         contiguous ? "" : " and are not contiguous"));
    }
  }
  // Segments of one device must not overlap (a duplicated or corrupted segment list).
  std::vector<uint32_t> order(snap.segments.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  auto key = [&](uint32_t i) {
    return std::tuple(snap.segments[i].device, snap.segments[i].address, i);
  };
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return key(a) < key(b); });
  for (size_t k = 1; k < order.size(); ++k) {
    const Segment& prev = snap.segments[order[k - 1]];
    const Segment& cur = snap.segments[order[k]];
    if (prev.device != cur.device || prev.total_size <= 0) continue;
    uint64_t prev_end = prev.address + static_cast<uint64_t>(prev.total_size);
    if (cur.address < prev_end && prev_end > prev.address) {
      snap.diagnostics.Warn(absl::StrCat("segments ", order[k - 1], " and ", order[k], " (device ",
                                         cur.device, ") overlap at ", FormatAddress(cur.address)));
    }
  }
}

}  // namespace memsnap
