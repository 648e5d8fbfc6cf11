// Autograd (docs/training.md): gradients as lazy tensors, made by walking the tensor graph backwards
// with one derivative rule per op (the table `derivatives` in grad.cpp, a PatternMatcher like every
// other rewrite). The gradients are graphs over the forward's nodes, so the scheduler fuses them with
// the forward wherever the two are realized together.
//
//   Tensor w = Tensor::randn({10, 4}, 1).set_requires_grad();
//   Tensor loss = x.linear(w).relu().sum();
//   loss.backward();                  // w.grad() is d loss / d w (lazy)
//   std::vector<Tensor> g = gradient(loss, {w});   // the same, without touching w.grad()
//
// The rules follow PyTorch's definitions, with these choices written down:
// - maximum/minimum (and so relu and clip) split the gradient equally between equal operands; a
//   max/min reduction shares it equally among the elements equal to the maximum (as torch.amax).
// - floor, ceil, trunc, round, sign, comparisons and integer ops have zero gradient.
// - pow: d/dx at x = 0 with exponent 0 is 0; d/dexponent at x = 0 with exponent >= 0 is 0.
// - A gather or embedding scatters its gradient back, summing where indices repeat; out-of-range
//   indices (which read 0) get none.
// - A whole-tensor assign passes the gradient to the value assigned; an indexed assign (assign_at)
//   has no rule, and a gradient through it is an Error naming it.
#pragma once
#include <span>
#include <vector>

#include "tensor/tensor.h"

namespace ugpu::tensor {

// d root / d target for each target, as lazy tensors of the targets' shapes and dtypes (zeros where
// root does not depend on a target). root must have one element unless `seed` (root's shape) is its
// gradient. Targets must be float tensors; gradients do not flow through detach() or NoGrad results.
std::vector<Tensor> gradient(const Tensor& root, std::span<const Tensor> targets, const Tensor& seed = {});
inline std::vector<Tensor> gradient(const Tensor& root, std::initializer_list<Tensor> targets, const Tensor& seed = {}) {
  return gradient(root, std::span<const Tensor>(targets.begin(), targets.size()), seed);
}

// While one lives (on this thread), the results of tensor operations are detached: no gradient
// flows through them (an optimizer's update, evaluation). Scopes nest.
class NoGrad {
 public:
  NoGrad();
  ~NoGrad();
  NoGrad(const NoGrad&) = delete;
  NoGrad& operator=(const NoGrad&) = delete;

 private:
  bool prev_;
};
bool grad_enabled();  // false inside a NoGrad scope

}  // namespace ugpu::tensor
