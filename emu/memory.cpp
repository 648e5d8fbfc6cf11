#include "emu/memory.h"

#include <cstdio>
#include <string>

#include "common/error.h"

namespace ugpu::emu {

const char* name(Access a) {
  switch (a) {
    case Access::Read: return "read";
    case Access::Write: return "write";
    case Access::Atomic: return "atomic";
    case Access::Execute: return "instruction fetch";
  }
  return "?";
}

void RangeMemory::map(uint64_t device, void* host, uint64_t size, bool writable) {
  std::lock_guard lock(mu_);
  auto next = ranges_.lower_bound(device);
  if ((next != ranges_.end() && next->first < device + size) ||
      (next != ranges_.begin() && std::prev(next)->first + std::prev(next)->second.size > device)) {
    char b[24];
    std::snprintf(b, sizeof b, "%llx", static_cast<unsigned long long>(device));
    throw Error(std::string("emulated GPU memory: the range at 0x") + b + " overlaps a mapping");
  }
  ranges_[device] = Span{device, static_cast<uint8_t*>(host), size, writable};
}

void RangeMemory::unmap(uint64_t device) {
  std::lock_guard lock(mu_);
  ranges_.erase(device);
}

std::optional<Memory::Span> RangeMemory::translate(uint64_t address, uint64_t size, Access access) {
  std::lock_guard lock(mu_);
  auto it = ranges_.upper_bound(address);
  if (it == ranges_.begin()) return std::nullopt;
  const Span& s = std::prev(it)->second;
  if (address - s.device >= s.size || size > s.size - (address - s.device)) return std::nullopt;
  if ((access == Access::Write || access == Access::Atomic) && !s.writable) return std::nullopt;
  return s;
}

}  // namespace ugpu::emu
