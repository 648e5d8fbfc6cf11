// The headers of AMD GPU firmware files (/lib/firmware/amdgpu/*.bin, Debian's firmware-amd-graphics),
// as Linux's amdgpu_ucode.h lays them out (linux-source-6.12): a common header, then a struct chosen
// by header_version_major/minor. Offsets inside a header are bytes from ucode_array_offset_bytes
// unless noted. Checked against every gfx1100 file of the package (tests/am/test_firmware.cpp).
#pragma once
#include <cstddef>
#include <cstdint>

namespace ugpu::hw::amd::ucode {

#pragma pack(push, 1)
struct Common {
  uint32_t size_bytes;         // the whole file
  uint32_t header_size_bytes;  // this header and the versioned part
  uint16_t header_version_major, header_version_minor;
  uint16_t ip_version_major, ip_version_minor;
  uint32_t ucode_version;
  uint32_t ucode_size_bytes;
  uint32_t ucode_array_offset_bytes;  // payload, from the start of the file
  uint32_t crc32;
};
// gc_*_{pfp,me,mec}.bin on gfx11 (RS64 cores): instructions and data (stack), from the file start.
struct GfxV2_0 {
  Common common;
  uint32_t ucode_feature_version, ucode_size_bytes, ucode_offset_bytes, data_size_bytes, data_offset_bytes;
  uint32_t ucode_start_addr_lo, ucode_start_addr_hi;
};
// gc_*_rlc.bin: v2.0 jump tables and register lists, v2.1 save/restore lists, v2.2 IRAM/DRAM, v2.3 RLCP/RLCV.
// Offsets are from the start of the file.
struct RlcV2_0 {
  Common common;
  uint32_t ucode_feature_version, jt_offset, jt_size, save_and_restore_offset, clear_state_descriptor_offset, avail_scratch_ram_locations,
      reg_restore_list_size, reg_list_format_start, reg_list_format_separate_start, starting_offsets_start, reg_list_format_size_bytes,
      reg_list_format_array_offset_bytes, reg_list_size_bytes, reg_list_array_offset_bytes, reg_list_format_separate_size_bytes,
      reg_list_format_separate_array_offset_bytes, reg_list_separate_size_bytes, reg_list_separate_array_offset_bytes;
};
struct RlcSection {
  uint32_t ucode_ver, feature_ver, size_bytes, offset_bytes;
};
struct RlcV2_1 {
  RlcV2_0 v2_0;
  uint32_t reg_list_format_direct_reg_list_length;
  RlcSection save_restore_list_cntl, save_restore_list_gpm, save_restore_list_srm;
};
struct RlcV2_2 {
  RlcV2_1 v2_1;
  uint32_t rlc_iram_ucode_size_bytes, rlc_iram_ucode_offset_bytes, rlc_dram_ucode_size_bytes, rlc_dram_ucode_offset_bytes;
};
struct RlcV2_3 {
  RlcV2_2 v2_2;
  uint32_t rlcp_ucode_version, rlcp_ucode_feature_version, rlcp_ucode_size_bytes, rlcp_ucode_offset_bytes;
  uint32_t rlcv_ucode_version, rlcv_ucode_feature_version, rlcv_ucode_size_bytes, rlcv_ucode_offset_bytes;
};
// gc_*_imu.bin: offsets from ucode_array_offset_bytes.
struct ImuV1_0 {
  Common common;
  uint32_t iram_size_bytes, iram_offset_bytes, dram_size_bytes, dram_offset_bytes;
};
// sdma_*.bin v2: the context-switch and control engines' code, offsets from ucode_array_offset_bytes.
struct SdmaV2_0 {
  Common common;
  uint32_t ucode_feature_version, ctx_ucode_size_bytes, ctx_jt_offset, ctx_jt_size, ctl_ucode_offset, ctl_ucode_size_bytes, ctl_jt_offset,
      ctl_jt_size;
};
// sdma_*.bin v3 (RS64 SDMA, gfx12): one image, offset from the file start.
struct SdmaV3_0 {
  Common common;
  uint32_t ucode_feature_version, ucode_offset_bytes, ucode_size_bytes;
};
// smu_*.bin: v2.1 adds power-play tables after the code.
struct SmcV1_0 {
  Common common;
  uint32_t ucode_start_addr;
};
struct SmcV2_1 {
  SmcV1_0 v1_0;
  uint32_t pptable_count, pptable_entry_offset;
};
// psp_*_{sos,ta}.bin v2: a list of components; component i is at ucode_array_offset_bytes + offset_bytes.
struct PspBinDesc {
  uint32_t fw_type, fw_version, offset_bytes, size_bytes;
};
struct PspV2_0 {
  Common common;
  uint32_t bin_count;  // PspBinDesc[bin_count] follow
};
#pragma pack(pop)

static_assert(sizeof(Common) == 32);
static_assert(sizeof(GfxV2_0) == 60 && offsetof(GfxV2_0, ucode_start_addr_lo) == 0x34);
static_assert(sizeof(RlcV2_0) == 104 && sizeof(RlcV2_1) == 0x9c && sizeof(RlcV2_2) == 0xac && sizeof(RlcV2_3) == 204);
static_assert(sizeof(ImuV1_0) == 48 && sizeof(SdmaV2_0) == 64 && sizeof(SdmaV3_0) == 44 && sizeof(SmcV1_0) == 36 && sizeof(SmcV2_1) == 44);
static_assert(sizeof(PspBinDesc) == 16 && sizeof(PspV2_0) == 36);

// PSP component types in a sOS file (amdgpu_ucode.h enum psp_fw_type).
enum PspFwType : uint32_t {
  kPspUnknown = 0,
  kPspSos = 1,
  kPspSysDrv = 2,
  kPspKdb = 3,
  kPspToc = 4,
  kPspSpl = 5,
  kPspRl = 6,
  kPspSocDrv = 7,
  kPspIntfDrv = 8,
  kPspDbgDrv = 9,
  kPspRasDrv = 10,
};
const char* psp_fw_type_name(uint32_t t);

}  // namespace ugpu::hw::amd::ucode
