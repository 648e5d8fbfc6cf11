// The IP discovery binary the emulated card keeps at the top of its VRAM (hw/amd/discovery.h): a
// Navi31 (RX 7900 XTX) with the blocks and versions the AM bring-up reads.
#pragma once
#include <cstdint>
#include <vector>

#include "hw/amd/registers.h"

namespace ugpu::emu::amd {

struct DiscoveryShape {
  hw::amd::IpBases bases;
  uint8_t gc_major = 11, gc_minor = 0, gc_rev = 0;
  uint32_t num_se = 6, sa_per_se = 2, wgp_per_sa = 4;
  bool wide_bases = true;  // version-4 table with 64-bit base addresses, as Navi3x has
};
std::vector<uint8_t> discovery_binary(const DiscoveryShape& s);

}  // namespace ugpu::emu::amd
