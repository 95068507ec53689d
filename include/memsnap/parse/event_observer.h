// Trace events handed to an analysis while the reader is still decoding the file, so that a pass
// over them (the timeline's) runs on a second core instead of after the read.
//
// clang-format off
//   decoder ──Publish(events, count, streams)──> EventObserver ──(worker)──> feed(events[a, b), a, streams)
//           ──Release()───────────────>   waits until nothing reads the events
// clang-format on
//
// The decoder publishes prefixes of its event vector: events[0, count) are decoded and will not
// change again. With them go the values of the streams they name (Snapshot::streams, which the
// decoder keeps appending to, so an observer copies them: a trace has a handful). Before it moves,
// frees or rewrites any of them it calls Release(), which returns once no one reads them;
// Invalidate() says that what was published is void (a rewritten event, a reordered vector). The
// consumer still has to check, once the read is done, that what it was fed is the snapshot's final
// trace: the reader publishes the events it decodes, in decoding order, before it knows which
// device's list holds them.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "memsnap/model/snapshot.h"

namespace memsnap::parse {

/// How many trace entries the pickle decoder reserves room for in an input of `bytes` bytes (an
/// entry takes at least about 24 bytes in any real file); an observer may size its own buffers so.
constexpr size_t EventsReservedFor(size_t bytes) { return bytes / 24 + 16; }

class EventObserver {
 public:
  virtual ~EventObserver() = default;
  /// events[0, count) are decoded and final. `events` stays valid until the next Release().
  /// Counts never decrease between calls. `streams` (StreamTable::values) holds the stream of
  /// every published event; it is valid during the call only, and only ever grows.
  virtual void Publish(const TraceEvent* events, size_t count,
                       std::span<const int64_t> streams) = 0;
  /// The storage last published is about to move or be freed: returns once nothing reads it.
  virtual void Release() = 0;
  /// What was published is void and nothing more will be: returns once nothing reads it.
  virtual void Invalidate() = 0;
  /// From SetHelped(true) on, the reader's own spare threads (the parallel pickle decoder's
  /// workers) run the observer's work through Help, until SetHelped(false): a thread of the
  /// observer's own would take turns with the reader's thread on its core.
  virtual void SetHelped(bool helped) {}
  /// Runs the work published so far on the calling thread unless another thread is running it:
  /// true when it ran some. `wait`: when there is none, waits for more, or for
  /// SetHelped(false) (then false). False at once when not helped.
  virtual bool Help(bool wait) { return false; }
};

/// Feeds published events, in order and in chunks, to `feed(chunk, index of its first event,
/// stream values)` on a worker thread (inline, in Publish, on a single-core machine). Everything
/// `feed` writes may be read by the caller after Release(), Invalidate() or destruction.
class BackgroundEventFeed final : public EventObserver {
 public:
  using FeedFn = std::function<void(std::span<const TraceEvent> events, size_t first,
                                    std::span<const int64_t> streams)>;
  /// `threaded = false` feeds inline (tests; single-core machines).
  explicit BackgroundEventFeed(FeedFn feed,
                               bool threaded = std::thread::hardware_concurrency() > 1);
  ~BackgroundEventFeed() override;
  BackgroundEventFeed(const BackgroundEventFeed&) = delete;
  BackgroundEventFeed& operator=(const BackgroundEventFeed&) = delete;

  void Publish(const TraceEvent* events, size_t count, std::span<const int64_t> streams) override;
  void Release() override;
  void Invalidate() override;
  void SetHelped(bool helped) override;
  bool Help(bool wait) override;

  /// Events fed so far (call after Release). 0 after Invalidate.
  size_t fed() const;
  /// The pass fed threw std::bad_alloc (under an address-space limit): it was fed no more, and
  /// what it holds is incomplete (call after Release).
  bool out_of_memory() const;

 private:
  void Work();
  // Feeds [fed_, published_) from base_; called with the lock held, releases it while feeding.
  void FeedPending(std::unique_lock<std::mutex>& lock);

  FeedFn feed_;
  mutable std::mutex mu_;
  std::condition_variable wake_;  // to the worker: more published, stop, or not helped any more
  std::condition_variable idle_;  // to Release: the worker caught up
  std::condition_variable help_;  // to the helpers (Help): more published, or not helped any more
  const TraceEvent* base_ = nullptr;
  size_t published_ = 0;
  std::vector<int64_t> streams_;       // the published stream values (under mu_)
  std::vector<int64_t> feed_streams_;  // the feeding thread's copy of them
  size_t fed_ = 0;
  bool busy_ = false;    // a thread is inside feed_ (outside the lock)
  bool helped_ = false;  // the reader's threads feed (Help); the worker sleeps
  bool invalid_ = false;
  bool out_of_memory_ = false;
  bool stop_ = false;
  std::thread worker_;  // last: started after the state above is initialized
};

}  // namespace memsnap::parse
