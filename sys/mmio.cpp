#include "sys/mmio.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <sstream>

#include "common/hex.h"

namespace ugpu::sys {
namespace {
// Orders the caller's earlier stores before the device store that follows (see MappedMmio).
inline void store_order() {
#if defined(__aarch64__)
  asm volatile("dmb oshst" ::: "memory");
#else
  std::atomic_thread_fence(std::memory_order_release);  // x86: a compiler barrier, uncached stores stay in order
#endif
}
}  // namespace

std::unique_ptr<Mmio> Os::map_mmio(int fd, size_t len, uint64_t offset, const std::string& name) {
  Mapping map(*this, (len + 4095) / 4096 * 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, offset);
  return std::make_unique<MappedMmio>(std::move(map), len, name);
}

MappedMmio::MappedMmio(Mapping mapping, std::string name)
    : mapping_(std::move(mapping)), base_(mapping_.data()), size_(mapping_.size()), name_(std::move(name)) {}
MappedMmio::MappedMmio(Mapping mapping, size_t size, std::string name)
    : mapping_(std::move(mapping)), base_(mapping_.data()), size_(std::min(size, mapping_.size())), name_(std::move(name)) {}

void MappedMmio::check(uint64_t offset, uint64_t bytes, uint64_t align, const char* what) const {
  if (offset > size_ || bytes > size_ - offset)
    throw Error(std::string(what) + " of " + std::to_string(bytes) + " bytes at offset " + hex(offset) + " is outside " + name_ + " (" + hex(size_) +
                " bytes)");
  if (offset % align)
    throw Error(std::string(what) + " at offset " + hex(offset) + " of " + name_ + " is not " + std::to_string(align) +
                "-byte aligned; registers take aligned accesses only");
}

uint32_t MappedMmio::read32(uint64_t offset) {
  check(offset, 4, 4, "read32");
  return *reinterpret_cast<volatile uint32_t*>(base_ + offset);
}
uint64_t MappedMmio::read64(uint64_t offset) {
  check(offset, 8, 8, "read64");
  return *reinterpret_cast<volatile uint64_t*>(base_ + offset);
}
void MappedMmio::write32(uint64_t offset, uint32_t value) {
  check(offset, 4, 4, "write32");
  store_order();
  *reinterpret_cast<volatile uint32_t*>(base_ + offset) = value;
}
void MappedMmio::write64(uint64_t offset, uint64_t value) {
  check(offset, 8, 8, "write64");
  store_order();
  *reinterpret_cast<volatile uint64_t*>(base_ + offset) = value;
}

void MappedMmio::copy_in(uint64_t offset, std::span<const uint8_t> src) {
  check(offset, src.size(), 1, "copy_in");
  store_order();
  volatile uint8_t* d = base_ + offset;
  size_t i = 0;
  for (; i < src.size() && (offset + i) % 4; ++i) d[i] = src[i];
  for (; i + 4 <= src.size(); i += 4) {
    uint32_t w;
    std::memcpy(&w, src.data() + i, 4);
    *reinterpret_cast<volatile uint32_t*>(d + i) = w;
  }
  for (; i < src.size(); ++i) d[i] = src[i];
}

void MappedMmio::copy_out(uint64_t offset, std::span<uint8_t> dst) {
  check(offset, dst.size(), 1, "copy_out");
  const volatile uint8_t* s = base_ + offset;
  size_t i = 0;
  for (; i < dst.size() && (offset + i) % 4; ++i) dst[i] = s[i];
  for (; i + 4 <= dst.size(); i += 4) {
    uint32_t w = *reinterpret_cast<const volatile uint32_t*>(s + i);
    std::memcpy(dst.data() + i, &w, 4);
  }
  for (; i < dst.size(); ++i) dst[i] = s[i];
}

MappedDoorbell::MappedDoorbell(void* address, int bits, std::string name) : address_(address), bits_(bits), name_(std::move(name)) {
  if (bits != 32 && bits != 64) throw Error("doorbell " + name_ + ": width must be 32 or 64 bits, not " + std::to_string(bits));
  if (reinterpret_cast<uintptr_t>(address) % (bits / 8))
    throw Error("doorbell " + name_ + " is not aligned to its " + std::to_string(bits) + "-bit width");
}

void MappedDoorbell::ring(uint64_t value) {
  if (bits_ == 32 && value > UINT32_MAX)
    throw Error("doorbell " + name_ + " is 32 bits wide; value " + hex(value) + " does not fit (the queue should wrap its pointer)");
  device_write_fence();
  if (bits_ == 32) *static_cast<volatile uint32_t*>(address_) = uint32_t(value);
  else *static_cast<volatile uint64_t*>(address_) = value;
}

}  // namespace ugpu::sys
