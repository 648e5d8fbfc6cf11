// Tensor graph building: creation, elementwise, movement, reductions (docs/tensor.md). Every method
// returns a new lazy tensor; nothing here touches a device except from_bytes (an upload).
#include <algorithm>
#include <cmath>
#include <numeric>

#include "common/error.h"
#include "schedule/schedule.h"
#include "tensor/lazy.h"

namespace ugpu::tensor {
using ir::Op;
using ir::UOp;

// ---- handles ---------------------------------------------------------------------------------------

LazyNode::~LazyNode() {
  thread_local std::vector<std::shared_ptr<const LazyNode>>* pending = nullptr;
  if (pending) {
    for (auto& s : srcs) pending->push_back(std::move(s));
    return;
  }
  std::vector<std::shared_ptr<const LazyNode>> list(std::move(srcs));
  pending = &list;
  while (!list.empty()) {
    auto last = std::move(list.back());
    list.pop_back();
    last.reset();  // its sources land in `list`
  }
  pending = nullptr;
}

std::string shape_text(const Shape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

int64_t checked_numel(const Shape& s, const std::string& op) {
  int64_t n = 1;
  for (int64_t d : s) {
    if (d < 0) throw Error(op + ": the shape " + shape_text(s) + " has a negative dimension");
    if (d != 0 && n > (int64_t{1} << 48) / d) throw Error(op + ": the shape " + shape_text(s) + " has more than 2^48 elements");
    n *= d;
  }
  return n;
}

namespace {

int64_t product(const Shape& s) { return std::accumulate(s.begin(), s.end(), int64_t{1}, std::multiplies<>()); }

[[noreturn]] void fail(const std::string& op, const std::string& why) { throw Error(op + ": " + why); }

}  // namespace

Tensor Tensor::from_uop(UOp u, const std::string& device, std::span<const Tensor* const> keep) {
  if (!u.shape()) throw Error("a tensor graph node needs a shape: " + std::string(ir::op_name(u.op())));
  checked_numel(*u.shape(), std::string(ir::op_name(u.op())));
  auto n = std::make_shared<LazyNode>();
  n->uop = maybe_detached(std::move(u), keep);
  n->device = device.empty() ? default_device() : device;
  for (const Tensor* t : keep) {
    if (!t->defined()) throw Error("an undefined Tensor (default-constructed) was used");
    if (t->device() != n->device)
      throw Error("device mismatch: a tensor on " + t->device() + " and one on " + n->device + " in one operation; move one with .to(\"" + n->device +
                  "\")");
    n->srcs.push_back(t->h_->node);
  }
  return wrap(std::move(n));
}

Tensor Tensor::wrap(std::shared_ptr<const LazyNode> n) {
  Tensor t;
  t.h_ = std::make_shared<Handle>();
  t.h_->node = std::move(n);
  return t;
}

const LazyNode& Tensor::node() const {
  if (!h_) throw Error("an undefined Tensor (default-constructed) was used");
  return *h_->node;
}
const Shape& Tensor::shape() const { return *node().uop.shape(); }
DType Tensor::dtype() const { return node().uop.dtype(); }
const std::string& Tensor::device() const { return node().device; }
const ir::UOp& Tensor::uop() const { return node().uop; }
int64_t Tensor::numel() const { return product(shape()); }
bool Tensor::realized() const { return node().buffer != nullptr; }

namespace {

// One tensor op's result from its sources, on their (common) device.
Tensor make(UOp u, std::initializer_list<const Tensor*> srcs) {
  const Tensor* first = *srcs.begin();
  return Tensor::from_uop(std::move(u), first->device(), std::span<const Tensor* const>(srcs.begin(), srcs.size()));
}

int64_t norm_axis(int64_t axis, int64_t rank, const std::string& op) {
  int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank) fail(op, "axis " + std::to_string(axis) + " is outside a tensor of " + std::to_string(rank) + " axes");
  return a;
}

UOp constant(double v, DType dt) { return dt.is_float() ? UOp::const_float(dt, v) : UOp::const_int(dt, static_cast<int64_t>(v)); }

UOp full_uop(const Shape& shape, double v, DType dt) {
  UOp c = UOp::make(Op::RESHAPE, dt, {constant(v, dt)}, ir::Ints(shape.size(), 1));
  if (product(shape) == 1) return UOp::make(Op::RESHAPE, dt, {c}, ir::Ints(shape.begin(), shape.end()));
  return UOp::make(Op::EXPAND, dt, {c}, ir::Ints(shape.begin(), shape.end()));
}

bool integral(double v) { return std::isfinite(v) && v == std::trunc(v); }

DType require_float(const Tensor& t) { return ir::least_upper_float(t.dtype()); }

// A function built of several ops runs in float32 at least for narrower floats (one rounding at the
// end instead of one per op, as PyTorch does on the CPU) and gives the input's float dtype.
template <class F>
Tensor in_float(const Tensor& t, F f) {
  DType out = require_float(t);
  DType compute = out.itemsize() < 4 ? dtypes::float32 : out;
  return f(t.cast(compute)).cast(out);
}

}  // namespace

int64_t Tensor::size(int64_t axis) const { return shape()[norm_axis(axis, ndim(), "size")]; }

Tensor scalar_like(const Tensor& like, double v) {
  DType t = like.dtype();
  DType dt = t.is_float() ? t : (integral(v) && t.is_int()) ? t : (integral(v) && t.is_bool()) ? dtypes::int32 : dtypes::float32;
  if (t.is_bool() && (v == 0 || v == 1)) dt = dtypes::bool_;
  return Tensor::full({}, v, dt, like.device());
}

// ---- creation ------------------------------------------------------------------------------------

Tensor Tensor::full(Shape shape, double value, DType dtype, const std::string& device) {
  checked_numel(shape, "full");
  return from_uop(full_uop(shape, value, dtype), device, {});
}

Tensor Tensor::variable(const std::string& name, int64_t min, int64_t max, int64_t value, const std::string& device) {
  if (name.empty() || min > max || value < min || value > max)
    fail("variable", "'" + name + "' needs a name and min <= value <= max (got " + std::to_string(min) + " <= " + std::to_string(value) +
                         " <= " + std::to_string(max) + ")");
  auto n = std::make_shared<LazyNode>();
  n->uop = UOp::make(Op::RESHAPE, dtypes::int32, {UOp::var(name, min, max, dtypes::index).cast(dtypes::int32)}, ir::Ints{});
  n->device = device.empty() ? default_device() : device;
  n->var = name;
  n->value = value;
  return wrap(std::move(n));
}

Tensor Tensor::empty(Shape shape, DType dtype, const std::string& device) { return full(std::move(shape), 0, dtype, device).contiguous(); }

namespace {
Tensor iota(int64_t n, DType dt, const std::string& device) {
  if (n > INT32_MAX && dt.itemsize() < 8) dt = dtypes::int64;
  return Tensor::from_uop(UOp::make(Op::IOTA, dt.is_float() || dt.is_bool() ? dtypes::int32 : dt, {}, ir::Ints{n}), device, {});
}
}  // namespace

Tensor Tensor::arange(double start, double stop, double step, std::optional<DType> dtype, const std::string& device) {
  if (step == 0) fail("arange", "step is 0");
  DType dt = dtype ? *dtype : (integral(start) && integral(stop) && integral(step)) ? dtypes::int32 : dtypes::float32;
  double n = std::ceil((stop - start) / step);
  int64_t count = n > 0 ? static_cast<int64_t>(n) : 0;
  Tensor i = iota(count, dt.is_float() ? dtypes::int32 : dt, device);
  if (dt.is_float()) return i.cast(dt) * step + start;
  return (i * step + start).cast(dt);
}

Tensor Tensor::linspace(double start, double stop, int64_t steps, DType dtype, const std::string& device) {
  if (steps < 0) fail("linspace", "negative number of steps");
  if (steps == 1) return full({1}, start, dtype, device);
  double step = (stop - start) / static_cast<double>(steps - 1);
  return (iota(steps, dtypes::int32, device).cast(dtypes::float32) * step + start).cast(dtype);
}

Tensor Tensor::eye(int64_t n, DType dtype, const std::string& device) {
  Tensor i = iota(n, dtypes::int32, device);
  return i.reshape({n, 1}).eq(i.reshape({1, n})).cast(dtype);
}

namespace {
// A 32-bit hash of (seed, element), in integer ops every device computes alike (murmur3's finalizer
// over a Weyl sequence).
Tensor random_bits(const Shape& shape, uint64_t seed, const std::string& device, uint32_t stream) {
  int64_t n = checked_numel(shape, "rand");
  Tensor x = iota(n, dtypes::uint32, device).cast(dtypes::uint32);  // 32-bit arithmetic even past 2^31 elements
  uint32_t s = static_cast<uint32_t>(seed * 0x9E3779B97F4A7C15ull >> 32) ^ static_cast<uint32_t>(seed) ^ (stream * 0x85EBCA6Bu);
  Tensor h = x * static_cast<double>(0x9E3779B9u) + static_cast<double>(s);
  h = h.bitwise_xor(h.rshift(16)) * static_cast<double>(0x85EBCA6Bu);
  h = h.bitwise_xor(h.rshift(13)) * static_cast<double>(0xC2B2AE35u);
  h = h.bitwise_xor(h.rshift(16));
  return h.reshape(Axes(shape.begin(), shape.end()));
}
Tensor unit_float(const Tensor& bits) { return bits.rshift(8).cast(dtypes::float32) * (1.0 / 16777216.0); }  // [0, 1) in 2^-24 steps
}  // namespace

Tensor Tensor::rand(Shape shape, uint64_t seed, DType dtype, const std::string& device) {
  if (!dtype.is_float()) fail("rand", "gives floats, not " + dtype.name());
  return unit_float(random_bits(shape, seed, device, 0)).cast(dtype);
}

Tensor Tensor::randn(Shape shape, uint64_t seed, DType dtype, const std::string& device) {
  if (!dtype.is_float()) fail("randn", "gives floats, not " + dtype.name());
  // Box-Muller over two independent streams; 1 - u keeps the logarithm's argument in (0, 1].
  Tensor u1 = 1.0 - unit_float(random_bits(shape, seed, device, 1));
  Tensor u2 = unit_float(random_bits(shape, seed, device, 2));
  return ((u1.log() * -2.0).sqrt() * (u2 * (2 * M_PI)).cos()).cast(dtype);
}

Tensor Tensor::randint(Shape shape, int64_t low, int64_t high, uint64_t seed, DType dtype, const std::string& device) {
  if (!dtype.is_int()) fail("randint", "gives integers, not " + dtype.name());
  if (high <= low) fail("randint", "high (" + std::to_string(high) + ") must be above low (" + std::to_string(low) + ")");
  if (high - low > (int64_t{1} << 32)) fail("randint", "a range wider than 2^32 is not supported");
  Tensor bits = random_bits(shape, seed, device, 3).cast(dtypes::uint64);
  return ((bits * static_cast<double>(high - low)).rshift(32).cast(dtypes::int64) + static_cast<double>(low)).cast(dtype);
}

// ---- elementwise ---------------------------------------------------------------------------------

namespace {

Shape broadcast_shape(const Shape& a, const Shape& b, const std::string& op) {
  size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t x = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t y = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (x != y && x != 1 && y != 1) fail(op, "shapes " + shape_text(a) + " and " + shape_text(b) + " do not broadcast");
    out[i] = x == 1 ? y : x;
  }
  return out;
}

Tensor broadcast_to(const Tensor& t, const Shape& shape) {
  if (t.shape() == shape) return t;
  Axes padded(shape.size() - t.shape().size(), 1);
  padded.insert(padded.end(), t.shape().begin(), t.shape().end());
  return t.reshape(padded).expand(Axes(shape.begin(), shape.end()));
}

Tensor unary(const Tensor& x, Op op, DType dt) {
  Tensor c = x.cast(dt);
  return make(UOp::make(op, dt, {c.uop()}), {&c});
}

// Broadcast and promote, then one ALU op (comparisons give bool).
Tensor binary(const Tensor& a, const Tensor& b, Op op, const std::string& name, std::optional<DType> force = std::nullopt) {
  DType dt = force ? *force : ir::least_upper_dtype(a.dtype(), b.dtype());
  Shape s = broadcast_shape(a.shape(), b.shape(), name);
  Tensor x = broadcast_to(a.cast(dt), s), y = broadcast_to(b.cast(dt), s);
  DType out = ir::is_comparison(op) ? dtypes::bool_ : dt;
  return make(UOp::make(op, out, {x.uop(), y.uop()}), {&x, &y});
}

void require_int(const Tensor& t, const std::string& op) {
  if (!t.dtype().is_int() && !t.dtype().is_bool()) fail(op, "takes integer or bool tensors, not " + t.dtype().name());
}

}  // namespace

Tensor Tensor::cast(DType dt) const {
  if (dt == dtype()) return *this;
  if (!dt.is_scalar() || dt.is_void() || dt.is_index()) fail("cast", "cannot cast to " + dt.name());
  return make(UOp::make(Op::CAST, dt, {uop()}), {this});
}

Tensor Tensor::bitcast(DType dt) const {
  if (dt.itemsize() != dtype().itemsize() || dt.is_bool() || dtype().is_bool())
    fail("bitcast", dtype().name() + " to " + dt.name() + ": the item sizes must match (and bool has no bit pattern)");
  return make(UOp::make(Op::BITCAST, dt, {uop()}), {this});
}

Tensor Tensor::neg() const {
  if (dtype().is_bool()) return logical_not();
  return make(UOp::make(Op::NEG, dtype(), {uop()}), {this});
}
Tensor Tensor::add(const Tensor& o) const { return binary(*this, o, Op::ADD, "add"); }
Tensor Tensor::sub(const Tensor& o) const { return binary(*this, o, Op::SUB, "sub"); }
Tensor Tensor::mul(const Tensor& o) const { return binary(*this, o, Op::MUL, "mul"); }
Tensor Tensor::div(const Tensor& o) const {
  DType dt = ir::least_upper_float(ir::least_upper_dtype(dtype(), o.dtype()));
  return binary(*this, o, Op::FDIV, "div", dt);
}
namespace {
// The division family on integers is one IR op (bool counts as int32); on floats the quotient is
// rounded by `round` (floor or trunc), and a remainder is a - round(a / b) * b.
Tensor int_division(const Tensor& a, const Tensor& b, Op op, const std::string& name, Tensor (Tensor::*round)() const, bool remainder) {
  DType dt = ir::least_upper_dtype(a.dtype(), b.dtype());
  if (dt.is_float()) {
    Tensor q = (a.div(b).*round)();
    return remainder ? a.sub(q * b) : q;
  }
  return binary(a, b, op, name, dt.is_bool() ? dtypes::int32 : dt);
}
}  // namespace

Tensor Tensor::floordiv(const Tensor& o) const { return int_division(*this, o, Op::FLOORDIV, "floordiv", &Tensor::floor, false); }
Tensor Tensor::mod(const Tensor& o) const { return int_division(*this, o, Op::FLOORMOD, "mod", &Tensor::floor, true); }
Tensor Tensor::div_trunc(const Tensor& o) const { return int_division(*this, o, Op::CDIV, "div_trunc", &Tensor::trunc, false); }
Tensor Tensor::fmod(const Tensor& o) const { return int_division(*this, o, Op::CMOD, "fmod", &Tensor::trunc, true); }
Tensor Tensor::fma(const Tensor& b, const Tensor& c) const {
  DType dt = ir::least_upper_dtype(ir::least_upper_dtype(dtype(), b.dtype()), c.dtype());
  if (dt.is_bool()) fail("fma", "takes numbers, not bool");
  Shape s = broadcast_shape(broadcast_shape(shape(), b.shape(), "fma"), c.shape(), "fma");
  Tensor x = broadcast_to(cast(dt), s), y = broadcast_to(b.cast(dt), s), z = broadcast_to(c.cast(dt), s);
  return make(UOp::make(Op::MULACC, dt, {x.uop(), y.uop(), z.uop()}), {&x, &y, &z});
}
Tensor Tensor::maximum(const Tensor& o) const {
  if (dtype().is_bool() && o.dtype().is_bool()) return bitwise_or(o);
  return binary(*this, o, Op::MAX, "maximum");
}
Tensor Tensor::minimum(const Tensor& o) const {
  DType dt = ir::least_upper_dtype(dtype(), o.dtype());
  if (dt.is_bool()) return bitwise_and(o);
  if (dt.is_float()) return -(-cast(dt)).maximum(-o.cast(dt));
  // ~x reverses the order of signed and unsigned integers alike, without overflow.
  return cast(dt)
      .bitwise_xor(scalar_like(cast(dt), -1))
      .maximum(o.cast(dt).bitwise_xor(scalar_like(o.cast(dt), -1)))
      .bitwise_xor(scalar_like(cast(dt), -1));
}
Tensor Tensor::pow(const Tensor& o) const {
  DType dt = ir::least_upper_float(ir::least_upper_dtype(dtype(), o.dtype()));
  return binary(*this, o, Op::POW, "pow", dt);
}
Tensor Tensor::pow(double e) const {
  if (e == 2) return square();
  if (e == 1) return *this;
  return pow(Tensor::full({}, e, require_float(*this), device()));
}
Tensor Tensor::lt(const Tensor& o) const { return binary(*this, o, Op::CMPLT, "lt"); }
Tensor Tensor::gt(const Tensor& o) const { return binary(o, *this, Op::CMPLT, "gt"); }
Tensor Tensor::le(const Tensor& o) const { return lt(o).bitwise_or(eq(o)); }
Tensor Tensor::ge(const Tensor& o) const { return gt(o).bitwise_or(eq(o)); }
Tensor Tensor::eq(const Tensor& o) const { return binary(*this, o, Op::CMPEQ, "eq"); }
Tensor Tensor::ne(const Tensor& o) const { return binary(*this, o, Op::CMPNE, "ne"); }
Tensor Tensor::bitwise_and(const Tensor& o) const {
  require_int(*this, "bitwise_and"), require_int(o, "bitwise_and");
  return binary(*this, o, Op::AND, "bitwise_and");
}
Tensor Tensor::bitwise_or(const Tensor& o) const {
  require_int(*this, "bitwise_or"), require_int(o, "bitwise_or");
  return binary(*this, o, Op::OR, "bitwise_or");
}
Tensor Tensor::bitwise_xor(const Tensor& o) const {
  require_int(*this, "bitwise_xor"), require_int(o, "bitwise_xor");
  return binary(*this, o, Op::XOR, "bitwise_xor");
}
Tensor Tensor::logical_not() const { return cast(dtypes::bool_).ne(Tensor::full({}, 1, dtypes::bool_, device())); }
Tensor Tensor::lshift(int64_t bits) const {
  if (!dtype().is_int()) fail("lshift", "takes integer tensors, not " + dtype().name());
  return binary(*this, Tensor::full({}, static_cast<double>(bits), dtype(), device()), Op::SHL, "lshift");
}
Tensor Tensor::rshift(int64_t bits) const {
  if (!dtype().is_int()) fail("rshift", "takes integer tensors, not " + dtype().name());
  return binary(*this, Tensor::full({}, static_cast<double>(bits), dtype(), device()), Op::SHR, "rshift");
}
Tensor Tensor::lshift(const Tensor& bits) const {
  require_int(*this, "lshift"), require_int(bits, "lshift");
  return binary(*this, bits.cast(dtype()), Op::SHL, "lshift");
}
Tensor Tensor::rshift(const Tensor& bits) const {
  require_int(*this, "rshift"), require_int(bits, "rshift");
  return binary(*this, bits.cast(dtype()), Op::SHR, "rshift");
}

Tensor Tensor::where(const Tensor& a, const Tensor& b) const {
  DType dt = ir::least_upper_dtype(a.dtype(), b.dtype());
  Shape s = broadcast_shape(broadcast_shape(shape(), a.shape(), "where"), b.shape(), "where");
  Tensor c = broadcast_to(cast(dtypes::bool_), s), x = broadcast_to(a.cast(dt), s), y = broadcast_to(b.cast(dt), s);
  return make(UOp::make(Op::WHERE, dt, {c.uop(), x.uop(), y.uop()}), {&c, &x, &y});
}
Tensor Tensor::where(double a, const Tensor& b) const { return where(scalar_like(b, a), b); }
Tensor Tensor::where(const Tensor& a, double b) const { return where(a, scalar_like(a, b)); }

Tensor Tensor::exp() const {
  return in_float(*this, [](const Tensor& x) { return (x * (1 / M_LN2)).exp2(); });
}
Tensor Tensor::exp2() const { return unary(*this, Op::EXP2, require_float(*this)); }
Tensor Tensor::log() const {
  return in_float(*this, [](const Tensor& x) { return x.log2() * M_LN2; });
}
Tensor Tensor::log2() const { return unary(*this, Op::LOG2, require_float(*this)); }
Tensor Tensor::sin() const { return unary(*this, Op::SIN, require_float(*this)); }
Tensor Tensor::cos() const {
  return in_float(*this, [](const Tensor& x) { return (M_PI_2 - x).sin(); });
}
Tensor Tensor::tan() const {
  return in_float(*this, [](const Tensor& x) { return x.sin() / x.cos(); });
}
Tensor Tensor::sqrt() const { return unary(*this, Op::SQRT, require_float(*this)); }
Tensor Tensor::rsqrt() const {
  return in_float(*this, [](const Tensor& x) { return x.sqrt().reciprocal(); });
}
Tensor Tensor::reciprocal() const { return unary(*this, Op::RECIPROCAL, require_float(*this)); }
Tensor Tensor::abs() const {
  if (dtype().is_unsigned() || dtype().is_bool()) return *this;
  return lt(scalar_like(*this, 0)).where(-*this, *this);
}
Tensor Tensor::sign() const {
  if (dtype().is_bool()) return *this;
  return gt(scalar_like(*this, 0)).cast(dtype()) - lt(scalar_like(*this, 0)).cast(dtype());
}
Tensor Tensor::trunc() const {
  if (!dtype().is_float()) return *this;
  return unary(*this, Op::TRUNC, dtype());
}
Tensor Tensor::floor() const {
  if (!dtype().is_float()) return *this;
  Tensor t = trunc();
  return lt(t).where(t - 1.0, t);
}
Tensor Tensor::ceil() const {
  if (!dtype().is_float()) return *this;
  Tensor t = trunc();
  return gt(t).where(t + 1.0, t);
}
Tensor Tensor::relu() const { return maximum(scalar_like(*this, 0)); }
Tensor Tensor::sigmoid() const {
  return in_float(*this, [](const Tensor& x) { return (1.0 + (-x).exp()).reciprocal(); });
}
Tensor Tensor::tanh() const {
  return in_float(*this, [](const Tensor& x) { return 2.0 * (x * 2.0).sigmoid() - 1.0; });
}
Tensor Tensor::gelu(bool tanh_approximation) const {
  return in_float(*this, [&](const Tensor& x) {
    if (tanh_approximation) return 0.5 * x * (1.0 + (std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)).tanh());
    return 0.5 * x * (1.0 + (x * M_SQRT1_2).erf());
  });
}
Tensor Tensor::silu() const {
  return in_float(*this, [](const Tensor& x) { return x * x.sigmoid(); });
}
Tensor Tensor::softplus(double beta, double threshold) const {
  return in_float(*this, [&](const Tensor& x) { return (x * beta).gt(scalar_like(x, threshold)).where(x, (1.0 + (x * beta).exp()).log() / beta); });
}
Tensor Tensor::erf() const {
  // Taylor series near 0 (relative error below 1e-7 for |x| < 0.5), Abramowitz-Stegun 7.1.26
  // (absolute error below 1.5e-7) elsewhere.
  return in_float(*this, [](const Tensor& x) {
    Tensor x2 = x * x;
    Tensor series = x * (2 / std::sqrt(M_PI)) * (1.0 + x2 * (-1.0 / 3 + x2 * (1.0 / 10 + x2 * (-1.0 / 42 + x2 * (1.0 / 216 + x2 * (-1.0 / 1320))))));
    Tensor a = x.abs();
    Tensor t = (1.0 + 0.3275911 * a).reciprocal();
    Tensor poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))));
    Tensor tail = 1.0 - poly * (-x2).exp();
    return a.lt(scalar_like(a, 0.5)).where(series, x.lt(scalar_like(x, 0)).where(-tail, tail));
  });
}
Tensor Tensor::clip(double lo, double hi) const { return maximum(scalar_like(*this, lo)).minimum(scalar_like(*this, hi)); }

#define UGPU_TENSOR_BINOP(sym, fn)                                                   \
  Tensor operator sym(const Tensor& a, const Tensor& b) { return a.fn(b); }          \
  Tensor operator sym(const Tensor& a, double b) { return a.fn(scalar_like(a, b)); } \
  Tensor operator sym(double a, const Tensor& b) { return scalar_like(b, a).fn(b); }
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

// ---- movement ------------------------------------------------------------------------------------

Tensor Tensor::reshape(Axes to) const {
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < to.size(); ++i) {
    if (to[i] == -1) {
      if (infer >= 0) fail("reshape", "more than one -1 in " + shape_text(to));
      infer = static_cast<int64_t>(i);
    } else if (to[i] < 0) {
      fail("reshape", "negative dimension in " + shape_text(to));
    } else {
      known *= to[i];
    }
  }
  if (infer >= 0) {
    if (known == 0 || numel() % known) fail("reshape", "cannot infer -1 in " + shape_text(to) + " for " + shape_text(shape()));
    to[infer] = numel() / known;
  }
  if (checked_numel(Shape(to.begin(), to.end()), "reshape") != numel())
    fail("reshape", shape_text(shape()) + " to " + shape_text(to) + " changes the number of elements");
  if (Shape(to.begin(), to.end()) == shape()) return *this;
  return make(UOp::make(Op::RESHAPE, dtype(), {uop()}, ir::Ints(to)), {this});
}

Tensor Tensor::permute(Axes order) const {
  if (static_cast<int64_t>(order.size()) != ndim()) fail("permute", shape_text(order) + " for a tensor of " + std::to_string(ndim()) + " axes");
  std::vector<bool> seen(order.size());
  for (int64_t& a : order) {
    a = norm_axis(a, ndim(), "permute");
    if (seen[a]) fail("permute", shape_text(order) + " is not a permutation");
    seen[a] = true;
  }
  bool identity = true;
  for (size_t i = 0; i < order.size(); ++i) identity = identity && order[i] == static_cast<int64_t>(i);
  if (identity) return *this;
  return make(UOp::make(Op::PERMUTE, dtype(), {uop()}, ir::Ints(order)), {this});
}

Tensor Tensor::transpose(int64_t a, int64_t b) const {
  Axes order(ndim());
  std::iota(order.begin(), order.end(), 0);
  std::swap(order[norm_axis(a, ndim(), "transpose")], order[norm_axis(b, ndim(), "transpose")]);
  return permute(order);
}

Tensor Tensor::expand(Axes to) const {
  if (to.size() < shape().size()) fail("expand", shape_text(shape()) + " to " + shape_text(to) + " has fewer axes");
  size_t lead = to.size() - shape().size();
  Axes from(lead, 1);
  from.insert(from.end(), shape().begin(), shape().end());
  for (size_t i = 0; i < to.size(); ++i) {
    if (to[i] == -1) to[i] = from[i];
    if (from[i] != to[i] && from[i] != 1) fail("expand", shape_text(shape()) + " to " + shape_text(to) + ": only size-1 axes expand");
  }
  Tensor r = reshape(from);
  if (Shape(to.begin(), to.end()) == r.shape()) return r;
  return make(UOp::make(Op::EXPAND, dtype(), {r.uop()}, ir::Ints(to)), {&r});
}

Tensor Tensor::shrink(std::vector<std::pair<int64_t, int64_t>> be) const {
  if (static_cast<int64_t>(be.size()) > ndim()) fail("shrink", "more ranges than axes");
  bool same = true;
  for (size_t i = 0; i < be.size(); ++i) {
    if (be[i].first < 0 || be[i].first > be[i].second || be[i].second > shape()[i])
      fail("shrink", "range [" + std::to_string(be[i].first) + ", " + std::to_string(be[i].second) + ") is outside axis " + std::to_string(i) +
                         " of " + shape_text(shape()));
    same = same && be[i].first == 0 && be[i].second == shape()[i];
  }
  if (same) return *this;
  for (size_t i = be.size(); i < shape().size(); ++i) be.push_back({0, shape()[i]});
  return make(UOp::make(Op::SHRINK, dtype(), {uop()}, ir::Pairs(be)), {this});
}

Tensor Tensor::pad(std::vector<std::pair<int64_t, int64_t>> ba, double value) const {
  if (static_cast<int64_t>(ba.size()) > ndim()) fail("pad", "more pairs than axes");
  // Negative padding removes elements.
  std::vector<std::pair<int64_t, int64_t>> cut;
  bool any_cut = false, any_pad = false;
  for (size_t i = 0; i < ba.size(); ++i) {
    int64_t b = std::max<int64_t>(0, -ba[i].first), e = shape()[i] - std::max<int64_t>(0, -ba[i].second);
    if (b > e) fail("pad", "negative padding removes more than axis " + std::to_string(i) + " has");
    cut.push_back({b, e});
    any_cut = any_cut || ba[i].first < 0 || ba[i].second < 0;
    ba[i] = {std::max<int64_t>(0, ba[i].first), std::max<int64_t>(0, ba[i].second)};
    any_pad = any_pad || ba[i].first || ba[i].second;
  }
  Tensor x = any_cut ? shrink(cut) : *this;
  if (!any_pad) return x;
  for (size_t i = ba.size(); i < x.shape().size(); ++i) ba.push_back({0, 0});
  Tensor p = make(UOp::make(Op::PAD, dtype(), {x.uop()}, ir::Pairs(ba)), {&x});
  if (value == 0) return p;
  Tensor inside = Tensor::full(x.shape(), 1, dtypes::bool_, device()).pad(ba);
  return inside.where(p, scalar_like(p, value));
}

Tensor Tensor::slice(int64_t axis, std::optional<int64_t> start, std::optional<int64_t> stop, int64_t step) const {
  int64_t a = norm_axis(axis, ndim(), "slice"), n = shape()[a];
  if (step == 0) fail("slice", "step is 0");
  auto clampi = [&](int64_t v, int64_t lo, int64_t hi) { return std::min(std::max(v < 0 ? v + n : v, lo), hi); };
  int64_t b, e;
  if (step > 0) {
    b = start ? clampi(*start, 0, n) : 0;
    e = stop ? clampi(*stop, 0, n) : n;
  } else {
    b = start ? clampi(*start, -1, n - 1) : n - 1;
    e = stop ? clampi(*stop, -1, n - 1) : -1;
  }
  int64_t count = step > 0 ? std::max<int64_t>(0, (e - b + step - 1) / step) : std::max<int64_t>(0, (b - e + (-step) - 1) / -step);
  Tensor x = *this;
  int64_t first = b, st = step;
  if (step < 0) {  // flip, then step forward from the mirrored start
    x = x.flip({a});
    first = n - 1 - b;
    st = -step;
  }
  std::vector<std::pair<int64_t, int64_t>> r(ndim());
  for (int64_t i = 0; i < ndim(); ++i) r[i] = {0, shape()[i]};
  if (st == 1 || count <= 1) {
    r[a] = {first, first + count};
    return x.shrink(r);
  }
  // Every st-th element: take count*st elements (padding the end), fold them into [count, st], keep column 0.
  int64_t have = std::min(n - first, count * st);
  r[a] = {first, first + have};
  std::vector<std::pair<int64_t, int64_t>> p(ndim(), {0, 0});
  p[a] = {0, count * st - have};
  Tensor y = x.shrink(r).pad(p);
  Axes folded(y.shape().begin(), y.shape().end());
  folded[a] = count;
  folded.insert(folded.begin() + a + 1, st);
  y = y.reshape(folded);
  std::vector<std::pair<int64_t, int64_t>> keep;
  for (int64_t d : folded) keep.push_back({0, d});
  keep[a + 1] = {0, 1};
  Axes out(shape().begin(), shape().end());
  out[a] = count;
  return y.shrink(keep).reshape(out);
}

Tensor Tensor::select(int64_t axis, int64_t i) const {
  int64_t a = norm_axis(axis, ndim(), "select"), n = shape()[a];
  if (i < -n || i >= n) fail("select", "index " + std::to_string(i) + " is outside axis " + std::to_string(a) + " of " + shape_text(shape()));
  return slice(a, i < 0 ? i + n : i, (i < 0 ? i + n : i) + 1).squeeze(a);
}

Tensor Tensor::flip(Axes axes) const {
  ir::Ints a;
  for (int64_t x : axes) {
    int64_t d = norm_axis(x, ndim(), "flip");
    if (shape()[d] > 1 && std::find(a.begin(), a.end(), d) == a.end()) a.push_back(d);
  }
  if (a.empty()) return *this;
  std::sort(a.begin(), a.end());
  return make(UOp::make(Op::FLIP, dtype(), {uop()}, a), {this});
}

Tensor Tensor::squeeze(std::optional<int64_t> axis) const {
  Axes out;
  int64_t only = axis ? norm_axis(*axis, ndim(), "squeeze") : -1;
  for (int64_t i = 0; i < ndim(); ++i)
    if (shape()[i] != 1 || (axis && i != only)) out.push_back(shape()[i]);
  return reshape(out);
}

Tensor Tensor::unsqueeze(int64_t axis) const {
  int64_t a = norm_axis(axis, ndim() + 1, "unsqueeze");
  Axes out(shape().begin(), shape().end());
  out.insert(out.begin() + a, 1);
  return reshape(out);
}

Tensor Tensor::flatten(int64_t start, int64_t end) const {
  if (ndim() == 0) return reshape({1});
  int64_t s = norm_axis(start, ndim(), "flatten"), e = norm_axis(end, ndim(), "flatten");
  if (s > e) fail("flatten", "start axis after end axis");
  Axes out(shape().begin(), shape().begin() + s);
  out.push_back(product(Shape(shape().begin() + s, shape().begin() + e + 1)));
  out.insert(out.end(), shape().begin() + e + 1, shape().end());
  return reshape(out);
}

Tensor Tensor::repeat(Axes times) const {
  if (static_cast<int64_t>(times.size()) < ndim()) fail("repeat", "needs a count for every axis");
  Tensor x = reshape([&] {
    Axes s(times.size() - shape().size(), 1);
    s.insert(s.end(), shape().begin(), shape().end());
    return s;
  }());
  Axes split, expanded, out;
  for (size_t i = 0; i < times.size(); ++i) {
    if (times[i] < 0) fail("repeat", "negative count");
    split.insert(split.end(), {1, x.shape()[i]});
    expanded.insert(expanded.end(), {times[i], x.shape()[i]});
    out.push_back(times[i] * x.shape()[i]);
  }
  return x.reshape(split).expand(expanded).reshape(out);
}

Tensor Tensor::contiguous() const { return make(UOp::make(Op::CONTIGUOUS, dtype(), {uop()}), {this}); }

Tensor& Tensor::assign(const Tensor& value) {
  if (!schedule::is_buffer_view(uop())) realize();
  Tensor v = value.cast(dtype()).expand(Axes(shape().begin(), shape().end()));
  h_->node = make(UOp::make(Op::ASSIGN, dtype(), {uop(), v.uop()}, int64_t{-1}), {this, &v}).h_->node;
  return *this;
}

Tensor& Tensor::assign_at(int64_t axis, const Tensor& index, const Tensor& value) {
  int64_t a = norm_axis(axis, ndim(), "assign_at");
  if (!index.dtype().is_int()) fail("assign_at", "the index must be an integer tensor, not " + index.dtype().name());
  if (index.ndim() != 1) fail("assign_at", "the index must be 1-D, is " + shape_text(index.shape()));
  Axes want(shape().begin(), shape().end());
  want[a] = index.shape()[0];
  if (value.ndim() > ndim()) fail("assign_at", "value " + shape_text(value.shape()) + " has more axes than target " + shape_text(shape()));
  if (!schedule::is_buffer_view(uop())) realize();
  Tensor v = value.cast(dtype());
  for (int64_t d = 0; d < ndim(); ++d) {
    int64_t vd = d - (ndim() - v.ndim());
    if (vd >= 0 && v.shape()[vd] != want[d] && v.shape()[vd] != 1)
      fail("assign_at", "value " + shape_text(value.shape()) + " does not fit target " + shape_text(shape()) + " with " + std::to_string(want[a]) +
                            " indices on axis " + std::to_string(a));
  }
  v = v.expand(want);
  h_->node = make(UOp::make(Op::ASSIGN, dtype(), {uop(), v.uop(), index.uop()}, a), {this, &v, &index}).h_->node;
  return *this;
}

Tensor Tensor::cat(std::span<const Tensor> ts, int64_t axis) {
  if (ts.empty()) fail("cat", "no tensors");
  const Tensor& f = ts[0];
  int64_t a = norm_axis(axis, f.ndim(), "cat"), total = 0;
  DType dt = f.dtype();
  for (const Tensor& t : ts) {
    if (t.ndim() != f.ndim()) fail("cat", "shapes " + shape_text(f.shape()) + " and " + shape_text(t.shape()) + " differ in rank");
    for (int64_t i = 0; i < f.ndim(); ++i)
      if (i != a && t.shape()[i] != f.shape()[i])
        fail("cat", "shapes " + shape_text(f.shape()) + " and " + shape_text(t.shape()) + " differ off the axis");
    total += t.shape()[a];
    dt = ir::least_upper_dtype(dt, t.dtype());
  }
  // Each part padded to the whole axis; the parts cover disjoint positions, so their sum is the join.
  DType sum_dt = dt.is_bool() ? dtypes::uint8 : dt;
  Tensor out;
  int64_t at = 0;
  for (const Tensor& t : ts) {
    std::vector<std::pair<int64_t, int64_t>> p(f.ndim(), {0, 0});
    p[a] = {at, total - at - t.shape()[a]};
    at += t.shape()[a];
    Tensor part = t.cast(sum_dt).pad(p);
    out = out.defined() ? out + part : part;
  }
  return out.cast(dt);
}

Tensor Tensor::stack(std::span<const Tensor> ts, int64_t axis) {
  if (ts.empty()) fail("stack", "no tensors");
  int64_t a = norm_axis(axis, ts[0].ndim() + 1, "stack");
  std::vector<Tensor> u;
  for (const Tensor& t : ts) {
    if (t.shape() != ts[0].shape()) fail("stack", "shapes " + shape_text(ts[0].shape()) + " and " + shape_text(t.shape()) + " differ");
    u.push_back(t.unsqueeze(a));
  }
  return cat(u, a);
}

std::vector<Tensor> Tensor::split(std::vector<int64_t> sizes, int64_t axis) const {
  int64_t a = norm_axis(axis, ndim(), "split"), at = 0;
  std::vector<Tensor> out;
  for (int64_t s : sizes) {
    if (s < 0 || at + s > shape()[a])
      fail("split", "sizes " + shape_text(sizes) + " do not fit axis " + std::to_string(a) + " of " + shape_text(shape()));
    out.push_back(slice(a, at, at + s));
    at += s;
  }
  if (at != shape()[a]) fail("split", "sizes " + shape_text(sizes) + " do not add up to axis " + std::to_string(a) + " of " + shape_text(shape()));
  return out;
}

std::vector<Tensor> Tensor::chunk(int64_t n, int64_t axis) const {
  if (n <= 0) fail("chunk", "needs a positive number of chunks");
  int64_t a = norm_axis(axis, ndim(), "chunk"), len = shape()[a], each = (len + n - 1) / n;
  std::vector<int64_t> sizes;
  for (int64_t at = 0; at < len; at += each) sizes.push_back(std::min(each, len - at));
  if (sizes.empty()) sizes.push_back(0);
  return split(sizes, a);
}

Tensor Tensor::gather(int64_t axis, const Tensor& index) const {
  int64_t a = norm_axis(axis, ndim(), "gather");
  if (!index.dtype().is_int()) fail("gather", "the index must be an integer tensor, not " + index.dtype().name());
  if (index.ndim() != ndim()) fail("gather", "input " + shape_text(shape()) + " and index " + shape_text(index.shape()) + " differ in rank");
  for (int64_t d = 0; d < ndim(); ++d)
    if (d != a && index.shape()[d] > shape()[d])
      fail("gather", "index " + shape_text(index.shape()) + " is larger than input " + shape_text(shape()) + " off the axis");
  return make(UOp::make(Op::GATHER, dtype(), {uop(), index.uop()}, a), {this, &index});
}

Tensor Tensor::index_select(int64_t axis, const Tensor& index) const {
  int64_t a = norm_axis(axis, ndim(), "index_select");
  if (index.ndim() != 1) fail("index_select", "the index must be 1-D, is " + shape_text(index.shape()));
  Axes view(ndim(), 1), to(shape().begin(), shape().end());
  view[a] = index.shape()[0];
  to[a] = index.shape()[0];
  return gather(a, index.reshape(view).expand(to));
}

Tensor Tensor::embedding(const Tensor& ids) const {
  if (ndim() != 2) fail("embedding", "the table must be [vocab, dim], is " + shape_text(shape()));
  Axes out(ids.shape().begin(), ids.shape().end());
  out.push_back(shape()[1]);
  return index_select(0, ids.flatten()).reshape(out);
}

// ---- reductions ----------------------------------------------------------------------------------

namespace {

Axes norm_axes(const Tensor& t, const Axes& axes, const std::string& op) {
  Axes r;
  if (axes.empty())
    for (int64_t i = 0; i < t.ndim(); ++i) r.push_back(i);
  for (int64_t a : axes) {
    int64_t n = norm_axis(a, t.ndim(), op);
    if (std::find(r.begin(), r.end(), n) == r.end()) r.push_back(n);
  }
  std::sort(r.begin(), r.end());
  return r;
}

Tensor reduce(const Tensor& t, Op op, const Axes& axes, bool keepdim, const std::string& name) {
  Axes a = norm_axes(t, axes, name);
  Tensor r = t;
  if (!a.empty()) r = make(UOp::make(Op::REDUCE_AXIS, t.dtype(), {t.uop()}, ir::ReduceAxisArg{op, ir::Ints(a)}), {&t});
  if (keepdim) return r;
  Axes out;
  for (int64_t i = 0; i < t.ndim(); ++i)
    if (std::find(a.begin(), a.end(), i) == a.end()) out.push_back(t.shape()[i]);
  return r.reshape(out);
}

int64_t reduced_count(const Tensor& t, const Axes& axes, const std::string& op) {
  int64_t n = 1;
  for (int64_t a : norm_axes(t, axes, op)) n *= t.shape()[a];
  return n;
}

DType acc_dtype(DType t) { return t.is_float() ? t : ir::sum_acc_dtype(t.is_bool() ? dtypes::int32 : t); }

}  // namespace

Tensor Tensor::sum(Axes axes, bool keepdim) const { return reduce(cast(acc_dtype(dtype())), Op::ADD, axes, keepdim, "sum"); }
Tensor Tensor::prod(Axes axes, bool keepdim) const { return reduce(cast(acc_dtype(dtype())), Op::MUL, axes, keepdim, "prod"); }
Tensor Tensor::max(Axes axes, bool keepdim) const {
  if (dtype().is_bool()) return any(axes, keepdim);
  return reduce(*this, Op::MAX, axes, keepdim, "max");
}
Tensor Tensor::min(Axes axes, bool keepdim) const {
  if (dtype().is_bool()) return all(axes, keepdim);
  if (dtype().is_float()) return -(-*this).max(axes, keepdim);
  Tensor ones = scalar_like(*this, -1);
  return bitwise_xor(ones).max(axes, keepdim).bitwise_xor(ones);
}
Tensor Tensor::mean(Axes axes, bool keepdim) const {
  Tensor s = cast(require_float(*this)).sum(axes, keepdim);
  return s / static_cast<double>(reduced_count(*this, axes, "mean"));
}
Tensor Tensor::var(Axes axes, bool keepdim, double correction) const {
  Tensor x = cast(require_float(*this));
  Tensor d = x - x.mean(axes, true);
  double n = static_cast<double>(reduced_count(*this, axes, "var"));
  return d.square().sum(axes, keepdim) / std::max(0.0, n - correction);
}
Tensor Tensor::std(Axes axes, bool keepdim, double correction) const { return var(axes, keepdim, correction).sqrt(); }
Tensor Tensor::any(Axes axes, bool keepdim) const {
  return reduce(ne(scalar_like(*this, 0)).cast(dtypes::uint8), Op::MAX, axes, keepdim, "any").cast(dtypes::bool_);
}
Tensor Tensor::all(Axes axes, bool keepdim) const { return logical_not().any(axes, keepdim).logical_not(); }

Tensor Tensor::argmax(std::optional<int64_t> axis, bool keepdim) const {
  if (!axis) {
    Tensor r = flatten().argmax(0);
    return keepdim ? r.reshape(Axes(ndim(), 1)) : r;
  }
  int64_t a = norm_axis(*axis, ndim(), "argmax"), n = shape()[a];
  Tensor is_max = eq(max({a}, true));
  // n - i at a maximum, 0 elsewhere: the largest is the first maximum.
  Axes view(ndim(), 1);
  view[a] = n;
  Tensor rev = (static_cast<double>(n) - Tensor::arange(n, dtypes::int32, device())).reshape(view);
  Tensor picked = is_max.where(rev, scalar_like(rev, 0)).max({a}, keepdim);
  return static_cast<double>(n) - picked;
}
Tensor Tensor::argmin(std::optional<int64_t> axis, bool keepdim) const {
  if (dtype().is_float()) return (-*this).argmax(axis, keepdim);
  if (dtype().is_bool()) return logical_not().argmax(axis, keepdim);
  return bitwise_xor(scalar_like(*this, -1)).argmax(axis, keepdim);
}
Tensor Tensor::cumsum(int64_t axis) const {
  int64_t a = norm_axis(axis, ndim(), "cumsum"), n = shape()[a];
  Tensor x = transpose(a, -1).cast(acc_dtype(dtype()));
  Tensor i = Tensor::arange(n, dtypes::int32, device());
  Tensor upto = i.reshape({1, n}).le(i.reshape({n, 1}));  // [out i, in j]: j <= i
  Tensor r = upto.where(x.unsqueeze(-2), scalar_like(x, 0)).sum({-1});
  return r.transpose(a, -1);
}
namespace {
// The maximum softmax-like functions subtract for range: it changes nothing, so no gradient needs to
// flow through it. Detached only while some tensor requires a gradient: an inference graph then has
// no DETACH for the scheduler to strip (a gradient taken without it is the same, with more work).
Tensor shift_max(const Tensor& x, int64_t axis) {
  Tensor m = x.max({axis}, true);
  return any_requires_grad() ? m.detach() : m;
}
}  // namespace

Tensor Tensor::softmax(int64_t axis) const {
  Tensor x = cast(require_float(*this));
  Tensor e = (x - shift_max(x, axis)).exp();
  return e / e.sum({axis}, true);
}
Tensor Tensor::log_softmax(int64_t axis) const {
  Tensor x = cast(require_float(*this));
  Tensor s = x - shift_max(x, axis);
  return s - s.exp().sum({axis}, true).log();
}
Tensor Tensor::logsumexp(int64_t axis, bool keepdim) const {
  Tensor x = cast(require_float(*this));
  Tensor m = shift_max(x, axis);
  Tensor r = (x - m).exp().sum({axis}, true).log() + m;
  return keepdim ? r : r.squeeze(axis);
}

// ---- linear algebra and nn ---------------------------------------------------------------------------

Tensor Tensor::matmul(const Tensor& o) const {
  if (ndim() == 0 || o.ndim() == 0)
    fail("matmul", "needs tensors of at least one axis, got " + shape_text(shape()) + " and " + shape_text(o.shape()));
  Tensor a = ndim() == 1 ? unsqueeze(0) : *this;
  Tensor b = o.ndim() == 1 ? o.unsqueeze(-1) : o;
  if (a.shape().back() != b.shape()[b.ndim() - 2])
    fail("matmul", "shapes " + shape_text(shape()) + " and " + shape_text(o.shape()) + " do not fit: " + std::to_string(a.shape().back()) +
                       " != " + std::to_string(b.shape()[b.ndim() - 2]));
  Tensor r = (a.unsqueeze(-1) * b.unsqueeze(-3)).sum({-2});
  if (ndim() == 1) r = r.squeeze(-2);
  if (o.ndim() == 1) r = r.squeeze(-1);
  return r;
}

Tensor Tensor::linear(const Tensor& weight, const Tensor& bias) const {
  Tensor y = matmul(weight.transpose());
  return bias.defined() ? y + bias : y;
}

Tensor Tensor::layer_norm(const Tensor& weight, const Tensor& bias, double eps, int64_t axes) const {
  if (axes < 1 || axes > ndim()) fail("layer_norm", "normalizes over 1.." + std::to_string(ndim()) + " trailing axes, not " + std::to_string(axes));
  Axes over;
  for (int64_t i = ndim() - axes; i < ndim(); ++i) over.push_back(i);
  Tensor x = cast(require_float(*this));
  Tensor d = x - x.mean(over, true);
  Tensor y = d * (d.square().mean(over, true) + eps).rsqrt();
  if (weight.defined()) y = y * weight;
  if (bias.defined()) y = y + bias;
  return y;
}

Tensor Tensor::rms_norm(const Tensor& weight, double eps) const {
  DType dt = require_float(*this);
  DType compute = dt.itemsize() < 4 ? dtypes::float32 : dt;
  Tensor x = cast(compute);
  Tensor y = (x * (x.square().mean({-1}, true) + eps).rsqrt()).cast(dt);
  return weight.defined() ? y * weight : y;
}

namespace {
Tensor triangle(const Tensor& t, int64_t diagonal, bool upper, const std::string& op) {
  if (t.ndim() < 2) fail(op, "needs at least two axes, got " + shape_text(t.shape()));
  int64_t r = t.shape()[t.ndim() - 2], c = t.shape().back();
  Tensor i = Tensor::arange(r, dtypes::int32, t.device()).reshape({r, 1});
  Tensor j = Tensor::arange(c, dtypes::int32, t.device()).reshape({1, c});
  Tensor keep = upper ? (j - i).ge(scalar_like(i, static_cast<double>(diagonal))) : (j - i).le(scalar_like(i, static_cast<double>(diagonal)));
  return keep.where(t, scalar_like(t, 0));
}
}  // namespace

namespace {

std::string pair_text(Pair p) { return "(" + std::to_string(p[0]) + ", " + std::to_string(p[1]) + ")"; }

// The sliding windows of x [N, C, H, W] as [N, C, OH, OW, kH, kW]: element (oh, ow, i, j) is the
// padded input at (oh*stride + i*dilation, ow*stride + j*dilation). Each spatial axis is one gather
// whose indices are computed (IOTA arithmetic), so the windows are index math, not memory.
Tensor windows(const Tensor& x, Pair k, Pair stride, Pair pad, Pair dil, double pad_value, const std::string& op) {
  if (x.ndim() != 4) fail(op, "takes [N, C, H, W], got " + shape_text(x.shape()));
  for (int a = 0; a < 2; ++a)
    if (k[a] < 1 || stride[a] < 1 || dil[a] < 1 || pad[a] < 0)
      fail(op, "kernel " + pair_text(k) + ", stride " + pair_text(stride) + ", dilation " + pair_text(dil) + " must be positive and padding " +
                   pair_text(pad) + " not negative");
  Tensor xp = x.pad({{0, 0}, {0, 0}, {pad[0], pad[0]}, {pad[1], pad[1]}}, pad_value);
  Tensor y = xp;
  Pair out{};
  for (int a = 0; a < 2; ++a) {
    int64_t size = xp.shape()[2 + a], span = dil[a] * (k[a] - 1) + 1;
    if (size < span)
      fail(op, "the kernel " + pair_text(k) + " (dilated " + std::to_string(span) + ") is larger than the padded input " + shape_text(xp.shape()));
    out[a] = (size - span) / stride[a] + 1;
  }
  const std::string& dev = x.device();
  // Height: gather along axis 2 with index (o*stride + i*dilation) over [OH*kH].
  int64_t n = xp.shape()[0], c = xp.shape()[1], w = xp.shape()[3];
  Tensor r = Tensor::arange(out[0] * k[0], dtypes::int32, dev);
  Tensor hi = (r.floordiv(scalar_like(r, static_cast<double>(k[0]))) * static_cast<double>(stride[0]) +
               r.mod(scalar_like(r, static_cast<double>(k[0]))) * static_cast<double>(dil[0]));
  y = y.gather(2, hi.reshape({1, 1, out[0] * k[0], 1}).expand({n, c, out[0] * k[0], w})).reshape({n, c, out[0], k[0], w});
  // Width: gather along the last axis.
  Tensor q = Tensor::arange(out[1] * k[1], dtypes::int32, dev);
  Tensor wi = (q.floordiv(scalar_like(q, static_cast<double>(k[1]))) * static_cast<double>(stride[1]) +
               q.mod(scalar_like(q, static_cast<double>(k[1]))) * static_cast<double>(dil[1]));
  y = y.gather(4, wi.reshape({1, 1, 1, 1, out[1] * k[1]}).expand({n, c, out[0], k[0], out[1] * k[1]})).reshape({n, c, out[0], k[0], out[1], k[1]});
  return y.permute({0, 1, 2, 4, 3, 5});
}

Pair or_kernel(Pair stride, Pair kernel) { return stride[0] == 0 && stride[1] == 0 ? kernel : stride; }

}  // namespace

Tensor Tensor::conv2d(const Tensor& weight, const Tensor& bias, Pair stride, Pair padding, Pair dilation, int64_t groups) const {
  const std::string op = "conv2d";
  if (ndim() != 4 || weight.ndim() != 4)
    fail(op, "takes x [N, C, H, W] and weight [C_out, C_in / groups, kH, kW], got " + shape_text(shape()) + " and " + shape_text(weight.shape()));
  int64_t n = shape()[0], cin = shape()[1], cout = weight.shape()[0];
  if (groups < 1 || cin % groups || cout % groups || weight.shape()[1] != cin / groups)
    fail(op,
         "input channels " + std::to_string(cin) + " and weight " + shape_text(weight.shape()) + " do not fit " + std::to_string(groups) + " groups");
  Pair k{weight.shape()[2], weight.shape()[3]};
  Tensor p = windows(*this, k, stride, padding, dilation, 0, op);  // [N, Cin, OH, OW, kH, kW]
  int64_t oh = p.shape()[2], ow = p.shape()[3], cg = cin / groups, og = cout / groups;
  Tensor pg = p.reshape({n, groups, 1, cg, oh, ow, k[0], k[1]});
  Tensor wg = weight.reshape({1, groups, og, cg, 1, 1, k[0], k[1]});
  Tensor y = (pg * wg).sum({3, 6, 7}).reshape({n, cout, oh, ow});
  if (bias.defined()) y = y + bias.reshape({1, cout, 1, 1});
  return y;
}

Tensor Tensor::conv_transpose2d(const Tensor& weight, const Tensor& bias, Pair stride, Pair padding, Pair output_padding, Pair dilation,
                                int64_t groups) const {
  const std::string op = "conv_transpose2d";
  if (ndim() != 4 || weight.ndim() != 4)
    fail(op, "takes x [N, C, H, W] and weight [C_in, C_out / groups, kH, kW], got " + shape_text(shape()) + " and " + shape_text(weight.shape()));
  int64_t n = shape()[0], cin = shape()[1], h = shape()[2], w = shape()[3];
  if (groups < 1 || cin % groups || weight.shape()[0] != cin)
    fail(op,
         "input channels " + std::to_string(cin) + " and weight " + shape_text(weight.shape()) + " do not fit " + std::to_string(groups) + " groups");
  for (int a = 0; a < 2; ++a)
    if (stride[a] < 1 || output_padding[a] < 0 || output_padding[a] >= std::max(stride[a], dilation[a]))
      fail(op, "stride " + pair_text(stride) + " must be positive and output_padding " + pair_text(output_padding) + " below the stride or dilation");
  int64_t og = weight.shape()[1], cg = cin / groups;
  Pair k{weight.shape()[2], weight.shape()[3]};
  // A transposed convolution is a convolution of the input spread out by the stride (zeros between),
  // padded by dilation*(k-1) - padding, with the kernel flipped and its in/out channels swapped.
  Tensor x = reshape({n, cin, h, 1, w, 1})
                 .pad({{0, 0}, {0, 0}, {0, 0}, {0, stride[0] - 1}, {0, 0}, {0, stride[1] - 1}})
                 .reshape({n, cin, h * stride[0], w * stride[1]});
  x = x.shrink({{0, n}, {0, cin}, {0, (h - 1) * stride[0] + 1}, {0, (w - 1) * stride[1] + 1}});
  Pair edge{dilation[0] * (k[0] - 1) - padding[0], dilation[1] * (k[1] - 1) - padding[1]};
  x = x.pad({{0, 0}, {0, 0}, {edge[0], edge[0] + output_padding[0]}, {edge[1], edge[1] + output_padding[1]}});
  Tensor wt = weight.reshape({groups, cg, og, k[0], k[1]}).permute({0, 2, 1, 3, 4}).reshape({groups * og, cg, k[0], k[1]}).flip({2, 3});
  return x.conv2d(wt, bias, {1, 1}, {0, 0}, dilation, groups);
}

Tensor Tensor::max_pool2d(Pair kernel, Pair stride, Pair padding, Pair dilation) const {
  double lowest = dtype().is_float() ? -INFINITY : static_cast<double>(dtype().min_int());
  return windows(*this, kernel, or_kernel(stride, kernel), padding, dilation, lowest, "max_pool2d").max({4, 5});
}

Tensor Tensor::avg_pool2d(Pair kernel, Pair stride, Pair padding, bool count_include_pad) const {
  Pair s = or_kernel(stride, kernel);
  Tensor x = cast(require_float(*this));
  Tensor sum = windows(x, kernel, s, padding, {1, 1}, 0, "avg_pool2d").sum({4, 5});
  if (count_include_pad) return sum / static_cast<double>(kernel[0] * kernel[1]);
  Tensor ones = Tensor::ones({1, 1, shape()[2], shape()[3]}, dtypes::float32, device());
  return sum / windows(ones, kernel, s, padding, {1, 1}, 0, "avg_pool2d").sum({4, 5});
}

Tensor Tensor::triu(int64_t diagonal) const { return triangle(*this, diagonal, true, "triu"); }
Tensor Tensor::tril(int64_t diagonal) const { return triangle(*this, diagonal, false, "tril"); }

Tensor Tensor::rotary_embedding(int64_t start_pos, double base) const {
  if (ndim() < 2 || shape().back() % 2) fail("rotary_embedding", "needs [..., tokens, head_dim] with an even head_dim, got " + shape_text(shape()));
  int64_t t = shape()[ndim() - 2], d = shape().back(), half = d / 2;
  Tensor freqs = (Tensor::arange(half, dtypes::int32, device()).cast(dtypes::float32) * (-2 * std::log(base) / static_cast<double>(d))).exp();
  Tensor pos = Tensor::arange(t, dtypes::int32, device()).cast(dtypes::float32) + static_cast<double>(start_pos);
  Tensor angle = pos.reshape({t, 1}) * freqs.reshape({1, half});
  Tensor c = angle.cos(), s = angle.sin();
  Tensor x = cast(require_float(*this));
  Tensor x1 = x.slice(-1, 0, half), x2 = x.slice(-1, half, d);
  Tensor parts[] = {x1 * c - x2 * s, x2 * c + x1 * s};
  return cat(parts, -1).cast(require_float(*this));
}

Tensor Tensor::scaled_dot_product_attention(const Tensor& k, const Tensor& v, const Tensor& mask, bool causal) const {
  const std::string op = "scaled_dot_product_attention";
  if (ndim() < 3 || k.ndim() != ndim() || v.ndim() != ndim())
    fail(op, "q, k and v need the same rank (at least [heads, tokens, dim]): " + shape_text(shape()) + ", " + shape_text(k.shape()) + ", " +
                 shape_text(v.shape()));
  int64_t hq = shape()[ndim() - 3], hk = k.shape()[ndim() - 3], tq = shape()[ndim() - 2], tk = k.shape()[ndim() - 2], d = shape().back();
  if (hk == 0 || hq % hk || v.shape()[ndim() - 3] != hk)
    fail(op, "query heads (" + std::to_string(hq) + ") must be a multiple of key/value heads (" + std::to_string(hk) + ")");
  Tensor kk = k, vv = v;
  if (hq != hk) {  // grouped-query heads: each key/value head serves hq/hk query heads
    auto widen = [&](const Tensor& t) {
      Axes s(t.shape().begin(), t.shape().end()), e = s;
      s.insert(s.begin() + (ndim() - 2), 1);
      e.insert(e.begin() + (ndim() - 2), hq / hk);
      Axes out(t.shape().begin(), t.shape().end());
      out[ndim() - 3] = hq;
      return t.reshape(s).expand(e).reshape(out);
    };
    kk = widen(k), vv = widen(v);
  }
  Tensor scores = matmul(kk.transpose()) * (1 / std::sqrt(static_cast<double>(d)));
  if (causal) {
    Tensor i = Tensor::arange(tq, dtypes::int32, device()).reshape({tq, 1});
    Tensor j = Tensor::arange(tk, dtypes::int32, device()).reshape({1, tk});
    Tensor visible = (j - i).le(scalar_like(i, static_cast<double>(tk - tq)));
    scores = visible.where(scores, scalar_like(scores, -INFINITY));
  }
  if (mask.defined()) scores = mask.dtype().is_bool() ? mask.where(scores, scalar_like(scores, -INFINITY)) : scores + mask;
  return scores.softmax(-1).matmul(vv);
}

}  // namespace ugpu::tensor
