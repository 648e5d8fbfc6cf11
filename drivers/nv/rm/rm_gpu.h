// The way in through the NVIDIA kernel module (`nv`): the RM object tree (client, device,
// subdevice, virtual memory, a VA space owned by UVM, a channel group with its channels) and UVM.
// Every system call goes through the Os seam, so the same code drives a real GPU (PosixOs) and the
// emulated Hopper (`emu:nv`, emu/nv/rm/rm_model.h).
//
// Driver branches: the version is read first with structures every branch shares, then the
// per-branch ABI (570, 575, 580, 590, 610) is chosen; another branch is refused naming the version.
#pragma once
#include <memory>

#include "drivers/nv/interface.h"
#include "drivers/nv/nv_device.h"
#include "sys/os.h"

namespace ugpu::nv {

// Opens the GPU; throws Error saying what is missing (no /dev/nvidiactl, permissions, an unsupported
// driver branch, a RM status named).
std::unique_ptr<NvInterface> open_rm_interface(std::shared_ptr<sys::Os> os, const NvOptions& o);
// The NVIDIA device through RM: open_nv(open_rm_interface(os, o), o).
std::unique_ptr<hcq::Device> open_nv(std::shared_ptr<sys::Os> os, const NvOptions& o = {});

}  // namespace ugpu::nv
