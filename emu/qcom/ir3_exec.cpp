// The ir3 shader executor (ir3_exec.h). In this file, in order: numbers (f16 and rounding); the
// dispatch as the registers describe it; the program, fetched and decoded once per dispatch; the
// synchronisation rules, in one place; a workgroup (fibers, registers, min-PC scheduling, barriers);
// the instructions by category; the executor (workgroups on host threads).
//
// Semantics not settled by what we know of the hardware are assumptions, each marked "Assumed" where
// it is made.
#include "emu/qcom/ir3_exec.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstring>
#include <exception>
#include <limits>
#include <optional>
#include <thread>
#include <vector>

#include "common/hex.h"
#include "hw/qcom/a6xx_regs.h"
#include "hw/qcom/ir3.h"

namespace ugpu::emu::qcom {
namespace {

namespace ir3 = hw::qcom::ir3;
namespace a6 = hw::qcom::a6xx;
using ir3::Inst;
using ir3::Op;
using ir3::Src;
using ir3::SyncClass;
using ir3::Type;

// ---------------------------------------------------------------------------------------------
// Numbers

// Rounding modes, numbered as cat1's ROUND field numbers them.
enum Round : uint8_t { kRtz = 0, kRtne = 1, kUp = 2, kDown = 3 };

float f32(uint32_t b) { return std::bit_cast<float>(b); }
uint32_t bits(float f) { return std::bit_cast<uint32_t>(f); }

double from_half(uint32_t h) {
  int e = h >> 10 & 0x1f, m = h & 0x3ff;
  double v = e == 0 ? std::ldexp(double(m), -24) : e == 31 ? (m ? NAN : INFINITY) : std::ldexp(double(m | 0x400), e - 25);
  return h & 0x8000 ? -v : v;
}

// `v` rounded to f16 in `mode` (denormals kept; NaN becomes the quiet NaN 0x7e00 with v's sign).
uint32_t to_half(double v, uint8_t mode = kRtne) {
  uint32_t sign = std::signbit(v) ? 0x8000 : 0;
  if (std::isnan(v)) return sign | 0x7e00;
  double a = std::fabs(v);
  auto overflow = [&] {
    bool inf = mode == kRtne || (mode == kUp && !sign) || (mode == kDown && sign);
    return sign | (inf ? 0x7c00u : 0x7bffu);
  };
  if (std::isinf(a)) return sign | 0x7c00;
  if (a == 0) return sign;
  int e;
  std::frexp(a, &e);
  int lead = e - 1;  // a = 1.f x 2^lead
  if (lead > 15) return overflow();
  int ulp = lead >= -14 ? lead - 10 : -24;  // 2^ulp is the last place an f16 of this size holds
  double scaled = std::ldexp(a, -ulp), whole = std::floor(scaled), frac = scaled - whole;
  bool up = mode == kRtne   ? frac > 0.5 || (frac == 0.5 && std::fmod(whole, 2.0) == 1.0)
            : mode == kUp   ? !sign && frac > 0
            : mode == kDown ? sign && frac > 0
                            : false;
  uint32_t q = uint32_t(whole) + up;
  uint32_t h = lead >= -14 ? (uint32_t(lead + 14) << 10) + q : q;  // a carry out of the fraction moves the exponent up
  return h >= 0x7c00 ? overflow() : sign | h;
}

// `v` rounded to f32 in `mode`.
float to_f32(double v, uint8_t mode) {
  float r = float(v);  // to nearest, ties to even
  if (mode == kRtne || std::isnan(v) || double(r) == v) return r;
  bool past = mode == kRtz ? std::fabs(double(r)) > std::fabs(v) : mode == kUp ? double(r) < v : double(r) > v;
  if (!past) return r;
  return std::nextafter(r, mode == kRtz ? 0.0f : mode == kUp ? INFINITY : -INFINITY);
}

// A float converted to an integer in [lo, hi]: rounded in `mode`, saturated at the ends, NaN as 0.
// Assumed: out-of-range values saturate and NaN gives 0 (the hardware's choice is not documented).
int64_t to_int(double v, uint8_t mode, int64_t lo, int64_t hi) {
  if (std::isnan(v)) return 0;
  v = mode == kRtne ? std::nearbyint(v) : mode == kUp ? std::ceil(v) : mode == kDown ? std::floor(v) : std::trunc(v);
  return v <= double(lo) ? lo : v >= double(hi) ? hi : int64_t(v);
}

bool is_float(Type t) { return t == Type::F16 || t == Type::F32; }
uint32_t type_mask(Type t) { return t == Type::U8 || t == Type::U8_32 ? 0xff : ir3::is_half(t) ? 0xffff : 0xffffffff; }
unsigned type_bytes(Type t) { return t == Type::U8 || t == Type::U8_32 ? 1 : ir3::is_half(t) ? 2 : 4; }
int64_t int_value(uint32_t x, Type t) {
  switch (t) {
    case Type::S16: return int16_t(x);
    case Type::S32: return int32_t(x);
    case Type::U16: return x & 0xffff;
    case Type::U8:
    case Type::U8_32: return x & 0xff;
    default: return x;
  }
}

// cat1 mov/cov: `x` (the source's bits) as type `st`, converted to `dt`. The same type copies the bits.
// Conversions to a narrower float (f32->f16, integer->f16 or ->f32) round as ROUND says (0 = toward
// zero, as Mesa relies on for f2f16_rtz; 1 = to nearest even); float->integer rounds likewise (0 =
// truncation) and saturates; integer->integer sign- or zero-extends by the source type and keeps the
// destination's width. Mesa says u8->u32 zero-extension does not work with cov on hardware; here it does.
uint32_t convert(uint32_t x, Type st, Type dt, uint8_t round) {
  if (st == dt) return x & type_mask(dt);
  if (is_float(st)) {
    double v = st == Type::F32 ? f32(x) : from_half(x);
    if (dt == Type::F32) return bits(float(v));  // f16 -> f32 is exact
    if (dt == Type::F16) return to_half(v, round);
    int64_t lo = dt == Type::S16 ? INT16_MIN : dt == Type::S32 ? INT32_MIN : 0;
    int64_t hi = dt == Type::S16 ? INT16_MAX : dt == Type::S32 ? INT32_MAX : int64_t{type_mask(dt)};
    return uint32_t(to_int(v, round, lo, hi)) & type_mask(dt);
  }
  int64_t v = int_value(x, st);
  if (dt == Type::F32) return bits(to_f32(double(v), round));
  if (dt == Type::F16) return to_half(double(v), round);
  return uint32_t(v) & type_mask(dt);
}

bool compare(ir3::Cond c, auto a, auto b) {
  switch (c) {
    case ir3::Cond::LT: return a < b;
    case ir3::Cond::LE: return a <= b;
    case ir3::Cond::GT: return a > b;
    case ir3::Cond::GE: return a >= b;
    case ir3::Cond::EQ: return a == b;
    case ir3::Cond::NE: return a != b;
  }
  return false;
}

uint32_t reverse(uint32_t x, unsigned width) {
  uint32_t r = 0;
  for (unsigned k = 0; k < width; ++k) r |= (x >> k & 1) << (width - 1 - k);
  return r;
}

// ---------------------------------------------------------------------------------------------
// The dispatch, as the registers describe it

constexpr unsigned kGprs = 192;                  // r0..r47 (regid 0..191), per fiber
constexpr unsigned kRegs = 224;                  // then the shared r48..r55 (regid 192..223)
constexpr unsigned kFile = kRegs + 8;            // then a0.x, a1.x, two unused, p0.x..p0.w (regid 0xf4..0xfb)
constexpr uint32_t kMaxInstructions = 1u << 20;  // 8 MiB of code
constexpr unsigned kMaxFibers = 1024;

struct Config {
  uint64_t code = 0;
  uint32_t length = 0;     // instructions: SP_CS_INSTRLEN x 16
  unsigned footprint = 0;  // full vec4 registers the shader may use: r0..r(footprint - 1)
  unsigned wave = 64;
  std::array<uint32_t, 3> local{};
  unsigned fibers = 0;
  unsigned local_id = ir3::kNoReg, wg_id = ir3::kNoReg, linear_id = ir3::kNoReg;
  unsigned constlen = 0;   // vec4 constants the shader may read
  uint32_t const_ids = 0;  // the same in components, within the constant file the CP has
  uint32_t shared_bytes = 0;
  std::array<uint32_t, 3> groups{};
  uint64_t workgroups = 0;
};

[[noreturn]] void bad_dispatch(const std::string& what) { throw CpFault("compute dispatch: " + what); }

Config configure(const ComputeDispatch& d) {
  auto reg = [&](const hw::qcom::Register& r, unsigned k = 0) { return d.reg(r.offset + k); };
  Config c;
  uint32_t ctrl = reg(a6::SP_CS_CTRL_REG0);
  namespace sp = a6::SP_CS_CTRL_REG0_fields;
  if (!sp::MERGEDREGS.get(ctrl))
    bad_dispatch("SP_CS_CTRL_REG0.MERGEDREGS is 0: only merged registers are modelled (half registers as halves of full ones, as a6xx runs them)");
  c.footprint = sp::FULLREGFOOTPRINT.get(ctrl);
  if (c.footprint > 48)
    bad_dispatch("SP_CS_CTRL_REG0.FULLREGFOOTPRINT " + std::to_string(c.footprint) + " is more than the 48 registers a fiber has");
  c.wave = sp::THREADSIZE.get(ctrl) ? 128 : 64;

  uint32_t nd = reg(a6::HLSQ_CS_NDRANGE_0);
  namespace ndf = a6::HLSQ_CS_NDRANGE_0_fields;
  c.local = {ndf::LOCALSIZEX.get(nd) + 1, ndf::LOCALSIZEY.get(nd) + 1, ndf::LOCALSIZEZ.get(nd) + 1};
  uint64_t fibers = uint64_t{c.local[0]} * c.local[1] * c.local[2];
  if (fibers > kMaxFibers)
    bad_dispatch("a workgroup of " + std::to_string(c.local[0]) + "x" + std::to_string(c.local[1]) + "x" + std::to_string(c.local[2]) +
                 " fibers (HLSQ_CS_NDRANGE_0) is more than the " + std::to_string(kMaxFibers) + " an a6xx workgroup holds");
  c.fibers = unsigned(fibers);

  uint32_t cntl0 = reg(a6::HLSQ_CS_CNTL_0), cntl1 = reg(a6::HLSQ_CS_CNTL_1);
  c.wg_id = a6::HLSQ_CS_CNTL_0_fields::WGIDCONSTID.get(cntl0);
  c.local_id = a6::HLSQ_CS_CNTL_0_fields::LOCALIDREGID.get(cntl0);
  c.linear_id = a6::HLSQ_CS_CNTL_1_fields::LINEARLOCALIDREGID.get(cntl1);
  auto check_id = [](unsigned regid, unsigned n, const char* field) {
    if (regid != ir3::kNoReg && regid + n > kRegs)
      bad_dispatch(std::string(field) + " " + hex(regid) + " does not name " + (n > 1 ? "three registers" : "a register") + " of r0..r55");
  };
  check_id(c.wg_id, 3, "HLSQ_CS_CNTL_0.WGIDCONSTID");
  check_id(c.local_id, 3, "HLSQ_CS_CNTL_0.LOCALIDREGID");
  check_id(c.linear_id, 1, "HLSQ_CS_CNTL_1.LINEARLOCALIDREGID");

  c.constlen = a6::HLSQ_CS_CNTL_fields::CONSTLEN.get(reg(a6::HLSQ_CS_CNTL)) * 4;
  c.const_ids = uint32_t(std::min<uint64_t>(uint64_t{c.constlen} * 4, d.consts.size()));
  uint32_t shared = a6::SP_CS_UNKNOWN_A9B1_fields::SHARED_SIZE.get(reg(a6::SP_CS_UNKNOWN_A9B1));
  c.shared_bytes = shared ? (shared + 1) * 1024 : 32 * 1024;

  c.code = reg(a6::SP_CS_OBJ_START) | uint64_t{reg(a6::SP_CS_OBJ_START, 1)} << 32;
  uint64_t length = uint64_t{a6::SP_CS_INSTRLEN_fields::VALUE.get(reg(a6::SP_CS_INSTRLEN))} * 16;
  if (length > kMaxInstructions)
    bad_dispatch("SP_CS_INSTRLEN " + std::to_string(length / 16) + " (x 16 instructions) is more than the emulator takes (" +
                 std::to_string(kMaxInstructions / 16) + ")");
  c.length = uint32_t(length);

  c.groups = d.groups;
  uint64_t xy = uint64_t{c.groups[0]} * c.groups[1];
  if (c.groups[2] && xy > std::numeric_limits<uint64_t>::max() / c.groups[2]) bad_dispatch("too many workgroups");
  c.workgroups = xy * c.groups[2];
  return c;
}

// ---------------------------------------------------------------------------------------------
// The program: every instruction of SP_CS_INSTRLEN fetched and decoded once per dispatch. A word that
// cannot be fetched or decoded faults only if a fiber reaches it (padding after `end` may be anything).

struct Code {
  Inst in;
  uint64_t word = 0;
  std::string why;  // not empty: this instruction cannot run, and why
  uint8_t cat = 0;
  SyncClass cls = SyncClass::None;  // how a reader of its result waits
  uint8_t war = 0;                  // as a late reader: 1 = a later write of its sources needs (ss); 2 = (ss) or (sy)
  uint8_t advance = 1;              // cycles it takes in the delay count
  bool mad = false;                 // mad.* / madsh.*: their third source needs fewer delay slots
  bool half = false;                // cat2/cat3/cat4: the sources are half registers
};

bool is_flow(Op op) { return op == Op::BR || op == Op::BRAO || op == Op::BRAA || op == Op::BANY || op == Op::BALL || op == Op::JUMP; }
bool is_store(Op op) { return op == Op::STG || op == Op::STG_A || op == Op::STL || op == Op::STLW || op == Op::STP; }
bool is_atomic(Op op) { return op >= Op::ATOMIC_ADD && op <= Op::ATOMIC_XOR; }

// ---------------------------------------------------------------------------------------------
// The synchronisation rules the compiler must keep, all of them here: Mesa's model of the a6xx
// pipeline (ir3_delay.c, ir3_legalize.c) as the ir3 facts restate it in §10, and as codegen/ir3's
// legalization keeps it (docs/qcom.md).
//
// * Cycles: every instruction takes 1 + (rptN) + (nopN) cycles, a (rptN)nop N + 1; branches and jumps
//   take none (Mesa does not count them as filler). Repeat i of an instruction reads and writes at
//   its cycle + i.
// * An ALU result (cat1/2/3) is ready for an ALU source 3 delay slots (cycles strictly between the
//   write and the read) after it is written; for the third source of mad.*/madsh.* 1; when the write
//   and the read differ in size (a half register and its full one) 3 more. A non-ALU reader (a branch
//   reading p0, cat4, cat6 address/offset/value registers) needs 6, and so does any reader of a0/a1
//   or of p0 written by an ALU instruction.
// * A (ss)-class result (cat4 SFU, ldl/ldlw, local atomics, and ALU writes of the shared registers
//   r48..r55) may be read or overwritten only after an instruction with (ss); a (sy)-class result
//   (ldg, ldp, global atomics) only after (sy). A flag clears every result of its class.
// * cat4 and cat6 read their sources late: a later write of such a source needs (ss) when the reader
//   was an SFU, an (ss)-class load or a store, and (ss) or (sy) otherwise.
// * The instruction after a cat7 (bar, fence) carries (ss) and (sy).
uint8_t advance(const Inst& in) { return is_flow(in.op) ? 0 : uint8_t(1 + in.rpt + in.nop); }
uint8_t war_kind(const Inst& in, SyncClass cls) {
  uint8_t cat = ir3::info(in.op).cat;
  if (cat == 4 || cls == SyncClass::Ss || (cat == 6 && is_store(in.op))) return 1;
  return cat == 6 ? 2 : 0;
}
// Delay slots a read needs after an ALU write of the same register.
int delay_needed(bool reader_alu, bool third_of_mad, bool sizes_differ, bool special) {
  if (special || !reader_alu) return 6;
  return (third_of_mad ? 1 : 3) + (sizes_differ ? 3 : 0);
}
// The wait class of a result written to register word `word` (r0..r55 by full regid).
SyncClass producer_class(const Code& c, unsigned word) {
  if (c.cls == SyncClass::Alu && word >= kGprs && word < kRegs) return SyncClass::Ss;  // a shared register
  return c.cls;
}

std::vector<Code> load_program(const Config& cfg, GpuMemory& memory) {
  std::vector<Code> code(cfg.length);
  std::optional<Memory::Span> span;
  for (uint32_t pc = 0; pc < cfg.length; ++pc) {
    Code& c = code[pc];
    uint64_t a = cfg.code + uint64_t{pc} * 8;
    if (!span || a < span->device || a - span->device + 8 > span->size) span = memory.translate(a, 8, Access::Execute);
    if (!span) {
      c.why = "page fault: instruction fetch of 8 bytes at " + hex(a) + " (SP_CS_OBJ_START " + hex(cfg.code) + ")";
      continue;
    }
    std::memcpy(&c.word, span->host + (a - span->device), 8);
    std::string why;
    auto in = ir3::decode(c.word, &why);
    if (!in) {
      c.why = "the instruction word " + hex(c.word) + " does not decode (" + why + ")";
      continue;
    }
    c.in = *in;
    c.cat = ir3::info(in->op).cat;
    c.cls = ir3::result_class(*in);
    c.war = war_kind(*in, c.cls);
    c.advance = advance(*in);
    c.mad = in->op >= Op::MAD_U16 && in->op <= Op::MAD_F32;
    if (c.cat == 3) c.half = in->src[1].half;
    else if (c.cat == 2 && in->src[0].kind == Src::Kind::Flut && ir3::info(in->op).srcs == 2) c.half = in->src[1].half;
    else c.half = in->src[0].half;
  }
  return code;
}

// ---------------------------------------------------------------------------------------------
// Instruction semantics on values (one fiber, one repeat). Sources arrive as their bits (a half
// register or half constant in the low 16); results leave in the destination's width.

enum class Mods { Float, Int, Bits, None };  // what a source's (neg)/(abs) mean for the op
Mods mods(Op op) {
  if (op <= Op::TRUNC_F) return Mods::Float;
  if (op == Op::ABSNEG_S) return Mods::Int;
  switch (op) {
    case Op::AND_B:
    case Op::OR_B:
    case Op::NOT_B:
    case Op::XOR_B:
    case Op::BFREV_B:
    case Op::CLZ_B:
    case Op::SHL_B:
    case Op::SHR_B:
    case Op::ASHR_B:
    case Op::MGEN_B:
    case Op::GETBIT_B:
    case Op::CBITS_B: return Mods::Bits;
    default: return Mods::None;  // add.u/add.s/sub/cmps.u/s/min/max/mul/clz.s take none: the bits are ignored
  }
}

struct Fmt {  // the precision of an instruction's sources and result
  bool half, dst_half, sat;
  double in(uint32_t x, const Src& s) const {
    double v = half ? from_half(x) : double(f32(x));
    if (s.abs) v = std::fabs(v);
    if (s.neg) v = -v;
    return v;
  }
  // (sat) clamps to [0, 1] (NaN to 0); f16 results round to nearest even.
  uint32_t out(double r) const {
    if (sat) r = r > 0 ? (r < 1 ? r : 1.0) : 0.0;
    return dst_half ? to_half(r) : bits(float(r));
  }
};

uint32_t cat2_value(const Inst& in, uint32_t a, uint32_t b, bool half) {
  const Fmt fmt{half, in.dst_half, in.sat};
  const unsigned width = half ? 16 : 32;
  const uint32_t mask = half ? 0xffff : 0xffffffff, dmask = in.dst_half ? 0xffff : 0xffffffff;
  Mods m = mods(in.op);
  if (m == Mods::Bits) {
    if (in.src[0].neg) a = ~a & mask;  // (neg) on a bitwise op is a bitwise not of the source
    if (in.src[1].neg) b = ~b & mask;
  }
  auto s = [&](uint32_t x) -> int64_t { return half ? int64_t(int16_t(x)) : int64_t(int32_t(x)); };
  auto u = [&](uint32_t x) -> uint64_t { return x & mask; };
  const int64_t smin = half ? INT16_MIN : INT32_MIN, smax = half ? INT16_MAX : INT32_MAX;
  // An integer result: wrapped to the sources' width, then (when the destination is wider) extended.
  auto iout = [&](int64_t r, bool sign) -> uint32_t {
    uint32_t v = uint32_t(r) & mask;
    if (half && !in.dst_half && sign) v = uint32_t(int32_t(int16_t(v)));
    return v & dmask;
  };
  auto cmp_out = [&](bool t, bool vec) -> uint32_t { return t ? (vec ? dmask : 1) : 0; };
  if (m == Mods::Float) {
    double x = fmt.in(a, in.src[0]), y = fmt.in(b, in.src[1]);
    switch (in.op) {
      // f32 arithmetic in f32 (one rounding); f16 in double, rounded once to f16 by `out`.
      case Op::ADD_F: return fmt.out(half ? x + y : double(float(x) + float(y)));
      case Op::MUL_F: return fmt.out(half ? x * y : double(float(x) * float(y)));
      case Op::MIN_F: return fmt.out(std::fmin(x, y));  // Assumed: IEEE minNum/maxNum (a NaN loses to a number)
      case Op::MAX_F: return fmt.out(std::fmax(x, y));
      case Op::SIGN_F: return fmt.out(x > 0 ? 1.0 : x < 0 ? -1.0 : x);  // +-0 and NaN pass through
      case Op::ABSNEG_F: return fmt.out(x);
      case Op::FLOOR_F: return fmt.out(std::floor(x));
      case Op::CEIL_F: return fmt.out(std::ceil(x));
      case Op::RNDNE_F: return fmt.out(std::nearbyint(x));  // the host's default mode: to nearest, ties to even
      case Op::RNDAZ_F: return fmt.out(std::round(x));      // to nearest, ties away from zero
      case Op::TRUNC_F: return fmt.out(std::trunc(x));
      // Compares are ordered except ne (true for NaN). cmps gives 1/0. Assumed: cmpv (which Mesa never
      // emits) gives a mask of all ones / 0.
      case Op::CMPS_F: return cmp_out(compare(in.cond, x, y), false);
      case Op::CMPV_F: return cmp_out(compare(in.cond, x, y), true);
      default: break;
    }
  }
  switch (in.op) {
    case Op::ADD_U: {  // (sat) on add/sub saturates at the type's range (Mesa's uadd_sat/iadd_sat/usub_sat)
      uint64_t r = u(a) + u(b);
      return iout(int64_t(in.sat && r > mask ? mask : r), false);
    }
    case Op::ADD_S: {
      int64_t r = s(a) + s(b);
      return iout(in.sat ? std::clamp(r, smin, smax) : r, true);
    }
    case Op::SUB_U: {
      int64_t r = int64_t(u(a)) - int64_t(u(b));
      return iout(in.sat && r < 0 ? 0 : r, false);
    }
    case Op::SUB_S: {
      int64_t r = s(a) - s(b);
      return iout(in.sat ? std::clamp(r, smin, smax) : r, true);
    }
    case Op::CMPS_U: return cmp_out(compare(in.cond, u(a), u(b)), false);
    case Op::CMPS_S: return cmp_out(compare(in.cond, s(a), s(b)), false);
    case Op::CMPV_U: return cmp_out(compare(in.cond, u(a), u(b)), true);
    case Op::CMPV_S: return cmp_out(compare(in.cond, s(a), s(b)), true);
    case Op::MIN_U: return iout(int64_t(std::min(u(a), u(b))), false);
    case Op::MAX_U: return iout(int64_t(std::max(u(a), u(b))), false);
    case Op::MIN_S: return iout(std::min(s(a), s(b)), true);
    case Op::MAX_S: return iout(std::max(s(a), s(b)), true);
    case Op::ABSNEG_S: {
      int64_t v = s(a);
      if (in.src[0].abs) v = v < 0 ? -v : v;
      if (in.src[0].neg) v = -v;
      return iout(v, true);
    }
    case Op::AND_B: return iout(a & b, false);
    case Op::OR_B: return iout(a | b, false);
    case Op::XOR_B: return iout(a ^ b, false);
    case Op::NOT_B: return iout(~a, false);
    case Op::MUL_U24: return iout(int64_t(uint64_t(a & 0xffffff) * (b & 0xffffff)), false);
    case Op::MUL_S24: {
      int64_t x = int32_t(a << 8) >> 8, y = int32_t(b << 8) >> 8;
      return iout(x * y, true);
    }
    case Op::MULL_U: return iout(int64_t(uint64_t(a & 0xffff) * (b & 0xffff)), false);
    case Op::BFREV_B: return iout(reverse(a, width), false);
    case Op::CLZ_B: {  // leading zeros in the sources' width; 0 gives the width
      uint32_t x = a & mask;
      return iout(x ? std::countl_zero(x) - (32 - int(width)) : int(width), false);
    }
    case Op::CLZ_S: {  // leading bits equal to the sign bit (Mesa's ifind_msb = width - 1 - clz.s)
      int64_t v = s(a);
      uint32_t x = uint32_t(v < 0 ? ~v : v) & mask;
      return iout(x ? std::countl_zero(x) - (32 - int(width)) : int(width), false);
    }
    // Assumed: shift amounts use the low log2(width) bits (5 for 32-bit sources, 4 for 16-bit), as NIR
    // masks them; whether the hardware masks is not known.
    case Op::SHL_B: return iout(int64_t(u(a) << (b & (width - 1))), false);
    case Op::SHR_B: return iout(int64_t(u(a) >> (b & (width - 1))), false);
    case Op::ASHR_B: return iout(s(a) >> (b & (width - 1)), true);
    case Op::GETBIT_B: return iout(int64_t(u(a) >> (b & (width - 1)) & 1), false);
    case Op::CBITS_B: return iout(std::popcount(a & mask), false);
    case Op::MGEN_B: {  // Assumed (Mesa never emits it): a mask of src2 ones starting at bit src1
      uint64_t n = std::min<uint64_t>(u(b), width), at = u(a) & (width - 1);
      return iout(int64_t((((uint64_t{1} << n) - 1) << at) & mask), false);
    }
    default: return 0;
  }
}

uint32_t cat3_value(const Inst& in, uint32_t a, uint32_t b, uint32_t c, bool half) {
  const Fmt fmt{half, in.dst_half, in.sat};
  const unsigned width = half ? 16 : 32;
  const uint32_t mask = half ? 0xffff : 0xffffffff, dmask = in.dst_half ? 0xffff : 0xffffffff;
  auto out = [&](uint64_t r) { return uint32_t(r) & mask & dmask; };
  auto s24 = [](uint32_t x) { return int64_t(int32_t(x << 8) >> 8); };
  switch (in.op) {
    case Op::MAD_U16:
    case Op::MAD_S16: return out(uint64_t(a & 0xffff) * (b & 0xffff) + c);
    // Assumed: madsh.u16 adds the high half of the 16x16 product.
    case Op::MADSH_U16: return out((uint64_t(a & 0xffff) * (b & 0xffff) >> 16) + c);
    // madsh.m16 d, a, b, c = c + ((a.hi16 * b.lo16) << 16): with it Mesa's imul lowering
    // (mull.u t, a, b; madsh.m16 t, a, b, t; madsh.m16 d, b, a, t) is a*b mod 2^32. (The other reading,
    // a.lo16 * b.hi16, gives the same product; the test checks the lowering.)
    case Op::MADSH_M16: return out(((uint64_t(a >> 16) * (b & 0xffff)) << 16) + c);
    case Op::MAD_U24: return out(uint64_t(a & 0xffffff) * (b & 0xffffff) + c);
    case Op::MAD_S24: return out(uint64_t(s24(a) * s24(b)) + c);
    // Assumed: mad.f32 is fused (one rounding, fmaf); mad.f16 is computed in double and rounded to f16.
    case Op::MAD_F32: return fmt.out(double(std::fmaf(float(fmt.in(a, in.src[0])), float(fmt.in(b, in.src[1])), float(fmt.in(c, in.src[2])))));
    case Op::MAD_F16: return fmt.out(fmt.in(a, in.src[0]) * fmt.in(b, in.src[1]) + fmt.in(c, in.src[2]));
    // sel d, a, cond, b = cond != 0 ? a : b; sel.f* tests the condition as a float (-0 is false, NaN true).
    case Op::SEL_B16:
    case Op::SEL_S16: return out((b & 0xffff) ? a : c);
    case Op::SEL_B32:
    case Op::SEL_S32: return out(b ? a : c);
    case Op::SEL_F16:
    case Op::SEL_F32: {
      Src plain;
      bool t = fmt.in(b, plain) != 0;  // NaN != 0
      return fmt.out(t ? fmt.in(a, in.src[0]) : fmt.in(c, in.src[2]));
    }
    case Op::SAD_S16: return out(uint64_t(std::abs(int64_t(int16_t(a)) - int16_t(b))) + c);
    case Op::SAD_S32: return out(uint64_t(std::abs(int64_t(int32_t(a)) - int32_t(b))) + c);
    // The alternate form: shift amounts in the low log2(width) bits, as for shl.b/shr.b.
    case Op::SHRM: return out(((b & mask) >> (a & (width - 1))) & c);
    case Op::SHLM: return out(((b & mask) << (a & (width - 1))) & c);
    case Op::SHRG: return out(((b & mask) >> (a & (width - 1))) | c);
    case Op::SHLG: return out(((b & mask) << (a & (width - 1))) | c);
    case Op::ANDG: return out((b & a) | c);
    default: return 0;
  }
}

// cat4: computed in double and rounded to the destination (within the SFU's error bounds, not its bits).
uint32_t cat4_value(const Inst& in, uint32_t a, bool half) {
  const Fmt fmt{half, in.dst_half, in.sat};
  double x = fmt.in(a, in.src[0]);
  switch (in.op) {
    case Op::RCP: return fmt.out(1.0 / x);
    case Op::RSQ:
    case Op::HRSQ: return fmt.out(1.0 / std::sqrt(x));
    case Op::LOG2:
    case Op::HLOG2: return fmt.out(std::log2(x));
    case Op::EXP2:
    case Op::HEXP2: return fmt.out(std::exp2(x));
    case Op::SIN: return fmt.out(std::sin(x));
    case Op::COS: return fmt.out(std::cos(x));
    case Op::SQRT: return fmt.out(std::sqrt(x));
    default: return 0;
  }
}

// ---------------------------------------------------------------------------------------------
// A workgroup

// The hazard state of one half register (or a0, a1, p0.c): who wrote it last, and who reads it late.
struct Slot {
  int64_t cycle = 0;   // an ALU write: the cycle of the write
  uint32_t run = 0;    // the workgroup run it belongs to: a slot of an earlier run is empty
  uint32_t epoch = 0;  // an (ss)/(sy) write: the fiber's count of that flag at the write
  uint32_t pc = 0;
  uint32_t war_ss = 0, war_sy = 0, war_pc = 0;  // a late reader: the counts when it read, its index
  SyncClass cls = SyncClass::None;
  uint8_t war = 0;
  bool half = false;  // the write was of a half register
};

// A fiber's clock and its (ss)/(sy) counts.
struct Sync {
  int64_t cycle = 0;
  uint32_t ss = 0, sy = 0;
  bool after_cat7 = false;
  uint32_t cat7_pc = 0;
};

struct Reader {
  bool alu;   // a cat1/2/3 source (otherwise a branch, cat4 or cat6)
  bool mad3;  // the third source of mad.*/madsh.*
};

// Fibers at the same instruction, run together.
struct Group {
  uint32_t pc = 0;
  std::vector<uint16_t> fibers;  // ascending
  uint32_t waves = 0;            // a bit per wave with a fiber here
};

// Where a register lives: its word in the fiber's file, the half of it (-1 = all), its first hazard slot.
struct Loc {
  unsigned word;
  int half;
  unsigned slot;
  bool special;                                      // a0, a1, p0.c
  bool two() const { return half < 0 && !special; }  // a full register: two half slots
};

class Workgroup {
 public:
  Workgroup(const Config& cfg, const std::vector<Code>& code, const ComputeDispatch& d, GpuMemory& memory, bool strict)
      : cfg_(cfg), code_(code), consts_(d.consts), memory_(memory), strict_(strict) {
    sh_base_ = cfg.footprint * 8, sp_base_ = sh_base_ + 64, nslots_ = sp_base_ + 8;
    file_.resize(size_t{cfg.fibers} * kFile), slots_.resize(size_t{cfg.fibers} * nslots_), sync_.resize(cfg.fibers);
    cond_.resize(cfg.fibers), shared_.resize(cfg.shared_bytes);
  }

  // Runs workgroup `id` to its end; returns the wave instructions it took. Returns early when `stop`
  // or `cancelled` is set.
  uint64_t run(std::array<uint32_t, 3> id, const std::atomic<bool>& cancelled, const std::atomic<bool>& stop) {
    id_ = id, completed = false;
    const unsigned n = cfg_.fibers;
    if (++run_ == 0) std::fill(slots_.begin(), slots_.end(), Slot{}), run_ = 1;  // slots of other runs read as empty
    // The registers a shader can reach: r0..r(footprint-1), r48..r55, a0, a1, p0.
    std::fill(file_.begin(), file_.begin() + size_t{cfg_.footprint} * 4 * n, 0u);
    std::fill(file_.begin() + size_t{kGprs} * n, file_.end(), 0u);
    std::fill(sync_.begin(), sync_.end(), Sync{});
    std::fill(shared_.begin(), shared_.end(), uint8_t{0});
    Group all;
    for (unsigned f = 0; f < n; ++f) {
      auto r = [&](unsigned regid) -> uint32_t& { return file_[size_t{regid} * n + f]; };
      uint32_t x = f % cfg_.local[0], y = f / cfg_.local[0] % cfg_.local[1], z = f / (cfg_.local[0] * cfg_.local[1]);
      if (cfg_.local_id != ir3::kNoReg) r(cfg_.local_id) = x, r(cfg_.local_id + 1) = y, r(cfg_.local_id + 2) = z;
      if (cfg_.wg_id != ir3::kNoReg) r(cfg_.wg_id) = id[0], r(cfg_.wg_id + 1) = id[1], r(cfg_.wg_id + 2) = id[2];
      if (cfg_.linear_id != ir3::kNoReg) r(cfg_.linear_id) = f;
      all.fibers.push_back(uint16_t(f));
      all.waves |= 1u << (f / cfg_.wave);
    }
    groups_.clear();
    groups_.push_back(std::move(all));
    Group bar;  // fibers waiting at a barrier
    uint64_t waves = 0, steps = 0;
    for (;;) {
      if ((++steps & 1023) == 0 && (cancelled.load(std::memory_order_relaxed) || stop.load(std::memory_order_relaxed))) return waves;
      if (groups_.empty()) {
        if (bar.fibers.empty()) return completed = true, waves;
        // Every fiber still running waits at the barrier: it completes if none has ended.
        if (bar.fibers.size() != n)
          fault(bar.fibers[0], &code_[bar.pc], bar.pc,
                "barrier reached by only part of the workgroup: " + std::to_string(bar.fibers.size()) + " of " + std::to_string(n) +
                    " fibers wait at it and the others have ended");
        Group g = std::move(bar);
        bar = Group{};
        waves += step(g);
        continue;
      }
      // Min-PC scheduling: the fibers at the lowest instruction run next, together.
      Group g = std::move(groups_.back());
      groups_.pop_back();
      if (g.pc < code_.size() && code_[g.pc].why.empty() && code_[g.pc].in.op == Op::BAR) {
        if (!bar.fibers.empty() && bar.pc != g.pc)
          fault(g.fibers[0], &code_[g.pc], g.pc,
                "barrier reached by only part of the workgroup: other fibers wait at the barrier at instruction " + std::to_string(bar.pc));
        bar.pc = g.pc;
        merge(bar, std::move(g.fibers), g.waves);
        continue;
      }
      waves += step(g);
    }
  }

  uint64_t hazards = 0;
  std::string first_hazard;
  bool completed = false;  // the last run() reached the end (was not stopped)

 private:
  // ---- faults and hazards
  std::string where(unsigned f) const {
    return "workgroup (" + std::to_string(id_[0]) + "," + std::to_string(id_[1]) + "," + std::to_string(id_[2]) + ") fiber " + std::to_string(f);
  }
  static std::string text(const Code& c) { return "`" + ir3::format(c.in) + "`"; }
  [[noreturn, gnu::cold, gnu::noinline]] void fault(unsigned f, const Code* c, uint32_t pc, const std::string& what) const {
    throw CpFault(what + (c ? " by " + text(*c) : std::string()) + " at instruction " + std::to_string(pc) + ", " + where(f));
  }
  template <class Message>
  [[gnu::cold, gnu::noinline]] void hazard(unsigned f, Message&& message) {
    hazard_waves_ |= 1u << (f / cfg_.wave);
    if (strict_) throw CpFault("hazard: " + message() + ", " + where(f));
    if (first_hazard.empty()) first_hazard = "hazard: " + message() + ", " + where(f);
  }

  // ---- registers
  Slot& slot(unsigned f, unsigned k) {
    Slot& s = slots_[size_t{k} * cfg_.fibers + f];
    if (s.run != run_) s = Slot{}, s.run = run_;
    return s;
  }

  Loc locate(unsigned f, const Code& c, uint32_t pc, unsigned regid, bool half, bool write) const {
    if (regid >= ir3::kA0) {
      if (regid == ir3::kA0 || regid == ir3::kA1 || (regid >= ir3::kP0 && regid < ir3::kNoReg))
        return {kRegs + (regid - ir3::kA0), half ? 0 : -1, sp_base_ + (regid - ir3::kA0), true};
      bad_register(f, c, pc, regid, half, write);
    }
    unsigned word = regid;
    int hi = -1;
    if (half) word = regid < kGprs ? regid >> 1 : kGprs + ((regid - kGprs) >> 1), hi = int(regid & 1);
    if (word >= kRegs || (word < kGprs && word >= cfg_.footprint * 4)) [[unlikely]]
      bad_register(f, c, pc, regid, half, write);
    unsigned s = word < kGprs ? 2 * word : sh_base_ + 2 * (word - kGprs);
    return {word, hi, s + (hi > 0), false};
  }
  [[noreturn, gnu::cold, gnu::noinline]] void bad_register(unsigned f, const Code& c, uint32_t pc, unsigned regid, bool half, bool write) const {
    std::string name = regid == ir3::kNoReg ? "r63.x (no register)" : ir3::format_reg(uint8_t(regid), half);
    std::string how = write ? " written" : " read";
    unsigned word = half && regid < ir3::kA0 ? (regid < kGprs ? regid >> 1 : kGprs + ((regid - kGprs) >> 1)) : regid;
    if (regid >= ir3::kA0 || word >= kRegs) fault(f, &c, pc, name + " is not a register," + how);
    fault(f, &c, pc,
          name + how + " beyond the register footprint (SP_CS_CTRL_REG0.FULLREGFOOTPRINT " + std::to_string(cfg_.footprint) + ": " +
              (cfg_.footprint ? "r0..r" + std::to_string(cfg_.footprint - 1) : "no registers") + ")");
  }

  uint32_t get(unsigned f, const Loc& l) const {
    uint32_t w = file_[size_t{l.word} * cfg_.fibers + f];
    return l.half < 0 ? w : l.special ? w & 0xffff : w >> (16 * l.half) & 0xffff;
  }
  void put(unsigned f, const Loc& l, unsigned regid, uint32_t v) {
    uint32_t& w = file_[size_t{l.word} * cfg_.fibers + f];
    if (l.special) w = regid == ir3::kA0 ? uint32_t(int32_t(int16_t(v))) : regid == ir3::kA1 ? v & 0xffff : uint32_t(v != 0);
    else if (l.half < 0) w = v;
    else w = (w & ~(0xffffu << (16 * l.half))) | (v & 0xffff) << (16 * l.half);
  }

  void check_read(unsigned f, const Code& c, uint32_t pc, unsigned k, unsigned regid, bool half, bool special, Reader r, int rep) {
    Slot& s = slot(f, k);
    const Sync& y = sync_[f];
    auto name = [&] { return ir3::format_reg(uint8_t(regid), half) + " read by " + text(c) + " at instruction " + std::to_string(pc); };
    switch (s.cls) {
      case SyncClass::Alu: {
        int need = delay_needed(r.alu, r.mad3, s.half != half, special);
        int64_t have = y.cycle + rep - s.cycle - 1;
        if (have < need)
          hazard(f, [&] {
            return name() + " " + std::to_string(have) + " delay slots after " + text(code_[s.pc]) + " at instruction " + std::to_string(s.pc) +
                   " wrote it (" + std::to_string(need) + " needed)";
          });
        break;
      }
      case SyncClass::Ss:
      case SyncClass::Sy: {
        bool ss = s.cls == SyncClass::Ss;
        if (s.epoch == (ss ? y.ss : y.sy))
          hazard(f, [&] {
            return name() + " before its " + (ss ? "(ss)" : "(sy)") + " wait (written by " + text(code_[s.pc]) + " at instruction " +
                   std::to_string(s.pc) + ")";
          });
        break;
      }
      default: break;
    }
  }

  // Reads a register, checking that it exists, is inside the footprint and is ready.
  uint32_t read(unsigned f, const Code& c, uint32_t pc, unsigned regid, bool half, Reader r, int rep) {
    Loc l = locate(f, c, pc, regid, half, false);
    check_read(f, c, pc, l.slot, regid, half, l.special, r, rep);
    if (l.two()) check_read(f, c, pc, l.slot + 1, regid, half, false, r, rep);
    return get(f, l);
  }

  // Writes a register: the register number ir3 calls "no register" drops the value.
  void write(unsigned f, const Code& c, uint32_t pc, unsigned regid, bool half, uint32_t v, int rep) {
    if (regid == ir3::kNoReg) return;
    Loc l = locate(f, c, pc, regid, half, true);
    SyncClass cls = producer_class(c, l.word);
    const Sync& y = sync_[f];
    for (unsigned k = 0; k < (l.two() ? 2u : 1u); ++k) {
      Slot& s = slot(f, l.slot + k);
      auto name = [&] { return ir3::format_reg(uint8_t(regid), half) + " written by " + text(c) + " at instruction " + std::to_string(pc); };
      if ((s.cls == SyncClass::Ss && s.epoch == y.ss) || (s.cls == SyncClass::Sy && s.epoch == y.sy))
        hazard(f, [&] {
          return name() + " before the " + (s.cls == SyncClass::Ss ? "(ss)" : "(sy)") + " wait for " + text(code_[s.pc]) + " at instruction " +
                 std::to_string(s.pc) + ", which writes it too";
        });
      if (s.war == 1 ? s.war_ss == y.ss : s.war == 2 && s.war_ss == y.ss && s.war_sy == y.sy)
        hazard(f, [&] {
          return name() + " while " + text(code_[s.war_pc]) + " at instruction " + std::to_string(s.war_pc) + " may still read it (" +
                 (s.war == 1 ? "(ss)" : "(ss) or (sy)") + " needed)";
        });
      s.cls = cls, s.pc = pc, s.half = half && !l.special, s.cycle = y.cycle + rep, s.epoch = cls == SyncClass::Ss ? y.ss : y.sy, s.war = 0;
    }
    put(f, l, regid, v);
  }

  // A cat4/cat6 source, read late: a write of it must wait (ss) or (sy).
  void late_read(unsigned f, const Code& c, uint32_t pc, unsigned regid, bool half) {
    Loc l = locate(f, c, pc, regid, half, false);
    const Sync& y = sync_[f];
    for (unsigned k = 0; k < (l.two() ? 2u : 1u); ++k) {
      Slot& s = slot(f, l.slot + k);
      if (s.war == 1 && s.war_ss == y.ss && c.war == 2) continue;  // keep the stronger wait
      s.war = c.war, s.war_ss = y.ss, s.war_sy = y.sy, s.war_pc = pc;
    }
  }

  uint32_t constant(unsigned f, const Code& c, uint32_t pc, uint32_t id, bool half) {
    if (id >= cfg_.const_ids)
      fault(f, &c, pc,
            std::string(half ? "hc" : "c") + std::to_string(id >> 2) + "." + "xyzw"[id & 3] +
                " is beyond the constants the shader may read (HLSQ_CS_CNTL.CONSTLEN " + std::to_string(cfg_.constlen / 4) + ": " +
                std::to_string(cfg_.constlen) + " vec4" +
                (uint64_t{cfg_.constlen} * 4 > consts_.size() ? ", of a constant file of " + std::to_string(consts_.size() / 4) : std::string()) +
                ")");
    // Assumed: a half constant hcN.c is the low 16 bits of cN.c's dword.
    return half ? consts_[id] & 0xffff : consts_[id];
  }

  // Source `s` on repeat `rep`, in the instruction's precision: a register, a constant, an immediate,
  // a FLUT value, or a register/constant relative to a0.x (a0.x counts components, like regids).
  uint32_t source(unsigned f, const Code& c, uint32_t pc, const Src& s, bool half, Reader r, int rep) {
    int inc = s.r ? rep : 0;
    switch (s.kind) {
      case Src::Kind::Reg: return read(f, c, pc, s.num + inc, half, r, rep);
      case Src::Kind::Const: return constant(f, c, pc, s.num + inc, half);
      case Src::Kind::Imm: return uint32_t(s.imm + inc) & (half ? 0xffff : 0xffffffff);
      case Src::Kind::Flut: return half ? to_half(ir3::flut_value(s.num)) : bits(ir3::flut_value(s.num));
      case Src::Kind::RelReg:
      case Src::Kind::RelConst: {
        int64_t at = int32_t(read(f, c, pc, ir3::kA0, false, r, rep)) + int64_t{s.imm};
        if (s.kind == Src::Kind::RelConst) {
          if (at < 0) fault(f, &c, pc, "c<a0.x + " + std::to_string(s.imm) + "> is const component " + std::to_string(at));
          return constant(f, c, pc, uint32_t(at), half);
        }
        if (at < 0 || at >= ir3::kA0)
          fault(f, &c, pc, "r<a0.x + " + std::to_string(s.imm) + "> is register " + std::to_string(at) + ", which does not exist");
        return read(f, c, pc, unsigned(at), half, r, rep);
      }
      default: fault(f, &c, pc, "a source kind the executor cannot read");
    }
  }

  // ---- memory
  uint8_t* global(unsigned f, const Code& c, uint32_t pc, uint64_t a, uint64_t n, Access access) {
    if (span_ && a >= span_->device && a - span_->device <= span_->size && n <= span_->size - (a - span_->device) &&
        (access == Access::Read || span_->writable))
      return span_->host + (a - span_->device);
    auto s = memory_.translate(a, n, access);
    if (!s) fault(f, &c, pc, "page fault: " + std::string(name(access)) + " of " + std::to_string(n) + " bytes at " + hex(a));
    span_ = s;
    return s->host + (a - s->device);
  }
  uint8_t* local(unsigned f, const Code& c, uint32_t pc, int64_t a, uint64_t n) {
    if (a < 0 || uint64_t(a) + n > shared_.size())
      fault(f, &c, pc,
            "shared memory access of " + std::to_string(n) + " bytes at offset " + std::to_string(a) + " is outside the workgroup's " +
                std::to_string(shared_.size()) + " bytes (SP_CS_UNKNOWN_A9B1.SHARED_SIZE)");
    return shared_.data() + a;
  }

  // ---- instructions
  void begin(unsigned f, const Code& c, uint32_t pc) {
    Sync& y = sync_[f];
    if (y.after_cat7) {
      y.after_cat7 = false;
      if (!c.in.ss || !c.in.sy)
        hazard(f, [&] {
          return text(c) + " at instruction " + std::to_string(pc) + " follows " + text(code_[y.cat7_pc]) + " at instruction " +
                 std::to_string(y.cat7_pc) + " without (ss)(sy)";
        });
    }
    if (c.in.ss) ++y.ss;
    if (c.in.sy) ++y.sy;
  }
  void finish(unsigned f, const Code& c, uint32_t pc) {
    Sync& y = sync_[f];
    y.cycle += c.advance;
    if (c.cat == 7) y.after_cat7 = true, y.cat7_pc = pc;
  }

  void exec(unsigned f, const Code& c, uint32_t pc) {
    begin(f, c, pc);
    const Inst& in = c.in;
    switch (c.cat) {
      case 1: {
        const Src& s = in.src[0];
        bool half = ir3::is_half(in.src_type);
        for (int rep = 0; rep <= in.rpt; ++rep) {
          // (r) on a cat1 immediate is not a repeat increment (it means something else there).
          uint32_t x = s.kind == Src::Kind::Imm ? uint32_t(s.imm) & (half ? 0xffff : 0xffffffff) : source(f, c, pc, s, half, {true, false}, rep);
          write(f, c, pc, in.dst + rep, in.dst_half, convert(x, in.src_type, in.dst_type, in.round), rep);
        }
        break;
      }
      case 2: {
        bool two = ir3::info(in.op).srcs == 2;
        for (int rep = 0; rep <= in.rpt; ++rep) {
          uint32_t a = source(f, c, pc, in.src[0], c.half, {true, false}, rep);
          uint32_t b = two ? source(f, c, pc, in.src[1], c.half, {true, false}, rep) : 0;
          write(f, c, pc, in.dst + rep, in.dst_half, cat2_value(in, a, b, c.half), rep);
        }
        break;
      }
      case 3:
        for (int rep = 0; rep <= in.rpt; ++rep) {
          uint32_t a = source(f, c, pc, in.src[0], c.half, {true, false}, rep);
          uint32_t b = source(f, c, pc, in.src[1], c.half, {true, false}, rep);
          uint32_t x = source(f, c, pc, in.src[2], c.half, {true, c.mad}, rep);
          write(f, c, pc, in.dst + rep, in.dst_half, cat3_value(in, a, b, x, c.half), rep);
        }
        break;
      case 4:
        for (int rep = 0; rep <= in.rpt; ++rep)
          write(f, c, pc, in.dst + rep, in.dst_half, cat4_value(in, source(f, c, pc, in.src[0], c.half, {false, false}, rep), c.half), rep);
        if (in.src[0].kind == Src::Kind::Reg)
          for (int rep = 0; rep <= in.rpt; ++rep) late_read(f, c, pc, in.src[0].num + (in.src[0].r ? rep : 0), c.half);
        break;
      case 6: memory_op(f, c, pc); break;
      default: break;  // nop; bar (the scheduler made every fiber arrive); fence (memory is coherent here)
    }
    finish(f, c, pc);
  }

  void memory_op(unsigned f, const Code& c, uint32_t pc) {
    const Inst& in = c.in;
    const Reader r{false, false};
    const Type t = in.type;
    const unsigned size = type_bytes(t), n = in.components;
    const bool half = ir3::is_half(t);
    auto pair = [&](unsigned regid) { return uint64_t{read(f, c, pc, regid, false, r, 0)} | uint64_t{read(f, c, pc, regid + 1, false, r, 0)} << 32; };
    // ldg.a/stg.a: base + ((offset register + small offset) << (shift + 2)). Assumed: the register is signed.
    auto scaled = [&] { return uint64_t(int64_t(int32_t(read(f, c, pc, in.src[1].num, false, r, 0))) + in.offset) << (in.shift + 2); };
    auto load = [&](const uint8_t* p) {
      for (unsigned k = 0; k < n; ++k) {
        uint32_t v = 0;
        std::memcpy(&v, p + k * size, size);  // little-endian; u8 zero-extends
        write(f, c, pc, in.dst + k, half, v, 0);
      }
    };
    auto values = [&](std::array<uint32_t, 4>& v) {
      for (unsigned k = 0; k < n; ++k) v[k] = read(f, c, pc, in.src[2].num + k, half, r, 0);
    };
    auto store = [&](uint8_t* p, const std::array<uint32_t, 4>& v) {
      for (unsigned k = 0; k < n; ++k) std::memcpy(p + k * size, &v[k], size);
    };
    auto late = [&](unsigned regid, unsigned count, bool h) {
      for (unsigned k = 0; k < count; ++k) late_read(f, c, pc, regid + k, h);
    };
    if (!is_atomic(in.op) && (n < 1 || n > 4)) fault(f, &c, pc, std::to_string(n) + " components (1 to 4 are defined)");
    std::array<uint32_t, 4> v{};
    switch (in.op) {
      case Op::LDG:
      case Op::LDG_A: {
        uint64_t a = pair(in.src[0].num) + (in.op == Op::LDG ? uint64_t(int64_t{in.offset}) : scaled());
        load(global(f, c, pc, a, uint64_t{n} * size, Access::Read));
        late(in.src[0].num, 2, false);
        if (in.op == Op::LDG_A) late(in.src[1].num, 1, false);
        return;
      }
      case Op::STG:
      case Op::STG_A: {
        uint64_t a = pair(in.src[0].num) + (in.op == Op::STG ? uint64_t(int64_t{in.offset}) : scaled());
        values(v);
        store(global(f, c, pc, a, uint64_t{n} * size, Access::Write), v);
        late(in.src[0].num, 2, false), late(in.src[2].num, n, half);
        if (in.op == Op::STG_A) late(in.src[1].num, 1, false);
        return;
      }
      case Op::LDL:
      case Op::LDLW: {  // Assumed: ldlw addresses the same shared memory as ldl
        int64_t a = int64_t{read(f, c, pc, in.src[0].num, false, r, 0)} + in.offset;
        load(local(f, c, pc, a, uint64_t{n} * size));
        late(in.src[0].num, 1, false);
        return;
      }
      case Op::STL:
      case Op::STLW: {
        int64_t a = int64_t{read(f, c, pc, in.src[0].num, false, r, 0)} + in.offset;
        values(v);
        store(local(f, c, pc, a, uint64_t{n} * size), v);
        late(in.src[0].num, 1, false), late(in.src[2].num, n, half);
        return;
      }
      case Op::LDP:
      case Op::STP: fault(f, &c, pc, "private memory is not modelled");
      default: break;
    }
    if (!is_atomic(in.op)) fault(f, &c, pc, "an instruction the executor does not model");
    // Atomics: 32-bit, u32 or s32 (min/max compare by the type); dst gets the old value. inc/dec add and
    // subtract 1 with wrap-around (Assumed: no clamp operand). cmpxchg: src2 names a pair, the value to
    // store first and the comparand next.
    if (t != Type::U32 && t != Type::S32)
      fault(f, &c, pc, std::string("an atomic of type ") + ir3::type_name(t) + " is not modelled (u32 and s32 are)");
    bool uses_value = in.op != Op::ATOMIC_INC && in.op != Op::ATOMIC_DEC;
    uint64_t a = in.global ? pair(in.src[0].num) : read(f, c, pc, in.src[0].num, false, r, 0);
    uint32_t x = uses_value ? read(f, c, pc, in.src[2].num, false, r, 0) : 0;
    uint32_t cmp = in.op == Op::ATOMIC_CMPXCHG ? read(f, c, pc, in.src[2].num + 1, false, r, 0) : 0;
    auto apply = [&](uint32_t old) -> uint32_t {
      bool sgn = t == Type::S32;
      switch (in.op) {
        case Op::ATOMIC_ADD: return old + x;
        case Op::ATOMIC_SUB: return old - x;
        case Op::ATOMIC_XCHG: return x;
        case Op::ATOMIC_INC: return old + 1;
        case Op::ATOMIC_DEC: return old - 1;
        case Op::ATOMIC_CMPXCHG: return old == cmp ? x : old;
        case Op::ATOMIC_MIN: return sgn ? uint32_t(std::min(int32_t(old), int32_t(x))) : std::min(old, x);
        case Op::ATOMIC_MAX: return sgn ? uint32_t(std::max(int32_t(old), int32_t(x))) : std::max(old, x);
        case Op::ATOMIC_AND: return old & x;
        case Op::ATOMIC_OR: return old | x;
        case Op::ATOMIC_XOR: return old ^ x;
        default: return old;
      }
    };
    if (a & 3) fault(f, &c, pc, std::string("a misaligned atomic at ") + (in.global ? hex(a) : "shared memory offset " + std::to_string(a)));
    uint32_t old;
    if (in.global) {  // other workgroups run on other host threads: a real atomic
      std::atomic_ref<uint32_t> m(*reinterpret_cast<uint32_t*>(global(f, c, pc, a, 4, Access::Atomic)));
      old = m.load();
      while (!m.compare_exchange_weak(old, apply(old))) {}
    } else {
      uint8_t* p = local(f, c, pc, int64_t(a), 4);
      std::memcpy(&old, p, 4);
      uint32_t nv = apply(old);
      std::memcpy(p, &nv, 4);
    }
    write(f, c, pc, in.dst, false, old, 0);
    late(in.src[0].num, in.global ? 2 : 1, false);
    if (uses_value) late(in.src[2].num, in.op == Op::ATOMIC_CMPXCHG ? 2 : 1, false);
  }

  // ---- scheduling
  void merge(Group& into, std::vector<uint16_t>&& fibers, uint32_t waves) {
    if (into.fibers.empty()) {
      into.fibers = std::move(fibers);
    } else {
      std::vector<uint16_t> m(into.fibers.size() + fibers.size());
      std::merge(into.fibers.begin(), into.fibers.end(), fibers.begin(), fibers.end(), m.begin());
      into.fibers = std::move(m);
    }
    into.waves |= waves;
  }
  uint32_t waves_of(const std::vector<uint16_t>& fibers) const {
    uint32_t m = 0;
    for (uint16_t f : fibers) m |= 1u << (f / cfg_.wave);
    return m;
  }
  // Fibers now at instruction `pc` (groups_ is kept by descending pc: the lowest is last).
  void push(uint32_t pc, std::vector<uint16_t>&& fibers, uint32_t waves) {
    if (fibers.empty()) return;
    auto it = std::find_if(groups_.begin(), groups_.end(), [&](const Group& g) { return g.pc <= pc; });
    if (it != groups_.end() && it->pc == pc) merge(*it, std::move(fibers), waves);
    else groups_.insert(it, Group{pc, std::move(fibers), waves});
  }
  uint32_t target(const Group& g, const Code& c) const {
    int64_t t = int64_t{g.pc} + c.in.target;
    if (t < 0) fault(g.fibers[0], &c, g.pc, "a branch to instruction " + std::to_string(t) + ", before the start of the shader");
    return uint32_t(std::min<int64_t>(t, std::numeric_limits<uint32_t>::max()));
  }

  // Runs the instruction the fibers of `g` are at; returns the wave instructions it counts.
  uint64_t step(Group& g) {
    const uint32_t pc = g.pc;
    if (pc >= code_.size())
      fault(g.fibers[0], nullptr, pc, "ran past the end of the shader (SP_CS_INSTRLEN " + std::to_string(code_.size() / 16) + " x 16 instructions)");
    const Code& c = code_[pc];
    if (!c.why.empty()) fault(g.fibers[0], nullptr, pc, c.why);
    const Inst& in = c.in;
    hazard_waves_ = 0;
    const uint64_t waves = std::popcount(g.waves);
    switch (in.op) {
      case Op::BR:
      case Op::BRAO:
      case Op::BRAA:
      case Op::BANY:
      case Op::BALL: {
        const Reader r{false, false};
        for (uint16_t f : g.fibers) {
          begin(f, c, pc);
          bool t = (read(f, c, pc, ir3::kP0 + in.comp1, false, r, 0) != 0) != in.inv1;
          if (in.op == Op::BRAO || in.op == Op::BRAA) {
            bool u = (read(f, c, pc, ir3::kP0 + in.comp2, false, r, 0) != 0) != in.inv2;
            t = in.op == Op::BRAO ? t || u : t && u;
          }
          cond_[f] = t;
          finish(f, c, pc);
        }
        if (in.op == Op::BANY || in.op == Op::BALL) {  // the fibers of a wave here branch together
          uint32_t some = 0, not_all = 0;
          for (uint16_t f : g.fibers) (cond_[f] ? some : not_all) |= 1u << (f / cfg_.wave);
          for (uint16_t f : g.fibers) cond_[f] = in.op == Op::BANY ? (some >> (f / cfg_.wave) & 1) : !(not_all >> (f / cfg_.wave) & 1);
        }
        std::vector<uint16_t> taken, next;
        for (uint16_t f : g.fibers) (cond_[f] ? taken : next).push_back(f);
        if (!taken.empty()) {
          uint32_t to = target(g, c), w = waves_of(taken);
          push(to, std::move(taken), w);
        }
        uint32_t w = waves_of(next);
        push(pc + 1, std::move(next), w);
        break;
      }
      case Op::JUMP: {
        for (uint16_t f : g.fibers) begin(f, c, pc), finish(f, c, pc);
        uint32_t to = target(g, c);
        push(to, std::move(g.fibers), g.waves);
        break;
      }
      case Op::END:
        for (uint16_t f : g.fibers) begin(f, c, pc), finish(f, c, pc);
        break;
      default:
        for (uint16_t f : g.fibers) exec(f, c, pc);
        push(pc + 1, std::move(g.fibers), g.waves);
    }
    hazards += std::popcount(hazard_waves_);
    return waves;
  }

  const Config& cfg_;
  const std::vector<Code>& code_;
  std::span<const uint32_t> consts_;
  GpuMemory& memory_;
  const bool strict_;
  unsigned sh_base_ = 0, sp_base_ = 0, nslots_ = 0;
  std::array<uint32_t, 3> id_{};
  uint32_t run_ = 0;
  std::vector<uint32_t> file_;  // kFile words, each for every fiber: word w of fiber f at w * fibers + f
  std::vector<Slot> slots_;     // nslots_ slots, each for every fiber
  std::vector<Sync> sync_;
  std::vector<uint8_t> cond_;
  std::vector<uint8_t> shared_;
  std::vector<Group> groups_;
  std::optional<Memory::Span> span_;  // the last global mapping used
  uint32_t hazard_waves_ = 0;
};

}  // namespace

uint64_t Ir3Executor::run(const ComputeDispatch& d, GpuMemory& memory, const std::atomic<bool>& cancelled) {
  GpuMemory::Use use(memory);
  const Config cfg = configure(d);
  const std::vector<Code> code = load_program(cfg, memory);
  unsigned threads = o_.threads ? o_.threads : std::min(2u, std::max(1u, std::thread::hardware_concurrency()));
  threads = unsigned(std::max<uint64_t>(1, std::min<uint64_t>(threads, cfg.workgroups)));

  std::atomic<uint64_t> next{0};
  std::atomic<bool> stop{false};
  std::mutex mu;
  std::exception_ptr error;
  uint64_t waves = 0, hazards = 0, done = 0;
  std::string first;
  auto worker = [&] {
    try {
      Workgroup wg(cfg, code, d, memory, o_.strict_hazards);
      uint64_t my_waves = 0, my_done = 0;
      while (!stop.load(std::memory_order_relaxed) && !cancelled.load(std::memory_order_relaxed)) {
        uint64_t k = next.fetch_add(1);
        if (k >= cfg.workgroups) break;
        uint32_t x = uint32_t(k % cfg.groups[0]), y = uint32_t(k / cfg.groups[0] % cfg.groups[1]);
        uint32_t z = uint32_t(k / (uint64_t{cfg.groups[0]} * cfg.groups[1]));
        my_waves += wg.run({x, y, z}, cancelled, stop);
        my_done += wg.completed;
      }
      std::lock_guard lock(mu);
      waves += my_waves, done += my_done, hazards += wg.hazards;
      if (first.empty()) first = wg.first_hazard;
    } catch (...) {
      std::lock_guard lock(mu);
      if (!error) error = std::current_exception();
      stop = true;
    }
  };
  if (cfg.workgroups) {
    std::vector<std::thread> pool;
    for (unsigned k = 1; k < threads; ++k) pool.emplace_back(worker);
    worker();
    for (auto& t : pool) t.join();
  }
  {
    std::lock_guard lock(mu_);
    ++stats_.dispatches;
    stats_.workgroups += done, stats_.wave_instructions += waves, stats_.hazards += hazards;
    if (stats_.first_hazard.empty()) stats_.first_hazard = first;
  }
  if (error) std::rethrow_exception(error);
  return waves;
}

}  // namespace ugpu::emu::qcom
