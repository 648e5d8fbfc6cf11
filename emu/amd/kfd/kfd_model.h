// An emulated AMD GPU behind the Os seam (`emu:amd`): a Radeon RX 7900 XTX class gfx1100 card as the
// amdkfd kernel driver presents it — the KFD topology in sysfs, IP discovery under the render node,
// /dev/dri/renderD128 (buffer mmaps) and /dev/kfd with the ioctls the runtime uses, validated as
// the kernel validates them (struct sizes, flags, alignment, queue buffer sizes: the same errno).
// Behind them: the GPU's memory (every engine and kernel access checked), doorbells, a PM4 command
// processor per compute queue and an SDMA engine per copy queue (emu/amd/engines.h), events and
// their interrupts, and GPU page faults and hangs reported the way KFD reports them.
//
// One card per VirtualOs, in one emulated process: the state amdkfd keeps per process (the VM,
// queues, events) lives in the card. See emu/README.md for what is modelled.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "emu/os/virtual_os.h"

namespace ugpu::emu::amd {

struct GpuConfig {
  std::string name = "gfx1100";  // the topology node's name
  uint32_t gfx_target_version = 110000;
  uint32_t simd_count = 192, simd_per_cu = 2, array_count = 12, simd_arrays_per_engine = 2, cu_per_simd_array = 8;
  uint64_t vram_bytes = uint64_t{24} << 30;
  uint32_t gpu_id = 0x2f1e, device_id = 0x744c;
  int render_minor = 128;
  uint32_t kfd_major = 1, kfd_minor = 17;  // what GET_VERSION answers (ioctls newer than it are refused)
  unsigned executor_threads = 0;           // host threads a dispatch may use; 0 = all
  uint32_t cu_count() const { return simd_count / simd_per_cu; }
};

class KfdGpu;
// Installs the card's files into `os`; the card lives while the returned pointer or an open file of
// it does.
std::shared_ptr<KfdGpu> install_kfd_gpu(VirtualOs& os, const GpuConfig& cfg = {});

struct GpuStats {
  uint64_t dispatches = 0, wave_instructions = 0, packets = 0, interrupts = 0, queues = 0, allocations = 0;
  uint64_t vram_used = 0;
};

class KfdGpu {
 public:
  virtual ~KfdGpu() = default;
  virtual GpuStats stats() const = 0;
  // What the kernel would have logged (dmesg): device faults with the packet or instruction decoded,
  // page faults with the address. Device faults also go to stderr as they happen.
  virtual std::vector<std::string> log() const = 0;
  virtual const GpuConfig& config() const = 0;
};

}  // namespace ugpu::emu::amd
