// The JSON reader: the same schema as the pickle (schema.h), read with simdjson's DOM and written
// into the same Snapshot the pickle decoder produces: every key is resolved and set through the
// schema table and its setters, with JsonField as this reader's view of a value.
//
// Integers are read as int64/uint64, never as double. Errors carry a JSON pointer to the value:
//   "snap.json: /segments/12/blocks/3/size: expected integer, got string"
// Tolerant readings (documented in docs/reader.md): unknown keys are ignored; a duplicated
// key is applied in order, so the last one wins; `traces` is an alias of `device_traces`.
//
// Memory: the DOM costs about 2x the input on top of the input; JSON snapshots are rare (no real
// producer writes them by default), so the simpler DOM is preferred over on-demand parsing.
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "memsnap/parse/reader.h"
#include "memsnap/util/narrow.h"
#include "memsnap/util/status_macros.h"
#include "memsnap/util/strings.h"
#include "parse/schema.h"
#include "simdjson.h"

namespace memsnap::parse {

namespace {

using simdjson::dom::element;
using simdjson::dom::element_type;

/// A JSON pointer under construction, kept on the C++ stack: rendered only for error messages.
struct Path {
  const Path* parent = nullptr;
  std::string_view key;
  int64_t index = -1;  // >= 0: an array index instead of a key
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
      continue;
    }
    for (char c : (*it)->key) {  // RFC 6901 escaping
      if (c == '~') {
        out += "~0";
      } else if (c == '/') {
        out += "~1";
      } else {
        out += c;
      }
    }
  }
  return out;
}

const char* TypeName(element_type t) {
  switch (t) {
    case element_type::ARRAY:
      return "array";
    case element_type::OBJECT:
      return "object";
    case element_type::INT64:
    case element_type::UINT64:
      return "integer";
    case element_type::DOUBLE:
      return "float";
    case element_type::STRING:
      return "string";
    case element_type::BOOL:
      return "bool";
    case element_type::NULL_VALUE:
      return "null";
  }
  return "?";
}

// simdjson_result::value_unsafe() returns an rvalue reference into a temporary: copy it out before
// a range-for, or the loop iterates a dead object.
simdjson::dom::object ObjOf(element e) { return e.get_object().value_unsafe(); }
simdjson::dom::array ArrOf(element e) { return e.get_array().value_unsafe(); }

/// The one place that decides whether simdjson may read the input in place: it over-reads up to
/// SIMDJSON_PADDING bytes, so inputs without that much readable slack are copied once.
simdjson::simdjson_result<element> ParseDom(simdjson::dom::parser& parser,
                                            const io::InputSource& input) {
  std::string_view bytes = input.bytes();
  bool in_place = input.padding() >= simdjson::SIMDJSON_PADDING;
  return parser.parse(bytes.data(), bytes.size(), /*realloc_if_needed=*/!in_place);
}

class JsonField;

class JsonDecoder {
 public:
  explicit JsonDecoder(io::InputSource& input) : input_(input) {
    na_ = snap_.strings.Intern("N/A");
  }

  absl::StatusOr<Snapshot> Run();

 private:
  friend class JsonField;

  absl::Status Error(const Path& p, std::string_view what) const {
    return absl::InvalidArgumentError(
        absl::StrCat(input_.name(), ": ", Pointer(p), ": ", Sv(what)));
  }
  // `n`, a count or index of `what` the model holds in 32 bits (or a device ordinal in 31), or an
  // error naming the file and key path: never wrapped around.
  template <class To = uint32_t>
  absl::StatusOr<To> Narrow(const Path& p, uint64_t n, std::string_view what) const {
    if (std::optional<To> v = CheckedCast<To>(n)) [[likely]] {
      return *v;
    }
    return Error(p, absl::StrCat(n, " ", Sv(what), ": more than the model holds (",
                                 std::numeric_limits<To>::max(), ")"));
  }
  absl::Status TypeError(const Path& p, element e, std::string_view want) const {
    return Error(p, absl::StrCat("expected ", Sv(want), ", got ", TypeName(e.type())));
  }

  absl::StatusOr<int64_t> Int(element e, const Path& p);
  absl::StatusOr<uint64_t> Address(element e, const Path& p);
  absl::StatusOr<bool> Bool(element e, const Path& p);
  absl::StatusOr<StackId> Stack(element e, const Path& p);
  absl::StatusOr<PoolId> Pool(element e, const Path& p);
  absl::StatusOr<simdjson::dom::array> Array(element e, const Path& p);
  absl::StatusOr<simdjson::dom::object> Object(element e, const Path& p);
  std::string RenderText(element e, int depth) const;

  // Calls set(field_access, key, field, value) for every key of `obj` that means something in a
  // `rec` (the schema's FieldOf); other keys are ignored.
  template <typename Set>
  absl::Status ForEachField(simdjson::dom::object obj, const Path& p, Rec rec, uint32_t record,
                            Set&& set);
  absl::Status ReadSegments(element e, const Path& p);
  absl::Status ReadSegment(element e, const Path& p);
  absl::Status ReadBlocks(element e, const Path& p, SegmentRec& segment);
  absl::Status ReadBlock(element e, const Path& p);
  absl::Status ReadHistory(element e, const Path& p, BlockRec& block);
  absl::Status ReadTraces(element e, const Path& p);
  absl::Status ReadEvent(element e, const Path& p);
  absl::Status ReadSettings(element e, const Path& p);
  absl::Status ReadAnnotations(element e, const Path& p);
  EventExtra& ExtraOf(uint32_t event) {
    if (snap_.event_extras.empty() || snap_.event_extras.back().event != event) {
      snap_.event_extras.push_back(EventExtra{});
      snap_.event_extras.back().event = event;
    }
    return snap_.event_extras.back();
  }

  io::InputSource& input_;
  Snapshot snap_;
  LimitReport limits_;  // values out of range (model/limits.h)
  StrId na_;
  std::vector<FrameId> frame_scratch_;
};

// One value of one object as the schema's setters see it (the contract is in schema.h); messages
// carry its JSON pointer.
class JsonField {
 public:
  using Value = element;
  JsonField(JsonDecoder& d, const Path& path, uint32_t record)
      : d_(d), path_(path), record_(record) {}

  absl::StatusOr<int64_t> Int(element v) { return d_.Int(v, path_); }
  absl::StatusOr<uint64_t> Address(element v) { return d_.Address(v, path_); }
  bool IsWide(element v) const { return v.type() == element_type::UINT64; }
  bool IsNone(element v) const { return v.type() == element_type::NULL_VALUE; }
  bool IsList(element v) const { return v.type() == element_type::ARRAY; }
  std::optional<int64_t> IntOrBool(element v) const {
    if (v.type() == element_type::INT64) return v.get_int64().value_unsafe();
    if (v.type() == element_type::BOOL) return v.get_bool().value_unsafe() ? 1 : 0;
    return std::nullopt;
  }
  absl::StatusOr<std::string_view> Text(element v) {
    if (v.type() != element_type::STRING) return TypeError(v, "str");
    return v.get_string().value_unsafe();
  }
  absl::StatusOr<StrId> Str(element v) {
    ASSIGN_OR_RETURN(std::string_view s, Text(v));
    return d_.snap_.strings.Intern(s);
  }
  std::optional<StrId> MaybeStr(element v) {
    if (v.type() != element_type::STRING) return std::nullopt;
    return d_.snap_.strings.Intern(v.get_string().value_unsafe());
  }
  absl::StatusOr<Action> ActionOf(element v) {
    ASSIGN_OR_RETURN(std::string_view s, Text(v));
    return ParseAction(s);
  }
  absl::StatusOr<bool> Bool(element v) { return d_.Bool(v, path_); }
  std::optional<double> Number(element v) const {
    if (v.type() == element_type::DOUBLE) return v.get_double().value_unsafe();
    if (v.type() == element_type::INT64) return static_cast<double>(v.get_int64().value_unsafe());
    return std::nullopt;
  }
  absl::StatusOr<StackId> Stack(element v) { return d_.Stack(v, path_); }
  absl::StatusOr<StreamId> Stream(element v) {
    ASSIGN_OR_RETURN(uint64_t value, Address(v));
    const StreamId id = d_.snap_.streams.Intern(static_cast<int64_t>(value));
    if (!id.valid()) return Error(TooManyStreams());
    return id;
  }
  absl::StatusOr<PoolId> Pool(element v) { return d_.Pool(v, path_); }
  std::optional<StrId> DictText(element v) {
    if (v.type() != element_type::OBJECT) return std::nullopt;
    return d_.snap_.strings.Intern(d_.RenderText(v, 0));
  }
  template <typename Fn>
  absl::Status ForEachItem(element v, Fn&& fn) {
    if (v.type() != element_type::OBJECT) return absl::OkStatus();
    for (auto [key, x] : ObjOf(v)) fn(key, x);
    return absl::OkStatus();
  }
  template <typename Fn>
  absl::Status ForEachListItem(element v, Fn&& fn) {
    if (v.type() != element_type::ARRAY) return absl::OkStatus();
    for (element x : ArrOf(v)) fn(x);
    return absl::OkStatus();
  }
  absl::Status TypeError(element v, std::string_view want) {
    // The setters name Python's types; a JSON user reads JSON's.
    if (want == "str") want = "string";
    if (want == "int") want = "integer";
    if (want == "list") want = "array";
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
  absl::Status Blocks(element v, SegmentRec& rec) { return d_.ReadBlocks(v, path_, rec); }
  absl::Status History(element v, BlockRec& rec) { return d_.ReadHistory(v, path_, rec); }

 private:
  JsonDecoder& d_;
  const Path& path_;
  uint32_t record_;
};

template <typename Set>
absl::Status JsonDecoder::ForEachField(simdjson::dom::object obj, const Path& p, Rec rec,
                                       uint32_t record, Set&& set) {
  for (auto [name, v] : obj) {
    const Key key = KeyOfName(name);
    const Field field = FieldOf(rec, key);
    if (field == Field::kNone) continue;
    const Path kp = p.Key(name);
    JsonField f(*this, kp, record);
    RETURN_IF_ERROR(set(f, key, field, v));
  }
  return absl::OkStatus();
}

absl::StatusOr<int64_t> JsonDecoder::Int(element e, const Path& p) {
  switch (e.type()) {
    case element_type::INT64:
      return e.get_int64().value_unsafe();
    case element_type::UINT64:
      snap_.diagnostics.Warn(
          absl::StrCat(Pointer(p), ": integer does not fit in 64 bits; clamped"));
      return std::numeric_limits<int64_t>::max();
    case element_type::BOOL:
      return e.get_bool().value_unsafe() ? 1 : 0;
    default:
      return TypeError(p, e, "integer");
  }
}

absl::StatusOr<uint64_t> JsonDecoder::Address(element e, const Path& p) {
  switch (e.type()) {
    case element_type::INT64:
      return static_cast<uint64_t>(e.get_int64().value_unsafe());
    case element_type::UINT64:
      return e.get_uint64().value_unsafe();
    default:
      return TypeError(p, e, "integer");
  }
}

absl::StatusOr<bool> JsonDecoder::Bool(element e, const Path& p) {
  if (e.type() == element_type::BOOL) return e.get_bool().value_unsafe();
  if (e.type() == element_type::INT64) return e.get_int64().value_unsafe() != 0;
  return TypeError(p, e, "bool");
}

absl::StatusOr<simdjson::dom::array> JsonDecoder::Array(element e, const Path& p) {
  if (e.type() != element_type::ARRAY) return TypeError(p, e, "array");
  return ArrOf(e);
}

absl::StatusOr<simdjson::dom::object> JsonDecoder::Object(element e, const Path& p) {
  if (e.type() != element_type::OBJECT) return TypeError(p, e, "object");
  return ObjOf(e);
}

absl::StatusOr<StackId> JsonDecoder::Stack(element e, const Path& p) {
  if (e.type() == element_type::NULL_VALUE) return StackId();
  ASSIGN_OR_RETURN(simdjson::dom::array frames, Array(e, p));
  frame_scratch_.clear();
  size_t i = 0;
  for (element item : frames) {
    Path ip = p.Index(i++);
    if (item.type() == element_type::STRING) continue;  // 2.0-era strings among frames: skipped
    if (item.type() != element_type::OBJECT) return TypeError(ip, item, "a frame object");
    Frame f{StringPool::kEmpty, StringPool::kEmpty, 0};
    bool is_frame = false;  // the keys that make a pickle dict a frame
    RETURN_IF_ERROR(ForEachField(ObjOf(item), ip, Rec::kFrame, 0,
                                 [&](JsonField& field_access, Key key, Field field, element v) {
                                   is_frame = is_frame || TypesRecord(Rec::kFrame, key);
                                   return SetFrame(field_access, field, v, f);
                                 }));
    if (!is_frame) return Error(ip, "expected a frame (an object with 'filename' and 'line')");
    frame_scratch_.push_back(snap_.frames.Intern(f));
  }
  return snap_.stacks.Intern(frame_scratch_);
}

absl::StatusOr<PoolId> JsonDecoder::Pool(element e, const Path& p) {
  if (e.type() == element_type::NULL_VALUE) return PoolId{};
  if (e.type() != element_type::ARRAY || ArrOf(e).size() != 2) {
    return TypeError(p, e, "a pair of integers");
  }
  simdjson::dom::array a = ArrOf(e);
  PoolId pool;
  ASSIGN_OR_RETURN(pool.first, Address(a.at(0).value_unsafe(), p.Index(0)));
  ASSIGN_OR_RETURN(pool.second, Address(a.at(1).value_unsafe(), p.Index(1)));
  return pool;
}

// Mirrors the pickle decoder's rendering of a `user_metadata` dict.
std::string JsonDecoder::RenderText(element e, int depth) const {
  if (depth > 16) return "...";
  switch (e.type()) {
    case element_type::NULL_VALUE:
      return "None";
    case element_type::BOOL:
      return e.get_bool().value_unsafe() ? "True" : "False";
    case element_type::INT64:
      return absl::StrCat(e.get_int64().value_unsafe());
    case element_type::UINT64:
      return absl::StrCat(e.get_uint64().value_unsafe());
    case element_type::DOUBLE:
      return absl::StrCat(e.get_double().value_unsafe());
    case element_type::STRING:
      return std::string(e.get_string().value_unsafe());
    case element_type::OBJECT: {
      std::string out = "{";
      bool first = true;
      for (auto [key, v] : ObjOf(e)) {
        absl::StrAppend(&out, first ? "" : ", ", Sv(key), ": ", RenderText(v, depth + 1));
        first = false;
        if (out.size() > kMaxRenderedChars) {
          out += ", ...";
          break;
        }
      }
      return out + "}";
    }
    case element_type::ARRAY:
      return "<list>";
  }
  return "?";
}

absl::Status JsonDecoder::ReadHistory(element e, const Path& p, BlockRec& block) {
  // 2.0 era: history[0] describes the block itself (FinishBlock in schema.h).
  ASSIGN_OR_RETURN(simdjson::dom::array entries, Array(e, p));
  size_t i = 0;
  block.history.reset();
  for (element entry : entries) {
    Path ip = p.Index(i);
    ASSIGN_OR_RETURN(simdjson::dom::object obj, Object(entry, ip));
    HistoryRec h;
    RETURN_IF_ERROR(ForEachField(
        obj, ip, Rec::kHistory, 0,
        [&](JsonField& f, Key, Field field, element v) { return SetHistory(f, field, v, h); }));
    if (i++ == 0) block.history = h;
  }
  return absl::OkStatus();
}

absl::Status JsonDecoder::ReadBlock(element e, const Path& p) {
  ASSIGN_OR_RETURN(simdjson::dom::object obj, Object(e, p));
  BlockRec rec;
  RETURN_IF_ERROR(ForEachField(
      obj, p, Rec::kBlock, 0,
      [&](JsonField& f, Key, Field field, element v) { return SetBlock(f, field, v, rec); }));
  if (!rec.has_state) return Error(p, "block has no 'state'");
  snap_.blocks.push_back(FinishBlock(rec, snap_.source));
  return absl::OkStatus();
}

absl::Status JsonDecoder::ReadBlocks(element e, const Path& p, SegmentRec& segment) {
  // A duplicated `blocks` key: the last one wins, so the earlier one's blocks go.
  if (segment.blocks_count > 0) snap_.blocks.resize(segment.blocks_begin);
  ASSIGN_OR_RETURN(segment.blocks_begin, Narrow(p, snap_.blocks.size(), "block records"));
  ASSIGN_OR_RETURN(simdjson::dom::array list, Array(e, p));
  size_t i = 0;
  for (element b : list) RETURN_IF_ERROR(ReadBlock(b, p.Index(i++)));
  ASSIGN_OR_RETURN(const uint32_t end, Narrow(p, snap_.blocks.size(), "block records"));
  segment.blocks_count = end - segment.blocks_begin;
  return absl::OkStatus();
}

absl::Status JsonDecoder::ReadSegment(element e, const Path& p) {
  ASSIGN_OR_RETURN(simdjson::dom::object obj, Object(e, p));
  SegmentRec rec;
  ASSIGN_OR_RETURN(rec.blocks_begin, Narrow(p, snap_.blocks.size(), "block records"));
  RETURN_IF_ERROR(ForEachField(
      obj, p, Rec::kSegment, 0,
      [&](JsonField& f, Key, Field field, element v) { return SetSegment(f, field, v, rec); }));
  // What makes an object a segment, as in the pickle decoder (which types dicts by their keys).
  if (!rec.has_total_size) return Error(p, "segment has no 'total_size'");
  Segment s = rec.segment;
  s.first_block = rec.blocks_begin;
  s.num_blocks = rec.blocks_count;
  snap_.segments.push_back(s);
  return absl::OkStatus();
}

absl::Status JsonDecoder::ReadSegments(element e, const Path& p) {
  ASSIGN_OR_RETURN(simdjson::dom::array list, Array(e, p));
  // Reserve what the arrays hold (sizes are in simdjson's tape): vectors grown by doubling would
  // leave their old buffers behind, up to half again the peak memory.
  size_t blocks = 0;
  for (element s : list) {
    simdjson::dom::array b;
    if (s.at_key(KeyName(Key::kBlocks)).get(b) == simdjson::SUCCESS) blocks += b.size();
  }
  snap_.segments.reserve(snap_.segments.size() + list.size());
  snap_.blocks.reserve(snap_.blocks.size() + blocks);
  size_t i = 0;
  for (element s : list) RETURN_IF_ERROR(ReadSegment(s, p.Index(i++)));
  return absl::OkStatus();
}

absl::Status JsonDecoder::ReadEvent(element e, const Path& p) {
  ASSIGN_OR_RETURN(simdjson::dom::object obj, Object(e, p));
  TraceEvent ev;
  bool has_action = false;
  ASSIGN_OR_RETURN(const uint32_t index, Narrow(p, snap_.events.size(), "trace entries"));
  RETURN_IF_ERROR(
      ForEachField(obj, p, Rec::kEvent, index, [&](JsonField& f, Key, Field field, element v) {
        has_action = has_action || field == Field::kEventAction;
        return SetEvent(f, field, v, ev);
      }));
  if (!has_action) return Error(p, "trace entry has no 'action'");
  snap_.events.push_back(ev);
  return absl::OkStatus();
}

absl::Status JsonDecoder::ReadTraces(element e, const Path& p) {
  ASSIGN_OR_RETURN(simdjson::dom::array devices, Array(e, p));
  size_t events = 0;
  for (element list : devices) {
    simdjson::dom::array entries;
    if (list.get(entries) == simdjson::SUCCESS) events += entries.size();
  }
  snap_.events.reserve(snap_.events.size() + events);
  size_t d = 0;
  for (element list : devices) {
    Path dp = p.Index(d);
    ASSIGN_OR_RETURN(const int32_t device, Narrow<int32_t>(dp, d, "device traces"));
    ASSIGN_OR_RETURN(simdjson::dom::array entries, Array(list, dp));
    ASSIGN_OR_RETURN(const uint32_t begin, Narrow(dp, snap_.events.size(), "trace entries"));
    size_t i = 0;
    for (element entry : entries) RETURN_IF_ERROR(ReadEvent(entry, dp.Index(i++)));
    ASSIGN_OR_RETURN(const uint32_t end, Narrow(dp, snap_.events.size(), "trace entries"));
    snap_.traces.push_back(DeviceTrace{device, begin, end});
    ++d;
  }
  return absl::OkStatus();
}

absl::Status JsonDecoder::ReadSettings(element e, const Path& p) {
  if (e.type() == element_type::NULL_VALUE) return absl::OkStatus();
  ASSIGN_OR_RETURN(simdjson::dom::object obj, Object(e, p));
  snap_.settings.present = true;
  return ForEachField(obj, p, Rec::kSettings, 0, [&](JsonField& f, Key, Field field, element v) {
    return SetSettings(f, field, v, snap_.settings);
  });
}

absl::Status JsonDecoder::ReadAnnotations(element e, const Path& p) {
  ASSIGN_OR_RETURN(simdjson::dom::array list, Array(e, p));
  size_t i = 0;
  for (element item : list) {
    Path ip = p.Index(i++);
    ASSIGN_OR_RETURN(simdjson::dom::object obj, Object(item, ip));
    Annotation a;
    RETURN_IF_ERROR(ForEachField(
        obj, ip, Rec::kAnnotation, 0,
        [&](JsonField& f, Key, Field field, element v) { return SetAnnotation(f, field, v, a); }));
    snap_.annotations.push_back(a);
  }
  return absl::OkStatus();
}

absl::StatusOr<Snapshot> JsonDecoder::Run() {
  simdjson::dom::parser parser;
  element root;
  if (auto err = ParseDom(parser, input_).get(root)) {
    return absl::InvalidArgumentError(
        absl::StrCat(input_.name(), ": invalid JSON: ", simdjson::error_message(err)));
  }
  snap_.source.container = ContainerFormat::kJson;
  snap_.source.file_bytes = input_.bytes().size();
  Path top;
  if (root.type() == element_type::ARRAY) {
    // 1.13 / torch.cuda.memory_snapshot(): the segments list alone.
    snap_.source.bare_segment_list = true;
    absl::Status read = ReadSegments(root, top);
    if (!read.ok()) {
      // An array whose first item is no segment (an object with 'total_size') is other JSON (a
      // manifest, a list of files): not a snapshot that failed to read. Same message either way.
      simdjson::dom::array items = root.get_array().value_unsafe();
      simdjson::dom::object first;
      const bool segments = items.size() > 0 && items.at(0).get(first) == simdjson::SUCCESS &&
                            first.at_key(KeyName(Key::kTotalSize)).error() == simdjson::SUCCESS;
      if (!segments) return NotASnapshotError(std::string(read.message()));
      return read;
    }
    return std::move(snap_);
  }
  if (root.type() != element_type::OBJECT) {
    // Valid JSON that is no snapshot (a manifest, a config): not a snapshot that failed to read.
    return NotASnapshotError(std::string(
        Error(top, absl::StrCat("the JSON holds a ", TypeName(root.type()),
                                ", not a snapshot (expected an object with 'segments' or an "
                                "array of segments)"))
            .message()));
  }
  TopRec<element> rec;
  for (auto [name, v] : ObjOf(root)) {
    const Key key = KeyOfName(name);
    SetTop<JsonField>(FieldOf(Rec::kTop, key), key, v, rec);
  }
  if (!rec.segments && !rec.device_traces) {
    return NotASnapshotError(std::string(
        Error(top, "the JSON object is not a snapshot (no 'segments' or 'device_traces' key)")
            .message()));
  }
  if (rec.segments) RETURN_IF_ERROR(ReadSegments(*rec.segments, top.Key(KeyName(Key::kSegments))));
  if (rec.device_traces) {
    RETURN_IF_ERROR(ReadTraces(*rec.device_traces, top.Key(KeyName(rec.traces_key))));
  }
  if (rec.settings) {
    RETURN_IF_ERROR(ReadSettings(*rec.settings, top.Key(KeyName(Key::kAllocatorSettings))));
  }
  if (rec.annotations) {
    RETURN_IF_ERROR(ReadAnnotations(*rec.annotations, top.Key(KeyName(Key::kExternalAnnotations))));
  }
  limits_.AddWarnings(snap_.diagnostics);
  return std::move(snap_);
}

}  // namespace

absl::StatusOr<Snapshot> ParseJson(io::InputSource& input) {
  JsonDecoder decoder(input);
  return decoder.Run();
}

}  // namespace memsnap::parse
