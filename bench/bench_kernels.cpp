// bench-kernels: single kernels as the scheduler writes them, on one device, next to OpenBLAS and
// memcpy in the same run — the measure of issue 21's kernel optimizer (before it, these are the
// codegen's plain loops).
//   bench-kernels [--device D] [--reps R] [--sizes 512,1024,2048] [--quick]
// Each kernel is compiled in a warm-up realize, then the best of R realizes is taken (realize: launch
// and wait; the inputs stay on the device). Figures, as `name: value` lines:
//   sgemm_gflops[N,D]            C = A @ B, float32, N x N x N
//   sgemm_f16_gflops[N,D]        the same with half inputs (computed in float32)
//   sgemm_gflops_openblas[N]     cblas_sgemm on the same threads (where libopenblas-dev is installed)
//   sgemm_ratio_openblas[N,D]    ugpu / OpenBLAS
//   conv2d_gflops[D]             a 3x3 convolution, 64 -> 64 channels, 56 x 56, batch 1
//   softmax_gbps[D], sum_gbps[D], add_gbps[D]   bytes read and written per second
//   memcpy_gbps                  std::memcpy of the add's bytes, on the host
//   bandwidth_ratio_memcpy[D]    add / memcpy
// On an emulated GPU (emu:amd, emu:nv), where time says little, the executor's instruction count is
// the measure instead — of smaller kernels, before and after the optimizer (UGPU_OPT):
//   <kernel>_instr_per_flop[D], <kernel>_instr_per_flop_unopt[D]         sgemm 64/128, sgemm_f16_128 (half
//                                                                         inputs: tensor cores), conv2d
//   <kernel>_instr_per_element[D], <kernel>_instr_per_element_unopt[D]   softmax, sum, add
// (wave instructions on emu:amd, warp instructions on emu:nv), and what the optimized kernels use,
// read back from their code objects (the most of the op's kernels):
//   <kernel>_registers[D]     VGPRs per work-item (AMD), registers per thread (NVIDIA, with ptxas)
//   <kernel>_shared_bytes[D]  workgroup memory
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "codegen/compiler.h"
#include "common/error.h"
#include "common/split.h"
#include "hcq/device.h"
#include "tensor/tensor.h"

#ifdef UGPU_HAVE_OPENBLAS
#include <cblas.h>
#endif

using namespace ugpu;
using namespace ugpu::tensor;
using Clock = std::chrono::steady_clock;

namespace {

double seconds(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// The best time of `reps` realizes of `make()` (a fresh graph each time; its kernels are cached).
template <class F>
double best_realize(F make, int reps) {
  Tensor w = make();
  w.realize();
  (void)w.to_bytes();  // compiled and run once
  double best = 1e30;
  for (int i = 0; i < reps; ++i) {
    Tensor t = make();
    auto t0 = Clock::now();
    t.realize();
    device(t.device()).synchronize();
    best = std::min(best, seconds(t0));
  }
  return best;
}

// Emulated GPUs: instructions the executor runs for one realize of `make()`, optimized or not.
template <class F>
uint64_t instructions(hcq::Device& d, F make, bool optimize) {
  set_optimize_kernels(optimize);
  Tensor w = make();
  w.realize();
  d.synchronize();
  Tensor t = make();
  uint64_t before = *d.executed_instructions();
  t.realize();
  d.synchronize();
  return *d.executed_instructions() - before;
}

int emulated(const std::string& dev) {
  hcq::Device& d = device(dev);
  auto report = [&](const std::string& name, const char* unit, double work, auto make) {
    double unopt = static_cast<double>(instructions(d, make, false)) / work;
    double opt = static_cast<double>(instructions(d, make, true)) / work;
    std::printf("%s_instr_per_%s_unopt[%s]: %.4f\n%s_instr_per_%s[%s]: %.4f\n", name.c_str(), unit, dev.c_str(), unopt, name.c_str(), unit,
                dev.c_str(), opt);
    // What the optimized kernels use, from their code objects (the most of any kernel of the op).
    int regs = -1;
    int64_t shared = 0;
    for (const auto& ck : last_realize().compiled) {
      if (ck->amd) regs = std::max(regs, ck->amd->vgprs);
      if (ck->cubin) regs = std::max(regs, static_cast<int>(ck->cubin->registers));
      shared = std::max(shared, ck->kernel.shared_bytes);
    }
    if (regs >= 0) std::printf("%s_registers[%s]: %d\n", name.c_str(), dev.c_str(), regs);
    std::printf("%s_shared_bytes[%s]: %ld\n", name.c_str(), dev.c_str(), long(shared));
    std::fflush(stdout);
  };
  for (int64_t n : {64, 128}) {
    Tensor a = Tensor::rand({n, n}, 1, dtypes::float32, dev).realize(), b = Tensor::rand({n, n}, 2, dtypes::float32, dev).realize();
    report("sgemm" + std::to_string(n), "flop", 2.0 * double(n * n * n), [&] { return a.matmul(b); });
  }
  // Half inputs summed in float: the optimizer runs these on the tensor cores (WMMA, mma.sync).
  Tensor ah = Tensor::rand({128, 128}, 1, dtypes::float32, dev).cast(dtypes::half).realize();
  Tensor bh = Tensor::rand({128, 128}, 2, dtypes::float32, dev).cast(dtypes::half).realize();
  report("sgemm_f16_128", "flop", 2.0 * 128 * 128 * 128, [&] { return ah.cast(dtypes::float32).matmul(bh.cast(dtypes::float32)); });
  Tensor x = Tensor::randn({1, 16, 16, 16}, 3, dtypes::float32, dev).realize(), w = Tensor::randn({16, 16, 3, 3}, 4, dtypes::float32, dev).realize();
  report("conv2d", "flop", 2.0 * 16 * 16 * 9 * 16 * 16, [&] { return x.conv2d(w, {}, {1, 1}, {1, 1}); });
  Tensor big = Tensor::randn({64, 1024}, 5, dtypes::float32, dev).realize(), other = Tensor::randn({64, 1024}, 6, dtypes::float32, dev).realize();
  report("softmax", "element", 64.0 * 1024, [&] { return big.softmax(-1); });
  report("sum", "element", 64.0 * 1024, [&] { return big.sum(); });
  report("add", "element", 64.0 * 1024, [&] { return big + other; });
  set_optimize_kernels(true);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string dev = "cpu", sizes_text = "512,1024,2048";
  int reps = 3;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--device" && i + 1 < argc) dev = argv[++i];
    else if (a == "--reps" && i + 1 < argc) reps = std::max(1, std::atoi(argv[++i]));
    else if (a == "--sizes" && i + 1 < argc) sizes_text = argv[++i];
    else if (a == "--quick") sizes_text = "256", reps = 1;
    else {
      std::fprintf(stderr, "usage: bench-kernels [--device D] [--reps R] [--sizes 512,1024,2048] [--quick]\n");
      return 2;
    }
  }
  try {
    if (device(dev).executed_instructions()) return emulated(dev);
    const std::string tag = "," + dev;
    for (const std::string& size : split_list(sizes_text)) {
      int64_t n = std::stoll(size);
      Tensor a = Tensor::rand({n, n}, 1, dtypes::float32, dev).realize(), b = Tensor::rand({n, n}, 2, dtypes::float32, dev).realize();
      double flop = 2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n);
      double s = best_realize([&] { return a.matmul(b); }, reps);
      std::printf("sgemm_gflops[%ld%s]: %.2f\n", long(n), tag.c_str(), flop / s / 1e9);
      std::fflush(stdout);
      Tensor ah = a.cast(dtypes::half).realize(), bh = b.cast(dtypes::half).realize();
      double sh = best_realize([&] { return ah.cast(dtypes::float32).matmul(bh.cast(dtypes::float32)); }, reps);
      std::printf("sgemm_f16_gflops[%ld%s]: %.2f\n", long(n), tag.c_str(), flop / sh / 1e9);
#ifdef UGPU_HAVE_OPENBLAS
      std::vector<float> ha = a.to_vector<float>(), hb = b.to_vector<float>(), hc(static_cast<size_t>(n * n));
      int ni = static_cast<int>(n);
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, ni, ni, ni, 1.0f, ha.data(), ni, hb.data(), ni, 0.0f, hc.data(), ni);
      double sb = 1e30;
      for (int r = 0; r < reps; ++r) {
        auto t0 = Clock::now();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, ni, ni, ni, 1.0f, ha.data(), ni, hb.data(), ni, 0.0f, hc.data(), ni);
        sb = std::min(sb, seconds(t0));
      }
      std::printf("sgemm_gflops_openblas[%ld]: %.2f\n", long(n), flop / sb / 1e9);
      std::printf("sgemm_ratio_openblas[%ld%s]: %.4f\n", long(n), tag.c_str(), sb / s);
#endif
      std::fflush(stdout);
    }
    {
      Tensor x = Tensor::randn({1, 64, 56, 56}, 3, dtypes::float32, dev).realize(),
             w = (Tensor::randn({64, 64, 3, 3}, 4, dtypes::float32, dev) * 0.05).realize();
      double flop = 2.0 * 64 * 64 * 9 * 56 * 56;
      double s = best_realize([&] { return x.conv2d(w, {}, {1, 1}, {1, 1}); }, reps);
      std::printf("conv2d_gflops[%s]: %.2f\n", dev.c_str(), flop / s / 1e9);
    }
    const int64_t rows = 4096, cols = 4096, elems = rows * cols;  // 64 MiB of float32
    Tensor big = Tensor::randn({rows, cols}, 5, dtypes::float32, dev).realize(),
           other = Tensor::randn({rows, cols}, 6, dtypes::float32, dev).realize();
    double bytes = static_cast<double>(elems) * 4;
    double sm = best_realize([&] { return big.softmax(-1); }, reps);
    std::printf("softmax_gbps[%s]: %.2f\n", dev.c_str(), 2 * bytes / sm / 1e9);
    double su = best_realize([&] { return big.sum(); }, reps);
    std::printf("sum_gbps[%s]: %.2f\n", dev.c_str(), bytes / su / 1e9);
    double ad = best_realize([&] { return big + other; }, reps);
    double add_gbps = 3 * bytes / ad / 1e9;
    std::printf("add_gbps[%s]: %.2f\n", dev.c_str(), add_gbps);
    std::vector<char> src(static_cast<size_t>(2 * bytes), 1), dst(static_cast<size_t>(bytes));
    double mc = 1e30;
    for (int r = 0; r < reps + 1; ++r) {
      auto t0 = Clock::now();
      std::memcpy(dst.data(), src.data() + static_cast<size_t>(r % 2) * dst.size(), dst.size());
      mc = std::min(mc, seconds(t0));
    }
    double memcpy_gbps = 2 * bytes / mc / 1e9;
    std::printf("memcpy_gbps: %.2f\n", memcpy_gbps);
    std::printf("bandwidth_ratio_memcpy[%s]: %.4f\n", dev.c_str(), add_gbps / memcpy_gbps);
  } catch (const Error& e) {
    std::fprintf(stderr, "bench-kernels: %s\n", e.what());
    return 1;
  }
  return 0;
}
