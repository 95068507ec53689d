// Pairing of sites whose lines moved (docs/attribution.md, "Sites whose lines moved"), shared by
// diff and leaks, and of sites torch.compile replaced ("Sites torch.compile replaced"), diff's.
#include "memsnap/analysis/sites/moved_sites.h"

#include <algorithm>
#include <array>
#include <map>
#include <optional>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "memsnap/util/strings.h"

namespace memsnap::analysis {

namespace {

// The display text of a frame whose line moved: "path:118→120 fn" from "path:118 fn" and
// "path:120 fn"; nullopt when the texts differ in more than one run of digits (or not at all).
// `move` gets "path:118→120".
std::optional<std::string> MovedText(std::string_view before, std::string_view after,
                                     std::string* move) {
  if (before == after) return std::nullopt;
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  size_t prefix = 0;
  while (prefix < before.size() && prefix < after.size() && before[prefix] == after[prefix]) {
    ++prefix;
  }
  while (prefix > 0 && digit(before[prefix - 1])) --prefix;  // the whole number differs
  size_t suffix = 0;
  while (suffix < before.size() - prefix && suffix < after.size() - prefix &&
         before[before.size() - 1 - suffix] == after[after.size() - 1 - suffix]) {
    ++suffix;
  }
  while (suffix > 0 && digit(before[before.size() - suffix])) --suffix;
  std::string_view a = before.substr(prefix, before.size() - prefix - suffix);
  std::string_view b = after.substr(prefix, after.size() - prefix - suffix);
  if (a.empty() || b.empty() || !std::all_of(a.begin(), a.end(), digit) ||
      !std::all_of(b.begin(), b.end(), digit)) {
    return std::nullopt;
  }
  std::string head = absl::StrCat(Sv(after.substr(0, prefix)), Sv(a), Sv(kMovedArrow), Sv(b));
  if (move != nullptr) *move = head;
  return absl::StrCat(head, Sv(after.substr(after.size() - suffix)));
}

}  // namespace

SiteInfo MovedInfo(const SiteInfo& before, const SiteInfo& after, std::vector<std::string>& moved) {
  SiteInfo s = after;
  auto merge = [&](const std::string& b, std::string& a) {
    std::string move;
    std::optional<std::string> text = MovedText(b, a, &move);
    if (!text) return;
    a = std::move(*text);
    if (std::find(moved.begin(), moved.end(), move) == moved.end()) moved.push_back(move);
  };
  merge(before.what, s.what);
  merge(before.owner, s.owner);
  if (before.callers.size() == s.callers.size()) {
    for (size_t i = 0; i < s.callers.size(); ++i) merge(before.callers[i], s.callers[i]);
  }
  if (before.inner.size() == s.inner.size()) {
    for (size_t i = 0; i < s.inner.size(); ++i) merge(before.inner[i], s.inner[i]);
  }
  return s;
}

std::vector<MovedPair> PairMovedSites(const std::vector<GroupRow>& before,
                                      const std::vector<GroupRow>& after) {
  const std::vector<GroupRow>* rows[2] = {&before, &after};
  std::array<absl::flat_hash_set<std::string_view>, 2> keys;
  for (int side = 0; side < 2; ++side) {
    for (const GroupRow& r : *rows[side]) keys[side].insert(r.key);
  }
  // Candidates: rows whose key the other side lacks, by unlined key (an ordered map, so the pairs
  // come out the same on every run).
  std::map<std::string_view, std::array<std::vector<size_t>, 2>> candidates;
  for (int side = 0; side < 2; ++side) {
    for (size_t i = 0; i < rows[side]->size(); ++i) {
      const GroupRow& r = (*rows[side])[i];
      if (r.synthetic || r.info.unlined_key.empty() || keys[1 - side].contains(r.key)) continue;
      candidates[r.info.unlined_key][side].push_back(i);
    }
  }
  // The only candidate of each side pairs. Each frame in which the two differ is a line that moved
  // (the loss, "benchmark.py:228" -> ":230"), so where the other file has the same text (its own
  // ":230", the optimizer step) that is another statement: no evidence of an unmoved line (below).
  std::vector<MovedPair> pairs;
  std::array<absl::flat_hash_set<std::string_view>, 2> moved;
  for (const auto& [unlined, sides] : candidates) {
    if (sides[0].size() != 1 || sides[1].size() != 1) continue;
    pairs.push_back({sides[0][0], sides[1][0]});
    const std::vector<std::string>& a = before[sides[0][0]].info.key_frames;
    const std::vector<std::string>& b = after[sides[1][0]].info.key_frames;
    for (size_t p = 0; p < std::min(a.size(), b.size()); ++p) {
      if (a[p] != b[p]) {
        moved[0].insert(a[p]);
        moved[1].insert(b[p]);
      }
    }
  }
  // Where a side has several candidates, the frames that did not move keep their line, and the
  // candidates told apart by those lines pair when each is again the only one of its side. A frame
  // did not move when the other side's candidates (its possible partners) have it too, or when the
  // other file has it in any row and no pair above shows that row's frame moved there from another
  // line. So two sites of one function told apart by an unmoved line ("transformer.py:76" and
  // ":77") stay apart while the lines outside them moved ("benchmark.py:222" -> ":224"), and a line
  // number that an edit gave to another statement (":230", now the loss) does not keep the two
  // optimizer-state sites that moved from it to ":232" apart from their partners.
  std::array<absl::flat_hash_set<std::string_view>, 2> lined;
  for (int side = 0; side < 2; ++side) {
    for (const GroupRow& r : *rows[side]) {
      for (const std::string& f : r.info.key_frames) {
        if (!moved[side].contains(f)) lined[side].insert(f);
      }
    }
  }
  for (const auto& [unlined, sides] : candidates) {
    if (sides[0].empty() || sides[1].empty()) continue;
    if (sides[0].size() == 1 && sides[1].size() == 1) continue;  // paired above
    std::array<absl::flat_hash_set<std::string_view>, 2> partners;
    for (int side = 0; side < 2; ++side) {
      for (size_t i : sides[side]) {
        for (const std::string& f : (*rows[side])[i].info.key_frames) partners[side].insert(f);
      }
    }
    std::map<std::string, std::array<std::vector<size_t>, 2>> finer;
    for (int side = 0; side < 2; ++side) {
      for (size_t i : sides[side]) {
        std::string anchored;
        for (const std::string& f : (*rows[side])[i].info.key_frames) {
          bool kept = partners[1 - side].contains(f) || lined[1 - side].contains(f);
          absl::StrAppend(&anchored, kept ? f : std::string(), "\n");
        }
        finer[anchored][side].push_back(i);
      }
    }
    for (const auto& [text, part] : finer) {
      if (part[0].size() == 1 && part[1].size() == 1) pairs.push_back({part[0][0], part[1][0]});
    }
  }
  std::sort(pairs.begin(), pairs.end(),
            [](const MovedPair& a, const MovedPair& b) { return a.before < b.before; });
  return pairs;
}

namespace {

// The owner and callers of a row: the user's frames the pairing compares.
std::vector<std::string_view> Place(const SiteInfo& s) {
  std::vector<std::string_view> out = {s.owner};
  for (const std::string& c : s.callers) out.push_back(c);
  return out;
}

}  // namespace

std::vector<CompiledPair> PairCompiledSites(const std::vector<GroupRow>& before,
                                            const std::vector<GroupRow>& after,
                                            const std::vector<MovedPair>& moved) {
  const std::vector<GroupRow>* rows[2] = {&before, &after};
  std::array<absl::flat_hash_set<std::string_view>, 2> keys;
  for (int side = 0; side < 2; ++side) {
    for (const GroupRow& r : *rows[side]) keys[side].insert(r.key);
  }
  std::array<absl::flat_hash_set<size_t>, 2> taken;
  for (const MovedPair& p : moved) {
    taken[0].insert(p.before);
    taken[1].insert(p.after);
  }
  // Candidates of each side, compiled or eager, with their user frames.
  struct Candidate {
    size_t row;
    std::vector<std::string_view> place;
  };
  std::array<std::array<std::vector<Candidate>, 2>, 2> cands;  // [side][compiled]
  for (int side = 0; side < 2; ++side) {
    for (size_t i = 0; i < rows[side]->size(); ++i) {
      const GroupRow& r = (*rows[side])[i];
      if (r.synthetic || r.info.kind != SiteKind::kPython || keys[1 - side].contains(r.key) ||
          taken[side].contains(i)) {
        continue;
      }
      const bool compiled = r.info.what == kCompiledWhat;
      std::vector<std::string_view> place = Place(r.info);
      // A compiled site is known by the frames torch.compile recorded for its code; the frames that
      // called the compiled function (its entry, the script) are not the user's line.
      if (compiled) place.resize(1 + r.info.traced_callers);
      cands[side][compiled ? 1 : 0].push_back({i, std::move(place)});
    }
  }
  auto starts_with = [](const std::vector<std::string_view>& a,
                        const std::vector<std::string_view>& prefix) {
    return a.size() >= prefix.size() && std::equal(prefix.begin(), prefix.end(), a.begin());
  };
  // Every comparison is between places with the same owner (a place starts with it): candidates
  // are looked up by owner, so a pair of files with many sites costs what their owners share,
  // not the product of their sizes.
  using ByOwner = absl::flat_hash_map<std::string_view, std::vector<const Candidate*>>;
  std::array<std::array<ByOwner, 2>, 2> by_owner;  // [side][compiled]
  for (int side = 0; side < 2; ++side) {
    for (int compiled = 0; compiled < 2; ++compiled) {
      for (const Candidate& k : cands[side][compiled]) {
        by_owner[side][compiled][k.place[0]].push_back(&k);
      }
    }
  }
  auto same_owner = [&](int side, int compiled,
                        std::string_view owner) -> const std::vector<const Candidate*>& {
    static const std::vector<const Candidate*> kNone;
    auto it = by_owner[side][compiled].find(owner);
    return it == by_owner[side][compiled].end() ? kNone : it->second;
  };
  std::vector<CompiledPair> pairs;
  for (int c = 0; c < 2; ++c) {  // the side that ran the code compiled
    const int e = 1 - c;
    // Compiled places, each with its rows (an ordered map: the same pairs on every run).
    std::map<std::vector<std::string_view>, std::vector<size_t>> places;
    for (const Candidate& k : cands[c][1]) places[k.place].push_back(k.row);
    absl::flat_hash_map<std::string_view, std::vector<const std::vector<std::string_view>*>>
        places_by_owner;
    for (const auto& [place, compiled_rows] : places) places_by_owner[place[0]].push_back(&place);
    std::map<std::vector<std::string_view>, std::vector<const Candidate*>> matched;
    absl::flat_hash_set<const std::vector<std::string_view>*> bad;
    for (const auto& [place, compiled_rows] : places) {
      if (compiled_rows.size() != 1) bad.insert(&place);  // two compiled rows at one place
      // The compiled side runs some of this code eagerly too, or the other side compiles it too.
      for (const Candidate* k : same_owner(c, 0, place[0])) {
        if (starts_with(k->place, place)) bad.insert(&place);
      }
      for (const Candidate* k : same_owner(e, 1, place[0])) {
        if (starts_with(k->place, place) || starts_with(place, k->place)) bad.insert(&place);
      }
    }
    for (const Candidate& k : cands[e][0]) {
      std::vector<const std::vector<std::string_view>*> hits;
      auto owner_places = places_by_owner.find(k.place[0]);
      if (owner_places == places_by_owner.end()) continue;
      for (const std::vector<std::string_view>* place : owner_places->second) {
        if (starts_with(k.place, *place)) hits.push_back(place);
      }
      if (hits.size() > 1) {  // the eager row could be either compiled site's
        for (const auto* h : hits) bad.insert(h);
      } else if (hits.size() == 1) {
        matched[*hits[0]].push_back(&k);
      }
    }
    for (const auto& [place, compiled_rows] : places) {
      auto m = matched.find(place);
      if (bad.contains(&place) || m == matched.end()) continue;
      // The eager rows must have been called from one place: the compiled side has one row.
      const std::vector<const Candidate*>& eager = m->second;
      bool one_caller = std::all_of(eager.begin(), eager.end(), [&](const Candidate* k) {
        return std::equal(k->place.begin() + place.size(), k->place.end(),
                          eager[0]->place.begin() + place.size(), eager[0]->place.end());
      });
      if (!one_caller) continue;
      CompiledPair p;
      p.compiled_after = c == 1;
      (p.compiled_after ? p.after : p.before) = compiled_rows;
      for (const Candidate* k : eager) (p.compiled_after ? p.before : p.after).push_back(k->row);
      std::sort(p.before.begin(), p.before.end());
      std::sort(p.after.begin(), p.after.end());
      pairs.push_back(std::move(p));
    }
  }
  std::sort(pairs.begin(), pairs.end(), [](const CompiledPair& a, const CompiledPair& b) {
    return a.before.front() < b.before.front();
  });
  return pairs;
}

SiteInfo CompiledInfo(const std::vector<const GroupRow*>& eager, const SiteInfo& compiled,
                      bool compiled_after, std::vector<std::string>& eager_ops) {
  // What each eager row called, its bytes summed over rows that called the same thing ("eager
  // code" when the stack names nothing: no operator, the owner the innermost frame).
  std::map<std::string, int64_t> bytes;
  for (const GroupRow* r : eager) {
    bytes[r->info.what.empty() ? std::string("eager code") : r->info.what] += r->bytes;
  }
  std::vector<std::pair<std::string, int64_t>> ops(bytes.begin(), bytes.end());
  std::stable_sort(ops.begin(), ops.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  eager_ops.clear();
  for (auto& [op, b] : ops) eager_ops.push_back(op);
  constexpr size_t kShown = 4;
  std::string names;
  for (size_t i = 0; i < eager_ops.size() && i < kShown; ++i) {
    absl::StrAppend(&names, i == 0 ? "" : ", ", eager_ops[i]);
  }
  if (eager_ops.size() > kShown) absl::StrAppend(&names, ", +", eager_ops.size() - kShown, " more");
  SiteInfo s = compiled;
  const std::string arrow = absl::StrCat(" ", Sv(kMovedArrow), " ");
  s.what = compiled_after ? absl::StrCat(names, arrow, Sv(kCompiledWhat))
                          : absl::StrCat(Sv(kCompiledWhat), arrow, names);
  return s;
}

}  // namespace memsnap::analysis
