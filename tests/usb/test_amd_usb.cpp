// emu:amd:usb: the AM driver on the emulated gfx1100 behind the emulated ASM24xx bridge — the kernel
// suite against the CPU device, the SRAM-window copies at sizes around the window, the sentinel rule,
// the wire model's accounting, and faults (a pulled cable, a stalled transfer, bridge errors, a link
// that stays down), each ending in one line — and a failed device, never a hang, once it is open.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <random>

#include "drivers/amd/amd_device.h"
#include "drivers/devices.h"
#include "emu/amd/am/am_card.h"
#include "emu/usb/asm24_model.h"
#include "hw/amd/pm4.h"
#include "hw/amd/sdma6_packets.h"
#include "hw/usb/asm24.h"
#include "tests/hcq/device_suite.h"

using namespace ugpu;
using doctest::Contains;
namespace u = hw::usb;

namespace {
struct Usb {
  drivers::EmuAmUsb parts = drivers::make_emu_am_usb();
  std::shared_ptr<emu::usb::Asm24Model> bridge = parts.bridge;
  std::unique_ptr<hcq::Device> dev = drivers::open_emu_am_usb(parts);
  uint32_t fence() const {  // chunks the GPU has drained, as the host reads them
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v |= uint32_t(bridge->xdata(uint16_t(u::kSysBuf.xdata + u::kFenceOffset + i))) << (8 * i);
    return v;
  }
};
std::vector<uint8_t> random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& x : v) x = uint8_t(rng());
  return v;
}
constexpr size_t kPayload = (u::kSram.bytes / 2) - 4;  // a window less its sentinel
}  // namespace

TEST_CASE("usb: emu:amd:usb boots the card through the bridge and runs the kernel suite like the CPU") {
  Usb t;
  CHECK(t.dev->info().interface.find("pci (usb) usb:04:00.0") != std::string::npos);
  test::kernel_suite_matches_cpu(*t.dev);
  CHECK(t.parts.card->faults().empty());
  CHECK(t.bridge->stats().tlps > 0);
}

TEST_CASE("usb: copies of sizes around the SRAM window arrive intact, at any offset") {
  Usb t;
  hcq::Buffer b = t.dev->alloc(3 * kPayload + 64);
  uint32_t seed = 1;
  for (size_t n : {size_t{1}, size_t{3}, size_t{4}, size_t{507}, size_t{508}, size_t{509}, kPayload - 1, kPayload, kPayload + 1, 2 * kPayload,
                   2 * kPayload + 5, 3 * kPayload}) {
    for (size_t offset : {size_t{0}, size_t{3}}) {
      CAPTURE(n);
      CAPTURE(offset);
      auto in = random_bytes(n, seed++);
      std::vector<uint8_t> out(n);
      t.dev->copy_in(b, offset, in);
      t.dev->copy_out(out, b, offset);
      CHECK(out == in);
    }
  }
  // Copy-out pieces are the whole SRAM; copy-in chunks a window each: both sides of those sizes.
  auto big = random_bytes(u::kSram.bytes * 2 + 12, 99);
  hcq::Buffer c = t.dev->alloc(big.size());
  std::vector<uint8_t> back(big.size());
  t.dev->copy_in(c, 0, big);
  t.dev->copy_out(back, c, 0);
  CHECK(back == big);
  CHECK(!t.dev->failed());
  CHECK(t.parts.card->faults().empty());
}

TEST_CASE("usb: a copy-in chunk goes out as one SRAM write of whole sectors, and the GPU counts what it drained") {
  Usb t;
  hcq::Buffer b = t.dev->alloc(4 * kPayload);
  t.dev->synchronize();
  auto in = random_bytes(2 * kPayload + 1000, 5);  // two full windows and a partial one
  uint32_t before = t.fence();
  auto s0 = t.bridge->stats();
  t.dev->copy_in(b, 0, in);
  auto s1 = t.bridge->stats();
  CHECK(t.fence() == before + 3);  // three chunks drained
  // Full windows go as 256 KiB, the last as 1000 bytes + the sentinel in whole sectors (1024).
  const uint64_t sram_bytes = 2 * (u::kSram.bytes / 2) + 1024;
  CHECK(s1.bulk_out_bytes - s0.bulk_out_bytes >= sram_bytes);
  CHECK(s1.bulk_out_bytes - s0.bulk_out_bytes < sram_bytes + 16384);  // and little else: the SDMA ring words, the pointers
  std::vector<uint8_t> out(in.size());
  t.dev->copy_out(out, b, 0);
  CHECK(out == in);
}

TEST_CASE("usb: a chunk never gets the sentinel that stale bytes at its place hold, so a late SRAM write cannot be copied early") {
  Usb t;
  hcq::Buffer a = t.dev->alloc(2 * kPayload), b = t.dev->alloc(4096);
  t.dev->synchronize();
  // The next chunk numbers: two full chunks (base, base + 1), then a small one (base + 2) in the window
  // of the first, whose sentinel place (byte 1020 of a 1024-byte wire image) then holds payload of it.
  const uint32_t base = t.fence(), hazard = 0x51000000u | ((base + 2) & 0xFFFFFF);
  std::vector<uint8_t> stale(2 * kPayload);
  for (size_t i = 0; i + 4 <= stale.size(); i += 4) std::memcpy(stale.data() + i, &hazard, 4);
  t.dev->copy_in(a, 0, stale);
  // The SRAM write lands 20 ms late: a GPU polling for `hazard` would copy the stale bytes at once.
  t.bridge->delay_sram_writes(std::chrono::milliseconds(20));
  auto fresh = random_bytes(1000, 7);
  t.dev->copy_in(b, 0, fresh);
  t.bridge->delay_sram_writes({});
  // The copy's SDMA program polled for the other sentinel.
  std::vector<uint32_t> words = amd::last_submission(*t.dev, true).words;
  CHECK(std::count(words.begin(), words.end(), hazard) == 0);
  CHECK(std::count(words.begin(), words.end(), hazard ^ 0x00800000u) == 1);
  std::vector<uint8_t> out(fresh.size());
  t.dev->copy_out(out, b, 0);
  CHECK(out == fresh);
  CHECK(!t.dev->failed());
}

TEST_CASE("usb: the wire model: pipelined copy-in keeps the link near the SRAM engine's rate; framing and requests are counted") {
  Usb t;
  const size_t n = 8 << 20;
  hcq::Buffer b = t.dev->alloc(n);
  auto in = random_bytes(n, 11);
  t.dev->synchronize();
  t.bridge->reset_wire();
  t.dev->copy_in(b, 0, in);
  auto w = t.bridge->wire();
  const double mb_s = double(n) / w.host_us, ceiling = emu::usb::Asm24Model::usb3_gen2().sram_bytes_per_s / 1e6;
  CAPTURE(mb_s);
  CHECK(mb_s <= ceiling);                  // the model never beats its own engine
  CHECK(w.wire_bytes > n);                 // framing and requests cost bytes
  CHECK(w.wire_bytes < n + n / 16);        // ... a few percent
  CHECK(w.control >= 2 * (n / kPayload));  // at least a request and a fence read per chunk
  // The same bytes over the slower link take longer.
  t.bridge->set_wire(emu::usb::Asm24Model::usb3_gen1());
  t.bridge->reset_wire();
  t.dev->copy_in(b, 0, in);
  CHECK(t.bridge->wire().host_us > w.host_us);
  std::vector<uint8_t> out(n);
  t.dev->copy_out(out, b, 0);
  CHECK(out == in);
}

TEST_CASE("usb: a pulled cable fails the device with one line; later work is refused, nothing hangs") {
  Usb t;
  hcq::Buffer b = t.dev->alloc(1 << 20);
  t.dev->synchronize();
  t.bridge->disconnect();
  auto in = random_bytes(1 << 20, 3);
  CHECK_THROWS_WITH_AS(t.dev->copy_in(b, 0, in), Contains("disconnected"), hcq::DeviceError);
  CHECK(t.dev->failed());
  CHECK(t.dev->error().find("\n") == std::string::npos);
  CHECK_THROWS_AS(t.dev->synchronize(), hcq::DeviceError);
  CHECK_THROWS_AS(t.dev->alloc(64), hcq::DeviceError);
}

TEST_CASE("usb: a kernel launch after the cable is pulled fails the device instead of waiting for it") {
  Usb t;
  auto prog = drivers::load_kernel(*t.dev, ir::parse(codegen::builtin_kernel("add_one").text), "add_one");
  hcq::Buffer a = t.dev->alloc(4000), b = t.dev->alloc(4000);
  t.dev->synchronize();
  t.bridge->disconnect();
  auto q = t.dev->compute_queue();
  hcq::Val args[] = {b.va, a.va};
  CHECK_THROWS_WITH_AS(q->exec(*prog, args), Contains("disconnected"),
                       hcq::DeviceError);  // its argument memory is the first thing the bridge refuses
  CHECK(t.dev->failed());
}

TEST_CASE("usb: a submit after the cable is pulled fails the device instead of waiting for it") {
  Usb t;
  auto prog = drivers::load_kernel(*t.dev, ir::parse(codegen::builtin_kernel("add_one").text), "add_one");
  hcq::Buffer a = t.dev->alloc(4000), b = t.dev->alloc(4000);
  uint64_t v = t.dev->next_timeline();
  auto q = t.dev->compute_queue();
  hcq::Val args[] = {b.va, a.va};
  q->exec(*prog, args).signal(t.dev->timeline(), v);
  t.bridge->disconnect();
  CHECK_THROWS_WITH_AS(q->submit(), Contains("disconnected"), hcq::DeviceError);
  CHECK(t.dev->failed());
  CHECK_THROWS_AS(t.dev->synchronize(), hcq::DeviceError);
}

TEST_CASE("usb: a bulk transfer that stalls midway through a copy fails the device and names the stall; recover() brings it back") {
  Usb t;
  hcq::Buffer b = t.dev->alloc(4 << 20);
  t.dev->synchronize();
  t.bridge->stall_bulk_after(6);
  auto in = random_bytes(4 << 20, 4);
  CHECK_THROWS_WITH_AS(t.dev->copy_in(b, 0, in), Contains("stalled"), hcq::DeviceError);
  REQUIRE(t.dev->failed());
  CHECK(t.dev->error().find("a copy through the USB bridge failed midway") != std::string::npos);
  t.dev->recover();  // the SDMA program left polling for a chunk is dropped with its queue
  CHECK(!t.dev->failed());
  std::vector<uint8_t> out(in.size());
  t.dev->copy_in(b, 0, in);  // the windows are zeroed again and the counts read back from the bridge
  t.dev->copy_out(out, b, 0);
  CHECK(out == in);
  test::kernel_suite_matches_cpu(*t.dev);  // and kernels run
}

TEST_CASE("usb: the bridge's own TLP errors during enumeration are retried; past the retries the open fails naming them") {
  {
    drivers::EmuAmUsb e = drivers::make_emu_am_usb();
    e.bridge->fail_next_tlps(3, 1);  // the first configuration requests fail in the bridge, then succeed
    auto dev = drivers::open_emu_am_usb(e);
    std::vector<uint8_t> in(4096, 0x5A), out(4096);
    hcq::Buffer b = dev->alloc(in.size());
    dev->copy_in(b, 0, in);
    dev->copy_out(out, b, 0);
    CHECK(out == in);
  }
  drivers::EmuAmUsb e = drivers::make_emu_am_usb();
  e.bridge->fail_next_tlps(100, 1);
  CHECK_THROWS_WITH_AS(drivers::open_emu_am_usb(e), Contains("failed in the bridge 11 times"), Error);
}

TEST_CASE("usb: a link that never trains is one line at open") {
  drivers::EmuAmUsb e = drivers::make_emu_am_usb();
  e.bridge->hold_link_down(true);
  CHECK_THROWS_WITH_AS(drivers::open_emu_am_usb(e), Contains("PCIe link behind the USB bridge is down"), Error);
}
