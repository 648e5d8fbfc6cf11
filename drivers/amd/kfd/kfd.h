// The way in through the kernel's amdgpu/KFD interface (`amd:kfd`): topology from sysfs, /dev/kfd
// ioctls for the VM, memory, queues and events. Every system call goes through the Os seam, so the
// same code drives a real GPU (PosixOs) and the emulated one (`emu:amd`, emu/amd/kfd/kfd_model.h).
#pragma once
#include <memory>

#include "drivers/amd/amd_device.h"
#include "drivers/amd/interface.h"
#include "sys/os.h"

namespace ugpu::amd {

// Opens the GPU; throws Error saying what is missing (no /dev/kfd, permissions, KFD version).
std::unique_ptr<AmdInterface> open_kfd_interface(std::shared_ptr<sys::Os> os, const AmdOptions& o);
// The AMD device through KFD: open_amd(open_kfd_interface(os, o), o).
std::unique_ptr<hcq::Device> open_kfd(std::shared_ptr<sys::Os> os, const AmdOptions& o = {});

}  // namespace ugpu::amd
