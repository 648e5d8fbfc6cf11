// The ir3 shader executor (emu/qcom/ir3_exec.h): programs built with the hw/qcom/ir3 encoder run from
// emulated GPU memory against a register file as the CP hands it over. Instruction by instruction
// against the documented behaviour (cat1 conversions, cat2/cat3/cat4 families, repeats, half registers
// as halves of full ones, Mesa's imul lowering), memory (global loads and stores with offsets and
// component counts, the .a forms, shared memory across a barrier, local and global atomics),
// divergence (if/else, loops), the ids the hardware delivers; the scheduling rules as hazards ((sy),
// (ss), ALU delay slots, after a barrier), and faults with the instruction and the fiber named.
#include <doctest/doctest.h>

#include <atomic>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <thread>

#include "emu/gpu_memory.h"
#include "emu/qcom/cp.h"
#include "emu/qcom/ir3_exec.h"
#include "hw/qcom/a6xx_regs.h"
#include "hw/qcom/ir3.h"
#include "hw/qcom/packets.h"
#include "hw/qcom/pm4_opcodes.h"
#include "hw/qcom/pm4_packets.h"

using namespace ugpu;
using namespace ugpu::hw::qcom::ir3;
using emu::qcom::CpFault;
using emu::qcom::Ir3Executor;
using emu::qcom::Ir3Options;
namespace a6 = ugpu::hw::qcom::a6xx;
using doctest::Contains;

namespace {
constexpr uint64_t kCodeVa = 0x10000000, kDataVa = 0x20000000;
constexpr uint64_t kCodeBytes = 1 << 16, kDataBytes = 1 << 20;

uint32_t F(float f) { return std::bit_cast<uint32_t>(f); }
float AsF(uint32_t b) { return std::bit_cast<float>(b); }

// Operands.
uint8_t R(unsigned n, unsigned c = 0) { return reg(n, c); }
uint8_t HR(unsigned n, unsigned c = 0) { return reg(n, c); }  // a half register id: hrN.c
Src g(uint8_t r) { return Src::gpr(r); }
Src h(uint8_t r) { return Src::gpr(r, true); }
Src k(uint16_t id) { return Src::cnst(id); }
Src hk(uint16_t id) { return Src::cnst(id, true); }
Src imm(int32_t v, bool half = false) { return Src::immed(v, half); }
Src flut(int index, bool half = false) {
  Src s;
  s.kind = Src::Kind::Flut, s.num = uint16_t(index), s.half = half;
  return s;
}
Src rel(int offset, bool constant = false, bool half = false) {
  Src s;
  s.kind = constant ? Src::Kind::RelConst : Src::Kind::RelReg, s.imm = offset, s.half = half;
  return s;
}
Src neg(Src s) { return s.neg = true, s; }
Src fabs_(Src s) { return s.abs = true, s; }
Src rr(Src s) { return s.r = true, s; }

// Instructions.
Inst op(Op o, uint8_t dst, Src a = {}, Src b = {}, Src c = {}) {
  Inst i;
  i.op = o, i.dst = dst, i.src = {a, b, c};
  const OpInfo& in = info(o);
  if (in.cat == 3) i.dst_half = info(o).half || (o >= Op::SHRM && b.half);
  else i.dst_half = a.kind == Src::Kind::Flut && in.srcs == 2 ? b.half : a.half;
  if (dst >= kP0) i.dst_half = false;
  return i;
}
Inst cmp(Op o, Cond c, uint8_t dst, Src a, Src b) {
  Inst i = op(o, dst, a, b);
  i.cond = c;
  return i;
}
Inst mov(uint8_t dst, Src s, Type st = Type::U32, Type dt = Type::U32, uint8_t round = 0) {
  Inst i;
  i.op = Op::MOV, i.dst = dst, i.src[0] = s, i.src_type = st, i.dst_type = dt, i.round = round, i.dst_half = is_half(dt);
  i.src[0].half = is_half(st);
  return i;
}
Inst movi(uint8_t dst, uint32_t v) { return mov(dst, imm(int32_t(v))); }
Inst nop(int rpt = 0) {
  Inst i;
  i.rpt = uint8_t(rpt);
  return i;
}
Inst end() { return op(Op::END, kNoReg); }
Inst bar() { return op(Op::BAR, kNoReg); }
Inst br(int target, uint8_t comp = 0, bool inv = false) {
  Inst i = op(Op::BR, kNoReg);
  i.target = target, i.comp1 = comp, i.inv1 = inv;
  return i;
}
Inst branch(Op o, int target, uint8_t comp, bool inv = false) {
  Inst i = br(target, comp, inv);
  i.op = o;
  return i;
}
Inst jump(int target) {
  Inst i = op(Op::JUMP, kNoReg);
  i.target = target;
  return i;
}
Inst sy(Inst i) { return i.sy = true, i; }
Inst ss(Inst i) { return i.ss = true, i; }
Inst jp(Inst i) { return i.jp = true, i; }
Inst nops(Inst i, int n) { return i.nop = uint8_t(n), i; }
Inst rpt(Inst i, int n) { return i.rpt = uint8_t(n), i; }
Inst mem(Op o, uint8_t dst, uint8_t addr, int offset, uint8_t value, int n, Type t = Type::U32) {
  Inst i;
  i.op = o, i.dst = dst, i.dst_half = is_half(t), i.type = t, i.components = uint8_t(n), i.offset = offset;
  i.src[0] = Src::gpr(addr), i.src[2] = Src::gpr(value, is_half(t));
  return i;
}
Inst ldg(uint8_t dst, uint8_t addr, int off, int n, Type t = Type::U32) { return mem(Op::LDG, dst, addr, off, 0, n, t); }
Inst stg(uint8_t addr, int off, uint8_t val, int n, Type t = Type::U32) { return mem(Op::STG, kNoReg, addr, off, val, n, t); }
Inst ldl(uint8_t dst, uint8_t addr, int off, int n, Type t = Type::U32) { return mem(Op::LDL, dst, addr, off, 0, n, t); }
Inst stl(uint8_t addr, int off, uint8_t val, int n, Type t = Type::U32) { return mem(Op::STL, kNoReg, addr, off, val, n, t); }
Inst scaled(Op o, uint8_t dst, uint8_t addr, uint8_t off_reg, int small, int shift, uint8_t val, int n, Type t = Type::U32) {
  Inst i = mem(o, dst, addr, small, val, n, t);
  i.src[1] = Src::gpr(off_reg), i.shift = uint8_t(shift);
  return i;
}
Inst atomic(Op o, uint8_t dst, uint8_t addr, uint8_t val, bool global, Type t = Type::U32) {
  Inst i = mem(o, dst, addr, 0, val, 1, t);
  i.global = global;
  return i;
}
Inst full_dst(Inst i) { return i.dst_half = false, i; }
Inst wait() { return ss(sy(nop(5))); }  // every result ready: (ss)(sy) and 6 cycles

// Emulated GPU memory with the code and a data buffer mapped, the registers of a dispatch and its
// constants. Defaults: one fiber, one workgroup, r0..r7, 16 vec4 constants, 32 KiB of shared memory,
// no ids delivered; c0.xy = the data buffer's address.
struct Rig {
  emu::GpuMemory memory{uint64_t{1} << 32};
  std::shared_ptr<emu::Pages> pages = emu::Pages::create(kCodeBytes + kDataBytes, "ir3 exec test");
  std::map<uint32_t, uint32_t> regs;
  std::vector<uint32_t> consts = std::vector<uint32_t>(1024 * 4);
  std::array<uint32_t, 3> groups{1, 1, 1};
  Ir3Executor exec;

  explicit Rig(Ir3Options o = {}) : exec(o) {
    REQUIRE(pages);
    REQUIRE(memory.map({kCodeVa, kCodeBytes, 0, pages, false, true}));
    REQUIRE(memory.map({kDataVa, kDataBytes, kCodeBytes, pages, true, false}));
    footprint(8), local(1), constlen(4), ids(kNoReg, kNoReg, kNoReg);
    regs[a6::SP_CS_UNKNOWN_A9B1.offset] = 0;
    address(0, kDataVa);
  }
  void set(const hw::qcom::Register& r, const hw::qcom::Field& f, uint32_t v) { regs[r.offset] = f.set(regs[r.offset], v); }
  void footprint(unsigned n, unsigned threadsize = 0, bool merged = true) {
    namespace s = a6::SP_CS_CTRL_REG0_fields;
    set(a6::SP_CS_CTRL_REG0, s::FULLREGFOOTPRINT, n), set(a6::SP_CS_CTRL_REG0, s::THREADSIZE, threadsize),
        set(a6::SP_CS_CTRL_REG0, s::MERGEDREGS, merged);
  }
  void local(unsigned x, unsigned y = 1, unsigned z = 1) {
    namespace s = a6::HLSQ_CS_NDRANGE_0_fields;
    set(a6::HLSQ_CS_NDRANGE_0, s::LOCALSIZEX, x - 1), set(a6::HLSQ_CS_NDRANGE_0, s::LOCALSIZEY, y - 1),
        set(a6::HLSQ_CS_NDRANGE_0, s::LOCALSIZEZ, z - 1);
  }
  void constlen(unsigned units) { set(a6::HLSQ_CS_CNTL, a6::HLSQ_CS_CNTL_fields::CONSTLEN, units); }
  void ids(unsigned local_id, unsigned wg_id, unsigned linear_id) {
    set(a6::HLSQ_CS_CNTL_0, a6::HLSQ_CS_CNTL_0_fields::LOCALIDREGID, local_id),
        set(a6::HLSQ_CS_CNTL_0, a6::HLSQ_CS_CNTL_0_fields::WGIDCONSTID, wg_id);
    set(a6::HLSQ_CS_CNTL_0, a6::HLSQ_CS_CNTL_0_fields::WGSIZECONSTID, kNoReg),
        set(a6::HLSQ_CS_CNTL_0, a6::HLSQ_CS_CNTL_0_fields::WGOFFSETCONSTID, kNoReg);
    set(a6::HLSQ_CS_CNTL_1, a6::HLSQ_CS_CNTL_1_fields::LINEARLOCALIDREGID, linear_id);
  }
  void shared_kib(unsigned kib) { set(a6::SP_CS_UNKNOWN_A9B1, a6::SP_CS_UNKNOWN_A9B1_fields::SHARED_SIZE, kib - 1); }
  void address(unsigned const_id, uint64_t va) { consts[const_id] = uint32_t(va), consts[const_id + 1] = uint32_t(va >> 32); }

  // Code at kCodeVa, padded with nops to whole 16-instruction units.
  void load_words(std::vector<uint64_t> words) {
    while (words.size() % 16) words.push_back(0);
    std::memcpy(pages->host, words.data(), words.size() * 8);
    regs[a6::SP_CS_OBJ_START.offset] = uint32_t(kCodeVa), regs[a6::SP_CS_OBJ_START.offset + 1] = uint32_t(kCodeVa >> 32);
    regs[a6::SP_CS_INSTRLEN.offset] = uint32_t(words.size() / 16);
  }
  void load(const std::vector<Inst>& program) {
    std::vector<uint64_t> words;
    for (const Inst& i : program) words.push_back(encode(i));
    load_words(words);
  }
  uint64_t run(const std::atomic<bool>* cancel = nullptr) {
    emu::qcom::ComputeDispatch d;
    d.reg = [this](uint32_t o) {
      auto it = regs.find(o);
      return it == regs.end() ? 0u : it->second;
    };
    d.consts = consts, d.groups = groups;
    std::atomic<bool> never{false};
    return exec.run(d, memory, cancel ? *cancel : never);
  }
  uint8_t* data() { return pages->host + kCodeBytes; }
  uint32_t word(size_t index) {
    uint32_t v;
    std::memcpy(&v, data() + index * 4, 4);
    return v;
  }
  void put(size_t index, uint32_t v) { std::memcpy(data() + index * 4, &v, 4); }
};

// Runs `body` in one fiber with `in` at c2.x onward (const ids 8, 9, ...) and returns r4.x..r7.w. A
// wait for every result follows each instruction of the body, so a body need not mind the delays.
std::array<uint32_t, 16> eval(const std::vector<Inst>& body, const std::vector<uint32_t>& in) {
  Rig rig;
  for (size_t i = 0; i < in.size(); ++i) rig.consts[8 + i] = in[i];
  std::vector<Inst> p = {mov(R(1, 0), k(0)), mov(R(1, 1), k(1)), nop(5)};
  for (const Inst& i : body) p.push_back(i), p.push_back(wait());
  for (unsigned r = 0; r < 4; ++r) p.push_back(stg(R(1), int(r * 16), R(4 + r), 4));
  p.push_back(end());
  rig.load(p);
  rig.run();
  std::array<uint32_t, 16> out{};
  for (size_t i = 0; i < out.size(); ++i) out[i] = rig.word(i);
  return out;
}
uint16_t half_bits(float v) {  // exact f16 values used by the tests
  if (v == 1.0f) return 0x3c00;
  if (v == 2.0f) return 0x4000;
  if (v == 0.5f) return 0x3800;
  if (v == -1.5f) return 0xbe00;
  if (v == 3.0f) return 0x4200;
  return 0;
}
}  // namespace

TEST_CASE("ir3 exec: cat2 float ops, with (neg)/(abs), FLUT immediates, (sat), NaN and denormals") {
  float nan = NAN;
  auto r = eval(
      {
          op(Op::ADD_F, R(4, 0), k(8), k(9)),                // 1.5 + 2.25
          op(Op::MUL_F, R(4, 1), k(8), neg(k(9))),           // 1.5 * -2.25
          op(Op::ADD_F, R(4, 2), fabs_(k(10)), flut(5)),     // |-1| + pi
          op(Op::MIN_F, R(4, 3), k(11), k(8)),               // min(NaN, 1.5) = 1.5
          op(Op::MAX_F, R(5, 0), k(10), k(8)),               // 1.5
          op(Op::SIGN_F, R(5, 1), k(10)),                    // -1
          op(Op::ABSNEG_F, R(5, 2), neg(fabs_(k(9)))),       // -|2.25|
          op(Op::FLOOR_F, R(5, 3), k(12)),                   // floor(-2.5) = -3
          op(Op::CEIL_F, R(6, 0), k(12)),                    // -2
          op(Op::RNDNE_F, R(6, 1), k(12)),                   // -2 (ties to even)
          op(Op::RNDAZ_F, R(6, 2), k(12)),                   // -3 (ties away)
          op(Op::TRUNC_F, R(6, 3), k(12)),                   // -2
          cmp(Op::CMPS_F, Cond::NE, R(7, 0), k(11), k(11)),  // NaN != NaN: 1
          cmp(Op::CMPS_F, Cond::EQ, R(7, 1), k(11), k(11)),  // 0
          op(Op::ADD_F, R(7, 2), k(13), k(13)),              // denormal + denormal: not flushed
          [] {
            Inst i = op(Op::MUL_F, R(7, 3), k(9), flut(3));
            return i.sat = true, i;
          }(),  // (sat) 4.5 -> 1
      },
      {F(1.5f), F(2.25f), F(-1.0f), F(nan), F(-2.5f), 1u});
  CHECK(AsF(r[0]) == 3.75f);
  CHECK(AsF(r[1]) == -3.375f);
  CHECK(AsF(r[2]) == 1.0f + float(M_PI));
  CHECK(AsF(r[3]) == 1.5f);
  CHECK(AsF(r[4]) == 1.5f);
  CHECK(AsF(r[5]) == -1.0f);
  CHECK(AsF(r[6]) == -2.25f);
  CHECK(AsF(r[7]) == -3.0f);
  CHECK(AsF(r[8]) == -2.0f);
  CHECK(AsF(r[9]) == -2.0f);
  CHECK(AsF(r[10]) == -3.0f);
  CHECK(AsF(r[11]) == -2.0f);
  CHECK(r[12] == 1);
  CHECK(r[13] == 0);
  CHECK(r[14] == 2);
  CHECK(AsF(r[15]) == 1.0f);

  // cmps into p0 (read back through a branch-free sel), cmpv as a mask, compare conditions.
  auto c = eval(
      {
          cmp(Op::CMPS_F, Cond::LT, R(4, 0), k(8), k(9)),
          cmp(Op::CMPS_F, Cond::GE, R(4, 1), k(8), k(9)),
          cmp(Op::CMPS_F, Cond::LE, R(4, 2), k(8), k(8)),
          cmp(Op::CMPS_F, Cond::GT, R(4, 3), k(9), k(8)),
          cmp(Op::CMPV_F, Cond::LT, R(5, 0), k(8), k(9)),
          // (neg)(0.5) - 0.5 with a FLUT first source: -1
          op(Op::ADD_F, R(5, 1), neg(flut(1)), neg(k(10))),
      },
      {F(1.0f), F(2.0f), F(0.5f)});
  CHECK(c[0] == 1);
  CHECK(c[1] == 0);
  CHECK(c[2] == 1);
  CHECK(c[3] == 1);
  CHECK(c[4] == 0xffffffff);
  CHECK(AsF(c[5]) == -1.0f);
}

TEST_CASE("ir3 exec: half-precision float ops round to f16 (to nearest even) in half registers") {
  // hr8.x is the low half of r4.x, hr8.y its high half (merged registers).
  auto r = eval(
      {
          op(Op::ADD_F, HR(8, 0), hk(8), hk(9)),                             // 1 + 2 = 3
          op(Op::MUL_F, HR(8, 1), hk(8), flut(1, true)),                     // 1 * h(0.5)
          op(Op::ADD_F, HR(8, 2), hk(8), hk(10)),                            // 1 + 2^-11: a tie, to even: 1
          op(Op::ADD_F, HR(8, 3), hk(8), hk(11)),                            // 1 + 3 x 2^-12: up to 1 + 2^-10
          op(Op::MAD_F16, HR(9, 0), h(HR(8, 0)), h(HR(8, 1)), h(HR(8, 0))),  // 3 * 0.5 + 3 = 4.5
          op(Op::RCP, HR(9, 1), h(HR(8, 1))),                                // 1 / 0.5
          full_dst(op(Op::ADD_F, R(5, 0), hk(8), hk(12))),                   // half sources, full destination: 1 + -1.5 = -0.5 as f32
      },
      {half_bits(1.0f), half_bits(2.0f), 0x1000 /* 2^-11 */, 0x1200 /* 3 x 2^-12 */, half_bits(-1.5f)});
  CHECK((r[0] & 0xffff) == 0x4200);
  CHECK((r[0] >> 16) == 0x3800);
  CHECK((r[1] & 0xffff) == 0x3c00);
  CHECK((r[1] >> 16) == 0x3c01);
  CHECK((r[2] & 0xffff) == 0x4480);
  CHECK((r[2] >> 16) == 0x4000);
  CHECK(AsF(r[4]) == -0.5f);
}

TEST_CASE("ir3 exec: cat2 integer and bitwise ops, 11-bit immediates, (sat), shifts, counts") {
  auto r = eval({
                    op(Op::ADD_U, R(4, 0), k(8), k(9)),  // 0xffffffff + 2 wraps: 1
                    [] {
                      Inst i = op(Op::ADD_S, R(4, 1), k(10), imm(1));
                      return i.sat = true, i;
                    }(),  // INT_MAX + 1 saturates
                    [] {
                      Inst i = op(Op::SUB_U, R(4, 2), k(9), imm(5));
                      return i.sat = true, i;
                    }(),                                               // 2 - 5 saturates at 0
                    op(Op::SUB_S, R(4, 3), k(9), imm(-1024)),          // 2 + 1024
                    cmp(Op::CMPS_S, Cond::LT, R(5, 0), k(8), imm(0)),  // -1 < 0: 1
                    cmp(Op::CMPS_U, Cond::LT, R(5, 1), k(8), imm(0)),  // 0xffffffff < 0: 0
                    op(Op::MIN_S, R(5, 2), k(8), k(9)),                // -1
                    op(Op::MAX_U, R(5, 3), k(8), k(9)),                // 0xffffffff
                    op(Op::ABSNEG_S, R(6, 0), fabs_(k(11))),           // |-7|
                    op(Op::AND_B, R(6, 1), k(12), neg(imm(0xf))),      // 0x12345678 & ~0xf
                    op(Op::XOR_B, R(6, 2), k(12), k(8)),               // ~0x12345678
                    op(Op::MUL_S24, R(6, 3), k(11), k(13)),            // -7 * 0x00fffffe (= -2 in 24 bits) = 14
                    op(Op::MULL_U, R(7, 0), k(12), k(12)),             // 0x5678 * 0x5678
                    op(Op::BFREV_B, R(7, 1), imm(1)),                  // 0x80000000
                    op(Op::CLZ_B, R(7, 2), imm(0)),                    // 32
                    op(Op::CLZ_S, R(7, 3), k(8)),                      // -1: 32
                },
                {0xffffffffu, 2u, 0x7fffffffu, uint32_t(-7), 0x12345678u, 0x00fffffeu});
  CHECK(r[0] == 1);
  CHECK(r[1] == 0x7fffffff);
  CHECK(r[2] == 0);
  CHECK(r[3] == 1026);
  CHECK(r[4] == 1);
  CHECK(r[5] == 0);
  CHECK(r[6] == 0xffffffff);
  CHECK(r[7] == 0xffffffff);
  CHECK(r[8] == 7);
  CHECK(r[9] == 0x12345670);
  CHECK(r[10] == ~0x12345678u);
  CHECK(r[11] == 14);
  CHECK(r[12] == 0x5678u * 0x5678u);
  CHECK(r[13] == 0x80000000);
  CHECK(r[14] == 32);
  CHECK(r[15] == 32);

  auto s = eval(
      {
          op(Op::SHL_B, R(4, 0), k(8), imm(33)),  // the low 5 bits of the shift: 1
          op(Op::SHR_B, R(4, 1), k(9), imm(4)),   // logical
          op(Op::ASHR_B, R(4, 2), k(9), imm(4)),  // arithmetic
          op(Op::GETBIT_B, R(4, 3), k(10), imm(4)),
          op(Op::CBITS_B, R(5, 0), k(9)),
          op(Op::CLZ_S, R(5, 1), imm(1)),           // 31
          op(Op::CLZ_S, R(5, 2), imm(-2)),          // 31 leading sign bits
          op(Op::MUL_U24, R(5, 3), k(11), imm(3)),  // only the low 24 bits: 0xffffff * 3
          op(Op::MGEN_B, R(6, 0), imm(4), imm(8)),  // 8 ones from bit 4
          op(Op::NOT_B, R(6, 1), k(10)),
          op(Op::OR_B, R(6, 2), k(10), imm(-1024)),
          op(Op::ADD_S, HR(14, 0), h(HR(14, 0)), imm(-1, true)),  // a 16-bit add: 0 - 1 = 0xffff in hr14.x (low half of r7.x)
          op(Op::SEL_B32, R(6, 3), k(9), g(R(5, 0)), k(10)),      // cbits result (nonzero) selects src1
      },
      {3u, 0x80000000u, 0x10u, 0xffffffffu});
  CHECK(s[0] == 6);
  CHECK(s[1] == 0x08000000);
  CHECK(s[2] == 0xf8000000);
  CHECK(s[3] == 1);
  CHECK(s[4] == 1);
  CHECK(s[5] == 31);
  CHECK(s[6] == 31);
  CHECK(s[7] == 0x2fffffd);
  CHECK(s[8] == 0xff0);
  CHECK(s[9] == ~0x10u);
  CHECK(s[10] == 0xfffffc10);
  CHECK(s[11] == 0x80000000);
  CHECK(s[12] == 0xffff);
}

TEST_CASE("ir3 exec: cat3 mad/sel/sad and the alternate form; madsh.m16 makes Mesa's imul lowering a 32-bit multiply") {
  // mad.f32 is fused: (1 + 2^-12)^2 - (1 + 2^-11) = 2^-24 exactly, which an unfused f32 mad rounds to 0.
  float a = 1.0f + std::ldexp(1.0f, -12), c = -(1.0f + std::ldexp(1.0f, -11));
  auto r = eval(
      {
          mov(R(2, 0), k(8)),
          op(Op::MAD_F32, R(4, 0), k(8), g(R(2, 0)), k(9)),
          op(Op::MAD_F32, R(4, 1), neg(k(10)), g(R(2, 0)), k(10)),  // -1 * a + 1, with (neg) on src1
          mov(R(2, 1), k(11)),                                      // -5
          op(Op::MAD_S24, R(4, 2), k(11), g(R(2, 1)), k(12)),       // -5 * -5 + 7
          op(Op::MAD_U24, R(4, 3), k(13), g(R(2, 1)), k(12)),       // 0x1000002 -> 2; 2 * 0xfffffb (low 24 of -5) + 7
          op(Op::SEL_B32, R(5, 0), k(12), g(R(2, 1)), k(13)),       // -5 != 0: src1
          mov(R(2, 2), imm(0)),
          op(Op::SEL_B32, R(5, 1), k(12), g(R(2, 2)), k(13)),    // 0: src3
          mov(R(2, 3), k(14)),                                   // -0.0
          op(Op::SEL_F32, R(5, 2), k(12), g(R(2, 3)), k(13)),    // -0.0 is false for sel.f
          op(Op::SAD_S32, R(5, 3), k(11), g(R(2, 1)), k(12)),    // |-5 - -5| + 7
          op(Op::SHRM, R(6, 0), imm(4), g(R(2, 1)), imm(0xff)),  // (-5 >> 4) & 0xff
          op(Op::SHLG, R(6, 1), imm(8), g(R(2, 1)), imm(0x7)),   // (-5 << 8) | 7
          op(Op::ANDG, R(6, 2), imm(0xf0), g(R(2, 1)), imm(1)),  // (-5 & 0xf0) | 1
      },
      {F(a), F(c), F(1.0f), uint32_t(-5), 7u, 0x1000002u, F(-0.0f)});
  CHECK(AsF(r[0]) == std::ldexp(1.0f, -24));
  CHECK(AsF(r[1]) == std::fmaf(-1.0f, a, 1.0f));
  CHECK(r[2] == 32);
  CHECK(r[3] == 2u * 0xfffffbu + 7u);
  CHECK(r[4] == 7);
  CHECK(r[5] == 0x1000002u);
  CHECK(r[6] == 0x1000002u);
  CHECK(r[7] == 7);
  CHECK(r[8] == 0xff);
  CHECK(r[9] == 0xfffffb07);
  CHECK(r[10] == 0xf1);

  // imul: mull.u t0, a, b; madsh.m16 t1, a, b, t0; madsh.m16 d, b, a, t1.
  const uint32_t pairs[][2] = {{3, 5}, {0x12345678, 0x9abcdef0}, {0xffffffff, 0xffffffff}, {0x10000, 0x10000}, {uint32_t(-7), 123456789}};
  for (auto [x, y] : pairs) {
    auto m = eval(
        {
            mov(R(2, 0), k(8)),
            mov(R(2, 1), k(9)),
            op(Op::MULL_U, R(3, 0), g(R(2, 0)), g(R(2, 1))),
            op(Op::MADSH_M16, R(3, 1), g(R(2, 0)), g(R(2, 1)), g(R(3, 0))),
            op(Op::MADSH_M16, R(4, 0), g(R(2, 1)), g(R(2, 0)), g(R(3, 1))),
        },
        {x, y});
    CHECK_MESSAGE(m[0] == x * y, x, " * ", y);
  }
}

TEST_CASE("ir3 exec: cat4 SFU ops in f32 and f16") {
  auto r = eval(
      {
          op(Op::RCP, R(4, 0), k(8)),   // 1/4
          op(Op::RSQ, R(4, 1), k(8)),   // 1/2
          op(Op::SQRT, R(4, 2), k(8)),  // 2
          op(Op::LOG2, R(4, 3), k(8)),  // 2
          op(Op::EXP2, R(5, 0), k(9)),  // 2^-3
          op(Op::SIN, R(5, 1), k(10)),  // sin(0) = 0
          op(Op::COS, R(5, 2), k(10)),  // 1
          op(Op::RCP, R(5, 3), k(10)),  // 1/0 = inf
          op(Op::RSQ, R(6, 0), k(11)),  // rsq(-1) = NaN
          op(Op::RCP, R(6, 1), neg(k(8))),
          op(Op::HRSQ, HR(13, 0), hk(12)),  // hrsq(h(4.0)): 0.5 into hr13.x (low half of r6.z)
          [] {
            Inst i = op(Op::EXP2, R(6, 3), k(8));
            return i.sat = true, i;
          }(),
      },
      {F(4.0f), F(-3.0f), F(0.0f), F(-1.0f), 0x4400u});
  CHECK(AsF(r[0]) == 0.25f);
  CHECK(AsF(r[1]) == 0.5f);
  CHECK(AsF(r[2]) == 2.0f);
  CHECK(AsF(r[3]) == 2.0f);
  CHECK(AsF(r[4]) == 0.125f);
  CHECK(AsF(r[5]) == 0.0f);
  CHECK(AsF(r[6]) == 1.0f);
  CHECK(std::isinf(AsF(r[7])));
  CHECK(std::isnan(AsF(r[8])));
  CHECK(AsF(r[9]) == -0.25f);
  CHECK((r[10] & 0xffff) == 0x3800);
  CHECK(AsF(r[11]) == 1.0f);
}

TEST_CASE("ir3 exec: cat1 conversions: truncation, saturation, f16 rounding modes, sign and zero extension") {
  float odd = 1.0f + 3 * std::ldexp(1.0f, -12);  // 1 + 0.75 of an f16 ulp
  // Half results go to half registers hrN: hr(2m) and hr(2m+1) are the low and high halves of full regid m.
  auto r = eval(
      {
          mov(R(4, 0), k(8), Type::F32, Type::S32),           // -2.7 -> -2 (ROUND 0: toward zero)
          mov(R(4, 1), k(9), Type::F32, Type::S32),           // 3e9 saturates
          mov(R(4, 2), k(8), Type::F32, Type::U32),           // negative -> 0
          mov(R(4, 3), hk(12), Type::S16, Type::S32),         // 0xfff6 sign-extends: -10
          mov(HR(10, 0), k(10), Type::F32, Type::F16, 0),     // r5.x low: toward zero: 1.0
          mov(HR(10, 1), k(10), Type::F32, Type::F16, 1),     // r5.x high: to nearest even: 1 + 2^-10
          mov(HR(10, 2), k(11), Type::F32, Type::F16, 0),     // r5.y low: 65520 toward zero: 65504
          mov(HR(10, 3), k(11), Type::F32, Type::F16, 1),     // r5.y high: 65520 to nearest: inf
          mov(HR(11, 0), k(17), Type::F32, Type::F16, 3),     // r5.z low: -odd toward -inf: -(1 + 2^-10)
          mov(HR(11, 1), k(17), Type::F32, Type::F16, 2),     // r5.z high: -odd toward +inf: -1
          mov(R(5, 3), hk(12), Type::U16, Type::U32),         // zero-extends: 0xfff6
          mov(R(6, 0), hk(13), Type::F16, Type::F32),         // the f16 denormal 2^-24
          mov(R(6, 1), k(14), Type::S32, Type::F32),          // 16777219 toward zero: 16777218
          mov(HR(13, 0), k(14), Type::U32, Type::U8),         // r6.z low: the low 8 bits: 3
          mov(HR(13, 1), imm(0xfffd), Type::S16, Type::S16),  // r6.z high: a 16-bit immediate
          mov(R(6, 3), hk(15), Type::U8, Type::U32),          // u8 -> u32: 0x1ff's low byte
          mov(R(7, 0), k(16), Type::F32, Type::S32, 1),       // 2.5 to nearest even: 2
          mov(R(7, 1), k(14), Type::S32, Type::F32, 1),       // 16777219 to nearest even: 16777220
          mov(HR(15, 0), k(18), Type::F32, Type::F16, 1),     // r7.z low: 2^-24 is the smallest f16 denormal
          mov(R(7, 3), k(19), Type::F32, Type::F32),          // mov copies the bits (a NaN payload too)
      },
      {F(-2.7f), F(3e9f), F(odd), F(65520.0f), 0xfff6u, 0x0001u, 16777219u, 0x1ffu, F(2.5f), F(-odd), F(std::ldexp(1.0f, -24)), 0x7fc01234u});
  CHECK(r[0] == uint32_t(-2));
  CHECK(r[1] == 0x7fffffff);
  CHECK(r[2] == 0);
  CHECK(r[3] == uint32_t(-10));
  CHECK(r[4] == (0x3c01u << 16 | 0x3c00));
  CHECK(r[5] == (0x7c00u << 16 | 0x7bff));
  CHECK(r[6] == (0xbc00u << 16 | 0xbc01));
  CHECK(r[7] == 0xfff6);
  CHECK(AsF(r[8]) == std::ldexp(1.0f, -24));
  CHECK(AsF(r[9]) == 16777218.0f);
  CHECK(r[10] == (0xfffdu << 16 | 3));
  CHECK(r[11] == 0xff);
  CHECK(r[12] == 2);
  CHECK(AsF(r[13]) == 16777220.0f);
  CHECK((r[14] & 0xffff) == 0x0001);
  CHECK(r[15] == 0x7fc01234u);
}

TEST_CASE("ir3 exec: (rptN) advances the destination and (r) sources; half registers alias full ones") {
  auto r = eval(
      {
          rpt(mov(R(2, 0), rr(k(8))), 3),                           // r2.x..w = c2.x..w
          rpt(op(Op::ADD_U, R(4, 0), rr(g(R(2, 0))), k(12)), 3),    // r4.x..w = r2.x..w + c3.x (not advanced)
          rpt(op(Op::ADD_U, R(5, 0), g(R(2, 0)), rr(imm(10))), 2),  // r5.x..z = r2.x + 10, 11, 12
          mov(HR(12, 0), imm(0x1234), Type::U16, Type::U16),        // hr12.x: low half of r6.x
          mov(HR(12, 1), imm(0xabcd), Type::U16, Type::U16),        // hr12.y: high half of r6.x
          mov(R(6, 1), g(R(6, 0))),                                 // the full register sees both
          mov(HR(13, 1), h(HR(12, 1)), Type::U16, Type::U16),       // r6.z high half = 0xabcd, low half stays 0
          mov(R(2, 0), imm(0x11112222)),
          mov(R(6, 3), h(HR(4, 1)), Type::U16, Type::U32),  // hr4.y: the high half of r2.x
      },
      {1, 2, 3, 4, 100});
  CHECK(r[0] == 101);
  CHECK(r[1] == 102);
  CHECK(r[2] == 103);
  CHECK(r[3] == 104);
  CHECK(r[4] == 11);
  CHECK(r[5] == 12);
  CHECK(r[6] == 13);
  CHECK(r[8] == 0xabcd1234);
  CHECK(r[9] == 0xabcd1234);
  CHECK(r[10] == 0xabcd0000);
  CHECK(r[11] == 0x1111);
}

TEST_CASE("ir3 exec: relative addressing: r<a0.x + n> and c<a0.x + n> after mova") {
  auto r = eval(
      {
          movi(R(3, 0), 0x77),
          mov(HR(4, 0), imm(5), Type::S16, Type::S16),  // hr4.x = 5 (the low half of r2.x)
          mov(kA0, h(HR(4, 0)), Type::S16, Type::S16),  // mova a0.x, hr4.x
          mov(R(4, 0), rel(7)),                         // r<a0.x + 7>: regid 12 = r3.x
          mov(R(4, 1), rel(3, true)),                   // c<a0.x + 3>: const id 8 = c2.x
          op(Op::ADD_U, R(4, 2), rel(7), imm(1)),
          mov(HR(4, 0), imm(-3), Type::S16, Type::S16),  // a0.x = -3: a negative index
          mov(kA0, h(HR(4, 0)), Type::S16, Type::S16),
          mov(R(4, 3), rel(15)),  // regid 12 again
      },
      {0x1234});
  CHECK(r[0] == 0x77);
  CHECK(r[1] == 0x1234);
  CHECK(r[2] == 0x78);
  CHECK(r[3] == 0x77);
}

namespace {
// Loads the address in c0.xy into r1.x/r1.y and waits the 6 cycles a memory instruction needs.
std::vector<Inst> prologue() { return {mov(R(1, 0), k(0)), mov(R(1, 1), k(1)), nop(5)}; }
std::vector<Inst> operator+(std::vector<Inst> a, const std::vector<Inst>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}
}  // namespace

TEST_CASE("ir3 exec: ldg/stg with offsets and 1..4 components of every size; ldg.a/stg.a") {
  Rig rig;
  rig.address(0, kDataVa + 0x100);
  for (unsigned i = 0; i < 0x100; ++i) rig.data()[0x100 + i] = uint8_t(i * 7 + 3);
  auto byte = [&](unsigned i) { return uint32_t(uint8_t(i * 7 + 3)); };
  auto dword = [&](unsigned i) { return byte(i) | byte(i + 1) << 8 | byte(i + 2) << 16 | byte(i + 3) << 24; };
  rig.load(prologue() + std::vector<Inst>{
                            ldg(R(2), R(1), 16, 4),                // r2.x..w = dwords at +16
                            ldg(HR(6, 0), R(1), 2, 2, Type::U16),  // hr6.x/hr6.y (r3.x) = u16 at +2, +4
                            ldg(HR(6, 2), R(1), 1, 2, Type::U8),   // hr6.z/hr6.w (r3.y) = bytes at +1, +2, zero-extended
                            ldg(R(3, 2), R(1), -4, 1, Type::U32),  // a negative offset: 0x100 - 4 (= 0 before the data)
                            movi(R(3, 3), 3),
                            nop(5),
                            scaled(Op::LDG_A, R(4, 0), R(1), R(3, 3), 1, 0, 0, 2),  // (3 + 1) << 2 = +16: r4.x, r4.y
                            scaled(Op::LDG_A, R(4, 2), R(1), R(3, 3), 0, 1, 0, 1),  // 3 << 3 = +24: r4.z
                            sy(nop()),
                            stg(R(1), 0x200, R(2), 4),
                            stg(R(1), 0x210, R(3), 3),
                            stg(R(1), 0x220, HR(6, 1), 1, Type::U16),                 // 2 bytes
                            stg(R(1), 0x223, HR(6, 2), 1, Type::U8),                  // 1 byte
                            scaled(Op::STG_A, kNoReg, R(1), R(3, 3), 2, 1, R(4), 3),  // (3 + 2) << 3 = +40 from 0x100
                            end(),
                        });
  rig.put(0x3f, 0x01020304);  // at 0x100 - 4
  rig.run();
  const size_t out = (0x100 + 0x200) / 4;
  for (unsigned i = 0; i < 4; ++i) CHECK(rig.word(out + i) == dword(16 + 4 * i));
  CHECK(rig.word(out + 4) == ((byte(4) | byte(5) << 8) << 16 | (byte(2) | byte(3) << 8)));
  CHECK(rig.word(out + 5) == (byte(2) << 16 | byte(1)));
  CHECK(rig.word(out + 6) == 0x01020304);
  CHECK(rig.word(out + 8) == ((byte(4) | byte(5) << 8) | byte(1) << 24));  // the u16 at +0x220 and the u8 at +0x223
  CHECK(rig.word((0x100 + 40) / 4) == dword(16));
  CHECK(rig.word((0x100 + 44) / 4) == dword(20));
  CHECK(rig.word((0x100 + 48) / 4) == dword(24));
}

TEST_CASE("ir3 exec: shared memory across a barrier in a 128-fiber workgroup; instructions counted per wave") {
  for (unsigned threadsize : {0u, 1u}) {
    Rig rig;
    rig.footprint(4, threadsize), rig.local(128), rig.ids(R(0), kNoReg, kNoReg);
    rig.load(prologue() + std::vector<Inst>{
                              op(Op::SHL_B, R(2, 0), g(R(0)), imm(2)),                   // 3: byte offset of my slot
                              op(Op::ADD_U, R(2, 1), g(R(0)), imm(100)),                 // 4: my value
                              nop(5),                                                    // 5
                              stl(R(2, 0), 0, R(2, 1), 1),                               // 6
                              bar(),                                                     // 7
                              nops(ss(sy(op(Op::ADD_U, R(2, 2), g(R(0)), imm(1)))), 3),  // 8: my neighbour
                              nops(op(Op::AND_B, R(2, 2), g(R(2, 2)), imm(127)), 3),     // 9
                              op(Op::SHL_B, R(2, 3), g(R(2, 2)), imm(2)),                // 10
                              nop(5),                                                    // 11
                              ldl(R(3, 0), R(2, 3), 0, 1),                               // 12
                              ss(nop()),                                                 // 13
                              scaled(Op::STG_A, kNoReg, R(1), R(0), 0, 0, R(3, 0), 1),   // 14
                              end(),                                                     // 15
                          });
    uint64_t n = rig.run();
    for (unsigned x = 0; x < 128; ++x) CHECK(rig.word(x) == ((x + 1) & 127) + 100);
    CHECK(n == 16 * (threadsize ? 1 : 2));
    auto st = rig.exec.stats();
    CHECK(st.dispatches == 1);
    CHECK(st.workgroups == 1);
    CHECK(st.wave_instructions == n);
    CHECK(st.hazards == 0);
  }
}

TEST_CASE("ir3 exec: local and global atomics, every fiber of several workgroups on one counter") {
  Rig rig;
  rig.footprint(4), rig.local(64), rig.ids(R(0), kNoReg, kNoReg), rig.groups = {4, 1, 1};
  rig.address(2, kDataVa + 0x1000);  // the global counter
  rig.load(prologue() + std::vector<Inst>{
                            mov(R(1, 2), k(2)),
                            mov(R(1, 3), k(3)),
                            movi(R(2, 0), 0),  // the shared counter at offset 0
                            movi(R(2, 1), 1),
                            nop(5),
                            atomic(Op::ATOMIC_ADD, R(2, 2), R(2, 0), R(2, 1), false),  // old values 0..63
                            atomic(Op::ATOMIC_ADD, R(3, 0), R(1, 2), R(2, 1), true),
                            bar(),
                            ss(sy(nop())),
                            ldl(R(2, 3), R(2, 0), 0, 1),
                            ss(nop()),
                            scaled(Op::STG_A, kNoReg, R(1), R(0), 0, 0, R(2, 2), 1),
                            stg(R(1), 0x800, R(2, 3), 1),
                            end(),
                        });
  rig.run();
  std::vector<int> seen(64);
  for (unsigned x = 0; x < 64; ++x) {
    uint32_t old = rig.word(x);
    REQUIRE(old < 64);
    ++seen[old];
  }
  CHECK(std::count(seen.begin(), seen.end(), 1) == 64);  // (the last workgroup's: each old value once)
  CHECK(rig.word(0x800 / 4) == 64);
  CHECK(rig.word(0x1000 / 4) == 4 * 64);
  CHECK(rig.exec.stats().workgroups == 4);
}

TEST_CASE("ir3 exec: every atomic op: cmpxchg takes a (new, compare) pair, min/max by type, inc/dec wrap") {
  Rig rig;
  rig.put(0, 5);
  Inst smax = atomic(Op::ATOMIC_MAX, R(5, 2), R(1), R(3, 0), true, Type::S32);
  Inst smin = atomic(Op::ATOMIC_MIN, R(5, 3), R(1), R(3, 0), true, Type::S32);
  rig.load(prologue() + std::vector<Inst>{
                            movi(R(2, 0), 9),
                            movi(R(2, 1), 5),  // cmpxchg: new 9 if 5
                            movi(R(2, 2), 1),
                            movi(R(2, 3), 5),  // new 1 if 5
                            movi(R(3, 0), uint32_t(-3)),
                            movi(R(3, 1), 7),
                            movi(R(3, 2), 0xff),
                            movi(R(3, 3), 0x100),
                            movi(R(4, 0), 1),
                            movi(R(4, 1), 42),
                            movi(R(4, 2), 2),
                            nop(5),
                            atomic(Op::ATOMIC_CMPXCHG, R(5, 0), R(1), R(2, 0), true),  // 5 -> 9
                            atomic(Op::ATOMIC_CMPXCHG, R(5, 1), R(1), R(2, 2), true),  // 9 stays
                            smax,                                                      // max.s32(9, -3): 9
                            smin,                                                      // min.s32: -3
                            atomic(Op::ATOMIC_MAX, R(6, 0), R(1), R(3, 1), true),      // max.u32(0xfffffffd, 7): stays
                            atomic(Op::ATOMIC_AND, R(6, 1), R(1), R(3, 2), true),      // 0xfd
                            atomic(Op::ATOMIC_OR, R(6, 2), R(1), R(3, 3), true),       // 0x1fd
                            atomic(Op::ATOMIC_XOR, R(6, 3), R(1), R(4, 0), true),      // 0x1fc
                            atomic(Op::ATOMIC_XCHG, R(7, 0), R(1), R(4, 1), true),     // 42
                            atomic(Op::ATOMIC_INC, R(7, 1), R(1), R(4, 0), true),      // 43
                            atomic(Op::ATOMIC_DEC, R(7, 2), R(1), R(4, 0), true),      // 42
                            atomic(Op::ATOMIC_SUB, R(7, 3), R(1), R(4, 2), true),      // 40
                            sy(nop()),
                            stg(R(1), 16, R(5), 4),
                            stg(R(1), 32, R(6), 4),
                            stg(R(1), 48, R(7), 4),
                            end(),
                        });
  rig.run();
  CHECK(rig.word(0) == 40);
  const uint32_t old[] = {5, 9, 9, 9, uint32_t(-3), uint32_t(-3), 0xfd, 0x1fd, 0x1fc, 42, 43, 42};
  for (unsigned i = 0; i < 12; ++i) CHECK_MESSAGE(rig.word(4 + i) == old[i], i);
}

TEST_CASE("ir3 exec: divergence: if/else with (jp) joins, a loop with a per-fiber trip count") {
  Rig rig;
  rig.footprint(4), rig.local(64), rig.ids(R(0), kNoReg, kNoReg);
  rig.load(prologue() + std::vector<Inst>{
                            nops(op(Op::AND_B, R(2, 0), g(R(0)), imm(1)), 3),         // 3
                            cmp(Op::CMPS_U, Cond::EQ, kP0, g(R(2, 0)), imm(0)),       // 4
                            nop(5),                                                   // 5
                            br(3, 0, true),                                           // 6: odd fibers to 9
                            movi(R(3, 0), 111),                                       // 7
                            jump(2),                                                  // 8: to 10
                            jp(movi(R(3, 0), 222)),                                   // 9
                            jp(nops(op(Op::AND_B, R(2, 1), g(R(0)), imm(7)), 3)),     // 10: the join
                            op(Op::ADD_U, R(2, 1), g(R(2, 1)), imm(1)),               // 11: n = (x & 7) + 1
                            movi(R(3, 1), 0),                                         // 12: sum
                            movi(R(3, 2), 0),                                         // 13: i
                            nop(5),                                                   // 14
                            op(Op::ADD_U, R(3, 1), g(R(3, 1)), g(R(3, 2))),           // 15: loop: sum += i
                            nops(op(Op::ADD_U, R(3, 2), g(R(3, 2)), imm(1)), 3),      // 16: ++i
                            cmp(Op::CMPS_U, Cond::LT, kP0, g(R(3, 2)), g(R(2, 1))),   // 17
                            nop(5),                                                   // 18
                            br(-4),                                                   // 19: to 15 while i < n
                            jp(nop(5)),                                               // 20
                            scaled(Op::STG_A, kNoReg, R(1), R(0), 0, 1, R(3, 0), 2),  // 21: (x << 3): r3.x, r3.y
                            end(),
                        });
  uint64_t n = rig.run();
  for (unsigned x = 0; x < 64; ++x) {
    unsigned trips = (x & 7) + 1;
    CHECK(rig.word(2 * x) == (x & 1 ? 222u : 111u));
    CHECK(rig.word(2 * x + 1) == trips * (trips - 1) / 2);
  }
  // One wave: 0..6, both arms (7, 8 and 9), 10..14, the loop 8 times (15..19), 20..22.
  CHECK(n == 7 + 3 + 5 + 8 * 5 + 3);
}

TEST_CASE("ir3 exec: bany and ball branch a whole wave on any / all of its fibers") {
  Rig rig;
  rig.footprint(4), rig.local(128), rig.ids(R(0), kNoReg, kNoReg);  // two waves of 64
  rig.load(prologue() + std::vector<Inst>{
                            cmp(Op::CMPS_U, Cond::EQ, kP0, g(R(0)), imm(0)),       // 3: p0.x only in fiber 0
                            cmp(Op::CMPS_U, Cond::NE, kP0 + 1, g(R(0)), imm(70)),  // 4: p0.y in all but fiber 70
                            nop(5),                                                // 5
                            branch(Op::BANY, 3, 0),                                // 6: wave 0 to 9
                            movi(R(2, 0), 1),                                      // 7
                            jump(2),                                               // 8
                            jp(movi(R(2, 0), 2)),                                  // 9
                            jp(branch(Op::BALL, 3, 1)),                            // 10: wave 0 to 13
                            movi(R(2, 1), 1),                                      // 11
                            jump(2),                                               // 12
                            jp(movi(R(2, 1), 2)),                                  // 13
                            jp(nop(5)),                                            // 14
                            scaled(Op::STG_A, kNoReg, R(1), R(0), 0, 1, R(2), 2),  // 15
                            end(),
                        });
  rig.run();
  for (unsigned x = 0; x < 128; ++x) {
    CHECK(rig.word(2 * x) == (x < 64 ? 2u : 1u));
    CHECK(rig.word(2 * x + 1) == (x < 64 ? 2u : 1u));
  }
}

TEST_CASE("ir3 exec: local ids, workgroup ids (shared registers) and the linear id arrive where the registers say") {
  Rig rig;
  rig.footprint(8), rig.local(4, 2, 2), rig.ids(R(0), reg(48), R(1)), rig.groups = {3, 2, 1};
  rig.address(4, kDataVa);  // c1.xy
  rig.consts[8] = 3, rig.consts[9] = 16;
  rig.load(std::vector<Inst>{
      mov(R(5, 0), k(4)),
      mov(R(5, 1), k(5)),
      mov(R(2, 0), g(R(0, 0))),
      mov(R(2, 1), g(R(0, 1))),
      mov(R(2, 2), g(R(0, 2))),
      mov(R(2, 3), g(reg(48, 0))),
      mov(R(3, 0), g(reg(48, 1))),
      mov(R(3, 1), g(reg(48, 2))),
      mov(R(3, 2), g(R(1))),
      nops(op(Op::MAD_U24, R(3, 3), k(8), g(reg(48, 1)), g(reg(48, 0))), 3),  // wg = x + 3y
      nops(op(Op::MAD_U24, R(4, 0), k(9), g(R(3, 3)), g(R(1))), 3),           // wg * 16 + linear
      nops(op(Op::SHL_B, R(4, 1), g(R(4, 0)), imm(1)), 3),                    // x 2 (8 dwords = 2 x 4)
      op(Op::ADD_U, R(4, 2), g(R(4, 1)), imm(1)),
      nop(5),
      scaled(Op::STG_A, kNoReg, R(5), R(4, 1), 0, 2, R(2), 4),  // << 4
      scaled(Op::STG_A, kNoReg, R(5), R(4, 2), 0, 2, R(3), 3),
      end(),
  });
  rig.run();
  for (unsigned wy = 0; wy < 2; ++wy)
    for (unsigned wx = 0; wx < 3; ++wx)
      for (unsigned f = 0; f < 16; ++f) {
        size_t at = ((wx + 3 * wy) * 16 + f) * 8;
        CHECK(rig.word(at) == f % 4);
        CHECK(rig.word(at + 1) == f / 4 % 2);
        CHECK(rig.word(at + 2) == f / 8);
        CHECK(rig.word(at + 3) == wx);
        CHECK(rig.word(at + 4) == wy);
        CHECK(rig.word(at + 5) == 0);
        CHECK(rig.word(at + 6) == f);
      }
  CHECK(rig.exec.stats().workgroups == 6);
}

TEST_CASE("ir3 exec: hazards: a load read before (sy), an SFU result before (ss), an ALU result inside its delay slots") {
  auto program = [](Inst consumer) {
    return prologue() + std::vector<Inst>{ldg(R(2, 0), R(1), 0, 1), consumer, nop(5), stg(R(1), 4, R(2, 1), 1), end()};
  };
  {
    Rig rig;
    rig.put(0, 41);
    rig.load(program(op(Op::ADD_U, R(2, 1), g(R(2, 0)), imm(1))));
    CHECK_THROWS_WITH_AS(rig.run(),
                         Contains("hazard: r2.x read by `add.u r2.y, r2.x, 1` at instruction 4 before its (sy) wait (written by `ldg.u32 r2.x, "
                                  "g[r1.x], 1` at instruction 3), workgroup (0,0,0) fiber 0"),
                         CpFault);
  }
  {
    Rig rig;
    rig.put(0, 41);
    rig.load(program(sy(op(Op::ADD_U, R(2, 1), g(R(2, 0)), imm(1)))));
    rig.run();
    CHECK(rig.word(1) == 42);
  }
  {  // not strict: counted, and the value is the one meant
    Rig rig(Ir3Options{.strict_hazards = false});
    rig.put(0, 41);
    rig.load(program(op(Op::ADD_U, R(2, 1), g(R(2, 0)), imm(1))));
    rig.run();
    CHECK(rig.word(1) == 42);
    CHECK(rig.exec.stats().hazards == 1);
    CHECK(rig.exec.stats().first_hazard.find("before its (sy) wait") != std::string::npos);
  }
  {  // rcp without (ss)
    Rig rig;
    rig.consts[8] = F(2.0f);
    rig.load(prologue() +
             std::vector<Inst>{mov(R(2, 0), k(8)), nop(5), op(Op::RCP, R(2, 1), g(R(2, 0))), op(Op::ADD_F, R(2, 2), g(R(2, 1)), flut(2)), end()});
    CHECK_THROWS_WITH_AS(
        rig.run(), Contains("r2.y read by `add.f r2.z, r2.y, (1.0)` at instruction 6 before its (ss) wait (written by `rcp r2.y, r2.x`"), CpFault);
  }
  // ALU -> ALU: 3 delay slots.
  // ALU -> ALU: 3 delay slots. (nopN) exists on cat2/cat3 only.
  auto alu = [](std::vector<Inst> between, int producer_nops) {
    auto rig = std::make_unique<Rig>();
    std::vector<Inst> p = {nops(op(Op::ADD_U, R(2, 0), k(8), imm(5)), producer_nops)};
    rig->load(p + between + std::vector<Inst>{op(Op::ADD_U, R(2, 1), g(R(2, 0)), imm(1)), end()});
    return rig;
  };
  CHECK_THROWS_WITH_AS(
      alu({movi(R(3, 0), 1)}, 0)->run(),
      Contains("r2.x read by `add.u r2.y, r2.x, 1` at instruction 2 1 delay slots after `add.u r2.x, c2.x, 5` at instruction 0 wrote it (3 needed)"),
      CpFault);
  CHECK_NOTHROW(alu({movi(R(3, 0), 1)}, 2)->run());                               // (nop2) on the producer: 1 + 2 slots
  CHECK_NOTHROW(alu({movi(R(3, 0), 1), nop(), nop()}, 0)->run());                 // nops between
  CHECK_NOTHROW(alu({nops(op(Op::ADD_U, R(3, 0), k(8), imm(1)), 3)}, 0)->run());  // (nop3) on the one between
  CHECK_THROWS_AS(alu({movi(R(3, 0), 1)}, 1)->run(), CpFault);                    // (nop1): 2 slots
  CHECK_THROWS_AS(alu({rpt(nop(), 1)}, 0)->run(), CpFault);                       // (rpt1)nop: 2 slots
  CHECK_NOTHROW(alu({rpt(nop(), 2)}, 0)->run());                                  // (rpt2)nop: 3 slots
  CHECK_THROWS_WITH_AS(alu({br(1), br(1), br(1), nop(1)}, 0)->run(), Contains("2 delay slots after"), CpFault);  // branches do not count
}

TEST_CASE("ir3 exec: hazards: sizes, mad's third source, non-ALU readers, p0, write-after-write and write-after-read, after a barrier") {
  auto fails = [](std::vector<Inst> p, const char* text) {
    Rig rig;
    p.push_back(end());
    rig.load(prologue() + p);
    CHECK_THROWS_WITH_AS(rig.run(), Contains(text), CpFault);
  };
  auto passes = [](std::vector<Inst> p) {
    Rig rig;
    p.push_back(end());
    rig.load(prologue() + p);
    CHECK_NOTHROW(rig.run());
  };
  // A half write read as the full register: 6 slots.
  fails({mov(HR(4, 0), imm(1), Type::U16, Type::U16), nop(3), op(Op::ADD_U, R(3, 0), g(R(2, 0)), imm(1))}, "4 delay slots after `mov.u16u16 hr4.x");
  passes({mov(HR(4, 0), imm(1), Type::U16, Type::U16), nop(5), op(Op::ADD_U, R(3, 0), g(R(2, 0)), imm(1))});
  // The third source of mad: 1 slot.
  passes({movi(R(2, 0), 1), nop(), op(Op::MAD_U24, R(3, 0), g(R(1, 0)), g(R(1, 1)), g(R(2, 0)))});
  fails({movi(R(2, 0), 1), nop(), op(Op::MAD_U24, R(3, 0), g(R(2, 0)), g(R(1, 1)), g(R(1, 0)))}, "(3 needed)");
  // ALU -> a store's value: 6.
  fails({movi(R(2, 0), 1), nop(4), stg(R(1), 0, R(2, 0), 1)}, "r2.x read by `stg.u32 g[r1.x], r2.x, 1` at instruction 5 5 delay slots after");
  passes({movi(R(2, 0), 1), nop(5), stg(R(1), 0, R(2, 0), 1)});
  // p0 -> a branch: 6.
  fails({cmp(Op::CMPS_U, Cond::EQ, kP0, g(R(1, 0)), g(R(1, 0))), nop(3), br(1)}, "p0.x read by `br p0.x, #1` at instruction 5 4 delay slots after");
  // A load's destination overwritten before (sy).
  fails({ldg(R(2, 0), R(1), 0, 1), movi(R(2, 0), 1)},
        "r2.x written by `mov.u32u32 r2.x, 0x1` at instruction 4 before the (sy) wait for `ldg.u32 r2.x");
  passes({ldg(R(2, 0), R(1), 0, 1), sy(movi(R(2, 0), 1))});
  // A store's source overwritten before (ss).
  fails({movi(R(2, 0), 1), nop(5), stg(R(1), 0, R(2, 0), 1), sy(movi(R(2, 0), 2))},
        "while `stg.u32 g[r1.x], r2.x, 1` at instruction 5 may still read it ((ss) needed)");
  passes({movi(R(2, 0), 1), nop(5), stg(R(1), 0, R(2, 0), 1), ss(movi(R(2, 0), 2))});
  // A load's address overwritten: (ss) or (sy).
  passes({ldg(R(2, 0), R(1), 0, 1), sy(movi(R(1, 0), 2))});
  fails({ldg(R(2, 0), R(1), 0, 1), movi(R(1, 0), 2)}, "(ss) or (sy) needed");
  // a0.x written, then read for an address: 6.
  fails({mov(HR(4, 0), imm(1), Type::S16, Type::S16), nop(5), mov(kA0, h(HR(4, 0)), Type::S16, Type::S16), nop(3), mov(R(2, 1), rel(0))},
        "a0.x read by `mov.u32u32 r2.y, r<a0.x + 0>` at instruction 7 4 delay slots after `mova a0.x, hr4.x`");
  passes({mov(HR(4, 0), imm(1), Type::S16, Type::S16), nop(5), mov(kA0, h(HR(4, 0)), Type::S16, Type::S16), nop(5), mov(R(2, 1), rel(0))});
  // After a barrier: (ss)(sy).
  fails({bar(), nop()}, "`nop` at instruction 4 follows `bar` at instruction 3 without (ss)(sy)");
  passes({bar(), ss(sy(nop()))});
  // An ALU write of a shared register is an (ss) result.
  fails({movi(reg(48, 0), 1), nop(5), op(Op::ADD_U, R(2, 0), g(reg(48, 0)), imm(1))}, "before its (ss) wait");
  passes({movi(reg(48, 0), 1), nop(5), ss(op(Op::ADD_U, R(2, 0), g(reg(48, 0)), imm(1)))});
}

TEST_CASE("ir3 exec: faults name the instruction, its index, the workgroup and the fiber") {
  auto faults = [](auto setup, std::vector<Inst> p, const char* text) {
    Rig rig;
    setup(rig);
    rig.load(prologue() + p + std::vector<Inst>{end()});
    CHECK_THROWS_WITH_AS(rig.run(), Contains(text), CpFault);
  };
  auto none = [](Rig&) {};
  faults([](Rig& r) { r.address(0, 0x1000); }, {ldg(R(2, 0), R(1), 0, 1)},
         "page fault: read of 4 bytes at 0x1000 by `ldg.u32 r2.x, g[r1.x], 1` at instruction 3, workgroup (0,0,0) fiber 0");
  faults([](Rig& r) { r.address(0, kDataVa + kDataBytes - 8); }, {movi(R(2, 0), 1), nop(5), stg(R(1), 4, R(2, 0), 2)},
         "page fault: write of 8 bytes at 0x200ffffc by `stg.u32 g[r1.x+4], r2.x, 2` at instruction 5");
  faults([](Rig& r) { r.address(0, kCodeVa); }, {movi(R(2, 0), 1), nop(5), stg(R(1), 0, R(2, 0), 1)}, "page fault: write of 4 bytes at 0x10000000");
  faults([](Rig& r) { r.footprint(2); }, {movi(R(2, 1), 1)},
         "r2.y written beyond the register footprint (SP_CS_CTRL_REG0.FULLREGFOOTPRINT 2: r0..r1) by `mov.u32u32 r2.y, 0x1` at instruction 3");
  faults([](Rig& r) { r.footprint(2); }, {op(Op::ADD_U, HR(0, 0), h(HR(5, 0)), imm(1, true))}, "hr5.x read beyond the register footprint");
  faults([](Rig& r) { r.constlen(1); }, {mov(R(2, 0), k(16))}, "c4.x is beyond the constants the shader may read (HLSQ_CS_CNTL.CONSTLEN 1: 4 vec4)");
  faults([](Rig& r) { r.shared_kib(2); }, {movi(R(2, 0), 2046), nop(5), stl(R(2, 0), 0, R(2, 0), 1)},
         "shared memory access of 4 bytes at offset 2046 is outside the workgroup's 2048 bytes");
  faults([](Rig& r) { r.shared_kib(2); }, {movi(R(2, 0), 0), nop(5), ldl(R(2, 1), R(2, 0), -4, 1)}, "at offset -4 is outside");
  faults(none, {mem(Op::LDP, R(2, 0), R(1), 0, 0, 1)}, "private memory is not modelled by `ldp.u32 r2.x, p[r1.x], 1` at instruction 3");
  faults(none, {movi(R(2, 0), 2), nop(5), atomic(Op::ATOMIC_ADD, R(2, 1), R(2, 0), R(2, 0), false)}, "a misaligned atomic at shared memory offset 2");
  {  // an undecodable word, and running past SP_CS_INSTRLEN
    Rig rig;
    rig.load_words({encode(nop()), uint64_t{5} << 61});
    CHECK_THROWS_WITH_AS(rig.run(), Contains("the instruction word 0xa000000000000000 does not decode (cat5"), CpFault);
    CHECK_THROWS_WITH_AS(rig.run(), Contains("at instruction 1, workgroup (0,0,0) fiber 0"), CpFault);
    uint64_t ldg5 = (encode(ldg(R(2, 0), R(1), 0, 4)) & ~(uint64_t{7} << 24)) | uint64_t{5} << 24;  // SIZE 5
    rig.load_words({encode(mov(R(1, 0), k(0))), encode(mov(R(1, 1), k(1))), encode(nop(5)), ldg5});
    CHECK_THROWS_WITH_AS(rig.run(), Contains("5 components (1 to 4 are defined) by `ldg.u32 r2.x, g[r1.x], 5` at instruction 3"), CpFault);
    rig.load_words({encode(nop())});
    CHECK_THROWS_WITH_AS(rig.run(), Contains("ran past the end of the shader (SP_CS_INSTRLEN 1 x 16 instructions) at instruction 16"), CpFault);
  }
  {  // a barrier some fibers never reach
    Rig rig;
    rig.footprint(4), rig.local(8), rig.ids(R(0), kNoReg, kNoReg);
    rig.load({nops(op(Op::AND_B, R(2, 0), g(R(0)), imm(1)), 3), cmp(Op::CMPS_U, Cond::EQ, kP0, g(R(2, 0)), imm(0)), nop(5), br(2), end(), bar(),
              ss(sy(end()))});
    CHECK_THROWS_WITH_AS(rig.run(), Contains("barrier reached by only part of the workgroup: 4 of 8 fibers wait at it"), CpFault);
  }
  {  // registers the dispatch cannot have
    Rig rig;
    rig.footprint(4, 0, false);
    rig.load({end()});
    CHECK_THROWS_WITH_AS(rig.run(), Contains("MERGEDREGS is 0"), CpFault);
    rig.footprint(4), rig.local(1024, 2);
    CHECK_THROWS_WITH_AS(rig.run(), Contains("a workgroup of 1024x2x1 fibers"), CpFault);
  }
  {  // a fault in a later workgroup names it
    Rig rig;
    rig.groups = {3, 1, 1}, rig.ids(kNoReg, reg(48), kNoReg);
    rig.load(prologue() + std::vector<Inst>{cmp(Op::CMPS_U, Cond::EQ, kP0, g(reg(48)), imm(2)), nop(5), br(2), end(),
                                            mem(Op::LDP, R(2, 0), R(1), 0, 0, 1), end()});
    CHECK_THROWS_WITH_AS(rig.run(), Contains("workgroup (2,0,0) fiber 0"), CpFault);
  }
}

TEST_CASE("ir3 exec: a dispatch stops when cancelled; workgroups run on two host threads") {
  Rig rig(Ir3Options{.threads = 2});
  rig.groups = {8, 1, 1};
  rig.load({jump(0)});  // forever
  std::atomic<bool> cancel{false};
  std::thread t([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    cancel = true;
  });
  rig.run(&cancel);
  t.join();
  CHECK(rig.exec.stats().workgroups == 0);
}

TEST_CASE("ir3 exec: CP_EXEC_CS from an indirect buffer runs on the executor with the registers and constants the packets set") {
  Rig rig;
  namespace pm4 = hw::qcom::pm4;
  namespace ls = pm4::CP_LOAD_STATE6_0;
  rig.footprint(4), rig.local(64), rig.ids(R(0), reg(48), kNoReg);
  rig.load({
      mov(R(1, 0), k(0)),
      mov(R(1, 1), k(1)),
      nops(op(Op::MAD_U24, R(2, 0), k(4), g(reg(48)), g(R(0))), 3),  // wg.x * 64 + local x
      nop(5),
      scaled(Op::STG_A, kNoReg, R(1), R(2, 0), 0, 0, R(2, 0), 1),
      end(),
  });
  // Every register the rig holds (type-4 writes), c0.xy = `out` and c1.x = 64 (CP_LOAD_STATE6_FRAG), 3 workgroups.
  auto ib = [&](uint64_t out) {
    std::vector<uint32_t> w;
    for (auto [offset, value] : rig.regs) w.push_back(hw::qcom::type4_header(offset, 1)), w.push_back(value);
    w.push_back(hw::qcom::type7_header(pm4::CP_LOAD_STATE6_FRAG, 3 + 8));
    w.push_back(ls::STATE_TYPE.set(0, pm4::ST6_CONSTANTS) | ls::STATE_SRC.set(0, pm4::SS6_DIRECT) | ls::STATE_BLOCK.set(0, pm4::SB6_CS_SHADER) |
                ls::NUM_UNIT.set(0, 2));
    w.insert(w.end(), {0, 0, uint32_t(out), uint32_t(out >> 32), 0, 0, 64, 0, 0, 0});
    w.push_back(hw::qcom::type7_header(pm4::CP_EXEC_CS, 4));
    w.insert(w.end(), {0, 3, 1, 1});
    std::memcpy(rig.data() + 0x8000, w.data(), w.size() * 4);
    return w.size();
  };
  emu::qcom::CommandProcessor cp(rig.memory, &rig.exec);
  std::atomic<bool> cancel{false};
  REQUIRE(cp.run(kDataVa + 0x8000, ib(kDataVa), cancel));
  for (unsigned i = 0; i < 3 * 64; ++i) CHECK(rig.word(i) == i);
  CHECK(cp.instructions() == 3 * 6);
  CHECK(rig.exec.stats().dispatches == 1);
  // A fault of the shader is the CP's fault, with the instruction in it.
  CHECK_THROWS_WITH_AS(cp.run(kDataVa + 0x8000, ib(0x1000), cancel), Contains("(CP_EXEC_CS): page fault: write of 4 bytes at 0x1000 by `stg.a.u32"),
                       CpFault);
}
