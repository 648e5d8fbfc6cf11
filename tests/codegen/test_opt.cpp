// The kernel optimizer (codegen/opt/): each action's effect and refusals, the text form of actions,
// and random kernels that give the same bits optimized as written — with the heuristics' actions and
// with random legal ones — on cpu, emu:amd and emu:nv. Inputs are small integers (also in the float
// dtypes), so every sum is exact in any order and results compare bit for bit (but for the sign of a
// zero, which the IR leaves open: an unrolled sum may add -0 first). UGPU_OPT_SEED and
// UGPU_OPT_KERNELS (default 21 and 40) choose other random kernels.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <random>
#include <sstream>

#include "codegen/occupancy.h"
#include "codegen/opt/opt.h"
#include "ir/text.h"
#include "tests/hcq/device_suite.h"
#include "tests/sampling.h"

using namespace ugpu;
using codegen::opt::Opt;
using codegen::opt::OptOp;
using ir::AxisType;
using ir::UOp;

namespace {

const codegen::Target& target(const char* name) { return codegen::find_target(name); }

const char* kMatmul = R"(c = DEFINE_GLOBAL:float* {0}
a = DEFINE_GLOBAL:float* {1}
b = DEFINE_GLOBAL:float* {2}
i = RANGE(32) {0, GLOBAL}
j = RANGE(24) {1, GLOBAL}
k = RANGE(36) {2, REDUCE}
acc = REDUCE:float(LOAD:float(INDEX:float*(a, i*36 + k)) * LOAD:float(INDEX:float*(b, k*24 + j)), k) {ADD}
SINK(END(STORE(INDEX:float*(c, i*24 + j), acc), i, j))
)";

std::string axes_text(const UOp& sink) {
  std::string s;
  for (const auto& a : codegen::opt::kernel_axes(sink))
    s += (s.empty() ? "" : " ") + std::to_string(a.id) + ":" + std::string(ir::axis_type_name(a.type)) + "(" + std::to_string(a.size) + ")";
  return s;
}

// Whether `text` compiled for `t` with `opts` has a UOp `pred` holds for.
bool compiles_to(const char* text, const codegen::Target& t, const std::vector<Opt>& opts, const std::function<bool(const UOp&)>& pred) {
  codegen::CompileOptions co;
  co.opts = opts;
  auto ck = codegen::compile(ir::parse(text), t, co);
  const auto& uops = ck->kernel.sink.toposort();
  return std::any_of(uops.begin(), uops.end(), pred);
}

UOp apply(const char* text, std::vector<Opt> opts, const char* tgt = "x86") { return codegen::opt::apply_opts(ir::parse(text), opts, target(tgt)); }

void refused(const char* text, std::vector<Opt> opts, const char* tgt, const std::string& why) {
  CAPTURE(codegen::opt::opts_text(opts));
  try {
    apply(text, opts, tgt);
    FAIL("the action was applied; expected a refusal containing: " << why);
  } catch (const codegen::opt::OptError& e) { CHECK_MESSAGE(std::string(e.what()).find(why) != std::string::npos, std::string(e.what())); }
}

}  // namespace

TEST_CASE("opt: each action reshapes the kernel's axes") {
  CHECK(axes_text(ir::parse(kMatmul)) == "0:GLOBAL(32) 1:GLOBAL(24) 2:REDUCE(36)");
  CHECK(axes_text(apply(kMatmul, {{OptOp::UPCAST, 1, 4}})) == "0:GLOBAL(32) 1:GLOBAL(6) 2:REDUCE(36) 3:UPCAST(4)");
  CHECK(axes_text(apply(kMatmul, {{OptOp::UPCAST, 1, 4}, {OptOp::UNROLL, 2, 4}})) == "0:GLOBAL(32) 1:GLOBAL(6) 2:REDUCE(9) 3:UPCAST(4) 4:UNROLL(4)");
  CHECK(axes_text(apply(kMatmul, {{OptOp::UNROLL, 2, 36}})) == "0:GLOBAL(32) 1:GLOBAL(24) 2:UNROLL(36)");  // a whole axis changes type
  CHECK(axes_text(apply(kMatmul, {{OptOp::LOCAL, 0, 16}}, "gfx1100")) == "0:GLOBAL(2) 1:GLOBAL(24) 2:REDUCE(36) 3:LOCAL(16)");
  CHECK(axes_text(apply(kMatmul, {{OptOp::GROUP, 2, 12}}, "sm_90")) == "0:GLOBAL(32) 1:GLOBAL(24) 2:REDUCE(3) 3:GROUP_REDUCE(12)");
  CHECK(axes_text(apply(kMatmul, {{OptOp::PADTO, 1, 16}})) == "0:GLOBAL(32) 1:GLOBAL(32) 2:REDUCE(36)");
  CHECK(axes_text(apply(kMatmul, {{OptOp::SWAP, 0, 1}})) == "0:GLOBAL(24) 1:GLOBAL(32) 2:REDUCE(36)");
  CHECK(axes_text(apply(kMatmul, {{OptOp::TILE, 0, 8}})) == "0:GLOBAL(4) 1:GLOBAL(24) 2:REDUCE(36) 3:LOOP(8)");
  CHECK(axes_text(apply(kMatmul, {{OptOp::LANES, 2, 4}})) == "0:GLOBAL(32) 1:GLOBAL(24) 2:REDUCE(9) 3:UNROLL(4)");
  // LANES: four partial sums side by side (an inner REDUCE per lane), summed over the lanes at the end.
  std::string lanes = ir::print(apply(kMatmul, {{OptOp::LANES, 2, 4}}));
  CHECK_MESSAGE(lanes.find("r2) {ADD}, r3) {ADD}") != std::string::npos, lanes);
  // The split axis is `outer * amount + inner` in every index.
  std::string text = ir::print(apply(kMatmul, {{OptOp::UPCAST, 1, 4}}));
  CHECK_MESSAGE(text.find("r1 * 4 + r3") != std::string::npos, text);
  // PADTO masks the padded iterations' loads and stores.
  text = ir::print(apply(kMatmul, {{OptOp::PADTO, 1, 16}}));
  CHECK_MESSAGE(text.find("r1 < 24") != std::string::npos, text);
  CHECK_MESSAGE(text.find("INVALID") != std::string::npos, text);
}

TEST_CASE("opt: actions that do not apply are refused with the reason") {
  refused(kMatmul, {{OptOp::UPCAST, 2, 4}}, "x86", "a reduce axis is UNROLLed");
  refused(kMatmul, {{OptOp::UNROLL, 0, 4}}, "x86", "an output axis is UPCAST");
  refused(kMatmul, {{OptOp::UPCAST, 1, 5}}, "x86", "5 does not divide its size 24 (PADTO it to a multiple first)");
  refused(kMatmul, {{OptOp::UPCAST, 1, 1}}, "x86", "at least 2");
  refused(kMatmul, {{OptOp::UPCAST, 0, 32}}, "x86", "at most 16 copies");
  refused(kMatmul, {{OptOp::UPCAST, 0, 16}, {OptOp::UPCAST, 1, 8}, {OptOp::UNROLL, 2, 4}}, "x86", "at most 256");
  refused(kMatmul, {{OptOp::LOCAL, 0, 8}}, "x86", "LOCAL is for GPU targets");
  refused(kMatmul, {{OptOp::GROUP, 2, 4}}, "x86", "GROUP is for GPU targets");
  refused(kMatmul, {{OptOp::LOCAL, 2, 4}}, "gfx1100", "LOCAL splits GLOBAL axes");
  refused(kMatmul, {{OptOp::GROUP, 0, 4}}, "gfx1100", "GROUP splits reduce axes");
  refused(kMatmul, {{OptOp::LOCAL, 0, 32}, {OptOp::LOCAL, 1, 24}, {OptOp::GROUP, 2, 4}}, "sm_90", "allows 1024");
  refused(kMatmul, {{OptOp::GROUP, 2, 4}, {OptOp::GROUP, 2, 3}}, "sm_90", "already has a GROUP axis");
  refused(kMatmul, {{OptOp::PADTO, 0, 16}}, "x86", "already a multiple");
  refused(kMatmul, {{OptOp::PADTO, 1, 64}}, "x86", "more than doubles");
  refused(kMatmul, {{OptOp::SWAP, 0, 2}}, "x86", "SWAP exchanges two output axes");
  refused(kMatmul, {{OptOp::TILE, 2, 4}}, "x86", "TILE blocks output axes");
  refused(kMatmul, {{OptOp::TILE, 0, 32}}, "x86", "a tile of the whole axis changes nothing");
  refused(kMatmul, {{OptOp::GROUP, 2, 4}, {OptOp::TILE, 0, 4}}, "sm_90", "has a GROUP axis");
  refused(kMatmul, {{OptOp::TILE, 0, 4}, {OptOp::GROUP, 2, 4}}, "sm_90", "LOOP axis");
  refused(kMatmul, {{OptOp::LANES, 0, 4}}, "x86", "LANES splits reduce axes");
  refused(kMatmul, {{OptOp::LANES, 2, 36}}, "x86", "at most 16 lanes");
  refused(kMatmul, {{OptOp::UPCAST, 7, 2}}, "x86", "no axis 7 (its axes: 0 GLOBAL, 1 GLOBAL, 2 REDUCE)");
  refused(R"(out = DEFINE_GLOBAL:float* {0}
n = DEFINE_VAR:index {"n", 1, 64}
i = RANGE(n) {0, GLOBAL}
SINK(END(STORE(INDEX:float*(out, i), 1.0), i))
)",
          {{OptOp::UPCAST, 0, 4}}, "x86", "its size is not a constant");
  // A kernel with workgroup memory keeps it as written.
  refused(codegen::builtin_kernel("group_sum").source().c_str(), {{OptOp::LOCAL, 0, 2}}, "gfx1100", "already uses workgroup memory");
}

TEST_CASE("opt: actions as text") {
  std::vector<Opt> opts{{OptOp::UPCAST, 1, 4}, {OptOp::LOCAL, 0, 16}, {OptOp::SWAP, 0, 1}};
  CHECK(codegen::opt::opts_text(opts) == "UPCAST(1, 4) LOCAL(0, 16) SWAP(0, 1)");
  CHECK(codegen::opt::parse_opts("UPCAST(1, 4) LOCAL(0,16), SWAP(0, 1)") == opts);
  CHECK(codegen::opt::parse_opts("").empty());
  CHECK(codegen::opt::opts_text({}) == "none");
  CHECK_THROWS_WITH_AS(codegen::opt::parse_opts("UPCST(1, 4)"), doctest::Contains("unknown action 'UPCST'"), Error);
  CHECK_THROWS_WITH_AS(codegen::opt::parse_opts("UPCAST(1 4"), doctest::Contains("expected ')'"), Error);
  CHECK_THROWS_WITH_AS(codegen::opt::parse_opts("UPCAST(x, 4)"), doctest::Contains("expected an axis id"), Error);
}

TEST_CASE("opt: the heuristics block a matmul, group a matrix-vector product on GPUs, and leave marked kernels alone") {
  UOp mm = ir::parse(kMatmul);
  auto x86 = codegen::opt::heuristic_opts(mm, target("x86"));
  // The contiguous axis j as wide as the host's vectors (16 floats with AVX-512, 8 with AVX2), then i.
  REQUIRE(x86.size() >= 2);
  CHECK(x86[0] == Opt{OptOp::UPCAST, 1, std::min<int64_t>(8, codegen::find_target("x86").vector_bytes() / 4)});
  CHECK(x86[1].op == OptOp::UPCAST);
  CHECK(x86[1].axis == 0);
  auto gpu = codegen::opt::heuristic_opts(mm, target("gfx1100"));
  CHECK_MESSAGE(codegen::opt::opts_text(gpu).find("LOCAL") != std::string::npos, codegen::opt::opts_text(gpu));
  UOp matvec = ir::parse(R"(y = DEFINE_GLOBAL:float* {0}
w = DEFINE_GLOBAL:float* {1}
x = DEFINE_GLOBAL:float* {2}
i = RANGE(256) {0, GLOBAL}
k = RANGE(4096) {1, REDUCE}
SINK(END(STORE(INDEX:float*(y, i), REDUCE:float(LOAD:float(INDEX:float*(w, i*4096 + k)) * LOAD:float(INDEX:float*(x, k)), k) {ADD}), i))
)");
  for (const char* t : {"gfx1100", "sm_90"}) {
    auto o = codegen::opt::heuristic_opts(matvec, target(t));
    CHECK_MESSAGE(!o.empty(), t);
    CHECK_MESSAGE(o[0].op == OptOp::GROUP, t << ": " << codegen::opt::opts_text(o));
  }
  CHECK(codegen::opt::heuristic_opts(codegen::builtin_kernel("matmul_upcast").parse(), target("x86")).empty());
  CHECK(codegen::opt::heuristic_opts(codegen::builtin_kernel("group_sum").parse(), target("gfx1100")).empty());
}

namespace {

// Random kernels: matmul-like (two loads, each missing one output axis), row reductions (ADD, MAX)
// and broadcasting elementwise ones, in float, half and int32, sizes with and without divisors.
struct RandomKernel {
  std::string text;
  ir::DType dtype;
  std::vector<size_t> elements;  // per slot
};

class Generator {
 public:
  explicit Generator(uint64_t seed) : rng_(seed) {}
  int64_t pick(int64_t lo, int64_t hi) { return lo + static_cast<int64_t>(rng_() % static_cast<uint64_t>(hi - lo + 1)); }
  int64_t size() {
    static const int64_t kSizes[] = {1, 2, 3, 4, 6, 7, 8, 12, 16, 24, 32, 33, 48, 64};
    return kSizes[pick(0, std::size(kSizes) - 1)];
  }

  RandomKernel make() {
    static const ir::DType kTypes[] = {ir::dtypes::float32, ir::dtypes::half, ir::dtypes::int32};
    RandomKernel k;
    k.dtype = kTypes[pick(0, 2)];
    std::string t = k.dtype.name();
    std::ostringstream s;
    auto ld = [&](const char* buf, const std::string& idx) { return "LOAD:" + t + "(INDEX:" + t + "*(" + buf + ", " + idx + "))"; };
    s << "out = DEFINE_GLOBAL:" << t << "* {0}\na = DEFINE_GLOBAL:" << t << "* {1}\nb = DEFINE_GLOBAL:" << t << "* {2}\n";
    int kind = static_cast<int>(pick(0, 2));
    int64_t m = size(), n = size(), r = size() * (pick(0, 1) ? 1 : 2);
    s << "i = RANGE(" << m << ") {0, GLOBAL}\n";
    if (kind == 0) {  // out[i, j] = sum_k a[i, k] * b[k, j]  (ADD or MAX)
      const char* op = pick(0, 3) ? "ADD" : "MAX";
      s << "j = RANGE(" << n << ") {1, GLOBAL}\nk = RANGE(" << r << ") {2, REDUCE}\n";
      s << "SINK(END(STORE(INDEX:" << t << "*(out, i*" << n << " + j), REDUCE:" << t << "(" << ld("a", "i*" + std::to_string(r) + " + k") << " * "
        << ld("b", "k*" + std::to_string(n) + " + j") << ", k) {" << op << "}), i, j))\n";
      k.elements = {size_t(m * n), size_t(m * r), size_t(r * n)};
    } else if (kind == 1) {  // out[i] = reduce_k (a[i, k] + b[k])
      const char* op = pick(0, 1) ? "ADD" : "MAX";
      s << "k = RANGE(" << r << ") {1, REDUCE}\n";
      s << "SINK(END(STORE(INDEX:" << t << "*(out, i), REDUCE:" << t << "(" << ld("a", "i*" + std::to_string(r) + " + k") << " + " << ld("b", "k")
        << ", k) {" << op << "}), i))\n";
      k.elements = {size_t(m), size_t(m * r), size_t(r)};
    } else {  // out[i, j] = a[i, j] * b[j] + a[i, j]
      s << "j = RANGE(" << n << ") {1, GLOBAL}\n";
      std::string aij = ld("a", "i*" + std::to_string(n) + " + j");
      s << "SINK(END(STORE(INDEX:" << t << "*(out, i*" << n << " + j), " << aij << " * " << ld("b", "j") << " + " << aij << "), i, j))\n";
      k.elements = {size_t(m * n), size_t(m * n), size_t(n)};
    }
    k.text = s.str();
    return k;
  }

  // Up to four random actions that apply, tried in turn.
  std::vector<Opt> actions(const UOp& sink, const codegen::Target& t) {
    static const int64_t kAmounts[] = {2, 3, 4, 8, 16, 32};
    std::vector<Opt> out;
    UOp s = sink;
    for (int tries = 0; tries < 12 && out.size() < 4; ++tries) {
      auto axes = codegen::opt::kernel_axes(s);
      Opt o{static_cast<OptOp>(pick(0, 9)), axes[static_cast<size_t>(pick(0, static_cast<int64_t>(axes.size()) - 1))].id, kAmounts[pick(0, 5)]};
      if (o.op == OptOp::SWAP) o.amount = axes[static_cast<size_t>(pick(0, static_cast<int64_t>(axes.size()) - 1))].id;
      if (o.op == OptOp::TC) o.amount = 0;
      if (o.op == OptOp::STAGE) o.axis = pick(1, 2), o.amount = 0;  // a buffer slot
      try {
        s = codegen::opt::apply_opt(s, o, t);
        out.push_back(o);
      } catch (const codegen::opt::OptError&) {}
    }
    return out;
  }

 private:
  std::mt19937_64 rng_;
};

std::vector<std::vector<uint8_t>> inputs(const RandomKernel& k, std::mt19937_64& rng) {
  std::vector<std::vector<uint8_t>> out;
  for (size_t slot = 0; slot < k.elements.size(); ++slot) {
    codegen::HostData d{.slot = static_cast<int64_t>(slot), .dtype = k.dtype, .bytes = std::vector<uint8_t>(k.elements[slot] * k.dtype.itemsize())};
    if (slot > 0)
      for (size_t e = 0; e < k.elements[slot]; ++e) d.set(e, static_cast<double>(static_cast<int64_t>(rng() % 9) - 4));
    out.push_back(d.bytes);
  }
  return out;
}

}  // namespace

TEST_CASE("opt: random kernels give the same bits optimized as written, on every device") {
  std::vector<std::pair<std::string, std::unique_ptr<hcq::Device>>> devices;
  for (const char* name : {"cpu", "emu:amd", "emu:nv"}) devices.emplace_back(name, drivers::open_device(name));
  const char* count_env = std::getenv("UGPU_OPT_KERNELS");
  uint64_t seed = test::suite_seed("UGPU_OPT_SEED", 21);
  int count = count_env ? std::atoi(count_env) : 40;
  MESSAGE("UGPU_OPT_SEED=" << seed << ", " << count << " kernels");
  Generator gen(seed);
  std::mt19937_64 rng(seed * 31 + 5);
  int optimized = 0;
  for (int n = 0; n < count; ++n) {
    RandomKernel k = gen.make();
    INFO("kernel ", n, " (UGPU_OPT_SEED=", seed, "):\n", k.text);
    auto in = inputs(k, rng);
    auto want = test::run_on(*devices[0].second, k.text, in, {});
    for (auto& [name, dev] : devices) {
      const codegen::Target& t = codegen::find_target(dev->target());
      for (int variant = 0; variant < 2; ++variant) {
        UOp sink = ir::parse(k.text);
        std::vector<Opt> opts = variant == 0 ? codegen::opt::heuristic_opts(sink, t) : gen.actions(sink, t);
        INFO(name, ": ", codegen::opt::opts_text(opts));
        if (opts.empty()) continue;
        ++optimized;
        auto got = test::run_on(*dev, k.text, in, {}, opts);
        codegen::HostData g{.slot = 0, .dtype = k.dtype, .bytes = got[0]}, w{.slot = 0, .dtype = k.dtype, .bytes = want[0]};
        size_t wrong = 0, first = 0;
        for (size_t e = 0; e < g.count(); ++e)
          if (g.bits(e) != w.bits(e) && !(k.dtype.is_float() && g.value(e) == 0 && w.value(e) == 0)) first = wrong++ ? first : e;
        CHECK_MESSAGE(wrong == 0, wrong << " of " << g.count() << " elements differ; first: element " << first << ": want " << w.value(first)
                                        << ", got " << g.value(first));
      }
    }
  }
  MESSAGE(optimized << " optimized kernels compared");
  CHECK(optimized > count * 2);
}

TEST_CASE("opt: a reduction shared by a workgroup (GROUP) on both GPU emulators") {
  // Softmax-like: two reductions over one axis (the second uses the first), both grouped.
  const char* text = R"(out = DEFINE_GLOBAL:float* {0}
x = DEFINE_GLOBAL:float* {1}
i = RANGE(6) {0, GLOBAL}
k = RANGE(96) {1, REDUCE}
k2 = RANGE(96) {2, REDUCE}
m = REDUCE:float(LOAD:float(INDEX:float*(x, i*96 + k)), k) {MAX}
s = REDUCE:float(LOAD:float(INDEX:float*(x, i*96 + k2)) - m, k2) {ADD}
SINK(END(STORE(INDEX:float*(out, i), s + m), i))
)";
  RandomKernel k{text, ir::dtypes::float32, {6, 6 * 96}};
  std::mt19937_64 rng(3);
  auto in = inputs(k, rng);
  auto cpu = drivers::open_device("cpu");
  auto want = test::run_on(*cpu, text, in, {});
  for (const char* name : {"emu:amd", "emu:nv"}) {
    CAPTURE(name);
    auto dev = drivers::open_device(name);
    for (std::vector<Opt> opts : {std::vector<Opt>{{OptOp::GROUP, 1, 32}, {OptOp::GROUP, 2, 16}},
                                  {{OptOp::GROUP, 2, 8}, {OptOp::UNROLL, 1, 4}},
                                  {{OptOp::GROUP, 1, 16}, {OptOp::LOCAL, 0, 2}, {OptOp::UNROLL, 1, 2}}}) {
      CAPTURE(codegen::opt::opts_text(opts));
      if (opts[0].op == OptOp::GROUP && opts.size() == 2 && opts[1].op == OptOp::GROUP) {
        // One GROUP axis per kernel.
        CHECK_THROWS_AS(codegen::opt::apply_opts(ir::parse(text), opts, codegen::find_target(dev->target())), codegen::opt::OptError);
        continue;
      }
      auto got = test::run_on(*dev, text, in, {}, opts);
      CHECK(got[0] == want[0]);  // no zero sums here: x - max is never all zeros
      auto ck =
          codegen::compile(codegen::opt::apply_opts(ir::parse(text), opts, codegen::find_target(dev->target())), codegen::find_target(dev->target()));
      CHECK(ck->kernel.shared_bytes > 0);  // the partials meet in workgroup memory
    }
  }
}

TEST_CASE("occupancy: bounded by the target's maximum, and by workgroup memory when a workgroup takes all of it") {
  // 256 work-items (4 waves of 64 on gfx942) with 64 KiB of LDS: one workgroup per CU, one wave per SIMD.
  const char* big_lds = R"(out = DEFINE_GLOBAL:float* {0}
x = DEFINE_GLOBAL:float* {1}
tmp = DEFINE_LOCAL:float[local]* {(0, 16384)}
g = RANGE(4) {0, GLOBAL}
l = RANGE(256) {1, LOCAL}
put = STORE(INDEX:float[local]*(tmp, l * 64), LOAD:float(INDEX:float*(x, g*256 + l)))
bar = BARRIER(END(put, l))
r = RANGE(4) {2, REDUCE}
total = REDUCE:float(LOAD:float(INDEX:float[local]*(AFTER(tmp, bar), r * 64)), r) {ADD}
SINK(END(STORE(INDEX:float*(out, WHERE(l == 0, g, INVALID)), total), g))
)";
  auto ck = codegen::compile(ir::parse(big_lds), target("gfx942"));
  auto occ = codegen::occupancy(*ck);
  REQUIRE(occ);
  CHECK(occ->resident == 1);
  CHECK(occ->limit == "workgroup memory");
  // A small elementwise kernel fills every SIMD.
  auto small = codegen::compile(ir::parse(R"(out = DEFINE_GLOBAL:float* {0}
i = RANGE(4096) {0, GLOBAL}
SINK(END(STORE(INDEX:float*(out, i), 1.0), i))
)"),
                                target("gfx1100"));
  occ = codegen::occupancy(*small);
  REQUIRE(occ);
  CHECK(occ->resident == occ->most);
  CHECK(occ->unit == "waves per SIMD");
  CHECK_FALSE(codegen::occupancy(*codegen::compile(ir::parse(kMatmul), target("x86"))));  // no such thing on the CPU
  // NVIDIA, where ptxas made a cubin: 8 warps per block with 48 KiB of shared memory fit 4 blocks in
  // an sm_90 SM's 228 KiB, so 32 warps.
  auto nv = codegen::compile(ir::parse(R"(out = DEFINE_GLOBAL:float* {0}
x = DEFINE_GLOBAL:float* {1}
tmp = DEFINE_LOCAL:float[local]* {(0, 12288)}
g = RANGE(4) {0, GLOBAL}
l = RANGE(256) {1, LOCAL}
put = STORE(INDEX:float[local]*(tmp, l * 48), LOAD:float(INDEX:float*(x, g*256 + l)))
bar = BARRIER(END(put, l))
r = RANGE(4) {2, REDUCE}
total = REDUCE:float(LOAD:float(INDEX:float[local]*(AFTER(tmp, bar), r * 48)), r) {ADD}
SINK(END(STORE(INDEX:float*(out, WHERE(l == 0, g, INVALID)), total), g))
)"),
                             target("sm_90"));
  if (nv->cubin) {
    auto nocc = codegen::occupancy(*nv);
    REQUIRE(nocc);
    CHECK(nocc->unit == "warps per SM");
    CHECK(nocc->most == 64);
    CHECK(nocc->resident == 32);
    CHECK(nocc->limit == "shared memory");
  } else {
    CHECK_FALSE(codegen::occupancy(*nv));  // no cubin (no ptxas): no register count to estimate from
  }
}

namespace {

// C[i, j] = sum_k A[i, k] * B[k, j] in half or bfloat16 inputs (B stored k-major or, transposed,
// j-major), accumulated in float (the output dtype `out`; half: the reduction itself is in half, the
// way tensors write it), plus a bias along j.
std::string tc_matmul(const char* in, const char* out, int64_t m, int64_t n, int64_t k, bool b_transposed, bool bias) {
  std::ostringstream s;
  std::string ld_a = "LOAD:" + std::string(in) + "(INDEX:" + in + "*(a, i*" + std::to_string(k) + " + k))";
  std::string ld_b = "LOAD:" + std::string(in) + "(INDEX:" + in + "*(b, " +
                     (b_transposed ? "j*" + std::to_string(k) + " + k" : "k*" + std::to_string(n) + " + j") + "))";
  bool widen = std::string(out) == "float" && std::string(in) != "float";
  std::string prod = widen ? "CAST:float(" + ld_a + ") * CAST:float(" + ld_b + ")" : ld_a + " * " + ld_b;
  s << "c = DEFINE_GLOBAL:" << out << "* {0}\na = DEFINE_GLOBAL:" << in << "* {1}\nb = DEFINE_GLOBAL:" << in << "* {2}\n";
  s << "bias = DEFINE_GLOBAL:" << out << "* {3}\n";
  s << "i = RANGE(" << m << ") {0, GLOBAL}\nj = RANGE(" << n << ") {1, GLOBAL}\nk = RANGE(" << k << ") {2, REDUCE}\n";
  s << "acc = REDUCE:" << out << "(" << prod << ", k) {ADD}\n";
  s << "SINK(END(STORE(INDEX:" << out << "*(c, i*" << n << " + j), "
    << (bias ? "acc + LOAD:" + std::string(out) + "(INDEX:" + out + "*(bias, j))" : "acc") << "), i, j))\n";
  return s.str();
}

std::vector<std::vector<uint8_t>> tc_inputs(ir::DType in, ir::DType out, int64_t m, int64_t n, int64_t k, uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto make = [&](int64_t slot, ir::DType t, int64_t count, bool zero) {
    codegen::HostData d{.slot = slot, .dtype = t, .bytes = std::vector<uint8_t>(static_cast<size_t>(count) * t.itemsize())};
    if (!zero)
      for (int64_t e = 0; e < count; ++e) d.set(static_cast<size_t>(e), static_cast<double>(static_cast<int64_t>(rng() % 9) - 4));
    return d.bytes;
  };
  return {make(0, out, m * n, true), make(1, in, m * k, false), make(2, in, k * n, false), make(3, out, n, false)};
}

}  // namespace

TEST_CASE("opt: TC runs a matmul's reduction on the tensor cores, with the same bits as the kernel as written, on both GPU emulators") {
  auto cpu = drivers::open_device("cpu");
  struct Case {
    const char* in;
    const char* out;
    int64_t m, n, k;
    bool transposed, bias;
  };
  const Case cases[] = {
      {"half", "float", 64, 64, 64, false, false},
      {"half", "half", 32, 64, 64, true, true},
      {"bfloat16", "float", 64, 32, 64, false, true},
      {"bfloat16", "bfloat16", 64, 64, 32, true, false},
  };
  int ran = 0;
  for (const char* name : {"emu:amd", "emu:nv"}) {
    auto dev = drivers::open_device(name);
    const codegen::Target& t = codegen::find_target(dev->target());
    for (const Case& c : cases) {
      std::string text = tc_matmul(c.in, c.out, c.m, c.n, c.k, c.transposed, c.bias);
      CAPTURE(name);
      CAPTURE(text);
      auto in = tc_inputs(*ir::parse_dtype(c.in), *ir::parse_dtype(c.out), c.m, c.n, c.k, 11);
      auto want = test::run_on(*cpu, text, in, {});
      // TC alone, then with the actions that go with it: more tiles per wave (UPCAST), more waves per
      // workgroup (LOCAL), an unrolled or split (LANES) reduction, a loop over tiles (TILE).
      for (std::vector<Opt> opts : {std::vector<Opt>{{OptOp::TC, 2, 0}},
                                    {{OptOp::TC, 2, 0}, {OptOp::UPCAST, 0, 2}, {OptOp::UPCAST, 1, 2}},
                                    {{OptOp::TC, 2, 0}, {OptOp::LOCAL, 1, 2}, {OptOp::UNROLL, 2, 2}},
                                    {{OptOp::TC, 2, 0}, {OptOp::LANES, 2, 2}, {OptOp::TILE, 0, 2}}}) {
        CAPTURE(codegen::opt::opts_text(opts));
        UOp sink;
        try {
          sink = codegen::opt::apply_opts(ir::parse(text), opts, t);
        } catch (const codegen::opt::OptError& e) {
          // Only the follow-up actions may not fit a small kernel; TC itself always applies here.
          REQUIRE_MESSAGE(opts.size() > 1, std::string(e.what()));
          continue;
        }
        CHECK(codegen::opt::has_tensor_core(sink));
        auto got = test::run_on(*dev, text, in, {}, opts);
        CHECK(got[0] == want[0]);
        ++ran;
      }
    }
  }
  CHECK(ran >= 28);

  // float32 inputs on NVIDIA's tf32 instruction, asked for by hand (small integers are exact in tf32).
  auto nv = drivers::open_device("emu:nv");
  std::string text = tc_matmul("float", "float", 32, 32, 32, false, true);
  auto in = tc_inputs(ir::dtypes::float32, ir::dtypes::float32, 32, 32, 32, 12);
  auto want = test::run_on(*cpu, text, in, {});
  for (std::vector<Opt> opts : {std::vector<Opt>{{OptOp::TC, 2, 0}}, {{OptOp::TC, 2, 0}, {OptOp::UPCAST, 1, 2}, {OptOp::UNROLL, 2, 2}}}) {
    CAPTURE(codegen::opt::opts_text(opts));
    const codegen::TensorCore* tc =
        codegen::opt::kernel_tensor_core(codegen::opt::apply_opts(ir::parse(text), opts, codegen::find_target(nv->target())));
    REQUIRE(tc);
    CHECK(tc->rounds_inputs);
    CHECK(test::run_on(*nv, text, in, {}, opts)[0] == want[0]);
  }
}

TEST_CASE("opt: TC compiles to each target's matrix instruction") {
  std::string text = tc_matmul("half", "float", 32, 32, 32, false, false);
  for (const codegen::TensorCore& tc : codegen::tensor_cores())
    for (const codegen::Target& t : codegen::all_targets()) {
      if (!tc.on(t) || tc.input != ir::ScalarType::Half) continue;
      CAPTURE(t.name);
      auto ck = codegen::compile(codegen::opt::apply_opts(ir::parse(text), std::vector<Opt>{{OptOp::TC, 2, 0}}, t), t);
      std::string isa = codegen::disassembly(*ck);
      std::string want(tc.instr);
      if (t.arch == codegen::Arch::NVPTX) want = want.substr(0, want.find(".f32.f16"));  // PTX spells it in full; the prefix is enough
      CHECK_MESSAGE(isa.find(want) != std::string::npos, "no " << want << " in:\n" << isa.substr(0, 3000));
      CHECK(ck->kernel.local_size[0].const_int() == tc.threads);  // the lanes are the workgroup's x dimension
    }
}

TEST_CASE("opt: the heuristics put half and bfloat16 matmuls on the tensor cores, and never float32 ones (tf32 rounds them)") {
  for (const char* t : {"gfx1100", "gfx942", "sm_80", "sm_90"})
    for (const char* in : {"half", "bfloat16"}) {
      CAPTURE(t);
      CAPTURE(in);
      auto o = codegen::opt::heuristic_opts(ir::parse(tc_matmul(in, "float", 64, 64, 64, false, true)), target(t));
      REQUIRE(!o.empty());
      CHECK(o[0].op == OptOp::TC);
    }
  for (const char* t : {"sm_80", "sm_90", "x86", "gfx1201"}) {
    CAPTURE(t);
    for (const Opt& o : codegen::opt::heuristic_opts(ir::parse(tc_matmul("float", "float", 64, 64, 64, false, true)), target(t)))
      CHECK(o.op != OptOp::TC);
    for (const Opt& o : codegen::opt::heuristic_opts(ir::parse(tc_matmul("half", "float", 64, 64, 64, false, true)), target("gfx1201")))
      CHECK(o.op != OptOp::TC);
  }
}

TEST_CASE("opt: TC refusals name the reason") {
  std::string half_mm = tc_matmul("half", "float", 32, 32, 32, false, false);
  refused(half_mm.c_str(), {{OptOp::TC, 2, 0}}, "x86", "x86 has no tensor cores");
  refused(half_mm.c_str(), {{OptOp::TC, 0, 0}}, "gfx1100", "TC takes the reduce axis");
  refused(half_mm.c_str(), {{OptOp::TC, 2, 1}}, "gfx1100", "choose 0..0");
  refused(half_mm.c_str(), {{OptOp::TC, 2, 0}}, "gfx1201", "gfx1201 has no tensor core for half inputs");
  refused(kMatmul, {{OptOp::TC, 2, 0}}, "gfx1100", "gfx1100 has no tensor core for float inputs");
  refused(tc_matmul("half", "half", 32, 32, 32, false, false).c_str(), {{OptOp::TC, 2, 0}}, "x86", "x86 has no tensor cores");
  const char* max_mm = R"(c = DEFINE_GLOBAL:float* {0}
a = DEFINE_GLOBAL:half* {1}
b = DEFINE_GLOBAL:half* {2}
i = RANGE(32) {0, GLOBAL}
j = RANGE(32) {1, GLOBAL}
k = RANGE(32) {2, REDUCE}
SINK(END(STORE(INDEX:float*(c, i*32 + j), REDUCE:float(CAST:float(LOAD:half(INDEX:half*(a, i*32 + k))) + CAST:float(LOAD:half(INDEX:half*(b, k*32 + j))), k) {ADD}), i, j))
)";
  refused(max_mm, {{OptOp::TC, 2, 0}}, "gfx1100", "this reduction sums ADD of float");
  refused(tc_matmul("half", "float", 24, 32, 32, false, false).c_str(), {{OptOp::TC, 2, 0}}, "gfx1100", "PADTO them to multiples first");
  refused(tc_matmul("half", "float", 32, 32, 24, false, false).c_str(), {{OptOp::TC, 2, 0}}, "sm_90", "24 is not a multiple");
  refused(half_mm.c_str(), {{OptOp::TC, 2, 0}, {OptOp::TC, 2, 0}}, "sm_90", "already runs on a tensor core");
  refused(half_mm.c_str(), {{OptOp::TC, 2, 0}, {OptOp::GROUP, 2, 2}}, "sm_90", "already share the reduction");
  refused(half_mm.c_str(), {{OptOp::TC, 2, 0}, {OptOp::PADTO, 0, 3}}, "sm_90", "PADTO goes before TC");
  // PADTO first makes a shape fit: 24 rows padded to 32 run on the tensor core, the padding masked.
  CHECK(codegen::opt::has_tensor_core(
      apply(tc_matmul("half", "float", 24, 32, 32, false, false).c_str(), {{OptOp::PADTO, 0, 16}, {OptOp::TC, 2, 0}}, "gfx1100")));
}

TEST_CASE("opt: STAGE copies a buffer's tiles into workgroup memory once per workgroup, with the same bits, on both GPU emulators") {
  const char* matmul = kMatmul;
  // A 1-D convolution over channels and taps: two reduce axes, and an input index that is a sum.
  const char* conv = R"(out = DEFINE_GLOBAL:float* {0}
x = DEFINE_GLOBAL:float* {1}
w = DEFINE_GLOBAL:float* {2}
o = RANGE(8) {0, GLOBAL}
p = RANGE(30) {1, GLOBAL}
ci = RANGE(6) {2, REDUCE}
r = RANGE(3) {3, REDUCE}
acc = REDUCE:float(LOAD:float(INDEX:float*(x, ci*32 + p + r)) * LOAD:float(INDEX:float*(w, o*18 + ci*3 + r)), ci, r) {ADD}
SINK(END(STORE(INDEX:float*(out, o*30 + p), acc), o, p))
)";
  // An int32 max over a padded reduce axis: the padding's mask once made the simplifier rewrite the
  // barrier's loop index inside it, in a loop.
  const char* int_max = R"(out = DEFINE_GLOBAL:int32* {0}
a = DEFINE_GLOBAL:int32* {1}
b = DEFINE_GLOBAL:int32* {2}
i = RANGE(32) {0, GLOBAL}
k = RANGE(1) {1, REDUCE}
SINK(END(STORE(INDEX:int32*(out, i), REDUCE:int32(LOAD:int32(INDEX:int32*(a, i*1 + k)) + LOAD:int32(INDEX:int32*(b, k)), k) {MAX}), i))
)";
  struct Case {
    const char* text;
    std::vector<size_t> elements;
    std::vector<Opt> opts;
    ir::DType dtype = ir::dtypes::float32;
  };
  const std::vector<Case> cases = {
      {matmul, {32 * 24, 32 * 36, 36 * 24}, {{OptOp::LOCAL, 0, 4}, {OptOp::LOCAL, 1, 8}, {OptOp::STAGE, 1, 0}, {OptOp::STAGE, 2, 0}}},
      // Register blocks and an unrolled reduction: each work-item copies several elements (a share axis).
      {matmul,
       {32 * 24, 32 * 36, 36 * 24},
       {{OptOp::LOCAL, 0, 4}, {OptOp::LOCAL, 1, 4}, {OptOp::UPCAST, 1, 2}, {OptOp::UNROLL, 2, 4}, {OptOp::STAGE, 1, 0}, {OptOp::STAGE, 2, 0}}},
      // 12 tile elements for 32 work-items: the extra ones copy nothing.
      {matmul, {32 * 24, 32 * 36, 36 * 24}, {{OptOp::LOCAL, 0, 4}, {OptOp::LOCAL, 1, 8}, {OptOp::UNROLL, 2, 3}, {OptOp::STAGE, 1, 0}}},
      // Padded axes: the padding's masked loads copy zeros.
      {matmul,
       {32 * 24, 32 * 36, 36 * 24},
       {{OptOp::PADTO, 1, 32}, {OptOp::PADTO, 2, 64}, {OptOp::LOCAL, 1, 16}, {OptOp::UNROLL, 2, 8}, {OptOp::STAGE, 2, 0}}},
      {conv,
       {8 * 30, 6 * 32, 8 * 18},
       {{OptOp::LOCAL, 1, 10}, {OptOp::LOCAL, 0, 2}, {OptOp::UNROLL, 3, 3}, {OptOp::STAGE, 1, 0}, {OptOp::STAGE, 2, 0}}},
      {int_max, {32, 32, 1}, {{OptOp::LOCAL, 0, 4}, {OptOp::PADTO, 1, 3}, {OptOp::STAGE, 1, 0}, {OptOp::STAGE, 2, 0}}, ir::dtypes::int32},
  };
  auto cpu = drivers::open_device("cpu");
  for (const char* name : {"emu:amd", "emu:nv"}) {
    auto dev = drivers::open_device(name);
    const codegen::Target& t = codegen::find_target(dev->target());
    for (const Case& c : cases) {
      CAPTURE(name);
      CAPTURE(c.text);
      CAPTURE(codegen::opt::opts_text(c.opts));
      RandomKernel k{c.text, c.dtype, c.elements};
      std::mt19937_64 rng(5);
      auto in = inputs(k, rng);
      auto want = test::run_on(*cpu, c.text, in, {});
      auto got = test::run_on(*dev, c.text, in, {}, c.opts);
      CHECK(got[0] == want[0]);
      auto ck = codegen::compile(codegen::opt::apply_opts(ir::parse(c.text), c.opts, t), t);
      CHECK(ck->kernel.shared_bytes > 0);
    }
  }
  const char* stores_a = R"(a = DEFINE_GLOBAL:float* {0}
i = RANGE(32) {0, GLOBAL}
k = RANGE(8) {1, REDUCE}
SINK(END(STORE(INDEX:float*(a, i), REDUCE:float(LOAD:float(INDEX:float*(a, i*8 + k)), k) {ADD}), i))
)";
  refused(matmul, {{OptOp::LOCAL, 0, 4}, {OptOp::STAGE, 1, 0}}, "x86", "LOCAL is for GPU targets");
  refused(matmul, {{OptOp::STAGE, 1, 0}}, "x86", "STAGE is for GPU targets");
  refused(matmul, {{OptOp::STAGE, 1, 0}}, "gfx1100", "the workgroup has one work-item");
  refused(matmul, {{OptOp::LOCAL, 0, 4}, {OptOp::STAGE, 0, 0}}, "gfx1100", "the kernel stores to buffer 0");
  refused(matmul, {{OptOp::LOCAL, 0, 4}, {OptOp::STAGE, 1, 0}, {OptOp::STAGE, 1, 0}}, "sm_90", "buffer 1 is staged already");
  refused(matmul, {{OptOp::LOCAL, 0, 4}, {OptOp::STAGE, 1, 0}, {OptOp::UNROLL, 2, 4}}, "sm_90", "STAGE goes after every other action");
  refused(matmul, {{OptOp::LOCAL, 0, 4}, {OptOp::STAGE, 1, 2}}, "sm_90", "STAGE's amount is 0");
  refused(matmul, {{OptOp::LOCAL, 0, 4}, {OptOp::GROUP, 2, 4}, {OptOp::STAGE, 1, 0}}, "sm_90", "already share work");
  refused(stores_a, {{OptOp::LOCAL, 0, 4}, {OptOp::STAGE, 0, 0}}, "sm_90", "the kernel stores to buffer 0");
  refused(conv, {{OptOp::LOCAL, 1, 2}, {OptOp::STAGE, 5, 0}}, "sm_90", "no load of buffer 5 changes with a reduce axis");
}

TEST_CASE("opt: on the CPU, reductions contiguous in memory get vector accumulators (LANES), one register wide") {
  // x @ W^T: both loads are contiguous along k and along no output axis.
  const char* nt = R"(c = DEFINE_GLOBAL:float* {0}
a = DEFINE_GLOBAL:float* {1}
w = DEFINE_GLOBAL:float* {2}
i = RANGE(32) {0, GLOBAL}
j = RANGE(64) {1, GLOBAL}
k = RANGE(256) {2, REDUCE}
SINK(END(STORE(INDEX:float*(c, i*64 + j), REDUCE:float(LOAD:float(INDEX:float*(a, i*256 + k)) * LOAD:float(INDEX:float*(w, j*256 + k)), k) {ADD}), i, j))
)";
  const codegen::Target& x86 = target("x86");
  int64_t lanes = x86.vector_bytes() / 4;
  auto o = codegen::opt::heuristic_opts(ir::parse(nt), x86);
  REQUIRE(!o.empty());
  CHECK(o[0] == Opt{OptOp::LANES, 2, lanes});
  // The lanes are one vector accumulator (a DEFINE_REG of float.vec(lanes)), not `lanes` scalars.
  CHECK(compiles_to(nt, x86, o, [&](const UOp& u) { return u.op() == ir::Op::DEFINE_REG && u.dtype().count == lanes; }));
  // Two reductions in one kernel (a fused gate and up projection): half a register of lanes each and
  // a 2x2 block, within the 256 unrolled copies.
  const char* fused = R"(c = DEFINE_GLOBAL:float* {0}
a = DEFINE_GLOBAL:float* {1}
w = DEFINE_GLOBAL:float* {2}
v = DEFINE_GLOBAL:float* {3}
i = RANGE(32) {0, GLOBAL}
j = RANGE(64) {1, GLOBAL}
k = RANGE(256) {2, REDUCE}
k2 = RANGE(256) {3, REDUCE}
g = REDUCE:float(LOAD:float(INDEX:float*(a, i*256 + k)) * LOAD:float(INDEX:float*(w, j*256 + k)), k) {ADD}
u = REDUCE:float(LOAD:float(INDEX:float*(a, i*256 + k2)) * LOAD:float(INDEX:float*(v, j*256 + k2)), k2) {ADD}
SINK(END(STORE(INDEX:float*(c, i*64 + j), g * u), i, j))
)";
  auto f = codegen::opt::heuristic_opts(ir::parse(fused), x86);
  int64_t half = std::max<int64_t>(4, lanes / 2);
  CHECK(codegen::opt::opts_text(f) ==
        codegen::opt::opts_text(std::vector<Opt>{{OptOp::LANES, 2, half}, {OptOp::LANES, 3, half}, {OptOp::UPCAST, 1, 2}, {OptOp::UPCAST, 0, 2}}));
  // A matmul whose B is contiguous along an output axis keeps register blocking instead.
  for (const Opt& x : codegen::opt::heuristic_opts(ir::parse(kMatmul), x86)) CHECK(x.op != OptOp::LANES);
  // Same bits as written on the CPU (small integers).
  RandomKernel k{nt, ir::dtypes::float32, {32 * 64, 32 * 256, 64 * 256}};
  std::mt19937_64 rng(8);
  auto in = inputs(k, rng);
  auto cpu = drivers::open_device("cpu");
  CHECK(test::run_on(*cpu, nt, in, {}, o)[0] == test::run_on(*cpu, nt, in, {})[0]);
}

TEST_CASE("opt: vector lanes through integer bit operations, conversions and a WHERE the lanes share, on every device") {
  // A 4-bit dequantization inside a matrix-vector product, as the Q4 weight formats write it: the low
  // or high nibble of a byte (by the parity of the block), scaled, times x.
  const char* q4 = R"(y = DEFINE_GLOBAL:float* {0}
q = DEFINE_GLOBAL:uint8* {1}
x = DEFINE_GLOBAL:float* {2}
i = RANGE(16) {0, GLOBAL}
b = RANGE(4) {1, REDUCE}
e = RANGE(32) {2, REDUCE}
byte = CAST:int32(LOAD:uint8(INDEX:uint8*(q, i*64 + b // 2 * 32 + e)))
nib = WHERE(b % 2 < 1, byte & 15, byte >> 4)
SINK(END(STORE(INDEX:float*(y, i), REDUCE:float(CAST:float(nib - 8) * LOAD:float(INDEX:float*(x, b*32 + e)), b, e) {ADD}), i))
)";
  const codegen::Target& x86 = target("x86");
  auto o = codegen::opt::heuristic_opts(ir::parse(q4), x86);
  REQUIRE(!o.empty());
  CHECK(o[0].op == OptOp::LANES);
  CHECK(compiles_to(q4, x86, o, [](const UOp& u) { return (u.op() == ir::Op::AND || u.op() == ir::Op::SHR) && u.dtype().count > 1; }));
  std::mt19937_64 rng(4);
  codegen::HostData qd{.slot = 1, .dtype = ir::dtypes::uint8, .bytes = std::vector<uint8_t>(16 * 64)};
  for (auto& v : qd.bytes) v = static_cast<uint8_t>(rng());
  codegen::HostData xd{.slot = 2, .dtype = ir::dtypes::float32, .bytes = std::vector<uint8_t>(128 * 4)};
  for (size_t k = 0; k < 128; ++k) xd.set(k, static_cast<double>(static_cast<int64_t>(rng() % 9) - 4));
  std::vector<std::vector<uint8_t>> in{std::vector<uint8_t>(16 * 4), qd.bytes, xd.bytes};
  auto cpu = drivers::open_device("cpu");
  auto want = test::run_on(*cpu, q4, in, {});
  for (const char* name : {"cpu", "emu:amd", "emu:nv"}) {
    CAPTURE(name);
    auto dev = drivers::open_device(name);
    for (std::vector<Opt> opts : {o, std::vector<Opt>{{OptOp::LANES, 2, 8}, {OptOp::UPCAST, 0, 2}}}) {
      CAPTURE(codegen::opt::opts_text(opts));
      CHECK(test::run_on(*dev, q4, in, {}, opts)[0] == want[0]);
    }
  }
}
