#include "emu/usb/asm24_model.h"

#include <cstring>

#include "common/error.h"
#include "common/hex.h"
#include "hw/usb/asm24.h"

namespace ugpu::emu::usb {
namespace u = hw::usb;

Asm24Model::Asm24Model(PcieFabric& fabric) : fabric_(fabric), xdata_(u::kXdataBytes, 0), sram_(u::kSram.bytes, 0) {}

void Asm24Model::stall(const std::string& why) const { throw sys::UsbError(name() + ": the device stalled: " + why); }

Asm24Model::Stats Asm24Model::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}
std::vector<uint8_t> Asm24Model::sram(size_t offset, size_t bytes) const {
  std::lock_guard lock(mu_);
  return {sram_.begin() + long(offset), sram_.begin() + long(offset + bytes)};
}
uint8_t Asm24Model::xdata(uint16_t address) const {
  std::lock_guard lock(mu_);
  return xdata_[address];
}
void Asm24Model::fail_next_tlps(int count, uint8_t retry_status) {
  std::lock_guard lock(mu_);
  fail_tlps_ = count, fail_status_ = retry_status;
}
void Asm24Model::hold_link_down(bool down) {
  std::lock_guard lock(mu_);
  link_down_ = down;
  if (down) xdata_[u::kXdataLtssm] = 0;
}
void Asm24Model::disconnect() {
  std::lock_guard lock(mu_);
  disconnected_ = true;
}

bool Asm24Model::gpu_write(uint64_t pcie, std::span<const uint8_t> data) {
  std::lock_guard lock(mu_);
  auto in = [&](const u::SramWindow& w) { return pcie >= w.pcie && pcie + data.size() <= w.pcie + w.bytes; };
  if (in(u::kSram)) return std::memcpy(sram_.data() + (pcie - u::kSram.pcie), data.data(), data.size()), true;
  for (const u::SramWindow* w : {&u::kSysBuf, &u::kCqBuf})
    if (in(*w)) {
      std::memcpy(xdata_.data() + w->xdata + (pcie - w->pcie), data.data(), data.size());
      if (w == &u::kCqBuf && pcie <= w->pcie + 12 && pcie + data.size() > w->pcie + 12) released_ = true;
      return true;
    }
  return false;
}

bool Asm24Model::gpu_read(uint64_t pcie, std::span<uint8_t> out) {
  std::lock_guard lock(mu_);
  auto in = [&](const u::SramWindow& w) { return pcie >= w.pcie && pcie + out.size() <= w.pcie + w.bytes; };
  if (in(u::kSram)) return std::memcpy(out.data(), sram_.data() + (pcie - u::kSram.pcie), out.size()), true;
  for (const u::SramWindow* w : {&u::kSysBuf, &u::kCqBuf})
    if (in(*w)) return std::memcpy(out.data(), xdata_.data() + w->xdata + (pcie - w->pcie), out.size()), true;
  return false;
}

size_t Asm24Model::do_control(uint8_t type, uint8_t request, uint16_t value, uint16_t index, std::span<uint8_t> data, std::chrono::milliseconds) {
  std::unique_lock lock(mu_);
  if (disconnected_) throw sys::UsbError(name() + ": no such device (it was disconnected)");
  ++stats_.control;
  const bool in = type & 0x80;
  if ((type & 0x7F) != u::kRequestOut) stall("request type " + hex(type) + " is not a vendor device request");
  switch (request) {
    case u::kXdataRead:
      if (!in || data.size() > u::kXdataMaxRead || value + data.size() > xdata_.size())
        stall("XDATA read of " + std::to_string(data.size()) + " bytes at " + hex(value));
      std::memcpy(data.data(), xdata_.data() + value, data.size());
      return data.size();
    case u::kXdataWrite:
      if (in || !data.empty()) stall("XDATA write with a data stage");
      xdata_[value] = uint8_t(index);
      return 0;
    case u::kPciePower:
      if (in || !data.empty()) stall("PCIe power request with a data stage");
      xdata_[u::kXdataLtssm] = value && !link_down_ ? u::kLtssmL0 : 0;
      return 0;
    case u::kSramDma: {
      if (in || !data.empty()) stall("SRAM DMA request with a data stage");
      size_t bytes = size_t(value & 0x7FFF) * u::kSramSectorBytes, at = size_t(index & 0xFF) * u::kSramSlotBytes;
      if (!bytes || at + bytes > sram_.size()) stall("SRAM DMA of " + std::to_string(bytes) + " bytes at " + hex(at) + " passes the 512 KiB SRAM");
      bool read = value & 0x8000;
      if (read && at) stall("an SRAM read starts at slot 0");
      pending_ = Pending{read ? Pending::kSramRead : Pending::kSramWrite, at, bytes};
      if (read) released_ = false;
      return 0;  // no data stage
    }
    case u::kTlp: {
      if (in) {
        if (!completion_ || data.size() != sizeof(u::Completion)) stall("a TLP completion read with no non-posted request outstanding");
        std::memcpy(data.data(), completion_->data(), data.size());
        completion_.reset();
        return data.size();
      }
      if (data.size() != sizeof(u::TlpDescriptor)) stall("a TLP descriptor of " + std::to_string(data.size()) + " bytes");
      ++stats_.tlps;
      if (xdata_[u::kXdataLtssm] != u::kLtssmL0) stall("a TLP with the PCIe link down");
      u::TlpDescriptor d;
      std::memcpy(&d, data.data(), sizeof d);
      const uint8_t fmt = uint8_t(value), be = uint8_t(value >> 8) & 0xF;
      const uint64_t address = uint64_t(d.address_hi) << 32 | d.address_lo;
      if (index == u::kTlpStreamWrite || index == u::kTlpStreamRead) {
        if ((index == u::kTlpStreamWrite ? fmt != u::kMWr64 : fmt != u::kMRd64) || be != 0xF || !d.data) stall("a malformed streaming TLP");
        pending_ = Pending{index == u::kTlpStreamWrite ? Pending::kStreamWrite : Pending::kStreamRead, address, size_t(d.data) * 4};
        return data.size();
      }
      if (index != u::kTlpSingle || !be || (address & 3)) stall("a malformed single TLP (mode " + std::to_string(index) + ")");
      u::Completion c{};
      if (fail_tlps_ > 0) {
        --fail_tlps_;
        c.retry = fail_status_;
      } else if (u::is_config(fmt)) {
        uint8_t bus = uint8_t(address >> 24), dev = (address >> 19) & 31, fn = (address >> 16) & 7;
        uint16_t reg = address & 0xFFC;
        if ((fmt & 1) != (bus != 0)) stall("a type " + std::to_string(fmt & 1) + " configuration request for bus " + std::to_string(bus));
        bool ok = u::is_write(fmt) ? fabric_.config_write(bus, dev, fn, reg, d.data, be) : fabric_.config_read(bus, dev, fn, reg, c.data);
        if (!ok) c.status = u::kCplUnsupported << 5, c.data = 0xFFFFFFFF;
      } else {
        uint8_t buf[4];
        std::memcpy(buf, &d.data, 4);
        bool ok = u::is_write(fmt) ? fabric_.mem_write(address, buf) : fabric_.mem_read(address, buf);  // whole dword
        std::memcpy(&c.data, buf, 4);
        if (!ok) c.status = u::kCplUnsupported << 5;
      }
      if (!u::is_posted(fmt)) completion_.emplace(reinterpret_cast<uint8_t*>(&c), reinterpret_cast<uint8_t*>(&c) + sizeof c);
      return data.size();
    }
  }
  stall("unknown request " + hex(request));
}

size_t Asm24Model::do_bulk(uint8_t endpoint, std::span<uint8_t> data, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  if (disconnected_) throw sys::UsbError(name() + ": no such device (it was disconnected)");
  const bool in = endpoint & 0x80;
  if (endpoint != u::kBulkIn && endpoint != u::kBulkOut) stall("bulk transfer on endpoint " + hex(endpoint));
  if (!pending_) {
    if (in) throw sys::UsbError(name() + ": bulk IN timed out after " + std::to_string(timeout.count()) + " ms (nothing was asked for)", true);
    stall("a bulk OUT nothing announced");
  }
  Pending p = *pending_;
  bool p_in = p.kind == Pending::kStreamRead || p.kind == Pending::kSramRead;
  if (in != p_in) stall(std::string("a bulk ") + (in ? "IN" : "OUT") + " where the bridge expects the other direction");
  if (p.kind == Pending::kSramRead && !released_)
    throw sys::UsbError(name() + ": bulk IN timed out after " + std::to_string(timeout.count()) + " ms (the armed SRAM read was never released)",
                        true);
  if ((in ? data.size() < p.bytes : data.size() != p.bytes))
    stall("a bulk transfer of " + std::to_string(data.size()) + " bytes; the request announced " + std::to_string(p.bytes));
  pending_.reset();
  (in ? stats_.bulk_in_bytes : stats_.bulk_out_bytes) += p.bytes;
  switch (p.kind) {
    case Pending::kSramWrite: std::memcpy(sram_.data() + p.address, data.data(), p.bytes); break;
    case Pending::kSramRead: std::memcpy(data.data(), sram_.data(), p.bytes), released_ = false; break;
    case Pending::kStreamWrite: {
      lock.unlock();                                                               // the fabric may take its own locks
      if (!fabric_.mem_write(p.address, data.first(p.bytes))) return data.size();  // posted: a write nobody decodes is dropped
      break;
    }
    case Pending::kStreamRead: {
      lock.unlock();
      if (!fabric_.mem_read(p.address, data.first(p.bytes))) std::memset(data.data(), 0xFF, p.bytes);  // unclaimed reads return all ones
      break;
    }
  }
  return p.bytes;
}

}  // namespace ugpu::emu::usb
