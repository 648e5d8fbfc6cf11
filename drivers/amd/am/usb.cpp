// The AM driver on a GPU behind the ASM24xx USB bridge (`amd:usb`, `emu:amd:usb`; docs/amd.md §USB):
// the bridge over its UsbTransport, the PciDevice it makes (sys/usb_pci.h), AmGpu booting the GPU on
// it unchanged, and the bridge's memory — its SRAM and the XDATA windows, which the GPU reaches as
// system memory — mapped for the GPU and handed to the device for copies (bridge_copy.cpp).
#include <cstring>
#include <map>
#include <mutex>

#include "common/error.h"
#include "drivers/amd/am/am.h"
#include "hw/usb/asm24.h"
#include "sys/usb_pci.h"

namespace ugpu::amd {
namespace u = hw::usb;

namespace {
// The transport and the bridge client, kept alive by the AmGpu (its PciDevice talks through them).
struct Link {
  explicit Link(std::shared_ptr<sys::UsbTransport> t) : usb(std::move(t)), bridge(*usb) {}
  std::shared_ptr<sys::UsbTransport> usb;
  sys::Asm24Bridge bridge;
};

class UsbBridgeMemory final : public AmdInterface::BridgeMemory {
 public:
  UsbBridgeMemory(std::shared_ptr<am::AmGpu> g, std::shared_ptr<Link> link) : g_(std::move(g)), link_(std::move(link)) {
    sram_ = map(u::kSram.pcie, u::kSram.bytes);
    sys_ = map(u::kSysBuf.pcie, u::kSysBuf.bytes);
    cq_ = map(u::kCqBuf.pcie, u::kCqBuf.bytes);
    window_bytes = u::kSram.bytes / 2;
    window_va[0] = sram_, window_va[1] = sram_ + window_bytes;
    out_va = sram_, out_bytes = u::kSram.bytes;
    fence_va = sys_ + u::kFenceOffset;
    release_va = cq_ + u::kReleaseOffset;
    go_va = sys_ + u::kGoOffset;
    const uint8_t zero[8] = {};  // the fence and the go word
    link_->bridge.xdata_write(uint16_t(u::kSysBuf.xdata + u::kFenceOffset), zero);
  }
  ~UsbBridgeMemory() override {
    for (uint64_t va : {sram_, sys_, cq_}) {
      if (!va) continue;
      try {
        g_->memory().unmap(va, va == sram_ ? u::kSram.bytes : u::kSysBuf.bytes);
      } catch (const Error&) {  // the device is gone
      }
      g_->memory().free_va(va);
    }
  }

  std::shared_ptr<void> hold() override { return std::make_shared<std::unique_lock<std::recursive_mutex>>(link_->bridge.hold()); }
  uint64_t write_window(int window, std::span<const uint8_t> bytes) override {
    auto p = link_->bridge.sram_write_async(uint32_t(window) * uint32_t(window_bytes / u::kSramSlotBytes), bytes);
    std::lock_guard lock(mu_);
    pending_[++next_] = p;
    return next_;
  }
  void wait(uint64_t write) override {
    sys::Asm24Bridge::Pending p;
    {
      std::lock_guard lock(mu_);
      auto it = pending_.find(write);
      if (it == pending_.end()) throw Error(g_->name() + ": wait for an SRAM write that was not queued");
      p = it->second;
      pending_.erase(it);
    }
    link_->bridge.wait(p);
  }
  uint32_t fence() override {
    auto v = link_->bridge.xdata_read(uint16_t(u::kSysBuf.xdata + u::kFenceOffset), 4);
    uint32_t f;
    std::memcpy(&f, v.data(), 4);
    return f;
  }
  uint8_t go() override { return link_->bridge.xdata_read(uint16_t(u::kSysBuf.xdata + u::kGoOffset), 1)[0]; }
  void arm_out(size_t bytes, uint8_t go) override { link_->bridge.sram_arm_read_then_poke(bytes, uint16_t(u::kSysBuf.xdata + u::kGoOffset), go); }
  void read_out(std::span<uint8_t> out, std::chrono::milliseconds timeout) override { link_->bridge.sram_read_armed(out, timeout); }

 private:
  // Bridge memory at its PCIe address, mapped uncached as system pages at a private GPU address.
  uint64_t map(uint64_t pcie, uint64_t bytes) {
    am::AmMemory& mem = g_->memory();
    uint64_t va = mem.alloc_va(bytes, bytes);
    am::AmMemory::Chunk c{pcie, bytes, true};
    try {
      mem.map(va, {&c, 1}, {.writable = true, .executable = false, .uncached = true});
    } catch (...) {
      mem.free_va(va);
      throw;
    }
    return va;
  }
  std::shared_ptr<am::AmGpu> g_;
  std::shared_ptr<Link> link_;
  uint64_t sram_ = 0, sys_ = 0, cq_ = 0;
  std::mutex mu_;
  uint64_t next_ = 0;
  std::map<uint64_t, sys::Asm24Bridge::Pending> pending_;
};
}  // namespace

std::shared_ptr<am::AmGpu> boot_am_usb(std::shared_ptr<sys::Os> os, std::shared_ptr<sys::UsbTransport> usb, const am::AmOptions& opts) {
  auto link = std::make_shared<Link>(std::move(usb));
  link->bridge.ensure_link();
  auto pci = std::make_unique<sys::UsbPciDevice>(link->bridge);
  return am::AmGpu::open(std::move(os), std::move(pci), opts, link);
}

std::unique_ptr<hcq::Device> open_am_usb(std::shared_ptr<sys::Os> os, std::shared_ptr<sys::UsbTransport> usb, const AmdOptions& o,
                                         const am::AmOptions& opts) {
  am::AmOptions a = opts;
  a.name = o.name;
  auto g = boot_am_usb(std::move(os), usb, a);
  auto link = std::static_pointer_cast<Link>(g->keep());
  auto bridge = std::make_unique<UsbBridgeMemory>(g, link);
  return open_amd(am_interface(std::move(g), o, std::move(bridge)), o);
}

}  // namespace ugpu::amd
