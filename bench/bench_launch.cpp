// bench-launch: the host cost of launching work through HCQ, on any device.
//   submit_us            record a queue (wait timeline, exec, signal timeline) and submit it, the device held
//                        back meanwhile so it does not compete for the host's cores
//   resubmit_us          back-to-back resubmits of a bound one-kernel queue with a patched argument; each
//                        first waits for the previous run of the same queue (its commands are patched in
//                        place), so this is the device's turnaround (ring back-pressure), not the host's cost
//   resubmit_host_us     the host's cost of one such resubmit when the previous run has finished (median)
//   graph100_replay_us   host time in Graph::replay() for a bound 100-kernel graph (previous run done)
//   graph100_roundtrip_us  replay and wait for it
//   roundtrip_us         an empty kernel, from submit to the host seeing its signal (median)
//   kernel_device_us     the empty kernel between two device timestamps (median): the GPU's time, or on
//                        an emulated GPU the emulator's execution, kept apart from the host costs above
// Goals (issue 4): submit under 1 us, a 100-kernel replay under 20 us of host time. Baseline in the
// same run, on the CPU device: direct_call_us, calling the kernel's code directly on this thread.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "codegen/compiler.h"
#include "codegen/llvm/host.h"
#include "drivers/devices.h"
#include "hcq/graph.h"
#include "ir/text.h"

using namespace ugpu;
using Clock = std::chrono::steady_clock;

namespace {
const char* kEmpty = R"(out = DEFINE_GLOBAL:int32* {0}
SINK(STORE(INDEX:int32*(out, 0), CONST:int32 {1}))
)";
double us_since(Clock::time_point t0) { return std::chrono::duration<double, std::micro>(Clock::now() - t0).count(); }
}  // namespace

int main(int argc, char** argv) {
  std::string device;
  int n = 20000;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--device" && i + 1 < argc) device = argv[++i];
    else if (a == "--iterations" && i + 1 < argc) n = std::max(100, std::atoi(argv[++i]));
    else {
      std::fprintf(stderr, "usage: bench-launch [--device D] [--iterations N]\n");
      return 2;
    }
  }
  try {
    drivers::DefaultDevice choice = device.empty() ? drivers::default_device() : drivers::DefaultDevice{device, "--device"};
    auto dev = drivers::open_device(choice.name);
    auto prog = drivers::load_kernel(*dev, ir::parse(kEmpty), "empty");
    hcq::Buffer out = dev->alloc(64);
    std::printf("# device %s (%s), %d iterations\n", dev->name().c_str(), dev->info().arch.c_str(), n);

    hcq::Val args[] = {out.va};
    // The device is held back by a gate while a batch is submitted, so the figure is the host's own
    // cost, not shared with a device (or an emulator) running on the same cores.
    double submit_total = 0;
    for (int done = 0; done < n;) {
      auto gate = dev->new_signal();
      auto g = dev->compute_queue();
      g->wait(*gate, 1);
      g->submit();
      int batch = std::min(1000, n - done);
      auto t = Clock::now();
      for (int i = 0; i < batch; ++i) {
        uint64_t v = dev->next_timeline();
        auto q = dev->compute_queue();
        q->wait(dev->timeline(), v - 1).exec(*prog, args).signal(dev->timeline(), v);
        q->submit();
      }
      submit_total += us_since(t);
      gate->set(1);
      dev->synchronize();
      done += batch;
    }
    double submit = submit_total / n;
    std::printf("submit_us: %.3f\n", submit);

    auto bound = dev->compute_queue();
    hcq::Val pargs[] = {hcq::Val::variable(0)};
    bound->exec(*prog, pargs).signal(dev->timeline(), hcq::Val::variable(1));
    bound->bind();
    auto t0 = Clock::now();
    for (int i = 0; i < n; ++i) {
      uint64_t vars[] = {out.va + (i % 2) * 4, dev->next_timeline()};
      bound->submit(vars);
    }
    double resubmit = us_since(t0) / n;
    dev->synchronize();
    std::printf("resubmit_us: %.3f\n", resubmit);
    std::vector<double> host;
    for (int i = 0; i < std::min(n, 5000); ++i) {
      uint64_t vars[] = {out.va + (i % 2) * 4, dev->next_timeline()};
      auto t = Clock::now();
      bound->submit(vars);
      host.push_back(us_since(t));
      dev->synchronize();
    }
    std::sort(host.begin(), host.end());
    std::printf("resubmit_host_us: %.3f\n", host[host.size() / 2]);

    hcq::Graph g;
    for (int k = 0; k < 100; ++k) g.exec(*dev, prog, {hcq::Val::variable(0)});
    uint64_t gv[] = {out.va};
    g.replay(gv);  // the first replay records and binds
    g.wait();
    int reps = std::max(50, n / 100);
    double in_replay = 0;
    t0 = Clock::now();
    for (int r = 0; r < reps; ++r) {
      auto t = Clock::now();
      g.replay(gv);
      in_replay += us_since(t);
      g.wait();
    }
    double graph_rt = us_since(t0) / reps;
    std::printf("graph100_replay_us: %.3f\ngraph100_roundtrip_us: %.3f\n", in_replay / reps, graph_rt);

    std::vector<double> rt;
    auto s = dev->new_signal();
    auto rq = dev->compute_queue();
    rq->exec(*prog, args).signal(*s, hcq::Val::variable(0));
    rq->bind();
    for (int i = 1; i <= std::min(n, 5000); ++i) {
      uint64_t vars[] = {static_cast<uint64_t>(i)};
      auto t = Clock::now();
      rq->submit(vars);
      dev->wait(*s, static_cast<uint64_t>(i), "round trip");
      rt.push_back(us_since(t));
    }
    std::sort(rt.begin(), rt.end());
    std::printf("roundtrip_us: %.3f\n", rt[rt.size() / 2]);

    // The device's own time for the empty kernel, from its timestamps around it: on an emulated
    // GPU this is the emulator's execution, which the host-side figures above do not include.
    std::vector<double> dt;
    auto t1 = dev->new_signal(), t2 = dev->new_signal(), done = dev->new_signal();
    for (int i = 1; i <= 200; ++i) {
      auto q = dev->compute_queue();
      q->timestamp(*t1).exec(*prog, args).timestamp(*t2).signal(*done, static_cast<uint64_t>(i));
      q->submit();
      dev->wait(*done, static_cast<uint64_t>(i), "device time");
      dt.push_back(static_cast<double>(t2->timestamp() - t1->timestamp()) * 1e6 / static_cast<double>(dev->clock_hz()));
    }
    std::sort(dt.begin(), dt.end());
    std::printf("kernel_device_us: %.3f\n", dt[dt.size() / 2]);

    if (dev->target() == "x86") {  // the baseline: no queue at all
      codegen::CompileOptions o;
      o.name = "empty";
      auto ck = codegen::compile(ir::parse(kEmpty), codegen::find_target("x86"), o);
      auto fn = codegen::HostFunction::load(ck->binary, ck->kernel.name);
      uint64_t a[] = {out.va};
      t0 = Clock::now();
      for (int i = 0; i < n * 10; ++i) fn(a);
      std::printf("direct_call_us: %.4f\n", us_since(t0) / (n * 10));
    }
    hcq::KernargStats ks = dev->kernarg_stats();
    std::printf("# kernarg ring: %llu allocations, %llu waits, %llu skips, %llu overflows\n", static_cast<unsigned long long>(ks.allocations),
                static_cast<unsigned long long>(ks.waits), static_cast<unsigned long long>(ks.skips), static_cast<unsigned long long>(ks.overflows));
  } catch (const Error& e) {
    std::fprintf(stderr, "bench-launch: %s\n", e.what());
    return 1;
  }
  return 0;
}
