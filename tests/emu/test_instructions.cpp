// Instruction semantics: each instruction assembled by LLVM, run in the executor over 32 lanes of
// inputs, and compared with the value the RDNA3 ISA reference defines, edge cases included.
#include <doctest/doctest.h>

#include <atomic>
#include <bit>
#include <cmath>
#include <limits>
#include <random>
#include <set>
#include <thread>

#include "emu/amd/rdna3/ops.h"
#include "harness.h"
#include "hw/amd/isa_gfx11.h"

using namespace ugpu;
using namespace ugpu::test;

namespace {

using Lane = std::array<uint32_t, 4>;

// Runs `code` with v1..v4 loaded from each lane's inputs and v5..v8 stored as its outputs (zero
// before the code). s[8:9] points at the input buffer for scalar loads.
std::vector<Lane> lanes(const std::string& code, const std::vector<Lane>& in, uint32_t workgroup = 32, uint32_t scratch = 0) {
  Gpu gpu;
  std::vector<Lane> input(std::max<size_t>(in.size(), workgroup)), output(input.size());
  for (size_t i = 0; i < input.size(); ++i) input[i] = in[i % in.size()];
  uint64_t in_addr = gpu.map(input.data(), input.size() * 16, false), out_addr = gpu.map(output.data(), output.size() * 16);
  uint64_t args[2] = {in_addr, out_addr};
  uint64_t kernarg = gpu.alloc(16, false);
  std::memcpy(gpu.host(kernarg), args, 16);
  std::string body = R"(
  s_load_b128 s[4:7], s[0:1], 0x0
  v_lshlrev_b32 v10, 4, v0
  s_waitcnt lgkmcnt(0)
  s_mov_b64 s[8:9], s[4:5]
  global_load_b128 v[1:4], v10, s[4:5]
  v_mov_b32 v5, 0
  v_mov_b32 v6, 0
  v_mov_b32 v7, 0
  v_mov_b32 v8, 0
  s_waitcnt vmcnt(0)
)" + code + R"(
  global_store_b128 v10, v[5:8], s[6:7]
)";
  Loaded k = load_asm(gpu, asm_kernel(body, 0, scratch));
  amd::RunResult r = gpu.executor.run(dispatch_of(gpu, k, kernarg, {1, 1, 1}, {workgroup, 1, 1}));
  if (r.fault) throw std::runtime_error(r.fault->message);
  output.resize(workgroup);
  return output;
}

uint32_t bits(float f) { return std::bit_cast<uint32_t>(f); }
float flt(uint32_t b) { return std::bit_cast<float>(b); }
const float kInf = std::numeric_limits<float>::infinity(), kNan = std::numeric_limits<float>::quiet_NaN();
const float kDenorm = std::numeric_limits<float>::denorm_min() * 5;

Lane f4(float a, float b = 0, float c = 0, float d = 0) { return {bits(a), bits(b), bits(c), bits(d)}; }
Lane u4(uint32_t a, uint32_t b = 0, uint32_t c = 0, uint32_t d = 0) { return {a, b, c, d}; }
uint32_t pack(uint32_t lo, uint32_t hi) { return (lo & 0xffff) | hi << 16; }

// Runs scalar code that leaves its results in s20, s21, ... (up to s83) and returns them: each is written to one lane
// of v5 or v6 with v_writelane. The inputs of lanes 0, 1 and 2 are in s[84:87], s[88:91] and s[92:95].
std::vector<uint32_t> scalar_results(const std::string& code, const std::vector<Lane>& in, int count) {
  std::string body =
      "  s_load_b128 s[84:87], s[8:9], 0x0\n  s_load_b128 s[88:91], s[8:9], 0x10\n  s_load_b128 s[92:95], s[8:9], 0x20\n"
      "  s_waitcnt lgkmcnt(0)\n" +
      code;
  for (int i = 0; i < count; ++i)
    body += "\n  v_writelane_b32 v" + std::to_string(5 + i / 32) + ", s" + std::to_string(20 + i) + ", " + std::to_string(i % 32);
  auto out = lanes(body, in);
  std::vector<uint32_t> r;
  for (int i = 0; i < count; ++i) r.push_back(out[i % 32][i / 32]);
  return r;
}

}  // namespace

TEST_CASE("VOP2/VOP3 float arithmetic: infinities, NaN, denormals, overflow, modifiers") {
  auto out = lanes("v_add_f32 v5, v1, v2\n  v_mul_f32 v6, v1, v2\n  v_max_f32 v7, v1, v2\n  v_min_f32 v8, v1, v2",
                   {f4(kInf, -kInf), f4(1.0f, kDenorm), f4(3e38f, 3e38f), f4(kNan, 2.0f), f4(-0.0f, 0.0f), f4(1.5f, -2.25f)});
  CHECK(std::isnan(flt(out[0][0])));  // inf + -inf
  CHECK(flt(out[0][1]) == -kInf);     // inf * -inf
  CHECK(flt(out[1][1]) == kDenorm);   // denormals preserved (the kernel's mode)
  CHECK(flt(out[2][0]) == kInf);      // overflow to infinity
  CHECK(flt(out[3][2]) == 2.0f);      // IEEE max: NaN yields the other operand
  CHECK(flt(out[3][3]) == 2.0f);
  CHECK(out[4][2] == bits(0.0f));   // max(-0, +0) = +0
  CHECK(out[4][3] == bits(-0.0f));  // min(-0, +0) = -0
  CHECK(flt(out[5][0]) == -0.75f);
  CHECK(flt(out[5][1]) == -3.375f);

  out = lanes("v_fma_f32 v5, -|v1|, v2, v3\n  v_add_f32_e64 v6, v1, v2 clamp\n  v_add_f32_e64 v7, v1, v2 mul:2\n  v_add_f32_e64 v8, v1, v2 div:2",
              {f4(-2.0f, 3.0f, 1.0f), f4(0.25f, 0.5f, 0.0f), f4(kNan, 1.0f)});
  CHECK(flt(out[0][0]) == -5.0f);  // -|-2| * 3 + 1
  CHECK(flt(out[0][1]) == 1.0f);   // clamp to [0, 1]
  CHECK(flt(out[0][2]) == 2.0f);
  CHECK(flt(out[0][3]) == 0.5f);
  CHECK(flt(out[1][1]) == 0.75f);
  CHECK(flt(out[2][1]) == 0.0f);  // clamp turns NaN into 0
}

TEST_CASE("transcendentals within 1 ULP of the exact value; sin and cos take revolutions") {
  std::vector<Lane> in;
  std::mt19937 rng(3);
  for (int i = 0; i < 32; ++i) in.push_back(f4(std::uniform_real_distribution<float>(0.01f, 20.0f)(rng)));
  auto out = lanes("v_exp_f32 v5, v1\n  v_log_f32 v6, v1\n  v_rcp_f32 v7, v1\n  v_sqrt_f32 v8, v1", in);
  auto ulps = [](float got, double want) {
    return std::fabs(got - want) / std::fabs(std::nextafter(static_cast<float>(want), kInf) - static_cast<float>(want));
  };
  for (int i = 0; i < 32; ++i) {
    double x = flt(in[i][0]);
    CHECK(ulps(flt(out[i][0]), std::exp2(x)) <= 1.0);
    CHECK(ulps(flt(out[i][1]), std::log2(x)) <= 1.0);
    CHECK(ulps(flt(out[i][2]), 1.0 / x) <= 1.0);
    CHECK(ulps(flt(out[i][3]), std::sqrt(x)) <= 1.0);
  }
  out = lanes("v_sin_f32 v5, v1\n  v_cos_f32 v6, v1\n  v_log_f32 v7, v1\n  v_exp_f32 v8, v1", {f4(0.25f), f4(0.0f), f4(-kInf), f4(-1.0f)});
  CHECK(flt(out[0][0]) == 1.0f);
  CHECK(std::fabs(flt(out[0][1])) < 1e-7f);
  CHECK(flt(out[1][2]) == -kInf);     // log(0)
  CHECK(flt(out[2][3]) == 0.0f);      // exp(-inf)
  CHECK(std::isnan(flt(out[3][2])));  // log of a negative number
}

TEST_CASE("division through v_div_scale, v_rcp, v_div_fmas and v_div_fixup is correctly rounded with IEEE special cases") {
  // The sequence LLVM emits for a float division n / d (n in v1, d in v2).
  const std::string div = R"(
  v_div_scale_f32 v11, null, v2, v2, v1
  v_div_scale_f32 v12, vcc_lo, v1, v2, v1
  v_rcp_f32 v13, v11
  v_fma_f32 v14, -v11, v13, 1.0
  v_fmac_f32 v13, v14, v13
  v_mul_f32 v14, v12, v13
  v_fma_f32 v15, -v11, v14, v12
  v_fmac_f32 v14, v15, v13
  v_fma_f32 v11, -v11, v14, v12
  v_div_fmas_f32 v11, v11, v13, v14
  v_div_fixup_f32 v5, v11, v2, v1
)";
  std::vector<Lane> in = {f4(1, 0), f4(0, 0), f4(-1, 0), f4(kInf, kInf), f4(1, kInf), f4(6, 3), f4(1e-38f, 1e30f), f4(3e38f, 1e-3f)};
  std::mt19937 rng(5);
  while (in.size() < 32) {
    float n = std::uniform_real_distribution<float>(-1e6f, 1e6f)(rng), d = std::uniform_real_distribution<float>(-100.0f, 100.0f)(rng);
    in.push_back(f4(n, d));
  }
  auto out = lanes(div, in);
  CHECK(flt(out[0][0]) == kInf);
  CHECK(std::isnan(flt(out[1][0])));
  CHECK(flt(out[2][0]) == -kInf);
  CHECK(std::isnan(flt(out[3][0])));
  CHECK(flt(out[4][0]) == 0.0f);
  for (size_t i = 5; i < in.size(); ++i) {
    CAPTURE(i);
    CHECK(out[i][0] == bits(flt(in[i][0]) / flt(in[i][1])));
  }
}

TEST_CASE("integer ops: shifts by the width or more use the low bits; carries; 64-bit results; bit fields") {
  auto out = lanes("v_lshlrev_b32 v5, v2, v1\n  v_ashrrev_i32 v6, v2, v1\n  v_lshlrev_b64 v[7:8], v2, v[3:4]",
                   {u4(0x80000001u, 33, 1, 0), u4(0x80000001u, 32, 0x80000000u, 0), u4(0x80000001u, 64 + 4, 0x80000001u, 0)});
  CHECK(out[0][0] == 0x00000002u);  // a 32-bit shift by 33 shifts by 1
  CHECK(out[0][1] == 0xc0000000u);
  CHECK(out[0][2] == 0u);  // {1, 0} << 33
  CHECK(out[0][3] == 2u);
  CHECK(out[1][0] == 0x80000001u);  // by 32: by 0
  CHECK(out[1][2] == 0u);           // 0x80000000 << 32
  CHECK(out[1][3] == 0x80000000u);
  CHECK(out[2][2] == 0x00000010u);  // a 64-bit shift by 68 shifts by 4
  CHECK(out[2][3] == 0x00000008u);

  out = lanes(R"(
  v_add_co_u32 v5, vcc_lo, v1, v2
  v_add_co_ci_u32_e32 v6, vcc_lo, v3, v4, vcc_lo
  v_mad_u64_u32 v[7:8], null, v1, v2, 0
)",
              {u4(0xffffffffu, 1, 5, 6), u4(7, 8, 9, 10), u4(0xffffffffu, 0xffffffffu, 0, 0)});
  CHECK(out[0][0] == 0u);
  CHECK(out[0][1] == 12u);  // 5 + 6 + carry
  CHECK(out[1][0] == 15u);
  CHECK(out[1][1] == 19u);  // no carry
  CHECK(out[2][2] == 1u);   // 0xffffffff^2 = 0xfffffffe00000001
  CHECK(out[2][3] == 0xfffffffeu);

  out = lanes("v_bfe_u32 v5, v1, 4, 8\n  v_bfe_i32 v6, v1, 4, 8\n  v_alignbit_b32 v7, v1, v2, 8\n  v_perm_b32 v8, v1, v2, 0x0c050400",
              {u4(0x0000ff70u, 0x11223344u)});
  CHECK(out[0][0] == 0xf7u);
  CHECK(out[0][1] == 0xfffffff7u);
  CHECK(out[0][2] == 0x70112233u);
  CHECK(out[0][3] == 0x00ff7044u);  // bytes B0, A0, A1 and the constant 0
}

TEST_CASE("compares: signed and unsigned orders, unordered floats, class tests; results as lane masks") {
  auto out = lanes(R"(
  v_cmp_lt_i32_e32 vcc_lo, v1, v2
  v_cndmask_b32_e64 v5, 0, 1, vcc_lo
  v_cmp_lt_u32_e64 s10, v1, v2
  v_cndmask_b32_e64 v6, 0, 1, s10
  v_cmp_neq_f32_e64 s11, v3, v4
  v_cndmask_b32_e64 v7, 0, 1, s11
  v_cmp_class_f32_e64 s12, v3, 0x3
  v_cndmask_b32_e64 v8, 0, 1, s12
)",
                   {u4(0xffffffffu, 1, bits(kNan), bits(kNan)), u4(1, 0xffffffffu, bits(1.0f), bits(1.0f)), u4(3, 3, bits(kInf), bits(2.0f))});
  CHECK(out[0] == Lane{1, 0, 1, 1});  // -1 < 1 signed; not unsigned; NaN != NaN (unordered); NaN is class 0|1
  CHECK(out[1] == Lane{0, 1, 0, 0});
  CHECK(out[2] == Lane{0, 0, 1, 0});
}

TEST_CASE("conversions saturate and send NaN to 0; f16 and f64 round once") {
  auto out = lanes("v_cvt_i32_f32 v5, v1\n  v_cvt_u32_f32 v6, v1\n  v_cvt_f16_f32 v7, v1\n  v_cvt_f32_i32 v8, v2",
                   {f4(3e9f, 0), f4(-3e9f, 0), f4(kNan, 0), f4(-1.5f, 0), u4(bits(65520.0f), 16777217u)});
  CHECK(out[0][0] == 0x7fffffffu);
  CHECK(out[0][1] == 3000000000u);
  CHECK(out[1][0] == 0x80000000u);
  CHECK(out[1][1] == 0u);
  CHECK(out[2][0] == 0u);
  CHECK(out[3][0] == static_cast<uint32_t>(-1));
  CHECK(out[3][1] == 0u);
  CHECK((out[3][2] & 0xffff) == 0xbe00u);  // -1.5 in half
  CHECK((out[4][2] & 0xffff) == 0x7c00u);  // 65520 rounds to +inf in half
  CHECK(flt(out[4][3]) == 16777216.0f);    // 2^24 + 1 rounds to even
}

TEST_CASE("16-bit halves (true16 .l/.h and op_sel) and packed math") {
  auto out = lanes(R"(
  v_add_f16_e32 v5.h, v1.l, v1.h
  v_add_f16_e64 v6.l, v1.h, v2.h
  v_pk_add_f16 v7, v1, v2
  v_pk_mul_f16 v8, v1, v2 op_sel:[1,0] op_sel_hi:[0,1]
)",
                   {u4(0x3c00 | 0x4000u << 16, 0x3800 | 0x4200u << 16)});  // v1 = {1.0, 2.0}, v2 = {0.5, 3.0}
  CHECK((out[0][0] >> 16) == 0x4200u);
  CHECK((out[0][1] & 0xffff) == 0x4500u);         // 2 + 3 = 5
  CHECK(out[0][2] == (0x3e00u | 0x4500u << 16));  // {1.5, 5}
  CHECK(out[0][3] == (0x3c00u | 0x4200u << 16));  // low: v1.hi * v2.lo = 2 * 0.5; high: v1.lo * v2.hi = 1 * 3
}

TEST_CASE("modifiers and clamps outside float math: v_cndmask neg, integer saturation, packed constants, v_cls, f16 class") {
  auto out = lanes(R"(
  v_cmp_gt_u32_e64 s10, 1, v0
  v_cndmask_b32_e64 v5, -v1, |v2|, s10
  v_add_nc_u16 v6, v3, v3 clamp
  v_pk_add_u16 v7, v4, -1 clamp
  v_cls_i32 v8, v4
)",
                   {u4(bits(2.0f), bits(-3.0f), 0xf000, 0x40000000u)});
  CHECK(flt(out[0][0]) == 3.0f);           // lane 0: VCC set, |v2|
  CHECK(flt(out[1][0]) == -2.0f);          // lane 1: -v1
  CHECK((out[0][1] & 0xffff) == 0xffffu);  // 0xf000 + 0xf000 saturates
  CHECK(out[0][2] == 0xffffffffu);         // both halves saturate: the constant -1 is 0xffffffff packed
  CHECK(out[0][3] == 1u);                  // 0x40000000: one bit matches the sign
  out = lanes(
      "  v_cmp_class_f16_e64 s10, v1, 0x80\n  v_cndmask_b32_e64 v5, 0, 1, s10\n  s_setreg_imm32_b32 hwreg(HW_REG_MODE, 4, 4), 0\n  v_mul_f32 v6, v2, "
      "1.0",
      {u4(0x0001, bits(kDenorm))});
  CHECK(out[0][0] == 1u);  // the smallest half denormal is class +denormal (bit 7)
  CHECK(out[0][1] == 0u);  // FP_DENORM set to 0 through the literal: flushed
}

TEST_CASE("VOPD reads both halves' sources before writing either") {
  auto out = lanes(R"(
  v_mov_b32 v11, v1
  v_mov_b32 v12, v2
  v_dual_mov_b32 v11, v12 :: v_dual_mov_b32 v12, v11
  v_mov_b32 v5, v11
  v_mov_b32 v6, v12
  v_dual_mul_f32 v7, v1, v2 :: v_dual_add_f32 v8, v2, v1
)",
                   {f4(3.0f, 4.0f)});
  CHECK(flt(out[0][0]) == 4.0f);
  CHECK(flt(out[0][1]) == 3.0f);
  CHECK(flt(out[0][2]) == 12.0f);
  CHECK(flt(out[0][3]) == 7.0f);
}

TEST_CASE("scalar ALU: carries through SCC, signed and unsigned compares, shifts, bit fields, EXEC save") {
  auto out = lanes(R"(
  s_load_b128 s[12:15], s[8:9], 0x0
  s_waitcnt lgkmcnt(0)
  s_add_u32 s20, s12, s13
  s_addc_u32 s21, s14, 0
  s_cmp_lt_i32 s12, s13
  s_cselect_b32 s22, 1, 0
  s_cmp_lt_u32 s12, s13
  s_cselect_b32 s23, 1, 0
  s_lshl_b32 s24, s13, 35
  s_bfe_i32 s25, s15, 0x80004
  v_mov_b32 v5, s20
  v_mov_b32 v6, s21
  v_lshl_or_b32 v7, s22, 1, s23
  v_mov_b32 v8, s25
)",
                   {u4(0xffffffffu, 3, 10, 0xff70u)});
  CHECK(out[0][0] == 2u);
  CHECK(out[0][1] == 11u);  // 10 + carry
  CHECK(out[0][2] == 2u);   // -1 < 3 signed (1), not unsigned (0)
  CHECK(out[0][3] == 0xfffffff7u);
}

TEST_CASE("partial waves: only the work-items of the workgroup run; branches on EXEC") {
  auto out = lanes(R"(
  v_mov_b32 v5, 7
  s_mov_b32 s20, exec_lo
  v_cmpx_gt_u32_e32 5, v0
  s_cbranch_execz 1
  v_mov_b32 v6, 9
  s_mov_b32 exec_lo, s20
)",
                   {u4(0)}, 20);
  std::vector<Lane> got = out;
  for (int l = 0; l < 20; ++l) CHECK(got[l][0] == 7u);
  for (int l = 0; l < 5; ++l) CHECK(got[l][1] == 9u);
  for (int l = 5; l < 20; ++l) CHECK(got[l][1] == 0u);
}

TEST_CASE("LDS and s_barrier: one wave writes, the other reads after the barrier") {
  Gpu gpu;
  std::vector<uint32_t> out(64, 0);
  uint64_t out_addr = gpu.map(out.data(), out.size() * 4);
  uint64_t kernarg = gpu.alloc(8, false);
  std::memcpy(gpu.host(kernarg), &out_addr, 8);
  // Work-item i stores i*i at LDS[(63 - i) * 4]; after the barrier it reads LDS[i * 4].
  Loaded k = load_asm(gpu, asm_kernel(R"(
  s_load_b64 s[4:5], s[0:1], 0x0
  v_sub_nc_u32 v1, 63, v0
  v_lshlrev_b32 v1, 2, v1
  v_mul_lo_u32 v2, v0, v0
  ds_store_b32 v1, v2
  s_waitcnt lgkmcnt(0)
  s_barrier
  v_lshlrev_b32 v3, 2, v0
  ds_load_b32 v4, v3
  s_waitcnt lgkmcnt(0)
  s_waitcnt lgkmcnt(0)
  global_store_b32 v3, v4, s[4:5]
)",
                                      256));
  amd::RunResult r = gpu.executor.run(dispatch_of(gpu, k, kernarg, {1, 1, 1}, {64, 1, 1}));
  REQUIRE(!r.fault);
  for (uint32_t i = 0; i < 64; ++i) CHECK(out[i] == (63 - i) * (63 - i));
  // A grid whose workgroup count passes 2^64 is refused, not wrapped into a grid that runs nothing.
  CHECK_THROWS_WITH(gpu.executor.run(dispatch_of(gpu, k, kernarg, {1u << 24, 1u << 31, 1u << 31}, {64, 1, 1})), doctest::Contains("more than 2^64"));
}

TEST_CASE("scratch: per-lane private memory; an access past the private segment faults") {
  // Each lane stores its input at offsets 8 and 4*lane of its own segment, then reads both back.
  auto out = lanes(R"(
  v_lshlrev_b32 v11, 2, v0
  scratch_store_b32 off, v1, off offset:8
  scratch_store_b32 v11, v2, off offset:16
  scratch_load_b32 v5, off, off offset:8
  scratch_load_b32 v6, v11, off offset:16
)",
                   {u4(11, 1), u4(22, 2), u4(33, 3)}, 32, 256);
  for (int l = 0; l < 32; ++l) CHECK(out[l][0] == std::array<uint32_t, 3>{11, 22, 33}[l % 3]);
  for (int l = 0; l < 32; ++l) CHECK(out[l][1] == std::array<uint32_t, 3>{1, 2, 3}[l % 3]);
  CHECK_THROWS_WITH(lanes("  scratch_store_b32 off, v1, off offset:256", {u4(1)}, 32, 256), doctest::Contains("write of scratch address 0x100"));
}

TEST_CASE("denormal mode from the descriptor: flushed when FLOAT_DENORM_32 says so") {
  CHECK(lanes("  v_mul_f32 v5, v1, v2", {f4(1.0f, kDenorm)})[0][0] == bits(kDenorm));
  CHECK(lanes("  s_denorm_mode 0\n  v_mul_f32 v5, v1, v2\n  v_add_f32 v6, v2, 0", {f4(1.0f, kDenorm)})[0] == Lane{0, 0, 0, 0});
}

TEST_CASE("faults: unmapped load and out-of-bounds store name the address; unimplemented instructions name themselves") {
  Gpu gpu;
  std::vector<uint32_t> buf(16);
  uint64_t addr = gpu.map(buf.data(), 64);
  uint64_t args[1] = {addr};
  uint64_t kernarg = gpu.alloc(8, false);
  std::memcpy(gpu.host(kernarg), args, 8);
  auto run = [&](const std::string& body) {
    Loaded k = load_asm(gpu, asm_kernel("  s_load_b64 s[4:5], s[0:1], 0x0\n  s_waitcnt lgkmcnt(0)\n" + body));
    return gpu.executor.run(dispatch_of(gpu, k, kernarg, {1, 1, 1}, {32, 1, 1}));
  };
  amd::RunResult r = run("  v_lshlrev_b32 v1, 2, v0\n  global_store_b32 v1, v0, s[4:5] offset:64");
  REQUIRE(r.fault);
  CHECK(r.fault->kind == amd::Fault::Kind::Memory);
  CHECK(r.fault->address == addr + 64);
  CHECK(r.fault->access == amd::Access::Write);
  CHECK(r.fault->instruction.find("global_store_b32") == 0);
  CHECK(r.fault->message.find("write") != std::string::npos);
  MESSAGE(r.fault->message);

  r = run("  v_mov_b32 v1, 0\n  v_mov_b32 v2, 0x10\n  global_load_b32 v3, v[1:2], off");
  REQUIRE(r.fault);
  CHECK(r.fault->address == 0x1000000000ull);
  CHECK(r.fault->access == amd::Access::Read);

  r = run("  s_buffer_load_b32 s6, s[4:7], 0x0");
  REQUIRE(r.fault);
  CHECK(r.fault->kind == amd::Fault::Kind::Unimplemented);
  CHECK(r.fault->message.find("s_buffer_load_b32") != std::string::npos);
  MESSAGE(r.fault->message);

  r = run("  s_code_end");
  REQUIRE(r.fault);
  CHECK(r.fault->kind == amd::Fault::Kind::Illegal);
}

TEST_CASE("an infinite loop can be interrupted") {
  Gpu gpu;
  uint64_t kernarg = gpu.alloc(8, false);
  Loaded k = load_asm(gpu, asm_kernel("loop:\n  v_add_nc_u32 v1, 1, v1\n  s_branch loop"));
  std::atomic<bool> stop{false};
  std::jthread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    stop = true;
  });
  amd::RunOptions o;
  o.interrupt = &stop;
  amd::RunResult r = gpu.executor.run(dispatch_of(gpu, k, kernarg, {4, 1, 1}, {64, 1, 1}), o);
  REQUIRE(r.fault);
  CHECK(r.fault->kind == amd::Fault::Kind::Interrupted);
  CHECK(r.wave_instructions > 1000);
}

// --- coverage of the instruction tables ----------------------------------------------------------

namespace {

namespace isa = ugpu::hw::amd::gfx11;

// Every mnemonic of hw/amd's gfx11 tables, VOPD halves under the name of the VALU op they issue (as decode.cpp does).
struct Mnemonic {
  std::string name;
  const char* encoding;
  bool vopd;
};
template <size_t N>
void collect(std::vector<Mnemonic>& out, const char* encoding, const char* const (&table)[N], bool vopd = false) {
  for (const char* n : table)
    if (n) out.push_back({vopd ? "v_" + std::string(n).substr(7) : std::string(n), encoding, vopd});
}
std::vector<Mnemonic> all_mnemonics() {
  std::vector<Mnemonic> m;
  collect(m, "SOP2", isa::kSop2), collect(m, "SOPK", isa::kSopk), collect(m, "SOP1", isa::kSop1), collect(m, "SOPC", isa::kSopc);
  collect(m, "SOPP", isa::kSopp), collect(m, "SMEM", isa::kSmem), collect(m, "VOP1", isa::kVop1), collect(m, "VOP2", isa::kVop2);
  collect(m, "VOPC", isa::kVopc), collect(m, "VOP3", isa::kVop3), collect(m, "VOP3P", isa::kVop3p), collect(m, "VOPD", isa::kVopdX, true);
  collect(m, "VOPD", isa::kVopdY, true), collect(m, "DS", isa::kDs), collect(m, "FLAT", isa::kFlat), collect(m, "SCRATCH", isa::kScratch);
  collect(m, "GLOBAL", isa::kGlobal);
  return m;
}

}  // namespace

TEST_CASE("every RDNA3 instruction the compiler can select is implemented; the rest say why, and that table is exact") {
  namespace e = ugpu::emu::amd;
  const std::vector<Mnemonic> all = all_mnemonics();
  REQUIRE(all.size() > 1000);
  for (const Mnemonic& m : all) {
    CAPTURE(m.encoding);
    CAPTURE(m.name);
    const e::OpDef* op = e::find_op(m.name);
    CHECK((op != nullptr || !e::not_modelled_reason(m.name).empty()));
    if (op && m.vopd) CHECK((op->compute != nullptr));  // a VOPD half computes before either half writes
  }
  // Each entry names at least one mnemonic of the tables, and only mnemonics without semantics.
  for (const e::NotModelled& n : e::not_modelled()) {
    CAPTURE(n.pattern);
    int named = 0;
    for (const Mnemonic& m : all)
      if (e::matches(n.pattern, m.name)) {
        ++named;
        CAPTURE(m.name);
        CHECK(e::find_op(m.name) == nullptr);
      }
    CHECK(named > 0);
  }
  // The families the issue found missing.
  for (const char* name : {"s_cls_i32", "s_pack_hl_b32_b16", "v_max3_u16", "v_min3_u16", "v_max3_i16", "v_maxmin_i32", "v_movrels_b32",
                           "v_dot4_i32_iu8", "v_dot2acc_f32_f16", "v_add_nc_i32", "v_sad_u8", "v_pk_mad_i16"}) {
    CAPTURE(name);
    CHECK(e::find_op(name) != nullptr);
  }
  CHECK(e::not_modelled_reason("v_wmma_i32_16x16x16_iu8").find("intrinsics") != std::string_view::npos);
  CHECK(e::not_modelled_reason("s_and_saveexec_b64").find("wave64") != std::string_view::npos);
}

// --- scalar ALU additions ------------------------------------------------------------------------

TEST_CASE("SOP1/SOP2: cls and clz of 0 and -1, 64-bit bit ops, pack_hl, quad masks, wrexec and M0-relative SGPRs") {
  std::vector<Lane> in = {u4(0, 0xffffffffu, 0x40000000u, 0x0fffffffu), u4(0x80000000u, 0x100, 0xfffffffeu, 0x12345678u),
                          u4(0xffffffffu, 0xffffffffu, 1, 0)};
  auto r = scalar_results(R"(
  s_cls_i32 s20, s84
  s_cls_i32 s21, s85
  s_cls_i32 s22, s86
  s_cls_i32 s23, s87
  s_cls_i32 s24, s88
  s_cls_i32 s25, s90
  s_cls_i32_i64 s26, s[88:89]
  s_cls_i32_i64 s27, s[92:93]
  s_cls_i32_i64 s28, s[84:85]
  s_clz_i32_u64 s29, s[88:89]
  s_clz_i32_u64 s30, s[94:95]
  s_clz_i32_u64 s31, 0
  s_brev_b64 s[32:33], s[88:89]
  s_bcnt0_i32_b64 s34, s[88:89]
  s_cselect_b32 s35, 1, 0
  s_bcnt0_i32_b64 s36, s[92:93]
  s_cselect_b32 s37, 1, 0
  s_mov_b64 s[38:39], 0
  s_bitset1_b64 s[38:39], 33
  s_bitset1_b64 s[38:39], 67
  s_mov_b64 s[40:41], -1
  s_bitset0_b64 s[40:41], 63
  s_bitreplicate_b64_b32 s[42:43], 0x80000001
  s_pack_hl_b32_b16 s44, s91, s87
  s_quadmask_b32 s45, 0xf01001
  s_cselect_b32 s46, 1, 0
  s_wqm_b32 s47, 0xf01001
  s_wqm_b64 s[48:49], s[88:89]
  s_quadmask_b64 s[50:51], s[88:89]
  s_mov_b32 s52, exec_lo
  s_mov_b32 exec_lo, 0xff
  s_and_not1_wrexec_b32 s53, 0xf0f
  s_cselect_b32 s54, 1, 0
  s_and_not0_wrexec_b32 s55, 0x300
  s_mov_b32 s56, exec_lo
  s_and_not0_wrexec_b32 s57, -1
  s_cselect_b32 s58, 1, 0
  s_mov_b32 exec_lo, s52
  s_mov_b32 m0, 2
  s_movrels_b32 s59, s84
  s_movrels_b64 s[60:61], s[88:89]
  s_mov_b64 s[62:63], 0
  s_movreld_b32 s61, 0x55
  s_movreld_b64 s[62:63], s[90:91]
  s_mov_b32 m0, 200
  s_movrels_b32 s66, s20
  s_mov_b32 s67, s0
  s_movreld_b32 s20, 7
  s_mov_b32 s68, 0
  s_mov_b32 m0, 0x30002
  s_movrelsd_2_b32 s65, s84
  s_movreld_b64 s[60:61], 0
)",
                          in, 49);
  const std::vector<uint32_t> want = {
      0xffffffffu, 0xffffffffu, 1,           4,
      1,           31,                                     // s_cls_i32 of 0 and -1 (no differing bit: -1), 0x40000000, 0x0fffffff, 0x80000000, -2
      23,          0xffffffffu, 32,                        // s_cls_i32_i64 of 0x0000010080000000, -1, 0xffffffff00000000
      23,          63,          0xffffffffu,               // s_clz_i32_u64 of 0x0000010080000000, 1, 0
      0x00800000u, 1,                                      // s_brev_b64 of 0x0000010080000000
      62,          1,           0,           0,            // s_bcnt0_i32_b64 and SCC = (result != 0), for 2 and 64 set bits
      8,           2,           0xffffffffu, 0x7fffffffu,  // s_bitset1_b64 bit 33, then bit 67 & 63 = 3; s_bitset0_b64 bit 63
      3,           0xc0000000u,                            // s_bitreplicate_b64_b32 of 0x80000001
      0xffff1234u,                                         // s_pack_hl_b32_b16: {S1[15:0], S0[31:16]}
      0x29,        1,           0x00f0f00fu,               // s_quadmask_b32 / s_wqm_b32 of nibbles 1,0,0,1,0,f
      0xf0000000u, 0xf00,       0x480,       0,            // s_wqm_b64 / s_quadmask_b64 of 0x0000010080000000
      0xffffffffu,                                         // the saved EXEC
      0xf00,       1,           0xc00,       0xc00,
      0,           0,            // wrexec: EXEC = 0xf0f & ~0xff, then ~0x300 & 0xf00, then ~-1 & EXEC = 0 (SCC 0)
      0x40000000u,               // s_movrels_b32 s59, s84 with M0 = 2 reads s86
      0xfffffffeu, 0x12345678u,  // s_movrels_b64 s[60:61], s[88:89] reads s[90:91]; the out-of-range s_movreld_b64 writes nothing
      0,           0x55,         // s_movreld_b32 s61 wrote s63
      0xfffffffeu, 0x12345678u,  // s_movreld_b64 s[62:63] wrote s[64:65]
  };
  REQUIRE(r.size() == 49);
  CHECK(std::vector<uint32_t>(r.begin(), r.begin() + 46) == want);
  CHECK(r[46] == r[47]);        // M0 = 200: the source is out of range and reads s0
  CHECK(r[0] == 0xffffffffu);   // ... and the out-of-range s_movreld_b32 s20 wrote nothing
  CHECK(r[48] == 0x40000000u);  // s_movrelsd_2_b32: s84 + M0[9:0] = s86 into s65 + M0[25:16] = s68
}

// --- vector ALU additions ------------------------------------------------------------------------

TEST_CASE("16-bit min3/max3/med3 (signed, unsigned, f16) and maxmin/minmax: negative values, NaN, true16 halves") {
  auto out = lanes(R"(
  v_max3_i16 v5.l, v1.l, v2.l, v3.l
  v_max3_u16 v5.h, v1.l, v2.l, v3.l
  v_min3_i16 v6.l, v1.l, v2.l, v3.l
  v_min3_u16 v6.h, v1.h, v2.h, v3.h
  v_med3_i16 v7.l, v1.l, v2.l, v3.l
  v_med3_u16 v7.h, v1.l, v2.l, v3.l
  v_max3_i16 v8.l, v1.h, v2.h, v3.h
  v_min3_i16 v8.h, v1.h, v2.h, v3.h
)",
                   {u4(pack(0x8000, 0x7fff), pack(0xffff, 1), pack(5, 0xfffe)), u4(pack(0xfffb, 0), pack(0xfffd, 0), pack(0xfff9, 0))});
  // lane 0: lows -32768, -1, 5 (unsigned 0x8000, 0xffff, 5); highs 0x7fff, 1, -2
  CHECK(out[0][0] == pack(5, 0xffff));
  CHECK(out[0][1] == pack(0x8000, 1));
  CHECK(out[0][2] == pack(0xffff, 0x8000));  // median -1 signed, 0x8000 unsigned
  CHECK(out[0][3] == pack(0x7fff, 0xfffe));
  // lane 1: all negative: -5, -3, -7
  CHECK(out[1][0] == pack(0xfffd, 0xfffd));
  CHECK((out[1][1] & 0xffff) == 0xfff9u);
  CHECK(out[1][2] == pack(0xfffb, 0xfffb));

  const uint32_t one = 0x3c00, nan = 0x7e00, m2 = 0xc000, three = 0x4200, m1 = 0xbc00, half = 0x3800, m4 = 0xc400;
  out = lanes(R"(
  v_max3_f16 v5.l, v1.l, v2.l, v3.l
  v_min3_f16 v5.h, v1.l, v2.l, v3.l
  v_med3_f16 v6.l, v1.l, v2.l, v3.l
  v_med3_f16 v6.h, v1.h, v2.h, v3.h
  v_maxmin_f16 v7.l, v1.h, v2.h, v4.l
  v_minmax_f16 v7.h, v1.h, v2.h, v4.l
  v_maxmin_i32 v8, v1, v2, v4
)",
              {u4(pack(one, three), pack(nan, m1), pack(m2, half), pack(m4, 0))});
  CHECK(out[0][0] == pack(one, m2));   // NaN is ignored by max3 and min3
  CHECK(out[0][1] == pack(m2, half));  // med3 with a NaN is min3; med3(3, -1, 0.5) = 0.5
  CHECK(out[0][2] == pack(m4, m1));    // min(max(3, -1), -4) = -4; max(min(3, -1), -4) = -1
  CHECK(out[0][3] == 0xc400u);         // v_maxmin_i32 on the raw bits: max(0x42003c00, negative) = 0x42003c00, then min with 0xc400

  out = lanes("  v_maxmin_i32 v5, v1, v2, v3\n  v_minmax_i32 v6, v1, v2, v3\n  v_maxmin_u32 v7, v1, v2, v3\n  v_minmax_u32 v8, v1, v2, v3",
              {u4(static_cast<uint32_t>(-5), 3, static_cast<uint32_t>(-10)), u4(7, 0, 5)});
  CHECK(out[0] == Lane{static_cast<uint32_t>(-10), static_cast<uint32_t>(-5), static_cast<uint32_t>(-10), static_cast<uint32_t>(-10)});
  CHECK(out[1] == Lane{5, 5, 5, 5});  // a clamp of 7 to [0, 5]
}

TEST_CASE("integer multiply-add: v_mad_i16/u32_u16/i32_i16 and v_pk_mad_i16 wrap, or saturate with clamp") {
  const std::vector<Lane> in = {u4(pack(0x7fff, 0x8000), pack(2, 2), pack(3, 0xffff), 0xfffffff0u),
                                u4(pack(0x7fff, 0x8000), pack(2, 2), pack(3, 0xffff), 0x80000000u)};
  auto out = lanes(R"(
  v_mad_i16 v5.l, v1.l, v2.l, v3.l
  v_mad_i16 v5.h, v1.l, v2.l, v3.l clamp
  v_mad_u32_u16 v6, v1.h, v2.l, v4
  v_mad_i32_i16 v7, v1.h, v2.l, v4
  v_pk_mad_i16 v8, v1, v2, v3 clamp
)",
                   in);
  CHECK(out[0][0] == pack(0x0001, 0x7fff));  // 32767 * 2 + 3 = 65537: wraps to 1, saturates to 32767
  CHECK(out[0][1] == 0x0000fff0u);           // 0x8000 * 2 + 0xfffffff0 wraps
  CHECK(out[0][2] == 0xfffefff0u);           // -32768 * 2 - 16
  CHECK(out[0][3] == pack(0x7fff, 0x8000));  // per half: saturated high and low
  out = lanes(
      "  v_pk_mad_i16 v5, v1, v2, v3\n  v_mad_u32_u16 v6, v1.h, v2.l, v4 clamp\n  v_mad_i32_i16 v7, v1.h, v2.l, v4 clamp\n  v_mad_u16 v8.l, v1.l, "
      "v2.l, v3.l clamp",
      in);
  CHECK(out[0][0] == pack(0x0001, 0xffff));  // -32768 * 2 - 1 = -65537 wraps to 0xffff
  CHECK(out[0][1] == 0xffffffffu);
  CHECK(out[1][2] == 0x80000000u);  // -65536 + INT_MIN saturates
  CHECK((out[0][3] & 0xffff) == 0xffffu);
}

TEST_CASE("v_add_nc_i32 / v_sub_nc_i32 saturate with clamp; v_bfm_b32") {
  auto out = lanes("  v_add_nc_i32 v5, v1, v2 clamp\n  v_add_nc_i32 v6, v1, v2\n  v_sub_nc_i32 v7, v1, v2 clamp\n  v_sub_nc_i32 v8, v1, v2",
                   {u4(0x7fffffffu, 1), u4(0x80000000u, 1), u4(static_cast<uint32_t>(-5), 0x7fffffffu)});
  CHECK(out[0] == Lane{0x7fffffffu, 0x80000000u, 0x7ffffffeu, 0x7ffffffeu});
  CHECK(out[1] == Lane{0x80000001u, 0x80000001u, 0x80000000u, 0x7fffffffu});
  CHECK(out[2] == Lane{0x7ffffffau, 0x7ffffffau, 0x80000000u, 0x7ffffffcu});
  out = lanes("  v_bfm_b32 v5, v1, v2\n  v_bfm_b32 v6, 5, 3", {u4(32 + 4, 30)});
  CHECK(out[0][0] == 0xc0000000u);  // width 36 & 31 = 4 at offset 30: the mask's top bits fall off
  CHECK(out[0][1] == 0xf8u);
}

TEST_CASE("sums of absolute differences wrap unsigned (or saturate with clamp); masked SAD; v_lerp_u8") {
  const std::vector<Lane> in = {u4(0x01ff0010u, 0xff000020u, 100), u4(0x01ff0010u, 0xff000020u, 0xffffff00u)};
  auto out = lanes("  v_sad_u8 v5, v1, v2, v3\n  v_sad_hi_u8 v6, v1, v2, v3\n  v_sad_u16 v7, v1, v2, v3\n  v_sad_u32 v8, v1, v2, v3", in);
  // bytes |0x10-0x20| + |0-0| + |0xff-0| + |0x01-0xff| = 16 + 0 + 255 + 254 = 525; halves |0x10-0x20| + |0x01ff-0xff00| = 64785
  CHECK(out[0] == Lane{625, (525u << 16) + 100, 64785 + 100, 0xfd010010u + 100});
  CHECK(out[1] == Lane{525 - 256, (525u << 16) - 256, 64785 - 256, 0xfd00ff10u});  // S2 = -256: the sums wrap
  out = lanes("  v_sad_u8 v5, v1, v2, v3 clamp\n  v_msad_u8 v6, v1, v2, v3\n  v_lerp_u8 v7, v1, v2, v3\n  v_sad_u32 v8, v1, v2, v3 clamp", in);
  CHECK(out[0] == Lane{625, 270 + 100, 0x807f0018u, 0xfd010074u});          // msad skips the bytes where S1 is zero
  CHECK(out[1] == Lane{0xffffffffu, 270 - 256, 0x80800018u, 0xffffffffu});  // lerp rounds up where S2's byte is odd
}

TEST_CASE("conversions: v_cvt_pk_i16/u16_f32 saturate, v_sat_pk_u8_i16, f16 frexp of a denormal, v_cvt_off_f32_i4, f16 sin/cos") {
  auto out = lanes(R"(
  v_cvt_pk_i16_f32 v5, v1, v2
  v_cvt_pk_u16_f32 v6, v1, v2
  v_sat_pk_u8_i16 v7.l, v3
  v_frexp_exp_i16_f16 v7.h, v4.l
  v_frexp_mant_f16 v8.l, v4.l
  v_cvt_f32_f16 v8, v8.l
)",
                   {u4(bits(40000.5f), bits(-3.7f), pack(256, 0xff85), 0x4a00), u4(bits(kNan), bits(70000.0f), pack(128, 0x7fff), 0x0001)});
  CHECK(out[0][0] == pack(0x7fff, 0xfffd));  // 40000.5 saturates to 32767; -3.7 truncates to -3
  CHECK(out[0][1] == pack(40000, 0));        // negative to 0
  CHECK(out[0][2] == pack(0x00ff, 4));       // {sat(-123) = 0, sat(256) = 255}; 12 = 0.75 * 2^4
  CHECK(flt(out[0][3]) == 0.75f);
  CHECK(out[1][0] == pack(0, 0x7fff));  // NaN to 0
  CHECK(out[1][1] == pack(0, 0xffff));
  CHECK(out[1][2] == pack(0xff80, static_cast<uint16_t>(-23)));  // the smallest half denormal is 0.5 * 2^-23
  CHECK(flt(out[1][3]) == 0.5f);

  out = lanes("  v_cvt_off_f32_i4 v5, v1\n  v_sin_f16 v6.l, v2.l\n  v_cos_f16 v6.h, v2.l\n  v_cos_f16 v7.l, v2.h",
              {u4(8, pack(0x3400, 0x8000)), u4(0x17, pack(0x3400, 0x7c00)), u4(0xf, 0)});
  CHECK(flt(out[0][0]) == -0.5f);
  CHECK(flt(out[1][0]) == 0.4375f);  // only S0[3:0] counts
  CHECK(flt(out[2][0]) == -0.0625f);
  CHECK(out[0][1] == pack(0x3c00, 0x0000));  // sin and cos of a quarter turn
  CHECK((out[0][2] & 0xffff) == 0x3c00u);    // cos(-0) = 1
  CHECK((out[1][2] & 0x7fff) > 0x7c00u);     // cos(inf) is NaN
}

TEST_CASE("DX9 multiplies: zero times anything is zero; v_mullit_f32") {
  auto out = lanes(R"(
  v_mul_dx9_zero_f32 v5, v1, v2
  v_mov_b32 v6, v3
  v_fmac_dx9_zero_f32 v6, v1, v2
  v_fma_dx9_zero_f32 v7, v2, v1, v4
  v_mullit_f32 v8, v3, v4, v3
)",
                   {f4(0.0f, kInf, 2.0f, 3.0f), f4(-0.0f, kNan, 2.0f, -1.0f), f4(1.5f, 2.0f, 2.0f, kNan)});
  CHECK(out[0] == Lane{bits(0.0f), bits(2.0f), bits(3.0f), bits(6.0f)});
  CHECK(out[1] == Lane{bits(0.0f), bits(2.0f), bits(-1.0f), bits(-2.0f)});
  CHECK(flt(out[2][0]) == 3.0f);
  CHECK(flt(out[2][1]) == 5.0f);
  CHECK(std::isnan(flt(out[2][2])));
  CHECK(out[2][3] == 0xff7fffffu);  // S1 NaN: -MAX_FLOAT
  out = lanes("  v_dual_mul_dx9_zero_f32 v5, v1, v2 :: v_dual_mul_dx9_zero_f32 v6, v2, v1", {f4(0.0f, kNan)});
  CHECK(out[0][0] == 0u);
  CHECK(out[0][1] == 0u);
}

TEST_CASE("dot products: f16/bf16 pairs round in the ISA's order; VOP2, VOPD and VOP3P forms; modifiers") {
  const uint32_t f16_one = 0x3c00, big = bits(16777216.0f);
  // dot2acc: (2^24 + 1) + 1, each sum rounded to f32 (ties to even): 2^24. dot2: (1 + 1) + 2^24 = 2^24 + 2.
  auto out = lanes(
      R"(
  v_mov_b32 v5, v3
  v_dot2acc_f32_f16 v5, v1, v2
  v_mov_b32 v6, v3
  v_mov_b32 v7, v4
  v_dual_dot2acc_f32_f16 v6, v1, v2 :: v_dual_dot2acc_f32_bf16 v7, v2, v1
  v_dot2_f32_f16 v8, v1, v2, v3
)",
      {u4(pack(f16_one, f16_one), pack(f16_one, f16_one), big, bits(1.0f)), u4(pack(0x3e00, 0xc000), pack(0x4400, 0x3800), bits(10.0f), bits(0.5f))});
  CHECK(flt(out[0][0]) == 16777216.0f);
  CHECK(flt(out[0][1]) == 16777216.0f);
  CHECK(flt(out[0][3]) == 16777218.0f);
  CHECK(flt(out[1][0]) == 15.0f);  // 1.5 * 4 + -2 * 0.5 + 10
  CHECK(flt(out[1][1]) == 15.0f);
  CHECK(flt(out[1][3]) == 15.0f);
  // bf16 view of the same bits: {0x3c00, 0x3c00} and {0x3e00, 0xc000} are tiny; lane 0 accumulates 1.0 exactly
  CHECK(flt(out[0][2]) == 1.0f + 2 * std::bit_cast<float>(0x3c000000u) * std::bit_cast<float>(0x3c000000u));

  out = lanes(R"(
  v_dot2_f32_f16 v5, v1, v2, v3 neg_lo:[1,0,1]
  v_dot2_f32_f16 v6, v1, v2, v3 op_sel:[1,0,0] op_sel_hi:[0,1,1]
  v_dot2_f32_bf16 v7, v4, v4, v3 clamp
  v_dot2_f32_bf16 v8, v4, v4, 1.0 neg_hi:[1,0,0]
)",
              {u4(pack(0x3e00, 0xc000), pack(0x4400, 0x3800), bits(10.0f), pack(0x3fc0, 0xc000))});
  CHECK(flt(out[0][0]) == -17.0f);  // -(1.5 * 4) + -2 * 0.5 - 10
  CHECK(flt(out[0][1]) == 2.75f);   // op_sel swaps S0's halves: -2 * 4 + 1.5 * 0.5 + 10
  CHECK(flt(out[0][2]) == 1.0f);    // bf16 1.5^2 + (-2)^2 + 10, clamped to [0, 1]
  CHECK(flt(out[0][3]) == 2.25f - 4.0f + 1.0f);
}

TEST_CASE("integer dot products: neg_lo selects signed bytes and nibbles; clamp saturates") {
  // bytes of S0 (low first): 0x7f, 0x80, 0x02, 0xff; of S1: 0xff, 0x80, 0xff, 0x01
  const std::vector<Lane> in = {u4(0xff02807fu, 0x01ff80ffu, 1000, 0x000000f7u), u4(0xff02807fu, 0x01ff80ffu, 0xffffff00u, 0x000000f7u),
                                u4(0xff02807fu, 0x01ff80ffu, 0x7fffff00u, 0x000000f7u)};
  auto out = lanes(R"(
  v_dot4_u32_u8 v5, v1, v2, v3
  v_dot4_i32_iu8 v6, v1, v2, v3
  v_dot4_i32_iu8 v7, v1, v2, v3 neg_lo:[1,1,0]
  v_dot4_i32_iu8 v8, v1, v2, v3 neg_lo:[1,0,0]
)",
                   in);
  // unsigned: 127*255 + 128*128 + 2*255 + 255*1 = 49534; signed: -127 + 16384 - 2 - 1 = 16254; mixed: 32385 - 16384 + 510 - 1 = 16510
  CHECK(out[0] == Lane{50534, 50534, 17254, 17510});
  CHECK(out[1] == Lane{49534 - 256, 49534 - 256, 16254 - 256, 16510 - 256});
  CHECK(out[2][2] == 0x7fffff00u + 16254);  // no clamp: wraps past INT_MAX
  out = lanes(R"(
  v_dot4_i32_iu8 v5, v1, v2, v3 neg_lo:[0,1,0]
  v_dot4_u32_u8 v6, v1, v2, v3 clamp
  v_dot4_i32_iu8 v7, v1, v2, v3 neg_lo:[1,1,0] clamp
  v_dot8_i32_iu4 v8, v4, 0x82, v3 neg_lo:[1,1,0]
)",
              in);
  CHECK(out[0][0] == static_cast<uint32_t>(-127 - 16384 - 2 + 255 + 1000));
  CHECK(out[0][1] == 50534u);
  CHECK(out[1][1] == 0xffffffffu);  // unsigned sum past 2^32 saturates
  CHECK(out[2][2] == 0x7fffffffu);
  CHECK(out[0][3] == 7 * 2 + (-1) * (-8) + 1000u);  // nibbles 7, -1 and 2, -8
  out = lanes("  v_dot8_u32_u4 v5, v4, 0x82, v3\n  v_dot8_i32_iu4 v6, v4, 0x82, v3", in);
  CHECK(out[0][0] == 7 * 2 + 15 * 8 + 1000u);
  CHECK(out[0][1] == 7 * 2 + 15 * 8 + 1000u);  // without neg_lo the IU forms are unsigned
  CHECK(out[1][0] == 7 * 2 + 15 * 8 - 256u);
}

TEST_CASE("M0-relative VGPR indexing: movrels/movreld/movrelsd/movrelsd_2/swaprel, EXEC, out-of-range operands; v_swap") {
  auto out = lanes(R"(
  v_mov_b32 v20, v1
  v_mov_b32 v21, v2
  v_mov_b32 v22, v3
  s_mov_b32 m0, 2
  v_movrels_b32 v5, v20
  v_mov_b32 v32, 0
  s_mov_b32 s20, exec_lo
  s_mov_b32 exec_lo, 0x55555555
  v_movreld_b32 v30, v4
  s_mov_b32 exec_lo, s20
  v_mov_b32 v6, v32
  v_movrelsd_b32 v40, v19
  v_mov_b32 v7, v42
  s_mov_b32 m0, 0x50001
  v_movrelsd_2_b32 v45, v20
  v_mov_b32 v8, v50
)",
                   {u4(11, 12, 13, 14), u4(21, 22, 23, 24)});
  CHECK(out[0] == Lane{13, 14, 12, 12});  // v22; v32 = v4 in the lanes EXEC has; v42 = v21; v50 = v21
  CHECK(out[1] == Lane{23, 0, 22, 22});
  // Out of range (the kernel has 64 VGPRs): the source reads v0 (the work-item id), the destination is not written.
  out = lanes(R"(
  s_mov_b32 m0, 10
  v_movrels_b32 v5, v60
  v_mov_b32 v6, 7
  s_mov_b32 m0, 64
  v_movreld_b32 v6, v1
  v_mov_b32 v7, v1
  v_mov_b32 v8, v2
  v_swap_b32 v7, v8
)",
              {u4(11, 12)});
  for (uint32_t l = 0; l < 32; ++l) CHECK(out[l] == Lane{l, 7, 12, 11});
  out = lanes(R"(
  v_mov_b32 v5, v1
  v_mov_b32 v6, v2
  v_swap_b16 v5.l, v6.h
  v_mov_b32 v21, v3
  v_mov_b32 v33, v4
  s_mov_b32 m0, 0x30001
  v_swaprel_b32 v30, v20
  v_mov_b32 v7, v21
  v_mov_b32 v8, v33
)",
              {u4(0x11112222u, 0x33334444u, 5, 6)});
  CHECK(out[0] == Lane{0x11113333u, 0x22224444u, 6, 5});
}

TEST_CASE("v_pk_fmac_f16, v_pipeflush and ds_nop run; v_illegal faults as an illegal instruction; unmodelled ones say why") {
  auto out = lanes("  v_mov_b32 v5, v3\n  v_pipeflush\n  ds_nop\n  v_pk_fmac_f16 v5, v1, v2",
                   {u4(pack(0x3e00, 0x4000), pack(0x4000, 0xc200), pack(0x3c00, 0x3800))});
  CHECK(out[0][0] == pack(0x4400, 0xc580));  // 1.5 * 2 + 1 = 4; 2 * -3 + 0.5 = -5.5
  CHECK_THROWS_WITH(lanes("  v_illegal", {u4(0)}), doctest::Contains("v_illegal"));
  CHECK_THROWS_WITH(lanes("  s_and_saveexec_b64 s[20:21], s[22:23]", {u4(0)}), doctest::Contains("not implemented: wave64 only"));
}

namespace {

// Runs `code` with each lane's v[10:33] loaded from its 24 dwords of `in` (A in v[10:17], B in
// v[18:25], C in v[26:33]) and returns its v[40:47], over `workgroup` lanes.
std::vector<std::array<uint32_t, 8>> wmma_lanes(const std::string& code, const std::vector<std::array<uint32_t, 24>>& in, uint32_t workgroup = 32) {
  Gpu gpu;
  std::vector<std::array<uint32_t, 24>> input = in;
  std::vector<std::array<uint32_t, 8>> output(input.size());
  uint64_t in_addr = gpu.map(input.data(), input.size() * 96, false), out_addr = gpu.map(output.data(), output.size() * 32);
  uint64_t args[2] = {in_addr, out_addr};
  uint64_t kernarg = gpu.alloc(16, false);
  std::memcpy(gpu.host(kernarg), args, 16);
  std::string body = "  s_load_b128 s[4:7], s[0:1], 0x0\n  v_mul_u32_u24 v1, 96, v0\n  v_lshlrev_b32 v2, 5, v0\n  s_waitcnt lgkmcnt(0)\n";
  for (int i = 0; i < 6; ++i)
    body += "  global_load_b128 v[" + std::to_string(10 + 4 * i) + ":" + std::to_string(13 + 4 * i) +
            "], v1, s[4:5] offset:" + std::to_string(16 * i) + "\n";
  body += "  s_waitcnt vmcnt(0)\n" + code + "\n  global_store_b128 v2, v[40:43], s[6:7]\n  global_store_b128 v2, v[44:47], s[6:7] offset:16\n";
  Loaded k = load_asm(gpu, asm_kernel(body));
  amd::RunResult r = gpu.executor.run(dispatch_of(gpu, k, kernarg, {1, 1, 1}, {workgroup, 1, 1}));
  if (r.fault) throw std::runtime_error(r.fault->message);
  return output;
}

}  // namespace

TEST_CASE("v_wmma_f32_16x16x16_{f16,bf16}: D = A x B + C in the ISA's wave32 layout") {
  // The ISA guide's layout (RDNA3 §7.9): lane l holds row l % 16 of A and column l % 16 of B, element
  // k in register k / 2 (low half for even k), in both halves of the wave; D and C element (2v + l / 16,
  // l % 16) is lane l's register v.
  for (bool bf16 : {false, true}) {
    CAPTURE(bf16);
    std::mt19937 rng(bf16 ? 7 : 5);
    std::uniform_real_distribution<float> u(-2.0f, 2.0f);
    auto to16 = [&](float f) -> uint32_t { return bf16 ? std::bit_cast<uint32_t>(f) >> 16 : std::bit_cast<uint16_t>(static_cast<_Float16>(f)); };
    auto from16 = [&](uint32_t h) {
      return bf16 ? std::bit_cast<float>(h << 16) : static_cast<float>(std::bit_cast<_Float16>(static_cast<uint16_t>(h)));
    };
    uint32_t a[16][16], b[16][16];
    float c[16][16];
    for (int i = 0; i < 16; ++i)
      for (int j = 0; j < 16; ++j) a[i][j] = to16(u(rng)), b[i][j] = to16(u(rng)), c[i][j] = u(rng);
    std::vector<std::array<uint32_t, 24>> in(32);
    for (int l = 0; l < 32; ++l)
      for (int r = 0; r < 8; ++r) {
        in[l][r] = a[l % 16][2 * r] | a[l % 16][2 * r + 1] << 16;
        in[l][8 + r] = b[2 * r][l % 16] | b[2 * r + 1][l % 16] << 16;
        in[l][16 + r] = std::bit_cast<uint32_t>(c[2 * r + l / 16][l % 16]);
      }
    std::string op = bf16 ? "v_wmma_f32_16x16x16_bf16" : "v_wmma_f32_16x16x16_f16";
    auto out = wmma_lanes("  " + op + " v[40:47], v[10:17], v[18:25], v[26:33]", in);
    int wrong = 0;
    for (int l = 0; l < 32; ++l)
      for (int v = 0; v < 8; ++v) {
        int row = 2 * v + l / 16, col = l % 16;
        double want = c[row][col];
        for (int k = 0; k < 16; ++k) want += double{from16(a[row][k])} * double{from16(b[k][col])};
        wrong += std::bit_cast<float>(out[l][v]) != static_cast<float>(want);
      }
    CHECK(wrong == 0);
    // C as an inline constant (what LLVM emits for a first product), and D over C's own registers.
    out = wmma_lanes("  " + op + " v[26:33], v[10:17], v[18:25], 0\n  v_mov_b32 v40, v26\n  v_mov_b32 v41, v27", in);
    double want = 0;
    for (int k = 0; k < 16; ++k) want += double{from16(a[0][k])} * double{from16(b[k][0])};
    CHECK(std::bit_cast<float>(out[0][0]) == static_cast<float>(want));
    // The rows of D that a half of the wave computes (even rows: lanes 0-15, odd: 16-31) come from that
    // half's copy of A: a second-half copy of row 1 (lane 17) that differs changes row 1.
    in[17][0] ^= bf16 ? 0x3f80 : 0x3c00;
    out = wmma_lanes("  " + op + " v[40:47], v[10:17], v[18:25], v[26:33]", in);
    double row0 = c[0][0], row1 = c[1][0];
    for (int k = 0; k < 16; ++k) row0 += double{from16(a[0][k])} * double{from16(b[k][0])}, row1 += double{from16(a[1][k])} * double{from16(b[k][0])};
    CHECK(std::bit_cast<float>(out[0][0]) == static_cast<float>(row0));   // lane 0, register 0: D[0][0]
    CHECK(std::bit_cast<float>(out[16][0]) != static_cast<float>(row1));  // lane 16, register 0: D[1][0]
  }
  // EXEC must be full: 16 lanes of a wave fault, naming the instruction.
  std::vector<std::array<uint32_t, 24>> in(16);
  CHECK_THROWS_WITH_AS(wmma_lanes("  v_wmma_f32_16x16x16_f16 v[40:47], v[10:17], v[18:25], v[26:33]", in, 16), doctest::Contains("EXEC all ones"),
                       std::runtime_error);
}
