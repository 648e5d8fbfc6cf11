// The tokenizers (llm/tokenizer.h) on any bytes: prompts are outside input. A SentencePiece-style and
// two byte-level BPE vocabularies from the test-model generator encode the bytes (with and without
// special-token parsing) and decode the ids again; the qwen2 BPE (which, as llama.cpp's, does not
// clean up spaces before punctuation when decoding, where llama-3's does) must give the bytes back
// exactly when they are valid UTF-8 and hold no special token's text.
#include <cstdlib>
#include <string>

#include "llm/testmodel.h"
#include "llm/tokenizer.h"
#include "tests/fuzz/fuzz.h"

namespace {
const ugpu::llm::Tokenizer& tokenizer(int which) {
  static std::vector<ugpu::llm::Tokenizer> all = [] {
    std::vector<ugpu::llm::Tokenizer> t;
    for (const char* kind : {"llama", "gpt2", "gpt2-llama3"}) {
      ugpu::llm::TestModelSpec spec;
      spec.arch = std::string(kind) == "llama" ? "llama" : "qwen2";
      spec.tokenizer = kind, spec.layers = 1, spec.dim = 64, spec.heads = 2, spec.kv_heads = 1, spec.ffn = 64, spec.vocab = 600;
      static std::vector<std::vector<uint8_t>> bytes;  // the GgufFiles read from them
      bytes.push_back(ugpu::llm::test_model_bytes(spec));
      t.push_back(ugpu::llm::Tokenizer::from_gguf(ugpu::llm::GgufFile::parse(bytes.back())));
    }
    return t;
  }();
  return all[static_cast<size_t>(which)];
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ugpu;
  if (size == 0) return 0;
  const llm::Tokenizer& tok = tokenizer(data[0] % 3);
  std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  for (bool special : {false, true}) {
    std::vector<int32_t> ids = tok.encode(text, true, special);
    for (int32_t id : ids)
      if (id < 0 || static_cast<size_t>(id) >= tok.size()) std::abort();
    (void)tok.decode(ids, true);
  }
  if (data[0] % 3 == 1 && text.find("<|") == std::string_view::npos) {
    bool utf8 = true;  // (valid UTF-8 only: invalid bytes are replaced, as llama.cpp does)
    for (size_t i = 0; i < text.size() && utf8;) {
      unsigned char c = static_cast<unsigned char>(text[i]);
      size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
      if (!n || i + n > text.size()) utf8 = false;
      for (size_t k = 1; k < n && utf8; ++k) utf8 = (static_cast<unsigned char>(text[i + k]) >> 6) == 2;
      if (utf8 && n == 2 && c < 0xc2) utf8 = false;
      if (utf8 && n == 3 &&
          ((c == 0xe0 && static_cast<unsigned char>(text[i + 1]) < 0xa0) || (c == 0xed && static_cast<unsigned char>(text[i + 1]) >= 0xa0)))
        utf8 = false;
      if (utf8 && n == 4 &&
          ((c == 0xf0 && static_cast<unsigned char>(text[i + 1]) < 0x90) || c > 0xf4 ||
           (c == 0xf4 && static_cast<unsigned char>(text[i + 1]) >= 0x90)))
        utf8 = false;
      i += n ? n : 1;
    }
    if (utf8 && tok.decode(tok.encode(text, false, false)) != text) std::abort();
  }
  return 0;
}
