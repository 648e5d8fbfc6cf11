// The emulated ASM24xx USB-to-PCIe bridge (custom firmware) behind the UsbTransport seam: the chip's
// XDATA, the PCIe link (trained by the power request), the TLP engine forwarding configuration and
// memory requests to whatever sits on the PCIe side (a PcieFabric), the 512 KiB SRAM and its DMA engine,
// and the XDATA windows the GPU reaches as PCIe memory (hw/usb/asm24.h). Every request is checked as a
// strict device would check it: unknown requests, wrong directions, a bulk transfer nobody armed or of the
// wrong size stall (UsbError). Faults on request: the bridge's own TLP errors (the client retries them),
// a link that will not train, an unplugged cable.
#pragma once
#include <chrono>
#include <cstdint>
#include <map>
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
  // address). A write of the release word (kCqBuf + kReleaseOffset) lets an armed SRAM read go out.
  // False: not bridge memory.
  bool gpu_write(uint64_t pcie, std::span<const uint8_t> data);
  bool gpu_read(uint64_t pcie, std::span<uint8_t> out);
  // The same memory as an emulated GPU's DMA reaches it, directly: where each window lives. While an
  // SRAM read is armed, the release word holds a marker; any GPU write there releases the read.
  struct HostWindow {
    uint64_t pcie;
    uint8_t* host;
    size_t bytes;
  };
  std::vector<HostWindow> gpu_windows();

  // Faults.
  void fail_next_tlps(int count, uint8_t retry_status);  // the bridge's own TLP errors
  void hold_link_down(bool down);                        // the link never trains
  void disconnect();                                     // the cable is pulled: every later transfer fails

  struct Stats {
    uint64_t control = 0, bulk_out_bytes = 0, bulk_in_bytes = 0, tlps = 0;
  };
  Stats stats() const;

  // The wire model: how long the transfers so far would take on a real link, so a copy scheme's
  // efficiency can be measured without the hardware. Each transfer starts a latency after the host
  // submits it (or once its direction of the link is free) and holds the link for its bytes on the
  // wire — payload in packets of `packet_bytes`, each with `packet_overhead` bytes of header and
  // framing — at the link's rate, and SRAM DMA data no faster than the bridge's engine moves it. The
  // host waits for a synchronous transfer; asynchronous ones overlap until wait().
  struct Wire {
    const char* name;
    double link_bytes_per_s, sram_bytes_per_s;
    double control_latency_us, bulk_latency_us;
    uint32_t packet_bytes, packet_overhead;
  };
  static Wire usb3_gen2();  // USB 3.2 Gen 2: 10 Gb/s, 128b/132b; the default
  static Wire usb3_gen1();  // USB 3.2 Gen 1: 5 Gb/s, 8b/10b
  void set_wire(const Wire& w);
  struct WireStats {
    double host_us = 0;       // the host's clock: when its last wait would have returned
    uint64_t wire_bytes = 0;  // bytes on the link, framing included
    uint64_t transfers = 0, control = 0;
  };
  WireStats wire() const;
  void reset_wire();
  // More faults: SRAM writes that reach the SRAM only after `delay` (the GPU sees the old bytes
  // meanwhile), and a bulk transfer that stalls (times out) after `after` more bulk transfers.
  void delay_sram_writes(std::chrono::microseconds delay);
  void stall_bulk_after(int after);
  std::vector<uint8_t> sram(size_t offset, size_t bytes) const;
  uint8_t xdata(uint16_t address) const;

 protected:
  size_t do_bulk(uint8_t endpoint, std::span<uint8_t> data, std::chrono::milliseconds timeout) override;
  size_t do_control(uint8_t request_type, uint8_t request, uint16_t value, uint16_t index, std::span<uint8_t> data,
                    std::chrono::milliseconds timeout) override;
  Transfer do_submit(const Request& r) override;
  size_t do_wait(Transfer t) override;

 private:
  double schedule(bool in, bool control, size_t bytes, bool sram);  // the modeled end of a transfer; lock held
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
  std::optional<size_t> armed_;                     // an SRAM read waiting for the GPU's release (held apart from TLP streams, as the firmware does)
  std::optional<std::vector<uint8_t>> completion_;  // the answer to the last non-posted single TLP
  bool released_ = false;                           // the GPU let an armed SRAM read go (through gpu_write)
  static constexpr uint32_t kArmedMarker = 0xA5A5A5A5;  // in the release word while a read is armed
  bool released() const;                                // lock held
  int fail_tlps_ = 0;
  uint8_t fail_status_ = 0;
  bool link_down_ = false, disconnected_ = false;
  Stats stats_;
  Wire wire_ = usb3_gen2();
  WireStats wire_stats_;
  double link_free_us_[2] = {0, 0};          // OUT, IN: when each direction of the link is next free
  std::map<Transfer, double> async_end_us_;  // asynchronous transfers' modeled ends
  std::chrono::microseconds sram_delay_{0};
  int stall_after_ = -1;
};

}  // namespace ugpu::emu::usb
