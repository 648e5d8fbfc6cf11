// Launch facts read back from compiled binaries: the AMD kernel descriptor of an AMDGPU code object,
// and the .nv.info records of an NVIDIA cubin. Both readers treat the file as untrusted.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "codegen/elf.h"
#include "hw/amd/kernel_descriptor.h"
#include "hw/nv/nv_info.h"

namespace ugpu::codegen {

struct AmdKernelInfo {
  std::string name;
  hw::amd::KernelDescriptor kd{};
  uint64_t kd_offset = 0;     // in the image
  uint64_t entry_offset = 0;  // first instruction, in the image
  bool wave32 = false;
  int vgprs = 0;  // per work-item, from the granulated count
  int user_sgpr_count = 0;
  std::vector<std::string> user_sgprs;  // what the kernel asks to be preloaded, in order
  uint32_t lds_bytes() const { return kd.group_segment_fixed_size; }
  uint32_t scratch_bytes() const { return kd.private_segment_fixed_size; }
  uint32_t kernarg_bytes() const { return kd.kernarg_size; }
};
// `image` from link_elf(..., ElfMachine::AMDGPU, ...); finds `<name>.kd`.
AmdKernelInfo read_amd_kernel(const ElfImage& image, const std::string& name);
std::string describe(const AmdKernelInfo& k);

struct CubinInfo {
  std::string name;
  uint64_t text_offset = 0, text_size = 0;    // `.text.<name>` in the image
  uint32_t param_offset = 0, param_size = 0;  // kernel parameters in constant bank 0
  uint32_t registers = 0;
  uint32_t shared_bytes = 0;  // static shared memory (.nv.shared.<name>)
  uint32_t stack_bytes = 0;   // per-thread local memory the kernel needs (EIATTR_MIN_STACK_SIZE)
  uint32_t cbank0_size = 0;   // `.nv.constant0.<name>`
};
CubinInfo read_cubin(std::span<const uint8_t> cubin, const std::string& name);
std::string describe(const CubinInfo& c);

}  // namespace ugpu::codegen
