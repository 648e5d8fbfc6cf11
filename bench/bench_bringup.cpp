// bench-bringup: the host cost of booting an AMD GPU with no kernel driver (AM), on the emulated card.
//   cold_start_ms        AmGpu::open of a card just powered on: discovery, firmware files read and
//                        checked, the PSP bootloader and KM ring (every image copied to VRAM and checked
//                        by the emulated PSP), SMU, GMC, IH, GFX, SDMA (median of the runs)
//   warm_start_ms        the same after a clean run: the firmware still runs, so nothing is loaded (median)
//   first_kernel_ms      a warm open of the device plus its first kernel (add_one), compile cache warm
// The emulated card answers at once where hardware takes its time (the PSP verifying signatures, RLC
// autoload, the mode-1 reset's settle), so these are the driver's own costs; tinygrad's warm AM start
// is about 1.2 s on hardware (reference/anchors.md). `--runs N` (default 5).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "codegen/builtin_kernels.h"
#include "drivers/amd/am/am.h"
#include "drivers/devices.h"
#include "emu/amd/am/am_card.h"
#include "hcq/queue.h"
#include "ir/text.h"

using namespace ugpu;
using Clock = std::chrono::steady_clock;

namespace {
double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}
}  // namespace

int main(int argc, char** argv) {
  int runs = 5;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--runs" && i + 1 < argc) runs = std::max(1, std::atoi(argv[++i]));
    else return std::fprintf(stderr, "usage: bench-bringup [--runs N]\n"), 2;
  }
  try {
    std::vector<double> cold, warm;
    double first_kernel = 0;
    for (int r = 0; r < runs; ++r) {
      drivers::EmuAmPci e = drivers::make_emu_am_pci();
      auto& os = e.os;
      const amd::am::AmOptions& o = e.options;
      auto t = Clock::now();
      amd::am::AmGpu::open(os, o).reset();
      cold.push_back(ms_since(t));
      t = Clock::now();
      amd::am::AmGpu::open(os, o).reset();
      warm.push_back(ms_since(t));
      if (r == 0) {
        amd::AmdOptions ao;
        ao.name = "emu:amd:pci";
        auto prog_text = ir::parse(codegen::builtin_kernel("add_one").text);
        {  // compile once so the measured run finds the kernel in the cache
          auto dev = amd::open_am(os, ao, o);
          drivers::load_kernel(*dev, prog_text, "add_one");
        }
        t = Clock::now();
        auto dev = amd::open_am(os, ao, o);
        auto prog = drivers::load_kernel(*dev, prog_text, "add_one");
        hcq::Buffer out = dev->alloc(4000), in = dev->alloc(4000);
        auto q = dev->compute_queue();
        const hcq::Val args[] = {hcq::Val(out.va), hcq::Val(in.va)};
        q->exec(*prog, args).signal(dev->timeline(), dev->next_timeline());
        q->submit();
        dev->synchronize();
        first_kernel = ms_since(t);
      }
    }
    std::printf("device: emu:amd:pci (emulated gfx1100, firmware from %s)\n", amd::am::Firmware::default_dir().c_str());
    std::printf("cold_start_ms: %.2f\nwarm_start_ms: %.2f\nfirst_kernel_ms: %.2f\n", median(cold), median(warm), first_kernel);
  } catch (const Error& e) {
    std::fprintf(stderr, "bench-bringup: %s\n", e.what());
    return 1;
  }
  return 0;
}
