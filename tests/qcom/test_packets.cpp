// The Adreno CP packet headers (hw/qcom/packets.h) and the generated tables: parity as the CP checks
// it, every field round-tripping through a header, single-bit damage caught, limits refused, and the
// stream decoder naming packets and registers from the tables (and refusing what they do not know).
#include <doctest/doctest.h>

#include <bit>

#include "common/error.h"
#include "hw/qcom/a6xx_regs.h"
#include "hw/qcom/kgsl.h"
#include "hw/qcom/packets.h"
#include "hw/qcom/pm4_opcodes.h"

using namespace ugpu;
using namespace ugpu::hw::qcom;
using doctest::Contains;

TEST_CASE("qcom: the odd-parity bit makes every field's set bits odd") {
  for (uint32_t v = 0; v < (1u << 18); ++v) CHECK_MESSAGE((std::popcount(v) + odd_parity(v)) % 2 == 1, v);
  CHECK(odd_parity(0) == 1);
  CHECK(odd_parity(1) == 0);
  CHECK(odd_parity(3) == 1);
}

TEST_CASE("qcom: type-7 and type-4 headers as the CP reads them") {
  // CP_NOP with no payload: type 7, count 0 (parity 1 at bit 15), opcode 0x10 (one bit: parity 0).
  CHECK(type7_header(pm4::CP_NOP, 0) == 0x70108000u);
  // CP_EXEC_CS with 4 dwords: opcode 0x33 (four bits: parity 1 at bit 23), count 4 (one bit: parity 0).
  CHECK(type7_header(pm4::CP_EXEC_CS, 4) == (0x70000000u | 4u | 0x33u << 16 | 1u << 23));
  // One register at 0xb990 (HLSQ_CS_NDRANGE_0: seven bits set, parity 0), count 1 (parity 0); two at
  // 0xa9b4 (SP_CS_OBJ_START: eight bits, parity 1 at bit 27), count 3 (two bits, parity 1 at bit 7).
  CHECK(type4_header(a6xx::HLSQ_CS_NDRANGE_0.offset, 1) == (0x40000000u | 1u | 0xb990u << 8));
  CHECK(type4_header(a6xx::SP_CS_OBJ_START.offset, 3) == (0x40000000u | 3u | 1u << 7 | 0xa9b4u << 8 | 1u << 27));
  CHECK_THROWS_WITH_AS(type4_header(0x40000, 1), Contains("at most 127 registers"), Error);
  CHECK_THROWS_WITH_AS(type4_header(0x100, 128), Contains("at most 127 registers"), Error);
  CHECK_THROWS_WITH_AS(type7_header(pm4::CP_NOP, 0x4000), Contains("at most 16383 dwords"), Error);
}

TEST_CASE("qcom: every header field round-trips, and any single flipped bit is caught or reads as another packet") {
  for (uint32_t count : {0u, 1u, 2u, 13u, 127u}) {
    for (uint32_t reg : {0u, 0x980u, 0xa9b0u, 0xb990u, 0x3ffffu}) {
      uint32_t h = type4_header(reg, count);
      auto r = read_header(h);
      REQUIRE(r);
      CHECK(!r->type7);
      CHECK(r->reg == reg);
      CHECK(r->count == count);
      for (int bit = 0; bit < 32; ++bit) {
        auto d = read_header(h ^ (1u << bit));
        CHECK_MESSAGE((!d || d->type7 != r->type7 || d->reg != reg || d->count != count), "bit ", bit, " of ", h);
        if (bit < 28) CHECK_MESSAGE(!d, "a flip inside the fields must break their parity: bit ", bit);
      }
    }
  }
  for (const pm4::OpcodeName& o : pm4::kOpcodes)
    for (uint32_t count : {0u, 3u, 4096u, 16383u}) {
      uint32_t h = type7_header(o.opcode, count);
      auto r = read_header(h);
      REQUIRE(r);
      CHECK(r->type7);
      CHECK(r->opcode == o.opcode);
      CHECK(r->count == count);
      for (int bit = 0; bit < 24; ++bit) CHECK_MESSAGE(!read_header(h ^ (1u << bit)), "bit ", bit, " of ", std::string(o.name));
    }
  std::string why;
  CHECK(!read_header(0x12345678, &why));
  CHECK(why.find("not a type-4 or type-7 header") != std::string::npos);
}

TEST_CASE("qcom: the generated tables hold the compute path's opcodes and registers at their A6XX values") {
  // Values read from linux-source-6.12's adreno_pm4.xml and a6xx.xml (and the offsets tinygrad's
  // ops_qcom.py programs).
  CHECK(pm4::CP_EVENT_WRITE == 0x46);
  CHECK(pm4::CP_EXEC_CS == 0x33);
  CHECK(pm4::CP_WAIT_REG_MEM == 0x3c);
  CHECK(pm4::CP_LOAD_STATE6_FRAG == 0x34);
  CHECK(pm4::CACHE_FLUSH_TS == 4);
  CHECK(pm4::CACHE_INVALIDATE == 49);
  CHECK(a6xx::CP_ALWAYS_ON_COUNTER.offset == 0x980);
  CHECK(a6xx::CP_ALWAYS_ON_COUNTER.dwords == 2);
  CHECK(a6xx::SP_CS_CTRL_REG0.offset == 0xa9b0);
  CHECK(a6xx::HLSQ_CS_KERNEL_GROUP_X.offset == 0xb999);
  CHECK(a6xx::SP_CS_IBO.offset == 0xa9f2);
  namespace nd = a6xx::HLSQ_CS_NDRANGE_0_fields;
  uint32_t v = nd::KERNELDIM.set(nd::LOCALSIZEX.set(0, 63), 3);
  CHECK(nd::LOCALSIZEX.get(v) == 63);
  CHECK(nd::KERNELDIM.get(v) == 3);
  CHECK(nd::LOCALSIZEY.get(v) == 0);
  CHECK(a6xx::SP_CS_CTRL_REG0_fields::FULLREGFOOTPRINT.mask() == 0x1f80u);
}

TEST_CASE("qcom: the stream decoder names packets and registers, and refuses what it cannot read") {
  std::vector<uint32_t> s = {type4_header(a6xx::HLSQ_CS_KERNEL_GROUP_X.offset, 3),
                             4,
                             2,
                             1,
                             type7_header(pm4::CP_EXEC_CS, 4),
                             0,
                             4,
                             2,
                             1,
                             type4_header(0x1234, 1),
                             7,
                             type7_header(pm4::CP_NOP, 0)};
  std::string text = describe_stream(s);
  CHECK(text.find("HLSQ_CS_KERNEL_GROUP_X = 0x4\nHLSQ_CS_KERNEL_GROUP_Y = 0x2\nHLSQ_CS_KERNEL_GROUP_Z = 0x1\n") != std::string::npos);
  CHECK(text.find("CP_EXEC_CS 4: 0x0 0x4 0x2 0x1\n") != std::string::npos);
  CHECK(text.find("register 0x1234 = 0x7\n") != std::string::npos);
  CHECK(text.find("CP_NOP 0:\n") != std::string::npos);
  CHECK(register_name(a6xx::SP_CS_OBJ_START.offset + 1) == "SP_CS_OBJ_START_HI");
  CHECK_THROWS_WITH_AS(describe_stream(std::vector<uint32_t>{type7_header(pm4::CP_EXEC_CS, 4), 0}), Contains("runs past the end"), Error);
  CHECK_THROWS_WITH_AS(describe_stream(std::vector<uint32_t>{type7_header(0x7e, 0)}), Contains("not in the A6XX tables"), Error);
  CHECK_THROWS_WITH_AS(describe_stream(std::vector<uint32_t>{0x70108000u ^ 0x8000u}), Contains("dword 0"), Error);
}

TEST_CASE("qcom: the kgsl ABI: request numbers as the kernel decodes them, and the flags the context and allocations take") {
  namespace k = hw::qcom::kgsl;
  // A request carries direction, size, type and number: the kernel's dispatch reads them back.
  for (uint32_t r : {k::kDeviceGetProperty, k::kDrawctxtCreate, k::kGpuobjAlloc, k::kGpuCommand, k::kMapUserMem}) {
    CHECK((r >> 8 & 0xff) == k::kIocType);
    CHECK((r >> 30) == 3);  // read and write: these return results in the struct
  }
  CHECK((k::kGpuCommand >> 16 & 0x3fff) == sizeof(k::GpuCommand));
  CHECK((k::kWaitTimestampCtxtid >> 30) == 1);
  // The context tinygrad creates: preamble, no GMEM, power constraint, no fault tolerance, priority 8,
  // fine-grained preemption.
  uint32_t flags = k::kContextPreamble | k::kContextNoGmemAlloc | k::kContextPwrConstraint | k::kContextNoFaultTolerance |
                   8u << k::kContextPriorityShift | k::kContextPreemptFinegrain << k::kContextPreemptStyleShift;
  CHECK(flags == 0x04008A12u);
  CHECK(((flags & k::kContextPriorityMask) >> k::kContextPriorityShift) == 8);
}
