// Numbers in messages — addresses, registers, codes — as 0x-prefixed lowercase hexadecimal.
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>

namespace ugpu {

inline std::string hex(uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(v));
  return b;
}

}  // namespace ugpu
