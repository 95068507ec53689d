// Parallel decoding of one pickle (docs/reader.md, "Parallel decoding"): the sequential decoder
// stays the one that decides; worker threads decode chunks of the trace entries ahead of it
// speculatively, and the sequential decoder adopts what they decoded when it reaches exactly the
// position a chunk's segment starts at and the memo entries the worker read still hold the values
// it read. Adopting a segment replays its MARKs and APPENDS through the VM's own code, so the
// model is the sequential one whatever the workers do; anything they did not decode (an entry the
// fast path refuses, a memo GET of an entry they cannot see, a chunk not decoded in time) the
// sequential decoder decodes as it always does.
//
// clang-format off
//   head      the decoder runs alone until pos_ passes the head (the keys, actions, frames and
//             stacks of the first iterations are defined there), then copies what the workers
//             read (SpecHead) and cuts the rest at FRAME boundaries (protocol 4 and 5 write a
//             FRAME opcode with the frame's length every 64 KiB, at an opcode boundary)
//   chunk k   [R_k, R_k+1): R_k the first EMPTY_DICT at an opcode boundary at or after frame F_k
//   workers   take chunks from the back; the sequential decoder takes, from the front, every
//             chunk no worker has started, and waits for one a worker is decoding
//   segment   a run of a chunk the worker decoded: events, MARKs, APPENDS, FRAMEs; an entry it
//             cannot decode ends a segment, and the next starts after that entry (a gap that the
//             sequential decoder decodes)
// clang-format on
#include <atomic>
#include <new>
#include <system_error>
#include <thread>

#include "absl/strings/str_cat.h"
#include "memsnap/util/status_macros.h"
#include "memsnap/util/timer.h"
#include "parse/pickle_decoder.h"
#include "parse/pickle_fast_path.h"

namespace memsnap::parse::pickle {

// A MARK or an APPENDS of a segment, after `events_before` of the chunk's events.
struct SpecOp {
  uint32_t events_before = 0;
  bool appends = false;
  size_t at = 0;
};

// One segment of a chunk: the input [begin, end) and what it made, as ends of the chunk's arrays
// (a segment's first element is the previous segment's end, 0 for the first).
struct SpecSegment {
  size_t begin = 0;
  size_t end = 0;
  uint32_t events_end = 0;
  uint32_t memo_end = 0;
  uint32_t lists_end = 0;
  uint32_t ops_end = 0;
};

struct SpecChunk {
  enum State : int { kPending, kRunning, kDone, kSequential };
  size_t begin = 0;
  size_t end = 0;
  std::atomic<int> state{kPending};
  // Written by the worker before state becomes kDone, read by the sequential decoder after.
  std::vector<TraceEvent> events;  // stacks: the head's StackIds, or the chunk's own above them
  std::vector<MemoWord> memo;      // the chunk's memo puts; refs of events and lists the chunk's
  std::vector<ListObj> lists;      // begin: the chunk's event that made the list
  std::vector<SpecOp> ops;
  std::vector<SpecSegment> segments;
  StackTable stacks;                 // the head's stacks, then the chunk's new ones
  StreamTable streams;               // the head's streams, then the chunk's new ones
  std::vector<uint32_t> reads;       // head memo entries read
  std::vector<StackId> stack_map;    // the chunk's new stacks -> the model's (sequential decoder)
  std::vector<StreamId> stream_map;  // the chunk's new streams -> the model's
};

struct SpecState {
  SpecHead head;
  std::vector<std::unique_ptr<SpecChunk>> chunks;
  std::atomic<size_t> back{0};  // workers take chunks [0, back) from the back
  std::vector<std::thread> workers;
  size_t cur = 0;  // the chunk the sequential decoder is at
  size_t seg = 0;  // its next segment
  bool planned = false;
  // The plan: the first worker finds the chunks' starts while the sequential decoder decodes the
  // head, then every worker waits for the head's copy (MakePlan).
  enum Plan : int { kSearching, kFound, kReady, kNone };
  std::atomic<int> plan{kSearching};
  size_t head_start = 0;
  size_t head_end = 0;                   // the earliest end of the head: chunks start after it
  size_t head_max = 0;                   // the latest
  int64_t defined_at_check = INT64_MIN;  // memo entries other than trace entries at the last check
  size_t chunk_bytes = 0;
  std::vector<size_t> starts;  // the chunks' starts (FindChunkStarts)
  // The observer the workers feed (EventObserver::Help) between their chunks and once none is
  // left, in place of a thread of its own that would share the sequential decoder's core.
  EventObserver* helped = nullptr;
  // The model's events and memo, populated by the workers ahead of the sequential decoder
  // (MADV_POPULATE_WRITE): what the plan saw of them, to estimate their final size from the
  // density of a decoded chunk.
  SharedPopulate events_populate;
  SharedPopulate memo_populate;
  uintptr_t events_base = 0;
  uintptr_t memo_base = 0;
  size_t events_cap = 0;
  size_t memo_cap = 0;
  size_t plan_pos = 0;
  size_t plan_events = 0;
  size_t plan_memo = 0;
};

namespace {

// The length of the data opcode at p with its argument, or 0 for an opcode the scan does not
// know (it then stops) or one that runs past the end.
size_t OpLength(const uint8_t* d, size_t size, size_t p) {
  const size_t left = size - p;
  auto fixed = [&](size_t n) -> size_t { return n <= left ? n : 0; };
  switch (d[p]) {
    case MARK:
    case STOP:
    case POP:
    case POP_MARK:
    case DUP:
    case NONE:
    case NEWTRUE:
    case NEWFALSE:
    case APPEND:
    case APPENDS:
    case EMPTY_DICT:
    case EMPTY_LIST:
    case EMPTY_TUPLE:
    case TUPLE:
    case TUPLE1:
    case TUPLE2:
    case TUPLE3:
    case SETITEM:
    case SETITEMS:
    case LIST:
    case DICT:
    case MEMOIZE:
      return 1;
    case BININT1:
    case BINGET:
    case BINPUT:
    case PROTO:
      return fixed(2);
    case BININT2:
      return fixed(3);
    case BININT:
    case LONG_BINGET:
    case LONG_BINPUT:
      return fixed(5);
    case BINFLOAT:
    case FRAME:
      return fixed(9);
    case SHORT_BINUNICODE:
    case SHORT_BINSTRING:
    case SHORT_BINBYTES:
    case LONG1:
      return left >= 2 ? fixed(2 + size_t{d[p + 1]}) : 0;
    case BINUNICODE:
    case BINSTRING:
    case BINBYTES:
    case LONG4: {
      if (left < 5) return 0;
      uint32_t n;
      std::memcpy(&n, d + p + 1, 4);
      return n <= left - 5 ? 5 + size_t{n} : 0;
    }
    case BINUNICODE8:
    case BINBYTES8: {
      if (left < 9) return 0;
      uint64_t n;
      std::memcpy(&n, d + p + 1, 8);
      return n <= left - 9 ? 9 + static_cast<size_t>(n) : 0;
    }
    default:
      return 0;
  }
}

int MarkDelta(uint8_t op) {
  switch (op) {
    case MARK:
      return 1;
    case APPENDS:
    case SETITEMS:
    case TUPLE:
    case LIST:
    case DICT:
    case POP_MARK:
      return -1;
    default:
      return 0;
  }
}

// The first EMPTY_DICT at an opcode boundary from p (itself an opcode boundary), or SIZE_MAX.
size_t Resync(const uint8_t* d, size_t size, size_t p) {
  for (int k = 0; k < 65536 && p < size; ++k) {
    if (d[p] == EMPTY_DICT) return p;
    const size_t n = OpLength(d, size, p);
    if (n == 0) return SIZE_MAX;
    p += n;
  }
  return SIZE_MAX;
}

// From the EMPTY_DICT at p that the fast path refused: the position after the SETITEMS that
// closes its MARK, or 0 when the walk meets an opcode it does not know or passes `limit`.
size_t SkipEntry(const uint8_t* d, size_t size, size_t p, size_t limit) {
  int depth = 0;
  bool marked = false;
  while (p < limit) {
    const size_t n = OpLength(d, size, p);
    if (n == 0) return 0;
    const uint8_t op = d[p];
    depth += MarkDelta(op);
    if (depth < 0) return 0;
    marked = marked || op == MARK;
    p += n;
    if (depth == 0 && marked && op == SETITEMS) return p;
  }
  return 0;
}

}  // namespace

Decoder::Decoder(io::InputSource& input, const SpecHead* head, size_t chunk_bytes)
    : head_(head), input_(input), data_(input.bytes()), fast_paths_(true) {
  // Memo GETs of strings read the head's StrIds: key codes and "N/A" are the head's. The
  // sequential decoder interns keys as they appear, so no order of our own would match it.
  key_codes_ = head->key_codes;
  na_ = head->na;
  snap_.events.reserve(EventsReservedFor(chunk_bytes));
  // Small steps: what is faulted in past the chunk's last entry is resident until the adoption.
  events_prefault_ = Prefaulter(uintptr_t{256} << 10);
  memo_.reserve(chunk_bytes / 16 + 16);
  head_seen_.assign(head->memo.size(), 0);
}

void Decoder::SpecStateDeleter::operator()(SpecState* s) const { delete s; }

Decoder::~Decoder() {
  if (spec_ != nullptr) {
    spec_->events_populate.Stop();
    spec_->memo_populate.Stop();
    if (spec_->helped != nullptr) spec_->helped->SetHelped(false);  // the workers stop feeding
    if (spec_->plan.load() < SpecState::kReady) {
      // Still searching, or waiting for the head: joined below, they take no chunk.
      spec_->plan.store(SpecState::kNone);
      spec_->plan.notify_all();
    }
    // Workers take no new chunk once every chunk is claimed; wait for those in flight.
    for (auto& c : spec_->chunks) {
      int expected = SpecChunk::kPending;
      c->state.compare_exchange_strong(expected, SpecChunk::kSequential);
    }
    for (std::thread& t : spec_->workers) t.join();
  }
  if (observer_ != nullptr) observer_->Release();
}

void Decoder::NoteParallelDecoding() const {
  // A timer of no duration whose name says what happened, in the --timings tree.
  ScopedTimer note(absl::StrCat("parallel decoding on ", threads_, " threads: ", stats_->chunks,
                                " chunks, ", stats_->chunks_speculated, " decoded ahead, ",
                                stats_->events_adopted, " of ", snap_.events.size(),
                                " trace entries adopted from them"));
}

void Decoder::Speculate(SpecChunk& c) {
  const auto* d = reinterpret_cast<const uint8_t*>(data_.data());
  const size_t size = data_.size();
  snap_.stacks = head_->stacks;
  snap_.streams = head_->streams;
  pos_ = c.begin;
  size_t seg_begin = pos_;
  auto close = [&](size_t at) {
    const uint32_t events = static_cast<uint32_t>(snap_.events.size());
    const uint32_t ops = static_cast<uint32_t>(c.ops.size());
    const SpecSegment* last = c.segments.empty() ? nullptr : &c.segments.back();
    if (at > seg_begin && (last == nullptr || last->events_end != events || last->ops_end != ops)) {
      c.segments.push_back(SpecSegment{seg_begin, at, events, static_cast<uint32_t>(memo_.size()),
                                       static_cast<uint32_t>(lists_.size()), ops});
    }
  };
  while (pos_ < c.end) {
    const uint8_t op = d[pos_];
    if (op == EMPTY_DICT) {
      const size_t at = pos_;
      const size_t lists_before = lists_.size();
      ++pos_;
      if (TryEventDict<true>()) {
        stack_.pop_back();
        const uint32_t event = static_cast<uint32_t>(snap_.events.size() - 1);
        for (size_t l = lists_before; l < lists_.size(); ++l) lists_[l].begin = event;
        continue;
      }
      pos_ = at;
      close(at);
      const size_t next = SkipEntry(d, size, at, c.end);
      if (next == 0) break;
      pos_ = seg_begin = next;
      continue;
    }
    if (op == MARK) {
      // The sequential decoder tries a batch of frame GETs after a MARK on a new list; a MARK
      // before a GET is left to it.
      if (pos_ + 1 < size && (d[pos_ + 1] == BINGET || d[pos_ + 1] == LONG_BINGET)) break;
      c.ops.push_back(SpecOp{static_cast<uint32_t>(snap_.events.size()), false, pos_});
      ++pos_;
      continue;
    }
    if (op == APPENDS) {
      c.ops.push_back(SpecOp{static_cast<uint32_t>(snap_.events.size()), true, pos_});
      ++pos_;
      continue;
    }
    if (op == FRAME && size - pos_ >= 9) {
      // A frame that runs past the end of the input ends the segment: the sequential decoder
      // reaches the FRAME itself and refuses it, as it would without the workers.
      uint64_t length;
      std::memcpy(&length, d + pos_ + 1, 8);
      if (length > size - pos_ - 9) break;
      pos_ += 9;
      continue;
    }
    break;
  }
  close(pos_);
  // The pages of the mapped file this worker read, given back in one call: each madvise of a
  // multi-threaded process flushes the other cores' TLBs, and one call per segment (one per
  // 64 KiB FRAME on PyTorch's files) cost more than the decoding saved (docs/BENCHMARKS.md). The
  // sequential decoder faults the few pages of the gaps back in when it decodes them, and drops
  // them again as it passes (ReleaseBefore).
  input_.ReleaseRange(c.begin, pos_);
  c.events = std::move(snap_.events);
  c.memo = std::move(memo_);
  c.lists = std::move(lists_);
  c.stacks = std::move(snap_.stacks);
  c.streams = std::move(snap_.streams);
  c.reads = std::move(head_reads_);
}

size_t Decoder::FindFrame(size_t from) const {
  const size_t size = data_.size();
  // A window read with Peek (pread), not through the mapping: a fault there maps 16 pages around
  // it, which stay resident until the decoders pass them (docs/BENCHMARKS.md).
  constexpr size_t kWindow = size_t{256} << 10;
  const size_t n = std::min(kWindow, size - std::min(size, from));
  std::vector<uint8_t> window(n);
  if (n > 0) input_.Peek(from, window.data(), n);
  // Whether a FRAME header (opcode and length) starts at `at`, its frame inside the input: from
  // the window when the header is in it (every FRAME byte of the data is tried), else read.
  auto header_at = [&](size_t at, uint64_t& len) {
    if (at + 9 > size) return false;
    uint8_t read[9];
    const uint8_t* header = read;
    if (at + 9 <= from + n) {
      header = window.data() + (at - from);
    } else {
      input_.Peek(at, read, sizeof(read));
    }
    std::memcpy(&len, header + 1, 8);
    return header[0] == FRAME && len > 0 && len <= size - at - 9;
  };
  for (size_t i = 0; i + 9 <= n; ++i) {
    if (window[i] != FRAME) continue;
    uint64_t len = 0;
    // The frame and the next two must chain (or reach the end of the input): a FRAME byte with
    // a plausible length inside the data does not, but for one chance in billions.
    size_t at = from + i;
    bool chained = true;
    for (int hop = 0; hop < 3 && at < size && chained; ++hop) {
      chained = header_at(at, len);
      at += 9 + static_cast<size_t>(len);
    }
    if (chained) return from + i;
  }
  return SIZE_MAX;
}

std::vector<size_t> Decoder::FindChunkStarts(size_t from, size_t chunk_bytes) const {
  const auto* d = reinterpret_cast<const uint8_t*>(data_.data());
  const size_t size = data_.size();
  // Each chunk starts at the first trace entry of the first frame at or after its cut. Frames are
  // found near each cut, not by following the frames' lengths from the first: that walk read a
  // header every 64 KiB of the file (2,500 preads for the 2.2 M-event benchmark, 3 ms). A start
  // that is not a real opcode boundary cannot change the model: a worker's decoding is adopted
  // only where the sequential decoder stands at the top of its opcode loop, so at a boundary.
  std::vector<size_t> starts;
  for (size_t cut = from; cut < size;) {
    const size_t frame = FindFrame(cut);
    if (frame == SIZE_MAX) {  // none near this cut (a frame of a huge string): the next cut
      cut += chunk_bytes;
      continue;
    }
    const size_t r = Resync(d, size, frame);
    if (r != SIZE_MAX && (starts.empty() || r > starts.back())) starts.push_back(r);
    cut = std::max(cut, r == SIZE_MAX ? frame + 1 : r) + chunk_bytes;
  }
  return starts;
}

void Decoder::MakePlan() {
  SpecState& s = *spec_;
  s.planned = true;
  const size_t size = data_.size();
  // The starts were searched for from the start of the head (StartWorkers): found by now unless
  // the head was quick.
  for (int p; (p = s.plan.load(std::memory_order_acquire)) == SpecState::kSearching;) {
    s.plan.wait(p, std::memory_order_acquire);
  }
  // The head ends at the first entry boundary past head_end: a chunk that starts before that is
  // decoded here, before the first chunk.
  std::vector<size_t> starts = std::move(s.starts);
  starts.erase(starts.begin(), std::lower_bound(starts.begin(), starts.end(), pos_));
  if (starts.size() < 2) {
    s.plan.store(SpecState::kNone, std::memory_order_release);
    s.plan.notify_all();
    spec_next_ = SIZE_MAX;
    return;
  }
  // What the workers read: the memo, the lists' stacks, the actions of the strings and the stack
  // table as they are now.
  s.head.memo = memo_;
  s.head.list_stacks.reserve(lists_.size());
  for (const ListObj& l : lists_) s.head.list_stacks.push_back(l.stack);
  s.head.actions.resize(snap_.strings.size());
  for (uint32_t id = 0; id < snap_.strings.size(); ++id) {
    s.head.actions[id] = static_cast<uint8_t>(ParseAction(snap_.strings.Get(StrId(id))));
  }
  CodeNewStrings();
  s.head.key_codes = key_codes_;
  s.head.na = na_;
  s.head.stacks = snap_.stacks;
  s.head.streams = snap_.streams;
  for (size_t k = 0; k < starts.size(); ++k) {
    auto c = std::make_unique<SpecChunk>();
    c->begin = starts[k];
    c->end = k + 1 < starts.size() ? starts[k + 1] : size;
    s.chunks.push_back(std::move(c));
  }
  s.back = s.chunks.size();
  stats_->chunks = s.chunks.size();
  // The model's arrays are reserved from the file size and never move on a real file: the
  // workers populate their pages ahead of this thread, which then finds them present (and takes
  // its own populating through the same cursor, so no page is populated twice).
  s.events_base = reinterpret_cast<uintptr_t>(snap_.events.data());
  s.events_cap = snap_.events.capacity();
  s.memo_base = reinterpret_cast<uintptr_t>(memo_.data());
  s.memo_cap = memo_.capacity();
  s.plan_pos = pos_;
  s.plan_events = snap_.events.size();
  s.plan_memo = memo_.size();
  s.events_populate.Reset(
      std::max(events_prefault_.populated(), s.events_base + s.plan_events * sizeof(TraceEvent)),
      s.events_base + s.events_cap * sizeof(TraceEvent));
  s.memo_populate.Reset(s.memo_base + s.plan_memo * sizeof(MemoWord),
                        s.memo_base + s.memo_cap * sizeof(MemoWord));
  // The workers populate at most 16 MiB of events past the sequential decoder's end: no more of
  // the model is resident before it is written than that (peak memory; docs/BENCHMARKS.md).
  events_prefault_.Share(&s.events_populate, uintptr_t{16} << 20);
  s.events_populate.SetHorizon(s.events_base + s.plan_events * sizeof(TraceEvent) +
                               (uintptr_t{16} << 20));
  if (observer_ != nullptr) {
    s.helped = observer_;
    observer_->SetHelped(true);
  }
  s.plan.store(SpecState::kReady, std::memory_order_release);
  s.plan.notify_all();
}

void Decoder::StartWorkers() {
  SpecState& s = *spec_;
  const size_t size = data_.size();
  s.chunk_bytes =
      parallel_chunk_bytes_ > 0
          ? parallel_chunk_bytes_
          : std::max<size_t>(size_t{1} << 20, (size - std::min(size, s.head_end)) / (threads_ * 8));
  for (size_t t = 0; t + 1 < threads_; ++t) {
    auto work = [this, &s, size, t] {
      if (t == 0) {
        s.starts = FindChunkStarts(s.head_end, s.chunk_bytes);
        int searching = SpecState::kSearching;
        s.plan.compare_exchange_strong(searching, SpecState::kFound, std::memory_order_acq_rel);
        s.plan.notify_all();
      }
      for (int p; (p = s.plan.load(std::memory_order_acquire)) < SpecState::kReady;) {
        s.plan.wait(p, std::memory_order_acquire);
      }
      if (s.plan.load(std::memory_order_acquire) != SpecState::kReady) return;
      // How far the model's arrays will reach, from the density of the chunks decoded so far
      // (the head may hold no trace entry at all: PyTorch writes the segments first).
      size_t bytes = 0;
      size_t events = 0;
      size_t memo = 0;
      uintptr_t events_end = 0;
      uintptr_t memo_end = 0;
      auto populate = [&](uintptr_t events_step, uintptr_t memo_step) {
        s.events_populate.Claim(0, events_step, std::min(events_end, s.events_populate.horizon()));
        s.memo_populate.Claim(0, memo_step, memo_end);
      };
      const size_t chunks = s.chunks.size();
      while (true) {
        // The observer's work first: it falls behind the sequential decoder otherwise.
        while (s.helped != nullptr && s.helped->Help(/*wait=*/false)) {
        }
        size_t k = s.back.load();
        bool claimed = false;
        while (k > 0 && !(claimed = s.back.compare_exchange_weak(k, k - 1))) {
        }
        SpecChunk* c = claimed ? s.chunks[k - 1].get() : nullptr;
        int expected = SpecChunk::kPending;
        // The sequential decoder has reached this chunk: it has passed every earlier one too.
        if (c == nullptr || !c->state.compare_exchange_strong(expected, SpecChunk::kRunning)) {
          // No chunk left: populate the rest while the sequential decoder catches up (and adopts
          // the chunks), keeping within its horizon; it stops us when it is done (~Decoder).
          while (s.memo_populate.Claim(0, uintptr_t{1} << 20, memo_end) > 0) {
          }
          if (s.helped != nullptr) {
            // Feed what the sequential decoder publishes as it adopts, populating ahead of it
            // between the feeds, until it is done (~Decoder: SetHelped(false)).
            do {
              while (s.events_populate.Claim(0, uintptr_t{1} << 20,
                                             std::min(events_end, s.events_populate.horizon())) >
                     0) {
              }
            } while (s.helped->Help(/*wait=*/true));
            return;
          }
          while (s.events_populate.claimed() < events_end) {
            const uintptr_t horizon = s.events_populate.horizon();
            while (s.events_populate.Claim(0, uintptr_t{1} << 20, std::min(events_end, horizon)) >
                   0) {
            }
            if (s.events_populate.claimed() >= events_end) break;
            if (!s.events_populate.WaitPast(horizon)) break;
          }
          return;
        }
        try {
          Decoder worker(input_, &s.head, c->end - c->begin);
          worker.Speculate(*c);
        } catch (const std::bad_alloc&) {
          // Out of memory (an address-space limit): the sequential decoder decodes this chunk
          // itself, and this worker stops (an exception would call std::terminate here).
          c->segments.clear();
          c->state.store(SpecChunk::kSequential, std::memory_order_release);
          c->state.notify_all();
          return;
        }
        if (!c->segments.empty()) {
          bytes += c->segments.back().end - c->begin;
          events += c->events.size();
          memo += c->memo.size();
        }
        const size_t rest = size - s.plan_pos;
        uintptr_t events_step = 0;
        uintptr_t memo_step = 0;
        if (bytes > 0) {
          const double scale = static_cast<double>(rest) / static_cast<double>(bytes);
          const size_t e = std::min<size_t>(
              s.events_cap,
              s.plan_events + static_cast<size_t>(static_cast<double>(events) * scale));
          const size_t m = std::min<size_t>(
              s.memo_cap, s.plan_memo + static_cast<size_t>(static_cast<double>(memo) * scale));
          events_end = s.events_base + e * sizeof(TraceEvent);
          memo_end = s.memo_base + m * sizeof(MemoWord);
          // Two chunks' worth each time: the sequential decoder fills about one chunk's worth
          // while this worker decodes one, and adopts the workers' chunks at the end.
          events_step = 2 * (e - s.plan_events) * sizeof(TraceEvent) / chunks;
          memo_step = 2 * (m - s.plan_memo) * sizeof(MemoWord) / chunks;
        }
        c->state.store(SpecChunk::kDone, std::memory_order_release);
        c->state.notify_all();
        populate(events_step, memo_step);
      }
    };
    try {
      s.workers.emplace_back(std::move(work));
    } catch (const std::system_error&) {
      // No thread to be had (an address-space or thread limit): the workers started so far share
      // the chunks; with none, nobody searches for the chunks' starts and this thread decodes
      // the whole file.
      if (s.workers.empty()) {
        s.plan.store(SpecState::kNone, std::memory_order_release);
        s.plan.notify_all();
      }
      break;
    }
  }
}

absl::Status Decoder::AtSpeculationPoint() {
  if (spec_ == nullptr) {
    spec_.reset(new SpecState);
    SpecState& s = *spec_;
    // The head: what the workers need to know (keys, actions, frames, stacks) is defined in the
    // first entries of a training loop. It ends at the first check that finds nothing memoized
    // since the check before but trace entries (checks 1/256 of the file from its start, then
    // each twice as far from it), and at 1/32 of the file at the latest. The workers cannot
    // decode an entry that names what was defined after the head: it is left to this thread.
    const size_t size = data_.size();
    s.head_start = pos_;
    s.head_end = pos_ + std::max<size_t>(size_t{64} << 10, size / 256);
    s.head_max = pos_ + std::max<size_t>(size_t{64} << 10, size / 32);
    spec_next_ = s.head_end;
    // The workers start now: the first finds the chunks' starts while this thread decodes the
    // head.
    StartWorkers();
    return absl::OkStatus();
  }
  SpecState& s = *spec_;
  if (!s.planned) {
    const int64_t defined =
        static_cast<int64_t>(memo_.size()) - static_cast<int64_t>(snap_.events.size());
    if (pos_ < s.head_max && defined != s.defined_at_check) {
      s.defined_at_check = defined;
      spec_next_ = std::min(s.head_max, pos_ + (pos_ - s.head_start));
      return absl::OkStatus();
    }
    MakePlan();
    if (spec_next_ == SIZE_MAX) return absl::OkStatus();
  }
  while (s.cur < s.chunks.size()) {
    SpecChunk& c = *s.chunks[s.cur];
    if (s.seg == 0) {
      if (pos_ < c.begin) {
        spec_next_ = c.begin;
        return absl::OkStatus();
      }
      // Not started by a worker: decoded here, sequentially.
      int state = SpecChunk::kPending;
      if (!parallel_wait_ && c.state.compare_exchange_strong(state, SpecChunk::kSequential)) {
        ++s.cur;
        continue;
      }
      while ((state = c.state.load(std::memory_order_acquire)) == SpecChunk::kRunning ||
             state == SpecChunk::kPending) {
        c.state.wait(state, std::memory_order_acquire);
      }
      if (state != SpecChunk::kDone) {
        ++s.cur;
        continue;
      }
    }
    while (s.seg < c.segments.size()) {
      const SpecSegment& g = c.segments[s.seg];
      if (pos_ < g.begin) {
        spec_next_ = g.begin;
        return absl::OkStatus();
      }
      if (pos_ == g.begin) {
        bool adopted = false;
        RETURN_IF_ERROR(Adopt(c, s.seg, adopted));
      }
      ++s.seg;
    }
    // Done with this chunk: its arrays are not needed any more.
    ++stats_->chunks_speculated;
    FreeAndDropPages(c.events);
    FreeAndDropPages(c.memo);
    c.lists = {};
    c.ops = {};
    ++s.cur;
    s.seg = 0;
  }
  spec_next_ = SIZE_MAX;
  return absl::OkStatus();
}

absl::Status Decoder::Adopt(SpecChunk& c, size_t seg_index, bool& adopted) {
  const SpecSegment& g = c.segments[seg_index];
  const SpecSegment prev = seg_index > 0 ? c.segments[seg_index - 1] : SpecSegment{};
  const size_t n_events = g.events_end - prev.events_end;
  const size_t n_ops = g.ops_end - prev.ops_end;
  const size_t n_lists = g.lists_end - prev.lists_end;
  // Adopt only what cannot differ from decoding it here: no stack or MARK depth the loop would
  // refuse, no vector growth the event observer would have to be told of, refs that pack, streams
  // that fit the model's table (the sequential decoder reports the one that does not).
  const size_t head_streams = spec_->head.streams.size();
  if (snap_.events.size() + n_events > snap_.events.capacity() ||
      snap_.streams.size() + (c.streams.size() - head_streams) > StreamTable::kMaxStreams ||
      stack_.size() + n_events + 1 > kMaxStackDepth || marks_.size() + n_ops > kMaxStackDepth ||
      snap_.events.size() + n_events >= kMemoRefLimit || lists_.size() + n_lists >= kMemoRefLimit) {
    return absl::OkStatus();
  }
  for (uint32_t i : c.reads) {
    const MemoWord w = spec_->head.memo[i];
    if (i >= memo_.size() || memo_[i] != w) return absl::OkStatus();
    if ((w & 15) == static_cast<MemoWord>(Tag::kList)) {
      const uint32_t ref = w >> 4;
      if (ref >= lists_.size() || lists_[ref].stack != spec_->head.list_stacks[ref]) {
        return absl::OkStatus();
      }
    }
  }
  adopted = true;
  const auto events_base = static_cast<uint32_t>(snap_.events.size());
  const auto lists_base = static_cast<uint32_t>(lists_.size());
  // The chunk's new stacks are interned in the order of their first use, as the sequential
  // decoder interns them.
  const uint32_t head_stacks = static_cast<uint32_t>(spec_->head.stacks.size());
  auto map_stack = [&](StackId id) {
    if (!id.valid() || id.v < head_stacks) return id;
    if (c.stack_map.empty()) c.stack_map.resize(c.stacks.size() - head_stacks);
    StackId& m = c.stack_map[id.v - head_stacks];
    if (!m.valid()) m = snap_.stacks.Intern(c.stacks.Get(id));
    return m;
  };
  // The same for streams: interned in the order of first use, which the check above keeps valid.
  auto map_stream = [&](StreamId id) {
    if (c.stream_map.empty()) c.stream_map.resize(c.streams.size() - head_streams);
    StreamId& m = c.stream_map[id.v - head_streams];
    if (!m.valid()) m = snap_.streams.Intern(c.streams.Get(id));
    return m;
  };
  snap_.events.insert(snap_.events.end(), c.events.begin() + prev.events_end,
                      c.events.begin() + g.events_end);
  for (uint32_t i = prev.memo_end; i < g.memo_end; ++i) {
    const MemoWord w = c.memo[i];
    const MemoWord tag = w & 15;
    const uint32_t ref = w >> 4;
    if (tag == static_cast<MemoWord>(Tag::kEventRef)) {
      memo_.push_back(PackMemo(Tag::kEventRef, events_base + (ref - prev.events_end)));
    } else if (tag == static_cast<MemoWord>(Tag::kList)) {
      memo_.push_back(PackMemo(Tag::kList, lists_base + (ref - prev.lists_end)));
    } else {
      memo_.push_back(w);
    }
  }
  uint32_t list = prev.lists_end;
  uint32_t j = prev.events_end;
  auto push_events = [&](uint32_t upto) {
    for (; j < upto; ++j) {
      const uint32_t record = events_base + (j - prev.events_end);
      TraceEvent& e = snap_.events[record];
      if (e.stack.valid() && e.stack.v >= head_stacks) [[unlikely]]
        e.stack = map_stack(e.stack);
      if (e.stream.v >= head_streams) [[unlikely]]
        e.stream = map_stream(e.stream);
      for (; list < g.lists_end && c.lists[list].begin == j; ++list) {
        lists_.push_back(ListObj{static_cast<uint32_t>(scratch_.size()), 0,
                                 map_stack(c.lists[list].stack), false});
      }
      stack_.push_back(Value{Tag::kEventRef, Rec::kEvent, record, 0});
    }
  };
  for (uint32_t o = prev.ops_end; o < g.ops_end; ++o) {
    const SpecOp& op = c.ops[o];
    push_events(op.events_before);
    if (op.appends) {
      RETURN_IF_ERROR(OpAppends(op.at));
    } else {
      marks_.push_back(stack_.size());
    }
  }
  push_events(g.events_end);
  events_prefault_.Touch(snap_.events);
  if (snap_.events.size() >= next_publish_) PublishEvents();
  ForgetKeys();
  ++stats_->segments_adopted;
  stats_->events_adopted += n_events;
  pos_ = g.end;
  return absl::OkStatus();
}

}  // namespace memsnap::parse::pickle
