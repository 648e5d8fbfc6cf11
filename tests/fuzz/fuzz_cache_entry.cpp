// A compile-cache entry as read back from disk (codegen/cache.h). Most mutations break the entry's
// digest, so each input is also tried with a correct digest appended, which reaches the parser
// behind the check.
#include <string>

#include "codegen/cache.h"
#include "ir/sha256.h"
#include "tests/fuzz/fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ugpu;
  std::string bytes(fuzz::text(data, size));
  fuzz::refusals_ok([&] { (void)codegen::decode_cache_entry(bytes); });
  ir::Sha256 h;
  h.update(bytes);
  auto d = h.finish();
  fuzz::refusals_ok([&] { (void)codegen::decode_cache_entry(bytes + std::string(d.begin(), d.end())); });
  return 0;
}
