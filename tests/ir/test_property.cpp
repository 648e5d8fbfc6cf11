// Property tests: random index expressions keep their value through simplification, bounds hold,
// and the text form round-trips. Plus the fixed corpus of bench-rewrite must not grow.
#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>

#include "ir/alu.h"
#include "ir/symbolic.h"
#include "ir/text.h"
#include "ir/verify.h"

using namespace ugpu::ir;
namespace dt = ugpu::ir::dtypes;

namespace {

struct Gen {
  std::mt19937_64 rng;
  DType dt;
  std::vector<UOp> leaves;

  Gen(uint64_t seed, DType t) : rng(seed), dt(t) {
    int nv = 1 + static_cast<int>(rng() % 3);
    for (int i = 0; i < nv; ++i) {
      int64_t lo = static_cast<int64_t>(rng() % 40) - (rng() % 3 == 0 && !dt.is_unsigned() ? 20 : 0);
      leaves.push_back(UOp::var("v" + std::to_string(i), lo, lo + static_cast<int64_t>(rng() % 60), dt));
    }
    if (dt.is_index())
      for (int i = 0; i < 2; ++i) leaves.push_back(UOp::range(1 + static_cast<int64_t>(rng() % 32), i));
  }
  int64_t pick(int64_t lo, int64_t hi) { return lo + static_cast<int64_t>(rng() % static_cast<uint64_t>(hi - lo + 1)); }
  UOp c(int64_t v) { return UOp::const_int(dt, v); }

  UOp cond(int depth) {
    switch (rng() % 5) {
      case 0: return expr(depth).lt(c(pick(-20, 80)));
      case 1: return c(pick(-20, 40)).lt(expr(depth));
      case 2: return expr(depth).ne(c(pick(0, 20)));
      case 3: return cond(depth - 1) & cond(depth - 1);
      default: return expr(depth).lt(expr(depth - 1));
    }
  }

  UOp expr(int depth) {
    if (depth <= 0 || rng() % 6 == 0) return rng() % 5 == 0 ? c(pick(-10, 40)) : leaves[rng() % leaves.size()];
    UOp a = expr(depth - 1);
    switch (rng() % 14) {
      case 0:
      case 1: return a + expr(depth - 1);
      case 2: return a - expr(depth - 1);
      case 3:
      case 4: return a * c(pick(-4, 17));
      case 5: return a * expr(depth - 2);
      case 6: {
        int64_t d = pick(1, 24);
        return a.floordiv(c(rng() % 8 == 0 ? -d : d));
      }
      case 7: {
        int64_t d = pick(1, 24);
        return a % c(rng() % 8 == 0 ? -d : d);
      }
      case 8: {  // a divisor that is never 0
        UOp d = leaves[rng() % leaves.size()];
        return (rng() % 2 ? a.floordiv(d * d + 1) : a % (d * d + 1));
      }
      case 9: return a.max(expr(depth - 1));
      case 10: return cond(depth - 1).where(a, expr(depth - 1));
      case 11: return -a;
      case 12: return UOp::alu(rng() % 2 ? Op::CDIV : Op::CMOD, {a, c(pick(1, 12))});
      default: return a << c(pick(0, 3));
    }
  }

  std::unordered_map<UOp, Scalar, UOpHash> point() {
    std::unordered_map<UOp, Scalar, UOpHash> env;
    for (const UOp& l : leaves)  // a variable's declared bounds (vmin/vmax may be its dtype's whole range)
      env[l] = Scalar{l.op() == Op::DEFINE_VAR ? pick(l.arg_as<VarArg>().min, l.arg_as<VarArg>().max) : pick(l.vmin(), l.vmax())};
    return env;
  }
};

// Evaluates, treating WHERE(c, x, INVALID) as "no value" where c is false.
std::optional<int64_t> eval_valid(const UOp& u, const std::unordered_map<UOp, Scalar, UOpHash>& env, bool& invalid) {
  invalid = false;
  if (u.op() == Op::WHERE && u.src(2).op() == Op::INVALID) {
    auto c = evaluate(u.src(0), env);
    if (!c) return std::nullopt;
    if (!std::get<int64_t>(*c)) {
      invalid = true;
      return std::nullopt;
    }
    auto v = evaluate(u.src(1), env);
    return v ? std::optional(std::get<int64_t>(*v)) : std::nullopt;
  }
  auto v = evaluate(u, env);
  return v ? std::optional(std::get<int64_t>(*v)) : std::nullopt;
}

void check_equivalent(const UOp& orig, const UOp& simp, Gen& g, int points) {
  for (int p = 0; p < points; ++p) {
    auto env = g.point();
    bool inv_a = false, inv_b = false;
    auto a = eval_valid(orig, env, inv_a);
    if (inv_a || !a) continue;
    auto b = eval_valid(simp, env, inv_b);
    std::string where;
    for (const auto& [k, v] : env) where += to_inline(k, 40) + "=" + std::to_string(std::get<int64_t>(v)) + " ";
    INFO("original:   ", print(orig));
    INFO("simplified: ", print(simp));
    INFO("at: ", where);
    REQUIRE_FALSE(inv_b);
    REQUIRE(b.has_value());
    REQUIRE(*a == *b);
    if (orig.op() != Op::WHERE || orig.src(2).op() != Op::INVALID) {
      REQUIRE(*a >= orig.vmin());
      REQUIRE(*a <= orig.vmax());
      REQUIRE(*a >= simp.vmin());
      REQUIRE(*a <= simp.vmax());
    }
  }
}

// The size of an expression as written out: its operations, each use of a shared subexpression
// counted (constants and leaves are free).
double tree_size(const UOp& u) {
  std::unordered_map<const void*, double> size;
  for (const UOp& x : u.toposort()) {
    double s = is_alu(x.op()) ? 1 : 0;
    for (const UOp& src : x.src()) s += size.at(src.get());
    size[x.get()] = s;
  }
  return size.at(u.get());
}
size_t node_count(const UOp& u) { return u.toposort().size(); }

}  // namespace

TEST_CASE("property: simplified index expressions keep their value") {
  for (uint64_t seed = 0; seed < 3000; ++seed) {
    Gen g(seed, dt::index);
    UOp e = g.expr(4);
    if (seed % 5 == 0) e = g.cond(2).where(e, UOp::invalid());
    INFO(print(e));
    UOp s = simplify(e);
    auto problems = verify(s);
    REQUIRE(problems.empty());
    check_equivalent(e, s, g, 12);
    CHECK(simplify(s) == s);  // a fixed point
  }
}

TEST_CASE("property: simplified fixed-width integer expressions keep their wrap-around value, in every width and signedness") {
  for (DType t : {dt::int32, dt::int8, dt::uint8, dt::int16, dt::uint16, dt::uint32, dt::int64, dt::uint64}) {
    CAPTURE(t.name());
    for (uint64_t seed = 0; seed < (t == dt::int32 ? 1000u : 300u); ++seed) {
      Gen g(seed + 100000, t);
      UOp e = g.expr(4);
      INFO(print(e));
      UOp s = simplify(e);
      REQUIRE(verify(s).empty());
      check_equivalent(e, s, g, 12);
    }
  }
}

TEST_CASE("property: random graphs round-trip through the text form") {
  for (uint64_t seed = 0; seed < 500; ++seed) {
    Gen g(seed + 7, seed % 2 ? dt::index : dt::int32);
    UOp e = g.expr(5);
    for (const UOp& u : {e, simplify(e)}) {
      std::string text = print(u);
      INFO(text);
      REQUIRE(parse(text) == u);
    }
  }
}

TEST_CASE("property: the bench-rewrite corpus never grows when simplified") {
  const char* root = std::getenv("UGPU_SOURCE_ROOT");
  std::string path = std::string(root ? root : ".") + "/bench/corpus/index_exprs.txt";
  std::ifstream in(path);
  REQUIRE_MESSAGE(in.good(), "cannot open ", path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string all = ss.str(), chunk;
  size_t count = 0, before = 0, after = 0;
  double tree_before = 0, tree_after = 0;
  std::istringstream lines(all);
  std::string line;
  auto flush = [&] {
    if (chunk.find_first_not_of(" \n") == std::string::npos) return chunk.clear();
    UOp e = parse(chunk);
    UOp s = simplify(e);
    INFO(chunk);
    REQUIRE(verify(s).empty());
    CHECK(tree_size(s) <= tree_size(e));
    Gen g(count, dt::index);
    g.leaves.clear();
    for (const UOp& n : e.toposort())
      if (n.op() == Op::DEFINE_VAR || n.op() == Op::RANGE || n.op() == Op::SPECIAL) g.leaves.push_back(n);
    check_equivalent(e, s, g, 4);
    before += node_count(e), after += node_count(s), tree_before += tree_size(e), tree_after += tree_size(s), ++count;
    chunk.clear();
  };
  while (std::getline(lines, line)) {
    if (line == "---") flush();
    else chunk += line + "\n";
  }
  flush();
  CHECK(count >= 200);
  MESSAGE("corpus: ", count, " expressions; operations as written ", tree_before, " -> ", tree_after, "; distinct nodes ", before, " -> ", after);
}
