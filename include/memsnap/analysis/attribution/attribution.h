// Who allocated it, in the owner's terms: a site label a person recognises for every stack, and a
// category (parameter, gradient, optimizer state, activation...) for every block lifetime. One
// model used by every command that names a site (docs/attribution.md states every rule with
// examples).
//
// clang-format off
//   FrameTable ──ClassifyFrame (once per frame)──> FrameClass
//   StackTable ──Attribution::Site (once per stack)──> SiteInfo {key, what, owner, callers, phase}
//   rows of a table ──DistinctLabels──> labels, no two alike
//   BlockLifetime ──LifetimeCategorizer (stack phase + the device's phase runs)──> Category
// clang-format on
//
// Costs: a frame is classified once, a stack attributed once; the categorizer reads the events it
// needs (the phase runs around each lifetime it is asked about) and each event at most once.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/node_hash_map.h"
#include "absl/status/statusor.h"
#include "memsnap/analysis/timeline/filter.h"
#include "memsnap/analysis/timeline/timeline.h"
#include "memsnap/model/snapshot.h"

namespace memsnap::analysis {

/// The names of the synthetic rows (sites that are no user code), shared by every table.
/// Lifetimes without frames (docs/attribution.md, L5), by what the file says about them: live
/// blocks the trace never saw, in a file whose allocations record stacks (older than
/// _record_memory_history); allocations the trace recorded with an empty stack; and the rest (no
/// trace, or no stacks recorded at all).
inline constexpr std::string_view kBeforeRecordingRow = "[allocated before recording started]";
inline constexpr std::string_view kTracedNoStackRow = "[allocation recorded without a stack]";
inline constexpr std::string_view kNoStackRow = "[no stack recorded]";
inline constexpr std::string_view kAllFilteredRow = "[all frames filtered]";
inline constexpr std::string_view kNoAnnotationRow = "[no annotation]";
/// `--by metadata` / `--by compile_context`: the allocation's trace entry has no `user_metadata`
/// (or an empty one) / no `compile_context` (or PyTorch's "N/A"), or its alloc is older than the
/// trace.
inline constexpr std::string_view kNoMetadataRow = "[no metadata]";
inline constexpr std::string_view kNoCompileContextRow = "[no compile context]";
/// Pre-window lifetimes (only their free is in the trace): the allocation site is unknown. Upstream
/// shows the *free's* stack for them, which reads like an allocation site; memsnap does not.
inline constexpr std::string_view kPreWindowRow = "[allocated before the trace]";
/// Pre-window lifetimes whose free says what they were (the rules freed_by_zero_grad,
/// freed_by_backward, freed_by_optimizer, kv_cache_frame and autocast_cleared,
/// docs/attribution.md "Rules"): the row says it too.
inline constexpr std::string_view kPreWindowZeroGradRow =
    "[allocated before the trace, freed by zero_grad: last step's gradients]";
inline constexpr std::string_view kPreWindowAccumulateGradRow =
    "[allocated before the trace, replaced by AccumulateGrad: last step's gradients]";
inline constexpr std::string_view kPreWindowBackwardRow =
    "[allocated before the trace, freed by backward: saved for it]";
inline constexpr std::string_view kPreWindowOptimizerRow =
    "[allocated before the trace, freed by the optimizer step: its state]";
/// Memory older than the trace, never seen in it, that the trace's optimizer step shows to be more
/// than parameters (the rules pre_trace_gradient and pre_trace_optimizer_state,
/// docs/attribution.md "Blocks from before the trace"): the row says what the evidence showed, in
/// kBeforeRecordingRow's words.
inline constexpr std::string_view kBeforeRecordingGradientRow =
    "[allocated before recording started: gradients the optimizer step reads]";
inline constexpr std::string_view kBeforeRecordingOptimizerRow =
    "[allocated before recording started: optimizer state from an earlier step]";
inline constexpr std::string_view kPreWindowKvCacheRow =
    "[allocated before the trace, freed by KV cache code: the cache]";
inline constexpr std::string_view kPreWindowAutocastRow =
    "[allocated before the trace, freed by autocast's exit: its cached casts]";

/// The kinds of memory PyTorch's own memory profiler tells apart, the kinds a run beyond the plain
/// training loop keeps (a generation's KV cache, autocast's cached weight casts, the state the
/// program's own objects keep), plus `unknown`, then the user's own (--category NAME=REGEX,
/// docs/attribution.md "User categories"): value kNumCategories + i is the i-th of a session's
/// UserCategories (CategoryNames), in the order they were given.
enum class Category : uint8_t {
  kParameter,
  kGradient,
  kOptimizerState,
  kActivation,
  kTemporary,
  kInput,
  kKvCache,        // keys and values a generation loop keeps across forward calls
  kAutocastCache,  // autocast's low-precision copies of the weights, kept until autocast exits
  kState,          // tensors the program's own objects keep: neither parameters nor optimizer state
  kUnknown,
};
/// The built-in categories.
inline constexpr int kNumCategories = 10;
/// How many user categories one run may define, and the size of every per-category array.
inline constexpr int kMaxUserCategories = 16;
inline constexpr int kMaxCategories = kNumCategories + kMaxUserCategories;
inline Category UserCategoryAt(int i) { return static_cast<Category>(kNumCategories + i); }

/// A category of the user's own: memory whose allocation stack has a frame whose
/// "filename:line:function" text (Snapshot::FrameText, the path as recorded) the regex finds
/// (ECMAScript, search) is NAME, before any built-in rule.
struct UserCategory {
  std::string name;
  std::string pattern;
  std::regex regex;
};
using UserCategories = std::vector<UserCategory>;
/// Parses "NAME=REGEX". NAME: letters, digits, '_', '-', '.', not a built-in category's name.
/// Errors say what is wrong (the caller names the flag or FILE:LINE).
absl::StatusOr<UserCategory> ParseUserCategory(std::string_view text);
/// Appends `category` to `list`; an error when NAME is already there or the list is full.
absl::Status AddUserCategory(UserCategories& list, UserCategory category);

/// The categories of one session: the built-ins, then the user's own in the order given. The one
/// vocabulary categories are decided in (AttributionOptions::categories: a user category's regex
/// is tried before the built-in rules) and named in: every result that holds categories carries
/// the CategoryNames it was decided with, and its renderers name them through it. A value, not a
/// process-wide setting: two sessions with different user categories may run side by side (the
/// Python module's threads). Cheap to copy (the list is shared and immutable); safe to read from
/// any thread.
class CategoryNames {
 public:
  /// The built-in categories alone.
  CategoryNames() = default;
  /// The built-ins and `user` (at most kMaxUserCategories of them are used).
  explicit CategoryNames(UserCategories user);

  /// How many categories there are: the built-ins and the user's.
  int size() const;
  /// "parameter", "gradient", "optimizer_state", "activation", "temporary", "input", "kv_cache",
  /// "autocast_cache", "state", "unknown", and a user category's NAME; "unknown" for a value past
  /// size().
  std::string_view Name(Category c) const;
  /// The category named `text`; errors list the names.
  absl::StatusOr<Category> Parse(std::string_view text) const;
  /// The user's categories, in order.
  const UserCategories& user() const;

 private:
  std::shared_ptr<const UserCategories> user_;
};

/// Bytes (or counts) per category, indexed by Category (built-in, then user categories).
using CategoryBytes = std::array<int64_t, kMaxCategories>;
/// The category holding the most bytes (ties: the first in enum order); kUnknown when all are 0.
Category DominantCategory(const CategoryBytes& bytes);

/// What part of a training program an allocation's stack shows it in (docs/attribution.md,
/// "Phases"). kNone: the stack says nothing (empty, or no event at all).
enum class Phase : uint8_t {
  kNone,
  kForward,    // under a module call (nn.Module.__call__, a `forward` frame, torch.compile'd code)
  kBackward,   // an autograd node or the autograd engine, or the Python call into backward
  kOptimizer,  // an optimizer's step / zero_grad / state init, torch.optim, gradient clipping
  kInit,       // module construction, Module.to()/cuda(), load_state_dict, from_pretrained
  kData,       // a data loader, or a host-to-device copy outside a forward pass
  kOther,      // frames, but none of the above (the training loop's own code: loss, logging...)
};
inline constexpr int kNumPhases = 7;
std::string_view PhaseName(Phase p);  // "none", "forward", "backward", ...

/// The phases of a training step as `summary` and `top --by phase` report them
/// (docs/attribution.md, "Phases of a step"): Phase's forward, backward and optimizer; everything
/// else (init, data, the training loop's own code) is kOther.
enum class StepPhase : uint8_t { kForward, kBackward, kOptimizer, kOther };
inline constexpr int kNumStepPhases = 4;
std::string_view StepPhaseName(StepPhase p);  // "forward", "backward", "optimizer", "other"

/// A `user_metadata` value in the form memsnap.record(model=...) writes (docs/attribution.md,
/// "Modules"): "QUALIFIED.NAME (Type) phase", e.g. "model.layers.3.attn (Attention) backward": the
/// module whose forward or backward was running when the entry was recorded. The name is one or
/// more non-empty parts joined by '.', without spaces or brackets; the type is letters, digits,
/// '_' and '.'; the phase is lowercase letters and '_'. Views into `text`.
struct ModuleMetadata {
  std::string_view name;   // "model.layers.3.attn"
  std::string_view type;   // "Attention"
  std::string_view phase;  // "forward", "backward"
};
/// nullopt when `text` is not in that form (any other metadata a program sets).
std::optional<ModuleMetadata> ParseModuleMetadata(std::string_view text);
StepPhase StepPhaseOf(Phase p);

/// What one frame is, for attribution. Machinery classes are never the owner of memory.
enum class FrameClass : uint8_t {
  kPython,      // a Python source frame (".py" file, "<frozen ...>", "<string>"...)
  kNode,        // torch::autograd::...::XBackward0::apply, AccumulateGrad::apply, CopySlices...
  kOp,          // at::_ops::NAME::call: the dispatcher entry of an ATen operator
  kEngine,      // the autograd engine (Engine::evaluate_function, InputBuffer, thread_main...)
  kAllocator,   // the caching allocator and storage (c10::cuda::CUDACachingAllocator...)
  kFactory,     // tensor factories and output allocation (empty_cuda, create_out, resize_...)
  kDispatcher,  // dispatcher, boxing, Register*/VariableType* wrappers, Python bindings
  kUnwinder,    // stack capture (torch::unwind, CapturedTraceback, gather_with_cpp)
  kCPython,     // the CPython interpreter (_PyEval_EvalFrameDefault, Py_RunMain...)
  kLibc,        // libc, pthread, thread start routines (__libc_start_main, clone...)
  kNative,      // any other native frame (kernels' host code, backward formulas...)
};
std::string_view FrameClassName(FrameClass c);
/// Machinery: allocator, factory, dispatcher, unwinder, CPython, libc, engine.
bool IsMachinery(FrameClass c);

/// Classifies a frame by its function name and file name (plain substring and suffix tests).
FrameClass ClassifyFrame(std::string_view name, std::string_view filename);

/// "BmmBackward0" from "torch::autograd::generated::BmmBackward0::apply(...)"; "" when the name is
/// not an autograd node's apply.
std::string NodeName(std::string_view function);
/// "bmm" from "at::_ops::bmm::call(...)", "div" from "at::_ops::div_Tensor::call(...)": the
/// operator without its overload name (well-known overload suffixes only); "" when not an op.
std::string OpName(std::string_view function);
/// "div_Tensor" from "torch::autograd::VariableType::(anonymous namespace)::div_Tensor(...)": the
/// operator (with its overload) whose generated autograd kernel the frame is, the kernel that
/// records the operator's backward node; "" when the frame is not one.
std::string AutogradWrapperOp(std::string_view function);
/// The base of the autograd node PyTorch names after an operator: "Div" for "div_Tensor" (nodes
/// DivBackward0, DivBackward1...), "ToCopy" for "_to_copy", "UpsampleNearest2D" for
/// "upsample_nearest2d" (docs/attribution.md, rule L2).
std::string NodeBaseOfOp(std::string_view wrapper_op);
/// "Div" from "DivBackward0"; "" for a node not named "<Base>Backward<N>" (AccumulateGrad...).
std::string NodeBase(std::string_view node);
/// A Python frame as sites show it, "path/model.py:LINE function" (PythonFrameText: a site's
/// owner, callers and forward lines), in parts: `place` "path/model.py:LINE", `file`
/// "path/model.py" (the whole place when it has no ":LINE"), `line` (-1 then) and `function`
/// (the whole text when it has no space).
struct FrameTextParts {
  std::string_view place, file, function;
  int64_t line = -1;
};
FrameTextParts SplitFrameText(std::string_view text);
/// "zeros_like" from "at::native::zeros_like(at::Tensor const&, ...)": the last one or two
/// components of a C++ function name, without return type, templates and parameters.
std::string ShortNativeName(std::string_view function);

/// A Python file path as shown in labels: relative to the last `site-packages/` or
/// `dist-packages/`, or to `lib/pythonX.Y/` for the standard library, or (user files) with
/// `user_prefix` removed; backslashes become '/'.
std::string ShortPath(std::string_view path, std::string_view user_prefix);
/// `path` with '/' separators and "." and "dir/.." components removed (lexically).
std::string NormalPath(std::string_view path);
/// A frame as "file:line:function" with its path read through NormalPath: the whole frame as the
/// report and the trace export show it ("/home/me/proj/model.py:12:forward", not
/// "/home/me/proj/scripts/../model.py:12:forward"). Filters match Snapshot::FrameText instead, the
/// path as recorded.
std::string DisplayFrameText(const Snapshot& snap, FrameId frame);
/// Whether a Python file is library code (site-packages, dist-packages, the standard library, a
/// torch source tree, "<frozen ...>") rather than the user's own.
bool IsLibraryPath(std::string_view path);

/// How a site is named (docs/attribution.md, "Labels").
enum class SiteKind : uint8_t {
  kPython,         // has Python frames: named by the user's frame (and what it called)
  kBackward,       // an autograd node and no Python frame: "BmmBackward0 (bmm)"
  kEngine,         // the autograd engine itself, no node: "sum (autograd engine)"
  kNative,         // native frames only: the operator or the first non-machinery frame
  kMachineryOnly,  // only allocator/dispatcher/... frames: nothing to name
  kNoStack,        // no frames recorded
};

/// Everything the label rules need about one stack, as text, so that sites of two snapshots can be
/// matched and labelled together (diff, leaks over a series).
struct SiteInfo {
  SiteKind kind = SiteKind::kNoStack;
  /// Identity: two allocations are the same site when their keys are equal. Built from the Python
  /// frames (short paths; lines unless ignore_lines), the autograd node and the operator, never
  /// from other native frames, so it matches across PyTorch builds and machines.
  std::string key;
  /// The key with every Python frame's line number left out, when AttributionOptions::unlined_keys
  /// asks for it and the key has a line; else empty. Equal for the same allocation after an edit
  /// moved its lines (diff pairs such sites: docs/attribution.md, "Sites whose lines moved").
  std::string unlined_key;
  /// The Python frames of the key ("short/path.py:LINE:function", owner outward), when
  /// unlined_key is set: diff keeps the lines of those the other file also has.
  std::vector<std::string> key_frames;
  std::string what;   // the operator or library function the owner called; "" when the owner
                      // is the innermost Python frame (then `op` may be shown to tell sites apart)
  std::string owner;  // "optimizers.py:82 step", "BmmBackward0 (bmm)", "[no stack]"
  /// Frames outward from the owner (display text), nearest first: what tells two sites with the
  /// same owner apart. Python frames for Python sites; native frames for native sites.
  std::vector<std::string> callers;
  /// Sites whose owner called torch.compile's code (`what` is kCompiledWhat): how many of
  /// `callers` come from the stack torch.compile recorded for the compiled code (the user's frames
  /// between the generated code and torch.compile's runtime, which name the code it compiled); the
  /// rest are the frames that called the compiled function. 0 for other sites. Not part of the key.
  size_t traced_callers = 0;
  /// Python frames inside the owner (library code it called), nearest the owner first: what
  /// tells apart stacks of one site (--by stack rows), shown as " [via FRAME]".
  std::vector<std::string> inner;
  std::string op;    // the operator called (outermost at::_ops frame inside the owner), or ""
  std::string node;  // the autograd node, or ""
  /// Backward sites: the user's lines ("model.py:12 forward", in file and line order) whose
  /// forward stacks (of the forward or other phase, with no node or engine frame) show
  /// the autograd kernel of an operator this node is named after (docs/attribution.md, rule L2).
  /// One of them created the node; empty when the file shows none. Not part of the key.
  std::vector<std::string> forward_lines;
  Phase phase = Phase::kNone;
  /// The first user category (AttributionOptions::categories) a frame matches; -1 for none.
  int user_category = -1;
  /// A model library's layer owns the site and `callers[0]` is the user's frame that ran the
  /// model (docs/attribution.md, "Model libraries"): one-line labels always show that caller.
  bool model_owned = false;
  bool accumulate_grad = false;  // an AccumulateGrad frame: the engine writing a .grad
  bool zero_grad = false;        // an optimizer's zero_grad frame (frees gradients)
  /// A frame of KV cache code (docs/attribution.md, rule kv_cache_frame): transformers'
  /// cache_utils.py, a function named for a KV cache or past_key_values, or such a file as the
  /// innermost Python frame.
  bool kv_cache = false;
  bool autocast_cast = false;   // at::autocast::cached_cast: autocast casting an operator's input
  bool autocast_clear = false;  // autocast's cache being cleared (its outermost region exiting)
  /// Init phase from a plain `__init__` (no module construction, loading or .to()), where a
  /// `*_like` operator or a comprehension made the tensor: an object of the program's own keeping
  /// per-parameter buffers (rule init_state).
  bool init_state = false;
  bool synthetic() const { return kind == SiteKind::kNoStack || kind == SiteKind::kMachineryOnly; }
  /// The label without disambiguation: "what ← owner", or "owner", and a backward site's
  /// forward lines: "DivBackward0 (div) for nn_utils.py:6 softmax".
  std::string BaseLabel() const;
  /// " for nn_utils.py:6 softmax", " for one of 4 forward lines: a, b, c, …" (in brackets when
  /// asked: the label goes on after it); "" without forward lines.
  std::string ForwardClause(bool bracket) const;
};

inline constexpr std::string_view kLabelArrow = " \u2190 ";  // " ← "
inline constexpr std::string_view kMachineryOnlyRow = "[allocator frames only]";
/// SiteInfo::what of a Python site whose owner called code torch.compile runs (rule L1):
/// "torch.compile ← model.py:22 forward".
inline constexpr std::string_view kCompiledWhat = "torch.compile";

/// A site's label in one table (docs/attribution.md, "Distinct labels").
struct SiteLabel {
  /// One line, distinct among the table's sites (JSON `site`, CSV, the report): the head, then
  /// the deeper callers that tell the site apart, with " ← …" where frames are left out:
  /// "einsum ← model.py:22 forward ← model.py:76 forward ← … ← bench.py:224 run".
  std::string text;
  /// A text table's row: BaseLabel() and what tells the site apart, except callers beyond the
  /// nearest (`callers[0]`), which the lines under the row show (CallerLines).
  std::string head;
  /// Indices into SiteInfo::callers (> 0, ascending) of the callers that tell the site apart.
  std::vector<size_t> deep;
  bool nearest_in_head = false;  // the head shows callers[0] (it tells the site apart)
};

/// Labels for a table's sites, one per entry, distinct whenever the keys differ (entries with equal
/// keys get equal labels). Starts from BaseLabel() without a backward site's forward lines;
/// entries whose labels collide get, in turn: the nearest caller that tells them apart (repeated
/// until they differ or callers run out), the nearest frame inside the owner that does
/// (" [via FRAME]"), the operator, and finally " #2", " #3"... in key order. The forward lines
/// then go in after the owner (ForwardClause, in brackets when more follows). Deterministic;
/// depends only on the entries.
std::vector<SiteLabel> DistinctSiteLabels(const std::vector<const SiteInfo*>& sites);
/// The label DistinctSiteLabels starts `site` from: entries are told apart only from the others
/// that start from the same one (and, last, from any whose final label is equal). A caller that
/// needs the labels of a few sites among many can label those with every site that shares their
/// start, and get the labels the whole table would give them but for that last case.
std::string DistinctLabelStart(const SiteInfo& site);
/// The `text` of each DistinctSiteLabels entry.
std::vector<std::string> DistinctLabels(const std::vector<const SiteInfo*>& sites);

/// One frame shown under a table row.
struct CallerLine {
  std::string_view text;  // a SiteInfo::callers entry
  bool tells = false;     // it tells the row apart from another with the same head
};
/// The callers under a table row whose head is `label.head`, in stack order, each once: those the
/// head does not show, through the deepest that tells the row apart, and at least `context` when
/// the stack has them. `more` gets how many callers are left out.
std::vector<CallerLine> CallerLines(const SiteInfo& site, const SiteLabel& label, size_t context,
                                    size_t* more);

struct AttributionOptions {
  bool ignore_lines = false;  // keys without line numbers (diff --ignore-lines)
  bool unlined_keys = false;  // also build SiteInfo::unlined_key (diff, to pair moved sites)
  CategoryNames categories;   // the user's categories, tried before the built-in rules
};

/// Attribution of one snapshot's stacks, computed lazily and cached per frame and per stack. The
/// frame filter (when given) decides which Python frames may name a site (--hide / --keep); native
/// frames are always read. Not thread-safe.
class Attribution {
 public:
  Attribution(const Snapshot& snapshot, FrameFilter* filter, AttributionOptions options = {});
  Attribution(const Attribution&) = delete;
  Attribution& operator=(const Attribution&) = delete;

  const Snapshot& snapshot() const { return snap_; }
  /// The site of `stack`; an invalid or empty stack is the "[no stack]" site.
  const SiteInfo& Site(StackId stack);
  /// The phase of `stack` (cheaper than Site: no text is built). kNone for empty stacks.
  Phase PhaseOf(StackId stack);
  FrameClass ClassOf(FrameId frame);
  /// Display text of a Python frame: "short/path.py:LINE function".
  std::string PythonFrameText(FrameId frame);
  /// The module call chain of `stack` (docs/attribution.md, "Modules"): its Python `forward`
  /// frames (user and library code, not torch.compile's), outermost first, as PythonFrameText.
  /// A backward stack has none of its own: it gets the longest chain shared by the forward stacks
  /// of its forward lines (SiteInfo::forward_lines), the module whose forward made the node.
  /// Empty when neither applies. Frames the filter hides are left out.
  const std::vector<std::string>& ModuleChain(StackId stack);
  /// The node base name (NodeBaseOfOp) of the autograd kernel a forward stack shows inside its
  /// innermost Python frame: the stacks ForwardLines reads its lines from (rule L2). nullptr for
  /// every other stack.
  const std::string* ForwardKernelBase(StackId stack);
  /// The directory prefix removed from user files (longest common directory of the snapshot's
  /// non-library Python files), "" when there are none.
  const std::string& user_prefix();
  /// The ids of `device`'s segments (SegmentsByDevice, sorted once per Attribution and kept):
  /// what a question about one device's dumped blocks reads, never a scan of every segment.
  std::span<const uint32_t> SegmentsOf(int32_t device);

 private:
  std::optional<SegmentsByDevice> segments_by_device_;
  struct StackFacts;
  /// What a Python file's path says, computed once per distinct file name.
  struct FileFacts {
    std::string normal;  // NormalPath
    bool library = false;
    bool compiled = false;  // code torch.compile runs
    bool model = false;     // a model library's code (transformers, peft, diffusers...)
  };
  const FileFacts& File(StrId filename);
  /// Per Python frame, computed once: display text, key text, phase marker.
  struct PythonFacts {
    std::string text;  // "short/path.py:LINE function"
    std::string key;   // "short/path.py:LINE:function" (no line with ignore_lines)
    uint8_t marker = 0;
    bool done = false;
  };
  const PythonFacts& Python(FrameId frame);
  /// A Python frame's phase marker (PythonFacts::marker without the texts), cached per frame.
  uint8_t MarkerOf(FrameId frame);
  StackFacts Facts(std::span<const FrameId> frames);
  /// The phase of a stack of `frames` (SiteInfo::phase), from its facts and its frames' markers.
  Phase PhaseFrom(std::span<const FrameId> frames, const StackFacts& facts);
  /// SiteInfo::init_state of an init-phase stack of `frames`.
  bool InitState(std::span<const FrameId> frames, const StackFacts& facts);
  SiteInfo Build(StackId stack);
  /// The first user category (AttributionOptions::categories) a frame of `stack` matches
  /// (SiteInfo::user_category).
  int UserCategoryOf(StackId stack);
  /// The user's lines that called operators whose nodes are named `<base>Backward<N>`, from every
  /// forward stack of the snapshot (indexed on first use).
  const std::vector<std::string>& ForwardLines(const std::string& base);
  /// The forward frames of `frames` (ModuleChain without the backward rule).
  std::vector<std::string> ForwardFrames(std::span<const FrameId> frames);

  const Snapshot& snap_;
  FrameFilter* filter_;
  AttributionOptions options_;
  std::vector<uint8_t> frame_class_;  // FrameClass + 1; 0 = not classified yet
  std::vector<PythonFacts> python_;   // by FrameId, filled on first use
  // By filename StrId; node-based: File() hands out references that stay valid as it grows.
  absl::node_hash_map<uint32_t, FileFacts> files_;
  std::vector<int32_t> site_slot_;  // StackId -> index into sites_; -1 = not built
  std::vector<uint8_t> phase_;      // StackId -> Phase + 1; 0 = not computed
  std::vector<uint8_t> marker_;     // FrameId -> Marker + 1; 0 = not computed
  std::vector<uint8_t> kv_frame_;   // FrameId -> KV cache frame bits | 4; 0 = not computed
  std::vector<int8_t> user_frame_;  // FrameId -> first matching user category + 1; -1 = not run
  std::deque<SiteInfo> sites_;      // a deque: Site() hands out references that must stay valid
  SiteInfo no_stack_;
  std::string user_prefix_;
  bool user_prefix_done_ = false;
  // NodeBaseOfOp -> the owners of forward stacks that called such an operator, distinct, in file
  // and line order.
  absl::flat_hash_map<std::string, std::vector<std::string>> forward_lines_;
  absl::flat_hash_map<uint32_t, std::string> kernel_base_;  // StackId -> ForwardKernelBase
  bool forward_lines_done_ = false;
  std::vector<int32_t> chain_slot_;              // StackId -> index into chains_; -1 = not built
  std::deque<std::vector<std::string>> chains_;  // ModuleChain results (references stay valid)
  // A forward line (SiteInfo::owner) -> the chain its forward stacks share (ModuleChain's
  // backward rule), built on first use.
  absl::flat_hash_map<std::string, std::vector<std::string>> line_chain_;
  bool line_chain_done_ = false;
};

struct SiteInfo;
/// The row of a lifetime allocated before the trace, whose stack at hand is its free's: what that
/// free says of it, by the same rules Categorize decides its category with (kPreWindowZeroGradRow
/// ...), else kPreWindowRow.
std::string_view PreWindowRow(const SiteInfo& free_site);

/// Why a lifetime has its category: the rule that decided (docs/attribution.md, "Categories").
enum class CategoryRule : uint8_t {
  kAccumulateGrad,    // gradient: allocated by AccumulateGrad
  kBackwardKept,      // gradient: allocated in backward, alive after backward ends
  kBackwardFreed,     // temporary: allocated and freed inside backward
  kOptimizerKept,     // optimizer_state: allocated in the optimizer, alive after the step
  kOptimizerFreed,    // temporary: allocated and freed inside the optimizer step
  kInitKept,          // parameter: module init / to() / load, alive after it
  kInitFreed,         // temporary: freed inside the init phase
  kDataKept,          // input: data loader / host-to-device copy, alive after it
  kDataFreed,         // temporary
  kBeforeForward,     // input: allocated outside any phase, alive when the next forward starts
  kSavedForBackward,  // activation: allocated before backward (forward, loss), alive when it starts
  kForwardKept,       // activation: no backward follows; alive after its forward pass ends
  kForwardFreed,      // temporary: freed before backward starts / inside its forward pass
  kOtherFreed,        // temporary: outside any phase, freed before the next phase change
  kPreTracePersistent,  // parameter: no stack, alive through a whole trace that ran a model
  kFreedByBackward,     // activation: allocated before the trace, freed by the autograd engine
  kFreedByZeroGrad,     // gradient: allocated before the trace, freed by zero_grad
  kFreedByOptimizer,    // optimizer_state: allocated before the trace, freed by an optimizer step
  kStackPhase,          // older than the trace: the category its stack's phase implies
  kNoEvidence,          // unknown
  kUserCategory,        // a user category: a frame of the allocation's stack matches its regex
  /// gradient: no stack, alive through the trace, whose optimizer step reads gradients the trace
  /// never made (docs/attribution.md, "Blocks from before the trace")
  kPreTraceGradient,
  /// optimizer_state: no stack, alive through the trace, whose optimizer step makes no state
  kPreTraceOptimizerState,
  kKvCacheFrame,        // kv_cache: a frame of KV cache code made it
  kAutocastCleared,     // autocast_cache: autocast's cast, freed when autocast's cache is cleared
  kAutocastWeightSize,  // autocast_cache: autocast's cast of a parameter's size, kept past its run
  kInitState,           // state: a plain __init__'s *_like or comprehension result, kept
};
inline constexpr int kNumCategoryRules = 27;
std::string_view CategoryRuleName(CategoryRule r);  // "accumulate_grad", "backward_kept", ...
/// The row of memory older than the trace that a rule of the trace's own evidence decided
/// (kPreTraceGradient: kBeforeRecordingGradientRow, kPreTraceOptimizerState:
/// kBeforeRecordingOptimizerRow); empty for every other rule (the row is then NoStackRow's).
/// Every grouping that names rows of memory from before the trace asks it first.
std::string_view PreTraceEvidenceRow(CategoryRule rule);

struct CategoryVerdict {
  Category category = Category::kUnknown;
  CategoryRule rule = CategoryRule::kNoEvidence;
};

/// The category a stack implies on its own, without the device's phase runs: an AccumulateGrad or
/// backward stack is a gradient, an optimizer step's optimizer state, module init's a parameter, a
/// forward pass's an activation, the data loader's an input (CategoryRule::kStackPhase); else
/// unknown. What LifetimeCategorizer says of memory older than the trace that has a stack, and
/// what SiteNamer says where no timeline is at hand.
CategoryVerdict StackPhaseCategory(const SiteInfo& site);

/// Categories of one device's lifetimes. Keeps the device's phase runs discovered so far (runs of
/// consecutive allocations whose stacks show the same phase; events with no phase do not break a
/// run), so a question about one lifetime reads only the events around it. Not thread-safe.

class LifetimeCategorizer {
 public:
  LifetimeCategorizer(Attribution& attribution, const DeviceTimeline& dt);
  ~LifetimeCategorizer();
  LifetimeCategorizer(const LifetimeCategorizer&) = delete;
  LifetimeCategorizer& operator=(const LifetimeCategorizer&) = delete;

  CategoryVerdict Categorize(const BlockLifetime& lifetime);
  /// The step phase a lifetime was allocated in: its stack's (StepPhaseOf), and for an allocation
  /// without a stack inside a backward run, backward (the engine's, as Categorize reads it).
  /// nullopt for memory allocated before the trace (pre-window and ghost lifetimes). Decided here
  /// once for every command, like the category.
  std::optional<StepPhase> PhaseOf(const BlockLifetime& lifetime);
  /// The step phase the program is in at device event `e`: that of the phase run holding it
  /// (StepPhaseOf); kOther before the first run.
  StepPhase PhaseAtEvent(uint32_t e);
  /// Whether the device's trace shows a model running (a forward, backward or optimizer
  /// allocation); what makes memory older than the trace a parameter (kPreTracePersistent).
  bool ModelRan();

 private:
  struct Runs;
  /// What the trace shows of memory older than it (attribution_pre_trace.cpp), found on the first
  /// question about such memory.
  struct PreTrace;
  std::optional<CategoryVerdict> PreTraceVerdict(const BlockLifetime& lifetime);
  Attribution& attr_;
  const DeviceTimeline& dt_;
  std::unique_ptr<Runs> runs_;
  std::unique_ptr<PreTrace> pre_trace_;
};

/// Categorizers for the devices of one timeline, made on first use.
class Categorizers {
 public:
  explicit Categorizers(Attribution& attribution) : attr_(attribution) {}
  LifetimeCategorizer& For(const DeviceTimeline& dt);

 private:
  Attribution& attr_;
  std::map<const DeviceTimeline*, std::unique_ptr<LifetimeCategorizer>> by_device_;
  const DeviceTimeline* last_device_ = nullptr;  // the device asked about last, and its categorizer
  LifetimeCategorizer* last_ = nullptr;
};

}  // namespace memsnap::analysis
