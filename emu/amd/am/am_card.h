// The register-level emulated AMD GPU (`emu:amd:pci`, docs/amd.md §AM): a Navi31-class gfx1100 behind
// an emulated PCI device on a VirtualOs — a sysfs tree, vfio nodes, config space, and BAR0 (VRAM),
// BAR2 (doorbells) and BAR5 (registers) whose accesses reach the model — so the AM driver runs on it
// through the same PciDevice seam it uses on silicon, register by register:
//  - IP discovery binary at the top of VRAM; RCC_CONFIG_MEMSIZE; MM_INDEX/DATA and RSMU_INDEX/DATA.
//  - PSP: bootloader mailbox (component order, payloads compared with the firmware files), KM ring
//    (LOAD_TOC, SETUP_TMR, LOAD_IP_FW, AUTOLOAD_RLC, checked in order and content), then RLC autoload.
//  - SMU mailbox (version, driver table, features, mode-1 reset).
//  - GMC: the system aperture, and VMID 0's four-level page tables walked on every TLB miss (a bad or
//    missing PTE is a GPU page fault with the address, in the fault registers and the IH ring);
//    invalidation engine 17 on both hubs.
//  - IH ring in GPU memory (page faults, end-of-pipe and SDMA trap interrupts, queue faults).
//  - MEC: HQD registers per me/pipe/queue through GRBM_GFX_CNTL; an active HQD on a running MEC starts
//    the same PM4 engine and RDNA3 executor `emu:amd` uses. SDMA queue 0 by its RB registers. Doorbells
//    in BAR2, honoured only inside the doorbell aperture and the MEC doorbell range.
// Registers the model does not know: writes are recorded (unknown_registers()), reads are an Error
// naming the address, so a driver can never read a silent zero. Fidelity limits: emu/README.md.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "emu/os/virtual_os.h"

namespace ugpu::emu::usb {
class PcieEndpoint;
}

namespace ugpu::emu::amd {

struct AmCardConfig {
  std::string address = "0000:03:00.0";
  uint16_t device_id = 0x744c;                                        // Navi31 (Radeon RX 7900 XTX)
  uint64_t vram_bytes = uint64_t{24} << 30;                           // memfd-backed: pages exist only where written
  enum class Binding { Vfio, None, Amdgpu } binding = Binding::Vfio;  // the kernel driver bound to the device
  bool iommu_group = true;                                            // whether the device sits in an IOMMU group
  bool vfio_noiommu = false;
  uint64_t bar0_bytes = 0;        // how much VRAM BAR0 shows at power-on; 0: all of it
  bool resizable_bar = true;      // resource0_resize offers sizes from 256 MiB up to all of VRAM                                          // vfio in
                                  // no-IOMMU mode: /dev/vfio/noiommu-N, DMA by physical address (pagemap)
  unsigned executor_threads = 0;  // host threads a dispatch may use; 0 = all
  // The PSP compares every payload it is handed with these files (the firmware package); empty: it
  // checks types, sizes and order only.
  std::string firmware_dir;
  bool strict_registers = true;  // a read of a register the model does not know is an Error
};

struct AmCardStats {
  uint64_t dispatches = 0, wave_instructions = 0, packets = 0;
  uint64_t queues = 0;  // hardware queues running now (compute HQDs and SDMA)
  uint64_t psp_commands = 0, smu_messages = 0, tlb_invalidations = 0, page_walks = 0, interrupts = 0, mode1_resets = 0;
  bool sos_alive = false, rlc_autoloaded = false;
};

class AmCard {
 public:
  virtual ~AmCard() = default;
  virtual AmCardStats stats() const = 0;
  // What the hardware did that a bring-up engineer would look for (PSP and SMU steps, faults), in order.
  virtual std::vector<std::string> log() const = 0;
  // The lines of log() that are faults, or driver mistakes the hardware would punish silently (a
  // doorbell outside its range, a queue started without firmware): empty after a correct run.
  virtual std::vector<std::string> faults() const = 0;
  virtual std::vector<std::string> unknown_registers() const = 0;  // "write 0x1234 = 0x5" for each unmodelled write
  virtual const AmCardConfig& config() const = 0;
  // For tests: a register as the hardware holds it (after GRBM selection), and a write that bypasses
  // the driver (a crashed run that left state behind).
  virtual uint32_t peek(uint32_t dword) = 0;
  virtual void poke(uint32_t dword, uint32_t value) = 0;
  virtual void power_cycle() = 0;  // every register and firmware back to reset; VRAM keeps its contents
  // The BARs' contents by offset, as PCIe memory requests reach them (the USB bridge's path): BAR0 VRAM
  // (as far as it shows), BAR2 doorbells, BAR5 registers (whole dwords). False: outside the BAR.
  virtual bool bar_read(int bar, uint64_t offset, std::span<uint8_t> out) = 0;
  virtual bool bar_write(int bar, uint64_t offset, std::span<const uint8_t> data) = 0;
  // Memory upstream of the card that its DMA reaches at bus address `bus` (the USB bridge's SRAM and
  // XDATA windows), until the card goes.
  virtual void map_host_memory(uint64_t bus, uint8_t* host, uint64_t bytes) = 0;
};

// The card as the endpoint of an emulated PCIe topology (emu/usb/pcie_topology.h): its three BARs and
// BAR0's Resizable BAR sizes. The card must outlive it.
std::unique_ptr<usb::PcieEndpoint> pcie_endpoint(std::shared_ptr<AmCard> card);

// Installs the card's sysfs, vfio and procfs files into `os` (vfio's only in a build with the Linux
// drivers). The card lives while the returned pointer or an open file of it does.
std::shared_ptr<AmCard> install_am_gpu(VirtualOs& os, const AmCardConfig& cfg = {});

}  // namespace ugpu::emu::amd
