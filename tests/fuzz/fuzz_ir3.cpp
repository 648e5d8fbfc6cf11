// Adreno input as ugpu reads it: ir3 instruction words (decode, print, and for every word that decodes,
// encode it again and decode that to the same text), a kernel binary (codegen/ir3/object.h, what a
// driver loads) and CP packet streams (`ugpu decode --qcom`). The first byte picks which.
#include <cstring>
#include <string>
#include <vector>

#include "codegen/ir3/object.h"
#include "hw/qcom/ir3.h"
#include "hw/qcom/packets.h"
#include "tests/fuzz/fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ugpu;
  if (size == 0) return 0;
  uint8_t pick = data[0];
  ++data, --size;
  switch (pick % 3) {
    case 0: {
      std::vector<uint64_t> words(size / 8);
      if (!words.empty()) std::memcpy(words.data(), data, words.size() * 8);
      for (uint64_t w : words) {
        auto i = hw::qcom::ir3::decode(w);
        if (!i) continue;
        std::string text = hw::qcom::ir3::format(*i);
        uint64_t again = 0;
        fuzz::refusals_ok([&] { again = hw::qcom::ir3::encode(*i); });
        if (!again) continue;
        auto j = hw::qcom::ir3::decode(again);
        if (!j || hw::qcom::ir3::format(*j) != text) __builtin_trap();  // a decoded word re-encodes to the same instruction
      }
      (void)hw::qcom::ir3::disassemble(words);
      break;
    }
    case 1: fuzz::refusals_ok([&] { (void)codegen::read_ir3_object({data, size}); }); break;
    default: {
      std::vector<uint32_t> words(size / 4);
      if (!words.empty()) std::memcpy(words.data(), data, words.size() * 4);
      fuzz::refusals_ok([&] { (void)hw::qcom::describe_stream(words); });
    }
  }
  return 0;
}
