#include "ir/symbolic.h"

#include <algorithm>
#include <atomic>
#include <numeric>

#include "ir/alu.h"
#include "ir/intmath.h"
#include "ir/rewrite.h"

namespace ugpu::ir {

// ---- canonical order -----------------------------------------------------------------------------

namespace {

template <class T>
int cmp3(const T& a, const T& b) {
  return a < b ? -1 : b < a ? 1 : 0;
}

int compare_arg(const Arg& a, const Arg& b) {
  if (a.index() != b.index()) return cmp3(a.index(), b.index());
  return std::visit(
      [&](const auto& x) -> int {
        using T = std::decay_t<decltype(x)>;
        const T& y = std::get<T>(b);
        if constexpr (std::is_same_v<T, std::monostate>) return 0;
        else if constexpr (std::is_same_v<T, VarArg>)
          return x.name != y.name ? cmp3(x.name, y.name) : x.min != y.min ? cmp3(x.min, y.min) : cmp3(x.max, y.max);
        else if constexpr (std::is_same_v<T, RangeArg>) return x.axis != y.axis ? cmp3(x.axis, y.axis) : cmp3(x.type, y.type);
        else if constexpr (std::is_same_v<T, ReduceAxisArg>) return x.op != y.op ? cmp3(x.op, y.op) : cmp3(x.axes, y.axes);
        else if constexpr (std::is_same_v<T, double>) return arg_equal(a, b) ? 0 : x < y ? -1 : 1;
        else return cmp3(x, y);
      },
      a);
}

int compare(const UOp& a, const UOp& b, int depth) {
  if (a == b) return 0;
  if (a.op() != b.op()) return cmp3(a.op(), b.op());
  if (int c = compare_arg(a.arg(), b.arg())) return c;
  if (a.dtype() != b.dtype()) return a.dtype().name() < b.dtype().name() ? -1 : 1;
  if (a.src().size() != b.src().size()) return cmp3(a.src().size(), b.src().size());
  if (depth > 0)
    for (size_t i = 0; i < a.src().size(); ++i)
      if (int c = compare(a.src(i), b.src(i), depth - 1)) return c;
  return cmp3(a.hash(), b.hash());
}

}  // namespace

bool canonical_less(const UOp& a, const UOp& b) { return compare(a, b, 6) < 0; }

// ---- linear forms --------------------------------------------------------------------------------

namespace {

int64_t wmul(int64_t a, int64_t b) { return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b)); }
int64_t wadd(int64_t a, int64_t b) { return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b)); }

bool is_linear_op(const UOp& u) {
  switch (u.op()) {
    case Op::ADD:
    case Op::SUB:
    case Op::NEG: return true;
    case Op::MUL: return u.src(0).is_const() || u.src(1).is_const();
    case Op::SHL: return u.dtype().is_index() && u.src(1).is_const() && u.src(1).const_int() >= 0 && u.src(1).const_int() < 62;
    default: return false;
  }
}

void collect(const UOp& root, int64_t scale, Linear& out) {
  // Raw pointers while walking: every node here is kept alive by root.
  std::vector<std::pair<const UOp*, int64_t>> work{{&root, scale}};
  while (!work.empty()) {
    auto [u, s] = work.back();
    work.pop_back();
    if (u->is_const()) {
      out.constant = wadd(out.constant, wmul(s, u->const_int()));
      continue;
    }
    if (!is_linear_op(*u)) {
      out.terms.emplace_back(*u, s);
      continue;
    }
    switch (u->op()) {
      case Op::ADD: work.push_back({&u->src(0), s}), work.push_back({&u->src(1), s}); break;
      case Op::SUB: work.push_back({&u->src(0), s}), work.push_back({&u->src(1), wmul(s, -1)}); break;
      case Op::NEG: work.push_back({&u->src(0), wmul(s, -1)}); break;
      case Op::SHL: work.push_back({&u->src(0), wmul(s, int64_t{1} << u->src(1).const_int())}); break;
      default: {  // MUL by a constant
        bool c0 = u->src(0).is_const();
        work.push_back({&u->src(c0 ? 1 : 0), wmul(s, u->src(c0 ? 0 : 1).const_int())});
      }
    }
  }
}

}  // namespace

Linear linear_form(const UOp& u) {
  Linear l;
  collect(u, 1, l);
  std::sort(l.terms.begin(), l.terms.end(), [](const auto& a, const auto& b) { return canonical_less(a.first, b.first); });
  Linear merged;
  merged.constant = wrap_int(l.constant, u.dtype());
  merged.terms.reserve(l.terms.size());
  for (auto& [t, c] : l.terms) {
    if (!merged.terms.empty() && merged.terms.back().first == t) merged.terms.back().second = wadd(merged.terms.back().second, c);
    else merged.terms.emplace_back(std::move(t), c);
  }
  for (auto& tc : merged.terms) tc.second = wrap_int(tc.second, u.dtype());
  std::erase_if(merged.terms, [](const auto& tc) { return tc.second == 0; });
  return merged;
}

UOp from_linear(const Linear& l, DType dt) {
  UOp acc;
  for (const auto& [t, c] : l.terms) {
    UOp term = c == 1 ? t : UOp::make(Op::MUL, dt, {t, UOp::const_int(dt, c)});
    acc = acc ? UOp::make(Op::ADD, dt, {acc, term}) : term;
  }
  if (!acc) return UOp::const_int(dt, l.constant);
  if (l.constant != 0) acc = UOp::make(Op::ADD, dt, {acc, UOp::const_int(dt, l.constant)});
  return acc;
}

// ---- validity ------------------------------------------------------------------------------------

std::vector<UOp> split_and(const UOp& u) {
  std::vector<UOp> out, work{u};
  while (!work.empty()) {
    UOp x = work.back();
    work.pop_back();
    if (x.op() == Op::AND && x.dtype().is_bool()) work.push_back(x.src(1)), work.push_back(x.src(0));
    else out.push_back(x);
  }
  return out;
}

namespace {

// What a clause says about an index expression: expr in [lo, hi].
struct Fact {
  UOp expr;
  int64_t lo, hi;
};

std::optional<Fact> clause_fact(const UOp& c) {
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min(), kMax = std::numeric_limits<int64_t>::max();
  auto usable = [](const UOp& e) { return e.dtype().is_int() && has_exact_bounds(e.dtype()) && !e.is_const(); };
  if (c.op() == Op::CMPLT) {
    const UOp &a = c.src(0), &b = c.src(1);
    if (b.is_const() && usable(a) && b.const_int() != kMin) return Fact{a, kMin, b.const_int() - 1};  // a < k
    if (a.is_const() && usable(b) && a.const_int() != kMax) return Fact{b, a.const_int() + 1, kMax};  // k < b
  }
  if (c.op() == Op::CMPNE && c.src(1).is_int_const(1) && c.src(0).op() == Op::CMPLT) {  // !(a < k) / !(k < b)
    const UOp &a = c.src(0).src(0), &b = c.src(0).src(1);
    if (b.is_const() && usable(a)) return Fact{a, b.const_int(), kMax};
    if (a.is_const() && usable(b)) return Fact{b, kMin, a.const_int()};
  }
  return std::nullopt;
}

std::atomic<uint64_t> g_fake_id{0};

}  // namespace

UOp uop_given_valid(const UOp& valid, const UOp& x) {
  // Memory is touched whatever `valid` says (a WHERE computes both of its sides), so what decides
  // which address an access reads must not be simplified by it: the gate of a masked access (`15 < i`
  // gating a load inside WHERE(15 < i, ...) is not `true`), and the address of an unmasked one (`i % 16`
  // is not `i` there, for the lanes past 15). Both wait behind opaque stand-ins until the end; the
  // address of a masked access may simplify, its gate keeps it safe.
  // Work a barrier orders (workgroup memory written before it, read after it) stays as written: the
  // barrier runs in every work-item, whatever `valid` says in one of them.
  for (const UOp& u : x.toposort())
    if (u.op() == Op::BARRIER) return x;
  std::unordered_map<UOp, UOp, UOpHash> hide, show;
  auto opaque = [&](const UOp& e) {
    if (e.is_const() || hide.count(e)) return;
    UOp stand_in = UOp::var("\x01kept" + std::to_string(g_fake_id.fetch_add(1)), e.vmin(), e.vmax(), e.dtype());
    hide.emplace(e, stand_in);
    show.emplace(stand_in, e);
  };
  for (const UOp& u : x.toposort())
    if (u.op() == Op::INDEX) opaque(u.src().size() == 3 ? u.src(2) : u.src(1));
  // Tighten each constrained expression's bounds, as a fresh variable standing in for it.
  std::vector<Fact> facts;
  auto add_fact = [&](const UOp& e, int64_t lo, int64_t hi) {
    auto it = std::find_if(facts.begin(), facts.end(), [&](const Fact& g) { return g.expr == e; });
    if (it == facts.end()) facts.push_back({e, lo, hi});
    else it->lo = std::max(it->lo, lo), it->hi = std::min(it->hi, hi);
  };
  for (const UOp& c : split_and(valid))
    if (auto f = clause_fact(c)) add_fact(f->expr, f->lo, f->hi);
  // A bound on a sum bounds each of its terms too, given the others' bounds.
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min(), kMax = std::numeric_limits<int64_t>::max();
  constexpr int64_t kBig = int64_t{1} << 50;  // beyond this, bounds are not worth the overflow risk
  for (size_t fi = 0, n = facts.size(); fi < n; ++fi) {
    Fact f = facts[fi];
    if (!f.expr.dtype().is_index()) continue;
    Linear l = linear_form(f.expr);
    if (l.terms.size() < 2 && (l.terms.empty() || (l.terms[0].second == 1 && l.constant == 0))) continue;
    for (size_t j = 0; j < l.terms.size(); ++j) {
      int64_t rest_lo = l.constant, rest_hi = l.constant;
      bool ok = true;
      auto big = [&](int64_t v) { return v < -kBig || v > kBig; };  // no std::abs: INT64_MIN has none
      for (size_t i = 0; i < l.terms.size() && ok; ++i) {
        if (i == j) continue;
        const auto& [t, c] = l.terms[i];
        int64_t a, b;
        if (big(c) || big(t.vmin()) || big(t.vmax()) || __builtin_mul_overflow(c, t.vmin(), &a) || __builtin_mul_overflow(c, t.vmax(), &b) ||
            __builtin_add_overflow(rest_lo, std::min(a, b), &rest_lo) || __builtin_add_overflow(rest_hi, std::max(a, b), &rest_hi))
          ok = false;
      }
      const auto& [t, c] = l.terms[j];
      if (!ok || big(c) || big(rest_lo) || big(rest_hi)) continue;
      // c*t in [f.lo - rest_hi, f.hi - rest_lo]
      int64_t lo = f.lo > -kBig ? f.lo - rest_hi : kMin, hi = f.hi < kBig ? f.hi - rest_lo : kMax;
      int64_t tlo = kMin, thi = kMax;
      if (c > 0) {
        if (lo != kMin) tlo = ceil_div(lo, c);
        if (hi != kMax) thi = floor_div(hi, c);
      } else {
        if (hi != kMax) tlo = ceil_div(hi, c);
        if (lo != kMin) thi = floor_div(lo, c);
      }
      if (tlo > t.vmin() || thi < t.vmax()) add_fact(t, tlo, thi);
    }
  }
  UOp out = hide.empty() ? x : substitute(x, hide);
  for (const Fact& f : facts) {
    int64_t lo = std::max(f.lo, f.expr.vmin()), hi = std::min(f.hi, f.expr.vmax());
    if (lo > hi) continue;  // contradictory: x's value does not matter; leave it
    if (lo == f.expr.vmin() && hi == f.expr.vmax()) continue;
    UOp fake = UOp::var("\x01given" + std::to_string(g_fake_id.fetch_add(1)), lo, hi, f.expr.dtype());
    UOp sub = substitute(out, {{f.expr, fake}});
    if (sub == out) continue;
    UOp simp = simplify(sub);
    if (simp == sub) continue;
    // Put back the expression, and simplify once more: the stand-in sorted elsewhere in sums.
    out = simplify(substitute(simp, {{fake, f.expr}}));
  }
  return show.empty() ? out : substitute(out, show);
}

UOp simplify_valid(const UOp& valid) {
  std::vector<UOp> clauses = split_and(valid);
  if (clauses.size() < 2) return valid;
  std::vector<UOp> kept;
  kept.reserve(clauses.size());
  for (size_t i = 0; i < clauses.size(); ++i) {
    UOp others;
    for (size_t j = 0; j < clauses.size(); ++j)
      if (j != i && !(j < i && std::find(kept.begin(), kept.end(), clauses[j]) == kept.end())) others = others ? (others & clauses[j]) : clauses[j];
    UOp c = others ? uop_given_valid(others, clauses[i]) : clauses[i];
    if (c.is_int_const(1)) continue;
    if (c.is_int_const(0)) return UOp::const_bool(false);
    kept.push_back(clauses[i]);
  }
  if (kept.size() == clauses.size()) return valid;  // nothing implied: keep its shape
  UOp out;
  for (const UOp& c : kept) out = out ? (out & c) : c;
  return out ? out : UOp::const_bool(true);
}

// ---- rules ---------------------------------------------------------------------------------------

namespace {

using M = const Match&;
bool is_intlike(DType t) { return (t.is_int() || t.is_bool()) && !t.is_ptr(); }
bool exact(const UOp& u) { return has_exact_bounds(u.dtype()); }
UOp cnst(const UOp& like, int64_t v) { return UOp::const_int(like.dtype(), v); }

// Every value of `from` is exactly a value of `to`.
bool lossless(DType from, DType to) {
  if (from == to) return true;
  if (from.is_bool()) return true;
  if (from.is_float() != to.is_float()) {
    if (from.is_float() || from.is_index()) return false;
    int digits = to.scalar == ScalarType::Double ? 53 : to.scalar == ScalarType::Float ? 24 : to.scalar == ScalarType::Half ? 11 : 0;
    return from.bitsize() - (from.is_unsigned() ? 0 : 1) <= digits;
  }
  if (from.is_float()) {
    auto rank = [](DType t) {
      switch (t.scalar) {
        case ScalarType::FP8E4M3: return std::pair{4, 3};
        case ScalarType::FP8E5M2: return std::pair{5, 2};
        case ScalarType::Half: return std::pair{5, 10};
        case ScalarType::BFloat16: return std::pair{8, 7};
        case ScalarType::Float: return std::pair{8, 23};
        default: return std::pair{11, 52};
      }
    };
    auto [fe, fm] = rank(from);
    auto [te, tm] = rank(to);
    return te >= fe && tm >= fm;
  }
  if (to.is_index()) return true;
  if (from.is_index()) return false;
  return from.min_int() >= to.min_int() && from.max_int() <= to.max_int() &&
         !(from.is_unsigned() && from.bitsize() == 64 && !(to.is_unsigned() && to.bitsize() == 64));
}

bool int_x(M m) { return is_intlike(m["x"].dtype()); }
// Signed integers only: a uint64 constant -1 is 2^64 - 1, so x // it is not -x, nor x % it 0.
bool signed_x(M m) { return int_x(m) && !m["x"].dtype().is_unsigned(); }

UOp fold_alu(M m) {
  const UOp& u = m.node();
  std::vector<Scalar> args;
  for (const UOp& s : u.src()) {
    if (!s.is_const() || !s.dtype().is_scalar()) return {};
    args.push_back(const_value(s));
  }
  auto r = exec_alu(u.op(), u.dtype(), u.src(u.op() == Op::WHERE ? 1 : 0).dtype(), args);
  return r ? const_from(u.dtype(), *r) : UOp();
}

std::vector<Rule> simple_rules() {
  const std::vector<DType> kBool{dtypes::bool_};
  UPat x = UPat::var("x"), y = UPat::var("y"), c = UPat::cvar("c");
  UPat alu = UPat(OpSet::group(OpGroup::Unary) | OpSet::group(OpGroup::Binary) | OpSet::group(OpGroup::Ternary));
  return {
      Rule(alu.repeat(UPat(Op::CONST)), fold_alu, "const-fold"),
      // identities
      Rule(
          x + UPat::cnst(0), [](M m) { return m["x"]; }, "x+0"),
      Rule(
          x * UPat::cnst(1), [](M m) { return m["x"]; }, "x*1"),
      Rule(
          x * UPat::cnst(0), [](M m) { return int_x(m) ? cnst(m["x"], 0) : UOp(); }, "x*0 (int)"),
      Rule(
          UPat(Op::SUB, {x, UPat::cnst(0)}), [](M m) { return m["x"]; }, "x-0"),
      Rule(
          UPat(Op::SUB, {x, x}), [](M m) { return int_x(m) ? cnst(m["x"], 0) : UOp(); }, "x-x (int)"),
      Rule(
          UPat(Op::NEG, {UPat(Op::NEG, {x})}), [](M m) { return m["x"]; }, "--x"),
      Rule(
          UPat({Op::FLOORDIV, Op::CDIV}, {x, UPat::cnst(1)}), [](M m) { return m["x"]; }, "x//1"),
      Rule(
          UPat({Op::FLOORDIV, Op::CDIV}, {x, UPat::cnst(-1)}), [](M m) { return signed_x(m) ? -m["x"] : UOp(); }, "x//-1"),
      Rule(
          UPat({Op::FLOORMOD, Op::CMOD}, {x, UPat::cnst(1)}), [](M m) { return int_x(m) ? cnst(m["x"], 0) : UOp(); }, "x%1"),
      Rule(
          UPat({Op::FLOORMOD, Op::CMOD}, {x, UPat::cnst(-1)}), [](M m) { return signed_x(m) ? cnst(m["x"], 0) : UOp(); }, "x%-1"),
      Rule(
          UPat({Op::FLOORDIV, Op::CDIV}, {x, x}),
          [](M m) {
            const UOp& v = m["x"];
            return is_intlike(v.dtype()) && exact(v) && (v.vmin() > 0 || v.vmax() < 0) ? cnst(v, 1) : UOp();
          },
          "x//x"),
      Rule(
          UPat({Op::FLOORMOD, Op::CMOD}, {x, x}),
          [](M m) {
            const UOp& v = m["x"];
            return is_intlike(v.dtype()) && exact(v) && (v.vmin() > 0 || v.vmax() < 0) ? cnst(v, 0) : UOp();
          },
          "x%x"),
      Rule(
          UPat({Op::FLOORMOD, Op::CMOD}, {UPat({Op::FLOORMOD, Op::CMOD}, {x, y}).named("inner"), y}),
          [](M m) { return m["inner"].op() == m.node().op() ? m["inner"] : UOp(); }, "(x%y)%y"),
      Rule(
          UPat(Op::XOR).any_order({UPat(Op::XOR).any_order({x, y}), y}), [](M m) { return m["x"]; }, "(x^y)^y"),
      Rule(
          x ^ x, [](M m) { return int_x(m) ? cnst(m["x"], 0) : UOp(); }, "x^x"),
      Rule(
          x & x, [](M m) { return m["x"]; }, "x&x"),
      Rule(
          x | x, [](M m) { return m["x"]; }, "x|x"),
      Rule(
          UPat(Op::MAX).any_order({x, x}), [](M m) { return m["x"]; }, "max(x,x)"),
      Rule(
          x & UPat::cnst(0), [](M m) { return int_x(m) ? cnst(m["x"], 0) : UOp(); }, "x&0"),
      Rule(
          x | UPat::cnst(0), [](M m) { return int_x(m) ? m["x"] : UOp(); }, "x|0"),
      Rule(
          x ^ UPat::cnst(0), [](M m) { return int_x(m) ? m["x"] : UOp(); }, "x^0"),
      Rule(
          UPat({Op::SHL, Op::SHR}, {x, UPat::cnst(0)}), [](M m) { return m["x"]; }, "x<<0"),
      Rule(
          UPat(Op::CMPLT, {x, x}), [](M m) { return int_x(m) ? UOp::const_bool(false) : UOp(); }, "x<x (int)"),
      Rule(
          UPat(Op::CMPNE).any_order({x, x}), [](M m) { return int_x(m) ? UOp::const_bool(false) : UOp(); }, "x!=x (int)"),
      Rule(
          UPat(Op::CMPEQ).any_order({x, x}), [](M m) { return int_x(m) ? UOp::const_bool(true) : UOp(); }, "x==x (int)"),
      // bool algebra
      Rule(
          UPat(Op::AND).any_order({UPat::var("x", kBool), UPat::cnst(1)}), [](M m) { return m["x"]; }, "b&true"),
      Rule(
          UPat(Op::OR).any_order({UPat::var("x", kBool), UPat::cnst(0)}), [](M m) { return m["x"]; }, "b|false"),
      Rule(
          UPat(Op::OR).any_order({UPat::var("x", kBool), UPat::cnst(1)}), [](M) { return UOp::const_bool(true); }, "b|true"),
      Rule(
          UPat(Op::MUL).any_order({UPat::var("x", kBool), UPat::var("y", kBool)}), [](M m) { return m["x"] & m["y"]; }, "b*b=and"),
      Rule(
          UPat({Op::ADD, Op::MAX}).any_order({UPat::var("x", kBool), UPat::var("y", kBool)}), [](M m) { return m["x"] | m["y"]; }, "b+b=or"),
      Rule(
          UPat(Op::CMPNE, {UPat::var("x", kBool), UPat::cnst(0)}), [](M m) { return m["x"]; }, "b!=false"),
      Rule(
          UPat(Op::CMPEQ, {UPat::var("x", kBool), UPat::cnst(1)}), [](M m) { return m["x"]; }, "b==true"),
      Rule(
          UPat(Op::CMPEQ, {UPat::var("x", kBool), UPat::cnst(0)}), [](M m) { return m["x"].logical_not(); }, "b==false"),
      Rule(
          UPat(Op::CMPNE, {UPat(Op::CMPNE, {UPat::var("x", kBool), UPat::cnst(1)}), UPat::cnst(1)}), [](M m) { return m["x"]; }, "!!b"),
      Rule(
          UPat(Op::AND).any_order({UPat::var("x", kBool), UPat(Op::CMPNE, {UPat::var("x", kBool), UPat::cnst(1)})}),
          [](M) { return UOp::const_bool(false); }, "b&!b"),
      // casts
      Rule(
          UPat(Op::CAST, {x}), [](M m) { return m["x"].dtype() == m.node().dtype() ? m["x"] : UOp(); }, "cast to same"),
      Rule(
          UPat(Op::CAST, {UPat(Op::CAST, {x}).named("mid")}),
          [](M m) {
            DType from = m["x"].dtype(), mid = m["mid"].dtype();
            return m.node().dtype() == from && from.is_scalar() && lossless(from, mid) ? m["x"] : UOp();
          },
          "lossless double cast"),
      Rule(
          UPat(Op::CAST, {x}),
          [](M m) {
            const UOp& v = m["x"];
            if (!m.node().dtype().is_bool() || v.dtype().is_bool() || !v.dtype().is_scalar()) return UOp();
            return v.ne(UOp::const_int(v.dtype(), 0));
          },
          "cast to bool is !=0"),
      // where
      Rule(
          UPat(Op::WHERE, {UPat::var("c"), x, x}), [](M m) { return m["x"]; }, "where(c,x,x)"),
      Rule(
          UPat(Op::WHERE, {UPat::cnst(1), x, y}), [](M m) { return m["x"]; }, "where(true,x,y)"),
      Rule(
          UPat(Op::WHERE, {UPat::cnst(0), x, y}), [](M m) { return m["y"]; }, "where(false,x,y)"),
      Rule(
          UPat(Op::WHERE, {UPat(Op::CMPNE, {UPat::var("c", kBool), UPat::cnst(1)}), x, y}), [](M m) { return m["c"].where(m["y"], m["x"]); },
          "where(!c,x,y)"),
      Rule(
          UPat(Op::WHERE, {UPat::var("c"), UPat::cnst(1), UPat::cnst(0)}), [](M m) { return m.node().dtype().is_bool() ? m["c"] : UOp(); },
          "where(c,true,false)"),
      Rule(
          UPat(Op::WHERE, {UPat::var("c"), UPat::cnst(0), UPat::cnst(1)}),
          [](M m) { return m.node().dtype().is_bool() ? m["c"].logical_not() : UOp(); }, "where(c,false,true)"),
      Rule(
          UPat(Op::WHERE, {UPat::var("c"), UPat(Op::WHERE, {UPat::var("c"), x, UPat()}), y}), [](M m) { return m["c"].where(m["x"], m["y"]); },
          "where(c,where(c,x,_),y)"),
      Rule(
          UPat(Op::WHERE, {UPat::var("c"), x, UPat(Op::WHERE, {UPat::var("c"), UPat(), y})}), [](M m) { return m["c"].where(m["x"], m["y"]); },
          "where(c,x,where(c,_,y))"),
  };
}

// Commutative int ops: constant on the right, otherwise operands in canonical order.
UOp canonical_operands(M m) {
  const UOp& u = m.node();
  if (!is_intlike(u.dtype()) && !is_comparison(u.op())) return {};
  if (!is_intlike(u.src(0).dtype())) return {};
  const UOp &a = u.src(0), &b = u.src(1);
  bool swap = a.is_const() ? !b.is_const() : (!b.is_const() && canonical_less(b, a));
  return swap ? UOp::make(u.op(), u.dtype(), {b, a}, u.arg()) : UOp();
}

// x // c * (k*c) + x % c * k  ==  x * k: recombine a division and modulo split (floor semantics).
bool recombine_divmod(Linear& l) {
  for (size_t i = 0; i < l.terms.size(); ++i) {
    const auto& [div, kd] = l.terms[i];
    if (div.op() != Op::FLOORDIV || !div.src(1).is_const()) continue;
    int64_t c = div.src(1).const_int();
    for (size_t j = 0; j < l.terms.size(); ++j) {
      const auto& [mod, km] = l.terms[j];
      if (mod.op() != Op::FLOORMOD || !(mod.src(0) == div.src(0)) || !(mod.src(1) == div.src(1)) || km * c != kd) continue;
      UOp x = div.src(0);
      int64_t k = km;
      l.terms.erase(l.terms.begin() + static_cast<std::ptrdiff_t>(std::max(i, j)));
      l.terms.erase(l.terms.begin() + static_cast<std::ptrdiff_t>(std::min(i, j)));
      Linear inner = linear_form(x);
      for (auto& [t, ct] : inner.terms) l.terms.push_back({t, ct * k});
      l.constant += inner.constant * k;
      return true;
    }
  }
  return false;
}

// Whether u is already exactly what from_linear(l) builds — checked without building anything,
// since most sums the rewriter visits are already canonical.
bool is_built_from(const UOp& u, const Linear& l) {
  const UOp* cur = &u;
  auto term_is = [](const UOp& n, const UOp& t, int64_t c) {
    if (c == 1) return n == t;
    return n.op() == Op::MUL && n.src(0) == t && n.src(1).is_int_const(c) && n.src(1).dtype() == n.dtype();
  };
  if (l.terms.empty()) return cur->is_int_const(l.constant);
  if (l.constant != 0) {
    if (cur->op() != Op::ADD || !cur->src(1).is_int_const(l.constant)) return false;
    cur = &cur->src(0);
  }
  for (size_t i = l.terms.size(); i-- > 1;) {
    if (cur->op() != Op::ADD || !term_is(cur->src(1), l.terms[i].first, l.terms[i].second)) return false;
    cur = &cur->src(0);
  }
  return term_is(*cur, l.terms[0].first, l.terms[0].second);
}

// One summand of a canonical sum: a non-linear term t, or t * c with c a constant other than 0, 1.
const UOp* summand_term(const UOp& u) {
  if (u.is_const()) return nullptr;
  if (!is_linear_op(u)) return &u;
  if (u.op() == Op::MUL && u.src(1).is_const() && !u.src(0).is_const() && !is_linear_op(u.src(0)) && !u.src(1).is_int_const(0) &&
      !u.src(1).is_int_const(1))
    return &u.src(0);
  return nullptr;
}

// The common case without building a linear form: the rewriter visits sources first, so in
// ADD(a, b) `a` is already canonical, and the sum is too when b is one summand whose term sorts
// after a's last one (so it cannot repeat an earlier term either).
bool cheaply_canonical(const UOp& u) {
  if (u.op() == Op::MUL) return summand_term(u) != nullptr;
  if (u.op() != Op::ADD) return false;
  const UOp &a = u.src(0), &b = u.src(1);
  const UOp* last = a.op() == Op::ADD ? summand_term(a.src(1)) : summand_term(a);
  if (!last) return false;  // a ends in a constant, or is not a plain summand
  if (b.is_const()) return !b.is_int_const(0);
  const UOp* tb = summand_term(b);
  return tb && canonical_less(*last, *tb);
}

UOp linear_canonical(M m) {
  const UOp& u = m.node();
  if (!u.dtype().is_int() || !u.dtype().is_scalar() || !is_linear_op(u)) return {};
  // (a new FLOORDIV/FLOORMOD summand may pair with one in a: that needs the full form)
  if (cheaply_canonical(u)) {
    const UOp* tb = u.op() == Op::ADD ? summand_term(u.src(1)) : nullptr;
    if (!tb || (tb->op() != Op::FLOORDIV && tb->op() != Op::FLOORMOD)) return {};
  }
  Linear l = linear_form(u);
  if (u.dtype().is_index() && recombine_divmod(l)) return from_linear(l, u.dtype());  // rewritten again
  return is_built_from(u, l) ? UOp() : from_linear(l, u.dtype());
}

UOp fold_by_bounds(M m) {
  const UOp& u = m.node();
  if (!exact(u) || !u.dtype().is_scalar() || u.vmin() != u.vmax()) return {};
  for (const UOp& s : u.src())
    if (s.op() == Op::INVALID) return {};
  return cnst(u, u.vmin());
}

UOp max_by_bounds(M m) {
  const UOp &a = m.node().src(0), &b = m.node().src(1);
  if (!exact(a)) return {};
  if (a.vmin() >= b.vmax()) return a;
  if (b.vmin() >= a.vmax()) return b;
  return {};
}

// a < b with a constant side, for index math: constants move to one side, common factors divide
// out, and `x // d < k` becomes `x < k * d`.
UOp fold_cmplt(M m) {
  const UOp& u = m.node();
  const UOp &a = u.src(0), &b = u.src(1);
  if (!a.dtype().is_index() || a.is_const() == b.is_const()) return {};
  auto idx = [](int64_t v) { return UOp::const_int(dtypes::index, v); };
  bool const_right = b.is_const();
  const UOp& e = const_right ? a : b;
  int64_t k = const_right ? b.const_int() : a.const_int();
  if (e.op() == Op::FLOORDIV && e.src(1).is_const() && e.src(1).const_int() > 0) {
    int64_t d = e.src(1).const_int();
    // x // d < k  <=>  x < k*d;   k < x // d  <=>  (k+1)*d - 1 < x
    return const_right ? e.src(0).lt(idx(k * d)) : idx((k + 1) * d - 1).lt(e.src(0));
  }
  Linear l = linear_form(e);
  if (l.terms.empty()) return {};
  int64_t g = 0;
  for (const auto& [t, c] : l.terms) g = std::gcd(g, c);
  bool negate = l.terms.size() == 1 && l.terms[0].second < 0;  // keep a lone term positive
  if (g == 1 && l.constant == 0 && !negate) return {};
  Linear s;
  for (const auto& [t, c] : l.terms) s.terms.push_back({t, negate ? -c / g : c / g});
  UOp sum = from_linear(s, dtypes::index);
  int64_t rhs = k - l.constant;                           // e < k  <=>  g*S < rhs;   k < e  <=>  rhs < g*S
  if (negate) const_right = !const_right, rhs = -rhs;     // -g*S < rhs  <=>  -rhs < g*S
  if (const_right) return sum.lt(idx(ceil_div(rhs, g)));  // S < ceil(rhs / g)
  return idx(floor_div(rhs, g)).lt(sum);                  // floor(rhs / g) < S
}

UOp where_given_cond(M m) {
  const UOp& u = m.node();
  const UOp& v = u.src(1);
  if (!v.dtype().is_int() || v.is_const() || v.op() == Op::INVALID) return {};
  std::vector<UOp> clauses = split_and(u.src(0));
  if (std::none_of(clauses.begin(), clauses.end(), [](const UOp& c) { return clause_fact(c).has_value(); })) return {};
  UOp valid = simplify_valid(u.src(0));
  UOp nv = uop_given_valid(valid, v);
  if (valid == u.src(0) && nv == v) return {};
  return valid.where(nv, u.src(2));
}

std::vector<Rule> symbolic_rules() {
  UPat alu = UPat(OpSet::group(OpGroup::Unary) | OpSet::group(OpGroup::Binary) | OpSet::group(OpGroup::Ternary));
  return {
      Rule(alu, fold_by_bounds, "bounds: min==max"),
      Rule(UPat({Op::ADD, Op::SUB, Op::NEG, Op::MUL, Op::SHL}), linear_canonical, "linear canonical form"),
      Rule(UPat({Op::MUL, Op::MAX, Op::AND, Op::OR, Op::XOR, Op::CMPNE, Op::CMPEQ}), canonical_operands, "commutative order"),
      Rule(UPat(Op::MAX), max_by_bounds, "max by bounds"),
      Rule(
          UPat({Op::FLOORDIV, Op::FLOORMOD}), [](M m) { return fold_divmod(m.node()); }, "divmod"),
      Rule(
          UPat({Op::CDIV, Op::CMOD}),
          [](M m) {
            const UOp& u = m.node();
            if (!u.dtype().is_index() || u.src(0).vmin() < 0 || u.src(1).vmin() <= 0) return UOp();
            return UOp::make(u.op() == Op::CDIV ? Op::FLOORDIV : Op::FLOORMOD, u.dtype(), u.src());
          },
          "trunc div of non-negatives is floor div"),
      Rule(
          UPat(Op::SHR, {UPat::var("x", {dtypes::index}), UPat::cvar("c")}),
          [](M m) {
            int64_t s = m["c"].const_int();
            return s >= 0 && s < 62 ? m["x"].floordiv(UOp::const_int(dtypes::index, int64_t{1} << s)) : UOp();
          },
          "index >> c is // 2^c"),
      Rule(UPat(Op::CMPLT), fold_cmplt, "lt folding"),
      Rule(UPat(Op::WHERE), where_given_cond, "where: simplify given valid"),
  };
}

}  // namespace

const PatternMatcher& symbolic_simple() {
  static const PatternMatcher pm("symbolic_simple", simple_rules());
  return pm;
}

const PatternMatcher& symbolic() {
  static const PatternMatcher pm = symbolic_simple() + PatternMatcher("symbolic", symbolic_rules());
  return pm;
}

UOp simplify(const UOp& u) { return graph_rewrite(u, symbolic()); }

}  // namespace ugpu::ir
