// `ugpu llm`: text from a GGUF model on any device (docs/llm.md).
//   ugpu llm MODEL.gguf --prompt "..." [-n 128] [--device D] [--temperature T] [--top-k K] [--top-p P]
//            [--seed S] [--context C] [--chat [--system TEXT]]
//   ugpu llm --info MODEL.gguf
// Tokens stream to stdout as they are made; loading progress and the figures (prompt and decode
// tokens/s, time to first token, peak device memory) go to stderr. A file that cannot be used (not
// GGUF, truncated, an unknown architecture or tensor type, a missing tensor, too large for the
// device) is one line on stderr and exit code 2.
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "common/error.h"
#include "llm/generate.h"
#include "llm/gguf.h"
#include "llm/safetensors.h"
#include "llm/testmodel.h"
#include "tools/args.h"
#include "tools/demo.h"

namespace ugpu::tools {

namespace {

const char* kLlmUsage =
    "usage: ugpu llm MODEL.gguf --prompt TEXT [-n N] [--device D] [--temperature T] [--top-k K] [--top-p P] [--seed S] [--context C]\n"
    "       ugpu llm MODEL.gguf --chat [--system TEXT] [...]\n"
    "       ugpu llm --info MODEL.gguf\n"
    "       (MODEL.gguf may also be a Hugging Face model directory: config.json, safetensors F32/F16/BF16, tokenizer.json)\n"
    "       ugpu llm --make-test-model OUT.gguf [--arch llama|qwen2|qwen3|mistral] [--weights "
    "f32|f16|bf16|q8_0|q4_0|q4_1|q5_0|q5_1|q4_k|q5_k|q6_k|q4_k_m]\n"
    "                [--tokenizer llama|gpt2|gpt2-llama3] [--dim D] [--layers L] [--heads H] [--kv-heads K] [--ffn F] [--vocab V] [--context C]\n"
    "                [--seed S] [--tied]   (a random-weight model with a trained tokenizer, for trying ugpu without downloading one)\n";

// `--make-test-model OUT.gguf [options]`: llm/testmodel.h's generator from the command line.
int make_test_model(const std::vector<std::string>& args) {
  llm::TestModelSpec spec;
  std::string out;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> const std::string& {
      if (i + 1 >= args.size()) throw Error(a + " needs a value");
      return args[++i];
    };
    auto integer = [&](int64_t& field) { field = parse_integer(value(), a, 1, int64_t{1} << 24); };
    if (a == "--make-test-model") out = value();
    else if (a == "--arch") spec.arch = value();
    else if (a == "--weights") spec.weights = value();
    else if (a == "--tokenizer") spec.tokenizer = value();
    else if (a == "--dim") integer(spec.dim);
    else if (a == "--layers") integer(spec.layers);
    else if (a == "--heads") integer(spec.heads);
    else if (a == "--kv-heads") integer(spec.kv_heads);
    else if (a == "--ffn") integer(spec.ffn);
    else if (a == "--vocab") integer(spec.vocab);
    else if (a == "--context") integer(spec.context);
    else if (a == "--seed") spec.seed = static_cast<uint64_t>(parse_integer(value(), a, 0, INT64_MAX));
    else if (a == "--tied") spec.tied_output = true;
    else throw Error("--make-test-model: unknown option '" + a + "'");
  }
  llm::write_test_model(spec, out);
  std::fprintf(stderr, "wrote %s: %s %s, dim %ld, %ld layers, vocabulary %ld\n", out.c_str(), spec.arch.c_str(), spec.weights.c_str(), long(spec.dim),
               long(spec.layers), long(spec.vocab));
  return 0;
}

bool is_directory(const std::string& path) {
  struct stat st{};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// A GGUF file, or a Hugging Face directory read as one (llm/safetensors.h).
llm::GgufFile open_model(const std::string& path) { return is_directory(path) ? llm::load_hf_directory(path) : llm::GgufFile::open(path); }

int info_command(const std::string& path) {
  llm::GgufFile f = open_model(path);
  auto str = [&](const std::string& key) -> std::string {
    const llm::GgufValue* v = f.find(key);
    return v && v->type == llm::GgufValue::Type::String ? v->as_string() : "?";
  };
  if (is_directory(path)) {
    std::printf("directory: %s (Hugging Face, %zu bytes of safetensors)\n", path.c_str(), f.size());
  } else {
    std::printf("file: %s (%zu bytes, GGUF version %u, alignment %lu)\n", path.c_str(), f.size(), f.version, static_cast<unsigned long>(f.alignment));
  }
  std::string arch = str("general.architecture");
  std::printf("architecture: %s    name: %s\n", arch.c_str(), str("general.name").c_str());
  try {
    std::printf("configuration: %s\n", llm::ModelConfig::from_gguf(f).describe().c_str());
  } catch (const Error& e) { std::printf("configuration: not runnable by ugpu (%s)\n", e.what()); }
  int64_t params = 0;
  uint64_t bytes = 0;
  std::map<std::string, std::pair<int, uint64_t>> mix;  // type -> (tensors, bytes)
  for (const llm::GgufTensor& t : f.tensors) {
    params += t.elements();
    bytes += t.bytes;
    auto& m = mix[llm::ggml_type_info(static_cast<uint32_t>(t.type))->name];
    m.first += 1, m.second += t.bytes;
  }
  std::printf("tensors: %zu, %.3f billion parameters, %.1f MiB of weights (%.2f bits per parameter)\n", f.tensors.size(),
              static_cast<double>(params) / 1e9, static_cast<double>(bytes) / (1 << 20),
              params ? 8.0 * static_cast<double>(bytes) / static_cast<double>(params) : 0.0);
  std::printf("quantization:");
  for (const auto& [type, m] : mix) std::printf(" %s %d tensors (%.1f MiB);", type.c_str(), m.first, static_cast<double>(m.second) / (1 << 20));
  std::printf("\n");
  const llm::GgufValue* tokens = f.find("tokenizer.ggml.tokens");
  std::printf("tokenizer: %s (pre-tokenizer %s), %zu tokens\n", str("tokenizer.ggml.model").c_str(), str("tokenizer.ggml.pre").c_str(),
              tokens && tokens->type == llm::GgufValue::Type::Array ? tokens->as_array().size() : size_t{0});
  std::printf("\nmetadata (%zu keys):\n", f.metadata.size());
  for (const auto& [key, value] : f.metadata) std::printf("  %-40s %s\n", key.c_str(), value.to_string().c_str());
  std::printf("\ntensors (dimensions fastest-varying first, as stored):\n");
  for (const llm::GgufTensor& t : f.tensors) {
    std::string dims;
    for (int64_t d : t.dims) dims += (dims.empty() ? "" : ", ") + std::to_string(d);
    std::printf("  %-40s %-5s [%s]  %lu bytes at %lu\n", t.name.c_str(), llm::ggml_type_info(static_cast<uint32_t>(t.type))->name, dims.c_str(),
                static_cast<unsigned long>(t.bytes), static_cast<unsigned long>(t.offset));
  }
  return 0;
}

void print_stats(const llm::GenerateStats& s) {
  std::fprintf(stderr,
               "\nprompt: %ld tokens, %.1f tokens/s | decode: %ld tokens, %.2f tokens/s | first token after %.3f s | peak device memory %.1f MiB\n",
               long(s.prompt_tokens), s.prompt_tps(), long(s.generated), s.decode_tps(), s.first_token_s,
               static_cast<double>(s.peak_device_bytes) / (1 << 20));
}

}  // namespace

int llm_command(const std::vector<std::string>& args) {
  if (!args.empty() && args[0] == "--make-test-model") return make_test_model(args);
  std::string path, prompt, device, system;
  bool info = false, chat = false, have_prompt = false;
  int64_t n = 128, context = 0;
  llm::SamplingOptions so;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> const std::string& {
      if (i + 1 >= args.size()) throw Error(a + " needs a value");
      return args[++i];
    };
    auto number = [&](const std::string& what) {
      const std::string& v = value();
      try {
        size_t used = 0;
        double d = std::stod(v, &used);
        if (used == v.size()) return d;
      } catch (const std::exception&) {}
      throw Error(what + " takes a number, not '" + v + "'");
    };
    if (a == "--info") info = true;
    else if (a == "--prompt" || a == "-p") prompt = value(), have_prompt = true;
    else if (a == "-n") n = parse_integer(value(), "-n", 1, int64_t{1} << 30);
    else if (a == "--device") device = value();
    else if (a == "--temperature") so.temperature = number("--temperature");
    else if (a == "--top-k") so.top_k = parse_integer(value(), "--top-k", 0, int64_t{1} << 30);
    else if (a == "--top-p") so.top_p = number("--top-p");
    else if (a == "--seed") so.seed = static_cast<uint64_t>(parse_integer(value(), "--seed", 0, INT64_MAX));
    else if (a == "--context") context = parse_integer(value(), "--context", 1, int64_t{1} << 24);
    else if (a == "--chat") chat = true;
    else if (a == "--system") system = value();
    else if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "ugpu llm: unknown option '%s'\n%s", a.c_str(), kLlmUsage);
      return 2;
    } else if (path.empty()) path = a;
    else {
      std::fprintf(stderr, "ugpu llm: one model file, please ('%s' and '%s' given)\n", path.c_str(), a.c_str());
      return 2;
    }
  }
  if (path.empty() || (!info && !have_prompt && !chat)) {
    std::fprintf(stderr, "%s", kLlmUsage);
    return 2;
  }
  if (!(so.temperature >= 0 && so.temperature <= 1e6) || !(so.top_p > 0 && so.top_p <= 1)) {
    std::fprintf(stderr, "ugpu llm: --temperature takes a number from 0 to 1e6 and --top-p one in (0, 1]\n");
    return 2;
  }
  llm::GgufFile f;
  std::optional<llm::Model> model;
  std::optional<llm::Tokenizer> tok;
  try {  // what is wrong with the file: one line, exit code 2
    if (info) return info_command(path);
    f = open_model(path);
    llm::ModelConfig cfg = llm::ModelConfig::from_gguf(f);
    tok = llm::Tokenizer::from_gguf(f);
    if (static_cast<int64_t>(tok->size()) > cfg.vocab)
      throw Error("the tokenizer has " + std::to_string(tok->size()) + " tokens and the model's vocabulary " + std::to_string(cfg.vocab));
    bool tty = isatty(2);
    std::string dev = device.empty() ? tensor::default_device() : device;
    std::fprintf(stderr, "ugpu llm: %s on %s\n", cfg.describe().c_str(), dev.c_str());
    auto t0 = std::chrono::steady_clock::now();
    model = llm::Model::load(f, dev, context, [&](size_t done, size_t total, int64_t bytes) {
      if (tty || done == total)
        std::fprintf(stderr, "\rloading: %zu/%zu tensors, %.1f MiB%s", done, total, static_cast<double>(bytes) / (1 << 20),
                     done == total ? "" : "   ");
    });
    std::fprintf(stderr, " in %.2f s (KV cache %.1f MiB for %ld positions)\n",
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), static_cast<double>(model->cache_bytes()) / (1 << 20),
                 long(model->max_context()));
  } catch (const Error& e) {
    std::fprintf(stderr, "ugpu llm: %s\n", e.what());
    return 2;
  }

  llm::Generator gen(*model, so);
  auto stream = [&](int32_t id) {
    if (tok->is_eog(id)) return false;
    if (static_cast<size_t>(id) >= tok->size()) return true;  // a padding row of the vocabulary: no text
    std::string piece = tok->piece(id, false);
    std::fwrite(piece.data(), 1, piece.size(), stdout);
    std::fflush(stdout);
    return true;
  };
  if (!chat) {
    std::vector<int32_t> ids = tok->encode(prompt, true, false);
    std::string echo = prompt;
    std::fwrite(echo.data(), 1, echo.size(), stdout);
    print_stats(gen.generate(ids, n, stream));
    return 0;
  }
  llm::ChatFormat fmt;
  try {
    fmt = llm::chat_format(f);
  } catch (const Error& e) {
    std::fprintf(stderr, "ugpu llm: %s\n", e.what());
    return 2;
  }
  // The conversation stays in the KV cache as it was fed and generated: each turn feeds only what
  // follows the last reply (its end marker, the new turn, the assistant's header).
  std::vector<llm::ChatMessage> messages;
  if (!system.empty()) messages.push_back({"system", system});
  std::string line;
  bool first = true;
  int32_t unfed = -1;  // the last reply's last token: sampled, never fed back
  while (true) {
    if (first && have_prompt) line = prompt;
    else {
      std::fprintf(stderr, "\n> ");
      if (!std::getline(std::cin, line)) break;
    }
    first = false;
    if (line.empty()) continue;
    llm::ChatMessage turn{"user", line};
    std::vector<int32_t> feed;
    if (messages.empty() || messages.back().role != "assistant") {
      messages.push_back(turn);
      feed = tok->encode(llm::chat_prompt(fmt, messages), true, true);
    } else {
      if (unfed >= 0 && !tok->is_eog(unfed)) feed.push_back(unfed);
      std::vector<int32_t> more = tok->encode(llm::chat_continuation(fmt, messages, turn), false, true);
      feed.insert(feed.end(), more.begin(), more.end());
      messages.push_back(turn);
    }
    if (gen.position() + static_cast<int64_t>(feed.size()) >= model->max_context()) {  // full: start over with this turn alone
      std::fprintf(stderr, "(the context is full: starting a new conversation)\n");
      messages.erase(messages.begin() + (system.empty() ? 0 : 1), messages.end() - 1);
      gen.reset();
      feed = tok->encode(llm::chat_prompt(fmt, messages), true, true);
    }
    std::string reply;
    try {
      llm::GenerateStats s = gen.generate(feed, n, [&](int32_t id) {
        unfed = id;
        if (tok->is_eog(id)) return false;
        if (static_cast<size_t>(id) < tok->size()) reply += tok->piece(id, false);
        return stream(id);
      });
      print_stats(s);
    } catch (const Error& e) {  // this turn fails (too long for the context, say); the conversation starts over
      std::fprintf(stderr, "\nugpu llm: %s\n", e.what());
      messages.erase(messages.begin() + (system.empty() ? 0 : 1), messages.end());
      gen.reset();
      unfed = -1;
      continue;
    }
    messages.push_back({"assistant", reply});
  }
  return 0;
}

}  // namespace ugpu::tools
