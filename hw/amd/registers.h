// What a register is, for every AMD GPU generation: which IP block it belongs to, which of that
// block's base addresses (IP discovery gives them per chip) it is relative to, and its dword offset.
// The generated per-generation headers (gfx11_regs.h, ...) are tables of these.
#pragma once
#include <array>
#include <cstdint>

namespace ugpu::hw::amd {

enum class Ip : uint8_t { GC, NBIO, MP0, MP1, OSSSYS, MMHUB, HDP };
inline constexpr int kIpCount = 7, kMaxSegments = 6;
constexpr const char* ip_name(Ip ip) {
  constexpr const char* names[kIpCount] = {"GC", "NBIO", "MP0", "MP1", "OSSSYS", "MMHUB", "HDP"};
  return names[static_cast<int>(ip)];
}
struct Register {
  const char* name;
  Ip ip;
  uint8_t segment;
  uint32_t offset;
};

// A chip's IP base addresses (dwords) per segment, from IP discovery; the defaults are Navi31's
// (gfx1100), which keeps the Navi2x layout (Linux's sienna_cichlid_ip_offset.h).
struct IpBases {
  std::array<std::array<uint32_t, kMaxSegments>, kIpCount> of = {{
      {0x1260, 0xA000, 0x1C000, 0x2402C00},                // GC (and SDMA, whose registers live in GC's space on gfx11)
      {0x0, 0x14, 0xD20, 0x10400, 0x241B000},              // NBIO (NBIF)
      {0x16000, 0xDC0000, 0xE00000, 0xE40000, 0x243FC00},  // MP0 (PSP)
      {0x16000, 0xDC0000, 0xE00000, 0xE40000, 0x243FC00},  // MP1 (SMU)
      {0x10A0, 0x240A000},                                 // OSSSYS (IH)
      {0x1A000, 0x2408800},                                // MMHUB
      {0xF20, 0x240A400},                                  // HDP
  }};
  std::array<uint32_t, kMaxSegments>& operator[](Ip ip) { return of[static_cast<int>(ip)]; }
  const std::array<uint32_t, kMaxSegments>& operator[](Ip ip) const { return of[static_cast<int>(ip)]; }
};

// The register's dword address on a chip with these bases.
constexpr uint32_t address_of(const Register& r, const IpBases& b) {
  return r.segment < kMaxSegments ? b.of[static_cast<int>(r.ip)][r.segment] + r.offset : 0;
}

}  // namespace ugpu::hw::amd
