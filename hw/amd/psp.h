// The PSP (MP0) interface the AM driver speaks and the emulated card answers, from Linux's
// psp_gfx_if.h and amdgpu_psp.h (linux-source-6.12): the bootloader's mailbox commands, the ring
// control commands, and the KM ring's frame and command/response buffer.
#pragma once
#include <cstddef>
#include <cstdint>

namespace ugpu::hw::amd::psp {

// Bootloader (C2PMSG_35 command; C2PMSG_36 = buffer address >> 20). Ready = C2PMSG_35 reads exactly kBlReady.
enum BootloaderCmd : uint32_t {
  kBlLoadSysDrv = 0x10000,
  kBlLoadSosDrv = 0x20000,
  kBlLoadKeyDatabase = 0x80000,
  kBlLoadSocDrv = 0xB0000,
  kBlLoadDbgDrv = 0xC0000,
  kBlLoadIntfDrv = 0xD0000,
  kBlLoadRasDrv = 0xE0000,
  kBlLoadTosSplTable = 0x10000000,
};
inline constexpr uint32_t kBlReady = 0x80000000;
inline constexpr uint64_t kBootloaderBufferBytes = 1 << 20;  // 1 MiB, 1 MiB aligned

// Ring control (C2PMSG_64): command in bits 16-19, response flag bit 31, status bits 0-15.
inline constexpr uint32_t kCtrlInitGpcomRing = 0x20000, kCtrlDestroyRings = 0x30000;
inline constexpr uint32_t kCtrlResponse = 0x80000000, kCtrlStatusMask = 0xFFFF;
inline constexpr uint32_t kRingTypeKm = 2;

// KM ring commands (psp_gfx_cmd_resp::cmd_id).
enum CmdId : uint32_t {
  kCmdLoadTa = 0x01,
  kCmdLoadAsd = 0x04,
  kCmdSetupTmr = 0x05,
  kCmdLoadIpFw = 0x06,
  kCmdDestroyTmr = 0x07,
  kCmdLoadToc = 0x20,
  kCmdAutoloadRlc = 0x21,
  kCmdBootCfg = 0x22,
};
// Firmware types of LOAD_IP_FW (enum psp_gfx_fw_type) used by gfx11 parts.
enum FwType : uint32_t {
  kFwRlcV = 7,
  kFwRlcG = 8,
  kFwSmu = 18,
  kFwRlcRestoreListGpmMem = 20,
  kFwRlcRestoreListSrmMem = 21,
  kFwRlcP = 25,
  kFwRlcIram = 26,
  kFwRlcDramBoot = 48,
  kFwRegList = 67,
  kFwImuI = 68,
  kFwImuD = 69,
  kFwSdmaTh0 = 71,
  kFwSdmaTh1 = 72,
  kFwRs64Pfp = 87,
  kFwRs64Me = 88,
  kFwRs64Mec = 89,
  kFwRs64PfpP0Stack = 90,
  kFwRs64PfpP1Stack = 91,
  kFwRs64MeP0Stack = 92,
  kFwRs64MeP1Stack = 93,
  kFwRs64MecP0Stack = 94,
  kFwRs64MecP1Stack = 95,
  kFwRs64MecP2Stack = 96,
  kFwRs64MecP3Stack = 97,
};
const char* fw_type_name(uint32_t t);  // "RS64_MEC"; nullptr for types ugpu does not know

#pragma pack(push, 1)
struct RingFrame {  // psp_gfx_rb_frame: one 64-byte slot of the KM ring
  uint32_t cmd_buf_addr_lo, cmd_buf_addr_hi, cmd_buf_size;
  uint32_t fence_addr_lo, fence_addr_hi, fence_value;
  uint32_t sid_lo, sid_hi;
  uint8_t vmid, frame_type;
  uint16_t reserved1;
  uint32_t reserved2[7];
};
struct Response {  // psp_gfx_resp
  uint32_t status, session_id, fw_addr_lo, fw_addr_hi, tmr_size;
  uint32_t reserved[11];
  uint32_t uresp[8];
};
struct CmdResp {  // psp_gfx_cmd_resp: the 1 KiB command buffer the frame points to
  uint32_t buf_size, buf_version, cmd_id;
  uint32_t resp_buf_addr_lo, resp_buf_addr_hi, resp_offset, resp_buf_size;
  union {
    struct {
      uint32_t fw_phy_addr_lo, fw_phy_addr_hi, fw_size, fw_type;
    } load_ip_fw;
    struct {
      uint32_t buf_phy_addr_lo, buf_phy_addr_hi, buf_size, flags, system_phy_addr_lo, system_phy_addr_hi;
    } setup_tmr;
    struct {
      uint32_t toc_phy_addr_lo, toc_phy_addr_hi, toc_size;
    } load_toc;
    uint8_t raw[784];
  } cmd;
  uint8_t reserved_1[52];
  Response resp;
  uint8_t reserved_2[64];
};
#pragma pack(pop)
inline constexpr uint32_t kTmrVirtPhyAddr = 1u << 1;  // setup_tmr flags: system_phy_addr is given
inline constexpr uint64_t kTmrAlignment = 1 << 20;
inline constexpr uint32_t kFrameDwords = sizeof(RingFrame) / 4;

static_assert(sizeof(RingFrame) == 64 && offsetof(RingFrame, fence_value) == 20 && offsetof(RingFrame, vmid) == 32);
static_assert(sizeof(Response) == 96 && offsetof(Response, tmr_size) == 16);
static_assert(sizeof(CmdResp) == 1024 && offsetof(CmdResp, cmd) == 28 && offsetof(CmdResp, resp) == 864);

}  // namespace ugpu::hw::amd::psp
