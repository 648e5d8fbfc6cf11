// hw/nv: pushbuffer method headers and their reader, method descriptions, GPFIFO entries, USERD.
#include <doctest/doctest.h>

#include <random>
#include <vector>

#include "hw/nv/methods.h"

using namespace ugpu;
namespace nv = ugpu::hw::nv;

namespace {

std::vector<nv::MethodWrite> read_all(const std::vector<uint32_t>& w, std::string* error = nullptr) {
  nv::PushbufferReader r(w);
  std::vector<nv::MethodWrite> out;
  nv::MethodWrite m;
  while (r.next(m)) out.push_back(m);
  if (error) *error = r.error();
  return out;
}

}  // namespace

TEST_CASE("pushbuffer: method headers encode the NV_FIFO_DMA fields") {
  // SEC_OP 1 (incrementing), 5 dwords, subchannel 0, SEM_ADDR_LO (0x5c): the header tinygrad's
  // `(2 << 28) | (5 << 16) | (0 << 13) | (0x5c >> 2)` builds.
  CHECK(nv::method_header(nv::SecOp::Inc, 0, nv::host::SEM_ADDR_LO, 5) == 0x20050017u);
  CHECK(nv::method_header(nv::SecOp::Inc, 1, nv::compute::SEND_PCAS_A, 1) == (0x20010000u | 1u << 13 | 0x2b4u >> 2));
  CHECK(nv::method_header(nv::SecOp::NonInc, 4, nv::copy::LAUNCH_DMA, 2) == (0x60020000u | 4u << 13 | 0xc0u));
  CHECK(nv::method_header(nv::SecOp::Immediate, 0, nv::host::NON_STALL_INTERRUPT, 0x1fff) == (0x9fff0000u | 0x8u));
  CHECK_THROWS_WITH_AS(nv::method_header(nv::SecOp::Inc, 8, 0, 1), doctest::Contains("subchannel 8"), Error);
  CHECK_THROWS_WITH_AS(nv::method_header(nv::SecOp::Inc, 0, 0x4000, 1), doctest::Contains("dword address below 0x4000"), Error);
  CHECK_THROWS_WITH_AS(nv::method_header(nv::SecOp::Inc, 0, 0x102, 1), doctest::Contains("0x102"), Error);
  CHECK_THROWS_WITH_AS(nv::method_header(nv::SecOp::Inc, 0, 0x100, 0x2000), doctest::Contains("8192 data dwords"), Error);
}

TEST_CASE("pushbuffer: the reader expands incrementing, non-incrementing, increment-once and immediate methods") {
  std::vector<uint32_t> w = {
      nv::method_header(nv::SecOp::Inc, 0, nv::host::SEM_ADDR_LO, 3), 10, 11, 12,
      0,  // a NOP dword
      nv::method_header(nv::SecOp::NonInc, 4, nv::copy::LAUNCH_DMA, 2), 20, 21,
      nv::method_header(nv::SecOp::OneInc, 1, nv::compute::SEND_PCAS_A, 3), 30, 31, 32,
      nv::method_header(nv::SecOp::Immediate, 2, nv::host::NON_STALL_INTERRUPT, 7),
      nv::method_header(nv::SecOp::Inc, 3, 0x200, 0),  // no data: nothing written
      nv::method_header(nv::SecOp::EndSegment, 0, 0, 0), nv::method_header(nv::SecOp::Inc, 0, 0x8, 1), 99,  // after the end: unread
  };
  std::string err;
  auto m = read_all(w, &err);
  CHECK(err.empty());
  REQUIRE(m.size() == 9);
  uint16_t methods[] = {0x5c, 0x60, 0x64, 0x300, 0x300, 0x2b4, 0x2b8, 0x2b8, 0x20};
  uint32_t values[] = {10, 11, 12, 20, 21, 30, 31, 32, 7};
  uint8_t subch[] = {0, 0, 0, 4, 4, 1, 1, 1, 2};
  uint32_t at[] = {1, 2, 3, 6, 7, 9, 10, 11, 12};
  for (size_t i = 0; i < m.size(); ++i) {
    CAPTURE(i);
    CHECK(m[i].method == methods[i]);
    CHECK(m[i].value == values[i]);
    CHECK(m[i].subchannel == subch[i]);
    CHECK(m[i].dword == at[i]);
  }
}

TEST_CASE("pushbuffer: malformed streams are errors naming the header and its dword") {
  std::string err;
  read_all({nv::method_header(nv::SecOp::Inc, 0, 0x100, 4), 1, 2}, &err);
  CHECK(err.find("announces 4 data dwords, but the segment has 2 left") != std::string::npos);
  CHECK(err.find("at dword 0") != std::string::npos);
  read_all({0, 0, 0xc0010040u, 5}, &err);  // SEC_OP 6
  CHECK(err.find("dword 2: SEC_OP 6 is reserved") != std::string::npos);
  read_all({0x00010001u}, &err);  // SEC_OP 0 that is not a NOP: a subdevice-mask operation
  CHECK(err.find("subdevice-mask and legacy") != std::string::npos);
  // Random streams never make the reader read past the end or loop.
  std::mt19937 rng(7);
  for (int t = 0; t < 2000; ++t) {
    std::vector<uint32_t> w(rng() % 16);
    for (auto& x : w) x = rng() % 3 ? rng() : nv::method_header(static_cast<nv::SecOp>(rng() % 8), rng() % 8, (rng() % 0x1000) * 4, rng() % 20);
    nv::PushbufferReader r(w);
    nv::MethodWrite mw;
    size_t n = 0;
    while (r.next(mw)) REQUIRE(++n <= w.size());
    CHECK(r.position() <= w.size());
  }
}

TEST_CASE("pushbuffer: descriptions follow SET_OBJECT bindings and name fields") {
  std::vector<uint32_t> w = {
      nv::method_header(nv::SecOp::Inc, 1, nv::host::SET_OBJECT, 1), 0xcbc0,
      nv::method_header(nv::SecOp::Inc, 4, nv::host::SET_OBJECT, 1), 0xc8b5,
      nv::method_header(nv::SecOp::Inc, 1, nv::compute::INVALIDATE_SHADER_CACHES_NO_WFI, 1), 0x1011,
      nv::method_header(nv::SecOp::Inc, 4, nv::copy::LAUNCH_DMA, 1), 0x182,
      nv::method_header(nv::SecOp::Inc, 0, nv::host::SEM_EXECUTE, 1), 3u | nv::host::sem::kPayload64,
      nv::method_header(nv::SecOp::Inc, 2, 0x1234, 1), 5,
  };
  std::string d = nv::describe_pushbuffer(w);
  CHECK(d.find("subch 1 SET_OBJECT nvclass=0xcbc0") != std::string::npos);
  CHECK(d.find("INVALIDATE_SHADER_CACHES_NO_WFI instruction=0x1 global_data=0x1 constant=0x1") != std::string::npos);
  CHECK(d.find("LAUNCH_DMA data_transfer_type=0x2 src_pitch=0x1 dst_pitch=0x1") != std::string::npos);
  CHECK(d.find("SEM_EXECUTE operation=0x3(ACQ_CIRC_GEQ) payload_size_64=0x1") != std::string::npos);
  CHECK(d.find("subch 2 unbound method 0x1234 = 0x5") != std::string::npos);
  CHECK(nv::engine_of_class(0xcbc0) == nv::Engine::Compute);  // HOPPER_COMPUTE_A
  CHECK(nv::engine_of_class(0xc8b5) == nv::Engine::Copy);     // HOPPER_DMA_COPY_A
  CHECK(nv::engine_of_class(0xc86f) == nv::Engine::Other);
}

TEST_CASE("GPFIFO entries: 40-bit address, subroutine level, length, sync") {
  nv::GpEntry e{0xab'cdef'0124ull, 0x1f'ffff, true, true, false};
  uint64_t raw = nv::encode_gp_entry(e);
  CHECK((raw & 0xffffffffu) == 0xcdef0124u);         // ENTRY0.GET (address bits 31:2)
  CHECK(((raw >> 32) & 0xff) == 0xab);               // ENTRY1.GET_HI
  CHECK(((raw >> 41) & 1) == 1);                     // ENTRY1.LEVEL subroutine
  CHECK(((raw >> 42) & 0x1fffff) == 0x1fffff);       // ENTRY1.LENGTH
  CHECK((raw >> 63) == 1);                           // ENTRY1.SYNC wait
  nv::GpEntry d = nv::decode_gp_entry(raw);
  CHECK(d.address == e.address);
  CHECK(d.dwords == e.dwords);
  CHECK(d.subroutine);
  CHECK(d.sync_wait);
  CHECK_THROWS_WITH_AS(nv::encode_gp_entry({uint64_t{1} << 40, 1}), doctest::Contains("below 2^40"), Error);
  CHECK_THROWS_AS(nv::encode_gp_entry({0x1002, 1}), Error);
  CHECK_THROWS_WITH_AS(nv::encode_gp_entry({0x1000, 1u << 21}), doctest::Contains("2^21 - 1"), Error);
  CHECK(offsetof(nv::Userd, gp_put) == 0x8c);
}
