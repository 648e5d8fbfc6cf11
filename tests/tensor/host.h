// A host reference for the tensor tests: dense row-major arrays of doubles, with every operation
// written the plain way (loops over indices), independent of the scheduler's index expressions.
#pragma once
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "codegen/target.h"
#include "common/split.h"
#include "drivers/devices.h"
#include "tensor/tensor.h"
#include "tests/sampling.h"

namespace ugpu::test {
using tensor::Shape;
using tensor::Tensor;

struct Host {
  Shape shape;
  std::vector<double> v;
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
};

inline std::vector<int64_t> strides(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t i = s.size(); i-- > 1;) st[i - 1] = st[i] * s[i];
  return st;
}
inline std::vector<int64_t> unravel(int64_t flat, const Shape& s) {
  std::vector<int64_t> idx(s.size());
  for (size_t i = s.size(); i-- > 0;) {
    idx[i] = s[i] ? flat % s[i] : 0;
    flat = s[i] ? flat / s[i] : 0;
  }
  return idx;
}
inline int64_t ravel(const std::vector<int64_t>& idx, const Shape& s) {
  int64_t f = 0;
  for (size_t i = 0; i < s.size(); ++i) f = f * s[i] + idx[i];
  return f;
}

// out[i] = in[map(i)], or `fill` where map gives nothing.
inline Host remap(const Host& in, Shape out, const std::function<std::optional<std::vector<int64_t>>(const std::vector<int64_t>&)>& map,
                  double fill = 0) {
  Host r{out, {}};
  r.v.resize(static_cast<size_t>(r.numel()));
  for (int64_t f = 0; f < r.numel(); ++f) {
    auto src = map(unravel(f, out));
    r.v[f] = src ? in.v[ravel(*src, in.shape)] : fill;
  }
  return r;
}

inline Host map1(const Host& a, const std::function<double(double)>& f) {
  Host r = a;
  for (double& x : r.v) x = f(x);
  return r;
}

inline Shape broadcast(const Shape& a, const Shape& b) {
  size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t x = i < n - a.size() ? 1 : a[i - (n - a.size())], y = i < n - b.size() ? 1 : b[i - (n - b.size())];
    out[i] = x == 1 ? y : x;
  }
  return out;
}
inline double at_broadcast(const Host& a, const std::vector<int64_t>& idx) {
  std::vector<int64_t> i(a.shape.size());
  size_t lead = idx.size() - a.shape.size();
  for (size_t d = 0; d < a.shape.size(); ++d) i[d] = a.shape[d] == 1 ? 0 : idx[lead + d];
  return a.v[ravel(i, a.shape)];
}
inline Host map2(const Host& a, const Host& b, const std::function<double(double, double)>& f) {
  Host r{broadcast(a.shape, b.shape), {}};
  for (int64_t k = 0; k < r.numel(); ++k) {
    auto idx = unravel(k, r.shape);
    r.v.push_back(f(at_broadcast(a, idx), at_broadcast(b, idx)));
  }
  return r;
}

// Reduces `axes` (sorted, non-negative) with f from init; keepdim keeps them as size 1.
inline Host reduce(const Host& a, const std::vector<int64_t>& axes, double init, const std::function<double(double, double)>& f,
                   bool keepdim = false) {
  Shape kept = a.shape;
  for (int64_t ax : axes) kept[ax] = 1;
  Host r{kept, std::vector<double>(static_cast<size_t>(Host{kept, {}}.numel()), init)};
  for (int64_t k = 0; k < a.numel(); ++k) {
    auto idx = unravel(k, a.shape);
    for (int64_t ax : axes) idx[ax] = 0;
    double& acc = r.v[ravel(idx, kept)];
    acc = f(acc, a.v[k]);
  }
  if (!keepdim) {
    Shape s;
    for (size_t d = 0; d < a.shape.size(); ++d)
      if (std::find(axes.begin(), axes.end(), static_cast<int64_t>(d)) == axes.end()) s.push_back(a.shape[d]);
    r.shape = s;
  }
  return r;
}

inline Host matmul(const Host& a, const Host& b) {  // [n, k] @ [k, m]
  int64_t n = a.shape[0], k = a.shape[1], m = b.shape[1];
  Host r{{n, m}, std::vector<double>(static_cast<size_t>(n * m))};
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < m; ++j) {
      double s = 0;
      for (int64_t x = 0; x < k; ++x) s += a.v[i * k + x] * b.v[x * m + j];
      r.v[i * m + j] = s;
    }
  return r;
}

// Deterministic values in [lo, hi).
inline Host random_host(Shape shape, uint64_t seed, double lo = -2, double hi = 2, bool integers = false) {
  Host h{std::move(shape), {}};
  uint64_t s = seed * 6364136223846793005ull + 1442695040888963407ull;
  for (int64_t i = 0; i < h.numel(); ++i) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    double u = static_cast<double>(s >> 11) / 9007199254740992.0;
    double x = lo + (hi - lo) * u;
    h.v.push_back(integers ? std::floor(x) : static_cast<double>(static_cast<float>(x)));
  }
  return h;
}

// Whether the device computes with float64 (an Adreno has none: its tensors go through doubles on the host).
inline bool has_f64(const std::string& dev) { return codegen::find_target(tensor::device(dev).target()).has_f64; }

inline Tensor upload(const Host& h, const std::string& dev, tensor::DType dt = tensor::dtypes::float32) {
  std::vector<double> d = h.v;
  if (!has_f64(dev)) return Tensor::from(d, h.shape, "cpu").cast(dt).contiguous().realize().to(dev);
  return Tensor::from(d, h.shape, dev).cast(dt).contiguous().realize();
}

inline std::vector<double> values(const Tensor& t) {
  Tensor d = (has_f64(t.device()) ? t : t.to("cpu")).cast(tensor::dtypes::float64);
  return d.to_vector<double>();
}

inline std::string show(const Shape& s) {
  std::ostringstream o;
  o << "[";
  for (size_t i = 0; i < s.size(); ++i) o << (i ? ", " : "") << s[i];
  return o.str() + "]";
}

// Every element within atol + rtol * |want|; NaN only where NaN is wanted.
inline void check_close(const Tensor& got, const Host& want, double rtol = 1e-5, double atol = 1e-6) {
  REQUIRE_MESSAGE(got.shape() == want.shape, "shape " << show(got.shape()) << ", want " << show(want.shape));
  std::vector<double> g = values(got);
  int bad = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    double w = want.v[i];
    bool ok = std::isnan(w) ? std::isnan(g[i]) : (g[i] == w || std::abs(g[i] - w) <= atol + rtol * std::abs(w));
    if (!ok && bad++ < 5) FAIL_CHECK("element " << i << ": got " << g[i] << ", want " << w);
  }
  CHECK(bad == 0);
}

// $UGPU_TEST_DEVICES, else cpu and the emulated GPUs, those of them this build has (a build without
// the Linux drivers has no emu:amd, emu:amd:pci or emu:nv).
inline std::vector<std::string> test_devices() {
  const char* env = std::getenv("UGPU_TEST_DEVICES");
  if (env && *env) return split_list(env);
  std::vector<std::string> out;
  for (const std::string& name : split_list("cpu,emu:amd,emu:amd:pci,emu:amd:usb,emu:nv,emu:qcom"))
    for (const drivers::DeviceEntry& e : drivers::known_devices())
      if (e.name == name) out.push_back(name);
  return out;
}

// The devices the model suites (tests/llm) run on: test_devices() without emu:qcom, unless
// $UGPU_TEST_DEVICES names it. Its ir3 executor runs fiber by fiber, and a model's prefill (64-bit
// index arithmetic on token ids included) keeps one submission busy past the 30 s wait timeout.
inline std::vector<std::string> model_test_devices() {
  std::vector<std::string> d = test_devices();
  if (const char* env = std::getenv("UGPU_TEST_DEVICES"); env && *env) return d;
  if (std::erase(d, std::string("emu:qcom"))) MESSAGE("emu:qcom: the model suites are not run there (its executor is too slow for a model)");
  return d;
}

}  // namespace ugpu::test
