#include <doctest/doctest.h>

#include "ir/text.h"
#include "ir/verify.h"

using namespace ugpu::ir;
namespace dt = ugpu::ir::dtypes;

namespace {
std::string problem(const UOp& u) {
  auto p = verify(u);
  return p.empty() ? "" : p.front();
}
bool starts(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }
}  // namespace

TEST_CASE("verify: well-formed graphs pass") {
  UOp g = UOp::make(Op::DEFINE_GLOBAL, dt::float32.ptr(), {}, int64_t{0});
  UOp r = UOp::range(16, 0);
  UOp idx = UOp::make(Op::INDEX, g.dtype(), {g, r});
  UOp ld = UOp::make(Op::LOAD, dt::float32, {idx});
  UOp st = UOp::make(Op::STORE, dt::void_, {idx, ld * 2.0});
  UOp k = UOp::sink(std::vector<UOp>{UOp::make(Op::END, dt::void_, {st, r})});
  CHECK(verify(k).empty());
  CHECK_NOTHROW(verify_or_throw(parse("x = DEFINE_VAR {\"x\", 0, 9}\nWHERE(x < 5, x // 2, INVALID)")));
}

TEST_CASE("verify: each op's rules are checked") {
  UOp i = UOp::var("i", 0, 9, dt::int32), j = UOp::var("j", 0, 9, dt::int64), f = UOp::const_float(dt::float32, 1.0);
  CHECK(starts(problem(UOp::make(Op::ADD, dt::int32, {i, j})), "ADD: sources have different dtypes int32 and int64"));
  CHECK(starts(problem(UOp::make(Op::CMPLT, dt::int32, {i, i})), "CMPLT: comparisons give bool"));
  CHECK(starts(problem(UOp::make(Op::FDIV, dt::int32, {i, i})), "FDIV: FDIV is for floats"));
  CHECK(starts(problem(UOp::make(Op::DEFINE_LOCAL, dt::float32.ptr(AddrSpace::Local), {}, Ints{0, 0})),
               "DEFINE_LOCAL: arg must be (id, element count)"));
  // A define in the wrong address space is a problem named as such, not an exception from reading
  // its argument as another define's (issue 18: `DEFINE_LOCAL:float* {(0, 64)}` aborted).
  CHECK(
      starts(problem(UOp::make(Op::DEFINE_LOCAL, dt::float32.ptr(), {}, Ints{0, 64})), "DEFINE_LOCAL: dtype must be a pointer in its address space"));
  CHECK_THROWS_AS(verify_or_throw(parse("out = DEFINE_GLOBAL:float* {0}\ntmp = DEFINE_LOCAL:float* {(0, 64)}\n"
                                        "SINK(STORE(INDEX:float*(out, 0), LOAD:float(INDEX:float*(tmp, 0))))")),
                  VerifyError);
  CHECK(starts(problem(UOp::make(Op::FLOORMOD, dt::float32, {f, f})), "FLOORMOD: FLOORMOD is for integers"));
  // Issue 18: a negative RANGE end, a negative EXPAND dimension, and an INDEX that changes address
  // space were accepted (the last failed later as LLVM IR that does not parse).
  CHECK(starts(problem(UOp::range(-5, 0)), "RANGE: the end cannot be negative"));
  CHECK(starts(problem(UOp::make(Op::EXPAND, dt::float32, {f}, Ints{-2})), "EXPAND: negative dimension"));
  UOp gbuf = UOp::make(Op::DEFINE_GLOBAL, dt::float32.ptr(), {}, int64_t{0});
  CHECK(starts(problem(UOp::make(Op::INDEX, dt::float32.ptr(AddrSpace::Reg), {gbuf, UOp::const_int(dt::index, 0)})),
               "INDEX: INDEX yields a pointer in its buffer's address space"));
  CHECK(starts(problem(UOp::make(Op::SQRT, dt::int32, {i})), "SQRT: SQRT is for floats"));
  CHECK(starts(problem(UOp::make(Op::WHERE, dt::int32, {i, i, i})), "WHERE: condition must be bool"));
  CHECK(starts(problem(UOp::make(Op::BITCAST, dt::int64, {i})), "BITCAST: BITCAST keeps the bit size"));
  CHECK(starts(problem(UOp::make(Op::CONST, dt::int8, {}, int64_t{300})), "CONST: value 300 does not fit int8"));
  CHECK(starts(problem(UOp::make(Op::CONST, dt::half, {}, 0.1)), "CONST: value 0.1 is not exact in half"));
  CHECK(starts(problem(UOp::make(Op::CONST, dt::int32, {}, 1.5)), "CONST: integer CONST needs an integer value"));
  CHECK(starts(problem(UOp::make(Op::RANGE, dt::int32, {UOp::const_int(dt::index, 4)}, RangeArg{0, AxisType::LOOP})), "RANGE: end is index"));
  CHECK(starts(problem(UOp::make(Op::RANGE, dt::index, {UOp::const_int(dt::index, 4)}, int64_t{0})), "RANGE: arg of the wrong kind"));
  CHECK(starts(problem(UOp::make(Op::LOAD, dt::float32, {f})), "LOAD: LOAD's first source must be a pointer"));
  UOp g = UOp::make(Op::DEFINE_GLOBAL, dt::float32.ptr(), {}, int64_t{0});
  CHECK(starts(problem(UOp::make(Op::STORE, dt::void_, {g, i})), "STORE: stored value is int32, buffer holds float"));
  CHECK(starts(problem(UOp::make(Op::DEFINE_GLOBAL, dt::float32, {}, int64_t{0})), "DEFINE_GLOBAL: dtype must be a pointer"));
  CHECK(starts(problem(UOp::make(Op::END, dt::void_, {f, i})), "END: sources after the first must be RANGEs"));
  CHECK(starts(problem(UOp::make(Op::REDUCE, dt::float32, {f}, Op::SUB)), "REDUCE: reduces with ADD, MUL or MAX"));
  UOp shaped = UOp::make(Op::RESHAPE, dt::float32, {f}, Ints{2, 3});
  CHECK(starts(problem(UOp::make(Op::RESHAPE, dt::float32, {shaped}, Ints{5})), "RESHAPE: reshape changes the element count"));
  CHECK(starts(problem(UOp::make(Op::PERMUTE, dt::float32, {shaped}, Ints{0, 0})), "PERMUTE: not a permutation"));
  CHECK(starts(problem(UOp::make(Op::EXPAND, dt::float32, {shaped}, Ints{4, 3})), "EXPAND: only size-1 axes expand"));
  CHECK(starts(problem(UOp::make(Op::SHRINK, dt::float32, {shaped}, Pairs{{0, 1}, {2, 4}})), "SHRINK: shrink range outside the axis"));
  CHECK(starts(problem(UOp::make(Op::VECTORIZE, dt::float32.vec(3), {f, f})), "VECTORIZE: dtype must be float.vec(2)"));
  CHECK(starts(problem(UOp::make(Op::ADD, dt::int32, {i})), "ADD: expects 2 sources, has 1"));
  CHECK_THROWS_AS(verify_or_throw(UOp::make(Op::ADD, dt::int32, {i, j})), VerifyError);
}
