// ELF objects as the drivers load them: an AMDGPU code object (linked, then its kernel descriptor
// and metadata read), an x86-64 object for the cpu device, and an NVIDIA cubin's launch facts.
// The first byte picks the reader.
#include "codegen/code_object.h"
#include "codegen/elf.h"
#include "tests/fuzz/fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ugpu::codegen;
  if (size == 0) return 0;
  uint8_t pick = data[0] % 3;
  std::span<const uint8_t> file(data + 1, size - 1);
  ugpu::fuzz::refusals_ok([&] {
    if (pick == 0) (void)describe(read_amd_kernel(link_elf(file, ElfMachine::AMDGPU, 0x100000), "kernel"));
    else if (pick == 1) (void)link_elf(file, ElfMachine::X86_64, 0x7f0000000000);
    else (void)describe(read_cubin(file, "kernel"));
  });
  return 0;
}
