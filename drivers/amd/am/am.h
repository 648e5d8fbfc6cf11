// The AMD device with no kernel driver (`amd:pci`, `emu:amd:pci`; docs/amd.md §AM): AmGpu's bring-up
// (am_gpu.h) under the shared AmdDevice, through the PciDevice seam.
#pragma once
#include <memory>

#include "drivers/amd/am/am_gpu.h"
#include "drivers/amd/amd_device.h"
#include "drivers/amd/interface.h"

namespace ugpu::amd {

// Boots the GPU (or warm-starts it) and returns the way in; throws Error naming what failed.
std::unique_ptr<AmdInterface> open_am_interface(std::shared_ptr<sys::Os> os, const AmdOptions& o, const am::AmOptions& am);
std::unique_ptr<hcq::Device> open_am(std::shared_ptr<sys::Os> os, const AmdOptions& o, const am::AmOptions& am = {});

}  // namespace ugpu::amd
