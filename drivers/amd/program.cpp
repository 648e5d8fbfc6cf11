// Programs: a codegen code object laid out at its GPU address, the descriptor turned into the
// register values of a dispatch, and the kernarg layout of the AMDGPU ABI.
#include <cstring>

#include "codegen/elf.h"
#include "drivers/amd/internal.h"

namespace ugpu::amd {

AmdProgram::AmdProgram(AmdDevice& dev, std::shared_ptr<const codegen::CompiledKernel> k) : kernel(std::move(k)) {
  name = kernel->kernel.name;
  const std::string what = "kernel " + name;
  size_t size = codegen::link_elf(kernel->binary, codegen::ElfMachine::AMDGPU, 0, what).bytes.size();
  code = dev.alloc(size);  // heap blocks are 256-byte aligned, as code must be
  codegen::ElfImage img = codegen::link_elf(kernel->binary, codegen::ElfMachine::AMDGPU, code.va, what);
  info = codegen::read_amd_kernel(img, name);
  entry = code.va + info.entry_offset;
  if (entry % 256) throw Error(what + ": its first instruction is not 256-byte aligned");
  dev.upload(code, img.bytes);
  dev.invalidate_code();  // the HDP flush makes the copy visible; the instruction cache forgets old code here

  namespace cp = hw::amd::code_props;
  const hw::amd::KernelDescriptor& kd = info.kd;
  const uint16_t props = kd.kernel_code_properties;
  if (cp::kQueuePtr.get(props) || cp::kDispatchId.get(props) || cp::kFlatScratchInit.get(props) || cp::kPrivateSegmentSize.get(props))
    throw Error(what +
                ": it asks for user SGPRs ugpu does not set up (queue pointer, dispatch id, flat scratch init or private "
                "segment size): kernel_code_properties " +
                std::to_string(props));
  if (!info.wave32) throw Error(what + ": a wave64 kernel; ugpu launches wave32 kernels on " + dev.target());
  if (kd.group_segment_fixed_size > 64 * 1024)
    throw Error(what + ": " + std::to_string(kd.group_segment_fixed_size) + " bytes of LDS; a workgroup has 64 KiB");
  rsrc1 = hw::amd::rsrc1::kPriv.set(kd.compute_pgm_rsrc1, 1);  // gfx11: needed for context save/restore
  rsrc2 = hw::amd::rsrc2::kLdsGranules.set(kd.compute_pgm_rsrc2, (kd.group_segment_fixed_size + 511) / 512);
  rsrc3 = kd.compute_pgm_rsrc3;
  scratch_per_lane = kd.private_segment_fixed_size;
  dispatch_ptr = cp::kDispatchPtr.get(props);

  // Arguments: buffers are 8-byte pointers, variables their own size, each naturally aligned.
  uint32_t at = 0;
  for (const codegen::Param& param : kernel->kernel.params) {
    const bool buffer = param.kind == codegen::Param::Kind::Buffer;
    uint32_t n = buffer ? 8 : static_cast<uint32_t>(param.dtype.itemsize());
    at = (at + n - 1) / n * n;
    arg_layout.push_back({at, n});
    at += n;
    (buffer ? buffers : vars) += 1;
  }
  user_args_bytes = std::max(at, kd.kernarg_size);
  user_args_bytes = (user_args_bytes + 15) / 16 * 16;
  kernarg_bytes = user_args_bytes + (dispatch_ptr ? 64 : 0);
  if (vars == 0) fixed_dims = codegen::launch_dims(kernel->kernel, {});
}

}  // namespace ugpu::amd
