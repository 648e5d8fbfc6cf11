// The test-model generator (llm/testmodel.h).
#include "llm/testmodel.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <unordered_set>
#include <utility>

#include "common/error.h"
#include "llm/gguf.h"
#include "llm/gguf_writer.h"
#include "llm/quant.h"
#include "llm/unicode.h"

namespace ugpu::llm {

namespace {

// The tokenizers' training text: plain English with the common words, some capitals, digits and
// punctuation. ASCII only, and no '<' (so no piece can look like a special or byte token).
constexpr std::string_view kText =
    "The old town stood by the river, and the people who lived there knew every road and every stone.\n"
    "In the morning the baker opened his shop at six, and the smell of warm bread went down the street.\n"
    "Children walked to school in small groups. They talked about the weather, the games they played, and the\n"
    "things they wanted to do after the summer. Their teacher was a patient woman who liked to ask questions.\n"
    "She would say: what is the most important thing you learned today, and why do you think it matters?\n"
    "Most of the time the answers were simple, but sometimes a child said something that made the whole\n"
    "class think for a long while. On Monday there were 24 students; by Friday there were 25, because a new\n"
    "family had moved into the house near the bridge. The father was a carpenter and the mother wrote books.\n"
    "They had come from a city in the north, where the winters are long and the light is thin and cold.\n"
    "In the afternoon the market filled with farmers selling apples, potatoes, onions, cheese and honey.\n"
    "Prices were written on small boards: 3 apples for 1 coin, a jar of honey for 4 coins, and so on.\n"
    "People came to buy food, but also to meet their friends and to hear the news from other villages.\n"
    "When the sun went down, the lights came on in the windows one by one, and the town became quiet again.\n"
    "An old man sat on a bench by the water and watched the boats. He had been a sailor for many years,\n"
    "and he still remembered the names of the stars that guided him across the sea at night. If you asked\n"
    "him, he would tell you about storms and islands and the strange animals he had seen in distant places.\n"
    "Nobody knew how much of it was true, but everyone agreed that he told the best stories in the world.\n"
    "The river itself was not very wide, yet it carried water from the mountains all the way to the ocean.\n"
    "In spring it rose and covered the low fields; in autumn it was slow and clear, and you could see the\n"
    "fish moving between the rocks. The people of the town said that the river was older than the town,\n"
    "older than the roads, and that it would still be there long after everyone had forgotten their names.\n"
    "Learning to read, to count and to listen were the first lessons; learning to think came later, and it\n"
    "never really ended. Every year the town grew a little, and every year something old was replaced by\n"
    "something new, but the river, the bridge and the stories stayed the same.\n";

constexpr const char* kSpmMarker = "\xe2\x96\x81";  // U+2581 LOWER ONE EIGHTH BLOCK: SentencePiece's word start
constexpr size_t kMinMerges = 16;                   // the fewest merged tokens a vocabulary may have

[[noreturn]] void bad(const std::string& field, const std::string& what) { throw Error("TestModelSpec." + field + ": " + what); }

// ---- random numbers ------------------------------------------------------------------------------

// splitmix64, seeded per tensor from the spec's seed and the tensor's name.
class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed) {}
  uint64_t next() {
    uint64_t z = (s_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }  // [0, 1)
  double normal() {                                                           // Box-Muller
    double u1 = 1.0 - uniform(), u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

 private:
  uint64_t s_;
};

uint64_t tensor_seed(uint64_t seed, const std::string& name) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a
  for (char c : name) h = (h ^ static_cast<uint8_t>(c)) * 0x100000001b3ull;
  return Rng(h ^ (seed * 0x9e3779b97f4a7c15ull)).next();
}

// ---- the weight types ----------------------------------------------------------------------------

struct Weights {
  const char* name;
  GgmlType type;   // of every matrix (q4_k_m: of most)
  uint32_t ftype;  // llama.cpp's LLAMA_FTYPE for general.file_type
  bool mix;        // q4_k_m
};
constexpr Weights kWeights[] = {
    {"f32", GgmlType::F32, 0, false},    {"f16", GgmlType::F16, 1, false},    {"bf16", GgmlType::BF16, 32, false},
    {"q8_0", GgmlType::Q8_0, 7, false},  {"q4_0", GgmlType::Q4_0, 2, false},  {"q4_1", GgmlType::Q4_1, 3, false},
    {"q5_0", GgmlType::Q5_0, 8, false},  {"q5_1", GgmlType::Q5_1, 9, false},  {"q4_k", GgmlType::Q4_K, 14, false},
    {"q5_k", GgmlType::Q5_K, 16, false}, {"q6_k", GgmlType::Q6_K, 18, false}, {"q4_k_m", GgmlType::Q4_K, 15, true},
};

// llama-quantize's choice for layer i of n in Q4_K_M (attn_v and ffn_down get Q6_K where true).
bool use_more_bits(int64_t i, int64_t n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

// ---- tokenizers ----------------------------------------------------------------------------------

// GPT-2's byte-level alphabet: the printable bytes stand for themselves, the others for U+0100 on.
bool printable_byte(int b) { return (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255); }

std::vector<std::string> byte_chars() {
  std::vector<std::string> chars(256);
  for (int b = 0; b < 256; ++b) chars[b] = unicode::byte_to_text(static_cast<uint8_t>(b));
  return chars;
}

// GPT-2's vocabulary order for the byte tokens: the printable bytes first, then the others.
std::vector<int> byte_order() {
  std::vector<int> order;
  for (bool printable : {true, false})
    for (int b = 0; b < 256; ++b)
      if (printable_byte(b) == printable) order.push_back(b);
  return order;
}

struct Word {
  std::vector<std::string> symbols;
  int64_t count = 0;
};

struct Merge {
  std::string a, b;
};

// Greedy BPE on the words: merges the most frequent adjacent pair (ties: the smallest pair) until
// every word is one symbol. The merges are in learned order; a vocabulary of any size takes a prefix.
std::vector<Merge> learn_merges(std::vector<Word> words) {
  std::vector<Merge> merges;
  for (;;) {
    std::map<std::pair<std::string, std::string>, int64_t> pairs;
    for (const Word& w : words)
      for (size_t i = 0; i + 1 < w.symbols.size(); ++i) pairs[{w.symbols[i], w.symbols[i + 1]}] += w.count;
    if (pairs.empty()) return merges;
    auto best = pairs.begin();
    for (auto it = pairs.begin(); it != pairs.end(); ++it)
      if (it->second > best->second) best = it;
    const auto [a, b] = best->first;
    merges.push_back({a, b});
    for (Word& w : words) {
      std::vector<std::string> out;
      for (size_t i = 0; i < w.symbols.size(); ++i) {
        if (i + 1 < w.symbols.size() && w.symbols[i] == a && w.symbols[i + 1] == b) out.push_back(a + b), ++i;
        else out.push_back(w.symbols[i]);
      }
      w.symbols = std::move(out);
    }
  }
}

std::vector<Word> to_words(const std::map<std::string, int64_t>& counts, const std::vector<std::string>& symbol_of_byte, const char* prefix) {
  std::vector<Word> words;
  for (const auto& [text, count] : counts) {
    Word w;
    w.count = count;
    if (prefix) w.symbols.push_back(prefix);
    for (char c : text) w.symbols.push_back(symbol_of_byte[static_cast<uint8_t>(c)]);
    words.push_back(std::move(w));
  }
  return words;
}

// SentencePiece words: the text split at whitespace, each word prefixed with the word-start mark.
const std::vector<Merge>& spm_merges() {
  static const std::vector<Merge> merges = [] {
    std::map<std::string, int64_t> counts;
    std::string word;
    for (char c : kText) {
      if (c == ' ' || c == '\n') {
        if (!word.empty()) ++counts[word], word.clear();
      } else {
        word += c;
      }
    }
    if (!word.empty()) ++counts[word];
    std::vector<std::string> identity(256);
    for (int b = 0; b < 256; ++b) identity[b] = std::string(1, static_cast<char>(b));
    return learn_merges(to_words(counts, identity, kSpmMarker));
  }();
  return merges;
}

// The SentencePiece alphabet: the characters of the text (and the word-start mark), most frequent first.
const std::vector<std::string>& spm_alphabet() {
  static const std::vector<std::string> alphabet = [] {
    std::map<std::string, int64_t> counts;
    int64_t words = 0;
    bool in_word = false;
    for (char c : kText) {
      bool space = c == ' ' || c == '\n';
      if (!space) ++counts[std::string(1, c)], words += !in_word;
      in_word = !space;
    }
    counts[kSpmMarker] = words;
    std::vector<std::pair<int64_t, std::string>> order;
    for (const auto& [s, n] : counts) order.push_back({-n, s});
    std::sort(order.begin(), order.end());
    std::vector<std::string> out;
    for (const auto& p : order) out.push_back(p.second);
    return out;
  }();
  return alphabet;
}

// Byte-level BPE pre-tokens, close to what the llama-bpe and qwen2 pre-tokenizers cut: an optional
// space and a run of letters, an optional space and one digit, an optional space and a run of
// punctuation, runs of newlines.
const std::vector<Merge>& bpe_merges() {
  static const std::vector<Merge> merges = [] {
    auto cls = [](char c) {
      if (std::isalpha(static_cast<unsigned char>(c))) return 0;
      if (std::isdigit(static_cast<unsigned char>(c))) return 1;
      if (c == '\n') return 2;
      if (c == ' ') return 3;
      return 4;
    };
    std::map<std::string, int64_t> counts;
    size_t i = 0;
    while (i < kText.size()) {
      size_t start = i;
      if (kText[i] == ' ' && i + 1 < kText.size() && cls(kText[i + 1]) != 2 && cls(kText[i + 1]) != 3) ++i;
      int k = cls(kText[i]);
      ++i;
      if (k != 1)
        while (i < kText.size() && cls(kText[i]) == k) ++i;
      ++counts[std::string(kText.substr(start, i - start))];
    }
    return learn_merges(to_words(counts, byte_chars(), nullptr));
  }();
  return merges;
}

bool all_letters(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; });
}

// Takes the learned merges in order until `pieces` holds `want` tokens (a merge whose result is
// already a token counts as a merge but adds none); when the text runs out, joins word-start tokens
// (the mark and letters) with letter-only tokens, a pair at a time.
void grow(std::vector<std::string>& pieces, std::unordered_set<std::string>& known, const std::vector<Merge>& learned, const std::string& marker,
          const std::vector<std::string>& letters, size_t want, std::vector<Merge>* merges) {
  for (size_t m = 0; m < learned.size() && pieces.size() < want; ++m) {
    const Merge& mg = learned[m];
    if (merges) merges->push_back(mg);
    if (known.insert(mg.a + mg.b).second) pieces.push_back(mg.a + mg.b);
  }
  if (pieces.size() >= want) return;
  std::vector<std::string> heads, tails;
  for (const std::string& p : pieces) {
    if (p.size() > marker.size() && p.compare(0, marker.size(), marker) == 0 && all_letters(std::string_view(p).substr(marker.size())))
      heads.push_back(p);
    else if (all_letters(p)) tails.push_back(p);
  }
  tails.insert(tails.end(), letters.begin(), letters.end());
  for (size_t h = 0; pieces.size() < want && h < heads.size(); ++h) {
    const std::string a = heads[h];  // a copy: heads grows below
    for (size_t t = 0; t < tails.size() && pieces.size() < want; ++t) {
      std::string s = a + tails[t];
      if (!known.insert(s).second) continue;
      pieces.push_back(s);
      heads.push_back(s);
      if (merges) merges->push_back({a, tails[t]});
    }
  }
}

struct Vocab {
  std::string model, pre;
  std::vector<std::string> tokens;
  std::vector<float> scores;  // SentencePiece only
  std::vector<int64_t> types;
  std::vector<std::string> merges;  // BPE only
  int64_t bos = -1, eos = -1, unk = -1, pad = -1;
  bool add_bos = false, write_add_eos = false;
  std::string chat_template;
};

enum TokenType : int64_t { kNormal = 1, kUnknown = 2, kControl = 3, kByte = 6 };

constexpr const char* kLlama3Template =
    "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = '<|start_header_id|>' + message['role'] + "
    "'<|end_header_id|>\n\n'+ message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}"
    "{% endif %}{{ content }}{% endfor %}{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}";
constexpr const char* kQwen2Template =
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\nYou are a helpful "
    "assistant.<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";
constexpr const char* kChatMlTemplate =
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";
constexpr const char* kMistralTemplate =
    "{{ bos_token }}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation "
    "roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% if message['role'] == 'user' %}{{ '[INST] ' + message['content'] + "
    "' [/INST]' }}{% elif message['role'] == 'assistant' %}{{ message['content'] + eos_token}}{% else %}{{ raise_exception('Only user and "
    "assistant roles are supported!') }}{% endif %}{% endfor %}";

size_t min_vocab(const std::string& tokenizer) {
  if (tokenizer == "llama") return 3 + 256 + spm_alphabet().size() + kMinMerges;
  return 256 + (tokenizer == "gpt2" ? 3 : 5) + kMinMerges;
}

Vocab spm_vocab(const TestModelSpec& spec) {
  Vocab v;
  v.model = "llama";
  v.tokens = {"<unk>", "<s>", "</s>"};
  v.types = {kUnknown, kControl, kControl};
  char buf[8];
  for (int b = 0; b < 256; ++b) {
    std::snprintf(buf, sizeof buf, "<0x%02X>", b);
    v.tokens.push_back(buf), v.types.push_back(kByte);
  }
  v.scores.assign(v.tokens.size(), 0.0f);
  const std::vector<std::string>& alphabet = spm_alphabet();
  size_t want = static_cast<size_t>(spec.vocab) - v.tokens.size() - alphabet.size();
  std::vector<std::string> pieces;
  std::unordered_set<std::string> known(alphabet.begin(), alphabet.end());
  std::vector<std::string> letters;
  for (const std::string& c : alphabet)
    if (all_letters(c) && std::islower(static_cast<unsigned char>(c[0]))) letters.push_back(c);
  grow(pieces, known, spm_merges(), kSpmMarker, letters, want, nullptr);
  pieces.insert(pieces.end(), alphabet.begin(), alphabet.end());  // single characters last, scored lowest
  for (size_t i = 0; i < pieces.size(); ++i) {
    v.tokens.push_back(pieces[i]), v.types.push_back(kNormal), v.scores.push_back(-static_cast<float>(i));
  }
  v.unk = 0, v.bos = 1, v.eos = 2;
  v.add_bos = true, v.write_add_eos = true;
  if (spec.arch == "mistral") v.chat_template = kMistralTemplate;
  return v;
}

Vocab bpe_vocab(const TestModelSpec& spec, bool llama3) {
  Vocab v;
  v.model = "gpt2";
  v.pre = llama3 ? "llama-bpe" : "qwen2";
  std::vector<std::string> chars = byte_chars();
  for (int b : byte_order()) v.tokens.push_back(chars[b]), v.types.push_back(kNormal);
  std::vector<std::string> specials;
  if (llama3) specials = {"<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"};
  else specials = {"<|endoftext|>", "<|im_start|>", "<|im_end|>"};
  size_t want = static_cast<size_t>(spec.vocab) - v.tokens.size() - specials.size();
  std::vector<std::string> pieces;
  std::unordered_set<std::string> known(v.tokens.begin(), v.tokens.end());
  std::vector<std::string> letters;
  for (char c = 'a'; c <= 'z'; ++c) letters.push_back(std::string(1, c));
  std::vector<Merge> merges;
  grow(pieces, known, bpe_merges(), chars[' '], letters, want, &merges);
  for (const std::string& p : pieces) v.tokens.push_back(p), v.types.push_back(kNormal);
  for (const Merge& m : merges) v.merges.push_back(m.a + " " + m.b);
  int64_t first_special = static_cast<int64_t>(v.tokens.size());
  for (const std::string& s : specials) v.tokens.push_back(s), v.types.push_back(kControl);
  if (llama3) {
    v.bos = first_special, v.eos = first_special + 4, v.add_bos = true;
    v.chat_template = kLlama3Template;
  } else {
    v.bos = v.pad = first_special, v.eos = first_special + 2, v.add_bos = false;
    v.chat_template = spec.arch == "qwen2" ? kQwen2Template : kChatMlTemplate;
  }
  return v;
}

// ---- the model -----------------------------------------------------------------------------------

enum class Init { Embedding, Matrix, Norm, Bias };

struct Planned {
  std::string name;
  std::vector<int64_t> dims;
  GgmlType type;
  Init init;
  const char* row_field;  // the spec field dims[0] comes from, for the block-size error
};

struct Plan {
  std::string arch;  // general.architecture
  const Weights* weights = nullptr;
  std::string tokenizer;
  int64_t head_dim = 0;
  std::vector<Planned> tensors;
};

Plan plan(const TestModelSpec& s) {
  Plan p;
  if (s.arch != "llama" && s.arch != "mistral" && s.arch != "qwen2" && s.arch != "qwen3")
    bad("arch", "'" + s.arch + "' is not one of llama, mistral, qwen2, qwen3");
  p.arch = s.arch == "mistral" ? "llama" : s.arch;
  for (const Weights& w : kWeights)
    if (s.weights == w.name) p.weights = &w;
  if (!p.weights) bad("weights", "'" + s.weights + "' is not one of f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1 q4_k q5_k q6_k q4_k_m");
  p.tokenizer = s.tokenizer.empty() ? (s.arch == "qwen2" || s.arch == "qwen3" ? "gpt2" : "llama") : s.tokenizer;
  if (p.tokenizer != "llama" && p.tokenizer != "gpt2" && p.tokenizer != "gpt2-llama3")
    bad("tokenizer", "'" + s.tokenizer + "' is not one of \"\" (the arch's usual), llama, gpt2, gpt2-llama3");

  auto range = [](const char* field, int64_t v, int64_t lo, int64_t hi) {
    if (v < lo || v > hi) bad(field, std::to_string(v) + " is outside " + std::to_string(lo) + ".." + std::to_string(hi));
  };
  range("dim", s.dim, 1, 1 << 16);
  range("layers", s.layers, 1, 512);
  range("heads", s.heads, 1, 1024);
  range("kv_heads", s.kv_heads, 1, 1024);
  range("ffn", s.ffn, 1, 1 << 18);
  range("context", s.context, 1, 1 << 24);
  range("head_dim", s.head_dim, 0, 1024);
  range("vocab", s.vocab, 1, 1 << 21);
  if (s.heads % s.kv_heads) bad("kv_heads", std::to_string(s.kv_heads) + " does not divide heads (" + std::to_string(s.heads) + ")");
  p.head_dim = s.head_dim;
  if (p.head_dim == 0) {
    if (s.dim % s.heads) bad("heads", std::to_string(s.heads) + " does not divide dim (" + std::to_string(s.dim) + "); set head_dim");
    p.head_dim = s.dim / s.heads;
  }
  if (p.head_dim % 2) bad("head_dim", "the head size " + std::to_string(p.head_dim) + " is odd; rope rotates pairs");
  if (!(s.rope_base > 0) || !std::isfinite(s.rope_base)) bad("rope_base", "must be a positive number");
  if (!(s.rms_eps > 0) || !std::isfinite(s.rms_eps)) bad("rms_eps", "must be a positive number");
  size_t need = min_vocab(p.tokenizer);
  if (static_cast<size_t>(s.vocab) < need)
    bad("vocab", std::to_string(s.vocab) + " is too small for the " + p.tokenizer + " tokenizer: it needs at least " + std::to_string(need) +
                     " (special and byte tokens, " + (p.tokenizer == "llama" ? "the text's characters, " : "") + "and " + std::to_string(kMinMerges) +
                     " merged tokens)");

  const int64_t q = s.heads * p.head_dim, kv = s.kv_heads * p.head_dim, L = s.layers;
  const GgmlType base = p.weights->type;
  const bool mix = p.weights->mix;
  auto matrix = [&](const std::string& name, std::vector<int64_t> dims, const char* field, bool more_bits) {
    GgmlType t = mix && more_bits ? GgmlType::Q6_K : base;
    p.tensors.push_back({name, std::move(dims), t, Init::Matrix, field});
  };
  auto vec = [&](const std::string& name, int64_t n, Init init) { p.tensors.push_back({name, {n}, GgmlType::F32, init, nullptr}); };

  matrix("token_embd.weight", {s.dim, s.vocab}, "dim", s.tied_output);  // tied: quantized as the output is
  p.tensors.back().init = Init::Embedding;
  for (int64_t i = 0; i < L; ++i) {
    std::string b = "blk." + std::to_string(i) + ".";
    vec(b + "attn_norm.weight", s.dim, Init::Norm);
    matrix(b + "attn_q.weight", {s.dim, q}, "dim", false);
    if (s.arch == "qwen2") vec(b + "attn_q.bias", q, Init::Bias);
    matrix(b + "attn_k.weight", {s.dim, kv}, "dim", false);
    if (s.arch == "qwen2") vec(b + "attn_k.bias", kv, Init::Bias);
    matrix(b + "attn_v.weight", {s.dim, kv}, "dim", use_more_bits(i, L));
    if (s.arch == "qwen2") vec(b + "attn_v.bias", kv, Init::Bias);
    if (s.arch == "qwen3") vec(b + "attn_q_norm.weight", p.head_dim, Init::Norm), vec(b + "attn_k_norm.weight", p.head_dim, Init::Norm);
    matrix(b + "attn_output.weight", {q, s.dim}, s.head_dim ? "head_dim" : "heads", false);
    vec(b + "ffn_norm.weight", s.dim, Init::Norm);
    matrix(b + "ffn_gate.weight", {s.dim, s.ffn}, "dim", false);
    matrix(b + "ffn_up.weight", {s.dim, s.ffn}, "dim", false);
    matrix(b + "ffn_down.weight", {s.ffn, s.dim}, "ffn", use_more_bits(i, L));
  }
  vec("output_norm.weight", s.dim, Init::Norm);
  if (!s.tied_output) matrix("output.weight", {s.dim, s.vocab}, "dim", true);

  int64_t params = 0;
  for (const Planned& t : p.tensors) {
    const GgmlTypeInfo* info = ggml_type_info(static_cast<uint32_t>(t.type));
    if (t.dims[0] % info->block)
      bad(t.row_field, std::to_string(t.dims[0]) + " values make the rows of " + t.name + ", and " + info->name + " (weights " + s.weights +
                           ") packs rows in blocks of " + std::to_string(info->block) + ": use a multiple of " + std::to_string(info->block));
    int64_t n = 1;
    for (int64_t d : t.dims) n *= d;
    params += n;
  }
  if (params > (int64_t{1} << 31)) bad("dim", "the model would have " + std::to_string(params) + " parameters; test models are limited to 2^31");
  return p;
}

std::vector<uint8_t> tensor_bytes(const Planned& t, uint64_t seed) {
  int64_t n = 1;
  for (int64_t d : t.dims) n *= d;
  std::vector<float> x(static_cast<size_t>(n));
  Rng rng(tensor_seed(seed, t.name));
  // Matrices N(0, 1/fan_in) keep activations O(1); the projections back into the residual stream
  // (attn_output, ffn_down) are twice that and the embeddings as small as a matrix row, so the
  // residual stream is mostly what the layers added and a tied head does not just echo the input.
  double sd = t.init == Init::Bias ? 0.2 : 1.0 / std::sqrt(static_cast<double>(t.dims[0]));
  if (t.name.ends_with("attn_output.weight") || t.name.ends_with("ffn_down.weight")) sd *= 2;
  for (float& v : x) v = static_cast<float>(t.init == Init::Norm ? 0.9 + 0.2 * rng.uniform() : sd * rng.normal());
  std::vector<uint8_t> out;
  switch (t.type) {
    case GgmlType::F32:
      out.resize(x.size() * 4);
      std::memcpy(out.data(), x.data(), out.size());
      break;
    case GgmlType::F16:
    case GgmlType::BF16:
      out.resize(x.size() * 2);
      for (size_t i = 0; i < x.size(); ++i) {
        uint16_t h = t.type == GgmlType::F16 ? float_to_half(x[i]) : float_to_bf16(x[i]);
        out[2 * i] = static_cast<uint8_t>(h), out[2 * i + 1] = static_cast<uint8_t>(h >> 8);
      }
      break;
    default: out = quantize(t.type, x); break;
  }
  return out;
}

GgufWriter build(const TestModelSpec& spec) {
  Plan p = plan(spec);
  Vocab v = p.tokenizer == "llama" ? spm_vocab(spec) : bpe_vocab(spec, p.tokenizer == "gpt2-llama3");
  if (v.tokens.size() != static_cast<size_t>(spec.vocab))  // the head's rows and the vocabulary must agree
    throw Error("test model: built " + std::to_string(v.tokens.size()) + " tokens for a vocab of " + std::to_string(spec.vocab));
  const std::string a = p.arch + ".";
  const bool custom_head = spec.head_dim != 0 && spec.head_dim * spec.heads != spec.dim;
  auto u32 = [](int64_t x) { return static_cast<uint32_t>(x); };

  GgufWriter w;
  w.add_string("general.architecture", p.arch);
  w.add_string("general.type", "model");
  w.add_string("general.name", "ugpu test " + spec.arch + " " + spec.weights);
  w.add_u32(a + "block_count", u32(spec.layers));
  w.add_u32(a + "context_length", u32(spec.context));
  w.add_u32(a + "embedding_length", u32(spec.dim));
  w.add_u32(a + "feed_forward_length", u32(spec.ffn));
  w.add_u32(a + "attention.head_count", u32(spec.heads));
  w.add_u32(a + "attention.head_count_kv", u32(spec.kv_heads));
  w.add_f32(a + "rope.freq_base", static_cast<float>(spec.rope_base));
  w.add_f32(a + "attention.layer_norm_rms_epsilon", static_cast<float>(spec.rms_eps));
  if (custom_head || spec.arch == "qwen3") {
    w.add_u32(a + "attention.key_length", u32(p.head_dim));
    w.add_u32(a + "attention.value_length", u32(p.head_dim));
  }
  w.add_u32("general.file_type", p.weights->ftype);
  if (p.arch == "llama") {  // the converter's LlamaModel adds these; Qwen's do not
    w.add_u32(a + "vocab_size", u32(spec.vocab));
    w.add_u32(a + "rope.dimension_count", u32(p.head_dim));
  }
  w.add_u32("general.quantization_version", 2);

  w.add_string("tokenizer.ggml.model", v.model);
  if (!v.pre.empty()) w.add_string("tokenizer.ggml.pre", v.pre);
  w.add_strings("tokenizer.ggml.tokens", v.tokens);
  if (!v.scores.empty()) w.add_f32s("tokenizer.ggml.scores", v.scores);
  w.add_ints("tokenizer.ggml.token_type", GgufValue::Type::I32, v.types);
  if (!v.merges.empty()) w.add_strings("tokenizer.ggml.merges", v.merges);
  w.add_u32("tokenizer.ggml.bos_token_id", u32(v.bos));
  w.add_u32("tokenizer.ggml.eos_token_id", u32(v.eos));
  if (v.unk >= 0) w.add_u32("tokenizer.ggml.unknown_token_id", u32(v.unk));
  if (v.pad >= 0) w.add_u32("tokenizer.ggml.padding_token_id", u32(v.pad));
  w.add_bool("tokenizer.ggml.add_bos_token", v.add_bos);
  if (v.write_add_eos) w.add_bool("tokenizer.ggml.add_eos_token", false);
  if (!v.chat_template.empty()) w.add_string("tokenizer.chat_template", v.chat_template);

  for (const Planned& t : p.tensors) w.add_tensor(t.name, t.dims, t.type, tensor_bytes(t, spec.seed));
  return w;
}

}  // namespace

void write_test_model(const TestModelSpec& spec, const std::string& path) { build(spec).write(path); }
std::vector<uint8_t> test_model_bytes(const TestModelSpec& spec) { return build(spec).bytes(); }
std::string_view test_model_text() { return kText; }

}  // namespace ugpu::llm
