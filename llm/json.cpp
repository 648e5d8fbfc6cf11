// The JSON reader (llm/json.h).
#include "llm/json.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>

#include "common/error.h"
#include "llm/unicode.h"

namespace ugpu::llm::json {

const char* Value::type_name(Type t) {
  switch (t) {
    case Type::Null: return "null";
    case Type::Bool: return "a boolean";
    case Type::Number: return "a number";
    case Type::String: return "a string";
    case Type::Array: return "an array";
    case Type::Object: return "an object";
  }
  return "?";
}

void Value::wrong(std::string_view what, const char* want) const {
  throw Error(std::string(what) + " (at byte " + std::to_string(offset_) + ") is " + type_name(type_) + ", not " + want);
}

bool Value::as_bool(std::string_view what) const {
  if (type_ != Type::Bool) wrong(what, "a boolean");
  return bool_;
}

double Value::as_number(std::string_view what) const {
  if (type_ != Type::Number) wrong(what, "a number");
  return num_;
}

int64_t Value::as_int(std::string_view what) const {
  if (type_ != Type::Number) wrong(what, "an integer");
  if (!exact_) throw Error(std::string(what) + " (at byte " + std::to_string(offset_) + ") is not an integer that fits 64 bits");
  return int_;
}

const std::string& Value::as_string(std::string_view what) const {
  if (type_ != Type::String) wrong(what, "a string");
  return str_;
}

const std::vector<Value>& Value::as_array(std::string_view what) const {
  if (type_ != Type::Array && type_ != Type::Object) wrong(what, "an array");
  return items_;
}

const std::vector<std::string>& Value::keys(std::string_view what) const {
  if (type_ != Type::Object) wrong(what, "an object");
  return keys_;
}

const Value* Value::find(std::string_view key) const {
  if (type_ != Type::Object) return nullptr;
  for (size_t i = 0; i < keys_.size(); ++i)
    if (keys_[i] == key) return &items_[i];
  return nullptr;
}

// A recursive-descent parser; recursion is bounded by the depth limit.
class Parser {
 public:
  Parser(std::string_view text, const ParseOptions& o) : s_(text), o_(o) {}

  Value document() {
    if (s_.substr(0, 3) == "\xEF\xBB\xBF") pos_ = 3;
    skip_space();
    Value v = value(0);
    skip_space();
    if (pos_ < s_.size()) fail("unexpected " + describe() + " after the value");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const { fail_at(pos_, what); }
  [[noreturn]] void fail_at(size_t at, const std::string& what) const { throw Error("JSON: at byte " + std::to_string(o_.base + at) + ": " + what); }
  // The character at pos_, for messages.
  std::string describe() const {
    if (pos_ >= s_.size()) return "end of the text";
    unsigned char c = static_cast<unsigned char>(s_[pos_]);
    if (c >= 0x20 && c < 0x7f) return std::string("'") + static_cast<char>(c) + "'";
    char b[16];
    std::snprintf(b, sizeof b, "byte 0x%02X", c);
    return b;
  }

  void skip_space() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) ++pos_;
  }
  bool literal(std::string_view word) {
    if (s_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }

  Value value(int depth) {
    Value v;
    v.offset_ = o_.base + pos_;
    if (pos_ >= s_.size()) fail("the text ends where a value was expected");
    switch (s_[pos_]) {
      case '{': object(v, depth); break;
      case '[': array(v, depth); break;
      case '"':
        v.type_ = Value::Type::String;
        v.str_ = string();
        break;
      case 't':
      case 'f':
      case 'n':
        if (literal("true")) v.type_ = Value::Type::Bool, v.bool_ = true;
        else if (literal("false")) v.type_ = Value::Type::Bool, v.bool_ = false;
        else if (literal("null")) v.type_ = Value::Type::Null;
        else fail("unexpected " + describe() + " (not true, false or null)");
        break;
      default:
        if (s_[pos_] == '-' || (s_[pos_] >= '0' && s_[pos_] <= '9')) number(v);
        else fail("unexpected " + describe() + " where a value was expected");
    }
    return v;
  }

  void enter(int depth) const {
    if (depth >= o_.max_depth) fail("arrays and objects are nested more than " + std::to_string(o_.max_depth) + " deep");
  }

  void array(Value& v, int depth) {
    enter(depth);
    v.type_ = Value::Type::Array;
    ++pos_;  // [
    skip_space();
    if (pos_ < s_.size() && s_[pos_] == ']') {
      ++pos_;
      return;
    }
    do {
      skip_space();
      v.items_.push_back(value(depth + 1));
    } while (more(']', "an array"));
  }

  // After a member: true at ',' (another follows), false at `close` (the end); both are consumed.
  bool more(char close, const char* in) {
    skip_space();
    if (pos_ < s_.size() && (s_[pos_] == ',' || s_[pos_] == close)) return s_[pos_++] == ',';
    fail(std::string("expected ',' or '") + close + "' in " + in + ", found " + describe());
  }

  void object(Value& v, int depth) {
    enter(depth);
    v.type_ = Value::Type::Object;
    ++pos_;  // {
    skip_space();
    if (pos_ < s_.size() && s_[pos_] == '}') {
      ++pos_;
      return;
    }
    for (;;) {
      skip_space();
      if (pos_ >= s_.size() || s_[pos_] != '"') fail("expected a member name (a string) in an object, found " + describe());
      v.keys_.push_back(string());
      skip_space();
      if (pos_ >= s_.size() || s_[pos_] != ':') fail("expected ':' after the member name \"" + v.keys_.back() + "\", found " + describe());
      ++pos_;
      skip_space();
      v.items_.push_back(value(depth + 1));
      if (!more('}', "an object")) return;
    }
  }

  // Four hex digits after "\u" at pos_ (which is at the 'u').
  uint32_t hex4() {
    size_t start = pos_ - 1;
    ++pos_;  // u
    if (s_.size() - pos_ < 4) fail_at(start, "the text ends inside a \\u escape");
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) {
      char c = s_[pos_++];
      uint32_t d;
      if (c >= '0' && c <= '9') d = static_cast<uint32_t>(c - '0');
      else if (c >= 'a' && c <= 'f') d = static_cast<uint32_t>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F') d = static_cast<uint32_t>(c - 'A' + 10);
      else fail_at(start, "a \\u escape needs four hex digits");
      v = v * 16 + d;
    }
    return v;
  }

  // A well-formed UTF-8 sequence starting at pos_ (a lead byte >= 0x80): its length; Error otherwise.
  size_t utf8_length() const {
    const auto b = [&](size_t i) { return static_cast<unsigned char>(s_[pos_ + i]); };
    unsigned char c = b(0);
    size_t n;
    uint32_t min;
    if (c >= 0xC2 && c <= 0xDF) n = 2, min = 0x80;
    else if (c >= 0xE0 && c <= 0xEF) n = 3, min = 0x800;
    else if (c >= 0xF0 && c <= 0xF4) n = 4, min = 0x10000;
    else fail("invalid UTF-8 (byte 0x" + hex(c) + ") in a string");
    if (s_.size() - pos_ < n) fail("invalid UTF-8: the text ends inside a multi-byte character");
    uint32_t cp = c & (0x7F >> n);
    for (size_t i = 1; i < n; ++i) {
      if ((b(i) & 0xC0) != 0x80) fail("invalid UTF-8: byte 0x" + hex(b(i)) + " where a continuation byte was expected");
      cp = cp << 6 | (b(i) & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
      fail("invalid UTF-8: an overlong form, a surrogate or a code point past U+10FFFF");
    return n;
  }
  static std::string hex(unsigned char c) {
    char b[4];
    std::snprintf(b, sizeof b, "%02X", c);
    return b;
  }

  std::string string() {
    size_t start = pos_;
    ++pos_;  // "
    std::string out;
    for (;;) {
      if (pos_ >= s_.size()) fail_at(start, "the text ends inside this string");
      unsigned char c = static_cast<unsigned char>(s_[pos_]);
      if (c == '"') {
        ++pos_;
        return out;
      }
      if (c < 0x20) fail("a control character (0x" + hex(c) + ") in a string must be escaped");
      if (c >= 0x80) {
        size_t n = utf8_length();
        out.append(s_.substr(pos_, n));
        pos_ += n;
        continue;
      }
      if (c != '\\') {
        out += static_cast<char>(c);
        ++pos_;
        continue;
      }
      ++pos_;
      if (pos_ >= s_.size()) fail_at(start, "the text ends inside this string");
      char e = s_[pos_];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          size_t at = pos_ - 1;
          uint32_t cp = hex4();
          if (cp >= 0xDC00 && cp <= 0xDFFF) fail_at(at, "a \\u escape is a low surrogate without a high one before it");
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (s_.substr(pos_, 2) != "\\u") fail_at(at, "a \\u escape is a high surrogate without a low one after it");
            pos_ += 1;  // the backslash; hex4 skips the u
            uint32_t lo = hex4();
            if (lo < 0xDC00 || lo > 0xDFFF) fail_at(at, "a \\u escape is a high surrogate without a low one after it");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          }
          unicode::append_utf8(out, cp);
          continue;  // hex4 moved past the digits
        }
        default: fail("unknown escape '\\" + std::string(1, e) + "' in a string");
      }
      ++pos_;
    }
  }

  void number(Value& v) {
    size_t start = pos_;
    const auto digit = [&] { return pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9'; };
    bool integral = true;
    if (s_[pos_] == '-') ++pos_;
    if (!digit()) fail("a number needs a digit after '-'");
    if (s_[pos_] == '0') {
      ++pos_;
      if (digit()) fail_at(start, "a number must not have a leading zero");
    } else {
      while (digit()) ++pos_;
    }
    if (pos_ < s_.size() && s_[pos_] == '.') {
      integral = false;
      ++pos_;
      if (!digit()) fail("a number needs a digit after '.'");
      while (digit()) ++pos_;
    }
    if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
      integral = false;
      ++pos_;
      if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) ++pos_;
      if (!digit()) fail("a number needs a digit in its exponent");
      while (digit()) ++pos_;
    }
    const char* b = s_.data() + start;
    const char* e = s_.data() + pos_;
    v.type_ = Value::Type::Number;
    auto [p, ec] = std::from_chars(b, e, v.num_);
    if (ec == std::errc::result_out_of_range) {
      // Too small is 0 (as in every JSON reader); too large is refused.
      bool tiny = false;
      for (const char* q = b; q < e; ++q)
        if (*q == 'e' || *q == 'E') tiny = q + 1 < e && q[1] == '-';
      if (!tiny) fail_at(start, "the number " + std::string(b, e) + " is out of range");
      v.num_ = 0;
    } else if (ec != std::errc() || p != e) {
      fail_at(start, "cannot read the number " + std::string(b, e));
    }
    if (integral) {
      auto [ip, iec] = std::from_chars(b, e, v.int_);
      v.exact_ = iec == std::errc() && ip == e;
    }
  }

  std::string_view s_;
  const ParseOptions& o_;
  size_t pos_ = 0;
};

Value parse(std::string_view text, const ParseOptions& options) {
  if (options.max_depth < 1) throw Error("JSON: the depth limit must be at least 1");
  return Parser(text, options).document();
}

}  // namespace ugpu::llm::json
