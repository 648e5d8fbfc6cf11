#include "drivers/devices.h"

#include <cstdio>
#include <cstdlib>
#include <functional>

#include "codegen/compiler.h"
#include "drivers/amd/am/am.h"
#include "drivers/amd/kfd/kfd.h"
#include "drivers/cpu/cpu_device.h"
#include "drivers/nv/rm/rm_gpu.h"
#include "emu/amd/am/am_card.h"
#include "emu/amd/kfd/kfd_model.h"
#include "emu/nv/rm/rm_model.h"
#include "sys/pci.h"

namespace ugpu::drivers {
namespace {
struct Driver {
  DeviceEntry entry;
  std::function<std::unique_ptr<hcq::Device>()> open;
};
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
// One row per device string, in the order `ugpu devices` lists them; a new way in or vendor is a new
// row (docs/adding-a-device.md). amd:usb and qcom join as their drivers land.
const std::vector<Driver>& drivers() {
  static const std::vector<Driver> d = {
      {{"cpu", "the host CPU: x86 kernels from LLVM, spread over worker threads"}, [] { return std::make_unique<cpu::CpuDevice>(); }},
      {{"emu:amd", "an emulated Radeon RX 7900 XTX class GPU (gfx1100) behind an emulated amdkfd: the AMD driver end to end, no GPU needed"},
       open_emu_amd},
      {{"emu:amd:pci",
        "an emulated RX 7900 XTX class GPU (gfx1100) as registers behind an emulated PCI device: the AM driver boots it from the "
        "firmware files (PSP, SMU, GMC, IH, MEC, SDMA) with no kernel driver, no GPU needed"},
       open_emu_amd_pci},
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
  throw Error("unknown device '" + name + "'; this build knows: " + known + " (`ugpu devices` lists them)");
}

DefaultDevice default_device() {
  if (const char* e = std::getenv("UGPU_DEVICE"); e && *e) return {e, "chosen by UGPU_DEVICE"};
  if (sys::posix_os().exists("/dev/kfd")) return {"amd:kfd", "an AMD GPU was found (/dev/kfd)"};
  if (sys::posix_os().exists("/dev/nvidiactl")) return {"nv", "an NVIDIA GPU was found (/dev/nvidiactl)"};
  try {  // an AMD GPU handed to vfio-pci is meant for a userspace driver (an unbound one needs root: not chosen)
    for (const sys::PciInfo& p : sys::list_pci_devices(sys::posix_os(), 0x1002))
      if (p.driver == "vfio-pci" && (p.class_code >> 16 == 0x03 || p.class_code >> 16 == 0x12))
        return {"amd:pci", "an AMD GPU bound to vfio-pci was found (" + p.address + ")"};
  } catch (const Error&) {  // an unreadable sysfs: no GPU found there
  }
  return {"emu:amd", "no GPU was found (no /dev/kfd, no /dev/nvidiactl, no AMD GPU bound to vfio-pci), so the emulated AMD GPU runs it"};
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
