#include "drivers/devices.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>

#include "codegen/compiler.h"
#include "drivers/amd/am/am.h"
#include "drivers/cpu/cpu_device.h"
#include "emu/amd/am/am_card.h"
#include "emu/usb/pcie_topology.h"
#include "sys/asm24.h"
#include "sys/pci.h"
#include "sys/usb.h"
// The Linux drivers (-Dlinux_drivers, meson_options.txt): KFD, NVIDIA RM/UVM, and PCI through vfio and
// sysfs. This file is where a build without them differs: their rows below, and the default device.
#if UGPU_LINUX_DRIVERS
#include "drivers/amd/kfd/kfd.h"
#include "drivers/nv/rm/rm_gpu.h"
#include "drivers/qcom/kgsl.h"
#include "drivers/qcom/qcom_device.h"
#include "emu/amd/kfd/kfd_model.h"
#include "emu/nv/rm/rm_model.h"
#include "emu/qcom/ir3_exec.h"
#include "emu/qcom/kgsl_model.h"
#endif

namespace ugpu::drivers {
namespace {
struct Driver {
  DeviceEntry entry;
  std::function<std::unique_ptr<hcq::Device>()> open;
};
// The devices of the Linux drivers: a build without them names these in its error.
constexpr const char* kLinuxDevices[] = {"emu:amd", "emu:amd:pci", "amd:kfd", "amd:pci", "amd", "emu:nv", "nv", "emu:qcom", "qcom"};
#if UGPU_LINUX_DRIVERS
std::unique_ptr<hcq::Device> open_amd_kfd() {
  amd::AmdOptions o;
  return amd::open_kfd(std::shared_ptr<sys::Os>(&sys::posix_os(), [](sys::Os*) {}), o);
}
// The emulated card lives in its own VirtualOs, which the device keeps.
std::unique_ptr<hcq::Device> open_emu_amd() {
  auto os = std::make_shared<emu::VirtualOs>();
  auto gpu = emu::amd::install_kfd_gpu(*os);
  amd::AmdOptions o;
  o.name = "emu:amd", o.kind = "emulated gpu";
  auto dev = amd::open_kfd(os, o);
  dev->set_instruction_counter([card = std::weak_ptr(gpu)] {
    auto g = card.lock();
    return g ? g->stats().wave_instructions : 0;
  });
  return dev;
}
std::unique_ptr<hcq::Device> open_amd_pci() {
  amd::AmdOptions o;
  o.name = "amd:pci";
  return amd::open_am(std::shared_ptr<sys::Os>(&sys::posix_os(), [](sys::Os*) {}), o);
}
std::unique_ptr<hcq::Device> open_amd() { return sys::posix_os().exists("/dev/kfd") ? open_amd_kfd() : open_amd_pci(); }
// The register-level card: the AM driver boots it from the firmware files as it boots silicon.
std::unique_ptr<hcq::Device> open_emu_amd_pci() {
  EmuAmPci e = make_emu_am_pci();
  amd::AmdOptions o;
  o.name = "emu:amd:pci", o.kind = "emulated gpu";
  auto dev = amd::open_am(e.os, o, e.options);
  dev->set_instruction_counter([card = std::weak_ptr(e.card)] {
    auto g = card.lock();
    return g ? g->stats().wave_instructions : 0;
  });
  return dev;
}
std::unique_ptr<hcq::Device> open_nv() {
  nv::NvOptions o;
  return nv::open_nv(std::shared_ptr<sys::Os>(&sys::posix_os(), [](sys::Os*) {}), o);
}
std::unique_ptr<hcq::Device> open_emu_nv() {
  auto os = std::make_shared<emu::VirtualOs>();
  auto gpu = emu::nv::install_nv_gpu(*os);
  nv::NvOptions o;
  o.name = "emu:nv", o.kind = "emulated gpu", o.emulator_runs_ptx = true;
  auto dev = nv::open_nv(os, o);
  dev->set_instruction_counter([card = std::weak_ptr(gpu)] {
    auto g = card.lock();
    return g ? g->stats().ptx_instructions : 0;
  });
  return dev;
}
std::unique_ptr<hcq::Device> open_qcom_gpu() {
  qcom::QcomOptions o;
  return qcom::open_qcom(std::shared_ptr<sys::Os>(&sys::posix_os(), [](sys::Os*) {}), o);
}
#endif
// The GPU behind an ASM24xx bridge with the custom firmware, through libusb; firmware from /lib/firmware/amdgpu.
std::unique_ptr<hcq::Device> open_amd_usb() {
  amd::AmdOptions o;
  o.name = "amd:usb";
  o.compute_ring_bytes = amd::kUsbComputeRingBytes;
  return amd::open_am_usb(std::shared_ptr<sys::Os>(&sys::posix_os(), [](sys::Os*) {}), open_usb_bridge(), o);
}
// One row per device string, in the order `ugpu devices` lists them; a new way in or vendor is a new
// row (docs/adding-a-device.md). qcom joins as its driver lands.
const std::vector<Driver>& drivers() {
  static const std::vector<Driver> d = {
      {{"cpu", "the host CPU: x86 kernels from LLVM, spread over worker threads"}, [] { return std::make_unique<cpu::CpuDevice>(); }},
#if UGPU_LINUX_DRIVERS
      {{"emu:amd", "an emulated Radeon RX 7900 XTX class GPU (gfx1100) behind an emulated amdkfd: the AMD driver end to end, no GPU needed"},
       open_emu_amd},
      {{"emu:amd:pci",
        "an emulated RX 7900 XTX class GPU (gfx1100) as registers behind an emulated PCI device: the AM driver boots it from the "
        "firmware files (PSP, SMU, GMC, IH, MEC, SDMA) with no kernel driver, no GPU needed"},
       open_emu_amd_pci},
#endif
      {{"emu:amd:usb",
        "the same emulated gfx1100 behind an emulated ASM24xx USB3-to-PCIe bridge: the AM driver over USB (TLPs for registers and "
        "VRAM, copies through the bridge's SRAM), no GPU needed"},
       [] { return open_emu_am_usb(make_emu_am_usb()); }},
      {{"amd:usb",
        "an AMD GPU (gfx1100) in a USB enclosure with an ASM24xx bridge (custom firmware): booted with no kernel driver over libusb, "
        "firmware from /lib/firmware/amdgpu",
        true},
       open_amd_usb},
#if UGPU_LINUX_DRIVERS
      {{"amd:kfd", "an AMD GPU through the amdgpu kernel driver (/dev/kfd): PM4 compute and SDMA copy queues, no ROCm", true}, open_amd_kfd},
      {{"amd:pci",
        "an AMD GPU (gfx1100) with no kernel driver: booted from userspace over vfio-pci or sysfs (root), firmware from /lib/firmware/amdgpu", true},
       open_amd_pci},
      {{"amd", "the first AMD GPU: amd:kfd when /dev/kfd exists, else amd:pci", true}, open_amd},
      {{"emu:nv",
        "an emulated NVIDIA H100 (sm_90, Hopper classes) behind an emulated nvidia.ko RM and UVM: the NVIDIA driver end to end, "
        "kernels run as PTX, no GPU needed"},
       open_emu_nv},
      {{"nv", "an NVIDIA GPU through nvidia.ko (RM and UVM ioctls): GPFIFO channels, QMD launches, copy engine; no CUDA", true}, open_nv},
      {{"emu:qcom",
        "an emulated Adreno 630 behind an emulated kgsl: the Adreno driver end to end, kernels compiled to ir3 by ugpu and executed with "
        "their scheduling checked, no GPU needed"},
       [] { return open_emu_qcom(EmuQcom{}); }},
      {{"qcom", "a Qualcomm Adreno 630 through kgsl (/dev/kgsl-3d0): CP packets, ir3 kernels compiled by ugpu; no OpenCL or Vulkan driver", true},
       open_qcom_gpu},
#endif
  };
  return d;
}
}  // namespace

std::vector<DeviceEntry> known_devices() {
  std::vector<DeviceEntry> out;
  for (const Driver& d : drivers()) out.push_back(d.entry);
  return out;
}

std::unique_ptr<hcq::Device> open_device(const std::string& name) {
  for (const Driver& d : drivers())
    if (d.entry.name == name) return d.open();
  std::string known;
  for (const Driver& d : drivers()) known += (known.empty() ? "" : ", ") + d.entry.name;
  if (!UGPU_LINUX_DRIVERS && std::find(std::begin(kLinuxDevices), std::end(kLinuxDevices), name) != std::end(kLinuxDevices))
    throw Error(name + ": this build has no Linux drivers (configured with -Dlinux_drivers=disabled); it knows: " + known);
  throw Error("unknown device '" + name + "'; this build knows: " + known + " (`ugpu devices` lists them)");
}

DefaultDevice default_device() {
  if (const char* e = std::getenv("UGPU_DEVICE"); e && *e) return {e, "chosen by UGPU_DEVICE"};
  if (UGPU_LINUX_DRIVERS) {
    if (sys::posix_os().exists("/dev/kfd")) return {"amd:kfd", "an AMD GPU was found (/dev/kfd)"};
    if (sys::posix_os().exists("/dev/nvidiactl")) return {"nv", "an NVIDIA GPU was found (/dev/nvidiactl)"};
    if (sys::posix_os().exists("/dev/kgsl-3d0")) return {"qcom", "an Adreno GPU was found (/dev/kgsl-3d0)"};
    try {  // an AMD GPU handed to vfio-pci is meant for a userspace driver (an unbound one needs root: not chosen)
      for (const sys::PciInfo& p : sys::list_pci_devices(sys::posix_os(), 0x1002))
        if (p.driver == "vfio-pci" && (p.class_code >> 16 == 0x03 || p.class_code >> 16 == 0x12))
          return {"amd:pci", "an AMD GPU bound to vfio-pci was found (" + p.address + ")"};
    } catch (const Error&) {  // an unreadable sysfs: no GPU found there
    }
  }
  try {
    sys::pick_asm24(sys::LibusbTransport::present());
    return {"amd:usb", "a USB GPU enclosure (ASM24xx bridge with the custom firmware) was found"};
  } catch (const Error&) {  // none, or no USB access
  }
  if (!UGPU_LINUX_DRIVERS)
    return {
        "emu:amd:usb",
        "no GPU was found (no USB GPU enclosure; this build has no Linux drivers), so the emulated AMD GPU behind the emulated USB bridge runs it"};
  return {"emu:amd",
          "no GPU was found (no /dev/kfd, no /dev/nvidiactl, no /dev/kgsl-3d0, no AMD GPU bound to vfio-pci, no USB GPU enclosure), so the emulated "
          "AMD GPU runs it"};
}

EmuAmPci make_emu_am_pci(const std::string& firmware_dir) {
  EmuAmPci e;
  e.os = std::make_shared<emu::VirtualOs>();
  emu::amd::AmCardConfig cfg;
  cfg.firmware_dir = firmware_dir.empty() ? amd::am::Firmware::default_dir() : firmware_dir;
  e.card = emu::amd::install_am_gpu(*e.os, cfg);
  e.options.address = cfg.address, e.options.firmware_dir = cfg.firmware_dir;
  e.options.reset_settle = std::chrono::milliseconds(0);  // the emulated reset is instant
  return e;
}

EmuAmUsb make_emu_am_usb(const std::string& firmware_dir) {
  EmuAmPci pci = make_emu_am_pci(firmware_dir);
  struct Parts {
    std::shared_ptr<emu::amd::AmCard> card;
    std::unique_ptr<emu::usb::PcieEndpoint> endpoint;
    std::unique_ptr<emu::usb::PcieTopology> topology;
    std::unique_ptr<emu::usb::Asm24Model> bridge;
  };
  auto parts = std::make_shared<Parts>();
  parts->card = pci.card;
  parts->endpoint = emu::amd::pcie_endpoint(pci.card);
  parts->topology = std::make_unique<emu::usb::PcieTopology>(*parts->endpoint);
  parts->bridge = std::make_unique<emu::usb::Asm24Model>(*parts->topology);
  for (const auto& w : parts->bridge->gpu_windows()) pci.card->map_host_memory(w.pcie, w.host, w.bytes);
  EmuAmUsb e;
  e.os = pci.os, e.card = pci.card, e.options = pci.options;
  e.bridge = std::shared_ptr<emu::usb::Asm24Model>(parts, parts->bridge.get());
  return e;
}

std::unique_ptr<hcq::Device> open_emu_am_usb(EmuAmUsb e) {
  amd::AmdOptions o;
  o.name = "emu:amd:usb", o.kind = "emulated gpu";
  o.compute_ring_bytes = amd::kUsbComputeRingBytes;
  auto dev = amd::open_am_usb(e.os, e.bridge, o, e.options);
  dev->set_instruction_counter([card = std::weak_ptr(e.card)] {
    auto g = card.lock();
    return g ? g->stats().wave_instructions : 0;
  });
  return dev;
}

#if UGPU_LINUX_DRIVERS
std::unique_ptr<hcq::Device> open_emu_qcom(EmuQcom e) {
  auto os = std::make_shared<emu::VirtualOs>();
  emu::qcom::AdrenoConfig cfg;
  auto exec = std::make_shared<emu::qcom::Ir3Executor>(emu::qcom::Ir3Options{e.strict_hazards, e.threads});
  cfg.shader = exec;
  emu::qcom::install_kgsl_gpu(*os, cfg);
  qcom::QcomOptions o;
  o.name = "emu:qcom", o.kind = "emulated gpu";
  auto dev = qcom::open_qcom(os, o);
  dev->set_instruction_counter([exec] { return exec->stats().wave_instructions; });
  return dev;
}
#endif

std::shared_ptr<sys::UsbTransport> open_usb_bridge() {
  try {
    auto [vendor, product] = sys::pick_asm24(sys::LibusbTransport::present());
    auto usb = std::make_shared<sys::LibusbTransport>(vendor, product, 0);
    sys::check_asm24_product(usb->name(), usb->product());
    return usb;
  } catch (const Error& e) { throw Error(std::string("amd:usb: ") + e.what()); }
}

std::vector<PciGpu> pci_gpus(sys::Os& os) {
  std::vector<PciGpu> out;
  for (const sys::PciInfo& p : sys::list_pci_devices(os)) {
    if (p.class_code >> 16 != 0x03 && p.class_code >> 16 != 0x12) continue;
    PciGpu g;
    g.address = p.address, g.driver = p.driver.empty() ? "none" : p.driver;
    char id[8];
    std::snprintf(id, sizeof id, "0x%04x", p.device);
    g.device_id = id;
    const std::string unbind = "echo " + p.address + " | sudo tee /sys/bus/pci/devices/" + p.address + "/driver/unbind";
    if (p.vendor == 0x1002) {
      g.vendor = "AMD";
      if (p.driver == "amdgpu") g.use = "amd:kfd (amdgpu is loaded); for amd:pci unbind it (" + unbind + ") and bind vfio-pci or run as root";
      else if (p.driver == "vfio-pci") g.use = "amd:pci through vfio (needs read-write access to its /dev/vfio group)";
      else if (p.driver.empty()) g.use = "amd:pci through sysfs (needs root; or bind vfio-pci to run without root)";
      else g.use = "bound to " + p.driver + ": unbind it (" + unbind + ") for amd:pci";
    } else if (p.vendor == 0x10de) {
      g.vendor = "NVIDIA";
      g.use = p.driver == "nvidia" ? "nv (nvidia.ko is loaded)" : "nv needs nvidia.ko loaded (no path without a kernel driver yet)";
    } else {
      char v[8];
      std::snprintf(v, sizeof v, "0x%04x", p.vendor);
      g.vendor = v;
      g.use = "no ugpu driver for this vendor";
    }
    out.push_back(std::move(g));
  }
  return out;
}

std::shared_ptr<hcq::Program> load_kernel(hcq::Device& dev, const ir::UOp& kernel, const std::string& name) {
  codegen::CompileOptions o;
  o.name = name;
  return dev.load(codegen::compile(kernel, codegen::find_target(dev.target()), o));
}

}  // namespace ugpu::drivers
