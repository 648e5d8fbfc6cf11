// SMU v13.0 (MP1): the message mailbox — the driver table, features on, and the mode-1 reset that
// returns a GPU some other driver (or a crashed run) left running to its boot state.
#include <thread>

#include "common/error.h"
#include "common/hex.h"
#include "drivers/amd/am/am_gpu.h"
#include "hw/amd/am11_regs.h"
#include "hw/amd/psp.h"

namespace ugpu::amd::am {
namespace r = hw::amd::am11;

namespace {
// smu_v13_0_0_ppsmc.h.
constexpr uint32_t kGetSmuVersion = 0x02, kEnableAllSmuFeatures = 0x06, kSetDriverDramAddrHigh = 0x0E, kSetDriverDramAddrLow = 0x0F,
                   kMode1Reset = 0x2F;
const char* response_name(uint32_t v) {
  switch (v) {
    case 0xFF: return "failed";
    case 0xFE: return "unknown message";
    case 0xFD: return "rejected: prerequisites not met";
    case 0xFC: return "rejected: busy";
  }
  return "unexpected response";
}
}  // namespace

void Smu::init_sw() { table_ = g.boot(0x4000); }

void Smu::post(uint32_t msg, uint32_t param) {
  Regs& x = g.regs();
  x.write(r::MP1_SMN_C2PMSG_90, 0);
  x.write(r::MP1_SMN_C2PMSG_82, param);
  x.write(r::MP1_SMN_C2PMSG_66, msg);
}

uint32_t Smu::send(uint32_t msg, uint32_t param, const char* what) {
  Regs& x = g.regs();
  const auto timeout = g.options().timeout;
  post(msg, param);
  uint32_t resp;
  if (!x.poll(r::MP1_SMN_C2PMSG_90, [](uint32_t v) { return v != 0; }, timeout, resp))
    throw Error(std::string("SMU: ") + what + " (message " + hex(msg) + "): no answer in " + std::to_string(timeout.count()) +
                " ms (MP1 C2PMSG_90 stays 0); the SMU firmware is not running — was it loaded through the PSP?");
  if (resp != 1)
    throw Error(std::string("SMU: ") + what + " (message " + hex(msg) + ", argument " + hex(param) + ") answered " + hex(resp) + ": " +
                response_name(resp));
  return x.read(r::MP1_SMN_C2PMSG_82);
}

void Smu::mode1_reset() {
  post(kMode1Reset, 0);
  // The GPU comes back with the PSP in its bootloader; registers are not to be touched for a while.
  std::this_thread::sleep_for(g.options().reset_settle);
  g.regs().wait(r::MP0_SMN_C2PMSG_81, 0xFFFFFFFF, 0, g.options().timeout, "mode-1 reset: waiting for the PSP to return to its bootloader");
}

void Smu::init_hw(bool warm) {
  if (warm) {
    send(kGetSmuVersion, 0, "GetSmuVersion");
    return;
  }
  send(kSetDriverDramAddrHigh, uint32_t(table_.mc >> 32), "SetDriverDramAddrHigh");
  send(kSetDriverDramAddrLow, uint32_t(table_.mc), "SetDriverDramAddrLow");
  send(kEnableAllSmuFeatures, 0, "EnableAllSmuFeatures");
  uint32_t v = send(kGetSmuVersion, 0, "GetSmuVersion");
  g.step("SMU", "firmware " + std::to_string(v >> 16 & 0xFF) + "." + std::to_string(v >> 8 & 0xFF) + "." + std::to_string(v & 0xFF));
}

}  // namespace ugpu::amd::am
