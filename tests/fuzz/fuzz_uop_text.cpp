// The UOp text form (ir/text.h), as `ugpu print/simplify/compile/run` read it: parse, verify, print
// back, and for graphs that verify and are small, simplify.
#include "ir/symbolic.h"
#include "ir/text.h"
#include "ir/verify.h"
#include "tests/fuzz/fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ugpu;
  fuzz::refusals_ok([&] {
    ir::UOp u = ir::parse(fuzz::text(data, size));
    (void)ir::to_inline(u, 200);
    if (!ir::verify(u).empty()) return;
    (void)ir::print(u);
    if (u.toposort().size() <= 64) (void)ir::print(ir::simplify(u));
  });
  return 0;
}
