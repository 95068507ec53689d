#!/usr/bin/env python3
"""One vocabulary (issue 32, docs/figures.md "Kinds of memory"): fails when a C++ source spells a
kind of memory as a string instead of using analysis::Category, tells a synthetic row from a
site by its first character instead of its `synthetic` flag, or when an analysis writes a
sentence for the reader.

    check_vocabulary.py REPO_ROOT            check src/ and include/
    check_vocabulary.py --self-test          check that each rule catches what it is meant to

A kind of memory is named in one place, the enum's own mapping (kCategoryNames in
src/analysis/attribution/attribution.cpp); everything else holds an analysis::Category and prints
it through the session's vocabulary, analysis::CategoryNames::Name(c) (the built-ins and the user's
own categories; no process-wide table). Comments are not code and are skipped.

An analysis (src/analysis, include/memsnap/analysis) returns typed findings; the words are written
once, by src/report (docs/design.md, "Queries"). A string literal there that reads as a sentence
to the reader (it opens with a capitalised word and goes on for two more, or it ends a sentence
of four words or more with a full stop) is a problem. Error messages (absl::Status) are not
sentences in this sense: they open in lower case, after the flag or file they name.
"""
import pathlib
import re
import sys

CATEGORY_NAMES = ("parameter", "gradient", "optimizer_state", "activation", "temporary", "input",
                  "kv_cache", "autocast_cache", "state", "unknown")
# The enum's own mapping.
MAPPING = "src/analysis/attribution/attribution.cpp"
# A literal equal to a category name that names something else: (file, literal) -> why.
OTHER_MEANINGS = {
    ("src/model/snapshot.cpp", "unknown"): "the name of Action::kUnknown, a trace action",
    ("src/cli/convert_command.cpp", "input"): "a JSON key: the input file of `convert --json`",
    ("src/report/workload_render.cpp", "unknown"): "the name of Workload::kUnknown, a kind of run",
    ("src/analysis/attribution/workload.cpp", "kv_cache"): "a part of a frame's file or function "
                                                           "name that marks KV-cache code",
    ("src/report/render_util.h", "kv_cache"): "a JSON key: how many of a workload's stacks have "
                                              "KV-cache frames",
    ("src/cli/convert_command.cpp", "state"): "a JSON key: whose allocator state `convert --json` "
                                              "slices (slice_end, recording_end)",
    ("src/parse/schema.h", "state"): "a snapshot's key: a block's state (active_allocated...)",
    ("src/writer/snapshot_writer.cpp", "state"): "a snapshot's key: a block's state (active_allocated...)",
}
LITERAL = re.compile(r'"((?:[^"\\\n]|\\.)*)"')
ANALYSIS_DIRS = ("src/analysis/", "include/memsnap/analysis/")
WORD = re.compile(r"[A-Za-z][A-Za-z'’-]*")


def is_phrase(lit):
    """Whether a literal is words for the reader (three or more, opening with a letter) rather than
    a name, key, label of a synthetic row ("[...]") or format: what an analysis returns as a typed
    field instead ("growing in every step", "both files have a trace")."""
    text = lit.strip()
    if not text or not text[0].isalpha() or "%" in text:
        return False
    return len([w for w in text.split() if WORD.match(w)]) >= 3


# Statements in which an analysis may write words: errors (the message names the flag or file), and
# what --timings prints.
WORDS_ALLOWED = re.compile(r"Error\(|\b(error|bad)\(|ScopedTimer|phase\.emplace")
# Phrases an analysis still writes, each with why it may: (file, literal) -> why.
PHRASES_ALLOWED = {
    ("src/analysis/timeline/timeline.cpp", "the dump (no allocation traced)"):
        "DescribeEvent: a point as the moment errors name it",
    ("src/analysis/timeline/timeline.cpp", "the initial state"):
        "DescribeEvent: a point as the moment errors name it",
    ("src/analysis/allocator/frag.cpp", "a time or event:N"): "the flag's value in an error",
    **{("src/analysis/allocator/oom.cpp", lit): "NoCapacityError's message" for lit in (
        "no oom entry in the trace", "the trace's oom entry implies ",
        "the snapshot has no trace, so no oom entry gives the card",
        " of device memory (device_free + reserved), which cannot be right (",
        " and no --device-memory, so the device's capacity is unknown ",
        "and there is nothing to replay against. The snapshot ends with ", " of it allocated",
        " cached free (largest block ", "fits and where it would fail")},
    **{("src/analysis/allocator/replay.cpp", lit):
       "ImpliedCapacity's reason for refusing a card: part of NoCapacityError's message"
       for lit in ("it is not above zero", "the trace itself reserves ", " from its start",
                   "the trace itself holds ", " live when that entry is written")},
    ("src/analysis/allocator/replay_run.cpp", " resumed from a saved state; "):
        "FitSearchNote: a --timings line",
    ("src/analysis/allocator/replay_run.cpp", " capacities proven without a replay, "):
        "FitSearchNote: a --timings line",
    ("src/analysis/allocator/replay_run.cpp", " searches answered where predicted"):
        "FitSearchNote: a --timings line",
}


def is_sentence(lit):
    """Whether a literal reads as prose for the reader rather than a name, key or format."""
    words = lit.split()
    if len([w for w in words if WORD.match(w)]) < 3:
        return False
    if re.match(r"[A-Z][a-z'’]+\s", lit):
        return True
    return lit.rstrip().endswith(".") and not lit.rstrip().endswith("..") and len(words) >= 4


# A device filter is analysis::DeviceFilter (include/memsnap/analysis/timeline/timeline.h), in the
# headers of the analyses and queries: no "-1: every device", no optional of its own.
OPTION_DIRS = ("include/memsnap/analysis/", "include/memsnap/query/")
DEVICE_SENTINEL = re.compile(
    r"\b(int|int32_t)\s+device\s*=\s*-1\b|std::optional<\s*(int|int32_t)\s*>\s+device\b")


# An event index in the headers of the analyses and queries is an analysis::TimelinePoint (a
# point of a device's timeline: the start, or just after event i) or a LocalEvent (an event a
# lifetime saw, or none), include/memsnap/analysis/timeline/event_index.h: never a bare int64_t
# with -1 for "before the first event". Counts (`num_events`, `period_events`) are not indices.
BARE_EVENT = re.compile(r"\bint64_t\s+(\w+_)?event(_\w+)?\s*[=;,]")
# Fields not converted yet: (file, field) -> why.
BARE_EVENT_LEFT = {
    ("include/memsnap/analysis/allocator/frag.h", "event_index"):
        "frag's figures (DeviceFrag, FragSample, FragAnswer, FragCost): issue 37 reworks frag.cpp "
        "in parallel; their -1 is written as is by frag --json",
}


SYNTHETIC_TESTS = [
    re.compile(r"\[\s*0\s*\]\s*[!=]=\s*'\['"),
    re.compile(r"'\['\s*[!=]=\s*\w[\w.>-]*\s*\[\s*0\s*\]"),
    re.compile(r"front\(\)\s*[!=]=\s*'\['"),
    re.compile(r"starts_with\(\s*(\"\[\"|'\[')\s*\)"),
    re.compile(r"StartsWith\([^,]*,\s*\"\[\"\s*\)"),
]


def strip_comments(line):
    """The line without a // comment (outside string literals)."""
    out, i, quote = [], 0, None
    while i < len(line):
        c = line[i]
        if quote:
            out.append(c)
            if c == "\\" and i + 1 < len(line):
                out.append(line[i + 1])
                i += 1
            elif c == quote:
                quote = None
        elif c in "\"'":
            quote = c
            out.append(c)
        elif line.startswith("//", i):
            break
        else:
            out.append(c)
        i += 1
    return "".join(out)


def check_text(rel, text):
    """Problems of one file, as 'path:line: what'."""
    problems = []
    in_block = False
    statement = ""  # the code of the statement so far, for WORDS_ALLOWED
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw
        if in_block:
            end = line.find("*/")
            if end < 0:
                continue
            line, in_block = line[end + 2:], False
        line = re.sub(r"/\*.*?\*/", " ", line)
        start = line.find("/*")
        if start >= 0 and line.find("*/", start) < 0 and '"' not in line[:start]:
            line, in_block = line[:start], True
        code = strip_comments(line)
        if rel != MAPPING:
            for m in LITERAL.finditer(code):
                lit = m.group(1)
                if lit in CATEGORY_NAMES and (rel, lit) not in OTHER_MEANINGS:
                    problems.append(f'{rel}:{n}: the kind of memory "{lit}" spelled as a string; '
                                    "use analysis::Category (CategoryNames::Name() to print it)")
        if rel.startswith(OPTION_DIRS):
            for m in BARE_EVENT.finditer(code):
                name = m.group(0).split()[1].rstrip("=;,")
                if (rel, name) not in BARE_EVENT_LEFT:
                    problems.append(f"{rel}:{n}: a bare int64_t event index ({name}); use "
                                    "analysis::TimelinePoint or LocalEvent")
        if rel.startswith(OPTION_DIRS) and DEVICE_SENTINEL.search(code):
            problems.append(f"{rel}:{n}: a device filter of its own; use analysis::DeviceFilter")
        statement = (statement + " " + code) if not re.search(r"[;{}]\s*$", statement) else code
        if rel.startswith(ANALYSIS_DIRS):
            for m in LITERAL.finditer(code):
                lit = m.group(1)
                if is_sentence(lit):
                    problems.append(f'{rel}:{n}: an analysis writes a sentence ("{lit}"); '
                                    "return typed fields and let src/report write the words")
                elif (is_phrase(lit) and not WORDS_ALLOWED.search(statement) and
                      (rel, lit) not in PHRASES_ALLOWED):
                    problems.append(f'{rel}:{n}: an analysis writes a phrase ("{lit}"); return '
                                    "an enum or typed fields and let src/report write the words")
        for rx in SYNTHETIC_TESTS:
            if rx.search(code):
                problems.append(f"{rel}:{n}: a synthetic row told by its first character "
                                "('['); test the row's `synthetic` flag")
                break
    return problems


def check_repo(root):
    root = pathlib.Path(root)
    problems = []
    files = sorted(p for d in ("src", "include") for p in (root / d).rglob("*")
                   if p.suffix in (".cpp", ".h", ".cc", ".hpp"))
    if not files:
        print(f"check_vocabulary: no sources under {root}", file=sys.stderr)
        return 2
    for p in files:
        problems += check_text(p.relative_to(root).as_posix(), p.read_text(errors="replace"))
    for p in problems:
        print(p)
    print(f"check_vocabulary: {len(files)} files, {len(problems)} problems")
    return 1 if problems else 0


def count_mismatches(path, where, cases):
    """Self-test cases {text: problems expected} checked as if in PATH; prints and counts misses."""
    missed = 0
    for text, want in cases.items():
        got = len(check_text(path, text))
        if got != want:
            print(f"self-test: {text!r} in {where}: {got} problems, expected {want}")
            missed += 1
    return missed


def self_test():
    bad = {
        'if (category == "activation") return;': 1,
        'h.category = "unknown";': 1,
        'bool named = !s.empty() && s[0] != \'[\';': 1,
        "if (p.site.empty() || p.site[0] == '[') continue;": 1,
        'if (absl::StartsWith(site, "[")) x();': 1,
        'x = names.Name(Category::kActivation);  // "activation"': 0,
        '/* "gradient" */ int a;': 0,
        'if (row.synthetic) continue;': 0,
    }
    failed = 0
    for text, want in bad.items():
        got = len(check_text("src/x.cpp", text))
        if got != want:
            print(f"self-test: {text!r}: {got} problems, expected {want}")
            failed += 1
    if check_text(MAPPING, 'constexpr a = {"parameter", "gradient"};'):
        print("self-test: the enum's own mapping was flagged")
        failed += 1
    analysis = {
        'out.note = absl::StrCat("The allocator\'s state is kept at ", n, " moments");': 1,
        'out.note = absl::StrCat("kept at the marked ones, to keep the page small.");': 1,
        'return absl::InvalidArgumentError("the snapshot has no trace events");': 0,
        'labels.push_back("peak reserved");': 0,
        'x = absl::StrFormat("%.0f", v);  // "To keep the page small."': 0,
        'case Verdict::kGrowing: return "growing in every step";': 1,
        'reason = both ? std::string("both files have a trace") : x;': 1,
        'r.source = "oom entry (device_free + reserved)";': 1,
        'return absl::InvalidArgumentError(\n    absl::StrCat(path, ": no trace to replay"));': 0,
        'ScopedTimer t(absl::StrCat("frag: ", n, " settings replayed"));': 0,
        'return "growing_then_flat";': 0,
        'inline constexpr std::string_view kPreWindowRow = "[allocated before the trace]";': 0,
    }
    failed += count_mismatches("src/analysis/timeline/x.cpp", "an analysis", analysis)
    devices = {
        "  int32_t device = -1;  // -1: every device": 1,
        "  std::optional<int32_t> device;  // nullopt: all": 1,
        "  DeviceFilter device;  // default: every device": 0,
        "  int32_t device = 0;  // the device of this row": 0,
    }
    failed += count_mismatches("include/memsnap/query/x.h", "a query header", devices)
    events = {
        "  int64_t event = -1;  // the state after this event; -1 = before the first": 1,
        "  int64_t peak_reserved_event = -1;": 1,
        "  int64_t begin_event, count;": 1,
        "  TimelinePoint event;  // the state after this event": 0,
        "  int64_t period_events = 0;  // a count": 0,
        "  int64_t num_events = 0;": 0,
    }
    failed += count_mismatches("include/memsnap/analysis/sites/x.h", "an analysis header", events)
    if check_text("src/report/x.cpp", 'note = "The allocator\'s state is kept at the marked ones.";'):
        print("self-test: a sentence in src/report was flagged")
        failed += 1
    total = len(bad) + 1 + len(analysis) + len(devices) + len(events) + 1
    print(f"check_vocabulary self-test: {total - failed} of {total} cases right")
    return 1 if failed else 0


if __name__ == "__main__":
    if sys.argv[1:] == ["--self-test"]:
        sys.exit(self_test())
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(check_repo(sys.argv[1]))
