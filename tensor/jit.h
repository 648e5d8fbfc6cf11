// Jit (docs/tensor.md): a function of tensors, captured once and replayed as an HCQ Graph.
//
// The first call runs the function as usual. The second runs it again while recording every kernel
// its realizes launch, with which arguments are the inputs' buffers and which are variables; from
// then on a call checks the inputs against the capture, and replays the recorded kernels with the new
// input buffers and variable values patched in: no tensor graph is built, nothing is scheduled or
// compiled, and the host's cost does not depend on how many kernels run.
//
//   Jit step([](const std::vector<Tensor>& in, const Jit::Vars& v) {
//     Tensor pos = Tensor::variable("pos", 0, 1023, v.at("pos"));
//     return std::vector<Tensor>{(in[0] * pos.cast(dtypes::float32)).sum()};
//   });
//   for (int64_t p = 0; p < 10; ++p) Tensor y = step({x}, {{"pos", p}})[0];
//
// The outputs of a replay live in the same buffers every call: a result kept across calls must be
// copied (y.contiguous().realize(), or read back). The function must build the same graph on every
// call, up to the inputs' data and the variables' values (shapes, dtypes and the ops themselves are
// what was captured).
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tensor/tensor.h"

namespace ugpu::tensor {

class Jit {
 public:
  using Vars = std::map<std::string, int64_t>;
  using Function = std::function<std::vector<Tensor>(const std::vector<Tensor>&, const Vars&)>;
  explicit Jit(Function f);
  ~Jit();
  Jit(const Jit&) = delete;
  Jit& operator=(const Jit&) = delete;

  std::vector<Tensor> operator()(const std::vector<Tensor>& inputs, const Vars& vars = {});
  bool captured() const;
  size_t kernels() const;  // in the capture
  size_t calls() const { return calls_; }

 private:
  struct State;
  Function f_;
  std::unique_ptr<State> s_;
  size_t calls_ = 0;
};

}  // namespace ugpu::tensor
