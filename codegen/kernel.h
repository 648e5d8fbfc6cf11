// A kernel as codegen hands it to a backend: the final instruction list and the launch facts.
//
// The input is a kernel graph (docs/codegen.md): SINK over STOREs (closed by END over their RANGEs)
// into DEFINE_GLOBAL buffers, with LOADs, INDEX, REDUCE, DEFINE_VAR, DEFINE_LOCAL and BARRIER.
// lower() runs the passes (codegen/passes.h) and linearizes the result.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "codegen/target.h"
#include "ir/uop.h"

namespace ugpu::codegen {

// Every buffer a kernel is given starts at a multiple of this many bytes: vector accesses
// (codegen/vectorize.cpp) and the backends' `align` attributes rely on it, and runtimes allocate so.
inline constexpr int kBufferAlignment = 16;

// A kernel argument. Arguments are the buffers in slot order, then the variables in name order.
struct Param {
  enum class Kind : uint8_t { Buffer, Var };
  Kind kind;
  int64_t slot = 0;                    // buffers: DEFINE_GLOBAL's slot
  ir::DType dtype;                     // buffers: the element pointer type; variables: int32 or int64 after lowering
  std::string name;                    // variables: their name; buffers: "data<slot>"
  int64_t min = 0, max = 0;            // variables: bounds the caller promises
  bool read = false, written = false;  // buffers: whether the kernel loads from / stores to it
  ir::UOp node;                        // the DEFINE_GLOBAL / DEFINE_VAR in the lowered graph
};

struct LoweredKernel {
  std::string name;
  std::vector<ir::UOp> linear;  // the instruction list; a loop is RANGE ... END(range)
  std::vector<Param> params;
  // Launch geometry (GPU targets): workgroups per grid dimension and work-items per workgroup, as
  // expressions of the variables (constants when the kernel has none). All 1 on x86.
  std::array<ir::UOp, 3> global_size, local_size;
  int64_t shared_bytes = 0;  // static workgroup memory (DEFINE_LOCAL)
  ir::UOp sink;              // the lowered graph the list was made from
};

// The kernel's name as LLVM and ELF see it: [A-Za-z0-9_], not starting with a digit.
std::string sanitize_kernel_name(const std::string& name);

// Runs every pass for `target` and linearizes. Throws Error (with the offending node) when the kernel
// is malformed or cannot run on the target.
// `fuse_multiply_add`: sums of products accumulate with FMA (one rounding per step; compile() asks
// for it when the optimizer reshaped the kernel, whose sums are reordered anyway).
LoweredKernel lower(const ir::UOp& kernel, const Target& target, const std::string& name = "kernel", bool fuse_multiply_add = false);

// The instruction list as text, one instruction per line, loop bodies indented.
std::string format_linear(const LoweredKernel& k);

// Values of the launch geometry for given variable values (in params order, variables only).
struct LaunchDims {
  std::array<int64_t, 3> global{1, 1, 1}, local{1, 1, 1};
};
LaunchDims launch_dims(const LoweredKernel& k, const std::vector<int64_t>& var_values);

}  // namespace ugpu::codegen
