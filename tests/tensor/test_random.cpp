// Random tensor programs — elementwise ops, broadcasting, movement, reductions, several outputs at
// once — on every test device against the host model. Seeded (UGPU_TENSOR_SEED, default 1) and
// bounded (UGPU_TENSOR_PROGRAMS, default 40 per device); a failure names the seed, the program and
// its ops.
#include <random>

#include "tests/tensor/host.h"

namespace ugpu::test {
namespace {

struct Value {
  Tensor t;
  Host h;
  std::string text;
};

Host h_transpose_last(const Host& a) {
  Shape out = a.shape;
  std::swap(out[out.size() - 1], out[out.size() - 2]);
  return remap(a, out, [&](const std::vector<int64_t>& i) {
    std::vector<int64_t> s = i;
    std::swap(s[s.size() - 1], s[s.size() - 2]);
    return std::optional(s);
  });
}

class Program {
 public:
  Program(uint64_t seed, std::string dev) : rng_(seed), dev_(std::move(dev)) {}

  std::vector<Value> run(int steps) {
    for (int i = 0; i < 3; ++i) {
      Shape s{1 + pick(4), 1 + pick(5)};
      if (pick(2)) s.insert(s.begin(), 1 + pick(3));
      Host h = random_host(s, rng_(), -2, 2);
      values_.push_back({upload(h, dev_), h, "in" + std::to_string(i) + show(s)});
    }
    for (int i = 0; i < steps; ++i) step();
    // The last three values, realized together (several outputs, maybe sharing kernels).
    std::vector<Value> out(values_.end() - 3, values_.end());
    std::vector<Tensor> ts;
    for (const Value& v : out) ts.push_back(v.t);
    Tensor::realize(ts);
    return out;
  }

 private:
  std::mt19937_64 rng_;
  std::string dev_;
  std::vector<Value> values_;

  int64_t pick(int64_t n) { return static_cast<int64_t>(rng_() % static_cast<uint64_t>(n)); }
  const Value& any() { return values_[static_cast<size_t>(pick(static_cast<int64_t>(values_.size())))]; }

  void push(Tensor t, Host h, const std::string& text) {
    REQUIRE_MESSAGE(t.shape() == h.shape, text << ": shape " << show(t.shape()) << " vs host " << show(h.shape));
    if (h.numel() > 20000) return;  // keep programs small
    for (double x : h.v)
      if (!std::isfinite(x) || std::abs(x) > 1e6) return;  // stay where float32 compares well
    values_.push_back({std::move(t), std::move(h), text});
  }

  void step() {
    const Value& a = any();
    switch (pick(9)) {
      case 0: {  // unary
        static const char* names[] = {"neg", "relu", "sigmoid", "tanh", "exp", "abs"};
        int op = static_cast<int>(pick(6));
        Tensor t = op == 0 ? -a.t : op == 1 ? a.t.relu() : op == 2 ? a.t.sigmoid() : op == 3 ? a.t.tanh() : op == 4 ? (a.t * 0.5).exp() : a.t.abs();
        Host h = map1(a.h, [op](double x) {
          return op == 0   ? -x
                 : op == 1 ? std::max(x, 0.0)
                 : op == 2 ? 1 / (1 + std::exp(-x))
                 : op == 3 ? std::tanh(x)
                 : op == 4 ? std::exp(0.5 * x)
                           : std::abs(x);
        });
        return push(t, h, std::string(names[op]) + "(" + a.text + ")");
      }
      case 1:
      case 2: {  // binary, with broadcasting where the shapes allow
        const Value& b = any();
        Shape s = broadcast(a.h.shape, b.h.shape);
        bool ok = true;
        for (size_t i = 0; i < s.size(); ++i) {
          auto dim = [&](const Shape& x) { return i < s.size() - x.size() ? 1 : x[i - (s.size() - x.size())]; };
          ok = ok && (dim(a.h.shape) == s[i] || dim(a.h.shape) == 1) && (dim(b.h.shape) == s[i] || dim(b.h.shape) == 1);
        }
        if (!ok) return;
        int op = static_cast<int>(pick(4));
        Tensor t = op == 0 ? a.t + b.t : op == 1 ? a.t * b.t : op == 2 ? a.t.maximum(b.t) : a.t - b.t;
        Host h = map2(a.h, b.h, [op](double x, double y) { return op == 0 ? x + y : op == 1 ? x * y : op == 2 ? std::max(x, y) : x - y; });
        return push(t, h, "(" + a.text + " " + "+*M-"[op] + " " + b.text + ")");
      }
      case 3: {  // reduce one axis
        int64_t ax = pick(static_cast<int64_t>(a.h.shape.size()));
        bool keep = pick(2), mx = pick(2);
        Tensor t = mx ? a.t.max({ax}, keep) : a.t.sum({ax}, keep);
        Host h = reduce(a.h, {ax}, mx ? -INFINITY : 0, [mx](double x, double y) { return mx ? std::max(x, y) : x + y; }, keep);
        if (h.shape.empty()) return;
        return push(t, h, std::string(mx ? "max" : "sum") + std::to_string(ax) + (keep ? "k" : "") + "(" + a.text + ")");
      }
      case 4: {  // transpose the last two axes
        if (a.h.shape.size() < 2) return;
        return push(a.t.transpose(), h_transpose_last(a.h), "T(" + a.text + ")");
      }
      case 5: {  // pad and shrink back a different window
        int64_t ax = pick(static_cast<int64_t>(a.h.shape.size())), before = pick(3), after = pick(3);
        std::vector<std::pair<int64_t, int64_t>> p(a.h.shape.size(), {0, 0});
        p[ax] = {before, after};
        Shape out = a.h.shape;
        out[ax] += before + after;
        Host h = remap(a.h, out, [&](const std::vector<int64_t>& i) -> std::optional<std::vector<int64_t>> {
          std::vector<int64_t> s = i;
          s[ax] -= before;
          if (s[ax] < 0 || s[ax] >= a.h.shape[ax]) return std::nullopt;
          return s;
        });
        return push(a.t.pad(p), h, "pad" + std::to_string(ax) + "(" + a.text + ")");
      }
      case 6: {  // flip an axis, then take every other element of it backwards
        int64_t ax = pick(static_cast<int64_t>(a.h.shape.size())), n = a.h.shape[ax];
        Shape out = a.h.shape;
        out[ax] = (n + 1) / 2;
        Host h = remap(a.h, out, [&](const std::vector<int64_t>& i) {
          std::vector<int64_t> s = i;
          s[ax] = 2 * i[ax];  // flip of [::-2] of n-1..0 is 0, 2, 4 ...
          return std::optional(s);
        });
        return push(a.t.flip({ax}).slice(ax, std::nullopt, std::nullopt, -2), h, "flipstep" + std::to_string(ax) + "(" + a.text + ")");
      }
      case 7: {  // softmax over the last axis
        Host h = a.h;
        int64_t n = h.shape.back();
        for (int64_t r = 0; r < h.numel() / n; ++r) {
          double m = -INFINITY, s = 0;
          for (int64_t c = 0; c < n; ++c) m = std::max(m, h.v[r * n + c]);
          for (int64_t c = 0; c < n; ++c) s += std::exp(h.v[r * n + c] - m);
          for (int64_t c = 0; c < n; ++c) h.v[r * n + c] = std::exp(h.v[r * n + c] - m) / s;
        }
        return push(a.t.softmax(-1), h, "softmax(" + a.text + ")");
      }
      default: {  // flatten, then split the leading axis back in another way
        Host h = a.h;
        h.shape = {h.numel()};
        return push(a.t.flatten(), h, "flat(" + a.text + ")");
      }
    }
  }
};

TEST_CASE("tensor: random programs agree with the host model on every device") {
  uint64_t seed = suite_seed("UGPU_TENSOR_SEED", 1);
  int programs = std::getenv("UGPU_TENSOR_PROGRAMS") ? std::atoi(std::getenv("UGPU_TENSOR_PROGRAMS")) : int(sample_size(40, 10));
  MESSAGE("UGPU_TENSOR_SEED=" << seed << ", " << programs << " programs per device");
  for (const std::string& dev : test_devices()) {
    for (int p = 0; p < programs; ++p) {
      Program prog(seed * 1000003 + static_cast<uint64_t>(p), dev);
      std::vector<Value> out = prog.run(12);
      for (const Value& v : out) {
        INFO("device " << dev << ", UGPU_TENSOR_SEED=" << seed << " program " << p << ": " << v.text);
        check_close(v.t, v.h, 1e-4, 1e-5);
      }
    }
  }
}

}  // namespace
}  // namespace ugpu::test
