// Launch geometry. GPU targets run GLOBAL ranges as the grid of workgroups and LOCAL ranges as the
// work-items of a workgroup (a WARP axis, a tensor core's lanes, first); the ids come from SPECIAL
// nodes (gidx0..2, lidx0..2). The innermost global axis is x (dimension 0). More than three global
// axes share the last grid dimension, split back with // and %; if a dimension exceeds the target's
// grid limit, all global axes are flattened into x. With no LOCAL axis, the innermost global axis
// is cut into workgroups of the largest divisor of its size that fits the target's default
// workgroup size. The host runs a workgroup's work-items one after another: a BARRIER splits their
// loop in two (WorkgroupPhases below).
#include <algorithm>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "codegen/passes.h"
#include "codegen/scope.h"
#include "common/error.h"
#include "ir/rewrite.h"
#include "ir/symbolic.h"
#include "ir/text.h"
#include "ir/upat.h"

namespace ugpu::codegen {
using namespace ir;
namespace {

AxisType axis_type(const UOp& r) { return r.arg_as<RangeArg>().type; }

struct GlobalAxis {
  UOp range, size;
  int64_t split = 1;  // work-items per workgroup cut from this axis
  UOp lidx;
};

UOp special(const std::string& name, const UOp& size) { return UOp::make(Op::SPECIAL, dtypes::index, {size}, name); }

// Assigns the axes of one grid dimension (innermost first) their values from the dimension's id.
void assign(const std::vector<GlobalAxis>& axes, const UOp& id, std::unordered_map<UOp, UOp, UOpHash>& repl) {
  UOp stride;
  for (size_t j = 0; j < axes.size(); ++j) {
    UOp v = stride ? id.floordiv(stride) : id;
    if (j + 1 < axes.size()) v = v % axes[j].size;
    stride = stride ? stride * axes[j].size : axes[j].size;
    repl[axes[j].range] = axes[j].split > 1 ? v * UOp::const_int(dtypes::index, axes[j].split) + axes[j].lidx : v;
  }
}

UOp product(const std::vector<GlobalAxis>& axes) {
  UOp p = axes[0].size;
  for (size_t j = 1; j < axes.size(); ++j) p = p * axes[j].size;
  return simplify(p);
}
// The largest value that product can take, from each axis's own bound: multiplied with an overflow
// check (INT64_MAX when it does not fit), since the product expression itself wraps in int64.
int64_t product_max(const std::vector<GlobalAxis>& axes) {
  int64_t m = 1;
  for (const GlobalAxis& a : axes)
    if (__builtin_mul_overflow(m, std::max<int64_t>(a.size.vmax(), 0), &m)) return INT64_MAX;
  return m;
}

// Drops from each END the ranges that became ids; an END with none left is its value.
const PatternMatcher& end_fixup() {
  static const PatternMatcher pm("gpudims-end", {Rule(UPat(Op::END), [](const Match& m) {
                                   const UOp& e = m.node();
                                   std::vector<UOp> keep{e.src(0)};
                                   for (size_t i = 1; i < e.src().size(); ++i)
                                     if (e.src(i).op() == Op::RANGE) keep.push_back(e.src(i));
                                   if (keep.size() == e.src().size()) return UOp();
                                   return keep.size() == 1 ? keep[0] : UOp::make(Op::END, dtypes::void_, keep);
                                 })});
  return pm;
}

// On the host, the outermost GLOBAL range r is cut into `parts` contiguous pieces, one per call:
// r = lo + j with lo = part*n // parts and j a loop over the piece. `part` and `parts` are the x86
// function's own arguments (codegen/llvm/host.h); the rest of the kernel stays loops.
struct HostSplit {
  UOp value, range;
};
const PatternMatcher& end_to_piece() {
  static const PatternMatcher pm("host-split-end", {Rule(UPat(Op::END), [](const Match& m) {
                                   const UOp& e = m.node();
                                   const HostSplit& h = m.ctx<HostSplit>();
                                   std::vector<UOp> src(e.src().begin(), e.src().end());
                                   bool changed = false;
                                   for (size_t i = 1; i < src.size(); ++i)
                                     if (src[i] == h.value) src[i] = h.range, changed = true;
                                   return changed ? UOp::make(Op::END, e.dtype(), src) : UOp();
                                 })});
  return pm;
}

UOp split_for_threads(const UOp& sink, const std::vector<UOp>& globals, std::array<UOp, 3>& global_size) {
  if (globals.empty()) return sink;
  const UOp& r = globals[0];
  UOp n = r.src(0);
  // parts >= 1 (the host never splits into no pieces): with that bound the divisions below are plain
  // unsigned ones, with no zero or sign checks.
  UOp part = special("part", n), parts = special("parts", n + UOp::const_int(dtypes::index, 1)).max(UOp::const_int(dtypes::index, 1));
  // min(x, n) as -max(-x, -n): the bounds analysis then knows lo and hi stay within [0, n].
  auto at_most_n = [&](const UOp& x) { return -UOp::alu(Op::MAX, {-x, -n}); };
  UOp lo = at_most_n(UOp::alu(Op::FLOORDIV, {part * n, parts}));
  UOp hi = at_most_n(UOp::alu(Op::FLOORDIV, {(part + UOp::const_int(dtypes::index, 1)) * n, parts}));
  HostSplit h;
  h.range = UOp::range(hi - lo, r.arg_as<RangeArg>().axis, AxisType::LOOP);
  h.value = lo + h.range;
  global_size[0] = n;
  return graph_rewrite(substitute(sink, {{r, h.value}}), end_to_piece(), &h);
}

// The host has no work-items running side by side, so a kernel with barriers runs each workgroup's
// work-items in turn, one loop per phase: the work before a BARRIER (an END closing the LOCAL ranges,
// as it must be written for the host) loops over every work-item, then the work after it loops over
// every work-item again, with a copy of each LOCAL range (a fresh axis). A node's phase is counted
// from the top: the SINK is in the last phase, and each BARRIER passed on the way down is one phase
// earlier. Values a work-item computes before a barrier and uses after it are computed again after it
// (refused where that could change them: loads from memory the kernel stores to, and stores).
class WorkgroupPhases {
 public:
  explicit WorkgroupPhases(const UOp& sink) : sink_(sink) {
    for (const UOp& u : sink.toposort()) {
      int most = 0;
      for (const UOp& s : u.src()) most = std::max(most, barriers_.at(s.get()));
      barriers_[u.get()] = most + (u.op() == Op::BARRIER);
      if (u.op() == Op::RANGE) next_axis_ = std::max(next_axis_, u.arg_as<RangeArg>().axis + 1);
      if (u.op() == Op::STORE) stored_.insert(buffer_of(u.src(0)).get());
    }
  }

  UOp run(const Target& t) {
    int phases = barriers_.at(sink_.get());
    if (phases == 0) return sink_;
    UOp s = close_last_phase(at(sink_, phases));
    Scopes sc(s);
    for (const UOp& u : s.toposort())
      if (u.op() == Op::BARRIER && !local_ranges(sc, sc.of(u)).empty())
        throw Error("on " + std::string(t.name) +
                    " a workgroup's work-items run one after another, so BARRIER(x) needs x to be an END "
                    "closing the LOCAL ranges (the loop over the work-items before the barrier): " +
                    to_inline(u, 120));
    return s;
  }

 private:
  UOp at(const UOp& u, int phase) {
    auto key = std::pair{u.get(), phase};
    if (auto it = memo_.find(key); it != memo_.end()) return it->second;
    // Computing a value again after a barrier is what the work-item would have computed only if its
    // inputs did not change in between: a load from memory the kernel stores to could see another
    // work-item's (or its own) store, and a store would happen twice. Such kernels are refused.
    if (phase > barriers_.at(u.get()) && touches_stored(u))
      throw Error(
          "on the host a value computed before a BARRIER and used after it is computed again after it, but this one reads or "
          "writes memory the kernel stores to (it would see the stores the barrier orders): load it after the barrier, or pass "
          "it through workgroup memory: " +
          to_inline(u, 120));
    UOp out;
    if (u.op() == Op::RANGE && axis_type(u) == AxisType::LOCAL) {
      out = phase == 0 ? u : UOp::range(u.src(0), next_axis_++, AxisType::LOCAL);
    } else {
      std::vector<UOp> src;
      for (const UOp& s : u.src()) src.push_back(at(s, u.op() == Op::BARRIER ? phase - 1 : phase));
      out = u.with_src(src);
    }
    return memo_[key] = out;
  }
  // Whether u stores, or loads from a buffer the kernel stores to, anywhere below it.
  bool touches_stored(const UOp& u) {
    if (auto it = touches_.find(u.get()); it != touches_.end()) return it->second;
    bool t = u.op() == Op::STORE || (u.op() == Op::LOAD && stored_.count(buffer_of(u.src(0)).get()));
    for (size_t i = 0; i < u.src().size() && !t; ++i) t = touches_stored(u.src(i));
    return touches_[u.get()] = t;
  }
  static std::vector<UOp> local_ranges(const Scopes& sc, uint64_t open) {
    std::vector<UOp> out;
    for (const UOp& r : sc.list(open))
      if (axis_type(r) == AxisType::LOCAL) out.push_back(r);
    return out;
  }
  // The last phase's LOCAL ranges are still open at the SINK: each store there closes them with its
  // own ranges (END(store, g) becomes END(store, g, l')).
  static UOp close_last_phase(const UOp& sink) {
    Scopes sc(sink);
    std::vector<UOp> stores;
    for (const UOp& s : sink.src()) {
      std::vector<UOp> open = local_ranges(sc, sc.of(s));
      if (open.empty()) {
        stores.push_back(s);
        continue;
      }
      std::vector<UOp> src = s.op() == Op::END ? std::vector<UOp>(s.src().begin(), s.src().end()) : std::vector<UOp>{s};
      src.insert(src.end(), open.begin(), open.end());
      stores.push_back(UOp::make(Op::END, dtypes::void_, src));
    }
    return sink.with_src(stores);
  }

  UOp sink_;
  std::unordered_map<const void*, int> barriers_;  // the most BARRIERs on a path down from a node, itself included
  std::map<std::pair<const void*, int>, UOp> memo_;
  std::unordered_set<const void*> stored_;         // buffers some STORE writes
  std::unordered_map<const void*, bool> touches_;  // touches_stored, memoized
  int64_t next_axis_ = 0;
};

}  // namespace

UOp add_gpudims(const UOp& sink, const Target& t, std::array<UOp, 3>& global_size, std::array<UOp, 3>& local_size) {
  UOp one = UOp::const_int(dtypes::index, 1);
  global_size = {one, one, one};
  local_size = {one, one, one};
  std::vector<UOp> globals, locals;
  for (const UOp& u : sink.toposort()) {
    if (u.op() == Op::REDUCE)
      for (size_t i = 1; i < u.src().size(); ++i)
        if (AxisType a = axis_type(u.src(i)); a == AxisType::GLOBAL || a == AxisType::LOCAL)
          throw Error("REDUCE over a " + std::string(axis_type_name(a)) +
                      " range (work-items reducing together) is not supported; reduce over LOOP or REDUCE ranges: " + to_inline(u, 120));
    if (u.op() != Op::RANGE) continue;
    if (axis_type(u) == AxisType::GLOBAL) globals.push_back(u);
    if (axis_type(u) == AxisType::LOCAL || axis_type(u) == AxisType::WARP) locals.push_back(u);
  }
  auto by_axis = [](const UOp& a, const UOp& b) { return a.arg_as<RangeArg>().axis < b.arg_as<RangeArg>().axis; };
  std::sort(globals.begin(), globals.end(), by_axis);
  // A WARP axis (a tensor core's lanes) is dimension x, so that its work-items are one wave.
  auto warp_first = [&](const UOp& a, const UOp& b) {
    bool wa = axis_type(a) == AxisType::WARP, wb = axis_type(b) == AxisType::WARP;
    return wa != wb ? wa : by_axis(a, b);
  };
  std::sort(locals.begin(), locals.end(), warp_first);
  if (!t.gpu())
    for (const UOp& l : locals)
      if (axis_type(l) == AxisType::WARP) throw Error("a WARP axis (a tensor core's lanes) needs a GPU target, not " + std::string(t.name));
  if (!t.gpu()) return split_for_threads(WorkgroupPhases(sink).run(t), globals, global_size);

  std::unordered_map<UOp, UOp, UOpHash> repl;
  if (locals.size() > 3) throw Error("the kernel has " + std::to_string(locals.size()) + " LOCAL axes; GPUs have 3 work-item dimensions");
  int64_t total = 1;
  for (size_t i = 0; i < locals.size(); ++i) {
    const UOp& size = locals[i].src(0);
    if (!size.is_const()) throw Error("a LOCAL range needs a constant size (workgroup sizes are fixed at compile time): " + to_inline(locals[i], 80));
    int64_t n = size.const_int();
    total *= n;
    if (n > t.max_local[i] || total > t.max_local_total)
      throw Error("the workgroup is too large for " + std::string(t.name) + ": LOCAL axis " + std::to_string(i) + " has " + std::to_string(n) +
                  " work-items (limit " + std::to_string(t.max_local[i]) + " per axis, " + std::to_string(t.max_local_total) + " in all)");
    repl[locals[i]] = special("lidx" + std::to_string(i), size);
    local_size[i] = size;
  }

  std::vector<GlobalAxis> axes;  // innermost first
  for (auto it = globals.rbegin(); it != globals.rend(); ++it) axes.push_back({*it, it->src(0), 1, UOp()});
  if (locals.empty() && !axes.empty() && axes[0].size.is_const()) {
    int64_t n = axes[0].size.const_int(), cap = std::min(t.default_local, t.max_local[0]), best = 1;
    for (int64_t l = 1; l <= std::min(n, cap); ++l)
      if (n % l == 0) best = l;
    if (best > 1) {
      axes[0].split = best;
      axes[0].lidx = special("lidx0", UOp::const_int(dtypes::index, best));
      axes[0].size = UOp::const_int(dtypes::index, n / best);
      local_size[0] = UOp::const_int(dtypes::index, best);
    }
  }
  if (!axes.empty()) {
    std::vector<std::vector<GlobalAxis>> dims;
    for (size_t i = 0; i < axes.size(); ++i) {
      if (i < 2 || dims.size() < 3) dims.push_back({axes[i]});
      else dims.back().push_back(axes[i]);
    }
    bool fits = true;
    for (size_t k = 0; k < dims.size(); ++k) fits = fits && product_max(dims[k]) <= t.max_grid[k];
    if (!fits) dims = {axes};
    for (size_t k = 0; k < dims.size(); ++k) {
      UOp size = product(dims[k]);
      if (int64_t most = product_max(dims[k]); most > t.max_grid[k]) {
        std::string vars;  // a size from a variable is checked at the variable's declared maximum
        for (const UOp& u : size.toposort())
          if (u.op() == Op::DEFINE_VAR)
            vars += (vars.empty() ? "" : ", ") + u.arg_as<VarArg>().name + " <= " + std::to_string(u.arg_as<VarArg>().max);
        throw Error("the grid is too large for " + std::string(t.name) + ": " +
                    (most == INT64_MAX ? std::string("more than 2^63") : std::to_string(most)) + " workgroups in dimension " + std::to_string(k) +
                    " (limit " + std::to_string(t.max_grid[k]) + ")" +
                    (vars.empty() ? "" : "; that is the size at the declared maximum of " + vars + ": declare a smaller maximum"));
      }
      assign(dims[k], special("gidx" + std::to_string(k), size), repl);
      global_size[k] = size;
    }
  }
  if (repl.empty()) return sink;
  return graph_rewrite(substitute(sink, repl), end_fixup());
}

}  // namespace ugpu::codegen
