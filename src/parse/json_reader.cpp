// The JSON reader (snapshot-format.md §1.6): the same schema as the pickle, read with simdjson's
// DOM and written into the same Snapshot the pickle decoder produces (same fields, same
// normalization; the rules both use are in schema_common.h).
//
// Integers are read as int64/uint64, never as double. Errors carry a JSON pointer to the value:
//   "snap.json: /segments/12/blocks/3/size: expected integer, got string"
// Tolerant readings (documented in docs/input-formats.md): unknown keys are ignored; a duplicated
// key is applied in order, so the last one wins; `traces` is an alias of `device_traces`.
//
// Memory: the DOM costs about 2x the input on top of the input; JSON snapshots are rare (no real
// producer writes them by default), so the simpler DOM is preferred over on-demand parsing.
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "memsnap/parse/reader.h"
#include "memsnap/util/status_macros.h"
#include "memsnap/util/strings.h"
#include "parse/schema_common.h"
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
    case element_type::ARRAY: return "array";
    case element_type::OBJECT: return "object";
    case element_type::INT64:
    case element_type::UINT64: return "integer";
    case element_type::DOUBLE: return "float";
    case element_type::STRING: return "string";
    case element_type::BOOL: return "bool";
    case element_type::NULL_VALUE: return "null";
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

class JsonDecoder {
 public:
  explicit JsonDecoder(io::InputSource& input) : input_(input) { na_ = snap_.strings.Intern("N/A"); }

  absl::StatusOr<Snapshot> Run();

 private:
  absl::Status Error(const Path& p, std::string_view what) const {
    return absl::InvalidArgumentError(
        absl::StrCat(input_.name(), ": ", Pointer(p), ": ", Sv(what)));
  }
  absl::Status TypeError(const Path& p, element e, const char* want) const {
    return Error(p, absl::StrCat("expected ", want, ", got ", TypeName(e.type())));
  }
  template <typename T>
  void Limit(Limited kind, T read, const Path& p) {
    limits_.Note(kind, read, limits_.Seen(kind) ? std::string() : Pointer(p));
  }
  void Clamped(const Path& p) {
    snap_.diagnostics.Warn(
        absl::StrCat(Pointer(p), ": integer does not fit in 64 bits; clamped"));
  }

  absl::StatusOr<int64_t> Int(element e, const Path& p);
  absl::StatusOr<uint64_t> Address(element e, const Path& p);
  absl::StatusOr<std::string_view> Str(element e, const Path& p);
  absl::StatusOr<bool> Bool(element e, const Path& p);
  absl::StatusOr<StackId> Stack(element e, const Path& p);
  absl::StatusOr<PoolId> Pool(element e, const Path& p);
  absl::StatusOr<simdjson::dom::array> Array(element e, const Path& p);
  absl::StatusOr<simdjson::dom::object> Object(element e, const Path& p);
  std::string RenderText(element e, int depth) const;

  absl::Status ReadSegments(element e, const Path& p);
  absl::Status ReadSegment(element e, const Path& p);
  absl::Status ReadBlock(element e, const Path& p, Block& block);
  absl::Status ReadTraces(element e, const Path& p);
  absl::Status ReadEvent(element e, const Path& p);
  absl::Status ReadSettings(element e, const Path& p);
  absl::Status ReadTraceFlag(element e, const Path& p, bool overflowed, AllocatorSettings& s);
  absl::Status ReadAnnotations(element e, const Path& p);

  io::InputSource& input_;
  Snapshot snap_;
  LimitReport limits_;  // values out of range (model/limits.h)
  StrId na_;
  std::vector<FrameId> frame_scratch_;
};

absl::StatusOr<int64_t> JsonDecoder::Int(element e, const Path& p) {
  switch (e.type()) {
    case element_type::INT64: return e.get_int64().value_unsafe();
    case element_type::UINT64: Clamped(p); return std::numeric_limits<int64_t>::max();
    case element_type::BOOL: return e.get_bool().value_unsafe() ? 1 : 0;
    default: return TypeError(p, e, "integer");
  }
}

absl::StatusOr<uint64_t> JsonDecoder::Address(element e, const Path& p) {
  switch (e.type()) {
    case element_type::INT64: return static_cast<uint64_t>(e.get_int64().value_unsafe());
    case element_type::UINT64: return e.get_uint64().value_unsafe();
    default: return TypeError(p, e, "integer");
  }
}

absl::StatusOr<std::string_view> JsonDecoder::Str(element e, const Path& p) {
  if (e.type() != element_type::STRING) return TypeError(p, e, "string");
  return e.get_string().value_unsafe();
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
    bool is_frame = false;
    for (auto [key, v] : ObjOf(item)) {
      Path kp = ip.Key(key);
      if (key == "name") {
        ASSIGN_OR_RETURN(std::string_view s, Str(v, kp));
        f.name = snap_.strings.Intern(s);
      } else if (key == "filename") {
        ASSIGN_OR_RETURN(std::string_view s, Str(v, kp));
        f.filename = snap_.strings.Intern(s);
        is_frame = true;
      } else if (key == "line") {
        is_frame = true;
        if (v.type() == element_type::UINT64) {
          f.line = NormalizeLine(0, true);  // 2^64-1 is PyTorch's "unknown line"
        } else {
          ASSIGN_OR_RETURN(int64_t line, Int(v, kp));
          f.line = NormalizeLine(line, false);
        }
      }
    }
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
    case element_type::NULL_VALUE: return "None";
    case element_type::BOOL: return e.get_bool().value_unsafe() ? "True" : "False";
    case element_type::INT64: return absl::StrCat(e.get_int64().value_unsafe());
    case element_type::UINT64: return absl::StrCat(e.get_uint64().value_unsafe());
    case element_type::DOUBLE: return absl::StrCat(e.get_double().value_unsafe());
    case element_type::STRING: return std::string(e.get_string().value_unsafe());
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
    case element_type::ARRAY: return "<list>";
  }
  return "?";
}

absl::Status JsonDecoder::ReadBlock(element e, const Path& p, Block& block) {
  ASSIGN_OR_RETURN(simdjson::dom::object obj, Object(e, p));
  bool has_state = false;
  std::optional<element> history;
  Path hp = p.Key("history");
  for (auto [key, v] : obj) {
    Path kp = p.Key(key);
    if (key == "address") {
      ASSIGN_OR_RETURN(block.address, Address(v, kp));
      // A stated 2^64-1 is not "no address": keep it out of range for Normalize to report.
      if (block.address == kUnknownAddress) --block.address;
    } else if (key == "size") {
      ASSIGN_OR_RETURN(block.size, Int(v, kp));
    } else if (key == "requested_size") {
      ASSIGN_OR_RETURN(block.requested_size, Int(v, kp));
    } else if (key == "state") {
      ASSIGN_OR_RETURN(std::string_view s, Str(v, kp));
      std::optional<BlockState> state = ParseBlockState(s);
      if (!state) return Error(kp, absl::StrCat("unknown block state '", Sv(s), "'"));
      block.state = *state;
      has_state = true;
    } else if (key == "frames") {
      ASSIGN_OR_RETURN(block.stack, Stack(v, kp));
    } else if (key == "history") {
      history = v;
    }
  }
  if (!has_state) return Error(p, "block has no 'state'");
  if (!history) return absl::OkStatus();
  // 2.0 era: history[0] describes the block itself (format §3.3 fallbacks).
  ASSIGN_OR_RETURN(simdjson::dom::array entries, Array(*history, hp));
  uint64_t addr = kUnknownAddress;
  int64_t real_size = kNoRequestedSize;
  StackId stack;
  size_t i = 0;
  for (element entry : entries) {
    Path ip = hp.Index(i);
    ASSIGN_OR_RETURN(simdjson::dom::object h, Object(entry, ip));
    for (auto [key, v] : h) {
      Path kp = ip.Key(key);
      if (key == "addr") {
        ASSIGN_OR_RETURN(uint64_t a, Address(v, kp));
        if (i == 0) addr = a;
      } else if (key == "real_size") {
        ASSIGN_OR_RETURN(int64_t r, Int(v, kp));
        if (i == 0) real_size = r;
      } else if (key == "frames") {
        ASSIGN_OR_RETURN(StackId s, Stack(v, kp));
        if (i == 0) stack = s;
      }
    }
    ++i;
  }
  if (i == 0) return absl::OkStatus();
  snap_.source.legacy_history = true;
  // history[0] describes the block itself only while it is active: an inactive block's history
  // lists earlier occupants at other addresses. The address is left to Normalize(), which lays
  // blocks out from the segment start (same rules as the pickle decoder).
  (void)addr;
  if (block.is_active()) {
    if (block.requested_size == kNoRequestedSize) block.requested_size = real_size;
    if (!block.stack.valid()) block.stack = stack;
  }
  return absl::OkStatus();
}

absl::Status JsonDecoder::ReadSegment(element e, const Path& p) {
  ASSIGN_OR_RETURN(simdjson::dom::object obj, Object(e, p));
  Segment s;
  std::optional<element> blocks;
  bool has_total_size = false;
  for (auto [key, v] : obj) {
    Path kp = p.Key(key);
    if (key == "device") {
      ASSIGN_OR_RETURN(int64_t d, Int(v, kp));
      if (!ValidDeviceOrdinal(d)) return Error(kp, absl::StrCat(d, " is not a device ordinal"));
      s.device = static_cast<int32_t>(d);
    } else if (key == "address") {
      ASSIGN_OR_RETURN(s.address, Address(v, kp));
    } else if (key == "total_size") {
      ASSIGN_OR_RETURN(s.total_size, Int(v, kp));
      has_total_size = true;
    } else if (key == "allocated_size") {
      ASSIGN_OR_RETURN(s.allocated_size, Int(v, kp));
    } else if (key == "active_size") {
      ASSIGN_OR_RETURN(s.active_size, Int(v, kp));
    } else if (key == "requested_size") {
      ASSIGN_OR_RETURN(s.requested_size, Int(v, kp));
    } else if (key == "stream") {
      ASSIGN_OR_RETURN(uint64_t st, Address(v, kp));
      s.stream = static_cast<int64_t>(st);
    } else if (key == "segment_type") {
      ASSIGN_OR_RETURN(std::string_view t, Str(v, kp));
      s.is_small = t == "small";
    } else if (key == "segment_pool_id") {
      ASSIGN_OR_RETURN(s.pool, Pool(v, kp));
    } else if (key == "is_expandable") {
      ASSIGN_OR_RETURN(s.is_expandable, Bool(v, kp));
    } else if (key == "frames") {
      ASSIGN_OR_RETURN(s.stack, Stack(v, kp));
    } else if (key == "blocks") {
      blocks = v;
    }
  }
  s.first_block = static_cast<uint32_t>(snap_.blocks.size());
  if (blocks) {
    Path bp = p.Key("blocks");
    ASSIGN_OR_RETURN(simdjson::dom::array list, Array(*blocks, bp));
    size_t i = 0;
    for (element b : list) {
      Block block;
      RETURN_IF_ERROR(ReadBlock(b, bp.Index(i++), block));
      snap_.blocks.push_back(block);
    }
  }
  s.num_blocks = static_cast<uint32_t>(snap_.blocks.size() - s.first_block);
  // What makes an object a segment, as in the pickle decoder (which types dicts by their keys).
  if (!has_total_size) return Error(p, "segment has no 'total_size'");
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
    if (s.at_key("blocks").get(b) == simdjson::SUCCESS) blocks += b.size();
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
  uint32_t index = static_cast<uint32_t>(snap_.events.size());
  auto extra = [&]() -> EventExtra& {
    if (snap_.event_extras.empty() || snap_.event_extras.back().event != index) {
      snap_.event_extras.push_back(EventExtra{});
      snap_.event_extras.back().event = index;
    }
    return snap_.event_extras.back();
  };
  for (auto [key, v] : obj) {
    Path kp = p.Key(key);
    if (key == "action") {
      ASSIGN_OR_RETURN(std::string_view name, Str(v, kp));
      ev.action = ParseAction(name);
      has_action = true;
      if (ev.action == Action::kUnknown) {
        snap_.diagnostics.Warn(absl::StrCat(Pointer(kp), ": unknown trace action '", Sv(name), "'"));
      }
    } else if (key == "addr") {
      ASSIGN_OR_RETURN(ev.addr, Address(v, kp));
      if (uint64_t read = ev.addr; FixAddress(ev.addr)) Limit(Limited::kEventAddr, read, kp);
    } else if (key == "device_free") {
      ASSIGN_OR_RETURN(int64_t free, Int(v, kp));
      if (int64_t read = free; FixSize(free)) Limit(Limited::kEventDeviceFree, read, kp);
      ev.addr = static_cast<uint64_t>(free);
    } else if (key == "size") {
      ASSIGN_OR_RETURN(ev.size, Int(v, kp));
      if (int64_t read = ev.size; FixSize(ev.size)) Limit(Limited::kEventSize, read, kp);
    } else if (key == "stream") {
      ASSIGN_OR_RETURN(uint64_t st, Address(v, kp));
      ev.stream = static_cast<int64_t>(st);
    } else if (key == "time_us") {
      if (v.type() != element_type::NULL_VALUE) {
        ASSIGN_OR_RETURN(ev.time_us, Int(v, kp));
        if (int64_t read = ev.time_us; FixTime(ev.time_us)) Limit(Limited::kEventTime, read, kp);
      }
    } else if (key == "frames") {
      ASSIGN_OR_RETURN(ev.stack, Stack(v, kp));
    } else if (key == "pool_id") {
      ASSIGN_OR_RETURN(PoolId pool, Pool(v, kp));
      extra().pool = pool;
    } else if (key == "compile_context" || key == "user_metadata" || key == "category") {
      // "N/A" and "" are what PyTorch writes when the feature is off: no extra is recorded,
      // exactly as the pickle decoder does.
      StrId value;
      if (v.type() == element_type::STRING) {
        StrId s = snap_.strings.Intern(v.get_string().value_unsafe());
        bool empty = s == StringPool::kEmpty || (key == "compile_context" && s == na_);
        if (!empty) value = s;
      } else if (v.type() == element_type::OBJECT && key == "user_metadata") {
        value = snap_.strings.Intern(RenderText(v, 0));
      } else if (v.type() != element_type::NULL_VALUE) {
        return TypeError(kp, v, "string");
      }
      if (value.valid()) {
        EventExtra& x = extra();
        (key == "compile_context" ? x.compile_context
         : key == "user_metadata" ? x.user_metadata
                                  : x.category) = value;
      }
    }
  }
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
    ASSIGN_OR_RETURN(simdjson::dom::array entries, Array(list, dp));
    uint32_t begin = static_cast<uint32_t>(snap_.events.size());
    size_t i = 0;
    for (element entry : entries) RETURN_IF_ERROR(ReadEvent(entry, dp.Index(i++)));
    snap_.traces.push_back(DeviceTrace{static_cast<int32_t>(d), begin,
                                       static_cast<uint32_t>(snap_.events.size())});
    ++d;
  }
  return absl::OkStatus();
}

absl::Status JsonDecoder::ReadTraceFlag(element e, const Path& p, bool overflowed,
                                        AllocatorSettings& s) {
  // Shape unconfirmed upstream (format §2.6): a bool, an int, or a per-device list.
  auto scalar = [](element x) -> std::optional<int64_t> {
    if (x.type() == element_type::BOOL) return x.get_bool().value_unsafe() ? 1 : 0;
    if (x.type() == element_type::INT64) return x.get_int64().value_unsafe();
    return std::nullopt;
  };
  std::optional<int64_t> value = scalar(e);
  if (!value && e.type() == element_type::ARRAY) {
    for (element x : ArrOf(e)) {
      auto v = scalar(x);
      if (v) {
        value = overflowed ? std::max(value.value_or(0), *v != 0 ? int64_t{1} : int64_t{0})
                           : std::max(value.value_or(0), *v);
      }
    }
  }
  if (!value) return absl::OkStatus();
  if (overflowed) {
    s.trace_alloc_overflowed = *value != 0;
  } else {
    s.trace_alloc_max_entries = *value;
  }
  return absl::OkStatus();
}

absl::Status JsonDecoder::ReadSettings(element e, const Path& p) {
  if (e.type() == element_type::NULL_VALUE) return absl::OkStatus();
  ASSIGN_OR_RETURN(simdjson::dom::object obj, Object(e, p));
  AllocatorSettings& s = snap_.settings;
  s.present = true;
  for (auto [key, v] : obj) {
    Path kp = p.Key(key);
    if (key == "PYTORCH_CUDA_ALLOC_CONF") {
      if (v.type() == element_type::STRING) s.conf = std::string(v.get_string().value_unsafe());
    } else if (key == "max_split_size") {
      ASSIGN_OR_RETURN(int64_t m, Int(v, kp));
      s.max_split_size = NormalizeMaxSplitSize(m, v.type() == element_type::UINT64);
      if (int64_t read = s.max_split_size; FixMaxSplitSize(s.max_split_size)) {
        Limit(Limited::kMaxSplitSize, read, kp);
      }
    } else if (key == "garbage_collection_threshold") {
      if (v.type() == element_type::DOUBLE) {
        s.garbage_collection_threshold = v.get_double().value_unsafe();
      } else if (v.type() == element_type::INT64) {
        s.garbage_collection_threshold = static_cast<double>(v.get_int64().value_unsafe());
      } else {
        return TypeError(kp, v, "float");
      }
    } else if (key == "expandable_segments") {
      ASSIGN_OR_RETURN(s.expandable_segments, Bool(v, kp));
    } else if (key == "release_lock_on_cudamalloc") {
      ASSIGN_OR_RETURN(s.release_lock_on_cudamalloc, Bool(v, kp));
    } else if (key == "pinned_use_cuda_host_register") {
      ASSIGN_OR_RETURN(s.pinned_use_cuda_host_register, Bool(v, kp));
    } else if (key == "graph_capture_record_stream_reuse") {
      ASSIGN_OR_RETURN(s.graph_capture_record_stream_reuse, Bool(v, kp));
    } else if (key == "pinned_num_register_threads") {
      ASSIGN_OR_RETURN(s.pinned_num_register_threads, Int(v, kp));
    } else if (key == "roundup_power2_divisions") {
      if (v.type() != element_type::OBJECT) continue;  // as the pickle decoder: other shapes ignored
      for (auto [mib, div] : ObjOf(v)) {
        if (div.type() != element_type::INT64) continue;
        std::optional<int> bucket = RoundupBucket(mib);
        if (!bucket) continue;
        int64_t d = div.get_int64().value_unsafe();
        if (int64_t read = d; FixDivisions(d)) Limit(Limited::kRoundupDivisions, read, kp.Key(mib));
        s.roundup_power2_divisions[*bucket] = d;
      }
    } else if (key == "trace_alloc_overflowed" || key == "trace_alloc_max_entries") {
      RETURN_IF_ERROR(ReadTraceFlag(v, kp, key == "trace_alloc_overflowed", s));
    }
  }
  return absl::OkStatus();
}

absl::Status JsonDecoder::ReadAnnotations(element e, const Path& p) {
  ASSIGN_OR_RETURN(simdjson::dom::array list, Array(e, p));
  size_t i = 0;
  for (element item : list) {
    Path ip = p.Index(i++);
    ASSIGN_OR_RETURN(simdjson::dom::object obj, Object(item, ip));
    Annotation a;
    for (auto [key, v] : obj) {
      Path kp = ip.Key(key);
      if (key == "device") {
        ASSIGN_OR_RETURN(int64_t d, Int(v, kp));
        a.device = static_cast<int32_t>(d);
      } else if (key == "time_us") {
        ASSIGN_OR_RETURN(a.time_us, Int(v, kp));
        if (int64_t read = a.time_us; FixTime(a.time_us)) Limit(Limited::kAnnotationTime, read, kp);
      } else if (key == "stage" && v.type() == element_type::STRING) {
        a.stage = snap_.strings.Intern(v.get_string().value_unsafe());
      } else if (key == "name" && v.type() == element_type::STRING) {
        a.name = snap_.strings.Intern(v.get_string().value_unsafe());
      }
    }
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
    // 1.13 / torch.cuda.memory_snapshot(): the segments list alone (format §1.7).
    snap_.source.bare_segment_list = true;
    RETURN_IF_ERROR(ReadSegments(root, top));
    return std::move(snap_);
  }
  if (root.type() != element_type::OBJECT) {
    return Error(top, absl::StrCat("the JSON holds a ", TypeName(root.type()),
                                   ", not a snapshot (expected an object with 'segments' or an "
                                   "array of segments)"));
  }
  std::optional<element> segments, traces, settings, annotations;
  std::string_view traces_key;
  for (auto [key, v] : ObjOf(root)) {
    if (key == "segments") segments = v;
    if (key == "device_traces" || key == "traces") {
      traces = v;
      traces_key = key;
    }
    if (key == "allocator_settings") settings = v;
    if (key == "external_annotations") annotations = v;
  }
  if (!segments && !traces) {
    return Error(top, "the JSON object is not a snapshot (no 'segments' or 'device_traces' key)");
  }
  if (segments) RETURN_IF_ERROR(ReadSegments(*segments, top.Key("segments")));
  if (traces) RETURN_IF_ERROR(ReadTraces(*traces, top.Key(traces_key)));
  if (settings) RETURN_IF_ERROR(ReadSettings(*settings, top.Key("allocator_settings")));
  if (annotations) RETURN_IF_ERROR(ReadAnnotations(*annotations, top.Key("external_annotations")));
  limits_.AddWarnings(snap_.diagnostics);
  return std::move(snap_);
}

}  // namespace

absl::StatusOr<Snapshot> ParseJson(io::InputSource& input) {
  JsonDecoder decoder(input);
  return decoder.Run();
}

}  // namespace memsnap::parse
