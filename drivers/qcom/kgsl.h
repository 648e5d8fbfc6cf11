// The way in to an Adreno GPU: Qualcomm's kgsl kernel driver (/dev/kgsl-3d0), through the Os seam.
// What the device asks of it: what the GPU is, a context, memory mapped at one address for the CPU and
// the GPU, submissions of indirect buffers with their timestamps, timestamp waits, and whether kgsl
// reset the context after a fault. Every failure is an Error naming the ioctl and what to do.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "hw/qcom/kgsl.h"
#include "sys/os.h"

namespace ugpu::qcom {

// Held by shared_ptr: memory it hands out keeps it (and the fd) alive.
class Kgsl : public std::enable_shared_from_this<Kgsl> {
 public:
  static constexpr const char* kPath = "/dev/kgsl-3d0";
  // Opens the device node and reads the device info; `name` is the device string, for messages.
  Kgsl(std::shared_ptr<sys::Os> os, std::string name);
  ~Kgsl();
  Kgsl(const Kgsl&) = delete;
  Kgsl& operator=(const Kgsl&) = delete;

  const hw::qcom::kgsl::DevInfo& info() const { return info_; }
  sys::Os& os() const { return *os_; }

  // A context with ugpu's flags (preamble, no GMEM, no fault tolerance, fine-grained preemption) at
  // `priority` (0 highest .. 15), held at the highest power level.
  uint32_t create_context(uint32_t priority);
  void destroy_context(uint32_t id) noexcept;

  // Memory at one address for the CPU and the GPU (USE_CPU_MAP), zeroed; freed (unmapped, then
  // GPUOBJ_FREE) when the last reference goes. `uncached`: the CPU mapping bypasses its caches
  // (signals, rings: memory both sides poll).
  struct Memory {
    uint64_t va = 0, size = 0;
    void* host = nullptr;
    uint32_t id = 0;
  };
  std::shared_ptr<Memory> alloc(uint64_t bytes, bool uncached);

  // Submits the indirect buffers (address, bytes) as one GPU_COMMAND; returns kgsl's timestamp.
  // Throws ContextReset when kgsl refuses the context after a reset.
  struct Ib {
    uint64_t address, bytes;
  };
  uint32_t submit(uint32_t context, std::initializer_list<Ib> ibs);
  enum class Wait { Done, TimedOut, Reset };
  Wait wait(uint32_t context, uint32_t timestamp, uint32_t timeout_ms);
  // GPU_RESET_STAT: kCtxStat* since the last query (the query clears it).
  uint32_t reset_status(uint32_t context);

  class ContextReset : public Error {
   public:
    using Error::Error;
  };

 private:
  std::shared_ptr<sys::Os> os_;
  std::string name_;
  sys::Fd fd_;
  hw::qcom::kgsl::DevInfo info_{};
};

}  // namespace ugpu::qcom
