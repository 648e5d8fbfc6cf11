// The codegen passes, in the order lower() (codegen/lower.cpp) runs them. Each takes and returns the
// kernel's SINK and lives in its own file.
#pragma once
#include <algorithm>
#include <array>
#include <optional>
#include <string>
#include <vector>

#include "codegen/target.h"
#include "ir/uop.h"

namespace ugpu::codegen {

// The buffer (a DEFINE_GLOBAL or DEFINE_LOCAL) a pointer addresses, through the INDEXes and AFTERs on it.
inline ir::UOp buffer_of(ir::UOp pointer) {
  while (pointer.op() == ir::Op::INDEX || pointer.op() == ir::Op::AFTER) pointer = pointer.src(0);
  return pointer;
}

// lower_group.cpp: a REDUCE over a GROUP_REDUCE axis (work-items of a workgroup reducing one value
// together) becomes per-work-item partials in workgroup memory, a BARRIER, and a reduction of the
// partials; the axis becomes LOCAL and stores to global buffers are masked to its work-item 0.
ir::UOp lower_group_reduce(const ir::UOp& sink);
// Why GROUP_REDUCE range g cannot be lowered in this kernel (its barrier would sit inside a loop,
// where reuse of the workgroup memory across iterations would race); empty when it can.
std::string group_reduce_problem(const ir::UOp& sink, const ir::UOp& g);

// Whether `x` is computed from `node` (node is x or among its sources, transitively).
inline bool depends_on(const ir::UOp& x, const ir::UOp& node) {
  const auto& t = x.toposort();
  return std::find(t.begin(), t.end(), node) != t.end();
}

// Whether an END or REDUCE closes loop `range`.
inline bool closes(const ir::UOp& end_or_reduce, const ir::UOp& range) {
  auto loops = end_or_reduce.src().subspan(1);
  return std::find(loops.begin(), loops.end(), range) != loops.end();
}

// gates.cpp: a masked index `INDEX(buf, WHERE(c, i, INVALID))` becomes the gated `INDEX(buf, i, c)`;
// a LOAD through a gated index gets its value for the masked-off case (0). INVALID anywhere else is
// an error.
ir::UOp move_gates(const ir::UOp& sink);
// A LOAD or STORE through `INDEX(buf, i)` with `cond` added to its mask (before move_gates: the index
// becomes `WHERE(mask & cond, i, INVALID)`).
ir::UOp add_mask(const ir::UOp& access, const ir::UOp& cond);

// expand.cpp: UPCAST and UNROLL ranges (constant size, at most 64) are unrolled: an END's body is
// copied per iteration into a GROUP, a REDUCE's value combined across iterations with its op.
ir::UOp expand(const ir::UOp& sink);

// gpudims.cpp: GPU targets map GLOBAL ranges to workgroup ids (innermost axis to x) and LOCAL ranges
// to work-item ids, merging or flattening dimensions to fit the target's grid, and splitting the
// innermost global axis into workgroups when the kernel names no LOCAL axis. Fills the launch sizes.
// On x86 the outermost GLOBAL range is cut into contiguous pieces, one per call (`part` of `parts`,
// the function's own arguments, for worker threads), every other range stays a loop, and a BARRIER
// splits the loop over a workgroup's work-items in two (each workgroup's work-items run in turn).
ir::UOp add_gpudims(const ir::UOp& sink, const Target& target, std::array<ir::UOp, 3>& global_size, std::array<ir::UOp, 3>& local_size);

// vectorize.cpp: loads of consecutive elements of one buffer (same gate, base + 0, 1, ...), and such
// stores within one GROUP, become one access of up to 16 lanes and Target::vector_bytes() where the
// index proves the alignment.
// Values are taken out with GEP and put in with VECTORIZE.
ir::UOp vectorize_memory(const ir::UOp& sink, const Target& target);

// lower_reduce.cpp: REDUCE becomes an accumulator (DEFINE_REG) reset to the op's identity where the
// reduce's enclosing loops are, updated inside the reduce loops, read after them. Sums and products
// accumulate in at least 32 bits (float for half/bfloat16). With `fuse_multiply_add` (optimized
// kernels), a float32/float64 sum of products accumulates with FMA: each product is added unrounded.
ir::UOp lower_reduce(const ir::UOp& sink, bool fuse_multiply_add = false);
// The value a reduction starts from: 0 for ADD, 1 for MUL, -inf (the dtype's minimum) for MAX (for
// a vector dtype, a VECTORIZE of it).
ir::UOp reduce_identity(ir::Op op, ir::DType t);
// `acc op x`, except that a sum onto a tensor core's WMMA(a, b, 0) is WMMA(a, b, acc): the
// instruction accumulates itself (a chain of them accumulates through each).
ir::UOp accumulate(ir::Op op, const ir::UOp& acc, const ir::UOp& x);

// lower_index.cpp: every `index` value becomes int32, or int64 where its bounds (or a source's)
// need it.
ir::UOp lower_index_dtype(const ir::UOp& sink);

// lower_divmod.cpp: FLOORDIV/FLOORMOD on integers become the hardware's truncating CDIV/CMOD with a
// sign correction, shifts and masks for powers of two, and multiply-shift ("magic number") division
// where the dividend is known non-negative.
ir::UOp lower_divmod(const ir::UOp& sink);
// The multiplier and shift that divide every x in [0, max_x] by d (> 1) as (x * m) >> s, with
// x * m < 2^63; none when no such pair exists.
struct Magic {
  int64_t m;
  int s;
};
std::optional<Magic> magic_divisor(int64_t d, int64_t max_x);

// decompose.cpp: ops the target has no instruction for become ones it has: MULACC, POW, and the
// transcendentals EXP2, LOG2, SIN, SQRT (codegen/transcendental.h); half/bfloat16 math in float32.
ir::UOp decompose(const ir::UOp& sink, const Target& target);

// linearize.cpp: the final instruction list. Every node goes in the innermost loop open at it
// (Scopes); loops nest by which ranges occur together; inside a loop body, nodes and inner loops are
// ordered by their dependencies. A loop is RANGE ... END(range).
std::vector<ir::UOp> linearize(const ir::UOp& sink);

}  // namespace ugpu::codegen
