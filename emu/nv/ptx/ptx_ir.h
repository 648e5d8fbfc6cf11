// The PTX executor's pre-decoded program (internal to emu/nv/ptx*.cpp). The parser turns each PTX
// instruction into an Inst: operands resolved to register slots, immediates turned into constant
// slots, branch targets into instruction indices, and the implementation chosen once (`fn`). The
// executor then runs a warp's 32 lanes through one Inst at a time.
//
// Registers: every PTX register (of any width), every immediate and every special register read by
// the entry is a *slot* of 32 lanes x 64 bits in the warp's register file; a value narrower than 64
// bits sits in the low bits (instructions read only the width of their type). Predicates are kept
// apart, one 32-bit lane mask each, so guards and setp cost one word per warp.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "emu/nv/ptx/ptx.h"

namespace ugpu::emu::nv::detail {

enum class T : uint8_t { None, Pred, B8, B16, B32, B64, U8, U16, U32, U64, S8, S16, S32, S64, F16, F16x2, BF16, BF16x2, F32, F64 };
int bits(T t);
const char* name(T t);
inline bool is_signed(T t) { return t == T::S8 || t == T::S16 || t == T::S32 || t == T::S64; }
inline bool is_float(T t) { return t == T::F16 || t == T::F16x2 || t == T::BF16 || t == T::BF16x2 || t == T::F32 || t == T::F64; }
inline bool is_int(T t) { return !is_float(t) && t != T::Pred && t != T::None; }

enum class Space : uint8_t { Generic, Global, Shared, Local, Param, Const };
const char* name(Space s);

// Rounding: the four IEEE directions, and the same four to an integral value (cvt .rni/.rzi/...).
enum Rnd : uint8_t { kRN, kRZ, kRM, kRP, kNoRnd = 0xff };
inline uint8_t rn_default(uint8_t r) { return r == kNoRnd ? static_cast<uint8_t>(kRN) : r; }
enum Cmp : uint8_t { kEq, kNe, kLt, kLe, kGt, kGe, kLo, kLs, kHi, kHs, kEqu, kNeu, kLtu, kLeu, kGtu, kGeu, kNum, kNan };
enum BoolOp : uint8_t { kNoBool, kAnd, kOr, kXor };
enum Flag : uint16_t {
  kFtz = 1,
  kSat = 2,
  kIntRnd = 4,
  kNaN = 8,
  kRelu = 16,
  kCC = 32,
  kCarryIn = 64,
  kShiftAmt = 128,
  kApprox = 256,
  kXorSign = 512
};

// What an instruction is; `fn` holds its implementation for Flow::Alu.
enum class Opc : uint8_t {
  Add,
  Sub,
  Mul,
  MulHi,
  MulWide,
  Mad,
  MadHi,
  MadWide,
  Mul24Lo,
  Mul24Hi,
  Mad24Lo,
  Mad24Hi,
  Sad,
  Div,
  Rem,
  Abs,
  Neg,
  Min,
  Max,
  Popc,
  Clz,
  Bfind,
  Brev,
  Bfe,
  Bfi,
  Prmt,
  Bmsk,
  Szext,
  Dp4a,
  Dp2aLo,
  Dp2aHi,
  And,
  Or,
  Xor,
  Not,
  Cnot,
  Lop3,
  Shl,
  Shr,
  ShfL,
  ShfR,
  Fma,
  Rcp,
  Sqrt,
  Rsqrt,
  Sin,
  Cos,
  Lg2,
  Ex2,
  Tanh,
  Copysign,
  Testp,
  Setp,
  Set,
  Selp,
  Slct,
  Mov,
  MovPack,
  MovUnpack,
  Cvt,
  CvtPack,
  Cvta,
  CvtaTo,
  Ld,
  St,
  Atom,
  Red,
  Shfl,
  Vote,
  Activemask,
  Redux,
  Mma,
  Clock,
  Clock64,
  GlobalTimer,
  Bra,
  Exit,
  Bar,
  BarArrive,
  Nop,
  Trap,
};

// Sub-modes kept in Inst::cmp, in the order the parser's name tables list them.
enum AtomOp : uint8_t { kAtomAdd, kAtomMin, kAtomMax, kAtomAnd, kAtomOr, kAtomXor, kAtomExch, kAtomCas, kAtomInc, kAtomDec };
inline constexpr const char* kAtomNames[] = {"add", "min", "max", "and", "or", "xor", "exch", "cas", "inc", "dec"};
inline constexpr const char* kShflModes[] = {"up", "down", "bfly", "idx"};
inline constexpr const char* kVoteModes[] = {"all", "any", "uni", "ballot"};
inline constexpr const char* kReduxOps[] = {"add", "min", "max", "and", "or", "xor"};
inline constexpr const char* kPrmtModes[] = {"", "f4e", "b4e", "rc8", "ecl", "ecr", "rc16"};
inline constexpr const char* kTestpClasses[] = {"finite", "infinite", "number", "notanumber", "normal", "subnormal"};

enum class Flow : uint8_t { Alu, Branch, Exit, Barrier, Arrive, Trap };

struct Warp;
struct Inst;
using ExecFn = void (*)(Warp&, const Inst&, uint32_t mask);

inline constexpr uint32_t kNone = 0xffffffffu;

struct Inst {
  ExecFn fn = nullptr;
  Opc op = Opc::Nop;
  Flow flow = Flow::Alu;
  T type = T::None, type2 = T::None;  // the instruction type; a second one (cvt's source, setp's, ...)
  uint8_t rnd = kNoRnd;
  uint8_t cmp = 0;  // Cmp for setp/set; a sub-mode for others (atomic op, shfl mode, vote mode, prmt mode, testp class)
  uint8_t bop = kNoBool;
  uint16_t flags = 0;  // Flag bits
  uint8_t vec = 1;     // elements of a vector ld/st
  Space space = Space::Generic;
  uint8_t size = 0;        // bytes per element of a memory access
  uint8_t addr_bits = 64;  // width of the address register
  bool guard_neg = false;
  bool c_neg = false;                            // setp/selp/vote: the predicate source is negated (!%p)
  uint32_t guard = kNone;                        // predicate index, or kNone
  uint32_t d[4] = {kNone, kNone, kNone, kNone};  // destination slots (predicate indices for predicate results)
  uint32_t s[4] = {kNone, kNone, kNone, kNone};  // source slots
  uint32_t sp = kNone;                           // a predicate source (setp's c, selp's c, vote's a, ...)
  uint32_t base = kNone;                         // the address register of a memory access, or kNone ([imm], [var])
  int64_t offset = 0;                            // address offset, or an immediate sub-operand
  uint32_t target = 0;                           // branch target (instruction index)
  std::vector<uint32_t> frag;                    // mma: the slots of D (4), A (4), B (2), C (4)
  int line = 0;
};

// Special registers (%tid.x, ...) the entry reads; the executor fills their slots per block.
enum class Sreg : uint8_t {
  TidX,
  TidY,
  TidZ,
  NtidX,
  NtidY,
  NtidZ,
  CtaidX,
  CtaidY,
  CtaidZ,
  NctaidX,
  NctaidY,
  NctaidZ,
  Laneid,
  Warpid,
  Nwarpid,
  Smid,
  Nsmid,
  Gridid,
  LanemaskEq,
  LanemaskLe,
  LanemaskLt,
  LanemaskGe,
  LanemaskGt,
  TotalSmem,
  DynamicSmem,
  ClusterCtaidX,
  ClusterCtaidY,
  ClusterCtaidZ,
  ClusterNctaidX,
  ClusterNctaidY,
  ClusterNctaidZ,
  ClusteridX,
  ClusteridY,
  ClusteridZ,
  NclusteridX,
  NclusteridY,
  NclusteridZ,
  ClusterCtarank,
  ClusterNctarank,
};

struct Code {
  std::string name;
  std::vector<Inst> insts;
  std::vector<std::string> text;                         // each instruction as written (for faults)
  uint32_t slots = 0;                                    // register slots: registers, then specials, then constants
  uint32_t reg_slots = 0;                                // slots [0, reg_slots) are zeroed per block
  std::vector<std::pair<uint32_t, Sreg>> specials;       // slot, register
  std::vector<std::pair<uint32_t, uint64_t>> constants;  // slot, value
  uint32_t preds = 0;                                    // predicate registers (incl. the constant ones)
  std::vector<std::pair<uint32_t, bool>> const_preds;
  uint32_t cc_slot = kNone;    // the carry flag of add.cc/addc, when used
  uint32_t sink_slot = kNone;  // where `_` results go
  // Slots holding addresses in the module's data image: PtxLaunch::data_address + offset.
  std::vector<std::pair<uint32_t, uint64_t>> data_constants;
};

// An initial value in the module's data image: `size` bytes of `value` at `offset`, or (var >= 0) the
// address of variable `var` plus `value`, whole or (byte >= 0) only its byte number `byte`.
struct DataInit {
  uint64_t offset = 0, value = 0;
  uint8_t size = 0;
  int8_t byte = -1;
  int32_t var = -1;
};

}  // namespace ugpu::emu::nv::detail

namespace ugpu::emu::nv {

struct PtxModule {
  std::vector<PtxEntry> entries;
  std::vector<detail::Code> code;  // parallel to entries
  PtxData data;
  std::vector<detail::DataInit> data_init;
};

}  // namespace ugpu::emu::nv

namespace ugpu::emu::nv::detail {

std::shared_ptr<PtxModule> parse_module(std::string_view text);

// Chooses the implementation of an ALU instruction from its opcode, types and modifiers; returns
// an empty string on success, else why the combination is not supported.
std::string bind_alu(Inst& in);
// The same for memory and warp-level instructions (ld, st, atom, red, cvta, shfl, vote, ...).
std::string bind_mem(Inst& in);

}  // namespace ugpu::emu::nv::detail
