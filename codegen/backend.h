// A compiler backend: what turns a lowered kernel (codegen/kernel.h) into the binary a driver loads.
// codegen/ keeps everything shared by backends — the passes (lower()), compile() with its memory and
// disk caches, the code-object and cubin readers; a backend owns its source language, its toolchain
// and its machine code. llvm/ serves x86, AMDGPU and NVIDIA (LLVM IR -> object / PTX -> ptxas);
// ir3/ serves Adreno (ugpu's own selector, allocator and legalizer; no LLVM backend exists for it).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "codegen/kernel.h"

namespace ugpu::codegen {

struct CompileOptions;

class Backend {
 public:
  virtual ~Backend() = default;
  virtual const char* name() const = 0;  // "llvm"
  // The kernel in the backend's source language (LLVM IR): what it compiles, kept for inspection.
  virtual std::string render(const LoweredKernel& k, const Target& t) const = 0;
  // Everything besides the source that decides the output (toolchain versions, CPU, features): the
  // disk cache's key is a hash of both.
  virtual std::string toolchain_key(const Target& t, const CompileOptions& o) const = 0;
  struct Output {
    std::vector<uint8_t> binary;  // ELF object (x86, AMDGPU) or cubin (NVIDIA; empty without ptxas)
    std::string ptx;              // NVIDIA: the PTX text
    std::string note;             // why a stage was skipped, e.g. no ptxas
  };
  virtual Output compile(const std::string& source, const Target& t, const CompileOptions& o) const = 0;
  // The machine code as text (a disassembly, or the PTX).
  virtual std::string disassemble(const Target& t, const std::vector<uint8_t>& binary, const std::string& ptx) const = 0;
};

// The backend that compiles for `t`.
const Backend& backend_for(const Target& t);
const Backend& ir3_backend();

}  // namespace ugpu::codegen
