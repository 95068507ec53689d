// A streaming pickle writer for plain data (dicts, lists, str, int, float, bool, None, 2-tuples),
// byte-compatible with what CPython's pickle writes for the same objects
// (docs/snapshot-format.md §1.3, §1.4): protocol 2 (BINPUT memo, no FRAME) or 4/5 (MEMOIZE, FRAME
// every ~64 KiB).
//
// Output is buffered one frame at a time and handed to the ostream, so a multi-GB pickle needs
// about 64 KiB of memory here. Sharing is explicit: every str, dict, list and tuple gets a memo
// slot (returned by the writing call), and Get(slot) writes a reference to it, as CPython does for
// an object it has seen before. The writer never dedups on its own except in Str() (strings by
// content), which is what makes repeated dict keys cost 2-5 bytes.
//
//   w.BeginDict(2);                         EMPTY_DICT MEMOIZE MARK
//     w.Str("a"); w.Int(1);                 SHORT_BINUNICODE MEMOIZE BININT1
//     w.Str("b"); w.Int(70000);             ...
//   w.EndDict();                            SETITEMS
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"

namespace memsnap::io {

class PickleWriter {
 public:
  /// Memo slot value meaning "not written yet" (for caller-side caches of slots).
  static constexpr uint32_t kNoSlot = UINT32_MAX;

  /// `protocol` must be 2, 3, 4 or 5 (3 writes like 2, 5 like 4 with its own header byte).
  /// Writes the PROTO header immediately.
  PickleWriter(std::ostream& out, int protocol);

  /// Writes STOP, flushes the last frame and the stream. Returns an error when the stream failed
  /// (disk full...) at any point, or when containers are still open.
  absl::Status Finish();

  void None();
  void Bool(bool v);
  /// The smallest of BININT1/BININT2/BININT/LONG1 CPython picks for this value.
  void Int(int64_t v);
  /// As Int, for values up to 2^64-1 (LONG1 of 9 bytes for [2^63, 2^64)).
  void UInt(uint64_t v);
  void Float(double v);

  /// A string, shared by content: the first time it is written and memoized, later a GET.
  /// Returns its memo slot.
  uint32_t Str(std::string_view s);
  /// A string that always gets a new copy and memo slot (what CPython does for distinct objects).
  uint32_t NewStr(std::string_view s);
  /// Writes the string cached in `slot` as a GET, or writes it and stores its slot there.
  void CachedStr(std::string_view s, uint32_t& slot);

  /// Opens a dict that will get exactly `items` key/value pairs; write key then value for each.
  /// Returns the dict's memo slot.
  uint32_t BeginDict(size_t items);
  void EndDict();
  /// Opens a list that will get exactly `items` values. Returns its memo slot.
  uint32_t BeginList(size_t items);
  void EndList();
  /// Opens a 2-tuple: write its two values, then EndTuple2() (TUPLE2 MEMOIZE); returns its slot.
  void BeginTuple2();
  uint32_t EndTuple2();

  /// A reference to an object written before (BINGET / LONG_BINGET).
  void Get(uint32_t slot);

  int protocol() const { return protocol_; }
  /// Number of memo slots used so far.
  uint32_t memo_size() const { return memo_size_; }
  /// Bytes handed to the stream so far plus what is buffered.
  uint64_t bytes_written() const { return flushed_ + buf_.size(); }

 private:
  enum class Kind : uint8_t { kList, kDict, kTuple };
  struct Container {
    size_t items;  // declared item count (key/value pairs for dicts)
    size_t done;   // values started so far (keys and values count separately in dicts)
    Kind kind;
  };
  uint32_t Memoize();
  void BeforeValue();  // batch bookkeeping of the innermost open container
  void EndContainer(Kind kind);
  void WriteStrBody(std::string_view s);
  void Put(char c) { buf_.push_back(c); }
  void PutBytes(const void* p, size_t n) { buf_.append(static_cast<const char*>(p), n); }
  void PutLe(uint64_t v, int n);
  /// Ends an opcode: with framing, a frame of >= 64 KiB is committed here.
  void MaybeFlush();
  void FlushFrame();

  std::ostream& out_;
  int protocol_;
  bool framing_;
  std::string buf_;
  uint64_t flushed_ = 0;
  uint32_t memo_size_ = 0;
  bool broken_ = false;  // a container closed with the wrong number of items
  std::vector<Container> open_;
  absl::flat_hash_map<std::string, uint32_t> strings_;
};

}  // namespace memsnap::io
