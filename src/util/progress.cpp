#include "memsnap/util/progress.h"

#include <unistd.h>

#include <algorithm>
#include <iostream>
#include <system_error>

#include "absl/strings/str_format.h"
#include "memsnap/util/format.h"

namespace memsnap {

namespace {
std::atomic<bool> g_progress_enabled{true};

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string Amount(uint64_t n, bool bytes) {
  return bytes ? FormatBytes(static_cast<int64_t>(n)) : FormatCount(static_cast<int64_t>(n));
}
}  // namespace

ProgressOptions ProgressOptions::Default() {
  ProgressOptions o;
  o.enabled = g_progress_enabled.load(std::memory_order_relaxed);
  return o;
}

void SetProgressEnabled(bool enabled) { g_progress_enabled.store(enabled); }

std::string FormatProgressLine(std::string_view label, uint64_t done, uint64_t total,
                               double elapsed_s, const ProgressOptions& options) {
  std::string line(label);
  if (total > 0) {
    done = std::min(done, total);
    double frac = static_cast<double>(done) / static_cast<double>(total);
    int width = std::max(options.bar_width, 1);
    int filled = static_cast<int>(frac * width);
    absl::StrAppendFormat(&line, "  [%s%s] %3d%%  %s / %s", std::string(filled, '#'),
                          std::string(width - filled, '.'), static_cast<int>(frac * 100),
                          Amount(done, options.bytes), Amount(total, options.bytes));
  } else if (done > 0) {
    absl::StrAppendFormat(&line, "  %s", Amount(done, options.bytes));
  }
  absl::StrAppendFormat(&line, "  %.1f s", elapsed_s);
  return line;
}

ProgressBar::ProgressBar(std::string label, uint64_t total, const ProgressOptions& options)
    : label_(std::move(label)), total_(total), options_(options) {
  if (options_.out == nullptr) options_.out = &std::cerr;
  active_ = options_.enabled && (options_.fd < 0 || ::isatty(options_.fd) == 1);
  start_ = std::chrono::steady_clock::now();
  next_check_ns_.store(NowNs() + static_cast<int64_t>(options_.delay_s * 1e9));
}

ProgressBar::~ProgressBar() { Finish(); }

void ProgressBar::Update(uint64_t done) {
  done_.store(done, std::memory_order_relaxed);
  if (!active_) return;
  int64_t now = NowNs();
  int64_t due = next_check_ns_.load(std::memory_order_relaxed);
  if (now < due) return;
  // One thread wins the redraw; the others skip it.
  int64_t next = now + static_cast<int64_t>(options_.interval_s * 1e9);
  if (!next_check_ns_.compare_exchange_strong(due, next)) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (finished_) return;
  Draw(done, std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count());
}

void ProgressBar::Draw(uint64_t done, double elapsed_s) {
  std::string line = FormatProgressLine(label_, done, total_, elapsed_s, options_);
  size_t width = line.size();
  // Pad with spaces so a shorter line fully covers the previous one.
  if (line.size() < last_width_) line.append(last_width_ - line.size(), ' ');
  last_width_ = width;
  *options_.out << '\r' << line << std::flush;
  drawn_ = true;
}

void ProgressBar::SetLabel(std::string label) {
  std::lock_guard<std::mutex> lock(mu_);
  label_ = std::move(label);
}

void ProgressBar::StartTicker() {
  if (!active_ || ticker_.joinable()) return;
  try {
    ticker_ = std::thread([this] {
      std::unique_lock<std::mutex> lock(mu_);
      auto delay = std::chrono::duration<double>(options_.delay_s);
      auto interval = std::chrono::duration<double>(std::max(options_.interval_s, 0.05));
      if (stop_cv_.wait_for(lock, delay, [this] { return stop_; })) return;
      while (!stop_) {
        Draw(done_.load(std::memory_order_relaxed),
             std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count());
        stop_cv_.wait_for(lock, interval, [this] { return stop_; });
      }
    });
  } catch (const std::system_error&) {
    // No thread to be had (an address-space or thread limit): the work goes on without a bar.
  }
}

void ProgressBar::Finish() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  stop_cv_.notify_all();
  if (ticker_.joinable()) ticker_.join();
  std::lock_guard<std::mutex> lock(mu_);
  if (finished_) return;
  finished_ = true;
  if (drawn_) *options_.out << '\r' << std::string(last_width_, ' ') << '\r' << std::flush;
}

}  // namespace memsnap
