#include "memsnap/util/timer.h"

#include <algorithm>

#include "absl/strings/str_format.h"

namespace memsnap {

Timings& Timings::Global() {
  static Timings timings;
  return timings;
}

void Timings::Print(std::ostream& out) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Entry> sorted = entries_;
  std::sort(sorted.begin(), sorted.end(),
            [](const Entry& a, const Entry& b) { return a.order < b.order; });
  out << "timings:\n";
  for (const Entry& e : sorted) {
    out << absl::StrFormat("  %s%-*s %9.3f s\n", std::string(2 * e.depth, ' '), 30 - 2 * e.depth,
                           e.name, e.seconds);
  }
}

namespace {
thread_local int tls_depth = 0;  // nesting is per thread: parallel loads each start at depth 0
}  // namespace

ScopedTimer::ScopedTimer(std::string name) : name_(std::move(name)) {
  Timings& t = Timings::Global();
  std::lock_guard<std::mutex> lock(t.mu_);
  depth_ = tls_depth++;
  order_ = t.started_++;
  start_ = std::chrono::steady_clock::now();
}

ScopedTimer::~ScopedTimer() {
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  Timings& t = Timings::Global();
  std::lock_guard<std::mutex> lock(t.mu_);
  --tls_depth;
  t.entries_.push_back(Timings::Entry{name_, depth_, s, order_});
}

ReadAnalysisClock::ReadAnalysisClock()
    : wall0_(std::chrono::steady_clock::now()), wall1_(wall0_), cpu0_(std::clock()), cpu1_(cpu0_) {}

void ReadAnalysisClock::ReadDone() {
  wall1_ = std::chrono::steady_clock::now();
  cpu1_ = std::clock();
}

void ReadAnalysisClock::Print(std::ostream& out, std::string_view read_note) const {
  auto ms = [](auto d) { return std::chrono::duration<double, std::milli>(d).count(); };
  auto cpu_ms = [](std::clock_t c) { return 1000.0 * static_cast<double>(c) / CLOCKS_PER_SEC; };
  out << "timings: read " << ms(wall1_ - wall0_) << " ms (cpu " << cpu_ms(cpu1_ - cpu0_)
      << " ms), analysis " << ms(std::chrono::steady_clock::now() - wall1_) << " ms (cpu "
      << cpu_ms(std::clock() - cpu1_) << " ms)";
  if (!read_note.empty()) out << "; the read " << read_note;
  out << "\n";
}

}  // namespace memsnap
