// Gradients (tensor/grad.h): every op's gradient against central finite differences in float64 (on
// the CPU device, independent of PyTorch) and against PyTorch's autograd for the same inputs — in
// float64 on every device that has it, in float32 on the CPU and on devices without float64; then
// the autograd API itself (accumulation, detach, NoGrad, seeds, errors).
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "tensor/grad.h"
#include "tensor/nn.h"
#include "tests/tensor/host.h"
#include "tests/train/common.h"
#include "tests/train/torch_ref.h"

namespace ugpu::test {
namespace {
namespace dt = tensor::dtypes;
using tensor::Axes;
using tensor::DType;
using tensor::gradient;
namespace nn = tensor::nn;

struct In {
  Shape shape;
  double lo = -2, hi = 2;
  bool index = false;     // an int32 index in [lo, hi), not differentiated
  bool constant = false;  // a float input not differentiated (a loss's target)
  bool differentiated() const { return !index && !constant; }
};
struct Case {
  std::string name;
  std::vector<In> in;
  std::function<Tensor(const std::vector<Tensor>&)> f;
  std::string torch;  // the same function over x[0], x[1], ... (tests/train/torch_ref.py)
  double f32_tol = 2e-4;
  double torch64_tol = 1e-9;  // float64 against PyTorch (erf and rotary tables are float32 approximations)
};

// The ops of the tensor layer that have gradients, with odd shapes and broadcasting.
std::vector<Case> cases() {
  using V = const std::vector<Tensor>&;
  return {
      {"add_broadcast", {{{3, 4}}, {{4}}}, [](V x) { return x[0] + x[1]; }, "x[0] + x[1]"},
      {"sub_broadcast", {{{2, 3, 1}}, {{3, 5}}}, [](V x) { return x[0] - x[1]; }, "x[0] - x[1]"},
      {"mul_broadcast", {{{3, 1}}, {{1, 5}}}, [](V x) { return x[0] * x[1]; }, "x[0] * x[1]"},
      {"div", {{{3, 5}}, {{5}, 0.5, 2}}, [](V x) { return x[0] / x[1]; }, "x[0] / x[1]"},
      {"neg_square", {{{7}}}, [](V x) { return (-x[0]).square(); }, "(-x[0]).square()"},
      {"exp", {{{4, 3}}}, [](V x) { return x[0].exp(); }, "x[0].exp()"},
      {"log", {{{4, 3}, 0.1, 3}}, [](V x) { return x[0].log(); }, "x[0].log()"},
      {"exp2_log2", {{{5}, 0.2, 3}}, [](V x) { return x[0].exp2() + x[0].log2(); }, "x[0].exp2() + x[0].log2()"},
      {"sin_cos", {{{6}}}, [](V x) { return x[0].sin() * x[0].cos(); }, "x[0].sin() * x[0].cos()"},
      {"tan", {{{6}, -1, 1}}, [](V x) { return x[0].tan(); }, "x[0].tan()"},
      {"sqrt_rsqrt", {{{2, 4}, 0.2, 3}}, [](V x) { return x[0].sqrt() + x[0].rsqrt(); }, "x[0].sqrt() + x[0].rsqrt()"},
      {"reciprocal", {{{5}, 0.5, 2}}, [](V x) { return x[0].reciprocal(); }, "x[0].reciprocal()"},
      {"abs", {{{9}}}, [](V x) { return x[0].abs(); }, "x[0].abs()"},
      {"relu", {{{9}}}, [](V x) { return x[0].relu(); }, "x[0].relu()"},
      {"sigmoid_tanh", {{{8}}}, [](V x) { return x[0].sigmoid() + x[0].tanh(); }, "x[0].sigmoid() + x[0].tanh()"},
      {"gelu", {{{8}}}, [](V x) { return x[0].gelu(); }, "F.gelu(x[0])", 1e-3, 1e-6},
      {"gelu_tanh", {{{8}}}, [](V x) { return x[0].gelu(true); }, "F.gelu(x[0], approximate='tanh')"},
      {"silu_softplus", {{{8}}}, [](V x) { return x[0].silu() + x[0].softplus(); }, "F.silu(x[0]) + F.softplus(x[0])"},
      {"pow", {{{2, 3}, 0.5, 2}, {{3}, -1.5, 1.5}}, [](V x) { return x[0].pow(x[1]); }, "x[0].pow(x[1])"},
      {"pow_scalar", {{{6}, 0.2, 2}}, [](V x) { return x[0].pow(2.5) + x[0].pow(3.0); }, "x[0].pow(2.5) + x[0].pow(3.0)"},
      {"maximum_minimum",
       {{{3, 4}}, {{4}}},
       [](V x) { return x[0].maximum(x[1]) + x[0].minimum(x[1]) * 2.0; },
       "torch.maximum(x[0], x[1]) + torch.minimum(x[0], x[1]) * 2"},
      {"clip", {{{10}}}, [](V x) { return x[0].clip(-0.5, 0.7); }, "x[0].clamp(-0.5, 0.7)"},
      {"where",
       {{{3, 4}}, {{4}}},
       [](V x) { return x[0].gt(scalar_like(x[0], 0)).where(x[0] * x[1], x[1].exp()); },
       "torch.where(x[0] > 0, x[0] * x[1], x[1].exp())"},
      {"fma", {{{2, 3}}, {{3}}, {{2, 1}}}, [](V x) { return x[0].fma(x[1], x[2]); }, "x[0] * x[1] + x[2]"},
      {"reshape_permute", {{{2, 3, 4}}}, [](V x) { return x[0].reshape({4, 6}).permute({1, 0}).exp(); }, "x[0].reshape(4, 6).permute(1, 0).exp()"},
      {"expand", {{{3, 1}}}, [](V x) { return x[0].expand({2, 3, 4}).sin(); }, "x[0].expand(2, 3, 4).sin()"},
      {"pad", {{{2, 3}}}, [](V x) { return x[0].pad({{1, 2}, {0, 1}}).exp(); }, "F.pad(x[0], (0, 1, 1, 2)).exp()"},
      {"pad_value", {{{2, 3}}}, [](V x) { return x[0].pad({{1, 0}, {2, 1}}, 1.5).square(); }, "F.pad(x[0], (2, 1, 1, 0), value=1.5).square()"},
      {"slice_step", {{{3, 8}}}, [](V x) { return x[0].slice(1, 1, 7, 2).square(); }, "x[0][:, 1:7:2].square()"},
      {"flip", {{{3, 4}}}, [](V x) { return x[0].flip({0, 1}) * x[0]; }, "x[0].flip([0, 1]) * x[0]"},
      {"cat_stack",
       {{{2, 3}}, {{2, 2}}},
       [](V x) {
         Tensor c = Tensor::cat(std::vector<Tensor>{x[0], x[1]}, 1);
         return Tensor::stack(std::vector<Tensor>{c, c.square()}, 0);
       },
       "torch.stack([torch.cat([x[0], x[1]], 1), torch.cat([x[0], x[1]], 1).square()], 0)"},
      {"split_repeat", {{{4, 3}}}, [](V x) { return x[0].split({1, 3}, 0)[1].repeat({2, 2}).exp(); }, "x[0].split([1, 3], 0)[1].repeat(2, 2).exp()"},
      {"sum_mean",
       {{{3, 4, 5}}},
       [](V x) { return x[0].sum({1}).square() + x[0].mean({0, 2}, true).sum(); },
       "x[0].sum(1).square() + x[0].mean((0, 2), keepdim=True).sum()"},
      {"max_min", {{{4, 5}}}, [](V x) { return x[0].max({1}) + x[0].min({0}, true).sum(); }, "x[0].amax(1) + x[0].amin(0, keepdim=True).sum()"},
      {"prod", {{{3, 4}, 0.5, 1.5}}, [](V x) { return x[0].prod({1}); }, "x[0].prod(1)"},
      {"var_std", {{{3, 5}}}, [](V x) { return x[0].var({1}) + x[0].std({0}, true).sum(); }, "x[0].var(1) + x[0].std(0, keepdim=True).sum()"},
      {"logsumexp", {{{3, 5}}}, [](V x) { return x[0].logsumexp(1); }, "x[0].logsumexp(1)"},
      {"softmax", {{{3, 5}}}, [](V x) { return x[0].softmax(-1); }, "x[0].softmax(-1)"},
      {"log_softmax", {{{2, 3, 4}}}, [](V x) { return x[0].log_softmax(1); }, "x[0].log_softmax(1)"},
      {"cumsum", {{{3, 5}}}, [](V x) { return x[0].cumsum(1).square(); }, "x[0].cumsum(1).square()"},
      {"gather", {{{4, 5}}, {{4, 3}, 0, 5, true}}, [](V x) { return x[0].gather(1, x[1]); }, "torch.gather(x[0], 1, x[1])"},
      {"embedding", {{{7, 4}}, {{2, 5}, 0, 7, true}}, [](V x) { return x[0].embedding(x[1]); }, "F.embedding(x[1], x[0])"},
      {"matmul", {{{3, 4}}, {{4, 5}}}, [](V x) { return x[0].matmul(x[1]); }, "x[0] @ x[1]"},
      {"matmul_batched", {{{2, 3, 4}}, {{4, 2}}}, [](V x) { return x[0].matmul(x[1]); }, "x[0] @ x[1]"},
      {"matmul_vector", {{{4}}, {{3, 4, 2}}}, [](V x) { return x[0].matmul(x[1]); }, "x[0] @ x[1]"},
      {"linear", {{{3, 4}}, {{5, 4}}, {{5}}}, [](V x) { return x[0].linear(x[1], x[2]); }, "F.linear(x[0], x[1], x[2])"},
      {"conv2d",
       {{{2, 2, 5, 4}}, {{3, 2, 3, 2}}, {{3}}},
       [](V x) { return x[0].conv2d(x[1], x[2], {2, 1}, {1, 0}, {1, 2}); },
       "F.conv2d(x[0], x[1], x[2], stride=(2, 1), padding=(1, 0), dilation=(1, 2))"},
      {"conv2d_groups",
       {{{1, 4, 4, 4}}, {{4, 2, 3, 3}}},
       [](V x) { return x[0].conv2d(x[1], {}, {1, 1}, {1, 1}, {1, 1}, 2); },
       "F.conv2d(x[0], x[1], padding=1, groups=2)"},
      {"conv_transpose2d",
       {{{1, 2, 3, 3}}, {{2, 3, 3, 3}}, {{3}}},
       [](V x) { return x[0].conv_transpose2d(x[1], x[2], {2, 2}, {1, 1}, {1, 1}); },
       "F.conv_transpose2d(x[0], x[1], x[2], stride=2, padding=1, output_padding=1)"},
      {"max_pool2d", {{{1, 2, 5, 6}}}, [](V x) { return x[0].max_pool2d({2, 3}, {2, 2}, {1, 1}); }, "F.max_pool2d(x[0], (2, 3), (2, 2), (1, 1))"},
      {"avg_pool2d",
       {{{1, 2, 5, 5}}},
       [](V x) { return x[0].avg_pool2d({3, 3}, {2, 2}, {1, 1}); },
       "F.avg_pool2d(x[0], (3, 3), (2, 2), (1, 1), count_include_pad=True)"},
      {"layer_norm", {{{3, 5}}, {{5}}, {{5}}}, [](V x) { return x[0].layer_norm(x[1], x[2]); }, "F.layer_norm(x[0], (5,), x[1], x[2], 1e-5)"},
      {"rms_norm", {{{3, 6}}, {{6}}}, [](V x) { return x[0].rms_norm(x[1]); }, "rms_norm(x[0], x[1], 1e-6)"},
      {"attention_causal",
       {{{1, 2, 3, 4}}, {{1, 2, 5, 4}}, {{1, 2, 5, 4}}},
       [](V x) { return x[0].scaled_dot_product_attention(x[1], x[2], {}, true); },
       "sdpa(x[0], x[1], x[2], causal=True)"},
      {"rotary", {{{1, 3, 6}}}, [](V x) { return x[0].rotary_embedding(2); }, "rope(x[0], 2, 10000.0)", 2e-4, 1e-6},
      {"triu", {{{4, 4}}}, [](V x) { return x[0].triu(1).exp(); }, "torch.triu(x[0], 1).exp()"},
      // The losses and layers of tensor/nn.h.
      {"cross_entropy", {{{5, 4}}, {{5}, 0, 4, true}}, [](V x) { return nn::cross_entropy(x[0], x[1]); }, "F.cross_entropy(x[0], x[1])"},
      {"cross_entropy_smoothing_ignore",
       {{{6, 3, 2}}, {{6, 2}, 0, 3, true}},
       [](V x) { return nn::cross_entropy(x[0], x[1], 0.2, 1); },
       "F.cross_entropy(x[0], x[1], label_smoothing=0.2, ignore_index=1)"},
      {"mse", {{{3, 4}}, {{3, 4}, -2, 2, false, true}}, [](V x) { return nn::mse_loss(x[0], x[1]); }, "F.mse_loss(x[0], x[1])"},
      {"binary_cross_entropy",
       {{{7}, 0.05, 0.95}, {{7}, 0, 1, false, true}},
       [](V x) { return nn::binary_cross_entropy(x[0], x[1]); },
       "F.binary_cross_entropy(x[0], x[1])"},
      {"binary_cross_entropy_with_logits",
       {{{7}}, {{7}, 0, 1, false, true}},
       [](V x) { return nn::binary_cross_entropy_with_logits(x[0], x[1]); },
       "F.binary_cross_entropy_with_logits(x[0], x[1])"},
      {"batch_norm_train",
       {{{3, 2, 2, 3}}, {{2}}, {{2}}},
       [](V x) {
         nn::BatchNorm2d bn(2, 1e-5, 0.1, x[0].dtype(), x[0].device());
         bn.weight = x[1], bn.bias = x[2];
         return bn(x[0]);
       },
       "F.batch_norm(x[0], None, None, x[1], x[2], training=True)"},
  };
}

std::vector<Host> case_inputs(const Case& c, uint64_t seed) {
  std::vector<Host> in;
  for (size_t i = 0; i < c.in.size(); ++i) in.push_back(random_host(c.in[i].shape, seed * 31 + i, c.in[i].lo, c.in[i].hi, c.in[i].index));
  return in;
}
// Weights of the loss sum(f(x) * w), so that every output element has its own seed.
Host loss_weights(const Shape& s, uint64_t seed) { return random_host(s, seed * 977 + 5, -1, 1); }

std::vector<Tensor> make_inputs(const Case& c, const std::vector<Host>& h, const std::string& dev, DType dt) {
  std::vector<Tensor> x;
  for (size_t i = 0; i < h.size(); ++i)
    x.push_back(c.in[i].index ? Tensor::from(h[i].v, h[i].shape, "cpu").cast(dt::int32).contiguous().realize().to(dev) : upload(h[i], dev, dt));
  return x;
}

// The loss L = sum(f(x) * w) in float64 on the CPU device.
double loss_cpu(const Case& c, const std::vector<Host>& h, const Host& w) {
  std::vector<Tensor> x = make_inputs(c, h, "cpu", dt::float64);
  return (c.f(x) * Tensor::from(w.v, w.shape, "cpu")).sum().item();
}

// dL/dx_i by central differences at up to kProbes elements of every differentiated input (spread
// over it: the first, the last and between; every element of a small input). PyTorch's comparison
// covers every element; these are the check that needs no PyTorch.
constexpr size_t kProbes = 8;
using Probes = std::vector<std::pair<size_t, double>>;  // (element, dL/dx there)
std::vector<Probes> finite_differences(const Case& c, std::vector<Host> h, const Host& w) {
  std::vector<Probes> g(h.size());
  for (size_t i = 0; i < h.size(); ++i) {
    if (!c.in[i].differentiated()) continue;
    size_t n = h[i].v.size(), probes = std::min(n, kProbes);
    for (size_t j = 0; j < probes; ++j) {
      size_t e = probes == n ? j : j * (n - 1) / (probes - 1);
      double x0 = h[i].v[e], step = 1e-6 * std::max(1.0, std::abs(x0));
      h[i].v[e] = x0 + step;
      double up = loss_cpu(c, h, w);
      h[i].v[e] = x0 - step;
      double down = loss_cpu(c, h, w);
      h[i].v[e] = x0;
      g[i].push_back({e, (up - down) / (2 * step)});
    }
  }
  return g;
}

// scaled_error (tests/train/common.h) at the probed elements.
double probe_error(const std::vector<double>& got, const Probes& want) {
  std::vector<double> g, w;
  for (const auto& [e, v] : want) g.push_back(got.at(e)), w.push_back(v);
  return scaled_error(g, w);
}

std::vector<std::vector<double>> ugpu_grads(const Case& c, const std::vector<Host>& h, const Host& w, const std::string& dev, DType dtype) {
  std::vector<Tensor> x = make_inputs(c, h, dev, dtype), targets;
  for (size_t i = 0; i < x.size(); ++i)
    if (c.in[i].differentiated()) targets.push_back(x[i]);
  Tensor y = c.f(x);
  Tensor loss = (y * upload(w, dev, y.dtype())).sum();
  std::vector<Tensor> g = gradient(loss, targets);
  Tensor::realize(g);
  std::vector<std::vector<double>> out(x.size());
  for (size_t i = 0, t = 0; i < x.size(); ++i)
    if (c.in[i].differentiated()) {
      REQUIRE(g[t].shape() == x[i].shape());
      CHECK(g[t].dtype() == dtype);
      out[i] = values(g[t++]);
    }
  return out;
}

}  // namespace

TEST_CASE("gradients: every op against finite differences and PyTorch, on every device") {
  const std::vector<Case> all = cases();
  TorchRef torch;
  const char* dts[] = {"float64", "float32"};
  std::vector<std::vector<Host>> inputs;
  std::vector<Host> weights;
  for (size_t k = 0; k < all.size(); ++k) {
    const Case& c = all[k];
    inputs.push_back(case_inputs(c, k + 1));
    std::vector<Tensor> x = make_inputs(c, inputs.back(), "cpu", dt::float64);
    weights.push_back(loss_weights(c.f(x).shape(), k + 1));
    for (const char* d : dts) {
      std::string job = "{\"kind\":\"grad\",\"name\":\"" + c.name + "." + d + "\",\"dtype\":\"" + d + "\",\"expr\":" + json_quote(c.torch) +
                        ",\"weight\":{\"file\":\"" + torch.write(c.name + ".w.bin", weights.back().v) +
                        "\",\"shape\":" + TorchRef::json_shape(weights.back().shape) + "},\"inputs\":[";
      for (size_t i = 0; i < c.in.size(); ++i)
        job += std::string(i ? "," : "") + "{\"file\":\"" + torch.write(c.name + ".x" + std::to_string(i) + ".bin", inputs.back()[i].v) +
               "\",\"shape\":" + TorchRef::json_shape(c.in[i].shape) + ",\"index\":" + (c.in[i].index ? "true" : "false") +
               ",\"const\":" + (c.in[i].constant ? "true" : "false") + "}";
      torch.add(c.name + "." + d, job + "]}");
    }
  }
  bool have_torch = torch.run();
  if (!have_torch) MESSAGE("the comparisons with PyTorch are skipped: " << TorchRef::reason());

  for (size_t k = 0; k < all.size(); ++k) {
    const Case& c = all[k];
    CAPTURE(c.name);
    std::vector<Probes> fd = finite_differences(c, inputs[k], weights[k]);
    std::map<std::string, std::vector<std::vector<double>>> theirs;
    if (have_torch)
      for (const char* d : dts) {
        std::string job = c.name + "." + d;
        REQUIRE_MESSAGE(torch.error(job).empty(), job << ": " << torch.error(job));
        for (size_t i = 0; i < c.in.size(); ++i)
          if (c.in[i].differentiated()) theirs[d].push_back(torch.read(job + ".g" + std::to_string(i) + ".bin", inputs[k][i].v.size()));
          else theirs[d].push_back({});
      }
    for (const std::string& dev : sample_devices(train_test_devices(), k)) {  // one device each under UGPU_TEST_SAMPLE
      CAPTURE(dev);
      if (has_f64(dev)) {
        auto g = ugpu_grads(c, inputs[k], weights[k], dev, dt::float64);
        for (size_t i = 0; i < g.size(); ++i) {
          if (!c.in[i].differentiated()) continue;
          CAPTURE(i);
          CHECK(probe_error(g[i], fd[i]) < 1e-6);
          if (have_torch) CHECK(scaled_error(g[i], theirs["float64"][i]) < c.torch64_tol);
        }
      }
      // float32 where the device has no float64, and on the CPU (the GPUs' float32 paths are the
      // tensor suite's; compiling every gradient twice for them would double this suite's time).
      if (has_f64(dev) && dev != "cpu") continue;
      auto g = ugpu_grads(c, inputs[k], weights[k], dev, dt::float32);
      for (size_t i = 0; i < g.size(); ++i) {
        if (!c.in[i].differentiated()) continue;
        CAPTURE(i);
        CHECK((have_torch ? scaled_error(g[i], theirs["float32"][i]) : probe_error(g[i], fd[i])) < c.f32_tol);
      }
    }
  }
}

TEST_CASE("gradients: ties, zeros in products and the other documented choices") {
  for (const std::string& dev : train_test_devices()) {
    CAPTURE(dev);
    auto grad_of = [&](const std::vector<float>& v, const std::function<Tensor(const Tensor&)>& f) {
      Tensor x = Tensor::from(v, {static_cast<int64_t>(v.size())}, dev);
      return gradient(f(x), {x})[0].to_vector<float>();
    };
    using F = std::vector<float>;
    CHECK(grad_of({1, 3, 3, 2}, [](const Tensor& x) { return x.max(); }) == F{0, 0.5f, 0.5f, 0});
    CHECK(grad_of({1, 3, 3, 2}, [](const Tensor& x) { return x.min(); }) == F{1, 0, 0, 0});
    CHECK(grad_of({1, 3, 4, 2}, [&](const Tensor& x) { return x.maximum(scalar_like(x, 3)).sum(); }) == F{0, 0.5f, 1, 0});
    CHECK(grad_of({-1, 0, 2}, [](const Tensor& x) { return x.relu().sum(); }) == F{0, 0.5f, 1});
    CHECK(grad_of({2, 0, 3}, [](const Tensor& x) { return x.prod(); }) == F{0, 6, 0});
    CHECK(grad_of({0, 0, 3}, [](const Tensor& x) { return x.prod(); }) == F{0, 0, 0});
    CHECK(grad_of({2, 4, -1}, [](const Tensor& x) { return x.prod(); }) == F{-4, -2, 8});
    CHECK(grad_of({0, 2}, [](const Tensor& x) { return x.pow(scalar_like(x, 0)).sum(); }) == F{0, 0});
    CHECK(grad_of({1.5f, -2.5f}, [](const Tensor& x) { return (x.floor() + x.ceil() + x.trunc() + x.sign()).sum() + x.sum(); }) == F{1, 1});
    // Out-of-range gather indices read 0 and get no gradient; repeated ones sum.
    Tensor t = Tensor::from(F{1, 2, 3}, {3}, dev);
    Tensor idx = Tensor::from(std::vector<int32_t>{0, 2, 2, 7, -1}, {5}, dev);
    CHECK(gradient(t.gather(0, idx).sum(), {t})[0].to_vector<float>() == F{1, 0, 2});
  }
}

TEST_CASE("autograd: backward accumulates, detach and NoGrad stop gradients, realized graphs are kept") {
  const std::string dev = "cpu";
  Tensor w = Tensor::from(std::vector<float>{1, -2, 3}, {3}, dev).set_requires_grad();
  CHECK(w.requires_grad());
  CHECK_FALSE(w.grad().defined());
  (w * 2.0).sum().backward();
  (w * 2.0).sum().backward();
  CHECK(w.grad().to_vector<float>() == std::vector<float>{4, 4, 4});
  Tensor copy = w;  // a handle shares the gradient
  CHECK(copy.grad().to_vector<float>() == std::vector<float>{4, 4, 4});
  w.set_grad({});
  (w.detach() * w).sum().backward();
  CHECK(w.grad().to_vector<float>() == std::vector<float>{1, -2, 3});
  w.set_grad({});
  Tensor y;
  {
    tensor::NoGrad no;
    CHECK_FALSE(tensor::grad_enabled());
    y = w * 3.0;
  }
  CHECK(tensor::grad_enabled());
  (y * w).sum().backward();
  CHECK(w.grad().to_vector<float>() == std::vector<float>{3, -6, 9});
  // The loss read first (realized), then backward: its graph was kept.
  w.set_grad({});
  Tensor loss = (w * w).sum();
  CHECK(loss.item() == 14);
  loss.backward();
  CHECK(w.grad().to_vector<float>() == std::vector<float>{2, -4, 6});
  // A seed for a non-scalar; unrelated targets get zeros.
  Tensor other = Tensor::ones({2}, dt::float32, dev);
  auto g = gradient(w * 2.0, {w, other}, Tensor::full({3}, 3, dt::float32, dev));
  CHECK(g[0].to_vector<float>() == std::vector<float>{6, 6, 6});
  CHECK(g[1].to_vector<float>() == std::vector<float>{0, 0});
  // A gradient of a gradient: d2/dx2 of sum(x^3) is 6x.
  Tensor x3 = Tensor::from(std::vector<float>{1, -2}, {2}, dev);
  Tensor dx = gradient((x3 * x3 * x3).sum(), {x3})[0];
  CHECK(gradient(dx.sum(), {x3})[0].to_vector<float>() == std::vector<float>{6, -12});
  // Half precision: gradients in the parameter's dtype.
  Tensor h = Tensor::from(std::vector<float>{1, 2}, {2}, dev).cast(dt::half);
  Tensor gh = gradient((h * h).sum(), {h})[0];
  CHECK(gh.dtype() == dt::half);
  CHECK(gh.cast(dt::float32).to_vector<float>() == std::vector<float>{2, 4});
}

TEST_CASE("autograd: clear errors") {
  const std::string dev = "cpu";
  Tensor w = Tensor::from(std::vector<float>{1, 2}, {2}, dev);
  CHECK(error_of([&] { gradient(w * 2.0, {w}); }).find("needs a scalar") != std::string::npos);
  CHECK(error_of([&] { gradient(w * 2.0, {w}, Tensor::ones({3}, dt::float32, dev)); }).find("seed has shape [3]") != std::string::npos);
  CHECK(error_of([&] { gradient(w.sum(), {w.cast(dt::int32)}); }).find("only float tensors") != std::string::npos);
  CHECK(error_of([&] { Tensor::arange(3, dt::int32, dev).set_requires_grad(); }).find("only float tensors") != std::string::npos);
  CHECK(error_of([&] { (w * 2.0).sum().backward(); }).find("nothing in this tensor's graph requires a gradient") != std::string::npos);
  Tensor buf = Tensor::zeros({2}, dt::float32, dev).contiguous().realize();
  Tensor v = w * 2.0;
  buf.assign_at(0, Tensor::from(std::vector<int32_t>{1, 0}, {2}, dev), v);
  CHECK(error_of([&] { gradient(buf.sum(), {w}); }).find("ASSIGN has no derivative rule (an indexed assign_at)") != std::string::npos);
}

}  // namespace ugpu::test
