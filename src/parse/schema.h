// The snapshot schema (docs/reader.md, "The schema"): every key PyTorch writes, in every flavour
// (the 1.13 bare segment list, 2.0 `history` blocks, 2.1+, the newest keys), what it sets in the
// model and how its value is read. It is the one place a key is mapped: the JSON reader and the
// pickle decoder's generic path both resolve a key through kSchema and set its field with the
// setters below; the pickle fast path (pickle_fast_path.h) resolves keys through the same table
// and decodes only values whose meaning it shares with SetEvent, which a differential test
// holds it to (tests/unit/pickle_fast_path_test.cpp).
//
// clang-format off
//   key text --KeyOfName / the pickle's interned key ids--> Key --FieldOf(record, key)--> Field
//   Field + value --Set<Record>(reader's field access, ...)--> model
// clang-format on
//
// The setters are templates over the reader's value access (FieldAccess below), so both readers
// share the conversions, the tolerated variants and the limits (model/limits.h) while keeping
// their own value representation and error locations (a byte offset or a JSON pointer).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "memsnap/model/limits.h"
#include "memsnap/model/snapshot.h"
#include "memsnap/util/status_macros.h"
#include "memsnap/util/strings.h"

namespace memsnap::parse {

// The tables below read best a group of keys to a line.
// clang-format off
/// Every key name the schema knows; the names are in kKeyNames (the only copy of them).
enum class Key : uint8_t {
  kOther,  // a key the schema does not know: ignored (newer PyTorch versions add keys)
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
inline constexpr int kNumKeys = static_cast<int>(Key::kCount);

inline constexpr std::array<std::string_view, kNumKeys> kKeyNames = {
    "",  // kOther
    "action", "addr", "size", "stream", "time_us", "frames", "device_free", "compile_context",
    "user_metadata", "pool_id", "category",
    "name", "filename", "line",
    "device", "address", "total_size", "allocated_size", "active_size", "requested_size",
    "segment_type", "segment_pool_id", "is_expandable", "blocks",
    "state", "history", "real_size",
    "segments", "device_traces", "traces", "allocator_settings", "external_annotations",
    "stage",
    "PYTORCH_CUDA_ALLOC_CONF", "max_split_size", "garbage_collection_threshold",
    "expandable_segments", "pinned_num_register_threads", "release_lock_on_cudamalloc",
    "pinned_use_cuda_host_register", "graph_capture_record_stream_reuse",
    "roundup_power2_divisions", "trace_alloc_overflowed", "trace_alloc_max_entries",
};
// clang-format on
constexpr std::string_view KeyName(Key key) { return kKeyNames[static_cast<int>(key)]; }
/// The Key of a key's text; Key::kOther for keys the schema does not know.
Key KeyOfName(std::string_view name);

/// The records a dict (or JSON object) can be, in the order in which their typing keys decide
/// (a dict with `action` is a trace entry even if it also has `addr`). kGeneric and kUnset are
/// not records: a dict of no known kind (rendered as text where a value wants one), and a pickle
/// dict that has no items yet.
enum class Rec : uint8_t {
  kEvent,
  kSegment,
  kBlock,
  kFrame,
  kAnnotation,
  kHistory,
  kTop,
  kSettings,
  kGeneric,
  kUnset,
};
inline constexpr int kNumRecs = static_cast<int>(Rec::kGeneric);
const char* RecName(Rec rec);

// clang-format off
/// What a key sets, per record.
enum class Field : uint8_t {
  kNone,  // the key means nothing in this record: ignored
  kEventAction, kEventAddr, kEventDeviceFree, kEventSize, kEventStream, kEventTime, kEventFrames,
  kEventCompileContext, kEventUserMetadata, kEventCategory, kEventPool,
  kFrameName, kFrameFilename, kFrameLine,
  kSegmentDevice, kSegmentAddress, kSegmentTotalSize, kSegmentAllocatedSize, kSegmentActiveSize,
  kSegmentRequestedSize, kSegmentStream, kSegmentType, kSegmentPool, kSegmentExpandable,
  kSegmentFrames, kSegmentBlocks,
  kBlockAddress, kBlockSize, kBlockRequestedSize, kBlockState, kBlockFrames, kBlockHistory,
  kHistoryAddr, kHistoryRealSize, kHistoryFrames,
  kAnnotationDevice, kAnnotationTime, kAnnotationStage, kAnnotationName,
  kSettingsConf, kSettingsMaxSplitSize, kSettingsGcThreshold, kSettingsExpandable,
  kSettingsReleaseLock, kSettingsPinnedHostRegister, kSettingsGraphReuse, kSettingsPinnedThreads,
  kSettingsRoundup, kSettingsTraceOverflowed, kSettingsTraceMaxEntries,
  kTopSegments, kTopDeviceTraces, kTopSettings, kTopAnnotations,
};
// clang-format on

/// One mapping of the schema: in a `rec`, `key` sets `field`. `types`: the key alone makes a dict
/// this record when the pickle decoder types dicts by their keys. `note`: since when, or which
/// flavour or variant (documentation only).
struct SchemaRow {
  Rec rec;
  Key key;
  Field field;
  bool types;
  std::string_view note;
};

// clang-format off
inline constexpr SchemaRow kSchema[] = {
    // Trace entries: device_traces[d][i]. Key order in 2.1+: action, addr | device_free, size,
    // stream, time_us, compile_context, user_metadata, frames (2.0: frames first).
    {Rec::kEvent, Key::kAction, Field::kEventAction, true, "2.0; unknown actions kept, warned"},
    {Rec::kEvent, Key::kAddr, Field::kEventAddr, false, "absent for oom"},
    {Rec::kEvent, Key::kDeviceFree, Field::kEventDeviceFree, false, "oom only, in place of addr"},
    {Rec::kEvent, Key::kSize, Field::kEventSize, false, "requested bytes; segment bytes"},
    {Rec::kEvent, Key::kStream, Field::kEventStream, false, "cudaStream_t as an integer"},
    {Rec::kEvent, Key::kTimeUs, Field::kEventTime, false, "2.2; None tolerated"},
    {Rec::kEvent, Key::kFrames, Field::kEventFrames, false, "absent: no stack; strings skipped"},
    {Rec::kEvent, Key::kCompileContext, Field::kEventCompileContext, false, "2.6; N/A = none"},
    {Rec::kEvent, Key::kUserMetadata, Field::kEventUserMetadata, false, "2.9; a dict as text"},
    {Rec::kEvent, Key::kCategory, Field::kEventCategory, false, "profile_plot only"},
    {Rec::kEvent, Key::kPoolId, Field::kEventPool, false, "newest; a pair"},
    // Frames.
    {Rec::kFrame, Key::kName, Field::kFrameName, false, ""},
    {Rec::kFrame, Key::kFilename, Field::kFrameFilename, true, ""},
    {Rec::kFrame, Key::kLine, Field::kFrameLine, true, "2^64-1 and negatives: unknown"},
    // Segments: segments[s], or the root list itself (1.13).
    {Rec::kSegment, Key::kDevice, Field::kSegmentDevice, false, ""},
    {Rec::kSegment, Key::kAddress, Field::kSegmentAddress, false, ""},
    {Rec::kSegment, Key::kTotalSize, Field::kSegmentTotalSize, true, "required"},
    {Rec::kSegment, Key::kAllocatedSize, Field::kSegmentAllocatedSize, false, ""},
    {Rec::kSegment, Key::kActiveSize, Field::kSegmentActiveSize, false, ""},
    {Rec::kSegment, Key::kRequestedSize, Field::kSegmentRequestedSize, false, "2.1"},
    {Rec::kSegment, Key::kStream, Field::kSegmentStream, false, ""},
    {Rec::kSegment, Key::kSegmentType, Field::kSegmentType, false, "\"small\" or \"large\""},
    {Rec::kSegment, Key::kSegmentPoolId, Field::kSegmentPool, false, "2.1; a pair"},
    {Rec::kSegment, Key::kIsExpandable, Field::kSegmentExpandable, false, "2.1"},
    {Rec::kSegment, Key::kFrames, Field::kSegmentFrames, false, "2.1"},
    {Rec::kSegment, Key::kBlocks, Field::kSegmentBlocks, false, ""},
    // Blocks.
    {Rec::kBlock, Key::kAddress, Field::kBlockAddress, false, "2.1; else from the layout"},
    {Rec::kBlock, Key::kSize, Field::kBlockSize, false, ""},
    {Rec::kBlock, Key::kRequestedSize, Field::kBlockRequestedSize, false, "stale when inactive"},
    {Rec::kBlock, Key::kState, Field::kBlockState, true, "required"},
    {Rec::kBlock, Key::kFrames, Field::kBlockFrames, false, "2.1"},
    {Rec::kBlock, Key::kHistory, Field::kBlockHistory, false, "2.0 and before"},
    // History entries (2.0): history[0] describes the block itself while it is active.
    {Rec::kHistory, Key::kAddr, Field::kHistoryAddr, true, ""},
    {Rec::kHistory, Key::kRealSize, Field::kHistoryRealSize, true, ""},
    {Rec::kHistory, Key::kFrames, Field::kHistoryFrames, false, ""},
    // external_annotations[i] (2.4/2.5).
    {Rec::kAnnotation, Key::kDevice, Field::kAnnotationDevice, false, ""},
    {Rec::kAnnotation, Key::kTimeUs, Field::kAnnotationTime, false, ""},
    {Rec::kAnnotation, Key::kStage, Field::kAnnotationStage, true, "START / END"},
    {Rec::kAnnotation, Key::kName, Field::kAnnotationName, false, ""},
    // The snapshot dict (2.0+).
    {Rec::kTop, Key::kSegments, Field::kTopSegments, true, ""},
    {Rec::kTop, Key::kDeviceTraces, Field::kTopDeviceTraces, true, "2.0"},
    {Rec::kTop, Key::kTraces, Field::kTopDeviceTraces, true, "alias of device_traces"},
    {Rec::kTop, Key::kAllocatorSettings, Field::kTopSettings, false, "2.3"},
    {Rec::kTop, Key::kExternalAnnotations, Field::kTopAnnotations, false, "2.4/2.5"},
    // allocator_settings (2.3+).
    {Rec::kSettings, Key::kConf, Field::kSettingsConf, true, ""},
    {Rec::kSettings, Key::kMaxSplitSize, Field::kSettingsMaxSplitSize, true, "-1, 2^64-1: none"},
    {Rec::kSettings, Key::kGcThreshold, Field::kSettingsGcThreshold, true, ""},
    {Rec::kSettings, Key::kExpandableSegments, Field::kSettingsExpandable, true, ""},
    {Rec::kSettings, Key::kReleaseLock, Field::kSettingsReleaseLock, false, ""},
    {Rec::kSettings, Key::kPinnedHostRegister, Field::kSettingsPinnedHostRegister, false, ""},
    {Rec::kSettings, Key::kGraphReuse, Field::kSettingsGraphReuse, false, ""},
    {Rec::kSettings, Key::kPinnedThreads, Field::kSettingsPinnedThreads, false, ""},
    {Rec::kSettings, Key::kRoundup, Field::kSettingsRoundup, true, "{MiB: divisions}"},
    {Rec::kSettings, Key::kTraceOverflowed, Field::kSettingsTraceOverflowed, false,
     "bool, int or per device list"},
    {Rec::kSettings, Key::kTraceMaxEntries, Field::kSettingsTraceMaxEntries, false,
     "int or per device list"},
};
// clang-format on

namespace schema_internal {
struct Tables {
  std::array<std::array<Field, kNumKeys>, kNumRecs> field{};
  std::array<std::array<bool, kNumKeys>, kNumRecs> types{};
  std::array<Rec, kNumKeys> typed_by{};  // the first record (in Rec order) the key types
};
constexpr Tables BuildTables() {
  Tables t;
  t.typed_by.fill(Rec::kGeneric);
  for (const SchemaRow& row : kSchema) {
    t.field[static_cast<int>(row.rec)][static_cast<int>(row.key)] = row.field;
    t.types[static_cast<int>(row.rec)][static_cast<int>(row.key)] = row.types;
    Rec& first = t.typed_by[static_cast<int>(row.key)];
    if (row.types && row.rec < first) first = row.rec;
  }
  return t;
}
inline constexpr Tables kTables = BuildTables();
}  // namespace schema_internal

/// What `key` sets in a `rec` (Field::kNone: nothing).
constexpr Field FieldOf(Rec rec, Key key) {
  if (rec >= Rec::kGeneric) return Field::kNone;
  return schema_internal::kTables.field[static_cast<int>(rec)][static_cast<int>(key)];
}

/// True when `key` alone makes a dict a `rec` (the pickle decoder's typing; the JSON reader checks
/// frames with it).
constexpr bool TypesRecord(Rec rec, Key key) {
  return rec < Rec::kGeneric &&
         schema_internal::kTables.types[static_cast<int>(rec)][static_cast<int>(key)];
}

/// The record a dict whose keys include `key` is, as far as that key decides (Rec::kGeneric when
/// it decides nothing). A dict is the first such record, in Rec order, over all its keys: the
/// pickle decoder types its dicts so.
constexpr Rec RecordTypedBy(Key key) {
  return schema_internal::kTables.typed_by[static_cast<int>(key)];
}

// ---- Small rules of the format --------------------------------------------------------------

/// Block state names; `active_awaiting_free` (documented upstream) is `active_pending_free`
/// (written by the C++). nullopt for anything else.
inline std::optional<BlockState> ParseBlockState(std::string_view s) {
  if (s == "active_allocated") return BlockState::kActiveAllocated;
  if (s == "active_pending_free" || s == "active_awaiting_free") {
    return BlockState::kActivePendingFree;
  }
  if (s == "inactive") return BlockState::kInactive;
  return std::nullopt;
}

/// Bucket index of a `roundup_power2_divisions` key (the interval's lower bound in MiB as a
/// decimal string: "1" -> 0, "2" -> 1, "4" -> 2, ... "32768" -> 15). nullopt when not a positive
/// integer; bounds past the last interval land in bucket 15.
inline std::optional<int> RoundupBucket(std::string_view key_mib) {
  int64_t mib = 0;
  if (!absl::SimpleAtoi(Sv(key_mib), &mib) || mib <= 0) return std::nullopt;
  int bucket = 0;
  while ((int64_t{1} << (bucket + 1)) <= mib && bucket < 15) ++bucket;
  return bucket;
}

/// A `user_metadata` dict is rendered as text ("{k: v, ...}") up to about this many characters per
/// level, then "...": same rule in both readers, bounded work on hostile input.
inline constexpr size_t kMaxRenderedChars = 1024;

// ---- Records being built ---------------------------------------------------------------------

struct HistoryRec {
  uint64_t addr = kUnknownAddress;
  int64_t real_size = kNoRequestedSize;
  StackId stack;
};

struct BlockRec {
  Block block;
  bool has_state = false;
  std::optional<HistoryRec> history;  // history[0] (2.0 era)
};

struct SegmentRec {
  Segment segment;
  bool has_total_size = false;
  uint32_t blocks_begin = 0;  // the reader's block records
  uint32_t blocks_count = 0;
};

/// The snapshot dict's values, read once the dict is complete.
template <typename V>
struct TopRec {
  std::optional<V> segments, device_traces, settings, annotations;
  Key traces_key = Key::kDeviceTraces;  // or its alias kTraces
};

/// A block complete with its keys: the 2.0 fallbacks of history[0] (format notes in
/// docs/reader.md), which describes the block itself only while it is active (an inactive block's
/// history lists earlier occupants at other addresses). The address is left to Normalize(), which
/// lays blocks out from the segment start.
inline Block FinishBlock(const BlockRec& rec, SourceInfo& source) {
  Block block = rec.block;
  if (!rec.history) return block;
  source.legacy_history = true;
  if (block.is_active()) {
    if (block.requested_size == kNoRequestedSize) block.requested_size = rec.history->real_size;
    if (!block.stack.valid()) block.stack = rec.history->stack;
  }
  return block;
}

// ---- The setters -----------------------------------------------------------------------------
//
// `F` is one field of one record as a reader sees it (its value type F::Value, and where it is,
// for messages). It provides:
//   absl::StatusOr<int64_t>  Int(v)        an int or bool (Python's bool is an int); wider than
//                                          64 bits: clamped, with a warning
//   absl::StatusOr<uint64_t> Address(v)    an int; [2^63, 2^64) kept as unsigned
//   bool                     IsWide(v)     the int was >= 2^63 (unsigned) or wider than 64 bits
//   bool                     IsNone(v)     None / null
//   std::optional<int64_t>   IntOrBool(v)  for tolerated shapes: nullopt for other types
//   absl::StatusOr<StrId>    Str(v)
//   std::optional<StrId>     MaybeStr(v)   nullopt when not a string
//   absl::StatusOr<std::string_view> Text(v)  a string, not interned
//   absl::StatusOr<Action>   ActionOf(v)   a string naming an action (kUnknown if unknown)
//   absl::StatusOr<bool>     Bool(v)
//   std::optional<double>    Number(v)     a float or int
//   absl::StatusOr<StackId>  Stack(v)      a list of frames; None: no stack
//   absl::StatusOr<StreamId> Stream(v)     an int as Address(v), interned in the snapshot's
//                                          StreamTable; an error (TooManyStreams) when it is full
//   absl::StatusOr<PoolId>   Pool(v)       a pair of ints; None: the default pool
//   std::optional<StrId>     DictText(v)   a dict rendered as text; nullopt when not a dict
//   absl::Status ForEachItem(v, fn(std::string_view key, const V&))   when v is a plain dict
//   absl::Status ForEachListItem(v, fn(const V&))                     when v is a list
//   bool                     IsList(v)
//   absl::Status TypeError(v, want)   absl::Status Error(message)   void Warn(message)
//   void Limit(Limited kind, value as read)   a value out of range, fixed by the caller
//   StrId NotAvailable()                  the interned "N/A"
//   EventExtra& Extra()                   the extras of the entry being set (events only)
//   absl::Status Blocks(v, SegmentRec&)   a segment's `blocks` (the reader's own records)
//   absl::Status History(v, BlockRec&)    a block's `history`

/// What a reader says when a trace names more distinct streams than a StreamTable holds (the
/// readers prefix the file and the byte offset or key path).
inline std::string TooManyStreams() {
  return absl::StrCat("more than ", StreamTable::kMaxStreams,
                      " distinct streams in one snapshot: memsnap keeps at most that many");
}

template <typename F>
absl::Status SetEvent(F& f, Field field, const typename F::Value& v, TraceEvent& e) {
  switch (field) {
    case Field::kEventAction: {
      ASSIGN_OR_RETURN(e.action, f.ActionOf(v));
      if (e.action == Action::kUnknown) {
        ASSIGN_OR_RETURN(std::string_view name, f.Text(v));
        f.Warn(absl::StrCat("unknown trace action '", Sv(name), "'"));
      }
      return absl::OkStatus();
    }
    case Field::kEventAddr: {
      ASSIGN_OR_RETURN(e.addr, f.Address(v));
      if (const uint64_t read = e.addr; FixAddress(e.addr)) f.Limit(Limited::kEventAddr, read);
      return absl::OkStatus();
    }
    case Field::kEventDeviceFree: {  // kept where the address goes: an oom entry has none
      ASSIGN_OR_RETURN(int64_t free, f.Int(v));
      if (const int64_t read = free; FixSize(free)) f.Limit(Limited::kEventDeviceFree, read);
      e.addr = static_cast<uint64_t>(free);
      return absl::OkStatus();
    }
    case Field::kEventSize: {
      ASSIGN_OR_RETURN(e.size, f.Int(v));
      if (const int64_t read = e.size; FixSize(e.size)) f.Limit(Limited::kEventSize, read);
      return absl::OkStatus();
    }
    case Field::kEventStream: {
      ASSIGN_OR_RETURN(e.stream, f.Stream(v));
      return absl::OkStatus();
    }
    case Field::kEventTime: {
      if (f.IsNone(v)) return absl::OkStatus();
      ASSIGN_OR_RETURN(e.time_us, f.Int(v));
      if (const int64_t read = e.time_us; FixTime(e.time_us)) f.Limit(Limited::kEventTime, read);
      return absl::OkStatus();
    }
    case Field::kEventFrames: {
      ASSIGN_OR_RETURN(e.stack, f.Stack(v));
      return absl::OkStatus();
    }
    case Field::kEventCompileContext:
    case Field::kEventUserMetadata:
    case Field::kEventCategory: {
      StrId s;
      if (std::optional<StrId> str = f.MaybeStr(v)) {
        // "N/A" and "" are what PyTorch writes when the feature is off: nothing to keep.
        const bool empty = *str == StringPool::kEmpty ||
                           (field == Field::kEventCompileContext && *str == f.NotAvailable());
        if (empty) return absl::OkStatus();
        s = *str;
      } else if (std::optional<StrId> text;
                 field == Field::kEventUserMetadata && (text = f.DictText(v))) {
        s = *text;
      } else if (f.IsNone(v)) {
        return absl::OkStatus();
      } else {
        return f.TypeError(v, "str");
      }
      EventExtra& x = f.Extra();
      (field == Field::kEventCompileContext ? x.compile_context
       : field == Field::kEventUserMetadata ? x.user_metadata
                                            : x.category) = s;
      return absl::OkStatus();
    }
    case Field::kEventPool: {
      ASSIGN_OR_RETURN(PoolId p, f.Pool(v));
      f.Extra().pool = p;
      return absl::OkStatus();
    }
    default:
      return absl::OkStatus();
  }
}

template <typename F>
absl::Status SetFrame(F& f, Field field, const typename F::Value& v, Frame& frame) {
  switch (field) {
    case Field::kFrameName: {
      ASSIGN_OR_RETURN(frame.name, f.Str(v));
      return absl::OkStatus();
    }
    case Field::kFrameFilename: {
      ASSIGN_OR_RETURN(frame.filename, f.Str(v));
      return absl::OkStatus();
    }
    case Field::kFrameLine: {
      if (f.IsWide(v)) {  // 2^64-1 is PyTorch's "unknown line"
        frame.line = kUnknownLine;
        return absl::OkStatus();
      }
      ASSIGN_OR_RETURN(int64_t line, f.Int(v));
      frame.line = line < 0 ? kUnknownLine : line;
      return absl::OkStatus();
    }
    default:
      return absl::OkStatus();
  }
}

template <typename F>
absl::Status SetSegment(F& f, Field field, const typename F::Value& v, SegmentRec& rec) {
  Segment& s = rec.segment;
  // Sizes and addresses are checked by Normalize() (model/limits.h), which knows their key paths.
  switch (field) {
    case Field::kSegmentDevice: {
      ASSIGN_OR_RETURN(int64_t d, f.Int(v));
      if (!ValidDeviceOrdinal(d)) return f.Error(absl::StrCat(d, " is not a device ordinal"));
      s.device = static_cast<int32_t>(d);
      return absl::OkStatus();
    }
    case Field::kSegmentAddress: {
      ASSIGN_OR_RETURN(s.address, f.Address(v));
      return absl::OkStatus();
    }
    case Field::kSegmentTotalSize: {
      ASSIGN_OR_RETURN(s.total_size, f.Int(v));
      rec.has_total_size = true;
      return absl::OkStatus();
    }
    case Field::kSegmentAllocatedSize: {
      ASSIGN_OR_RETURN(s.allocated_size, f.Int(v));
      return absl::OkStatus();
    }
    case Field::kSegmentActiveSize: {
      ASSIGN_OR_RETURN(s.active_size, f.Int(v));
      return absl::OkStatus();
    }
    case Field::kSegmentRequestedSize: {
      ASSIGN_OR_RETURN(s.requested_size, f.Int(v));
      return absl::OkStatus();
    }
    case Field::kSegmentStream: {
      ASSIGN_OR_RETURN(uint64_t stream, f.Address(v));
      s.stream = static_cast<int64_t>(stream);
      return absl::OkStatus();
    }
    case Field::kSegmentType: {
      ASSIGN_OR_RETURN(std::string_view type, f.Text(v));
      s.is_small = type == "small";
      return absl::OkStatus();
    }
    case Field::kSegmentPool: {
      ASSIGN_OR_RETURN(s.pool, f.Pool(v));
      return absl::OkStatus();
    }
    case Field::kSegmentExpandable: {
      ASSIGN_OR_RETURN(s.is_expandable, f.Bool(v));
      return absl::OkStatus();
    }
    case Field::kSegmentFrames: {
      ASSIGN_OR_RETURN(s.stack, f.Stack(v));
      return absl::OkStatus();
    }
    case Field::kSegmentBlocks:
      return f.Blocks(v, rec);
    default:
      return absl::OkStatus();
  }
}

template <typename F>
absl::Status SetBlock(F& f, Field field, const typename F::Value& v, BlockRec& rec) {
  Block& b = rec.block;
  switch (field) {
    case Field::kBlockAddress: {
      ASSIGN_OR_RETURN(b.address, f.Address(v));
      // A stated 2^64-1 is not "no address": keep it out of range for Normalize() to report.
      if (b.address == kUnknownAddress) --b.address;
      return absl::OkStatus();
    }
    case Field::kBlockSize: {
      ASSIGN_OR_RETURN(b.size, f.Int(v));
      return absl::OkStatus();
    }
    case Field::kBlockRequestedSize: {
      ASSIGN_OR_RETURN(b.requested_size, f.Int(v));
      return absl::OkStatus();
    }
    case Field::kBlockState: {
      ASSIGN_OR_RETURN(std::string_view name, f.Text(v));
      std::optional<BlockState> state = ParseBlockState(name);
      if (!state) return f.Error(absl::StrCat("unknown block state '", Sv(name), "'"));
      b.state = *state;
      rec.has_state = true;
      return absl::OkStatus();
    }
    case Field::kBlockFrames: {
      ASSIGN_OR_RETURN(b.stack, f.Stack(v));
      return absl::OkStatus();
    }
    case Field::kBlockHistory:
      return f.History(v, rec);
    default:
      return absl::OkStatus();
  }
}

template <typename F>
absl::Status SetHistory(F& f, Field field, const typename F::Value& v, HistoryRec& h) {
  switch (field) {
    case Field::kHistoryAddr: {
      ASSIGN_OR_RETURN(h.addr, f.Address(v));
      return absl::OkStatus();
    }
    case Field::kHistoryRealSize: {
      ASSIGN_OR_RETURN(h.real_size, f.Int(v));
      return absl::OkStatus();
    }
    case Field::kHistoryFrames: {
      ASSIGN_OR_RETURN(h.stack, f.Stack(v));
      return absl::OkStatus();
    }
    default:
      return absl::OkStatus();
  }
}

template <typename F>
absl::Status SetAnnotation(F& f, Field field, const typename F::Value& v, Annotation& a) {
  switch (field) {
    case Field::kAnnotationDevice: {
      ASSIGN_OR_RETURN(int64_t d, f.Int(v));
      a.device = static_cast<int32_t>(d);
      return absl::OkStatus();
    }
    case Field::kAnnotationTime: {
      ASSIGN_OR_RETURN(a.time_us, f.Int(v));
      if (const int64_t read = a.time_us; FixTime(a.time_us)) {
        f.Limit(Limited::kAnnotationTime, read);
      }
      return absl::OkStatus();
    }
    case Field::kAnnotationStage:  // other types tolerated: ignored
      if (std::optional<StrId> s = f.MaybeStr(v)) a.stage = *s;
      return absl::OkStatus();
    case Field::kAnnotationName:
      if (std::optional<StrId> s = f.MaybeStr(v)) a.name = *s;
      return absl::OkStatus();
    default:
      return absl::OkStatus();
  }
}

template <typename F>
absl::Status SetSettings(F& f, Field field, const typename F::Value& v, AllocatorSettings& s) {
  switch (field) {
    case Field::kSettingsConf:  // other types tolerated: ignored
      if (f.MaybeStr(v)) {
        ASSIGN_OR_RETURN(std::string_view conf, f.Text(v));
        s.conf = std::string(conf);
      }
      return absl::OkStatus();
    case Field::kSettingsMaxSplitSize: {
      ASSIGN_OR_RETURN(s.max_split_size, f.Int(v));
      if (f.IsWide(v)) s.max_split_size = -1;  // SIZE_MAX read back as 2^64-1: unlimited
      if (s.max_split_size < 0) s.max_split_size = -1;
      if (const int64_t read = s.max_split_size; FixMaxSplitSize(s.max_split_size)) {
        f.Limit(Limited::kMaxSplitSize, read);
      }
      return absl::OkStatus();
    }
    case Field::kSettingsGcThreshold: {
      std::optional<double> d = f.Number(v);
      if (!d) return f.TypeError(v, "float");
      s.garbage_collection_threshold = *d;  // a NaN is kept (JSON cannot hold one)
      return absl::OkStatus();
    }
    case Field::kSettingsExpandable: {
      ASSIGN_OR_RETURN(s.expandable_segments, f.Bool(v));
      return absl::OkStatus();
    }
    case Field::kSettingsReleaseLock: {
      ASSIGN_OR_RETURN(s.release_lock_on_cudamalloc, f.Bool(v));
      return absl::OkStatus();
    }
    case Field::kSettingsPinnedHostRegister: {
      ASSIGN_OR_RETURN(s.pinned_use_cuda_host_register, f.Bool(v));
      return absl::OkStatus();
    }
    case Field::kSettingsGraphReuse: {
      ASSIGN_OR_RETURN(s.graph_capture_record_stream_reuse, f.Bool(v));
      return absl::OkStatus();
    }
    case Field::kSettingsPinnedThreads: {
      ASSIGN_OR_RETURN(s.pinned_num_register_threads, f.Int(v));
      return absl::OkStatus();
    }
    case Field::kSettingsRoundup:
      // {"<lower bound in MiB>": divisions}; other shapes tolerated: ignored.
      return f.ForEachItem(v, [&](std::string_view mib, const typename F::Value& x) {
        std::optional<int> bucket = RoundupBucket(mib);
        std::optional<int64_t> d = f.IntOrBool(x);
        if (!bucket || !d || f.IsWide(x)) return;
        if (const int64_t read = *d; FixDivisions(*d)) f.Limit(Limited::kRoundupDivisions, read);
        s.roundup_power2_divisions[*bucket] = *d;
      });
    case Field::kSettingsTraceOverflowed:
    case Field::kSettingsTraceMaxEntries: {
      // Shape unconfirmed upstream: a bool, an int, or a per-device list (the largest counts).
      const bool overflowed = field == Field::kSettingsTraceOverflowed;
      auto scalar = [&](const typename F::Value& x) -> std::optional<int64_t> {
        std::optional<int64_t> i = f.IntOrBool(x);
        if (i && overflowed) *i = *i != 0;
        return i;
      };
      std::optional<int64_t> value = scalar(v);
      if (!value) {
        RETURN_IF_ERROR(f.ForEachListItem(v, [&](const typename F::Value& x) {
          if (std::optional<int64_t> i = scalar(x)) value = std::max(value.value_or(0), *i);
        }));
      }
      if (!value) return absl::OkStatus();
      if (overflowed) {
        s.trace_alloc_overflowed = *value != 0;
      } else {
        s.trace_alloc_max_entries = *value;
      }
      return absl::OkStatus();
    }
    default:
      return absl::OkStatus();
  }
}

template <typename F>
void SetTop(Field field, Key key, const typename F::Value& v, TopRec<typename F::Value>& top) {
  switch (field) {
    case Field::kTopSegments:
      top.segments = v;
      break;
    case Field::kTopDeviceTraces:
      top.device_traces = v;
      top.traces_key = key;
      break;
    case Field::kTopSettings:
      top.settings = v;
      break;
    case Field::kTopAnnotations:
      top.annotations = v;
      break;
    default:
      break;
  }
}

}  // namespace memsnap::parse
