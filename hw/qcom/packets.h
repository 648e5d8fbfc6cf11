// Adreno CP packets (A5XX and later): the type-4 header (write `count` consecutive registers from
// `reg`) and the type-7 header (`opcode` with `count` payload dwords), each field guarded by an odd-
// parity bit the CP checks; and a decoder that names every packet of a stream from the generated
// tables (pm4_opcodes.h, a6xx_regs.h), for tests and `ugpu decode`. Type 4: count in bits 6:0, its
// parity at 7, the register in 25:8, its parity at 27, bits 31:28 = 4. Type 7: count in 13:0, its
// parity at 15, the opcode in 22:16, its parity at 23, bits 31:28 = 7. Other bits are 0. A parity bit
// makes the number of set bits in its field and itself odd.
#pragma once
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace ugpu::hw::qcom {

inline constexpr uint32_t kType4 = 0x4u << 28, kType7 = 0x7u << 28;
inline constexpr uint32_t kType4MaxCount = 0x7f, kType4MaxReg = 0x3ffff, kType7MaxCount = 0x3fff;

// 1 when `v` has an even number of set bits: with it the total is odd.
constexpr uint32_t odd_parity(uint32_t v) { return (__builtin_popcount(v) + 1) & 1; }

// Headers; throws Error for a count or register the header cannot hold.
uint32_t type4_header(uint32_t reg, uint32_t count);
uint32_t type7_header(uint8_t opcode, uint32_t count);

// A header read back: which packet, or why the dword is not a valid header (bad parity, another type).
struct Header {
  bool type7 = false;
  uint32_t reg = 0;    // type 4
  uint8_t opcode = 0;  // type 7
  uint32_t count = 0;  // payload dwords
};
std::optional<Header> read_header(uint32_t dword, std::string* why = nullptr);

// The name of a register offset or an opcode from the tables ("" when they do not have it).
std::string register_name(uint32_t offset);
std::string opcode_name(uint8_t opcode);

// One line per packet: "CP_EXEC_CS 4: 0x0 0x1 0x1 0x1" or "HLSQ_CS_NDRANGE_0 = 0x...". A header that is
// not valid, a packet running past the stream, or an opcode the tables do not know is an Error naming
// the dword index and the reason.
std::string describe_stream(std::span<const uint32_t> words);

}  // namespace ugpu::hw::qcom
