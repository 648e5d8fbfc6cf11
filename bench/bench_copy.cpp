// bench-copy: host <-> device bandwidth through HCQ, for 1 MiB to 1 GiB transfers.
//   h2d_pinned_GBps / d2h_pinned_GBps   one copy-queue copy between pinned host memory (Device::alloc_host)
//                                       and device memory, submit to signal: what the copy engine reaches
//   h2d_GBps / d2h_GBps                 Device::copy_in / copy_out from ordinary host memory (through the
//                                       staging buffers, CPU copies included)
// Each figure is the best of --repeat runs. Baseline: bench/cuda_baseline.cpp (cuMemcpyHtoD/DtoH with
// pinned and pageable memory) on the same GPU, where CUDA is installed.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "drivers/devices.h"

using namespace ugpu;
using Clock = std::chrono::steady_clock;

namespace {
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }
std::string size_name(size_t n) { return n >= (1u << 30) ? std::to_string(n >> 30) + "GiB" : std::to_string(n >> 20) + "MiB"; }
}  // namespace

int main(int argc, char** argv) {
  std::string device;
  size_t max_size = size_t{1} << 30;
  int repeat = 5;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--device" && i + 1 < argc) device = argv[++i];
    else if (a == "--max-size" && i + 1 < argc) max_size = std::max<size_t>(1, std::stoull(argv[++i])) << 20;
    else if (a == "--repeat" && i + 1 < argc) repeat = std::max(1, std::atoi(argv[++i]));
    else {
      std::fprintf(stderr, "usage: bench-copy [--device D] [--max-size MiB (default 1024)] [--repeat N (default 5)]\n");
      return 2;
    }
  }
  try {
    drivers::DefaultDevice choice = device.empty() ? drivers::default_device() : drivers::DefaultDevice{device, "--device"};
    auto dev = drivers::open_device(choice.name);
    std::printf("# device %s (%s, %s), best of %d\n", dev->name().c_str(), dev->info().arch.c_str(), dev->info().interface.c_str(), repeat);
    for (size_t n = size_t{1} << 20; n <= max_size; n *= 4) {
      hcq::Buffer d = dev->alloc(n), h = dev->alloc_host(n);
      std::memset(h.host, 0x5a, n);
      std::vector<uint8_t> pageable(n, 0xa5);
      auto copy = [&](bool to_device) {
        double best = 1e30;
        for (int r = 0; r < repeat; ++r) {
          uint64_t v = dev->next_timeline();
          auto q = dev->copy_queue();
          q->wait(dev->timeline(), v - 1);
          auto t0 = Clock::now();
          q->copy(to_device ? d.va : h.va, to_device ? h.va : d.va, n).signal(dev->timeline(), v);
          q->submit();
          dev->wait(dev->timeline(), v, "bench-copy");
          best = std::min(best, seconds_since(t0));
        }
        return n / best / 1e9;
      };
      auto staged = [&](bool to_device) {
        double best = 1e30;
        for (int r = 0; r < repeat; ++r) {
          auto t0 = Clock::now();
          if (to_device) {
            dev->copy_in(d, 0, pageable);
            dev->synchronize();
          } else {
            dev->copy_out(pageable, d, 0);
          }
          best = std::min(best, seconds_since(t0));
        }
        return n / best / 1e9;
      };
      std::string s = size_name(n);
      std::printf("h2d_pinned_GBps[%s]: %.2f GB/s\n", s.c_str(), copy(true));
      std::printf("d2h_pinned_GBps[%s]: %.2f GB/s\n", s.c_str(), copy(false));
      std::printf("h2d_GBps[%s]: %.2f GB/s\n", s.c_str(), staged(true));
      std::printf("d2h_GBps[%s]: %.2f GB/s\n", s.c_str(), staged(false));
      std::fflush(stdout);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench-copy: %s\n", e.what());
    return 1;
  }
  return 0;
}
