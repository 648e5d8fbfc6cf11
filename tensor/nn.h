// Layers, losses and initializers for training (docs/training.md), on the Tensor API.
//
//   nn::Linear l1(784, 128, 1), l2(128, 10, 2);         // seeds make the initial weights
//   Tensor logits = l2(l1(x).relu());
//   Tensor loss = nn::cross_entropy(logits, labels);
//   nn::Params p = nn::parameters({{"l1", &l1}, {"l2", &l2}});   // "l1.weight", "l1.bias", ...
//
// Parameters are realized float tensors that require gradients, initialized with PyTorch's formulas
// (the values differ: ugpu's counter-based generator, the same on every device, is not PyTorch's).
// A layer's state (BatchNorm2d's running statistics) is listed by state() with the parameters, under
// PyTorch's names, so that save/load (llm/checkpoint.h) covers it.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "tensor/tensor.h"

namespace ugpu::tensor::nn {

// Named tensors, in a fixed order: "weight", "bias", "running_mean", ...
using Params = std::vector<std::pair<std::string, Tensor>>;

// ---- initializers (a new realized tensor; `seed` picks the values) ----
// U(-bound, bound); N(0, std).
Tensor uniform(Shape shape, double bound, uint64_t seed, DType dtype = dtypes::float32, const std::string& device = "");
Tensor normal(Shape shape, double std, uint64_t seed, DType dtype = dtypes::float32, const std::string& device = "");
// fan_in and fan_out of a weight: [out, in, k...] -> in * prod(k), out * prod(k).
std::pair<int64_t, int64_t> fans(const Shape& weight);
// PyTorch's kaiming_uniform_(a) (bound = gain * sqrt(3 / fan_in), gain = sqrt(2 / (1 + a^2))) and
// xavier_uniform_ (bound = sqrt(6 / (fan_in + fan_out))), kaiming_normal_ (std = sqrt(2 / fan_in)).
Tensor kaiming_uniform(Shape shape, uint64_t seed, double a = 0, DType dtype = dtypes::float32, const std::string& device = "");
Tensor kaiming_normal(Shape shape, uint64_t seed, DType dtype = dtypes::float32, const std::string& device = "");
Tensor xavier_uniform(Shape shape, uint64_t seed, DType dtype = dtypes::float32, const std::string& device = "");

// What every layer lists: its tensors under their names.
struct Module {
  virtual ~Module() = default;
  virtual Params state() const = 0;
};
// Every layer's state(), each name prefixed "name.".
Params parameters(std::initializer_list<std::pair<std::string, const Module*>> layers);
// The tensors of `p` that require gradients (the parameters, without running statistics).
std::vector<Tensor> trainable(const Params& p);

// y = x @ weight.T + bias; weight [out, in] and bias [out] as torch.nn.Linear (kaiming_uniform with
// a = sqrt(5), bias U(+-1/sqrt(in))).
struct Linear : Module {
  Tensor weight, bias;
  Linear(int64_t in, int64_t out, uint64_t seed, bool with_bias = true, DType dtype = dtypes::float32, const std::string& device = "");
  Tensor operator()(const Tensor& x) const { return x.linear(weight, bias); }
  Params state() const override;
};

// torch.nn.Conv2d: weight [out, in / groups, kH, kW], bias [out].
struct Conv2d : Module {
  Tensor weight, bias;
  Pair stride, padding, dilation;
  int64_t groups;
  Conv2d(int64_t in, int64_t out, Pair kernel, uint64_t seed, Pair stride = {1, 1}, Pair padding = {0, 0}, Pair dilation = {1, 1}, int64_t groups = 1,
         bool with_bias = true, DType dtype = dtypes::float32, const std::string& device = "");
  Tensor operator()(const Tensor& x) const { return x.conv2d(weight, bias, stride, padding, dilation, groups); }
  Params state() const override;
};

// torch.nn.BatchNorm2d over x [N, C, H, W]. Training (the default): normalizes with the batch's
// statistics and updates running_mean/running_var (unbiased variance) by `momentum` — lazily, in the
// realize that computes the output's gradient or value. eval(): normalizes with the running ones.
struct BatchNorm2d : Module {
  Tensor weight, bias, running_mean, running_var, num_batches_tracked;
  double eps, momentum;
  bool training = true;
  explicit BatchNorm2d(int64_t channels, double eps = 1e-5, double momentum = 0.1, DType dtype = dtypes::float32, const std::string& device = "");
  Tensor operator()(const Tensor& x);
  Params state() const override;
};

// torch.nn.LayerNorm over the last axis (weight 1, bias 0).
struct LayerNorm : Module {
  Tensor weight, bias;
  double eps;
  explicit LayerNorm(int64_t dim, double eps = 1e-5, bool affine = true, DType dtype = dtypes::float32, const std::string& device = "");
  Tensor operator()(const Tensor& x) const { return x.layer_norm(weight, bias, eps); }
  Params state() const override;
};

// x * rsqrt(mean(x^2) + eps) * weight over the last axis (weight 1).
struct RMSNorm : Module {
  Tensor weight;
  double eps;
  explicit RMSNorm(int64_t dim, double eps = 1e-6, DType dtype = dtypes::float32, const std::string& device = "");
  Tensor operator()(const Tensor& x) const { return x.rms_norm(weight, eps); }
  Params state() const override;
};

// torch.nn.Embedding: weight [vocab, dim] ~ N(0, 1); ids of any shape give [..., dim].
struct Embedding : Module {
  Tensor weight;
  Embedding(int64_t vocab, int64_t dim, uint64_t seed, DType dtype = dtypes::float32, const std::string& device = "");
  Tensor operator()(const Tensor& ids) const { return weight.embedding(ids); }
  Params state() const override;
};

// Inverted dropout: in training, each element is kept with probability 1 - p and scaled by 1/(1 - p).
// The mask comes from the counter-based generator with seed (seed, call number): the same on every
// device, a new one per call. Inside a Jit the mask of the captured call is replayed.
struct Dropout {
  double p;
  uint64_t seed;
  uint64_t calls = 0;
  bool training = true;
  explicit Dropout(double p = 0.5, uint64_t seed = 0) : p(p), seed(seed) {}
  Tensor operator()(const Tensor& x);
};

// ---- losses (mean over the batch unless said otherwise) ----
// logits [N, C] (or [N, C, ...] with target [N, ...]), target int [N]: -log_softmax at the target,
// with label smoothing s: (1 - s) * that + s * mean over classes of -log_softmax; targets equal to
// ignore_index count for nothing (the mean is over the others), as torch.nn.functional.cross_entropy.
Tensor cross_entropy(const Tensor& logits, const Tensor& target, double label_smoothing = 0, int64_t ignore_index = -100);
Tensor mse_loss(const Tensor& x, const Tensor& target);
// p in (0, 1), target of the same shape; log clamped at -100 as PyTorch.
Tensor binary_cross_entropy(const Tensor& p, const Tensor& target);
Tensor binary_cross_entropy_with_logits(const Tensor& logits, const Tensor& target);

}  // namespace ugpu::tensor::nn
