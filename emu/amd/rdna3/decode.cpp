// RDNA3 instruction decoding: the encoding from the fixed bits, the mnemonic from hw/amd's opcode
// tables (generated from LLVM's disassembler), the semantics from the op table by mnemonic, and every
// operand resolved once — inline constants in the operand's type, literals, implicit VCC/vdst sources.
#include <cstdio>
#include <string>

#include "emu/amd/rdna3/inst.h"
#include "emu/amd/rdna3/ops.h"
#include "emu/amd/rdna3/wave.h"
#include "hw/amd/isa_gfx11.h"

namespace ugpu::emu::amd {
namespace isa = hw::amd::gfx11;
namespace {

uint32_t field(uint64_t w, int lo, int width) { return static_cast<uint32_t>((w >> lo) & ((uint64_t{1} << width) - 1)); }
int32_t sfield(uint64_t w, int lo, int width) {
  uint32_t v = field(w, lo, width);
  return static_cast<int32_t>(v << (32 - width)) >> (32 - width);
}

template <size_t N>
std::string_view lookup(const char* const (&table)[N], uint32_t op) {
  return op < N && table[op] ? table[op] : "";
}

// The value of an inline constant (operand codes 128..248) as bits of an operand of type `t`.
uint64_t inline_constant(uint32_t code, Ty t) {
  if (code >= 128 && code <= 208) {
    int64_t v = code <= 192 ? code - 128 : 192 - static_cast<int64_t>(code);
    return bits(t) == 64 ? static_cast<uint64_t>(v) : bits(t) == 16 ? static_cast<uint64_t>(v) & 0xffff : static_cast<uint32_t>(v);
  }
  static constexpr double kFloats[] = {0.5, -0.5, 1.0, -1.0, 2.0, -2.0, 4.0, -4.0};
  if (code >= 240 && code <= 248) {
    if (code == 248) return t == Ty::F16 || t == Ty::B16 ? 0x3118 : bits(t) == 64 ? 0x3fc45f306dc9c882ull : 0x3e22f983;
    double v = kFloats[code - 240];
    if (bits(t) == 16) return bits_f16(v);
    if (bits(t) == 64) return bits_of(v);
    return bits_of(static_cast<float>(v));
  }
  return 0;
}

struct Decoder {
  Decoder(const uint32_t* words, int n, Inst& out) : w(words), count(n), in(out) {}
  const uint32_t* w;
  int count;
  Inst& in;
  bool ok = true;
  std::string why;
  bool have_literal = false;
  uint32_t literal = 0;

  // Resolves source k from operand code `code` (0..511).
  void source(int k, uint32_t code, bool true16_hi = false) {
    Ty t = in.op ? in.op->src[k] : Ty::B32;
    // Packed (VOP3P) operands are 32 bits: literals whole, integer constants sign-extended, float
    // constants as f16 bits in the low half for f16 ops and as f32 bits otherwise.
    if (in.enc == Enc::VOP3P && (bits(t) == 16)) t = t == Ty::F16 && code >= 240 && code <= 248 ? Ty::F16 : Ty::B32;
    in.src_reg[k] = static_cast<uint16_t>(code);
    if (code >= 256) {
      in.src_kind[k] = Src::Vgpr;
      in.src_reg[k] = static_cast<uint16_t>(code - 256);
      if (true16_hi && bits(t) == 16) in.src_reg[k] &= 127, in.src_hi[k] = (code - 256) >> 7;
      return;
    }
    if (code < 128) {
      in.src_kind[k] = Src::Sgpr;
      return;
    }
    if (code == 255) {  // a literal dword after the encoding, shared by every operand that names it
      if (!have_literal) {
        if (count * 4 < in.size + 4) {
          ok = false, why = "literal past the end of code";
          return;
        }
        literal = w[in.size / 4];
        in.raw[2] = literal;
        in.size = static_cast<uint8_t>(in.size + 4);
        have_literal = true;
      }
      in.src_kind[k] = Src::Const;
      in.src_const[k] = t == Ty::F64 ? uint64_t{literal} << 32 : bits(t) == 16 ? literal & 0xffff : literal;
      return;
    }
    if (code == 253) {
      in.src_kind[k] = Src::Scc;
      return;
    }
    if (code == 251) {
      in.src_kind[k] = Src::VccZ;
      return;
    }
    if (code == 252) {
      in.src_kind[k] = Src::ExecZ;
      return;
    }
    if ((code >= 128 && code <= 208) || (code >= 240 && code <= 248)) {
      in.src_kind[k] = Src::Const;
      in.src_const[k] = inline_constant(code, t);
      return;
    }
    if (code == 250 || code == 233 || code == 234) {
      ok = false, why = "DPP operands are not modelled";
      return;
    }
    ok = false, why = "operand code " + std::to_string(code) + " is not modelled";
  }
  int arity() const {
    int n = 0;
    for (int k = 0; k < 3; ++k) n += in.op && in.op->src[k] != Ty::None;
    return n;
  }
  bool has(uint16_t f) const { return in.op && (in.op->flags & f); }

  void vop_sources_2(uint32_t src0, uint32_t vsrc1, bool t16) {
    source(0, src0, t16);
    if (has(op_flag::kLiteralSrc1)) {
      source(1, 255);
      source(2, 256 + vsrc1, t16);
      return;
    }
    if (arity() >= 2) source(1, 256 + vsrc1, t16);
    if (has(op_flag::kLiteralSrc2)) source(2, 255);
    else if (has(op_flag::kAccumulate)) source(2, 256 + in.dst, t16), in.src_hi[2] = in.dst_hi;
    else if (has(op_flag::kMaskFromVcc)) in.src_kind[2] = Src::Sgpr, in.src_reg[2] = kVcc;
  }

  void set_op(std::string_view mn) {
    in.op = mn.empty() ? nullptr : find_op(mn);
    if (mn.empty()) ok = false, why = "no instruction has this encoding";
    else if (!in.op) {
      const std::string_view reason = not_modelled_reason(mn);
      ok = false, why = reason.empty() ? "not implemented" : "not implemented: " + std::string(reason);
    }
  }

  void run() {
    const uint32_t d0 = w[0];
    const uint64_t d01 = count >= 2 ? (uint64_t{w[1]} << 32 | d0) : d0;
    in.raw[0] = d0;
    in.size = 4;
    auto two_dwords = [&] {
      if (count < 2) {
        ok = false, why = "a 64-bit encoding past the end of code";
        return false;
      }
      in.raw[1] = w[1];
      in.size = 8;
      return true;
    };
    if ((d0 >> 23) == 0x17D) {  // SOP1
      in.enc = Enc::SOP1;
      set_op(lookup(isa::kSop1, field(d0, 8, 8)));
      in.dst = static_cast<uint16_t>(field(d0, 16, 7));
      if (ok && in.op->src[0] != Ty::None) source(0, field(d0, 0, 8));
    } else if ((d0 >> 23) == 0x17E) {  // SOPC
      in.enc = Enc::SOPC;
      set_op(lookup(isa::kSopc, field(d0, 16, 7)));
      if (ok) source(0, field(d0, 0, 8)), source(1, field(d0, 8, 8));
    } else if ((d0 >> 23) == 0x17F) {  // SOPP
      in.enc = Enc::SOPP;
      set_op(lookup(isa::kSopp, field(d0, 16, 7)));
      in.imm = sfield(d0, 0, 16);
    } else if ((d0 >> 28) == 0xB) {  // SOPK
      in.enc = Enc::SOPK;
      set_op(lookup(isa::kSopk, field(d0, 23, 5)));
      in.dst = static_cast<uint16_t>(field(d0, 16, 7));
      in.imm = sfield(d0, 0, 16);
      if (ok && in.op->name == "s_setreg_imm32_b32") {  // SOPK followed by a 32-bit literal
        if (count < 2) {
          ok = false, why = "literal past the end of code";
          return;
        }
        in.raw[2] = w[1];
        in.size = 8;
      }
    } else if ((d0 >> 30) == 0x2) {  // SOP2
      in.enc = Enc::SOP2;
      set_op(lookup(isa::kSop2, field(d0, 23, 7)));
      in.dst = static_cast<uint16_t>(field(d0, 16, 7));
      if (ok) source(0, field(d0, 0, 8)), source(1, field(d0, 8, 8));
    } else if ((d0 >> 25) == 0x3F) {  // VOP1
      in.enc = Enc::VOP1;
      set_op(lookup(isa::kVop1, field(d0, 9, 8)));
      if (!ok) return;
      in.dst = static_cast<uint16_t>(field(d0, 17, 8));
      if (bits(in.op->dst) == 16) in.dst_hi = in.dst >> 7, in.dst &= 127;
      if (in.op->src[0] != Ty::None) source(0, field(d0, 0, 9), true);
    } else if ((d0 >> 25) == 0x3E) {  // VOPC
      in.enc = Enc::VOPC;
      set_op(lookup(isa::kVopc, field(d0, 17, 8)));
      if (!ok) return;
      source(0, field(d0, 0, 9), true);
      source(1, 256 + field(d0, 9, 8), true);
      in.sdst = has(op_flag::kCompareExec) ? kExec : kVcc;
    } else if ((d0 >> 31) == 0) {  // VOP2
      in.enc = Enc::VOP2;
      set_op(lookup(isa::kVop2, field(d0, 25, 6)));
      if (!ok) return;
      bool t16 = bits(in.op->dst) == 16 || bits(in.op->src[0]) == 16;
      in.dst = static_cast<uint16_t>(field(d0, 17, 8));
      if (bits(in.op->dst) == 16) in.dst_hi = in.dst >> 7, in.dst &= 127;
      vop_sources_2(field(d0, 0, 9), field(d0, 9, 8), t16);
      if (has(op_flag::kCarryOut)) in.sdst = kVcc;
    } else {
      const uint32_t top6 = d0 >> 26;
      if (top6 == 0x35) {  // VOP3 / VOP3SD
        if (!two_dwords()) return;
        in.enc = Enc::VOP3;
        uint32_t op = field(d0, 16, 10);
        set_op(lookup(isa::kVop3, op));
        if (!ok) return;
        in.dst = static_cast<uint16_t>(field(d0, 0, 8));
        in.clamp = field(d0, 15, 1);
        if (has(op_flag::kCarryOut)) in.enc = Enc::VOP3SD, in.sdst = static_cast<uint16_t>(field(d0, 8, 7));
        else in.abs = static_cast<uint8_t>(field(d0, 8, 3)), in.opsel = static_cast<uint8_t>(field(d0, 11, 4));
        in.neg = static_cast<uint8_t>(field(d01, 61, 3));
        in.omod = static_cast<uint8_t>(field(d01, 59, 2));
        in.dst_hi = (in.opsel >> 3) & 1;
        const uint32_t codes[3] = {field(d01, 32, 9), field(d01, 41, 9), field(d01, 50, 9)};
        int n = arity();
        for (int k = 0; k < n; ++k) {
          if (k == 2 && has(op_flag::kAccumulate)) source(2, 256 + in.dst), in.src_hi[2] = in.dst_hi;
          else source(k, codes[k]);
          if (bits(in.op->src[k]) == 16) in.src_hi[k] = (in.opsel >> k) & 1;
        }
        if (has(op_flag::kCompare)) in.sdst = has(op_flag::kCompareExec) ? kExec : in.dst;
      } else if ((d0 >> 24) == 0xCC) {  // VOP3P
        if (!two_dwords()) return;
        in.enc = Enc::VOP3P;
        set_op(lookup(isa::kVop3p, field(d0, 16, 7)));
        if (!ok) return;
        in.dst = static_cast<uint16_t>(field(d0, 0, 8));
        in.clamp = field(d0, 15, 1);
        in.neg_hi = static_cast<uint8_t>(field(d0, 8, 3));
        in.opsel = static_cast<uint8_t>(field(d0, 11, 3));
        in.opsel_hi = static_cast<uint8_t>(field(d01, 59, 2) | field(d0, 14, 1) << 2);
        in.neg = static_cast<uint8_t>(field(d01, 61, 3));
        const uint32_t codes[3] = {field(d01, 32, 9), field(d01, 41, 9), field(d01, 50, 9)};
        for (int k = 0; k < arity(); ++k) source(k, codes[k]);
      } else if (top6 == 0x32) {  // VOPD: X in this Inst, Y in `dual`
        if (!two_dwords()) return;
        in.enc = Enc::VOPD;
        decode_dual(d01);
      } else if (top6 == 0x3D) {  // SMEM
        if (!two_dwords()) return;
        in.enc = Enc::SMEM;
        set_op(lookup(isa::kSmem, field(d0, 18, 8)));
        in.dst = static_cast<uint16_t>(field(d0, 6, 7));
        in.src_reg[0] = static_cast<uint16_t>(field(d0, 0, 6) * 2);
        in.imm = sfield(d01, 32, 21);
        in.saddr = static_cast<uint16_t>(field(d01, 57, 7));  // soffset SGPR, 124 = none
        in.glc = field(d0, 14, 1);
      } else if (top6 == 0x36) {  // DS
        if (!two_dwords()) return;
        in.enc = Enc::DS;
        set_op(lookup(isa::kDs, field(d0, 18, 8)));
        in.imm = static_cast<int32_t>(field(d0, 0, 8));
        in.offset1 = static_cast<int32_t>(field(d0, 8, 8));
        in.addr = static_cast<uint16_t>(field(d01, 32, 8));
        in.data0 = static_cast<uint16_t>(field(d01, 40, 8));
        in.data1 = static_cast<uint16_t>(field(d01, 48, 8));
        in.dst = static_cast<uint16_t>(field(d01, 56, 8));
      } else if (top6 == 0x37) {  // FLAT / SCRATCH / GLOBAL
        if (!two_dwords()) return;
        uint32_t seg = field(d0, 16, 2), op = field(d0, 18, 7);
        in.enc = seg == 0 ? Enc::FLAT : seg == 1 ? Enc::SCRATCH : Enc::GLOBAL;
        set_op(seg == 0 ? lookup(isa::kFlat, op) : seg == 1 ? lookup(isa::kScratch, op) : seg == 2 ? lookup(isa::kGlobal, op) : "");
        in.imm = sfield(d0, 0, 13);
        in.glc = field(d0, 14, 1);
        in.addr = static_cast<uint16_t>(field(d01, 32, 8));
        in.data0 = static_cast<uint16_t>(field(d01, 40, 8));
        in.saddr = static_cast<uint16_t>(field(d01, 48, 7));
        in.sve = field(d01, 55, 1);
        in.dst = static_cast<uint16_t>(field(d01, 56, 8));
      } else {
        ok = false, why = "encoding not modelled (MUBUF, MTBUF, MIMG, export, VINTERP and LDS-direct are not)";
        in.size = top6 == 0x38 || top6 == 0x3A || top6 == 0x3C || top6 == 0x3E || top6 == 0x33 ? 8 : 4;
        if (in.size == 8 && count >= 2) in.raw[1] = w[1];
      }
    }
  }

  Inst* dual_out = nullptr;
  // VOPD: two VOP2/VOP1-like halves issued together. X decodes into `in`, Y into `dual_out`; each half
  // reads the shared literal (dword 2) itself.
  void decode_dual(uint64_t d01) {
    auto vopd_name = [](std::string_view n) -> std::string { return n.empty() ? std::string() : "v_" + std::string(n.substr(7)); };
    set_op(vopd_name(lookup(isa::kVopdX, field(d01, 22, 4))));
    if (!ok) return;
    in.dst = static_cast<uint16_t>(field(d01, 56, 8));
    vop_sources_2(field(d01, 0, 9), field(d01, 9, 8), false);
    if (!ok) return;
    Inst& y = *dual_out;
    y = Inst{};
    y.enc = Enc::VOPD;
    y.size = 8;
    y.raw[0] = in.raw[0], y.raw[1] = in.raw[1];
    Decoder yd{w, count, y};
    yd.set_op(vopd_name(lookup(isa::kVopdY, field(d01, 17, 5))));
    if (!yd.ok) {
      ok = false, why = "VOPD Y half: " + yd.why;
      return;
    }
    y.run = y.op->run;
    y.dst = static_cast<uint16_t>(field(d01, 49, 7) << 1 | ((in.dst & 1) ^ 1));
    yd.vop_sources_2(field(d01, 32, 9), field(d01, 41, 8), false);
    if (!yd.ok) {
      ok = false, why = "VOPD Y half: " + yd.why;
      return;
    }
    in.size = std::max(in.size, y.size);
    in.raw[2] = y.raw[2];
  }
};

void unimplemented(Wave&, const Inst&) { throw WaveFault{Fault::Kind::Unimplemented, "", 0, Access::Read, ""}; }

}  // namespace

const char* name(Enc e) {
  static constexpr const char* kNames[] = {"SOP1", "SOP2",   "SOPC",  "SOPK", "SOPP", "SMEM", "VOP1",   "VOP2",   "VOPC",
                                           "VOP3", "VOP3SD", "VOP3P", "VOPD", "DS",   "FLAT", "GLOBAL", "SCRATCH"};
  return kNames[static_cast<int>(e)];
}

std::string_view mnemonic(const Inst& in) {
  const uint32_t d0 = in.raw[0];
  const uint64_t d01 = uint64_t{in.raw[1]} << 32 | d0;
  switch (in.enc) {
    case Enc::SOP1: return lookup(isa::kSop1, field(d0, 8, 8));
    case Enc::SOP2: return lookup(isa::kSop2, field(d0, 23, 7));
    case Enc::SOPC: return lookup(isa::kSopc, field(d0, 16, 7));
    case Enc::SOPK: return lookup(isa::kSopk, field(d0, 23, 5));
    case Enc::SOPP: return lookup(isa::kSopp, field(d0, 16, 7));
    case Enc::SMEM: return lookup(isa::kSmem, field(d0, 18, 8));
    case Enc::VOP1: return lookup(isa::kVop1, field(d0, 9, 8));
    case Enc::VOP2: return lookup(isa::kVop2, field(d0, 25, 6));
    case Enc::VOPC: return lookup(isa::kVopc, field(d0, 17, 8));
    case Enc::VOP3:
    case Enc::VOP3SD: return lookup(isa::kVop3, field(d0, 16, 10));
    case Enc::VOP3P: return lookup(isa::kVop3p, field(d0, 16, 7));
    case Enc::VOPD: return in.dual || !in.op ? lookup(isa::kVopdX, field(d01, 22, 4)) : lookup(isa::kVopdY, field(d01, 17, 5));
    case Enc::DS: return lookup(isa::kDs, field(d0, 18, 8));
    case Enc::FLAT: return lookup(isa::kFlat, field(d0, 18, 7));
    case Enc::SCRATCH: return lookup(isa::kScratch, field(d0, 18, 7));
    case Enc::GLOBAL: return lookup(isa::kGlobal, field(d0, 18, 7));
  }
  return "";
}

void decode(const uint32_t* words, int count, Inst& out, Inst& dual_out) {
  out = Inst{};
  Decoder d{words, count, out};
  d.dual_out = &dual_out;
  if (count < 1) {
    out.run = unimplemented;
    return;
  }
  d.run();
  if (d.ok && out.enc == Enc::VOPD && (!out.op->compute || !dual_out.op->compute)) d.ok = false, d.why = "an op that VOPD cannot pair";
  if (d.ok && out.op) {
    out.run = out.op->run;
    if (out.enc == Enc::VOPD) out.dual = &dual_out, out.run = run_vopd;
    return;
  }
  // The wave faults when it reaches the instruction, with the mnemonic and why.
  out.op = nullptr;
  out.run = unimplemented;
  out.problem = d.why;
}

}  // namespace ugpu::emu::amd
