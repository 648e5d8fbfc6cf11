// AM firmware: every gfx1100 file of Debian's firmware-amd-graphics parsed into what the PSP is sent,
// and damaged files refused with the file and the fault named.
#include <doctest/doctest.h>

#include <cstring>
#include <fstream>
#include <iterator>

#include "common/error.h"
#include "drivers/amd/am/firmware.h"
#include "emu/os/virtual_os.h"
#include "hw/amd/psp.h"
#include "hw/amd/ucode.h"

using namespace ugpu;
using doctest::Contains;
namespace psp = hw::amd::psp;

namespace {
const amd::am::FirmwareVersions kNavi31{{11, 0, 0}, {13, 0, 0}, {13, 0, 0}, {6, 0, 0}};
bool have_debian_firmware() { return std::ifstream(amd::am::Firmware::default_dir() + "/psp_13_0_0_sos.bin").good(); }
std::vector<uint8_t> slurp(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}
}  // namespace

TEST_CASE("am firmware: every gfx1100 file of firmware-amd-graphics parses into the PSP's load list") {
  REQUIRE_MESSAGE(have_debian_firmware(),
                  "no " << amd::am::Firmware::default_dir() << "/psp_13_0_0_sos.bin: scripts/setup --tests installs firmware-amd-graphics");
  auto fw = amd::am::Firmware::load(sys::posix_os(), amd::am::Firmware::default_dir(), kNavi31);
  CHECK(fw.files.size() == 8);
  // Bootloader: KDB, SPL (the KDB blob again), SYS_DRV, SOS.
  REQUIRE(fw.sos.size() == 4);
  CHECK(fw.sos[0].type == psp::kBlLoadKeyDatabase);
  CHECK(fw.sos[1].type == psp::kBlLoadTosSplTable);
  CHECK(fw.sos[1].data.data() == fw.sos[0].data.data());
  CHECK(fw.sos[2].type == psp::kBlLoadSysDrv);
  CHECK(fw.sos[2].data.size() == 0x26790);
  CHECK(fw.sos[3].type == psp::kBlLoadSosDrv);
  CHECK(fw.sos[3].data.size() == 0x18380);
  CHECK(fw.toc.data.size() == 0x900);
  CHECK(fw.reg_list.data.size() == 0x960);
  CHECK(fw.smu.data.size() == 0x3fe00);  // the code only, not the power-play tables after it
  // LOAD_IP_FW: SDMA TH1, TH0, PFP + 2 stacks, ME + 2 stacks, MEC + 4 stacks, IMU I/D, RLC GPM, SRM, IRAM, DRAM, P, V, G.
  std::vector<uint32_t> types;
  for (const auto& b : fw.ip) types.push_back(b.type);
  const std::vector<uint32_t> want = {psp::kFwSdmaTh1,
                                      psp::kFwSdmaTh0,
                                      psp::kFwRs64Pfp,
                                      psp::kFwRs64PfpP0Stack,
                                      psp::kFwRs64PfpP1Stack,
                                      psp::kFwRs64Me,
                                      psp::kFwRs64MeP0Stack,
                                      psp::kFwRs64MeP1Stack,
                                      psp::kFwRs64Mec,
                                      psp::kFwRs64MecP0Stack,
                                      psp::kFwRs64MecP1Stack,
                                      psp::kFwRs64MecP2Stack,
                                      psp::kFwRs64MecP3Stack,
                                      psp::kFwImuI,
                                      psp::kFwImuD,
                                      psp::kFwRlcRestoreListGpmMem,
                                      psp::kFwRlcRestoreListSrmMem,
                                      psp::kFwRlcIram,
                                      psp::kFwRlcDramBoot,
                                      psp::kFwRlcP,
                                      psp::kFwRlcV,
                                      psp::kFwRlcG};
  CHECK(types == want);
  CHECK(fw.ip[8].data.size() == 0x41520);  // MEC instructions
  CHECK(fw.mec_start == 0x0007000000003000ull);
  CHECK(fw.describe().find("gc_11_0_0_rlc.bin: RLC_G (25088 bytes)") != std::string::npos);
}

TEST_CASE("am firmware: missing and damaged files are errors naming the file and the package") {
  emu::VirtualOs os;
  os.add_dir("/fw");
  CHECK_THROWS_WITH_AS(amd::am::Firmware::load(os, "/fw", kNavi31), Contains("firmware /fw/psp_13_0_0_sos.bin is missing"), Error);
  CHECK_THROWS_WITH_AS(amd::am::Firmware::load(os, "/fw", kNavi31), Contains("firmware-amd-graphics"), Error);
  REQUIRE_MESSAGE(have_debian_firmware(), "scripts/setup --tests installs firmware-amd-graphics");
  const std::string dir = amd::am::Firmware::default_dir();
  struct Case {
    const char* file;
    std::function<void(std::vector<uint8_t>&)> damage;
    const char* message;
  };
  auto put32 = [](std::vector<uint8_t>& b, size_t at, uint32_t v) { std::memcpy(b.data() + at, &v, 4); };
  const Case cases[] = {
      {"psp_13_0_0_sos.bin", [](auto& b) { b.resize(0x20000); }, "truncated"},
      {"psp_13_0_0_sos.bin", [&](auto& b) { put32(b, 0x24 + 16 + 12, 0x7fffffff); }, "more than the PSP's 1 MiB buffer"},
      {"psp_13_0_0_sos.bin", [&](auto& b) { put32(b, 0x24 + 16 + 8, 0x41000); }, "runs past the end"},
      {"psp_13_0_0_sos.bin", [&](auto& b) { put32(b, 0x20, 0); }, "lists 0 components"},
      {"psp_13_0_0_sos.bin", [&](auto& b) { put32(b, 0x24 + 16, 2); }, "SYS_DRV appears twice"},
      {"gc_11_0_0_mec.bin", [&](auto& b) { put32(b, 8, 7); }, "header version 7.0 is not one ugpu reads"},
      {"gc_11_0_0_mec.bin", [&](auto& b) { put32(b, 4, 40); }, "header needs 60 bytes"},
      {"gc_11_0_0_rlc.bin", [&](auto& b) { put32(b, 0x9c, 0x100000); }, "RLC_IRAM"},
      {"smu_13_0_0.bin", [&](auto& b) { put32(b, 24, 0x10000000); }, "SMU code"},
      {"gc_11_0_0_imu.bin", [&](auto& b) { put32(b, 0x20, 0); }, "IMU instructions is empty"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.file);
    CAPTURE(c.message);
    emu::VirtualOs v;
    for (const char* n : {"psp_13_0_0_sos.bin", "smu_13_0_0.bin", "sdma_6_0_0.bin", "gc_11_0_0_pfp.bin", "gc_11_0_0_me.bin", "gc_11_0_0_mec.bin",
                          "gc_11_0_0_imu.bin", "gc_11_0_0_rlc.bin"}) {
      auto b = slurp(dir + "/" + n);
      if (std::string(n) == c.file) c.damage(b);
      auto span = v.add_mmap_file(std::string("/fw/") + n, b.size());
      std::memcpy(span.data(), b.data(), b.size());
    }
    CHECK_THROWS_WITH_AS(amd::am::Firmware::load(v, "/fw", kNavi31), Contains((std::string("firmware ") + c.file).c_str()), Error);
    CHECK_THROWS_WITH_AS(amd::am::Firmware::load(v, "/fw", kNavi31), Contains(c.message), Error);
  }
}

TEST_CASE("am firmware: every file of firmware-amd-graphics is parsed or refused by name, and every RDNA3 set in it loads") {
  REQUIRE_MESSAGE(have_debian_firmware(), "scripts/setup --tests installs firmware-amd-graphics");
  const std::string dir = amd::am::Firmware::default_dir();
  using Parse = std::function<void(const std::string&, std::span<const uint8_t>, amd::am::Firmware&)>;
  const uint32_t mec_stacks[] = {psp::kFwRs64MecP0Stack};
  struct Kind {
    std::string prefix, suffix;  // a file of this kind: name starts with prefix and ends with suffix
    Parse parse;
    int parsed = 0, refused = 0;
  };
  std::vector<Kind> kinds = {
      {"", "_sos.bin", amd::am::parse_psp_sos},
      {"smu_", ".bin", amd::am::parse_smu},
      {"", "_smc.bin", amd::am::parse_smu},
      {"sdma", ".bin", amd::am::parse_sdma},
      {"", "_rlc.bin", amd::am::parse_rlc},
      {"", "_imu.bin", amd::am::parse_imu},
      {"", "_mec.bin",
       [&](const std::string& n, std::span<const uint8_t> f, amd::am::Firmware& fw) { amd::am::parse_rs64(n, f, psp::kFwRs64Mec, mec_stacks, fw); }},
  };
  int files = 0;
  for (const std::string& name : sys::posix_os().listdir(dir))
    for (Kind& k : kinds) {
      if (!name.starts_with(k.prefix) || !name.ends_with(k.suffix)) continue;
      auto bytes = slurp(dir + "/" + name);
      amd::am::Firmware fw;
      ++files;
      try {
        k.parse(name, bytes, fw);
        ++k.parsed;
        for (const auto* list : {&fw.sos, &fw.ip})  // whatever was accepted lies inside the file
          for (const auto& b : *list) CHECK((b.data.data() >= bytes.data() && b.data.data() + b.data.size() <= bytes.data() + bytes.size()));
      } catch (const Error& e) {  // older header versions: refused, naming the file
        ++k.refused;
        CHECK_MESSAGE(std::string(e.what()).find("firmware " + name + ":") == 0, e.what());
      }
      break;
    }
  for (const Kind& k : kinds) {
    MESSAGE(k.prefix << "*" << k.suffix << ": " << k.parsed << " parsed, " << k.refused << " refused");
    CHECK(k.parsed > 0);
  }
  CHECK(files > 100);
  // The RDNA3 boards whose whole set the package carries: Navi31 (gfx1100) and Navi33 (gfx1102).
  for (const amd::am::FirmwareVersions& v : {kNavi31, amd::am::FirmwareVersions{{11, 0, 2}, {13, 0, 7}, {13, 0, 7}, {6, 0, 2}}}) {
    auto fw = amd::am::Firmware::load(sys::posix_os(), dir, v);
    CHECK(fw.ip.size() == 22);
    CHECK(fw.ip.back().type == psp::kFwRlcG);
    CHECK(!fw.sos.empty());
  }
}
