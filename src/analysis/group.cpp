// Grouping of live memory by site. Keys are cached per StackId, so the per-lifetime work is two
// hash lookups; frame text is built once per distinct stack.
#include "memsnap/analysis/group.h"

#include <algorithm>
#include <optional>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "memsnap/util/strings.h"

namespace memsnap::analysis {

namespace {

// Innermost annotation over time for one device: boundaries where it changes.
struct AnnotationIndex {
  std::vector<int64_t> times;
  std::vector<StrId> names;  // invalid = none
  StrId At(int64_t t) const {
    auto it = std::upper_bound(times.begin(), times.end(), t);
    if (it == times.begin()) return StrId();
    return names[(it - times.begin()) - 1];
  }
};

AnnotationIndex BuildAnnotationIndex(const Snapshot& snap, int32_t device) {
  std::vector<uint32_t> idx;
  for (uint32_t i = 0; i < snap.annotations.size(); ++i) {
    const Annotation& a = snap.annotations[i];
    if (a.device == device && a.time_us != kNoTime) idx.push_back(i);
  }
  std::stable_sort(idx.begin(), idx.end(), [&](uint32_t a, uint32_t b) {
    return snap.annotations[a].time_us < snap.annotations[b].time_us;
  });
  AnnotationIndex out;
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
    case GroupBy::kStack: return "stack";
    case GroupBy::kFunction: return "function";
    case GroupBy::kFile: return "file";
    case GroupBy::kFrame: return "frame";
    case GroupBy::kAnnotation: return "annotation";
  }
  return "?";
}

absl::StatusOr<GroupBy> ParseGroupBy(std::string_view text) {
  for (GroupBy by : {GroupBy::kStack, GroupBy::kFunction, GroupBy::kFile, GroupBy::kFrame,
                     GroupBy::kAnnotation}) {
    if (GroupByName(by) == text) return by;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "--by ", Sv(text), ": expected one of stack, function, file, frame, annotation"));
}

std::string FrameKeyText(const Snapshot& snap, FrameId id, bool ignore_lines) {
  const Frame& f = snap.frames.Get(id);
  std::string_view file = snap.strings.Get(f.filename);
  std::string_view name = snap.strings.Get(f.name);
  if (ignore_lines) return Sanitize(absl::StrCat(Sv(file), ":", Sv(name)));
  return Sanitize(
      absl::StrCat(Sv(file), ":", f.line == kUnknownLine ? 0 : f.line, ":", Sv(name)));
}

void AccumulateGroups(const Snapshot& snap, const DeviceTimeline& dt,
                      const std::vector<uint32_t>& lifetimes, const GroupOptions& options,
                      FrameFilter& filter, std::vector<GroupRow>& rows) {
  absl::flat_hash_map<std::string, uint32_t> by_key;
  for (uint32_t i = 0; i < rows.size(); ++i) by_key.emplace(rows[i].key, i);
  auto row_for = [&](std::string key, bool synthetic, auto&& make_frames) -> uint32_t {
    auto [it, inserted] = by_key.emplace(key, static_cast<uint32_t>(rows.size()));
    if (inserted) {
      GroupRow& r = rows.emplace_back();
      r.key = std::move(key);
      r.synthetic = synthetic;
      r.frames = make_frames(r.key);
    }
    return it->second;
  };
  auto just_key = [](const std::string& k) { return std::vector<std::string>{k}; };

  AnnotationIndex ann;
  if (options.by == GroupBy::kAnnotation) ann = BuildAnnotationIndex(snap, dt.device);
  absl::flat_hash_map<uint32_t, uint32_t> row_of_stack;  // StackId -> row (non-annotation)
  absl::flat_hash_map<uint32_t, uint32_t> row_of_name;   // annotation StrId -> row
  int64_t pre_window_row = -1;

  for (uint32_t li : lifetimes) {
    const BlockLifetime& lt = dt.blocks[li];
    uint32_t row;
    if (lt.cls == LifetimeClass::kPreWindow) {
      if (pre_window_row < 0) pre_window_row = row_for(std::string(kPreWindowRow), true, just_key);
      row = static_cast<uint32_t>(pre_window_row);
    } else if (options.by == GroupBy::kAnnotation) {
      int64_t t = lt.alloc_event == kNoEvent ? kNoTime : dt.TimeOf(snap, lt.alloc_event);
      StrId name = t == kNoTime ? StrId() : ann.At(t);
      auto it = row_of_name.find(name.v);
      if (it == row_of_name.end()) {
        std::string key = name.valid() ? Sanitize(std::string(snap.strings.Get(name)))
                                       : std::string(kNoAnnotationRow);
        it = row_of_name.emplace(name.v, row_for(std::move(key), !name.valid(), just_key)).first;
      }
      row = it->second;
    } else {
      auto it = row_of_stack.find(lt.stack.v);
      if (it == row_of_stack.end()) {
        uint32_t r;
        if (!lt.stack.valid() || snap.stacks.Get(lt.stack).empty()) {
          r = row_for(std::string(kNoStackRow), true, just_key);
        } else {
          const std::vector<FrameId>& fr = filter.Filtered(lt.stack);
          if (fr.empty()) {
            r = row_for(std::string(kAllFilteredRow), true, just_key);
          } else if (options.by == GroupBy::kStack) {
            size_t n = options.depth > 0 ? std::min<size_t>(options.depth, fr.size()) : fr.size();
            std::vector<std::string> texts;
            texts.reserve(n);
            for (size_t k = 0; k < n; ++k) texts.push_back(FrameKeyText(snap, fr[k], options.ignore_lines));
            std::string key = absl::StrJoin(texts.rbegin(), texts.rend(), ";");
            r = row_for(std::move(key), false, [&](const std::string&) { return texts; });
          } else {
            // Attribute to the innermost Python frame when the stack has one: with C++ stacks
            // the innermost frame is the allocator's own malloc, which says nothing.
            FrameId site = fr[0];
            for (FrameId id : fr) {
              if (absl::EndsWith(Sv(snap.strings.Get(snap.frames.Get(id).filename)), ".py")) {
                site = id;
                break;
              }
            }
            const Frame& f = snap.frames.Get(site);
            std::string key;
            if (options.by == GroupBy::kFunction) {
              key = Sanitize(std::string(snap.strings.Get(f.name)));
            } else if (options.by == GroupBy::kFile) {
              key = Sanitize(std::string(snap.strings.Get(f.filename)));
            } else {
              key = FrameKeyText(snap, site, options.ignore_lines);
            }
            r = row_for(std::move(key), false, just_key);
          }
        }
        it = row_of_stack.emplace(lt.stack.v, r).first;
      }
      row = it->second;
    }
    GroupRow& r = rows[row];
    ++r.count;
    r.bytes += lt.requested_size;
    r.rounded_bytes += lt.rounded_size;
  }
}

void SortAndMergeRows(std::vector<GroupRow>& rows) {
  std::sort(rows.begin(), rows.end(), [](const GroupRow& a, const GroupRow& b) { return a.key < b.key; });
  std::vector<GroupRow> merged;
  for (GroupRow& r : rows) {
    if (!merged.empty() && merged.back().key == r.key) {
      merged.back().count += r.count;
      merged.back().bytes += r.bytes;
      merged.back().rounded_bytes += r.rounded_bytes;
    } else {
      merged.push_back(std::move(r));
    }
  }
  std::sort(merged.begin(), merged.end(), [](const GroupRow& a, const GroupRow& b) {
    if (a.bytes != b.bytes) return a.bytes > b.bytes;
    if (a.count != b.count) return a.count > b.count;
    return a.key < b.key;
  });
  rows = std::move(merged);
}

absl::StatusOr<GroupReport> GroupLive(const Snapshot& snap, const Timeline& timeline,
                                      const Moment& moment, const GroupOptions& options) {
  auto filter = FrameFilter::Create(snap, options.filter);
  if (!filter.ok()) return filter.status();
  GroupReport report;
  report.options = options;
  report.moment = moment;
  for (const DeviceTimeline& dt : timeline.devices) {
    DeviceMoment dm;
    dm.device = dt.device;
    dm.event = ResolveMoment(snap, dt, moment);
    if (dt.kept == KeepLifetimes::kNone ||
        (dt.kept == KeepLifetimes::kLiveAt && dt.kept_event != dm.event)) {
      return absl::InternalError(absl::StrCat("device ", dt.device,
                                              ": the timeline did not keep the lifetimes live at event ",
                                              dm.event));
    }
    dm.time_us = dt.TimeOf(snap, dm.event);
    // `top` builds its timeline without the curve: the moment is one of the points it holds.
    std::optional<int64_t> live_bytes = dt.FindLive(TimelinePoint::FromIndex(dm.event));
    if (!live_bytes) {
      return absl::InternalError(absl::StrCat(
          "device ", dt.device, ": the timeline holds no live bytes at event ", dm.event));
    }
    dm.live_bytes = *live_bytes;
    report.devices.push_back(dm);
    std::vector<uint32_t> live = LiveBlocksAt(dt, dm.event);
    AccumulateGroups(snap, dt, live, options, *filter, report.rows);
  }
  SortAndMergeRows(report.rows);
  for (const GroupRow& r : report.rows) {
    report.total_bytes += r.bytes;
    report.total_rounded_bytes += r.rounded_bytes;
    report.total_count += r.count;
  }
  return report;
}

void CollapseTail(std::vector<GroupRow>& rows, size_t top) {
  if (rows.size() <= top) return;
  GroupRow others;
  others.synthetic = true;
  for (size_t i = top; i < rows.size(); ++i) {
    others.count += rows[i].count;
    others.bytes += rows[i].bytes;
    others.rounded_bytes += rows[i].rounded_bytes;
  }
  others.key = absl::StrCat("[", rows.size() - top, " others]");
  others.frames = {others.key};
  rows.resize(top);
  rows.push_back(std::move(others));
}

}  // namespace memsnap::analysis
