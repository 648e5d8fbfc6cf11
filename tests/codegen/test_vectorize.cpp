// UPCAST/UNROLL expansion and vector memory access: results on x86 against scalar references, which
// accesses become vectors (and which must not, for alignment), and the vector instructions in the
// AMDGPU and NVPTX output.
#include <doctest/doctest.h>

#include <cmath>
#include <map>
#include <random>
#include <unordered_map>

#include "codegen/builtin_kernels.h"
#include "codegen/kernel.h"
#include "codegen/passes.h"
#include "ir/alu.h"
#include "run.h"

using namespace ugpu;
using namespace ugpu::test;
using namespace ugpu::codegen;
using ugpu::ir::Op;
using ugpu::ir::UOp;

namespace {

// Vector accesses in a lowered kernel, by lane count: {lanes -> number of LOADs / STOREs}.
struct VectorCounts {
  std::map<int, int> loads, stores;
};
VectorCounts vectors(const LoweredKernel& k) {
  VectorCounts c;
  for (const UOp& u : k.linear) {
    if (u.op() == Op::LOAD && u.dtype().count > 1) ++c.loads[u.dtype().count];
    if (u.op() == Op::STORE && u.src(1).dtype().count > 1) ++c.stores[u.src(1).dtype().count];
  }
  return c;
}

std::vector<float> random_floats(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-4, 4);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

const std::string kShift = R"(out = DEFINE_GLOBAL:float* {0}
a = DEFINE_GLOBAL:float* {1}
i = RANGE(16) {0, GLOBAL}
j = RANGE(24) {1, GLOBAL}
u = RANGE(4) {2, UPCAST}
SINK(END(STORE(INDEX:float*(out, i*100 + j*4 + u + {S}), LOAD:float(INDEX:float*(a, i*100 + j*4 + u + {S})) * 2.0), i, j, u))
)";

}  // namespace

// Runs kShift with shift `s`: out = a * 2 on the 16 x 96 elements from offset s of each row of 100
// (every other element stays 0). Returns the vector accesses it made.
VectorCounts run_shift(int s, uint32_t seed) {
  auto a = random_floats(1700, seed);
  Buf A = Buf::of(a), O = Buf::zeros<float>(1700);
  auto ck = run_x86(kernel(fill(kShift, {{"S", std::to_string(s)}})), {&O, &A});
  auto o = O.as<float>(1700);
  int bad = 0;
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 100; ++j) bad += o[i * 100 + j] != (j >= s && j < s + 96 ? a[i * 100 + j] * 2 : 0.0f);
  CHECK(bad == 0);
  return vectors(ck->kernel);
}

TEST_CASE("UPCAST: four consecutive floats become one 16-byte load and store, with the same results") {
  VectorCounts c = run_shift(0, 1);
  CHECK(c.loads == std::map<int, int>{{4, 1}});
  CHECK(c.stores == std::map<int, int>{{4, 1}});
}

TEST_CASE("UPCAST: an index that is not a multiple of the width gets only the accesses it can prove aligned") {
  // Offsets 1..4 from a multiple of 4: lanes 2,3 are an aligned pair; 1 and 4 stay scalar.
  VectorCounts c = run_shift(1, 2);
  CHECK(c.loads == std::map<int, int>{{2, 1}});
  CHECK(c.stores == std::map<int, int>{{2, 1}});
  // A row stride that is odd proves nothing: everything stays scalar.
  auto odd = compile(kernel(R"(out = DEFINE_GLOBAL:float* {0}
i = RANGE(16) {0, GLOBAL}
u = RANGE(4) {1, UPCAST}
SINK(END(STORE(INDEX:float*(out, i*7 + u), 1.0), i, u))
)"),
                     find_target("sm_90"));
  CHECK(vectors(odd->kernel).stores.empty());
}

TEST_CASE("UPCAST and UNROLL in a matmul: results match, operands load as vectors") {
  const BuiltinKernel& e = builtin_kernel("matmul_upcast");
  auto a = random_floats(32 * 64, 3), b = random_floats(64 * 48, 4);
  Buf A = Buf::of(a), B = Buf::of(b), C = Buf::zeros<float>(32 * 48);
  auto ck = run_x86(e.parse(), {&C, &A, &B});
  auto c = C.as<float>(32 * 48);
  double worst = 0;
  for (int i = 0; i < 32; ++i)
    for (int j = 0; j < 48; ++j) {
      double ref = 0, mag = 0;
      for (int k = 0; k < 64; ++k) ref += double(a[i * 64 + k]) * b[k * 48 + j], mag += std::fabs(double(a[i * 64 + k]) * b[k * 48 + j]);
      worst = std::max(worst, std::fabs(c[i * 48 + j] - ref) / (mag + 1e-30));
    }
  CHECK(worst < 64 * 6e-8);  // float accumulation of 64 products, in a different order than the reference
  VectorCounts v = vectors(ck->kernel);
  CHECK(v.loads[4] == 5);   // a: one row chunk; b: four rows of four columns
  CHECK(v.stores[4] == 1);  // the four columns of c
  // The 16 products are combined inside the loop over the 16 k-chunks: one accumulator per column.
  int regs = 0;
  for (const UOp& u : ck->kernel.linear) regs += u.op() == Op::DEFINE_REG;
  CHECK(regs == 4);
}

TEST_CASE("UPCAST over narrow types: 8 halves, 16 int8s, bfloat16 math on 4 lanes") {
  auto run_half = [](const std::string& T, int lanes, int bytes) {
    std::string text = fill(R"(out = DEFINE_GLOBAL:{T}* {0}
a = DEFINE_GLOBAL:{T}* {1}
i = RANGE(32) {0, GLOBAL}
u = RANGE({N}) {1, UPCAST}
p = i*{N} + u
SINK(END(STORE(INDEX:{T}*(out, p), LOAD:{T}(INDEX:{T}*(a, p)) + LOAD:{T}(INDEX:{T}*(a, p))), i, u))
)",
                            {{"T", T}, {"N", std::to_string(lanes)}});
    std::vector<uint8_t> in(32 * lanes * bytes);
    for (size_t n = 0; n < in.size(); n += bytes) {
      ir::DType dt = T == "half" ? ir::dtypes::half : T == "bfloat16" ? ir::dtypes::bfloat16 : ir::dtypes::int8;
      uint32_t bits = bytes == 1 ? static_cast<uint32_t>(n * 7 % 61) : ir::float_to_bits(static_cast<double>(n % 97) / 8 - 5, dt);
      std::memcpy(&in[n], &bits, bytes);
    }
    Buf A = Buf::of(in), O = Buf::zeros<uint8_t>(in.size());
    auto ck = run_x86(kernel(text), {&O, &A});
    auto o = O.as<uint8_t>(in.size());
    int bad = 0;
    for (size_t n = 0; n < in.size(); n += bytes) {
      uint32_t x = 0, y = 0;
      std::memcpy(&x, &in[n], bytes), std::memcpy(&y, &o[n], bytes);
      if (bytes == 1) bad += y != ((2 * x) & 0xff);
      else {
        ir::DType dt = T == "half" ? ir::dtypes::half : ir::dtypes::bfloat16;
        bad += y != ir::float_to_bits(2 * ir::float_from_bits(x, dt), dt);
      }
    }
    CAPTURE(T);
    CHECK(bad == 0);
    VectorCounts c = vectors(ck->kernel);
    CHECK(c.loads == std::map<int, int>{{lanes, 1}});
    CHECK(c.stores == std::map<int, int>{{lanes, 1}});
  };
  run_half("half", 8, 2);
  run_half("int8", 16, 1);
  run_half("bfloat16", 4, 2);
}

TEST_CASE("a gated vector load reads nothing where its gate is false; per-lane gates stay scalar") {
  // The built-in gather: four halves per access, gated on the row id only.
  auto ck = compile(builtin_kernel("gather").parse(), x86());
  VectorCounts c = vectors(ck->kernel);
  CHECK(c.loads[4] == 1);
  bool gated = false;
  for (const UOp& u : ck->kernel.linear) gated = gated || (u.op() == Op::LOAD && u.dtype().count == 4 && u.src().size() == 2);
  CHECK(gated);
  // A bound on the unrolled axis itself gives each lane its own gate: those loads stay scalar, and
  // lanes past the bound read nothing (a guard page follows the data) and give 0.
  auto pad = kernel(R"(out = DEFINE_GLOBAL:float* {0}
a = DEFINE_GLOBAL:float* {1}
n = DEFINE_VAR:index {"n", 1, 40}
i = RANGE(10) {0, GLOBAL}
u = RANGE(4) {1, UPCAST}
x = i*4 + u
SINK(END(STORE(INDEX:float*(out, x), LOAD:float(INDEX:float*(a, WHERE(x < n, x, INVALID)))), i, u))
)");
  Guarded a(36);  // nothing readable past the 36 elements
  std::vector<float> ref = random_floats(36, 6);
  std::copy(ref.begin(), ref.end(), a.data);
  Buf O = Buf::zeros<float>(40);
  std::vector<uint64_t> args{reinterpret_cast<uint64_t>(O.bytes.data()), reinterpret_cast<uint64_t>(a.data), 36};
  auto ck2 = compile(pad, x86());
  HostFunction::load(ck2->binary, ck2->kernel.name)(args.data());
  auto o = O.as<float>(40);
  int bad = 0;
  for (int n = 0; n < 40; ++n) bad += o[n] != (n < 36 ? ref[n] : 0.0f);
  CHECK(bad == 0);
  CHECK(vectors(ck2->kernel).loads.empty());
  CHECK(vectors(ck2->kernel).stores[4] == 1);
}

TEST_CASE("UNROLL in reductions: alone, with a loop, MAX, and half sums formed in float") {
  std::vector<float> x = random_floats(8 * 64, 5);
  Buf X = Buf::of(x), S = Buf::zeros<float>(8), M = Buf::zeros<float>(8);
  // Rows of 64: sum over 16 loop steps x 4 unrolled; max over 8 unrolled x 8 loop steps.
  run_x86(kernel(R"(s = DEFINE_GLOBAL:float* {0}
x = DEFINE_GLOBAL:float* {1}
row = RANGE(8) {0, GLOBAL}
ko = RANGE(16) {1, REDUCE}
ku = RANGE(4) {2, UNROLL}
SINK(END(STORE(INDEX:float*(s, row), REDUCE:float(LOAD:float(INDEX:float*(x, row*64 + ko*4 + ku)), ko, ku) {ADD}), row))
)"),
          {&S, &X});
  run_x86(kernel(R"(m = DEFINE_GLOBAL:float* {0}
x = DEFINE_GLOBAL:float* {1}
row = RANGE(8) {0, GLOBAL}
ku = RANGE(8) {1, UNROLL}
ko = RANGE(8) {2, REDUCE}
SINK(END(STORE(INDEX:float*(m, row), REDUCE:float(LOAD:float(INDEX:float*(x, row*64 + ko*8 + ku)), ku, ko) {MAX}), row))
)"),
          {&M, &X});
  auto s = S.as<float>(8), m = M.as<float>(8);
  for (int r = 0; r < 8; ++r) {
    double ref = 0;
    float mx = -INFINITY;
    for (int k = 0; k < 64; ++k) ref += x[r * 64 + k], mx = std::max(mx, x[r * 64 + k]);
    CHECK(std::fabs(s[r] - ref) < 1e-4);
    CHECK(m[r] == mx);
  }
  // A reduce over an unrolled axis alone is no loop at all; half inputs are summed in float.
  std::vector<uint16_t> h(8 * 32);
  for (size_t n = 0; n < h.size(); ++n) h[n] = static_cast<uint16_t>(ir::float_to_bits(1.0 + static_cast<double>(n % 32) / 1024, ir::dtypes::half));
  Buf H = Buf::of(h), HS = Buf::zeros<float>(8);
  auto ck = run_x86(kernel(R"(s = DEFINE_GLOBAL:float* {0}
x = DEFINE_GLOBAL:half* {1}
row = RANGE(8) {0, GLOBAL}
k = RANGE(32) {1, UNROLL}
SINK(END(STORE(INDEX:float*(s, row), CAST:float(REDUCE:half(LOAD:half(INDEX:half*(x, row*32 + k)), k) {ADD})), row))
)"),
                    {&HS, &H});
  double ref = 0;
  for (int k = 0; k < 32; ++k) ref += ir::float_from_bits(h[k], ir::dtypes::half);
  // Summed in half the running total would drift; in float it is exact before the final rounding.
  CHECK(HS.as<float>(1)[0] == static_cast<float>(ir::round_float(ref, ir::dtypes::half)));
  int loops = 0;
  for (const UOp& u : ck->kernel.linear) loops += u.op() == Op::RANGE;
  CHECK(loops == 1);  // only the row loop (x86 keeps GLOBAL as a loop)
  // Read as vectors as wide as the host's (16 bytes, or 32 with AVX2, or 16 lanes with AVX-512).
  int lanes = std::min(16, find_target("x86").vector_bytes() / 2);
  CHECK(vectors(ck->kernel).loads[lanes] == 32 / lanes);
}

TEST_CASE("vector accesses in the AMDGPU and NVPTX output") {
  const BuiltinKernel& e = builtin_kernel("matmul_upcast");
  auto amd = compile(e.parse(), find_target("gfx1100"));
  std::string asm_amd = disassembly(*amd);
  CHECK(asm_amd.find("global_load_b128") != std::string::npos);
  CHECK(asm_amd.find("global_store_b128") != std::string::npos);
  auto cdna = compile(e.parse(), find_target("gfx942"));
  CHECK(disassembly(*cdna).find("global_load_dwordx4") != std::string::npos);
  auto nv = compile(e.parse(), find_target("sm_90"));
  CHECK(nv->ptx.find("ld.global.v4") != std::string::npos);
  CHECK(nv->ptx.find("st.global.v4") != std::string::npos);
}

TEST_CASE("unrolled axes: clear errors for what cannot be unrolled") {
  auto err = [](const std::string& text) {
    try {
      compile(kernel(text), x86());
    } catch (const Error& e) { return std::string(e.what()); }
    return std::string("no error");
  };
  CHECK(err(R"(out = DEFINE_GLOBAL:float* {0}
n = DEFINE_VAR:index {"n", 1, 8}
u = RANGE(n) {0, UPCAST}
SINK(END(STORE(INDEX:float*(out, u), 1.0), u))
)")
            .find("UPCAST axis 0 is unrolled, so its size must be a constant") != std::string::npos);
  CHECK(err(R"(out = DEFINE_GLOBAL:float* {0}
u = RANGE(100) {0, UNROLL}
SINK(END(STORE(INDEX:float*(out, u), 1.0), u))
)")
            .find("UNROLL axis 0 has 100 iterations; at most 64") != std::string::npos);
  CHECK(err(R"(out = DEFINE_GLOBAL:float* {0}
i = RANGE(64) {0, UPCAST}
j = RANGE(64) {1, UPCAST}
SINK(END(STORE(INDEX:float*(out, i*64 + j), 1.0), i, j))
)")
            .find("4096 copies") != std::string::npos);
  CHECK(err(R"(out = DEFINE_GLOBAL:float* {0}
i = RANGE(8) {0, LOOP}
u = RANGE(4) {1, UPCAST}
SINK(END(STORE(INDEX:float*(out, i + u), 1.0), i))
)")
            .find("UPCAST axis 1 is used outside the END or REDUCE that closes it") != std::string::npos);
}

TEST_CASE("property: UPCAST gives the results of the same loop, and every vector access is aligned") {
  // out[i*so + u + s] = a[i*sa + u + t] * 2 + 1 over random strides, shifts and widths, as UPCAST and
  // as LOOP. In the lowered kernel, each vector access's index must be a multiple of its lane count
  // at every point of the loops.
  std::mt19937 rng(7);
  const std::string tmpl = R"(out = DEFINE_GLOBAL:float* {0}
a = DEFINE_GLOBAL:float* {1}
i = RANGE(6) {0, LOOP}
u = RANGE({W}) {1, {T}}
SINK(END(STORE(INDEX:float*(out, i*{SO} + u + {S}), LOAD:float(INDEX:float*(a, i*{SA} + u + {TA})) * 2.0 + 1.0), i, u))
)";
  auto a = random_floats(512, 8);
  int vector_accesses = 0;
  for (int trial = 0; trial < 60; ++trial) {
    int w = 1 << (rng() % 4 + 1);
    int so = w + static_cast<int>(rng() % 9), sa = w + static_cast<int>(rng() % 9), s = static_cast<int>(rng() % 6), t = static_cast<int>(rng() % 6);
    std::vector<std::pair<std::string, std::string>> v{
        {"W", std::to_string(w)}, {"SO", std::to_string(so)}, {"SA", std::to_string(sa)}, {"S", std::to_string(s)}, {"TA", std::to_string(t)}};
    CAPTURE(trial);
    std::vector<float> out[2];
    for (int unrolled = 0; unrolled < 2; ++unrolled) {
      auto vals = v;
      vals.push_back({"T", unrolled ? "UPCAST" : "LOOP"});
      Buf A = Buf::of(a), O = Buf::zeros<float>(256);
      auto ck = run_x86(kernel(fill(tmpl, vals)), {&O, &A});
      out[unrolled] = O.as<float>(256);
      for (const UOp& acc : ck->kernel.linear) {
        if ((acc.op() != Op::LOAD && acc.op() != Op::STORE) || acc.src(0).op() != Op::INDEX || acc.src(0).dtype().count == 1) continue;
        ++vector_accesses;
        int lanes = acc.src(0).dtype().count;
        UOp idx = acc.src(0).src(1), loop;
        for (const UOp& n : idx.toposort())
          if (n.op() == Op::RANGE) loop = n;
        for (int64_t iv = 0; iv < 6; ++iv) {
          std::unordered_map<UOp, ir::Scalar, ir::UOpHash> env;
          if (loop) env[loop] = iv;
          auto e = ir::evaluate(idx, env);
          REQUIRE(e);
          CHECK(std::get<int64_t>(*e) % lanes == 0);
        }
      }
    }
    CHECK(out[0] == out[1]);
  }
  CHECK(vector_accesses > 30);  // the random shapes do produce vector accesses
}
