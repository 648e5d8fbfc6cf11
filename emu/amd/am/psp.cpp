// The emulated card's PSP (MP0) and SMU (MP1): the bootloader mailbox, the KM ring and its commands,
// RLC autoload, and the SMU message mailbox. Firmware payloads are compared with the firmware files,
// which the card reads itself from the raw header offsets of amdgpu_ucode.h.
#include "hw/amd/psp.h"

#include <fcntl.h>

#include <cstring>
#include <fstream>
#include <iterator>

#include "common/error.h"
#include "common/hex.h"
#include "emu/amd/am/card.h"
#include "hw/amd/am11_regs.h"

namespace ugpu::emu::amd {
namespace r = hw::amd::am11;
namespace psp = hw::amd::psp;

namespace {
// Bootloader status codes the card reports in C2PMSG_35's low bits (the bootloader's own are not public).
constexpr uint32_t kBlErrOrder = 0x1, kBlErrPayload = 0x2, kBlErrUnknown = 0x3, kBlErrBuffer = 0x4;
constexpr uint32_t kPspErrUnknownCommand = 0x100, kPspErrInvalid = 0xFFFF000A;
constexpr uint64_t kTmrBytes = 0x1300000;  // what LOAD_TOC answers for this board

uint32_t u32(const std::vector<uint8_t>& f, size_t at) {
  uint32_t v = 0;
  if (at + 4 <= f.size()) std::memcpy(&v, f.data() + at, 4);
  return v;
}
std::vector<uint8_t> slice(const std::vector<uint8_t>& f, uint64_t at, uint64_t n) {
  if (at > f.size() || n > f.size() - at) return {};
  return {f.begin() + long(at), f.begin() + long(at + n)};
}
}  // namespace

ExpectedFirmware read_expected_firmware(const std::string& dir) {
  ExpectedFirmware x;
  auto file = [&](const char* name) {
    std::ifstream in(dir + "/" + name, std::ios::binary);
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
  };
  // Every header's payload base is ucode_array_offset_bytes, the common header's dword 6 (byte 24).
  auto sos = file("psp_13_0_0_sos.bin");
  if (sos.empty()) return x;
  const std::pair<uint32_t, uint32_t> boot[] = {{3, psp::kBlLoadKeyDatabase}, {2, psp::kBlLoadSysDrv}, {1, psp::kBlLoadSosDrv}};
  for (uint32_t i = 0, n = u32(sos, 0x20); i < n && i < 32; ++i) {
    size_t d = 0x24 + 16 * i;
    auto payload = slice(sos, uint64_t(u32(sos, 24)) + u32(sos, d + 8), u32(sos, d + 12));
    uint32_t type = u32(sos, d);
    for (auto [t, cmd] : boot)
      if (t == type) x.bootloader[cmd] = payload;
    if (type == 3) x.bootloader[psp::kBlLoadTosSplTable] = payload;  // the SPL step carries the key database
    if (type == 4) x.toc = payload;
    if (type == 6) x.ip[psp::kFwRegList] = payload;
  }
  auto smu = file("smu_13_0_0.bin");
  x.ip[psp::kFwSmu] = slice(smu, u32(smu, 24), u32(smu, 20));
  auto sdma = file("sdma_6_0_0.bin");
  x.ip[psp::kFwSdmaTh0] = slice(sdma, u32(sdma, 24), u32(sdma, 0x24));
  x.ip[psp::kFwSdmaTh1] = slice(sdma, u32(sdma, 0x30), u32(sdma, 0x34));
  struct Rs64 {
    const char* name;
    uint32_t code;
    std::vector<uint32_t> stacks;
  };
  for (const Rs64& g : {Rs64{"gc_11_0_0_pfp.bin", psp::kFwRs64Pfp, {psp::kFwRs64PfpP0Stack, psp::kFwRs64PfpP1Stack}},
                        Rs64{"gc_11_0_0_me.bin", psp::kFwRs64Me, {psp::kFwRs64MeP0Stack, psp::kFwRs64MeP1Stack}},
                        Rs64{"gc_11_0_0_mec.bin",
                             psp::kFwRs64Mec,
                             {psp::kFwRs64MecP0Stack, psp::kFwRs64MecP1Stack, psp::kFwRs64MecP2Stack, psp::kFwRs64MecP3Stack}}}) {
    auto f = file(g.name);
    x.ip[g.code] = slice(f, u32(f, 24), u32(f, 0x24));
    for (uint32_t s : g.stacks) x.ip[s] = slice(f, u32(f, 0x30), u32(f, 0x2c));
    if (g.code == psp::kFwRs64Mec) x.mec_start = uint64_t(u32(f, 0x38)) << 32 | u32(f, 0x34);
  }
  auto imu = file("gc_11_0_0_imu.bin");
  x.ip[psp::kFwImuI] = slice(imu, u32(imu, 24), u32(imu, 0x20));
  x.ip[psp::kFwImuD] = slice(imu, uint64_t(u32(imu, 24)) + u32(imu, 0x20), u32(imu, 0x28));
  auto rlc = file("gc_11_0_0_rlc.bin");
  x.ip[psp::kFwRlcG] = slice(rlc, u32(rlc, 24), u32(rlc, 20));
  const std::pair<uint32_t, size_t> sections[] = {{psp::kFwRlcRestoreListGpmMem, 0x84},
                                                  {psp::kFwRlcRestoreListSrmMem, 0x94},
                                                  {psp::kFwRlcIram, 0x9c},
                                                  {psp::kFwRlcDramBoot, 0xa4},
                                                  {psp::kFwRlcP, 0xb4},
                                                  {psp::kFwRlcV, 0xc4}};
  for (auto [type, size_at] : sections)  // each section: size, then its offset from the file start
    if (u32(rlc, size_at)) x.ip[type] = slice(rlc, u32(rlc, size_at + 4), u32(rlc, size_at));
  x.known = true;
  for (auto& [t, v] : x.ip)
    if (v.empty()) x.known = false;  // a file missing or damaged: check types and order only
  return x;
}

PspModel::PspModel(Card& card) : c(card) {}

void PspModel::reset() {
  bootloader_done.clear();
  loaded.clear();
  sos_alive = ring_up = toc_loaded = tmr_set = autoloaded = smu_alive = reset_requested = false;
  ring_mc = tmr_size = driver_table = 0;
  ring_bytes = ring_read = last_ip = 0;
}

void PspModel::bootloader_command(uint32_t cmd) {
  uint32_t& status = c.reg(r::MP0_SMN_C2PMSG_35);
  if (sos_alive) {
    c.problem("PSP: bootloader command " + hex(cmd) + " after the sOS is up; ignored");
    return;
  }
  if (status != psp::kBlReady) {
    c.problem("PSP: bootloader command " + hex(cmd) + " while the bootloader is not ready (" + hex(status) + ")");
    return;
  }
  static constexpr uint32_t order[] = {psp::kBlLoadKeyDatabase, psp::kBlLoadTosSplTable, psp::kBlLoadSysDrv, psp::kBlLoadSocDrv,
                                       psp::kBlLoadIntfDrv,     psp::kBlLoadDbgDrv,      psp::kBlLoadRasDrv, psp::kBlLoadSosDrv};
  auto rank = [](uint32_t v) -> int {
    for (int i = 0; i < int(std::size(order)); ++i)
      if (order[i] == v) return i;
    return -1;
  };
  auto fail = [&](uint32_t code, const std::string& why) {
    status = psp::kBlReady | code;
    c.problem("PSP bootloader: " + why);
  };
  if (rank(cmd) < 0) return fail(kBlErrUnknown, "unknown command " + hex(cmd));
  if (!bootloader_done.empty() && rank(cmd) <= rank(bootloader_done.back()))
    return fail(kBlErrOrder, "component " + hex(cmd) + " after " + hex(bootloader_done.back()) + " (out of order)");
  uint64_t buffer = uint64_t(c.reg(r::MP0_SMN_C2PMSG_36)) << 20;
  const uint8_t* p = c.mc(buffer, psp::kBootloaderBufferBytes, Access::Read);
  if (!p) return fail(kBlErrBuffer, "the 1 MiB buffer at " + hex(buffer) + " is not in VRAM");
  if (expected.known) {
    auto it = expected.bootloader.find(cmd);
    if (it == expected.bootloader.end()) return fail(kBlErrPayload, "component " + hex(cmd) + " is not in this board's sOS firmware");
    if (std::memcmp(p, it->second.data(), it->second.size()) != 0)
      return fail(kBlErrPayload, "component " + hex(cmd) + ": the buffer does not hold the firmware's bytes");
  } else if (p[0] == 0 && std::memcmp(p, p + 1, 255) == 0) {
    return fail(kBlErrPayload, "component " + hex(cmd) + ": the buffer is empty");
  }
  bootloader_done.push_back(cmd);
  c.note("PSP bootloader: loaded component " + hex(cmd));
  if (cmd == psp::kBlLoadSosDrv) {
    if (expected.known && bootloader_done.size() != expected.bootloader.size())
      return fail(kBlErrOrder, "sOS started with " + std::to_string(bootloader_done.size() - 1) + " of " +
                                   std::to_string(expected.bootloader.size() - 1) + " components before it");
    sos_alive = true;
    c.note("PSP: sOS is running");
  }
}

void PspModel::ring_control(uint32_t cmd) {
  uint32_t& reply = c.reg(r::MP0_SMN_C2PMSG_64);
  if (!sos_alive) return c.problem("PSP: ring command " + hex(cmd) + " before the sOS runs; no answer");
  if (cmd == psp::kCtrlDestroyRings) {
    ring_up = false;
    reply = psp::kCtrlResponse;
    return;
  }
  if (cmd != (psp::kRingTypeKm << 16)) {
    reply = psp::kCtrlResponse | 0xFFFF;
    return c.problem("PSP: unknown ring command " + hex(cmd));
  }
  ring_mc = uint64_t(c.reg(r::MP0_SMN_C2PMSG_70)) << 32 | c.reg(r::MP0_SMN_C2PMSG_69);
  ring_bytes = c.reg(r::MP0_SMN_C2PMSG_71);
  if (!ring_bytes || ring_bytes % sizeof(psp::RingFrame) || !c.mc(ring_mc, ring_bytes, Access::Read)) {
    reply = psp::kCtrlResponse | 0x1;
    return c.problem("PSP: KM ring at " + hex(ring_mc) + " of " + std::to_string(ring_bytes) + " bytes is not usable");
  }
  ring_up = true, ring_read = 0;
  c.reg(r::MP0_SMN_C2PMSG_67) = 0;
  reply = psp::kCtrlResponse;
  c.note("PSP: KM ring created at " + hex(ring_mc) + " (" + std::to_string(ring_bytes) + " bytes)");
}

void PspModel::ring_write_pointer(uint32_t wptr) {
  c.reg(r::MP0_SMN_C2PMSG_67) = wptr;
  if (!ring_up) return c.problem("PSP: write pointer " + std::to_string(wptr) + " with no ring");
  const uint32_t ring_dwords = ring_bytes / 4;
  for (int guard = 0; ring_read % ring_dwords != wptr % ring_dwords && guard < 4096; ++guard) {
    uint64_t at = ring_mc + uint64_t(ring_read % ring_dwords) * 4;
    ring_read += psp::kFrameDwords;
    psp::RingFrame fr;
    const uint8_t* fp = c.mc(at, sizeof fr, Access::Read);
    if (!fp) return c.problem("PSP: KM ring frame at " + hex(at) + " unreachable");
    std::memcpy(&fr, fp, sizeof fr);
    uint64_t cmd_at = uint64_t(fr.cmd_buf_addr_hi) << 32 | fr.cmd_buf_addr_lo;
    uint8_t* cp = c.mc(cmd_at, sizeof(psp::CmdResp), Access::Write);
    if (!cp) {
      c.problem("PSP: command buffer at " + hex(cmd_at) + " unreachable; frame dropped");
      continue;
    }
    psp::CmdResp cmd;
    std::memcpy(&cmd, cp, sizeof cmd);
    ++commands;
    std::memset(&cmd.resp, 0, sizeof cmd.resp);
    cmd.resp.status = execute(cmd);
    std::memcpy(cp + offsetof(psp::CmdResp, resp), &cmd.resp, sizeof cmd.resp);
    uint64_t fence = uint64_t(fr.fence_addr_hi) << 32 | fr.fence_addr_lo;
    if (uint8_t* f = c.mc(fence, 4, Access::Write)) std::memcpy(f, &fr.fence_value, 4);
    else c.problem("PSP: fence at " + hex(fence) + " unreachable");
  }
}

uint32_t PspModel::execute(psp::CmdResp& cmd) {
  auto bad = [&](const std::string& why) {
    c.problem("PSP: command " + hex(cmd.cmd_id) + " refused: " + why);
    return kPspErrInvalid;
  };
  switch (cmd.cmd_id) {
    case psp::kCmdLoadToc: {
      const auto& t = cmd.cmd.load_toc;
      const uint8_t* p = c.mc(uint64_t(t.toc_phy_addr_hi) << 32 | t.toc_phy_addr_lo, t.toc_size, Access::Read);
      if (!p || !t.toc_size) return bad("LOAD_TOC of " + std::to_string(t.toc_size) + " bytes at an unreachable address");
      if (expected.known && (t.toc_size != expected.toc.size() || std::memcmp(p, expected.toc.data(), t.toc_size)))
        return bad("LOAD_TOC: not this board's table of contents");
      toc_loaded = true;
      tmr_size = kTmrBytes;
      cmd.resp.tmr_size = uint32_t(kTmrBytes);
      c.note("PSP: LOAD_TOC (TMR of " + std::to_string(kTmrBytes >> 20) + " MiB needed)");
      return 0;
    }
    case psp::kCmdSetupTmr: {
      const auto& t = cmd.cmd.setup_tmr;
      uint64_t mc = uint64_t(t.buf_phy_addr_hi) << 32 | t.buf_phy_addr_lo, phys = uint64_t(t.system_phy_addr_hi) << 32 | t.system_phy_addr_lo;
      if (!toc_loaded) return bad("SETUP_TMR before LOAD_TOC");
      if (t.buf_size < tmr_size) return bad("SETUP_TMR of " + std::to_string(t.buf_size) + " bytes; LOAD_TOC asked for " + std::to_string(tmr_size));
      if (mc % psp::kTmrAlignment || mc < c.fb_base_ || mc - c.fb_base_ + t.buf_size > c.vram_bytes())
        return bad("SETUP_TMR at " + hex(mc) + ": the TMR must be 1 MiB aligned VRAM");
      if ((t.flags & psp::kTmrVirtPhyAddr) && phys != mc - c.fb_base_) return bad("SETUP_TMR: the physical address does not match the MC address");
      tmr_set = true;
      c.note("PSP: SETUP_TMR at " + hex(mc));
      return 0;
    }
    case psp::kCmdLoadIpFw: {
      const auto& l = cmd.cmd.load_ip_fw;
      const char* name = psp::fw_type_name(l.fw_type);
      if (!name) return bad("LOAD_IP_FW of unknown type " + std::to_string(l.fw_type));
      if (!tmr_set && l.fw_type != psp::kFwSmu) return bad(std::string("LOAD_IP_FW ") + name + " before SETUP_TMR");
      if (autoloaded && l.fw_type != psp::kFwRegList) return bad(std::string("LOAD_IP_FW ") + name + " after AUTOLOAD_RLC");
      uint64_t at = uint64_t(l.fw_phy_addr_hi) << 32 | l.fw_phy_addr_lo;
      const uint8_t* p = c.mc(at, l.fw_size, Access::Read);
      if (!p || !l.fw_size || at % 4096) return bad(std::string("LOAD_IP_FW ") + name + ": " + std::to_string(l.fw_size) + " bytes at " + hex(at));
      if (expected.known) {
        auto it = expected.ip.find(l.fw_type);
        if (it == expected.ip.end()) return bad(std::string("LOAD_IP_FW ") + name + ": not firmware this board takes");
        if (it->second.size() != l.fw_size || std::memcmp(p, it->second.data(), l.fw_size))
          return bad(std::string("LOAD_IP_FW ") + name + ": " + std::to_string(l.fw_size) + " bytes that are not the firmware's " + name + " (" +
                     std::to_string(it->second.size()) + " bytes)");
      }
      loaded.insert(l.fw_type);
      last_ip = l.fw_type;
      if (l.fw_type == psp::kFwSmu) smu_alive = true;
      return 0;
    }
    case psp::kCmdAutoloadRlc: {
      if (last_ip != psp::kFwRlcG) return bad("AUTOLOAD_RLC must directly follow LOAD_IP_FW RLC_G");
      for (uint32_t t : {psp::kFwRlcG, psp::kFwRlcIram, psp::kFwRlcDramBoot, psp::kFwRs64Mec, psp::kFwImuI, psp::kFwImuD, psp::kFwSdmaTh0})
        if (!loaded.count(t)) return bad(std::string("AUTOLOAD_RLC without ") + psp::fw_type_name(t));
      if (expected.known)
        for (const auto& [t, bytes] : expected.ip)
          if (t != psp::kFwRegList && !loaded.count(t)) return bad(std::string("AUTOLOAD_RLC without ") + psp::fw_type_name(t));
      autoloaded = true;
      c.note("PSP: AUTOLOAD_RLC: RLC booted the graphics engines (" + std::to_string(loaded.size()) + " firmware images)");
      return 0;
    }
  }
  c.problem("PSP: unknown command " + hex(cmd.cmd_id));
  return kPspErrUnknownCommand;
}

void PspModel::smu_message(uint32_t msg, bool debug) {
  ++smu_messages;
  if (debug) {
    uint32_t param = c.reg(r::MP1_SMN_C2PMSG_53);
    c.reg(r::MP1_SMN_C2PMSG_54) = 0;
    if (msg == 2) reset_requested = true, c.note("SMU: mode-1 reset (debug mailbox)");
    else c.problem("SMU: debug message " + hex(msg) + " (" + hex(param) + ") ignored");
    return;
  }
  uint32_t& resp = c.reg(r::MP1_SMN_C2PMSG_90);
  uint32_t& arg = c.reg(r::MP1_SMN_C2PMSG_82);
  if (!smu_alive) return c.problem("SMU: message " + hex(msg) + " before its firmware was loaded; no answer");
  resp = 1;
  switch (msg) {
    case 0x01: arg = arg + 1; break;     // TestMessage
    case 0x02: arg = 0x004e4b00; break;  // GetSmuVersion
    case 0x03: arg = 0x3D; break;        // GetDriverIfVersion
    case 0x06:
    case 0x07: break;                                                                    // Enable/DisableAllSmuFeatures
    case 0x0E: driver_table = (driver_table & 0xFFFFFFFF) | uint64_t(arg) << 32; break;  // SetDriverDramAddrHigh
    case 0x0F: driver_table = (driver_table & ~0xFFFFFFFFull) | arg; break;              // SetDriverDramAddrLow
    case 0x19:
    case 0x1A:
    case 0x1B:
    case 0x1C: break;  // clock limits
    case 0x1D:
    case 0x1E:
    case 0x1F: arg = 2500; break;  // DPM frequencies (MHz)
    case 0x2F:
      reset_requested = true;
      c.note("SMU: mode-1 reset");
      break;
    default: resp = 0xFE; c.problem("SMU: unknown message " + hex(msg));
  }
}

}  // namespace ugpu::emu::amd
