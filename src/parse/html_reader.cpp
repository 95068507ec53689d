// The _memory_viz HTML wrapper (docs/reader.md, "Containers"): a page that passes the viewer a JSON
// array `[{"name": "snapshot.pickle", "base64": "<payload>"}, ...]`. Every `"base64": "..."`
// string is one payload: a pickle followed by 1-3 NUL bytes of padding, which the pickle decoder
// ignores (it stops at STOP). Each payload is decoded strictly (RFC 4648 alphabet, `=` padding
// only at the end); JSON's optional `\/` escape is accepted.
#include <array>

#include "absl/strings/str_cat.h"
#include "memsnap/parse/reader.h"
#include "memsnap/util/strings.h"

namespace memsnap::parse {

namespace {

constexpr std::array<int8_t, 256> MakeTable() {
  std::array<int8_t, 256> t{};
  for (auto& x : t) x = -1;
  for (int i = 0; i < 26; ++i) {
    t['A' + i] = static_cast<int8_t>(i);
    t['a' + i] = static_cast<int8_t>(26 + i);
  }
  for (int i = 0; i < 10; ++i) t['0' + i] = static_cast<int8_t>(52 + i);
  t['+'] = 62;
  t['/'] = 63;
  return t;
}
constexpr std::array<int8_t, 256> kBase64 = MakeTable();

size_t SkipSpace(std::string_view s, size_t i) {
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')) ++i;
  return i;
}

/// Decodes one payload that starts at html[begin] (just after the opening quote). On success
/// `end` is the offset of the closing quote.
absl::StatusOr<std::string> DecodeBase64Payload(std::string_view html, size_t begin, size_t& end,
                                                std::string_view name) {
  auto error = [&](size_t at, std::string_view what) {
    return absl::InvalidArgumentError(
        absl::StrCat(Sv(name), ": offset ", at, ": base64 payload: ", Sv(what)));
  };
  std::string out;
  size_t close = html.find('"', begin);
  if (close == std::string_view::npos) return error(begin, "unterminated string");
  // Spare capacity lets the JSON reader parse a payload in place (InputSource::padding()).
  out.reserve((close - begin) / 4 * 3 + 128);
  uint32_t acc = 0;
  int bits = 0;
  int pad = 0;
  for (size_t i = begin; i < close; ++i) {
    unsigned char c = static_cast<unsigned char>(html[i]);
    if (c == '\\' && i + 1 < close && html[i + 1] == '/') {
      c = '/';
      ++i;
    }
    if (c == '=') {
      ++pad;
      continue;
    }
    int8_t v = kBase64[c];
    if (v < 0) {
      return error(i, c == '\\'
                          ? std::string("unexpected escape")
                          : absl::StrCat("invalid character 0x", absl::Hex(c, absl::kZeroPad2)));
    }
    if (pad > 0) return error(i, "data after '=' padding");
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  size_t symbols = 0;  // total symbols including padding must be a multiple of 4
  for (size_t i = begin; i < close; ++i) symbols += html[i] != '\\';
  if (symbols % 4 != 0 || pad > 2 || bits >= 6) {
    return error(close, "length is not a multiple of 4 (truncated payload?)");
  }
  end = close;
  return out;
}

}  // namespace

absl::StatusOr<std::vector<std::string>> ExtractHtmlPayloads(std::string_view html,
                                                             std::string_view name) {
  std::vector<std::string> payloads;
  constexpr std::string_view kKey = "\"base64\"";
  size_t pos = 0;
  while ((pos = html.find(kKey, pos)) != std::string_view::npos) {
    size_t i = SkipSpace(html, pos + kKey.size());
    if (i >= html.size() || html[i] != ':') {
      pos += kKey.size();  // the word in some other context (a script's text): not a payload
      continue;
    }
    i = SkipSpace(html, i + 1);
    if (i >= html.size() || html[i] != '"') {
      return absl::InvalidArgumentError(
          absl::StrCat(Sv(name), ": offset ", i, ": \"base64\" is not followed by a string"));
    }
    size_t end = 0;
    auto payload = DecodeBase64Payload(html, i + 1, end, name);
    if (!payload.ok()) return payload.status();
    if (payload->empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(Sv(name), ": offset ", i, ": empty base64 payload"));
    }
    payloads.push_back(std::move(*payload));
    pos = end + 1;
  }
  if (payloads.empty()) {
    return NotASnapshotError(absl::StrCat(
        Sv(name), ": HTML page without a \"base64\" snapshot payload (not a _memory_viz page?)"));
  }
  return payloads;
}

}  // namespace memsnap::parse
