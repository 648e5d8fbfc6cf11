// Optimizers and learning-rate schedules (docs/training.md).
//
//   optim::Adam opt(nn::parameters({{"l1", &l1}, {"l2", &l2}}), optim::LR::cosine(1e-3, 1000));
//   for (...) {
//     Tensor loss = nn::cross_entropy(model(x), y);
//     opt.zero_grad();
//     loss.backward();
//     opt.step({loss});   // one realize: gradients, the update of every parameter, and the loss
//   }
//
// Everything an update needs lives on the device: the step count is a tensor the update increments,
// and the learning rate and bias corrections are computed from it in the update's kernels. So a
// training step captured by a Jit replays with the schedule going on, and a checkpoint (state())
// holds all of it. Updates follow PyTorch's torch.optim formulas (LAMB: You et al. 2019, as
// tinygrad); parameters without a gradient are left as they are (their state too).
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "tensor/nn.h"
#include "tensor/tensor.h"

namespace ugpu::tensor::optim {

// The learning rate as a function of the step about to run (0-based), on the device.
struct LR {
  enum class Kind { Constant, Step, Cosine, Warmup };
  Kind kind = Kind::Constant;
  double lr = 1e-3;
  int64_t step_size = 1;  // Step: lr * gamma^(step / step_size)
  double gamma = 1;
  int64_t total = 1;  // Cosine: from lr to min_lr over `total` steps (then min_lr), as CosineAnnealingLR
  double min_lr = 0;
  int64_t warmup = 1;  // Warmup: lr * min(1, (step + 1) / warmup)

  static LR constant(double lr) { return {Kind::Constant, lr}; }
  static LR step(double lr, int64_t step_size, double gamma) { return {Kind::Step, lr, step_size, gamma}; }
  static LR cosine(double lr, int64_t total, double min_lr = 0) { return {Kind::Cosine, lr, 1, 1, total, min_lr}; }
  static LR linear_warmup(double lr, int64_t warmup) { return {Kind::Warmup, lr, 1, 1, 1, 0, warmup}; }
  Tensor at(const Tensor& step) const;  // step: an int32 scalar tensor; a float32 scalar
  double at(int64_t step) const;        // the same on the host
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // Every parameter's gradient dropped (the next backward starts from none).
  void zero_grad();
  // The update of every parameter that has a gradient, as lazy assigns, with the step count's; the
  // tensors to realize for it (these, the gradients they read, and the optimizer's state).
  std::vector<Tensor> schedule_step();
  // schedule_step() and one realize of it with `also` (a loss to read, BatchNorm running statistics).
  void step(std::vector<Tensor> also = {});

  const std::vector<Tensor>& params() const { return params_; }
  int64_t steps() const;  // read back from the device
  // The step count and every state tensor, named "step", "<slot>.<parameter name>" (checkpoints).
  nn::Params state() const;
  LR schedule;

 protected:
  Optimizer(const nn::Params& params, LR lr, std::vector<std::string> slots);
  Optimizer(std::span<const Tensor> params, LR lr, std::vector<std::string> slots);
  // Assigns parameter i (and its slots) from gradient g; lr is this step's rate and t the 1-based step
  // number, float32 scalars.
  virtual void update(size_t i, const Tensor& g, const Tensor& lr, const Tensor& t) = 0;
  Tensor& slot(size_t s, size_t i) { return slots_[s][i]; }

  std::vector<std::string> names_;
  std::vector<Tensor> params_;

 private:
  void init(LR lr, std::vector<std::string> slots);
  Tensor steps_;  // int32 scalar: the steps taken
  std::vector<std::string> slot_names_;
  std::vector<std::vector<Tensor>> slots_;  // [slot][parameter], zeros at first
};

// torch.optim.SGD: weight decay added to the gradient, momentum (the first step's buffer is the
// gradient), dampening, Nesterov.
class SGD : public Optimizer {
 public:
  struct Options {
    double momentum = 0, dampening = 0, weight_decay = 0;
    bool nesterov = false;
  };
  SGD(const nn::Params& params, LR lr, Options o);
  SGD(std::span<const Tensor> params, LR lr, Options o);
  SGD(const nn::Params& params, LR lr) : SGD(params, lr, Options{}) {}
  SGD(std::span<const Tensor> params, LR lr) : SGD(params, lr, Options{}) {}

 private:
  void update(size_t i, const Tensor& g, const Tensor& lr, const Tensor& t) override;
  Options o_;
};

struct AdamOptions {
  double b1 = 0.9, b2 = 0.999, eps = 1e-8, weight_decay = 0;
};

// torch.optim.Adam (weight decay added to the gradient) and, with decoupled = true,
// torch.optim.AdamW (the parameter shrunk by lr * weight_decay first; default weight decay 0.01).
class Adam : public Optimizer {
 public:
  Adam(const nn::Params& params, LR lr, AdamOptions o = {}, bool decoupled = false);
  Adam(std::span<const Tensor> params, LR lr, AdamOptions o = {}, bool decoupled = false);

 private:
  void update(size_t i, const Tensor& g, const Tensor& lr, const Tensor& t) override;
  AdamOptions o_;
  bool decoupled_;
};
inline AdamOptions adamw_defaults() { return {0.9, 0.999, 1e-8, 0.01}; }
class AdamW : public Adam {
 public:
  AdamW(const nn::Params& params, LR lr, AdamOptions o = adamw_defaults()) : Adam(params, lr, o, true) {}
  AdamW(std::span<const Tensor> params, LR lr, AdamOptions o = adamw_defaults()) : Adam(params, lr, o, true) {}
};

// LAMB: Adam's step (bias-corrected) plus weight_decay * p, scaled per parameter by the trust ratio
// ||p|| / ||step|| (1 where either is 0). Default eps 1e-6.
class LAMB : public Optimizer {
 public:
  LAMB(const nn::Params& params, LR lr, AdamOptions o = {0.9, 0.999, 1e-6, 0});
  LAMB(std::span<const Tensor> params, LR lr, AdamOptions o = {0.9, 0.999, 1e-6, 0});

 private:
  void update(size_t i, const Tensor& g, const Tensor& lr, const Tensor& t) override;
  AdamOptions o_;
};

// The gradients of `params` scaled so that their global L2 norm is at most max_norm (scale
// min(1, max_norm / (norm + 1e-6)), as torch.nn.utils.clip_grad_norm_), lazily; returns the norm
// before clipping. Parameters without a gradient are skipped.
Tensor clip_grad_norm(std::span<const Tensor> params, double max_norm);

}  // namespace ugpu::tensor::optim
