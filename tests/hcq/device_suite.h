// The kernel suite through a device's driver, compared with the CPU device: every built-in kernel
// (codegen/builtin_kernels.cpp) in each of its runs — elementwise ops in all 12 dtypes, reductions,
// floor division (with a variable divisor), a variable loop, workgroup memory and a barrier, the
// examples. Shared by the AMD, NVIDIA and silicon tests.
#pragma once
#include <doctest/doctest.h>

#include <cstring>

#include "codegen/builtin_kernels.h"
#include "codegen/compiler.h"
#include "drivers/devices.h"
#include "ir/text.h"

namespace ugpu::test {

// Runs `text` on `dev` with the given input bytes per buffer slot and variables; returns the buffers.
// Buffers the compiled kernel no longer uses (simplified away) are not passed; its parameters say
// which slots remain.
// `opts`: the optimizer's actions to apply first (codegen/opt/opt.h).
inline std::vector<std::vector<uint8_t>> run_on(hcq::Device& dev, const std::string& text, const std::vector<std::vector<uint8_t>>& in,
                                                const std::vector<int64_t>& vars, const std::vector<codegen::opt::Opt>& opts = {}) {
  codegen::CompileOptions o;
  o.name = "k";
  o.opts = opts;
  auto ck = codegen::compile(ir::parse(text), codegen::find_target(dev.target()), o);
  auto prog = dev.load(ck);
  std::vector<hcq::Buffer> bufs;
  for (const auto& b : in) {
    bufs.push_back(dev.alloc(b.size()));
    dev.copy_in(bufs.back(), 0, b);
  }
  std::vector<hcq::Val> args;
  for (const codegen::Param& p : ck->kernel.params)
    if (p.kind == codegen::Param::Kind::Buffer) args.push_back(bufs.at(static_cast<size_t>(p.slot)).va);
  for (size_t i = 0; i < vars.size() && static_cast<int>(i) < prog->vars; ++i)
    args.push_back(static_cast<uint64_t>(vars[i]));  // unused variables are dropped
  uint64_t t = dev.next_timeline();
  auto q = dev.compute_queue();
  q->wait(dev.timeline(), t - 1).memory_barrier().exec(*prog, args).memory_barrier().signal(dev.timeline(), t);
  q->submit();
  dev.synchronize();
  std::vector<std::vector<uint8_t>> out;
  for (size_t i = 0; i < bufs.size(); ++i) {
    out.emplace_back(in[i].size());
    dev.copy_out(out.back(), bufs[i], 0);
  }
  return out;
}

// One run of a built-in kernel on `dev`: the buffers after it.
inline codegen::Buffers run_on(hcq::Device& dev, const codegen::BuiltinKernel& k, const codegen::KernelRun& run, codegen::Buffers bufs) {
  std::vector<std::vector<uint8_t>> in;
  for (const codegen::HostData& b : bufs) in.push_back(b.bytes);
  std::vector<std::vector<uint8_t>> out = run_on(dev, k.source(run), in, run.var_values());
  for (size_t i = 0; i < bufs.size(); ++i) bufs[i].bytes = std::move(out[i]);
  return bufs;
}

// Bit-exact, except that any NaN equals any NaN (GPUs differ in the payload they give a NaN result:
// NVIDIA's arithmetic returns the canonical NaN, x86 and AMD propagate an operand's) and where a
// hardware transcendental's bound applies (softmax's exp, the kernel's tolerance).
inline void kernel_suite_matches_cpu(hcq::Device& gpu) {
  auto cpu = drivers::open_device("cpu");
  for (const codegen::BuiltinKernel& k : codegen::builtin_kernels())
    for (size_t i = 0; i < k.runs.size(); ++i) {
      CAPTURE(k.name);
      CAPTURE(k.runs[i].label());
      if (std::string why = codegen::unsupported_on(k, k.runs[i], codegen::find_target(gpu.target())); !why.empty()) {
        MESSAGE(gpu.name() << ": " << k.name << " " << k.runs[i].label() << " not run: " << why);
        continue;
      }
      codegen::Buffers in = codegen::make_buffers(k, k.runs[i], 7 + i);
      codegen::Comparison c = codegen::compare(k, run_on(*cpu, k, k.runs[i], in), run_on(gpu, k, k.runs[i], in));
      CHECK_MESSAGE(c.ok(), c.wrong << " of " << c.elements << " outputs differ from the CPU's; first: " << c.first_wrong);
    }
}

}  // namespace ugpu::test
