// Frame filters, cached per FrameId and per StackId so regexes never run in a per-event loop.
#include "memsnap/analysis/timeline/filter.h"

#include <array>

#include "absl/strings/str_cat.h"
#include "memsnap/util/strings.h"

namespace memsnap::analysis {

namespace {
// The lists both upstream viewers use (docs/snapshot-format.md §5); plain substring tests.
constexpr std::array<std::string_view, 8> kNoiseNames = {
    "unwind::unwind",    "CapturedTraceback::gather",
    "gather_with_cpp",   "_start",
    "__libc_start_main", "PyEval_",
    "PyObject_",         "PyFunction_"};
constexpr std::array<std::string_view, 10> kNoiseFiles = {"core/boxing",
                                                          "/Register",
                                                          "/Redispatch",
                                                          "pythonrun.c",
                                                          "Modules/main.c",
                                                          "Objects/call.c",
                                                          "Objects/methodobject.c",
                                                          "pycore_ceval.h",
                                                          "ceval.c",
                                                          "cpython/abstract.h"};

absl::StatusOr<std::optional<std::regex>> Compile(const std::string& flag, const std::string& re) {
  if (re.empty()) return std::optional<std::regex>();
  try {
    return std::optional<std::regex>(std::regex(re, std::regex::ECMAScript | std::regex::optimize));
  } catch (const std::regex_error& e) {
    return absl::InvalidArgumentError(absl::StrCat(flag, " ", re, ": invalid regex: ", e.what()));
  }
}
}  // namespace

bool IsNoiseFrame(std::string_view name, std::string_view filename) {
  for (std::string_view s : kNoiseNames) {
    if (name.find(s) != std::string_view::npos) return true;
  }
  for (std::string_view s : kNoiseFiles) {
    if (filename.find(s) != std::string_view::npos) return true;
  }
  return false;
}

absl::StatusOr<FrameFilter> FrameFilter::Create(const Snapshot& snapshot,
                                                const FilterOptions& options) {
  FrameFilter f(snapshot, options);
  auto hide = Compile("--hide", options.hide);
  if (!hide.ok()) return hide.status();
  auto keep = Compile("--keep", options.keep);
  if (!keep.ok()) return keep.status();
  f.hide_ = std::move(*hide);
  f.keep_ = std::move(*keep);
  f.frame_state_.assign(snapshot.frames.size(), 0);
  f.stack_slot_.assign(snapshot.stacks.size(), -1);
  return f;
}

bool FrameFilter::Keep(FrameId id) {
  uint8_t& state = frame_state_[id.v];
  if (state != 0) return state == 1;
  const Frame& fr = snap_->frames.Get(id);
  std::string_view name = snap_->strings.Get(fr.name);
  std::string_view file = snap_->strings.Get(fr.filename);
  bool keep = true;
  if (options_.noise_filter && IsNoiseFrame(name, file)) keep = false;
  if (keep && options_.python_only && !file.ends_with(".py")) keep = false;
  if (keep && (hide_ || keep_)) {
    std::string text = snap_->FrameText(id);
    if (hide_ && std::regex_search(text, *hide_)) keep = false;
    if (keep && keep_ && !std::regex_search(text, *keep_)) keep = false;
  }
  state = keep ? 1 : 2;
  return keep;
}

bool FrameFilter::KeepByRegex(FrameId id) const {
  if (!hide_ && !keep_) return true;
  std::string text = snap_->FrameText(id);
  if (hide_ && std::regex_search(text, *hide_)) return false;
  return !keep_ || std::regex_search(text, *keep_);
}

const std::vector<FrameId>& FrameFilter::Filtered(StackId stack) {
  if (!stack.valid() || stack.v >= stack_slot_.size()) return empty_;
  int32_t& slot = stack_slot_[stack.v];
  if (slot < 0) {
    std::vector<FrameId> out;
    for (FrameId f : snap_->stacks.Get(stack)) {
      if (Keep(f)) out.push_back(f);
    }
    slot = static_cast<int32_t>(filtered_.size());
    filtered_.push_back(std::move(out));
  }
  return filtered_[slot];
}

}  // namespace memsnap::analysis
