// Hugging Face model directories as GgufFiles (llm/safetensors.h).
#include "llm/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <numbers>
#include <optional>
#include <set>
#include <unordered_map>

#include "common/error.h"
#include "llm/json.h"

namespace ugpu::llm {

namespace {

constexpr uint64_t kMaxHeader = 100'000'000;  // the safetensors library's own limit on the header
constexpr int kMaxDims = 4;                   // GGUF's (and ggml's) most dimensions

struct DtypeInfo {
  const char* name;
  int bytes;
};
constexpr DtypeInfo kDtypes[] = {
    {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E5M2", 1}, {"F8_E4M3", 1}, {"F8_E8M0", 1}, {"I16", 2}, {"U16", 2}, {"F16", 2},
    {"BF16", 2}, {"I32", 4}, {"U32", 4}, {"F32", 4},     {"I64", 8},     {"U64", 8},     {"F64", 8}, {"C64", 8},
};

template <class F>
auto in_file(const std::string& path, F&& f) {
  try {
    return f();
  } catch (const Error& e) { throw Error(path + ": " + e.what()); }
}

bool is_file(const std::string& path) {
  struct stat st{};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// The whole file as one mapping (read-only, private).
std::pair<std::span<const uint8_t>, std::shared_ptr<const void>> map_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error(path + ": cannot open: " + std::strerror(errno));
  struct stat st{};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error(path + ": not a regular file");
  }
  size_t n = static_cast<size_t>(st.st_size);
  if (n == 0) {
    ::close(fd);
    throw Error(path + ": the file is empty");
  }
  void* p = mmap(nullptr, n, PROT_READ, MAP_PRIVATE, fd, 0);
  int err = errno;
  ::close(fd);
  if (p == MAP_FAILED) throw Error(path + ": cannot map: " + std::strerror(err));
  std::shared_ptr<const void> owner(p, [n](const void* q) { munmap(const_cast<void*>(q), n); });
  return {std::span<const uint8_t>(static_cast<const uint8_t*>(p), n), std::move(owner)};
}

std::string read_text(const std::string& path) {
  auto [bytes, owner] = map_file(path);
  return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

json::Value load_json(const std::string& path) {
  std::string text = read_text(path);
  return in_file(path, [&] { return json::parse(text); });
}

std::string quoted(std::string_view s) { return "'" + std::string(s.substr(0, 200)) + (s.size() > 200 ? "...'" : "'"); }

// ---- GGUF metadata values -------------------------------------------------------------------------

GgufValue gguf_u32(int64_t x) {
  GgufValue v;
  v.type = GgufValue::Type::U32;
  v.v = static_cast<uint64_t>(x);
  return v;
}
GgufValue gguf_f32(double x) {
  GgufValue v;
  v.type = GgufValue::Type::F32;
  v.v = static_cast<double>(static_cast<float>(x));
  return v;
}
GgufValue gguf_bool(bool x) {
  GgufValue v;
  v.type = GgufValue::Type::Bool;
  v.v = x;
  return v;
}
GgufValue gguf_string(std::string x) {
  GgufValue v;
  v.type = GgufValue::Type::String;
  v.v = std::move(x);
  return v;
}
template <class T, class F>
GgufValue gguf_array(GgufValue::Type element, const std::vector<T>& xs, F&& make) {
  GgufValue v;
  v.type = GgufValue::Type::Array;
  v.element = element;
  std::vector<GgufValue> items;
  items.reserve(xs.size());
  for (const T& x : xs) items.push_back(make(x));
  v.v = std::move(items);
  return v;
}

struct Meta {
  GgufFile& f;
  void set(const std::string& key, GgufValue v) { f.metadata.emplace_back(key, std::move(v)); }
};

// ---- config.json ----------------------------------------------------------------------------------

struct Arch {
  const char* hf;
  const char* model_type;
  const char* gguf;
};
constexpr Arch kArchs[] = {
    {"LlamaForCausalLM", "llama", "llama"},
    {"MistralForCausalLM", "mistral", "llama"},
    {"Qwen2ForCausalLM", "qwen2", "qwen2"},
    {"Qwen3ForCausalLM", "qwen3", "qwen3"},
};

// config.json's values (absent and null are the same).
struct Config {
  const json::Value& root;
  const json::Value* get(std::string_view key) const {
    const json::Value* v = root.find(key);
    return v && !v->is_null() ? v : nullptr;
  }
  int64_t integer(std::string_view key, std::optional<int64_t> fallback, int64_t lo, int64_t hi) const {
    const json::Value* v = get(key);
    if (!v) {
      if (fallback) return *fallback;
      throw Error("'" + std::string(key) + "' is missing (the model's configuration needs it)");
    }
    int64_t x = v->as_int("'" + std::string(key) + "'");
    if (x < lo || x > hi)
      throw Error("'" + std::string(key) + "' is " + std::to_string(x) + ", outside " + std::to_string(lo) + ".." + std::to_string(hi));
    return x;
  }
  double number(const json::Value* v, std::string_view key, double fallback) const {
    if (!v || v->is_null()) return fallback;
    double x = v->as_number("'" + std::string(key) + "'");
    if (!std::isfinite(x)) throw Error("'" + std::string(key) + "' is not a finite number");
    return x;
  }
  double number(std::string_view key, double fallback) const { return number(get(key), key, fallback); }
};

struct Hparams {
  std::string arch;  // general.architecture
  int64_t dim = 0, layers = 0, heads = 0, kv_heads = 0, head_dim = 0, ffn = 0, vocab = 0;
  bool tied = false;
};

// The llama 3 RoPE factors (what llama.cpp's converter writes as rope_freqs.weight): for each rotating
// pair, the divisor of its frequency. Wavelengths shorter than original_context / high_freq_factor keep
// their frequency (1), those longer than original_context / low_freq_factor are divided by `factor`,
// and those between are interpolated in 1/frequency.
std::vector<float> llama3_factors(const Config& cfg, const json::Value& scaling, double base, int64_t dims) {
  double factor = cfg.number(scaling.find("factor"), "rope_scaling.factor", 8.0);
  double low = cfg.number(scaling.find("low_freq_factor"), "rope_scaling.low_freq_factor", 1.0);
  double high = cfg.number(scaling.find("high_freq_factor"), "rope_scaling.high_freq_factor", 4.0);
  double old_context = cfg.number(scaling.find("original_max_position_embeddings"), "rope_scaling.original_max_position_embeddings", 8192);
  if (!(factor > 0) || !(low > 0) || !(high > low) || !(old_context > 0))
    throw Error("rope_scaling (llama3) needs factor > 0, 0 < low_freq_factor < high_freq_factor and original_max_position_embeddings > 0");
  const double low_wavelen = old_context / low, high_wavelen = old_context / high;
  std::vector<float> out;
  for (int64_t i = 0; i < dims / 2; ++i) {
    double freq = 1.0 / std::pow(base, static_cast<double>(2 * i) / static_cast<double>(dims));
    double wavelen = 2 * std::numbers::pi / freq;
    double f;
    if (wavelen < high_wavelen) {
      f = 1;
    } else if (wavelen > low_wavelen) {
      f = factor;
    } else {
      double smooth = (old_context / wavelen - low) / (high - low);
      f = 1 / ((1 - smooth) / factor + smooth);
    }
    out.push_back(static_cast<float>(f));
  }
  return out;
}

Hparams read_config(const json::Value& root, Meta& m, std::vector<float>& rope_freqs) {
  if (!root.is_object()) throw Error("the file is " + std::string(json::Value::type_name(root.type())) + ", not an object");
  Config cfg{root};
  const Arch* arch = nullptr;
  std::string named;
  if (const json::Value* a = cfg.get("architectures")) {
    const auto& list = a->as_array("'architectures'");
    if (list.empty()) throw Error("'architectures' is empty");
    named = list[0].as_string("'architectures[0]'");
    for (const Arch& x : kArchs)
      if (named == x.hf) arch = &x;
  } else if (const json::Value* t = cfg.get("model_type")) {
    named = t->as_string("'model_type'");
    for (const Arch& x : kArchs)
      if (named == x.model_type) arch = &x;
  } else {
    throw Error("there is neither 'architectures' nor 'model_type': which model this is is not said");
  }
  if (!arch)
    throw Error("architecture '" + named +
                "' is not supported (ugpu reads LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM and Qwen3ForCausalLM)");

  Hparams h;
  h.arch = arch->gguf;
  constexpr int64_t kBig = int64_t{1} << 24;
  h.dim = cfg.integer("hidden_size", std::nullopt, 1, kBig);
  h.layers = cfg.integer("num_hidden_layers", std::nullopt, 1, 4096);
  h.heads = cfg.integer("num_attention_heads", std::nullopt, 1, 65536);
  h.kv_heads = cfg.integer("num_key_value_heads", h.heads, 1, 65536);
  h.ffn = cfg.integer("intermediate_size", std::nullopt, 1, kBig);
  h.vocab = cfg.integer("vocab_size", std::nullopt, 1, kBig);
  const json::Value* hd = cfg.get("head_dim");
  h.head_dim = hd ? cfg.integer("head_dim", std::nullopt, 1, 65536) : h.dim / h.heads;
  if (!hd && h.dim % h.heads)
    throw Error("'hidden_size' (" + std::to_string(h.dim) + ") is not a multiple of 'num_attention_heads' and there is no 'head_dim'");
  const json::Value* tie = cfg.get("tie_word_embeddings");
  h.tied = tie ? tie->as_bool("'tie_word_embeddings'") : false;  // LlamaConfig's, MistralConfig's and Qwen2/3Config's default

  // transformers 5 keeps rope_theta and the scaling in "rope_parameters".
  const json::Value* rope_params = cfg.get("rope_parameters");
  if (rope_params && !rope_params->is_object()) throw Error("'rope_parameters' is not an object");
  double base = cfg.number("rope_theta", rope_params ? cfg.number(rope_params->find("rope_theta"), "rope_parameters.rope_theta", 10000) : 10000);
  if (!(base > 0)) throw Error("'rope_theta' must be positive");

  const std::string a = h.arch + ".";
  m.set("general.architecture", gguf_string(h.arch));
  m.set(a + "context_length", gguf_u32(cfg.integer("max_position_embeddings", 2048, 1, kBig)));
  m.set(a + "embedding_length", gguf_u32(h.dim));
  m.set(a + "block_count", gguf_u32(h.layers));
  m.set(a + "feed_forward_length", gguf_u32(h.ffn));
  m.set(a + "attention.head_count", gguf_u32(h.heads));
  m.set(a + "attention.head_count_kv", gguf_u32(h.kv_heads));
  m.set(a + "rope.freq_base", gguf_f32(base));
  // 1e-6: the default of LlamaConfig, MistralConfig and Qwen2/3Config.
  m.set(a + "attention.layer_norm_rms_epsilon", gguf_f32(cfg.number("rms_norm_eps", 1e-6)));
  m.set(a + "attention.key_length", gguf_u32(h.head_dim));
  m.set(a + "attention.value_length", gguf_u32(h.head_dim));
  m.set(a + "rope.dimension_count", gguf_u32(h.head_dim));
  m.set(a + "vocab_size", gguf_u32(h.vocab));
  m.set("ugpu.rope.neox", gguf_bool(true));

  const json::Value* scaling = cfg.get("rope_scaling");
  std::string where = "rope_scaling";
  if (!scaling && rope_params) scaling = rope_params, where = "rope_parameters";
  if (scaling) {
    if (!scaling->is_object()) throw Error("'" + where + "' is not an object");
    const json::Value* t = scaling->find("rope_type");
    if (!t || t->is_null()) t = scaling->find("type");
    std::string type = t && !t->is_null() ? t->as_string("'" + where + ".rope_type'") : "default";
    if (type == "linear") {
      double factor = cfg.number(scaling->find("factor"), where + ".factor", 0);
      if (!(factor > 0)) throw Error("'" + where + ".factor' must be positive for linear RoPE scaling");
      m.set(a + "rope.scaling.type", gguf_string("linear"));
      m.set(a + "rope.scaling.factor", gguf_f32(factor));
    } else if (type == "llama3") {
      rope_freqs = llama3_factors(cfg, *scaling, base, h.head_dim);
    } else if (type != "default") {
      throw Error("RoPE scaling '" + type + "' ('" + where + "') is not supported (ugpu supports linear and llama3)");
    }
  }
  return h;
}

// ---- tensors --------------------------------------------------------------------------------------

// The GGUF name of a Hugging Face tensor name; empty for one ugpu does not use.
std::string gguf_name(std::string_view hf, int64_t layers) {
  if (hf == "model.embed_tokens.weight") return "token_embd.weight";
  if (hf == "model.norm.weight") return "output_norm.weight";
  if (hf == "lm_head.weight") return "output.weight";
  constexpr std::string_view kLayers = "model.layers.";
  if (!hf.starts_with(kLayers)) return "";
  hf.remove_prefix(kLayers.size());
  size_t dot = hf.find('.');
  if (dot == std::string_view::npos || dot == 0 || dot > 6 || (hf[0] == '0' && dot > 1)) return "";
  int64_t layer = 0;
  for (size_t i = 0; i < dot; ++i) {
    if (hf[i] < '0' || hf[i] > '9') return "";
    layer = layer * 10 + (hf[i] - '0');
  }
  if (layer >= layers) return "";  // not a layer of the configuration
  std::string_view rest = hf.substr(dot + 1);
  static const std::pair<std::string_view, std::string_view> kParts[] = {
      {"input_layernorm.weight", "attn_norm.weight"},    {"self_attn.q_proj.weight", "attn_q.weight"},
      {"self_attn.k_proj.weight", "attn_k.weight"},      {"self_attn.v_proj.weight", "attn_v.weight"},
      {"self_attn.o_proj.weight", "attn_output.weight"}, {"self_attn.q_proj.bias", "attn_q.bias"},
      {"self_attn.k_proj.bias", "attn_k.bias"},          {"self_attn.v_proj.bias", "attn_v.bias"},
      {"self_attn.o_proj.bias", "attn_output.bias"},     {"self_attn.q_norm.weight", "attn_q_norm.weight"},
      {"self_attn.k_norm.weight", "attn_k_norm.weight"}, {"post_attention_layernorm.weight", "ffn_norm.weight"},
      {"mlp.gate_proj.weight", "ffn_gate.weight"},       {"mlp.up_proj.weight", "ffn_up.weight"},
      {"mlp.down_proj.weight", "ffn_down.weight"},
  };
  for (const auto& [from, to] : kParts)
    if (rest == from) return "blk." + std::to_string(layer) + "." + std::string(to);
  return "";
}

// The Hugging Face names the configuration needs.
std::vector<std::string> required_tensors(const Hparams& h) {
  std::vector<std::string> r = {"model.embed_tokens.weight", "model.norm.weight"};
  if (!h.tied) r.push_back("lm_head.weight");
  for (int64_t i = 0; i < h.layers; ++i) {
    std::string b = "model.layers." + std::to_string(i) + ".";
    for (const char* p :
         {"input_layernorm.weight", "self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight", "self_attn.o_proj.weight",
          "post_attention_layernorm.weight", "mlp.gate_proj.weight", "mlp.up_proj.weight", "mlp.down_proj.weight"})
      r.push_back(b + p);
    if (h.arch == "qwen2")
      for (const char* p : {"self_attn.q_proj.bias", "self_attn.k_proj.bias", "self_attn.v_proj.bias"}) r.push_back(b + p);
    if (h.arch == "qwen3")
      for (const char* p : {"self_attn.q_norm.weight", "self_attn.k_norm.weight"}) r.push_back(b + p);
  }
  return r;
}

// A shard file name from the index: a plain name in the directory.
void check_shard_name(const std::string& name) {
  if (name.empty() || name.find('/') != std::string::npos || name.find('\\') != std::string::npos || name == "." || name == ".." ||
      name.find('\0') != std::string::npos)
    throw Error("the weight map names the file " + quoted(name) + ", which is not a plain file name in the directory");
}

void add_tensors(GgufFile& f, const std::string& dir, const Hparams& h) {
  const std::string single = dir + "/model.safetensors", index_path = dir + "/model.safetensors.index.json";
  std::vector<std::string> files;
  std::vector<std::pair<std::string, std::string>> weight_map;  // tensor -> file, from the index
  if (is_file(index_path)) {
    json::Value index = load_json(index_path);
    in_file(index_path, [&] {
      const json::Value* wm = index.find("weight_map");
      if (!wm || !wm->is_object()) throw Error("there is no \"weight_map\" object");
      const auto& names = wm->keys();
      const auto& values = wm->as_array();
      std::set<std::string> seen;
      for (size_t i = 0; i < names.size(); ++i) {
        const std::string& file = values[i].as_string("the weight map's entry for '" + names[i] + "'");
        check_shard_name(file);
        weight_map.emplace_back(names[i], file);
        if (seen.insert(file).second) files.push_back(file);
      }
      if (files.empty()) throw Error("the weight map is empty");
      return 0;
    });
  } else if (is_file(single)) {
    files.push_back("model.safetensors");
  } else {
    throw Error(dir + " has neither model.safetensors nor model.safetensors.index.json (ugpu reads safetensors checkpoints)");
  }

  std::unordered_map<std::string, std::string> found;  // Hugging Face name -> the file that has it
  for (const std::string& file : files) {
    const std::string path = dir + "/" + file;
    SafetensorsFile st = SafetensorsFile::open(path);
    uint32_t source = f.add_source(st.bytes(), st.mapping());
    for (const SafetensorsTensor& t : st.tensors) {
      auto [it, fresh] = found.emplace(t.name, file);
      if (!fresh) throw Error("tensor '" + t.name + "' is in both " + it->second + " and " + file + " (in " + dir + ")");
      std::string name = gguf_name(t.name, h.layers);
      if (name.empty() || (h.tied && name == "output.weight")) continue;
      GgufTensor g;
      g.name = name;
      if (t.dtype == "F32") g.type = GgmlType::F32;
      else if (t.dtype == "F16") g.type = GgmlType::F16;
      else if (t.dtype == "BF16") g.type = GgmlType::BF16;
      else throw Error(path + ": tensor '" + t.name + "' is " + t.dtype + "; ugpu reads F32, F16 and BF16 safetensors");
      if (t.shape.empty() || t.shape.size() > kMaxDims)
        throw Error(path + ": tensor '" + t.name + "' has " + std::to_string(t.shape.size()) + " dimensions (1 to 4)");
      for (size_t i = t.shape.size(); i-- > 0;) {
        if (t.shape[i] == 0) throw Error(path + ": tensor '" + t.name + "' is empty (a dimension of 0)");
        g.dims.push_back(t.shape[i]);
      }
      g.offset = t.offset;
      g.bytes = t.bytes;
      g.source = source;
      f.tensors.push_back(std::move(g));
    }
  }
  for (const auto& [name, file] : weight_map) {
    auto it = found.find(name);
    if (it == found.end() || it->second != file)
      throw Error(index_path + ": the weight map puts tensor '" + name + "' in " + file + ", which does not have it");
  }
  for (const std::string& name : required_tensors(h))
    if (!found.count(name))
      throw Error(dir + ": the checkpoint has no tensor '" + name + "'" +
                  (name == "lm_head.weight" ? " (config.json says tie_word_embeddings is false)" : ""));
}

// ---- tokenizer.json -------------------------------------------------------------------------------

enum TokenType : int64_t { kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6 };

constexpr std::string_view kLlama3Regex =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
constexpr std::string_view kQwen2Regex =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

// A component (normalizer, pre-tokenizer, decoder) and those in it when it is a Sequence.
void components(const json::Value* v, std::vector<const json::Value*>& out, int depth = 0) {
  if (!v || !v->is_object() || depth > 8) return;
  out.push_back(v);
  for (const char* list : {"normalizers", "pretokenizers", "decoders", "processors"})
    if (const json::Value* l = v->find(list); l && l->is_array())
      for (const json::Value& c : l->as_array()) components(&c, out, depth + 1);
}

std::string type_of(const json::Value* v) {
  const json::Value* t = v ? v->find("type") : nullptr;
  return t && t->is_string() ? t->as_string() : "";
}

// What convert_hf_to_gguf.py's does_token_look_special takes for a control token.
bool looks_special(std::string_view t) {
  if (t == "<pad>" || t == "<mask>" || t == "<2mass>" || t == "[@BOS@]") return true;
  if (t.starts_with("<|") && t.ends_with("|>")) return true;
  if (t.starts_with("<\xEF\xBD\x9C") && t.ends_with("\xEF\xBD\x9C>")) return true;  // <｜ ... ｜>
  return t.starts_with("<unused") && t.ends_with(">");
}

bool is_byte_token(std::string_view t) {
  auto hex = [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); };
  return t.size() == 6 && t.starts_with("<0x") && hex(t[3]) && hex(t[4]) && t[5] == '>';
}

// A special token named in tokenizer_config.json: a string, or an object with "content".
std::optional<std::string> token_text(const json::Value* v) {
  if (!v) return std::nullopt;
  if (v->is_string()) return v->as_string();
  if (v->is_object())
    if (const json::Value* c = v->find("content"); c && c->is_string()) return c->as_string();
  return std::nullopt;
}

void add_tokenizer(Meta& m, const std::string& dir, const Hparams& h, const json::Value& config) {
  const std::string path = dir + "/tokenizer.json";
  if (!is_file(path)) throw Error(dir + " has no tokenizer.json (ugpu reads Hugging Face tokenizers from it; tokenizer.model alone is not enough)");
  json::Value tok = load_json(path);
  const std::string config_path = dir + "/tokenizer_config.json";
  std::optional<json::Value> tc;
  if (is_file(config_path)) tc = load_json(config_path);
  if (tc && !tc->is_object()) throw Error(config_path + ": the file is not an object");

  struct Added {
    int64_t id;
    std::string content;
    bool special;
  };
  std::vector<Added> added;
  std::vector<std::string> tokens;
  std::vector<int64_t> types;
  std::vector<float> scores;
  std::vector<std::string> merges;
  bool spm = false;
  std::string pre;
  std::optional<bool> space_prefix, add_bos, add_eos;
  std::optional<std::string> first_special, last_special;  // of the post-processor's template

  in_file(path, [&] {
    if (!tok.is_object()) throw Error("the file is not an object");
    const json::Value* model = tok.find("model");
    if (!model || !model->is_object()) throw Error("there is no \"model\" object");
    const json::Value* mt = model->find("type");
    std::string type = mt && mt->is_string() ? mt->as_string() : "";
    if (type != "BPE") throw Error("the model is " + (type.empty() ? std::string("of no type") : quoted(type)) + "; ugpu reads BPE tokenizers");
    const json::Value* vocab = model->find("vocab");
    if (!vocab || !vocab->is_object()) throw Error("the model has no \"vocab\" object");

    // Byte-level BPE (GPT-2's alphabet) or SentencePiece-style BPE (U+2581 for spaces, byte fallback).
    std::vector<const json::Value*> pre_tokenizers, normalizers, decoders;
    components(tok.find("pre_tokenizer"), pre_tokenizers);
    components(tok.find("normalizer"), normalizers);
    components(tok.find("decoder"), decoders);
    bool byte_level = type_of(tok.find("decoder")) == "ByteLevel";
    bool metaspace = false;
    for (const auto* list : {&pre_tokenizers, &decoders})
      for (const json::Value* c : *list) byte_level |= type_of(c) == "ByteLevel", metaspace |= type_of(c) == "Metaspace";
    for (const json::Value* c : normalizers) {
      const json::Value* p = c->find("prepend");
      if (type_of(c) == "Prepend" && p && p->is_string() && p->as_string() == "\xE2\x96\x81") metaspace = true, space_prefix = true;
      const json::Value* content = c->find("content");
      if (type_of(c) == "Replace" && content && content->is_string() && content->as_string() == "\xE2\x96\x81") metaspace = true;
    }
    const json::Value* fallback = model->find("byte_fallback");
    bool byte_fallback = fallback && fallback->is_bool() && fallback->as_bool();
    if (byte_level) {
      spm = false;
    } else if (metaspace || byte_fallback) {
      spm = true;
    } else {
      throw Error(
          "the tokenizer is neither byte-level BPE (a ByteLevel pre-tokenizer or decoder) nor SentencePiece-style BPE "
          "(Metaspace, byte_fallback): ugpu reads those two");
    }
    if (spm) {
      for (const json::Value* c : pre_tokenizers) {
        if (type_of(c) != "Metaspace") continue;
        if (const json::Value* s = c->find("prepend_scheme"); s && s->is_string()) space_prefix = s->as_string() != "never";
        else if (const json::Value* a = c->find("add_prefix_space"); a && a->is_bool()) space_prefix = a->as_bool();
      }
    } else {
      // The pre-tokenizer regex names llama.cpp's pre-tokenizer.
      std::vector<std::string> regexes;
      bool gpt2_regex = false;
      for (const json::Value* c : pre_tokenizers) {
        if (type_of(c) == "Split") {
          const json::Value* pattern = c->find("pattern");
          const json::Value* r = pattern ? pattern->find("Regex") : nullptr;
          if (!r) r = pattern ? pattern->find("String") : nullptr;
          if (!r || !r->is_string()) throw Error("a Split pre-tokenizer (at byte " + std::to_string(c->offset()) + ") has no pattern");
          regexes.push_back(r->as_string());
        } else if (type_of(c) == "ByteLevel") {
          const json::Value* u = c->find("use_regex");
          gpt2_regex |= !u || !u->is_bool() || u->as_bool();
        }
      }
      if (regexes.size() == 1 && regexes[0] == kLlama3Regex && !gpt2_regex) pre = "llama-bpe";
      else if (regexes.size() == 1 && regexes[0] == kQwen2Regex && !gpt2_regex) pre = "qwen2";
      else if (regexes.empty() && gpt2_regex) pre = "gpt-2";
      else if (regexes.empty()) throw Error("the byte-level tokenizer has no pre-tokenizer regex (ugpu knows Llama 3's, Qwen 2's and GPT-2's)");
      else
        throw Error("the pre-tokenizer regex " + quoted(regexes[0]) + (regexes.size() > 1 ? " (and more)" : "") +
                    " is not one ugpu knows (Llama 3's, Qwen 2's, GPT-2's) for " + h.arch);
    }

    // The vocabulary: the model's tokens and the added ones, by id.
    std::vector<std::optional<std::string>> by_id;
    std::unordered_map<std::string, int64_t> ids;
    auto place = [&](const std::string& text, int64_t id, const std::string& where) {
      if (id < 0 || id >= h.vocab)
        throw Error(where + ": token " + quoted(text) + " has the id " + std::to_string(id) + ", outside config.json's vocabulary (vocab_size " +
                    std::to_string(h.vocab) + ")");
      if (static_cast<size_t>(id) >= by_id.size()) by_id.resize(static_cast<size_t>(id) + 1);
      auto& slot = by_id[static_cast<size_t>(id)];
      if (slot && *slot != text) throw Error(where + ": the id " + std::to_string(id) + " is both " + quoted(*slot) + " and " + quoted(text));
      slot = text;
      auto [it, fresh] = ids.emplace(text, id);
      if (!fresh && it->second != id)
        throw Error(where + ": token " + quoted(text) + " has two ids, " + std::to_string(it->second) + " and " + std::to_string(id));
    };
    const auto& texts = vocab->keys();
    const auto& values = vocab->as_array();
    for (size_t i = 0; i < texts.size(); ++i) place(texts[i], values[i].as_int("the id of " + quoted(texts[i])), "model.vocab");
    const size_t base_size = by_id.size();
    if (const json::Value* list = tok.find("added_tokens"); list && !list->is_null()) {
      for (const json::Value& a : list->as_array("\"added_tokens\"")) {
        const json::Value* id = a.find("id");
        const json::Value* content = a.find("content");
        if (!id || !content) throw Error("an added token (at byte " + std::to_string(a.offset()) + ") has no \"id\" or \"content\"");
        const json::Value* special = a.find("special");
        added.push_back(
            {id->as_int("an added token's id"), content->as_string("an added token's content"), special && special->is_bool() && special->as_bool()});
        place(added.back().content, added.back().id, "added_tokens");
      }
    }
    std::unordered_map<int64_t, const Added*> added_by_id;
    for (const Added& a : added) added_by_id[a.id] = &a;
    std::optional<std::string> unk_text;
    if (const json::Value* u = model->find("unk_token"); u && u->is_string()) unk_text = u->as_string();
    tokens.resize(static_cast<size_t>(h.vocab));
    types.resize(static_cast<size_t>(h.vocab));
    for (size_t i = 0; i < tokens.size(); ++i) {
      const int64_t id = static_cast<int64_t>(i);
      if (i >= by_id.size() || !by_id[i]) {
        tokens[i] = "[PAD" + std::to_string(i) + "]";  // ids the tokenizer does not use, up to the model's vocabulary
        types[i] = kUnused;
        continue;
      }
      tokens[i] = *by_id[i];
      auto a = added_by_id.find(id);
      if (spm) {
        if (unk_text && tokens[i] == *unk_text) types[i] = kUnknown;
        else if (a != added_by_id.end()) types[i] = a->second->special ? kControl : kUserDefined;
        else if (i < base_size && is_byte_token(tokens[i])) types[i] = kByte;
        else types[i] = kNormal;
      } else {
        if (a != added_by_id.end()) types[i] = a->second->special || looks_special(tokens[i]) ? kControl : kUserDefined;
        else types[i] = kNormal;
      }
    }

    // Merges: "left right", or [left, right] (since tokenizers 0.20, so parts may hold spaces).
    std::vector<std::pair<std::string, std::string>> pairs;
    if (const json::Value* ml = model->find("merges"); ml && !ml->is_null()) {
      for (const json::Value& mg : ml->as_array("\"merges\"")) {
        if (mg.is_string()) {
          const std::string& s = mg.as_string();
          size_t sp = s.find(' ', 1);
          if (sp == std::string::npos)
            throw Error("the merge " + quoted(s) + " (at byte " + std::to_string(mg.offset()) + ") is not two tokens separated by a space");
          pairs.emplace_back(s.substr(0, sp), s.substr(sp + 1));
        } else {
          const auto& two = mg.as_array("a merge");
          if (two.size() != 2) throw Error("a merge (at byte " + std::to_string(mg.offset()) + ") is not a pair");
          pairs.emplace_back(two[0].as_string("a merge's token"), two[1].as_string("a merge's token"));
        }
      }
    }
    if (spm) {
      // Scores from merge ranks: the earlier the first merge that makes a token, the higher its score.
      scores.assign(tokens.size(), -1e9f);
      std::vector<uint8_t> scored(tokens.size(), 0);
      for (size_t r = 0; r < pairs.size(); ++r) {
        auto it = ids.find(pairs[r].first + pairs[r].second);
        if (it == ids.end() || scored[static_cast<size_t>(it->second)]) continue;
        scored[static_cast<size_t>(it->second)] = 1;
        scores[static_cast<size_t>(it->second)] = -static_cast<float>(r);
      }
    } else {
      if (pairs.empty()) throw Error("the byte-level BPE model has no merges");
      // llama.cpp keeps merges as "left right": a space inside a part is written as U+0120, as its converter does.
      auto escape = [](const std::string& s) {
        std::string o;
        for (char c : s) o += c == ' ' ? std::string("\xC4\xA0") : std::string(1, c);
        return o;
      };
      merges.reserve(pairs.size());
      for (const auto& [l, r] : pairs) merges.push_back(escape(l) + " " + escape(r));
    }

    // What the post-processor puts around a text (convert_hf_to_gguf.py's reading of TemplateProcessing).
    std::vector<const json::Value*> processors;
    components(tok.find("post_processor"), processors);
    for (const json::Value* p : processors) {
      if (type_of(p) != "TemplateProcessing") continue;
      const json::Value* single = p->find("single");
      if (!single || !single->is_array() || single->size() < 2) continue;
      auto special_id = [](const json::Value& item) -> std::optional<std::string> {
        const json::Value* s = item.find("SpecialToken");
        const json::Value* id = s ? s->find("id") : nullptr;
        if (id && id->is_string()) return id->as_string();
        return std::nullopt;
      };
      first_special = special_id(single->as_array().front());
      last_special = special_id(single->as_array().back());
    }
    return 0;
  });

  // Special tokens: tokenizer_config.json's names (looked up among the added tokens), then config.json's ids.
  std::map<std::string, int64_t> special_ids;
  std::optional<std::string> bos_text, eos_text;
  in_file(config_path, [&] {
    for (const char* typ : {"bos", "eos", "unk", "pad"}) {
      std::optional<std::string> text = tc ? token_text(tc->find(std::string(typ) + "_token")) : std::nullopt;
      if (std::string(typ) == "bos") bos_text = text;
      if (std::string(typ) == "eos") eos_text = text;
      if (!text) continue;
      for (const Added& a : added)
        if (a.content == *text) {
          if (a.id < h.vocab) special_ids.emplace(typ, a.id);
          break;
        }
    }
    return 0;
  });
  in_file(dir + "/config.json", [&] {
    for (const char* typ : {"bos", "eos", "unk", "pad"}) {
      const json::Value* v = config.find(std::string(typ) + "_token_id");
      if (!v || !v->is_number() || special_ids.count(typ)) continue;  // a list of ids (Llama 3.1's eos) names none
      int64_t id = v->as_int(std::string("'") + typ + "_token_id'");
      if (id < 0) throw Error(std::string("'") + typ + "_token_id' is negative");
      if (id < h.vocab) special_ids.emplace(typ, id);
    }
    return 0;
  });
  if (!tc) bos_text = first_special, eos_text = last_special;
  if (first_special) add_bos = first_special == bos_text;
  if (last_special) add_eos = last_special == eos_text;
  std::string chat_template;
  in_file(config_path, [&] {
    if (!tc) return 0;
    for (const char* typ : {"bos", "eos"})
      if (const json::Value* v = tc->find(std::string("add_") + typ + "_token"); v && v->is_bool())
        (std::string(typ) == "bos" ? add_bos : add_eos) = v->as_bool();
    if (const json::Value* t = tc->find("chat_template"); t && !t->is_null()) {
      if (t->is_string()) {
        chat_template = t->as_string();
      } else {
        for (const json::Value& named : t->as_array("\"chat_template\"")) {
          const json::Value* name = named.find("name");
          const json::Value* body = named.find("template");
          if (!name || !body) throw Error("a chat template (at byte " + std::to_string(named.offset()) + ") has no \"name\" or \"template\"");
          if (name->as_string("a chat template's name") == "default") chat_template = body->as_string("a chat template");
          else m.set("tokenizer.chat_template." + name->as_string(), gguf_string(body->as_string("a chat template")));
        }
      }
    }
    return 0;
  });
  if (chat_template.empty() && is_file(dir + "/chat_template.jinja")) chat_template = read_text(dir + "/chat_template.jinja");

  m.set("tokenizer.ggml.model", gguf_string(spm ? "llama" : "gpt2"));
  if (!spm) m.set("tokenizer.ggml.pre", gguf_string(pre));
  m.set("tokenizer.ggml.tokens", gguf_array(GgufValue::Type::String, tokens, gguf_string));
  if (spm) m.set("tokenizer.ggml.scores", gguf_array(GgufValue::Type::F32, scores, gguf_f32));
  m.set("tokenizer.ggml.token_type", gguf_array(GgufValue::Type::I32, types, [](int64_t t) {
          GgufValue v;
          v.type = GgufValue::Type::I32;
          v.v = t;
          return v;
        }));
  if (!spm) m.set("tokenizer.ggml.merges", gguf_array(GgufValue::Type::String, merges, gguf_string));
  const std::pair<const char*, const char*> keys[] = {
      {"bos", "tokenizer.ggml.bos_token_id"},
      {"eos", "tokenizer.ggml.eos_token_id"},
      {"unk", "tokenizer.ggml.unknown_token_id"},
      {"pad", "tokenizer.ggml.padding_token_id"},
  };
  for (const auto& [typ, key] : keys)
    if (auto it = special_ids.find(typ); it != special_ids.end()) m.set(key, gguf_u32(it->second));
  if (add_bos) m.set("tokenizer.ggml.add_bos_token", gguf_bool(*add_bos));
  if (add_eos) m.set("tokenizer.ggml.add_eos_token", gguf_bool(*add_eos));
  if (spm && space_prefix) m.set("tokenizer.ggml.add_space_prefix", gguf_bool(*space_prefix));
  if (!chat_template.empty()) m.set("tokenizer.chat_template", gguf_string(chat_template));
}

}  // namespace

int safetensors_dtype_size(std::string_view dtype) {
  for (const DtypeInfo& d : kDtypes)
    if (dtype == d.name) return d.bytes;
  return 0;
}

const SafetensorsTensor* SafetensorsFile::find(std::string_view name) const {
  for (const SafetensorsTensor& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

SafetensorsFile SafetensorsFile::parse(std::span<const uint8_t> bytes) {
  SafetensorsFile f;
  f.bytes_ = bytes;
  if (bytes.size() < 8)
    throw Error("safetensors: the file is " + std::to_string(bytes.size()) + " bytes long, too short for the 8-byte header length");
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = n << 8 | bytes[static_cast<size_t>(i)];
  if (n > bytes.size() - 8)
    throw Error("safetensors: the header length " + std::to_string(n) + " runs past the end of the " + std::to_string(bytes.size()) +
                "-byte file (truncated, or not a safetensors file)");
  if (n > kMaxHeader) throw Error("safetensors: the header length " + std::to_string(n) + " is over the limit of " + std::to_string(kMaxHeader));
  if (n < 2 || bytes[8] != '{') throw Error("safetensors: at byte 8: the header does not start with '{' (not a safetensors file?)");
  const uint64_t data_start = 8 + n, data_size = bytes.size() - data_start;
  json::Value header = json::parse(std::string_view(reinterpret_cast<const char*>(bytes.data() + 8), static_cast<size_t>(n)), {.base = 8});
  if (!header.is_object()) throw Error("safetensors: at byte 8: the header is not an object");
  const auto& names = header.keys();
  const auto& entries = header.as_array();
  std::set<std::string_view> seen;
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string& name = names[i];
    const json::Value& e = entries[i];
    if (!seen.insert(name).second) throw Error("safetensors: at byte " + std::to_string(e.offset()) + ": '" + name + "' appears twice in the header");
    if (name == "__metadata__") {
      if (!e.is_object()) throw Error("safetensors: at byte " + std::to_string(e.offset()) + ": __metadata__ is not an object");
      for (size_t k = 0; k < e.size(); ++k) f.metadata.emplace_back(e.keys()[k], e.as_array()[k].as_string("__metadata__ '" + e.keys()[k] + "'"));
      continue;
    }
    const std::string what = "safetensors: tensor '" + name + "'";
    try {
      if (!e.is_object()) throw Error("the entry is " + std::string(json::Value::type_name(e.type())) + ", not an object");
      const json::Value* dtype = e.find("dtype");
      const json::Value* shape = e.find("shape");
      const json::Value* offsets = e.find("data_offsets");
      if (!dtype || !shape || !offsets) throw Error("the entry needs \"dtype\", \"shape\" and \"data_offsets\"");
      SafetensorsTensor t;
      t.name = name;
      t.dtype = dtype->as_string("\"dtype\"");
      const int size = safetensors_dtype_size(t.dtype);
      if (!size) throw Error("has the unknown dtype " + quoted(t.dtype));
      uint64_t elements = 1;
      for (const json::Value& d : shape->as_array("\"shape\"")) {
        int64_t x = d.as_int("a dimension");
        if (x < 0 || x > (int64_t{1} << 48)) throw Error("has the dimension " + std::to_string(x));
        if (x && elements > (uint64_t{1} << 56) / static_cast<uint64_t>(x)) throw Error("has more elements than a file can hold");
        elements *= static_cast<uint64_t>(x);
        t.shape.push_back(x);
      }
      const auto& range = offsets->as_array("\"data_offsets\"");
      if (range.size() != 2) throw Error("\"data_offsets\" is not [begin, end]");
      int64_t begin = range[0].as_int("the begin offset"), end = range[1].as_int("the end offset");
      if (begin < 0 || end < begin)
        throw Error("has data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) + "], not 0 <= begin <= end");
      if (static_cast<uint64_t>(end) > data_size)
        throw Error("has data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) + "] past the end of the data (" +
                    std::to_string(data_size) + " bytes after the header; truncated?)");
      t.bytes = static_cast<uint64_t>(end - begin);
      if (t.bytes != elements * static_cast<uint64_t>(size)) {
        std::string dims;
        for (int64_t d : t.shape) dims += (dims.empty() ? "" : ", ") + std::to_string(d);
        throw Error("is " + t.dtype + " [" + dims + "], " + std::to_string(elements * static_cast<uint64_t>(size)) +
                    " bytes, but its data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) + "] hold " + std::to_string(t.bytes));
      }
      t.offset = data_start + static_cast<uint64_t>(begin);
      f.tensors.push_back(std::move(t));
    } catch (const Error& err) {
      std::string msg = err.what();
      throw Error(what + " (at byte " + std::to_string(e.offset()) + ")" + (msg.starts_with("has ") || msg.starts_with("is ") ? " " : ": ") + msg);
    }
  }
  // No two tensors share bytes.
  std::vector<const SafetensorsTensor*> order;
  for (const SafetensorsTensor& t : f.tensors)
    if (t.bytes) order.push_back(&t);
  std::sort(order.begin(), order.end(), [](const auto* a, const auto* b) { return a->offset < b->offset; });
  for (size_t i = 1; i < order.size(); ++i)
    if (order[i]->offset < order[i - 1]->offset + order[i - 1]->bytes) {
      auto range = [&](const SafetensorsTensor* t) {
        return "[" + std::to_string(t->offset - data_start) + ", " + std::to_string(t->offset - data_start + t->bytes) + ")";
      };
      throw Error("safetensors: tensors '" + order[i - 1]->name + "' " + range(order[i - 1]) + " and '" + order[i]->name + "' " + range(order[i]) +
                  " overlap");
    }
  return f;
}

SafetensorsFile SafetensorsFile::open(const std::string& path) {
  auto mapped = map_file(path);
  SafetensorsFile f = in_file(path, [&] { return parse(mapped.first); });
  f.mapping_ = std::move(mapped.second);
  return f;
}

GgufFile load_hf_directory(const std::string& dir_in) {
  std::string dir = dir_in;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  struct stat st{};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) throw Error(dir + " is not a directory");
  const std::string config_path = dir + "/config.json";
  if (!is_file(config_path)) throw Error(dir + " has no config.json (a Hugging Face model directory has one)");
  json::Value config = load_json(config_path);

  GgufFile f;
  f.version = 3;
  Meta m{f};
  std::vector<float> rope_freqs;
  Hparams h = in_file(config_path, [&] { return read_config(config, m, rope_freqs); });
  size_t slash = dir.find_last_of('/');
  m.set("general.name", gguf_string(slash == std::string::npos ? dir : dir.substr(slash + 1)));
  add_tensors(f, dir, h);
  if (!rope_freqs.empty()) {
    auto data = std::make_shared<std::vector<uint8_t>>(rope_freqs.size() * 4);
    std::memcpy(data->data(), rope_freqs.data(), data->size());
    GgufTensor t;
    t.name = "rope_freqs.weight";
    t.type = GgmlType::F32;
    t.dims = {static_cast<int64_t>(rope_freqs.size())};
    t.bytes = data->size();
    t.source = f.add_source(*data, data);
    f.tensors.push_back(std::move(t));
  }
  add_tokenizer(m, dir, h, config);
  return f;
}

}  // namespace ugpu::llm
