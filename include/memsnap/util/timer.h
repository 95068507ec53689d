// Phase timers for --timings (docs/coding-guidelines.md §13): a pass opens a ScopedTimer; the
// command prints the collected tree at the end when asked.
#pragma once

#include <chrono>
#include <ctime>
#include <mutex>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace memsnap {

class Timings {
 public:
  /// The process-wide collector.
  static Timings& Global();
  /// Prints "  phase ........ 1.234 s" lines, indented by nesting depth, in start order.
  void Print(std::ostream& out) const;

 private:
  struct Entry {
    std::string name;
    int depth;
    double seconds;
    size_t order;
  };
  mutable std::mutex mu_;
  std::vector<Entry> entries_;
  size_t started_ = 0;
  friend class ScopedTimer;
};

/// Measures the enclosing scope and records it under `name` in Timings::Global().
class ScopedTimer {
 public:
  explicit ScopedTimer(std::string name);
  ~ScopedTimer();
  ScopedTimer(const ScopedTimer&) = delete;
  ScopedTimer& operator=(const ScopedTimer&) = delete;

 private:
  std::string name_;
  int depth_;
  size_t order_;
  std::chrono::steady_clock::time_point start_;
};

/// Wall and CPU clocks of a command's two phases, read then analysis: construct it before
/// reading, call ReadDone() once the snapshot is loaded, Print() when the analysis is done.
class ReadAnalysisClock {
 public:
  ReadAnalysisClock();
  /// Ends the read phase and starts the analysis phase.
  void ReadDone();
  /// Prints "timings: read W ms (cpu C ms), analysis W ms (cpu C ms)[; the read NOTE]\n"; the
  /// analysis phase ends now. The CPU times are the process's, all threads.
  void Print(std::ostream& out, std::string_view read_note = {}) const;

 private:
  std::chrono::steady_clock::time_point wall0_, wall1_;
  std::clock_t cpu0_, cpu1_;
};

}  // namespace memsnap
