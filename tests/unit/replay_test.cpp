// The replay driver: cold/warm start, inferred empty_cache, implied capacity, --verify on traces
// the simulator itself recorded, and invariants over the real corpus.
#include "memsnap/analysis/allocator/replay.h"

#include <doctest/doctest.h>

#include "analysis/allocator/replay_internal.h"
#include "memsnap/parse/reader.h"
#include "test_util.h"
#include "trace_builders.h"

namespace memsnap::analysis {
namespace {

using sim::kMiB;
using testing::Ev;
using testing::TraceSnapshot;

ReplayReport ReplayOrFail(const Snapshot& s, std::vector<ReplayConfig> configs,
                          ReplayOptions options = {}) {
  absl::StatusOr<ReplayReport> r = Replay(s, configs, options);
  REQUIRE_MESSAGE(r.ok(), r.status().message());
  return *std::move(r);
}

// Records a synthetic trace with the simulator itself: segment events are emitted inside the
// malloc, before its alloc entry, exactly as PyTorch orders them.
Snapshot RecordWithSimulator(const std::string& conf, bool end_with_empty_cache) {
  absl::StatusOr<sim::AllocatorConfig> cfg = sim::ParseAllocatorConf(conf);
  REQUIRE(cfg.ok());
  sim::VirtualDeviceMemory device;
  sim::CachingAllocator alloc(*cfg, &device);
  std::vector<sim::SegmentEvent> log;
  alloc.SetEventLog(&log);
  std::vector<TraceEvent> events;
  StreamTable streams;
  size_t logged = 0;
  auto flush = [&] {
    for (; logged < log.size(); ++logged) {
      const sim::SegmentEvent& e = log[logged];
      Action a = e.action == sim::SegmentAction::kAlloc  ? Action::kSegmentAlloc
                 : e.action == sim::SegmentAction::kFree ? Action::kSegmentFree
                 : e.action == sim::SegmentAction::kMap  ? Action::kSegmentMap
                                                         : Action::kSegmentUnmap;
      events.push_back(Ev(a, e.addr, e.size, streams.Intern(e.stream)));
    }
  };
  std::vector<std::pair<sim::BlockRef, int64_t>> live;
  uint64_t seed = 12345;
  auto next = [&] {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    return seed >> 33;
  };
  for (int i = 0; i < 3000; ++i) {
    if (live.size() < 40 && (next() % 3 != 0 || live.empty())) {
      const int64_t sizes[] = {700,      4096,          300000,    kMiB,       kMiB + 1,  3 * kMiB,
                               9 * kMiB, 12 * kMiB + 7, 40 * kMiB, 130 * kMiB, 260 * kMiB};
      int64_t n = sizes[next() % 11] + static_cast<int64_t>(next() % 1000);
      int64_t stream = next() % 5 == 0 ? 7 : 0;
      std::optional<sim::BlockRef> b = alloc.Malloc(n, stream);
      REQUIRE(b.has_value());
      flush();
      events.push_back(Ev(Action::kAlloc, alloc.BlockPtr(*b), n, streams.Intern(stream)));
      live.push_back({*b, n});
    } else {
      size_t k = next() % live.size();
      auto [b, n] = live[k];
      live.erase(live.begin() + static_cast<std::ptrdiff_t>(k));
      uint64_t ptr = alloc.BlockPtr(b);
      alloc.Free(b);
      events.push_back(Ev(Action::kFreeRequested, ptr, n));
      events.push_back(Ev(Action::kFreeCompleted, ptr, n));
    }
  }
  if (end_with_empty_cache) {
    alloc.EmptyCache();
    flush();
  }
  Snapshot s = TraceSnapshot(std::move(events), std::move(streams));
  s.settings.expandable_segments = cfg->expandable_segments;
  s.settings.roundup_power2_divisions = cfg->roundup_power2_divisions;
  s.settings.max_split_size = cfg->max_split_size == sim::kUnlimitedSize ? -1 : cfg->max_split_size;
  for (const sim::SegmentView& v : alloc.Segments()) {
    Segment seg;
    seg.address = v.base;
    seg.stream = v.stream;
    seg.is_small = v.is_small;
    seg.is_expandable = v.is_expandable;
    seg.first_block = static_cast<uint32_t>(s.blocks.size());
    for (const sim::BlockView& b : v.blocks) {
      Block blk;
      blk.address = b.ptr;
      blk.size = b.size;
      blk.requested_size = b.requested;
      blk.state = b.allocated ? BlockState::kActiveAllocated : BlockState::kInactive;
      blk.segment = SegmentId(static_cast<uint32_t>(s.segments.size()));
      s.blocks.push_back(blk);
      seg.total_size += b.size;
    }
    seg.num_blocks = static_cast<uint32_t>(v.blocks.size());
    s.segments.push_back(seg);
  }
  return s;
}

}  // namespace

TEST_SUITE("replay") {
  TEST_CASE("replaying a trace the simulator recorded reproduces it exactly") {
    for (const char* conf : {"", "max_split_size_mb:200", "expandable_segments:True",
                             "roundup_power2_divisions:4,max_split_size_mb:64"}) {
      std::string conf_text = conf;
      CAPTURE(conf_text);
      for (bool empty_cache : {false, true}) {
        Snapshot s = RecordWithSimulator(conf, empty_cache);
        ReplayOptions o;
        o.verify = true;
        ReplayReport r = ReplayOrFail(s, {{"recorded", sim::ConfigFromSettings(s.settings)}}, o);
        REQUIRE(r.verify.has_value());
        const VerifyResult& v = *r.verify;
        CHECK(v.segment_events > 0);
        CHECK(v.matched == v.segment_events);
        CHECK(v.simulated_events == v.segment_events);
        CHECK(v.allocs_matched == v.allocs);
        CHECK(v.exact());
        CHECK(v.sim_final_reserved == v.real_final_reserved);
        CHECK(r.preexisting_blocks == 0);
        CHECK(r.inferred_empty_cache == (empty_cache ? 1 : 0));
      }
    }
  }

  TEST_CASE("a trace that lost its oldest entries verifies exactly from the rebuilt t0 state") {
    for (const char* conf : {"", "max_split_size_mb:200"}) {
      std::string conf_text = conf;
      CAPTURE(conf_text);
      for (size_t cut : {size_t{500}, size_t{2001}, size_t{3333}}) {
        CAPTURE(cut);
        // Drop the first `cut` entries, as a full ring buffer does (the recording is
        // deterministic, so each cut starts from the same trace).
        Snapshot s = RecordWithSimulator(conf, true);
        s.events.erase(s.events.begin(), s.events.begin() + static_cast<std::ptrdiff_t>(cut));
        s.traces[0].end = static_cast<uint32_t>(s.events.size());
        ReplayOptions o;
        o.verify = true;
        ReplayReport r = ReplayOrFail(s, {{"recorded", sim::ConfigFromSettings(s.settings)}}, o);
        CHECK(r.preexisting_blocks > 0);
        const VerifyResult& v = *r.verify;
        CHECK(v.matched == v.segment_events);
        CHECK(v.allocs_matched == v.allocs);
        CHECK(v.exact());
      }
    }
  }

  TEST_CASE("blocks freed without an alloc are allocated first (cold start)") {
    Snapshot s = TraceSnapshot({
        Ev(Action::kFreeRequested, 0x1000000, 8 * kMiB),
        Ev(Action::kFreeCompleted, 0x1000000, 8 * kMiB),
        Ev(Action::kAlloc, 0x3000000, 4 * kMiB),
    });
    ReplayReport r = ReplayOrFail(s, {{"recorded", {}}});
    CHECK(r.preexisting_blocks == 1);
    CHECK(r.preexisting_bytes == 8 * kMiB);
    REQUIRE(r.results.size() == 1);
    CHECK(r.results[0].peak_reserved == 20 * kMiB);
    CHECK(r.results[0].peak_allocated == 8 * kMiB);
    CHECK(r.results[0].cuda_mallocs == 1);  // the 4 MiB request reuses the freed block
  }

  TEST_CASE("adjacent free_requested/free_completed pairs become one free") {
    Snapshot s = TraceSnapshot({
        Ev(Action::kAlloc, 0x1000000, 4 * kMiB),
        Ev(Action::kFreeRequested, 0x1000000, 4 * kMiB),
        Ev(Action::kAlloc, 0x2000000, 4 * kMiB),  // before the completion: a new block
        Ev(Action::kFreeCompleted, 0x1000000, 4 * kMiB),
    });
    PreparedTrace p = PrepareTrace(s, s.traces[0], EmptyCacheMode::kHeuristic, {}, false);
    REQUIRE(p.ops.size() == 4);
    CHECK(p.ops[1].kind == OpKind::kFreeRequested);
    CHECK(p.ops[3].kind == OpKind::kFreeCompleted);
    ReplayReport r = ReplayOrFail(s, {{"recorded", {}}});
    CHECK(r.results[0].peak_active == 8 * kMiB);     // the 20 MiB segment holds both
    CHECK(r.results[0].peak_allocated == 4 * kMiB);  // allocated drops at free_requested
    CHECK(r.results[0].cuda_mallocs == 1);
  }

  TEST_CASE("the operation list is reserved at the event count and never grows by doubling") {
    // Each event makes at most one operation; a list grown by doubling would leave its outgrown
    // copies resident beside it (KeepFreedMemory), the memory peak of `oom` and `frag`.
    Snapshot s = TraceSnapshot({
        Ev(Action::kAlloc, 0x1000000, 4 * kMiB),
        Ev(Action::kFreeRequested, 0x1000000, 4 * kMiB),
        Ev(Action::kFreeCompleted, 0x1000000, 4 * kMiB),
        Ev(Action::kAlloc, 0x2000000, 4 * kMiB),
        Ev(Action::kFreeRequested, 0x2000000, 4 * kMiB),
        Ev(Action::kFreeCompleted, 0x2000000, 4 * kMiB),
        Ev(Action::kAlloc, 0x3000000, 4 * kMiB),
    });
    PreparedTrace p = PrepareTrace(s, s.traces[0], EmptyCacheMode::kHeuristic, {}, true);
    REQUIRE(p.ops.size() == 5);  // two frees of two events each
    CHECK(p.ops.capacity() == 7);
  }

  TEST_CASE("an oom entry implies the device capacity and is replayed as a failed malloc") {
    Snapshot s = TraceSnapshot({
        Ev(Action::kSegmentAlloc, 0x10000000, 60 * kMiB),
        Ev(Action::kAlloc, 0x10000000, 60 * kMiB),
        Ev(Action::kOom, /*device_free=*/30 * kMiB, 50 * kMiB),
    });
    Segment seg;
    seg.address = 0x10000000;
    seg.total_size = 60 * kMiB;
    seg.num_blocks = 1;
    s.segments.push_back(seg);
    Block b;
    b.address = 0x10000000;
    b.size = 60 * kMiB;
    b.requested_size = 60 * kMiB;
    b.state = BlockState::kActiveAllocated;
    s.blocks.push_back(b);
    ReplayOptions o;
    o.verify = true;
    ReplayReport r = ReplayOrFail(
        s, {{"recorded", {}}, {"expandable", *sim::ParseAllocatorConf("expandable_segments:True")}},
        o);
    REQUIRE(r.device_memory.has_value());
    CHECK(*r.device_memory == 90 * kMiB);
    REQUIRE(r.results[0].ooms.size() == 1);
    CHECK(r.results[0].ooms[0].event == 2);
    CHECK(r.results[0].ooms[0].rounded == 50 * kMiB);
    CHECK(r.verify->exact());
  }

  TEST_CASE("a trailing segment_free burst is an inferred empty_cache") {
    Snapshot s = TraceSnapshot({
        Ev(Action::kSegmentAlloc, 0x10000000, 20 * kMiB),
        Ev(Action::kAlloc, 0x10000000, 4 * kMiB),
        Ev(Action::kFreeRequested, 0x10000000, 4 * kMiB),
        Ev(Action::kFreeCompleted, 0x10000000, 4 * kMiB),
        Ev(Action::kSegmentFree, 0x10000000, 20 * kMiB),
    });
    ReplayOptions o;
    o.verify = true;
    ReplayReport r = ReplayOrFail(s, {{"recorded", {}}}, o);
    CHECK(r.inferred_empty_cache == 1);
    CHECK(r.verify->exact());
    CHECK(r.results[0].final_reserved == 0);
    o.empty_cache = EmptyCacheMode::kIgnore;
    r = ReplayOrFail(s, {{"recorded", {}}}, o);
    CHECK(r.inferred_empty_cache == 0);
    CHECK(r.results[0].final_reserved == 20 * kMiB);
    CHECK_FALSE(r.verify->exact());
    REQUIRE(r.verify->first_real.has_value());
    CHECK(*r.verify->first_real == 1);
  }

  TEST_CASE("configurations run side by side and keep their order") {
    Snapshot s = RecordWithSimulator("", false);
    std::vector<ReplayConfig> configs = {{"recorded", {}}};
    for (const char* conf :
         {"expandable_segments:True", "max_split_size_mb:128", "max_split_size_mb:256",
          "max_split_size_mb:512", "roundup_power2_divisions:4", "roundup_power2_divisions:8",
          "garbage_collection_threshold:0.5"}) {
      configs.push_back({conf, *sim::ParseAllocatorConf(conf)});
    }
    ReplayOptions serial;
    serial.max_threads = 1;
    ReplayReport a = ReplayOrFail(s, configs, serial);
    ReplayReport b = ReplayOrFail(s, configs);
    REQUIRE(a.results.size() == 8);
    for (size_t k = 0; k < 8; ++k) {
      CHECK(a.results[k].config.label == configs[k].label);
      CHECK(a.results[k].peak_reserved == b.results[k].peak_reserved);
      CHECK(a.results[k].cuda_mallocs == b.results[k].cuda_mallocs);
      CHECK(a.results[k].peak_reserved >= a.results[k].peak_allocated);
    }
    CHECK(a.results[1].maps > 0);
    CHECK(a.results[1].cuda_mallocs == 0);
  }

  TEST_CASE("a sweep expands to one conf per value") {
    absl::StatusOr<std::vector<std::string>> v = ExpandSweep("max_split_size_mb=128,256,512");
    REQUIRE(v.ok());
    CHECK(*v == std::vector<std::string>{"max_split_size_mb:128", "max_split_size_mb:256",
                                         "max_split_size_mb:512"});
    CHECK(std::string(ExpandSweep("max_split_size_mb").status().message()) ==
          "--sweep \"max_split_size_mb\": expected KEY=V1,V2,... (e.g. max_split_size_mb=128,256)");
    CHECK(
        std::string(ExpandSweep("max_split_size_mb=5").status().message()) ==
        "--sweep \"max_split_size_mb=5\": max_split_size_mb: expected an integer >= 20, got \"5\"");
  }

  TEST_CASE("a snapshot without trace events cannot be replayed") {
    Snapshot s;
    CHECK(std::string(Replay(s, {{"recorded", {}}}, {}).status().message()) ==
          "the snapshot has no trace events (record with "
          "torch.cuda.memory._record_memory_history)");
    ReplayOptions o;
    o.device = 3;
    CHECK(std::string(Replay(s, {{"recorded", {}}}, o).status().message()) ==
          "device 3 has no trace events");
  }

  TEST_CASE("replay invariants hold on every corpus file" * doctest::test_suite("corpus")) {
    std::vector<std::string> files = testing::CorpusFiles();
    if (files.empty()) return;  // skipped: the corpus is absent
    int replayed = 0;
    for (const std::string& f : files) {
      CAPTURE(f);
      absl::StatusOr<Snapshot> s = parse::ReadSnapshot(f, {});
      REQUIRE_MESSAGE(s.ok(), s.status().message());
      ReplayOptions o;
      o.verify = true;
      std::vector<ReplayConfig> configs = {
          {"recorded", sim::ConfigFromSettings(s->settings)},
          {"expandable", *sim::ParseAllocatorConf("expandable_segments:True")}};
      absl::StatusOr<ReplayReport> r = Replay(*s, configs, o);
      if (!r.ok()) {  // a file without a trace has nothing to replay; any other error fails
        CHECK_MESSAGE(r.status().message().find("no trace events") != std::string_view::npos,
                      r.status().message());
        continue;
      }
      ++replayed;
      const VerifyResult& v = *r->verify;
      CHECK(v.matched <= v.segment_events);
      CHECK(v.matched <= v.simulated_events);
      CHECK(v.allocs_matched <= v.allocs);
      for (const ConfigResult& c : r->results) {
        CHECK(c.peak_reserved >= c.peak_allocated);
        CHECK(c.peak_reserved >= c.final_reserved);
        CHECK(c.peak_allocated >= c.allocated_at_peak);
      }
      // Traces that start with an empty allocator replay exactly.
      if (r->preexisting_blocks == 0 && v.segment_events > 0) CHECK(v.exact());
    }
    CHECK(replayed > 0);
  }

  TEST_CASE("replay reports the trace's own figures beside the simulated ones") {
    Snapshot s = testing::LoadFixture("oom_fragmentation.json");
    ReplayReport r = ReplayOrFail(s, {{"recorded", sim::ConfigFromSettings(s.settings)}});
    CHECK(r.recorded.peak_reserved == 40 * kMiB);
    CHECK(r.recorded.final_reserved == 40 * kMiB);
    CHECK(r.recorded.segment_allocs == 2);
    CHECK(r.recorded.segment_frees == 0);
    CHECK(r.recorded.ooms == 1);
  }
}

}  // namespace memsnap::analysis
