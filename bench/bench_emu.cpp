// bench-emu: how fast the emulators' shader executors run real kernels — the suite's matmul and its
// elementwise add, compiled by our codegen, each run repeatedly after a first (decoding) run.
//   <kernel>.wave_instr_per_s      RDNA3 (gfx1100): wave-instructions per second on one host thread
//   <kernel>.wave_instr_per_s_all  ... with every host thread running workgroups
//   wave_instr_per_s, wave_instr_per_s_all: both kernels together
//   ir3.<kernel>.wave_instr_per_s(_all), ir3.wave_instr_per_s(_all): the same for the Adreno ir3 executor
//     (a630, waves of 64 fibers, every hazard checked), through emu:qcom's queues: 16 launches per submit
// Reference points (issue 5): tinygrad's Python emulator runs about 0.3 M/s on a 2-vCPU machine; the
// goal is 30 M/s per core.
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "codegen/builtin_kernels.h"
#include "drivers/devices.h"
#include "ir/text.h"
#include "tests/emu/harness.h"

using namespace ugpu;
using Clock = std::chrono::steady_clock;

namespace {

struct Rate {
  double instructions = 0, seconds = 0;
};

Rate measure(const std::string& name, const std::vector<size_t>& bytes, unsigned threads, double min_seconds) {
  test::Gpu gpu;
  std::vector<std::vector<float>> bufs;
  for (size_t b : bytes) bufs.emplace_back(b / 4, 0.5f);
  std::vector<std::pair<void*, size_t>> mapped;
  for (auto& v : bufs) mapped.push_back({v.data(), v.size() * 4});
  ir::UOp k = ir::parse(codegen::builtin_kernel(name).source());
  test::Prepared p = test::prepare_gfx1100(gpu, k, mapped);
  emu::amd::RunOptions o;
  o.threads = threads;
  auto first = gpu.executor.run(p.dispatch, o);  // decodes and caches every instruction
  if (first.fault) {
    std::fprintf(stderr, "bench-emu: %s faulted: %s\n", name.c_str(), first.fault->message.c_str());
    std::exit(1);
  }
  Rate r;
  auto t0 = Clock::now();
  while (r.seconds < min_seconds) {
    r.instructions += static_cast<double>(gpu.executor.run(p.dispatch, o).wave_instructions);
    r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  }
  return r;
}

#if UGPU_LINUX_DRIVERS
Rate measure_ir3(const std::string& name, const std::vector<size_t>& bytes, unsigned threads, double min_seconds) {
  auto dev = drivers::open_emu_qcom({.strict_hazards = true, .threads = threads});
  auto prog = drivers::load_kernel(*dev, ir::parse(codegen::builtin_kernel(name).source()), name);
  std::vector<hcq::Buffer> bufs;
  std::vector<hcq::Val> args;
  for (size_t b : bytes) bufs.push_back(dev->alloc(b)), args.push_back(bufs.back().va);
  auto done = dev->new_signal(0);
  auto q = dev->compute_queue();
  for (int i = 0; i < 16; ++i) q->exec(*prog, args);
  q->signal(*done, hcq::Val::variable(0));
  q->bind();
  uint64_t v = 0;
  auto run = [&] {
    uint64_t vars[] = {++v};
    q->submit(vars);
    dev->wait(*done, v, "bench-emu ir3");
  };
  run();  // the first run decodes
  Rate r;
  uint64_t start = dev->executed_instructions().value_or(0);
  auto t0 = Clock::now();
  while (r.seconds < min_seconds) {
    run();
    r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  }
  r.instructions = static_cast<double>(dev->executed_instructions().value_or(0) - start);
  return r;
}
#endif

}  // namespace

int main(int argc, char** argv) {
  double min_seconds = 1.0;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--seconds" && i + 1 < argc) min_seconds = std::max(0.05, std::atof(argv[++i]));
    else {
      std::fprintf(stderr, "usage: bench-emu [--seconds S]   (time per measurement, default 1)\n");
      return 2;
    }
  }
  const unsigned all = std::max(1u, std::thread::hardware_concurrency());
  struct Kernel {
    const char* name;
    std::vector<size_t> bytes;
  } kernels[] = {{"matmul", {33 * 45 * 4, 33 * 70 * 4, 70 * 45 * 4}}, {"add", {6400 * 4, 6400 * 4, 100 * 4}}};
  std::printf("host_threads: %u\n", all);
  // Each kernel on one host thread and on all of them, then both together, as `<prefix><name>` figures.
  auto report = [&](const std::string& prefix, auto measure_one) {
    Rate one_total, all_total;
    for (const Kernel& k : kernels) {
      Rate one = measure_one(k.name, k.bytes, 1u), many = measure_one(k.name, k.bytes, all);
      std::printf("%s%s.wave_instr_per_s: %.0f\n%s%s.wave_instr_per_s_all: %.0f\n", prefix.c_str(), k.name, one.instructions / one.seconds,
                  prefix.c_str(), k.name, many.instructions / many.seconds);
      one_total.instructions += one.instructions, one_total.seconds += one.seconds;
      all_total.instructions += many.instructions, all_total.seconds += many.seconds;
    }
    std::printf("%swave_instr_per_s: %.0f\n%swave_instr_per_s_all: %.0f\n", prefix.c_str(), one_total.instructions / one_total.seconds,
                prefix.c_str(), all_total.instructions / all_total.seconds);
  };
  report("", [&](const char* name, const std::vector<size_t>& bytes, unsigned threads) { return measure(name, bytes, threads, min_seconds); });
#if UGPU_LINUX_DRIVERS
  report("ir3.",
         [&](const char* name, const std::vector<size_t>& bytes, unsigned threads) { return measure_ir3(name, bytes, threads, min_seconds); });
#endif
  return 0;
}
