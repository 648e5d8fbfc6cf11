#include "emu/amd/kfd/kfd_memory.h"

#include <cerrno>
#include <mutex>

#include "hw/amd/kfd.h"

namespace ugpu::emu::amd {
namespace mem = hw::amd::kfd::mem;

std::shared_ptr<Allocation> KfdMemory::allocate(uint64_t va, uint64_t size, uint32_t flags, uint64_t userptr, uint32_t gpu_id, int& err) {
  err = 0;
  const uint32_t domains = flags & (mem::kVram | mem::kGtt | mem::kUserptr | mem::kDoorbell | mem::kMmioRemap);
  if (!size || domains == 0 || (domains & (domains - 1))) return err = -EINVAL, nullptr;
  if (domains & (mem::kDoorbell | mem::kMmioRemap)) return err = -EINVAL, nullptr;  // not modelled: see emu/README.md
  if (va % 4096 || size % 4096 || va + size < va) return err = -EINVAL, nullptr;
  if ((flags & mem::kUserptr) && (userptr % 4096 || userptr != va)) return err = -EINVAL, nullptr;
  auto a = std::make_shared<Allocation>();
  a->va = va, a->size = size, a->flags = flags;
  {
    std::shared_lock lock(mu_);
    auto next = by_va_.lower_bound(va);
    if (next != by_va_.end() && next->first < va + size) return err = -EINVAL, nullptr;  // overlaps an allocation
    if (next != by_va_.begin() && std::prev(next)->second->va + std::prev(next)->second->size > va) return err = -EINVAL, nullptr;
  }
  if (flags & mem::kUserptr) {
    a->pages = Pages::borrow(reinterpret_cast<void*>(userptr), size);
  } else {
    if ((flags & mem::kVram) && !gpu_.reserve_vram(size)) return err = -ENOMEM, nullptr;
    a->pages = Pages::create(size, "ugpu-emu-amd");
    if (!a->pages) {
      const int e = errno;
      if (flags & mem::kVram) gpu_.release_vram(size);
      return err = -(e ? e : ENOMEM), nullptr;
    }
  }
  std::unique_lock lock(mu_);
  auto next = by_va_.lower_bound(va);  // again: another thread may have taken the range meanwhile
  if ((next != by_va_.end() && next->first < va + size) ||
      (next != by_va_.begin() && std::prev(next)->second->va + std::prev(next)->second->size > va)) {
    if (flags & mem::kVram) gpu_.release_vram(size);
    return err = -EINVAL, nullptr;
  }
  a->handle = uint64_t{gpu_id} << 32 | next_id_++;
  by_va_[va] = a;
  by_handle_[a->handle] = a;
  return a;
}

int KfdMemory::free(uint64_t handle) {
  std::unique_lock lock(mu_);
  auto it = by_handle_.find(handle);
  if (it == by_handle_.end()) return -EINVAL;
  if (it->second->queue_refs) return -EBUSY;
  std::shared_ptr<Allocation> a = it->second;
  by_handle_.erase(it);
  by_va_.erase(a->va);
  lock.unlock();
  if (a->mapped) gpu_.unmap(a->va);  // its pages stay alive while an engine still uses them
  if (a->flags & mem::kVram) gpu_.release_vram(a->size);
  return 0;
}

int KfdMemory::set_mapped(uint64_t handle, bool mapped) {
  std::unique_lock lock(mu_);
  auto it = by_handle_.find(handle);
  if (it == by_handle_.end()) return -EINVAL;
  Allocation& a = *it->second;
  if (a.mapped == mapped) return 0;
  if (mapped) gpu_.map({a.va, a.size, 0, a.pages, (a.flags & mem::kWritable) != 0, (a.flags & mem::kExecutable) != 0});
  else gpu_.unmap(a.va);
  a.mapped = mapped;
  return 0;
}

std::shared_ptr<Allocation> KfdMemory::find(uint64_t handle) const {
  std::shared_lock lock(mu_);
  auto it = by_handle_.find(handle);
  return it == by_handle_.end() ? nullptr : it->second;
}

std::shared_ptr<Allocation> KfdMemory::containing(uint64_t va) const {
  std::shared_lock lock(mu_);
  auto it = by_va_.upper_bound(va);
  if (it == by_va_.begin()) return nullptr;
  --it;
  return va - it->second->va < it->second->size ? it->second : nullptr;
}

}  // namespace ugpu::emu::amd
