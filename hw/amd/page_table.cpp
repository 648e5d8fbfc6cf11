#include "hw/amd/page_table.h"

#include <cstdio>

namespace ugpu::hw::amd {

std::string describe_pte(const PteFormat& f, uint64_t e) {
  Pte p = decode_pte(f, e);
  if (!p.valid) return e ? "invalid (" + std::to_string(e) + ")" : "invalid";
  std::string s;
  auto flag = [&](bool on, const char* n) {
    if (on) s += s.empty() ? n : std::string(" ") + n;
  };
  flag(p.readable, "R"), flag(p.writeable, "W"), flag(p.executable, "X"), flag(p.system, "system"), flag(p.snooped, "snooped");
  flag(p.leaf_pde, "leaf");
  char buf[96];
  std::snprintf(buf, sizeof buf, "%sfrag=%u mtype=%s addr=0x%llx", s.empty() ? "" : " ", p.fragment,
                p.mtype == f.mtype_uc   ? "UC"
                : p.mtype == f.mtype_nc ? "NC"
                                        : std::to_string(p.mtype).c_str(),
                (unsigned long long)p.address);
  return s + buf;
}

}  // namespace ugpu::hw::amd
