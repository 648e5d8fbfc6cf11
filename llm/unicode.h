// Unicode for the tokenizers (llm/tokenizer.h): UTF-8 decoding as llama.cpp does it, the code point
// classes its pre-tokenizer regexes ask about (\p{L}, \p{N}, \s ...; llm/unicode_tables.h), GPT-2's
// byte-to-character mapping, and the pre-tokenizers that split text into words before BPE.
//
// Everything here reproduces llama.cpp's behaviour (src/unicode.cpp), including where it differs from
// a textbook regex engine, because token ids must match llama.cpp's for the same model file.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ugpu::llm::unicode {

// A code point's class: exactly one general-category bit, plus kWhitespace (the White_Space property).
inline constexpr uint16_t kUndefined = 0x001;  // unassigned (Cn), and anything above U+10FFFF
inline constexpr uint16_t kNumber = 0x002;     // N*
inline constexpr uint16_t kLetter = 0x004;     // L*
inline constexpr uint16_t kSeparator = 0x008;  // Z*
inline constexpr uint16_t kMark = 0x010;       // M*
inline constexpr uint16_t kPunctuation = 0x020;
inline constexpr uint16_t kSymbol = 0x040;
inline constexpr uint16_t kControl = 0x080;  // Cc, Cf, Cs, Co
inline constexpr uint16_t kWhitespace = 0x100;
uint16_t flags(uint32_t cpt);

inline constexpr uint32_t kReplacement = 0xFFFD;

// The length of the UTF-8 sequence a byte starts, from its high four bits alone (1 for a
// continuation byte): how llama.cpp cuts text into symbols before merging.
inline size_t sequence_length(uint8_t lead) { return lead < 0xC0 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4; }

// Decodes one code point at `offset` and advances past it. A sequence whose lead byte is not a lead
// or whose continuation bytes are missing is U+FFFD and one byte long; overlong forms and surrogates
// are decoded as written, and F5..F7 leads give values above U+10FFFF (all as llama.cpp does).
uint32_t decode_next(std::string_view s, size_t& offset);
std::vector<uint32_t> decode(std::string_view s);
// Appends a code point as UTF-8; one above U+10FFFF is written as U+FFFD (llama.cpp throws).
void append_utf8(std::string& out, uint32_t cpt);
// decode then encode: invalid input becomes U+FFFD, as the BPE tokenizer sees it.
std::string sanitize(std::string_view s);

// GPT-2's byte-level BPE alphabet: every byte as a printable character, and back (-1 for none).
const std::string& byte_to_text(uint8_t byte);
int text_to_byte(uint32_t cpt);

// The pre-tokenizers llama.cpp selects by `tokenizer.ggml.pre`.
enum class PreTokenizer {
  kDefault,    // GPT-2's regex with llama.cpp's extra punctuation and digit splits ("default", or no key)
  kGpt2,       // 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
  kLlama3,     // (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
  kQwen2,      // the same with \p{N} instead of \p{N}{1,3}
  kStarCoder,  // \p{N} alone, then GPT-2's
  kFalcon,     // runs of punctuation, then GPT-2's, then runs of three ASCII digits
};
// Splits text into words (UTF-8, invalid input replaced as by `sanitize`).
std::vector<std::string> pre_tokenize(std::string_view text, PreTokenizer pre);

}  // namespace ugpu::llm::unicode
