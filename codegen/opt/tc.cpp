// TC: a kernel's reduction onto a tensor core (codegen/tensor_core.h). The reduction must be a sum of
// products of two half or bfloat16 values (or float32 ones, for NVIDIA's tf32 instruction), A moving
// along an output axis m that B does not move along, B along an output axis n that A does not:
// C[m, n] = sum_k A[m, k] * B[k, n]. With the
// tensor core's shape M x N x K:
//   m = m' * M + (row),  n = n' * N + (col),  k = k' * K + (the k inside the instruction)
// and a new WARP axis, the lanes of one wave (work-item dimension x). Lane l builds its fragments of
// A and B (the layout's elements, each the operand with m and k, or k and n, put at the element's
// coordinates), the reduction becomes one vector REDUCE over k' of WMMA(A, B, 0), and the output
// body is copied once per element of the lane's part of D, with m and n at that element's place.
#include <algorithm>

#include "codegen/opt/opt.h"
#include "codegen/passes.h"
#include "codegen/tensor_core.h"
#include "ir/rewrite.h"

namespace ugpu::codegen::opt {
using namespace ir;
namespace {

bool tc_input(const UOp& x) { return x.dtype().scalar == ScalarType::Half || x.dtype().scalar == ScalarType::BFloat16; }

// An operand of the product as the tensor core takes it: half or bfloat16 (through a widening CAST or
// not), or float32 (tf32 instructions).
UOp tc_operand(const UOp& x) {
  if (x.op() == Op::CAST && tc_input(x.src(0)) && x.dtype().is_float()) return x.src(0);
  return tc_input(x) || x.dtype() == dtypes::float32 ? x : UOp();
}

}  // namespace

const TensorCore* kernel_tensor_core(const UOp& sink) {
  for (const UOp& u : sink.toposort())
    if (u.op() == Op::WMMA) return find_tensor_core(u.arg_as<std::string>());
  return nullptr;
}

std::vector<const TensorCore*> tensor_cores_for(const Target& t, ScalarType input) {
  std::vector<const TensorCore*> out;
  for (const TensorCore& tc : tensor_cores())
    if (tc.on(t) && tc.input == input) out.push_back(&tc);
  return out;
}

UOp apply_tc(const UOp& sink, const std::vector<Axis>& axes, const Axis& k, int64_t choice, const Target& t,
             const std::function<OptError(const std::string&)>& refuse) {
  if (!t.gpu()) throw refuse(std::string(t.name) + " has no tensor cores");
  if (k.type != AxisType::REDUCE) throw refuse("TC takes the reduce axis that the tensor core sums over");
  for (const Axis& x : axes)
    if (x.type == AxisType::WARP) throw refuse("the kernel already runs on a tensor core");
  if (has_workgroup_memory(sink)) throw refuse("the kernel uses workgroup memory");

  // The one reduction over k: ADD of a product, with masks (WHERE(c, x, 0)) peeled off.
  UOp red;
  for (const UOp& u : sink.toposort())
    if (u.op() == Op::REDUCE && closes(u, k.range)) {
      if (red) throw refuse("two reductions run over this axis");
      red = u;
    }
  if (!red) throw refuse("no reduction runs over this axis");
  if (red.arg_as<Op>() != Op::ADD) throw refuse("the reduction is not a sum");
  UOp x = red.src(0);
  std::vector<UOp> masks;
  for (;;) {
    if (x.op() == Op::CAST && x.src(0).dtype().is_float()) x = x.src(0);
    else if (x.op() == Op::WHERE && x.dtype().is_float() && x.src(2).is_const() && x.src(2).const_float() == 0.0)
      masks.push_back(x.src(0)), x = x.src(1);
    else break;
  }
  UOp p0 = x.op() == Op::MUL ? tc_operand(x.src(0)) : UOp(), p1 = x.op() == Op::MUL ? tc_operand(x.src(1)) : UOp();
  if (!p0 || !p1 || p0.dtype() != p1.dtype())
    throw refuse("tensor cores sum products of two half, bfloat16 or float values; this reduction sums " + std::string(op_name(x.op())) + " of " +
                 x.dtype().name());
  auto cores = tensor_cores_for(t, p0.dtype().scalar);
  if (cores.empty()) throw refuse(std::string(t.name) + " has no tensor core for " + p0.dtype().name() + " inputs");
  if (choice < 0 || choice >= static_cast<int64_t>(cores.size()))
    throw refuse(std::string(t.name) + " has " + std::to_string(cores.size()) + " tensor core(s) for " + p0.dtype().name() + " inputs; choose 0.." +
                 std::to_string(cores.size() - 1));
  const TensorCore& tc = *cores[choice];

  // n: the innermost output axis only one operand moves along (that operand is B); m: the innermost
  // one only the other moves along.
  auto only = [&](const UOp& yes, const UOp& no, int64_t size_multiple, int64_t skip) -> const Axis* {
    const Axis* best = nullptr;
    for (const Axis& a : axes)
      if (is_output(a.type) && a.id != skip && a.size > 0 && depends_on(yes, a.range) && !depends_on(no, a.range) && a.size % size_multiple == 0)
        best = &a;
    return best;
  };
  UOp opa = p0, opb = p1;
  const Axis* n = only(opb, opa, tc.n, -1);
  const Axis* n_swapped = only(opa, opb, tc.n, -1);
  if (!n || (n_swapped && n_swapped->id > n->id)) std::swap(opa, opb), n = n_swapped;
  const Axis* m = n ? only(opa, opb, tc.m, n->id) : nullptr;
  if (!n || !m)
    throw refuse("no pair of output axes fits " + std::string(tc.name) + ": it needs one axis of a multiple of " + std::to_string(tc.m) +
                 " that only one operand moves along and one of a multiple of " + std::to_string(tc.n) +
                 " that only the other does (PADTO them to multiples first)");
  if (k.size % tc.k != 0)
    throw refuse(std::string(tc.name) + " sums " + std::to_string(tc.k) + " products at a time; " + std::to_string(k.size) + " is not a multiple");

  // The END that closes m and n, around the reduction.
  UOp end;
  for (const UOp& u : sink.toposort())
    if (u.op() == Op::END && (closes(u, m->range) || closes(u, n->range))) {
      if (end || !closes(u, m->range) || !closes(u, n->range)) throw refuse("the output axes are closed by more than one loop end");
      end = u;
    }
  if (!end || !depends_on(end.src(0), red)) throw refuse("the reduction is not inside the loops of its output axes");
  int64_t locals = tc.threads, others = 0;
  for (const Axis& a : axes)
    if (a.type == AxisType::LOCAL) locals *= a.size, ++others;
  if (others > 2 || locals > t.max_local_total)
    throw refuse("the tensor core's " + std::to_string(tc.threads) + " lanes and the kernel's LOCAL axes do not fit a workgroup of " +
                 std::string(t.name));
  for (const UOp& mask : masks)
    if (depends_on(mask, m->range) && depends_on(mask, n->range)) throw refuse("a mask of the products depends on both output axes");

  UOp mo = UOp::range(m->size / tc.m, m->id, m->type), no = UOp::range(n->size / tc.n, n->id, n->type);
  UOp ko = UOp::range(k.size / tc.k, k.id, AxisType::REDUCE), lane = UOp::range(tc.threads, next_axis_id(axes), AxisType::WARP);
  auto at = [](const UOp& outer, int64_t size, const UOp& inner) { return outer * UOp::const_int(dtypes::index, size) + inner; };

  // The fragments. A mask goes with the operand whose axes it uses (one that uses neither with A).
  auto fragment = [&](const UOp& op, const TcLayout& l, const UOp& row_axis, const UOp& row_outer, int64_t row_size, const UOp& col_axis,
                      const UOp& col_outer, int64_t col_size, bool is_a) {
    std::vector<UOp> elems;
    for (int i = 0; i < l.elems; ++i) {
      std::unordered_map<UOp, UOp, UOpHash> s{{row_axis, at(row_outer, row_size, l.row.at(lane, i))},
                                              {col_axis, at(col_outer, col_size, l.col.at(lane, i))}};
      UOp v = substitute(op, s);
      for (const UOp& mask : masks) {
        bool on_b = depends_on(mask, n->range);
        if (on_b != is_a) v = substitute(mask, s).where(v, UOp::const_float(v.dtype(), 0.0));
      }
      elems.push_back(v);
    }
    return UOp::make(Op::VECTORIZE, op.dtype().vec(static_cast<uint16_t>(l.elems)), elems);
  };
  UOp fa = fragment(opa, tc.a, m->range, mo, tc.m, k.range, ko, tc.k, true);
  UOp fb = fragment(opb, tc.b, k.range, ko, tc.k, n->range, no, tc.n, false);
  DType acc = dtypes::float32.vec(static_cast<uint16_t>(tc.c.elems));
  std::vector<UOp> zeros(tc.c.elems, UOp::const_float(dtypes::float32, 0.0));
  UOp w = UOp::make(Op::WMMA, acc, {fa, fb, UOp::make(Op::VECTORIZE, acc, zeros)}, std::string(tc.name));
  std::vector<UOp> red_src{w, ko};
  for (size_t i = 1; i < red.src().size(); ++i)
    if (!(red.src(i) == k.range)) red_src.push_back(red.src(i));
  UOp r = UOp::make(Op::REDUCE, acc, red_src, Op::ADD);

  std::vector<UOp> body;
  for (int i = 0; i < tc.c.elems; ++i) {
    UOp c = UOp::make(Op::GEP, dtypes::float32, {r}, Ints{i}).cast(red.dtype());
    UOp copy = substitute(end.src(0), {{red, c}, {m->range, at(mo, tc.m, tc.c.row.at(lane, i))}, {n->range, at(no, tc.n, tc.c.col.at(lane, i))}});
    if (copy.op() == Op::GROUP) body.insert(body.end(), copy.src().begin(), copy.src().end());
    else body.push_back(copy);
  }
  std::vector<UOp> end_src{UOp::make(Op::GROUP, dtypes::void_, body)};
  for (size_t i = 1; i < end.src().size(); ++i) {
    const UOp& e = end.src(i);
    end_src.push_back(e == m->range ? mo : e == n->range ? no : e);
  }
  end_src.push_back(lane);
  return substitute(sink, {{end, UOp::make(Op::END, end.dtype(), end_src, end.arg())}});
}

}  // namespace ugpu::codegen::opt
