// Unicode for the tokenizers (llm/unicode.h).
#include "llm/unicode.h"

#include <algorithm>
#include <array>
#include <functional>
#include <utility>

#include "llm/unicode_tables.h"

namespace ugpu::llm::unicode {

namespace {

uint16_t flags_from_table(uint32_t cpt) {
  const auto* end = std::end(unicode_tables::kRanges);
  const auto* it = std::upper_bound(std::begin(unicode_tables::kRanges), end, cpt, [](uint32_t c, const auto& r) { return c < r.first; });
  return (it - 1)->flags;
}

// The Basic Multilingual Plane, looked up directly (most text never leaves it).
const std::array<uint16_t, 0x10000>& bmp_flags() {
  static const auto table = [] {
    std::array<uint16_t, 0x10000> t{};
    for (uint32_t c = 0; c < t.size(); c++) t[c] = flags_from_table(c);
    return t;
  }();
  return table;
}

bool is_continuation(char c) { return (static_cast<uint8_t>(c) & 0xC0) == 0x80; }

}  // namespace

uint16_t flags(uint32_t cpt) {
  if (cpt < 0x10000) return bmp_flags()[cpt];
  if (cpt >= 0x110000) return kUndefined;
  return flags_from_table(cpt);
}

uint32_t decode_next(std::string_view s, size_t& offset) {
  const auto byte = [&](size_t k) { return static_cast<uint32_t>(static_cast<uint8_t>(s[offset + k])); };
  const uint32_t b0 = byte(0);
  size_t n = 0;  // 0: not a lead byte (a continuation byte where a sequence should start, or F8..FF)
  if (!(b0 & 0x80)) n = 1;
  else if (!(b0 & 0x40)) n = 0;
  else if (!(b0 & 0x20)) n = 2;
  else if (!(b0 & 0x10)) n = 3;
  else if (!(b0 & 0x08)) n = 4;
  bool ok = n > 0 && n <= s.size() - offset;
  for (size_t k = 1; ok && k < n; k++) ok = is_continuation(s[offset + k]);
  if (!ok) {
    offset += 1;
    return kReplacement;
  }
  uint32_t cpt = n == 1 ? b0 : b0 & (0x7F >> n);
  for (size_t k = 1; k < n; k++) cpt = cpt << 6 | (byte(k) & 0x3F);
  offset += n;
  return cpt;
}

std::vector<uint32_t> decode(std::string_view s) {
  std::vector<uint32_t> out;
  out.reserve(s.size());
  for (size_t offset = 0; offset < s.size();) out.push_back(decode_next(s, offset));
  return out;
}

void append_utf8(std::string& out, uint32_t cpt) {
  if (cpt > 0x10FFFF) cpt = kReplacement;
  if (cpt < 0x80) {
    out += static_cast<char>(cpt);
  } else if (cpt < 0x800) {
    out += static_cast<char>(0xC0 | cpt >> 6);
    out += static_cast<char>(0x80 | (cpt & 0x3F));
  } else if (cpt < 0x10000) {
    out += static_cast<char>(0xE0 | cpt >> 12);
    out += static_cast<char>(0x80 | (cpt >> 6 & 0x3F));
    out += static_cast<char>(0x80 | (cpt & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | cpt >> 18);
    out += static_cast<char>(0x80 | (cpt >> 12 & 0x3F));
    out += static_cast<char>(0x80 | (cpt >> 6 & 0x3F));
    out += static_cast<char>(0x80 | (cpt & 0x3F));
  }
}

std::string sanitize(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t offset = 0; offset < s.size();) append_utf8(out, decode_next(s, offset));
  return out;
}

namespace {

// GPT-2's mapping: printable Latin-1 bytes stand for themselves, the other 68 bytes take the code
// points from U+0100 up, in byte order.
struct ByteMap {
  std::array<std::string, 256> text;
  std::array<int16_t, 256 + 68> byte;
  ByteMap() {
    byte.fill(-1);
    uint32_t next = 256;
    for (uint32_t b = 0; b < 256; b++) {
      const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
      const uint32_t cpt = printable ? b : next++;
      append_utf8(text[b], cpt);
      byte[cpt] = static_cast<int16_t>(b);
    }
  }
};
const ByteMap& byte_map() {
  static const ByteMap map;
  return map;
}

}  // namespace

const std::string& byte_to_text(uint8_t byte) { return byte_map().text[byte]; }

int text_to_byte(uint32_t cpt) { return cpt < byte_map().byte.size() ? byte_map().byte[cpt] : -1; }

// ---- pre-tokenizers ----
//
// Text is split in stages, as llama.cpp applies its list of regexes: each stage splits every piece
// the previous one left. llama.cpp runs the GPT-2 and LLaMA 3 regexes as hand-written matchers
// (reproduced here with their quirks), and the others through std::regex on a copy of the text where
// each non-ASCII code point is replaced by one byte naming its class; the regex-like stages here
// match what those std::regex searches find.

namespace {

constexpr uint32_t kOutside = 0xFFFFFFFF;  // past the end of the piece being split
constexpr uint16_t kWordClasses = kWhitespace | kLetter | kNumber;

struct Piece {
  size_t begin, end;  // code point indices
};

class Splitter {
 public:
  Splitter(const std::vector<uint32_t>& cpts, std::vector<Piece>& out, Piece piece) : cpts_(cpts), out_(out), end_(piece.end), prev_(piece.begin) {}
  uint32_t cpt(size_t pos) const { return pos < end_ ? cpts_[pos] : kOutside; }
  uint16_t flags_at(size_t pos) const { return pos < end_ ? flags(cpts_[pos]) : 0; }
  size_t end() const { return end_; }
  // Ends a word at `end` (nothing when empty).
  void cut(size_t end) {
    if (end > prev_) out_.push_back({prev_, end});
    prev_ = end;
  }

 private:
  const std::vector<uint32_t>& cpts_;
  std::vector<Piece>& out_;
  size_t end_, prev_;
};

uint32_t ascii_lower(uint32_t c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; }
bool is_cr_or_lf(uint32_t c) { return c == '\r' || c == '\n'; }

// 's 't 're 've 'm 'll 'd at `pos`: the length, or 0.
size_t contraction(const Splitter& s, size_t pos, bool fold_case) {
  if (s.cpt(pos) != '\'' || pos + 1 >= s.end()) return 0;
  const auto lower = [&](uint32_t c) { return fold_case ? ascii_lower(c) : c; };
  const uint32_t c1 = lower(s.cpt(pos + 1));
  if (c1 == 's' || c1 == 't' || c1 == 'm' || c1 == 'd') return 2;
  if (pos + 2 >= s.end()) return 0;
  const uint32_t c2 = lower(s.cpt(pos + 2));
  if ((c1 == 'r' && c2 == 'e') || (c1 == 'v' && c2 == 'e') || (c1 == 'l' && c2 == 'l')) return 3;
  return 0;
}

// Trailing whitespace: \s+(?!\S) leaves the last space to the next word unless the run ends the piece.
void whitespace_run(Splitter& s, size_t& pos) {
  size_t n = 0;
  while (s.flags_at(pos + n) & kWhitespace) n++;
  if (n > 1 && s.cpt(pos + n) != kOutside) pos += n - 1;
  else if (n > 0) pos += n;
  else pos += 1;  // no alternative matches: the code point alone
  s.cut(pos);
}

// 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
void split_gpt2(const std::vector<uint32_t>& cpts, Piece piece, std::vector<Piece>& out) {
  Splitter s(cpts, out, piece);
  for (size_t pos = piece.begin; pos < piece.end;) {
    if (size_t n = contraction(s, pos, false)) {
      s.cut(pos += n);
      continue;
    }
    const uint32_t c = s.cpt(pos);
    uint16_t f = c == ' ' ? s.flags_at(pos + 1) : s.flags_at(pos);
    bool matched = false;
    for (uint16_t cls : {kLetter, kNumber}) {
      if (!(f & cls)) continue;
      pos += c == ' ';
      while (f & cls) f = s.flags_at(++pos);
      matched = true;
      break;
    }
    if (!matched && !(f & kWordClasses) && f) {
      pos += c == ' ';
      while (!(f & kWordClasses) && f) f = s.flags_at(++pos);
      matched = true;
    }
    if (matched) {
      s.cut(pos);
      continue;
    }
    whitespace_run(s, pos);
  }
}

// (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,max_digits}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
void split_llama3(const std::vector<uint32_t>& cpts, Piece piece, std::vector<Piece>& out, size_t max_digits) {
  Splitter s(cpts, out, piece);
  for (size_t pos = piece.begin; pos < piece.end;) {
    if (size_t n = contraction(s, pos, true)) {
      s.cut(pos += n);
      continue;
    }
    const uint32_t c = s.cpt(pos);
    const uint16_t f = s.flags_at(pos);
    if (!is_cr_or_lf(c) && !(f & kNumber) && ((f & kLetter) || (s.flags_at(pos + 1) & kLetter))) {
      pos++;
      while (s.flags_at(pos) & kLetter) pos++;
      s.cut(pos);
      continue;
    }
    if (f & kNumber) {
      for (size_t run = 0; s.flags_at(pos) & kNumber;) {
        pos++;
        if (++run == max_digits) {
          s.cut(pos);
          run = 0;
        }
      }
      s.cut(pos);
      continue;
    }
    // llama.cpp tests the current code point's flags here, not the one after the space.
    uint16_t f2 = c == ' ' ? s.flags_at(pos + 1) : f;
    if (!(f2 & kWordClasses) && f) {
      pos += c == ' ';
      while (!(f2 & kWordClasses) && f2) f2 = s.flags_at(++pos);
      while (is_cr_or_lf(s.cpt(pos))) pos++;
      s.cut(pos);
      continue;
    }
    size_t n = 0, last_newline_end = 0;
    for (; s.flags_at(pos + n) & kWhitespace; n++) {
      if (is_cr_or_lf(s.cpt(pos + n))) last_newline_end = pos + n + 1;
    }
    if (last_newline_end) {
      s.cut(pos = last_newline_end);
      continue;
    }
    whitespace_run(s, pos);
  }
}

// A stage llama.cpp runs through std::regex: the leftmost matches, each a word, and the text between
// two matches one word. `match` gives the length of the match at a position (0: none).
void split_matches(const std::vector<uint32_t>& cpts, Piece piece, std::vector<Piece>& out,
                   const std::function<size_t(const std::vector<uint32_t>&, size_t, size_t)>& match) {
  size_t gap = piece.begin;
  for (size_t pos = piece.begin; pos < piece.end;) {
    const size_t n = match(cpts, pos, piece.end);
    if (!n) {
      pos++;
      continue;
    }
    if (pos > gap) out.push_back({gap, pos});
    out.push_back({pos, pos + n});
    gap = pos += n;
  }
  if (gap < piece.end) out.push_back({gap, piece.end});
}

// [\p{P}\$\+<=>\^~\|]+ (with_backtick: and `): llama.cpp's collapsed form of \p{P} keeps ASCII
// punctuation as it is, so this is every ASCII symbol but ` (unless added) plus non-ASCII \p{P}.
size_t punctuation_run(const std::vector<uint32_t>& cpts, size_t pos, size_t end, bool with_backtick) {
  const auto is_member = [&](uint32_t c) {
    if (c < 0x80)
      return (c > 0x20 && c < 0x7F && !(c >= '0' && c <= '9') && !((c | 0x20) >= 'a' && (c | 0x20) <= 'z') && c != '`') ||
             (with_backtick && c == '`');
    return (flags(c) & kPunctuation) != 0;
  };
  size_t n = 0;
  while (pos + n < end && is_member(cpts[pos + n])) n++;
  return n;
}
size_t number_run(const std::vector<uint32_t>& cpts, size_t pos, size_t end) {
  size_t n = 0;
  while (pos + n < end && (flags(cpts[pos + n]) & kNumber)) n++;
  return n;
}
size_t one_number(const std::vector<uint32_t>& cpts, size_t pos, size_t) { return (flags(cpts[pos]) & kNumber) ? 1 : 0; }
size_t three_ascii_digits(const std::vector<uint32_t>& cpts, size_t pos, size_t end) {
  if (end - pos < 3) return 0;
  for (size_t k = 0; k < 3; k++)
    if (cpts[pos + k] < '0' || cpts[pos + k] > '9') return 0;
  return 3;
}

using Stage = std::function<void(const std::vector<uint32_t>&, Piece, std::vector<Piece>&)>;

Stage matches(size_t (*match)(const std::vector<uint32_t>&, size_t, size_t)) {
  return [match](const std::vector<uint32_t>& cpts, Piece p, std::vector<Piece>& out) { split_matches(cpts, p, out, match); };
}
Stage punctuation(bool with_backtick) {
  return [with_backtick](const std::vector<uint32_t>& cpts, Piece p, std::vector<Piece>& out) {
    split_matches(cpts, p, out,
                  [with_backtick](const std::vector<uint32_t>& c, size_t pos, size_t end) { return punctuation_run(c, pos, end, with_backtick); });
  };
}

std::vector<Stage> stages(PreTokenizer pre) {
  const Stage gpt2 = split_gpt2;
  switch (pre) {
    case PreTokenizer::kGpt2: return {gpt2};
    case PreTokenizer::kLlama3: return {[](const auto& c, Piece p, auto& out) { split_llama3(c, p, out, 3); }};
    case PreTokenizer::kQwen2: return {[](const auto& c, Piece p, auto& out) { split_llama3(c, p, out, 1); }};
    case PreTokenizer::kStarCoder: return {matches(one_number), gpt2};
    case PreTokenizer::kFalcon: return {punctuation(true), gpt2, matches(three_ascii_digits)};
    case PreTokenizer::kDefault: break;
  }
  return {punctuation(false), gpt2, matches(number_run), matches(three_ascii_digits)};
}

}  // namespace

std::vector<std::string> pre_tokenize(std::string_view text, PreTokenizer pre) {
  const std::vector<uint32_t> cpts = decode(text);
  std::vector<Piece> pieces;
  if (!cpts.empty()) pieces.push_back({0, cpts.size()});
  for (const Stage& stage : stages(pre)) {
    std::vector<Piece> next;
    next.reserve(pieces.size() * 2);
    for (Piece p : pieces) stage(cpts, p, next);
    pieces = std::move(next);
  }
  std::vector<std::string> words;
  words.reserve(pieces.size());
  for (Piece p : pieces) {
    std::string& w = words.emplace_back();
    for (size_t i = p.begin; i < p.end; i++) append_utf8(w, cpts[i]);
  }
  return words;
}

}  // namespace ugpu::llm::unicode
