// The pickle virtual machine: the opcode loop, the memo, containers and lists of records
// (pickle_decoder.h). Only data opcodes run; anything that would import or call code is refused.
#include <cmath>
#include <cstring>
#include <new>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "memsnap/parse/reader.h"
#include "memsnap/util/format.h"
#include "memsnap/util/status_macros.h"
#include "parse/pickle_decoder.h"
#include "parse/pickle_fast_path.h"

namespace memsnap::parse {
namespace pickle {

const char* TagName(Tag t) {
  switch (t) {
    case Tag::kNone:
      return "None";
    case Tag::kBool:
      return "bool";
    case Tag::kInt:
    case Tag::kUInt64:
    case Tag::kHugeInt:
      return "int";
    case Tag::kFloat:
      return "float";
    case Tag::kStr:
      return "str";
    case Tag::kDict:
      return "dict";
    case Tag::kList:
      return "list";
    case Tag::kTuple:
      return "tuple";
    case Tag::kRun:
      return "record";
    case Tag::kFrameRef:
    case Tag::kEventRef:
      return "dict";
  }
  return "?";
}

namespace {

const char* RefusedOpcodeName(uint8_t op) {
  switch (op) {
    case GLOBAL:
      return "GLOBAL";
    case STACK_GLOBAL:
      return "STACK_GLOBAL";
    case REDUCE:
      return "REDUCE";
    case BUILD:
      return "BUILD";
    case INST:
      return "INST";
    case OBJ:
      return "OBJ";
    case NEWOBJ:
      return "NEWOBJ";
    case NEWOBJ_EX:
      return "NEWOBJ_EX";
    case PERSID:
      return "PERSID";
    case BINPERSID:
      return "BINPERSID";
    case EXT1:
      return "EXT1";
    case EXT2:
      return "EXT2";
    case EXT4:
      return "EXT4";
  }
  return nullptr;
}

}  // namespace

void VmStack::Grow() {
  size_t size = this->size();
  // 64 to start: a snapshot's pickle nests a few levels deep, and a small input should not
  // allocate and fill 16 KiB it never uses.
  size_t cap = end_ ? static_cast<size_t>(end_ - base_) * 2 : 64;
  auto bigger = std::make_unique<Value[]>(cap);
  if (size) std::memcpy(bigger.get(), base_, size * sizeof(Value));
  storage_ = std::move(bigger);
  base_ = storage_.get();
  top_ = base_ + size;
  end_ = base_ + cap;
}

Decoder::Decoder(io::InputSource& input, EventObserver* observer, const PickleOptions& options)
    : max_memory_(options.max_memory),
      threads_(options.threads),
      parallel_min_bytes_(options.parallel_min_bytes),
      parallel_chunk_bytes_(options.parallel_chunk_bytes),
      parallel_wait_(options.parallel_wait_for_workers),
      stats_(options.stats != nullptr ? options.stats : &own_stats_),
      input_(input),
      data_(input.bytes()),
      fast_paths_(options.fast_paths),
      observer_(observer) {
  na_ = InternText("N/A");
  // Reserve generously: untouched capacity costs address space, not resident memory, and it
  // avoids the transient 3x of a vector doubling on multi-GB inputs.
  size_t n = data_.size();
  // Not ReserveHuge: transparent huge pages saved a little on a quiet machine but cost 0.3 s of
  // direct compaction when another process had just freed a lot of memory (docs/BENCHMARKS.md).
  try {
    snap_.events.reserve(EventsReservedFor(n));
    memo_.reserve(n / 16 + 16);
    dicts_.reserve(n / 24 + 16);
  } catch (const std::bad_alloc&) {
    // Under an address-space limit (ulimit -v) this reservation, about 3x the file, is what
    // fails: decode on this thread alone instead (the parallel plan needs arrays that never
    // move), the arrays growing as they fill.
    snap_.events = {};
    memo_ = {};
    dicts_ = {};
    threads_ = 1;
  }
  if (observer_ != nullptr) next_publish_ = std::min(kPublishEvery, snap_.events.capacity());
}

void Decoder::CodeNewStrings() {
  while (key_codes_.size() < snap_.strings.size()) {
    key_codes_.push_back(
        KeyOfName(snap_.strings.Get(StrId(static_cast<uint32_t>(key_codes_.size())))));
  }
}

absl::Status Decoder::MemoPut(size_t at, uint64_t index) {
  if (stack_.size() <= StackFloor()) return Error(at, "memoize with an empty stack");
  const Value& v = stack_.back();
  MemoWord packed;
  switch (v.tag) {
    case Tag::kStr:
    case Tag::kDict:
    case Tag::kList:
    case Tag::kTuple:
    case Tag::kNone:
    case Tag::kFrameRef:
    case Tag::kEventRef:
      packed = PackMemo(v.tag, v.ref);
      break;
    default:
      packed = PackRare(v);
      break;
  }
  if (v.tag == Tag::kDict && index <= UINT32_MAX)
    dicts_[v.ref].memo_slot = static_cast<uint32_t>(index);
  if (index == memo_.size()) {
    memo_.push_back(packed);
  } else if (index < memo_.size()) {
    ForgetKeys();  // a memo entry changes value: cached key GETs may be stale
    memo_[index] = packed;
  } else {
    // BINPUT may skip indices; writers number them densely, so a far jump is hostile input.
    if (index > memo_.size() + (uint64_t{1} << 20) || index > data_.size()) {
      return Error(
          at, absl::StrCat("memo index ", index, " is far beyond the memo size ", memo_.size()));
    }
    memo_.resize(index + 1, kUnsetMemo);
    memo_[index] = packed;
  }
  return absl::OkStatus();
}

absl::StatusOr<Value> Decoder::DecodeLong(size_t at, std::string_view b) {
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
        return Value{Tag::kHugeInt, Rec::kUnset, 1, std::numeric_limits<int64_t>::min()};
      }
      return Int(static_cast<int64_t>(u));
    }
    if (u >> 63) return Value{Tag::kUInt64, Rec::kUnset, 0, static_cast<int64_t>(u)};
    return Int(static_cast<int64_t>(u));
  }
  ++clamped_ints_;
  return Value{
      Tag::kHugeInt, Rec::kUnset, negative ? 1u : 0u,
      negative ? std::numeric_limits<int64_t>::min() : std::numeric_limits<int64_t>::max()};
}

absl::Status Decoder::PushString(size_t at, size_t n) {
  if (!Need(n)) {
    return Error(at, absl::StrCat("string of ", n, " bytes runs past the end of the input (",
                                  data_.size() - pos_, " bytes left)"));
  }
  StrId id = InternText(data_.substr(pos_, n));
  pos_ += n;
  stack_.push_back(Value{Tag::kStr, Rec::kUnset, id.v, 0});
  return absl::OkStatus();
}

absl::Status Decoder::Append(size_t at, const Value& list, const Value* items, size_t n) {
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
      scratch_.push_back(Value{Tag::kRun, Rec::kFrame, f.v, 1});
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
    Rec kind = Rec::kUnset;
    uint32_t record = 0;
    if (v.tag == Tag::kFrameRef) {
      kind = Rec::kFrame;
      record = v.ref;
    } else if (v.tag == Tag::kEventRef) {
      kind = Rec::kEvent;
      record = v.ref;
    } else if (v.tag == Tag::kDict) {
      const DictObj& d = dicts_[v.ref];
      if (d.kind != Rec::kUnset && d.kind != Rec::kGeneric) {
        kind = d.kind;
        record = d.record;
      }
    }
    if (kind == Rec::kUnset) {
      scratch_.push_back(v);
      ++l.count;
      continue;
    }
    if (kind != Rec::kFrame && !FirstUse(kind, record)) [[unlikely]] {
      NoteReuse(at, v, kind, record);
      continue;
    }
    if (l.count > 0) {
      Value& last = scratch_.back();
      if (last.tag == Tag::kRun && last.kind == kind &&
          last.ref + static_cast<uint64_t>(last.i) == record) {
        // The trace entries of a batch are consecutive records: take them in one scan (the
        // fast path's records, whose ref is the record; a dict's ref is its handle). Records
        // past `record` are new while its kind's uses are in order (FirstUse).
        uint64_t end = record + 1;
        const bool fast_record =
            v.tag == Tag::kFrameRef ||
            (v.tag == Tag::kEventRef && uses_[static_cast<int>(Rec::kEvent)].bits.empty());
        while (fast_record && k + 1 < n && items[k + 1].tag == v.tag && items[k + 1].ref == end) {
          ++k;
          ++end;
        }
        if (v.tag == Tag::kEventRef)
          uses_[static_cast<int>(Rec::kEvent)].next =
              static_cast<uint32_t>(end);  // a record ref: 32 bits
        last.i = static_cast<int64_t>(end - last.ref);
        continue;
      }
    }
    scratch_.push_back(Value{Tag::kRun, kind, record, 1});
    ++l.count;
  }
  return absl::OkStatus();
}

bool Decoder::FirstUseSlow(RecordUses& u, uint32_t record) {
  if (u.bits.empty()) {
    if (record < u.next) return false;  // every record below `next` is in a list
    // The first append out of creation order (never written by PyTorch): from now on a bitmap.
    u.bits.assign(std::max<size_t>(u.next, record) / 64 + 1, 0);
    for (uint32_t r = 0; r < u.next; ++r) u.bits[r / 64] |= uint64_t{1} << (r % 64);
  }
  if (record / 64 >= u.bits.size()) u.bits.resize(record / 64 + 1, 0);
  uint64_t& word = u.bits[record / 64];
  const uint64_t bit = uint64_t{1} << (record % 64);
  if (word & bit) return false;
  word |= bit;
  return true;
}

void Decoder::NoteReuse(size_t at, const Value& item, Rec kind, uint32_t record) {
  RecordUses& u = uses_[static_cast<int>(kind)];
  if (u.reused++ == 0) {
    // A memo GET left its offset in the dict's value (TryMemoGet); otherwise the APPEND(S).
    u.first_at = item.i > 0 && static_cast<size_t>(item.i) < data_.size() ? item.i : at;
    u.first_record = record;
  }
}

void Decoder::WarnReuses() {
  for (int k = 0; k < kTrackedRecs; ++k) {
    const RecordUses& u = uses_[k];
    if (u.reused == 0) continue;
    const std::string_view name = RecName(static_cast<Rec>(k));
    const uint8_t op = static_cast<uint8_t>(data_[u.first_at]);
    const std::string how = op == BINGET        ? "a memo reference (BINGET)"
                            : op == LONG_BINGET ? "a memo reference (LONG_BINGET)"
                                                : "a list append";
    snap_.diagnostics.Warn(
        absl::StrCat("offset ", u.first_at, ": ", how, " re-uses ", Sv(name), " #", u.first_record,
                     " (in the order decoded), which is already in a list: PyTorch writes each ",
                     Sv(name), " once; ", u.reused, " ", Sv(name),
                     "(s) re-used by reference were dropped (each counted "
                     "once)"));
  }
}

absl::StatusOr<Snapshot> Decoder::Run() {
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
  if (threads_ > 1 && fast_paths_ && protocol >= 4 && data_.size() >= parallel_min_bytes_) {
    spec_next_ = 2;  // the plan is made at the first loop top past the head (pickle_parallel.cpp)
  }
  while (true) {
    if (pos_ >= spec_next_) [[unlikely]]
      RETURN_IF_ERROR(AtSpeculationPoint());
    if (pos_ >= data_.size()) {
      return Error(pos_, "unexpected end of input (truncated pickle: no STOP opcode)");
    }
    if (pos_ >= next_release) {
      input_.ReleaseBefore(pos_);
      next_release = pos_ + (8 << 20);
      RETURN_IF_ERROR(CheckBudget(pos_));
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
      case FRAME: {
        if (!Need(8)) return Error(at, "truncated FRAME");
        // The length is not needed to decode, but CPython refuses a frame that runs past the end
        // of the data ("pickle data was truncated"), and so does memsnap: such a file was cut
        // short or forged.
        const uint64_t length = ReadLE<uint64_t>();
        if (length > data_.size() - pos_) return FrameError(at, length);
        break;
      }
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
        if (uint64_t index = ReadLE<uint8_t>(); !TryMemoGet(index, at)) return MemoError(at, index);
        break;
      case LONG_BINGET:
        if (!Need(4)) return Error(at, "truncated LONG_BINGET");
        if (uint64_t index = ReadLE<uint32_t>(); !TryMemoGet(index, at))
          return MemoError(at, index);
        break;
      case MARK:
        marks_.push_back(stack_.size());
        if (fast_paths_ && !stack_.empty() && stack_.back().tag == Tag::kList) TryFrameList();
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
        stack_.push_back(Value{Tag::kBool, Rec::kUnset, 0, op == NEWTRUE ? 1 : 0});
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
        stack_.push_back(Value{Tag::kFloat, Rec::kUnset, 0, static_cast<int64_t>(bits)});
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
      case EMPTY_DICT: {
        // Trace entries come in batches of a thousand between MARK and APPENDS: the ones that
        // follow this one are decoded here, without the loop top's checks, up to the next
        // position where the loop top has work (a speculation point, a release of the input
        // behind, a FRAME).
        const size_t until = std::min({spec_next_, next_release, data_.size()});
        while (true) {
          if (!fast_paths_ || !TryEventDict()) {
            stack_.push_back(NewDict());
            break;
          }
          if (pos_ >= until || static_cast<uint8_t>(data_[pos_]) != EMPTY_DICT ||
              stack_.size() > kMaxStackDepth) {
            break;
          }
          ++pos_;
        }
        break;
      }
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
      case APPENDS:
        RETURN_IF_ERROR(OpAppends(at));
        break;
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
          return Error(
              at, absl::StrCat("STOP with ", stack_.size(), " values on the stack (expected 1)"));
        }
        if (spec_ != nullptr) NoteParallelDecoding();
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

}  // namespace pickle

absl::StatusOr<Snapshot> ParsePickleWith(io::InputSource& input, EventObserver* observer,
                                         const PickleOptions& options) {
  try {
    pickle::Decoder decoder(input, observer, options);
    return decoder.Run();
  } catch (const std::bad_alloc&) {
    // What decoding holds at most: the trace's entries, the memo and the dicts, reserved from the
    // file's size (the constructor's figures).
    const size_t n = input.bytes().size();
    const size_t needed = EventsReservedFor(n) * sizeof(TraceEvent) +
                          (n / 16 + 16) * sizeof(pickle::MemoWord) +
                          (n / 24 + 16) * sizeof(pickle::DictObj);
    return absl::ResourceExhaustedError(
        absl::StrCat(input.name(), ": out of memory decoding ", n, " bytes: needs about ", needed,
                     " bytes of memory (", FormatBytes(static_cast<int64_t>(needed)),
                     "); is the address space limited? (ulimit -v)"));
  }
}

absl::StatusOr<Snapshot> ParsePickle(io::InputSource& input, EventObserver* observer) {
  return ParsePickleWith(input, observer, PickleOptions{});
}

}  // namespace memsnap::parse
