// The default optimizer: actions chosen from the kernel's shape and its memory accesses, per target,
// without running anything (codegen/opt/opt.h). In order:
//   0. GPU, a sum of half or bfloat16 products that a tensor core of the target takes (TC; never
//      tf32, which rounds float32 inputs): it runs there, with 2x2 instructions per wave (UPCAST) so
//      each fragment serves two, and up to 4 waves per workgroup (LOCAL); nothing else applies.
//   1. GPU, a reduction with few outputs (norms, softmax rows), or a long one with up to 65536
//      (matrix-vector products): the work-items of a workgroup share each reduction (GROUP),
//      reading neighbouring elements side by side.
//   2. A reduction: register blocking. Output axes along which some load does not move are UPCAST,
//      so each loaded value serves several outputs; the contiguous one first, so its loads and stores
//      become vectors. A matmul's block is 4x4 on GPUs and half the vector registers on the CPU (16x16
//      floats in 16 zmm registers with AVX-512, 8x8 in 8 ymm with AVX2).
//      On the CPU, when the loads are contiguous along the reduction and along no output axis (x @
//      W^T, matrix-vector products), vector accumulators along the reduction instead (LANES, a
//      register wide; a matmul with several reductions shares the copies: half a register and a 2x2
//      block) and a 4x4 block; nothing else.
//   3. The innermost reduce axis is UNROLLed: fully when short, else by 4.
//   4. Nothing upcast yet (elementwise kernels): the axis contiguous in the stores by 4, for vector
//      accesses.
//   5. GPU: output axes become work-items (LOCAL), the contiguous one first, up to the target's
//      default workgroup size.
#include <algorithm>

#include "codegen/opt/opt.h"
#include "codegen/passes.h"

namespace ugpu::codegen::opt {
using namespace ir;
namespace {

class Chooser {
 public:
  Chooser(const UOp& sink, const Target& t) : s_(sink), t_(t) {}

  // Applies `o` when it is legal and `accept` (if given) takes the result.
  bool apply(const Opt& o, const std::function<bool(const UOp&)>& accept = {}) {
    UOp next;
    try {
      next = apply_opt(s_, o, t_);
    } catch (const OptError&) { return false; }
    if (accept && !accept(next)) return false;
    s_ = next;
    opts_.push_back(o);
    return true;
  }
  const UOp& kernel() const { return s_; }
  std::vector<Opt> take() { return std::move(opts_); }

 private:
  UOp s_;
  const Target& t_;
  std::vector<Opt> opts_;
};

// Product of the constant output sizes; a variable size counts as large.
int64_t output_size(const std::vector<Axis>& axes) {
  int64_t p = 1;
  for (const Axis& a : axes)
    if (is_output(a.type) || a.type == AxisType::UPCAST || a.type == AxisType::LOCAL) p *= a.size < 0 ? 1 << 20 : a.size;
  return p;
}

int64_t copies(const std::vector<Axis>& axes) { return product_of(axes, {AxisType::UPCAST, AxisType::UNROLL}); }

// The innermost (highest id) reduce axis with a constant size.
const Axis* last_reduce(const std::vector<Axis>& axes) {
  const Axis* r = nullptr;
  for (const Axis& a : axes)
    if (a.type == AxisType::REDUCE && a.size > 0) r = &a;
  return r;
}

bool lanes_along_reduction(Chooser& c, const std::vector<Axis>& axes, const Target& t) {
  std::vector<Access> acc = kernel_accesses(c.kernel(), axes);
  auto reused = [](const std::vector<Access>& a, size_t k) {
    return std::any_of(a.begin(), a.end(), [&](const Access& x) { return !x.store && x.stride[k] == 0; });
  };
  int64_t reductions = 0, block_axes = 0;
  for (const UOp& u : c.kernel().toposort()) reductions += u.op() == Op::REDUCE;
  for (size_t k = 0; k < axes.size(); ++k) block_axes += is_output(axes[k].type) && axes[k].size % 2 == 0 && axes[k].size > 1 && reused(acc, k);
  // A matmul (two output axes to block) with several reductions (a fused gate and up projection)
  // shares the 256 unrolled copies: each reduction gets a register's share of lanes and the block is
  // 2x2. A matrix-vector product keeps whole registers: it is bound by memory, not by registers.
  int64_t register_lanes = t.vector_bytes() / 4, step = 4;
  if (block_axes >= 2 && reductions > 1) {
    step = 2;
    for (int64_t r = reductions; r > 1 && register_lanes > 4; r /= 2) register_lanes /= 2;
  }
  // As wide as that, or narrower where the axis is short (a 16-element quantization group).
  auto lanes_for = [&](int64_t size) {
    int64_t n = register_lanes;
    while (n >= 4 && (size % n != 0 || size / n < 2)) n /= 2;
    return n >= 4 ? n : int64_t{0};
  };
  // Each reduction's innermost reduce axis.
  std::vector<const Axis*> inner;
  for (const UOp& u : c.kernel().toposort()) {
    if (u.op() != Op::REDUCE) continue;
    if (u.arg_as<Op>() != Op::ADD || (u.dtype() != dtypes::float32 && u.dtype() != dtypes::float64)) return false;
    const Axis* r = nullptr;
    for (const Axis& a : axes)
      if (a.type == AxisType::REDUCE && closes(u, a.range)) r = &a;
    if (!r || r->size < 0 || lanes_for(r->size) == 0) return false;
    if (std::find(inner.begin(), inner.end(), r) == inner.end()) inner.push_back(r);
  }
  if (inner.empty()) return false;
  bool along_reduce = false;
  for (const Access& x : acc) {
    if (x.store) continue;
    for (const Axis* r : inner) along_reduce |= x.stride[static_cast<size_t>(r - axes.data())] == 1;
    for (size_t k = 0; k < axes.size(); ++k)
      if (is_output(axes[k].type) && x.stride[k] == 1) return false;
  }
  if (!along_reduce) return false;
  for (const Axis* r : inner)
    if (!c.apply({OptOp::LANES, r->id, lanes_for(r->size)})) return false;
  int blocked = 0;
  std::vector<Axis> now = kernel_axes(c.kernel());
  std::vector<Access> acc2 = kernel_accesses(c.kernel(), now);
  for (size_t k = now.size(); k-- > 0 && blocked < 2;)
    if (is_output(now[k].type) && now[k].size % step == 0 && reused(acc2, k) && c.apply({OptOp::UPCAST, now[k].id, step})) ++blocked;
  return true;
}

}  // namespace

std::vector<Opt> heuristic_opts(const UOp& sink, const Target& t) {
  if (hand_optimized(sink)) return {};
  Chooser c(sink, t);
  std::vector<Axis> axes = kernel_axes(sink);
  bool reduces = last_reduce(axes) != nullptr;

  // 0. Tensor cores, but none that rounds its inputs (tf32).
  auto exact = [](const UOp& k) { return !kernel_tensor_core(k)->rounds_inputs; };
  if (t.gpu() && reduces && c.apply({OptOp::TC, last_reduce(axes)->id, 0}, exact)) {
    axes = kernel_axes(c.kernel());
    int upcast = 0, waves = 1;
    for (size_t k = axes.size(); k-- > 0 && upcast < 2;)
      if (is_output(axes[k].type) && axes[k].size % 2 == 0 && c.apply({OptOp::UPCAST, axes[k].id, 2})) ++upcast;
    axes = kernel_axes(c.kernel());
    for (size_t k = axes.size(); k-- > 0 && waves < 4;)
      if (axes[k].type == AxisType::GLOBAL && axes[k].size % 2 == 0 && axes[k].size >= 4 && c.apply({OptOp::LOCAL, axes[k].id, 2})) waves *= 2;
    return c.take();
  }

  // 1. A workgroup shares each reduction when there are too few outputs to fill the GPU: widely for
  //    up to 2048 outputs, by 16 or 8 work-items for a long reduction with up to 65536 (a model's
  //    matrix-vector products: 4096 rows of 4096 would otherwise be 1024 work-items, each looping
  //    4096 times).
  if (t.gpu() && reduces) {
    const Axis* r = last_reduce(axes);
    int64_t outputs = output_size(axes);
    std::initializer_list<int64_t> few = {64, 32, 16, 8}, many = {16, 8};
    if (r->size >= 64 && (outputs <= 2048 || (outputs <= 65536 && r->size >= 1024)))
      for (int64_t amt : outputs <= 2048 ? few : many)
        if (r->size % amt == 0 && r->size / amt >= 2 && c.apply({OptOp::GROUP, r->id, amt})) break;
  }

  // 2a. CPU, a float sum whose loads are contiguous along the reduction and along no output axis
  //     (x @ W^T, a matrix-vector product): vector accumulators along the reduction (LANES, one
  //     register wide), and a 4x4 block of the output axes that some load does not move along.
  if (!t.gpu() && reduces && lanes_along_reduction(c, axes, t)) return c.take();

  // 2. Register blocking: upcast output axes that some load does not move along.
  if (reduces) {
    // Accumulators in half the vector registers: 16 of AVX-512's 32, 8 of AVX2's 16.
    const int64_t lanes = t.vector_bytes() / 4, limit = t.gpu() ? 16 : (t.vector_bytes() >= 64 ? 16 : 8) * lanes;
    std::vector<int64_t> blocked;  // each axis once: a second split of one axis only lengthens its stride
    for (int round = 0; round < 2; ++round) {
      axes = kernel_axes(c.kernel());
      std::vector<Access> acc = kernel_accesses(c.kernel(), axes);
      const Axis* best = nullptr;
      int64_t best_reuse = 0, best_contig = 0;
      for (size_t k = 0; k < axes.size(); ++k) {
        const Axis& a = axes[k];
        if (!is_output(a.type) || a.size < 0 || a.size % 4 != 0 || std::find(blocked.begin(), blocked.end(), a.id) != blocked.end()) continue;
        int64_t reuse = 0, contig = 0;
        for (const Access& x : acc) {
          if (!x.store && x.stride[k] == 0) ++reuse;
          if (x.stride[k] == 1) ++contig;
        }
        if (reuse == 0) continue;
        if (!best || contig > best_contig || (contig == best_contig && reuse > best_reuse)) best = &a, best_reuse = reuse, best_contig = contig;
      }
      if (!best) break;
      // On the CPU a contiguous axis goes as wide as a vector register (16 floats with AVX-512), and
      // the other as far as the accumulators allow.
      int64_t amt = 4;
      for (int64_t w = t.gpu() ? 4 : best_contig > 0 ? std::min<int64_t>(16, lanes) : 16; w > 4; w /= 2)
        if (best->size % w == 0 && copies(axes) * w <= limit) {
          amt = w;
          break;
        }
      if (copies(axes) * amt > limit || !c.apply({OptOp::UPCAST, best->id, amt})) break;
      blocked.push_back(best->id);
    }
  }

  // 3. Unroll the innermost reduce axis.
  axes = kernel_axes(c.kernel());
  if (const Axis* r = last_reduce(axes)) {
    if (r->size <= 8 && copies(axes) * r->size <= 64) c.apply({OptOp::UNROLL, r->id, r->size});
    else if (r->size % 4 == 0 && copies(axes) * 4 <= 64) c.apply({OptOp::UNROLL, r->id, 4});
  }

  // 4. Elementwise: vector accesses along the axis the stores are contiguous in.
  axes = kernel_axes(c.kernel());
  if (copies(axes) == 1) {
    std::vector<Access> acc = kernel_accesses(c.kernel(), axes);
    for (size_t k = axes.size(); k-- > 0;) {
      const Axis& a = axes[k];
      bool contiguous_store = std::any_of(acc.begin(), acc.end(), [&](const Access& x) { return x.store && x.stride[k] == 1; });
      if (is_output(a.type) && a.size > 0 && a.size % 4 == 0 && contiguous_store) {
        c.apply({OptOp::UPCAST, a.id, 4});
        break;
      }
    }
  }

  // 5. GPU: work-items from the output axes, the contiguous (innermost) first.
  if (t.gpu()) {
    int64_t budget = t.default_local;
    axes = kernel_axes(c.kernel());
    for (const Axis& a : axes) budget /= a.type == AxisType::LOCAL || a.type == AxisType::GROUP_REDUCE ? std::max<int64_t>(a.size, 1) : 1;
    int used = 0;
    for (size_t k = axes.size(); k-- > 0 && used < 2;) {
      const Axis& a = axes[k];
      if (a.type != AxisType::GLOBAL || a.size < 2) continue;
      for (int64_t amt : {32, 16, 8, 4, 2})
        if (amt <= budget && a.size % amt == 0 && c.apply({OptOp::LOCAL, a.id, amt})) {
          budget /= amt, ++used;
          break;
        }
    }
  }
  return c.take();
}

}  // namespace ugpu::codegen::opt
