// Lookups over the schema table (schema.h).
#include "parse/schema.h"

namespace memsnap::parse {

namespace {

// Keys by length, for KeyOfName: a JSON reader looks up every key of every object, and a length
// bucket holds at most a few names, compared with memcmp.
struct ByLength {
  static constexpr size_t kMaxLength = 40;
  std::array<std::array<Key, 8>, kMaxLength + 1> keys{};
  std::array<uint8_t, kMaxLength + 1> count{};
};

constexpr ByLength BuildByLength() {
  ByLength t;
  for (int k = 1; k < kNumKeys; ++k) {
    const size_t n = kKeyNames[k].size();
    t.keys[n][t.count[n]++] = static_cast<Key>(k);
  }
  return t;
}

constexpr ByLength kByLength = BuildByLength();

}  // namespace

Key KeyOfName(std::string_view name) {
  if (name.size() > ByLength::kMaxLength) return Key::kOther;
  const auto& bucket = kByLength.keys[name.size()];
  for (uint8_t i = 0; i < kByLength.count[name.size()]; ++i) {
    if (KeyName(bucket[i]) == name) return bucket[i];
  }
  return Key::kOther;
}

const char* RecName(Rec rec) {
  switch (rec) {
    case Rec::kEvent:
      return "trace entry";
    case Rec::kSegment:
      return "segment";
    case Rec::kBlock:
      return "block";
    case Rec::kFrame:
      return "frame";
    case Rec::kAnnotation:
      return "annotation";
    case Rec::kHistory:
      return "history entry";
    case Rec::kTop:
      return "snapshot dict";
    case Rec::kSettings:
      return "allocator_settings dict";
    case Rec::kGeneric:
      return "dict";
    case Rec::kUnset:
      return "dict without items";
  }
  return "dict";
}

}  // namespace memsnap::parse
