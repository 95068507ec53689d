// `memsnap oom`: verdicts, holders and remedies on fixtures whose answer is known by hand
// (testdata/oom_*.json), the shortcut for settings that provably change nothing, and the corpus.
#include "memsnap/analysis/allocator/oom.h"

#include <doctest/doctest.h>

#include "analysis/allocator/replay_internal.h"
#include "memsnap/analysis/sites/group.h"
#include "memsnap/analysis/sites/site.h"
#include "memsnap/parse/reader.h"
#include "memsnap/report/oom_render.h"
#include "test_util.h"
#include "trace_builders.h"

namespace memsnap::analysis {
namespace {

using sim::kMiB;

OomReport ExplainOrFail(const Snapshot& s, OomOptions o = {}) {
  absl::StatusOr<OomReport> r = ExplainOoms(s, o);
  REQUIRE_MESSAGE(r.ok(), r.status().message());
  return *std::move(r);
}

const OomRemedy& RemedyFor(const OomDevice& d, std::string_view conf) {
  for (const OomRemedy& m : d.remedies) {
    if (m.conf == conf) return m;
  }
  FAIL("no remedy " << conf);
  return d.remedies[0];
}

std::optional<std::string> CorpusFile(const std::string& name) {
  std::optional<std::string> dir = testing::CorpusDir();
  if (!dir) return std::nullopt;
  return *dir + "/" + name;
}

TEST_SUITE("oom") {
  TEST_CASE(
      "a request that no single free block holds is fragmentation, and the settings that "
      "fit are found by replay") {
    // Two 20 MiB segments each pinned by a 2 MiB block around an 18 MiB hole; a 30 MiB request
    // on a 64 MiB device (24 MiB left): 60 MiB free, no piece of 30 MiB.
    OomReport r = ExplainOrFail(testing::LoadFixture("oom_fragmentation.json"));
    REQUIRE(r.ooms.size() == 1);
    const OomExplanation& o = r.ooms[0];
    CHECK(o.verdict == OomVerdict::kFragmentation);
    CHECK(o.recorded);
    CHECK(o.reproduced);
    CHECK(o.event == 7);
    CHECK(o.capacity == 64 * kMiB);
    CHECK(o.requested == 30 * kMiB);
    CHECK(o.device_free == 24 * kMiB);
    CHECK(o.recorded_device_free == 24 * kMiB);
    CHECK(o.reserved == 40 * kMiB);
    CHECK(o.allocated == 4 * kMiB);
    CHECK(o.largest_free_block == 18 * kMiB);
    CHECK(o.free_bytes == 60 * kMiB);
    CHECK(o.shortfall == 0);
    CHECK(o.released_segments == 0);  // both segments hold a live block: nothing to release
    CHECK(o.site == "model.py:44 attention");
    REQUIRE(o.holders.size() == 1);
    CHECK(o.holders[0].site == "model.py:31 forward");
    CHECK(o.holders[0].bytes == 4 * kMiB);
    CHECK(o.holders[0].blocks == 2);
    REQUIRE(r.devices.size() == 1);
    const OomDevice& d = r.devices[0];
    CHECK_FALSE(d.fits());
    CHECK(d.remedies[0].fails_at == 7);
    // Expandable segments map the 30 MiB right after the last block: it fits with 4 MiB spare.
    const OomRemedy& exp = RemedyFor(d, "expandable_segments:True");
    CHECK(exp.fits);
    CHECK(exp.peak_reserved == 60 * kMiB);
    CHECK(exp.headroom == 4 * kMiB);
    // No block of this run reaches 128 MiB: the max_split_size candidates are the recorded run.
    CHECK_FALSE(RemedyFor(d, "max_split_size_mb:128").fits);
    CHECK(RemedyFor(d, "max_split_size_mb:128").same_as == "recorded");
  }

  TEST_CASE("live memory plus the request above the capacity is demand, and no setting fits") {
    OomReport r = ExplainOrFail(testing::LoadFixture("oom_demand.json"));
    REQUIRE(r.ooms.size() == 1);
    const OomExplanation& o = r.ooms[0];
    CHECK(o.verdict == OomVerdict::kDemand);
    CHECK(o.allocated == 60 * kMiB);
    CHECK(o.rounded == 10 * kMiB);
    CHECK(o.shortfall == 6 * kMiB);  // 60 + 10 - 64
    REQUIRE(o.holders.size() == 2);
    CHECK(o.holders[0].site == "model.py:10 __init__");
    CHECK(o.holders[0].bytes == 40 * kMiB);
    CHECK(o.holders[1].site == "optim.py:40 step");
    CHECK(o.holders_bytes == o.allocated);
    for (const OomRemedy& m : r.devices[0].remedies) {
      CAPTURE(m.conf);
      CHECK_FALSE(m.fits);
    }
  }

  TEST_CASE(
      "a block cached for another stream that would hold the request is cache not "
      "released") {
    OomReport r = ExplainOrFail(testing::LoadFixture("oom_streams.json"));
    REQUIRE(r.ooms.size() == 1);
    const OomExplanation& o = r.ooms[0];
    CHECK(o.verdict == OomVerdict::kCacheNotReleased);
    CHECK(o.free.other_streams_largest == 18 * kMiB);
    CHECK(o.free.other_streams_stream == 7);
    CHECK(o.shortfall == 0);
    CHECK(report::OomVerdictText(o).find("stream 7") != std::string::npos);
  }

  TEST_CASE("a free block the oversize rules refuse is cache not released") {
    OomExplanation o;
    o.reproduced = true;
    o.capacity = 100 * kMiB;
    o.allocated = 40 * kMiB;
    o.reserved = 90 * kMiB;
    o.rounded = 30 * kMiB;
    o.free.oversize_refused = 50 * kMiB;
    sim::AllocatorConfig c;
    c.max_split_size = 40 * kMiB;
    JudgeOom(c, o);
    CHECK(o.verdict == OomVerdict::kCacheNotReleased);
    CHECK(o.max_split_size == 40 * kMiB);
    CHECK(report::OomVerdictText(o).find("max_split_size (40.0 MiB)") != std::string::npos);
  }

  TEST_CASE(
      "the answer of a fragmentation failure is typed: the verdict, and the candidate that fits "
      "with the lowest peak") {
    OomReport r = ExplainOrFail(testing::LoadFixture("oom_fragmentation.json"));
    REQUIRE(r.devices.size() == 1);
    const OomDevice& d = r.devices[0];
    REQUIRE(d.answer.has_value());
    const OomAnswer& a = *d.answer;
    CHECK(a.first == 0);
    CHECK_FALSE(a.peak_too_big);
    CHECK(a.verdict == OomVerdict::kFragmentation);
    CHECK(a.excess == 0);  // the live memory and the request fit: the layout does not
    // Expandable segments fit (60 MiB peak, 4 MiB spare); the answer names the lowest peak.
    REQUIRE(d.best_fitting > 0);
    CHECK(d.fitting_candidates >= 1);
    for (const OomRemedy& m : d.remedies) {
      if (m.fits && &m != &d.remedies[0]) {
        CHECK(d.remedies[d.best_fitting].peak_reserved <= m.peak_reserved);
      }
    }
    CHECK(RemedyFor(d, "expandable_segments:True").fits);  // among them, by hand (above)
    CHECK(a.cut == OomCut::kNone);                         // a setting fits: nothing to cut
    // The smallest memory the run fits on: one of the searched settings, none over 1% below it.
    REQUIRE(d.smallest_fit >= 0);
    for (const OomRemedy& m : d.remedies) {
      if (m.fits_on > 0) CHECK(m.fits_on >= d.remedies[d.smallest_fit].fits_on * 99 / 100);
    }
    const std::vector<report::OomAnswerLine> lines = report::OomAnswerLines(r, d);
    REQUIRE(lines.size() == 2);
    CHECK(lines[1].text.find(d.remedies[d.best_fitting].settings) != std::string::npos);
  }

  TEST_CASE(
      "the answer of a demand failure carries the cut: the shortfall, the kinds with a lever that "
      "cover it and the largest site") {
    OomReport r = ExplainOrFail(testing::LoadFixture("oom_demand.json"));
    REQUIRE(r.devices.size() == 1);
    const OomDevice& d = r.devices[0];
    REQUIRE(d.answer.has_value());
    const OomAnswer& a = *d.answer;
    const OomExplanation& o = r.ooms[a.first];
    CHECK(a.verdict == OomVerdict::kDemand);
    CHECK(a.excess == 6 * kMiB);  // 60 + 10 - 64
    CHECK(d.best_fitting == -1);  // no setting fits
    CHECK(d.fitting_candidates == 0);
    CHECK(a.cut == OomCut::kLive);
    CHECK(a.cut_bytes == 6 * kMiB);
    CHECK_FALSE(a.cut_approximate);
    CHECK(a.cut_site);
    // The kinds are typed; the cut names those with a lever, largest first, until they cover
    // it, and knows what all of them hold together.
    std::vector<OomHolder> expected;
    int64_t taken = 0, levered = 0;
    for (const OomHolder& k : o.categories) {
      if (k.category == Category::kUnknown) continue;
      levered += k.bytes;
      if (taken >= a.cut_bytes) continue;
      expected.push_back(k);
      taken += k.bytes;
    }
    REQUIRE(a.cut_kinds.size() == expected.size());
    REQUIRE_FALSE(a.cut_kinds.empty());
    for (size_t i = 0; i < expected.size(); ++i) {
      CHECK(a.cut_kinds[i].category == expected[i].category);
      CHECK(a.cut_kinds[i].bytes == expected[i].bytes);
    }
    CHECK(a.cut_levered_bytes == levered);
    for (const OomHolder& h : o.holders) CHECK_FALSE(h.synthetic);  // both name a line
    CHECK_FALSE(o.site_synthetic);
    CHECK(o.usable_capacity == 64 * kMiB);
  }

  TEST_CASE("a run whose own live peak is over the given memory is answered by that peak") {
    Snapshot s = testing::LoadFixture("oom_demand.json");
    OomOptions opts;
    opts.device_memory = 32 * kMiB;
    OomReport r = ExplainOrFail(s, opts);
    REQUIRE(r.devices.size() == 1);
    const OomDevice& d = r.devices[0];
    REQUIRE(d.trace_peak_live > 32 * kMiB);
    REQUIRE(d.answer.has_value());
    CHECK(d.answer->peak_too_big);
    CHECK(d.answer->excess == d.trace_peak_live - 32 * kMiB);
    if (d.best_fitting < 0) {
      CHECK(d.answer->cut == OomCut::kLive);
      CHECK(d.answer->cut_bytes == d.answer->excess);
      CHECK_FALSE(d.answer->cut_site);  // at the peak, not at a failure
    }
  }

  TEST_CASE("a given capacity predicts where the run fails, and a larger one that it fits") {
    Snapshot s = testing::LoadFixture("oom_fragmentation.json");
    OomOptions o;
    o.device_memory = 30 * kMiB;
    OomReport small = ExplainOrFail(s, o);
    REQUIRE(small.ooms.size() == 1);
    // The second 20 MiB segment does not fit beside the first: the 2 MiB alloc at event 4 fails.
    CHECK(small.ooms[0].event == 4);
    CHECK_FALSE(small.ooms[0].recorded);
    CHECK(small.ooms[0].requested == 2 * kMiB);
    CHECK(small.ooms[0].segment_bytes == 20 * kMiB);
    CHECK(small.ooms[0].capacity == 30 * kMiB);
    o.device_memory = 80 * kMiB;
    OomReport big = ExplainOrFail(s, o);
    CHECK(big.ooms.empty());
    REQUIRE(big.devices.size() == 1);
    CHECK(big.devices[0].fits());
    CHECK(big.devices[0].remedies[0].peak_reserved == 70 * kMiB);
    CHECK(big.devices[0].remedies[0].headroom == 10 * kMiB);
  }

  TEST_CASE(
      "the smallest memory each setting fits on is one its replay completes on, and 2 MiB less "
      "fails") {
    Snapshot s = testing::LoadFixture("oom_fragmentation.json");
    OomReport r = ExplainOrFail(s);  // fails on the 64 MiB its oom entry implies
    REQUIRE(r.devices.size() == 1);
    REQUIRE_FALSE(r.devices[0].fits());
    for (const OomRemedy& m : r.devices[0].remedies) {
      CAPTURE(m.conf);
      REQUIRE(m.fits_on > 0);
      CHECK(m.fits_on >= r.devices[0].trace_peak_live);
      OomOptions o;
      o.search_fits = false;
      o.candidates = {m.conf == "recorded" ? std::string("max_split_size_mb:4096") : m.conf};
      o.device_memory = m.fits_on;
      OomReport at = ExplainOrFail(s, o);
      CHECK(RemedyFor(at.devices[0], o.candidates[0]).fits);
      o.device_memory = m.fits_on - 2 * kMiB;
      OomReport below = ExplainOrFail(s, o);
      CHECK_FALSE(RemedyFor(below.devices[0], o.candidates[0]).fits);
      CHECK(RemedyFor(below.devices[0], o.candidates[0]).fits_on == 0);  // no search asked
    }
  }

  TEST_CASE("without an oom entry or a capacity, or without a trace, there is nothing to explain") {
    Snapshot s = testing::LoadFixture("oom_demand.json");
    s.events.pop_back();  // the oom entry
    s.traces[0].end -= 1;
    absl::StatusOr<OomReport> r = ExplainOoms(s, {});
    CHECK(absl::IsFailedPrecondition(r.status()));
    CHECK(std::string(r.status().message()).find("--device-memory") != std::string::npos);
    Snapshot empty;
    CHECK(absl::IsFailedPrecondition(ExplainOoms(empty, {}).status()));
  }

  TEST_CASE(
      "an oom entry's capacity is refused where the dumped segments do not explain the trace") {
    // Three 20 MiB segments are mapped in the trace and the oom entry says 4 MiB was free: 64 MiB.
    Snapshot s = testing::LoadFixture("oom_demand.json");
    CHECK(ExplainOrFail(s).devices.at(0).capacity == 64 * kMiB);
    // A dump that keeps one of them (a trace sliced or repeated past its final state): walked back
    // from it, reserved would go below zero, so device_free + reserved means nothing.
    s.segments.resize(1);
    absl::StatusOr<OomReport> r = ExplainOoms(s, {});
    REQUIRE(absl::IsFailedPrecondition(r.status()));
    const std::string message(r.status().message());
    CHECK(message.find("implies 24.0 MiB of device memory") != std::string::npos);
    CHECK(message.find("--device-memory") != std::string::npos);
    // A capacity given by the user is still used.
    OomOptions o;
    o.device_memory = 64 * kMiB;
    CHECK(ExplainOrFail(s, o).devices.at(0).capacity == 64 * kMiB);
  }

  TEST_CASE(
      "an OOM site is named by the attribution model: the user's frame and the call it made") {
    Snapshot s;
    auto frame = [&](std::string_view name, std::string_view file, int64_t line) {
      return s.frames.Intern({s.strings.Intern(name), s.strings.Intern(file), line});
    };
    const std::string pkgs = "/env/lib/python3.10/site-packages/";
    FrameId malloc =
        frame("c10::cuda::CUDACachingAllocator::malloc", "CUDACachingAllocator.cpp", 1);
    FrameId linear = frame("forward", pkgs + "torch/nn/modules/linear.py", 116);
    FrameId mlp = frame("forward", pkgs + "timm/layers/mlp.py", 44);
    FrameId user = frame("train_step", "/home/me/train.py", 30);
    std::vector<FrameId> deep = {malloc, linear, mlp, user};
    std::vector<FrameId> torch_only = {malloc, linear};
    std::vector<FrameId> native = {malloc};
    StackId a = s.stacks.Intern(deep);
    StackId b = s.stacks.Intern(torch_only);
    StackId c = s.stacks.Intern(native);
    SiteNamer namer(s, CategoryNames());
    // The attribution model's labels (docs/attribution.md): the model library's layer (timm's
    // MLP) owns the memory, the library call it made says what, and the user's frame that ran the
    // model follows; the allocator's own frames never name a site.
    CHECK(namer.Label(a) ==
          "torch/nn/modules/linear.py:116 forward \u2190 timm/layers/mlp.py:44 forward \u2190 "
          "train.py:30 train_step");
    CHECK(namer.Label(b) == "torch/nn/modules/linear.py:116 forward");
    CHECK(namer.Label(c) == kMachineryOnlyRow);
    CHECK(namer.Label(StackTable::kEmpty) == kTracedNoStackRow);
    CHECK(namer.Label(StackTable::kEmpty, /*before_trace=*/true) == kBeforeRecordingRow);
    CHECK(ShortenLibraryPath("/home/me/train.py:30:f") == "/home/me/train.py:30:f");
    CHECK(ShortenLibraryPath("/usr/lib/python3/dist-packages/numpy/x.py:1:g") == "numpy/x.py:1:g");
  }

  TEST_CASE(
      "where no setting fits, the batch share found is one the replay fits at and fails just "
      "above") {
    // A training step (parameters, optimizer state, activations, temporaries, an input batch)
    // whose live peak is 21.5 MiB, on 22 MiB: no allocator setting fits.
    Snapshot s = testing::LoadFixture("attribution_training.json");
    OomOptions o;
    o.device_memory = 22 * kMiB;
    o.search_fits = false;
    const OomReport r = ExplainOrFail(s, o);
    REQUIRE(r.devices.size() == 1);
    for (const OomRemedy& m : r.devices[0].remedies) CHECK_FALSE(m.fits);
    REQUIRE(r.devices[0].batch_share_fits.has_value());
    const double share = *r.devices[0].batch_share_fits;
    CHECK(share > 0.3);
    CHECK(share < 0.9);
    CHECK(share * 128 == static_cast<int>(share * 128));  // bisected to 1/128

    // Independently: the same snapshot with those allocations scaled in its own trace, replayed
    // with nothing searched, fits at the share and not 1/128 above it.
    TimelineOptions to;
    to.keep = KeepLifetimes::kAll;
    absl::StatusOr<Timeline> tl = ReconstructTimeline(s, to);
    REQUIRE(tl.ok());
    SiteNamer namer(s, CategoryNames());
    auto scaled = [&](double f) {
      Snapshot t = testing::LoadFixture("attribution_training.json");
      for (const BlockLifetime& lt : tl->devices[0].blocks) {
        const Category c = namer.CategoryOf(tl->devices[0], lt);
        if (c != Category::kActivation && c != Category::kTemporary && c != Category::kInput) {
          continue;
        }
        for (LocalEvent e : {lt.alloc_event, lt.free_requested_event, lt.free_completed_event}) {
          if (!e.index()) continue;
          int64_t& size = t.events[*e.index()].size;
          size = std::max<int64_t>(1, static_cast<int64_t>(static_cast<double>(size) * f));
        }
      }
      OomOptions plain = o;
      plain.batch_search = false;
      return ExplainOrFail(t, plain).devices[0].fits();
    };
    CHECK(scaled(share));
    CHECK_FALSE(scaled(share + 1.0 / 128));

    // Not searched where a setting fits, nor where nothing grows with the batch (parameters and
    // optimizer state only); zero where even none of it fits (a 20 MiB segment fills 20 MiB).
    CHECK_FALSE(ExplainOrFail(testing::LoadFixture("oom_fragmentation.json"))
                    .devices[0]
                    .batch_share_fits.has_value());
    CHECK_FALSE(ExplainOrFail(testing::LoadFixture("oom_demand.json")).devices[0].batch_share_fits);
    o.device_memory = 20 * kMiB;
    CHECK(ExplainOrFail(s, o).devices[0].batch_share_fits == 0.0);
  }

  TEST_CASE("a setting that cannot parse names itself") {
    OomOptions o;
    o.candidates = {"max_split_size_mb:5"};
    absl::StatusOr<OomReport> r = ExplainOoms(testing::LoadFixture("oom_demand.json"), o);
    CHECK(absl::IsInvalidArgument(r.status()));
    CHECK(std::string(r.status().message()).find("max_split_size_mb:5") != std::string::npos);
  }

  TEST_CASE("the default candidates leave out what equals the recorded settings") {
    sim::AllocatorConfig rec = *sim::ParseAllocatorConf("max_split_size_mb:256");
    std::vector<std::string> c = DefaultOomCandidates(rec);
    CHECK(c.size() == 5);
    CHECK(std::find(c.begin(), c.end(), "max_split_size_mb:256") == c.end());
    CHECK(c[0] == "expandable_segments:True");
    CHECK(DefaultOomCandidates(*sim::ParseAllocatorConf("expandable_segments:True"))[0] ==
          "expandable_segments:False");
  }

  TEST_CASE("a max_split_size no block reaches takes exactly the recorded decisions") {
    // Requests up to 60 MiB: limits of 128 and 512 MiB change nothing, 32 MiB does.
    std::vector<TraceEvent> ev;
    uint64_t addr = 0x1000000;
    for (int i = 0; i < 40; ++i) {
      const int64_t n = (i % 7 + 1) * 9 * kMiB - 12345 * i;
      ev.push_back(testing::Ev(Action::kAlloc, addr + 0x10000000ULL * i, n));
      if (i % 3 == 2) {
        ev.push_back(testing::Ev(Action::kFreeRequested, addr + 0x10000000ULL * (i - 1), 0));
        ev.push_back(testing::Ev(Action::kFreeCompleted, addr + 0x10000000ULL * (i - 1), 0));
      }
    }
    Snapshot s = testing::TraceSnapshot(ev);
    const sim::AllocatorConfig rec = sim::ConfigFromSettings(s.settings);
    PreparedTrace p = PrepareTrace(s, s.traces[0], EmptyCacheMode::kHeuristic, rec, true);
    auto conf = [&](const char* c) { return *sim::ApplyAllocatorConf(rec, c); };
    CHECK(SameDecisions(p, rec, conf("max_split_size_mb:128")));
    CHECK(SameDecisions(p, rec, conf("max_split_size_mb:512")));
    CHECK_FALSE(SameDecisions(p, rec, conf("max_split_size_mb:32")));
    CHECK_FALSE(SameDecisions(p, rec, conf("max_split_size_mb:128,expandable_segments:True")));
    CHECK_FALSE(SameDecisions(p, rec, conf("roundup_power2_divisions:4")));
    // What the shortcut claims, checked by running both on a tight device.
    for (int64_t cap : {int64_t{150} * kMiB, int64_t{400} * kMiB}) {
      ReplayOptions ro;
      ro.device_memory = cap;
      absl::StatusOr<ReplayReport> a = Replay(s,
                                              {{"recorded", rec},
                                               {"128", conf("max_split_size_mb:128")},
                                               {"32", conf("max_split_size_mb:32")}},
                                              ro);
      REQUIRE(a.ok());
      auto same = [](const ConfigResult& x, const ConfigResult& y) {
        return x.peak_reserved == y.peak_reserved && x.final_reserved == y.final_reserved &&
               x.cuda_mallocs == y.cuda_mallocs && x.cuda_frees == y.cuda_frees &&
               x.ooms.size() == y.ooms.size() && x.alloc_retries == y.alloc_retries &&
               x.inactive_split_at_peak == y.inactive_split_at_peak;
      };
      CHECK(same(a->results[0], a->results[1]));
      CHECK_FALSE(same(a->results[0], a->results[2]));  // the comparison can tell them apart
    }
  }

  TEST_CASE("results do not depend on the number of threads") {
    Snapshot s = testing::LoadFixture("oom_fragmentation.json");
    OomOptions one;
    one.max_threads = 1;
    OomOptions all;
    CHECK(report::OomToJson(ExplainOrFail(s, one)).dump() ==
          report::OomToJson(ExplainOrFail(s, all)).dump());
  }

  TEST_CASE("lifetimes built where they are read explain as a timeline that kept them all" *
            doctest::test_suite("corpus")) {
    // `oom` reads the file with a timeline of peaks only and builds the lifetimes around its
    // searches (OomOptions::build_lifetimes); a given full timeline must answer the same,
    // holders, categories, the batch share and the zero_grad lever included.
    std::vector<std::pair<Snapshot, std::optional<int64_t>>> inputs;
    inputs.emplace_back(testing::LoadFixture("oom_fragmentation.json"), std::nullopt);
    if (std::optional<std::string> nesta =
            CorpusFile("Nesta-gitU_discrete_diffusion__memory_snapshot__1ab3368e.json")) {
      absl::StatusOr<Snapshot> s = parse::ReadSnapshot(*nesta, {});
      REQUIRE(s.ok());
      inputs.emplace_back(*std::move(s), std::nullopt);  // no setting fits: the batch share
    }
    for (const auto& [snap, memory] : inputs) {
      INFO(snap.source.path);
      TimelineOptions all_options;
      all_options.curve = false;
      TimelineOptions none_options = all_options;
      none_options.keep = KeepLifetimes::kNone;
      absl::StatusOr<Timeline> all = ReconstructTimeline(snap, all_options);
      absl::StatusOr<Timeline> none = ReconstructTimeline(snap, none_options);
      REQUIRE(all.ok());
      REQUIRE(none.ok());
      OomOptions given;
      given.device_memory = memory;
      given.timeline = &*all;
      OomOptions built = given;
      built.timeline = &*none;
      built.build_lifetimes = true;
      OomOptions without = built;
      without.build_lifetimes = false;
      const std::string want = report::OomToJson(ExplainOrFail(snap, given)).dump();
      CHECK(report::OomToJson(ExplainOrFail(snap, built)).dump() == want);
      // Without the lifetimes the holders' categories are what each stack shows alone.
      if (snap.source.path.find("Nesta") != std::string::npos) {
        CHECK(report::OomToJson(ExplainOrFail(snap, without)).dump() != want);
      }
    }
  }

  TEST_CASE("the corpus OOMs are explained as recorded" * doctest::test_suite("corpus")) {
    std::optional<std::string> nesta =
        CorpusFile("Nesta-gitU_discrete_diffusion__memory_snapshot__1ab3368e.json");
    if (!nesta) {
      MESSAGE("skipped: the corpus (MEMSNAP_CORPUS_DIR) is absent");
      return;
    }
    {
      absl::StatusOr<Snapshot> s = parse::ReadSnapshot(*nesta, {});
      REQUIRE(s.ok());
      OomReport r = ExplainOrFail(*s);
      REQUIRE(r.ooms.size() == 1);
      const OomExplanation& o = r.ooms[0];
      CHECK(o.event == 1117);
      CHECK(o.reproduced);
      CHECK(o.device_free == 264634368);  // as the trace recorded it
      CHECK(o.recorded_device_free == 264634368);
      CHECK(o.requested == 402653184);
      // The segment_free right before the oom entry is the retry releasing a cached segment.
      CHECK(o.released_segments == 1);
      CHECK(o.released_bytes == 100663296);
      CHECK(o.verdict == OomVerdict::kDemand);
      CHECK(o.holders_bytes == o.allocated);
      REQUIRE(!o.holders.empty());
      // The user's line that called into timm, not timm's own frame.
      CHECK(o.holders[0].site.ends_with("nets/transformers/dit.py:125 forward"));
      CHECK_FALSE(r.devices[0].fits());
    }
    {
      absl::StatusOr<Snapshot> s = parse::ReadSnapshot(
          *CorpusFile("ConstructorSun_code_location__memory_snapshot__b5ef67ce.pickle"), {});
      REQUIRE(s.ok());
      OomReport r = ExplainOrFail(*s);
      REQUIRE(r.ooms.size() == 1);  // devices 0 and 2 have no oom entry
      CHECK(r.ooms[0].device == 1);
      CHECK(r.ooms[0].event == 421);
      CHECK(r.ooms[0].reproduced);
      CHECK(r.ooms[0].device_free == r.ooms[0].recorded_device_free);
      CHECK(r.ooms[0].verdict == OomVerdict::kDemand);
      // The user's own line, and the torch call it made.
      CHECK(r.ooms[0].site == "relu \u2190 models.py:181 update_nodes");
      CHECK(report::OomReportNotes(r).size() == 2);
    }
    {
      absl::StatusOr<Snapshot> s =
          parse::ReadSnapshot(*CorpusFile("Yiyi_LLM-inference__oom_snapshot__fc31f1ea.pickle"), {});
      REQUIRE(s.ok());
      // No oom entry: the capacity must be given, and the message says what the dump shows.
      absl::Status no_capacity = ExplainOoms(*s, {}).status();
      CHECK(absl::IsFailedPrecondition(no_capacity));
      CHECK(std::string(no_capacity.message()).find("cached free") != std::string::npos);
      CHECK(std::string(no_capacity.message()).find("pytorch_backend.py:190 allocate 11.0 GiB") !=
            std::string::npos);
      OomOptions o;
      o.device_memory = int64_t{10} << 30;
      OomReport r = ExplainOrFail(*s, o);
      REQUIRE(r.ooms.size() == 1);
      CHECK(r.ooms[0].event == kPreexistingEvent);  // all 11 GiB were allocated before the trace
      CHECK(r.ooms[0].verdict == OomVerdict::kDemand);
      CHECK(r.ooms[0].site.ends_with("pytorch_backend.py:190 allocate"));
      o.device_memory = int64_t{12} << 30;
      CHECK(ExplainOrFail(*s, o).ooms.empty());
    }
  }
}

}  // namespace
}  // namespace memsnap::analysis
