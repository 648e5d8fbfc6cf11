// The register log of an AM bring-up (`ugpu bringup --trace FILE`, read back by `ugpu decode --regs`):
// every register read and write in order, with the IP bases needed to name them. Text, one access per
// line, so a log from a real GPU can be diffed against one from the emulator:
//   # ugpu register trace
//   # bases GC 0x1260 0xa000 0x1c000 0x2402c00 0x0 0x0
//   # bases NBIO ...                                   (one line per IP block, every segment)
//   0.0123 W 0x00016063 0x00080000                      (ms since the start, R or W, dword address, value)
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "hw/amd/registers.h"

namespace ugpu::hw::amd {

struct RegAccess {
  double ms = 0;  // since the trace started
  bool write = false;
  uint32_t dword = 0, value = 0;
};
struct RegTrace {
  IpBases bases;
  std::vector<RegAccess> accesses;
};

std::string format_reg_trace(const RegTrace& t);
RegTrace parse_reg_trace(std::string_view text);    // throws Error naming the line
std::string describe_reg_trace(const RegTrace& t);  // one line per access with the register's name

}  // namespace ugpu::hw::amd
