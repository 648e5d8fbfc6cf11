// Host decoding and encoding of ggml's weight formats (llm/quant.h). The decoders follow the block
// layouts element by element, independently of the tensor expressions llm/weights.cpp decodes with on
// the device, so each checks the other.
#include "llm/quant.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

#include "common/error.h"

namespace ugpu::llm {

float half_to_float(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  uint32_t bits;
  if (exp == 0x1f) bits = sign | 0x7f800000u | (man << 13);  // inf, nan
  else if (exp != 0) bits = sign | ((exp + 112) << 23) | (man << 13);
  else if (man == 0) bits = sign;
  else {  // subnormal: normalize
    int e = -1;
    do ++e, man <<= 1;
    while (!(man & 0x400));
    bits = sign | (static_cast<uint32_t>(112 - e) << 23) | ((man & 0x3ff) << 13);
  }
  return std::bit_cast<float>(bits);
}

uint16_t float_to_half(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000);
  uint32_t ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u) return sign | 0x7c00 | (ax > 0x7f800000u ? 0x200 : 0);  // inf, nan
  if (ax >= 0x477ff000u) return sign | 0x7c00;                                   // rounds past 65504
  if (ax < 0x38800000u) {                                                        // a half subnormal (or 0)
    float a = std::bit_cast<float>(ax);
    return sign | static_cast<uint16_t>(std::nearbyint(a * 16777216.0f));  // units of 2^-24, ties to even
  }
  uint32_t r = ax + 0xfff + ((ax >> 13) & 1);  // round to nearest even at bit 13
  return sign | static_cast<uint16_t>((r - 0x38000000u) >> 13);
}

float bf16_to_float(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }

uint16_t float_to_bf16(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40);  // quiet nan
  return static_cast<uint16_t>((x + 0x7fff + ((x >> 16) & 1)) >> 16);
}

namespace {

uint16_t u16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
float f16(const uint8_t* p) { return half_to_float(u16(p)); }
void put16(uint8_t* p, uint16_t v) { p[0] = static_cast<uint8_t>(v), p[1] = static_cast<uint8_t>(v >> 8); }
int nearest(float v) { return static_cast<int>(std::lrintf(v)); }

// The 6-bit (scale, min) pair of sub-block j in a Q4_K/Q5_K block's 12 scale bytes: pairs 0-3 are the
// low six bits of bytes 0-3 and 4-7; pairs 4-7 keep their low four bits in bytes 8-11 (scale low
// nibble, min high nibble) and their top two bits in the top bits of bytes 0-3 (scale) and 4-7 (min).
void scale_min_k4(int j, const uint8_t* s, int& sc, int& m) {
  if (j < 4) {
    sc = s[j] & 63, m = s[j + 4] & 63;
  } else {
    sc = (s[j + 4] & 0xf) | ((s[j - 4] >> 6) << 4);
    m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
  }
}

void pack_scale_min_k4(const int* sc, const int* m, uint8_t* s) {
  for (int j = 0; j < 4; ++j) {
    s[j] = static_cast<uint8_t>((sc[j] & 63) | ((sc[j + 4] >> 4) << 6));
    s[j + 4] = static_cast<uint8_t>((m[j] & 63) | ((m[j + 4] >> 4) << 6));
    s[j + 8] = static_cast<uint8_t>((sc[j + 4] & 0xf) | ((m[j + 4] & 0xf) << 4));
  }
}

// ---- decoding one block --------------------------------------------------------------------------

void dec_q4_0(const uint8_t* b, float* y) {
  float d = f16(b);
  for (int j = 0; j < 16; ++j) y[j] = static_cast<float>((b[2 + j] & 0xf) - 8) * d, y[j + 16] = static_cast<float>((b[2 + j] >> 4) - 8) * d;
}
void dec_q4_1(const uint8_t* b, float* y) {
  float d = f16(b), m = f16(b + 2);
  for (int j = 0; j < 16; ++j) y[j] = static_cast<float>(b[4 + j] & 0xf) * d + m, y[j + 16] = static_cast<float>(b[4 + j] >> 4) * d + m;
}
// Q5: bit j of the little-endian u32 is bit 4 of value j (values 0-15 from the low nibbles, 16-31 from the high).
void dec_q5(const uint8_t* b, float* y, bool with_min) {
  float d = f16(b), m = with_min ? f16(b + 2) : 0;
  const uint8_t* hp = b + (with_min ? 4 : 2);
  uint32_t h = hp[0] | (hp[1] << 8) | (hp[2] << 16) | (static_cast<uint32_t>(hp[3]) << 24);
  const uint8_t* q = hp + 4;
  int off = with_min ? 0 : -16;
  for (int j = 0; j < 16; ++j) {
    int lo = (q[j] & 0xf) | (((h >> j) & 1) << 4), hi = (q[j] >> 4) | (((h >> (j + 16)) & 1) << 4);
    y[j] = static_cast<float>(lo + off) * d + m, y[j + 16] = static_cast<float>(hi + off) * d + m;
  }
}
void dec_q5_0(const uint8_t* b, float* y) { dec_q5(b, y, false); }
void dec_q5_1(const uint8_t* b, float* y) { dec_q5(b, y, true); }
void dec_q8_0(const uint8_t* b, float* y) {
  float d = f16(b);
  for (int j = 0; j < 32; ++j) y[j] = static_cast<float>(static_cast<int8_t>(b[2 + j])) * d;
}
// Q4_K / Q5_K: four chunks of 64 values; chunk c reads 32 bytes of nibbles, its first 32 values the low
// nibbles (sub-block 2c) and the next 32 the high nibbles (sub-block 2c+1). Q5_K's bit 4 of value
// 64c + l (+32) is bit 2c (2c+1) of high-bit byte l.
void dec_k(const uint8_t* b, float* y, bool five) {
  float d = f16(b), dmin = f16(b + 2);
  const uint8_t* s = b + 4;
  const uint8_t* qh = b + 16;
  const uint8_t* q = b + (five ? 48 : 16);
  for (int c = 0; c < 4; ++c) {
    int sc0, m0, sc1, m1;
    scale_min_k4(2 * c, s, sc0, m0);
    scale_min_k4(2 * c + 1, s, sc1, m1);
    for (int l = 0; l < 32; ++l) {
      int lo = q[32 * c + l] & 0xf, hi = q[32 * c + l] >> 4;
      if (five) lo |= ((qh[l] >> (2 * c)) & 1) << 4, hi |= ((qh[l] >> (2 * c + 1)) & 1) << 4;
      y[64 * c + l] = d * static_cast<float>(sc0) * static_cast<float>(lo) - dmin * static_cast<float>(m0);
      y[64 * c + 32 + l] = d * static_cast<float>(sc1) * static_cast<float>(hi) - dmin * static_cast<float>(m1);
    }
  }
}
void dec_q4_k(const uint8_t* b, float* y) { dec_k(b, y, false); }
void dec_q5_k(const uint8_t* b, float* y) { dec_k(b, y, true); }
// Q6_K: two halves of 128 values. In half n, value 32g + l (g = 0..3, l < 32) takes its low nibble
// from ql[64n + l + 32 (g & 1)] (high nibble when g >= 2), its top two bits from qh[32n + l] bits
// 2g..2g+1, and its scale from scales[8n + 2g + l / 16].
void dec_q6_k(const uint8_t* b, float* y) {
  const uint8_t* ql = b;
  const uint8_t* qh = b + 128;
  const int8_t* sc = reinterpret_cast<const int8_t*>(b + 192);
  float d = f16(b + 208);
  for (int n = 0; n < 2; ++n)
    for (int g = 0; g < 4; ++g)
      for (int l = 0; l < 32; ++l) {
        int byte = ql[64 * n + l + 32 * (g & 1)];
        int lo = g >= 2 ? byte >> 4 : byte & 0xf;
        int q = (lo | (((qh[32 * n + l] >> (2 * g)) & 3) << 4)) - 32;
        y[128 * n + 32 * g + l] = d * static_cast<float>(sc[8 * n + 2 * g + l / 16]) * static_cast<float>(q);
      }
}
void dec_f32(const uint8_t* b, float* y) { std::memcpy(y, b, 4); }
void dec_f16(const uint8_t* b, float* y) { *y = f16(b); }
void dec_bf16(const uint8_t* b, float* y) { *y = bf16_to_float(u16(b)); }

// ---- encoding one block ----------------------------------------------------------------------------

// The value of largest magnitude (with its sign) and the extremes.
float signed_max(const float* x, int n) {
  float m = 0;
  for (int i = 0; i < n; ++i)
    if (std::fabs(x[i]) > std::fabs(m)) m = x[i];
  return m;
}

void enc_q4_0(const float* x, uint8_t* b) {
  float d = signed_max(x, 32) / -8, id = d != 0 ? 1 / d : 0;
  put16(b, float_to_half(d));
  for (int j = 0; j < 16; ++j) {
    int lo = std::clamp(nearest(x[j] * id) + 8, 0, 15), hi = std::clamp(nearest(x[j + 16] * id) + 8, 0, 15);
    b[2 + j] = static_cast<uint8_t>(lo | (hi << 4));
  }
}
void enc_q4_1(const float* x, uint8_t* b) {
  float lo = *std::min_element(x, x + 32), hi = *std::max_element(x, x + 32);
  float d = (hi - lo) / 15, id = d != 0 ? 1 / d : 0;
  put16(b, float_to_half(d)), put16(b + 2, float_to_half(lo));
  for (int j = 0; j < 16; ++j) {
    int a = std::clamp(nearest((x[j] - lo) * id), 0, 15), c = std::clamp(nearest((x[j + 16] - lo) * id), 0, 15);
    b[4 + j] = static_cast<uint8_t>(a | (c << 4));
  }
}
void enc_q5(const float* x, uint8_t* b, bool with_min) {
  float lo = 0, d;
  if (with_min) lo = *std::min_element(x, x + 32), d = (*std::max_element(x, x + 32) - lo) / 31;
  else d = signed_max(x, 32) / -16;
  float id = d != 0 ? 1 / d : 0;
  put16(b, float_to_half(d));
  if (with_min) put16(b + 2, float_to_half(lo));
  uint8_t* hp = b + (with_min ? 4 : 2);
  uint8_t* q = hp + 4;
  uint32_t h = 0;
  int off = with_min ? 0 : 16;
  for (int j = 0; j < 16; ++j) {
    int a = std::clamp(nearest((x[j] - lo) * id) + off, 0, 31), c = std::clamp(nearest((x[j + 16] - lo) * id) + off, 0, 31);
    q[j] = static_cast<uint8_t>((a & 0xf) | ((c & 0xf) << 4));
    h |= static_cast<uint32_t>(a >> 4) << j | static_cast<uint32_t>(c >> 4) << (j + 16);
  }
  for (int i = 0; i < 4; ++i) hp[i] = static_cast<uint8_t>(h >> (8 * i));
}
void enc_q5_0(const float* x, uint8_t* b) { enc_q5(x, b, false); }
void enc_q5_1(const float* x, uint8_t* b) { enc_q5(x, b, true); }
void enc_q8_0(const float* x, uint8_t* b) {
  float amax = std::fabs(signed_max(x, 32)), d = amax / 127, id = d != 0 ? 1 / d : 0;
  put16(b, float_to_half(d));
  for (int j = 0; j < 32; ++j) b[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(std::clamp(nearest(x[j] * id), -127, 127)));
}
void enc_k(const float* x, uint8_t* b, bool five) {
  const int top = five ? 31 : 15;
  float scale[8], mn[8];  // per sub-block of 32: x ~ scale * q - mn, mn >= 0
  for (int s = 0; s < 8; ++s) {
    float lo = std::min(0.0f, *std::min_element(x + 32 * s, x + 32 * s + 32)), hi = *std::max_element(x + 32 * s, x + 32 * s + 32);
    scale[s] = (hi - lo) / static_cast<float>(top), mn[s] = -lo;
  }
  float max_scale = *std::max_element(scale, scale + 8), max_min = *std::max_element(mn, mn + 8);
  float d = max_scale / 63, dmin = max_min / 63;
  put16(b, float_to_half(d)), put16(b + 2, float_to_half(dmin));
  d = half_to_float(float_to_half(d)), dmin = half_to_float(float_to_half(dmin));
  int sc[8], m[8];
  for (int s = 0; s < 8; ++s) {
    sc[s] = d != 0 ? std::clamp(nearest(scale[s] / d), 0, 63) : 0;
    m[s] = dmin != 0 ? std::clamp(nearest(mn[s] / dmin), 0, 63) : 0;
  }
  pack_scale_min_k4(sc, m, b + 4);
  uint8_t* qh = b + 16;
  uint8_t* q = b + (five ? 48 : 16);
  if (five) std::memset(qh, 0, 32);
  for (int c = 0; c < 4; ++c)
    for (int l = 0; l < 32; ++l) {
      int v[2];
      for (int h = 0; h < 2; ++h) {
        int s = 2 * c + h;
        float step = d * static_cast<float>(sc[s]);
        v[h] = step != 0 ? std::clamp(nearest((x[32 * s + l] + dmin * static_cast<float>(m[s])) / step), 0, top) : 0;
      }
      q[32 * c + l] = static_cast<uint8_t>((v[0] & 0xf) | ((v[1] & 0xf) << 4));
      if (five) qh[l] |= static_cast<uint8_t>(((v[0] >> 4) << (2 * c)) | ((v[1] >> 4) << (2 * c + 1)));
    }
}
void enc_q4_k(const float* x, uint8_t* b) { enc_k(x, b, false); }
void enc_q5_k(const float* x, uint8_t* b) { enc_k(x, b, true); }
void enc_q6_k(const float* x, uint8_t* b) {
  float scale[16];
  for (int s = 0; s < 16; ++s) scale[s] = signed_max(x + 16 * s, 16) / -32;
  float d = std::fabs(signed_max(scale, 16)) / 127;
  put16(b + 208, float_to_half(d));
  d = half_to_float(float_to_half(d));
  int8_t* sc = reinterpret_cast<int8_t*>(b + 192);
  for (int s = 0; s < 16; ++s) sc[s] = static_cast<int8_t>(d != 0 ? std::clamp(nearest(scale[s] / d), -127, 127) : 0);
  std::memset(b, 0, 192);
  for (int n = 0; n < 2; ++n)
    for (int g = 0; g < 4; ++g)
      for (int l = 0; l < 32; ++l) {
        int i = 128 * n + 32 * g + l;
        float step = d * static_cast<float>(sc[8 * n + 2 * g + l / 16]);
        int q = step != 0 ? std::clamp(nearest(x[i] / step) + 32, 0, 63) : 32;
        b[64 * n + l + 32 * (g & 1)] |= static_cast<uint8_t>(g >= 2 ? (q & 0xf) << 4 : q & 0xf);
        b[128 + 32 * n + l] |= static_cast<uint8_t>((q >> 4) << (2 * g));
      }
}
void enc_f32(const float* x, uint8_t* b) { std::memcpy(b, x, 4); }
void enc_f16(const float* x, uint8_t* b) { put16(b, float_to_half(*x)); }
void enc_bf16(const float* x, uint8_t* b) { put16(b, float_to_bf16(*x)); }

struct Codec {
  GgmlType type;
  void (*decode)(const uint8_t*, float*);
  void (*encode)(const float*, uint8_t*);
};
constexpr Codec kCodecs[] = {
    {GgmlType::F32, dec_f32, enc_f32},    {GgmlType::F16, dec_f16, enc_f16},    {GgmlType::BF16, dec_bf16, enc_bf16},
    {GgmlType::Q4_0, dec_q4_0, enc_q4_0}, {GgmlType::Q4_1, dec_q4_1, enc_q4_1}, {GgmlType::Q5_0, dec_q5_0, enc_q5_0},
    {GgmlType::Q5_1, dec_q5_1, enc_q5_1}, {GgmlType::Q8_0, dec_q8_0, enc_q8_0}, {GgmlType::Q4_K, dec_q4_k, enc_q4_k},
    {GgmlType::Q5_K, dec_q5_k, enc_q5_k}, {GgmlType::Q6_K, dec_q6_k, enc_q6_k},
};

const Codec* codec(GgmlType t) {
  for (const Codec& c : kCodecs)
    if (c.type == t) return &c;
  return nullptr;
}

const Codec& checked(GgmlType t) {
  const Codec* c = codec(t);
  if (!c) {
    const GgmlTypeInfo* info = ggml_type_info(static_cast<uint32_t>(t));
    throw Error(std::string("tensor type ") + (info ? info->name : std::to_string(static_cast<uint32_t>(t))) +
                " is not supported (ugpu reads F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K and Q6_K)");
  }
  return *c;
}

}  // namespace

bool quant_supported(GgmlType t) { return codec(t) != nullptr; }

uint64_t quant_bytes(GgmlType t, int64_t n) {
  checked(t);
  const GgmlTypeInfo* info = ggml_type_info(static_cast<uint32_t>(t));
  if (n < 0 || n % info->block != 0)
    throw Error(std::to_string(n) + " values do not fill whole " + info->name + " blocks of " + std::to_string(info->block));
  return static_cast<uint64_t>(n / info->block) * info->bytes;
}

void dequantize(GgmlType t, std::span<const uint8_t> src, std::span<float> dst) {
  const Codec& c = checked(t);
  const GgmlTypeInfo* info = ggml_type_info(static_cast<uint32_t>(t));
  uint64_t need = quant_bytes(t, static_cast<int64_t>(dst.size()));
  if (src.size() != need)
    throw Error(std::string(info->name) + ": " + std::to_string(dst.size()) + " values need " + std::to_string(need) + " bytes, not " +
                std::to_string(src.size()));
  for (size_t b = 0, n = dst.size() / info->block; b < n; ++b) c.decode(src.data() + b * info->bytes, dst.data() + b * info->block);
}

std::vector<uint8_t> quantize(GgmlType t, std::span<const float> src) {
  const Codec& c = checked(t);
  const GgmlTypeInfo* info = ggml_type_info(static_cast<uint32_t>(t));
  std::vector<uint8_t> out(quant_bytes(t, static_cast<int64_t>(src.size())));
  for (size_t b = 0, n = src.size() / info->block; b < n; ++b) c.encode(src.data() + b * info->block, out.data() + b * info->bytes);
  return out;
}

}  // namespace ugpu::llm
