// bench-tensor: the tensor layer's own cost and a transformer block forward, against PyTorch.
//   bench-tensor [--device D] [--dim 256] [--heads 8] [--kv-heads 4] [--hidden 688] [--tokens 64] [--reps 10]
// Figures: the scheduler's time (tensor graph -> kernel graphs) per block and per kernel, the
// kernels per block, the block forward end to end (graph building, scheduling, launch, wait; kernels
// compiled in a warm-up) and replayed through a Jit; the fixed cost of a one-kernel realize and of
// its Jit replay; then, where PyTorch for the CPU is installed
// (Debian python3-torch; scripts/setup --tests), the same block with the same weights and thread
// count in PyTorch (bench/torch_block.py), the ratio, and the largest difference of the outputs.
// The peer to beat for scheduling: tinygrad takes milliseconds of Python per kernel; the aim here is
// under 100 us per kernel.
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "common/error.h"
#include "hcq/device.h"
#include "schedule/schedule.h"
#include "tensor/examples.h"
#include "tensor/jit.h"

using namespace ugpu;
using namespace ugpu::tensor;
using Clock = std::chrono::steady_clock;

namespace {

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

void write_floats(const std::string& path, const Tensor& t) {
  std::vector<float> v = t.to_vector<float>();
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(v.data()), static_cast<std::streamsize>(v.size() * sizeof(float)));
}

// PyTorch's time for the same block, or a reason it did not run.
struct Torch {
  double ms = 0, max_diff = 0;
  std::string blas, skipped;
};
Torch run_torch(const examples::TransformerBlock& b, const Tensor& x, const std::vector<float>& ours, int64_t batch, int64_t tokens, int threads,
                int reps) {
  Torch r;
  const char* py = "/usr/bin/python3";
  if (access(py, X_OK) != 0 || std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") != 0) {
    r.skipped = "PyTorch for the CPU is not installed (apt-get install python3-torch libopenblas0-pthread, or scripts/setup --tests)";
    return r;
  }
  std::string dir = (std::filesystem::temp_directory_path() / ("ugpu-bench-tensor-" + std::to_string(getpid()))).string();
  std::filesystem::create_directories(dir);
  write_floats(dir + "/x.bin", x);
  const std::pair<const char*, const Tensor*> weights[] = {{"attn_norm", &b.attn_norm},
                                                           {"ffn_norm", &b.ffn_norm},
                                                           {"wq", &b.wq},
                                                           {"wk", &b.wk},
                                                           {"wv", &b.wv},
                                                           {"wo", &b.wo},
                                                           {"w1", &b.w1},
                                                           {"w2", &b.w2},
                                                           {"w3", &b.w3}};
  for (const auto& [name, t] : weights) write_floats(dir + "/" + name + ".bin", *t);
  std::string cmd = std::string(py) + " " + UGPU_SOURCE_ROOT + "/bench/torch_block.py " + dir;
  for (int64_t v : {b.dim, b.heads, b.kv_heads, b.hidden, batch, tokens, static_cast<int64_t>(threads), static_cast<int64_t>(reps)})
    cmd += " " + std::to_string(v);
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  std::string out;
  char buf[512];
  while (p && fgets(buf, sizeof buf, p)) out += buf;
  int rc = p ? pclose(p) : -1;
  if (rc != 0 || std::sscanf(out.c_str(), "torch_ms: %lf", &r.ms) != 1) {
    r.skipped = "bench/torch_block.py failed: " + out;
  } else {
    if (auto at = out.find("torch_blas: "); at != std::string::npos) r.blas = out.substr(at + 12, out.find('\n', at) - at - 12);
    std::ifstream f(dir + "/torch_out.bin", std::ios::binary);
    std::vector<float> theirs(ours.size());
    f.read(reinterpret_cast<char*>(theirs.data()), static_cast<std::streamsize>(theirs.size() * sizeof(float)));
    for (size_t i = 0; i < ours.size(); ++i) r.max_diff = std::max(r.max_diff, static_cast<double>(std::abs(ours[i] - theirs[i])));
  }
  std::filesystem::remove_all(dir);
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  std::string dev = "cpu";
  int64_t dim = 256, heads = 8, kv_heads = 4, hidden = 688, tokens = 64, batch = 1;
  int reps = 10;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    int64_t v = std::atoll(argv[i + 1]);
    if (a == "--device") dev = argv[i + 1];
    else if (a == "--dim") dim = v;
    else if (a == "--heads") heads = v;
    else if (a == "--kv-heads") kv_heads = v;
    else if (a == "--hidden") hidden = v;
    else if (a == "--tokens") tokens = v;
    else if (a == "--reps") reps = static_cast<int>(v);
    else {
      std::fprintf(stderr, "usage: bench-tensor [--device D] [--dim N] [--heads N] [--kv-heads N] [--hidden N] [--tokens N] [--reps N]\n");
      return 2;
    }
  }
  try {
    auto block = examples::TransformerBlock::random(dim, heads, kv_heads, hidden, 1, dev);
    Tensor x = (Tensor::randn({batch, tokens, dim}, 99, dtypes::float32, dev)).realize();
    std::printf("# llama-style block: dim %ld, %ld heads (%ld kv), ffn %ld, %ld tokens, on %s (%s)\n", long(dim), long(heads), long(kv_heads),
                long(hidden), long(tokens), dev.c_str(), device(dev).info().interface.c_str());

    // The scheduler alone, on the block's graph.
    Tensor y = block.forward(x);
    std::vector<ir::UOp> roots{y.uop()};
    int64_t next = 1 << 30;
    auto t0 = Clock::now();
    size_t kernels = 0;
    int sched_reps = 200;
    for (int r = 0; r < sched_reps; ++r) kernels = schedule::make_schedule(roots, [&] { return next++; }).kernels.size();
    double sched_us = ms_since(t0) * 1000 / sched_reps;
    t0 = Clock::now();
    for (int r = 0; r < sched_reps; ++r) (void)block.forward(x);
    double build_us = ms_since(t0) * 1000 / sched_reps;
    std::printf("graph_build_us_per_block: %.1f us\n", build_us);
    std::printf("schedule_us_per_block: %.1f us\n", sched_us);
    std::printf("schedule_us_per_kernel: %.1f us\n", sched_us / static_cast<double>(kernels));
    std::printf("kernels_per_block: %zu\n", kernels);

    // End to end, kernels compiled in the warm-up.
    t0 = Clock::now();
    y.realize();
    device(dev).synchronize();
    std::printf("block_first_forward_ms: %.1f ms (compiling %zu kernels included)\n", ms_since(t0), kernels);
    std::vector<float> ours = y.to_vector<float>();
    double best = 1e300;
    for (int r = 0; r < reps; ++r) {
      t0 = Clock::now();
      Tensor z = block.forward(x).realize();
      device(dev).synchronize();
      best = std::min(best, ms_since(t0));
    }
    std::printf("block_forward_ms: %.3f ms\n", best);
    Jit jit([&](const std::vector<Tensor>& in, const Jit::Vars&) { return std::vector<Tensor>{block.forward(in[0])}; });
    double jit_best = 1e300;
    for (int r = 0; r < reps + 2; ++r) {
      t0 = Clock::now();
      jit({x});
      device(dev).synchronize();
      if (r >= 2) jit_best = std::min(jit_best, ms_since(t0));
    }
    std::printf("block_forward_jit_ms: %.3f ms\n", jit_best);

    // The fixed cost of one small realize (a cached kernel: graph, schedule, launch, wait) and of a
    // Jit replay of it.
    Tensor a = Tensor::ones({16}, dtypes::float32, dev).realize(), b = Tensor::ones({16}, dtypes::float32, dev).realize();
    double add_best = 1e300, add_jit_best = 1e300;
    Jit add_jit([](const std::vector<Tensor>& in, const Jit::Vars&) { return std::vector<Tensor>{in[0] + in[1]}; });
    for (int r = 0; r < 200; ++r) {
      t0 = Clock::now();
      (a + b).realize();
      device(dev).synchronize();
      add_best = std::min(add_best, ms_since(t0));
      t0 = Clock::now();
      add_jit({a, b});
      device(dev).synchronize();
      if (r >= 2) add_jit_best = std::min(add_jit_best, ms_since(t0));
    }
    std::printf("realize_us_add: %.1f us\n", add_best * 1000);
    std::printf("jit_replay_us_add: %.1f us\n", add_jit_best * 1000);

    int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    if (dev != "cpu") {
      std::printf("# PyTorch comparison: only on --device cpu\n");
      return 0;
    }
    Torch t = run_torch(block, x, ours, batch, tokens, threads, reps);
    if (!t.skipped.empty()) {
      std::printf("# PyTorch comparison skipped: %s\n", t.skipped.c_str());
      return 0;
    }
    std::printf("# PyTorch %d threads, BLAS: %s\n", threads, t.blas.c_str());
    std::printf("block_forward_torch_ms: %.3f ms\n", t.ms);
    std::printf("block_forward_ratio_torch: %.3f\n", t.ms / best);
    std::printf("block_max_abs_diff_torch: %.2e\n", t.max_diff);
    if (t.max_diff > 1e-3) {
      std::printf("# the outputs of ugpu and PyTorch differ by more than 1e-3\n");
      return 1;
    }
  } catch (const Error& e) {
    std::fprintf(stderr, "bench-tensor: %s\n", e.what());
    return 1;
  }
  return 0;
}
