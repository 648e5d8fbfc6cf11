// An emulated GPU's memory, shared by the AMD and NVIDIA models: pages (memfd-backed, so the CPU
// mapping a driver makes through a device file shares them, or the process's own pages for userptr
// and OS descriptors), VRAM accounting, and the GPU's mappings of those pages. It is the `Memory`
// the shader executors and command processors translate every access through: an address that is not
// mapped with the asked access is a page fault, as on hardware. What a driver calls an allocation
// (KFD handles and flags, RM memory objects, UVM ranges) stays in each model; this holds only pages
// and mappings.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <vector>

#include "emu/memory.h"

namespace ugpu::emu {

struct Pages {
  uint64_t size = 0;
  int memfd = -1;           // the backing of created pages, for device files that map them; else -1
  uint8_t* host = nullptr;  // the model's own view (or the process's pages)
  bool owned = false;       // made by create(): unmapped when the last user goes
  // `size` bytes of new zeroed pages in a memfd named `name`; nullptr (errno set) when none can be made.
  // memfds are Linux's: built without the Linux drivers (whose KFD and RM models are the only ones that
  // map pages through a device file) the pages are anonymous memory, and memfd stays -1.
  static std::shared_ptr<Pages> create(uint64_t size, const char* name);
  // The process's own pages at `host` (userptr, OS descriptors): not owned.
  static std::shared_ptr<Pages> borrow(void* host, uint64_t size);
  ~Pages();
};

class GpuMemory : public Memory {
 public:
  explicit GpuMemory(uint64_t vram_bytes) : vram_total_(vram_bytes) {}
  bool reserve_vram(uint64_t bytes);  // false when the card has no room left
  void release_vram(uint64_t bytes);
  uint64_t vram_used() const { return vram_used_; }
  uint64_t vram_total() const { return vram_total_; }

  // [va, va + length) shows pages [offset, offset + length).
  struct Mapping {
    uint64_t va = 0, length = 0, offset = 0;
    std::shared_ptr<Pages> pages;
    bool writable = true, executable = true;
  };
  bool map(Mapping m);                                 // false: empty, past the pages' end, or overlapping another mapping
  bool unmap(uint64_t va);                             // the mapping that starts at va; false when there is none
  size_t unmap_range(uint64_t base, uint64_t length);  // every mapping that starts inside; how many
  size_t evict(uint64_t base, uint64_t length);        // every mapping that overlaps; how many
  size_t mappings() const;

  std::optional<Span> translate(uint64_t address, uint64_t size, Access access) override;
  // For a GPU whose translations come from page tables in its own memory (the AM card's GMC): called
  // on a miss, without the lock, to map what covers `address` as a TLB fill walks it; false when nothing
  // does (the access then faults). translate() retries once after a fill.
  std::function<bool(uint64_t address)> fill;
  // Host pointer for [address, address + size) if it is mapped with that access, else nullptr.
  uint8_t* host(uint64_t address, uint64_t size, Access access);

  // An engine holds a Use while it works with translated pointers (a packet, a dispatch): pages
  // unmapped meanwhile stay alive until no engine holds one.
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
  size_t drop(uint64_t base, uint64_t length, bool overlapping);  // unmap_range, evict
  void retire(std::vector<std::shared_ptr<Pages>> pages);

  mutable std::shared_mutex mu_;
  std::map<uint64_t, Mapping> by_va_;
  std::mutex retired_mu_;
  std::vector<std::shared_ptr<Pages>> retired_;
  std::atomic<int> users_{0};
  const uint64_t vram_total_;
  std::atomic<uint64_t> vram_used_{0};
};

}  // namespace ugpu::emu
