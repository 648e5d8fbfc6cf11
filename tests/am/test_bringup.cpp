// The AMD driver with no kernel driver (AM, drivers/amd/am/) step by step against the emulated card
// (emu/amd/am/): IP discovery, firmware, page tables, the PSP and SMU, queues, faults and recovery.
#include <doctest/doctest.h>
#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <functional>

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
    } catch (const Error&) {}
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

#include "codegen/builtin_kernels.h"
#include "drivers/amd/am/am.h"
#include "drivers/devices.h"
#include "emu/amd/am/am_card.h"
#include "hcq/queue.h"
#include "hw/amd/am11_regs.h"
#include "hw/amd/reg_trace.h"
#include "ir/text.h"
#include "sys/pci.h"

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
  std::unique_ptr<hcq::Device> device() const {
    amd::AmdOptions ao;
    ao.name = "emu:amd:pci";
    return amd::open_am(os, ao, options());
  }
};
bool have_firmware() { return std::ifstream(amd::am::Firmware::default_dir() + "/psp_13_0_0_sos.bin").good(); }

// Copies the board's firmware into `dir` on the bench's filesystem, with `corrupt(name, bytes)` free to
// change a file on the way; the driver then reads that copy.
amd::am::AmOptions damaged_firmware(Bench& b, const std::string& dir, const std::function<void(const std::string&, std::vector<char>&)>& corrupt) {
  for (const char* name : {"psp_13_0_0_sos.bin", "smu_13_0_0.bin", "sdma_6_0_0.bin", "gc_11_0_0_pfp.bin", "gc_11_0_0_me.bin", "gc_11_0_0_mec.bin",
                           "gc_11_0_0_imu.bin", "gc_11_0_0_rlc.bin"}) {
    std::ifstream in(amd::am::Firmware::default_dir() + "/" + name, std::ios::binary);
    std::vector<char> bytes{std::istreambuf_iterator<char>(in), {}};
    corrupt(name, bytes);
    auto f = b.os->add_mmap_file(dir + "/" + name, bytes.size());
    std::memcpy(f.data(), bytes.data(), bytes.size());
  }
  auto o = b.options();
  o.firmware_dir = dir;
  return o;
}
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

TEST_CASE("am: the PSP sees the bootloader components, the KM ring commands and AUTOLOAD_RLC in order") {
  REQUIRE_MESSAGE(have_firmware(), "the AM tests need Debian's firmware-amd-graphics (scripts/setup --tests installs it)");
  Bench b;
  auto g = b.boot();
  std::vector<std::string> want = {"PSP bootloader: loaded component 0x80000",
                                   "PSP bootloader: loaded component 0x10000000",
                                   "PSP bootloader: loaded component 0x10000",
                                   "PSP bootloader: loaded component 0x20000",
                                   "PSP: sOS is running",
                                   "PSP: KM ring created",
                                   "PSP: LOAD_TOC",
                                   "PSP: SETUP_TMR",
                                   "PSP: AUTOLOAD_RLC: RLC booted the graphics engines (23 firmware images)"};
  auto log = b.card->log();
  size_t at = 0;
  for (const auto& w : want) {
    CAPTURE(w);
    while (at < log.size() && log[at].find(w) == std::string::npos) ++at;
    CHECK(at < log.size());
  }
  CHECK(b.card->faults().empty());
  // The steps the driver reports, block by block.
  std::vector<std::string> blocks;
  for (const auto& s : g->steps()) blocks.push_back(s.block);
  for (const char* block : {"PCI", "discovery", "firmware", "SOC", "GMC", "IH", "PSP", "SMU", "GFX", "SDMA"})
    CHECK(std::find(blocks.begin(), blocks.end(), block) != blocks.end());
}

TEST_CASE("am: the register log names every access, and reads back through ugpu decode's reader") {
  REQUIRE_MESSAGE(have_firmware(), "scripts/setup --tests installs firmware-amd-graphics");
  Bench b;
  auto o = b.options();
  o.trace = true;
  auto g = amd::am::AmGpu::open(*b.os, o);
  auto t = g->regs().trace();
  REQUIRE(t.accesses.size() > 200);
  auto back = hw::amd::parse_reg_trace(hw::amd::format_reg_trace(t));
  CHECK(back.accesses.size() == t.accesses.size());
  CHECK(back.bases.of == t.bases.of);
  std::string text = hw::amd::describe_reg_trace(back);
  for (std::string name : {"MP0_SMN_C2PMSG_35", "MP0_SMN_C2PMSG_64", "GCVM_CONTEXT0_CNTL", "CP_MEC_RS64_CNTL", "SDMA0_F32_CNTL", "IH_RB_CNTL"})
    CHECK_MESSAGE(text.find(name) != std::string::npos, name);
  CHECK(text.find("register 0x") == std::string::npos);  // every address the driver touches has a name
  CHECK_THROWS_WITH_AS(hw::amd::parse_reg_trace("0.1 X 0x10 0x2\n"), Contains("line 1"), Error);
  CHECK_THROWS_WITH_AS(hw::amd::parse_reg_trace("# bases FOO 1\n"), Contains("unknown IP block 'FOO'"), Error);
}

TEST_CASE("am: a run that did not finish cleanly gets a mode-1 reset and a cold boot; a clean one warm-starts") {
  REQUIRE_MESSAGE(have_firmware(), "scripts/setup --tests installs firmware-amd-graphics");
  Bench b;
  const uint32_t scratch6 = hw::amd::address_of(hw::amd::am11::SCRATCH_REG6, hw::amd::IpBases{});
  { auto g = b.boot(); }
  CHECK(b.card->peek(scratch6) == 0);  // finished cleanly
  b.card->poke(scratch6, 1);           // as if the process had died before fini
  {
    auto g = b.boot();
    CHECK(!g->warm());
    CHECK(b.card->stats().mode1_resets == 1);
    bool said = false;
    for (const auto& s : g->steps()) said |= s.what.find("the previous run did not finish cleanly") != std::string::npos;
    CHECK(said);
  }
  auto o = b.options();
  o.force_reset = true;
  auto g = amd::am::AmGpu::open(*b.os, o);
  CHECK(!g->warm());
  CHECK(b.card->stats().mode1_resets == 2);
}

TEST_CASE("am: the PSP refuses firmware that is not the board's, and the driver says which image") {
  REQUIRE_MESSAGE(have_firmware(), "scripts/setup --tests installs firmware-amd-graphics");
  Bench b;
  // The driver reads a copy of the firmware whose MEC instructions differ by one byte (headers intact).
  auto o = damaged_firmware(b, "/fw-bad", [](const std::string& name, std::vector<char>& bytes) {
    if (name == "gc_11_0_0_mec.bin") bytes[0x1000] ^= 1;
  });
  CHECK_THROWS_WITH_AS(amd::am::AmGpu::open(*b.os, o), Contains("PSP: LOAD_IP_FW gc_11_0_0_mec.bin: RS64_MEC failed with status"), Error);
  CHECK(!b.card->faults().empty());
  // The next boot, with the right firmware, resets the half-booted chip first.
  auto g = b.boot();
  CHECK(!g->warm());
  CHECK(b.card->stats().mode1_resets == 1);
}

TEST_CASE("am: the PSP bootloader refusing a component, or the sOS not starting, is an error naming the component and its status") {
  REQUIRE_MESSAGE(have_firmware(), "scripts/setup --tests installs firmware-amd-graphics");
  const auto genuine = amd::am::Firmware::load(sys::posix_os(), amd::am::Firmware::default_dir(),
                                               {{11, 0, 0}, {13, 0, 0}, {13, 0, 0}, {6, 0, 0}});  // the card's IP versions
  // One byte inside a bootloader component of psp_13_0_0_sos.bin, found by its bytes in the file.
  auto flip_in = [&](const amd::am::FwBlob& blob) {
    return [&blob](const std::string& name, std::vector<char>& bytes) {
      if (name != "psp_13_0_0_sos.bin") return;
      auto at =
          std::search(bytes.begin(), bytes.end(), blob.data.begin(), blob.data.begin() + 256, [](char a, uint8_t b) { return uint8_t(a) == b; });
      REQUIRE(at != bytes.end());
      at[0x100] ^= 1;
    };
  };
  {
    Bench b;
    auto o = damaged_firmware(b, "/fw-sys", flip_in(genuine.sos[2]));
    std::string message = "no error";
    try {
      amd::am::AmGpu::open(*b.os, o);
    } catch (const Error& e) { message = e.what(); }
    CHECK_MESSAGE(message.starts_with("PSP bootloader: loading SYS_DRV ("), message);
    CHECK_MESSAGE(message.find("): the bootloader refused it (status 0x") != std::string::npos, message);
    CHECK(!b.card->faults().empty());
  }
  {
    Bench b;
    auto o = damaged_firmware(b, "/fw-sos", flip_in(genuine.sos[3]));
    CHECK_THROWS_WITH_AS(amd::am::AmGpu::open(*b.os, o), Contains("the sOS did not start in 500 ms (C2PMSG_81 stays 0, bootloader status"), Error);
    CHECK(!b.card->stats().sos_alive);
  }
}

TEST_CASE("am: claiming the device: driver bound, no IOMMU group, no permission, busy, missing firmware — one clear line each") {
  REQUIRE_MESSAGE(have_firmware(), "scripts/setup --tests installs firmware-amd-graphics");
  using B = emu::amd::AmCardConfig::Binding;
  {
    emu::amd::AmCardConfig c;
    c.binding = B::Amdgpu;
    Bench b(c);
    CHECK_THROWS_WITH_AS(b.boot(), Contains("is bound to the kernel driver amdgpu"), Error);
    CHECK_THROWS_WITH_AS(b.boot(), Contains("use the amd:kfd device"), Error);
  }
  {
    emu::amd::AmCardConfig c;
    c.iommu_group = false;
    Bench b(c);
    CHECK_THROWS_WITH_AS(b.boot(), Contains("has no IOMMU group"), Error);
  }
  {
    Bench b;
    b.os->set_errno_on_open("/dev/vfio/23", EACCES);
    CHECK_THROWS_WITH_AS(b.boot(), Contains("run as root, or give your user the group"), Error);
  }
  {
    Bench b;
    auto first = b.boot();
    CHECK_THROWS_WITH_AS(b.boot(), Contains("is in use by another ugpu process"), Error);
  }
  {
    Bench b;
    auto o = b.options();
    o.firmware_dir = "/nowhere";
    CHECK_THROWS_WITH_AS(amd::am::AmGpu::open(*b.os, o), Contains("firmware /nowhere/psp_13_0_0_sos.bin is missing"), Error);
  }
  {
    Bench b;
    auto o = b.options();
    o.address = "0000:09:00.0";
    CHECK_THROWS_WITH_AS(amd::am::AmGpu::open(*b.os, o), Contains("PCI device 0000:09:00.0 not found"), Error);
    CHECK_THROWS_WITH_AS(amd::am::AmGpu::open(*b.os, o), Contains("0000:03:00.0"), Error);  // names the GPUs there are
  }
}

TEST_CASE("am: a register the card does not model is a named error when read") {
  Bench b;
  auto pci = sys::open_pci_device(*b.os, b.card->config().address);
  sys::Mmio& regs = pci->bar(5);
  CHECK(regs.read32(hw::amd::address_of(hw::amd::am11::RCC_DEV0_EPF0_RCC_CONFIG_MEMSIZE, {}) * 4) == 24576);  // MiB
  CHECK_THROWS_WITH_AS(regs.read32(0x7F00 * 4), Contains("register 0x7f00, which the emulated card does not model"), Error);
  regs.write32(0x7F00 * 4, 5);
  CHECK(b.card->unknown_registers() == std::vector<std::string>{"write 0x7f00 = 0x5"});
}

namespace {
// add_one on `dev`, reading `in` and writing `out` (device addresses); waits for the device.
void add_one(hcq::Device& dev, uint64_t out, uint64_t in) {
  auto prog = drivers::load_kernel(dev, ir::parse(codegen::builtin_kernel("add_one").text), "add_one");
  auto q = dev.compute_queue();
  const hcq::Val args[] = {hcq::Val(out), hcq::Val(in)};
  q->wait(dev.timeline(), dev.last_timeline());
  q->exec(*prog, args);
  q->signal(dev.timeline(), dev.next_timeline());
  q->submit();
  dev.synchronize();
}
bool add_one_works(hcq::Device& dev) {
  hcq::Buffer out = dev.alloc(4000), in = dev.alloc(4000);
  std::vector<int32_t> host(1000, 41), got(1000);
  dev.copy_in(in, 0, {reinterpret_cast<const uint8_t*>(host.data()), 4000});
  add_one(dev, out.va, in.va);
  dev.copy_out({reinterpret_cast<uint8_t*>(got.data()), 4000}, out, 0);
  return std::all_of(got.begin(), got.end(), [](int32_t v) { return v == 42; });
}
}  // namespace

TEST_CASE("am: kernels run on the emulated card through sysfs and vfio's no-IOMMU mode (pagemap DMA) as through vfio") {
  REQUIRE_MESSAGE(have_firmware(), "scripts/setup --tests installs firmware-amd-graphics");
  for (bool noiommu : {false, true}) {
    CAPTURE(noiommu);
    emu::amd::AmCardConfig c;
    c.binding = noiommu ? emu::amd::AmCardConfig::Binding::Vfio : emu::amd::AmCardConfig::Binding::None;
    c.vfio_noiommu = noiommu;
    Bench b(c);
    amd::AmdOptions ao;
    ao.name = "emu:amd:pci";
    auto dev = b.device();
    CHECK(dev->info().interface.find(noiommu ? "pci (vfio-noiommu) 0000:03:00.0" : "pci (sysfs) 0000:03:00.0") != std::string::npos);
    CHECK(add_one_works(*dev));
    CHECK(b.card->faults().empty());
  }
}

TEST_CASE("am: a GPU page fault fails the device with the address; recover() brings it back, and a failed device left closed gets a reset") {
  REQUIRE_MESSAGE(have_firmware(), "scripts/setup --tests installs firmware-amd-graphics");
  Bench b;
  {
    auto dev = b.device();
    hcq::Buffer in = dev->alloc(4000);
    CHECK_THROWS_WITH_AS(add_one(*dev, 0x10000, in.va), Contains("GPU page fault at 0x10000 (a write of unmapped memory by CPC"), hcq::DeviceError);
    CHECK(dev->failed());
    dev->recover();  // in place: the MEC reset, the queues made again
    CHECK(!dev->failed());
    CHECK(add_one_works(*dev));
    CHECK_THROWS_WITH_AS(add_one(*dev, 0x10000, in.va), Contains("GPU page fault at 0x10000"), hcq::DeviceError);  // fails again, and stays failed
  }
  CHECK(b.card->stats().queues == 0);  // the driver dequeued what it had
  auto dev = b.device();
  CHECK(dev->info().interface.find("cold start") != std::string::npos);  // a fault left behind means a reset
  CHECK(b.card->stats().mode1_resets == 1);
  CHECK(add_one_works(*dev));
}

TEST_CASE("am: a hang times out and dequeues the queues; recover() brings the device back; closed after a hang, the next open warm-starts") {
  REQUIRE_MESSAGE(have_firmware(), "scripts/setup --tests installs firmware-amd-graphics");
  Bench b;
  {
    auto dev = b.device();
    CHECK(add_one_works(*dev));
    dev->set_default_timeout(std::chrono::milliseconds(200));
    hcq::SignalRef never = dev->new_signal(0);
    auto q = dev->compute_queue();
    q->wait(*never, 1);  // nothing ever signals it: the queue hangs
    q->signal(dev->timeline(), dev->next_timeline());
    q->submit();
    CHECK_THROWS_WITH_AS(dev->synchronize(), Contains("within 200 ms"), hcq::Timeout);
    CHECK(dev->failed());
    CHECK(b.card->stats().queues == 0);  // dequeued, which stopped the waiting queue
    dev->recover();
    CHECK(b.card->stats().queues == 2);
    CHECK(add_one_works(*dev));  // the timeline moved past the lost work: nothing waits for it
    dev->synchronize();
    CHECK(b.card->faults().empty());
    q = dev->compute_queue();
    q->wait(*never, 1);  // hang again, and close the device failed
    q->signal(dev->timeline(), dev->next_timeline());
    q->submit();
    CHECK_THROWS_AS(dev->synchronize(), hcq::Timeout);
  }
  auto dev = b.device();
  CHECK(dev->info().interface.find("warm start") != std::string::npos);
  CHECK(b.card->stats().mode1_resets == 0);
  CHECK(add_one_works(*dev));
}

TEST_CASE("am: `ugpu devices` lists PCI GPUs with their driver and what ugpu needs for each") {
  using B = emu::amd::AmCardConfig::Binding;
  for (auto [binding, driver, use] : {std::tuple{B::Vfio, "vfio-pci", "amd:pci through vfio"}, std::tuple{B::None, "none", "needs root"},
                                      std::tuple{B::Amdgpu, "amdgpu", "amd:kfd (amdgpu is loaded); for amd:pci unbind it"}}) {
    emu::amd::AmCardConfig c;
    c.binding = binding;
    emu::VirtualOs os;
    auto card = emu::amd::install_am_gpu(os, c);
    auto gpus = drivers::pci_gpus(os);
    REQUIRE(gpus.size() == 1);
    CHECK(gpus[0].address == "0000:03:00.0");
    CHECK(gpus[0].vendor == "AMD");
    CHECK(gpus[0].device_id == "0x744c");
    CHECK(gpus[0].driver == driver);
    CHECK(gpus[0].use.find(use) != std::string::npos);
  }
}

TEST_CASE("am: a device whose way in cannot recover says so, and stays failed") {
  auto dev = drivers::open_device("emu:amd");  // KFD gives a process no queue back after a fault
  hcq::Buffer in = dev->alloc(4000);
  CHECK_THROWS_AS(add_one(*dev, 0x10000, in.va), hcq::DeviceError);
  CHECK_THROWS_WITH_AS(dev->recover(), Contains("cannot be recovered in place"), hcq::DeviceError);
  CHECK(dev->failed());
}

TEST_CASE("am: BAR0 smaller than VRAM: resized where the GPU offers it, else discovery through MM_INDEX and buffers inside the BAR") {
  REQUIRE_MESSAGE(have_firmware(), "scripts/setup --tests installs firmware-amd-graphics");
  using B = emu::amd::AmCardConfig::Binding;
  {
    emu::amd::AmCardConfig c;
    c.binding = B::None, c.bar0_bytes = 256 << 20;  // sysfs can resize
    Bench b(c);
    auto g = b.boot();
    bool resized = false;
    for (const auto& s : g->steps()) resized |= s.what == "BAR0 resized from 256 to 16384 MiB (Resizable BAR)";
    CHECK(resized);
  }
  emu::amd::AmCardConfig c;
  c.bar0_bytes = 256 << 20;  // vfio: no resize
  Bench b(c);
  auto dev = b.device();
  CHECK(add_one_works(*dev));
  // Device buffers are host-visible VRAM: what the BAR shows, less the boot region.
  CHECK(dev->alloc(32 << 20).va != 0);
  CHECK_THROWS_WITH_AS(dev->alloc(512 << 20), Contains("out of CPU-visible VRAM"), Error);
  CHECK(b.card->faults().empty());
}

TEST_CASE("am: --unbind frees a GPU amdgpu holds, then boots it through sysfs") {
  REQUIRE_MESSAGE(have_firmware(), "scripts/setup --tests installs firmware-amd-graphics");
  emu::amd::AmCardConfig c;
  c.binding = emu::amd::AmCardConfig::Binding::Amdgpu;
  Bench b(c);
  CHECK(sys::bound_driver(*b.os, "03:00.0") == "amdgpu");
  auto o = b.options();
  o.unbind = true;
  auto g = amd::am::AmGpu::open(*b.os, o);
  CHECK(sys::bound_driver(*b.os, "03:00.0").empty());
  CHECK(g->pci().kind() == "sysfs");
  CHECK(g->steps()[0].what == "unbound amdgpu from 0000:03:00.0");
}

// ---- the card behind the emulated USB bridge (issue 23's path) ----

#include "emu/usb/asm24_model.h"
#include "emu/usb/pcie_topology.h"
#include "hw/amd/discovery.h"
#include "sys/usb_pci.h"

TEST_CASE("am over usb: the card enumerates behind the emulated bridge; registers and VRAM answer through TLPs") {
  emu::amd::AmCardConfig c;
  c.bar0_bytes = 256 << 20;
  Bench b(c);
  auto ep = emu::amd::pcie_endpoint(b.card);
  emu::usb::PcieTopology topology(*ep);
  emu::usb::Asm24Model bridge_model(topology);
  sys::Asm24Bridge bridge(bridge_model);
  sys::UsbPciDevice dev(bridge);
  CHECK(dev.vendor_id() == 0x1002);
  CHECK(dev.device_id() == 0x744c);
  CHECK(dev.bar_size(0) == (uint64_t(16) << 30));  // Resizable BAR: the largest power of two in 24 GiB
  CHECK(dev.bar_size(2) == (2u << 20));
  CHECK(dev.bar_size(5) == (2u << 20));
  sys::Mmio& regs = dev.bar(5);
  const hw::amd::IpBases bases;
  CHECK(regs.read32(hw::amd::address_of(hw::amd::am11::RCC_DEV0_EPF0_RCC_CONFIG_MEMSIZE, bases) * 4) == 24576);
  // The discovery table at the top of VRAM lies past the 16 GiB BAR: MM_INDEX/MM_DATA reach it.
  uint64_t table = (uint64_t(24576) << 20) - hw::amd::discovery::kTableFromTop;
  regs.write32(hw::amd::address_of(hw::amd::am11::BIF_BX_PF0_MM_INDEX, bases) * 4, uint32_t(table) | 0x80000000u);
  regs.write32(hw::amd::address_of(hw::amd::am11::BIF_BX_PF0_MM_INDEX_HI, bases) * 4, uint32_t(table >> 31));
  CHECK(regs.read32(hw::amd::address_of(hw::amd::am11::BIF_BX_PF0_MM_DATA, bases) * 4) == hw::amd::discovery::kBinarySignature);
  // VRAM through BAR0, both ways.
  std::vector<uint8_t> block(4096, 0x3C), back(4096);
  dev.bar(0).copy_in(1 << 20, block);
  dev.bar(0).copy_out(1 << 20, back);
  CHECK(back == block);
  CHECK_THROWS_WITH_AS(regs.read32(0x7F00 * 4), Contains("which the emulated card does not model"), Error);  // named through the bridge too
  CHECK(b.card->faults().empty());
}
