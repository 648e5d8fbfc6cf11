// NVIDIA's PTX assembler, when installed: PTX text to a cubin (SASS in an ELF). ugpu does not ship it;
// without it NVIDIA compiles stop at PTX and say so.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ugpu::codegen {

// $UGPU_PTXAS, else `ptxas` on PATH, else /usr/local/cuda/bin/ptxas.
std::optional<std::string> find_ptxas();
std::string ptxas_version(const std::string& ptxas);  // its `--version` text, for cache keys
// Throws Error with ptxas's own message when it rejects the PTX.
std::vector<uint8_t> run_ptxas(const std::string& ptxas, const std::string& ptx, const std::string& arch);

}  // namespace ugpu::codegen
