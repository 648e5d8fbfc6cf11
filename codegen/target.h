// What codegen needs to know about a compile target: launch limits, and which ops the hardware runs
// natively (the rest are decomposed before a backend sees them). One table row per target in
// target.cpp; what a backend needs beyond this (LLVM's triple, CPU and features) is the backend's own
// table (codegen/llvm/llvm.cpp).
#pragma once
#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "ir/dtype.h"
#include "ir/ops.h"

namespace ugpu::codegen {

enum class Arch : uint8_t { X86, AMDGPU, NVPTX, IR3 };

struct Target {
  std::string_view name;  // what --target takes: "x86", "gfx1100", "sm_90", "a630"
  Arch arch;
  // Launch limits (GPU targets): grid in workgroups per dimension, work-items per workgroup.
  std::array<int64_t, 3> max_grid;
  std::array<int64_t, 3> max_local;
  int64_t max_local_total;
  int64_t max_shared_bytes;
  int64_t default_local;  // work-items per workgroup when a kernel names none
  int wave_size;
  ir::OpSet native_f32;  // transcendental ops with a hardware instruction for float32 (EXP2, LOG2, SQRT)
  ir::OpSet native_f64;
  bool has_f64 = true;  // 64-bit floats at all (an Adreno has none: such kernels are refused)

  bool gpu() const { return arch != Arch::X86; }
  // The widest vector load or store codegen makes: 16 bytes on GPUs (dwordx4, v4.f32); on x86 the
  // host's vector registers (64 bytes with AVX-512, 32 with AVX2, else 16), since x86 code is compiled
  // for the host CPU.
  int vector_bytes() const;
  std::string_view arch_name() const;
  // A buffer's address space in the generated code (LLVM numbering).
  int global_addrspace() const { return gpu() ? 1 : 0; }
};

// The target named `name`; throws Error listing the valid names.
const Target& find_target(std::string_view name);
std::span<const Target> all_targets();
std::string target_names();  // "x86, gfx1100, ..." for messages

}  // namespace ugpu::codegen
