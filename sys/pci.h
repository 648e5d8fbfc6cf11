// The PciDevice seam (docs/design.md §3): config space, BARs (as Mmio), DMA-able host memory with bus
// addresses, reset — what a driver needs to run a GPU with no kernel GPU driver. The real ones go
// only through an Os (so tests drive them over emu::VirtualOs):
//  - SysfsPciDevice: /sys/bus/pci/devices/<addr>/{config,resource,resourceN,enable,reset}; needs root.
//    DMA memory is pinned anonymous memory whose physical addresses come from /proc/self/pagemap.
//    Limits: no IOMMU translation — with the IOMMU on (not passthrough) the device cannot reach that
//    memory; mlock keeps pages resident but the kernel may still migrate 4 KiB pages (compaction,
//    NUMA balancing), so prefer hugepages (used when reserved) or vfio for long-lived buffers.
//  - VfioPciDevice: the device bound to vfio-pci, a type-1 IOMMU container; DMA memory is mapped at
//    IOVAs from a bump allocator starting at 4 GiB (clear of the x86 MSI window; never reused). In vfio's
//    no-IOMMU mode (group node /dev/vfio/noiommu-N; root) DMA memory is pinned and addressed physically,
//    as on the sysfs path.
// The Os must outlive the device and every DmaBuffer it handed out. Methods are thread-safe.
// Both are Linux-only (pci_linux.cpp): a build with -Dlinux_drivers=disabled has neither, and there
// open_pci_device says so; the bus listing below is portable and finds nothing without sysfs.
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "sys/mmio.h"
#include "sys/os.h"

namespace ugpu::sys {

inline constexpr const char* kPciSysfs = "/sys/bus/pci/devices";

// Host memory the device can reach by DMA. bus[i] is the device address of bytes
// [i * page_size, (i + 1) * page_size): one entry when the memory is contiguous to the device (vfio).
struct DmaBuffer {
  uint8_t* host = nullptr;
  size_t size = 0;  // the request rounded up to page_size
  size_t page_size = 0;
  std::vector<uint64_t> bus;
  std::shared_ptr<void> owner;                // unmaps (and unpins) when the last copy goes
  uint64_t bus_address(size_t offset) const;  // throws Error outside the buffer
  std::span<uint8_t> bytes() const { return {host, size}; }
};

class PciDevice {
 public:
  virtual ~PciDevice() = default;
  virtual const std::string& address() const = 0;  // "0000:03:00.0"
  virtual std::string kind() const = 0;            // "sysfs", "vfio", ...
  // size is 1, 2 or 4 bytes, little-endian, inside the 4 KiB config space; else Error.
  virtual uint32_t config_read(uint32_t offset, int size) = 0;
  virtual void config_write(uint32_t offset, int size, uint32_t value) = 0;
  virtual uint64_t bar_size(int n) = 0;  // 0 for a BAR that is absent (or the top half of a 64-bit one)
  virtual Mmio& bar(int n) = 0;          // maps BAR n (0..5) on first use; lives as long as the device
  virtual DmaBuffer dma_alloc(size_t bytes) = 0;
  virtual void reset() = 0;  // function-level reset; BAR mappings stay valid, device state is gone
  // Resizable BAR: grows BAR n, before it is first mapped, to the largest size the device offers.
  // Returns the new size, or 0 where this path cannot resize it (then nothing changed).
  virtual uint64_t resize_bar(int /*n*/) { return 0; }
  uint16_t vendor_id() { return uint16_t(config_read(0, 2)); }
  uint16_t device_id() { return uint16_t(config_read(2, 2)); }
};

struct PciInfo {
  std::string address;
  uint16_t vendor = 0, device = 0;
  uint32_t class_code = 0;  // 0x030000 = VGA controller, 0x038000 = display controller, 0x120000 = accelerator
  std::string driver;       // the bound kernel driver ("amdgpu", "vfio-pci"), empty when none
};

// Every device in /sys/bus/pci/devices (none when there is no sysfs), optionally of one vendor.
std::vector<PciInfo> list_pci_devices(Os& os, std::optional<uint16_t> vendor = {});
// "03:00.0" -> "0000:03:00.0"; anything not of the form [dddd:]bb:dd.f throws Error.
std::string normalize_pci_address(std::string_view address);
// /sys/bus/pci/devices/<address>, and the number in one of its attributes ("0x1002\n"; an Error naming
// `file` when it holds none).
std::string pci_sysfs_dir(const std::string& address);
uint64_t parse_sysfs_hex(std::string_view text, const std::string& file);
// vfio when the device is bound to vfio-pci, sysfs when it has no driver; a device bound to another
// kernel driver is an Error saying which and how to unbind it.
std::unique_ptr<PciDevice> open_pci_device(Os& os, std::string_view address);
// The kernel driver bound to the device ("" for none), and unbinding it (needs root; the device is then
// free for the sysfs path, or for binding vfio-pci).
std::string bound_driver(Os& os, std::string_view address);
void unbind_driver(Os& os, std::string_view address);

class SysfsPciDevice final : public PciDevice {
 public:
  // Opens config space and turns on memory decoding and bus mastering (`enable`, command register).
  SysfsPciDevice(Os& os, std::string_view address);
  const std::string& address() const override { return addr_; }
  std::string kind() const override { return "sysfs"; }
  uint32_t config_read(uint32_t offset, int size) override;
  void config_write(uint32_t offset, int size, uint32_t value) override;
  uint64_t bar_size(int n) override;
  Mmio& bar(int n) override;
  DmaBuffer dma_alloc(size_t bytes) override;
  void reset() override;
  uint64_t resize_bar(int n) override;  // through resourceN_resize

 private:
  void read_resources();
  struct Bar {
    uint64_t size = 0, flags = 0;  // from the `resource` table
    std::unique_ptr<Mmio> mmio;
  };
  Os& os_;
  std::string addr_, dir_;
  Fd config_;
  std::array<Bar, 6> bars_;
  std::mutex mu_;
};

class VfioPciDevice final : public PciDevice {
 public:
  VfioPciDevice(Os& os, std::string_view address);
  const std::string& address() const override { return addr_; }
  std::string kind() const override { return noiommu_ ? "vfio-noiommu" : "vfio"; }
  uint32_t config_read(uint32_t offset, int size) override;
  void config_write(uint32_t offset, int size, uint32_t value) override;
  uint64_t bar_size(int n) override;
  Mmio& bar(int n) override;
  DmaBuffer dma_alloc(size_t bytes) override;
  void reset() override;
  const std::string& group() const { return group_id_; }

 private:
  struct Region {
    uint64_t size = 0, offset = 0;
    uint32_t flags = 0;
    std::unique_ptr<Mmio> mmio;
  };
  Os& os_;
  std::string addr_, group_id_;
  std::shared_ptr<Fd> container_;  // shared with DmaBuffers, which unmap through it
  Fd group_, device_;
  uint32_t device_flags_ = 0;
  std::array<Region, 8> regions_;  // BAR0..5, ROM, config (vfio-pci's fixed region indexes)
  uint64_t next_iova_ = uint64_t{1} << 32;
  bool noiommu_ = false;
  std::mutex mu_;
};

}  // namespace ugpu::sys
