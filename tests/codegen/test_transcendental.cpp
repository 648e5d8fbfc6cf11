// Every transcendental on every device (cpu, emu:amd, emu:nv), against the host libm in float64
// rounded to the dtype. The bounds are the table in docs/codegen.md, per device: what the
// decompositions and hardware instructions promise; the measured worst case is printed.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <random>

#include "codegen/builtin_kernels.h"
#include "ir/dtype.h"
#include "tests/hcq/device_suite.h"

using namespace ugpu;
using namespace ugpu::test;

namespace {

uint64_t bits_of(double v, ir::DType t) {
  if (t.bitsize() == 16) return ir::float_to_bits(v, t);
  if (t.bitsize() == 32) {
    float f = static_cast<float>(v);
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
  }
  uint64_t u;
  std::memcpy(&u, &v, 8);
  return u;
}
double value_of(uint64_t bits, ir::DType t) {
  if (t.bitsize() == 16) return ir::float_from_bits(static_cast<uint32_t>(bits), t);
  if (t.bitsize() == 32) {
    float f;
    uint32_t u = static_cast<uint32_t>(bits);
    std::memcpy(&f, &u, 4);
    return f;
  }
  double d;
  std::memcpy(&d, &bits, 8);
  return d;
}
// Distance in representable values; NaN vs NaN is 0, NaN vs a number is "infinite".
double ulps(double got, double want, ir::DType t) {
  if (std::isnan(got) || std::isnan(want)) return std::isnan(got) == std::isnan(want) ? 0 : 1e300;
  auto ordered = [&](double v) -> __int128 {
    uint64_t b = bits_of(v, t), sign = uint64_t{1} << (t.bitsize() - 1);
    return (b & sign) ? -static_cast<__int128>(b & (sign - 1)) : static_cast<__int128>(b);
  };
  return std::abs(static_cast<double>(ordered(got) - ordered(want)));
}

std::vector<double> inputs(ir::DType t, double lo, double hi, uint32_t seed) {
  // 6.95637e307 and -1.2e308: reciprocals that are denormal (AMDGPU's scaled float64 division).
  std::vector<double> v = {0.0, -0.0,  1.0,    -1.0,   0.5,    2.0,   3.0,         INFINITY, -INFINITY,
                           NAN, 1e-40, -1e-40, 1e-310, 1e-300, 1e300, 6.95637e307, -1.2e308};
  std::mt19937_64 rng(seed);
  for (int i = 0; i < 3000; ++i) {
    double u = std::uniform_real_distribution<double>(0, 1)(rng);
    v.push_back(lo + (hi - lo) * u);
    // log-uniform magnitudes too, so tiny and huge values are covered
    double mag = std::exp2(std::uniform_real_distribution<double>(-1074, 1023)(rng));
    v.push_back((rng() & 1) ? mag : -mag);
  }
  for (double& x : v) x = ir::round_float(x, t);
  return v;
}

struct Case {
  const char* op;
  std::function<double(double, double)> ref;
  bool binary;
  double lo, hi;
};

double run_case(const Case& c, ir::DType t, hcq::Device& dev) {
  std::vector<double> xs = inputs(t, c.lo, c.hi, 11), ys = inputs(t, -8, 8, 12);
  if (std::string(c.op) == "SIN") {
    // Arguments where the reduction is hardest: around the switch to Payne-Hanek (2^20), the double
    // closest to a multiple of pi/2 (6381956970095103 * 2^797, about 2^-61 away), the largest values.
    for (double x :
         {0x1p20, std::nextafter(0x1p20, 0.0), 0x1p20 + 1, 1e6 * M_PI_2, 0x1p27 * M_PI_2, 1e22, 0x1.fffffep127, std::ldexp(6381956970095103.0, 797),
          -std::ldexp(6381956970095103.0, 797), 0x1.fffffffffffffp1023, -0x1.fffffffffffffp1023, 65504.0, 355.0, 103993.0})
      xs.push_back(x);
  }
  size_t n = xs.size(), sz = static_cast<size_t>(t.itemsize());
  std::vector<uint8_t> X(n * sz), Y(n * sz);
  for (size_t i = 0; i < n; ++i) {
    xs[i] = ir::round_float(xs[i], t), ys[i] = ir::round_float(ys[i], t);
    uint64_t bx = bits_of(xs[i], t), by = bits_of(ys[i], t);
    std::memcpy(X.data() + i * sz, &bx, sz);
    std::memcpy(Y.data() + i * sz, &by, sz);
  }
  std::string expr = c.binary ? std::string(c.op) + ":{T}(x, y)" : std::string(c.op) + ":{T}(x)";
  std::string text = codegen::fill(R"(out = DEFINE_GLOBAL:{T}* {0}
a = DEFINE_GLOBAL:{T}* {1}
b = DEFINE_GLOBAL:{T}* {2}
i = RANGE({N}) {0, GLOBAL}
x = LOAD:{T}(INDEX:{T}*(a, i))
y = LOAD:{T}(INDEX:{T}*(b, i))
SINK(END(STORE(INDEX:{T}*(out, i), )" + expr +
                                       R"(), i))
)",
                                   {{"T", t.name()}, {"N", std::to_string(n)}});
  std::vector<uint8_t> O = test::run_on(dev, text, {std::vector<uint8_t>(n * sz), X, Y}, {})[0];
  double worst = 0;
  for (size_t i = 0; i < n; ++i) {
    uint64_t got = 0;
    std::memcpy(&got, O.data() + i * sz, sz);
    double want = ir::round_float(c.ref(xs[i], ys[i]), t);
    double u = ulps(value_of(got, t), want, t);
    if (u > worst) {
      worst = u;
      if (u > 1e6) MESSAGE(std::string(c.op) << "(" << xs[i] << ", " << ys[i] << ") = " << value_of(got, t) << ", want " << want);
    }
  }
  return worst;
}

}  // namespace

TEST_CASE("transcendentals on every device: exp2, log2, sin, sqrt, pow, reciprocal within their documented ULP bounds") {
  const Case cases[] = {
      {"EXP2", [](double x, double) { return std::exp2(x); }, false, -160, 160},
      {"LOG2", [](double x, double) { return std::log2(x); }, false, 0, 1000},
      {"SIN", [](double x, double) { return std::sin(x); }, false, -100, 100},
      {"SQRT", [](double x, double) { return std::sqrt(x); }, false, 0, 1e6},
      {"POW", [](double x, double y) { return std::pow(x, y); }, true, -10, 10},
      {"RECIPROCAL", [](double x, double) { return 1.0 / x; }, false, -10, 10},
  };
  struct Bound {
    const char* device;
    ir::DType t;
    double exp2, log2, sin, sqrt, pow, recip;
  };
  // float32 and narrower are computed in float64 and rounded once: at most 1 ULP (0.5 + polynomial
  // error), except where a GPU's own instruction is used (AMDGPU's v_exp_f32 and v_log_f32 for
  // float32, 1 ULP each). float64 carries the polynomial and rounding errors of the float64
  // arithmetic itself. docs/codegen.md has the same table.
  const Bound bounds[] = {
      {"cpu", ir::dtypes::float32, 1, 1, 1, 0, 1, 0},      {"cpu", ir::dtypes::half, 1, 1, 1, 0, 1, 0},
      {"cpu", ir::dtypes::bfloat16, 1, 1, 1, 0, 1, 0},     {"cpu", ir::dtypes::float64, 2, 4, 2, 0, 256, 0},
      {"emu:amd", ir::dtypes::float32, 1, 1, 1, 0, 1, 0},  {"emu:amd", ir::dtypes::half, 1, 1, 1, 0, 1, 0},
      {"emu:amd", ir::dtypes::bfloat16, 1, 1, 1, 0, 1, 0}, {"emu:amd", ir::dtypes::float64, 2, 4, 2, 0, 256, 0},
      {"emu:nv", ir::dtypes::float32, 1, 1, 1, 0, 1, 0},   {"emu:nv", ir::dtypes::half, 1, 1, 1, 0, 1, 0},
      {"emu:nv", ir::dtypes::bfloat16, 1, 1, 1, 0, 1, 0},  {"emu:nv", ir::dtypes::float64, 2, 4, 2, 0, 256, 0},
  };
  std::string device;
  std::unique_ptr<hcq::Device> dev;
  for (const Bound& b : bounds) {
    if (device != b.device) dev = drivers::open_device(device = b.device);
    const double limit[] = {b.exp2, b.log2, b.sin, b.sqrt, b.pow, b.recip};
    for (size_t i = 0; i < std::size(cases); ++i) {
      CAPTURE(b.device);
      CAPTURE(b.t.name());
      CAPTURE(cases[i].op);
      double worst = run_case(cases[i], b.t, *dev);
      MESSAGE(std::string(b.device) << " " << b.t.name() << " " << std::string(cases[i].op) << ": worst " << worst << " ULP (bound " << limit[i]
                                    << ")");
      CHECK(worst <= limit[i]);
    }
  }
}
