// The devices this build knows (docs/design.md §5): names, opening one, the default choice, and loading
// a kernel from its UOp graph onto any of them.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "drivers/amd/am/am_gpu.h"
#include "hcq/device.h"
#include "ir/uop.h"
#include "sys/os.h"
#include "sys/usb.h"

namespace ugpu::emu {
class VirtualOs;
namespace amd {
class AmCard;
}
namespace usb {
class Asm24Model;
}
}  // namespace ugpu::emu

namespace ugpu::drivers {

struct DeviceEntry {
  std::string name;         // what --device takes
  std::string description;  // one line for `ugpu devices`
  bool hardware = false;    // needs a real GPU (tests/silicon); false: runs on any machine
};
std::vector<DeviceEntry> known_devices();

// Throws Error naming the known devices for an unknown name, or saying why a known one cannot open.
std::unique_ptr<hcq::Device> open_device(const std::string& name);

// The device used when none is named: $UGPU_DEVICE, else the first GPU found (/dev/kfd, then
// /dev/nvidiactl, then an AMD GPU bound to vfio-pci), else the emulated AMD GPU; in a build without the
// Linux drivers, cpu. `why` says how it was chosen, for the user.
struct DefaultDevice {
  std::string name, why;
};
DefaultDevice default_device();

// The GPUs on the PCI bus (display and accelerator classes), with the driver bound to each and what
// ugpu needs to use it: for `ugpu devices`.
struct PciGpu {
  std::string address, vendor, device_id, driver;
  std::string use;  // "amd:kfd (amdgpu is loaded); for amd:pci ..." — one line a person can act on
};
std::vector<PciGpu> pci_gpus(sys::Os& os);

// `emu:amd:pci`'s parts: the emulated card in its own VirtualOs, holding the firmware package's files
// (from `firmware_dir`; empty: am::Firmware::default_dir()), and the AM options that boot it.
struct EmuAmPci {
  std::shared_ptr<emu::VirtualOs> os;
  std::shared_ptr<emu::amd::AmCard> card;
  amd::am::AmOptions options;
};
EmuAmPci make_emu_am_pci(const std::string& firmware_dir = {});
// `emu:amd:usb`'s parts: the same card as the endpoint of an emulated PCIe topology behind the
// emulated ASM24xx bridge (the UsbTransport the driver opens; it keeps the topology alive), the card's
// DMA reaching the bridge's SRAM and XDATA windows.
struct EmuAmUsb {
  std::shared_ptr<emu::VirtualOs> os;  // the firmware files
  std::shared_ptr<emu::amd::AmCard> card;
  std::shared_ptr<emu::usb::Asm24Model> bridge;
  amd::am::AmOptions options;
};
EmuAmUsb make_emu_am_usb(const std::string& firmware_dir = {});
std::unique_ptr<hcq::Device> open_emu_am_usb(EmuAmUsb e);
// The first ASM24xx bridge with the custom firmware on the USB bus, claimed through libusb (amd:usb);
// an Error saying what is there instead (nothing, a stock-firmware bridge, no permission).
std::shared_ptr<sys::UsbTransport> open_usb_bridge();

// `emu:qcom`: the emulated Adreno 630 (kgsl model, CP, ir3 executor) in its own VirtualOs.
// `strict_hazards`: a scheduling hazard in a kernel (a register read before its (ss)/(sy) wait or
// inside its delay slots) is a GPU fault, so every kernel the compiler makes is checked. Only with the
// Linux drivers.
struct EmuQcom {
  bool strict_hazards = true;
  unsigned threads = 0;  // host threads running workgroups (0: the executor's default)
};
std::unique_ptr<hcq::Device> open_emu_qcom(EmuQcom e);

// Compiles `kernel` for the device's target (through the compile cache) and loads it.
std::shared_ptr<hcq::Program> load_kernel(hcq::Device& dev, const ir::UOp& kernel, const std::string& name);

}  // namespace ugpu::drivers
