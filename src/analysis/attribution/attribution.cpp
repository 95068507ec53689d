// Sites: the per-stack part of attribution (which frame owns an allocation, what it called, which
// phase of the program it is in) and the labels that keep a table's rows apart.
#include "memsnap/analysis/attribution/attribution.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <tuple>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "analysis/attribution/frames_internal.h"
#include "memsnap/util/strings.h"

namespace memsnap::analysis {

namespace {

constexpr std::array<std::string_view, kNumCategories> kCategoryNames = {
    "parameter", "gradient", "optimizer_state", "activation", "temporary",
    "input",     "kv_cache", "autocast_cache",  "state",      "unknown"};

constexpr std::array<std::string_view, 7> kPhaseNames = {"none", "forward", "backward", "optimizer",
                                                         "init", "data",    "other"};

bool Has(std::string_view s, std::string_view part) {
  return s.find(part) != std::string_view::npos;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Library functions whose name says nothing about what was computed.
bool IsGenericFunction(std::string_view name) {
  // `_use_grad` and `maybe_fallback` are torch.optim's decorators around every optimizer's step
  // (optimizer.py's _use_grad_for_differentiable, _disable_dynamo_if_unsupported).
  static constexpr std::array<std::string_view, 23> kGeneric = {"forward",
                                                                "__call__",
                                                                "_call_impl",
                                                                "_wrapped_call_impl",
                                                                "wrapper",
                                                                "wrapped",
                                                                "inner",
                                                                "apply",
                                                                "run",
                                                                "<module>",
                                                                "<lambda>",
                                                                "decorate_context",
                                                                "_fn",
                                                                "fn",
                                                                "f",
                                                                "convert",
                                                                "_forward",
                                                                "call",
                                                                "runtime_wrapper",
                                                                "call_func_at_runtime_with_args",
                                                                "compile_wrapper",
                                                                "_use_grad",
                                                                "maybe_fallback"};
  return std::find(kGeneric.begin(), kGeneric.end(), name) != kGeneric.end();
}

// What torch.compile runs: Dynamo/AOTAutograd/Inductor's own files and the code Inductor writes.
bool IsCompiledCode(std::string_view file) {
  return Has(file, "torchinductor_") || Has(file, "torch/_inductor/") ||
         Has(file, "torch/_dynamo/") || Has(file, "torch/_functorch/") ||
         file.starts_with("<eval_with_key");
}

// Operators that only make the output tensor: the library function that called them says more.
bool IsFactoryOp(std::string_view op) {
  static constexpr std::array<std::string_view, 14> kFactories = {
      "empty",     "empty_strided", "empty_like", "zeros",     "zeros_like",        "ones",
      "ones_like", "full",          "new_empty",  "new_zeros", "new_empty_strided", "new_full",
      "clone",     "contiguous"};
  return std::find(kFactories.begin(), kFactories.end(), op) != kFactories.end();
}

// Host-to-device copies: outside a forward pass, what brings a batch to the GPU.
bool IsCopyOp(std::string_view op) {
  static constexpr std::array<std::string_view, 8> kCopies = {
      "to",         "_to_copy",   "copy_", "cuda", "_copy_from", "_copy_from_and_resize",
      "pin_memory", "_pin_memory"};
  return std::find(kCopies.begin(), kCopies.end(), op) != kCopies.end();
}

bool IsOptimizerOp(std::string_view op) {
  return op.starts_with("_fused_adam") || op.starts_with("_fused_sgd") ||
         op.starts_with("_foreach_");
}

// nn.Module's call plumbing: the same in every module call, never what tells two sites apart.
bool IsModulePlumbing(std::string_view file, std::string_view name) {
  return file.ends_with("torch/nn/modules/module.py") &&
         (name == "_call_impl" || name == "_wrapped_call_impl" || name == "__call__");
}

bool IsComprehension(std::string_view name) {
  return name == "<listcomp>" || name == "<dictcomp>" || name == "<setcomp>" || name == "<genexpr>";
}

// A Python frame of KV cache code (docs/attribution.md, rule kv_cache_frame): any function of
// transformers' cache_utils.py (DynamicCache.update's torch.cat, a static cache's
// lazy_initialization), vLLM's cache engine, a function whose name says KV cache or
// past_key_values (vLLM's _allocate_kv_cache, initialize_kv_cache), and, as the innermost Python
// frame only, code in a file whose name says so (a script named for its KV cache runs everything
// else too).
// kKvAnywhere: the frame says so wherever it is; kKvInnermost: only as the innermost Python frame.
constexpr uint8_t kKvAnywhere = 1, kKvInnermost = 2;
uint8_t KvCacheFrame(std::string_view raw_file, std::string_view name) {
  const std::string file = Lower(raw_file);
  const std::string_view base = std::string_view(file).substr(file.rfind('/') + 1);
  if (base == "cache_utils.py" && Has(file, "transformers/")) return kKvAnywhere;
  if (Has(file, "vllm/") && Has(base, "cache_engine")) return kKvAnywhere;
  auto says = [](std::string_view text) {
    return Has(text, "kv_cache") || Has(text, "kvcache") || Has(text, "past_key_value") ||
           Has(text, "key_value_cache");
  };
  if (says(Lower(name))) return kKvAnywhere;
  return name != "<module>" && says(base) ? kKvInnermost : 0;
}

// A Python frame that clears autocast's cache: the outermost autocast region exiting
// (torch/amp/autocast_mode.py `__exit__` calls torch.clear_autocast_cache()).
bool IsAutocastClearFrame(std::string_view file, std::string_view name) {
  return name == "clear_autocast_cache" ||
         (file.ends_with("amp/autocast_mode.py") && name == "__exit__");
}

enum class Marker : uint8_t {
  kNone,
  kBackward,
  kOptimizer,
  kStrongInit,
  kForward,
  kWeakInit,
  kData
};

// What one Python frame says about the phase of the program (docs/attribution.md, "Phases").
Marker PythonMarker(std::string_view file, std::string_view name) {
  if ((file.ends_with("torch/autograd/__init__.py") &&
       (name == "backward" || name == "grad" || name == "_make_grads")) ||
      file.ends_with("torch/autograd/graph.py") ||
      (file.ends_with("torch/_tensor.py") && name == "backward") ||
      (Has(file, "_aot_autograd/") && name == "backward")) {
    return Marker::kBackward;
  }
  std::string lower = Lower(file);
  // An optimizer's own file (its name says optim: optimizers.py, my_optim.py): its constructor
  // and the comprehensions in it make the state, one tensor per parameter, and its methods do the
  // update's arithmetic. None of it is module init or the training loop's code.
  const std::string_view base = std::string_view(lower).substr(lower.rfind('/') + 1);
  const bool optimizer_file = Has(base, "optim") && base.ends_with(".py");
  const bool comprehension = IsComprehension(name);
  if (optimizer_file && (name == "__init__" || comprehension)) return Marker::kOptimizer;
  if (Has(file, "torch/optim/") || name == "zero_grad" ||
      file.ends_with("torch/nn/utils/clip_grad.py") ||
      (Has(lower, "optim") &&
       (name == "step" || name == "_init_group" || name.starts_with("_single_tensor") ||
        name.starts_with("_multi_tensor") || name.starts_with("_fused")))) {
    return Marker::kOptimizer;
  }
  if (file.ends_with("torch/nn/modules/module.py")) {
    static constexpr std::array<std::string_view, 15> kModuleInit = {"to",
                                                                     "_apply",
                                                                     "cuda",
                                                                     "half",
                                                                     "float",
                                                                     "double",
                                                                     "bfloat16",
                                                                     "type",
                                                                     "to_empty",
                                                                     "load_state_dict",
                                                                     "_load_from_state_dict",
                                                                     "register_parameter",
                                                                     "register_buffer",
                                                                     "convert",
                                                                     "xpu"};
    if (std::find(kModuleInit.begin(), kModuleInit.end(), name) != kModuleInit.end()) {
      return Marker::kStrongInit;
    }
  }
  if ((Has(file, "torch/nn/modules/") && (name == "__init__" || Has(name, "reset_parameters"))) ||
      file.ends_with("torch/nn/init.py") || file.ends_with("torch/nn/parameter.py") ||
      file.ends_with("torch/serialization.py") || Has(file, "safetensors/") ||
      file.ends_with("transformers/modeling_utils.py") || Has(file, "accelerate/") ||
      name == "from_pretrained" || name == "load_state_dict" || name == "load_checkpoint") {
    return Marker::kStrongInit;
  }
  if (name == "forward" || name == "_call_impl" || name == "_wrapped_call_impl" ||
      (file.ends_with("torch/nn/modules/module.py") && name == "__call__") ||
      Has(file, "torch/_dynamo/") || Has(file, "torch/_inductor/") ||
      Has(file, "torch/_functorch/") || file.ends_with("torch/utils/checkpoint.py")) {
    return Marker::kForward;
  }
  if (Has(file, "torch/utils/data/") || name == "pin_memory") return Marker::kData;
  if (name == "__init__") return Marker::kWeakInit;
  return Marker::kNone;
}

}  // namespace

namespace {

bool IsCategoryNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-' || c == '.';
}

}  // namespace

CategoryNames::CategoryNames(UserCategories user)
    : user_(user.empty() ? nullptr : std::make_shared<const UserCategories>(std::move(user))) {}

const UserCategories& CategoryNames::user() const {
  static const UserCategories* const kNone = new UserCategories();
  return user_ != nullptr ? *user_ : *kNone;
}

int CategoryNames::size() const {
  return kNumCategories +
         static_cast<int>(std::min<size_t>(user().size(), static_cast<size_t>(kMaxUserCategories)));
}

absl::StatusOr<UserCategory> ParseUserCategory(std::string_view text) {
  const size_t eq = text.find('=');
  if (eq == std::string_view::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", Sv(text), "': expected NAME=REGEX, e.g. lora=peft/tuners"));
  }
  UserCategory c;
  c.name = std::string(text.substr(0, eq));
  c.pattern = std::string(text.substr(eq + 1));
  if (c.name.empty() || !std::all_of(c.name.begin(), c.name.end(), IsCategoryNameChar)) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", c.name, "': a category name is letters, digits, '_', '-' and '.'"));
  }
  for (std::string_view n : kCategoryNames) {
    if (n == c.name) {
      return absl::InvalidArgumentError(
          absl::StrCat("'", c.name, "' is a built-in category; give yours another name"));
    }
  }
  if (c.pattern.empty()) {
    return absl::InvalidArgumentError("the regex is empty");
  }
  try {
    c.regex = std::regex(c.pattern, std::regex::ECMAScript | std::regex::optimize);
  } catch (const std::regex_error& e) {
    return absl::InvalidArgumentError(absl::StrCat("invalid regex '", c.pattern, "': ", e.what()));
  }
  return c;
}

absl::Status AddUserCategory(UserCategories& list, UserCategory category) {
  for (const UserCategory& c : list) {
    if (c.name == category.name) {
      return absl::InvalidArgumentError(
          absl::StrCat("category ", category.name, " is given twice"));
    }
  }
  if (list.size() >= static_cast<size_t>(kMaxUserCategories)) {
    return absl::InvalidArgumentError(absl::StrCat("category ", category.name, ": at most ",
                                                   kMaxUserCategories, " categories of your own"));
  }
  list.push_back(std::move(category));
  return absl::OkStatus();
}

std::string_view CategoryNames::Name(Category c) const {
  const auto i = static_cast<size_t>(c);
  if (i < kCategoryNames.size()) return kCategoryNames[i];
  if (i < static_cast<size_t>(size())) return user()[i - kCategoryNames.size()].name;
  return "unknown";
}

absl::StatusOr<Category> CategoryNames::Parse(std::string_view text) const {
  for (int i = 0; i < size(); ++i) {
    if (Name(static_cast<Category>(i)) == text) return static_cast<Category>(i);
  }
  std::string names;
  for (int i = 0; i < size(); ++i)
    absl::StrAppend(&names, names.empty() ? "" : ", ", Sv(Name(static_cast<Category>(i))));
  return absl::InvalidArgumentError(
      absl::StrCat("category ", Sv(text), ": expected one of ", names));
}

Category DominantCategory(const CategoryBytes& bytes) {
  int best = static_cast<int>(Category::kUnknown);
  int64_t most = 0;
  for (int c = 0; c < kMaxCategories; ++c) {
    if (bytes[c] > most) {
      most = bytes[c];
      best = c;
    }
  }
  return static_cast<Category>(best);
}

std::string_view PhaseName(Phase p) { return kPhaseNames[static_cast<size_t>(p)]; }

namespace {

constexpr size_t kForwardLinesShown = 3;

}  // namespace

std::string SiteInfo::ForwardClause(bool bracket) const {
  if (forward_lines.empty()) return "";
  std::string out = bracket ? " [for " : " for ";
  if (forward_lines.size() > 1) {
    absl::StrAppend(&out, "one of ", forward_lines.size(), " forward lines: ");
  }
  // "path:line function": a line in the file of the one before it shows as ":line function"
  // (the lines are in file and line order), as compilers list several lines of one file.
  auto file_of = [](std::string_view text) {
    const FrameTextParts p = SplitFrameText(text);
    return p.line >= 0 ? p.file : std::string_view();
  };
  for (size_t i = 0; i < forward_lines.size() && i < kForwardLinesShown; ++i) {
    std::string_view text = forward_lines[i];
    const std::string_view file = file_of(text);
    if (i > 0 && !file.empty() && file == file_of(forward_lines[i - 1])) {
      text.remove_prefix(file.size());
    }
    absl::StrAppend(&out, i ? ", " : "", Sv(text));
  }
  if (forward_lines.size() > kForwardLinesShown) absl::StrAppend(&out, ", \u2026");
  if (bracket) absl::StrAppend(&out, "]");
  return out;
}

std::string SiteInfo::BaseLabel() const {
  // A model library's layer: the user's frame that ran the model too ("Model libraries").
  return absl::StrCat(what.empty() ? owner : absl::StrCat(what, Sv(kLabelArrow), owner),
                      ForwardClause(false),
                      model_owned ? absl::StrCat(Sv(kLabelArrow), callers[0]) : std::string());
}

// ---------------------------------------------------------------------------------------------
// Labels

namespace {

struct Entry {
  const SiteInfo* site;
  std::string label;         // SiteLabel::text
  std::string head;          // SiteLabel::head
  std::vector<size_t> deep;  // SiteLabel::deep
  size_t next_caller = 0;    // the caller after the last one in `label`
  bool nearest_in_head = false;
  // Appends to both the one-line label and the head.
  void Append(std::string_view text) {
    absl::StrAppend(&label, Sv(text));
    absl::StrAppend(&head, Sv(text));
  }
  // Adds caller `j`: to the head when it is the nearest, else under the row; " ← …" in the
  // one-line label where callers are left out.
  void AddCaller(size_t j) {
    if (j > next_caller) absl::StrAppend(&label, Sv(kLabelArrow), "\u2026");
    absl::StrAppend(&label, Sv(kLabelArrow), site->callers[j]);
    if (j == 0) {
      absl::StrAppend(&head, Sv(kLabelArrow), site->callers[j]);
      nearest_in_head = true;
    } else {
      deep.push_back(j);
    }
    next_caller = j + 1;
  }
};

// Entries (indices) whose labels are equal but whose keys are not all equal get, in turn, the
// nearest caller that tells them apart, from depth `depth` outward.
void Refine(std::vector<Entry>& entries, std::vector<size_t> members, size_t depth) {
  std::set<std::string_view> keys;
  for (size_t m : members) keys.insert(entries[m].site->key);
  if (keys.size() < 2) return;
  size_t longest = 0;
  for (size_t m : members) longest = std::max(longest, entries[m].site->callers.size());
  auto caller = [&](size_t m, size_t j) -> std::string_view {
    const auto& c = entries[m].site->callers;
    return j < c.size() ? std::string_view(c[j]) : std::string_view();
  };
  for (size_t j = depth; j < longest; ++j) {
    std::set<std::string_view> values;
    for (size_t m : members) values.insert(caller(m, j));
    if (values.size() < 2) continue;
    std::map<std::string, std::vector<size_t>> parts;
    for (size_t m : members) {
      if (!caller(m, j).empty()) entries[m].AddCaller(j);
      parts[entries[m].label].push_back(m);
    }
    for (auto& [label, part] : parts) Refine(entries, std::move(part), j + 1);
    return;
  }
  // Same callers: a frame inside the owner may ("step ← train.py:25 train [via adam.py:95 ...]").
  size_t deepest = 0;
  for (size_t m : members) deepest = std::max(deepest, entries[m].site->inner.size());
  auto inner = [&](size_t m, size_t j) -> std::string_view {
    const auto& c = entries[m].site->inner;
    return j < c.size() ? std::string_view(c[j]) : std::string_view();
  };
  for (size_t j = 0; j < deepest; ++j) {
    std::set<std::string_view> values;
    for (size_t m : members) values.insert(inner(m, j));
    if (values.size() < 2) continue;
    std::map<std::string, std::vector<size_t>> parts;
    for (size_t m : members) {
      if (!inner(m, j).empty()) entries[m].Append(absl::StrCat(" [via ", Sv(inner(m, j)), "]"));
      parts[entries[m].label].push_back(m);
    }
    for (auto& [label, part] : parts) Refine(entries, std::move(part), longest);
    return;
  }
  // Same Python frames: the operator tells them apart ("sqrt ← optimizers.py:100 step").
  std::set<std::string_view> ops;
  for (size_t m : members) ops.insert(entries[m].site->op);
  if (ops.size() < 2) return;
  for (size_t m : members) {
    const SiteInfo& s = *entries[m].site;
    if (s.op.empty()) continue;
    if (s.what.empty() && s.kind == SiteKind::kPython) {
      entries[m].label = absl::StrCat(s.op, Sv(kLabelArrow), entries[m].label);
      entries[m].head = absl::StrCat(s.op, Sv(kLabelArrow), entries[m].head);
    } else {
      entries[m].Append(absl::StrCat(" [", s.op, "]"));
    }
  }
}

}  // namespace

std::string DistinctLabelStart(const SiteInfo& s) {
  std::string label = s.what.empty() ? s.owner : absl::StrCat(s.what, Sv(kLabelArrow), s.owner);
  // A model library's layer: the one-line label names the user's frame that ran the model too,
  // as BaseLabel does (a text table shows it under the row).
  if (s.model_owned) absl::StrAppend(&label, Sv(kLabelArrow), s.callers[0]);
  return label;
}

std::vector<SiteLabel> DistinctSiteLabels(const std::vector<const SiteInfo*>& sites) {
  std::vector<Entry> entries;
  entries.reserve(sites.size());
  // Labels are told apart without a backward site's forward lines (they follow from its node, so
  // they never tell two sites of one file apart); the clause goes in after the owner at the end.
  for (const SiteInfo* s : sites) {
    Entry& e = entries.emplace_back();
    e.site = s;
    e.head = s->what.empty() ? s->owner : absl::StrCat(s->what, Sv(kLabelArrow), s->owner);
    e.label = DistinctLabelStart(*s);
    if (s->model_owned) e.next_caller = 1;
  }
  const size_t n_entries = entries.size();
  std::vector<size_t> clause_at(n_entries);
  for (size_t i = 0; i < n_entries; ++i) clause_at[i] = entries[i].label.size();
  std::map<std::string, std::vector<size_t>> by_label;
  for (size_t i = 0; i < entries.size(); ++i) by_label[entries[i].label].push_back(i);
  for (auto& [label, members] : by_label) Refine(entries, members, 0);
  // Whatever still collides (identical Python frames and operator, different native frames, or a
  // refined label equal to another site's): number them in key order.
  std::map<std::string, std::vector<size_t>> final_labels;
  for (size_t i = 0; i < entries.size(); ++i) final_labels[entries[i].label].push_back(i);
  for (auto& [label, members] : final_labels) {
    std::map<std::string_view, std::vector<size_t>> by_key;
    for (size_t m : members) by_key[entries[m].site->key].push_back(m);
    if (by_key.size() < 2) continue;
    int n = 0;
    for (auto& [key, same] : by_key) {
      ++n;
      if (n == 1) continue;
      for (size_t m : same) entries[m].Append(absl::StrCat(" #", n));
    }
  }
  for (size_t i = 0; i < n_entries; ++i) {
    Entry& e = entries[i];
    if (e.site->forward_lines.empty()) continue;
    // In brackets when the label goes on (" ← train.py:30 step"), which would otherwise read as
    // the last forward line's caller.
    e.label.insert(clause_at[i], e.site->ForwardClause(e.label.size() > clause_at[i]));
    e.head.insert(clause_at[i], e.site->ForwardClause(e.head.size() > clause_at[i]));
  }
  std::vector<SiteLabel> out;
  out.reserve(entries.size());
  for (Entry& e : entries) {
    out.push_back({std::move(e.label), std::move(e.head), std::move(e.deep), e.nearest_in_head});
  }
  return out;
}

std::vector<std::string> DistinctLabels(const std::vector<const SiteInfo*>& sites) {
  std::vector<std::string> out;
  out.reserve(sites.size());
  for (SiteLabel& l : DistinctSiteLabels(sites)) out.push_back(std::move(l.text));
  return out;
}

std::vector<CallerLine> CallerLines(const SiteInfo& site, const SiteLabel& label, size_t context,
                                    size_t* more) {
  const std::vector<std::string>& callers = site.callers;
  const size_t first = label.nearest_in_head ? 1 : 0;
  size_t last = first + context;  // one past the last shown
  if (!label.deep.empty()) last = std::max(last, label.deep.back() + 1);
  last = std::min(last, callers.size());
  std::vector<CallerLine> out;
  for (size_t j = first; j < last; ++j) {
    const bool tells = std::binary_search(label.deep.begin(), label.deep.end(), j);
    out.push_back({callers[j], tells});
  }
  if (more != nullptr) *more = callers.size() - std::max(last, first);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Attribution

struct Attribution::StackFacts {
  std::vector<size_t> python;  // indices of Python frames that may name the site, innermost first
  size_t first_python = SIZE_MAX;  // innermost Python frame of any kind
  size_t node_at = SIZE_MAX;       // innermost autograd node
  std::string node;
  bool engine = false;
  bool accumulate_grad = false;
  bool zero_grad = false;
  bool kv_cache = false;
  bool autocast_cast = false;
  bool autocast_clear = false;
  size_t comprehension_at = SIZE_MAX;  // innermost comprehension frame (<listcomp>, <genexpr>...)
  size_t init_at = SIZE_MAX;           // innermost `__init__` frame
  std::string op_inner_to_python;      // outermost operator inside the innermost Python frame
  std::string op_inner_to_node;        // outermost operator inside the node
  std::vector<size_t> native;          // kNative frames, innermost first
  bool machinery_only = true;
};

Attribution::Attribution(const Snapshot& snapshot, FrameFilter* filter, AttributionOptions options)
    : snap_(snapshot), filter_(filter), options_(options) {
  frame_class_.assign(snapshot.frames.size(), 0);
  marker_.assign(snapshot.frames.size(), 0);
  kv_frame_.assign(snapshot.frames.size(), 0);
  python_.resize(snapshot.frames.size());
  site_slot_.assign(snapshot.stacks.size(), -1);
  phase_.assign(snapshot.stacks.size(), 0);
  no_stack_.kind = SiteKind::kNoStack;
  no_stack_.key = std::string(kNoStackRow);
  no_stack_.owner = std::string(kNoStackRow);
}

FrameClass Attribution::ClassOf(FrameId frame) {
  uint8_t& c = frame_class_[frame.v];
  if (c == 0) {
    const Frame& f = snap_.frames.Get(frame);
    c = static_cast<uint8_t>(
            ClassifyFrame(snap_.strings.Get(f.name), snap_.strings.Get(f.filename))) +
        1;
  }
  return static_cast<FrameClass>(c - 1);
}

const Attribution::FileFacts& Attribution::File(StrId filename) {
  auto [it, inserted] = files_.try_emplace(filename.v);
  if (inserted) {
    std::string_view raw = snap_.strings.Get(filename);
    it->second.normal = NormalPath(raw);
    it->second.library = IsLibraryPath(raw);
    it->second.compiled = IsCompiledCode(it->second.normal);
    it->second.model = IsModelLibraryPath(it->second.normal);
  }
  return it->second;
}

std::span<const uint32_t> Attribution::SegmentsOf(int32_t device) {
  if (!segments_by_device_) segments_by_device_.emplace(snap_);
  return segments_by_device_->Of(device);
}

const std::string& Attribution::user_prefix() {
  if (user_prefix_done_) return user_prefix_;
  user_prefix_done_ = true;
  // The first and last of the files in sorted order bound the common prefix of all: only they
  // are kept, and the files' facts are not cached here (a trace whose every frame has a file of
  // its own, issue 54, would keep 500,000 of them for the few stacks a command names).
  std::optional<std::string> first, last;
  bool one_file = true;
  absl::flat_hash_map<uint32_t, bool> seen;
  for (size_t i = 0; i < snap_.frames.size(); ++i) {
    StrId name = snap_.frames.Get(FrameId(static_cast<uint32_t>(i))).filename;
    if (!seen.try_emplace(name.v, true).second) continue;
    std::string_view raw = snap_.strings.Get(name);
    if (!raw.ends_with(".py")) continue;
    auto cached = files_.find(name.v);
    std::string normal = cached != files_.end() ? cached->second.normal : NormalPath(raw);
    const bool library = cached != files_.end() ? cached->second.library : IsLibraryPath(raw);
    // A notebook's cells sit in a temporary folder and are named as cells, not by path.
    if (library || !NotebookCellName(normal).empty() || normal.find('/') == std::string::npos) {
      continue;
    }
    if (first && (normal != *first || normal != *last)) one_file = false;
    if (!first || normal < *first) first = normal;
    if (!last || normal > *last) last = std::move(normal);
  }
  if (!first) return user_prefix_;
  const std::string& a = *first;
  const std::string& b = *last;
  size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
  size_t slash = a.rfind('/', n == 0 ? 0 : n - 1);
  if (n == a.size() && one_file) slash = a.rfind('/');
  if (slash == std::string::npos || slash == 0) return user_prefix_;
  user_prefix_ = a.substr(0, slash + 1);
  return user_prefix_;
}

const Attribution::PythonFacts& Attribution::Python(FrameId frame) {
  PythonFacts& p = python_[frame.v];
  if (!p.done) {
    p.done = true;
    const Frame& f = snap_.frames.Get(frame);
    const FileFacts& file = File(f.filename);
    std::string path = NotebookCellName(file.normal);
    if (path.empty()) path = ShortPath(file.normal, user_prefix());
    std::string_view name = snap_.strings.Get(f.name);
    p.text = f.line == kUnknownLine ? absl::StrCat(path, " ", Sv(name))
                                    : absl::StrCat(path, ":", f.line, " ", Sv(name));
    p.key = options_.ignore_lines || f.line == kUnknownLine
                ? absl::StrCat(path, ":", Sv(name))
                : absl::StrCat(path, ":", f.line, ":", Sv(name));
    p.marker = MarkerOf(frame);
  }
  return p;
}

uint8_t Attribution::MarkerOf(FrameId frame) {
  uint8_t& m = marker_[frame.v];
  if (m == 0) {
    const Frame& f = snap_.frames.Get(frame);
    // The file's normal path without caching its facts: the phases read every stack's frames,
    // and a trace whose every frame has a file of its own (issue 54) names few of them.
    auto cached = files_.find(f.filename.v);
    const std::string normal =
        cached != files_.end() ? cached->second.normal : NormalPath(snap_.strings.Get(f.filename));
    m = static_cast<uint8_t>(PythonMarker(normal, snap_.strings.Get(f.name))) + 1;
  }
  return static_cast<uint8_t>(m - 1);
}

std::string Attribution::PythonFrameText(FrameId frame) { return Python(frame).text; }

Attribution::StackFacts Attribution::Facts(std::span<const FrameId> frames) {
  StackFacts facts;
  std::string last_op;  // outermost operator seen so far (frames go outward)
  for (size_t i = 0; i < frames.size(); ++i) {
    FrameClass c = ClassOf(frames[i]);
    const Frame& f = snap_.frames.Get(frames[i]);
    std::string_view name = snap_.strings.Get(f.name);
    if (!IsMachinery(c)) facts.machinery_only = false;
    if (Has(name, "AccumulateGrad")) facts.accumulate_grad = true;
    if (name.starts_with("at::autocast::cached_cast(")) facts.autocast_cast = true;
    if (name.starts_with("at::autocast::clear_cache(")) facts.autocast_clear = true;
    switch (c) {
      case FrameClass::kPython: {
        const bool innermost = facts.first_python == SIZE_MAX;
        if (innermost) {
          facts.first_python = i;
          facts.op_inner_to_python = last_op;
        }
        if (name == "zero_grad") facts.zero_grad = true;
        const std::string_view file = snap_.strings.Get(f.filename);
        uint8_t& kv = kv_frame_[frames[i].v];
        if (kv == 0) kv = static_cast<uint8_t>(KvCacheFrame(file, name) | 4);  // 4: computed
        if ((kv & kKvAnywhere) != 0 || (innermost && (kv & kKvInnermost) != 0)) {
          facts.kv_cache = true;
        }
        if (IsAutocastClearFrame(file, name)) facts.autocast_clear = true;
        if (facts.init_at == SIZE_MAX) {
          if (name == "__init__") facts.init_at = i;
          if (IsComprehension(name) && facts.comprehension_at == SIZE_MAX) {
            facts.comprehension_at = i;
          }
        }
        if (filter_ == nullptr || !filter_->has_regexes() || filter_->KeepByRegex(frames[i])) {
          facts.python.push_back(i);
        }
        break;
      }
      case FrameClass::kNode:
        if (facts.node_at == SIZE_MAX) {
          facts.node_at = i;
          facts.node = NodeName(name);
          facts.op_inner_to_node = last_op;
        }
        break;
      case FrameClass::kOp:
        if (facts.first_python == SIZE_MAX) last_op = OpName(name);
        break;
      case FrameClass::kEngine:
        facts.engine = true;
        break;
      case FrameClass::kNative:
        facts.native.push_back(i);
        break;
      default:
        break;
    }
  }
  if (facts.first_python == SIZE_MAX) facts.op_inner_to_python = last_op;
  return facts;
}

Phase Attribution::PhaseOf(StackId stack) {
  if (!stack.valid() || stack.v >= phase_.size()) return Phase::kNone;
  uint8_t& p = phase_[stack.v];
  if (p == 0) {
    // Site(stack).phase, without naming the site: the categories ask every stack of the trace
    // for its phase, and building every site's texts cost a trace of 500,000 distinct stacks
    // (issue 54) most of its time and memory.
    std::span<const FrameId> frames = snap_.stacks.Get(stack);
    const Phase phase = frames.empty() || site_slot_[stack.v] >= 0
                            ? Site(stack).phase
                            : PhaseFrom(frames, Facts(frames));
    p = static_cast<uint8_t>(phase) + 1;
  }
  return static_cast<Phase>(p - 1);
}

const SiteInfo& Attribution::Site(StackId stack) {
  if (!stack.valid() || stack.v >= site_slot_.size() || snap_.stacks.Get(stack).empty()) {
    return no_stack_;
  }
  int32_t& slot = site_slot_[stack.v];
  if (slot < 0) {
    SiteInfo site = Build(stack);
    site.user_category = UserCategoryOf(stack);
    slot = static_cast<int32_t>(sites_.size());
    sites_.push_back(std::move(site));
  }
  return sites_[slot];
}

int Attribution::UserCategoryOf(StackId stack) {
  const UserCategories& user = options_.categories.user();
  if (user.empty()) return -1;
  if (user_frame_.empty()) user_frame_.assign(snap_.frames.size(), -1);
  int best = -1;
  for (FrameId f : snap_.stacks.Get(stack)) {
    if (!f.valid() || f.v >= user_frame_.size()) continue;
    int8_t& memo = user_frame_[f.v];
    if (memo < 0) {
      // Once per distinct frame: the first category (in the order given) whose regex finds it.
      memo = 0;
      const std::string text = snap_.FrameText(f);
      for (size_t i = 0; i < user.size() && i < static_cast<size_t>(kMaxUserCategories); ++i) {
        if (std::regex_search(text, user[i].regex)) {
          memo = static_cast<int8_t>(i + 1);
          break;
        }
      }
    }
    if (memo > 0 && (best < 0 || memo - 1 < best)) best = memo - 1;
  }
  return best;
}

const std::vector<std::string>& Attribution::ForwardLines(const std::string& base) {
  static const std::vector<std::string> kNone;
  if (!forward_lines_done_) {
    forward_lines_done_ = true;
    // Every forward stack that shows an operator's autograd kernel (VariableType_*.cpp) inside
    // its innermost Python frame: that line called the operator with autograd on, which records
    // the operator's node (when an input requires grad). Stacks that run in backward (a node or
    // the engine anywhere in them: a backward formula calls operators through the same kernels)
    // and stacks of phases that run without grad (the optimizer step, module init, data
    // loading) are not evidence.
    absl::flat_hash_map<std::string, std::set<std::string>> lines;
    for (uint32_t i = 0; i < snap_.stacks.size(); ++i) {
      const StackId id(i);
      std::span<const FrameId> frames = snap_.stacks.Get(id);
      std::string op;
      bool python = false, backward = false;
      for (FrameId f : frames) {
        const FrameClass c = ClassOf(f);
        if (c == FrameClass::kNode || c == FrameClass::kEngine) {
          backward = true;
          break;
        }
        if (c == FrameClass::kPython) python = true;
        if (!python && op.empty() && c == FrameClass::kDispatcher) {
          op = AutogradWrapperOp(snap_.strings.Get(snap_.frames.Get(f).name));
        }
      }
      if (backward || !python || op.empty()) continue;
      const Phase phase = PhaseOf(id);
      if (phase != Phase::kForward && phase != Phase::kOther) continue;
      const SiteInfo& site = Site(id);
      if (site.kind != SiteKind::kPython) continue;
      std::string base = NodeBaseOfOp(op);
      lines[base].insert(site.owner);
      kernel_base_.emplace(i, std::move(base));
    }
    // In file and line order ("model.py:22" before "model.py:147"), as a person reads them.
    auto parts = [](std::string_view text) {
      const FrameTextParts p = SplitFrameText(text);
      return std::make_tuple(p.file, p.line, text);
    };
    for (auto& [node_base, owners] : lines) {
      std::vector<std::string>& out = forward_lines_[node_base];
      out.assign(owners.begin(), owners.end());
      std::sort(out.begin(), out.end(),
                [&](const std::string& a, const std::string& b) { return parts(a) < parts(b); });
    }
  }
  auto it = forward_lines_.find(base);
  return it == forward_lines_.end() ? kNone : it->second;
}

const std::string* Attribution::ForwardKernelBase(StackId stack) {
  ForwardLines("");  // indexes the forward stacks on first use
  auto it = kernel_base_.find(stack.v);
  return it == kernel_base_.end() ? nullptr : &it->second;
}

Phase Attribution::PhaseFrom(std::span<const FrameId> frames, const StackFacts& facts) {
  // Backward first (the engine runs forward code again under checkpointing), then the optimizer,
  // then the innermost of the Python frames' markers.
  if (facts.accumulate_grad || facts.node_at != SIZE_MAX || facts.engine) return Phase::kBackward;
  if (facts.first_python == SIZE_MAX) {
    return IsOptimizerOp(facts.op_inner_to_python) ? Phase::kOptimizer : Phase::kOther;
  }
  // The innermost telling frame decides: a forward pass run by an optimizer's closure
  // (optimizer.step(closure), as Lightning does) is a forward pass; Module.to() called inside a
  // forward is loading weights. A call into backward decides wherever it is.
  bool backward = false, weak_init = false;
  Marker innermost = Marker::kNone;
  for (size_t i = facts.first_python; i < frames.size(); ++i) {
    if (ClassOf(frames[i]) != FrameClass::kPython) continue;
    Marker m = static_cast<Marker>(MarkerOf(frames[i]));
    backward |= m == Marker::kBackward;
    weak_init |= m == Marker::kWeakInit;
    if (innermost == Marker::kNone && m != Marker::kNone && m != Marker::kWeakInit) innermost = m;
  }
  if (backward) return Phase::kBackward;
  if (innermost == Marker::kOptimizer || IsOptimizerOp(facts.op_inner_to_python)) {
    return Phase::kOptimizer;
  }
  if (innermost == Marker::kStrongInit) return Phase::kInit;
  if (innermost == Marker::kForward) return Phase::kForward;
  if (innermost == Marker::kData || IsCopyOp(facts.op_inner_to_python)) return Phase::kData;
  if (weak_init) return Phase::kInit;
  return Phase::kOther;
}

bool Attribution::InitState(std::span<const FrameId> frames, const StackFacts& facts) {
  // The init phase from a plain `__init__` alone: no module construction, loading or .to() frame
  // anywhere (those make parameters, whoever calls them).
  for (size_t i = facts.first_python; i < frames.size(); ++i) {
    if (ClassOf(frames[i]) == FrameClass::kPython &&
        static_cast<Marker>(MarkerOf(frames[i])) == Marker::kStrongInit) {
      return false;
    }
  }
  if (facts.init_at == SIZE_MAX) return false;
  // One tensor per input made alike (zeros_like(p), p.clone()), or a comprehension inside the
  // `__init__` ([torch.zeros_like(p) for p in params]; Python 3.12 inlines list comprehensions,
  // so there the operator says it).
  const std::string_view op = facts.op_inner_to_python;
  return facts.comprehension_at != SIZE_MAX || op.ends_with("_like") || op == "clone";
}

SiteInfo Attribution::Build(StackId stack) {
  std::span<const FrameId> frames = snap_.stacks.Get(stack);
  StackFacts facts = Facts(frames);
  SiteInfo s;
  s.accumulate_grad = facts.accumulate_grad;
  s.zero_grad = facts.zero_grad;
  s.kv_cache = facts.kv_cache;
  s.autocast_cast = facts.autocast_cast;
  s.autocast_clear = facts.autocast_clear;
  s.node = facts.node;
  auto file_of = [&](size_t i) -> const FileFacts& {
    return File(snap_.frames.Get(frames[i]).filename);
  };
  auto name_of = [&](size_t i) { return snap_.strings.Get(snap_.frames.Get(frames[i]).name); };
  auto key_text = [&](size_t i) -> const std::string& { return Python(frames[i]).key; };
  auto plumbing = [&](size_t i) { return IsModulePlumbing(file_of(i).normal, name_of(i)); };
  auto machinery = [&](size_t i) { return IsPythonMachineryPath(file_of(i).normal); };

  s.phase = PhaseFrom(frames, facts);
  s.init_state = s.phase == Phase::kInit && InitState(frames, facts);

  // Name and key. The unlined key joins the same parts without their lines (when asked for).
  const bool unlined = options_.unlined_keys && !options_.ignore_lines;
  auto unlined_text = [&](size_t i) -> std::string {
    const std::string& key = key_text(i);
    const Frame& f = snap_.frames.Get(frames[i]);
    if (f.line == kUnknownLine) return key;
    // "path:LINE:name" -> "path:name".
    const size_t line_chars = absl::StrCat(f.line).size() + 1;
    const size_t at = key.size() - snap_.strings.Get(f.name).size() - 1 - line_chars;
    return absl::StrCat(key.substr(0, at), key.substr(at + line_chars));
  };
  auto set_unlined = [&](std::string text, std::vector<std::string> frames) {
    if (unlined && text != s.key) {
      s.unlined_key = std::move(text);
      s.key_frames = std::move(frames);
    }
  };
  std::vector<std::string> key_parts, unlined_parts;
  for (size_t i : facts.python) {
    key_parts.push_back(key_text(i));
    if (unlined) unlined_parts.push_back(unlined_text(i));
  }
  if (!facts.node.empty()) {
    s.kind = SiteKind::kBackward;
    s.op = facts.op_inner_to_node;
    s.owner = s.node;
    if (!s.op.empty() && s.node != "AccumulateGrad") absl::StrAppend(&s.owner, " (", s.op, ")");
    // The forward lines that made such nodes: the node is named after its operator (rule L2).
    if (std::string base = NodeBase(s.node); !base.empty()) s.forward_lines = ForwardLines(base);
    for (size_t i : facts.python) {
      if (!plumbing(i) && !machinery(i)) s.callers.push_back(PythonFrameText(frames[i]));
    }
    s.key = absl::StrCat("node|", s.node, "|", s.op, "|", absl::StrJoin(key_parts, ";"));
    if (unlined) {
      set_unlined(absl::StrCat("node|", s.node, "|", s.op, "|", absl::StrJoin(unlined_parts, ";")),
                  key_parts);
    }
    return s;
  }
  if (!facts.python.empty()) {
    s.kind = SiteKind::kPython;
    s.op = facts.op_inner_to_python;
    size_t owner = facts.python[0];
    size_t user = SIZE_MAX;  // the innermost user frame
    for (size_t i : facts.python) {
      if (!file_of(i).library) {
        owner = user = i;
        break;
      }
    }
    // A model library's layer inside the user's call (transformers' `modeling_llama.py:615
    // forward` under a notebook cell's `model(**batch)`) is the model code that allocated: it
    // owns the site, and the user's frame is its caller. Its wrappers (`__call__`, `wrapper`...)
    // name nothing.
    bool model_owned = false;
    for (size_t i : facts.python) {
      if (i >= owner && user != SIZE_MAX) break;
      const std::string_view name = name_of(i);
      if (file_of(i).model && !plumbing(i) &&
          (!IsGenericFunction(name) || name == "forward" || name == "_forward")) {
        owner = i;
        model_owned = true;
        break;
      }
    }
    if (owner == facts.python[0]) {
      s.what = s.op;  // "zeros_like ← optimizers.py:82 step"
    } else {
      // The library function the owner called: the outermost library frame with a telling
      // name ("einsum", "to", "scatter"), unless an operator says it better ("linear" rather than
      // Linear's `forward`); a factory operator says less than a named library function.
      std::string_view api;
      bool compiled = false;
      for (auto it = facts.python.rbegin(); it != facts.python.rend(); ++it) {
        if (*it >= owner) continue;
        if (file_of(*it).compiled) {
          compiled = true;  // torch.compile's machinery names nothing the user wrote
        } else if (api.empty() && !IsGenericFunction(name_of(*it))) {
          api = name_of(*it);
        }
      }
      if (!s.op.empty() && !(IsFactoryOp(s.op) && !api.empty())) {
        s.what = s.op;
      } else if (!api.empty()) {
        s.what = std::string(api);
      } else if (compiled) {
        s.what = std::string(kCompiledWhat);
      } else {
        s.what = PythonFrameText(frames[facts.python[0]]);
      }
    }
    s.owner = PythonFrameText(frames[owner]);
    for (auto it = facts.python.rbegin(); it != facts.python.rend(); ++it) {
      if (*it < owner && !plumbing(*it)) {
        s.inner.push_back(PythonFrameText(frames[*it]));
      }
    }
    bool past_owner = false;
    // Compiled code's own frames end the frames torch.compile recorded for it (L1).
    bool traced = s.what == kCompiledWhat;
    for (size_t i : facts.python) {
      if (i == owner) {
        past_owner = true;
        continue;
      }
      if (past_owner && file_of(i).compiled) traced = false;
      // A model-owned site's caller is the user's frame: the library frames between them (the
      // model's outer modules, its wrappers) are the module tree's (`top --by module`).
      if (model_owned && user != SIZE_MAX && i < user) continue;
      // Machinery that ran the user's code (IPython, runpy, threading) is never a caller.
      if (past_owner && !plumbing(i) && !file_of(i).compiled && !machinery(i)) {
        s.callers.push_back(PythonFrameText(frames[i]));
        if (traced) ++s.traced_callers;
      }
    }
    // The identity starts at the owner: library frames inside it (how deep Module._apply
    // recursed, which einsum backend ran) do not make another site; what it called does.
    std::vector<std::string> owner_out, unlined_out;
    for (size_t k = 0; k < facts.python.size(); ++k) {
      if (facts.python[k] < owner) continue;
      owner_out.push_back(key_text(facts.python[k]));
      if (unlined) unlined_out.push_back(unlined_parts[k]);
    }
    s.model_owned = model_owned && user != SIZE_MAX && !s.callers.empty();
    s.key = absl::StrCat("py|", s.what, "|", absl::StrJoin(owner_out, ";"), "|", s.op);
    if (unlined) {
      set_unlined(absl::StrCat("py|", s.what, "|", absl::StrJoin(unlined_out, ";"), "|", s.op),
                  owner_out);
    }
    return s;
  }
  if (facts.engine) {
    s.kind = SiteKind::kEngine;
    s.op = facts.op_inner_to_python;
    s.owner = s.op.empty() ? "[autograd engine]" : absl::StrCat(s.op, " (autograd engine)");
    s.key = absl::StrCat("engine|", s.op);
    return s;
  }
  if (facts.machinery_only && facts.op_inner_to_python.empty()) {
    s.kind = SiteKind::kMachineryOnly;
    s.owner = std::string(kMachineryOnlyRow);
    s.key = s.owner;
    return s;
  }
  s.kind = SiteKind::kNative;
  s.op = facts.op_inner_to_python;
  std::vector<std::string> natives;
  for (size_t i : facts.native) natives.push_back(ShortNativeName(name_of(i)));
  if (!s.op.empty()) {
    s.owner = s.op;
    s.callers = natives;
  } else {
    s.owner = natives.empty() ? std::string(kMachineryOnlyRow) : natives[0];
    if (!natives.empty()) s.callers.assign(natives.begin() + 1, natives.end());
  }
  s.key = absl::StrCat("native|", s.op, "|", absl::StrJoin(natives, ";"));
  return s;
}

}  // namespace memsnap::analysis
