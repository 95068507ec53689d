// The pickle decoder's fast paths (pickle_decoder.h): whole trace entries and lists of memoized
// frames decoded straight from the bytes, for the shapes PyTorch writes. They resolve keys through
// the schema (schema.h) and only decode values; whatever they do not recognise is left to the
// generic path, so they can make decoding faster but never different
// (tests/unit/pickle_fast_path_test.cpp and the fuzz_pickle_paths target compare both ways).
//
// Included only by pickle_vm.cpp: the opcode loop calls TryEventDict for every EMPTY_DICT and
// TryFrameList for every MARK after a new list, and in the loop's translation unit the compiler
// inlines them (a call into another translation unit cost 10-20% of `summary` on a 2.2 M-event
// file, docs/BENCHMARKS.md).
#pragma once

#include <cstring>
#include <iterator>
#include <span>
#include <utility>

#include "parse/pickle_decoder.h"

namespace memsnap::parse::pickle {

// A memo GET (BINGET or LONG_BINGET) at p: its index. kChecked = false: the caller checked
// that 5 bytes are readable from p.
template <bool kChecked>
[[gnu::always_inline]] inline bool GetIndexAt(const uint8_t* d, size_t size, size_t& p,
                                              uint64_t& index) {
  if (d[p] == BINGET && (!kChecked || p + 1 < size)) {
    index = d[p + 1];
    p += 2;
    return true;
  }
  if (d[p] == LONG_BINGET && (!kChecked || p + 4 < size)) {
    uint32_t v;
    std::memcpy(&v, d + p + 1, 4);
    index = v;
    p += 5;
    return true;
  }
  return false;
}

template <bool kSpec>
[[gnu::always_inline]] inline bool Decoder::FastGet(size_t& p, MemoWord& packed) {
  uint64_t index;
  return p < data_.size() &&
         GetIndexAt<true>(reinterpret_cast<const uint8_t*>(data_.data()), data_.size(), p, index) &&
         MemoLookup<kSpec>(index, packed);
}

template <bool kSpec>
[[gnu::always_inline]] inline bool Decoder::MemoLookup(uint64_t index, MemoWord& packed) {
  if constexpr (kSpec) {
    // Only the head's entries: the chunk's own are numbered from a base it does not know, and
    // those made between the head and the chunk are not decoded yet. Each entry read is recorded
    // once, for the adoption to check that it still holds this value.
    if (index >= head_->memo.size()) return false;
    packed = head_->memo[index];
    if (packed == kUnsetMemo) return false;
    if (!head_seen_[index]) {
      head_seen_[index] = 1;
      head_reads_.push_back(static_cast<uint32_t>(index));
    }
    return true;
  } else {
    if (index >= memo_.size()) return false;
    packed = memo_[index];
    return packed != kUnsetMemo;
  }
}

// Memoizes `packed` when the next opcode memoizes; only appends (MEMOIZE, or BINPUT of the next
// index, which is what every writer emits), so a rollback is a truncation.
template <bool kSpec>
[[gnu::always_inline]] inline bool Decoder::FastMemoPut(size_t& p, MemoWord packed) {
  const auto* d = reinterpret_cast<const uint8_t*>(data_.data());
  size_t size = data_.size();
  if (p >= size) return false;
  if (d[p] == MEMOIZE) {
    ++p;
  } else if (kSpec && (d[p] == BINPUT || d[p] == LONG_BINPUT)) {
    return false;  // its index is absolute: the speculative decoder does not know the memo size
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

// The largest magnitude FastInt decodes (LONG1 of at most 7 bytes): a non-negative address or
// time from it is in range without a check of its own.
inline constexpr int64_t kFastIntMax = int64_t{1} << 55;
static_assert(kFastIntMax <= static_cast<int64_t>(kMaxAddress) && kFastIntMax <= kMaxTimeUs);

// The integer opcodes the fast paths take (BININT1, BININT2, BININT, LONG1 of 1 to 7 bytes) at
// p, in `size` bytes. kChecked = false: the caller checked that 10 bytes are readable from p
// (a whole-entry layout checks its entry once).
template <bool kChecked>
[[gnu::always_inline]] inline bool IntAt(const uint8_t* d, size_t size, size_t& p, int64_t& v) {
  if (kChecked && p + 1 >= size) return false;
  switch (d[p]) {
    case BININT1:
      v = d[p + 1];
      p += 2;
      return true;
    case BININT2: {
      if (kChecked && p + 2 >= size) return false;
      uint16_t u;
      std::memcpy(&u, d + p + 1, 2);
      v = u;
      p += 3;
      return true;
    }
    case BININT: {
      if (kChecked && p + 4 >= size) return false;
      int32_t i;
      std::memcpy(&i, d + p + 1, 4);
      v = i;
      p += 5;
      return true;
    }
    case LONG1: {
      const size_t n = d[p + 1];
      if (n == 0 || n >= 8 || (kChecked && p + 2 + n > size)) return false;
      v = SmallLong(d + p + 2, n, kChecked ? size - (p + 2) : 8);
      p += 2 + n;
      return true;
    }
    default:
      return false;
  }
}

[[gnu::always_inline]] inline bool Decoder::FastInt(size_t& p, int64_t& v) const {
  return IntAt<true>(reinterpret_cast<const uint8_t*>(data_.data()), data_.size(), p, v);
}

// `frames`: a memo GET of a list already interned as a stack, or a new list of memoized frames
// (`EMPTY_LIST [memo] MARK GET... APPENDS`). Always inlined: TryEventDict passes its position by
// reference, and a call that is not inlined keeps that position in memory for the whole entry
// loop (+9% instructions on `top` of the 2.2 M-event benchmark, docs/BENCHMARKS.md).
template <bool kSpec>
[[gnu::always_inline]] inline bool Decoder::FastFrames(size_t& p, StackId& stack) {
  const auto* d = reinterpret_cast<const uint8_t*>(data_.data());
  size_t size = data_.size();
  if (p >= size) return false;
  if (d[p] != EMPTY_LIST) {
    MemoWord packed;
    if (!FastGet<kSpec>(p, packed) || (packed & 15) != static_cast<MemoWord>(Tag::kList)) {
      return false;
    }
    if constexpr (kSpec) {
      stack = head_->list_stacks[static_cast<uint32_t>(packed >> 4)];
    } else {
      stack = lists_[static_cast<uint32_t>(packed >> 4)].stack;
    }
    return stack.valid();
  }
  ++p;
  auto list = static_cast<uint32_t>(lists_.size());
  lists_.push_back(ListObj{static_cast<uint32_t>(scratch_.size()), 0, StackId(), false});
  if (!FastMemoPut<kSpec>(p, PackMemo(Tag::kList, list))) return false;
  if (p >= size || d[p] != MARK) return false;
  ++p;
  if (!FastFrameBatch<kSpec>(p)) return false;
  stack = snap_.stacks.Intern(frame_scratch_);
  lists_[list].stack = stack;
  return true;
}

template <bool kSpec>
[[gnu::always_inline]] inline bool Decoder::FastFrameBatch(size_t& p) {
  frame_scratch_.clear();
  MemoWord packed;
  size_t q = p;
  while (FastGet<kSpec>(q, packed)) {
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

inline void Decoder::TryFrameList() {
  // The list must be directly below the MARK just pushed: behind a second MARK it is out of
  // APPENDS' reach, which the generic path (like Python) refuses.
  if (marks_.size() >= 2 && marks_[marks_.size() - 2] == stack_.size()) return;
  ListObj& l = lists_[stack_.back().ref];
  if (l.count != 0 || l.stack.valid() || l.consumed) return;
  size_t p = pos_;
  if (!FastFrameBatch(p)) return;
  marks_.pop_back();
  l.stack = snap_.stacks.Intern(frame_scratch_);
  pos_ = p;
}

// compile_context / user_metadata as PyTorch writes them when the feature is off: "" for either,
// "N/A" for compile_context only (SetEvent, schema.h, keeps a user_metadata of "N/A" as text), by
// memo GET or as a new (possibly memoized) string. Anything else needs the generic path.
template <bool kSpec>
inline bool Decoder::FastEmptyText(size_t& p, bool na_is_empty) {
  const auto* d = reinterpret_cast<const uint8_t*>(data_.data());
  size_t size = data_.size();
  if (p + 1 < size && d[p] == SHORT_BINUNICODE) {
    size_t n = d[p + 1];
    StrId id;
    if (n == 0) {
      id = StringPool::kEmpty;
    } else if (na_is_empty && n == 3 && p + 5 <= size && std::memcmp(d + p + 2, "N/A", 3) == 0) {
      id = na_;
    } else {
      return false;
    }
    p += 2 + n;
    return FastMemoPut<kSpec>(p, PackMemo(Tag::kStr, id.v));
  }
  MemoWord packed;
  if (!FastGet<kSpec>(p, packed) || (packed & 15) != static_cast<MemoWord>(Tag::kStr)) return false;
  auto ref = static_cast<uint32_t>(packed >> 4);
  return (na_is_empty && ref == na_.v) || ref == StringPool::kEmpty.v;
}

// ---- Whole-entry layouts (pickle_decoder.h, Layout) ----
// The readers below read at most 9 bytes past p unchecked: the caller checked kLayoutMaxBytes.

template <bool kSpec>
[[gnu::always_inline]] inline bool Decoder::LayoutGet(const uint8_t* d, size_t& p,
                                                      MemoWord& packed) {
  uint64_t index;
  return GetIndexAt<false>(d, 0, p, index) && MemoLookup<kSpec>(index, packed);
}

// FastInt without its bounds checks: the same shapes and values.
[[gnu::always_inline]] inline bool Decoder::LayoutInt(const uint8_t* d, size_t& p, int64_t& v) {
  return IntAt<false>(d, 0, p, v);
}

// One key and its value. Each field is decoded as the loop in TryEventDict decodes it, in the
// forms the entries of a run of one stack-sharing trace take (memo GETs for strings and stacks):
// anything else returns false and the loop decodes the entry.
template <bool kSpec, Field kField>
[[gnu::always_inline]] inline bool Decoder::DecodeLayoutItem(const uint8_t* d, size_t& p,
                                                             const KeyCacheEntry& key,
                                                             TraceEvent& e, int64_t& stream,
                                                             int64_t& negative) {
  uint64_t word;
  std::memcpy(&word, d + p, 8);
  if ((word & key.mask) != key.bytes) return false;
  p += key.length;
  int64_t v;
  if constexpr (kField == Field::kEventAction) {
    MemoWord a;
    if (!LayoutGet<kSpec>(d, p, a) || (a & 15) != static_cast<MemoWord>(Tag::kStr)) return false;
    if constexpr (kSpec) {
      if ((a >> 4) >= head_->actions.size()) return false;
      e.action = static_cast<Action>(head_->actions[a >> 4]);
    } else {
      e.action = ActionOf(StrId(static_cast<uint32_t>(a >> 4)));
    }
    return e.action != Action::kUnknown;
  } else if constexpr (kField == Field::kEventAddr) {
    if (!LayoutInt(d, p, v)) return false;
    e.addr = static_cast<uint64_t>(v);
    negative |= v;
    return true;
  } else if constexpr (kField == Field::kEventSize) {
    if (!LayoutInt(d, p, v) || !SizeInRange(v)) return false;
    e.size = v;
    return true;
  } else if constexpr (kField == Field::kEventStream) {
    return LayoutInt(d, p, stream);
  } else if constexpr (kField == Field::kEventTime) {
    if (!LayoutInt(d, p, v)) return false;
    e.time_us = v;
    negative |= v;
    return true;
  } else if constexpr (kField == Field::kEventCompileContext ||
                       kField == Field::kEventUserMetadata) {
    MemoWord packed;
    if (!LayoutGet<kSpec>(d, p, packed) || (packed & 15) != static_cast<MemoWord>(Tag::kStr)) {
      return false;
    }
    const auto ref = static_cast<uint32_t>(packed >> 4);
    // "N/A" means "off" for compile_context only (FastEmptyText).
    return ref == StringPool::kEmpty.v || (kField == Field::kEventCompileContext && ref == na_.v);
  } else {
    static_assert(kField == Field::kEventFrames);
    MemoWord packed;
    if (!LayoutGet<kSpec>(d, p, packed) || (packed & 15) != static_cast<MemoWord>(Tag::kList)) {
      return false;
    }
    if constexpr (kSpec) {
      e.stack = head_->list_stacks[static_cast<uint32_t>(packed >> 4)];
    } else {
      e.stack = lists_[static_cast<uint32_t>(packed >> 4)].stack;
    }
    return e.stack.valid();
  }
}

// The key orders PyTorch has written for a trace entry, one per Decoder::Layout (counted on real
// snapshots: docs/reader.md, "The trace-entry fast path").
inline constexpr Field kFullLayout[] = {  // 2.6+
    Field::kEventAction,       Field::kEventAddr,  Field::kEventSize,
    Field::kEventStream,       Field::kEventTime,  Field::kEventCompileContext,
    Field::kEventUserMetadata, Field::kEventFrames};
inline constexpr Field kCompileContextLayout[] = {  // 2.6 without user_metadata
    Field::kEventAction, Field::kEventAddr,           Field::kEventSize,  Field::kEventStream,
    Field::kEventTime,   Field::kEventCompileContext, Field::kEventFrames};
inline constexpr Field kTimeLayout[] = {  // 2.1 to 2.5
    Field::kEventAction, Field::kEventAddr, Field::kEventSize,
    Field::kEventStream, Field::kEventTime, Field::kEventFrames};
inline constexpr Field kNoTimeLayout[] = {  // before time_us
    Field::kEventAction, Field::kEventAddr, Field::kEventSize, Field::kEventStream,
    Field::kEventFrames};

template <bool kSpec, const auto& kFields>
[[gnu::always_inline]] inline bool Decoder::DecodeLayout(size_t& p, TraceEvent& e, int64_t& stream,
                                                         int64_t& negative) {
  const auto* d = reinterpret_cast<const uint8_t*>(data_.data());
  size_t q = p;
  // Left to right, stopping at the first item that does not fit; item i's key is cached at i.
  const bool ok = [&]<size_t... kI>(std::index_sequence<kI...>) __attribute__((always_inline)) {
    return (DecodeLayoutItem<kSpec, kFields[kI]>(d, q, key_cache_[kI], e, stream, negative) && ...);
  }
  (std::make_index_sequence<std::size(kFields)>());
  if (!ok || d[q] != SETITEMS) return false;
  p = q;
  return true;
}

template <bool kSpec>
[[gnu::always_inline]] inline bool Decoder::DecodeByLayout(size_t& p, TraceEvent& e,
                                                           int64_t& stream, int64_t& negative) {
  switch (layout_) {
    case Layout::kFull:
      return DecodeLayout<kSpec, kFullLayout>(p, e, stream, negative);
    case Layout::kCompileContext:
      return DecodeLayout<kSpec, kCompileContextLayout>(p, e, stream, negative);
    case Layout::kTime:
      return DecodeLayout<kSpec, kTimeLayout>(p, e, stream, negative);
    case Layout::kNoTime:
      return DecodeLayout<kSpec, kNoTimeLayout>(p, e, stream, negative);
    case Layout::kNone:
      break;
  }
  return false;
}

// After the loop decoded an entry of `items` keys: the layout those keys (in the key cache) form.
inline void Decoder::SetLayout(uint32_t items) {
  struct Known {
    Layout layout;
    std::span<const Field> fields;
  };
  static constexpr Known kKnown[] = {{Layout::kFull, kFullLayout},
                                     {Layout::kCompileContext, kCompileContextLayout},
                                     {Layout::kTime, kTimeLayout},
                                     {Layout::kNoTime, kNoTimeLayout}};
  layout_ = Layout::kNone;
  if (key_cache_size_ < items) return;
  for (const Known& k : kKnown) {
    if (items != k.fields.size()) continue;
    bool same = true;
    for (uint32_t i = 0; i < items && same; ++i) same = key_cache_[i].field == k.fields[i];
    if (same) {
      layout_ = k.layout;
      return;
    }
  }
}

// The entry's items one key at a time, from p (after its MARK) to its SETITEMS: for entries no
// layout decodes. False when an item is not a shape the fast path takes (the caller rolls back).
template <bool kSpec>
inline bool Decoder::DecodeEventItems(size_t& p, TraceEvent& e, int64_t& stream,
                                      int64_t& negative) {
  const auto* d = reinterpret_cast<const uint8_t*>(data_.data());
  size_t size = data_.size();
  uint32_t item = 0;
  for (;; ++item) {
    if (p >= size) return false;
    if (d[p] == SETITEMS) break;
    // The keys are the same memo GETs, in the same order, entry after entry: compare the GET's
    // bytes with the previous entry's key at this position before resolving them through the memo.
    Field field;
    uint64_t word = 0;
    const bool wide = p + 8 <= size;
    if (wide) std::memcpy(&word, d + p, 8);
    if (item < key_cache_size_ && wide && (word & key_cache_[item].mask) == key_cache_[item].bytes)
        [[likely]] {
      field = key_cache_[item].field;
      p += key_cache_[item].length;
    } else {
      size_t at = p;
      MemoWord packed;
      if (!FastGet<kSpec>(p, packed) || (packed & 15) != static_cast<MemoWord>(Tag::kStr)) {
        return false;
      }
      // What the key sets comes from the schema: the fast path maps no key of its own.
      auto ref = static_cast<uint32_t>(packed >> 4);
      field = FieldOf(Rec::kEvent, ref < key_codes_.size() ? key_codes_[ref] : Key::kOther);
      if (wide && item < kKeyCacheSize) {
        const size_t length = p - at;  // 2 (BINGET) or 5 (LONG_BINGET)
        const uint64_t mask = (uint64_t{1} << (8 * length)) - 1;
        key_cache_[item] = KeyCacheEntry{word & mask, mask, field, static_cast<uint8_t>(length)};
        key_cache_size_ = item + 1;
      }
    }
    if (item == 0 && field != Field::kEventAction) return false;
    bool ok = false;
    int64_t v = 0;
    // Each case decodes the value the way SetEvent (schema.h) would set it, for the shapes and
    // ranges where the two agree (held by tests/unit/pickle_fast_path_test.cpp); anything else,
    // and every field this switch does not know, takes the generic path.
    switch (field) {
      case Field::kEventAction: {
        MemoWord a;
        ok = FastGet<kSpec>(p, a) && (a & 15) == static_cast<MemoWord>(Tag::kStr);
        if constexpr (kSpec) {
          // Strings the head interned: their actions were resolved when the plan was made.
          if (ok && (a >> 4) >= head_->actions.size()) ok = false;
          if (ok) e.action = static_cast<Action>(head_->actions[a >> 4]);
          ok = ok && e.action != Action::kUnknown;
        } else if (ok) {
          e.action = ActionOf(StrId(static_cast<uint32_t>(a >> 4)));
          ok = e.action != Action::kUnknown;  // unknown actions warn through the generic path
        }
        break;
      }
      // Values out of range (model/limits.h) take the generic path, which fixes and reports them.
      // FastInt takes at most 7 bytes, so a non-negative address or time is in range: their
      // signs are checked once the entry is complete (kFastIntMax).
      case Field::kEventAddr:
        ok = FastInt(p, v);
        e.addr = static_cast<uint64_t>(v);
        negative |= v;
        break;
      case Field::kEventDeviceFree:
        ok = FastInt(p, v) && SizeInRange(v);  // a byte count, kept where the address goes
        e.addr = static_cast<uint64_t>(v);
        break;
      case Field::kEventSize:
        ok = FastInt(p, v) && SizeInRange(v);
        e.size = v;
        break;
      case Field::kEventStream:
        ok = FastInt(p, v);
        stream = v;
        break;
      case Field::kEventTime:
        ok = FastInt(p, v);
        e.time_us = v;
        negative |= v;
        break;
      case Field::kEventFrames:
        ok = FastFrames<kSpec>(p, e.stack);
        break;
      case Field::kEventCompileContext:
        ok = FastEmptyText<kSpec>(p, /*na_is_empty=*/true);
        break;
      case Field::kEventUserMetadata:
        ok = FastEmptyText<kSpec>(p, /*na_is_empty=*/false);
        break;
      default:
        break;
    }
    if (!ok) return false;
  }
  if (item == 0) return false;
  SetLayout(item);
  return true;
}

template <bool kSpec>
inline bool Decoder::TryEventDict() {
  const auto* d = reinterpret_cast<const uint8_t*>(data_.data());
  size_t size = data_.size();
  size_t memo_before = memo_.size();
  size_t lists_before = lists_.size();
  auto rollback = [&] {
    memo_.resize(memo_before);
    lists_.resize(lists_before);
    ForgetKeys();  // its memo indices may be reused differently by the generic path
    return false;
  };
  size_t p = pos_;
  auto record = static_cast<uint32_t>(snap_.events.size());
  if (!FastMemoPut<kSpec>(p, PackMemo(Tag::kEventRef, record))) {
    return rollback();
  }
  if (p >= size || d[p] != MARK) return rollback();
  ++p;
  // The input a dozen entries ahead, and the events' room for them, asked for now: the mapped
  // file's pages are scattered in physical memory, the hardware prefetcher stops at each 4 KiB
  // page, and waiting for memory on the entries' first bytes was a third of this function's time
  // (docs/BENCHMARKS.md).
  PrefetchAhead(d + p, kPrefetchAhead);
  PrefetchAhead<true>(snap_.events.data() + snap_.events.size(), kPrefetchAhead);
  // Decoded in place, in the vector's new last element: an event built on the stack and then
  // pushed was reloaded 16 bytes at a time over the field-sized stores that had just built it,
  // which the CPU cannot forward. The append comes before the entry is known to fit: a rollback
  // takes it back. EventAppended released the observer when the vector filled, so an append
  // that moves it is safe.
  TraceEvent& e = snap_.events.emplace_back();
  auto undo = [&] {
    snap_.events.pop_back();
    return rollback();
  };
  int64_t negative = 0;  // the sign bits of the address and the time
  int64_t stream = 0;    // interned once the entry is complete: a rollback leaves no trace of it
  if (layout_ == Layout::kNone || size - p < kLayoutMaxBytes ||
      !DecodeByLayout<kSpec>(p, e, stream, negative)) {
    e = TraceEvent{};
    negative = 0;
    stream = 0;
    if (!DecodeEventItems<kSpec>(p, e, stream, negative)) return undo();
  }
  if (negative < 0) return undo();
  // Consecutive entries are mostly on one stream: the last entry's id costs a compare, where the
  // table's scan cost 9 instructions an entry and a hash map 42 (docs/BENCHMARKS.md). A
  // speculative decoder interns into its copy of the head's table; the adoption maps what it
  // added (pickle_parallel.cpp). A full table is the generic path's error to report.
  if (stream == last_stream_) [[likely]] {
    e.stream = last_stream_id_;
  } else {
    e.stream = snap_.streams.Intern(stream);
    if (!e.stream.valid()) [[unlikely]]
      return undo();
    last_stream_ = stream;
    last_stream_id_ = e.stream;
  }
  events_prefault_.Touch(snap_.events);
  EventAppended();
  stack_.push_back(Value{Tag::kEventRef, Rec::kEvent, record, 0});
  pos_ = p + 1;
  return true;
}

}  // namespace memsnap::parse::pickle
