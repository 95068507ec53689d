// Hand-assembled pickle opcode streams for decoder tests and fuzz seeds: each method appends one
// opcode with its argument, little-endian as pickletools documents it.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace memsnap::testing {

class PickleBuilder {
 public:
  explicit PickleBuilder(int protocol = 2) {
    Op(0x80);
    b_ += static_cast<char>(protocol);
  }
  PickleBuilder& Op(uint8_t op) {
    b_ += static_cast<char>(op);
    return *this;
  }
  PickleBuilder& Raw(std::string_view bytes) {
    b_.append(bytes);
    return *this;
  }
  PickleBuilder& U8(uint8_t v) { return Op(v); }
  PickleBuilder& U16(uint16_t v) { return Le(v); }
  PickleBuilder& U32(uint32_t v) { return Le(v); }
  PickleBuilder& U64(uint64_t v) { return Le(v); }
  /// SHORT_BINUNICODE
  PickleBuilder& Str(std::string_view s) {
    Op(0x8c).U8(static_cast<uint8_t>(s.size()));
    return Raw(s);
  }
  /// BINUNICODE ('X')
  PickleBuilder& Str4(std::string_view s) {
    Op('X').U32(static_cast<uint32_t>(s.size()));
    return Raw(s);
  }
  /// BINUNICODE8
  PickleBuilder& Str8(std::string_view s) {
    Op(0x8d).U64(s.size());
    return Raw(s);
  }
  PickleBuilder& Int1(uint8_t v) { return Op('K').U8(v); }
  PickleBuilder& Int2(uint16_t v) { return Op('M').U16(v); }
  PickleBuilder& Int4(int32_t v) { return Op('J').Le(v); }
  /// LONG1 with the given little-endian two's-complement bytes.
  PickleBuilder& Long1(std::string_view bytes) {
    Op(0x8a).U8(static_cast<uint8_t>(bytes.size()));
    return Raw(bytes);
  }
  PickleBuilder& Long4(std::string_view bytes) {
    Op(0x8b).U32(static_cast<uint32_t>(bytes.size()));
    return Raw(bytes);
  }
  /// LONG1 of the minimal width for a non-negative value below 2^63.
  PickleBuilder& Long(uint64_t v) {
    std::string bytes;
    do {
      bytes += static_cast<char>(v & 0xff);
      v >>= 8;
    } while (v != 0);
    if (static_cast<unsigned char>(bytes.back()) & 0x80) bytes += '\0';
    return Long1(bytes);
  }
  PickleBuilder& Float(double d) {
    uint64_t bits;
    std::memcpy(&bits, &d, sizeof d);
    Op('G');
    for (int k = 7; k >= 0; --k) b_ += static_cast<char>((bits >> (8 * k)) & 0xff);
    return *this;
  }
  PickleBuilder& Mark() { return Op('('); }
  /// A frame dict built with MARK ... DICT.
  PickleBuilder& Frame(std::string_view name, std::string_view file, uint8_t line) {
    return Mark().Str("name").Str(name).Str("filename").Str(file).Str("line").Int1(line).Op('d');
  }
  PickleBuilder& Stop() { return Op('.'); }
  const std::string& bytes() const { return b_; }

 private:
  template <typename T>
  PickleBuilder& Le(T v) {
    for (size_t k = 0; k < sizeof(T); ++k) {
      b_ += static_cast<char>((static_cast<uint64_t>(v) >> (8 * k)) & 0xff);
    }
    return *this;
  }
  std::string b_;
};

}  // namespace memsnap::testing
