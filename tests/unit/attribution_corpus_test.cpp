// The attribution model on every file of the real corpus (skips when absent): no label is
// machinery while the stack has a Python frame or an autograd node, labels are distinct in every
// table, and categories add up.
#include <map>
#include <set>
#include <sstream>

#include "doctest/doctest.h"
#include "memsnap/analysis/attribution/attribution.h"
#include "memsnap/analysis/sites/blocks.h"
#include "memsnap/analysis/sites/categories.h"
#include "memsnap/analysis/sites/diff.h"
#include "memsnap/analysis/sites/group.h"
#include "memsnap/analysis/sites/leaks.h"
#include "memsnap/analysis/sites/lifetime_sites.h"
#include "memsnap/parse/reader.h"
#include "memsnap/report/export_tables.h"
#include "test_util.h"
#include "timeline_points.h"

namespace memsnap::analysis {
namespace {

// Labels of rows with different keys differ.
template <class Row>
void CheckDistinct(const std::vector<Row>& rows, const std::string& table) {
  std::map<std::string, std::string> key_of;
  for (const Row& r : rows) {
    auto [it, inserted] = key_of.try_emplace(r.site, r.key);
    INFO(table << ": " << r.site);
    CHECK((inserted || it->second == r.key));
  }
}

// A stack with a Python frame or an autograd node is named by them alone: its owner is one of its
// Python frames or its node, and what it called is one of its operators or Python functions,
// torch.compile, never a machinery frame (allocator, dispatcher, unwinder, CPython, libc).
void CheckLabels(const Snapshot& snap) {
  Attribution attr(snap, nullptr);
  for (size_t s = 1; s < snap.stacks.size(); ++s) {
    const StackId id(static_cast<uint32_t>(s));
    bool owner_frames = false;
    // "torch.compile": what a user's frame ran through compiled code (docs/attribution.md).
    std::set<std::string> owners, whats = {"", "torch.compile"};
    for (FrameId f : snap.stacks.Get(id)) {
      std::string_view name = snap.strings.Get(snap.frames.Get(f).name);
      switch (attr.ClassOf(f)) {
        case FrameClass::kPython:
          owner_frames = true;
          owners.insert(attr.PythonFrameText(f));
          whats.insert(attr.PythonFrameText(f));
          whats.insert(std::string(name));
          break;
        case FrameClass::kNode:
          owner_frames = true;
          owners.insert(NodeName(name));
          break;
        case FrameClass::kOp:
          whats.insert(OpName(name));
          break;
        default:
          break;
      }
    }
    if (!owner_frames) continue;
    const SiteInfo& site = attr.Site(id);
    INFO(snap.source.path << ": " << site.BaseLabel());
    CHECK((site.kind == SiteKind::kPython || site.kind == SiteKind::kBackward));
    std::string owner = site.owner.substr(0, site.owner.find(" ("));  // "BmmBackward0 (bmm)"
    CHECK(owners.count(site.kind == SiteKind::kBackward ? owner : site.owner) == 1);
    CHECK(whats.count(site.what) == 1);
  }
}

TEST_SUITE("attribution-corpus") {
  TEST_CASE(
      "on every corpus file, labels name owners, tables keep them apart and categories add up" *
      doctest::test_suite("corpus")) {
    std::vector<std::string> files = testing::CorpusFiles();
    if (files.empty()) MESSAGE("corpus absent: skipped");
    const Snapshot* previous = nullptr;
    std::vector<Snapshot> kept;
    kept.reserve(files.size());
    for (const std::string& path : files) {
      INFO(path);
      auto snap = parse::ReadSnapshot(path);
      REQUIRE(snap.ok());
      CheckLabels(*snap);
      {
        // PhaseOf decides a phase without naming the site (issue 54): the same as the site's.
        Attribution phases(*snap, nullptr), sites(*snap, nullptr);
        for (size_t s = 0; s < snap->stacks.size(); ++s) {
          const StackId id(static_cast<uint32_t>(s));
          CHECK(phases.PhaseOf(id) == sites.Site(id).phase);
        }
      }
      auto tl = ReconstructTimeline(*snap);
      REQUIRE(tl.ok());
      for (Moment m : {Moment{Moment::Kind::kPeak, 0}, Moment{Moment::Kind::kEnd, 0}}) {
        for (GroupBy by : {GroupBy::kSite, GroupBy::kStack, GroupBy::kCategory}) {
          GroupOptions o;
          o.by = by;
          auto rep = GroupLive(*snap, *tl, m, o);
          REQUIRE(rep.ok());
          CheckDistinct(rep->rows, "top");
          int64_t sum = 0;
          for (const GroupRow& r : rep->rows) {
            int64_t categories = 0;
            for (int64_t b : r.category_bytes) categories += b;
            CHECK(categories == r.bytes);
            sum += r.bytes;
          }
          CHECK(sum == rep->total_bytes);
        }
      }
      // Categories over time add up to the live curve at every event.
      auto context = GroupContext::Create(*snap, GroupOptions{});
      REQUIRE(context.ok());
      for (const DeviceTimeline& dt : tl->devices) {
        CategoryCurve curve = BuildCategoryCurve(**context, dt);
        std::vector<TimelinePoint> events;
        for (int64_t e = -1; e < static_cast<int64_t>(dt.num_events); ++e)
          events.push_back(testing::Point(e));
        std::vector<CategoryBytes> at = SampleCategoryCurve(curve, events);
        int64_t mismatches = 0;
        for (size_t i = 0; i < events.size(); ++i) {
          int64_t total = 0;
          for (int64_t b : at[i]) total += b;
          mismatches += total != testing::LiveAt(dt, events[i].index());
        }
        CHECK(mismatches == 0);
      }
      // blocks and the CSV export: one label per site.
      BlockQuery q;
      q.all = true;
      auto blocks = SelectBlocks(*snap, *tl, q);
      REQUIRE(blocks.ok());
      std::map<std::string, std::string> key_of_label;
      Attribution attr(*snap, nullptr);
      for (const BlockRow& r : blocks->rows) {
        const std::string key = r.lifetime.cls == LifetimeClass::kPreWindow
                                    ? std::string(kPreWindowRow)
                                    : attr.Site(r.lifetime.stack).key;
        auto [it, inserted] = key_of_label.try_emplace(r.site, key);
        INFO("blocks: " << r.site);
        CHECK((inserted || it->second == key));
      }
      std::ostringstream csv;
      std::vector<LifetimeRef> all;
      for (uint32_t d = 0; d < tl->devices.size(); ++d) {
        for (uint32_t i = 0; i < tl->devices[d].blocks.size(); ++i) all.push_back({d, i});
      }
      report::WriteLifetimesCsv(*snap, *tl, LifetimeSitesOf(**context, *tl, all, false), csv);
      CHECK(!csv.str().empty());
      if (!snap->events.empty()) {
        auto leaks = AnalyzeTraceLeaks(*snap, LeakOptions{}, StepOptions{});
        if (leaks.ok()) CheckDistinct(leaks->sites, "leaks");
      }
      kept.push_back(std::move(*snap));
      if (previous != nullptr) {
        auto diff = DiffSnapshots(*previous, kept.back(), DiffOptions{});
        REQUIRE(diff.ok());
        CheckDistinct(diff->sites, "diff");
      }
      previous = &kept.back();
    }
  }
}

}  // namespace
}  // namespace memsnap::analysis
