// The ASM24xx bridge client (sys/asm24.h) against the emulated bridge (emu/usb/asm24_model.h): each
// vendor request's bytes, TLP encodings for configuration and memory, the SRAM DMA engine, the link, and
// faults (bridge errors retried, completion errors named, a stalled read, a pulled cable).
#include <doctest/doctest.h>

#include <cstring>
#include <map>
#include <tuple>

#include "common/error.h"
#include "emu/usb/asm24_model.h"
#include "hw/usb/asm24.h"
#include "sys/asm24.h"

using namespace ugpu;
using doctest::Contains;
namespace u = hw::usb;

namespace {
// Behind the bridge: functions with 4 KiB of configuration space each, and 64 KiB of memory at a BAR.
struct Fabric : emu::usb::PcieFabric {
  std::map<std::tuple<int, int, int>, std::vector<uint8_t>> functions;
  std::vector<uint8_t> bar = std::vector<uint8_t>(64 << 10);
  static constexpr uint64_t kBar = 0x10000000;
  Fabric() {
    for (auto bdf : {std::tuple{0, 0, 0}, std::tuple{4, 0, 0}}) functions[bdf] = std::vector<uint8_t>(4096);
    uint32_t id = 0x744c1002;
    std::memcpy(functions[{4, 0, 0}].data(), &id, 4);
  }
  bool config_read(uint8_t b, uint8_t d, uint8_t f, uint16_t reg, uint32_t& v) override {
    auto it = functions.find({b, d, f});
    if (it == functions.end()) return false;
    std::memcpy(&v, it->second.data() + reg, 4);
    return true;
  }
  bool config_write(uint8_t b, uint8_t d, uint8_t f, uint16_t reg, uint32_t v, uint8_t be) override {
    auto it = functions.find({b, d, f});
    if (it == functions.end()) return false;
    for (int i = 0; i < 4; ++i)
      if (be >> i & 1) it->second[reg + i] = uint8_t(v >> (8 * i));
    return true;
  }
  bool mem_read(uint64_t a, std::span<uint8_t> out) override {
    if (a < kBar || a + out.size() > kBar + bar.size()) return false;
    std::memcpy(out.data(), bar.data() + (a - kBar), out.size());
    return true;
  }
  bool mem_write(uint64_t a, std::span<const uint8_t> in) override {
    if (a < kBar || a + in.size() > kBar + bar.size()) return false;
    std::memcpy(bar.data() + (a - kBar), in.data(), in.size());
    return true;
  }
};

// A transport that records each transfer's setup and data on the way to the model.
struct Recorder : sys::UsbTransport {
  sys::UsbTransport& next;
  struct Transfer {
    uint8_t type, request;
    uint16_t value, index;
    std::vector<uint8_t> data;
  };
  std::vector<Transfer> log;
  explicit Recorder(sys::UsbTransport& n) : next(n) {}
  std::string name() const override { return next.name(); }
  size_t do_bulk(uint8_t ep, std::span<uint8_t> d, std::chrono::milliseconds t) override {
    log.push_back({ep, 0, 0, 0, {}});
    size_t n = ep & 0x80 ? next.bulk_in(ep, d, t) : (next.bulk_out(ep, d, t), d.size());
    log.back().data.assign(d.begin(), d.begin() + long(n));
    return n;
  }
  size_t do_control(uint8_t type, uint8_t req, uint16_t v, uint16_t i, std::span<uint8_t> d, std::chrono::milliseconds t) override {
    if (!(type & 0x80)) log.push_back({type, req, v, i, {d.begin(), d.end()}});
    size_t n = next.control(type, req, v, i, d, t);
    if (type & 0x80) log.push_back({type, req, v, i, {d.begin(), d.begin() + long(n)}});
    return n;
  }
};

struct Bench {
  Fabric fabric;
  emu::usb::Asm24Model model{fabric};
  Recorder rec{model};
  sys::Asm24Bridge bridge{rec};
  Bench() { bridge.ensure_link(); }
  std::vector<uint8_t> descriptor(uint32_t lo, uint32_t hi, uint32_t data) {
    u::TlpDescriptor d{lo, hi, data};
    return {reinterpret_cast<uint8_t*>(&d), reinterpret_cast<uint8_t*>(&d) + 12};
  }
};
}  // namespace

TEST_CASE("usb: the link comes up with the power request, or is an error naming its state") {
  Fabric f;
  emu::usb::Asm24Model m(f);
  Recorder rec(m);
  sys::Asm24Bridge b(rec);
  CHECK(m.xdata(u::kXdataLtssm) == 0);  // the custom firmware boots with PCIe off
  b.ensure_link();
  CHECK(m.xdata(u::kXdataLtssm) == u::kLtssmL0);
  REQUIRE(rec.log.size() == 3);  // E4 (down), F3 on, E4 (up)
  CHECK((rec.log[0].type == u::kRequestIn && rec.log[0].request == u::kXdataRead && rec.log[0].value == u::kXdataLtssm));
  CHECK((rec.log[1].type == u::kRequestOut && rec.log[1].request == u::kPciePower && rec.log[1].value == 1 && rec.log[1].data.empty()));
  m.hold_link_down(true);
  CHECK_THROWS_WITH_AS(b.ensure_link(), Contains("link behind the USB bridge is down (LTSSM state 0x0"), Error);
}

TEST_CASE("usb: XDATA reads split at 255 bytes and writes go one byte per request") {
  Bench t;
  std::vector<uint8_t> bytes(600);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = uint8_t(i * 7);
  t.rec.log.clear();
  t.bridge.xdata_write(0x1000, bytes);
  CHECK(t.rec.log.size() == 600);
  CHECK((t.rec.log[5].request == u::kXdataWrite && t.rec.log[5].value == 0x1005 && t.rec.log[5].index == uint8_t(35)));
  t.rec.log.clear();
  CHECK(t.bridge.xdata_read(0x1000, 600) == bytes);
  REQUIRE(t.rec.log.size() == 3);  // 255 + 255 + 90
  CHECK((t.rec.log[1].value == 0x1000 + 255 && t.rec.log[1].data.size() == 255 && t.rec.log[2].data.size() == 90));
  CHECK_THROWS_AS(t.bridge.xdata_read(0xFF00, 0x200), Error);
}

TEST_CASE("usb: configuration TLPs: type 0 and 1, byte enables, the address layout, and the completion") {
  Bench t;
  t.rec.log.clear();
  CHECK(t.bridge.config_read(4, 0, 0, 0x0, 4) == 0x744c1002);
  REQUIRE(t.rec.log.size() == 2);
  CHECK((t.rec.log[0].request == u::kTlp && t.rec.log[0].value == (u::kCfgRd1 | 0xF << 8) && t.rec.log[0].index == u::kTlpSingle));
  CHECK(t.rec.log[0].data == t.descriptor(4u << 24, 0, 0));
  CHECK((t.rec.log[1].type == u::kRequestIn && t.rec.log[1].request == u::kTlp && t.rec.log[1].data.size() == 8));
  CHECK(t.bridge.config_read(4, 0, 0, 0x2, 2) == 0x744c);  // the upper half: byte enables 0xC, shifted down
  t.rec.log.clear();
  t.bridge.config_write(0, 0, 0, 0x04, 1, 0x07);  // type 0 on bus 0; a config write reads its completion too
  REQUIRE(t.rec.log.size() == 2);
  CHECK(t.rec.log[0].value == (u::kCfgWr0 | 0x1 << 8));
  CHECK(t.rec.log[0].data == t.descriptor(0x04, 0, 0x07));
  t.rec.log.clear();
  t.bridge.config_write(4, 0, 0, 0x22, 2, 0xBEEF);
  CHECK(t.rec.log[0].value == (u::kCfgWr1 | 0xC << 8));
  CHECK(t.rec.log[0].data == t.descriptor(4u << 24 | 0x20, 0, 0xBEEF0000));
  CHECK(t.bridge.config_read(4, 0, 0, 0x20, 4) == 0xBEEF0000);
  CHECK(u::config_address(3, 31, 7, 0xFFF) == (3u << 24 | 31u << 19 | 7u << 16 | 0xFFC));
  CHECK_THROWS_AS(t.bridge.config_read(4, 0, 0, 0x3, 2), Error);  // crosses a dword
  // What a config TLP cannot address is refused before anything goes on the wire.
  t.rec.log.clear();
  CHECK_THROWS_WITH_AS(t.bridge.config_read(4, 32, 0, 0, 4), "config read of 0x0 at 4:32.0: out of range", Error);
  CHECK_THROWS_WITH_AS(t.bridge.config_write(4, 0, 8, 0, 4, 0), "config write of 0x0 at 4:0.8: out of range", Error);
  CHECK_THROWS_WITH_AS(t.bridge.config_read(4, 0, 0, 0x1000, 4), "config read of 0x1000 at 4:0.0: out of range", Error);
  CHECK(t.rec.log.empty());
}

TEST_CASE("usb: a configuration request nobody answers completes Unsupported Request, named") {
  Bench t;
  CHECK_THROWS_WITH_AS(t.bridge.config_read(9, 0, 0, 0, 4), Contains("completed with Unsupported Request (no device answers there)"), Error);
}

TEST_CASE("usb: the bridge's own TLP errors are retried up to 10 times, then reported") {
  Bench t;
  t.model.fail_next_tlps(3, 0x1);
  CHECK(t.bridge.config_read(4, 0, 0, 0x0, 4) == 0x744c1002);
  CHECK(t.model.stats().tlps >= 4);
  t.model.fail_next_tlps(11, 0x2);
  CHECK_THROWS_WITH_AS(t.bridge.config_read(4, 0, 0, 0x0, 4), Contains("failed in the bridge 11 times (status 0x2)"), sys::UsbError);
}

TEST_CASE("usb: memory streams: one TLP request and one bulk transfer each way, whole dwords") {
  Bench t;
  std::vector<uint8_t> data(4096);
  for (size_t i = 0; i < data.size(); ++i) data[i] = uint8_t(i ^ 0x5A);
  t.rec.log.clear();
  t.bridge.mem_write(Fabric::kBar + 0x100, data);
  REQUIRE(t.rec.log.size() == 2);
  CHECK((t.rec.log[0].value == (u::kMWr64 | 0xF << 8) && t.rec.log[0].index == u::kTlpStreamWrite));
  CHECK(t.rec.log[0].data == t.descriptor(Fabric::kBar + 0x100, 0, 1024));
  CHECK((t.rec.log[1].type == u::kBulkOut && t.rec.log[1].data == data));
  CHECK(std::memcmp(t.fabric.bar.data() + 0x100, data.data(), data.size()) == 0);
  std::vector<uint8_t> back(4096);
  t.rec.log.clear();
  t.bridge.mem_read(Fabric::kBar + 0x100, back);
  CHECK(back == data);
  CHECK((t.rec.log[0].value == (u::kMRd64 | 0xF << 8) && t.rec.log[0].index == u::kTlpStreamRead && t.rec.log[1].type == u::kBulkIn));
  // Above 4 GiB the high dword carries the rest; a read nobody decodes returns all ones.
  t.rec.log.clear();
  std::vector<uint8_t> none(8);
  t.bridge.mem_read(0x812345678ull, none);
  CHECK(t.rec.log[0].data == t.descriptor(0x12345678, 0x8, 2));
  CHECK(none == std::vector<uint8_t>(8, 0xFF));
  CHECK_THROWS_AS(t.bridge.mem_read(Fabric::kBar + 2, back), Error);
  CHECK_THROWS_AS(t.bridge.mem_write(Fabric::kBar, std::span(data).first(6)), Error);
}

TEST_CASE("usb: the SRAM DMA engine: writes padded to sectors at a slot, reads released by the GPU's write") {
  Bench t;
  std::vector<uint8_t> data(1000, 0xAB);
  t.rec.log.clear();
  t.bridge.sram_write(16, data);
  REQUIRE(t.rec.log.size() == 2);
  CHECK((t.rec.log[0].request == u::kSramDma && t.rec.log[0].value == 2 && t.rec.log[0].index == (16 | 1 << 8)));
  CHECK(t.rec.log[1].data.size() == 1024);  // two 512-byte sectors
  CHECK(t.model.sram(16 * 16384, 1000) == data);
  CHECK(t.model.sram(16 * 16384 + 1000, 24) == std::vector<uint8_t>(24, 0));
  // The GPU sees the SRAM at PCIe 0x200000.
  std::vector<uint8_t> seen(4);
  CHECK(t.model.gpu_read(u::kSram.pcie + 16 * 16384, seen));
  CHECK(seen == std::vector<uint8_t>(4, 0xAB));
  // A read: armed, then held until the GPU writes the release word.
  std::vector<uint8_t> gpu(3000, 0x11);
  CHECK(t.model.gpu_write(u::kSram.pcie, gpu));
  t.bridge.sram_arm_read(3000);
  std::vector<uint8_t> out(3000);
  CHECK_THROWS_WITH_AS(t.bridge.sram_read_armed(out, std::chrono::milliseconds(5)), Contains("never released"), sys::UsbError);
  t.bridge.sram_arm_read(3000);
  uint32_t zero = 0;
  CHECK(t.model.gpu_write(u::kCqBuf.pcie + 12, {reinterpret_cast<uint8_t*>(&zero), 4}));
  t.bridge.sram_read_armed(out);
  CHECK(out == gpu);
  CHECK(u::sram_dma_value(0x80000, true) == 0x8400);
  CHECK(u::sram_dma_index(0, 0x80000) == 0x2000);
  CHECK_THROWS_AS(t.bridge.sram_write(31, std::vector<uint8_t>(32 << 10)), Error);  // past 512 KiB
}

TEST_CASE("usb: the GPU's fence window is XDATA the host reads") {
  Bench t;
  uint64_t fence = 0x1122334455667788;
  CHECK(t.model.gpu_write(u::kSysBuf.pcie + 0x800, {reinterpret_cast<uint8_t*>(&fence), 8}));
  auto got = t.bridge.xdata_read(uint16_t(u::kSysBuf.xdata + 0x800), 8);
  uint64_t v;
  std::memcpy(&v, got.data(), 8);
  CHECK(v == fence);
  CHECK(!t.model.gpu_write(0x900000, {reinterpret_cast<uint8_t*>(&fence), 8}));  // not bridge memory
}

TEST_CASE("usb: a stalled protocol step and a pulled cable are UsbErrors, never a hang") {
  Bench t;
  std::vector<uint8_t> buf(16);
  CHECK_THROWS_WITH_AS(t.rec.bulk_out(u::kBulkOut, buf), Contains("stalled: a bulk OUT nothing announced"), sys::UsbError);
  CHECK_THROWS_WITH_AS(t.rec.control(u::kRequestOut, 0x99, 0, 0, {}), Contains("stalled: unknown request 0x99"), sys::UsbError);
  t.model.disconnect();
  CHECK_THROWS_WITH_AS(t.bridge.config_read(4, 0, 0, 0, 4), Contains("disconnected"), sys::UsbError);
}

TEST_CASE("usb: which bridge opens: the custom firmware's IDs; a stock-firmware bridge or none is a clear error") {
  using Ids = std::vector<std::pair<uint16_t, uint16_t>>;
  CHECK(sys::pick_asm24(Ids{{0x1d6b, 0x0003}, {0x3801, 0x0001}, {0xADD1, 0x0001}}) == std::pair<uint16_t, uint16_t>{0xADD1, 0x0001});
  CHECK(sys::pick_asm24(Ids{{0x3801, 0x0001}}) == std::pair<uint16_t, uint16_t>{0x3801, 0x0001});
  CHECK_THROWS_WITH_AS(sys::pick_asm24(Ids{{0x1d6b, 0x0003}, {0x174C, 0x2464}}), Contains("stock firmware"), Error);
  CHECK_THROWS_WITH_AS(sys::pick_asm24(Ids{{0x1d6b, 0x0003}}), Contains("no ASM24xx USB bridge with the custom firmware"), Error);
  CHECK_THROWS_WITH_AS(sys::pick_asm24(Ids{}), Contains("0 USB devices present"), Error);
  CHECK_NOTHROW(sys::check_asm24_product("usb add1:0001", "custom ASM2464 firmware"));
  CHECK_NOTHROW(sys::check_asm24_product("usb add1:0001", "AS2462"));
  CHECK_THROWS_WITH_AS(sys::check_asm24_product("usb add1:0001", "USB3.2 PCIe TinyEnclosure"), Contains("not the custom firmware"), Error);
}
