// UPCAST and UNROLL axes are unrolled: whatever an END or REDUCE closes over such a range is copied
// once per iteration with the range replaced by the constant. The copies of an END's body run
// together (a GROUP); the copies of a REDUCE's value are combined with its op. What runs on the copies
// afterwards (codegen/vectorize.cpp) can then see consecutive accesses side by side.
#include <algorithm>
#include <optional>

#include "codegen/passes.h"
#include "common/error.h"
#include "ir/rewrite.h"
#include "ir/text.h"
#include "ir/upat.h"

namespace ugpu::codegen {
using namespace ir;
namespace {

constexpr int64_t kMaxAxis = 64;      // iterations of one unrolled axis
constexpr int64_t kMaxCopies = 1024;  // copies of one body over all its unrolled axes

bool unrolled(const UOp& r) {
  if (r.op() != Op::RANGE) return false;
  AxisType t = r.arg_as<RangeArg>().type;
  return t == AxisType::UPCAST || t == AxisType::UNROLL;
}

int64_t axis_size(const UOp& r) {
  const RangeArg& a = r.arg_as<RangeArg>();
  std::string what = std::string(axis_type_name(a.type)) + " axis " + std::to_string(a.axis);
  if (!r.src(0).is_const()) throw Error(what + " is unrolled, so its size must be a constant: " + to_inline(r, 100));
  int64_t n = r.src(0).const_int();
  if (n > kMaxAxis)
    throw Error(what + " has " + std::to_string(n) + " iterations; at most " + std::to_string(kMaxAxis) + " are unrolled (make it a LOOP)");
  return n;
}

// The closed ranges of END/REDUCE split into the first unrolled one and the rest.
struct Split {
  UOp first;
  std::vector<UOp> rest;
};
std::optional<Split> split_ranges(const UOp& u) {
  Split s;
  int64_t copies = 1;
  for (size_t i = 1; i < u.src().size(); ++i) {
    const UOp& r = u.src(i);
    if (unrolled(r)) {
      copies *= std::max<int64_t>(axis_size(r), 1);
      if (!s.first) {
        s.first = r;
        continue;
      }
    }
    s.rest.push_back(r);
  }
  if (!s.first) return std::nullopt;
  if (copies > kMaxCopies)
    throw Error("unrolling makes " + std::to_string(copies) + " copies of one body (at most " + std::to_string(kMaxCopies) +
                "): " + to_inline(u, 100));
  return s;
}

std::vector<UOp> copies(const UOp& x, const UOp& r) {
  std::vector<UOp> out;
  for (int64_t i = 0, n = axis_size(r); i < n; ++i) out.push_back(substitute(x, {{r, UOp::const_int(r.dtype(), i)}}));
  return out;
}

UOp expand_end(const UOp& end) {
  auto s = split_ranges(end);
  if (!s) return {};
  std::vector<UOp> body;
  for (const UOp& c : copies(end.src(0), s->first)) {
    if (c.op() == Op::GROUP) body.insert(body.end(), c.src().begin(), c.src().end());
    else body.push_back(c);
  }
  UOp group = body.size() == 1 ? body[0] : UOp::make(Op::GROUP, dtypes::void_, body);
  if (s->rest.empty()) return group;
  std::vector<UOp> src{group};
  src.insert(src.end(), s->rest.begin(), s->rest.end());
  return UOp::make(Op::END, end.dtype(), src, end.arg());
}

// One vector of n lanes from n isomorphic scalar trees: an elementwise op of vectors of their
// sources, down to the leaves, which become VECTORIZE (consecutive loads of it become one vector
// load in vectorize_memory; a leaf the same in every lane is a splat). What goes into vectors:
// arithmetic and bit operations on float32/float64 and integers, conversions between those types
// (bfloat16, half, bool and index values convert or compute through scalar code in the renderer),
// and WHERE whose condition is the same in every lane; anything else is a leaf.
bool vector_type(DType t) { return t.count == 1 && !t.is_ptr() && (t == dtypes::float32 || t == dtypes::float64 || (t.is_int() && !t.is_index())); }

UOp vectorize_lanes(const std::vector<UOp>& xs) {
  const UOp& x = xs[0];
  auto n = static_cast<uint16_t>(xs.size());
  bool same = std::all_of(xs.begin(), xs.end(), [&](const UOp& y) {
    return y.op() == x.op() && y.dtype() == x.dtype() && y.arg() == x.arg() && y.src().size() == x.src().size();
  });
  auto lanes_of = [&](size_t i) {
    std::vector<UOp> v;
    for (const UOp& y : xs) v.push_back(y.src(i));
    return v;
  };
  static constexpr Op kFloatOps[] = {Op::ADD, Op::MUL, Op::SUB, Op::NEG, Op::FMA};
  static constexpr Op kIntOps[] = {Op::ADD, Op::MUL, Op::SUB, Op::NEG, Op::AND, Op::OR, Op::XOR, Op::SHL, Op::SHR};
  bool elementwise = false;
  if (same && vector_type(x.dtype()) && std::all_of(x.src().begin(), x.src().end(), [&](const UOp& s) { return s.dtype() == x.dtype(); })) {
    auto in = [&](const auto& ops) { return std::find(std::begin(ops), std::end(ops), x.op()) != std::end(ops); };
    elementwise = x.dtype().is_float() ? in(kFloatOps) : in(kIntOps);
  }
  bool cast = same && x.op() == Op::CAST && vector_type(x.dtype()) && (vector_type(x.src(0).dtype()) || x.src(0).dtype() == dtypes::half) &&
              !(x.dtype().is_int() && x.src(0).dtype().is_float());
  cast |= same && x.op() == Op::BITCAST && x.dtype().is_int() && vector_type(x.dtype()) && vector_type(x.src(0).dtype()) &&
          x.src(0).dtype().is_int() && x.src(0).dtype().bitsize() == x.dtype().bitsize();
  if (elementwise || cast) {
    std::vector<UOp> src;
    for (size_t i = 0; i < x.src().size(); ++i) src.push_back(vectorize_lanes(lanes_of(i)));
    return UOp::make(x.op(), x.dtype().vec(n), src, x.arg());
  }
  if (same && x.op() == Op::WHERE && vector_type(x.dtype())) {
    std::vector<UOp> cond = lanes_of(0);
    if (std::all_of(cond.begin(), cond.end(), [&](const UOp& c) { return c == cond[0]; }))
      return UOp::make(Op::WHERE, x.dtype().vec(n), {cond[0], vectorize_lanes(lanes_of(1)), vectorize_lanes(lanes_of(2))});
  }
  return UOp::make(Op::VECTORIZE, x.dtype().vec(n), xs);
}

// LANES (codegen/opt): REDUCE(REDUCE(x, outer...), lane) with `lane` unrolled, a float sum: the n
// partial sums are one vector accumulator, REDUCE(vector of x's lanes, outer...), added up at the end.
UOp vector_lanes(const UOp& red, const Split& s) {
  const UOp& inner = red.src(0);
  DType dt = red.dtype();
  int64_t n = axis_size(s.first);
  if (red.arg_as<Op>() != Op::ADD || inner.op() != Op::REDUCE || inner.arg_as<Op>() != Op::ADD || inner.dtype() != dt || n < 2 || n > 16 ||
      (n & (n - 1)) != 0 || (dt != dtypes::float32 && dt != dtypes::float64) || closes(inner, s.first))
    return {};
  std::vector<UOp> src{vectorize_lanes(copies(inner.src(0), s.first))};
  src.insert(src.end(), inner.src().begin() + 1, inner.src().end());
  UOp vec = UOp::make(Op::REDUCE, dt.vec(static_cast<uint16_t>(n)), src, Op::ADD);
  UOp acc;
  for (int64_t l = 0; l < n; ++l) {
    UOp v = UOp::make(Op::GEP, dt, {vec}, Ints{l});
    acc = acc ? acc + v : v;
  }
  if (s.rest.empty()) return acc;
  std::vector<UOp> out{acc};
  out.insert(out.end(), s.rest.begin(), s.rest.end());
  return UOp::make(Op::REDUCE, dt, out, red.arg());
}

// Half and bfloat16 sums and products of the copies are formed in float, like their accumulators.
UOp expand_reduce(const UOp& red) {
  auto s = split_ranges(red);
  if (!s) return {};
  if (UOp v = vector_lanes(red, *s)) return v;
  Op op = red.arg_as<Op>();
  DType dt = red.dtype();
  bool widen = op != Op::MAX && (dt.scalar == ScalarType::Half || dt.scalar == ScalarType::BFloat16);
  UOp acc;
  for (const UOp& c : copies(red.src(0), s->first)) {
    UOp v = widen ? c.cast(dtypes::float32) : c;
    acc = acc ? accumulate(op, acc, v) : v;
  }
  if (!acc) throw Error("REDUCE over an empty unrolled axis: " + to_inline(red, 100));
  if (widen) acc = acc.cast(dt);
  if (s->rest.empty()) return acc;
  std::vector<UOp> src{acc};
  src.insert(src.end(), s->rest.begin(), s->rest.end());
  return UOp::make(Op::REDUCE, dt, src, red.arg());
}

const PatternMatcher& expand_rules() {
  static const PatternMatcher pm("expand",
                                 {
                                     Rule(
                                         UPat(Op::END), [](const Match& m) { return expand_end(m.node()); }, "unroll an END's body"),
                                     Rule(
                                         UPat(Op::REDUCE), [](const Match& m) { return expand_reduce(m.node()); }, "unroll a REDUCE's value"),
                                 });
  return pm;
}

}  // namespace

UOp expand(const UOp& sink) {
  UOp out = graph_rewrite(sink, expand_rules());
  for (const UOp& u : out.toposort())
    if (unrolled(u))
      throw Error(std::string(axis_type_name(u.arg_as<RangeArg>().type)) + " axis " + std::to_string(u.arg_as<RangeArg>().axis) +
                  " is used outside the END or REDUCE that closes it: " + to_inline(u, 100));
  return out;
}

}  // namespace ugpu::codegen
