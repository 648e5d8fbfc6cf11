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
#include <span>
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
    // The host cannot map GPU memory (the GPU behind the USB bridge): see Memory.
    bool host_copies = false;
  };
  virtual const Facts& facts() const = 0;

  enum class MemoryKind : uint8_t {
    Vram,         // device memory the CPU maps through the BAR: buffers, code, kernel arguments
    VramPrivate,  // device memory the CPU never touches
    Uncached,     // system memory the GPU reads uncached, mapped for the CPU: rings, signals, mailboxes
    Userptr,      // the process's own pages, mapped for the GPU: staging buffers
    Signals,      // like Uncached, for what both sides write: signals, the engines' read pointers
  };
  // Mapped at `va` for the GPU and, for every kind but VramPrivate, at `host` for the CPU (the same
  // address where the way in allows). Freed when the last shared_ptr goes.
  //
  // Where the host cannot map GPU memory (Facts::host_copies), Uncached and Signals memory live in
  // VRAM and `host` is a copy of them in host memory: the device hands what the host wrote to flush()
  // before the GPU may read it, and wait_for_progress() refreshes the copies of Signals memory with
  // what the GPU wrote. Vram memory has no host address there, Userptr memory does not exist, and
  // buffer contents move through bridge_memory().
  struct Memory {
    uint64_t va = 0, size = 0;
    void* host = nullptr;
  };
  virtual std::shared_ptr<Memory> alloc(uint64_t bytes, MemoryKind kind) = 0;
  // The host wrote [host, host + bytes) of memory from alloc(); a no-op where `host` is the memory.
  virtual void flush(const void* /*host*/, size_t /*bytes*/) {}

  // Memory of the USB bridge that the GPU reaches as system memory and the host only through the
  // bridge (hw/usb/asm24.h): two copy-in windows the host fills while the GPU drains the other, a
  // copy-out window the host reads back once the GPU writes the release word, and the fence where the
  // GPU counts drained chunks. Null on every other way in.
  class BridgeMemory {
   public:
    virtual ~BridgeMemory() = default;
    uint64_t window_va[2] = {0, 0};  // GPU addresses of the copy-in windows
    size_t window_bytes = 0;
    uint64_t out_va = 0;  // the copy-out window (overlaps the copy-in windows)
    size_t out_bytes = 0;
    uint64_t fence_va = 0;    // u32: chunks drained so far
    uint64_t release_va = 0;  // u32: the GPU's write here sends the armed copy-out window
    uint64_t go_va = 0;       // u32 whose low byte the host sets once it has armed the copy-out window
    // The bridge for this thread alone while the result lives (no other request comes between).
    virtual std::shared_ptr<void> hold() = 0;
    // Queues `bytes` (whole 512-byte sectors, untouched until wait()) into a copy-in window; returns
    // what wait() takes.
    virtual uint64_t write_window(int window, std::span<const uint8_t> bytes) = 0;
    virtual void wait(uint64_t write) = 0;
    virtual uint32_t fence() = 0;
    virtual uint8_t go() = 0;  // the go byte now
    // Arms the copy-out window for `bytes` and then sets the go byte to `go`; read_out() reads the
    // window once the GPU has written the release word (within `timeout`). Hold the bridge across both.
    virtual void arm_out(size_t bytes, uint8_t go) = 0;
    virtual void read_out(std::span<uint8_t> out, std::chrono::milliseconds timeout) = 0;
  };
  virtual BridgeMemory* bridge_memory() { return nullptr; }

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
