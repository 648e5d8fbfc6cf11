// Decoded instructions as text, in LLVM's operand spelling, for fault messages and for checking the
// decoder against LLVM's disassembler.
#include <cstdio>
#include <string>

#include "common/hex.h"
#include "emu/amd/rdna3/inst.h"
#include "emu/amd/rdna3/wave.h"

namespace ugpu::emu::amd {
namespace {

std::string range(char file, unsigned first, unsigned count) {
  if (count <= 1) return file + std::to_string(first);
  return std::string(1, file) + "[" + std::to_string(first) + ":" + std::to_string(first + count - 1) + "]";
}

std::string sgpr(unsigned code, unsigned count) {
  if (code == kVcc) return count == 2 ? "vcc" : "vcc_lo";
  if (code == kExec) return count == 2 ? "exec" : "exec_lo";
  if (code == kNull) return "null";
  if (code == kM0) return "m0";
  if (code >= 108 && code < 124)
    return count <= 1 ? "ttmp" + std::to_string(code - 108)
                      : "ttmp[" + std::to_string(code - 108) + ":" + std::to_string(code - 108 + count - 1) + "]";
  return range('s', code, count);
}

std::string vgpr16(unsigned reg, bool hi) { return "v" + std::to_string(reg) + (hi ? ".h" : ".l"); }

std::string source(const Inst& in, int k) {
  Ty t = in.op ? in.op->src[k] : Ty::B32;
  unsigned words = bits(t) == 64 || t == Ty::Mask ? (t == Ty::Mask ? 1 : 2) : 1;
  std::string s;
  switch (in.src_kind[k]) {
    case Src::Vgpr: s = bits(t) == 16 ? vgpr16(in.src_reg[k], in.src_hi[k]) : range('v', in.src_reg[k], words); break;
    case Src::Sgpr: s = sgpr(in.src_reg[k], words); break;
    case Src::Scc: return "src_scc";
    case Src::VccZ: return "src_vccz";
    case Src::ExecZ: return "src_execz";
    case Src::Const: {
      if (in.src_reg[k] == 255) return hex(t == Ty::F64 ? in.src_const[k] >> 32 : in.src_const[k]);
      unsigned c = in.src_reg[k];
      if (c <= 192) return std::to_string(c - 128);
      if (c <= 208) return std::to_string(192 - static_cast<int>(c));
      static constexpr const char* kF[] = {"0.5", "-0.5", "1.0", "-1.0", "2.0", "-2.0", "4.0", "-4.0", "0.15915494"};
      return c >= 240 && c <= 248 ? kF[c - 240] : "?";
    }
    case Src::None: return "";
  }
  if (in.abs >> k & 1) s = "|" + s + "|";
  if (in.neg >> k & 1) s = "-" + s;
  return s;
}

}  // namespace

std::string format(const Inst& in) {
  std::string out(mnemonic(in));
  if (out.empty()) {
    char b[64];
    std::snprintf(b, sizeof b, "<%s encoding 0x%08x", name(in.enc), in.raw[0]);
    out = b;
    if (in.size >= 8) std::snprintf(b, sizeof b, " 0x%08x", in.raw[1]), out += b;
    return out + ">";
  }
  if (!in.op) return out;
  const OpDef& op = *in.op;
  std::vector<std::string> ops;
  auto dst_vgpr = [&](Ty t) { return bits(t) == 16 ? vgpr16(in.dst, in.dst_hi) : range('v', in.dst, bits(t) == 64 ? 2 : 1); };
  auto srcs = [&] {
    for (int k = 0; k < 3; ++k) {
      bool implicit = k == 2 && (op.flags & op_flag::kAccumulate);
      if (op.src[k] != Ty::None && in.src_kind[k] != Src::None && !implicit) ops.push_back(source(in, k));
    }
  };
  switch (in.enc) {
    case Enc::SOP1:
    case Enc::SOP2:
    case Enc::SOPK:
      if (op.dst != Ty::None || in.enc == Enc::SOPK) ops.push_back(sgpr(in.dst, bits(op.dst) == 64 ? 2 : 1));
      srcs();
      if (in.enc == Enc::SOPK) ops.push_back(hex(static_cast<uint16_t>(in.imm)));
      break;
    case Enc::SOPC: srcs(); break;
    case Enc::SOPP:
      if (in.imm) ops.push_back(std::to_string(in.imm));
      break;
    case Enc::SMEM:
      ops.push_back(sgpr(in.dst, op.mem_bytes / 4));
      ops.push_back(sgpr(in.src_reg[0], 2));
      if (in.saddr != kNull) ops.push_back(sgpr(in.saddr, 1) + (in.imm ? " offset:" + hex(static_cast<uint32_t>(in.imm)) : ""));
      else ops.push_back(in.imm ? hex(static_cast<uint32_t>(in.imm)) : "null");
      break;
    case Enc::VOPC:
    case Enc::VOP1:
    case Enc::VOP2:
    case Enc::VOP3:
    case Enc::VOP3SD:
    case Enc::VOP3P:
    case Enc::VOPD:
      if (op.flags & op_flag::kCompare) {
        if (!(op.flags & op_flag::kCompareExec)) ops.push_back(sgpr(in.sdst, 1));
      } else if (op.flags & op_flag::kScalarDst) {
        ops.push_back(sgpr(in.dst, 1));
      } else if (op.dst != Ty::None) {
        ops.push_back(dst_vgpr(op.dst));
      }
      if ((op.flags & op_flag::kCarryOut)) ops.push_back(sgpr(in.sdst, 1));
      srcs();
      if (in.enc == Enc::VOPD && in.dual)
        out += " " + [&] {
          std::string s;
          for (size_t i = 0; i < ops.size(); ++i) s += (i ? ", " : "") + ops[i];
          ops.clear();
          return s + " :: " + format(*in.dual);
        }();
      break;
    case Enc::DS: {
      unsigned words = (op.mem_bytes + 3) / 4;
      if (op.flags & op_flag::kLoad) ops.push_back(range('v', in.dst, words));
      ops.push_back(range('v', in.addr, 1));
      if (op.flags & op_flag::kStore) ops.push_back(range('v', in.data0, words));
      if (in.imm) ops.push_back("offset:" + std::to_string(in.imm));
      break;
    }
    case Enc::FLAT:
    case Enc::GLOBAL:
    case Enc::SCRATCH: {
      unsigned words = (op.mem_bytes + 3) / 4;
      if (op.flags & op_flag::kLoad) ops.push_back(range('v', in.dst, words));
      bool vaddr64 = in.enc == Enc::FLAT || (in.enc == Enc::GLOBAL && in.saddr == kNull);
      if (in.enc != Enc::SCRATCH || in.sve) ops.push_back(range('v', in.addr, vaddr64 ? 2 : 1));
      else ops.push_back("off");
      if (op.flags & op_flag::kStore) ops.push_back(range('v', in.data0, words));
      if (in.enc != Enc::FLAT) ops.push_back(in.saddr == kNull ? "off" : sgpr(in.saddr, in.enc == Enc::GLOBAL ? 2 : 1));
      if (in.imm) ops.push_back("offset:" + std::to_string(in.imm));
      break;
    }
  }
  for (size_t i = 0; i < ops.size(); ++i) out += (i ? ", " : " ") + ops[i];
  return out;
}

}  // namespace ugpu::emu::amd
