#include "drivers/amd/am/memory.h"

#include <bit>
#include <cstring>

#include "common/error.h"
#include "common/hex.h"

namespace ugpu::amd::am {
namespace {
constexpr uint64_t kPage = 4096;
constexpr uint64_t kHuge = 2 << 20;
uint64_t round_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }
std::string mib(uint64_t b) { return std::to_string(b >> 20) + " MiB"; }
}  // namespace

AmMemory::AmMemory(const hw::amd::PteFormat& f, VramWindow vram, uint64_t boot_bytes, uint64_t reserved_top, uint64_t table_start, uint64_t va_base,
                   uint64_t va_bytes)
    : f_(f),
      vram_(vram),
      boot_bytes_(boot_bytes),
      visible_(boot_bytes, std::min(vram.host_bytes, vram.bytes - reserved_top) - boot_bytes, kPage),
      va_(va_base, va_bytes, kPage),
      va_start_(table_start) {
  uint64_t end = vram.bytes - reserved_top;
  if (vram.host_bytes < end) hidden_.emplace(vram.host_bytes, end - vram.host_bytes, kPage);
  root_ = new_table();
}

uint8_t* AmMemory::host(uint64_t offset) const { return vram_.host && offset < vram_.host_bytes ? vram_.host + offset : nullptr; }

void AmMemory::vram_write(uint64_t offset, std::span<const uint8_t> data) {
  if (uint8_t* p = host(offset); p && offset + data.size() <= vram_.host_bytes) return (void)std::memcpy(p, data.data(), data.size());
  uint64_t first = offset & ~uint64_t{3}, end = (offset + data.size() + 3) & ~uint64_t{3};
  if (first == offset && end == offset + data.size()) return vram_.bar->copy_in(offset, data);
  std::vector<uint8_t> whole(end - first);
  vram_.bar->copy_out(first, std::span(whole).first(4));
  vram_.bar->copy_out(end - 4, std::span(whole).last(4));
  std::memcpy(whole.data() + (offset - first), data.data(), data.size());
  vram_.bar->copy_in(first, whole);
}

void AmMemory::vram_read(uint64_t offset, std::span<uint8_t> out) {
  if (uint8_t* p = host(offset); p && offset + out.size() <= vram_.host_bytes) return (void)std::memcpy(out.data(), p, out.size());
  uint64_t first = offset & ~uint64_t{3}, end = (offset + out.size() + 3) & ~uint64_t{3};
  if (first == offset && end == offset + out.size()) return vram_.bar->copy_out(offset, out);
  std::vector<uint8_t> whole(end - first);
  vram_.bar->copy_out(first, whole);
  std::memcpy(out.data(), whole.data() + (offset - first), out.size());
}

void AmMemory::vram_zero(uint64_t offset, uint64_t bytes) {
  if (uint8_t* p = host(offset); p && offset + bytes <= vram_.host_bytes) return (void)std::memset(p, 0, bytes);
  static const std::vector<uint8_t> zeros(1 << 20);
  for (uint64_t done = 0; done < bytes;) {
    uint64_t n = std::min<uint64_t>(zeros.size(), bytes - done);
    vram_write(offset + done, std::span(zeros).first(n));
    done += n;
  }
}

uint64_t AmMemory::boot_alloc(uint64_t bytes, uint64_t align) {
  std::lock_guard lock(mu_);
  uint64_t at = round_up(boot_next_, std::max(align, kPage));
  if (at + bytes > boot_bytes_)
    throw Error("AM boot memory (" + mib(boot_bytes_) + " at the start of VRAM) is exhausted asking for " + std::to_string(bytes) + " bytes");
  boot_next_ = at + round_up(bytes, kPage);
  return at;
}

std::vector<AmMemory::Chunk> AmMemory::alloc_vram(uint64_t bytes, bool contiguous, bool cpu_visible) {
  bytes = round_up(std::max<uint64_t>(bytes, 1), kPage);
  std::lock_guard lock(mu_);
  std::vector<hcq::RangeAllocator*> pools;
  if (!cpu_visible && hidden_) pools.push_back(&*hidden_);
  pools.push_back(&visible_);
  std::vector<Chunk> out;
  auto give_back = [&] {
    for (const Chunk& c : out) (c.addr < vram_.host_bytes ? visible_ : *hidden_).free(c.addr);
  };
  auto take = [&](uint64_t size, uint64_t align) -> bool {
    for (auto* p : pools)
      if (auto a = p->alloc(size, align)) return out.push_back({*a, size, false}), true;
    return false;
  };
  if (contiguous) {
    if (!take(bytes, std::min(kHuge, std::bit_floor(bytes)))) {
      uint64_t largest = visible_.largest_free();
      throw Error("out of " + std::string(cpu_visible ? "CPU-visible " : "") + "VRAM: " + std::to_string(bytes) + " contiguous bytes asked, " +
                  mib(visible_.free_bytes() + (hidden_ && !cpu_visible ? hidden_->free_bytes() : 0)) + " free, the largest free range " +
                  std::to_string(largest) + " bytes");
    }
    return out;
  }
  // Largest power-of-two pieces first (2 MiB aligned when big enough) so the mapping gets big leaves.
  for (uint64_t left = bytes; left;) {
    uint64_t piece = std::bit_floor(left);
    while (!take(piece, std::min(piece, kHuge))) {
      if (piece == kPage) {
        give_back();
        throw Error("out of VRAM: " + std::to_string(bytes) + " bytes asked, " + mib(visible_.free_bytes() + (hidden_ ? hidden_->free_bytes() : 0)) +
                    " free");
      }
      piece /= 2;
    }
    left -= piece;
  }
  return out;
}

void AmMemory::free_vram(std::span<const Chunk> chunks) {
  std::lock_guard lock(mu_);
  for (const Chunk& c : chunks)
    if (!c.system) (c.addr < vram_.host_bytes || !hidden_ ? visible_ : *hidden_).free(c.addr);
}

uint64_t AmMemory::alloc_va(uint64_t bytes, uint64_t align) {
  std::lock_guard lock(mu_);
  auto a = va_.alloc(round_up(bytes, kPage), std::max(align, kPage));
  if (!a) throw Error("out of GPU virtual address space asking for " + std::to_string(bytes) + " bytes");
  return *a;
}

void AmMemory::free_va(uint64_t va) {
  std::lock_guard lock(mu_);
  va_.free(va);
}

std::unique_ptr<AmMemory::Table> AmMemory::new_table() {
  auto a = visible_.alloc(kPage, kPage);
  if (!a) throw Error("out of CPU-visible VRAM for a page table");
  vram_zero(*a, kPage);
  auto t = std::make_unique<Table>();
  t->paddr = *a;
  ++tables_;
  return t;
}

void AmMemory::write_entry(Table& t, uint64_t index, uint64_t value) {
  t.entries[index] = value;
  // Consecutive entries of one table go to VRAM as one write (over USB, one round trip for a run of
  // PTEs instead of one each); write_entries() sends what is pending.
  if (pending_.table == &t && index == pending_.first + pending_.count) return (void)++pending_.count;
  write_entries();
  pending_ = {&t, index, 1};
}

void AmMemory::write_entries() {
  if (!pending_.table) return;
  const Table& t = *pending_.table;
  vram_write(t.paddr + pending_.first * 8, {reinterpret_cast<const uint8_t*>(t.entries.data() + pending_.first), pending_.count * 8});
  pending_ = {};
}

void AmMemory::map_leaf(uint64_t va, uint64_t pa, uint64_t size, int level, const Chunk& c, uint32_t fragment, Access a) {
  Table* t = root_.get();
  for (int l = 0; l < level; ++l) {
    uint64_t i = index(va, l);
    if (!t->children[i]) {
      if (hw::amd::decode_pte(f_, t->entries[i]).leaf_pde)
        throw Error("GPU VA " + hex(va) + " is already mapped by a " + mib(uint64_t(1) << hw::amd::kLevelShift[l]) + " page");
      t->children[i] = new_table();
      hw::amd::Pte pde;
      pde.valid = true, pde.address = t->children[i]->paddr;
      write_entry(*t, i, hw::amd::encode_pte(f_, pde));
    }
    t = t->children[i].get();
  }
  uint64_t i = index(va, level);
  if (t->children[i] || hw::amd::decode_pte(f_, t->entries[i]).valid) throw Error("GPU VA " + hex(va) + " is already mapped");
  hw::amd::Pte e;
  e.valid = e.readable = true, e.writeable = a.writable, e.executable = a.executable;
  e.system = e.snooped = c.system;
  e.mtype = a.uncached || c.system ? f_.mtype_uc : f_.mtype_nc;
  e.leaf_pde = level < 3;
  e.fragment = fragment;
  e.address = pa;
  (void)size;
  write_entry(*t, i, hw::amd::encode_pte(f_, e));
}

void AmMemory::map(uint64_t va, std::span<const Chunk> chunks, Access a) {
  {
    std::lock_guard lock(mu_);
    uint64_t at = va;
    for (const Chunk& c : chunks) {
      if (c.size % kPage || c.addr % kPage || at % kPage) throw Error("AM map: " + hex(at) + " <- " + hex(c.addr) + " is not 4 KiB aligned");
      uint64_t end = at + c.size;
      for (uint64_t v = at; v < end;) {
        uint64_t p = c.addr + (v - at);
        int level = 3;
        for (int l = 1; l < 3; ++l) {
          uint64_t s = uint64_t(1) << hw::amd::kLevelShift[l];
          if (v % s == 0 && p % s == 0 && end - v >= s) {
            level = l;
            break;
          }
        }
        uint64_t step = uint64_t(1) << hw::amd::kLevelShift[level];
        uint32_t frag = 0;
        if (level == 3)  // the largest aligned block around v that is all inside this chunk, with pa - va constant
          for (int s = 20; s > 12; --s) {
            uint64_t b = uint64_t(1) << s, start = v & ~(b - 1);
            if (start >= at && start + b <= end && (p - v) % b == 0) {
              frag = uint32_t(s - 12);
              break;
            }
          }
        else frag = uint32_t(hw::amd::kLevelShift[level] - 12);
        try {
          map_leaf(v, p, step, level, c, frag, a);
        } catch (...) {
          write_entries();  // what was mapped so far is in VRAM as in the shadow
          throw;
        }
        v += step;
      }
      at = end;
    }
    write_entries();
  }
  if (changed) changed();
}

void AmMemory::unmap(uint64_t va, uint64_t bytes) {
  {
    std::lock_guard lock(mu_);
    for (uint64_t v = va; v < va + bytes;) {
      Table* t = root_.get();
      int l = 0;
      uint64_t i = 0;
      for (;; ++l) {
        i = index(v, l);
        if (l == 3 || !t->children[i]) break;
        t = t->children[i].get();
      }
      uint64_t step = uint64_t(1) << hw::amd::kLevelShift[l];
      if (hw::amd::decode_pte(f_, t->entries[i]).valid && !t->children[i]) write_entry(*t, i, 0);
      v = (v & ~(step - 1)) + step;
    }
    write_entries();
  }
  if (changed) changed();
}

std::optional<AmMemory::Leaf> AmMemory::lookup(uint64_t va) const {
  std::lock_guard lock(mu_);
  const Table* t = root_.get();
  for (int l = 0; l < hw::amd::kPageTableLevels; ++l) {
    uint64_t i = index(va, l);
    uint64_t e = t->entries[i];
    auto p = hw::amd::decode_pte(f_, e);
    if (!p.valid) return std::nullopt;
    if (l == 3 || p.leaf_pde) {
      uint64_t size = uint64_t(1) << hw::amd::kLevelShift[l];
      return Leaf{va & ~(size - 1), size, e, l};
    }
    t = t->children[i].get();
    if (!t) return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace ugpu::amd::am
