// GFX v11 (GC 11.0): after RLC autoload, the GC hub, the MEC (RS64 program counter from the firmware
// header, pipe 0 running), shader memory apertures, doorbell routing, and the compute queue, which AM
// creates by writing its MQD straight into the HQD registers of ME1 pipe 0 queue 0 — no KIQ, no MES.
#include <bit>
#include <cstring>

#include "common/error.h"
#include "common/hex.h"
#include "drivers/amd/am/am_gpu.h"
#include "hw/amd/am11_regs.h"

namespace ugpu::amd::am {
namespace r = hw::amd::am11;
namespace mqd = hw::amd::am11::mqd;

namespace {
constexpr uint64_t kEopBytes = 4096;
// S2A doorbell routing (NBIO 4.3, amdgpu's nbio_v4_3_gc_doorbell_init): port 0 and port 3 to GC.
constexpr uint32_t kS2aPort0Gc = 0x30000007, kS2aPort3Gc = 0x3000000D;
}  // namespace

void Gfx::init_sw() {
  mqd_ = g.boot(mqd::kDwords * 4);
  eop_ = g.boot(kEopBytes, kEopBytes);
}

void Gfx::select(uint32_t me, uint32_t pipe, uint32_t queue, uint32_t vmid) {
  namespace f = r::GRBM_GFX_CNTL_fields;
  g.regs().write(r::GRBM_GFX_CNTL, f::MEID.set(f::PIPEID.set(f::QUEUEID.set(f::VMID.set(0, vmid), queue), pipe), me));
}

void Gfx::start_mec() {
  Regs& x = g.regs();
  namespace f = r::CP_MEC_RS64_CNTL_fields;
  uint64_t start = g.firmware().mec_start;  // a byte address; the registers take dwords
  select(1, 0, 0);
  x.write(r::CP_MEC_RS64_PRGRM_CNTR_START, uint32_t(start >> 2));
  x.write(r::CP_MEC_RS64_PRGRM_CNTR_START_HI, uint32_t(start >> 34));
  select(0, 0, 0);
  uint32_t cntl = x.read(r::CP_MEC_RS64_CNTL);
  x.write(r::CP_MEC_RS64_CNTL, f::MEC_PIPE0_RESET.set(cntl, 1));
  cntl = f::MEC_HALT.set(f::MEC_PIPE0_ACTIVE.set(f::MEC_PIPE0_RESET.set(cntl, 0), 1), 0);
  x.write(r::CP_MEC_RS64_CNTL, cntl);
}

void Gfx::init_hw(bool warm) {
  Regs& x = g.regs();
  const auto timeout = g.options().timeout;
  x.wait(r::CP_STAT, 0xFFFFFFFF, 0, timeout, "GFX: waiting for RLC autoload (CP_STAT idle)");
  x.wait(r::RLC_RLCS_BOOTLOAD_STATUS, 0x80000000u, 0x80000000u, timeout, "GFX: waiting for RLC autoload (BOOTLOAD_COMPLETE)");
  g.gmc().init_gc_hub();
  if (warm) reset_mec();  // whatever a previous run left on the queue
  else start_mec();
  x.write(r::GRBM_CNTL, (x.read(r::GRBM_CNTL) & ~0xFFu) | 0xFF);  // READ_TIMEOUT
  for (uint32_t vmid = 0; vmid < 16; ++vmid) {
    select(0, 0, 0, vmid);
    x.write(r::SH_MEM_CONFIG, 0xC00C);     // 64-bit addresses, unaligned access allowed, instruction prefetch
    x.write(r::SH_MEM_BASES, 0x00010002);  // LDS aperture at 1 << 48, scratch at 2 << 48
  }
  select(0, 0, 0);
  x.write(r::CP_MEC_DOORBELL_RANGE_LOWER, 0);
  x.write(r::CP_MEC_DOORBELL_RANGE_UPPER, 0x450);
  x.write(r::S2A_DOORBELL_ENTRY_0_CTRL, kS2aPort0Gc);
  x.write(r::S2A_DOORBELL_ENTRY_3_CTRL, kS2aPort3Gc);
}

uint64_t Gfx::start_queue(const QueueRing& q) {
  if (queue_active_) throw Error(g.name() + ": AM runs one compute queue (ME1 pipe 0 queue 0), and it is in use");
  if (!std::has_single_bit(q.ring_bytes) || q.ring_bytes < 4096 || q.ring_va % 256)
    throw Error(g.name() + ": a compute ring must be a power of two of at least 4 KiB, 256-byte aligned (" + std::to_string(q.ring_bytes) + " at " +
                hex(q.ring_va) + ")");
  Regs& x = g.regs();
  std::vector<uint32_t> m(mqd::kDwords, 0);
  m[mqd::header] = 0xC0310800;
  for (uint32_t se : {mqd::compute_static_thread_mgmt_se0, mqd::compute_static_thread_mgmt_se1, mqd::compute_static_thread_mgmt_se2,
                      mqd::compute_static_thread_mgmt_se3})
    m[se] = 0xFFFFFFFF;
  m[mqd::cp_mqd_base_addr_lo] = uint32_t(mqd_.mc), m[mqd::cp_mqd_base_addr_hi] = uint32_t(mqd_.mc >> 32);
  m[mqd::cp_hqd_persistent_state] = 0x0BE05501;  // PRELOAD_SIZE 0x55
  m[mqd::cp_hqd_queue_priority] = 0xF;
  m[mqd::cp_hqd_quantum] = 0x111;
  m[mqd::cp_hqd_pq_base_lo] = uint32_t(q.ring_va >> 8), m[mqd::cp_hqd_pq_base_hi] = uint32_t(q.ring_va >> 40);
  m[mqd::cp_hqd_pq_rptr_report_addr_lo] = uint32_t(q.rptr_va) & ~3u, m[mqd::cp_hqd_pq_rptr_report_addr_hi] = uint32_t(q.rptr_va >> 32) & 0xFFFF;
  m[mqd::cp_hqd_pq_wptr_poll_addr_lo] = uint32_t(q.wptr_va) & ~3u, m[mqd::cp_hqd_pq_wptr_poll_addr_hi] = uint32_t(q.wptr_va >> 32) & 0xFFFF;
  namespace db = r::CP_HQD_PQ_DOORBELL_CONTROL_fields;
  m[mqd::cp_hqd_pq_doorbell_control] = db::DOORBELL_EN.set(db::DOORBELL_OFFSET.set(0, uint32_t(kDoorbellMecRing0 * 2)), 1);
  namespace pq = r::CP_HQD_PQ_CONTROL_fields;
  uint32_t pqc = pq::QUEUE_SIZE.set(0, uint32_t(std::countr_zero(q.ring_bytes / 4) - 1));
  pqc = pq::RPTR_BLOCK_SIZE.set(pqc, 5), pqc = pq::UNORD_DISPATCH.set(pqc, 1), pqc = pq::PRIV_STATE.set(pqc, 1), pqc = pq::KMD_QUEUE.set(pqc, 1);
  m[mqd::cp_hqd_pq_control] = pqc;
  m[mqd::cp_hqd_ib_control] = 0x00300000;  // MIN_IB_AVAIL_SIZE 3
  m[mqd::cp_mqd_control] = 0x100;          // PRIV_STATE
  m[mqd::cp_hqd_eop_base_addr_lo] = uint32_t(eop_.mc >> 8), m[mqd::cp_hqd_eop_base_addr_hi] = uint32_t(eop_.mc >> 40);
  m[mqd::cp_hqd_eop_control] = uint32_t(std::countr_zero(kEopBytes / 4) - 1);
  mqd_.write(0, {reinterpret_cast<const uint8_t*>(m.data()), m.size() * 4});
  g.flush_hdp();
  // MQD dwords from cp_mqd_base_addr_lo on are the HQD registers, CP_MQD_BASE_ADDR .. CP_HQD_PQ_WPTR_HI, in order.
  select(1, 0, 0);
  const uint32_t first = x.addr(r::CP_MQD_BASE_ADDR), count = x.addr(r::CP_HQD_PQ_WPTR_HI) - first + 1;
  for (uint32_t i = 0; i < count; ++i) x.write(first + i, m[mqd::cp_mqd_base_addr_lo + i]);
  x.write(r::CP_HQD_ACTIVE, 1);
  select(0, 0, 0);
  g.flush_hdp();
  queue_active_ = true;
  return kDoorbellMecRing0 * 8;
}

void Gfx::stop_queue() noexcept {
  try {
    Regs& x = g.regs();
    select(1, 0, 0);
    if (x.read(r::CP_HQD_ACTIVE) & 1) {
      x.write(r::CP_HQD_DEQUEUE_REQUEST, 2);  // reset the waves, then let the queue go
      x.write(r::SPI_COMPUTE_QUEUE_RESET, 1);
      x.wait(r::CP_HQD_ACTIVE, 1, 0, g.options().timeout, "GFX: dequeueing the compute queue");
      x.write(r::CP_HQD_DEQUEUE_REQUEST, 0);
    }
    select(0, 0, 0);
  } catch (const Error&) {  // the device is gone or wedged: the next run resets it
  }
  queue_active_ = false;
}

void Gfx::reset_mec() {
  stop_queue();
  Regs& x = g.regs();
  namespace sr = r::GRBM_SOFT_RESET_fields;
  x.write(r::GRBM_SOFT_RESET, sr::SOFT_RESET_CPC.set(sr::SOFT_RESET_CP.set(0, 1), 1));
  x.write(r::GRBM_SOFT_RESET, 0);
  start_mec();
}

void Gfx::fini() noexcept { stop_queue(); }

}  // namespace ugpu::amd::am
