// Kernel texts of the kernel suite that more than one test runs: the x86 suite
// (tests/codegen/test_kernels.cpp) and the RDNA3 executor (tests/emu/test_kernels.cpp).
#pragma once

namespace ugpu::test::suite {

// out = (a * b + a) max b over 257 elements of dtype {T}.
inline constexpr const char* kElementwise = R"(out = DEFINE_GLOBAL:{T}* {0}
a = DEFINE_GLOBAL:{T}* {1}
b = DEFINE_GLOBAL:{T}* {2}
i = RANGE(257) {0, GLOBAL}
x = LOAD:{T}(INDEX:{T}*(a, i))
y = LOAD:{T}(INDEX:{T}*(b, i))
SINK(END(STORE(INDEX:{T}*(out, i), MAX(x * y + x, y)), i))
)";

// A {OP} reduction of {RED} elements for each of {KEEP} outputs, elements at {IDX}.
inline constexpr const char* kReduce = R"(out = DEFINE_GLOBAL:{T}* {0}
x = DEFINE_GLOBAL:{T}* {1}
o = RANGE({KEEP}) {0, GLOBAL}
r = RANGE({RED}) {1, REDUCE}
v = REDUCE:{T}(LOAD:{T}(INDEX:{T}*(x, {IDX})), r) {{OP}}
SINK(END(STORE(INDEX:{T}*(out, o), v), o))
)";

// out[i] = (i - 50) // {D} + 1000 * ((i - 50) % {D}); {D} a constant or the variable n.
inline constexpr const char* kFloorDiv = R"(out = DEFINE_GLOBAL:int32* {0}
n = DEFINE_VAR {"n", 1, 100}
i = RANGE(100) {0, GLOBAL}
v = i - 50
SINK(END(STORE(INDEX:int32*(out, i), CAST:int32(v // {D} + 1000 * (v % {D}))), i))
)";

// out[i] = number of j < n with (j % 3 == 0) != (i % 2 == 0).
inline constexpr const char* kVariableLoop = R"(out = DEFINE_GLOBAL:int32* {0}
n = DEFINE_VAR {"n", 0, 1000}
i = RANGE(10) {0, GLOBAL}
j = RANGE(n) {1, REDUCE}
hit = (j % 3 == 0) != (i % 2 == 0)
SINK(END(STORE(INDEX:int32*(out, i), REDUCE:int32(CAST:int32(hit), j) {ADD}), i))
)";

}  // namespace ugpu::test::suite
