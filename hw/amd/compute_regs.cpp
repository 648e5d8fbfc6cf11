#include "hw/amd/compute_regs.h"

#include <string>

#include "common/error.h"
#include "hw/amd/gfx11_regs.h"

namespace ugpu::hw::amd {
namespace {
constexpr ComputeRegisters kGfx11 = {
    "gfx11",
    11,
    gfx11::COMPUTE_PGM_LO,
    gfx11::COMPUTE_PGM_RSRC1,
    gfx11::COMPUTE_PGM_RSRC3,
    gfx11::COMPUTE_TMPRING_SIZE,
    gfx11::COMPUTE_DISPATCH_SCRATCH_BASE_LO,
    gfx11::COMPUTE_RESTART_X,
    gfx11::COMPUTE_USER_DATA_0,
    gfx11::COMPUTE_RESOURCE_LIMITS,
    gfx11::COMPUTE_START_X,
    gfx11::BIF_BX_PF0_GPU_HDP_FLUSH_REQ,
    gfx11::BIF_BX_PF0_GPU_HDP_FLUSH_DONE,
    gfx11::COMPUTE_TMPRING_SIZE_fields::WAVES,
    gfx11::COMPUTE_TMPRING_SIZE_fields::WAVESIZE,
    gfx11::COMPUTE_DISPATCH_INITIATOR_fields::COMPUTE_SHADER_EN,
    gfx11::COMPUTE_DISPATCH_INITIATOR_fields::FORCE_START_AT_000,
    gfx11::COMPUTE_DISPATCH_INITIATOR_fields::CS_W32_EN,
};
constexpr const ComputeRegisters* kGenerations[] = {&kGfx11};
}  // namespace

const ComputeRegisters& compute_registers(uint32_t gfx_target_version) {
  const uint32_t major = gfx_target_version / 10000;
  std::string have;
  for (const ComputeRegisters* g : kGenerations) {
    if (g->gc_major == major) return *g;
    have += std::string(have.empty() ? "" : ", ") + g->generation;
  }
  throw Error("no compute register table for GC " + std::to_string(major) + " (gfx_target_version " + std::to_string(gfx_target_version) +
              "); ugpu has: " + have);
}

}  // namespace ugpu::hw::amd
