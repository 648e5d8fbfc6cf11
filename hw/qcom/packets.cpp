#include "hw/qcom/packets.h"

#include "common/error.h"
#include "common/hex.h"
#include "hw/qcom/a6xx_regs.h"
#include "hw/qcom/pm4_opcodes.h"

namespace ugpu::hw::qcom {

uint32_t type4_header(uint32_t reg, uint32_t count) {
  if (reg > kType4MaxReg || count > kType4MaxCount)
    throw Error("type-4 packet of " + std::to_string(count) + " registers from " + hex(reg) + ": a header holds at most " +
                std::to_string(kType4MaxCount) + " registers from an offset below " + hex(kType4MaxReg + 1));
  return kType4 | count | odd_parity(count) << 7 | reg << 8 | odd_parity(reg) << 27;
}

uint32_t type7_header(uint8_t opcode, uint32_t count) {
  if (opcode > 0x7f || count > kType7MaxCount)
    throw Error("type-7 packet " + hex(opcode) + " of " + std::to_string(count) + " dwords: a header holds a 7-bit opcode and at most " +
                std::to_string(kType7MaxCount) + " dwords");
  return kType7 | count | odd_parity(count) << 15 | uint32_t(opcode) << 16 | odd_parity(opcode) << 23;
}

std::optional<Header> read_header(uint32_t d, std::string* why) {
  auto no = [&](std::string w) -> std::optional<Header> {
    if (why) *why = std::move(w);
    return std::nullopt;
  };
  Header h;
  if ((d >> 28) == 0x4) {
    h.count = d & 0x7f, h.reg = (d >> 8) & kType4MaxReg;
    if (((d >> 7) & 1) != odd_parity(h.count) || ((d >> 27) & 1) != odd_parity(h.reg) || ((d >> 26) & 1))
      return no("a type-4 header with bad parity or its reserved bit set");
    return h;
  }
  if ((d >> 28) == 0x7) {
    h.type7 = true, h.count = d & kType7MaxCount, h.opcode = uint8_t((d >> 16) & 0x7f);
    if (((d >> 15) & 1) != odd_parity(h.count) || ((d >> 23) & 1) != odd_parity(h.opcode) || ((d >> 24) & 0xf) || ((d >> 14) & 1))
      return no("a type-7 header with bad parity or reserved bits set");
    return h;
  }
  return no("not a type-4 or type-7 header");
}

std::string register_name(uint32_t offset) {
  for (const Register& r : a6xx::kRegisters) {
    if (r.offset == offset) return r.name;
    if (r.dwords == 2 && r.offset + 1 == offset) return std::string(r.name) + "_HI";
  }
  return "";
}

std::string opcode_name(uint8_t opcode) {
  for (const pm4::OpcodeName& o : pm4::kOpcodes)
    if (o.opcode == opcode) return o.name;
  return "";
}

std::string describe_stream(std::span<const uint32_t> words) {
  std::string out;
  for (size_t i = 0; i < words.size();) {
    std::string why;
    auto h = read_header(words[i], &why);
    if (!h) throw Error("dword " + std::to_string(i) + " (" + hex(words[i]) + "): " + why);
    if (i + 1 + h->count > words.size())
      throw Error("dword " + std::to_string(i) + ": a packet of " + std::to_string(h->count) + " dwords runs past the end of the " +
                  std::to_string(words.size()) + "-dword stream");
    if (h->type7) {
      std::string name = opcode_name(h->opcode);
      if (name.empty()) throw Error("dword " + std::to_string(i) + ": CP opcode " + hex(h->opcode) + " is not in the A6XX tables");
      out += name + " " + std::to_string(h->count) + ":";
      for (uint32_t k = 0; k < h->count; ++k) out += " " + hex(words[i + 1 + k]);
      out += "\n";
    } else {
      for (uint32_t k = 0; k < h->count; ++k) {
        std::string name = register_name(h->reg + k);
        out += (name.empty() ? "register " + hex(h->reg + k) : name) + " = " + hex(words[i + 1 + k]) + "\n";
      }
    }
    i += 1 + h->count;
  }
  return out;
}

}  // namespace ugpu::hw::qcom
