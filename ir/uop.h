// UOp: the node of every graph in ugpu — tensor graphs, kernels, index math.
//
// A UOp is (op, dtype, src, arg), immutable and hash-consed: constructing a node equal to a live one
// returns that node, so structural equality is pointer equality (`a == b`). `UOp` is a counted handle
// (8 bytes); a node lives while a handle or a parent refers to it, and construction and release are
// thread-safe. Derived facts (bounds, shape, topological order, content key) are computed on first
// use and cached in the node.
#pragma once
#include <array>
#include <atomic>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "ir/dtype.h"
#include "ir/ops.h"

namespace ugpu::ir {

using Ints = std::vector<int64_t>;
using Pairs = std::vector<std::pair<int64_t, int64_t>>;
struct VarArg {
  std::string name;
  int64_t min, max;
  bool operator==(const VarArg&) const = default;
};
struct RangeArg {
  int64_t axis;
  AxisType type;
  bool operator==(const RangeArg&) const = default;
};
struct ReduceAxisArg {
  Op op;
  Ints axes;
  bool operator==(const ReduceAxisArg&) const = default;
};
// The alternative used is fixed by the op (ArgKind in ops.h). Doubles compare by bit pattern, so
// -0.0 and 0.0 are different constants and NaN equals NaN (NaNs are stored canonical).
using Arg = std::variant<std::monostate, int64_t, double, std::string, Op, Ints, Pairs, VarArg, RangeArg, ReduceAxisArg>;
bool arg_equal(const Arg& a, const Arg& b);
uint64_t arg_hash(const Arg& a);
// The arg as ugpu's text form writes it inside `{...}` (see ir/text.h); CONST values are written by
// the printer, which knows the dtype.
std::string arg_text(const Arg& a);
std::string float_text(double v);  // shortest text that reads back to the same double

using Shape = std::vector<int64_t>;
using ContentKey = std::array<uint8_t, 32>;  // SHA-256

namespace detail {
struct Node;
}

class UOp {
 public:
  UOp() = default;
  UOp(const UOp& o) noexcept;
  UOp(UOp&& o) noexcept : n_(std::exchange(o.n_, nullptr)) {}
  UOp& operator=(const UOp& o) noexcept;
  UOp& operator=(UOp&& o) noexcept;
  ~UOp();

  explicit operator bool() const { return n_ != nullptr; }
  bool operator==(const UOp& o) const { return n_ == o.n_; }
  const detail::Node* get() const { return n_; }

  Op op() const;
  DType dtype() const;
  std::span<const UOp> src() const;
  [[noreturn]] void throw_missing_source(size_t i) const;
  // Source i, bounds-checked: an unverified graph from outside (a node with too few sources) is an
  // Error here, never a read past the node.
  const UOp& src(size_t i) const {
    std::span<const UOp> s = src();
    if (i >= s.size()) throw_missing_source(i);
    return s[i];
  }
  const Arg& arg() const;
  template <class T>
  const T& arg_as() const {
    return std::get<T>(arg());
  }
  uint64_t hash() const;  // deterministic: the same graph hashes the same in every process

  bool is_const() const { return op() == Op::CONST; }
  bool is_int_const(int64_t v) const;  // a CONST of an integer or bool dtype with value v
  int64_t const_int() const;           // CONST of int/bool/index dtype
  double const_float() const;          // CONST of float dtype

  // Derived facts, cached.
  // Integer bounds: every value this node can take lies in [vmin, vmax]. Exact intervals for int,
  // bool and index dtypes (uint64 values past INT64_MAX make the bounds the whole int64 range);
  // floats, pointers and void report the whole int64 range.
  int64_t vmin() const;
  int64_t vmax() const;
  const std::optional<Shape>& shape() const;  // where defined (buffers, movement ops, elementwise)
  const std::vector<UOp>& toposort() const;   // sources before users, this node last
  const ContentKey& key() const;              // stable across processes and builds: cache key
  std::string key_hex() const;

  // ---- construction ----
  static UOp make(Op op, DType dtype, std::span<const UOp> src = {}, Arg arg = {});
  static UOp make(Op op, DType dtype, std::initializer_list<UOp> src, Arg arg = {}) {
    return make(op, dtype, std::span<const UOp>(src.begin(), src.size()), std::move(arg));
  }
  static UOp const_int(DType dt, int64_t v);   // wrapped to dt
  static UOp const_float(DType dt, double v);  // rounded to dt
  static UOp const_bool(bool v) { return const_int(dtypes::bool_, v); }
  static UOp const_like(const UOp& like, double v);  // a constant of like's dtype
  static UOp var(std::string name, int64_t min, int64_t max, DType dt = dtypes::index);
  static UOp range(const UOp& end, int64_t axis, AxisType type = AxisType::LOOP);
  static UOp range(int64_t end, int64_t axis, AxisType type = AxisType::LOOP);
  static UOp special(std::string name, int64_t size);
  static UOp invalid(DType dt = dtypes::index) { return make(Op::INVALID, dt); }
  static UOp sink(std::span<const UOp> src) { return make(Op::SINK, dtypes::void_, src); }
  // An ALU op with its dtype derived: comparisons give bool, WHERE its branches', others src 0's.
  static UOp alu(Op op, std::span<const UOp> src);
  static UOp alu(Op op, std::initializer_list<UOp> src) { return alu(op, std::span<const UOp>(src.begin(), src.size())); }

  UOp with_src(std::span<const UOp> src) const;  // same op/dtype/arg; returns *this if unchanged
  UOp cast(DType dt) const { return dt == dtype() ? *this : make(Op::CAST, dt, {*this}); }
  UOp bitcast(DType dt) const { return make(Op::BITCAST, dt, {*this}); }
  UOp floordiv(const UOp& b) const { return alu(Op::FLOORDIV, {*this, b}); }
  UOp floordiv(int64_t b) const { return floordiv(const_like(*this, static_cast<double>(b))); }
  UOp max(const UOp& b) const { return alu(Op::MAX, {*this, b}); }
  UOp lt(const UOp& b) const { return alu(Op::CMPLT, {*this, b}); }
  UOp ne(const UOp& b) const { return alu(Op::CMPNE, {*this, b}); }
  UOp eq(const UOp& b) const { return alu(Op::CMPEQ, {*this, b}); }
  UOp where(const UOp& a, const UOp& b) const { return alu(Op::WHERE, {*this, a, b}); }
  UOp logical_not() const { return ne(const_bool(true)); }

  // Drops the reference without releasing it (the node keeps one count). For the node store.
  detail::Node* release_raw() { return std::exchange(n_, nullptr); }
  static UOp adopt_raw(detail::Node* n) {
    UOp u;
    u.n_ = n;
    return u;
  }

 private:
  detail::Node* n_ = nullptr;
};

struct UOpHash {
  size_t operator()(const UOp& u) const { return std::hash<const void*>()(u.get()); }
};

// Arithmetic builds ALU nodes. An int64/double operand becomes a CONST of the other side's dtype.
#define UGPU_UOP_BINOP(sym, OPNAME)                                                                            \
  inline UOp operator sym(const UOp& a, const UOp& b) { return UOp::alu(Op::OPNAME, {a, b}); }                 \
  inline UOp operator sym(const UOp& a, double b) { return UOp::alu(Op::OPNAME, {a, UOp::const_like(a, b)}); } \
  inline UOp operator sym(double a, const UOp& b) { return UOp::alu(Op::OPNAME, {UOp::const_like(b, a), b}); }
UGPU_UOP_BINOP(+, ADD)
UGPU_UOP_BINOP(-, SUB)
UGPU_UOP_BINOP(*, MUL)
UGPU_UOP_BINOP(%, FLOORMOD)
UGPU_UOP_BINOP(&, AND)
UGPU_UOP_BINOP(|, OR)
UGPU_UOP_BINOP(^, XOR)
UGPU_UOP_BINOP(<<, SHL)
UGPU_UOP_BINOP(>>, SHR)
#undef UGPU_UOP_BINOP
inline UOp operator-(const UOp& a) { return UOp::alu(Op::NEG, {a}); }

// Nodes alive in this process (for leak tests and diagnostics).
size_t live_uop_count();

// True when the dtype's values fit int64 exactly, so vmin/vmax are exact and bound-based rules apply.
bool has_exact_bounds(DType dt);

}  // namespace ugpu::ir
