#include "sys/asm24.h"

#include <cstring>
#include <thread>

#include "common/error.h"
#include "common/hex.h"
#include "hw/usb/asm24.h"

namespace ugpu::sys {
namespace u = hw::usb;

namespace {
constexpr int kRetries = 10;
constexpr std::chrono::milliseconds kTlpTimeout{5000}, kPowerTimeout{10000};

// A configuration request's address with the register's byte offset (for the byte enables), or an
// Error when bus:dev.fn or the register cannot be addressed.
uint64_t config_address(const char* what, uint8_t bus, uint8_t dev, uint8_t fn, uint16_t reg) {
  if (dev > 31 || fn > 7 || reg >= 4096)
    throw Error(std::string(what) + " of " + hex(reg) + " at " + std::to_string(bus) + ":" + std::to_string(dev) + "." + std::to_string(fn) +
                ": out of range");
  return u::config_address(bus, dev, fn, reg) | (reg & 3);
}
}  // namespace

std::pair<uint16_t, uint16_t> pick_asm24(const std::vector<std::pair<uint16_t, uint16_t>>& present) {
  auto id = [](uint16_t v, uint16_t p) { return hex(v).substr(2) + ":" + hex(p).substr(2); };
  for (auto ids : u::kVendorIds)
    for (auto [v, p] : present)
      if (v == ids[0] && p == ids[1]) return {v, p};
  for (auto ids : u::kStockIds)
    for (auto [v, p] : present)
      if (v == ids[0] && p == ids[1])
        throw Error("an ASM24xx USB bridge (" + id(v, p) +
                    ") is plugged in with ASMedia's stock firmware (a storage bridge); ugpu drives it with the custom firmware "
                    "(USB add1:0001), as tinygrad's USB GPU support does: flash that firmware first (docs/amd.md §USB)");
  throw Error("no ASM24xx USB bridge with the custom firmware (USB add1:0001 or 3801:0001) is plugged in (" + std::to_string(present.size()) +
              " USB devices present; `lsusb` lists them): is the enclosure connected and powered?");
}

void check_asm24_product(const std::string& name, const std::string& product) {
  for (const char* prefix : u::kCustomProducts)
    if (product.rfind(prefix, 0) == 0) return;
  throw Error(name + ": the bridge reports itself as \"" + product +
              "\", not the custom firmware (its product string starts with \"custom\"): flash it first (docs/amd.md §USB)");
}

void Asm24Bridge::control_out(uint8_t request, uint16_t value, uint16_t index, std::span<uint8_t> data, std::chrono::milliseconds timeout) {
  ++requests_;
  usb_.control(u::kRequestOut, request, value, index, data, timeout);
}

std::vector<uint8_t> Asm24Bridge::xdata_read(uint16_t address, size_t bytes) {
  std::lock_guard lock(mu_);
  if (address + bytes > u::kXdataBytes)
    throw Error(usb_.name() + ": XDATA read of " + std::to_string(bytes) + " bytes at " + hex(address) + " passes 64 KiB");
  std::vector<uint8_t> out(bytes);
  for (size_t at = 0; at < bytes;) {
    size_t n = std::min(bytes - at, u::kXdataMaxRead);
    ++requests_;
    size_t got = usb_.control(u::kRequestIn, u::kXdataRead, uint16_t(address + at), 0, std::span(out).subspan(at, n));
    if (got != n)
      throw UsbError(usb_.name() + ": XDATA read at " + hex(address + at) + " returned " + std::to_string(got) + " of " + std::to_string(n) +
                     " bytes");
    at += n;
  }
  return out;
}

void Asm24Bridge::xdata_write(uint16_t address, std::span<const uint8_t> bytes) {
  std::lock_guard lock(mu_);
  if (address + bytes.size() > u::kXdataBytes) throw Error(usb_.name() + ": XDATA write at " + hex(address) + " passes 64 KiB");
  for (size_t i = 0; i < bytes.size(); ++i) control_out(u::kXdataWrite, uint16_t(address + i), bytes[i], {}, UsbTransport::kDefaultTimeout);
}

void Asm24Bridge::ensure_link() {
  std::lock_guard lock(mu_);
  uint8_t state = xdata_read(u::kXdataLtssm, 1)[0];
  if (state == u::kLtssmL0) return;
  control_out(u::kPciePower, 1, 0, {}, kPowerTimeout);
  state = xdata_read(u::kXdataLtssm, 1)[0];
  if (state != u::kLtssmL0)
    throw Error(usb_.name() + ": the PCIe link behind the USB bridge is down (LTSSM state " + hex(state) + ", not " + hex(u::kLtssmL0) +
                " after powering it on): is the GPU seated and its power connected?");
}

uint32_t Asm24Bridge::single(uint8_t fmt_type, uint64_t address, int size, uint32_t value, const char* what) {
  std::lock_guard lock(mu_);
  if ((size != 1 && size != 2 && size != 4) || (address & 3) + size > 4)
    throw Error(std::string(what) + " of " + std::to_string(size) + " bytes at " + hex(address) + ": 1, 2 or 4 bytes inside one dword");
  const uint8_t be = u::byte_enables(address, size);
  const int shift = int(address & 3) * 8;
  u::TlpDescriptor d{uint32_t(address & ~uint64_t{3}), uint32_t(address >> 32), u::is_write(fmt_type) ? value << shift : 0};
  for (int attempt = 0;; ++attempt) {
    control_out(u::kTlp, uint16_t(fmt_type | be << 8), u::kTlpSingle, {reinterpret_cast<uint8_t*>(&d), sizeof d}, kTlpTimeout);
    if (u::is_posted(fmt_type)) return 0;
    u::Completion c{};
    ++requests_;
    size_t got = usb_.control(u::kRequestIn, u::kTlp, 0, 0, {reinterpret_cast<uint8_t*>(&c), sizeof c}, kTlpTimeout);
    if (got != sizeof c) throw UsbError(usb_.name() + ": " + what + ": the completion came back with " + std::to_string(got) + " of 8 bytes");
    if (c.retry) {
      if (attempt == kRetries)
        throw UsbError(usb_.name() + ": " + what + " at " + hex(address) + " failed in the bridge " + std::to_string(kRetries + 1) +
                       " times (status " + hex(c.retry) + ")");
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      continue;
    }
    if (uint8_t s = u::completion_status(c))
      throw Error(usb_.name() + ": " + what + " at " + hex(address) + " completed with " + u::completion_status_name(s) +
                  (s == u::kCplUnsupported ? " (no device answers there)" : ""));
    uint32_t v = c.data >> shift;
    return size == 4 ? v : v & ((1u << (size * 8)) - 1);
  }
}

uint32_t Asm24Bridge::config_read(uint8_t bus, uint8_t dev, uint8_t fn, uint16_t reg, int size) {
  return single(bus ? u::kCfgRd1 : u::kCfgRd0, config_address("config read", bus, dev, fn, reg), size, 0, "config read");
}

void Asm24Bridge::config_write(uint8_t bus, uint8_t dev, uint8_t fn, uint16_t reg, int size, uint32_t value) {
  single(bus ? u::kCfgWr1 : u::kCfgWr0, config_address("config write", bus, dev, fn, reg), size, value, "config write");
}

void Asm24Bridge::mem_read(uint64_t address, std::span<uint8_t> out) {
  std::lock_guard lock(mu_);
  if (address % 4 || out.size() % 4)
    throw Error("PCIe memory read of " + std::to_string(out.size()) + " bytes at " + hex(address) + ": whole dwords only");
  if (out.empty()) return;
  u::TlpDescriptor d{uint32_t(address), uint32_t(address >> 32), uint32_t(out.size() / 4)};
  control_out(u::kTlp, uint16_t(u::kMRd64 | 0x0F << 8), u::kTlpStreamRead, {reinterpret_cast<uint8_t*>(&d), sizeof d}, kTlpTimeout);
  size_t got = usb_.bulk_in(u::kBulkIn, out, std::chrono::seconds(30));
  if (got != out.size())
    throw UsbError(usb_.name() + ": PCIe memory read at " + hex(address) + " returned " + std::to_string(got) + " of " + std::to_string(out.size()) +
                   " bytes");
}

void Asm24Bridge::mem_write(uint64_t address, std::span<const uint8_t> data) {
  std::lock_guard lock(mu_);
  if (address % 4 || data.size() % 4)
    throw Error("PCIe memory write of " + std::to_string(data.size()) + " bytes at " + hex(address) + ": whole dwords only");
  if (data.empty()) return;
  u::TlpDescriptor d{uint32_t(address), uint32_t(address >> 32), uint32_t(data.size() / 4)};
  control_out(u::kTlp, uint16_t(u::kMWr64 | 0x0F << 8), u::kTlpStreamWrite, {reinterpret_cast<uint8_t*>(&d), sizeof d}, kTlpTimeout);
  usb_.bulk_out(u::kBulkOut, data);
}

void Asm24Bridge::sram_write(uint32_t first_slot, std::span<const uint8_t> data) {
  std::lock_guard lock(mu_);
  uint64_t end = uint64_t(first_slot) * u::kSramSlotBytes + data.size();
  if (end > u::kSram.bytes)
    throw Error(usb_.name() + ": SRAM write of " + std::to_string(data.size()) + " bytes at slot " + std::to_string(first_slot) +
                " passes its 512 KiB");
  control_out(u::kSramDma, u::sram_dma_value(uint32_t(data.size()), false), u::sram_dma_index(first_slot, uint32_t(data.size())), {},
              UsbTransport::kDefaultTimeout);
  size_t padded = (data.size() + u::kSramSectorBytes - 1) / u::kSramSectorBytes * u::kSramSectorBytes;
  if (padded == data.size()) return usb_.bulk_out(u::kBulkOut, data);
  std::vector<uint8_t> buf(padded, 0);
  std::memcpy(buf.data(), data.data(), data.size());
  usb_.bulk_out(u::kBulkOut, buf);
}

Asm24Bridge::Pending Asm24Bridge::sram_write_async(uint32_t first_slot, std::span<const uint8_t> sectors) {
  std::lock_guard lock(mu_);
  if (uint64_t(first_slot) * u::kSramSlotBytes + sectors.size() > u::kSram.bytes || sectors.size() % u::kSramSectorBytes || sectors.empty())
    throw Error(usb_.name() + ": SRAM write of " + std::to_string(sectors.size()) + " bytes at slot " + std::to_string(first_slot) +
                ": whole 512-byte sectors inside its 512 KiB");
  Pending p;
  ++requests_;
  p.request = usb_.submit_control(u::kRequestOut, u::kSramDma, u::sram_dma_value(uint32_t(sectors.size()), false),
                                  u::sram_dma_index(first_slot, uint32_t(sectors.size())), {});
  try {
    p.data = usb_.submit_bulk_out(u::kBulkOut, sectors);
  } catch (...) {
    try {
      usb_.wait(p.request);
    } catch (const Error&) {  // the first error is the one to report
    }
    throw;
  }
  return p;
}

void Asm24Bridge::wait(const Pending& p) {
  std::exception_ptr first;
  for (UsbTransport::Transfer t : {p.request, p.data}) {
    try {
      usb_.wait(t);
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  }
  if (first) std::rethrow_exception(first);
}

void Asm24Bridge::sram_arm_read_then_poke(size_t bytes, uint16_t xdata, uint8_t value) {
  std::lock_guard lock(mu_);
  if (bytes > u::kSram.bytes) throw Error(usb_.name() + ": SRAM read of " + std::to_string(bytes) + " bytes passes its 512 KiB");
  requests_ += 2;
  Pending p;
  p.request = usb_.submit_control(u::kRequestOut, u::kSramDma, u::sram_dma_value(uint32_t(bytes), true), u::sram_dma_index(0, uint32_t(bytes)), {});
  try {
    p.data = usb_.submit_control(u::kRequestOut, u::kXdataWrite, xdata, value, {});
  } catch (...) {
    try {
      usb_.wait(p.request);
    } catch (const Error&) {}
    throw;
  }
  wait(p);
}

void Asm24Bridge::sram_arm_read(size_t bytes) {
  std::lock_guard lock(mu_);
  if (bytes > u::kSram.bytes) throw Error(usb_.name() + ": SRAM read of " + std::to_string(bytes) + " bytes passes its 512 KiB");
  control_out(u::kSramDma, u::sram_dma_value(uint32_t(bytes), true), u::sram_dma_index(0, uint32_t(bytes)), {}, UsbTransport::kDefaultTimeout);
}

void Asm24Bridge::sram_read_armed(std::span<uint8_t> out, std::chrono::milliseconds timeout) {
  std::lock_guard lock(mu_);
  size_t padded = (out.size() + u::kSramSectorBytes - 1) / u::kSramSectorBytes * u::kSramSectorBytes;
  std::vector<uint8_t> buf(padded);
  size_t got = usb_.bulk_in(u::kBulkIn, buf, timeout);
  if (got < out.size()) throw UsbError(usb_.name() + ": SRAM read returned " + std::to_string(got) + " of " + std::to_string(out.size()) + " bytes");
  std::memcpy(out.data(), buf.data(), out.size());
}

}  // namespace ugpu::sys
