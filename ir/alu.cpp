#include "ir/alu.h"

#include <bit>
#include <cmath>
#include <limits>

namespace ugpu::ir {

Scalar const_value(const UOp& c) {
  if (const double* d = std::get_if<double>(&c.arg())) return *d;
  return c.const_int();
}

UOp const_from(DType dt, const Scalar& v) {
  if (const double* d = std::get_if<double>(&v)) return UOp::const_float(dt, *d);
  return UOp::const_int(dt, std::get<int64_t>(v));
}

double scalar_as_double(const Scalar& v, DType dt) {
  if (const double* d = std::get_if<double>(&v)) return *d;
  int64_t i = std::get<int64_t>(v);
  return dt.is_unsigned() ? static_cast<double>(static_cast<uint64_t>(i)) : static_cast<double>(i);
}

namespace {

using u64 = uint64_t;

// The unsigned value of an integer of type t held in an int64 (masked to the width).
u64 as_unsigned(int64_t v, DType t) {
  int bits = t.is_index() ? 64 : t.bitsize();
  return bits >= 64 ? static_cast<u64>(v) : static_cast<u64>(v) & ((u64{1} << bits) - 1);
}

std::optional<int64_t> int_binary(Op op, DType t, int64_t a, int64_t b) {
  bool uns = t.is_unsigned() || t.is_bool();
  u64 ua = as_unsigned(a, t), ub = as_unsigned(b, t);
  int width = t.is_index() ? 64 : t.bitsize();
  auto less = [&] { return uns ? ua < ub : a < b; };
  switch (op) {
    case Op::ADD: return static_cast<int64_t>(ua + ub);
    case Op::SUB: return static_cast<int64_t>(ua - ub);
    case Op::MUL: return static_cast<int64_t>(ua * ub);
    case Op::MAX: return less() ? b : a;
    case Op::AND: return a & b;
    case Op::OR: return a | b;
    case Op::XOR: return a ^ b;
    case Op::CMPLT: return less();
    case Op::CMPNE: return ua != ub;
    case Op::CMPEQ: return ua == ub;
    case Op::SHL:
      if (b < 0 || ub >= static_cast<u64>(width)) return std::nullopt;
      return static_cast<int64_t>(ua << ub);
    case Op::SHR:
      if (b < 0 || ub >= static_cast<u64>(width)) return std::nullopt;
      return uns ? static_cast<int64_t>(ua >> ub) : a >> b;
    case Op::CDIV:
    case Op::CMOD:
    case Op::FLOORDIV:
    case Op::FLOORMOD: {
      if (ub == 0) return std::nullopt;
      if (uns) return static_cast<int64_t>((op == Op::CDIV || op == Op::FLOORDIV) ? ua / ub : ua % ub);
      if (a == std::numeric_limits<int64_t>::min() && b == -1) return std::nullopt;
      int64_t q = a / b, r = a % b;
      if ((op == Op::FLOORDIV || op == Op::FLOORMOD) && r != 0 && ((r < 0) != (b < 0))) q -= 1, r += b;
      return (op == Op::CDIV || op == Op::FLOORDIV) ? q : r;
    }
    default: return std::nullopt;
  }
}

// Float arithmetic in the dtype's working precision: double for double, float otherwise.
template <class F>
double float_op(Op op, F a, F b) {
  switch (op) {
    case Op::ADD: return a + b;
    case Op::SUB: return a - b;
    case Op::MUL: return a * b;
    case Op::FDIV: return a / b;
    case Op::MAX: return (a < b || std::isnan(b)) ? static_cast<double>(b) : static_cast<double>(a);
    case Op::POW: return std::pow(a, b);
    case Op::CMPLT: return a < b;
    case Op::CMPNE: return a != b;
    case Op::CMPEQ: return a == b;
    default: return NAN;
  }
}
template <class F>
double float_unary(Op op, F a) {
  switch (op) {
    case Op::NEG: return -a;
    case Op::EXP2: return std::exp2(a);
    case Op::LOG2: return std::log2(a);
    case Op::SIN: return std::sin(a);
    case Op::SQRT: return std::sqrt(a);
    case Op::RECIPROCAL: return F(1) / a;
    case Op::TRUNC: return std::trunc(a);
    default: return NAN;
  }
}

std::optional<Scalar> convert(Op op, DType to, DType from, const Scalar& v) {
  if (op == Op::BITCAST) {
    if (to.bitsize() != from.bitsize()) return std::nullopt;
    u64 bits;
    if (const double* d = std::get_if<double>(&v)) bits = from.scalar == ScalarType::Double ? std::bit_cast<u64>(*d) : float_to_bits(*d, from);
    else bits = as_unsigned(std::get<int64_t>(v), from);
    if (to.scalar == ScalarType::Double) return std::bit_cast<double>(bits);
    if (to.is_float()) return float_from_bits(static_cast<uint32_t>(bits), to);
    return wrap_int(static_cast<int64_t>(bits), to);
  }
  if (const double* d = std::get_if<double>(&v)) {
    if (to.is_float()) return round_float(*d, to);
    return wrap_int(float_to_int(*d, to.is_index() ? dtypes::int64 : to), to);
  }
  int64_t i = std::get<int64_t>(v);
  if (to.is_float()) return int_to_float(i, from, to);
  if (to.is_bool()) return int64_t{as_unsigned(i, from) != 0};
  return wrap_int(i, to);
}

}  // namespace

std::optional<Scalar> exec_alu(Op op, DType dtype, DType src_dtype, std::span<const Scalar> args) {
  if (op == Op::CAST || op == Op::BITCAST) return convert(op, dtype, src_dtype, args[0]);
  if (op == Op::WHERE) return std::get<int64_t>(args[0]) ? args[1] : args[2];
  if (!src_dtype.is_float()) {
    const int64_t* a = std::get_if<int64_t>(&args[0]);
    if (!a) return std::nullopt;
    if (op == Op::NEG) return wrap_int(static_cast<int64_t>(0 - static_cast<u64>(*a)), dtype);
    if (op == Op::TRUNC) return *a;
    if (op == Op::MULACC) {
      auto p = int_binary(Op::MUL, src_dtype, *a, std::get<int64_t>(args[1]));
      auto s = int_binary(Op::ADD, src_dtype, *p, std::get<int64_t>(args[2]));
      return wrap_int(*s, dtype);
    }
    if (args.size() != 2) return std::nullopt;
    auto r = int_binary(op, src_dtype, *a, std::get<int64_t>(args[1]));
    if (!r) return std::nullopt;
    return wrap_int(*r, dtype);
  }
  auto f = [&](size_t i) { return std::get<double>(args[i]); };
  bool wide = src_dtype.scalar == ScalarType::Double;
  double r;
  if (args.size() == 1) r = wide ? float_unary(op, f(0)) : float_unary(op, static_cast<float>(f(0)));
  else if (op == Op::MULACC) {
    double p = round_float(wide ? f(0) * f(1) : double(float(f(0)) * float(f(1))), src_dtype);
    r = wide ? p + f(2) : double(float(p) + float(f(2)));
  } else if (op == Op::FMA) {
    r = wide ? std::fma(f(0), f(1), f(2)) : double(std::fma(float(f(0)), float(f(1)), float(f(2))));
  } else if (args.size() == 2) r = wide ? float_op(op, f(0), f(1)) : float_op(op, static_cast<float>(f(0)), static_cast<float>(f(1)));
  else return std::nullopt;
  if (is_comparison(op)) return static_cast<int64_t>(r != 0);
  if (!is_alu(op) || op == Op::CDIV || op == Op::CMOD || op == Op::FLOORDIV || op == Op::FLOORMOD || op == Op::SHL || op == Op::SHR ||
      op == Op::AND || op == Op::OR || op == Op::XOR)
    return std::nullopt;
  return round_float(r, dtype);
}

}  // namespace ugpu::ir

namespace ugpu::ir {

std::optional<Scalar> evaluate(const UOp& root, const std::unordered_map<UOp, Scalar, UOpHash>& env) {
  std::unordered_map<const void*, Scalar> val;
  for (const UOp& n : root.toposort()) {
    std::optional<Scalar> r;
    if (auto it = env.find(n); it != env.end()) r = it->second;
    else if (n.op() == Op::CONST) r = const_value(n);
    else if (is_alu(n.op())) {
      std::vector<Scalar> args;
      for (const UOp& s : n.src()) args.push_back(val.at(s.get()));
      r = exec_alu(n.op(), n.dtype(), n.src(n.op() == Op::WHERE ? 1 : 0).dtype(), args);
    }
    if (!r) return std::nullopt;
    val.emplace(n.get(), *r);
  }
  return val.at(root.get());
}

}  // namespace ugpu::ir
