// How the AMD driver reaches a GPU: one implementation per way in, under one AmdDevice (docs/amd.md).
// kfd/ implements it with amdgpu.ko's /dev/kfd; am/ with no kernel driver, over a sys::PciDevice (and
// so, later, over the USB bridge). AmdDevice owns everything above this line — rings, signals,
// submission, programs, scratch — and asks the interface only for what differs per way in: memory,
// hardware queues with their doorbells, the interrupt a signal raises, and waiting for progress or a
// fault.
#pragma once
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "hw/amd/registers.h"
#include "sys/mmio.h"

namespace ugpu::amd {

class AmdInterface {
 public:
  virtual ~AmdInterface() = default;

  // What the GPU is, read while opening it.
  struct Facts {
    std::string arch;                 // "gfx1100"
    uint32_t gfx_target_version = 0;  // 110000
    uint32_t cu_count = 0;
    uint32_t scratch_slots = 32;  // scratch waves per CU the firmware allows
    hw::amd::IpBases bases;       // register bases from IP discovery
    uint64_t vram_bytes = 0;
    std::string chip;       // "device 0x744c"
    std::string interface;  // "kfd 1.17, /dev/dri/renderD128": how it was reached, for `ugpu devices`
  };
  virtual const Facts& facts() const = 0;

  enum class MemoryKind : uint8_t {
    Vram,         // device memory the CPU maps through the BAR: buffers, code, kernel arguments
    VramPrivate,  // device memory the CPU never touches
    Uncached,     // system memory the GPU reads uncached, mapped for the CPU: rings, signals, mailboxes
    Userptr,      // the process's own pages, mapped for the GPU: staging buffers
  };
  // Mapped at `va` for the GPU and, for every kind but VramPrivate, at `host` for the CPU (the same
  // address where the way in allows). Freed when the last shared_ptr goes.
  struct Memory {
    uint64_t va = 0, size = 0;
    void* host = nullptr;
  };
  virtual std::shared_ptr<Memory> alloc(uint64_t bytes, MemoryKind kind) = 0;

  // A hardware queue on `ring` (PM4 compute or SDMA copy) whose write and read pointers the engine
  // finds at the given GPU addresses.
  struct QueueSpec {
    bool sdma = false;
    const Memory* ring = nullptr;
    uint64_t wptr_va = 0, rptr_va = 0;
  };
  struct Queue {
    uint32_t id = 0;
    std::unique_ptr<sys::Doorbell> doorbell;
  };
  virtual Queue create_queue(const QueueSpec& q) = 0;
  // Stops every queue at once (preempting what runs); called once, when the device fails or closes.
  virtual void stop_queues() noexcept = 0;
  // The device failed (a fault, or a hang that timed out); called before stop_queues.
  virtual void failed() noexcept {}
  // After a failure and stop_queues: whether queues can be created again on this way in (KFD gives a
  // process none back after a fault), and the engine resets that make them run (called before the
  // rings' create_queue calls).
  virtual bool can_recover() const { return false; }
  virtual void recover() {}

  // What a signal writes, with an interrupt, to wake a host sleeping in wait_for_progress.
  struct Interrupt {
    uint64_t mailbox = 0;
    uint32_t event_id = 0;
  };
  virtual Interrupt interrupt() const = 0;

  // Sleeps up to `max` (0: only looks) until an interrupt; returns what the GPU reported if it faulted.
  struct Fault {
    std::string what;  // "GPU page fault at 0x10000 (an unmapped address)"
    std::string hint;  // where to read more, if anywhere
  };
  virtual std::optional<Fault> wait_for_progress(std::chrono::microseconds max) = 0;
};

}  // namespace ugpu::amd
