// RDNA3 machine code as the emulated AMD GPU decodes it (emu/amd/rdna3): every instruction of the
// input decoded and printed, whatever the words are.
#include <cstring>
#include <vector>

#include "emu/amd/rdna3/inst.h"
#include "tests/fuzz/fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ugpu::emu::amd;
  std::vector<uint32_t> words(size / 4);
  if (!words.empty()) std::memcpy(words.data(), data, words.size() * 4);
  for (size_t at = 0; at < words.size();) {
    Inst in, dual;
    decode(words.data() + at, static_cast<int>(std::min<size_t>(3, words.size() - at)), in, dual);
    (void)format(in);
    at += std::max<size_t>(1, in.size / 4);
  }
  return 0;
}
