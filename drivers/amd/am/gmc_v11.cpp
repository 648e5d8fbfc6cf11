// GMC v11 (GC hub 11.0, MM hub 3.0): the FB and system apertures, VMID 0's four-level page tables
// (drivers/amd/am/memory.cpp writes them), L1/L2 TLB setup, fault reporting, and TLB invalidation
// through engine 17 of each hub. The MM hub comes up with the other early blocks; the GC hub only after
// RLC autoload, when the graphics block answers.
#include "common/error.h"
#include "common/hex.h"
#include "drivers/amd/am/am_gpu.h"
#include "hw/amd/am11_regs.h"

namespace ugpu::amd::am {
namespace r = hw::amd::am11;
using hw::amd::Register;

namespace {
// The registers one hub programs, GC's and MM's side by side.
struct Hub {
  Register agp_base, agp_bot, agp_top, ap_low, ap_high, default_lsb, default_msb, fault_default_lo, fault_default_hi, l1_tlb, l2_cntl, l2_cntl2,
      l2_cntl3, l2_cntl4, l2_cntl5, ident_low_lo, ident_low_hi, ident_high_lo, ident_high_hi, ident_off_lo, ident_off_hi, start_lo, start_hi, end_lo,
      end_hi, base_lo, base_hi, ctx_cntl, fault_cntl, inv_req, inv_ack;
};
const Hub kGc{r::GCMC_VM_AGP_BASE,
              r::GCMC_VM_AGP_BOT,
              r::GCMC_VM_AGP_TOP,
              r::GCMC_VM_SYSTEM_APERTURE_LOW_ADDR,
              r::GCMC_VM_SYSTEM_APERTURE_HIGH_ADDR,
              r::GCMC_VM_SYSTEM_APERTURE_DEFAULT_ADDR_LSB,
              r::GCMC_VM_SYSTEM_APERTURE_DEFAULT_ADDR_MSB,
              r::GCVM_L2_PROTECTION_FAULT_DEFAULT_ADDR_LO32,
              r::GCVM_L2_PROTECTION_FAULT_DEFAULT_ADDR_HI32,
              r::GCMC_VM_MX_L1_TLB_CNTL,
              r::GCVM_L2_CNTL,
              r::GCVM_L2_CNTL2,
              r::GCVM_L2_CNTL3,
              r::GCVM_L2_CNTL4,
              r::GCVM_L2_CNTL5,
              r::GCVM_L2_CONTEXT1_IDENTITY_APERTURE_LOW_ADDR_LO32,
              r::GCVM_L2_CONTEXT1_IDENTITY_APERTURE_LOW_ADDR_HI32,
              r::GCVM_L2_CONTEXT1_IDENTITY_APERTURE_HIGH_ADDR_LO32,
              r::GCVM_L2_CONTEXT1_IDENTITY_APERTURE_HIGH_ADDR_HI32,
              r::GCVM_L2_CONTEXT_IDENTITY_PHYSICAL_OFFSET_LO32,
              r::GCVM_L2_CONTEXT_IDENTITY_PHYSICAL_OFFSET_HI32,
              r::GCVM_CONTEXT0_PAGE_TABLE_START_ADDR_LO32,
              r::GCVM_CONTEXT0_PAGE_TABLE_START_ADDR_HI32,
              r::GCVM_CONTEXT0_PAGE_TABLE_END_ADDR_LO32,
              r::GCVM_CONTEXT0_PAGE_TABLE_END_ADDR_HI32,
              r::GCVM_CONTEXT0_PAGE_TABLE_BASE_ADDR_LO32,
              r::GCVM_CONTEXT0_PAGE_TABLE_BASE_ADDR_HI32,
              r::GCVM_CONTEXT0_CNTL,
              r::GCVM_L2_PROTECTION_FAULT_CNTL,
              r::GCVM_INVALIDATE_ENG17_REQ,
              r::GCVM_INVALIDATE_ENG17_ACK};
const Hub kMm{r::MMMC_VM_AGP_BASE,
              r::MMMC_VM_AGP_BOT,
              r::MMMC_VM_AGP_TOP,
              r::MMMC_VM_SYSTEM_APERTURE_LOW_ADDR,
              r::MMMC_VM_SYSTEM_APERTURE_HIGH_ADDR,
              r::MMMC_VM_SYSTEM_APERTURE_DEFAULT_ADDR_LSB,
              r::MMMC_VM_SYSTEM_APERTURE_DEFAULT_ADDR_MSB,
              r::MMVM_L2_PROTECTION_FAULT_DEFAULT_ADDR_LO32,
              r::MMVM_L2_PROTECTION_FAULT_DEFAULT_ADDR_HI32,
              r::MMMC_VM_MX_L1_TLB_CNTL,
              r::MMVM_L2_CNTL,
              r::MMVM_L2_CNTL2,
              r::MMVM_L2_CNTL3,
              r::MMVM_L2_CNTL4,
              r::MMVM_L2_CNTL5,
              r::MMVM_L2_CONTEXT1_IDENTITY_APERTURE_LOW_ADDR_LO32,
              r::MMVM_L2_CONTEXT1_IDENTITY_APERTURE_LOW_ADDR_HI32,
              r::MMVM_L2_CONTEXT1_IDENTITY_APERTURE_HIGH_ADDR_LO32,
              r::MMVM_L2_CONTEXT1_IDENTITY_APERTURE_HIGH_ADDR_HI32,
              r::MMVM_L2_CONTEXT_IDENTITY_PHYSICAL_OFFSET_LO32,
              r::MMVM_L2_CONTEXT_IDENTITY_PHYSICAL_OFFSET_HI32,
              r::MMVM_CONTEXT0_PAGE_TABLE_START_ADDR_LO32,
              r::MMVM_CONTEXT0_PAGE_TABLE_START_ADDR_HI32,
              r::MMVM_CONTEXT0_PAGE_TABLE_END_ADDR_LO32,
              r::MMVM_CONTEXT0_PAGE_TABLE_END_ADDR_HI32,
              r::MMVM_CONTEXT0_PAGE_TABLE_BASE_ADDR_LO32,
              r::MMVM_CONTEXT0_PAGE_TABLE_BASE_ADDR_HI32,
              r::MMVM_CONTEXT0_CNTL,
              r::MMVM_L2_PROTECTION_FAULT_CNTL,
              r::MMVM_INVALIDATE_ENG17_REQ,
              r::MMVM_INVALIDATE_ENG17_ACK};

// VMID 0, legacy flush, L2 PTEs and PDE0-2 and L1 PTEs (gfxhub_v3_0 get_invalidate_req).
constexpr uint32_t kInvalidateVmid0 = 0x00F80001;
// GC hub client ids of VM_L2_PROTECTION_FAULT_STATUS.CID (gfxhub_v3_0.c).
const char* gc_client(uint32_t cid) {
  static const char* names[] = {
      "CB/DB",      "?",   "GE1", "GE2",   "CPF",   "CPC", "CPG",   "RLC",  "TCP (a shader's memory access)", "SQC (instructions)",
      "SQC (data)", "SQG", "?",   "SDMA0", "SDMA1", "GCR", "SDMA2", "SDMA3"};
  return cid < std::size(names) ? names[cid] : "?";
}
}  // namespace

void Gmc::init_sw() { dummy_ = g.boot(4096); }

void Gmc::init_hub(bool gc) {
  const Hub& h = gc ? kGc : kMm;
  Regs& x = g.regs();
  const uint64_t fb = g.fb_base(), fb_end = fb + g.memory().vram().bytes - 1;
  x.write(h.agp_base, 0), x.write(h.agp_bot, 0xFFFFFF), x.write(h.agp_top, 0);  // AGP off (BOT above TOP)
  x.write(h.ap_low, uint32_t(fb >> 18)), x.write(h.ap_high, uint32_t(fb_end >> 18));
  x.write(h.default_lsb, uint32_t(dummy_.offset >> 12)), x.write(h.default_msb, uint32_t(dummy_.offset >> 44));
  x.write(h.fault_default_lo, uint32_t(dummy_.offset >> 12)), x.write(h.fault_default_hi, uint32_t(dummy_.offset >> 44));
  x.write(h.l1_tlb, 0x1859);  // L1 TLB on, system access mode 3 (aperture then VM), advanced driver model, MTYPE UC
  x.write(h.l2_cntl, 0x00080E01), x.write(h.l2_cntl2, 0x3), x.write(h.l2_cntl3, 0x80130009), x.write(h.l2_cntl4, 1), x.write(h.l2_cntl5, 0x3FE0);
  x.write(h.ident_low_lo, 0xFFFFFFFF), x.write(h.ident_low_hi, 0xF), x.write(h.ident_high_lo, 0), x.write(h.ident_high_hi, 0);
  x.write(h.ident_off_lo, 0), x.write(h.ident_off_hi, 0);
  const uint64_t start = AmGpu::kTableStart >> 12, end = AmGpu::kTableEnd >> 12, root = g.memory().root() | 1;
  x.write(h.start_lo, uint32_t(start)), x.write(h.start_hi, uint32_t(start >> 32));
  x.write(h.end_lo, uint32_t(end)), x.write(h.end_hi, uint32_t(end >> 32));
  x.write(h.base_lo, uint32_t(root)), x.write(h.base_hi, uint32_t(root >> 32));
  // Enabled, depth 3 (four levels), 4 KiB tables, every fault interrupts and goes to the default page.
  x.write(h.ctx_cntl, 0x01FFFE07);
  x.write(h.fault_cntl, 0x3FFFFFFC);
  if (gc) gc_ready_ = true;
}

void Gmc::init_hw(bool) { init_hub(false); }
void Gmc::init_gc_hub() {
  init_hub(true);
  flush_tlb();
}

void Gmc::flush_tlb() {
  Regs& x = g.regs();
  g.flush_hdp();
  const auto timeout = g.options().timeout;
  if (gc_ready_) {
    x.write(r::GCVM_INVALIDATE_ENG17_REQ, kInvalidateVmid0);
    x.wait(r::GCVM_INVALIDATE_ENG17_ACK, 1, 1, timeout, "GC hub TLB invalidation");
  }
  x.wait(r::MMVM_INVALIDATE_ENG17_SEM, 1, 1, timeout, "MM hub invalidation semaphore");
  x.write(r::MMVM_INVALIDATE_ENG17_REQ, kInvalidateVmid0);
  x.wait(r::MMVM_INVALIDATE_ENG17_ACK, 1, 1, timeout, "MM hub TLB invalidation");
  x.write(r::MMVM_INVALIDATE_ENG17_SEM, 0);
  x.write(r::MMVM_L2_BANK_SELECT_RESERVED_CID2, x.read(r::MMVM_L2_BANK_SELECT_RESERVED_CID2) | 1u << 25);
}

std::optional<Gmc::Fault> Gmc::take_fault() {
  Regs& x = g.regs();
  uint32_t status = x.read(r::GCVM_L2_PROTECTION_FAULT_STATUS);
  if (!status) return std::nullopt;
  namespace f = r::GCVM_L2_PROTECTION_FAULT_STATUS_fields;
  Fault out;
  out.status = status;
  out.address = (uint64_t(x.read(r::GCVM_L2_PROTECTION_FAULT_ADDR_HI32) & 0xF) << 32 | x.read(r::GCVM_L2_PROTECTION_FAULT_ADDR_LO32)) << 12;
  out.write = f::RW.get(status);
  out.client = gc_client(f::CID.get(status));
  x.write(r::GCVM_L2_PROTECTION_FAULT_CNTL, x.read(r::GCVM_L2_PROTECTION_FAULT_CNTL) | 1);  // clear the latched status
  return out;
}

}  // namespace ugpu::amd::am
