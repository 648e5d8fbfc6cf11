#include "hw/amd/packets.h"

#include <cstdio>

#include "common/hex.h"
#include "hw/amd/am11_regs.h"
#include "hw/amd/gfx11_regs.h"
#include "hw/amd/pm4.h"
#include "hw/amd/sdma6_packets.h"

namespace ugpu::hw::amd {
namespace {

// Names for the values of a few fields, so a bring-up engineer reads "GEQUAL", not "5".
const char* value_name(const PacketFormat& f, const PacketField& field, uint64_t v) {
  std::string_view n = field.name;
  if (f.engine == Engine::Pm4 && (n == "event_type")) {
    switch (v) {
      case pm4::kEventCsPartialFlush: return "CS_PARTIAL_FLUSH";
      case pm4::kEventCacheFlushAndInvTs: return "CACHE_FLUSH_AND_INV_TS_EVENT";
      case pm4::kEventBottomOfPipeTs: return "BOTTOM_OF_PIPE_TS";
      default: return nullptr;
    }
  }
  if (n == "function" || n == "func") {
    static const char* const names[] = {"ALWAYS", "LESS", "LEQUAL", "EQUAL", "NOTEQUAL", "GEQUAL", "GREATER"};
    return v < 7 ? names[v] : nullptr;
  }
  if (f.engine == Engine::Pm4 && n == "data_sel") {
    static const char* const names[] = {"NONE", "DATA32", "DATA64", "GPU_CLOCK", "SYS_CLOCK"};
    return v < 5 ? names[v] : nullptr;
  }
  if (f.engine == Engine::Pm4 && n == "int_sel") {
    static const char* const names[] = {"NONE", "INT_ONLY", "INT_AFTER_WRITE"};
    return v < 3 ? names[v] : nullptr;
  }
  return nullptr;
}

const PacketFormat* find_pm4(uint32_t opcode) {
  for (const PacketFormat* f : pm4::kFormats)
    if (f->opcode == opcode) return f;
  return nullptr;
}
const PacketFormat* find_sdma(uint32_t op, uint32_t sub_op) {
  for (const PacketFormat* f : sdma6::kFormats)
    if (f->opcode == op && f->sub_op == sub_op) return f;
  return nullptr;
}

}  // namespace

void put_field(std::span<uint32_t> packet, const PacketFormat& fmt, const PacketField& f, uint64_t v) {
  auto bad = [&](const char* why) { throw Error(std::string(fmt.name) + "." + f.name + " = " + hex(v) + ": " + why); };
  if (f.width == 64) {
    if (v & ((uint64_t{1} << f.align_bits) - 1)) bad(f.align_bits == 2 ? "must be 4-byte aligned" : "must be 8-byte aligned");
    packet[f.dword] = static_cast<uint32_t>(v);
    packet[f.dword + 1u] = static_cast<uint32_t>(v >> 32);
    return;
  }
  uint64_t max = (uint64_t{1} << f.width) - 1;
  if (v > max) bad(("does not fit the " + std::to_string(f.width) + "-bit field").c_str());
  uint32_t m = static_cast<uint32_t>(max << f.shift);
  packet[f.dword] = (packet[f.dword] & ~m) | (static_cast<uint32_t>(v << f.shift) & m);
}

uint32_t packet_header(const PacketFormat& fmt, size_t total) {
  if (fmt.engine == Engine::Sdma) return fmt.opcode | fmt.sub_op << 8;
  if (total < 2 || total - 2 > 0x3fff) throw Error(std::string("PM4 ") + fmt.name + " of " + std::to_string(total) + " dwords cannot be encoded");
  return 3u << 30 | static_cast<uint32_t>(total - 2) << 16 | fmt.opcode << 8;
}

DecodedPacket decode_packet(Engine e, std::span<const uint32_t> stream) {
  DecodedPacket p;
  if (stream.empty()) return p.error = "empty stream", p;
  uint32_t h = stream[0];
  size_t total = 0;
  if (e == Engine::Pm4) {
    uint32_t type = h >> 30, opcode = (h >> 8) & 0xff;
    if (type != 3) return p.error = "PM4 type-" + std::to_string(type) + " packet (header " + hex(h) + "); only type 3 is accepted", p;
    p.format = find_pm4(opcode);
    if (!p.format) return p.error = "unknown PM4 opcode " + hex(opcode) + " (header " + hex(h) + ")", p;
    uint32_t count = (h >> 16) & 0x3fff;
    total = p.format->opcode == pm4::Nop::format.opcode && count == 0x3fff ? 1 : size_t{count} + 2;
    if (!p.format->variable && total != p.format->dwords)
      return p.error = std::string(p.format->name) + " with " + std::to_string(total) + " dwords (header " + hex(h) + "); it has " +
                       std::to_string(p.format->dwords),
             p;
    if (p.format->variable && total < p.format->dwords && total != 1)
      return p.error = std::string(p.format->name) + " with " + std::to_string(total) + " dwords is too short", p;
  } else {
    uint32_t op = h & 0xff, sub = (h >> 8) & 0xff;
    p.format = find_sdma(op, sub);
    if (!p.format) return p.error = "unknown SDMA packet op " + std::to_string(op) + " sub_op " + std::to_string(sub) + " (header " + hex(h) + ")", p;
    total = p.format->dwords;
    if (p.format == &sdma6::Nop::format) total += (h >> 16) & 0x3fff;
    if (p.format == &sdma6::WriteUntiled::format) {
      if (stream.size() < 4) return p.truncated = true, p.error = "WRITE_UNTILED runs past the end of the stream", p;
      total += (stream[3] & 0xfffff) + 1;
    }
  }
  if (total > stream.size())
    return p.truncated = true,
           p.error = std::string(p.format->name) + " of " + std::to_string(total) + " dwords runs past the end of the stream (" +
                     std::to_string(stream.size()) + " dwords left)",
           p;
  p.words = stream.first(total);
  return p;
}

std::string register_name(uint32_t a, const IpBases& b) {
  for (const Register& r : gfx11::kRegisters)
    if (address_of(r, b) == a) return r.name;
  for (const Register& r : am11::kRegisters)
    if (address_of(r, b) == a) return r.name;
  return "";
}

std::string describe_packet(const DecodedPacket& p, const IpBases& bases) {
  if (!p.ok()) return "<" + p.error + ">";
  const PacketFormat& f = *p.format;
  std::string s = f.name;
  for (size_t i = 0; i < f.fields.size(); ++i) {
    const PacketField& fl = f.fields[i];
    std::string_view n = fl.name;
    if (f.engine == Engine::Sdma && (n == "op" || n == "sub_op")) continue;
    if (fl.dword >= p.words.size()) break;
    uint64_t v = p.get(i);
    if (fl.width < 64 && v == 0 && n != "function" && n != "func" && n != "data_sel") continue;  // quiet defaults
    s += " " + std::string(n) + "=";
    const char* vn = value_name(f, fl, v);
    s += vn ? std::string(vn) : fl.width == 1 || v < 10 ? std::to_string(v) : hex(v);
  }
  if (&f == &pm4::SetShReg::format || &f == &pm4::SetUconfigReg::format) {
    uint32_t start = (&f == &pm4::SetShReg::format ? pm4::kSetShRegStart : pm4::kSetUconfigRegStart) + static_cast<uint32_t>(p.get(0));
    std::span<const uint32_t> vals = p.data();
    for (size_t i = 0; i < vals.size(); ++i) {
      std::string r = register_name(start + static_cast<uint32_t>(i), bases);
      s += (i ? ", " : ": ") + (r.empty() ? "reg " + hex(start + i) : r) + "=" + hex(vals[i]);
    }
  } else if (f.variable && !p.data().empty() && &f != &pm4::Nop::format && &f != &sdma6::Nop::format) {
    s += " data=[";
    for (size_t i = 0; i < p.data().size() && i < 8; ++i) s += (i ? " " : "") + hex(p.data()[i]);
    s += p.data().size() > 8 ? " ...]" : "]";
  } else if (f.variable && p.words.size() > f.dwords) {
    s += " (" + std::to_string(p.words.size()) + " dwords)";
  }
  return s;
}

std::string describe_stream(Engine e, std::span<const uint32_t> stream, const IpBases& bases) {
  std::string out;
  char at[32];
  for (size_t i = 0; i < stream.size();) {
    DecodedPacket p = decode_packet(e, stream.subspan(i));
    std::snprintf(at, sizeof at, "  0x%04zx  ", i * 4);
    out += at + describe_packet(p, bases) + "\n";
    if (!p.ok()) break;
    i += p.words.size();
  }
  return out;
}

}  // namespace ugpu::hw::amd
