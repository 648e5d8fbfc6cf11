// A string as a JSON string literal (RFC 8259): quotes, backslashes and control characters escaped.
// For the JSON ugpu writes: Chrome traces (hcq/profiler.cpp), safetensors headers (llm/checkpoint.cpp).
#pragma once
#include <cstdio>
#include <string>
#include <string_view>

namespace ugpu {

inline std::string json_quote(std::string_view s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

}  // namespace ugpu
