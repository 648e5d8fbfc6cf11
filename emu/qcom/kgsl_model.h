// An emulated Adreno behind the Os seam (`emu:qcom`): an Adreno 630 class GPU as Qualcomm's kgsl kernel
// driver presents it — /dev/kgsl-3d0 with the ioctls ugpu's Adreno path makes, validated as kgsl
// validates them (exact request numbers, struct sizes, flags, ids, addresses: the same errno). Behind
// it: the GPU's memory (allocations mapped for the GPU at the address the CPU mapping got, with
// USE_CPU_MAP, or the process's own pages), one command processor per context (emu/qcom/cp.h) on its
// own thread, timestamps and their waits, and context resets: a fault of the GPU marks the context
// that caused it guilty (GPU_RESET_STAT), drops its queued work, and refuses its later submissions and
// waits with EDEADLK, as kgsl does after a reset. What the kernel would log goes to log() and stderr.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "emu/os/virtual_os.h"
#include "emu/qcom/cp.h"

namespace ugpu::emu::qcom {

struct AdrenoConfig {
  std::string name = "a630";
  uint32_t chip_id = 0x06030001;  // core.major.minor.patch, one byte each: Adreno 630 (0x06060001: 660)
  uint32_t gpu_id = 630;
  uint64_t memory_bytes = uint64_t{4} << 30;  // what allocations may take together (the GPU shares system memory)
  std::shared_ptr<ShaderProcessor> shader;    // what CP_EXEC_CS runs; null: dispatches fault
};

struct AdrenoStats {
  uint64_t submissions = 0, packets = 0, dispatches = 0, shader_instructions = 0, contexts = 0, allocations = 0, faults = 0;
  uint64_t memory_used = 0;
};

class AdrenoGpu {
 public:
  virtual ~AdrenoGpu() = default;
  virtual AdrenoStats stats() const = 0;
  virtual std::vector<std::string> log() const = 0;
  virtual const AdrenoConfig& config() const = 0;
};

// Installs /dev/kgsl-3d0 into `os`; the GPU lives while the returned pointer or an open file of it does.
std::shared_ptr<AdrenoGpu> install_kgsl_gpu(VirtualOs& os, const AdrenoConfig& cfg = {});

}  // namespace ugpu::emu::qcom
