// Frame classes, node and operator names, short paths: the per-frame part of attribution. Plain
// substring tests over tables, so a new kind of machinery frame is one line here
// (docs/attribution.md lists what each class covers).
#include <algorithm>
#include <array>
#include <cctype>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "analysis/attribution/frames_internal.h"
#include "memsnap/analysis/attribution/attribution.h"
#include "memsnap/util/strings.h"

namespace memsnap::analysis {

namespace {

bool Contains(std::string_view s, std::string_view part) {
  return s.find(part) != std::string_view::npos;
}

template <size_t N>
bool ContainsAny(std::string_view s, const std::array<std::string_view, N>& parts) {
  for (std::string_view p : parts) {
    if (Contains(s, p)) return true;
  }
  return false;
}

template <size_t N>
bool StartsWithAny(std::string_view s, const std::array<std::string_view, N>& parts) {
  for (std::string_view p : parts) {
    if (s.starts_with(p)) return true;
  }
  return false;
}

// Stack capture: the frames PyTorch's unwinder adds on top of every C++ stack.
constexpr std::array<std::string_view, 4> kUnwinderNames = {"torch::unwind::", "CapturedTraceback",
                                                            "gather_with_cpp", "unwind::unwind"};

// The caching allocator and the storage it hands out.
constexpr std::array<std::string_view, 9> kAllocatorNames = {
    "CachingAllocator",    "c10::cuda::",     "c10::Allocator",
    "c10::StorageImpl",    "c10::TensorImpl", "c10::intrusive_ptr",
    "c10::make_intrusive", "at::cuda::",      "c10::hip::"};
constexpr std::array<std::string_view, 3> kAllocatorFiles = {"CachingAllocator", "Allocator.cpp",
                                                             "StorageImpl.cpp"};

// Tensor factories and output allocation: how an operator gets its output, not who asked.
constexpr std::array<std::string_view, 22> kFactoryNames = {
    "at::detail::empty",     "at::detail::_empty", "empty_generic",
    "empty_strided_generic", "empty_cuda",         "empty_strided_cuda",
    "at::native::empty",     "at::empty(",         "at::empty_like",
    "at::native::resize",    "resize_impl",        "resize_output",
    "maybe_resize_storage",  "create_out",         "set_output_raw_strided",
    "set_output_strided",    "at::meta::",         "at::impl::MetaBase",
    "TensorIteratorBase::",  "at::TensorIterator", "allocate_or_resize_outputs",
    "at::native::empty_like"};

// The dispatcher, boxing and the generated wrappers around every operator call, and the Python
// bindings that enter it.
constexpr std::array<std::string_view, 17> kDispatcherNames = {"c10::impl::",
                                                               "c10::Dispatcher",
                                                               "c10::KernelFunction",
                                                               "c10::BoxedKernel",
                                                               "c10::OperatorHandle",
                                                               "wrap_kernel_functor",
                                                               "::redispatch(",
                                                               "callUnboxedKernelFunction",
                                                               "torch::autograd::VariableType::",
                                                               "torch::ADInplaceOrView::",
                                                               "at::functionalization::",
                                                               "torch::TraceType::",
                                                               "wrapper_CUDA",
                                                               "wrapper_CompositeExplicitAutograd",
                                                               "THPVariable_",
                                                               "torch::autograd::utils::wrap",
                                                               "pybind11::"};
constexpr std::array<std::string_view, 9> kDispatcherFiles = {
    "Register",        "VariableType",           "ADInplaceOrView",     "TraceType", "core/boxing",
    "python_variable", "python_torch_functions", "python_nn_functions", "Redispatch"};

// The autograd engine: it runs nodes, it does not own their memory.
constexpr std::array<std::string_view, 12> kEngineNames = {
    "torch::autograd::Engine::",
    "torch::autograd::Node::operator()",
    "torch::autograd::python::PythonEngine",
    "torch::autograd::InputBuffer",
    "torch::autograd::accumulate(",
    "torch::autograd::call_function",
    "torch::autograd::validate_outputs",
    "torch::autograd::GraphTask",
    "THPEngine_",
    "torch::autograd::run_backward",
    "torch::autograd::backward(",
    "torch::autograd::(anonymous namespace)::call_function"};
constexpr std::array<std::string_view, 2> kEngineFiles = {"engine.cpp", "input_buffer.cpp"};

// The CPython interpreter.
constexpr std::array<std::string_view, 21> kCPythonNames = {
    "_PyEval_",     "PyEval_",           "_PyObject_",  "PyObject_", "_PyFunction_", "PyFunction_",
    "cfunction_",   "method_vectorcall", "vectorcall",  "slot_tp_",  "pymain_",      "Py_RunMain",
    "Py_BytesMain", "run_eval_code_obj", "run_mod",     "pyrun_",    "PyRun_",       "_PyRun_",
    "builtin_",     "THPFunction_apply", "_PyCFunction"};
constexpr std::array<std::string_view, 8> kCPythonPrefixes = {
    "Py",      "_Py",       "call_function", "do_call_core", "function_code_fastcall",
    "method_", "cfunction", "slot_"};
constexpr std::array<std::string_view, 7> kCPythonFiles = {
    "ceval.c", "Objects/", "Python/", "Modules/main.c", "pythonrun.c", "pycore_", "cpython/"};

// libc, pthread and thread start routines (including the odd symbols a stripped libstdc++ gives).
constexpr std::array<std::string_view, 9> kLibcNames = {"__libc_",
                                                        "execute_native_thread_routine",
                                                        "start_thread",
                                                        "pthread_",
                                                        "__clone",
                                                        "std::thread",
                                                        "std::error_code::default_error_condition",
                                                        "__xmknodat",
                                                        "clone3"};
constexpr std::array<std::string_view, 5> kLibcFiles = {"sysdeps/", "libc", "thread.cc", "nptl/",
                                                        "libpthread"};

bool IsPythonFile(std::string_view file) {
  if (file.ends_with(".py") || file.ends_with(".pyx")) return true;
  // "<frozen runpy>", "<string>", "<stdin>", "<ipython-input-3-...>": code without a file.
  return file.size() > 2 && file.front() == '<' && file.back() == '>';
}

// Overload names that at::_ops appends to an operator ("div_Tensor" is div.Tensor). Only these are
// stripped: an operator's own name may contain '_' ("clamp_min", "zeros_like").
constexpr std::array<std::string_view, 40> kOverloads = {
    "_Tensor_Tensor", "_Tensor_Scalar", "_Scalar_Tensor", "_Tensor_mode", "_Scalar_mode",
    "_dim_IntList",   "_dim_int",       "_dimname",       "_Tensor",      "_Scalar",
    "_ScalarOther",   "_ScalarSelf",    "_ScalarList",    "_TensorList",  "_List",
    "_IntList",       "_memory_format", "_dtype_layout",  "_dtype",       "_device",
    "_other",         "_self",          "_out",           "_start_out",   "_start_step",
    "_start",         "_int",           "_using_ints",    "_using_names", "_names",
    "_SymInt",        "_correction",    "_dim",           "_input",       "_source",
    "_value",         "_vec",           "_default",       "_src",         "_index"};

}  // namespace

std::string_view FrameClassName(FrameClass c) {
  switch (c) {
    case FrameClass::kPython:
      return "python";
    case FrameClass::kNode:
      return "autograd_node";
    case FrameClass::kOp:
      return "operator";
    case FrameClass::kEngine:
      return "autograd_engine";
    case FrameClass::kAllocator:
      return "allocator";
    case FrameClass::kFactory:
      return "factory";
    case FrameClass::kDispatcher:
      return "dispatcher";
    case FrameClass::kUnwinder:
      return "unwinder";
    case FrameClass::kCPython:
      return "cpython";
    case FrameClass::kLibc:
      return "libc";
    case FrameClass::kNative:
      return "native";
  }
  return "?";
}

bool IsMachinery(FrameClass c) {
  switch (c) {
    case FrameClass::kPython:
    case FrameClass::kNode:
    case FrameClass::kOp:
    case FrameClass::kNative:
      return false;
    default:
      return true;
  }
}

FrameClass ClassifyFrame(std::string_view name, std::string_view filename) {
  if (IsPythonFile(filename)) return FrameClass::kPython;
  if (ContainsAny(name, kUnwinderNames) || filename == "memory_snapshot.cpp") {
    return FrameClass::kUnwinder;
  }
  if (!NodeName(name).empty()) return FrameClass::kNode;
  if (Contains(name, "at::_ops::") && Contains(name, "::call(")) return FrameClass::kOp;
  if (ContainsAny(name, kEngineNames) || ContainsAny(filename, kEngineFiles)) {
    return FrameClass::kEngine;
  }
  if (ContainsAny(name, kAllocatorNames) || ContainsAny(filename, kAllocatorFiles)) {
    return FrameClass::kAllocator;
  }
  if (ContainsAny(name, kFactoryNames)) return FrameClass::kFactory;
  if (ContainsAny(name, kDispatcherNames) || ContainsAny(filename, kDispatcherFiles) ||
      Contains(name, "at::_ops::")) {
    return FrameClass::kDispatcher;
  }
  if (ContainsAny(name, kLibcNames) || ContainsAny(filename, kLibcFiles) || name == "_start" ||
      name == "clone" || filename.ends_with(".S")) {
    return FrameClass::kLibc;
  }
  if (ContainsAny(name, kCPythonNames) || ContainsAny(filename, kCPythonFiles) ||
      (StartsWithAny(name, kCPythonPrefixes) && !Contains(name, "::"))) {
    return FrameClass::kCPython;
  }
  return FrameClass::kNative;
}

std::string NodeName(std::string_view function) {
  // torch::autograd::generated::BmmBackward0::apply(...), torch::autograd::AccumulateGrad::apply,
  // torch::autograd::CopySlices::apply, torch::autograd::CppNode<T>::apply...
  size_t at = function.find("torch::autograd::");
  if (at == std::string_view::npos) return "";
  size_t apply = function.find("::apply(", at);
  if (apply == std::string_view::npos) return "";
  std::string_view qualified = function.substr(at, apply - at);
  if (Contains(qualified, "(") || Contains(qualified, " ")) return "";
  size_t colon = qualified.rfind("::");
  std::string_view cls = qualified.substr(colon + 2);
  if (size_t lt = cls.find('<'); lt != std::string_view::npos) cls = cls.substr(0, lt);
  if (cls.empty() || cls == "Node" || Contains(cls, "anonymous")) return "";
  if (cls == "generated" || cls == "autograd") return "";
  return std::string(cls);
}

namespace {

// "div" from "div_Tensor": an operator's name without a well-known overload suffix.
std::string_view WithoutOverload(std::string_view op) {
  for (std::string_view suffix : kOverloads) {
    if (op.size() > suffix.size() + 1 && op.ends_with(suffix)) {
      op.remove_suffix(suffix.size());
      break;
    }
  }
  return op;
}

}  // namespace

std::string OpName(std::string_view function) {
  size_t at = function.find("at::_ops::");
  if (at == std::string_view::npos) return "";
  size_t begin = at + 10;
  size_t end = function.find("::call(", begin);
  if (end == std::string_view::npos) return "";
  std::string_view op = function.substr(begin, end - begin);
  if (op.empty() || Contains(op, ":") || Contains(op, " ")) return "";
  return std::string(WithoutOverload(op));
}

std::string AutogradWrapperOp(std::string_view function) {
  // torch::autograd::VariableType::(anonymous namespace)::div_Tensor(c10::DispatchKeySet, ...):
  // the generated autograd kernel of div.Tensor (VariableType_*.cpp), which records the node.
  static constexpr std::string_view kPrefix = "torch::autograd::VariableType::";
  size_t at = function.find(kPrefix);
  if (at == std::string_view::npos) return "";
  std::string_view rest = function.substr(at + kPrefix.size());
  static constexpr std::string_view kAnon = "(anonymous namespace)::";
  if (rest.starts_with(kAnon)) rest.remove_prefix(kAnon.size());
  size_t paren = rest.find('(');
  if (paren == std::string_view::npos || paren == 0) return "";
  std::string_view op = rest.substr(0, paren);
  for (char c : op) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return "";
  }
  return std::string(op);
}

std::string NodeBaseOfOp(std::string_view wrapper_op) {
  // PyTorch names a node after the operator's base name in CamelCase, as Python's str.title()
  // capitalises each '_'-separated part ("_to_copy" -> ToCopy, "upsample_nearest2d" ->
  // UpsampleNearest2D), with "ForwardBackward" shortened to "Backward" (pytorch/pytorch
  // tools/autograd/load_derivatives.py, _create_op_prefix, commit 05756d51f13c; docs/attribution.md
  // rule L2).
  std::string_view base = WithoutOverload(wrapper_op);
  std::string out;
  bool after_letter = false;
  for (char c : base) {
    const bool letter = std::isalpha(static_cast<unsigned char>(c)) != 0;
    if (c == '_') {
      after_letter = false;
      continue;
    }
    if (letter) {
      out += static_cast<char>(after_letter ? std::tolower(static_cast<unsigned char>(c))
                                            : std::toupper(static_cast<unsigned char>(c)));
    } else {
      out += c;
    }
    after_letter = letter;
  }
  if (out.ends_with("Forward")) out.resize(out.size() - 7);
  return out;
}

std::string NodeBase(std::string_view node) {
  // "DivBackward0" -> "Div": the node's name without "Backward" and its overload number.
  size_t end = node.size();
  while (end > 0 && std::isdigit(static_cast<unsigned char>(node[end - 1]))) --end;
  if (end == node.size()) return "";
  std::string_view head = node.substr(0, end);
  if (!head.ends_with("Backward") || head.size() == 8) return "";
  head.remove_suffix(8);
  return std::string(head);
}

FrameTextParts SplitFrameText(std::string_view text) {
  FrameTextParts parts;
  const size_t space = text.rfind(' ');
  parts.place = text.substr(0, space);
  parts.function = text.substr(space == std::string_view::npos ? 0 : space + 1);
  parts.file = parts.place;
  const size_t colon = parts.place.rfind(':');
  if (colon != std::string_view::npos &&
      absl::SimpleAtoi(Sv(parts.place.substr(colon + 1)), &parts.line)) {
    parts.file = parts.place.substr(0, colon);
  } else {
    parts.line = -1;
  }
  return parts;
}

std::string ShortNativeName(std::string_view function) {
  // Cut the parameter list: the first '(' outside template brackets that is not part of an
  // "(anonymous namespace)" component.
  std::string_view s = function;
  int depth = 0;
  size_t cut = s.size();
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '<') ++depth;
    if (c == '>' && depth > 0) --depth;
    if (c == '(' && depth == 0) {
      if (s.substr(i).starts_with("(anonymous namespace)")) {
        i += 20;
        continue;
      }
      cut = i;
      break;
    }
  }
  s = s.substr(0, cut);
  // Drop template arguments and a leading return type ("void ", "at::Tensor ").
  std::string plain;
  depth = 0;
  for (char c : s) {
    if (c == '<') ++depth;
    if (depth == 0) plain += c;
    if (c == '>' && depth > 0) --depth;
  }
  if (size_t sp = plain.rfind(' '); sp != std::string::npos) {
    // "(anonymous namespace)" has a space of its own: keep it whole.
    size_t anon = plain.rfind("(anonymous namespace)");
    if (anon == std::string::npos || sp < anon || sp >= anon + 21) plain = plain.substr(sp + 1);
  }
  std::vector<std::string_view> parts;
  std::string_view rest = plain;
  while (true) {
    size_t c = rest.find("::");
    if (c == std::string_view::npos) {
      parts.push_back(rest);
      break;
    }
    parts.push_back(rest.substr(0, c));
    rest = rest.substr(c + 2);
  }
  std::erase_if(parts,
                [](std::string_view p) { return p.empty() || p == "(anonymous namespace)"; });
  if (parts.empty()) return std::string(function.substr(0, std::min<size_t>(function.size(), 60)));
  std::string_view last = parts.back();
  // A method: keep its class ("CopySlices::apply_impl").
  if (parts.size() >= 2) {
    std::string_view cls = parts[parts.size() - 2];
    if (!cls.empty() && std::isupper(static_cast<unsigned char>(cls[0]))) {
      return absl::StrCat(Sv(cls), "::", Sv(last));
    }
  }
  return std::string(last);
}

std::string LowerCase(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool IsLibraryPath(std::string_view path) {
  std::string p = NormalPath(path);
  if (Contains(p, "site-packages/") || Contains(p, "dist-packages/")) return true;
  if (p.starts_with("<frozen") || p.starts_with("<built-in")) return true;
  // Code torch.compile generated (Inductor's output, FX graphs): not a line the user wrote.
  if (Contains(p, "torchinductor_") || p.starts_with("<eval_with_key")) return true;
  if (Contains(LowerCase(p), "/lib/python")) return true;
  // A PyTorch source checkout used in place (pip install -e, a build tree).
  return Contains(p, "/torch/nn/") || Contains(p, "/torch/optim/") ||
         Contains(p, "/torch/autograd/") || Contains(p, "/torch/utils/") ||
         Contains(p, "/torch/_") || p.ends_with("/torch/functional.py");
}

bool IsPythonMachineryPath(std::string_view path) {
  const std::string p = NormalPath(path);
  if (!IsLibraryPath(p)) return false;
  const std::string short_path = ShortPath(p, "");
  for (std::string_view dir : {"IPython/", "ipykernel/", "ipykernel_launcher", "jupyter_client/",
                               "jupyter_core/", "traitlets/", "tornado/", "zmq/", "asyncio/",
                               "concurrent/futures/", "debugpy/", "pydevd"}) {
    if (short_path.starts_with(dir)) return true;
  }
  return short_path == "runpy.py" || short_path == "threading.py" || short_path == "code.py";
}

bool IsModelLibraryPath(std::string_view path) {
  const std::string p = NormalPath(path);
  if (!IsLibraryPath(p)) return false;
  const std::string short_path = ShortPath(p, "");
  // accelerate's hooks wrap a module's forward (device placement, offload), and a library's
  // modeling_utils.py is its models' base class (from_pretrained, its own `to`): no layer.
  if (short_path.starts_with("accelerate/hooks.py") || short_path.ends_with("/modeling_utils.py")) {
    return false;
  }
  for (std::string_view dir :
       {"transformers/", "peft/", "diffusers/", "timm/", "accelerate/", "bitsandbytes/nn/",
        "torchvision/models/", "sentence_transformers/", "open_clip/", "trl/"}) {
    if (short_path.starts_with(dir)) return true;
  }
  return false;
}

std::string NotebookCellName(std::string_view path) {
  const std::string p = NormalPath(path);
  // IPython < 7.x (and plain IPython): "<ipython-input-21-3105878423>".
  constexpr std::string_view kInput = "<ipython-input-";
  if (p.starts_with(kInput)) {
    const size_t dash = p.find('-', kInput.size());
    std::string_view count = std::string_view(p).substr(
        kInput.size(), dash == std::string::npos ? std::string::npos : dash - kInput.size());
    if (!count.empty() &&
        std::all_of(count.begin(), count.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      return absl::StrCat("cell [", Sv(count), "]");
    }
    return "cell";
  }
  // ipykernel >= 6: "/tmp/ipykernel_12345/3105878423.py" (a hash of the cell's code).
  const size_t kernel = p.rfind("/ipykernel_");
  if (kernel == std::string::npos || !p.ends_with(".py")) return "";
  const size_t slash = p.rfind('/');
  if (slash <= kernel) return "";
  // The frames carry nothing else (no execution count): the file's own name, which the user finds
  // in /tmp/ipykernel_PID/ and which stays the same while the cell's code does.
  return absl::StrCat("cell ", p.substr(slash + 1));
}

std::string NormalPath(std::string_view path) {
  std::string p(path);
  std::replace(p.begin(), p.end(), '\\', '/');
  if (p.find("/.") == std::string::npos) return p;
  // "scripts/../cs336/x.py" -> "cs336/x.py": lexically, as a person would read it.
  std::vector<std::string> parts;
  size_t at = 0;
  while (at <= p.size()) {
    size_t slash = p.find('/', at);
    if (slash == std::string::npos) slash = p.size();
    std::string part = p.substr(at, slash - at);
    if (part == "..") {
      if (!parts.empty() && !parts.back().empty() && parts.back() != "..") {
        parts.pop_back();
      } else {
        parts.push_back(part);
      }
    } else if (part != "." || parts.empty()) {
      parts.push_back(part);
    }
    at = slash + 1;
  }
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) absl::StrAppend(&out, i ? "/" : "", parts[i]);
  return out;
}

std::string DisplayFrameText(const Snapshot& snap, FrameId frame) {
  if (!frame.valid()) return "";
  const Frame& f = snap.frames.Get(frame);
  return absl::StrCat(NormalPath(snap.strings.Get(f.filename)), ":",
                      f.line == kUnknownLine ? 0 : f.line, ":", Sv(snap.strings.Get(f.name)));
}

std::string ShortPath(std::string_view path, std::string_view user_prefix) {
  std::string p = NormalPath(path);
  for (std::string_view marker : {"site-packages/", "dist-packages/"}) {
    size_t at = p.rfind(marker);
    if (at != std::string::npos) return p.substr(at + marker.size());
  }
  // The standard library: relative to lib/pythonX.Y/ (or Lib/ on Windows).
  std::string lower = LowerCase(p);
  size_t lib = lower.rfind("/lib/python");
  if (lib != std::string::npos) {
    size_t slash = p.find('/', lib + 11);
    if (slash != std::string::npos) return p.substr(slash + 1);
  }
  if (size_t torch = p.rfind("/torch/"); torch != std::string::npos && IsLibraryPath(p)) {
    return p.substr(torch + 1);
  }
  std::string prefix(user_prefix);
  std::replace(prefix.begin(), prefix.end(), '\\', '/');
  if (!prefix.empty() && p.starts_with(prefix) && p.size() > prefix.size()) {
    return p.substr(prefix.size());
  }
  return p;
}

}  // namespace memsnap::analysis
