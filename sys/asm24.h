// The ASM24xx USB-to-PCIe bridge (custom firmware) as a client over the UsbTransport seam: the chip's
// XDATA, PCIe power and link, single TLPs (configuration space, with completion status and retries),
// streamed memory reads and writes (a BAR's contents), and the SRAM DMA engine (the bridge memory a
// GPU behind it uses as system memory). Request layouts: hw/usb/asm24.h. The PciDevice over the bridge
// (enumeration, BARs as Mmio) builds on this. Not thread-safe: one request at a time.
#pragma once
#include <chrono>
#include <cstdint>
#include <span>
#include <vector>

#include "sys/usb.h"

namespace ugpu::sys {

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
  void sram_read_armed(std::span<uint8_t> out, std::chrono::milliseconds timeout = std::chrono::seconds(10));

  uint64_t requests() const { return requests_; }  // control transfers so far (a measure of round trips)

 private:
  uint32_t single(uint8_t fmt_type, uint64_t address, int size, uint32_t value, const char* what);
  void control_out(uint8_t request, uint16_t value, uint16_t index, std::span<uint8_t> data, std::chrono::milliseconds timeout);
  UsbTransport& usb_;
  uint64_t requests_ = 0;
};

}  // namespace ugpu::sys
