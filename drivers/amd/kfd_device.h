// AMD GPUs through the kernel's amdgpu/KFD interface (DESIGN.md §5: `amd:kfd`), with no ROCm and no
// HSA runtime: topology from sysfs, /dev/kfd ioctls for the VM, memory, queues and events, and
// command packets built from the hw/amd tables — PM4 on a compute queue, SDMA on a copy queue. Every
// system call goes through the Os seam, so the same code drives a real GPU (PosixOs) and the
// emulated one (`emu:amd`, emu/amd/kfd/kfd_model.h).
//
// Memory: VRAM the CPU can see (large BAR), mapped at the same address for CPU and GPU; rings,
// signals and the event page in uncached GTT. Signals are written by RELEASE_MEM / SDMA FENCE and
// each signal also raises an event interrupt, so a host waiter sleeps in WAIT_EVENTS. Faults: a GPU
// page fault (KFD memory exception) or a hardware exception puts the device in its error state with
// a message naming the address and the kernel that was running; a hang ends in Timeout and the same
// state (the queues are destroyed, which stops what runs on them).
#pragma once
#include <memory>
#include <string>

#include "hcq/device.h"
#include "sys/os.h"

namespace ugpu::amd {

struct KfdOptions {
  std::string name = "amd:kfd";      // the device string, for messages
  int index = 0;                     // which KFD GPU node (0 = the first)
  size_t compute_ring_bytes = 1 << 20;
  size_t sdma_ring_bytes = 1 << 20;
  std::string kind = "gpu";          // DeviceInfo::kind ("emulated gpu" for emu:amd)
};

// Opens the GPU; throws Error saying what is missing (no /dev/kfd, permissions, KFD version).
std::unique_ptr<hcq::Device> open_kfd(std::shared_ptr<sys::Os> os, const KfdOptions& o = {});

// Introspection for tests and `ugpu decode`: the last commands put on a ring.
struct RingSnapshot {
  std::vector<uint32_t> words;  // the most recent submissions, oldest first
  bool sdma = false;
};
RingSnapshot last_submission(hcq::Device& dev, bool sdma);

}  // namespace ugpu::amd
