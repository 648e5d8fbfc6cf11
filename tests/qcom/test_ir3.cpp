// Adreno ir3 machine code (hw/qcom/ir3.h): instruction words from real a630 shaders — the encodings Mesa's
// disassembler test lists, with the text they stand for — decode to that text and encode back to the
// same word; forms ugpu does not use are refused with a reason; every op round-trips; fields that
// cannot hold a value are errors.
#include <doctest/doctest.h>

#include "common/error.h"
#include "hw/qcom/ir3.h"

using namespace ugpu;
using namespace ugpu::hw::qcom::ir3;
using doctest::Contains;

namespace {
struct Vector {
  uint64_t word;
  const char* text;
};
// a630 words and their disassembly (Mesa: src/freedreno/ir3/tests/disasm.c).
const Vector kVectors[] = {
    {0x0000000000000000ull, "nop"},
    {0x0000020000000000ull, "(rpt2)nop"},
    {0x0300000000000000ull, "end"},
    {0x0080000000000004ull, "br p0.x, #4"},
    {0x00800000fffffffcull, "br p0.x, #-4"},
    {0x0090000000000003ull, "br !p0.x, #3"},
    {0x0090602000000007ull, "brao !p0.x, !p0.y, #7"},
    {0x2024400000000020ull, "mov.f32f32 r0.x, c8.x"},
    {0x2020000000000020ull, "mov.f16f16 hr0.x, hc8.x"},
    {0x2015000000000000ull, "cov.s32s16 hr0.x, r0.x"},
    {0x2015600400000c11ull, "(ul)mov.s32s32 r1.x, c<a0.x + 17>"},
    {0x201100f400000000ull, "mova a0.x, hr0.x"},
    {0x2024490500000410ull, "(rpt1)mov.f32f32 r1.y, (r)c260.x"},
    {0x205100050000ffffull, "mov.s16s16 hr1.y, -1"},
    {0x2040000500003900ull, "mov.f16f16 hr1.y, h(0.625000)"},
    {0x204440003f800000ull, "mov.f32f32 r0.x, (1.000000)"},
    {0x401040020c210001ull, "add.f hr0.z, r0.y, c<a0.x + 33>"},
    {0x40b8080410408004ull, "(nop3) cmps.f.lt r1.x, (abs)r1.x, c16.x"},
    {0x4348080100008001ull, "(nop3) absneg.s hr0.y, (abs)hr0.y"},
    {0x4228080727ff0000ull, "(nop3) add.s hr1.w, hr0.x, h(-1)"},
    {0x40a500f82c000004ull, "cmps.f.ne p0.x, hr1.x, h(0.0)"},
    {0x438000f820010009ull, "and.b p0.x, hr2.y, h(1)"},
    {0x4008090250200006ull, "(rpt1)add.f hr0.z, (r)hr1.z, (neg)(r)hc8.x"},
    {0x42380c0100040001ull, "(sat)(nop3) add.s r0.y, r0.y, r1.x"},
    {0x4248000048801086ull, "(nop2) sub.u hr0.x, hc33.z, (neg)hr<a0.x + 128>"},
    {0x46b0000100001020ull, "clz.b r0.y, c8.x"},
    {0x42b400f820010004ull, "cmps.s.eq p0.x, r1.x, 1"},
    {0x4010000768020008ull, "add.f r1.w, r2.x, (neg)(1.0)"},
    {0x506000042c0b0004ull, "(sy)mul.f hr1.x, hr1.x, h(4.0)"},
    {0x6600000010421041ull, "sel.f16 hr0.x, hc16.y, hr0.x, hc16.z"},
    {0x64848109109a9099ull, "(rpt1)sel.b32 r2.y, c38.y, (r)r2.y, c38.z"},
    {0x6382000510315030ull, "mad.f32 r1.y, (neg)c12.x, r1.x, c12.y"},
    {0x6205000900091000ull, "mad.u24 r2.y, c0.x, r2.z, r2.y"},
    {0x6182800800081033ull, "madsh.m16 r2.x, c12.w, r1.y, r2.x"},
    {0x646084c31fff300aull, "shrm r48.w, 10, r48.y, 4095"},
    {0x65ae0c5c0002a001ull, "(nop3) shlg r23.x, r0.y, r23.x, r0.z"},
    {0x65900820100cb008ull, "(nop3) shlg hr8.x, 8, hr8.x, 12"},
    {0x8010000a00000003ull, "rcp r2.z, r0.w"},
    {0xc00600060181800full, "ldg.u32 r1.z, g[r1.z+7], 1"},
    {0xc006000601818001ull, "ldg.u32 r1.z, g[r1.z], 1"},
    {0xc00600030180c269ull, "ldg.u32 r0.w, g[r0.w+308], 1"},
    {0xc00400030180c269ull, "ldg.u16 hr0.w, g[r0.w+308], 1"},
    {0xc006000601c18017ull, "ldg.a.u32 r1.z, g[r1.z+(r2.w)<<2], 1"},
    {0xc002000703c1420full, "ldg.a.f32 r1.w, g[r1.y+(r1.w+1)<<2], 3"},
    {0xc0ca050503800042ull, "stg.s32 g[r0.z+5], r8.y, 3"},
    {0xc0ca050003800042ull, "stg.s32 g[r0.z], r8.y, 3"},
    {0xc0ca053103800242ull, "stg.s32 g[r0.z+305], r8.y, 3"},
    {0xc0d2090602800004ull, "stg.a.f32 g[r1.x+(r1.z)<<2], r0.z, 2"},
    {0xc0d6110401800228ull, "stg.a.u32 g[r2.x+(r1.x+1)<<2], r5.x, 1"},
    {0xc106050001800008ull, "stl.u32 l[r0.z], r1.x, 1"},
    {0xc046000101804001ull, "ldl.u32 r0.y, l[r0.y], 1"},
    {0xc042000201808019ull, "ldl.f32 r0.z, l[r0.z+12], 1"},
    {0xc102171004800000ull, "stl.f32 l[r2.w+16], r0.x, 4"},
    {0xc086001803820001ull, "ldp.u32 r6.x, p[r2.x], 3"},
    {0xc1425b5001803e02ull, "stp.f32 p[r11.y-176], r0.y, 1"},
    {0xc1465b000180022aull, "stp.u32 p[r11.y+256], r5.y, 1"},
    {0xc416000202000001ull, "atomic.g.add.untyped.1d.u32.1.g r0.z, r0.x, r0.z"},
    {0xd5c6000303008001ull, "(sy)atomic.max.untyped.1d.u32.1.l r0.w, l[r0.z], r0.w"},
    {0xe0fa000000000000ull, "fence.g.l.r.w"},
    {0xe09a000000000000ull, "fence.r.w"},
    {0xf042000000000000ull, "(sy)bar.g"},
};
// Real a630 words of forms ugpu neither emits nor executes.
const Vector kRefused[] = {
    {0x0001000000000000ull, "(eq)nop"},
    {0x0280000000000000ull, "kill p0.x"},
    {0x0282000000000014ull, "getone #20"},
    {0x2017400400000008ull, "mov.s32s32 r<a0.x + 4>, r2.x"},
    {0xc6e620053f800008ull, "shfl.xor.u32 r1.y, r1.x, 63"},
    {0xc6e6400705000004ull, "shfl.up.u32 r1.w, r0.z, r1.y"},
    {0xc026000100c98000ull, "getfiberid.u32 r0.y"},
};
}  // namespace

TEST_CASE("ir3: real a630 instruction words decode to their text and encode back to the same word") {
  for (const Vector& v : kVectors) {
    std::string why;
    auto i = decode(v.word, &why);
    REQUIRE_MESSAGE(i, v.text, ": ", why);
    CHECK(format(*i) == v.text);
    CHECK_MESSAGE(encode(*i) == v.word, v.text);
  }
}

TEST_CASE("ir3: forms ugpu does not use are refused with a reason, never misread") {
  for (const Vector& v : kRefused) {
    std::string why;
    CHECK_MESSAGE(!decode(v.word, &why), v.text);
    CHECK_MESSAGE(!why.empty(), v.text);
  }
  std::string why;
  CHECK(!decode(uint64_t{5} << 61, &why));
  CHECK_MESSAGE(why.find("cat5") != std::string::npos, why);
  CHECK(disassemble({0x0300000000000000ull, uint64_t{5} << 61}).find("not decoded: cat5") != std::string::npos);
}

TEST_CASE("ir3: every op round-trips through its encoding with each flag") {
  for (size_t k = 0; k < size_t(Op::COUNT); ++k) {
    const OpInfo& o = info(Op(k));
    Inst i;
    i.op = o.op;
    switch (o.cat) {
      case 0: i.target = -3, i.comp1 = 2, i.inv1 = true, i.comp2 = 1; break;
      case 1: i.dst = reg(3, 1), i.src_type = Type::F32, i.dst_type = Type::S32, i.src[0] = Src::cnst(17); break;
      case 2:
      case 4:
        i.dst = reg(5, 2), i.src[0] = Src::gpr(reg(1, 3)), i.src[1] = Src::immed(-7);
        if (o.srcs == 1) i.src[1] = {};
        break;
      case 3:
        i.dst = reg(7), i.dst_half = o.half, i.src[0] = Src::gpr(reg(2), o.half), i.src[1] = Src::gpr(reg(3), o.half),
        i.src[2] = Src::gpr(reg(4), o.half);
        break;
      case 6:
        i.dst = reg(9), i.src[0] = Src::gpr(reg(2)), i.src[1] = Src::gpr(reg(4)), i.src[2] = Src::gpr(reg(6)), i.components = 3, i.type = Type::S32;
        i.offset = (o.op == Op::LDG_A || o.op == Op::STG_A) ? 2 : -100, i.shift = (o.op == Op::LDG_A || o.op == Op::STG_A) ? 1 : 0;
        if (o.name[0] == 's' && o.op != Op::ATOMIC_SUB) i.dst = kNoReg;
        i.global = o.op == Op::ATOMIC_CMPXCHG;
        break;
      case 7: i.g = true, i.wr = true; break;
    }
    if (o.op == Op::JUMP) i.comp1 = 0, i.inv1 = false, i.comp2 = 0;
    if (o.op == Op::BR || o.op == Op::BANY || o.op == Op::BALL) i.comp2 = 0;
    if (o.op == Op::NOP || o.op == Op::END) i.target = 0, i.comp1 = 0, i.inv1 = false, i.comp2 = 0;
    for (int flags = 0; flags < 4; ++flags) {
      Inst f = i;
      f.sy = flags & 1, f.jp = flags & 2;
      if (o.cat != 6) f.ss = flags & 1;
      uint64_t w = encode(f);
      std::string why;
      auto d = decode(w, &why);
      REQUIRE_MESSAGE(d, o.name, ": ", why);
      CHECK_MESSAGE(encode(*d) == w, o.name);
      CHECK_MESSAGE(format(*d) == format(f), o.name, ": ", format(*d), " vs ", format(f));
      CHECK(d->op == o.op);
    }
  }
}

TEST_CASE("ir3: a float-table immediate keeps its own precision: the register sources set the FULL bit") {
  // add.u r24.x, h(4.0), r1.x: a half float immediate beside full registers (found by fuzz-ir3).
  auto i = decode(0x4210006000042c0bull);
  REQUIRE(i);
  CHECK(format(*i) == "add.u r24.x, h(4.0), r1.x");
  CHECK(encode(*i) == 0x4210006000042c0bull);
}

TEST_CASE("ir3: fields that cannot hold a value are errors naming the instruction") {
  Inst ldg;
  ldg.op = Op::LDG, ldg.dst = reg(1), ldg.src[0] = Src::gpr(reg(2));
  ldg.offset = 4096;
  CHECK_THROWS_WITH_AS(encode(ldg), Contains("ldg: offset 4096 does not fit 13 signed bits"), Error);
  ldg.offset = -4096;
  CHECK(decode(encode(ldg))->offset == -4096);
  Inst add;
  add.op = Op::ADD_U, add.dst = reg(1), add.src[0] = Src::gpr(reg(2)), add.src[1] = Src::immed(1024);
  CHECK_THROWS_WITH_AS(encode(add), Contains("immediate 1024 does not fit 11 signed bits"), Error);
  add.src[1] = Src::immed(1), add.nop = 2, add.rpt = 1;
  CHECK_THROWS_WITH_AS(encode(add), Contains("(nop) and (rpt) share bits"), Error);
  add.rpt = 0, add.nop = 4;
  CHECK_THROWS_WITH_AS(encode(add), Contains("at most 3"), Error);
  Inst stg;
  stg.op = Op::STG, stg.src[0] = Src::gpr(reg(1)), stg.src[2] = Src::cnst(4);
  CHECK_THROWS_WITH_AS(encode(stg), Contains("the value must be a register"), Error);
  stg.src[2] = Src::gpr(reg(3)), stg.ss = true;
  CHECK_THROWS_WITH_AS(encode(stg), Contains("no (ss) bit"), Error);
  Inst mad;
  mad.op = Op::MAD_F32, mad.dst = reg(1), mad.src[0] = Src::gpr(reg(1)), mad.src[1] = Src::cnst(4), mad.src[2] = Src::gpr(reg(2));
  CHECK_THROWS_WITH_AS(encode(mad), Contains("second source must be a register"), Error);
}

TEST_CASE("ir3: sync classes: SFU and shared-memory results wait with (ss), global loads with (sy), ALU with delay slots") {
  auto cls = [](uint64_t w) { return result_class(*decode(w)); };
  CHECK(cls(0x8010000a00000003ull) == SyncClass::Ss);  // rcp
  CHECK(cls(0xc00600060181800full) == SyncClass::Sy);  // ldg
  CHECK(cls(0xc046000101804001ull) == SyncClass::Ss);  // ldl
  CHECK(cls(0xc086001803820001ull) == SyncClass::Sy);  // ldp
  CHECK(cls(0xc416000202000001ull) == SyncClass::Sy);  // atomic.g
  CHECK(cls(0xd5c6000303008001ull) == SyncClass::Ss);  // local atomic
  CHECK(cls(0x4210000000020001ull) == SyncClass::Alu);
  CHECK(cls(0xc0ca050503800042ull) == SyncClass::None);  // stg
  CHECK(flut_value(2) == 1.0f);
  CHECK(std::string(flut_name(5)) == "pi");
}
