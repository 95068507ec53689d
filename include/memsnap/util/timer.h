// Phase timers for --timings (style.md, convention 8): a pass opens a ScopedTimer; the command
// prints the collected tree at the end when asked.
#pragma once

#include <chrono>
#include <mutex>
#include <ostream>
#include <string>
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

}  // namespace memsnap
