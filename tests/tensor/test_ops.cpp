// Every tensor operation against the host reference (tests/tensor/host.h), on every test device.
#include <numeric>

#include "tests/tensor/host.h"

namespace ugpu::test {
namespace {
namespace dt = tensor::dtypes;

double gelu_erf(double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }
double gelu_tanh(double x) { return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x))); }
double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }

TEST_CASE("tensor: unary float operations match the host in float32 and half") {
  struct Case {
    const char* name;
    std::function<Tensor(const Tensor&)> op;
    std::function<double(double)> ref;
    double lo, hi, atol;
  };
  const Case cases[] = {
      {"exp", [](const Tensor& t) { return t.exp(); }, [](double x) { return std::exp(x); }, -5, 5, 0},
      {"exp2", [](const Tensor& t) { return t.exp2(); }, [](double x) { return std::exp2(x); }, -5, 5, 0},
      {"log", [](const Tensor& t) { return t.log(); }, [](double x) { return std::log(x); }, 0.01, 10, 1e-6},
      {"log2", [](const Tensor& t) { return t.log2(); }, [](double x) { return std::log2(x); }, 0.01, 10, 1e-6},
      {"sin", [](const Tensor& t) { return t.sin(); }, [](double x) { return std::sin(x); }, -6, 6, 1e-6},
      {"cos", [](const Tensor& t) { return t.cos(); }, [](double x) { return std::cos(x); }, -6, 6, 1e-6},
      {"tan", [](const Tensor& t) { return t.tan(); }, [](double x) { return std::tan(x); }, -1.2, 1.2, 1e-6},
      {"sqrt", [](const Tensor& t) { return t.sqrt(); }, [](double x) { return std::sqrt(x); }, 0, 9, 0},
      {"rsqrt", [](const Tensor& t) { return t.rsqrt(); }, [](double x) { return 1 / std::sqrt(x); }, 0.1, 9, 0},
      {"reciprocal", [](const Tensor& t) { return t.reciprocal(); }, [](double x) { return 1 / x; }, 0.1, 9, 0},
      {"neg", [](const Tensor& t) { return -t; }, [](double x) { return -x; }, -3, 3, 0},
      {"abs", [](const Tensor& t) { return t.abs(); }, [](double x) { return std::abs(x); }, -3, 3, 0},
      {"sign", [](const Tensor& t) { return t.sign(); }, [](double x) { return double((x > 0) - (x < 0)); }, -3, 3, 0},
      {"trunc", [](const Tensor& t) { return t.trunc(); }, [](double x) { return std::trunc(x); }, -5, 5, 0},
      {"floor", [](const Tensor& t) { return t.floor(); }, [](double x) { return std::floor(x); }, -5, 5, 0},
      {"ceil", [](const Tensor& t) { return t.ceil(); }, [](double x) { return std::ceil(x); }, -5, 5, 0},
      {"relu", [](const Tensor& t) { return t.relu(); }, [](double x) { return std::max(x, 0.0); }, -3, 3, 0},
      {"sigmoid", [](const Tensor& t) { return t.sigmoid(); }, sigmoid, -8, 8, 1e-6},
      {"tanh", [](const Tensor& t) { return t.tanh(); }, [](double x) { return std::tanh(x); }, -5, 5, 1e-6},
      {"gelu", [](const Tensor& t) { return t.gelu(); }, gelu_erf, -4, 4, 1e-6},
      {"gelu_tanh", [](const Tensor& t) { return t.gelu(true); }, gelu_tanh, -4, 4, 1e-6},
      {"silu", [](const Tensor& t) { return t.silu(); }, [](double x) { return x * sigmoid(x); }, -6, 6, 1e-6},
      {"softplus", [](const Tensor& t) { return t.softplus(); }, [](double x) { return x > 20 ? x : std::log1p(std::exp(x)); }, -10, 30, 1e-6},
      {"erf", [](const Tensor& t) { return t.erf(); }, [](double x) { return std::erf(x); }, -3, 3, 3e-7},
      {"clip", [](const Tensor& t) { return t.clip(-0.5, 1); }, [](double x) { return std::min(std::max(x, -0.5), 1.0); }, -3, 3, 0},
      {"square", [](const Tensor& t) { return t.square(); }, [](double x) { return x * x; }, -3, 3, 0},
      {"pow", [](const Tensor& t) { return t.pow(2.5); }, [](double x) { return std::pow(x, 2.5); }, 0, 4, 1e-6},
  };
  for (const std::string& dev : test_devices()) {
    INFO("device " << dev);
    for (const Case& c : cases) {
      INFO("op " << std::string(c.name));
      Host h = random_host({17, 3}, 7, c.lo, c.hi);
      check_close(c.op(upload(h, dev)), map1(h, c.ref), 2e-6, c.atol);
      // half: inputs rounded to half first; result within half's precision.
      Tensor th = upload(h, dev, dt::half);
      Host hh{h.shape, values(th)};
      Tensor r = c.op(th);
      CHECK(r.dtype() == dt::half);
      check_close(r, map1(hh, c.ref), 2e-3, std::max(c.atol, 1e-4));
      // bfloat16 (8 bits of mantissa) and float64.
      Tensor tb = upload(h, dev, dt::bfloat16);
      Host hb{h.shape, values(tb)};
      check_close(c.op(tb), map1(hb, c.ref), 1.6e-2, std::max(c.atol, 1e-2));
      if (has_f64(dev)) check_close(c.op(upload(h, dev, dt::float64)), map1(h, c.ref), 1e-9, c.atol);  // none on an Adreno
    }
  }
}

TEST_CASE("tensor: binary operations broadcast and promote") {
  struct Case {
    const char* name;
    std::function<Tensor(const Tensor&, const Tensor&)> op;
    std::function<double(double, double)> ref;
  };
  const Case cases[] = {
      {"add", [](const Tensor& a, const Tensor& b) { return a + b; }, [](double a, double b) { return a + b; }},
      {"sub", [](const Tensor& a, const Tensor& b) { return a - b; }, [](double a, double b) { return a - b; }},
      {"mul", [](const Tensor& a, const Tensor& b) { return a * b; }, [](double a, double b) { return a * b; }},
      {"div", [](const Tensor& a, const Tensor& b) { return a / b; }, [](double a, double b) { return a / b; }},
      {"maximum", [](const Tensor& a, const Tensor& b) { return a.maximum(b); }, [](double a, double b) { return std::max(a, b); }},
      {"minimum", [](const Tensor& a, const Tensor& b) { return a.minimum(b); }, [](double a, double b) { return std::min(a, b); }},
      {"pow", [](const Tensor& a, const Tensor& b) { return a.abs().pow(b); }, [](double a, double b) { return std::pow(std::abs(a), b); }},
      {"lt", [](const Tensor& a, const Tensor& b) { return a < b; }, [](double a, double b) { return double(a < b); }},
      {"gt", [](const Tensor& a, const Tensor& b) { return a > b; }, [](double a, double b) { return double(a > b); }},
      {"le", [](const Tensor& a, const Tensor& b) { return a <= b; }, [](double a, double b) { return double(a <= b); }},
      {"ge", [](const Tensor& a, const Tensor& b) { return a >= b; }, [](double a, double b) { return double(a >= b); }},
      {"eq", [](const Tensor& a, const Tensor& b) { return a == b.trunc(); }, [](double a, double b) { return double(a == std::trunc(b)); }},
      {"ne", [](const Tensor& a, const Tensor& b) { return a != b.trunc(); }, [](double a, double b) { return double(a != std::trunc(b)); }},
      {"where", [](const Tensor& a, const Tensor& b) { return (a > b).where(a, b * 2.0); }, [](double a, double b) { return a > b ? a : b * 2; }},
  };
  const std::pair<Shape, Shape> shapes[] = {{{3, 1, 17}, {4, 1}}, {{129}, {1}}, {{1, 3}, {5, 1}}};
  for (const std::string& dev : test_devices()) {
    INFO("device " << dev);
    for (const Case& c : cases)
      for (const auto& [sa, sb] : shapes) {
        INFO("op " << std::string(c.name) << " " << show(sa) << " " << show(sb));
        Host a = random_host(sa, 11, -3, 3, true), b = random_host(sb, 12, 0.5, 3);
        check_close(c.op(upload(a, dev), upload(b, dev)), map2(a, b, c.ref), 2e-6, 1e-6);
      }
  }
}

TEST_CASE("tensor: integer and mixed-dtype arithmetic") {
  for (const std::string& dev : test_devices()) {
    INFO("device " << dev);
    Host a = random_host({3, 17}, 3, -50, 50, true), b = random_host({17}, 4, 1, 9, true);
    Tensor ta = upload(a, dev, dt::int32), tb = upload(b, dev, dt::int32);
    check_close(ta.floordiv(tb), map2(a, b, [](double x, double y) { return std::floor(x / y); }));
    check_close(ta.mod(-tb), map2(a, b, [](double x, double y) { return x - std::floor(x / -y) * -y; }));
    check_close(ta * tb + 7, map2(a, b, [](double x, double y) { return x * y + 7; }));
    CHECK((ta * tb + 7).dtype() == dt::int32);
    CHECK((ta / tb).dtype() == dt::float32);
    check_close(ta / tb, map2(a, b, [](double x, double y) { return x / y; }));
    check_close(ta.bitwise_and(tb), map2(a, b, [](double x, double y) { return double(int32_t(x) & int32_t(y)); }));
    check_close(ta.bitwise_xor(tb), map2(a, b, [](double x, double y) { return double(int32_t(x) ^ int32_t(y)); }));
    check_close(ta.lshift(3).rshift(1), map1(a, [](double x) { return double((int32_t(x) * 8) >> 1); }));
    check_close(ta.abs().minimum(tb), map2(a, b, [](double x, double y) { return std::min(std::abs(x), y); }));
    check_close(ta.div_trunc(tb), map2(a, b, [](double x, double y) { return std::trunc(x / y); }));
    check_close(ta.fmod(-tb), map2(a, b, [](double x, double y) { return std::fmod(x, -y); }));
    check_close(ta.fma(tb, ta), map2(a, b, [](double x, double y) { return x * y + x; }));
    Tensor fa = upload(a, dev), fb = upload(b, dev);
    check_close(fa.div_trunc(fb), map2(a, b, [](double x, double y) { return std::trunc(static_cast<float>(x) / static_cast<float>(y)); }));
    check_close(fa.fmod(fb), map2(a, b, [](double x, double y) { return std::fmod(x, y); }), 1e-5, 1e-5);
    check_close(fa.fma(fb, fa), map2(a, b, [](double x, double y) { return x * y + x; }), 1e-6, 1e-6);
    // Half sums accumulate in float (rounded once at the end); integer reductions in 32 bits.
    Host hs = random_host({3, 129}, 5, -1, 1);
    Tensor th = upload(hs, dev, dt::half);
    Host hsr{hs.shape, values(th)};
    check_close(th.sum({1}), reduce(hsr, {1}, 0, [](double x, double y) { return x + y; }), 2e-3, 2e-2);
    check_close(th.max({1}), reduce(hsr, {1}, -INFINITY, [](double x, double y) { return std::max(x, y); }));
    CHECK(upload(a, dev, dt::int8).sum({1}).dtype() == dt::int32);
    // Promotion: int8 + uint8 -> int16; int + float number -> float32; uint8 * int number stays uint8 (and wraps).
    Tensor i8 = upload(a, dev, dt::int8), u8 = upload(map1(a, [](double x) { return std::abs(x); }), dev, dt::uint8);
    CHECK((i8 + u8).dtype() == dt::int16);
    check_close(i8 + u8, map2(a, a, [](double x, double) { return x + std::abs(x); }));
    CHECK((ta * 0.5).dtype() == dt::float32);
    check_close(u8 * 6, map1(a, [](double x) { return double(uint8_t(int(std::abs(x) * 6))); }));
    // Every storable dtype through one fused add.
    for (tensor::DType d : {dt::bool_, dt::int8, dt::int16, dt::int32, dt::int64, dt::uint8, dt::uint16, dt::uint32, dt::uint64, dt::half,
                            dt::bfloat16, dt::float32, dt::float64}) {
      INFO("dtype " << d.name());
      if (d == dt::float64 && !has_f64(dev)) continue;  // none on an Adreno
      Host small = random_host({5, 3}, 9, 0, 3, true);
      Tensor t = upload(small, dev, d);
      if (d.is_bool()) {
        check_close(t.bitwise_or(t.logical_not()), map1(small, [](double) { return 1.0; }));
      } else {
        check_close(t + t, map1(small, [](double x) { return 2 * x; }));
      }
    }
  }
}

TEST_CASE("tensor: creation") {
  for (const std::string& dev : test_devices()) {
    INFO("device " << dev);
    check_close(Tensor::arange(-3, 14, 2, std::nullopt, dev), Host{{9}, {-3, -1, 1, 3, 5, 7, 9, 11, 13}});
    check_close(Tensor::arange(1.0, 0.0, -0.25, std::nullopt, dev), Host{{4}, {1, 0.75, 0.5, 0.25}});
    check_close(Tensor::linspace(0, 1, 5, dt::float32, dev), Host{{5}, {0, 0.25, 0.5, 0.75, 1}});
    check_close(Tensor::eye(3, dt::int32, dev), Host{{3, 3}, {1, 0, 0, 0, 1, 0, 0, 0, 1}});
    check_close(Tensor::full({2, 2}, 2.5, dt::float32, dev), Host{{2, 2}, {2.5, 2.5, 2.5, 2.5}});
    check_close(Tensor::zeros({3}, dt::int32, dev) + Tensor::ones({3}, dt::int32, dev), Host{{3}, {1, 1, 1}});
    CHECK(Tensor::empty({0, 4}, dt::float32, dev).to_vector<float>().empty());
  }
}

TEST_CASE("tensor: random numbers are the same on every device for a seed") {
  std::vector<float> first_rand, first_randn;
  std::vector<int32_t> first_randint;
  for (const std::string& dev : test_devices()) {
    INFO("device " << dev);
    std::vector<float> u = Tensor::rand({1000}, 42, dt::float32, dev).to_vector<float>();
    std::vector<float> n = Tensor::randn({1000}, 42, dt::float32, dev).to_vector<float>();
    std::vector<int32_t> i = Tensor::randint({1000}, -3, 5, 42, dt::int32, dev).to_vector<int32_t>();
    double mu = std::accumulate(u.begin(), u.end(), 0.0) / 1000, nm = std::accumulate(n.begin(), n.end(), 0.0) / 1000, nv = 0;
    for (float x : n) nv += (x - nm) * (x - nm) / 1000;
    CHECK(std::abs(mu - 0.5) < 0.05);
    CHECK(std::abs(nm) < 0.1);
    CHECK(std::abs(nv - 1) < 0.15);
    CHECK(*std::min_element(u.begin(), u.end()) >= 0);
    CHECK(*std::max_element(u.begin(), u.end()) < 1);
    CHECK(*std::min_element(i.begin(), i.end()) == -3);
    CHECK(*std::max_element(i.begin(), i.end()) == 4);
    CHECK(Tensor::rand({1000}, 43, dt::float32, dev).to_vector<float>() != u);
    if (first_rand.empty()) {
      first_rand = u, first_randn = n, first_randint = i;
      continue;
    }
    CHECK(u == first_rand);  // integer hashing: bit for bit
    CHECK(i == first_randint);
    // Box-Muller goes through log and cos, which may differ by an ULP between devices.
    for (size_t k = 0; k < n.size(); ++k) CHECK(std::abs(n[k] - first_randn[k]) <= 1e-5f * (1 + std::abs(first_randn[k])));
  }
}

}  // namespace
}  // namespace ugpu::test
