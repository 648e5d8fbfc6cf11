// The AMD device with no kernel driver (`amd:pci`, `emu:amd:pci`; docs/amd.md §AM): AmGpu's bring-up
// (am_gpu.h) under the shared AmdDevice, through the PciDevice seam.
#pragma once
#include <memory>

#include "drivers/amd/am/am_gpu.h"
#include "drivers/amd/amd_device.h"
#include "drivers/amd/interface.h"
#include "sys/usb.h"

namespace ugpu::amd {

// Boots the GPU (or warm-starts it) and returns the way in; throws Error naming what failed.
std::unique_ptr<AmdInterface> open_am_interface(std::shared_ptr<sys::Os> os, const AmdOptions& o, const am::AmOptions& am);
std::unique_ptr<hcq::Device> open_am(std::shared_ptr<sys::Os> os, const AmdOptions& o, const am::AmOptions& am = {});
// The GPU behind an ASM24xx USB bridge (amd:usb, emu:amd:usb): the bridge on `usb`, the AM bring-up
// over it, copies through the bridge's SRAM. `os` gives the firmware files.
// The boot alone (what `ugpu bringup` shows), the bridge kept alive by the AmGpu.
std::shared_ptr<am::AmGpu> boot_am_usb(std::shared_ptr<sys::Os> os, std::shared_ptr<sys::UsbTransport> usb, const am::AmOptions& am);
std::unique_ptr<hcq::Device> open_am_usb(std::shared_ptr<sys::Os> os, std::shared_ptr<sys::UsbTransport> usb, const AmdOptions& o,
                                         const am::AmOptions& am = {});
// The way in over a booted GPU, with the bridge's memory where it sits behind the USB bridge.
std::unique_ptr<AmdInterface> am_interface(std::shared_ptr<am::AmGpu> g, const AmdOptions& o, std::unique_ptr<AmdInterface::BridgeMemory> bridge);

}  // namespace ugpu::amd
