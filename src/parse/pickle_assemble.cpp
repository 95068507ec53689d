// The final assembly of the pickle decoder's records into a Snapshot (pickle_decoder.h), and the
// streaming of decoded trace entries to an EventObserver.
#include "absl/strings/str_cat.h"
#include "memsnap/util/format.h"
#include "memsnap/util/status_macros.h"
#include "parse/pickle_decoder.h"

namespace memsnap::parse::pickle {

absl::Status Decoder::FinishSegments(size_t at, const Value& list) {
  ASSIGN_OR_RETURN(auto range, AsRecordRange(at, "'segments'", Rec::kSegment, list));
  snap_.segments.reserve(range.second);
  for (uint32_t k = 0; k < range.second; ++k) {
    SegmentRec& r = segments_[range.first + k];
    Segment s = r.segment;
    ASSIGN_OR_RETURN(s.first_block, Narrow(at, snap_.blocks.size(), "block records"));
    s.num_blocks = r.blocks_count;
    RETURN_IF_ERROR(Charge(at, r.blocks_count));
    for (uint32_t b = 0; b < r.blocks_count; ++b) {
      const BlockRec& rec = blocks_[r.blocks_begin + b];
      if (!rec.has_state) {
        return Error(at, absl::StrCat("segments/", k, "/blocks/", b, ": block has no 'state'"));
      }
      snap_.blocks.push_back(FinishBlock(rec, snap_.source));
    }
    snap_.segments.push_back(s);
  }
  return absl::OkStatus();
}

absl::Status Decoder::FinishTraces(size_t at, const Value& list) {
  if (list.tag != Tag::kList) {
    return Error(at, absl::StrCat("'device_traces': expected a list, got ", TagName(list.tag)));
  }
  const ListObj& outer = lists_[list.ref];
  std::vector<Value> inner(scratch_.begin() + outer.begin,
                           scratch_.begin() + outer.begin + outer.count);
  std::vector<std::pair<uint32_t, uint32_t>> ranges;
  for (size_t d = 0; d < inner.size(); ++d) {
    std::string what = absl::StrCat("device_traces/", d);
    ASSIGN_OR_RETURN(auto range, AsRecordRange(at, what.c_str(), Rec::kEvent, inner[d]));
    ranges.push_back(range);
  }
  trace_ranges_ = ranges;
  // Fast path: the device lists tile the event vector in order (what every writer produces).
  // Device ordinals are 32-bit in the model; a list of more devices is refused, never wrapped.
  RETURN_IF_ERROR(Narrow<int32_t>(at, ranges.size(), "device traces").status());
  // Sums in 64 bits: two ranges of 32-bit counts may add up past 32 bits.
  bool tiled = true;
  uint64_t cursor = 0;
  for (const auto& [begin, count] : ranges) {
    if (count == 0) continue;
    if (begin != cursor) tiled = false;
    cursor = uint64_t{begin} + count;
  }
  if (cursor != snap_.events.size()) tiled = false;
  if (tiled) {
    // Every range ends at or before events.size(), which fits 32 bits (a record index).
    RETURN_IF_ERROR(Narrow(at, snap_.events.size(), "trace entries").status());
    uint32_t end = 0;
    for (size_t d = 0; d < ranges.size(); ++d) {
      uint32_t count = ranges[d].second;
      uint32_t begin = count == 0 ? end : ranges[d].first;
      end = begin + count;
      snap_.traces.push_back(DeviceTrace{static_cast<int32_t>(d), begin, end});
    }
    snap_.event_extras = std::move(extras_);
    return absl::OkStatus();
  }
  // Slow path: rebuild the event vector in device order.
  InvalidateEvents();
  std::vector<TraceEvent> events;
  std::vector<EventExtra> extras;
  for (size_t d = 0; d < ranges.size(); ++d) {
    RETURN_IF_ERROR(Charge(at, ranges[d].second));
    // The rebuilt vector may hold a range twice: its size is checked, not assumed.
    ASSIGN_OR_RETURN(uint32_t begin, Narrow(at, events.size(), "trace entries"));
    ASSIGN_OR_RETURN(const uint32_t end,
                     Narrow(at, uint64_t{begin} + ranges[d].second, "trace entries"));
    for (uint32_t k = 0; k < ranges[d].second; ++k) {
      uint32_t src = ranges[d].first + k;
      events.push_back(snap_.events[src]);
      if (const EventExtra* x = FindExtra(src)) {
        EventExtra copy = *x;
        copy.event = begin + k;
        extras.push_back(copy);
      }
    }
    snap_.traces.push_back(DeviceTrace{static_cast<int32_t>(d), begin, end});
  }
  snap_.events = std::move(events);
  snap_.event_extras = std::move(extras);
  return absl::OkStatus();
}

void Decoder::PublishEvents() {
  const size_t n = snap_.events.size();
  if (n == snap_.events.capacity()) {
    observer_->Release();  // the next append moves the vector
    next_publish_ = n + 1;
    return;
  }
  // The newest entry may still get its items (CreateRecord comes before SetItems).
  published_ = n - 1;
  observer_->Publish(snap_.events.data(), published_, snap_.streams.values());
  next_publish_ = std::min(n + kPublishEvery, snap_.events.capacity());
}

std::string Decoder::RecordPath(Limited kind, uint32_t record) const {
  std::string_view key;
  switch (kind) {
    case Limited::kEventSize:
      key = KeyName(Key::kSize);
      break;
    case Limited::kEventAddr:
      key = KeyName(Key::kAddr);
      break;
    case Limited::kEventDeviceFree:
      key = KeyName(Key::kDeviceFree);
      break;
    case Limited::kEventTime:
      key = KeyName(Key::kTimeUs);
      break;
    case Limited::kAnnotationTime: {
      auto [begin, count] = annotation_range_;
      if (record >= begin && record - begin < count) {
        return absl::StrCat("/", Sv(KeyName(Key::kExternalAnnotations)), "/", record - begin, "/",
                            Sv(KeyName(Key::kTimeUs)));
      }
      return "an annotation outside the snapshot's annotations";
    }
    case Limited::kMaxSplitSize:
    case Limited::kRoundupDivisions:
      return absl::StrCat(
          "/", Sv(KeyName(Key::kAllocatorSettings)), "/",
          Sv(KeyName(kind == Limited::kMaxSplitSize ? Key::kMaxSplitSize : Key::kRoundup)));
    default:
      return "?";
  }
  const std::string_view traces = KeyName(traces_key_);
  for (size_t d = 0; d < trace_ranges_.size(); ++d) {
    auto [begin, count] = trace_ranges_[d];
    if (record >= begin && record - begin < count) {
      return absl::StrCat("/", Sv(traces), "/", d, "/", record - begin, "/", Sv(key));
    }
  }
  return absl::StrCat("a trace entry outside ", Sv(traces), " (", Sv(key), ")");
}

uint64_t Decoder::ModelBytes() const {
  uint64_t bytes = snap_.events.size() * sizeof(TraceEvent) + memo_.size() * sizeof(MemoWord) +
                   memo_rare_.size() * sizeof(Value) + dicts_.size() * sizeof(DictObj) +
                   lists_.size() * sizeof(ListObj) + tuples_.size() * sizeof(TupleObj) +
                   (scratch_.size() + tuple_items_.size() + stack_.size()) * sizeof(Value) +
                   generic_.size() * sizeof(GenericDict) + blocks_.size() * sizeof(BlockRec) +
                   segments_.size() * sizeof(SegmentRec) + history_.size() * sizeof(HistoryRec) +
                   annotations_.size() * sizeof(Annotation) + extras_.size() * sizeof(EventExtra) +
                   snap_.blocks.size() * sizeof(Block) + snap_.segments.size() * sizeof(Segment);
  // Strings, frames and stacks: at most what their text and lists took in the input.
  bytes +=
      snap_.strings.MemoryUsage() + snap_.frames.size() * sizeof(Frame) + snap_.stacks.size() * 16;
  return bytes;
}

absl::Status Decoder::CheckBudgetSlow(size_t at, uint64_t more) const {
  const uint64_t need = ModelBytes() + more;
  if (need <= max_memory_) return absl::OkStatus();
  return absl::ResourceExhaustedError(
      absl::StrCat(input_.name(), ": offset ", at, ": the model needs about ",
                   FormatBytes(static_cast<int64_t>(need)), " by here, over the memory budget of ",
                   FormatBytes(static_cast<int64_t>(max_memory_)), " (--max-memory)"));
}

absl::Status Decoder::Finish(size_t at, const Value& root) {
  RETURN_IF_ERROR(CheckBudget(at));
  // Every entry is complete now; what follows may reorder or drop them.
  if (observer_ != nullptr) {
    published_ = snap_.events.size();
    observer_->Publish(snap_.events.data(), published_, snap_.streams.values());
    observer_->Release();
  }
  WarnReuses();
  if (root.tag == Tag::kList) {
    // 1.13 / torch.cuda.memory_snapshot(): the segments list alone.
    snap_.source.bare_segment_list = true;
    RETURN_IF_ERROR(FinishSegments(at, root));
    InvalidateEvents();
    snap_.events.clear();
    return absl::OkStatus();
  }
  if (root.tag != Tag::kDict || dicts_[root.ref].kind != Rec::kTop) {
    if (root.tag == Tag::kDict && dicts_[root.ref].kind == Rec::kUnset) {
      return Error(at, "the pickle holds an empty dict, not a snapshot");
    }
    return Error(
        at,
        absl::StrCat("the pickle holds a ",
                     DictKind(root) != Rec::kUnset ? RecName(DictKind(root)) : TagName(root.tag),
                     ", not a snapshot (expected a dict with 'segments' or a list of segments)"));
  }
  TopRec<Value>& top = tops_[dicts_[root.ref].record];
  traces_key_ = top.traces_key;
  if (top.segments) RETURN_IF_ERROR(FinishSegments(at, *top.segments));
  if (top.device_traces) {
    RETURN_IF_ERROR(FinishTraces(at, *top.device_traces));
  } else {
    InvalidateEvents();
    snap_.events.clear();
    snap_.event_extras.clear();
  }
  if (top.settings) {
    const Value& v = *top.settings;
    if (v.tag == Tag::kDict && dicts_[v.ref].kind == Rec::kSettings) {
      snap_.settings = settings_[dicts_[v.ref].record];
    } else if (v.tag == Tag::kDict) {
      snap_.settings.present = true;  // an empty or unrecognised settings dict
    } else if (v.tag != Tag::kNone) {
      return Error(at, absl::StrCat("'allocator_settings': expected a dict, got ", TagName(v.tag)));
    }
  }
  if (top.annotations) {
    ASSIGN_OR_RETURN(auto range, AsRecordRange(at, "'external_annotations'", Rec::kAnnotation,
                                               *top.annotations));
    annotation_range_ = range;
    snap_.annotations.assign(annotations_.begin() + range.first,
                             annotations_.begin() + range.first + range.second);
  }
  if (clamped_ints_ > 0) {
    snap_.diagnostics.Warn(
        absl::StrCat(clamped_ints_, " integer(s) wider than 64 bits were clamped"));
  }
  limits_.ResolveRecords([&](Limited kind, uint32_t record) { return RecordPath(kind, record); });
  limits_.AddWarnings(snap_.diagnostics);
  return absl::OkStatus();
}

}  // namespace memsnap::parse::pickle
