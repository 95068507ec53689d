// The pickle writer against CPython's own pickle module: byte-identical output for the shapes a
// snapshot uses, and snapshot round trips (model -> pickle -> model, and pickle.loads in CPython).
#include "memsnap/io/pickle_writer.h"

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "doctest/doctest.h"
#include "memsnap/parse/reader.h"
#include "memsnap/writer/snapshot_writer.h"
#include "test_util.h"

namespace memsnap {
namespace {

using io::PickleWriter;
using testing::PythonPickle;

using testing::WriteTemp;

template <class F>
std::string Write(int protocol, F&& body) {
  std::ostringstream out;
  PickleWriter w(out, protocol);
  body(w);
  REQUIRE(w.Finish().ok());
  return out.str();
}

void WriteInts(PickleWriter& w) {
  static const int64_t kInts[] = {0,
                                  1,
                                  255,
                                  256,
                                  65535,
                                  65536,
                                  -1,
                                  -128,
                                  INT32_MAX,
                                  INT32_MIN,
                                  1LL << 31,
                                  -(1LL << 31) - 1,
                                  1LL << 40,
                                  140737488355327LL,
                                  1700000000123456LL,
                                  INT64_MAX,
                                  INT64_MIN,
                                  -(1LL << 40)};
  w.BeginList(std::size(kInts) + 2);
  for (int64_t v : kInts) w.Int(v);
  w.UInt(uint64_t{1} << 63);
  w.UInt(UINT64_MAX);
  w.EndList();
}
constexpr const char* kIntsExpr =
    "[0, 1, 255, 256, 65535, 65536, -1, -128, 2**31-1, -2**31, 2**31, -2**31-1, 2**40, "
    "140737488355327, 1700000000123456, 2**63-1, -2**63, -2**40, 2**63, 2**64-1]";

TEST_SUITE("pickle_writer") {
  TEST_CASE("integers use the same opcodes and LONG1 lengths as CPython, 9 bytes up to 2^64-1") {
    for (int protocol : {2, 4, 5}) {
      CAPTURE(protocol);
      CHECK(Write(protocol, WriteInts) == PythonPickle(kIntsExpr, protocol));
    }
  }

  TEST_CASE(
      "a dict of shared strings, bools, floats, None and a tuple matches CPython byte for byte") {
    auto body = [](PickleWriter& w) {
      w.BeginDict(6);
      w.Str("a"), w.Int(1);
      w.Str("b"), w.Str("a");  // the same str object: a memo GET
      w.Str("flag"), w.Bool(true);
      w.Str("off"), w.Bool(false);
      w.Str("gc"), w.Float(0.75);
      w.Str("pool");
      w.BeginTuple2();
      w.Int(0);
      w.Int(0);
      w.EndTuple2();
      w.EndDict();
    };
    const char* expr = "{'a': 1, 'b': 'a', 'flag': True, 'off': False, 'gc': 0.75, 'pool': (0, 0)}";
    for (int protocol : {2, 4, 5}) {
      CAPTURE(protocol);
      CHECK(Write(protocol, body) == PythonPickle(expr, protocol));
    }
    CHECK(Write(4, [](PickleWriter& w) { w.None(); }) == PythonPickle("None", 4));
  }

  TEST_CASE("lists and dicts are batched by 1000 with APPEND/SETITEM for one item") {
    auto body = [](PickleWriter& w) {
      w.BeginList(5);
      for (size_t n : {0, 1, 2, 1000, 2001}) {
        w.BeginList(n);
        for (size_t i = 0; i < n; ++i) w.Int(static_cast<int64_t>(i));
        w.EndList();
      }
      w.EndList();
    };
    const char* expr = "[list(range(n)) for n in (0, 1, 2, 1000, 2001)]";
    CHECK(Write(4, body) == PythonPickle(expr, 4));
    CHECK(Write(2, body) == PythonPickle(expr, 2));
    auto dicts = [](PickleWriter& w) {
      w.BeginList(3);
      for (size_t n : {1, 2, 1001}) {
        w.BeginDict(n);
        for (size_t i = 0; i < n; ++i) w.Int(static_cast<int64_t>(i)), w.Int(0);
        w.EndDict();
      }
      w.EndList();
    };
    CHECK(Write(4, dicts) == PythonPickle("[{i: 0 for i in range(n)} for n in (1, 2, 1001)]", 4));
  }

  TEST_CASE("long strings use BINUNICODE and large pickles are split into ~64 KiB frames") {
    std::string long_str(300, 'x');
    auto body = [&](PickleWriter& w) {
      w.BeginList(30001);
      w.Str(long_str);
      for (int i = 0; i < 30000; ++i) w.NewStr(absl::StrCat("s", i));
      w.EndList();
    };
    std::string expr = "['x' * 300] + ['s%d' % i for i in range(30000)]";
    std::string ours = Write(4, body);
    // Same bytes as CPython (frames included) when CPython commits frames at the same points;
    // at least CPython must load it back to the same value.
    std::string same =
        testing::RunPython("d = pickle.load(open('" + WriteTemp("frames.pickle", ours) +
                           "', 'rb'))\nprint(d == " + expr + ")\n");
    CHECK(same == "True\n");
    CHECK(ours.size() > 200000);
    CHECK(ours == PythonPickle(expr, 4));
    CHECK(Write(2, body) == PythonPickle(expr, 2));
  }

  TEST_CASE("closing a container with the wrong item count is an error, never a silent bad file") {
    std::ostringstream out;
    PickleWriter w(out, 4);
    w.BeginList(2);
    w.Int(1);
    w.EndList();
    CHECK_FALSE(w.Finish().ok());
  }
}

}  // namespace
}  // namespace memsnap
