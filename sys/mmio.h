// The Mmio seam (docs/design.md §3): a device-visible register or memory range (a BAR, a doorbell page).
// Every access is an explicit call, never a plain store through a pointer, so an emulated range can
// give each register write its hardware side effect and a real range can use volatile accesses with
// the fences the device needs.
//
// Offsets are bytes from the start of the range. An access outside the range, or a 32/64-bit access
// not aligned to its width, throws Error naming the range. Reads are not const: reading a register
// can have side effects (read-to-clear status).
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "sys/os.h"

namespace ugpu::sys {

// Makes every earlier store of this thread (cached memory, write-combined BAR writes) visible to
// devices before any later store: the ordering a doorbell needs, stronger than a release fence, which
// orders only against other CPUs.
inline void device_write_fence() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_sfence();  // drains write-combining buffers; cached stores are already in order (TSO)
#elif defined(__aarch64__)
  asm volatile("dsb st" ::: "memory");  // dmb ish (a release fence) covers only the inner-shareable domain
#else
  std::atomic_thread_fence(std::memory_order_seq_cst);
#endif
  std::atomic_signal_fence(std::memory_order_seq_cst);
}

class Mmio {
 public:
  virtual ~Mmio() = default;
  virtual size_t size() const = 0;
  virtual uint32_t read32(uint64_t offset) = 0;
  virtual uint64_t read64(uint64_t offset) = 0;
  virtual void write32(uint64_t offset, uint32_t value) = 0;
  virtual void write64(uint64_t offset, uint64_t value) = 0;
  virtual void copy_in(uint64_t offset, std::span<const uint8_t> src) = 0;  // host -> range
  virtual void copy_out(uint64_t offset, std::span<uint8_t> dst) = 0;       // range -> host
};

// Tells the device that a queue has new work; `value` is the new write pointer (or the work token).
class Doorbell {
 public:
  virtual ~Doorbell() = default;
  virtual void ring(uint64_t value) = 0;
};

// A range mapped into this process (a BAR from sysfs or vfio). Every write is ordered after the
// caller's earlier memory writes (a compiler barrier on x86, whose uncached stores stay in program
// order; `dmb oshst` on arm64), so a register write that starts the device never overtakes the
// commands it points to; write-combined data needs device_write_fence() or a Doorbell. Copies use 32-bit accesses (bytes at
// unaligned edges), which register BARs accept; large VRAM copies want a faster path later.
class MappedMmio final : public Mmio {
 public:
  MappedMmio(void* base, size_t size, std::string name) : base_(static_cast<uint8_t*>(base)), size_(size), name_(std::move(name)) {}
  MappedMmio(Mapping mapping, std::string name);               // owns the mapping
  MappedMmio(Mapping mapping, size_t size, std::string name);  // owns the mapping; accesses stay below size
  size_t size() const override { return size_; }
  const std::string& name() const { return name_; }
  uint8_t* base() const { return base_; }
  uint32_t read32(uint64_t offset) override;
  uint64_t read64(uint64_t offset) override;
  void write32(uint64_t offset, uint32_t value) override;
  void write64(uint64_t offset, uint64_t value) override;
  void copy_in(uint64_t offset, std::span<const uint8_t> src) override;
  void copy_out(uint64_t offset, std::span<uint8_t> dst) override;

 private:
  void check(uint64_t offset, uint64_t bytes, uint64_t align, const char* what) const;
  Mapping mapping_;
  uint8_t* base_;
  size_t size_;
  std::string name_;
};

// A 32- or 64-bit doorbell register at a mapped address. ring() fences (device_write_fence) first, so
// the queue contents written before it are visible to the device when it wakes. A value too wide for
// a 32-bit doorbell is an error rather than a silently truncated write pointer.
class MappedDoorbell final : public Doorbell {
 public:
  MappedDoorbell(void* address, int bits, std::string name);  // bits: 32 or 64; address aligned to it
  void ring(uint64_t value) override;

 private:
  void* address_;
  int bits_;
  std::string name_;
};

}  // namespace ugpu::sys
