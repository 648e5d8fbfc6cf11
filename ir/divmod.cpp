// Floor division and modulo of index math by a constant (and a few symbolic divisors).
//
// For x // d and x % d with d > 0, write x = d*Q + R. Then x // d = Q + R // d and x % d = R % d,
// exactly. With R keeping each coefficient's remainder, R // d folds to a constant when R's bounds
// lie in one period of d (trying the non-negative and the nearest remainders per term). Otherwise
// only multiples of d move into Q (so nothing grows), and a factor g of d divides out when the
// part of R that g does not divide stays in [0, g): R = g*A + k gives R // d = A // (d/g) and
// R % d = g*(A % (d/g)) + k.
#include <algorithm>
#include <limits>
#include <numeric>

#include "ir/intmath.h"
#include "ir/symbolic.h"

namespace ugpu::ir {
namespace {

UOp idx(int64_t v) { return UOp::const_int(dtypes::index, v); }

// x // d (want_div) or x % d, from the split x = d*q + r: q + r // d, or r % d.
UOp combine(bool want_div, const Linear& q, const UOp& r_div, const UOp& r_mod) { return want_div ? from_linear(q, dtypes::index) + r_div : r_mod; }

UOp fold_const_divisor(const UOp& u, const UOp& x, int64_t d) {
  bool want_div = u.op() == Op::FLOORDIV;
  if (d == 1) return want_div ? x : idx(0);
  // Whole numerator in one period.
  int64_t q0 = floor_div(x.vmin(), d);
  if (q0 == floor_div(x.vmax(), d)) return want_div ? idx(q0) : (q0 == 0 ? x : x - idx(q0 * d));

  // Nested forms.
  if (x.op() == Op::FLOORDIV && x.src(1).is_const() && x.src(1).const_int() > 0 && want_div) return x.src(0).floordiv(idx(x.src(1).const_int() * d));
  if (x.op() == Op::FLOORMOD && x.src(1).is_const() && x.src(1).const_int() > 0 && x.src(1).const_int() % d == 0) {
    if (!want_div) return x.src(0) % idx(d);
    return x.src(0).floordiv(idx(d)) % idx(x.src(1).const_int() / d);
  }

  Linear l = linear_form(x);
  // Floor remainders (each in [0, d)) for the one-period attempts.
  Linear quot, rem;
  quot.constant = floor_div(l.constant, d);
  rem.constant = floor_mod(l.constant, d);
  for (const auto& [t, c] : l.terms) {
    if (int64_t q = floor_div(c, d)) quot.terms.push_back({t, q});
    if (int64_t r = floor_mod(c, d)) rem.terms.push_back({t, r});
  }
  // Try the remainders as they are, then each moved to the nearest one (r - d when r > d/2).
  for (int attempt = 0; attempt < 2; ++attempt) {
    Linear q = quot, r = rem;
    if (attempt == 1) {
      bool moved = false;
      for (auto& [t, c] : r.terms)
        if (2 * c > d) {
          c -= d, moved = true;
          auto it = std::find_if(q.terms.begin(), q.terms.end(), [&](const auto& qt) { return qt.first == t; });
          if (it != q.terms.end()) it->second += 1;
          else q.terms.push_back({t, 1});
        }
      if (!moved) break;
      std::erase_if(q.terms, [](const auto& tc) { return tc.second == 0; });
      std::sort(q.terms.begin(), q.terms.end(), [](const auto& a, const auto& b) { return canonical_less(a.first, b.first); });
    }
    UOp rn = from_linear(r, dtypes::index);
    int64_t p = floor_div(rn.vmin(), d);
    if (p == floor_div(rn.vmax(), d)) {
      q.constant += p;
      return combine(want_div, q, idx(0), p == 0 ? rn : rn - idx(p * d));
    }
  }

  // Otherwise terms whose coefficient is a multiple of d move out whole; the rest stays as it is,
  // so the result never has more operations than the input.
  Linear tq, tr;
  for (const auto& [t, c] : l.terms) {
    if (c % d == 0) tq.terms.push_back({t, c / d});
    else tr.terms.push_back({t, c});
  }
  if (l.constant % d == 0) tq.constant = l.constant / d;
  else tr.constant = l.constant;
  // A factor g of d: R = g*A + k where k (the terms g does not divide, and the constant) stays in
  // [0, g). Then R // d = A // (d/g) and R % d = g*(A % (d/g)) + k.
  std::vector<int64_t> factors;
  for (const auto& [t, c] : tr.terms)
    if (int64_t g = std::gcd(d, c); g > 1 && std::find(factors.begin(), factors.end(), g) == factors.end()) factors.push_back(g);
  std::sort(factors.rbegin(), factors.rend());
  for (int64_t g : factors) {
    Linear a, k;
    for (const auto& [t, c] : tr.terms) (c % g == 0 ? a.terms.emplace_back(t, c / g) : k.terms.emplace_back(t, c));
    k.constant = tr.constant;
    UOp kn = from_linear(k, dtypes::index);
    int64_t p = floor_div(kn.vmin(), g);
    if (p != floor_div(kn.vmax(), g)) continue;
    a.constant = p;
    if (p) kn = from_linear(Linear{k.terms, k.constant - p * g}, dtypes::index);
    UOp an = from_linear(a, dtypes::index);
    UOp inner_mod = an % idx(d / g);
    UOp mod = kn.is_int_const(0) ? inner_mod * idx(g) : inner_mod * idx(g) + kn;
    return combine(want_div, tq, an.floordiv(idx(d / g)), mod);
  }
  if (!tq.terms.empty() || tq.constant != 0) {
    UOp rn = from_linear(tr, dtypes::index);
    return combine(want_div, tq, rn.floordiv(idx(d)), rn % idx(d));
  }
  return {};
}

}  // namespace

UOp fold_divmod(const UOp& u) {
  if (!u.dtype().is_index()) return {};
  const UOp& x = u.src(0);
  const UOp& y = u.src(1);
  if (y.is_const()) {
    int64_t d = y.const_int();
    if (d == 0) return {};
    if (d < 0) {  // x // -d == (-x) // d;  x % -d == -((-x) % d)
      if (d == std::numeric_limits<int64_t>::min()) return {};
      UOp nx = x * idx(-1);
      return u.op() == Op::FLOORDIV ? nx.floordiv(idx(-d)) : (nx % idx(-d)) * idx(-1);
    }
    return fold_const_divisor(u, x, d);
  }
  // Symbolic divisors: x // x, x % x, and (x * c) // x where x is never 0.
  bool nonzero = y.vmin() > 0 || y.vmax() < 0;
  if (!nonzero) return {};
  if (x == y) return idx(u.op() == Op::FLOORDIV ? 1 : 0);
  // c * y, or c * (y * z): a multiple of y.
  Linear l = linear_form(x);
  if (l.constant != 0 || l.terms.size() != 1) return {};
  const auto& [t, c] = l.terms[0];
  UOp quotient;
  if (t == y) quotient = idx(c);
  else if (t.op() == Op::MUL && t.src(0) == y) quotient = t.src(1) * idx(c);
  else if (t.op() == Op::MUL && t.src(1) == y) quotient = t.src(0) * idx(c);
  if (!quotient) return {};
  return u.op() == Op::FLOORDIV ? quotient : idx(0);
}

}  // namespace ugpu::ir
