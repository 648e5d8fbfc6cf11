// The emulated amdkfd's allocations: KFD handles, flags and addresses over the GPU's pages and
// mappings (emu/gpu_memory.h). An allocation is made at its address (VRAM and GTT backed by memfds
// the render-node mmap shares, userptr by the process's own pages) and is visible to the GPU only
// while mapped (MAP_MEMORY_TO_GPU), with the access its flags allow.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <shared_mutex>

#include "emu/gpu_memory.h"

namespace ugpu::emu::amd {

struct Allocation {
  uint64_t handle = 0, va = 0, size = 0;
  uint32_t flags = 0;  // hw::amd::kfd::mem flags
  std::shared_ptr<Pages> pages;
  bool mapped = false;  // mapped to the GPU (MAP_MEMORY_TO_GPU)
  int queue_refs = 0;   // rings, pointers, EOP and CWSR areas of live queues
};

class KfdMemory {
 public:
  explicit KfdMemory(GpuMemory& gpu) : gpu_(gpu) {}
  // Returns the new allocation, or nullptr with an errno (as a negative number) the ioctl reports.
  std::shared_ptr<Allocation> allocate(uint64_t va, uint64_t size, uint32_t flags, uint64_t userptr, uint32_t gpu_id, int& err);
  int free(uint64_t handle);
  int set_mapped(uint64_t handle, bool mapped);
  std::shared_ptr<Allocation> find(uint64_t handle) const;
  std::shared_ptr<Allocation> containing(uint64_t va) const;  // any allocation (mapped or not) holding va

 private:
  GpuMemory& gpu_;
  mutable std::shared_mutex mu_;
  std::map<uint64_t, std::shared_ptr<Allocation>> by_va_;  // mapped and unmapped, by GPU address
  std::map<uint64_t, std::shared_ptr<Allocation>> by_handle_;
  uint64_t next_id_ = 1;
};

}  // namespace ugpu::emu::amd
