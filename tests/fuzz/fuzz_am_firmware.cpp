// What the AM driver reads from outside before it touches a GPU: the IP discovery table at the top of
// VRAM and the firmware files (every header version it parses), and the register log `ugpu decode
// --regs` reads. The first byte picks the parser.
#include <string>
#include <string_view>

#include "drivers/amd/am/discovery.h"
#include "drivers/amd/am/firmware.h"
#include "hw/amd/psp.h"
#include "hw/amd/reg_trace.h"
#include "tests/fuzz/fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ugpu::amd::am;
  if (size == 0) return 0;
  uint8_t pick = data[0] % 8;
  std::span<const uint8_t> f(data + 1, size - 1);
  const std::string name = "fuzz.bin";
  ugpu::fuzz::refusals_ok([&] {
    Firmware fw;
    const uint32_t stacks[] = {ugpu::hw::amd::psp::kFwRs64MecP0Stack, ugpu::hw::amd::psp::kFwRs64MecP1Stack};
    switch (pick) {
      case 0: (void)parse_discovery(f).describe(); break;
      case 1: parse_psp_sos(name, f, fw); break;
      case 2: parse_smu(name, f, fw); break;
      case 3: parse_sdma(name, f, fw); break;
      case 4: parse_rs64(name, f, ugpu::hw::amd::psp::kFwRs64Mec, stacks, fw); break;
      case 5: parse_imu(name, f, fw); break;
      case 6: parse_rlc(name, f, fw); break;
      default:
        (void)ugpu::hw::amd::describe_reg_trace(ugpu::hw::amd::parse_reg_trace(std::string_view(reinterpret_cast<const char*>(f.data()), f.size())));
    }
    // Whatever was accepted lies inside the input.
    for (const auto* list : {&fw.sos, &fw.ip})
      for (const FwBlob& b : *list)
        if (b.data.data() < f.data() || b.data.data() + b.data.size() > f.data() + f.size()) __builtin_trap();
  });
  return 0;
}
