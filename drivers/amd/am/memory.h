// GPU memory on the AM path (docs/amd.md §AM): the VRAM allocator, the GPU virtual address space and
// the four-level page tables of VMID 0 that the driver owns — no kernel driver to ask. Page tables
// live in VRAM and are written through BAR0; a host-side shadow keeps every entry so the driver never
// reads them back over PCIe. Mappings use the largest leaves that fit (1 GiB and 2 MiB directory
// leaves, else 4 KiB PTEs with the FRAGMENT field saying how far the contiguous run goes) to keep TLB
// pressure low. After any change the owner flushes HDP and invalidates the TLBs (the `changed` hook).
#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <vector>

#include "hcq/allocator.h"
#include "hw/amd/page_table.h"
#include "sys/mmio.h"

namespace ugpu::amd::am {

// Where VRAM is: its size, the GPU (MC) address of its first byte, and BAR0: the host's mapping of it
// (null where the host cannot map the BAR: behind the USB bridge, whose BAR accesses are TLPs) and the
// BAR itself, which every path can access.
struct VramWindow {
  uint64_t bytes = 0, mc_base = 0;
  uint8_t* host = nullptr;
  uint64_t host_bytes = 0;  // how much of VRAM BAR0 shows, from offset 0
  sys::Mmio* bar = nullptr;
};

class AmMemory {
 public:
  // [0, boot_bytes) of VRAM is set aside for firmware and rings (boot_alloc), reserved_top bytes at the
  // end stay untouched (the discovery table, firmware-reserved memory); the rest is for buffers and
  // page tables. The tables cover addresses from `table_start` (VM_CONTEXT0_PAGE_TABLE_START_ADDR);
  // alloc_va hands out [va_base, va_base + va_bytes) for memory the host does not map.
  AmMemory(const hw::amd::PteFormat& f, VramWindow vram, uint64_t boot_bytes, uint64_t reserved_top, uint64_t table_start, uint64_t va_base,
           uint64_t va_bytes);

  const VramWindow& vram() const { return vram_; }
  // The PDB2 table's VRAM address, for VM_CONTEXT0_PAGE_TABLE_BASE. Page tables hold VRAM offsets, not
  // MC addresses (a dGPU's FB offset is 0).
  uint64_t root() const { return root_->paddr; }

  // VRAM physical ranges (offsets from VRAM's start). `contiguous` asks for one range (CPU-visible
  // memory is one window of BAR0); else the allocation may be several power-of-two chunks.
  struct Chunk {
    uint64_t addr = 0, size = 0;
    bool system = false;  // a bus address of host memory rather than a VRAM offset
  };
  std::vector<Chunk> alloc_vram(uint64_t bytes, bool contiguous, bool cpu_visible);
  void free_vram(std::span<const Chunk> chunks);
  uint64_t boot_alloc(uint64_t bytes, uint64_t align);  // from the boot region; never freed
  uint8_t* host(uint64_t vram_offset) const;            // the host address of VRAM through BAR0, or null
  // VRAM inside BAR0 by offset, through the host's mapping where there is one, else through BAR
  // accesses (any alignment; edges of whole dwords are read first).
  void vram_write(uint64_t offset, std::span<const uint8_t> data);
  void vram_read(uint64_t offset, std::span<uint8_t> out);
  void vram_zero(uint64_t offset, uint64_t bytes);

  // GPU virtual addresses for memory without a host mapping (host-visible memory uses its host address).
  uint64_t alloc_va(uint64_t bytes, uint64_t align);
  void free_va(uint64_t va);

  // Page tables. `map` writes leaves for [va, va + sum of chunk sizes); `unmap` clears them.
  struct Access {
    bool writable = true, executable = true, uncached = false;
  };
  void map(uint64_t va, std::span<const Chunk> chunks, Access a);
  void unmap(uint64_t va, uint64_t bytes);
  // The leaf that maps va (as the GPU would find it walking from the root), from the shadow; nullopt when unmapped.
  struct Leaf {
    uint64_t va = 0, size = 0, entry = 0;
    int level = 0;  // 1: 1 GiB, 2: 2 MiB, 3: 4 KiB
  };
  std::optional<Leaf> lookup(uint64_t va) const;
  std::function<void()> changed;  // after map/unmap: HDP flush and TLB invalidation
  size_t tables() const { return tables_; }

 private:
  struct Table {
    uint64_t paddr = 0;
    std::array<uint64_t, hw::amd::kEntriesPerTable> entries{};
    std::array<std::unique_ptr<Table>, hw::amd::kEntriesPerTable> children;
  };
  // The entry of `va` in its level-`level` table: walks index from PAGE_TABLE_START_ADDR, not from 0.
  uint64_t index(uint64_t va, int level) const { return ((va - va_start_) >> hw::amd::kLevelShift[level]) & (hw::amd::kEntriesPerTable - 1); }
  std::unique_ptr<Table> new_table();
  void write_entry(Table& t, uint64_t index, uint64_t value);  // to the shadow now, to VRAM by write_entries()
  void write_entries();                                        // lock held
  void map_leaf(uint64_t va, uint64_t pa, uint64_t size, int level, const Chunk& c, uint32_t fragment, Access a);

  const hw::amd::PteFormat& f_;
  VramWindow vram_;
  uint64_t boot_bytes_, boot_next_ = 0;
  mutable std::mutex mu_;
  hcq::RangeAllocator visible_, va_;           // VRAM inside BAR0, GPU VA
  std::optional<hcq::RangeAllocator> hidden_;  // VRAM beyond BAR0 (none with a BAR that covers it all)
  uint64_t va_start_;
  std::unique_ptr<Table> root_;
  struct PendingEntries {
    Table* table = nullptr;
    uint64_t first = 0, count = 0;
  } pending_;  // entries written to the shadow, not yet to VRAM
  size_t tables_ = 0;
};

}  // namespace ugpu::amd::am
