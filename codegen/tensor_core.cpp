// The tensor-core table (codegen/tensor_core.h). Sources for the layouts: AMD's RDNA3 ISA guide
// (§7.9, "Wave Matrix Multiply-Accumulate"), the CDNA3 ISA guide (§7.1, MFMA operand layouts) and
// NVIDIA's PTX ISA (§9.7.14.5.8, mma.m16n8k16 fragments for .f16/.bf16, mma.m16n8k8 for .tf32).
#include "codegen/tensor_core.h"

#include <algorithm>

#include "common/split.h"

namespace ugpu::codegen {
using namespace ir;
namespace {

using S = ScalarType;
// Bit coefficients, lane bits 0..5 and element bits 0..3.
constexpr TcCoord C(std::array<int8_t, 6> lane, std::array<int8_t, 4> elem) { return {lane, elem}; }

// RDNA3 (wave32): lane l's A row and B column is l % 16, with all 16 k values (lanes 16-31 hold the
// same copy); D element i of lane l is row 2i + l / 16, column l % 16.
constexpr TcLayout kRdna3A{16, C({1, 2, 4, 8}, {}), C({}, {1, 2, 4, 8})};
constexpr TcLayout kRdna3B{16, C({}, {1, 2, 4, 8}), C({1, 2, 4, 8}, {})};
constexpr TcLayout kRdna3C{8, C({0, 0, 0, 0, 1}, {2, 4, 8}), C({1, 2, 4, 8}, {})};
// CDNA3 16x16x16 (wave64): lane l holds A row (B column) l % 16 at k = 4 * (l / 16) + i; D element i
// of lane l is row 4 * (l / 16) + i, column l % 16.
constexpr TcLayout kCdnaA{4, C({1, 2, 4, 8}, {}), C({0, 0, 0, 0, 4, 8}, {1, 2})};
constexpr TcLayout kCdnaB{4, C({0, 0, 0, 0, 4, 8}, {1, 2}), C({1, 2, 4, 8}, {})};
constexpr TcLayout kCdnaC{4, C({0, 0, 0, 0, 4, 8}, {1, 2}), C({1, 2, 4, 8}, {})};
// NVIDIA m16n8k16 (warp of 32): g = l / 4, t = l % 4. A: a0,a1 at (g, 2t + i), a2,a3 at row g + 8,
// a4..a7 the same 8 columns on. B: b0,b1 at (2t + i, g), b2,b3 8 rows on. D: d0,d1 at (g, 2t + i),
// d2,d3 at row g + 8.
constexpr TcLayout kNvA{8, C({0, 0, 1, 2, 4}, {0, 8}), C({2, 4}, {1, 0, 8})};
constexpr TcLayout kNvB{4, C({2, 4}, {1, 8}), C({0, 0, 1, 2, 4}, {})};
constexpr TcLayout kNvC{4, C({0, 0, 1, 2, 4}, {0, 8}), C({2, 4}, {1})};

// NVIDIA m16n8k8 .tf32: a0 at (g, t), a1 at (g + 8, t), a2 and a3 four columns on; b0 at (t, g), b1
// four rows on; D as above.
constexpr TcLayout kNvTf32A{4, C({0, 0, 1, 2, 4}, {8}), C({1, 2}, {0, 4})};
constexpr TcLayout kNvTf32B{2, C({1, 2}, {4}), C({0, 0, 1, 2, 4}, {})};

constexpr std::string_view kRdna3 = "gfx1100", kCdna = "gfx942 gfx950", kNv = "sm_80 sm_89 sm_90 sm_100 sm_120";

const TensorCore kTensorCores[] = {
    {"wmma_f32_16x16x16_f16", kRdna3, 16, 16, 16, 32, S::Half, kRdna3A, kRdna3B, kRdna3C, "v_wmma_f32_16x16x16_f16"},
    {"wmma_f32_16x16x16_bf16", kRdna3, 16, 16, 16, 32, S::BFloat16, kRdna3A, kRdna3B, kRdna3C, "v_wmma_f32_16x16x16_bf16"},
    {"mfma_f32_16x16x16_f16", kCdna, 16, 16, 16, 64, S::Half, kCdnaA, kCdnaB, kCdnaC, "v_mfma_f32_16x16x16_f16"},
    {"mfma_f32_16x16x16_bf16", kCdna, 16, 16, 16, 64, S::BFloat16, kCdnaA, kCdnaB, kCdnaC, "v_mfma_f32_16x16x16_bf16"},
    {"mma_m16n8k16_f32_f16", kNv, 16, 8, 16, 32, S::Half, kNvA, kNvB, kNvC, "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"},
    {"mma_m16n8k16_f32_bf16", kNv, 16, 8, 16, 32, S::BFloat16, kNvA, kNvB, kNvC, "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"},
    {"mma_m16n8k8_f32_tf32", kNv, 16, 8, 8, 32, S::Float, kNvTf32A, kNvTf32B, kNvC, "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32", true},
};

}  // namespace

UOp TcCoord::at(const UOp& lane_id, int64_t i) const {
  int64_t e = 0;
  for (int b = 0; b < 4; ++b) e += elem[b] * ((i >> b) & 1);
  UOp v = UOp::const_int(dtypes::index, e);
  // Runs of lane bits whose coefficients double bit by bit are one field: (lane / 2^lo % 2^len) * c.
  for (int b = 0; b < 6;) {
    if (lane[b] == 0) {
      ++b;
      continue;
    }
    int hi = b + 1;
    while (hi < 6 && lane[hi] == lane[hi - 1] * 2) ++hi;
    UOp field = lane_id.floordiv(int64_t{1} << b) % static_cast<double>(int64_t{1} << (hi - b));
    v = v + field * static_cast<double>(lane[b]);
    b = hi;
  }
  return v;
}

bool TensorCore::on(const Target& t) const {
  auto names = split_list(targets, ' ');
  return std::find(names.begin(), names.end(), t.name) != names.end();
}

std::span<const TensorCore> tensor_cores() { return kTensorCores; }

const TensorCore* find_tensor_core(std::string_view name) {
  for (const TensorCore& tc : kTensorCores)
    if (tc.name == name) return &tc;
  return nullptr;
}

}  // namespace ugpu::codegen
