// Grouping, frame filters and diff on fixtures with known answers.
#include "memsnap/analysis/sites/group.h"

#include "doctest/doctest.h"
#include "memsnap/analysis/compose/check.h"
#include "memsnap/analysis/sites/blocks.h"
#include "memsnap/analysis/sites/diff.h"
#include "test_util.h"

namespace memsnap::analysis {
namespace {

using testing::LoadFixture;
using testing::ParseOrFail;
using testing::PythonPickle;

GroupReport Group(const Snapshot& snap, std::string_view at, GroupOptions o = {}) {
  auto tl = ReconstructTimeline(snap);
  REQUIRE(tl.ok());
  auto m = ParseMoment(at);
  REQUIRE(m.ok());
  auto rep = GroupLive(snap, *tl, *m, o);
  REQUIRE(rep.ok());
  int64_t bytes = 0, count = 0;
  for (const GroupRow& r : rep->rows) {
    bytes += r.bytes;
    count += r.count;
  }
  CHECK(bytes == rep->total_bytes);
  CHECK(count == rep->total_count);
  return *rep;
}

TEST_SUITE("group") {
  TEST_CASE("--by stack groups by filtered stack, root first in the key") {
    Snapshot snap = LoadFixture("timeline_training.json");
    GroupOptions by_stack;
    by_stack.by = GroupBy::kStack;
    GroupReport rep = Group(snap, "peak", by_stack);
    CHECK(rep.total_bytes == 4000);
    REQUIRE(rep.rows.size() == 3);
    CHECK(rep.rows[0].key == "train.py:5:train;model.py:10:forward");  // ceval.c frame filtered
    CHECK(rep.rows[0].bytes == 2000);
    CHECK(rep.rows[0].frames[0] == "model.py:10:forward");
    CHECK(rep.rows[1].key == "train.py:1:<module>;model.py:3:__init__");  // ties: key order
    CHECK(rep.rows[2].key == "train.py:6:train;model.py:20:backward");
  }

  TEST_CASE("--no-filter keeps the noise frames and --depth truncates to the innermost frames") {
    Snapshot snap = LoadFixture("timeline_training.json");
    GroupOptions o;
    o.by = GroupBy::kStack;
    o.filter.noise_filter = false;
    CHECK(Group(snap, "peak", o).rows[0].key ==
          "train.py:5:train;ceval.c:0:PyEval_EvalFrameDefault;model.py:10:forward");
    o = {};
    o.by = GroupBy::kStack;
    o.depth = 1;
    CHECK(Group(snap, "peak", o).rows[0].key == "model.py:10:forward");
    o = {};
    o.by = GroupBy::kFunction;
    CHECK(Group(snap, "peak", o).rows[0].key == "forward");
    o.by = GroupBy::kFile;
    GroupReport by_file = Group(snap, "peak", o);
    CHECK(by_file.rows[0].key == "model.py");
    CHECK(by_file.rows[0].bytes == 4000);
  }

  TEST_CASE("--hide and --keep regexes filter frames, and bad regexes name the flag") {
    Snapshot snap = LoadFixture("timeline_training.json");
    GroupOptions o;
    o.filter.hide = "model\\.py";
    GroupReport rep = Group(snap, "peak", o);
    CHECK(rep.rows[0].site == "train.py:5 train");  // a hidden frame never names a site
    o.filter.hide.clear();
    o.filter.keep = "backward";
    rep = Group(snap, "peak", o);
    CHECK(rep.rows[0].key == std::string(kAllFilteredRow));
    CHECK(rep.rows[0].bytes == 3000);
    o.filter.keep = std::string("(");  // not = "(": GCC 12's false -Wrestrict (GCC PR 105329)
    auto tl = ReconstructTimeline(snap);
    auto bad = GroupLive(snap, *tl, Moment{}, o);
    REQUIRE(!bad.ok());
    CHECK(std::string(bad.status().message()).starts_with("--keep (: invalid regex"));
  }

  TEST_CASE("annotation grouping uses the innermost START/END range covering the allocation") {
    Snapshot snap = LoadFixture("timeline_training.json");
    GroupOptions o;
    o.by = GroupBy::kAnnotation;
    GroupReport rep = Group(snap, "peak", o);
    REQUIRE(rep.rows.size() == 2);
    CHECK(rep.rows[0].key == "forward");
    CHECK(rep.rows[0].bytes == 3000);
    CHECK(rep.rows[1].key == std::string(kNoAnnotationRow));  // the ghost has no alloc time
    rep = Group(snap, "event:4", o);  // step2 2000, then ties by key: [no annotation], forward
    REQUIRE(rep.rows.size() == 3);
    CHECK(rep.rows[0].key == "step2");
    CHECK(rep.rows[1].key == std::string(kNoAnnotationRow));
    CHECK(rep.rows[2].key == "forward");
  }

  TEST_CASE(
      "metadata and compile-context grouping read each allocation's trace entry, and name the "
      "rows of allocations without one") {
    // testdata/metadata_fixture.py: A {step: 1, phase: fwd} + region 0/0, B "step1-fwd" + N/A,
    // C neither, D {step: 1, phase: bwd} + region 1/0; at the peak A, B, C and D are live.
    Snapshot snap = LoadFixture("metadata.json");
    GroupOptions o;
    o.by = GroupBy::kMetadata;
    GroupReport rep = Group(snap, "peak", o);
    REQUIRE(rep.rows.size() == 4);
    CHECK(rep.rows[0].key == "{step: 1, phase: bwd}");
    CHECK(rep.rows[0].bytes == 8 << 20);
    CHECK(rep.rows[1].key == "{step: 1, phase: fwd}");
    CHECK(rep.rows[2].key == "step1-fwd");
    CHECK(rep.rows[3].key == std::string(kNoMetadataRow));
    CHECK(rep.rows[3].bytes == 1 << 20);
    CHECK(rep.rows[3].synthetic);
    o.by = GroupBy::kCompileContext;
    rep = Group(snap, "peak", o);
    REQUIRE(rep.rows.size() == 3);
    CHECK(rep.rows[0].key == "Torch-Compiled Region: 1/0");
    CHECK(rep.rows[1].key == "Torch-Compiled Region: 0/0");
    CHECK(rep.rows[1].bytes == 4 << 20);
    CHECK(rep.rows[2].key == std::string(kNoCompileContextRow));  // B's "N/A" and C
    CHECK(rep.rows[2].bytes == 3 << 20);
    // At the end E (empty metadata, region 0/0) is live and B is not.
    rep = Group(snap, "end", o);
    REQUIRE(rep.rows.size() == 3);
    CHECK(rep.rows[1].key == "Torch-Compiled Region: 0/0");
    CHECK(rep.rows[1].bytes == (4 << 20) + (512 << 10));
    CHECK(ParseGroupBy("metadata").value() == GroupBy::kMetadata);
    CHECK(ParseGroupBy("compile_context").value() == GroupBy::kCompileContext);
  }

  TEST_CASE("blocks carry their allocation's metadata and compile context") {
    Snapshot snap = LoadFixture("metadata.json");
    auto tl = ReconstructTimeline(snap);
    REQUIRE(tl.ok());
    BlockQuery q;
    q.all = true;
    auto rep = SelectBlocks(snap, *tl, q);
    REQUIRE(rep.ok());
    REQUIRE(rep->rows.size() == 5);
    // In trace order: A, B, C, D, E.
    CHECK(rep->rows[0].user_metadata == "{step: 1, phase: fwd}");
    CHECK(rep->rows[0].compile_context == "Torch-Compiled Region: 0/0");
    CHECK(rep->rows[1].user_metadata == "step1-fwd");
    CHECK(rep->rows[1].compile_context.empty());  // "N/A": the feature was off
    CHECK(rep->rows[2].user_metadata.empty());
    CHECK(rep->rows[2].compile_context.empty());
    CHECK(rep->rows[4].user_metadata.empty());  // ""
    CHECK(rep->rows[4].compile_context == "Torch-Compiled Region: 0/0");
  }

  TEST_CASE("pre-window lifetimes go to their own row and the tail collapses into others") {
    Snapshot snap = LoadFixture("timeline_ring.json");
    GroupReport rep = Group(snap, "peak");
    CHECK(rep.rows[0].key == std::string(kPreWindowRow));
    CHECK(rep.rows[0].bytes == 3000);
    std::vector<GroupRow> rows = rep.rows;
    CollapseTail(rows, 1);
    REQUIRE(rows.size() == 2);
    CHECK(rows[1].key == "[1 others]");
    CHECK(rows[0].bytes + rows[1].bytes == rep.total_bytes);
  }
}

TEST_SUITE("diff") {
  TEST_CASE("diff matches sites by their site key and sorts by absolute delta") {
    Snapshot a = LoadFixture("timeline_training.json");
    Snapshot b = LoadFixture("timeline_ring.json");
    auto rep = DiffSnapshots(a, b, DiffOptions{});
    REQUIRE(rep.ok());
    CHECK(rep->live_bytes.before == 2000);
    CHECK(rep->live_bytes.after == 1600);
    REQUIRE(rep->sites.size() == 3);
    CHECK(rep->sites[0].site == "model.py:10 forward");
    CHECK(rep->sites[0].presence == Presence::kOnlyAfter);
    CHECK(rep->sites[0].delta_bytes() == 1500);
    CHECK(rep->sites[1].delta_bytes() == -1000);
    CHECK(rep->sites[1].presence == Presence::kOnlyBefore);
    CHECK(rep->sites[2].site == "model.py:3 __init__");
    CHECK(rep->sites[2].delta_bytes() == -900);
    CHECK(rep->sites_only_before == 1);
    CHECK(rep->sites_only_after == 1);
  }

  TEST_CASE("diff totals live memory by kind, and the kinds add up to the live totals") {
    Snapshot a = LoadFixture("timeline_training.json");
    Snapshot b = LoadFixture("timeline_ring.json");
    DiffOptions o;
    o.min_delta = 1000;  // the kinds count every site, shown or not
    auto rep = DiffSnapshots(a, b, o);
    REQUIRE(rep.ok());
    int64_t before = 0, after = 0;
    for (int c = 0; c < kNumCategories; ++c) {
      before += rep->before_by_category[c];
      after += rep->after_by_category[c];
    }
    CHECK(before == rep->live_bytes.before);
    CHECK(after == rep->live_bytes.after);
    // model.py:3 __init__ is module init kept alive: a parameter, 900 B of it gone.
    CHECK(rep->before_by_category[static_cast<int>(Category::kParameter)] -
              rep->after_by_category[static_cast<int>(Category::kParameter)] ==
          900);
  }

  TEST_CASE("diff of a file with itself is empty, and min-delta hides small sites") {
    Snapshot a = LoadFixture("timeline_training.json");
    Snapshot b = LoadFixture("timeline_training.json");
    auto same = DiffSnapshots(a, b, DiffOptions{});
    REQUIRE(same.ok());
    CHECK(same->sites.empty());
    CHECK(same->sites_unchanged == 2);
    CHECK(same->settings.empty());
    Snapshot c = LoadFixture("timeline_ring.json");
    DiffOptions o;
    o.min_delta = 1000;
    auto rep = DiffSnapshots(a, c, o);
    REQUIRE(rep.ok());
    CHECK(rep->sites.size() == 2);
    CHECK(rep->other_sites.size() == 1);
  }

  TEST_CASE("diff reports allocator settings that differ and refuses --at peak without traces") {
    Snapshot a = LoadFixture("timeline_training.json");
    Snapshot b = LoadFixture("timeline_expandable.json");
    auto rep = DiffSnapshots(a, b, DiffOptions{});
    REQUIRE(rep.ok());
    REQUIRE(rep->settings.size() == 1);
    CHECK(rep->settings[0].name == "allocator_settings");
    Snapshot no_trace = ParseOrFail(PythonPickle(
        "{'segments': load_json('timeline_training.json')['segments'], 'device_traces': [[]]}"));
    DiffOptions peak;
    peak.at.kind = Moment::Kind::kPeak;
    auto err = DiffSnapshots(a, no_trace, peak);
    REQUIRE(!err.ok());
    CHECK(std::string(err.status().message()).find("--at peak needs a trace") != std::string::npos);
  }

  TEST_CASE(
      "by default diff compares at each file's peak when both have a trace, else at the "
      "end, and says why") {
    Snapshot a = LoadFixture("timeline_training.json");
    Snapshot b = LoadFixture("timeline_ring.json");
    DiffOptions o;
    o.auto_moment = true;
    auto both = DiffSnapshots(a, b, o);
    REQUIRE(both.ok());
    CHECK(both->options.at.kind == Moment::Kind::kPeak);
    CHECK(both->moment_choice == MomentChoice::kBothTraced);
    Snapshot no_trace = ParseOrFail(PythonPickle(
        "{'segments': load_json('timeline_training.json')['segments'], 'device_traces': [[]]}"));
    no_trace.source.path = "old.pickle";
    auto one = DiffSnapshots(a, no_trace, o);
    REQUIRE(one.ok());
    CHECK(one->options.at.kind == Moment::Kind::kEnd);
    CHECK(one->moment_choice == MomentChoice::kUntraced);
    CHECK(one->untraced_file == "old.pickle");
  }

  TEST_CASE("diff says when no live block of either file has a stack") {
    Snapshot a = LoadFixture("frag_basic.json");  // blocks without frames, no trace
    auto rep = DiffSnapshots(a, a, DiffOptions{});
    REQUIRE(rep.ok());
    CHECK(rep->no_stacks);
    Snapshot t = LoadFixture("timeline_training.json");
    CHECK_FALSE(DiffSnapshots(t, t, DiffOptions{})->no_stacks);
  }

  TEST_CASE("diff --by metadata matches rows by the allocations' metadata") {
    Snapshot a = LoadFixture("metadata_base.json"), b = LoadFixture("metadata.json");
    DiffOptions o;
    o.at = Moment{Moment::Kind::kPeak, 0};
    o.group.by = GroupBy::kMetadata;
    auto rep = DiffSnapshots(a, b, o);
    REQUIRE(rep.ok());
    REQUIRE(!rep->sites.empty());
    CHECK(rep->sites[0].key == "{step: 1, phase: bwd}");
    CHECK(rep->sites[0].delta_bytes() == 4 << 20);
    CHECK(rep->sites.size() == 1);  // the other rows did not change
    auto growing = TopGrowingSites(a, b, 5, /*at_peak=*/true, false, CategoryNames(),
                                   GroupBy::kCompileContext);
    REQUIRE(growing.ok());
    REQUIRE(growing->sites.size() == 1);
    CHECK(growing->sites[0].key == "Torch-Compiled Region: 1/0");
  }

  TEST_CASE("diff names settings in summary's words") {
    Snapshot a = LoadFixture("oom_fragmentation.json");
    Snapshot b = LoadFixture("summary_basic.json");
    auto rep = DiffSnapshots(a, b, DiffOptions{});
    REQUIRE(rep.ok());
    bool found = false;
    for (const SettingDelta& d : rep->settings) {
      if (d.name != "max_split_size") continue;
      found = true;
      CHECK(d.before == "unlimited");
      CHECK(d.after == "128.0 MiB");
    }
    CHECK(found);
  }
}

}  // namespace
}  // namespace memsnap::analysis
