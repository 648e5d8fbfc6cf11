#include "tools/demo.h"

#include <chrono>
#include <cstdio>
#include <random>

#include "ir/alu.h"
#include "ir/rewrite.h"
#include "ir/symbolic.h"
#include "ir/text.h"
#include "ir/verify.h"

namespace ugpu::tools {
namespace {

using namespace ugpu::ir;

struct Example {
  const char* title;
  const char* text;
};

// Index math as the scheduler produces it for real kernels, before simplification.
constexpr Example kExamples[] = {
    {"matmul 128x128x128, 8x8 threads, 4x4 upcast: the address of A[row, k]",
     "g1 = SPECIAL(4) {\"gidx1\"}\n"
     "l1 = SPECIAL(8) {\"lidx1\"}\n"
     "r0 = RANGE(128) {0, REDUCE}\n"
     "r1 = RANGE(4) {1, UPCAST}\n"
     "(((g1 * 8 + l1) * 4 + r1) * 128 + r0) // 128 * 128 + (((g1 * 8 + l1) * 4 + r1) * 128 + r0) % 128\n"},
    {"reshape (6, 4) -> (2, 3, 4) -> flatten: the element a thread reads",
     "r0 = RANGE(6) {0, LOOP}\n"
     "r1 = RANGE(4) {1, LOOP}\n"
     "i = r0 * 4 + r1\n"
     "(i // 12 * 3 + i // 4 % 3) * 4 + i % 4\n"},
    {"conv2d 3x3, pad 1, on a 16x16 image: the masked input address",
     "r1 = RANGE(16) {1, LOOP}\n"
     "r3 = RANGE(3) {3, REDUCE}\n"
     "iy = r1 + r3 - 1\n"
     "WHERE((-1 < iy) & (iy < 16), (iy + 16) % 16 + iy // 16 * 16, INVALID)\n"},
};

bool same_everywhere(const UOp& a, const UOp& b, std::mt19937_64& rng, int points) {
  std::vector<UOp> leaves;
  for (const UOp& n : a.toposort())
    if (n.op() == Op::RANGE || n.op() == Op::SPECIAL || n.op() == Op::DEFINE_VAR) leaves.push_back(n);
  auto strip = [](const UOp& u) { return u.op() == Op::WHERE && u.src(2).op() == Op::INVALID ? u.src(1) : u; };
  auto guard = [](const UOp& u) { return u.op() == Op::WHERE && u.src(2).op() == Op::INVALID ? u.src(0) : UOp(); };
  for (int p = 0; p < points; ++p) {
    std::unordered_map<UOp, Scalar, UOpHash> env;
    for (const UOp& l : leaves) env[l] = Scalar{l.vmin() + static_cast<int64_t>(rng() % static_cast<uint64_t>(l.vmax() - l.vmin() + 1))};
    if (UOp g = guard(a)) {
      auto ok = evaluate(g, env);
      if (!ok || !std::get<int64_t>(*ok)) continue;
    }
    auto x = evaluate(strip(a), env), y = evaluate(strip(b), env);
    if (!x || !y || std::get<int64_t>(*x) != std::get<int64_t>(*y)) return false;
  }
  return true;
}

}  // namespace

int demo(const std::string& device) {
  if (!device.empty()) {
    std::fprintf(stderr,
                 "ugpu demo: --device %s: no device runtime is built yet. This build has the compiler's IR\n"
                 "(parse, simplify, verify) only; run 'ugpu demo' without a device to see it, on the host.\n",
                 device.c_str());
    return 2;
  }
  std::printf("ugpu demo: the compiler IR on the host (no GPU is used: device runtimes are not built yet)\n\n");
  std::mt19937_64 rng(1);
  bool all_ok = true;
  for (const Example& ex : kExamples) {
    UOp e = parse(ex.text);
    auto t0 = std::chrono::steady_clock::now();
    rewrite_stats() = {};
    UOp s = simplify(e);
    auto us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    bool ok = verify(s).empty() && same_everywhere(e, s, rng, 2000);
    all_ok = all_ok && ok;
    std::printf("== %s\n-- before (%zu nodes):\n%s-- after (%zu nodes, %.1f us, %zu rule applications):\n%s-- check: %s\n\n",
                ex.title, e.toposort().size(), print(e).c_str(), s.toposort().size(), us, rewrite_stats().rule_hits,
                print(s).c_str(), ok ? "verified, and equal to the original at 2000 random points" : "FAILED");
  }
  std::printf("%s\n", all_ok ? "demo: all checks passed" : "demo: a check FAILED");
  return all_ok ? 0 : 1;
}

}  // namespace ugpu::tools
