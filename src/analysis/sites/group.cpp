// Grouping of live memory by site. Rows are cached per StackId, so the per-lifetime work is a
// lookup and a category; the text of a site is built once per distinct stack (attribution.h).
#include "memsnap/analysis/sites/group.h"

#include <algorithm>
#include <numeric>
#include <optional>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "memsnap/util/status_macros.h"
#include "memsnap/util/strings.h"

namespace memsnap::analysis {

// Innermost annotation over time for one device: boundaries where it changes.
struct GroupContext::AnnotationIndex {
  std::vector<int64_t> times;
  std::vector<StrId> names;  // invalid = none
  StrId At(int64_t t) const {
    auto it = std::upper_bound(times.begin(), times.end(), t);
    if (it == times.begin()) return StrId();
    return names[(it - times.begin()) - 1];
  }
};

namespace {

GroupContext::AnnotationIndex BuildAnnotationIndex(const Snapshot& snap, int32_t device) {
  std::vector<uint32_t> idx;
  for (uint32_t i = 0; i < snap.annotations.size(); ++i) {
    const Annotation& a = snap.annotations[i];
    if (a.device == device && a.time_us != kNoTime) idx.push_back(i);
  }
  std::stable_sort(idx.begin(), idx.end(), [&](uint32_t a, uint32_t b) {
    return snap.annotations[a].time_us < snap.annotations[b].time_us;
  });
  GroupContext::AnnotationIndex out;
  std::vector<StrId> stack;
  for (uint32_t i : idx) {
    const Annotation& a = snap.annotations[i];
    std::string_view stage = a.stage.valid() ? snap.strings.Get(a.stage) : "";
    if (stage == "START") {
      stack.push_back(a.name);
    } else if (stage == "END") {
      // Pop the innermost range of that name (and anything left open inside it).
      auto it = std::find(stack.rbegin(), stack.rend(), a.name);
      if (it == stack.rend()) continue;
      stack.erase(std::next(it).base(), stack.end());
    } else {
      continue;
    }
    StrId cur = stack.empty() ? StrId() : stack.back();
    if (!out.times.empty() && out.times.back() == a.time_us) {
      out.names.back() = cur;
    } else {
      out.times.push_back(a.time_us);
      out.names.push_back(cur);
    }
  }
  return out;
}

std::string Sanitize(std::string s) {
  for (char& c : s) {
    if (c == ';' || c == '\n' || c == '\r') c = ':';
  }
  return s;
}

}  // namespace

std::string_view GroupByName(GroupBy by) {
  switch (by) {
    case GroupBy::kSite:
      return "site";
    case GroupBy::kStack:
      return "stack";
    case GroupBy::kFunction:
      return "function";
    case GroupBy::kFile:
      return "file";
    case GroupBy::kFrame:
      return "frame";
    case GroupBy::kAnnotation:
      return "annotation";
    case GroupBy::kCategory:
      return "category";
    case GroupBy::kModule:
      return "module";
    case GroupBy::kPhase:
      return "phase";
    case GroupBy::kMetadata:
      return "metadata";
    case GroupBy::kCompileContext:
      return "compile_context";
  }
  return "?";
}

absl::StatusOr<GroupBy> ParseGroupBy(std::string_view text) {
  for (GroupBy by : {GroupBy::kSite, GroupBy::kStack, GroupBy::kFunction, GroupBy::kFile,
                     GroupBy::kFrame, GroupBy::kAnnotation, GroupBy::kCategory, GroupBy::kModule,
                     GroupBy::kPhase, GroupBy::kMetadata, GroupBy::kCompileContext}) {
    if (GroupByName(by) == text) return by;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("--by ", Sv(text),
                   ": expected one of site, stack, function, file, frame, annotation, category, "
                   "module, phase, metadata, compile_context"));
}

std::string FrameKeyText(const Snapshot& snap, FrameId id, bool ignore_lines) {
  // The path as a person reads it ("proj/scripts/../model.py" is "proj/model.py", NormalPath):
  // the folded stacks, the report's frames and the rows' keys show the file the frame names, and
  // one file reached by two spellings is one frame.
  if (!ignore_lines) return Sanitize(DisplayFrameText(snap, id));
  const Frame& f = snap.frames.Get(id);
  return Sanitize(
      absl::StrCat(NormalPath(snap.strings.Get(f.filename)), ":", Sv(snap.strings.Get(f.name))));
}

bool GroupRow::mixed() const {
  int kinds = 0;
  for (int64_t b : category_bytes) kinds += b > 0 ? 1 : 0;
  return kinds > 1;
}

CategoryRule GroupRow::rule() const {
  size_t best = static_cast<size_t>(CategoryRule::kNoEvidence);
  int64_t most = 0;
  for (size_t r = 0; r < rule_bytes.size(); ++r) {
    if (rule_bytes[r] > most) {
      most = rule_bytes[r];
      best = r;
    }
  }
  return static_cast<CategoryRule>(best);
}

namespace {

// A row named by its key alone (synthetic rows, annotations, categories).
GroupRow PlainRow(std::string key, bool synthetic) {
  GroupRow r;
  r.key = std::move(key);
  r.synthetic = synthetic;
  r.info.kind = SiteKind::kNoStack;
  r.info.key = r.key;
  r.info.owner = r.key;
  return r;
}

}  // namespace

GroupContext::GroupContext(const Snapshot& snap, const GroupOptions& options, FrameFilter filter)
    : snap_(snap),
      options_(options),
      filter_(std::move(filter)),
      attribution_(
          snap, &filter_,
          AttributionOptions{options.ignore_lines, options.unlined_keys, options.categories}),
      categorizers_(attribution_) {
  if (options_.by == GroupBy::kModule) {
    for (const EventExtra& x : snap_.event_extras) {
      if (!x.user_metadata.valid()) continue;
      const std::optional<ModuleMetadata> m =
          ParseModuleMetadata(snap_.strings.Get(x.user_metadata));
      if (m) module_types_.try_emplace(std::string(m->name), std::string(m->type));
    }
  }
}

const absl::flat_hash_map<uint32_t, StackId>& GroupContext::BackwardForward(
    const DeviceTimeline& dt) {
  auto [found, inserted] = backward_forward_.try_emplace(dt.device);
  absl::flat_hash_map<uint32_t, StackId>& pairs = found->second;
  if (!inserted) return pairs;
  // docs/attribution.md, "Modules": the engine runs a pass's nodes in the reverse of the order
  // the forward pass made them, so the backward allocations of the nodes of one operator pair,
  // from the end, with that operator's forward calls of the same pass: the j-th of m
  // allocations with the call (n-1) - j*n/m of n. A pass is the forward calls since the last
  // backward allocation, and the backward allocations that follow them.
  struct Pass {
    absl::flat_hash_map<std::string, std::vector<StackId>> calls;      // node base -> stacks
    absl::flat_hash_map<std::string, std::vector<uint32_t>> backward;  // node base -> events
    std::vector<std::pair<uint32_t, int64_t>> accumulate;  // AccumulateGrad: event, size
  };
  std::vector<Pass> passes(1);
  bool in_backward = false;
  for (uint32_t i = 0; i < dt.num_events; ++i) {
    const TraceEvent& e = snap_.events[dt.event_begin + i];
    if (e.action != Action::kAlloc || !e.stack.valid()) continue;
    if (const std::string* base = attribution_.ForwardKernelBase(e.stack)) {
      if (in_backward) passes.emplace_back();
      in_backward = false;
      passes.back().calls[*base].push_back(e.stack);
      continue;
    }
    const SiteInfo& site = attribution_.Site(e.stack);
    if (site.kind != SiteKind::kBackward) continue;
    in_backward = true;
    if (site.accumulate_grad) {
      passes.back().accumulate.emplace_back(i, e.size);
    } else if (std::string base = NodeBase(site.node); !base.empty()) {
      passes.back().backward[base].push_back(i);
    }
  }
  for (const Pass& pass : passes) {
    for (const auto& [base, events] : pass.backward) {
      auto calls = pass.calls.find(base);
      if (calls == pass.calls.end()) continue;
      const uint64_t n = calls->second.size(), m = events.size();
      for (uint64_t j = 0; j < m; ++j) {
        pairs[events[j]] = calls->second[n - 1 - j * n / m];
      }
    }
    // AccumulateGrad copies a gradient another node made: the latest paired backward allocation
    // of the same size before it (the gradient it takes) names its module.
    std::vector<std::pair<uint32_t, int64_t>> paired;
    for (const auto& [base, events] : pass.backward) {
      for (uint32_t ev : events) {
        if (pairs.contains(ev)) paired.emplace_back(ev, snap_.events[dt.event_begin + ev].size);
      }
    }
    std::sort(paired.begin(), paired.end());
    for (const auto& [ev, size] : pass.accumulate) {
      for (auto it = std::lower_bound(paired.begin(), paired.end(), std::make_pair(ev, int64_t{0}));
           it != paired.begin();) {
        --it;
        if (it->second == size) {
          pairs[ev] = pairs[it->first];
          break;
        }
      }
    }
  }
  return pairs;
}

std::vector<std::string> GroupContext::MetadataModulePath(const DeviceTimeline& dt,
                                                          const BlockLifetime& lt) {
  std::vector<std::string> parts;
  if (module_types_.empty()) return parts;
  const EventExtra* x = AllocExtraOf(snap_, dt, lt);
  if (x == nullptr || !x->user_metadata.valid()) return parts;
  const std::optional<ModuleMetadata> m = ParseModuleMetadata(snap_.strings.Get(x->user_metadata));
  if (!m) return parts;
  // "model.layers.3.attn" is the node model > model.layers > model.layers.3 > itself.
  size_t end = 0;
  while (end != std::string_view::npos) {
    end = m->name.find('.', end + 1);
    const std::string prefix(m->name.substr(0, end));
    auto it = module_types_.find(prefix);
    parts.push_back(it == module_types_.end() ? prefix
                                              : absl::StrCat(prefix, " (", it->second, ")"));
  }
  return parts;
}

GroupContext::~GroupContext() = default;

absl::StatusOr<std::unique_ptr<GroupContext>> GroupContext::Create(const Snapshot& snap,
                                                                   const GroupOptions& options) {
  auto filter = FrameFilter::Create(snap, options.filter);
  if (!filter.ok()) return filter.status();
  return std::unique_ptr<GroupContext>(new GroupContext(snap, options, std::move(*filter)));
}

std::string GroupContext::AnnotationAt(const DeviceTimeline& dt, const BlockLifetime& lt) {
  auto& index = annotations_[dt.device];
  if (!index) index = std::make_unique<AnnotationIndex>(BuildAnnotationIndex(snap_, dt.device));
  int64_t t = dt.TimeOf(snap_, lt.alloc_event);
  StrId name = t == kNoTime ? StrId() : index->At(t);
  return name.valid() ? Sanitize(std::string(snap_.strings.Get(name))) : std::string();
}

const EventExtra* AllocExtraOf(const Snapshot& snap, const DeviceTimeline& dt,
                               const BlockLifetime& lt) {
  if (snap.event_extras.empty()) return nullptr;
  const std::optional<uint32_t> e = lt.alloc_event.index();
  if (!e || *e >= dt.num_events) return nullptr;
  return snap.ExtraOf(dt.event_begin + *e);
}

GroupRow GroupContext::RowFor(const DeviceTimeline& dt, const BlockLifetime& lt) {
  // A block's kind is decided once (Categorize), for every command: one allocated before the
  // trace is counted in its kind here too, not in a row of its own.
  if (options_.by == GroupBy::kCategory) {
    return PlainRow(std::string(options_.categories.Name(Categorize(dt, lt).category)), false);
  }
  if (options_.by == GroupBy::kPhase) {
    // Decided once, in analysis, like the category: memory from before the trace has no phase.
    const std::optional<StepPhase> phase = categorizers_.For(dt).PhaseOf(lt);
    if (phase) return PlainRow(std::string(StepPhaseName(*phase)), false);
    // Memory from before the trace has no phase of the trace's. It is named as every other
    // grouping names it: what its free shows, or why it has no stack; a block the trace never
    // saw but whose own frames the file kept is in the phase those frames show.
    if (lt.cls == LifetimeClass::kPreWindow) {
      return PlainRow(std::string(PreWindowRow(attribution_.Site(lt.stack))), true);
    }
    const Phase own = attribution_.PhaseOf(lt.stack);
    if (own != Phase::kNone) return PlainRow(std::string(StepPhaseName(StepPhaseOf(own))), false);
    return PlainRow(std::string(NoStackRow(snap_, dt, lt)), true);
  }
  if (lt.cls == LifetimeClass::kPreWindow) {
    // Its stack is its free's: the row says what that free shows it was.
    return PlainRow(std::string(PreWindowRow(attribution_.Site(lt.stack))), true);
  }
  if (lt.cls == LifetimeClass::kGhost &&
      (options_.by == GroupBy::kAnnotation || options_.by == GroupBy::kMetadata ||
       options_.by == GroupBy::kCompileContext) &&
      attribution_.Site(lt.stack).kind == SiteKind::kNoStack) {
    // Older than the trace and without frames: the row every grouping gives it.
    return PlainRow(std::string(NoStackRow(snap_, dt, lt)), true);
  }
  switch (options_.by) {
    case GroupBy::kAnnotation: {
      std::string name = AnnotationAt(dt, lt);
      return name.empty() ? PlainRow(std::string(kNoAnnotationRow), true)
                          : PlainRow(std::move(name), false);
    }
    case GroupBy::kMetadata:
    case GroupBy::kCompileContext: {
      // What the program said about the allocation's entry (torch.cuda.memory's
      // _set_memory_metadata; the torch.compile region it ran in).
      const bool metadata = options_.by == GroupBy::kMetadata;
      const EventExtra* x = AllocExtraOf(snap_, dt, lt);
      const StrId id = x == nullptr ? StrId() : metadata ? x->user_metadata : x->compile_context;
      if (!id.valid()) {
        return PlainRow(std::string(metadata ? kNoMetadataRow : kNoCompileContextRow), true);
      }
      return PlainRow(Sanitize(std::string(snap_.strings.Get(id))), false);
    }
    default:
      break;
  }
  if (options_.by == GroupBy::kModule) {
    // What the program recorded (memsnap.record(model=...)) outranks what the frames suggest.
    std::vector<std::string> path = MetadataModulePath(dt, lt);
    if (!path.empty()) {
      if (options_.depth > 0 && path.size() > static_cast<size_t>(options_.depth)) {
        path.resize(static_cast<size_t>(options_.depth));
      }
      for (std::string& p : path) p = Sanitize(std::move(p));
      GroupRow m = PlainRow(absl::StrJoin(path, std::string(1, kModulePathSeparator)), false);
      m.info.owner = absl::StrJoin(path, " > ");
      return m;
    }
  }
  const SiteInfo& site = attribution_.Site(lt.stack);
  if (site.kind == SiteKind::kNoStack) {
    // Older than the trace: what the trace shows it to be, when it shows it.
    const std::string_view evidence =
        lt.cls == LifetimeClass::kGhost ? PreTraceEvidenceRow(Categorize(dt, lt).rule) : "";
    if (!evidence.empty()) return PlainRow(std::string(evidence), true);
    return PlainRow(std::string(NoStackRow(snap_, dt, lt)), true);
  }
  if (options_.by == GroupBy::kModule) {
    const std::vector<std::string>* found = nullptr;
    if (site.kind == SiteKind::kBackward && lt.alloc_event.seen()) {
      // The forward call whose node made it, by the order of the pass (BackwardForward).
      const auto& pairs = BackwardForward(dt);
      auto it = pairs.find(*lt.alloc_event.index());
      if (it != pairs.end()) found = &attribution_.ModuleChain(it->second);
    }
    const std::vector<std::string>& chain =
        found != nullptr ? *found : attribution_.ModuleChain(lt.stack);
    if (chain.empty()) {
      return PlainRow(absl::StrCat("[no module: ", Sv(PhaseName(site.phase)), "]"), true);
    }
    const size_t n =
        options_.depth > 0 ? std::min<size_t>(options_.depth, chain.size()) : chain.size();
    std::vector<std::string> parts;
    parts.reserve(n);
    for (size_t i = 0; i < n; ++i) parts.push_back(Sanitize(chain[i]));
    GroupRow m = PlainRow(absl::StrJoin(parts, std::string(1, kModulePathSeparator)), false);
    m.info.owner = absl::StrJoin(parts, " > ");  // flat tables (diff): the whole chain
    return m;
  }
  const std::vector<FrameId>& fr = filter_.Filtered(lt.stack);
  std::vector<std::string> texts;
  texts.reserve(fr.size());
  for (FrameId id : fr) texts.push_back(FrameKeyText(snap_, id, options_.ignore_lines));
  GroupRow r;
  r.synthetic = site.synthetic();
  if (fr.empty() && filter_.has_regexes()) return PlainRow(std::string(kAllFilteredRow), true);
  switch (options_.by) {
    case GroupBy::kSite:
      r.key = site.key;
      r.info = site;
      break;
    case GroupBy::kStack: {
      if (fr.empty()) return PlainRow(std::string(kAllFilteredRow), true);
      size_t n = options_.depth > 0 ? std::min<size_t>(options_.depth, texts.size()) : texts.size();
      texts.resize(n);
      r.key = absl::StrJoin(texts.rbegin(), texts.rend(), ";");  // folded form: root first
      r.info = site;
      r.info.key = r.key;          // one row per stack: two stacks of one site get distinct labels
      r.info.unlined_key.clear();  // moved sites are paired by site only
      break;
    }
    default: {
      // The frame that owns the site: its function, file or whole text.
      std::string owner = site.owner;
      std::string key = owner;
      if (site.kind == SiteKind::kPython) {
        const FrameTextParts parts = SplitFrameText(owner);
        if (options_.by == GroupBy::kFunction) key = std::string(parts.function);
        if (options_.by == GroupBy::kFile) key = std::string(parts.file);
      }
      GroupRow p = PlainRow(Sanitize(std::move(key)), site.synthetic());
      p.frames = std::move(texts);
      return p;
    }
  }
  r.frames = std::move(texts);
  return r;
}

std::string_view NoStackRow(const Snapshot& snap, const DeviceTimeline& dt,
                            const BlockLifetime& lt) {
  if (lt.cls != LifetimeClass::kGhost) return kTracedNoStackRow;
  // A ghost's frames are the block's own, kept however old the trace window is: without them, in
  // a file that records stacks, the block is older than the recording.
  return dt.num_events > 0 && snap.frames.size() > 0 ? kBeforeRecordingRow : kNoStackRow;
}

SiteLabels::SiteLabels(Attribution& attribution) : attribution_(attribution) {
  const std::string_view pre_rows[] = {
      kPreWindowRow,         kPreWindowZeroGradRow,  kPreWindowAccumulateGradRow,
      kPreWindowBackwardRow, kPreWindowOptimizerRow, kPreWindowKvCacheRow,
      kPreWindowAutocastRow};
  for (size_t i = 0; i < pre_window_.size(); ++i) {
    pre_window_[i].key = pre_window_[i].owner = std::string(pre_rows[i]);
  }
  const std::string_view rows[] = {kBeforeRecordingRow, kTracedNoStackRow, kNoStackRow};
  for (size_t i = 0; i < no_stack_.size(); ++i) {
    no_stack_[i].key = no_stack_[i].owner = std::string(rows[i]);
  }
  const std::string_view evidence[] = {kBeforeRecordingGradientRow, kBeforeRecordingOptimizerRow};
  for (size_t i = 0; i < evidence_.size(); ++i) {
    evidence_[i].key = evidence_[i].owner = std::string(evidence[i]);
  }
}

size_t SiteLabels::Add(const DeviceTimeline& dt, const BlockLifetime& lt, CategoryRule rule) {
  const SiteInfo* found = &attribution_.Site(lt.stack);
  // Memory older than the trace whose rule says what the trace showed of it (as RowFor names it).
  if (const std::string_view row = PreTraceEvidenceRow(rule);
      !row.empty() && lt.cls == LifetimeClass::kGhost && found->kind == SiteKind::kNoStack) {
    for (const SiteInfo& s : evidence_) {
      if (s.key == row) return Insert(s);
    }
  }
  if (lt.cls == LifetimeClass::kPreWindow) {
    const std::string_view row = PreWindowRow(*found);
    for (const SiteInfo& s : pre_window_) {
      if (s.key == row) found = &s;
    }
  }
  if (found->kind == SiteKind::kNoStack && lt.cls != LifetimeClass::kPreWindow) {
    const std::string_view row = NoStackRow(attribution_.snapshot(), dt, lt);
    for (const SiteInfo& s : no_stack_) {
      if (s.key == row) found = &s;
    }
  }
  return Insert(*found);
}

size_t SiteLabels::Insert(const SiteInfo& site) {
  auto [it, inserted] = index_.try_emplace(site.key, sites_.size());
  if (inserted) sites_.push_back(&site);
  return it->second;
}

void SiteLabels::Finish() { labels_ = DistinctSiteLabels(sites_); }

void AccumulateGroups(const DeviceTimeline& dt, const std::vector<uint32_t>& lifetimes,
                      GroupContext& context, std::vector<GroupRow>& rows) {
  absl::flat_hash_map<std::string, uint32_t> by_key;
  for (uint32_t i = 0; i < rows.size(); ++i) by_key.emplace(rows[i].key, i);
  AccumulateGroups(dt, lifetimes, context, rows, by_key);
}

void AccumulateGroups(const DeviceTimeline& dt, const std::vector<uint32_t>& lifetimes,
                      GroupContext& context, std::vector<GroupRow>& rows,
                      absl::flat_hash_map<std::string, uint32_t>& by_key) {
  // RowCacheKey (stack, pre-window, ghost, a row-naming rule) -> row, when the key depends on
  // nothing else.
  absl::flat_hash_map<uint64_t, uint32_t> by_stack;
  const bool stack_keyed = context.stack_keyed();
  for (uint32_t li : lifetimes) {
    const BlockLifetime& lt = dt.blocks[li];
    const CategoryVerdict verdict = context.Categorize(dt, lt);
    const uint64_t stack_key = RowCacheKey(lt, verdict.rule);
    uint32_t row = 0;
    auto cached = stack_keyed ? by_stack.find(stack_key) : by_stack.end();
    if (cached != by_stack.end()) {
      row = cached->second;
    } else {
      GroupRow fresh = context.RowFor(dt, lt);
      auto [it, inserted] = by_key.emplace(fresh.key, static_cast<uint32_t>(rows.size()));
      if (inserted) rows.push_back(std::move(fresh));
      row = it->second;
      if (stack_keyed) by_stack.emplace(stack_key, row);
    }
    GroupRow& r = rows[row];
    ++r.count;
    r.bytes += lt.requested_size;
    r.rounded_bytes += lt.rounded_size;
    r.category_bytes[static_cast<size_t>(verdict.category)] += lt.requested_size;
    r.rule_bytes[static_cast<size_t>(verdict.rule)] += lt.requested_size;
  }
}

void SortAndMergeRows(std::vector<GroupRow>& rows) {
  // Sorted by index, each row moved once: a row is a large record, and 250,000 of them moved
  // about by two sorts cost more than the sorts (issue 54). Equal keys keep the first row's info.
  std::vector<uint32_t> order(rows.size());
  std::iota(order.begin(), order.end(), 0u);
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    const int c = rows[a].key.compare(rows[b].key);
    return c != 0 ? c < 0 : a < b;
  });
  std::vector<GroupRow> merged;
  merged.reserve(rows.size());
  for (uint32_t i : order) {
    GroupRow& r = rows[i];
    if (!merged.empty() && merged.back().key == r.key) {
      GroupRow& m = merged.back();
      m.count += r.count;
      m.bytes += r.bytes;
      m.rounded_bytes += r.rounded_bytes;
      for (int c = 0; c < kMaxCategories; ++c) m.category_bytes[c] += r.category_bytes[c];
      for (int c = 0; c < kNumCategoryRules; ++c) m.rule_bytes[c] += r.rule_bytes[c];
    } else {
      merged.push_back(std::move(r));
    }
  }
  order.resize(merged.size());
  std::iota(order.begin(), order.end(), 0u);
  std::sort(order.begin(), order.end(), [&](uint32_t x, uint32_t y) {
    const GroupRow &a = merged[x], &b = merged[y];
    if (a.bytes != b.bytes) return a.bytes > b.bytes;
    if (a.count != b.count) return a.count > b.count;
    return a.key < b.key;
  });
  rows.clear();
  rows.reserve(merged.size());
  for (uint32_t i : order) rows.push_back(std::move(merged[i]));
}

void LabelRows(std::vector<GroupRow>& rows) {
  std::vector<const SiteInfo*> infos;
  infos.reserve(rows.size());
  for (const GroupRow& r : rows) infos.push_back(&r.info);
  std::vector<SiteLabel> labels = DistinctSiteLabels(infos);
  for (size_t i = 0; i < rows.size(); ++i) {
    rows[i].site = labels[i].text;
    rows[i].label = std::move(labels[i]);
  }
}

void LabelTopRows(std::vector<GroupRow>& rows, size_t top) {
  if (top >= rows.size()) return LabelRows(rows);
  std::vector<std::string> starts(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) starts[i] = DistinctLabelStart(rows[i].info);
  absl::flat_hash_set<std::string_view> wanted;
  for (size_t i = 0; i < top; ++i) wanted.insert(starts[i]);
  std::vector<size_t> subset;
  std::vector<const SiteInfo*> infos;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (!wanted.contains(starts[i])) continue;
    subset.push_back(i);
    infos.push_back(&rows[i].info);
  }
  std::vector<SiteLabel> labels = DistinctSiteLabels(infos);
  for (size_t k = 0; k < subset.size(); ++k) {
    rows[subset[k]].site = labels[k].text;
    rows[subset[k]].label = std::move(labels[k]);
  }
}

absl::StatusOr<GroupReport> GroupLive(GroupContext& context, const Timeline& timeline,
                                      const Moment& moment) {
  const Snapshot& snap = context.snapshot();
  GroupReport report;
  report.options = context.options();
  report.moment = moment;
  for (const DeviceTimeline& dt : timeline.devices) {
    DeviceMoment dm;
    dm.device = dt.device;
    dm.event = ResolveMoment(snap, dt, moment);
    if (dt.kept == KeepLifetimes::kNone ||
        (dt.kept == KeepLifetimes::kLiveAt && dt.kept_event != dm.event)) {
      return absl::InternalError(absl::StrCat("device ", dt.device,
                                              ": the timeline did not keep the lifetimes live at ",
                                              DescribeEvent(snap, dt, dm.event)));
    }
    dm.time_us = dt.TimeOf(snap, dm.event);
    dm.has_trace = dt.num_events > 0 && dt.RecordsMemory();
    if (dt.has_time) dm.start_time_us = dt.TimeOf(snap, TimelinePoint::After(0));
    // `top` builds its timeline without the curve: the moment is one of the points it holds.
    std::optional<int64_t> live_bytes = dt.FindLive(dm.event);
    if (!live_bytes) {
      return absl::InternalError(absl::StrCat("device ", dt.device,
                                              ": the timeline holds no live bytes at ",
                                              DescribeEvent(snap, dt, dm.event)));
    }
    dm.live_bytes = *live_bytes;
    report.devices.push_back(dm);
    std::vector<uint32_t> live = LiveBlocksAt(dt, dm.event);
    AccumulateGroups(dt, live, context, report.rows);
  }
  SortAndMergeRows(report.rows);
  LabelRows(report.rows);
  for (const GroupRow& r : report.rows) {
    report.total_bytes += r.bytes;
    report.total_rounded_bytes += r.rounded_bytes;
    report.total_count += r.count;
    for (int c = 0; c < kMaxCategories; ++c) report.category_bytes[c] += r.category_bytes[c];
  }
  if (report.options.by == GroupBy::kModule) report.rows = ModuleTree(std::move(report.rows));
  return report;
}

absl::StatusOr<GroupReport> GroupLive(const Snapshot& snap, const Timeline& timeline,
                                      const Moment& moment, const GroupOptions& options) {
  auto context = GroupContext::Create(snap, options);
  if (!context.ok()) return context.status();
  return GroupLive(**context, timeline, moment);
}

void CollapseTail(std::vector<GroupRow>& rows, size_t top) {
  if (rows.size() <= top) return;
  GroupRow others = PlainRow(absl::StrCat("[", rows.size() - top, " others]"), true);
  for (size_t i = top; i < rows.size(); ++i) {
    others.count += rows[i].count;
    others.bytes += rows[i].bytes;
    others.rounded_bytes += rows[i].rounded_bytes;
    for (int c = 0; c < kMaxCategories; ++c) others.category_bytes[c] += rows[i].category_bytes[c];
    for (int c = 0; c < kNumCategoryRules; ++c) others.rule_bytes[c] += rows[i].rule_bytes[c];
  }
  others.site = others.key;
  rows.resize(top);
  rows.push_back(std::move(others));
}

namespace {

void AddFigures(GroupRow& to, const GroupRow& from) {
  to.count += from.count;
  to.bytes += from.bytes;
  to.rounded_bytes += from.rounded_bytes;
  for (int c = 0; c < kMaxCategories; ++c) to.category_bytes[c] += from.category_bytes[c];
  for (int c = 0; c < kNumCategoryRules; ++c) to.rule_bytes[c] += from.rule_bytes[c];
}

// A tree of rows: children by index, roots under the pseudo-node kRoot.
struct RowTree {
  static constexpr size_t kRoot = SIZE_MAX;
  std::vector<GroupRow> rows;
  std::vector<std::vector<size_t>> children;
  std::vector<size_t> roots;
  std::vector<uint8_t> folded;  // an "[N others]" row: last among its siblings
  std::vector<size_t>& ChildrenOf(size_t parent) {
    return parent == kRoot ? roots : children[parent];
  }
  size_t Add(GroupRow row, size_t parent) {
    rows.push_back(std::move(row));
    children.emplace_back();
    folded.push_back(0);
    ChildrenOf(parent).push_back(rows.size() - 1);
    return rows.size() - 1;
  }
  // Depth-first, each node's children from the largest down (full tie-break: count, key).
  std::vector<GroupRow> Flatten() {
    auto order = [&](std::vector<size_t>& list) {
      std::sort(list.begin(), list.end(), [&](size_t a, size_t b) {
        const GroupRow& x = rows[a];
        const GroupRow& y = rows[b];
        if (folded[a] != folded[b]) return static_cast<bool>(folded[b]);
        if (x.bytes != y.bytes) return x.bytes > y.bytes;
        if (x.count != y.count) return x.count > y.count;
        return x.key < y.key;
      });
    };
    std::vector<GroupRow> out;
    out.reserve(rows.size());
    std::vector<std::pair<size_t, int>> todo;  // (node, depth), a stack
    order(roots);
    for (auto it = roots.rbegin(); it != roots.rend(); ++it) todo.emplace_back(*it, 0);
    while (!todo.empty()) {
      auto [node, depth] = todo.back();
      todo.pop_back();
      rows[node].depth = depth;
      out.push_back(std::move(rows[node]));
      order(children[node]);
      for (auto it = children[node].rbegin(); it != children[node].rend(); ++it) {
        todo.emplace_back(*it, depth + 1);
      }
    }
    return out;
  }
};

}  // namespace

std::vector<GroupRow> ModuleTree(std::vector<GroupRow> leaves) {
  RowTree tree;
  absl::flat_hash_map<std::string, size_t> by_path;
  for (GroupRow& leaf : leaves) {
    if (leaf.synthetic) {
      leaf.self_bytes = leaf.bytes;
      leaf.self_count = leaf.count;
      tree.Add(std::move(leaf), RowTree::kRoot);
      continue;
    }
    size_t parent = RowTree::kRoot;
    size_t begin = 0;
    while (true) {
      const size_t end = leaf.key.find(kModulePathSeparator, begin);
      const std::string path = leaf.key.substr(0, end);
      auto [it, inserted] = by_path.try_emplace(path, 0);
      if (inserted) {
        GroupRow node = PlainRow(path, false);
        node.site = leaf.key.substr(begin, end == std::string::npos ? end : end - begin);
        node.info.owner = node.site;
        it->second = tree.Add(std::move(node), parent);
      }
      parent = it->second;
      AddFigures(tree.rows[parent], leaf);
      if (end == std::string::npos) break;
      begin = end + 1;
    }
    tree.rows[parent].self_bytes += leaf.bytes;
    tree.rows[parent].self_count += leaf.count;
  }
  return tree.Flatten();
}

void CollapseTreeTail(std::vector<GroupRow>& rows, size_t top) {
  RowTree tree;
  std::vector<size_t> path;  // the node at each depth of the row being read
  for (GroupRow& r : rows) {
    const size_t depth = static_cast<size_t>(std::max(r.depth, 0));
    path.resize(std::min(depth, path.size()));
    const size_t parent = path.empty() ? RowTree::kRoot : path.back();
    path.push_back(tree.Add(std::move(r), parent));
  }
  const size_t nodes = tree.rows.size();
  for (size_t n = 0; n <= nodes; ++n) {
    const size_t parent = n == nodes ? RowTree::kRoot : n;
    std::vector<size_t>& kids = tree.ChildrenOf(parent);
    if (kids.size() <= top) continue;
    // Rows come largest first under each parent, so the first `top` are the largest.
    GroupRow others = PlainRow(absl::StrCat("[", kids.size() - top, " others]"), true);
    if (parent != RowTree::kRoot) {
      others.key = absl::StrCat(tree.rows[parent].key,
                                Sv(std::string_view(&kModulePathSeparator, 1)), others.key);
    }
    others.site = absl::StrCat("[", kids.size() - top, " others]");
    for (size_t i = top; i < kids.size(); ++i) AddFigures(others, tree.rows[kids[i]]);
    others.self_bytes = others.bytes;
    others.self_count = others.count;
    kids.resize(top);
    tree.folded[tree.Add(std::move(others), parent)] = 1;
  }
  rows = tree.Flatten();
}

}  // namespace memsnap::analysis
