// The emulated NVIDIA GPU's memory: RM memory objects (vidmem and sysmem, backed by memfds so the
// CPU mappings the driver makes through /dev/nvidiaN share the pages) and the GPU virtual address
// space UVM owns (external ranges, and mappings of RM memory inside them). Every access an engine or
// a kernel makes is translated here; an address with no mapping is an MMU fault, as on hardware.
#pragma once
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <vector>

#include "emu/memory.h"

namespace ugpu::emu::nv {

struct RmMemory {
  uint64_t size = 0;
  bool vidmem = false;
  bool contiguous = false;
  uint64_t page_size = 4096;
  int memfd = -1;
  uint8_t* host = nullptr;  // the model's own view of the pages
  ~RmMemory();
};

class GpuMemory : public Memory {
 public:
  explicit GpuMemory(uint64_t vram_bytes) : vram_total_(vram_bytes) {}
  // nullptr when there is no room (NV_ERR_NO_MEMORY) or no memfd.
  std::shared_ptr<RmMemory> allocate(uint64_t size, bool vidmem, bool contiguous, uint64_t page_size);
  void release(const std::shared_ptr<RmMemory>& m);  // an RM free: vidmem accounting
  uint64_t vram_used() const { return vram_used_; }
  uint64_t vram_total() const { return vram_total_; }

  // UVM external ranges: the GPU VA UVM manages for the process. Overlaps are refused (false).
  bool create_range(uint64_t base, uint64_t length);
  bool range_covers(uint64_t base, uint64_t length) const;
  // Frees a range with every mapping inside it; false when no range starts at base.
  bool free_range(uint64_t base);
  // A mapping of [offset, offset + length) of m at va, inside an external range; false when outside
  // one or overlapping another mapping.
  bool map(uint64_t va, std::shared_ptr<RmMemory> m, uint64_t offset, uint64_t length);
  size_t mappings() const;

  std::optional<Span> translate(uint64_t address, uint64_t size, Access access) override;
  uint8_t* host(uint64_t address, uint64_t size, Access access);  // nullptr: not mapped

  // An engine holds a Use while it works with translated pointers: memory unmapped meanwhile keeps
  // its pages until no engine holds one.
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
  struct Mapping {
    uint64_t va, length, offset;
    std::shared_ptr<RmMemory> memory;
  };
  mutable std::shared_mutex mu_;
  std::map<uint64_t, uint64_t> ranges_;   // base -> length
  std::map<uint64_t, Mapping> mappings_;  // by va
  std::mutex retired_mu_;
  std::vector<std::shared_ptr<RmMemory>> retired_;
  std::atomic<int> users_{0};
  uint64_t vram_total_;
  std::atomic<uint64_t> vram_used_{0};
};

}  // namespace ugpu::emu::nv
