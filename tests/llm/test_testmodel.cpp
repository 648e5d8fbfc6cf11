// The GGUF writer (llm/gguf_writer.h) against the reader, and the test-model generator
// (llm/testmodel.h): metadata, tensor names, shapes and types as llama.cpp writes them, valid
// tokenizers, determinism, and bad specs refused with the field named.
#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/error.h"
#include "llm/gguf.h"
#include "llm/gguf_writer.h"
#include "llm/quant.h"
#include "llm/testmodel.h"

namespace ugpu::test {
namespace {
using llm::GgmlType;
using llm::GgufFile;
using llm::GgufValue;
using llm::GgufWriter;
using llm::TestModelSpec;
using VT = GgufValue::Type;

std::vector<uint8_t> f32_bytes(const std::vector<float>& x) {
  std::vector<uint8_t> b(x.size() * 4);
  std::memcpy(b.data(), x.data(), b.size());
  return b;
}

TEST_CASE("gguf writer: every metadata type and tensors round-trip through the reader") {
  for (uint32_t alignment : {32u, 64u, 1u}) {
    CAPTURE(alignment);
    GgufWriter w(alignment);
    w.add_string("general.architecture", "llama");
    w.add_u8("u8", 200);
    w.add_i8("i8", -5);
    w.add_u16("u16", 60000);
    w.add_i16("i16", -30000);
    w.add_u32("u32", 4000000000u);
    w.add_i32("i32", -7);
    w.add_u64("u64", uint64_t{1} << 40);
    w.add_i64("i64", -(int64_t{1} << 40));
    w.add_f32("f32", 0.5f);
    w.add_f64("f64", 1e-300);
    w.add_bool("t", true);
    w.add_bool("f", false);
    w.add_string("s", std::string("a\0b", 3));
    w.add_ints("ai8", VT::I8, {-128, 0, 127});
    w.add_ints("au32", VT::U32, {0, 4294967295});
    w.add_ints("ai64", VT::I64, {INT64_MIN, INT64_MAX});
    w.add_u64s("au64", {UINT64_MAX, 1});
    w.add_f32s("af32", {1.5f, -2.25f});
    w.add_f64s("af64", {1e300});
    w.add_bools("abool", {true, false, true});
    w.add_strings("astr", {"<s>", "", "\xe2\x96\x81the"});
    GgufValue inner;
    inner.type = VT::Array, inner.element = VT::U16;
    inner.v = std::vector<GgufValue>{GgufValue{VT::U16, VT::U8, uint64_t{7}}, GgufValue{VT::U16, VT::U8, uint64_t{9}}};
    GgufValue nested{VT::Array, VT::Array, std::vector<GgufValue>{inner, inner}};
    w.add("nested", nested);
    w.add_strings("empty", {});
    w.add_tensor("w.f32", {3, 2}, GgmlType::F32, f32_bytes({0, 1, 2, 3, 4, 5.5f}));
    std::vector<float> q(64);
    for (int i = 0; i < 64; ++i) q[i] = static_cast<float>(i % 9) - 4;
    w.add_tensor("w.q8", {64}, GgmlType::Q8_0, llm::quantize(GgmlType::Q8_0, q));
    w.add_tensor("w.f16", {1, 3, 1, 2}, GgmlType::F16, std::vector<uint8_t>(12, 0x3c));
    w.add_tensor("w.q2k", {256}, GgmlType::Q2_K, std::vector<uint8_t>(84, 1));  // a type the LLM path does not read
    CHECK(w.tensor_count() == 4);

    std::vector<uint8_t> bytes = w.bytes();
    GgufFile f = GgufFile::parse(bytes);
    CHECK(f.version == 3);
    CHECK(f.alignment == alignment);
    CHECK(f.metadata.size() == w.metadata_count());
    if (alignment != 32) CHECK(f.find("general.alignment")->as_int() == alignment);
    if (alignment == 32) CHECK(f.find("general.alignment") == nullptr);
    CHECK(f.metadata[0].first == (alignment == 32 ? "general.architecture" : "general.alignment"));
    CHECK(f.find("u8")->type == VT::U8);
    CHECK(f.find("u8")->as_int() == 200);
    CHECK(f.find("i8")->as_int() == -5);
    CHECK(f.find("u16")->as_int() == 60000);
    CHECK(f.find("i16")->as_int() == -30000);
    CHECK(f.find("u32")->as_int() == 4000000000);
    CHECK(f.find("i32")->as_int() == -7);
    CHECK(f.find("u64")->as_int() == (int64_t{1} << 40));
    CHECK(f.find("i64")->as_int() == -(int64_t{1} << 40));
    CHECK(f.find("f32")->type == VT::F32);
    CHECK(f.find("f32")->as_float() == 0.5);
    CHECK(f.find("f64")->as_float() == 1e-300);
    CHECK(f.find("t")->as_bool());
    CHECK(!f.find("f")->as_bool());
    CHECK(f.find("s")->as_string() == std::string("a\0b", 3));
    const auto& ai8 = f.find("ai8")->as_array();
    CHECK(f.find("ai8")->element == VT::I8);
    REQUIRE(ai8.size() == 3);
    CHECK(ai8[0].as_int() == -128);
    CHECK(ai8[2].as_int() == 127);
    CHECK(f.find("au32")->as_array()[1].as_int() == 4294967295);
    CHECK(f.find("ai64")->as_array()[0].as_int() == INT64_MIN);
    CHECK(f.find("ai64")->as_array()[1].as_int() == INT64_MAX);
    CHECK(std::get<uint64_t>(f.find("au64")->as_array()[0].v) == UINT64_MAX);
    CHECK(f.find("af32")->element == VT::F32);
    CHECK(f.find("af32")->as_array()[1].as_float() == -2.25);
    CHECK(f.find("af64")->as_array()[0].as_float() == 1e300);
    CHECK(f.find("abool")->as_array()[2].as_bool());
    CHECK(f.find("astr")->as_array()[2].as_string() == "\xe2\x96\x81the");
    CHECK(f.find("astr")->as_array()[1].as_string().empty());
    const auto& nest = f.find("nested")->as_array();
    REQUIRE(nest.size() == 2);
    CHECK(nest[1].element == VT::U16);
    CHECK(nest[1].as_array()[1].as_int() == 9);
    CHECK(f.find("empty")->as_array().empty());

    REQUIRE(f.tensors.size() == 4);
    CHECK(f.tensors[0].name == "w.f32");
    CHECK(f.tensors[0].dims == std::vector<int64_t>{3, 2});
    CHECK(f.tensors[2].dims == std::vector<int64_t>{1, 3, 1, 2});
    CHECK(f.tensors[3].type == GgmlType::Q2_K);
    for (const auto& t : f.tensors) CHECK((t.offset - f.data_offset) % alignment == 0);
    CHECK(f.data_offset % alignment == 0);
    CHECK(bytes.size() % alignment == 0);  // the last tensor is padded too, as ggml sizes the data
    std::span<const uint8_t> d = f.data(*f.tensor("w.f32"));
    float last;
    std::memcpy(&last, d.data() + 20, 4);
    CHECK(last == 5.5f);
    std::vector<float> back(64);
    llm::dequantize(GgmlType::Q8_0, f.data(*f.tensor("w.q8")), back);
    CHECK(back[13] == doctest::Approx(0.0f).epsilon(0.01));
    CHECK(back[8] == doctest::Approx(4.0f).epsilon(0.01));
  }
}

TEST_CASE("gguf writer: bad metadata and tensors are refused, and leave the writer usable") {
  CHECK_THROWS_WITH_AS(GgufWriter(48), doctest::Contains("alignment 48 is not a power of two"), Error);
  GgufWriter w;
  w.add_u32("k", 1);
  CHECK_THROWS_WITH_AS(w.add_string("k", "x"), doctest::Contains("metadata key 'k' added twice"), Error);
  CHECK_THROWS_WITH_AS(w.add_u32("general.alignment", 64), doctest::Contains("set by the GgufWriter constructor"), Error);
  CHECK_THROWS_WITH_AS(w.add_u32("", 1), doctest::Contains("a metadata key is empty"), Error);
  CHECK_THROWS_WITH_AS(w.add_ints("a", VT::U8, {1, 256}), doctest::Contains("metadata 'a': 256 does not fit a u8"), Error);
  CHECK_THROWS_WITH_AS(w.add_ints("a", VT::U32, {-1}), doctest::Contains("-1 does not fit a u32"), Error);
  CHECK_THROWS_WITH_AS(w.add_ints("a", VT::F32, {1}), doctest::Contains("needs an integer element type, not f32"), Error);
  GgufValue mixed{VT::Array, VT::I32,
                  std::vector<GgufValue>{GgufValue{VT::I32, VT::U8, int64_t{1}}, GgufValue{VT::String, VT::U8, std::string("x")}}};
  CHECK_THROWS_WITH_AS(w.add("a", mixed), doctest::Contains("a string value where the array holds i32"), Error);
  w.add_ints("a", VT::U8, {1, 255});  // the failed adds left nothing behind
  CHECK_THROWS_WITH_AS(w.add_tensor("t", {31}, GgmlType::Q4_0, std::vector<uint8_t>(18)),
                       doctest::Contains("tensor 't': rows of 31 values are not a multiple of Q4_0's block of 32"), Error);
  CHECK_THROWS_WITH_AS(w.add_tensor("t", {32, 2}, GgmlType::Q4_0, std::vector<uint8_t>(18)),
                       doctest::Contains("18 bytes where [32, 2] of Q4_0 take 36"), Error);
  CHECK_THROWS_WITH_AS(w.add_tensor("t", {1, 1, 1, 1, 1}, GgmlType::F32, std::vector<uint8_t>(4)), doctest::Contains("5 dimensions"), Error);
  CHECK_THROWS_WITH_AS(w.add_tensor("t", {0}, GgmlType::F32, {}), doctest::Contains("not positive"), Error);
  CHECK_THROWS_WITH_AS(w.add_tensor(std::string(64, 'n'), {1}, GgmlType::F32, std::vector<uint8_t>(4)),
                       doctest::Contains("64 bytes long; ggml allows 63"), Error);
  CHECK_THROWS_WITH_AS(w.add_tensor("t", {1}, static_cast<GgmlType>(99), std::vector<uint8_t>(4)), doctest::Contains("unknown ggml type 99"), Error);
  w.add_tensor("t", {1}, GgmlType::F32, std::vector<uint8_t>(4));
  CHECK_THROWS_WITH_AS(w.add_tensor("t", {1}, GgmlType::F32, std::vector<uint8_t>(4)), doctest::Contains("tensor 't': added twice"), Error);
  GgufFile f = GgufFile::parse(w.bytes());
  CHECK(f.metadata.size() == 2);
  CHECK(f.find("a")->as_array().size() == 2);
  CHECK(f.tensors.size() == 1);
}

TEST_CASE("gguf writer: write() replaces the file whole and names the path when it cannot") {
  std::string path = "/tmp/ugpu-test-writer-" + std::to_string(::getpid()) + ".gguf";
  GgufWriter w;
  w.add_string("general.architecture", "llama");
  w.add_tensor("x", {2}, GgmlType::F32, f32_bytes({1, 2}));
  w.write(path);
  w.write(path);  // over an existing file
  {
    GgufFile f = GgufFile::open(path);
    CHECK(f.size() == w.bytes().size());
    CHECK(f.tensor("x") != nullptr);
  }
  CHECK(::access((path + ".tmp").c_str(), F_OK) != 0);
  std::remove(path.c_str());
  std::string bad = "/nonexistent-ugpu-dir/m.gguf";
  CHECK_THROWS_WITH_AS(w.write(bad), doctest::Contains(("cannot create " + bad + ".tmp").c_str()), Error);
}

// ---- test models ---------------------------------------------------------------------------------

int64_t get_int(const GgufFile& f, const std::string& key) {
  const GgufValue* v = f.find(key);
  INFO(key);
  REQUIRE(v != nullptr);
  return v->as_int();
}
std::string get_str(const GgufFile& f, const std::string& key) {
  const GgufValue* v = f.find(key);
  INFO(key);
  REQUIRE(v != nullptr);
  return v->as_string();
}
std::vector<std::string> strings(const GgufFile& f, const std::string& key) {
  std::vector<std::string> out;
  for (const GgufValue& v : f.find(key)->as_array()) out.push_back(v.as_string());
  return out;
}

// The tensors a spec's file must hold: name -> GGUF dims (F32 1-D ones for norms and biases).
std::map<std::string, std::vector<int64_t>> expected_tensors(const TestModelSpec& s) {
  int64_t hd = s.head_dim ? s.head_dim : s.dim / s.heads, q = s.heads * hd, kv = s.kv_heads * hd;
  std::map<std::string, std::vector<int64_t>> t;
  t["token_embd.weight"] = {s.dim, s.vocab};
  t["output_norm.weight"] = {s.dim};
  if (!s.tied_output) t["output.weight"] = {s.dim, s.vocab};
  for (int64_t i = 0; i < s.layers; ++i) {
    std::string b = "blk." + std::to_string(i) + ".";
    t[b + "attn_norm.weight"] = {s.dim};
    t[b + "attn_q.weight"] = {s.dim, q};
    t[b + "attn_k.weight"] = {s.dim, kv};
    t[b + "attn_v.weight"] = {s.dim, kv};
    t[b + "attn_output.weight"] = {q, s.dim};
    t[b + "ffn_norm.weight"] = {s.dim};
    t[b + "ffn_gate.weight"] = {s.dim, s.ffn};
    t[b + "ffn_up.weight"] = {s.dim, s.ffn};
    t[b + "ffn_down.weight"] = {s.ffn, s.dim};
    if (s.arch == "qwen2") t[b + "attn_q.bias"] = {q}, t[b + "attn_k.bias"] = {kv}, t[b + "attn_v.bias"] = {kv};
    if (s.arch == "qwen3") t[b + "attn_q_norm.weight"] = {hd}, t[b + "attn_k_norm.weight"] = {hd};
  }
  return t;
}

TEST_CASE("testmodel: every arch and weight type parses back with llama.cpp's keys, names, shapes and types") {
  const std::map<std::string, std::pair<GgmlType, int64_t>> weights = {
      {"f32", {GgmlType::F32, 0}},    {"f16", {GgmlType::F16, 1}},    {"bf16", {GgmlType::BF16, 32}}, {"q8_0", {GgmlType::Q8_0, 7}},
      {"q4_0", {GgmlType::Q4_0, 2}},  {"q4_1", {GgmlType::Q4_1, 3}},  {"q5_0", {GgmlType::Q5_0, 8}},  {"q5_1", {GgmlType::Q5_1, 9}},
      {"q4_k", {GgmlType::Q4_K, 14}}, {"q5_k", {GgmlType::Q5_K, 16}}, {"q6_k", {GgmlType::Q6_K, 18}}, {"q4_k_m", {GgmlType::Q4_K, 15}},
  };
  for (std::string arch : {"llama", "mistral", "qwen2", "qwen3"})
    for (const auto& entry : weights) {
      const std::string wname = entry.first;
      const std::pair<GgmlType, int64_t> wt = entry.second;
      // Every weight type on llama, a few on the others.
      if (arch != "llama" && wname != "f32" && wname != "q8_0" && wname != "q4_k_m") continue;
      TestModelSpec s;
      s.arch = arch, s.weights = wname;
      s.tied_output = arch == "qwen2";
      if (arch == "qwen3") s.head_dim = 128;  // qwen3's heads are wider than dim / heads
      CAPTURE(arch);
      CAPTURE(wname);
      std::vector<uint8_t> bytes = llm::test_model_bytes(s);
      GgufFile f = GgufFile::parse(bytes);
      std::string a = arch == "mistral" ? "llama" : arch;
      CHECK(get_str(f, "general.architecture") == a);
      CHECK(get_int(f, "general.file_type") == wt.second);
      CHECK(get_int(f, "general.quantization_version") == 2);
      CHECK(get_int(f, a + ".context_length") == 256);
      CHECK(get_int(f, a + ".embedding_length") == 256);
      CHECK(get_int(f, a + ".block_count") == 2);
      CHECK(get_int(f, a + ".feed_forward_length") == 512);
      CHECK(get_int(f, a + ".attention.head_count") == 4);
      CHECK(get_int(f, a + ".attention.head_count_kv") == 2);
      CHECK(f.find(a + ".rope.freq_base")->as_float() == 10000);
      CHECK(f.find(a + ".attention.layer_norm_rms_epsilon")->type == VT::F32);
      CHECK(f.find(a + ".attention.layer_norm_rms_epsilon")->as_float() == doctest::Approx(1e-5));
      if (a == "llama") {
        CHECK(get_int(f, "llama.vocab_size") == 512);
        CHECK(get_int(f, "llama.rope.dimension_count") == 64);
        CHECK(f.find("llama.attention.key_length") == nullptr);
      } else {
        CHECK(f.find(a + ".vocab_size") == nullptr);
      }
      if (a == "qwen3") {
        CHECK(get_int(f, "qwen3.attention.key_length") == 128);
        CHECK(get_int(f, "qwen3.attention.value_length") == 128);
      }
      bool spm = a == "llama";
      CHECK(get_str(f, "tokenizer.ggml.model") == (spm ? "llama" : "gpt2"));
      CHECK(f.find("tokenizer.ggml.tokens")->as_array().size() == 512);
      CHECK(f.find("tokenizer.ggml.token_type")->element == VT::I32);
      if (!spm) CHECK(get_str(f, "tokenizer.ggml.pre") == "qwen2");
      CHECK((f.find("tokenizer.chat_template") != nullptr) == (arch != "llama"));

      auto want = expected_tensors(s);
      CHECK(f.tensors.size() == want.size());
      for (const auto& t : f.tensors) {
        CAPTURE(t.name);
        REQUIRE(want.count(t.name));
        CHECK(t.dims == want[t.name]);
        bool vec = t.dims.size() == 1;
        GgmlType type = vec ? GgmlType::F32 : wt.first;
        if (wname == "q4_k_m") {
          bool six = t.name == "blk.1.attn_v.weight" || t.name == "blk.1.ffn_down.weight" || t.name == "output.weight" ||
                     (t.name == "token_embd.weight" && s.tied_output);
          if (six) type = GgmlType::Q6_K;
        }
        CHECK(t.type == type);
        CHECK(t.bytes == llm::quant_bytes(t.type, t.elements()));
      }
    }
}

TEST_CASE("testmodel: weights are seeded, scaled to the fan-in, and decode to finite values") {
  TestModelSpec s;
  s.weights = "q8_0";
  std::vector<uint8_t> bytes = llm::test_model_bytes(s);
  CHECK(bytes == llm::test_model_bytes(s));
  GgufFile f = GgufFile::parse(bytes);
  auto values = [&](const std::string& name) {
    const llm::GgufTensor* t = f.tensor(name);
    std::vector<float> x(static_cast<size_t>(t->elements()));
    llm::dequantize(t->type, f.data(*t), x);
    return x;
  };
  auto stddev = [](const std::vector<float>& x) {
    double s2 = 0;
    for (float v : x) s2 += static_cast<double>(v) * v;
    return std::sqrt(s2 / static_cast<double>(x.size()));
  };
  // N(0, 1/fan_in), the embeddings included; the projections into the residual stream at twice that.
  CHECK(stddev(values("token_embd.weight")) == doctest::Approx(1.0 / 16).epsilon(0.05));
  CHECK(stddev(values("blk.0.ffn_gate.weight")) == doctest::Approx(1.0 / 16).epsilon(0.05));
  CHECK(stddev(values("blk.0.attn_output.weight")) == doctest::Approx(2.0 / 16).epsilon(0.05));
  CHECK(stddev(values("blk.1.ffn_down.weight")) == doctest::Approx(2.0 / std::sqrt(512.0)).epsilon(0.05));
  std::vector<float> norm = values("blk.0.attn_norm.weight");
  for (float v : norm) CHECK((v >= 0.9f && v <= 1.1f));
  CHECK(norm[0] != norm[1]);
  CHECK(values("blk.0.attn_q.weight") != values("blk.1.attn_q.weight"));

  TestModelSpec s2 = s;
  s2.seed = 2;
  std::vector<uint8_t> other = llm::test_model_bytes(s2);
  CHECK(other.size() == bytes.size());
  CHECK(other != bytes);
  GgufFile g = GgufFile::parse(other);
  CHECK(strings(g, "tokenizer.ggml.tokens") == strings(f, "tokenizer.ggml.tokens"));  // the seed changes weights, not the vocabulary
  CHECK(
      !std::equal(f.data(*f.tensor("output.weight")).begin(), f.data(*f.tensor("output.weight")).end(), g.data(*g.tensor("output.weight")).begin()));
}

TEST_CASE("testmodel: q4_k_m follows llama-quantize's Q4_K_M choice of Q6_K layers") {
  TestModelSpec s;
  s.weights = "q4_k_m", s.layers = 8, s.dim = 256, s.ffn = 256, s.vocab = 384;
  GgufFile f = GgufFile::parse(llm::test_model_bytes(s));
  // use_more_bits for 8 layers: i < 1, i >= 7, or (i - 1) % 3 == 2: layers 0, 3, 6 and 7.
  std::set<int> six = {0, 3, 6, 7};
  for (int i = 0; i < 8; ++i) {
    CAPTURE(i);
    GgmlType want = six.count(i) ? GgmlType::Q6_K : GgmlType::Q4_K;
    std::string b = "blk." + std::to_string(i) + ".";
    CHECK(f.tensor(b + "attn_v.weight")->type == want);
    CHECK(f.tensor(b + "ffn_down.weight")->type == want);
    CHECK(f.tensor(b + "attn_k.weight")->type == GgmlType::Q4_K);
    CHECK(f.tensor(b + "ffn_up.weight")->type == GgmlType::Q4_K);
    CHECK(f.tensor(b + "attn_norm.weight")->type == GgmlType::F32);
  }
  CHECK(f.tensor("output.weight")->type == GgmlType::Q6_K);
  CHECK(f.tensor("token_embd.weight")->type == GgmlType::Q4_K);
  s.tied_output = true;
  GgufFile tied = GgufFile::parse(llm::test_model_bytes(s));
  CHECK(tied.tensor("output.weight") == nullptr);
  CHECK(tied.tensor("token_embd.weight")->type == GgmlType::Q6_K);
}

TEST_CASE("testmodel: bad specs are refused with the field named") {
  auto refuse = [](TestModelSpec s, const char* msg) {
    CAPTURE(msg);
    CHECK_THROWS_WITH_AS(llm::test_model_bytes(s), doctest::Contains(msg), Error);
  };
  TestModelSpec s;
  auto with = [&](auto edit) {
    TestModelSpec t = s;
    edit(t);
    return t;
  };
  refuse(with([](auto& t) { t.arch = "gptj"; }), "TestModelSpec.arch: 'gptj' is not one of");
  refuse(with([](auto& t) { t.weights = "q3_k"; }), "TestModelSpec.weights: 'q3_k'");
  refuse(with([](auto& t) { t.tokenizer = "wpm"; }), "TestModelSpec.tokenizer: 'wpm'");
  refuse(with([](auto& t) { t.kv_heads = 3; }), "TestModelSpec.kv_heads: 3 does not divide heads (4)");
  refuse(with([](auto& t) { t.heads = 5, t.kv_heads = 5; }), "TestModelSpec.heads: 5 does not divide dim (256)");
  refuse(with([](auto& t) { t.head_dim = 7; }), "TestModelSpec.head_dim: the head size 7 is odd");
  refuse(with([](auto& t) { t.dim = 0; }), "TestModelSpec.dim: 0 is outside 1..65536");
  refuse(with([](auto& t) { t.layers = -1; }), "TestModelSpec.layers");
  refuse(with([](auto& t) { t.context = 0; }), "TestModelSpec.context");
  refuse(with([](auto& t) { t.rope_base = 0; }), "TestModelSpec.rope_base");
  refuse(with([](auto& t) { t.rms_eps = NAN; }), "TestModelSpec.rms_eps");
  refuse(with([](auto& t) { t.vocab = 300; }), "TestModelSpec.vocab: 300 is too small for the llama tokenizer");
  refuse(with([](auto& t) { t.vocab = 270, t.tokenizer = "gpt2"; }),
         "TestModelSpec.vocab: 270 is too small for the gpt2 tokenizer: it needs at least 275");
  refuse(with([](auto& t) { t.weights = "q4_k", t.ffn = 384; }), "TestModelSpec.ffn: 384 values make the rows of blk.0.ffn_down.weight");
  refuse(with([](auto& t) { t.weights = "q8_0", t.dim = 48, t.heads = 2, t.kv_heads = 1; }), "TestModelSpec.dim: 48 values make the rows");
  refuse(with([](auto& t) { t.weights = "q6_k", t.head_dim = 40; }), "TestModelSpec.head_dim: 160 values make the rows of blk.0.attn_output");
  refuse(with([](auto& t) { t.dim = 65536, t.vocab = 65536; }), "test models are limited to 2^31");
  // Block sizes that fit are fine, as are wide heads on llama (with key_length written).
  TestModelSpec ok = with([](auto& t) { t.weights = "q4_0", t.dim = 96, t.heads = 3, t.kv_heads = 1, t.ffn = 160, t.head_dim = 64; });
  GgufFile f = GgufFile::parse(llm::test_model_bytes(ok));
  CHECK(get_int(f, "llama.attention.key_length") == 64);
  CHECK(get_int(f, "llama.rope.dimension_count") == 64);
  CHECK(f.tensor("blk.0.attn_q.weight")->dims == std::vector<int64_t>{96, 192});
}

// A byte-level BPE vocabulary: the 256 byte characters first, each merge joining two tokens that
// exist before it (bytes, or results of earlier merges) into a token, every other token made by a
// merge, the specials last and control-typed.
void check_bpe(const TestModelSpec& s, const std::vector<std::string>& specials, const std::string& bos, const std::string& eos, bool add_bos) {
  GgufFile f = GgufFile::parse(llm::test_model_bytes(s));
  std::vector<std::string> tokens = strings(f, "tokenizer.ggml.tokens");
  std::vector<std::string> merges = strings(f, "tokenizer.ggml.merges");
  const auto& types = f.find("tokenizer.ggml.token_type")->as_array();
  REQUIRE(tokens.size() == static_cast<size_t>(s.vocab));
  REQUIRE(types.size() == tokens.size());
  CHECK(f.find("tokenizer.ggml.scores") == nullptr);
  std::set<std::string> unique(tokens.begin(), tokens.end());
  CHECK(unique.size() == tokens.size());
  // GPT-2's byte characters, derived here independently: printable bytes stand for themselves.
  std::set<std::string> bytes;
  int next = 256;
  for (int b = 0; b < 256; ++b) {
    bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
    int cp = printable ? b : next++;
    std::string u =
        cp < 0x80 ? std::string(1, static_cast<char>(cp)) : std::string{static_cast<char>(0xc0 | (cp >> 6)), static_cast<char>(0x80 | (cp & 0x3f))};
    bytes.insert(u);
  }
  CHECK(std::set<std::string>(tokens.begin(), tokens.begin() + 256) == bytes);
  CHECK(tokens[0] == "!");
  std::set<std::string> have = bytes, made;
  for (size_t r = 0; r < merges.size(); ++r) {
    CAPTURE(merges[r]);
    size_t sp = merges[r].find(' ');
    REQUIRE(sp != std::string::npos);
    REQUIRE(merges[r].find(' ', sp + 1) == std::string::npos);
    std::string a = merges[r].substr(0, sp), b = merges[r].substr(sp + 1);
    CHECK(have.count(a));
    CHECK(have.count(b));
    CHECK(unique.count(a + b));
    have.insert(a + b), made.insert(a + b);
  }
  size_t first_special = tokens.size() - specials.size();
  for (size_t i = 256; i < first_special; ++i) {
    CAPTURE(tokens[i]);
    CHECK(made.count(tokens[i]));
    CHECK(types[i].as_int() == 1);
  }
  for (size_t i = 0; i < specials.size(); ++i) {
    CHECK(tokens[first_special + i] == specials[i]);
    CHECK(types[first_special + i].as_int() == 3);
  }
  CHECK(tokens[static_cast<size_t>(get_int(f, "tokenizer.ggml.bos_token_id"))] == bos);
  CHECK(tokens[static_cast<size_t>(get_int(f, "tokenizer.ggml.eos_token_id"))] == eos);
  CHECK(f.find("tokenizer.ggml.add_bos_token")->as_bool() == add_bos);
  // Whole common words were learned from the text.
  CHECK(unique.count("\xc4\xa0the"));  // "Ġthe"
}

TEST_CASE("testmodel: the byte-level BPE vocabularies are valid BPE") {
  for (int64_t vocab : {275, 512, 1000, 6000}) {
    CAPTURE(vocab);
    TestModelSpec q;
    q.arch = "qwen2", q.vocab = vocab, q.dim = 64, q.heads = 2, q.kv_heads = 1, q.ffn = 64, q.layers = 1;
    check_bpe(q, {"<|endoftext|>", "<|im_start|>", "<|im_end|>"}, "<|endoftext|>", "<|im_end|>", false);
    TestModelSpec l = q;
    l.arch = "llama", l.tokenizer = "gpt2-llama3", l.vocab = vocab + 2;
    check_bpe(l, {"<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"}, "<|begin_of_text|>",
              "<|eot_id|>", true);
  }
  TestModelSpec q3;
  q3.arch = "qwen3";
  GgufFile f = GgufFile::parse(llm::test_model_bytes(q3));
  CHECK(get_int(f, "tokenizer.ggml.padding_token_id") == get_int(f, "tokenizer.ggml.bos_token_id"));
  CHECK(get_str(f, "tokenizer.chat_template").find("<|im_start|>") != std::string::npos);
  TestModelSpec l3;
  l3.tokenizer = "gpt2-llama3";
  GgufFile g = GgufFile::parse(llm::test_model_bytes(l3));
  CHECK(get_str(g, "tokenizer.ggml.pre") == "llama-bpe");
  CHECK(get_str(g, "tokenizer.chat_template").find("<|start_header_id|>") != std::string::npos);
}

TEST_CASE("testmodel: the SentencePiece vocabulary is valid") {
  for (int64_t vocab : {512, 1000, 6000}) {
    CAPTURE(vocab);
    TestModelSpec s;
    s.vocab = vocab, s.dim = 64, s.heads = 2, s.kv_heads = 1, s.ffn = 64, s.layers = 1;
    GgufFile f = GgufFile::parse(llm::test_model_bytes(s));
    std::vector<std::string> tokens = strings(f, "tokenizer.ggml.tokens");
    const auto& types = f.find("tokenizer.ggml.token_type")->as_array();
    const auto& scores = f.find("tokenizer.ggml.scores")->as_array();
    REQUIRE(tokens.size() == static_cast<size_t>(vocab));
    REQUIRE(types.size() == tokens.size());
    REQUIRE(scores.size() == tokens.size());
    CHECK(f.find("tokenizer.ggml.merges") == nullptr);
    CHECK(f.find("tokenizer.ggml.pre") == nullptr);
    std::map<std::string, size_t> id;
    for (size_t i = 0; i < tokens.size(); ++i) id[tokens[i]] = i;
    CHECK(id.size() == tokens.size());
    CHECK(tokens[0] == "<unk>");
    CHECK(tokens[1] == "<s>");
    CHECK(tokens[2] == "</s>");
    CHECK(types[0].as_int() == 2);
    CHECK(types[1].as_int() == 3);
    CHECK(types[2].as_int() == 3);
    char buf[8];
    for (int b = 0; b < 256; ++b) {
      std::snprintf(buf, sizeof buf, "<0x%02X>", b);
      CHECK(tokens[3 + b] == buf);
      CHECK(types[3 + b].as_int() == 6);
    }
    CHECK(get_int(f, "tokenizer.ggml.unknown_token_id") == 0);
    CHECK(get_int(f, "tokenizer.ggml.bos_token_id") == 1);
    CHECK(get_int(f, "tokenizer.ggml.eos_token_id") == 2);
    CHECK(f.find("tokenizer.ggml.add_bos_token")->as_bool());
    CHECK(!f.find("tokenizer.ggml.add_eos_token")->as_bool());
    // Pieces score lower the later they come; each piece longer than one character splits into two
    // pieces that score higher than it (so SentencePiece's merges can build it).
    auto chars = [](const std::string& p) {
      size_t n = 0;
      for (unsigned char c : p) n += (c & 0xc0) != 0x80;
      return n;
    };
    for (size_t i = 259; i < tokens.size(); ++i) {
      CAPTURE(tokens[i]);
      CHECK(types[i].as_int() == 1);
      if (i > 259) CHECK(scores[i].as_float() < scores[i - 1].as_float());
      if (chars(tokens[i]) == 1) continue;
      bool split = false;
      for (size_t k = 1; k < tokens[i].size() && !split; ++k) {
        auto l = id.find(tokens[i].substr(0, k)), r = id.find(tokens[i].substr(k));
        split = l != id.end() && r != id.end() && l->second >= 259 && r->second >= 259;
      }
      CHECK(split);
    }
    CHECK(id.count("\xe2\x96\x81the"));  // "▁the"
    CHECK(id.count("\xe2\x96\x81"));
  }
  TestModelSpec m;
  m.arch = "mistral";
  GgufFile f = GgufFile::parse(llm::test_model_bytes(m));
  CHECK(get_str(f, "general.architecture") == "llama");
  CHECK(get_str(f, "tokenizer.chat_template").find("[INST]") != std::string::npos);
}

TEST_CASE("testmodel: write_test_model writes a file the reader opens") {
  std::string path = "/tmp/ugpu-test-model-" + std::to_string(::getpid()) + ".gguf";
  TestModelSpec s;
  s.arch = "qwen3", s.weights = "q4_k", s.seed = 7;
  llm::write_test_model(s, path);
  {
    GgufFile f = GgufFile::open(path);
    std::vector<uint8_t> bytes = llm::test_model_bytes(s);
    CHECK(f.size() == bytes.size());
    CHECK(f.tensor("blk.1.attn_k_norm.weight")->dims == std::vector<int64_t>{64});
  }
  std::remove(path.c_str());
  s.arch = "qwen4";
  CHECK_THROWS_WITH_AS(llm::write_test_model(s, path), doctest::Contains("TestModelSpec.arch"), Error);
  CHECK(::access(path.c_str(), F_OK) != 0);
  CHECK(!llm::test_model_text().empty());
}

}  // namespace
}  // namespace ugpu::test
