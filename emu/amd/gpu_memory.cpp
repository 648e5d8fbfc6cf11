#include "emu/amd/gpu_memory.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>

#include "hw/amd/kfd.h"

namespace ugpu::emu::amd {
namespace mem = hw::amd::kfd::mem;

Allocation::~Allocation() {
  if (memfd >= 0) {
    ::munmap(host, size);
    ::close(memfd);
  }
}

std::shared_ptr<Allocation> GpuMemory::allocate(uint64_t va, uint64_t size, uint32_t flags, uint64_t userptr, uint32_t gpu_id, int& err) {
  err = 0;
  const uint32_t domains = flags & (mem::kVram | mem::kGtt | mem::kUserptr | mem::kDoorbell | mem::kMmioRemap);
  if (!size || domains == 0 || (domains & (domains - 1))) return err = -EINVAL, nullptr;
  if (domains & (mem::kDoorbell | mem::kMmioRemap)) return err = -EINVAL, nullptr;  // not modelled: see emu/README.md
  if (va % 4096 || size % 4096 || va + size < va) return err = -EINVAL, nullptr;
  if ((flags & mem::kUserptr) && (userptr % 4096 || userptr != va)) return err = -EINVAL, nullptr;
  auto a = std::make_shared<Allocation>();
  a->va = va, a->size = size, a->flags = flags;
  if (flags & mem::kUserptr) {
    a->host = reinterpret_cast<uint8_t*>(userptr);
  } else {
    if ((flags & mem::kVram) && vram_used_ + size > vram_total_) return err = -ENOMEM, nullptr;
    a->memfd = ::memfd_create("ugpu-emu-amd", MFD_CLOEXEC);
    if (a->memfd < 0) return err = -errno, nullptr;
    if (::ftruncate(a->memfd, static_cast<off_t>(size)) != 0) return err = -ENOMEM, nullptr;
    void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, a->memfd, 0);
    if (p == MAP_FAILED) return err = -ENOMEM, nullptr;
    a->host = static_cast<uint8_t*>(p);
  }
  std::unique_lock lock(mu_);
  auto next = by_va_.lower_bound(va);
  if (next != by_va_.end() && next->first < va + size) return err = -EINVAL, nullptr;  // overlaps a mapping
  if (next != by_va_.begin() && std::prev(next)->second->va + std::prev(next)->second->size > va) return err = -EINVAL, nullptr;
  a->handle = uint64_t{gpu_id} << 32 | next_id_++;
  if (flags & mem::kVram) vram_used_ += size;
  by_va_[va] = a;
  by_handle_[a->handle] = a;
  return a;
}

int GpuMemory::free(uint64_t handle) {
  std::unique_lock lock(mu_);
  auto it = by_handle_.find(handle);
  if (it == by_handle_.end()) return -EINVAL;
  if (it->second->queue_refs) return -EBUSY;
  std::shared_ptr<Allocation> a = it->second;
  by_handle_.erase(it);
  by_va_.erase(a->va);
  if (a->flags & mem::kVram) vram_used_ -= a->size;
  lock.unlock();
  std::lock_guard r(retired_mu_);
  if (users_ > 0) retired_.push_back(std::move(a));  // an engine may still hold its pages
  return 0;
}

GpuMemory::Use::~Use() {
  std::vector<std::shared_ptr<Allocation>> drop;
  std::lock_guard r(m_.retired_mu_);
  if (--m_.users_ == 0) drop.swap(m_.retired_);
}

int GpuMemory::set_mapped(uint64_t handle, bool mapped) {
  std::unique_lock lock(mu_);
  auto it = by_handle_.find(handle);
  if (it == by_handle_.end()) return -EINVAL;
  it->second->mapped = mapped;
  return 0;
}

std::shared_ptr<Allocation> GpuMemory::find(uint64_t handle) const {
  std::shared_lock lock(mu_);
  auto it = by_handle_.find(handle);
  return it == by_handle_.end() ? nullptr : it->second;
}

std::shared_ptr<Allocation> GpuMemory::containing(uint64_t va) const {
  std::shared_lock lock(mu_);
  auto it = by_va_.upper_bound(va);
  if (it == by_va_.begin()) return nullptr;
  --it;
  return va - it->second->va < it->second->size ? it->second : nullptr;
}

std::optional<Memory::Span> GpuMemory::translate(uint64_t address, uint64_t size, Access access) {
  std::shared_lock lock(mu_);
  auto it = by_va_.upper_bound(address);
  if (it == by_va_.begin()) return std::nullopt;
  const Allocation& a = *std::prev(it)->second;
  uint64_t off = address - a.va;
  if (!a.mapped || off >= a.size || size > a.size - off) return std::nullopt;
  bool writable = a.flags & mem::kWritable;
  if ((access == Access::Write || access == Access::Atomic) && !writable) return std::nullopt;
  if (access == Access::Execute && !(a.flags & mem::kExecutable)) return std::nullopt;
  return Span{a.va, a.host, a.size, writable};
}

uint8_t* GpuMemory::host(uint64_t address, uint64_t size, Access access) {
  auto s = translate(address, size, access);
  return s ? s->host + (address - s->device) : nullptr;
}

}  // namespace ugpu::emu::amd
