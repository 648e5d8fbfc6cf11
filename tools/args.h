// Command-line values: an integer is parsed whole and in range (decimal, or hexadecimal after 0x),
// or it is an Error naming the option — never a silent 0 or a truncation.
#pragma once
#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/error.h"

namespace ugpu::tools {

inline int64_t parse_integer(const std::string& text, const std::string& what, int64_t min, int64_t max) {
  std::string_view t = text;
  const bool negative = !t.empty() && t[0] == '-';
  if (negative) t.remove_prefix(1);
  const int base = t.size() > 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X') ? 16 : 10;
  if (base == 16) t.remove_prefix(2);
  uint64_t u = 0;
  auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), u, base);
  const uint64_t limit = negative ? uint64_t{1} << 63 : uint64_t{INT64_MAX};
  const bool whole = !t.empty() && ec == std::errc() && end == t.data() + t.size() && u <= limit;
  const int64_t v = whole ? (negative ? static_cast<int64_t>(0 - u) : static_cast<int64_t>(u)) : 0;
  if (!whole || v < min || v > max)
    throw Error(what + " takes an integer from " + std::to_string(min) + " to " + std::to_string(max) + ", not '" + text + "'");
  return v;
}

}  // namespace ugpu::tools
