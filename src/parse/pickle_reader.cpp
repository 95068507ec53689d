// A pickle decoder that builds the snapshot model directly (snapshot-format.md §1.3-1.4, §4).
//
// It is a pickle virtual machine that understands only data opcodes; anything that would import or
// call code is refused. Instead of building a generic tree of Python objects, every dict is typed by
// its keys the first time items are set on it (a dict with "action" is a trace entry, one with
// "filename" a frame, ...) and its items are written straight into a typed record: trace entries
// into Snapshot::events, frames into the FrameTable, blocks and segments into staging vectors.
// Lists of records are kept as runs of record indices ("trace entries 0..2.2M"), so a trace costs
// one run, not millions of items. Lists of frames become a StackId the first time they are used and
// that id is cached, so shared frame lists (memo GETs) cost nothing after the first use.
//
//   stack_:   [Value...]            the VM stack; MARKs live in marks_ as stack positions
//   memo_:    [uint64]              packed values (see PackMemo); dense, indexed by MEMOIZE/BINPUT
//   dicts_:   dict handle  -> {kind, record index}
//   lists_:   list handle  -> {items in scratch_[begin, begin+count), cached StackId}
//   scratch_: list items (Values; record runs compress consecutive records)
#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <optional>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "memsnap/parse/event_observer.h"
#include "memsnap/parse/reader.h"
#include "parse/schema_common.h"
#include "memsnap/util/memory.h"
#include "memsnap/util/status_macros.h"
#include "memsnap/util/strings.h"

namespace memsnap::parse {

namespace {

enum class Tag : uint8_t {
  kNone,
  kBool,
  kInt,      // fits int64
  kUInt64,   // in [2^63, 2^64): bits stored in i
  kHugeInt,  // does not fit 64 bits; i holds the clamped value
  kFloat,    // bits of a double in i
  kStr,      // ref = StrId
  kDict,     // ref = dict handle
  kList,     // ref = list handle
  kTuple,    // ref = tuple handle
  kRun,      // list item only: records [ref, ref + i) of kind `kind`
  kFrameRef, // a frame dict already interned: ref = FrameId (memo GETs of frames yield this)
  kEventRef, // a trace-entry dict decoded by the fast path (TryEventDict): ref = event record
};

enum class Kind : uint8_t {
  kUnset,
  kGeneric,
  kTop,
  kSegment,
  kBlock,
  kHistory,
  kEvent,
  kFrame,
  kAnnotation,
  kSettings,
};

constexpr const char* KindName(Kind k) {
  switch (k) {
    case Kind::kUnset: return "dict without items";
    case Kind::kGeneric: return "dict";
    case Kind::kTop: return "snapshot dict";
    case Kind::kSegment: return "segment";
    case Kind::kBlock: return "block";
    case Kind::kHistory: return "history entry";
    case Kind::kEvent: return "trace entry";
    case Kind::kFrame: return "frame";
    case Kind::kAnnotation: return "annotation";
    case Kind::kSettings: return "allocator_settings";
  }
  return "dict";
}

struct Value {
  Tag tag = Tag::kNone;
  Kind kind = Kind::kUnset;  // for kRun
  uint32_t ref = 0;
  int64_t i = 0;
};
static_assert(sizeof(Value) == 16);

// The VM stack: a vector whose push is inlined (std::vector::push_back was not, and pushes are
// the commonest operation of the decoder). Only the operations the decoder uses.
class VmStack {
 public:
  VmStack() { Grow(); }
  [[gnu::always_inline]] void push_back(const Value& v) {
    if (top_ == end_) [[unlikely]] {
      const Value copy = v;  // v may live in the storage that Grow frees (DUP pushes back())
      Grow();
      *top_++ = copy;
      return;
    }
    *top_++ = v;
  }
  void pop_back() { --top_; }
  Value& back() { return top_[-1]; }
  const Value& back() const { return top_[-1]; }
  Value& operator[](size_t i) { return base_[i]; }
  // Pointers rather than counts: a store into a Value's int64 cannot alias them, so the compiler
  // keeps them in registers across pushes.
  size_t size() const { return static_cast<size_t>(top_ - base_); }
  bool empty() const { return top_ == base_; }
  Value* data() { return base_; }
  /// Shrinks to n elements (never grows).
  void resize(size_t n) { top_ = base_ + n; }

 private:
  void Grow() {
    size_t size = this->size();
    size_t cap = end_ ? static_cast<size_t>(end_ - base_) * 2 : 1024;
    auto bigger = std::make_unique<Value[]>(cap);
    if (size) std::memcpy(bigger.get(), base_, size * sizeof(Value));
    storage_ = std::move(bigger);
    base_ = storage_.get();
    top_ = base_ + size;
    end_ = base_ + cap;
  }
  std::unique_ptr<Value[]> storage_;
  Value* base_ = nullptr;
  Value* top_ = nullptr;
  Value* end_ = nullptr;
};

const char* TagName(Tag t) {
  switch (t) {
    case Tag::kNone: return "None";
    case Tag::kBool: return "bool";
    case Tag::kInt:
    case Tag::kUInt64:
    case Tag::kHugeInt: return "int";
    case Tag::kFloat: return "float";
    case Tag::kStr: return "str";
    case Tag::kDict: return "dict";
    case Tag::kList: return "list";
    case Tag::kTuple: return "tuple";
    case Tag::kRun: return "record";
    case Tag::kFrameRef:
    case Tag::kEventRef: return "dict";
  }
  return "?";
}

// Keys the decoder knows. Interned first, so their StrIds are small and index key_codes_.
enum class Key : uint8_t {
  kOther,
  kAction, kAddr, kSize, kStream, kTimeUs, kFrames, kDeviceFree, kCompileContext, kUserMetadata,
  kPoolId, kCategory,
  kName, kFilename, kLine,
  kDevice, kAddress, kTotalSize, kAllocatedSize, kActiveSize, kRequestedSize, kSegmentType,
  kSegmentPoolId, kIsExpandable, kBlocks,
  kState, kHistory, kRealSize,
  kSegments, kDeviceTraces, kTraces, kAllocatorSettings, kExternalAnnotations,
  kStage,
  kConf, kMaxSplitSize, kGcThreshold, kExpandableSegments, kPinnedThreads, kReleaseLock,
  kPinnedHostRegister, kGraphReuse, kRoundup, kTraceOverflowed, kTraceMaxEntries,
  kCount
};

constexpr std::pair<Key, std::string_view> kKeyNames[] = {
    {Key::kAction, "action"}, {Key::kAddr, "addr"}, {Key::kSize, "size"},
    {Key::kStream, "stream"}, {Key::kTimeUs, "time_us"}, {Key::kFrames, "frames"},
    {Key::kDeviceFree, "device_free"}, {Key::kCompileContext, "compile_context"},
    {Key::kUserMetadata, "user_metadata"}, {Key::kPoolId, "pool_id"},
    {Key::kCategory, "category"}, {Key::kName, "name"}, {Key::kFilename, "filename"},
    {Key::kLine, "line"}, {Key::kDevice, "device"}, {Key::kAddress, "address"},
    {Key::kTotalSize, "total_size"}, {Key::kAllocatedSize, "allocated_size"},
    {Key::kActiveSize, "active_size"}, {Key::kRequestedSize, "requested_size"},
    {Key::kSegmentType, "segment_type"}, {Key::kSegmentPoolId, "segment_pool_id"},
    {Key::kIsExpandable, "is_expandable"}, {Key::kBlocks, "blocks"}, {Key::kState, "state"},
    {Key::kHistory, "history"}, {Key::kRealSize, "real_size"}, {Key::kSegments, "segments"},
    {Key::kDeviceTraces, "device_traces"}, {Key::kTraces, "traces"},
    {Key::kAllocatorSettings, "allocator_settings"},
    {Key::kExternalAnnotations, "external_annotations"}, {Key::kStage, "stage"},
    {Key::kConf, "PYTORCH_CUDA_ALLOC_CONF"}, {Key::kMaxSplitSize, "max_split_size"},
    {Key::kGcThreshold, "garbage_collection_threshold"},
    {Key::kExpandableSegments, "expandable_segments"},
    {Key::kPinnedThreads, "pinned_num_register_threads"},
    {Key::kReleaseLock, "release_lock_on_cudamalloc"},
    {Key::kPinnedHostRegister, "pinned_use_cuda_host_register"},
    {Key::kGraphReuse, "graph_capture_record_stream_reuse"},
    {Key::kRoundup, "roundup_power2_divisions"},
    {Key::kTraceOverflowed, "trace_alloc_overflowed"},
    {Key::kTraceMaxEntries, "trace_alloc_max_entries"},
};

struct DictObj {
  uint32_t record = 0;
  Kind kind = Kind::kUnset;
  uint32_t memo_slot = UINT32_MAX;  // where MEMOIZE/BINPUT stored it, to retag frames
};

struct ListObj {
  uint32_t begin = 0;  // items in scratch_
  uint32_t count = 0;
  StackId stack;       // cached once the list was used as `frames`
  bool consumed = false;
};

struct TupleObj {
  uint32_t begin = 0;  // items in tuple_items_
  uint32_t count = 0;
};

struct BlockRec {
  Block block;
  bool has_state = false;
  std::optional<uint32_t> history;  // first history record
};

struct SegmentRec {
  Segment segment;
  uint32_t blocks_begin = 0;  // into block_recs_
  uint32_t blocks_count = 0;
};

struct HistoryRec {
  uint64_t addr = kUnknownAddress;
  int64_t real_size = kNoRequestedSize;
  StackId stack;
};

struct TopRec {
  std::optional<Value> segments, device_traces, settings, annotations;
};

struct GenericDict {
  std::vector<std::pair<Value, Value>> items;
};

// Opcodes (pickletools names).
enum : uint8_t {
  MARK = '(', STOP = '.', POP = '0', POP_MARK = '1', DUP = '2', BININT = 'J', BININT1 = 'K',
  BININT2 = 'M', NONE = 'N', BINUNICODE = 'X', APPEND = 'a', EMPTY_DICT = '}', APPENDS = 'e',
  BINGET = 'h', LONG_BINGET = 'j', EMPTY_LIST = ']', BINPUT = 'q', LONG_BINPUT = 'r',
  SETITEM = 's', TUPLE = 't', EMPTY_TUPLE = ')', SETITEMS = 'u', BINFLOAT = 'G', LIST = 'l',
  DICT = 'd', BINSTRING = 'T', SHORT_BINSTRING = 'U', BINBYTES = 'B', SHORT_BINBYTES = 'C',
  PROTO = 0x80, TUPLE1 = 0x85, TUPLE2 = 0x86, TUPLE3 = 0x87, NEWTRUE = 0x88, NEWFALSE = 0x89,
  LONG1 = 0x8a, LONG4 = 0x8b, SHORT_BINUNICODE = 0x8c, BINUNICODE8 = 0x8d, BINBYTES8 = 0x8e,
  EMPTY_SET = 0x8f, FRAME = 0x95, MEMOIZE = 0x94,
  // Refused: they import or call code, or are not data.
  GLOBAL = 'c', STACK_GLOBAL = 0x93, REDUCE = 'R', BUILD = 'b', INST = 'i', OBJ = 'o',
  NEWOBJ = 0x81, NEWOBJ_EX = 0x92, PERSID = 'P', BINPERSID = 'Q', EXT1 = 0x82, EXT2 = 0x83,
  EXT4 = 0x84,
};

const char* RefusedOpcodeName(uint8_t op) {
  switch (op) {
    case GLOBAL: return "GLOBAL";
    case STACK_GLOBAL: return "STACK_GLOBAL";
    case REDUCE: return "REDUCE";
    case BUILD: return "BUILD";
    case INST: return "INST";
    case OBJ: return "OBJ";
    case NEWOBJ: return "NEWOBJ";
    case NEWOBJ_EX: return "NEWOBJ_EX";
    case PERSID: return "PERSID";
    case BINPERSID: return "BINPERSID";
    case EXT1: return "EXT1";
    case EXT2: return "EXT2";
    case EXT4: return "EXT4";
  }
  return nullptr;
}

// The value of a LONG1/LONG4 payload of 1 to 7 little-endian two's-complement bytes at `bytes`,
// with `readable` bytes readable from there (>= n).
[[gnu::always_inline]] inline int64_t SmallLong(const uint8_t* bytes, size_t n, size_t readable) {
  uint64_t u = 0;
  if (readable >= 8) [[likely]] {
    // One 8-byte load, the bytes past the value shifted out below: a variable-length memcpy
    // compiles to byte stores that stall the load that follows them.
    std::memcpy(&u, bytes, 8);
  } else {
    std::memcpy(&u, bytes, n);
  }
  const int shift = static_cast<int>(64 - 8 * n);
  return static_cast<int64_t>(u << shift) >> shift;  // sign-extend
}

class PickleDecoder {
 public:
  PickleDecoder(io::InputSource& input, EventObserver* observer)
      : input_(input), data_(input.bytes()), observer_(observer) {
    for (const auto& [key, name] : kKeyNames) {
      StrId id = snap_.strings.Intern(name);
      if (key_codes_.size() <= id.v) key_codes_.resize(id.v + 1, Key::kOther);
      key_codes_[id.v] = key;
    }
    na_ = snap_.strings.Intern("N/A");
    // Reserve generously: untouched capacity costs address space, not resident memory, and it
    // avoids the transient 3x of a vector doubling on multi-GB inputs.
    size_t n = data_.size();
    // Not ReserveHuge: transparent huge pages saved a little on a quiet machine but cost 0.3 s of
    // direct compaction when another process had just freed a lot of memory (docs/BENCHMARKS.md).
    snap_.events.reserve(EventsReservedFor(n));
    memo_.reserve(n / 16 + 16);
    dicts_.reserve(n / 24 + 16);
    if (observer_ != nullptr) next_publish_ = std::min(kPublishEvery, snap_.events.capacity());
  }
  // An error return destroys the events: nothing may be reading them then.
  ~PickleDecoder() {
    if (observer_ != nullptr) observer_->Release();
  }
  PickleDecoder(const PickleDecoder&) = delete;
  PickleDecoder& operator=(const PickleDecoder&) = delete;

  absl::StatusOr<Snapshot> Run();

  /// The deepest VM stack (and MARK stack) accepted.
  static constexpr size_t kMaxStackDepth = size_t{1} << 20;

 private:
  // ---- errors ----
  absl::Status Error(size_t at, std::string_view what) const {
    return absl::InvalidArgumentError(absl::StrCat(input_.name(), ": offset ", at, ": ", Sv(what)));
  }

  // ---- reading ----
  bool Need(size_t n) const { return data_.size() - pos_ >= n; }
  template <typename T>
  T ReadLE() {
    T v;
    std::memcpy(&v, data_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }

  // ---- values ----
  static Value Int(int64_t v) { return Value{Tag::kInt, Kind::kUnset, 0, v}; }
  absl::StatusOr<Value> DecodeLong(size_t at, std::string_view bytes);
  absl::Status PushString(size_t at, size_t n);
  absl::StatusOr<Value> Pop(size_t at) {
    if (stack_.size() <= StackFloor()) return Error(at, "stack underflow");
    Value v = stack_.back();
    stack_.pop_back();
    return v;
  }
  size_t StackFloor() const { return marks_.empty() ? 0 : marks_.back(); }
  absl::StatusOr<size_t> PopMark(size_t at) {
    if (marks_.empty()) return Error(at, "no MARK on the stack");
    size_t m = marks_.back();
    marks_.pop_back();
    return m;
  }

  // Fast path for the commonest shape in real files: a new list filled with memo GETs of frames,
  // `MARK (BINGET|LONG_BINGET)* APPENDS`. Called right after that MARK; when the whole batch is
  // frame GETs it interns the stack directly and consumes the batch, skipping the VM stack;
  // otherwise it leaves pos_ untouched and decoding proceeds normally.
  void TryFrameList();

  // Fast path for trace entries, the bulk of every file. Called right after EMPTY_DICT: when the
  // dict is memoized, its first key is "action" and every item has the shape PyTorch writes
  // (memo GETs of known keys, small ints, actions and "N/A" by memo GET, frames by memo GET or as a
  // new list of memoized frames), it decodes the whole entry straight into a TraceEvent, pushes a
  // kEventRef and returns true. Otherwise it undoes its memo and list entries and returns false
  // with pos_ untouched, and the generic opcode loop decodes the entry (and reports its errors).
  bool TryEventDict();
  // Pieces of TryEventDict; each reads at p, advances it on success, and returns false when the
  // bytes are not the expected shape (the caller then rolls back).
  bool FastGet(size_t& p, uint64_t& packed) const;
  bool FastMemoPut(size_t& p, uint64_t packed);
  bool FastInt(size_t& p, int64_t& v) const;
  bool FastFrames(size_t& p, StackId& stack);
  // `(BINGET|LONG_BINGET of a frame)+ APPENDS` at p: the frames in frame_scratch_, p past APPENDS.
  bool FastFrameBatch(size_t& p);
  bool FastEmptyText(size_t& p);
  // The previous trace entry's keys by position: the bytes of their memo GETs and what they meant.
  // Valid while the memo entries they name keep their values: cleared when the memo is
  // overwritten (BINPUT to an existing index) or truncated (a rollback).
  struct KeyCacheEntry {
    uint64_t bytes = 0;
    uint64_t mask = 0;
    Key key = Key::kOther;
    uint8_t length = 0;
  };
  static constexpr uint32_t kKeyCacheSize = 16;
  KeyCacheEntry key_cache_[kKeyCacheSize];
  uint32_t key_cache_size_ = 0;

  // ---- memo ----
  absl::Status MemoPut(size_t at, uint64_t index);
  // Pushes memo entry `index`; false when there is none. Inline: GETs are most of the opcodes of
  // a real file.
  [[gnu::always_inline]] bool TryMemoGet(uint64_t index) {
    if (index >= memo_.size()) [[unlikely]] return false;
    uint64_t packed = memo_[index];
    if (packed == ~uint64_t{0}) [[unlikely]] return false;
    uint64_t tag = packed & 15;
    if (tag == kRareTagValue) [[unlikely]] {
      stack_.push_back(memo_rare_[static_cast<uint32_t>(packed >> 4)]);
    } else {
      stack_.push_back(
          Value{static_cast<Tag>(tag), Kind::kUnset, static_cast<uint32_t>(packed >> 4), 0});
    }
    return true;
  }
  absl::Status MemoError(size_t at, uint64_t index) const {
    return Error(at, absl::StrCat("memo reference ", index, " beyond memo size ", memo_.size()));
  }
  static constexpr uint64_t kRareTagValue = 15;

  // ---- containers ----
  Value NewDict() {
    dicts_.push_back(DictObj{});
    return Value{Tag::kDict, Kind::kUnset, static_cast<uint32_t>(dicts_.size() - 1), 0};
  }
  Value NewList() {
    lists_.push_back(ListObj{static_cast<uint32_t>(scratch_.size()), 0, StackId(), false});
    return Value{Tag::kList, Kind::kUnset, static_cast<uint32_t>(lists_.size() - 1), 0};
  }
  Value NewTuple(const Value* items, size_t n) {
    TupleObj t{static_cast<uint32_t>(tuple_items_.size()), static_cast<uint32_t>(n)};
    tuple_items_.insert(tuple_items_.end(), items, items + n);
    tuples_.push_back(t);
    return Value{Tag::kTuple, Kind::kUnset, static_cast<uint32_t>(tuples_.size() - 1), 0};
  }
  absl::Status Append(size_t at, const Value& list, const Value* items, size_t n);
  absl::Status SetItems(size_t at, const Value& dict, const Value* items, size_t n);
  Kind Classify(const Value* items, size_t n) const;
  Key KeyOf(const Value& key) const {
    return key.tag == Tag::kStr && key.ref < key_codes_.size() ? key_codes_[key.ref] : Key::kOther;
  }
  uint32_t CreateRecord(Kind kind);
  absl::Status ApplyItem(size_t at, Kind kind, uint32_t record, Key key, const Value& v);
  // The hot path for trace entries (millions per file): common keys with inline type checks;
  // anything unusual goes through ApplyItem, which also produces the error messages.
  absl::Status ApplyEvent(size_t at, uint32_t record, const Value* items, size_t n);
  Action ActionOf(StrId id) {
    if (id.v >= action_cache_.size()) action_cache_.resize(id.v + 1, kActionUnresolved);
    uint8_t& a = action_cache_[id.v];
    if (a == kActionUnresolved) a = static_cast<uint8_t>(ParseAction(snap_.strings.Get(id)));
    return static_cast<Action>(a);
  }
  static constexpr uint8_t kActionUnresolved = 0xff;
  std::vector<uint8_t> action_cache_;  // StrId -> Action, filled lazily

  // ---- typed extraction ----
  absl::StatusOr<int64_t> AsInt(size_t at, const char* what, Key key, const Value& v);
  absl::StatusOr<uint64_t> AsAddress(size_t at, const char* what, Key key, const Value& v);
  absl::StatusOr<StrId> AsStr(size_t at, const char* what, Key key, const Value& v);
  absl::StatusOr<bool> AsBool(size_t at, const char* what, Key key, const Value& v);
  absl::StatusOr<StackId> AsStack(size_t at, const char* what, const Value& v);
  absl::StatusOr<PoolId> AsPool(size_t at, const char* what, Key key, const Value& v);
  absl::StatusOr<std::pair<uint32_t, uint32_t>> AsRecordRange(size_t at, const char* what,
                                                              Kind kind, const Value& v);
  absl::Status TypeError(size_t at, const char* what, Key key, const Value& v, const char* want);
  std::string KeyName(Key key) const;
  std::string RenderText(const Value& v, int depth) const;
  void ApplyRoundup(const Value& v, AllocatorSettings& settings);
  absl::Status ApplyTraceFlag(size_t at, Key key, const Value& v, AllocatorSettings& s);

  // extras_ is sorted by event: records are created in increasing order.
  const EventExtra* FindExtra(uint32_t event) const {
    auto it = std::lower_bound(extras_.begin(), extras_.end(), event,
                               [](const EventExtra& x, uint32_t e) { return x.event < e; });
    return it != extras_.end() && it->event == event ? &*it : nullptr;
  }

  // ---- final assembly ----
  absl::Status Finish(size_t at, const Value& root);
  absl::Status FinishSegments(size_t at, const Value& list);
  absl::Status FinishTraces(size_t at, const Value& list);

  io::InputSource& input_;
  std::string_view data_;
  size_t pos_ = 0;
  Snapshot snap_;
  StrId na_;
  std::vector<Key> key_codes_;

  VmStack stack_;
  std::vector<size_t> marks_;
  std::vector<uint64_t> memo_;
  std::vector<Value> memo_rare_;  // memoized values that do not pack into 64 bits

  std::vector<DictObj> dicts_;
  std::vector<ListObj> lists_;
  std::vector<TupleObj> tuples_;
  std::vector<Value> scratch_;
  std::vector<Value> tuple_items_;
  std::vector<GenericDict> generic_;

  std::vector<BlockRec> blocks_;
  std::vector<SegmentRec> segments_;
  std::vector<HistoryRec> history_;
  std::vector<Annotation> annotations_;
  std::vector<AllocatorSettings> settings_;
  std::vector<TopRec> tops_;
  // Extras of events that have any, by event record.
  std::vector<EventExtra> extras_;
  std::vector<FrameId> frame_scratch_;
  uint64_t clamped_ints_ = 0;
  LimitReport limits_;  // values out of range (model/limits.h), paths resolved by Finish
  // Where Finish found the trace entries and annotations, to name a record's key path.
  std::string_view traces_key_ = "device_traces";
  std::vector<std::pair<uint32_t, uint32_t>> trace_ranges_;
  std::pair<uint32_t, uint32_t> annotation_range_{0, 0};
  std::string RecordPath(Limited kind, uint32_t record) const;
  Prefaulter events_prefault_;
  // Streaming decoded events to an observer (event_observer.h): every kPublishEvery events, and
  // whenever the vector is full (the next append moves it). SIZE_MAX: no observer.
  static constexpr size_t kPublishEvery = 16384;
  EventObserver* observer_ = nullptr;
  size_t next_publish_ = SIZE_MAX;
  size_t published_ = 0;
  // After every append to snap_.events: one compare unless an observer is due.
  void EventAppended() {
    if (snap_.events.size() >= next_publish_) [[unlikely]] PublishEvents();
  }
  void PublishEvents();
  // Before rewriting, reordering or dropping events: what was published is void.
  void InvalidateEvents() {
    if (observer_ == nullptr) return;
    observer_->Invalidate();
    observer_ = nullptr;
    next_publish_ = SIZE_MAX;
  }
  // Work that re-reads shared objects (moved list items, records copied because a list holds them
  // out of order or twice, tuples of frames, shared lists under several keys) is charged here. Real
  // files need almost none; a hostile file that shares one big list a million times through memo
  // GETs would otherwise cost time and memory quadratic in its size.
  uint64_t copies_ = 0;
  absl::Status Charge(size_t at, uint64_t n) {
    copies_ += n;
    if (copies_ > data_.size() + (uint64_t{1} << 16)) {
      return Error(at, absl::StrCat("objects are shared or re-read too many times (", copies_,
                                    " copies for ", data_.size(),
                                    " bytes of input): not a snapshot"));
    }
    return absl::OkStatus();
  }
};

// Memo entries pack a Value into 64 bits: tag in the low 4 bits, a 32-bit ref above it. Values that
// carry a 64-bit payload (ints, floats) go to memo_rare_ and are referenced from there. CPython never
// memoizes ints, so the rare table stays empty on real files.
constexpr uint64_t kRareTag = 15;
constexpr uint64_t kFrameTag = static_cast<uint64_t>(Tag::kFrameRef);

absl::Status PickleDecoder::MemoPut(size_t at, uint64_t index) {
  if (stack_.size() <= StackFloor()) return Error(at, "memoize with an empty stack");
  const Value& v = stack_.back();
  uint64_t packed;
  switch (v.tag) {
    case Tag::kStr:
    case Tag::kDict:
    case Tag::kList:
    case Tag::kTuple:
    case Tag::kNone:
    case Tag::kFrameRef:
    case Tag::kEventRef:
      packed = static_cast<uint64_t>(v.tag) | (uint64_t{v.ref} << 4);
      break;
    default:
      memo_rare_.push_back(v);
      packed = kRareTag | (uint64_t{memo_rare_.size() - 1} << 4);
      break;
  }
  if (v.tag == Tag::kDict && index <= UINT32_MAX) dicts_[v.ref].memo_slot = static_cast<uint32_t>(index);
  if (index == memo_.size()) {
    memo_.push_back(packed);
  } else if (index < memo_.size()) {
    key_cache_size_ = 0;  // a memo entry changes value: cached key GETs may be stale
    memo_[index] = packed;
  } else {
    // BINPUT may skip indices; writers number them densely, so a far jump is hostile input.
    if (index > memo_.size() + (uint64_t{1} << 20) || index > data_.size()) {
      return Error(at, absl::StrCat("memo index ", index, " is far beyond the memo size ",
                                    memo_.size()));
    }
    memo_.resize(index + 1, ~uint64_t{0});
    memo_[index] = packed;
  }
  return absl::OkStatus();
}

[[gnu::always_inline]] inline bool PickleDecoder::FastGet(size_t& p, uint64_t& packed) const {
  const auto* d = reinterpret_cast<const uint8_t*>(data_.data());
  size_t size = data_.size();
  uint64_t index;
  if (p + 1 < size && d[p] == BINGET) {
    index = d[p + 1];
    p += 2;
  } else if (p + 4 < size && d[p] == LONG_BINGET) {
    uint32_t v;
    std::memcpy(&v, d + p + 1, 4);
    index = v;
    p += 5;
  } else {
    return false;
  }
  if (index >= memo_.size()) return false;
  packed = memo_[index];
  return packed != ~uint64_t{0};
}

// Memoizes `packed` when the next opcode memoizes; only appends (MEMOIZE, or BINPUT of the next
// index, which is what every writer emits), so a rollback is a truncation.
[[gnu::always_inline]] inline bool PickleDecoder::FastMemoPut(size_t& p, uint64_t packed) {
  const auto* d = reinterpret_cast<const uint8_t*>(data_.data());
  size_t size = data_.size();
  if (p >= size) return false;
  if (d[p] == MEMOIZE) {
    ++p;
  } else if (d[p] == BINPUT) {
    if (p + 1 >= size || d[p + 1] != memo_.size()) return false;
    p += 2;
  } else if (d[p] == LONG_BINPUT) {
    uint32_t v;
    if (p + 4 >= size) return false;
    std::memcpy(&v, d + p + 1, 4);
    if (v != memo_.size()) return false;
    p += 5;
  } else {
    return true;  // not memoized
  }
  memo_.push_back(packed);
  return true;
}

[[gnu::always_inline]] inline bool PickleDecoder::FastInt(size_t& p, int64_t& v) const {
  const auto* d = reinterpret_cast<const uint8_t*>(data_.data());
  size_t size = data_.size();
  if (p + 1 >= size) return false;
  switch (d[p]) {
    case BININT1:
      v = d[p + 1];
      p += 2;
      return true;
    case BININT2: {
      if (p + 2 >= size) return false;
      uint16_t u;
      std::memcpy(&u, d + p + 1, 2);
      v = u;
      p += 3;
      return true;
    }
    case BININT: {
      if (p + 4 >= size) return false;
      int32_t i;
      std::memcpy(&i, d + p + 1, 4);
      v = i;
      p += 5;
      return true;
    }
    case LONG1: {
      size_t n = d[p + 1];
      if (n == 0 || n >= 8 || p + 2 + n > size) return false;
      v = SmallLong(d + p + 2, n, size - (p + 2));
      p += 2 + n;
      return true;
    }
    default:
      return false;
  }
}

// `frames`: a memo GET of a list already interned as a stack, or a new list of memoized frames
// (`EMPTY_LIST [memo] MARK GET... APPENDS`).
inline bool PickleDecoder::FastFrames(size_t& p, StackId& stack) {
  const auto* d = reinterpret_cast<const uint8_t*>(data_.data());
  size_t size = data_.size();
  if (p >= size) return false;
  if (d[p] != EMPTY_LIST) {
    uint64_t packed;
    if (!FastGet(p, packed) || (packed & 15) != static_cast<uint64_t>(Tag::kList)) return false;
    stack = lists_[static_cast<uint32_t>(packed >> 4)].stack;
    return stack.valid();
  }
  ++p;
  auto list = static_cast<uint32_t>(lists_.size());
  lists_.push_back(ListObj{static_cast<uint32_t>(scratch_.size()), 0, StackId(), false});
  if (!FastMemoPut(p, static_cast<uint64_t>(Tag::kList) | (uint64_t{list} << 4))) return false;
  if (p >= size || d[p] != MARK) return false;
  ++p;
  if (!FastFrameBatch(p)) return false;
  stack = snap_.stacks.Intern(frame_scratch_);
  lists_[list].stack = stack;
  return true;
}

inline bool PickleDecoder::FastFrameBatch(size_t& p) {
  frame_scratch_.clear();
  uint64_t packed;
  size_t q = p;
  while (FastGet(q, packed)) {
    if ((packed & 15) != kFrameTag) return false;
    frame_scratch_.push_back(FrameId(static_cast<uint32_t>(packed >> 4)));
    p = q;
  }
  if (p >= data_.size() || static_cast<uint8_t>(data_[p]) != APPENDS || frame_scratch_.empty()) {
    return false;
  }
  ++p;
  return true;
}

void PickleDecoder::TryFrameList() {
  ListObj& l = lists_[stack_.back().ref];
  if (l.count != 0 || l.stack.valid() || l.consumed) return;
  size_t p = pos_;
  if (!FastFrameBatch(p)) return;
  marks_.pop_back();
  l.stack = snap_.stacks.Intern(frame_scratch_);
  pos_ = p;
}

// compile_context / user_metadata as PyTorch writes them when the feature is off: "N/A" or "",
// by memo GET or as a new (possibly memoized) string. Anything else needs the generic path.
inline bool PickleDecoder::FastEmptyText(size_t& p) {
  const auto* d = reinterpret_cast<const uint8_t*>(data_.data());
  size_t size = data_.size();
  if (p + 1 < size && d[p] == SHORT_BINUNICODE) {
    size_t n = d[p + 1];
    StrId id;
    if (n == 0) {
      id = StringPool::kEmpty;
    } else if (n == 3 && p + 5 <= size && std::memcmp(d + p + 2, "N/A", 3) == 0) {
      id = na_;
    } else {
      return false;
    }
    p += 2 + n;
    return FastMemoPut(p, static_cast<uint64_t>(Tag::kStr) | (uint64_t{id.v} << 4));
  }
  uint64_t packed;
  if (!FastGet(p, packed) || (packed & 15) != static_cast<uint64_t>(Tag::kStr)) return false;
  auto ref = static_cast<uint32_t>(packed >> 4);
  return ref == na_.v || ref == StringPool::kEmpty.v;
}

bool PickleDecoder::TryEventDict() {
  const auto* d = reinterpret_cast<const uint8_t*>(data_.data());
  size_t size = data_.size();
  size_t memo_before = memo_.size();
  size_t lists_before = lists_.size();
  auto rollback = [&] {
    memo_.resize(memo_before);
    lists_.resize(lists_before);
    key_cache_size_ = 0;  // its memo indices may be reused differently by the generic path
    return false;
  };
  size_t p = pos_;
  auto record = static_cast<uint32_t>(snap_.events.size());
  if (!FastMemoPut(p, static_cast<uint64_t>(Tag::kEventRef) | (uint64_t{record} << 4))) {
    return rollback();
  }
  if (p >= size || d[p] != MARK) return rollback();
  ++p;
  TraceEvent e;
  bool first = true;
  for (uint32_t item = 0;; ++item) {
    if (p >= size) return rollback();
    if (d[p] == SETITEMS) break;
    // The keys are the same memo GETs, in the same order, entry after entry: compare the GET's
    // bytes with the previous entry's key at this position before resolving them through the memo.
    Key key;
    uint64_t word = 0;
    const bool wide = p + 8 <= size;
    if (wide) std::memcpy(&word, d + p, 8);
    if (item < key_cache_size_ && wide &&
        (word & key_cache_[item].mask) == key_cache_[item].bytes) [[likely]] {
      key = key_cache_[item].key;
      p += key_cache_[item].length;
    } else {
      size_t at = p;
      uint64_t packed;
      if (!FastGet(p, packed) || (packed & 15) != static_cast<uint64_t>(Tag::kStr)) {
        return rollback();
      }
      auto ref = static_cast<uint32_t>(packed >> 4);
      key = ref < key_codes_.size() ? key_codes_[ref] : Key::kOther;
      if (wide && item < kKeyCacheSize) {
        const size_t length = p - at;  // 2 (BINGET) or 5 (LONG_BINGET)
        const uint64_t mask = (uint64_t{1} << (8 * length)) - 1;
        key_cache_[item] = KeyCacheEntry{word & mask, mask, key, static_cast<uint8_t>(length)};
        key_cache_size_ = item + 1;
      }
    }
    if (first && key != Key::kAction) return rollback();
    first = false;
    bool ok = false;
    int64_t v = 0;
    switch (key) {
      case Key::kAction: {
        uint64_t a;
        ok = FastGet(p, a) && (a & 15) == static_cast<uint64_t>(Tag::kStr);
        if (ok) {
          e.action = ActionOf(StrId(static_cast<uint32_t>(a >> 4)));
          ok = e.action != Action::kUnknown;  // unknown actions warn through the generic path
        }
        break;
      }
      // Values out of range (model/limits.h) take the generic path, which fixes and reports them.
      case Key::kAddr:
        ok = FastInt(p, v) && AddressInRange(static_cast<uint64_t>(v));
        e.addr = static_cast<uint64_t>(v);
        break;
      case Key::kDeviceFree:
        ok = FastInt(p, v) && SizeInRange(v);
        e.addr = static_cast<uint64_t>(v);
        break;
      case Key::kSize:
        ok = FastInt(p, v) && SizeInRange(v);
        e.size = v;
        break;
      case Key::kStream:
        ok = FastInt(p, v);
        e.stream = v;
        break;
      case Key::kTimeUs:
        ok = FastInt(p, v) && TimeInRange(v);
        e.time_us = v;
        break;
      case Key::kFrames:
        ok = FastFrames(p, e.stack);
        break;
      case Key::kCompileContext:
      case Key::kUserMetadata:
        ok = FastEmptyText(p);
        break;
      default:
        break;
    }
    if (!ok) return rollback();
  }
  if (first) return rollback();
  snap_.events.push_back(e);
  events_prefault_.Touch(snap_.events);
  EventAppended();
  stack_.push_back(Value{Tag::kEventRef, Kind::kEvent, record, 0});
  pos_ = p + 1;
  return true;
}

absl::StatusOr<Value> PickleDecoder::DecodeLong(size_t at, std::string_view b) {
  size_t n = b.size();
  if (n == 0) return Int(0);
  bool negative = static_cast<unsigned char>(b[n - 1]) & 0x80;
  // Strip redundant sign-extension bytes so the significant width is known.
  size_t sig = n;
  unsigned char fill = negative ? 0xff : 0x00;
  while (sig > 1 && static_cast<unsigned char>(b[sig - 1]) == fill) --sig;
  if (sig <= 8) {
    uint64_t u = 0;
    for (size_t k = 0; k < sig; ++k) u |= uint64_t{static_cast<unsigned char>(b[k])} << (8 * k);
    if (negative) {
      for (size_t k = sig; k < 8; ++k) u |= uint64_t{0xff} << (8 * k);
      // With 8 significant bytes the top bit must be set for a valid int64.
      if (sig == 8 && !(u >> 63)) {
        ++clamped_ints_;
        return Value{Tag::kHugeInt, Kind::kUnset, 1, std::numeric_limits<int64_t>::min()};
      }
      return Int(static_cast<int64_t>(u));
    }
    if (u >> 63) return Value{Tag::kUInt64, Kind::kUnset, 0, static_cast<int64_t>(u)};
    return Int(static_cast<int64_t>(u));
  }
  ++clamped_ints_;
  return Value{Tag::kHugeInt, Kind::kUnset, negative ? 1u : 0u,
               negative ? std::numeric_limits<int64_t>::min()
                        : std::numeric_limits<int64_t>::max()};
}

absl::Status PickleDecoder::PushString(size_t at, size_t n) {
  if (!Need(n)) {
    return Error(at, absl::StrCat("string of ", n, " bytes runs past the end of the input (",
                                  data_.size() - pos_, " bytes left)"));
  }
  StrId id = snap_.strings.Intern(data_.substr(pos_, n));
  pos_ += n;
  stack_.push_back(Value{Tag::kStr, Kind::kUnset, id.v, 0});
  return absl::OkStatus();
}

absl::Status PickleDecoder::Append(size_t at, const Value& list, const Value* items, size_t n) {
  if (list.tag != Tag::kList) {
    return Error(at, absl::StrCat("APPEND(S) to a ", TagName(list.tag), ", not a list"));
  }
  ListObj& l = lists_[list.ref];
  if (l.consumed) {
    return Error(at, "list modified after it was used (shared list mutated: not a snapshot)");
  }
  if (l.stack.valid()) {
    // A batch of frames was interned directly (TryFrameList); more items follow: expand it back.
    auto frames = snap_.stacks.Get(l.stack);
    l.begin = static_cast<uint32_t>(scratch_.size());
    l.count = 0;
    for (FrameId f : frames) {
      scratch_.push_back(Value{Tag::kRun, Kind::kFrame, f.v, 1});
      ++l.count;
    }
    l.stack = StackId();
  }
  if (l.begin + l.count != scratch_.size()) {
    // The list's items are not at the end of the scratch area: move them there.
    RETURN_IF_ERROR(Charge(at, l.count));
    uint32_t new_begin = static_cast<uint32_t>(scratch_.size());
    for (uint32_t k = 0; k < l.count; ++k) scratch_.push_back(scratch_[l.begin + k]);
    l.begin = new_begin;
  }
  for (size_t k = 0; k < n; ++k) {
    const Value& v = items[k];
    // Records (typed dicts, and frames as FrameIds) are stored as runs of record indices.
    Kind kind = Kind::kUnset;
    uint32_t record = 0;
    if (v.tag == Tag::kFrameRef) {
      kind = Kind::kFrame;
      record = v.ref;
    } else if (v.tag == Tag::kEventRef) {
      kind = Kind::kEvent;
      record = v.ref;
    } else if (v.tag == Tag::kDict) {
      const DictObj& d = dicts_[v.ref];
      if (d.kind != Kind::kUnset && d.kind != Kind::kGeneric) {
        kind = d.kind;
        record = d.record;
      }
    }
    if (kind == Kind::kUnset) {
      scratch_.push_back(v);
      ++l.count;
      continue;
    }
    if (l.count > 0) {
      Value& last = scratch_.back();
      if (last.tag == Tag::kRun && last.kind == kind &&
          last.ref + static_cast<uint64_t>(last.i) == record) {
        ++last.i;
        continue;
      }
    }
    scratch_.push_back(Value{Tag::kRun, kind, record, 1});
    ++l.count;
  }
  return absl::OkStatus();
}

Kind PickleDecoder::Classify(const Value* items, size_t n) const {
  // Shortcut: 2.1+ trace entries begin with "action" and frames with "name".
  if (n >= 2 && items[0].tag == Tag::kStr && items[0].ref < key_codes_.size()) {
    Key first = key_codes_[items[0].ref];
    if (first == Key::kAction) return Kind::kEvent;
  }
  bool has[static_cast<int>(Key::kCount)] = {};
  for (size_t k = 0; k < n; k += 2) {
    const Value& key = items[k];
    if (key.tag != Tag::kStr) continue;
    Key code = key.ref < key_codes_.size() ? key_codes_[key.ref] : Key::kOther;
    has[static_cast<int>(code)] = true;
  }
  auto h = [&](Key key) { return has[static_cast<int>(key)]; };
  if (h(Key::kAction)) return Kind::kEvent;
  if (h(Key::kTotalSize)) return Kind::kSegment;
  if (h(Key::kState)) return Kind::kBlock;
  if (h(Key::kFilename) || h(Key::kLine)) return Kind::kFrame;
  if (h(Key::kStage)) return Kind::kAnnotation;
  if (h(Key::kRealSize) || h(Key::kAddr)) return Kind::kHistory;
  if (h(Key::kSegments) || h(Key::kDeviceTraces) || h(Key::kTraces)) return Kind::kTop;
  if (h(Key::kConf) || h(Key::kMaxSplitSize) || h(Key::kExpandableSegments) ||
      h(Key::kGcThreshold) || h(Key::kRoundup)) {
    return Kind::kSettings;
  }
  return Kind::kGeneric;
}

uint32_t PickleDecoder::CreateRecord(Kind kind) {
  switch (kind) {
    case Kind::kEvent:
      snap_.events.emplace_back();
      EventAppended();
      return static_cast<uint32_t>(snap_.events.size() - 1);
    case Kind::kFrame:
      return 0;  // a frame's record is its FrameId, set once its items are known
    case Kind::kSegment:
      segments_.emplace_back();
      return static_cast<uint32_t>(segments_.size() - 1);
    case Kind::kBlock:
      blocks_.emplace_back();
      return static_cast<uint32_t>(blocks_.size() - 1);
    case Kind::kHistory:
      history_.emplace_back();
      return static_cast<uint32_t>(history_.size() - 1);
    case Kind::kAnnotation:
      annotations_.emplace_back();
      return static_cast<uint32_t>(annotations_.size() - 1);
    case Kind::kSettings:
      settings_.emplace_back();
      settings_.back().present = true;
      return static_cast<uint32_t>(settings_.size() - 1);
    case Kind::kTop:
      tops_.emplace_back();
      return static_cast<uint32_t>(tops_.size() - 1);
    case Kind::kGeneric:
    case Kind::kUnset:
      generic_.emplace_back();
      return static_cast<uint32_t>(generic_.size() - 1);
  }
  return 0;
}

absl::Status PickleDecoder::SetItems(size_t at, const Value& dict, const Value* items, size_t n) {
  if (dict.tag == Tag::kEventRef) {
    // More items for a trace entry that the fast path decoded (legal, never written by PyTorch).
    if (n % 2 != 0) return Error(at, "SETITEMS with an odd number of items");
    return ApplyEvent(at, dict.ref, items, n);
  }
  if (dict.tag != Tag::kDict) {
    return Error(at, absl::StrCat("SETITEM(S) on a ", TagName(dict.tag), ", not a dict"));
  }
  if (n % 2 != 0) return Error(at, "SETITEMS with an odd number of items");
  DictObj& d = dicts_[dict.ref];
  if (d.kind == Kind::kUnset) {
    d.kind = Classify(items, n);
    d.record = CreateRecord(d.kind);
  } else if (d.kind == Kind::kGeneric) {
    // CPython sets a dict's items in batches of 1000, so the keys that type a dict may come in a
    // later batch (a snapshot dict with 1,001 other keys before 'segments'): a dict is typed by
    // all its keys. What the earlier batches set with known keys is applied first.
    if (Kind kind = Classify(items, n); kind != Kind::kGeneric) {
      std::vector<Value> all;
      for (const auto& [key, value] : generic_[d.record].items) {
        if (KeyOf(key) == Key::kOther) continue;
        RETURN_IF_ERROR(Charge(at, 1));
        all.push_back(key);
        all.push_back(value);
      }
      all.insert(all.end(), items, items + n);
      d.kind = kind;
      d.record = CreateRecord(kind);
      return SetItems(at, dict, all.data(), all.size());
    }
  }
  if (d.kind == Kind::kFrame) {
    // A frame is complete in one batch (its dict has three keys); intern it by content.
    Frame f;
    f.name = StringPool::kEmpty;
    f.filename = StringPool::kEmpty;
    for (size_t k = 0; k < n; k += 2) {
      if (items[k].tag != Tag::kStr) continue;
      Key key = items[k].ref < key_codes_.size() ? key_codes_[items[k].ref] : Key::kOther;
      const Value& v = items[k + 1];
      if (key == Key::kName) {
        ASSIGN_OR_RETURN(f.name, AsStr(at, "frame", key, v));
      } else if (key == Key::kFilename) {
        ASSIGN_OR_RETURN(f.filename, AsStr(at, "frame", key, v));
      } else if (key == Key::kLine) {
        if (v.tag == Tag::kUInt64 || v.tag == Tag::kHugeInt) {
          f.line = NormalizeLine(0, true);  // 2^64-1 is PyTorch's "unknown line"
        } else {
          ASSIGN_OR_RETURN(f.line, AsInt(at, "frame", key, v));
          f.line = NormalizeLine(f.line, false);
        }
      }
    }
    d.record = snap_.frames.Intern(f).v;
    // Later memo GETs of this dict yield the FrameId directly (frames are 75% of a file's GETs).
    if (d.memo_slot < memo_.size()) memo_[d.memo_slot] = kFrameTag | (uint64_t{d.record} << 4);
    return absl::OkStatus();
  }
  if (d.kind == Kind::kGeneric || d.kind == Kind::kUnset) {
    // Generic dicts are only rendered as text: keep them bounded, except for the items with
    // known keys, which a later batch may need (above).
    auto& g = generic_[d.record].items;
    for (size_t k = 0; k < n; k += 2) {
      if (g.size() < 4096 || KeyOf(items[k]) != Key::kOther) g.emplace_back(items[k], items[k + 1]);
    }
    return absl::OkStatus();
  }
  if (d.kind == Kind::kEvent) return ApplyEvent(at, d.record, items, n);
  for (size_t k = 0; k < n; k += 2) {
    const Value& key = items[k];
    if (key.tag != Tag::kStr) continue;  // non-string keys never occur in snapshots: ignore
    Key code = key.ref < key_codes_.size() ? key_codes_[key.ref] : Key::kOther;
    if (code == Key::kOther) continue;  // unknown keys are ignored (newer PyTorch versions)
    RETURN_IF_ERROR(ApplyItem(at, d.kind, d.record, code, items[k + 1]));
  }
  return absl::OkStatus();
}

std::string PickleDecoder::KeyName(Key key) const {
  for (const auto& [k, name] : kKeyNames) {
    if (k == key) return std::string(name);
  }
  return "?";
}

absl::Status PickleDecoder::TypeError(size_t at, const char* what, Key key, const Value& v,
                                      const char* want) {
  return Error(at, absl::StrCat(what, " key '", KeyName(key), "': expected ", want, ", got ",
                                TagName(v.tag)));
}

absl::StatusOr<int64_t> PickleDecoder::AsInt(size_t at, const char* what, Key key,
                                             const Value& v) {
  switch (v.tag) {
    case Tag::kInt:
      return v.i;
    case Tag::kBool:
      return v.i;
    case Tag::kUInt64:
    case Tag::kHugeInt:
      snap_.diagnostics.Warn(absl::StrCat("offset ", at, ": ", what, " key '", KeyName(key),
                                          "': integer does not fit in 64 bits; clamped"));
      return v.tag == Tag::kUInt64 ? std::numeric_limits<int64_t>::max() : v.i;
    default:
      return TypeError(at, what, key, v, "int");
  }
}

absl::StatusOr<uint64_t> PickleDecoder::AsAddress(size_t at, const char* what, Key key,
                                                  const Value& v) {
  if (v.tag == Tag::kInt || v.tag == Tag::kUInt64) return static_cast<uint64_t>(v.i);
  if (v.tag == Tag::kHugeInt) return AsInt(at, what, key, v);
  return TypeError(at, what, key, v, "int");
}

absl::StatusOr<StrId> PickleDecoder::AsStr(size_t at, const char* what, Key key, const Value& v) {
  if (v.tag == Tag::kStr) return StrId(v.ref);
  return TypeError(at, what, key, v, "str");
}

absl::StatusOr<bool> PickleDecoder::AsBool(size_t at, const char* what, Key key, const Value& v) {
  if (v.tag == Tag::kBool || v.tag == Tag::kInt) return v.i != 0;
  return TypeError(at, what, key, v, "bool");
}

absl::StatusOr<StackId> PickleDecoder::AsStack(size_t at, const char* what, const Value& v) {
  if (v.tag == Tag::kNone) return StackId();
  if (v.tag == Tag::kTuple) {
    // A tuple of frames (never written by PyTorch, but harmless).
    const TupleObj& t = tuples_[v.ref];
    RETURN_IF_ERROR(Charge(at, t.count));
    frame_scratch_.clear();
    for (uint32_t k = 0; k < t.count; ++k) {
      const Value& item = tuple_items_[t.begin + k];
      if (item.tag == Tag::kFrameRef) {
        frame_scratch_.push_back(FrameId(item.ref));
        continue;
      }
      if (item.tag != Tag::kDict || dicts_[item.ref].kind != Kind::kFrame) {
        return Error(at, absl::StrCat(what, " key 'frames': item ", k, " is not a frame"));
      }
      frame_scratch_.push_back(FrameId(dicts_[item.ref].record));
    }
    return snap_.stacks.Intern(frame_scratch_);
  }
  if (v.tag != Tag::kList) return TypeError(at, what, Key::kFrames, v, "list");
  ListObj& l = lists_[v.ref];
  if (l.stack.valid()) return l.stack;
  frame_scratch_.clear();
  uint32_t index = 0;
  for (uint32_t k = 0; k < l.count; ++k) {
    const Value& item = scratch_[l.begin + k];
    if (item.tag == Tag::kRun && item.kind == Kind::kFrame) {
      for (int64_t r = 0; r < item.i; ++r) frame_scratch_.push_back(FrameId(item.ref + r));
      index += static_cast<uint32_t>(item.i);
    } else if (item.tag == Tag::kStr) {
      // 2.0-era `cpp_frames`-like strings inside frames are not frames; skip them.
      ++index;
    } else {
      return Error(at, absl::StrCat(what, " key 'frames': item ", index, " is a ",
                                    item.tag == Tag::kRun ? KindName(item.kind) : TagName(item.tag),
                                    ", not a frame"));
    }
  }
  l.stack = snap_.stacks.Intern(frame_scratch_);
  l.consumed = true;
  if (l.begin + l.count == scratch_.size()) scratch_.resize(l.begin);
  l.count = 0;
  return l.stack;
}

absl::StatusOr<PoolId> PickleDecoder::AsPool(size_t at, const char* what, Key key,
                                             const Value& v) {
  const Value* items = nullptr;
  uint32_t n = 0;
  if (v.tag == Tag::kTuple) {
    items = tuple_items_.data() + tuples_[v.ref].begin;
    n = tuples_[v.ref].count;
  } else if (v.tag == Tag::kList) {
    items = scratch_.data() + lists_[v.ref].begin;
    n = lists_[v.ref].count;
  } else if (v.tag == Tag::kNone) {
    return PoolId{};
  }
  if (items == nullptr || n != 2) return TypeError(at, what, key, v, "a pair of ints");
  PoolId p;
  ASSIGN_OR_RETURN(uint64_t a, AsAddress(at, what, key, items[0]));
  ASSIGN_OR_RETURN(uint64_t b, AsAddress(at, what, key, items[1]));
  p.first = a;
  p.second = b;
  return p;
}

absl::StatusOr<std::pair<uint32_t, uint32_t>> PickleDecoder::AsRecordRange(size_t at,
                                                                           const char* what,
                                                                           Kind kind,
                                                                           const Value& v) {
  if (v.tag != Tag::kList) {
    return Error(at, absl::StrCat(what, ": expected a list of ", KindName(kind), "s, got ",
                                  TagName(v.tag)));
  }
  ListObj& l = lists_[v.ref];
  l.consumed = true;
  if (l.count == 0) return std::pair<uint32_t, uint32_t>{0, 0};
  uint32_t index = 0;
  for (uint32_t k = 0; k < l.count; ++k) {
    const Value& item = scratch_[l.begin + k];
    if (item.tag != Tag::kRun || item.kind != kind) {
      return Error(at, absl::StrCat(what, ": item ", index, " is a ",
                                    item.tag == Tag::kRun ? KindName(item.kind)
                                    : item.tag == Tag::kDict ? KindName(dicts_[item.ref].kind)
                                                             : TagName(item.tag),
                                    ", not a ", KindName(kind)));
    }
    index += static_cast<uint32_t>(item.i);
  }
  const Value& first = scratch_[l.begin];
  if (l.count == 1) return std::pair<uint32_t, uint32_t>{first.ref, static_cast<uint32_t>(first.i)};
  // Several runs (records shared or out of order): copy them into one new contiguous range.
  RETURN_IF_ERROR(Charge(at, index));
  auto copy_range = [&](auto& vec) -> std::pair<uint32_t, uint32_t> {
    uint32_t begin = static_cast<uint32_t>(vec.size());
    for (uint32_t k = 0; k < l.count; ++k) {
      const Value& item = scratch_[l.begin + k];
      for (int64_t r = 0; r < item.i; ++r) vec.push_back(vec[item.ref + r]);
    }
    return {begin, static_cast<uint32_t>(vec.size()) - begin};
  };
  switch (kind) {
    case Kind::kBlock: return copy_range(blocks_);
    case Kind::kSegment: return copy_range(segments_);
    case Kind::kHistory: return copy_range(history_);
    case Kind::kAnnotation: return copy_range(annotations_);
    case Kind::kEvent: {
      uint32_t begin = static_cast<uint32_t>(snap_.events.size());
      for (uint32_t k = 0; k < l.count; ++k) {
        const Value& item = scratch_[l.begin + k];
        for (int64_t r = 0; r < item.i; ++r) {
          uint32_t src = item.ref + static_cast<uint32_t>(r);
          snap_.events.push_back(snap_.events[src]);
          EventAppended();
          if (const EventExtra* x = FindExtra(src)) {
            EventExtra copy = *x;
            copy.event = static_cast<uint32_t>(snap_.events.size() - 1);
            extras_.push_back(copy);  // stays sorted: the copy's index is the largest so far
          }
        }
      }
      return std::pair<uint32_t, uint32_t>{begin,
                                           static_cast<uint32_t>(snap_.events.size()) - begin};
    }
    default:
      return Error(at, absl::StrCat(what, ": unexpected list of ", KindName(kind)));
  }
}

std::string PickleDecoder::RenderText(const Value& v, int depth) const {
  if (depth > 16) return "...";
  switch (v.tag) {
    case Tag::kNone: return "None";
    case Tag::kBool: return v.i ? "True" : "False";
    case Tag::kInt:
    case Tag::kHugeInt: return absl::StrCat(v.i);
    case Tag::kUInt64: return absl::StrCat(static_cast<uint64_t>(v.i));
    case Tag::kFloat: {
      double d;
      std::memcpy(&d, &v.i, sizeof d);
      return absl::StrCat(d);
    }
    case Tag::kStr: return std::string(snap_.strings.Get(StrId(v.ref)));
    case Tag::kDict: {
      const DictObj& d = dicts_[v.ref];
      if (d.kind != Kind::kGeneric) return absl::StrCat("<", KindName(d.kind), ">");
      std::string out = "{";
      bool first = true;
      for (const auto& [k, val] : generic_[d.record].items) {
        absl::StrAppend(&out, first ? "" : ", ", RenderText(k, depth + 1), ": ",
                        RenderText(val, depth + 1));
        first = false;
        // Bounded output bounds the work too: a dict whose values are the same big dict (memo
        // GETs), 16 levels deep, would otherwise render 4096^16 items.
        if (out.size() > kMaxRenderedChars) {
          out += ", ...";
          break;
        }
      }
      return out + "}";
    }
    default: return absl::StrCat("<", TagName(v.tag), ">");
  }
}

void PickleDecoder::ApplyRoundup(const Value& v, AllocatorSettings& s) {
  if (v.tag != Tag::kDict || dicts_[v.ref].kind != Kind::kGeneric) return;
  for (const auto& [k, val] : generic_[dicts_[v.ref].record].items) {
    if (k.tag != Tag::kStr || val.tag != Tag::kInt) continue;
    std::optional<int> bucket = RoundupBucket(snap_.strings.Get(StrId(k.ref)));
    if (!bucket) continue;
    int64_t d = val.i;
    if (FixDivisions(d)) {
      limits_.Note(Limited::kRoundupDivisions, val.i,
                   absl::StrCat("/allocator_settings/roundup_power2_divisions/",
                                Sv(snap_.strings.Get(StrId(k.ref)))));
    }
    s.roundup_power2_divisions[*bucket] = d;
  }
}

absl::Status PickleDecoder::ApplyTraceFlag(size_t at, Key key, const Value& v,
                                           AllocatorSettings& s) {
  // Shape unconfirmed upstream (format §2.6): a bool, an int, or a per-device list.
  auto scalar = [&](const Value& x) -> std::optional<int64_t> {
    if (x.tag == Tag::kBool || x.tag == Tag::kInt) return x.i;
    return std::nullopt;
  };
  std::optional<int64_t> value = scalar(v);
  if (!value && v.tag == Tag::kList) {
    const ListObj& l = lists_[v.ref];
    RETURN_IF_ERROR(Charge(at, l.count));
    for (uint32_t k = 0; k < l.count; ++k) {
      auto x = scalar(scratch_[l.begin + k]);
      if (x) value = key == Key::kTraceOverflowed ? std::max(value.value_or(0), *x != 0 ? int64_t{1} : int64_t{0})
                                                   : std::max(value.value_or(0), *x);
    }
  }
  if (!value) return absl::OkStatus();
  if (key == Key::kTraceOverflowed) {
    s.trace_alloc_overflowed = *value != 0;
  } else {
    s.trace_alloc_max_entries = *value;
  }
  return absl::OkStatus();
}

absl::Status PickleDecoder::ApplyEvent(size_t at, uint32_t record, const Value* items, size_t n) {
  // Items set on an entry after later ones were created (legal, never written by PyTorch).
  if (record < published_) [[unlikely]] InvalidateEvents();
  TraceEvent& e = snap_.events[record];
  for (size_t k = 0; k < n; k += 2) {
    const Value& key = items[k];
    if (key.tag != Tag::kStr) continue;
    Key code = key.ref < key_codes_.size() ? key_codes_[key.ref] : Key::kOther;
    const Value& v = items[k + 1];
    switch (code) {
      case Key::kOther:
        continue;
      case Key::kAction:
        if (v.tag == Tag::kStr) {
          e.action = ActionOf(StrId(v.ref));
          if (e.action != Action::kUnknown) continue;
        }
        break;
      case Key::kAddr:
        if (v.tag == Tag::kInt && AddressInRange(static_cast<uint64_t>(v.i))) {
          e.addr = static_cast<uint64_t>(v.i);
          continue;
        }
        break;
      case Key::kDeviceFree:
        if (v.tag == Tag::kInt && SizeInRange(v.i)) {
          e.addr = static_cast<uint64_t>(v.i);
          continue;
        }
        break;
      case Key::kSize:
        if (v.tag == Tag::kInt && SizeInRange(v.i)) {
          e.size = v.i;
          continue;
        }
        break;
      case Key::kStream:
        if (v.tag == Tag::kInt || v.tag == Tag::kUInt64) {
          e.stream = v.i;
          continue;
        }
        break;
      case Key::kTimeUs:
        if (v.tag == Tag::kInt && TimeInRange(v.i)) {
          e.time_us = v.i;
          continue;
        }
        break;
      case Key::kFrames:
        if (v.tag == Tag::kList && lists_[v.ref].stack.valid()) {
          e.stack = lists_[v.ref].stack;  // a shared traceback seen before
          continue;
        }
        break;
      case Key::kCompileContext:
      case Key::kUserMetadata:
        // "N/A" and "" are what PyTorch writes when the feature is off: nothing to keep.
        if (v.tag == Tag::kStr && (v.ref == na_.v || v.ref == StringPool::kEmpty.v)) continue;
        break;
      default:
        break;
    }
    RETURN_IF_ERROR(ApplyItem(at, Kind::kEvent, record, code, v));
  }
  return absl::OkStatus();
}

absl::Status PickleDecoder::ApplyItem(size_t at, Kind kind, uint32_t record, Key key,
                                      const Value& v) {
  switch (kind) {
    case Kind::kEvent: {
      TraceEvent& e = snap_.events[record];
      constexpr const char* kWhat = "trace entry";
      switch (key) {
        case Key::kAction:
          if (v.tag != Tag::kStr) return TypeError(at, kWhat, key, v, "str");
          e.action = ParseAction(snap_.strings.Get(StrId(v.ref)));
          if (e.action == Action::kUnknown) {
            snap_.diagnostics.Warn(absl::StrCat("offset ", at, ": unknown trace action '",
                                                Sv(snap_.strings.Get(StrId(v.ref))), "'"));
          }
          break;
        case Key::kAddr: {
          ASSIGN_OR_RETURN(e.addr, AsAddress(at, kWhat, key, v));
          if (uint64_t read = e.addr; FixAddress(e.addr)) {
            limits_.NoteRecord(Limited::kEventAddr, read, record);
          }
          break;
        }
        case Key::kDeviceFree: {
          ASSIGN_OR_RETURN(int64_t free, AsInt(at, kWhat, key, v));
          if (int64_t read = free; FixSize(free)) {
            limits_.NoteRecord(Limited::kEventDeviceFree, read, record);
          }
          e.addr = static_cast<uint64_t>(free);
          break;
        }
        case Key::kSize: {
          ASSIGN_OR_RETURN(e.size, AsInt(at, kWhat, key, v));
          if (int64_t read = e.size; FixSize(e.size)) {
            limits_.NoteRecord(Limited::kEventSize, read, record);
          }
          break;
        }
        case Key::kStream: {
          ASSIGN_OR_RETURN(uint64_t s, AsAddress(at, kWhat, key, v));
          e.stream = static_cast<int64_t>(s);
          break;
        }
        case Key::kTimeUs:
          if (v.tag != Tag::kNone) {
            ASSIGN_OR_RETURN(e.time_us, AsInt(at, kWhat, key, v));
            if (int64_t read = e.time_us; FixTime(e.time_us)) {
              limits_.NoteRecord(Limited::kEventTime, read, record);
            }
          }
          break;
        case Key::kFrames: {
          ASSIGN_OR_RETURN(e.stack, AsStack(at, kWhat, v));
          break;
        }
        case Key::kCompileContext:
        case Key::kUserMetadata:
        case Key::kCategory:
        case Key::kPoolId: {
          if (extras_.empty() || extras_.back().event != record) {
            extras_.push_back(EventExtra{});
            extras_.back().event = record;
          }
          EventExtra& x = extras_.back();
          if (key == Key::kPoolId) {
            ASSIGN_OR_RETURN(PoolId p, AsPool(at, kWhat, key, v));
            x.pool = p;
          } else if (v.tag == Tag::kStr) {
            StrId s(v.ref);
            bool empty = s == StringPool::kEmpty || (key == Key::kCompileContext && s == na_);
            if (!empty) {
              (key == Key::kCompileContext ? x.compile_context
               : key == Key::kUserMetadata ? x.user_metadata
                                           : x.category) = s;
            }
          } else if (v.tag == Tag::kDict && key == Key::kUserMetadata) {
            x.user_metadata = snap_.strings.Intern(RenderText(v, 0));
          } else if (v.tag != Tag::kNone) {
            return TypeError(at, kWhat, key, v, "str");
          }
          break;
        }
        default:
          break;
      }
      return absl::OkStatus();
    }
    case Kind::kBlock: {
      BlockRec& b = blocks_[record];
      constexpr const char* kWhat = "block";
      switch (key) {
        case Key::kAddress: {
          ASSIGN_OR_RETURN(b.block.address, AsAddress(at, kWhat, key, v));
          // A stated 2^64-1 is not "no address": keep it out of range for Normalize to report.
          if (b.block.address == kUnknownAddress) --b.block.address;
          break;
        }
        case Key::kSize: {
          ASSIGN_OR_RETURN(b.block.size, AsInt(at, kWhat, key, v));
          break;
        }
        case Key::kRequestedSize: {
          ASSIGN_OR_RETURN(b.block.requested_size, AsInt(at, kWhat, key, v));
          break;
        }
        case Key::kState: {
          if (v.tag != Tag::kStr) return TypeError(at, kWhat, key, v, "str");
          std::string_view s = snap_.strings.Get(StrId(v.ref));
          std::optional<BlockState> state = ParseBlockState(s);
          if (!state) return Error(at, absl::StrCat("block key 'state': unknown state '", Sv(s), "'"));
          b.block.state = *state;
          b.has_state = true;
          break;
        }
        case Key::kFrames: {
          ASSIGN_OR_RETURN(b.block.stack, AsStack(at, kWhat, v));
          break;
        }
        case Key::kHistory: {
          ASSIGN_OR_RETURN(auto range, AsRecordRange(at, "block key 'history'", Kind::kHistory, v));
          if (range.second > 0) b.history = range.first;
          break;
        }
        default:
          break;
      }
      return absl::OkStatus();
    }
    case Kind::kHistory: {
      HistoryRec& h = history_[record];
      constexpr const char* kWhat = "history entry";
      if (key == Key::kAddr) {
        ASSIGN_OR_RETURN(h.addr, AsAddress(at, kWhat, key, v));
      } else if (key == Key::kRealSize) {
        ASSIGN_OR_RETURN(h.real_size, AsInt(at, kWhat, key, v));
      } else if (key == Key::kFrames) {
        ASSIGN_OR_RETURN(h.stack, AsStack(at, kWhat, v));
      }
      return absl::OkStatus();
    }
    case Kind::kSegment: {
      SegmentRec& r = segments_[record];
      Segment& s = r.segment;
      constexpr const char* kWhat = "segment";
      switch (key) {
        case Key::kDevice: {
          ASSIGN_OR_RETURN(int64_t d, AsInt(at, kWhat, key, v));
          if (!ValidDeviceOrdinal(d)) return Error(at, absl::StrCat("segment key 'device': ", d, " is not a device ordinal"));
          s.device = static_cast<int32_t>(d);
          break;
        }
        case Key::kAddress: {
          ASSIGN_OR_RETURN(s.address, AsAddress(at, kWhat, key, v));
          break;
        }
        case Key::kTotalSize: {
          ASSIGN_OR_RETURN(s.total_size, AsInt(at, kWhat, key, v));
          break;
        }
        case Key::kAllocatedSize: {
          ASSIGN_OR_RETURN(s.allocated_size, AsInt(at, kWhat, key, v));
          break;
        }
        case Key::kActiveSize: {
          ASSIGN_OR_RETURN(s.active_size, AsInt(at, kWhat, key, v));
          break;
        }
        case Key::kRequestedSize: {
          ASSIGN_OR_RETURN(s.requested_size, AsInt(at, kWhat, key, v));
          break;
        }
        case Key::kStream: {
          ASSIGN_OR_RETURN(uint64_t st, AsAddress(at, kWhat, key, v));
          s.stream = static_cast<int64_t>(st);
          break;
        }
        case Key::kSegmentType: {
          ASSIGN_OR_RETURN(StrId t, AsStr(at, kWhat, key, v));
          s.is_small = snap_.strings.Get(t) == "small";
          break;
        }
        case Key::kSegmentPoolId: {
          ASSIGN_OR_RETURN(s.pool, AsPool(at, kWhat, key, v));
          break;
        }
        case Key::kIsExpandable: {
          ASSIGN_OR_RETURN(s.is_expandable, AsBool(at, kWhat, key, v));
          break;
        }
        case Key::kFrames: {
          ASSIGN_OR_RETURN(s.stack, AsStack(at, kWhat, v));
          break;
        }
        case Key::kBlocks: {
          ASSIGN_OR_RETURN(auto range, AsRecordRange(at, "segment key 'blocks'", Kind::kBlock, v));
          r.blocks_begin = range.first;
          r.blocks_count = range.second;
          break;
        }
        default:
          break;
      }
      return absl::OkStatus();
    }
    case Kind::kAnnotation: {
      Annotation& a = annotations_[record];
      constexpr const char* kWhat = "annotation";
      if (key == Key::kDevice) {
        ASSIGN_OR_RETURN(int64_t d, AsInt(at, kWhat, key, v));
        a.device = static_cast<int32_t>(d);
      } else if (key == Key::kTimeUs) {
        ASSIGN_OR_RETURN(a.time_us, AsInt(at, kWhat, key, v));
        if (int64_t read = a.time_us; FixTime(a.time_us)) {
          limits_.NoteRecord(Limited::kAnnotationTime, read, record);
        }
      } else if (key == Key::kStage && v.tag == Tag::kStr) {
        a.stage = StrId(v.ref);
      } else if (key == Key::kName && v.tag == Tag::kStr) {
        a.name = StrId(v.ref);
      }
      return absl::OkStatus();
    }
    case Kind::kSettings: {
      AllocatorSettings& s = settings_[record];
      constexpr const char* kWhat = "allocator_settings";
      switch (key) {
        case Key::kConf:
          if (v.tag == Tag::kStr) s.conf = std::string(snap_.strings.Get(StrId(v.ref)));
          break;
        case Key::kMaxSplitSize: {
          ASSIGN_OR_RETURN(s.max_split_size, AsInt(at, kWhat, key, v));
          s.max_split_size = NormalizeMaxSplitSize(s.max_split_size, v.tag == Tag::kUInt64);
          if (int64_t read = s.max_split_size; FixMaxSplitSize(s.max_split_size)) {
            limits_.Note(Limited::kMaxSplitSize, read, "/allocator_settings/max_split_size");
          }
          break;
        }
        case Key::kGcThreshold:
          if (v.tag == Tag::kFloat) {
            std::memcpy(&s.garbage_collection_threshold, &v.i, sizeof(double));
          } else if (v.tag == Tag::kInt) {
            s.garbage_collection_threshold = static_cast<double>(v.i);
          } else {
            return TypeError(at, kWhat, key, v, "float");
          }
          break;
        case Key::kExpandableSegments: {
          ASSIGN_OR_RETURN(s.expandable_segments, AsBool(at, kWhat, key, v));
          break;
        }
        case Key::kReleaseLock: {
          ASSIGN_OR_RETURN(s.release_lock_on_cudamalloc, AsBool(at, kWhat, key, v));
          break;
        }
        case Key::kPinnedHostRegister: {
          ASSIGN_OR_RETURN(s.pinned_use_cuda_host_register, AsBool(at, kWhat, key, v));
          break;
        }
        case Key::kGraphReuse: {
          ASSIGN_OR_RETURN(s.graph_capture_record_stream_reuse, AsBool(at, kWhat, key, v));
          break;
        }
        case Key::kPinnedThreads: {
          ASSIGN_OR_RETURN(s.pinned_num_register_threads, AsInt(at, kWhat, key, v));
          break;
        }
        case Key::kRoundup:
          ApplyRoundup(v, s);
          break;
        case Key::kTraceOverflowed:
        case Key::kTraceMaxEntries:
          return ApplyTraceFlag(at, key, v, s);
        default:
          break;
      }
      return absl::OkStatus();
    }
    case Kind::kTop: {
      TopRec& t = tops_[record];
      if (key == Key::kSegments) t.segments = v;
      if (key == Key::kDeviceTraces || key == Key::kTraces) {
        t.device_traces = v;
        traces_key_ = key == Key::kTraces ? "traces" : "device_traces";
      }
      if (key == Key::kAllocatorSettings) t.settings = v;
      if (key == Key::kExternalAnnotations) t.annotations = v;
      return absl::OkStatus();
    }
    default:
      return absl::OkStatus();
  }
}

absl::Status PickleDecoder::FinishSegments(size_t at, const Value& list) {
  ASSIGN_OR_RETURN(auto range, AsRecordRange(at, "'segments'", Kind::kSegment, list));
  snap_.segments.reserve(range.second);
  for (uint32_t k = 0; k < range.second; ++k) {
    SegmentRec& r = segments_[range.first + k];
    Segment s = r.segment;
    s.first_block = static_cast<uint32_t>(snap_.blocks.size());
    s.num_blocks = r.blocks_count;
    RETURN_IF_ERROR(Charge(at, r.blocks_count));
    for (uint32_t b = 0; b < r.blocks_count; ++b) {
      BlockRec& rec = blocks_[r.blocks_begin + b];
      Block block = rec.block;
      if (!rec.has_state) {
        return Error(at, absl::StrCat("segments/", k, "/blocks/", b, ": block has no 'state'"));
      }
      if (rec.history) {
        snap_.source.legacy_history = true;
        // Fallbacks of format §3.3 from history[0], which describes the block itself only while it
        // is active: an inactive block's history lists earlier occupants at other addresses. The
        // address is left to Normalize(), which lays blocks out from the segment start.
        const HistoryRec& h = history_[*rec.history];
        if (block.is_active()) {
          if (block.requested_size == kNoRequestedSize) block.requested_size = h.real_size;
          if (!block.stack.valid()) block.stack = h.stack;
        }
      }
      snap_.blocks.push_back(block);
    }
    snap_.segments.push_back(s);
  }
  return absl::OkStatus();
}

absl::Status PickleDecoder::FinishTraces(size_t at, const Value& list) {
  if (list.tag != Tag::kList) {
    return Error(at, absl::StrCat("'device_traces': expected a list, got ", TagName(list.tag)));
  }
  const ListObj& outer = lists_[list.ref];
  std::vector<Value> inner(scratch_.begin() + outer.begin,
                           scratch_.begin() + outer.begin + outer.count);
  std::vector<std::pair<uint32_t, uint32_t>> ranges;
  for (size_t d = 0; d < inner.size(); ++d) {
    std::string what = absl::StrCat("device_traces/", d);
    ASSIGN_OR_RETURN(auto range, AsRecordRange(at, what.c_str(), Kind::kEvent, inner[d]));
    ranges.push_back(range);
  }
  trace_ranges_ = ranges;
  // Fast path: the device lists tile the event vector in order (what every writer produces).
  bool tiled = true;
  uint32_t cursor = 0;
  for (const auto& [begin, count] : ranges) {
    if (count == 0) continue;
    if (begin != cursor) tiled = false;
    cursor = begin + count;
  }
  if (cursor != snap_.events.size()) tiled = false;
  if (tiled) {
    cursor = 0;
    for (size_t d = 0; d < ranges.size(); ++d) {
      uint32_t count = ranges[d].second;
      uint32_t begin = count == 0 ? cursor : ranges[d].first;
      snap_.traces.push_back(DeviceTrace{static_cast<int32_t>(d), begin, begin + count});
      cursor = begin + count;
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
    uint32_t begin = static_cast<uint32_t>(events.size());
    for (uint32_t k = 0; k < ranges[d].second; ++k) {
      uint32_t src = ranges[d].first + k;
      events.push_back(snap_.events[src]);
      if (const EventExtra* x = FindExtra(src)) {
        EventExtra copy = *x;
        copy.event = static_cast<uint32_t>(events.size() - 1);
        extras.push_back(copy);
      }
    }
    snap_.traces.push_back(DeviceTrace{static_cast<int32_t>(d), begin,
                                       static_cast<uint32_t>(events.size())});
  }
  snap_.events = std::move(events);
  snap_.event_extras = std::move(extras);
  return absl::OkStatus();
}

void PickleDecoder::PublishEvents() {
  const size_t n = snap_.events.size();
  if (n == snap_.events.capacity()) {
    observer_->Release();  // the next append moves the vector
    next_publish_ = n + 1;
    return;
  }
  // The newest entry may still get its items (CreateRecord comes before SetItems).
  published_ = n - 1;
  observer_->Publish(snap_.events.data(), published_);
  next_publish_ = std::min(n + kPublishEvery, snap_.events.capacity());
}

std::string PickleDecoder::RecordPath(Limited kind, uint32_t record) const {
  std::string_view key;
  switch (kind) {
    case Limited::kEventSize:
      key = "size";
      break;
    case Limited::kEventAddr:
      key = "addr";
      break;
    case Limited::kEventDeviceFree:
      key = "device_free";
      break;
    case Limited::kEventTime:
      key = "time_us";
      break;
    case Limited::kAnnotationTime: {
      auto [begin, count] = annotation_range_;
      if (record >= begin && record - begin < count) {
        return absl::StrCat("/external_annotations/", record - begin, "/time_us");
      }
      return "an annotation outside external_annotations";
    }
    default:
      return "?";
  }
  for (size_t d = 0; d < trace_ranges_.size(); ++d) {
    auto [begin, count] = trace_ranges_[d];
    if (record >= begin && record - begin < count) {
      return absl::StrCat("/", Sv(traces_key_), "/", d, "/", record - begin, "/", Sv(key));
    }
  }
  return absl::StrCat("a trace entry outside ", Sv(traces_key_), " (", Sv(key), ")");
}

absl::Status PickleDecoder::Finish(size_t at, const Value& root) {
  // Every entry is complete now; what follows may reorder or drop them.
  if (observer_ != nullptr) {
    published_ = snap_.events.size();
    observer_->Publish(snap_.events.data(), published_);
    observer_->Release();
  }
  if (root.tag == Tag::kList) {
    // 1.13 / torch.cuda.memory_snapshot(): the segments list alone.
    snap_.source.bare_segment_list = true;
    RETURN_IF_ERROR(FinishSegments(at, root));
    InvalidateEvents();
    snap_.events.clear();
    return absl::OkStatus();
  }
  if (root.tag != Tag::kDict || dicts_[root.ref].kind != Kind::kTop) {
    if (root.tag == Tag::kDict && dicts_[root.ref].kind == Kind::kUnset) {
      return Error(at, "the pickle holds an empty dict, not a snapshot");
    }
    return Error(at, absl::StrCat(
                         "the pickle holds a ",
                         root.tag == Tag::kDict ? KindName(dicts_[root.ref].kind) : TagName(root.tag),
                         ", not a snapshot (expected a dict with 'segments' or a list of segments)"));
  }
  TopRec& top = tops_[dicts_[root.ref].record];
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
    if (v.tag == Tag::kDict && dicts_[v.ref].kind == Kind::kSettings) {
      snap_.settings = settings_[dicts_[v.ref].record];
    } else if (v.tag == Tag::kDict) {
      snap_.settings.present = true;  // an empty or unrecognised settings dict
    } else if (v.tag != Tag::kNone) {
      return Error(at, absl::StrCat("'allocator_settings': expected a dict, got ", TagName(v.tag)));
    }
  }
  if (top.annotations) {
    ASSIGN_OR_RETURN(auto range,
                     AsRecordRange(at, "'external_annotations'", Kind::kAnnotation, *top.annotations));
    annotation_range_ = range;
    snap_.annotations.assign(annotations_.begin() + range.first,
                             annotations_.begin() + range.first + range.second);
  }
  if (clamped_ints_ > 0) {
    snap_.diagnostics.Warn(absl::StrCat(clamped_ints_,
                                        " integer(s) wider than 64 bits were clamped"));
  }
  limits_.ResolveRecords([&](Limited kind, uint32_t record) { return RecordPath(kind, record); });
  limits_.AddWarnings(snap_.diagnostics);
  return absl::OkStatus();
}

absl::StatusOr<Snapshot> PickleDecoder::Run() {
  if (data_.size() < 2 || static_cast<uint8_t>(data_[0]) != PROTO) {
    return Error(0, "not a pickle (missing PROTO opcode)");
  }
  int protocol = static_cast<uint8_t>(data_[1]);
  if (protocol < 2 || protocol > 5) {
    return Error(1, absl::StrCat("unsupported pickle protocol ", protocol,
                                 " (snapshots use protocols 2 to 5)"));
  }
  snap_.source.container = ContainerFormat::kPickle;
  snap_.source.pickle_protocol = protocol;
  snap_.source.file_bytes = data_.size();
  pos_ = 2;
  size_t next_release = 8 << 20;
  while (true) {
    if (pos_ >= data_.size()) {
      return Error(pos_, "unexpected end of input (truncated pickle: no STOP opcode)");
    }
    if (pos_ >= next_release) {
      input_.ReleaseBefore(pos_);
      next_release = pos_ + (8 << 20);
    }
    if (stack_.size() > kMaxStackDepth || marks_.size() > kMaxStackDepth) [[unlikely]] {
      // Writers batch list and dict items by 1000 (CPython's _BATCHSIZE), so a snapshot's stack
      // stays a few thousand values deep; a deeper one is an attempt to exhaust memory.
      return Error(pos_, absl::StrCat("pickle stack deeper than ", kMaxStackDepth,
                                      " values: not a snapshot"));
    }
    size_t at = pos_;
    uint8_t op = static_cast<uint8_t>(data_[pos_++]);
    switch (op) {
      case FRAME:
        if (!Need(8)) return Error(at, "truncated FRAME");
        pos_ += 8;
        break;
      case PROTO:
        if (!Need(1)) return Error(at, "truncated PROTO");
        ++pos_;
        break;
      case MEMOIZE:
        RETURN_IF_ERROR(MemoPut(at, memo_.size()));
        break;
      case BINPUT:
        if (!Need(1)) return Error(at, "truncated BINPUT");
        RETURN_IF_ERROR(MemoPut(at, ReadLE<uint8_t>()));
        break;
      case LONG_BINPUT:
        if (!Need(4)) return Error(at, "truncated LONG_BINPUT");
        RETURN_IF_ERROR(MemoPut(at, ReadLE<uint32_t>()));
        break;
      case BINGET:
        if (!Need(1)) return Error(at, "truncated BINGET");
        if (uint64_t index = ReadLE<uint8_t>(); !TryMemoGet(index)) return MemoError(at, index);
        break;
      case LONG_BINGET:
        if (!Need(4)) return Error(at, "truncated LONG_BINGET");
        if (uint64_t index = ReadLE<uint32_t>(); !TryMemoGet(index)) return MemoError(at, index);
        break;
      case MARK:
        marks_.push_back(stack_.size());
        if (!stack_.empty() && stack_.back().tag == Tag::kList) TryFrameList();
        break;
      case POP: {
        ASSIGN_OR_RETURN(Value ignored, Pop(at));
        (void)ignored;
        break;
      }
      case POP_MARK: {
        ASSIGN_OR_RETURN(size_t m, PopMark(at));
        stack_.resize(m);
        break;
      }
      case DUP:
        if (stack_.size() <= StackFloor()) return Error(at, "DUP on an empty stack");
        stack_.push_back(stack_.back());
        break;
      case NONE:
        stack_.push_back(Value{});
        break;
      case NEWTRUE:
      case NEWFALSE:
        stack_.push_back(Value{Tag::kBool, Kind::kUnset, 0, op == NEWTRUE ? 1 : 0});
        break;
      case BININT1:
        if (!Need(1)) return Error(at, "truncated BININT1");
        stack_.push_back(Int(ReadLE<uint8_t>()));
        break;
      case BININT2:
        if (!Need(2)) return Error(at, "truncated BININT2");
        stack_.push_back(Int(ReadLE<uint16_t>()));
        break;
      case BININT:
        if (!Need(4)) return Error(at, "truncated BININT");
        stack_.push_back(Int(ReadLE<int32_t>()));
        break;
      case LONG1:
      case LONG4: {
        size_t n;
        if (op == LONG1) {
          if (!Need(1)) return Error(at, "truncated LONG1");
          n = ReadLE<uint8_t>();
        } else {
          if (!Need(4)) return Error(at, "truncated LONG4");
          int32_t len = ReadLE<int32_t>();
          if (len < 0) return Error(at, "LONG4 with a negative length");
          n = static_cast<size_t>(len);
        }
        if (!Need(n)) {
          return Error(at, absl::StrCat(op == LONG1 ? "LONG1" : "LONG4", " of ", n,
                                        " bytes runs past the end of the input"));
        }
        if (n > 0 && n < 8) {
          // Fast path: addresses, sizes and time_us are 5 to 7 byte LONG1s.
          stack_.push_back(Int(SmallLong(reinterpret_cast<const uint8_t*>(data_.data()) + pos_, n,
                                         data_.size() - pos_)));
          pos_ += n;
          break;
        }
        ASSIGN_OR_RETURN(Value v, DecodeLong(at, data_.substr(pos_, n)));
        pos_ += n;
        stack_.push_back(v);
        break;
      }
      case BINFLOAT: {
        if (!Need(8)) return Error(at, "truncated BINFLOAT");
        uint64_t bits = 0;
        for (int k = 0; k < 8; ++k) bits = (bits << 8) | static_cast<uint8_t>(data_[pos_ + k]);
        pos_ += 8;  // big-endian IEEE double
        stack_.push_back(Value{Tag::kFloat, Kind::kUnset, 0, static_cast<int64_t>(bits)});
        break;
      }
      case SHORT_BINUNICODE:
      case SHORT_BINSTRING:
      case SHORT_BINBYTES:
        if (!Need(1)) return Error(at, "truncated string length");
        RETURN_IF_ERROR(PushString(at, ReadLE<uint8_t>()));
        break;
      case BINUNICODE:
      case BINSTRING:
      case BINBYTES: {
        if (!Need(4)) return Error(at, "truncated string length");
        uint32_t n = ReadLE<uint32_t>();
        RETURN_IF_ERROR(PushString(at, n));
        break;
      }
      case BINUNICODE8:
      case BINBYTES8: {
        if (!Need(8)) return Error(at, "truncated string length");
        uint64_t n = ReadLE<uint64_t>();
        if (n > data_.size()) {
          return Error(at, absl::StrCat("string of ", n, " bytes runs past the end of the input"));
        }
        RETURN_IF_ERROR(PushString(at, static_cast<size_t>(n)));
        break;
      }
      case EMPTY_DICT:
        if (!TryEventDict()) stack_.push_back(NewDict());
        break;
      case EMPTY_LIST:
        stack_.push_back(NewList());
        break;
      case EMPTY_TUPLE:
        stack_.push_back(NewTuple(nullptr, 0));
        break;
      case TUPLE1:
      case TUPLE2:
      case TUPLE3: {
        size_t n = op - TUPLE1 + 1;
        if (stack_.size() < StackFloor() + n) return Error(at, "stack underflow in TUPLEn");
        Value t = NewTuple(stack_.data() + stack_.size() - n, n);
        stack_.resize(stack_.size() - n);
        stack_.push_back(t);
        break;
      }
      case TUPLE:
      case LIST:
      case DICT: {
        ASSIGN_OR_RETURN(size_t m, PopMark(at));
        size_t n = stack_.size() - m;
        Value c;
        if (op == TUPLE) {
          c = NewTuple(stack_.data() + m, n);
        } else if (op == LIST) {
          c = NewList();
          RETURN_IF_ERROR(Append(at, c, stack_.data() + m, n));
        } else {
          c = NewDict();
          RETURN_IF_ERROR(SetItems(at, c, stack_.data() + m, n));
        }
        stack_.resize(m);
        stack_.push_back(c);
        break;
      }
      case APPEND: {
        if (stack_.size() < StackFloor() + 2) return Error(at, "stack underflow in APPEND");
        RETURN_IF_ERROR(Append(at, stack_[stack_.size() - 2], &stack_.back(), 1));
        stack_.pop_back();
        break;
      }
      case APPENDS: {
        ASSIGN_OR_RETURN(size_t m, PopMark(at));
        if (m == 0 || m <= StackFloor()) return Error(at, "APPENDS without a list below its MARK");
        RETURN_IF_ERROR(Append(at, stack_[m - 1], stack_.data() + m, stack_.size() - m));
        stack_.resize(m);
        break;
      }
      case SETITEM: {
        if (stack_.size() < StackFloor() + 3) return Error(at, "stack underflow in SETITEM");
        size_t n = stack_.size();
        RETURN_IF_ERROR(SetItems(at, stack_[n - 3], stack_.data() + n - 2, 2));
        stack_.resize(n - 2);
        break;
      }
      case SETITEMS: {
        ASSIGN_OR_RETURN(size_t m, PopMark(at));
        if (m == 0 || m <= StackFloor()) return Error(at, "SETITEMS without a dict below its MARK");
        RETURN_IF_ERROR(SetItems(at, stack_[m - 1], stack_.data() + m, stack_.size() - m));
        stack_.resize(m);
        break;
      }
      case STOP: {
        if (!marks_.empty()) return Error(at, "STOP with an open MARK");
        if (stack_.size() != 1) {
          return Error(at, absl::StrCat("STOP with ", stack_.size(),
                                        " values on the stack (expected 1)"));
        }
        RETURN_IF_ERROR(Finish(at, stack_.back()));
        // Anything after STOP is ignored (HTML payloads are NUL padded).
        return std::move(snap_);
      }
      default: {
        if (const char* name = RefusedOpcodeName(op)) {
          return Error(at, absl::StrCat("refusing pickle opcode ", name,
                                        ": it would import or call code, and a memory snapshot "
                                        "never contains it (the file is not a snapshot, or is "
                                        "hostile)"));
        }
        return Error(at, absl::StrFormat("unsupported pickle opcode 0x%02x ('%s')", op,
                                         op >= 0x20 && op < 0x7f ? std::string(1, char(op))
                                                                 : std::string("?")));
      }
    }
  }
}

}  // namespace

absl::StatusOr<Snapshot> ParsePickle(io::InputSource& input, EventObserver* observer) {
  PickleDecoder decoder(input, observer);
  return decoder.Run();
}

}  // namespace memsnap::parse
