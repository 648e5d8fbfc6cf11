// The PciDevice over the USB bridge (sys/usb_pci.h) against the emulated bridge and PCIe topology:
// enumeration through four bridges, Resizable BAR, BAR sizing and placement, BARs as Mmio over TLPs.
#include <doctest/doctest.h>

#include <cstring>
#include <unordered_map>

#include "common/error.h"
#include "emu/usb/asm24_model.h"
#include "emu/usb/pcie_topology.h"
#include "sys/usb_pci.h"

using namespace ugpu;
using doctest::Contains;

namespace {
// A GPU-like endpoint: BAR0 VRAM (resizable 256 MiB .. 1 GiB), BAR2 doorbells, BAR5 registers; sparse memory.
struct Gpu : emu::usb::PcieEndpoint {
  uint64_t bar0 = 256 << 20;
  std::unordered_map<uint64_t, uint8_t> mem[6];
  uint16_t vendor_id() const override { return 0x1002; }
  uint16_t device_id() const override { return 0x744c; }
  std::array<Bar, 6> bars() const override { return {Bar{bar0, true}, {}, Bar{2 << 20, true}, {}, {}, Bar{1 << 20, false}}; }
  std::vector<uint64_t> bar0_sizes() const override { return {256 << 20, 512 << 20, 1 << 30}; }
  void bar0_resized(uint64_t b) override { bar0 = b; }
  bool bar_read(int n, uint64_t off, std::span<uint8_t> out) override {
    for (size_t i = 0; i < out.size(); ++i) out[i] = mem[n].count(off + i) ? mem[n][off + i] : 0;
    return true;
  }
  bool bar_write(int n, uint64_t off, std::span<const uint8_t> in) override {
    for (size_t i = 0; i < in.size(); ++i) mem[n][off + i] = in[i];
    return true;
  }
};
struct Bench {
  Gpu gpu;
  emu::usb::PcieTopology topology{gpu};
  emu::usb::Asm24Model model{topology};
  sys::Asm24Bridge bridge{model};
};
}  // namespace

TEST_CASE("usb pci: before enumeration only bus 0 answers; enumeration reaches the GPU on bus 4 through four bridges") {
  Bench t;
  t.bridge.ensure_link();
  CHECK(t.bridge.config_read(0, 0, 0, 0, 4) == 0x24641B21);
  CHECK_THROWS_WITH_AS(t.bridge.config_read(4, 0, 0, 0, 4), Contains("Unsupported Request"), Error);
  sys::UsbPciDevice dev(t.bridge);
  CHECK(dev.address() == "usb:04:00.0");
  CHECK(dev.kind() == "usb");
  CHECK(dev.vendor_id() == 0x1002);
  CHECK(dev.device_id() == 0x744c);
  CHECK(t.bridge.config_read(2, 0, 0, 0x18, 4) == (3u << 8 | 4u << 16));  // secondary 3, subordinate 4
}

TEST_CASE("usb pci: BAR0 grows to the largest Resizable BAR size; BARs are sized and placed naturally aligned") {
  Bench t;
  sys::UsbPciDevice dev(t.bridge);
  CHECK(t.gpu.bar0 == (1u << 30));
  CHECK(dev.bar_size(0) == (1u << 30));
  CHECK(dev.bar_size(2) == (2u << 20));
  CHECK(dev.bar_size(5) == (1u << 20));
  CHECK(dev.bar_size(1) == 0);
  CHECK(dev.bar_address(0) == uint64_t(32) << 30);  // prefetchable window
  CHECK(dev.bar_address(0) % dev.bar_size(0) == 0);
  CHECK(dev.bar_address(2) >= dev.bar_address(0) + dev.bar_size(0));
  CHECK(dev.bar_address(5) == 0x10000000);  // 32-bit window
  CHECK(t.topology.bar_address(0) == dev.bar_address(0));
  CHECK(t.topology.bar_address(5) == dev.bar_address(5));
}

TEST_CASE("usb pci: BARs are Mmio whose accesses are memory TLPs to the device") {
  Bench t;
  sys::UsbPciDevice dev(t.bridge);
  sys::Mmio& regs = dev.bar(5);
  regs.write32(0x3780, 0x12345678);
  CHECK(t.gpu.mem[5][0x3780] == 0x78);
  CHECK(regs.read32(0x3780) == 0x12345678);
  sys::Mmio& doorbells = dev.bar(2);
  doorbells.write64(0x18, 0x1122334455667788ull);
  CHECK(doorbells.read64(0x18) == 0x1122334455667788ull);
  sys::Mmio& vram = dev.bar(0);
  std::vector<uint8_t> block(8192);
  for (size_t i = 0; i < block.size(); ++i) block[i] = uint8_t(i * 13);
  vram.copy_in((1u << 30) - 8192, block);
  std::vector<uint8_t> back(8192);
  vram.copy_out((1u << 30) - 8192, back);
  CHECK(back == block);
  CHECK_THROWS_WITH_AS(regs.read32(1 << 20), Contains("outside it"), Error);
  CHECK_THROWS_WITH_AS(vram.copy_in(0, std::vector<uint8_t>(6)), Contains("whole aligned dwords"), Error);
  CHECK_THROWS_WITH_AS(dev.dma_alloc(4096), Contains("only through the bridge's SRAM"), Error);
  CHECK_THROWS_WITH_AS(dev.bar(1), Contains("has no BAR1"), Error);
}

TEST_CASE("usb pci: no device behind the bridges, and a pulled cable, are clear errors") {
  Bench t;
  emu::usb::PcieTopology short_chain(t.gpu, 2);  // two bridges, not four: the third is missing
  emu::usb::Asm24Model m(short_chain);
  sys::Asm24Bridge b(m);
  CHECK_THROWS_WITH_AS(sys::UsbPciDevice{b}, Contains("enumerating the PCIe bridge on bus 3 behind the USB bridge"), Error);
  CHECK_THROWS_WITH_AS(sys::UsbPciDevice{b}, Contains("Unsupported Request"), Error);
  t.model.disconnect();
  CHECK_THROWS_WITH_AS(sys::UsbPciDevice(t.bridge), Contains("disconnected"), sys::UsbError);
}
