// What a register is, for every AMD GPU generation: which IP block it belongs to, which of that
// block's base addresses (IP discovery gives them per chip) it is relative to, and its dword offset.
// The generated per-generation headers (gfx11_regs.h, ...) are tables of these.
#pragma once
#include <cstdint>

namespace ugpu::hw::amd {

enum class Ip : uint8_t { GC, NBIO };
struct Register {
  const char* name;
  Ip ip;
  uint8_t segment;
  uint32_t offset;
};

// A chip's IP base addresses (dwords), from IP discovery; the defaults are Navi31's (gfx1100).
struct IpBases {
  uint32_t gc[2] = {0x1260, 0xA000};
  uint32_t nbio[3] = {0x0, 0x14, 0xD20};
};

// The register's dword address on a chip with these bases; 0 for a segment the bases do not have.
constexpr uint32_t address_of(const Register& r, const IpBases& b) {
  if (r.ip == Ip::GC) return r.segment < 2 ? b.gc[r.segment] + r.offset : 0;
  return r.segment < 3 ? b.nbio[r.segment] + r.offset : 0;
}

}  // namespace ugpu::hw::amd
