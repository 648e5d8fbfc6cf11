// Allocators of the device base (docs/design.md §4).
//   RangeAllocator — TLSF (two-level segregated fit) over an address range: O(1) allocation and
//     free with immediate coalescing; used for sub-allocating device memory chunks (and, on paths
//     that own the address space, for GPU VA and physical ranges).
//   KernargRing — argument memory handed out round a ring, with back-pressure instead of wrapping
//     over memory the device may still read.
#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

namespace ugpu::hcq {

class RangeAllocator {
 public:
  // Every allocation is a multiple of `granule` bytes (a power of two) aligned to it.
  RangeAllocator(uint64_t base, uint64_t size, uint64_t granule = 256);
  // nullopt when no free range fits; `align` is a power of two.
  std::optional<uint64_t> alloc(uint64_t size, uint64_t align = 0);
  void free(uint64_t addr);  // an address alloc() returned; anything else throws Error
  uint64_t free_bytes() const { return free_bytes_; }
  uint64_t largest_free() const;
  uint64_t base() const { return base_; }
  uint64_t size() const { return size_; }

 private:
  static constexpr int kSecond = 16;  // second-level classes per power of two
  struct Block {
    uint64_t addr, size;
    int prev = -1, next = -1;            // neighbours in address order
    int free_prev = -1, free_next = -1;  // links in its free list; -1 when used
    bool free = false;
  };
  static std::pair<int, int> class_of(uint64_t size);  // (first, second) level of a size
  int new_block(uint64_t addr, uint64_t size);
  void insert_free(int b);
  void remove_free(int b);
  int find_fit(uint64_t size) const;  // a free block of at least `size`, or -1
  void split(int b, uint64_t at);     // [addr, at) stays b, [at, end) becomes a new free block

  uint64_t base_, size_, granule_, free_bytes_ = 0;
  std::vector<Block> blocks_;
  std::vector<int> unused_;              // recycled entries of blocks_
  std::vector<uint32_t> second_bitmap_;  // per first level: which second levels are non-empty
  uint64_t first_bitmap_ = 0;
  std::vector<std::array<int, kSecond>> heads_;  // free list heads
  std::map<uint64_t, int> used_;                 // address -> block of live allocations
};

// A block of argument memory: `host` and `va` are the same bytes seen by the host and the device.
struct Kernargs {
  uint64_t* host = nullptr;
  uint64_t va = 0;
  size_t bytes = 0;
  std::shared_ptr<void> block;  // the ring's record of it, or for an overflow the memory itself
  bool overflow = false;
};

struct KernargStats {
  size_t ring_bytes = 0;
  uint64_t allocations = 0;
  uint64_t waits = 0;      // allocations that waited for the device to consume older blocks
  uint64_t skips = 0;      // blocks stepped over because a live queue still holds them
  uint64_t overflows = 0;  // allocations served outside the ring because live queues hold all of it
};

class KernargRing {
 public:
  struct Hooks {
    std::function<bool(uint64_t)> consumed;    // whether the device has consumed a ring position
    std::function<void(uint64_t)> wait;        // waits until that position is consumed
    std::function<Kernargs(size_t)> overflow;  // memory outside the ring
  };
  KernargRing(uint64_t* host, uint64_t va, size_t bytes, Hooks hooks);
  Kernargs alloc(size_t bytes);  // 64-byte aligned
  // The block's last use is the submission ending at `position` (0: never submitted).
  void release(const Kernargs& k, uint64_t position);
  KernargStats stats() const;

 private:
  struct Block {
    size_t offset, bytes;
    uint64_t retire_at = UINT64_MAX;  // held by its queue until released
  };
  uint64_t* host_;
  uint64_t va_;
  size_t bytes_;
  Hooks hooks_;
  mutable std::mutex mu_;
  std::map<size_t, std::shared_ptr<Block>> live_;  // by offset
  size_t cursor_ = 0;
  KernargStats stats_;
};

}  // namespace ugpu::hcq
