// Unit tests of single passes where the behaviour is specified exactly.
#include <doctest/doctest.h>

#include <algorithm>
#include <thread>

#include "codegen/passes.h"
#include "run.h"

using namespace ugpu;
using namespace ugpu::test;
using namespace ugpu::codegen;
using ugpu::ir::UOp;

TEST_CASE("magic-number division equals floor division on the whole promised range") {
  for (int64_t d = 2; d <= 300; ++d)
    for (int64_t max_x : {int64_t{1000}, int64_t{65535}, int64_t{1} << 24, int64_t{INT32_MAX}}) {
      auto mg = magic_divisor(d, max_x);
      REQUIRE(mg);
      int64_t step = max_x <= 70000 ? 1 : max_x / 50000;
      int bad = 0;
      for (int64_t x = 0; x <= max_x; x += step)
        bad += ((static_cast<unsigned __int128>(x) * mg->m) >> mg->s) != static_cast<unsigned __int128>(x / d);
      for (int64_t x = max_x - 2 * d; x <= max_x; ++x)
        bad += x >= 0 && ((static_cast<unsigned __int128>(x) * mg->m) >> mg->s) != static_cast<unsigned __int128>(x / d);
      CAPTURE(d);
      CAPTURE(max_x);
      CHECK(bad == 0);
    }
  CHECK(!magic_divisor(1, 100));
  CHECK(!magic_divisor(7, -1));
}

TEST_CASE("magic-number division never shifts a narrow type by its width or more (issue 18: x % 2147483647 on int32)") {
  // x < 17 with a divisor near the type's top: the magic shift is past the width, so the multiply
  // and shift must happen in int64. Stored per element on a LOOP axis, as the failing kernels were.
  for (auto [type, divisor] : {std::pair{"int32", "2147483647"}, std::pair{"int16", "30000"}, std::pair{"int8", "100"}}) {
    CAPTURE(type);
    std::string t = type;
    auto k = kernel("out = DEFINE_GLOBAL:" + t + "* {0}\ni = RANGE(17) {0, LOOP}\n" + "SINK(END(STORE(INDEX:" + t + "*(out, i), (CAST:" + t +
                    "(i) % CONST:" + t + " {" + divisor + "}) + (CAST:" + t + "(i) // CONST:" + t + " {" + divisor + "})), i))\n");
    UOp lowered = lower(k, x86()).sink;
    for (const UOp& u : lowered.toposort())
      if (u.op() == ir::Op::SHR && u.src(1).is_const()) CHECK(u.src(1).const_int() < u.dtype().bitsize());
    Buf out = Buf::zeros<int64_t>(17);
    run_x86(k, {&out});
    for (int64_t i = 0; i < 17; ++i) {
      int64_t got = t == "int32" ? out.as<int32_t>(17)[i] : t == "int16" ? out.as<int16_t>(17)[i] : out.as<int8_t>(17)[i];
      CHECK(got == i);  // i % d == i and i // d == 0 for every i < 17
    }
  }
}

TEST_CASE("a load's gate survives a WHERE on the same condition around its value (issue 20: Q4_0 decoding faulted)") {
  // WHERE(15 < x, load(x - 16 gated by 15 < x), 0): the WHERE computes both sides, so the gate must
  // stay a gate; simplified to `true` by the WHERE's condition, lanes x < 16 read before the buffer.
  auto k = kernel(
      "out = DEFINE_GLOBAL:float* {0}\nin = DEFINE_GLOBAL:uint8* {1}\nr = RANGE(64) {0, GLOBAL}\nx = r % 32\nc = 15 < x\n"
      "SINK(END(STORE(INDEX:float*(out, r), CAST:float(WHERE(c, CAST:int32(LOAD:uint8(INDEX:uint8*(in, WHERE(c, (r // 32) * 16 + x - 16, "
      "INVALID)))), 0))), r))\n");
  UOp lowered = lower(k, x86()).sink;
  int gated = 0;
  for (const UOp& u : lowered.toposort())
    if (u.op() == ir::Op::INDEX && u.src().size() == 3) gated += !u.src(2).is_const();
  CHECK(gated == 1);
  std::vector<uint8_t> bytes(32);
  for (int i = 0; i < 32; ++i) bytes[i] = static_cast<uint8_t>(i + 1);
  Buf in = Buf::of(bytes), out = Buf::zeros<float>(64);
  run_x86(k, {&out, &in});
  for (int r = 0; r < 64; ++r) CHECK(out.as<float>(64)[r] == (r % 32 > 15 ? float(r / 32 * 16 + r % 32 - 16 + 1) : 0.0f));
}

TEST_CASE("an unmasked load's address is not simplified by a WHERE around its value") {
  // WHERE(r < 16, in[r % 16], 0): the load runs for every lane, so `r % 16` must stay (as `r & 15`),
  // not become `r`, which reads past the 16 elements for the lanes the WHERE discards.
  auto k = kernel(
      "out = DEFINE_GLOBAL:float* {0}\nin = DEFINE_GLOBAL:float* {1}\nr = RANGE(64) {0, GLOBAL}\n"
      "SINK(END(STORE(INDEX:float*(out, r), WHERE(r < 16, LOAD:float(INDEX:float*(in, r % 16)), 0.0)), r))\n");
  UOp lowered = lower(k, x86()).sink;
  bool wrapped = false;
  for (const UOp& u : lowered.toposort())
    if (u.op() == ir::Op::INDEX && u.src(0).op() == ir::Op::DEFINE_GLOBAL && u.src(0).arg_as<int64_t>() == 1)
      for (const UOp& a : u.src(1).toposort()) wrapped = wrapped || a.op() == ir::Op::AND || a.op() == ir::Op::CMOD || a.op() == ir::Op::FLOORMOD;
  CHECK(wrapped);
}

TEST_CASE("index math narrows to int32 where bounds allow and widens where they do not") {
  auto k = kernel(R"(out = DEFINE_GLOBAL:float* {0}
i = RANGE(70000) {0, LOOP}
j = RANGE(70000) {1, LOOP}
SINK(END(STORE(INDEX:float*(out, i*70000 + j), 1.0), i, j))
)");
  UOp s = lower_index_dtype(k);
  bool saw64 = false;
  for (const UOp& u : s.toposort()) {
    CHECK(u.dtype() != ir::dtypes::index);
    if (u.op() == ir::Op::RANGE) CHECK(u.dtype() == ir::dtypes::int32);
    if (u.op() == ir::Op::ADD) saw64 = saw64 || u.dtype() == ir::dtypes::int64;
  }
  CHECK(saw64);  // 70000*70000 > 2^31
}

TEST_CASE("an END closing an int64 loop and an int32 loop keeps both") {
  auto k = kernel(R"(out = DEFINE_GLOBAL:int32* {0}
n = DEFINE_VAR:index {"n", 1, 5000000000}
i = RANGE(n) {0, LOOP}
j = RANGE(3) {1, LOOP}
SINK(END(STORE(INDEX:int32*(out, WHERE(i < 4, i*3 + j, INVALID)), CAST:int32(i*10 + j)), i, j))
)");
  Buf O = Buf::zeros<int32_t>(12);
  auto ck = run_x86(k, {&O}, {4});
  bool mixed = false;
  for (const UOp& u : ck->kernel.linear)
    if (u.op() == ir::Op::RANGE) mixed = mixed || u.dtype() == ir::dtypes::int64;
  CHECK(mixed);
  auto o = O.as<int32_t>(12);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 3; ++j) CHECK(o[i * 3 + j] == i * 10 + j);
}

TEST_CASE("linearizer: reduce init before its loop, result after; bad nesting is an error") {
  auto ck = compile(kernel(R"(out = DEFINE_GLOBAL:float* {0}
x = DEFINE_GLOBAL:float* {1}
i = RANGE(4) {0, LOOP}
r = RANGE(8) {1, REDUCE}
SINK(END(STORE(INDEX:float*(out, i), REDUCE:float(LOAD:float(INDEX:float*(x, i*8 + r)), r) {ADD}), i))
)"),
                    x86());
  const auto& L = ck->kernel.linear;
  auto pos = [&](auto pred) {
    for (size_t n = 0; n < L.size(); ++n)
      if (pred(L[n])) return static_cast<int>(n);
    return -1;
  };
  int open_i = pos([](const UOp& u) { return u.op() == ir::Op::RANGE && u.arg_as<ir::RangeArg>().axis == 0; });
  int open_r = pos([](const UOp& u) { return u.op() == ir::Op::RANGE && u.arg_as<ir::RangeArg>().axis == 1; });
  int init = pos([](const UOp& u) { return u.op() == ir::Op::STORE && u.src(1).is_const(); });
  int close_r = pos([&](const UOp& u) { return u.op() == ir::Op::END && u.src(0) == L[open_r]; });
  int out_store = pos([](const UOp& u) { return u.op() == ir::Op::STORE && u.src(0).src(0).op() == ir::Op::DEFINE_GLOBAL; });
  CHECK(open_i < init);
  CHECK(init < open_r);
  CHECK(open_r < close_r);
  CHECK(close_r < out_store);
  // A value from inside a loop used after it without an END is refused.
  auto leak = kernel(R"(out = DEFINE_GLOBAL:float* {0}
r = RANGE(8) {0, LOOP}
SINK(STORE(INDEX:float*(out, 0), CAST:float(r)), END(STORE(INDEX:float*(out, r), 1.0), r))
)");
  CHECK_THROWS_AS(compile(leak, x86()), Error);
}

TEST_CASE("two reductions over one loop, one of them the same in every outer iteration, are both reset in it") {
  // out[i, j] = sum_k a[(i*3 + j)*5 + k] + sum_k a[k]: the second sum does not vary with i or j, but it
  // runs in the same k loop as the first, which runs inside j (issue 21: LANES copies did this).
  Buf A = Buf::of(std::vector<int32_t>{1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20,
                                       21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40,
                                       41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60}),
      O = Buf::zeros<int32_t>(12);
  run_x86(kernel(R"(out = DEFINE_GLOBAL:int32* {0}
a = DEFINE_GLOBAL:int32* {1}
i = RANGE(4) {0, GLOBAL}
j = RANGE(3) {1, LOOP}
k = RANGE(5) {2, REDUCE}
SINK(END(STORE(INDEX:int32*(out, i*3 + j), REDUCE:int32(LOAD:int32(INDEX:int32*(a, (i*3 + j)*5 + k)), k) {ADD} + REDUCE:int32(LOAD:int32(INDEX:int32*(a, k)), k) {ADD}), i, j))
)"),
          {&O, &A});
  std::vector<int32_t> got = O.as<int32_t>(12);
  for (int e = 0; e < 12; ++e) CHECK(got[e] == (5 * (5 * e + 1) + 10) + 15);
}

TEST_CASE("x86: a launch cut into parts computes every output exactly once, also from several threads") {
  // out[i, j] += 1 for the 33x45 grid of the matmul's shape: any output covered twice or never shows.
  auto k = kernel(R"(out = DEFINE_GLOBAL:int32* {0}
i = RANGE(33) {0, GLOBAL}
j = RANGE(45) {1, GLOBAL}
p = INDEX:int32*(out, i*45 + j)
SINK(END(STORE(p, LOAD:int32(p) + 1), i, j))
)");
  auto ck = compile(k, x86());
  CHECK(ck->kernel.global_size[0].const_int() == 33);
  HostFunction fn = HostFunction::load(ck->binary, ck->kernel.name);
  for (int parts : {1, 2, 3, 7, 32, 33}) {
    Buf O = Buf::zeros<int32_t>(33 * 45);
    uint64_t args[] = {reinterpret_cast<uint64_t>(O.bytes.data())};
    std::vector<std::thread> threads;
    for (int part = 0; part < parts; ++part) threads.emplace_back([&, part] { fn(args, part, parts); });
    for (auto& t : threads) t.join();
    auto o = O.as<int32_t>(33 * 45);
    CAPTURE(parts);
    CHECK(std::count(o.begin(), o.end(), 1) == 33 * 45);
  }
}
