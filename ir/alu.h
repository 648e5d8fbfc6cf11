// Evaluation of ALU ops on constants, with the semantics the generated code has: integers wrap to
// their width (index math is 64-bit), floats round to their own precision (half, bfloat16 and fp8
// are computed in float and rounded once, which is exact for + - * / sqrt), comparisons of NaN are
// false except !=. Used by constant folding and as the reference in property tests.
#pragma once
#include <optional>
#include <span>
#include <unordered_map>
#include <variant>

#include "ir/uop.h"

namespace ugpu::ir {

// int64 for integer, index and bool dtypes (uint64 as its bit pattern), double for floats.
using Scalar = std::variant<int64_t, double>;

// op applied to `args` whose dtype is `src_dtype`, giving a value of `dtype`. nullopt where the
// result is undefined and must be left to run time: integer division by zero, INT64_MIN / -1, shift
// amounts outside [0, width), or a float op on integers.
std::optional<Scalar> exec_alu(Op op, DType dtype, DType src_dtype, std::span<const Scalar> args);

// The value of a CONST node as a Scalar.
Scalar const_value(const UOp& c);
UOp const_from(DType dt, const Scalar& v);
double scalar_as_double(const Scalar& v, DType dt);

}  // namespace ugpu::ir

namespace ugpu::ir {
// Evaluates an ALU graph at a point: `env` gives the value of every leaf that is not a CONST
// (DEFINE_VAR, RANGE, SPECIAL, ...). nullopt if an op is undefined there (see exec_alu), or a node is
// neither ALU, CONST nor bound in env. Iterative; the reference for simplifier property tests.
std::optional<Scalar> evaluate(const UOp& root, const std::unordered_map<UOp, Scalar, UOpHash>& env);
}  // namespace ugpu::ir
