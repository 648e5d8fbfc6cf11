// Autograd: the derivative table and the backward walk (tensor/grad.h, docs/training.md).
#include "tensor/grad.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <mutex>
#include <unordered_map>
#include <unordered_set>

#include "common/error.h"
#include "ir/text.h"
#include "ir/upat.h"
#include "tensor/lazy.h"

namespace ugpu::tensor {
using ir::Match;
using ir::Op;
using ir::PatternMatcher;
using ir::Rule;
using ir::UOp;
using ir::UPat;
using NodeP = const ir::detail::Node*;

namespace {

thread_local bool t_no_grad = false;
std::atomic<int64_t> g_requiring{0};  // live handles that require a gradient

// What a derivative rule sees: the node's gradient, the node and its sources as tensors; it returns
// one gradient per source (undefined: none).
struct GradCtx {
  Tensor g, node;
  std::vector<Tensor> src;
  std::vector<Tensor> out;
};
using Grads = std::vector<Tensor>;
using GradFn = Grads (*)(const GradCtx&);

// A sum over `axes` kept as size-1 axes, accumulated in float32 at least.
Tensor sum_keep(const Tensor& g, const Axes& axes) {
  DType dt = g.dtype();
  Tensor x = dt.itemsize() < 4 ? g.cast(dtypes::float32) : g;
  return x.sum(axes, true).cast(dt);
}

// g summed down to `shape` (same rank): the axes `shape` has as 1 and g does not (broadcasts).
Tensor reduce_to(const Tensor& g, const Shape& shape) {
  if (g.shape() == shape) return g;
  if (g.shape().size() != shape.size())
    throw Error("internal: gradient of shape " + shape_text(g.shape()) + " for a value of shape " + shape_text(shape));
  Axes axes;
  for (size_t i = 0; i < shape.size(); ++i)
    if (shape[i] == 1 && g.shape()[i] != 1) axes.push_back(static_cast<int64_t>(i));
  return sum_keep(g, axes);
}

// The scatter-add that undoes a gather along `axis`: out[..., j, ...] = sum over t of
// g[..., t, ...] where index[..., t, ...] == j, padded off the axis to the input's shape.
Tensor scatter_add(const Tensor& g, const Tensor& index, int64_t axis, const Shape& input) {
  int64_t n = input[axis];
  Axes view(index.ndim() + 1, 1);
  view[axis + 1] = n;
  Tensor j = Tensor::arange(n, index.dtype(), index.device()).reshape(view);
  Tensor hit = index.unsqueeze(axis + 1).eq(j);  // [..., t, j, ...]
  Tensor r = hit.where(g.unsqueeze(axis + 1), 0.0);
  Tensor s = (g.dtype().itemsize() < 4 ? r.cast(dtypes::float32) : r).sum({axis}).cast(g.dtype());
  std::vector<std::pair<int64_t, int64_t>> pad;
  for (size_t d = 0; d < input.size(); ++d) pad.push_back({0, input[d] - s.shape()[d]});
  return s.pad(pad);
}

Rule d(UPat pat, GradFn f) {
  return Rule(std::move(pat), [f](const Match& m) {
    auto& c = m.ctx<GradCtx>();
    c.out = f(c);
    std::vector<UOp> u;
    for (const Tensor& t : c.out) u.push_back(t.defined() ? t.uop() : UOp::invalid());
    return UOp::make(Op::SINK, ir::dtypes::void_, u);
  });
}
UPat reduce_of(Op op) {
  return UPat(Op::REDUCE_AXIS).check([op](const UOp& u) { return u.arg_as<ir::ReduceAxisArg>().op == op; });
}
const Axes& reduced_axes(const GradCtx& c) { return c.node.uop().arg_as<ir::ReduceAxisArg>().axes; }

// One rule per op: the gradients of the sources from the gradient of the node (PyTorch's formulas).
const PatternMatcher& derivatives() {
  static const PatternMatcher pm(
      "derivatives",
      {
          d(Op::NEG, [](const GradCtx& c) -> Grads { return {-c.g}; }),
          d(Op::CAST, [](const GradCtx& c) -> Grads { return {c.g.cast(c.src[0].dtype())}; }),
          d(Op::RECIPROCAL, [](const GradCtx& c) -> Grads { return {-c.g * (c.node * c.node)}; }),
          d(Op::SIN, [](const GradCtx& c) -> Grads { return {c.g * c.src[0].cos()}; }),
          d(Op::LOG2, [](const GradCtx& c) -> Grads { return {c.g / (c.src[0] * M_LN2)}; }),
          d(Op::EXP2, [](const GradCtx& c) -> Grads { return {c.g * c.node * M_LN2}; }),
          d(Op::SQRT, [](const GradCtx& c) -> Grads { return {c.g / (c.node * 2.0)}; }),
          d(Op::ADD, [](const GradCtx& c) -> Grads { return {c.g, c.g}; }),
          d(Op::SUB, [](const GradCtx& c) -> Grads { return {c.g, -c.g}; }),
          d(Op::MUL, [](const GradCtx& c) -> Grads { return {c.g * c.src[1], c.g * c.src[0]}; }),
          d(Op::FDIV, [](const GradCtx& c) -> Grads { return {c.g / c.src[1], -c.g * c.src[0] / (c.src[1] * c.src[1])}; }),
          d(ir::OpSet{Op::MULACC, Op::FMA}, [](const GradCtx& c) -> Grads { return {c.g * c.src[1], c.g * c.src[0], c.g}; }),
          d(Op::MAX,
            [](const GradCtx& c) -> Grads {
              const Tensor &a = c.src[0], &b = c.src[1];
              Tensor tie = a.eq(b).where(c.g * 0.5, 0.0);
              return {a.gt(b).where(c.g, tie), b.gt(a).where(c.g, tie)};
            }),
          d(Op::POW,
            [](const GradCtx& c) -> Grads {
              const Tensor &a = c.src[0], &b = c.src[1];
              Tensor da = b.eq(scalar_like(b, 0)).where(0.0, c.g * b * a.pow(b - 1.0));
              Tensor db = a.eq(scalar_like(a, 0)).bitwise_and(b.ge(scalar_like(b, 0))).where(0.0, c.g * c.node * a.log());
              return {da, db};
            }),
          d(Op::WHERE, [](const GradCtx& c) -> Grads { return {Tensor(), c.src[0].where(c.g, 0.0), c.src[0].where(0.0, c.g)}; }),
          d(ir::OpSet{Op::TRUNC, Op::BITCAST}, [](const GradCtx&) -> Grads { return {Tensor()}; }),
          // Reductions (the node keeps the reduced axes as size 1).
          d(reduce_of(Op::ADD), [](const GradCtx& c) -> Grads { return {c.g.expand(Axes(c.src[0].shape().begin(), c.src[0].shape().end()))}; }),
          d(reduce_of(Op::MAX),
            [](const GradCtx& c) -> Grads {
              Tensor hit = c.src[0].eq(c.node);
              Tensor count = sum_keep(hit.cast(c.g.dtype()), reduced_axes(c));
              return {hit.where(c.g / count, 0.0)};
            }),
          d(reduce_of(Op::MUL),
            [](const GradCtx& c) -> Grads {
              // The product of the others: the product of the non-zero elements over x where there is
              // no zero, that product at the one zero where there is exactly one, 0 elsewhere.
              const Tensor& x = c.src[0];
              Tensor zero = x.eq(scalar_like(x, 0));
              Tensor nonzero = zero.where(1.0, x).prod(reduced_axes(c), true).cast(x.dtype());
              Tensor zeros = zero.cast(dtypes::int32).sum(reduced_axes(c), true);
              Tensor none = zeros.eq(scalar_like(zeros, 0)), one = zeros.eq(scalar_like(zeros, 1));
              return {none.where(c.g * nonzero / x, zero.bitwise_and(one).where(c.g * nonzero, 0.0))};
            }),
          // Movement: the inverse movement.
          d(Op::RESHAPE, [](const GradCtx& c) -> Grads { return {c.g.reshape(Axes(c.src[0].shape().begin(), c.src[0].shape().end()))}; }),
          d(Op::EXPAND, [](const GradCtx& c) -> Grads { return {reduce_to(c.g, c.src[0].shape())}; }),
          d(Op::PERMUTE,
            [](const GradCtx& c) -> Grads {
              const ir::Ints& order = c.node.uop().arg_as<ir::Ints>();
              Axes inverse(order.size());
              for (size_t i = 0; i < order.size(); ++i) inverse[order[i]] = static_cast<int64_t>(i);
              return {c.g.permute(inverse)};
            }),
          d(Op::PAD,
            [](const GradCtx& c) -> Grads {
              std::vector<std::pair<int64_t, int64_t>> keep;
              const ir::Pairs& p = c.node.uop().arg_as<ir::Pairs>();
              for (size_t i = 0; i < p.size(); ++i) keep.push_back({p[i].first, p[i].first + c.src[0].shape()[i]});
              return {c.g.shrink(keep)};
            }),
          d(Op::SHRINK,
            [](const GradCtx& c) -> Grads {
              std::vector<std::pair<int64_t, int64_t>> pad;
              const ir::Pairs& p = c.node.uop().arg_as<ir::Pairs>();
              for (size_t i = 0; i < p.size(); ++i) pad.push_back({p[i].first, c.src[0].shape()[i] - p[i].second});
              return {c.g.pad(pad)};
            }),
          d(Op::FLIP,
            [](const GradCtx& c) -> Grads {
              const ir::Ints& a = c.node.uop().arg_as<ir::Ints>();
              return {c.g.flip(Axes(a.begin(), a.end()))};
            }),
          d(Op::CONTIGUOUS, [](const GradCtx& c) -> Grads { return {c.g}; }),
          d(Op::GATHER,
            [](const GradCtx& c) -> Grads { return {scatter_add(c.g, c.src[1], c.node.uop().arg_as<int64_t>(), c.src[0].shape()), Tensor()}; }),
          // A whole-tensor assign: the value flows on (an indexed one has no rule).
          d(UPat(Op::ASSIGN).check([](const UOp& u) { return u.src().size() == 2; }), [](const GradCtx& c) -> Grads { return {Tensor(), c.g}; }),
      });
  return pm;
}

}  // namespace

// The registry of handles that require a gradient, and the walk.
struct Autograd {
  struct Registry {
    std::mutex mu;
    std::vector<std::weak_ptr<Tensor::Handle>> handles;
  };
  static Registry& reg() {
    static Registry r;
    return r;
  }
  static Tensor wrap_handle(std::shared_ptr<Tensor::Handle> h) {
    Tensor t;
    t.h_ = std::move(h);
    return t;
  }
  // Live handles that require a gradient, by the graph node they are (now, or before a realize).
  static std::unordered_map<NodeP, std::vector<std::shared_ptr<Tensor::Handle>>> live_targets() {
    std::unordered_map<NodeP, std::vector<std::shared_ptr<Tensor::Handle>>> out;
    Registry& r = reg();
    std::lock_guard lock(r.mu);
    std::erase_if(r.handles, [](const std::weak_ptr<Tensor::Handle>& w) { return w.expired(); });
    for (const auto& w : r.handles) {
      auto h = w.lock();
      if (!h || !h->requires_grad) continue;
      out[h->node->uop.get()].push_back(h);
      if (h->node->graph) out[h->node->graph->uop.get()].push_back(h);
    }
    return out;
  }
  static void set_requires_grad(Tensor& t, bool on) {
    Tensor::Handle& h = *t.h_;
    if (on == h.requires_grad) return;
    h.requires_grad = on;
    g_requiring += on ? 1 : -1;
    if (!on) return;
    Registry& r = reg();
    std::lock_guard lock(r.mu);
    r.handles.push_back(t.h_);
  }
  static const LazyNode& node(const Tensor& t) { return t.node(); }
  static Tensor graph_of(const Tensor& t) {
    const LazyNode& n = t.node();
    return n.graph ? Tensor::wrap(n.graph) : t;
  }
  // g as a gradient: a node of its own whose graph a realize does not keep.
  static Tensor as_gradient(const Tensor& g) {
    auto n = std::make_shared<LazyNode>();
    n->uop = g.uop();
    n->device = g.device();
    n->srcs.push_back(g.h_->node);
    n->is_gradient = true;
    return Tensor::wrap(std::move(n));
  }
  static Tensor::Handle& handle(const Tensor& t) {
    t.node();  // throws for an undefined tensor
    return *t.h_;
  }
};

Tensor::Handle::~Handle() {
  if (requires_grad) --g_requiring;
}

bool any_requires_grad() { return g_requiring.load(std::memory_order_relaxed) > 0; }

bool reads_requires_grad(const UOp& u) {
  auto targets = Autograd::live_targets();
  if (targets.empty()) return false;
  for (const UOp& n : u.toposort())
    if (targets.count(n.get())) return true;
  return false;
}

UOp maybe_detached(UOp u, std::span<const Tensor* const> srcs) {
  if (!t_no_grad || u.op() == Op::ASSIGN || u.op() == Op::DETACH) return u;
  for (const Tensor* s : srcs)
    if (s->defined() && s->uop().op() != Op::DETACH) return UOp::make(Op::DETACH, u.dtype(), {u});
  return u;
}

NoGrad::NoGrad() : prev_(t_no_grad) { t_no_grad = true; }
NoGrad::~NoGrad() { t_no_grad = prev_; }
bool grad_enabled() { return !t_no_grad; }

namespace {

// The walk: nodes between the root and the targets in reverse order, each node's gradient handed to
// its rule, the results summed per source. Nodes of other dtypes than float carry no gradient.
std::unordered_map<NodeP, Tensor> backward_walk(const Tensor& root, const std::unordered_set<NodeP>& targets, const Tensor& seed) {
  const UOp& r = root.uop();
  const std::string& dev = root.device();
  if (!r.dtype().is_float()) throw Error("gradient: the root is " + r.dtype().name() + "; only float values have gradients");
  Tensor g;
  if (seed.defined()) {
    if (seed.shape() != root.shape())
      throw Error("gradient: the seed has shape " + shape_text(seed.shape()) + ", the root " + shape_text(root.shape()));
    g = seed.cast(r.dtype());
  } else {
    if (root.numel() != 1)
      throw Error("gradient: the root has shape " + shape_text(root.shape()) +
                  "; a gradient needs a scalar (take .sum() or .mean()) or a seed of that shape");
    g = Tensor::ones(root.shape(), r.dtype(), dev);
  }
  const std::vector<UOp>& topo = r.toposort();
  std::unordered_set<NodeP> on_path;
  for (const UOp& n : topo) {
    bool on = targets.count(n.get()) > 0;
    if (!on && n.op() != Op::DETACH && n.dtype().is_float())
      for (const UOp& s : n.src()) on = on || on_path.count(s.get());
    if (on) on_path.insert(n.get());
  }
  std::unordered_map<NodeP, Tensor> grads;
  if (on_path.count(r.get())) grads[r.get()] = g;
  const Tensor* keep[] = {&root};
  auto as_tensor = [&](const UOp& u) { return u.shape() ? Tensor::from_uop(u, dev, keep) : Tensor(); };
  for (auto it = topo.rbegin(); it != topo.rend(); ++it) {
    const UOp& n = *it;
    auto gi = grads.find(n.get());
    if (gi == grads.end()) continue;
    bool flows = false;
    for (const UOp& s : n.src()) flows = flows || on_path.count(s.get());
    if (!flows) continue;
    GradCtx ctx{gi->second, as_tensor(n), {}, {}};
    for (const UOp& s : n.src()) ctx.src.push_back(as_tensor(s));
    if (!derivatives().rewrite(n, &ctx))
      throw Error("gradient: " + std::string(ir::op_name(n.op())) + " has no derivative rule" +
                  (n.op() == Op::ASSIGN ? " (an indexed assign_at)" : "") + ", and the gradient flows through it: " + ir::to_inline(n, 120));
    for (size_t i = 0; i < n.src().size() && i < ctx.out.size(); ++i) {
      const UOp& s = n.src()[i];
      if (!ctx.out[i].defined() || !on_path.count(s.get())) continue;
      Tensor gs = reduce_to(ctx.out[i], *s.shape()).cast(s.dtype());
      auto [at, fresh] = grads.try_emplace(s.get(), gs);
      if (!fresh) at->second = at->second + gs;
    }
    if (!targets.count(n.get())) grads.erase(n.get());  // consumed
  }
  return grads;
}

}  // namespace

std::vector<Tensor> gradient(const Tensor& root, std::span<const Tensor> targets, const Tensor& seed) {
  Tensor groot = Autograd::graph_of(root);
  std::unordered_set<NodeP> nodes;
  std::vector<std::vector<NodeP>> candidates;
  for (const Tensor& t : targets) {
    if (!t.dtype().is_float()) throw Error("gradient: a target is " + t.dtype().name() + "; only float tensors have gradients");
    if (t.device() != root.device()) throw Error("gradient: a target is on " + t.device() + ", the root on " + root.device());
    std::vector<NodeP> c{t.uop().get()};
    if (const auto& gr = Autograd::node(t).graph) c.push_back(gr->uop.get());
    nodes.insert(c.begin(), c.end());
    candidates.push_back(std::move(c));
  }
  auto grads = backward_walk(groot, nodes, seed);
  std::vector<Tensor> out;
  for (size_t i = 0; i < targets.size(); ++i) {
    Tensor g;
    for (NodeP n : candidates[i])
      if (auto it = grads.find(n); it != grads.end()) g = g.defined() ? g + it->second : it->second;
    out.push_back(Autograd::as_gradient(g.defined() ? g : Tensor::zeros(targets[i].shape(), targets[i].dtype(), targets[i].device())));
  }
  return out;
}

Tensor& Tensor::set_requires_grad(bool on) {
  if (on && !dtype().is_float()) throw Error("set_requires_grad: only float tensors have gradients, this one is " + dtype().name());
  Autograd::set_requires_grad(*this, on);
  return *this;
}
bool Tensor::requires_grad() const { return Autograd::handle(*this).requires_grad; }
Tensor Tensor::grad() const { return Autograd::handle(*this).grad; }
void Tensor::set_grad(const Tensor& g) {
  if (g.defined() && (g.shape() != shape() || g.dtype() != dtype() || g.device() != device()))
    throw Error("set_grad: a gradient of " + g.dtype().name() + " " + shape_text(g.shape()) + " on " + g.device() + " for a tensor of " +
                dtype().name() + " " + shape_text(shape()) + " on " + device());
  Autograd::handle(*this).grad = g.defined() ? Autograd::as_gradient(g) : g;
}

Tensor Tensor::detach() const {
  const Tensor* keep[] = {this};
  return from_uop(UOp::make(Op::DETACH, dtype(), {uop()}), device(), keep);
}

void Tensor::backward(const Tensor& seed) const {
  Tensor groot = Autograd::graph_of(*this);
  auto live = Autograd::live_targets();
  std::unordered_set<NodeP> nodes;
  for (const UOp& n : groot.uop().toposort())
    if (live.count(n.get())) nodes.insert(n.get());
  if (nodes.empty())
    throw Error("backward: nothing in this tensor's graph requires a gradient (call set_requires_grad() on the parameters before using them)");
  auto grads = backward_walk(groot, nodes, seed);
  // One gradient per handle, even where it is two nodes (its graph and its buffer).
  std::unordered_map<Tensor::Handle*, Tensor> per_handle;
  for (NodeP n : nodes)
    for (const auto& h : live.at(n))
      if (auto it = grads.find(n); it != grads.end()) {
        Tensor& g = per_handle[h.get()];
        g = g.defined() ? g + it->second : it->second;
      }
  for (NodeP n : nodes)
    for (const auto& h : live.at(n)) {
      auto it = per_handle.find(h.get());
      if (it == per_handle.end()) continue;
      h->grad = Autograd::as_gradient(h->grad.defined() ? h->grad + it->second : it->second);
      per_handle.erase(it);
    }
}

}  // namespace ugpu::tensor
