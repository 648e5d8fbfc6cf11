// Dwords written as hex text — `ugpu decode`'s input: whitespace- or comma-separated, with or
// without 0x. Header-only so the fuzz target (tests/fuzz/fuzz_decode.cpp) parses exactly what the tool does.
#pragma once
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "common/error.h"

namespace ugpu::tools {

// Throws Error naming `what` and the first word that is not a 32-bit hex number, or for no words.
inline std::vector<uint32_t> parse_hex_words(const std::string& text, const std::string& what) {
  std::vector<uint32_t> out;
  std::string t = text;
  for (char& c : t)
    if (c == ',') c = ' ';
  std::istringstream in(t);
  std::string w;
  while (in >> w) {
    size_t used = 0;
    unsigned long long v;
    try {
      v = std::stoull(w, &used, 16);
    } catch (const std::exception&) { used = 0, v = 0; }
    if (used != w.size() || v > 0xffffffffull) {
      if (w.size() > 40) w = w.substr(0, 40) + "...";
      throw Error(what + ": '" + w + "' is not a 32-bit hex dword (word " + std::to_string(out.size()) + ")");
    }
    out.push_back(static_cast<uint32_t>(v));
  }
  if (out.empty()) throw Error(what + ": no dwords");
  return out;
}

}  // namespace ugpu::tools
