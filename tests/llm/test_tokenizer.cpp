// The GGUF tokenizers (llm/tokenizer.h) and their Unicode helpers (llm/unicode.h) on small vocabularies
// built here, with every expected id worked out by hand from llama.cpp's merge order; pre-tokenizer
// splits on tricky text; round trips on random text and bytes; malformed vocabularies refused.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "common/error.h"
#include "llm/gguf.h"
#include "llm/tokenizer.h"
#include "llm/unicode.h"

namespace ugpu::test {
namespace {
using llm::Tokenizer;
using llm::unicode::PreTokenizer;
using Ids = std::vector<int32_t>;
using Words = std::vector<std::string>;

// SentencePiece: 0 <unk>, 1 <s>, 2 </s>, 3..258 the byte tokens <0x00>..<0xFF>, then pieces by score.
constexpr int32_t kByte0 = 3;
constexpr int32_t kSpace = 259, kL = 262, kD = 266, kLL = 267, kSpaceH = 270, kHello = 271, kSpaceHello = 272, kOr = 273, kSpaceW = 274, kUser = 275,
                  kImEnd = 276;
Tokenizer::Vocab spm_vocab() {
  Tokenizer::Vocab v;
  v.model = "llama";
  v.tokens = {"<unk>", "<s>", "</s>"};
  v.types = {Tokenizer::kUnknown, Tokenizer::kControl, Tokenizer::kControl};
  for (int b = 0; b < 256; b++) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    v.tokens.push_back(name);
    v.types.push_back(Tokenizer::kByte);
  }
  v.scores.assign(v.tokens.size(), 0.0f);
  const std::pair<const char*, float> pieces[] = {{"\xE2\x96\x81", -10},
                                                  {"h", -10},
                                                  {"e", -10},
                                                  {"l", -10},
                                                  {"o", -10},
                                                  {"w", -10},
                                                  {"r", -10},
                                                  {"d", -10},
                                                  {"ll", -3},
                                                  {"he", -4},
                                                  {"llo", -2},
                                                  {"\xE2\x96\x81h", -5},
                                                  {"hello", -1},
                                                  {"\xE2\x96\x81hello", -0.5f},
                                                  {"or", -6},
                                                  {"\xE2\x96\x81w", -5}};
  for (auto [text, score] : pieces) {
    v.tokens.push_back(text);
    v.scores.push_back(score);
    v.types.push_back(Tokenizer::kNormal);
  }
  v.tokens.push_back("<|user|>");  // 275
  v.scores.push_back(0);
  v.types.push_back(Tokenizer::kUserDefined);
  v.tokens.push_back("<|im_end|>");  // 276: a normal token llama.cpp makes an end-of-generation control token
  v.scores.push_back(0);
  v.types.push_back(Tokenizer::kNormal);
  v.bos = 1;
  v.eos = 2;
  v.unk = 0;
  return v;
}

// Byte-level BPE: 0..255 GPT-2's byte alphabet (token b is byte b), 256.. the merge results in rank
// order, then three control tokens and "hel", which no merge makes.
constexpr int32_t kBpeLL = 256, kBpeHe = 257, kBpeHello = 259, kBpeWorld = 264, kBegin = 265, kEnd = 266, kEot = 267, kHel = 268;
Tokenizer::Vocab bpe_vocab(const std::string& pre) {
  Tokenizer::Vocab v;
  v.model = "gpt2";
  v.pre = pre;
  for (int b = 0; b < 256; b++) v.tokens.push_back(llm::unicode::byte_to_text(static_cast<uint8_t>(b)));
  for (const char* m : {"l l", "h e", "he ll", "hell o", "\xC4\xA0 w", "o r", "\xC4\xA0w or", "l d", "\xC4\xA0wor ld"}) {
    v.merges.push_back(m);
    std::string joined = m;
    joined.erase(joined.find(' '), 1);
    v.tokens.push_back(joined);
  }
  v.types.assign(v.tokens.size(), Tokenizer::kNormal);
  for (const char* t : {"<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>"}) {
    v.tokens.push_back(t);
    v.types.push_back(Tokenizer::kControl);
  }
  v.tokens.push_back("hel");
  v.types.push_back(Tokenizer::kNormal);
  v.bos = kBegin;
  v.eos = kEnd;
  return v;
}

int32_t byte(uint8_t b) { return b; }  // in bpe_vocab

Words split(std::string_view text, PreTokenizer pre) { return llm::unicode::pre_tokenize(text, pre); }

TEST_CASE("tokenizer: UTF-8 decoding and code point classes as llama.cpp has them") {
  using namespace llm::unicode;
  CHECK(decode("a\xC3\xA9\xE6\x97\xA5\xF0\x9F\x98\x80") == std::vector<uint32_t>{'a', 0xE9, 0x65E5, 0x1F600});
  CHECK(decode("\xC3(") == std::vector<uint32_t>{kReplacement, '('});              // a missing continuation byte
  CHECK(decode("\xE2\x82") == std::vector<uint32_t>{kReplacement, kReplacement});  // cut short: one U+FFFD per byte
  CHECK(decode("\x80\xFF") == std::vector<uint32_t>{kReplacement, kReplacement});  // not lead bytes
  CHECK(decode("\xC0\x80") == std::vector<uint32_t>{0});                           // overlong, decoded as written
  CHECK(decode("\xF7\xBF\xBF\xBF") == std::vector<uint32_t>{0x1FFFFF});
  CHECK(sanitize("a\xC3(") == "a\xEF\xBF\xBD(");
  CHECK(sanitize("\xF7\xBF\xBF\xBF") == "\xEF\xBF\xBD");
  CHECK(sequence_length(0x41) == 1);
  CHECK(sequence_length(0x80) == 1);
  CHECK(sequence_length(0xC3) == 2);
  CHECK(sequence_length(0xE2) == 3);
  CHECK(sequence_length(0xFF) == 4);

  CHECK(flags('a') == kLetter);
  CHECK(flags('7') == kNumber);
  CHECK(flags(' ') == (kSeparator | kWhitespace));
  CHECK(flags('\n') == (kControl | kWhitespace));
  CHECK(flags(0x1C) == kControl);  // not White_Space, though Python's str.isspace says so
  CHECK(flags(0x85) == (kControl | kWhitespace));
  CHECK(flags(0x3000) == (kSeparator | kWhitespace));
  CHECK(flags('$') == kSymbol);
  CHECK(flags(',') == kPunctuation);
  CHECK(flags(0x0301) == kMark);
  CHECK(flags(0x00BD) == kNumber);  // ½
  CHECK(flags(0x65E5) == kLetter);  // 日
  CHECK(flags(0x0378) == kUndefined);
  CHECK(flags(0xE000) == kControl);  // private use
  CHECK(flags(0xD800) == kControl);  // surrogate
  CHECK(flags(0x2EBF0) == kLetter);  // CJK Extension I, Unicode 15.1
  CHECK(flags(0x10FFFF) == kUndefined);
  CHECK(flags(0x110000) == kUndefined);

  CHECK(byte_to_text('a') == "a");
  CHECK(byte_to_text(' ') == "\xC4\xA0");   // Ġ
  CHECK(byte_to_text('\n') == "\xC4\x8A");  // Ċ
  CHECK(byte_to_text(0xAD) == "\xC5\x83");  // the last of the 68 remapped bytes: U+0143
  CHECK(text_to_byte(0x120) == ' ');
  CHECK(text_to_byte('~') == '~');
  CHECK(text_to_byte(0x144) == -1);
  for (int b = 0; b < 256; b++) CHECK(text_to_byte(decode(byte_to_text(static_cast<uint8_t>(b)))[0]) == b);
}

TEST_CASE("tokenizer: LLaMA 3 and Qwen2 pre-tokenizers split like llama.cpp") {
  const char* text = "Hello, world! I'm fine; it's 1234567 apples.";
  CHECK(split(text, PreTokenizer::kLlama3) ==
        Words{"Hello", ",", " world", "!", " I", "'m", " fine", ";", " it", "'s", " ", "123", "456", "7", " apples", "."});
  CHECK(split(text, PreTokenizer::kQwen2) ==
        Words{"Hello", ",", " world", "!", " I", "'m", " fine", ";", " it", "'s", " ", "1", "2", "3", "4", "5", "6", "7", " apples", "."});
  CHECK(split(text, PreTokenizer::kGpt2) == Words{"Hello", ",", " world", "!", " I", "'m", " fine", ";", " it", "'s", " 1234567", " apples", "."});

  // Newlines and runs of spaces: \s*[\r\n]+ takes spaces up to the last newline; \s+(?!\S) leaves the
  // last space of a run to the word after it, except at the end.
  const char* spaces = "a\n\nb  c   \n d\t\te  ";
  CHECK(split(spaces, PreTokenizer::kLlama3) == Words{"a", "\n\n", "b", " ", " c", "   \n", " d", "\t", "\te", "  "});
  CHECK(split(spaces, PreTokenizer::kQwen2) == Words{"a", "\n\n", "b", " ", " c", "   \n", " d", "\t", "\te", "  "});
  CHECK(split(spaces, PreTokenizer::kGpt2) == Words{"a", "\n", "\n", "b", " ", " c", "   \n", " d", "\t", "\t", "e", "  "});

  // Contractions: case-insensitive for LLaMA 3 and Qwen2, not for GPT-2; punctuation keeps the newlines after it.
  CHECK(split("I'M don't", PreTokenizer::kLlama3) == Words{"I", "'M", " don", "'t"});
  CHECK(split("I'M don't", PreTokenizer::kGpt2) == Words{"I", "'", "M", " don", "'t"});
  CHECK(split("I'M\r\n\r\nok", PreTokenizer::kQwen2) == Words{"I", "'M", "\r\n\r\n", "ok"});
  CHECK(split("end.\n\nNext ???", PreTokenizer::kLlama3) == Words{"end", ".\n\n", "Next", " ???"});
  CHECK(split("x 'hello", PreTokenizer::kLlama3) == Words{"x", " '", "hello"});

  // Non-ASCII letters and numbers.
  const char* intl = "h\xC3\xA9llo w\xC3\xB6rld \xE6\x97\xA5\xE6\x9C\xAC \xC2\xBDx";  // héllo wörld 日本 ½x
  CHECK(split(intl, PreTokenizer::kLlama3) == Words{"h\xC3\xA9llo", " w\xC3\xB6rld", " \xE6\x97\xA5\xE6\x9C\xAC", " ", "\xC2\xBD", "x"});
  CHECK(split(intl, PreTokenizer::kGpt2) == Words{"h\xC3\xA9llo", " w\xC3\xB6rld", " \xE6\x97\xA5\xE6\x9C\xAC", " \xC2\xBD", "x"});
  CHECK(split("\xE3\x80\x80x", PreTokenizer::kLlama3) == Words{"\xE3\x80\x80x"});  // ideographic space + letter

  // Invalid UTF-8 is split as U+FFFD (a symbol).
  CHECK(split("ab\xFF\xFE cd", PreTokenizer::kLlama3) == Words{"ab", "\xEF\xBF\xBD\xEF\xBF\xBD", " cd"});
  CHECK(split("", PreTokenizer::kLlama3).empty());
}

TEST_CASE("tokenizer: llama.cpp's default, StarCoder and Falcon pre-tokenizers") {
  CHECK(split("Hello, world! 12345", PreTokenizer::kDefault) == Words{"Hello", ",", " world", "!", " ", "123", "45"});
  CHECK(split("a+b=c", PreTokenizer::kDefault) == Words{"a", "+", "b", "=", "c"});
  CHECK(split("ab 123", PreTokenizer::kStarCoder) == Words{"ab", " ", "1", "2", "3"});
  CHECK(split("x`y 1234", PreTokenizer::kDefault) == Words{"x", "`", "y", " ", "123", "4"});
  CHECK(split("x`y 1234", PreTokenizer::kFalcon) == Words{"x", "`", "y", " ", "123", "4"});
  CHECK(split("x`y 1234", PreTokenizer::kStarCoder) == Words{"x", "`", "y", " ", "1", "2", "3", "4"});
}

TEST_CASE("tokenizer: SPM merges by score, leftmost first, with byte fallback") {
  const Tokenizer tok(spm_vocab());
  CHECK(tok.model() == "llama");
  CHECK(tok.size() == 277);
  CHECK(tok.bos() == 1);
  CHECK(tok.eos() == 2);
  // " hello world" -> ▁hello ▁w or l d: ll, llo, he, hello, ▁hello, then ▁w (leftmost of the two -5s
  // after ▁h went stale), then or.
  CHECK(tok.encode("hello world") == Ids{1, kSpaceHello, kSpaceW, kOr, kL, kD});
  CHECK(tok.encode("hello world", false) == Ids{kSpaceHello, kSpaceW, kOr, kL, kD});
  CHECK(tok.encode("lll", false) == Ids{kSpace, kLL, kL});                                               // equal scores: the left pair first
  CHECK(tok.encode("h\xC3\xA9\n", false) == Ids{kSpaceH, kByte0 + 0xC3, kByte0 + 0xA9, kByte0 + 0x0A});  // é and \n are no tokens
  CHECK(tok.encode("", true) == Ids{1});
  CHECK(tok.encode("", false).empty());
  CHECK(tok.encode(" ", false) == Ids{kSpace, kSpace});
  // Invalid UTF-8 passes through as bytes: a lead byte without its continuation takes the next byte along.
  CHECK(tok.encode("\xC3h", false) == Ids{kSpace, kByte0 + 0xC3, kByte0 + 'h'});

  Tokenizer::Vocab v = spm_vocab();
  v.add_space_prefix = false;
  v.add_eos = true;
  const Tokenizer plain(std::move(v));
  CHECK(plain.encode("hello") == Ids{1, kHello, 2});
  CHECK(plain.encode("hello", false) == Ids{kHello});
}

TEST_CASE("tokenizer: special tokens") {
  const Tokenizer tok(spm_vocab());
  // Control tokens only with parse_special; a space follows every special token.
  CHECK(tok.encode("<s>hello</s>", false, true) == Ids{1, kSpaceHello, 2});
  CHECK(tok.encode("<s>hello</s>", false, false) ==
        Ids{kSpace, kByte0 + '<', kByte0 + 's', kByte0 + '>', kHello, kByte0 + '<', kByte0 + '/', kByte0 + 's', kByte0 + '>'});
  // User-defined tokens are split out either way.
  CHECK(tok.encode("hi<|user|>hello", false) == Ids{kSpaceH, kByte0 + 'i', kUser, kSpaceHello});
  CHECK(tok.encode("<|user|> hello", false) == Ids{kUser, kSpace, kSpaceHello});
  // <|im_end|> was a normal token; llama.cpp makes it the EOT, a control token, end of generation.
  CHECK(tok.eot() == kImEnd);
  CHECK(tok.is_eog(kImEnd));
  CHECK(tok.is_control(kImEnd));
  CHECK(tok.is_eog(2));
  CHECK_FALSE(tok.is_eog(1));
  CHECK_FALSE(tok.is_eog(kSpaceHello));
  CHECK_FALSE(tok.is_eog(-1));
  CHECK(tok.encode("a<|im_end|>", false, true) == Ids{kSpace, kByte0 + 'a', kImEnd});
  CHECK(tok.find("<|user|>") == kUser);
  CHECK_FALSE(tok.find("nope").has_value());

  // Phi-3 (by name): spaces after special tokens are dropped.
  Tokenizer::Vocab v = spm_vocab();
  v.name = "Phi-3-mini-4k-instruct";
  CHECK(Tokenizer(std::move(v)).encode("<|user|> hello", false) == Ids{kUser, kSpaceHello});
}

TEST_CASE("tokenizer: SPM pieces and decoding") {
  const Tokenizer tok(spm_vocab());
  CHECK(tok.piece(kSpaceHello) == " hello");
  CHECK(tok.piece(kByte0 + 0xC3) == "\xC3");
  CHECK(tok.piece(1) == "<s>");
  CHECK(tok.piece(1, false) == "");
  CHECK(tok.piece(kUser, false) == "<|user|>");                                // user-defined tokens always print
  CHECK(tok.decode(Ids{kSpaceHello, kSpaceW, kOr, kL, kD}) == "hello world");  // the prefix space goes
  CHECK(tok.decode(Ids{1, kSpaceHello, kSpaceW, kOr, kL, kD}) == "<s> hello world");
  CHECK(tok.decode(Ids{1, kSpaceHello, 2}, true) == " hello");  // after a BOS the space stays (llama.cpp)
  CHECK(tok.decode(Ids{kSpaceH, kByte0 + 0xC3, kByte0 + 0xA9, kByte0 + 0x0A}) == "h\xC3\xA9\n");
  CHECK(tok.decode(Ids{}) == "");
  CHECK_THROWS_AS(tok.decode(Ids{277}), Error);
  CHECK_THROWS_AS(tok.decode(Ids{-1}), Error);
  CHECK_THROWS_AS(tok.piece(1000), Error);
}

TEST_CASE("tokenizer: byte-level BPE merges by rank") {
  const Tokenizer tok(bpe_vocab("llama-bpe"));
  CHECK(tok.model() == "gpt2");
  // "hello" -> ll (0), he (1), hell (2), hello (3); "Ġworld" -> Ġw (4), or (5), Ġwor (6), ld (7), Ġworld (8).
  CHECK(tok.encode("hello world") == Ids{kBegin, kBpeHello, kBpeWorld});  // llama-bpe adds the BOS by default
  CHECK(tok.encode("lll", false) == Ids{kBpeLL, byte('l')});              // equal ranks: the left pair first
  CHECK(tok.encode("hel", false) == Ids{kHel});                           // LLaMA 3 ignores merges for a word that is a token
  CHECK(Tokenizer(bpe_vocab("gpt-2")).encode("hel", false) == Ids{kBpeHe, byte('l')});
  CHECK(Tokenizer(bpe_vocab("gpt-2")).encode("hel") == Ids{kBpeHe, byte('l')});  // no BOS for gpt-2
  CHECK(tok.encode(" \xC3\xA9", false) == Ids{byte(' '), byte(0xC3), byte(0xA9)});
  CHECK(tok.encode("a\xFF", false) == Ids{byte('a'), byte(0xEF), byte(0xBF), byte(0xBD)});  // invalid UTF-8 is U+FFFD, as in llama.cpp

  CHECK(tok.encode("<|eot_id|>hi", false, true) == Ids{kEot, byte('h'), byte('i')});
  CHECK(tok.encode("<|eot_id|>hi", false, false) ==
        Ids{byte('<'), byte('|'), byte('e'), byte('o'), byte('t'), byte('_'), byte('i'), byte('d'), byte('|'), byte('>'), byte('h'), byte('i')});
  CHECK(tok.is_eog(kEot));
  CHECK(tok.is_eog(kEnd));
  CHECK_FALSE(tok.is_eog(kBegin));
}

TEST_CASE("tokenizer: BPE pieces and decoding") {
  const Tokenizer tok(bpe_vocab("llama-bpe"));
  CHECK(tok.piece(kBpeWorld) == " world");
  CHECK(tok.piece(byte('\n')) == "\n");
  CHECK(tok.decode(Ids{kBegin, kBpeHello, kBpeWorld}) == "<|begin_of_text|>hello world");
  CHECK(tok.decode(Ids{kBegin, kBpeHello, kBpeWorld}, true) == "hello world");
  CHECK(tok.decode(Ids{byte(0xC3), byte(0xA9)}) == "\xC3\xA9");
  // llama.cpp cleans spaces before punctuation for LLaMA 3, not for Qwen2.
  CHECK(tok.decode(Ids{kBpeHello, byte(' '), byte(','), byte(' '), byte('\''), byte('s')}) == "hello,'s");
  CHECK(Tokenizer(bpe_vocab("qwen2")).decode(Ids{kBpeHello, byte(' '), byte(',')}) == "hello ,");
}

// Random text from every kind of code point (never U+2581, which SPM reads as a space), and random bytes.
std::string random_text(std::mt19937& rng, bool bytes) {
  std::string s;
  const int n = std::uniform_int_distribution<int>(0, 40)(rng);
  for (int i = 0; i < n; i++) {
    if (bytes) {
      s += static_cast<char>(rng() & 0xFF);
      continue;
    }
    static const uint32_t ranges[][2] = {{0x20, 0x7E},     {'\t', '\r'},     {0xA0, 0x24F},    {0x300, 0x36F},     {0x660, 0x669},
                                         {0x3000, 0x3003}, {0x4E00, 0x9FFF}, {0xAC00, 0xD7A3}, {0x1F600, 0x1F64F}, {0x10000, 0x10FFFF}};
    const auto& r = ranges[rng() % std::size(ranges)];
    uint32_t cpt = r[0] + static_cast<uint32_t>(rng() % (r[1] - r[0] + 1));
    if (cpt == 0x2581 || (cpt >= 0xD800 && cpt < 0xE000)) cpt = 'x';
    llm::unicode::append_utf8(s, cpt);
  }
  if (bytes && s.find("\xE2\x96\x81") != std::string::npos) return "";
  return s;
}

TEST_CASE("tokenizer: encode then decode gives the text back") {
  const Tokenizer spm(spm_vocab());
  const Tokenizer qwen(bpe_vocab("qwen2"));
  const Tokenizer llama3(bpe_vocab("llama-bpe"));
  std::mt19937 rng(20);
  for (int i = 0; i < 400; i++) {
    const std::string text = random_text(rng, false);
    CAPTURE(text);
    CHECK(spm.decode(spm.encode(text, false)) == text);
    CHECK(qwen.decode(qwen.encode(text, false)) == text);
    Ids with_bos = llama3.encode(text, false);
    with_bos.insert(with_bos.begin(), kBegin);
    CHECK(llama3.encode(text) == with_bos);
  }
  for (int i = 0; i < 400; i++) {
    std::string bytes = random_text(rng, true);
    CAPTURE(bytes);
    CHECK(qwen.decode(qwen.encode(bytes, false)) == llm::unicode::sanitize(bytes));
    std::replace(bytes.begin(), bytes.end(), ' ', '_');    // see below
    CHECK(spm.decode(spm.encode(bytes, false)) == bytes);  // byte fallback keeps every byte
  }
  // SPM writes a space as U+2581 before cutting the text into characters, so a stray lead byte before a
  // space swallows part of it, and the space comes back as U+2581's bytes (as in llama.cpp).
  CHECK(spm.encode("\xC3 ", false) == Ids{kSpace, kByte0 + 0xC3, kByte0 + 0xE2, kByte0 + 0x96, kByte0 + 0x81});
  CHECK(spm.decode(spm.encode("\xC3 ", false)) == "\xC3\xE2\x96\x81");
}

// A GGUF file with only metadata, written byte by byte.
struct Gguf {
  std::vector<uint8_t> b;
  uint64_t kvs = 0;
  template <class T>
  void put(T v) {
    uint8_t tmp[sizeof(T)];
    std::memcpy(tmp, &v, sizeof(T));
    b.insert(b.end(), tmp, tmp + sizeof(T));
  }
  void str(const std::string& s) {
    put<uint64_t>(s.size());
    b.insert(b.end(), s.begin(), s.end());
  }
  Gguf& string(const std::string& key, const std::string& value) { return kv(key, 8), str(value), *this; }
  Gguf& u32(const std::string& key, uint32_t value) { return kv(key, 4), put(value), *this; }
  Gguf& boolean(const std::string& key, bool value) { return kv(key, 7), put<uint8_t>(value), *this; }
  Gguf& strings(const std::string& key, const std::vector<std::string>& values) {
    kv(key, 9), put<uint32_t>(8), put<uint64_t>(values.size());
    for (const std::string& s : values) str(s);
    return *this;
  }
  template <class T>
  Gguf& numbers(const std::string& key, uint32_t type, const std::vector<T>& values) {
    kv(key, 9), put<uint32_t>(type), put<uint64_t>(values.size());
    for (T x : values) put(x);
    return *this;
  }
  void kv(const std::string& key, uint32_t type) {
    str(key);
    put(type);
    kvs++;
  }
  std::vector<uint8_t> bytes() const {
    Gguf h;
    h.put<uint32_t>(0x46554747u);
    h.put<uint32_t>(3);
    h.put<uint64_t>(0);
    h.put<uint64_t>(kvs);
    h.b.insert(h.b.end(), b.begin(), b.end());
    return h.b;
  }
};

Gguf spm_gguf() {
  const Tokenizer::Vocab v = spm_vocab();
  Gguf g;
  g.string("general.architecture", "llama").string("tokenizer.ggml.model", "llama").strings("tokenizer.ggml.tokens", v.tokens);
  g.numbers<float>("tokenizer.ggml.scores", 6, v.scores).numbers<int32_t>("tokenizer.ggml.token_type", 5, v.types);
  return g;
}

TEST_CASE("tokenizer: from a GGUF file") {
  {
    const std::vector<uint8_t> bytes = spm_gguf().bytes();
    const Tokenizer tok = Tokenizer::from_gguf(llm::GgufFile::parse(bytes));
    CHECK(tok.bos() == 1);  // llama.cpp's defaults for SPM
    CHECK(tok.eos() == 2);
    CHECK(tok.unk() == 0);
    CHECK(tok.add_bos());
    CHECK(tok.encode("hello world") == Ids{1, kSpaceHello, kSpaceW, kOr, kL, kD});
  }
  {
    Gguf g = spm_gguf();
    g.u32("tokenizer.ggml.bos_token_id", kUser).boolean("tokenizer.ggml.add_bos_token", false).boolean("tokenizer.ggml.add_space_prefix", false);
    const std::vector<uint8_t> bytes = g.bytes();
    const Tokenizer tok = Tokenizer::from_gguf(llm::GgufFile::parse(bytes));
    CHECK(tok.bos() == kUser);
    CHECK(tok.encode("hello") == Ids{kHello});
  }
  {
    const Tokenizer::Vocab v = bpe_vocab("qwen2");
    Gguf g;
    g.string("tokenizer.ggml.model", "gpt2").string("tokenizer.ggml.pre", "qwen2").strings("tokenizer.ggml.tokens", v.tokens);
    g.strings("tokenizer.ggml.merges", v.merges).numbers<int32_t>("tokenizer.ggml.token_type", 5, v.types).u32("tokenizer.ggml.eos_token_id", kEnd);
    const std::vector<uint8_t> bytes = g.bytes();
    const Tokenizer tok = Tokenizer::from_gguf(llm::GgufFile::parse(bytes));
    CHECK_FALSE(tok.add_bos());
    CHECK(tok.bos() == 11);  // llama.cpp's default BOS for gpt2 vocabularies
    CHECK(tok.encode("hello world") == Ids{kBpeHello, kBpeWorld});
  }
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) { return e.what(); }
  return "(no error)";
}

TEST_CASE("tokenizer: malformed vocabularies are refused, naming what is wrong") {
  const auto with = [](auto change, Tokenizer::Vocab v) {
    change(v);
    return error_of([&] { Tokenizer t(std::move(v)); });
  };
  CHECK(with([](auto& v) { v.model = "bert"; }, spm_vocab()).find("'bert'") != std::string::npos);
  CHECK(with([](auto& v) { v.tokens[5] = v.tokens[4]; }, spm_vocab()).find("twice") != std::string::npos);
  CHECK(with([](auto& v) { v.scores.resize(10); }, spm_vocab()).find("tokenizer.ggml.scores") != std::string::npos);
  CHECK(with([](auto& v) { v.types.resize(10); }, spm_vocab()).find("tokenizer.ggml.token_type") != std::string::npos);
  CHECK(with([](auto& v) { v.bos = 277; }, spm_vocab()).find("BOS token id 277") != std::string::npos);
  CHECK(with([](auto& v) { v.bos = -1; }, spm_vocab()).find("add_bos_token") != std::string::npos);
  CHECK(with([](auto& v) { v.tokens.clear(), v.scores.clear(), v.types.clear(); }, spm_vocab()).find("no tokens") != std::string::npos);
  CHECK(with([](auto& v) { v.pre = "qwen9"; }, bpe_vocab("")).find("'qwen9'") != std::string::npos);
  CHECK(with([](auto& v) { v.merges.push_back("x zz"); }, bpe_vocab("gpt-2")).find("'zz'") != std::string::npos);
  CHECK(with([](auto& v) { v.merges.push_back("xy"); }, bpe_vocab("gpt-2")).find("tokenizer.ggml.merges") != std::string::npos);
  CHECK(error_of([] { Tokenizer(bpe_vocab("")).encode("hi"); }) == "(no error)");  // no pre-tokenizer: llama.cpp's default

  // A vocabulary without byte tokens or an unknown token cannot spell every byte.
  Tokenizer::Vocab v;
  v.model = "llama";
  v.tokens = {"<s>", "a"};
  v.bos = 0;
  v.add_space_prefix = false;
  const Tokenizer tiny(std::move(v));
  CHECK(error_of([&] { tiny.encode("b"); }).find("0x62") != std::string::npos);

  // From files: the key is named.
  const auto file_error = [](const Gguf& g) {
    const std::vector<uint8_t> bytes = g.bytes();
    return error_of([&] { Tokenizer::from_gguf(llm::GgufFile::parse(bytes)); });
  };
  CHECK(file_error(Gguf().string("general.name", "x")).find("tokenizer.ggml.model") != std::string::npos);
  CHECK(file_error(Gguf().string("tokenizer.ggml.model", "llama")).find("tokenizer.ggml.tokens is missing") != std::string::npos);
  CHECK(file_error(spm_gguf().u32("tokenizer.ggml.eos_token_id", 5000)).find("tokenizer.ggml.eos_token_id is 5000") != std::string::npos);
  CHECK(file_error(spm_gguf().string("tokenizer.ggml.add_bos_token", "yes")).find("tokenizer.ggml.add_bos_token") != std::string::npos);
  CHECK(file_error(Gguf().string("tokenizer.ggml.model", "llama").u32("tokenizer.ggml.tokens", 3)).find("not an array") != std::string::npos);
  CHECK(file_error(Gguf().string("tokenizer.ggml.model", "gpt2").strings("tokenizer.ggml.tokens", {"a"})).find("tokenizer.ggml.merges") !=
        std::string::npos);
}

}  // namespace
}  // namespace ugpu::test
