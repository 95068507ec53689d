// The pickle decoder: CPython-made pickles of every protocol, hand-assembled streams covering
// every accepted opcode, and every refused opcode with its full message.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>

#include "model_text.h"
#include "pickle_builder.h"
#include "test_util.h"

namespace memsnap {
namespace {

using testing::ParseError;
using testing::ParseOrFail;
using testing::PickleBuilder;

std::string StackText(const Snapshot& s, StackId id) {
  std::string out;
  for (FrameId f : s.stacks.Get(id)) out += s.FrameText(f) + ";";
  return out;
}

}  // namespace

TEST_SUITE("pickle_reader") {
  TEST_CASE("CPython pickles of protocols 2 to 5 give the same model") {
    std::string reference;
    for (int protocol : {2, 3, 4, 5}) {
      CAPTURE(protocol);
      Snapshot s =
          ParseOrFail(testing::PythonPickle("load_json('formats/reader_2_1_full.json')", protocol));
      CHECK(s.source.pickle_protocol == protocol);
      CHECK(s.source.container == ContainerFormat::kPickle);
      std::string text = testing::ModelText(s);
      if (reference.empty()) reference = text;
      CHECK(text == reference);
    }
  }

  TEST_CASE("protocol 2 memo opcodes BINPUT/LONG_BINPUT/BINGET/LONG_BINGET decode shared frames") {
    // 400 distinct frames push the memo past 256 entries; each event also shares the previous
    // event's frame object, so late ones are LONG_BINGETs.
    std::string bytes = testing::RunPython(
        "import pickletools\n"
        "fr = [{'name': 'f%d' % i, 'filename': 'a.py', 'line': i} for i in range(400)]\n"
        "events = [{'action': 'alloc', 'addr': 4096 * i, 'size': 512, 'stream': 0,\n"
        "           'frames': [fr[i], fr[max(i - 1, 0)]]}\n"
        "          for i in range(400)]\n"
        "data = {'segments': [], 'device_traces': [events]}\n"
        "b = pickle.dumps(data, protocol=2)\n"
        "ops = {op.name for op, arg, pos in pickletools.genops(b)}\n"
        "assert {'BINPUT', 'LONG_BINPUT', 'BINGET', 'LONG_BINGET'} <= ops, ops\n"
        "sys.stdout.buffer.write(b)\n");
    Snapshot s = ParseOrFail(bytes);
    REQUIRE(s.events.size() == 400);
    CHECK(s.frames.size() == 400);
    CHECK(StackText(s, s.events[399].stack) == "a.py:399:f399;a.py:398:f398;");
    CHECK(s.events[399].addr == 4096u * 399);
  }

  TEST_CASE(
      "trace entries of every shape decode the same in pickles of every protocol as in JSON") {
    // The decoder takes trace entries of PyTorch's usual shape on a fast path and everything else
    // through the generic opcode loop; the shapes below interleave both, in every protocol, and
    // must give the model the JSON reader gives.
    const std::string kData =
        "fr = [{'name': 'f%d' % i, 'filename': 'm.py', 'line': i} for i in range(10)]\n"
        "shared = [fr[0], fr[1]]\n"
        "ev = []\n"
        "for i in range(600):\n"
        "    e = {'action': 'alloc', 'addr': 4096 * i, 'size': 512 + i, 'stream': 0,\n"
        "         'time_us': 1000 + i, 'compile_context': 'N/A', 'user_metadata': '',\n"
        "         'frames': [fr[i % 10], fr[(i + 1) % 10]]}\n"
        "    k = i % 14\n"
        "    if k == 0: e = dict(reversed(list(e.items())))\n"
        "    if k == 1: e = {'addr': e['addr'], **e}\n"
        "    if k == 2: e['unknown_key'] = [1, 2]\n"
        "    if k == 3: e['compile_context'] = 'ctx%d' % i\n"
        "    if k == 4: e['frames'] = shared\n"
        "    if k == 5: e['frames'] = []\n"
        "    if k == 6: e['frames'] = [fr[3]]\n"
        "    if k == 7: e['action'] = 'free_requested'\n"
        "    if k == 8: e['addr'] = 2**64 - 1\n"
        "    if k == 9: e['stream'] = 2**63 + 5\n"
        "    if k == 10: e['time_us'] = None\n"
        "    if k == 11: e['user_metadata'] = 'meta%d' % i\n"
        "    if k == 12: e['action'] = 'not_an_action'\n"
        "    if k == 13: e['frames'] = [fr[i % 10]] * 1200\n"
        "    ev.append(e)\n"
        "data = {'segments': [], 'device_traces': [ev]}\n";
    Snapshot json = ParseOrFail(
        testing::RunPython(kData + "import json\nsys.stdout.write(json.dumps(data))\n"));
    REQUIRE(json.events.size() == 600);
    const std::string reference = testing::ModelText(json);
    for (int protocol : {2, 3, 4, 5}) {
      CAPTURE(protocol);
      Snapshot s = ParseOrFail(
          testing::RunPython(kData + "sys.stdout.buffer.write(pickle.dumps(data, protocol=" +
                             std::to_string(protocol) + "))\n"));
      CHECK(testing::ModelText(s) == reference);
      CHECK(s.diagnostics.warnings.size() == json.diagnostics.warnings.size());
    }
  }

  TEST_CASE("a memo entry overwritten between trace entries changes what a key GET means") {
    // The fast path remembers the previous entry's key GETs; a BINPUT over a key's memo slot
    // (legal, never written by PyTorch) must not leave it reading the old key.
    PickleBuilder b(4);
    b.Op('}').Mark().Str("segments").Op(']').Str("device_traces").Op(']').Mark().Op(']').Mark();
    // Entry 0 introduces the keys (memo 0-3); entry 1 reads them back by GET.
    b.Op('}').Mark().Str("action").Op('q').U8(0).Str("alloc").Op('q').U8(1);
    b.Str("addr").Op('q').U8(2).Int1(1).Str("size").Op('q').U8(3).Int1(10).Op('u');
    b.Op('}').Mark().Op('h').U8(0).Op('h').U8(1).Op('h').U8(2).Int1(2).Op('h').U8(3).Int1(20);
    b.Op('u');
    // Memo 3 becomes "stream": the same GET bytes now name another key.
    b.Str("stream").Op('q').U8(3).Op('0');
    b.Op('}').Mark().Op('h').U8(0).Op('h').U8(1).Op('h').U8(2).Int1(3).Op('h').U8(3).Int1(30);
    b.Op('u');
    b.Op('e').Op('e').Op('u').Stop();
    Snapshot s = ParseOrFail(b.bytes());
    REQUIRE(s.events.size() == 3);
    CHECK(s.events[1].size == 20);
    CHECK(s.StreamOf(s.events[1]) == 0);
    CHECK(s.events[2].addr == 3);
    CHECK(s.events[2].size == 0);
    CHECK(s.StreamOf(s.events[2]) == 30);
  }

  TEST_CASE("DUP while the stack grows copies the value before the stack moves") {
    // push_back(back()) used to read the old storage after growing it away: a crash on 20M DUPs.
    PickleBuilder b(4);
    b.Op(']');
    for (int k = 0; k < 5000; ++k) b.Op('2');
    b.Stop();
    CHECK(ParseError(b.bytes()).find("STOP with 5001 values on the stack") != std::string::npos);
  }

  TEST_CASE("a stack deeper than a million values is refused, not grown without bound") {
    std::string bytes = PickleBuilder(4).bytes();
    bytes.append((1 << 20) + 8, 'N');
    bytes.push_back('.');
    CHECK(ParseError(bytes).find("pickle stack deeper than 1048576 values: not a snapshot") !=
          std::string::npos);
  }

  TEST_CASE("a hand-assembled stream using every accepted opcode decodes") {
    PickleBuilder b(4);
    b.Op(0x95).U64(0);  // FRAME
    b.Mark().Str("segments");
    b.Mark();  // segments via LIST
    b.Mark()
        .Str("device")
        .Int1(0)
        .Str("address")
        .Long(0x7f0000000000)
        .Str("total_size")
        .Int4(2097152)
        .Str("segment_type")
        .Str4("small")
        .Str("segment_pool_id")
        .Mark()
        .Int1(0)
        .Int1(0)
        .Op('t')  // TUPLE
        .Str("is_expandable")
        .Op(0x89)  // NEWFALSE
        .Str("frames")
        .Op(')')  // EMPTY_TUPLE: empty stack
        .Str("blocks")
        .Mark();
    b.Mark()
        .Str("state")
        .Str("active_allocated")
        .Str("size")
        .Int4(2097152)
        .Str("requested_size")
        .Int2(1000)
        .Str("frames")
        .Frame("f", "a.py", 3)
        .Op(0x94)               // MEMOIZE -> memo 0
        .Op(0x85)               // TUPLE1
        .Op('d');               // DICT
    b.Op('l').Op('d').Op('l');  // blocks LIST, segment DICT, segments LIST
    b.Str("device_traces").Mark().Mark();
    // Event 1: EMPTY_DICT + SETITEM, LONG4 size, a TUPLE3 of frames (memo GETs, a 9-byte LONG1
    // line).
    b.Op('}')
        .Str("action")
        .Str("alloc")
        .Op('s')
        .Str("addr")
        .Long(0x7f0000000000)
        .Op('s')
        .Str("size")
        .Long4(std::string("\xe8\x03", 2))
        .Op('s')
        .Str("stream")
        .Int1(0)
        .Op('s')
        .Str("junk")
        .Op('B')
        .U32(2)
        .Raw("zz")
        .Op('s')  // BINBYTES, unknown key
        .Op('U')
        .U8(7)
        .Raw("unknown")
        .Op('T')
        .U32(1)
        .Raw("v")
        .Op('s')  // SHORT_BINSTRING/BINSTRING
        .Str("frames")
        .Op('h')
        .U8(0)  // BINGET 0
        .Mark()
        .Str("name")
        .Str("g")
        .Str("filename")
        .Str8("c.py")
        .Str("line")
        .Long1(std::string("\xff\xff\xff\xff\xff\xff\xff\xff\x00", 9))
        .Op('d')
        .Op('r')
        .U32(5)  // LONG_BINPUT 5 (skips indices)
        .Op('j')
        .U32(5)    // LONG_BINGET 5
        .Op(0x87)  // TUPLE3
        .Op('s');
    // Stack games that leave nothing behind: DUP/POP, POP_MARK, BINPUT 1.
    b.Str("x").Op('2').Op('0').Op('0').Mark().Int1(1).Int1(2).Op('1');
    // Event 2: snapshot with time_us None, no frames.
    b.Mark()
        .Str("action")
        .Str("snapshot")
        .Str("addr")
        .Int1(0)
        .Str("size")
        .Int4(1536)
        .Str("stream")
        .Int4(-5)
        .Str("time_us")
        .Op('N')
        .Op('d')
        .Op('q')
        .U8(1);
    b.Op('l').Op('l');
    b.Str("allocator_settings")
        .Op('}')
        .Mark()
        .Str("garbage_collection_threshold")
        .Float(0.25)
        .Str("max_split_size")
        .Long4(std::string("\xff", 1))
        .Str("expandable_segments")
        .Op(0x88)  // NEWTRUE
        .Str("roundup_power2_divisions")
        .Op('}')
        .Mark()
        .Str("1")
        .Int1(2)
        .Str("32768")
        .Int1(4)
        .Op('u')
        .Op('u');
    b.Op('d').Stop();
    Snapshot s = ParseOrFail(b.bytes());
    REQUIRE(s.segments.size() == 1);
    CHECK(s.segments[0].address == 0x7f0000000000u);
    CHECK(s.segments[0].is_small);
    CHECK(s.segments[0].stack == StackTable::kEmpty);
    REQUIRE(s.blocks.size() == 1);
    CHECK(s.blocks[0].requested_size == 1000);
    CHECK(StackText(s, s.blocks[0].stack) == "a.py:3:f;");
    REQUIRE(s.events.size() == 2);
    CHECK(s.events[0].size == 1000);
    CHECK(StackText(s, s.events[0].stack) == "a.py:3:f;c.py:0:g;c.py:0:g;");
    CHECK(s.frames.Get(s.stacks.Get(s.events[0].stack)[1]).line == kUnknownLine);
    CHECK(s.events[1].action == Action::kSnapshot);
    CHECK(s.events[1].size == 1536);
    CHECK(s.StreamOf(s.events[1]) == -5);  // BININT is signed
    CHECK_FALSE(s.events[1].has_time());
    CHECK_FALSE(s.events[1].stack.valid());
    CHECK(s.settings.garbage_collection_threshold == 0.25);
    CHECK(s.settings.max_split_size == -1);
    CHECK(s.settings.expandable_segments);
    CHECK(s.settings.roundup_power2_divisions[0] == 2);
    CHECK(s.settings.roundup_power2_divisions[15] == 4);
    CHECK(s.diagnostics.empty());
  }

  TEST_CASE("integers wider than 64 bits are clamped with a warning") {
    PickleBuilder b(2);
    b.Mark()
        .Str("segments")
        .Mark()
        .Mark()
        .Str("device")
        .Int1(0)
        .Str("total_size")
        .Long4(std::string(300, '\x7f'))
        .Op('d')
        .Op('l')
        .Op('d')
        .Stop();
    Snapshot s = ParseOrFail(b.bytes());
    // Clamped to int64 max by the decoder, then to the 1 TiB size bound by Normalize.
    CHECK(s.segments[0].total_size == kMaxBytes);
    const auto& w = s.diagnostics.warnings;
    CHECK(std::count(w.begin(), w.end(), "1 integer(s) wider than 64 bits were clamped") == 1);
    CHECK(std::count(w.begin(), w.end(),
                     "/segments/0/total_size: 9223372036854775807 is not a segment total_size "
                     "PyTorch can write (0 to 1 TiB); clamped into that range") == 1);
  }

  TEST_CASE("every opcode that imports or calls code is refused with a clear message") {
    const std::pair<uint8_t, const char*> refused[] = {
        {'c', "GLOBAL"}, {0x93, "STACK_GLOBAL"}, {'R', "REDUCE"},  {'b', "BUILD"},
        {'i', "INST"},   {'o', "OBJ"},           {0x81, "NEWOBJ"}, {0x92, "NEWOBJ_EX"},
        {'P', "PERSID"}, {'Q', "BINPERSID"},     {0x82, "EXT1"},   {0x83, "EXT2"},
        {0x84, "EXT4"}};
    for (const auto& [op, name] : refused) {
      CAPTURE(name);
      PickleBuilder b(2);
      b.Str("os").Str("system").Op(op).Raw("os\nsystem\n").Stop();
      CHECK(ParseError(b.bytes(), "evil.pickle") ==
            std::string("evil.pickle: offset 14: refusing pickle opcode ") + name +
                ": it would import or call code, and a memory snapshot never contains it (the "
                "file is not a snapshot, or is hostile)");
    }
  }

  TEST_CASE("a pickle that would call os.system is refused and nothing runs") {
    std::string marker = testing::TempDir() + "/pwned";
    for (int protocol : {2, 4, 5}) {
      CAPTURE(protocol);
      std::string bytes = testing::RunPython(
          "import os\n"
          "class Evil:\n"
          "    def __reduce__(self):\n"
          "        return (os.system, ('touch " +
          marker +
          "',))\n"
          "sys.stdout.buffer.write(pickle.dumps({'segments': [Evil()]}, protocol=" +
          std::to_string(protocol) + "))\n");
      std::string err = ParseError(bytes, "evil.pickle");
      CHECK(err.find("evil.pickle: offset ") == 0);
      CHECK(err.find(protocol == 2 ? "refusing pickle opcode GLOBAL"
                                   : "refusing pickle opcode STACK_GLOBAL") != std::string::npos);
      CHECK_FALSE(std::filesystem::exists(marker));
    }
  }

  TEST_CASE("unknown opcodes and protocols are errors, not crashes") {
    CHECK(ParseError(std::string("\x80\x02\xff", 3)) ==
          "<test>: offset 2: unsupported pickle opcode 0xff ('?')");
    CHECK(ParseError(std::string("\x80\x01.", 3)) ==
          "<test>: offset 1: unsupported pickle protocol 1 (snapshots use protocols 2 to 5)");
    CHECK(ParseError(std::string("\x80\x02", 2)) ==
          "<test>: offset 2: unexpected end of input (truncated pickle: no STOP opcode)");
  }
}

}  // namespace memsnap
