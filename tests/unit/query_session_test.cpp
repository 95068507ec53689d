// The query layer (docs/design.md, "Queries"): one session per file, its timeline built during the
// read, moments resolved once, and the fan-out over several files that never passes over a file
// it could not read.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "memsnap/analysis/timeline/timeline.h"
#include "memsnap/query/session.h"
#include "memsnap/query/summary.h"
#include "memsnap/query/timeline.h"
#include "memsnap/query/top.h"
#include "memsnap/report/summary_render.h"
#include "test_util.h"

namespace memsnap {
namespace {

using testing::ReadFileOrFail;
using testing::TempDir;
using testing::TestdataPath;

using testing::WriteTemp;

query::ReadSettings Quiet() {
  query::ReadSettings s;
  s.threads = 2;
  return s;
}

// Settings whose user categories are `texts` ("NAME=REGEX").
query::ReadSettings WithCategories(const std::vector<std::string>& texts) {
  analysis::UserCategories list;
  for (const std::string& t : texts) {
    absl::StatusOr<analysis::UserCategory> c = analysis::ParseUserCategory(t);
    REQUIRE(c.ok());
    REQUIRE(analysis::AddUserCategory(list, *std::move(c)).ok());
  }
  query::ReadSettings s = Quiet();
  s.categories = analysis::CategoryNames(std::move(list));
  return s;
}

// `top --by category` of a session: "name bytes" per row, in the rows' order, named through the
// result's own vocabulary.
std::string CategoryRows(query::Session& session) {
  query::TopRequest top;
  top.at = *query::ParseMomentArg("--at", "peak");
  top.group.by = analysis::GroupBy::kCategory;
  absl::StatusOr<query::TopResult> r = query::TopQuery(top, session);
  if (!r.ok()) return std::string(r.status().message());
  std::string text;
  for (const analysis::GroupRow& row : r->report.rows) {
    text += row.site + " " + std::to_string(row.bytes) + "; ";
    text += std::string(r->report.options.categories.Name(row.category())) + "; ";
  }
  return text;
}

TEST_CASE("a session holds the timeline its query declared, built during the read") {
  query::Needs needs = query::SummaryNeeds();
  absl::StatusOr<query::Session> s =
      query::Session::Open(TestdataPath("timeline_training.json"), needs, Quiet());
  REQUIRE(s.ok());
  absl::StatusOr<const analysis::Timeline*> tl = s->timeline();
  REQUIRE(tl.ok());
  CHECK(!(*tl)->devices.empty());
  // The same figures as a timeline rebuilt from the snapshot alone.
  absl::StatusOr<analysis::Timeline> again =
      analysis::ReconstructTimeline(s->snapshot(), *needs.timeline);
  REQUIRE(again.ok());
  CHECK((*tl)->devices[0].peak_requested == again->devices[0].peak_requested);
  CHECK((*tl)->devices[0].peak_reserved == again->devices[0].peak_reserved);
}

TEST_CASE("a session without a declared timeline says so, naming the file") {
  absl::StatusOr<query::Session> s =
      query::Session::Open(TestdataPath("timeline_training.json"), query::Needs{}, Quiet());
  REQUIRE(s.ok());
  absl::StatusOr<const analysis::Timeline*> tl = s->timeline();
  REQUIRE(!tl.ok());
  CHECK(std::string(tl.status().message()).find("timeline_training.json: no timeline") !=
        std::string::npos);
}

TEST_CASE("a session's timeline that keeps every lifetime answers a query that keeps fewer") {
  analysis::TimelineOptions all;
  analysis::TimelineOptions live_at;
  live_at.keep = analysis::KeepLifetimes::kLiveAt;
  live_at.curve = false;
  analysis::TimelineOptions none;
  none.keep = analysis::KeepLifetimes::kNone;
  CHECK(query::TimelineCovers(all, live_at));
  CHECK(query::TimelineCovers(all, none));
  CHECK(!query::TimelineCovers(live_at, all));
  CHECK(!query::TimelineCovers(none, live_at));  // a curve is missing too
  analysis::TimelineOptions device0 = all;
  device0.device = 0;
  CHECK(!query::TimelineCovers(device0, all));

  absl::StatusOr<query::Session> s = query::Session::Open(TestdataPath("timeline_training.json"),
                                                          query::NeedsTimeline(all), Quiet());
  REQUIRE(s.ok());
  absl::StatusOr<const analysis::Timeline*> own = s->timeline();
  absl::StatusOr<const analysis::Timeline*> for_top = s->TimelineFor(live_at);
  REQUIRE(own.ok());
  REQUIRE(for_top.ok());
  CHECK(*own == *for_top);  // the same object: nothing rebuilt
}

TEST_CASE("one session answers summary and top with the peak at the same event") {
  analysis::TimelineOptions all;
  absl::StatusOr<query::Session> s = query::Session::Open(TestdataPath("timeline_training.json"),
                                                          query::NeedsTimeline(all), Quiet());
  REQUIRE(s.ok());
  absl::StatusOr<query::SummaryResult> summary = query::SummaryQuery({}, *s);
  REQUIRE(summary.ok());
  query::TopRequest top;
  top.at = *query::ParseMomentArg("--at", "peak");
  absl::StatusOr<query::TopResult> result = query::TopQuery(top, *s);
  REQUIRE(result.ok());
  REQUIRE(!summary->summary.devices.empty());
  REQUIRE(summary->summary.devices[0].peaks.has_value());
  REQUIRE(!result->report.devices.empty());
  CHECK(result->report.devices[0].event == summary->summary.devices[0].peaks->live_event);
  CHECK(result->report.devices[0].live_bytes == summary->summary.devices[0].peaks->live_bytes);
}

TEST_CASE("two sessions with categories of their own answer in their own, also on two threads") {
  const std::string path = TestdataPath("attribution_training.json");
  const query::Needs needs = query::NeedsTimeline(analysis::TimelineOptions{});
  absl::StatusOr<query::Session> a =
      query::Session::Open(path, needs, WithCategories({"adam=optim/adam\\.py"}));
  absl::StatusOr<query::Session> b =
      query::Session::Open(path, needs, WithCategories({"fwd=model/net\\.py"}));
  absl::StatusOr<query::Session> plain = query::Session::Open(path, needs, Quiet());
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  REQUIRE(plain.ok());
  CHECK(a->categories().size() == analysis::kNumCategories + 1);
  CHECK(plain->categories().size() == analysis::kNumCategories);
  const std::string rows_a = CategoryRows(*a), rows_b = CategoryRows(*b);
  const std::string rows_plain = CategoryRows(*plain);
  CAPTURE(rows_a);
  CAPTURE(rows_b);
  CHECK(rows_a.find("adam") != std::string::npos);
  CHECK(rows_a.find("fwd") == std::string::npos);
  CHECK(rows_b.find("fwd") != std::string::npos);
  CHECK(rows_b.find("adam") == std::string::npos);
  CHECK(rows_plain.find("adam") == std::string::npos);
  CHECK(rows_plain.find("fwd") == std::string::npos);
  // Opening B did not change what A answers.
  CHECK(CategoryRows(*a) == rows_a);
  // At once, each session on its own thread: no answer takes the other's categories.
  std::atomic<int> wrong{0};
  auto repeat = [&wrong](query::Session& s, const std::string& expected) {
    for (int i = 0; i < 20; ++i) {
      if (CategoryRows(s) != expected) ++wrong;
    }
  };
  std::thread ta(repeat, std::ref(*a), std::cref(rows_a));
  std::thread tb(repeat, std::ref(*b), std::cref(rows_b));
  ta.join();
  tb.join();
  CHECK(wrong.load() == 0);
}

TEST_CASE("a moment outside the trace is an error naming the flag and its text") {
  absl::StatusOr<query::Session> s = query::Session::Open(TestdataPath("timeline_training.json"),
                                                          query::NeedsTimeline({}), Quiet());
  REQUIRE(s.ok());
  absl::StatusOr<query::MomentArg> at = query::ParseMomentArg("--at", "event:999999");
  REQUIRE(at.ok());
  absl::StatusOr<query::ResolvedMoment> r =
      query::ResolveMomentArg(*at, s->snapshot(), **s->timeline());
  REQUIRE(!r.ok());
  CHECK(std::string(r.status().message()).find("--at event:999999") != std::string::npos);
  absl::StatusOr<query::MomentArg> bad = query::ParseMomentArg("--from", "soon");
  REQUIRE(!bad.ok());
  CHECK(std::string(bad.status().message()).find("--from") != std::string::npos);
}

TEST_CASE("a window that ends before it starts is an error, not one event") {
  absl::StatusOr<query::Session> s = query::Session::Open(TestdataPath("timeline_training.json"),
                                                          query::NeedsTimeline({}), Quiet());
  REQUIRE(s.ok());
  const analysis::DeviceTimeline& dt = (*s->timeline())->devices[0];
  absl::StatusOr<query::EventWindow> w = query::ResolveWindow(
      s->snapshot(), **s->timeline(), dt, *query::ParseMomentArg("--from", "event:5"),
      *query::ParseMomentArg("--to", "event:2"));
  REQUIRE(!w.ok());
  CHECK(std::string(w.status().message()).find("the window is empty") != std::string::npos);
  absl::StatusOr<query::EventWindow> ok =
      query::ResolveWindow(s->snapshot(), **s->timeline(), dt,
                           *query::ParseMomentArg("--from", "event:2"), std::nullopt);
  REQUIRE(ok.ok());
  CHECK(ok->from.index() == 2);
  CHECK(ok->to == analysis::TimelinePoint::End(dt.num_events));
}

TEST_CASE("over a directory, a file that is no snapshot is skipped and a truncated one is never") {
  const std::string dir = TempDir() + "/query_ranks";
  std::filesystem::create_directories(dir);
  const std::string good = ReadFileOrFail(TestdataPath("summary_basic.json"));
  WriteTemp("query_ranks/rank0.json", good);
  WriteTemp("query_ranks/notes.txt", "not a snapshot at all\n");
  WriteTemp("query_ranks/rank1.json", good.substr(0, good.size() / 2));
  absl::StatusOr<std::vector<query::InputFile>> files = query::ExpandInputs({dir});
  REQUIRE(files.ok());
  REQUIRE(files->size() == 3);

  std::vector<std::string> warnings;
  query::ReadSettings settings = Quiet();
  settings.warn = [&](const query::Warning& w) {
    warnings.push_back(std::string(w.skipped ? "skipped " : "") + std::string(w.path));
  };
  auto count = [](query::Session& s) -> absl::StatusOr<size_t> {
    return s.snapshot().segments.size();
  };
  // Without keep_going the truncated rank fails the whole call, naming it.
  absl::StatusOr<query::PerFile<size_t>> strict =
      query::ForEachFile<size_t>(*files, query::Needs{}, settings, count);
  REQUIRE(!strict.ok());
  CHECK(std::string(strict.status().message()).find("rank1.json") != std::string::npos);

  query::LeftOut left_out;
  left_out.keep_going = true;
  absl::StatusOr<query::PerFile<size_t>> kept =
      query::ForEachFile<size_t>(*files, query::Needs{}, settings, count, &left_out);
  REQUIRE(kept.ok());
  REQUIRE(kept->size() == 1);
  CHECK((*kept)[0].first.ends_with("rank0.json"));
  REQUIRE(left_out.skipped.size() == 1);
  CHECK(left_out.skipped[0].path.ends_with("notes.txt"));
  REQUIRE(left_out.unreadable.size() == 1);
  CHECK(left_out.unreadable[0].path.ends_with("rank1.json"));
  CHECK(std::find(warnings.begin(), warnings.end(), "skipped " + dir + "/notes.txt") !=
        warnings.end());
}

TEST_CASE("a training step is a moment of the grammar, resolved once the file's steps are found") {
  absl::StatusOr<query::MomentArg> at = query::ParseMomentArg("--at", "step:3");
  REQUIRE(at.ok());
  REQUIRE(at->step.has_value());
  CHECK(at->step->number == 3);
  CHECK(at->step->part == query::StepMoment::Part::kDefault);
  absl::StatusOr<query::MomentArg> last = query::ParseMomentArg("--to", "step:-1:end");
  REQUIRE(last.ok());
  CHECK(last->step->number == -1);
  CHECK(last->step->part == query::StepMoment::Part::kEnd);
  absl::StatusOr<query::MomentArg> bad = query::ParseMomentArg("--at", "step:two");
  REQUIRE(!bad.ok());
  CHECK(std::string(bad.status().message()).find("--at step:two") != std::string::npos);
  CHECK(!query::ParseMomentArg("--at", "step:1:middle").ok());
  // A plain moment is no step.
  CHECK(!query::ParseMomentArg("--at", "event:3")->step.has_value());
}

TEST_CASE("the peak of a training step is the most live memory within it") {
  absl::StatusOr<query::Session> s = query::Session::Open(TestdataPath("timeline_training.json"),
                                                          query::NeedsTimeline({}), Quiet());
  REQUIRE(s.ok());
  const analysis::Timeline& tl = **s->timeline();
  const analysis::DeviceTimeline& dt = tl.devices[0];
  absl::StatusOr<query::MomentArg> at = query::ParseMomentArg("--at", "step:0");
  REQUIRE(at.ok());
  at->steps.steps = 2;  // two equal halves of the trace
  absl::StatusOr<query::ResolvedMoment> r = query::ResolveMomentArg(*at, s->snapshot(), tl);
  REQUIRE(r.ok());
  REQUIRE(r->points.size() == 1);
  const analysis::TimelinePoint p = r->points[0].second;
  const int64_t half = dt.num_events / 2;
  REQUIRE(p.index() < half);
  const analysis::LiveCurveRef curve = *dt.live_curve();
  for (int64_t e = 0; e < half; ++e) {
    CHECK(curve.At(analysis::TimelinePoint::After(static_cast<uint32_t>(e))) <= curve.At(p));
  }
  CHECK(r->arg.moment.kind == analysis::Moment::Kind::kEvent);
  CHECK(r->arg.moment.value == p.index());
  CHECK(r->arg.described.find("step 0") != std::string::npos);
  // Past the last step: an error naming the flag and how many steps there are.
  at->step->number = 2;
  absl::StatusOr<query::ResolvedMoment> past = query::ResolveMomentArg(*at, s->snapshot(), tl);
  REQUIRE(!past.ok());
  CHECK(std::string(past.status().message()).find("2 steps") != std::string::npos);
}

TEST_CASE("every clamp the reader makes is in summary's JSON warnings as on stderr, once each") {
  // Issue 52: a block of 2^70 bytes (a pickle LONG wider than 64 bits) and a trace entry of -4096
  // bytes used to exit 0 with an empty `warnings` list and only a line on stderr.
  const std::string path = WriteTemp(
      "out_of_range.pickle",
      testing::PythonPickle(
          "{'segments': [{'device': 0, 'address': 2**40, 'total_size': 2097152, "
          "'allocated_size': 1048576, 'active_size': 1048576, 'requested_size': 1000, 'stream': 0, "
          "'segment_type': 'small', 'frames': [], 'blocks': ["
          "{'address': 2**40, 'size': 1048576, 'requested_size': 1000, "
          "'state': 'active_allocated', 'frames': []}, "
          "{'address': 2**40 + 1048576, 'size': 2**70, 'state': 'inactive', 'frames': []}]}], "
          "'device_traces': [[{'action': 'alloc', 'addr': 2**40, 'size': 1000, 'stream': 0}, "
          "{'action': 'alloc', 'addr': 2**41, 'size': -4096, 'stream': 0}]]}"));
  std::vector<std::string> stderr_lines;
  query::ReadSettings settings = Quiet();
  settings.warn = [&](const query::Warning& w) { stderr_lines.emplace_back(w.message); };
  absl::StatusOr<query::Session> s = query::Session::Open(path, query::SummaryNeeds(), settings);
  REQUIRE(s.ok());
  absl::StatusOr<query::SummaryResult> r = query::SummaryQuery({}, *s);
  REQUIRE(r.ok());
  const nlohmann::ordered_json j = report::SummaryResultToJson(*r);
  std::vector<std::string> json;
  for (const auto& w : j["warnings"]) json.push_back(w.get<std::string>());
  auto count = [](const std::vector<std::string>& lines, std::string_view needle) {
    return std::count_if(lines.begin(), lines.end(),
                         [&](const std::string& l) { return l.find(needle) != std::string::npos; });
  };
  for (const char* needle : {"/segments/0/blocks/1/size: 9223372036854775807 is not a block size",
                             "/device_traces/0/1/size: -4096 is not a trace entry size",
                             "integer(s) wider than 64 bits were clamped"}) {
    CAPTURE(needle);
    CHECK(count(stderr_lines, needle) == 1);
    CHECK(count(json, needle) == 1);
  }
  // The reader's warnings come first, in the words stderr shows; the summary's findings follow.
  REQUIRE(json.size() >= stderr_lines.size());
  CHECK(std::vector<std::string>(json.begin(), json.begin() + stderr_lines.size()) == stderr_lines);
}

TEST_CASE("a read with more than ten warnings shows ten and a count, on stderr and in the JSON") {
  Diagnostics d;
  for (int i = 0; i < 13; ++i) d.Warn(absl::StrCat("w", i));
  const std::vector<std::string> shown = d.Shown();
  REQUIRE(shown.size() == Diagnostics::kMaxShown + 1);
  CHECK(shown[9] == "w9");
  CHECK(shown.back() == "3 more warning(s) not shown");
  d.warnings.resize(10);
  CHECK(d.Shown() == d.warnings);
}

}  // namespace
}  // namespace memsnap
