// Hostile and broken input (issue 8): every case ends in a clear error naming the input, or in a
// documented tolerant reading; never a crash, a hang or unbounded memory.
#include <doctest/doctest.h>

#include <fstream>
#include <random>

#include "memsnap/io/input.h"
#include "memsnap/parse/reader.h"
#include "model_text.h"
#include "parse/pickle_decoder.h"
#include "pickle_builder.h"
#include "test_util.h"

namespace memsnap {
namespace {

using testing::ParseError;
using testing::PickleBuilder;

/// Parses `bytes`; the result must be a snapshot or an error that starts with the input's name.
void ParsesOrFailsCleanly(const std::string& bytes, const std::string& name = "bad.bin") {
  auto input = io::FromMemory(bytes, name);
  auto snaps = parse::ParseSnapshots(*input);
  if (!snaps.ok()) {
    std::string msg(snaps.status().message());
    CHECK_MESSAGE(msg.rfind(name + ": ", 0) == 0, msg);
  }
}

std::string SmallPickle(int protocol) {
  return testing::PythonPickle("load_json('formats/reader_2_1_full.json')", protocol);
}

/// Length-prefixed records written by python (`emit(bytes)`), split back into strings.
std::vector<std::string> SplitU32Records(const std::string& blob) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i + 4 <= blob.size()) {
    uint32_t n;
    std::memcpy(&n, blob.data() + i, 4);
    out.push_back(blob.substr(i + 4, n));
    i += 4 + n;
  }
  return out;
}

constexpr const char* kEmitPy =
    "import struct, copy\n"
    "def emit(b):\n"
    "    sys.stdout.buffer.write(struct.pack('<I', len(b)) + b)\n"
    "WRONG = ['text', 1.5, [], {}, None, True, -1, 2**64 - 1, [[1]]]\n"
    "def paths(o, p=()):\n"
    "    if isinstance(o, dict):\n"
    "        for k, v in o.items():\n"
    "            yield p + (k,)\n"
    "            yield from paths(v, p + (k,))\n"
    "    elif isinstance(o, (list, tuple)):\n"
    "        for i, v in enumerate(o):\n"
    "            yield p + (i,)\n"
    "            yield from paths(v, p + (i,))\n"
    "def replaced(o, path, value):\n"
    "    o = copy.deepcopy(o)\n"
    "    t = o\n"
    "    for k in path[:-1]: t = t[k]\n"
    "    if isinstance(t, tuple): return None\n"
    "    t[path[-1]] = value\n"
    "    return o\n";

}  // namespace

TEST_SUITE("reader_errors") {
  TEST_CASE("a pickle truncated at every offset is an error, never a crash") {
    for (int protocol : {2, 4}) {
      std::string full = SmallPickle(protocol);
      for (size_t n = 0; n < full.size(); ++n) {
        CAPTURE(n);
        std::string err = ParseError(full.substr(0, n), "cut.pickle");
        REQUIRE_MESSAGE(!err.empty(), "prefix parsed");
        CHECK(err.rfind("cut.pickle: ", 0) == 0);
      }
    }
  }

  TEST_CASE("JSON truncated at every offset is an error, never a crash") {
    std::ifstream f(testing::TestdataPath("formats/reader_2_1_full.json"));
    std::string full((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    for (size_t n = 0; n + 2 < full.size(); ++n) {
      CAPTURE(n);
      std::string err = ParseError(full.substr(0, n), "cut.json");
      REQUIRE(!err.empty());
      CHECK(err.rfind("cut.json: ", 0) == 0);
    }
  }

  TEST_CASE("every single-bit flip of a small pickle parses or fails cleanly") {
    std::string full = SmallPickle(4);
    for (size_t i = 0; i < full.size(); ++i) {
      for (int bit = 0; bit < 8; ++bit) {
        std::string b = full;
        b[i] = static_cast<char>(b[i] ^ (1 << bit));
        ParsesOrFailsCleanly(b);
      }
    }
  }

  TEST_CASE("random bytes and random splices parse or fail cleanly") {
    std::mt19937_64 rng(12345);
    std::string full = SmallPickle(2);
    for (int round = 0; round < 2000; ++round) {
      std::string b = full;
      int edits = 1 + static_cast<int>(rng() % 8);
      for (int e = 0; e < edits; ++e) {
        size_t at = rng() % b.size();
        switch (rng() % 3) {
          case 0:
            b[at] = static_cast<char>(rng());
            break;
          case 1:
            b.erase(at, rng() % 16);
            break;
          default:
            b.insert(at, b.substr(rng() % b.size(), rng() % 32));
            break;
        }
        if (b.empty()) b = std::string("x");  // not = "x": GCC 12's false -Wrestrict (PR 105329)
      }
      ParsesOrFailsCleanly(b);
    }
    for (int round = 0; round < 200; ++round) {
      std::string b(1 + rng() % 256, '\0');
      for (char& c : b) c = static_cast<char>(rng());
      ParsesOrFailsCleanly(b);
      b[0] = '\x80';
      b[1] = '\x04';
      ParsesOrFailsCleanly(b);
    }
  }

  TEST_CASE("a million nested lists, dicts or MARKs do not recurse or crash") {
    constexpr size_t kDepth = 1000000;
    {
      PickleBuilder b(4);
      b.Raw(std::string(kDepth, ']')).Raw(std::string(kDepth - 1, 'a')).Stop();
      CHECK(ParseError(b.bytes(), "deep.pickle") ==
            "deep.pickle: offset 2000001: 'segments': item 0 is a list, not a segment");
    }
    {
      PickleBuilder b(4);
      b.Raw(std::string(kDepth, '(')).Stop();
      CHECK(ParseError(b.bytes(), "deep.pickle") ==
            "deep.pickle: offset 1000002: STOP with an open MARK");
    }
    {
      PickleBuilder b(4);
      b.Op('}');
      for (size_t i = 0; i < kDepth; ++i) b.Str("k").Op('}');
      b.Raw(std::string(kDepth, 's')).Stop();
      CHECK(ParseError(b.bytes(), "deep.pickle").rfind("deep.pickle: offset ", 0) == 0);
    }
    std::string deep_json(kDepth, '[');
    CHECK(ParseError(deep_json, "deep.json").rfind("deep.json: invalid JSON: ", 0) == 0);
    std::string deep_obj;
    for (size_t i = 0; i < 100000; ++i) deep_obj += "{\"segments\":";
    CHECK(ParseError(deep_obj, "deep.json").rfind("deep.json: invalid JSON: ", 0) == 0);
  }

  TEST_CASE("memo references out of range, forward or far away are errors") {
    CHECK(ParseError(PickleBuilder(2).Op('h').U8(5).Stop().bytes()) ==
          "<test>: offset 2: memo reference 5 beyond memo size 0");
    CHECK(ParseError(PickleBuilder(2).Op('j').U32(0xffffffff).Stop().bytes()) ==
          "<test>: offset 2: memo reference 4294967295 beyond memo size 0");
    CHECK(ParseError(PickleBuilder(2).Op(']').Op('r').U32(0xfffffff0).Stop().bytes()) ==
          "<test>: offset 3: memo index 4294967280 is far beyond the memo size 0");
    // A forward reference: index 3 is set, 1 never was.
    CHECK(ParseError(PickleBuilder(2).Op(']').Op('q').U8(3).Op('h').U8(1).Stop().bytes()) ==
          "<test>: offset 5: memo reference 1 beyond memo size 4");
    CHECK(ParseError(PickleBuilder(2).Op(0x94).Stop().bytes()) ==
          "<test>: offset 2: memoize with an empty stack");
  }

  TEST_CASE("enormous declared lengths are refused before any allocation") {
    CHECK(ParseError(PickleBuilder(4).Op(0x8d).U64(uint64_t{1} << 62).Stop().bytes()) ==
          "<test>: offset 2: string of 4611686018427387904 bytes runs past the end of the input");
    CHECK(ParseError(PickleBuilder(4).Op(0x8e).U64(~uint64_t{0}).Stop().bytes()) ==
          "<test>: offset 2: string of 18446744073709551615 bytes runs past the end of the input");
    CHECK(ParseError(PickleBuilder(4).Op('X').U32(0xffffffff).Stop().bytes()) ==
          "<test>: offset 2: string of 4294967295 bytes runs past the end of the input (1 bytes "
          "left)");
    CHECK(ParseError(PickleBuilder(4).Op(0x8b).U32(0x7fffffff).Stop().bytes()) ==
          "<test>: offset 2: LONG4 of 2147483647 bytes runs past the end of the input");
    CHECK(ParseError(PickleBuilder(4).Op(0x8b).U32(0x80000000).Stop().bytes()) ==
          "<test>: offset 2: LONG4 with a negative length");
  }

  TEST_CASE("a FRAME whose length runs past the end of the input is refused, as CPython does") {
    // CPython: "pickle data was truncated". The error names the FRAME's offset.
    CHECK(ParseError(PickleBuilder(4).Op(0x95).U64(~uint64_t{0}).Op(']').Stop().bytes()) ==
          "<test>: offset 2: FRAME of 18446744073709551615 bytes runs past the end of the input "
          "(2 bytes left): pickle data was truncated");
    CHECK(ParseError(PickleBuilder(4).Op(0x95).U64(1000000000000).Op(']').Stop().bytes()) ==
          "<test>: offset 2: FRAME of 1000000000000 bytes runs past the end of the input (2 bytes "
          "left): pickle data was truncated");
    CHECK(ParseError(PickleBuilder(4).Op(0x95).U64(3).Op(']').Stop().bytes()) ==
          "<test>: offset 2: FRAME of 3 bytes runs past the end of the input (2 bytes left): "
          "pickle data was truncated");
    // A frame that ends exactly at the end of the input, or before it, is a frame.
    CHECK(ParseError(PickleBuilder(4).Op(0x95).U64(2).Op(']').Stop().bytes()) == "");
    CHECK(ParseError(PickleBuilder(4).Op(0x95).U64(1).Op(']').Stop().bytes()) == "");
    // Python refuses the same three.
    CHECK(testing::RunPython("import pickle\n"
                             "for n in (2**64 - 1, 10**12, 3, 2):\n"
                             "    b = b'\\x80\\x04\\x95' + n.to_bytes(8, 'little') + b'].'\n"
                             "    try: pickle.loads(b); print('ok', end=' ')\n"
                             "    except Exception as e: print(type(e).__name__, end=' ')\n") ==
          "OverflowError UnpicklingError UnpicklingError ok ");
  }

  TEST_CASE("integers of thousands of bytes are clamped with a warning (tolerant reading)") {
    for (char fill : {'\x7f', '\x80'}) {
      PickleBuilder b(4);
      b.Mark()
          .Str("segments")
          .Op(']')
          .Str("device_traces")
          .Mark()
          .Mark()
          .Mark()
          .Str("action")
          .Str("alloc")
          .Str("addr")
          .Int1(0)
          .Str("size")
          .Long4(std::string(5000, fill))
          .Op('d')
          .Op('l')
          .Op('l')
          .Op('d')
          .Stop();
      Snapshot s = testing::ParseOrFail(b.bytes());
      // Clamped to 64 bits, then to the 1 TiB size bound: sums over a file cannot overflow.
      CHECK(s.events[0].size == (fill == '\x7f' ? kMaxBytes : 0));
      CHECK_FALSE(s.diagnostics.empty());
    }
  }

  TEST_CASE("duplicated keys: the last one wins in both readers") {
    PickleBuilder b(2);
    b.Mark()
        .Str("segments")
        .Mark()
        .Mark()
        .Str("device")
        .Int1(0)
        .Str("total_size")
        .Int1(1)
        .Str("total_size")
        .Int1(2)
        .Op('d')
        .Op('l')
        .Op('d')
        .Stop();
    CHECK(testing::ParseOrFail(b.bytes()).segments[0].total_size == 2);
  }

  TEST_CASE("NaN: refused in JSON; a NaN float where an int belongs is a type error") {
    CHECK(ParseError(R"({"segments": [{"total_size": NaN}]})", "n.json")
              .rfind("n.json: invalid JSON: ", 0) == 0);
    std::string nan_pickle =
        testing::PythonPickle("{'segments': [{'device': 0, 'total_size': float('nan')}]}", 4);
    CHECK(ParseError(nan_pickle, "n.pickle")
              .find("segment key 'total_size': expected int, got float") != std::string::npos);
  }

  TEST_CASE("JSON with a wrong type in every key gives a pointer to that key, or reads") {
    std::string blob = testing::RunPython(
        std::string(kEmitPy) +
        "data = json.load(open('" MEMSNAP_SOURCE_DIR
        "/testdata/formats/reader_2_1_full.json'))\n"
        "for p in paths(data):\n"
        "    for w in WRONG:\n"
        "        o = replaced(data, p, w)\n"
        "        if o is None: continue\n"
        "        ptr = ''.join('/' + str(k).replace('~', '~0').replace('/', '~1') for k in p)\n"
        "        emit(ptr.encode())\n"
        "        emit(json.dumps(o).encode())\n");
    auto records = SplitU32Records(blob);
    REQUIRE(records.size() > 1000);
    int errors = 0;
    for (size_t i = 0; i + 1 < records.size(); i += 2) {
      const std::string& ptr = records[i];
      std::string err = ParseError(records[i + 1], "w.json");
      if (err.empty()) continue;
      ++errors;
      CAPTURE(ptr);
      CHECK_MESSAGE(err.rfind("w.json: " + ptr, 0) == 0, err);
    }
    CHECK(errors > 300);
  }

  TEST_CASE("pickles with a wrong type in every key parse or fail cleanly") {
    std::string blob =
        testing::RunPython(std::string(kEmitPy) +
                           "from pyhelpers import load_json\n"
                           "data = load_json('formats/reader_2_1_full.json')\n"
                           "for p in paths(data):\n"
                           "    for w in WRONG:\n"
                           "        o = replaced(data, p, w)\n"
                           "        if o is not None: emit(pickle.dumps(o, protocol=4))\n");
    auto records = SplitU32Records(blob);
    REQUIRE(records.size() > 1000);
    for (const std::string& r : records) ParsesOrFailsCleanly(r, "w.pickle");
  }

  TEST_CASE("the CLI exits with 2 and names the file for every kind of unusable input") {
    std::string dir = testing::TempDir();
    PickleBuilder evil(2);
    evil.Str("os").Str("system").Op(0x93).Stop();
    const std::pair<const char*, std::string> cases[] = {
        {"empty.pickle", ""},
        {"random.bin", std::string("\x13\x37\xfe\xed garbage", 13)},
        {"cut.pickle", SmallPickle(4).substr(0, 100)},
        {"evil.pickle", evil.bytes()},
        {"types.json", R"({"segments": [{"total_size": "big"}]})"},
        {"nan.json", R"({"segments": [], "x": NaN})"},
        {"page.html", "<html>no payload</html>"},
        {"bad.gz", std::string("\x1f\x8b\x08\x00garbage", 11)},
    };
    for (const auto& [name, bytes] : cases) {
      CAPTURE(name);
      std::string path = dir + "/" + name;
      std::ofstream(path, std::ios::binary) << bytes;
      testing::RunResult r = testing::RunMemsnap({"summary", path});
      CHECK(r.exit_code == 2);
      CHECK(r.err.find(path + ": ") != std::string::npos);
      CHECK(r.out.empty());
    }
    testing::RunResult missing = testing::RunMemsnap({"summary", dir + "/nope.pickle"});
    CHECK(missing.exit_code == 2);
    CHECK(missing.err.find("nope.pickle: No such file or directory") != std::string::npos);
  }
}

}  // namespace memsnap

namespace memsnap {

TEST_SUITE("reader_errors") {
  TEST_CASE("--strict turns inconsistent blocks and overlapping segments into exit code 2") {
    std::string dir = testing::TempDir();
    const std::pair<const char*, const char*> cases[] = {
        {"gap.json",
         R"({"segments": [{"device": 0, "address": 4096, "total_size": 2048, "blocks": [)"
         R"({"address": 4096, "size": 512, "state": "inactive"}]}]})"},
        {"overlap_blocks.json",
         R"({"segments": [{"device": 0, "address": 4096, "total_size": 1024, "blocks": [)"
         R"({"address": 4096, "size": 1024, "state": "inactive"},)"
         R"({"address": 4608, "size": 512, "state": "inactive"}]}]})"},
        {"overlap_segments.json",
         R"({"segments": [{"device": 0, "address": 4096, "total_size": 1024},)"
         R"({"device": 0, "address": 4608, "total_size": 1024}]})"},
        {"negative.json",
         R"({"segments": [{"device": 0, "address": 4096, "total_size": -5, "blocks": [)"
         R"({"size": 9223372036854775807, "state": "inactive"},)"
         R"({"size": 9223372036854775807, "state": "inactive"}]}]})"},
    };
    for (const auto& [name, text] : cases) {
      CAPTURE(name);
      std::string path = dir + "/" + name;
      std::ofstream(path) << text;
      testing::RunResult lenient = testing::RunMemsnap({"summary", path});
      CHECK(lenient.exit_code == 0);
      CHECK(lenient.err.find("warning: " + path) != std::string::npos);
      testing::RunResult strict = testing::RunMemsnap({"--strict", "summary", path});
      CHECK(strict.exit_code == 2);
      CHECK(strict.err.find(path) != std::string::npos);
    }
  }
}

}  // namespace memsnap

namespace memsnap {

TEST_SUITE("reader_errors") {
  TEST_CASE("one event list shared by 50000 devices is refused, not copied 50000 times") {
    PickleBuilder b(2);
    b.Mark().Str("segments").Op(']').Str("device_traces").Mark().Mark();
    for (int i = 0; i < 1000; ++i) b.Mark().Str("action").Str("alloc").Op('d');
    b.Op('l').Op('q').U8(0);
    for (int i = 0; i < 50000; ++i) b.Op('h').U8(0);
    b.Op('l').Op('d').Stop();
    std::string err = testing::ParseError(b.bytes(), "share.pickle");
    CHECK(err.find("share.pickle: offset ") == 0);
    CHECK(err.find("shared or re-read too many times") != std::string::npos);
  }

  TEST_CASE(
      "a trace entry repeated by 100000 memo references is counted once, with a warning naming "
      "the first reference; --strict refuses it") {
    // What Python's pickler writes for [e] * 100001: the entry once, then BINGETs of it. PyTorch
    // never does (it writes every entry once); a 40 MB file of it used to cost 2.3 GiB.
    const std::string bytes = testing::PythonPickle(
        "{'segments': [], 'device_traces': [[dict(action='alloc', addr=2**30, size=512, stream=0, "
        "time_us=1, frames=[{'name': 'f', 'filename': 'a.py', 'line': 1}])] * 100001]}",
        4);
    for (bool fast : {true, false}) {
      CAPTURE(fast);
      parse::PickleOptions options;
      options.fast_paths = fast;
      auto input = io::FromMemory(bytes, "repeat.pickle");
      absl::StatusOr<Snapshot> snap = parse::ParsePickleWith(*input, nullptr, options);
      REQUIRE(snap.ok());
      CHECK(snap->events.size() == 1);
      REQUIRE(snap->diagnostics.warnings.size() == 1);
      const std::string& w = snap->diagnostics.warnings[0];
      // The offset is the first GET's, which follows the entry's SETITEMS and its APPENDS batch.
      REQUIRE(w.rfind("offset ", 0) == 0);
      const size_t at = std::stoull(w.substr(7));
      CHECK(static_cast<uint8_t>(bytes[at]) == 'h');
      CHECK(bytes.rfind('u', at) != std::string::npos);
      CHECK(w.find(": a memo reference (BINGET) re-uses trace entry #0 (in the order decoded), "
                   "which is already in a list: PyTorch writes each trace entry once; 100000 "
                   "trace entry(s) re-used by reference were dropped (each counted once)") !=
            std::string::npos);
    }
    auto input = io::FromMemory(bytes, "repeat.pickle");
    parse::ReadOptions strict;
    strict.strict = true;
    absl::StatusOr<std::vector<Snapshot>> refused = parse::ParseSnapshots(*input, strict);
    REQUIRE(!refused.ok());
    const std::string msg(refused.status().message());
    CHECK(msg.rfind("repeat.pickle: --strict: 1 warning(s): offset ", 0) == 0);
    CHECK(msg.find("re-uses trace entry #0") != std::string::npos);
  }

  TEST_CASE("a block or a segment repeated by memo references is kept once") {
    const std::string bytes = testing::PythonPickle(
        "(lambda b: {'segments': [dict(device=0, address=2**30, total_size=2**21, "
        "allocated_size=512, active_size=512, requested_size=512, stream=0, "
        "segment_type='small', blocks=[b] * 1000, frames=[])] * 3, 'device_traces': [[]]})("
        "dict(address=2**30, size=512, requested_size=512, state='active_allocated', "
        "frames=[]))",
        4);
    Snapshot snap = testing::ParseOrFail(bytes);
    CHECK(snap.segments.size() == 1);
    CHECK(snap.blocks.size() == 1);
    std::string all;
    for (const std::string& w : snap.diagnostics.warnings) all += w + "\n";
    CHECK(all.find("2 segment(s) re-used by reference were dropped") != std::string::npos);
    CHECK(all.find("999 block(s) re-used by reference were dropped") != std::string::npos);
  }

  TEST_CASE("entries appended out of their order, each once, are all kept without a warning") {
    // Legal and never written by PyTorch: the dicts made first, appended later in another order.
    PickleBuilder b(2);
    b.Mark().Str("segments").Op(']').Str("device_traces").Op(']').Mark();
    for (int i = 0; i < 3; ++i) {
      b.Mark().Str("action").Str("alloc").Str("size").Int1(static_cast<uint8_t>(i)).Op('d');
      b.Op('q').U8(static_cast<uint8_t>(i)).Op('0');
    }
    b.Op(']').Mark().Op('h').U8(2).Op('h').U8(0).Op('h').U8(1).Op('e');
    b.Op('e').Op('d').Stop();
    Snapshot snap = testing::ParseOrFail(b.bytes());
    REQUIRE(snap.events.size() == 3);
    CHECK(snap.events[0].size == 2);
    CHECK(snap.events[1].size == 0);
    CHECK(snap.events[2].size == 1);
    CHECK(snap.diagnostics.warnings.empty());
  }

  TEST_CASE("one tuple of 1000 frames used by 50000 events is refused") {
    PickleBuilder b(2);
    b.Mark();
    for (int i = 0; i < 1000; ++i) b.Frame("f", "a.py", static_cast<uint8_t>(i));
    b.Op('t').Op('q').U8(0).Op('0');
    b.Mark().Str("segments").Op(']').Str("device_traces").Mark().Mark();
    for (int i = 0; i < 50000; ++i) {
      b.Mark().Str("action").Str("alloc").Str("frames").Op('h').U8(0).Op('d');
    }
    b.Op('l').Op('l').Op('d').Stop();
    std::string err = testing::ParseError(b.bytes(), "tuple.pickle");
    CHECK(err.find("shared or re-read too many times") != std::string::npos);
  }

  TEST_CASE("a user_metadata dict of 16 levels x 4096 shared items renders bounded text") {
    PickleBuilder b(2);
    b.Str("k").Op('q').U8(0).Op('0');
    for (int level = 0; level < 16; ++level) {
      b.Op('}').Op('q').U8(static_cast<uint8_t>(level + 1)).Mark();
      for (int i = 0; i < 4096; ++i) {
        b.Op('h').U8(0);
        if (level == 0) {
          b.Int1(1);
        } else {
          b.Op('h').U8(static_cast<uint8_t>(level));
        }
      }
      b.Op('u').Op('0');
    }
    b.Mark()
        .Str("segments")
        .Op(']')
        .Str("device_traces")
        .Mark()
        .Mark()
        .Mark()
        .Str("action")
        .Str("alloc")
        .Str("user_metadata")
        .Op('h')
        .U8(16)
        .Op('d')
        .Op('l')
        .Op('l')
        .Op('d')
        .Stop();
    Snapshot s = testing::ParseOrFail(b.bytes());
    REQUIRE(s.event_extras.size() == 1);
    std::string_view text = s.strings.Get(s.event_extras[0].user_metadata);
    CHECK(text.size() < 64 * 1024);
    CHECK(text.substr(0, 8) == "{k: {k: ");
  }
}

}  // namespace memsnap
