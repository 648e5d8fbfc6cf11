// The ASM24xx USB-to-PCIe bridge (custom firmware) as a client over the UsbTransport seam: the chip's
// XDATA, PCIe power and link, single TLPs (configuration space, with completion status and retries),
// streamed memory reads and writes (a BAR's contents), and the SRAM DMA engine (the bridge memory a
// GPU behind it uses as system memory). Request layouts: hw/usb/asm24.h. The PciDevice over the bridge
// (enumeration, BARs as Mmio) builds on this. Thread-safe: each call's requests go out together.
#pragma once
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "sys/usb.h"

namespace ugpu::sys {

// Which bridge to open among the devices on the bus (vendor:product pairs, LibusbTransport::present()):
// the first with the custom firmware's IDs; else an Error saying what is there instead — nothing, or a
// bridge still running ASMedia's stock firmware.
std::pair<uint16_t, uint16_t> pick_asm24(const std::vector<std::pair<uint16_t, uint16_t>>& present);
// An Error unless `product` (the iProduct string) is the custom firmware's.
void check_asm24_product(const std::string& name, const std::string& product);

class Asm24Bridge {
 public:
  explicit Asm24Bridge(UsbTransport& usb) : usb_(usb) {}
  UsbTransport& transport() { return usb_; }

  std::vector<uint8_t> xdata_read(uint16_t address, size_t bytes);     // in requests of at most 255 bytes
  void xdata_write(uint16_t address, std::span<const uint8_t> bytes);  // one request per byte
  // Powers the PCIe link on when it is not up; an Error naming the link state when it stays down.
  void ensure_link();

  // Configuration space of bus/dev/fn (type 0 on bus 0, type 1 beyond): 1, 2 or 4 bytes, not crossing a
  // dword. A bridge error is retried (up to 10 times, 1 ms apart); a completion other than Successful
  // (Unsupported Request: nothing there; Configuration Retry; Completer Abort) is an Error naming it.
  uint32_t config_read(uint8_t bus, uint8_t dev, uint8_t fn, uint16_t reg, int size);
  void config_write(uint8_t bus, uint8_t dev, uint8_t fn, uint16_t reg, int size, uint32_t value);

  // PCIe memory, whole dwords (address and length multiples of 4): one TLP stream and one bulk transfer.
  void mem_read(uint64_t address, std::span<uint8_t> out);
  void mem_write(uint64_t address, std::span<const uint8_t> data);

  // The SRAM DMA engine: write `data` at 16 KiB slot `first_slot` (padded to 512-byte sectors), or read
  // `out.size()` bytes from the start of the SRAM (arm, then the bulk IN, which the bridge sends when the
  // GPU writes its release word; sram_read_armed waits for it).
  void sram_write(uint32_t first_slot, std::span<const uint8_t> data);
  void sram_arm_read(size_t bytes);
  // Arms a read and then writes one XDATA byte (what tells the GPU to fill the SRAM), the two
  // requests queued together: one round trip.
  void sram_arm_read_then_poke(size_t bytes, uint16_t xdata, uint8_t value);
  void sram_read_armed(std::span<uint8_t> out, std::chrono::milliseconds timeout = std::chrono::seconds(10));
  // sram_write without waiting, so writes pipeline: `sectors` (whole 512-byte sectors) must stay
  // untouched until wait(). Nothing else may use the bulk OUT endpoint meanwhile: hold() the bridge.
  struct Pending {
    UsbTransport::Transfer request = 0, data = 0;
  };
  Pending sram_write_async(uint32_t first_slot, std::span<const uint8_t> sectors);
  void wait(const Pending& p);
  // The bridge for this thread alone until the lock goes: a sequence no other request may come
  // between (queued SRAM writes; an armed SRAM read and its bulk IN).
  std::unique_lock<std::recursive_mutex> hold() { return std::unique_lock(mu_); }

  uint64_t requests() const { return requests_; }  // control transfers so far (a measure of round trips)

 private:
  uint32_t single(uint8_t fmt_type, uint64_t address, int size, uint32_t value, const char* what);
  void control_out(uint8_t request, uint16_t value, uint16_t index, std::span<uint8_t> data, std::chrono::milliseconds timeout);
  UsbTransport& usb_;
  std::recursive_mutex mu_;
  std::atomic<uint64_t> requests_{0};
};

}  // namespace ugpu::sys
