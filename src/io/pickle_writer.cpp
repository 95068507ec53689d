#include "memsnap/io/pickle_writer.h"

#include <bit>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "memsnap/util/strings.h"

namespace memsnap::io {

namespace {
// Opcodes (pickletools names).
constexpr char kProto = '\x80';
constexpr char kFrame = '\x95';
constexpr char kStop = '.';
constexpr char kNone = 'N';
constexpr char kNewTrue = '\x88';
constexpr char kNewFalse = '\x89';
constexpr char kBinInt1 = 'K';
constexpr char kBinInt2 = 'M';
constexpr char kBinInt = 'J';
constexpr char kLong1 = '\x8a';
constexpr char kBinFloat = 'G';
constexpr char kShortBinUnicode = '\x8c';
constexpr char kBinUnicode = 'X';
constexpr char kBinUnicode8 = '\x8d';
constexpr char kEmptyDict = '}';
constexpr char kEmptyList = ']';
constexpr char kMark = '(';
constexpr char kSetItem = 's';
constexpr char kSetItems = 'u';
constexpr char kAppend = 'a';
constexpr char kAppends = 'e';
constexpr char kTuple2 = '\x86';
constexpr char kMemoize = '\x94';
constexpr char kBinPut = 'q';
constexpr char kLongBinPut = 'r';
constexpr char kBinGet = 'h';
constexpr char kLongBinGet = 'j';

constexpr size_t kFrameTarget = 64 * 1024;  // CPython's _FRAME_SIZE_TARGET
constexpr size_t kFrameMin = 4;             // CPython's _FRAME_SIZE_MIN
constexpr size_t kUnframedFlush = 1 << 20;  // protocol 2: hand 1 MiB at a time to the stream
constexpr size_t kBatch = 1000;             // CPython's _BATCHSIZE

/// Byte i of v's little-endian two's complement, sign-extended beyond 8 bytes.
unsigned ByteOf(int64_t v, int i) {
  if (i >= 8) return v < 0 ? 0xff : 0;
  return static_cast<unsigned>((static_cast<uint64_t>(v) >> (8 * i)) & 0xff);
}
}  // namespace

PickleWriter::PickleWriter(std::ostream& out, int protocol)
    : out_(out), protocol_(protocol), framing_(protocol >= 4) {
  buf_.reserve(kFrameTarget + 4096);
  // PROTO is written outside the first frame, as CPython does.
  char header[2] = {kProto, static_cast<char>(protocol)};
  out_.write(header, 2);
  flushed_ = 2;
}

void PickleWriter::PutLe(uint64_t v, int n) {
  char b[8];
  for (int i = 0; i < n; ++i) b[i] = static_cast<char>((v >> (8 * i)) & 0xff);
  buf_.append(b, static_cast<size_t>(n));
}

void PickleWriter::FlushFrame() {
  if (buf_.empty()) return;
  if (framing_ && buf_.size() >= kFrameMin) {
    char h[9];
    h[0] = kFrame;
    uint64_t n = buf_.size();
    for (int i = 0; i < 8; ++i) h[1 + i] = static_cast<char>((n >> (8 * i)) & 0xff);
    out_.write(h, 9);
    flushed_ += 9;
  }
  out_.write(buf_.data(), static_cast<std::streamsize>(buf_.size()));
  flushed_ += buf_.size();
  buf_.clear();
}

void PickleWriter::MaybeFlush() {
  if (buf_.size() >= (framing_ ? kFrameTarget : kUnframedFlush)) FlushFrame();
}

uint32_t PickleWriter::Memoize() {
  uint32_t slot = memo_size_++;
  if (protocol_ >= 4) {
    Put(kMemoize);
  } else if (slot < 256) {
    Put(kBinPut);
    Put(static_cast<char>(slot));
  } else {
    Put(kLongBinPut);
    PutLe(slot, 4);
  }
  return slot;
}

void PickleWriter::BeforeValue() {
  if (open_.empty()) return;
  Container& c = open_.back();
  if (c.kind == Kind::kTuple) {
    ++c.done;
    return;
  }
  size_t per = c.kind == Kind::kDict ? 2 : 1;
  if (c.done % per == 0 && c.items > 1) {
    // Start of an item: batches of 1000 between MARK and APPENDS/SETITEMS (CPython's C pickler
    // writes a one-item container with APPEND/SETITEM and no MARK).
    size_t item = c.done / per;
    if (item > 0 && item % kBatch == 0) Put(c.kind == Kind::kDict ? kSetItems : kAppends);
    if (item % kBatch == 0) Put(kMark);
  }
  ++c.done;
}

void PickleWriter::None() {
  BeforeValue();
  Put(kNone);
  MaybeFlush();
}

void PickleWriter::Bool(bool v) {
  BeforeValue();
  Put(v ? kNewTrue : kNewFalse);
  MaybeFlush();
}

void PickleWriter::Int(int64_t v) {
  BeforeValue();
  if (v >= 0 && v <= 0xff) {
    Put(kBinInt1);
    Put(static_cast<char>(v));
  } else if (v >= 0 && v <= 0xffff) {
    Put(kBinInt2);
    PutLe(static_cast<uint64_t>(v), 2);
  } else if (v >= INT32_MIN && v <= INT32_MAX) {
    Put(kBinInt);
    PutLe(static_cast<uint64_t>(v), 4);
  } else {
    // LONG1: minimal little-endian two's complement, as pickle.encode_long writes it:
    // nbytes = bit_length/8 + 1, then a redundant 0xff sign byte of a negative value is dropped.
    uint64_t u = static_cast<uint64_t>(v);
    uint64_t abs_v = v < 0 ? uint64_t{0} - u : u;
    int n = (64 - std::countl_zero(abs_v)) / 8 + 1;
    if (v < 0 && n > 1 && ByteOf(v, n - 1) == 0xff && (ByteOf(v, n - 2) & 0x80) != 0) --n;
    Put(kLong1);
    Put(static_cast<char>(n));
    for (int i = 0; i < n; ++i) Put(static_cast<char>(ByteOf(v, i)));
  }
  MaybeFlush();
}

void PickleWriter::UInt(uint64_t v) {
  if (v <= static_cast<uint64_t>(INT64_MAX)) {
    Int(static_cast<int64_t>(v));
    return;
  }
  BeforeValue();
  Put(kLong1);
  Put(9);
  PutLe(v, 8);
  Put(0);  // sign byte: the value is positive
  MaybeFlush();
}

void PickleWriter::Float(double v) {
  BeforeValue();
  Put(kBinFloat);
  uint64_t bits = std::bit_cast<uint64_t>(v);
  char b[8];
  for (int i = 0; i < 8; ++i) b[i] = static_cast<char>((bits >> (8 * (7 - i))) & 0xff);
  PutBytes(b, 8);
  MaybeFlush();
}

void PickleWriter::WriteStrBody(std::string_view s) {
  if (protocol_ >= 4 && s.size() < 256) {
    Put(kShortBinUnicode);
    Put(static_cast<char>(s.size()));
  } else if (protocol_ >= 4 && s.size() > 0xffffffffu) {
    Put(kBinUnicode8);
    PutLe(s.size(), 8);
  } else {
    Put(kBinUnicode);
    PutLe(s.size(), 4);
  }
  PutBytes(s.data(), s.size());
}

uint32_t PickleWriter::NewStr(std::string_view s) {
  BeforeValue();
  WriteStrBody(s);
  uint32_t slot = Memoize();
  MaybeFlush();
  return slot;
}

uint32_t PickleWriter::Str(std::string_view s) {
  auto it = strings_.find(Sv(s));
  if (it != strings_.end()) {
    Get(it->second);
    return it->second;
  }
  uint32_t slot = NewStr(s);
  strings_.emplace(std::string(s), slot);
  return slot;
}

void PickleWriter::CachedStr(std::string_view s, uint32_t& slot) {
  if (slot != kNoSlot) {
    Get(slot);
  } else {
    slot = Str(s);
  }
}

uint32_t PickleWriter::BeginDict(size_t items) {
  BeforeValue();
  Put(kEmptyDict);
  uint32_t slot = Memoize();
  open_.push_back({items, 0, Kind::kDict});
  MaybeFlush();
  return slot;
}

uint32_t PickleWriter::BeginList(size_t items) {
  BeforeValue();
  Put(kEmptyList);
  uint32_t slot = Memoize();
  open_.push_back({items, 0, Kind::kList});
  MaybeFlush();
  return slot;
}

void PickleWriter::BeginTuple2() {
  BeforeValue();
  open_.push_back({2, 0, Kind::kTuple});
}

void PickleWriter::EndContainer(Kind kind) {
  Container c = open_.back();
  open_.pop_back();
  size_t per = kind == Kind::kDict ? 2 : 1;
  if (c.kind != kind || c.done != c.items * per) {
    broken_ = true;
    return;
  }
  if (kind == Kind::kTuple) return;
  if (c.items == 1) {
    Put(kind == Kind::kDict ? kSetItem : kAppend);
  } else if (c.items > 1) {
    Put(kind == Kind::kDict ? kSetItems : kAppends);
  }
  MaybeFlush();
}

void PickleWriter::EndDict() { EndContainer(Kind::kDict); }
void PickleWriter::EndList() { EndContainer(Kind::kList); }

uint32_t PickleWriter::EndTuple2() {
  EndContainer(Kind::kTuple);
  Put(kTuple2);
  uint32_t slot = Memoize();
  MaybeFlush();
  return slot;
}

void PickleWriter::Get(uint32_t slot) {
  BeforeValue();
  if (slot < 256) {
    Put(kBinGet);
    Put(static_cast<char>(slot));
  } else {
    Put(kLongBinGet);
    PutLe(slot, 4);
  }
  MaybeFlush();
}

absl::Status PickleWriter::Finish() {
  if (!open_.empty() || broken_) {
    return absl::InternalError("pickle writer: containers not closed with their declared sizes");
  }
  Put(kStop);
  FlushFrame();
  out_.flush();
  if (!out_) return absl::DataLossError("write failed (disk full?)");
  return absl::OkStatus();
}

}  // namespace memsnap::io
