// `ugpu decode`: hex text as the user gives it (tools/hex_words.h), then PM4, SDMA, NVIDIA pushbuffer
// or QMD (V03, V04, V05) decoding. The first byte picks the decoder; with its high bit set the rest
// is hex text, else raw little-endian dwords.
#include <cstring>
#include <vector>

#include "hw/amd/packets.h"
#include "hw/nv/methods.h"
#include "hw/nv/qmd_launch.h"
#include "tests/fuzz/fuzz.h"
#include "tools/hex_words.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ugpu;
  if (size == 0) return 0;
  uint8_t pick = data[0];
  ++data, --size;
  fuzz::refusals_ok([&] {
    std::vector<uint32_t> words;
    if (pick & 0x80) {
      words = tools::parse_hex_words(std::string(fuzz::text(data, size)), "input");
    } else {
      words.resize(size / 4);
      if (!words.empty()) std::memcpy(words.data(), data, words.size() * 4);
    }
    switch (pick & 7) {
      case 0: (void)hw::amd::describe_stream(hw::amd::Engine::Pm4, words); break;
      case 1: (void)hw::amd::describe_stream(hw::amd::Engine::Sdma, words); break;
      case 2: (void)hw::nv::describe_pushbuffer(words, hw::nv::kUgpuSubchannels); break;
      default: {
        const hw::nv::QmdLayout& layout = hw::nv::qmd_layout(3 + (pick & 7) % 3);
        words.resize(std::max<size_t>(words.size(), layout.bytes / 4));
        (void)hw::nv::describe_qmd(layout, words);
        (void)hw::nv::decode_qmd(layout, words);
      }
    }
  });
  return 0;
}
