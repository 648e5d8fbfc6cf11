#include "emu/nv/gpu_memory.h"

#include <sys/mman.h>
#include <unistd.h>

namespace ugpu::emu::nv {

RmMemory::~RmMemory() {
  if (memfd >= 0) {
    ::munmap(host, size);
    ::close(memfd);
  }
}

std::shared_ptr<RmMemory> GpuMemory::allocate(uint64_t size, bool vidmem, bool contiguous, uint64_t page_size) {
  if (!size) return nullptr;
  if (vidmem) {
    uint64_t used = vram_used_.load();
    do {
      if (used + size > vram_total_) return nullptr;
    } while (!vram_used_.compare_exchange_weak(used, used + size));
  }
  auto m = std::make_shared<RmMemory>();
  m->size = size, m->vidmem = vidmem, m->contiguous = contiguous, m->page_size = page_size;
  m->memfd = ::memfd_create(vidmem ? "ugpu-emu-nv-vidmem" : "ugpu-emu-nv-sysmem", MFD_CLOEXEC);
  void* p = MAP_FAILED;
  if (m->memfd >= 0 && ::ftruncate(m->memfd, static_cast<off_t>(size)) == 0)
    p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, m->memfd, 0);
  if (p == MAP_FAILED) {
    if (vidmem) vram_used_ -= size;
    return nullptr;
  }
  m->host = static_cast<uint8_t*>(p);
  return m;
}

void GpuMemory::release(const std::shared_ptr<RmMemory>& m) {
  if (m->vidmem) vram_used_ -= m->size;
}

bool GpuMemory::create_range(uint64_t base, uint64_t length) {
  if (!length || base + length < base) return false;
  std::unique_lock lock(mu_);
  auto next = ranges_.lower_bound(base);
  if (next != ranges_.end() && next->first < base + length) return false;
  if (next != ranges_.begin() && std::prev(next)->first + std::prev(next)->second > base) return false;
  ranges_[base] = length;
  return true;
}

bool GpuMemory::range_covers(uint64_t base, uint64_t length) const {
  std::shared_lock lock(mu_);
  auto it = ranges_.upper_bound(base);
  if (it == ranges_.begin()) return false;
  --it;
  return base - it->first < it->second && length <= it->second - (base - it->first);
}

bool GpuMemory::free_range(uint64_t base) {
  std::vector<std::shared_ptr<RmMemory>> dropped;
  std::unique_lock lock(mu_);
  auto it = ranges_.find(base);
  if (it == ranges_.end()) return false;
  uint64_t end = base + it->second;
  ranges_.erase(it);
  for (auto m = mappings_.lower_bound(base); m != mappings_.end() && m->first < end;) {
    dropped.push_back(m->second.memory);
    m = mappings_.erase(m);
  }
  lock.unlock();
  std::lock_guard r(retired_mu_);
  if (users_ > 0) retired_.insert(retired_.end(), dropped.begin(), dropped.end());  // an engine may still use the pages
  return true;
}

bool GpuMemory::map(uint64_t va, std::shared_ptr<RmMemory> m, uint64_t offset, uint64_t length) {
  if (!length || offset > m->size || length > m->size - offset || !range_covers(va, length)) return false;
  std::unique_lock lock(mu_);
  auto next = mappings_.lower_bound(va);
  if (next != mappings_.end() && next->first < va + length) return false;
  if (next != mappings_.begin() && std::prev(next)->first + std::prev(next)->second.length > va) return false;
  mappings_[va] = Mapping{va, length, offset, std::move(m)};
  return true;
}

size_t GpuMemory::mappings() const {
  std::shared_lock lock(mu_);
  return mappings_.size();
}

GpuMemory::Use::~Use() {
  std::vector<std::shared_ptr<RmMemory>> drop;
  std::lock_guard r(m_.retired_mu_);
  if (--m_.users_ == 0) drop.swap(m_.retired_);
}

std::optional<Memory::Span> GpuMemory::translate(uint64_t address, uint64_t size, Access) {
  std::shared_lock lock(mu_);
  auto it = mappings_.upper_bound(address);
  if (it == mappings_.begin()) return std::nullopt;
  const Mapping& m = std::prev(it)->second;
  uint64_t off = address - m.va;
  if (off >= m.length || size > m.length - off) return std::nullopt;
  return Span{m.va, m.memory->host + m.offset, m.length, true};
}

uint8_t* GpuMemory::host(uint64_t address, uint64_t size, Access access) {
  auto s = translate(address, size, access);
  return s ? s->host + (address - s->device) : nullptr;
}

}  // namespace ugpu::emu::nv
