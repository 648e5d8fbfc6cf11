// Kernel texts the device tests share: the HCQ conformance suite (tests/hcq) and the AMD driver's
// tests (tests/amd).
#pragma once

namespace ugpu::test {

// out[i] = in[i] + 1 over 1000 elements.
inline constexpr const char* kAddOne = R"(out = DEFINE_GLOBAL:int32* {0}
in = DEFINE_GLOBAL:int32* {1}
i = RANGE(1000) {0, GLOBAL}
SINK(END(STORE(INDEX:int32*(out, i), LOAD:int32(INDEX:int32*(in, i)) + 1), i))
)";

// A loop of n steps that cannot be folded away (each step reads the other slot): n = 2^62 never ends.
inline constexpr const char* kSpin = R"(out = DEFINE_GLOBAL:uint32* {0}
n = DEFINE_VAR:index {"n", 1, 4611686018427387904}
i = RANGE(n) {0, LOOP}
SINK(END(STORE(INDEX:uint32*(out, i % 2), LOAD:uint32(INDEX:uint32*(out, (i + 1) % 2)) * 3 + 1), i))
)";

}  // namespace ugpu::test
