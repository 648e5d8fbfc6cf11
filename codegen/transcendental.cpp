// Transcendentals from basic arithmetic. Everything is computed in float64: a float32 (or half,
// bfloat16) result is then rounded once, so its error is the rounding plus a polynomial error far
// below it; float64 uses longer polynomials in the same scheme.
//
//   exp2(x):  n = round(x), f = x - n in [-1/2, 1/2];  2^f by its Taylor series in f*ln2;  times 2^n
//             built from exponent bits in two halves (so 2^n may be subnormal or overflow to inf).
//   log2(x):  x = m * 2^e with m in [sqrt(1/2), sqrt(2)];  log2(m) = 2/ln2 * atanh(t), t = (m-1)/(m+1),
//             by the odd series of atanh;  subnormals scaled by 2^64 first.
//   sin(x):   n = round(x * 2/pi), r = x - n*pi/2 with pi/2 split in three (Cody-Waite: the first two
//             parts have 26 bits, so n*part is exact while |n| < 2^27);  sin or cos of r by Taylor
//             series, chosen and signed by n mod 4.
//   pow(x,y): exp2(y * log2|x|) with C's rules for signs, zeros, ones, infinities and NaN.
#include "codegen/transcendental.h"

#include <cmath>

#include "common/error.h"
#include "ir/text.h"

namespace ugpu::codegen {
using namespace ir;
namespace {

const DType F = dtypes::float64, I = dtypes::int64;
UOp f(double v) { return UOp::const_float(F, v); }
UOp i64(int64_t v) { return UOp::const_int(I, v); }
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

UOp sin_f64(const UOp& x, bool full) {
  // pi/2 = C1 + C2 + C3, C1 and C2 with 26 significant bits.
  constexpr double kC1 = 0x1.921fb58p+0, kC2 = -0x1.dde974p-27, kC3 = 0x1.1a62633145c07p-54;
  UOp n = round_half_up(x * f(M_2_PI));
  UOp r = ((x - n * f(kC1)) - n * f(kC2)) - n * f(kC3);
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
  UOp q = n.cast(I) & i64(3);
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
    case Op::SIN: r = sin_f64(xd, full); break;
    default: throw Error("internal: no decomposition for " + std::string(op_name(op)));
  }
  return r.cast(t);
}

UOp xpow(const UOp& base, const UOp& exponent) {
  DType t = base.dtype();
  if (!t.is_float() || exponent.dtype() != t) throw Error("POW needs two floats of one dtype: " + to_inline(UOp::alu(Op::POW, {base, exponent}), 100));
  bool full = wide(t);
  UOp x = base.cast(F), y = exponent.cast(F);
  UOp ax = sel(lt(x, f(0)), -x, x);
  UOp mag = exp2_f64(y * log2_f64(ax, full), full);
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
