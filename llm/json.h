// A small JSON reader (RFC 8259) for the files that come with Hugging Face models: config.json,
// tokenizer.json, tokenizer_config.json, model.safetensors.index.json and safetensors headers. The
// input is outside input: malformed text, nesting deeper than a limit, numbers out of range and
// invalid UTF-8 are an Error naming the byte offset and what was wrong; nothing aborts.
//
//   json::Value v = json::parse(text);
//   if (const json::Value* h = v.find("hidden_size")) dim = h->as_int("hidden_size");
//
// Objects keep their members in file order (a repeated key keeps both; find() returns the first).
// Strings are UTF-8 with every escape decoded, \u surrogate pairs included (a lone surrogate is an
// Error). Numbers are doubles; an integer literal that fits int64 also keeps its exact value.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ugpu::llm::json {

class Value {
 public:
  enum class Type { Null, Bool, Number, String, Array, Object };

  Type type() const { return type_; }
  bool is_null() const { return type_ == Type::Null; }
  bool is_bool() const { return type_ == Type::Bool; }
  bool is_number() const { return type_ == Type::Number; }
  bool is_string() const { return type_ == Type::String; }
  bool is_array() const { return type_ == Type::Array; }
  bool is_object() const { return type_ == Type::Object; }
  size_t offset() const { return offset_; }  // where the value starts in the parsed text (plus parse's base)

  // Typed reads; an Error says what `what` (a key, a path) is instead, and where it is.
  bool as_bool(std::string_view what = "the value") const;
  double as_number(std::string_view what = "the value") const;
  int64_t as_int(std::string_view what = "the value") const;  // an integer literal that fits int64 (1.0 and 1e3 are not)
  const std::string& as_string(std::string_view what = "the value") const;
  const std::vector<Value>& as_array(std::string_view what = "the value") const;  // also an object's member values
  // Objects: the keys, in step with as_array()'s values.
  const std::vector<std::string>& keys(std::string_view what = "the value") const;

  // Objects: the first member named `key`; null when there is none or this is not an object.
  const Value* find(std::string_view key) const;
  size_t size() const { return items_.size(); }  // elements or members; 0 for scalars

  static const char* type_name(Type t);  // "null", "a boolean", "a number", "a string", "an array", "an object"

 private:
  friend class Parser;
  [[noreturn]] void wrong(std::string_view what, const char* want) const;

  Type type_ = Type::Null;
  bool bool_ = false, exact_ = false;  // exact_: int_ holds the number exactly
  double num_ = 0;
  int64_t int_ = 0;
  size_t offset_ = 0;
  std::string str_;
  std::vector<Value> items_;       // array elements, or object member values
  std::vector<std::string> keys_;  // object member keys
};

struct ParseOptions {
  int max_depth = 128;  // arrays and objects nested deeper are an Error, not recursed into
  size_t base = 0;      // added to every offset in values and messages (where the text sits in a file)
};

// Parses one JSON value (whitespace around it is allowed, anything else after it is not; a leading
// UTF-8 byte-order mark is skipped). Error: "JSON: at byte N: <what was wrong>".
Value parse(std::string_view text, const ParseOptions& options = {});

}  // namespace ugpu::llm::json
