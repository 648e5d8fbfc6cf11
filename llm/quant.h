// ggml's weight formats on the host: the reference decoder the tests check the device kernels
// against, and the quantizer the test-model generator writes files with.
//
// Block layouts (all little-endian; d, m, dmin are IEEE half floats):
//   Q4_0  32 values, 18 bytes: d, 16 bytes of nibbles          x[j] = (lo(q[j]) - 8) d, x[j+16] = (hi(q[j]) - 8) d
//   Q4_1  32 values, 20 bytes: d, m, 16 bytes of nibbles        x = nibble * d + m
//   Q5_0  32 values, 22 bytes: d, u32 high bits, 16 bytes       bit j of the u32 is bit 4 of x[j]; (q - 16) d
//   Q5_1  32 values, 24 bytes: d, m, u32 high bits, 16 bytes    q * d + m
//   Q8_0  32 values, 34 bytes: d, 32 int8                       x = q d
//   Q4_K 256 values, 144 bytes: d, dmin, 12 bytes of eight 6-bit (scale, min) pairs, 128 bytes of nibbles;
//        sub-block s of 32 values: x = d * scale_s * q - dmin * min_s
//   Q5_K 256 values, 176 bytes: d, dmin, 12 bytes of scales/mins, 32 bytes of high bits, 128 bytes of nibbles
//   Q6_K 256 values, 210 bytes: 128 bytes of low nibbles, 64 bytes of 2-bit highs, 16 int8 scales, d;
//        sub-block s of 16 values: x = d * scale_s * (q - 32)
// Element order inside the K-quant blocks is described where it is decoded (quant.cpp), once.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "llm/gguf.h"

namespace ugpu::llm {

// The types the LLM path reads: F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K.
bool quant_supported(GgmlType t);

// Bytes that `n` values of type t take (n must be a multiple of the block size; Error otherwise).
uint64_t quant_bytes(GgmlType t, int64_t n);

// Decodes src (whole blocks) into dst (dst.size() values; src must hold exactly that many).
void dequantize(GgmlType t, std::span<const uint8_t> src, std::span<float> dst);

// Encodes values (a multiple of the block size) by rounding each block to its nearest grid, as the
// test-model generator needs: not ggml's search for the best scales, but valid blocks that decode
// (here and in llama.cpp) to the same numbers.
std::vector<uint8_t> quantize(GgmlType t, std::span<const float> src);

// IEEE half and bfloat16 conversions (round to nearest even).
float half_to_float(uint16_t h);
uint16_t float_to_half(float f);
float bf16_to_float(uint16_t b);
uint16_t float_to_bf16(float f);

}  // namespace ugpu::llm
