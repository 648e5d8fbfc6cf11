// SDMA v6.0: the copy engine's first instance, started after RLC autoload brought its firmware up, and
// its queue 0 programmed by register (ring, pointers' write-back and poll addresses, doorbell).
#include <bit>

#include "common/error.h"
#include "common/hex.h"
#include "drivers/amd/am/am_gpu.h"
#include "hw/amd/am11_regs.h"

namespace ugpu::amd::am {
namespace r = hw::amd::am11;

void Sdma::init_hw(bool warm) {
  Regs& x = g.regs();
  if (warm) stop_queue();
  x.write(r::SDMA0_WATCHDOG_CNTL, (x.read(r::SDMA0_WATCHDOG_CNTL) & ~0xFFu) | 100);  // QUEUE_HANG_COUNT: 10 s
  // UTCL1: RESP_MODE 3 (bits 9-10), REDO_DELAY 9 (bits 0-4); reads no-alloc, writes bypass, LLC no-alloc.
  x.write(r::SDMA0_UTCL1_CNTL, (x.read(r::SDMA0_UTCL1_CNTL) & ~0x61Fu) | 3u << 9 | 9u);
  x.write(r::SDMA0_UTCL1_PAGE, (x.read(r::SDMA0_UTCL1_PAGE) & ~0xF000u) | 2u << 12 | 3u << 14 | 1u << 24);
  namespace f = r::SDMA0_F32_CNTL_fields;
  x.write(r::SDMA0_F32_CNTL, f::TH1_RESET.set(f::HALT.set(x.read(r::SDMA0_F32_CNTL), 0), 0));
  x.write(r::SDMA0_CNTL, r::SDMA0_CNTL_fields::TRAP_ENABLE.set(x.read(r::SDMA0_CNTL), 1));
  namespace s2a = r::S2A_DOORBELL_ENTRY_0_CTRL_fields;  // every port has this layout
  uint32_t port = s2a::S2A_DOORBELL_PORT0_ENABLE.set(0, 1);
  port = s2a::S2A_DOORBELL_PORT0_AWID.set(port, 0xE), port = s2a::S2A_DOORBELL_PORT0_RANGE_OFFSET.set(port, uint32_t(kDoorbellSdma0 * 2));
  port = s2a::S2A_DOORBELL_PORT0_RANGE_SIZE.set(port, 4), port = s2a::S2A_DOORBELL_PORT0_AWADDR_31_28_VALUE.set(port, 3);
  x.write(r::S2A_DOORBELL_ENTRY_2_CTRL, port);
}

uint64_t Sdma::start_queue(const QueueRing& q) {
  if (!std::has_single_bit(q.ring_bytes) || q.ring_bytes < 4096 || q.ring_va % 256)
    throw Error(g.name() + ": an SDMA ring must be a power of two of at least 4 KiB, 256-byte aligned (" + std::to_string(q.ring_bytes) + " at " +
                hex(q.ring_va) + ")");
  Regs& x = g.regs();
  x.write(r::SDMA0_QUEUE0_MINOR_PTR_UPDATE, 1);
  x.write(r::SDMA0_QUEUE0_RB_RPTR, 0), x.write(r::SDMA0_QUEUE0_RB_RPTR_HI, 0);
  x.write(r::SDMA0_QUEUE0_RB_WPTR, 0), x.write(r::SDMA0_QUEUE0_RB_WPTR_HI, 0);
  x.write(r::SDMA0_QUEUE0_RB_BASE, uint32_t(q.ring_va >> 8)), x.write(r::SDMA0_QUEUE0_RB_BASE_HI, uint32_t(q.ring_va >> 40));
  x.write(r::SDMA0_QUEUE0_RB_RPTR_ADDR_LO, uint32_t(q.rptr_va) & ~3u), x.write(r::SDMA0_QUEUE0_RB_RPTR_ADDR_HI, uint32_t(q.rptr_va >> 32));
  x.write(r::SDMA0_QUEUE0_RB_WPTR_POLL_ADDR_LO, uint32_t(q.wptr_va) & ~3u), x.write(r::SDMA0_QUEUE0_RB_WPTR_POLL_ADDR_HI, uint32_t(q.wptr_va >> 32));
  x.write(r::SDMA0_QUEUE0_DOORBELL_OFFSET, uint32_t(kDoorbellSdma0 * 2) << 2);
  x.write(r::SDMA0_QUEUE0_DOORBELL, r::SDMA0_QUEUE0_DOORBELL_fields::ENABLE.set(0, 1));
  x.write(r::SDMA0_QUEUE0_MINOR_PTR_UPDATE, 0);
  namespace f = r::SDMA0_QUEUE0_RB_CNTL_fields;
  uint32_t cntl = f::RB_SIZE.set(0, uint32_t(std::countr_zero(q.ring_bytes / 4)));
  cntl = f::RPTR_WRITEBACK_ENABLE.set(cntl, 1), cntl = f::RPTR_WRITEBACK_TIMER.set(cntl, 4), cntl = f::F32_WPTR_POLL_ENABLE.set(cntl, 1);
  cntl = f::RB_PRIV.set(cntl, 1);
  x.write(r::SDMA0_QUEUE0_RB_CNTL, cntl);
  x.write(r::SDMA0_QUEUE0_RB_CNTL, f::RB_ENABLE.set(cntl, 1));
  x.write(r::SDMA0_QUEUE0_IB_CNTL, r::SDMA0_QUEUE0_IB_CNTL_fields::IB_ENABLE.set(x.read(r::SDMA0_QUEUE0_IB_CNTL), 1));
  return kDoorbellSdma0 * 8;
}

void Sdma::stop_queue() noexcept {
  try {
    Regs& x = g.regs();
    namespace f = r::SDMA0_QUEUE0_RB_CNTL_fields;
    x.write(r::SDMA0_QUEUE0_RB_CNTL, f::RB_ENABLE.set(x.read(r::SDMA0_QUEUE0_RB_CNTL), 0));
    x.write(r::SDMA0_QUEUE0_IB_CNTL, r::SDMA0_QUEUE0_IB_CNTL_fields::IB_ENABLE.set(x.read(r::SDMA0_QUEUE0_IB_CNTL), 0));
  } catch (const Error&) {}
}

void Sdma::fini() noexcept { stop_queue(); }

}  // namespace ugpu::amd::am
