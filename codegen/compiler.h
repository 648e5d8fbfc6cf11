// compile(): a kernel graph to a loadable binary for one target, with the stages kept for inspection.
//
//   kernel UOps --lower()--> instruction list --backend: render--> source --backend: compile--> binary
//
// The backend (codegen/backend.h) is LLVM for every target today: LLVM IR, then an x86 / AMDGPU ELF
// object, or PTX and a cubin from ptxas. Results are cached in memory by the kernel's content key
// (plus target, name and options) and on disk (codegen/cache.h) by a hash of the source and the
// toolchain's versions, so a new process skips the backend for kernels it has compiled before.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "codegen/code_object.h"
#include "codegen/ir3/object.h"
#include "codegen/kernel.h"
#include "codegen/opt/opt.h"

namespace ugpu::codegen {

struct CompileOptions {
  std::string name = "kernel";
  int opt_level = 2;
  bool cache = true;  // memory and disk
  bool cubin = true;  // NVIDIA: run ptxas when it is installed
  // The optimizer (codegen/opt/opt.h), before lowering: `opts` when given, else with `heuristic` the
  // actions heuristic_opts() picks (none for a kernel whose axes its author marked).
  bool heuristic = false;
  std::vector<opt::Opt> opts;
};

struct CompiledKernel {
  const Target* target = nullptr;
  LoweredKernel kernel;
  std::string source;                // what the backend compiled: LLVM IR for the LLVM backend
  std::string ptx;                   // NVIDIA targets
  std::vector<uint8_t> binary;       // x86 / AMDGPU: ELF relocatable object; NVIDIA: cubin (empty without ptxas)
  std::string note;                  // why a stage was skipped, e.g. no ptxas
  std::optional<AmdKernelInfo> amd;  // AMDGPU: the kernel descriptor, read back from the object
  std::optional<CubinInfo> cubin;    // NVIDIA with ptxas: launch facts read back from the cubin
  std::optional<Ir3Object> ir3;      // Adreno: the code and launch facts read back from the binary
  std::vector<opt::Opt> opts;        // the optimizer's actions applied before lowering
  bool disk_hit = false;
  double opt_ms = 0, lower_ms = 0, render_ms = 0, backend_ms = 0;
};

std::shared_ptr<const CompiledKernel> compile(const ir::UOp& kernel, const Target& target, const CompileOptions& opts = {});

// The drivers' byte-copy kernel (codegen::kByteCopyKernel) compiled for `target`, named ugpu_copy.
std::shared_ptr<const CompiledKernel> byte_copy_kernel(const Target& target);

// Compiles every (kernel, options) pair on up to one thread per core, into the memory cache (so the
// caller's compile() calls then hit it). A kernel that fails is skipped here; compile() raises its
// error when it is asked for it again.
void compile_in_parallel(const Target& target, const std::vector<std::pair<ir::UOp, CompileOptions>>& jobs);

// Whether compile() would answer from this process's memory cache.
bool in_memory_cache(const ir::UOp& kernel, const Target& target, const CompileOptions& opts = {});

// The ISA as text: the backend's disassembly of the object (x86, AMDGPU) or the PTX (NVIDIA).
std::string disassembly(const CompiledKernel& k);

// Memory-cache statistics for this process (tests and benchmarks).
struct CacheStats {
  size_t memory_hits = 0, disk_hits = 0, compiles = 0;
};
CacheStats cache_stats();
void clear_memory_cache();

}  // namespace ugpu::codegen
