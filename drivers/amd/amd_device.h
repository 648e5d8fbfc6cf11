// AMD GPUs with no ROCm and no HSA runtime (docs/amd.md): one AmdDevice — PM4 compute and SDMA copy
// queues built from the hw/amd tables, signals, programs, scratch — over a way in to the GPU
// (drivers/amd/interface.h). The ways in: `amd:kfd` through amdgpu.ko's /dev/kfd (kfd/kfd.h); the
// emulated card `emu:amd` is the same KFD path against emu/amd/kfd/kfd_model.h.
//
// Memory: VRAM the CPU can see (large BAR), mapped at the same address for CPU and GPU; rings,
// signals and mailboxes in uncached system memory. Signals are written by RELEASE_MEM / SDMA FENCE
// and each also raises an interrupt, so a host waiter sleeps. Faults: a GPU page fault or a hardware
// exception puts the device in its error state with a message naming the address and the kernel
// that was running; a hang ends in Timeout and the same state (the queues are stopped).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "hcq/device.h"

namespace ugpu::amd {

class AmdInterface;

// Behind the USB bridge the compute ring is small (its VRAM is zeroed over the link when it opens, and
// bound queues keep long command lists out of it); the SDMA ring keeps its size, as it holds the
// bridge copies' programs.
inline constexpr size_t kUsbComputeRingBytes = 64 << 10;

struct AmdOptions {
  std::string name = "amd:kfd";  // the device string, for messages
  int index = 0;                 // which GPU (0 = the first)
  size_t compute_ring_bytes = 1 << 20;
  size_t sdma_ring_bytes = 1 << 20;
  std::string kind = "gpu";  // DeviceInfo::kind ("emulated gpu" for emu:amd)
};

// The device over an opened way in; throws Error when the GPU's generation has no register table.
std::unique_ptr<hcq::Device> open_amd(std::unique_ptr<AmdInterface> way_in, const AmdOptions& o);

// Introspection for tests and `ugpu decode`: the last commands put on a ring.
struct RingSnapshot {
  std::vector<uint32_t> words;  // the most recent submission
  bool sdma = false;
};
RingSnapshot last_submission(hcq::Device& dev, bool sdma);

}  // namespace ugpu::amd
