#include "memsnap/parse/event_observer.h"

#include <new>
#include <system_error>

namespace memsnap::parse {

BackgroundEventFeed::BackgroundEventFeed(FeedFn feed, bool threaded) : feed_(std::move(feed)) {
  if (!threaded) return;
  try {
    worker_ = std::thread([this] { Work(); });
  } catch (const std::system_error&) {
    // No thread to be had (an address-space or thread limit): the events are fed inline, as on
    // one core.
  }
}

BackgroundEventFeed::~BackgroundEventFeed() {
  if (!worker_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_one();
  worker_.join();
}

void BackgroundEventFeed::Publish(const TraceEvent* events, size_t count,
                                  std::span<const int64_t> streams) {
  std::unique_lock<std::mutex> lock(mu_);
  if (invalid_ || count <= published_) return;
  base_ = events;
  published_ = count;
  // The table only grows: what was copied before is a prefix of it.
  if (streams.size() > streams_.size()) streams_.assign(streams.begin(), streams.end());
  if (!worker_.joinable()) {
    FeedPending(lock);
    return;
  }
  const bool helped = helped_;
  lock.unlock();
  if (helped) {
    help_.notify_one();
  } else {
    wake_.notify_one();
  }
}

void BackgroundEventFeed::Release() {
  std::unique_lock<std::mutex> lock(mu_);
  // What is left is fed on this thread (which waits anyway) unless another is feeding.
  while (busy_ || (!invalid_ && fed_ < published_)) {
    if (busy_) {
      idle_.wait(lock);
    } else {
      FeedPending(lock);
    }
  }
  base_ = nullptr;
}

bool BackgroundEventFeed::out_of_memory() const {
  std::lock_guard<std::mutex> lock(mu_);
  return out_of_memory_;
}

void BackgroundEventFeed::SetHelped(bool helped) {
  if (!worker_.joinable()) return;  // inline: Publish feeds
  {
    std::lock_guard<std::mutex> lock(mu_);
    helped_ = helped;
  }
  help_.notify_all();
  wake_.notify_one();
}

bool BackgroundEventFeed::Help(bool wait) {
  std::unique_lock<std::mutex> lock(mu_);
  while (helped_ && !stop_) {
    if (!busy_ && !invalid_ && fed_ < published_) {
      FeedPending(lock);
      return true;
    }
    if (!wait) return false;
    help_.wait(lock);
  }
  return false;
}

void BackgroundEventFeed::Invalidate() {
  std::unique_lock<std::mutex> lock(mu_);
  invalid_ = true;  // the worker feeds no further chunk
  idle_.wait(lock, [&] { return !busy_; });
  base_ = nullptr;
  fed_ = 0;
}

size_t BackgroundEventFeed::fed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return fed_;
}

void BackgroundEventFeed::FeedPending(std::unique_lock<std::mutex>& lock) {
  const TraceEvent* base = base_;
  const size_t from = fed_, to = published_;
  // Copied under the lock: Publish may extend streams_ while this thread feeds.
  if (feed_streams_.size() != streams_.size()) feed_streams_ = streams_;
  busy_ = true;
  lock.unlock();
  try {
    feed_(std::span<const TraceEvent>(base + from, to - from), from, feed_streams_);
  } catch (const std::bad_alloc&) {
    // The pass fed ran out of memory (under `ulimit -v`), maybe on a thread of its own where the
    // exception would call std::terminate: nothing more is fed, and out_of_memory() says so.
    lock.lock();
    busy_ = false;
    invalid_ = true;
    out_of_memory_ = true;
    idle_.notify_all();
    return;
  }
  lock.lock();
  busy_ = false;
  if (!invalid_) fed_ = to;
  idle_.notify_all();
  // More may have been published meanwhile, for the worker while it is not helped (it waits for
  // no one to be feeding).
  if (!helped_) wake_.notify_one();
}

void BackgroundEventFeed::Work() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    wake_.wait(lock,
               [&] { return stop_ || (!helped_ && !busy_ && !invalid_ && fed_ < published_); });
    if (stop_) return;
    FeedPending(lock);
  }
}

}  // namespace memsnap::parse
