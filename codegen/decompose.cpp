// Ops without a target instruction, rewritten into ones with: MULACC as multiply and add, POW through
// exp2/log2, and the transcendentals the target lacks (codegen/transcendental.h).
#include "codegen/passes.h"
#include "codegen/transcendental.h"
#include "common/error.h"
#include "ir/rewrite.h"
#include "ir/text.h"
#include "ir/upat.h"

namespace ugpu::codegen {
using namespace ir;
namespace {

bool native(const Target& t, Op op, DType dt) {
  if (dt.scalar == ScalarType::Double) return t.native_f64.has(op);
  return t.native_f32.has(op);
}

// bfloat16 math is done in float32 and rounded per op (the renderer keeps bfloat16 as bits).
UOp bf16_in_float(const Match& m) {
  const UOp& u = m.node();
  if (u.op() == Op::CAST || u.op() == Op::BITCAST || u.op() == Op::WHERE) return UOp();
  bool any = u.dtype().scalar == ScalarType::BFloat16;
  for (const UOp& s : u.src()) any = any || s.dtype().scalar == ScalarType::BFloat16;
  if (!any) return UOp();
  std::vector<UOp> src;
  for (const UOp& s : u.src()) src.push_back(s.dtype().scalar == ScalarType::BFloat16 ? s.cast(dtypes::float32) : s);
  UOp r = UOp::alu(u.op(), src);
  return u.dtype().scalar == ScalarType::BFloat16 ? r.cast(u.dtype()) : r;
}

UOp decompose_one(const Match& m) {
  const Target& t = m.ctx<const Target>();
  const UOp& u = m.node();
  DType dt = u.dtype();
  switch (u.op()) {
    case Op::MULACC: return u.src(0) * u.src(1) + u.src(2);
    case Op::FMA:  // half through float32 (bfloat16 goes through the rule below)
      if (dt.scalar != ScalarType::Half) return UOp();
      return UOp::make(Op::FMA, dtypes::float32, {u.src(0).cast(dtypes::float32), u.src(1).cast(dtypes::float32), u.src(2).cast(dtypes::float32)})
          .cast(dt);
    case Op::POW: return xpow(u.src(0), u.src(1), t.has_f64);
    case Op::EXP2:
    case Op::LOG2:
    case Op::SIN:
    case Op::SQRT: {
      if (!dt.is_float()) throw Error(std::string(op_name(u.op())) + " of a " + dt.name() + " value: transcendentals take floats");
      if (native(t, u.op(), dt) && (dt.scalar == ScalarType::Float || dt.scalar == ScalarType::Double)) return UOp();
      if (native(t, u.op(), dt)) {  // half/bfloat16 through float32 hardware
        return UOp::make(u.op(), dtypes::float32, {u.src(0).cast(dtypes::float32)}).cast(dt);
      }
      return transcendental(u.op(), u.src(0));
    }
    default: return UOp();
  }
}

}  // namespace

UOp decompose(const UOp& sink, const Target& target) {
  static const PatternMatcher pm(
      "decompose", {Rule(UPat({Op::MULACC, Op::FMA, Op::POW, Op::EXP2, Op::LOG2, Op::SIN, Op::SQRT}), decompose_one, "decompose"),
                    Rule(UPat(OpSet::group(OpGroup::Unary) | OpSet::group(OpGroup::Binary) | OpSet::group(OpGroup::Ternary)), bf16_in_float,
                         "bfloat16 math in float32")});
  return graph_rewrite(sink, pm, const_cast<Target*>(&target));
}

}  // namespace ugpu::codegen
