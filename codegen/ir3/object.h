// The binary the ir3 backend makes for an Adreno (its Backend::Output::binary): the machine code and the
// facts the dispatch needs, in a small container of ugpu's own (Adreno code has no standard object
// format; Qualcomm's and Mesa's are their drivers' private structures). Little-endian:
//
//   "UIR3" magic, u32 version (1), then u32 fields: full registers (vec4 footprint), threadsize (64 or
//   128), branch stack, shared bytes, constant vec4s read, the local-id register, the workgroup-id
//   register, argument count, kernarg bytes; then (offset, bytes) per argument; then u32 instruction
//   count and the 64-bit instructions.
//
// read_ir3_object treats the bytes as untrusted: a short, oversized or inconsistent container is an
// Error saying what is wrong.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace ugpu::codegen {

struct Ir3Object {
  uint32_t full_regs = 0;     // FULLREGFOOTPRINT: vec4 registers r0..r(N-1)
  uint32_t threadsize = 64;   // fibers per wave: 64 or 128
  uint32_t branch_stack = 0;  // BRANCHSTACK (reconvergence points, halved)
  uint32_t shared_bytes = 0;  // workgroup memory
  uint32_t const_vec4 = 0;    // constants the kernel reads (its arguments), vec4s from c0
  uint32_t local_id_reg = 0;  // regid of the local id x (y, z follow)
  uint32_t wg_id_reg = 0;     // regid of the workgroup id x (y, z follow)
  struct Arg {
    uint32_t offset, bytes;  // in the constant file, bytes from c0.x
  };
  std::vector<Arg> args;  // buffers, then variables, in Param order
  uint32_t kernarg_bytes = 0;
  std::vector<uint64_t> code;
};

std::vector<uint8_t> write_ir3_object(const Ir3Object& o);
Ir3Object read_ir3_object(std::span<const uint8_t> bytes);
std::string describe(const Ir3Object& o);  // one line of the launch facts

}  // namespace ugpu::codegen
