// memsnap_gen: writes a large, realistic, deterministic PyTorch memory snapshot (a pickle) for the
// benchmarks and the bundled example. It simulates a training loop (parameters, forward
// activations, backward, gradient all-reduce on a side stream, optimizer step) on a fake caching
// allocator (small/large pools, best-fit blocks split from segments, merged on free), so segments
// and blocks tile each other and the trace is consistent with the final state. Stacks are a
// handful of tracebacks (depth 20-60) built from a few hundred frames and shared through the pickle
// memo exactly as PyTorch files share them.
//
// The simulation runs twice with the same seed: once to learn the final allocator state (written
// first, under `segments`), once to stream the trace. Memory stays small whatever --events is.
//
//   memsnap_gen --events 2200000 --seed 1 -o big.pickle
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "memsnap/io/pickle_writer.h"

namespace {

using memsnap::io::PickleWriter;

struct GenOptions {
  uint64_t events = 100000;
  uint64_t seed = 1;
  int devices = 1;
  int protocol = 4;
  std::string output;
};

struct FrameDef {
  std::string name, filename;
  int64_t line;
};

/// A few hundred distinct frames and a handful of tracebacks (innermost first) made of them.
struct Stacks {
  std::vector<FrameDef> frames;
  std::vector<std::vector<uint32_t>> tracebacks;

  explicit Stacks(std::mt19937_64& rng) {
    static const char* kCpp[] = {
        "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(signed char, "
        "unsigned long, CUstream_st*)",
        "c10::cuda::CUDACachingAllocator::Native::NativeCachingAllocator::malloc(void**, signed "
        "char, unsigned long, CUstream_st*)",
        "c10::cuda::CUDACachingAllocator::Native::NativeCachingAllocator::allocate(unsigned long)",
        "at::TensorBase at::detail::_empty_generic<long>(c10::ArrayRef<long>, c10::Allocator*, "
        "c10::DispatchKeySet, c10::ScalarType, std::optional<c10::MemoryFormat>)",
        "at::detail::empty_cuda(c10::ArrayRef<long>, c10::ScalarType, std::optional<c10::Device>, "
        "std::optional<c10::MemoryFormat>)",
        "at::native::empty_cuda(c10::ArrayRef<long>, std::optional<c10::ScalarType>, "
        "std::optional<c10::Layout>, std::optional<c10::Device>, std::optional<bool>, "
        "std::optional<c10::MemoryFormat>)"};
    static const char* kOps[] = {"mm",
                                 "addmm",
                                 "bmm",
                                 "gelu",
                                 "layer_norm",
                                 "softmax",
                                 "dropout",
                                 "add",
                                 "mul",
                                 "embedding",
                                 "cat",
                                 "_scaled_dot_product_flash_attention",
                                 "native_layer_norm_backward",
                                 "gelu_backward",
                                 "mm_backward",
                                 "_foreach_add",
                                 "_foreach_mul",
                                 "_foreach_sqrt",
                                 "_foreach_div",
                                 "nll_loss_forward",
                                 "log_softmax",
                                 "clone",
                                 "copy_",
                                 "to_copy"};
    static const char* kModules[] = {"linear", "activation", "normalization", "dropout",
                                     "sparse", "container",  "conv",          "loss"};
    for (const char* c : kCpp) frames.push_back({c, "??", 0});
    for (const char* op : kOps) {
      for (const char* kind : {"at::_ops::%s::call", "at::native::%s_cuda",
                               "at::(anonymous namespace)::wrapper_CUDA_%s",
                               "torch::autograd::VariableType::(anonymous namespace)::%s",
                               "at::_ops::%s::redispatch"}) {
        frames.push_back({absl::StrFormat(kind, op), "", 0});
      }
    }
    size_t cpp_end = frames.size();
    for (const char* m : kModules) {
      for (int i = 0; i < 6; ++i) {
        frames.push_back(
            {i == 0 ? "forward" : absl::StrCat("_forward_impl_", i),
             absl::StrCat("/usr/lib/python3.11/site-packages/torch/nn/modules/", m, ".py"),
             100 + 37 * i});
      }
    }
    frames.push_back(
        {"_call_impl", "/usr/lib/python3.11/site-packages/torch/nn/modules/module.py", 1562});
    frames.push_back({"_wrapped_call_impl",
                      "/usr/lib/python3.11/site-packages/torch/nn/modules/module.py", 1553});
    for (int i = 0; i < 120; ++i) {
      frames.push_back({absl::StrCat(i % 3 == 0   ? "forward"
                                     : i % 3 == 1 ? "attention"
                                                  : "mlp"),
                        absl::StrCat("/home/user/project/model/block_", i / 12, ".py"),
                        20 + 7 * i});
    }
    size_t py_end = frames.size();
    frames.push_back({"backward", "/usr/lib/python3.11/site-packages/torch/_tensor.py", 581});
    frames.push_back(
        {"_engine_run_backward", "/usr/lib/python3.11/site-packages/torch/autograd/graph.py", 825});
    frames.push_back({"step", "/usr/lib/python3.11/site-packages/torch/optim/adamw.py", 209});
    frames.push_back(
        {"_multi_tensor_adamw", "/usr/lib/python3.11/site-packages/torch/optim/adamw.py", 611});
    frames.push_back({"train_step", "/home/user/project/train.py", 88});
    frames.push_back({"train", "/home/user/project/train.py", 141});
    frames.push_back({"main", "/home/user/project/train.py", 203});
    frames.push_back({"<module>", "/home/user/project/train.py", 210});
    size_t base = frames.size() - 4;
    // 48 tracebacks of depth 20-60: allocator frames, an op's dispatch frames, a module nesting,
    // a phase (forward / backward / optimizer) and the script's base.
    for (int t = 0; t < 48; ++t) {
      std::vector<uint32_t> tb;
      for (size_t i = 0; i < 6; ++i) tb.push_back(static_cast<uint32_t>(i));
      size_t op = 6 + 5 * (rng() % std::size(kOps));
      for (size_t i = 0; i < 5; ++i) tb.push_back(static_cast<uint32_t>(op + i));
      size_t depth = 20 + rng() % 41;
      while (tb.size() + 6 < depth) {
        tb.push_back(static_cast<uint32_t>(cpp_end + rng() % (py_end - cpp_end)));
      }
      int phase = t % 3;
      if (phase == 1)
        tb.insert(tb.end(), {static_cast<uint32_t>(py_end), static_cast<uint32_t>(py_end + 1)});
      if (phase == 2)
        tb.insert(tb.end(), {static_cast<uint32_t>(py_end + 2), static_cast<uint32_t>(py_end + 3)});
      for (size_t i = base; i < frames.size(); ++i) tb.push_back(static_cast<uint32_t>(i));
      tracebacks.push_back(std::move(tb));
    }
  }
};

enum Action : uint8_t { kAlloc, kFreeRequested, kFreeCompleted, kSegmentAlloc };
constexpr const char* kActionNames[] = {"alloc", "free_requested", "free_completed",
                                        "segment_alloc"};

struct Event {
  Action action;
  uint64_t addr;
  int64_t size;
  int64_t stream;
  int64_t time_us;
  uint32_t stack;
};

struct SimBlock {
  int64_t size;
  int64_t requested;  // 0 when free
  uint32_t segment;
  uint32_t stack;
  bool allocated;
};

struct SimSegment {
  uint64_t address;
  int64_t size;
  int64_t stream;
  bool small;
  uint32_t stack;
};

/// A fake CUDA caching allocator for one device (docs/allocator-model.md, much simplified).
class Allocator {
 public:
  Allocator(int device, const std::function<void(const Event&)>& emit)
      : next_addr_(0x7f0000000000ULL + (uint64_t(device) << 40)), emit_(emit) {}

  uint64_t Alloc(int64_t requested, int64_t stream, uint32_t stack, int64_t& now) {
    int64_t size = std::max<int64_t>(512, (requested + 511) / 512 * 512);
    bool small = size <= (1 << 20);
    auto& free = free_[{small, stream}];
    auto it = free.lower_bound({size, 0});
    uint64_t addr;
    if (it == free.end()) {
      int64_t seg_size = small               ? (2 << 20)
                         : size < (10 << 20) ? (20 << 20)
                                             : (size + (2 << 20) - 1) / (2 << 20) * (2 << 20);
      addr = next_addr_;
      next_addr_ += static_cast<uint64_t>(seg_size + (2 << 20) - 1) / (2 << 20) * (2 << 20);
      uint32_t seg = static_cast<uint32_t>(segments_.size());
      segments_.push_back({addr, seg_size, stream, small, stack});
      blocks_[addr] = {seg_size, 0, seg, 0, false};
      emit_({kSegmentAlloc, addr, seg_size, stream, now++, stack});
    } else {
      addr = it->second;
      free.erase(it);
    }
    SimBlock& b = blocks_[addr];
    int64_t rest = b.size - size;
    if (rest >= 512 && (small || rest > (1 << 20))) {
      blocks_[addr + static_cast<uint64_t>(size)] = {rest, 0, b.segment, 0, false};
      free.insert({rest, addr + static_cast<uint64_t>(size)});
      b.size = size;
    }
    b.allocated = true;
    b.requested = requested;
    b.stack = stack;
    emit_({kAlloc, addr, requested, stream, now, stack});
    now += 4 + static_cast<int64_t>((addr >> 9) % 29);  // kernels run between allocations
    return addr;
  }

  void Free(uint64_t addr, int64_t& now) {
    auto it = blocks_.find(addr);
    SimBlock& b = it->second;
    const SimSegment& seg = segments_[b.segment];
    emit_({kFreeRequested, addr, b.requested, seg.stream, now, b.stack});
    emit_({kFreeCompleted, addr, b.requested, seg.stream, now + 1, b.stack});
    now += 3 + static_cast<int64_t>(b.size % 7);
    b.allocated = false;
    b.requested = 0;
    auto& free = free_[{seg.small, seg.stream}];
    // Merge with free neighbours of the same segment.
    auto next = std::next(it);
    if (next != blocks_.end() && !next->second.allocated && next->second.segment == b.segment) {
      free.erase({next->second.size, next->first});
      b.size += next->second.size;
      blocks_.erase(next);
    }
    if (it != blocks_.begin()) {
      auto prev = std::prev(it);
      if (!prev->second.allocated && prev->second.segment == b.segment) {
        free.erase({prev->second.size, prev->first});
        prev->second.size += b.size;
        blocks_.erase(it);
        free.insert({prev->second.size, prev->first});
        return;
      }
    }
    free.insert({b.size, addr});
  }

  const std::vector<SimSegment>& segments() const { return segments_; }
  const std::map<uint64_t, SimBlock>& blocks() const { return blocks_; }

 private:
  uint64_t next_addr_;
  std::function<void(const Event&)> emit_;
  std::vector<SimSegment> segments_;
  std::map<uint64_t, SimBlock> blocks_;
  std::map<std::pair<bool, int64_t>, std::set<std::pair<int64_t, uint64_t>>> free_;
};

struct Annotation {
  const char* stage;
  const char* name;
  int device;
  int64_t time_us;
};

/// Runs the training loop on one device until `budget` events were emitted.
void SimulateDevice(int device, uint64_t budget, uint64_t seed, size_t num_stacks, Allocator& a,
                    uint64_t& emitted, std::vector<Annotation>* notes) {
  std::mt19937_64 rng(seed * 7919 + static_cast<uint64_t>(device));
  const int64_t kMain = 0, kComm = 0x5a5a5a0 + device * 0x1000;
  int64_t now = 1'700'000'000'000'000 + device * 17;
  auto stack = [&](int phase, uint64_t site) {  // phase 0 fwd, 1 bwd, 2 optimizer
    return static_cast<uint32_t>((site * 3 + static_cast<uint64_t>(phase)) % num_stacks);
  };
  auto note = [&](const char* stage, const char* name) {
    if (notes) notes->push_back({stage, name, device, now});
  };
  const int kLayers = 24;
  std::vector<uint64_t> params, grads, state;
  for (int i = 0; i < kLayers * 4 && emitted < budget; ++i) {
    params.push_back(
        a.Alloc(int64_t(4096) * 4096 * 2 / (1 + i % 4), kMain, stack(0, 40 + i % 8), now));
  }
  for (int iter = 0; emitted < budget; ++iter) {
    now += 200 + static_cast<int64_t>(rng() % 1000);
    note("START", "## forward ##");
    std::vector<uint64_t> acts;
    for (int l = 0; l < kLayers && emitted < budget; ++l) {
      for (int op = 0; op < 8; ++op) {
        int64_t size =
            int64_t(8192) * 4096 * 2 / (1 + (op % 4) * 3) + static_cast<int64_t>(rng() % 4096);
        if (op % 3 == 2) size = 1024 + static_cast<int64_t>(rng() % 200000);  // small temporaries
        acts.push_back(a.Alloc(size, kMain, stack(0, static_cast<uint64_t>(l % 4 * 8 + op)), now));
        now += static_cast<int64_t>(rng() % 30);
        if (op % 4 == 3) {
          uint64_t tmp =
              a.Alloc(512 + static_cast<int64_t>(rng() % 65536), kMain, stack(0, 33 + op), now);
          a.Free(tmp, now);
        }
      }
    }
    note("END", "## forward ##");
    note("START", "## backward ##");
    for (int l = kLayers - 1; l >= 0 && emitted < budget; --l) {
      for (int op = 7; op >= 0 && !acts.empty(); --op) {
        uint64_t g =
            a.Alloc(int64_t(4096) * 4096 / (1 + op % 3) + static_cast<int64_t>(rng() % 512), kMain,
                    stack(1, static_cast<uint64_t>(op + 8 * (l % 2))), now);
        a.Free(acts.back(), now);
        acts.pop_back();
        a.Free(g, now);
      }
      if (iter == 0 && grads.size() < params.size()) {
        for (int k = 0; k < 4; ++k) {
          grads.push_back(
              a.Alloc(int64_t(4096) * 4096 * 2 / (1 + k), kMain, stack(1, 20 + k), now));
        }
      }
      if (l % 4 == 0) {  // gradient bucket all-reduce on the communication stream
        uint64_t bucket = a.Alloc(int64_t(25) << 20, kComm, stack(1, 30), now);
        now += 150 + static_cast<int64_t>(rng() % 300);
        a.Free(bucket, now);
      }
    }
    while (!acts.empty()) {
      a.Free(acts.back(), now);
      acts.pop_back();
    }
    note("END", "## backward ##");
    note("START", "Optimizer.step#AdamW.step");
    if (iter == 0) {
      for (size_t p = 0; p < params.size() * 2 && emitted < budget; ++p) {
        state.push_back(
            a.Alloc(int64_t(4096) * 4096 * 4 / (1 + p % 4), kMain, stack(2, 5 + p % 2), now));
      }
    }
    for (int k = 0; k < 16 && emitted < budget; ++k) {
      uint64_t tmp = a.Alloc(int64_t(4096) * 1024 * (1 + k % 5), kMain,
                             stack(2, static_cast<uint64_t>(k % 5)), now);
      a.Free(tmp, now);
    }
    note("END", "Optimizer.step#AdamW.step");
  }
}

}  // namespace

namespace {

/// Writes pickle values with the keys and stacks cached in memo slots.
class SnapshotPickler {
 public:
  SnapshotPickler(std::ostream& out, int protocol, const Stacks& stacks)
      : w(out, protocol),
        stacks_(stacks),
        frame_slots_(stacks.frames.size(), PickleWriter::kNoSlot),
        stack_slots_(stacks.tracebacks.size(), PickleWriter::kNoSlot) {}

  void Key(const char* k) {
    auto [it, inserted] = keys_.try_emplace(k, PickleWriter::kNoSlot);
    w.CachedStr(k, it->second);
  }
  void Stack(uint32_t id) {
    if (stack_slots_[id] != PickleWriter::kNoSlot) return w.Get(stack_slots_[id]);
    const std::vector<uint32_t>& tb = stacks_.tracebacks[id];
    stack_slots_[id] = w.BeginList(tb.size());
    for (uint32_t f : tb) {
      if (frame_slots_[f] != PickleWriter::kNoSlot) {
        w.Get(frame_slots_[f]);
        continue;
      }
      const FrameDef& fr = stacks_.frames[f];
      frame_slots_[f] = w.BeginDict(3);
      Key("name"), w.Str(fr.name);
      Key("filename"), w.Str(fr.filename);
      Key("line"), w.Int(fr.line);
      w.EndDict();
    }
    w.EndList();
  }
  void WriteEvent(const Event& e) {
    w.BeginDict(8);
    Key("action"), w.CachedStr(kActionNames[e.action], action_slots_[e.action]);
    Key("addr"), w.UInt(e.addr);
    Key("size"), w.Int(e.size);
    Key("stream"), w.Int(e.stream);
    Key("time_us"), w.Int(e.time_us);
    Key("compile_context"), w.Str("N/A");
    Key("user_metadata"), w.Str("");
    Key("frames"), Stack(e.stack);
    w.EndDict();
  }

  PickleWriter w;

 private:
  const Stacks& stacks_;
  std::vector<uint32_t> frame_slots_, stack_slots_;
  uint32_t action_slots_[4] = {PickleWriter::kNoSlot, PickleWriter::kNoSlot, PickleWriter::kNoSlot,
                               PickleWriter::kNoSlot};
  std::map<const char*, uint32_t> keys_;  // keyed by the literal's address: fast, and enough here
};

void WriteSegments(SnapshotPickler& p, const std::vector<std::unique_ptr<Allocator>>& devices) {
  PickleWriter& w = p.w;
  size_t total = 0;
  for (const auto& a : devices) total += a->segments().size();
  w.BeginList(total);
  for (size_t d = 0; d < devices.size(); ++d) {
    const Allocator& a = *devices[d];
    auto block = a.blocks().begin();
    for (const SimSegment& s : a.segments()) {
      std::vector<std::pair<uint64_t, const SimBlock*>> blocks;
      for (; block != a.blocks().end() && block->first < s.address + static_cast<uint64_t>(s.size);
           ++block) {
        blocks.push_back({block->first, &block->second});
      }
      int64_t allocated = 0, requested = 0;
      for (auto& [addr, b] : blocks) {
        if (b->allocated) allocated += b->size, requested += b->requested;
      }
      w.BeginDict(12);
      p.Key("device"), w.Int(static_cast<int64_t>(d));
      p.Key("address"), w.UInt(s.address);
      p.Key("total_size"), w.Int(s.size);
      p.Key("allocated_size"), w.Int(allocated);
      p.Key("active_size"), w.Int(allocated);
      p.Key("requested_size"), w.Int(requested);
      p.Key("stream"), w.Int(s.stream);
      p.Key("segment_type"), w.Str(s.small ? "small" : "large");
      p.Key("segment_pool_id");
      w.BeginTuple2();
      w.Int(0);
      w.Int(0);
      w.EndTuple2();
      p.Key("is_expandable"), w.Bool(false);
      p.Key("blocks");
      w.BeginList(blocks.size());
      for (auto& [addr, b] : blocks) {
        w.BeginDict(5);
        p.Key("address"), w.UInt(addr);
        p.Key("size"), w.Int(b->size);
        p.Key("requested_size"), w.Int(b->requested);
        p.Key("state"), w.Str(b->allocated ? "active_allocated" : "inactive");
        p.Key("frames");
        if (b->allocated) {
          p.Stack(b->stack);
        } else {
          w.BeginList(0);
          w.EndList();
        }
        w.EndDict();
      }
      w.EndList();
      p.Key("frames"), p.Stack(s.stack);
      w.EndDict();
    }
  }
  w.EndList();
}

void WriteSettings(SnapshotPickler& p) {
  PickleWriter& w = p.w;
  w.BeginDict(9);
  p.Key("PYTORCH_CUDA_ALLOC_CONF"), w.Str("");
  p.Key("max_split_size"), w.Int(-1);
  p.Key("garbage_collection_threshold"), w.Float(0.0);
  p.Key("expandable_segments"), w.Bool(false);
  p.Key("pinned_num_register_threads"), w.Int(1);
  p.Key("release_lock_on_cudamalloc"), w.Bool(false);
  p.Key("pinned_use_cuda_host_register"), w.Bool(false);
  p.Key("graph_capture_record_stream_reuse"), w.Bool(false);
  p.Key("roundup_power2_divisions");
  w.BeginDict(16);
  for (int i = 0; i < 16; ++i) w.Str(absl::StrCat(1 << i)), w.Int(0);
  w.EndDict();
  w.EndDict();
}

int Usage(const char* why) {
  std::cerr
      << "memsnap_gen: " << why << "\n"
      << "usage: memsnap_gen [--events N] [--seed S] [--devices D] [--protocol 2|4|5] -o FILE\n"
         "Writes a realistic PyTorch memory snapshot pickle with about N trace events\n"
         "(a training loop on a simulated caching allocator). Deterministic for a seed.\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  GenOptions o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--events")
      o.events = std::strtoull(value().c_str(), nullptr, 10);
    else if (a == "--seed")
      o.seed = std::strtoull(value().c_str(), nullptr, 10);
    else if (a == "--devices")
      o.devices = std::atoi(value().c_str());
    else if (a == "--protocol")
      o.protocol = std::atoi(value().c_str());
    else if (a == "-o" || a == "--output")
      o.output = value();
    else if (a == "-h" || a == "--help")
      return Usage("help") == 2 ? 0 : 0;
    else
      return Usage(("unknown argument " + a).c_str());
  }
  if (o.output.empty()) return Usage("missing -o FILE");
  if (o.devices < 1 || o.devices > 64) return Usage("--devices must be 1..64");
  if (o.protocol < 2 || o.protocol > 5) return Usage("--protocol must be 2..5");

  std::mt19937_64 rng(o.seed);
  Stacks stacks(rng);
  uint64_t budget = std::max<uint64_t>(1, o.events / static_cast<uint64_t>(o.devices));

  // Pass 1: the final allocator state and the annotations.
  std::vector<std::unique_ptr<Allocator>> final_state;
  std::vector<uint64_t> counts;
  std::vector<Annotation> notes;
  for (int d = 0; d < o.devices; ++d) {
    uint64_t n = 0;
    final_state.push_back(std::make_unique<Allocator>(d, [&n](const Event&) { ++n; }));
    SimulateDevice(d, budget, o.seed, stacks.tracebacks.size(), *final_state.back(), n, &notes);
    counts.push_back(n);
  }

  std::string tmp = o.output + ".tmp";
  std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
  if (!out) {
    std::cerr << "memsnap_gen: " << o.output << ": cannot open for writing\n";
    return 2;
  }
  SnapshotPickler p(out, o.protocol, stacks);
  p.w.BeginDict(4);
  p.Key("segments");
  WriteSegments(p, final_state);
  p.Key("device_traces");
  p.w.BeginList(static_cast<size_t>(o.devices));
  for (int d = 0; d < o.devices; ++d) {
    // Pass 2: the same simulation again, streaming its events.
    uint64_t n = 0;
    p.w.BeginList(counts[d]);
    Allocator a(d, [&](const Event& e) { ++n, p.WriteEvent(e); });
    SimulateDevice(d, budget, o.seed, stacks.tracebacks.size(), a, n, nullptr);
    p.w.EndList();
  }
  p.w.EndList();
  p.Key("allocator_settings");
  WriteSettings(p);
  p.Key("external_annotations");
  p.w.BeginList(notes.size());
  for (const Annotation& n : notes) {
    p.w.BeginDict(4);
    p.Key("stage"), p.w.Str(n.stage);
    p.Key("name"), p.w.Str(n.name);
    p.Key("device"), p.w.Int(n.device);
    p.Key("time_us"), p.w.Int(n.time_us);
    p.w.EndDict();
  }
  p.w.EndList();
  p.w.EndDict();
  absl::Status st = p.w.Finish();
  out.close();
  if (!st.ok() || !out) {
    std::cerr << "memsnap_gen: " << o.output << ": write failed\n";
    std::remove(tmp.c_str());
    return 2;
  }
  std::rename(tmp.c_str(), o.output.c_str());
  uint64_t total = 0;
  for (uint64_t c : counts) total += c;
  std::cerr << "memsnap_gen: wrote " << o.output << ": " << total << " trace events, "
            << p.w.bytes_written() << " bytes\n";
  return 0;
}
