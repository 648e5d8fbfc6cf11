// cuda-baseline: the same figures as bench-launch and bench-copy, through CUDA's own driver API
// (libcuda), for comparison in the same run on the same GPU. Built with nvcc only where the CUDA
// toolkit is installed; runs only where the NVIDIA driver is. Not part of ugpu's product path.
//   cuda_submit_us          cuLaunchKernel of an empty kernel into a stream (no wait), per launch
//   cuda_roundtrip_us       launch and cuStreamSynchronize (median)
//   cuda_graph100_replay_us cuGraphLaunch of a captured 100-kernel graph: host time
//   cuda_graph100_roundtrip_us  the same, then synchronize
//   cuda_h2d_pinned_GBps / cuda_d2h_pinned_GBps   cuMemcpyHtoD/DtoH with cuMemAllocHost memory (best of 5)
//   cuda_h2d_GBps / cuda_d2h_GBps                 the same with malloc'd (pageable) memory
#include <cuda.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using Clock = std::chrono::steady_clock;

namespace {
void check(CUresult r, const char* what) {
  if (r == CUDA_SUCCESS) return;
  const char* name = nullptr;
  cuGetErrorName(r, &name);
  std::fprintf(stderr, "cuda-baseline: %s failed: %s\n", what, name ? name : "?");
  std::exit(1);
}
double us_since(Clock::time_point t0) { return std::chrono::duration<double, std::micro>(Clock::now() - t0).count(); }
const char* kPtx = R"(.version 7.8
.target sm_52
.address_size 64
.visible .entry empty(.param .u64 out) {
  .reg .b64 %rd<2>;
  .reg .b32 %r<2>;
  ld.param.u64 %rd1, [out];
  cvta.to.global.u64 %rd1, %rd1;
  mov.u32 %r1, 1;
  st.global.u32 [%rd1], %r1;
  ret;
}
)";
std::string size_name(size_t n) { return n >= (1u << 30) ? std::to_string(n >> 30) + "GiB" : std::to_string(n >> 20) + "MiB"; }
}  // namespace

int main(int argc, char** argv) {
  int n = 20000;
  size_t max_size = size_t{1} << 30;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--iterations" && i + 1 < argc) n = std::max(100, std::atoi(argv[++i]));
    else if (a == "--max-size" && i + 1 < argc) max_size = std::max<size_t>(1, std::stoull(argv[++i])) << 20;
    else {
      std::fprintf(stderr, "usage: cuda-baseline [--iterations N] [--max-size MiB]\n");
      return 2;
    }
  }
  check(cuInit(0), "cuInit");
  CUdevice dev;
  check(cuDeviceGet(&dev, 0), "cuDeviceGet");
  char name[256] = {};
  cuDeviceGetName(name, sizeof name, dev);
  int driver = 0;
  cuDriverGetVersion(&driver);
  CUcontext ctx;
  check(cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
  check(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
  CUmodule mod;
  check(cuModuleLoadData(&mod, kPtx), "cuModuleLoadData");
  CUfunction fn;
  check(cuModuleGetFunction(&fn, mod, "empty"), "cuModuleGetFunction");
  CUstream stream;
  check(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  CUdeviceptr out;
  check(cuMemAlloc(&out, 64), "cuMemAlloc");
  void* args[] = {&out};
  std::printf("# cuda-baseline on %s (CUDA driver API %d), %d iterations\n", name, driver, n);

  auto launch = [&] { check(cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, stream, args, nullptr), "cuLaunchKernel"); };
  for (int i = 0; i < 100; ++i) launch();
  check(cuStreamSynchronize(stream), "cuStreamSynchronize");
  double submit = 0;
  for (int done = 0; done < n; done += 1000) {
    auto t0 = Clock::now();
    for (int i = 0; i < 1000; ++i) launch();
    submit += us_since(t0);
    check(cuStreamSynchronize(stream), "cuStreamSynchronize");
  }
  std::printf("cuda_submit_us: %.3f us\n", submit / n);
  std::vector<double> rt;
  for (int i = 0; i < std::min(n, 5000); ++i) {
    auto t0 = Clock::now();
    launch();
    check(cuStreamSynchronize(stream), "cuStreamSynchronize");
    rt.push_back(us_since(t0));
  }
  std::nth_element(rt.begin(), rt.begin() + rt.size() / 2, rt.end());
  std::printf("cuda_roundtrip_us: %.3f us\n", rt[rt.size() / 2]);

  CUgraph graph;
  CUgraphExec exec;
  check(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL), "cuStreamBeginCapture");
  for (int i = 0; i < 100; ++i) launch();
  check(cuStreamEndCapture(stream, &graph), "cuStreamEndCapture");
  check(cuGraphInstantiate(&exec, graph, 0), "cuGraphInstantiate");
  double replay = 0, roundtrip = 0;
  int reps = std::max(100, n / 100);
  for (int i = 0; i < reps; ++i) {
    auto t0 = Clock::now();
    check(cuGraphLaunch(exec, stream), "cuGraphLaunch");
    replay += us_since(t0);
    check(cuStreamSynchronize(stream), "cuStreamSynchronize");
    roundtrip += us_since(t0);
  }
  std::printf("cuda_graph100_replay_us: %.3f us\ncuda_graph100_roundtrip_us: %.3f us\n", replay / reps, roundtrip / reps);

  for (size_t bytes = size_t{1} << 20; bytes <= max_size; bytes *= 4) {
    CUdeviceptr d;
    void* pinned;
    check(cuMemAlloc(&d, bytes), "cuMemAlloc");
    check(cuMemAllocHost(&pinned, bytes), "cuMemAllocHost");
    std::vector<uint8_t> pageable(bytes, 1);
    std::memset(pinned, 1, bytes);
    auto best = [&](auto f) {
      double b = 1e30;
      for (int r = 0; r < 5; ++r) {
        auto t0 = Clock::now();
        f();
        b = std::min(b, us_since(t0));
      }
      return bytes / b / 1e3;
    };
    std::string s = size_name(bytes);
    std::printf("cuda_h2d_pinned_GBps[%s]: %.2f GB/s\n", s.c_str(), best([&] { check(cuMemcpyHtoD(d, pinned, bytes), "cuMemcpyHtoD"); }));
    std::printf("cuda_d2h_pinned_GBps[%s]: %.2f GB/s\n", s.c_str(), best([&] { check(cuMemcpyDtoH(pinned, d, bytes), "cuMemcpyDtoH"); }));
    std::printf("cuda_h2d_GBps[%s]: %.2f GB/s\n", s.c_str(), best([&] { check(cuMemcpyHtoD(d, pageable.data(), bytes), "cuMemcpyHtoD"); }));
    std::printf("cuda_d2h_GBps[%s]: %.2f GB/s\n", s.c_str(), best([&] { check(cuMemcpyDtoH(pageable.data(), d, bytes), "cuMemcpyDtoH"); }));
    std::fflush(stdout);
    cuMemFreeHost(pinned);
    cuMemFree(d);
  }
  return 0;
}
