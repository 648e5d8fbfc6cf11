// PTX text as the emulated NVIDIA GPU loads it (emu/nv/ptx): parse the module and list its entries.
#include "emu/nv/ptx/ptx.h"
#include "tests/fuzz/fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ugpu;
  fuzz::refusals_ok([&] {
    auto m = emu::nv::parse_ptx(fuzz::text(data, size));
    (void)emu::nv::entries(*m);
  });
  return 0;
}
