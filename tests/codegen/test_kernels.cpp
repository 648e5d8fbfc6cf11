// The kernel suite on x86: every built-in kernel (codegen/builtin_kernels.cpp) compiled through the
// whole pipeline, run on host buffers in each of its runs, and compared with its host reference
// (bit-exact, except softmax within its tolerance); plus kernels that exist for one check here.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>

#include "codegen/builtin_kernels.h"
#include "ir/dtype.h"
#include "run.h"

using namespace ugpu;
using namespace ugpu::test;
using ugpu::codegen::fill;

namespace {

std::vector<float> random_floats(size_t n, float lo, float hi, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// The built-in kernels with a case of their own below; "the other built-in kernels" checks the rest.
const std::vector<std::string> kOwnCase = {"add",    "elementwise", "reduce",    "matmul",   "softmax",
                                           "conv2d", "gather",      "group_sum", "floordiv", "variable_loop"};

}  // namespace

TEST_CASE("kernel suite: elementwise add with a broadcast row") { check_on_x86("add"); }

TEST_CASE("kernel suite: integer and narrow-float elementwise ops, every dtype") {
  // out = (a * b + a) max b, per dtype, with the dtype's own wrap-around and rounding, NaN and inf included.
  check_on_x86("elementwise");
}

TEST_CASE("kernel suite: sum and max over the inner and the outer axis, float and int") { check_on_x86("reduce"); }

TEST_CASE("kernel suite: matmul with shapes that are not multiples of a tile") { check_on_x86("matmul"); }

TEST_CASE("kernel suite: matmul with half inputs accumulates in float") {
  const std::string text = R"(c = DEFINE_GLOBAL:half* {0}
a = DEFINE_GLOBAL:half* {1}
b = DEFINE_GLOBAL:half* {2}
i = RANGE(9) {0, GLOBAL}
j = RANGE(7) {1, GLOBAL}
k = RANGE(300) {2, REDUCE}
acc = REDUCE:half(LOAD:half(INDEX:half*(a, i*300 + k)) * LOAD:half(INDEX:half*(b, k*7 + j)), k) {ADD}
SINK(END(STORE(INDEX:half*(c, i*7 + j), acc), i, j))
)";
  auto af = random_floats(9 * 300, -1, 1, 6), bf = random_floats(300 * 7, -1, 1, 7);
  std::vector<uint16_t> a(af.size()), b(bf.size());
  for (size_t i = 0; i < a.size(); ++i)
    a[i] = static_cast<uint16_t>(ir::float_to_bits(af[i], ir::dtypes::half)), af[i] = static_cast<float>(ir::float_from_bits(a[i], ir::dtypes::half));
  for (size_t i = 0; i < b.size(); ++i)
    b[i] = static_cast<uint16_t>(ir::float_to_bits(bf[i], ir::dtypes::half)), bf[i] = static_cast<float>(ir::float_from_bits(b[i], ir::dtypes::half));
  Buf A = Buf::of(a), B = Buf::of(b), C = Buf::zeros<uint16_t>(63);
  run_x86(kernel(text), {&C, &A, &B});
  int bad = 0;
  for (int i = 0; i < 9; ++i)
    for (int j = 0; j < 7; ++j) {
      float acc = 0;  // each product rounded to half, the sum kept in float
      for (int k = 0; k < 300; ++k)
        acc += static_cast<float>(ir::round_float(static_cast<double>(af[i * 300 + k]) * bf[k * 7 + j], ir::dtypes::half));
      bad += C.as<uint16_t>(63)[i * 7 + j] != ir::float_to_bits(acc, ir::dtypes::half);
    }
  CHECK(bad == 0);
}

TEST_CASE("kernel suite: softmax") {
  MESSAGE("softmax worst relative error vs float64: " << check_on_x86("softmax"));  // float32 sums of 200 terms
}

TEST_CASE("kernel suite: conv2d with zero padding through masked loads") { check_on_x86("conv2d"); }

TEST_CASE("kernel suite: a masked load never touches the masked-off address") {
  // out[i] = x[i - 3] for 3 <= i < n + 3, else -1 (a pad of 3 on both sides); x sits between guard pages.
  const int n = 1000;
  auto k = kernel(R"(out = DEFINE_GLOBAL:float* {0}
x = DEFINE_GLOBAL:float* {1}
i = RANGE(1006) {0, GLOBAL}
v = LOAD:float(INDEX:float*(x, WHERE((i > 2) & (i < 1003), i - 3, INVALID)), -1.0)
SINK(END(STORE(INDEX:float*(out, i), v), i))
)");
  Guarded g(n);
  for (int i = 0; i < n; ++i) g.data[i] = static_cast<float>(i) * 0.25f;
  Buf O = Buf::zeros<float>(n + 6);
  std::vector<uint64_t> args{reinterpret_cast<uint64_t>(O.bytes.data()), reinterpret_cast<uint64_t>(g.data)};
  auto ck = codegen::compile(k, x86());
  codegen::HostFunction::load(ck->binary, ck->kernel.name)(args.data());
  auto o = O.as<float>(n + 6);
  int bad = 0;
  for (int i = 0; i < n + 6; ++i) bad += o[i] != ((i >= 3 && i < n + 3) ? (i - 3) * 0.25f : -1.0f);
  CHECK(bad == 0);
}

TEST_CASE("kernel suite: half to integer casts: NaN gives 0, out of range saturates, as ir::float_to_int defines") {
  // LLVM 22 lowered these, on CPUs with AVX512-FP16, to vcvttsh2si with compares that sent a NaN to
  // the lower bound (-32768 for int16); the renderer converts half through float on x86 instead.
  // Found by the differential test (seed 212422850, kernels 694 and 1108).
  const std::vector<double> values = {NAN, -NAN, INFINITY, -INFINITY, 65504, -65504, 300.75, -129.5, 1.5, -2.5, 0, 40000};
  std::vector<uint16_t> bits;
  for (double v : values) bits.push_back(static_cast<uint16_t>(ir::float_to_bits(v, ir::dtypes::half)));
  const size_t n = values.size();
  for (ir::DType to :
       {ir::dtypes::int8, ir::dtypes::uint8, ir::dtypes::int16, ir::dtypes::uint16, ir::dtypes::int32, ir::dtypes::uint32, ir::dtypes::int64}) {
    CAPTURE(to.name());
    for (bool vector : {false, true}) {  // scalar conversions, and four lanes at a time
      CAPTURE(vector);
      std::string t = to.name(), idx = vector ? "i * 4 + u" : "i";
      auto k = kernel("out = DEFINE_GLOBAL:" + t + "* {0}\nx = DEFINE_GLOBAL:half* {1}\n" +
                      (vector ? "i = RANGE(" + std::to_string(n / 4) + ") {0, GLOBAL}\nu = RANGE(4) {1, UPCAST}\n"
                              : "i = RANGE(" + std::to_string(n) + ") {0, GLOBAL}\n") +
                      "SINK(END(STORE(INDEX:" + t + "*(out, " + idx + "), CAST:" + t + "(LOAD:half(INDEX:half*(x, " + idx + ")))), i" +
                      (vector ? ", u" : "") + "))\n");
      Buf O = Buf::zeros<int64_t>(n), X = Buf::of(bits);
      run_x86(k, {&O, &X});
      for (size_t e = 0; e < n; ++e) {
        CAPTURE(values[e]);
        int64_t got = 0;
        std::memcpy(&got, O.bytes.data() + e * static_cast<size_t>(to.itemsize()), static_cast<size_t>(to.itemsize()));
        int64_t want = ir::wrap_int(ir::float_to_int(values[e], to), to), mask = to.bitsize() == 64 ? -1 : (int64_t{1} << to.bitsize()) - 1;
        CHECK((got & mask) == (want & mask));
      }
    }
  }
}

TEST_CASE("kernel suite: gather with out-of-range ids reads nothing and gives 0") { check_on_x86("gather"); }

TEST_CASE("kernel suite: floor division and modulo of negative numbers, and a kernel variable") {
  // out[i] = (i - 50) // d  +  1000 * ((i - 50) % d) for constant divisors and a runtime one.
  check_on_x86("floordiv");
}

TEST_CASE("kernel suite: a variable loop bound and bool logic") { check_on_x86("variable_loop"); }

TEST_CASE("kernel suite: workgroup memory and a barrier on the host: each workgroup's work-items in turn (group_sum)") {
  check_on_x86("group_sum");
  // One loop over the work-items before the barrier (the stores to workgroup memory), one after.
  auto ck = codegen::compile(codegen::builtin_kernel("group_sum").parse(), x86());
  int local_loops = 0;
  for (const ir::UOp& u : ck->kernel.linear) local_loops += u.op() == ir::Op::RANGE && u.arg_as<ir::RangeArg>().type == ir::AxisType::LOCAL;
  CHECK(local_loops == 2);
}

TEST_CASE("kernel suite: two barriers on the host: three loops over the work-items, values as on a GPU") {
  // Each workgroup of 16 stages its row in a, then b[l] = 2 * a[15 - l], then reads b and a again.
  auto k = kernel(R"(out = DEFINE_GLOBAL:float* {0}
x = DEFINE_GLOBAL:float* {1}
a = DEFINE_LOCAL:float[local]* {(0, 16)}
b = DEFINE_LOCAL:float[local]* {(1, 16)}
g = RANGE(8) {0, GLOBAL}
l = RANGE(16) {1, LOCAL}
put = STORE(INDEX:float[local]*(a, l), LOAD:float(INDEX:float*(x, g*16 + l)))
bar1 = BARRIER(END(put, l))
flip = STORE(INDEX:float[local]*(b, l), LOAD:float(INDEX:float[local]*(AFTER(a, bar1), 15 - l)) * 2.0)
bar2 = BARRIER(END(flip, l))
v = LOAD:float(INDEX:float[local]*(AFTER(b, bar2), (l + 1) % 16)) + LOAD:float(INDEX:float[local]*(AFTER(a, bar2), l))
SINK(END(STORE(INDEX:float*(out, g*16 + l), v), g))
)");
  auto x = random_floats(128, -10, 10, 12);
  Buf X = Buf::of(x), O = Buf::zeros<float>(128);
  run_x86(k, {&O, &X});
  auto o = O.as<float>(128);
  int bad = 0;
  for (int g = 0; g < 8; ++g)
    for (int l = 0; l < 16; ++l) bad += o[g * 16 + l] != x[g * 16 + 15 - (l + 1) % 16] * 2.0f + x[g * 16 + l];
  CHECK(bad == 0);
}

TEST_CASE("kernel suite: the other built-in kernels match their host references on x86") {
  for (const codegen::BuiltinKernel* k : builtin_kernels_except(kOwnCase)) check_on_x86(*k);
}

TEST_CASE("the built-in kernel table: unique names, runs that size every buffer, references that write every output") {
  std::vector<std::string> names;
  for (const codegen::BuiltinKernel& k : codegen::builtin_kernels()) {
    CAPTURE(k.name);
    names.push_back(k.name);
    CHECK(!k.description.empty());
    REQUIRE(!k.runs.empty());
    REQUIRE(k.reference);
    for (const codegen::KernelRun& run : k.runs) {
      CAPTURE(run.label());
      codegen::Buffers bufs = codegen::make_buffers(k, run, 1);  // throws when the sizes do not match the slots
      // Whatever the outputs held before, the reference leaves the same values: it wrote every element.
      codegen::Buffers zeros = bufs, ones = bufs;
      for (codegen::Buffers* b : {&zeros, &ones})
        for (codegen::HostData& d : *b)
          if (d.written) std::fill(d.bytes.begin(), d.bytes.end(), b == &zeros ? uint8_t{0} : uint8_t{0xff});
      k.reference(run, zeros);
      k.reference(run, ones);
      for (size_t s = 0; s < bufs.size(); ++s) CHECK(zeros[s].bytes == ones[s].bytes);
    }
  }
  std::sort(names.begin(), names.end());
  CHECK(std::adjacent_find(names.begin(), names.end()) == names.end());
  CHECK_THROWS_WITH(codegen::builtin_kernel("nope"), doctest::Contains("the kernels are add, matmul"));
}
