// Floating-point helpers of the PTX executor: f16/bf16 decoding, correctly rounded conversion of an
// exact value to f16/bf16/f32 in any IEEE direction, and directed rounding for f64.
//
// The trick used throughout: an operation on f16/bf16/f32 inputs is computed in double, together
// with the sign of what double rounding lost (exactly, by the classic error-free transformations:
// TwoSum for sums, fma for the remainder of a product, quotient or square root). A double plus
// that sign pins the exact result down tightly enough to round it once, correctly, to the narrower
// format. f64 results come from the host's IEEE arithmetic, nudged by one ulp for the directed modes.
#pragma once
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "emu/nv/ptx/ptx_ir.h"

namespace ugpu::emu::nv::detail::fp {

struct Format {
  int mant, exp;
  uint64_t canonical_nan;
};
inline constexpr Format kHalf{10, 5, 0x7fff}, kBf16{7, 8, 0x7fff}, kF32{23, 8, 0x7fffffff};

inline int sign_of(double v) { return v > 0 ? 1 : v < 0 ? -1 : 0; }

// Rounds x + r (r an infinitesimal of sign `residual`, smaller than x's double ulp) to `f` in
// direction `mode`; returns the encoding. NaN becomes the format's canonical NaN.
inline uint64_t round_to(double x, int residual, const Format& f, uint8_t mode) {
  const int bias = (1 << (f.exp - 1)) - 1, emin = 1 - bias;
  const uint64_t exp_all = (uint64_t{1} << f.exp) - 1;
  const uint64_t sign = std::signbit(x) ? uint64_t{1} << (f.mant + f.exp) : 0;
  if (std::isnan(x)) return f.canonical_nan;
  if (std::isinf(x)) return sign | exp_all << f.mant;
  if (x == 0) return sign;
  const int mres = sign ? -residual : residual;
  int e2 = 0;
  double m = std::frexp(std::fabs(x), &e2);  // |x| = m * 2^e2, m in [0.5, 1)
  const int lead = e2 - 1;
  const uint64_t M = static_cast<uint64_t>(std::ldexp(m, 53));  // |x| = M * 2^(lead - 52)
  uint64_t enc = 0;
  int pos = 0;  // where x+r lies above enc: 0 exactly on it, 1 below the half-way point, 2 at it, 3 above
  if (lead > bias) {
    enc = (exp_all << f.mant) - 1, pos = 3;  // past the largest finite value
  } else {
    const int quantum = (lead > emin ? lead : emin) - f.mant;
    const int sh = quantum - (lead - 52);
    uint64_t kept = 0, rem = 0, half = 0;
    if (sh >= 64) {
      rem = M, half = ~uint64_t{0};
    } else {
      kept = M >> sh, rem = M & ((uint64_t{1} << sh) - 1), half = uint64_t{1} << (sh - 1);
    }
    enc = lead >= emin ? (static_cast<uint64_t>(lead + bias - 1) << f.mant) + kept : kept;
    if (rem == 0) {
      if (mres > 0) pos = 1;
      else if (mres < 0) enc -= 1, pos = 3;  // just below a representable value: its predecessor, plus almost an ulp
    } else {
      pos = rem < half ? 1 : rem > half ? 3 : mres > 0 ? 3 : mres < 0 ? 1 : 2;
    }
  }
  bool up = false;
  switch (mode) {
    case kRN: up = pos == 3 || (pos == 2 && (enc & 1)); break;
    case kRZ: up = false; break;
    case kRM: up = sign && pos != 0; break;
    case kRP: up = !sign && pos != 0; break;
    default: up = pos == 3 || (pos == 2 && (enc & 1)); break;
  }
  return sign | (enc + (up ? 1 : 0));
}

inline double half_to_double(uint64_t raw) {
  const uint32_t h = static_cast<uint32_t>(raw & 0xffff);
  const int e = static_cast<int>(h >> 10 & 31);
  const uint32_t m = h & 0x3ff;
  double v;
  if (e == 0) v = std::ldexp(static_cast<double>(m), -24);
  else if (e == 31) v = m ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
  else v = std::ldexp(static_cast<double>(m | 0x400), e - 25);
  return (h & 0x8000) ? -v : v;
}
inline double bf16_to_double(uint64_t raw) { return static_cast<double>(std::bit_cast<float>(static_cast<uint32_t>(raw & 0xffff) << 16)); }
inline double f32_to_double(uint64_t raw) { return static_cast<double>(std::bit_cast<float>(static_cast<uint32_t>(raw))); }
inline double f64_of(uint64_t raw) { return std::bit_cast<double>(raw); }
inline float f32_of(uint64_t raw) { return std::bit_cast<float>(static_cast<uint32_t>(raw)); }
inline uint64_t bits_of(float f) { return std::bit_cast<uint32_t>(f); }
inline uint64_t bits_of(double d) { return std::bit_cast<uint64_t>(d); }

// a + b = s + e exactly (Knuth's TwoSum; round-to-nearest arithmetic).
inline double two_sum_err(double a, double b, double s) {
  double bb = s - a;
  return (a - (s - bb)) + (b - bb);
}

// The nearest double in the direction of `mode`, given the round-to-nearest result s and the sign
// of the exact result minus s.
inline double directed(double s, int residual, uint8_t mode) {
  if (residual == 0 || mode == kRN || std::isnan(s)) return s;
  constexpr double inf = std::numeric_limits<double>::infinity();
  switch (mode) {
    case kRZ: return (residual < 0) != (s < 0) ? std::nextafter(s, 0.0) : s;
    case kRM: return residual < 0 ? std::nextafter(s, -inf) : s;
    case kRP: return residual > 0 ? std::nextafter(s, inf) : s;
    default: return s;
  }
}
// An overflow to infinity in round-to-nearest, redone in `mode`.
inline double overflowed(double s, uint8_t mode) {
  constexpr double max = std::numeric_limits<double>::max();
  if (mode == kRZ) return s > 0 ? max : -max;
  if (mode == kRM && s > 0) return max;
  if (mode == kRP && s < 0) return -max;
  return s;
}

}  // namespace ugpu::emu::nv::detail::fp
