// The llama family as tensor graphs (llm/model.h).
#include "llm/model.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <optional>
#include <span>

#include "common/error.h"
#include "hcq/device.h"

namespace ugpu::llm {
using tensor::Axes;
using tensor::Tensor;
namespace dt = tensor::dtypes;

namespace {

// What differs between the architectures ugpu runs (the metadata keys are the same for all).
struct ArchInfo {
  const char* name;
  bool rope_neox, qkv_bias, qk_norm;
};
constexpr ArchInfo kArchs[] = {
    {"llama", false, false, false},
    {"qwen2", true, true, false},
    {"qwen3", true, false, true},
};

int64_t meta_int(const GgufFile& f, const std::string& key, std::optional<int64_t> fallback) {
  const GgufValue* v = f.find(key);
  if (!v) {
    if (fallback) return *fallback;
    throw Error("the file has no '" + key + "' (the model's configuration needs it)");
  }
  if (v->type == GgufValue::Type::Array) throw Error("'" + key + "' is an array (a value per layer); ugpu needs one value for all layers");
  try {
    return v->as_int();
  } catch (const Error& e) { throw Error("'" + key + "': " + e.what()); }
}

double meta_float(const GgufFile& f, const std::string& key, double fallback) {
  const GgufValue* v = f.find(key);
  try {
    return v ? v->as_float() : fallback;
  } catch (const Error& e) { throw Error("'" + key + "': " + e.what()); }
}

}  // namespace

ModelConfig ModelConfig::from_gguf(const GgufFile& f) {
  const GgufValue* a = f.find("general.architecture");
  if (!a || a->type != GgufValue::Type::String) throw Error("the file has no 'general.architecture': it is not a model ugpu can run");
  ModelConfig c;
  c.arch = a->as_string();
  const ArchInfo* info = nullptr;
  for (const ArchInfo& i : kArchs)
    if (c.arch == i.name) info = &i;
  if (!info) throw Error("architecture '" + c.arch + "' is not supported (ugpu runs llama — which includes Mistral's files — qwen2 and qwen3)");
  c.rope_neox = info->rope_neox, c.qkv_bias = info->qkv_bias, c.qk_norm = info->qk_norm;
  // ugpu.rope.neox: which pairs RoPE rotates, when the file says. Models read from Hugging Face
  // directories (llm/safetensors.h) keep their q/k rows as trained, which rotate halves ("neox"),
  // where llama.cpp's converter permutes llama's rows to rotate adjacent pairs.
  if (const GgufValue* neox = f.find("ugpu.rope.neox")) {
    if (neox->type != GgufValue::Type::Bool) throw Error("'ugpu.rope.neox' must be a bool");
    c.rope_neox = neox->as_bool();
  }
  std::string p = c.arch + ".";
  c.dim = meta_int(f, p + "embedding_length", std::nullopt);
  c.layers = meta_int(f, p + "block_count", std::nullopt);
  c.ffn = meta_int(f, p + "feed_forward_length", std::nullopt);
  c.heads = meta_int(f, p + "attention.head_count", std::nullopt);
  c.kv_heads = meta_int(f, p + "attention.head_count_kv", c.heads);
  c.head_dim = meta_int(f, p + "attention.key_length", c.heads > 0 ? c.dim / c.heads : 0);
  c.rope_dims = meta_int(f, p + "rope.dimension_count", c.head_dim);
  c.context = meta_int(f, p + "context_length", 2048);
  c.rope_base = meta_float(f, p + "rope.freq_base", 10000);
  c.rms_eps = meta_float(f, p + "attention.layer_norm_rms_epsilon", 1e-5);
  if (const GgufValue* s = f.find(p + "rope.scaling.type"); s && s->type == GgufValue::Type::String && s->as_string() != "none") {
    if (s->as_string() != "linear") throw Error("RoPE scaling '" + s->as_string() + "' is not supported (ugpu supports none and linear)");
    double factor = meta_float(f, p + "rope.scaling.factor", 1);
    if (!(factor > 0)) throw Error("'" + p + "rope.scaling.factor' must be positive");
    c.rope_scale = 1 / factor;
  }
  const GgufTensor* embd = f.tensor("token_embd.weight");
  c.vocab = meta_int(f, p + "vocab_size", embd && embd->dims.size() == 2 ? std::optional<int64_t>(embd->dims[1]) : std::nullopt);
  auto positive = [&](int64_t v, const char* what) {
    if (v <= 0 || v > (int64_t{1} << 24)) throw Error(std::string("the model's ") + what + " is " + std::to_string(v) + ", outside 1..2^24");
  };
  positive(c.dim, "embedding length"), positive(c.layers, "block count"), positive(c.ffn, "feed-forward length");
  positive(c.heads, "head count"), positive(c.kv_heads, "key/value head count"), positive(c.head_dim, "head size");
  positive(c.vocab, "vocabulary size"), positive(c.context, "context length");
  if (c.heads % c.kv_heads)
    throw Error("the head count (" + std::to_string(c.heads) + ") is not a multiple of the key/value heads (" + std::to_string(c.kv_heads) + ")");
  if (c.rope_dims <= 0 || c.rope_dims > c.head_dim || c.rope_dims % 2)
    throw Error("the RoPE dimension count (" + std::to_string(c.rope_dims) + ") must be even and at most the head size (" +
                std::to_string(c.head_dim) + ")");
  if (!(c.rope_base > 0) || !(c.rms_eps >= 0)) throw Error("the RoPE base must be positive and the RMS epsilon not negative");
  return c;
}

std::string ModelConfig::describe() const {
  char b[256];
  std::snprintf(b, sizeof b, "%s: %ld layers, dim %ld, %ld heads (%ld kv, size %ld), ffn %ld, vocabulary %ld, context %ld", arch.c_str(),
                long(layers), long(dim), long(heads), long(kv_heads), long(head_dim), long(ffn), long(vocab), long(context));
  return b;
}

namespace {

std::string mib(int64_t bytes) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return b;
}

struct Loader {
  const GgufFile& f;
  const std::string& device;
  const Model::Progress& progress;
  size_t done = 0, total = 0;
  int64_t bytes = 0;

  // The tensor `name`, which must have the row-major shape `shape`.
  Weight get(const std::string& name, Axes shape, bool optional = false) {
    const GgufTensor* t = f.tensor(name);
    if (!t) {
      if (optional) return {};
      throw Error("tensor '" + name + "' is missing from the file");
    }
    Weight w = upload_weight(f, *t, device);
    if (Axes(w.shape.begin(), w.shape.end()) != shape) {
      std::string want, got;
      for (int64_t d : shape) want += (want.empty() ? "" : ", ") + std::to_string(d);
      for (int64_t d : w.shape) got += (got.empty() ? "" : ", ") + std::to_string(d);
      throw Error("tensor '" + name + "' is [" + got + "] (row-major); the configuration needs [" + want + "]");
    }
    bytes += w.bytes;
    ++done;
    if (progress) progress(done, total, bytes);
    return w;
  }
};

}  // namespace

Model Model::load(const GgufFile& f, const std::string& device, int64_t max_context, const Progress& progress) {
  Model m;
  m.cfg_ = ModelConfig::from_gguf(f);
  const ModelConfig& c = m.cfg_;
  m.device_ = device.empty() ? tensor::default_device() : device;
  m.max_context_ = max_context > 0 ? max_context : std::min<int64_t>(c.context, 4096);
  int64_t weights = 0;
  for (const GgufTensor& t : f.tensors) weights += static_cast<int64_t>(t.bytes);
  uint64_t memory = tensor::device(m.device_).info().memory;
  int64_t need = weights + m.cache_bytes();
  if (memory > 0 && static_cast<uint64_t>(need) > memory)
    throw Error("the model needs " + mib(need) + " of device memory (" + mib(weights) + " of weights, " + mib(m.cache_bytes()) + " of KV cache for " +
                std::to_string(m.max_context_) + " positions); " + m.device_ + " has " + mib(static_cast<int64_t>(memory)));
  Loader l{f, m.device_, progress};
  l.total = f.tensors.size();
  int64_t qd = c.heads * c.head_dim, kvd = c.kv_heads * c.head_dim;
  m.token_embd_ = l.get("token_embd.weight", {c.vocab, c.dim});
  m.output_norm_ = l.get("output_norm.weight", {c.dim});
  m.output_ = l.get("output.weight", {c.vocab, c.dim}, true);
  if (!m.output_.defined()) m.output_ = m.token_embd_;  // tied embeddings
  for (int64_t i = 0; i < c.layers; ++i) {
    std::string b = "blk." + std::to_string(i) + ".";
    Layer L;
    L.attn_norm = l.get(b + "attn_norm.weight", {c.dim});
    L.wq = l.get(b + "attn_q.weight", {qd, c.dim});
    L.wk = l.get(b + "attn_k.weight", {kvd, c.dim});
    L.wv = l.get(b + "attn_v.weight", {kvd, c.dim});
    L.wo = l.get(b + "attn_output.weight", {c.dim, qd});
    if (c.qkv_bias) {
      L.bq = l.get(b + "attn_q.bias", {qd});
      L.bk = l.get(b + "attn_k.bias", {kvd});
      L.bv = l.get(b + "attn_v.bias", {kvd});
    }
    if (c.qk_norm) {
      L.q_norm = l.get(b + "attn_q_norm.weight", {c.head_dim});
      L.k_norm = l.get(b + "attn_k_norm.weight", {c.head_dim});
    }
    L.ffn_norm = l.get(b + "ffn_norm.weight", {c.dim});
    L.w_gate = l.get(b + "ffn_gate.weight", {c.ffn, c.dim});
    L.w_up = l.get(b + "ffn_up.weight", {c.ffn, c.dim});
    L.w_down = l.get(b + "ffn_down.weight", {c.dim, c.ffn});
    L.k_cache = Tensor::zeros({m.max_context_, c.kv_heads, c.head_dim}, dt::float32, m.device_).realize();
    L.v_cache = Tensor::zeros({m.max_context_, c.kv_heads, c.head_dim}, dt::float32, m.device_).realize();
    m.layers_.push_back(std::move(L));
  }
  m.weight_bytes_ = l.bytes;
  // Frequencies of the rotating pairs: base^(-2i/rope_dims), divided by llama 3's per-pair factors
  // when the file has them (rope_freqs.weight).
  int64_t half = c.rope_dims / 2;
  std::vector<float> inv(static_cast<size_t>(half));
  for (int64_t i = 0; i < half; ++i)
    inv[i] = static_cast<float>(std::pow(c.rope_base, -2.0 * static_cast<double>(i) / static_cast<double>(c.rope_dims)) * c.rope_scale);
  if (const GgufTensor* rf = f.tensor("rope_freqs.weight")) {
    if (rf->type != GgmlType::F32 || rf->elements() != half)
      throw Error("tensor 'rope_freqs.weight' must be F32 with " + std::to_string(half) + " values");
    std::span<const uint8_t> d = f.data(*rf);
    for (int64_t i = 0; i < half; ++i) {
      float factor;
      std::memcpy(&factor, d.data() + 4 * i, 4);
      if (!(factor > 0)) throw Error("tensor 'rope_freqs.weight' has a factor that is not positive");
      inv[i] /= factor;
    }
  }
  m.inv_freq_ = Tensor::from(inv, {half}, m.device_);
  return m;
}

int64_t Model::cache_bytes() const {
  // Each factor is at most 2^24 (checked): the product in 128 bits, capped where it means "too large".
  unsigned __int128 b = static_cast<unsigned __int128>(2 * 4) * static_cast<uint64_t>(cfg_.layers) * static_cast<uint64_t>(max_context_);
  b = b * static_cast<uint64_t>(cfg_.kv_heads) * static_cast<uint64_t>(cfg_.head_dim);
  return b > (static_cast<unsigned __int128>(1) << 62) ? int64_t{1} << 62 : static_cast<int64_t>(b);
}

namespace {

// x [T, heads, head_dim] turned by angle [T, 1, rope_dims/2] (the first rope_dims of each head).
Tensor rope(const Tensor& x, const Tensor& cos, const Tensor& sin, const ModelConfig& c) {
  int64_t T = x.shape()[0], nh = x.shape()[1], rd = c.rope_dims, half = rd / 2;
  Tensor rot = rd == c.head_dim ? x : x.slice(-1, 0, rd);
  Tensor x0, x1;
  if (c.rope_neox) {
    x0 = rot.slice(-1, 0, half), x1 = rot.slice(-1, half, rd);
  } else {
    Tensor pairs = rot.reshape({T, nh, half, 2});
    x0 = pairs.select(-1, 0), x1 = pairs.select(-1, 1);
  }
  Tensor y0 = x0 * cos - x1 * sin, y1 = x0 * sin + x1 * cos;
  Tensor y;
  if (c.rope_neox) {
    Tensor parts[] = {y0, y1};
    y = Tensor::cat(parts, -1);
  } else {
    Tensor parts[] = {y0, y1};
    y = Tensor::stack(parts, -1).reshape({T, nh, rd});
  }
  if (rd == c.head_dim) return y;
  Tensor parts[] = {y, x.slice(-1, rd, c.head_dim)};
  return Tensor::cat(parts, -1);
}

Tensor linear(const Tensor& x, const Weight& w, const Weight& bias = {}) {
  Tensor y = w.matmul_t(x);
  return bias.defined() ? y + bias.value() : y;
}

}  // namespace

Tensor Model::forward(const Tensor& tokens, int64_t start) {
  return forward(tokens, Tensor::full({}, static_cast<double>(start), dt::int32, device_));
}

Tensor Model::forward(const Tensor& tokens, const Tensor& start) {
  const ModelConfig& c = cfg_;
  if (tokens.ndim() != 1 || !tokens.dtype().is_int()) throw Error("Model::forward: tokens must be a 1-D integer tensor");
  int64_t T = tokens.shape()[0];
  if (T < 1 || T > max_context_)
    throw Error("Model::forward: " + std::to_string(T) + " tokens do not fit the context of " + std::to_string(max_context_));
  int64_t C = max_context_;
  Tensor pos = start.cast(dt::int32).reshape({1}) + Tensor::arange(T, dt::int32, device_);               // [T]
  Tensor angle = pos.cast(dt::float32).reshape({T, 1, 1}) * inv_freq_.reshape({1, 1, c.rope_dims / 2});  // [T, 1, rd/2]
  Tensor cos = angle.cos(), sin = angle.sin();
  Tensor visible = Tensor::arange(C, dt::int32, device_).reshape({1, C}).le(pos.reshape({T, 1}));  // [T, C]

  Tensor x = token_embd_.rows(tokens);  // [T, dim]
  std::vector<Tensor> roots;
  for (Layer& L : layers_) {
    Tensor h = x.rms_norm(L.attn_norm.value(), c.rms_eps);
    Tensor q = linear(h, L.wq, L.bq).reshape({T, c.heads, c.head_dim});
    Tensor k = linear(h, L.wk, L.bk).reshape({T, c.kv_heads, c.head_dim});
    Tensor v = linear(h, L.wv, L.bv).reshape({T, c.kv_heads, c.head_dim});
    if (c.qk_norm) q = q.rms_norm(L.q_norm.value(), c.rms_eps), k = k.rms_norm(L.k_norm.value(), c.rms_eps);
    q = rope(q, cos, sin, c), k = rope(k, cos, sin, c);
    L.k_cache.assign_at(0, pos, k);
    L.v_cache.assign_at(0, pos, v);
    roots.push_back(L.k_cache), roots.push_back(L.v_cache);
    Tensor o = q.permute({1, 0, 2}).scaled_dot_product_attention(L.k_cache.permute({1, 0, 2}), L.v_cache.permute({1, 0, 2}), visible);  // [H, T, D]
    x = x + linear(o.permute({1, 0, 2}).reshape({T, c.heads * c.head_dim}), L.wo);
    Tensor g = x.rms_norm(L.ffn_norm.value(), c.rms_eps);
    x = x + linear(linear(g, L.w_gate).silu() * linear(g, L.w_up), L.w_down);
  }
  Tensor last = T == 1 ? x : x.slice(0, T - 1, T);
  Tensor logits = linear(last.rms_norm(output_norm_.value(), c.rms_eps), output_).reshape({c.vocab});
  roots.insert(roots.begin(), logits);
  Tensor::realize(roots);
  return roots[0];
}

}  // namespace ugpu::llm
