// The example models (tensor/examples.h): Tensor code and a host reference for each.
#include "tensor/examples.h"

#include <cmath>

#include "common/error.h"

namespace ugpu::tensor::examples {

// Widened to double on the host CPU: not every device has 64-bit floats (an Adreno has none).
HostArray to_host(const Tensor& t) { return {t.shape(), t.to("cpu").cast(dtypes::float64).to_vector<double>()}; }

namespace {

Tensor weight(Shape s, uint64_t seed, double scale, const std::string& device) {
  return (Tensor::randn(std::move(s), seed, dtypes::float32, device) * scale).realize();
}

// y[r, o] = sum_i x[r, i] * w[o, i] (+ b[o]), for x [rows, in], w [out, in].
std::vector<double> host_linear(const std::vector<double>& x, int64_t rows, int64_t in, const HostArray& w, const std::vector<double>* b = nullptr) {
  int64_t out = w.shape[0];
  std::vector<double> y(static_cast<size_t>(rows * out));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < out; ++o) {
      double s = b ? (*b)[o] : 0;
      for (int64_t i = 0; i < in; ++i) s += x[r * in + i] * w.v[o * in + i];
      y[r * out + o] = s;
    }
  return y;
}

std::vector<double> host_rms_norm(const std::vector<double>& x, int64_t rows, int64_t dim, const HostArray& w, double eps) {
  std::vector<double> y(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    double ss = 0;
    for (int64_t i = 0; i < dim; ++i) ss += x[r * dim + i] * x[r * dim + i];
    double k = 1 / std::sqrt(ss / static_cast<double>(dim) + eps);
    for (int64_t i = 0; i < dim; ++i) y[r * dim + i] = x[r * dim + i] * k * w.v[i];
  }
  return y;
}

}  // namespace

Mlp Mlp::random(int64_t in, int64_t hidden, int64_t classes, uint64_t seed, const std::string& device) {
  return Mlp{weight({hidden, in}, seed, 1 / std::sqrt(static_cast<double>(in)), device), weight({hidden}, seed + 1, 0.1, device),
             weight({classes, hidden}, seed + 2, 1 / std::sqrt(static_cast<double>(hidden)), device), weight({classes}, seed + 3, 0.1, device)};
}

Tensor Mlp::forward(const Tensor& x) const { return x.linear(w1, b1).relu().linear(w2, b2).log_softmax(-1); }

HostArray Mlp::reference(const HostArray& x) const {
  int64_t rows = x.shape[0], in = x.shape[1];
  HostArray W1 = to_host(w1), B1 = to_host(b1), W2 = to_host(w2), B2 = to_host(b2);
  std::vector<double> h = host_linear(x.v, rows, in, W1, &B1.v);
  for (double& v : h) v = std::max(v, 0.0);
  int64_t hidden = W1.shape[0], classes = W2.shape[0];
  std::vector<double> y = host_linear(h, rows, hidden, W2, &B2.v);
  for (int64_t r = 0; r < rows; ++r) {
    double m = -INFINITY, s = 0;
    for (int64_t c = 0; c < classes; ++c) m = std::max(m, y[r * classes + c]);
    for (int64_t c = 0; c < classes; ++c) s += std::exp(y[r * classes + c] - m);
    for (int64_t c = 0; c < classes; ++c) y[r * classes + c] -= m + std::log(s);
  }
  return {{rows, classes}, y};
}

TransformerBlock TransformerBlock::random(int64_t dim, int64_t heads, int64_t kv_heads, int64_t hidden, uint64_t seed, const std::string& device) {
  if (dim % heads || heads % kv_heads || (dim / heads) % 2)
    throw Error("transformer block: dim must split into heads of even size, and heads into kv_heads groups");
  int64_t hd = dim / heads;
  double s = 1 / std::sqrt(static_cast<double>(dim));
  TransformerBlock b;
  b.dim = dim, b.heads = heads, b.kv_heads = kv_heads, b.hidden = hidden;
  b.attn_norm = (1.0 + weight({dim}, seed, 0.1, device)).realize();
  b.wq = weight({dim, dim}, seed + 1, s, device);
  b.wk = weight({kv_heads * hd, dim}, seed + 2, s, device);
  b.wv = weight({kv_heads * hd, dim}, seed + 3, s, device);
  b.wo = weight({dim, dim}, seed + 4, s, device);
  b.ffn_norm = (1.0 + weight({dim}, seed + 5, 0.1, device)).realize();
  b.w1 = weight({hidden, dim}, seed + 6, s, device);
  b.w3 = weight({hidden, dim}, seed + 7, s, device);
  b.w2 = weight({dim, hidden}, seed + 8, 1 / std::sqrt(static_cast<double>(hidden)), device);
  return b;
}

Tensor TransformerBlock::forward(const Tensor& x) const {
  int64_t batch = x.shape()[0], t = x.shape()[1], hd = dim / heads;
  Tensor xn = x.rms_norm(attn_norm, eps);
  auto split_heads = [&](const Tensor& y, int64_t n) { return y.reshape({batch, t, n, hd}).transpose(1, 2); };  // [B, n, T, hd]
  Tensor q = split_heads(xn.linear(wq), heads).rotary_embedding(0, rope_base);
  Tensor k = split_heads(xn.linear(wk), kv_heads).rotary_embedding(0, rope_base);
  Tensor v = split_heads(xn.linear(wv), kv_heads);
  Tensor attn = q.scaled_dot_product_attention(k, v, {}, true).transpose(1, 2).reshape({batch, t, dim});
  Tensor h = x + attn.linear(wo);
  Tensor hn = h.rms_norm(ffn_norm, eps);
  return h + (hn.linear(w1).silu() * hn.linear(w3)).linear(w2);
}

HostArray TransformerBlock::reference(const HostArray& x) const {
  int64_t batch = x.shape[0], t = x.shape[1], hd = dim / heads, rows = batch * t, group = heads / kv_heads;
  HostArray an = to_host(attn_norm), fn = to_host(ffn_norm), Wq = to_host(wq), Wk = to_host(wk), Wv = to_host(wv), Wo = to_host(wo), W1 = to_host(w1),
            W2 = to_host(w2), W3 = to_host(w3);
  std::vector<double> xn = host_rms_norm(x.v, rows, dim, an, eps);
  std::vector<double> q = host_linear(xn, rows, dim, Wq), k = host_linear(xn, rows, dim, Wk), v = host_linear(xn, rows, dim, Wv);
  // Rotary embedding on q and k, per head, at position = token.
  auto rope = [&](std::vector<double>& y, int64_t n) {
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t h = 0; h < n; ++h)
        for (int64_t i = 0; i < hd / 2; ++i) {
          double ang = static_cast<double>(r % t) * std::pow(rope_base, -2.0 * static_cast<double>(i) / static_cast<double>(hd));
          double& a = y[(r * n + h) * hd + i];
          double& b = y[(r * n + h) * hd + i + hd / 2];
          double a0 = a, b0 = b;
          a = a0 * std::cos(ang) - b0 * std::sin(ang);
          b = b0 * std::cos(ang) + a0 * std::sin(ang);
        }
  };
  rope(q, heads);
  rope(k, kv_heads);
  std::vector<double> attn(static_cast<size_t>(rows * dim));
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t i = 0; i < t; ++i) {
        int64_t kh = h / group;
        std::vector<double> sc(static_cast<size_t>(i + 1));
        double m = -INFINITY, sum = 0;
        for (int64_t j = 0; j <= i; ++j) {
          double d = 0;
          for (int64_t e = 0; e < hd; ++e) d += q[((b * t + i) * heads + h) * hd + e] * k[((b * t + j) * kv_heads + kh) * hd + e];
          sc[j] = d / std::sqrt(static_cast<double>(hd));
          m = std::max(m, sc[j]);
        }
        for (double& s : sc) sum += (s = std::exp(s - m));
        for (int64_t e = 0; e < hd; ++e) {
          double acc = 0;
          for (int64_t j = 0; j <= i; ++j) acc += sc[j] / sum * v[((b * t + j) * kv_heads + kh) * hd + e];
          attn[((b * t + i) * heads + h) * hd + e] = acc;
        }
      }
  std::vector<double> o = host_linear(attn, rows, dim, Wo), h = x.v;
  for (size_t i = 0; i < h.size(); ++i) h[i] += o[i];
  std::vector<double> hn = host_rms_norm(h, rows, dim, fn, eps);
  std::vector<double> g = host_linear(hn, rows, dim, W1), u = host_linear(hn, rows, dim, W3);
  for (size_t i = 0; i < g.size(); ++i) g[i] = g[i] / (1 + std::exp(-g[i])) * u[i];
  std::vector<double> f = host_linear(g, rows, hidden, W2);
  for (size_t i = 0; i < h.size(); ++i) h[i] += f[i];
  return {x.shape, h};
}

// ---- training -------------------------------------------------------------------------------------

Dataset spiral(int64_t per_class, uint64_t seed) {
  Dataset d;
  uint64_t s = seed * 6364136223846793005ull + 1442695040888963407ull;
  for (int c = 0; c < 2; ++c)
    for (int64_t i = 0; i < per_class; ++i) {
      s = s * 6364136223846793005ull + 1442695040888963407ull;
      double noise = static_cast<double>(s >> 11) / 9007199254740992.0 - 0.5;
      double r = 0.1 + 0.9 * static_cast<double>(i) / static_cast<double>(per_class);
      double th = 2.5 * M_PI * r + c * M_PI + 0.15 * noise;
      d.x.push_back(static_cast<float>(r * std::cos(th)));
      d.x.push_back(static_cast<float>(r * std::sin(th)));
      d.y.push_back(c);
    }
  d.n = 2 * per_class;
  return d;
}

SpiralMlp::SpiralMlp(uint64_t seed, const std::string& device)
    : l1(2, 32, seed, true, dtypes::float32, device),
      l2(32, 32, seed + 1, true, dtypes::float32, device),
      l3(32, 2, seed + 2, true, dtypes::float32, device) {}

double accuracy(const Tensor& logits, const std::vector<int32_t>& labels) {
  std::vector<int32_t> p = logits.argmax(1).to_vector<int32_t>();
  if (p.size() != labels.size())
    throw Error("accuracy: " + std::to_string(p.size()) + " predictions for " + std::to_string(labels.size()) + " labels");
  int64_t ok = 0;
  for (size_t i = 0; i < p.size(); ++i) ok += p[i] == labels[i];
  return p.empty() ? 0 : static_cast<double>(ok) / static_cast<double>(p.size());
}

}  // namespace ugpu::tensor::examples
