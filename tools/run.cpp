// `ugpu devices` and `ugpu run`.
#include <cstdio>
#include <cstdlib>

#include "drivers/devices.h"
#include "hcq/profiler.h"
#include "ir/text.h"
#include "ir/verify.h"
#include "tools/args.h"
#include "tools/compile.h"
#include "tools/demo.h"
#include "tools/runner.h"

namespace ugpu::tools {

int devices_command(const std::vector<std::string>& args) {
  if (!args.empty()) {
    std::fprintf(stderr, "ugpu devices: takes no arguments\n");
    return 2;
  }
  drivers::DefaultDevice def = drivers::default_device();
  std::printf("%-11s %-13s %-38s %-30s %s\n", "device", "kind", "arch", "interface", "memory");
  for (const drivers::DeviceEntry& e : drivers::known_devices()) {
    try {
      auto dev = drivers::open_device(e.name);
      hcq::DeviceInfo i = dev->info();
      std::printf("%-11s %-13s %-38s %-30s %.1f GiB%s\n", e.name.c_str(), i.kind.c_str(), i.arch.c_str(), i.interface.c_str(),
                  static_cast<double>(i.memory) / (1u << 30), e.name == def.name ? "   (default)" : "");
    } catch (const Error& err) { std::printf("%-11s unavailable: %s\n", e.name.c_str(), err.what()); }
  }
  std::printf("\ndefault: %s (%s); choose another with --device or UGPU_DEVICE\n", def.name.c_str(), def.why.c_str());
  std::vector<drivers::PciGpu> gpus;
  try {
    gpus = drivers::pci_gpus(sys::posix_os());
  } catch (const Error& e) {
    std::printf("\nPCI GPUs: cannot list them: %s\n", e.what());
    return 0;
  }
  std::printf("\nPCI GPUs (%zu):%s\n", gpus.size(), gpus.empty() ? " none on this machine" : "");
  for (const auto& g : gpus)
    std::printf("  %s  %-6s %s  driver %-9s -> %s\n", g.address.c_str(), g.vendor.c_str(), g.device_id.c_str(), g.driver.c_str(), g.use.c_str());
  return 0;
}

int run_command(const std::vector<std::string>& args) {
  constexpr const char* kRunUsage =
      "usage: ugpu run FILE.uop|- [--device D] [--var NAME=VALUE ...] [--size SLOT=N ...] [--seed N] [--trace out.json]\n"
      "                [--opt | --opts ACTIONS]\n"
      "Runs the kernel once on the device with deterministic inputs (floats in [-1, 1], integers in\n"
      "[0, 100), buffers as large as the kernel's index bounds) and prints a checksum of each buffer\n"
      "it writes. Variables not given take their lower bound; --size sets a buffer's element count.\n"
      "--opt shapes the kernel with the optimizer's heuristics first, --opts with given actions\n"
      "(\"UPCAST(1, 4) LOCAL(0, 16)\", see `ugpu compile --help`).\n";
  std::string file, device, trace;
  std::map<std::string, int64_t> vars;
  std::map<int64_t, int64_t> sizes;
  uint64_t seed = 1;
  codegen::CompileOptions copts;
  for (size_t i = 0; i < args.size(); ++i) {
    auto value = [&](const char* opt) -> std::string {
      if (i + 1 >= args.size()) throw Error(std::string(opt) + " needs a value");
      return args[++i];
    };
    if (args[i] == "--device") device = value("--device");
    else if (args[i] == "--trace") trace = value("--trace");
    else if (args[i] == "--opt") copts.heuristic = true;
    else if (args[i] == "--opts") copts.opts = codegen::opt::parse_opts(value("--opts"));
    else if (args[i] == "--seed") seed = static_cast<uint64_t>(parse_integer(value("--seed"), "--seed", 0, INT64_MAX));
    else if (args[i] == "--var") {
      std::string v = value("--var");
      size_t eq = v.find('=');
      if (eq == std::string::npos || eq == 0) throw Error("--var takes NAME=VALUE (an integer), not '" + v + "'");
      vars[v.substr(0, eq)] = parse_integer(v.substr(eq + 1), "--var " + v.substr(0, eq), INT64_MIN, INT64_MAX);
    } else if (args[i] == "--size") {
      std::string v = value("--size");
      size_t eq = v.find('=');
      if (eq == std::string::npos) throw Error("--size takes SLOT=ELEMENTS, not '" + v + "'");
      sizes[parse_integer(v.substr(0, eq), "--size's SLOT", 0, INT64_MAX)] = parse_integer(v.substr(eq + 1), "--size's ELEMENTS", 1, INT64_MAX);
    } else if (args[i] == "--help" || args[i] == "-h") {
      std::fputs(kRunUsage, stdout);
      return 0;
    } else if (file.empty() && (args[i] == "-" || args[i][0] != '-')) file = args[i];
    else {
      std::fprintf(stderr, "ugpu run: unknown option '%s'\n%s", args[i].c_str(), kRunUsage);
      return 2;
    }
  }
  if (file.empty()) {
    std::fputs(kRunUsage, stderr);
    return 2;
  }
  std::optional<ir::UOp> parsed = read_graph(file, read_input(file));  // verified: everything below reads the graph's shape
  if (!parsed) return 1;
  ir::UOp kernel = *parsed;
  drivers::DefaultDevice choice = device.empty() ? drivers::default_device() : drivers::DefaultDevice{device, "chosen with --device"};
  auto dev = drivers::open_device(choice.name);
  auto profiler = trace.empty() ? nullptr : std::make_shared<hcq::Profiler>();
  if (profiler) dev->set_profiler(profiler);
  std::vector<HostBuffer> bufs = make_buffers(kernel, seed, sizes);
  double ms = run_kernel(*dev, kernel, "kernel", bufs, vars, copts);
  std::printf("device %s: ran in %.3f ms\n", dev->name().c_str(), ms);
  for (const HostBuffer& b : bufs) {
    if (!b.written) continue;
    double sum = 0;
    for (size_t i = 0; i < b.count(); ++i) sum += b.value(i);
    std::printf("buffer %lld (%s, %zu elements): fnv1a %016llx  sum %.9g\n", static_cast<long long>(b.slot), b.dtype.name().c_str(), b.count(),
                static_cast<unsigned long long>(fnv1a(b.bytes)), sum);
  }
  if (profiler) {
    dev->synchronize();
    profiler->write(trace);
    std::printf("trace: %s\n", trace.c_str());
  }
  return 0;
}

}  // namespace ugpu::tools
