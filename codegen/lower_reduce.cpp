// REDUCE(x, r...) {op}  ->  an accumulator in a register:
//   acc  = DEFINE_REG:A[reg]*                         A: the accumulation dtype
//   init = STORE(INDEX(AFTER(acc, e...), 0), identity)   e: loops open around the reduce
//   upd  = STORE(p, LOAD(p) op x)  with p = INDEX(AFTER(acc, init, r...), 0)
//   out  = LOAD(INDEX(AFTER(acc, END(upd, r...)), 0))
// The AFTER sources place each access: init inside the enclosing loops but before the reduce loops,
// the update inside them, the result after them (codegen/scope.h). Reductions that share a reduce
// loop share its enclosing loops too: one whose value does not vary along an outer loop is still
// reset inside it when the loop it runs in is (unrolled copies of a kernel do this).
#include <cmath>
#include <unordered_map>

#include "codegen/passes.h"
#include "codegen/scope.h"
#include "common/error.h"
#include "ir/rewrite.h"
#include "ir/text.h"
#include "ir/upat.h"

namespace ugpu::codegen {
using namespace ir;
namespace {

struct Ctx {
  Scopes scopes;
  int64_t next_id = 0;
  bool fuse = false;
  std::unordered_map<const void*, uint64_t> around;  // reduce RANGE -> loops open around any REDUCE over it
};

}  // namespace

UOp reduce_identity(Op op, DType t) {
  if (t.count > 1) {
    std::vector<UOp> lanes(t.count, reduce_identity(op, t.element()));
    return UOp::make(Op::VECTORIZE, t, lanes);
  }
  if (op == Op::ADD) return t.is_float() ? UOp::const_float(t, 0.0) : UOp::const_int(t, 0);
  if (op == Op::MUL) return t.is_float() ? UOp::const_float(t, 1.0) : UOp::const_int(t, 1);
  return t.is_float() ? UOp::const_float(t, -INFINITY) : UOp::const_int(t, t.min_int());  // MAX
}

namespace {
bool is_zero_vector(const UOp& v) {
  if (v.op() != Op::VECTORIZE) return false;
  for (const UOp& s : v.src())
    if (!s.is_const() || s.const_float() != 0.0) return false;
  return true;
}
}  // namespace

UOp accumulate(Op op, const UOp& acc, const UOp& x) {
  if (op == Op::ADD && x.op() == Op::WMMA) {
    UOp c = is_zero_vector(x.src(2)) ? acc : accumulate(op, acc, x.src(2));
    return UOp::make(Op::WMMA, x.dtype(), {x.src(0), x.src(1), c}, x.arg());
  }
  return UOp::alu(op, {acc, x});
}

namespace {

DType acc_dtype(Op op, DType t) { return op == Op::MAX || t.is_bool() ? t : sum_acc_dtype(t); }

UOp lower_one(const Match& m) {
  Ctx& c = m.ctx<Ctx>();
  const UOp& red = m.node();
  Op op = red.arg_as<Op>();
  std::vector<UOp> rs(red.src().begin() + 1, red.src().end());
  if (rs.empty()) return red.src(0);
  uint64_t rbits = 0;
  for (const UOp& r : rs) rbits |= uint64_t{1} << c.scopes.bit(r);
  uint64_t open = c.scopes.of(red.src(0)) & ~rbits;
  for (const UOp& r : rs)
    if (auto it = c.around.find(r.get()); it != c.around.end()) open |= it->second;
  DType t = red.dtype(), a = acc_dtype(op, t);
  if (t.count != 1 && !(t.is_float() && op == Op::ADD)) throw Error("REDUCE of a vector is a float sum (a tensor core's): " + to_inline(red, 120));

  UOp acc = UOp::make(Op::DEFINE_REG, a.ptr(AddrSpace::Reg), {}, Ints{c.next_id++, 1});
  UOp zero = UOp::const_int(dtypes::index, 0);
  std::vector<UOp> at_init{acc};
  for (const UOp& e : c.scopes.list(open)) at_init.push_back(e);
  UOp init_base = at_init.size() == 1 ? acc : UOp::make(Op::AFTER, acc.dtype(), at_init);
  UOp init = UOp::make(Op::STORE, dtypes::void_, {UOp::make(Op::INDEX, acc.dtype(), {init_base, zero}), reduce_identity(op, a)});
  std::vector<UOp> at_loop{acc, init};
  at_loop.insert(at_loop.end(), rs.begin(), rs.end());
  UOp p = UOp::make(Op::INDEX, acc.dtype(), {UOp::make(Op::AFTER, acc.dtype(), at_loop), zero});
  UOp old = UOp::make(Op::LOAD, a, {p}), x = red.src(0);
  bool fma = c.fuse && op == Op::ADD && x.op() == Op::MUL && x.dtype() == a && (a.scalar == ScalarType::Float || a.scalar == ScalarType::Double);
  UOp next = fma ? UOp::make(Op::FMA, a, {x.src(0), x.src(1), old}) : accumulate(op, old, x.cast(a));
  UOp upd = UOp::make(Op::STORE, dtypes::void_, {p, next});
  std::vector<UOp> end_src{upd};
  end_src.insert(end_src.end(), rs.begin(), rs.end());
  UOp end = UOp::make(Op::END, dtypes::void_, end_src);
  UOp out = UOp::make(Op::LOAD, a, {UOp::make(Op::INDEX, acc.dtype(), {UOp::make(Op::AFTER, acc.dtype(), {acc, end}), zero})});
  return out.cast(t);
}

}  // namespace

UOp lower_reduce(const UOp& sink, bool fuse_multiply_add) {
  Ctx c{Scopes(sink), 0, fuse_multiply_add, {}};
  for (const UOp& u : sink.toposort()) {
    if (u.op() == Op::DEFINE_REG) c.next_id = std::max(c.next_id, u.arg_as<Ints>()[0] + 1);
    if (u.op() == Op::REDUCE)
      for (const UOp& r : u.src().subspan(1)) c.around[r.get()] |= c.scopes.of(u);
  }
  static const PatternMatcher pm("lower_reduce", {Rule(UPat(Op::REDUCE), lower_one, "REDUCE to accumulator")});
  return graph_rewrite(sink, pm, &c);
}

}  // namespace ugpu::codegen
