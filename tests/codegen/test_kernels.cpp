// The kernel suite on x86: each kernel compiled through the whole pipeline, run on host buffers, and
// compared with a scalar C++ reference (exact for integers and for float kernels whose order of
// operations is fixed; ULP-bounded where a decomposed transcendental is involved).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <random>

#include "codegen/examples.h"
#include "ir/dtype.h"
#include "run.h"
#include "suite.h"

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

}  // namespace

TEST_CASE("kernel suite: elementwise add with a broadcast row") {
  auto a = random_floats(6400, -10, 10, 1), b = random_floats(100, -10, 10, 2);
  Buf A = Buf::of(a), B = Buf::of(b), O = Buf::zeros<float>(6400);
  run_x86(kernel(codegen::example_kernel("add").text), {&O, &A, &B});
  auto o = O.as<float>(6400);
  int bad = 0;
  for (int i = 0; i < 64; ++i)
    for (int j = 0; j < 100; ++j) bad += o[i * 100 + j] != a[i * 100 + j] + b[j];
  CHECK(bad == 0);
}

TEST_CASE("kernel suite: integer and narrow-float elementwise ops, every dtype") {
  // out = (a * b + a) max b, per dtype, with the dtype's own wrap-around and rounding.
  const std::string tmpl = suite::kElementwise;
  std::mt19937 rng(7);
  for (ir::DType t : {ir::dtypes::int8, ir::dtypes::int16, ir::dtypes::int32, ir::dtypes::int64, ir::dtypes::uint8, ir::dtypes::uint16,
                      ir::dtypes::uint32, ir::dtypes::uint64, ir::dtypes::half, ir::dtypes::bfloat16, ir::dtypes::float32, ir::dtypes::float64}) {
    CAPTURE(t.name());
    size_t sz = static_cast<size_t>(t.itemsize()), n = 257;
    std::vector<uint8_t> ab(n * sz), bb(n * sz);
    std::vector<double> av(n), bv(n);
    std::vector<int64_t> ai(n), bi(n);
    for (size_t i = 0; i < n; ++i) {
      for (auto [vec, bytes, ints] : {std::tuple{&av, &ab, &ai}, std::tuple{&bv, &bb, &bi}}) {
        double v;
        uint64_t bits;
        if (t.is_float()) {
          v = ir::round_float(std::uniform_real_distribution<double>(-300, 300)(rng), t);
          if (t.bitsize() == 16) bits = ir::float_to_bits(v, t);
          else if (t.bitsize() == 32) { float f = static_cast<float>(v); uint32_t u; std::memcpy(&u, &f, 4); bits = u; }
          else std::memcpy(&bits, &v, 8);
        } else {
          int64_t x = ir::wrap_int(static_cast<int64_t>(rng()) << 32 | rng(), t);
          v = static_cast<double>(x);
          (*ints)[i] = x;
          bits = static_cast<uint64_t>(x);
        }
        (*vec)[i] = v;
        std::memcpy(bytes->data() + i * sz, &bits, sz);
      }
    }
    Buf A{ab}, B{bb}, O{std::vector<uint8_t>(n * sz + 64)};
    A.bytes.resize(n * sz + 64), B.bytes.resize(n * sz + 64);
    run_x86(kernel(fill(tmpl, {{"T", t.name()}})), {&O, &A, &B});
    int bad = 0;
    for (size_t i = 0; i < n; ++i) {
      uint64_t got = 0, want = 0;
      std::memcpy(&got, O.bytes.data() + i * sz, sz);
      if (t.is_float()) {
        double x = av[i], y = bv[i];
        double r = ir::round_float(ir::round_float(x * y, t) + x, t);
        r = (r < y) ? y : r;
        if (t.bitsize() == 16) want = ir::float_to_bits(r, t);
        else if (t.bitsize() == 32) { float f = static_cast<float>(r); uint32_t u; std::memcpy(&u, &f, 4); want = u; }
        else std::memcpy(&want, &r, 8);
      } else {
        // Wrapping arithmetic in the dtype (done in uint64, then wrapped), compare in the dtype's order.
        auto ax = static_cast<uint64_t>(ai[i]), bx = static_cast<uint64_t>(bi[i]);
        int64_t r = ir::wrap_int(static_cast<int64_t>(ax * bx + ax), t), y = ir::wrap_int(static_cast<int64_t>(bx), t);
        bool less = t.is_unsigned() ? static_cast<uint64_t>(r) < static_cast<uint64_t>(y) : r < y;
        if (t.is_unsigned() && t.bitsize() < 64) less = (static_cast<uint64_t>(r) & ((uint64_t{1} << t.bitsize()) - 1)) < (static_cast<uint64_t>(y) & ((uint64_t{1} << t.bitsize()) - 1));
        want = static_cast<uint64_t>(less ? y : r);
      }
      if (sz < 8) want &= (uint64_t{1} << (8 * sz)) - 1;
      bad += got != want;
    }
    CHECK(bad == 0);
  }
}

TEST_CASE("kernel suite: sum and max over the inner and the outer axis, float and int") {
  const std::string tmpl = suite::kReduce;
  const int R = 37, C = 53;
  auto xf = random_floats(R * C, -100, 100, 3);
  std::vector<int32_t> xi(R * C);
  for (int i = 0; i < R * C; ++i) xi[i] = static_cast<int32_t>(xf[i] * 1000);
  for (bool inner : {true, false})
    for (std::string op : {"ADD", "MAX"})
      for (bool is_float : {true, false}) {
        CAPTURE(inner);
        CAPTURE(op);
        CAPTURE(is_float);
        int keep = inner ? R : C, red = inner ? C : R;
        std::string idx = inner ? "o*53 + r" : "r*53 + o";
        auto k = kernel(fill(tmpl, {{"T", is_float ? "float" : "int32"}, {"KEEP", std::to_string(keep)}, {"RED", std::to_string(red)},
                                    {"IDX", idx}, {"OP", op}}));
        Buf X = is_float ? Buf::of(xf) : Buf::of(xi), O = Buf::zeros<double>(keep);
        run_x86(k, {&O, &X});
        int bad = 0;
        for (int o = 0; o < keep; ++o) {
          float accf = op == "ADD" ? 0.0f : -INFINITY;
          int32_t acci = op == "ADD" ? 0 : INT32_MIN;
          for (int r = 0; r < red; ++r) {
            int at = inner ? o * C + r : r * C + o;
            if (op == "ADD") accf += xf[at], acci += xi[at];
            else accf = std::max(accf, xf[at]), acci = std::max(acci, xi[at]);
          }
          bad += is_float ? O.as<float>(keep)[o] != accf : O.as<int32_t>(keep)[o] != acci;
        }
        CHECK(bad == 0);
      }
}

TEST_CASE("kernel suite: matmul with shapes that are not multiples of a tile") {
  auto a = random_floats(33 * 70, -1, 1, 4), b = random_floats(70 * 45, -1, 1, 5);
  Buf A = Buf::of(a), B = Buf::of(b), C = Buf::zeros<float>(33 * 45);
  run_x86(kernel(codegen::example_kernel("matmul").text), {&C, &A, &B});
  auto c = C.as<float>(33 * 45);
  int bad = 0;
  for (int i = 0; i < 33; ++i)
    for (int j = 0; j < 45; ++j) {
      float acc = 0;
      for (int k = 0; k < 70; ++k) acc += a[i * 70 + k] * b[k * 45 + j];
      bad += c[i * 45 + j] != acc;
    }
  CHECK(bad == 0);
}

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
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<uint16_t>(ir::float_to_bits(af[i], ir::dtypes::half)), af[i] = static_cast<float>(ir::float_from_bits(a[i], ir::dtypes::half));
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<uint16_t>(ir::float_to_bits(bf[i], ir::dtypes::half)), bf[i] = static_cast<float>(ir::float_from_bits(b[i], ir::dtypes::half));
  Buf A = Buf::of(a), B = Buf::of(b), C = Buf::zeros<uint16_t>(63);
  run_x86(kernel(text), {&C, &A, &B});
  int bad = 0;
  for (int i = 0; i < 9; ++i)
    for (int j = 0; j < 7; ++j) {
      float acc = 0;  // each product rounded to half, the sum kept in float
      for (int k = 0; k < 300; ++k) acc += static_cast<float>(ir::round_float(static_cast<double>(af[i * 300 + k]) * bf[k * 7 + j], ir::dtypes::half));
      bad += C.as<uint16_t>(63)[i * 7 + j] != ir::float_to_bits(acc, ir::dtypes::half);
    }
  CHECK(bad == 0);
}

TEST_CASE("kernel suite: softmax") {
  auto x = random_floats(16 * 200, -20, 20, 8);
  Buf X = Buf::of(x), O = Buf::zeros<float>(16 * 200);
  run_x86(kernel(codegen::example_kernel("softmax").text), {&O, &X});
  auto o = O.as<float>(16 * 200);
  double worst = 0;
  for (int r = 0; r < 16; ++r) {
    double m = -INFINITY, s = 0;
    for (int c = 0; c < 200; ++c) m = std::max<double>(m, x[r * 200 + c]);
    for (int c = 0; c < 200; ++c) s += std::exp(x[r * 200 + c] - m);
    double rowsum = 0;
    for (int c = 0; c < 200; ++c) {
      double want = std::exp(x[r * 200 + c] - m) / s;
      worst = std::max(worst, std::abs(o[r * 200 + c] - want) / want);
      rowsum += o[r * 200 + c];
    }
    CHECK(rowsum == doctest::Approx(1.0).epsilon(1e-5));
  }
  MESSAGE("softmax worst relative error vs float64: " << worst);
  CHECK(worst < 2e-5);  // float32 sums of 200 terms
}

TEST_CASE("kernel suite: conv2d with zero padding through masked loads") {
  auto img = random_floats(2 * 10 * 12, -1, 1, 9), w = random_floats(4 * 2 * 9, -1, 1, 10);
  Buf I = Buf::of(img), W = Buf::of(w), O = Buf::zeros<float>(4 * 120);
  run_x86(kernel(codegen::example_kernel("conv2d").text), {&O, &I, &W});
  auto o = O.as<float>(4 * 120);
  int bad = 0;
  for (int co = 0; co < 4; ++co)
    for (int y = 0; y < 10; ++y)
      for (int x = 0; x < 12; ++x) {
        float acc = 0;
        for (int ci = 0; ci < 2; ++ci)
          for (int ky = 0; ky < 3; ++ky)
            for (int kx = 0; kx < 3; ++kx) {
              int iy = y + ky - 1, ix = x + kx - 1;
              float p = (iy >= 0 && iy < 10 && ix >= 0 && ix < 12) ? img[ci * 120 + iy * 12 + ix] : 0.0f;
              acc += p * w[co * 18 + ci * 9 + ky * 3 + kx];
            }
        bad += o[co * 120 + y * 12 + x] != acc;
      }
  CHECK(bad == 0);
}


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

TEST_CASE("kernel suite: gather with out-of-range ids reads nothing and gives 0") {
  std::vector<uint16_t> table(1000 * 24);
  for (size_t i = 0; i < table.size(); ++i) table[i] = static_cast<uint16_t>(ir::float_to_bits(static_cast<double>(i % 977) / 8, ir::dtypes::half));
  std::vector<int32_t> ids(40);
  for (int t = 0; t < 40; ++t) ids[t] = (t * 97) % 1000;
  ids[3] = -1, ids[7] = 1000, ids[11] = INT32_MIN, ids[13] = 999;
  Buf T = Buf::of(table), I = Buf::of(ids), O = Buf::zeros<uint16_t>(40 * 24);
  run_x86(kernel(codegen::example_kernel("gather").text), {&O, &T, &I});
  auto o = O.as<uint16_t>(40 * 24);
  int bad = 0;
  for (int t = 0; t < 40; ++t)
    for (int d = 0; d < 24; ++d) {
      bool ok = ids[t] >= 0 && ids[t] < 1000;
      bad += o[t * 24 + d] != (ok ? table[ids[t] * 24 + d] : 0);
    }
  CHECK(bad == 0);
}

TEST_CASE("kernel suite: floor division and modulo of negative numbers, and a kernel variable") {
  // out[i] = (i - 50) // d  +  1000 * ((i - 50) % d) for constant divisors and a runtime one.
  for (std::string d : {"7", "8", "1", "-3", "n"}) {
    CAPTURE(d);
    auto k = kernel(fill(suite::kFloorDiv, {{"D", d}}));
    Buf O = Buf::zeros<int32_t>(100);
    run_x86(k, {&O}, {13});
    int64_t dv = d == "n" ? 13 : std::stoll(d);
    int bad = 0;
    for (int i = 0; i < 100; ++i) {
      int64_t v = i - 50, q = v / dv, r = v % dv;
      if (r != 0 && ((r < 0) != (dv < 0))) q -= 1, r += dv;
      bad += O.as<int32_t>(100)[i] != q + 1000 * r;
    }
    CHECK(bad == 0);
  }
}

TEST_CASE("kernel suite: a variable loop bound and bool logic") {
  // out[i] = number of j < n with (j % 3 == 0) != (i % 2 == 0)
  auto k = kernel(suite::kVariableLoop);
  for (int64_t n : {0, 1, 17, 1000}) {
    Buf O = Buf::zeros<int32_t>(10);
    run_x86(k, {&O}, {n});
    for (int i = 0; i < 10; ++i) {
      int want = 0;
      for (int j = 0; j < n; ++j) want += (j % 3 == 0) != (i % 2 == 0);
      CHECK(O.as<int32_t>(10)[i] == want);
    }
  }
}
