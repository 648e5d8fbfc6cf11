// What a Tensor handle points at (tensor/tensor.h): the graph node, the device, and what keeps the
// buffers its graph reads alive. Shared by tensor.cpp (graph building) and realize.cpp (running).
#pragma once
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "hcq/device.h"
#include "tensor/tensor.h"

namespace ugpu::tensor {

// A buffer a tensor graph reads through a BUFFER node with this id. Registered by id while alive, so
// the scheduler's kernels can be bound to memory.
struct BufferState {
  int64_t id;
  std::string device;
  hcq::Buffer buf;
  DType dtype;
  int64_t count;
  ~BufferState();
};
// id < 0: a fresh id.
std::shared_ptr<BufferState> new_buffer(const std::string& device, DType dtype, int64_t count, hcq::Buffer buf, int64_t id = -1);
std::shared_ptr<BufferState> find_buffer(int64_t id);  // null once freed
int64_t next_buffer_id();

struct LazyNode {
  ir::UOp uop;
  std::string device;
  std::vector<std::shared_ptr<const LazyNode>> srcs;  // the nodes whose buffers `uop` reads
  std::shared_ptr<BufferState> buffer;                // set when uop is this buffer's view
  std::string var;                                    // a variable's node: its name and bound value
  int64_t value = 0;
  // A realized tensor's graph, kept while tensors require gradients, so that a backward after the
  // realize (the loss printed first) still sees what it was computed from (tensor/grad.cpp). Never
  // kept for a gradient (is_gradient) or an assign: their graphs would hold every earlier step's.
  std::shared_ptr<const LazyNode> graph;
  bool is_gradient = false;
  ~LazyNode();  // releases long chains iteratively (no deep recursion)
};

// "[2, 3]", for messages.
std::string shape_text(const Shape& s);
// The element count of a shape from the user: no negative dimension, at most 2^48 elements; an
// Error naming `op` otherwise.
int64_t checked_numel(const Shape& s, const std::string& op);

struct Tensor::Handle {
  std::shared_ptr<const LazyNode> node;
  bool requires_grad = false;
  Tensor grad;
  ~Handle();  // tensor/grad.cpp: counts the handles that require a gradient
};

// Autograd's hooks into the tensor layer (tensor/grad.cpp).
// Whether some live tensor requires a gradient (cheap; realize keeps graphs only then).
bool any_requires_grad();
// Whether graph `u` reads a tensor that requires a gradient (the realize of an ASSIGN never keeps one).
bool reads_requires_grad(const ir::UOp& u);
// A new op's node under a NoGrad scope: behind a DETACH, so that no gradient flows through it.
ir::UOp maybe_detached(ir::UOp u, std::span<const Tensor* const> srcs);

// What a Jit records while it captures (tensor/jit.h): every kernel the realizes run, with where each
// argument comes from, and the memory they use (kept alive with the capture).
struct Capture {
  struct Arg {
    int64_t buffer = -1;  // a BUFFER id, or
    std::string var;      // a variable's name, and the bounds the kernel was compiled for
    int64_t min = 0, max = 0;
  };
  struct Kernel {
    hcq::Device* dev;
    std::shared_ptr<hcq::Program> prog;
    std::vector<Arg> args;
  };
  std::vector<Kernel> kernels;
  std::map<int64_t, hcq::Buffer> buffers;  // every buffer a captured kernel reads or writes
};
// While set (on this thread), realizes also record into `c`.
void set_capture(Capture* c);

}  // namespace ugpu::tensor
