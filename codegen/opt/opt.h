// The kernel optimizer (docs/optimizer.md): actions that reshape a kernel's loops — split an output
// axis into work-items (LOCAL) or unrolled copies (UPCAST), unroll a reduction (UNROLL), reduce
// across a workgroup (GROUP), pad an axis to a multiple (PADTO), swap two output axes (SWAP), block
// an output axis for the caches (TILE: an inner loop nested inside the kernel's other output loops),
// keep n partial sums of a reduction side by side (LANES: vector accumulators, summed at the end), run
// a reduction on a tensor core (TC, tc.cpp), copy a buffer's tiles into workgroup memory once per
// workgroup (STAGE, stage.cpp) — each checked for legality, and the heuristics that choose them per target (heuristic.cpp).
//
// Actions work on the kernel graph that lower() takes, before any pass: a split replaces RANGE r by
// `r_outer * amount + r_new`, where r_outer keeps r's axis id and type and r_new gets the next free
// id and the action's type; END and REDUCE close both. What the later passes do with the new ranges
// (codegen/passes.h) is what makes them fast: expand() unrolls UPCAST/UNROLL axes, vectorize_memory()
// turns their neighbouring accesses into vector loads and stores, add_gpudims() makes LOCAL axes
// work-items, lower_group_reduce() combines GROUP_REDUCE partials through workgroup memory.
#pragma once
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "codegen/target.h"
#include "codegen/tensor_core.h"
#include "common/error.h"
#include "ir/uop.h"

namespace ugpu::codegen::opt {

#define UGPU_OPT_OPS(X) X(LOCAL) X(UPCAST) X(UNROLL) X(GROUP) X(PADTO) X(SWAP) X(TILE) X(LANES) X(TC) X(STAGE)
enum class OptOp : uint8_t {
#define UGPU_OPT_ENUM(name) name,
  UGPU_OPT_OPS(UGPU_OPT_ENUM)
#undef UGPU_OPT_ENUM
};
std::string_view opt_op_name(OptOp op);

// One action. `axis` is a RANGE's axis id (as the kernel text shows it: `RANGE(n) {axis, TYPE}`), or
// for STAGE a buffer's slot;
// `amount` is the split size, PADTO's multiple, SWAP's other axis id, or which of the target's tensor
// cores for the kernel's input type TC uses (0: the first).
struct Opt {
  OptOp op;
  int64_t axis = 0;
  int64_t amount = 0;
  bool operator==(const Opt&) const = default;
  std::string text() const;  // "UPCAST(1, 4)"
};
std::string opts_text(std::span<const Opt> opts);  // "UPCAST(1, 4) UNROLL(2, 4)", "none" when empty
// Parses what opts_text writes (spaces or commas between actions); throws Error naming the bad part.
std::vector<Opt> parse_opts(std::string_view text);

// An action that does not apply to the kernel, with why.
class OptError : public Error {
 public:
  using Error::Error;
};

// A loop of the kernel as the optimizer sees it.
struct Axis {
  ir::UOp range;
  int64_t id;
  ir::AxisType type;
  int64_t size;  // -1 when it is not a constant
};
// Every RANGE of the kernel, by axis id.
std::vector<Axis> kernel_axes(const ir::UOp& sink);
// An output axis: one the kernel's stores vary along (GLOBAL, LOOP).
inline bool is_output(ir::AxisType t) { return t == ir::AxisType::GLOBAL || t == ir::AxisType::LOOP; }
// The product of the sizes of the axes of these types (a variable size counts as 1).
int64_t product_of(const std::vector<Axis>& axes, std::initializer_list<ir::AxisType> types);

// The next free axis id (one past the largest), for a new RANGE.
int64_t next_axis_id(const std::vector<Axis>& axes);
// Whether the kernel uses workgroup memory (DEFINE_LOCAL) or barriers.
bool has_workgroup_memory(const ir::UOp& sink);

// Whether the kernel's author already chose its shape: it has LOCAL, UPCAST, UNROLL or GROUP_REDUCE
// ranges, or workgroup memory. The heuristics leave such kernels as they are.
bool hand_optimized(const ir::UOp& sink);

// The kernel with one action applied; throws OptError when the action is not legal for the kernel on
// `target` (the message says why).
ir::UOp apply_opt(const ir::UOp& sink, const Opt& opt, const Target& target);
ir::UOp apply_opts(const ir::UOp& sink, std::span<const Opt> opts, const Target& target);

// tc.cpp: TC on reduce axis k with the target's `choice`-th tensor core for the inputs' type (see
// tc.cpp for the kernels it takes); `refuse` makes the OptError for a reason.
ir::UOp apply_tc(const ir::UOp& sink, const std::vector<Axis>& axes, const Axis& k, int64_t choice, const Target& target,
                 const std::function<OptError(const std::string&)>& refuse);
// stage.cpp: STAGE of the loads of buffer `slot` (see stage.cpp); whether a kernel has staged tiles
// (then STAGE of other buffers is the only action that still applies).
ir::UOp apply_stage(const ir::UOp& sink, const std::vector<Axis>& axes, int64_t slot, const Target& target,
                    const std::function<OptError(const std::string&)>& refuse);
bool staged(const ir::UOp& sink);
const TensorCore* kernel_tensor_core(const ir::UOp& sink);  // the tensor core of the kernel's WMMA, or nullptr
inline bool has_tensor_core(const ir::UOp& sink) { return kernel_tensor_core(sink) != nullptr; }
std::vector<const codegen::TensorCore*> tensor_cores_for(const Target& target, ir::ScalarType input);

// heuristic.cpp: the actions chosen for a kernel on a target without running anything; empty for a
// hand-optimized kernel. Every action returned applies (in order) without error.
std::vector<Opt> heuristic_opts(const ir::UOp& sink, const Target& target);

// search.cpp: BEAM search. The actions that could extend a kernel (each still checked by apply_opt),
// and the search: `measure(opts)` runs the kernel optimized with `opts` on the device and returns its
// time in seconds, or nothing when it failed or gave a wrong result (the candidate is dropped);
// measure({}) is the kernel as written. Returns the fastest actions found (empty: as written).
std::vector<Opt> candidate_actions(const ir::UOp& sink, const Target& target);
using Measure = std::function<std::optional<double>(const std::vector<Opt>& opts)>;
struct BeamOptions {
  int width = 4;                // candidates kept per round (UGPU_BEAM=N)
  int max_rounds = 5;           // actions per kernel at most
  std::string name = "kernel";  // the compile name, so that measure()'s compiles hit the cache
  // Called after each round: round, candidates timed, the best actions and their time.
  std::function<void(int, size_t, const std::vector<Opt>&, double)> progress;
};
std::vector<Opt> beam_search(const ir::UOp& sink, const Target& target, const BeamOptions& opts, const Measure& measure);

// The per-buffer access facts the heuristics use: for each load and store of a global buffer, the
// coefficient of each axis in its element index (0: the access does not move with the axis; -1: it
// moves, but not linearly).
struct Access {
  ir::UOp index;  // the INDEX node
  bool store = false;
  std::vector<int64_t> stride;  // by position in kernel_axes()
};
std::vector<Access> kernel_accesses(const ir::UOp& sink, const std::vector<Axis>& axes);

}  // namespace ugpu::codegen::opt
