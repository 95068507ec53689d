// The bounds of model/limits.h: the messages of a LimitReport and the checks of segments and
// blocks that Normalize() runs (docs/reader.md, "Limits").
#include "memsnap/model/limits.h"

#include "absl/strings/str_cat.h"
#include "memsnap/model/snapshot.h"
#include "memsnap/util/strings.h"

namespace memsnap {

namespace {

struct LimitSpec {
  std::string_view what;   // the value, as a user knows it
  std::string_view bound;  // what PyTorch can write
  std::string_view fix;    // what memsnap did with it
};

constexpr std::string_view kClamped = "clamped into that range";
constexpr LimitSpec kSpecs[kNumLimited] = {
    {"trace entry size", "0 to 1 TiB", kClamped},
    {"trace entry address", "below 2^57", "clamped to 2^57-1"},
    {"trace entry device_free", "0 to 1 TiB", kClamped},
    {"trace entry time_us", "0 to 2^62 microseconds", "dropped (the entry has no time)"},
    {"annotation time_us", "0 to 2^62 microseconds", "dropped (the annotation has no time)"},
    {"segment address", "below 2^57", "moved to 2^57 - 2 TiB"},
    {"segment total_size", "0 to 1 TiB", kClamped},
    {"segment allocated_size", "0 to 1 TiB", kClamped},
    {"segment active_size", "0 to 1 TiB", kClamped},
    {"segment requested_size", "0 to 1 TiB", kClamped},
    {"block address", "below 2^57",
     "dropped (recomputed from the segment's address and the sizes of the blocks before it)"},
    {"block size", "0 to 1 TiB", kClamped},
    {"requested_size of an active block", "1 to the block's size",
     "dropped (the block's size stands in)"},
    {"max_split_size", "-1 or 0 to 1 TiB", "read as unlimited (-1)"},
    {"roundup_power2_divisions count", "0 to 2^30", kClamped},
};

}  // namespace

bool LimitReport::Add(Limited kind, uint64_t bits, bool is_unsigned, std::string_view path) {
  Entry& e = notes_[Index(kind)];
  if (e.count++ > 0) return false;
  e.value = is_unsigned ? absl::StrCat(bits) : absl::StrCat(static_cast<int64_t>(bits));
  e.path = std::string(path);
  return true;
}

bool LimitReport::empty() const {
  for (const Entry& e : notes_) {
    if (e.count > 0) return false;
  }
  return true;
}

void LimitReport::AddWarnings(Diagnostics& diagnostics) const {
  for (int k = 0; k < kNumLimited; ++k) {
    const Entry& e = notes_[k];
    if (e.count == 0) continue;
    const LimitSpec& spec = kSpecs[k];
    std::string w =
        absl::StrCat(e.path.empty() ? std::string("?") : e.path, ": ", e.value, " is not a ",
                     Sv(spec.what), " PyTorch can write (", Sv(spec.bound), "); ", Sv(spec.fix));
    if (e.count > 1) absl::StrAppend(&w, "; ", e.count, " ", Sv(spec.what), "s were out of range");
    diagnostics.Warn(std::move(w));
  }
}

void CheckSegmentsAndBlocks(Snapshot& snap) {
  LimitReport report;
  // Key paths as in the file: a bare segment list (1.13) is the root itself.
  const std::string_view root = snap.source.bare_segment_list ? "" : "/segments";
  auto size = [&](Limited kind, int64_t& v, auto&& path) {
    const int64_t read = v;
    if (FixSize(v)) report.Note(kind, read, report.Seen(kind) ? std::string() : path());
  };
  for (uint32_t si = 0; si < snap.segments.size(); ++si) {
    Segment& seg = snap.segments[si];
    auto seg_path = [&](std::string_view key) {
      return [&, key] { return absl::StrCat(Sv(root), "/", si, "/", Sv(key)); };
    };
    if (uint64_t a = seg.address; !AddressInRange(a)) {
      report.Note(Limited::kSegmentAddress, a,
                  report.Seen(Limited::kSegmentAddress) ? std::string() : seg_path("address")());
      seg.address = kClampedSegmentAddress;
    }
    size(Limited::kSegmentTotalSize, seg.total_size, seg_path("total_size"));
    size(Limited::kSegmentAllocatedSize, seg.allocated_size, seg_path("allocated_size"));
    size(Limited::kSegmentActiveSize, seg.active_size, seg_path("active_size"));
    size(Limited::kSegmentRequestedSize, seg.requested_size, seg_path("requested_size"));
    for (uint32_t k = 0; k < seg.num_blocks; ++k) {
      Block& b = snap.blocks[seg.first_block + k];
      auto block_path = [&](std::string_view key) {
        return [&, key] { return absl::StrCat(Sv(root), "/", si, "/blocks/", k, "/", Sv(key)); };
      };
      if (b.address != kUnknownAddress && !AddressInRange(b.address)) {
        report.Note(Limited::kBlockAddress, b.address,
                    report.Seen(Limited::kBlockAddress) ? std::string() : block_path("address")());
        b.address = kUnknownAddress;  // Normalize() lays it out from the segment
      }
      size(Limited::kBlockSize, b.size, block_path("size"));
      // Only an active block's request means anything (an inactive one's is a stale leftover).
      if (b.is_active() && b.requested_size != kNoRequestedSize &&
          (b.requested_size <= 0 || b.requested_size > b.size)) {
        report.Note(Limited::kBlockRequestedSize, b.requested_size,
                    report.Seen(Limited::kBlockRequestedSize) ? std::string()
                                                              : block_path("requested_size")());
        b.requested_size = kNoRequestedSize;
      }
    }
  }
  report.AddWarnings(snap.diagnostics);
}

}  // namespace memsnap
