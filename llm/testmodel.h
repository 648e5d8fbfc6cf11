// Small random-weight models in GGUF files that llama.cpp loads and runs: the models the LLM path
// is tested on (no real weights are downloaded). Each file carries what llama.cpp's converter and
// quantizer write for the architecture: its metadata keys, tensor names, shapes and types, and a
// valid tokenizer trained here on a built-in English text.
//
// Architectures:
//   llama    general.architecture "llama"; SentencePiece vocabulary ("llama") by default.
//   mistral  a Mistral-style llama: llama.cpp has no "mistral" architecture, and Mistral's files are
//            "llama" ones; the name and the [INST] chat template differ.
//   qwen2    "qwen2": biases on attn_q/k/v; byte-level BPE vocabulary ("gpt2", pre "qwen2").
//   qwen3    "qwen3": RMS norms on each head of q and k (attn_q_norm/attn_k_norm), no biases, and
//            attention.key_length/value_length always written.
// Weights are pseudo-random, seeded by spec.seed and the tensor's name (splitmix64, Box-Muller):
// matrices and embeddings N(0, 1/fan_in), attn_output and ffn_down twice that, norm weights uniform
// in [0.9, 1.1], biases N(0, 0.04). Activations stay O(1) and the logits spread over a few units.
// Types: f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1 q4_k q5_k q6_k put every matrix in that type (as
// llama-quantize --pure does); q4_k_m is llama-quantize's Q4_K_M mix: Q4_K, with Q6_K for the output
// matrix (for token_embd when the output is tied to it) and for attn_v and ffn_down of the layers
// llama.cpp's use_more_bits picks (the first and last eighth, and every third one between). Norm
// weights and biases are F32 always.
//
// Tokenizers:
//   llama        SentencePiece: <unk> <s> </s>, the 256 byte tokens <0x00>..<0xFF> (type byte), then
//                pieces ("▁the", "ing", ...) scored so that earlier-learned merges score higher, and
//                the single characters of the text last. bos <s>, eos </s>, unk <unk>; add_bos.
//   gpt2         byte-level BPE with pre-tokenizer "qwen2": the 256 byte characters in GPT-2's order,
//                the merged tokens in merge order, then <|endoftext|> <|im_start|> <|im_end|>
//                (control); bos = pad = <|endoftext|>, eos <|im_end|>, no add_bos; a ChatML template
//                (Qwen2-Instruct's, with its default system prompt, on qwen2; a plain one otherwise).
//   gpt2-llama3  byte-level BPE with pre-tokenizer "llama-bpe": specials <|begin_of_text|>
//                <|end_of_text|> <|start_header_id|> <|end_header_id|> <|eot_id|>; bos
//                <|begin_of_text|>, eos <|eot_id|>, add_bos; the Llama-3 chat template.
// When the text runs out of pairs before the vocabulary is full, further tokens join a word-start
// token and a word-piece token (each still one merge of two earlier tokens).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ugpu::llm {

struct TestModelSpec {
  std::string arch = "llama";   // llama, mistral, qwen2, qwen3
  std::string weights = "f32";  // f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1 q4_k q5_k q6_k q4_k_m
  std::string tokenizer = "";   // "" = the arch's usual (llama/mistral: "llama"; qwen2/qwen3: "gpt2"), or "gpt2-llama3"
  int64_t dim = 256, layers = 2, heads = 4, kv_heads = 2, ffn = 512, vocab = 512, context = 256;
  int64_t head_dim = 0;  // 0 = dim / heads
  double rope_base = 10000, rms_eps = 1e-5;
  bool tied_output = false;  // no output.weight: the head reuses token_embd
  uint64_t seed = 1;
};

// Throw Error on a bad spec, naming the field ("TestModelSpec.ffn: ...").
void write_test_model(const TestModelSpec& spec, const std::string& path);
std::vector<uint8_t> test_model_bytes(const TestModelSpec& spec);

// The English text the tokenizers are trained on (prompts made of it tokenize into long pieces).
std::string_view test_model_text();

}  // namespace ugpu::llm
