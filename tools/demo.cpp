#include "tools/demo.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>

#include "codegen/compiler.h"
#include "codegen/examples.h"
#include "drivers/devices.h"
#include "hcq/profiler.h"
#include "ir/text.h"
#include "tools/runner.h"

namespace ugpu::tools {
namespace {

// Host references for the built-in kernels (codegen/examples.cpp), in double precision. Each
// takes the buffers by slot (inputs as the device saw them) and returns the expected output.
using Reference = std::function<std::vector<double>(const std::vector<HostBuffer>&)>;
double at(const std::vector<HostBuffer>& b, int slot, size_t i) { return element(b[static_cast<size_t>(slot)], i); }

std::vector<double> matmul_ref(const std::vector<HostBuffer>& b, int m, int k, int n) {
  std::vector<double> c(static_cast<size_t>(m * n));
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      double s = 0;
      for (int r = 0; r < k; ++r) s += at(b, 1, static_cast<size_t>(i * k + r)) * at(b, 2, static_cast<size_t>(r * n + j));
      c[static_cast<size_t>(i * n + j)] = s;
    }
  return c;
}

const std::map<std::string, Reference>& references() {
  static const std::map<std::string, Reference> r = {
      {"add",
       [](const auto& b) {
         std::vector<double> o(6400);
         for (size_t i = 0; i < 64; ++i)
           for (size_t j = 0; j < 100; ++j) o[i * 100 + j] = at(b, 1, i * 100 + j) + at(b, 2, j);
         return o;
       }},
      {"matmul", [](const auto& b) { return matmul_ref(b, 33, 70, 45); }},
      {"matmul_upcast", [](const auto& b) { return matmul_ref(b, 32, 64, 48); }},
      {"softmax",
       [](const auto& b) {
         std::vector<double> o(3200);
         for (size_t row = 0; row < 16; ++row) {
           double m = -INFINITY, s = 0;
           for (size_t c = 0; c < 200; ++c) m = std::max(m, at(b, 1, row * 200 + c));
           for (size_t c = 0; c < 200; ++c) s += std::exp(at(b, 1, row * 200 + c) - m);
           for (size_t c = 0; c < 200; ++c) o[row * 200 + c] = std::exp(at(b, 1, row * 200 + c) - m) / s;
         }
         return o;
       }},
      {"conv2d",
       [](const auto& b) {
         std::vector<double> o(480);
         for (int co = 0; co < 4; ++co)
           for (int y = 0; y < 10; ++y)
             for (int x = 0; x < 12; ++x) {
               double s = 0;
               for (int ci = 0; ci < 2; ++ci)
                 for (int ky = 0; ky < 3; ++ky)
                   for (int kx = 0; kx < 3; ++kx) {
                     int iy = y + ky - 1, ix = x + kx - 1;
                     if (iy < 0 || iy >= 10 || ix < 0 || ix >= 12) continue;
                     s += at(b, 1, static_cast<size_t>(ci * 120 + iy * 12 + ix)) * at(b, 2, static_cast<size_t>(co * 18 + ci * 9 + ky * 3 + kx));
                   }
               o[static_cast<size_t>(co * 120 + y * 12 + x)] = s;
             }
         return o;
       }},
      {"gather",
       [](const auto& b) {
         std::vector<double> o(960);
         for (size_t t = 0; t < 40; ++t) {
           auto id = static_cast<int64_t>(at(b, 2, t));
           for (size_t d = 0; d < 24; ++d) o[t * 24 + d] = id >= 0 && id < 1000 ? at(b, 1, static_cast<size_t>(id) * 24 + d) : 0.0;
         }
         return o;
       }},
  };
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
  std::printf("ugpu demo: the built-in kernel suite on %s (%s), %s; every result checked against a host reference\n", dev->name().c_str(),
              choice.why.c_str(), (info.arch + ", " + info.interface + ", " + human_bytes(info.memory)).c_str());
  auto profiler = trace.empty() ? nullptr : std::make_shared<hcq::Profiler>();
  if (profiler) dev->set_profiler(profiler);
  std::printf("\n  %-14s %-10s %10s %12s  %s\n", "kernel", "outputs", "device ms", "max error", "result");
  int passed = 0, failed = 0, skipped = 0;
  auto start = std::chrono::steady_clock::now();
  for (const codegen::ExampleKernel& ex : codegen::example_kernels()) {
    auto ref = references().find(ex.name);
    if (ex.gpu_only && dev->target() == "x86") {
      std::printf("  %-14s %-10s %10s %12s  skipped: workgroup memory and barriers need a GPU target\n", ex.name.c_str(), "", "", "");
      ++skipped;
      continue;
    }
    if (ref == references().end()) {
      std::printf("  %-14s skipped: no host reference\n", ex.name.c_str());
      ++skipped;
      continue;
    }
    try {
      ir::UOp k = ir::parse(ex.text);
      std::vector<HostBuffer> bufs = make_buffers(k, 42, ex.name == "gather" ? std::map<int64_t, int64_t>{{1, 24000}} : std::map<int64_t, int64_t>{});
      if (ex.name == "gather") {  // a few ids out of the table: those rows must read as zero
        int32_t bad[] = {-1, 1000, 123456};
        for (size_t i = 0; i < 3; ++i) std::memcpy(bufs[2].bytes.data() + 4 * (5 + 9 * i), &bad[i], 4);
      }
      std::vector<HostBuffer> inputs = bufs;
      double ms = run_kernel(*dev, k, ex.name, bufs);
      std::vector<double> want = ref->second(inputs);
      double worst = 0;
      for (size_t i = 0; i < want.size(); ++i) worst = std::max(worst, std::fabs(element(bufs[0], i) - want[i]) / std::max(1.0, std::fabs(want[i])));
      bool ok = worst <= 1e-4 && !std::isnan(worst);  // float32 results against a double reference
      std::printf("  %-14s %-10zu %10.3f %12.2e  %s\n", ex.name.c_str(), want.size(), ms, worst, ok ? "ok" : "WRONG");
      (ok ? passed : failed) += 1;
    } catch (const Error& e) {
      std::printf("  %-14s FAILED: %s\n", ex.name.c_str(), e.what());
      ++failed;
      if (dev->failed()) break;  // the device is gone: nothing after this can run
    }
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("\n%s: %d kernels passed, %d failed, %d skipped in %.2f s (compiling included)\n", dev->name().c_str(), passed, failed, skipped, secs);
  if (profiler) {
    dev->synchronize();
    profiler->write(trace);
    std::printf("trace: %s (%zu events; open it in ui.perfetto.dev or chrome://tracing)\n", trace.c_str(), profiler->events().size());
  }
  return failed ? 1 : 0;
}

}  // namespace ugpu::tools
