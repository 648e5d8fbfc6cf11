// Jit capture and replay (tensor/jit.h).
#include "tensor/jit.h"

#include <algorithm>

#include "common/error.h"
#include "hcq/graph.h"
#include "schedule/schedule.h"
#include "tensor/lazy.h"

namespace ugpu::tensor {

namespace {

int64_t buffer_id(const Tensor& t) {
  if (!schedule::is_buffer_view(t.uop())) throw Error("Jit: an input or output is not a realized buffer");
  return schedule::view_buffer_id(t.uop());
}

// Ensures the capture guard is cleared however the captured call ends.
struct CaptureScope {
  explicit CaptureScope(Capture* c) { set_capture(c); }
  ~CaptureScope() { set_capture(nullptr); }
};

}  // namespace

struct Jit::State {
  Capture cap;
  std::vector<Shape> shapes;
  std::vector<DType> dtypes;
  std::vector<std::string> devices;
  std::vector<std::string> var_names;
  std::map<std::string, std::pair<int64_t, int64_t>> bounds;
  std::vector<Tensor> outputs;
  hcq::Graph graph;
};

Jit::Jit(Function f) : f_(std::move(f)) {}
Jit::~Jit() = default;
bool Jit::captured() const { return s_ != nullptr; }
size_t Jit::kernels() const { return s_ ? s_->cap.kernels.size() : 0; }

std::vector<Tensor> Jit::operator()(const std::vector<Tensor>& inputs, const Vars& vars) {
  std::vector<Tensor> in = inputs;
  Tensor::realize(in);
  ++calls_;
  if (calls_ == 1) {  // eager: whatever the first call compiles and allocates is warm for the capture
    std::vector<Tensor> out = f_(in, vars);
    Tensor::realize(out);
    return out;
  }
  if (!s_) {
    auto s = std::make_unique<State>();
    std::vector<Tensor> out;
    {
      CaptureScope scope(&s->cap);
      out = f_(in, vars);
      Tensor::realize(out);
    }
    std::map<int64_t, int> input_slot;
    for (size_t i = 0; i < in.size(); ++i) {
      s->shapes.push_back(in[i].shape());
      s->dtypes.push_back(in[i].dtype());
      s->devices.push_back(in[i].device());
      input_slot.emplace(buffer_id(in[i]), static_cast<int>(i));
    }
    for (const auto& [name, value] : vars) s->var_names.push_back(name);
    for (const Capture::Kernel& k : s->cap.kernels) {
      std::vector<hcq::Val> args;
      for (const Capture::Arg& a : k.args) {
        if (a.buffer >= 0) {
          auto it = input_slot.find(a.buffer);
          args.push_back(it != input_slot.end() ? hcq::Val::variable(it->second) : hcq::Val(s->cap.buffers.at(a.buffer).va));
          continue;
        }
        auto [b, fresh] = s->bounds.try_emplace(a.var, a.min, a.max);
        b->second = {std::max(b->second.first, a.min), std::min(b->second.second, a.max)};
        auto v = std::find(s->var_names.begin(), s->var_names.end(), a.var);
        if (v == s->var_names.end()) throw Error("Jit: the function bound variable '" + a.var + "' without taking it from the call's variables");
        args.push_back(hcq::Val::variable(static_cast<int>(in.size() + static_cast<size_t>(v - s->var_names.begin()))));
      }
      s->graph.exec(*k.dev, k.prog, args);
    }
    for (const Tensor& o : out)
      if (input_slot.count(buffer_id(o)))
        throw Error("Jit: an output is one of the inputs (a replay would return the captured input); return a computed tensor, e.g. x.contiguous()");
    s->outputs = out;
    s_ = std::move(s);
    return out;
  }
  if (in.size() != s_->shapes.size())
    throw Error("Jit: called with " + std::to_string(in.size()) + " inputs; it was captured with " + std::to_string(s_->shapes.size()));
  std::vector<uint64_t> values;
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i].shape() != s_->shapes[i] || in[i].dtype() != s_->dtypes[i] || in[i].device() != s_->devices[i])
      throw Error("Jit: input " + std::to_string(i) + " is " + in[i].dtype().name() + " " + shape_text(in[i].shape()) + " on " + in[i].device() +
                  "; it was captured as " + s_->dtypes[i].name() + " " + shape_text(s_->shapes[i]) + " on " + s_->devices[i] +
                  " (a Jit replays one shape: make another Jit for another)");
    values.push_back(find_buffer(buffer_id(in[i]))->buf.va);
  }
  for (const std::string& name : s_->var_names) {
    auto it = vars.find(name);
    if (it == vars.end()) throw Error("Jit: variable '" + name + "' was given at capture and is missing now");
    if (auto b = s_->bounds.find(name); b != s_->bounds.end() && (it->second < b->second.first || it->second > b->second.second))
      throw Error("Jit: variable '" + name + "' = " + std::to_string(it->second) + " is outside its bounds [" + std::to_string(b->second.first) +
                  ", " + std::to_string(b->second.second) + "]");
    values.push_back(static_cast<uint64_t>(it->second));
  }
  if (vars.size() != s_->var_names.size()) throw Error("Jit: called with variables the capture did not have");
  if (s_->graph.nodes()) s_->graph.replay(values);
  return s_->outputs;
}

}  // namespace ugpu::tensor
