// PYTORCH_CUDA_ALLOC_CONF parsing (docs/allocator-model.md §3) and the recorded settings.
#include <doctest/doctest.h>

#include "memsnap/sim/config.h"

namespace memsnap::sim {
namespace {

std::string Error(std::string_view conf) {
  absl::StatusOr<AllocatorConfig> c = ParseAllocatorConf(conf);
  REQUIRE_FALSE(c.ok());
  return std::string(c.status().message());
}

AllocatorConfig Parse(std::string_view conf) {
  absl::StatusOr<AllocatorConfig> c = ParseAllocatorConf(conf);
  REQUIRE_MESSAGE(c.ok(), c.status().message());
  return *c;
}

}  // namespace

TEST_SUITE("sim") {
  TEST_CASE("the empty conf string gives PyTorch's defaults") {
    AllocatorConfig c = Parse("");
    CHECK(c == AllocatorConfig{});
    CHECK(c.max_split_size == kUnlimitedSize);
    CHECK(c.max_non_split_rounding == 20 * kMiB);
    CHECK_FALSE(c.expandable_segments);
    CHECK_FALSE(c.memory_fraction.has_value());
    CHECK(FormatAllocatorConf(c) == "defaults");
  }

  TEST_CASE("conf keys set their fields, whitespace ignored") {
    AllocatorConfig c = Parse(
        " expandable_segments:True, max_split_size_mb:512,garbage_collection_threshold:0.6,"
        "per_process_memory_fraction:0.9,max_non_split_rounding_mb:64");
    CHECK(c.expandable_segments);
    CHECK(c.max_split_size == 512 * kMiB);
    CHECK(c.garbage_collection_threshold == doctest::Approx(0.6));
    REQUIRE(c.memory_fraction.has_value());
    CHECK(*c.memory_fraction == doctest::Approx(0.9));
    CHECK(c.max_non_split_rounding == 64 * kMiB);
  }

  TEST_CASE("roundup_power2_divisions list follows the code, not the docs") {
    AllocatorConfig c = Parse("roundup_power2_divisions:[256:1,512:2,1024:4,>:8]");
    const auto& d = c.roundup_power2_divisions;
    for (int i = 0; i <= 8; ++i) CHECK(d[i] == 1);   // every size below 512 MiB
    CHECK(d[9] == 2);                                // [512 MiB, 1 GiB)
    CHECK(d[10] == 4);                               // [1 GiB, 2 GiB)
    for (int i = 11; i < 16; ++i) CHECK(d[i] == 8);  // >= 2 GiB
  }

  TEST_CASE("roundup_power2_divisions buckets skipped between keys stay 0") {
    AllocatorConfig c = Parse("roundup_power2_divisions:[64:2,1024:4]");
    const auto& d = c.roundup_power2_divisions;
    for (int i = 0; i <= 6; ++i) CHECK(d[i] == 2);
    for (int i = 7; i <= 9; ++i) CHECK(d[i] == 0);
    CHECK(d[10] == 4);
    for (int i = 11; i < 16; ++i) CHECK(d[i] == 0);
  }

  TEST_CASE("a single roundup_power2_divisions value applies to every bucket") {
    AllocatorConfig c = Parse("roundup_power2_divisions:4");
    for (int64_t v : c.roundup_power2_divisions) CHECK(v == 4);
  }

  TEST_CASE("accepted keys that do not affect placement are ignored") {
    CHECK(Parse("release_lock_on_cudamalloc:True,pinned_use_cuda_host_register:True,"
                "pinned_num_register_threads:8") == AllocatorConfig{});
  }

  TEST_CASE("large_segment_size_mb moves the default oversize tolerance and the minima") {
    AllocatorConfig c = Parse("large_segment_size_mb:32");
    CHECK(c.large_segment_size == 32 * kMiB);
    CHECK(c.max_non_split_rounding == 32 * kMiB);
    CHECK(Error("large_segment_size_mb:32,max_split_size_mb:20") ==
          "max_split_size_mb: expected an integer >= 32, got \"20\"");
  }

  TEST_CASE("conf errors name the key and the value") {
    CHECK(Error("foo:1") == "unknown allocator setting \"foo\"");
    CHECK(Error("max_split_size_mb:abc") ==
          "max_split_size_mb: expected an integer >= 20, got \"abc\"");
    CHECK(Error("max_split_size_mb:10") ==
          "max_split_size_mb: expected an integer >= 20, got \"10\"");
    CHECK(Error("expandable_segments:yes") ==
          "expandable_segments: expected True or False, got \"yes\"");
    CHECK(Error("garbage_collection_threshold:1.5") ==
          "garbage_collection_threshold: expected a number in (0, 1), got \"1.5\"");
    CHECK(Error("per_process_memory_fraction:2") ==
          "per_process_memory_fraction: expected a number in [0, 1], got \"2\"");
    CHECK(Error("roundup_power2_divisions:3") ==
          "roundup_power2_divisions: expected 0 or a power of two, got \"3\"");
    CHECK(Error("roundup_power2_divisions:[100:2]") ==
          "roundup_power2_divisions: expected a power-of-two size in MB, got \"100\"");
    CHECK(Error("max_split_size_mb") == "max_split_size_mb: expected \":\", got \"end\"");
    CHECK(Error("backend:magic") == "backend: expected native or cudaMallocAsync, got \"magic\"");
  }

  TEST_CASE("sizes in MB beyond 1 TiB saturate instead of overflowing") {
    // A recorded PYTORCH_CUDA_ALLOC_CONF is input: 2^60 MB would overflow the byte count.
    AllocatorConfig c = Parse(
        "max_split_size_mb:1152921504606846976,large_segment_size_mb:"
        "9223372036854775807");
    CHECK(c.max_split_size == kMaxBytes);
    CHECK(c.large_segment_size == kMaxBytes);
    CHECK(c.max_non_split_rounding == kMaxBytes);
  }

  TEST_CASE("FormatAllocatorConf round-trips through the parser") {
    for (const char* conf :
         {"expandable_segments:True,max_split_size_mb:512",
          "roundup_power2_divisions:[256:1,512:2,1024:4,>:8],garbage_collection_threshold:0.5",
          "roundup_power2_divisions:[64:2,1024:4]", "per_process_memory_fraction:0.5"}) {
      AllocatorConfig c = Parse(conf);
      CHECK(Parse(FormatAllocatorConf(c)) == c);
    }
    CHECK(FormatAllocatorConf(Parse("max_split_size_mb:512,expandable_segments:True")) ==
          "expandable_segments:True,max_split_size_mb:512");
  }

  TEST_CASE("recorded allocator_settings become a configuration") {
    AllocatorSettings s;
    s.present = true;
    s.max_split_size = -1;
    s.expandable_segments = true;
    s.roundup_power2_divisions[3] = 4;
    AllocatorConfig c = ConfigFromSettings(s);
    CHECK(c.max_split_size == kUnlimitedSize);
    CHECK(c.expandable_segments);
    CHECK(c.roundup_power2_divisions[3] == 4);
    s.max_split_size = 256 * kMiB;
    CHECK(ConfigFromSettings(s).max_split_size == 256 * kMiB);
    CHECK(ConfigFromSettings(AllocatorSettings{}) == AllocatorConfig{});
  }

  TEST_CASE("the recorded conf string supplies what the structured settings lack") {
    AllocatorSettings s;
    s.present = true;
    s.conf = "backend:cudaMallocAsync,per_process_memory_fraction:0.5";
    AllocatorConfig c = ConfigFromSettings(s);
    CHECK(c.backend == "cudaMallocAsync");
    REQUIRE(c.memory_fraction.has_value());
    CHECK(*c.memory_fraction == doctest::Approx(0.5));
    s.conf = "some_future_key:1";  // rejected by this parser: ignored
    CHECK(ConfigFromSettings(s) == AllocatorConfig{});
  }

  TEST_CASE("later conf keys apply on top of a base configuration") {
    AllocatorConfig base = Parse("max_split_size_mb:256");
    absl::StatusOr<AllocatorConfig> c = ApplyAllocatorConf(base, "expandable_segments:True");
    REQUIRE(c.ok());
    CHECK(c->max_split_size == 256 * kMiB);
    CHECK(c->expandable_segments);
  }
}

}  // namespace memsnap::sim
