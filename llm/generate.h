// Text generation: prefill, decode steps replayed by one Jit, sampling on the device, chat
// templates (docs/llm.md).
//
//   Model m = Model::load(f, device);
//   Tokenizer tok = Tokenizer::from_gguf(f);
//   Generator g(m, {.temperature = 0});
//   GenerateStats s = g.generate(tok.encode("Once upon a time"), 64, [&](int32_t id) {
//     std::fputs(tok.piece(id).c_str(), stdout);
//     return !tok.is_eog(id);  // false stops
//   });
//
// The prompt runs as one forward pass over all its tokens (one schedule, kernels compiled for its
// length); every following token is one replay of a Jit whose position is the variable "pos" and
// whose last kernel samples the next token on the device: greedy (argmax) at temperature 0, else the
// Gumbel-max trick (argmax of logits / T plus Gumbel noise from a counter hash of seed and position),
// which draws exactly from softmax(logits / T). With top-k or top-p the logits are read back and
// filtered and drawn on the host.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "llm/model.h"
#include "llm/tokenizer.h"
#include "tensor/jit.h"

namespace ugpu::llm {

struct SamplingOptions {
  double temperature = 0;  // 0: greedy
  int64_t top_k = 0;       // 0: off
  double top_p = 1;        // 1: off
  uint64_t seed = 0;
};

struct GenerateStats {
  int64_t prompt_tokens = 0, generated = 0;
  double prefill_s = 0, decode_s = 0, first_token_s = 0;  // first token: from the call to the first sampled token
  int64_t peak_device_bytes = 0;                          // the device's memory high-water mark so far (MemoryStats::peak_bytes)
  double prompt_tps() const { return prefill_s > 0 ? static_cast<double>(prompt_tokens) / prefill_s : 0; }
  double decode_tps() const { return decode_s > 0 && generated > 1 ? static_cast<double>(generated - 1) / decode_s : 0; }
};

class Generator {
 public:
  Generator(Model& m, SamplingOptions o = {});
  ~Generator();

  // Runs tokens from the current position (a chat's earlier turns stay in the cache) and returns the
  // next token. Error: past the model's context.
  int32_t prefill(std::span<const int32_t> tokens);
  // Feeds one token at the current position and returns the next.
  int32_t step(int32_t token);
  int64_t position() const { return pos_; }
  void reset() { pos_ = 0; }  // the cache is overwritten from position 0

  // prefill(prompt), then up to n - 1 steps; on_token sees each new token and returns false to stop.
  GenerateStats generate(std::span<const int32_t> prompt, int64_t n, const std::function<bool(int32_t)>& on_token);

  // The logits behind the last token returned (for tests and the oracle comparison).
  std::vector<float> last_logits() const;

 private:
  Model& m_;
  SamplingOptions o_;
  int64_t pos_ = 0;
  std::unique_ptr<tensor::Jit> jit_;
  tensor::Tensor last_logits_;
  uint64_t host_rng_;
  int32_t sample(const tensor::Tensor& logits, const tensor::Tensor& pos);
  tensor::Tensor sample_on_device(const tensor::Tensor& logits, const tensor::Tensor& pos) const;
};

// A chat prompt in the form the file's `tokenizer.chat_template` uses: llama-3
// (<|start_header_id|>), ChatML (<|im_start|>), or Mistral/llama-2 ([INST]). The Jinja template
// itself is not run: ugpu recognizes its form. Error: a template of none of these forms.
struct ChatMessage {
  std::string role;  // system, user, assistant
  std::string content;
};
enum class ChatFormat { Llama3, ChatML, Mistral };
ChatFormat chat_format(const GgufFile& f);
// The text for `messages`, ending with the assistant's header so the model answers next.
std::string chat_prompt(ChatFormat fmt, std::span<const ChatMessage> messages, bool add_assistant_header = true);
// What follows the last message — an assistant reply as the model generated it — when `next` is
// said: the reply's end marker, the new turn and the assistant's header. A chat feeds only this (the
// conversation before it stays in the KV cache, as the tokens that were generated, not re-encoded).
std::string chat_continuation(ChatFormat fmt, std::span<const ChatMessage> messages, const ChatMessage& next);

}  // namespace ugpu::llm
