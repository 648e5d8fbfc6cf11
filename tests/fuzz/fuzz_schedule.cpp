// The scheduler (schedule/schedule.h) on tensor graphs in the text form: a graph that parses is
// scheduled (make_schedule verifies it) and every kernel it writes goes through codegen's lower()
// for x86. Refusals (ugpu::Error) are fine anywhere; a crash, a sanitizer report or a hang is a bug.
#include "codegen/kernel.h"
#include "codegen/target.h"
#include "ir/text.h"
#include "schedule/schedule.h"
#include "tests/fuzz/fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ugpu;
  fuzz::refusals_ok([&] {
    ir::UOp u = ir::parse(fuzz::text(data, size));
    if (u.toposort().size() > 256) return;  // keep each input fast
    std::vector<ir::UOp> roots;
    if (u.op() == ir::Op::SINK) roots.assign(u.src().begin(), u.src().end());
    else roots.push_back(u);
    int64_t next = int64_t{1} << 40;
    schedule::Schedule s = schedule::make_schedule(roots, [&] { return next++; });
    const codegen::Target& x86 = codegen::find_target("x86");
    for (const schedule::ScheduledKernel& k : s.kernels) fuzz::refusals_ok([&] { (void)codegen::lower(k.ast, x86, k.name); });
  });
  return 0;
}
