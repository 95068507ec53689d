// One traversal of the model in PyTorch's key order (EmitSnapshot), two emitters: pickle (memo
// sharing of frames and stacks) and JSON (streamed text).
#include "memsnap/writer/snapshot_writer.h"

#include <algorithm>
#include <charconv>
#include <span>
#include <string>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "memsnap/io/pickle_writer.h"

namespace memsnap::writer {

namespace {

// Every key the writer emits; the pickle emitter caches one memo slot per key.
enum class K : uint8_t {
  kSegments,
  kDeviceTraces,
  kAllocatorSettings,
  kExternalAnnotations,
  kDevice,
  kAddress,
  kTotalSize,
  kAllocatedSize,
  kActiveSize,
  kRequestedSize,
  kStream,
  kSegmentType,
  kSegmentPoolId,
  kIsExpandable,
  kFrames,
  kBlocks,
  kSize,
  kState,
  kAction,
  kAddr,
  kDeviceFree,
  kTimeUs,
  kCompileContext,
  kUserMetadata,
  kPoolId,
  kCategory,
  kName,
  kFilename,
  kLine,
  kStage,
  kConf,
  kMaxSplitSize,
  kGcThreshold,
  kExpandableSegments,
  kPinnedThreads,
  kReleaseLock,
  kPinnedHostRegister,
  kGraphReuse,
  kRoundup,
  kTraceOverflowed,
  kTraceMaxEntries,
  kCount,
};
constexpr std::string_view kKeyNames[] = {
    "segments",
    "device_traces",
    "allocator_settings",
    "external_annotations",
    "device",
    "address",
    "total_size",
    "allocated_size",
    "active_size",
    "requested_size",
    "stream",
    "segment_type",
    "segment_pool_id",
    "is_expandable",
    "frames",
    "blocks",
    "size",
    "state",
    "action",
    "addr",
    "device_free",
    "time_us",
    "compile_context",
    "user_metadata",
    "pool_id",
    "category",
    "name",
    "filename",
    "line",
    "stage",
    "PYTORCH_CUDA_ALLOC_CONF",
    "max_split_size",
    "garbage_collection_threshold",
    "expandable_segments",
    "pinned_num_register_threads",
    "release_lock_on_cudamalloc",
    "pinned_use_cuda_host_register",
    "graph_capture_record_stream_reuse",
    "roundup_power2_divisions",
    "trace_alloc_overflowed",
    "trace_alloc_max_entries",
};
static_assert(std::size(kKeyNames) == static_cast<size_t>(K::kCount));

class PickleEmitter {
 public:
  PickleEmitter(const Snapshot& snap, std::ostream& out, int protocol)
      : snap_(snap), w_(out, protocol) {
    key_slots_.fill(io::PickleWriter::kNoSlot);
    frame_slots_.assign(snap.frames.size(), io::PickleWriter::kNoSlot);
    stack_slots_.assign(snap.stacks.size(), io::PickleWriter::kNoSlot);
  }
  void BeginDict(size_t n) { w_.BeginDict(n); }
  void EndDict() { w_.EndDict(); }
  void BeginList(size_t n) { w_.BeginList(n); }
  void EndList() { w_.EndList(); }
  void Key(K k) {
    w_.CachedStr(kKeyNames[static_cast<size_t>(k)], key_slots_[static_cast<size_t>(k)]);
  }
  void Int(int64_t v) { w_.Int(v); }
  void UInt(uint64_t v) { w_.UInt(v); }
  void Bool(bool v) { w_.Bool(v); }
  void Float(double v) { w_.Float(v); }
  void Str(std::string_view s) { w_.Str(s); }
  void StrKey(std::string_view s) { w_.Str(s); }
  void Pool(const PoolId& p) {
    w_.BeginTuple2();
    w_.UInt(p.first);
    w_.UInt(p.second);
    w_.EndTuple2();
  }
  /// Identical tracebacks are one memoized list; identical frames one memoized dict.
  void Stack(StackId id) {
    uint32_t& slot = stack_slots_[id.v];
    if (slot != io::PickleWriter::kNoSlot) return w_.Get(slot);
    std::span<const FrameId> frames = snap_.stacks.Get(id);
    uint32_t s = w_.BeginList(frames.size());
    for (FrameId f : frames) {
      uint32_t& fslot = frame_slots_[f.v];
      if (fslot != io::PickleWriter::kNoSlot) {
        w_.Get(fslot);
        continue;
      }
      const Frame& fr = snap_.frames.Get(f);
      fslot = w_.BeginDict(3);
      Key(K::kName);
      w_.Str(snap_.strings.Get(fr.name));
      Key(K::kFilename);
      w_.Str(snap_.strings.Get(fr.filename));
      Key(K::kLine);
      w_.Int(fr.line);
      w_.EndDict();
    }
    w_.EndList();
    slot = s;
  }
  absl::Status Finish() { return w_.Finish(); }

 private:
  const Snapshot& snap_;
  io::PickleWriter w_;
  std::array<uint32_t, static_cast<size_t>(K::kCount)> key_slots_;
  std::vector<uint32_t> frame_slots_;
  std::vector<uint32_t> stack_slots_;
};

class JsonEmitter {
 public:
  JsonEmitter(const Snapshot& snap, std::ostream& out) : snap_(snap), out_(&out) {
    buf_.reserve(kFlush + 4096);
  }
  // Counts the bytes instead of writing them (JsonBytes): each distinct stack is formatted once
  // and then counted by its size, so counting costs what writing the entries without their stacks
  // costs, however deep and shared the stacks are.
  explicit JsonEmitter(const Snapshot& snap) : snap_(snap), out_(nullptr) {
    buf_.reserve(kFlush + 4096);
    stack_bytes_.assign(snap.stacks.size(), 0);
  }
  uint64_t counted() const { return counted_; }
  void BeginDict(size_t) { Open('{'); }
  void EndDict() { Close('}'); }
  void BeginList(size_t) { Open('['); }
  void EndList() { Close(']'); }
  void Key(K k) {
    Comma();
    Quoted(kKeyNames[static_cast<size_t>(k)]);
    buf_.push_back(':');
    comma_ = false;
  }
  void Int(int64_t v) { Number(v); }
  void UInt(uint64_t v) { Number(v); }
  void Bool(bool v) { Raw(v ? "true" : "false"); }
  void Float(double v) {
    char b[32];
    auto r = std::to_chars(b, b + sizeof b, v);
    std::string_view s(b, static_cast<size_t>(r.ptr - b));
    std::string text(s);
    if (s.find_first_of(".eEn") == std::string_view::npos) text += ".0";  // Python's repr
    Raw(text);
  }
  void Str(std::string_view s) {
    Comma();
    Quoted(s);
    Done();
  }
  void StrKey(std::string_view s) {
    Comma();
    Quoted(s);
    buf_.push_back(':');
    comma_ = false;
  }
  void Pool(const PoolId& p) {
    BeginList(2);
    UInt(p.first);
    UInt(p.second);
    EndList();
  }
  void Stack(StackId id) {
    if (out_ == nullptr && id.v < stack_bytes_.size()) {
      if (stack_bytes_[id.v] == 0) {
        Comma();
        Flush();
        const uint64_t before = counted_;
        comma_ = false;
        WriteStack(id);  // flushes as it goes when the stack is big: counted_ counts every piece
        Flush();
        stack_bytes_[id.v] = counted_ - before;
      } else {
        Comma();
        counted_ += stack_bytes_[id.v];
        Done();
      }
      return;
    }
    WriteStack(id);
  }
  void WriteStack(StackId id) {
    std::span<const FrameId> frames = snap_.stacks.Get(id);
    BeginList(frames.size());
    for (FrameId f : frames) {
      const Frame& fr = snap_.frames.Get(f);
      BeginDict(3);
      Key(K::kName);
      Str(snap_.strings.Get(fr.name));
      Key(K::kFilename);
      Str(snap_.strings.Get(fr.filename));
      Key(K::kLine);
      Int(fr.line);
      EndDict();
    }
    EndList();
  }
  absl::Status Finish() {
    buf_.push_back('\n');
    Flush();
    if (out_ == nullptr) return absl::OkStatus();
    out_->flush();
    if (!*out_) return absl::DataLossError("write failed (disk full?)");
    return absl::OkStatus();
  }

 private:
  static constexpr size_t kFlush = 1 << 20;
  void Comma() {
    if (comma_) buf_.push_back(',');
  }
  void Done() {
    comma_ = true;
    if (buf_.size() >= kFlush) Flush();
  }
  void Open(char c) {
    Comma();
    buf_.push_back(c);
    comma_ = false;
  }
  void Close(char c) {
    buf_.push_back(c);
    Done();
  }
  void Raw(std::string_view s) {
    Comma();
    buf_.append(s);
    Done();
  }
  template <class T>
  void Number(T v) {
    char b[24];
    auto r = std::to_chars(b, b + sizeof b, v);
    Raw(std::string_view(b, static_cast<size_t>(r.ptr - b)));
  }
  void Quoted(std::string_view s) {
    buf_.push_back('"');
    for (size_t i = 0; i < s.size(); ++i) {
      unsigned char c = static_cast<unsigned char>(s[i]);
      if (c == '"' || c == '\\') {
        buf_.push_back('\\');
        buf_.push_back(s[i]);
      } else if (c < 0x20) {
        static constexpr char kHex[] = "0123456789abcdef";
        buf_.append("\\u00");
        buf_.push_back(kHex[c >> 4]);
        buf_.push_back(kHex[c & 15]);
      } else if (c < 0x80) {
        buf_.push_back(s[i]);
      } else if (size_t n = Utf8Length(s.substr(i)); n > 0) {
        buf_.append(s.substr(i, n));  // valid UTF-8 passes through
        i += n - 1;
      } else {
        buf_.append("\\ufffd");  // an invalid byte: JSON must be UTF-8
      }
    }
    buf_.push_back('"');
  }
  /// Length of the valid UTF-8 sequence at the start of `s` (first byte >= 0x80), 0 if invalid.
  static size_t Utf8Length(std::string_view s) {
    unsigned char c = static_cast<unsigned char>(s[0]);
    size_t n = c >= 0xf0 && c <= 0xf4 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 && c < 0xe0 ? 2 : 0;
    if (n == 0 || s.size() < n) return 0;
    for (size_t k = 1; k < n; ++k) {
      if ((static_cast<unsigned char>(s[k]) & 0xc0) != 0x80) return 0;
    }
    return n;
  }
  void Flush() {
    counted_ += buf_.size();
    if (out_ != nullptr) out_->write(buf_.data(), static_cast<std::streamsize>(buf_.size()));
    buf_.clear();
  }

  const Snapshot& snap_;
  std::ostream* out_;  // null: count only
  std::string buf_;
  bool comma_ = false;
  uint64_t counted_ = 0;
  std::vector<uint64_t> stack_bytes_;  // counting: each stack's JSON size once known (0: not yet)
};

std::string_view StateName(BlockState s) { return BlockStateName(s); }

template <class E>
void EmitStackKey(E& e, StackId stack) {
  e.Key(K::kFrames);
  e.Stack(stack.valid() ? stack : StackTable::kEmpty);
}

template <class E>
void EmitSegment(const Snapshot& snap, const Segment& s, std::span<const Block> blocks, E& e) {
  bool frames_first = !s.stack.valid() || snap.stacks.Get(s.stack).empty();
  e.BeginDict(12);
  e.Key(K::kDevice), e.Int(s.device);
  e.Key(K::kAddress), e.UInt(s.address);
  e.Key(K::kTotalSize), e.Int(s.total_size);
  e.Key(K::kAllocatedSize), e.Int(s.allocated_size);
  e.Key(K::kActiveSize), e.Int(s.active_size);
  e.Key(K::kRequestedSize), e.Int(s.requested_size);
  e.Key(K::kStream), e.Int(s.stream);
  e.Key(K::kSegmentType), e.Str(s.is_small ? "small" : "large");
  e.Key(K::kSegmentPoolId), e.Pool(s.pool);
  e.Key(K::kIsExpandable), e.Bool(s.is_expandable);
  // PyTorch writes an empty `frames` before `blocks` and a non-empty one after.
  if (frames_first) EmitStackKey(e, s.stack);
  e.Key(K::kBlocks);
  e.BeginList(blocks.size());
  for (const Block& b : blocks) {
    e.BeginDict(5);
    e.Key(K::kAddress), e.UInt(b.address);
    e.Key(K::kSize), e.Int(b.size);
    e.Key(K::kRequestedSize), e.Int(b.is_active() ? b.requested_size : 0);
    e.Key(K::kState), e.Str(StateName(b.state));
    EmitStackKey(e, b.stack);
    e.EndDict();
  }
  e.EndList();
  if (!frames_first) EmitStackKey(e, s.stack);
  e.EndDict();
}

template <class E>
void EmitEvent(const Snapshot& snap, const TraceEvent& ev, const EventExtra* x, E& e) {
  size_t n = 4 + (ev.has_time() ? 1 : 0) + (ev.stack.valid() ? 1 : 0);
  if (x != nullptr) {
    n += (x->compile_context.valid() ? 1 : 0) + (x->user_metadata.valid() ? 1 : 0) +
         (x->category.valid() ? 1 : 0) + (x->pool.has_value() ? 1 : 0);
  }
  e.BeginDict(n);
  e.Key(K::kAction), e.Str(ActionName(ev.action));
  e.Key(ev.action == Action::kOom ? K::kDeviceFree : K::kAddr), e.UInt(ev.addr);
  e.Key(K::kSize), e.Int(ev.size);
  e.Key(K::kStream), e.Int(snap.StreamOf(ev));
  if (ev.has_time()) e.Key(K::kTimeUs), e.Int(ev.time_us);
  if (x != nullptr && x->compile_context.valid()) {
    e.Key(K::kCompileContext), e.Str(snap.strings.Get(x->compile_context));
  }
  if (x != nullptr && x->user_metadata.valid()) {
    e.Key(K::kUserMetadata), e.Str(snap.strings.Get(x->user_metadata));
  }
  if (x != nullptr && x->category.valid())
    e.Key(K::kCategory), e.Str(snap.strings.Get(x->category));
  if (ev.stack.valid()) e.Key(K::kFrames), e.Stack(ev.stack);
  if (x != nullptr && x->pool.has_value()) e.Key(K::kPoolId), e.Pool(*x->pool);
  e.EndDict();
}

template <class E>
void EmitTraces(const Snapshot& snap, const SnapshotWriteOptions& o, E& e) {
  e.BeginList(snap.traces.size());
  for (size_t d = 0; d < snap.traces.size(); ++d) {
    EventRange r{snap.traces[d].begin, snap.traces[d].end};
    if (d < o.event_ranges.size()) r = o.event_ranges[d];
    auto x = std::lower_bound(snap.event_extras.begin(), snap.event_extras.end(), r.begin,
                              [](const EventExtra& a, uint32_t i) { return a.event < i; });
    e.BeginList(r.end - r.begin);
    for (uint32_t i = r.begin; i < r.end; ++i) {
      while (x != snap.event_extras.end() && x->event < i) ++x;
      const EventExtra* extra = x != snap.event_extras.end() && x->event == i ? &*x : nullptr;
      EmitEvent(snap, snap.events[i], extra, e);
    }
    e.EndList();
  }
  e.EndList();
}

template <class E>
void EmitSettings(const AllocatorSettings& s, E& e) {
  size_t n = 8 + (s.graph_capture_record_stream_reuse ? 1 : 0) +
             (s.trace_alloc_overflowed ? 1 : 0) + (s.trace_alloc_max_entries ? 1 : 0);
  e.BeginDict(n);
  e.Key(K::kConf), e.Str(s.conf);
  e.Key(K::kMaxSplitSize), e.Int(s.max_split_size);
  e.Key(K::kGcThreshold), e.Float(s.garbage_collection_threshold);
  e.Key(K::kExpandableSegments), e.Bool(s.expandable_segments);
  e.Key(K::kPinnedThreads), e.Int(s.pinned_num_register_threads);
  e.Key(K::kReleaseLock), e.Bool(s.release_lock_on_cudamalloc);
  e.Key(K::kPinnedHostRegister), e.Bool(s.pinned_use_cuda_host_register);
  if (s.graph_capture_record_stream_reuse) e.Key(K::kGraphReuse), e.Bool(true);
  e.Key(K::kRoundup);
  e.BeginDict(s.roundup_power2_divisions.size());
  for (size_t i = 0; i < s.roundup_power2_divisions.size(); ++i) {
    e.StrKey(absl::StrCat(uint64_t{1} << i));
    e.Int(s.roundup_power2_divisions[i]);
  }
  e.EndDict();
  if (s.trace_alloc_overflowed) e.Key(K::kTraceOverflowed), e.Bool(*s.trace_alloc_overflowed);
  if (s.trace_alloc_max_entries) e.Key(K::kTraceMaxEntries), e.Int(*s.trace_alloc_max_entries);
  e.EndDict();
}

template <class E>
absl::Status EmitSnapshot(const Snapshot& snap, const SnapshotWriteOptions& o, E& e) {
  std::vector<const Annotation*> notes;
  for (const Annotation& a : snap.annotations) {
    if (!o.event_ranges.empty() && a.time_us != kNoTime &&
        ((o.min_time_us != kNoTime && a.time_us < o.min_time_us) ||
         (o.max_time_us != kNoTime && a.time_us > o.max_time_us))) {
      continue;
    }
    notes.push_back(&a);
  }
  bool with_notes = !snap.annotations.empty();
  e.BeginDict(2 + (snap.settings.present ? 1 : 0) + (with_notes ? 1 : 0));
  e.Key(K::kSegments);
  const bool given = o.segments != nullptr && o.blocks != nullptr;
  const std::vector<Segment>& segments = given ? *o.segments : snap.segments;
  const std::vector<Block>& blocks = given ? *o.blocks : snap.blocks;
  e.BeginList(segments.size());
  for (const Segment& s : segments) {
    EmitSegment(snap, s, std::span<const Block>(blocks.data() + s.first_block, s.num_blocks), e);
  }
  e.EndList();
  e.Key(K::kDeviceTraces);
  EmitTraces(snap, o, e);
  if (snap.settings.present) {
    e.Key(K::kAllocatorSettings);
    EmitSettings(snap.settings, e);
  }
  if (with_notes) {
    e.Key(K::kExternalAnnotations);
    e.BeginList(notes.size());
    for (const Annotation* a : notes) {
      e.BeginDict(a->time_us != kNoTime ? 4 : 3);
      // A file's annotation may lack either (the model keeps an invalid id): write "", which
      // reads back the same, as PyTorch would write the keys.
      e.Key(K::kStage), e.Str(a->stage.valid() ? snap.strings.Get(a->stage) : "");
      e.Key(K::kName), e.Str(a->name.valid() ? snap.strings.Get(a->name) : "");
      e.Key(K::kDevice), e.Int(a->device);
      if (a->time_us != kNoTime) e.Key(K::kTimeUs), e.Int(a->time_us);
      e.EndDict();
    }
    e.EndList();
  }
  e.EndDict();
  return e.Finish();
}

}  // namespace

absl::Status WriteSnapshotPickle(const Snapshot& snap, const SnapshotWriteOptions& options,
                                 std::ostream& out) {
  if (options.protocol < 2 || options.protocol > 5) {
    return absl::InvalidArgumentError(
        absl::StrCat("pickle protocol ", options.protocol, " is not supported (use 2, 4 or 5)"));
  }
  PickleEmitter e(snap, out, options.protocol);
  return EmitSnapshot(snap, options, e);
}

absl::Status WriteSnapshotJson(const Snapshot& snap, const SnapshotWriteOptions& options,
                               std::ostream& out) {
  JsonEmitter e(snap, out);
  return EmitSnapshot(snap, options, e);
}

uint64_t JsonBytes(const Snapshot& snap, const SnapshotWriteOptions& options) {
  JsonEmitter e(snap);
  (void)EmitSnapshot(snap, options, e);  // counting cannot fail
  return e.counted();
}

}  // namespace memsnap::writer
