// PYTORCH_CUDA_ALLOC_CONF parsing, following c10/cuda/CUDAAllocatorConfig.cpp's grammar: the
// string is split at , : [ ] (each also a token), whitespace dropped, `key:value` pairs.
#include "memsnap/sim/config.h"

#include <algorithm>
#include <bit>
#include <cctype>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "memsnap/util/status_macros.h"
#include "memsnap/util/strings.h"

namespace memsnap::sim {

namespace {

std::vector<std::string> Lex(std::string_view conf) {
  std::vector<std::string> tokens;
  std::string cur;
  auto flush = [&] {
    if (!cur.empty()) tokens.push_back(std::move(cur));
    cur.clear();
  };
  for (char c : conf) {
    if (std::isspace(static_cast<unsigned char>(c))) continue;
    if (c == ',' || c == ':' || c == '[' || c == ']') {
      flush();
      tokens.emplace_back(1, c);
    } else {
      cur.push_back(c);
    }
  }
  flush();
  return tokens;
}

absl::Status Bad(std::string_view key, std::string_view expected, std::string_view got) {
  return absl::InvalidArgumentError(
      absl::StrCat(Sv(key), ": expected ", Sv(expected), ", got \"", Sv(got), "\""));
}

bool IsPow2(int64_t v) { return v > 0 && std::has_single_bit(static_cast<uint64_t>(v)); }

class Parser {
 public:
  explicit Parser(std::vector<std::string> tokens) : t_(std::move(tokens)) {}
  bool done() const { return i_ >= t_.size(); }
  const std::string& peek() const {
    static const std::string kEnd;
    return done() ? kEnd : t_[i_];
  }
  std::string next() { return done() ? std::string() : t_[i_++]; }
  absl::Status Expect(std::string_view what, std::string_view key) {
    if (peek() != what)
      return Bad(key, absl::StrCat("\"", Sv(what), "\""), done() ? "end" : peek());
    ++i_;
    return absl::OkStatus();
  }

 private:
  std::vector<std::string> t_;
  size_t i_ = 0;
};

absl::StatusOr<int64_t> ParseMb(std::string_view key, const std::string& v, int64_t min_mb,
                                bool strict) {
  int64_t mb = 0;
  std::string expected = absl::StrCat("an integer ", strict ? "> " : ">= ", min_mb);
  if (!absl::SimpleAtoi(v, &mb) || (strict ? mb <= min_mb : mb < min_mb)) {
    return Bad(key, expected, v);
  }
  // Saturate rather than overflow (the string may come from a file): no block is above 1 TiB
  // (kMaxBytes), so a larger setting means the same as 1 TiB.
  return std::min(mb, kMaxBytes / kMiB) * kMiB;
}

absl::Status ParseDivisions(Parser& p, AllocatorConfig& c) {
  constexpr std::string_view key = "roundup_power2_divisions";
  auto parse_div = [&](const std::string& v) -> absl::StatusOr<int64_t> {
    int64_t d = 0;
    if (!absl::SimpleAtoi(v, &d) || (d != 0 && !IsPow2(d))) {
      return Bad(key, "0 or a power of two", v);
    }
    return d;
  };
  c.roundup_power2_divisions.fill(0);
  if (p.peek() != "[") {
    absl::StatusOr<int64_t> d = parse_div(p.next());
    if (!d.ok()) return d.status();
    c.roundup_power2_divisions.fill(*d);
    return absl::OkStatus();
  }
  p.next();
  bool first = true;
  int last_index = -1;
  while (true) {
    std::string k = p.next();
    RETURN_IF_ERROR(p.Expect(":", key));
    absl::StatusOr<int64_t> d = parse_div(p.next());
    if (!d.ok()) return d.status();
    if (k == ">") {
      for (int i = last_index + 1; i < 16; ++i) c.roundup_power2_divisions[i] = *d;
    } else {
      int64_t mb = 0;
      if (!absl::SimpleAtoi(k, &mb) || !IsPow2(mb)) return Bad(key, "a power-of-two size in MB", k);
      int index = std::min(15, static_cast<int>(std::bit_width(static_cast<uint64_t>(mb))) - 1);
      if (first) {
        for (int i = 0; i < index; ++i) c.roundup_power2_divisions[i] = *d;
      }
      c.roundup_power2_divisions[index] = *d;
      last_index = std::max(last_index, index);
      first = false;
    }
    std::string sep = p.next();
    if (sep == "]") break;
    if (sep != ",") return Bad(key, "\",\" or \"]\"", sep.empty() ? "end" : sep);
  }
  return absl::OkStatus();
}

absl::StatusOr<bool> ParseBool(std::string_view key, const std::string& v) {
  if (v == "True" || v == "true") return true;
  if (v == "False" || v == "false") return false;
  return Bad(key, "True or False", v);
}

absl::StatusOr<double> ParseFraction(std::string_view key, const std::string& v, bool open) {
  double d = 0;
  bool ok = absl::SimpleAtod(v, &d) && (open ? d > 0 && d < 1 : d >= 0 && d <= 1);
  if (!ok) return Bad(key, open ? "a number in (0, 1)" : "a number in [0, 1]", v);
  return d;
}

constexpr std::string_view kIgnoredKeys[] = {
    "release_lock_on_cudamalloc",        "pinned_use_cuda_host_register",
    "pinned_num_register_threads",       "pinned_use_background_threads",
    "pinned_use_host_register",          "pinned_reserve_segment_size_mb",
    "graph_capture_record_stream_reuse", "throw_on_cudamalloc_oom",
};

}  // namespace

absl::StatusOr<AllocatorConfig> ApplyAllocatorConf(AllocatorConfig c, std::string_view conf) {
  Parser p(Lex(conf));
  bool rounding_set = false;
  while (!p.done()) {
    std::string key = p.next();
    if (key == ",") continue;
    RETURN_IF_ERROR(p.Expect(":", key));
    if (key == "roundup_power2_divisions") {
      RETURN_IF_ERROR(ParseDivisions(p, c));
      continue;
    }
    std::string v = p.next();
    if (key == "max_split_size_mb") {
      ASSIGN_OR_RETURN(c.max_split_size, ParseMb(key, v, c.large_segment_size / kMiB, false));
    } else if (key == "max_non_split_rounding_mb") {
      ASSIGN_OR_RETURN(c.max_non_split_rounding,
                       ParseMb(key, v, c.large_segment_size / kMiB, false));
      rounding_set = true;
    } else if (key == "large_segment_size_mb") {
      ASSIGN_OR_RETURN(c.large_segment_size, ParseMb(key, v, 10, true));
      if (!rounding_set) c.max_non_split_rounding = c.large_segment_size;
    } else if (key == "garbage_collection_threshold") {
      ASSIGN_OR_RETURN(c.garbage_collection_threshold, ParseFraction(key, v, true));
    } else if (key == "per_process_memory_fraction") {
      ASSIGN_OR_RETURN(double f, ParseFraction(key, v, false));
      c.memory_fraction = f;
    } else if (key == "expandable_segments") {
      ASSIGN_OR_RETURN(c.expandable_segments, ParseBool(key, v));
    } else if (key == "backend") {
      if (v != "native" && v != "cudaMallocAsync") return Bad(key, "native or cudaMallocAsync", v);
      c.backend = v;
    } else if (std::find(std::begin(kIgnoredKeys), std::end(kIgnoredKeys), key) !=
               std::end(kIgnoredKeys)) {
      // Accepted; does not change placement.
    } else {
      return absl::InvalidArgumentError(absl::StrCat("unknown allocator setting \"", key, "\""));
    }
  }
  return c;
}

absl::StatusOr<AllocatorConfig> ParseAllocatorConf(std::string_view conf) {
  return ApplyAllocatorConf(AllocatorConfig{}, conf);
}

AllocatorConfig ConfigFromSettings(const AllocatorSettings& s) {
  AllocatorConfig c;
  if (!s.present) return c;
  // The recorded conf string holds what the structured fields do not (backend, fraction, newer
  // keys); a string this parser rejects (a newer PyTorch) is ignored.
  if (absl::StatusOr<AllocatorConfig> parsed = ParseAllocatorConf(s.conf); parsed.ok()) {
    c = *parsed;
  }
  if (s.max_split_size > 0) c.max_split_size = s.max_split_size;
  c.garbage_collection_threshold = s.garbage_collection_threshold;
  c.expandable_segments = s.expandable_segments;
  c.roundup_power2_divisions = s.roundup_power2_divisions;
  return c;
}

std::string FormatAllocatorConf(const AllocatorConfig& c) {
  const AllocatorConfig d;
  std::vector<std::string> parts;
  if (c.backend != d.backend) parts.push_back(absl::StrCat("backend:", c.backend));
  if (c.expandable_segments) parts.push_back("expandable_segments:True");
  if (c.large_segment_size != d.large_segment_size) {
    parts.push_back(absl::StrCat("large_segment_size_mb:", c.large_segment_size / kMiB));
  }
  if (c.max_split_size != d.max_split_size) {
    parts.push_back(absl::StrCat("max_split_size_mb:", c.max_split_size / kMiB));
  }
  if (c.max_non_split_rounding != c.large_segment_size) {
    parts.push_back(absl::StrCat("max_non_split_rounding_mb:", c.max_non_split_rounding / kMiB));
  }
  if (c.roundup_power2_divisions != d.roundup_power2_divisions) {
    const auto& r = c.roundup_power2_divisions;
    if (std::all_of(r.begin(), r.end(), [&](int64_t v) { return v == r[0]; })) {
      parts.push_back(absl::StrCat("roundup_power2_divisions:", r[0]));
    } else {
      // The parser fills the buckets below the first key and after the last `>`, but leaves
      // buckets skipped between keys at 0, so the middle buckets are all written out.
      int first_end = 0;
      while (first_end + 1 < 16 && r[first_end + 1] == r[0]) ++first_end;
      int last_start = 15;
      while (last_start - 1 > first_end && r[last_start - 1] == r[15]) --last_start;
      std::vector<std::string> items;
      for (int i = first_end; i <= last_start; ++i) {
        items.push_back(absl::StrCat(int64_t{1} << i, ":", r[i]));
      }
      if (last_start < 15) items.push_back(absl::StrCat(">:", r[15]));
      parts.push_back(absl::StrCat("roundup_power2_divisions:[", absl::StrJoin(items, ","), "]"));
    }
  }
  if (c.garbage_collection_threshold > 0) {
    parts.push_back(absl::StrCat("garbage_collection_threshold:", c.garbage_collection_threshold));
  }
  if (c.memory_fraction) {
    parts.push_back(absl::StrCat("per_process_memory_fraction:", *c.memory_fraction));
  }
  return parts.empty() ? "defaults" : absl::StrJoin(parts, ",");
}

}  // namespace memsnap::sim
