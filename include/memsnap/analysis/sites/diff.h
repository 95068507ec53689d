// `memsnap diff A B`: live memory by site before/after, plus totals per device, pool and stream,
// segment counts, peaks and allocator settings. Sites are matched by their key (MatchSites: the
// site identity of attribution.h by default, built from Python frames, autograd node and operator,
// never from ids, addresses or other native frames), so files of different flavours, devices and
// PyTorch builds compare. Also used by `check` for its "top growing sites".
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "memsnap/analysis/sites/group.h"
#include "memsnap/analysis/sites/moved_sites.h"
#include "memsnap/model/snapshot.h"

namespace memsnap::analysis {

/// Why a diff compares the moment it does.
enum class MomentChoice : uint8_t {
  kGiven,       // the user chose it (DiffOptions::auto_moment off)
  kBothTraced,  // auto: both files have a trace, so each file's peak
  kUntraced,    // auto: a file has no trace (DiffReport::untraced_file), so no peak: the ends
};

struct DiffOptions {
  Moment at{Moment::Kind::kEnd, 0};  // kEnd or kPeak (peak needs traces in both files)
  /// Choose the moment: the peak when both files have a trace, else the end (`at` is ignored).
  bool auto_moment = false;
  GroupOptions group;
  int64_t min_delta = 0;  // drop sites with |delta bytes| below this
  /// Pair a site only before with a site only after that differ in line numbers alone, when each
  /// is the only such candidate on its side (MatchSites; by site only, not with ignore_lines).
  bool pair_moved = true;
  /// Pair a compiled site only on one side with the eager sites only on the other that have the
  /// same user frames (MatchSites, PairCompiledSites; by site only).
  bool pair_compiled = true;
  /// Each file's own moment, before and after, in place of `at` (`diff --step N`: the same
  /// training step of two runs lies at other events in each); `at_label` then says what they are.
  std::optional<std::array<Moment, 2>> at_each;
  std::string at_label;  // "the peak of step 3 (before: event:85, after: event:90)"
};

enum class Presence : uint8_t { kBoth, kOnlyBefore, kOnlyAfter };
std::string_view PresenceName(Presence p);  // "both", "only_before", "only_after"

/// A row that pairs one line of the user's code run eagerly in one file and under torch.compile in
/// the other (MatchSites): kCompiled when the later file compiled it, kEager when the earlier did.
enum class CompileChange : uint8_t { kNone, kCompiled, kEager };
std::string_view CompileChangeName(CompileChange c);  // "none", "compiled", "eager"

struct SiteDelta {
  std::string key;                  // after's key when both sides have the site
  std::string site;                 // label, distinct among the rows of one MatchSites result
  SiteLabel label;                  // `site` as a text table shows it (head, callers)
  SiteInfo info;                    // label parts (after's when both sides have the site)
  std::vector<std::string> frames;  // innermost first (after's when both sides have the site)
  CategoryBytes before_categories{}, after_categories{};
  /// The category with the most bytes on the later side that has the site.
  Category category() const;
  int64_t before_bytes = 0, after_bytes = 0;
  int64_t before_count = 0, after_count = 0;
  Presence presence = Presence::kBoth;
  /// A site paired across moved lines (presence kBoth): the before side's key, which differs from
  /// `key` in Python line numbers only. Empty when both sides have the same key.
  std::string before_key;
  /// The frames whose line moved, "model/net.py:15→17" (the owner first, then its callers; frames
  /// the label does not show, such as module plumbing, are not listed). Empty when not paired.
  std::vector<std::string> moved;
  /// Set when the row pairs eager sites with a compiled one (presence kBoth; its figures are the
  /// sums of each side's rows): which way, the eager side's operators as the label names them
  /// ("mul", "sigmoid"; CompiledInfo), and every key of each side (`key` is the first of
  /// `after_keys`). Empty otherwise.
  CompileChange compile = CompileChange::kNone;
  std::vector<std::string> eager_ops;
  std::vector<std::string> before_keys, after_keys;
  /// Set when the row is the gradients of the same parameters made by other autograd nodes in
  /// each file (MatchGradientsByParameter; presence kBoth): `before_keys` and `after_keys` hold
  /// every key of each side, `info.forward_lines` the forward lines both sides' nodes share.
  bool by_parameter = false;
  /// Set on a row folded with others of its kind that cancel it (FoldCancellingRows); such rows
  /// are in DiffReport::other_sites, never in `sites`.
  bool folded = false;
  bool synthetic = false;
  int64_t delta_bytes() const { return after_bytes - before_bytes; }
  int64_t delta_count() const { return after_count - before_count; }
};

/// Before/after/delta of one figure (delta = after - before).
struct Delta {
  int64_t before = 0, after = 0;
  int64_t delta() const { return after - before; }
};

/// Totals of one scope: a device, a (device, pool) or a (device, stream).
struct ScopeDelta {
  std::string scope;  // "device 0", "device 0 pool (0,0) large", "device 0 stream 0x0"
  int32_t device = 0;
  Delta reserved, allocated, requested, segments, blocks;
};

struct SettingDelta {
  std::string name, before, after;
};

struct DeviceDelta {
  int32_t device = 0;
  bool has_peak = false;  // both sides have a trace for this device
  Delta peak;             // live requested bytes at the peak
  Delta live;             // live requested bytes at the chosen moment
};

/// Rows of one kind of memory folded because they cancel (FoldCancellingRows): "3 rows that cancel
/// within gradients folded (±2.0 MiB)".
struct FoldedRows {
  Category category = Category::kUnknown;
  int64_t rows = 0;
  int64_t bytes = 0;  // the bytes that moved each way (the sum of the growing rows' deltas)
};

struct DiffReport {
  DiffOptions options;
  std::string before_path, after_path;
  std::vector<SiteDelta> sites;  // |delta| desc, then delta desc, then key; zero-delta rows dropped
  /// Sites left out of `sites` (zero delta, or |delta| < min_delta), sorted by key; the folded
  /// output needs them for complete flame graphs.
  std::vector<SiteDelta> other_sites;
  int64_t sites_only_before = 0, sites_only_after = 0, sites_unchanged = 0;
  int64_t sites_moved = 0;  // sites paired across moved lines (counted once, as present in both)
  /// Rows pairing eager sites with a compiled one (each counted once, as present in both).
  int64_t sites_compiled = 0;
  /// Rows that are the gradients of the same parameters made by other nodes in each file
  /// (MatchGradientsByParameter), each counted once, as present in both.
  int64_t sites_by_parameter = 0;
  /// Rows folded because they cancel within their kind (FoldCancellingRows), by kind in enum
  /// order; the rows themselves are in `other_sites` (SiteDelta::folded).
  std::vector<FoldedRows> folded;
  Delta live_bytes, live_count;  // totals over all sites (before min-delta filtering)
  /// Live bytes by kind of memory (parameter, gradient, ...; attribution.h), over all sites.
  CategoryBytes before_by_category{}, after_by_category{};
  std::vector<ScopeDelta> scopes;  // devices, then pools, then streams, each ascending
  std::vector<DeviceDelta> devices;
  std::vector<SettingDelta> settings;  // only those that differ
  /// Why this moment, when DiffOptions::auto_moment chose it; kGiven when the user chose.
  MomentChoice moment_choice = MomentChoice::kGiven;
  std::string untraced_file;  // kUntraced: the file without a trace
  /// No live block of either file at the moment has a stack: the site rows say nothing.
  bool no_stacks = false;
  bool both_traced = false;  // both files have trace events (--at peak is possible)
};

/// Matches the rows of two groupings by key (rows are unique per key on each side), sums them, and
/// labels the merged sites with DistinctLabels. Presence and both sides' figures are set; the order
/// is by key. The one place where sites of two snapshots are matched.
///
/// Then pairs the sites whose lines moved (an edit above them; PairMovedSites, moved_sites.h): each
/// pair becomes one row (presence kBoth, `before_key` and `moved` set) whose label shows the move:
/// "linear ← model/net.py:15→17 forward". Rows without unlined keys (GroupOptions::unlined_keys
/// off) are never paired.
///
/// Then, with `pair_compiled`, pairs the lines one file ran eagerly and the other under
/// torch.compile among the rows still unmatched (PairCompiledSites): each pair becomes one row
/// (presence kBoth, `compile`, `eager_ops`, `before_keys` and `after_keys` set) whose figures are
/// the sums of each side's rows and whose label says what changed: "mul, sigmoid → torch.compile
/// ← model.py:22 forward".
///
/// Then, with `match_gradients`, merges the gradients of the same parameters made by other
/// autograd nodes in each file (MatchGradientsByParameter).
std::vector<SiteDelta> MatchSites(const std::vector<GroupRow>& before,
                                  const std::vector<GroupRow>& after, bool pair_compiled = false,
                                  bool match_gradients = false);

/// Gradients are named after the autograd node that wrote them, so the same gradients made by
/// another node in the other file (mixed precision adds a `ToCopyBackward0` between a weight and
/// its use: the fp32 `.grad` is then that node's output, not `MmBackward0`'s) are a site only
/// before and a site only after, of equal and opposite size. A gradient belongs to the parameter
/// the forward pass used where the node was made, which the file shows as the node's forward lines
/// (SiteInfo::forward_lines, docs/attribution.md rule L2). This merges the gradient rows (category
/// gradient, made in backward, with forward lines) whose forward lines meet: a row present on one
/// side only joins every such row that shares one of its lines, directly or through other rows of
/// one side; a row present on both sides joins only through a row of one side, and only when its
/// bytes changed the other way from theirs (the bytes a new node took over; an unchanged node, or
/// two nodes of both files whose lines meet, are left alone). Each group with rows on both sides
/// is one row: presence kBoth, `by_parameter`, `before_keys`/`after_keys` set (a row of both
/// sides in each), figures each side's sums, labelled "MmBackward0 (mm) → ToCopyBackward0
/// (_to_copy) for model.py:15 forward" (the lines both sides share). Rows without forward lines
/// are left to FoldCancellingRows.
void MatchGradientsByParameter(std::vector<SiteDelta>& rows);

/// Folds the rows of one kind of memory that cancel each other: among the rows present on one
/// side only (a site on both sides is the same code, and its change is real) named by an
/// autograd node or the engine (SiteKind kBackward, kEngine: a user's line gone and another new
/// are a change to show), of one category, either all of them when the bytes gone equal the
/// bytes new, or else each row gone paired with a new row of exactly its size (largest first,
/// then by key). Such rows are the same memory named by another node (AccumulateGrad in one file,
/// the engine's sum in the other), not a change. Folded rows get `folded` set and move to
/// `folded_out`; returns per category how many and how much.
std::vector<FoldedRows> FoldCancellingRows(std::vector<SiteDelta>& rows,
                                           std::vector<SiteDelta>& folded_out);

/// Compares two snapshots. Errors: --at peak when a file has no trace; invalid filter regexes.
absl::StatusOr<DiffReport> DiffSnapshots(const Snapshot& before, const Snapshot& after,
                                         const DiffOptions& options);

/// The timeline DiffSnapshots rebuilds for each side, for a caller that rebuilds it during the
/// read (cli::LoadAllWithTimelines).
TimelineOptions DiffTimelineOptions(const DiffOptions& options);

/// DiffSnapshots with the timelines already rebuilt with DiffTimelineOptions(options); a
/// timeline's error is returned as DiffSnapshots would return it.
absl::StatusOr<DiffReport> DiffSnapshots(const Snapshot& before, const Snapshot& after,
                                         const absl::StatusOr<Timeline>& before_timeline,
                                         const absl::StatusOr<Timeline>& after_timeline,
                                         const DiffOptions& options);

}  // namespace memsnap::analysis
