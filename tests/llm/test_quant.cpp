// The host reference of ggml's weight formats (llm/quant.h): half/bfloat16 conversions, blocks built
// by hand from the layouts (so the decoder is checked against the format, not against itself), and
// quantize -> dequantize staying within each format's step.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "common/error.h"
#include "llm/quant.h"

namespace ugpu::test {
namespace {
using llm::GgmlType;

std::vector<float> decode(GgmlType t, const std::vector<uint8_t>& b, size_t n) {
  std::vector<float> y(n);
  llm::dequantize(t, b, y);
  return y;
}
void put16(std::vector<uint8_t>& b, size_t at, uint16_t v) { b[at] = static_cast<uint8_t>(v), b[at + 1] = static_cast<uint8_t>(v >> 8); }

TEST_CASE("quant: half and bfloat16 conversions") {
  CHECK(llm::float_to_half(1.0f) == 0x3c00);
  CHECK(llm::float_to_half(-2.0f) == 0xc000);
  CHECK(llm::float_to_half(65504.0f) == 0x7bff);
  CHECK(llm::float_to_half(65520.0f) == 0x7c00);                      // rounds past the largest half: infinity
  CHECK(llm::float_to_half(std::ldexp(1.0f, -24)) == 0x0001);         // the smallest subnormal
  CHECK(llm::float_to_half(std::ldexp(1.0f, -26)) == 0x0000);         // below half of it
  CHECK(llm::float_to_half(1.0f + std::ldexp(1.0f, -11)) == 0x3c00);  // a tie rounds to even
  CHECK(llm::float_to_half(1.0f + 3 * std::ldexp(1.0f, -11)) == 0x3c02);
  CHECK(std::isnan(llm::half_to_float(llm::float_to_half(NAN))));
  CHECK(llm::half_to_float(0x3555) == 0.333251953125f);
  CHECK(llm::half_to_float(0x0200) == std::ldexp(1.0f, -15));
  for (uint32_t h = 0; h < 0x10000; ++h) {  // every half survives the trip through float
    float f = llm::half_to_float(static_cast<uint16_t>(h));
    if (std::isnan(f)) continue;
    REQUIRE(llm::float_to_half(f) == h);
  }
  CHECK(llm::float_to_bf16(1.0f) == 0x3f80);
  CHECK(llm::bf16_to_float(0xc040) == -3.0f);
  CHECK(llm::float_to_bf16(std::bit_cast<float>(0x3f808000u)) == 0x3f80);  // tie to even
  CHECK(llm::float_to_bf16(std::bit_cast<float>(0x3f818000u)) == 0x3f82);
}

TEST_CASE("quant: 32-value blocks decode as their layouts say") {
  SUBCASE("Q8_0: d, then 32 signed bytes") {
    std::vector<uint8_t> b(34);
    put16(b, 0, 0x3800);  // 0.5
    b[2] = 0x80, b[3] = 0x7f, b[33] = 0xff;
    std::vector<float> y = decode(GgmlType::Q8_0, b, 32);
    CHECK(y[0] == -64.0f);
    CHECK(y[1] == 63.5f);
    CHECK(y[31] == -0.5f);
    CHECK(y[5] == 0.0f);
  }
  SUBCASE("Q4_0: low nibbles are values 0-15, high nibbles 16-31, minus 8") {
    std::vector<uint8_t> b(18);
    put16(b, 0, 0x4000);  // 2
    b[2] = 0xf0, b[17] = 0x19;
    std::vector<float> y = decode(GgmlType::Q4_0, b, 32);
    CHECK(y[0] == -16.0f);   // (0 - 8) * 2
    CHECK(y[16] == 14.0f);   // (15 - 8) * 2
    CHECK(y[15] == 2.0f);    // (9 - 8) * 2
    CHECK(y[31] == -14.0f);  // (1 - 8) * 2
  }
  SUBCASE("Q4_1: nibble * d + m") {
    std::vector<uint8_t> b(20);
    put16(b, 0, 0x3c00), put16(b, 2, 0xbc00);  // d 1, m -1
    b[4] = 0x3a;
    std::vector<float> y = decode(GgmlType::Q4_1, b, 32);
    CHECK(y[0] == 9.0f);
    CHECK(y[16] == 2.0f);
    CHECK(y[1] == -1.0f);
  }
  SUBCASE("Q5_0 and Q5_1: bit j of the u32 is bit 4 of value j") {
    std::vector<uint8_t> b(22);
    put16(b, 0, 0x3c00);
    b[2] = 0x01;               // bit 0: value 0
    b[4] = 0x02;               // bit 17: value 17
    b[6] = 0x21, b[7] = 0x0f;  // value 0 low nibble 1, value 16 nibble 2; value 1 nibble 15
    std::vector<float> y = decode(GgmlType::Q5_0, b, 32);
    CHECK(y[0] == 1.0f);     // 16 + 1 - 16
    CHECK(y[16] == -14.0f);  // 2 - 16
    CHECK(y[1] == -1.0f);    // 15 - 16
    CHECK(y[17] == 0.0f);    // 16 + 0 - 16
    std::vector<uint8_t> c(24);
    put16(c, 0, 0x3800), put16(c, 2, 0x3c00);  // d 0.5, m 1
    c[7] = 0x80;                               // bit 31: value 31
    c[23] = 0x30;                              // value 31 nibble 3
    std::vector<float> z = decode(GgmlType::Q5_1, c, 32);
    CHECK(z[31] == 0.5f * 19 + 1);
    CHECK(z[0] == 1.0f);
  }
}

TEST_CASE("quant: K-quant blocks decode as their layouts say") {
  SUBCASE("Q4_K: scales and mins of sub-blocks 0-3 and 4-7, nibbles by chunk") {
    std::vector<uint8_t> b(144);
    put16(b, 0, 0x3c00), put16(b, 2, 0x3800);  // d 1, dmin 0.5
    b[4 + 1] = 5;                              // sub-block 1: scale 5
    b[4 + 4 + 1] = 2;                          // sub-block 1: min 2
    // sub-block 6: scale 0b10_0011 = 35 (low nibble in byte 8+2, top bits in byte 2), min 0b01_1000 = 24
    b[4 + 8 + 2] = 0x83;    // scale low 3, min low 8
    b[4 + 2] |= 0x80;       // scale top bits 10
    b[4 + 6] |= 0x40;       // min top bits 01
    b[16 + 0] = 0x70;       // chunk 0 byte 0: value 0 nibble 0, value 32 (sub-block 1) nibble 7
    b[16 + 96 + 3] = 0x09;  // chunk 3 byte 3: value 195 (sub-block 6) nibble 9
    std::vector<float> y = decode(GgmlType::Q4_K, b, 256);
    CHECK(y[32] == 1.0f * 5 * 7 - 0.5f * 2);
    CHECK(y[33] == -1.0f);
    CHECK(y[195] == 1.0f * 35 * 9 - 0.5f * 24);
    CHECK(y[0] == 0.0f);
  }
  SUBCASE("Q5_K: bit 4 of value 64c + 32h + l is bit 2c + h of high byte l") {
    std::vector<uint8_t> b(176);
    put16(b, 0, 0x3c00), put16(b, 2, 0x0000);
    for (int s = 0; s < 4; ++s) b[4 + s] = 1;      // scales 1 for sub-blocks 0-3
    for (int s = 0; s < 4; ++s) b[4 + 8 + s] = 1;  // scales 1 for sub-blocks 4-7
    b[16 + 4] = 0x08;                              // high byte 4, bit 3: value 64*1 + 32 + 4 = 100
    b[48 + 32 + 4] = 0x20;                         // chunk 1 byte 4: value 68 nibble 0, value 100 nibble 2
    std::vector<float> y = decode(GgmlType::Q5_K, b, 256);
    CHECK(y[100] == 18.0f);
    CHECK(y[68] == 0.0f);
  }
  SUBCASE("Q6_K: halves of 128, four groups of 32, scales per 16") {
    std::vector<uint8_t> b(210);
    put16(b, 208, 0x3c00);  // d 1
    for (int s = 0; s < 16; ++s) b[192 + s] = static_cast<uint8_t>(s + 1);
    b[192 + 13] = static_cast<uint8_t>(-3);
    // value 128 + 64 + 20 (half 1, group 2, l 20): low nibble = high nibble of ql[64 + 20], top bits qh[32 + 20] bits 4-5,
    // scale index 8 + 4 + 1 = 13
    b[64 + 20] = 0xa0;
    b[128 + 32 + 20] = 0x20;  // top bits 10
    std::vector<float> y = decode(GgmlType::Q6_K, b, 256);
    CHECK(y[212] == -3.0f * ((0xa | (2 << 4)) - 32));
    CHECK(y[0] == 1.0f * -32);  // all-zero q is -32, scale 1
    CHECK(y[17] == 2.0f * -32);
  }
}

TEST_CASE("quant: quantize then dequantize stays within a step of each format") {
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0, 1);
  std::vector<float> x(1024);
  for (float& v : x) v = nd(rng);
  x[5] = 0, x[300] = 4.5f, x[301] = -4.5f;  // extremes inside blocks
  struct Case {
    GgmlType t;
    double steps;  // the largest error allowed, in units of (2 * largest magnitude in the block / levels)
    int levels;
    int block;
  };
  for (Case c : {Case{GgmlType::F16, 0, 0, 1}, Case{GgmlType::BF16, 0, 0, 1}, Case{GgmlType::Q8_0, 0.6, 254, 32}, Case{GgmlType::Q4_0, 1.1, 15, 32},
                 Case{GgmlType::Q4_1, 0.6, 15, 32}, Case{GgmlType::Q5_0, 1.1, 31, 32}, Case{GgmlType::Q5_1, 0.6, 31, 32},
                 Case{GgmlType::Q4_K, 1.2, 15, 32}, Case{GgmlType::Q5_K, 1.2, 31, 32}, Case{GgmlType::Q6_K, 1.2, 63, 16}}) {
    CAPTURE(static_cast<int>(c.t));
    std::vector<uint8_t> q = llm::quantize(c.t, x);
    CHECK(q.size() == llm::quant_bytes(c.t, 1024));
    std::vector<float> y(x.size());
    llm::dequantize(c.t, q, y);
    for (size_t i = 0; i < x.size(); ++i) {
      double tol;
      if (c.levels == 0) tol = std::fabs(x[i]) * (c.t == GgmlType::F16 ? 1e-3 : 8e-3);
      else {
        size_t b0 = i / c.block * c.block;
        float amax = 0;
        for (int j = 0; j < c.block; ++j) amax = std::max(amax, std::fabs(x[b0 + j]));
        tol = c.steps * 2 * amax / c.levels * 1.06 + 1e-6;  // 6%: the K-quants' 6-bit scales
      }
      REQUIRE(std::fabs(y[i] - x[i]) <= tol);
    }
  }
}

TEST_CASE("quant: sizes that do not fill blocks and unsupported types are errors") {
  std::vector<float> x(48);
  CHECK_THROWS_WITH_AS(llm::quantize(GgmlType::Q8_0, x), doctest::Contains("48 values do not fill whole Q8_0 blocks of 32"), Error);
  CHECK_THROWS_WITH_AS(llm::quant_bytes(GgmlType::Q2_K, 256), doctest::Contains("Q2_K is not supported"), Error);
  std::vector<uint8_t> b(33);
  std::vector<float> y(32);
  CHECK_THROWS_WITH_AS(llm::dequantize(GgmlType::Q8_0, b, y), doctest::Contains("need 34 bytes, not 33"), Error);
  CHECK(llm::quant_bytes(GgmlType::Q6_K, 512) == 420);
  CHECK(llm::quant_supported(GgmlType::Q5_K));
  CHECK(!llm::quant_supported(GgmlType::Q8_K));
}

}  // namespace
}  // namespace ugpu::test
