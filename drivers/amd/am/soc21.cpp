// SOC21 (NBIO 4.3): the doorbell aperture. Without it the GPU drops every doorbell write.
#include "drivers/amd/am/am_gpu.h"
#include "hw/amd/am11_regs.h"

namespace ugpu::amd::am {
namespace r = hw::amd::am11;

void Soc::init_hw(bool) { g.regs().write(r::RCC_DEV0_EPF0_RCC_DOORBELL_APER_EN, 1); }

}  // namespace ugpu::amd::am
