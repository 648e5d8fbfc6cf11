// The emulated GPU's memory: allocations (VRAM and GTT backed by memfds, userptr by the process's own
// pages) and their GPU mappings. It is the `Memory` the shader executor and the command processors
// translate every access through, so an access to an address that is not mapped to the GPU is a
// page fault, as on hardware. The host's view of an allocation (the render-node mmap the driver makes
// at its chosen address) maps the same memfd pages, so CPU and GPU share the memory without copies.
#pragma once
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <vector>

#include "emu/amd/rdna3/executor.h"

namespace ugpu::emu::amd {

struct Allocation {
  uint64_t handle = 0, va = 0, size = 0;
  uint32_t flags = 0;   // hw::amd::kfd::mem flags
  int memfd = -1;       // VRAM / GTT backing; -1 for userptr
  uint8_t* host = nullptr;  // the model's own view (or the user's pages for userptr)
  bool mapped = false;  // mapped to the GPU (MAP_MEMORY_TO_GPU)
  int queue_refs = 0;   // rings, pointers, EOP and CWSR areas of live queues
  ~Allocation();
};

class GpuMemory : public Memory {
 public:
  explicit GpuMemory(uint64_t vram_bytes) : vram_total_(vram_bytes) {}
  // Returns the new allocation or an errno (as a negative number) the ioctl reports.
  std::shared_ptr<Allocation> allocate(uint64_t va, uint64_t size, uint32_t flags, uint64_t userptr, uint32_t gpu_id, int& err);
  int free(uint64_t handle);
  int set_mapped(uint64_t handle, bool mapped);
  std::shared_ptr<Allocation> find(uint64_t handle) const;
  std::shared_ptr<Allocation> containing(uint64_t va) const;  // any allocation (mapped or not) holding va
  uint64_t vram_used() const { return vram_used_; }
  uint64_t vram_total() const { return vram_total_; }

  std::optional<Span> translate(uint64_t address, uint64_t size, Access access) override;
  // Host pointer for [address, address + size) if it is mapped with that access, else nullptr. Engines
  // use it for packets, signals and copies.
  uint8_t* host(uint64_t address, uint64_t size, Access access);
  // An engine holds a Use while it works with translated pointers (a packet, a dispatch): allocations
  // freed meanwhile keep their pages until no engine holds one.
  class Use {
   public:
    explicit Use(GpuMemory& m) : m_(m) { ++m_.users_; }
    ~Use();
    Use(const Use&) = delete;
    Use& operator=(const Use&) = delete;

   private:
    GpuMemory& m_;
  };

 private:
  mutable std::shared_mutex mu_;
  std::map<uint64_t, std::shared_ptr<Allocation>> by_va_;  // mapped and unmapped, by GPU address
  std::map<uint64_t, std::shared_ptr<Allocation>> by_handle_;
  std::vector<std::shared_ptr<Allocation>> retired_;
  std::mutex retired_mu_;
  std::atomic<int> users_{0};
  uint64_t next_id_ = 1;
  uint64_t vram_total_;
  std::atomic<uint64_t> vram_used_{0};
};

}  // namespace ugpu::emu::amd
