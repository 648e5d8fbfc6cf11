// Weights decoded on the device against the host decoder, and the llama-family forward pass (prefill
// and decode steps through the KV cache) against a host reference written here in double precision,
// for each architecture and on every device.
#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "common/error.h"
#include "llm/generate.h"
#include "llm/model.h"
#include "llm/quant.h"
#include "llm/testmodel.h"
#include "llm/weights.h"
#include "tests/tensor/host.h"

namespace ugpu::test {
namespace {
using llm::GgmlType;
namespace dt = tensor::dtypes;

TEST_CASE("weights: every format decoded on the device equals the host decoder") {
  std::mt19937 rng(3);
  std::normal_distribution<float> nd(0, 1);
  const int64_t rows = 3, cols = 512;
  std::vector<float> x(rows * cols);
  for (float& v : x) v = nd(rng);
  for (const std::string& dev : test_devices()) {
    for (GgmlType t : {GgmlType::F16, GgmlType::BF16, GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::Q4_K,
                       GgmlType::Q5_K, GgmlType::Q6_K}) {
      const llm::GgmlTypeInfo* info = llm::ggml_type_info(static_cast<uint32_t>(t));
      INFO("device " << dev << ", " << std::string(info->name));
      std::vector<uint8_t> q = llm::quantize(t, x);
      std::vector<float> want(x.size());
      llm::dequantize(t, q, want);
      llm::Weight w;
      w.type = t;
      w.shape = {rows, cols};
      if (info->block == 1) w.raw = Tensor::from_bytes(q, dt::uint16, {rows, cols}, dev);
      else w.raw = Tensor::from_bytes(q, dt::uint8, {rows, cols / info->block, info->bytes}, dev);
      std::vector<float> got = w.value().to_vector<float>();
      REQUIRE(got.size() == want.size());
      size_t bad = 0;
      for (size_t i = 0; i < got.size(); ++i) bad += got[i] != want[i];
      CHECK(bad == 0);
      // An embedding lookup decodes only the rows asked for.
      std::vector<float> picked = w.rows(Tensor::from(std::vector<int32_t>{2, 0}, {2}, dev)).to_vector<float>();
      CHECK(picked[5] == want[2 * cols + 5]);
      CHECK(picked[cols + 7] == want[7]);
    }
  }
}

// ---- the host reference -----------------------------------------------------------------------------

struct HostModel {
  llm::ModelConfig c;
  std::map<std::string, std::vector<float>> w;  // every tensor, decoded
  std::vector<double> inv_freq;

  explicit HostModel(const llm::GgufFile& f) : c(llm::ModelConfig::from_gguf(f)) {
    for (const llm::GgufTensor& t : f.tensors) {
      std::vector<float> v(static_cast<size_t>(t.elements()));
      llm::dequantize(t.type, f.data(t), v);
      w[t.name] = std::move(v);
    }
    if (!w.count("output.weight")) w["output.weight"] = w.at("token_embd.weight");
    for (int64_t i = 0; i < c.rope_dims / 2; ++i) inv_freq.push_back(std::pow(c.rope_base, -2.0 * double(i) / double(c.rope_dims)));
  }
  const std::vector<float>& at(const std::string& n) const { return w.at(n); }
  bool has(const std::string& n) const { return w.count(n) > 0; }

  // y = W x (+ b), W [out, in] row-major.
  std::vector<double> matvec(const std::string& n, const std::vector<double>& x, const std::string& bias = "") const {
    const std::vector<float>& W = at(n);
    size_t in = x.size(), out = W.size() / in;
    std::vector<double> y(out);
    for (size_t o = 0; o < out; ++o) {
      double s = bias.empty() ? 0 : at(bias)[o];
      for (size_t i = 0; i < in; ++i) s += double(W[o * in + i]) * x[i];
      y[o] = s;
    }
    return y;
  }
  std::vector<double> rmsnorm(const std::vector<double>& x, const std::vector<float>& g, size_t off = 0, size_t n = 0) const {
    if (!n) n = x.size();
    double ss = 0;
    for (size_t i = 0; i < n; ++i) ss += x[off + i] * x[off + i];
    double r = 1 / std::sqrt(ss / double(n) + c.rms_eps);
    std::vector<double> y(n);
    for (size_t i = 0; i < n; ++i) y[i] = x[off + i] * r * g[i];
    return y;
  }
  void rope(std::vector<double>& v, int64_t heads, int64_t pos) const {
    int64_t D = c.head_dim, half = c.rope_dims / 2;
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t i = 0; i < half; ++i) {
        double th = double(pos) * inv_freq[i], cs = std::cos(th), sn = std::sin(th);
        int64_t a = c.rope_neox ? i : 2 * i, b = c.rope_neox ? i + half : 2 * i + 1;
        double x0 = v[h * D + a], x1 = v[h * D + b];
        v[h * D + a] = x0 * cs - x1 * sn;
        v[h * D + b] = x0 * sn + x1 * cs;
      }
  }

  std::vector<double> logits(const std::vector<int32_t>& toks) const {
    int64_t T = int64_t(toks.size()), D = c.head_dim, dim = c.dim;
    std::vector<std::vector<double>> x(T);
    for (int64_t t = 0; t < T; ++t)
      x[t].assign(at("token_embd.weight").begin() + toks[t] * dim, at("token_embd.weight").begin() + (toks[t] + 1) * dim);
    for (int64_t l = 0; l < c.layers; ++l) {
      std::string b = "blk." + std::to_string(l) + ".";
      std::vector<std::vector<double>> q(T), k(T), v(T);
      for (int64_t t = 0; t < T; ++t) {
        std::vector<double> h = rmsnorm(x[t], at(b + "attn_norm.weight"));
        q[t] = matvec(b + "attn_q.weight", h, c.qkv_bias ? b + "attn_q.bias" : "");
        k[t] = matvec(b + "attn_k.weight", h, c.qkv_bias ? b + "attn_k.bias" : "");
        v[t] = matvec(b + "attn_v.weight", h, c.qkv_bias ? b + "attn_v.bias" : "");
        if (c.qk_norm) {
          for (int64_t hh = 0; hh < c.heads; ++hh) {
            auto n = rmsnorm(q[t], at(b + "attn_q_norm.weight"), hh * D, D);
            std::copy(n.begin(), n.end(), q[t].begin() + hh * D);
          }
          for (int64_t hh = 0; hh < c.kv_heads; ++hh) {
            auto n = rmsnorm(k[t], at(b + "attn_k_norm.weight"), hh * D, D);
            std::copy(n.begin(), n.end(), k[t].begin() + hh * D);
          }
        }
        rope(q[t], c.heads, t), rope(k[t], c.kv_heads, t);
      }
      for (int64_t t = 0; t < T; ++t) {
        std::vector<double> o(c.heads * D, 0);
        for (int64_t hh = 0; hh < c.heads; ++hh) {
          int64_t kh = hh / (c.heads / c.kv_heads);
          std::vector<double> s(t + 1);
          double mx = -1e300;
          for (int64_t j = 0; j <= t; ++j) {
            double d = 0;
            for (int64_t e = 0; e < D; ++e) d += q[t][hh * D + e] * k[j][kh * D + e];
            s[j] = d / std::sqrt(double(D));
            mx = std::max(mx, s[j]);
          }
          double z = 0;
          for (double& e : s) z += (e = std::exp(e - mx));
          for (int64_t j = 0; j <= t; ++j)
            for (int64_t e = 0; e < D; ++e) o[hh * D + e] += s[j] / z * v[j][kh * D + e];
        }
        std::vector<double> a = matvec(b + "attn_output.weight", o);
        for (int64_t i = 0; i < dim; ++i) x[t][i] += a[i];
        std::vector<double> g = rmsnorm(x[t], at(b + "ffn_norm.weight"));
        std::vector<double> gate = matvec(b + "ffn_gate.weight", g), up = matvec(b + "ffn_up.weight", g);
        for (size_t i = 0; i < gate.size(); ++i) gate[i] = gate[i] / (1 + std::exp(-gate[i])) * up[i];
        std::vector<double> dn = matvec(b + "ffn_down.weight", gate);
        for (int64_t i = 0; i < dim; ++i) x[t][i] += dn[i];
      }
    }
    return matvec("output.weight", rmsnorm(x[T - 1], at("output_norm.weight")));
  }
};

std::string temp_model(const llm::TestModelSpec& spec) {
  std::string path = "/tmp/ugpu_test_model_" + std::to_string(getpid()) + "_" + spec.arch + "_" + spec.weights + ".gguf";
  llm::write_test_model(spec, path);
  return path;
}

double max_abs_diff(const std::vector<float>& a, const std::vector<double>& b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(double(a[i]) - b[i]));
  return m;
}

TEST_CASE("model: prefill and decode steps match the host reference, for each architecture, on every device") {
  struct Case {
    const char* arch;
    const char* weights;
  };
  const Case cases[] = {{"llama", "q8_0"}, {"qwen2", "q4_k_m"}, {"qwen3", "f16"}};
  for (size_t ci = 0; ci < std::size(cases); ++ci) {
    const Case cs = cases[ci];
    llm::TestModelSpec spec;
    spec.arch = cs.arch, spec.weights = cs.weights;
    spec.dim = 256, spec.ffn = 256, spec.heads = 4, spec.kv_heads = 2, spec.layers = 2, spec.vocab = 384, spec.context = 64;
    std::string path = temp_model(spec);
    llm::GgufFile f = llm::GgufFile::open(path);
    HostModel host(f);
    std::vector<int32_t> toks{1, 17, 200, 45, 3, 99, 250, 8};
    const size_t prompt = 5;
    for (const std::string& dev : sample_devices(model_test_devices(), ci)) {  // one device each under UGPU_TEST_SAMPLE
      INFO(cs.arch << " " << cs.weights << " on " << dev);
      llm::Model m = llm::Model::load(f, dev, 16);
      std::vector<int32_t> p(toks.begin(), toks.begin() + prompt);
      std::vector<float> got = m.forward(Tensor::from(p, {int64_t(prompt)}, dev), 0).to_vector<float>();
      std::vector<double> want = host.logits(p);
      REQUIRE(got.size() == want.size());
      CHECK(max_abs_diff(got, want) < 2e-3);
      for (size_t s = prompt; s < toks.size(); ++s) {
        Tensor pos = Tensor::variable("pos", 0, m.max_context() - 1, int64_t(s), dev);
        got = m.forward(Tensor::from(std::vector<int32_t>{toks[s]}, {1}, dev), pos).to_vector<float>();
        want = host.logits(std::vector<int32_t>(toks.begin(), toks.begin() + s + 1));
        CHECK(max_abs_diff(got, want) < 2e-3);
      }
    }
    std::remove(path.c_str());
  }
}

TEST_CASE("sampling on the device: greedy is the argmax; the Gumbel draw follows the seed and spreads with the temperature") {
  llm::TestModelSpec spec;
  spec.arch = "llama", spec.weights = "q8_0", spec.dim = 256, spec.ffn = 256, spec.layers = 1, spec.vocab = 384, spec.context = 64;
  std::string path = temp_model(spec);
  llm::GgufFile f = llm::GgufFile::open(path);
  const std::vector<int32_t> prompt{1, 17, 200};
  for (const std::string& dev : sample_devices(model_test_devices(), 0)) {  // one device under UGPU_TEST_SAMPLE
    INFO("device " << dev);
    llm::Model m = llm::Model::load(f, dev, 32);
    auto run = [&](double temperature, uint64_t seed) {
      llm::Generator g(m, {.temperature = temperature, .seed = seed});
      std::vector<int32_t> out{g.prefill(prompt)};
      bool argmax = true;
      for (int i = 0; i < 16; ++i) {
        std::vector<float> l = g.last_logits();
        argmax = argmax && out.back() == int32_t(std::max_element(l.begin(), l.end()) - l.begin());
        out.push_back(g.step(out.back()));
      }
      return std::pair{out, argmax};
    };
    CHECK(run(0, 0).second);  // greedy: every token the argmax of its logits
    auto a = run(1, 1).first, b = run(1, 1).first, c = run(1, 2).first;
    CHECK(a == b);  // the same seed, the same draws
    CHECK(a != c);  // another seed, others
    // At a temperature far above the logits' spread the draw is near uniform over 384 tokens: 17 draws
    // repeat few (a constant or argmax-only sampler repeats all).
    std::vector<int32_t> hot = run(1000, 3).first;
    std::sort(hot.begin(), hot.end());
    CHECK(std::unique(hot.begin(), hot.end()) - hot.begin() >= 12);
  }
  std::remove(path.c_str());
}

}  // namespace
}  // namespace ugpu::test
