// Tensor (docs/tensor.md): a lazy, shaped, typed value on one device.
//
// Every operation only builds a graph (UOps, ir/uop.h); realize() — or reading the values back —
// hands the graph to the scheduler (schedule/schedule.h), which fuses it into kernels, and runs those
// through codegen and HCQ on the tensor's device. A Tensor is a handle: copies share one value, and
// realizing any copy realizes them all.
//
//   using namespace ugpu::tensor;
//   Tensor x = Tensor::randn({32, 784}, 1), w = Tensor::randn({128, 784}, 2) * 0.05;
//   Tensor y = x.linear(w).relu().softmax(-1);
//   std::vector<float> v = y.to_vector<float>();
//
// Binary operations broadcast (right-aligned, as NumPy) and promote dtypes by the IR's lattice
// (ir/dtype.h); a C++ number takes the tensor's dtype where it fits it (int with int, any with
// float), otherwise the result is float32. Axes may be negative (counted from the end). Errors
// (shapes, dtypes, devices, memory) are ugpu::Error naming the operation and what did not fit.
#pragma once
#include <array>
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "ir/uop.h"

namespace ugpu::codegen {
struct CompiledKernel;
}

namespace ugpu::hcq {
class Device;
}

namespace ugpu::tensor {

using ir::DType;
using ir::Shape;
namespace dtypes = ir::dtypes;
using Axes = std::vector<int64_t>;
using Pair = std::array<int64_t, 2>;  // (height, width) for the 2-D nn functions

struct LazyNode;  // tensor.cpp: the graph node with what keeps its buffers alive

class Tensor {
 public:
  Tensor() = default;  // an empty handle; defined() is false

  // ---- creation (device "" = the default device, see default_device()) ----
  template <class T>
  static Tensor from(std::span<const T> data, Shape shape, const std::string& device = "");
  template <class T>
  static Tensor from(const std::vector<T>& data, Shape shape, const std::string& device = "") {
    return from(std::span<const T>(data), std::move(shape), device);
  }
  static Tensor from_bytes(std::span<const uint8_t> bytes, DType dtype, Shape shape, const std::string& device = "");
  static Tensor empty(Shape shape, DType dtype = dtypes::float32, const std::string& device = "");
  static Tensor full(Shape shape, double value, DType dtype = dtypes::float32, const std::string& device = "");
  static Tensor zeros(Shape shape, DType dtype = dtypes::float32, const std::string& device = "") { return full(std::move(shape), 0, dtype, device); }
  static Tensor ones(Shape shape, DType dtype = dtypes::float32, const std::string& device = "") { return full(std::move(shape), 1, dtype, device); }
  // start, start+step, ... below stop (above it for a negative step); int32 unless a float is given.
  static Tensor arange(double start, double stop, double step = 1, std::optional<DType> dtype = std::nullopt, const std::string& device = "");
  static Tensor arange(int64_t n, DType dtype = dtypes::int32, const std::string& device = "") {
    return arange(0, static_cast<double>(n), 1, dtype, device);
  }
  static Tensor linspace(double start, double stop, int64_t steps, DType dtype = dtypes::float32, const std::string& device = "");
  static Tensor eye(int64_t n, DType dtype = dtypes::float32, const std::string& device = "");
  // Counter-based random numbers: element i of a tensor made with seed s is a hash of (s, i), so the
  // same seed gives the same values on every device and in any realize order.
  static Tensor rand(Shape shape, uint64_t seed, DType dtype = dtypes::float32, const std::string& device = "");   // [0, 1)
  static Tensor randn(Shape shape, uint64_t seed, DType dtype = dtypes::float32, const std::string& device = "");  // N(0, 1)
  static Tensor randint(Shape shape, int64_t low, int64_t high, uint64_t seed, DType dtype = dtypes::int32, const std::string& device = "");

  // A scalar int32 tensor standing for a named value in [min, max], bound to `value`. Kernels take it
  // as an argument, so a Jit replays them with another value without recompiling.
  static Tensor variable(const std::string& name, int64_t min, int64_t max, int64_t value, const std::string& device = "");

  // ---- facts ----
  bool defined() const { return h_ != nullptr; }
  const Shape& shape() const;
  DType dtype() const;
  const std::string& device() const;
  int64_t numel() const;
  int64_t ndim() const { return static_cast<int64_t>(shape().size()); }
  int64_t size(int64_t axis) const;
  const ir::UOp& uop() const;  // the lazy graph (a BUFFER view once realized)
  bool realized() const;

  // ---- running it ----
  Tensor& realize();
  static void realize(std::span<Tensor> tensors);  // one schedule for all of them
  template <class T>
  std::vector<T> to_vector() const;  // T must be the tensor's dtype (or a same-sized integer for bool)
  std::vector<uint8_t> to_bytes() const;
  Tensor to(const std::string& device) const;  // a copy on another device (realized)
  double item() const;                         // the one value of a one-element tensor
  // "Tensor([[1, 2], [3, 4]], float, shape [2, 2], on cpu)": the values (realized and read back),
  // at most `edge` at each end of every axis with "..." between, as NumPy prints.
  std::string to_string(int64_t edge = 3) const;

  // ---- elementwise ----
  Tensor operator-() const { return neg(); }
  Tensor neg() const;
  Tensor add(const Tensor& o) const;
  Tensor sub(const Tensor& o) const;
  Tensor mul(const Tensor& o) const;
  Tensor div(const Tensor& o) const;                   // true division: integers give float32
  Tensor floordiv(const Tensor& o) const;              // integers: rounds toward -inf, as Python's //
  Tensor mod(const Tensor& o) const;                   // integers: the sign of the divisor, as Python's %
  Tensor div_trunc(const Tensor& o) const;             // rounds toward 0, as C's / (torch's rounding_mode="trunc")
  Tensor fmod(const Tensor& o) const;                  // the sign of the dividend, as C's % and fmod
  Tensor fma(const Tensor& b, const Tensor& c) const;  // this * b + c
  Tensor maximum(const Tensor& o) const;
  Tensor minimum(const Tensor& o) const;
  Tensor pow(const Tensor& o) const;
  Tensor lt(const Tensor& o) const;
  Tensor gt(const Tensor& o) const;
  Tensor le(const Tensor& o) const;
  Tensor ge(const Tensor& o) const;
  Tensor eq(const Tensor& o) const;
  Tensor ne(const Tensor& o) const;
  Tensor bitwise_and(const Tensor& o) const;
  Tensor bitwise_or(const Tensor& o) const;
  Tensor bitwise_xor(const Tensor& o) const;
  Tensor logical_not() const;
  Tensor lshift(int64_t bits) const;
  Tensor rshift(int64_t bits) const;
  Tensor lshift(const Tensor& bits) const;  // per element (broadcast); amounts in [0, bit width)
  Tensor rshift(const Tensor& bits) const;
  Tensor where(const Tensor& a, const Tensor& b) const;  // this is the condition
  Tensor where(double a, const Tensor& b) const;
  Tensor where(const Tensor& a, double b) const;
  Tensor cast(DType dt) const;
  Tensor bitcast(DType dt) const;  // same item size
  Tensor exp() const;
  Tensor exp2() const;
  Tensor log() const;
  Tensor log2() const;
  Tensor sin() const;
  Tensor cos() const;
  Tensor tan() const;
  Tensor sqrt() const;
  Tensor rsqrt() const;
  Tensor reciprocal() const;
  Tensor square() const { return mul(*this); }
  Tensor abs() const;
  Tensor sign() const;
  Tensor trunc() const;
  Tensor floor() const;
  Tensor ceil() const;
  Tensor relu() const;
  Tensor sigmoid() const;
  Tensor tanh() const;
  Tensor gelu(bool tanh_approximation = false) const;
  Tensor silu() const;
  Tensor softplus(double beta = 1, double threshold = 20) const;
  Tensor erf() const;
  Tensor clip(double lo, double hi) const;
  Tensor pow(double e) const;

  // ---- movement (index expressions; no copies) ----
  Tensor reshape(Axes shape) const;  // one -1 is inferred
  Tensor permute(Axes order) const;
  Tensor transpose(int64_t a = -2, int64_t b = -1) const;
  Tensor expand(Axes shape) const;                                                            // -1 keeps an axis; new axes go in front
  Tensor pad(std::vector<std::pair<int64_t, int64_t>> before_after, double value = 0) const;  // per axis from the first
  Tensor shrink(std::vector<std::pair<int64_t, int64_t>> begin_end) const;                    // per axis, [begin, end)
  // Python's x[start:stop:step] along one axis (negative values count from the end).
  Tensor slice(int64_t axis, std::optional<int64_t> start, std::optional<int64_t> stop, int64_t step = 1) const;
  Tensor select(int64_t axis, int64_t i) const;  // x[..., i, ...]: the axis is removed
  Tensor flip(Axes axes) const;
  Tensor squeeze(std::optional<int64_t> axis = std::nullopt) const;
  Tensor unsqueeze(int64_t axis) const;
  Tensor flatten(int64_t start = 0, int64_t end = -1) const;
  Tensor repeat(Axes times) const;
  Tensor contiguous() const;  // a buffer boundary: the value is computed once into memory

  // ---- in-place writes ----
  // Overwrite this tensor's buffer — lazily, like any op: the write runs in the next realize that
  // reaches this tensor. A lazy tensor is realized into a buffer of its own first: a tensor made by
  // slice, permute or other movement ops is a value, not a view into the tensor it came from, so a
  // write to it does not reach that one. Every copy of this handle sees the new values. Kernels that
  // read the buffer's old contents (tensors made from it before the write, realized together with
  // it) run before the write; a value that reads the buffer itself is computed before any store.
  Tensor& assign(const Tensor& value);  // value broadcast to this shape, cast to this dtype
  // this[..., index[t], ...] = value[..., t, ...] along `axis` (index 1-D integer; a KV cache's row
  // write at a variable position). Out-of-range indices write nothing.
  Tensor& assign_at(int64_t axis, const Tensor& index, const Tensor& value);
  static Tensor cat(std::span<const Tensor> ts, int64_t axis = 0);
  static Tensor stack(std::span<const Tensor> ts, int64_t axis = 0);
  std::vector<Tensor> split(std::vector<int64_t> sizes, int64_t axis = 0) const;
  std::vector<Tensor> chunk(int64_t n, int64_t axis = 0) const;
  // Indexing by integer tensors. Out-of-range indices give 0 (kernels cannot raise errors).
  Tensor gather(int64_t axis, const Tensor& index) const;        // torch.gather
  Tensor index_select(int64_t axis, const Tensor& index) const;  // index is 1-D
  Tensor embedding(const Tensor& ids) const;                     // this is the [vocab, dim] table

  // ---- reductions (no axes: all of them) ----
  Tensor sum(Axes axes = {}, bool keepdim = false) const;
  Tensor prod(Axes axes = {}, bool keepdim = false) const;
  Tensor max(Axes axes = {}, bool keepdim = false) const;
  Tensor min(Axes axes = {}, bool keepdim = false) const;
  Tensor mean(Axes axes = {}, bool keepdim = false) const;
  Tensor var(Axes axes = {}, bool keepdim = false, double correction = 1) const;
  Tensor std(Axes axes = {}, bool keepdim = false, double correction = 1) const;
  Tensor any(Axes axes = {}, bool keepdim = false) const;
  Tensor all(Axes axes = {}, bool keepdim = false) const;
  Tensor argmax(std::optional<int64_t> axis = std::nullopt, bool keepdim = false) const;  // int32; the first maximum
  Tensor argmin(std::optional<int64_t> axis = std::nullopt, bool keepdim = false) const;
  Tensor cumsum(int64_t axis) const;
  Tensor softmax(int64_t axis = -1) const;
  Tensor log_softmax(int64_t axis = -1) const;
  Tensor logsumexp(int64_t axis = -1, bool keepdim = false) const;

  // ---- linear algebra and nn ----
  Tensor matmul(const Tensor& o) const;                                // batch axes broadcast; 1-D operands as NumPy
  Tensor linear(const Tensor& weight, const Tensor& bias = {}) const;  // x @ weight.T + bias (weight: [out, in])
  Tensor layer_norm(const Tensor& weight = {}, const Tensor& bias = {}, double eps = 1e-5, int64_t axes = 1) const;  // over the last `axes` axes
  Tensor rms_norm(const Tensor& weight = {}, double eps = 1e-6) const;  // over the last axis, computed in float32 at least
  // x [N, C_in, H, W], weight [C_out, C_in / groups, kH, kW], bias [C_out].
  Tensor conv2d(const Tensor& weight, const Tensor& bias = {}, Pair stride = {1, 1}, Pair padding = {0, 0}, Pair dilation = {1, 1},
                int64_t groups = 1) const;
  // x [N, C_in, H, W], weight [C_in, C_out / groups, kH, kW] (as PyTorch).
  Tensor conv_transpose2d(const Tensor& weight, const Tensor& bias = {}, Pair stride = {1, 1}, Pair padding = {0, 0}, Pair output_padding = {0, 0},
                          Pair dilation = {1, 1}, int64_t groups = 1) const;
  // x [N, C, H, W]; stride {0, 0} means the kernel size. Padding counts as -inf for max.
  Tensor max_pool2d(Pair kernel, Pair stride = {0, 0}, Pair padding = {0, 0}, Pair dilation = {1, 1}) const;
  Tensor avg_pool2d(Pair kernel, Pair stride = {0, 0}, Pair padding = {0, 0}, bool count_include_pad = true) const;
  Tensor triu(int64_t diagonal = 0) const;  // last two axes
  Tensor tril(int64_t diagonal = 0) const;
  // Rotary position embedding, half-split form (Hugging Face's rotate_half): this is [..., tokens,
  // head_dim] at positions start_pos, start_pos + 1, ...; pair (i, i + head_dim/2) turns by
  // position * base^(-2i/head_dim).
  Tensor rotary_embedding(int64_t start_pos = 0, double base = 10000) const;
  // q [..., Hq, Tq, D], k and v [..., Hkv, Tk, D] with Hq a multiple of Hkv (grouped-query heads).
  // causal: query i sees keys up to i + (Tk - Tq). mask (optional) is added to the scores (or, when bool, selects them).
  Tensor scaled_dot_product_attention(const Tensor& k, const Tensor& v, const Tensor& mask = {}, bool causal = false) const;

  // ---- gradients (tensor/grad.h) ----
  // A tensor that requires a gradient gets one from backward(): its handle (and every copy of it)
  // holds the sum of the gradients of every backward that reached it, until set_grad({}).
  Tensor& set_requires_grad(bool on = true);
  bool requires_grad() const;
  Tensor grad() const;  // undefined until a backward reaches this tensor
  void set_grad(const Tensor& g);
  // The same value, through which no gradient flows.
  Tensor detach() const;
  // Gradients of this tensor (a scalar, or any shape with `seed`, its gradient) added to those of
  // every tensor in its graph that requires one.
  void backward(const Tensor& seed = {}) const;

  // A tensor from a graph, on `device`; `keep` are the tensors whose buffers the graph reads.
  static Tensor from_uop(ir::UOp u, const std::string& device, std::span<const Tensor* const> keep);

 private:
  struct Handle;
  std::shared_ptr<Handle> h_;
  const LazyNode& node() const;
  static Tensor wrap(std::shared_ptr<const LazyNode> n);  // a new handle on n
  friend struct Realizer;
  friend struct Autograd;
};

// Arithmetic with tensors and C++ numbers.
#define UGPU_TENSOR_BINOP(sym, fn)                       \
  Tensor operator sym(const Tensor& a, const Tensor& b); \
  Tensor operator sym(const Tensor& a, double b);        \
  Tensor operator sym(double a, const Tensor& b);
UGPU_TENSOR_BINOP(+, add)
UGPU_TENSOR_BINOP(-, sub)
UGPU_TENSOR_BINOP(*, mul)
UGPU_TENSOR_BINOP(/, div)
UGPU_TENSOR_BINOP(<, lt)
UGPU_TENSOR_BINOP(>, gt)
UGPU_TENSOR_BINOP(<=, le)
UGPU_TENSOR_BINOP(>=, ge)
UGPU_TENSOR_BINOP(==, eq)
UGPU_TENSOR_BINOP(!=, ne)
#undef UGPU_TENSOR_BINOP

std::ostream& operator<<(std::ostream& os, const Tensor& t);  // to_string()

// A number as a tensor like `like` (its device; its dtype where the number fits it).
Tensor scalar_like(const Tensor& like, double v);

// The device used when a tensor names none: $UGPU_DEVICE, else the first GPU, else emu:amd
// (drivers/devices.h). Devices are opened once per process and kept.
std::string default_device();
hcq::Device& device(const std::string& name);

// Debug output: with UGPU_DEBUG=1 (or set_debug(1)), every kernel a realize runs is printed to
// stderr as it completes: name, UOps, device time, the optimizer's actions. Level 2 also prints each
// kernel's graph.
void set_debug(int level);
int debug_level();
// Whether kernels go through the optimizer's heuristics (codegen/opt/opt.h): yes unless UGPU_OPT=0
// or set_optimize_kernels(false). UGPU_OPT other than 0 or 1 is an Error.
bool optimize_kernels();
void set_optimize_kernels(bool on);
void reread_optimize_kernels();  // read UGPU_OPT again (tests)

// What the last realize did, for tests and benchmarks.
struct RealizeStats {
  size_t kernels = 0;
  double schedule_us = 0;                       // tensor graph -> kernel graphs
  int64_t arena_bytes = 0, unshared_bytes = 0;  // intermediates, planned and naively
  int64_t output_bytes = 0;
  std::vector<std::string> kernel_names;
  // The kernels as compiled (actions applied, registers and workgroup memory in their code objects).
  std::vector<std::shared_ptr<const codegen::CompiledKernel>> compiled;
};
const RealizeStats& last_realize();
size_t kernels_run();  // in this process, all realizes

}  // namespace ugpu::tensor
