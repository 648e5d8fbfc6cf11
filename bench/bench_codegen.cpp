// bench-codegen: time spent turning the built-in kernels (codegen/builtin_kernels.cpp, each in its
// first run's sizes) into LLVM IR (ugpu's own work), and LLVM's time to compile that IR, per target.
// The peer to beat: tinygrad spends about 200 ms of Python per MLP kernel before LLVM is called;
// the aim here is <= 2 ms.
// Then fused-model-sized kernels: one chain of 1,000 and 10,000 dependent ALU ops (float and int32),
// ugpu's codegen time only; codegen must grow linearly (or n log n) with the kernel's size.
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "codegen/builtin_kernels.h"
#include "codegen/kernel.h"
#include "codegen/llvm/llvm.h"
#include "codegen/llvm/render.h"
#include "ir/text.h"

using namespace ugpu;
using Clock = std::chrono::steady_clock;

int main(int argc, char** argv) {
  int reps = argc > 1 ? std::atoi(argv[1]) : 50;
  std::vector<std::string> targets = {"x86", "gfx1100", "gfx942", "sm_90"};
  std::printf("# %zu kernels x %zu targets; codegen = lower() + LLVM IR text, %d reps each, results dropped between reps\n",
              codegen::builtin_kernels().size(), targets.size(), reps);
  for (const std::string& tn : targets) {
    const codegen::Target& t = codegen::find_target(tn);
    double codegen_us = 0, llvm_ms = 0, machine_ms = 0, parse_ms = 0, opt_ms = 0, emit_ms = 0;
    int kernels = 0;
    for (const codegen::BuiltinKernel& e : codegen::builtin_kernels()) {
      if (e.gpu_only && !t.gpu()) continue;
      ir::UOp k = ir::parse(e.source());
      std::string ir_text;
      auto t0 = Clock::now();
      for (int r = 0; r < reps; ++r) {
        codegen::LoweredKernel lk = codegen::lower(k, t, e.name);
        ir_text = codegen::render_llvm_ir(lk, t);
      }
      double us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / reps;
      auto t1 = Clock::now();
      int llvm_reps = 3;
      for (int r = 0; r < llvm_reps; ++r) {
        codegen::LlvmOutput o = codegen::compile_llvm_ir(ir_text, t);
        machine_ms += o.machine_ms / llvm_reps, parse_ms += o.parse_ms / llvm_reps, opt_ms += o.opt_ms / llvm_reps, emit_ms += o.emit_ms / llvm_reps;
      }
      double ms = std::chrono::duration<double, std::milli>(Clock::now() - t1).count() / llvm_reps;
      std::printf("codegen_us[%s,%s]: %.1f\nllvm_ms[%s,%s]: %.2f\n", e.name.c_str(), tn.c_str(), us, e.name.c_str(), tn.c_str(), ms);
      codegen_us += us, llvm_ms += ms, ++kernels;
    }
    std::printf("codegen_us_per_kernel[%s]: %.1f us\n", tn.c_str(), codegen_us / kernels);
    std::printf("llvm_ms_per_kernel[%s]: %.2f ms\n", tn.c_str(), llvm_ms / kernels);
    std::printf("llvm_phase_ms_per_kernel[%s]: machine %.2f, parse+verify %.2f, opt %.2f, isel+emit %.2f\n", tn.c_str(), machine_ms / kernels,
                parse_ms / kernels, opt_ms / kernels, emit_ms / kernels);
  }
  // A chain of n dependent ops on one loaded value: v = v * c + x (float) or v = (v * c) ^ x (int32).
  auto chain = [](int n, const std::string& type) {
    std::string s = "out = DEFINE_GLOBAL:" + type + "* {0}\na = DEFINE_GLOBAL:" + type + "* {1}\ni = RANGE(256) {0, GLOBAL}\n";
    s += "x = LOAD:" + type + "(INDEX:" + type + "*(a, i))\nv0 = x\n";
    for (int k = 0; k < n / 2; ++k) {
      std::string c = type == "float" ? std::to_string(1 + (k % 7) / 8.0) : std::to_string(3 + 2 * (k % 5));
      s += "v" + std::to_string(k + 1) + " = " +
           (type == "float" ? "v" + std::to_string(k) + " * " + c + " + x\n" : "(v" + std::to_string(k) + " * " + c + ") ^ x\n");
    }
    return s + "SINK(END(STORE(INDEX:" + type + "*(out, i), v" + std::to_string(n / 2) + "), i))\n";
  };
  for (const std::string& tn : {std::string("x86"), std::string("gfx1100")})
    for (const std::string& type : {std::string("float"), std::string("int32")})
      for (int n : {1000, 10000}) {
        std::string text = chain(n, type);
        const codegen::Target& t = codegen::find_target(tn);
        auto t0 = Clock::now();
        codegen::LoweredKernel lk = codegen::lower(ir::parse(text), t, "chain");
        std::string ir_text = codegen::render_llvm_ir(lk, t);
        double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
        std::printf("codegen_ms_chain%d[%s,%s]: %.1f ms (%.2f us per op)\n", n, type.c_str(), tn.c_str(), ms, ms * 1000 / n);
      }
  return 0;
}
