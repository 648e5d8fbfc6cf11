// Decoder-only transformers from GGUF files, as tensor graphs (docs/llm.md): the llama family —
// llama 2 and 3 and Mistral (whose files are "llama" ones), qwen2 (q/k/v biases), qwen3 (per-head
// q/k RMS norms) — with RoPE, grouped
// query attention, SwiGLU, and a KV cache in device memory written in place.
//
//   GgufFile f = GgufFile::open("model.gguf");
//   Model m = Model::load(f, "cpu", /*max_context*/ 512);
//   Tensor logits = m.forward(tokens /*int32 [n]*/, /*start*/ 0);   // [vocab], the last token's
//
// forward() writes the keys and values of its tokens into the cache at positions start..start+n-1
// and attends over positions 0..start+n-1; the cache is realized with the result, so the next call
// continues from it. A decode step (n = 1) takes its position as the variable "pos", so one Jit
// replays every step (llm/generate.h).
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "llm/gguf.h"
#include "llm/weights.h"
#include "tensor/tensor.h"

namespace ugpu::llm {

struct ModelConfig {
  std::string arch;
  int64_t dim = 0, layers = 0, heads = 0, kv_heads = 0, head_dim = 0, ffn = 0, vocab = 0, context = 0;
  int64_t rope_dims = 0;  // the leading dimensions of each head that rotate
  double rope_base = 10000, rope_scale = 1, rms_eps = 1e-5;
  bool rope_neox = false;  // pairs (i, i + rope_dims/2), else (2i, 2i + 1)
  bool qkv_bias = false;   // qwen2
  bool qk_norm = false;    // qwen3

  // From `general.architecture` and the `{arch}.*` keys llama.cpp writes. Error: an architecture ugpu
  // does not run (named), a key missing or out of range (named).
  static ModelConfig from_gguf(const GgufFile& f);
  std::string describe() const;  // one line for the CLI
};

struct Layer {
  Weight attn_norm, wq, wk, wv, wo, bq, bk, bv, q_norm, k_norm, ffn_norm, w_gate, w_up, w_down;
  tensor::Tensor k_cache, v_cache;  // float32 [max_context, kv_heads, head_dim]
};

class Model {
 public:
  using Progress = std::function<void(size_t done, size_t total, int64_t bytes)>;
  // Uploads every weight to `device` (quantized blocks stay quantized) and allocates the KV cache for
  // max_context positions (0: the file's context length, at most 4096). Error: a missing tensor (named),
  // a tensor whose shape does not match the configuration, an unsupported tensor type, a model larger
  // than the device's memory (both sizes).
  static Model load(const GgufFile& f, const std::string& device, int64_t max_context = 0, const Progress& progress = {});

  const ModelConfig& config() const { return cfg_; }
  const std::string& device() const { return device_; }
  int64_t max_context() const { return max_context_; }
  int64_t weight_bytes() const { return weight_bytes_; }
  int64_t cache_bytes() const;

  // tokens: int32 [n] on the model's device. start: the position of the first token (a constant for
  // prefill, or Tensor::variable("pos", ...) for a decode step). Returns float32 [vocab] logits of the
  // last token; the cache writes are realized with it.
  tensor::Tensor forward(const tensor::Tensor& tokens, const tensor::Tensor& start);
  tensor::Tensor forward(const tensor::Tensor& tokens, int64_t start);

 private:
  ModelConfig cfg_;
  std::string device_;
  int64_t max_context_ = 0, weight_bytes_ = 0;
  Weight token_embd_, output_norm_, output_;
  tensor::Tensor inv_freq_;  // float32 [rope_dims / 2]
  std::vector<Layer> layers_;
};

}  // namespace ugpu::llm
