// How many waves (AMD, per SIMD) or warps (NVIDIA, per SM) of a compiled kernel can be resident at
// once, from what its code object says it uses — registers, workgroup memory — and its workgroup
// size, against each target's per-SIMD / per-SM budgets. An estimate: allocation granularity is
// approximated, and the hardware's own reservations (NVIDIA's 1 KiB of shared memory per block) are
// left out.
#pragma once
#include <optional>
#include <string>

#include "codegen/compiler.h"

namespace ugpu::codegen {

struct Occupancy {
  int resident = 0, most = 0;  // waves per SIMD (AMD) or warps per SM (NVIDIA), and the target's maximum
  std::string unit;            // "waves per SIMD", "warps per SM"
  std::string limit;           // what bounds it: "VGPRs", "registers", "workgroup memory", "the maximum", ...
};

// None for x86, for NVIDIA without a cubin (no ptxas), and for a workgroup size given by variables.
std::optional<Occupancy> occupancy(const CompiledKernel& k);

}  // namespace ugpu::codegen
