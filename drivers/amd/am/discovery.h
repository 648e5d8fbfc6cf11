// IP discovery for the AM path (docs/amd.md §AM): the table at the top of VRAM parsed into what the
// bring-up needs — which blocks the chip has, their versions, register bases and the GC shape — with
// every offset, size and checksum checked, since a wrong VRAM size or a damaged table must be an
// error that says so, not a driver writing to registers it guessed.
#pragma once
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "hw/amd/discovery.h"
#include "hw/amd/registers.h"

namespace ugpu::amd::am {

struct IpVersion {
  uint8_t major = 0, minor = 0, revision = 0;
  bool operator==(const IpVersion&) const = default;
  explicit operator bool() const { return major || minor || revision; }
  std::string str() const;  // "11.0.0"
};

struct Discovery {
  struct Block {
    IpVersion version;
    std::vector<uint32_t> bases;  // dword addresses, per segment
    uint8_t instances = 0;
  };
  std::map<uint16_t, Block> blocks;                     // by hardware id (instance 0's version and bases)
  std::vector<std::pair<uint16_t, uint8_t>> harvested;  // (hw id, instance) fused off
  hw::amd::IpBases bases;                               // for the register tables
  // GC shape (gc_info).
  uint32_t num_se = 0, sa_per_se = 0, cu_per_sa = 0, wave_size = 0, lds_bytes = 0, scratch_slots = 0;
  uint32_t cu_count() const { return num_se * sa_per_se * cu_per_sa; }
  IpVersion version(uint16_t hw_id) const;  // zero when the chip has no such block
  std::string describe() const;             // one line per block, for `ugpu bringup`
};

// Parses a discovery binary (at least the table's 10 KiB); throws Error naming what is wrong.
Discovery parse_discovery(std::span<const uint8_t> table);
const char* hw_id_name(uint16_t hw_id);  // "GC", "MP0", ...; "hw id N" names unknown ones in messages

}  // namespace ugpu::amd::am
