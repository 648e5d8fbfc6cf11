// A PCIe device behind the ASM24xx USB bridge as a PciDevice (docs/design.md §3): the bridge's PCIe
// topology enumerated by hand over configuration TLPs — each bridge's bus numbers, memory windows and
// command; the GPU's BAR0 grown through its Resizable BAR capability; every BAR sized and given an
// address — then configuration space through single TLPs and BARs as Mmio whose accesses are streamed
// TLPs (one USB round trip each). Host memory the device reaches is the bridge's SRAM, which the host
// only reaches through the bridge: dma_alloc is refused (the AM path over USB will use the SRAM through
// the bridge directly). Facts: tinygrad's pci_setup_usb_bars.
#pragma once
#include <array>
#include <memory>
#include <mutex>
#include <string>

#include "sys/asm24.h"
#include "sys/pci.h"

namespace ugpu::sys {

struct UsbPciLayout {
  uint8_t device_bus = 4;                       // the bridges are buses 0 .. device_bus - 1, device 0 each
  uint64_t mem_base = 0x10000000;               // non-prefetchable BARs from here (32-bit window up to 4 GiB)
  uint64_t pref_mem_base = uint64_t{32} << 30;  // prefetchable BARs from here
};

class UsbPciDevice final : public PciDevice {
 public:
  // Trains the link if needed and enumerates; Errors name the bus and register that failed.
  UsbPciDevice(Asm24Bridge& bridge, const UsbPciLayout& layout = {});
  const std::string& address() const override { return address_; }
  std::string kind() const override { return "usb"; }
  uint32_t config_read(uint32_t offset, int size) override;
  void config_write(uint32_t offset, int size, uint32_t value) override;
  uint64_t bar_size(int n) override;
  Mmio& bar(int n) override;
  uint64_t bar_address(int n) const;  // where enumeration put BAR n on the bridge's PCIe side
  DmaBuffer dma_alloc(size_t bytes) override;
  void reset() override;

 private:
  void enumerate();
  Asm24Bridge& b_;
  UsbPciLayout layout_;
  std::string address_;
  struct Bar {
    uint64_t address = 0, size = 0;
    std::unique_ptr<Mmio> mmio;
  };
  std::array<Bar, 6> bars_;
  std::mutex mu_;
};

}  // namespace ugpu::sys
