// The ASMedia ASM24xx USB-to-PCIe bridge with the custom firmware tinygrad's USB eGPU path uses (the
// `0xADD1:0x0001` / `0x3801:0x0001` devices): its vendor control requests, the TLP descriptor they carry,
// the completion the bridge returns, and the chip's XDATA and SRAM windows. Facts from tinygrad's
// runtime/support/usb.py and ops_amd.py (see docs; nothing here is from an ASMedia document). The bridge
// client (sys/asm24.h) and the emulated bridge (emu/usb/) both read these.
#pragma once
#include <cstddef>
#include <cstdint>

namespace ugpu::hw::usb {

inline constexpr uint16_t kVendorIds[][2] = {{0xADD1, 0x0001}, {0x3801, 0x0001}};  // (idVendor, idProduct)
// The same chips with ASMedia's own firmware (a USB storage bridge): not usable until flashed.
inline constexpr uint16_t kStockIds[][2] = {{0x174C, 0x2463}, {0x174C, 0x2464}};
// The custom firmware's iProduct string starts with one of these.
inline constexpr const char* kCustomProducts[] = {"custom", "AS2462"};
inline constexpr uint8_t kBulkOut = 0x02, kBulkIn = 0x81;
inline constexpr uint8_t kRequestOut = 0x40, kRequestIn = 0xC0;  // bmRequestType: vendor, device

// bRequest values.
enum Request : uint8_t {
  kXdataRead = 0xE4,   // IN: wValue = XDATA address, up to 255 bytes
  kXdataWrite = 0xE5,  // OUT, no data: wValue = address, wIndex = the byte
  kTlp = 0xF0,         // OUT: a TlpDescriptor, wValue = fmt_type | byte_enable << 8, wIndex = mode; IN: a Completion
  kSramDma = 0xF2,     // OUT, no data: arm the SRAM DMA engine; a bulk transfer follows
  kPciePower = 0xF3,   // OUT, no data: wValue 1 = on (the link trains before it returns), 0 = off
};
inline constexpr size_t kXdataMaxRead = 0xFF;

// TLP modes (wIndex of kTlp).
enum TlpMode : uint16_t {
  kTlpSingle = 0,       // one dword; non-posted requests answer with a Completion on kTlp IN
  kTlpStreamWrite = 1,  // MWr of `dwords`, the payload follows on bulk OUT
  kTlpStreamRead = 2,   // MRd of `dwords`, the data comes on bulk IN
};
// TLP header byte 0 (Fmt | Type).
enum FmtType : uint8_t {
  kCfgRd0 = 0x04,
  kCfgRd1 = 0x05,
  kCfgWr0 = 0x44,
  kCfgWr1 = 0x45,
  kMRd64 = 0x20,
  kMWr64 = 0x60,
  kMWr32 = 0x40,
};
constexpr bool is_posted(uint8_t fmt_type) { return (fmt_type & 0xDF) == 0x40 || (fmt_type & 0xB8) == 0x30; }
constexpr bool is_config(uint8_t fmt_type) { return (fmt_type & 0xBE) == 0x04; }
constexpr bool is_write(uint8_t fmt_type) { return fmt_type & 0x40; }

#pragma pack(push, 1)
// kTlp's OUT data stage: three little-endian dwords.
struct TlpDescriptor {
  uint32_t address_lo;  // single mode: the dword address (low 2 bits 0; the byte lanes are in the byte enables)
  uint32_t address_hi;
  uint32_t data;  // single-mode write: the value in its byte lanes; streaming: the dword count
};
// kTlp's IN data stage, after a non-posted single-mode request.
struct Completion {
  uint32_t data;   // the whole dword; the host takes its byte lanes
  uint8_t status;  // bits 7:5: the PCIe completion status (CplStatus)
  uint8_t unused[2];
  uint8_t retry;  // non-zero: the bridge's own error or timeout; the request may be sent again
};
#pragma pack(pop)
static_assert(sizeof(TlpDescriptor) == 12 && sizeof(Completion) == 8 && offsetof(Completion, retry) == 7);

enum CplStatus : uint8_t { kCplSuccess = 0, kCplUnsupported = 1, kCplConfigRetry = 2, kCplAbort = 4 };
constexpr uint8_t completion_status(const Completion& c) { return c.status >> 5; }
constexpr const char* completion_status_name(uint8_t s) {
  return s == kCplSuccess       ? "Successful Completion"
         : s == kCplUnsupported ? "Unsupported Request"
         : s == kCplConfigRetry ? "Configuration Request Retry"
         : s == kCplAbort       ? "Completer Abort"
                                : "a reserved completion status";
}

// A configuration request's address: the layout of a config TLP's header DW2.
constexpr uint32_t config_address(uint32_t bus, uint32_t dev, uint32_t fn, uint32_t reg) { return bus << 24 | dev << 19 | fn << 16 | (reg & 0xFFC); }
constexpr uint8_t byte_enables(uint64_t address, int bytes) { return uint8_t(((1u << bytes) - 1) << (address & 3)); }

// XDATA: the chip's own address space.
inline constexpr uint16_t kXdataLtssm = 0xB450;  // PCIe link state
inline constexpr uint8_t kLtssmL0 = 0x78;        // link up
inline constexpr size_t kXdataBytes = 64 << 10;

// Memory of the bridge that the GPU reaches on PCIe ("system memory" for a GPU behind USB).
struct SramWindow {
  uint16_t xdata;  // where the host sees it in XDATA (the large SRAM only through kSramDma)
  uint64_t pcie;   // where the GPU sees it
  uint32_t bytes;
};
inline constexpr SramWindow kSram{0xF000, 0x200000, 512 << 10};  // the DMA engine's SRAM, in 16 KiB slots
inline constexpr SramWindow kSysBuf{0xA000, 0x820000, 4 << 10};  // XDATA-reachable: fences
inline constexpr SramWindow kCqBuf{0xB800, 0x822000, 4 << 10};   // the GPU's write here releases an armed SRAM read
inline constexpr uint32_t kReleaseOffset = 12;                   // the release word in kCqBuf (an NVMe CQE's dword 3)
inline constexpr uint32_t kFenceOffset = 0x800;                  // the copy-in drain fence in kSysBuf (tinygrad's choice)
inline constexpr uint32_t kGoOffset = 0x804;                     // ugpu's copy-out token in kSysBuf: the GPU fills the SRAM when it changes
inline constexpr uint32_t kSramSlotBytes = 16 << 10, kSramSectorBytes = 512;
// kSramDma: wValue = sectors (bits 14:0) | read << 15; wIndex = first slot | slot count << 8.
constexpr uint16_t sram_dma_value(uint32_t bytes, bool read) {
  return uint16_t(((bytes + kSramSectorBytes - 1) / kSramSectorBytes & 0x7FFF) | (read ? 0x8000 : 0));
}
constexpr uint16_t sram_dma_index(uint32_t first_slot, uint32_t bytes) {
  return uint16_t((first_slot & 0xFF) | ((bytes + kSramSlotBytes - 1) / kSramSlotBytes & 0xFF) << 8);
}

}  // namespace ugpu::hw::usb
