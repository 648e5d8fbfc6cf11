// Vector ALU semantics (VOP1, VOP2, VOPC, VOP3, VOP3SD, VOP3P): one lane function per op, following
// the RDNA3 ISA reference's definitions — IEEE min/max, saturating conversions, shift amounts masked
// to the operand width, carries as lane masks.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <deque>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "emu/amd/rdna3/ops.h"
#include "emu/amd/rdna3/valu.h"

namespace ugpu::emu::amd {
namespace {

using enum Ty;
namespace fl = op_flag;

#define LANE(...)                                                                   \
  ([](uint64_t A, uint64_t B, uint64_t C, bool& flag, const Inst& in) -> uint64_t { \
    (void)A, (void)B, (void)C, (void)flag, (void)in;                                \
    __VA_ARGS__                                                                     \
  })

template <auto F>
OpDef vop(std::string_view name, Ty d, Ty s0, Ty s1 = None, Ty s2 = None, uint16_t flags = 0) {
  return OpDef{name, valu<F>, valu_compute<F>, d, {s0, s1, s2}, flags, 0};
}

template <class T>
T quiet(T x) {
  return x + x;
}
// IEEE-754 maxNum/minNum as the ISA defines them in IEEE mode: a NaN operand yields the other one;
// +0 is larger than -0.
template <class T>
T fmax_ieee(T a, T b) {
  if (std::isnan(a)) return std::isnan(b) ? quiet(a) : b;
  if (std::isnan(b)) return a;
  if (a == b) return std::signbit(a) ? b : a;
  return a > b ? a : b;
}
template <class T>
T fmin_ieee(T a, T b) {
  if (std::isnan(a)) return std::isnan(b) ? quiet(a) : b;
  if (std::isnan(b)) return a;
  if (a == b) return std::signbit(a) ? a : b;
  return a < b ? a : b;
}
template <class T>
T fmed3(T a, T b, T c) {
  if (std::isnan(a) || std::isnan(b) || std::isnan(c)) return fmin_ieee(fmin_ieee(a, b), c);
  return fmax_ieee(fmin_ieee(a, b), fmin_ieee(fmax_ieee(a, b), c));
}

// Float to integer: toward zero, saturating, NaN to 0.
template <class I, class F>
I to_int(F x) {
  if (std::isnan(x)) return 0;
  if (x <= static_cast<F>(std::numeric_limits<I>::min())) return std::numeric_limits<I>::min();
  if (x >= static_cast<F>(std::numeric_limits<I>::max())) return std::numeric_limits<I>::max();
  return static_cast<I>(x);
}

int32_t s32(uint64_t x) { return static_cast<int32_t>(static_cast<uint32_t>(x)); }
uint32_t u32(uint64_t x) { return static_cast<uint32_t>(x); }
int16_t s16(uint64_t x) { return static_cast<int16_t>(static_cast<uint16_t>(x)); }
int32_t sext24(uint64_t x) { return static_cast<int32_t>(static_cast<uint32_t>(x) << 8) >> 8; }
uint64_t sat_u32(uint64_t v, bool clamp) { return clamp && v > 0xffffffffu ? 0xffffffffu : u32(v); }
// 16-bit add or subtract, wrapping, or saturating when the instruction's clamp bit is set.
uint64_t add16(uint64_t a, uint64_t b, bool is_signed, bool clamp, bool sub = false) {
  if (is_signed) {
    int32_t r = sub ? int32_t{static_cast<int16_t>(a)} - static_cast<int16_t>(b) : int32_t{static_cast<int16_t>(a)} + static_cast<int16_t>(b);
    if (clamp) r = std::clamp(r, -32768, 32767);
    return static_cast<uint16_t>(r);
  }
  int32_t r = sub ? static_cast<int32_t>(a & 0xffff) - static_cast<int32_t>(b & 0xffff) : static_cast<int32_t>((a & 0xffff) + (b & 0xffff));
  if (clamp) r = std::clamp(r, 0, 65535);
  return static_cast<uint16_t>(r);
}

template <class T>
int frexp_exp(T x) {
  if (std::isnan(x) || std::isinf(x)) return 0;
  int e = 0;
  std::frexp(x, &e);
  return e;
}
template <class T>
T frexp_mant(T x) {
  if (std::isnan(x) || std::isinf(x)) return x;
  int e = 0;
  return std::frexp(x, &e);
}
template <class T>
T fract(T x) {
  if (std::isnan(x)) return quiet(x);
  if (std::isinf(x)) return std::numeric_limits<T>::quiet_NaN();
  return std::fmin(x - std::floor(x), std::nextafter(T(1), T(0)));
}
// sin/cos of a value given in revolutions (the hardware multiplies by 2*pi).
double revolutions(double x) { return (x - std::nearbyint(x)) * 2.0 * 3.14159265358979323846; }

template <class T>
int exponent_of(T x) {  // the biased exponent field
  if constexpr (sizeof(T) == 4) return static_cast<int>(std::bit_cast<uint32_t>(x) >> 23 & 0xff);
  else return static_cast<int>(std::bit_cast<uint64_t>(x) >> 52 & 0x7ff);
}
template <class T>
bool is_denorm(T x) {
  return std::fpclassify(x) == FP_SUBNORMAL;
}
// Whether n / d, exactly, is nonzero but below the smallest normal number of T (it would come out
// denormal or flush to zero).
template <class T>
bool quotient_below_normal(T n, T d) {
  long double q = std::fabs(static_cast<long double>(n) / static_cast<long double>(d));
  return n != 0 && q < static_cast<long double>(std::numeric_limits<T>::min());
}

// V_DIV_SCALE: scales the numerator or denominator of a division by 2^(+-64) (2^(+-128) for f64) so
// the reciprocal iteration stays in range; VCC tells V_DIV_FMAS to undo it. S0 is the value to scale,
// S1 the denominator, S2 the numerator.
template <class T>
T div_scale(T s0, T s1, T s2, bool& vcc) {
  constexpr int kScale = sizeof(T) == 4 ? 64 : 128, kTiny = sizeof(T) == 4 ? 23 : 53, kNear = sizeof(T) == 4 ? 96 : 768;
  vcc = false;
  if (s2 == 0 || s1 == 0) return std::numeric_limits<T>::quiet_NaN();
  if (exponent_of(s2) - exponent_of(s1) >= kNear) {  // quotient near the largest finite value
    vcc = true;
    return s0 == s1 ? std::ldexp(s0, kScale) : s0;
  }
  if (is_denorm(s1)) return std::ldexp(s0, kScale);
  // The ISA asks whether 1/S1 is denormal in f64 even for f32, which never holds for f32.
  const bool rcp_denorm = sizeof(T) == 8 && quotient_below_normal(T(1), s1);
  if (rcp_denorm && quotient_below_normal(s2, s1)) {
    // The reference's pseudocode scales the denominator up here, which overflows a denominator
    // above 2^1022 (the only kind whose reciprocal is denormal) to infinity. The hardware scales it
    // down, which makes the quotient 2^128 larger and normal; VCC has V_DIV_FMAS scale it back (for a
    // numerator below 2: 1 / 6.9e307 comes out as the denormal 1.44e-308, as LLVM's sequence expects).
    vcc = true;
    return s0 == s1 ? std::ldexp(s0, -kScale) : s0;
  }
  if (rcp_denorm) return std::ldexp(s0, -kScale);
  if (quotient_below_normal(s2, s1)) {
    vcc = true;
    return s0 == s2 ? std::ldexp(s0, kScale) : s0;
  }
  if (exponent_of(s2) <= kTiny) return std::ldexp(s0, kScale);  // tiny numerator
  return s0;
}
// V_DIV_FMAS: fma, then (with VCC) the scale V_DIV_SCALE applied taken back. The hardware rounds
// once, after the scale: a quotient that ends up denormal is not rounded twice. Here the fma is
// computed in a wider type (the product exactly; float64 in 128-bit floats), scaled exactly, and
// rounded once to T.
template <class T>
T div_fmas(T a, T b, T c, bool vcc) {
  constexpr int kScale = sizeof(T) == 4 ? 64 : 128, kBias = sizeof(T) == 4 ? 127 : 1023;
  if (!vcc) return std::fma(a, b, c);
  using Wide = std::conditional_t<sizeof(T) == 4, double, __float128>;
  if (!std::isfinite(a) || !std::isfinite(b) || !std::isfinite(c)) return std::ldexp(std::fma(a, b, c), exponent_of(c) > kBias ? kScale : -kScale);
  Wide r = static_cast<Wide>(a) * static_cast<Wide>(b) + static_cast<Wide>(c);
  Wide scale = 1;
  for (int i = 0; i < kScale; ++i) scale *= 2;
  return static_cast<T>(exponent_of(c) > kBias ? r * scale : r / scale);
}
// V_DIV_FIXUP: the special cases of quotient S0 = S2 / S1.
template <class T>
T div_fixup(T q, T den, T num) {
  const bool neg = std::signbit(den) != std::signbit(num);
  const T inf = std::numeric_limits<T>::infinity();
  if (std::isnan(num)) return quiet(num);
  if (std::isnan(den)) return quiet(den);
  if (den == 0 && num == 0) return std::numeric_limits<T>::quiet_NaN();
  if (std::isinf(den) && std::isinf(num)) return std::numeric_limits<T>::quiet_NaN();
  if (den == 0 || std::isinf(num)) return neg ? -inf : inf;
  if (std::isinf(den) || num == 0) return neg ? T(-0.0) : T(0.0);
  if (std::isnan(q)) return neg ? -inf : inf;
  return neg ? -std::fabs(q) : std::fabs(q);
}

// V_CMP_CLASS: bit set in the S1 mask for the class of S0.
template <class T>
bool float_class(T x, uint32_t mask, bool signaling, bool denorm) {
  int bit;
  if (std::isnan(x)) bit = signaling ? 0 : 1;
  else if (std::isinf(x)) bit = std::signbit(x) ? 2 : 9;
  else if (x == 0) bit = std::signbit(x) ? 5 : 6;
  else if (denorm) bit = std::signbit(x) ? 4 : 7;
  else bit = std::signbit(x) ? 3 : 8;
  return mask >> bit & 1;
}
bool snan32(uint64_t b) { return (b & 0x7f800000u) == 0x7f800000u && (b & 0x7fffffu) && !(b & 0x400000u); }
bool snan64(uint64_t b) { return (b & 0x7ff0000000000000ull) == 0x7ff0000000000000ull && (b & 0xfffffffffffffull) && !(b & 0x8000000000000ull); }
bool snan16(uint64_t b) { return (b & 0x7c00u) == 0x7c00u && (b & 0x3ffu) && !(b & 0x200u); }

uint32_t perm_byte(uint64_t pair, uint32_t sel) {
  if (sel < 8) return static_cast<uint32_t>(pair >> (8 * sel)) & 0xff;
  if (sel == 12) return 0;
  if (sel >= 13) return 0xff;
  // 8..11: sign of byte 1, 3, 5, 7 replicated
  static constexpr int kSignByte[] = {1, 3, 5, 7};
  return (pair >> (8 * kSignByte[sel - 8] + 7) & 1) ? 0xff : 0;
}

// Integer results of the saturating (clamp) forms.
uint64_t sat_i32(int64_t v, bool clamp) {
  if (clamp) v = std::clamp<int64_t>(v, std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max());
  return u32(static_cast<uint64_t>(v));
}
uint64_t sat_i16(int32_t v, bool clamp) { return static_cast<uint16_t>(clamp ? std::clamp(v, -32768, 32767) : v); }
uint32_t absdiff(uint32_t x, uint32_t y) { return x > y ? x - y : y - x; }
// Sum of the absolute differences of the four bytes (V_SAD_U8); the masked form (V_MSAD_U8) skips the bytes
// where S1 is zero.
uint64_t sad_bytes(uint64_t a, uint64_t b, bool masked) {
  uint64_t sum = 0;
  for (int i = 0; i < 32; i += 8)
    if (!masked || (b >> i & 0xff)) sum += absdiff(a >> i & 0xff, b >> i & 0xff);
  return sum;
}
// V_LERP_U8: the per-byte average, rounded up where the byte of S2 has its low bit set.
uint64_t lerp_bytes(uint64_t a, uint64_t b, uint64_t c) {
  uint32_t r = 0;
  for (int i = 0; i < 32; i += 8) r |= u32(((a >> i & 0xff) + (b >> i & 0xff) + (c >> i & 1)) >> 1) << i;
  return r;
}
// V_SAT_PK_U8_I16: each signed half saturated to [0, 255], packed into 16 bits.
uint64_t sat_pk_u8(uint64_t a) {
  auto sat8 = [](int16_t v) { return static_cast<uint32_t>(std::clamp<int>(v, 0, 255)); };
  return sat8(s16(a)) | sat8(s16(a >> 16)) << 8;
}
// DX9 multiply rules: zero times anything (infinity and NaN included) is zero.
bool dx9_zero(uint64_t a, uint64_t b) { return f32(a) == 0.0f || f32(b) == 0.0f; }
float bf16(uint64_t h) { return f32((h & 0xffff) << 16); }
// V_DOT2ACC_F32_{F16,BF16}: D += lo * lo, then D += hi * hi, each sum rounded to f32.
template <float (*Half)(uint64_t)>
uint64_t dot2_accumulate(uint64_t a, uint64_t b, uint64_t acc) {
  float d = f32(acc);
  d += Half(a) * Half(b);
  d += Half(a >> 16) * Half(b >> 16);
  return bits_of(d);
}
// V_CVT_OFF_F32_I4: the signed 4-bit value in S0[3:0], in sixteenths.
float offset_i4(uint64_t a) { return static_cast<float>(static_cast<int>(a & 15) - (a & 8 ? 16 : 0)) / 16.0f; }
// V_MULLIT_F32: S0 * S1, or -MAX_FLOAT when S1 is -MAX_FLOAT, -inf or NaN, or S2 is not positive.
uint64_t mullit(float s0, float s1, float s2) {
  const float lowest = std::numeric_limits<float>::lowest();
  if (s1 == lowest || s1 == -std::numeric_limits<float>::infinity() || std::isnan(s1) || !(s2 > 0.0f)) return bits_of(lowest);
  return bits_of(s0 * s1);
}

// --- compares ------------------------------------------------------------------------------------

// Float predicates in the ISA's order: F LT EQ LE GT LG GE O U NGE NLG NGT NLE NEQ NLT T.
template <class T>
bool fcmp(int p, T a, T b) {
  const bool un = std::isnan(a) || std::isnan(b);
  switch (p) {
    case 0: return false;
    case 1: return a < b;
    case 2: return a == b;
    case 3: return a <= b;
    case 4: return a > b;
    case 5: return !un && a != b;
    case 6: return a >= b;
    case 7: return !un;
    case 8: return un;
    case 9: return !(a >= b);
    case 10: return !(!un && a != b);
    case 11: return !(a > b);
    case 12: return !(a <= b);
    case 13: return !(a == b);
    case 14: return !(a < b);
    default: return true;
  }
}
// Integer predicates: F LT EQ LE GT NE GE T.
template <class T>
bool icmp(int p, T a, T b) {
  switch (p) {
    case 0: return false;
    case 1: return a < b;
    case 2: return a == b;
    case 3: return a <= b;
    case 4: return a > b;
    case 5: return a != b;
    case 6: return a >= b;
    default: return true;
  }
}
template <class T>
T as(uint64_t b) {
  if constexpr (std::is_same_v<T, float>) return f32(b);
  else if constexpr (std::is_same_v<T, double>) return f64(b);
  else return static_cast<T>(b);
}
template <class T, int P, bool Float>
uint64_t cmp_lane(uint64_t a, uint64_t b, uint64_t, bool& flag, const Inst&) {
  if constexpr (Float) flag = fcmp(P, as<T>(a), as<T>(b));
  else flag = icmp(P, as<T>(a), as<T>(b));
  return 0;
}
template <int P>
uint64_t cmp_f16(uint64_t a, uint64_t b, uint64_t, bool& flag, const Inst&) {
  flag = fcmp(P, f16(a), f16(b));
  return 0;
}

template <auto F>
void add_compare(std::vector<OpDef>& out, const std::string& stem, Ty t) {
  out.push_back(OpDef{keep_name("v_cmp_" + stem), valu<F>, valu_compute<F>, Mask, {t, t, None}, fl::kCompare, 0});
  out.push_back(OpDef{keep_name("v_cmpx_" + stem), valu<F>, valu_compute<F>, Mask, {t, t, None}, fl::kCompare | fl::kCompareExec, 0});
}

template <int... P>
void float_compares(std::vector<OpDef>& out, std::integer_sequence<int, P...>) {
  static constexpr const char* kPred[] = {"f", "lt", "eq", "le", "gt", "lg", "ge", "o", "u", "nge", "nlg", "ngt", "nle", "neq", "nlt", "t"};
  (add_compare<cmp_lane<float, P, true>>(out, std::string(kPred[P]) + "_f32", F32), ...);
  (add_compare<cmp_lane<double, P, true>>(out, std::string(kPred[P]) + "_f64", F64), ...);
  (add_compare<cmp_f16<P>>(out, std::string(kPred[P]) + "_f16", F16), ...);
}
template <int... P>
void int_compares(std::vector<OpDef>& out, std::integer_sequence<int, P...>) {
  static constexpr const char* kPred[] = {"f", "lt", "eq", "le", "gt", "ne", "ge", "t"};
  (add_compare<cmp_lane<int32_t, P, false>>(out, std::string(kPred[P]) + "_i32", B32), ...);
  (add_compare<cmp_lane<uint32_t, P, false>>(out, std::string(kPred[P]) + "_u32", B32), ...);
  (add_compare<cmp_lane<int64_t, P, false>>(out, std::string(kPred[P]) + "_i64", B64), ...);
  (add_compare<cmp_lane<uint64_t, P, false>>(out, std::string(kPred[P]) + "_u64", B64), ...);
  (add_compare<cmp_lane<int16_t, P, false>>(out, std::string(kPred[P]) + "_i16", B16), ...);
  (add_compare<cmp_lane<uint16_t, P, false>>(out, std::string(kPred[P]) + "_u16", B16), ...);
}

// --- ops that look across lanes ------------------------------------------------------------------

void readfirstlane(Wave& w, const Inst& in) {
  alignas(64) uint64_t a[kLanes], d[kLanes] = {};
  fetch(w, in, 0, a);
  const uint32_t exec = w.exec();
  d[0] = a[exec ? std::countr_zero(exec) : 0];
  commit(w, in, d, 0);
}
void readlane(Wave& w, const Inst& in) {
  alignas(64) uint64_t a[kLanes], d[kLanes] = {};
  fetch(w, in, 0, a);
  d[0] = a[scalar_src(w, in, 1) & (kLanes - 1)];
  commit(w, in, d, 0);
}
void writelane(Wave& w, const Inst& in) {
  // Writes lane S1 of vdst with the scalar S0, whatever EXEC says.
  w.v[in.dst][scalar_src(w, in, 1) & (kLanes - 1)] = static_cast<uint32_t>(scalar_src(w, in, 0));
}
template <bool Hi>
void mbcnt(Wave& w, const Inst& in) {
  alignas(64) uint64_t a[kLanes], b[kLanes], d[kLanes];
  fetch(w, in, 0, a);
  fetch(w, in, 1, b);
  for (int l = 0; l < kLanes; ++l) {
    // wave32: lanes below this one are all in the low mask word; the high word counts none.
    uint32_t below = Hi ? 0 : static_cast<uint32_t>((uint64_t{1} << l) - 1);
    d[l] = u32(std::popcount(u32(a[l]) & below) + b[l]);
  }
  commit(w, in, d, 0);
}

void nop(Wave&, const Inst&) {}
void v_illegal(Wave&, const Inst&) {
  throw WaveFault{Fault::Kind::Illegal, "the kernel executed v_illegal (an all-zero dword decodes as it: did execution run into zeroed memory?)", 0,
                  Access::Read, ""};
}

// M0-relative VGPR indexing (V_MOVRELS, V_MOVRELD, V_MOVRELSD, V_MOVRELSD_2, V_SWAPREL), as the ISA defines an
// out-of-range operand: a source past the wave's VGPR allocation reads v0; a destination past it is not written.
constexpr uint32_t kOutOfRange = ~0u;
uint32_t vgpr_at(const Wave& w, uint32_t base, uint32_t index) {
  const uint64_t r = uint64_t{base} + index;
  return r < w.vgpr_count ? static_cast<uint32_t>(r) : kOutOfRange;
}
void move_lanes(Wave& w, uint32_t from, uint32_t to) {
  if (to == kOutOfRange) return;
  const uint32_t* src = w.v[from == kOutOfRange ? 0 : from];
  uint32_t tmp[kLanes];
  std::memcpy(tmp, src, sizeof tmp);
  const uint32_t exec = w.exec();
  for (int l = 0; l < kLanes; ++l)
    if (exec >> l & 1) w.v[to][l] = tmp[l];
}
uint32_t vgpr_source(const Inst& in) { return in.src_kind[0] == Src::Vgpr ? in.src_reg[0] : kOutOfRange; }
void v_movrels(Wave& w, const Inst& in) {
  const uint32_t src = vgpr_source(in);
  move_lanes(w, src == kOutOfRange ? src : vgpr_at(w, src, w.s[kM0]), vgpr_at(w, in.dst, 0));
}
void v_movreld(Wave& w, const Inst& in) {
  alignas(64) uint64_t a[kLanes];
  fetch(w, in, 0, a);
  const uint32_t to = vgpr_at(w, in.dst, w.s[kM0]), exec = w.exec();
  if (to == kOutOfRange) return;
  for (int l = 0; l < kLanes; ++l)
    if (exec >> l & 1) w.v[to][l] = static_cast<uint32_t>(a[l]);
}
template <bool Split>  // V_MOVRELSD_2: source indexed by M0[9:0], destination by M0[25:16]
void v_movrelsd(Wave& w, const Inst& in) {
  const uint32_t m0 = w.s[kM0], src = vgpr_source(in);
  move_lanes(w, src == kOutOfRange ? src : vgpr_at(w, src, Split ? m0 & 0x3ff : m0), vgpr_at(w, in.dst, Split ? m0 >> 16 & 0x3ff : m0));
}
// V_SWAPREL_B32 swaps the VGPRs at SRC0 + M0[9:0] and VDST + M0[25:16]; with either out of range nothing is written.
void v_swaprel(Wave& w, const Inst& in) {
  const uint32_t m0 = w.s[kM0], src = vgpr_source(in);
  const uint32_t a = src == kOutOfRange ? src : vgpr_at(w, src, m0 & 0x3ff), b = vgpr_at(w, in.dst, m0 >> 16 & 0x3ff);
  if (a == kOutOfRange || b == kOutOfRange) return;
  const uint32_t exec = w.exec();
  for (int l = 0; l < kLanes; ++l)
    if (exec >> l & 1) std::swap(w.v[a][l], w.v[b][l]);
}
// V_SWAP_B32 / V_SWAP_B16: exchange VDST and the VGPR SRC0 (16-bit halves as true16 names them).
void v_swap_b32(Wave& w, const Inst& in) {
  if (in.src_kind[0] != Src::Vgpr) return;
  const uint32_t exec = w.exec();
  for (int l = 0; l < kLanes; ++l)
    if (exec >> l & 1) std::swap(w.v[in.dst][l], w.v[in.src_reg[0]][l]);
}
void v_swap_b16(Wave& w, const Inst& in) {
  if (in.src_kind[0] != Src::Vgpr) return;
  const int sd = in.dst_hi ? 16 : 0, ss = in.src_hi[0] ? 16 : 0;
  const uint32_t exec = w.exec();
  for (int l = 0; l < kLanes; ++l) {
    if (!(exec >> l & 1)) continue;
    uint32_t &d = w.v[in.dst][l], &s = w.v[in.src_reg[0]][l];
    const uint32_t x = d >> sd & 0xffff, y = s >> ss & 0xffff;
    d = (d & ~(0xffffu << sd)) | y << sd;
    s = (s & ~(0xffffu << ss)) | x << ss;
  }
}

// --- VOP3P: packed 16-bit math -------------------------------------------------------------------

// Each half of the result takes, per source, the half opsel (low result) or opsel_hi (high result)
// selects, with neg (low) or neg_hi (high) applied to float sources.
// Source k of a VOP3P op as whole 32-bit registers: the op picks the halves it reads.
void fetch_packed(const Wave& w, const Inst& in, int k, uint64_t* s) {
  if (in.src_kind[k] == Src::Vgpr) {
    for (int l = 0; l < kLanes; ++l) s[l] = w.v[in.src_reg[k]][l];
    return;
  }
  const uint64_t v = in.src_kind[k] == Src::Sgpr ? w.s[in.src_reg[k] & 127] : scalar_src(w, in, k);
  for (int l = 0; l < kLanes; ++l) s[l] = v;
}

template <auto F>
void vop3p(Wave& w, const Inst& in) {
  const OpDef& op = *in.op;
  alignas(64) uint64_t s[3][kLanes] = {};
  int n = 0;
  for (int k = 0; k < 3; ++k)
    if (op.src[k] != None) n = k + 1, fetch_packed(w, in, k, s[k]);
  alignas(64) uint64_t d[kLanes];
  const bool fp = is_float(op.src[0]);
  for (int l = 0; l < kLanes; ++l) {
    uint64_t lo[3] = {}, hi[3] = {};
    for (int k = 0; k < n; ++k) {
      lo[k] = (s[k][l] >> ((in.opsel >> k & 1) * 16)) & 0xffff;
      hi[k] = (s[k][l] >> ((in.opsel_hi >> k & 1) * 16)) & 0xffff;
      if (fp) lo[k] ^= (in.neg >> k & 1) << 15, hi[k] ^= (in.neg_hi >> k & 1) << 15;
    }
    uint64_t rl = F(lo[0], lo[1], lo[2], in) & 0xffff, rh = F(hi[0], hi[1], hi[2], in) & 0xffff;
    if (in.clamp && fp) rl = clamp_float(rl, F16), rh = clamp_float(rh, F16);
    d[l] = rl | rh << 16;
  }
  commit(w, in, d, 0);
}
#define PK(...)                                                         \
  ([](uint64_t A, uint64_t B, uint64_t C, const Inst& in) -> uint64_t { \
    (void)A, (void)B, (void)C, (void)in;                                \
    __VA_ARGS__                                                         \
  })
template <auto F>
OpDef pk(std::string_view name, Ty t, int arity) {
  return OpDef{name, vop3p<F>, nullptr, B32, {t, arity > 1 ? t : None, arity > 2 ? t : None}, 0, 0};
}

// VOP3P dot products: F(S0, S1, S2, inst) over whole registers, then output clamp and the write.
template <auto F>
void vop3p_dot(Wave& w, const Inst& in) {
  alignas(64) uint64_t s[3][kLanes], d[kLanes];
  for (int k = 0; k < 3; ++k) fetch_packed(w, in, k, s[k]);
  for (int l = 0; l < kLanes; ++l) d[l] = F(s[0][l], s[1][l], s[2][l], in);
  commit(w, in, d, 0);
}
template <auto F>
OpDef dot(std::string_view name, Ty d, Ty s01, Ty s2) {
  return OpDef{name, vop3p_dot<F>, nullptr, d, {s01, s01, s2}, 0, 0};
}

// V_WMMA_F32_16X16X16_{F16,BF16} (wave32, ISA guide §7.9): D = A x B + C over 16x16 matrices.
// Each half of the wave (lanes 0-15 and 16-31) holds a copy of A and B: lane l keeps row l % 16 of
// A and column l % 16 of B in 8 registers, two 16-bit values each (k = 2r in the low half, 2r + 1 in
// the high). Element (2v + l / 16, l % 16) of C and D is lane l's register v. Each half computes its
// rows of D from its own copy, so a copy that differs gives a different result, as it would on the
// chip. The products are exact; the 16 products and C are summed in double and rounded to float
// once (the hardware's internal order is not documented: sums that are not exact can differ in the
// last bit). EXEC must be all ones.
template <float (*Half)(uint64_t)>
void wmma_f32(Wave& w, const Inst& in) {
  if (w.exec() != 0xffffffffu)
    throw WaveFault{Fault::Kind::Illegal,
                    std::string(in.op->name) + " needs EXEC all ones (it ran with " + std::to_string(__builtin_popcount(w.exec())) + " of 32 lanes)",
                    0, Access::Read, ""};
  if (in.neg || in.neg_hi || in.opsel || in.clamp || in.src_kind[0] != Src::Vgpr || in.src_kind[1] != Src::Vgpr)
    throw WaveFault{Fault::Kind::Unimplemented,
                    std::string(in.op->name) + " with neg/op_sel/clamp modifiers or non-VGPR A/B operands is not modelled", 0, Access::Read, ""};
  const uint16_t a = in.src_reg[0], b = in.src_reg[1], c = in.src_reg[2], d = in.dst;
  if (std::max({a, b, c, d}) + 8 > 256)
    throw WaveFault{Fault::Kind::Illegal, std::string(in.op->name) + ": a register range runs past v255", 0, Access::Read, ""};
  auto half = [&](uint16_t base, int lane, int k) { return Half(w.v[base + k / 2][lane] >> (k % 2 * 16)); };
  uint32_t out[8][kLanes];
  for (int l = 0; l < kLanes; ++l) {
    const int h = l / 16, col = l % 16;
    for (int v = 0; v < 8; ++v) {
      const int row = 2 * v + h;
      double sum = in.src_kind[2] == Src::Vgpr ? f32(w.v[c + v][l]) : f32(scalar_src(w, in, 2));
      for (int k = 0; k < 16; ++k) sum += double{half(a, row + 16 * h, k)} * double{half(b, col + 16 * h, k)};
      out[v][l] = static_cast<uint32_t>(bits_of(static_cast<float>(sum)));
    }
  }
  for (int v = 0; v < 8; ++v) std::memcpy(w.v[d + v], out[v], sizeof out[v]);
}
// V_DOT2_F32_{F16,BF16}: op_sel picks the halves of S0 and S1 for the low product and op_sel_hi for the high one;
// neg and neg_hi flip their signs, and neg[2] negates the f32 accumulator. tmp = lo * lo; tmp += hi * hi; tmp += S2.
template <float (*Half)(uint64_t)>
uint64_t dot2_f32(uint64_t a, uint64_t b, uint64_t c, const Inst& in) {
  auto half = [&](uint64_t x, int k, bool hi) {
    const uint64_t h = x >> (((hi ? in.opsel_hi : in.opsel) >> k & 1) * 16) & 0xffff;
    return Half(h ^ (((hi ? in.neg_hi : in.neg) >> k & 1) << 15));
  };
  float t = half(a, 0, false) * half(b, 1, false);
  t += half(a, 0, true) * half(b, 1, true);
  t += (in.neg >> 2 & 1) ? -f32(c) : f32(c);
  return bits_of(t);
}
// V_DOT4_*_8 / V_DOT8_*_4: Bits-wide lanes of S0 and S1 multiplied and summed onto S2. In the IU forms neg[0] and
// neg[1] make S0's and S1's lanes signed; clamp saturates the sum.
template <int Bits, bool Iu>
uint64_t dot_int(uint64_t a, uint64_t b, uint64_t c, const Inst& in) {
  constexpr uint64_t kMask = (uint64_t{1} << Bits) - 1;
  const bool sa = Iu && (in.neg & 1), sb = Iu && (in.neg >> 1 & 1);
  auto lane = [](uint64_t x, int i, bool is_signed) {
    const auto v = static_cast<int64_t>(x >> i & kMask);
    return is_signed && (v >> (Bits - 1)) ? v - (int64_t{1} << Bits) : v;
  };
  int64_t sum = Iu ? int64_t{s32(c)} : int64_t{u32(c)};
  for (int i = 0; i < 32; i += Bits) sum += lane(a, i, sa) * lane(b, i, sb);
  if (Iu) return sat_i32(sum, in.clamp);
  return sat_u32(static_cast<uint64_t>(sum), in.clamp);
}

// v_fma_mix*: each source is an f32, or (opsel_hi bit set) the f16 half opsel selects.
template <int Out>  // 0: f32 result, 1: f16 into the low half, 2: f16 into the high half
void fma_mix(Wave& w, const Inst& in) {
  alignas(64) uint64_t s[3][kLanes];
  for (int k = 0; k < 3; ++k) {
    if (in.src_kind[k] == Src::Vgpr)
      for (int l = 0; l < kLanes; ++l) s[k][l] = w.v[in.src_reg[k]][l];
    else {
      uint64_t v = scalar_src(w, in, k);
      for (int l = 0; l < kLanes; ++l) s[k][l] = v;
    }
  }
  alignas(64) uint64_t d[kLanes];
  for (int l = 0; l < kLanes; ++l) {
    double x[3];
    for (int k = 0; k < 3; ++k) {
      uint64_t b = s[k][l];
      double v = (in.opsel_hi >> k & 1) ? f16(b >> ((in.opsel >> k & 1) * 16)) : f32(b);
      if (in.neg_hi >> k & 1) v = std::fabs(v);  // v_fma_mix* encode abs in the NEG_HI bits
      if (in.neg >> k & 1) v = -v;
      x[k] = v;
    }
    if (Out == 0) {
      float r = std::fma(static_cast<float>(x[0]), static_cast<float>(x[1]), static_cast<float>(x[2]));
      d[l] = in.clamp ? clamp_float(bits_of(r), F32) : bits_of(r);
    } else {
      uint64_t h = bits_f16(std::fma(x[0], x[1], x[2]));
      if (in.clamp) h = clamp_float(h, F16);
      uint32_t old = w.v[in.dst][l];
      d[l] = Out == 1 ? (old & 0xffff0000u) | h : (old & 0xffffu) | h << 16;
    }
  }
  commit(w, in, d, 0);
}

std::vector<OpDef> build() {
  std::vector<OpDef> v = {
      // moves and selects
      vop<LANE(return A;)>("v_mov_b32", B32, B32, None, None, fl::kBitMods),
      vop<LANE(return A;)>("v_mov_b16", B16, B16, None, None, fl::kBitMods),
      vop<LANE(return C ? B : A;)>("v_cndmask_b32", B32, B32, B32, Mask, fl::kMaskFromVcc | fl::kBitMods),
      vop<LANE(return C ? B : A;)>("v_cndmask_b16", B16, B16, B16, Mask, fl::kBitMods),
      OpDef{"v_readfirstlane_b32", readfirstlane, nullptr, B32, {B32, None, None}, fl::kScalarDst, 0},
      OpDef{"v_readlane_b32", readlane, nullptr, B32, {B32, B32, None}, fl::kScalarDst, 0},
      OpDef{"v_writelane_b32", writelane, nullptr, B32, {B32, B32, None}, 0, 0},
      OpDef{"v_nop", nop, nullptr, None, {None, None, None}, 0, 0},
      OpDef{"v_pipeflush", nop, nullptr, None, {None, None, None}, 0, 0},
      OpDef{"v_illegal", v_illegal, nullptr, None, {None, None, None}, 0, 0},
      OpDef{"v_swap_b32", v_swap_b32, nullptr, B32, {B32, None, None}, 0, 0},
      OpDef{"v_swap_b16", v_swap_b16, nullptr, B16, {B16, None, None}, 0, 0},
      OpDef{"v_movrels_b32", v_movrels, nullptr, B32, {B32, None, None}, 0, 0},
      OpDef{"v_movreld_b32", v_movreld, nullptr, B32, {B32, None, None}, 0, 0},
      OpDef{"v_movrelsd_b32", v_movrelsd<false>, nullptr, B32, {B32, None, None}, 0, 0},
      OpDef{"v_movrelsd_2_b32", v_movrelsd<true>, nullptr, B32, {B32, None, None}, 0, 0},
      OpDef{"v_swaprel_b32", v_swaprel, nullptr, B32, {B32, None, None}, 0, 0},
      OpDef{"v_mbcnt_lo_u32_b32", mbcnt<false>, nullptr, B32, {B32, B32, None}, 0, 0},
      OpDef{"v_mbcnt_hi_u32_b32", mbcnt<true>, nullptr, B32, {B32, B32, None}, 0, 0},
      // f32 arithmetic
      vop<LANE(return bits_of(f32(A) + f32(B));)>("v_add_f32", F32, F32, F32),
      vop<LANE(return bits_of(f32(A) - f32(B));)>("v_sub_f32", F32, F32, F32),
      vop<LANE(return bits_of(f32(B) - f32(A));)>("v_subrev_f32", F32, F32, F32),
      vop<LANE(return bits_of(f32(A) * f32(B));)>("v_mul_f32", F32, F32, F32),
      vop<LANE(return bits_of(std::fma(f32(A), f32(B), f32(C)));)>("v_fma_f32", F32, F32, F32, F32),
      vop<LANE(return bits_of(std::fma(f32(A), f32(B), f32(C)));)>("v_fmac_f32", F32, F32, F32, F32, fl::kAccumulate),
      vop<LANE(return bits_of(std::fma(f32(A), f32(B), f32(C)));)>("v_fmamk_f32", F32, F32, F32, F32, fl::kLiteralSrc1),
      vop<LANE(return bits_of(std::fma(f32(A), f32(B), f32(C)));)>("v_fmaak_f32", F32, F32, F32, F32, fl::kLiteralSrc2),
      vop<LANE(return bits_of(f32(A) * f32(B) + f32(C));)>("v_mad_f32", F32, F32, F32, F32),
      vop<LANE(return bits_of(fmax_ieee(f32(A), f32(B)));)>("v_max_f32", F32, F32, F32),
      vop<LANE(return bits_of(fmin_ieee(f32(A), f32(B)));)>("v_min_f32", F32, F32, F32),
      vop<LANE(return bits_of(fmax_ieee(fmax_ieee(f32(A), f32(B)), f32(C)));)>("v_max3_f32", F32, F32, F32, F32),
      vop<LANE(return bits_of(fmin_ieee(fmin_ieee(f32(A), f32(B)), f32(C)));)>("v_min3_f32", F32, F32, F32, F32),
      vop<LANE(return bits_of(fmed3(f32(A), f32(B), f32(C)));)>("v_med3_f32", F32, F32, F32, F32),
      vop<LANE(return bits_of(fmax_ieee(fmin_ieee(f32(A), f32(B)), f32(C)));)>("v_minmax_f32", F32, F32, F32, F32),
      vop<LANE(return bits_of(fmin_ieee(fmax_ieee(f32(A), f32(B)), f32(C)));)>("v_maxmin_f32", F32, F32, F32, F32),
      vop<LANE(return dx9_zero(A, B) ? 0 : bits_of(f32(A) * f32(B));)>("v_mul_dx9_zero_f32", F32, F32, F32),
      vop<LANE(return dx9_zero(A, B) ? C : bits_of(std::fma(f32(A), f32(B), f32(C)));)>("v_fma_dx9_zero_f32", F32, F32, F32, F32),
      vop<LANE(return dx9_zero(A, B) ? C : bits_of(std::fma(f32(A), f32(B), f32(C)));)>("v_fmac_dx9_zero_f32", F32, F32, F32, F32, fl::kAccumulate),
      vop<LANE(return mullit(f32(A), f32(B), f32(C));)>("v_mullit_f32", F32, F32, F32, F32),
      vop<LANE(return dot2_accumulate<f16>(A, B, C);)>("v_dot2acc_f32_f16", F32, B32, B32, F32, fl::kAccumulate),
      vop<LANE(return dot2_accumulate<bf16>(A, B, C);)>("v_dot2acc_f32_bf16", F32, B32, B32, F32, fl::kAccumulate),
      vop<LANE(return bits_of(std::ldexp(f32(A), s32(B)));)>("v_ldexp_f32", F32, F32, B32),
      vop<LANE(bool vcc = false; float r = div_scale(f32(A), f32(B), f32(C), vcc); flag = vcc; return bits_of(r);)>(
          "v_div_scale_f32", F32, F32, F32, F32, fl::kCarryOut),
      vop<LANE(return bits_of(div_fmas(f32(A), f32(B), f32(C), flag));)>("v_div_fmas_f32", F32, F32, F32, F32, fl::kVccIn),
      vop<LANE(return bits_of(div_fmas(f64(A), f64(B), f64(C), flag));)>("v_div_fmas_f64", F64, F64, F64, F64, fl::kVccIn),
      vop<LANE(return bits_of(div_fixup(f32(A), f32(B), f32(C)));)>("v_div_fixup_f32", F32, F32, F32, F32),
      // f32 transcendental and rounding (host libm: correctly rounded or within 1 ULP, as the ISA allows)
      vop<LANE(return bits_of(std::exp2(f32(A)));)>("v_exp_f32", F32, F32),
      vop<LANE(return bits_of(std::log2(f32(A)));)>("v_log_f32", F32, F32),
      vop<LANE(return bits_of(1.0f / f32(A));)>("v_rcp_f32", F32, F32),
      vop<LANE(return bits_of(1.0f / f32(A));)>("v_rcp_iflag_f32", F32, F32),
      vop<LANE(return bits_of(static_cast<float>(1.0 / std::sqrt(static_cast<double>(f32(A)))));)>("v_rsq_f32", F32, F32),
      vop<LANE(return bits_of(std::sqrt(f32(A)));)>("v_sqrt_f32", F32, F32),
      vop<LANE(return bits_of(static_cast<float>(std::sin(revolutions(f32(A)))));)>("v_sin_f32", F32, F32),
      vop<LANE(return bits_of(static_cast<float>(std::cos(revolutions(f32(A)))));)>("v_cos_f32", F32, F32),
      vop<LANE(return bits_of(std::trunc(f32(A)));)>("v_trunc_f32", F32, F32),
      vop<LANE(return bits_of(std::ceil(f32(A)));)>("v_ceil_f32", F32, F32),
      vop<LANE(return bits_of(std::floor(f32(A)));)>("v_floor_f32", F32, F32),
      vop<LANE(return bits_of(std::nearbyint(f32(A)));)>("v_rndne_f32", F32, F32),
      vop<LANE(return bits_of(fract(f32(A)));)>("v_fract_f32", F32, F32),
      vop<LANE(return bits_of(frexp_mant(f32(A)));)>("v_frexp_mant_f32", F32, F32),
      vop<LANE(return u32(frexp_exp(f32(A)));)>("v_frexp_exp_i32_f32", B32, F32),
      // f64
      vop<LANE(return bits_of(f64(A) + f64(B));)>("v_add_f64", F64, F64, F64),
      vop<LANE(return bits_of(f64(A) * f64(B));)>("v_mul_f64", F64, F64, F64),
      vop<LANE(return bits_of(std::fma(f64(A), f64(B), f64(C)));)>("v_fma_f64", F64, F64, F64, F64),
      vop<LANE(return bits_of(fmax_ieee(f64(A), f64(B)));)>("v_max_f64", F64, F64, F64),
      vop<LANE(return bits_of(fmin_ieee(f64(A), f64(B)));)>("v_min_f64", F64, F64, F64),
      vop<LANE(return bits_of(std::ldexp(f64(A), s32(B)));)>("v_ldexp_f64", F64, F64, B32),
      vop<LANE(bool vcc = false; double r = div_scale(f64(A), f64(B), f64(C), vcc); flag = vcc; return bits_of(r);)>(
          "v_div_scale_f64", F64, F64, F64, F64, fl::kCarryOut),
      vop<LANE(return bits_of(div_fixup(f64(A), f64(B), f64(C)));)>("v_div_fixup_f64", F64, F64, F64, F64),
      vop<LANE(return bits_of(1.0 / f64(A));)>("v_rcp_f64", F64, F64),
      vop<LANE(return bits_of(1.0 / std::sqrt(f64(A)));)>("v_rsq_f64", F64, F64),
      vop<LANE(return bits_of(std::sqrt(f64(A)));)>("v_sqrt_f64", F64, F64),
      vop<LANE(return bits_of(std::trunc(f64(A)));)>("v_trunc_f64", F64, F64),
      vop<LANE(return bits_of(std::ceil(f64(A)));)>("v_ceil_f64", F64, F64),
      vop<LANE(return bits_of(std::floor(f64(A)));)>("v_floor_f64", F64, F64),
      vop<LANE(return bits_of(std::nearbyint(f64(A)));)>("v_rndne_f64", F64, F64),
      vop<LANE(return bits_of(fract(f64(A)));)>("v_fract_f64", F64, F64),
      vop<LANE(return bits_of(frexp_mant(f64(A)));)>("v_frexp_mant_f64", F64, F64),
      vop<LANE(return u32(frexp_exp(f64(A)));)>("v_frexp_exp_i32_f64", B32, F64),
      // f16 (computed in float or double, then rounded once to half)
      vop<LANE(return bits_f16(f16(A) + f16(B));)>("v_add_f16", F16, F16, F16),
      vop<LANE(return bits_f16(f16(A) - f16(B));)>("v_sub_f16", F16, F16, F16),
      vop<LANE(return bits_f16(f16(B) - f16(A));)>("v_subrev_f16", F16, F16, F16),
      vop<LANE(return bits_f16(f16(A) * f16(B));)>("v_mul_f16", F16, F16, F16),
      vop<LANE(return bits_f16(std::fma(double{f16(A)}, double{f16(B)}, double{f16(C)}));)>("v_fma_f16", F16, F16, F16, F16),
      vop<LANE(return bits_f16(std::fma(double{f16(A)}, double{f16(B)}, double{f16(C)}));)>("v_fmac_f16", F16, F16, F16, F16, fl::kAccumulate),
      vop<LANE(return bits_f16(std::fma(double{f16(A)}, double{f16(B)}, double{f16(C)}));)>("v_fmamk_f16", F16, F16, F16, F16, fl::kLiteralSrc1),
      vop<LANE(return bits_f16(std::fma(double{f16(A)}, double{f16(B)}, double{f16(C)}));)>("v_fmaak_f16", F16, F16, F16, F16, fl::kLiteralSrc2),
      vop<LANE(return bits_f16(fmax_ieee(f16(A), f16(B)));)>("v_max_f16", F16, F16, F16),
      vop<LANE(return bits_f16(fmin_ieee(f16(A), f16(B)));)>("v_min_f16", F16, F16, F16),
      vop<LANE(return bits_f16(std::ldexp(f16(A), s16(B)));)>("v_ldexp_f16", F16, F16, B16),
      vop<LANE(return bits_f16(std::exp2(f16(A)));)>("v_exp_f16", F16, F16),
      vop<LANE(return bits_f16(std::log2(f16(A)));)>("v_log_f16", F16, F16),
      vop<LANE(return bits_f16(1.0f / f16(A));)>("v_rcp_f16", F16, F16),
      vop<LANE(return bits_f16(std::sqrt(f16(A)));)>("v_sqrt_f16", F16, F16),
      vop<LANE(return bits_f16(1.0f / std::sqrt(f16(A)));)>("v_rsq_f16", F16, F16),
      vop<LANE(return bits_f16(std::trunc(f16(A)));)>("v_trunc_f16", F16, F16),
      vop<LANE(return bits_f16(std::ceil(f16(A)));)>("v_ceil_f16", F16, F16),
      vop<LANE(return bits_f16(std::floor(f16(A)));)>("v_floor_f16", F16, F16),
      vop<LANE(return bits_f16(std::nearbyint(f16(A)));)>("v_rndne_f16", F16, F16),
      vop<LANE(return bits_f16(fract(f16(A)));)>("v_fract_f16", F16, F16),
      vop<LANE(return bits_f16(frexp_mant(f16(A)));)>("v_frexp_mant_f16", F16, F16),
      vop<LANE(return static_cast<uint16_t>(frexp_exp(f16(A)));)>("v_frexp_exp_i16_f16", B16, F16),
      vop<LANE(return bits_f16(std::sin(revolutions(f16(A))));)>("v_sin_f16", F16, F16),
      vop<LANE(return bits_f16(std::cos(revolutions(f16(A))));)>("v_cos_f16", F16, F16),
      vop<LANE(return bits_f16(fmin_ieee(fmin_ieee(f16(A), f16(B)), f16(C)));)>("v_min3_f16", F16, F16, F16, F16),
      vop<LANE(return bits_f16(fmax_ieee(fmax_ieee(f16(A), f16(B)), f16(C)));)>("v_max3_f16", F16, F16, F16, F16),
      vop<LANE(return bits_f16(fmed3(f16(A), f16(B), f16(C)));)>("v_med3_f16", F16, F16, F16, F16),
      vop<LANE(return bits_f16(fmin_ieee(fmax_ieee(f16(A), f16(B)), f16(C)));)>("v_maxmin_f16", F16, F16, F16, F16),
      vop<LANE(return bits_f16(fmax_ieee(fmin_ieee(f16(A), f16(B)), f16(C)));)>("v_minmax_f16", F16, F16, F16, F16),
      vop<LANE(auto fma = [](uint64_t a, uint64_t b, uint64_t c) { return bits_f16(std::fma(double{f16(a)}, double{f16(b)}, double{f16(c)})); };
               return fma(A, B, C) | fma(A >> 16, B >> 16, C >> 16) << 16;)>("v_pk_fmac_f16", B32, B32, B32, B32, fl::kAccumulate),
      vop<LANE(return bits_f16(div_fixup(f16(A), f16(B), f16(C)));)>("v_div_fixup_f16", F16, F16, F16, F16),
      // conversions
      vop<LANE(return bits_of(static_cast<float>(s32(A)));)>("v_cvt_f32_i32", F32, B32),
      vop<LANE(return bits_of(static_cast<float>(u32(A)));)>("v_cvt_f32_u32", F32, B32),
      vop<LANE(return static_cast<uint32_t>(to_int<int32_t>(f32(A)));)>("v_cvt_i32_f32", B32, F32),
      vop<LANE(return to_int<uint32_t>(f32(A));)>("v_cvt_u32_f32", B32, F32),
      vop<LANE(return static_cast<uint32_t>(to_int<int32_t>(std::floor(f32(A))));)>("v_cvt_floor_i32_f32", B32, F32),
      vop<LANE(return static_cast<uint32_t>(to_int<int32_t>(std::floor(f32(A) + 0.5f)));)>("v_cvt_nearest_i32_f32", B32, F32),
      vop<LANE(return bits_of(static_cast<double>(s32(A)));)>("v_cvt_f64_i32", F64, B32),
      vop<LANE(return bits_of(static_cast<double>(u32(A)));)>("v_cvt_f64_u32", F64, B32),
      vop<LANE(return static_cast<uint32_t>(to_int<int32_t>(f64(A)));)>("v_cvt_i32_f64", B32, F64),
      vop<LANE(return to_int<uint32_t>(f64(A));)>("v_cvt_u32_f64", B32, F64),
      vop<LANE(return bits_of(static_cast<double>(f32(A)));)>("v_cvt_f64_f32", F64, F32),
      vop<LANE(return bits_of(static_cast<float>(f64(A)));)>("v_cvt_f32_f64", F32, F64),
      vop<LANE(return bits_f16(f32(A));)>("v_cvt_f16_f32", F16, F32),
      vop<LANE(return bits_of(f16(A));)>("v_cvt_f32_f16", F32, F16),
      vop<LANE(return bits_f16(static_cast<float>(static_cast<uint16_t>(A)));)>("v_cvt_f16_u16", F16, B16),
      vop<LANE(return bits_f16(static_cast<float>(s16(A)));)>("v_cvt_f16_i16", F16, B16),
      vop<LANE(return to_int<uint16_t>(f16(A));)>("v_cvt_u16_f16", B16, F16),
      vop<LANE(return static_cast<uint16_t>(to_int<int16_t>(f16(A)));)>("v_cvt_i16_f16", B16, F16),
      vop<LANE(return static_cast<uint32_t>(static_cast<int32_t>(s16(A)));)>("v_cvt_i32_i16", B32, B16),
      vop<LANE(return A & 0xffff;)>("v_cvt_u32_u16", B32, B16),
      vop<LANE(return bits_of(static_cast<float>(A & 0xff));)>("v_cvt_f32_ubyte0", F32, B32),
      vop<LANE(return bits_of(static_cast<float>(A >> 8 & 0xff));)>("v_cvt_f32_ubyte1", F32, B32),
      vop<LANE(return bits_of(static_cast<float>(A >> 16 & 0xff));)>("v_cvt_f32_ubyte2", F32, B32),
      vop<LANE(return bits_of(static_cast<float>(A >> 24 & 0xff));)>("v_cvt_f32_ubyte3", F32, B32),
      vop<LANE(return bits_of(offset_i4(A));)>("v_cvt_off_f32_i4", F32, B32),
      vop<LANE(return uint64_t{static_cast<uint16_t>(to_int<int16_t>(f32(A)))} | uint64_t{static_cast<uint16_t>(to_int<int16_t>(f32(B)))} << 16;)>(
          "v_cvt_pk_i16_f32", B32, F32, F32),
      vop<LANE(return uint64_t{to_int<uint16_t>(f32(A))} | uint64_t{to_int<uint16_t>(f32(B))} << 16;)>("v_cvt_pk_u16_f32", B32, F32, F32),
      vop<LANE(return sat_pk_u8(A);)>("v_sat_pk_u8_i16", B16, B32),
      // Round toward zero: a float rounded to the nearest half, stepped back when it rounded away.
      vop<LANE(auto rtz = [](float x) {
                 uint64_t h = bits_f16(x);
                 float back = f16(h);
                 if (!std::isnan(x) && !std::isinf(x) && std::fabs(back) > std::fabs(x)) h -= 1;
                 return h;
               };
               return rtz(f32(A)) | rtz(f32(B)) << 16;)>("v_cvt_pk_rtz_f16_f32", B32, F32, F32),
      vop<LANE(return (A & 0xffff) | (B & 0xffff) << 16;)>("v_pack_b32_f16", B32, F16, F16),
      vop<LANE(auto s = [](uint64_t x) { int32_t v = s32(x); return static_cast<uint32_t>(v < -32768 ? -32768 : v > 32767 ? 32767 : v) & 0xffff; };
               return s(A) | uint64_t{s(B)} << 16;)>("v_cvt_pk_i16_i32", B32, B32, B32),
      vop<LANE(auto s = [](uint64_t x) { uint32_t v = u32(x); return v > 65535 ? 65535u : v; }; return s(A) | uint64_t{s(B)} << 16;)>(
          "v_cvt_pk_u16_u32", B32, B32, B32),
      // 32-bit integer
      vop<LANE(return sat_u32(uint64_t{u32(A)} + u32(B), in.clamp);)>("v_add_nc_u32", B32, B32, B32),
      vop<LANE(return in.clamp && u32(B) > u32(A) ? 0 : u32(A - B);)>("v_sub_nc_u32", B32, B32, B32),
      vop<LANE(return in.clamp && u32(A) > u32(B) ? 0 : u32(B - A);)>("v_subrev_nc_u32", B32, B32, B32),
      vop<LANE(return sat_i32(int64_t{s32(A)} + s32(B), in.clamp);)>("v_add_nc_i32", B32, B32, B32),
      vop<LANE(return sat_i32(int64_t{s32(A)} - s32(B), in.clamp);)>("v_sub_nc_i32", B32, B32, B32),
      vop<LANE(uint64_t s = uint64_t{u32(A)} + u32(B); flag = s >> 32; return sat_u32(s, in.clamp);)>("v_add_co_u32", B32, B32, B32, None, fl::kCarryOut),
      vop<LANE(flag = u32(B) > u32(A); return flag && in.clamp ? 0 : u32(A - B);)>("v_sub_co_u32", B32, B32, B32, None, fl::kCarryOut),
      vop<LANE(flag = u32(A) > u32(B); return flag && in.clamp ? 0 : u32(B - A);)>("v_subrev_co_u32", B32, B32, B32, None, fl::kCarryOut),
      vop<LANE(uint64_t s = uint64_t{u32(A)} + u32(B) + (C & 1); flag = s >> 32; return sat_u32(s, in.clamp);)>(
          "v_add_co_ci_u32", B32, B32, B32, Mask, fl::kCarryOut | fl::kMaskFromVcc),
      vop<LANE(uint64_t s = uint64_t{u32(B)} + (C & 1); flag = s > u32(A); return flag && in.clamp ? 0 : u32(u32(A) - s);)>(
          "v_sub_co_ci_u32", B32, B32, B32, Mask, fl::kCarryOut | fl::kMaskFromVcc),
      vop<LANE(uint64_t s = uint64_t{u32(A)} + (C & 1); flag = s > u32(B); return flag && in.clamp ? 0 : u32(u32(B) - s);)>(
          "v_subrev_co_ci_u32", B32, B32, B32, Mask, fl::kCarryOut | fl::kMaskFromVcc),
      vop<LANE(return u32(uint64_t{u32(A)} * u32(B));)>("v_mul_lo_u32", B32, B32, B32),
      vop<LANE(return (uint64_t{u32(A)} * u32(B)) >> 32;)>("v_mul_hi_u32", B32, B32, B32),
      vop<LANE(return u32(static_cast<uint64_t>(int64_t{s32(A)} * s32(B)) >> 32);)>("v_mul_hi_i32", B32, B32, B32),
      vop<LANE(return u32((A & 0xffffff) * (B & 0xffffff));)>("v_mul_u32_u24", B32, B32, B32),
      vop<LANE(return ((A & 0xffffff) * (B & 0xffffff)) >> 32;)>("v_mul_hi_u32_u24", B32, B32, B32),
      vop<LANE(return u32(static_cast<uint64_t>(int64_t{sext24(A)} * sext24(B)));)>("v_mul_i32_i24", B32, B32, B32),
      vop<LANE(return u32(static_cast<uint64_t>(int64_t{sext24(A)} * sext24(B)) >> 32);)>("v_mul_hi_i32_i24", B32, B32, B32),
      vop<LANE(return u32((A & 0xffffff) * (B & 0xffffff) + u32(C));)>("v_mad_u32_u24", B32, B32, B32, B32),
      vop<LANE(return u32(static_cast<uint64_t>(int64_t{sext24(A)} * sext24(B) + s32(C)));)>("v_mad_i32_i24", B32, B32, B32, B32),
      vop<LANE(return sat_u32((A & 0xffff) * (B & 0xffff) + u32(C), in.clamp);)>("v_mad_u32_u16", B32, B16, B16, B32),
      vop<LANE(return sat_i32(int64_t{s16(A)} * s16(B) + s32(C), in.clamp);)>("v_mad_i32_i16", B32, B16, B16, B32),
      vop<LANE(unsigned __int128 r = static_cast<unsigned __int128>(uint64_t{u32(A)} * u32(B)) + C; flag = static_cast<bool>(r >> 64);
               return static_cast<uint64_t>(r);)>("v_mad_u64_u32", B64, B32, B32, B64, fl::kCarryOut),
      vop<LANE(__int128 r = static_cast<__int128>(int64_t{s32(A)} * s32(B)) + static_cast<int64_t>(C);
               flag = r > std::numeric_limits<int64_t>::max() || r < std::numeric_limits<int64_t>::min();
               return static_cast<uint64_t>(static_cast<int64_t>(r));)>("v_mad_i64_i32", B64, B32, B32, B64, fl::kCarryOut),
      vop<LANE(return u32(std::max(s32(A), s32(B)));)>("v_max_i32", B32, B32, B32),
      vop<LANE(return u32(std::min(s32(A), s32(B)));)>("v_min_i32", B32, B32, B32),
      vop<LANE(return std::max(u32(A), u32(B));)>("v_max_u32", B32, B32, B32),
      vop<LANE(return std::min(u32(A), u32(B));)>("v_min_u32", B32, B32, B32),
      vop<LANE(return u32(std::max({s32(A), s32(B), s32(C)}));)>("v_max3_i32", B32, B32, B32, B32),
      vop<LANE(return u32(std::min({s32(A), s32(B), s32(C)}));)>("v_min3_i32", B32, B32, B32, B32),
      vop<LANE(return std::max({u32(A), u32(B), u32(C)});)>("v_max3_u32", B32, B32, B32, B32),
      vop<LANE(return std::min({u32(A), u32(B), u32(C)});)>("v_min3_u32", B32, B32, B32, B32),
      vop<LANE(int32_t a = s32(A), b = s32(B), c = s32(C); return u32(std::max(std::min(a, b), std::min(std::max(a, b), c)));)>("v_med3_i32", B32, B32, B32, B32),
      vop<LANE(uint32_t a = u32(A), b = u32(B), c = u32(C); return std::max(std::min(a, b), std::min(std::max(a, b), c));)>("v_med3_u32", B32, B32, B32, B32),
      vop<LANE(return std::min(std::max(u32(A), u32(B)), u32(C));)>("v_maxmin_u32", B32, B32, B32, B32),
      vop<LANE(return std::max(std::min(u32(A), u32(B)), u32(C));)>("v_minmax_u32", B32, B32, B32, B32),
      vop<LANE(return u32(std::min(std::max(s32(A), s32(B)), s32(C)));)>("v_maxmin_i32", B32, B32, B32, B32),
      vop<LANE(return u32(std::max(std::min(s32(A), s32(B)), s32(C)));)>("v_minmax_i32", B32, B32, B32, B32),
      // sums of absolute differences: clamp saturates the 32-bit sum
      vop<LANE(return sat_u32(sad_bytes(A, B, false) + u32(C), in.clamp);)>("v_sad_u8", B32, B32, B32, B32),
      vop<LANE(return sat_u32((sad_bytes(A, B, false) << 16) + u32(C), in.clamp);)>("v_sad_hi_u8", B32, B32, B32, B32),
      vop<LANE(return sat_u32(uint64_t{absdiff(A & 0xffff, B & 0xffff)} + absdiff(A >> 16 & 0xffff, B >> 16 & 0xffff) + u32(C), in.clamp);)>(
          "v_sad_u16", B32, B32, B32, B32),
      vop<LANE(return sat_u32(uint64_t{absdiff(u32(A), u32(B))} + u32(C), in.clamp);)>("v_sad_u32", B32, B32, B32, B32),
      vop<LANE(return sat_u32(sad_bytes(A, B, true) + u32(C), in.clamp);)>("v_msad_u8", B32, B32, B32, B32),
      vop<LANE(return lerp_bytes(A, B, C);)>("v_lerp_u8", B32, B32, B32, B32),
      vop<LANE(return u32(B) << (A & 31);)>("v_lshlrev_b32", B32, B32, B32),
      vop<LANE(return u32(B) >> (A & 31);)>("v_lshrrev_b32", B32, B32, B32),
      vop<LANE(return u32(s32(B) >> (A & 31));)>("v_ashrrev_i32", B32, B32, B32),
      vop<LANE(return B << (A & 63);)>("v_lshlrev_b64", B64, B32, B64),
      vop<LANE(return B >> (A & 63);)>("v_lshrrev_b64", B64, B32, B64),
      vop<LANE(return static_cast<uint64_t>(static_cast<int64_t>(B) >> (A & 63));)>("v_ashrrev_i64", B64, B32, B64),
      vop<LANE(return u32((u32(A) << (B & 31)) + u32(C));)>("v_lshl_add_u32", B32, B32, B32, B32),
      vop<LANE(return u32((u32(A) + u32(B)) << (C & 31));)>("v_add_lshl_u32", B32, B32, B32, B32),
      vop<LANE(return u32((u32(A) << (B & 31)) | u32(C));)>("v_lshl_or_b32", B32, B32, B32, B32),
      vop<LANE(return u32((A & B) | C);)>("v_and_or_b32", B32, B32, B32, B32),
      vop<LANE(return u32(A | B | C);)>("v_or3_b32", B32, B32, B32, B32),
      vop<LANE(return u32(A ^ B ^ C);)>("v_xor3_b32", B32, B32, B32, B32),
      vop<LANE(return u32(A + B + C);)>("v_add3_u32", B32, B32, B32, B32),
      vop<LANE(return u32((A ^ B) + C);)>("v_xad_u32", B32, B32, B32, B32),
      vop<LANE(return u32(A & B);)>("v_and_b32", B32, B32, B32),
      vop<LANE(return u32(A | B);)>("v_or_b32", B32, B32, B32),
      vop<LANE(return u32(A ^ B);)>("v_xor_b32", B32, B32, B32),
      vop<LANE(return u32(~(A ^ B));)>("v_xnor_b32", B32, B32, B32),
      vop<LANE(return u32(~A);)>("v_not_b32", B32, B32),
      vop<LANE(uint32_t off = B & 31, width = C & 31; return width ? (u32(A) >> off) & ((1u << width) - 1) : 0;)>("v_bfe_u32", B32, B32, B32, B32),
      vop<LANE(uint32_t off = B & 31, width = C & 31;
               return width ? u32(static_cast<int32_t>(u32(A) >> off << (32 - width)) >> (32 - width)) : 0;)>("v_bfe_i32", B32, B32, B32, B32),
      vop<LANE(return u32((A & B) | (~A & C));)>("v_bfi_b32", B32, B32, B32, B32),
      vop<LANE(return u32(((uint64_t{1} << (A & 31)) - 1) << (B & 31));)>("v_bfm_b32", B32, B32, B32),
      vop<LANE(return u32(((uint64_t{u32(A)} << 32) | u32(B)) >> (C & 31));)>("v_alignbit_b32", B32, B32, B32, B32),
      vop<LANE(return u32(((uint64_t{u32(A)} << 32) | u32(B)) >> (8 * (C & 3)));)>("v_alignbyte_b32", B32, B32, B32, B32),
      vop<LANE(uint64_t pair = uint64_t{u32(A)} << 32 | u32(B); uint32_t r = 0;
               for (int i = 0; i < 4; ++i) r |= perm_byte(pair, (C >> (8 * i)) & 0xff) << (8 * i);
               return r;)>("v_perm_b32", B32, B32, B32, B32),
      vop<LANE(uint32_t x = u32(A), r = 0; for (int i = 0; i < 32; ++i) r |= (x >> i & 1) << (31 - i); return r;)>("v_bfrev_b32", B32, B32),
      vop<LANE(return A ? u32(std::countl_zero(u32(A))) : 0xffffffffu;)>("v_clz_i32_u32", B32, B32),
      vop<LANE(return A ? u32(std::countr_zero(u32(A))) : 0xffffffffu;)>("v_ctz_i32_b32", B32, B32),
      vop<LANE(int32_t x = s32(A); if (x == 0 || x == -1) return 0xffffffffu; return u32(std::countl_zero(u32(x < 0 ? ~x : x)));)>("v_cls_i32", B32, B32),
      vop<LANE(return u32(std::popcount(u32(A)) + B);)>("v_bcnt_u32_b32", B32, B32, B32),
      // 16-bit integer
      vop<LANE(return add16(A, B, false, in.clamp);)>("v_add_nc_u16", B16, B16, B16),
      vop<LANE(return add16(A, B, false, in.clamp, true);)>("v_sub_nc_u16", B16, B16, B16),
      vop<LANE(return add16(A, B, true, in.clamp);)>("v_add_nc_i16", B16, B16, B16),
      vop<LANE(return add16(A, B, true, in.clamp, true);)>("v_sub_nc_i16", B16, B16, B16),
      vop<LANE(return (A * B) & 0xffff;)>("v_mul_lo_u16", B16, B16, B16),
      vop<LANE(return (B << (A & 15)) & 0xffff;)>("v_lshlrev_b16", B16, B16, B16),
      vop<LANE(return (B & 0xffff) >> (A & 15);)>("v_lshrrev_b16", B16, B16, B16),
      vop<LANE(return static_cast<uint16_t>(s16(B) >> (A & 15));)>("v_ashrrev_i16", B16, B16, B16),
      vop<LANE(return std::max(A, B);)>("v_max_u16", B16, B16, B16),
      vop<LANE(return std::min(A, B);)>("v_min_u16", B16, B16, B16),
      vop<LANE(return static_cast<uint16_t>(std::max(s16(A), s16(B)));)>("v_max_i16", B16, B16, B16),
      vop<LANE(return static_cast<uint16_t>(std::min(s16(A), s16(B)));)>("v_min_i16", B16, B16, B16),
      vop<LANE(return A & B;)>("v_and_b16", B16, B16, B16),
      vop<LANE(return A | B;)>("v_or_b16", B16, B16, B16),
      vop<LANE(return A ^ B;)>("v_xor_b16", B16, B16, B16),
      vop<LANE(return ~A & 0xffff;)>("v_not_b16", B16, B16),
      vop<LANE(uint64_t r = A * B + C; return in.clamp ? std::min<uint64_t>(r, 0xffff) : r & 0xffff;)>("v_mad_u16", B16, B16, B16, B16),
      vop<LANE(return sat_i16(s16(A) * s16(B) + s16(C), in.clamp);)>("v_mad_i16", B16, B16, B16, B16),
      vop<LANE(return std::min({A, B, C});)>("v_min3_u16", B16, B16, B16, B16),
      vop<LANE(return std::max({A, B, C});)>("v_max3_u16", B16, B16, B16, B16),
      vop<LANE(return std::max(std::min(A, B), std::min(std::max(A, B), C));)>("v_med3_u16", B16, B16, B16, B16),
      vop<LANE(return static_cast<uint16_t>(std::min({s16(A), s16(B), s16(C)}));)>("v_min3_i16", B16, B16, B16, B16),
      vop<LANE(return static_cast<uint16_t>(std::max({s16(A), s16(B), s16(C)}));)>("v_max3_i16", B16, B16, B16, B16),
      vop<LANE(int16_t a = s16(A), b = s16(B), c = s16(C); return static_cast<uint16_t>(std::max(std::min(a, b), std::min(std::max(a, b), c)));)>(
          "v_med3_i16", B16, B16, B16, B16),
      // class tests
      vop<LANE(flag = float_class(f32(A), u32(B), snan32(A), is_denorm(f32(A))); return 0;)>("v_cmp_class_f32", Mask, F32, B32, None, fl::kCompare),
      vop<LANE(flag = float_class(f32(A), u32(B), snan32(A), is_denorm(f32(A))); return 0;)>("v_cmpx_class_f32", Mask, F32, B32, None, fl::kCompare | fl::kCompareExec),
      vop<LANE(flag = float_class(f64(A), u32(B), snan64(A), is_denorm(f64(A))); return 0;)>("v_cmp_class_f64", Mask, F64, B32, None, fl::kCompare),
      vop<LANE(flag = float_class(f64(A), u32(B), snan64(A), is_denorm(f64(A))); return 0;)>("v_cmpx_class_f64", Mask, F64, B32, None, fl::kCompare | fl::kCompareExec),
      vop<LANE(flag = float_class(f16(A), u32(B), snan16(A), is_denorm_bits(A, F16)); return 0;)>("v_cmp_class_f16", Mask, F16, B16, None, fl::kCompare),
      vop<LANE(flag = float_class(f16(A), u32(B), snan16(A), is_denorm_bits(A, F16)); return 0;)>("v_cmpx_class_f16", Mask, F16, B16, None, fl::kCompare | fl::kCompareExec),
      // packed 16-bit
      pk<PK(return bits_f16(f16(A) + f16(B));)>("v_pk_add_f16", F16, 2),
      pk<PK(return bits_f16(f16(A) * f16(B));)>("v_pk_mul_f16", F16, 2),
      pk<PK(return bits_f16(std::fma(double{f16(A)}, double{f16(B)}, double{f16(C)}));)>("v_pk_fma_f16", F16, 3),
      pk<PK(return bits_f16(fmax_ieee(f16(A), f16(B)));)>("v_pk_max_f16", F16, 2),
      pk<PK(return bits_f16(fmin_ieee(f16(A), f16(B)));)>("v_pk_min_f16", F16, 2),
      pk<PK(return add16(A, B, false, in.clamp);)>("v_pk_add_u16", B16, 2),
      pk<PK(return add16(A, B, false, in.clamp, true);)>("v_pk_sub_u16", B16, 2),
      pk<PK(return add16(A, B, true, in.clamp);)>("v_pk_add_i16", B16, 2),
      pk<PK(return add16(A, B, true, in.clamp, true);)>("v_pk_sub_i16", B16, 2),
      pk<PK(return A * B;)>("v_pk_mul_lo_u16", B16, 2),
      pk<PK(return A * B + C;)>("v_pk_mad_u16", B16, 3),
      pk<PK(return sat_i16(s16(A) * s16(B) + s16(C), in.clamp);)>("v_pk_mad_i16", B16, 3),
      OpDef{"v_wmma_f32_16x16x16_f16", wmma_f32<f16>, nullptr, F32, {B32, B32, F32}, 0, 0},
      OpDef{"v_wmma_f32_16x16x16_bf16", wmma_f32<bf16>, nullptr, F32, {B32, B32, F32}, 0, 0},
      dot<dot2_f32<f16>>("v_dot2_f32_f16", F32, F16, F32),
      dot<dot2_f32<bf16>>("v_dot2_f32_bf16", F32, B16, F32),
      dot<dot_int<8, true>>("v_dot4_i32_iu8", B32, B32, B32),
      dot<dot_int<8, false>>("v_dot4_u32_u8", B32, B32, B32),
      dot<dot_int<4, true>>("v_dot8_i32_iu4", B32, B32, B32),
      dot<dot_int<4, false>>("v_dot8_u32_u4", B32, B32, B32),
      pk<PK(return B << (A & 15);)>("v_pk_lshlrev_b16", B16, 2),
      pk<PK(return B >> (A & 15);)>("v_pk_lshrrev_b16", B16, 2),
      pk<PK(return static_cast<uint16_t>(s16(B) >> (A & 15));)>("v_pk_ashrrev_i16", B16, 2),
      pk<PK(return std::max(A, B);)>("v_pk_max_u16", B16, 2),
      pk<PK(return std::min(A, B);)>("v_pk_min_u16", B16, 2),
      pk<PK(return static_cast<uint16_t>(std::max(s16(A), s16(B)));)>("v_pk_max_i16", B16, 2),
      pk<PK(return static_cast<uint16_t>(std::min(s16(A), s16(B)));)>("v_pk_min_i16", B16, 2),
      OpDef{"v_fma_mix_f32", fma_mix<0>, nullptr, B32, {B32, B32, B32}, 0, 0},
      OpDef{"v_fma_mixlo_f16", fma_mix<1>, nullptr, B32, {B32, B32, B32}, 0, 0},
      OpDef{"v_fma_mixhi_f16", fma_mix<2>, nullptr, B32, {B32, B32, B32}, 0, 0},
  };
  float_compares(v, std::make_integer_sequence<int, 16>{});
  int_compares(v, std::make_integer_sequence<int, 8>{});
  return v;
}

}  // namespace

void run_vopd(Wave& w, const Inst& x) {
  alignas(64) uint64_t dx[kLanes], dy[kLanes];
  uint32_t mx = 0, my = 0;
  x.op->compute(w, x, dx, mx);
  x.dual->op->compute(w, *x.dual, dy, my);
  commit(w, x, dx, mx);
  commit(w, *x.dual, dy, my);
}

std::span<const OpDef> vector_ops() {
  static const std::vector<OpDef> ops = build();
  return ops;
}

}  // namespace ugpu::emu::amd
