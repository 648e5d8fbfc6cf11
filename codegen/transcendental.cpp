// Transcendentals from basic arithmetic. Everything is computed in float64: a float32 (or half,
// bfloat16) result is then rounded once, so its error is the rounding plus a polynomial error far
// below it; float64 uses longer polynomials in the same scheme.
//
//   exp2(x):  n = round(x), f = x - n in [-1/2, 1/2];  2^f by its Taylor series in f*ln2;  times 2^n
//             built from exponent bits in two halves (so 2^n may be subnormal or overflow to inf).
//   log2(x):  x = m * 2^e with m in [sqrt(1/2), sqrt(2)];  log2(m) = 2/ln2 * atanh(t), t = (m-1)/(m+1),
//             by the odd series of atanh;  subnormals scaled by 2^64 first.
//   sin(x):   n = round(x * 2/pi), r = x - n*pi/2, for |x| < 2^20 with pi/2 split in three (Cody-Waite:
//             the first two parts have 26 bits, so n*part is exact), above by Payne-Hanek: x * 2/pi mod 4
//             in exact integer arithmetic on a 192-bit window of 2/pi's bits (codegen/two_over_pi.h);
//             sin or cos of r by Taylor series, chosen and signed by n mod 4.
//   pow(x,y): exp2(y * log2|x|) with C's rules for signs, zeros, ones, infinities and NaN.
#include "codegen/transcendental.h"

#include <cmath>
#include <iterator>

#include "codegen/two_over_pi.h"
#include "common/error.h"
#include "ir/text.h"

namespace ugpu::codegen {
using namespace ir;
namespace {

const DType F = dtypes::float64, I = dtypes::int64, U = dtypes::uint64;
UOp f(double v) { return UOp::const_float(F, v); }
UOp i64(int64_t v) { return UOp::const_int(I, v); }
UOp u64(uint64_t v) { return UOp::const_int(U, static_cast<int64_t>(v)); }
UOp shr(const UOp& a, int64_t n) { return UOp::alu(Op::SHR, {a, UOp::const_like(a, static_cast<double>(n))}); }
UOp lt(const UOp& a, const UOp& b) { return a.lt(b); }
UOp sel(const UOp& c, const UOp& a, const UOp& b) { return c.where(a, b); }
UOp div(const UOp& a, const UOp& b) { return UOp::alu(Op::FDIV, {a, b}); }
UOp isnan(const UOp& x) { return x.ne(x); }
UOp trunc(const UOp& x) { return UOp::alu(Op::TRUNC, {x}); }
UOp floor(const UOp& x) {
  UOp t = trunc(x);
  return sel(lt(x, t), t - f(1), t);
}
UOp round_half_up(const UOp& x) { return floor(x + f(0.5)); }
UOp horner(const UOp& x, const std::vector<double>& c) {  // c[0] + c[1] x + ...
  UOp acc = f(c.back());
  for (size_t k = c.size() - 1; k-- > 0;) acc = acc * x + f(c[k]);
  return acc;
}
UOp pow2i(const UOp& n) {  // 2^n for an int64 n in [-1022, 1023]
  return ((n + i64(1023)) << i64(52)).bitcast(F);
}
bool wide(DType t) { return t.scalar == ScalarType::Double; }

UOp exp2_f64(const UOp& x, bool full) {
  UOp xc = sel(lt(x, f(-1100)), f(-1100), sel(lt(f(1100), x), f(1100), x));
  UOp n = round_half_up(xc), r = xc - n;
  int degree = full ? 13 : 8;
  std::vector<double> c(degree + 1);
  double term = 1;
  for (int k = 0; k <= degree; ++k) c[k] = term, term *= M_LN2 / (k + 1);
  UOp p = horner(r, c), ni = n.cast(I);
  UOp a = UOp::alu(Op::SHR, {ni, i64(1)}), b = ni - a;
  return p * pow2i(a) * pow2i(b);
}

UOp log2_f64(const UOp& x, bool full) {
  UOp small = lt(x, f(0x1p-1022));
  UOp xs = sel(small, x * f(0x1p64), x);
  UOp bits = xs.bitcast(I);
  UOp e = (UOp::alu(Op::SHR, {bits, i64(52)}) & i64(0x7ff)) - i64(1023);
  UOp m = ((bits & i64(0xfffffffffffffLL)) | i64(int64_t{1023} << 52)).bitcast(F);
  UOp big = lt(f(M_SQRT2), m);
  m = sel(big, m * f(0.5), m);
  UOp ef = sel(big, e + i64(1), e).cast(F) - sel(small, f(64), f(0));
  UOp t = div(m - f(1), m + f(1)), t2 = t * t;
  int terms = full ? 12 : 6;
  std::vector<double> c(terms);
  for (int k = 0; k < terms; ++k) c[k] = 1.0 / (2 * k + 1);
  UOp l = ef + t * horner(t2, c) * f(2 / M_LN2);
  UOp inf = f(INFINITY);
  return sel(isnan(x) | lt(x, f(0)), f(NAN), sel(x.eq(f(0)), -inf, sel(x.eq(inf), inf, l)));
}

// A quadrant count n (any integer; n mod 4 matters) and r = x - n*pi/2 in [-pi/4, pi/4].
struct Reduced {
  UOp n, r;
};

// Cody-Waite: pi/2 = C1 + C2 + C3, C1 and C2 with 26 significant bits, so n*C1 and n*C2 are exact.
Reduced cody_waite(const UOp& x) {
  constexpr double kC1 = 0x1.921fb58p+0, kC2 = -0x1.dde974p-27, kC3 = 0x1.1a62633145c07p-54;
  UOp n = round_half_up(x * f(M_2_PI));
  return {n.cast(I), ((x - n * f(kC1)) - n * f(kC2)) - n * f(kC3)};
}

// Payne-Hanek, for |x| = m * 2^e (m the 53-bit integer significand) up to 2^(max_exp+1). Bits of
// 2/pi worth 4 or more after multiplying by 2^e do not change x*2/pi mod 4, so x*2/pi mod 4 =
// 4 * frac(m * G) where G is 2/pi's bits from bit e-1 on, as a fraction (G = 2^(e-2) * 2/pi mod 1).
// m * G is formed exactly over 192 bits of G in 32-bit limbs; the 2^-139 it leaves out cannot
// move a result that is at least ~2^-62 from a multiple of pi/2 (the closest any double gets).
Reduced payne_hanek(const UOp& x, int max_exp) {
  UOp bits = x.bitcast(U);
  UOp e = (shr(bits, 52) & u64(0x7ff)).cast(I) - i64(1075);
  UOp m = (bits & u64((uint64_t{1} << 52) - 1)) | u64(uint64_t{1} << 52);
  // The 64-bit words of G: 2/pi's words k.. shifted left by sh, where 64k + sh = e - 2.
  UOp start = e - i64(2), k = shr(start, 6), sh = (start & i64(63)).cast(U);
  int64_t k_max = (max_exp - 52 + 1 - 2) >> 6;  // the largest k an infinite input (e = max_exp - 51) gives
  auto word = [&](int j) {                      // kTwoOverPi[k + j], 0 outside the table
    UOp w = u64(0);
    for (int64_t v = -1; v <= k_max; ++v)
      if (v + j >= 0 && v + j < static_cast<int64_t>(std::size(kTwoOverPi))) w = sel(k.eq(i64(v)), u64(kTwoOverPi[v + j]), w);
    return w;
  };
  UOp w[4] = {word(0), word(1), word(2), word(3)};
  UOp back = u64(63) - sh;
  std::vector<UOp> g;  // G's six 32-bit limbs, most significant first
  for (int j = 0; j < 3; ++j) {
    UOp gj = (w[j] << sh) | UOp::alu(Op::SHR, {shr(w[j + 1], 1), back});  // sh = 0 shifts w[j+1] out entirely
    g.push_back(shr(gj, 32));
    g.push_back(gj & u64(0xffffffff));
  }
  // m * G's fraction bits, six limbs of 32 (limb 5 most significant): column sums, then carries.
  UOp ml = m & u64(0xffffffff), mh = shr(m, 32), lo32 = u64(0xffffffff);
  std::vector<UOp> col(6, u64(0));
  auto add = [&](int c, const UOp& v) {
    if (c >= 0 && c < 6) col[c] = col[c] + v;
  };
  for (int i = 0; i < 6; ++i) {
    UOp pl = ml * g[i], ph = mh * g[i];
    add(5 - i, pl & lo32), add(6 - i, shr(pl, 32)), add(6 - i, ph & lo32), add(7 - i, shr(ph, 32));
  }
  UOp carry = u64(0);
  std::vector<UOp> limb(6);
  for (int c = 0; c < 6; ++c) {
    UOp sum = col[c] + carry;
    limb[c] = sum & lo32, carry = shr(sum, 32);
  }
  // Quadrant bits, then the 190 fraction bits; at or past one half, 1 - fraction instead (two's
  // complement of the limbs), so that what is near a multiple of pi/2 keeps all its bits.
  UOp q = shr(limb[5], 30).cast(I);
  UOp up = (limb[5] & u64(0x20000000)).ne(u64(0));
  limb[5] = limb[5] & u64(0x3fffffff);
  carry = sel(up, u64(1), u64(0));
  for (int c = 2; c < 6; ++c) {
    UOp mask = u64(c == 5 ? 0x3fffffff : 0xffffffff);
    UOp sum = sel(up, UOp::alu(Op::XOR, {limb[c], mask}), limb[c]) + carry;
    limb[c] = sum & mask, carry = shr(sum, c == 5 ? 30 : 32);
  }
  UOp frac = limb[2].cast(F) * f(0x1p-32);  // |distance| to the nearest multiple, in quadrants
  frac = (limb[3].cast(F) + frac) * f(0x1p-32);
  frac = (limb[4].cast(F) + frac) * f(0x1p-32);
  frac = (limb[5].cast(F) + frac) * f(0x1p-30);
  UOp t = sel(up, -frac, frac);
  constexpr double kP1 = 0x1.921fb54442d18p+0, kP2 = 0x1.1a62633145c07p-54;  // pi/2 = P1 + P2
  return {q + sel(up, i64(1), i64(0)), t * f(kP1) + t * f(kP2)};
}

UOp sin_f64(const UOp& x, bool full, int max_exp) {
  UOp neg = lt(x, f(0)), ax = sel(neg, -x, x);
  Reduced cw = cody_waite(x), ph = payne_hanek(ax, max_exp);
  UOp small = lt(ax, f(0x1p20));
  UOp n = sel(small, cw.n, sel(neg, -ph.n, ph.n)), r = sel(small, cw.r, sel(neg, -ph.r, ph.r));
  UOp r2 = r * r;
  int sin_terms = full ? 9 : 5, cos_terms = full ? 9 : 6;
  std::vector<double> s(sin_terms), c(cos_terms);
  double fact = 1;
  for (int k = 0; k < 2 * std::max(sin_terms, cos_terms) + 1; ++k) {
    if (k > 0) fact *= k;
    double v = ((k / 2) % 2 ? -1.0 : 1.0) / fact;
    if (k % 2 == 1 && k / 2 < sin_terms) s[k / 2] = v;
    if (k % 2 == 0 && k / 2 < cos_terms) c[k / 2] = v;
  }
  UOp sn = r * horner(r2, s), cs = horner(r2, c);
  UOp q = n & i64(3);
  UOp v = sel(q.eq(i64(0)), sn, sel(q.eq(i64(1)), cs, sel(q.eq(i64(2)), -sn, -cs)));
  return sel(isnan(x) | x.eq(f(INFINITY)) | x.eq(f(-INFINITY)), f(NAN), v);
}

}  // namespace

UOp transcendental(Op op, const UOp& x) {
  DType t = x.dtype();
  if (!t.is_float() || t.count != 1) throw Error(std::string(op_name(op)) + " needs a scalar float, got " + t.name());
  bool full = wide(t);
  UOp xd = x.cast(F), r;
  switch (op) {
    case Op::EXP2: r = exp2_f64(xd, full); break;
    case Op::LOG2: r = log2_f64(xd, full); break;
    case Op::SIN: r = sin_f64(xd, full, t.scalar == ScalarType::Half ? 15 : full ? 1023 : 127); break;
    default: throw Error("internal: no decomposition for " + std::string(op_name(op)));
  }
  return r.cast(t);
}

UOp xpow(const UOp& base, const UOp& exponent, bool has_f64) {
  DType t = base.dtype();
  if (!t.is_float() || exponent.dtype() != t)
    throw Error("POW needs two floats of one dtype: " + to_inline(UOp::alu(Op::POW, {base, exponent}), 100));
  bool full = wide(t);
  // Without float64 (an Adreno), in float32 through the hardware's exp2 and log2: a few ulp, growing
  // with |y log2 x|, instead of the float64 scheme's correctly rounded float32.
  const DType C = has_f64 ? F : dtypes::float32;
  auto f = [&](double v) { return UOp::const_float(C, v); };
  UOp x = base.cast(C), y = exponent.cast(C);
  UOp ax = sel(lt(x, f(0)), -x, x);
  UOp mag = has_f64 ? exp2_f64(y * log2_f64(ax, full), full) : UOp::alu(Op::EXP2, {y * UOp::alu(Op::LOG2, {ax})});
  UOp is_int = trunc(y).eq(y), half = y * f(0.5), odd = is_int & trunc(half).ne(half);
  UOp neg = lt(x, f(0));
  // C: pow(x, 0) = 1 and pow(1, y) = 1 even for NaN; a finite negative base needs an integer exponent.
  UOp r = sel(neg & lt(f(-INFINITY), x) & is_int.logical_not(), f(NAN), sel(neg & odd, -mag, mag));
  UOp zero_base = x.eq(f(0));  // pow(+-0, y): sign kept for odd y
  UOp zr = sel(lt(y, f(0)), f(INFINITY), f(0));
  r = sel(zero_base, sel(odd & div(f(1), x).lt(f(0)), -zr, zr), r);
  r = sel(x.eq(f(-1)) & (y.eq(f(INFINITY)) | y.eq(f(-INFINITY))), f(1), r);
  r = sel(y.eq(f(0)) | x.eq(f(1)), f(1), r);
  return r.cast(t);
}

}  // namespace ugpu::codegen
