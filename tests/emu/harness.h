// Test helpers for the RDNA3 executor: an address space of host buffers at device addresses, code
// objects loaded into it, and dispatches of codegen kernels or of hand-written assembly.
#pragma once
#include <cstring>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "codegen/code_object.h"
#include "codegen/compiler.h"
#include "codegen/elf.h"
#include "codegen/llvm/llvm.h"
#include "emu/amd/rdna3/executor.h"

namespace ugpu::test {

namespace amd = emu::amd;

inline const codegen::Target& gfx1100() { return codegen::find_target("gfx1100"); }

struct Gpu {
  amd::RangeMemory memory;
  amd::Executor executor;
  uint64_t next = 0x1'0000'0000;  // device addresses well away from 0, with unmapped gaps between ranges
  std::deque<std::vector<uint8_t>> owned;

  uint64_t reserve(size_t bytes) {
    uint64_t a = next;
    next += (bytes + 0xffff) / 0x10000 * 0x10000 + 0x10000;
    return a;
  }
  uint64_t map(void* host, size_t bytes, bool writable = true) {
    uint64_t a = reserve(bytes);
    memory.map(a, host, bytes, writable);
    return a;
  }
  uint64_t alloc(size_t bytes, bool writable = true) {
    auto& v = owned.emplace_back(bytes + 16, 0);
    return map(v.data(), bytes, writable);
  }
  uint8_t* host(uint64_t device) {
    auto s = memory.translate(device, 1, amd::Access::Read);
    return s ? s->host + (device - s->device) : nullptr;
  }
};

struct Loaded {
  codegen::AmdKernelInfo info;
  uint64_t base = 0, entry = 0;
};

// Lays out an AMDGPU relocatable object at a fresh device address (read-only, as code is).
inline Loaded load(Gpu& gpu, std::span<const uint8_t> object, const std::string& name) {
  size_t size = codegen::link_elf(object, codegen::ElfMachine::AMDGPU, 0, "kernel").bytes.size();
  Loaded k;
  k.base = gpu.reserve(size);
  codegen::ElfImage img = codegen::link_elf(object, codegen::ElfMachine::AMDGPU, k.base, "kernel");
  auto& bytes = gpu.owned.emplace_back(img.bytes);
  gpu.memory.map(k.base, bytes.data(), bytes.size(), false);
  k.info = codegen::read_amd_kernel(img, name);
  k.entry = k.base + k.info.entry_offset;
  return k;
}

inline amd::Dispatch dispatch_of(Gpu& gpu, const Loaded& k, uint64_t kernarg, std::array<uint32_t, 3> groups, std::array<uint32_t, 3> size) {
  amd::Dispatch d;
  d.entry = k.entry;
  d.descriptor = k.info.kd;
  d.workgroups = groups;
  d.workgroup_size = size;
  amd::DispatchPointers p;
  p.kernarg = kernarg;
  d.user_sgprs = amd::user_sgprs_for(k.info.kd, p);
  d.memory = &gpu.memory;
  return d;
}

// A codegen kernel compiled for gfx1100, loaded, its buffers (host memory) mapped in place and its
// kernargs written: ready to dispatch.
struct Prepared {
  std::shared_ptr<const codegen::CompiledKernel> ck;
  amd::Dispatch dispatch;
};
inline Prepared prepare_gfx1100(Gpu& gpu, const ir::UOp& kernel, std::vector<std::pair<void*, size_t>> buffers, std::vector<int64_t> vars = {}) {
  codegen::CompileOptions o;
  o.name = "kernel";
  Prepared p;
  p.ck = codegen::compile(kernel, gfx1100(), o);
  Loaded k = load(gpu, p.ck->binary, p.ck->kernel.name);
  std::vector<uint8_t> args;
  size_t b = 0, v = 0;
  for (const codegen::Param& param : p.ck->kernel.params) {
    const bool buffer = param.kind == codegen::Param::Kind::Buffer;
    size_t n = buffer ? 8 : static_cast<size_t>(param.dtype.itemsize());
    args.resize((args.size() + n - 1) / n * n);
    uint64_t value = buffer ? gpu.map(buffers.at(b).first, buffers.at(b).second) : static_cast<uint64_t>(vars.at(v));
    buffer ? ++b : ++v;
    args.resize(args.size() + n);
    std::memcpy(args.data() + args.size() - n, &value, n);
  }
  uint64_t kernarg = gpu.alloc(std::max<size_t>(args.size(), 8), false);
  std::memcpy(gpu.host(kernarg), args.data(), args.size());
  codegen::LaunchDims dims = codegen::launch_dims(p.ck->kernel, vars);
  std::array<uint32_t, 3> groups{}, size{};
  for (int i = 0; i < 3; ++i) groups[i] = static_cast<uint32_t>(dims.global[i]), size[i] = static_cast<uint32_t>(dims.local[i]);
  p.dispatch = dispatch_of(gpu, k, kernarg, groups, size);
  return p;
}

struct EmuRun {
  amd::RunResult result;
  std::shared_ptr<const codegen::CompiledKernel> ck;
};
inline EmuRun run_gfx1100(Gpu& gpu, const ir::UOp& kernel, std::vector<std::pair<void*, size_t>> buffers, std::vector<int64_t> vars = {},
                          unsigned threads = 0) {
  Prepared p = prepare_gfx1100(gpu, kernel, std::move(buffers), std::move(vars));
  amd::RunOptions ro;
  ro.threads = threads;
  return EmuRun{gpu.executor.run(p.dispatch, ro), p.ck};
}

// Hand-written assembly: `body` followed by s_endpgm, in a kernel whose descriptor asks for the
// kernarg pointer (s[0:1]) and workgroup id x (s2), keeps denormals, and has `lds` bytes of LDS and
// `scratch` bytes per lane.
inline std::string asm_kernel(const std::string& body, uint32_t lds = 0, uint32_t scratch = 0, const std::string& name = "k") {
  return ".amdgcn_target \"amdgcn-amd-amdhsa--gfx1100\"\n.text\n.globl " + name + "\n.p2align 8\n.type " + name + ",@function\n" + name + ":\n" +
         body + "\n  s_endpgm\n.rodata\n.p2align 6\n.amdhsa_kernel " + name +
         "\n  .amdhsa_user_sgpr_kernarg_segment_ptr 1\n  .amdhsa_system_sgpr_workgroup_id_x 1\n  .amdhsa_next_free_vgpr 64\n"
         "  .amdhsa_next_free_sgpr 96\n  .amdhsa_wavefront_size32 1\n  .amdhsa_float_denorm_mode_32 3\n"
         "  .amdhsa_float_denorm_mode_16_64 3\n  .amdhsa_group_segment_fixed_size " +
         std::to_string(lds) + "\n  .amdhsa_private_segment_fixed_size " + std::to_string(scratch) + "\n  .amdhsa_enable_private_segment " +
         (scratch ? "1" : "0") + "\n.end_amdhsa_kernel\n";
}

inline Loaded load_asm(Gpu& gpu, const std::string& text, const std::string& name = "k") {
  return load(gpu, codegen::assemble(gfx1100(), text), name);
}

}  // namespace ugpu::test
