// The pickle decoder's fast paths against its generic path (pickle_paths.h): every corpus file,
// every fixture, hand-made entries at the edges of what the fast path takes, and byte-mutated
// fixtures must decode the same both ways. And the schema table is the one place that names a
// snapshot key (issue 18: "a grep finds each snapshot key mapped in exactly one place").
#include <doctest/doctest.h>

#include <filesystem>
#include <random>
#include <regex>
#include <sstream>

#include "memsnap/io/input.h"
#include "memsnap/parse/reader.h"
#include "parse/schema.h"
#include "pickle_paths.h"
#include "test_util.h"

namespace memsnap {
namespace {

namespace fs = std::filesystem;

// The hand-written fixtures of testdata/ as CPython pickles of protocols 2 and 4.
std::vector<std::string> FixturePickles() {
  std::vector<std::string> pickles;
  for (auto& [name, bytes] : testing::FixturePickles(testing::FixtureNames(), {2, 4}))
    pickles.push_back(std::move(bytes));
  return pickles;
}

}  // namespace

TEST_SUITE("pickle_fast_path") {
  TEST_CASE("the fast and the generic path give the same model on every corpus file" *
            doctest::test_suite("corpus")) {
    size_t pickles = 0;
    for (const std::string& path : testing::CorpusFiles()) {
      for (const std::string& bytes : testing::PicklesIn(testing::ReadFileOrFail(path))) {
        CAPTURE(path);
        CHECK(testing::ComparePicklePaths(bytes) == "");
        ++pickles;
      }
    }
    if (testing::CorpusDir()) CHECK(pickles >= 60);
  }

  TEST_CASE("the fast and the generic path give the same model on every fixture") {
    std::vector<std::string> pickles = FixturePickles();
    CHECK(pickles.size() >= 30);
    for (size_t i = 0; i < pickles.size(); ++i) {
      CAPTURE(i);
      CHECK(testing::ComparePicklePaths(pickles[i]) == "");
    }
  }

  TEST_CASE("entries at the edges of what the fast path takes decode the same both ways") {
    // Each value either fits the fast path or sends the entry to the generic path; both must
    // give the same model, including the limit warnings (model/limits.h).
    std::string bytes = testing::PythonPickle(
        "(lambda fr: {'segments': [], 'device_traces': [[dict(action=a, addr=addr, size=size,"
        " stream=st, time_us=t, compile_context=cc, user_metadata=um, frames=[fr, fr])"
        " for i, (a, addr, size, st, t, cc, um) in enumerate(__import__('itertools').product("
        " ('alloc', 'free_completed', 'brand_new'), (0, 2**40, 2**55 - 1, 2**56, 2**57, -1),"
        " (0, 1, 2**40, 2**40 + 1, -1, 2**63 - 1, 2**64 - 1), (0, 7, -1, 2**63),"
        " (0, 2**55 - 1, 2**62 + 1, -5, None), ('N/A', '', 'region'), ('', {'k': 1})))"
        " if __import__('random').Random(i).random() < 0.15]"
        " + [dict(action='oom', device_free=df, size=2**30, stream=0) for df in"
        " (0, 2**40, 2**40 + 1, -1)]]})({'name': 'f', 'filename': 'a.py', 'line': 1})",
        4);
    Snapshot s = testing::ParseOrFail(bytes);
    CHECK(s.events.size() > 100);
    // The frame dict is shared (memo GETs) and the lists have two frames (a one-frame list is an
    // APPEND), as in real files, so every entry whose values fit takes the fast path.
    CHECK(testing::ComparePicklePaths(bytes) == "");
    for (int protocol : {2, 3, 5}) {
      CAPTURE(protocol);
      CHECK(testing::ComparePicklePaths(testing::PythonPickle(
                "{'segments': [], 'device_traces': [[{'action': 'alloc', 'addr': 2**56, 'size': "
                "1, 'stream': 0}, {'action': 'alloc', 'addr': 1, 'size': 2**41, 'stream': 0, "
                "'time_us': -3, 'frames': []}]]}",
                protocol)) == "");
    }
  }

  TEST_CASE(
      "entries whose keys change order or number from one to the next decode the same both "
      "ways") {
    // The fast path decodes an entry by the previous entry's layout (pickle_decoder.h, Layout)
    // and falls back to its loop over the keys when the entry differs: in its key order, its
    // number of keys, or a value's form (a new stack, a new string, an int of another width).
    // Each kind of entry follows each other kind here, with short and long memo GETs of the keys
    // (the padding puts the keys past memo index 255 in the second half).
    const std::string entries =
        "[dict(action='alloc', addr=2**40 + i, size=512, stream=0, time_us=i, "
        "compile_context='N/A', user_metadata='', frames=[fr, fr]),"
        " dict(action='free_requested', addr=2**40 + i, size=2**33, stream=7, time_us=2**50 + i,"
        " compile_context='', frames=[fr, fr]),"
        " dict(action='free_completed', addr=i, size=70000, stream=2**40, time_us=i, frames=[fr, "
        "fr]),"
        " dict(action='alloc', addr=2**40 + i, size=1, stream=0, frames=[fr, fr, fr]),"
        " dict(action='alloc', addr=2**40 + i, size=1, stream=0, time_us=i, frames=new),"
        " dict(action='alloc', size=1, addr=2**40 + i, stream=0, time_us=i, frames=[fr, fr]),"
        " dict(action='alloc', addr=2**40 + i, size=1, stream=0, time_us=i, compile_context='N/A',"
        " user_metadata='N/A', frames=[fr, fr]),"
        " dict(action='alloc', addr=2**40 + i, size=1, stream=0, time_us=i, compile_context='x',"
        " user_metadata='', frames=[fr, fr]),"
        " dict(action='oom', device_free=2**30, size=2**31, stream=0, time_us=i, frames=[fr, fr]),"
        " dict(action='alloc', addr=2**40 + i, size=1, stream=0, time_us=i, category='c',"
        " frames=[fr, fr]),"
        " dict(action='alloc', addr=2**40 + i, size=1, stream=0, time_us=None, frames=[fr, fr])]";
    for (int protocol : {2, 4}) {
      for (bool pad : {false, true}) {
        CAPTURE(protocol);
        CAPTURE(pad);
        // Every ordered pair of the 33 entries (11 kinds, 3 times each) follows each other once;
        // each entry is a copy, its stack the same list (by memo GET, as in real files).
        const std::string bytes = testing::PythonPickle(
            "(lambda fr: (lambda es: {'pad': [str(k) for k in range(" +
                std::string(pad ? "300" : "0") +
                ")], 'segments': [], 'device_traces': [[dict(e) for a in es for b in es for e in "
                "(a, b)]]})([e for i in range(3) for e in (lambda i, new: " +
                entries +
                ")(i, [dict(fr, line=i), fr])]))({'name': 'f', 'filename': 'a.py', "
                "'line': 1})",
            protocol);
        CHECK(testing::ComparePicklePaths(bytes) == "");
        Snapshot s = testing::ParseOrFail(bytes);
        CHECK(s.events.size() == 2 * 33 * 33);
      }
    }
  }

  TEST_CASE(
      "an entry used as another's user_metadata, or as the root, decodes the same both ways") {
    // Found by the fuzz_pickle_paths campaign: a memo GET of an entry the fast path had decoded
    // (a kEventRef) where user_metadata wants a dict was refused as "expected str, got dict",
    // while the generic path renders the entry as text; at the root, the two paths named it
    // differently in the error.
    const std::string entry =
        "dict(action='alloc', addr=2**40, size=512, stream=0, time_us=1, compile_context='N/A', "
        "user_metadata='', frames=[fr, fr])";
    const std::string frame = "{'name': 'f', 'filename': 'a.py', 'line': 1}";
    for (int protocol : {2, 4}) {
      CAPTURE(protocol);
      std::string bytes = testing::PythonPickle(
          "(lambda fr: (lambda e: {'segments': [], 'device_traces': [[e, dict(e, addr=2**41, "
          "user_metadata=e), dict(e, addr=2**42, user_metadata=fr)]]})(" +
              entry + "))(" + frame + ")",
          protocol);
      CHECK(testing::ComparePicklePaths(bytes) == "");
      Snapshot s = testing::ParseOrFail(bytes);
      REQUIRE(s.events.size() == 3);
      CHECK(testing::ComparePicklePaths(testing::PythonPickle(
                "(lambda fr: " + entry + ")(" + frame + ")", protocol)) == "");
    }
  }

  TEST_CASE(
      "a user_metadata of \"N/A\" is kept as text both ways; a compile_context of it is none") {
    // Found by the fuzz_pickle_paths campaign (tests/fuzz/regressions/pickle_paths-user-metadata-
    // na.pickle): the fast path took "N/A" as "feature off" for both keys, the generic path
    // (SetEvent, schema.h) only for compile_context, so a user_metadata of "N/A" was dropped by
    // one path and kept by the other.
    for (int protocol : {2, 4}) {
      CAPTURE(protocol);
      const std::string bytes = testing::PythonPickle(
          "{'segments': [], 'device_traces': [[dict(action='alloc', addr=2**40, size=512, "
          "stream=0, time_us=1, compile_context='N/A', user_metadata='N/A', frames=[]), "
          "dict(action='alloc', addr=2**41, size=512, stream=0, time_us=2, "
          "compile_context='N/A', user_metadata='', frames=[])]]}",
          protocol);
      CHECK(testing::ComparePicklePaths(bytes) == "");
      Snapshot s = testing::ParseOrFail(bytes);
      REQUIRE(s.events.size() == 2);
      REQUIRE(s.event_extras.size() == 1);  // the first entry's user_metadata only
      CHECK(s.strings.Get(s.event_extras[0].user_metadata) == "N/A");
      CHECK_FALSE(s.event_extras[0].compile_context.valid());
    }
  }

  TEST_CASE("a frames list behind a second MARK is refused both ways, as Python refuses it") {
    // Found by the fuzz_pickle_paths campaign (the reproducer is in tests/fuzz/regressions/):
    // after `EMPTY_LIST MARK MARK`, the fast path took the frames batch of the inner MARK as
    // the list's items although the list is out of APPENDS' reach behind the outer MARK. The
    // two paths then failed with different messages, and here, with one more APPENDS closing
    // the outer MARK, the fast path accepted a pickle that Python and the generic path refuse.
    std::string bytes = testing::PythonPickle(
        "(lambda fr: {'segments': [], 'device_traces': [[dict(action='alloc', addr=2**40, "
        "size=512, stream=0, frames=[fr, fr]), dict(action='alloc', addr=2**41, size=512, "
        "stream=0, frames=[fr, fr])]]})({'name': 'f', 'filename': 'a.py', 'line': 1})",
        4);
    // The second entry's frames: EMPTY_LIST MEMOIZE MARK BINGET i BINGET i APPENDS.
    const size_t at = bytes.rfind("]\x94(h");
    REQUIRE(at != std::string::npos);
    REQUIRE(bytes[at + 7] == 'e');
    bytes.insert(at + 8, 1, 'e');  // one more APPENDS
    bytes.insert(at + 3, 1, '(');  // one more MARK
    const std::string generic = testing::DecodedPickleText(bytes, false);
    CHECK(generic.find("APPENDS without a list below its MARK") != std::string::npos);
    CHECK(testing::ComparePicklePaths(bytes) == "");
  }

  TEST_CASE("byte-mutated fixtures decode the same both ways, or fail the same way") {
    // Deterministic mutations (flips, truncations, duplicated and deleted ranges) of each
    // fixture; the fuzz_pickle_paths target runs the same check on what libFuzzer makes.
    std::mt19937_64 rng(20);
    int compared = 0, decoded = 0;
    for (const std::string& base : FixturePickles()) {
      for (int m = 0; m < 40; ++m) {
        std::string b = testing::MutateBytes(base, rng, {});
        std::string diff = testing::ComparePicklePaths(b);
        CHECK_MESSAGE(diff == "", diff);
        decoded += testing::DecodedPickleText(b, true).rfind("error: ", 0) != 0;
        ++compared;
      }
    }
    CHECK(compared > 1000);
    CHECK(decoded > 100);  // the mutations reach past the first error, not only errors
  }
}

TEST_SUITE("schema") {
  TEST_CASE("every key name is written once in the readers: in the schema table") {
    // A key's text outside schema.h would be a second mapping of it (issue 18).
    std::vector<std::string> sources;
    for (const auto& e : fs::directory_iterator(MEMSNAP_SOURCE_DIR "/src/parse")) {
      sources.push_back(e.path().string());
    }
    std::sort(sources.begin(), sources.end());
    for (int k = 1; k < parse::kNumKeys; ++k) {
      std::string quoted(1, '"');
      quoted.append(parse::kKeyNames[k]).push_back('"');
      int uses = 0;
      for (const std::string& path : sources) {
        std::istringstream in(testing::ReadFileOrFail(path));
        std::string line;
        while (std::getline(in, line)) {
          line = line.substr(0, line.find("//"));  // comments may name keys
          for (size_t at = line.find(quoted); at != std::string::npos;
               at = line.find(quoted, at + 1)) {
            CAPTURE(path);
            CAPTURE(line);
            CHECK(path.ends_with("/schema.h"));
            ++uses;
          }
        }
      }
      CAPTURE(quoted);
      CHECK(uses == 1);
    }
  }

  TEST_CASE("every row of the table maps a known key, and no key twice in one record") {
    std::set<std::pair<int, int>> seen;
    for (const parse::SchemaRow& row : parse::kSchema) {
      CHECK(row.key != parse::Key::kOther);
      CHECK(row.field != parse::Field::kNone);
      CHECK(seen.insert({static_cast<int>(row.rec), static_cast<int>(row.key)}).second);
      CHECK(parse::FieldOf(row.rec, row.key) == row.field);
    }
    for (int k = 1; k < parse::kNumKeys; ++k) {
      const auto key = static_cast<parse::Key>(k);
      CHECK(parse::KeyOfName(parse::KeyName(key)) == key);
    }
    CHECK(parse::KeyOfName("no_such_key") == parse::Key::kOther);
    CHECK(parse::KeyOfName("") == parse::Key::kOther);
  }

  TEST_CASE("a dict is typed by the first record, in table order, that any of its keys types") {
    using parse::Key;
    using parse::Rec;
    CHECK(parse::RecordTypedBy(Key::kAction) == Rec::kEvent);
    CHECK(parse::RecordTypedBy(Key::kAddr) == Rec::kHistory);  // 'addr' without 'action'
    CHECK(parse::RecordTypedBy(Key::kTotalSize) == Rec::kSegment);
    CHECK(parse::RecordTypedBy(Key::kState) == Rec::kBlock);
    CHECK(parse::RecordTypedBy(Key::kLine) == Rec::kFrame);
    CHECK(parse::RecordTypedBy(Key::kTraces) == Rec::kTop);
    CHECK(parse::RecordTypedBy(Key::kMaxSplitSize) == Rec::kSettings);
    CHECK(parse::RecordTypedBy(Key::kSize) == Rec::kGeneric);
    CHECK(parse::RecordTypedBy(Key::kOther) == Rec::kGeneric);
  }
}

}  // namespace memsnap
