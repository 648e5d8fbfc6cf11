// The GGUF tokenizers (llm/tokenizer.h). The behaviour, down to the edge cases, is llama.cpp's
// (src/llama-vocab.cpp): which tokens merge first, what happens to text no token covers, which tokens
// count as special, how pieces are printed.
#include "llm/tokenizer.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <queue>

#include "common/error.h"

namespace ugpu::llm {

namespace {

// llama.cpp's token attributes (llama_token_attr), which the token types map to.
constexpr uint32_t kAttrUnknown = 1u << 0;
constexpr uint32_t kAttrUnused = 1u << 1;
constexpr uint32_t kAttrNormal = 1u << 2;
constexpr uint32_t kAttrControl = 1u << 3;
constexpr uint32_t kAttrUserDefined = 1u << 4;
constexpr uint32_t kAttrByte = 1u << 5;
constexpr uint32_t kAttrLstrip = 1u << 7;  // spaces before the token (in the text) are dropped
constexpr uint32_t kAttrRstrip = 1u << 8;  // spaces after it are dropped
constexpr uint32_t kAttrSpecial = kAttrUnknown | kAttrControl;

uint32_t attr_of(int32_t type) {
  switch (type) {
    case Tokenizer::kNormal: return kAttrNormal;
    case Tokenizer::kUnknown: return kAttrUnknown;
    case Tokenizer::kControl: return kAttrControl;
    case Tokenizer::kUserDefined: return kAttrUserDefined;
    case Tokenizer::kUnused: return kAttrUnused;
    case Tokenizer::kByte: return kAttrByte;
    default: return 0;  // undefined: printed as nothing, like unused tokens
  }
}

constexpr std::string_view kSpmSpace = "\xE2\x96\x81";  // U+2581, SentencePiece's space

// A pre-tokenizer name llama.cpp knows, with what it implies.
struct PreInfo {
  std::string_view name;
  unicode::PreTokenizer pre;
  bool clean_spaces;   // detokenizing removes spaces before punctuation and contractions
  bool ignore_merges;  // a word that is a token is that token, whatever the merges would make
  bool add_bos;        // the default for tokenizer.ggml.add_bos_token
};
using P = unicode::PreTokenizer;
constexpr PreInfo kPreTokenizers[] = {
    {"default", P::kDefault, true, false, false},
    {"llama3", P::kLlama3, true, true, true},
    {"llama-v3", P::kLlama3, true, true, true},
    {"llama-bpe", P::kLlama3, true, true, true},
    {"falcon3", P::kLlama3, true, true, true},
    {"falcon-h1", P::kLlama3, true, true, true},
    {"pixtral", P::kLlama3, true, true, true},
    {"midm-2.0", P::kLlama3, true, true, true},
    {"lfm2", P::kLlama3, true, true, true},
    {"jina-v5-nano", P::kLlama3, true, true, true},
    {"dbrx", P::kLlama3, true, false, false},
    {"smaug-bpe", P::kLlama3, true, false, false},
    {"qwen2", P::kQwen2, false, false, false},
    {"deepseek-r1-qwen", P::kQwen2, false, false, false},
    {"kormo", P::kQwen2, false, false, false},
    {"f2llmv2", P::kQwen2, false, false, false},
    {"megrez", P::kQwen2, true, false, false},
    {"stablelm2", P::kQwen2, true, false, false},
    {"hunyuan", P::kQwen2, false, false, false},
    {"solar-open", P::kQwen2, false, false, false},
    {"gpt-2", P::kGpt2, true, false, false},
    {"phi-2", P::kGpt2, true, false, false},
    {"gigachat", P::kGpt2, true, false, false},
    {"a.x-4.0", P::kGpt2, true, false, false},
    {"mellum", P::kGpt2, true, false, false},
    {"exaone4", P::kGpt2, true, false, false},
    {"mpt", P::kGpt2, true, false, false},
    {"olmo", P::kGpt2, true, false, false},
    {"jais", P::kGpt2, true, false, false},
    {"trillion", P::kGpt2, false, false, false},
    {"granite-docling", P::kGpt2, false, false, false},
    {"starcoder", P::kStarCoder, true, false, false},
    {"refact", P::kStarCoder, true, false, false},
    {"command-r", P::kStarCoder, false, false, false},
    {"smollm", P::kStarCoder, false, false, false},
    {"codeshell", P::kStarCoder, true, false, false},
    {"exaone", P::kStarCoder, true, false, false},
    {"minerva-7b", P::kStarCoder, true, false, false},
    {"mellum2", P::kStarCoder, true, false, false},
    {"falcon", P::kFalcon, true, false, false},
};

// Tokens llama.cpp recognises by their text when the file does not name them (each list in order).
constexpr std::string_view kEotTexts[] = {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>",         "<|endoftext|>",     "<|end_of_text|>",
                                          "<EOT>",      "_<EOT>",     "[EOT]",   "<｜end▁of▁sentence｜>", "<end_of_utterance>"};
constexpr std::string_view kEomTexts[] = {"<|eom_id|>"};
constexpr std::string_view kFimPreTexts[] = {"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>",    "<｜fim▁begin｜>",
                                             "<PRE>",          "▁<PRE>",       "<|code_prefix|>", "<|prefix|>"};
constexpr std::string_view kFimSufTexts[] = {"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>",    "<｜fim▁hole｜>",
                                             "<SUF>",          "▁<SUF>",       "<|code_suffix|>", "<|suffix|>"};
constexpr std::string_view kFimMidTexts[] = {"<|fim_middle|>", "<fim-middle>", "<fim_middle>",    "<｜fim▁end｜>",
                                             "<MID>",          "▁<MID>",       "<|code_middle|>", "<|middle|>"};
constexpr std::string_view kFimPadTexts[] = {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"};
constexpr std::string_view kFimRepTexts[] = {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"};
constexpr std::string_view kFimSepTexts[] = {"<|file_sep|>"};
// End of generation, whatever the file says.
constexpr std::string_view kEogTexts[] = {"<|eot_id|>",
                                          "<|im_end|>",
                                          "<|end|>",
                                          "<|return|>",
                                          "<|call|>",
                                          "<|flush|>",
                                          "<|calls|>",
                                          "<end_of_turn>",
                                          "<|endoftext|>",
                                          "</s>",
                                          "<|eom_id|>",
                                          "<EOT>",
                                          "_<EOT>",
                                          "[EOT]",
                                          "[EOS]",
                                          "<|end_of_text|>",
                                          "<end_of_utterance>",
                                          "<eos>",
                                          "<turn|>",
                                          "<|tool_response>",
                                          "<｜end▁of▁sentence｜>",
                                          "[e~["};

template <size_t N>
bool is_one_of(std::string_view s, const std::string_view (&list)[N]) {
  return std::find(std::begin(list), std::end(list), s) != std::end(list);
}

bool is_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }  // C's isspace

std::string replace_all(std::string_view s, std::string_view from, std::string_view to) {
  std::string out;
  for (size_t pos = 0;;) {
    const size_t hit = s.find(from, pos);
    out.append(s.substr(pos, hit == std::string_view::npos ? std::string_view::npos : hit - pos));
    if (hit == std::string_view::npos) return out;
    out.append(to);
    pos = hit + from.size();
  }
}

// A byte token's byte: "<0xXX>" read as llama.cpp does (strtol on the two characters after "<0x").
uint8_t byte_of(std::string_view text) {
  std::string_view hex = text.substr(3, 2);
  while (!hex.empty() && is_space(hex.front())) hex.remove_prefix(1);
  int sign = 1;
  if (!hex.empty() && (hex.front() == '-' || hex.front() == '+')) {
    if (hex.front() == '-') sign = -1;
    hex.remove_prefix(1);
  }
  int value = 0;
  for (char c : hex) {
    const int d = c >= '0' && c <= '9' ? c - '0' : (c | 0x20) >= 'a' && (c | 0x20) <= 'f' ? (c | 0x20) - 'a' + 10 : -1;
    if (d < 0) break;
    value = value * 16 + d;
  }
  return static_cast<uint8_t>(sign * value);
}

// A byte-level BPE token's bytes; a character outside GPT-2's alphabet is printed the way llama.cpp
// prints it.
std::string byte_level_text(std::string_view text) {
  std::string out;
  for (size_t offset = 0; offset < text.size();) {
    const uint32_t cpt = unicode::decode_next(text, offset);
    const int byte = unicode::text_to_byte(cpt);
    if (byte >= 0) {
      out += static_cast<char>(byte);
      continue;
    }
    std::string utf8;
    unicode::append_utf8(utf8, cpt);
    out += "[UNK_BYTE_0x";
    for (char c : utf8) {
      static constexpr char kHex[] = "0123456789abcdef";
      out += kHex[static_cast<uint8_t>(c) >> 4];
      out += kHex[static_cast<uint8_t>(c) & 15];
    }
    out.append(text);
    out += ']';
  }
  return out;
}

// llama.cpp's clean-up of decoded BPE text, in place and in its three passes: " ?" " !" " ." " ,"
// lose the space, a lone apostrophe between spaces loses both, and " 's" " 'm" " 're" " 've" lose it.
void clean_spaces(std::string& text) {
  const auto pass = [&](auto&& step) {
    const size_t n = text.size();
    size_t out = n ? 1 : 0;
    for (size_t i = 1; i < n; i++) step(i, out, n);
    text.resize(out);
  };
  pass([&](size_t& i, size_t& out, size_t) {
    const char x = text[i];
    if (text[i - 1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ',')) out--;
    text[out++] = x;
  });
  pass([&](size_t& i, size_t& out, size_t n) {
    const char x = text[i];
    if (x == '\'' && i + 1 < n && text[i - 1] == ' ' && text[i + 1] == ' ') {
      out--;
      text[++i] = '\0';  // the space after it, skipped (and seen as NUL by the next step, as in llama.cpp)
    }
    text[out++] = x;
  });
  pass([&](size_t& i, size_t& out, size_t n) {
    const char x = text[i];
    if (text[i - 1] == ' ' && x == '\'' && i + 1 < n) {
      const char x1 = text[i + 1];
      if (x1 == 's' || x1 == 'm') out--;
      else if (x1 != 't' && x1 != 'd' && i + 2 < n && ((x1 == 'r' && text[i + 2] == 'e') || (x1 == 'v' && text[i + 2] == 'e'))) out--;
    }
    text[out++] = x;
  });
}

std::string merge_key(std::string_view left, std::string_view right) {
  std::string key(4 + left.size() + right.size(), '\0');
  const uint32_t n = static_cast<uint32_t>(left.size());
  std::memcpy(key.data(), &n, 4);
  std::memcpy(key.data() + 4, left.data(), left.size());
  std::memcpy(key.data() + 4 + left.size(), right.data(), right.size());
  return key;
}

// A symbol while merging: a span of the text, linked to its neighbours.
struct Symbol {
  int prev, next;
  size_t begin, size;  // size 0: merged into the symbol on its left
};

// Cuts text into UTF-8 characters as llama.cpp does (by lead byte, the last one clipped at the end).
std::vector<Symbol> symbols_of(std::string_view text) {
  std::vector<Symbol> symbols;
  for (size_t offset = 0; offset < text.size();) {
    const size_t n = std::min(unicode::sequence_length(static_cast<uint8_t>(text[offset])), text.size() - offset);
    const int index = static_cast<int>(symbols.size());
    symbols.push_back({index - 1, offset + n == text.size() ? -1 : index + 1, offset, n});
    offset += n;
  }
  return symbols;
}

}  // namespace

Tokenizer::Tokenizer(Vocab v) : model_(std::move(v.model)) {
  if (model_ == "llama") spm_ = true;
  else if (model_ == "gpt2") spm_ = false;
  else throw Error("tokenizer: model '" + model_ + "' (tokenizer.ggml.model) is not supported; 'llama' and 'gpt2' are");

  bool default_add_bos = true;
  if (!spm_) {
    const std::string pre = v.pre.empty() ? "default" : v.pre;
    const auto* info = std::find_if(std::begin(kPreTokenizers), std::end(kPreTokenizers), [&](const PreInfo& p) { return p.name == pre; });
    if (info == std::end(kPreTokenizers)) throw Error("tokenizer: unknown pre-tokenizer '" + pre + "' (tokenizer.ggml.pre)");
    pre_ = info->pre;
    clean_spaces_ = info->clean_spaces;
    ignore_merges_ = info->ignore_merges;
    default_add_bos = info->add_bos;
  }
  add_bos_ = v.add_bos.value_or(default_add_bos);
  add_eos_ = v.add_eos.value_or(false);
  add_space_prefix_ = v.add_space_prefix.value_or(spm_);

  const size_t n = v.tokens.size();
  if (n == 0) throw Error("tokenizer: the vocabulary has no tokens (tokenizer.ggml.tokens)");
  if (n > static_cast<size_t>(std::numeric_limits<int32_t>::max())) throw Error("tokenizer: the vocabulary has too many tokens");
  if (!v.scores.empty() && v.scores.size() < n)
    throw Error("tokenizer: " + std::to_string(v.scores.size()) + " scores (tokenizer.ggml.scores) for " + std::to_string(n) + " tokens");
  if (!v.types.empty() && v.types.size() < n)
    throw Error("tokenizer: " + std::to_string(v.types.size()) + " token types (tokenizer.ggml.token_type) for " + std::to_string(n) + " tokens");
  tokens_.resize(n);
  ids_.reserve(n);
  for (size_t i = 0; i < n; i++) {
    Token& t = tokens_[i];
    t.text = v.tokens[i].empty() ? "[EMPTY_" + std::to_string(i) + "]" : std::move(v.tokens[i]);
    t.score = v.scores.empty() ? 0.0f : v.scores[i];
    t.attr = v.types.empty() ? kAttrNormal : attr_of(v.types[i]);
    if ((t.attr & kAttrByte) && t.text.size() < 3)
      throw Error("tokenizer: token " + std::to_string(i) + " is a byte token but not <0xXX>: '" + t.text + "'");
    const auto [it, fresh] = ids_.emplace(t.text, static_cast<int32_t>(i));
    if (!fresh)
      throw Error("tokenizer: token '" + t.text + "' appears twice in the vocabulary, as " + std::to_string(it->second) + " and " +
                  std::to_string(i));
  }

  if (!spm_) {
    ranks_.reserve(v.merges.size());
    for (size_t i = 0; i < v.merges.size(); i++) {
      const std::string& m = v.merges[i];
      const size_t space = m.find(' ', 1);
      const auto bad = [&](const std::string& why) {
        return Error("tokenizer: merge " + std::to_string(i) + " '" + m + "' (tokenizer.ggml.merges) " + why);
      };
      if (space == std::string::npos) throw bad("is not two tokens separated by a space");
      const std::string_view left = std::string_view(m).substr(0, space), right = std::string_view(m).substr(space + 1);
      if (lookup(left) < 0) throw bad("names '" + std::string(left) + "', which is not a token");
      if (lookup(right) < 0) throw bad("names '" + std::string(right) + "', which is not a token");
      ranks_.emplace(merge_key(left, right), static_cast<int32_t>(i));  // a repeated merge keeps its first rank
    }
  }

  int32_t eom = v.eom, fim_pre = v.fim_pre, fim_suf = v.fim_suf, fim_mid = v.fim_mid, fim_pad = v.fim_pad, fim_rep = v.fim_rep, fim_sep = v.fim_sep;
  for (auto [id, what] : {std::pair{v.bos, "BOS"},
                          {v.eos, "EOS"},
                          {v.unk, "unknown"},
                          {v.pad, "padding"},
                          {v.eot, "EOT"},
                          {eom, "EOM"},
                          {fim_pre, "FIM prefix"},
                          {fim_suf, "FIM suffix"},
                          {fim_mid, "FIM middle"},
                          {fim_pad, "FIM pad"},
                          {fim_rep, "FIM repo"},
                          {fim_sep, "FIM separator"}}) {
    if (id < -1 || id >= static_cast<int64_t>(n))
      throw Error(std::string("tokenizer: the ") + what + " token id " + std::to_string(id) + " is outside the vocabulary of " + std::to_string(n) +
                  " tokens");
  }
  bos_ = v.bos;
  eos_ = v.eos;
  unk_ = v.unk;
  eot_ = v.eot;
  if (add_bos_ && bos_ < 0) throw Error("tokenizer: tokenizer.ggml.add_bos_token is true, but there is no BOS token (tokenizer.ggml.bos_token_id)");
  if (add_eos_ && eos_ < 0) throw Error("tokenizer: tokenizer.ggml.add_eos_token is true, but there is no EOS token (tokenizer.ggml.eos_token_id)");

  // Special tokens the file does not name are found by their text, and made control tokens.
  const auto detect = [&](int32_t& id, const auto& texts) {
    if (id >= 0) return;
    for (size_t i = 0; i < n && id < 0; i++) {
      if (!is_one_of(tokens_[i].text, texts)) continue;
      id = static_cast<int32_t>(i);
      tokens_[i].attr |= kAttrControl;
    }
  };
  detect(eot_, kEotTexts);
  detect(eom, kEomTexts);
  detect(fim_pre, kFimPreTexts);
  detect(fim_suf, kFimSufTexts);
  detect(fim_mid, kFimMidTexts);
  detect(fim_pad, kFimPadTexts);
  detect(fim_rep, kFimRepTexts);
  detect(fim_sep, kFimSepTexts);

  eog_.assign(n, 0);
  for (int32_t id : {fim_pad, fim_rep, fim_sep})
    if (id >= 0) eog_[id] = 1;
  for (size_t i = 0; i < n; i++) {
    Token& t = tokens_[i];
    if (is_one_of(t.text, kEogTexts)) {
      eog_[i] = 1;
      t.attr |= kAttrControl;
    }
    if (t.text == "<|channel|>" || t.text == "<|message|>" || t.text == "<|start|>" || t.text == "<|constrain|>")
      t.attr = kAttrUserDefined;  // gpt-oss
  }
  for (int32_t id : {eos_, eot_, eom})
    if (id >= 0) eog_[id] = 1;
  // gpt-oss and solar-open: <|end|> ends a message, not the generation, when <|return|> and <|call|> (or <|calls|> and <|flush|>) exist.
  {
    const auto eog_text = [&](std::string_view s) {
      const int32_t id = lookup(s);
      return id >= 0 && eog_[id] ? id : -1;
    };
    const int32_t end = eog_text("<|end|>");
    const bool call = eog_text("<|call|>") >= 0 || eog_text("<|calls|>") >= 0;
    if (end >= 0 && call && (eog_text("<|return|>") >= 0 || eog_text("<|flush|>") >= 0)) {
      eog_[end] = 0;
      tokens_[end].attr = kAttrUserDefined;
    }
    const int32_t s = eog_text("</s>");  // gemma4
    if (s >= 0 && eog_text("<|tool_response>") >= 0) {
      eog_[s] = 0;
      tokens_[s].attr = kAttrNormal;
    }
  }

  for (size_t i = 0; i < n; i++)
    if (tokens_[i].attr & (kAttrControl | kAttrUserDefined | kAttrUnknown)) specials_.push_back(static_cast<int32_t>(i));
  std::sort(specials_.begin(), specials_.end(), [&](int32_t a, int32_t b) {
    const size_t la = tokens_[a].text.size(), lb = tokens_[b].text.size();
    return la != lb ? la > lb : a < b;  // longest first; llama.cpp leaves equal lengths in no set order
  });

  pieces_.resize(n);
  for (size_t i = 0; i < n; i++) pieces_[i] = render(static_cast<int32_t>(i));

  // Phi-3 (by general.name, as llama.cpp decides it): spaces after special tokens are dropped.
  std::string name = v.name;
  for (char& c : name) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c);
  if (name.find("phi-3") != std::string::npos || name.find("phi3") != std::string::npos) {
    for (int32_t id : specials_) tokens_[id].attr |= kAttrRstrip;
    if (int32_t id = lookup("</s>"); id >= 0) tokens_[id].attr |= kAttrRstrip;
    for (std::string_view s : {"<unk>", "<s>", "<|endoftext|>"})
      if (int32_t id = lookup(s); id >= 0) tokens_[id].attr &= ~kAttrRstrip;
  }
}

int32_t Tokenizer::lookup(std::string_view s) const {
  const auto it = ids_.find(s);
  return it == ids_.end() ? -1 : it->second;
}

int32_t Tokenizer::merge_rank(std::string_view left, std::string_view right) const {
  const auto it = ranks_.find(merge_key(left, right));
  return it == ranks_.end() ? -1 : it->second;
}

void Tokenizer::check(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= tokens_.size())
    throw Error("tokenizer: token id " + std::to_string(id) + " is outside the vocabulary of " + std::to_string(tokens_.size()) + " tokens");
}

bool Tokenizer::is_control(int32_t id) const {
  check(id);
  return tokens_[id].attr & kAttrControl;
}

const std::string& Tokenizer::text(int32_t id) const {
  check(id);
  return tokens_[id].text;
}

std::optional<int32_t> Tokenizer::find(std::string_view token_text) const {
  const int32_t id = lookup(token_text);
  return id < 0 ? std::nullopt : std::optional<int32_t>(id);
}

// Splits the special tokens out of the text: each token in turn (longest first) is cut out of every
// piece of raw text the previous ones left.
std::vector<Tokenizer::Fragment> Tokenizer::partition(std::string_view text, bool parse_special) const {
  std::vector<Fragment> fragments;
  if (!text.empty()) fragments.push_back({-1, 0, text.size()});
  for (int32_t id : specials_) {
    const Token& t = tokens_[id];
    if (!parse_special && (t.attr & kAttrSpecial)) continue;  // user-defined tokens are split out regardless
    std::vector<Fragment> next;
    next.reserve(fragments.size());
    for (const Fragment& f : fragments) {
      if (f.token >= 0) {
        next.push_back(f);
        continue;
      }
      size_t begin = f.begin;
      const size_t end = f.begin + f.size;
      for (;;) {
        const size_t match = text.substr(0, end).find(t.text, begin);
        if (match == std::string_view::npos) {
          if (end > begin) next.push_back({-1, begin, end - begin});
          break;
        }
        size_t left_end = match;
        if (t.attr & kAttrLstrip)
          while (left_end > begin && is_space(text[left_end - 1])) left_end--;
        if (left_end > begin) next.push_back({-1, begin, left_end - begin});
        next.push_back({id, 0, 0});
        begin = match + t.text.size();
        if (t.attr & kAttrRstrip)
          while (begin < end && is_space(text[begin])) begin++;
      }
    }
    fragments = std::move(next);
  }
  return fragments;
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special, bool parse_special) const {
  std::vector<int32_t> out;
  const std::vector<Fragment> fragments = partition(text, parse_special);
  if (add_special && add_bos_) out.push_back(bos_);
  bool after_special = true;  // SPM: a space goes before the text and after every special token
  for (const Fragment& f : fragments) {
    if (f.token >= 0) {
      out.push_back(f.token);
      after_special = true;
      continue;
    }
    const std::string_view raw = text.substr(f.begin, f.size);
    if (spm_) {
      const std::string spaced = (add_space_prefix_ && after_special ? " " : "") + std::string(raw);
      encode_spm(replace_all(spaced, " ", kSpmSpace), out);
    } else {
      encode_bpe(raw, out);
    }
    after_special = false;
  }
  if (add_special && add_eos_) out.push_back(eos_);
  return out;
}

int32_t Tokenizer::byte_token(uint8_t byte) const {
  static constexpr char kHex[] = "0123456789ABCDEF";
  const char name[] = {'<', '0', 'x', kHex[byte >> 4], kHex[byte & 15], '>'};
  if (int32_t id = lookup(std::string_view(name, sizeof(name))); id >= 0) return id;
  if (int32_t id = lookup(std::string_view(reinterpret_cast<const char*>(&byte), 1)); id >= 0) return id;
  if (unk_ >= 0) return unk_;
  throw Error(std::string("tokenizer: the text has byte 0x") + kHex[byte >> 4] + kHex[byte & 15] + ", which no token covers (no <0x" +
              kHex[byte >> 4] + kHex[byte & 15] + "> token and no unknown token)");
}

// SentencePiece: merge the adjacent pair that forms the token with the highest score (the leftmost
// of equals) until none does; what is left and is no token is spelled in byte tokens.
void Tokenizer::encode_spm(std::string_view text, std::vector<int32_t>& out) const {
  std::vector<Symbol> symbols = symbols_of(text);
  if (symbols.empty()) return;
  struct Bigram {
    int left, right;
    float score;
    size_t size;
  };
  const auto lower = [](const Bigram& a, const Bigram& b) { return a.score < b.score || (a.score == b.score && a.left > b.left); };
  std::priority_queue<Bigram, std::vector<Bigram>, decltype(lower)> queue(lower);
  const auto try_pair = [&](int left, int right) {
    if (left < 0 || right < 0) return;
    const std::string_view s = text.substr(symbols[left].begin, symbols[left].size + symbols[right].size);
    if (const int32_t id = lookup(s); id >= 0) queue.push({left, right, tokens_[id].score, s.size()});
  };
  for (size_t i = 1; i < symbols.size(); i++) try_pair(static_cast<int>(i) - 1, static_cast<int>(i));
  while (!queue.empty()) {
    const Bigram b = queue.top();
    queue.pop();
    Symbol& left = symbols[b.left];
    Symbol& right = symbols[b.right];
    if (left.size == 0 || right.size == 0 || left.size + right.size != b.size) continue;  // stale
    left.size += right.size;
    right.size = 0;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = b.left;
    try_pair(left.prev, b.left);
    try_pair(b.left, left.next);
  }
  for (int i = 0; i != -1; i = symbols[i].next) {
    const std::string_view s = text.substr(symbols[i].begin, symbols[i].size);
    if (const int32_t id = lookup(s); id >= 0) {
      out.push_back(id);
      continue;
    }
    for (char c : s) out.push_back(byte_token(static_cast<uint8_t>(c)));
  }
}

// Byte-level BPE: each word, in GPT-2's alphabet, merges the adjacent pair with the lowest merge rank
// (the leftmost of equals) until no pair has one. A final symbol that is no token is spelled in
// single-character tokens where they exist and dropped where not, as llama.cpp does.
void Tokenizer::encode_bpe(std::string_view text, std::vector<int32_t>& out) const {
  struct Bigram {
    int left, right;
    int32_t rank;
    std::string text;
  };
  const auto lower = [](const Bigram& a, const Bigram& b) { return a.rank > b.rank || (a.rank == b.rank && a.left > b.left); };
  for (const std::string& raw : unicode::pre_tokenize(text, pre_)) {
    std::string word;
    for (char c : raw) word += unicode::byte_to_text(static_cast<uint8_t>(c));
    if (ignore_merges_) {
      if (const int32_t id = lookup(word); id >= 0) {
        out.push_back(id);
        continue;
      }
    }
    std::vector<Symbol> symbols = symbols_of(word);
    const auto span = [&](int i) { return std::string_view(word).substr(symbols[i].begin, symbols[i].size); };
    std::priority_queue<Bigram, std::vector<Bigram>, decltype(lower)> queue(lower);
    const auto try_pair = [&](int left, int right) {
      if (left < 0 || right < 0) return;
      const int32_t rank = merge_rank(span(left), span(right));
      if (rank >= 0) queue.push({left, right, rank, std::string(span(left)) + std::string(span(right))});
    };
    for (size_t i = 1; i < symbols.size(); i++) try_pair(static_cast<int>(i) - 1, static_cast<int>(i));
    while (!queue.empty()) {
      const Bigram b = queue.top();
      queue.pop();
      Symbol& left = symbols[b.left];
      Symbol& right = symbols[b.right];
      if (left.size == 0 || right.size == 0 || left.size + right.size != b.text.size() ||
          std::string(span(b.left)) + std::string(span(b.right)) != b.text)
        continue;  // stale
      left.size += right.size;
      right.size = 0;
      left.next = right.next;
      if (right.next >= 0) symbols[right.next].prev = b.left;
      try_pair(left.prev, b.left);
      try_pair(b.left, left.next);
    }
    for (size_t i = 0; i < symbols.size(); i++) {
      if (symbols[i].size == 0) continue;
      const std::string_view s = span(static_cast<int>(i));
      if (const int32_t id = lookup(s); id >= 0) {
        out.push_back(id);
        continue;
      }
      for (size_t k = 0; k < s.size(); k++)
        if (const int32_t id = lookup(s.substr(k, 1)); id >= 0) out.push_back(id);
    }
  }
}

// A token's text as printed, special tokens included (llama.cpp's token_to_piece with special).
std::string Tokenizer::render(int32_t id) const {
  const Token& t = tokens_[id];
  if (t.attr & (kAttrSpecial | kAttrUserDefined)) return t.text;
  if (t.attr & kAttrNormal) return spm_ ? replace_all(t.text, kSpmSpace, " ") : byte_level_text(t.text);
  if (t.attr & kAttrByte) return std::string(1, static_cast<char>(byte_of(t.text)));
  return "";  // unused and undefined tokens
}

std::string Tokenizer::piece(int32_t id, bool special) const {
  check(id);
  if (!special && (tokens_[id].attr & kAttrSpecial)) return "";
  return pieces_[id];
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special) const {
  for (int32_t id : ids) check(id);
  bool strip_space = add_space_prefix_;  // the space the SPM prefix put before the first word
  if (skip_special && add_bos_ && !ids.empty() && ids.front() == bos_) {
    strip_space = false;
    ids = ids.subspan(1);
  }
  if (skip_special && add_eos_ && !ids.empty() && ids.back() == eos_) ids = ids.first(ids.size() - 1);
  std::string text;
  for (int32_t id : ids) {
    const std::string p = piece(id, !skip_special);
    text.append(strip_space && !p.empty() && p.front() == ' ' ? std::string_view(p).substr(1) : std::string_view(p));
    strip_space = false;
  }
  if (clean_spaces_) clean_spaces(text);
  return text;
}

// ---- reading tokenizer.ggml.* ----

namespace {

Error key_error(const std::string& key, const std::string& what) { return Error("tokenizer: " + key + " " + what); }

template <class F>
auto read_key(const std::string& key, F&& read) {
  try {
    return read();
  } catch (const Error& e) { throw key_error(key, std::string("is invalid: ") + e.what()); }
}

std::vector<GgufValue> const* array_of(const GgufFile& f, const std::string& key, std::initializer_list<GgufValue::Type> elements) {
  const GgufValue* v = f.find(key);
  if (!v) return nullptr;
  if (v->type != GgufValue::Type::Array) throw key_error(key, std::string("is a ") + gguf_type_name(v->type) + ", not an array");
  if (std::find(elements.begin(), elements.end(), v->element) == elements.end())
    throw key_error(key, std::string("is an array of ") + gguf_type_name(v->element) + ", not of " + gguf_type_name(*elements.begin()));
  return &v->as_array();
}

}  // namespace

Tokenizer Tokenizer::from_gguf(const GgufFile& f) {
  Vocab v;
  const GgufValue* model = f.find("tokenizer.ggml.model");
  if (!model) throw Error("tokenizer: the file has no tokenizer (tokenizer.ggml.model is missing)");
  v.model = read_key("tokenizer.ggml.model", [&] { return model->as_string(); });
  if (const GgufValue* pre = f.find("tokenizer.ggml.pre")) v.pre = read_key("tokenizer.ggml.pre", [&] { return pre->as_string(); });

  const auto* tokens = array_of(f, "tokenizer.ggml.tokens", {GgufValue::Type::String});
  if (!tokens) throw key_error("tokenizer.ggml.tokens", "is missing");
  for (const GgufValue& t : *tokens) v.tokens.push_back(t.as_string());
  const int64_t n = static_cast<int64_t>(v.tokens.size());
  if (const auto* scores = array_of(f, "tokenizer.ggml.scores", {GgufValue::Type::F32, GgufValue::Type::I32}))
    for (const GgufValue& s : *scores) v.scores.push_back(static_cast<float>(s.as_float()));
  if (const auto* types =
          array_of(f, "tokenizer.ggml.token_type", {GgufValue::Type::I32, GgufValue::Type::U32, GgufValue::Type::I8, GgufValue::Type::U8}))
    for (const GgufValue& t : *types) v.types.push_back(static_cast<int32_t>(std::clamp<int64_t>(t.as_int(), -1, 1000)));
  if (v.model == "gpt2") {
    const auto* merges = array_of(f, "tokenizer.ggml.merges", {GgufValue::Type::String});
    if (!merges) throw key_error("tokenizer.ggml.merges", "is missing (a gpt2 tokenizer needs its merges)");
    for (const GgufValue& m : *merges) v.merges.push_back(m.as_string());
  }

  // llama.cpp's defaults, where they are inside the vocabulary.
  const auto fallback = [&](int32_t id) { return id < n ? id : -1; };
  if (v.model == "llama") {
    v.bos = fallback(1);
    v.eos = fallback(2);
    v.unk = fallback(0);
  } else if (v.model == "gpt2") {
    v.bos = v.eos = fallback(11);
  }
  const std::pair<const char*, int32_t*> ids[] = {
      {"tokenizer.ggml.bos_token_id", &v.bos},         {"tokenizer.ggml.eos_token_id", &v.eos},
      {"tokenizer.ggml.eot_token_id", &v.eot},         {"tokenizer.ggml.eom_token_id", &v.eom},
      {"tokenizer.ggml.unknown_token_id", &v.unk},     {"tokenizer.ggml.padding_token_id", &v.pad},
      {"tokenizer.ggml.fim_pre_token_id", &v.fim_pre}, {"tokenizer.ggml.fim_suf_token_id", &v.fim_suf},
      {"tokenizer.ggml.fim_mid_token_id", &v.fim_mid}, {"tokenizer.ggml.fim_pad_token_id", &v.fim_pad},
      {"tokenizer.ggml.fim_rep_token_id", &v.fim_rep}, {"tokenizer.ggml.fim_sep_token_id", &v.fim_sep},
      {"tokenizer.ggml.prefix_token_id", &v.fim_pre},  {"tokenizer.ggml.suffix_token_id", &v.fim_suf},
      {"tokenizer.ggml.middle_token_id", &v.fim_mid},
  };
  for (const auto& [key, id] : ids) {
    const GgufValue* value = f.find(key);
    if (!value) continue;
    const int64_t x = read_key(key, [&] { return value->as_int(); });
    if (x < 0 || x >= n) throw key_error(key, "is " + std::to_string(x) + ", outside the vocabulary of " + std::to_string(n) + " tokens");
    *id = static_cast<int32_t>(x);
  }
  for (const auto& [key, flag] : {std::pair{"tokenizer.ggml.add_bos_token", &v.add_bos},
                                  {"tokenizer.ggml.add_eos_token", &v.add_eos},
                                  {"tokenizer.ggml.add_space_prefix", &v.add_space_prefix}}) {
    if (const GgufValue* value = f.find(key)) *flag = read_key(key, [&] { return value->as_bool(); });
  }
  if (const GgufValue* name = f.find("general.name"); name && name->type == GgufValue::Type::String) v.name = name->as_string();
  return Tokenizer(std::move(v));
}

}  // namespace ugpu::llm
