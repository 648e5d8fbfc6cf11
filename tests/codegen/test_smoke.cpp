#include <doctest/doctest.h>

#include "codegen/llvm/render.h"
#include "run.h"

using namespace ugpu;
using namespace ugpu::test;

TEST_CASE("x86: elementwise add runs") {
  auto k = kernel(R"(
out = DEFINE_GLOBAL:float* {0}
a = DEFINE_GLOBAL:float* {1}
b = DEFINE_GLOBAL:float* {2}
r0 = RANGE(100) {0, GLOBAL}
x = LOAD:float(INDEX:float*(a, r0)) + LOAD:float(INDEX:float*(b, r0))
SINK(END(STORE(INDEX:float*(out, r0), x), r0))
)");
  std::vector<float> a(100), b(100);
  for (int i = 0; i < 100; ++i) a[i] = i * 0.5f, b[i] = 100.0f - i;
  Buf A = Buf::of(a), B = Buf::of(b), O = Buf::zeros<float>(100);
  auto ck = run_x86(k, {&O, &A, &B});
  INFO(ck->source);
  auto o = O.as<float>(100);
  for (int i = 0; i < 100; ++i) CHECK(o[i] == a[i] + b[i]);
}
