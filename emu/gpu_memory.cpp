#include "emu/gpu_memory.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>

namespace ugpu::emu {

std::shared_ptr<Pages> Pages::create(uint64_t size, const char* name) {
  auto p = std::make_shared<Pages>();
  p->size = size;
#if UGPU_LINUX_DRIVERS
  p->memfd = ::memfd_create(name, MFD_CLOEXEC);
  if (p->memfd < 0) return nullptr;
  void* m = ::ftruncate(p->memfd, static_cast<off_t>(size)) == 0
                ? ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, p->memfd, 0)
                : MAP_FAILED;
#else
  (void)name;
  void* m = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
#endif
  if (m == MAP_FAILED) {
    errno = ENOMEM;
    return nullptr;
  }
  p->host = static_cast<uint8_t*>(m), p->owned = true;
  return p;
}

std::shared_ptr<Pages> Pages::borrow(void* host, uint64_t size) {
  auto p = std::make_shared<Pages>();
  p->size = size, p->host = static_cast<uint8_t*>(host);
  return p;
}

Pages::~Pages() {
  if (owned) ::munmap(host, size);
  if (memfd >= 0) ::close(memfd);
}

bool GpuMemory::reserve_vram(uint64_t bytes) {
  uint64_t used = vram_used_.load();
  do {
    if (bytes > vram_total_ - used) return false;
  } while (!vram_used_.compare_exchange_weak(used, used + bytes));
  return true;
}

void GpuMemory::release_vram(uint64_t bytes) { vram_used_ -= bytes; }

bool GpuMemory::map(Mapping m) {
  if (!m.length || !m.pages || m.offset > m.pages->size || m.length > m.pages->size - m.offset || m.va + m.length < m.va) return false;
  std::unique_lock lock(mu_);
  auto next = by_va_.lower_bound(m.va);
  if (next != by_va_.end() && next->first < m.va + m.length) return false;
  if (next != by_va_.begin() && std::prev(next)->first + std::prev(next)->second.length > m.va) return false;
  by_va_[m.va] = std::move(m);
  return true;
}

bool GpuMemory::unmap(uint64_t va) {
  std::unique_lock lock(mu_);
  auto it = by_va_.find(va);
  if (it == by_va_.end()) return false;
  std::vector<std::shared_ptr<Pages>> dropped{std::move(it->second.pages)};
  by_va_.erase(it);
  lock.unlock();
  retire(std::move(dropped));
  return true;
}

size_t GpuMemory::unmap_range(uint64_t base, uint64_t length) { return drop(base, length, false); }
size_t GpuMemory::evict(uint64_t base, uint64_t length) { return drop(base, length, true); }

size_t GpuMemory::drop(uint64_t base, uint64_t length, bool overlapping) {
  std::vector<std::shared_ptr<Pages>> dropped;
  std::unique_lock lock(mu_);
  auto m = by_va_.lower_bound(base);
  if (overlapping && m != by_va_.begin() && std::prev(m)->first + std::prev(m)->second.length > base) m = std::prev(m);
  while (m != by_va_.end() && (m->first < base || m->first - base < length)) {
    dropped.push_back(std::move(m->second.pages));
    m = by_va_.erase(m);
  }
  lock.unlock();
  size_t n = dropped.size();
  retire(std::move(dropped));
  return n;
}

void GpuMemory::retire(std::vector<std::shared_ptr<Pages>> pages) {
  std::lock_guard r(retired_mu_);
  if (users_ > 0) retired_.insert(retired_.end(), pages.begin(), pages.end());  // an engine may still use them
}

size_t GpuMemory::mappings() const {
  std::shared_lock lock(mu_);
  return by_va_.size();
}

GpuMemory::Use::~Use() {
  std::vector<std::shared_ptr<Pages>> drop;
  std::lock_guard r(m_.retired_mu_);
  if (--m_.users_ == 0) drop.swap(m_.retired_);
}

std::optional<Memory::Span> GpuMemory::translate(uint64_t address, uint64_t size, Access access) {
  for (int attempt = 0;; ++attempt) {
    {
      std::shared_lock lock(mu_);
      auto it = by_va_.upper_bound(address);
      if (it != by_va_.begin()) {
        const Mapping& m = std::prev(it)->second;
        uint64_t off = address - m.va;
        if (off < m.length && size <= m.length - off) {
          if ((access == Access::Write || access == Access::Atomic) && !m.writable) return std::nullopt;
          if (access == Access::Execute && !m.executable) return std::nullopt;
          return Span{m.va, m.pages->host + m.offset, m.length, m.writable};
        }
      }
    }
    if (attempt || !fill || !fill(address)) return std::nullopt;
  }
}

uint8_t* GpuMemory::host(uint64_t address, uint64_t size, Access access) {
  auto s = translate(address, size, access);
  return s ? s->host + (address - s->device) : nullptr;
}

}  // namespace ugpu::emu
