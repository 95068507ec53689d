// A progress bar on stderr for reads and analyses that take more than about a second.
//
//   reading big.pickle  [###########.........................]  31%  1.2 GiB / 3.9 GiB  2.4 s
//
// It draws only when its stream is a terminal (isatty), never before `delay_s` has passed (so fast
// runs print nothing), at most every `interval_s`, and clears its line when finished. --quiet
// turns it off: commands pass `enabled = !ctx.quiet`; code that has no Context (the readers) uses
// ProgressOptions::Default(), which follows SetProgressEnabled() (the CLI calls it after parsing
// its flags). Update() is cheap and thread-safe: call it as often as convenient.
//
//   ProgressBar bar("reading snap.pickle", bytes.size(), ProgressOptions::Default());
//   for (...) { ...; bar.Update(offset); }
//   bar.Finish();  // or let the destructor do it
//
// For phases without a natural amount (an analysis pass), StartTicker() redraws the label and the
// elapsed time from a background thread, and SetLabel() names the current phase.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <iosfwd>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

namespace memsnap {

struct ProgressOptions {
  bool enabled = true;          // false under --quiet
  std::ostream* out = nullptr;  // nullptr: std::cerr
  int fd = 2;                   // checked with isatty(); -1: treat `out` as a terminal (tests)
  double delay_s = 1.0;         // draw nothing before this much time has passed
  double interval_s = 0.1;      // at most one redraw per interval
  bool bytes = true;            // amounts are bytes ("1.2 GiB") rather than counts ("1,234")
  int bar_width = 30;

  /// enabled = the process-wide setting (SetProgressEnabled), stderr, defaults otherwise.
  static ProgressOptions Default();
};

/// Sets the process-wide default used by ProgressOptions::Default() (true at start).
void SetProgressEnabled(bool enabled);

/// "label  [#####.....]  50%  1.0 KiB / 2.0 KiB  1.2 s". total == 0: no bar, only the amount
/// (nothing when it is 0 too).
std::string FormatProgressLine(std::string_view label, uint64_t done, uint64_t total,
                               double elapsed_s, const ProgressOptions& options);

class ProgressBar {
 public:
  /// `total` is the amount at completion (bytes or items); 0 when unknown.
  ProgressBar(std::string label, uint64_t total, const ProgressOptions& options);
  ~ProgressBar();
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  /// Records that `done` of `total` is finished; redraws when due. Thread-safe.
  void Update(uint64_t done);
  /// Adds `delta` to the amount done. Thread-safe.
  void Add(uint64_t delta) { Update(done_.fetch_add(delta, std::memory_order_relaxed) + delta); }
  /// Names the current phase ("report: building the page"). Thread-safe.
  void SetLabel(std::string label);
  /// Redraws every interval from a background thread (stopped by Finish) so that long phases
  /// without Update() calls still show their elapsed time. No-op when inactive.
  void StartTicker();
  /// Clears the line if anything was drawn, stops the ticker. Idempotent.
  void Finish();
  /// False when this bar will never draw (disabled, or the stream is not a terminal).
  bool active() const { return active_; }
  /// Whether a line has been drawn so far (tests).
  bool drawn() const { return drawn_; }

 private:
  void Draw(uint64_t done, double elapsed_s);

  std::string label_;
  uint64_t total_;
  ProgressOptions options_;
  bool active_ = false;
  bool drawn_ = false;
  bool finished_ = false;
  std::atomic<uint64_t> done_{0};
  std::atomic<int64_t> next_check_ns_{0};  // steady-clock time before which Update() returns
  std::chrono::steady_clock::time_point start_;
  std::mutex mu_;
  size_t last_width_ = 0;
  std::thread ticker_;
  std::condition_variable stop_cv_;
  bool stop_ = false;
};

}  // namespace memsnap
