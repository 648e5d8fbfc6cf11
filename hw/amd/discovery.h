// The IP discovery binary an AMD GPU keeps at the top of its VRAM (the last 64 KiB; the driver reads
// it through BAR0 or MM_INDEX/MM_DATA): which IP blocks the chip has, their versions and register
// bases, and the GC configuration. Layouts from Linux's include/discovery.h (linux-source-6.12), all
// little-endian and packed. The parser (drivers/amd/am/discovery.cpp) and the emulated card's table
// (emu/amd/am/) both read these.
#pragma once
#include <cstddef>
#include <cstdint>

namespace ugpu::hw::amd::discovery {

inline constexpr uint64_t kTableFromTop = 64 << 10;  // the table starts this far below the end of VRAM
inline constexpr uint32_t kTableMaxBytes = 10 << 10;
inline constexpr uint32_t kBinarySignature = 0x28211407;
inline constexpr uint32_t kIpDiscoverySignature = 0x53445049;  // "IPDS"
inline constexpr uint32_t kGcTableId = 0x4347;                 // "GC"
inline constexpr uint32_t kHarvestSignature = 0x56524148;      // "HARV"

enum Table : int { kIpDiscovery = 0, kGc, kHarvest, kVcn, kMall, kNps, kTables };

// Hardware ids of the blocks ugpu reads (soc15_hw_ip.h).
enum HwId : uint16_t {
  kMp1 = 1,
  kGcHw = 11,
  kMmhub = 34,
  kAthub = 35,
  kOsssys = 40,
  kHdp = 41,
  kSdma0 = 42,
  kSdma1 = 43,
  kDf = 46,
  kUmc = 150,
  kNbif = 108,
  kMp0 = 255,
};

#pragma pack(push, 1)
struct TableInfo {
  uint16_t offset;    // bytes from the start of the binary
  uint16_t checksum;  // byte sum of the table
  uint16_t size;
  uint16_t padding;
};
struct BinaryHeader {
  uint32_t signature;
  uint16_t version_major, version_minor;
  uint16_t checksum;  // byte sum of the binary after this field
  uint16_t size;      // of the whole binary
  TableInfo tables[kTables];
};
struct DieInfo {
  uint16_t die_id, die_offset;
};
struct IpDiscoveryHeader {
  uint32_t signature;
  uint16_t version;
  uint16_t size;
  uint32_t id;
  uint16_t num_dies;
  DieInfo dies[16];
  uint8_t flags;  // version 4: bit 0 = base addresses are 64-bit
  uint8_t reserved;
};
struct DieHeader {
  uint16_t die_id, num_ips;
};
// Followed by num_base_address base addresses, 32- or 64-bit (IpDiscoveryHeader::flags), in dwords.
struct IpEntry {
  uint16_t hw_id;
  uint8_t instance;
  uint8_t num_base_address;
  uint8_t major, minor, revision;
  uint8_t variant_subrev;  // v3+: sub_revision in bits 0-3, variant in 4-7 (harvest in older tables)
};
struct GpuInfoHeader {
  uint32_t table_id;
  uint16_t version_major, version_minor;
  uint32_t size;  // header included
};
struct GcInfoV2_1 {
  GpuInfoHeader header;
  uint32_t num_se, num_cu_per_sh, num_sh_per_se, num_rb_per_se, num_tccs, num_gprs, num_max_gs_thds, gs_table_depth, gsprim_buff_depth,
      parameter_cache_depth, double_offchip_lds_buffer, wave_size, max_waves_per_simd, max_scratch_slots_per_cu, lds_size, num_sc_per_se,
      num_packer_per_sc;
  uint32_t num_tcp_per_sh, tcp_size_per_cu, num_sdp_interface, num_cu_per_sqc, instruction_cache_size_per_sqc, scalar_data_cache_size_per_sqc,
      tcc_size;
};
struct GcInfoV1_0 {  // gfx11 parts report v1.x: WGPs per shader array instead of CUs
  GpuInfoHeader header;
  uint32_t num_se, num_wgp0_per_sa, num_wgp1_per_sa, num_rb_per_se, num_gl2c, num_gprs, num_max_gs_thds, gs_table_depth, gsprim_buff_depth,
      parameter_cache_depth, double_offchip_lds_buffer, wave_size, max_waves_per_simd, max_scratch_slots_per_cu, lds_size, num_sc_per_se,
      num_sa_per_se, num_packer_per_sc, num_gl2a;
};
struct HarvestEntry {
  uint16_t hw_id;
  uint8_t instance;
  uint8_t reserved;
};
struct HarvestTable {
  uint32_t signature, version;
  HarvestEntry list[32];  // ends at the first hw_id 0
};
#pragma pack(pop)

static_assert(sizeof(TableInfo) == 8 && sizeof(BinaryHeader) == 60);
static_assert(offsetof(IpDiscoveryHeader, num_dies) == 12 && offsetof(IpDiscoveryHeader, flags) == 78 && sizeof(IpDiscoveryHeader) == 80);
static_assert(sizeof(DieHeader) == 4 && sizeof(IpEntry) == 8);
static_assert(sizeof(GpuInfoHeader) == 12 && sizeof(GcInfoV1_0) == 12 + 19 * 4 && sizeof(GcInfoV2_1) == 12 + 24 * 4);
static_assert(sizeof(HarvestTable) == 8 + 32 * 4);

// The checksum every table and the binary carry: the 16-bit sum of its bytes.
inline uint16_t checksum(const uint8_t* p, size_t n) {
  uint16_t s = 0;
  for (size_t i = 0; i < n; ++i) s = uint16_t(s + p[i]);
  return s;
}

}  // namespace ugpu::hw::amd::discovery
