// safetensors headers and the JSON reader behind them (llm/safetensors.h, llm/json.h): model files are
// outside input. The bytes are parsed as a safetensors file and, separately, as JSON text.
#include "llm/json.h"
#include "llm/safetensors.h"
#include "tests/fuzz/fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ugpu;
  fuzz::refusals_ok([&] {
    llm::SafetensorsFile f = llm::SafetensorsFile::parse(std::span<const uint8_t>(data, size));
    for (const llm::SafetensorsTensor& t : f.tensors)
      if (t.bytes) (void)(f.bytes()[t.offset] + f.bytes()[t.offset + t.bytes - 1]);
  });
  fuzz::refusals_ok([&] { (void)llm::json::parse(std::string_view(reinterpret_cast<const char*>(data), size)); });
  return 0;
}
