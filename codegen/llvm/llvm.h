// In-process LLVM: IR text to object code or assembly for a target, LLVM's disassembler and the
// AMDGPU assembler. Only llvm.cpp (and codegen/elf.cpp, for ELF reading) see LLVM's headers.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "codegen/target.h"

namespace ugpu::codegen {

struct LlvmOutput {
  std::vector<uint8_t> object;  // ELF relocatable (x86, AMDGPU); empty for NVPTX
  std::string assembly;         // NVPTX: the PTX text; others: LLVM's assembly printer output
  // Where the time went: the target machine, parsing and verifying the IR, the optimization
  // pipeline, and instruction selection to the object (or PTX).
  double machine_ms = 0, parse_ms = 0, opt_ms = 0, emit_ms = 0;
};

struct LlvmOptions {
  int opt_level = 2;           // 0..3, the new pass manager's default<O*> pipeline
  bool want_assembly = false;  // NVPTX always produces PTX
};

// LLVM's triple, CPU and feature string for `target` (the CPU and features for x86: this host's).
std::string target_triple(const Target& target);
std::string target_cpu(const Target& target);
std::string target_features(const Target& target);
std::string llvm_version();

// Throws Error with LLVM's diagnostic if the IR does not parse or verify (a bug in the renderer).
LlvmOutput compile_llvm_ir(const std::string& ir, const Target& target, const LlvmOptions& opts = {});

// Disassembles the executable sections of an ELF object with LLVM's MC disassembler, one
// instruction per line with its offset; symbols as labels.
std::string disassemble_object(const Target& target, std::span<const uint8_t> elf);

// Assembles AMDGPU assembly text (instructions and directives such as .amdhsa_kernel) into an ELF
// relocatable object; throws Error with LLVM's diagnostics when the text does not assemble.
std::vector<uint8_t> assemble(const Target& target, const std::string& text);

}  // namespace ugpu::codegen
