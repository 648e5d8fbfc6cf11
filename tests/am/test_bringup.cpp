// The AMD driver with no kernel driver (AM, drivers/amd/am/) step by step against the emulated card
// (emu/amd/am/): IP discovery, firmware, page tables, the PSP and SMU, queues, faults and recovery.
#include <doctest/doctest.h>

#include <sys/mman.h>

#include <cstring>
#include <fstream>

#include "common/error.h"
#include "drivers/amd/am/discovery.h"
#include "drivers/amd/am/memory.h"
#include "emu/amd/am/discovery_image.h"

using namespace ugpu;
using doctest::Contains;
namespace d = hw::amd::discovery;

TEST_CASE("am: IP discovery reads versions, bases and the GC shape of the emulated Navi31") {
  emu::amd::DiscoveryShape shape;
  for (bool wide : {true, false}) {
    shape.wide_bases = wide;
    auto bin = emu::amd::discovery_binary(shape);
    bin.resize(d::kTableMaxBytes);  // the driver reads the table's whole window
    auto disc = amd::am::parse_discovery(bin);
    CHECK(disc.version(d::kGcHw).str() == "11.0.0");
    CHECK(disc.version(d::kMp0).str() == "13.0.0");
    CHECK(disc.version(d::kMp1).str() == "13.0.0");
    CHECK(disc.version(d::kSdma0).str() == "6.0.0");
    CHECK(disc.version(d::kOsssys).str() == "6.0.0");
    CHECK(!disc.version(d::kUmc));
    CHECK(disc.bases.of == hw::amd::IpBases{}.of);
    CHECK(disc.cu_count() == 96);
    CHECK(disc.wave_size == 32);
    CHECK(disc.harvested.empty());
    CHECK(disc.describe().find("MP0 (PSP) 13.0.0") != std::string::npos);
  }
}

TEST_CASE("am: a damaged or absent discovery table is a clear error") {
  auto good = emu::amd::discovery_binary({});
  good.resize(d::kTableMaxBytes);
  auto parse = [](std::vector<uint8_t> b) { amd::am::parse_discovery(b); };
  std::vector<uint8_t> zeros(d::kTableMaxBytes);
  CHECK_THROWS_WITH_AS(parse(zeros), Contains("no table at the top of VRAM"), Error);
  auto flipped = good;
  flipped[200] ^= 0x10;  // inside the IP list
  CHECK_THROWS_WITH_AS(parse(flipped), Contains("binary checksum"), Error);
  // A consistent table that points its IP list past the end.
  auto far = good;
  d::BinaryHeader bh;
  std::memcpy(&bh, far.data(), sizeof bh);
  bh.tables[d::kIpDiscovery].offset = 0xFFF0;
  std::memcpy(far.data(), &bh, sizeof bh);
  size_t after = offsetof(d::BinaryHeader, checksum) + 2;
  bh.checksum = d::checksum(far.data() + after, bh.size - after);
  std::memcpy(far.data(), &bh, sizeof bh);
  CHECK_THROWS_WITH_AS(parse(far), Contains("runs past"), Error);
  CHECK_THROWS_WITH_AS(parse(std::vector<uint8_t>(good.begin(), good.begin() + 20)), Contains("binary header"), Error);
  // Every truncation and every single-byte corruption is an Error or a table that still parses; never a crash.
  auto bin = emu::amd::discovery_binary({});
  for (size_t n = 0; n < bin.size(); n += 7) CHECK_THROWS_AS(parse(std::vector<uint8_t>(bin.begin(), bin.begin() + n)), Error);
  for (size_t i = 0; i < bin.size(); ++i) {
    auto b = bin;
    b[i] ^= 0xA5;
    try {
      parse(b);
    } catch (const Error&) {
    }
  }
}

namespace {
// VRAM for the memory manager's tests: lazily backed host memory standing in for BAR0.
struct FakeVram {
  uint64_t bytes;
  uint8_t* p;
  explicit FakeVram(uint64_t n) : bytes(n) {
    p = static_cast<uint8_t*>(::mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0));
    REQUIRE(p != MAP_FAILED);
  }
  ~FakeVram() { ::munmap(p, bytes); }
  uint64_t entry(uint64_t paddr, uint64_t index) const {
    uint64_t e;
    std::memcpy(&e, p + paddr + index * 8, 8);
    return e;
  }
};
}  // namespace

TEST_CASE("am: page tables map mixed page sizes with 1 GiB and 2 MiB leaves and fragments, as the GPU walks them") {
  const auto& f = hw::amd::kPteGfx11;
  FakeVram vram(uint64_t(4) << 30);
  int flushes = 0;
  amd::am::AmMemory mem(f, {vram.bytes, 0x8000000000, vram.p, vram.bytes}, 32 << 20, 64 << 20, uint64_t(1) << 40, uint64_t(1) << 40,
                        uint64_t(1) << 40);
  mem.changed = [&] { ++flushes; };
  using Chunk = amd::am::AmMemory::Chunk;
  // A walk through the tables in "VRAM", as the GMC does it: the leaf entry and its level.
  auto walk = [&](uint64_t va) -> std::pair<uint64_t, int> {
    uint64_t table = mem.root();
    for (int l = 0; l < 4; ++l) {
      uint64_t e = vram.entry(table, ((va - (uint64_t(1) << 40)) >> hw::amd::kLevelShift[l]) & 511);  // from the table start
      auto p = hw::amd::decode_pte(f, e);
      if (!p.valid) return {0, -1};
      if (l == 3 || p.leaf_pde) return {e, l};
      table = p.address;
    }
    return {0, -1};
  };
  const uint64_t va = uint64_t(1) << 40;  // 1 GiB aligned
  // 1 GiB + 2 MiB + 12 KiB of physically contiguous, 1 GiB aligned VRAM; then a system page.
  std::vector<Chunk> chunks = {{uint64_t(1) << 30, (uint64_t(1) << 30) + (2 << 20) + 3 * 4096, false}, {0x123456000, 4096, true}};
  mem.map(va, chunks, {.writable = true, .executable = false, .uncached = false});
  CHECK(flushes == 1);
  auto [e1, l1] = walk(va + 12345);
  CHECK(l1 == 1);
  auto p1 = hw::amd::decode_pte(f, e1);
  CHECK((p1.leaf_pde && p1.readable && p1.writeable && !p1.executable && !p1.system));
  CHECK(p1.address == uint64_t(1) << 30);
  CHECK(p1.fragment == 18);
  auto [e2, l2] = walk(va + (uint64_t(1) << 30) + 4096);
  CHECK(l2 == 2);
  CHECK(hw::amd::decode_pte(f, e2).address == (uint64_t(1) << 30) + (uint64_t(1) << 30));
  CHECK(hw::amd::decode_pte(f, e2).fragment == 9);
  auto [e3, l3] = walk(va + (uint64_t(1) << 30) + (2 << 20) + 4096);
  CHECK(l3 == 3);
  auto p3 = hw::amd::decode_pte(f, e3);
  CHECK(p3.address == (uint64_t(2) << 30) + (2 << 20) + 4096);
  CHECK(hw::amd::decode_pte(f, walk(va + (uint64_t(1) << 30) + (2 << 20) + 8192).first).fragment == 0);
  CHECK(p3.fragment == 1);  // the 12 KiB tail: pages 0-1 form an aligned 8 KiB run, page 2 stands alone
  auto [e4, l4] = walk(va + (uint64_t(1) << 30) + (2 << 20) + 3 * 4096);
  CHECK(l4 == 3);
  auto p4 = hw::amd::decode_pte(f, e4);
  CHECK((p4.system && p4.snooped && p4.mtype == f.mtype_uc && p4.address == 0x123456000));
  CHECK(walk(va + (uint64_t(1) << 30) + (2 << 20) + 4 * 4096).second == -1);
  // The shadow agrees with what the GPU reads.
  for (uint64_t off : {uint64_t(0), uint64_t(1) << 30, (uint64_t(1) << 30) + (2 << 20) + 8192})
    CHECK(mem.lookup(va + off)->entry == walk(va + off).first);
  // Mapping over a mapping is refused; unmapping clears the leaves.
  CHECK_THROWS_WITH_AS(mem.map(va + 8192, std::vector<Chunk>{{0, 4096, false}}, {}), Contains("already mapped"), Error);
  mem.unmap(va, (uint64_t(1) << 30) + (2 << 20) + 4 * 4096);
  CHECK(walk(va).second == -1);
  CHECK(walk(va + (uint64_t(1) << 30) + (2 << 20) + 3 * 4096).second == -1);
  CHECK(!mem.lookup(va));
}

TEST_CASE("am: VRAM allocation takes big aligned pieces, keeps CPU-visible memory in BAR0 and reports exhaustion") {
  FakeVram vram(uint64_t(1) << 30);
  // BAR0 shows the first 256 MiB only.
  amd::am::AmMemory mem(hw::amd::kPteGfx11, {vram.bytes, 0, vram.p, 256 << 20}, 32 << 20, 64 << 20, 0, uint64_t(1) << 40, uint64_t(1) << 40);
  auto a = mem.alloc_vram((6 << 20) + 4096, false, false);
  uint64_t total = 0;
  for (auto& c : a) {
    total += c.size;
    CHECK(c.addr >= (256 << 20));  // private memory goes beyond the BAR first
    CHECK(c.addr % std::min<uint64_t>(c.size, 2 << 20) == 0);
  }
  CHECK(total == (6 << 20) + 4096);
  CHECK(a.size() == 3);  // 4 MiB + 2 MiB + 4 KiB
  auto v = mem.alloc_vram(3 << 20, true, true);
  REQUIRE(v.size() == 1);
  CHECK(v[0].addr + v[0].size <= (256 << 20));
  CHECK(mem.host(v[0].addr) == vram.p + v[0].addr);
  CHECK_THROWS_WITH_AS(mem.alloc_vram(512 << 20, true, true), Contains("out of CPU-visible VRAM"), Error);
  mem.free_vram(a);
  mem.free_vram(v);
  CHECK(mem.boot_alloc(4096, 4096) == 0);
  CHECK(mem.boot_alloc(100, 1 << 20) == 1 << 20);
}

// ---- the whole driver on the emulated card ----

#include "drivers/amd/am/am.h"
#include "drivers/devices.h"
#include "emu/amd/am/am_card.h"
#include "hcq/queue.h"

namespace {
struct Bench {
  std::shared_ptr<emu::VirtualOs> os = std::make_shared<emu::VirtualOs>();
  std::shared_ptr<emu::amd::AmCard> card;
  explicit Bench(emu::amd::AmCardConfig cfg = {}) {
    if (cfg.firmware_dir.empty()) cfg.firmware_dir = amd::am::Firmware::default_dir();
    card = emu::amd::install_am_gpu(*os, cfg);
  }
  amd::am::AmOptions options() const {
    amd::am::AmOptions o;
    o.address = card->config().address, o.reset_settle = std::chrono::milliseconds(0), o.timeout = std::chrono::milliseconds(500);
    return o;
  }
  std::shared_ptr<amd::am::AmGpu> boot() { return amd::am::AmGpu::open(*os, options()); }
};
bool have_firmware() { return std::ifstream(amd::am::Firmware::default_dir() + "/psp_13_0_0_sos.bin").good(); }
}  // namespace

TEST_CASE("am: the driver boots the emulated card cold, then warm, through vfio") {
  REQUIRE_MESSAGE(have_firmware(), "the AM tests need Debian's firmware-amd-graphics (scripts/setup --tests installs it)");
  Bench b;
  {
    auto g = b.boot();
    CHECK(!g->warm());
    CHECK(std::string(g->chip().arch) == "gfx1100");
    auto s = b.card->stats();
    CHECK(s.sos_alive);
    CHECK(s.rlc_autoloaded);
    CHECK(s.psp_commands == 26);  // LOAD_TOC, SMU, SETUP_TMR, 22 images, AUTOLOAD_RLC
    CHECK(b.card->unknown_registers().empty());
    for (auto& l : b.card->log()) INFO(l);
  }
  auto g = b.boot();
  CHECK(g->warm());
  CHECK(b.card->stats().psp_commands == 26);  // nothing loaded again
}
