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
      nv::method_header(nv::SecOp::Inc, 0, nv::host::SEM_ADDR_LO, 3),
      10,
      11,
      12,
      0,  // a NOP dword
      nv::method_header(nv::SecOp::NonInc, 4, nv::copy::LAUNCH_DMA, 2),
      20,
      21,
      nv::method_header(nv::SecOp::OneInc, 1, nv::compute::SEND_PCAS_A, 3),
      30,
      31,
      32,
      nv::method_header(nv::SecOp::Immediate, 2, nv::host::NON_STALL_INTERRUPT, 7),
      nv::method_header(nv::SecOp::Inc, 3, 0x200, 0),  // no data: nothing written
      nv::method_header(nv::SecOp::EndSegment, 0, 0, 0),
      nv::method_header(nv::SecOp::Inc, 0, 0x8, 1),
      99,  // after the end: unread
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
      nv::method_header(nv::SecOp::Inc, 1, nv::host::SET_OBJECT, 1),
      0xcbc0,
      nv::method_header(nv::SecOp::Inc, 4, nv::host::SET_OBJECT, 1),
      0xc8b5,
      nv::method_header(nv::SecOp::Inc, 1, nv::compute::INVALIDATE_SHADER_CACHES_NO_WFI, 1),
      0x1011,
      nv::method_header(nv::SecOp::Inc, 4, nv::copy::LAUNCH_DMA, 1),
      0x182,
      nv::method_header(nv::SecOp::Inc, 0, nv::host::SEM_EXECUTE, 1),
      3u | nv::host::sem::kPayload64,
      nv::method_header(nv::SecOp::Inc, 2, 0x1234, 1),
      5,
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
  CHECK((raw & 0xffffffffu) == 0xcdef0124u);    // ENTRY0.GET (address bits 31:2)
  CHECK(((raw >> 32) & 0xff) == 0xab);          // ENTRY1.GET_HI
  CHECK(((raw >> 41) & 1) == 1);                // ENTRY1.LEVEL subroutine
  CHECK(((raw >> 42) & 0x1fffff) == 0x1fffff);  // ENTRY1.LENGTH
  CHECK((raw >> 63) == 1);                      // ENTRY1.SYNC wait
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

// --- RM ABI and QMD tables -------------------------------------------------------------------------

#include "hw/nv/qmd_launch.h"
#include "hw/nv/rm_abi.h"

TEST_CASE("RM ABI: escape requests, branches by driver version, status names") {
  CHECK(nv::rm_ioctl(nv::NV_ESC_RM_MAP_MEMORY_DMA, sizeof(nv::v570::NVOS46_PARAMETERS)) == 0xC0384657u);
  CHECK(nv::rm_ioctl(nv::NV_ESC_RM_MAP_MEMORY_DMA, sizeof(nv::v580::NVOS46_PARAMETERS)) == 0xC0404657u);
  CHECK(nv::find_branch(569) == nullptr);
  std::pair<unsigned, const char*> want[] = {{570, "570"}, {574, "570"}, {575, "575"}, {580, "580"}, {589, "580"},
                                             {590, "590"}, {595, "590"}, {610, "610"}, {700, "610"}};
  for (auto [major, name] : want) {
    CAPTURE(major);
    REQUIRE(nv::find_branch(major));
    CHECK(std::string(nv::find_branch(major)->name) == name);
  }
  CHECK(nv::kAbiBranches[0].sizeof_nvos46 == sizeof(nv::v570::NVOS46_PARAMETERS));
  CHECK(nv::kAbiBranches[4].sizeof_channel_alloc == sizeof(nv::v610::NV_CHANNEL_ALLOC_PARAMS));
  CHECK(std::string(nv::status_name(0x1f)) == "NV_ERR_INVALID_ARGUMENT");
  CHECK(std::string(nv::status_name(0x3a)) == "NV_ERR_INVALID_PARAM_STRUCT");
  CHECK(std::string(nv::status_text(0x3a)) == "Invalid structure parameter");
  CHECK(std::string(nv::status_name(0x7fff1234)) == "NV_ERR_UNKNOWN_STATUS");
  for (size_t i = 1; i < nv::kRmStatusCount; ++i) CHECK(nv::kRmStatuses[i - 1].code < nv::kRmStatuses[i].code);
  CHECK(std::string(nv::rc_error_name(31)) == "FIFO_ERROR_MMU_ERR_FLT");
}

TEST_CASE("QMD tables: layouts are consistent and a launch round-trips through every version") {
  for (const nv::QmdLayout* l : {&nv::kQmdV03_00, &nv::kQmdV04_00, &nv::kQmdV05_00}) {
    std::string layout = l->name;
    CAPTURE(layout);
    CHECK(nv::check_layout(*l).empty());
    nv::QmdLaunch q;
    q.program_address = 0x12'3456'7800;
    q.program_prefetch_bytes = 0x1000;
    q.grid = {70000, 3, 2};
    q.block = {256, 2, 1};
    q.shared_bytes = 0x1400;
    q.sm_shared_config = 9;
    q.registers = 40;
    q.local_high_bytes = 0x240;
    q.sass_version = 0x90;
    q.cbanks[0] = {true, 0x10'0000'1000, 0x230};
    q.cbanks[3] = {true, 0x10'0000'2040, 0x40};
    q.releases[0] = {true, 0x10'0000'0010, 0x55, false, true};
    q.dependent = {true, 0x10'0000'3000, true};
    uint32_t w[nv::kQmdMaxDwords] = {};
    nv::encode_qmd(*l, q, w);
    const nv::QmdLayout* all[] = {&nv::kQmdV05_00, &nv::kQmdV04_00, &nv::kQmdV03_00};
    if (l->major != 5) CHECK(nv::qmd_layout_of(std::span<const uint32_t>(w, l->bytes / 4), std::span(all).subspan(1)) == l);
    nv::QmdLaunch d = nv::decode_qmd(*l, std::span<const uint32_t>(w, l->bytes / 4));
    CHECK(d.program_address == q.program_address);
    CHECK(d.grid == q.grid);
    CHECK(d.block == q.block);
    CHECK(d.shared_bytes == q.shared_bytes);
    CHECK(d.registers == 40);
    CHECK(d.local_high_bytes == 0x240);
    CHECK(d.cbanks[0].address == q.cbanks[0].address);
    CHECK(d.cbanks[0].size == 0x230);
    CHECK(d.cbanks[3].valid);
    CHECK(!d.cbanks[1].valid);
    CHECK(d.releases[0].enable);
    CHECK(d.releases[0].address == q.releases[0].address);
    CHECK(d.releases[0].payload == 0x55);
    CHECK(d.releases[0].timestamp);
    CHECK(!d.releases[1].enable);
    CHECK(d.dependent.enable);
    CHECK(d.dependent.qmd_address == q.dependent.qmd_address);
    CHECK(nv::describe_qmd(*l, std::span<const uint32_t>(w, l->bytes / 4)).find("cta_thread_dimension0=0x100") != std::string::npos);
    // Values a field cannot hold are refused, never truncated.
    nv::QmdLaunch bad = q;
    bad.program_address = uint64_t{1} << 60;
    CHECK_THROWS_AS(nv::encode_qmd(*l, bad, w), Error);
    bad = q;
    bad.block[0] = 0;
    CHECK_THROWS_WITH_AS(nv::encode_qmd(*l, bad, w), doctest::Contains("zero"), Error);
  }
  // Fact checks against the class headers.
  CHECK(nv::find_field(nv::kQmdV03_00, "cta_raster_width")->lo == 384);
  CHECK(nv::find_field(nv::kQmdV04_00, "grid_width")->lo == 1024);
  CHECK(nv::find_field(nv::kQmdV04_00, "qmd_major_version")->lo == 580);
  CHECK(nv::find_field(nv::kQmdV05_00, "qmd_major_version")->lo == 468);
  // V04+ address constant banks in 64-byte units: an unaligned bank is refused there, fine in V03.
  nv::QmdLaunch q;
  q.cbanks[0] = {true, 0x1020, 16};
  uint32_t w[nv::kQmdMaxDwords] = {};
  CHECK_NOTHROW(nv::encode_qmd(nv::kQmdV03_00, q, w));
  CHECK_THROWS_WITH_AS(nv::encode_qmd(nv::kQmdV04_00, q, w), doctest::Contains("multiple of 64"), Error);
  // V04 QMDs say they are GRID_CTA launches; another type is refused by the decoder.
  q.cbanks[0].address = 0x1040;
  nv::encode_qmd(nv::kQmdV04_00, q, w);
  nv::qmd_set_named(nv::kQmdV04_00, w, "qmd_type", 0);
  CHECK_THROWS_WITH_AS(nv::decode_qmd(nv::kQmdV04_00, w), doctest::Contains("GRID_CTA"), Error);
}
