// The PTX executor's arithmetic, logic, comparison and conversion instructions, each run over the
// active lanes of a warp. Semantics follow the PTX ISA; the choices it leaves open are ours and are
// listed in emu/README.md (integer division by zero, NaN bit patterns, approximate functions).
#include <algorithm>
#include <bit>
#include <cfenv>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "emu/nv/ptx/ptx_exec.h"
#include "emu/nv/ptx/ptx_float.h"

namespace ugpu::emu::nv::detail {
namespace {

using namespace fp;
using i128 = __int128;
using u128 = unsigned __int128;

// ---- lane loops -------------------------------------------------------------------------------

// A full warp computes into a temporary first: no aliasing between source and destination slots,
// so the compiler can use vector instructions.
template <class Op>
void map1(Warp& w, const Inst& in, uint32_t m) {
  uint64_t* d = slot(w, in.d[0]);
  const uint64_t* a = slot(w, in.s[0]);
  if (m == 0xffffffffu) {
    uint64_t t[32];
    for (int l = 0; l < 32; ++l) t[l] = Op::f(in, a[l]);
    std::memcpy(d, t, sizeof t);
    return;
  }
  for_lanes(m, [&](int l) { d[l] = Op::f(in, a[l]); });
}
template <class Op>
void map2(Warp& w, const Inst& in, uint32_t m) {
  uint64_t* d = slot(w, in.d[0]);
  const uint64_t *a = slot(w, in.s[0]), *b = slot(w, in.s[1]);
  if (m == 0xffffffffu) {
    uint64_t t[32];
    for (int l = 0; l < 32; ++l) t[l] = Op::f(in, a[l], b[l]);
    std::memcpy(d, t, sizeof t);
    return;
  }
  for_lanes(m, [&](int l) { d[l] = Op::f(in, a[l], b[l]); });
}
template <class Op>
void map3(Warp& w, const Inst& in, uint32_t m) {
  uint64_t* d = slot(w, in.d[0]);
  const uint64_t *a = slot(w, in.s[0]), *b = slot(w, in.s[1]), *c = slot(w, in.s[2]);
  if (m == 0xffffffffu) {
    uint64_t t[32];
    for (int l = 0; l < 32; ++l) t[l] = Op::f(in, a[l], b[l], c[l]);
    std::memcpy(d, t, sizeof t);
    return;
  }
  for_lanes(m, [&](int l) { d[l] = Op::f(in, a[l], b[l], c[l]); });
}
template <class Op>
void map4(Warp& w, const Inst& in, uint32_t m) {
  uint64_t* d = slot(w, in.d[0]);
  const uint64_t *a = slot(w, in.s[0]), *b = slot(w, in.s[1]), *c = slot(w, in.s[2]), *e = slot(w, in.s[3]);
  for_lanes(m, [&](int l) { d[l] = Op::f(in, a[l], b[l], c[l], e[l]); });
}

template <class U>
constexpr int width() {
  return static_cast<int>(sizeof(U) * 8);
}
template <class U>
uint64_t put(U v) {
  if constexpr (std::is_signed_v<U>) return static_cast<uint64_t>(static_cast<int64_t>(v));
  else return static_cast<uint64_t>(v);
}

// ---- integers ---------------------------------------------------------------------------------
// A register's low bits are its value; bits above its width are don't-care. Operations whose low
// bits do not depend on the width (add, sub, mul.lo, logic) run on all 64 bits for every type.

struct Add64 {
  static uint64_t f(const Inst&, uint64_t a, uint64_t b) { return a + b; }
};
struct Sub64 {
  static uint64_t f(const Inst&, uint64_t a, uint64_t b) { return a - b; }
};
struct MulLo64 {
  static uint64_t f(const Inst&, uint64_t a, uint64_t b) { return a * b; }
};
struct MadLo64 {
  static uint64_t f(const Inst&, uint64_t a, uint64_t b, uint64_t c) { return a * b + c; }
};
struct And64 {
  static uint64_t f(const Inst&, uint64_t a, uint64_t b) { return a & b; }
};
struct Or64 {
  static uint64_t f(const Inst&, uint64_t a, uint64_t b) { return a | b; }
};
struct Xor64 {
  static uint64_t f(const Inst&, uint64_t a, uint64_t b) { return a ^ b; }
};
struct Not64 {
  static uint64_t f(const Inst&, uint64_t a) { return ~a; }
};
struct Neg64 {
  static uint64_t f(const Inst&, uint64_t a) { return 0 - a; }
};
struct Copy {
  static uint64_t f(const Inst&, uint64_t a) { return a; }
};

template <class U>
struct Cnot {
  static uint64_t f(const Inst&, uint64_t a) { return static_cast<U>(a) == 0 ? 1 : 0; }
};

struct AddSat32 {
  static uint64_t f(const Inst&, uint64_t a, uint64_t b) {
    int64_t r = static_cast<int64_t>(static_cast<int32_t>(a)) + static_cast<int32_t>(b);
    return put<int32_t>(static_cast<int32_t>(std::clamp<int64_t>(r, INT32_MIN, INT32_MAX)));
  }
};
struct SubSat32 {
  static uint64_t f(const Inst&, uint64_t a, uint64_t b) {
    int64_t r = static_cast<int64_t>(static_cast<int32_t>(a)) - static_cast<int32_t>(b);
    return put<int32_t>(static_cast<int32_t>(std::clamp<int64_t>(r, INT32_MIN, INT32_MAX)));
  }
};

// The high half of the double-width product.
template <class U>
U mul_hi(U a, U b) {
  if constexpr (sizeof(U) == 8) {
    if constexpr (std::is_signed_v<U>) return static_cast<U>((static_cast<i128>(a) * b) >> 64);
    else return static_cast<U>((static_cast<u128>(a) * b) >> 64);
  } else {
    using W = std::conditional_t<std::is_signed_v<U>, int64_t, uint64_t>;
    return static_cast<U>((static_cast<W>(a) * static_cast<W>(b)) >> width<U>());
  }
}
template <class U>
struct MulHi {
  static uint64_t f(const Inst&, uint64_t a, uint64_t b) { return put<U>(mul_hi<U>(static_cast<U>(a), static_cast<U>(b))); }
};
template <class U>
struct MadHi {
  static uint64_t f(const Inst&, uint64_t a, uint64_t b, uint64_t c) {
    return put<U>(static_cast<U>(static_cast<std::make_unsigned_t<U>>(mul_hi<U>(static_cast<U>(a), static_cast<U>(b))) +
                                 static_cast<std::make_unsigned_t<U>>(c)));
  }
};
struct MadHiSat32 {
  static uint64_t f(const Inst&, uint64_t a, uint64_t b, uint64_t c) {
    int64_t hi = (static_cast<int64_t>(static_cast<int32_t>(a)) * static_cast<int32_t>(b)) >> 32;
    return put<int32_t>(static_cast<int32_t>(std::clamp<int64_t>(hi + static_cast<int32_t>(c), INT32_MIN, INT32_MAX)));
  }
};
template <class U>
struct MulWide {
  using W = std::conditional_t<std::is_signed_v<U>, std::conditional_t<sizeof(U) == 2, int32_t, int64_t>,
                               std::conditional_t<sizeof(U) == 2, uint32_t, uint64_t>>;
  static uint64_t f(const Inst&, uint64_t a, uint64_t b) {
    return put<W>(static_cast<W>(static_cast<W>(static_cast<U>(a)) * static_cast<W>(static_cast<U>(b))));
  }
};
template <class U>
struct MadWide {
  using W = typename MulWide<U>::W;
  static uint64_t f(const Inst& in, uint64_t a, uint64_t b, uint64_t c) { return MulWide<U>::f(in, a, b) + c; }
};
// mul24/mad24: the low 24 bits of each operand (sign-extended for .s32), a 48-bit product.
template <class U>
int64_t mul24(uint64_t a, uint64_t b) {
  int64_t x = static_cast<int64_t>(a & 0xffffff), y = static_cast<int64_t>(b & 0xffffff);
  if constexpr (std::is_signed_v<U>) x = (x ^ 0x800000) - 0x800000, y = (y ^ 0x800000) - 0x800000;
  return x * y;
}
template <class U>
uint64_t mul24_half(const Inst& in, uint64_t a, uint64_t b) {
  const bool hi = in.op == Opc::Mul24Hi || in.op == Opc::Mad24Hi;
  return static_cast<uint64_t>(mul24<U>(a, b) >> (hi ? 16 : 0)) & 0xffffffff;
}
template <class U>
struct Mul24 {
  static uint64_t f(const Inst& in, uint64_t a, uint64_t b) { return mul24_half<U>(in, a, b); }
};
template <class U>
struct Mad24 {
  static uint64_t f(const Inst& in, uint64_t a, uint64_t b, uint64_t c) { return mul24_half<U>(in, a, b) + c; }
};
template <class U>
struct Sad {
  static uint64_t f(const Inst&, uint64_t a, uint64_t b, uint64_t c) {
    U x = static_cast<U>(a), y = static_cast<U>(b);
    using UU = std::make_unsigned_t<U>;
    UU diff = x > y ? static_cast<UU>(static_cast<UU>(x) - static_cast<UU>(y)) : static_cast<UU>(static_cast<UU>(y) - static_cast<UU>(x));
    return static_cast<uint64_t>(diff) + c;
  }
};

// Division by zero: the quotient is all ones and the remainder the dividend (what the reciprocal-based
// sequence the hardware runs gives for unsigned division); MIN / -1 is MIN with remainder 0.
template <class U>
struct Div {
  static uint64_t f(const Inst&, uint64_t a, uint64_t b) {
    U x = static_cast<U>(a), y = static_cast<U>(b);
    if (y == 0) return ~uint64_t{0};
    if constexpr (std::is_signed_v<U>)
      if (x == std::numeric_limits<U>::min() && y == -1) return put<U>(x);
    return put<U>(static_cast<U>(x / y));
  }
};
template <class U>
struct Rem {
  static uint64_t f(const Inst&, uint64_t a, uint64_t b) {
    U x = static_cast<U>(a), y = static_cast<U>(b);
    if (y == 0) return put<U>(x);
    if constexpr (std::is_signed_v<U>)
      if (y == -1) return 0;
    return put<U>(static_cast<U>(x % y));
  }
};
template <class U>
struct Abs {
  static uint64_t f(const Inst&, uint64_t a) {
    U x = static_cast<U>(a);
    using UU = std::make_unsigned_t<U>;
    return put<U>(static_cast<U>(x < 0 ? static_cast<UU>(0 - static_cast<UU>(x)) : static_cast<UU>(x)));
  }
};
template <class U>
struct Min {
  static uint64_t f(const Inst&, uint64_t a, uint64_t b) {
    U x = static_cast<U>(a), y = static_cast<U>(b);
    return put<U>(x < y ? x : y);
  }
};
template <class U>
struct Max {
  static uint64_t f(const Inst&, uint64_t a, uint64_t b) {
    U x = static_cast<U>(a), y = static_cast<U>(b);
    return put<U>(x > y ? x : y);
  }
};
struct MaxRelu32 {
  static uint64_t f(const Inst&, uint64_t a, uint64_t b) {
    int32_t x = static_cast<int32_t>(a), y = static_cast<int32_t>(b);
    return put<int32_t>(std::max(0, std::max(x, y)));
  }
};
struct MinRelu32 {
  static uint64_t f(const Inst&, uint64_t a, uint64_t b) {
    int32_t x = static_cast<int32_t>(a), y = static_cast<int32_t>(b);
    return put<int32_t>(std::max(0, std::min(x, y)));
  }
};

template <class U>
struct Shl {
  static uint64_t f(const Inst&, uint64_t a, uint64_t b) {
    uint32_t n = static_cast<uint32_t>(b);
    return n >= static_cast<uint32_t>(width<U>()) ? 0 : put<U>(static_cast<U>(static_cast<U>(a) << n));
  }
};
template <class U>
struct Shr {
  static uint64_t f(const Inst&, uint64_t a, uint64_t b) {
    uint32_t n = std::min<uint32_t>(static_cast<uint32_t>(b), width<U>() - 1 + (std::is_signed_v<U> ? 0 : 1));
    if (n >= static_cast<uint32_t>(width<U>())) return 0;
    return put<U>(static_cast<U>(static_cast<U>(a) >> n));
  }
};
// Funnel shifts: {b:a} as 64 bits, b high.
struct Shf {
  static uint64_t f(const Inst& in, uint64_t a, uint64_t b, uint64_t c) {
    uint32_t n = static_cast<uint32_t>(c);
    n = in.cmp ? std::min<uint32_t>(n, 32) : (n & 31);  // cmp: 1 = .clamp, 0 = .wrap
    uint64_t v = (b & 0xffffffff) << 32 | (a & 0xffffffff);
    return in.op == Opc::ShfL ? (v << n) >> 32 & 0xffffffff : (v >> n) & 0xffffffff;
  }
};

template <class U>
struct Popc {
  static uint64_t f(const Inst&, uint64_t a) { return static_cast<uint64_t>(std::popcount(static_cast<std::make_unsigned_t<U>>(a))); }
};
template <class U>
struct Clz {
  static uint64_t f(const Inst&, uint64_t a) { return static_cast<uint64_t>(std::countl_zero(static_cast<std::make_unsigned_t<U>>(a))); }
};
template <class U>
struct Brev {
  static uint64_t f(const Inst&, uint64_t a) {
    using UU = std::make_unsigned_t<U>;
    UU x = static_cast<UU>(a), r = 0;
    for (int i = 0; i < width<U>(); ++i) r = static_cast<UU>(r << 1 | ((x >> i) & 1));
    return r;
  }
};
template <class U>
struct Bfind {
  static uint64_t f(const Inst& in, uint64_t a) {
    using UU = std::make_unsigned_t<U>;
    UU x = static_cast<UU>(a);
    if (std::is_signed_v<U> && static_cast<U>(x) < 0) x = static_cast<UU>(~x);
    if (x == 0) return 0xffffffff;
    uint32_t pos = static_cast<uint32_t>(width<U>() - 1 - std::countl_zero(x));
    return (in.flags & kShiftAmt) ? static_cast<uint32_t>(width<U>() - 1) - pos : pos;
  }
};
template <class U>
struct Bfe {
  static uint64_t f(const Inst&, uint64_t a, uint64_t b, uint64_t c) {
    using UU = std::make_unsigned_t<U>;
    const uint32_t msb = width<U>() - 1, pos = static_cast<uint32_t>(b & 0xff), len = static_cast<uint32_t>(c & 0xff);
    UU x = static_cast<UU>(a), r = 0;
    UU sbit = 0;
    if (std::is_signed_v<U> && len) sbit = (x >> std::min(pos + len - 1, msb)) & 1;
    for (uint32_t i = 0; i <= msb; ++i) {
      UU bit = (i < len && pos + i <= msb) ? (x >> (pos + i)) & 1 : sbit;
      r = static_cast<UU>(r | bit << i);
    }
    return put<U>(static_cast<U>(r));
  }
};
template <class U>
struct Bfi {
  static uint64_t f(const Inst&, uint64_t a, uint64_t b, uint64_t c, uint64_t d) {
    using UU = std::make_unsigned_t<U>;
    const uint32_t msb = width<U>() - 1, pos = static_cast<uint32_t>(c & 0xff), len = static_cast<uint32_t>(d & 0xff);
    UU f = static_cast<UU>(a), r = static_cast<UU>(b);
    for (uint32_t i = 0; i < len && pos + i <= msb; ++i) r = static_cast<UU>((r & ~(UU{1} << (pos + i))) | ((f >> i) & 1) << (pos + i));
    return r;
  }
};
struct Bmsk {
  static uint64_t f(const Inst& in, uint64_t a, uint64_t b) {
    uint32_t pos = static_cast<uint32_t>(a), len = static_cast<uint32_t>(b);
    if (in.cmp) pos = std::min<uint32_t>(pos, 32), len = std::min<uint32_t>(len, 32);  // .clamp
    else pos &= 31, len &= 31;                                                         // .wrap
    uint64_t hi = pos + len >= 32 ? 0xffffffffull : ((uint64_t{1} << (pos + len)) - 1);
    uint64_t lo = pos >= 32 ? 0xffffffffull : ((uint64_t{1} << pos) - 1);
    return hi & ~lo & 0xffffffffull;
  }
};
template <class U>
struct Szext {
  static uint64_t f(const Inst& in, uint64_t a, uint64_t b) {
    uint32_t n = static_cast<uint32_t>(b);
    n = in.cmp ? std::min<uint32_t>(n, 32) : (n & 31);
    uint32_t x = static_cast<uint32_t>(a);
    if (n == 0) return 0;
    if (n >= 32) return put<U>(static_cast<U>(x));
    uint32_t v = x & ((1u << n) - 1);
    if (std::is_signed_v<U> && (v >> (n - 1) & 1)) v |= ~((1u << n) - 1);
    return put<U>(static_cast<U>(v));
  }
};
// prmt: bytes of {b, a} (a = bytes 0-3) chosen by c.
struct Prmt {
  static uint64_t f(const Inst& in, uint64_t a, uint64_t b, uint64_t c) {
    uint64_t v = (b & 0xffffffff) << 32 | (a & 0xffffffff);
    auto byte = [&](uint32_t i) { return static_cast<uint32_t>(v >> (8 * (i & 7)) & 0xff); };
    uint32_t sel = static_cast<uint32_t>(c), r = 0, s[4];
    switch (in.cmp) {
      case 0:  // default: four selector nibbles; bit 3 replicates the byte's sign
        for (int i = 0; i < 4; ++i) {
          uint32_t n = sel >> (4 * i) & 0xf, x = byte(n);
          if (n & 8) x = (x & 0x80) ? 0xff : 0;
          r |= x << (8 * i);
        }
        return r;
      case 1: {
        uint32_t k = sel & 3;
        for (uint32_t i = 0; i < 4; ++i) s[i] = (k + i) & 7;
        break;
      }  // f4e
      case 2: {
        uint32_t k = sel & 3;
        for (uint32_t i = 0; i < 4; ++i) s[i] = (k + 8 - i) & 7;
        break;
      }  // b4e
      case 3: {
        uint32_t k = sel & 3;
        for (uint32_t i = 0; i < 4; ++i) s[i] = k;
        break;
      }  // rc8
      case 4: {
        uint32_t k = sel & 3;
        for (uint32_t i = 0; i < 4; ++i) s[i] = i < k ? k : i;
        break;
      }  // ecl
      case 5: {
        uint32_t k = sel & 3;
        for (uint32_t i = 0; i < 4; ++i) s[i] = i > k ? k : i;
        break;
      }  // ecr
      default: {
        uint32_t k = (sel & 1) * 2;
        s[0] = k, s[1] = k + 1, s[2] = k, s[3] = k + 1;
        break;
      }  // rc16
    }
    for (int i = 0; i < 4; ++i) r |= byte(s[i]) << (8 * i);
    return r;
  }
};
struct Lop3 {
  static uint64_t f(const Inst& in, uint64_t a, uint64_t b, uint64_t c) {
    uint64_t r = 0, lut = static_cast<uint64_t>(in.offset);
    for (int i = 0; i < 8; ++i)
      if (lut >> i & 1) r |= ((i & 4) ? a : ~a) & ((i & 2) ? b : ~b) & ((i & 1) ? c : ~c);
    return r & 0xffffffff;
  }
};
// dp4a / dp2a: byte (and halfword) dot products; type = a's type, type2 = b's type.
struct Dp {
  static uint64_t f(const Inst& in, uint64_t a, uint64_t b, uint64_t c) {
    const bool sa = is_signed(in.type), sb = is_signed(in.type2);
    auto part = [](uint64_t v, int i, int w, bool s) -> int64_t {
      uint64_t x = v >> (i * w) & ((uint64_t{1} << w) - 1);
      return s ? static_cast<int64_t>(x ^ (uint64_t{1} << (w - 1))) - (int64_t{1} << (w - 1)) : static_cast<int64_t>(x);
    };
    int64_t sum = static_cast<int64_t>(static_cast<uint32_t>(c));
    if (is_signed(in.type) || is_signed(in.type2)) sum = static_cast<int32_t>(c);
    if (in.op == Opc::Dp4a) {
      for (int i = 0; i < 4; ++i) sum += part(a, i, 8, sa) * part(b, i, 8, sb);
    } else {
      int base = in.op == Opc::Dp2aHi ? 2 : 0;
      for (int i = 0; i < 2; ++i) sum += part(a, i, 16, sa) * part(b, base + i, 8, sb);
    }
    return static_cast<uint64_t>(sum) & 0xffffffff;
  }
};

// add.cc / addc / sub.cc / subc: the carry flag is a hidden per-lane register.
template <class U>
void carry_op(Warp& w, const Inst& in, uint32_t m) {
  uint64_t *d = slot(w, in.d[0]), *cc = slot(w, in.s[2]);
  const uint64_t *a = slot(w, in.s[0]), *b = slot(w, in.s[1]);
  using UU = std::make_unsigned_t<U>;
  const bool sub = in.op == Opc::Sub, cin = in.flags & kCarryIn, cout = in.flags & kCC;
  for_lanes(m, [&](int l) {
    u128 x = static_cast<UU>(a[l]), y = static_cast<UU>(b[l]);
    u128 c = cin ? (cc[l] & 1) : 0;
    u128 r;
    uint64_t carry;
    if (sub) {  // the flag holds the borrow
      r = x - y - c;
      carry = (x < y + c) ? 1 : 0;
    } else {
      r = x + y + c;
      carry = static_cast<uint64_t>(r >> width<U>()) & 1;
    }
    d[l] = static_cast<uint64_t>(static_cast<UU>(r));
    if (cout) cc[l] = carry;
  });
}

// ---- integer comparisons ----------------------------------------------------------------------

inline void write_pred(Warp& w, uint32_t p, uint32_t m, uint32_t bits) {
  if (p != kNone) w.p[p] = (w.p[p] & ~m) | (bits & m);
}
inline uint32_t pred_src(const Warp& w, const Inst& in) { return in.sp == kNone ? 0xffffffffu : (w.p[in.sp] ^ (in.c_neg ? 0xffffffffu : 0)); }

// setp/set: t holds the comparison per lane; combine with the predicate operand, write p (and q).
inline uint32_t combine(uint8_t bop, uint32_t t, uint32_t c) {
  switch (bop) {
    case kAnd: return t & c;
    case kOr: return t | c;
    case kXor: return t ^ c;
    default: return t;
  }
}
void finish_setp(Warp& w, const Inst& in, uint32_t m, uint32_t t) {
  uint32_t c = pred_src(w, in);
  uint32_t p = combine(in.bop, t, c), q = combine(in.bop, ~t, c);
  write_pred(w, in.d[0], m, p);
  write_pred(w, in.d[1], m, q);
}
// set: d = all ones of its width (or 1.0 in its float format) where the combined comparison holds, else 0.
inline uint64_t set_true(T t) {
  switch (t) {
    case T::F32: return 0x3f800000u;
    case T::F16: return 0x3c00;
    case T::BF16: return 0x3f80;
    case T::U16:
    case T::S16: return 0xffff;
    default: return 0xffffffffu;
  }
}
void finish_set(Warp& w, const Inst& in, uint32_t m, uint32_t t) {
  uint32_t p = combine(in.bop, t, pred_src(w, in));
  uint64_t* d = slot(w, in.d[0]);
  const uint64_t one = set_true(in.type);
  for_lanes(m, [&](int l) { d[l] = (p >> l & 1) ? one : 0; });
}

template <class U>
uint32_t int_compare(Warp& w, const Inst& in, uint32_t m) {
  const uint64_t *a = slot(w, in.s[0]), *b = slot(w, in.s[1]);
  using UU = std::make_unsigned_t<U>;
  uint32_t t = 0;
#define UGPU_CMP(C, E)                                      \
  case C:                                                   \
    for_lanes(m, [&](int l) {                               \
      U x = static_cast<U>(a[l]), y = static_cast<U>(b[l]); \
      UU ux = static_cast<UU>(x), uy = static_cast<UU>(y);  \
      (void)ux, (void)uy;                                   \
      t |= static_cast<uint32_t>(E) << l;                   \
    });                                                     \
    break;
  switch (in.cmp) {
    UGPU_CMP(kEq, x == y)
    UGPU_CMP(kNe, x != y)
    UGPU_CMP(kLt, x < y)
    UGPU_CMP(kLe, x <= y)
    UGPU_CMP(kGt, x > y)
    UGPU_CMP(kGe, x >= y)
    UGPU_CMP(kLo, ux < uy)
    UGPU_CMP(kLs, ux <= uy)
    UGPU_CMP(kHi, ux > uy)
    UGPU_CMP(kHs, ux >= uy)
    default: break;
  }
#undef UGPU_CMP
  return t;
}
template <class U>
void setp_int(Warp& w, const Inst& in, uint32_t m) {
  finish_setp(w, in, m, int_compare<U>(w, in, m));
}
template <class U>
void set_int(Warp& w, const Inst& in, uint32_t m) {
  finish_set(w, in, m, int_compare<U>(w, in, m));
}

// ---- floating point ---------------------------------------------------------------------------
// Formats: K::get turns a register into its exact double value; K::fmt rounds back.

struct KH {
  static constexpr const Format& fmt = kHalf;
  static constexpr uint64_t sign = 0x8000, exp = 0x7c00, one = 0x3c00;
  static double get(uint64_t r) { return half_to_double(r); }
};
struct KB {
  static constexpr const Format& fmt = kBf16;
  static constexpr uint64_t sign = 0x8000, exp = 0x7f80, one = 0x3f80;
  static double get(uint64_t r) { return bf16_to_double(r); }
};
struct KS {
  static constexpr const Format& fmt = kF32;
  static constexpr uint64_t sign = 0x80000000u, exp = 0x7f800000u, one = 0x3f800000u;
  static double get(uint64_t r) { return f32_to_double(r); }
};

template <class K>
bool subnormal(uint64_t r) {
  return (r & K::exp) == 0 && (r & (K::sign - 1)) != 0;
}
template <class K>
uint64_t raw(uint64_t r) {
  return r & (K::sign * 2 - 1);
}
template <class K>
double fin(const Inst& in, uint64_t r) {
  r = raw<K>(r);
  if ((in.flags & kFtz) && subnormal<K>(r)) r &= K::sign;
  return K::get(r);
}
template <class K>
uint64_t saturate(uint64_t b) {
  uint64_t mag = b & (K::sign - 1);
  if (mag > K::exp || (b & K::sign)) return 0;  // NaN or negative
  return mag > K::one ? K::one : b;
}
template <class K>
uint64_t fout(const Inst& in, double v, int residual) {
  uint64_t b = round_to(v, residual, K::fmt, rn_default(in.rnd));
  if ((in.flags & kFtz) && subnormal<K>(b)) b &= K::sign;
  if (in.flags & kSat) b = saturate<K>(b);
  if ((in.flags & kRelu) && (b & K::sign) && (b & (K::sign - 1)) <= K::exp) b = 0;
  return b;
}

// f16, bf16, and f32 with a rounding mode, ftz or sat: computed in double with the exact residual.
template <class K>
struct FAdd {
  static uint64_t f(const Inst& in, uint64_t a, uint64_t b) {
    double x = fin<K>(in, a), y = fin<K>(in, b);
    if (in.op == Opc::Sub) y = -y;
    double s = x + y;
    return fout<K>(in, s, sign_of(two_sum_err(x, y, s)));
  }
};
template <class K>
struct FMul {
  static uint64_t f(const Inst& in, uint64_t a, uint64_t b) { return fout<K>(in, fin<K>(in, a) * fin<K>(in, b), 0); }
};
template <class K>
struct FFma {
  static uint64_t f(const Inst& in, uint64_t a, uint64_t b, uint64_t c) {
    double p = fin<K>(in, a) * fin<K>(in, b), z = fin<K>(in, c), s = p + z;
    return fout<K>(in, s, sign_of(two_sum_err(p, z, s)));
  }
};
template <class K>
struct FDiv {
  static uint64_t f(const Inst& in, uint64_t a, uint64_t b) {
    double x = fin<K>(in, a), y = fin<K>(in, b), q = x / y;
    int res = 0;
    if (std::isfinite(q) && q != 0 && std::isfinite(y)) res = sign_of(std::fma(-q, y, x)) * sign_of(y);
    return fout<K>(in, q, res);
  }
};
template <class K>
struct FRcp {
  static uint64_t f(const Inst& in, uint64_t a) {
    double y = fin<K>(in, a), q = 1.0 / y;
    int res = 0;
    if (std::isfinite(q) && q != 0 && std::isfinite(y)) res = sign_of(std::fma(-q, y, 1.0)) * sign_of(y);
    return fout<K>(in, q, res);
  }
};
template <class K>
struct FSqrt {
  static uint64_t f(const Inst& in, uint64_t a) {
    double x = fin<K>(in, a), r = std::sqrt(x);
    int res = (x > 0 && std::isfinite(x)) ? sign_of(std::fma(-r, r, x)) : 0;
    return fout<K>(in, r, res);
  }
};

// Approximate functions: computed in double and rounded once (more exact than the hardware's
// approximations, which PTX bounds but does not define).
double ex2(double x) { return std::exp2(x); }
double lg2(double x) { return std::log2(x); }
double sine(double x) { return std::sin(x); }
double cosine(double x) { return std::cos(x); }
double rsqrt(double x) { return 1.0 / std::sqrt(x); }
double tanh_(double x) { return std::tanh(x); }
double rcp(double x) { return 1.0 / x; }
double sqrt_(double x) { return std::sqrt(x); }
template <class K, double (*Fn)(double)>
struct FApprox {
  static uint64_t f(const Inst& in, uint64_t a) { return fout<K>(in, Fn(fin<K>(in, a)), 0); }
};
struct FDivApprox {
  static uint64_t f(const Inst& in, uint64_t a, uint64_t b) { return fout<KS>(in, fin<KS>(in, a) / fin<KS>(in, b), 0); }
};
template <double (*Fn)(double)>
struct DApprox {
  static uint64_t f(const Inst& in, uint64_t a) {
    double x = f64_of(a);
    if ((in.flags & kFtz) && std::fpclassify(x) == FP_SUBNORMAL) x = std::copysign(0.0, x);
    return bits_of(Fn(x));
  }
};

// f32 in round-to-nearest without ftz or sat: native float arithmetic. NaN results are 0x7fffffff,
// the canonical NaN NVIDIA GPUs produce for single precision.
inline uint64_t canon32(float r) { return r != r ? 0x7fffffffu : bits_of(r); }
struct SAdd {
  static uint64_t f(const Inst&, uint64_t a, uint64_t b) { return canon32(f32_of(a) + f32_of(b)); }
};
struct SSub {
  static uint64_t f(const Inst&, uint64_t a, uint64_t b) { return canon32(f32_of(a) - f32_of(b)); }
};
struct SMul {
  static uint64_t f(const Inst&, uint64_t a, uint64_t b) { return canon32(f32_of(a) * f32_of(b)); }
};
struct SFma {
  static uint64_t f(const Inst&, uint64_t a, uint64_t b, uint64_t c) { return canon32(std::fma(f32_of(a), f32_of(b), f32_of(c))); }
};
struct SDiv {
  static uint64_t f(const Inst&, uint64_t a, uint64_t b) { return canon32(f32_of(a) / f32_of(b)); }
};
struct SRcp {
  static uint64_t f(const Inst&, uint64_t a) { return canon32(1.0f / f32_of(a)); }
};
struct SSqrt {
  static uint64_t f(const Inst&, uint64_t a) { return canon32(std::sqrt(f32_of(a))); }
};

// f64: the host's IEEE arithmetic (NaNs as the host makes them); directed modes move the
// round-to-nearest result by one ulp according to the sign of the exact error.
inline uint8_t mode(const Inst& in) { return rn_default(in.rnd); }
inline double finish64(const Inst& in, double s, double x, double y, int residual) {
  if (mode(in) == kRN) return s;
  if (std::isinf(s) && std::isfinite(x) && std::isfinite(y)) return overflowed(s, mode(in));
  return directed(s, residual, mode(in));
}
struct DAdd {
  static uint64_t f(const Inst& in, uint64_t a, uint64_t b) {
    double x = f64_of(a), y = f64_of(b);
    if (in.op == Opc::Sub) y = -y;
    double s = x + y;
    return bits_of(mode(in) == kRN ? s : finish64(in, s, x, y, sign_of(two_sum_err(x, y, s))));
  }
};
struct DMul {
  static uint64_t f(const Inst& in, uint64_t a, uint64_t b) {
    double x = f64_of(a), y = f64_of(b), s = x * y;
    return bits_of(mode(in) == kRN ? s : finish64(in, s, x, y, sign_of(std::fma(x, y, -s))));
  }
};
struct DDiv {
  static uint64_t f(const Inst& in, uint64_t a, uint64_t b) {
    double x = f64_of(a), y = f64_of(b), q = x / y;
    if (mode(in) == kRN) return bits_of(q);
    int res = (std::isfinite(q) && q != 0 && std::isfinite(y) && y != 0) ? sign_of(std::fma(-q, y, x)) * sign_of(y) : 0;
    return bits_of(finish64(in, q, x, y == 0 ? std::numeric_limits<double>::infinity() : 1.0 / y, res));
  }
};
struct DRcp {
  static uint64_t f(const Inst& in, uint64_t a) { return DDiv::f(in, bits_of(1.0), a); }
};
struct DSqrt {
  static uint64_t f(const Inst& in, uint64_t a) {
    double x = f64_of(a), r = std::sqrt(x);
    if (mode(in) == kRN) return bits_of(r);
    return bits_of(directed(r, (x > 0 && std::isfinite(x)) ? sign_of(std::fma(-r, r, x)) : 0, mode(in)));
  }
};
// fma.f64 in a directed mode: the host's fma under that rounding mode.
double fma_in_mode(double x, double y, double z, uint8_t m) {
  const int old = std::fegetround();
  std::fesetround(m == kRZ ? FE_TOWARDZERO : m == kRM ? FE_DOWNWARD : FE_UPWARD);
  volatile double vx = x, vy = y, vz = z;
  volatile double r = std::fma(vx, vy, vz);
  std::fesetround(old);
  return r;
}
struct DFma {
  static uint64_t f(const Inst& in, uint64_t a, uint64_t b, uint64_t c) {
    double x = f64_of(a), y = f64_of(b), z = f64_of(c);
    return bits_of(mode(in) == kRN ? std::fma(x, y, z) : fma_in_mode(x, y, z, mode(in)));
  }
};

// neg/abs flip or clear the sign bit (also of NaNs); ftz flushes first.
template <class K>
struct FNeg {
  static uint64_t f(const Inst& in, uint64_t a) {
    uint64_t r = raw<K>(a);
    if ((in.flags & kFtz) && subnormal<K>(r)) r &= K::sign;
    return in.op == Opc::Neg ? r ^ K::sign : r & ~K::sign;
  }
};
struct DNeg {
  static uint64_t f(const Inst& in, uint64_t a) { return in.op == Opc::Neg ? a ^ (uint64_t{1} << 63) : a & ~(uint64_t{1} << 63); }
};

// min/max: a NaN operand loses to a number (with .NaN it wins); -0 is below +0; two NaNs give the
// canonical NaN. .xorsign.abs compares the magnitudes and gives the result the XOR of the operands'
// signs (a NaN result keeps its own).
template <class K>
struct FMinMax {
  static uint64_t f(const Inst& in, uint64_t a, uint64_t b) {
    uint64_t ra = raw<K>(a), rb = raw<K>(b);
    if (in.flags & kFtz) {
      if (subnormal<K>(ra)) ra &= K::sign;
      if (subnormal<K>(rb)) rb &= K::sign;
    }
    const uint64_t xorsign = (ra ^ rb) & K::sign;
    if (in.flags & kXorSign) ra &= ~K::sign, rb &= ~K::sign;
    double x = K::get(ra), y = K::get(rb);
    const bool na = x != x, nb = y != y;
    if (na || nb) {
      if ((na && nb) || (in.flags & kNaN)) return K::fmt.canonical_nan;
      return with_xorsign(in, na ? rb : ra, xorsign);
    }
    const bool max = in.op == Opc::Max;
    uint64_t r;
    if (x == y) r = ((ra & K::sign) != 0) == max ? rb : ra;  // equal: only the zeros' signs differ
    else r = (x < y) != max ? ra : rb;
    if ((in.flags & kRelu) && (r & K::sign)) r = 0;
    return with_xorsign(in, r, xorsign);
  }
  static uint64_t with_xorsign(const Inst& in, uint64_t r, uint64_t xorsign) { return (in.flags & kXorSign) ? (r & ~K::sign) | xorsign : r; }
};
struct DMinMax {
  static uint64_t f(const Inst& in, uint64_t a, uint64_t b) {
    double x = f64_of(a), y = f64_of(b);
    const bool na = x != x, nb = y != y;
    if (na || nb) return na && nb ? 0x7fffffffffffffffull : na ? b : a;
    const bool max = in.op == Opc::Max;
    if (x == y) return ((a >> 63) != 0) == max ? b : a;
    return (x < y) != max ? a : b;
  }
};

template <class K>
struct Copysign {
  static uint64_t f(const Inst&, uint64_t a, uint64_t b) { return (raw<K>(b) & ~K::sign) | (raw<K>(a) & K::sign); }
};
struct DCopysign {
  static uint64_t f(const Inst&, uint64_t a, uint64_t b) { return (b & ~(uint64_t{1} << 63)) | (a & (uint64_t{1} << 63)); }
};

// Packed halves (f16x2, bf16x2): the scalar operation on each 16-bit half on its own, element 0 in
// bits 0-15 and element 1 in bits 16-31 of every operand and of the result.
template <class Op>
struct Packed {
  static uint64_t lo(uint64_t v) { return v & 0xffff; }
  static uint64_t hi(uint64_t v) { return v >> 16 & 0xffff; }
  static uint64_t pack(uint64_t l, uint64_t h) { return (l & 0xffff) | (h & 0xffff) << 16; }
  static uint64_t f(const Inst& in, uint64_t a) { return pack(Op::f(in, lo(a)), Op::f(in, hi(a))); }
  static uint64_t f(const Inst& in, uint64_t a, uint64_t b) { return pack(Op::f(in, lo(a), lo(b)), Op::f(in, hi(a), hi(b))); }
  static uint64_t f(const Inst& in, uint64_t a, uint64_t b, uint64_t c) {
    return pack(Op::f(in, lo(a), lo(b), lo(c)), Op::f(in, hi(a), hi(b), hi(c)));
  }
};

double fvalue(T t, uint64_t r) {
  switch (t) {
    case T::F16: return half_to_double(r);
    case T::BF16: return bf16_to_double(r);
    case T::F32: return f32_to_double(r);
    default: return f64_of(r);
  }
}
bool fsubnormal(T t, uint64_t r) {
  switch (t) {
    case T::F16: return subnormal<KH>(raw<KH>(r));
    case T::BF16: return subnormal<KB>(raw<KB>(r));
    case T::F32: return subnormal<KS>(raw<KS>(r));
    default: return std::fpclassify(f64_of(r)) == FP_SUBNORMAL;
  }
}
inline double fget(const Inst& in, T t, uint64_t r) {
  double v = fvalue(t, r);
  if ((in.flags & kFtz) && fsubnormal(t, r)) v = std::copysign(0.0, v);
  return v;
}

void testp(Warp& w, const Inst& in, uint32_t m) {
  const uint64_t* a = slot(w, in.s[0]);
  uint32_t t = 0;
  for_lanes(m, [&](int l) {
    double v = fvalue(in.type, a[l]);
    bool r = false;
    switch (in.cmp) {
      case 0: r = std::isfinite(v); break;
      case 1: r = std::isinf(v); break;
      case 2: r = !std::isnan(v); break;
      case 3: r = std::isnan(v); break;
      case 4: r = std::isfinite(v) && v != 0 && !fsubnormal(in.type, a[l]); break;
      default: r = fsubnormal(in.type, a[l]); break;
    }
    t |= static_cast<uint32_t>(r) << l;
  });
  write_pred(w, in.d[0], m, t);
}

// The comparison of the operands read as `ty` from bit `shift` up (the halves of a packed type).
uint32_t float_compare(Warp& w, const Inst& in, uint32_t m, T ty, int shift) {
  const uint64_t *a = slot(w, in.s[0]), *b = slot(w, in.s[1]);
  uint32_t t = 0;
  const bool simple = ty == T::F32 && !(in.flags & kFtz);
#define UGPU_FCMP(C, E)                           \
  case C:                                         \
    if (simple)                                   \
      for_lanes(m, [&](int l) {                   \
        float x = f32_of(a[l]), y = f32_of(b[l]); \
        bool un = x != x || y != y;               \
        (void)un;                                 \
        t |= static_cast<uint32_t>(E) << l;       \
      });                                         \
    else                                          \
      for_lanes(m, [&](int l) {                   \
        double x = fget(in, ty, a[l] >> shift);   \
        double y = fget(in, ty, b[l] >> shift);   \
        bool un = x != x || y != y;               \
        (void)un;                                 \
        t |= static_cast<uint32_t>(E) << l;       \
      });                                         \
    break;
  switch (in.cmp) {
    UGPU_FCMP(kEq, !un && x == y)
    UGPU_FCMP(kNe, !un && x != y)
    UGPU_FCMP(kLt, !un && x < y)
    UGPU_FCMP(kLe, !un && x <= y)
    UGPU_FCMP(kGt, !un && x > y)
    UGPU_FCMP(kGe, !un && x >= y)
    UGPU_FCMP(kEqu, un || x == y)
    UGPU_FCMP(kNeu, un || x != y)
    UGPU_FCMP(kLtu, un || x < y)
    UGPU_FCMP(kLeu, un || x <= y)
    UGPU_FCMP(kGtu, un || x > y)
    UGPU_FCMP(kGeu, un || x >= y)
    UGPU_FCMP(kNum, !un)
    UGPU_FCMP(kNan, un)
    default: break;
  }
#undef UGPU_FCMP
  return t;
}
void setp_float(Warp& w, const Inst& in, uint32_t m) { finish_setp(w, in, m, float_compare(w, in, m, in.type2, 0)); }
void set_float(Warp& w, const Inst& in, uint32_t m) { finish_set(w, in, m, float_compare(w, in, m, in.type2, 0)); }
// setp.f16x2 p|q and set.*.f16x2: one comparison per half. p gets the low halves' (each combined
// with c), q the high halves' — not the complement as for scalar types.
inline T half_of(T packed) { return packed == T::F16x2 ? T::F16 : T::BF16; }
void setp_packed(Warp& w, const Inst& in, uint32_t m) {
  const uint32_t lo = float_compare(w, in, m, half_of(in.type2), 0), hi = float_compare(w, in, m, half_of(in.type2), 16);
  const uint32_t c = pred_src(w, in);
  write_pred(w, in.d[0], m, combine(in.bop, lo, c));
  write_pred(w, in.d[1], m, combine(in.bop, hi, c));
}
// set.*.f16x2: each half of d is 1.0 in its format (.f16x2/.bf16x2 results) or 0xffff (.u32/.s32).
void set_packed(Warp& w, const Inst& in, uint32_t m) {
  const uint32_t c = pred_src(w, in);
  const uint32_t lo = combine(in.bop, float_compare(w, in, m, half_of(in.type2), 0), c);
  const uint32_t hi = combine(in.bop, float_compare(w, in, m, half_of(in.type2), 16), c);
  const uint64_t one = in.type == T::F16x2 ? 0x3c00 : in.type == T::BF16x2 ? 0x3f80 : 0xffff;
  uint64_t* d = slot(w, in.d[0]);
  for_lanes(m, [&](int l) { d[l] = ((lo >> l & 1) ? one : 0) | ((hi >> l & 1) ? one : 0) << 16; });
}

// ---- select, predicates, moves ----------------------------------------------------------------

void selp(Warp& w, const Inst& in, uint32_t m) {
  uint64_t* d = slot(w, in.d[0]);
  const uint64_t *a = slot(w, in.s[0]), *b = slot(w, in.s[1]);
  const uint32_t c = pred_src(w, in);
  for_lanes(m, [&](int l) { d[l] = (c >> l & 1) ? a[l] : b[l]; });
}
void slct(Warp& w, const Inst& in, uint32_t m) {
  uint64_t* d = slot(w, in.d[0]);
  const uint64_t *a = slot(w, in.s[0]), *b = slot(w, in.s[1]), *c = slot(w, in.s[2]);
  for_lanes(m, [&](int l) {
    bool ge = in.type2 == T::F32 ? !(fget(in, T::F32, c[l]) < 0) : static_cast<int32_t>(c[l]) >= 0;
    d[l] = ge ? a[l] : b[l];
  });
}
void pred_logic(Warp& w, const Inst& in, uint32_t m) {
  const uint32_t a = w.p[in.s[0]], b = in.s[1] == kNone ? 0 : w.p[in.s[1]];
  uint32_t r = 0;
  switch (in.op) {
    case Opc::And: r = a & b; break;
    case Opc::Or: r = a | b; break;
    case Opc::Xor: r = a ^ b; break;
    case Opc::Not: r = ~a; break;
    default: r = a; break;  // mov
  }
  write_pred(w, in.d[0], m, r);
}
// mov.b32 d, {a, b} (a lowest) and mov.b32 {a, b}, d: element width = type width / count.
void mov_pack(Warp& w, const Inst& in, uint32_t m) {
  uint64_t* d = slot(w, in.d[0]);
  const int n = in.vec, ew = bits(in.type) / n;
  const uint64_t mask = ew == 64 ? ~uint64_t{0} : (uint64_t{1} << ew) - 1;
  for_lanes(m, [&](int l) {
    uint64_t v = 0;
    for (int i = 0; i < n; ++i) v |= (slot(w, in.s[i])[l] & mask) << (ew * i);
    d[l] = v;
  });
}
void mov_unpack(Warp& w, const Inst& in, uint32_t m) {
  const uint64_t* a = slot(w, in.s[0]);
  const int n = in.vec, ew = bits(in.type) / n;
  const uint64_t mask = ew == 64 ? ~uint64_t{0} : (uint64_t{1} << ew) - 1;
  for_lanes(m, [&](int l) {
    uint64_t v = a[l];
    for (int i = 0; i < n; ++i) slot(w, in.d[i])[l] = (v >> (ew * i)) & mask;
  });
}

// ---- conversions ------------------------------------------------------------------------------

i128 int_value(T t, uint64_t r) {
  switch (t) {
    case T::S8: return static_cast<int8_t>(r);
    case T::S16: return static_cast<int16_t>(r);
    case T::S32: return static_cast<int32_t>(r);
    case T::S64: return static_cast<int64_t>(r);
    case T::U8:
    case T::B8: return static_cast<uint8_t>(r);
    case T::U16:
    case T::B16: return static_cast<uint16_t>(r);
    case T::U32:
    case T::B32: return static_cast<uint32_t>(r);
    default: return static_cast<uint64_t>(r);
  }
}
void int_range(T t, i128& lo, i128& hi) {
  const int b = bits(t);
  if (is_signed(t)) lo = -(static_cast<i128>(1) << (b - 1)), hi = (static_cast<i128>(1) << (b - 1)) - 1;
  else lo = 0, hi = (static_cast<i128>(1) << b) - 1;
}
double round_integral(double v, uint8_t r) {
  switch (r) {
    case kRZ: return std::trunc(v);
    case kRM: return std::floor(v);
    case kRP: return std::ceil(v);
    default: return std::nearbyint(v);  // the host stays in round-to-nearest-even
  }
}
template <class D, class S>
struct CvtII {
  static uint64_t f(const Inst&, uint64_t a) { return put<D>(static_cast<D>(static_cast<S>(a))); }
};

uint64_t to_format(const Inst& in, T t, double v, int residual, uint8_t r) {
  Inst j = in;
  j.rnd = r;
  switch (t) {
    case T::F16: return fout<KH>(j, v, residual);
    case T::BF16: return fout<KB>(j, v, residual);
    case T::F32: return fout<KS>(j, v, residual);
    default: {
      double d = directed(v, residual, r);
      if (in.flags & kSat) d = d != d ? 0.0 : std::clamp(d, 0.0, 1.0);
      if ((in.flags & kRelu) && d < 0) d = 0;
      return bits_of(d);
    }
  }
}

uint64_t cvt_value(const Inst& in, uint64_t a) {
  const T dt = in.type, st = in.type2;
  const uint8_t r = rn_default(in.rnd);
  if (is_int(st) && is_int(dt)) {
    i128 v = int_value(st, a), lo, hi;
    int_range(dt, lo, hi);
    if (in.flags & kSat) v = v < lo ? lo : v > hi ? hi : v;
    return static_cast<uint64_t>(v);
  }
  if (is_int(st)) {  // integer to float
    i128 v = int_value(st, a);
    double hi = static_cast<double>(v);
    int res = v > static_cast<i128>(hi) ? 1 : v < static_cast<i128>(hi) ? -1 : 0;
    return to_format(in, dt, hi, res, r);
  }
  double v = fget(in, st, a);
  if (is_int(dt)) {  // float to integer: round, then clamp to the range; NaN is 0
    if (v != v) return 0;
    v = round_integral(v, r);
    i128 lo, hi;
    int_range(dt, lo, hi);
    if (v <= static_cast<double>(lo)) return static_cast<uint64_t>(lo);
    if (v >= std::ldexp(1.0, is_signed(dt) ? bits(dt) - 1 : bits(dt))) return static_cast<uint64_t>(hi);
    return static_cast<uint64_t>(static_cast<i128>(v));
  }
  if (in.flags & kIntRnd) v = round_integral(v, r);
  return to_format(in, dt, v, 0, r);
}
struct CvtAny {
  static uint64_t f(const Inst& in, uint64_t a) { return cvt_value(in, a); }
};
// cvt.rn.f16x2.f32 d, a, b: a to the upper half.
struct CvtPack {
  static uint64_t f(const Inst& in, uint64_t a, uint64_t b) {
    const T h = in.type == T::F16x2 ? T::F16 : T::BF16;
    const uint8_t r = rn_default(in.rnd);
    return to_format(in, h, fget(in, T::F32, a), 0, r) << 16 | to_format(in, h, fget(in, T::F32, b), 0, r);
  }
};

// ---- choosing an implementation ---------------------------------------------------------------

template <template <class> class Op, template <class> class Map>
struct ByInt {
  static ExecFn pick(T t) {
    switch (t) {
      case T::U16:
      case T::B16: return Map<Op<uint16_t>>::fn;
      case T::S16: return Map<Op<int16_t>>::fn;
      case T::U32:
      case T::B32: return Map<Op<uint32_t>>::fn;
      case T::S32: return Map<Op<int32_t>>::fn;
      case T::U64:
      case T::B64: return Map<Op<uint64_t>>::fn;
      case T::S64: return Map<Op<int64_t>>::fn;
      default: return nullptr;
    }
  }
};
template <class Op>
struct M1 {
  static constexpr ExecFn fn = &map1<Op>;
};
template <class Op>
struct M2 {
  static constexpr ExecFn fn = &map2<Op>;
};
template <class Op>
struct M3 {
  static constexpr ExecFn fn = &map3<Op>;
};
template <class Op>
struct M4 {
  static constexpr ExecFn fn = &map4<Op>;
};

template <template <class> class Op, template <class> class Map>
ExecFn by_int(T t) {
  return ByInt<Op, Map>::pick(t);
}

template <class D>
ExecFn cvt_from(T s) {
  switch (s) {
    case T::U8:
    case T::B8: return &map1<CvtII<D, uint8_t>>;
    case T::S8: return &map1<CvtII<D, int8_t>>;
    case T::U16:
    case T::B16: return &map1<CvtII<D, uint16_t>>;
    case T::S16: return &map1<CvtII<D, int16_t>>;
    case T::U32:
    case T::B32: return &map1<CvtII<D, uint32_t>>;
    case T::S32: return &map1<CvtII<D, int32_t>>;
    case T::U64:
    case T::B64: return &map1<CvtII<D, uint64_t>>;
    case T::S64: return &map1<CvtII<D, int64_t>>;
    default: return nullptr;
  }
}
ExecFn cvt_int(T d, T s) {
  switch (d) {
    case T::U8:
    case T::B8: return cvt_from<uint8_t>(s);
    case T::S8: return cvt_from<int8_t>(s);
    case T::U16:
    case T::B16: return cvt_from<uint16_t>(s);
    case T::S16: return cvt_from<int16_t>(s);
    case T::U32:
    case T::B32: return cvt_from<uint32_t>(s);
    case T::S32: return cvt_from<int32_t>(s);
    case T::U64:
    case T::B64: return cvt_from<uint64_t>(s);
    case T::S64: return cvt_from<int64_t>(s);
    default: return nullptr;
  }
}

// A float operation by format: f16 and bf16 (K = KH/KB), each also packed two to a register (f16x2,
// bf16x2), f32 exact-residual (KS), f32 plain, f64.
template <template <class> class Narrow, class Plain32, class Wide64, template <class> class Map>
ExecFn by_float(const Inst& in) {
  const bool plain = (in.rnd == kRN || in.rnd == kNoRnd) && !(in.flags & (kFtz | kSat | kRelu));
  switch (in.type) {
    case T::F16: return Map<Narrow<KH>>::fn;
    case T::BF16: return Map<Narrow<KB>>::fn;
    case T::F16x2: return Map<Packed<Narrow<KH>>>::fn;
    case T::BF16x2: return Map<Packed<Narrow<KB>>>::fn;
    case T::F32: return plain ? Map<Plain32>::fn : Map<Narrow<KS>>::fn;
    case T::F64: return Map<Wide64>::fn;
    default: return nullptr;
  }
}

// set's result types: .u32/.s32/.f32, and (the half-precision forms) .u16/.s16/.f16/.bf16 for
// scalar sources; a packed source gives its own packed type or .u32/.s32.
bool set_result_ok(T d, T s) {
  if (s == T::F16x2 || s == T::BF16x2) return d == s || d == T::U32 || d == T::S32;
  switch (d) {
    case T::U32:
    case T::S32:
    case T::F32:
    case T::U16:
    case T::S16:
    case T::F16:
    case T::BF16: return true;
    default: return false;
  }
}

}  // namespace

std::string bind_alu(Inst& in) {
  const T t = in.type;
  const bool f = is_float(t);
  ExecFn fn = nullptr;
  switch (in.op) {
    case Opc::Add:
    case Opc::Sub:
      if (f) fn = by_float<FAdd, SAdd, DAdd, M2>(in);
      if (f && in.op == Opc::Sub && t == T::F32 && fn == M2<SAdd>::fn) fn = M2<SSub>::fn;
      if (!f && (in.flags & (kCC | kCarryIn))) {
        if (t == T::U32 || t == T::S32 || t == T::B32) fn = &carry_op<uint32_t>;
        else if (t == T::U64 || t == T::S64 || t == T::B64) fn = &carry_op<uint64_t>;
      } else if (!f && (in.flags & kSat)) {
        if (t == T::S32) fn = in.op == Opc::Add ? M2<AddSat32>::fn : M2<SubSat32>::fn;
      } else if (!f && is_int(t) && bits(t) >= 16) {
        fn = in.op == Opc::Add ? M2<Add64>::fn : M2<Sub64>::fn;
      }
      break;
    case Opc::Mul:
      if (f) fn = by_float<FMul, SMul, DMul, M2>(in);
      else if (is_int(t) && bits(t) >= 16) fn = M2<MulLo64>::fn;
      break;
    case Opc::MulHi: fn = by_int<MulHi, M2>(t); break;
    case Opc::MulWide:
      if (bits(t) <= 32) fn = by_int<MulWide, M2>(t);
      break;
    case Opc::Mad:
      if (f) fn = by_float<FFma, SFma, DFma, M3>(in);
      else if (is_int(t) && bits(t) >= 16) fn = M3<MadLo64>::fn;
      break;
    case Opc::Fma:
      if (f) fn = by_float<FFma, SFma, DFma, M3>(in);
      break;
    case Opc::MadHi:
      if (in.flags & kSat) fn = t == T::S32 ? M3<MadHiSat32>::fn : nullptr;
      else fn = by_int<MadHi, M3>(t);
      break;
    case Opc::MadWide:
      if (bits(t) <= 32) fn = by_int<MadWide, M3>(t);
      break;
    case Opc::Mul24Lo:
    case Opc::Mul24Hi: fn = t == T::U32 ? M2<Mul24<uint32_t>>::fn : t == T::S32 ? M2<Mul24<int32_t>>::fn : nullptr; break;
    case Opc::Mad24Lo:
    case Opc::Mad24Hi: fn = t == T::U32 ? M3<Mad24<uint32_t>>::fn : t == T::S32 ? M3<Mad24<int32_t>>::fn : nullptr; break;
    case Opc::Sad: fn = by_int<Sad, M3>(t); break;
    case Opc::Div:
      if (t == T::F32) fn = (in.flags & kApprox) ? M2<FDivApprox>::fn : by_float<FDiv, SDiv, DDiv, M2>(in);
      else if (t == T::F64) fn = M2<DDiv>::fn;
      else fn = by_int<Div, M2>(t);
      break;
    case Opc::Rem: fn = by_int<Rem, M2>(t); break;
    case Opc::Abs:
    case Opc::Neg:
      if (t == T::F16) fn = M1<FNeg<KH>>::fn;
      else if (t == T::BF16) fn = M1<FNeg<KB>>::fn;
      else if (t == T::F16x2) fn = M1<Packed<FNeg<KH>>>::fn;
      else if (t == T::BF16x2) fn = M1<Packed<FNeg<KB>>>::fn;
      else if (t == T::F32) fn = M1<FNeg<KS>>::fn;
      else if (t == T::F64) fn = M1<DNeg>::fn;
      else if (in.op == Opc::Neg && is_signed(t) && bits(t) >= 16) fn = M1<Neg64>::fn;
      else if (in.op == Opc::Abs && is_signed(t)) fn = by_int<Abs, M1>(t);
      break;
    case Opc::Min:
    case Opc::Max:
      if ((in.flags & kXorSign) && t != T::F16 && t != T::BF16 && t != T::F16x2 && t != T::BF16x2 && t != T::F32) break;
      if (t == T::F16) fn = M2<FMinMax<KH>>::fn;
      else if (t == T::BF16) fn = M2<FMinMax<KB>>::fn;
      else if (t == T::F16x2) fn = M2<Packed<FMinMax<KH>>>::fn;
      else if (t == T::BF16x2) fn = M2<Packed<FMinMax<KB>>>::fn;
      else if (t == T::F32) fn = M2<FMinMax<KS>>::fn;
      else if (t == T::F64) fn = M2<DMinMax>::fn;
      else if ((in.flags & kRelu) && t == T::S32) fn = in.op == Opc::Min ? M2<MinRelu32>::fn : M2<MaxRelu32>::fn;
      else if (!(in.flags & kRelu)) fn = in.op == Opc::Min ? by_int<Min, M2>(t) : by_int<Max, M2>(t);
      break;
    case Opc::Popc: fn = t == T::B32 ? M1<Popc<uint32_t>>::fn : t == T::B64 ? M1<Popc<uint64_t>>::fn : nullptr; break;
    case Opc::Clz: fn = t == T::B32 ? M1<Clz<uint32_t>>::fn : t == T::B64 ? M1<Clz<uint64_t>>::fn : nullptr; break;
    case Opc::Brev: fn = t == T::B32 ? M1<Brev<uint32_t>>::fn : t == T::B64 ? M1<Brev<uint64_t>>::fn : nullptr; break;
    case Opc::Bfind:
      if (bits(t) >= 32 && (t == T::U32 || t == T::S32 || t == T::U64 || t == T::S64)) fn = by_int<Bfind, M1>(t);
      break;
    case Opc::Bfe:
      if (t == T::U32 || t == T::S32 || t == T::U64 || t == T::S64) fn = by_int<Bfe, M3>(t);
      break;
    case Opc::Bfi: fn = t == T::B32 ? M4<Bfi<uint32_t>>::fn : t == T::B64 ? M4<Bfi<uint64_t>>::fn : nullptr; break;
    case Opc::Prmt:
      if (t == T::B32) fn = M3<Prmt>::fn;
      break;
    case Opc::Bmsk:
      if (t == T::B32) fn = M2<Bmsk>::fn;
      break;
    case Opc::Szext: fn = t == T::U32 ? M2<Szext<uint32_t>>::fn : t == T::S32 ? M2<Szext<int32_t>>::fn : nullptr; break;
    case Opc::Dp4a:
    case Opc::Dp2aLo:
    case Opc::Dp2aHi: fn = M3<Dp>::fn; break;
    case Opc::And:
    case Opc::Or:
    case Opc::Xor:
    case Opc::Not:
      if (t == T::Pred) fn = &pred_logic;
      else if (t == T::B16 || t == T::B32 || t == T::B64)
        fn = in.op == Opc::And ? M2<And64>::fn : in.op == Opc::Or ? M2<Or64>::fn : in.op == Opc::Xor ? M2<Xor64>::fn : M1<Not64>::fn;
      break;
    case Opc::Cnot:
      fn = t == T::B16 ? M1<Cnot<uint16_t>>::fn : t == T::B32 ? M1<Cnot<uint32_t>>::fn : t == T::B64 ? M1<Cnot<uint64_t>>::fn : nullptr;
      break;
    case Opc::Lop3:
      if (t == T::B32) fn = M3<Lop3>::fn;
      break;
    case Opc::Shl:
      if (t == T::B16 || t == T::B32 || t == T::B64) fn = by_int<Shl, M2>(t);
      break;
    case Opc::Shr:
      if (bits(t) >= 16 && is_int(t)) fn = by_int<Shr, M2>(t);
      break;
    case Opc::ShfL:
    case Opc::ShfR:
      if (t == T::B32) fn = M3<Shf>::fn;
      break;
    case Opc::Rcp:
      if (in.flags & kApprox) fn = t == T::F32 ? M1<FApprox<KS, rcp>>::fn : t == T::F64 ? M1<DApprox<rcp>>::fn : nullptr;  // .approx
      else if (t == T::F32) fn = (in.rnd == kRN && !(in.flags & kFtz)) ? M1<SRcp>::fn : M1<FRcp<KS>>::fn;
      else if (t == T::F64) fn = M1<DRcp>::fn;
      break;
    case Opc::Sqrt:
      if (in.flags & kApprox) fn = t == T::F32 ? M1<FApprox<KS, sqrt_>>::fn : nullptr;
      else if (t == T::F32) fn = (in.rnd == kRN && !(in.flags & kFtz)) ? M1<SSqrt>::fn : M1<FSqrt<KS>>::fn;
      else if (t == T::F64) fn = M1<DSqrt>::fn;
      break;
    case Opc::Rsqrt: fn = t == T::F32 ? M1<FApprox<KS, rsqrt>>::fn : t == T::F64 ? M1<DApprox<rsqrt>>::fn : nullptr; break;
    case Opc::Sin:
      if (t == T::F32) fn = M1<FApprox<KS, sine>>::fn;
      break;
    case Opc::Cos:
      if (t == T::F32) fn = M1<FApprox<KS, cosine>>::fn;
      break;
    case Opc::Lg2:
      if (t == T::F32) fn = M1<FApprox<KS, lg2>>::fn;
      break;
    case Opc::Ex2:
    case Opc::Tanh: {
      const bool e = in.op == Opc::Ex2;
      if (t == T::F32) fn = e ? M1<FApprox<KS, ex2>>::fn : M1<FApprox<KS, tanh_>>::fn;
      else if (t == T::F16) fn = e ? M1<FApprox<KH, ex2>>::fn : M1<FApprox<KH, tanh_>>::fn;
      else if (t == T::BF16) fn = e ? M1<FApprox<KB, ex2>>::fn : M1<FApprox<KB, tanh_>>::fn;
      else if (t == T::F16x2) fn = e ? M1<Packed<FApprox<KH, ex2>>>::fn : M1<Packed<FApprox<KH, tanh_>>>::fn;
      else if (t == T::BF16x2) fn = e ? M1<Packed<FApprox<KB, ex2>>>::fn : M1<Packed<FApprox<KB, tanh_>>>::fn;
      break;
    }
    case Opc::Copysign: fn = t == T::F32 ? M2<Copysign<KS>>::fn : t == T::F64 ? M2<DCopysign>::fn : nullptr; break;
    case Opc::Testp:
      if (t == T::F32 || t == T::F64) fn = &testp;
      break;
    case Opc::Setp:
    case Opc::Set: {
      const T s = in.type2;
      const bool set = in.op == Opc::Set;
      if (set && !set_result_ok(in.type, s)) break;
      if (s == T::F16x2 || s == T::BF16x2) {
        if (in.cmp >= kLo && in.cmp <= kHs) break;
        fn = set ? &set_packed : &setp_packed;
      } else if (is_float(s)) {
        if (in.cmp >= kLo && in.cmp <= kHs) break;
        fn = set ? &set_float : &setp_float;
      } else if (is_int(s) && bits(s) >= 16) {
        if (in.cmp >= kEqu) break;
        if (!is_signed(s) && in.cmp <= kGe && in.cmp >= kLt && s >= T::B16 && s <= T::B64) break;  // .b types: eq/ne only
        switch (s) {
          case T::U16:
          case T::B16: fn = set ? &set_int<uint16_t> : &setp_int<uint16_t>; break;
          case T::S16: fn = set ? &set_int<int16_t> : &setp_int<int16_t>; break;
          case T::U32:
          case T::B32: fn = set ? &set_int<uint32_t> : &setp_int<uint32_t>; break;
          case T::S32: fn = set ? &set_int<int32_t> : &setp_int<int32_t>; break;
          case T::U64:
          case T::B64: fn = set ? &set_int<uint64_t> : &setp_int<uint64_t>; break;
          case T::S64: fn = set ? &set_int<int64_t> : &setp_int<int64_t>; break;
          default: break;
        }
      }
      break;
    }
    case Opc::Selp:
      if (t != T::Pred && t != T::None) fn = &selp;
      break;
    case Opc::Slct:
      if (in.type2 == T::S32 || in.type2 == T::F32) fn = &slct;
      break;
    case Opc::Mov: fn = t == T::Pred ? &pred_logic : M1<Copy>::fn; break;
    case Opc::MovPack: fn = &mov_pack; break;
    case Opc::MovUnpack: fn = &mov_unpack; break;
    case Opc::Cvt: {
      const T d = in.type, s = in.type2;
      if (d == T::F16x2 || d == T::BF16x2 || s == T::F16x2 || s == T::BF16x2) break;
      if (is_int(d) && is_int(s) && !(in.flags & kSat)) fn = cvt_int(d, s);
      else fn = M1<CvtAny>::fn;
      break;
    }
    case Opc::CvtPack:
      if ((t == T::F16x2 || t == T::BF16x2) && in.type2 == T::F32) fn = M2<CvtPack>::fn;
      break;
    default: return "not an arithmetic instruction";
  }
  if (!fn) return "this combination of type and modifiers is not implemented";
  in.fn = fn;
  return {};
}

}  // namespace ugpu::emu::nv::detail
