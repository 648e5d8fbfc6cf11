// The ir3 backend's stages (docs/qcom.md §Compiler), shared by its files:
//
//   LoweredKernel --select (isel.cpp)--> VProgram: ir3 instructions over virtual registers, labels
//                 --allocate (regalloc.cpp)--> the same over physical registers
//                 --legalize (legalize.cpp)--> sync flags, delay nops, branch offsets, padding
//                 --> Ir3Object (object.h)
//
// A virtual register is one 32-bit scalar; a group is n consecutive ones (a multi-component load or
// store, a 64-bit address pair) that the allocator places in consecutive registers.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "codegen/ir3/object.h"
#include "codegen/kernel.h"
#include "hw/qcom/ir3.h"

namespace ugpu::codegen::ir3 {

namespace isa = hw::qcom::ir3;

// An operand of a VInst: a virtual register, a physical one (the ids the hardware delivers), or what
// the ISA encodes directly (a constant, an immediate, a float-table entry).
struct VSrc {
  enum class Kind : uint8_t { None, Virt, Phys, Const, Imm, Flut };
  Kind kind = Kind::None;
  int v = 0;  // Virt: vreg; Phys: regid; Const: const id; Imm: value; Flut: index
  bool neg = false, abs = false;
  bool half = false;  // the half register aliasing a virtual register (its low 16 bits)
  static VSrc virt(int r, bool half = false) { return {Kind::Virt, r, false, false, half}; }
  static VSrc phys(int regid) { return {Kind::Phys, regid}; }
  static VSrc cnst(int id) { return {Kind::Const, id}; }
  static VSrc imm(int32_t v) { return {Kind::Imm, v}; }
  static VSrc flut(int i) { return {Kind::Flut, i}; }
};

struct VInst {
  isa::Inst inst;  // everything but the registers (op, types, flags, offsets, components)
  int dst = -1;    // vreg of the destination (the first of `inst.components` for a load)
  bool dst_half = false;
  int dst_phys = -1;  // a physical destination (p0.x)
  std::array<VSrc, 3> src{};
  int label = -1;   // >= 0: not an instruction, the definition of this label
  int target = -1;  // branches and jumps: the label
};

struct VProgram {
  std::vector<VInst> code;
  int vregs = 0;
  std::vector<int> group_size;  // per vreg: > 0 at the first vreg of a group (its size)
  std::vector<bool> low;        // per vreg: must sit below r24 (its half alias is addressable)
  int labels = 0;
  // Loops, as (label of the loop head, index of the instruction that jumps back to it): values live at
  // the head stay live to the jump.
  std::vector<std::pair<int, size_t>> loops;
  int max_depth = 0;  // most control-flow constructs open at once (the branch stack)
  Ir3Object facts;    // arguments, shared memory, id registers (code and registers come later)
};

VProgram select(const LoweredKernel& k, const Target& t);
// Assigns physical registers; returns the full-register footprint (vec4s). Throws Error when the
// kernel needs more registers than a fiber has.
int allocate(VProgram& p, std::vector<isa::Inst>& out, std::vector<int>& label_at, const std::string& kernel);
// Adds the sync flags and delay nops the hardware needs, resolves branch targets, ends and pads.
std::vector<uint64_t> legalize(std::vector<isa::Inst> code, const std::vector<int>& label_at, std::vector<isa::Inst>* listing = nullptr);

// Register ids the dispatch delivers: local ids in r0.x..z, workgroup ids in r48.x..z (shared).
inline constexpr int kLocalIdReg = 0, kWorkgroupIdReg = 48 * 4;

}  // namespace ugpu::codegen::ir3
