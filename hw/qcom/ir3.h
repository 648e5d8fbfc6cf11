// Adreno ir3 machine code (a6xx): one instruction is 64 bits, in eight categories. This is the one table
// of the forms ugpu compiles to, executes and disassembles — cat0 flow control, cat1 moves and
// conversions, cat2 one- and two-source ALU, cat3 three-source ALU, cat4 transcendental (SFU), cat6
// global, shared and private memory and atomics, cat7 barriers and fences — with an encoder, a
// decoder and a disassembler built on it. Field positions come from Mesa's public ISA description
// (src/freedreno/isa, restated in docs/qcom.md); the names and this code are ugpu's own.
#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ugpu::hw::qcom::ir3 {

// Register ids: rN.c = N * 4 + c (N < 48 per fiber, 48..55 shared per wave), with the special ones.
inline constexpr uint8_t kA0 = 0xF4, kA1 = 0xF5, kP0 = 0xF8, kNoReg = 0xFC;
constexpr uint8_t reg(unsigned n, unsigned comp = 0) { return uint8_t(n * 4 + comp); }

// Operand types (cat1 moves, cat6 memory); the 16- and 8-bit ones live in half registers.
enum class Type : uint8_t { F16 = 0, F32 = 1, U16 = 2, U32 = 3, S16 = 4, S32 = 5, U8 = 6, U8_32 = 7 };
constexpr bool is_half(Type t) { return t == Type::F16 || t == Type::U16 || t == Type::S16 || t == Type::U8; }
const char* type_name(Type t);

// The instructions, by category. Each has one row in kOps (ir3.cpp): its category, its hardware opcode
// field value, the number of sources and its mnemonic.
enum class Op : uint8_t {
  // cat0
  NOP,
  BR,
  BRAO,
  BRAA,
  BANY,
  BALL,
  JUMP,
  END,
  // cat1 (source type == destination type: mov; otherwise cov)
  MOV,
  // cat2
  ADD_F,
  MIN_F,
  MAX_F,
  MUL_F,
  SIGN_F,
  CMPS_F,
  ABSNEG_F,
  CMPV_F,
  FLOOR_F,
  CEIL_F,
  RNDNE_F,
  RNDAZ_F,
  TRUNC_F,
  ADD_U,
  ADD_S,
  SUB_U,
  SUB_S,
  CMPS_U,
  CMPS_S,
  MIN_U,
  MIN_S,
  MAX_U,
  MAX_S,
  ABSNEG_S,
  AND_B,
  OR_B,
  NOT_B,
  XOR_B,
  CMPV_U,
  CMPV_S,
  MUL_U24,
  MUL_S24,
  MULL_U,
  BFREV_B,
  CLZ_S,
  CLZ_B,
  SHL_B,
  SHR_B,
  ASHR_B,
  MGEN_B,
  GETBIT_B,
  CBITS_B,
  // cat3 (normal form, then the alternate form)
  MAD_U16,
  MADSH_U16,
  MAD_S16,
  MADSH_M16,
  MAD_U24,
  MAD_S24,
  MAD_F16,
  MAD_F32,
  SEL_B16,
  SEL_B32,
  SEL_S16,
  SEL_S32,
  SEL_F16,
  SEL_F32,
  SAD_S16,
  SAD_S32,
  SHRM,
  SHLM,
  SHRG,
  SHLG,
  ANDG,
  // cat4
  RCP,
  RSQ,
  LOG2,
  EXP2,
  SIN,
  COS,
  SQRT,
  HRSQ,
  HLOG2,
  HEXP2,
  // cat6
  LDG,
  LDG_A,
  STG,
  STG_A,
  LDL,
  LDP,
  LDLW,
  STL,
  STP,
  STLW,
  ATOMIC_ADD,
  ATOMIC_SUB,
  ATOMIC_XCHG,
  ATOMIC_INC,
  ATOMIC_DEC,
  ATOMIC_CMPXCHG,
  ATOMIC_MIN,
  ATOMIC_MAX,
  ATOMIC_AND,
  ATOMIC_OR,
  ATOMIC_XOR,
  // cat7
  BAR,
  FENCE,
  COUNT
};

struct OpInfo {
  Op op;
  const char* name;  // "add.f"; cat1: "mov" (the text is mov.TT / cov.TT)
  uint8_t cat;
  uint8_t opc;   // the hardware opcode field (cat0 BRTYPE for branches; cat3 OPC within its form)
  uint8_t srcs;  // register/const/immediate sources (cat6: see the Inst fields)
  bool half;     // cat3 normal form: the opcode works on half registers
};
const OpInfo& info(Op op);

// A source operand.
struct Src {
  enum class Kind : uint8_t { None, Reg, Const, Imm, Flut, RelReg, RelConst };
  Kind kind = Kind::None;
  uint16_t num = 0;   // Reg: regid; Const: const id (N * 4 + c); Flut: table index
  int32_t imm = 0;    // Imm: the value; Rel*: the offset from a0.x
  bool half = false;  // half register / half constant / half FLUT value
  bool neg = false, abs = false;
  bool r = false;  // (r): advanced with each repeat
  static Src gpr(uint8_t regid, bool half = false) { return {Kind::Reg, regid, 0, half}; }
  static Src cnst(uint16_t id, bool half = false) { return {Kind::Const, id, 0, half}; }
  static Src immed(int32_t v, bool half = false) { return {Kind::Imm, 0, v, half}; }
};

// Float immediates a cat2 source can hold: an index into this table.
inline constexpr int kFlutSize = 12;
float flut_value(int index);
const char* flut_name(int index);

enum class Cond : uint8_t { LT = 0, LE = 1, GT = 2, GE = 3, EQ = 4, NE = 5 };

struct Inst {
  Op op = Op::NOP;
  uint8_t dst = kNoReg;
  bool dst_half = false;
  std::array<Src, 3> src{};
  // Flags.
  bool sy = false, ss = false, jp = false, ul = false, sat = false;
  uint8_t rpt = 0;       // (rptN): issued N + 1 times
  uint8_t nop = 0;       // (nopN) on cat2/cat3: N idle cycles after it
  Cond cond = Cond::LT;  // cat2 compares
  // cat0 branches: the predicates and the target, in instructions relative to the branch.
  bool inv1 = false, inv2 = false;
  uint8_t comp1 = 0, comp2 = 0;
  int32_t target = 0;
  // cat1: source and destination types, rounding.
  Type src_type = Type::U32, dst_type = Type::U32;
  uint8_t round = 0;
  // cat6: the memory type, components (1..4), the immediate byte offset, and for the .a forms the
  // register offset (src[1]) with its small offset and shift (address = base + ((off + small) << (shift + 2))).
  // Operands: loads: dst, src[0] = address; stores: src[0] = address, src[2] = value; atomics: dst, src[0] = address, src[2] = value.
  Type type = Type::U32;
  uint8_t components = 1;
  int32_t offset = 0;
  uint8_t shift = 0;
  bool global = false;  // atomics: global memory (address pair) instead of shared
  // cat7: the scopes and kinds a fence or barrier orders.
  bool g = false, l = false, rd = false, wr = false;
};

// Encodes one instruction; throws Error naming the instruction and the field that cannot hold it.
uint64_t encode(const Inst& i);
// Decodes one instruction word, or nullopt with `why` (a category or opcode ugpu does not know, a form
// it does not execute, reserved bits set).
std::optional<Inst> decode(uint64_t word, std::string* why = nullptr);
// The instruction as text ("(sy)add.f r1.x, r0.x, c8.y").
std::string format(const Inst& i);
std::string format_reg(uint8_t regid, bool half);
// A program as text, one instruction per line with its index; words that do not decode say so.
std::string disassemble(const std::vector<uint64_t>& code);

// Properties the compiler's scheduler and the executor's hazard checks share.
enum class SyncClass : uint8_t { Alu, Ss, Sy, None };
// What a later reader of this instruction's destination waits with: Alu (delay slots), Ss ((ss):
// SFU results, shared-memory loads and atomics), Sy ((sy): global and private loads, global atomics),
// None (no destination).
SyncClass result_class(const Inst& i);
bool is_alu(const Inst& i);  // cat1, cat2, cat3

}  // namespace ugpu::hw::qcom::ir3
