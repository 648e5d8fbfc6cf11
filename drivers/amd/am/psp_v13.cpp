// PSP v13.0 (MP0): the secure processor that loads every other firmware. Its bootloader takes the sOS
// components through a mailbox (C2PMSG_35/36, a 1 MiB buffer); the running sOS takes commands on the
// KM ring — LOAD_TOC (which says how big the TMR must be), SETUP_TMR, LOAD_IP_FW for the SMU and every
// graphics and SDMA image, then AUTOLOAD_RLC, after which the RLC boots the graphics engines.
#include <cstring>

#include "common/error.h"
#include "common/hex.h"
#include "drivers/amd/am/am_gpu.h"
#include "hw/amd/am11_regs.h"
#include "hw/amd/psp.h"

namespace ugpu::amd::am {
namespace r = hw::amd::am11;
namespace psp = hw::amd::psp;

namespace {
constexpr uint64_t kRingBytes = 0x10000, kStagingBytes = 1 << 20;
constexpr uint64_t kTmrMax = 0x1300000;  // reserved up front so the TMR keeps its place across runs
const char* bootloader_name(uint32_t cmd) {
  switch (cmd) {
    case psp::kBlLoadKeyDatabase: return "KDB";
    case psp::kBlLoadTosSplTable: return "SPL";
    case psp::kBlLoadSysDrv: return "SYS_DRV";
    case psp::kBlLoadSocDrv: return "SOC_DRV";
    case psp::kBlLoadIntfDrv: return "INTF_DRV";
    case psp::kBlLoadDbgDrv: return "DBG_DRV";
    case psp::kBlLoadRasDrv: return "RAS_DRV";
    case psp::kBlLoadSosDrv: return "SOS";
  }
  return "?";
}
}  // namespace

void Psp::init_sw() {
  fw_pri_ = g.boot(psp::kBootloaderBufferBytes, psp::kBootloaderBufferBytes);
  staging_ = g.boot(kStagingBytes, kStagingBytes);
  ring_ = g.boot(kRingBytes, 4096);
  cmd_ = g.boot(4096), fence_ = g.boot(4096);
  tmr_ = g.boot(kTmrMax, psp::kTmrAlignment);
}

bool Psp::sos_alive() { return g.regs().read(r::MP0_SMN_C2PMSG_81) != 0; }

void Psp::load_bootloader_components() {
  Regs& x = g.regs();
  const auto timeout = g.options().timeout;
  for (const FwBlob& b : g.firmware().sos) {
    std::string what = std::string("PSP bootloader: loading ") + bootloader_name(b.type) + " (" + b.what + ")";
    uint32_t ready = x.read(r::MP0_SMN_C2PMSG_35);
    if (ready != psp::kBlReady) x.wait(r::MP0_SMN_C2PMSG_35, 0xFFFFFFFF, psp::kBlReady, timeout, what + ": the bootloader is not ready");
    fw_pri_.zero();
    fw_pri_.write(0, b.data);
    g.flush_hdp();
    x.write(r::MP0_SMN_C2PMSG_36, uint32_t(fw_pri_.mc >> 20));
    x.write(r::MP0_SMN_C2PMSG_35, b.type);
    uint32_t st;
    if (b.type == psp::kBlLoadSosDrv) {
      if (!x.poll(r::MP0_SMN_C2PMSG_81, [](uint32_t v) { return v != 0; }, timeout, st))
        throw Error(what + ": the sOS did not start in " + std::to_string(timeout.count()) + " ms (C2PMSG_81 stays 0, bootloader status " +
                    hex(x.read(r::MP0_SMN_C2PMSG_35)) + ")");
      continue;
    }
    if (!x.poll(r::MP0_SMN_C2PMSG_35, [](uint32_t v) { return (v & 0x80000000u) != 0; }, timeout, st))
      throw Error(what + ": no answer in " + std::to_string(timeout.count()) + " ms");
    if (st != psp::kBlReady) throw Error(what + ": the bootloader refused it (status " + hex(st) + ")");
  }
}

void Psp::create_ring() {
  Regs& x = g.regs();
  const auto timeout = g.options().timeout;
  if (x.read(r::MP0_SMN_C2PMSG_71)) {  // a ring left by an earlier run
    x.write(r::MP0_SMN_C2PMSG_64, psp::kCtrlDestroyRings);
    x.wait(r::MP0_SMN_C2PMSG_64, psp::kCtrlResponse, psp::kCtrlResponse, timeout, "PSP: destroying the previous KM ring");
  }
  ring_.zero();
  fence_.zero();
  g.flush_hdp();
  x.write(r::MP0_SMN_C2PMSG_69, uint32_t(ring_.mc)), x.write(r::MP0_SMN_C2PMSG_70, uint32_t(ring_.mc >> 32));
  x.write(r::MP0_SMN_C2PMSG_71, uint32_t(ring_.size));
  x.write(r::MP0_SMN_C2PMSG_64, psp::kRingTypeKm << 16);
  uint32_t v = x.wait(r::MP0_SMN_C2PMSG_64, psp::kCtrlResponse, psp::kCtrlResponse, timeout, "PSP: creating the KM ring");
  if (v & psp::kCtrlStatusMask) throw Error("PSP: creating the KM ring failed (C2PMSG_64 " + hex(v) + ")");
  fence_value_ = 0;
}

uint32_t Psp::submit(uint32_t cmd_id, const std::function<void(uint8_t*)>& fill, const std::string& what) {
  Regs& x = g.regs();
  psp::CmdResp c{};
  c.cmd_id = cmd_id;
  fill(reinterpret_cast<uint8_t*>(&c) + offsetof(psp::CmdResp, cmd));
  cmd_.write_object(0, c);
  const uint32_t ring_dwords = uint32_t(ring_.size / 4), wptr = x.read(r::MP0_SMN_C2PMSG_67) % ring_dwords;
  psp::RingFrame f{};
  f.cmd_buf_addr_lo = uint32_t(cmd_.mc), f.cmd_buf_addr_hi = uint32_t(cmd_.mc >> 32);
  f.fence_addr_lo = uint32_t(fence_.mc), f.fence_addr_hi = uint32_t(fence_.mc >> 32), f.fence_value = ++fence_value_;
  ring_.write_object(uint64_t(wptr) * 4, f);
  g.flush_hdp();
  x.write(r::MP0_SMN_C2PMSG_67, (wptr + psp::kFrameDwords) % ring_dwords);
  uint32_t fence;
  auto signalled = [&] {
    fence = fence_.read_object<uint32_t>(0);
    return fence == fence_value_;
  };
  if (!poll(signalled, g.options().timeout))
    throw Error("PSP: " + what + ": no answer in " + std::to_string(g.options().timeout.count()) + " ms (fence " + std::to_string(fence) +
                ", waiting for " + std::to_string(fence_value_) + ")");
  auto resp = cmd_.read_object<psp::Response>(offsetof(psp::CmdResp, resp));
  if (resp.status) throw Error("PSP: " + what + " failed with status " + hex(resp.status));
  return cmd_id == psp::kCmdLoadToc ? resp.tmr_size : resp.status;
}

void Psp::load_ip(const FwBlob& b) {
  if (b.data.size() > staging_.size) throw Error("PSP: " + b.what + " is larger than the 1 MiB staging buffer");
  staging_.write(0, b.data);
  g.flush_hdp();
  submit(
      psp::kCmdLoadIpFw,
      [&](uint8_t* p) {
        uint32_t v[4] = {uint32_t(staging_.mc), uint32_t(staging_.mc >> 32), uint32_t(b.data.size()), b.type};
        std::memcpy(p, v, sizeof v);
      },
      "LOAD_IP_FW " + b.what);
}

void Psp::init_hw(bool warm) {
  if (warm) return;  // the sOS, TMR and every image are still in place
  auto t = std::chrono::steady_clock::now();
  auto ms = [&] {
    double d = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
    t = std::chrono::steady_clock::now();
    return d;
  };
  if (!sos_alive()) {
    load_bootloader_components();
    g.step("PSP", "sOS running (" + std::to_string(g.firmware().sos.size()) + " bootloader components)", ms());
  }
  create_ring();
  uint64_t tmr = kTmrMax;
  const Firmware& fw = g.firmware();
  if (!fw.toc.data.empty()) {
    fw_pri_.zero();
    fw_pri_.write(0, fw.toc.data);
    g.flush_hdp();
    tmr = submit(
        psp::kCmdLoadToc,
        [&](uint8_t* p) {
          uint32_t v[3] = {uint32_t(fw_pri_.mc), uint32_t(fw_pri_.mc >> 32), uint32_t(fw.toc.data.size())};
          std::memcpy(p, v, sizeof v);
        },
        "LOAD_TOC");
    if (tmr > kTmrMax) throw Error("PSP: the firmware asks for a TMR of " + std::to_string(tmr) + " bytes; AM reserves " + std::to_string(kTmrMax));
  }
  load_ip(fw.smu);
  submit(
      psp::kCmdSetupTmr,
      [&](uint8_t* p) {
        uint32_t v[6] = {uint32_t(tmr_.mc),    uint32_t(tmr_.mc >> 32), uint32_t(tmr),
                         psp::kTmrVirtPhyAddr, uint32_t(tmr_.offset),   uint32_t(tmr_.offset >> 32)};
        std::memcpy(p, v, sizeof v);
      },
      "SETUP_TMR");
  g.step("PSP", "TMR of " + std::to_string(tmr >> 20) + " MiB, SMU firmware loaded", ms());
  for (const FwBlob& b : fw.ip) load_ip(b);
  submit(psp::kCmdAutoloadRlc, [](uint8_t*) {}, "AUTOLOAD_RLC");
  g.step("PSP", std::to_string(fw.ip.size()) + " graphics and SDMA images loaded, RLC autoload started", ms());
}

}  // namespace ugpu::amd::am
