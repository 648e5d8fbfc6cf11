// Adreno registers and their bit fields, as the generated tables (a6xx_regs.h) describe them: a
// register is a dword offset in the GPU's register space (what a type-4 packet writes) and one or two
// dwords wide; a field is a bit range of it.
#pragma once
#include <cstdint>

namespace ugpu::hw::qcom {

struct Field {
  const char* name;
  uint8_t low, high;  // bits, inclusive
  constexpr uint32_t mask() const { return uint32_t((uint64_t{2} << high) - (uint64_t{1} << low)); }
  constexpr uint32_t get(uint32_t reg) const { return (reg & mask()) >> low; }
  // `reg` with the field set to `value`; bits of `value` that do not fit are dropped.
  constexpr uint32_t set(uint32_t reg, uint32_t value) const { return (reg & ~mask()) | ((value << low) & mask()); }
};

struct Register {
  const char* name;
  uint32_t offset;  // dwords
  uint8_t dwords;   // 1, or 2 for a 64-bit register (low dword first)
};

}  // namespace ugpu::hw::qcom
