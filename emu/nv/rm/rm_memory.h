// What the emulated RM and UVM add to the GPU's pages and mappings (emu/gpu_memory.h): RM memory
// objects (vidmem and sysmem in memfds the driver's /dev/nvidiaN mappings share, OS descriptors over
// the process's own pages) and the external ranges of the GPU address space UVM manages, inside
// which RM memory is mapped.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

#include "emu/gpu_memory.h"

namespace ugpu::emu::nv {

struct RmMemory {
  std::shared_ptr<Pages> pages;
  bool vidmem = false;
  bool contiguous = false;
  uint64_t page_size = 4096;
};

// UVM external ranges: the GPU VA UVM manages for the process. Overlaps are refused.
class UvmRanges {
 public:
  bool create(uint64_t base, uint64_t length) {
    if (!length || base + length < base) return false;
    std::lock_guard lock(mu_);
    auto next = ranges_.lower_bound(base);
    if (next != ranges_.end() && next->first < base + length) return false;
    if (next != ranges_.begin() && std::prev(next)->first + std::prev(next)->second > base) return false;
    ranges_[base] = length;
    return true;
  }
  bool covers(uint64_t base, uint64_t length) const {
    std::lock_guard lock(mu_);
    auto it = ranges_.upper_bound(base);
    if (it == ranges_.begin()) return false;
    --it;
    return base - it->first < it->second && length <= it->second - (base - it->first);
  }
  // Removes the range that starts at base; its length, or 0 when there is none.
  uint64_t remove(uint64_t base) {
    std::lock_guard lock(mu_);
    auto it = ranges_.find(base);
    if (it == ranges_.end()) return 0;
    uint64_t length = it->second;
    ranges_.erase(it);
    return length;
  }

 private:
  mutable std::mutex mu_;
  std::map<uint64_t, uint64_t> ranges_;  // base -> length
};

}  // namespace ugpu::emu::nv
