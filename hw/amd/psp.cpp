#include "hw/amd/psp.h"

#include <iterator>

#include "hw/amd/ucode.h"

namespace ugpu::hw::amd {

const char* psp::fw_type_name(uint32_t t) {
  switch (t) {
    case kFwRlcV: return "RLC_V";
    case kFwRlcG: return "RLC_G";
    case kFwSmu: return "SMU";
    case kFwRlcRestoreListGpmMem: return "RLC_RESTORE_LIST_GPM_MEM";
    case kFwRlcRestoreListSrmMem: return "RLC_RESTORE_LIST_SRM_MEM";
    case kFwRlcP: return "RLC_P";
    case kFwRlcIram: return "RLC_IRAM";
    case kFwRlcDramBoot: return "RLC_DRAM_BOOT";
    case kFwRegList: return "REG_LIST";
    case kFwImuI: return "IMU_I";
    case kFwImuD: return "IMU_D";
    case kFwSdmaTh0: return "SDMA_UCODE_TH0";
    case kFwSdmaTh1: return "SDMA_UCODE_TH1";
    case kFwRs64Pfp: return "RS64_PFP";
    case kFwRs64Me: return "RS64_ME";
    case kFwRs64Mec: return "RS64_MEC";
    case kFwRs64PfpP0Stack: return "RS64_PFP_P0_STACK";
    case kFwRs64PfpP1Stack: return "RS64_PFP_P1_STACK";
    case kFwRs64MeP0Stack: return "RS64_ME_P0_STACK";
    case kFwRs64MeP1Stack: return "RS64_ME_P1_STACK";
    case kFwRs64MecP0Stack: return "RS64_MEC_P0_STACK";
    case kFwRs64MecP1Stack: return "RS64_MEC_P1_STACK";
    case kFwRs64MecP2Stack: return "RS64_MEC_P2_STACK";
    case kFwRs64MecP3Stack: return "RS64_MEC_P3_STACK";
  }
  return nullptr;
}

const char* ucode::psp_fw_type_name(uint32_t t) {
  constexpr const char* names[] = {"UNKNOWN", "SOS", "SYS_DRV", "KDB", "TOC", "SPL", "RL", "SOC_DRV", "INTF_DRV", "DBG_DRV", "RAS_DRV"};
  return t < std::size(names) ? names[t] : nullptr;
}

}  // namespace ugpu::hw::amd
