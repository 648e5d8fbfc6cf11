// The PCIe side of the emulated USB bridge: a chain of PCIe bridges (type-1 functions, buses 0 ..
// N-1, device 0 each: bus numbers, memory and prefetchable windows, command) leading to one endpoint on
// bus N, whose configuration space has its BARs (with sizing: all ones reads back the size mask) and a
// Resizable BAR capability for BAR0. Configuration requests are routed by the bridges' bus numbers and
// memory requests by their windows and the endpoint's BARs, as a PCIe fabric routes them: before
// enumeration nothing past bus 0 answers.
#pragma once
#include <array>
#include <cstdint>
#include <mutex>
#include <span>
#include <vector>

#include "emu/usb/asm24_model.h"

namespace ugpu::emu::usb {

// The device at the end of the chain.
class PcieEndpoint {
 public:
  struct Bar {
    uint64_t size = 0;        // 0: absent
    bool prefetch64 = false;  // 64-bit prefetchable (else 32-bit memory)
  };
  virtual ~PcieEndpoint() = default;
  virtual uint16_t vendor_id() const = 0;
  virtual uint16_t device_id() const = 0;
  virtual std::array<Bar, 6> bars() const = 0;
  // Resizable BAR for BAR0: the sizes offered (powers of two, at least 1 MiB); empty: none.
  virtual std::vector<uint64_t> bar0_sizes() const { return {}; }
  virtual void bar0_resized(uint64_t /*bytes*/) {}
  virtual bool bar_read(int bar, uint64_t offset, std::span<uint8_t> out) = 0;
  virtual bool bar_write(int bar, uint64_t offset, std::span<const uint8_t> data) = 0;
};

class PcieTopology final : public PcieFabric {
 public:
  PcieTopology(PcieEndpoint& endpoint, uint8_t endpoint_bus = 4);
  bool config_read(uint8_t bus, uint8_t dev, uint8_t fn, uint16_t reg, uint32_t& value) override;
  bool config_write(uint8_t bus, uint8_t dev, uint8_t fn, uint16_t reg, uint32_t value, uint8_t byte_enables) override;
  bool mem_read(uint64_t address, std::span<uint8_t> out) override;
  bool mem_write(uint64_t address, std::span<const uint8_t> data) override;
  uint64_t bar_address(int n) const;  // as the endpoint's BAR registers hold it

 private:
  std::vector<uint8_t>* function(uint8_t bus, uint8_t dev, uint8_t fn);     // routed, or null; lock held
  bool decode(uint64_t address, size_t bytes, int& bar, uint64_t& offset);  // lock held
  uint32_t get(const std::vector<uint8_t>& c, uint16_t reg) const;
  void put(std::vector<uint8_t>& c, uint16_t reg, uint32_t v);
  PcieEndpoint& ep_;
  uint8_t ep_bus_;
  std::vector<std::vector<uint8_t>> bridges_;  // config space of the bridge on bus i
  std::vector<uint8_t> ep_config_;
  std::array<uint64_t, 6> sizes_{};
  mutable std::mutex mu_;
};

}  // namespace ugpu::emu::usb
