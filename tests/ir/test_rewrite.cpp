#include <doctest/doctest.h>

#include "ir/rewrite.h"

using namespace ugpu::ir;
namespace dt = ugpu::ir::dtypes;

namespace {
UOp c(int64_t v) { return UOp::const_int(dt::int32, v); }
UOp var(const char* n) { return UOp::var(n, 0, 100, dt::int32); }
}  // namespace

TEST_CASE("graph_rewrite: rewrites to a fixed point, including what rules produce") {
  // 1 -> 2 -> 3 for constants; a rule result is rewritten again.
  PatternMatcher pm("chain", {
                                 Rule(UPat::cnst(1), [](const Match&) { return c(2); }),
                                 Rule(UPat::cnst(2), [](const Match&) { return c(3); }),
                             });
  UOp x = var("x");
  CHECK(graph_rewrite(x + 1, pm) == x + 3);
  // A rule whose output contains a node another rule rewrites.
  PatternMatcher pm2("grow", {
                                 Rule(UPat(Op::MUL, {UPat::var("x"), UPat::cnst(2)}), [](const Match& m) { return m["x"] + m["x"]; }),
                                 Rule(UPat(Op::ADD, {UPat::var("x"), UPat::var("x")}), [](const Match& m) { return m["x"] << 1; }),
                             });
  CHECK(graph_rewrite((x * 2) * 2, pm2) == ((x << 1) << 1));
}

TEST_CASE("graph_rewrite: sources are rewritten before their users (post-order)") {
  std::vector<std::string> order;
  PatternMatcher pm("log", {Rule(UPat(), [&](const Match& m) {
                      order.push_back(std::string(op_name(m.node().op())));
                      return UOp();
                    })});
  UOp x = var("x");
  graph_rewrite(x * 3 + 1, pm);
  CHECK(order == std::vector<std::string>{"DEFINE_VAR", "CONST", "MUL", "CONST", "ADD"});
}

TEST_CASE("graph_rewrite: bottom-up sees the original children") {
  UOp x = var("x");
  // post-order rule turns x*2 into x+x; a pre-order rule on ADD(MUL(..), ..) sees the MUL first.
  PatternMatcher mul("mul", {Rule(UPat(Op::MUL, {UPat::var("x"), UPat::cnst(2)}), [](const Match& m) { return m["x"] + m["x"]; })});
  PatternMatcher top("top", {Rule(UPat(Op::ADD, {UPat(Op::MUL), UPat::cnst(1)}), [](const Match&) { return c(42); })});
  UOp e = x * 2 + 1;
  CHECK(graph_rewrite(e, &mul, RewriteOptions{&top}) == c(42));
  CHECK(graph_rewrite(e, mul + top) == (x + x) + 1);  // post-order: the MUL is gone before the ADD is seen
}

TEST_CASE("graph_walk: one pass, results are not rewritten again") {
  PatternMatcher pm("chain", {
                                 Rule(UPat::cnst(1), [](const Match&) { return c(2); }),
                                 Rule(UPat::cnst(2), [](const Match&) { return c(3); }),
                             });
  UOp x = var("x");
  CHECK(graph_walk(x + 1, pm) == x + 2);
  CHECK(graph_rewrite(x + 1, pm) == x + 3);
}

TEST_CASE("substitute replaces nodes without looking inside replacements") {
  UOp x = var("x"), y = var("y");
  UOp e = (x + y) * x;
  CHECK(substitute(e, {{x, y}}) == (y + y) * y);
  CHECK(substitute(e, {{x, x + 1}}) == ((x + 1) + y) * (x + 1));
  CHECK(substitute(e, {{x + y, c(7)}}) == c(7) * x);
  CHECK(substitute(e, {}) == e);
}

TEST_CASE("graph_rewrite: a rewrite loop is an error that shows the cycle") {
  UOp x = var("x");
  PatternMatcher pm(
      "loop",
      {
          Rule(
              UPat(Op::ADD, {UPat::var("a"), UPat::var("b")}), [](const Match& m) { return UOp::alu(Op::SUB, {m["a"], -m["b"]}); }, "add-to-sub"),
          Rule(
              UPat(Op::SUB, {UPat::var("a"), UPat(Op::NEG, {UPat::var("b")})}), [](const Match& m) { return m["a"] + m["b"]; }, "sub-to-add"),
      });
  try {
    graph_rewrite(x + 1, pm);
    FAIL("expected RewriteLoop");
  } catch (const RewriteLoop& e) {
    std::string msg = e.what();
    CHECK(msg.find("rewrite loop") != std::string::npos);
    CHECK(msg.find("add-to-sub") != std::string::npos);
    CHECK(msg.find("sub-to-add") != std::string::npos);
  }
  PatternMatcher self("self", {Rule(UPat(Op::DEFINE_VAR).named("v"), [](const Match& m) { return m["v"] + 0; }, "wrap")});
  CHECK_THROWS_AS(graph_rewrite(x, self), RewriteLoop);
}

TEST_CASE("graph_rewrite: bottom-up rules that come back are a loop too") {
  UOp x = var("x");
  PatternMatcher flip("flip", {
                                  Rule(
                                      UPat::cnst(1), [](const Match&) { return c(2); }, "one-to-two"),
                                  Rule(
                                      UPat::cnst(2), [](const Match&) { return c(1); }, "two-to-one"),
                              });
  try {
    graph_rewrite_bottom_up(x + 1, flip);
    FAIL("expected RewriteLoop");
  } catch (const RewriteLoop& e) {
    std::string msg = e.what();
    CHECK(msg.find("bottom-up rules come back") != std::string::npos);
    CHECK(msg.find("two-to-one") != std::string::npos);
  }
}

TEST_CASE("graph_rewrite: a rewrite that never settles stops with an error") {
  UOp x = var("x");
  PatternMatcher grow("grow", {Rule(UPat(Op::CONST).named("k"), [](const Match& m) { return c(m["k"].const_int() + 1); }, "grow")});
  try {
    graph_rewrite(x + 1, &grow, RewriteOptions{nullptr, nullptr, 1000});
    FAIL("expected RewriteLoop");
  } catch (const RewriteLoop& e) { CHECK(std::string(e.what()).find("did not converge") != std::string::npos); }
}

TEST_CASE("graph_rewrite: deep graphs do not overflow the stack") {
  UOp x = var("x");
  UOp acc = x;
  for (int i = 0; i < 100000; ++i) acc = UOp::alu(Op::ADD, {acc, c(1)});
  PatternMatcher one("one", {Rule(UPat::cnst(1), [](const Match&) { return c(2); })});
  UOp r = graph_rewrite(acc, one);
  CHECK(r.src(1) == c(2));
  CHECK(r.toposort().size() == 100002);
  CHECK(substitute(acc, {{x, c(0)}}).toposort().size() == 100002);
}
