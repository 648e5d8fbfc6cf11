// Command packets as data (docs/design.md §2): every PM4 and SDMA packet ugpu uses is a table of fields, and
// the same table gives the driver's encoder, the emulator's decoder and `ugpu decode`'s text, so the
// three agree because they read one description.
//
// A field is `width` bits at `shift` in dword `dword` of the packet (dword 0 is the header). A 64-bit
// field spans `dword` (low half) and `dword + 1`; its `align_bits` low bits must be zero (the hardware
// keeps other bits there or requires the alignment). The PM4 tables are in pm4.h (from Linux's nvd.h),
// the SDMA ones in sdma6_packets.h (generated from Linux's sdma_v6_0_0_pkt_open.h).
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "common/error.h"
#include "hw/amd/registers.h"

namespace ugpu::hw::amd {

enum class Engine : uint8_t { Pm4, Sdma };

struct PacketField {
  const char* name;
  uint8_t dword, shift, width, align_bits;
};

struct PacketFormat {
  const char* name;
  Engine engine;
  uint32_t opcode, sub_op;  // PM4: IT opcode (sub_op unused); SDMA: op and sub_op of the header
  uint16_t dwords;          // the fixed part, header included
  bool variable;            // data dwords follow the fixed part; the header says how many
  std::span<const PacketField> fields;
};

// Writes v into field f of a packet; throws Error if v does not fit or breaks the alignment.
void put_field(std::span<uint32_t> packet, const PacketFormat& fmt, const PacketField& f, uint64_t v);
inline uint64_t get_field(std::span<const uint32_t> packet, const PacketField& f) {
  if (f.width == 64) return packet[f.dword] | static_cast<uint64_t>(packet[f.dword + 1u]) << 32;
  return (packet[f.dword] >> f.shift) & static_cast<uint32_t>((uint64_t{1} << f.width) - 1);
}

// The header dword of a packet of `total` dwords (PM4 counts them in the header; SDMA headers carry
// op and sub_op, and variable SDMA packets a count field the caller sets).
uint32_t packet_header(const PacketFormat& fmt, size_t total);

// A fixed-size packet under construction: P is a format struct from pm4.h or sdma6_packets.h.
template <class P>
struct Packet {
  std::array<uint32_t, P::format.dwords> dw{};
  Packet() { dw[0] = packet_header(P::format, P::format.dwords); }
  Packet& set(typename P::F f, uint64_t v) {
    put_field(dw, P::format, P::fields[f], v);
    return *this;
  }
};

// The dword addresses of the register blocks (IP discovery's base addresses: GC segments 0..1, NBIO
// segment 2), which turn a register's table offset into the address packets carry.

// One packet read from a stream. `error` is set (and format may be null) when the words are not a
// packet these tables know or are malformed: unknown opcode, wrong length, running past the end.
struct DecodedPacket {
  const PacketFormat* format = nullptr;
  std::span<const uint32_t> words;  // the whole packet
  std::string error;
  bool truncated = false;  // the packet (format known) runs past the end of the stream
  uint64_t get(size_t field) const { return get_field(words, format->fields[field]); }
  std::span<const uint32_t> data() const { return words.subspan(format->dwords); }  // the variable part
  bool ok() const { return error.empty(); }
};
DecodedPacket decode_packet(Engine e, std::span<const uint32_t> stream);
// "RELEASE_MEM event_type=CACHE_FLUSH_AND_INV_TS_EVENT event_index=5 ... address=0x7f0000001000 data=0x3"
std::string describe_packet(const DecodedPacket& p, const IpBases& bases = {});
// One line per packet: "  0x0010  RELEASE_MEM ..."; stops at the first undecodable packet, which it names.
std::string describe_stream(Engine e, std::span<const uint32_t> stream, const IpBases& bases = {});
// The register at a dword address ("COMPUTE_PGM_LO"), or "" if the tables do not name it.
std::string register_name(uint32_t dword_address, const IpBases& bases = {});

}  // namespace ugpu::hw::amd
