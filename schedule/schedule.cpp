// The scheduler: which nodes become buffers, the kernels that compute them (several outputs of the
// same loops in one), their order and the memory plan.
// The rules are written down in docs/tensor.md; this file is their only implementation.
#include "schedule/schedule.h"

#include <algorithm>
#include <numeric>
#include <unordered_map>
#include <unordered_set>

#include "common/error.h"
#include "ir/rewrite.h"
#include "ir/text.h"
#include "ir/verify.h"

namespace ugpu::schedule {
using namespace ir;

UOp buffer_node(int64_t id, DType dtype, int64_t count) { return UOp::make(Op::BUFFER, dtype, {}, Ints{id, count}); }

namespace {
int64_t product(const Shape& s) { return std::accumulate(s.begin(), s.end(), int64_t{1}, std::multiplies<>()); }
}  // namespace

bool is_buffer_view(const UOp& u) {
  const UOp* n = &u;
  while (n->op() == Op::RESHAPE) n = &n->src(0);
  return n->op() == Op::BUFFER;
}

int64_t view_buffer_id(const UOp& u) {
  const UOp* n = &u;
  while (n->op() == Op::RESHAPE) n = &n->src(0);
  if (n->op() != Op::BUFFER) throw Error("view_buffer_id: not a buffer's view: " + to_inline(u, 120));
  return n->arg_as<Ints>()[0];
}

UOp buffer_view(int64_t id, DType dtype, const Shape& shape) {
  return UOp::make(Op::RESHAPE, dtype, {buffer_node(id, dtype, product(shape))}, Ints(shape.begin(), shape.end()));
}

namespace {

using NodeP = const detail::Node*;
UOp idx_const(int64_t v) { return UOp::const_int(dtypes::index, v); }

// The loops a kernel over this shape runs: its axes of size other than 1.
Shape loops_of(const Shape& s) {
  Shape r;
  for (int64_t d : s)
    if (d != 1) r.push_back(d);
  return r;
}

const Shape& shape_of(const UOp& u) {
  const auto& s = u.shape();
  if (!s) throw Error("the scheduler needs a shape for every tensor node, and this one has none: " + to_inline(u, 120));
  return *s;
}

// Shapes from outside (a graph read from text) are checked once per node: dimensions >= 0 and at
// most 2^48 elements, so no index or size computed from them overflows.
void check_shape(const UOp& u) {
  int64_t n = 1;
  for (int64_t d : shape_of(u)) {
    if (d < 0 || (d != 0 && n > (int64_t{1} << 48) / d))
      throw Error("a tensor node's shape has a negative dimension or more than 2^48 elements: " + to_inline(u, 120));
    n *= d;
  }
}

void check_tensor_op(const UOp& u) {
  Op op = u.op();
  OpGroup g = op_info(op).group;
  bool ok =
      op == Op::BUFFER || op == Op::IOTA || op == Op::CONST || op == Op::DEFINE_VAR || op == Op::REDUCE_AXIS || g == OpGroup::Movement || is_alu(op);
  if (!ok)
    throw Error(std::string(op_name(op)) + " does not belong in a tensor graph (kernel-level ops are made by the scheduler): " + to_inline(u, 120));
}

bool reads_buffer(const UOp& v, int64_t id) {
  for (const UOp& u : v.toposort())
    if (u.op() == Op::BUFFER && u.arg_as<Ints>()[0] == id) return true;
  return false;
}

// Whether value `v` reads buffer `id` only through `view` (an ASSIGN's target, which has v's shape)
// and elementwise ops: every lane then reads the element it stores, and nothing else of the buffer.
bool reads_only_at_store(const UOp& v, const UOp& view, int64_t id) {
  std::vector<const UOp*> todo{&v};
  std::unordered_set<NodeP> seen;
  while (!todo.empty()) {
    const UOp& u = *todo.back();
    todo.pop_back();
    if (u == view || !seen.insert(u.get()).second) continue;
    if (is_alu(u.op()) && u.shape()) {
      for (const UOp& s : u.src()) todo.push_back(&s);
    } else if (reads_buffer(u, id)) {
      return false;
    }
  }
  return true;
}

bool expands(const UOp& e) {
  const Shape& in = shape_of(e.src(0));
  const Ints& to = e.arg_as<Ints>();
  for (size_t i = 0; i < in.size(); ++i)
    if (in[i] == 1 && to[i] != 1) return true;
  return false;
}

// Depth-first post-order over nodes 0..n-1, where edges(i) lists what i needs: each node comes after
// everything it reaches. Returns false (order incomplete) when the edges have a cycle.
template <class Edges>
bool postorder(size_t n, const Edges& edges, std::vector<size_t>& order) {
  std::vector<uint8_t> state(n, 0);  // 0 new, 1 on the path, 2 done
  for (size_t start = 0; start < n; ++start) {
    if (state[start]) continue;
    std::vector<std::pair<size_t, size_t>> stack{{start, 0}};
    state[start] = 1;
    while (!stack.empty()) {
      auto [k, next] = stack.back();
      const auto& e = edges(k);
      if (next < e.size()) {
        ++stack.back().second;
        size_t d = e[next];
        if (state[d] == 1) return false;
        if (!state[d]) state[d] = 1, stack.push_back({d, 0});
        continue;
      }
      state[k] = 2;
      order.push_back(k);
      stack.pop_back();
    }
  }
  return true;
}

// ---- which nodes become buffers ------------------------------------------------------------------

struct Plan {
  UOp root;
  std::vector<NodeP> deps;            // realized nodes its kernel loads (and, for an ASSIGN, the kernels that read its target first)
  std::unordered_set<int64_t> reads;  // BUFFER ids its kernel loads directly
};

class Marker {
 public:
  std::vector<Plan> plans;
  std::unordered_map<NodeP, size_t> index;  // realized node -> its plan

  size_t add(const UOp& n) {
    auto [it, fresh] = index.try_emplace(n.get(), plans.size());
    if (fresh) {
      plans.push_back({n, {}, {}});
      work_.push_back(it->second);
      grew_ = true;
    }
    return it->second;
  }

  // Marks until nothing changes: the fusion rules, then the recompute rule, which may realize more
  // nodes (and then every kernel is marked again, since what it inlines changed).
  void run() {
    for (;;) {
      inlined_.clear();
      work_.clear();
      for (size_t k = 0; k < plans.size(); ++k) plans[k].deps.clear(), plans[k].reads.clear(), work_.push_back(k);
      grew_ = false;
      while (!work_.empty()) {
        size_t k = work_.back();
        work_.pop_back();
        seen_.clear();
        const UOp root = plans[k].root;
        visit(root.op() == Op::CONTIGUOUS ? root.src(0) : root, false, false, k, root.get());
      }
      if (grew_) continue;  // kernels marked before a new buffer boundary appeared inline too much: again
      order_writes();
      group();
      if (!realize_shared()) return;
    }
  }

 private:
  std::vector<size_t> work_;
  bool grew_ = false;
  std::unordered_set<uint64_t> seen_;  // (node, flags) visited for the kernel being marked
  struct Inlined {
    UOp node;
    std::vector<size_t> plans;  // whose kernels compute it
  };
  std::unordered_map<NodeP, Inlined> inlined_;

  void count_inline(const UOp& n, size_t k) {
    auto [it, fresh] = inlined_.try_emplace(n.get(), Inlined{n, {}});
    if (it->second.plans.empty() || it->second.plans.back() != k) it->second.plans.push_back(k);
  }

 public:
  // Kernels: plans sharing one (a multi-output kernel) when their outputs run the same loops and
  // neither needs the other, in an order that respects their dependencies.
  std::vector<std::vector<size_t>> groups;
  std::vector<size_t> group_of;

 private:
  // The plans' indices of their dependencies.
  std::vector<std::vector<size_t>> plan_edges() const {
    std::vector<std::vector<size_t>> edges(plans.size());
    for (size_t p = 0; p < plans.size(); ++p)
      for (NodeP d : plans[p].deps) edges[p].push_back(index.at(d));
    return edges;
  }

  // Edges between groups (plans not placed yet have none).
  std::vector<std::vector<size_t>> group_edges() const {
    std::vector<std::vector<size_t>> edges(groups.size());
    for (size_t p = 0; p < plans.size(); ++p)
      for (NodeP dn : plans[p].deps) {
        size_t a = group_of[p], b = group_of[index.at(dn)];
        if (a != SIZE_MAX && b != SIZE_MAX && a != b) edges[a].push_back(b);
      }
    return edges;
  }

  // Whether the kernels, with plans merged as group_of says, still form a DAG.
  bool groups_acyclic() const {
    std::vector<std::vector<size_t>> edges = group_edges();
    std::vector<size_t> order;
    return postorder(groups.size(), [&](size_t g) -> const std::vector<size_t>& { return edges[g]; }, order);
  }

  bool share_input(size_t p, size_t q) const {
    for (int64_t id : plans[p].reads)
      if (plans[q].reads.count(id)) return true;
    for (NodeP d : plans[p].deps)
      if (std::find(plans[q].deps.begin(), plans[q].deps.end(), d) != plans[q].deps.end()) return true;
    return false;
  }

  void group() {
    size_t n = plans.size();
    std::vector<std::vector<size_t>> deps = plan_edges();
    std::vector<size_t> order;
    // Marking only ever makes a plan depend on nodes below it, and order_writes refuses a cycle.
    if (!postorder(n, [&](size_t p) -> const std::vector<size_t>& { return deps[p]; }, order))
      throw Error("internal: the scheduler's kernels depend on each other in a cycle");
    std::vector<std::vector<bool>> reach(n, std::vector<bool>(n));  // reach[p][q]: p needs q's buffer, maybe through others
    for (size_t p : order)
      for (size_t d : deps[p]) {
        reach[p][d] = true;
        for (size_t j = 0; j < n; ++j)
          if (reach[d][j]) reach[p][j] = true;
      }
    groups.clear();
    group_of.assign(n, SIZE_MAX);
    for (size_t p : order) {
      bool placed = false;
      for (size_t g = 0; g < groups.size() && !placed && plans[p].root.op() != Op::ASSIGN; ++g) {
        if (plans[groups[g][0]].root.op() == Op::ASSIGN) continue;
        if (loops_of(*plans[groups[g][0]].root.shape()) != loops_of(*plans[p].root.shape())) continue;
        // Only outputs that read something in common share a kernel (the point is the shared work):
        // unrelated ones would all be computed at the start and live, in the arena, until their last use.
        bool shares = false;
        for (size_t q : groups[g]) shares = shares || share_input(p, q);
        if (!shares) continue;
        bool unrelated = true;
        for (size_t q : groups[g]) unrelated = unrelated && !reach[p][q] && !reach[q][p];
        if (!unrelated) continue;
        groups[g].push_back(p), group_of[p] = g;
        placed = groups_acyclic();
        if (!placed) groups[g].pop_back(), group_of[p] = SIZE_MAX;
      }
      if (!placed) group_of[p] = groups.size(), groups.push_back({p});
    }
    // The groups in dependency order: depth-first, each after the groups it needs.
    std::vector<std::vector<size_t>> needs = group_edges();
    std::vector<size_t> group_order;
    postorder(groups.size(), [&](size_t g) -> const std::vector<size_t>& { return needs[g]; }, group_order);
    std::vector<std::vector<size_t>> sorted;
    for (size_t g : group_order) sorted.push_back(groups[g]);
    groups = std::move(sorted);
    for (size_t g = 0; g < groups.size(); ++g)
      for (size_t p : groups[g]) group_of[p] = g;
  }

  // The ALU ops computing n inside a kernel, up to buffers and reductions, weighted by op_cost();
  // stops counting past kRecomputeLimit.
  static int64_t op_cost(Op op) {
    switch (op) {
      case Op::EXP2:
      case Op::LOG2:
      case Op::SIN:
      case Op::POW: return 8;
      case Op::SQRT:
      case Op::RECIPROCAL:
      case Op::FDIV: return 4;
      default: return 1;
    }
  }

  int64_t inline_cost(const UOp& n) const {
    std::vector<const UOp*> stack{&n};
    std::unordered_set<NodeP> seen;
    int64_t cost = 0;
    while (!stack.empty() && cost <= kRecomputeLimit) {
      const UOp* u = stack.back();
      stack.pop_back();
      if (!seen.insert(u->get()).second || (u != &n && (index.count(u->get()) || u->op() == Op::REDUCE_AXIS))) continue;
      if (is_alu(u->op())) cost += op_cost(u->op());
      for (const UOp& s : u->src()) stack.push_back(&s);
    }
    return cost;
  }

  // The recompute rule (docs/tensor.md): a reduction that two kernels would each compute, or an
  // elementwise value costing more than kRecomputeLimit ops that two kernels would each compute, is
  // computed once into a buffer.
  bool realize_shared() {
    std::unordered_set<NodeP> shared;
    for (const auto& [p, in] : inlined_) {
      std::unordered_set<size_t> kernels;
      for (size_t k : in.plans) kernels.insert(group_of[k]);
      if (kernels.size() >= 2 && !index.count(p)) shared.insert(p);
    }
    // Sources first, so that realizing one value lowers what its users cost before they are judged.
    bool added = false;
    std::unordered_set<NodeP> judged;
    for (size_t k = 0, n = plans.size(); k < n; ++k)
      for (const UOp& u : plans[k].root.toposort()) {
        if (!shared.count(u.get()) || !judged.insert(u.get()).second) continue;
        if (u.op() == Op::REDUCE_AXIS || inline_cost(u) > kRecomputeLimit) add(u), added = true;
      }
    return added;
  }

  void dep(size_t k, const UOp& n) { plans[k].deps.push_back(n.get()); }

  // An ASSIGN overwrites its target's buffer, so every other kernel that loads that buffer (the value
  // before the write) runs first. A kernel that needs both the old value and the write (directly or
  // through other kernels) cannot be ordered, and neither can two writes to one buffer.
  void order_writes() {
    std::vector<std::vector<size_t>> deps = plan_edges();
    auto reaches = [&](size_t from, size_t to) {
      std::vector<size_t> stack{from};
      std::vector<bool> seen(plans.size());
      while (!stack.empty()) {
        size_t p = stack.back();
        stack.pop_back();
        if (p == to) return true;
        if (seen[p]) continue;
        seen[p] = true;
        for (size_t d : deps[p]) stack.push_back(d);
      }
      return false;
    };
    std::unordered_map<int64_t, size_t> writer;
    for (size_t a = 0; a < plans.size(); ++a) {
      if (plans[a].root.op() != Op::ASSIGN) continue;
      int64_t target = view_buffer_id(plans[a].root.src(0));
      if (auto [it, fresh] = writer.try_emplace(target, a); !fresh)
        throw Error("two assigns to buffer " + std::to_string(target) + " in one schedule (realize the first before the second)");
      for (size_t p = 0; p < plans.size(); ++p) {
        if (p == a || !plans[p].reads.count(target)) continue;
        if (reaches(p, a))
          throw Error("a kernel reads buffer " + std::to_string(target) +
                      " both before and after an assign to it (directly or through others), so the " +
                      "schedule cannot be ordered (realize in two steps): " + to_inline(plans[p].root, 120));
        plans[a].deps.push_back(plans[p].root.get());
        deps[a].push_back(p);  // later checks see this order too
      }
    }
    // Orders added for one buffer can close a cycle with another's (p1 reads X and needs the write to
    // Y, p2 reads Y and needs the write to X): no order serves both.
    std::vector<size_t> order;
    if (!postorder(plans.size(), [&](size_t p) -> const std::vector<size_t>& { return deps[p]; }, order))
      throw Error(
          "the assigns of this schedule cannot be ordered: kernels need old contents of buffers that others overwrite first (realize in two steps)");
  }

  // expanded: the value reaching the kernel's store is broadcast from this node's; in_reduce: it is
  // inside a reduction the kernel computes.
  void visit(const UOp& n, bool expanded, bool in_reduce, size_t k, NodeP root, int64_t depth = 0) {
    uint64_t key = reinterpret_cast<uintptr_t>(n.get()) * 4 + (expanded ? 2 : 0) + (in_reduce ? 1 : 0);
    if (!seen_.insert(key).second) return;
    check_tensor_op(n);
    if (is_alu(n.op()) && !n.shape())
      for (const UOp& s : n.src())
        if (s.shape()) throw Error("the sources of an elementwise op have different shapes: " + to_inline(n, 120));
    if (n.op() != Op::CONST && n.op() != Op::DEFINE_VAR && !(is_alu(n.op()) && !n.shape())) check_shape(n);
    Op op = n.op();
    if (op == Op::BUFFER) plans[k].reads.insert(n.arg_as<Ints>()[0]);
    if (op == Op::BUFFER || op == Op::IOTA || op == Op::CONST || op == Op::DEFINE_VAR) return;
    if (n.get() != root) {
      if (index.count(n.get())) return dep(k, n);
      if (is_buffer_view(n)) return (void)plans[k].reads.insert(view_buffer_id(n));
      bool realize = op == Op::CONTIGUOUS || op == Op::ASSIGN || (op == Op::REDUCE_AXIS && (expanded || in_reduce)) ||
                     (expanded && is_alu(op) && inline_cost(n) > kBroadcastLimit) || depth > kMaxFusedDepth;
      if (realize) {
        add(n);
        return dep(k, n);
      }
    }
    if (n.get() != root && (op == Op::REDUCE_AXIS || is_alu(op))) count_inline(n, k);
    if (op == Op::REDUCE_AXIS) return visit(n.src(0), false, true, k, root, depth + 1);
    if (op == Op::ASSIGN) {  // the root of its kernel: computes the value (and index), stores into the target
      if (!is_buffer_view(n.src(0))) throw Error("ASSIGN writes into a buffer, not into " + to_inline(n.src(0), 120));
      // A value that reads the target itself elsewhere than at the element it stores
      // (x.assign(x.flip(0)), a cache shifted by one) is computed into a buffer of its own first:
      // stores would overwrite elements other lanes still read. One that reads it only there, through
      // elementwise ops (an optimizer's m.assign(m * b1 + g)), is updated in place.
      int64_t target = view_buffer_id(n.src(0));
      bool in_place = n.src().size() == 2 && reads_only_at_store(n.src(1), n.src(0), target);
      if (!in_place && reads_buffer(n.src(1), target) && !index.count(n.src(1).get())) add(n.src(1));
      for (size_t i = 1; i < n.src().size(); ++i) visit(n.src(i), false, false, k, root, depth + 1);
      return;
    }
    if (op == Op::EXPAND) return visit(n.src(0), expanded || expands(n), in_reduce, k, root, depth + 1);
    if (op == Op::GATHER) {  // the input is read at data-dependent places, maybe many times each
      visit(n.src(0), true, in_reduce, k, root, depth + 1);
      return visit(n.src(1), expanded, in_reduce, k, root, depth + 1);
    }
    for (const UOp& s : n.src()) visit(s, expanded, in_reduce, k, root, depth + 1);
  }
};

// ---- kernel bodies: tensor nodes at index expressions --------------------------------------------

struct VecHash {
  size_t operator()(const std::vector<const void*>& v) const {
    size_t h = 0;
    for (const void* p : v) h = h * 1000003u ^ std::hash<const void*>()(p);
    return h;
  }
};

class KernelWriter {
 public:
  KernelWriter(const std::unordered_map<NodeP, int64_t>& buffer_ids) : ids_(buffer_ids) {}

  // Reductions this kernel computes at more than one place of their output (as the two halves of a
  // rotary embedding read a projection): each would be a loop per place, so they become buffers.
  std::vector<UOp> repeated;

  // One kernel storing every output (roots of one shape) at the same loops; the outputs take slots
  // 0, 1, ... in order.
  ScheduledKernel write(const std::vector<std::pair<UOp, int64_t>>& outs) {
    if (outs[0].first.op() == Op::ASSIGN) return write_assign(outs[0].first, outs[0].second);
    const Shape loops = loops_of(shape_of(outs[0].first));
    std::vector<UOp> ranges;
    for (int64_t d : loops) ranges.push_back(UOp::range(d, next_axis_++, AxisType::GLOBAL));
    // Each output's index: the loops on its axes of size other than 1, 0 on the others.
    auto index_of = [&](const Shape& shape) {
      std::vector<UOp> idx;
      size_t r = 0;
      for (int64_t d : shape) idx.push_back(d == 1 ? idx_const(0) : ranges[r++]);
      return idx;
    };
    std::vector<UOp> defs, stores;
    for (const auto& [root, id] : outs) roots_.insert(root.get()), defs.push_back(define(id, root.dtype()));
    for (size_t i = 0; i < outs.size(); ++i) {
      const UOp& root = outs[i].first;
      const Shape& shape = shape_of(root);
      std::vector<UOp> idx = index_of(shape);
      UOp value = render(root.op() == Op::CONTIGUOUS ? root.src(0) : root, idx, UOp());
      stores.push_back(UOp::make(Op::STORE, dtypes::void_, {UOp::make(Op::INDEX, root.dtype().ptr(), {defs[i], linear(idx, shape)}), value}));
    }
    return finish(stores, ranges, loops, has_reduce_ ? "R" : "E", outs.size());
  }

  // An ASSIGN's kernel: loops over the value, stores into the target's buffer (slot 0) — at the same
  // place, or along the axis at the index's value there (out-of-range indices store nothing).
  ScheduledKernel write_assign(const UOp& root, int64_t target) {
    const Shape& tshape = shape_of(root);
    const Shape& vshape = shape_of(root.src(1));
    const Shape loops = loops_of(vshape);
    std::vector<UOp> ranges, idx;
    for (int64_t d : loops) ranges.push_back(UOp::range(d, next_axis_++, AxisType::GLOBAL));
    size_t r = 0;
    for (int64_t d : vshape) idx.push_back(d == 1 ? idx_const(0) : ranges[r++]);
    roots_.insert(root.get());
    UOp def = define(target, root.dtype());
    UOp value = render(root.src(1), idx, UOp());
    UOp at_lin;
    if (root.src().size() == 2) {
      at_lin = linear(idx, tshape);
    } else {
      size_t ax = static_cast<size_t>(root.arg_as<int64_t>());
      UOp at = render(root.src(2), {idx[ax]}, UOp()).cast(dtypes::index);
      UOp in_range = UOp::alu(Op::AND, {idx_const(-1).lt(at), at.lt(idx_const(tshape[ax]))});
      std::vector<UOp> i2 = idx;
      i2[ax] = at;
      UOp lin;  // as linear(), but the axis counts even where the target's size is 1 (the index may be out of range there)
      for (size_t d = 0; d < tshape.size(); ++d)
        if (tshape[d] != 1 || d == ax) lin = lin ? lin * static_cast<double>(tshape[d]) + i2[d] : i2[d];
      at_lin = in_range.where(lin, UOp::invalid());
    }
    UOp st = UOp::make(Op::STORE, dtypes::void_, {UOp::make(Op::INDEX, root.dtype().ptr(), {def, at_lin}), value});
    return finish({st}, ranges, loops, "A", 1);
  }

 private:
  ScheduledKernel finish(const std::vector<UOp>& stores, const std::vector<UOp>& ranges, const Shape& loops, const std::string& kind,
                         size_t outputs) {
    UOp st = stores.size() == 1 ? stores[0] : UOp::make(Op::GROUP, dtypes::void_, stores);
    if (!ranges.empty()) {
      std::vector<UOp> s{st};
      s.insert(s.end(), ranges.begin(), ranges.end());
      st = UOp::make(Op::END, dtypes::void_, s);
    }
    ScheduledKernel k;
    k.ast = UOp::sink(std::span<const UOp>(&st, 1));
    k.slots = slots_;
    k.outputs = outputs;
    k.uops = k.ast.toposort().size();
    k.name = kind;
    if (loops.empty()) k.name += "_1";
    for (int64_t d : loops) k.name += "_" + std::to_string(d);
    if (outputs > 1) k.name += "_x" + std::to_string(outputs);
    return k;
  }

  const std::unordered_map<NodeP, int64_t>& ids_;
  std::vector<int64_t> slots_;
  std::unordered_map<int64_t, UOp> defines_;
  std::unordered_map<std::vector<const void*>, UOp, VecHash> memo_;
  int64_t next_axis_ = 0;
  std::unordered_set<NodeP> roots_;                                        // what this kernel stores (computed here, not loaded)
  std::unordered_map<NodeP, std::pair<std::vector<UOp>, UOp>> reduce_at_;  // where each reduction was computed first
  bool has_reduce_ = false;

  UOp define(int64_t id, DType dt) {
    auto it = defines_.find(id);
    if (it != defines_.end()) return it->second;
    UOp d = UOp::make(Op::DEFINE_GLOBAL, dt.ptr(), {}, static_cast<int64_t>(slots_.size()));
    slots_.push_back(id);
    return defines_[id] = d;
  }

  // Row-major position of idx in shape. Size-1 axes add nothing: their index is 0 wherever a
  // load is not masked off.
  static UOp linear(const std::vector<UOp>& idx, const Shape& shape, size_t from = 0, size_t to = SIZE_MAX) {
    UOp lin;
    for (size_t d = from; d < std::min(to, shape.size()); ++d) {
      if (shape[d] == 1) continue;
      lin = lin ? lin * static_cast<double>(shape[d]) + idx[d] : idx[d];
    }
    return lin ? lin : idx_const(0);
  }

  UOp load(int64_t id, DType dt, const std::vector<UOp>& idx, const Shape& shape, const UOp& valid) {
    UOp lin = linear(idx, shape);
    if (valid) lin = valid.where(lin, UOp::invalid());
    return UOp::make(Op::LOAD, dt, {UOp::make(Op::INDEX, dt.ptr(), {define(id, dt), lin})});
  }

  // Groups of consecutive axes whose sizes multiply to the same number on both sides map to each
  // other alone: a reshape that splits or merges axes needs division only inside its groups.
  static std::vector<UOp> reshape_index(const std::vector<UOp>& idx, const Shape& out, const Shape& in) {
    std::vector<UOp> res(in.size(), idx_const(0));
    if (product(in) == 0) return res;  // an empty tensor: no element is ever read
    size_t o = 0, i = 0;
    while (o < out.size() || i < in.size()) {
      size_t o0 = o, i0 = i;
      int64_t po = 1, pi = 1;
      do {
        if ((po <= pi && o < out.size()) || i == in.size()) po *= out[o++];
        else pi *= in[i++];
      } while (po != pi && (o < out.size() || i < in.size()));
      UOp flat = linear(idx, out, o0, o);
      int64_t stride = 1;
      for (size_t a = i; a-- > i0;) {
        if (in[a] != 1) {
          UOp v = stride == 1 ? flat : flat.floordiv(stride);
          res[a] = a == i0 ? v : v % static_cast<double>(in[a]);
        }
        stride *= in[a];
      }
    }
    return res;
  }

  UOp render(const UOp& n, const std::vector<UOp>& idx, const UOp& valid) {
    std::vector<const void*> key{n.get(), valid.get()};
    for (const UOp& i : idx) key.push_back(i.get());
    if (auto it = memo_.find(key); it != memo_.end()) return it->second;
    UOp r = render_new(n, idx, valid);
    memo_.emplace(std::move(key), r);
    return r;
  }

  UOp render_new(const UOp& n, const std::vector<UOp>& idx, const UOp& valid) {
    Op op = n.op();
    if (op == Op::CONST || op == Op::DEFINE_VAR) return n;
    if (!roots_.count(n.get()))
      if (auto it = ids_.find(n.get()); it != ids_.end()) return load(it->second, n.dtype(), idx, shape_of(n), valid);
    switch (op) {
      case Op::BUFFER: return load(n.arg_as<Ints>()[0], n.dtype(), idx, shape_of(n), valid);
      case Op::IOTA: return idx[0].cast(n.dtype());
      case Op::GATHER: {
        // Out-of-range indices read nothing and give 0 (a kernel cannot raise an error).
        int64_t ax = n.arg_as<int64_t>();
        int64_t size = shape_of(n.src(0))[ax];
        UOp at = render(n.src(1), idx, valid).cast(dtypes::index);
        UOp in_range = UOp::alu(Op::AND, {idx_const(-1).lt(at), at.lt(idx_const(size))});
        std::vector<UOp> i2 = idx;
        i2[ax] = at;
        UOp x = render(n.src(0), i2, valid ? UOp::alu(Op::AND, {valid, in_range}) : in_range);
        return in_range.where(x, UOp::const_like(x, 0));
      }
      case Op::CONTIGUOUS: return render(n.src(0), idx, valid);
      case Op::RESHAPE: {
        const auto& in = n.src(0).shape();
        if (!in) return render(n.src(0), {}, valid);  // a scalar given a shape
        return render(n.src(0), reshape_index(idx, n.arg_as<Ints>(), *in), valid);
      }
      case Op::EXPAND: {
        const Shape& in = shape_of(n.src(0));
        std::vector<UOp> i2 = idx;
        for (size_t d = 0; d < in.size(); ++d)
          if (in[d] == 1) i2[d] = idx_const(0);
        return render(n.src(0), i2, valid);
      }
      case Op::PERMUTE: {
        const Ints& p = n.arg_as<Ints>();
        std::vector<UOp> i2(idx.size());
        for (size_t d = 0; d < p.size(); ++d) i2[p[d]] = idx[d];
        return render(n.src(0), i2, valid);
      }
      case Op::FLIP: {
        const Shape& in = shape_of(n.src(0));
        std::vector<UOp> i2 = idx;
        for (int64_t a : n.arg_as<Ints>()) i2[a] = idx_const(in[a] - 1) - idx[a];
        return render(n.src(0), i2, valid);
      }
      case Op::SHRINK: {
        const Pairs& p = n.arg_as<Pairs>();
        std::vector<UOp> i2 = idx;
        for (size_t d = 0; d < p.size(); ++d)
          if (p[d].first != 0) i2[d] = idx[d] + static_cast<double>(p[d].first);
        return render(n.src(0), i2, valid);
      }
      case Op::PAD: {
        const Pairs& p = n.arg_as<Pairs>();
        const Shape& in = shape_of(n.src(0));
        std::vector<UOp> i2 = idx;
        UOp cond;
        auto both = [](const UOp& a, const UOp& b) { return a ? UOp::alu(Op::AND, {a, b}) : b; };
        for (size_t d = 0; d < p.size(); ++d) {
          if (p[d].first != 0) {
            cond = both(cond, idx_const(p[d].first - 1).lt(idx[d]));
            i2[d] = idx[d] - static_cast<double>(p[d].first);
          }
          if (p[d].second != 0) cond = both(cond, idx[d].lt(idx_const(p[d].first + in[d])));
        }
        if (!cond) return render(n.src(0), i2, valid);
        UOp inner = render(n.src(0), i2, valid ? both(valid, cond) : cond);
        return cond.where(inner, UOp::const_like(inner, 0));
      }
      case Op::REDUCE_AXIS: {
        has_reduce_ = true;
        if (auto [it, fresh] = reduce_at_.try_emplace(n.get(), idx, valid); !fresh && (it->second.first != idx || it->second.second != valid))
          repeated.push_back(n);
        const auto& a = n.arg_as<ReduceAxisArg>();
        const Shape& in = shape_of(n.src(0));
        std::vector<UOp> i2 = idx, ranges;
        for (int64_t ax : a.axes) {
          if (in[ax] == 1) continue;
          ranges.push_back(UOp::range(in[ax], next_axis_++, AxisType::REDUCE));
          i2[ax] = ranges.back();
        }
        UOp x = render(n.src(0), i2, valid);
        bool empty = false;
        for (int64_t ax : a.axes) empty = empty || in[ax] == 0;
        if (ranges.empty() && !empty) return x;
        std::vector<UOp> s{x};
        s.insert(s.end(), ranges.begin(), ranges.end());
        return UOp::make(Op::REDUCE, n.dtype(), s, a.op);
      }
      default: break;
    }
    if (!is_alu(op)) throw Error("cannot schedule " + std::string(op_name(op)) + ": " + to_inline(n, 120));
    std::vector<UOp> s;
    for (const UOp& x : n.src()) s.push_back(render(x, idx, valid));
    return UOp::make(op, n.dtype(), s, n.arg());
  }
};

// ---- memory plan ------------------------------------------------------------------------------------

int64_t round_up(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

struct Interval {
  size_t buffer;  // index into Schedule::buffers
  size_t first, last;
  int64_t bytes;
};

// Greedy by size: each intermediate goes at the lowest offset where it overlaps no placed buffer
// whose lifetime (first kernel writing it .. last kernel reading it) overlaps its own.
void plan_memory(Schedule& s, std::vector<Interval> live) {
  std::sort(live.begin(), live.end(),
            [](const Interval& a, const Interval& b) { return a.bytes != b.bytes ? a.bytes > b.bytes : a.first < b.first; });
  std::vector<std::pair<const Interval*, int64_t>> placed;
  for (const Interval& iv : live) {
    std::vector<std::pair<int64_t, int64_t>> busy;  // [begin, end) of conflicting placements
    for (auto& [p, off] : placed)
      if (p->first <= iv.last && iv.first <= p->last) busy.push_back({off, off + p->bytes});
    std::sort(busy.begin(), busy.end());
    int64_t off = 0;
    for (auto [b, e] : busy) {
      if (off + iv.bytes <= b) break;
      off = std::max(off, round_up(e, kArenaAlignment));
    }
    placed.push_back({&iv, off});
    s.buffers[iv.buffer].arena_offset = off;
    s.arena_bytes = std::max(s.arena_bytes, off + iv.bytes);
    s.unshared_bytes += round_up(iv.bytes, kArenaAlignment);
  }
}

}  // namespace

namespace {
// DETACH only stops gradients (tensor/grad.h): the schedule reads through it.
std::vector<UOp> without_detach(std::span<const UOp> roots) {
  static const PatternMatcher strip("strip_detach", {Rule(UPat(Op::DETACH).src({UPat::var("x")}), [](const Match& m) { return m["x"]; })});
  std::vector<UOp> out(roots.begin(), roots.end());
  for (UOp& r : out) {
    const auto& topo = r.toposort();
    if (std::any_of(topo.begin(), topo.end(), [](const UOp& u) { return u.op() == Op::DETACH; })) r = graph_rewrite(r, strip);
  }
  return out;
}
}  // namespace

Schedule make_schedule(std::span<const UOp> given_roots, const std::function<int64_t()>& new_id) {
  const std::vector<UOp> roots = without_detach(given_roots);
  Marker m;
  std::unordered_set<NodeP> is_root;
  for (const UOp& r : roots) {
    verify_or_throw(r);  // a graph from outside (text, a bug) is refused here, not crashed on
    check_tensor_op(r);
    check_shape(r);
    if (is_buffer_view(r)) continue;
    m.add(r);
    is_root.insert(r.get());
  }
  // Kernels are written after marking; a reduction a kernel reads at several places of its output
  // (as the two halves of a rotary embedding read one projection) would be a loop per place, so it
  // becomes a buffer and everything is marked and written again.
  Schedule s;
  std::unordered_map<NodeP, int64_t> ids;
  std::vector<Interval> live;
  for (bool again = true; again;) {
    m.run();
    s = Schedule{};
    ids.clear(), live.clear();
    std::unordered_map<int64_t, size_t> buffer_index;  // id -> index in s.buffers
    for (const auto& g : m.groups)
      for (size_t p : g) {
        const UOp& r = m.plans[p].root;
        if (r.op() == Op::ASSIGN) {  // writes its target's buffer; needs none of its own
          ids[r.get()] = view_buffer_id(r.src(0));
          continue;
        }
        NewBuffer b{new_id(), r.dtype(), product(shape_of(r)), is_root.count(r.get()) > 0};
        ids[r.get()] = b.id;
        buffer_index[b.id] = s.buffers.size();
        s.buffers.push_back(b);
      }
    std::unordered_map<int64_t, size_t> live_of;  // intermediate id -> its interval
    again = false;
    for (const auto& g : m.groups) {
      std::vector<std::pair<UOp, int64_t>> outs;
      for (size_t p : g) {
        const UOp& r = m.plans[p].root;
        if (product(shape_of(r.op() == Op::ASSIGN ? r.src(1) : r)) != 0) outs.push_back({r, ids.at(r.get())});
      }
      if (outs.empty()) continue;  // nothing to compute
      KernelWriter w(ids);
      ScheduledKernel sk = w.write(outs);
      for (const UOp& r : w.repeated)
        if (!m.index.count(r.get())) m.add(r), again = true;
      size_t at = s.kernels.size();
      for (size_t slot = 0; slot < sk.slots.size(); ++slot) {
        int64_t id = sk.slots[slot];
        auto bi = buffer_index.find(id);
        if (bi == buffer_index.end() || s.buffers[bi->second].output) continue;  // inputs from outside, outputs
        if (slot < sk.outputs) {
          live_of[id] = live.size();
          live.push_back({bi->second, at, at, s.buffers[bi->second].count * s.buffers[bi->second].dtype.itemsize()});
        } else {
          live[live_of.at(id)].last = at;
        }
      }
      s.kernels.push_back(std::move(sk));
    }
  }
  plan_memory(s, live);
  for (const NewBuffer& b : s.buffers)
    if (b.output) s.output_bytes += b.count * b.dtype.itemsize();

  for (const UOp& r : roots) {
    if (is_buffer_view(r)) {
      s.results.push_back(r);
      continue;
    }
    s.results.push_back(buffer_view(ids.at(r.get()), r.dtype(), shape_of(r)));
  }
  return s;
}

}  // namespace ugpu::schedule
