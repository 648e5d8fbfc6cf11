// A reduction across a workgroup (a GROUP_REDUCE axis, from the optimizer's GROUP action). Each
// work-item of the group reduces its share, the partials meet in workgroup memory, and after a
// barrier every work-item reduces them again; only the group's work-item 0 stores:
//
//   REDUCE(x, r..., g)  ->  part = REDUCE(x, r...)
//                           bar  = BARRIER(END(STORE(tmp[lanes(g)], part), g, locals..., upcasts...))
//                           REDUCE(LOAD(AFTER(tmp, bar)[lanes(g2)]), g2)          g2: a new REDUCE axis
//
// `lanes` numbers a partial by the group's work-item, the kernel's other LOCAL axes and the unrolled
// axes (UPCAST, an enclosing UNROLL) open around the reduction, so work-items and unrolled copies each have their own slot. g itself
// becomes a LOCAL axis, and every store to a global buffer is masked to g == 0.
#include <algorithm>
#include <unordered_map>

#include "codegen/passes.h"
#include "codegen/scope.h"
#include "common/error.h"
#include "ir/rewrite.h"
#include "ir/text.h"

namespace ugpu::codegen {
using namespace ir;
namespace {

bool is_type(const UOp& u, AxisType t) { return u.op() == Op::RANGE && u.arg_as<RangeArg>().type == t; }

}  // namespace

std::string group_reduce_problem(const UOp& sink, const UOp& g) {
  Scopes scopes(sink);
  for (const UOp& u : sink.toposort()) {
    if (is_type(u, AxisType::LOOP))
      return "the kernel has a LOOP axis (" + std::to_string(u.arg_as<RangeArg>().axis) +
             "), and the group's barrier would run once per iteration with no barrier between them";
    if (u.op() != Op::REDUCE || !closes(u, g)) continue;
    for (const UOp& r : scopes.list(scopes.of(u)))
      if (r.arg_as<RangeArg>().type == AxisType::REDUCE)
        return "the reduction over it runs inside the loop of reduce axis " + std::to_string(r.arg_as<RangeArg>().axis) +
               ", and the group's barrier would run once per iteration with no barrier between them";
  }
  return "";
}

UOp lower_group_reduce(const UOp& sink) {
  std::vector<UOp> groups, locals;
  int64_t next_axis = 0, next_local = 0;
  for (const UOp& u : sink.toposort()) {
    if (u.op() == Op::RANGE) {
      next_axis = std::max(next_axis, u.arg_as<RangeArg>().axis + 1);
      if (is_type(u, AxisType::GROUP_REDUCE)) groups.push_back(u);
      if (is_type(u, AxisType::LOCAL)) locals.push_back(u);
    }
    if (u.op() == Op::DEFINE_LOCAL) next_local = std::max(next_local, u.arg_as<Ints>()[0] + 1);
  }
  if (groups.empty()) return sink;
  if (groups.size() > 1) throw Error("a kernel has at most one GROUP_REDUCE axis: " + to_inline(groups[1], 100));
  const UOp g = groups[0];
  if (!g.src(0).is_const()) throw Error("a GROUP_REDUCE axis needs a constant size: " + to_inline(g, 100));
  if (std::string why = group_reduce_problem(sink, g); !why.empty()) throw Error("GROUP_REDUCE axis cannot be lowered: " + why);
  const RangeArg& ga = g.arg_as<RangeArg>();
  const UOp glocal = UOp::range(g.src(0), ga.axis, AxisType::LOCAL);
  const UOp zero = UOp::const_int(dtypes::index, 0);

  Scopes scopes(sink);
  std::unordered_map<const void*, UOp> done;
  for (const UOp& u : sink.toposort()) {
    if (u == g) {
      done[u.get()] = glocal;
      continue;
    }
    std::vector<UOp> src;
    for (const UOp& s : u.src()) src.push_back(done.at(s.get()));
    UOp n = u.with_src(src);
    if (u.op() == Op::REDUCE && closes(u, g)) {
      // The partial: the same reduction without g (a plain value when g was its only loop).
      std::vector<UOp> psrc{n.src(0)};
      for (size_t i = 1; i < u.src().size(); ++i)
        if (!(u.src(i) == g)) psrc.push_back(n.src(i));
      UOp part = psrc.size() == 1 ? psrc[0] : UOp::make(Op::REDUCE, u.dtype(), psrc, u.arg());
      // Slots: the group's work-item innermost, then the other work-item axes and unrolled copies.
      std::vector<UOp> lanes{glocal};
      for (const UOp& l : locals) lanes.push_back(l);
      // Unrolled copies (UPCAST, and UNROLL of an enclosing reduction) each get their own slots too.
      for (const UOp& r : scopes.list(scopes.of(u)))
        if (is_type(r, AxisType::UPCAST) || is_type(r, AxisType::UNROLL)) lanes.push_back(r);
      auto slot = [&](const UOp& first) {
        UOp idx = first, stride = first.src(0);
        for (size_t i = 1; i < lanes.size(); ++i) {
          idx = idx + lanes[i] * stride;
          stride = stride * lanes[i].src(0);
        }
        return idx;
      };
      int64_t count = 1;
      for (const UOp& l : lanes) count *= l.src(0).const_int();
      UOp tmp = UOp::make(Op::DEFINE_LOCAL, u.dtype().ptr(AddrSpace::Local), {}, Ints{next_local++, count});
      std::vector<UOp> closes{UOp::make(Op::STORE, dtypes::void_, {UOp::make(Op::INDEX, tmp.dtype(), {tmp, slot(glocal)}), part})};
      closes.insert(closes.end(), lanes.begin(), lanes.end());
      UOp bar = UOp::make(Op::BARRIER, dtypes::void_, {UOp::make(Op::END, dtypes::void_, closes)});
      UOp g2 = UOp::range(g.src(0), next_axis++, AxisType::REDUCE);
      UOp read = UOp::make(Op::LOAD, u.dtype(), {UOp::make(Op::INDEX, tmp.dtype(), {UOp::make(Op::AFTER, tmp.dtype(), {tmp, bar}), slot(g2)})});
      n = UOp::make(Op::REDUCE, u.dtype(), {read, g2}, u.arg());
    }
    if (u.op() == Op::STORE && n.src(0).op() == Op::INDEX && buffer_of(n.src(0)).op() == Op::DEFINE_GLOBAL) { n = add_mask(n, glocal.eq(zero)); }
    done[u.get()] = n;
  }
  return done.at(sink.get());
}

}  // namespace ugpu::codegen
