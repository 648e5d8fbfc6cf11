// `ugpu bringup`: boots an AMD GPU with no kernel driver (AM) step by step, prints what each IP block
// did and how long it took, optionally writes every register access to a log, then proves the queues
// work by running a kernel on the booted GPU.
#include <cstdio>
#include <fstream>

#include "codegen/builtin_kernels.h"
#include "common/error.h"
#include "drivers/amd/am/am.h"
#include "drivers/devices.h"
#include "emu/amd/am/am_card.h"
#include "emu/usb/asm24_model.h"
#include "tools/demo.h"
#include "tools/runner.h"

namespace ugpu::tools {
namespace {
constexpr const char* kUsage =
    "usage: ugpu bringup [--device amd:pci|emu:amd:pci|amd:usb|emu:amd:usb] [--address BUS:DEV.FN] [--trace FILE] [--reset]\n"
    "                    [--unbind]\n"
    "                    [--firmware DIR]\n"
    "Boots an AMD GPU with no kernel driver, the way `amd:pci` does, and says what happened at each step:\n"
    "PCI claim, IP discovery, firmware, then SOC, GMC, IH, PSP (bootloader, KM ring, TMR, every image),\n"
    "SMU, GFX (RLC autoload, MEC) and SDMA, each with its time. A GPU left running by a clean earlier run\n"
    "warm-starts (no firmware is loaded again); --reset forces a mode-1 reset and a cold boot. --unbind\n"
    "first unbinds a kernel driver (amdgpu) that holds the GPU (root). BAR0 is grown to all of VRAM where\n"
    "the GPU offers Resizable BAR (sysfs path). amd:usb boots the GPU behind an ASM24xx USB bridge the same\n"
    "way, every register access a TLP over USB.\n"
    "--trace FILE writes every register read and write in order (`ugpu decode --regs FILE` names them).\n"
    "Then a kernel runs on the booted GPU, checked against the host.\n"
    "The default device is emu:amd:pci, the emulated card, which needs no GPU; amd:pci needs root (or a\n"
    "device bound to vfio-pci) and firmware-amd-graphics; emu:amd:usb is the emulated card behind the\n"
    "emulated USB bridge.\n";
}  // namespace

int bringup_command(const std::vector<std::string>& args) {
  std::string device = "emu:amd:pci", trace;
  amd::am::AmOptions o;
  for (size_t i = 0; i < args.size(); ++i) {
    auto value = [&](const char* opt) -> std::string {
      if (i + 1 >= args.size()) throw Error(std::string(opt) + " needs a value");
      return args[++i];
    };
    if (args[i] == "--device") device = value("--device");
    else if (args[i] == "--address") o.address = value("--address");
    else if (args[i] == "--trace") trace = value("--trace");
    else if (args[i] == "--firmware") o.firmware_dir = value("--firmware");
    else if (args[i] == "--reset") o.force_reset = true;
    else if (args[i] == "--unbind") o.unbind = true;
    else if (args[i] == "--help" || args[i] == "-h") return std::fputs(kUsage, stdout), 0;
    else return std::fprintf(stderr, "ugpu bringup: unknown option '%s'\n%s", args[i].c_str(), kUsage), 2;
  }
  const bool usb = device == "amd:usb" || device == "emu:amd:usb";
  if (device != "amd:pci" && device != "emu:amd:pci" && !usb)
    throw Error("ugpu bringup boots amd:pci, emu:amd:pci, amd:usb or emu:amd:usb, not '" + device +
                "' (other devices are booted by their kernel drivers)");
  std::shared_ptr<sys::Os> os;
  std::shared_ptr<emu::amd::AmCard> card;
  std::shared_ptr<sys::UsbTransport> transport;
  if (device == "emu:amd:pci") {
    drivers::EmuAmPci e = drivers::make_emu_am_pci(o.firmware_dir);
    card = e.card, os = e.os;
    o.address = e.options.address, o.firmware_dir = e.options.firmware_dir, o.reset_settle = e.options.reset_settle;
  } else if (device == "emu:amd:usb") {
    drivers::EmuAmUsb e = drivers::make_emu_am_usb(o.firmware_dir);
    card = e.card, os = e.os, transport = e.bridge;
    o.firmware_dir = e.options.firmware_dir, o.reset_settle = e.options.reset_settle;
  } else {
    os = std::shared_ptr<sys::Os>(&sys::posix_os(), [](sys::Os*) {});
    if (usb) transport = drivers::open_usb_bridge();
  }
  o.name = device;
  o.trace = !trace.empty();
  o.progress = [](const std::string& line) { std::printf("  %s\n", line.c_str()), std::fflush(stdout); };
  std::printf("ugpu bringup: %s\n", device.c_str());
  {
    auto g = usb ? amd::boot_am_usb(os, transport, o) : amd::am::AmGpu::open(os, o);
    std::printf("\n%s boot of %s (%s) in %.1f ms\nIP blocks:\n%sfirmware:\n%s", g->warm() ? "warm" : "cold", g->chip().arch, g->chip().name,
                g->boot_ms(), g->discovery().describe().c_str(), g->firmware().describe().c_str());
    if (!trace.empty()) {
      auto t = g->regs().trace();
      std::ofstream(trace) << hw::amd::format_reg_trace(t);
      std::printf("%zu register accesses written to %s (`ugpu decode --regs %s`)\n", t.accesses.size(), trace.c_str(), trace.c_str());
    }
  }
  // The queues: a kernel on the booted GPU (a warm start of what was just booted).
  amd::AmdOptions ao;
  ao.name = device;
  o.trace = false, o.progress = nullptr, o.force_reset = false;
  auto dev = usb ? amd::open_am_usb(os, transport, ao, o) : amd::open_am(os, ao, o);
  bool ok = check_builtin(*dev, codegen::builtin_kernel("add_one"));
  std::printf("kernel add_one on %s: %s\n", device.c_str(), ok ? "ok" : "FAILED");
  if (card)
    for (const std::string& f : card->faults()) std::printf("emulated card: %s\n", f.c_str());
  return ok ? 0 : 1;
}

}  // namespace ugpu::tools
