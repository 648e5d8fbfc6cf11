// Layers, initializers and losses (tensor/nn.h) beyond their gradients (test_grad.cpp): PyTorch's
// initialization bounds and moments, the same values on every device, BatchNorm's running statistics
// and eval mode, Dropout's masks, parameter names, and errors.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "tensor/nn.h"
#include "tests/tensor/host.h"
#include "tests/train/common.h"

namespace ugpu::test {
namespace {
namespace dt = tensor::dtypes;
namespace nn = tensor::nn;

struct Moments {
  double mean = 0, var = 0, max_abs = 0;
};
Moments moments(const std::vector<float>& v) {
  Moments m;
  for (float x : v) m.mean += x, m.max_abs = std::max(m.max_abs, static_cast<double>(std::abs(x)));
  m.mean /= static_cast<double>(v.size());
  for (float x : v) m.var += (x - m.mean) * (x - m.mean);
  m.var /= static_cast<double>(v.size());
  return m;
}

}  // namespace

TEST_CASE("nn: initializers follow PyTorch's formulas and give the same values on every device") {
  nn::Linear l(300, 200, 1, true, dt::float32, "cpu");
  double bound = 1 / std::sqrt(300.0);
  Moments w = moments(l.weight.to_vector<float>()), b = moments(l.bias.to_vector<float>());
  CHECK(w.max_abs <= bound);
  CHECK(w.max_abs > 0.99 * bound);
  CHECK(std::abs(w.mean) < 0.02 * bound);
  CHECK(w.var == doctest::Approx(bound * bound / 3).epsilon(0.03));  // U(-a, a) has variance a^2 / 3
  CHECK(b.max_abs <= bound);
  CHECK(l.weight.requires_grad());
  Moments k = moments(nn::kaiming_normal({256, 128, 3, 3}, 5).to_vector<float>());
  CHECK(std::sqrt(k.var) == doctest::Approx(std::sqrt(2.0 / (128 * 9))).epsilon(0.02));
  Moments x = moments(nn::xavier_uniform({100, 50}, 6).to_vector<float>());
  CHECK(x.max_abs <= std::sqrt(6.0 / 150));
  CHECK(nn::fans({8, 4, 3, 3}) == std::pair<int64_t, int64_t>{36, 72});
  nn::Conv2d c(4, 6, {3, 3}, 2, {1, 1}, {0, 0}, {1, 1}, 2);
  CHECK(c.weight.shape() == tensor::Shape{6, 2, 3, 3});
  CHECK(moments(c.weight.to_vector<float>()).max_abs <= 1 / std::sqrt(18.0));
  std::vector<float> ref = nn::Linear(5, 3, 9, true, dt::float32, "cpu").weight.to_vector<float>();
  for (const std::string& dev : train_test_devices()) {
    CAPTURE(dev);
    CHECK(nn::Linear(5, 3, 9, true, dt::float32, dev).weight.to_vector<float>() == ref);
  }
}

TEST_CASE("nn: BatchNorm2d keeps running statistics in training and uses them in eval") {
  for (const std::string& dev : train_test_devices()) {
    CAPTURE(dev);
    nn::BatchNorm2d bn(2, 1e-5, 0.1, dt::float32, dev);
    Host h1 = random_host({3, 2, 2, 2}, 1), h2 = random_host({3, 2, 2, 2}, 2);
    std::vector<double> rm{0, 0}, rv{1, 1};
    for (const Host* h : {&h1, &h2}) {
      Tensor y = bn(upload(*h, dev));
      std::vector<Tensor> all{y, bn.running_mean, bn.running_var, bn.num_batches_tracked};
      Tensor::realize(all);
      for (int c = 0; c < 2; ++c) {
        std::vector<double> v;
        for (int n = 0; n < 3; ++n)
          for (int i = 0; i < 4; ++i) v.push_back(h->v[(n * 2 + c) * 4 + i]);
        double mean = 0, var = 0;
        for (double x : v) mean += x / 12;
        for (double x : v) var += (x - mean) * (x - mean) / 11;  // unbiased, as PyTorch's running_var
        rm[c] = 0.9 * rm[c] + 0.1 * mean;
        rv[c] = 0.9 * rv[c] + 0.1 * var;
      }
    }
    std::vector<float> m = bn.running_mean.to_vector<float>(), v = bn.running_var.to_vector<float>();
    for (int c = 0; c < 2; ++c) {
      CHECK(m[c] == doctest::Approx(rm[c]).epsilon(1e-5));
      CHECK(v[c] == doctest::Approx(rv[c]).epsilon(1e-5));
    }
    CHECK(bn.num_batches_tracked.item() == 2);
    bn.training = false;
    std::vector<float> y = bn(upload(h1, dev)).to_vector<float>();
    for (int c = 0; c < 2; ++c) CHECK(y[c * 4] == doctest::Approx((h1.v[c * 4] - rm[c]) / std::sqrt(rv[c] + 1e-5)).epsilon(1e-4));
    CHECK(error_of([&] { bn(Tensor::zeros({2, 3, 4, 4}, dt::float32, dev)); }).find("BatchNorm2d: x must be [N, 2, H, W]") == 0);
  }
}

TEST_CASE("nn: Dropout's mask is the same on every device, new per call, scaled, and off in eval") {
  Tensor ones = Tensor::ones({4000}, dt::float32, "cpu");
  nn::Dropout ref(0.25, 42);
  std::vector<float> a = ref(ones).to_vector<float>(), b = ref(ones).to_vector<float>();
  CHECK(a != b);
  int64_t kept = 0;
  for (float x : a) {
    CHECK((x == 0 || x == doctest::Approx(1 / 0.75)));
    kept += x != 0;
  }
  CHECK(static_cast<double>(kept) / 4000 == doctest::Approx(0.75).epsilon(0.03));
  for (const std::string& dev : train_test_devices()) {
    CAPTURE(dev);
    nn::Dropout d(0.25, 42);
    CHECK(d(Tensor::ones({4000}, dt::float32, dev)).to_vector<float>() == a);
    d.training = false;
    CHECK(d(Tensor::ones({3}, dt::float32, dev)).to_vector<float>() == std::vector<float>{1, 1, 1});
  }
  CHECK(error_of([&] { nn::Dropout(1.5)(ones); }).find("Dropout: p must be in [0, 1]") == 0);
  CHECK(nn::Dropout(1)(ones).sum().item() == 0);
}

TEST_CASE("nn: parameters are named as PyTorch names them; losses refuse what does not fit") {
  nn::Linear l(3, 2, 1, false);
  nn::BatchNorm2d bn(4);
  nn::LayerNorm ln(3);
  nn::Embedding e(10, 4, 2);
  nn::Params p = nn::parameters({{"fc", &l}, {"bn", &bn}, {"ln", &ln}, {"emb", &e}});
  std::vector<std::string> names;
  for (auto& [n, t] : p) names.push_back(n);
  CHECK(names == std::vector<std::string>{"fc.weight", "bn.weight", "bn.bias", "bn.running_mean", "bn.running_var", "bn.num_batches_tracked",
                                          "ln.weight", "ln.bias", "emb.weight"});
  CHECK(nn::trainable(p).size() == 6);  // not the running statistics
  CHECK(nn::LayerNorm(3, 1e-5, false).state().empty());
  Tensor logits = Tensor::zeros({4, 3});
  CHECK(error_of([&] { nn::cross_entropy(logits, Tensor::zeros({4})); }).find("class indices") != std::string::npos);
  CHECK(error_of([&] { nn::cross_entropy(logits, Tensor::zeros({3}, dt::int32)); }).find("target [3] for logits [4, 3]") != std::string::npos);
  CHECK(error_of([&] { nn::mse_loss(logits, Tensor::zeros({3})); }).find("mse_loss: shapes") == 0);
  CHECK(error_of([&] { nn::Conv2d(3, 4, {3, 3}, 1, {1, 1}, {0, 0}, {1, 1}, 2); }).find("do not split into 2 groups") != std::string::npos);
  // All targets ignored: 0 / 0, as PyTorch.
  CHECK(std::isnan(nn::cross_entropy(logits, Tensor::full({4}, -100, dt::int32)).item()));
  // Uniform logits: log(classes).
  CHECK(nn::cross_entropy(logits, Tensor::zeros({4}, dt::int32)).item() == doctest::Approx(std::log(3.0)));
}

}  // namespace ugpu::test
