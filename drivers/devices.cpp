#include "drivers/devices.h"

#include <cstdlib>
#include <functional>

#include "codegen/compiler.h"
#include "drivers/cpu/cpu_device.h"

namespace ugpu::drivers {
namespace {
struct Driver {
  DeviceEntry entry;
  std::function<std::unique_ptr<hcq::Device>()> open;
};
// Devices join this table as their drivers land (emu:amd, amd:kfd, nv ...).
const std::vector<Driver>& drivers() {
  static const std::vector<Driver> d = {
      {{"cpu", "the host CPU: x86 kernels from LLVM, spread over worker threads"}, [] { return std::make_unique<cpu::CpuDevice>(); }},
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
  return {"cpu", "no GPU driver is built yet (emu:amd comes with the AMD issues), so the CPU runs it"};
}

std::shared_ptr<hcq::Program> load_kernel(hcq::Device& dev, const ir::UOp& kernel, const std::string& name) {
  codegen::CompileOptions o;
  o.name = name;
  return dev.load(codegen::compile(kernel, codegen::find_target(dev.target()), o));
}

}  // namespace ugpu::drivers
