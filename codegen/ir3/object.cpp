#include "codegen/ir3/object.h"

#include <cstring>

#include "common/error.h"

namespace ugpu::codegen {
namespace {
constexpr char kMagic[4] = {'U', 'I', 'R', '3'};
constexpr uint32_t kVersion = 1;
constexpr uint32_t kMaxArgs = 4096, kMaxInstructions = 1u << 22;  // 32 MiB of code: far past any kernel

void put32(std::vector<uint8_t>& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(uint8_t(v >> (8 * i)));
}
}  // namespace

std::vector<uint8_t> write_ir3_object(const Ir3Object& o) {
  std::vector<uint8_t> out(kMagic, kMagic + 4);
  for (uint32_t v : {kVersion, o.full_regs, o.threadsize, o.branch_stack, o.shared_bytes, o.const_vec4, o.local_id_reg, o.wg_id_reg,
                     uint32_t(o.args.size()), o.kernarg_bytes})
    put32(out, v);
  for (const Ir3Object::Arg& a : o.args) put32(out, a.offset), put32(out, a.bytes);
  put32(out, uint32_t(o.code.size()));
  for (uint64_t w : o.code) put32(out, uint32_t(w)), put32(out, uint32_t(w >> 32));
  return out;
}

Ir3Object read_ir3_object(std::span<const uint8_t> b) {
  size_t at = 0;
  auto fail = [&](const std::string& why) -> Error { return Error("not a ugpu ir3 object: " + why); };
  auto get = [&]() {
    if (at + 4 > b.size()) throw fail("it ends at byte " + std::to_string(b.size()) + ", inside its header or tables");
    uint32_t v = uint32_t(b[at]) | uint32_t(b[at + 1]) << 8 | uint32_t(b[at + 2]) << 16 | uint32_t(b[at + 3]) << 24;
    at += 4;
    return v;
  };
  if (b.size() < 4 || std::memcmp(b.data(), kMagic, 4) != 0) throw fail("no UIR3 magic");
  at = 4;
  if (uint32_t v = get(); v != kVersion) throw fail("version " + std::to_string(v) + " (this build reads version 1)");
  Ir3Object o;
  o.full_regs = get(), o.threadsize = get(), o.branch_stack = get(), o.shared_bytes = get(), o.const_vec4 = get();
  o.local_id_reg = get(), o.wg_id_reg = get();
  uint32_t nargs = get();
  o.kernarg_bytes = get();
  if (o.full_regs > 48) throw fail(std::to_string(o.full_regs) + " full registers (at most 48)");
  if (o.threadsize != 64 && o.threadsize != 128) throw fail("threadsize " + std::to_string(o.threadsize));
  if (o.shared_bytes > 32768) throw fail(std::to_string(o.shared_bytes) + " bytes of shared memory (at most 32768)");
  if (o.const_vec4 > 256 || o.kernarg_bytes > o.const_vec4 * 16) throw fail("arguments past the 256 vec4 constant file");
  if (o.local_id_reg > 0xfc || o.wg_id_reg > 0xfc) throw fail("an id register past r63");
  if (nargs > kMaxArgs) throw fail(std::to_string(nargs) + " arguments");
  for (uint32_t i = 0; i < nargs; ++i) {
    Ir3Object::Arg a{get(), get()};
    if ((a.bytes != 4 && a.bytes != 8) || a.offset % 4 || uint64_t{a.offset} + a.bytes > o.kernarg_bytes)
      throw fail("argument " + std::to_string(i) + " at " + std::to_string(a.offset) + " of " + std::to_string(a.bytes) + " bytes");
    o.args.push_back(a);
  }
  uint32_t n = get();
  if (n == 0 || n > kMaxInstructions || n % 16) throw fail(std::to_string(n) + " instructions (a multiple of 16 is expected)");
  if (b.size() - at != size_t{n} * 8)
    throw fail("the code is " + std::to_string(b.size() - at) + " bytes, not " + std::to_string(n) + " instructions");
  o.code.resize(n);
  for (uint32_t i = 0; i < n; ++i) {
    uint64_t lo = get(), hi = get();
    o.code[i] = lo | hi << 32;
  }
  return o;
}

std::string describe(const Ir3Object& o) {
  return std::to_string(o.code.size()) + " instructions, " + std::to_string(o.full_regs) + " vec4 registers, wave " + std::to_string(o.threadsize) +
         ", " + std::to_string(o.shared_bytes) + " shared bytes, " + std::to_string(o.const_vec4) + " constant vec4s, branch stack " +
         std::to_string(o.branch_stack);
}

}  // namespace ugpu::codegen
