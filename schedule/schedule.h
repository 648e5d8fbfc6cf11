// The scheduler (docs/tensor.md): a tensor graph -> an ordered list of kernel graphs, and a memory plan.
//
// A tensor graph is a UOp graph with shapes: BUFFER leaves (reshaped to their tensor's shape), CONST
// and DEFINE_VAR scalars, movement ops (RESHAPE, EXPAND, PERMUTE, PAD, SHRINK, FLIP), CONTIGUOUS, DETACH (read through),
// elementwise ALU ops, CAST/BITCAST and REDUCE_AXIS. make_schedule() decides which nodes become
// buffers (the roots asked for, CONTIGUOUS, and reductions whose value would otherwise be computed
// again for every element they are broadcast to or inside another reduction), and writes one kernel
// per such node: its elementwise producers and consumers fused in, movement ops turned into index
// expressions over RANGEs, padding into masks. The kernels come out in an order that respects their
// dependencies, with the intermediates placed in one arena so that buffers whose lifetimes do not
// overlap share memory. Depends on `ir` only.
#pragma once
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "ir/uop.h"

namespace ugpu::schedule {

// A buffer the schedule creates: an output asked for, or an intermediate between two kernels.
struct NewBuffer {
  int64_t id;  // the id its BUFFER node gets
  ir::DType dtype;
  int64_t count;        // elements
  bool output = false;  // a root's buffer; intermediates live in the arena
  int64_t arena_offset = -1;
};

struct ScheduledKernel {
  std::string name;            // "E_4_16", "R_4_16" (a reduction inside), "..._x3" with three outputs
  ir::UOp ast;                 // SINK over STOREs into DEFINE_GLOBAL slots (docs/codegen.md)
  std::vector<int64_t> slots;  // the BUFFER id behind each DEFINE_GLOBAL slot; slots [0, outputs) are written
  size_t outputs = 1;
  size_t uops = 0;  // nodes in `ast`
};

struct Schedule {
  std::vector<ScheduledKernel> kernels;  // in an order that respects their dependencies
  std::vector<NewBuffer> buffers;
  // root i (in the order given) is the BUFFER node `results[i]`, reshaped to the root's shape; a root
  // that is already a buffer (or a view of none of its elements) maps to itself.
  std::vector<ir::UOp> results;
  int64_t arena_bytes = 0;     // memory the intermediates need together, after sharing
  int64_t unshared_bytes = 0;  // what they would need without sharing
  int64_t output_bytes = 0;
};

// Costs of computing an elementwise value inside a kernel count its ALU ops: a transcendental (EXP2,
// LOG2, SIN, POW) 8, SQRT, RECIPROCAL and FDIV 4, the others 1.
// The broadcast rule: a value a kernel reads through a broadcast (EXPAND), and so would compute again
// for every copy, is computed once into a buffer when it costs more than this.
inline constexpr int64_t kBroadcastLimit = 8;
// The recompute rule: a value that more than one kernel needs is computed in each of them, unless it
// costs more than this (then it is computed once into a buffer).
inline constexpr int64_t kRecomputeLimit = 32;

// A kernel inlines at most this many levels of ops below its store; a deeper value becomes a buffer
// (so a chain of any length schedules, in kernels of bounded depth, without deep recursion).
inline constexpr int64_t kMaxFusedDepth = 256;

// Every allocation in the arena starts at a multiple of this (above codegen::kBufferAlignment).
inline constexpr int64_t kArenaAlignment = 256;

// `new_id` hands out ids for the buffers the schedule creates. Throws Error for a graph it cannot
// schedule (an op that does not belong in a tensor graph, a shape it cannot read).
Schedule make_schedule(std::span<const ir::UOp> roots, const std::function<int64_t()>& new_id);

// The tensor-level BUFFER node and its view at `shape`.
ir::UOp buffer_node(int64_t id, ir::DType dtype, int64_t count);
ir::UOp buffer_view(int64_t id, ir::DType dtype, const ir::Shape& shape);
// Whether u is a BUFFER or RESHAPEs of one (its elements in order: loading it needs no kernel), and
// that buffer's id (Error for anything else).
bool is_buffer_view(const ir::UOp& u);
int64_t view_buffer_id(const ir::UOp& u);

}  // namespace ugpu::schedule
