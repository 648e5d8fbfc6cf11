// Layers, losses and initializers (tensor/nn.h).
#include "tensor/nn.h"

#include <cmath>

#include "common/error.h"
#include "tensor/grad.h"
#include "tensor/lazy.h"

namespace ugpu::tensor::nn {

namespace {

// A second seed from one (a layer's bias, a dropout call), by splitmix64.
uint64_t mix(uint64_t seed, uint64_t stream) {
  uint64_t z = seed + 0x9E3779B97F4A7C15ull * (stream + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

Tensor param(Tensor t) {
  t = t.contiguous();
  t.realize();
  return t.set_requires_grad();
}
Tensor buffer(Tensor t) {
  t = t.contiguous();
  return t.realize();
}

Params prefixed(const std::string& prefix, const Params& p) {
  Params r;
  for (const auto& [n, t] : p) r.push_back({prefix.empty() ? n : prefix + "." + n, t});
  return r;
}

}  // namespace

Tensor uniform(Shape shape, double bound, uint64_t seed, DType dtype, const std::string& device) {
  return buffer(((Tensor::rand(std::move(shape), seed, dtypes::float32, device) * 2.0 - 1.0) * bound).cast(dtype));
}
Tensor normal(Shape shape, double std, uint64_t seed, DType dtype, const std::string& device) {
  return buffer((Tensor::randn(std::move(shape), seed, dtypes::float32, device) * std).cast(dtype));
}

std::pair<int64_t, int64_t> fans(const Shape& w) {
  if (w.size() < 2) throw Error("fans: a weight has at least two axes ([out, in, ...]), not " + std::to_string(w.size()));
  int64_t k = 1;
  for (size_t i = 2; i < w.size(); ++i) k *= w[i];
  return {w[1] * k, w[0] * k};
}
Tensor kaiming_uniform(Shape shape, uint64_t seed, double a, DType dtype, const std::string& device) {
  double fan_in = static_cast<double>(fans(shape).first);
  return uniform(std::move(shape), std::sqrt(2.0 / (1 + a * a)) * std::sqrt(3.0 / fan_in), seed, dtype, device);
}
Tensor kaiming_normal(Shape shape, uint64_t seed, DType dtype, const std::string& device) {
  double fan_in = static_cast<double>(fans(shape).first);
  return normal(std::move(shape), std::sqrt(2.0 / fan_in), seed, dtype, device);
}
Tensor xavier_uniform(Shape shape, uint64_t seed, DType dtype, const std::string& device) {
  auto [in, out] = fans(shape);
  return uniform(std::move(shape), std::sqrt(6.0 / static_cast<double>(in + out)), seed, dtype, device);
}

Params parameters(std::initializer_list<std::pair<std::string, const Module*>> layers) {
  Params r;
  for (const auto& [name, m] : layers)
    for (auto& p : prefixed(name, m->state())) r.push_back(std::move(p));
  return r;
}
std::vector<Tensor> trainable(const Params& p) {
  std::vector<Tensor> r;
  for (const auto& [n, t] : p)
    if (t.defined() && t.requires_grad()) r.push_back(t);
  return r;
}

// ---- layers ----------------------------------------------------------------------------------------

Linear::Linear(int64_t in, int64_t out, uint64_t seed, bool with_bias, DType dtype, const std::string& device) {
  weight = param(kaiming_uniform({out, in}, seed, std::sqrt(5.0), dtype, device));
  if (with_bias) bias = param(uniform({out}, 1 / std::sqrt(static_cast<double>(in)), mix(seed, 1), dtype, device));
}
Params Linear::state() const {
  Params p{{"weight", weight}};
  if (bias.defined()) p.push_back({"bias", bias});
  return p;
}

Conv2d::Conv2d(int64_t in, int64_t out, Pair kernel, uint64_t seed, Pair stride, Pair padding, Pair dilation, int64_t groups, bool with_bias,
               DType dtype, const std::string& device)
    : stride(stride), padding(padding), dilation(dilation), groups(groups) {
  if (groups < 1 || in % groups || out % groups)
    throw Error("Conv2d: " + std::to_string(in) + " in and " + std::to_string(out) + " out channels do not split into " + std::to_string(groups) +
                " groups");
  Shape w{out, in / groups, kernel[0], kernel[1]};
  weight = param(kaiming_uniform(w, seed, std::sqrt(5.0), dtype, device));
  if (with_bias) bias = param(uniform({out}, 1 / std::sqrt(static_cast<double>(fans(w).first)), mix(seed, 1), dtype, device));
}
Params Conv2d::state() const {
  Params p{{"weight", weight}};
  if (bias.defined()) p.push_back({"bias", bias});
  return p;
}

BatchNorm2d::BatchNorm2d(int64_t channels, double eps, double momentum, DType dtype, const std::string& device) : eps(eps), momentum(momentum) {
  weight = param(Tensor::ones({channels}, dtype, device));
  bias = param(Tensor::zeros({channels}, dtype, device));
  running_mean = buffer(Tensor::zeros({channels}, dtype, device));
  running_var = buffer(Tensor::ones({channels}, dtype, device));
  num_batches_tracked = buffer(Tensor::zeros({}, dtypes::int64, device));
}
Tensor BatchNorm2d::operator()(const Tensor& x) {
  if (x.ndim() != 4 || x.shape()[1] != weight.shape()[0])
    throw Error("BatchNorm2d: x must be [N, " + std::to_string(weight.shape()[0]) + ", H, W], is " + shape_text(x.shape()));
  Axes c{1, -1, 1, 1};
  if (!training) return (x - running_mean.reshape(c)) * (running_var.reshape(c) + eps).rsqrt() * weight.reshape(c) + bias.reshape(c);
  Tensor mean = x.mean({0, 2, 3}, true);
  Tensor var = (x - mean).square().mean({0, 2, 3}, true);
  double n = static_cast<double>(x.numel() / x.shape()[1]);
  {
    NoGrad no;
    running_mean.assign(running_mean * (1 - momentum) + mean.detach().reshape({-1}) * momentum);
    running_var.assign(running_var * (1 - momentum) + var.detach().reshape({-1}) * (momentum * n / std::max(1.0, n - 1)));
    num_batches_tracked.assign(num_batches_tracked + 1.0);
  }
  return (x - mean) * (var + eps).rsqrt() * weight.reshape(c) + bias.reshape(c);
}
Params BatchNorm2d::state() const {
  return {
      {"weight", weight}, {"bias", bias}, {"running_mean", running_mean}, {"running_var", running_var}, {"num_batches_tracked", num_batches_tracked}};
}

LayerNorm::LayerNorm(int64_t dim, double eps, bool affine, DType dtype, const std::string& device) : eps(eps) {
  if (!affine) return;
  weight = param(Tensor::ones({dim}, dtype, device));
  bias = param(Tensor::zeros({dim}, dtype, device));
}
Params LayerNorm::state() const {
  if (!weight.defined()) return {};
  return {{"weight", weight}, {"bias", bias}};
}

RMSNorm::RMSNorm(int64_t dim, double eps, DType dtype, const std::string& device) : eps(eps) { weight = param(Tensor::ones({dim}, dtype, device)); }
Params RMSNorm::state() const { return {{"weight", weight}}; }

Embedding::Embedding(int64_t vocab, int64_t dim, uint64_t seed, DType dtype, const std::string& device) {
  weight = param(normal({vocab, dim}, 1, seed, dtype, device));
}
Params Embedding::state() const { return {{"weight", weight}}; }

Tensor Dropout::operator()(const Tensor& x) {
  if (p < 0 || p > 1) throw Error("Dropout: p must be in [0, 1], is " + std::to_string(p));
  if (!training || p == 0) return x;
  if (p == 1) return x * 0.0;
  Tensor keep = Tensor::rand(x.shape(), mix(seed, calls++), dtypes::float32, x.device()).ge(Tensor::full({}, p, dtypes::float32, x.device()));
  return x * keep.where(Tensor::full({}, 1 / (1 - p), x.dtype(), x.device()), 0.0);
}

// ---- losses ------------------------------------------------------------------------------------------

Tensor cross_entropy(const Tensor& logits, const Tensor& target, double label_smoothing, int64_t ignore_index) {
  if (logits.ndim() < 2) throw Error("cross_entropy: logits must be [N, C, ...], are " + shape_text(logits.shape()));
  if (!target.dtype().is_int()) throw Error("cross_entropy: the target must be class indices (an integer tensor), not " + target.dtype().name());
  Shape want = logits.shape();
  want.erase(want.begin() + 1);
  if (target.shape() != want)
    throw Error("cross_entropy: target " + shape_text(target.shape()) + " for logits " + shape_text(logits.shape()) + " (want " + shape_text(want) +
                ")");
  if (label_smoothing < 0 || label_smoothing > 1) throw Error("cross_entropy: label_smoothing must be in [0, 1]");
  int64_t classes = logits.shape()[1];
  Tensor lsm = logits.log_softmax(1);
  Axes view(static_cast<size_t>(logits.ndim()), 1);
  view[1] = classes;
  Tensor hit = target.unsqueeze(1).eq(Tensor::arange(classes, target.dtype(), logits.device()).reshape(view));
  Tensor loss = -hit.where(lsm, 0.0).sum({1});
  if (label_smoothing > 0) loss = loss * (1 - label_smoothing) - lsm.mean({1}) * label_smoothing;
  Tensor valid = target.ne(Tensor::full({}, static_cast<double>(ignore_index), target.dtype(), target.device()));
  return valid.where(loss, 0.0).sum() / valid.cast(loss.dtype()).sum();
}

Tensor mse_loss(const Tensor& x, const Tensor& target) {
  if (x.shape() != target.shape()) throw Error("mse_loss: shapes " + shape_text(x.shape()) + " and " + shape_text(target.shape()) + " differ");
  return (x - target).square().mean();
}

Tensor binary_cross_entropy(const Tensor& p, const Tensor& target) {
  if (p.shape() != target.shape())
    throw Error("binary_cross_entropy: shapes " + shape_text(p.shape()) + " and " + shape_text(target.shape()) + " differ");
  Tensor lo = scalar_like(p, -100);
  return -(target * p.log().maximum(lo) + (1.0 - target) * (1.0 - p).log().maximum(lo)).mean();
}

Tensor binary_cross_entropy_with_logits(const Tensor& x, const Tensor& target) {
  if (x.shape() != target.shape())
    throw Error("binary_cross_entropy_with_logits: shapes " + shape_text(x.shape()) + " and " + shape_text(target.shape()) + " differ");
  return (x.relu() - x * target + (1.0 + (-x.abs()).exp()).log()).mean();
}

}  // namespace ugpu::tensor::nn
