#include "emu/usb/asm24_model.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

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
      if (w == &u::kCqBuf && pcie <= w->pcie + u::kReleaseOffset && pcie + data.size() > w->pcie + u::kReleaseOffset) released_ = true;
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

namespace {
thread_local bool t_async = false;    // the transfer being run was submitted asynchronously
thread_local double t_async_end = 0;  // ... and ends then (modeled)
}  // namespace

Asm24Model::Wire Asm24Model::usb3_gen2() { return {"USB 3.2 Gen 2 (10 Gb/s)", 10e9 * 128 / 132 / 8, 700e6, 60, 15, 1024, 36}; }
Asm24Model::Wire Asm24Model::usb3_gen1() { return {"USB 3.2 Gen 1 (5 Gb/s)", 5e9 * 8 / 10 / 8, 700e6, 60, 15, 1024, 36}; }
void Asm24Model::set_wire(const Wire& w) {
  std::lock_guard lock(mu_);
  wire_ = w;
}
Asm24Model::WireStats Asm24Model::wire() const {
  std::lock_guard lock(mu_);
  return wire_stats_;
}
void Asm24Model::reset_wire() {
  std::lock_guard lock(mu_);
  wire_stats_ = {};
  link_free_us_[0] = link_free_us_[1] = 0;
  async_end_us_.clear();
}
void Asm24Model::delay_sram_writes(std::chrono::microseconds delay) {
  std::lock_guard lock(mu_);
  sram_delay_ = delay;
}
void Asm24Model::stall_bulk_after(int after) {
  std::lock_guard lock(mu_);
  stall_after_ = after;
}

double Asm24Model::schedule(bool in, bool control, size_t bytes, bool sram) {
  const Wire& w = wire_;
  size_t packets = control ? 3 : std::max<size_t>(1, (bytes + w.packet_bytes - 1) / w.packet_bytes);  // setup, data, status
  uint64_t on_wire = (control ? 8 : 0) + bytes + packets * w.packet_overhead;
  double start = std::max(wire_stats_.host_us + (control ? w.control_latency_us : w.bulk_latency_us), link_free_us_[in]);
  double took = double(on_wire) / w.link_bytes_per_s * 1e6;
  if (sram) took = std::max(took, double(bytes) / w.sram_bytes_per_s * 1e6);
  double end = start + took;
  link_free_us_[in] = end;
  wire_stats_.wire_bytes += on_wire, ++wire_stats_.transfers, wire_stats_.control += control;
  if (t_async) t_async_end = end;
  else wire_stats_.host_us = end;
  return end;
}

sys::UsbTransport::Transfer Asm24Model::do_submit(const Request& r) {
  t_async = true, t_async_end = 0;
  Transfer t;
  try {
    t = sys::UsbTransport::do_submit(r);  // runs it now: the model has no queue of its own
  } catch (...) {
    t_async = false;
    throw;
  }
  t_async = false;
  std::lock_guard lock(mu_);
  async_end_us_[t] = t_async_end;
  return t;
}

size_t Asm24Model::do_wait(Transfer t) {
  {
    std::lock_guard lock(mu_);
    if (auto it = async_end_us_.find(t); it != async_end_us_.end()) {
      wire_stats_.host_us = std::max(wire_stats_.host_us, it->second);
      async_end_us_.erase(it);
    }
  }
  return sys::UsbTransport::do_wait(t);
}

std::vector<Asm24Model::HostWindow> Asm24Model::gpu_windows() {
  std::lock_guard lock(mu_);
  return {{u::kSram.pcie, sram_.data(), sram_.size()},
          {u::kSysBuf.pcie, xdata_.data() + u::kSysBuf.xdata, u::kSysBuf.bytes},
          {u::kCqBuf.pcie, xdata_.data() + u::kCqBuf.xdata, u::kCqBuf.bytes}};
}

bool Asm24Model::released() const {
  uint32_t word;
  std::memcpy(&word, xdata_.data() + u::kCqBuf.xdata + u::kReleaseOffset, 4);
  return released_ || word != kArmedMarker;
}

size_t Asm24Model::do_control(uint8_t type, uint8_t request, uint16_t value, uint16_t index, std::span<uint8_t> data, std::chrono::milliseconds) {
  std::unique_lock lock(mu_);
  if (disconnected_) throw sys::UsbError(name() + ": no such device (it was disconnected)");
  ++stats_.control;
  const bool in = type & 0x80;
  schedule(in, true, data.size(), false);
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
      if (read) {
        armed_ = bytes, released_ = false;
        std::memcpy(xdata_.data() + u::kCqBuf.xdata + u::kReleaseOffset, &kArmedMarker, 4);
      } else {
        pending_ = Pending{Pending::kSramWrite, at, bytes};
      }
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
  if (in && !(pending_ && pending_->kind == Pending::kStreamRead) && armed_) {
    // The armed SRAM read goes out once the GPU writes the release word.
    auto deadline = std::chrono::steady_clock::now() + (timeout.count() ? timeout : std::chrono::hours(24));
    while (!released()) {
      if (std::chrono::steady_clock::now() > deadline)
        throw sys::UsbError(name() + ": bulk IN timed out after " + std::to_string(timeout.count()) + " ms (the armed SRAM read was never released)",
                            true);
      lock.unlock();
      std::this_thread::sleep_for(std::chrono::microseconds(20));
      lock.lock();
      if (disconnected_) throw sys::UsbError(name() + ": no such device (it was disconnected)");
    }
    pending_ = Pending{Pending::kSramRead, 0, *armed_};
    armed_.reset();
  }
  if (!pending_) {
    if (in) throw sys::UsbError(name() + ": bulk IN timed out after " + std::to_string(timeout.count()) + " ms (nothing was asked for)", true);
    stall("a bulk OUT nothing announced");
  }
  Pending p = *pending_;
  bool p_in = p.kind == Pending::kStreamRead || p.kind == Pending::kSramRead;
  if (in != p_in) stall(std::string("a bulk ") + (in ? "IN" : "OUT") + " where the bridge expects the other direction");
  if (stall_after_ >= 0 && stall_after_-- == 0) {
    pending_.reset();
    throw sys::UsbError(name() + ": bulk " + (in ? "IN" : "OUT") + " timed out after " + std::to_string(timeout.count()) + " ms (the bridge stalled)",
                        true);
  }
  schedule(in, false, p.bytes, p.kind == Pending::kSramWrite || p.kind == Pending::kSramRead);
  if ((in ? data.size() < p.bytes : data.size() != p.bytes))
    stall("a bulk transfer of " + std::to_string(data.size()) + " bytes; the request announced " + std::to_string(p.bytes));
  pending_.reset();
  (in ? stats_.bulk_in_bytes : stats_.bulk_out_bytes) += p.bytes;
  switch (p.kind) {
    case Pending::kSramWrite: {  // in order, as the bridge streams it: a GPU polling the last dword never sees it before the rest
      if (sram_delay_.count()) {
        lock.unlock();
        std::this_thread::sleep_for(sram_delay_);
        lock.lock();
      }
      std::memcpy(sram_.data() + p.address, data.data(), p.bytes - 4);
      uint32_t last;
      std::memcpy(&last, data.data() + p.bytes - 4, 4);
      __atomic_store_n(reinterpret_cast<uint32_t*>(sram_.data() + p.address + p.bytes - 4), last, __ATOMIC_RELEASE);
      break;
    }
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
