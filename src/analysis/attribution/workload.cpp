// The workload of a device from its stacks (docs/attribution.md, "Workload").

#include "memsnap/analysis/attribution/workload.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <span>

#include "memsnap/analysis/attribution/attribution.h"

namespace memsnap::analysis {
namespace {

// What one frame says of the run, as bits (FrameMarks).
enum Mark : uint8_t {
  kGenerationMark = 1,
  kKvCacheMark = 2,
  kAdapterMark = 4,
  kPretrainedMark = 8,
  kEvaluationMark = 16,
  kNoGradMark = 32,
  kCompilingMark = 64,
  kComputedMark = 128,  // the frame was looked at
};

bool InText(std::string_view s, std::string_view part) {
  return s.find(part) != std::string_view::npos;
}

std::string AsLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// `word` in `text` (lower case) where the letter before it is not a letter: "lora" in
// "peft/tuners/lora/layer.py" and "LoraLayer", not in "exploration".
bool HasWordStart(std::string_view text, std::string_view word) {
  for (size_t at = text.find(word); at != std::string_view::npos; at = text.find(word, at + 1)) {
    if (at == 0 || !std::isalpha(static_cast<unsigned char>(text[at - 1]))) return true;
  }
  return false;
}

// The decoding loops of transformers' GenerationMixin (generation/utils.py) across versions.
constexpr std::array<std::string_view, 14> kDecodingLoops = {"_sample",
                                                             "sample",
                                                             "greedy_search",
                                                             "_greedy_search",
                                                             "beam_search",
                                                             "_beam_search",
                                                             "beam_sample",
                                                             "_beam_sample",
                                                             "assisted_decoding",
                                                             "_assisted_decoding",
                                                             "contrastive_search",
                                                             "_contrastive_search",
                                                             "group_beam_search",
                                                             "_dola_decoding"};

constexpr std::array<std::string_view, 6> kEvaluationFunctions = {
    "test_step", "val_step", "prediction_step", "predict_step", "evaluation_loop", "run_eval"};

uint8_t MarksOf(std::string_view file, std::string_view function) {
  uint8_t m = 0;
  const std::string lfile = AsLower(file);
  const std::string lfunc = AsLower(function);
  const bool generation_file = InText(lfile, "generation");
  if (lfunc.starts_with("generate") || InText(lfile, "/vllm/") ||
      (generation_file &&
       std::find(kDecodingLoops.begin(), kDecodingLoops.end(), lfunc) != kDecodingLoops.end())) {
    m |= kGenerationMark;
  }
  if (InText(lfile, "cache_utils.py") || InText(lfile, "cache_engine") ||
      InText(lfile, "kv_cache") || InText(lfunc, "kv_cache") || InText(lfile, "kvcache") ||
      InText(lfunc, "kvcache") || InText(lfunc, "past_key_value")) {
    m |= kKvCacheMark;
  }
  if (InText(lfile, "/peft/") || HasWordStart(lfile, "lora") || HasWordStart(lfunc, "lora")) {
    m |= kAdapterMark;
  }
  if (lfunc == "from_pretrained") m |= kPretrainedMark;
  if (lfunc.starts_with("eval") || lfunc.starts_with("valid") ||
      std::find(kEvaluationFunctions.begin(), kEvaluationFunctions.end(), lfunc) !=
          kEvaluationFunctions.end()) {
    m |= kEvaluationMark;
  }
  // torch.no_grad() and torch.inference_mode() used as decorators run the function through
  // torch/utils/_contextlib.py (older PyTorch: torch/autograd/grad_mode.py).
  if (lfunc == "decorate_context" &&
      (InText(lfile, "_contextlib.py") || InText(lfile, "grad_mode.py"))) {
    m |= kNoGradMark;
  }
  // torch.compile compiling (tracing, lowering, autotuning): its allocations run no model, and its
  // joint graph passes look like a backward's.
  if (InText(lfile, "torch/_dynamo/convert_frame.py") ||
      InText(lfile, "torch/_inductor/compile_fx.py") ||
      InText(lfile, "torch/_inductor/fx_passes/")) {
    m |= kCompilingMark;
  }
  return m;
}

}  // namespace

namespace {

// The marks of every stack and frame, computed once per snapshot on first use, so that a file of
// many devices costs O(events + stacks + frames), never devices x stacks (issue 54).
class StackMarks {
 public:
  explicit StackMarks(Attribution& attribution)
      : attr_(attribution),
        snap_(attribution.snapshot()),
        frame_marks_(snap_.frames.size(), 0),
        stack_marks_(snap_.stacks.size(), 0) {}

  // The stack's frame marks, and its phase (kPhaseKnown set once computed).
  uint16_t Of(StackId id) {
    uint16_t& m = stack_marks_[id.v];
    if (m & kStackComputed) return m;
    uint8_t marks = 0;
    for (FrameId f : snap_.stacks.Get(id)) {
      if (f.v >= frame_marks_.size()) continue;
      uint8_t& fm = frame_marks_[f.v];
      if (!(fm & kComputedMark)) {
        const Frame& frame = snap_.frames.Get(f);
        // Python frames only: native frames' names say what ran, not the program's intent.
        fm = kComputedMark;
        if (attr_.ClassOf(f) == FrameClass::kPython) {
          fm |= MarksOf(snap_.strings.Get(frame.filename), snap_.strings.Get(frame.name));
        }
      }
      marks |= fm;
    }
    m = static_cast<uint16_t>(marks & ~kComputedMark) |
        static_cast<uint16_t>(static_cast<uint16_t>(attr_.PhaseOf(id)) << 8) | kStackComputed;
    return m;
  }

  // Counts the distinct stacks of `stacks` (sorted, unique) into `ev` (its counts start at zero).
  void Tally(const std::vector<uint32_t>& stacks, WorkloadEvidence& ev) {
    for (uint32_t s : stacks) {
      const uint16_t m = Of(StackId(s));
      ++ev.stacks;
      if (m & kCompilingMark) continue;  // counted as a stack, but no evidence
      switch (static_cast<Phase>((m >> 8) & 0x7F)) {
        case Phase::kBackward:
          ++ev.backward;
          break;
        case Phase::kOptimizer:
          ++ev.optimizer;
          break;
        case Phase::kForward:
          ++ev.forward;
          break;
        default:
          break;
      }
      ev.generation += (m & kGenerationMark) != 0;
      ev.kv_cache += (m & kKvCacheMark) != 0;
      ev.adapters += (m & kAdapterMark) != 0;
      ev.pretrained += (m & kPretrainedMark) != 0;
      ev.evaluation += (m & kEvaluationMark) != 0;
      ev.no_grad += (m & kNoGradMark) != 0;
    }
  }

 private:
  static constexpr uint16_t kStackComputed = 0x8000;
  Attribution& attr_;
  const Snapshot& snap_;
  std::vector<uint8_t> frame_marks_;
  std::vector<uint16_t> stack_marks_;
};

void SortUnique(std::vector<uint32_t>& v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
}

WorkloadEvidence Detect(StackMarks& marks, const Snapshot& snap, int32_t device,
                        std::span<const uint32_t> segments) {
  WorkloadEvidence ev;
  ev.device = device;
  std::vector<uint32_t> stacks;
  auto see = [&](StackId s) {
    if (s.valid() && s != StackTable::kEmpty && s.v < snap.stacks.size()) stacks.push_back(s.v);
  };
  if (const DeviceTrace* trace = snap.TraceOf(device)) {
    for (const TraceEvent& e : snap.EventsOf(*trace)) {
      if (e.action == Action::kAlloc) see(e.stack);
      ev.ended_in_oom |= e.action == Action::kOom;
    }
  }
  SortUnique(stacks);
  marks.Tally(stacks, ev);
  // The trace is the run being asked about; the dumped blocks speak only where it shows no model
  // (a dump of one event, a file without a trace). A block left from an earlier phase of the
  // program (a gradient of a training step before a forward-only benchmark) says nothing of it.
  if (ev.backward + ev.optimizer + ev.forward == 0) {
    for (uint32_t k : segments) {
      for (const Block& b : snap.BlocksOf(snap.segments[k])) {
        if (b.is_active()) see(b.stack);
      }
    }
    SortUnique(stacks);
    WorkloadEvidence with_dump;
    with_dump.device = device;
    with_dump.ended_in_oom = ev.ended_in_oom;
    marks.Tally(stacks, with_dump);
    ev = with_dump;
  }
  if (ev.backward + ev.optimizer > 0) {
    if (ev.generation > 0) {
      ev.kind = Workload::kRlRollout;
    } else if (ev.adapters > 0 || ev.pretrained > 0) {
      ev.kind = Workload::kFineTuning;
    } else {
      ev.kind = Workload::kTraining;
    }
  } else if (ev.generation > 0 || ev.kv_cache > 0) {
    ev.kind = Workload::kGeneration;
  } else if (ev.evaluation > 0 && ev.forward > 0) {
    ev.kind = Workload::kEvaluation;
  } else if (ev.forward > 0) {
    ev.kind = ev.ended_in_oom && ev.no_grad == 0 ? Workload::kForwardOnly : Workload::kInference;
  }
  return ev;
}

}  // namespace

WorkloadEvidence DetectWorkload(Attribution& attribution, int32_t device) {
  StackMarks marks(attribution);
  return Detect(marks, attribution.snapshot(), device, attribution.SegmentsOf(device));
}

std::vector<WorkloadEvidence> DetectWorkloads(Attribution& attribution) {
  const Snapshot& snap = attribution.snapshot();
  StackMarks marks(attribution);  // shared by every device
  std::vector<WorkloadEvidence> out;
  for (int32_t device : snap.Devices()) {
    out.push_back(Detect(marks, snap, device, attribution.SegmentsOf(device)));
  }
  return out;
}

}  // namespace memsnap::analysis
