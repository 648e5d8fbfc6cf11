#include <doctest/doctest.h>

#include <cmath>

#include "ir/text.h"
#include "ir/verify.h"

using namespace ugpu::ir;
namespace dt = ugpu::ir::dtypes;

namespace {
void round_trips(const UOp& u) {
  std::string text = print(u);
  INFO(text);
  UOp back = parse(text);
  CHECK(back == u);
  CHECK(print(back) == text);
}
}  // namespace

TEST_CASE("text: printing is readable") {
  UOp x = UOp::var("x", 0, 100), r = UOp::range(16, 0);
  CHECK(print((x * 4 + r).floordiv(3)) ==
        "x = DEFINE_VAR {\"x\", 0, 100}\n"
        "r0 = RANGE(16) {0, LOOP}\n"
        "(x * 4 + r0) // 3\n");
  UOp s = x + r;
  CHECK(print(s * s) ==
        "x = DEFINE_VAR {\"x\", 0, 100}\n"
        "r0 = RANGE(16) {0, LOOP}\n"
        "x0 = x + r0\n"
        "x0 * x0\n");
  UOp i = UOp::var("i", 0, 9, dt::int32);
  CHECK(print(i + 3) == "i = DEFINE_VAR:int32 {\"i\", 0, 9}\ni + 3\n");
  CHECK(print(UOp::const_int(dt::int32, 3)) == "3:int32\n");
  CHECK(print(x - (x - 1)) == "x = DEFINE_VAR {\"x\", 0, 100}\nx - (x - 1)\n");
  CHECK(print(-(x * 2)) == "x = DEFINE_VAR {\"x\", 0, 100}\n-(x * 2)\n");
}

TEST_CASE("text: round trip of every arg kind and constant") {
  UOp x = UOp::var("x", -5, 100), r = UOp::range(16, 3, AxisType::REDUCE);
  round_trips(x.floordiv(r) % 7 + x.lt(r).where(x, UOp::invalid()));
  for (double v : std::initializer_list<double>{0.0, -0.0, 1.5, -2.25, 1e-30, 3.4028234663852886e38, INFINITY, -INFINITY, NAN, 0.1})
    for (DType t : {dt::float32, dt::float64, dt::half, dt::bfloat16, dt::fp8e4m3, dt::fp8e5m2}) round_trips(UOp::const_float(t, v));
  for (int64_t v : {int64_t{0}, int64_t{-1}, int64_t{127}, INT64_MIN, INT64_MAX})
    for (DType t : {dt::int8, dt::int32, dt::int64, dt::uint8, dt::uint32, dt::uint64, dt::index, dt::bool_}) round_trips(UOp::const_int(t, v));
  UOp g = UOp::make(Op::DEFINE_GLOBAL, dt::float32.ptr(), {}, int64_t{0});
  UOp l = UOp::make(Op::DEFINE_LOCAL, dt::half.vec(4).ptr(AddrSpace::Local), {}, Ints{1, 64});
  UOp idx = UOp::make(Op::INDEX, g.dtype(), {g, r});
  UOp ld = UOp::make(Op::LOAD, dt::float32, {idx});
  UOp st = UOp::make(Op::STORE, dt::void_, {idx, ld * 2.0});
  UOp end = UOp::make(Op::END, dt::void_, {st, r});
  UOp spec = UOp::special("gidx0", 128);
  UOp shaped = UOp::make(Op::RESHAPE, dt::float32, {ld}, Ints{2, 8});
  UOp pad = UOp::make(Op::PAD, dt::float32, {shaped}, Pairs{{0, 1}, {2, 0}});
  UOp red = UOp::make(Op::REDUCE_AXIS, dt::float32, {pad}, ReduceAxisArg{Op::MAX, {0, 1}});
  UOp vec = UOp::make(Op::VECTORIZE, dt::float32.vec(2), {ld, ld});
  UOp gep = UOp::make(Op::GEP, dt::float32, {vec}, Ints{1});
  UOp vconst = UOp::make(Op::CONST, dt::float32.vec(4), {}, 2.5);
  UOp reduce = UOp::make(Op::REDUCE, dt::float32, {ld, r}, Op::ADD);
  UOp odd = UOp::var("we\"ird\nname", 0, 1);
  round_trips(UOp::sink(std::vector<UOp>{end, spec, red, gep, vconst, reduce, l, odd, x.cast(dt::int32).bitcast(dt::float32)}));
}

TEST_CASE("text: literals take the dtype of what they meet") {
  UOp u = parse("i = DEFINE_VAR:int32 {\"i\", 0, 9}\ni * 3 + 1");
  CHECK(u.dtype() == dt::int32);
  CHECK(u.src(1).dtype() == dt::int32);
  CHECK(parse("3").dtype() == dt::index);
  CHECK(parse("3.0").dtype() == dt::float32);
  CHECK(parse("3:int8").dtype() == dt::int8);
  CHECK(parse("WHERE(true, 1.0:half, 2.0)").dtype() == dt::half);
  CHECK(parse("2 > 1").src(0).is_int_const(1));  // a > b is b < a
  CHECK(parse("-3").const_int() == -3);
  CHECK(parse("NEG(3)").op() == Op::NEG);
  CHECK(parse("18446744073709551615:uint64").const_int() == -1);
  CHECK(parse("# comment\n\n  x = 4 # trailing\nx + 1\n").src(0).is_int_const(4));
}

TEST_CASE("text: errors name the line and column") {
  auto err = [](const char* text) -> std::string {
    try {
      parse(text);
    } catch (const ParseError& e) { return e.what(); }
    return "no error";
  };
  CHECK(err("x + 1") == "line 1, column 1: unknown name 'x'");
  CHECK(err("a = 1\nb = a +\n") == "line 2, column 8: expected an expression");
  CHECK(err("3:float32") == "line 1, column 3: unknown dtype 'float32'");
  CHECK(err("DEFINE_VAR {\"x\", 5, 1}") == "line 1, column 1: variable 'x': min 5 > max 1");
  CHECK(err("DEFINE_VAR {\"x, 5, 1}") == "line 1, column 13: unterminated string");
  CHECK(err("(1 + 2") == "line 1, column 7: expected ')', found end of input");
  CHECK(err("1.5:int32") == "line 1, column 1: float literal 1.5 where int32 is expected");
  CHECK(err("300:int8") == "line 1, column 1: integer literal 300 does not fit int8");
  CHECK(err("99999999999999999999") == "line 1, column 1: integer literal 99999999999999999999 does not fit index");
  CHECK(err("a = 1\na = 2") == "line 2, column 1: name 'a' is already bound");
  CHECK(err("LOAD(1)") == "line 1, column 1: LOAD needs its dtype written: LOAD:float(...)");
  CHECK(err("RANGE(4) {0, SIDEWAYS}") == "line 1, column 14: expected an axis type (GLOBAL, LOCAL, LOOP, REDUCE, ...)");
  CHECK(err("1 $ 2") == "line 1, column 3: unexpected character '$'");
  CHECK(err("") == "line 1, column 1: empty program: no expression");
  CHECK(err("true = 1") == "line 1, column 1: 'true' is reserved and cannot be a name");
  std::string deep(2000, '(');
  CHECK(err(deep.c_str()).find("nested too deeply") != std::string::npos);
}

TEST_CASE("text: a flat chain of 20,000 terms parses, prints and frees without deep recursion (issue 18)") {
  // Left-associative chains are a tree as deep as they are long: the AST build and its destruction
  // must not recurse per level (they overflowed the stack).
  std::string text = "x = DEFINE_VAR:int32 {\"x\", 0, 9}\nx";
  for (int i = 1; i < 20000; ++i) text += " + x";
  UOp u = parse(text);
  CHECK(u.op() == Op::ADD);
  CHECK(u.toposort().size() == 20000);  // the variable and 19,999 additions
  CHECK(print(u).size() > 20000);
}

TEST_CASE("text: parse with positions: each node knows where it was written, for verification messages") {
  SourceMap at;
  UOp u = parse("a = DEFINE_GLOBAL:float* {0}\nb = CONST:int32 {5}\nc = ADD:int32(b, CAST:index(b))\nSTORE(INDEX:float*(a, 0), c)\n", at);
  std::string msg;
  try {
    verify_or_throw(u, at, "k.uop");
  } catch (const VerifyError& e) { msg = e.what(); }
  CHECK_MESSAGE(msg.find("k.uop:3:5: ADD: sources have different dtypes") != std::string::npos, msg);
  CHECK_MESSAGE(msg.find("k.uop:4:1: STORE: stored value is int32") != std::string::npos, msg);
}

TEST_CASE("text: an error about a 10 MB token quotes its start and length, not the token") {
  for (std::string text :
       {"x = " + std::string(10'000'000, '1') + ".5:int32", std::string(10'000'000, 'q') + " + 1", "x = 1 " + std::string(10'000'000, 'z')}) {
    try {
      parse(text);
      FAIL("parsed");
    } catch (const ParseError& e) {
      CHECK(std::string(e.what()).size() < 400);
      CHECK(std::string(e.what()).find("characters)") != std::string::npos);
    }
  }
}
