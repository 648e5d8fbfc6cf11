// The pre-decoded form of one RDNA3 instruction and the semantic table it points into. Internal to
// emu/amd: decode.cpp fills an Inst once per code address; the op handlers (ops_*.cpp) run it.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace ugpu::emu::amd {

struct Wave;
struct Inst;

// How an operand's bits are read: its width, and whether float inline constants, abs/neg and
// denormal modes apply. Mask operands are lane masks in an SGPR (pair), one bit per lane.
enum class Ty : uint8_t { None, B16, F16, B32, F32, B64, F64, Mask };
inline int bits(Ty t) { return t == Ty::B16 || t == Ty::F16 ? 16 : t == Ty::B64 || t == Ty::F64 ? 64 : t == Ty::None ? 0 : 32; }
inline bool is_float(Ty t) { return t == Ty::F16 || t == Ty::F32 || t == Ty::F64; }

enum class Enc : uint8_t { SOP1, SOP2, SOPC, SOPK, SOPP, SMEM, VOP1, VOP2, VOPC, VOP3, VOP3SD, VOP3P, VOPD, DS, FLAT, GLOBAL, SCRATCH };
const char* name(Enc e);

using Handler = void (*)(Wave&, const Inst&);
// Vector ops compute into lane arrays first so VOPD can read both halves' sources before writing.
using ValuCompute = void (*)(Wave&, const Inst&, uint64_t* d, uint32_t& mask_out);

// What an operation does and how its operands are typed. Flags say where the decoder finds operands
// that the encoding does not spell out.
struct OpDef {
  std::string_view name;
  Handler run = nullptr;
  ValuCompute compute = nullptr;  // VALU ops only
  Ty dst = Ty::None, src[3] = {Ty::None, Ty::None, Ty::None};
  uint16_t flags = 0;
  uint8_t mem_bytes = 0;  // memory ops: bytes per lane (or per SMEM load)
};
namespace op_flag {
inline constexpr uint16_t kAccumulate = 1;    // src2 is vdst (v_fmac_*)
inline constexpr uint16_t kMaskFromVcc = 2;   // in the 32-bit encodings, the Mask source is VCC
inline constexpr uint16_t kCarryOut = 4;      // also writes a lane mask (VCC in VOP2, sdst in VOP3SD)
inline constexpr uint16_t kCompare = 8;       // result is a lane mask: VCC in VOPC, sdst in VOP3
inline constexpr uint16_t kCompareExec = 16;  // v_cmpx: the result goes to EXEC
inline constexpr uint16_t kLiteralSrc1 = 32;  // v_fmamk: S1 is the literal K, S2 is vsrc1
inline constexpr uint16_t kLiteralSrc2 = 64;  // v_fmaak: S2 is the literal K
inline constexpr uint16_t kScalarDst = 128;   // VALU op whose vdst names an SGPR (v_readfirstlane, v_readlane)
inline constexpr uint16_t kStore = 256;       // memory op writes memory
inline constexpr uint16_t kLoad = 512;        // memory op returns data
inline constexpr uint16_t kSigned = 1024;     // sub-dword load: sign-extend
inline constexpr uint16_t kD16 = 2048;        // sub-dword load into the low 16 bits, keeping the high ones
inline constexpr uint16_t kD16Hi = 4096;      // ... into the high 16 bits, keeping the low ones
inline constexpr uint16_t kVccIn = 8192;      // the lane's VCC bit arrives as the lane function's flag (v_div_fmas)
inline constexpr uint16_t kBitMods = 16384;   // abs/neg apply to the sign bit of untyped bits (v_mov, v_cndmask)
}  // namespace op_flag

// A source operand after decoding: where its bits come from.
enum class Src : uint8_t { None, Sgpr, Vgpr, Const, Scc, VccZ, ExecZ };

struct Inst {
  Handler run = nullptr;
  const OpDef* op = nullptr;
  Enc enc = Enc::SOP1;
  uint8_t size = 4;  // bytes, literal included
  // Operands. Register numbers are raw: SGPR codes 0..127 (106 VCC, 124 null, 125 M0, 126 EXEC),
  // VGPRs 0..255.
  Src src_kind[3] = {Src::None, Src::None, Src::None};
  uint16_t src_reg[3] = {0, 0, 0};
  uint64_t src_const[3] = {0, 0, 0};       // Const sources, already in the operand's type
  bool src_hi[3] = {false, false, false};  // 16-bit operand taken from bits [31:16]
  uint16_t dst = 0;                        // VGPR (VALU, loads), SGPR (SALU, SMEM)
  uint16_t sdst = 0;                       // VOP3SD / VOPC-in-VOP3 scalar destination
  bool dst_hi = false;
  uint8_t abs = 0, neg = 0, neg_hi = 0, opsel = 0, opsel_hi = 0, omod = 0;
  bool clamp = false;
  int32_t imm = 0;                                     // SOPK/SOPP simm16, memory offsets
  int32_t offset1 = 0;                                 // DS second offset
  uint16_t addr = 0, data0 = 0, data1 = 0, saddr = 0;  // memory operands (VGPRs; saddr SGPR or 124=off)
  bool sve = false;                                    // scratch: VGPR address enabled
  bool glc = false;
  const Inst* dual = nullptr;   // VOPD: the Y half (this Inst is the X half)
  uint32_t raw[3] = {0, 0, 0};  // the encoding, literal in raw[2]
  std::string problem;          // why an instruction is not executable (unknown encoding, not implemented)
};

// Decodes the instruction at `words` (up to 3 dwords available: `count`); unknown opcodes decode to
// an Inst whose handler raises an Unimplemented fault that names the mnemonic (or the raw encoding).
void decode(const uint32_t* words, int count, Inst& out, Inst& dual_out);
// The instruction as text: mnemonic and operands in LLVM's spelling (registers, constants, offsets).
std::string format(const Inst& in);
// The mnemonic the tables give for an encoding and opcode, or "" when there is none.
std::string_view mnemonic(const Inst& in);

const OpDef* find_op(std::string_view mnemonic);

}  // namespace ugpu::emu::amd
