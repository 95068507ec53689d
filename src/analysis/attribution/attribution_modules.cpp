// Modules and step phases: the chain of `forward` calls that made an allocation, and which phase of
// a training step it belongs to (docs/attribution.md, "Modules" and "Phases of a step").
#include <algorithm>
#include <array>

#include "memsnap/analysis/attribution/attribution.h"

namespace memsnap::analysis {

namespace {

constexpr std::array<std::string_view, kNumStepPhases> kStepPhaseNames = {"forward", "backward",
                                                                          "optimizer", "other"};

// The longest common prefix of `chain` and `other`, in place.
void KeepCommonPrefix(std::vector<std::string>& chain, const std::vector<std::string>& other) {
  size_t n = 0;
  while (n < chain.size() && n < other.size() && chain[n] == other[n]) ++n;
  chain.resize(n);
}

}  // namespace

std::string_view StepPhaseName(StepPhase p) { return kStepPhaseNames[static_cast<size_t>(p)]; }

std::optional<ModuleMetadata> ParseModuleMetadata(std::string_view text) {
  // "NAME (Type) phase": split at the last space (the phase), then at " (" before it.
  const size_t space = text.rfind(' ');
  if (space == std::string_view::npos) return std::nullopt;
  ModuleMetadata m;
  m.phase = text.substr(space + 1);
  std::string_view head = text.substr(0, space);
  if (head.size() < 2 || head.back() != ')') return std::nullopt;
  const size_t open = head.rfind(" (");
  if (open == std::string_view::npos) return std::nullopt;
  m.name = head.substr(0, open);
  m.type = head.substr(open + 2, head.size() - open - 3);
  const auto all_of = [](std::string_view s, auto ok) {
    return !s.empty() && std::all_of(s.begin(), s.end(), ok);
  };
  const auto lower = [](char c) { return (c >= 'a' && c <= 'z') || c == '_'; };
  const auto word = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '.';
  };
  const auto name_char = [](char c) {
    return c != ' ' && c != '(' && c != ')' && c != '\n' && c != '\t' && c != ';';
  };
  if (!all_of(m.phase, lower) || !all_of(m.type, word) || !all_of(m.name, name_char)) {
    return std::nullopt;
  }
  // Every part of the qualified name is non-empty: no leading, trailing or doubled '.'.
  if (m.name.front() == '.' || m.name.back() == '.' ||
      m.name.find("..") != std::string_view::npos) {
    return std::nullopt;
  }
  return m;
}

StepPhase StepPhaseOf(Phase p) {
  switch (p) {
    case Phase::kForward:
      return StepPhase::kForward;
    case Phase::kBackward:
      return StepPhase::kBackward;
    case Phase::kOptimizer:
      return StepPhase::kOptimizer;
    default:
      return StepPhase::kOther;
  }
}

std::vector<std::string> Attribution::ForwardFrames(std::span<const FrameId> frames) {
  std::vector<std::string> out;
  // Stacks are innermost first; the chain reads from the outermost module down.
  for (auto it = frames.rbegin(); it != frames.rend(); ++it) {
    if (ClassOf(*it) != FrameClass::kPython) continue;
    const Frame& f = snap_.frames.Get(*it);
    if (snap_.strings.Get(f.name) != "forward") continue;
    if (File(f.filename).compiled) continue;  // torch.compile's generated code is no module
    if (filter_ != nullptr && filter_->has_regexes() && !filter_->KeepByRegex(*it)) continue;
    out.push_back(PythonFrameText(*it));
  }
  return out;
}

const std::vector<std::string>& Attribution::ModuleChain(StackId stack) {
  static const std::vector<std::string> kNone;
  if (!stack.valid() || stack.v >= snap_.stacks.size()) return kNone;
  if (chain_slot_.empty()) chain_slot_.assign(snap_.stacks.size(), -1);
  int32_t& slot = chain_slot_[stack.v];
  if (slot >= 0) return chains_[static_cast<size_t>(slot)];
  std::vector<std::string> chain = ForwardFrames(snap_.stacks.Get(stack));
  const SiteInfo& site = Site(stack);
  if (chain.empty() && site.kind == SiteKind::kBackward && !site.forward_lines.empty()) {
    if (!line_chain_done_) {
      line_chain_done_ = true;
      // Every forward stack's owner line -> the chain all such stacks share. A line reached
      // through two modules (a helper called from attention and from the MLP) keeps their
      // common outer part.
      for (uint32_t i = 0; i < snap_.stacks.size(); ++i) {
        const StackId id(i);
        if (PhaseOf(id) != Phase::kForward) continue;
        const SiteInfo& s = Site(id);
        if (s.kind != SiteKind::kPython) continue;
        std::vector<std::string> c = ForwardFrames(snap_.stacks.Get(id));
        if (c.empty()) continue;
        auto [it, inserted] = line_chain_.try_emplace(s.owner, c);
        if (!inserted) KeepCommonPrefix(it->second, c);
      }
    }
    bool first = true;
    for (const std::string& line : site.forward_lines) {
      auto it = line_chain_.find(line);
      if (it == line_chain_.end()) continue;
      if (first) {
        chain = it->second;
        first = false;
      } else {
        KeepCommonPrefix(chain, it->second);
      }
    }
  }
  slot = static_cast<int32_t>(chains_.size());
  chains_.push_back(std::move(chain));
  return chains_.back();
}

}  // namespace memsnap::analysis
