// Transcendental functions built from +, *, /, comparisons and bit operations, for targets without
// the instruction (x86 has none; NVIDIA's are approximate). float32, half and bfloat16 are computed in
// float64 and rounded once; float64 uses longer polynomials. NaN and infinities follow IEEE / C's
// libm: exp2(-inf) = 0, log2(0) = -inf, log2(x < 0) = NaN, sin(inf) = NaN, pow as C's pow.
// Accuracy (measured by tests/codegen against the host libm): see docs/codegen.md.
#pragma once
#include "ir/uop.h"

namespace ugpu::codegen {

ir::UOp transcendental(ir::Op op, const ir::UOp& x);  // EXP2, LOG2 or SIN of a float value
ir::UOp xpow(const ir::UOp& base, const ir::UOp& exponent, bool has_f64 = true);

}  // namespace ugpu::codegen
