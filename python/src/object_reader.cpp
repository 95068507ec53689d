// The snapshot object read into the model (object_reader.h). The structure follows the JSON
// reader's (src/parse/json_reader.cpp) step for step, with a borrowed PyObject* where that one has
// a simdjson element: the schema's setters (parse/schema.h) convert and check every value, so the
// rules (tolerated variants, limits, key typing) are the readers' own, not a copy of them.
//
// Speed: a real trace repeats its key objects and, once it has been through pickle.load, its frame
// lists and frame dicts too (the pickle's memo shares them). Keys, frames and stacks are resolved
// once per distinct object and remembered by address for the rest of the read: the objects are
// alive and unchanged while the caller holds the GIL and the root.
#include "object_reader.h"

#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "memsnap/util/narrow.h"
#include "memsnap/util/status_macros.h"
#include "memsnap/util/strings.h"
#include "parse/schema.h"

namespace memsnap::python {

namespace {

using parse::BlockRec;
using parse::Field;
using parse::FieldOf;
using parse::HistoryRec;
using parse::Key;
using parse::KeyName;
using parse::KeyOfName;
using parse::Rec;
using parse::SegmentRec;
using parse::TopRec;
using parse::TypesRecord;

/// A key path under construction, on the C++ stack: rendered only for error messages, as a JSON
/// pointer (the JSON reader's form: "/device_traces/0/12/size").
struct Path {
  const Path* parent = nullptr;
  std::string_view key;
  int64_t index = -1;  // >= 0: a list index instead of a key
  Path Key(std::string_view k) const { return Path{this, k, -1}; }
  Path Index(size_t i) const { return Path{this, {}, static_cast<int64_t>(i)}; }
};

std::string Pointer(const Path& path) {
  std::vector<const Path*> chain;
  for (const Path* p = &path; p != nullptr && p->parent != nullptr; p = p->parent) {
    chain.push_back(p);
  }
  if (chain.empty()) return "/";
  std::string out;
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    out += '/';
    if ((*it)->index >= 0) {
      absl::StrAppend(&out, (*it)->index);
    } else {
      absl::StrAppend(&out, Sv((*it)->key));
    }
  }
  return out;
}

bool IsDict(PyObject* v) { return PyDict_Check(v); }
bool IsList(PyObject* v) { return PyList_Check(v) || PyTuple_Check(v); }
bool IsInt(PyObject* v) { return PyLong_Check(v) && !PyBool_Check(v); }
bool IsStr(PyObject* v) { return PyUnicode_Check(v); }

// Items of a list or tuple (borrowed).
Py_ssize_t SizeOf(PyObject* seq) {
  return PyList_Check(seq) ? PyList_GET_SIZE(seq) : PyTuple_GET_SIZE(seq);
}
PyObject* ItemOf(PyObject* seq, Py_ssize_t i) {
  return PyList_Check(seq) ? PyList_GET_ITEM(seq, i) : PyTuple_GET_ITEM(seq, i);
}

// The UTF-8 text of a str (cached in the object by CPython), or nullopt (a str of lone
// surrogates cannot be encoded: the error is cleared, the caller reports a type error).
std::optional<std::string_view> Utf8(PyObject* s) {
  Py_ssize_t n = 0;
  const char* p = PyUnicode_AsUTF8AndSize(s, &n);
  if (p == nullptr) {
    PyErr_Clear();
    return std::nullopt;
  }
  return std::string_view(p, static_cast<size_t>(n));
}

// An int as a reader sees it: the value when it fits in 64 bits (signed, or unsigned above
// 2^63), `wide` when it does not fit in int64, `huge` when it fits in neither.
struct IntValue {
  int64_t value = 0;
  uint64_t unsigned_value = 0;
  bool wide = false;  // >= 2^63 or below -2^63
  bool huge = false;  // fits in neither int64 nor uint64
};
IntValue IntOf(PyObject* v) {
  IntValue out;
  int overflow = 0;
  const long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
  if (overflow == 0) {
    out.value = x;
    out.unsigned_value = static_cast<uint64_t>(x);
    return out;
  }
  out.wide = true;
  if (overflow > 0) {
    const unsigned long long u = PyLong_AsUnsignedLongLong(v);
    if (u == static_cast<unsigned long long>(-1) && PyErr_Occurred()) {
      PyErr_Clear();
      out.huge = true;
      out.value = std::numeric_limits<int64_t>::max();
      out.unsigned_value = std::numeric_limits<uint64_t>::max();
    } else {
      out.unsigned_value = u;
      out.value = std::numeric_limits<int64_t>::max();
    }
  } else {
    out.huge = true;
    out.value = std::numeric_limits<int64_t>::min();
    out.unsigned_value = static_cast<uint64_t>(out.value);
  }
  return out;
}

class ObjectField;

class ObjectDecoder {
 public:
  explicit ObjectDecoder(std::string name) : name_(std::move(name)) {
    na_ = snap_.strings.Intern("N/A");
  }

  absl::StatusOr<Snapshot> Run(PyObject* root);

 private:
  friend class ObjectField;

  absl::Status Error(const Path& p, std::string_view what) const {
    return absl::InvalidArgumentError(absl::StrCat(name_, ": ", Pointer(p), ": ", Sv(what)));
  }
  template <class To = uint32_t>
  absl::StatusOr<To> Narrow(const Path& p, uint64_t n, std::string_view what) const {
    if (std::optional<To> v = CheckedCast<To>(n)) [[likely]] {
      return *v;
    }
    return Error(p, absl::StrCat(n, " ", Sv(what), ": more than the model holds (",
                                 std::numeric_limits<To>::max(), ")"));
  }
  absl::Status TypeError(const Path& p, PyObject* v, std::string_view want) const {
    return Error(p, absl::StrCat("expected ", Sv(want), ", got ", Py_TYPE(v)->tp_name));
  }

  absl::StatusOr<int64_t> Int(PyObject* v, const Path& p);
  absl::StatusOr<uint64_t> Address(PyObject* v, const Path& p);
  absl::StatusOr<bool> Bool(PyObject* v, const Path& p);
  absl::StatusOr<StackId> Stack(PyObject* v, const Path& p);
  absl::StatusOr<FrameId> FrameOf(PyObject* v, const Path& p);
  absl::StatusOr<PoolId> Pool(PyObject* v, const Path& p);
  absl::StatusOr<StrId> Intern(PyObject* s, const Path& p);
  std::string RenderText(PyObject* v, int depth) const;
  Key KeyOf(PyObject* k);

  template <typename Set>
  absl::Status ForEachField(PyObject* dict, const Path& p, Rec rec, uint32_t record, Set&& set);
  absl::Status ReadSegments(PyObject* v, const Path& p);
  absl::Status ReadSegment(PyObject* v, const Path& p);
  absl::Status ReadBlocks(PyObject* v, const Path& p, SegmentRec& segment);
  absl::Status ReadBlock(PyObject* v, const Path& p);
  absl::Status ReadHistory(PyObject* v, const Path& p, BlockRec& block);
  absl::Status ReadTraces(PyObject* v, const Path& p);
  absl::Status ReadEvent(PyObject* v, const Path& p);
  absl::Status ReadSettings(PyObject* v, const Path& p);
  absl::Status ReadAnnotations(PyObject* v, const Path& p);
  EventExtra& ExtraOf(uint32_t event) {
    if (snap_.event_extras.empty() || snap_.event_extras.back().event != event) {
      snap_.event_extras.push_back(EventExtra{});
      snap_.event_extras.back().event = event;
    }
    return snap_.event_extras.back();
  }

  std::string name_;
  Snapshot snap_;
  LimitReport limits_;
  StrId na_;
  std::vector<FrameId> frame_scratch_;
  // Resolved once per object (see the file's comment): keys, interned strings, frames, stacks.
  absl::flat_hash_map<PyObject*, Key> keys_;
  absl::flat_hash_map<PyObject*, StrId> strings_;
  absl::flat_hash_map<PyObject*, FrameId> frames_;
  absl::flat_hash_map<PyObject*, StackId> stacks_;
};

// One value of one dict as the schema's setters see it (the contract is in parse/schema.h).
class ObjectField {
 public:
  using Value = PyObject*;
  ObjectField(ObjectDecoder& d, const Path& path, uint32_t record)
      : d_(d), path_(path), record_(record) {}

  absl::StatusOr<int64_t> Int(PyObject* v) { return d_.Int(v, path_); }
  absl::StatusOr<uint64_t> Address(PyObject* v) { return d_.Address(v, path_); }
  bool IsWide(PyObject* v) const { return IsInt(v) && IntOf(v).wide; }
  bool IsNone(PyObject* v) const { return v == Py_None; }
  bool IsList(PyObject* v) const { return python::IsList(v); }
  std::optional<int64_t> IntOrBool(PyObject* v) const {
    if (PyBool_Check(v)) return v == Py_True ? 1 : 0;
    if (IsInt(v)) return IntOf(v).value;
    return std::nullopt;
  }
  absl::StatusOr<std::string_view> Text(PyObject* v) {
    if (!IsStr(v)) return TypeError(v, "str");
    std::optional<std::string_view> s = Utf8(v);
    if (!s) return Error("a str that is not valid UTF-8");
    return *s;
  }
  absl::StatusOr<StrId> Str(PyObject* v) { return d_.Intern(v, path_); }
  std::optional<StrId> MaybeStr(PyObject* v) {
    if (!IsStr(v)) return std::nullopt;
    absl::StatusOr<StrId> s = d_.Intern(v, path_);
    if (!s.ok()) return std::nullopt;
    return *s;
  }
  absl::StatusOr<Action> ActionOf(PyObject* v) {
    ASSIGN_OR_RETURN(std::string_view s, Text(v));
    return ParseAction(s);
  }
  absl::StatusOr<bool> Bool(PyObject* v) { return d_.Bool(v, path_); }
  std::optional<double> Number(PyObject* v) const {
    if (PyFloat_Check(v)) return PyFloat_AS_DOUBLE(v);
    if (IsInt(v)) return static_cast<double>(IntOf(v).value);
    return std::nullopt;
  }
  absl::StatusOr<StackId> Stack(PyObject* v) { return d_.Stack(v, path_); }
  absl::StatusOr<StreamId> Stream(PyObject* v) {
    ASSIGN_OR_RETURN(uint64_t value, Address(v));
    const StreamId id = d_.snap_.streams.Intern(static_cast<int64_t>(value));
    if (!id.valid()) return Error(parse::TooManyStreams());
    return id;
  }
  absl::StatusOr<PoolId> Pool(PyObject* v) { return d_.Pool(v, path_); }
  std::optional<StrId> DictText(PyObject* v) {
    if (!IsDict(v)) return std::nullopt;
    return d_.snap_.strings.Intern(d_.RenderText(v, 0));
  }
  template <typename Fn>
  absl::Status ForEachItem(PyObject* v, Fn&& fn) {
    if (!IsDict(v)) return absl::OkStatus();
    Py_ssize_t pos = 0;
    PyObject *key, *x;
    while (PyDict_Next(v, &pos, &key, &x)) {
      if (!IsStr(key)) continue;
      if (std::optional<std::string_view> k = Utf8(key)) fn(*k, x);
    }
    return absl::OkStatus();
  }
  template <typename Fn>
  absl::Status ForEachListItem(PyObject* v, Fn&& fn) {
    if (!python::IsList(v)) return absl::OkStatus();
    for (Py_ssize_t i = 0, n = SizeOf(v); i < n; ++i) fn(ItemOf(v, i));
    return absl::OkStatus();
  }
  absl::Status TypeError(PyObject* v, std::string_view want) {
    return d_.TypeError(path_, v, want);
  }
  absl::Status Error(std::string_view message) { return d_.Error(path_, message); }
  void Warn(std::string_view message) {
    d_.snap_.diagnostics.Warn(absl::StrCat(Pointer(path_), ": ", Sv(message)));
  }
  template <typename T>
  void Limit(Limited kind, T read) {
    d_.limits_.Note(kind, read, d_.limits_.Seen(kind) ? std::string() : Pointer(path_));
  }
  StrId NotAvailable() const { return d_.na_; }
  EventExtra& Extra() { return d_.ExtraOf(record_); }
  absl::Status Blocks(PyObject* v, SegmentRec& rec) { return d_.ReadBlocks(v, path_, rec); }
  absl::Status History(PyObject* v, BlockRec& rec) { return d_.ReadHistory(v, path_, rec); }

 private:
  ObjectDecoder& d_;
  const Path& path_;
  uint32_t record_;
};

Key ObjectDecoder::KeyOf(PyObject* k) {
  if (auto it = keys_.find(k); it != keys_.end()) return it->second;
  Key key = Key::kOther;
  if (IsStr(k)) {
    if (std::optional<std::string_view> name = Utf8(k)) key = KeyOfName(*name);
  }
  keys_.emplace(k, key);
  return key;
}

template <typename Set>
absl::Status ObjectDecoder::ForEachField(PyObject* dict, const Path& p, Rec rec, uint32_t record,
                                         Set&& set) {
  Py_ssize_t pos = 0;
  PyObject *k, *v;
  while (PyDict_Next(dict, &pos, &k, &v)) {
    const Key key = KeyOf(k);
    const Field field = FieldOf(rec, key);
    if (field == Field::kNone) continue;
    const Path kp = p.Key(KeyName(key));
    ObjectField f(*this, kp, record);
    RETURN_IF_ERROR(set(f, key, field, v));
  }
  return absl::OkStatus();
}

absl::StatusOr<int64_t> ObjectDecoder::Int(PyObject* v, const Path& p) {
  if (PyBool_Check(v)) return v == Py_True ? 1 : 0;
  if (!IsInt(v)) return TypeError(p, v, "int");
  const IntValue x = IntOf(v);
  if (x.wide) {
    snap_.diagnostics.Warn(absl::StrCat(Pointer(p), ": integer does not fit in 64 bits; clamped"));
  }
  return x.value;
}

absl::StatusOr<uint64_t> ObjectDecoder::Address(PyObject* v, const Path& p) {
  if (!IsInt(v)) return TypeError(p, v, "int");
  const IntValue x = IntOf(v);
  if (x.huge) return Error(p, "integer does not fit in 64 bits");
  return x.unsigned_value;
}

absl::StatusOr<bool> ObjectDecoder::Bool(PyObject* v, const Path& p) {
  if (PyBool_Check(v)) return v == Py_True;
  if (IsInt(v)) return IntOf(v).value != 0;
  return TypeError(p, v, "bool");
}

absl::StatusOr<StrId> ObjectDecoder::Intern(PyObject* s, const Path& p) {
  if (!IsStr(s)) return TypeError(p, s, "str");
  if (auto it = strings_.find(s); it != strings_.end()) return it->second;
  std::optional<std::string_view> text = Utf8(s);
  if (!text) return Error(p, "a str that is not valid UTF-8");
  const StrId id = snap_.strings.Intern(*text);
  strings_.emplace(s, id);
  return id;
}

absl::StatusOr<FrameId> ObjectDecoder::FrameOf(PyObject* item, const Path& ip) {
  if (auto it = frames_.find(item); it != frames_.end()) return it->second;
  Frame f{StringPool::kEmpty, StringPool::kEmpty, 0};
  bool is_frame = false;  // the keys that make a pickle dict a frame
  RETURN_IF_ERROR(ForEachField(item, ip, Rec::kFrame, 0,
                               [&](ObjectField& access, Key key, Field field, PyObject* v) {
                                 is_frame = is_frame || TypesRecord(Rec::kFrame, key);
                                 return parse::SetFrame(access, field, v, f);
                               }));
  if (!is_frame) return Error(ip, "expected a frame (a dict with 'filename' and 'line')");
  const FrameId id = snap_.frames.Intern(f);
  frames_.emplace(item, id);
  return id;
}

absl::StatusOr<StackId> ObjectDecoder::Stack(PyObject* v, const Path& p) {
  if (v == Py_None) return StackId();
  if (!IsList(v)) return TypeError(p, v, "list");
  if (auto it = stacks_.find(v); it != stacks_.end()) return it->second;
  frame_scratch_.clear();
  for (Py_ssize_t i = 0, n = SizeOf(v); i < n; ++i) {
    PyObject* item = ItemOf(v, i);
    if (IsStr(item)) continue;  // 2.0-era strings among frames: skipped
    const Path ip = p.Index(static_cast<size_t>(i));
    if (!IsDict(item)) return TypeError(ip, item, "a frame dict");
    ASSIGN_OR_RETURN(FrameId frame, FrameOf(item, ip));
    frame_scratch_.push_back(frame);
  }
  const StackId id = snap_.stacks.Intern(frame_scratch_);
  stacks_.emplace(v, id);
  return id;
}

absl::StatusOr<PoolId> ObjectDecoder::Pool(PyObject* v, const Path& p) {
  if (v == Py_None) return PoolId{};
  if (!IsList(v) || SizeOf(v) != 2) return TypeError(p, v, "a pair of ints");
  PoolId pool;
  ASSIGN_OR_RETURN(pool.first, Address(ItemOf(v, 0), p.Index(0)));
  ASSIGN_OR_RETURN(pool.second, Address(ItemOf(v, 1), p.Index(1)));
  return pool;
}

// Mirrors the readers' rendering of a `user_metadata` dict.
std::string ObjectDecoder::RenderText(PyObject* v, int depth) const {
  if (depth > 16) return "...";
  if (v == Py_None) return "None";
  if (PyBool_Check(v)) return v == Py_True ? "True" : "False";
  if (IsInt(v)) {
    const IntValue x = IntOf(v);
    return x.wide && !x.huge ? absl::StrCat(x.unsigned_value) : absl::StrCat(x.value);
  }
  if (PyFloat_Check(v)) return absl::StrCat(PyFloat_AS_DOUBLE(v));
  if (IsStr(v)) return std::string(Utf8(v).value_or(""));
  if (IsDict(v)) {
    std::string out = "{";
    bool first = true;
    Py_ssize_t pos = 0;
    PyObject *k, *x;
    while (PyDict_Next(v, &pos, &k, &x)) {
      absl::StrAppend(&out, first ? "" : ", ", RenderText(k, depth + 1), ": ",
                      RenderText(x, depth + 1));
      first = false;
      if (out.size() > parse::kMaxRenderedChars) {
        out += ", ...";
        break;
      }
    }
    return out + "}";
  }
  if (IsList(v)) return "<list>";
  return "?";
}

absl::Status ObjectDecoder::ReadHistory(PyObject* v, const Path& p, BlockRec& block) {
  if (!IsList(v)) return TypeError(p, v, "list");
  block.history.reset();
  for (Py_ssize_t i = 0, n = SizeOf(v); i < n; ++i) {
    const Path ip = p.Index(static_cast<size_t>(i));
    PyObject* entry = ItemOf(v, i);
    if (!IsDict(entry)) return TypeError(ip, entry, "dict");
    HistoryRec h;
    RETURN_IF_ERROR(ForEachField(entry, ip, Rec::kHistory, 0,
                                 [&](ObjectField& f, Key, Field field, PyObject* x) {
                                   return parse::SetHistory(f, field, x, h);
                                 }));
    if (i == 0) block.history = h;
  }
  return absl::OkStatus();
}

absl::Status ObjectDecoder::ReadBlock(PyObject* v, const Path& p) {
  if (!IsDict(v)) return TypeError(p, v, "dict");
  BlockRec rec;
  RETURN_IF_ERROR(
      ForEachField(v, p, Rec::kBlock, 0, [&](ObjectField& f, Key, Field field, PyObject* x) {
        return parse::SetBlock(f, field, x, rec);
      }));
  if (!rec.has_state) return Error(p, "block has no 'state'");
  snap_.blocks.push_back(parse::FinishBlock(rec, snap_.source));
  return absl::OkStatus();
}

absl::Status ObjectDecoder::ReadBlocks(PyObject* v, const Path& p, SegmentRec& segment) {
  if (segment.blocks_count > 0) snap_.blocks.resize(segment.blocks_begin);
  ASSIGN_OR_RETURN(segment.blocks_begin, Narrow(p, snap_.blocks.size(), "block records"));
  if (!IsList(v)) return TypeError(p, v, "list");
  for (Py_ssize_t i = 0, n = SizeOf(v); i < n; ++i) {
    RETURN_IF_ERROR(ReadBlock(ItemOf(v, i), p.Index(static_cast<size_t>(i))));
  }
  ASSIGN_OR_RETURN(const uint32_t end, Narrow(p, snap_.blocks.size(), "block records"));
  segment.blocks_count = end - segment.blocks_begin;
  return absl::OkStatus();
}

absl::Status ObjectDecoder::ReadSegment(PyObject* v, const Path& p) {
  if (!IsDict(v)) return TypeError(p, v, "dict");
  SegmentRec rec;
  ASSIGN_OR_RETURN(rec.blocks_begin, Narrow(p, snap_.blocks.size(), "block records"));
  RETURN_IF_ERROR(
      ForEachField(v, p, Rec::kSegment, 0, [&](ObjectField& f, Key, Field field, PyObject* x) {
        return parse::SetSegment(f, field, x, rec);
      }));
  if (!rec.has_total_size) return Error(p, "segment has no 'total_size'");
  Segment s = rec.segment;
  s.first_block = rec.blocks_begin;
  s.num_blocks = rec.blocks_count;
  snap_.segments.push_back(s);
  return absl::OkStatus();
}

absl::Status ObjectDecoder::ReadSegments(PyObject* v, const Path& p) {
  if (!IsList(v)) return TypeError(p, v, "list");
  snap_.segments.reserve(snap_.segments.size() + static_cast<size_t>(SizeOf(v)));
  for (Py_ssize_t i = 0, n = SizeOf(v); i < n; ++i) {
    RETURN_IF_ERROR(ReadSegment(ItemOf(v, i), p.Index(static_cast<size_t>(i))));
  }
  return absl::OkStatus();
}

absl::Status ObjectDecoder::ReadEvent(PyObject* v, const Path& p) {
  if (!IsDict(v)) return TypeError(p, v, "dict");
  TraceEvent ev;
  bool has_action = false;
  ASSIGN_OR_RETURN(const uint32_t index, Narrow(p, snap_.events.size(), "trace entries"));
  RETURN_IF_ERROR(
      ForEachField(v, p, Rec::kEvent, index, [&](ObjectField& f, Key, Field field, PyObject* x) {
        has_action = has_action || field == Field::kEventAction;
        return parse::SetEvent(f, field, x, ev);
      }));
  if (!has_action) return Error(p, "trace entry has no 'action'");
  snap_.events.push_back(ev);
  return absl::OkStatus();
}

absl::Status ObjectDecoder::ReadTraces(PyObject* v, const Path& p) {
  if (!IsList(v)) return TypeError(p, v, "list");
  size_t events = 0;
  for (Py_ssize_t d = 0, n = SizeOf(v); d < n; ++d) {
    PyObject* list = ItemOf(v, d);
    if (IsList(list)) events += static_cast<size_t>(SizeOf(list));
  }
  snap_.events.reserve(snap_.events.size() + events);
  for (Py_ssize_t d = 0, n = SizeOf(v); d < n; ++d) {
    const Path dp = p.Index(static_cast<size_t>(d));
    ASSIGN_OR_RETURN(const int32_t device,
                     Narrow<int32_t>(dp, static_cast<uint64_t>(d), "device traces"));
    PyObject* entries = ItemOf(v, d);
    if (!IsList(entries)) return TypeError(dp, entries, "list");
    ASSIGN_OR_RETURN(const uint32_t begin, Narrow(dp, snap_.events.size(), "trace entries"));
    for (Py_ssize_t i = 0, m = SizeOf(entries); i < m; ++i) {
      RETURN_IF_ERROR(ReadEvent(ItemOf(entries, i), dp.Index(static_cast<size_t>(i))));
    }
    ASSIGN_OR_RETURN(const uint32_t end, Narrow(dp, snap_.events.size(), "trace entries"));
    snap_.traces.push_back(DeviceTrace{device, begin, end});
  }
  return absl::OkStatus();
}

absl::Status ObjectDecoder::ReadSettings(PyObject* v, const Path& p) {
  if (v == Py_None) return absl::OkStatus();
  if (!IsDict(v)) return TypeError(p, v, "dict");
  snap_.settings.present = true;
  return ForEachField(v, p, Rec::kSettings, 0, [&](ObjectField& f, Key, Field field, PyObject* x) {
    return parse::SetSettings(f, field, x, snap_.settings);
  });
}

absl::Status ObjectDecoder::ReadAnnotations(PyObject* v, const Path& p) {
  if (!IsList(v)) return TypeError(p, v, "list");
  for (Py_ssize_t i = 0, n = SizeOf(v); i < n; ++i) {
    const Path ip = p.Index(static_cast<size_t>(i));
    PyObject* item = ItemOf(v, i);
    if (!IsDict(item)) return TypeError(ip, item, "dict");
    Annotation a;
    RETURN_IF_ERROR(ForEachField(item, ip, Rec::kAnnotation, 0,
                                 [&](ObjectField& f, Key, Field field, PyObject* x) {
                                   return parse::SetAnnotation(f, field, x, a);
                                 }));
    snap_.annotations.push_back(a);
  }
  return absl::OkStatus();
}

absl::StatusOr<Snapshot> ObjectDecoder::Run(PyObject* root) {
  snap_.source.container = ContainerFormat::kJson;  // a tree of values, as JSON is
  snap_.source.path = name_;
  Path top;
  if (IsList(root)) {
    // 1.13 / torch.cuda.memory_snapshot(): the segments list alone.
    snap_.source.bare_segment_list = true;
    RETURN_IF_ERROR(ReadSegments(root, top));
  } else if (!IsDict(root)) {
    return Error(top, absl::StrCat("expected a snapshot (the dict torch.cuda.memory._snapshot() "
                                   "returns, or a list of segments), got ",
                                   Py_TYPE(root)->tp_name));
  } else {
    TopRec<PyObject*> rec;
    Py_ssize_t pos = 0;
    PyObject *k, *v;
    while (PyDict_Next(root, &pos, &k, &v)) {
      const Key key = KeyOf(k);
      parse::SetTop<ObjectField>(FieldOf(Rec::kTop, key), key, v, rec);
    }
    if (!rec.segments && !rec.device_traces) {
      return Error(top, "the dict is not a snapshot (no 'segments' or 'device_traces' key)");
    }
    if (rec.segments) {
      RETURN_IF_ERROR(ReadSegments(*rec.segments, top.Key(KeyName(Key::kSegments))));
    }
    if (rec.device_traces) {
      RETURN_IF_ERROR(ReadTraces(*rec.device_traces, top.Key(KeyName(rec.traces_key))));
    }
    if (rec.settings) {
      RETURN_IF_ERROR(ReadSettings(*rec.settings, top.Key(KeyName(Key::kAllocatorSettings))));
    }
    if (rec.annotations) {
      RETURN_IF_ERROR(
          ReadAnnotations(*rec.annotations, top.Key(KeyName(Key::kExternalAnnotations))));
    }
  }
  limits_.AddWarnings(snap_.diagnostics);
  Normalize(snap_);
  return std::move(snap_);
}

}  // namespace

absl::StatusOr<Snapshot> ReadObject(PyObject* root, const std::string& name) {
  ObjectDecoder decoder(name);
  return decoder.Run(root);
}

}  // namespace memsnap::python
