// Instruction selection: the lowered kernel's instruction list to ir3 over virtual registers.
//
// Values live in 32-bit registers: float32 as itself, half and bfloat16 as the float32 of their value
// (rounded back to their precision after every operation, as the CPU reference computes them), 32-bit
// integers as themselves, 8- and 16-bit integers sign- or zero-extended to 32 bits (normalised after
// every operation that can leave their range), bools as 0 or 1, 64-bit integers as a pair of registers
// (the a6xx has no 64-bit ALU: their operations are sequences). Half registers appear only at memory
// accesses of 8- and 16-bit types. float64 is refused by name.
#include <bit>
#include <cmath>
#include <cstring>
#include <unordered_map>

#include "codegen/ir3/program.h"
#include "common/error.h"
#include "ir/text.h"

namespace ugpu::codegen::ir3 {
namespace {

using ir::AddrSpace;
using ir::DType;
using ir::Op;
using ir::ScalarType;
using ir::UOp;
using isa::Type;
using IOp = isa::Op;

enum class Repr { F32, Half, BF16, I32, U32, I16, U16, I8, U8, Bool };

struct Ptr {
  AddrSpace space = AddrSpace::Global;
  int base = -1;           // global: the address pair (a group of 2)
  int64_t local_base = 0;  // local: byte offset of the DEFINE_LOCAL
  std::vector<int> regs;   // reg: the DEFINE_REG's registers (element-major, lanes inside)
  UOp index;               // the element index (null: element 0)
  int gate = -1;           // vreg of the gate (null: not gated)
  DType elem;              // what one element is (with its lanes)
};

class Selector {
 public:
  Selector(const LoweredKernel& k, const Target& t) : k_(k), t_(t) {}

  VProgram run() {
    p_.facts.local_id_reg = kLocalIdReg, p_.facts.wg_id_reg = kWorkgroupIdReg;
    p_.facts.threadsize = 64;
    args();
    for (const UOp& u : k_.linear) inst(u);
    VInst end;
    end.inst.op = IOp::END;
    p_.code.push_back(end);
    return std::move(p_);
  }

 private:
  [[noreturn]] void unsupported(const UOp& u, const std::string& why) {
    throw Error("kernel " + k_.name + ": " + std::string(t_.name) + " (ir3) " + why + ": " + ir::to_inline(u, 100));
  }

  // --- registers and emission ---
  int vreg(bool low = false) {
    p_.group_size.push_back(0), p_.low.push_back(low);
    return p_.vregs++;
  }
  int group(int n, bool low = false) {
    int first = p_.vregs;
    for (int i = 0; i < n; ++i) vreg(low);
    p_.group_size[first] = n;
    return first;
  }
  int label() { return p_.labels++; }
  void place(int l) {
    VInst v;
    v.label = l;
    p_.code.push_back(v);
  }
  VInst& emit(IOp op) {
    p_.code.emplace_back();
    p_.code.back().inst.op = op;
    return p_.code.back();
  }
  static VSrc R(int v) { return VSrc::virt(v); }
  int mov_imm(uint32_t bits) {
    int d = vreg();
    VInst& m = emit(IOp::MOV);
    m.inst.src_type = m.inst.dst_type = Type::U32;
    m.dst = d, m.src[0] = VSrc::imm(int32_t(bits));
    return d;
  }
  int mov_f(float f) { return mov_imm(std::bit_cast<uint32_t>(f)); }
  void copy(int d, VSrc s) {
    VInst& m = emit(IOp::MOV);
    m.inst.src_type = m.inst.dst_type = Type::U32;
    m.dst = d, m.src[0] = s;
  }
  int cov(Type from, Type to, VSrc s, uint8_t round = 0) {
    bool half_dst = isa::is_half(to);
    int d = vreg(half_dst);
    VInst& m = emit(IOp::MOV);
    m.inst.src_type = from, m.inst.dst_type = to, m.inst.round = round;
    m.dst = d, m.dst_half = half_dst, m.src[0] = s;
    return d;
  }
  int alu(IOp op, VSrc a, VSrc b = {}, VSrc c = {}) {
    int d = vreg();
    VInst& i = emit(op);
    i.dst = d, i.src = {a, b, c};
    return d;
  }
  int cmp(IOp op, isa::Cond cond, VSrc a, VSrc b) {
    int d = vreg();
    VInst& i = emit(op);
    i.inst.cond = cond, i.dst = d, i.src = {a, b, {}};
    return d;
  }
  int sel(VSrc cond, VSrc a, VSrc b) {  // cond != 0 ? a : b
    if (cond.kind != VSrc::Kind::Virt) cond = R(materialize(cond));
    if (a.kind == VSrc::Kind::Imm || a.kind == VSrc::Kind::Flut) a = R(materialize(a));
    if (b.kind == VSrc::Kind::Imm || b.kind == VSrc::Kind::Flut) b = R(materialize(b));
    int d = vreg();
    VInst& i = emit(IOp::SEL_B32);
    i.dst = d, i.src = {a, cond, b};
    return d;
  }
  int materialize(VSrc s) {
    if (s.kind == VSrc::Kind::Virt && !s.neg && !s.abs) return s.v;
    if (s.kind == VSrc::Kind::Imm) return mov_imm(uint32_t(s.v));
    if (s.kind == VSrc::Kind::Flut) return mov_f(isa::flut_value(s.v));
    int d = vreg();
    if (s.neg || s.abs) {  // only float sources carry modifiers here
      VInst& i = emit(IOp::ABSNEG_F);
      i.dst = d, i.src[0] = s;
      return d;
    }
    copy(d, s);
    return d;
  }
  // A branch to `target` when the 0/1 value `cond` is (or with `negate`, is not) nonzero.
  void branch_if(int cond, bool negate, int target) {
    VInst& c = emit(IOp::CMPS_U);
    c.inst.cond = isa::Cond::NE, c.dst_phys = isa::kP0, c.src = {R(cond), VSrc::imm(0), {}};
    VInst& b = emit(IOp::BR);
    b.inst.inv1 = negate, b.target = target;
  }
  void jump(int target) { emit(IOp::JUMP).target = target; }
  // Loops: the head's label, where the exit test goes, and the exit's.
  struct Loop {
    int head, exit;
  };
  Loop loop_begin() {
    Loop l{label(), label()};
    place(l.head);
    ++depth_, p_.max_depth = std::max(p_.max_depth, depth_);
    return l;
  }
  // Leaves the loop when `a cond b` (a compare into p0 and a branch).
  void exit_when(const Loop& l, IOp compare, isa::Cond cond, VSrc a, VSrc b) {
    VInst& c = emit(compare);
    c.inst.cond = cond, c.dst_phys = isa::kP0, c.src = {a, b, {}};
    emit(IOp::BR).target = l.exit;
  }
  void loop_end(const Loop& l) {
    p_.loops.emplace_back(l.head, p_.code.size());
    jump(l.head);
    place(l.exit);
    --depth_;
  }
  // for (i = top; i >= 0; --i) body(i): the bit loop of the divisions.
  template <class Body>
  void count_down(int top, Body body) {
    int i = mov_imm(uint32_t(top));
    Loop l = loop_begin();
    exit_when(l, IOp::CMPS_S, isa::Cond::LT, R(i), VSrc::imm(0));
    body(i);
    VInst& dec = emit(IOp::SUB_U);
    dec.dst = i, dec.src = {R(i), VSrc::imm(1), {}};
    loop_end(l);
  }

  // --- values ---
  static Repr repr(DType t, const UOp& u, Selector* self) {
    switch (t.scalar) {
      case ScalarType::Float: return Repr::F32;
      case ScalarType::Half: return Repr::Half;
      case ScalarType::BFloat16: return Repr::BF16;
      case ScalarType::Int32: return Repr::I32;
      case ScalarType::UInt32: return Repr::U32;
      case ScalarType::Int16: return Repr::I16;
      case ScalarType::UInt16: return Repr::U16;
      case ScalarType::Int8: return Repr::I8;
      case ScalarType::UInt8: return Repr::U8;
      case ScalarType::Bool: return Repr::Bool;
      default: self->unsupported(u, "has no " + t.name() + " arithmetic (the a6xx has no 64-bit ALU)");
    }
  }
  Repr repr(const UOp& u) { return repr(u.dtype(), u, this); }
  static bool is_float(Repr r) { return r == Repr::F32 || r == Repr::Half || r == Repr::BF16; }
  static bool is_signed(Repr r) { return r == Repr::I32 || r == Repr::I16 || r == Repr::I8; }

  // The register of lane `lane` of u: constants are materialized at the use.
  int reg(const UOp& u, int lane = 0) {
    if (u.is_const()) return materialize(const_src(u, false));
    auto it = vals_.find(u.get());
    if (it == vals_.end()) unsupported(u, "internal: a value is used before it is defined");
    if (lane >= int(it->second.size())) lane = 0;  // a scalar broadcast into a vector's lanes
    return it->second[lane];
  }
  // A constant as an operand: an immediate where the ISA holds it directly.
  VSrc const_src(const UOp& c, bool cat2_immediate) {
    Repr r = repr(c);
    if (is_float(r)) {
      float f = float(c.const_float());
      for (int i = 0; cat2_immediate && i < isa::kFlutSize; ++i)
        if (std::bit_cast<uint32_t>(isa::flut_value(i)) == std::bit_cast<uint32_t>(f)) return VSrc::flut(i);
      return VSrc::imm(int32_t(std::bit_cast<uint32_t>(f)));
    }
    int64_t v = c.const_int();
    if (cat2_immediate && v >= -1024 && v <= 1023) return VSrc::imm(int32_t(v));
    return VSrc::imm(int32_t(uint32_t(v)));
  }
  // A source for a cat2 op: a register, or a constant it can hold as an immediate.
  VSrc src2(const UOp& u, int lane, bool float_op) {
    if (u.is_const()) {
      VSrc s = const_src(u, true);
      bool fits = float_op ? s.kind == VSrc::Kind::Flut : (s.kind == VSrc::Kind::Imm && s.v >= -1024 && s.v <= 1023);
      return fits ? s : R(materialize(s));
    }
    return R(reg(u, lane));
  }
  void define(const UOp& u, std::vector<int> regs) { vals_[u.get()] = std::move(regs); }

  // Back into a narrow type's range (or a reduced-precision float's).
  int normalize(Repr r, int v) {
    switch (r) {
      case Repr::I8: return alu(IOp::ASHR_B, R(alu(IOp::SHL_B, R(v), VSrc::imm(24))), VSrc::imm(24));
      case Repr::I16: return alu(IOp::ASHR_B, R(alu(IOp::SHL_B, R(v), VSrc::imm(16))), VSrc::imm(16));
      case Repr::U8: return alu(IOp::AND_B, R(v), VSrc::imm(0xff));
      case Repr::U16: return alu(IOp::AND_B, R(v), R(mov_imm(0xffff)));
      case Repr::Bool: return alu(IOp::AND_B, R(v), VSrc::imm(1));
      case Repr::Half: return cov(Type::F16, Type::F32, VSrc::virt(cov(Type::F32, Type::F16, R(v), 1), true));
      case Repr::BF16: return float_to_bf16_value(v);
      default: return v;
    }
  }
  // bfloat16 from float32, to nearest even (the CPU reference's integer rounding), kept as float32.
  int float_to_bf16_bits(int f) {
    int lsb = alu(IOp::SHR_B, R(f), VSrc::imm(16));
    int odd = alu(IOp::AND_B, R(lsb), VSrc::imm(1));
    int bias = alu(IOp::ADD_U, R(odd), R(mov_imm(0x7fff)));
    int hi = alu(IOp::SHR_B, R(alu(IOp::ADD_U, R(f), R(bias))), VSrc::imm(16));
    int nan = cmp(IOp::CMPS_F, isa::Cond::NE, R(f), R(f));
    int quiet = alu(IOp::OR_B, R(lsb), VSrc::imm(64));
    return sel(R(nan), R(quiet), R(hi));  // the 16 bits, zero-extended
  }
  int float_to_bf16_value(int f) { return alu(IOp::SHL_B, R(float_to_bf16_bits(f)), VSrc::imm(16)); }

  // --- 64-bit integers: a (lo, hi) pair of registers per lane (index arithmetic that needs them) ---
  struct W {
    int lo, hi;
  };
  static bool wide(DType t) { return t.scalar == ScalarType::Int64 || t.scalar == ScalarType::UInt64; }
  W wreg(const UOp& u, int lane = 0) {
    if (u.is_const()) {
      uint64_t v = uint64_t(u.const_int());
      return {mov_imm(uint32_t(v)), mov_imm(uint32_t(v >> 32))};
    }
    if (!wide(u.dtype())) {  // a 32-bit (or narrower) value, extended by its signedness
      int lo = reg(u, lane);
      return {lo, is_signed(repr(u)) ? alu(IOp::ASHR_B, R(lo), VSrc::imm(31)) : mov_imm(0)};
    }
    auto it = wides_.find(u.get());
    if (it == wides_.end()) unsupported(u, "internal: a value is used before it is defined");
    return it->second[size_t(lane) < it->second.size() ? size_t(lane) : 0];
  }
  W wadd(W a, W b) {
    int lo = alu(IOp::ADD_U, R(a.lo), R(b.lo));
    int carry = cmp(IOp::CMPS_U, isa::Cond::LT, R(lo), R(a.lo));
    return {lo, alu(IOp::ADD_U, R(alu(IOp::ADD_U, R(a.hi), R(b.hi))), R(carry))};
  }
  W wsub(W a, W b) {
    int borrow = cmp(IOp::CMPS_U, isa::Cond::LT, R(a.lo), R(b.lo));
    return {alu(IOp::SUB_U, R(a.lo), R(b.lo)), alu(IOp::SUB_U, R(alu(IOp::SUB_U, R(a.hi), R(b.hi))), R(borrow))};
  }
  // The high 32 bits of the unsigned 64-bit product, from four 16 x 16 products.
  int mulhi(int a, int b) {
    int ah = alu(IOp::SHR_B, R(a), VSrc::imm(16)), bh = alu(IOp::SHR_B, R(b), VSrc::imm(16));
    int ll = alu(IOp::MULL_U, R(a), R(b)), lh = alu(IOp::MULL_U, R(a), R(bh)), hl = alu(IOp::MULL_U, R(ah), R(b)),
        hh = alu(IOp::MULL_U, R(ah), R(bh));
    int mask = mov_imm(0xffff);
    int mid = alu(IOp::ADD_U, R(alu(IOp::ADD_U, R(alu(IOp::SHR_B, R(ll), VSrc::imm(16))), R(alu(IOp::AND_B, R(lh), R(mask))))),
                  R(alu(IOp::AND_B, R(hl), R(mask))));
    int hi = alu(IOp::ADD_U, R(hh), R(alu(IOp::SHR_B, R(lh), VSrc::imm(16))));
    hi = alu(IOp::ADD_U, R(hi), R(alu(IOp::SHR_B, R(hl), VSrc::imm(16))));
    return alu(IOp::ADD_U, R(hi), R(alu(IOp::SHR_B, R(mid), VSrc::imm(16))));
  }
  W wmul(W a, W b) {
    int hi = alu(IOp::ADD_U, R(mulhi(a.lo, b.lo)), R(alu(IOp::ADD_U, R(imul(a.lo, b.hi)), R(imul(a.hi, b.lo)))));
    return {imul(a.lo, b.lo), hi};
  }
  W wsel(int c, W a, W b) { return {sel(R(c), R(a.lo), R(b.lo)), sel(R(c), R(a.hi), R(b.hi))}; }
  // Shifts by a register amount 0..63 (the 32-bit shifts use only the low five bits of theirs).
  W wshift(W a, int amount, Op op, bool arith) {
    int big = cmp(IOp::CMPS_U, isa::Cond::GE, R(amount), VSrc::imm(32)), s = alu(IOp::AND_B, R(amount), VSrc::imm(31));
    int zero = cmp(IOp::CMPS_U, isa::Cond::EQ, R(s), VSrc::imm(0)), back = alu(IOp::SUB_U, VSrc::imm(32), R(s));
    if (op == Op::SHL) {
      int carry = sel(R(zero), VSrc::imm(0), R(alu(IOp::SHR_B, R(a.lo), R(back))));
      W small{alu(IOp::SHL_B, R(a.lo), R(s)), alu(IOp::OR_B, R(alu(IOp::SHL_B, R(a.hi), R(s))), R(carry))};
      return wsel(big, {mov_imm(0), alu(IOp::SHL_B, R(a.lo), R(s))}, small);
    }
    IOp sh = arith ? IOp::ASHR_B : IOp::SHR_B;
    int carry = sel(R(zero), VSrc::imm(0), R(alu(IOp::SHL_B, R(a.hi), R(back))));
    W small{alu(IOp::OR_B, R(alu(IOp::SHR_B, R(a.lo), R(s))), R(carry)), alu(sh, R(a.hi), R(s))};
    int fill = arith ? alu(IOp::ASHR_B, R(a.hi), VSrc::imm(31)) : mov_imm(0);
    return wsel(big, {alu(sh, R(a.hi), R(s)), fill}, small);
  }
  int wcmp(Op op, W a, W b, bool is_signed) {
    if (op == Op::CMPEQ || op == Op::CMPNE) {
      int diff = alu(IOp::OR_B, R(alu(IOp::XOR_B, R(a.lo), R(b.lo))), R(alu(IOp::XOR_B, R(a.hi), R(b.hi))));
      return cmp(IOp::CMPS_U, op == Op::CMPEQ ? isa::Cond::EQ : isa::Cond::NE, R(diff), VSrc::imm(0));
    }
    int hlt = cmp(is_signed ? IOp::CMPS_S : IOp::CMPS_U, isa::Cond::LT, R(a.hi), R(b.hi));
    int heq = cmp(IOp::CMPS_U, isa::Cond::EQ, R(a.hi), R(b.hi)), llt = cmp(IOp::CMPS_U, isa::Cond::LT, R(a.lo), R(b.lo));
    return alu(IOp::OR_B, R(hlt), R(alu(IOp::AND_B, R(heq), R(llt))));
  }
  // 64-bit division and remainder by shift and subtract (64 steps), with the 32-bit version's
  // conventions: truncating, a zero divisor (and INT64_MIN / -1) dividing by 1.
  W widiv(W a, W b, bool is_signed, bool rem) {
    W zero{mov_imm(0), mov_imm(0)}, one{mov_imm(1), mov_imm(0)};
    int bad = wcmp(Op::CMPEQ, b, zero, false);
    if (is_signed) {
      int m1 = wcmp(Op::CMPEQ, b, {mov_imm(0xffffffffu), mov_imm(0xffffffffu)}, false);
      int mn = wcmp(Op::CMPEQ, a, {mov_imm(0), mov_imm(0x80000000u)}, false);
      bad = alu(IOp::OR_B, R(bad), R(alu(IOp::AND_B, R(m1), R(mn))));
    }
    W d = wsel(bad, one, b), na = a, nd = d;
    int sa = -1, sd = -1;
    if (is_signed) {
      sa = cmp(IOp::CMPS_S, isa::Cond::LT, R(a.hi), VSrc::imm(0)), sd = cmp(IOp::CMPS_S, isa::Cond::LT, R(d.hi), VSrc::imm(0));
      na = wsel(sa, wsub(zero, a), a), nd = wsel(sd, wsub(zero, d), d);
    }
    W q{mov_imm(0), mov_imm(0)}, r{mov_imm(0), mov_imm(0)};
    count_down(63, [&](int i) {  // r = r << 1 | bit i of a; if (r >= d) r -= d, q |= 1 << i
      int high = cmp(IOp::CMPS_U, isa::Cond::GE, R(i), VSrc::imm(32)), s = alu(IOp::AND_B, R(i), VSrc::imm(31));
      int bit = alu(IOp::AND_B, R(alu(IOp::SHR_B, R(sel(R(high), R(na.hi), R(na.lo))), R(s))), VSrc::imm(1));
      W r2{alu(IOp::OR_B, R(alu(IOp::SHL_B, R(r.lo), VSrc::imm(1))), R(bit)),
           alu(IOp::OR_B, R(alu(IOp::SHL_B, R(r.hi), VSrc::imm(1))), R(alu(IOp::SHR_B, R(r.lo), VSrc::imm(31))))};
      int ge = alu(IOp::XOR_B, R(wcmp(Op::CMPLT, r2, nd, false)), VSrc::imm(1));
      W r3 = wsel(ge, wsub(r2, nd), r2);
      copy(r.lo, R(r3.lo)), copy(r.hi, R(r3.hi));
      int set = alu(IOp::SHL_B, R(ge), R(s));
      copy(q.lo, R(alu(IOp::OR_B, R(q.lo), R(sel(R(high), VSrc::imm(0), R(set))))));
      copy(q.hi, R(alu(IOp::OR_B, R(q.hi), R(sel(R(high), R(set), VSrc::imm(0))))));
    });
    W out = rem ? r : q;
    if (is_signed) out = wsel(rem ? sa : alu(IOp::XOR_B, R(sa), R(sd)), wsub(zero, out), out);
    return out;
  }
  W wide_alu(const UOp& u, int l) {
    const auto src = u.src();
    bool s = u.dtype().scalar == ScalarType::Int64;
    auto a = [&] { return wreg(src[0], l); };
    auto b = [&] { return wreg(src[1], l); };
    switch (u.op()) {
      case Op::ADD: return wadd(a(), b());
      case Op::SUB: return wsub(a(), b());
      case Op::MUL: return wmul(a(), b());
      case Op::NEG: return wsub({mov_imm(0), mov_imm(0)}, a());
      case Op::AND:
      case Op::OR:
      case Op::XOR: {
        IOp op = u.op() == Op::AND ? IOp::AND_B : u.op() == Op::OR ? IOp::OR_B : IOp::XOR_B;
        W x = a(), y = b();
        return {alu(op, R(x.lo), R(y.lo)), alu(op, R(x.hi), R(y.hi))};
      }
      case Op::SHL:
      case Op::SHR: return wshift(a(), wreg(src[1], l).lo, u.op(), s);
      case Op::MAX: {
        W x = a(), y = b();
        return wsel(wcmp(Op::CMPLT, x, y, s), y, x);
      }
      case Op::CDIV:
      case Op::CMOD: return widiv(a(), b(), s, u.op() == Op::CMOD);
      case Op::WHERE: return wsel(reg(src[0], l), wreg(src[1], l), wreg(src[2], l));
      case Op::CAST: return wreg(src[0], l);  // from a narrower integer (or the other 64-bit one)
      case Op::BITCAST:
        if (wide(src[0].dtype())) return wreg(src[0], l);
        break;
      default: break;
    }
    unsupported(
        u, "has no 64-bit " + std::string(ir::op_name(u.op())) + " (ugpu's ir3 backend does 64-bit add, sub, mul, div, shifts, logic and compares)");
  }
  // float32 to a 64-bit integer as the CPU converts: toward zero, saturating, NaN to 0. The magnitude
  // splits exactly into its high and low 32 bits (floor(m / 2^32), then the rest, under 2^32 with at
  // most 24 significant bits), each converted, then the pair is negated for a negative value.
  W float_to_wide(int v, bool is_signed) {
    int t = alu(IOp::TRUNC_F, R(v));
    int nan = cmp(IOp::CMPS_F, isa::Cond::NE, R(t), R(t));
    int over = cmp(IOp::CMPS_F, isa::Cond::GE, R(t), R(mov_f(is_signed ? 0x1p63f : 0x1p64f)));
    int under = cmp(IOp::CMPS_F, isa::Cond::LT, R(t), R(mov_f(is_signed ? -0x1p63f : 0.0f)));
    int out = alu(IOp::OR_B, R(alu(IOp::OR_B, R(nan), R(over))), R(under));
    VSrc at = R(sel(R(out), VSrc::flut(0), R(t)));
    at.abs = true;
    int m = alu(IOp::ABSNEG_F, at);
    int hf = alu(IOp::FLOOR_F, R(alu(IOp::MUL_F, R(m), R(mov_f(0x1p-32f)))));
    VSrc nh = R(hf);
    nh.neg = true;
    int lf = alu(IOp::MAD_F32, nh, R(mov_f(0x1p32f)), R(m));
    W w{cov(Type::F32, Type::U32, R(lf)), cov(Type::F32, Type::U32, R(hf))};
    if (is_signed) w = wsel(cmp(IOp::CMPS_F, isa::Cond::LT, R(t), VSrc::flut(0)), wsub({mov_imm(0), mov_imm(0)}, w), w);
    W hi_val = is_signed ? W{mov_imm(0xffffffffu), mov_imm(0x7fffffffu)} : W{mov_imm(0xffffffffu), mov_imm(0xffffffffu)};
    W lo_val = is_signed ? W{mov_imm(0), mov_imm(0x80000000u)} : W{mov_imm(0), mov_imm(0)};
    w = wsel(over, hi_val, w);
    w = wsel(under, lo_val, w);
    return wsel(nan, {mov_imm(0), mov_imm(0)}, w);
  }
  // A 64-bit integer to a 32-bit (or narrower) integer, bool or float.
  int narrow(const UOp& x, int l, Repr to) {
    W w = wreg(x, l);
    if (to == Repr::Bool) return cmp(IOp::CMPS_U, isa::Cond::NE, R(alu(IOp::OR_B, R(w.lo), R(w.hi))), VSrc::imm(0));
    if (is_float(to)) {
      // To nearest even, once: the magnitude shifted right until it fits 32 bits, the bits shifted out
      // kept as a sticky bit, converted, then scaled back by 2^shift (exact) and signed.
      bool s = x.dtype().scalar == ScalarType::Int64;
      int neg = s ? cmp(IOp::CMPS_S, isa::Cond::LT, R(w.hi), VSrc::imm(0)) : mov_imm(0);
      W m = s ? wsel(neg, wsub({mov_imm(0), mov_imm(0)}, w), w) : w;
      int n = alu(IOp::SUB_U, VSrc::imm(32), R(alu(IOp::CLZ_B, R(m.hi))));  // bits to shift out: 0 when hi is 0
      W shifted = wshift(m, n, Op::SHR, false);
      int mask = alu(IOp::SUB_U, R(alu(IOp::SHL_B, VSrc::imm(1), R(n))), VSrc::imm(1));  // n < 32 here, or n = 32 below
      int lost = sel(R(cmp(IOp::CMPS_U, isa::Cond::EQ, R(n), VSrc::imm(32))), R(m.lo), R(alu(IOp::AND_B, R(m.lo), R(mask))));
      int sticky = cmp(IOp::CMPS_U, isa::Cond::NE, R(lost), VSrc::imm(0));
      int f = cov(Type::U32, Type::F32, R(alu(IOp::OR_B, R(shifted.lo), R(sticky))), 1);
      int pow2 = alu(IOp::SHL_B, R(alu(IOp::ADD_U, R(n), VSrc::imm(127))), VSrc::imm(23));  // 2^n as float bits
      f = alu(IOp::MUL_F, R(f), R(pow2));
      VSrc nf = R(f);
      nf.neg = true;
      return normalize(to, sel(R(neg), R(alu(IOp::ABSNEG_F, nf)), R(f)));
    }
    return normalize(to, w.lo);
  }

  // --- kernel arguments ---
  void args() {
    uint32_t off = 0;
    for (const Param& prm : k_.params) {
      if (prm.kind == Param::Kind::Buffer) {
        off = (off + 7) / 8 * 8;
        int pair = group(2);
        copy(pair, VSrc::cnst(int(off / 4)));
        copy(pair + 1, VSrc::cnst(int(off / 4 + 1)));
        Ptr ptr;
        ptr.base = pair, ptr.elem = prm.dtype.base();
        ptrs_[prm.node.get()] = ptr;
        p_.facts.args.push_back({off, 8});
        off += 8;
      } else {
        if (prm.dtype.bitsize() == 64) {
          off = (off + 7) / 8 * 8;
          W w{vreg(), vreg()};
          copy(w.lo, VSrc::cnst(int(off / 4)));
          copy(w.hi, VSrc::cnst(int(off / 4 + 1)));
          wides_[prm.node.get()] = {w};
          p_.facts.args.push_back({off, 8});
          off += 8;
          continue;
        }
        int v = vreg();
        copy(v, VSrc::cnst(int(off / 4)));
        define(prm.node, {v});
        p_.facts.args.push_back({off, 4});
        off += 4;
      }
    }
    p_.facts.kernarg_bytes = (off + 15) / 16 * 16;
    p_.facts.const_vec4 = (p_.facts.kernarg_bytes / 16 + 3) / 4 * 4;
    if (p_.facts.const_vec4 > 256)
      throw Error("kernel " + k_.name + ": its arguments need more than the 256 vec4 constants of " + std::string(t_.name));
  }

  // --- instructions ---
  void inst(const UOp& u) {
    const auto src = u.src();
    switch (u.op()) {
      case Op::CONST:
      case Op::DEFINE_GLOBAL:
      case Op::DEFINE_VAR: return;
      case Op::AFTER:
        if (auto it = ptrs_.find(src[0].get()); it != ptrs_.end()) ptrs_[u.get()] = it->second;
        else if (auto w = wides_.find(src[0].get()); w != wides_.end()) wides_[u.get()] = w->second;
        else if (!src[0].is_const()) vals_[u.get()] = vals_.at(src[0].get());
        return;
      case Op::DEFINE_LOCAL: {
        const auto& a = u.arg_as<ir::Ints>();
        Ptr p;
        p.space = AddrSpace::Local, p.elem = u.dtype().base();
        p.local_base = (p_.facts.shared_bytes + 15) / 16 * 16;
        p_.facts.shared_bytes = uint32_t(p.local_base + a[1] * p.elem.itemsize());  // a[1] elements of the (vector) type
        if (p_.facts.shared_bytes > 32768) unsupported(u, "needs more than 32 KiB of workgroup memory");
        ptrs_[u.get()] = p;
        return;
      }
      case Op::DEFINE_REG: {
        const auto& a = u.arg_as<ir::Ints>();
        Ptr p;
        p.space = AddrSpace::Reg, p.elem = u.dtype().base();
        int per = wide(p.elem) ? 2 : 1;  // a 64-bit integer takes two
        if (per == 1) repr(p.elem, u, this);
        for (int64_t i = 0; i < a[1] * p.elem.count * per; ++i) p.regs.push_back(vreg());  // per scalar
        ptrs_[u.get()] = p;
        return;
      }
      case Op::SPECIAL: {
        const std::string& name = u.arg_as<std::string>();
        int dim = name.back() - '0';
        int v = vreg();
        copy(v, VSrc::phys((name[0] == 'g' ? kWorkgroupIdReg : kLocalIdReg) + dim));
        if (wide(u.dtype())) wides_[u.get()] = {W{v, mov_imm(0)}};
        else define(u, {v});
        return;
      }
      case Op::RANGE: {
        if (wide(u.dtype())) {  // a 64-bit counter: compared and stepped as a pair
          W i{vreg(), vreg()};
          copy(i.lo, VSrc::imm(0)), copy(i.hi, VSrc::imm(0));
          Loop l = loop_begin();
          branch_if(wcmp(Op::CMPLT, i, wreg(src[0]), u.dtype().scalar == ScalarType::Int64), true, l.exit);
          wides_[u.get()] = {i};
          loops_.emplace(u.get(), l);
          return;
        }
        repr(u);
        int i = vreg();
        copy(i, VSrc::imm(0));
        Loop l = loop_begin();
        VSrc bound = src2(src[0], 0, false);
        exit_when(l, is_signed(repr(u)) ? IOp::CMPS_S : IOp::CMPS_U, isa::Cond::GE, R(i), bound);
        define(u, {i});
        loops_.emplace(u.get(), l);
        return;
      }
      case Op::END: {
        if (wide(src[0].dtype())) {
          W i = wreg(src[0]), next = wadd(i, {mov_imm(1), mov_imm(0)});
          copy(i.lo, R(next.lo)), copy(i.hi, R(next.hi));
        } else {
          int i = reg(src[0]);
          VInst& inc = emit(IOp::ADD_U);
          inc.dst = i, inc.src = {R(i), VSrc::imm(1), {}};
        }
        loop_end(loops_.at(src[0].get()));
        return;
      }
      case Op::INDEX: {
        auto it = ptrs_.find(src[0].get());
        if (it == ptrs_.end()) unsupported(u, "internal: an INDEX of something that is not a buffer");
        Ptr p = it->second;
        if (p.index) unsupported(u, "an INDEX of an INDEX");
        p.index = src[1];
        p.elem = u.dtype().base();
        if (src.size() == 3) p.gate = reg(src[2]);
        ptrs_[u.get()] = p;
        return;
      }
      case Op::LOAD: load(u); return;
      case Op::STORE: store(u); return;
      case Op::BARRIER: {
        VInst& f = emit(IOp::FENCE);
        f.inst.rd = f.inst.wr = true, f.inst.g = true;
        emit(IOp::BAR).inst.g = true;
        return;
      }
      case Op::GEP:
        if (wide(u.dtype())) wides_[u.get()] = {wreg(src[0], int(u.arg_as<ir::Ints>()[0]))};
        else define(u, {reg(src[0], int(u.arg_as<ir::Ints>()[0]))});
        return;
      case Op::VECTORIZE: {
        if (wide(u.dtype())) {
          std::vector<W> w;
          for (const UOp& s : src) w.push_back(wreg(s));
          wides_[u.get()] = w;
          return;
        }
        std::vector<int> r;
        for (const UOp& s : src) r.push_back(reg(s));
        define(u, r);
        return;
      }
      case Op::WHERE:
        if (wide(u.dtype())) return wide_lanes(u);
        lanes(u, [&](int l) { return sel(R(reg(src[0], l)), R(reg(src[1], l)), R(reg(src[2], l))); });
        return;
      case Op::CAST:
        if (wide(u.dtype())) {
          if (src[0].dtype().is_float()) {
            std::vector<W> w;
            for (int l = 0; l < u.dtype().count; ++l) w.push_back(float_to_wide(reg(src[0], l), u.dtype().scalar == ScalarType::Int64));
            wides_[u.get()] = w;
            return;
          }
          return wide_lanes(u);
        }
        if (wide(src[0].dtype())) return lanes(u, [&](int l) { return narrow(src[0], l, repr(u)); });
        lanes(u, [&](int l) { return cast(reg(src[0], l), repr(src[0]), repr(u)); });
        return;
      case Op::BITCAST:
        if (wide(u.dtype()) || wide(src[0].dtype())) return wide_lanes(u);
        lanes(u, [&](int l) { return bitcast(reg(src[0], l), repr(src[0]), repr(u)); });
        return;
      case Op::WMMA: unsupported(u, "has no tensor cores");
      default:
        if (wide(src[0].dtype()) && u.dtype().is_bool())  // a 64-bit compare
          return lanes(u, [&](int l) { return wcmp(u.op(), wreg(src[0], l), wreg(src[1], l), src[0].dtype().scalar == ScalarType::Int64); });
        if (wide(u.dtype())) return wide_lanes(u);
        lanes(u, [&](int l) { return alu_op(u, l); });
        return;
    }
  }

  void wide_lanes(const UOp& u) {
    std::vector<W> w;
    for (int l = 0; l < u.dtype().count; ++l) w.push_back(wide_alu(u, l));
    wides_[u.get()] = w;
  }
  template <class F>
  void lanes(const UOp& u, F f) {
    std::vector<int> r;
    for (int l = 0; l < u.dtype().count; ++l) r.push_back(f(l));
    define(u, r);
  }

  int alu_op(const UOp& u, int l) {
    const auto src = u.src();
    Repr r = repr(src[0]);
    bool f = is_float(r), s = is_signed(r);
    auto a = [&] { return src2(src[0], l, f); };
    auto b = [&] { return src2(src[1], l, f); };
    auto ra = [&] { return R(reg(src[0], l)); };
    auto rb = [&] { return R(reg(src[1], l)); };
    auto done = [&](int v) { return normalize(r, v); };
    switch (u.op()) {
      case Op::ADD:
        if (r == Repr::Bool) return alu(IOp::OR_B, ra(), rb());
        return done(alu(f ? IOp::ADD_F : IOp::ADD_U, a(), b()));
      case Op::SUB: {
        if (f) {
          VSrc nb = b();
          nb.neg = !nb.neg;
          return done(alu(IOp::ADD_F, a(), nb));
        }
        return done(alu(IOp::SUB_U, a(), b()));
      }
      case Op::MUL:
        if (r == Repr::Bool) return alu(IOp::AND_B, ra(), rb());
        if (f) return done(alu(IOp::MUL_F, a(), b()));
        return done(imul(reg(src[0], l), reg(src[1], l)));
      case Op::FMA: return done(alu(IOp::MAD_F32, ra(), rb(), R(reg(src[2], l))));
      case Op::FDIV: return done(fdiv(reg(src[0], l), reg(src[1], l)));
      case Op::RECIPROCAL: return done(fdiv(mov_f(1.0f), reg(src[0], l)));
      case Op::SQRT: return done(alu(IOp::SQRT, ra()));
      case Op::EXP2: return done(alu(IOp::EXP2, ra()));
      case Op::SIN: {
        // The SFU's sin wants [-pi, pi]: x - k * 2pi with k = x / 2pi to nearest, 2pi in two parts so each
        // product is exact enough (fused), as Mesa range-reduces it.
        double two_pi = 2 * M_PI;
        float c1 = float(two_pi), c2 = float(two_pi - double(c1));
        int x = reg(src[0], l);
        int k = alu(IOp::RNDNE_F, R(alu(IOp::MUL_F, R(x), R(mov_f(float(1 / two_pi))))));
        VSrc nk = R(k);
        nk.neg = true;
        int r = alu(IOp::MAD_F32, nk, R(mov_f(c1)), R(x));
        r = alu(IOp::MAD_F32, nk, R(mov_f(c2)), R(r));
        return done(alu(IOp::SIN, R(r)));
      }
      case Op::LOG2: return done(alu(IOp::LOG2, ra()));
      case Op::TRUNC: return f ? alu(IOp::TRUNC_F, ra()) : reg(src[0], l);
      case Op::NEG:
        if (f) {
          VSrc x = ra();
          x.neg = true;
          return done(alu(IOp::ABSNEG_F, x));
        }
        return done(alu(IOp::SUB_U, VSrc::imm(0), ra()));
      case Op::MAX: {
        if (!f) return alu(s ? IOp::MAX_S : IOp::MAX_U, ra(), rb());
        // As the CPU: b when a < b or b is NaN, else a (a NaN in either comes through).
        int x = reg(src[0], l), y = reg(src[1], l);
        int lt = cmp(IOp::CMPS_F, isa::Cond::LT, R(x), R(y)), nan = cmp(IOp::CMPS_F, isa::Cond::NE, R(y), R(y));
        return sel(R(alu(IOp::OR_B, R(lt), R(nan))), R(y), R(x));
      }
      case Op::CMPLT: return cmp(f ? IOp::CMPS_F : s ? IOp::CMPS_S : IOp::CMPS_U, isa::Cond::LT, a(), b());
      case Op::CMPNE: return cmp(f ? IOp::CMPS_F : IOp::CMPS_U, isa::Cond::NE, a(), b());
      case Op::CMPEQ: return cmp(f ? IOp::CMPS_F : IOp::CMPS_U, isa::Cond::EQ, a(), b());
      case Op::AND: return alu(IOp::AND_B, a(), b());
      case Op::OR: return alu(IOp::OR_B, a(), b());
      case Op::XOR: return alu(IOp::XOR_B, a(), b());
      case Op::SHL: return done(alu(IOp::SHL_B, a(), b()));
      case Op::SHR: return alu(s ? IOp::ASHR_B : IOp::SHR_B, a(), b());
      case Op::CDIV:
      case Op::CMOD:
        if (f) break;
        return done(idiv(reg(src[0], l), reg(src[1], l), s, u.op() == Op::CMOD));
      default: break;
    }
    unsupported(u, "has no instruction for " + std::string(ir::op_name(u.op())) + " on " + src[0].dtype().name());
  }

  // a * b mod 2^32 from 16-bit multiplies: lo*lo, plus each cross product's low half shifted up.
  int imul(int a, int b) {
    int t0 = alu(IOp::MULL_U, R(a), R(b));
    int t1 = alu(IOp::MADSH_M16, R(a), R(b), R(t0));
    return alu(IOp::MADSH_M16, R(b), R(a), R(t1));
  }
  // a / b to nearest: both operands scaled by 2^64 or 2^-64 (exact where it matters) so b's reciprocal is
  // a normal number, the reciprocal, one correction with the residual, rounded once. Where the residual
  // is NaN (an infinite or zero operand, a quotient that overflows), the plain product stands.
  int fdiv(int a, int b) {
    VSrc ab = R(b);
    ab.abs = true;
    int absb = alu(IOp::ABSNEG_F, ab);
    int small = cmp(IOp::CMPS_F, isa::Cond::LT, R(absb), R(mov_f(0x1p-100f))), big = cmp(IOp::CMPS_F, isa::Cond::GT, R(absb), R(mov_f(0x1p100f)));
    int scale = sel(R(small), R(mov_f(0x1p64f)), R(sel(R(big), R(mov_f(0x1p-64f)), VSrc::flut(2))));
    int as = alu(IOp::MUL_F, R(a), R(scale)), bs = alu(IOp::MUL_F, R(b), R(scale));
    int r = alu(IOp::RCP, R(bs));
    int q = alu(IOp::MUL_F, R(as), R(r));
    VSrc nb = R(bs);
    nb.neg = true;
    int e = alu(IOp::MAD_F32, nb, R(q), R(as));
    int q2 = alu(IOp::MAD_F32, R(e), R(r), R(q));
    int bad = cmp(IOp::CMPS_F, isa::Cond::NE, R(q2), R(q2));
    return sel(R(bad), R(q), R(q2));
  }
  // Integer division (truncating, as C) and remainder by shift and subtract, 32 steps in a loop. A zero
  // divisor (and INT_MIN / -1) divides by 1 instead, as on the other devices.
  int idiv(int a, int b, bool is_signed, bool rem) {
    int zero = cmp(IOp::CMPS_U, isa::Cond::EQ, R(b), VSrc::imm(0));
    int bad = zero;
    if (is_signed) {
      int m1 = cmp(IOp::CMPS_U, isa::Cond::EQ, R(b), VSrc::imm(-1));
      int mn = cmp(IOp::CMPS_U, isa::Cond::EQ, R(a), R(mov_imm(0x80000000u)));
      bad = alu(IOp::OR_B, R(zero), R(alu(IOp::AND_B, R(m1), R(mn))));
    }
    int d = sel(R(bad), R(mov_imm(1)), R(b));
    int na = a, nd = d, sa = -1, sd = -1;
    if (is_signed) {
      sa = cmp(IOp::CMPS_S, isa::Cond::LT, R(a), VSrc::imm(0));
      sd = cmp(IOp::CMPS_S, isa::Cond::LT, R(d), VSrc::imm(0));
      na = sel(R(sa), R(alu(IOp::SUB_U, VSrc::imm(0), R(a))), R(a));
      nd = sel(R(sd), R(alu(IOp::SUB_U, VSrc::imm(0), R(d))), R(d));
    }
    int q = mov_imm(0), r = mov_imm(0);
    count_down(31, [&](int i) {  // r = r << 1 | (a >> i) & 1; if (r >= d) r -= d, q |= 1 << i
      int bit = alu(IOp::AND_B, R(alu(IOp::SHR_B, R(na), R(i))), VSrc::imm(1));
      int r2 = alu(IOp::OR_B, R(alu(IOp::SHL_B, R(r), VSrc::imm(1))), R(bit));
      int ge = cmp(IOp::CMPS_U, isa::Cond::GE, R(r2), R(nd));
      copy(r, R(alu(IOp::SUB_U, R(r2), R(sel(R(ge), R(nd), VSrc::imm(0))))));
      copy(q, R(alu(IOp::OR_B, R(q), R(alu(IOp::SHL_B, R(ge), R(i))))));
    });
    int out = rem ? r : q;
    if (is_signed) {  // the quotient is negative when the signs differ; the remainder takes the dividend's sign
      int neg = rem ? sa : alu(IOp::XOR_B, R(sa), R(sd));
      out = sel(R(neg), R(alu(IOp::SUB_U, VSrc::imm(0), R(out))), R(out));
    }
    return out;
  }

  // --- conversions ---
  int cast(int v, Repr from, Repr to) {
    if (from == to) return v;
    if (to == Repr::Bool)
      return is_float(from) ? cmp(IOp::CMPS_F, isa::Cond::NE, R(v), VSrc::flut(0)) : cmp(IOp::CMPS_U, isa::Cond::NE, R(v), VSrc::imm(0));
    if (is_float(from) && is_float(to)) return normalize(to, v);  // every float is held as float32
    if (is_float(to)) {                                           // an integer: exactly to float32 where it fits, to nearest even beyond 2^24
      Type t = from == Repr::U32 || from == Repr::Bool ? Type::U32 : Type::S32;
      return normalize(to, cov(t, Type::F32, R(v), 1));
    }
    if (is_float(from)) return float_to_int(v, to);
    return normalize(to, v);  // integers: wrap into the target's width
  }
  // float32 to an integer as the CPU reference converts: toward zero, saturating, NaN to 0.
  int float_to_int(int v, Repr to) {
    bool uns = to == Repr::U32 || to == Repr::U16 || to == Repr::U8;
    int bits = to == Repr::I32 || to == Repr::U32 ? 32 : to == Repr::I16 || to == Repr::U16 ? 16 : 8;
    // The range is [lo, 2^k) with 2^k and lo exact in float32.
    double lo = uns ? 0 : -std::ldexp(1.0, bits - 1), end = uns ? std::ldexp(1.0, bits) : std::ldexp(1.0, bits - 1);
    int t = alu(IOp::TRUNC_F, R(v));
    int nan = cmp(IOp::CMPS_F, isa::Cond::NE, R(t), R(t));
    int over = cmp(IOp::CMPS_F, isa::Cond::GE, R(t), R(mov_f(float(end))));
    int under = cmp(IOp::CMPS_F, isa::Cond::LT, R(t), R(mov_f(float(lo))));
    int safe = sel(R(alu(IOp::OR_B, R(alu(IOp::OR_B, R(nan), R(over))), R(under))), VSrc::flut(0), R(t));
    int i = cov(Type::F32, uns ? Type::U32 : Type::S32, R(safe));
    i = sel(R(over), R(mov_imm(uint32_t(int64_t(end) - 1))), R(i));
    return sel(R(under), R(mov_imm(uint32_t(int64_t(lo)))), R(i));
  }
  // The bits of one type read as another of the same width: through the source's bit pattern
  // (zero-extended), then built into the target's form.
  int bitcast(int v, Repr from, Repr to) {
    int bits;
    switch (from) {
      case Repr::Half: bits = cov(Type::U16, Type::U32, VSrc::virt(cov(Type::F32, Type::F16, R(v), 1), true)); break;
      case Repr::BF16: bits = alu(IOp::SHR_B, R(v), VSrc::imm(16)); break;
      case Repr::I16: bits = alu(IOp::AND_B, R(v), R(mov_imm(0xffff))); break;
      case Repr::I8: bits = alu(IOp::AND_B, R(v), VSrc::imm(0xff)); break;
      default: bits = v;
    }
    switch (to) {
      case Repr::Half: return cov(Type::F16, Type::F32, VSrc::virt(cov(Type::U32, Type::U16, R(bits)), true));
      case Repr::BF16: return alu(IOp::SHL_B, R(bits), VSrc::imm(16));
      default: return normalize(to, bits);
    }
  }

  // --- memory ---
  const Ptr& pointer(const UOp& p) {
    auto it = ptrs_.find(p.get());
    if (it == ptrs_.end()) unsupported(p, "internal: a load or store through something that is not a pointer");
    return it->second;
  }
  // The element index as a register.
  int index_reg(const Ptr& p) { return p.index ? reg(p.index) : mov_imm(0); }

  // Guards a gated access: code between begin and end runs only where the gate is true.
  int gate_begin(const Ptr& p) {
    if (p.gate < 0) return -1;
    int skip = label();
    branch_if(p.gate, true, skip);
    ++depth_, p_.max_depth = std::max(p_.max_depth, depth_);
    return skip;
  }
  void gate_end(int skip) {
    if (skip < 0) return;
    place(skip);
    --depth_;
  }

  // How an element type is held in memory, and in a half register after a load.
  static Type mem_type(Repr r) {
    switch (r) {
      case Repr::Half: return Type::F16;
      case Repr::BF16:
      case Repr::I16:
      case Repr::U16: return Type::U16;
      case Repr::I8:
      case Repr::U8:
      case Repr::Bool: return Type::U8;
      default: return Type::U32;
    }
  }

  // The 64-bit address of element `lane` of p (global): base + index * element size + lane * lane size.
  int address_pair(const Ptr& p, int lane_bytes) {
    if (p.index && wide(p.index.dtype())) {  // base + index * size, in 64 bits
      uint64_t size = uint64_t(p.elem.element().itemsize());
      W idx = wreg(p.index);
      W off = std::has_single_bit(size) ? wshift(idx, mov_imm(uint32_t(std::countr_zero(size))), Op::SHL, false)
                                        : wmul(idx, {mov_imm(uint32_t(size)), mov_imm(0)});
      if (lane_bytes) off = wadd(off, {mov_imm(uint32_t(lane_bytes)), mov_imm(0)});
      W a = wadd({p.base, p.base + 1}, off);
      int pair = group(2);
      copy(pair, R(a.lo));
      copy(pair + 1, R(a.hi));
      return pair;
    }
    int idx = index_reg(p);
    int64_t size = p.elem.element().itemsize();  // an index counts scalars, also for a vector access
    int off = size == 1                             ? idx
              : std::has_single_bit(uint64_t(size)) ? alu(IOp::SHL_B, R(idx), VSrc::imm(std::countr_zero(uint64_t(size))))
                                                    : imul(idx, mov_imm(uint32_t(size)));
    if (lane_bytes) off = alu(IOp::ADD_U, R(off), R(mov_imm(uint32_t(lane_bytes))));
    int pair = group(2);
    VInst& lo = emit(IOp::ADD_U);
    lo.dst = pair, lo.src = {R(p.base), R(off), {}};
    int carry = cmp(IOp::CMPS_U, isa::Cond::LT, R(pair), R(p.base));
    VInst& hi = emit(IOp::ADD_U);
    hi.dst = pair + 1, hi.src = {R(p.base + 1), R(carry), {}};
    return pair;
  }
  // The byte address of element `lane` of p in workgroup memory.
  int local_address(const Ptr& p) {
    int idx = p.index && wide(p.index.dtype()) ? wreg(p.index).lo : index_reg(p);  // workgroup memory is far below 4 GiB
    int64_t size = p.elem.element().itemsize();
    int off = std::has_single_bit(uint64_t(size)) ? alu(IOp::SHL_B, R(idx), VSrc::imm(std::countr_zero(uint64_t(size))))
                                                  : imul(idx, mov_imm(uint32_t(size)));
    return alu(IOp::ADD_U, R(off), R(mov_imm(uint32_t(p.local_base))));
  }

  // 64-bit integers in memory: two dwords per lane, moved as dword lanes.
  void wide_access(const UOp& u, bool is_load) {
    const auto src = u.src();
    const Ptr& p = pointer(src[0]);
    const UOp& value = is_load ? u : src[1];
    int n = value.dtype().count;
    std::vector<W> v(static_cast<size_t>(n));
    if (is_load)
      for (W& w : v) w = {vreg(), vreg()};
    else
      for (int l = 0; l < n; ++l) v[size_t(l)] = wreg(value, l);
    auto half_of = [&](int i) { return i % 2 ? v[size_t(i / 2)].hi : v[size_t(i / 2)].lo; };
    if (p.space == AddrSpace::Reg) {
      int64_t base = reg_index(p, u) * 2;
      for (int i = 0; i < 2 * n; ++i) copy(is_load ? half_of(i) : p.regs.at(size_t(base + i)), R(is_load ? p.regs.at(size_t(base + i)) : half_of(i)));
      if (is_load) wides_[u.get()] = v;
      return;
    }
    if (is_load && p.gate >= 0)
      for (int l = 0; l < n; ++l) {
        W alt = wreg(src[1], l);
        copy(v[size_t(l)].lo, R(alt.lo)), copy(v[size_t(l)].hi, R(alt.hi));
      }
    int skip = gate_begin(p);
    for (int d0 = 0; d0 < 2 * n; d0 += 4) {
      int k = std::min(4, 2 * n - d0);
      int g = group(k);
      if (!is_load)
        for (int j = 0; j < k; ++j) copy(g + j, R(half_of(d0 + j)));
      bool local = p.space == AddrSpace::Local;
      int addr = local ? local_address(p) : address_pair(p, d0 * 4);
      VInst& m = emit(is_load ? (local ? IOp::LDL : IOp::LDG) : (local ? IOp::STL : IOp::STG));
      m.inst.type = Type::U32, m.inst.components = uint8_t(k), m.inst.offset = local ? d0 * 4 : 0;
      m.src[0] = R(addr);
      if (is_load) m.dst = g;
      else m.src[2] = R(g);
      if (is_load)
        for (int j = 0; j < k; ++j) copy(half_of(d0 + j), R(g + j));
    }
    gate_end(skip);
    if (is_load) wides_[u.get()] = v;
  }

  void load(const UOp& u) {
    if (wide(u.dtype())) return wide_access(u, true);
    const auto src = u.src();
    const Ptr& p = pointer(src[0]);
    Repr r = repr(u.dtype().element(), u, this);
    int n = u.dtype().count;
    if (p.space == AddrSpace::Reg) {
      int64_t base = reg_index(p, u);  // indexes count scalars, as for memory
      std::vector<int> out;
      for (int l = 0; l < n; ++l) out.push_back(p.regs.at(size_t(base + l)));
      // A copy: the register may be written again while this value is still in use.
      for (int& o : out) {
        int c = vreg();
        copy(c, R(o));
        o = c;
      }
      define(u, out);
      return;
    }
    std::vector<int> out(static_cast<size_t>(n));
    for (int& o : out) o = vreg();
    if (p.gate >= 0)  // the value where the gate is false
      for (int l = 0; l < n; ++l) copy(out[size_t(l)], R(reg(src[1], l)));
    int skip = gate_begin(p);
    Type mt = mem_type(r);
    int lane_bytes = u.dtype().element().itemsize();
    if (mt == Type::U32) {  // whole dwords: up to 4 lanes per instruction
      for (int l0 = 0; l0 < n; l0 += 4) {
        int k = std::min(4, n - l0);
        int g = group(k);
        int addr = p.space == AddrSpace::Local ? local_address(p) : address_pair(p, l0 * 4);
        VInst& ld = emit(p.space == AddrSpace::Local ? IOp::LDL : IOp::LDG);
        ld.inst.type = Type::U32, ld.inst.components = uint8_t(k);
        ld.dst = g, ld.src[0] = R(addr);
        if (p.space == AddrSpace::Local) ld.inst.offset = l0 * 4;
        for (int l = 0; l < k; ++l) copy(out[size_t(l0 + l)], R(g + l));
      }
    } else {
      for (int l = 0; l < n; ++l) {
        int h = vreg(true);
        int addr = p.space == AddrSpace::Local ? local_address(p) : address_pair(p, l * lane_bytes);
        VInst& ld = emit(p.space == AddrSpace::Local ? IOp::LDL : IOp::LDG);
        ld.inst.type = mt, ld.inst.components = 1;
        ld.dst = h, ld.dst_half = true, ld.src[0] = R(addr);
        if (p.space == AddrSpace::Local) ld.inst.offset = l * lane_bytes;
        copy(out[size_t(l)], R(from_half(h, r)));
      }
    }
    gate_end(skip);
    define(u, out);
  }
  // A value loaded into a half register, in its 32-bit form.
  int from_half(int h, Repr r) {
    switch (r) {
      case Repr::Half: return cov(Type::F16, Type::F32, VSrc::virt(h, true));
      case Repr::BF16: return alu(IOp::SHL_B, R(cov(Type::U16, Type::U32, VSrc::virt(h, true))), VSrc::imm(16));
      case Repr::I16: return cov(Type::S16, Type::S32, VSrc::virt(h, true));
      case Repr::U16: return cov(Type::U16, Type::U32, VSrc::virt(h, true));
      case Repr::Bool:
        return cmp(IOp::CMPS_U, isa::Cond::NE, R(alu(IOp::AND_B, R(cov(Type::U16, Type::U32, VSrc::virt(h, true))), VSrc::imm(0xff))), VSrc::imm(0));
      case Repr::U8: return alu(IOp::AND_B, R(cov(Type::U16, Type::U32, VSrc::virt(h, true))), VSrc::imm(0xff));
      case Repr::I8: return normalize(Repr::I8, cov(Type::U16, Type::U32, VSrc::virt(h, true)));
      default: return h;
    }
  }
  // A 32-bit value in a half register, for a store of an 8- or 16-bit type.
  int to_half(int v, Repr r) {
    switch (r) {
      case Repr::Half: return cov(Type::F32, Type::F16, R(v), 1);
      case Repr::BF16: return cov(Type::U32, Type::U16, R(float_to_bf16_bits(v)));
      default: return cov(Type::U32, Type::U16, R(v));
    }
  }
  int64_t reg_index(const Ptr& p, const UOp& u) {
    if (!p.index) return 0;
    if (!p.index.is_const()) unsupported(u, "indexes registers (DEFINE_REG) with a value known only at run time");
    return p.index.const_int();
  }

  void store(const UOp& u) {
    if (wide(u.src()[1].dtype())) return wide_access(u, false);
    const auto src = u.src();
    const Ptr& p = pointer(src[0]);
    const UOp& value = src[1];
    Repr r = repr(value.dtype().element(), u, this);
    int n = value.dtype().count;
    if (p.space == AddrSpace::Reg) {
      int64_t base = reg_index(p, u);
      std::vector<int> vals;
      for (int l = 0; l < n; ++l) vals.push_back(reg(value, l));  // all read before any is written
      for (int l = 0; l < n; ++l) copy(p.regs.at(size_t(base + l)), R(vals[size_t(l)]));
      return;
    }
    int skip = gate_begin(p);
    Type mt = mem_type(r);
    int lane_bytes = value.dtype().element().itemsize();
    if (mt == Type::U32) {
      for (int l0 = 0; l0 < n; l0 += 4) {
        int k = std::min(4, n - l0);
        int g = group(k);
        for (int l = 0; l < k; ++l) copy(g + l, R(reg(value, l0 + l)));
        int addr = p.space == AddrSpace::Local ? local_address(p) : address_pair(p, l0 * 4);
        VInst& st = emit(p.space == AddrSpace::Local ? IOp::STL : IOp::STG);
        st.inst.type = Type::U32, st.inst.components = uint8_t(k);
        st.src[0] = R(addr), st.src[2] = R(g);
        if (p.space == AddrSpace::Local) st.inst.offset = l0 * 4;
      }
    } else {
      for (int l = 0; l < n; ++l) {
        int h = to_half(reg(value, l), r);
        int addr = p.space == AddrSpace::Local ? local_address(p) : address_pair(p, l * lane_bytes);
        VInst& st = emit(p.space == AddrSpace::Local ? IOp::STL : IOp::STG);
        st.inst.type = mt, st.inst.components = 1;
        st.src[0] = R(addr), st.src[2] = VSrc::virt(h, true);
        if (p.space == AddrSpace::Local) st.inst.offset = l * lane_bytes;
      }
    }
    gate_end(skip);
  }

  const LoweredKernel& k_;
  const Target& t_;
  VProgram p_;
  std::unordered_map<const void*, std::vector<int>> vals_;
  std::unordered_map<const void*, std::vector<W>> wides_;
  std::unordered_map<const void*, Ptr> ptrs_;
  std::unordered_map<const void*, Loop> loops_;
  int depth_ = 0;
};

}  // namespace

VProgram select(const LoweredKernel& k, const Target& t) { return Selector(k, t).run(); }

}  // namespace ugpu::codegen::ir3
