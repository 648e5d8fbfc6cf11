#include <doctest/doctest.h>

#include "common/error.h"
#include "ir/upat.h"

using namespace ugpu::ir;
namespace dt = ugpu::ir::dtypes;

namespace {
UOp tag(int64_t v) { return UOp::const_int(dt::int32, v); }
// A matcher with one rule whose callback records that it ran and returns tag(1).
UOp fires(const UPat& p, const UOp& u) {
  PatternMatcher pm("t", {Rule(p, [](const Match&) { return tag(1); })});
  return pm.rewrite(u);
}
}  // namespace

TEST_CASE("upat: a repeated name must bind the same node") {
  UOp a = UOp::var("a", 0, 9, dt::int32), b = UOp::var("b", 0, 9, dt::int32);
  UPat x = UPat::var("x");
  CHECK(fires(x + x, a + a));
  CHECK_FALSE(fires(x + x, a + b));
  CHECK(fires(UPat(Op::MUL, {x + UPat::var("y"), x}), UOp::alu(Op::MUL, {a + b, a})));
  CHECK_FALSE(fires(UPat(Op::MUL, {x + UPat::var("y"), x}), UOp::alu(Op::MUL, {a + b, b + a})));
}

TEST_CASE("upat: commutative sources try every order, and every binding is offered") {
  UOp a = UOp::var("a", 0, 9, dt::int32), c = tag(5);
  UPat p = UPat::var("x") + UPat::cvar("c");
  CHECK(fires(p, a + c));
  CHECK(fires(p, UOp::alu(Op::ADD, {c, a})));
  // x + y over (a + b): two bindings; the callback rejects x=a and accepts x=b.
  UOp b = UOp::var("b", 0, 9, dt::int32);
  std::vector<std::string> seen;
  PatternMatcher pm("t", {Rule(UPat::var("x") + UPat::var("y"), [&](const Match& m) {
                      seen.push_back(m["x"] == a ? "a" : "b");
                      return m["x"] == b ? m["y"] : UOp();
                    })});
  CHECK(pm.rewrite(a + b) == a);
  CHECK(seen == std::vector<std::string>{"a", "b"});
  // identical sub-patterns are one order, not two
  int calls = 0;
  UPat any;
  PatternMatcher pm2("t", {Rule(UPat(Op::ADD).any_order({any, any}), [&](const Match&) {
                       ++calls;
                       return UOp();
                     })});
  pm2.rewrite(a + b);
  CHECK(calls == 1);
  // three sources: all 6 orders
  UPat w = UPat(Op::WHERE).any_order({UPat::cvar("c1"), UPat::var("v"), UPat::cvar("c2")});
  UOp cond = a.lt(b);
  UOp wh = UOp::make(Op::WHERE, dt::int32, {cond, tag(1), tag(2)});
  int binds = 0;
  PatternMatcher pm3("t", {Rule(w, [&](const Match&) {
                       ++binds;
                       return UOp();
                     })});
  pm3.rewrite(wh);
  CHECK(binds == 2);  // v=cond with (c1,c2) = (1,2) or (2,1)
}

TEST_CASE("upat: dtype, arg, value and predicate constraints") {
  UOp i = UOp::var("i", 0, 9, dt::int32);
  UOp f = UOp::const_float(dt::float32, 0.0);
  CHECK(fires(UPat::var("x", {dt::int32}), i));
  CHECK_FALSE(fires(UPat::var("x", {dt::int64, dt::float32}), i));
  CHECK(fires(UPat::cnst(0), f));
  CHECK(fires(UPat::cnst(0), UOp::const_int(dt::index, 0)));
  CHECK(fires(UPat::cnst(0), UOp::const_float(dt::float32, -0.0)));
  CHECK_FALSE(fires(UPat::cnst(0), UOp::const_int(dt::index, 1)));
  CHECK(fires(UPat(Op::DEFINE_VAR).arg(VarArg{"i", 0, 9}), i));
  CHECK_FALSE(fires(UPat(Op::DEFINE_VAR).arg(VarArg{"i", 0, 8}), i));
  CHECK(fires(UPat().check([](const UOp& u) { return u.vmax() == 9; }), i));
  CHECK_FALSE(fires(UPat().check([](const UOp& u) { return u.vmax() == 8; }), i));
}

TEST_CASE("upat: positional, any-length and repeated sources") {
  UOp a = UOp::var("a", 0, 9), b = UOp::var("b", 0, 9), c = UOp::var("c", 0, 9);
  UOp sink = UOp::sink(std::vector<UOp>{a, b, c});
  CHECK_FALSE(fires(UPat(Op::SINK, {UPat::var("x")}), sink));
  CHECK(fires(UPat(Op::SINK, {UPat::var("x")}).allow_any_len(), sink));
  CHECK(fires(UPat(Op::SINK).repeat(UPat(Op::DEFINE_VAR)), sink));
  CHECK_FALSE(fires(UPat(Op::SINK).repeat(UPat(Op::RANGE)), sink));
  CHECK(fires(UPat(Op::SINK), sink));
  CHECK_FALSE(fires(UPat(Op::SINK, {UPat::var("x"), UPat::var("x"), UPat()}), sink));
  CHECK(fires(UPat(Op::SINK, {UPat::var("x"), UPat::var("x"), UPat()}), UOp::sink(std::vector<UOp>{a, a, c})));
}

TEST_CASE("pattern matcher: rules run in list order; returning the input is no match") {
  UOp a = UOp::var("a", 0, 9, dt::int32);
  PatternMatcher pm("order", {
                                 Rule(UPat(Op::DEFINE_VAR).named("x"), [](const Match& m) { return m["x"]; }),
                                 Rule(UPat(Op::DEFINE_VAR), [](const Match&) { return tag(2); }),
                                 Rule(UPat(Op::DEFINE_VAR), [](const Match&) { return tag(3); }),
                             });
  const std::string* name = nullptr;
  CHECK(pm.rewrite(a, nullptr, &name) == tag(2));
  REQUIRE(name);
  CHECK(*name == "order#1");
  PatternMatcher both = pm + PatternMatcher("more", {Rule(UPat(Op::ADD), [](const Match&) { return tag(4); })});
  CHECK(both.size() == 4);
  CHECK(both.rewrite(a) == tag(2));
  CHECK(both.rewrite(a + 1) == tag(4));
  CHECK_FALSE(pm.rewrite(a + 1));
}

TEST_CASE("pattern matcher: early rejection never hides a match") {
  UOp a = UOp::var("a", 0, 9), b = UOp::var("b", 0, 9);
  PatternMatcher pm("t", {Rule(UPat(Op::ADD).any_order({UPat(Op::MUL), UPat()}), [](const Match&) { return tag(1); })});
  CHECK_FALSE(pm.rewrite(a + b));
  CHECK(pm.rewrite(b + a * 2));
  CHECK(pm.rewrite(a * 2 + b));
}

TEST_CASE("pattern matcher: context and errors") {
  UOp a = UOp::var("a", 0, 9);
  int counter = 0;
  PatternMatcher pm("ctx", {Rule(UPat(Op::DEFINE_VAR), [](const Match& m) {
                      ++m.ctx<int>();
                      return UOp();
                    })});
  pm.rewrite(a, &counter);
  CHECK(counter == 1);
  PatternMatcher bad("bad", {Rule(UPat(Op::DEFINE_VAR), [](const Match& m) { return m["nope"]; })});
  CHECK_THROWS_AS(bad.rewrite(a), ugpu::Error);
  std::vector<UPat> many(9, UPat());
  CHECK_THROWS_AS(UPat(Op::SINK).any_order(many), ugpu::Error);
}
