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

// Half and bfloat16 sums and products of the copies are formed in float, like their accumulators.
UOp expand_reduce(const UOp& red) {
  auto s = split_ranges(red);
  if (!s) return {};
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
