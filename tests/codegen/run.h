// Test helpers: compile a kernel for x86 and run it on host buffers.
#pragma once
#include <doctest/doctest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "codegen/builtin_kernels.h"
#include "codegen/compiler.h"
#include "codegen/llvm/host.h"
#include "ir/dtype.h"
#include "ir/text.h"

namespace ugpu::test {

inline const codegen::Target& x86() { return codegen::find_target("x86"); }

// A host buffer of any element type.
struct Buf {
  std::vector<uint8_t> bytes;
  template <class T>
  static Buf of(const std::vector<T>& v) {
    Buf b;
    const auto* p = reinterpret_cast<const uint8_t*>(v.data());
    b.bytes.assign(p, p + v.size() * sizeof(T));
    b.bytes.resize(b.bytes.size() + 64);
    return b;
  }
  template <class T>
  static Buf zeros(size_t n) {
    return of(std::vector<T>(n));
  }
  template <class T>
  std::vector<T> as(size_t n) const {
    std::vector<T> v(n);
    std::memcpy(v.data(), bytes.data(), n * sizeof(T));
    return v;
  }
};

// Compiles for x86 and calls the kernel once: buffers by slot, then variable values.
inline std::shared_ptr<const codegen::CompiledKernel> run_x86(const ir::UOp& kernel, std::vector<Buf*> bufs, std::vector<int64_t> vars = {},
                                                              const std::string& name = "kernel") {
  codegen::CompileOptions o;
  o.name = name;
  auto ck = codegen::compile(kernel, x86(), o);
  codegen::HostFunction fn = codegen::HostFunction::load(ck->binary, ck->kernel.name);
  std::vector<uint64_t> args;
  for (Buf* b : bufs) {
    if (reinterpret_cast<uintptr_t>(b->bytes.data()) % codegen::kBufferAlignment) throw std::runtime_error("test buffer is not aligned");
    args.push_back(reinterpret_cast<uint64_t>(b->bytes.data()));
  }
  for (int64_t v : vars) args.push_back(static_cast<uint64_t>(v));
  fn(args.data());
  return ck;
}

// `n` floats with unmapped pages right before and after: touching outside them kills the process.
// The data ends at the upper guard page; with n a multiple of 4 it starts 16-byte aligned.
struct Guarded {
  size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE)), len;
  uint8_t* base;
  float* data;
  explicit Guarded(size_t n) {
    len = (n * sizeof(float) + page - 1) / page * page;
    base = static_cast<uint8_t*>(mmap(nullptr, len + 2 * page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    if (base == MAP_FAILED || mprotect(base + page, len, PROT_READ | PROT_WRITE) != 0) throw std::runtime_error("cannot map guarded test memory");
    data = reinterpret_cast<float*>(base + page + len - n * sizeof(float));
  }
  ~Guarded() { munmap(base, len + 2 * page); }
  Guarded(const Guarded&) = delete;
  Guarded& operator=(const Guarded&) = delete;
};

inline ir::UOp kernel(const std::string& text) { return ir::parse(text); }

// One run of a built-in kernel on x86, on the buffers make_buffers gave (outputs filled in place).
inline void run_x86(const codegen::BuiltinKernel& k, const codegen::KernelRun& run, codegen::Buffers& bufs) {
  std::vector<Buf> host;
  for (const codegen::HostData& b : bufs) host.push_back(Buf{b.bytes}), host.back().bytes.resize(b.bytes.size() + 64);
  std::vector<Buf*> ptrs;
  for (Buf& b : host) ptrs.push_back(&b);
  run_x86(k.parse(run), ptrs, run.var_values(), k.name);
  for (size_t i = 0; i < bufs.size(); ++i) std::memcpy(bufs[i].bytes.data(), host[i].bytes.data(), bufs[i].bytes.size());
}

// Every run of a built-in kernel through `exec(kernel, run, buffers)`, which runs it in place, checked
// against the host reference (`against_x86` false) or against the same run on x86, under the kernel's
// tolerance. Returns the largest relative difference seen.
template <class Exec>
double check_builtin(const codegen::BuiltinKernel& k, Exec exec, bool against_x86 = true) {
  double worst = 0;
  for (size_t i = 0; i < k.runs.size(); ++i) {
    const codegen::KernelRun& run = k.runs[i];
    CAPTURE(k.name);
    CAPTURE(run.label());
    codegen::Buffers got = codegen::make_buffers(k, run, 17 + i), want = got;
    if (against_x86) run_x86(k, run, want);
    else want = codegen::expected(k, run, want);
    exec(k, run, got);
    codegen::Comparison c = codegen::compare(k, want, got);
    CHECK_MESSAGE(c.ok(), c.wrong << " of " << c.elements << " outputs differ; first: " << c.first_wrong);
    worst = std::max(worst, c.worst);
  }
  return worst;
}
// A built-in kernel on x86 against its host reference.
inline double check_on_x86(const codegen::BuiltinKernel& k) {
  return check_builtin(k, [](const codegen::BuiltinKernel& kk, const codegen::KernelRun& r, codegen::Buffers& b) { run_x86(kk, r, b); }, false);
}
inline double check_on_x86(const std::string& name) { return check_on_x86(codegen::builtin_kernel(name)); }

// The built-in kernels without a case of their own in a suite: they are checked together, so a
// kernel added to the table is run everywhere without a new case.
inline std::vector<const codegen::BuiltinKernel*> builtin_kernels_except(const std::vector<std::string>& own_case) {
  std::vector<const codegen::BuiltinKernel*> out;
  for (const codegen::BuiltinKernel& k : codegen::builtin_kernels())
    if (std::find(own_case.begin(), own_case.end(), k.name) == own_case.end()) out.push_back(&k);
  return out;
}

// A case of the kernel suite for an executor: the kernel text, the bytes of each buffer slot, the
// variables, and the relative tolerance of float outputs (0: bit-exact).
struct SuiteCase {
  std::string name, text;
  std::vector<size_t> bytes;
  std::vector<int64_t> vars;
  double rel_tolerance = 0;
};

// n bytes of elements of type t: floats uniform in [-20, 20) (exactly representable in t), other
// types random bits; 64 bytes of zero slack after them.
inline std::vector<uint8_t> random_bytes(size_t n, ir::DType t, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> out(n + 64);
  size_t sz = static_cast<size_t>(t.itemsize());
  for (size_t i = 0; i + sz <= n; i += sz) {
    uint64_t bits;
    if (t.is_float()) {
      double v = std::uniform_real_distribution<double>(-20, 20)(rng);
      if (t.bitsize() == 16) bits = ir::float_to_bits(v, t);
      else if (t.bitsize() == 32) bits = std::bit_cast<uint32_t>(static_cast<float>(v));
      else bits = std::bit_cast<uint64_t>(v);
    } else {
      bits = static_cast<uint64_t>(rng()) << 32 | rng();
    }
    std::memcpy(out.data() + i, &bits, sz);
  }
  return out;
}

}  // namespace ugpu::test
