// llama.cpp through dlopen (tests/llm/llama_cpp.h).
#include "tests/llm/llama_cpp.h"

#include <dlfcn.h>
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "common/error.h"

namespace ugpu::test {

namespace {

constexpr const char* kVersion = "3.22.1";  // the npm package scripts/setup installs

// llama_model_params, llama_context_params and llama_batch are all larger than 16 bytes, so they are
// returned through a hidden pointer and passed on the stack: a larger opaque block has the same ABI.
struct Block {
  alignas(16) unsigned char b[1024];
};

struct Api {
  void (*backend_init)();
  void (*load_all_from_path)(const char*);
  void (*log_set)(void (*)(int, const char*, void*), void*);
  Block (*model_default_params)();
  Block (*context_default_params)();
  void* (*model_load_from_file)(const char*, Block);
  void* (*init_from_model)(void*, Block);
  const void* (*model_get_vocab)(const void*);
  int32_t (*vocab_n_tokens)(const void*);
  int32_t (*tokenize)(const void*, const char*, int32_t, int32_t*, int32_t, bool, bool);
  int32_t (*token_to_piece)(const void*, int32_t, char*, int32_t, int32_t, bool);
  Block (*batch_get_one)(int32_t*, int32_t);
  int32_t (*decode)(void*, Block);
  float* (*get_logits_ith)(void*, int32_t);
  void (*set_n_threads)(void*, int32_t, int32_t);
  void* (*get_memory)(void*);
  void (*memory_clear)(void*, bool);
  void (*free_ctx)(void*);
  void (*model_free)(void*);
  const char* (*model_chat_template)(const void*, const char*);
  int32_t (*chat_apply_template)(const char*, const void*, size_t, bool, char*, int32_t);
};

Api g_api;
std::string g_log;  // llama.cpp's warnings and errors since the last load
std::mutex g_log_mu;

void on_log(int level, const char* text, void*) {
  static const bool all = std::getenv("UGPU_LLAMA_CPP_LOG") != nullptr;  // everything llama.cpp says, on stderr
  if (all) std::fputs(text, stderr);
  if (level < 3) return;  // GGML_LOG_LEVEL_WARN = 3, ERROR = 4; info and debug are dropped
  std::lock_guard lock(g_log_mu);
  if (g_log.size() < 4000) g_log += text;
}

template <class F>
bool bind(void* lib, const char* name, F& f, std::string* why) {
  f = reinterpret_cast<F>(dlsym(lib, name));
  if (!f) *why = std::string("llama.cpp has no ") + name;
  return f != nullptr;
}

}  // namespace

LlamaCpp* LlamaCpp::get(std::string* why) {
  static LlamaCpp* lib = nullptr;
  static std::string reason;
  static std::once_flag once;
  std::call_once(once, [] {
    const char* env = std::getenv("UGPU_LLAMA_CPP");
    std::string dir = env ? env : std::string("/opt/ugpu/llama.cpp/") + kVersion;
    // The CPU package names its libraries libllama.v0.5.0.so and libggml.v0.5.0.so; the CUDA one
    // (@node-llama-cpp/linux-x64-cuda) libllama.cuda.v0.5.0.so and libggml.cuda.v0.5.0.so.
    std::string flavor;
    struct stat st;
    if (stat((dir + "/libllama.v0.5.0.so").c_str(), &st) != 0) flavor = "cuda.";
    std::string path = dir + "/libllama." + flavor + "v0.5.0.so";
    if (stat(path.c_str(), &st) != 0) {
      reason =
          "llama.cpp is not installed (" + dir + "/libllama.v0.5.0.so is missing; scripts/setup --tests fetches it from npm, or set UGPU_LLAMA_CPP)";
      return;
    }
    void* ggml = dlopen((dir + "/libggml." + flavor + "v0.5.0.so").c_str(), RTLD_NOW | RTLD_GLOBAL);
    void* llama = ggml ? dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL) : nullptr;
    if (!llama) {
      const char* e = dlerror();
      reason = std::string("llama.cpp does not load: ") + (e ? e : "?");
      return;
    }
    Api& a = g_api;
    bool ok = bind(ggml, "ggml_backend_load_all_from_path", a.load_all_from_path, &reason) &&
              bind(llama, "llama_backend_init", a.backend_init, &reason) && bind(llama, "llama_log_set", a.log_set, &reason) &&
              bind(llama, "llama_model_default_params", a.model_default_params, &reason) &&
              bind(llama, "llama_context_default_params", a.context_default_params, &reason) &&
              bind(llama, "llama_model_load_from_file", a.model_load_from_file, &reason) &&
              bind(llama, "llama_init_from_model", a.init_from_model, &reason) && bind(llama, "llama_model_get_vocab", a.model_get_vocab, &reason) &&
              bind(llama, "llama_vocab_n_tokens", a.vocab_n_tokens, &reason) && bind(llama, "llama_tokenize", a.tokenize, &reason) &&
              bind(llama, "llama_token_to_piece", a.token_to_piece, &reason) && bind(llama, "llama_batch_get_one", a.batch_get_one, &reason) &&
              bind(llama, "llama_decode", a.decode, &reason) && bind(llama, "llama_get_logits_ith", a.get_logits_ith, &reason) &&
              bind(llama, "llama_set_n_threads", a.set_n_threads, &reason) && bind(llama, "llama_get_memory", a.get_memory, &reason) &&
              bind(llama, "llama_memory_clear", a.memory_clear, &reason) && bind(llama, "llama_free", a.free_ctx, &reason) &&
              bind(llama, "llama_model_free", a.model_free, &reason) && bind(llama, "llama_model_chat_template", a.model_chat_template, &reason) &&
              bind(llama, "llama_chat_apply_template", a.chat_apply_template, &reason);
    if (!ok) return;
    // The documented defaults of the fields written (n_ctx 512, n_batch 2048, n_ubatch 512, n_seq_max 1).
    Block c = a.context_default_params();
    uint32_t f[4];
    std::memcpy(f, c.b, sizeof f);
    if (f[0] != 512 || f[1] != 2048 || f[2] != 512 || f[3] != 1) {
      reason = "llama.cpp's llama_context_params does not start as documented (n_ctx, n_batch, n_ubatch, n_seq_max)";
      return;
    }
    a.log_set(on_log, nullptr);
    a.load_all_from_path(dir.c_str());  // the CPU backend variants (and CUDA in the -cuda package)
    a.backend_init();
    lib = new LlamaCpp();
    lib->dir = dir;
  });
  if (!lib && why) *why = reason;
  return lib;
}

LlamaCpp::Session::Session(const std::string& model_path, int n_ctx, int threads) {
  {
    std::lock_guard lock(g_log_mu);
    g_log.clear();
  }
  model_ = g_api.model_load_from_file(model_path.c_str(), g_api.model_default_params());
  if (!model_) throw Error("llama.cpp does not load " + model_path + ": " + g_log);
  Block c = g_api.context_default_params();
  uint32_t sizes[3] = {static_cast<uint32_t>(n_ctx), static_cast<uint32_t>(n_ctx), static_cast<uint32_t>(n_ctx)};  // n_ctx, n_batch, n_ubatch
  std::memcpy(c.b, sizes, sizeof sizes);
  ctx_ = g_api.init_from_model(model_, c);
  if (!ctx_) {
    g_api.model_free(model_);
    throw Error("llama.cpp makes no context for " + model_path + ": " + g_log);
  }
  g_api.set_n_threads(ctx_, threads, threads);
  vocab_ = g_api.model_get_vocab(model_);
}

LlamaCpp::Session::~Session() {
  if (ctx_) g_api.free_ctx(ctx_);
  if (model_) g_api.model_free(model_);
}

std::vector<int32_t> LlamaCpp::Session::tokenize(std::string_view text, bool add_special, bool parse_special) const {
  std::vector<int32_t> out(text.size() + 8);
  int32_t n = g_api.tokenize(vocab_, text.data(), static_cast<int32_t>(text.size()), out.data(), static_cast<int32_t>(out.size()), add_special,
                             parse_special);
  if (n < 0) {
    out.resize(static_cast<size_t>(-n));
    n = g_api.tokenize(vocab_, text.data(), static_cast<int32_t>(text.size()), out.data(), static_cast<int32_t>(out.size()), add_special,
                       parse_special);
  }
  if (n < 0) throw Error("llama_tokenize failed");
  out.resize(static_cast<size_t>(n));
  return out;
}

std::string LlamaCpp::Session::piece(int32_t id) const {
  char buf[256];
  int32_t n = g_api.token_to_piece(vocab_, id, buf, sizeof buf, 0, true);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

int32_t LlamaCpp::Session::vocab() const { return g_api.vocab_n_tokens(vocab_); }

std::vector<float> LlamaCpp::Session::eval(std::span<const int32_t> tokens) {
  std::vector<int32_t> t(tokens.begin(), tokens.end());
  Block batch = g_api.batch_get_one(t.data(), static_cast<int32_t>(t.size()));
  if (int32_t rc = g_api.decode(ctx_, batch); rc != 0) throw Error("llama_decode returned " + std::to_string(rc) + ": " + g_log);
  const float* l = g_api.get_logits_ith(ctx_, -1);
  if (!l) throw Error("llama.cpp gave no logits");
  return std::vector<float>(l, l + vocab());
}

void LlamaCpp::Session::clear() { g_api.memory_clear(g_api.get_memory(ctx_), true); }

std::string LlamaCpp::Session::chat(const std::vector<std::pair<std::string, std::string>>& role_content, bool add_assistant) const {
  const char* tmpl = g_api.model_chat_template(model_, nullptr);
  if (!tmpl) throw Error("the model has no chat template");
  struct Message {  // llama_chat_message
    const char* role;
    const char* content;
  };
  std::vector<Message> m;
  for (const auto& [r, c] : role_content) m.push_back({r.c_str(), c.c_str()});
  std::vector<char> buf(4096);
  int32_t n = g_api.chat_apply_template(tmpl, m.data(), m.size(), add_assistant, buf.data(), static_cast<int32_t>(buf.size()));
  if (n > static_cast<int32_t>(buf.size())) {
    buf.resize(static_cast<size_t>(n));
    n = g_api.chat_apply_template(tmpl, m.data(), m.size(), add_assistant, buf.data(), static_cast<int32_t>(buf.size()));
  }
  if (n < 0) throw Error("llama.cpp does not know this chat template");
  return std::string(buf.data(), static_cast<size_t>(n));
}

}  // namespace ugpu::test
