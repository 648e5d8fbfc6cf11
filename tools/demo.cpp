#include "tools/demo.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>

#include "codegen/builtin_kernels.h"
#include "codegen/target.h"
#include "common/error.h"
#include "drivers/devices.h"
#include "hcq/profiler.h"
#include "tensor/examples.h"
#include "tensor/grad.h"
#include "tensor/jit.h"
#include "tensor/optim.h"
#include "tools/runner.h"

namespace ugpu::tools {
namespace {

// One kernel's runs on the device, each checked against the kernel's host reference.
struct KernelResult {
  int runs = 0, skipped = 0;
  size_t outputs = 0, wrong = 0;
  double ms = 0, worst = 0;
  std::string first_wrong, skip_reason;
};
KernelResult check_kernel(hcq::Device& dev, const codegen::BuiltinKernel& k) {
  KernelResult r;
  for (const codegen::KernelRun& run : k.runs) {
    if (std::string why = codegen::unsupported_on(k, run, codegen::find_target(dev.target())); !why.empty()) {
      r.skipped += 1, r.skip_reason = why;
      continue;
    }
    std::vector<HostBuffer> bufs = codegen::make_buffers(k, run, 42 + static_cast<uint64_t>(r.runs));
    std::vector<HostBuffer> want = codegen::expected(k, run, bufs);
    r.ms += run_kernel(dev, k.parse(run), k.name, bufs, run.vars);
    codegen::Comparison c = codegen::compare(k, want, bufs);
    r.runs += 1, r.outputs += c.elements, r.wrong += c.wrong, r.worst = std::max(r.worst, c.worst);
    if (!c.ok() && r.first_wrong.empty()) r.first_wrong = (run.label().empty() ? "" : run.label() + ": ") + c.first_wrong;
  }
  return r;
}

}  // namespace

bool check_builtin(hcq::Device& dev, const codegen::BuiltinKernel& k) {
  KernelResult r = check_kernel(dev, k);
  return r.runs > 0 && r.wrong == 0;
}

namespace {
// The tensor layer end to end: a model's forward through the scheduler, codegen and the device's
// queues, against the same model computed in double precision on the host.
struct ModelResult {
  size_t kernels = 0;
  double ms = 0, worst = 0;
  bool ok = false;
};
template <class Model>
ModelResult check_model(const Model& m, const tensor::Tensor& x) {
  ModelResult r;
  auto start = std::chrono::steady_clock::now();
  tensor::Tensor y = m.forward(x).realize();
  r.kernels = tensor::last_realize().kernels;
  tensor::device(y.device()).synchronize();
  r.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  tensor::examples::HostArray got = tensor::examples::to_host(y);
  tensor::examples::HostArray want = m.reference(tensor::examples::to_host(x));
  r.ok = got.v.size() == want.v.size();
  for (size_t i = 0; r.ok && i < got.v.size(); ++i) {
    double err = std::abs(got.v[i] - want.v[i]) / (1 + std::abs(want.v[i]));
    r.worst = std::max(r.worst, err);
    r.ok = !(err > 1e-4);  // NaN fails too
  }
  return r;
}

// A few training steps on the device: the loss must go down (docs/training.md).
bool train_demo(const std::string& d) {
  namespace ex = tensor::examples;
  using tensor::Tensor;
  constexpr int kSteps = 60;
  ex::Dataset data = ex::spiral(100, 1);
  Tensor x = Tensor::from(data.x, {data.n, 2}, d), y = Tensor::from(data.y, {data.n}, d);
  ex::SpiralMlp m(7, d);
  tensor::optim::Adam opt(m.params(), tensor::optim::LR::constant(0.02));
  tensor::Jit step([&](const std::vector<Tensor>& in, const tensor::Jit::Vars&) {
    Tensor loss = tensor::nn::cross_entropy(m(in[0]), in[1]);
    opt.zero_grad();
    loss.backward();
    opt.step({loss});
    return std::vector<Tensor>{loss};
  });
  std::printf(
      "\ntraining: a 2-32-32-2 MLP on a two-class spiral (%ld points), full-batch Adam; from the third step on, each step is one Jit replay\n\n",
      long(data.n));
  std::printf("  %5s %10s\n", "step", "loss");
  auto start = std::chrono::steady_clock::now();
  float first = 0, last = 0;
  for (int s = 0; s < kSteps; ++s) {
    last = step({x, y})[0].to_vector<float>()[0];
    if (s == 0) first = last;
    if (s % 10 == 0 || s == kSteps - 1) std::printf("  %5d %10.4f\n", s, last);
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  double acc = ex::accuracy(m(x), data.y);
  bool ok = std::isfinite(last) && last < 0.5f * first;
  std::printf("\n%s: loss %.4f -> %.4f in %d steps (%.2f s, compiling included), %zu kernels per step, training accuracy %.1f%%: %s\n", d.c_str(),
              first, last, kSteps, secs, step.kernels(), 100 * acc, ok ? "ok" : "WRONG (the loss did not halve)");
  return ok;
}

std::string human_bytes(uint64_t b) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GiB", static_cast<double>(b) / (1u << 30));
  return buf;
}

}  // namespace

int demo(const std::string& device, const std::string& trace) {
  drivers::DefaultDevice choice = device.empty() ? drivers::default_device() : drivers::DefaultDevice{device, "chosen with --device"};
  hcq::Device* dev = &tensor::device(choice.name);  // shared with the tensor part below
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
      if (r.skipped) result += " (" + std::to_string(r.skipped) + (r.skipped == 1 ? " run" : " runs") + " not run: " + r.skip_reason + ")";
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

  // Models written with tensors: scheduled into kernels, compiled, and run on the same device.
  std::printf("\nmodels from tensors (scheduler -> codegen -> %s), checked against a double-precision host reference; ms includes compiling\n",
              dev->name().c_str());
  std::printf("\n  %-30s %7s %10s %12s  %s\n", "model", "kernels", "ms", "max error", "result");
  int models_failed = 0;
  auto report = [&](const char* name, auto run) {
    try {
      ModelResult r = run();
      std::printf("  %-30s %7zu %10.2f %12.2e  %s\n", name, r.kernels, r.ms, r.worst, r.ok ? "ok" : "WRONG");
      models_failed += !r.ok;
    } catch (const Error& e) {
      std::printf("  %-30s FAILED: %s\n", name, e.what());
      ++models_failed;
    }
  };
  if (!dev->failed()) {
    const std::string& d = dev->name();
    report("mlp 8x64 -> 128 -> 10", [&] {
      auto m = tensor::examples::Mlp::random(64, 128, 10, 7, d);
      return check_model(m, tensor::Tensor::randn({8, 64}, 8, tensor::dtypes::float32, d).realize());
    });
    report("llama block dim 64, 16 tokens", [&] {
      auto b = tensor::examples::TransformerBlock::random(64, 4, 2, 128, 9, d);
      return check_model(b, tensor::Tensor::randn({1, 16, 64}, 10, tensor::dtypes::float32, d).realize());
    });
  }
  failed += models_failed;
  if (!dev->failed()) {
    try {
      failed += !train_demo(dev->name());
    } catch (const Error& e) {
      std::printf("\ntraining FAILED: %s\n", e.what());
      ++failed;
    }
  }
  if (profiler) {
    dev->synchronize();
    profiler->write(trace);
    std::printf("trace: %s (%zu events; open it in ui.perfetto.dev or chrome://tracing)\n", trace.c_str(), profiler->events().size());
  }
  return failed ? 1 : 0;
}

}  // namespace ugpu::tools
