// Optimizers and schedules (tensor/optim.h): ten steps on the same parameters and gradients against
// torch.optim (PyTorch's schedulers for the learning rate), on every device; clipping by global norm;
// the update's kernel count; errors.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tensor/grad.h"
#include "tensor/optim.h"
#include "tests/tensor/host.h"
#include "tests/train/common.h"
#include "tests/train/torch_ref.h"

namespace ugpu::test {
namespace {
namespace dt = tensor::dtypes;
namespace optim = tensor::optim;
using optim::LR;

struct OptCase {
  std::string name;
  std::string torch_name, torch_options;  // torch.optim class and its keyword arguments (JSON)
  LR lr;
  std::string schedule;  // the same schedule for torch_ref.py (JSON)
  std::function<std::unique_ptr<optim::Optimizer>(std::span<const Tensor>, LR)> make;
};

std::vector<OptCase> opt_cases() {
  using P = std::span<const Tensor>;
  return {
      {"sgd", "SGD", "{}", LR::constant(0.1), "{\"kind\":\"constant\",\"lr\":0.1}", [](P p, LR lr) { return std::make_unique<optim::SGD>(p, lr); }},
      {"sgd_momentum", "SGD", "{\"momentum\":0.9,\"dampening\":0.1,\"weight_decay\":0.01}", LR::constant(0.05), "{\"kind\":\"constant\",\"lr\":0.05}",
       [](P p, LR lr) { return std::make_unique<optim::SGD>(p, lr, optim::SGD::Options{0.9, 0.1, 0.01, false}); }},
      {"sgd_nesterov_step", "SGD", "{\"momentum\":0.8,\"nesterov\":true}", LR::step(0.1, 3, 0.5),
       "{\"kind\":\"step\",\"lr\":0.1,\"step_size\":3,\"gamma\":0.5}",
       [](P p, LR lr) { return std::make_unique<optim::SGD>(p, lr, optim::SGD::Options{0.8, 0, 0, true}); }},
      {"adam_cosine", "Adam", "{}", LR::cosine(0.01, 12, 0.001), "{\"kind\":\"cosine\",\"lr\":0.01,\"total\":12,\"min_lr\":0.001}",
       [](P p, LR lr) { return std::make_unique<optim::Adam>(p, lr); }},
      {"adam_l2_warmup", "Adam", "{\"weight_decay\":0.1,\"betas\":[0.8,0.99]}", LR::linear_warmup(0.02, 4),
       "{\"kind\":\"warmup\",\"lr\":0.02,\"warmup\":4}",
       [](P p, LR lr) { return std::make_unique<optim::Adam>(p, lr, optim::AdamOptions{0.8, 0.99, 1e-8, 0.1}); }},
      {"adamw", "AdamW", "{\"weight_decay\":0.05}", LR::constant(0.01), "{\"kind\":\"constant\",\"lr\":0.01}",
       [](P p, LR lr) { return std::make_unique<optim::Adam>(p, lr, optim::AdamOptions{0.9, 0.999, 1e-8, 0.05}, true); }},
      {"lamb", "LAMB", "{\"b1\":0.9,\"b2\":0.999,\"eps\":1e-6,\"weight_decay\":0.01}", LR::constant(0.01), "{\"kind\":\"constant\",\"lr\":0.01}",
       [](P p, LR lr) { return std::make_unique<optim::LAMB>(p, lr, optim::AdamOptions{0.9, 0.999, 1e-6, 0.01}); }},
  };
}

constexpr int kSteps = 10;
const Shape kShapes[] = {{3, 4}, {5}};

}  // namespace

TEST_CASE("optimizers: ten steps against torch.optim, every schedule, on every device") {
  const auto cases = opt_cases();
  TorchRef torch;
  std::vector<Host> init;
  for (size_t i = 0; i < std::size(kShapes); ++i) init.push_back(random_host(kShapes[i], 100 + i));
  std::vector<std::vector<Host>> grads(kSteps);
  for (int s = 0; s < kSteps; ++s)
    for (size_t i = 0; i < std::size(kShapes); ++i) grads[s].push_back(random_host(kShapes[i], 1000 + 10 * s + i, -1, 1));
  for (const OptCase& c : cases) {
    std::string job = "{\"kind\":\"optim\",\"name\":\"" + c.name + "\",\"optimizer\":\"" + c.torch_name + "\",\"options\":" + c.torch_options +
                      ",\"schedule\":" + c.schedule + ",\"params\":[";
    for (size_t i = 0; i < init.size(); ++i)
      job += std::string(i ? "," : "") + "{\"file\":\"" + torch.write(c.name + ".init" + std::to_string(i), init[i].v) +
             "\",\"shape\":" + TorchRef::json_shape(init[i].shape) + "}";
    job += "],\"grads\":[";
    for (int s = 0; s < kSteps; ++s) {
      job += std::string(s ? "," : "") + "[";
      for (size_t i = 0; i < init.size(); ++i)
        job += std::string(i ? "," : "") + "\"" + torch.write(c.name + ".g" + std::to_string(s) + "." + std::to_string(i), grads[s][i].v) + "\"";
      job += "]";
    }
    torch.add(c.name, job + "]}");
  }
  if (!torch.run()) {
    MESSAGE("the comparisons with torch.optim are skipped: " << TorchRef::reason());
    return;
  }
  for (size_t ci = 0; ci < std::size(cases); ++ci) {
    const OptCase& c = cases[ci];
    CAPTURE(c.name);
    REQUIRE_MESSAGE(torch.error(c.name).empty(), torch.error(c.name));
    for (const std::string& dev : sample_devices(train_test_devices(), ci)) {  // one device each under UGPU_TEST_SAMPLE
      CAPTURE(dev);
      std::vector<Tensor> params;
      for (const Host& h : init) params.push_back(upload(h, dev).set_requires_grad());
      auto opt = c.make(params, c.lr);
      for (int s = 0; s < kSteps; ++s) {
        for (size_t i = 0; i < params.size(); ++i) params[i].set_grad(upload(grads[s][i], dev));
        opt->step();
      }
      CHECK(opt->steps() == kSteps);
      for (size_t i = 0; i < params.size(); ++i) {
        CAPTURE(i);
        CHECK(scaled_error(values(params[i]), torch.read(c.name + ".p" + std::to_string(i) + ".bin", init[i].v.size())) < 2e-6);
      }
    }
  }
}

TEST_CASE("schedules: the device's learning rate is the host's formula") {
  for (LR lr : {LR::constant(0.3), LR::step(0.1, 3, 0.5), LR::cosine(0.01, 7, 0.001), LR::linear_warmup(0.02, 4)})
    for (int64_t s = 0; s < 12; ++s) {
      Tensor t = Tensor::full({}, static_cast<double>(s), dt::int32, "cpu");
      CHECK(lr.at(t).item() == doctest::Approx(lr.at(s)).epsilon(1e-6));
    }
  CHECK(LR::cosine(1, 10).at(int64_t{10}) == doctest::Approx(0));
  CHECK(LR::cosine(1, 10).at(int64_t{20}) == doctest::Approx(0));  // stays at min_lr after `total`
  CHECK(LR::linear_warmup(1, 4).at(int64_t{0}) == doctest::Approx(0.25));
}

TEST_CASE("clip_grad_norm: the global norm, scaled down only above max_norm") {
  for (const std::string& dev : train_test_devices()) {
    CAPTURE(dev);
    Tensor a = Tensor::zeros({2}, dt::float32, dev).set_requires_grad(), b = Tensor::zeros({2}, dt::float32, dev).set_requires_grad();
    Tensor unused = Tensor::zeros({3}, dt::float32, dev).set_requires_grad();
    a.set_grad(Tensor::from(std::vector<float>{3, 0}, {2}, dev));
    b.set_grad(Tensor::from(std::vector<float>{0, 4}, {2}, dev));
    std::vector<Tensor> ps{a, b, unused};
    CHECK(optim::clip_grad_norm(ps, 10).item() == doctest::Approx(5));
    CHECK(a.grad().to_vector<float>() == std::vector<float>{3, 0});  // below max_norm: unchanged (scale 1)
    CHECK(optim::clip_grad_norm(ps, 1).item() == doctest::Approx(5));
    std::vector<float> ga = a.grad().to_vector<float>(), gb = b.grad().to_vector<float>();
    CHECK(ga[0] == doctest::Approx(0.6).epsilon(1e-5));
    CHECK(gb[1] == doctest::Approx(0.8).epsilon(1e-5));
    CHECK_FALSE(unused.grad().defined());
  }
}

TEST_CASE("optimizers: parameters without a gradient stay; one step is a few kernels; errors") {
  Tensor a = Tensor::ones({4}, dt::float32, "cpu").contiguous().realize().set_requires_grad();
  Tensor b = Tensor::ones({4}, dt::float32, "cpu").contiguous().realize().set_requires_grad();
  std::vector<Tensor> ps{a, b};
  optim::Adam opt(ps, LR::constant(0.1));
  a.set_grad(Tensor::ones({4}, dt::float32, "cpu"));
  opt.step();
  CHECK(a.to_vector<float>()[0] == doctest::Approx(0.9f));
  CHECK(b.to_vector<float>() == std::vector<float>{1, 1, 1, 1});
  // Adam: the two moments and the parameter, per parameter, and the step count.
  b.set_grad(Tensor::ones({4}, dt::float32, "cpu"));
  a.set_grad(Tensor::ones({4}, dt::float32, "cpu"));
  opt.step();
  CHECK(tensor::last_realize().kernels <= 2 * 3 + 1 + 1 + 2);  // moments and parameters, step count, scalars, gradients
  CHECK(opt.state().size() == 1 + 2 * 2);
  CHECK(opt.state()[1].first == "exp_avg.0");
  Tensor plain = Tensor::ones({2}, dt::float32, "cpu");
  std::vector<Tensor> bad{plain};
  CHECK(error_of([&] { optim::SGD s(bad, LR::constant(1)); }).find("does not require a gradient") != std::string::npos);
  CHECK(error_of([&] { optim::SGD s(ps, LR::constant(1), {0, 0, 0, true}); }).find("Nesterov") != std::string::npos);
  CHECK(error_of([&] { optim::Adam s(ps, LR::constant(1), {1.5, 0.9, 1e-8, 0}); }).find("betas") != std::string::npos);
  CHECK(error_of([&] { optim::SGD s(ps, LR::cosine(1, 0)); }).find("total") != std::string::npos);
}

}  // namespace ugpu::test
