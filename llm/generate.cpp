// Prefill, Jit decode steps, sampling and chat prompts (llm/generate.h).
#include "llm/generate.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <random>

#include "common/error.h"
#include "hcq/device.h"

namespace ugpu::llm {
using tensor::Tensor;
namespace dt = tensor::dtypes;

namespace {
double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// A 32-bit integer hash with good avalanche (xor-shift-multiply), on the host and as tensor ops.
uint32_t hash32(uint32_t x) {
  x ^= x >> 16, x *= 0x7feb352du, x ^= x >> 15, x *= 0x846ca68bu, x ^= x >> 16;
  return x;
}
Tensor hash32(Tensor x) {
  x = x.bitwise_xor(x.rshift(16)) * double(0x7feb352du);
  x = x.bitwise_xor(x.rshift(15)) * double(0x846ca68bu);
  return x.bitwise_xor(x.rshift(16));
}
}  // namespace

Generator::Generator(Model& m, SamplingOptions o) : m_(m), o_(o), host_rng_(o.seed) {
  if (o_.temperature < 0 || o_.top_k < 0 || !(o_.top_p > 0 && o_.top_p <= 1))
    throw Error("sampling: the temperature and top-k must not be negative and top-p must be in (0, 1]");
  jit_ = std::make_unique<tensor::Jit>([this](const std::vector<Tensor>& in, const tensor::Jit::Vars& v) {
    Tensor pos = Tensor::variable("pos", 0, m_.max_context() - 1, v.at("pos"), m_.device());
    Tensor logits = m_.forward(in[0], pos);
    return std::vector<Tensor>{sample_on_device(logits, pos).realize(), logits};
  });
}
Generator::~Generator() = default;

Tensor Generator::sample_on_device(const Tensor& logits, const Tensor& pos) const {
  if (o_.temperature <= 0) return logits.argmax().reshape({1});
  // Gumbel-max: argmax(logits / T + g) with g = -log(-log(u)) is a draw from softmax(logits / T).
  // u comes from a hash of (seed, position, token index), so each step draws fresh noise.
  int64_t V = logits.shape()[0];
  uint32_t key = hash32(static_cast<uint32_t>(o_.seed) ^ hash32(static_cast<uint32_t>(o_.seed >> 32) + 0x9e3779b9u));
  Tensor ctr = Tensor::arange(V, dt::uint32, m_.device()) + pos.cast(dt::uint32) * double(V);
  Tensor x = hash32(hash32(ctr).bitwise_xor(Tensor::full({}, key, dt::uint32, m_.device())));
  Tensor u = (x.rshift(8).cast(dt::float32) + 0.5) * (1.0 / 16777216.0);
  Tensor g = -(-u.log()).log();
  return (logits * (1 / o_.temperature) + g).argmax().reshape({1});
}

int32_t Generator::sample(const Tensor& logits, const Tensor& next) {
  last_logits_ = logits;
  if (o_.temperature <= 0 || (o_.top_k == 0 && o_.top_p >= 1)) return next.to_vector<int32_t>()[0];
  // Top-k / top-p: filtered and drawn on the host from the logits read back.
  std::vector<float> l = logits.to_vector<float>();
  std::vector<int32_t> order(l.size());
  std::iota(order.begin(), order.end(), 0);
  size_t k = o_.top_k > 0 ? std::min<size_t>(static_cast<size_t>(o_.top_k), l.size()) : l.size();
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k), order.end(), [&](int32_t a, int32_t b) { return l[a] > l[b]; });
  order.resize(k);
  std::vector<double> p(k);
  double z = 0;
  for (size_t i = 0; i < k; ++i) z += (p[i] = std::exp((l[order[i]] - l[order[0]]) / o_.temperature));
  double cum = 0;
  size_t keep = k;
  for (size_t i = 0; i < k; ++i) {
    cum += p[i] / z;
    if (cum >= o_.top_p) {
      keep = i + 1;
      break;
    }
  }
  std::mt19937_64 rng(host_rng_);
  host_rng_ = rng();
  std::discrete_distribution<size_t> pick(p.begin(), p.begin() + static_cast<std::ptrdiff_t>(keep));
  return order[pick(rng)];
}

int32_t Generator::prefill(std::span<const int32_t> tokens) {
  if (tokens.empty()) throw Error("prefill: no tokens");
  int64_t n = static_cast<int64_t>(tokens.size());
  if (pos_ + n > m_.max_context())
    throw Error("the prompt needs " + std::to_string(pos_ + n) + " positions; the context holds " + std::to_string(m_.max_context()) +
                " (raise it with --context)");
  for (int32_t t : tokens)
    if (t < 0 || t >= m_.config().vocab)
      throw Error("token id " + std::to_string(t) + " is outside the vocabulary of " + std::to_string(m_.config().vocab));
  Tensor ids = Tensor::from(std::vector<int32_t>(tokens.begin(), tokens.end()), {n}, m_.device());
  // The start as a variable: a chat's later turns (same length, another start) reuse the kernels.
  Tensor pos = Tensor::variable("start", 0, m_.max_context() - 1, pos_, m_.device());
  Tensor logits = m_.forward(ids, pos);
  Tensor next = sample_on_device(logits, pos + static_cast<double>(n - 1)).realize();
  pos_ += n;
  return sample(logits, next);
}

int32_t Generator::step(int32_t token) {
  if (pos_ >= m_.max_context()) throw Error("the context of " + std::to_string(m_.max_context()) + " positions is full");
  if (token < 0 || token >= m_.config().vocab) throw Error("token id " + std::to_string(token) + " is outside the vocabulary");
  std::vector<Tensor> out = (*jit_)({Tensor::from(std::vector<int32_t>{token}, {1}, m_.device())}, {{"pos", pos_}});
  ++pos_;
  return sample(out[1], out[0]);
}

std::vector<float> Generator::last_logits() const {
  if (!last_logits_.defined()) throw Error("no token has been generated yet");
  return last_logits_.to_vector<float>();
}

GenerateStats Generator::generate(std::span<const int32_t> prompt, int64_t n, const std::function<bool(int32_t)>& on_token) {
  GenerateStats s;
  s.prompt_tokens = static_cast<int64_t>(prompt.size());
  hcq::Device& dev = tensor::device(m_.device());
  auto note_memory = [&] { s.peak_device_bytes = static_cast<int64_t>(dev.memory_stats().peak_bytes); };
  if (n <= 0) return s;
  auto t0 = std::chrono::steady_clock::now();
  int32_t tok = prefill(prompt);
  s.prefill_s = s.first_token_s = seconds_since(t0);
  note_memory();
  s.generated = 1;
  bool go = on_token(tok);
  auto t1 = std::chrono::steady_clock::now();
  while (go && s.generated < n && pos_ < m_.max_context()) {
    tok = step(tok);
    ++s.generated;
    go = on_token(tok);
  }
  s.decode_s = seconds_since(t1);
  note_memory();
  return s;
}

// ---- chat -------------------------------------------------------------------------------------------

ChatFormat chat_format(const GgufFile& f) {
  const GgufValue* t = f.find("tokenizer.chat_template");
  if (!t || t->type != GgufValue::Type::String) throw Error("the file has no chat template (tokenizer.chat_template); use --prompt without --chat");
  const std::string& s = t->as_string();
  if (s.find("<|start_header_id|>") != std::string::npos) return ChatFormat::Llama3;
  if (s.find("<|im_start|>") != std::string::npos) return ChatFormat::ChatML;
  if (s.find("[INST]") != std::string::npos) return ChatFormat::Mistral;
  throw Error("the file's chat template is of a form ugpu does not know (it knows llama-3, ChatML and [INST] templates)");
}

std::string chat_prompt(ChatFormat fmt, std::span<const ChatMessage> messages, bool add_assistant_header) {
  std::string out;
  switch (fmt) {
    case ChatFormat::Llama3:
      for (const ChatMessage& m : messages) out += "<|start_header_id|>" + m.role + "<|end_header_id|>\n\n" + m.content + "<|eot_id|>";
      if (add_assistant_header) out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
      break;
    case ChatFormat::ChatML:
      for (const ChatMessage& m : messages) out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
      if (add_assistant_header) out += "<|im_start|>assistant\n";
      break;
    case ChatFormat::Mistral: {
      std::string system;
      for (const ChatMessage& m : messages) {
        if (m.role == "system") system += m.content + "\n\n";
        else if (m.role == "user") out += "[INST] " + system + m.content + " [/INST]", system.clear();
        else out += m.content + "</s>";
      }
      break;
    }
  }
  return out;
}

std::string chat_continuation(ChatFormat fmt, std::span<const ChatMessage> messages, const ChatMessage& next) {
  if (messages.empty() || messages.back().role != "assistant") throw Error("chat_continuation: the conversation must end with a reply");
  const std::string marker = "\x01ugpu-reply-end\x01";
  std::vector<ChatMessage> m(messages.begin(), messages.end());
  m.back().content = marker;
  m.push_back(next);
  std::string full = chat_prompt(fmt, m, true);
  return full.substr(full.find(marker) + marker.size());
}

}  // namespace ugpu::llm
