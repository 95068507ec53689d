// memsnap convert IN OUT: rewrite a snapshot as JSON or as a pickle of a chosen protocol,
// optionally cut to a range of the trace (--from/--to) so the official viewer can open a piece of a
// huge file.
#include <memory>

#include "absl/strings/str_cat.h"
#include "memsnap/cli/commands_list.h"
#include "memsnap/cli/common.h"
#include "memsnap/io/gzip_writer.h"
#include "memsnap/query/convert.h"
#include "memsnap/report/frag_render.h"
#include "memsnap/util/format.h"
#include "memsnap/util/status_macros.h"
#include "memsnap/util/strings.h"
#include "memsnap/writer/snapshot_writer.h"
#include "memsnap/writer/trace_slice.h"

namespace memsnap::cli {

namespace {

struct ConvertCommandOptions {
  std::string input;
  std::string output;
  std::string format;  // "json" | "pickle"; empty: from OUT's extension
  int protocol = 4;
  bool gzip = false;
  std::string from;
  std::string to;
  bool keep_final_state = false;
  bool json = false;
  OutputLimitFlags limit;
};

}  // namespace

RunFn SetupConvert(CLI::App& sub) {
  auto opts = std::make_shared<ConvertCommandOptions>();
  sub.add_option("input", opts->input, "Snapshot file (pickle, JSON, HTML, gzip)")
      ->check(InputPaths())
      ->required();
  sub.add_option("output", opts->output, "Output file ('-' for stdout)")
      ->check(OutputPath())
      ->required();
  sub.add_option("--format", opts->format,
                 "Output format; default: json when OUT ends in .json, else pickle")
      ->check(CLI::IsMember({"json", "pickle"}));
  sub.add_option("--protocol", opts->protocol,
                 "Pickle protocol (default 4: the official viewer shows a blank page on 5)")
      ->check(CLI::IsMember({2, 3, 4, 5}));
  sub.add_option("--from", opts->from,
                 "Keep trace events from here: event:N (negative from the end), a time since the "
                 "trace began (+250ms, 2s; -5s back from its end) or a time_us as recorded");
  sub.add_option("--to", opts->to, "Keep trace events before here (same forms as --from)");
  sub.add_flag("--keep-final-state", opts->keep_final_state,
               "With --to: write the segments and blocks of the end of the recording, as before "
               "issue 52, instead of the state at the slice's end");
  sub.add_flag("--gzip", opts->gzip,
               "Compress the output with gzip (the default when OUT ends in .gz); memsnap and "
               "the official viewer read it back");
  sub.add_flag("--json", opts->json, "Print what was written as JSON");
  AddOutputLimitFlags(sub, opts->limit);
  sub.footer(
      "A slice is a snapshot of its moment: device_traces keeps the events in [--from, --to)\n"
      "(external_annotations the same time window), and segments holds the allocator state at\n"
      "the slice's end (before the --to event), rebuilt by undoing the trace after it from the\n"
      "recording's final state as `frag --at` does: each live block with its requested size and\n"
      "the stack of its allocation, blocks alive before the trace included. Blocks freed after\n"
      "the slice have estimated sizes (the allocator's rounding of their request). Where the\n"
      "trace after the slice cannot be undone consistently a warning names the file and event.\n"
      "A later --from leaves the blocks alive at its start out of the trace: commands read them\n"
      "as allocated before it. --keep-final-state writes the end of the recording's segments\n"
      "instead (the state its trace does not lead to).\n"
      "Not carried over (the model drops them): stale requested_size of inactive blocks (0),\n"
      "compile_context \"N/A\" and empty user_metadata (omitted), frame line 2^64-1 (-1); 2.0-era\n"
      "files (block history) and bare segment lists are written in the 2.1+ form.\n"
      "Examples:\n"
      "  memsnap convert snap.pickle snap.json\n"
      "  memsnap convert snap.pickle snap.json.gz     # compressed: JSON repeats every stack\n"
      "  memsnap convert --protocol 4 snap_p5.pickle snap_p4.pickle\n"
      "  memsnap convert --from event:0 --to event:500000 huge.pickle part1.pickle\n"
      "  memsnap convert --from -5s huge.pickle last5s.pickle\n"
      "JSON's size is counted before writing: over --max-output (default 16 GiB or 64x the\n"
      "input) or the free space of OUT's file system it is refused unless --force.");
  return [opts](Context& ctx) -> absl::StatusOr<ExitCode> {
    ASSIGN_OR_RETURN(writer::SliceBound from, writer::ParseSliceBound(opts->from, "--from"));
    ASSIGN_OR_RETURN(writer::SliceBound to, writer::ParseSliceBound(opts->to, "--to"));
    // The state at the slice's end differs from the final one only when the slice ends early.
    const bool rebuild = to.kind != writer::SliceBound::Kind::kNone && !opts->keep_final_state;
    ASSIGN_OR_RETURN(query::Session session,
                     OpenSession(opts->input, query::ConvertNeeds(rebuild), ctx));
    const Snapshot& snap = session.snapshot();
    std::string format = opts->format;
    const bool gzip = opts->gzip || opts->output.ends_with(".gz");
    const std::string plain_name = opts->output.ends_with(".gz")
                                       ? opts->output.substr(0, opts->output.size() - 3)
                                       : opts->output;
    if (format.empty()) format = plain_name.ends_with(".json") ? "json" : "pickle";

    writer::SnapshotWriteOptions write;
    write.protocol = opts->protocol;
    std::optional<analysis::StateAtCut> state;  // the slice's state at its end, when rebuilt
    std::vector<std::string> warnings;
    uint64_t events = snap.events.size();
    bool sliced =
        from.kind != writer::SliceBound::Kind::kNone || to.kind != writer::SliceBound::Kind::kNone;
    if (sliced) {
      absl::StatusOr<writer::TraceSlice> slice = writer::ComputeSlice(snap, from, to);
      if (!slice.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat(opts->input, ": ", Sv(ToStd(slice.status().message()))));
      }
      write.event_ranges = slice->ranges;
      write.min_time_us = slice->min_time_us;
      write.max_time_us = slice->max_time_us;
      events = slice->events;
      if (rebuild) {
        std::vector<analysis::StateCut> cuts;
        for (size_t d = 0; d < snap.traces.size(); ++d) {
          cuts.push_back({snap.traces[d].device,
                          static_cast<int64_t>(slice->ranges[d].end - snap.traces[d].begin)});
        }
        ASSIGN_OR_RETURN(state, query::StateAtCuts(session, cuts));
        write.segments = &state->segments;
        write.blocks = &state->blocks;
        for (const analysis::StateCutCaveat& c : state->caveats) {
          warnings.push_back(
              absl::StrCat(opts->input, ": device ", c.device,
                           ": the allocator state at the slice's end (before event:", c.events,
                           ") could not be rebuilt exactly: the trace after it has ",
                           report::UndoProblemsText(c.problems), "; ", opts->output,
                           "'s segments and blocks are approximate"));
        }
      }
    }
    if (!ctx.quiet) {
      for (const std::string& w : warnings) *ctx.err << "warning: " << w << "\n";
    }
    const size_t segments = state ? state->segments.size() : snap.segments.size();
    if (format == "json") {
      // Counted before anything is written: a file whose entries share one deep stack would
      // otherwise write until the disk is full.
      RETURN_IF_ERROR(CheckOutputSize(opts->output, writer::JsonBytes(snap, write), opts->input,
                                      snap.source.file_bytes, gzip, opts->limit, ctx.force));
    }
    uint64_t bytes = 0;
    RETURN_IF_ERROR(WriteOutput(
        opts->output, ctx,
        [&](std::ostream& sink) {
          auto write_to = [&](std::ostream& out) {
            return format == "json" ? writer::WriteSnapshotJson(snap, write, out)
                                    : writer::WriteSnapshotPickle(snap, write, out);
          };
          if (!gzip) return write_to(sink);
          io::GzipOstream z(sink);
          RETURN_IF_ERROR(write_to(z));
          return z.Finish();
        },
        "output", &bytes));
    if (opts->output == "-") return ExitCode::kOk;
    std::string what = format == "json" ? "JSON" : absl::StrCat("pickle protocol ", opts->protocol);
    if (gzip) what += ", gzip";
    // JSON has no memo: every stack is written out in full where a pickle shares it, so a JSON
    // can be tens of times its input. Say so, and what is smaller.
    const uint64_t in_bytes = snap.source.file_bytes;
    const bool big = format == "json" && !gzip && in_bytes > 0 && bytes > 10 * in_bytes;
    if (big && !ctx.quiet) {
      *ctx.err << "note: " << opts->output << " is " << FormatBytes(static_cast<int64_t>(bytes))
               << ", " << static_cast<int64_t>(bytes / in_bytes) << "x the "
               << FormatBytes(static_cast<int64_t>(in_bytes))
               << " input: JSON repeats every stack a pickle shares (it is already written without "
                  "indentation). Write "
               << plain_name << ".gz (or --gzip) for a compressed JSON, or a pickle (protocol 4 "
               << "opens in the official viewer)\n";
    }
    if (opts->json) {
      nlohmann::ordered_json j;
      j["input"] = opts->input;
      j["output"] = opts->output;
      j["format"] = format;
      if (format == "pickle") j["protocol"] = opts->protocol;
      j["trace_entries"] = events;
      j["trace_entries_in_input"] = snap.events.size();
      j["segments"] = segments;
      // Whose allocator state `segments` holds: the slice's end, or the recording's.
      j["state"] = state ? "slice_end" : "recording_end";
      j["warnings"] = warnings;
      j["bytes"] = bytes;
      j["gzip"] = gzip;
      PrintJson(j, ctx);
    } else {
      *ctx.out << "wrote " << opts->output << ": " << what << ", " << segments
               << (state ? " segments at the slice's end, " : " segments, ") << events << " of "
               << snap.events.size() << " trace entries, "
               << FormatBytes(static_cast<int64_t>(bytes)) << "\n";
    }
    return ExitCode::kOk;
  };
}

}  // namespace memsnap::cli
