// Live memory at a moment, grouped by allocation site (`memsnap top`, reused by `diff`, `check`,
// `leaks`, the HTML report). Keys are built from frame *text*, never from ids, so rows of two
// snapshots can be matched by key (diff). Rows are named by the attribution model (attribution.h):
// a label per row, distinct within the table, and the bytes of each category of memory.
//
// Invariant (tested): Σ rows.bytes == total_bytes and Σ rows.count == total_count; anything without
// a stack goes to an explicit bracketed row (NoStackRow), stacks whose frames are all filtered out
// to
// "[all frames filtered]", annotation grouping without a covering range to "[no annotation]",
// metadata and compile-context grouping of an allocation without one to "[no metadata]" and
// "[no compile context]",
// pre-window lifetimes (alloc older than the trace) to "[allocated before the trace]".
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "memsnap/analysis/attribution/attribution.h"
#include "memsnap/analysis/attribution/workload.h"
#include "memsnap/analysis/timeline/filter.h"
#include "memsnap/analysis/timeline/timeline.h"
#include "memsnap/model/snapshot.h"

namespace memsnap::analysis {

/// kSite keys a lifetime by its site (SiteInfo::key: Python frames, autograd node, operator), the
/// default. kStack by its whole filtered stack (what folded stacks and flame graphs need).
/// kFunction, kFile and kFrame by the frame that owns the site (SiteInfo::owner; the label for
/// sites without Python frames). kCategory by the lifetime's category of memory. kModule by the
/// chain of `forward` calls that made it (Attribution::ModuleChain), as a tree (ModuleTree);
/// kPhase by the step phase it was allocated in (LifetimeCategorizer::PhaseOf). kMetadata and
/// kCompileContext by the `user_metadata` and `compile_context` of its alloc entry (AllocExtraOf;
/// kNoMetadataRow / kNoCompileContextRow when it has none).
enum class GroupBy : uint8_t {
  kSite,
  kStack,
  kFunction,
  kFile,
  kFrame,
  kAnnotation,
  kCategory,
  kModule,
  kPhase,
  kMetadata,
  kCompileContext,
};
/// "site", "stack", "function", "file", "frame", "annotation", "category", "module", "phase",
/// "metadata", "compile_context".
std::string_view GroupByName(GroupBy by);
absl::StatusOr<GroupBy> ParseGroupBy(std::string_view text);

/// The row of a lifetime whose stack is empty: kBeforeRecordingRow, kTracedNoStackRow or
/// kNoStackRow (pre-window lifetimes are kPreWindowRow whatever their stack).
std::string_view NoStackRow(const Snapshot& snap, const DeviceTimeline& dt,
                            const BlockLifetime& lifetime);

/// The rare fields of a lifetime's alloc entry (`user_metadata`, `compile_context`: EventExtra), or
/// nullptr when it has none: its alloc is older than the trace (pre-window, ghost) or the entry
/// carries neither.
const EventExtra* AllocExtraOf(const Snapshot& snap, const DeviceTimeline& dt,
                               const BlockLifetime& lifetime);

/// What a lifetime's row depends on besides the options, as one number (a cache key): its stack,
/// whether it is pre-window or a ghost (NoStackRow tells those apart), and `rule`, its category's
/// rule, when that names the row (PreTraceEvidenceRow: memory older than the trace).
inline uint64_t RowCacheKey(const BlockLifetime& lt, CategoryRule rule) {
  const uint64_t evidence = PreTraceEvidenceRow(rule).empty() ? 0 : uint64_t{1} + uint8_t(rule);
  return (uint64_t{lt.stack.v} << 8) | (evidence << 2) |
         (lt.cls == LifetimeClass::kPreWindow ? 1 : 0) | (lt.cls == LifetimeClass::kGhost ? 2 : 0);
}

struct GroupOptions {
  GroupBy by = GroupBy::kSite;
  int depth = 0;  // stack: keep the N innermost (surviving) frames; module: the N outermost
                  // levels of the tree (deeper memory counts as the level-N node's own); 0 = all
  bool ignore_lines = false;  // frame text "filename:name" instead of "filename:line:name"
  /// Site rows also carry SiteInfo::unlined_key (diff sets it to pair sites whose lines moved).
  bool unlined_keys = false;
  FilterOptions filter;
  /// The session's categories (query::Session::categories): the user's, tried before the built-in
  /// rules, and the names results print (GroupReport::options).
  CategoryNames categories;
};

/// The text of one frame as used in keys: "filename:line:name" (or "filename:name" when
/// ignore_lines), the filename read through NormalPath. ';' and newlines are replaced so the text
/// is safe in folded stacks.
std::string FrameKeyText(const Snapshot& snap, FrameId id, bool ignore_lines);

struct GroupRow {
  std::string key;   // site: SiteInfo::key; stack: frames root-first joined by ';' (folded form)
  std::string site;  // the label shown (LabelRows: distinct within the table); else the key
  SiteLabel label;   // site and stack rows: `site` as a text table shows it (head, callers)
  /// What the label is made of (site and stack rows; for stack rows `info.key` is the row key, so
  /// two stacks of one site still get distinct labels). Other rows: kind kNoStack, owner = key.
  SiteInfo info;
  /// Site, stack, function, file and frame rows: the filtered stack (frame texts, innermost first)
  /// of the row's first lifetime. Empty for the others.
  std::vector<std::string> frames;
  int64_t count = 0;
  int64_t bytes = 0;               // live requested bytes
  int64_t rounded_bytes = 0;       // live rounded (block) bytes
  CategoryBytes category_bytes{};  // requested bytes per category; sums to `bytes`
  /// Requested bytes per CategoryRule (the rule that decided each lifetime's category); sums to
  /// `bytes`.
  std::array<int64_t, kNumCategoryRules> rule_bytes{};
  bool synthetic = false;  // one of the bracketed rows ([no stack] ...)
  /// Module trees (ModuleTree): the node's level (0 = outermost) and the bytes and blocks made in
  /// the node itself, not in a module under it; `bytes`, `count` and `category_bytes` are the
  /// node's whole subtree. Other rows: 0, and self_bytes == bytes.
  int depth = 0;
  int64_t self_bytes = 0;
  int64_t self_count = 0;
  /// The category with the most bytes; mixed() when others hold some too.
  Category category() const { return DominantCategory(category_bytes); }
  bool mixed() const;
  /// The rule that decided the most of the row's bytes (ties: the first in enum order).
  CategoryRule rule() const;
};

/// Which lifetimes are grouped: one per device, each at its own resolved moment.
struct DeviceMoment {
  int32_t device = 0;
  TimelinePoint event;
  int64_t time_us = kNoTime;        // of that event, when known
  int64_t start_time_us = kNoTime;  // of the device's first event (relative times), when known
  int64_t live_bytes = 0;
  /// The device's trace has events that change memory (DeviceTimeline::RecordsMemory): without
  /// them the moment is the file's dumped state (the start and the end at once), never "the
  /// initial state".
  bool has_trace = true;
  /// What kind of run the device's stacks show (DetectWorkload), when the query asked for it.
  std::optional<WorkloadEvidence> workload;
};

struct GroupReport {
  GroupOptions options;
  Moment moment;
  /// The moment as the user named it when that was a training step (query::ResolveMomentArg):
  /// "step 3 (events 69..90, found by training steps): its peak, event:85 (+0.085 s)"; else empty.
  std::string moment_described;
  std::vector<DeviceMoment> devices;
  std::vector<GroupRow> rows;  // sorted by bytes desc, then count desc, then key
  int64_t total_bytes = 0;
  int64_t total_rounded_bytes = 0;
  int64_t total_count = 0;
  CategoryBytes category_bytes{};  // Σ rows.category_bytes: the categories of all live bytes
};

/// What grouping keeps per snapshot: the frame filter, the attribution of its stacks and the
/// categorizers of its devices. Make one per snapshot and reuse it for every device and call.
/// Not thread-safe.
class GroupContext {
 public:
  /// Errors: invalid --hide/--keep regexes (naming the flag).
  static absl::StatusOr<std::unique_ptr<GroupContext>> Create(const Snapshot& snap,
                                                              const GroupOptions& options);
  ~GroupContext();
  GroupContext(const GroupContext&) = delete;
  GroupContext& operator=(const GroupContext&) = delete;
  const Snapshot& snapshot() const { return snap_; }
  const GroupOptions& options() const { return options_; }
  FrameFilter& filter() { return filter_; }
  Attribution& attribution() { return attribution_; }
  /// The category of one lifetime of `dt` (a timeline of this snapshot).
  CategoryVerdict Categorize(const DeviceTimeline& dt, const BlockLifetime& lifetime) {
    return categorizers_.For(dt).Categorize(lifetime);
  }

  /// A new row (count and bytes 0) for `lifetime` of `dt`: its key, label parts, frames.
  GroupRow RowFor(const DeviceTimeline& dt, const BlockLifetime& lifetime);
  /// Whether RowFor's key depends on the lifetime's stack alone (and on whether it is pre-window):
  /// callers may then cache rows per StackId. Not for annotation, category, phase, metadata and
  /// compile-context grouping.
  /// Nor for module grouping: recorded module metadata and the forward call a backward allocation
  /// pairs with are the allocation's, not its stack's.
  bool stack_keyed() const {
    return options_.by != GroupBy::kAnnotation && options_.by != GroupBy::kCategory &&
           options_.by != GroupBy::kPhase && options_.by != GroupBy::kMetadata &&
           options_.by != GroupBy::kCompileContext && options_.by != GroupBy::kModule;
  }

 private:
  GroupContext(const Snapshot& snap, const GroupOptions& options, FrameFilter filter);
  const Snapshot& snap_;
  GroupOptions options_;
  FrameFilter filter_;
  Attribution attribution_;
  Categorizers categorizers_;

 public:
  struct AnnotationIndex;  // innermost annotation over time (group.cpp)

 private:
  std::map<int32_t, std::unique_ptr<AnnotationIndex>> annotations_;  // by device
  std::string AnnotationAt(const DeviceTimeline& dt, const BlockLifetime& lifetime);
  // Module grouping: each qualified name the file's module metadata names -> its type (the first
  // entry's), so that every node of a path shows its type when any entry says it.
  absl::flat_hash_map<std::string, std::string> module_types_;
  /// The module path of a lifetime whose alloc entry carries module metadata: the prefixes of its
  /// qualified name ("model", "model.layers", ..., with " (Type)" where known); empty otherwise.
  std::vector<std::string> MetadataModulePath(const DeviceTimeline& dt,
                                              const BlockLifetime& lifetime);
  /// Per device: a backward allocation's event (device index) -> the forward stack of the call
  /// that made its node (BackwardForwardPairs).
  std::map<int32_t, absl::flat_hash_map<uint32_t, StackId>> backward_forward_;
  const absl::flat_hash_map<uint32_t, StackId>& BackwardForward(const DeviceTimeline& dt);
};

/// Labels for the sites of individual lifetimes (blocks, CSV and Perfetto exports): collect them,
/// then label them all at once, distinct among the sites collected.
class SiteLabels {
 public:
  explicit SiteLabels(Attribution& attribution);
  /// The index of the lifetime's site (pre-window lifetimes: PreWindowRow, as their stack is
  /// the free's; lifetimes without a stack: NoStackRow, or PreTraceEvidenceRow when `rule`, the
  /// rule of its category, names a row of memory older than the trace).
  size_t Add(const DeviceTimeline& dt, const BlockLifetime& lifetime, CategoryRule rule);
  /// Computes the labels (DistinctLabels); call once, after the last Add.
  void Finish();
  const std::string& Label(size_t index) const { return labels_[index].text; }
  const SiteLabel& Parts(size_t index) const { return labels_[index]; }
  const SiteInfo& Site(size_t index) const { return *sites_[index]; }
  size_t size() const { return sites_.size(); }

 private:
  size_t Insert(const SiteInfo& site);
  Attribution& attribution_;
  std::array<SiteInfo, 7> pre_window_;  // kPreWindowRow and what a free says (PreWindowRow)
  std::array<SiteInfo, 3> no_stack_;    // kBeforeRecordingRow, kTracedNoStackRow, kNoStackRow
  std::array<SiteInfo, 2> evidence_;    // PreTraceEvidenceRow's rows
  absl::flat_hash_map<std::string, size_t> index_;  // SiteInfo::key -> index
  std::vector<const SiteInfo*> sites_;
  std::vector<SiteLabel> labels_;
};

/// Adds the given lifetimes (indices into dt.blocks) to `rows`: to the row with the same key when
/// there is one, else to a new row appended at the end (rows stay unsorted; call
/// SortAndMergeRows, then LabelRows). Used by GroupLive for each device.
void AccumulateGroups(const DeviceTimeline& dt, const std::vector<uint32_t>& lifetimes,
                      GroupContext& context, std::vector<GroupRow>& rows);
/// The same, for a caller that adds to `rows` in many calls (device after device, slice after
/// slice): `index` maps each row's key to its index in `rows` and is kept up to date, where the
/// call above rebuilds it from every row each time (calls x rows; issue 54).
void AccumulateGroups(const DeviceTimeline& dt, const std::vector<uint32_t>& lifetimes,
                      GroupContext& context, std::vector<GroupRow>& rows,
                      absl::flat_hash_map<std::string, uint32_t>& index);

/// Sorts rows (bytes desc, count desc, key asc) and merges rows with equal keys.
void SortAndMergeRows(std::vector<GroupRow>& rows);

/// Sets every row's `site` label: DistinctLabels over the rows (attribution.h), so no two rows
/// print the same label.
void LabelRows(std::vector<GroupRow>& rows);
/// Sets the `site` label of rows [0, top) only, each the label LabelRows would give it: labelled
/// with the rows that start from the same label (DistinctLabelStart), not with every row (a table
/// of 250,000 sites shown 25 at a time; issue 54). The other rows keep no label.
void LabelTopRows(std::vector<GroupRow>& rows, size_t top);

/// Live memory at `moment` on every device of `timeline` (each device at its own moment), grouped,
/// sorted and labelled.
absl::StatusOr<GroupReport> GroupLive(const Snapshot& snap, const Timeline& timeline,
                                      const Moment& moment, const GroupOptions& options);

/// The same with a context made for this snapshot (reused across calls).
absl::StatusOr<GroupReport> GroupLive(GroupContext& context, const Timeline& timeline,
                                      const Moment& moment);

/// Keeps the `top` largest rows and folds the rest into one "[N others]" row (totals unchanged).
void CollapseTail(std::vector<GroupRow>& rows, size_t top);

/// The separator of the frames in a module row's key ("model.py:300 forward;model.py:188 forward").
inline constexpr char kModulePathSeparator = ';';

/// Module rows (GroupBy::kModule, one per chain, sorted) as a tree in depth-first order: a row for
/// every prefix of every chain, `bytes` the whole subtree's, `self_bytes` its own, children after
/// their parent from the largest down (then by key), each named (`site`) after its last frame.
/// Bracketed rows (no module) stay roots. The roots' bytes add up to the leaves' total.
std::vector<GroupRow> ModuleTree(std::vector<GroupRow> leaves);

/// CollapseTail for a ModuleTree: keeps the `top` largest children of each node (and `top` roots),
/// folding the rest of each node's children into one "[N others]" row under it.
void CollapseTreeTail(std::vector<GroupRow>& rows, size_t top);

}  // namespace memsnap::analysis
