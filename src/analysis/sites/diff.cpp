// Diff of two snapshots: rows of both sides grouped with the same options, then merged by key text.
#include "memsnap/analysis/sites/diff.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "memsnap/analysis/sites/moved_sites.h"
#include "memsnap/analysis/sites/summary.h"
#include "memsnap/util/strings.h"

namespace memsnap::analysis {

namespace {

bool HasTrace(const Snapshot& s) { return !s.events.empty(); }

void AddScope(std::map<std::tuple<int32_t, int, std::string>, ScopeDelta>& scopes, int32_t device,
              int kind, std::string name, const Totals& t, bool after) {
  ScopeDelta& s = scopes[{device, kind, name}];
  s.scope = std::move(name);
  s.device = device;
  auto set = [after](Delta& d, int64_t v) { (after ? d.after : d.before) = v; };
  set(s.reserved, t.reserved_bytes);
  set(s.allocated, t.allocated_bytes);
  set(s.requested, t.requested_bytes);
  set(s.segments, t.segments);
  set(s.blocks, t.blocks);
}

void AddScopes(std::map<std::tuple<int32_t, int, std::string>, ScopeDelta>& scopes,
               const SummaryReport& rep, bool after) {
  for (const DeviceSummary& d : rep.devices) {
    AddScope(scopes, d.device, 0, absl::StrCat("device ", d.device), d.totals, after);
    for (const PoolSummary& p : d.pools) {
      std::string pool = p.pool.is_default()
                             ? "default"
                             : absl::StrCat("(", p.pool.first, ",", p.pool.second, ")");
      AddScope(scopes, d.device, 1,
               absl::StrCat("device ", d.device, " pool ", pool, p.is_small ? " small" : " large"),
               p.totals, after);
    }
    for (const StreamSummary& s : d.streams) {
      AddScope(scopes, d.device, 2, absl::StrFormat("device %d stream 0x%x", d.device, s.stream),
               s.totals, after);
    }
  }
}

}  // namespace

Category SiteDelta::category() const {
  Category after = DominantCategory(after_categories);
  return after_bytes > 0 ? after : DominantCategory(before_categories);
}

std::vector<SiteDelta> MatchSites(const std::vector<GroupRow>& before,
                                  const std::vector<GroupRow>& after, bool pair_compiled,
                                  bool match_gradients) {
  std::map<std::string, SiteDelta> merged;
  const std::vector<GroupRow>* sides[2] = {&before, &after};
  for (int side = 0; side < 2; ++side) {
    for (const GroupRow& r : *sides[side]) {
      auto [it, inserted] = merged.try_emplace(r.key);
      SiteDelta& s = it->second;
      if (inserted) {
        s.key = r.key;
        s.synthetic = r.synthetic;
        s.presence = side == 0 ? Presence::kOnlyBefore : Presence::kOnlyAfter;
      } else {
        s.presence = Presence::kBoth;
      }
      if (inserted || side == 1) {  // the later side names the site
        s.info = r.info;
        s.frames = r.frames;
      }
      (side == 0 ? s.before_bytes : s.after_bytes) += r.bytes;
      (side == 0 ? s.before_count : s.after_count) += r.count;
      CategoryBytes& c = side == 0 ? s.before_categories : s.after_categories;
      for (int k = 0; k < kMaxCategories; ++k) c[k] += r.category_bytes[k];
    }
  }
  // Sites whose lines moved become one row (moved_sites.h): after's, with before's figures.
  const std::vector<MovedPair> moved_pairs = PairMovedSites(before, after);
  for (const MovedPair& pair : moved_pairs) {
    auto b = merged.find(before[pair.before].key);
    auto a = merged.find(after[pair.after].key);
    SiteDelta s = std::move(a->second);
    const SiteDelta& old = b->second;
    s.presence = Presence::kBoth;
    s.before_key = old.key;
    s.info = MovedInfo(old.info, s.info, s.moved);
    s.before_bytes = old.before_bytes;
    s.before_count = old.before_count;
    s.before_categories = old.before_categories;
    merged.erase(b);
    a->second = std::move(s);
  }
  // A line run eagerly on one side and compiled on the other becomes one row (moved_sites.h),
  // filed under after's first key, its figures each side's sums: fusion and the intermediates
  // compiled code frees are the change the row shows.
  if (pair_compiled) {
    for (const CompiledPair& pair : PairCompiledSites(before, after, moved_pairs)) {
      SiteDelta s;
      s.presence = Presence::kBoth;
      s.compile = pair.compiled_after ? CompileChange::kCompiled : CompileChange::kEager;
      std::vector<const GroupRow*> eager;
      const GroupRow* compiled = nullptr;
      const GroupRow* named = nullptr;  // after's row of the first key: the row's key and frames
      for (int side = 0; side < 2; ++side) {
        const std::vector<size_t>& indices = side == 0 ? pair.before : pair.after;
        const bool compiled_side = (side == 1) == pair.compiled_after;
        for (size_t i : indices) {
          const GroupRow& r = (*sides[side])[i];
          (compiled_side ? compiled : eager.emplace_back()) = &r;
          if (side == 1 && (named == nullptr || r.key < named->key)) named = &r;
          (side == 0 ? s.before_keys : s.after_keys).push_back(r.key);
          merged.erase(r.key);
          (side == 0 ? s.before_bytes : s.after_bytes) += r.bytes;
          (side == 0 ? s.before_count : s.after_count) += r.count;
          CategoryBytes& c = side == 0 ? s.before_categories : s.after_categories;
          for (int k = 0; k < kMaxCategories; ++k) c[k] += r.category_bytes[k];
        }
      }
      std::sort(s.before_keys.begin(), s.before_keys.end());
      std::sort(s.after_keys.begin(), s.after_keys.end());
      s.key = named->key;
      s.frames = named->frames;
      s.info = CompiledInfo(eager, compiled->info, pair.compiled_after, s.eager_ops);
      s.info.key = s.key;  // distinct labels go by key
      merged[s.key] = std::move(s);
    }
  }
  std::vector<SiteDelta> out;
  out.reserve(merged.size());
  for (auto& [key, s] : merged) out.push_back(std::move(s));
  if (match_gradients) MatchGradientsByParameter(out);
  std::vector<const SiteInfo*> infos;
  for (const SiteDelta& s : out) infos.push_back(&s.info);
  std::vector<SiteLabel> labels = DistinctSiteLabels(infos);
  for (size_t i = 0; i < out.size(); ++i) {
    out[i].site = labels[i].text;
    out[i].label = std::move(labels[i]);
  }
  return out;
}

namespace {

// A gradient row that names the parameter it belongs to: made in backward by a node whose forward
// lines the file shows (MatchGradientsByParameter). A row of both files joins only when its bytes
// changed: an unchanged node holds no bytes another node took over.
bool ParameterGradientRow(const SiteDelta& s) {
  return s.compile == CompileChange::kNone && s.before_key.empty() &&
         s.category() == Category::kGradient && s.info.phase == Phase::kBackward &&
         !s.info.forward_lines.empty() && (s.presence != Presence::kBoth || s.delta_bytes() != 0);
}

// The distinct owners of one side's rows, in key order: "MmBackward0 (mm), AddmmBackward0 (addmm)".
std::string OwnersText(const std::vector<const SiteDelta*>& rows) {
  std::vector<std::string> owners;
  for (const SiteDelta* r : rows) {
    if (std::find(owners.begin(), owners.end(), r->info.owner) == owners.end()) {
      owners.push_back(r->info.owner);
    }
  }
  return absl::StrJoin(owners, ", ");
}

}  // namespace

void MatchGradientsByParameter(std::vector<SiteDelta>& rows) {
  std::vector<size_t> candidates;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (ParameterGradientRow(rows[i])) candidates.push_back(i);
  }
  if (candidates.size() < 2) return;
  // Groups of rows whose forward lines meet (union-find over the candidates). A node of one file
  // only links every row that shares one of its lines; two rows of both files are never linked by
  // a line alone (each made its gradients in both files: nothing moved between them), only
  // through a node that appeared or went.
  std::vector<size_t> parent(candidates.size());
  for (size_t k = 0; k < parent.size(); ++k) parent[k] = k;
  auto find = [&](size_t k) {
    while (parent[k] != k) k = parent[k] = parent[parent[k]];
    return k;
  };
  auto one_side = [&](size_t k) { return rows[candidates[k]].presence != Presence::kBoth; };
  std::map<std::string, std::vector<size_t>> with_line;  // line -> candidates, in order
  for (size_t k = 0; k < candidates.size(); ++k) {
    for (const std::string& line : rows[candidates[k]].info.forward_lines) {
      with_line[line].push_back(k);
    }
  }
  for (const auto& [line, ks] : with_line) {
    std::optional<size_t> anchor;  // the first row of one file only with this line
    for (size_t k : ks) {
      if (one_side(k)) {
        anchor = k;
        break;
      }
    }
    if (!anchor) continue;
    for (size_t k : ks) parent[find(k)] = find(*anchor);
  }
  std::map<size_t, std::vector<size_t>> groups;  // root -> rows, in row (key) order
  for (size_t k = 0; k < candidates.size(); ++k) groups[find(k)].push_back(candidates[k]);
  std::vector<bool> merged_away(rows.size(), false);
  std::vector<SiteDelta> merged;
  for (auto& [root, members] : groups) {
    // The rows of one file only: the nodes that appeared or went, and the bytes they moved.
    int64_t moved = 0;
    bool any_one_side = false;
    for (size_t i : members) {
      if (rows[i].presence != Presence::kBoth) any_one_side = true, moved += rows[i].delta_bytes();
    }
    if (!any_one_side) continue;
    // A row of both files belongs when its bytes went the other way: what a new node holds, an
    // old one holds less of (BmmBackward0 7.4 GiB → 8 MiB beside a new ToCopyBackward0).
    std::erase_if(members, [&](size_t i) {
      return rows[i].presence == Presence::kBoth &&
             (moved == 0 || (rows[i].delta_bytes() > 0) == (moved > 0));
    });
    std::vector<const SiteDelta*> sides[2];
    for (size_t i : members) {
      const SiteDelta& r = rows[i];
      if (r.presence != Presence::kOnlyAfter) sides[0].push_back(&r);
      if (r.presence != Presence::kOnlyBefore) sides[1].push_back(&r);
    }
    if (sides[0].empty() || sides[1].empty() || members.size() < 2) continue;
    SiteDelta m;
    m.presence = Presence::kBoth;
    m.by_parameter = true;
    const SiteDelta* named = sides[1].front();  // after's first key names the row
    m.key = named->key;
    m.frames = named->frames;
    m.info = named->info;
    m.info.key = m.key;
    m.info.what.clear();
    m.info.op.clear();
    m.info.callers.clear();
    m.info.inner.clear();
    m.info.owner = absl::StrCat(OwnersText(sides[0]), " → ", OwnersText(sides[1]));
    // The lines both sides' nodes share: the parameters' uses that made them, in after's order.
    std::set<std::string> before_lines;
    for (const SiteDelta* r : sides[0]) {
      before_lines.insert(r->info.forward_lines.begin(), r->info.forward_lines.end());
    }
    m.info.forward_lines.clear();
    for (const SiteDelta* r : sides[1]) {
      for (const std::string& line : r->info.forward_lines) {
        if (before_lines.count(line) > 0 &&
            std::find(m.info.forward_lines.begin(), m.info.forward_lines.end(), line) ==
                m.info.forward_lines.end()) {
          m.info.forward_lines.push_back(line);
        }
      }
    }
    for (const SiteDelta* r : sides[0]) m.before_keys.push_back(r->key);
    for (const SiteDelta* r : sides[1]) m.after_keys.push_back(r->key);
    for (size_t i : members) {
      const SiteDelta& r = rows[i];
      m.before_bytes += r.before_bytes;
      m.after_bytes += r.after_bytes;
      m.before_count += r.before_count;
      m.after_count += r.after_count;
      for (int c = 0; c < kNumCategories; ++c) {
        m.before_categories[c] += r.before_categories[c];
        m.after_categories[c] += r.after_categories[c];
      }
    }
    for (size_t i : members) merged_away[i] = true;
    merged.push_back(std::move(m));
  }
  if (merged.empty()) return;
  std::vector<SiteDelta> out;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (!merged_away[i]) out.push_back(std::move(rows[i]));
  }
  for (SiteDelta& m : merged) out.push_back(std::move(m));
  std::sort(out.begin(), out.end(),
            [](const SiteDelta& a, const SiteDelta& b) { return a.key < b.key; });
  rows = std::move(out);
}

std::vector<FoldedRows> FoldCancellingRows(std::vector<SiteDelta>& rows,
                                           std::vector<SiteDelta>& folded_out) {
  std::vector<FoldedRows> out;
  std::vector<bool> fold(rows.size(), false);
  for (int c = 0; c < kNumCategories; ++c) {
    std::vector<size_t> gone, added;
    int64_t gone_bytes = 0, added_bytes = 0;
    for (size_t i = 0; i < rows.size(); ++i) {
      const SiteDelta& s = rows[i];
      // Only memory an autograd node or the engine named: a line of the user's code gone and
      // another new are a change to show, whatever their sizes.
      const bool named_by_backward =
          s.info.kind == SiteKind::kBackward || s.info.kind == SiteKind::kEngine;
      if (s.presence == Presence::kBoth || s.compile != CompileChange::kNone || s.by_parameter ||
          !named_by_backward || s.delta_bytes() == 0 || static_cast<int>(s.category()) != c) {
        continue;
      }
      if (s.presence == Presence::kOnlyBefore) {
        gone.push_back(i);
        gone_bytes += s.before_bytes;
      } else {
        added.push_back(i);
        added_bytes += s.after_bytes;
      }
    }
    if (gone.empty() || added.empty()) continue;
    FoldedRows f;
    f.category = static_cast<Category>(c);
    auto take = [&](size_t i) {
      fold[i] = true;
      ++f.rows;
      f.bytes += rows[i].after_bytes;
    };
    if (gone_bytes == added_bytes) {
      for (size_t i : gone) take(i);
      for (size_t i : added) take(i);
    } else {
      // Largest first, then by key: each row gone takes the first new row of exactly its size.
      auto order = [&](size_t a, size_t b) {
        const int64_t x = std::max(rows[a].before_bytes, rows[a].after_bytes);
        const int64_t y = std::max(rows[b].before_bytes, rows[b].after_bytes);
        if (x != y) return x > y;
        return rows[a].key < rows[b].key;
      };
      std::sort(gone.begin(), gone.end(), order);
      std::sort(added.begin(), added.end(), order);
      std::vector<bool> used(added.size(), false);
      for (size_t i : gone) {
        for (size_t k = 0; k < added.size(); ++k) {
          if (!used[k] && rows[added[k]].after_bytes == rows[i].before_bytes) {
            used[k] = true;
            take(i);
            take(added[k]);
            break;
          }
        }
      }
    }
    if (f.rows > 0) out.push_back(f);
  }
  std::vector<SiteDelta> kept;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (fold[i]) {
      rows[i].folded = true;
      folded_out.push_back(std::move(rows[i]));
    } else {
      kept.push_back(std::move(rows[i]));
    }
  }
  rows = std::move(kept);
  return out;
}

std::string_view CompileChangeName(CompileChange c) {
  switch (c) {
    case CompileChange::kNone:
      return "none";
    case CompileChange::kCompiled:
      return "compiled";
    case CompileChange::kEager:
      return "eager";
  }
  return "?";
}

std::string_view PresenceName(Presence p) {
  switch (p) {
    case Presence::kBoth:
      return "both";
    case Presence::kOnlyBefore:
      return "only_before";
    case Presence::kOnlyAfter:
      return "only_after";
  }
  return "?";
}

TimelineOptions DiffTimelineOptions(const DiffOptions& options) {
  TimelineOptions to;
  to.keep = KeepLifetimes::kLiveAt;
  // An automatic moment is the peak unless a file has no trace, which a caller rebuilding the
  // timelines during the read cannot know yet; DiffSnapshots rebuilds them in that case.
  to.moment = options.auto_moment ? Moment{Moment::Kind::kPeak, 0} : options.at;
  to.curve = false;
  return to;
}

namespace {

// Why a moment was chosen (DiffReport::moment_choice, untraced_file).
struct Choice {
  MomentChoice why = MomentChoice::kGiven;
  std::string untraced_file;
};

// The options with an automatic moment resolved, and why that moment.
DiffOptions ResolveMoment(const Snapshot& before, const Snapshot& after,
                          const DiffOptions& requested, Choice& choice) {
  DiffOptions options = requested;
  if (options.auto_moment) {
    const bool both = HasTrace(before) && HasTrace(after);
    options.at = Moment{both ? Moment::Kind::kPeak : Moment::Kind::kEnd, 0};
    choice.why = both ? MomentChoice::kBothTraced : MomentChoice::kUntraced;
    if (!both) choice.untraced_file = HasTrace(before) ? after.source.path : before.source.path;
  }
  return options;
}

absl::StatusOr<DiffReport> DiffResolved(const Snapshot& before, const Snapshot& after,
                                        const absl::StatusOr<Timeline>& before_timeline,
                                        const absl::StatusOr<Timeline>& after_timeline,
                                        const DiffOptions& options, Choice choice);

}  // namespace

absl::StatusOr<DiffReport> DiffSnapshots(const Snapshot& before, const Snapshot& after,
                                         const DiffOptions& requested) {
  Choice choice;
  const DiffOptions options = ResolveMoment(before, after, requested, choice);
  // The peak check comes before the timelines.
  if (options.at.kind == Moment::Kind::kPeak && (!HasTrace(before) || !HasTrace(after))) {
    return DiffResolved(before, after, Timeline{}, Timeline{}, options, std::move(choice));
  }
  TimelineOptions to = DiffTimelineOptions(options);
  to.moment = options.at;
  absl::StatusOr<Timeline> b = ReconstructTimeline(before, to);
  if (!b.ok()) return b.status();
  return DiffResolved(before, after, b, ReconstructTimeline(after, to), options, std::move(choice));
}

absl::StatusOr<DiffReport> DiffSnapshots(const Snapshot& before, const Snapshot& after,
                                         const absl::StatusOr<Timeline>& before_timeline,
                                         const absl::StatusOr<Timeline>& after_timeline,
                                         const DiffOptions& requested) {
  Choice choice;
  const DiffOptions options = ResolveMoment(before, after, requested, choice);
  if (requested.auto_moment && options.at.kind != Moment::Kind::kPeak) {
    // The timelines were rebuilt for the peak, but a file has no trace: compare the ends. A file
    // without a trace has one moment, its peak is its end: its timeline stands (rebuilding it
    // doubled diff's time and memory on 100,000 untraced devices; issue 54).
    if (options.at.kind == Moment::Kind::kEnd) {
      TimelineOptions to = DiffTimelineOptions(options);
      to.moment = options.at;
      std::optional<absl::StatusOr<Timeline>> own[2];
      const Snapshot* snaps[2] = {&before, &after};
      const absl::StatusOr<Timeline>* given[2] = {&before_timeline, &after_timeline};
      for (int side = 0; side < 2; ++side) {
        if (HasTrace(*snaps[side]) || !given[side]->ok()) {
          own[side] = ReconstructTimeline(*snaps[side], to);
          given[side] = &*own[side];
        }
      }
      if (!given[0]->ok()) return given[0]->status();
      return DiffResolved(before, after, *given[0], *given[1], options, std::move(choice));
    }
    return DiffSnapshots(before, after, requested);
  }
  return DiffResolved(before, after, before_timeline, after_timeline, options, std::move(choice));
}

namespace {

absl::StatusOr<DiffReport> DiffResolved(const Snapshot& before, const Snapshot& after,
                                        const absl::StatusOr<Timeline>& before_timeline,
                                        const absl::StatusOr<Timeline>& after_timeline,
                                        const DiffOptions& options, Choice choice) {
  if (options.at.kind == Moment::Kind::kPeak) {
    for (const Snapshot* s : {&before, &after}) {
      if (!HasTrace(*s)) {
        return absl::InvalidArgumentError(
            absl::StrCat(s->source.path,
                         ": --at peak needs a trace (this file has no device_traces events); "
                         "use --at end"));
      }
    }
  }
  DiffReport rep;
  rep.options = options;
  rep.moment_choice = choice.why;
  rep.untraced_file = std::move(choice.untraced_file);
  rep.both_traced = HasTrace(before) && HasTrace(after);
  rep.before_path = before.source.path;
  rep.after_path = after.source.path;

  // Site keys without lines as well, to pair the sites an edit moved (MatchSites).
  GroupOptions group = options.group;
  group.unlined_keys = options.pair_moved && group.by == GroupBy::kSite && !group.ignore_lines;
  const Timeline* tl[2];
  GroupReport groups[2];
  const Snapshot* snaps[2] = {&before, &after};
  const absl::StatusOr<Timeline>* timelines[2] = {&before_timeline, &after_timeline};
  for (int side = 0; side < 2; ++side) {
    if (!timelines[side]->ok()) return timelines[side]->status();
    tl[side] = &**timelines[side];
    auto g = GroupLive(*snaps[side], *tl[side],
                       options.at_each ? (*options.at_each)[side] : options.at, group);
    if (!g.ok()) return g.status();
    groups[side] = std::move(*g);
  }
  rep.live_bytes = {groups[0].total_bytes, groups[1].total_bytes};
  auto stackless = [](const GroupReport& g) {
    return std::all_of(g.rows.begin(), g.rows.end(), [](const GroupRow& r) { return r.synthetic; });
  };
  rep.no_stacks = (!groups[0].rows.empty() || !groups[1].rows.empty()) && stackless(groups[0]) &&
                  stackless(groups[1]);
  rep.live_count = {groups[0].total_count, groups[1].total_count};

  const bool by_site = group.by == GroupBy::kSite;
  std::vector<SiteDelta> merged =
      MatchSites(groups[0].rows, groups[1].rows, options.pair_compiled && by_site, by_site);
  // Rows that cancel within one kind are the same memory named by other code (the label says
  // how many and how much; FoldCancellingRows).
  std::vector<SiteDelta> folded;
  rep.folded = FoldCancellingRows(merged, folded);
  for (SiteDelta& s : folded) merged.push_back(std::move(s));
  std::stable_sort(merged.begin(), merged.end(),
                   [](const SiteDelta& a, const SiteDelta& b) { return a.key < b.key; });
  for (SiteDelta& s : merged) {
    for (int c = 0; c < kMaxCategories; ++c) {
      rep.before_by_category[c] += s.before_categories[c];
      rep.after_by_category[c] += s.after_categories[c];
    }
    if (s.presence == Presence::kOnlyBefore) ++rep.sites_only_before;
    if (s.presence == Presence::kOnlyAfter) ++rep.sites_only_after;
    if (!s.before_key.empty()) ++rep.sites_moved;
    if (s.compile != CompileChange::kNone) ++rep.sites_compiled;
    if (s.by_parameter) ++rep.sites_by_parameter;
    int64_t d = s.delta_bytes();
    if (d == 0 && s.delta_count() == 0) ++rep.sites_unchanged;
    bool shown = !s.folded && d != 0 && (d >= options.min_delta || -d >= options.min_delta);
    (shown ? rep.sites : rep.other_sites).push_back(std::move(s));
  }
  std::sort(rep.sites.begin(), rep.sites.end(), [](const SiteDelta& a, const SiteDelta& b) {
    int64_t x = a.delta_bytes(), y = b.delta_bytes();
    int64_t ax = x < 0 ? -x : x, ay = y < 0 ? -y : y;
    if (ax != ay) return ax > ay;
    if (x != y) return x > y;  // growth before shrinkage of the same size
    return a.key < b.key;
  });

  std::map<std::tuple<int32_t, int, std::string>, ScopeDelta> scopes;
  SummaryOptions totals_only;
  totals_only.peaks = false;
  AddScopes(scopes, Summarize(before, totals_only), false);
  AddScopes(scopes, Summarize(after, totals_only), true);
  for (auto& [k, s] : scopes) rep.scopes.push_back(std::move(s));
  std::stable_sort(rep.scopes.begin(), rep.scopes.end(),
                   [](const ScopeDelta& a, const ScopeDelta& b) { return a.device < b.device; });

  std::map<int32_t, DeviceDelta> devs;
  for (int side = 0; side < 2; ++side) {
    for (const DeviceTimeline& dt : tl[side]->devices) {
      DeviceDelta& d = devs[dt.device];
      d.device = dt.device;
      (side == 0 ? d.peak.before : d.peak.after) = dt.peak_requested;
    }
    for (const DeviceMoment& m : groups[side].devices) {
      (side == 0 ? devs[m.device].live.before : devs[m.device].live.after) = m.live_bytes;
    }
  }
  for (auto& [dev, d] : devs) {
    const DeviceTimeline* b = tl[0]->Find(dev);
    const DeviceTimeline* a = tl[1]->Find(dev);
    d.has_peak = b && a && b->num_events > 0 && a->num_events > 0;
    rep.devices.push_back(d);
  }

  // The same words as summary's (DescribeSettings): "unlimited -> 512.0 MiB", not "-1 ->
  // 536870912".
  std::vector<SettingText> sb = DescribeSettings(before.settings);
  std::vector<SettingText> sa = DescribeSettings(after.settings);
  if (before.settings.present != after.settings.present) {
    rep.settings.push_back({"allocator_settings", before.settings.present ? "present" : "absent",
                            after.settings.present ? "present" : "absent"});
  } else {
    for (size_t i = 0; i < sb.size(); ++i) {
      if (sb[i].value != sa[i].value)
        rep.settings.push_back({sb[i].name, sb[i].value, sa[i].value});
    }
  }
  return rep;
}

}  // namespace

}  // namespace memsnap::analysis
