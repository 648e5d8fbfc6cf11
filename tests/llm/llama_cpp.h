// llama.cpp as a reference: libllama from the npm package @node-llama-cpp/linux-x64 (scripts/setup
// --tests unpacks it into /opt/ugpu/llama.cpp/VERSION; $UGPU_LLAMA_CPP names another directory),
// loaded at run time with dlopen. The package has no header, so the few C functions used are declared
// here from llama.h's documented signatures; structs passed by value are handled as opaque blocks (on
// x86-64 SysV a struct of more than 16 bytes goes through memory either way), and the only fields
// written — the context size and batch sizes, the first three of llama_context_params — are checked
// against their documented defaults before use, so a layout change is a refusal, not a crash.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ugpu::test {

class LlamaCpp {
 public:
  // The library, loaded once; null (and the reason in *why) when it is not there or not usable.
  static LlamaCpp* get(std::string* why);
  std::string dir;  // where it was loaded from

  class Session {
   public:
    // A model and a context of n_ctx positions, computing with `threads` threads. Error: the model
    // does not load (llama.cpp's own messages attached).
    Session(const std::string& model_path, int n_ctx, int threads);
    ~Session();
    Session(const Session&) = delete;
    Session& operator=(const Session&) = delete;

    std::vector<int32_t> tokenize(std::string_view text, bool add_special, bool parse_special) const;
    std::string piece(int32_t id) const;
    int32_t vocab() const;
    // Feeds tokens after those fed before (one batch) and returns the last one's logits.
    std::vector<float> eval(std::span<const int32_t> tokens);
    void clear();  // forget the sequence (the KV cache)
    // llama.cpp's rendering of a conversation with the model's chat template (llama_chat_apply_template),
    // ending with the assistant's header when add_assistant.
    std::string chat(const std::vector<std::pair<std::string, std::string>>& role_content, bool add_assistant) const;

   private:
    void* model_ = nullptr;
    void* ctx_ = nullptr;
    const void* vocab_ = nullptr;
  };
};

}  // namespace ugpu::test
