// STAGE: the loads of one buffer inside a reduction read a tile that the workgroup first copies into
// workgroup memory together, so that work-items (and unrolled copies) that need the same elements
// load them from global memory once. For a load L whose index moves with the reduce axis k (the
// innermost one it moves with), per iteration of k:
//
//   b0   = BARRIER(k)                                   (the tile of the iteration before is read)
//   put  = STORE(tile[e], L at the element e stands for)  e = w + W * s: work-item w of W, share s
//   b1   = BARRIER(END(put, s, LOCAL axes...))
//   L   -> LOAD(AFTER(tile, b1)[the tile index of L's own element])
//
// The tile spans the LOCAL, UPCAST and UNROLL axes that L moves with; the others (GLOBAL, LOOP, outer
// reduce axes) are the same for the whole workgroup during an iteration. Elements are numbered with
// the axis L's memory is contiguous along fastest and handed out with work-item x fastest, so
// neighbouring work-items load neighbouring elements.
#include <algorithm>

#include "codegen/opt/opt.h"
#include "codegen/passes.h"
#include "codegen/scope.h"
#include "ir/rewrite.h"
#include "ir/symbolic.h"

namespace ugpu::codegen::opt {
using namespace ir;
namespace {

AxisType type_of(const UOp& r) { return r.arg_as<RangeArg>().type; }

}  // namespace

bool staged(const UOp& sink) {
  for (const UOp& u : sink.toposort())
    if (u.op() == Op::BARRIER && u.src().size() == 1 && u.src(0).op() == Op::RANGE) return true;
  return false;
}

UOp apply_stage(const UOp& sink, const std::vector<Axis>& axes, int64_t slot, const Target& t,
                const std::function<OptError(const std::string&)>& refuse) {
  if (!t.gpu()) throw refuse(std::string(t.name) + " has no workgroup memory shared by work-items running side by side; STAGE is for GPU targets");
  // What the kernel has already: workgroup memory only from earlier STAGEs (its ids and bytes), no
  // copy of this buffer yet, no store to it.
  const bool earlier_stage = staged(sink);
  int64_t next_local = 0, bytes = 0;
  auto is_slot = [&](const UOp& b) { return b.op() == Op::DEFINE_GLOBAL && b.arg_as<int64_t>() == slot; };
  for (const UOp& u : sink.toposort()) {
    if (u.op() == Op::BARRIER && !earlier_stage) throw refuse("the kernel already uses workgroup memory");
    if (u.op() == Op::DEFINE_LOCAL) {
      next_local = std::max(next_local, u.arg_as<Ints>()[0] + 1);
      bytes += (u.arg_as<Ints>()[1] * u.dtype().itemsize() + 15) / 16 * 16;
    }
    if (u.op() != Op::STORE || u.src(0).op() != Op::INDEX) continue;
    // A copy of the buffer into a tile: STORE(tile[e], LOAD(buffer)).
    if (buffer_of(u.src(0)).op() == Op::DEFINE_LOCAL && u.src(1).op() == Op::LOAD && is_slot(buffer_of(u.src(1).src(0))))
      throw refuse("buffer " + std::to_string(slot) + " is staged already");
    if (is_slot(buffer_of(u.src(0)))) throw refuse("the kernel stores to buffer " + std::to_string(slot) + ", so a copy of it could be stale");
  }
  if (has_tensor_core(sink)) throw refuse("the kernel runs on a tensor core, whose fragments are loaded per lane");
  std::vector<UOp> locals;  // work-item x (the lowest LOCAL axis id) first, as add_gpudims numbers them
  int64_t workers = 1, next_id = next_axis_id(axes);
  for (const Axis& a : axes) {
    if (a.type == AxisType::LOCAL) locals.push_back(a.range), workers *= a.size;
    if (a.type == AxisType::WARP || a.type == AxisType::GROUP_REDUCE) throw refuse("the kernel's work-items already share work");
  }
  if (workers < 2) throw refuse("the workgroup has one work-item, with no one to share a tile with (LOCAL first)");

  Scopes scopes(sink);
  std::unordered_map<UOp, UOp, UOpHash> repl;
  for (const UOp& u : sink.toposort()) {
    if (u.op() != Op::LOAD || u.src(0).op() != Op::INDEX || u.src(0).src().size() < 2) continue;
    if (!is_slot(buffer_of(u.src(0)))) continue;
    // The innermost reduce axis the load moves with, and the axes of its tile.
    UOp k;
    std::vector<UOp> tile;
    for (const UOp& r : scopes.list(scopes.of(u))) {
      if (!depends_on(u, r)) continue;
      AxisType ty = type_of(r);
      if (ty == AxisType::REDUCE && (!k || r.arg_as<RangeArg>().axis > k.arg_as<RangeArg>().axis)) k = r;
      if (ty == AxisType::LOCAL || ty == AxisType::UPCAST || ty == AxisType::UNROLL) {
        if (!r.src(0).is_const()) throw refuse("the tile's axis " + std::to_string(r.arg_as<RangeArg>().axis) + " has no constant size");
        tile.push_back(r);
      }
    }
    if (!k) continue;
    // Order: the axis with the largest step in memory outermost, the contiguous one innermost.
    UOp idx = u.src(0).src(1);
    if (idx.op() == Op::WHERE && idx.src(2).op() == Op::INVALID) idx = idx.src(1);
    Linear lin = linear_form(simplify(idx));
    auto step = [&](const UOp& r) -> int64_t {
      for (const auto& [term, c] : lin.terms)
        if (term == r) return std::abs(c);
      return INT64_MAX;  // not a plain term: outermost
    };
    auto id = [](const UOp& r) { return r.arg_as<RangeArg>().axis; };
    std::sort(tile.begin(), tile.end(), [&](const UOp& a, const UOp& b) { return step(a) != step(b) ? step(a) > step(b) : id(a) < id(b); });
    int64_t elems = 1;
    for (const UOp& r : tile) elems *= r.src(0).const_int();
    bytes += (elems * u.dtype().itemsize() + 15) / 16 * 16;
    if (bytes > t.max_shared_bytes)
      throw refuse("the tiles take " + std::to_string(bytes) + " bytes of workgroup memory; " + std::string(t.name) + " has " +
                   std::to_string(t.max_shared_bytes));

    // e = w + W * s numbers the elements; each work-item copies ceil(elems / W) of them.
    auto c = [](int64_t v) { return UOp::const_int(dtypes::index, v); };
    UOp w = c(0), stride = c(1);
    for (const UOp& l : locals) w = w + l * stride, stride = stride * l.src(0);
    int64_t shares = (elems + workers - 1) / workers;
    std::vector<UOp> closes;
    UOp e = w;
    if (shares > 1) {
      UOp s = UOp::range(shares, next_id++, shares <= 8 ? AxisType::UPCAST : AxisType::LOOP);
      e = w + s * c(workers);
      closes.push_back(s);
    }
    std::unordered_map<UOp, UOp, UOpHash> at_e;
    UOp read_index = c(0);
    int64_t inner = 1;
    for (size_t i = tile.size(); i-- > 0;) {
      int64_t size = tile[i].src(0).const_int();
      at_e[tile[i]] = e.floordiv(inner) % static_cast<double>(size);
      read_index = read_index + tile[i] * c(inner);
      inner *= size;
    }
    UOp value = substitute(u, at_e);
    UOp tmp = UOp::make(Op::DEFINE_LOCAL, u.dtype().ptr(AddrSpace::Local), {}, Ints{next_local++, elems});
    UOp b0 = UOp::make(Op::BARRIER, dtypes::void_, {k});
    UOp put = UOp::make(Op::STORE, dtypes::void_, {UOp::make(Op::INDEX, tmp.dtype(), {UOp::make(Op::AFTER, tmp.dtype(), {tmp, b0}), e}), value});
    if (shares * workers != elems) {
      UOp inside = e.lt(c(elems));
      put = add_mask(put.with_src(std::vector<UOp>{put.src(0), add_mask(value, inside)}), inside);
    }
    closes.insert(closes.end(), locals.begin(), locals.end());
    std::vector<UOp> end_src{put};
    end_src.insert(end_src.end(), closes.begin(), closes.end());
    UOp b1 = UOp::make(Op::BARRIER, dtypes::void_, {UOp::make(Op::END, dtypes::void_, end_src)});
    repl[u] = UOp::make(Op::LOAD, u.dtype(), {UOp::make(Op::INDEX, tmp.dtype(), {UOp::make(Op::AFTER, tmp.dtype(), {tmp, b1}), read_index})});
  }
  if (repl.empty()) throw refuse("no load of buffer " + std::to_string(slot) + " changes with a reduce axis");
  return substitute(sink, repl);
}

}  // namespace ugpu::codegen::opt
