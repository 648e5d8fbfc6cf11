// Hugging Face model directories (llm/safetensors.h): the JSON reader, safetensors files refused
// when malformed, and generated GGUF test models rewritten here as Hugging Face directories
// (safetensors with Hugging Face's names, shapes and RoPE row order, config.json, tokenizer.json,
// tokenizer_config.json) that must compute the same logits and the same token ids as the GGUF file.
#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <numbers>
#include <set>
#include <string>
#include <vector>

#include "common/error.h"
#include "llm/gguf.h"
#include "llm/json.h"
#include "llm/model.h"
#include "llm/safetensors.h"
#include "llm/testmodel.h"
#include "llm/tokenizer.h"

namespace ugpu::test {
namespace {
namespace fs = std::filesystem;
using llm::GgmlType;
using llm::GgufFile;
namespace json = llm::json;

// The message of the Error f throws ("(no error)" when it does not throw).
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) { return e.what(); }
  return "(no error)";
}
#define CHECK_REFUSES(expr, ...)                                                          \
  do {                                                                                    \
    std::string msg_ = error_of([&] { (void)(expr); });                                   \
    INFO("message: " << msg_);                                                            \
    for (const char* part_ : {__VA_ARGS__}) CHECK(msg_.find(part_) != std::string::npos); \
  } while (0)

// ---- the JSON reader -------------------------------------------------------------------------------

TEST_CASE("safetensors: JSON values, escapes and numbers") {
  json::Value v = json::parse(R"( {"a": [1, -2.5, 3e2, true, false, null], "s": "x\"\\\/\b\f\n\r\t\u00e9\u20AC\ud83d\ude00", "o": {}, "e": []} )");
  REQUIRE(v.is_object());
  CHECK(v.keys() == std::vector<std::string>{"a", "s", "o", "e"});
  const auto& a = v.find("a")->as_array();
  REQUIRE(a.size() == 6);
  CHECK(a[0].as_int() == 1);
  CHECK(a[1].as_number() == -2.5);
  CHECK(a[2].as_number() == 300);
  CHECK_THROWS_AS(a[2].as_int(), Error);  // 3e2 is a number, not an integer literal
  CHECK(a[3].as_bool());
  CHECK(!a[4].as_bool());
  CHECK(a[5].is_null());
  CHECK(v.find("s")->as_string() == "x\"\\/\b\f\n\r\t\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80");
  CHECK(v.find("o")->is_object());
  CHECK(v.find("o")->size() == 0);
  CHECK(v.find("e")->as_array().empty());
  CHECK(v.find("missing") == nullptr);
  CHECK(v.find("a")->offset() == 7);
  // Raw UTF-8 passes through; integers keep their exact value up to int64.
  CHECK(json::parse("\"\xE2\x96\x81the\"").as_string() == "\xE2\x96\x81the");
  CHECK(json::parse("9223372036854775807").as_int() == INT64_MAX);
  CHECK(json::parse("-9223372036854775808").as_int() == INT64_MIN);
  CHECK_THROWS_AS(json::parse("9223372036854775808").as_int(), Error);
  CHECK(json::parse("9223372036854775808").as_number() == 9223372036854775808.0);
  CHECK(json::parse("1e-400").as_number() == 0);
  CHECK(json::parse("-0").as_number() == 0);
  CHECK(json::parse("\xEF\xBB\xBF[]").is_array());  // a byte-order mark
  // A repeated key keeps both; find() gives the first.
  json::Value d = json::parse(R"({"k": 1, "k": 2})");
  CHECK(d.size() == 2);
  CHECK(d.find("k")->as_int() == 1);
  // Typed reads name what was wanted and where the value is.
  CHECK_REFUSES(v.find("s")->as_int("'s'"), "'s' (at byte 47) is a string, not an integer");
  CHECK_REFUSES(v.find("a")->as_string("'a'"), "'a' (at byte 7) is an array, not a string");
}

TEST_CASE("safetensors: JSON errors name the byte offset") {
  CHECK_REFUSES(json::parse(""), "JSON: at byte 0: the text ends where a value was expected");
  CHECK_REFUSES(json::parse("[1, 2"), "JSON: at byte 5: expected ',' or ']' in an array, found end of the text");
  CHECK_REFUSES(json::parse("{\"a\" 1}"), "JSON: at byte 5: expected ':' after the member name \"a\"");
  CHECK_REFUSES(json::parse("{\"a\": 1,}"), "JSON: at byte 8: expected a member name (a string) in an object, found '}'");
  CHECK_REFUSES(json::parse("[1] x"), "JSON: at byte 4: unexpected 'x' after the value");
  CHECK_REFUSES(json::parse("[tru]"), "JSON: at byte 1: unexpected 't' (not true, false or null)");
  CHECK_REFUSES(json::parse("01"), "JSON: at byte 0: a number must not have a leading zero");
  CHECK_REFUSES(json::parse("[1.]"), "JSON: at byte 3: a number needs a digit after '.'");
  CHECK_REFUSES(json::parse("-"), "JSON: at byte 1: a number needs a digit after '-'");
  CHECK_REFUSES(json::parse("1e999"), "JSON: at byte 0: the number 1e999 is out of range");
  CHECK_REFUSES(json::parse("\"abc"), "JSON: at byte 0: the text ends inside this string");
  CHECK_REFUSES(json::parse("\"a\nb\""), "JSON: at byte 2: a control character (0x0A) in a string must be escaped");
  CHECK_REFUSES(json::parse("\"\\x\""), "JSON: at byte 2: unknown escape '\\x'");
  CHECK_REFUSES(json::parse("\"\\u12G4\""), "JSON: at byte 1: a \\u escape needs four hex digits");
  CHECK_REFUSES(json::parse("\"\\u12"), "JSON: at byte 1: the text ends inside a \\u escape");
  CHECK_REFUSES(json::parse("\"\\ud83d\""), "JSON: at byte 1: a \\u escape is a high surrogate without a low one after it");
  CHECK_REFUSES(json::parse("\"\\ud83d\\u0041\""), "a high surrogate without a low one after it");
  CHECK_REFUSES(json::parse("\"\\ude00\""), "JSON: at byte 1: a \\u escape is a low surrogate without a high one before it");
  CHECK_REFUSES(json::parse("\"\xFF\""), "JSON: at byte 1: invalid UTF-8 (byte 0xFF)");
  CHECK_REFUSES(json::parse("\"\xC3\""), "JSON: at byte 1: invalid UTF-8: byte 0x22 where a continuation byte was expected");
  CHECK_REFUSES(json::parse("\"\xE2\x82"), "invalid UTF-8: the text ends inside a multi-byte character");
  CHECK_REFUSES(json::parse("\"\xC0\x80\""), "invalid UTF-8 (byte 0xC0)");
  CHECK_REFUSES(json::parse("\"\xED\xA0\x80\""), "invalid UTF-8: an overlong form, a surrogate");
  CHECK_REFUSES(json::parse("[1]", {.base = 100}).as_string("v"), "v (at byte 100) is an array");
  CHECK_REFUSES(json::parse("[x]", {.base = 100}), "JSON: at byte 101:");
  // Nesting: up to the limit is read, deeper is refused (not recursed into).
  CHECK(json::parse(std::string(5, '[') + std::string(5, ']'), {.max_depth = 5}).is_array());
  CHECK_REFUSES(json::parse(std::string(6, '[') + std::string(6, ']'), {.max_depth = 5}),
                "JSON: at byte 5: arrays and objects are nested more than 5 deep");
  CHECK_REFUSES(json::parse(std::string(100000, '[')), "nested more than 128 deep");
  CHECK_REFUSES(json::parse(std::string(100000, '{')), "expected a member name");
  std::string deep_objects;
  for (int i = 0; i < 200; ++i) deep_objects += "{\"a\":";
  CHECK_REFUSES(json::parse(deep_objects), "nested more than 128 deep");
  // Every prefix of a valid document is refused cleanly.
  const std::string doc = R"({"a": [1, -2.5e3, "\u00e9\ud83d\ude00", {"b": null}], "c": true})";
  for (size_t n = 0; n < doc.size(); ++n) CHECK_THROWS_AS(json::parse(doc.substr(0, n)), Error);
}

// ---- writing JSON and safetensors ------------------------------------------------------------------

std::string js(std::string_view s) {
  std::string o = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\', o += c;
    else if (static_cast<unsigned char>(c) < 0x20) {
      char b[8];
      std::snprintf(b, sizeof b, "\\u%04x", c);
      o += b;
    } else o += c;
  }
  return o + "\"";
}

struct StEntry {
  std::string name, dtype;
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;
};

// A safetensors file: the header padded with spaces to 8 bytes, the data in order.
std::vector<uint8_t> safetensors_bytes(const std::vector<StEntry>& entries, const std::string& metadata = "") {
  std::string h = "{";
  if (!metadata.empty()) h += "\"__metadata__\":" + metadata;
  uint64_t at = 0;
  for (const StEntry& e : entries) {
    if (h.size() > 1) h += ",";
    h += js(e.name) + ":{\"dtype\":" + js(e.dtype) + ",\"shape\":[";
    for (size_t i = 0; i < e.shape.size(); ++i) h += (i ? "," : "") + std::to_string(e.shape[i]);
    h += "],\"data_offsets\":[" + std::to_string(at) + "," + std::to_string(at + e.data.size()) + "]}";
    at += e.data.size();
  }
  h += "}";
  while (h.size() % 8) h += ' ';
  std::string b(8, '\0');
  for (int i = 0; i < 8; ++i) b[i] = static_cast<char>(static_cast<uint64_t>(h.size()) >> (8 * i));
  b += h;
  for (const StEntry& e : entries) b.append(e.data.begin(), e.data.end());
  return std::vector<uint8_t>(b.begin(), b.end());
}

// A file from a header written by hand, with `data` bytes after it.
std::vector<uint8_t> raw_safetensors(const std::string& header, size_t data) {
  std::string b(8, '\0');
  for (int i = 0; i < 8; ++i) b[i] = static_cast<char>(static_cast<uint64_t>(header.size()) >> (8 * i));
  b += header;
  b.append(data, '\0');
  return std::vector<uint8_t>(b.begin(), b.end());
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream o(path, std::ios::binary);
  o.write(text.data(), static_cast<std::streamsize>(text.size()));
  REQUIRE(o.good());
}
void write_file(const std::string& path, const std::vector<uint8_t>& bytes) { write_file(path, std::string(bytes.begin(), bytes.end())); }

struct TempDir {
  std::string path;
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "ugpu-st-XXXXXX").string();
    REQUIRE(::mkdtemp(tmpl.data()) != nullptr);
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string operator/(const std::string& name) const { return path + "/" + name; }
};

TEST_CASE("safetensors: files are read, and malformed ones refused with a clear message") {
  std::vector<uint8_t> w(2 * 3 * 4), hbits(4 * 2);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<uint8_t>(i);
  std::vector<uint8_t> good =
      safetensors_bytes({{"w", "F32", {2, 3}, w}, {"h", "F16", {4}, hbits}, {"s", "I64", {}, std::vector<uint8_t>(8)}}, R"({"format":"pt"})");
  llm::SafetensorsFile f = llm::SafetensorsFile::parse(good);
  REQUIRE(f.tensors.size() == 3);
  CHECK(f.metadata == std::vector<std::pair<std::string, std::string>>{{"format", "pt"}});
  const llm::SafetensorsTensor* t = f.find("w");
  REQUIRE(t);
  CHECK(t->dtype == "F32");
  CHECK(t->shape == std::vector<int64_t>{2, 3});
  CHECK(t->bytes == 24);
  CHECK(std::memcmp(good.data() + t->offset, w.data(), w.size()) == 0);
  CHECK(f.find("s")->shape.empty());
  CHECK(f.find("nope") == nullptr);
  // Every truncation is refused (the header or the data cut short).
  for (size_t n = 0; n < good.size(); ++n) CHECK_THROWS_AS(llm::SafetensorsFile::parse(std::span<const uint8_t>(good.data(), n)), Error);

  auto parse = [](const std::vector<uint8_t>& b) { return llm::SafetensorsFile::parse(b); };
  CHECK_REFUSES(parse({1, 2, 3}), "safetensors: the file is 3 bytes long, too short for the 8-byte header length");
  std::vector<uint8_t> huge = good;
  huge[6] = 1;
  CHECK_REFUSES(parse(huge), "safetensors: the header length", "runs past the end of the", "-byte file (truncated");
  CHECK_REFUSES(parse(raw_safetensors("[]      ", 0)), "safetensors: at byte 8: the header does not start with '{'");
  CHECK_REFUSES(parse(raw_safetensors("{\"w\":{\"dtype\":\"F32\",}}", 0)), "JSON: at byte 28: expected a member name");
  CHECK_REFUSES(parse(raw_safetensors(R"({"w":{"dtype":"Q4","shape":[2],"data_offsets":[0,1]}})", 1)),
                "safetensors: tensor 'w' (at byte 13) has the unknown dtype 'Q4'");
  CHECK_REFUSES(parse(raw_safetensors(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 4)),
                "safetensors: tensor 'w' (at byte 13) has data_offsets [0, 8] past the end of the data (4 bytes after the header; truncated?)");
  CHECK_REFUSES(parse(raw_safetensors(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8)),
                "safetensors: tensor 'w' (at byte 13) is F32 [3], 12 bytes, but its data_offsets [0, 8] hold 8");
  CHECK_REFUSES(parse(raw_safetensors(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", 8)),
                "has data_offsets [8, 0], not 0 <= begin <= end");
  CHECK_REFUSES(parse(raw_safetensors(R"({"w":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", 8)),
                "tensor 'w' (at byte 13) has the dimension -2");
  CHECK_REFUSES(parse(raw_safetensors(R"({"w":{"dtype":"F32","shape":[4294967296,4294967296,4294967296],"data_offsets":[0,8]}})", 8)),
                "has more elements than a file can hold");
  CHECK_REFUSES(parse(raw_safetensors(R"({"w":{"dtype":"F32","shape":[2]}})", 8)),
                "tensor 'w' (at byte 13): the entry needs \"dtype\", \"shape\" and \"data_offsets\"");
  CHECK_REFUSES(parse(raw_safetensors(R"({"w":{"dtype":"F32","shape":"2","data_offsets":[0,8]}})", 8)),
                "\"shape\" (at byte 36) is a string, not an array");
  CHECK_REFUSES(parse(raw_safetensors(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8,9]}})", 8)), "\"data_offsets\" is not [begin, end]");
  CHECK_REFUSES(parse(raw_safetensors(R"({"w":[1]})", 8)), "tensor 'w' (at byte 13): the entry is an array, not an object");
  CHECK_REFUSES(parse(raw_safetensors(R"({"__metadata__":{"a":1}})", 0)), "__metadata__ 'a' (at byte 29) is a number, not a string");
  CHECK_REFUSES(
      parse(raw_safetensors(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"w":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}})", 16)),
      "'w' appears twice in the header");
  CHECK_REFUSES(
      parse(raw_safetensors(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F16","shape":[4],"data_offsets":[4,12]}})", 12)),
      "safetensors: tensors 'a' [0, 8) and 'b' [4, 12) overlap");
  // Empty tensors take no bytes and overlap nothing.
  CHECK(parse(raw_safetensors(R"({"a":{"dtype":"F32","shape":[0],"data_offsets":[0,0]},"b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 4))
            .tensors.size() == 2);
  // A file on disk: errors name it.
  TempDir dir;
  write_file(dir / "bad.safetensors", raw_safetensors(R"({"w":{"dtype":"X9","shape":[2],"data_offsets":[0,8]}})", 8));
  const std::string bad = dir / "bad.safetensors: safetensors: tensor 'w'", none = dir / "none.safetensors: cannot open";
  CHECK_REFUSES(llm::SafetensorsFile::open(dir / "bad.safetensors"), bad.c_str(), "unknown dtype 'X9'");
  CHECK_REFUSES(llm::SafetensorsFile::open(dir / "none.safetensors"), none.c_str());
  CHECK(llm::safetensors_dtype_size("BF16") == 2);
  CHECK(llm::safetensors_dtype_size("F64") == 8);
  CHECK(llm::safetensors_dtype_size("bf16") == 0);
}

// ---- GGUF test models as Hugging Face directories -----------------------------------------------------

const std::string kSpm = "\xE2\x96\x81";  // U+2581

// The Hugging Face name of a GGUF tensor name.
std::string hf_name(const std::string& g) {
  if (g == "token_embd.weight") return "model.embed_tokens.weight";
  if (g == "output_norm.weight") return "model.norm.weight";
  if (g == "output.weight") return "lm_head.weight";
  REQUIRE(g.starts_with("blk."));
  size_t dot = g.find('.', 4);
  std::string layer = g.substr(4, dot - 4), rest = g.substr(dot + 1);
  static const std::map<std::string, std::string> parts = {
      {"attn_norm.weight", "input_layernorm.weight"},
      {"attn_q.weight", "self_attn.q_proj.weight"},
      {"attn_k.weight", "self_attn.k_proj.weight"},
      {"attn_v.weight", "self_attn.v_proj.weight"},
      {"attn_output.weight", "self_attn.o_proj.weight"},
      {"attn_q.bias", "self_attn.q_proj.bias"},
      {"attn_k.bias", "self_attn.k_proj.bias"},
      {"attn_v.bias", "self_attn.v_proj.bias"},
      {"attn_q_norm.weight", "self_attn.q_norm.weight"},
      {"attn_k_norm.weight", "self_attn.k_norm.weight"},
      {"ffn_norm.weight", "post_attention_layernorm.weight"},
      {"ffn_gate.weight", "mlp.gate_proj.weight"},
      {"ffn_up.weight", "mlp.up_proj.weight"},
      {"ffn_down.weight", "mlp.down_proj.weight"},
  };
  auto it = parts.find(rest);
  REQUIRE_MESSAGE(it != parts.end(), "no Hugging Face name for " << g);
  return "model.layers." + layer + "." + it->second;
}

const char* st_dtype(GgmlType t) {
  switch (t) {
    case GgmlType::F32: return "F32";
    case GgmlType::F16: return "F16";
    case GgmlType::BF16: return "BF16";
    default: FAIL("not a safetensors type"); return "";
  }
}

// llama.cpp's llama files rotate adjacent pairs (2i, 2i+1) of each head; Hugging Face's rotate
// halves (i, i + d/2), both pairs turning at frequency i. So the row 2i + j of a head (j = 0, 1) in
// the GGUF file is the row j * d/2 + i of the head in the Hugging Face checkpoint: with those rows,
// RoPE turns the same values by the same angles, only in other places of the head, the same for q and
// k, so every attention score, and everything after, is unchanged.
std::vector<uint8_t> to_half_split(std::span<const uint8_t> data, int64_t rows, int64_t head_dim) {
  const size_t row_bytes = data.size() / static_cast<size_t>(rows);
  std::vector<uint8_t> out(data.size());
  const int64_t half = head_dim / 2;
  for (int64_t head = 0; head < rows / head_dim; ++head)
    for (int64_t i = 0; i < half; ++i)
      for (int64_t j = 0; j < 2; ++j) {
        size_t from = static_cast<size_t>(head * head_dim + 2 * i + j), to = static_cast<size_t>(head * head_dim + j * half + i);
        std::memcpy(out.data() + to * row_bytes, data.data() + from * row_bytes, row_bytes);
      }
  return out;
}

std::vector<std::string> strings_of(const GgufFile& g, const std::string& key) {
  std::vector<std::string> out;
  if (const llm::GgufValue* v = g.find(key))
    for (const llm::GgufValue& x : v->as_array()) out.push_back(x.as_string());
  return out;
}
int64_t int_of(const GgufFile& g, const std::string& key, int64_t fallback = -1) {
  const llm::GgufValue* v = g.find(key);
  return v ? v->as_int() : fallback;
}

struct HfOptions {
  const char* architecture;  // config.json's
  bool sharded = false;      // two safetensors files and model.safetensors.index.json
  bool pair_merges = false;  // merges as [left, right] (tokenizers 0.20) instead of "left right"
};

// Writes the GGUF test model g (made from spec) as a Hugging Face directory.
void write_hf(const GgufFile& g, const llm::TestModelSpec& spec, const HfOptions& o, const std::string& dir) {
  const llm::ModelConfig c = llm::ModelConfig::from_gguf(g);
  // The weights, in two shards when asked: the first layer's in one, the rest in the other.
  std::vector<StEntry> shards[2];
  for (const llm::GgufTensor& t : g.tensors) {
    StEntry e;
    e.name = hf_name(t.name);
    e.dtype = st_dtype(t.type);
    for (size_t i = t.dims.size(); i-- > 0;) e.shape.push_back(t.dims[i]);
    std::span<const uint8_t> data = g.data(t);
    bool rotated = t.name.ends_with("attn_q.weight") || t.name.ends_with("attn_k.weight");
    if (rotated && !c.rope_neox) e.data = to_half_split(data, e.shape[0], c.head_dim);
    else e.data.assign(data.begin(), data.end());
    shards[o.sharded && !t.name.starts_with("blk.0.") ? 1 : 0].push_back(std::move(e));
  }
  if (o.sharded) {
    std::string map;
    for (int s = 0; s < 2; ++s) {
      std::string file = "model-0000" + std::to_string(s + 1) + "-of-00002.safetensors";
      write_file(dir + "/" + file, safetensors_bytes(shards[s], R"({"format":"pt"})"));
      for (const StEntry& e : shards[s]) map += (map.empty() ? "" : ",\n    ") + js(e.name) + ": " + js(file);
    }
    write_file(dir + "/model.safetensors.index.json", "{\"metadata\": {\"total_size\": 0}, \"weight_map\": {\n    " + map + "\n}}\n");
  } else {
    write_file(dir + "/model.safetensors", safetensors_bytes(shards[0], R"({"format":"pt"})"));
  }

  // config.json.
  char eps[64];
  std::snprintf(eps, sizeof eps, "%.17g", c.rms_eps);
  const int64_t bos = int_of(g, "tokenizer.ggml.bos_token_id"), eos = int_of(g, "tokenizer.ggml.eos_token_id");
  std::string config = "{\n  \"architectures\": [" + js(o.architecture) + "],\n  \"model_type\": \"ignored\",\n";
  config += "  \"hidden_size\": " + std::to_string(c.dim) + ",\n  \"num_hidden_layers\": " + std::to_string(c.layers) + ",\n";
  config += "  \"num_attention_heads\": " + std::to_string(c.heads) + ",\n  \"num_key_value_heads\": " + std::to_string(c.kv_heads) + ",\n";
  config += "  \"intermediate_size\": " + std::to_string(c.ffn) + ",\n  \"vocab_size\": " + std::to_string(c.vocab) + ",\n";
  config += "  \"max_position_embeddings\": " + std::to_string(c.context) + ",\n  \"rope_theta\": " + std::to_string(c.rope_base) + ",\n";
  config += "  \"rms_norm_eps\": " + std::string(eps) + ",\n  \"tie_word_embeddings\": " + (spec.tied_output ? "true" : "false") + ",\n";
  if (spec.arch == "qwen3") config += "  \"head_dim\": " + std::to_string(c.head_dim) + ",\n";
  config += "  \"rope_scaling\": null,\n  \"bos_token_id\": " + std::to_string(bos) + ",\n  \"eos_token_id\": " + std::to_string(eos) + ",\n";
  config += "  \"torch_dtype\": \"float32\"\n}\n";
  write_file(dir + "/config.json", config);

  // tokenizer.json and tokenizer_config.json.
  const std::string model = g.find("tokenizer.ggml.model")->as_string();
  const std::vector<std::string> tokens = strings_of(g, "tokenizer.ggml.tokens");
  std::vector<int64_t> types;
  for (const llm::GgufValue& x : g.find("tokenizer.ggml.token_type")->as_array()) types.push_back(x.as_int());
  const bool spm = model == "llama";
  std::vector<std::pair<std::string, std::string>> merges;
  if (spm) {
    // SentencePiece's pieces as BPE merges (as Hugging Face converts them): every split of each
    // piece into two tokens, the pieces in score order.
    std::vector<float> scores;
    for (const llm::GgufValue& x : g.find("tokenizer.ggml.scores")->as_array()) scores.push_back(static_cast<float>(x.as_float()));
    std::set<std::string> known(tokens.begin(), tokens.end());
    std::vector<size_t> order;
    for (size_t i = 0; i < tokens.size(); ++i)
      if (types[i] == llm::Tokenizer::kNormal) order.push_back(i);
    // (std::sort with the index as tie-break: clang 22 refuses libstdc++ 12's stable_sort as deprecated)
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return scores[a] != scores[b] ? scores[a] > scores[b] : a < b; });
    for (size_t i : order)
      for (size_t k = 1; k < tokens[i].size(); ++k)
        if ((static_cast<uint8_t>(tokens[i][k]) & 0xC0) != 0x80 && known.count(tokens[i].substr(0, k)) && known.count(tokens[i].substr(k)))
          merges.emplace_back(tokens[i].substr(0, k), tokens[i].substr(k));
  } else {
    for (const std::string& m : strings_of(g, "tokenizer.ggml.merges")) {
      size_t sp = m.find(' ', 1);
      merges.emplace_back(m.substr(0, sp), m.substr(sp + 1));
    }
  }
  std::string vocab, added;
  for (size_t i = 0; i < tokens.size(); ++i) {
    const bool control = types[i] == llm::Tokenizer::kControl || types[i] == llm::Tokenizer::kUnknown;
    if (control) {
      added += std::string(added.empty() ? "" : ",\n    ") + "{\"id\": " + std::to_string(i) + ", \"content\": " + js(tokens[i]) +
               ", \"single_word\": false, \"lstrip\": false, \"rstrip\": false, \"normalized\": false, \"special\": true}";
    }
    if (!control || spm) vocab += std::string(vocab.empty() ? "" : ",\n      ") + js(tokens[i]) + ": " + std::to_string(i);
  }
  std::string merge_list;
  for (const auto& [l, r] : merges)
    merge_list += std::string(merge_list.empty() ? "" : ",\n      ") + (o.pair_merges ? "[" + js(l) + ", " + js(r) + "]" : js(l + " " + r));
  const std::string pre = g.find("tokenizer.ggml.pre") ? g.find("tokenizer.ggml.pre")->as_string() : "";
  std::string tok = "{\n  \"version\": \"1.0\",\n  \"truncation\": null,\n  \"padding\": null,\n  \"added_tokens\": [\n    " + added + "\n  ],\n";
  std::string tc = "{\n";
  if (spm) {
    tok += "  \"normalizer\": {\"type\": \"Sequence\", \"normalizers\": [{\"type\": \"Prepend\", \"prepend\": " + js(kSpm) +
           "}, {\"type\": \"Replace\", \"pattern\": {\"String\": \" \"}, \"content\": " + js(kSpm) + "}]},\n";
    tok += "  \"pre_tokenizer\": null,\n";
    tok +=
        "  \"post_processor\": {\"type\": \"TemplateProcessing\", \"single\": [{\"SpecialToken\": {\"id\": \"<s>\", \"type_id\": 0}}, "
        "{\"Sequence\": {\"id\": \"A\", \"type_id\": 0}}], \"pair\": [], \"special_tokens\": {}},\n";
    tok += "  \"decoder\": {\"type\": \"Sequence\", \"decoders\": [{\"type\": \"Replace\", \"pattern\": {\"String\": " + js(kSpm) +
           "}, \"content\": \" \"}, {\"type\": \"ByteFallback\"}, {\"type\": \"Fuse\"}, {\"type\": \"Strip\", \"content\": \" \", \"start\": 1, "
           "\"stop\": 0}]},\n";
    tok +=
        "  \"model\": {\"type\": \"BPE\", \"dropout\": null, \"unk_token\": \"<unk>\", \"continuing_subword_prefix\": null, "
        "\"end_of_word_suffix\": null, \"fuse_unk\": true, \"byte_fallback\": true, \"ignore_merges\": false,\n";
    tc +=
        "  \"add_bos_token\": true,\n  \"add_eos_token\": false,\n  \"bos_token\": \"<s>\",\n  \"eos_token\": \"</s>\",\n  \"unk_token\": "
        "\"<unk>\",\n  \"pad_token\": null,\n";
  } else {
    const bool llama3 = pre == "llama-bpe";
    const std::string regex =
        llama3
            ? "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
            : "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
    tok += "  \"normalizer\": null,\n";
    tok += "  \"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Split\", \"pattern\": {\"Regex\": " + js(regex) +
           "}, \"behavior\": \"Isolated\", \"invert\": false}, {\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"trim_offsets\": true, "
           "\"use_regex\": false}]},\n";
    if (llama3)
      tok +=
          "  \"post_processor\": {\"type\": \"Sequence\", \"processors\": [{\"type\": \"ByteLevel\", \"add_prefix_space\": true, "
          "\"trim_offsets\": false, \"use_regex\": true}, {\"type\": \"TemplateProcessing\", \"single\": [{\"SpecialToken\": {\"id\": "
          "\"<|begin_of_text|>\", \"type_id\": 0}}, {\"Sequence\": {\"id\": \"A\", \"type_id\": 0}}], \"pair\": [], \"special_tokens\": {}}]},\n";
    else tok += "  \"post_processor\": {\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"trim_offsets\": false, \"use_regex\": false},\n";
    tok += "  \"decoder\": {\"type\": \"ByteLevel\", \"add_prefix_space\": true, \"trim_offsets\": true, \"use_regex\": true},\n";
    tok +=
        "  \"model\": {\"type\": \"BPE\", \"dropout\": null, \"unk_token\": null, \"continuing_subword_prefix\": \"\", \"end_of_word_suffix\": "
        "\"\", \"fuse_unk\": false, \"byte_fallback\": false, \"ignore_merges\": " +
        std::string(llama3 ? "true" : "false") + ",\n";
    // Llama 3 says nothing of add_bos_token (its post-processor adds the BOS); Qwen has no BOS.
    if (llama3) tc += "  \"bos_token\": \"<|begin_of_text|>\",\n  \"eos_token\": \"<|eot_id|>\",\n";
    else tc += "  \"add_bos_token\": false,\n  \"bos_token\": null,\n  \"eos_token\": \"<|im_end|>\",\n  \"pad_token\": \"<|endoftext|>\",\n";
  }
  tok += "    \"vocab\": {\n      " + vocab + "\n    },\n    \"merges\": [\n      " + merge_list + "\n    ]\n  }\n}\n";
  if (const llm::GgufValue* t = g.find("tokenizer.chat_template")) tc += "  \"chat_template\": " + js(t->as_string()) + ",\n";
  tc += "  \"model_max_length\": 1000000000000000019884624838656,\n  \"tokenizer_class\": \"PreTrainedTokenizerFast\"\n}\n";
  write_file(dir + "/tokenizer.json", tok);
  write_file(dir + "/tokenizer_config.json", tc);
}

double max_abs(const std::vector<float>& v) {
  double m = 0;
  for (float x : v) m = std::max(m, std::fabs(double(x)));
  return m;
}

TEST_CASE("safetensors: a Hugging Face directory computes the logits and token ids of the GGUF file it was made from") {
  struct Case {
    const char* arch;
    const char* weights;
    const char* tokenizer;
    const char* hf_arch;
    bool tied, sharded, pair_merges;
  };
  const Case cases[] = {
      {"llama", "f32", "llama", "LlamaForCausalLM", false, false, false},     {"llama", "f16", "gpt2-llama3", "LlamaForCausalLM", true, true, true},
      {"mistral", "bf16", "llama", "MistralForCausalLM", false, true, false}, {"qwen2", "f16", "gpt2", "Qwen2ForCausalLM", false, false, true},
      {"qwen3", "bf16", "gpt2", "Qwen3ForCausalLM", true, false, false},
  };
  const std::vector<std::string> texts = {
      "The old town stood by the river.",
      " Children walked to school in small groups, 24 of them!",
      "Hello world\n\nPrices: 3 apples for 1 coin; honey?  Yes.",
      "caf\xC3\xA9 \xE2\x82\xAC 12345 \xF0\x9F\x98\x80",
      "",
  };
  for (const Case& cs : cases) {
    const std::string what = std::string(cs.arch) + " " + cs.weights + " " + cs.tokenizer + (cs.sharded ? " sharded" : "") + (cs.tied ? " tied" : "");
    INFO(what);
    llm::TestModelSpec spec;
    spec.arch = cs.arch, spec.weights = cs.weights, spec.tokenizer = cs.tokenizer, spec.tied_output = cs.tied;
    spec.dim = 64, spec.ffn = 128, spec.heads = 4, spec.kv_heads = 2, spec.layers = 2, spec.vocab = 384, spec.context = 64;
    std::vector<uint8_t> bytes = llm::test_model_bytes(spec);
    GgufFile g = GgufFile::parse(bytes);
    TempDir dir;
    write_hf(g, spec, {cs.hf_arch, cs.sharded, cs.pair_merges}, dir.path);
    GgufFile h = llm::load_hf_directory(dir.path + "/");

    // The configuration, with RoPE rotating halves.
    llm::ModelConfig cg = llm::ModelConfig::from_gguf(g), ch = llm::ModelConfig::from_gguf(h);
    CHECK(ch.describe() == cg.describe());
    CHECK(ch.rope_neox);
    CHECK(ch.rope_base == cg.rope_base);
    CHECK(ch.rms_eps == cg.rms_eps);
    CHECK((h.tensor("output.weight") != nullptr) == !cs.tied);
    CHECK(h.size() > 0);

    // The tokenizer.
    llm::Tokenizer tg = llm::Tokenizer::from_gguf(g), th = llm::Tokenizer::from_gguf(h);
    CHECK(th.model() == tg.model());
    CHECK(th.size() == tg.size());
    CHECK(th.bos() == tg.bos());
    CHECK(th.eos() == tg.eos());
    CHECK(th.add_bos() == tg.add_bos());
    CHECK(th.add_eos() == tg.add_eos());
    for (int32_t id = 0; id < static_cast<int32_t>(tg.size()); ++id) {
      CHECK(th.text(id) == tg.text(id));
      CHECK(th.is_control(id) == tg.is_control(id));
      CHECK(th.is_eog(id) == tg.is_eog(id));
    }
    const llm::GgufValue* tmpl = g.find("tokenizer.chat_template");
    REQUIRE((h.find("tokenizer.chat_template") != nullptr) == (tmpl != nullptr));
    if (tmpl) CHECK(h.find("tokenizer.chat_template")->as_string() == tmpl->as_string());
    std::vector<std::string> all = texts;
    all.push_back(std::string(llm::test_model_text().substr(0, 400)));
    all.push_back(tg.text(tg.eos()) + " after a special token " + tg.text(tg.bos()));
    for (const std::string& text : all) {
      INFO("text: " << text);
      for (bool special : {false, true}) {
        std::vector<int32_t> a = tg.encode(text, true, special), b = th.encode(text, true, special);
        CHECK(a == b);
        CHECK(th.decode(b) == tg.decode(a));
      }
    }

    // The logits of a prompt.
    std::vector<int32_t> prompt = tg.encode("The river, the bridge and the stories", true, false);
    REQUIRE(prompt.size() > 2);
    if (prompt.size() > 12) prompt.resize(12);
    const int64_t n = static_cast<int64_t>(prompt.size());
    llm::Model mg = llm::Model::load(g, "cpu", 16), mh = llm::Model::load(h, "cpu", 16);
    CHECK(mh.weight_bytes() == mg.weight_bytes());
    std::vector<float> lg = mg.forward(tensor::Tensor::from(prompt, {n}, "cpu"), 0).to_vector<float>();
    std::vector<float> lh = mh.forward(tensor::Tensor::from(prompt, {n}, "cpu"), 0).to_vector<float>();
    REQUIRE(lg.size() == lh.size());
    double diff = 0;
    for (size_t i = 0; i < lg.size(); ++i) diff = std::max(diff, std::fabs(double(lg[i]) - lh[i]));
    CHECK(max_abs(lg) > 0.1);
    CHECK(diff <= 1e-4 * max_abs(lg));
    // A decode step after the prompt agrees too (the KV cache written in the Hugging Face row order).
    std::vector<int32_t> next{prompt[1]};
    lg = mg.forward(tensor::Tensor::from(next, {1}, "cpu"), n).to_vector<float>();
    lh = mh.forward(tensor::Tensor::from(next, {1}, "cpu"), n).to_vector<float>();
    diff = 0;
    for (size_t i = 0; i < lg.size(); ++i) diff = std::max(diff, std::fabs(double(lg[i]) - lh[i]));
    CHECK(diff <= 1e-4 * max_abs(lg));
  }
}

// A small Hugging Face directory (a llama, f32, with a byte-level tokenizer) to break in the tests below.
struct SmallHf {
  TempDir dir;
  llm::TestModelSpec spec;
  std::vector<uint8_t> bytes;
  SmallHf() {
    spec.arch = "llama", spec.weights = "f32", spec.tokenizer = "gpt2-llama3";
    spec.dim = 32, spec.ffn = 64, spec.heads = 2, spec.kv_heads = 1, spec.layers = 1, spec.vocab = 300, spec.context = 32;
    bytes = llm::test_model_bytes(spec);
    write_hf(GgufFile::parse(bytes), spec, {"LlamaForCausalLM"}, dir.path);
  }
  std::string read(const std::string& name) const {
    std::ifstream i(dir / name, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(i), {});
  }
  // config.json with `from` replaced by `to`.
  void edit(const std::string& name, const std::string& from, const std::string& to) {
    std::string s = read(name);
    size_t at = s.find(from);
    REQUIRE_MESSAGE(at != std::string::npos, from << " is not in " << name);
    write_file(dir / name, s.replace(at, from.size(), to));
  }
};

TEST_CASE("safetensors: RoPE scaling from config.json, llama 3's as rope_freqs.weight") {
  SmallHf hf;
  hf.edit("config.json", "\"rope_scaling\": null", "\"rope_scaling\": {\"type\": \"linear\", \"factor\": 4.0}");
  GgufFile f = llm::load_hf_directory(hf.dir.path);
  CHECK(f.find("llama.rope.scaling.type")->as_string() == "linear");
  CHECK(llm::ModelConfig::from_gguf(f).rope_scale == 0.25);

  // Llama 3.1's numbers on a 16-wide head: factor 8 on the long wavelengths, 1 on the short, smooth between.
  SmallHf l3;
  l3.edit("config.json", "\"rope_theta\": 10000.000000", "\"rope_theta\": 500000");
  l3.edit("config.json", "\"rope_scaling\": null",
          "\"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 8.0, \"low_freq_factor\": 1.0, \"high_freq_factor\": 4.0, "
          "\"original_max_position_embeddings\": 8192}");
  GgufFile g = llm::load_hf_directory(l3.dir.path);
  const llm::GgufTensor* rf = g.tensor("rope_freqs.weight");
  REQUIRE(rf);
  CHECK(rf->type == GgmlType::F32);
  REQUIRE(rf->dims == std::vector<int64_t>{8});
  std::vector<float> factors(8);
  std::memcpy(factors.data(), g.data(*rf).data(), 32);
  for (int i = 0; i < 8; ++i) {
    // wavelength 2 pi 500000^(2i/16), against 8192 / 4 and 8192 / 1.
    double wavelen = 2 * std::numbers::pi * std::pow(500000.0, i / 8.0);
    INFO("pair " << i << ", wavelength " << wavelen);
    if (wavelen < 2048) CHECK(factors[i] == 1.0f);
    else if (wavelen > 8192) CHECK(factors[i] == 8.0f);
    else {
      double smooth = (8192 / wavelen - 1) / 3;
      CHECK(factors[i] == doctest::Approx(1 / ((1 - smooth) / 8 + smooth)).epsilon(1e-6));
    }
  }
  CHECK(factors[0] == 1.0f);
  CHECK(factors[7] == 8.0f);
  CHECK(std::is_sorted(factors.begin(), factors.end()));
  // The model divides its frequencies by them.
  llm::Model m = llm::Model::load(g, "cpu", 8);
  CHECK(m.config().rope_base == 500000);

  SmallHf yarn;
  yarn.edit("config.json", "\"rope_scaling\": null", "\"rope_scaling\": {\"rope_type\": \"yarn\", \"factor\": 4.0}");
  CHECK_REFUSES(llm::load_hf_directory(yarn.dir.path),
                "config.json: RoPE scaling 'yarn' ('rope_scaling') is not supported (ugpu supports linear and llama3)");
}

TEST_CASE("safetensors: a Hugging Face directory with something wrong is refused, naming the file and what") {
  TempDir empty;
  CHECK_REFUSES(llm::load_hf_directory(empty / "nowhere"), "/nowhere is not a directory");
  CHECK_REFUSES(llm::load_hf_directory(empty.path), " has no config.json");
  {
    SmallHf hf;
    hf.edit("config.json", "LlamaForCausalLM", "GemmaForCausalLM");
    CHECK_REFUSES(llm::load_hf_directory(hf.dir.path), "config.json: architecture 'GemmaForCausalLM' is not supported");
  }
  {
    SmallHf hf;
    hf.edit("config.json", "\"hidden_size\": 32", "\"hidden_size\": \"32\"");
    CHECK_REFUSES(llm::load_hf_directory(hf.dir.path), "config.json: 'hidden_size' (at byte", ") is a string, not an integer");
  }
  {
    SmallHf hf;
    hf.edit("config.json", "\"intermediate_size\": 64,", "");
    CHECK_REFUSES(llm::load_hf_directory(hf.dir.path), "config.json: 'intermediate_size' is missing");
  }
  {
    SmallHf hf;
    hf.edit("config.json", "\"vocab_size\": 300,", "\"vocab_size\": 300,,");
    CHECK_REFUSES(llm::load_hf_directory(hf.dir.path), "config.json: JSON: at byte", "expected a member name");
  }
  {
    SmallHf hf;
    fs::remove(hf.dir / "tokenizer.json");
    CHECK_REFUSES(llm::load_hf_directory(hf.dir.path), " has no tokenizer.json");
  }
  {
    SmallHf hf;
    hf.edit("tokenizer.json", "\"type\": \"BPE\"", "\"type\": \"Unigram\"");
    CHECK_REFUSES(llm::load_hf_directory(hf.dir.path), "tokenizer.json: the model is 'Unigram'; ugpu reads BPE tokenizers");
  }
  {
    SmallHf hf;
    hf.edit("tokenizer.json", "\\\\p{N}{1,3}", "\\\\p{N}{1,5}");
    CHECK_REFUSES(llm::load_hf_directory(hf.dir.path), "tokenizer.json: the pre-tokenizer regex", "is not one ugpu knows");
  }
  {
    SmallHf hf;
    hf.edit("tokenizer.json", "{\"id\": 299,", "{\"id\": 300,");
    CHECK_REFUSES(llm::load_hf_directory(hf.dir.path),
                  "tokenizer.json: added_tokens: token '<|eot_id|>' has the id 300, outside config.json's vocabulary");
  }
  {
    SmallHf hf;
    fs::remove(hf.dir / "model.safetensors");
    CHECK_REFUSES(llm::load_hf_directory(hf.dir.path), "has neither model.safetensors nor model.safetensors.index.json");
  }
  {
    // A tensor the model uses in a type ugpu does not read; one it does not use is ignored.
    SmallHf hf;
    GgufFile g = GgufFile::parse(hf.bytes);
    std::vector<StEntry> entries;
    for (const llm::GgufTensor& t : g.tensors) {
      StEntry e{hf_name(t.name), st_dtype(t.type), {}, {}};
      for (size_t i = t.dims.size(); i-- > 0;) e.shape.push_back(t.dims[i]);
      std::span<const uint8_t> data = g.data(t);
      e.data.assign(data.begin(), data.end());
      entries.push_back(std::move(e));
    }
    entries.push_back({"model.rotary_emb.inv_freq", "I8", {4}, std::vector<uint8_t>(4)});
    write_file(hf.dir / "model.safetensors", safetensors_bytes(entries));
    CHECK(llm::load_hf_directory(hf.dir.path).tensor("token_embd.weight") != nullptr);
    entries[0].dtype = "I32";
    write_file(hf.dir / "model.safetensors", safetensors_bytes(entries));
    CHECK_REFUSES(llm::load_hf_directory(hf.dir.path), "model.safetensors: tensor 'model.embed_tokens.weight' is I32; ugpu reads F32, F16 and BF16");
    entries.erase(entries.begin());
    write_file(hf.dir / "model.safetensors", safetensors_bytes(entries));
    CHECK_REFUSES(llm::load_hf_directory(hf.dir.path), "the checkpoint has no tensor 'model.embed_tokens.weight'");
    write_file(hf.dir / "model.safetensors", raw_safetensors(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 7));
    CHECK_REFUSES(llm::load_hf_directory(hf.dir.path),
                  "model.safetensors: safetensors: tensor 'w' (at byte 13) has data_offsets [0, 8] past the end");
  }
  {
    // A shard index naming a file that is not there, or outside the directory, or a tensor the file lacks.
    SmallHf hf;
    fs::rename(hf.dir / "model.safetensors", hf.dir / "a.safetensors");
    write_file(hf.dir / "model.safetensors.index.json", R"({"weight_map": {"model.norm.weight": "b.safetensors"}})");
    CHECK_REFUSES(llm::load_hf_directory(hf.dir.path), "b.safetensors: cannot open");
    write_file(hf.dir / "model.safetensors.index.json", R"({"weight_map": {"model.norm.weight": "../a.safetensors"}})");
    CHECK_REFUSES(llm::load_hf_directory(hf.dir.path),
                  "model.safetensors.index.json: the weight map names the file '../a.safetensors', which is not a plain file name");
    write_file(hf.dir / "model.safetensors.index.json", R"({"weight_map": {"model.norm.weight": "a.safetensors", "extra.weight": "a.safetensors"}})");
    CHECK_REFUSES(llm::load_hf_directory(hf.dir.path), "the weight map puts tensor 'extra.weight' in a.safetensors, which does not have it");
    write_file(hf.dir / "model.safetensors.index.json", R"({"weight_map": {"model.norm.weight": "a.safetensors"}})");
    CHECK(llm::load_hf_directory(hf.dir.path).tensor("output_norm.weight") != nullptr);
    write_file(hf.dir / "model.safetensors.index.json", R"({"weight_map": []})");
    CHECK_REFUSES(llm::load_hf_directory(hf.dir.path), "model.safetensors.index.json: there is no \"weight_map\" object");
  }
}

}  // namespace
}  // namespace ugpu::test
