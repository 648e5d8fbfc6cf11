// Scalar ALU, program flow and scalar memory (SOP1, SOP2, SOPC, SOPK, SOPP, SMEM), as the RDNA3 ISA
// reference defines them, SCC included.
#include <bit>
#include <limits>
#include <type_traits>
#include <vector>

#include "emu/amd/rdna3/ops.h"
#include "emu/amd/rdna3/wave.h"

namespace ugpu::emu::amd {
namespace {

using enum Ty;

#define SL(...)                                                      \
  ([](Wave& w, uint64_t a, uint64_t b, const Inst& in) -> uint64_t { \
    (void)w, (void)a, (void)b, (void)in;                             \
    __VA_ARGS__                                                      \
  })

template <auto F>
void salu(Wave& w, const Inst& in) {
  const OpDef& op = *in.op;
  const uint64_t a = op.src[0] != None ? scalar_src(w, in, 0) : 0, b = op.src[1] != None ? scalar_src(w, in, 1) : 0;
  const uint64_t d = F(w, a, b, in);
  if (op.dst == B64) w.write_sgpr64(in.dst, d);
  else if (op.dst != None) w.write_sgpr(in.dst, static_cast<uint32_t>(d));
}
template <auto F>
OpDef sop(std::string_view name, Ty d, Ty s0 = None, Ty s1 = None) {
  return OpDef{name, salu<F>, nullptr, d, {s0, s1, None}, 0, 0};
}

uint32_t u32(uint64_t x) { return static_cast<uint32_t>(x); }
int32_t s32(uint64_t x) { return static_cast<int32_t>(static_cast<uint32_t>(x)); }
uint64_t nz(Wave& w, uint64_t d) {
  w.scc = d != 0;
  return d;
}
int32_t simm(const Inst& in) { return in.imm; }
uint32_t uimm(const Inst& in) { return static_cast<uint16_t>(in.imm); }

bool add_overflows(int32_t a, int32_t b, int32_t r) { return ((a >= 0) == (b >= 0)) && ((r >= 0) != (a >= 0)); }

template <int N>
uint64_t lshl_add(Wave& w, uint64_t a, uint64_t b, const Inst&) {
  uint64_t r = (uint64_t{u32(a)} << N) + u32(b);
  w.scc = r >> 32;
  return u32(r);
}

// Leading bits equal to the sign bit, the sign bit excluded; -1 when every bit is the same (S_CLS_I32).
template <class T>
uint64_t count_sign_bits(T x) {
  const auto u = static_cast<std::make_unsigned_t<T>>(x < 0 ? ~x : x);
  return u == 0 ? 0xffffffffu : u32(std::countl_zero(u));
}
template <class T>
T reverse_bits(T x) {
  T r = 0;
  for (int i = 0; i < static_cast<int>(sizeof(T) * 8); ++i) r |= static_cast<T>((x >> i) & 1) << (sizeof(T) * 8 - 1 - i);
  return r;
}
// S_QUADMASK: bit i set when any bit of nibble i is; S_WQM: each nibble with a bit set becomes all ones.
uint64_t quadmask(uint64_t x, int nibbles) {
  uint64_t r = 0;
  for (int i = 0; i < nibbles; ++i) r |= uint64_t{(x >> (4 * i) & 15) != 0} << i;
  return r;
}
uint64_t whole_quads(uint64_t x, int nibbles) {
  uint64_t r = 0;
  for (int i = 0; i < nibbles; ++i) r |= (x >> (4 * i) & 15 ? uint64_t{15} : 0) << (4 * i);
  return r;
}

// MODE register (hwreg 1): FP_ROUND [3:0], FP_DENORM [7:4], DX10_CLAMP [8], IEEE [9].
constexpr uint32_t kHwRegMode = 1;
void set_mode(Wave& w, uint32_t mode) {
  w.mode = mode;
  w.flush_f32 = ((mode >> 4) & 3) != 3;
  w.flush_f16_f64 = ((mode >> 6) & 3) != 3;
}
uint32_t hwreg_mask(const Inst& in) {
  uint32_t size = (uimm(in) >> 11 & 31) + 1;
  return static_cast<uint32_t>(((uint64_t{1} << size) - 1) << (uimm(in) >> 6 & 31));
}
uint64_t getreg(Wave& w, uint64_t, uint64_t, const Inst& in) {
  uint32_t id = uimm(in) & 63, off = uimm(in) >> 6 & 31;
  uint32_t value = id == kHwRegMode ? w.mode : 0;  // other registers (HW_ID, STATUS, ...) read as 0 here
  return (value & hwreg_mask(in)) >> off;
}
void setreg_value(Wave& w, const Inst& in, uint32_t v) {
  if ((uimm(in) & 63) != kHwRegMode) return;
  uint32_t mask = hwreg_mask(in), off = uimm(in) >> 6 & 31;
  set_mode(w, (w.mode & ~mask) | ((v << off) & mask));
}
void setreg(Wave& w, const Inst& in) { setreg_value(w, in, u32(scalar_src(w, in, 0))); }
void setreg_imm32(Wave& w, const Inst& in) { setreg_value(w, in, in.raw[2]); }

// --- program flow ----------------------------------------------------------------------------------

void branch_if(Wave& w, const Inst& in, bool taken) {
  if (taken) w.pc += static_cast<int64_t>(in.imm) * 4;  // pc already points past this instruction
}
void s_branch(Wave& w, const Inst& in) { branch_if(w, in, true); }
void s_cbranch_scc0(Wave& w, const Inst& in) { branch_if(w, in, !w.scc); }
void s_cbranch_scc1(Wave& w, const Inst& in) { branch_if(w, in, w.scc); }
void s_cbranch_vccz(Wave& w, const Inst& in) { branch_if(w, in, w.vcc() == 0); }
void s_cbranch_vccnz(Wave& w, const Inst& in) { branch_if(w, in, w.vcc() != 0); }
void s_cbranch_execz(Wave& w, const Inst& in) { branch_if(w, in, w.exec() == 0); }
void s_cbranch_execnz(Wave& w, const Inst& in) { branch_if(w, in, w.exec() != 0); }
void s_endpgm(Wave& w, const Inst&) { w.state = Wave::State::Ended; }
void s_barrier(Wave& w, const Inst&) { w.state = Wave::State::Barrier; }
void nothing(Wave&, const Inst&) {}
void s_trap(Wave&, const Inst&) {
  throw WaveFault{Fault::Kind::Illegal, "the kernel trapped (s_trap: an abort, assertion or __builtin_trap in the kernel)", 0, Access::Read, ""};
}
void s_code_end(Wave&, const Inst&) {
  throw WaveFault{Fault::Kind::Illegal, "execution ran past the end of the kernel into its s_code_end padding", 0, Access::Read, ""};
}
void s_denorm_mode(Wave& w, const Inst& in) { set_mode(w, (w.mode & ~0xf0u) | (uimm(in) & 15) << 4); }
void s_round_mode(Wave& w, const Inst& in) { set_mode(w, (w.mode & ~0xfu) | (uimm(in) & 15)); }
void s_setpc(Wave& w, const Inst& in) { w.pc = scalar_src(w, in, 0); }
void s_swappc(Wave& w, const Inst& in) {
  uint64_t target = scalar_src(w, in, 0);
  w.write_sgpr64(in.dst, w.pc);
  w.pc = target;
}
void s_getpc(Wave& w, const Inst& in) { w.write_sgpr64(in.dst, w.pc); }
void s_call(Wave& w, const Inst& in) {
  w.write_sgpr64(in.dst, w.pc);
  w.pc += static_cast<int64_t>(in.imm) * 4;
}

// Saves EXEC into the destination, then sets EXEC from S0 and the old EXEC; SCC = EXEC != 0.
template <auto F>
void saveexec(Wave& w, const Inst& in) {
  uint32_t old = w.exec(), s0 = u32(scalar_src(w, in, 0));
  uint32_t e = F(s0, old);
  w.write_sgpr(kExec, e);
  w.write_sgpr(in.dst, old);
  w.scc = e != 0;
}
#define SX(...) ([](uint32_t s, uint32_t e) -> uint32_t { return __VA_ARGS__; })

// S_AND_NOT{0,1}_WREXEC: EXEC = ~S0 & EXEC (not0) or S0 & ~EXEC (not1); the new EXEC also goes to the destination.
template <bool Not1>
void wrexec(Wave& w, const Inst& in) {
  const uint32_t s0 = u32(scalar_src(w, in, 0)), e = w.exec();
  const uint32_t n = Not1 ? s0 & ~e : ~s0 & e;
  w.write_sgpr(kExec, n);
  w.write_sgpr(in.dst, n);
  w.scc = n != 0;
}

// M0-relative SGPR indexing. An index past s105 reads s0 and writes nothing, as the ISA defines out-of-range
// S_MOVREL operands. The source address is the raw operand code of S0.
constexpr uint64_t kSgprFile = 106;
bool sgpr_in_range(uint64_t addr, int words) { return addr + static_cast<uint64_t>(words) <= kSgprFile; }
template <int Words>
void s_movrels(Wave& w, const Inst& in) {
  uint64_t addr = uint64_t{in.src_reg[0]} + w.s[kM0];
  if (!sgpr_in_range(addr, Words)) addr = 0;
  if (Words == 2) w.write_sgpr64(in.dst, w.sgpr64(static_cast<uint16_t>(addr)));
  else w.write_sgpr(in.dst, w.s[addr]);
}
template <int Words>
void s_movreld(Wave& w, const Inst& in) {
  const uint64_t value = scalar_src(w, in, 0), addr = uint64_t{in.dst} + w.s[kM0];
  if (!sgpr_in_range(addr, Words)) return;
  for (int i = 0; i < Words; ++i) w.s[addr + static_cast<uint64_t>(i)] = static_cast<uint32_t>(value >> (32 * i));
}
// S_MOVRELSD_2_B32: source indexed by M0[9:0], destination by M0[25:16].
void s_movrelsd_2(Wave& w, const Inst& in) {
  uint64_t from = uint64_t{in.src_reg[0]} + (w.s[kM0] & 0x3ff);
  const uint64_t to = uint64_t{in.dst} + (w.s[kM0] >> 16 & 0x3ff);
  if (!sgpr_in_range(from, 1)) from = 0;
  if (sgpr_in_range(to, 1)) w.s[to] = w.s[from];
}

// --- scalar memory -------------------------------------------------------------------------------

void s_load(Wave& w, const Inst& in) {
  const uint64_t addr = (w.sgpr64(in.src_reg[0]) + static_cast<int64_t>(in.imm) + (in.saddr != kNull ? w.s[in.saddr & 127] : 0)) & ~uint64_t{3};
  const uint32_t n = in.op->mem_bytes;
  const uint8_t* p = w.translate(addr, n, Access::Read, "global (scalar load)");
  for (uint32_t i = 0; i < n / 4; ++i) {
    uint32_t v;
    std::memcpy(&v, p + 4 * i, 4);
    w.write_sgpr(static_cast<uint16_t>(in.dst + i), v);
  }
}
OpDef smem(std::string_view name, uint8_t bytes) { return OpDef{name, s_load, nullptr, None, {None, None, None}, op_flag::kLoad, bytes}; }
OpDef flow(std::string_view name, Handler h) { return OpDef{name, h, nullptr, None, {None, None, None}, 0, 0}; }

template <class T>
bool cmp(int p, T a, T b) {
  switch (p) {
    case 0: return a == b;
    case 1: return a != b;
    case 2: return a > b;
    case 3: return a >= b;
    case 4: return a < b;
    default: return a <= b;
  }
}

std::vector<OpDef> build() {
  return {
    // SOP2
    sop<SL(uint64_t r = uint64_t{u32(a)} + u32(b); w.scc = r >> 32; return u32(r);)>("s_add_u32", B32, B32, B32),
        sop<SL(w.scc = u32(b) > u32(a); return u32(a - b);)>("s_sub_u32", B32, B32, B32),
        sop<SL(int32_t r = static_cast<int32_t>(u32(a + b)); w.scc = add_overflows(s32(a), s32(b), r); return u32(r);)>("s_add_i32", B32, B32, B32),
        sop<SL(int32_t r = static_cast<int32_t>(u32(a - b)); w.scc = ((s32(a) >= 0) != (s32(b) >= 0)) && ((r >= 0) != (s32(a) >= 0));
               return u32(r);)>("s_sub_i32", B32, B32, B32),
        sop<SL(uint64_t r = uint64_t{u32(a)} + u32(b) + w.scc; w.scc = r >> 32; return u32(r);)>("s_addc_u32", B32, B32, B32),
        sop<SL(uint64_t sub = uint64_t{u32(b)} + w.scc; w.scc = sub > u32(a); return u32(u32(a) - sub);)>("s_subb_u32", B32, B32, B32),
        sop<SL(int32_t d = static_cast<int32_t>(u32(a) - u32(b)); return nz(w, d < 0 ? 0u - u32(d) : u32(d));)>("s_absdiff_i32", B32, B32, B32),
        sop<SL(return nz(w, u32(u32(a) << (b & 31)));)>("s_lshl_b32", B32, B32, B32),
        sop<SL(return nz(w, a << (b & 63));)>("s_lshl_b64", B64, B64, B32), sop<SL(return nz(w, u32(a) >> (b & 31));)>("s_lshr_b32", B32, B32, B32),
        sop<SL(return nz(w, a >> (b & 63));)>("s_lshr_b64", B64, B64, B32),
        sop<SL(return nz(w, u32(s32(a) >> (b & 31)));)>("s_ashr_i32", B32, B32, B32),
        sop<SL(return nz(w, static_cast<uint64_t>(static_cast<int64_t>(a) >> (b & 63)));)>("s_ashr_i64", B64, B64, B32),
        sop<lshl_add<1>>("s_lshl1_add_u32", B32, B32, B32), sop<lshl_add<2>>("s_lshl2_add_u32", B32, B32, B32),
        sop<lshl_add<3>>("s_lshl3_add_u32", B32, B32, B32), sop<lshl_add<4>>("s_lshl4_add_u32", B32, B32, B32),
        sop<SL(w.scc = s32(a) < s32(b); return w.scc ? a : b;)>("s_min_i32", B32, B32, B32),
        sop<SL(w.scc = u32(a) < u32(b); return w.scc ? a : b;)>("s_min_u32", B32, B32, B32),
        sop<SL(w.scc = s32(a) > s32(b); return w.scc ? a : b;)>("s_max_i32", B32, B32, B32),
        sop<SL(w.scc = u32(a) > u32(b); return w.scc ? a : b;)>("s_max_u32", B32, B32, B32),
        sop<SL(return nz(w, a & b);)>("s_and_b32", B32, B32, B32), sop<SL(return nz(w, a & b);)>("s_and_b64", B64, B64, B64),
        sop<SL(return nz(w, a | b);)>("s_or_b32", B32, B32, B32), sop<SL(return nz(w, a | b);)>("s_or_b64", B64, B64, B64),
        sop<SL(return nz(w, a ^ b);)>("s_xor_b32", B32, B32, B32), sop<SL(return nz(w, a ^ b);)>("s_xor_b64", B64, B64, B64),
        sop<SL(return nz(w, u32(~(a & b)));)>("s_nand_b32", B32, B32, B32), sop<SL(return nz(w, ~(a & b));)>("s_nand_b64", B64, B64, B64),
        sop<SL(return nz(w, u32(~(a | b)));)>("s_nor_b32", B32, B32, B32), sop<SL(return nz(w, ~(a | b));)>("s_nor_b64", B64, B64, B64),
        sop<SL(return nz(w, u32(~(a ^ b)));)>("s_xnor_b32", B32, B32, B32), sop<SL(return nz(w, ~(a ^ b));)>("s_xnor_b64", B64, B64, B64),
        sop<SL(return nz(w, u32(a & ~b));)>("s_and_not1_b32", B32, B32, B32), sop<SL(return nz(w, a & ~b);)>("s_and_not1_b64", B64, B64, B64),
        sop<SL(return nz(w, u32(a | ~b));)>("s_or_not1_b32", B32, B32, B32), sop<SL(return nz(w, a | ~b);)>("s_or_not1_b64", B64, B64, B64),
        sop<SL(return w.scc ? a : b;)>("s_cselect_b32", B32, B32, B32), sop<SL(return w.scc ? a : b;)>("s_cselect_b64", B64, B64, B64),
        sop<SL(return u32(((uint64_t{1} << (a & 31)) - 1) << (b & 31));)>("s_bfm_b32", B32, B32, B32),
        sop<SL(return (a & 63) == 0 ? 0 : (((a & 63) == 64 ? ~uint64_t{0} : (uint64_t{1} << (a & 63)) - 1) << (b & 63));)>("s_bfm_b64", B64, B32,
                                                                                                                           B32),
        sop<SL(return u32(a * b);)>("s_mul_i32", B32, B32, B32), sop<SL(return (uint64_t{u32(a)} * u32(b)) >> 32;)>("s_mul_hi_u32", B32, B32, B32),
        sop<SL(return u32(static_cast<uint64_t>(int64_t{s32(a)} * s32(b)) >> 32);)>("s_mul_hi_i32", B32, B32, B32),
        sop<SL(uint32_t off = b & 31, width = b >> 16 & 127; uint32_t r = width >= 32 ? u32(a) >> off : (u32(a) >> off) & ((1u << width) - 1);
               return nz(w, r);)>("s_bfe_u32", B32, B32, B32),
        sop<SL(uint32_t off = b & 31, width = b >> 16 & 127; if (width == 0) return nz(w, 0); if (width > 32) width = 32;
               return nz(w, u32(static_cast<int32_t>((u32(a) >> off) << (32 - width)) >> (32 - width)));)>("s_bfe_i32", B32, B32, B32),
        sop<SL(uint32_t off = b & 63, width = b >> 16 & 127; uint64_t r = width >= 64 ? a >> off : (a >> off) & ((uint64_t{1} << width) - 1);
               return nz(w, r);)>("s_bfe_u64", B64, B64, B32),
        sop<SL(uint32_t off = b & 63, width = b >> 16 & 127; if (width == 0) return nz(w, 0); if (width > 64) width = 64;
               return nz(w, static_cast<uint64_t>(static_cast<int64_t>((a >> off) << (64 - width)) >> (64 - width)));)>("s_bfe_i64", B64, B64, B32),
        sop<SL(return (a & 0xffff) | (b & 0xffff) << 16;)>("s_pack_ll_b32_b16", B32, B32, B32),
        sop<SL(return (a & 0xffff) | (b & 0xffff0000u);)>("s_pack_lh_b32_b16", B32, B32, B32),
        sop<SL(return (a >> 16 & 0xffff) | (b & 0xffff0000u);)>("s_pack_hh_b32_b16", B32, B32, B32),
        sop<SL(return (a >> 16 & 0xffff) | (b & 0xffff) << 16;)>("s_pack_hl_b32_b16", B32, B32, B32),
        // SOP1
        sop<SL(return a;)>("s_mov_b32", B32, B32), sop<SL(return a;)>("s_mov_b64", B64, B64),
        sop<SL(return w.scc ? a : w.s[in.dst & 127];)>("s_cmov_b32", B32, B32), sop<SL(return w.scc ? a : w.sgpr64(in.dst);)>("s_cmov_b64", B64, B64),
        sop<SL(return nz(w, u32(~a));)>("s_not_b32", B32, B32), sop<SL(return nz(w, ~a);)>("s_not_b64", B64, B64),
        sop<SL(return reverse_bits(u32(a));)>("s_brev_b32", B32, B32), sop<SL(return reverse_bits(a);)>("s_brev_b64", B64, B64),
        sop<SL(return nz(w, u32(64 - std::popcount(a)));)>("s_bcnt0_i32_b64", B32, B64),
        sop<SL(return nz(w, u32(32 - std::popcount(u32(a))));)>("s_bcnt0_i32_b32", B32, B32),
        sop<SL(return nz(w, u32(std::popcount(u32(a))));)>("s_bcnt1_i32_b32", B32, B32),
        sop<SL(return nz(w, u32(std::popcount(a)));)>("s_bcnt1_i32_b64", B32, B64),
        sop<SL(return a ? u32(std::countr_zero(u32(a))) : 0xffffffffu;)>("s_ctz_i32_b32", B32, B32),
        sop<SL(return a ? u32(std::countr_zero(a)) : 0xffffffffu;)>("s_ctz_i32_b64", B32, B64),
        sop<SL(return a ? u32(std::countl_zero(u32(a))) : 0xffffffffu;)>("s_clz_i32_u32", B32, B32),
        sop<SL(return a ? u32(std::countl_zero(a)) : 0xffffffffu;)>("s_clz_i32_u64", B32, B64),
        sop<SL(return count_sign_bits(s32(a));)>("s_cls_i32", B32, B32),
        sop<SL(return count_sign_bits(static_cast<int64_t>(a));)>("s_cls_i32_i64", B32, B64),
        sop<SL(return u32(static_cast<int32_t>(static_cast<int8_t>(a)));)>("s_sext_i32_i8", B32, B32),
        sop<SL(return u32(static_cast<int32_t>(static_cast<int16_t>(a)));)>("s_sext_i32_i16", B32, B32),
        sop<SL(return w.s[in.dst & 127] & ~(1u << (a & 31));)>("s_bitset0_b32", B32, B32),
        sop<SL(return w.s[in.dst & 127] | (1u << (a & 31));)>("s_bitset1_b32", B32, B32),
        sop<SL(return w.sgpr64(in.dst) & ~(uint64_t{1} << (a & 63));)>("s_bitset0_b64", B64, B32),
        sop<SL(return w.sgpr64(in.dst) | uint64_t{1} << (a & 63);)>("s_bitset1_b64", B64, B32),
        sop<SL(uint64_t r = 0; for (int i = 0; i < 32; ++i) r |= uint64_t{(a >> i & 1) * 3u} << (2 * i); return r;)>("s_bitreplicate_b64_b32", B64,
                                                                                                                     B32),
        sop<SL(return nz(w, quadmask(u32(a), 8));)>("s_quadmask_b32", B32, B32), sop<SL(return nz(w, quadmask(a, 16));)>("s_quadmask_b64", B64, B64),
        sop<SL(return nz(w, whole_quads(u32(a), 8));)>("s_wqm_b32", B32, B32), sop<SL(return nz(w, whole_quads(a, 16));)>("s_wqm_b64", B64, B64),
        sop<SL(int32_t x = s32(a); return nz(w, u32(x < 0 ? 0u - u32(x) : u32(x)));)>("s_abs_i32", B32, B32),
        OpDef{"s_getpc_b64", s_getpc, nullptr, B64, {None, None, None}, 0, 0}, OpDef{"s_setpc_b64", s_setpc, nullptr, None, {B64, None, None}, 0, 0},
        OpDef{"s_swappc_b64", s_swappc, nullptr, B64, {B64, None, None}, 0, 0},
        OpDef{"s_and_saveexec_b32", saveexec<SX(s & e)>, nullptr, B32, {B32, None, None}, 0, 0},
        OpDef{"s_or_saveexec_b32", saveexec<SX(s | e)>, nullptr, B32, {B32, None, None}, 0, 0},
        OpDef{"s_xor_saveexec_b32", saveexec<SX(s ^ e)>, nullptr, B32, {B32, None, None}, 0, 0},
        OpDef{"s_nand_saveexec_b32", saveexec<SX(~(s & e))>, nullptr, B32, {B32, None, None}, 0, 0},
        OpDef{"s_nor_saveexec_b32", saveexec<SX(~(s | e))>, nullptr, B32, {B32, None, None}, 0, 0},
        OpDef{"s_xnor_saveexec_b32", saveexec<SX(~(s ^ e))>, nullptr, B32, {B32, None, None}, 0, 0},
        OpDef{"s_and_not0_saveexec_b32", saveexec<SX(~s & e)>, nullptr, B32, {B32, None, None}, 0, 0},
        OpDef{"s_or_not0_saveexec_b32", saveexec<SX(~s | e)>, nullptr, B32, {B32, None, None}, 0, 0},
        OpDef{"s_and_not1_saveexec_b32", saveexec<SX(s & ~e)>, nullptr, B32, {B32, None, None}, 0, 0},
        OpDef{"s_or_not1_saveexec_b32", saveexec<SX(s | ~e)>, nullptr, B32, {B32, None, None}, 0, 0},
        OpDef{"s_and_not0_wrexec_b32", wrexec<false>, nullptr, B32, {B32, None, None}, 0, 0},
        OpDef{"s_and_not1_wrexec_b32", wrexec<true>, nullptr, B32, {B32, None, None}, 0, 0},
        OpDef{"s_movrels_b32", s_movrels<1>, nullptr, B32, {B32, None, None}, 0, 0},
        OpDef{"s_movrels_b64", s_movrels<2>, nullptr, B64, {B64, None, None}, 0, 0},
        OpDef{"s_movreld_b32", s_movreld<1>, nullptr, B32, {B32, None, None}, 0, 0},
        OpDef{"s_movreld_b64", s_movreld<2>, nullptr, B64, {B64, None, None}, 0, 0},
        OpDef{"s_movrelsd_2_b32", s_movrelsd_2, nullptr, B32, {B32, None, None}, 0, 0},
        // SOPC
        sop<SL(w.scc = cmp(0, s32(a), s32(b)); return 0;)>("s_cmp_eq_i32", None, B32, B32),
        sop<SL(w.scc = cmp(1, s32(a), s32(b)); return 0;)>("s_cmp_lg_i32", None, B32, B32),
        sop<SL(w.scc = cmp(2, s32(a), s32(b)); return 0;)>("s_cmp_gt_i32", None, B32, B32),
        sop<SL(w.scc = cmp(3, s32(a), s32(b)); return 0;)>("s_cmp_ge_i32", None, B32, B32),
        sop<SL(w.scc = cmp(4, s32(a), s32(b)); return 0;)>("s_cmp_lt_i32", None, B32, B32),
        sop<SL(w.scc = cmp(5, s32(a), s32(b)); return 0;)>("s_cmp_le_i32", None, B32, B32),
        sop<SL(w.scc = cmp(0, u32(a), u32(b)); return 0;)>("s_cmp_eq_u32", None, B32, B32),
        sop<SL(w.scc = cmp(1, u32(a), u32(b)); return 0;)>("s_cmp_lg_u32", None, B32, B32),
        sop<SL(w.scc = cmp(2, u32(a), u32(b)); return 0;)>("s_cmp_gt_u32", None, B32, B32),
        sop<SL(w.scc = cmp(3, u32(a), u32(b)); return 0;)>("s_cmp_ge_u32", None, B32, B32),
        sop<SL(w.scc = cmp(4, u32(a), u32(b)); return 0;)>("s_cmp_lt_u32", None, B32, B32),
        sop<SL(w.scc = cmp(5, u32(a), u32(b)); return 0;)>("s_cmp_le_u32", None, B32, B32),
        sop<SL(w.scc = a == b; return 0;)>("s_cmp_eq_u64", None, B64, B64), sop<SL(w.scc = a != b; return 0;)>("s_cmp_lg_u64", None, B64, B64),
        sop<SL(w.scc = !(u32(a) >> (b & 31) & 1); return 0;)>("s_bitcmp0_b32", None, B32, B32),
        sop<SL(w.scc = u32(a) >> (b & 31) & 1; return 0;)>("s_bitcmp1_b32", None, B32, B32),
        sop<SL(w.scc = !(a >> (b & 63) & 1); return 0;)>("s_bitcmp0_b64", None, B64, B32),
        sop<SL(w.scc = a >> (b & 63) & 1; return 0;)>("s_bitcmp1_b64", None, B64, B32),
        // SOPK: the immediate is in.imm; read-modify-write ops read the destination
        sop<SL(return u32(simm(in));)>("s_movk_i32", B32), sop<SL(return w.scc ? u32(simm(in)) : w.s[in.dst & 127];)>("s_cmovk_i32", B32),
        sop<SL(w.scc = cmp(0, s32(w.s[in.dst & 127]), simm(in)); return 0;)>("s_cmpk_eq_i32", None),
        sop<SL(w.scc = cmp(1, s32(w.s[in.dst & 127]), simm(in)); return 0;)>("s_cmpk_lg_i32", None),
        sop<SL(w.scc = cmp(2, s32(w.s[in.dst & 127]), simm(in)); return 0;)>("s_cmpk_gt_i32", None),
        sop<SL(w.scc = cmp(3, s32(w.s[in.dst & 127]), simm(in)); return 0;)>("s_cmpk_ge_i32", None),
        sop<SL(w.scc = cmp(4, s32(w.s[in.dst & 127]), simm(in)); return 0;)>("s_cmpk_lt_i32", None),
        sop<SL(w.scc = cmp(5, s32(w.s[in.dst & 127]), simm(in)); return 0;)>("s_cmpk_le_i32", None),
        sop<SL(w.scc = cmp(0, w.s[in.dst & 127], uimm(in)); return 0;)>("s_cmpk_eq_u32", None),
        sop<SL(w.scc = cmp(1, w.s[in.dst & 127], uimm(in)); return 0;)>("s_cmpk_lg_u32", None),
        sop<SL(w.scc = cmp(2, w.s[in.dst & 127], uimm(in)); return 0;)>("s_cmpk_gt_u32", None),
        sop<SL(w.scc = cmp(3, w.s[in.dst & 127], uimm(in)); return 0;)>("s_cmpk_ge_u32", None),
        sop<SL(w.scc = cmp(4, w.s[in.dst & 127], uimm(in)); return 0;)>("s_cmpk_lt_u32", None),
        sop<SL(w.scc = cmp(5, w.s[in.dst & 127], uimm(in)); return 0;)>("s_cmpk_le_u32", None),
        sop<SL(int32_t d = s32(w.s[in.dst & 127]); int32_t r = static_cast<int32_t>(u32(d) + u32(simm(in))); w.scc = add_overflows(d, simm(in), r);
               return u32(r);)>("s_addk_i32", B32),
        sop<SL(return u32(w.s[in.dst & 127] * u32(simm(in)));)>("s_mulk_i32", B32), sop<getreg>("s_getreg_b32", B32),
        OpDef{"s_setreg_b32", setreg, nullptr, None, {B32, None, None}, 0, 0},
        OpDef{"s_setreg_imm32_b32", setreg_imm32, nullptr, None, {None, None, None}, 0, 0},
        OpDef{"s_call_b64", s_call, nullptr, B64, {None, None, None}, 0, 0}, flow("s_waitcnt_vscnt", nothing), flow("s_waitcnt_vmcnt", nothing),
        flow("s_waitcnt_expcnt", nothing), flow("s_waitcnt_lgkmcnt", nothing), flow("s_version", nothing),
        // SOPP. Memory operations complete before the next instruction, so waits and hints have nothing to do.
        flow("s_nop", nothing), flow("s_waitcnt", nothing), flow("s_delay_alu", nothing), flow("s_clause", nothing),
        flow("s_waitcnt_depctr", nothing), flow("s_sleep", nothing), flow("s_setprio", nothing), flow("s_icache_inv", nothing),
        flow("s_set_inst_prefetch_distance", nothing), flow("s_sendmsg", nothing), flow("s_ttracedata", nothing), flow("s_ttracedata_imm", nothing),
        flow("s_wait_idle", nothing), flow("s_wait_event", nothing), flow("s_endpgm", s_endpgm), flow("s_endpgm_saved", s_endpgm),
        flow("s_barrier", s_barrier), flow("s_trap", s_trap), flow("s_code_end", s_code_end), flow("s_branch", s_branch),
        flow("s_cbranch_scc0", s_cbranch_scc0), flow("s_cbranch_scc1", s_cbranch_scc1), flow("s_cbranch_vccz", s_cbranch_vccz),
        flow("s_cbranch_vccnz", s_cbranch_vccnz), flow("s_cbranch_execz", s_cbranch_execz), flow("s_cbranch_execnz", s_cbranch_execnz),
        flow("s_denorm_mode", s_denorm_mode), flow("s_round_mode", s_round_mode),
        // SMEM
        smem("s_load_b32", 4), smem("s_load_b64", 8), smem("s_load_b128", 16), smem("s_load_b256", 32), smem("s_load_b512", 64),
        flow("s_dcache_inv", nothing), flow("s_gl1_inv", nothing),
  };
}

}  // namespace

void init_mode(Wave& w, uint32_t rsrc1) {
  const uint32_t round = hw::amd::rsrc1::kFloatRound32.get(rsrc1) | hw::amd::rsrc1::kFloatRound1664.get(rsrc1) << 2;
  const uint32_t denorm = hw::amd::rsrc1::kFloatDenorm32.get(rsrc1) | hw::amd::rsrc1::kFloatDenorm1664.get(rsrc1) << 2;
  set_mode(w, round | denorm << 4 | hw::amd::rsrc1::kDx10Clamp.get(rsrc1) << 8 | hw::amd::rsrc1::kIeeeMode.get(rsrc1) << 9);
}

std::span<const OpDef> scalar_ops() {
  static const std::vector<OpDef> ops = build();
  return ops;
}

}  // namespace ugpu::emu::amd
