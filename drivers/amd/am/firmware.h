// The firmware the AM path hands to the PSP (docs/amd.md §AM): read from /lib/firmware/amdgpu (Debian's
// firmware-amd-graphics; $UGPU_FIRMWARE_DIR overrides) through the Os seam, with every header
// (hw/amd/ucode.h) and every section range checked, and cut into what the boot sends: the PSP
// bootloader's components, the TOC, the SMU firmware and the LOAD_IP_FW list (RLC_G last, before
// AUTOLOAD_RLC). File names come from the IP versions discovery reported.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "drivers/amd/am/discovery.h"
#include "sys/os.h"

namespace ugpu::amd::am {

struct FwBlob {
  std::string what;   // "gc_11_0_0_mec.bin: RS64_MEC"
  uint32_t type = 0;  // the bootloader command (sos) or the LOAD_IP_FW type (hw/amd/psp.h)
  std::span<const uint8_t> data;
};

struct FirmwareVersions {
  IpVersion gc, mp0, mp1, sdma;
};

class Firmware {
 public:
  static std::string default_dir();  // $UGPU_FIRMWARE_DIR, else /lib/firmware/amdgpu
  // Reads and checks every file the boot needs; a missing or malformed one is an Error naming the
  // file, what is wrong and the package that provides it.
  static Firmware load(sys::Os& os, const std::string& dir, const FirmwareVersions& v);

  std::vector<FwBlob> sos;  // bootloader components in load order (KDB, SPL, SYS_DRV, ..., SOS)
  FwBlob toc;               // empty data when the sOS file has none
  FwBlob reg_list;          // the RL component (LOAD_IP_FW REG_LIST); may be empty
  FwBlob smu;
  std::vector<FwBlob> ip;          // LOAD_IP_FW in order, RLC_G last
  uint64_t mec_start = 0;          // the RS64 MEC's first instruction (a byte address in its ucode space)
  std::vector<std::string> files;  // every file read, for messages
  std::string describe() const;

 private:
  std::map<std::string, std::shared_ptr<const std::vector<uint8_t>>> bytes_;
};

// The parsers, exposed for tests and the fuzzer: each takes one file's bytes and appends what it finds.
void parse_psp_sos(const std::string& name, std::span<const uint8_t> f, Firmware& out);
void parse_smu(const std::string& name, std::span<const uint8_t> f, Firmware& out);
void parse_sdma(const std::string& name, std::span<const uint8_t> f, Firmware& out);
void parse_rs64(const std::string& name, std::span<const uint8_t> f, uint32_t code_type, std::span<const uint32_t> stack_types, Firmware& out,
                uint64_t* start = nullptr);
void parse_imu(const std::string& name, std::span<const uint8_t> f, Firmware& out);
void parse_rlc(const std::string& name, std::span<const uint8_t> f, Firmware& out);

}  // namespace ugpu::amd::am
