#include "hw/qcom/ir3.h"

#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "common/error.h"
#include "common/hex.h"

namespace ugpu::hw::qcom::ir3 {
namespace {

// One row per instruction: op, mnemonic, category, hardware opcode field, sub-field (cat0: BRTYPE of the
// branch family; cat3: 1 for the alternate form), sources, half (cat3 normal-form precision).
struct Row {
  Op op;
  const char* name;
  uint8_t cat, opc, sub, srcs;
  bool half;
};
constexpr Row kRows[] = {
    {Op::NOP, "nop", 0, 0, 0, 0, false},
    {Op::BR, "br", 0, 1, 0, 0, false},
    {Op::BRAO, "brao", 0, 1, 1, 0, false},
    {Op::BRAA, "braa", 0, 1, 2, 0, false},
    {Op::BANY, "bany", 0, 1, 4, 0, false},
    {Op::BALL, "ball", 0, 1, 5, 0, false},
    {Op::JUMP, "jump", 0, 2, 0, 0, false},
    {Op::END, "end", 0, 6, 0, 0, false},
    {Op::MOV, "mov", 1, 0, 0, 1, false},
    {Op::ADD_F, "add.f", 2, 0, 0, 2, false},
    {Op::MIN_F, "min.f", 2, 1, 0, 2, false},
    {Op::MAX_F, "max.f", 2, 2, 0, 2, false},
    {Op::MUL_F, "mul.f", 2, 3, 0, 2, false},
    {Op::SIGN_F, "sign.f", 2, 4, 0, 1, false},
    {Op::CMPS_F, "cmps.f", 2, 5, 0, 2, false},
    {Op::ABSNEG_F, "absneg.f", 2, 6, 0, 1, false},
    {Op::CMPV_F, "cmpv.f", 2, 7, 0, 2, false},
    {Op::FLOOR_F, "floor.f", 2, 9, 0, 1, false},
    {Op::CEIL_F, "ceil.f", 2, 10, 0, 1, false},
    {Op::RNDNE_F, "rndne.f", 2, 11, 0, 1, false},
    {Op::RNDAZ_F, "rndaz.f", 2, 12, 0, 1, false},
    {Op::TRUNC_F, "trunc.f", 2, 13, 0, 1, false},
    {Op::ADD_U, "add.u", 2, 16, 0, 2, false},
    {Op::ADD_S, "add.s", 2, 17, 0, 2, false},
    {Op::SUB_U, "sub.u", 2, 18, 0, 2, false},
    {Op::SUB_S, "sub.s", 2, 19, 0, 2, false},
    {Op::CMPS_U, "cmps.u", 2, 20, 0, 2, false},
    {Op::CMPS_S, "cmps.s", 2, 21, 0, 2, false},
    {Op::MIN_U, "min.u", 2, 22, 0, 2, false},
    {Op::MIN_S, "min.s", 2, 23, 0, 2, false},
    {Op::MAX_U, "max.u", 2, 24, 0, 2, false},
    {Op::MAX_S, "max.s", 2, 25, 0, 2, false},
    {Op::ABSNEG_S, "absneg.s", 2, 26, 0, 1, false},
    {Op::AND_B, "and.b", 2, 28, 0, 2, false},
    {Op::OR_B, "or.b", 2, 29, 0, 2, false},
    {Op::NOT_B, "not.b", 2, 30, 0, 1, false},
    {Op::XOR_B, "xor.b", 2, 31, 0, 2, false},
    {Op::CMPV_U, "cmpv.u", 2, 33, 0, 2, false},
    {Op::CMPV_S, "cmpv.s", 2, 34, 0, 2, false},
    {Op::MUL_U24, "mul.u24", 2, 48, 0, 2, false},
    {Op::MUL_S24, "mul.s24", 2, 49, 0, 2, false},
    {Op::MULL_U, "mull.u", 2, 50, 0, 2, false},
    {Op::BFREV_B, "bfrev.b", 2, 51, 0, 1, false},
    {Op::CLZ_S, "clz.s", 2, 52, 0, 1, false},
    {Op::CLZ_B, "clz.b", 2, 53, 0, 1, false},
    {Op::SHL_B, "shl.b", 2, 54, 0, 2, false},
    {Op::SHR_B, "shr.b", 2, 55, 0, 2, false},
    {Op::ASHR_B, "ashr.b", 2, 56, 0, 2, false},
    {Op::MGEN_B, "mgen.b", 2, 58, 0, 2, false},
    {Op::GETBIT_B, "getbit.b", 2, 59, 0, 2, false},
    {Op::CBITS_B, "cbits.b", 2, 61, 0, 1, false},
    {Op::MAD_U16, "mad.u16", 3, 0, 0, 3, true},
    {Op::MADSH_U16, "madsh.u16", 3, 1, 0, 3, false},
    {Op::MAD_S16, "mad.s16", 3, 2, 0, 3, true},
    {Op::MADSH_M16, "madsh.m16", 3, 3, 0, 3, false},
    {Op::MAD_U24, "mad.u24", 3, 4, 0, 3, false},
    {Op::MAD_S24, "mad.s24", 3, 5, 0, 3, false},
    {Op::MAD_F16, "mad.f16", 3, 6, 0, 3, true},
    {Op::MAD_F32, "mad.f32", 3, 7, 0, 3, false},
    {Op::SEL_B16, "sel.b16", 3, 8, 0, 3, true},
    {Op::SEL_B32, "sel.b32", 3, 9, 0, 3, false},
    {Op::SEL_S16, "sel.s16", 3, 10, 0, 3, true},
    {Op::SEL_S32, "sel.s32", 3, 11, 0, 3, false},
    {Op::SEL_F16, "sel.f16", 3, 12, 0, 3, true},
    {Op::SEL_F32, "sel.f32", 3, 13, 0, 3, false},
    {Op::SAD_S16, "sad.s16", 3, 14, 0, 3, true},
    {Op::SAD_S32, "sad.s32", 3, 15, 0, 3, false},
    {Op::SHRM, "shrm", 3, 8, 1, 3, false},
    {Op::SHLM, "shlm", 3, 9, 1, 3, false},
    {Op::SHRG, "shrg", 3, 10, 1, 3, false},
    {Op::SHLG, "shlg", 3, 11, 1, 3, false},
    {Op::ANDG, "andg", 3, 12, 1, 3, false},
    {Op::RCP, "rcp", 4, 0, 0, 1, false},
    {Op::RSQ, "rsq", 4, 1, 0, 1, false},
    {Op::LOG2, "log2", 4, 2, 0, 1, false},
    {Op::EXP2, "exp2", 4, 3, 0, 1, false},
    {Op::SIN, "sin", 4, 4, 0, 1, false},
    {Op::COS, "cos", 4, 5, 0, 1, false},
    {Op::SQRT, "sqrt", 4, 6, 0, 1, false},
    {Op::HRSQ, "hrsq", 4, 9, 0, 1, false},
    {Op::HLOG2, "hlog2", 4, 10, 0, 1, false},
    {Op::HEXP2, "hexp2", 4, 11, 0, 1, false},
    {Op::LDG, "ldg", 6, 0, 0, 0, false},
    {Op::LDG_A, "ldg.a", 6, 0, 1, 0, false},
    {Op::STG, "stg", 6, 3, 0, 0, false},
    {Op::STG_A, "stg.a", 6, 3, 1, 0, false},
    {Op::LDL, "ldl", 6, 1, 0, 0, false},
    {Op::LDP, "ldp", 6, 2, 0, 0, false},
    {Op::LDLW, "ldlw", 6, 10, 0, 0, false},
    {Op::STL, "stl", 6, 4, 0, 0, false},
    {Op::STP, "stp", 6, 5, 0, 0, false},
    {Op::STLW, "stlw", 6, 11, 0, 0, false},
    {Op::ATOMIC_ADD, "add", 6, 16, 0, 0, false},
    {Op::ATOMIC_SUB, "sub", 6, 17, 0, 0, false},
    {Op::ATOMIC_XCHG, "xchg", 6, 18, 0, 0, false},
    {Op::ATOMIC_INC, "inc", 6, 19, 0, 0, false},
    {Op::ATOMIC_DEC, "dec", 6, 20, 0, 0, false},
    {Op::ATOMIC_CMPXCHG, "cmpxchg", 6, 21, 0, 0, false},
    {Op::ATOMIC_MIN, "min", 6, 22, 0, 0, false},
    {Op::ATOMIC_MAX, "max", 6, 23, 0, 0, false},
    {Op::ATOMIC_AND, "and", 6, 24, 0, 0, false},
    {Op::ATOMIC_OR, "or", 6, 25, 0, 0, false},
    {Op::ATOMIC_XOR, "xor", 6, 26, 0, 0, false},
    {Op::BAR, "bar", 7, 0, 0, 0, false},
    {Op::FENCE, "fence", 7, 1, 0, 0, false},
};
static_assert(std::size(kRows) == size_t(Op::COUNT), "one row per Op");

const Row& row(Op op) { return kRows[size_t(op)]; }
bool is_atomic(Op op) { return op >= Op::ATOMIC_ADD && op <= Op::ATOMIC_XOR; }
bool is_branch(Op op) { return op >= Op::BR && op <= Op::BALL; }
bool is_store(Op op) { return op == Op::STG || op == Op::STG_A || op == Op::STL || op == Op::STP || op == Op::STLW; }
bool is_local_mem(Op op) { return op == Op::LDL || op == Op::LDP || op == Op::LDLW || op == Op::STL || op == Op::STP || op == Op::STLW; }

const char* kFlutNames[kFlutSize] = {"0.0", "0.5", "1.0", "2.0", "e", "pi", "1/pi", "1/log2(e)", "log2(e)", "1/log2(10)", "log2(10)", "4.0"};
const char* kTypeNames[8] = {"f16", "f32", "u16", "u32", "s16", "s32", "u8", "u8_32"};
const char* kConds[6] = {"lt", "le", "gt", "ge", "eq", "ne"};

uint64_t bits(uint64_t w, int lo, int hi) { return (w >> lo) & ((uint64_t{2} << (hi - lo)) - 1); }
int32_t sext(uint64_t v, int width) { return int32_t(uint32_t(v) << (32 - width)) >> (32 - width); }

[[noreturn]] void bad(const Inst& i, const std::string& what) { throw Error("ir3 " + std::string(row(i.op).name) + ": " + what); }
void put(uint64_t& w, int lo, int hi, uint64_t v, const Inst& i, const char* field) {
  uint64_t mask = (uint64_t{2} << (hi - lo)) - 1;
  if (v & ~mask) bad(i, std::string(field) + " " + std::to_string(v) + " does not fit bits " + std::to_string(lo) + ".." + std::to_string(hi));
  w |= v << lo;
}
void put_signed(uint64_t& w, int lo, int hi, int64_t v, const Inst& i, const char* field) {
  int width = hi - lo + 1;
  if (v < -(int64_t{1} << (width - 1)) || v >= (int64_t{1} << (width - 1)))
    bad(i, std::string(field) + " " + std::to_string(v) + " does not fit " + std::to_string(width) + " signed bits");
  w |= (uint64_t(v) & ((uint64_t{1} << width) - 1)) << lo;
}

// The 16-bit source field of cat2 and cat4.
uint64_t multisrc(const Src& s, const Inst& i) {
  uint64_t f = 0;
  switch (s.kind) {
    case Src::Kind::Reg: f = s.num; break;
    case Src::Kind::Const:
      if (s.num > 0x7ff) bad(i, "const " + std::to_string(s.num / 4) + " is past c511");
      f = s.num | uint64_t{2} << 11;
      break;
    case Src::Kind::RelReg:
    case Src::Kind::RelConst:
      put_signed(f, 0, 9, s.imm, i, "relative offset");
      f |= uint64_t{s.kind == Src::Kind::RelConst} << 10 | uint64_t{1} << 11;
      break;
    case Src::Kind::Imm: put_signed(f, 0, 10, s.imm, i, "immediate"), f |= uint64_t{4} << 11; break;
    case Src::Kind::Flut:
      if (s.num >= kFlutSize) bad(i, "float immediate index " + std::to_string(s.num));
      f = s.num | uint64_t{s.half} << 10 | uint64_t{5} << 11;
      break;
    case Src::Kind::None: bad(i, "a source is missing");
  }
  return f | uint64_t{s.neg} << 14 | uint64_t{s.abs} << 15;
}
Src read_multisrc(uint64_t f, bool half) {
  Src s;
  s.neg = bits(f, 14, 14), s.abs = bits(f, 15, 15), s.half = half;
  switch (bits(f, 11, 13)) {
    case 0: s.kind = Src::Kind::Reg, s.num = uint16_t(bits(f, 0, 7)); break;
    case 1: s.kind = bits(f, 10, 10) ? Src::Kind::RelConst : Src::Kind::RelReg, s.imm = sext(bits(f, 0, 9), 10); break;
    case 2:
    case 6: s.kind = Src::Kind::Const, s.num = uint16_t(bits(f, 0, 10)); break;
    case 4: s.kind = Src::Kind::Imm, s.imm = sext(bits(f, 0, 10), 11); break;
    case 5: s.kind = Src::Kind::Flut, s.num = uint16_t(bits(f, 0, 9)), s.half = bits(f, 10, 10); break;
    default: s.kind = Src::Kind::None;
  }
  return s;
}

// The 13-bit source field of cat3 (src1 and src3).
uint64_t cat3src(const Src& s, bool alt, const Inst& i) {
  uint64_t f = 0;
  switch (s.kind) {
    case Src::Kind::Reg: return s.num;
    case Src::Kind::Const:
      if (alt) bad(i, "the alternate form takes no constants");
      return s.num | uint64_t{1} << 12;
    case Src::Kind::Imm:
      if (!alt || s.imm < 0 || s.imm > 0xfff) bad(i, "an immediate source needs the alternate form and 0..4095");
      return uint64_t(s.imm) | uint64_t{1} << 12;
    case Src::Kind::RelReg:
    case Src::Kind::RelConst:
      put_signed(f, 0, 9, s.imm, i, "relative offset");
      return f | uint64_t{s.kind == Src::Kind::RelConst} << 10 | uint64_t{1} << 11;
    default: bad(i, "a source kind cat3 cannot hold");
  }
}
Src read_cat3src(uint64_t f, bool alt, bool half) {
  Src s;
  s.half = half;
  if (bits(f, 12, 12)) {
    if (alt) s.kind = Src::Kind::Imm, s.imm = int32_t(bits(f, 0, 11));
    else s.kind = Src::Kind::Const, s.num = uint16_t(bits(f, 0, 10));
  } else if (bits(f, 11, 11)) {
    s.kind = bits(f, 10, 10) ? Src::Kind::RelConst : Src::Kind::RelReg, s.imm = sext(bits(f, 0, 9), 10);
  } else {
    s.kind = Src::Kind::Reg, s.num = uint16_t(bits(f, 0, 7));
  }
  return s;
}

// (nopN) lives in the two (r) bits when the instruction does not repeat.
void put_r_bits(uint64_t& w, const Inst& i, int r1_bit, int r2_bit, bool r1, bool r2) {
  if (i.nop && i.rpt) bad(i, "(nop) and (rpt) share bits: use one");
  if (i.nop > 3) bad(i, "(nop" + std::to_string(i.nop) + "): at most 3");
  bool a = i.rpt ? r1 : (i.nop & 1), b = i.rpt ? r2 : (i.nop >> 1 & 1);
  w |= uint64_t{a} << r1_bit | uint64_t{b} << r2_bit;
}
void read_r_bits(uint64_t w, Inst& i, int r1_bit, int r2_bit, Src& s1, Src& s2) {
  bool a = bits(w, r1_bit, r1_bit), b = bits(w, r2_bit, r2_bit);
  if (i.rpt) s1.r = a, s2.r = b;
  else i.nop = uint8_t(a | b << 1);
}

bool src_half(const Src& s) { return s.half; }
// Whether a cat2/cat4 instruction's sources are half registers (its FULL bit): the first source that
// is a register, constant or integer immediate says; a float-table immediate carries its own precision.
bool sources_half(const Inst& i, int n) {
  for (int k = 0; k < n; ++k)
    if (i.src[size_t(k)].kind != Src::Kind::Flut && i.src[size_t(k)].kind != Src::Kind::None) return i.src[size_t(k)].half;
  return false;
}

}  // namespace

const OpInfo& info(Op op) {
  static const auto table = [] {
    std::array<OpInfo, size_t(Op::COUNT)> t{};
    for (const Row& r : kRows) t[size_t(r.op)] = {r.op, r.name, r.cat, r.opc, r.srcs, r.half};
    return t;
  }();
  return table.at(size_t(op));
}

const char* type_name(Type t) { return kTypeNames[size_t(t) & 7]; }
float flut_value(int index) {
  static const float v[kFlutSize] = {
      0.0f, 0.5f, 1.0f, 2.0f, float(M_E), float(M_PI), float(1 / M_PI), float(M_LN2), float(M_LOG2E), float(M_LN2 / M_LN10), float(M_LN10 / M_LN2),
      4.0f};
  return index >= 0 && index < kFlutSize ? v[index] : 0.0f;
}
const char* flut_name(int index) { return index >= 0 && index < kFlutSize ? kFlutNames[index] : "?"; }

uint64_t encode(const Inst& i) {
  const Row& r = row(i.op);
  uint64_t w = uint64_t{r.cat} << 61 | uint64_t{i.sy} << 60 | uint64_t{i.jp} << 59;
  auto ss = [&] { w |= uint64_t{i.ss} << 44; };
  auto ul = [&] { w |= uint64_t{i.ul} << 45; };
  auto alu_fields = [&](int opc_lo, int opc_hi) {  // cat2, cat3, cat4: flags, repeat, opcode, destination
    ss(), ul();
    put(w, 40, 41, i.rpt, i, "repeat");
    put(w, opc_lo, opc_hi, r.opc, i, "opcode");
    put(w, 32, 39, i.dst, i, "destination");
  };
  switch (r.cat) {
    case 0: {
      ss();
      put(w, 40, 42, i.rpt, i, "repeat");
      put(w, 55, 58, r.opc, i, "opcode");
      if (is_branch(i.op)) {
        put(w, 37, 39, r.sub, i, "branch type");
        put(w, 53, 54, i.comp1, i, "predicate");
        w |= uint64_t{i.inv1} << 52;
        if (i.op == Op::BRAO || i.op == Op::BRAA) put(w, 46, 47, i.comp2, i, "second predicate"), w |= uint64_t{i.inv2} << 45;
      }
      if (is_branch(i.op) || i.op == Op::JUMP) w |= uint64_t(uint32_t(i.target));
      break;
    }
    case 1: {
      ss(), ul();
      put(w, 40, 41, i.rpt, i, "repeat");
      put(w, 32, 39, i.dst, i, "destination");
      put(w, 46, 48, uint64_t(i.dst_type), i, "destination type");
      put(w, 50, 52, uint64_t(i.src_type), i, "source type");
      put(w, 55, 56, i.round, i, "rounding");
      const Src& s = i.src[0];
      switch (s.kind) {
        case Src::Kind::Reg: w |= s.num; break;
        case Src::Kind::Const: w |= s.num | uint64_t{1} << 53; break;
        case Src::Kind::Imm: w |= uint64_t(uint32_t(s.imm)) | uint64_t{2} << 53; break;
        case Src::Kind::RelReg:
        case Src::Kind::RelConst:
          put_signed(w, 0, 9, s.imm, i, "relative offset");
          w |= uint64_t{s.kind == Src::Kind::RelConst} << 10 | uint64_t{1} << 11;
          break;
        default: bad(i, "mov takes a register, const or immediate source");
      }
      w |= uint64_t{s.r} << 43;
      break;
    }
    case 2: {
      alu_fields(53, 58);
      w |= uint64_t{i.sat} << 42;
      bool half = sources_half(i, r.srcs);
      w |= uint64_t{!half} << 52;
      if (i.dst < kP0) w |= uint64_t{half != i.dst_half} << 46;
      if (i.op == Op::CMPS_F || i.op == Op::CMPS_U || i.op == Op::CMPS_S || i.op == Op::CMPV_F || i.op == Op::CMPV_U || i.op == Op::CMPV_S)
        put(w, 48, 50, uint64_t(i.cond), i, "condition");
      w |= multisrc(i.src[0], i);
      Src none;
      if (r.srcs == 2) w |= multisrc(i.src[1], i) << 16;
      put_r_bits(w, i, 43, 51, i.src[0].r, r.srcs == 2 ? i.src[1].r : none.r);
      break;
    }
    case 3: {
      alu_fields(55, 58);
      bool alt = r.sub;
      w |= uint64_t{alt} << 13;
      bool half = alt ? src_half(i.src[1]) : r.half;
      if (alt) w |= uint64_t{!half} << 42;
      else w |= uint64_t{i.sat} << 42;
      if (i.dst < kP0) w |= uint64_t{half != i.dst_half} << 46;
      if (i.src[1].kind != Src::Kind::Reg) bad(i, "the second source must be a register");
      put(w, 47, 54, i.src[1].num, i, "second source");
      w |= cat3src(i.src[0], alt, i) | cat3src(i.src[2], alt, i) << 16;
      w |= uint64_t{i.src[0].neg} << 14 | uint64_t{i.src[1].neg} << 30 | uint64_t{i.src[2].neg} << 31 | uint64_t{i.src[2].r} << 29;
      put_r_bits(w, i, 43, 15, i.src[0].r, i.src[1].r);
      break;
    }
    case 4: {
      alu_fields(53, 58);
      w |= uint64_t{i.sat} << 42;
      bool half = sources_half(i, 1);
      w |= uint64_t{!half} << 52 | uint64_t{half != i.dst_half} << 46;
      w |= multisrc(i.src[0], i) | uint64_t{i.src[0].r} << 43;
      break;
    }
    case 6: {
      if (i.ss) bad(i, "cat6 has no (ss) bit: put (ss) on a nop before it");
      put(w, 49, 51, uint64_t(i.type), i, "type");
      put(w, 54, 58, r.opc, i, "opcode");
      auto reg_of = [&](const Src& s, const char* what) -> uint64_t {
        if (s.kind != Src::Kind::Reg) bad(i, std::string(what) + " must be a register");
        return s.num;
      };
      if (i.components < 1 || i.components > 4) bad(i, "1 to 4 components");
      if (i.op == Op::LDG || i.op == Op::LDG_A) {
        w |= 1 | uint64_t{1} << 23 | reg_of(i.src[0], "the address") << 14;
        put(w, 24, 26, i.components, i, "components");
        put(w, 32, 39, i.dst, i, "destination");
        if (i.op == Op::LDG) {
          put_signed(w, 1, 13, i.offset, i, "offset");
        } else {
          w |= uint64_t{1} << 22 | reg_of(i.src[1], "the offset") << 1;
          put(w, 9, 10, uint64_t(i.offset), i, "offset");
          put(w, 12, 13, i.shift, i, "shift");
        }
      } else if (i.op == Op::STG || i.op == Op::STG_A) {
        w |= uint64_t{1} << 23 | uint64_t{1} << 40 | reg_of(i.src[2], "the value") << 1;
        put(w, 41, 48, reg_of(i.src[0], "the address"), i, "address");
        put(w, 24, 26, i.components, i, "components");
        if (i.op == Op::STG) {
          uint64_t off = 0;
          put_signed(off, 0, 12, i.offset, i, "offset");
          w |= (off & 0xff) << 32 | (off >> 8) << 9;
        } else {
          w |= uint64_t{1} << 52 | reg_of(i.src[1], "the offset") << 32;
          put(w, 9, 10, uint64_t(i.offset), i, "offset");
          put(w, 12, 13, i.shift, i, "shift");
        }
      } else if (i.op == Op::LDL || i.op == Op::LDP || i.op == Op::LDLW) {
        w |= 1 | uint64_t{1} << 23 | reg_of(i.src[0], "the address") << 14;
        put_signed(w, 1, 13, i.offset, i, "offset");
        put(w, 24, 31, i.components, i, "components");
        put(w, 32, 39, i.dst, i, "destination");
      } else if (is_store(i.op)) {
        w |= uint64_t{1} << 23 | uint64_t{1} << 40 | reg_of(i.src[2], "the value") << 1;
        put(w, 41, 48, reg_of(i.src[0], "the address"), i, "address");
        put(w, 24, 31, i.components, i, "components");
        uint64_t off = 0;
        put_signed(off, 0, 12, i.offset, i, "offset");
        w |= (off & 0xff) << 32 | (off >> 8) << 9;
      } else {  // atomics
        w |= 1 | reg_of(i.src[0], "the address") << 14 | reg_of(i.src[2], "the value") << 24 | uint64_t{i.global} << 52;
        put(w, 32, 39, i.dst, i, "destination");
      }
      break;
    }
    case 7: {
      ss();
      put(w, 55, 58, r.opc, i, "opcode");
      w |= uint64_t{1} << 49 | uint64_t{i.wr} << 51 | uint64_t{i.rd} << 52 | uint64_t{i.l} << 53 | uint64_t{i.g} << 54;
      break;
    }
  }
  return w;
}

std::optional<Inst> decode(uint64_t w, std::string* why) {
  auto no = [&](std::string m) -> std::optional<Inst> {
    if (why) *why = std::move(m);
    return std::nullopt;
  };
  Inst i;
  uint8_t cat = uint8_t(w >> 61);
  i.sy = bits(w, 60, 60), i.jp = bits(w, 59, 59);
  auto find = [&](uint8_t opc, uint8_t sub) -> const Row* {
    for (const Row& r : kRows)
      if (r.cat == cat && r.opc == opc && r.sub == sub) return &r;
    return nullptr;
  };
  switch (cat) {
    case 0: {
      i.ss = bits(w, 44, 44), i.rpt = uint8_t(bits(w, 40, 42));
      uint8_t opc = uint8_t(bits(w, 55, 58) | bits(w, 49, 49) << 4);
      if (bits(w, 48, 48)) return no("(eq) is for fragment shaders");
      const Row* r = find(opc, opc == 1 ? uint8_t(bits(w, 37, 39)) : 0);
      if (!r)
        return no("cat0 opcode " + std::to_string(opc) + (opc == 1 ? " branch type " + std::to_string(bits(w, 37, 39)) : "") +
                  " is not one ugpu uses");
      i.op = r->op;
      if (is_branch(i.op)) {
        i.inv1 = bits(w, 52, 52), i.comp1 = uint8_t(bits(w, 53, 54));
        if (i.op == Op::BRAO || i.op == Op::BRAA) i.inv2 = bits(w, 45, 45), i.comp2 = uint8_t(bits(w, 46, 47));
      }
      if (is_branch(i.op) || i.op == Op::JUMP) i.target = int32_t(uint32_t(w));
      return i;
    }
    case 1: {
      i.ss = bits(w, 44, 44), i.ul = bits(w, 45, 45), i.rpt = uint8_t(bits(w, 40, 41));
      if (bits(w, 57, 58)) return no("cat1 swz/gat/sct/movmsk are not ones ugpu uses");
      if (bits(w, 49, 49)) return no("a relative destination is not one ugpu uses");
      i.op = Op::MOV;
      i.dst = uint8_t(bits(w, 32, 39));
      i.dst_type = Type(bits(w, 46, 48)), i.src_type = Type(bits(w, 50, 52)), i.round = uint8_t(bits(w, 55, 56));
      i.dst_half = is_half(i.dst_type);
      Src& s = i.src[0];
      s.half = is_half(i.src_type), s.r = bits(w, 43, 43);
      switch (bits(w, 53, 54)) {
        case 0:
          if (bits(w, 11, 11)) s.kind = bits(w, 10, 10) ? Src::Kind::RelConst : Src::Kind::RelReg, s.imm = sext(bits(w, 0, 9), 10);
          else s.kind = Src::Kind::Reg, s.num = uint16_t(bits(w, 0, 7));
          break;
        case 1: s.kind = Src::Kind::Const, s.num = uint16_t(bits(w, 0, 10)); break;
        case 2: s.kind = Src::Kind::Imm, s.imm = int32_t(uint32_t(w)); break;
        default: return no("cat1 source kind 3 is not defined");
      }
      return i;
    }
    case 2: {
      i.ss = bits(w, 44, 44), i.ul = bits(w, 45, 45), i.rpt = uint8_t(bits(w, 40, 41)), i.sat = bits(w, 42, 42);
      uint8_t opc = uint8_t(bits(w, 53, 58));
      const Row* r = find(opc, 0);
      if (!r || (opc == 57)) return no("cat2 opcode " + std::to_string(opc) + " is not one ugpu uses");
      i.op = r->op;
      bool full = bits(w, 52, 52), conv = bits(w, 46, 46);
      i.dst = uint8_t(bits(w, 32, 39));
      i.dst_half = i.dst < kP0 && full == conv;
      i.cond = Cond(bits(w, 48, 50));
      if (uint8_t(i.cond) > 5 &&
          (i.op == Op::CMPS_F || i.op == Op::CMPS_U || i.op == Op::CMPS_S || i.op == Op::CMPV_F || i.op == Op::CMPV_U || i.op == Op::CMPV_S))
        return no("compare condition " + std::to_string(int(i.cond)) + " is not defined");
      i.src[0] = read_multisrc(bits(w, 0, 15), !full);
      if (r->srcs == 2) i.src[1] = read_multisrc(bits(w, 16, 31), !full);
      if (i.src[0].kind == Src::Kind::None || (r->srcs == 2 && i.src[1].kind == Src::Kind::None)) return no("a cat2 source kind that is not defined");
      Src scratch;
      read_r_bits(w, i, 43, 51, i.src[0], r->srcs == 2 ? i.src[1] : scratch);
      return i;
    }
    case 3: {
      i.ss = bits(w, 44, 44), i.ul = bits(w, 45, 45), i.rpt = uint8_t(bits(w, 40, 41));
      bool alt = bits(w, 13, 13);
      const Row* r = find(uint8_t(bits(w, 55, 58)), alt);
      if (!r) return no("cat3 " + std::string(alt ? "alternate-form " : "") + "opcode " + std::to_string(bits(w, 55, 58)) + " is not one ugpu uses");
      i.op = r->op;
      bool half = alt ? !bits(w, 42, 42) : r->half;
      if (!alt) i.sat = bits(w, 42, 42);
      i.dst = uint8_t(bits(w, 32, 39));
      i.dst_half = i.dst < kP0 && half == !bits(w, 46, 46);
      i.src[0] = read_cat3src(bits(w, 0, 12), alt, half);
      i.src[1] = Src::gpr(uint8_t(bits(w, 47, 54)), half);
      i.src[2] = read_cat3src(bits(w, 16, 28), alt, half);
      i.src[0].neg = bits(w, 14, 14), i.src[1].neg = bits(w, 30, 30), i.src[2].neg = bits(w, 31, 31), i.src[2].r = bits(w, 29, 29);
      read_r_bits(w, i, 43, 15, i.src[0], i.src[1]);
      return i;
    }
    case 4: {
      i.ss = bits(w, 44, 44), i.ul = bits(w, 45, 45), i.rpt = uint8_t(bits(w, 40, 41)), i.sat = bits(w, 42, 42);
      const Row* r = find(uint8_t(bits(w, 53, 58)), 0);
      if (!r) return no("cat4 opcode " + std::to_string(bits(w, 53, 58)) + " is not one ugpu uses");
      i.op = r->op;
      bool full = bits(w, 52, 52);
      i.dst = uint8_t(bits(w, 32, 39));
      i.dst_half = full == bits(w, 46, 46);
      i.src[0] = read_multisrc(bits(w, 0, 15), !full);
      i.src[0].r = bits(w, 43, 43);
      if (i.src[0].kind == Src::Kind::None) return no("a cat4 source kind that is not defined");
      return i;
    }
    case 5: return no("cat5 (texture) instructions are not ones ugpu uses");
    case 6: {
      uint8_t opc = uint8_t(bits(w, 54, 58));
      i.type = Type(bits(w, 49, 51));
      bool hi52 = bits(w, 52, 52), hi53 = bits(w, 53, 53);
      if (opc == 0 && (hi52 || hi53)) return no("a new-form cat6 instruction (ldc, ldib, getfiberid ...) is not one ugpu uses");
      if (opc == 0) {
        i.op = bits(w, 22, 22) ? Op::LDG_A : Op::LDG;
        if (!bits(w, 0, 0) || !bits(w, 23, 23)) return no("ldg with its fixed bits 0 and 23 clear");
        i.dst = uint8_t(bits(w, 32, 39)), i.dst_half = is_half(i.type);
        i.components = uint8_t(bits(w, 24, 26));
        i.src[0] = Src::gpr(uint8_t(bits(w, 14, 21)));
        if (i.op == Op::LDG) i.offset = sext(bits(w, 1, 13), 13);
        else i.src[1] = Src::gpr(uint8_t(bits(w, 1, 8))), i.offset = int32_t(bits(w, 9, 10)), i.shift = uint8_t(bits(w, 12, 13));
        return i;
      }
      if (opc == 3) {
        i.op = hi52 ? Op::STG_A : Op::STG;
        if (!bits(w, 40, 40) || !bits(w, 23, 23)) return no("stg with its fixed bits 23 and 40 clear");
        i.components = uint8_t(bits(w, 24, 26));
        i.src[0] = Src::gpr(uint8_t(bits(w, 41, 48)));
        i.src[2] = Src::gpr(uint8_t(bits(w, 1, 8)), is_half(i.type));
        if (i.op == Op::STG) i.offset = sext(bits(w, 32, 39) | bits(w, 9, 13) << 8, 13);
        else i.src[1] = Src::gpr(uint8_t(bits(w, 32, 39))), i.offset = int32_t(bits(w, 9, 10)), i.shift = uint8_t(bits(w, 12, 13));
        return i;
      }
      for (Op op : {Op::LDL, Op::LDP, Op::LDLW, Op::STL, Op::STP, Op::STLW})
        if (row(op).opc == opc) i.op = op;
      if (is_local_mem(i.op)) {
        i.components = uint8_t(bits(w, 24, 31));
        if (is_store(i.op)) {
          i.src[0] = Src::gpr(uint8_t(bits(w, 41, 48)));
          i.src[2] = Src::gpr(uint8_t(bits(w, 1, 8)), is_half(i.type));
          i.offset = sext(bits(w, 32, 39) | bits(w, 9, 13) << 8, 13);
        } else {
          i.dst = uint8_t(bits(w, 32, 39)), i.dst_half = is_half(i.type);
          i.src[0] = Src::gpr(uint8_t(bits(w, 14, 21)));
          i.offset = sext(bits(w, 1, 13), 13);
        }
        if (i.components < 1 || i.components > 4) return no(std::to_string(i.components) + " components");
        return i;
      }
      if (opc >= 16 && opc <= 26 && !hi53) {
        i.op = Op(uint8_t(Op::ATOMIC_ADD) + (opc - 16));
        if (bits(w, 9, 13) || bits(w, 22, 23)) return no("a typed or immediate-operand atomic is not one ugpu uses");
        i.global = hi52;
        i.dst = uint8_t(bits(w, 32, 39));
        i.src[0] = Src::gpr(uint8_t(bits(w, 14, 21)));
        i.src[2] = Src::gpr(uint8_t(bits(w, 24, 31)));
        return i;
      }
      return no("cat6 opcode " + std::to_string(opc) + " is not one ugpu uses");
    }
    case 7: {
      i.ss = bits(w, 44, 44);
      uint8_t opc = uint8_t(bits(w, 55, 58));
      if (opc > 1) return no("cat7 opcode " + std::to_string(opc) + " is not one ugpu uses");
      i.op = opc ? Op::FENCE : Op::BAR;
      i.wr = bits(w, 51, 51), i.rd = bits(w, 52, 52), i.l = bits(w, 53, 53), i.g = bits(w, 54, 54);
      return i;
    }
  }
  return no("unreachable");
}

std::string format_reg(uint8_t r, bool half) {
  if (r == kA0) return "a0.x";
  if (r == kA1) return "a1.x";
  char b[16];
  const char* c = "xyzw";
  if (r >= kP0 && r < kNoReg) std::snprintf(b, sizeof b, "p0.%c", c[r & 3]);
  else std::snprintf(b, sizeof b, "%sr%d.%c", half ? "h" : "", r >> 2, c[r & 3]);
  return b;
}

namespace {
std::string fmt_float(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%f", v);
  return b;
}
float half_to_float(uint16_t h) {
  int e = (h >> 10) & 0x1f, m = h & 0x3ff;
  float v = e == 0 ? std::ldexp(float(m), -24) : e == 31 ? (m ? NAN : INFINITY) : std::ldexp(float(m | 0x400), e - 25);
  return h & 0x8000 ? -v : v;
}
std::string fmt_src(const Src& s, bool mov_imm, Type imm_type) {
  std::string t = std::string(s.neg && s.abs ? "(absneg)" : s.neg ? "(neg)" : s.abs ? "(abs)" : "") + (s.r ? "(r)" : "");
  const char* c = "xyzw";
  char b[48];
  switch (s.kind) {
    case Src::Kind::Reg: return t + format_reg(uint8_t(s.num), s.half);
    case Src::Kind::Const: std::snprintf(b, sizeof b, "%sc%d.%c", s.half ? "h" : "", s.num >> 2, c[s.num & 3]); return t + b;
    case Src::Kind::RelReg:
    case Src::Kind::RelConst:
      std::snprintf(b, sizeof b, "%s%c<a0.x + %d>", s.half ? "h" : "", s.kind == Src::Kind::RelConst ? 'c' : 'r', s.imm);
      return t + b;
    case Src::Kind::Flut: return t + (s.half ? "h(" : "(") + flut_name(s.num) + ")";
    case Src::Kind::Imm:
      if (mov_imm) {
        if (imm_type == Type::F32) {
          float f;
          uint32_t u = uint32_t(s.imm);
          std::memcpy(&f, &u, 4);
          return t + "(" + fmt_float(f) + ")";
        }
        if (imm_type == Type::F16) return t + "h(" + fmt_float(half_to_float(uint16_t(s.imm))) + ")";
        if (imm_type == Type::S16 || imm_type == Type::U8) return t + std::to_string(int16_t(s.imm));
        if (imm_type == Type::S32) return t + std::to_string(s.imm);
        return t + hex(uint32_t(s.imm));
      }
      return t + (s.half ? "h(" + std::to_string(s.imm) + ")" : std::to_string(s.imm));
    case Src::Kind::None: return "?";
  }
  return "?";
}
std::string offset_text(int32_t off) { return off == 0 ? "" : off > 0 ? "+" + std::to_string(off) : std::to_string(off); }
}  // namespace

std::string format(const Inst& i) {
  const Row& r = row(i.op);
  std::string s;
  if (i.sy) s += "(sy)";
  if (i.ss) s += "(ss)";
  if (i.jp) s += "(jp)";
  if (i.sat) s += "(sat)";
  if (i.rpt) s += "(rpt" + std::to_string(i.rpt) + ")";
  if (i.ul) s += "(ul)";
  if (i.nop) s += "(nop" + std::to_string(i.nop) + ") ";
  auto pred = [](bool inv, uint8_t comp) { return std::string(inv ? "!" : "") + "p0." + "xyzw"[comp & 3]; };
  switch (r.cat) {
    case 0:
      s += r.name;
      if (i.op == Op::BRAO || i.op == Op::BRAA) s += " " + pred(i.inv1, i.comp1) + ", " + pred(i.inv2, i.comp2) + ",";
      else if (is_branch(i.op)) s += " " + pred(i.inv1, i.comp1) + ",";
      if (is_branch(i.op) || i.op == Op::JUMP) s += " #" + std::to_string(i.target);
      return s;
    case 1:
      if (i.dst == kA0 && i.src_type == Type::S16 && i.dst_type == Type::S16) return s + "mova a0.x, " + fmt_src(i.src[0], true, i.src_type);
      if (i.dst == kA1 && i.src_type == Type::U16 && i.dst_type == Type::U16) return s + "mova1 a1.x, " + fmt_src(i.src[0], true, i.src_type);
      s += std::string(i.src_type == i.dst_type ? "mov." : "cov.") + type_name(i.src_type) + type_name(i.dst_type);
      if (i.round) s += std::string(".") + (i.round == 1 ? "even" : i.round == 2 ? "pos_infinity" : "neg_infinity");
      return s + " " + format_reg(i.dst, i.dst_half) + ", " + fmt_src(i.src[0], true, i.src_type);
    case 2:
    case 4: {
      s += r.name;
      if (i.op == Op::CMPS_F || i.op == Op::CMPS_U || i.op == Op::CMPS_S || i.op == Op::CMPV_F || i.op == Op::CMPV_U || i.op == Op::CMPV_S)
        s += std::string(".") + kConds[size_t(i.cond) % 6];
      s += " " + format_reg(i.dst, i.dst_half) + ", " + fmt_src(i.src[0], false, Type::U32);
      if (r.srcs == 2) s += ", " + fmt_src(i.src[1], false, Type::U32);
      return s;
    }
    case 3: {
      auto src = [&](Src x) {  // the alternate form's immediates are plain numbers at either precision
        if (x.kind == Src::Kind::Imm) x.half = false;
        return fmt_src(x, false, Type::U32);
      };
      return s + r.name + " " + format_reg(i.dst, i.dst_half) + ", " + src(i.src[0]) + ", " + src(i.src[1]) + ", " + src(i.src[2]);
    }
    case 6: {
      std::string t = type_name(i.type), n = std::to_string(i.components);
      std::string addr = format_reg(uint8_t(i.src[0].num), false);
      if (i.op == Op::LDG) return s + "ldg." + t + " " + format_reg(i.dst, i.dst_half) + ", g[" + addr + offset_text(i.offset) + "], " + n;
      if (i.op == Op::STG)
        return s + "stg." + t + " g[" + addr + offset_text(i.offset) + "], " + format_reg(uint8_t(i.src[2].num), i.src[2].half) + ", " + n;
      std::string reg_off = "(" + format_reg(uint8_t(i.src[1].num), false) + offset_text(i.offset) + ")<<" + std::to_string(i.shift + 2);
      if (i.op == Op::LDG_A) return s + "ldg.a." + t + " " + format_reg(i.dst, i.dst_half) + ", g[" + addr + "+" + reg_off + "], " + n;
      if (i.op == Op::STG_A)
        return s + "stg.a." + t + " g[" + addr + "+" + reg_off + "], " + format_reg(uint8_t(i.src[2].num), i.src[2].half) + ", " + n;
      const char* space = i.op == Op::LDP || i.op == Op::STP ? "p" : "l";
      if (is_local_mem(i.op) && !is_store(i.op))
        return s + r.name + "." + t + " " + format_reg(i.dst, i.dst_half) + ", " + space + "[" + addr + offset_text(i.offset) + "], " + n;
      if (is_store(i.op))
        return s + r.name + "." + t + " " + space + "[" + addr + offset_text(i.offset) + "], " + format_reg(uint8_t(i.src[2].num), i.src[2].half) +
               ", " + n;
      std::string a = i.global ? addr : "l[" + addr + "]";
      return s + "atomic." + (i.global ? "g." : "") + r.name + ".untyped.1d." + t + ".1." + (i.global ? "g " : "l ") + format_reg(i.dst, false) +
             ", " + a + ", " + format_reg(uint8_t(i.src[2].num), false);
    }
    case 7:
      s += r.name;
      if (i.g) s += ".g";
      if (i.l) s += ".l";
      if (i.rd) s += ".r";
      if (i.wr) s += ".w";
      return s;
  }
  return s + "?";
}

std::string disassemble(const std::vector<uint64_t>& code) {
  std::string out;
  char b[48];
  for (size_t k = 0; k < code.size(); ++k) {
    std::snprintf(b, sizeof b, "%4zu  %016" PRIx64 "  ", k, code[k]);
    std::string why;
    auto i = decode(code[k], &why);
    out += b + (i ? format(*i) : "(not decoded: " + why + ")") + "\n";
  }
  return out;
}

bool is_alu(const Inst& i) {
  uint8_t c = row(i.op).cat;
  return c >= 1 && c <= 3;
}

SyncClass result_class(const Inst& i) {
  uint8_t c = row(i.op).cat;
  if (c >= 1 && c <= 3) return i.dst == kNoReg ? SyncClass::None : SyncClass::Alu;
  if (c == 4) return SyncClass::Ss;
  if (c != 6 || is_store(i.op)) return SyncClass::None;
  if (i.op == Op::LDL || i.op == Op::LDLW || (is_atomic(i.op) && !i.global)) return SyncClass::Ss;
  return SyncClass::Sy;
}

}  // namespace ugpu::hw::qcom::ir3
