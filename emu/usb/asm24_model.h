// The emulated ASM24xx USB-to-PCIe bridge (custom firmware) behind the UsbTransport seam: the chip's
// XDATA, the PCIe link (trained by the power request), the TLP engine forwarding configuration and
// memory requests to whatever sits on the PCIe side (a PcieFabric), the 512 KiB SRAM and its DMA engine,
// and the XDATA windows the GPU reaches as PCIe memory (hw/usb/asm24.h). Every request is checked as a
// strict device would check it: unknown requests, wrong directions, a bulk transfer nobody armed or of the
// wrong size stall (UsbError). Faults on request: the bridge's own TLP errors (the client retries them),
// a link that will not train, an unplugged cable.
#pragma once
#include <cstdint>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "sys/usb.h"

namespace ugpu::emu::usb {

// What sits behind the bridge on PCIe: configuration space by bus/dev/fn and memory by address.
class PcieFabric {
 public:
  virtual ~PcieFabric() = default;
  // false: no function there (the bridge answers Unsupported Request). Reads return the whole dword;
  // writes take the byte enables of a dword.
  virtual bool config_read(uint8_t bus, uint8_t dev, uint8_t fn, uint16_t reg, uint32_t& value) = 0;
  virtual bool config_write(uint8_t bus, uint8_t dev, uint8_t fn, uint16_t reg, uint32_t value, uint8_t byte_enables) = 0;
  // false: no BAR decodes the range.
  virtual bool mem_read(uint64_t address, std::span<uint8_t> out) = 0;
  virtual bool mem_write(uint64_t address, std::span<const uint8_t> data) = 0;
};

class Asm24Model final : public sys::UsbTransport {
 public:
  explicit Asm24Model(PcieFabric& fabric);
  std::string name() const override { return "usb add1:0001 (emulated ASM24xx)"; }

  // The GPU's side: its writes and reads of the bridge's memory (the SRAM and the XDATA windows, by PCIe
  // address). A write of the release word (kCqBuf + 12) lets an armed SRAM read go out. False: not bridge memory.
  bool gpu_write(uint64_t pcie, std::span<const uint8_t> data);
  bool gpu_read(uint64_t pcie, std::span<uint8_t> out);

  // Faults.
  void fail_next_tlps(int count, uint8_t retry_status);  // the bridge's own TLP errors
  void hold_link_down(bool down);                        // the link never trains
  void disconnect();                                     // the cable is pulled: every later transfer fails

  struct Stats {
    uint64_t control = 0, bulk_out_bytes = 0, bulk_in_bytes = 0, tlps = 0;
  };
  Stats stats() const;
  std::vector<uint8_t> sram(size_t offset, size_t bytes) const;
  uint8_t xdata(uint16_t address) const;

 protected:
  size_t do_bulk(uint8_t endpoint, std::span<uint8_t> data, std::chrono::milliseconds timeout) override;
  size_t do_control(uint8_t request_type, uint8_t request, uint16_t value, uint16_t index, std::span<uint8_t> data,
                    std::chrono::milliseconds timeout) override;

 private:
  [[noreturn]] void stall(const std::string& why) const;
  struct Pending {  // the bulk transfer a request announced
    enum Kind { kStreamWrite, kStreamRead, kSramWrite, kSramRead } kind;
    uint64_t address = 0;  // PCIe address, or SRAM offset
    size_t bytes = 0;
  };
  PcieFabric& fabric_;
  mutable std::mutex mu_;
  std::vector<uint8_t> xdata_, sram_;
  std::optional<Pending> pending_;
  std::optional<std::vector<uint8_t>> completion_;  // the answer to the last non-posted single TLP
  bool released_ = false;                           // the GPU let an armed SRAM read go
  int fail_tlps_ = 0;
  uint8_t fail_status_ = 0;
  bool link_down_ = false, disconnected_ = false;
  Stats stats_;
};

}  // namespace ugpu::emu::usb
