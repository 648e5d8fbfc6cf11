// Two small models written with the Tensor API — an MLP and a llama-style transformer block — with
// weights from a seed, and the same computations in plain double-precision loops on the host. The
// demo, the tests and bench-tensor run them (docs/tensor.md quotes their kernel counts). And a small
// training run (docs/training.md): an MLP learning a two-class spiral.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "tensor/nn.h"
#include "tensor/tensor.h"

namespace ugpu::tensor::examples {

// Values of a tensor, row-major, as doubles (the host side of the examples).
struct HostArray {
  Shape shape;
  std::vector<double> v;
};
HostArray to_host(const Tensor& t);

// x [batch, in] -> linear -> relu -> linear -> log_softmax over the classes.
struct Mlp {
  Tensor w1, b1, w2, b2;  // w: [out, in] as nn.Linear
  static Mlp random(int64_t in, int64_t hidden, int64_t classes, uint64_t seed, const std::string& device = "");
  Tensor forward(const Tensor& x) const;
  HostArray reference(const HostArray& x) const;  // the same in double precision on the host
};

// A pre-norm decoder block as in llama: x + attention(rms_norm(x)), then h + swiglu(rms_norm(h)),
// with rotary position embedding on q and k, causal attention and grouped-query heads.
struct TransformerBlock {
  int64_t dim = 0, heads = 0, kv_heads = 0, hidden = 0;
  double rope_base = 10000, eps = 1e-5;
  Tensor attn_norm, wq, wk, wv, wo, ffn_norm, w1, w2, w3;
  static TransformerBlock random(int64_t dim, int64_t heads, int64_t kv_heads, int64_t hidden, uint64_t seed, const std::string& device = "");
  Tensor forward(const Tensor& x) const;  // x: [batch, tokens, dim]
  HostArray reference(const HostArray& x) const;
};

// Two interleaved spiral arms (1.25 turns each) of `per_class` points: x [2 * per_class, 2] float32,
// labels y [2 * per_class] int32 (0 and 1), generated from a seed.
struct Dataset {
  std::vector<float> x;
  std::vector<int32_t> y;
  int64_t n = 0;
};
Dataset spiral(int64_t per_class, uint64_t seed);

// 2 -> 32 -> 32 -> 2 with ReLU, nn::Linear layers (weights from a seed).
struct SpiralMlp {
  nn::Linear l1, l2, l3;
  SpiralMlp(uint64_t seed, const std::string& device = "");
  Tensor operator()(const Tensor& x) const { return l3(l2(l1(x).relu()).relu()); }
  nn::Params params() const { return nn::parameters({{"l1", &l1}, {"l2", &l2}, {"l3", &l3}}); }
};

// The fraction of rows whose largest logit is at their label.
double accuracy(const Tensor& logits, const std::vector<int32_t>& labels);

}  // namespace ugpu::tensor::examples
