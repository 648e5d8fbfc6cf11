// IH v6.0 (OSSSYS 6.0): the interrupt ring in VRAM. AM takes no interrupts; the host drains the ring
// when it waits, and finds page faults, shader errors and bad packets there.
#include <cstring>

#include "drivers/amd/am/am_gpu.h"
#include "hw/amd/am11_regs.h"

namespace ugpu::amd::am {
namespace r = hw::amd::am11;

namespace {
constexpr uint64_t kRingBytes = 256 << 10;  // the most RB_SIZE allows
}

void Ih::init_sw() {
  ring_ = g.boot(kRingBytes, kRingBytes);
  wptr_ = g.boot(4096);
}

void Ih::init_hw(bool) {
  Regs& x = g.regs();
  namespace f = r::IH_RB_CNTL_fields;
  ring_.zero();
  x.write(r::IH_RB_CNTL, 0);
  x.write(r::IH_RB_BASE, uint32_t(ring_.mc >> 8)), x.write(r::IH_RB_BASE_HI, uint32_t(ring_.mc >> 40) & 0xFF);
  x.write(r::IH_RB_WPTR_ADDR_LO, uint32_t(wptr_.mc)), x.write(r::IH_RB_WPTR_ADDR_HI, uint32_t(wptr_.mc >> 32) & 0xFFFF);
  x.write(r::IH_RB_WPTR, 0), x.write(r::IH_RB_RPTR, 0), x.write(r::IH_DOORBELL_RPTR, 0);
  uint32_t cntl = 0;
  cntl = f::MC_SPACE.set(cntl, 4);  // a GPU (VMID 0) address
  cntl = f::RB_SIZE.set(cntl, 16);  // log2(256 KiB / 4)
  cntl = f::WPTR_WRITEBACK_ENABLE.set(cntl, 1), cntl = f::WPTR_OVERFLOW_ENABLE.set(cntl, 1), cntl = f::MC_SNOOP.set(cntl, 1);
  x.write(r::IH_RB_CNTL, cntl);
  x.write(r::IH_RB_CNTL, f::ENABLE_INTR.set(f::RB_ENABLE.set(cntl, 1), 1));
  rptr_ = 0;
}

void Ih::fini() noexcept {
  try {
    g.regs().write(r::IH_RB_CNTL, 0);
  } catch (const Error&) {}
}

std::vector<Ih::Entry> Ih::drain() {
  Regs& x = g.regs();
  uint32_t wreg = x.read(r::IH_RB_WPTR);
  uint32_t w = wreg & 0x3FFFC & uint32_t(kRingBytes - 1);
  std::vector<Entry> out;
  if (wreg & 1) {  // overflow: entries were lost; continue after the oldest one still there
    rptr_ = (w + 32) & uint32_t(kRingBytes - 1);
    uint32_t cntl = x.read(r::IH_RB_CNTL);
    x.write(r::IH_RB_CNTL, r::IH_RB_CNTL_fields::WPTR_OVERFLOW_CLEAR.set(cntl, 1));
    x.write(r::IH_RB_CNTL, cntl);
  }
  while (rptr_ != w) {
    uint32_t e[8];
    ring_.read(rptr_, {reinterpret_cast<uint8_t*>(e), 32});
    Entry en;
    en.client = e[0] & 0xFF, en.src = (e[0] >> 8) & 0xFF, en.ring_id = (e[0] >> 16) & 0xFF;
    std::memcpy(en.data, e + 4, 16);
    out.push_back(en);
    rptr_ = (rptr_ + 32) & uint32_t(kRingBytes - 1);
  }
  if (!out.empty()) x.write(r::IH_RB_RPTR, rptr_);
  return out;
}

}  // namespace ugpu::amd::am
