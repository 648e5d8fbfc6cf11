#include "drivers/amd/am/firmware.h"

#include <fcntl.h>

#include <cstdlib>
#include <cstring>

#include "common/error.h"
#include "common/hex.h"
#include "hw/amd/psp.h"
#include "hw/amd/ucode.h"

namespace ugpu::amd::am {
namespace u = hw::amd::ucode;
namespace psp = hw::amd::psp;

namespace {
constexpr const char* kPackage = "Debian's firmware-amd-graphics (component non-free-firmware; scripts/setup --tests installs it)";
constexpr size_t kMaxFile = 64 << 20;

// One firmware file being parsed: reads headers and sections with bounds checks.
struct File {
  const std::string& name;
  std::span<const uint8_t> f;
  template <class T>
  T header(const char* what) const {
    u::Common c = at<u::Common>(0, "common header");
    if (c.header_size_bytes < sizeof(T) && !std::is_same_v<T, u::Common>)
      fail(std::string(what) + " header needs " + std::to_string(sizeof(T)) + " bytes, the file says its header has " +
           std::to_string(c.header_size_bytes));
    return at<T>(0, what);
  }
  template <class T>
  T at(uint64_t off, const char* what) const {
    if (off > f.size() || sizeof(T) > f.size() - off)
      fail(std::string(what) + " at byte " + hex(off) + " runs past the end of the " + std::to_string(f.size()) + "-byte file");
    T t;
    std::memcpy(&t, f.data() + off, sizeof t);
    return t;
  }
  std::span<const uint8_t> section(uint64_t off, uint64_t size, const char* what) const {
    if (!size) fail(std::string(what) + " is empty");
    if (off > f.size() || size > f.size() - off)
      fail(std::string(what) + " (" + std::to_string(size) + " bytes at " + hex(off) + ") runs past the end of the " + std::to_string(f.size()) +
           "-byte file");
    return f.subspan(off, size);
  }
  u::Common common(int major, std::initializer_list<int> header_majors) const {
    auto c = at<u::Common>(0, "common header");
    if (c.size_bytes > f.size())
      fail("the header says the file has " + std::to_string(c.size_bytes) + " bytes; it has " + std::to_string(f.size()) + " (truncated?)");
    bool known = false;
    for (int h : header_majors) known |= c.header_version_major == h;
    if (!known)
      fail("header version " + std::to_string(c.header_version_major) + "." + std::to_string(c.header_version_minor) + " is not one ugpu reads");
    if (major >= 0 && c.ip_version_major != major)
      fail("is firmware for IP version " + std::to_string(c.ip_version_major) + "." + std::to_string(c.ip_version_minor) + ", not " +
           std::to_string(major) + ".x");
    return c;
  }
  [[noreturn]] void fail(const std::string& what) const { throw Error("firmware " + name + ": " + what + " (from " + kPackage + ")"); }
};

std::string ver_name(const IpVersion& v) { return std::to_string(v.major) + "_" + std::to_string(v.minor) + "_" + std::to_string(v.revision); }

std::vector<uint8_t> read_all(sys::Os& os, const std::string& path, const std::string& name) {
  if (!os.exists(path))
    throw Error("firmware " + path + " is missing: the AM path loads " + name + " into the GPU's PSP. Install " + kPackage +
                ", or point $UGPU_FIRMWARE_DIR at a directory holding it");
  sys::Fd fd(os, path, O_RDONLY);
  std::vector<uint8_t> out;
  constexpr size_t kChunk = 256 << 10;
  std::vector<uint8_t> chunk(kChunk);
  for (;;) {
    size_t n = os.pread(fd.get(), chunk, out.size());
    out.insert(out.end(), chunk.begin(), chunk.begin() + long(n));
    if (n < kChunk) break;
    if (out.size() > kMaxFile) throw Error("firmware " + path + " is larger than " + std::to_string(kMaxFile >> 20) + " MiB: not a firmware file");
  }
  return out;
}
}  // namespace

std::string Firmware::default_dir() {
  const char* e = std::getenv("UGPU_FIRMWARE_DIR");
  return e && *e ? e : "/lib/firmware/amdgpu";
}

void parse_psp_sos(const std::string& name, std::span<const uint8_t> bytes, Firmware& out) {
  File f{name, bytes};
  auto c = f.common(-1, {2});
  auto h = f.at<u::PspV2_0>(0, "PSP v2 header");
  if (h.bin_count == 0 || h.bin_count > 32) f.fail("lists " + std::to_string(h.bin_count) + " components");
  size_t descs = sizeof(u::PspV2_0) + (c.header_version_minor >= 1 ? 4 : 0);  // v2.1 adds an aux index
  std::map<uint32_t, FwBlob> by_type;
  for (uint32_t i = 0; i < h.bin_count; ++i) {
    auto d = f.at<u::PspBinDesc>(descs + i * sizeof(u::PspBinDesc), "component descriptor");
    const char* tn = u::psp_fw_type_name(d.fw_type);
    std::string what = name + ": " + (tn ? tn : "type " + std::to_string(d.fw_type));
    if (d.size_bytes > psp::kBootloaderBufferBytes) f.fail(what + " is " + std::to_string(d.size_bytes) + " bytes, more than the PSP's 1 MiB buffer");
    auto data = f.section(uint64_t(c.ucode_array_offset_bytes) + d.offset_bytes, d.size_bytes, what.c_str());
    if (by_type.count(d.fw_type)) f.fail(what + " appears twice");
    by_type[d.fw_type] = {what, 0, data};
  }
  if (!by_type.count(u::kPspSos)) f.fail("has no SOS component");
  if (!by_type.count(u::kPspSysDrv)) f.fail("has no SYS_DRV component");
  // Bootloader order. SPL sends the KDB blob again (the PSP takes the key database as the SPL table on 13.x).
  const std::pair<uint32_t, uint32_t> order[] = {{u::kPspKdb, psp::kBlLoadKeyDatabase}, {u::kPspSpl, psp::kBlLoadTosSplTable},
                                                 {u::kPspSysDrv, psp::kBlLoadSysDrv},   {u::kPspSocDrv, psp::kBlLoadSocDrv},
                                                 {u::kPspIntfDrv, psp::kBlLoadIntfDrv}, {u::kPspDbgDrv, psp::kBlLoadDbgDrv},
                                                 {u::kPspRasDrv, psp::kBlLoadRasDrv},   {u::kPspSos, psp::kBlLoadSosDrv}};
  for (auto [type, cmd] : order) {
    auto it = by_type.find(type);
    if (it == by_type.end()) continue;
    FwBlob b = it->second;
    if (type == u::kPspSpl) {
      auto kdb = by_type.find(u::kPspKdb);
      if (kdb == by_type.end()) f.fail("has an SPL component but no KDB to send with it");
      b.data = kdb->second.data;
    }
    b.type = cmd;
    out.sos.push_back(b);
  }
  if (auto it = by_type.find(u::kPspToc); it != by_type.end()) out.toc = it->second;
  if (auto it = by_type.find(u::kPspRl); it != by_type.end()) out.reg_list = {it->second.what, psp::kFwRegList, it->second.data};
}

void parse_smu(const std::string& name, std::span<const uint8_t> bytes, Firmware& out) {
  File f{name, bytes};
  auto c = f.common(-1, {1, 2});
  f.header<u::SmcV1_0>("SMC");
  out.smu = {name + ": SMU", psp::kFwSmu, f.section(c.ucode_array_offset_bytes, c.ucode_size_bytes, "SMU code")};
}

void parse_sdma(const std::string& name, std::span<const uint8_t> bytes, Firmware& out) {
  File f{name, bytes};
  auto c = f.common(-1, {2, 3});
  if (c.header_version_major == 3) {  // one RS64 image
    auto h = f.header<u::SdmaV3_0>("SDMA v3");
    out.ip.push_back({name + ": SDMA_UCODE_TH0", psp::kFwSdmaTh0, f.section(h.ucode_offset_bytes, h.ucode_size_bytes, "SDMA code")});
    return;
  }
  auto h = f.header<u::SdmaV2_0>("SDMA v2");
  out.ip.push_back({name + ": SDMA_UCODE_TH1", psp::kFwSdmaTh1, f.section(h.ctl_ucode_offset, h.ctl_ucode_size_bytes, "SDMA control thread")});
  out.ip.push_back(
      {name + ": SDMA_UCODE_TH0", psp::kFwSdmaTh0, f.section(c.ucode_array_offset_bytes, h.ctx_ucode_size_bytes, "SDMA context thread")});
}

void parse_rs64(const std::string& name, std::span<const uint8_t> bytes, uint32_t code_type, std::span<const uint32_t> stack_types, Firmware& out,
                uint64_t* start) {
  File f{name, bytes};
  auto c = f.common(-1, {2});
  auto h = f.header<u::GfxV2_0>("RS64 gfx v2");
  std::string what = name + ": " + psp::fw_type_name(code_type);
  out.ip.push_back({what, code_type, f.section(c.ucode_array_offset_bytes, h.ucode_size_bytes, what.c_str())});
  auto stack = f.section(h.data_offset_bytes, h.data_size_bytes, (name + " stack").c_str());
  for (uint32_t t : stack_types) out.ip.push_back({name + ": " + psp::fw_type_name(t), t, stack});
  if (start) *start = uint64_t(h.ucode_start_addr_hi) << 32 | h.ucode_start_addr_lo;
}

void parse_imu(const std::string& name, std::span<const uint8_t> bytes, Firmware& out) {
  File f{name, bytes};
  auto c = f.common(-1, {1});
  auto h = f.header<u::ImuV1_0>("IMU v1");
  // The IMU's data follows its instructions directly; the header's own offsets are not used (amdgpu_ucode.c).
  out.ip.push_back({name + ": IMU_I", psp::kFwImuI, f.section(c.ucode_array_offset_bytes, h.iram_size_bytes, "IMU instructions")});
  out.ip.push_back(
      {name + ": IMU_D", psp::kFwImuD, f.section(uint64_t(c.ucode_array_offset_bytes) + h.iram_size_bytes, h.dram_size_bytes, "IMU data")});
}

void parse_rlc(const std::string& name, std::span<const uint8_t> bytes, Firmware& out) {
  File f{name, bytes};
  auto c = f.common(-1, {2});
  if (c.header_version_minor < 2)
    f.fail("RLC header v2." + std::to_string(c.header_version_minor) + " has no IRAM/DRAM images; gfx11 needs v2.2 or later");
  auto h = f.header<u::RlcV2_2>("RLC v2.2");
  const auto& l = h.v2_1;
  auto add = [&](uint32_t type, uint64_t off, uint64_t size) {
    if (!size) return;  // absent section: amdgpu skips it too
    std::string what = name + ": " + psp::fw_type_name(type);
    out.ip.push_back({what, type, f.section(off, size, what.c_str())});
  };
  add(psp::kFwRlcRestoreListGpmMem, l.save_restore_list_gpm.offset_bytes, l.save_restore_list_gpm.size_bytes);
  add(psp::kFwRlcRestoreListSrmMem, l.save_restore_list_srm.offset_bytes, l.save_restore_list_srm.size_bytes);
  add(psp::kFwRlcIram, h.rlc_iram_ucode_offset_bytes, h.rlc_iram_ucode_size_bytes);
  add(psp::kFwRlcDramBoot, h.rlc_dram_ucode_offset_bytes, h.rlc_dram_ucode_size_bytes);
  if (c.header_version_minor >= 3) {
    auto h3 = f.header<u::RlcV2_3>("RLC v2.3");
    add(psp::kFwRlcP, h3.rlcp_ucode_offset_bytes, h3.rlcp_ucode_size_bytes);
    add(psp::kFwRlcV, h3.rlcv_ucode_offset_bytes, h3.rlcv_ucode_size_bytes);
  }
  add(psp::kFwRlcG, c.ucode_array_offset_bytes, c.ucode_size_bytes);  // last: AUTOLOAD_RLC follows it
}

Firmware Firmware::load(sys::Os& os, const std::string& dir, const FirmwareVersions& v) {
  Firmware fw;
  auto file = [&](const std::string& name) -> std::span<const uint8_t> {
    auto bytes = std::make_shared<const std::vector<uint8_t>>(read_all(os, dir + "/" + name, name));
    fw.bytes_[name] = bytes;
    fw.files.push_back(dir + "/" + name);
    return *bytes;
  };
  const std::string gc = "gc_" + ver_name(v.gc) + "_";
  parse_psp_sos("psp_" + ver_name(v.mp0) + "_sos.bin", file("psp_" + ver_name(v.mp0) + "_sos.bin"), fw);
  parse_smu("smu_" + ver_name(v.mp1) + ".bin", file("smu_" + ver_name(v.mp1) + ".bin"), fw);
  parse_sdma("sdma_" + ver_name(v.sdma) + ".bin", file("sdma_" + ver_name(v.sdma) + ".bin"), fw);
  const uint32_t pfp[] = {psp::kFwRs64PfpP0Stack, psp::kFwRs64PfpP1Stack}, me[] = {psp::kFwRs64MeP0Stack, psp::kFwRs64MeP1Stack},
                 mec[] = {psp::kFwRs64MecP0Stack, psp::kFwRs64MecP1Stack, psp::kFwRs64MecP2Stack, psp::kFwRs64MecP3Stack};
  parse_rs64(gc + "pfp.bin", file(gc + "pfp.bin"), psp::kFwRs64Pfp, pfp, fw);
  parse_rs64(gc + "me.bin", file(gc + "me.bin"), psp::kFwRs64Me, me, fw);
  parse_rs64(gc + "mec.bin", file(gc + "mec.bin"), psp::kFwRs64Mec, mec, fw, &fw.mec_start);
  parse_imu(gc + "imu.bin", file(gc + "imu.bin"), fw);
  parse_rlc(gc + "rlc.bin", file(gc + "rlc.bin"), fw);
  return fw;
}

std::string Firmware::describe() const {
  std::string s;
  auto line = [&](const FwBlob& b) { s += "  " + b.what + " (" + std::to_string(b.data.size()) + " bytes)\n"; };
  for (const auto& b : sos) line(b);
  if (!toc.data.empty()) line(toc);
  line(smu);
  for (const auto& b : ip) line(b);
  return s;
}

}  // namespace ugpu::amd::am
