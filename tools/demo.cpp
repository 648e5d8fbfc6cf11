#include "tools/demo.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>

#include "codegen/builtin_kernels.h"
#include "codegen/target.h"
#include "common/error.h"
#include "drivers/devices.h"
#include "hcq/profiler.h"
#include "tools/runner.h"

namespace ugpu::tools {
namespace {

// One kernel's runs on the device, each checked against the kernel's host reference.
struct KernelResult {
  int runs = 0;
  size_t outputs = 0, wrong = 0;
  double ms = 0, worst = 0;
  std::string first_wrong;
};
KernelResult check_kernel(hcq::Device& dev, const codegen::BuiltinKernel& k) {
  KernelResult r;
  for (const codegen::KernelRun& run : k.runs) {
    std::vector<HostBuffer> bufs = codegen::make_buffers(k, run, 42 + static_cast<uint64_t>(r.runs));
    std::vector<HostBuffer> want = codegen::expected(k, run, bufs);
    r.ms += run_kernel(dev, k.parse(run), k.name, bufs, run.vars);
    codegen::Comparison c = codegen::compare(k, want, bufs);
    r.runs += 1, r.outputs += c.elements, r.wrong += c.wrong, r.worst = std::max(r.worst, c.worst);
    if (!c.ok() && r.first_wrong.empty()) r.first_wrong = (run.label().empty() ? "" : run.label() + ": ") + c.first_wrong;
  }
  return r;
}

std::string human_bytes(uint64_t b) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GiB", static_cast<double>(b) / (1u << 30));
  return buf;
}

}  // namespace

int demo(const std::string& device, const std::string& trace) {
  drivers::DefaultDevice choice = device.empty() ? drivers::default_device() : drivers::DefaultDevice{device, "chosen with --device"};
  auto dev = drivers::open_device(choice.name);
  hcq::DeviceInfo info = dev->info();
  std::printf("ugpu demo: every built-in kernel on %s (%s), %s; every result checked against its host reference\n", dev->name().c_str(),
              choice.why.c_str(), (info.arch + ", " + info.interface + ", " + human_bytes(info.memory)).c_str());
  auto profiler = trace.empty() ? nullptr : std::make_shared<hcq::Profiler>();
  if (profiler) dev->set_profiler(profiler);
  std::printf("\n  %-14s %4s %-9s %10s %12s  %s\n", "kernel", "runs", "outputs", "device ms", "max error", "result");
  int passed = 0, failed = 0, not_run = 0;
  bool host = !codegen::find_target(dev->target()).gpu();
  auto start = std::chrono::steady_clock::now();
  for (const codegen::BuiltinKernel& k : codegen::builtin_kernels()) {
    if (k.gpu_only && host) {
      std::printf("  %-14s not run: it needs a GPU target, and %s runs kernels on the host\n", k.name.c_str(), dev->name().c_str());
      ++not_run;
      continue;
    }
    try {
      KernelResult r = check_kernel(*dev, k);
      std::string result = r.wrong ? "WRONG: " + std::to_string(r.wrong) + " outputs, first " + r.first_wrong : "ok";
      std::printf("  %-14s %4d %-9zu %10.3f %12.2e  %s\n", k.name.c_str(), r.runs, r.outputs, r.ms, r.worst, result.c_str());
      (r.wrong ? failed : passed) += 1;
    } catch (const Error& e) {
      std::printf("  %-14s FAILED: %s\n", k.name.c_str(), e.what());
      ++failed;
      if (dev->failed()) break;  // the device is gone: nothing after this can run
    }
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("\n%s: %d kernels passed, %d failed%s in %.2f s (compiling included)\n", dev->name().c_str(), passed, failed,
              not_run ? (", " + std::to_string(not_run) + " not run (GPU only)").c_str() : "", secs);
  if (profiler) {
    dev->synchronize();
    profiler->write(trace);
    std::printf("trace: %s (%zu events; open it in ui.perfetto.dev or chrome://tracing)\n", trace.c_str(), profiler->events().size());
  }
  return failed ? 1 : 0;
}

}  // namespace ugpu::tools
