// The GGUF reader (llm/gguf.h): model files are outside input. Parse, then read every metadata value
// and tensor the way `ugpu llm --info` will.
#include "llm/gguf.h"
#include "tests/fuzz/fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ugpu;
  fuzz::refusals_ok([&] {
    llm::GgufFile f = llm::GgufFile::parse(std::span<const uint8_t>(data, size));
    for (const auto& [key, value] : f.metadata) (void)value.to_string();
    for (const llm::GgufTensor& t : f.tensors) {
      std::span<const uint8_t> bytes = f.data(t);
      if (!bytes.empty()) (void)(bytes[0] + bytes[bytes.size() - 1]);
    }
  });
  return 0;
}
