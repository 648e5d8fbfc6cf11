// Laying out an ELF object as one loadable image: every allocated section placed (at its address in a
// linked file, else appended at its alignment), SHT_NOBITS zero-filled, and the relocations the
// target's loader must resolve applied for a chosen base address:
//   x86-64:  R_X86_64_64, PC32, PLT32, 32, 32S, PC64 (a relocatable object from LLVM);
//   AMDGPU:  R_AMDGPU_ABS32_LO/HI, ABS64, REL32, REL64, ABS32, REL32_LO/HI;
//   CUDA:    R_CUDA_64 (type 2), and 0x38 / 0x39 (low / high 32 bits of an absolute address).
// The input is untrusted: every offset and size is checked and a bad file is an ElfError.
#pragma once
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "common/error.h"

namespace ugpu::codegen {

class ElfError : public Error {
 public:
  using Error::Error;
};

enum class ElfMachine : uint8_t { X86_64, AMDGPU, CUDA };

struct ElfSection {
  std::string name;
  uint64_t offset = 0, size = 0;  // in the image (allocated sections) or in the file (others)
  uint32_t type = 0;
  uint64_t flags = 0;
  bool allocated = false;
};

struct ElfImage {
  std::vector<uint8_t> bytes;  // the laid-out image; load it at `base`
  uint64_t base = 0;
  std::vector<ElfSection> sections;
  std::map<std::string, uint64_t> symbols;  // defined symbols: offset in the image
  const ElfSection* section(const std::string& name) const;
};

// Reads and lays out `file`; throws ElfError naming what is wrong. `what` names the file in errors.
ElfImage link_elf(std::span<const uint8_t> file, ElfMachine machine, uint64_t base, const std::string& what = "object");

// The raw bytes of a (not necessarily allocated) section, e.g. a cubin's .nv.info; empty if absent.
std::vector<uint8_t> elf_section_bytes(std::span<const uint8_t> file, const std::string& name, const std::string& what = "object");

}  // namespace ugpu::codegen
