#include "model_text.h"

#include "absl/strings/str_cat.h"
#include "memsnap/util/strings.h"

namespace memsnap::testing {

namespace {

std::string StackText(const Snapshot& s, StackId id) {
  if (!id.valid()) return "<none>";
  std::string out = "[";
  for (FrameId f : s.stacks.Get(id)) {
    const Frame& fr = s.frames.Get(f);
    absl::StrAppend(&out, Sv(s.strings.Get(fr.filename)), ":", fr.line, ":",
                    Sv(s.strings.Get(fr.name)), "; ");
  }
  return out + "]";
}

std::string Str(const Snapshot& s, StrId id) {
  return id.valid() ? std::string(s.strings.Get(id)) : "<none>";
}

}  // namespace

std::string ModelText(const Snapshot& s) {
  std::string out;
  for (const Segment& g : s.segments) {
    absl::StrAppend(&out, "segment dev=", g.device, " addr=", g.address, " total=", g.total_size,
                    " alloc=", g.allocated_size, " active=", g.active_size,
                    " req=", g.requested_size, " stream=", g.stream, " small=", g.is_small,
                    " exp=", g.is_expandable, " pool=", g.pool.first, ",", g.pool.second,
                    " stack=", StackText(s, g.stack), " blocks=", g.num_blocks, "\n");
    for (const Block& b : s.BlocksOf(g)) {
      absl::StrAppend(&out, "  block addr=", b.address, " size=", b.size, " req=", b.requested_size,
                      " state=", Sv(BlockStateName(b.state)), " stack=", StackText(s, b.stack),
                      "\n");
    }
  }
  for (const DeviceTrace& t : s.traces) {
    absl::StrAppend(&out, "trace dev=", t.device, " n=", t.size(), "\n");
    for (uint32_t i = t.begin; i < t.end; ++i) {
      const TraceEvent& e = s.events[i];
      absl::StrAppend(&out, "  ", Sv(ActionName(e.action)), " addr=", e.addr, " size=", e.size,
                      " t=", e.time_us, " stream=", s.StreamOf(e), " stack=", StackText(s, e.stack),
                      "\n");
    }
  }
  for (const EventExtra& x : s.event_extras) {
    absl::StrAppend(&out, "extra ev=", x.event, " cc=", Str(s, x.compile_context),
                    " meta=", Str(s, x.user_metadata), " cat=", Str(s, x.category),
                    " pool=", x.pool ? absl::StrCat(x.pool->first, ",", x.pool->second) : "-",
                    "\n");
  }
  for (const Annotation& a : s.annotations) {
    absl::StrAppend(&out, "annotation dev=", a.device, " t=", a.time_us, " ", Str(s, a.stage), " ",
                    Str(s, a.name), "\n");
  }
  const AllocatorSettings& st = s.settings;
  absl::StrAppend(&out, "settings present=", st.present, " conf=", st.conf,
                  " max_split=", st.max_split_size, " gc=", st.garbage_collection_threshold,
                  " exp=", st.expandable_segments, " lock=", st.release_lock_on_cudamalloc,
                  " pinned=", st.pinned_use_cuda_host_register, "/", st.pinned_num_register_threads,
                  " reuse=", st.graph_capture_record_stream_reuse, " roundup=");
  for (int64_t d : st.roundup_power2_divisions) absl::StrAppend(&out, d, ",");
  absl::StrAppend(
      &out,
      " overflowed=", st.trace_alloc_overflowed ? absl::StrCat(*st.trace_alloc_overflowed) : "-",
      " max_entries=", st.trace_alloc_max_entries ? absl::StrCat(*st.trace_alloc_max_entries) : "-",
      "\n");
  absl::StrAppend(&out, "flavour bare=", s.source.bare_segment_list,
                  " legacy=", s.source.legacy_history,
                  " block_addresses=", s.source.has_block_addresses, "\n");
  return out;
}

}  // namespace memsnap::testing
