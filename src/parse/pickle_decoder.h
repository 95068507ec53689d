// The pickle decoder (docs/reader.md, "The pickle decoder"): a pickle virtual machine that
// understands only data opcodes and writes typed records instead of Python objects. Its parts:
//
//   pickle_vm.cpp         the machine: the opcode loop, the stack and the memo (hot parts inline
//                         here), containers and lists of records
//   pickle_records.cpp    the typing of dicts by their keys (schema.h) and the generic path that
//                         sets their fields through the schema's setters
//   pickle_fast_path.cpp  the fast paths for the bulk of a file: whole trace entries
//                         (TryEventDict) and lists of memoized frames (TryFrameList)
//   pickle_assemble.cpp   the final assembly of the records into a Snapshot, and the streaming
//                         of trace entries to an EventObserver
//
//   stack_:   [Value...]            the VM stack; MARKs live in marks_ as stack positions
//   memo_:    [uint32]              packed values (see MemoPut); dense, indexed by MEMOIZE/BINPUT
//   dicts_:   dict handle  -> {record kind, record index}
//   lists_:   list handle  -> {items in scratch_[begin, begin+count), cached StackId}
//   scratch_: list items (Values; runs compress consecutive records)
#pragma once

#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "memsnap/io/input.h"
#include "memsnap/model/limits.h"
#include "memsnap/model/snapshot.h"
#include "memsnap/parse/event_observer.h"
#include "memsnap/util/memory.h"
#include "memsnap/util/narrow.h"
#include "memsnap/util/status_macros.h"
#include "memsnap/util/strings.h"
#include "parse/schema.h"

namespace memsnap::parse {

/// Decoding choices for tests: the fast paths are an optimisation that must not change the model
/// (tests/unit/pickle_fast_path_test.cpp and the fuzz_pickle_paths target compare both ways).
struct PickleOptions {
  bool fast_paths = true;
  /// Threads for the parallel decoding of one pickle (pickle_parallel.cpp): 1 decodes on the
  /// calling thread alone. Only with the fast paths, protocol 4 or 5 and at least
  /// `parallel_min_bytes` of input; whatever the threads do, the model is the sequential one.
  size_t threads = 1;
  size_t parallel_min_bytes = size_t{16} << 20;
  /// Bytes of input per speculatively decoded chunk; 0 chooses from the size and the threads.
  /// Tests set it below a FRAME's size to make more chunks than frames.
  size_t parallel_chunk_bytes = 0;
  /// Tests: the sequential decoder leaves every chunk to the workers and waits for each, so that
  /// what it adopts does not depend on how the threads are scheduled.
  bool parallel_wait_for_workers = false;
  /// The memory budget (ReadOptions::max_memory; 0: none), checked every 8 MiB of input and at
  /// the end against what the model holds so far (ModelBytes).
  uint64_t max_memory = 0;
  /// When set, told what the parallel decoding did (tests, --timings).
  struct ParallelStats* stats = nullptr;
};

/// What the parallel decoding of one pickle did.
struct ParallelStats {
  size_t chunks = 0;             // chunks planned (0: decoded sequentially throughout)
  size_t chunks_speculated = 0;  // decoded by a worker
  size_t segments_adopted = 0;
  size_t events_adopted = 0;  // trace entries a worker decoded, of snap.events
};

/// ParsePickle (reader.h) with options.
absl::StatusOr<Snapshot> ParsePickleWith(io::InputSource& input, EventObserver* observer,
                                         const PickleOptions& options);

namespace pickle {

enum class Tag : uint8_t {
  kNone,
  kBool,
  kInt,       // fits int64
  kUInt64,    // in [2^63, 2^64): bits stored in i
  kHugeInt,   // does not fit 64 bits; i holds the clamped value
  kFloat,     // bits of a double in i
  kStr,       // ref = StrId
  kDict,      // ref = dict handle
  kList,      // ref = list handle
  kTuple,     // ref = tuple handle
  kRun,       // list item only: records [ref, ref + i) of kind `kind`
  kFrameRef,  // a frame dict already interned: ref = FrameId (memo GETs of frames yield this)
  kEventRef,  // a trace-entry dict decoded by the fast path (TryEventDict): ref = event record
};
const char* TagName(Tag t);

struct Value {
  Tag tag = Tag::kNone;
  Rec kind = Rec::kUnset;  // for kRun
  uint32_t ref = 0;
  int64_t i = 0;
};
static_assert(sizeof(Value) == 16);

inline Value Int(int64_t v) { return Value{Tag::kInt, Rec::kUnset, 0, v}; }

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
  void Grow();
  std::unique_ptr<Value[]> storage_;
  Value* base_ = nullptr;
  Value* top_ = nullptr;
  Value* end_ = nullptr;
};

// Opcodes (pickletools names).
enum : uint8_t {
  MARK = '(',
  STOP = '.',
  POP = '0',
  POP_MARK = '1',
  DUP = '2',
  BININT = 'J',
  BININT1 = 'K',
  BININT2 = 'M',
  NONE = 'N',
  BINUNICODE = 'X',
  APPEND = 'a',
  EMPTY_DICT = '}',
  APPENDS = 'e',
  BINGET = 'h',
  LONG_BINGET = 'j',
  EMPTY_LIST = ']',
  BINPUT = 'q',
  LONG_BINPUT = 'r',
  SETITEM = 's',
  TUPLE = 't',
  EMPTY_TUPLE = ')',
  SETITEMS = 'u',
  BINFLOAT = 'G',
  LIST = 'l',
  DICT = 'd',
  BINSTRING = 'T',
  SHORT_BINSTRING = 'U',
  BINBYTES = 'B',
  SHORT_BINBYTES = 'C',
  PROTO = 0x80,
  TUPLE1 = 0x85,
  TUPLE2 = 0x86,
  TUPLE3 = 0x87,
  NEWTRUE = 0x88,
  NEWFALSE = 0x89,
  LONG1 = 0x8a,
  LONG4 = 0x8b,
  SHORT_BINUNICODE = 0x8c,
  BINUNICODE8 = 0x8d,
  BINBYTES8 = 0x8e,
  EMPTY_SET = 0x8f,
  FRAME = 0x95,
  MEMOIZE = 0x94,
  // Refused: they import or call code, or are not data.
  GLOBAL = 'c',
  STACK_GLOBAL = 0x93,
  REDUCE = 'R',
  BUILD = 'b',
  INST = 'i',
  OBJ = 'o',
  NEWOBJ = 0x81,
  NEWOBJ_EX = 0x92,
  PERSID = 'P',
  BINPERSID = 'Q',
  EXT1 = 0x82,
  EXT2 = 0x83,
  EXT4 = 0x84,
};

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

// Memo entries pack a Value into 32 bits: tag in the low 4 bits, a 28-bit ref above it. Values
// that carry a 64-bit payload (ints, floats), and refs of 2^28 or more (a trace entry of a file of
// more than about 6 GB), go to memo_rare_ and are referenced from there. CPython never memoizes
// ints, so the rare table stays empty on real files. Every trace entry is memoized: 4 bytes an
// entry rather than 8 saved 2,200 page faults and 9 MB of peak memory on a 2.2 M-event file.
using MemoWord = uint32_t;
inline constexpr MemoWord kRareTag = 15;
inline constexpr MemoWord kFrameTag = static_cast<MemoWord>(Tag::kFrameRef);
inline constexpr MemoWord kUnsetMemo = ~MemoWord{0};
inline constexpr uint32_t kMemoRefLimit = uint32_t{1} << 28;

struct DictObj {
  uint32_t record = 0;
  Rec kind = Rec::kUnset;
  uint32_t memo_slot = UINT32_MAX;  // where MEMOIZE/BINPUT stored it, to retag frames
};

struct ListObj {
  uint32_t begin = 0;  // items in scratch_
  uint32_t count = 0;
  StackId stack;  // cached once the list was used as `frames`
  bool consumed = false;
};

struct TupleObj {
  uint32_t begin = 0;  // items in tuple_items_
  uint32_t count = 0;
};

struct GenericDict {
  std::vector<std::pair<Value, Value>> items;
};

class PickleField;
struct SpecChunk;
struct SpecState;

// What the speculative decoders of a parallel decoding read (pickle_parallel.cpp): the decoder's
// state when the plan was made, fixed from then on and shared by every worker.
struct SpecHead {
  std::vector<MemoWord> memo;
  std::vector<StackId> list_stacks;  // lists_[i].stack
  std::vector<uint8_t> actions;      // StrId -> Action of every string interned so far
  std::vector<Key> key_codes;        // StrId -> Key: the head's strings, as the head numbered them
  StrId na;                          // the head's "N/A"
  StackTable stacks;
  StreamTable streams;
};

class Decoder {
 public:
  Decoder(io::InputSource& input, EventObserver* observer, const PickleOptions& options);
  // A speculative decoder of one chunk (pickle_parallel.cpp): memo GETs below the head's memo size
  // read `head`, its own memo, lists and events are the chunk's, numbered from 0.
  Decoder(io::InputSource& input, const SpecHead* head, size_t chunk_bytes);
  // An error return destroys the events: nothing may be reading them then. Speculative workers
  // are joined first.
  ~Decoder();
  Decoder(const Decoder&) = delete;
  Decoder& operator=(const Decoder&) = delete;

  absl::StatusOr<Snapshot> Run();

  /// The deepest VM stack (and MARK stack) accepted.
  static constexpr size_t kMaxStackDepth = size_t{1} << 20;

 private:
  friend class PickleField;

  // ---- errors ----
  absl::Status Error(size_t at, std::string_view what) const {
    return absl::InvalidArgumentError(absl::StrCat(input_.name(), ": offset ", at, ": ", Sv(what)));
  }
  // `n`, a count or index of `what` the model holds in 32 bits (or a device ordinal in 31), or an
  // error naming the file and offset: never wrapped around.
  template <class To = uint32_t>
  absl::StatusOr<To> Narrow(size_t at, uint64_t n, std::string_view what) const {
    if (std::optional<To> v = CheckedCast<To>(n)) [[likely]] {
      return *v;
    }
    return Error(at, absl::StrCat(n, " ", Sv(what), ": more than the model holds (",
                                  std::numeric_limits<To>::max(), ")"));
  }

  // ---- the machine (pickle_vm.cpp) ----
  bool Need(size_t n) const { return data_.size() - pos_ >= n; }
  template <typename T>
  T ReadLE() {
    T v;
    std::memcpy(&v, data_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  // A FRAME at `at` whose `length` runs past the end of the input (the sequential decoder and
  // the parallel decoding's workers refuse it alike).
  absl::Status FrameError(size_t at, uint64_t length) const {
    return Error(at, absl::StrCat("FRAME of ", length, " bytes runs past the end of the input (",
                                  data_.size() - std::min(data_.size(), at + 9),
                                  " bytes left): pickle data was truncated"));
  }
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
  absl::Status MemoPut(size_t at, uint64_t index);
  // Pushes memo entry `index`; false when there is none. Inline: GETs are most of the opcodes of
  // a real file.
  // The value pushed carries the GET's offset `at` in `i` when it is a dict (i is unused for
  // dicts, strings, lists, tuples and None): a record re-used by reference is reported there
  // (NoteReuse).
  [[gnu::always_inline]] bool TryMemoGet(uint64_t index, size_t at) {
    if (index >= memo_.size()) [[unlikely]]
      return false;
    MemoWord packed = memo_[index];
    if (packed == kUnsetMemo) [[unlikely]]
      return false;
    MemoWord tag = packed & 15;
    if (tag == kRareTag) [[unlikely]] {
      Value v = memo_rare_[static_cast<uint32_t>(packed >> 4)];
      if (v.tag == Tag::kDict || v.tag == Tag::kEventRef) v.i = static_cast<int64_t>(at);
      stack_.push_back(v);
    } else {
      stack_.push_back(Value{static_cast<Tag>(tag), Rec::kUnset, static_cast<uint32_t>(packed >> 4),
                             static_cast<int64_t>(at)});
    }
    return true;
  }
  // A memo entry for `tag` and `ref`: packed when the ref fits, else through memo_rare_.
  [[gnu::always_inline]] MemoWord PackMemo(Tag tag, uint32_t ref) {
    if (ref < kMemoRefLimit) [[likely]]
      return static_cast<MemoWord>(tag) | (ref << 4);
    return PackRare(Value{tag, Rec::kUnset, ref, 0});
  }
  // kUnsetMemo once the rare table is full (2^28 - 1 values): a GET of the entry then fails.
  MemoWord PackRare(const Value& v) {
    if (memo_rare_.size() >= kMemoRefLimit - 1) [[unlikely]]
      return kUnsetMemo;
    memo_rare_.push_back(v);
    return kRareTag | (static_cast<MemoWord>(memo_rare_.size() - 1) << 4);
  }
  absl::Status MemoError(size_t at, uint64_t index) const {
    return Error(at, absl::StrCat("memo reference ", index, " beyond memo size ", memo_.size()));
  }
  Value NewDict() {
    dicts_.push_back(DictObj{});
    return Value{Tag::kDict, Rec::kUnset, static_cast<uint32_t>(dicts_.size() - 1), 0};
  }
  Value NewList() {
    lists_.push_back(ListObj{static_cast<uint32_t>(scratch_.size()), 0, StackId(), false});
    return Value{Tag::kList, Rec::kUnset, static_cast<uint32_t>(lists_.size() - 1), 0};
  }
  Value NewTuple(const Value* items, size_t n) {
    TupleObj t{static_cast<uint32_t>(tuple_items_.size()), static_cast<uint32_t>(n)};
    tuple_items_.insert(tuple_items_.end(), items, items + n);
    tuples_.push_back(t);
    return Value{Tag::kTuple, Rec::kUnset, static_cast<uint32_t>(tuples_.size() - 1), 0};
  }
  absl::Status Append(size_t at, const Value& list, const Value* items, size_t n);
  // Each record (trace entry, block, segment, history entry, annotation) goes into one list once:
  // PyTorch's pickler writes every dict once. A record appended again (a memo GET of a dict
  // already in a list, or a DUP) is dropped and counted (docs/reader.md, "Records re-used by
  // reference"), so that a file repeating one memo reference costs what its distinct records
  // cost. While every append is of the next record in creation order (every writer's), `next` is
  // all there is to it; the first append out of that order switches its kind to a bitmap.
  struct RecordUses {
    uint32_t next = 0;           // records below it are in a list; none at or above it (no bits)
    std::vector<uint64_t> bits;  // once records were appended out of order: which are in a list
    uint64_t reused = 0;         // appends dropped
    size_t first_at = 0;         // where the first dropped one was appended or read by GET
    uint32_t first_record = 0;
  };
  static constexpr int kTrackedRecs = static_cast<int>(Rec::kHistory) + 1;
  RecordUses uses_[kTrackedRecs];
  // Whether `record` of `kind` (not a frame) is appended for the first time, marking it.
  [[gnu::always_inline]] bool FirstUse(Rec kind, uint32_t record) {
    const int k = static_cast<int>(kind);
    if (k >= kTrackedRecs) return true;
    RecordUses& u = uses_[k];
    if (record == u.next && u.bits.empty()) [[likely]] {
      u.next = record + 1;
      return true;
    }
    return FirstUseSlow(u, record);
  }
  bool FirstUseSlow(RecordUses& u, uint32_t record);
  void NoteReuse(size_t at, const Value& item, Rec kind, uint32_t record);
  // The warnings of the records dropped by FirstUse, for Finish.
  void WarnReuses();

  // ---- parallel decoding of one pickle (pickle_parallel.cpp) ----
  // Called at the top of the opcode loop once pos_ reaches spec_next_: makes the plan and starts
  // the workers (the first time), adopts a speculatively decoded segment that starts exactly at
  // pos_ (which moves pos_ past it), and sets spec_next_ to the next segment's start.
  absl::Status AtSpeculationPoint();
  // Starts the workers at the beginning of the head; the first finds the chunks' starts
  // (FindChunkStarts) while this thread decodes the head, then all wait for MakePlan at its end.
  void StartWorkers();
  // The chunks' starts from `from` on, about `chunk_bytes` apart: each the first EMPTY_DICT at an
  // opcode boundary of the first FRAME at or after its cut (FindFrame).
  std::vector<size_t> FindChunkStarts(size_t from, size_t chunk_bytes) const;
  // The first FRAME header at or after `from` within 256 KiB whose frame and the next two chain,
  // or SIZE_MAX.
  size_t FindFrame(size_t from) const;
  // At the end of the head: the chunks from the walk, and the head's copy for the workers.
  void MakePlan();
  absl::Status Adopt(SpecChunk& c, size_t seg_index, bool& adopted);
  // The worker's loop over one chunk [begin, end): events by TryEventDict<true>, MARK, APPENDS
  // and FRAME; anything else ends a segment (and is skipped to the next loop top it can find).
  void Speculate(SpecChunk& c);
  // The VM's APPENDS, shared by the opcode loop and the adoption of speculated segments.
  absl::Status OpAppends(size_t at) {
    ASSIGN_OR_RETURN(size_t m, PopMark(at));
    if (m == 0 || m <= StackFloor()) return Error(at, "APPENDS without a list below its MARK");
    RETURN_IF_ERROR(Append(at, stack_[m - 1], stack_.data() + m, stack_.size() - m));
    stack_.resize(m);
    return absl::OkStatus();
  }
  // ---- the memory budget (pickle_assemble.cpp) ----
  // About what the model and the decoder's arrays hold now (sizes, not reserved capacity).
  uint64_t ModelBytes() const;
  // An error when ModelBytes() plus `more` is over the budget.
  absl::Status CheckBudget(size_t at, uint64_t more = 0) const {
    if (max_memory_ == 0) [[likely]]
      return absl::OkStatus();
    return CheckBudgetSlow(at, more);
  }
  absl::Status CheckBudgetSlow(size_t at, uint64_t more) const;
  uint64_t max_memory_ = 0;

  size_t threads_ = 1;
  size_t parallel_min_bytes_ = 0;
  size_t parallel_chunk_bytes_ = 0;
  bool parallel_wait_ = false;
  ParallelStats own_stats_;
  ParallelStats* stats_ = &own_stats_;
  // Shows what the parallel decoding did under --timings (util/timer.h).
  void NoteParallelDecoding() const;
  size_t spec_next_ = SIZE_MAX;  // the next position where AtSpeculationPoint has work
  struct SpecStateDeleter {
    void operator()(SpecState* s) const;
  };
  std::unique_ptr<SpecState, SpecStateDeleter> spec_;
  const SpecHead* head_ = nullptr;  // set in a speculative decoder only
  std::vector<uint8_t> head_seen_;  // head memo entries read (speculative decoder)
  std::vector<uint32_t> head_reads_;

  // ---- the fast paths (pickle_fast_path.cpp) ----
  // A new list filled with memo GETs of frames, `MARK (BINGET|LONG_BINGET)* APPENDS`, the
  // commonest shape of a real file. Called right after that MARK: when the whole batch is frame
  // GETs it interns the stack directly and consumes the batch, skipping the VM stack; otherwise
  // it leaves pos_ untouched and decoding proceeds normally.
  void TryFrameList();
  // kSpec: the speculative decoder's variant (pickle_parallel.cpp): memo GETs only of the head's
  // entries (recorded, for the adoption to check), memo puts only by MEMOIZE, actions from the
  // head's table. Otherwise the same code, so a speculated entry is what the sequential path gives.
  // Trace entries, the bulk of every file. Called right after EMPTY_DICT: when the dict is
  // memoized, its first key is "action" and every item has the shape PyTorch writes (memo GETs of
  // known keys, small ints in range, actions and "N/A" by memo GET, frames by memo GET or as a
  // new list of memoized frames), it decodes the whole entry straight into a TraceEvent, pushes a
  // kEventRef and returns true. Otherwise it undoes its memo and list entries and returns false
  // with pos_ untouched, and the generic path decodes the entry (and reports its errors).
  template <bool kSpec = false>
  bool TryEventDict();
  // Pieces of TryEventDict; each reads at p, advances it on success, and returns false when the
  // bytes are not the expected shape (the caller then rolls back).
  template <bool kSpec = false>
  bool FastGet(size_t& p, MemoWord& packed);
  template <bool kSpec = false>
  bool MemoLookup(uint64_t index, MemoWord& packed);
  template <bool kSpec = false>
  bool FastMemoPut(size_t& p, MemoWord packed);
  bool FastInt(size_t& p, int64_t& v) const;
  template <bool kSpec = false>
  bool FastFrames(size_t& p, StackId& stack);
  // `(BINGET|LONG_BINGET of a frame)+ APPENDS` at p: the frames in frame_scratch_, p past APPENDS.
  template <bool kSpec = false>
  bool FastFrameBatch(size_t& p);
  template <bool kSpec = false>
  bool FastEmptyText(size_t& p, bool na_is_empty);
  // The previous trace entry's keys by position: the bytes of their memo GETs and what they set.
  // Valid while the memo entries they name keep their values: cleared when the memo is
  // overwritten (BINPUT to an existing index) or truncated (a rollback).
  struct KeyCacheEntry {
    uint64_t bytes = 0;
    uint64_t mask = 0;
    Field field = Field::kNone;
    uint8_t length = 0;
  };
  static constexpr uint32_t kKeyCacheSize = 16;
  KeyCacheEntry key_cache_[kKeyCacheSize];
  uint32_t key_cache_size_ = 0;

  // Whole-entry layouts (docs/reader.md, "The trace-entry fast path"): when the previous entry's
  // keys, as the key cache holds them, are one of the orders PyTorch writes, the next entry is
  // decoded by code unrolled for that order: each key a masked compare with the cached bytes, each
  // value by the decoder of its field, one bounds check for the whole entry. An entry that does
  // not fit (another order, a new stack, a value in another form) takes the loop over the keys,
  // which then sets the layout from its own keys.
  enum class Layout : uint8_t { kNone, kFull, kCompileContext, kTime, kNoTime };
  // What one entry can occupy in a layout: 8 keys and values of at most 5 + 9 bytes, SETITEMS,
  // and the 8-byte loads that read past the last opcode.
  static constexpr size_t kLayoutMaxBytes = 8 * (5 + 9) + 1 + 8;
  // How far ahead of an entry TryEventDict prefetches the input: about 13 entries of PyTorch's
  // (76 bytes each); 512 to 4096 measured the same.
  static constexpr size_t kPrefetchAhead = 1024;
  Layout layout_ = Layout::kNone;
  // When the memo entries the cached keys name may have changed.
  void ForgetKeys() {
    key_cache_size_ = 0;
    layout_ = Layout::kNone;
  }
  void SetLayout(uint32_t items);
  template <bool kSpec>
  bool DecodeEventItems(size_t& p, TraceEvent& e, int64_t& stream, int64_t& negative);
  template <bool kSpec>
  bool DecodeByLayout(size_t& p, TraceEvent& e, int64_t& stream, int64_t& negative);
  template <bool kSpec, const auto& kFields>
  bool DecodeLayout(size_t& p, TraceEvent& e, int64_t& stream, int64_t& negative);
  template <bool kSpec, Field kField>
  bool DecodeLayoutItem(const uint8_t* d, size_t& p, const KeyCacheEntry& key, TraceEvent& e,
                        int64_t& stream, int64_t& negative);
  template <bool kSpec>
  bool LayoutGet(const uint8_t* d, size_t& p, MemoWord& packed);
  static bool LayoutInt(const uint8_t* d, size_t& p, int64_t& v);

  // ---- typing and the generic path (pickle_records.cpp) ----
  // Interns `text` into the snapshot's pool, keeping key_codes_ over every StrId: a string is
  // looked up in the schema (KeyOfName) once, when it first appears. Nothing is interned ahead:
  // a small input does not pay for the whole key table.
  StrId InternText(std::string_view text) {
    const StrId id = snap_.strings.Intern(text);
    if (id.v >= key_codes_.size()) [[unlikely]]
      CodeNewStrings();
    return id;
  }
  void CodeNewStrings();
  Key KeyOf(const Value& key) const {
    return key.tag == Tag::kStr && key.ref < key_codes_.size() ? key_codes_[key.ref] : Key::kOther;
  }
  absl::Status SetItems(size_t at, const Value& dict, const Value* items, size_t n);
  Rec Classify(const Value* items, size_t n) const;
  uint32_t CreateRecord(Rec kind);
  absl::Status ApplyItems(size_t at, Rec kind, uint32_t record, const Value* items, size_t n);
  absl::Status SetFrameDict(size_t at, DictObj& d, const Value* items, size_t n);
  // Inline for the strings already resolved (every trace entry asks), the rest out of line.
  [[gnu::always_inline]] Action ActionOf(StrId id) {
    if (id.v < action_cache_.size() && action_cache_[id.v] != kActionUnresolved) [[likely]]
      return static_cast<Action>(action_cache_[id.v]);
    return ResolveAction(id);
  }
  Action ResolveAction(StrId id) {
    if (id.v >= action_cache_.size()) action_cache_.resize(id.v + 1, kActionUnresolved);
    uint8_t& a = action_cache_[id.v];
    if (a == kActionUnresolved) a = static_cast<uint8_t>(ParseAction(snap_.strings.Get(id)));
    return static_cast<Action>(a);
  }
  static constexpr uint8_t kActionUnresolved = 0xff;
  std::vector<uint8_t> action_cache_;  // StrId -> Action, filled lazily
  // Typed extraction; `what` and `key` name the value in messages.
  absl::StatusOr<int64_t> AsInt(size_t at, Rec what, Key key, const Value& v);
  absl::StatusOr<uint64_t> AsAddress(size_t at, Rec what, Key key, const Value& v);
  absl::StatusOr<StackId> AsStack(size_t at, Rec what, const Value& v);
  absl::StatusOr<PoolId> AsPool(size_t at, Rec what, Key key, const Value& v);
  absl::StatusOr<std::pair<uint32_t, uint32_t>> AsRecordRange(size_t at, std::string_view what,
                                                              Rec kind, const Value& v);
  absl::Status TypeError(size_t at, Rec what, Key key, const Value& v, std::string_view want);
  std::string RenderText(const Value& v, int depth) const;
  // The record a dict was typed as, whichever path typed it: the fast path's kEventRef and
  // kFrameRef are the generic path's event and frame dicts (kUnset for a value that is not a dict).
  Rec DictKind(const Value& v) const {
    if (v.tag == Tag::kEventRef) return Rec::kEvent;
    if (v.tag == Tag::kFrameRef) return Rec::kFrame;
    return v.tag == Tag::kDict ? dicts_[v.ref].kind : Rec::kUnset;
  }
  EventExtra& ExtraOf(uint32_t event) {
    if (extras_.empty() || extras_.back().event != event) {
      extras_.push_back(EventExtra{});
      extras_.back().event = event;
    }
    return extras_.back();
  }
  // extras_ is sorted by event: records are created in increasing order.
  const EventExtra* FindExtra(uint32_t event) const {
    auto it = std::lower_bound(extras_.begin(), extras_.end(), event,
                               [](const EventExtra& x, uint32_t e) { return x.event < e; });
    return it != extras_.end() && it->event == event ? &*it : nullptr;
  }

  // ---- final assembly and streaming (pickle_assemble.cpp) ----
  absl::Status Finish(size_t at, const Value& root);
  absl::Status FinishSegments(size_t at, const Value& list);
  absl::Status FinishTraces(size_t at, const Value& list);
  std::string RecordPath(Limited kind, uint32_t record) const;
  // After every append to snap_.events: one compare unless an observer is due.
  void EventAppended() {
    if (snap_.events.size() >= next_publish_) [[unlikely]]
      PublishEvents();
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
  absl::Status Charge(size_t at, uint64_t n) {
    copies_ += n;
    if (copies_ > data_.size() + (uint64_t{1} << 16)) [[unlikely]] {
      return Error(at,
                   absl::StrCat("objects are shared or re-read too many times (", copies_,
                                " copies for ", data_.size(), " bytes of input): not a snapshot"));
    }
    return absl::OkStatus();
  }

  io::InputSource& input_;
  std::string_view data_;
  size_t pos_ = 0;
  const bool fast_paths_;
  Snapshot snap_;
  StrId na_;
  std::vector<Key> key_codes_;  // StrId -> Key (kOther for other strings), see InternText

  VmStack stack_;
  std::vector<size_t> marks_;
  std::vector<MemoWord> memo_;
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
  std::vector<TopRec<Value>> tops_;
  std::vector<EventExtra> extras_;  // of the events that have any, by event record
  std::vector<FrameId> frame_scratch_;
  // The stream of the last entry TryEventDict decoded, and its id in snap_.streams (ids never
  // change once given).
  int64_t last_stream_ = 0;
  StreamId last_stream_id_ = StreamTable::kDefault;
  uint64_t clamped_ints_ = 0;
  uint64_t copies_ = 0;
  LimitReport limits_;  // values out of range (model/limits.h), paths resolved by Finish
  // Where Finish found the trace entries and annotations, to name a record's key path.
  Key traces_key_ = Key::kDeviceTraces;
  std::vector<std::pair<uint32_t, uint32_t>> trace_ranges_;
  std::pair<uint32_t, uint32_t> annotation_range_{0, 0};
  Prefaulter events_prefault_;
  // Streaming decoded events to an observer (event_observer.h): every kPublishEvery events, and
  // whenever the vector is full (the next append moves it). SIZE_MAX: no observer.
  static constexpr size_t kPublishEvery = 16384;
  EventObserver* observer_ = nullptr;
  size_t next_publish_ = SIZE_MAX;
  size_t published_ = 0;
};

}  // namespace pickle
}  // namespace memsnap::parse
