#include "sys/usb_pci.h"

#include <cstring>

#include "common/error.h"
#include "common/hex.h"

namespace ugpu::sys {
namespace {
constexpr uint16_t kCommand = 0x04, kBusNumbers = 0x18, kMemBase = 0x20, kMemLimit = 0x22, kPrefBase = 0x24, kPrefLimit = 0x26, kPrefBaseUpper = 0x28,
                   kPrefLimitUpper = 0x2C, kBar0 = 0x10;
constexpr uint32_t kCommandIoMemMaster = 0x07;
constexpr uint16_t kExtCaps = 0x100, kRebarId = 0x15;
constexpr uint64_t kBarAlign = 2 << 20;

// A BAR of the device behind the bridge: every access is a streamed memory TLP.
class TlpMmio final : public Mmio {
 public:
  TlpMmio(Asm24Bridge& b, uint64_t base, size_t size, std::string name) : b_(b), base_(base), size_(size), name_(std::move(name)) {}
  size_t size() const override { return size_; }
  uint32_t read32(uint64_t off) override {
    uint32_t v;
    read(off, {reinterpret_cast<uint8_t*>(&v), 4}, 4);
    return v;
  }
  uint64_t read64(uint64_t off) override {
    uint64_t v;
    read(off, {reinterpret_cast<uint8_t*>(&v), 8}, 8);
    return v;
  }
  void write32(uint64_t off, uint32_t v) override { write(off, {reinterpret_cast<const uint8_t*>(&v), 4}, 4); }
  void write64(uint64_t off, uint64_t v) override { write(off, {reinterpret_cast<const uint8_t*>(&v), 8}, 8); }
  void copy_in(uint64_t off, std::span<const uint8_t> src) override { write(off, src, 4); }
  void copy_out(uint64_t off, std::span<uint8_t> dst) override { read(off, dst, 4); }

 private:
  void check(uint64_t off, size_t n, size_t align) const {
    if (off > size_ || n > size_ - off || off % align || n % 4)
      throw Error(std::to_string(n) + "-byte access at " + hex(off) + " of " + name_ + " (" + hex(size_) +
                  " bytes): outside it or not whole aligned dwords (a BAR behind the USB bridge takes dwords)");
  }
  void read(uint64_t off, std::span<uint8_t> dst, size_t align) {
    check(off, dst.size(), align);
    b_.mem_read(base_ + off, dst);
  }
  void write(uint64_t off, std::span<const uint8_t> src, size_t align) {
    check(off, src.size(), align);
    b_.mem_write(base_ + off, src);
  }
  Asm24Bridge& b_;
  uint64_t base_;
  size_t size_;
  std::string name_;
};
}  // namespace

UsbPciDevice::UsbPciDevice(Asm24Bridge& bridge, const UsbPciLayout& layout) : b_(bridge), layout_(layout) {
  char a[16];
  std::snprintf(a, sizeof a, "usb:%02x:00.0", layout.device_bus);
  address_ = a;
  b_.ensure_link();
  enumerate();
}

void UsbPciDevice::enumerate() {
  const uint8_t gpu = layout_.device_bus;
  // The bridges between the USB chip and the device: bus numbers (primary 0, secondary bus+1,
  // subordinate the device's bus; one dword, as the registers must change together), windows that pass
  // every address from the bases up, memory decoding and bus mastering on.
  for (uint8_t bus = 0; bus < gpu; ++bus) {
    try {
      b_.config_write(bus, 0, 0, kBusNumbers, 4, uint32_t(bus + 1) << 8 | uint32_t(gpu) << 16);
      b_.config_write(bus, 0, 0, kMemBase, 2, uint32_t(layout_.mem_base >> 16) & 0xFFF0);
      b_.config_write(bus, 0, 0, kMemLimit, 2, 0xFFFF);
      b_.config_write(bus, 0, 0, kPrefBase, 2, uint32_t(layout_.pref_mem_base >> 16) & 0xFFF0);
      b_.config_write(bus, 0, 0, kPrefLimit, 2, 0xFFFF);
      b_.config_write(bus, 0, 0, kPrefBaseUpper, 4, uint32_t(layout_.pref_mem_base >> 32));
      b_.config_write(bus, 0, 0, kPrefLimitUpper, 4, 0xFFFFFFFF);
      b_.config_write(bus, 0, 0, kCommand, 1, kCommandIoMemMaster);
    } catch (const Error& e) {
      throw Error("enumerating the PCIe bridge on bus " + std::to_string(bus) +
                  " behind the USB bridge (is the enclosure's switch there?): " + e.what());
    }
  }
  uint32_t id = 0xFFFFFFFF;
  try {
    id = b_.config_read(gpu, 0, 0, 0, 4);
  } catch (const UsbError&) {
    throw;                  // the bridge itself failed: not an answer about the device
  } catch (const Error&) {  // Unsupported Request: nothing there
  }
  if ((id & 0xFFFF) == 0xFFFF)
    throw Error(b_.transport().name() + ": no device answers on bus " + std::to_string(gpu) +
                " behind the USB bridge (is the GPU seated in the enclosure, and powered?)");
  // Resizable BAR: each capability's first entry to its largest size, before the BARs are sized.
  for (uint16_t at = kExtCaps, hops = 0; at && hops < 64; ++hops) {
    uint32_t hdr = b_.config_read(gpu, 0, 0, at, 4);
    if ((hdr & 0xFFFF) == kRebarId) {
      uint32_t sizes = b_.config_read(gpu, 0, 0, uint16_t(at + 4), 4) >> 4;
      if (sizes) {
        uint32_t k = 31 - uint32_t(__builtin_clz(sizes)), ctrl = b_.config_read(gpu, 0, 0, uint16_t(at + 8), 4);
        b_.config_write(gpu, 0, 0, uint16_t(at + 8), 4, (ctrl & ~0x1F00u) | k << 8);
      }
    }
    if (!hdr || hdr == 0xFFFFFFFF) break;
    at = uint16_t((hdr >> 20) & 0xFFC);
  }
  // Size each memory BAR (all ones, read back the mask) and give it an address: prefetchable ones from the
  // prefetchable base, the rest from the memory base, 2 MiB apart.
  uint64_t mem = layout_.mem_base, pref = layout_.pref_mem_base;
  for (int n = 0; n < 6;) {
    uint16_t reg = uint16_t(kBar0 + 4 * n);
    uint32_t lo = b_.config_read(gpu, 0, 0, reg, 4);
    if (lo & 1) {  // an I/O BAR: left unassigned
      ++n;
      continue;
    }
    bool wide = (lo & 6) == 4, prefetch = lo & 8;
    b_.config_write(gpu, 0, 0, reg, 4, 0xFFFFFFFF);
    uint64_t mask = b_.config_read(gpu, 0, 0, reg, 4) & 0xFFFFFFF0u;
    if (wide) {
      b_.config_write(gpu, 0, 0, uint16_t(reg + 4), 4, 0xFFFFFFFF);
      mask |= uint64_t(b_.config_read(gpu, 0, 0, uint16_t(reg + 4), 4)) << 32;
    } else if (mask) {
      mask |= ~uint64_t{0xFFFFFFFF};  // a 32-bit BAR: the address bits above 4 GiB are not there
    }
    uint64_t size = mask ? ~mask + 1 : 0;  // nothing sticks: no BAR
    uint64_t& cursor = prefetch ? pref : mem;
    uint64_t address = size ? (cursor + size - 1) / size * size : 0;  // naturally aligned, as a BAR must be
    if (size) cursor = address + (size + kBarAlign - 1) / kBarAlign * kBarAlign;
    b_.config_write(gpu, 0, 0, reg, 4, uint32_t(address) | (lo & 0xF));
    if (wide) b_.config_write(gpu, 0, 0, uint16_t(reg + 4), 4, uint32_t(address >> 32));
    bars_[n].address = address, bars_[n].size = size;
    n += wide ? 2 : 1;
  }
  b_.config_write(gpu, 0, 0, kCommand, 1, kCommandIoMemMaster);
}

uint32_t UsbPciDevice::config_read(uint32_t offset, int size) {
  if (offset >= 4096) throw Error("config offset " + hex(offset) + " of " + address_ + " is outside the 4 KiB config space");
  return b_.config_read(layout_.device_bus, 0, 0, uint16_t(offset), size);
}
void UsbPciDevice::config_write(uint32_t offset, int size, uint32_t value) {
  if (offset >= 4096) throw Error("config offset " + hex(offset) + " of " + address_ + " is outside the 4 KiB config space");
  b_.config_write(layout_.device_bus, 0, 0, uint16_t(offset), size, value);
}

uint64_t UsbPciDevice::bar_size(int n) {
  if (n < 0 || n > 5) throw Error("BAR" + std::to_string(n) + " of " + address_ + ": PCI devices have BARs 0 to 5");
  return bars_[n].size;
}
uint64_t UsbPciDevice::bar_address(int n) const { return n >= 0 && n < 6 ? bars_[n].address : 0; }

Mmio& UsbPciDevice::bar(int n) {
  if (!bar_size(n)) throw Error(address_ + " has no BAR" + std::to_string(n));
  std::lock_guard lock(mu_);
  Bar& b = bars_[n];
  if (!b.mmio) b.mmio = std::make_unique<TlpMmio>(b_, b.address, b.size, "BAR" + std::to_string(n) + " of " + address_);
  return *b.mmio;
}

DmaBuffer UsbPciDevice::dma_alloc(size_t bytes) {
  throw Error(address_ + ": a device behind the USB bridge reaches host memory only through the bridge's SRAM, which the host cannot map (" +
              std::to_string(bytes) + " bytes asked); the USB path moves data through sys::Asm24Bridge's SRAM DMA instead");
}

void UsbPciDevice::reset() { throw Error(address_ + ": no function-level reset through the USB bridge; power-cycle the enclosure"); }

}  // namespace ugpu::sys
