// Optimizers and learning-rate schedules (tensor/optim.h).
#include "tensor/optim.h"

#include <cmath>

#include "common/error.h"
#include "tensor/grad.h"

namespace ugpu::tensor::optim {

namespace {
Tensor zeros_like(const Tensor& t) {
  Tensor z = Tensor::zeros(t.shape(), t.dtype(), t.device()).contiguous();
  return z.realize();
}
Tensor scalar(double v, const Tensor& like) { return Tensor::full({}, v, dtypes::float32, like.device()); }
}  // namespace

// ---- schedules -------------------------------------------------------------------------------------

Tensor LR::at(const Tensor& step) const {
  Tensor s = step.cast(dtypes::float32);
  switch (kind) {
    case Kind::Constant: return scalar(lr, step);
    case Kind::Step: return scalar(gamma, step).pow((s / static_cast<double>(step_size)).floor()) * lr;
    case Kind::Cosine: {
      Tensor t = s.minimum(scalar(static_cast<double>(total), step));
      return ((t * (M_PI / static_cast<double>(total))).cos() + 1.0) * ((lr - min_lr) / 2) + min_lr;
    }
    case Kind::Warmup: return ((s + 1.0) / static_cast<double>(warmup)).minimum(scalar(1, step)) * lr;
  }
  throw Error("LR: unknown schedule kind");
}

double LR::at(int64_t step) const {
  double s = static_cast<double>(step);
  switch (kind) {
    case Kind::Constant: return lr;
    case Kind::Step: return lr * std::pow(gamma, std::floor(s / static_cast<double>(step_size)));
    case Kind::Cosine:
      return min_lr + (lr - min_lr) * (1 + std::cos(M_PI * std::min(s, static_cast<double>(total)) / static_cast<double>(total))) / 2;
    case Kind::Warmup: return lr * std::min(1.0, (s + 1) / static_cast<double>(warmup));
  }
  throw Error("LR: unknown schedule kind");
}

// ---- the common part ----------------------------------------------------------------------------------

Optimizer::Optimizer(const nn::Params& params, LR lr, std::vector<std::string> slots) {
  for (const auto& [n, t] : params)
    if (t.defined() && t.requires_grad()) names_.push_back(n), params_.push_back(t);
  init(lr, std::move(slots));
}
Optimizer::Optimizer(std::span<const Tensor> params, LR lr, std::vector<std::string> slots) {
  for (size_t i = 0; i < params.size(); ++i) {
    if (!params[i].requires_grad()) throw Error("optimizer: parameter " + std::to_string(i) + " does not require a gradient (set_requires_grad())");
    names_.push_back(std::to_string(i)), params_.push_back(params[i]);
  }
  init(lr, std::move(slots));
}

void Optimizer::init(LR lr, std::vector<std::string> slots) {
  if (params_.empty()) throw Error("optimizer: no parameters that require gradients");
  if (lr.kind == LR::Kind::Step && lr.step_size < 1) throw Error("LR::step: step_size must be at least 1");
  if (lr.kind == LR::Kind::Cosine && lr.total < 1) throw Error("LR::cosine: total must be at least 1");
  if (lr.kind == LR::Kind::Warmup && lr.warmup < 1) throw Error("LR::linear_warmup: warmup must be at least 1");
  schedule = lr;
  for (const Tensor& p : params_)
    if (p.device() != params_[0].device()) throw Error("optimizer: parameters on " + params_[0].device() + " and " + p.device());
  steps_ = Tensor::zeros({}, dtypes::int32, params_[0].device()).contiguous();
  steps_.realize();
  slot_names_ = std::move(slots);
  for (size_t s = 0; s < slot_names_.size(); ++s) {
    slots_.emplace_back();
    for (const Tensor& p : params_) slots_.back().push_back(zeros_like(p));
  }
}

void Optimizer::zero_grad() {
  for (Tensor& p : params_) p.set_grad({});
}

std::vector<Tensor> Optimizer::schedule_step() {
  NoGrad no;
  Tensor t = (steps_ + 1).cast(dtypes::float32);
  Tensor lr = schedule.at(steps_);
  std::vector<Tensor> out;
  for (size_t i = 0; i < params_.size(); ++i) {
    Tensor g = params_[i].grad();
    if (!g.defined()) continue;
    update(i, g, lr, t);
    out.push_back(params_[i]);
    for (auto& s : slots_) out.push_back(s[i]);
    out.push_back(g);
  }
  steps_.assign(steps_ + 1);
  out.push_back(steps_);
  return out;
}

void Optimizer::step(std::vector<Tensor> also) {
  std::vector<Tensor> ts = schedule_step();
  ts.insert(ts.end(), also.begin(), also.end());
  Tensor::realize(ts);
}

int64_t Optimizer::steps() const { return static_cast<int64_t>(steps_.item()); }

nn::Params Optimizer::state() const {
  nn::Params p{{"step", steps_}};
  for (size_t s = 0; s < slots_.size(); ++s)
    for (size_t i = 0; i < params_.size(); ++i) p.push_back({slot_names_[s] + "." + names_[i], slots_[s][i]});
  return p;
}

// ---- the optimizers ----------------------------------------------------------------------------------

namespace {
std::vector<std::string> sgd_slots(const SGD::Options& o) {
  if (o.nesterov && (o.momentum <= 0 || o.dampening != 0)) throw Error("SGD: Nesterov momentum needs a momentum and zero dampening");
  return o.momentum != 0 ? std::vector<std::string>{"momentum_buffer"} : std::vector<std::string>{};
}
// 1 - b^t for the bias corrections.
Tensor correction(double b, const Tensor& t) { return 1.0 - scalar(b, t).pow(t); }
void check(const AdamOptions& o, const char* who) {
  if (o.b1 < 0 || o.b1 >= 1 || o.b2 < 0 || o.b2 >= 1) throw Error(std::string(who) + ": betas must be in [0, 1)");
  if (o.eps < 0) throw Error(std::string(who) + ": eps must not be negative");
}
}  // namespace

SGD::SGD(const nn::Params& params, LR lr, Options o) : Optimizer(params, lr, sgd_slots(o)), o_(o) {}
SGD::SGD(std::span<const Tensor> params, LR lr, Options o) : Optimizer(params, lr, sgd_slots(o)), o_(o) {}

void SGD::update(size_t i, const Tensor& g, const Tensor& lr, const Tensor& t) {
  Tensor& p = params_[i];
  Tensor d = o_.weight_decay != 0 ? g + p * o_.weight_decay : g;
  if (o_.momentum != 0) {
    Tensor& buf = slot(0, i);
    buf.assign(t.eq(scalar(1, t)).where(d, buf * o_.momentum + d * (1 - o_.dampening)));
    d = o_.nesterov ? d + buf * o_.momentum : buf;
  }
  p.assign(p - lr * d);
}

Adam::Adam(const nn::Params& params, LR lr, AdamOptions o, bool decoupled)
    : Optimizer(params, lr, {"exp_avg", "exp_avg_sq"}), o_(o), decoupled_(decoupled) {
  check(o, decoupled ? "AdamW" : "Adam");
}
Adam::Adam(std::span<const Tensor> params, LR lr, AdamOptions o, bool decoupled)
    : Optimizer(params, lr, {"exp_avg", "exp_avg_sq"}), o_(o), decoupled_(decoupled) {
  check(o, decoupled ? "AdamW" : "Adam");
}

void Adam::update(size_t i, const Tensor& g, const Tensor& lr, const Tensor& t) {
  Tensor& p = params_[i];
  Tensor& m = slot(0, i);
  Tensor& v = slot(1, i);
  Tensor d = !decoupled_ && o_.weight_decay != 0 ? g + p * o_.weight_decay : g;
  m.assign(m * o_.b1 + d * (1 - o_.b1));
  v.assign(v * o_.b2 + d.square() * (1 - o_.b2));
  Tensor base = decoupled_ && o_.weight_decay != 0 ? p * (1.0 - lr * o_.weight_decay) : p;
  Tensor denom = v.sqrt() / correction(o_.b2, t).sqrt() + o_.eps;
  p.assign(base - (lr / correction(o_.b1, t)) * m / denom);
}

LAMB::LAMB(const nn::Params& params, LR lr, AdamOptions o) : Optimizer(params, lr, {"exp_avg", "exp_avg_sq"}), o_(o) { check(o, "LAMB"); }
LAMB::LAMB(std::span<const Tensor> params, LR lr, AdamOptions o) : Optimizer(params, lr, {"exp_avg", "exp_avg_sq"}), o_(o) { check(o, "LAMB"); }

void LAMB::update(size_t i, const Tensor& g, const Tensor& lr, const Tensor& t) {
  Tensor& p = params_[i];
  Tensor& m = slot(0, i);
  Tensor& v = slot(1, i);
  m.assign(m * o_.b1 + g * (1 - o_.b1));
  v.assign(v * o_.b2 + g.square() * (1 - o_.b2));
  Tensor up = (m / correction(o_.b1, t)) / ((v / correction(o_.b2, t)).sqrt() + o_.eps);
  if (o_.weight_decay != 0) up = up + p * o_.weight_decay;
  Tensor pn = p.cast(dtypes::float32).square().sum().sqrt(), un = up.cast(dtypes::float32).square().sum().sqrt();
  Tensor zero = scalar(0, t);
  Tensor ratio = pn.gt(zero).bitwise_and(un.gt(zero)).where(pn / un, 1.0);
  p.assign(p - lr * ratio * up);
}

Tensor clip_grad_norm(std::span<const Tensor> params, double max_norm) {
  NoGrad no;
  Tensor total;
  for (const Tensor& p : params) {
    Tensor g = p.grad();
    if (!g.defined()) continue;
    Tensor s = g.cast(dtypes::float32).square().sum();
    total = total.defined() ? total + s : s;
  }
  if (!total.defined()) throw Error("clip_grad_norm: no parameter has a gradient");
  total = total.sqrt();
  Tensor scale = (max_norm / (total + 1e-6)).minimum(scalar(1, total));
  for (const Tensor& p : params) {
    Tensor g = p.grad();
    if (!g.defined()) continue;
    Tensor q = p;
    q.set_grad((g * scale).cast(g.dtype()));
  }
  return total;
}

}  // namespace ugpu::tensor::optim
