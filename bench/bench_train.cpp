// bench-train: one training step (forward, cross-entropy, backward, Adam) of an MLP (784-512-512-10,
// batch 256) and of a small CNN (two 3x3 convolutions with ReLU and 2x2 max-pooling, then a linear
// layer; 28x28 images, batch 64), in float32 on one device — built and scheduled every step (eager)
// and replayed by a Jit — and, on the cpu device, the same steps in PyTorch (bench/torch_train.py:
// Debian python3-torch; scripts/setup --tests) with the same thread count in the same run.
//
//   bench-train [--device D] [--reps N] [--model mlp|cnn|both]
//
// Prints, per model (mlp., cnn.): train_step_ms (the best Jit replay), train_step_eager_ms,
// train_step_torch_ms and train_step_ratio_torch (PyTorch's time / ugpu's: above 1, ugpu is
// faster), kernels_per_step, step_memory_bytes (what one step's realize allocates: intermediates
// and the gradients and loss it writes) and params_bytes.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "common/error.h"
#include "hcq/device.h"
#include "tensor/grad.h"
#include "tensor/jit.h"
#include "tensor/nn.h"
#include "tensor/optim.h"

using namespace ugpu;
using namespace ugpu::tensor;
using Clock = std::chrono::steady_clock;

namespace {

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

struct Model {
  std::vector<nn::Linear> linears;
  std::vector<nn::Conv2d> convs;
  bool cnn = false;
  Tensor operator()(const Tensor& x) const {
    Tensor h = x;
    if (cnn) {
      for (const nn::Conv2d& c : convs) h = c(h).relu().max_pool2d({2, 2});
      return linears[0](h.flatten(1));
    }
    for (size_t i = 0; i < linears.size(); ++i) h = i + 1 < linears.size() ? linears[i](h).relu() : linears[i](h);
    return h;
  }
  nn::Params params() const {
    nn::Params p;
    for (size_t i = 0; i < convs.size(); ++i)
      for (auto& [n, t] : convs[i].state()) p.push_back({"conv" + std::to_string(i) + "." + n, t});
    for (size_t i = 0; i < linears.size(); ++i)
      for (auto& [n, t] : linears[i].state()) p.push_back({"fc" + std::to_string(i) + "." + n, t});
    return p;
  }
};

struct Torch {
  double ms = 0;
  std::string skipped;
};

Torch run_torch(const std::string& model, int64_t batch, int threads, int reps) {
  Torch r;
  if (access("/usr/bin/python3", X_OK) != 0 || std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") != 0) {
    r.skipped = "PyTorch for the CPU is not installed (apt-get install python3-torch libopenblas0-pthread, or scripts/setup --tests)";
    return r;
  }
  std::string cmd = std::string("/usr/bin/python3 ") + UGPU_SOURCE_ROOT + "/bench/torch_train.py " + model + " " + std::to_string(batch) + " " +
                    std::to_string(threads) + " " + std::to_string(reps) + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  char buf[512];
  while (p && fgets(buf, sizeof buf, p)) out += buf;
  int rc = p ? pclose(p) : -1;
  if (rc != 0 || std::sscanf(out.c_str(), "torch_ms: %lf", &r.ms) != 1) r.skipped = "bench/torch_train.py failed: " + out;
  return r;
}

void bench(const std::string& name, const std::string& dev, int reps) {
  Model m;
  Tensor x, y;
  int64_t batch;
  if (name == "mlp") {
    batch = 256;
    m.linears = {nn::Linear(784, 512, 1, true, dtypes::float32, dev), nn::Linear(512, 512, 2, true, dtypes::float32, dev),
                 nn::Linear(512, 10, 3, true, dtypes::float32, dev)};
    x = Tensor::randn({batch, 784}, 10, dtypes::float32, dev).realize();
  } else {
    batch = 64;
    m.cnn = true;
    m.convs = {nn::Conv2d(1, 16, {3, 3}, 1, {1, 1}, {1, 1}, {1, 1}, 1, true, dtypes::float32, dev),
               nn::Conv2d(16, 32, {3, 3}, 2, {1, 1}, {1, 1}, {1, 1}, 1, true, dtypes::float32, dev)};
    m.linears = {nn::Linear(32 * 7 * 7, 10, 3, true, dtypes::float32, dev)};
    x = Tensor::randn({batch, 1, 28, 28}, 10, dtypes::float32, dev).realize();
  }
  y = Tensor::randint({batch}, 0, 10, 11, dtypes::int32, dev).realize();
  int64_t params_bytes = 0;
  for (auto& [n, t] : m.params()) params_bytes += t.numel() * 4;
  optim::Adam opt(m.params(), optim::LR::constant(1e-3));
  auto body = [&](const std::vector<Tensor>& in, const Jit::Vars&) {
    Tensor loss = nn::cross_entropy(m(in[0]), in[1]);
    opt.zero_grad();
    loss.backward();
    opt.step({loss});
    return std::vector<Tensor>{loss};
  };
  hcq::Device& d = device(dev);
  // Eager: the graph built, scheduled and run every step (kernels compiled in the first).
  auto t0 = Clock::now();
  float first = body({x, y}, {})[0].to_vector<float>()[0];
  double first_ms = ms_since(t0);
  RealizeStats st = last_realize();
  double eager = 1e300;
  for (int r = 0; r < reps; ++r) {
    t0 = Clock::now();
    body({x, y}, {});
    d.synchronize();
    eager = std::min(eager, ms_since(t0));
  }
  Jit step(body);
  double jit = 1e300;
  float last = 0;
  for (int r = 0; r < reps + 2; ++r) {
    t0 = Clock::now();
    Tensor loss = step({x, y})[0];
    d.synchronize();
    if (r >= 2) jit = std::min(jit, ms_since(t0));
    last = loss.to_vector<float>()[0];
  }
  std::printf("# %s: loss %.4f -> %.4f over %d steps; first step %.1f ms (compiling included)\n", name.c_str(), first, last, 2 * reps + 3, first_ms);
  std::printf("%s.train_step_ms: %.3f\n", name.c_str(), jit);
  std::printf("%s.train_step_eager_ms: %.3f\n", name.c_str(), eager);
  std::printf("%s.kernels_per_step: %zu\n", name.c_str(), st.kernels);
  std::printf("%s.step_memory_bytes: %ld\n", name.c_str(), long(st.arena_bytes + st.output_bytes));
  std::printf("%s.params_bytes: %ld\n", name.c_str(), long(params_bytes));
  if (dev != "cpu") {
    std::printf("# %s: PyTorch comparison only on --device cpu\n", name.c_str());
    return;
  }
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  Torch t = run_torch(name, batch, threads, reps);
  if (!t.skipped.empty()) {
    std::printf("# %s: PyTorch comparison skipped: %s\n", name.c_str(), t.skipped.c_str());
    return;
  }
  std::printf("# %s: PyTorch with %d threads\n", name.c_str(), threads);
  std::printf("%s.train_step_torch_ms: %.3f\n", name.c_str(), t.ms);
  std::printf("%s.train_step_ratio_torch: %.3f\n", name.c_str(), t.ms / jit);
}

}  // namespace

int main(int argc, char** argv) {
  std::string dev = "cpu", model = "both";
  int reps = 10;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--device") dev = argv[i + 1];
    else if (a == "--reps") reps = std::max(1, std::atoi(argv[i + 1]));
    else if (a == "--model") model = argv[i + 1];
    else {
      std::fprintf(stderr, "usage: bench-train [--device D] [--reps N] [--model mlp|cnn|both]\n");
      return 2;
    }
  }
  if (argc % 2 == 0 || (model != "mlp" && model != "cnn" && model != "both")) {
    std::fprintf(stderr, "usage: bench-train [--device D] [--reps N] [--model mlp|cnn|both]\n");
    return 2;
  }
  try {
    std::printf("# bench-train on %s (%s)\n", dev.c_str(), device(dev).info().interface.c_str());
    for (const char* m : {"mlp", "cnn"})
      if (model == "both" || model == m) bench(m, dev, reps);
  } catch (const Error& e) {
    std::fprintf(stderr, "bench-train: %s\n", e.what());
    return 1;
  }
  return 0;
}
