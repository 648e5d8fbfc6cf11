// Instruction semantics: each instruction assembled by LLVM, run in the executor over 32 lanes of
// inputs, and compared with the value the RDNA3 ISA reference defines, edge cases included.
#include <doctest/doctest.h>

#include <atomic>
#include <bit>
#include <cmath>
#include <limits>
#include <random>
#include <thread>

#include "harness.h"

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
