// The GGUF reader (llm/gguf.h) on files written here byte by byte: every value type, tensor infos,
// alignment, and malformed files refused with the offset and the reason.
#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "common/error.h"
#include "llm/gguf.h"

namespace ugpu::test {
namespace {
using llm::GgufFile;
using llm::GgufValue;

// A GGUF writer for the tests.
struct Writer {
  std::vector<uint8_t> b;
  template <class T>
  Writer& put(T v) {
    uint8_t tmp[sizeof(T)];
    std::memcpy(tmp, &v, sizeof(T));
    b.insert(b.end(), tmp, tmp + sizeof(T));
    return *this;
  }
  Writer& str(const std::string& s) {
    put<uint64_t>(s.size());
    b.insert(b.end(), s.begin(), s.end());
    return *this;
  }
  Writer& header(uint32_t version, uint64_t tensors, uint64_t kvs) { return put<uint32_t>(0x46554747u).put(version).put(tensors).put(kvs); }
  Writer& pad(size_t align) {
    while (b.size() % align) b.push_back(0);
    return *this;
  }
};

// A file with one of each metadata type and two tensors (F32 [3, 2] and Q8_0 [64]).
std::vector<uint8_t> sample(uint32_t version = 3, uint64_t alignment = 32) {
  Writer w;
  w.header(version, 2, 15);
  w.str("general.architecture").put<uint32_t>(8).str("llama");
  w.str("general.alignment").put<uint32_t>(4).put<uint32_t>(static_cast<uint32_t>(alignment));
  w.str("u8").put<uint32_t>(0).put<uint8_t>(200);
  w.str("i8").put<uint32_t>(1).put<int8_t>(-5);
  w.str("u16").put<uint32_t>(2).put<uint16_t>(60000);
  w.str("i16").put<uint32_t>(3).put<int16_t>(-30000);
  w.str("i32").put<uint32_t>(5).put<int32_t>(-7);
  w.str("f32").put<uint32_t>(6).put<float>(0.5f);
  w.str("bool").put<uint32_t>(7).put<uint8_t>(1);
  w.str("u64").put<uint32_t>(10).put<uint64_t>(uint64_t{1} << 40);
  w.str("i64").put<uint32_t>(11).put<int64_t>(-(int64_t{1} << 40));
  w.str("f64").put<uint32_t>(12).put<double>(1e-300);
  w.str("tokens").put<uint32_t>(9).put<uint32_t>(8).put<uint64_t>(3).str("<s>").str("a").str("b");
  w.str("nested").put<uint32_t>(9).put<uint32_t>(9).put<uint64_t>(1).put<uint32_t>(4).put<uint64_t>(2).put<uint32_t>(1).put<uint32_t>(2);
  w.str("u32").put<uint32_t>(4).put<uint32_t>(4000000000u);
  w.str("w.f32").put<uint32_t>(2).put<uint64_t>(2).put<uint64_t>(3).put<uint32_t>(0).put<uint64_t>(0);
  w.str("w.q8").put<uint32_t>(1).put<uint64_t>(64).put<uint32_t>(8).put<uint64_t>(alignment > 24 ? alignment : 32);
  w.pad(alignment);
  for (int i = 0; i < 6; ++i) w.put<float>(static_cast<float>(i) + 0.25f);
  w.pad(alignment);
  size_t q8_start = w.b.size();
  w.b.resize(q8_start + 68, 7);  // two Q8_0 blocks
  return w.b;
}

TEST_CASE("gguf: metadata of every type, tensor infos and data, versions 2 and 3") {
  for (uint32_t version : {2u, 3u}) {
    std::vector<uint8_t> bytes = sample(version);
    GgufFile f = GgufFile::parse(bytes);
    CHECK(f.version == version);
    CHECK(f.alignment == 32);
    CHECK(f.metadata.size() == 15);
    CHECK(f.find("general.architecture")->as_string() == "llama");
    CHECK(f.find("u8")->as_int() == 200);
    CHECK(f.find("i8")->as_int() == -5);
    CHECK(f.find("u16")->as_int() == 60000);
    CHECK(f.find("i16")->as_int() == -30000);
    CHECK(f.find("u32")->as_int() == 4000000000ll);
    CHECK(f.find("i32")->as_int() == -7);
    CHECK(f.find("f32")->as_float() == 0.5);
    CHECK(f.find("bool")->as_bool());
    CHECK(f.find("u64")->as_int() == int64_t{1} << 40);
    CHECK(f.find("i64")->as_int() == -(int64_t{1} << 40));
    CHECK(f.find("f64")->as_float() == 1e-300);
    CHECK(f.find("tokens")->as_array().size() == 3);
    CHECK(f.find("tokens")->as_array()[2].as_string() == "b");
    CHECK(f.find("nested")->as_array()[0].as_array()[1].as_int() == 2);
    CHECK(f.find("tokens")->to_string() == "[string x 3: \"<s>\", \"a\", \"b\"]");
    CHECK(f.find("missing") == nullptr);
    CHECK_THROWS_WITH(f.find("u8")->as_string(), "GGUF metadata: a u8 value where a string was expected");
    REQUIRE(f.tensors.size() == 2);
    const llm::GgufTensor* w = f.tensor("w.f32");
    REQUIRE(w);
    CHECK(w->dims == std::vector<int64_t>{2, 3});
    CHECK(w->bytes == 24);
    CHECK(w->offset == f.data_offset);
    float v[6];
    std::memcpy(v, f.data(*w).data(), 24);
    CHECK(v[5] == 5.25f);
    const llm::GgufTensor* q = f.tensor("w.q8");
    REQUIRE(q);
    CHECK(q->type == llm::GgmlType::Q8_0);
    CHECK(q->bytes == 68);
    CHECK(f.data(*q)[67] == 7);
  }
}

TEST_CASE("gguf: a file on disk is mapped, and errors name the path") {
  std::vector<uint8_t> bytes = sample();
  std::string path = "/tmp/ugpu-test-" + std::to_string(::getpid()) + ".gguf";
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  GgufFile f = GgufFile::open(path);
  CHECK(f.size() == bytes.size());
  CHECK(f.find("general.architecture")->as_string() == "llama");
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), 100);  // truncated
  CHECK_THROWS_WITH(GgufFile::open(path), doctest::Contains((path + ": GGUF: at byte").c_str()));
  std::remove(path.c_str());
  CHECK_THROWS_WITH(GgufFile::open(path), doctest::Contains(("cannot open " + path).c_str()));
}

TEST_CASE("gguf: malformed files are refused with the offset and the reason") {
  auto refuse = [](std::vector<uint8_t> b, const std::string& msg) { CHECK_THROWS_WITH(GgufFile::parse(b), doctest::Contains(msg.c_str())); };
  std::vector<uint8_t> good = sample();
  refuse({'G', 'G', 'M', 'L', 0, 0, 0, 0}, "not a GGUF file");
  refuse(Writer().header(1, 0, 0).b, "version 1");
  refuse(Writer().header(4, 0, 0).b, "version 4 is not one this reader knows");
  refuse(Writer().header(3, 0, uint64_t{1} << 60).b, "the metadata count 1152921504606846976 cannot fit");
  refuse(Writer().header(3, 0, 1).str("k").put<uint32_t>(13).put<uint8_t>(0).b, "unknown metadata value type 13");
  refuse(Writer().header(3, 0, 1).str("k").put<uint32_t>(7).put<uint8_t>(2).b, "a bool is 2");
  refuse(Writer().header(3, 0, 1).put<uint64_t>(1000).put<uint64_t>(0).put<uint64_t>(0).b, "past the end of the file");
  Writer deep;
  deep.header(3, 0, 1).str("k").put<uint32_t>(9);
  for (int i = 0; i < 6; ++i) deep.put<uint32_t>(9).put<uint64_t>(1);
  refuse(deep.b, "arrays nested more than 4 deep");
  refuse(Writer().header(3, 0, 1).str("general.alignment").put<uint32_t>(4).put<uint32_t>(24).b, "not a power of two");
  refuse(Writer().header(3, 1, 0).str("t").put<uint32_t>(5).put<uint64_t>(0).put<uint64_t>(0).b, "has 5 dimensions");
  refuse(Writer().header(3, 1, 0).str("t").put<uint32_t>(1).put<uint64_t>(0).b, "has a dimension of 0");
  refuse(Writer().header(3, 1, 0).str("t").put<uint32_t>(2).put<uint64_t>(uint64_t{1} << 30).put<uint64_t>(uint64_t{1} << 30).b, "more than 2^48");
  refuse(Writer().header(3, 1, 0).str("t").put<uint32_t>(1).put<uint64_t>(4).put<uint32_t>(99).put<uint64_t>(0).b, "ggml type 99");
  refuse(Writer().header(3, 1, 0).str("t").put<uint32_t>(1).put<uint64_t>(40).put<uint32_t>(8).put<uint64_t>(0).b,
         "not a multiple of Q8_0's block of 32");
  refuse(Writer().header(3, 1, 0).str("t").put<uint32_t>(1).put<uint64_t>(4).put<uint32_t>(0).put<uint64_t>(3).b, "not a multiple of the alignment");
  refuse(Writer().header(3, 1, 0).str("t").put<uint32_t>(1).put<uint64_t>(1024).put<uint32_t>(0).put<uint64_t>(0).b, "runs past the end");
  // Every prefix of a good file is refused cleanly (never read past the end).
  for (size_t n = 0; n < good.size(); n += 7) CHECK_THROWS_AS(GgufFile::parse(std::span<const uint8_t>(good.data(), n)), Error);
}

TEST_CASE("gguf: the ggml type table") {
  CHECK(std::string(llm::ggml_type_info(12)->name) == "Q4_K");
  CHECK(llm::ggml_type_info(12)->bytes == 144);
  CHECK(llm::ggml_type_info(14)->bytes == 210);
  CHECK(llm::ggml_type_info(30)->type == llm::GgmlType::BF16);
  CHECK(llm::ggml_type_info(5) == nullptr);  // Q4_2 was removed from ggml
}

}  // namespace
}  // namespace ugpu::test
