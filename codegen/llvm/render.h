// The LLVM IR renderer: a lowered kernel's instruction list as LLVM IR text for its target.
//
// Signatures: GPU kernels take their arguments directly (buffers as `ptr addrspace(1)`, then the
// variables); on x86 the function is `void name(const uint64_t* args)` with the same arguments as
// 64-bit slots, so a host caller needs one signature for every kernel.
#pragma once
#include <string>

#include "codegen/kernel.h"

namespace ugpu::codegen {

std::string render_llvm_ir(const LoweredKernel& kernel, const Target& target);

}  // namespace ugpu::codegen
