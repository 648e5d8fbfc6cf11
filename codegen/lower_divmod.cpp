// Floor division and modulo (what index math means) lowered to what hardware has: truncating
// division (CDIV/CMOD: LLVM's sdiv/srem), with a sign correction where the dividend may be negative.
// Powers of two become an arithmetic shift and a mask (exact for floor semantics in two's
// complement); a non-negative dividend with a known bound divides by multiply and shift.
#include <bit>

#include "codegen/passes.h"
#include "common/error.h"
#include "ir/rewrite.h"
#include "ir/upat.h"

namespace ugpu::codegen {
using namespace ir;

std::optional<Magic> magic_divisor(int64_t d, int64_t max_x) {
  if (d <= 1 || max_x < 0) return std::nullopt;
  // m = ceil(2^s / d), e = m*d - 2^s; floor(x*m / 2^s) == floor(x / d) for all 0 <= x <= max_x when
  // max_x * e < 2^s (the error x*e / (d*2^s) stays below the 1/d gap to the next multiple).
  using u128 = unsigned __int128;
  for (int s = 0; s < 64; ++s) {
    u128 p = u128{1} << s;
    u128 m = (p + static_cast<u128>(d) - 1) / static_cast<u128>(d);
    u128 e = m * static_cast<u128>(d) - p;
    if (static_cast<u128>(max_x) * e >= p) continue;
    if (m * static_cast<u128>(max_x) >= (u128{1} << 63)) return std::nullopt;
    return Magic{static_cast<int64_t>(m), s};
  }
  return std::nullopt;
}

namespace {

UOp c(const UOp& like, int64_t v) { return UOp::const_int(like.dtype(), v); }

// floor(x / d) for x >= 0 and a constant d > 1 that is not a power of two.
UOp nonneg_div(const UOp& x, int64_t d) {
  if (auto mg = magic_divisor(d, x.vmax())) {
    // The multiply-shift stays in x's own type only where the product fits it and the shift is less
    // than its width (a shift by the width or more is poison in LLVM, and the store is dropped).
    int bits = x.dtype().bitsize();
    bool narrow_ok = mg->s < bits && static_cast<unsigned __int128>(mg->m) * static_cast<unsigned __int128>(x.vmax()) <
                                         (static_cast<unsigned __int128>(1) << (bits - 1));
    UOp w = narrow_ok ? x : x.cast(dtypes::int64);
    UOp q = UOp::alu(Op::SHR, {w * c(w, mg->m), c(w, mg->s)});
    return narrow_ok ? q : q.cast(x.dtype());
  }
  return UOp::alu(Op::CDIV, {x, c(x, d)});
}

UOp lower_div(const Match& m) {
  const UOp& u = m.node();
  const UOp &x = u.src(0), &d = u.src(1);
  if (!u.dtype().is_int()) return UOp();
  bool mod = u.op() == Op::FLOORMOD;
  if (u.dtype().is_unsigned()) return UOp::alu(mod ? Op::CMOD : Op::CDIV, {x, d});
  if (d.is_const() && d.const_int() > 0) {
    int64_t k = d.const_int();
    if (k == 1) return mod ? c(x, 0) : x;
    if (std::has_single_bit(static_cast<uint64_t>(k))) {
      int sh = std::countr_zero(static_cast<uint64_t>(k));
      return mod ? (x & c(x, k - 1)) : UOp::alu(Op::SHR, {x, c(x, sh)});
    }
    if (x.vmin() >= 0) {
      UOp q = nonneg_div(x, k);
      return mod ? x - q * c(x, k) : q;
    }
    UOp q = UOp::alu(Op::CDIV, {x, d}), r = UOp::alu(Op::CMOD, {x, d});
    UOp neg = r.lt(c(r, 0));
    return mod ? neg.where(r + d, r) : neg.where(q - c(q, 1), q);
  }
  // A non-negative dividend and a positive divisor: floor and truncation agree.
  if (x.vmin() >= 0 && d.vmin() > 0) return UOp::alu(mod ? Op::CMOD : Op::CDIV, {x, d});
  // General divisor: truncate, then step toward -inf when the remainder's sign differs from d's.
  UOp q = UOp::alu(Op::CDIV, {x, d}), r = UOp::alu(Op::CMOD, {x, d});
  UOp fix = r.ne(c(r, 0)) & (r.lt(c(r, 0)).ne(d.lt(c(d, 0))));
  return mod ? fix.where(r + d, r) : fix.where(q - c(q, 1), q);
}

}  // namespace

UOp lower_divmod(const UOp& sink) {
  static const PatternMatcher pm("lower_divmod", {Rule(UPat({Op::FLOORDIV, Op::FLOORMOD}), lower_div, "floor div/mod")});
  return graph_rewrite(sink, pm);
}

}  // namespace ugpu::codegen
