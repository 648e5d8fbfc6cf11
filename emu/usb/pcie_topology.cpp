#include "emu/usb/pcie_topology.h"

#include <cstring>

namespace ugpu::emu::usb {
namespace {
constexpr uint16_t kRebar = 0x100;
}

PcieTopology::PcieTopology(PcieEndpoint& endpoint, uint8_t endpoint_bus)
    : ep_(endpoint), ep_bus_(endpoint_bus), bridges_(endpoint_bus, std::vector<uint8_t>(4096)), ep_config_(4096) {
  for (auto& b : bridges_) {
    put(b, 0x00, 0x24641B21);  // ASMedia
    put(b, 0x0C, 0x00010000);  // header type 1
    put(b, 0x08, 0x06040000);  // class: PCI-to-PCI bridge
  }
  put(ep_config_, 0x00, uint32_t(ep_.device_id()) << 16 | ep_.vendor_id());
  put(ep_config_, 0x08, 0x03000000);  // class: VGA
  auto bars = ep_.bars();
  for (int n = 0; n < 6; ++n) {
    sizes_[n] = bars[n].size;
    if (bars[n].size) put(ep_config_, uint16_t(0x10 + 4 * n), bars[n].prefetch64 ? 0xC : 0x0);
  }
  auto sizes = ep_.bar0_sizes();
  if (!sizes.empty()) {
    put(ep_config_, kRebar, 0x00010015);  // Resizable BAR, version 1, last capability
    uint32_t mask = 0, current = 0;
    for (uint64_t s : sizes)
      for (int k = 0; k < 28; ++k)
        if (s == (uint64_t(1) << (20 + k))) mask |= 1u << (4 + k);
    for (int k = 0; k < 28; ++k)
      if (sizes_[0] == (uint64_t(1) << (20 + k))) current = uint32_t(k);
    put(ep_config_, kRebar + 4, mask);
    put(ep_config_, kRebar + 8, current << 8);  // entry 0 is BAR0
  }
}

uint32_t PcieTopology::get(const std::vector<uint8_t>& c, uint16_t reg) const {
  uint32_t v;
  std::memcpy(&v, c.data() + reg, 4);
  return v;
}
void PcieTopology::put(std::vector<uint8_t>& c, uint16_t reg, uint32_t v) { std::memcpy(c.data() + reg, &v, 4); }

std::vector<uint8_t>* PcieTopology::function(uint8_t bus, uint8_t dev, uint8_t fn) {
  if (dev || fn) return nullptr;
  // Bus 0 is the bridge chip's own; every later bus is reached through the bridges before it.
  for (uint8_t b = 0; b < bus; ++b) {
    if (b >= bridges_.size()) return nullptr;
    uint32_t numbers = get(bridges_[b], 0x18);
    uint8_t secondary = uint8_t(numbers >> 8), subordinate = uint8_t(numbers >> 16);
    if (bus < secondary || bus > subordinate || secondary != b + 1) return nullptr;
  }
  if (bus < bridges_.size()) return &bridges_[bus];
  return bus == ep_bus_ ? &ep_config_ : nullptr;
}

bool PcieTopology::config_read(uint8_t bus, uint8_t dev, uint8_t fn, uint16_t reg, uint32_t& value) {
  std::lock_guard lock(mu_);
  auto* c = function(bus, dev, fn);
  if (!c) return false;
  value = get(*c, reg);
  return true;
}

bool PcieTopology::config_write(uint8_t bus, uint8_t dev, uint8_t fn, uint16_t reg, uint32_t value, uint8_t be) {
  std::lock_guard lock(mu_);
  auto* c = function(bus, dev, fn);
  if (!c) return false;
  uint32_t old = get(*c, reg), v = old;
  for (int i = 0; i < 4; ++i)
    if (be >> i & 1) v = (v & ~(0xFFu << (8 * i))) | (value & (0xFFu << (8 * i)));
  if (c == &ep_config_ && reg >= 0x10 && reg < 0x28) {  // a BAR: only the address bits above its size stick
    int n = (reg - 0x10) / 4;
    bool upper = n > 0 && sizes_[n] == 0 && sizes_[n - 1] && (get(*c, uint16_t(reg - 4)) & 6) == 4;
    if (upper) {
      uint64_t mask = ~(sizes_[n - 1] - 1);
      v &= uint32_t(mask >> 32);
    } else if (sizes_[n]) {
      v = (v & uint32_t(~(sizes_[n] - 1)) & 0xFFFFFFF0u) | (old & 0xF);
    } else {
      v = 0;
    }
  }
  if (c == &ep_config_ && reg == kRebar + 8 && get(*c, kRebar)) {  // BAR0 takes the size asked for
    uint32_t k = (v >> 8) & 0x3F;
    if (get(*c, kRebar + 4) >> (4 + k) & 1) {
      sizes_[0] = uint64_t(1) << (20 + k);
      ep_.bar0_resized(sizes_[0]);
    }
  }
  put(*c, reg, v);
  return true;
}

uint64_t PcieTopology::bar_address(int n) const {
  std::lock_guard lock(mu_);
  uint64_t lo = get(ep_config_, uint16_t(0x10 + 4 * n)) & ~0xFull;
  bool wide = (get(ep_config_, uint16_t(0x10 + 4 * n)) & 6) == 4;
  return wide ? lo | uint64_t(get(ep_config_, uint16_t(0x14 + 4 * n))) << 32 : lo;
}

bool PcieTopology::decode(uint64_t address, size_t bytes, int& bar, uint64_t& offset) {
  // Every bridge must pass the range (memory decoding on, inside its memory or prefetchable window)...
  for (const auto& b : bridges_) {
    if (!(get(b, 0x04) & 2)) return false;
    uint64_t mem_lo = uint64_t(get(b, 0x20) & 0xFFF0) << 16, mem_hi = (uint64_t(get(b, 0x20) >> 16 & 0xFFF0) << 16) | 0xFFFFF;
    uint64_t pref_lo = (uint64_t(get(b, 0x24) & 0xFFF0) << 16) | uint64_t(get(b, 0x28)) << 32;
    uint64_t pref_hi = ((uint64_t(get(b, 0x24) >> 16 & 0xFFF0) << 16) | 0xFFFFF) | uint64_t(get(b, 0x2C)) << 32;
    bool in = (address >= mem_lo && address + bytes - 1 <= mem_hi) || (address >= pref_lo && address + bytes - 1 <= pref_hi);
    if (!in) return false;
  }
  // ...and the endpoint decode it in one of its BARs.
  if (!(get(ep_config_, 0x04) & 2)) return false;
  for (int n = 0; n < 6; ++n) {
    if (!sizes_[n]) continue;
    uint32_t lo = get(ep_config_, uint16_t(0x10 + 4 * n));
    uint64_t base = lo & ~0xFull;
    if ((lo & 6) == 4) base |= uint64_t(get(ep_config_, uint16_t(0x14 + 4 * n))) << 32;
    if (address >= base && address + bytes <= base + sizes_[n]) return bar = n, offset = address - base, true;
  }
  return false;
}

bool PcieTopology::mem_read(uint64_t address, std::span<uint8_t> out) {
  int bar;
  uint64_t off;
  {
    std::lock_guard lock(mu_);
    if (!decode(address, out.size(), bar, off)) return false;
  }
  return ep_.bar_read(bar, off, out);
}

bool PcieTopology::mem_write(uint64_t address, std::span<const uint8_t> data) {
  int bar;
  uint64_t off;
  {
    std::lock_guard lock(mu_);
    if (!decode(address, data.size(), bar, off)) return false;
  }
  return ep_.bar_write(bar, off, data);
}

}  // namespace ugpu::emu::usb
