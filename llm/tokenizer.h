// The tokenizers stored in GGUF files (tokenizer.ggml.*), reproducing llama.cpp's token for token:
//
// - "llama": SentencePiece-style (llama.cpp's SPM). Spaces become U+2581, a space is put before the
//   text and after every special token (add_space_prefix), adjacent symbols merge by highest token
//   score (ties: leftmost), and what forms no token falls back to byte tokens <0xXX>.
// - "gpt2": byte-level BPE. The text is split into words by the pre-tokenizer `tokenizer.ggml.pre`
//   names (llm/unicode.h), bytes map to GPT-2's printable alphabet, and merges apply by rank.
//
// Control and user-defined tokens (and the unknown token) written literally in the text are split out
// first, longest first: user-defined ones always, control ones only with parse_special.
// End-of-generation tokens are eos, eot, eom and the FIM pad/repo/sep tokens, plus tokens whose text is
// one llama.cpp knows ("<|eot_id|>", "<|im_end|>", "<|endoftext|>", "<end_of_turn>" ...).
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "llm/gguf.h"
#include "llm/unicode.h"

namespace ugpu::llm {

class Tokenizer {
 public:
  // tokenizer.ggml.token_type values.
  enum TokenType : int32_t { kUndefined = 0, kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6 };

  // A tokenizer as plain data (what from_gguf reads; tests build small ones). Ids are -1 for none.
  struct Vocab {
    std::string model;  // "llama" or "gpt2"
    std::string pre;    // gpt2: the pre-tokenizer ("llama-bpe", "qwen2", "gpt-2" ...); empty is "default"
    std::vector<std::string> tokens;
    std::vector<float> scores;        // empty: all 0
    std::vector<int32_t> types;       // TokenType; empty: all normal
    std::vector<std::string> merges;  // gpt2: "left right", highest priority first
    int32_t bos = -1, eos = -1, unk = -1, pad = -1, eot = -1, eom = -1;
    int32_t fim_pre = -1, fim_suf = -1, fim_mid = -1, fim_pad = -1, fim_rep = -1, fim_sep = -1;
    // Unset: the model's default as llama.cpp has it (llama: BOS and the space prefix; gpt2: BOS only
    // for the LLaMA 3 pre-tokenizers, no space prefix).
    std::optional<bool> add_bos, add_eos, add_space_prefix;
    std::string name;  // general.name: llama.cpp strips spaces after special tokens for Phi-3 models
  };

  // Reads tokenizer.ggml.*; an Error names the key that is missing or invalid.
  static Tokenizer from_gguf(const GgufFile& f);
  explicit Tokenizer(Vocab v);

  // add_special: BOS (and EOS) as the model adds them. parse_special: control tokens written in the
  // text become those tokens (user-defined ones always do).
  std::vector<int32_t> encode(std::string_view text, bool add_special = true, bool parse_special = false) const;
  // llama.cpp's detokenize: with skip_special, a leading BOS and a trailing EOS are dropped and control
  // tokens print nothing; without it they print their text. With add_space_prefix the first token
  // loses one leading space (so after a BOS the space stays).
  std::string decode(std::span<const int32_t> ids, bool skip_special = false) const;
  // One token's text as it is streamed: byte tokens give their byte, SPM's U+2581 is a space; control
  // tokens give their text only when `special`.
  std::string piece(int32_t id, bool special = true) const;

  int32_t bos() const { return bos_; }
  int32_t eos() const { return eos_; }
  int32_t eot() const { return eot_; }
  int32_t unk() const { return unk_; }
  bool add_bos() const { return add_bos_; }
  bool add_eos() const { return add_eos_; }
  bool is_eog(int32_t id) const { return id >= 0 && static_cast<size_t>(id) < eog_.size() && eog_[id]; }
  bool is_control(int32_t id) const;
  size_t size() const { return tokens_.size(); }
  const std::string& model() const { return model_; }
  const std::string& text(int32_t id) const;  // the token as stored
  std::optional<int32_t> find(std::string_view token_text) const;

 private:
  struct Token {
    std::string text;
    float score = 0;
    uint32_t attr = 0;
  };
  struct Fragment {
    int32_t token;       // -1: raw text
    size_t begin, size;  // raw text: the bytes of the input
  };

  int32_t lookup(std::string_view s) const;  // -1 when absent
  int32_t merge_rank(std::string_view left, std::string_view right) const;
  void check(int32_t id) const;
  std::vector<Fragment> partition(std::string_view text, bool parse_special) const;
  void encode_spm(std::string_view text, std::vector<int32_t>& out) const;
  void encode_bpe(std::string_view text, std::vector<int32_t>& out) const;
  int32_t byte_token(uint8_t byte) const;
  std::string render(int32_t id) const;

  std::string model_;
  bool spm_ = true;
  unicode::PreTokenizer pre_ = unicode::PreTokenizer::kDefault;
  bool ignore_merges_ = false, clean_spaces_ = false;
  bool add_bos_ = false, add_eos_ = false, add_space_prefix_ = false;
  int32_t bos_ = -1, eos_ = -1, unk_ = -1, eot_ = -1;
  std::vector<Token> tokens_;
  struct Hash {
    using is_transparent = void;  // look up string_views without making strings
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
  };
  std::unordered_map<std::string, int32_t, Hash, std::equal_to<>> ids_;
  std::unordered_map<std::string, int32_t> ranks_;  // key: the left token's length (4 bytes), left, right
  std::vector<int32_t> specials_;                   // split out of the text before tokenizing, longest first
  std::vector<uint8_t> eog_;
  std::vector<std::string> pieces_;  // every token's piece with special tokens rendered
};

}  // namespace ugpu::llm
