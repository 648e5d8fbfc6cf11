// The codegen kernel suite through a device's driver, compared with the CPU device: elementwise ops
// in all 12 dtypes, reductions, floor division (with a variable divisor), a variable loop, and the
// built-in examples. Shared by the AMD, NVIDIA and silicon tests.
#pragma once
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <random>

#include "tests/codegen/suite.h"
#include "codegen/examples.h"
#include "drivers/devices.h"
#include "ir/dtype.h"
#include "ir/text.h"

namespace ugpu::test {

// Runs `text` on `dev` with the given input bytes per buffer slot and variables; returns the buffers.
inline std::vector<std::vector<uint8_t>> run_on(hcq::Device& dev, const std::string& text, const std::vector<std::vector<uint8_t>>& in,
                                         const std::vector<int64_t>& vars) {
  auto prog = drivers::load_kernel(dev, ir::parse(text), "k");
  std::vector<hcq::Buffer> bufs;
  std::vector<hcq::Val> args;
  for (const auto& b : in) {
    bufs.push_back(dev.alloc(b.size()));
    dev.copy_in(bufs.back(), 0, b);
    args.push_back(bufs.back().va);
  }
  for (size_t i = 0; i < vars.size() && static_cast<int>(i) < prog->vars; ++i) args.push_back(static_cast<uint64_t>(vars[i]));  // unused variables are dropped
  uint64_t t = dev.next_timeline();
  auto q = dev.compute_queue();
  q->wait(dev.timeline(), t - 1).memory_barrier().exec(*prog, args).memory_barrier().signal(dev.timeline(), t);
  q->submit();
  dev.synchronize();
  std::vector<std::vector<uint8_t>> out;
  for (size_t i = 0; i < bufs.size(); ++i) {
    out.emplace_back(in[i].size());
    dev.copy_out(out.back(), bufs[i], 0);
  }
  return out;
}
inline std::vector<uint8_t> noise(size_t n, uint32_t seed, bool small_floats) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i + 4 <= n; i += 4) {
    uint32_t x = small_floats ? std::bit_cast<uint32_t>(std::uniform_real_distribution<float>(-4, 4)(rng)) : rng();
    std::memcpy(v.data() + i, &x, 4);
  }
  return v;
}

inline void kernel_suite_matches_cpu(hcq::Device& gpu) {
  auto cpu = drivers::open_device("cpu");
  auto& dev_cpu = *cpu;

  // Bit-exact, except that any NaN equals any NaN: GPUs differ in the payload they give a NaN result
  // (NVIDIA's arithmetic returns the canonical NaN, x86 and AMD propagate an operand's).
  auto same = [&](const std::string& name, const std::string& text, std::vector<std::vector<uint8_t>> in, std::vector<int64_t> vars = {},
                  ir::DType t = ir::dtypes::int32) {
    CAPTURE(name);
    auto a = run_on(gpu, text, in, vars), b = run_on(dev_cpu, text, in, vars);
    const size_t sz = static_cast<size_t>(t.itemsize());
    auto is_nan = [&](const uint8_t* p) {
      uint64_t bits = 0;
      std::memcpy(&bits, p, sz);
      int exp = t == ir::dtypes::half ? 5 : t == ir::dtypes::bfloat16 || t == ir::dtypes::float32 ? 8 : 11;
      int mant = static_cast<int>(sz * 8) - 1 - exp;
      uint64_t e = (bits >> mant) & ((uint64_t{1} << exp) - 1), m = bits & ((uint64_t{1} << mant) - 1);
      return e == (uint64_t{1} << exp) - 1 && m != 0;
    };
    for (size_t i = 0; i < a.size(); ++i) {
      CAPTURE(i);
      int bad = 0;
      for (size_t j = 0; j + sz <= a[i].size(); j += sz)
        bad += std::memcmp(a[i].data() + j, b[i].data() + j, sz) != 0 && !(t.is_float() && is_nan(a[i].data() + j) && is_nan(b[i].data() + j));
      CHECK(bad == 0);
    }
  };
  using codegen::fill;
  for (ir::DType t : {ir::dtypes::int8, ir::dtypes::int16, ir::dtypes::int32, ir::dtypes::int64, ir::dtypes::uint8, ir::dtypes::uint16,
                      ir::dtypes::uint32, ir::dtypes::uint64, ir::dtypes::half, ir::dtypes::bfloat16, ir::dtypes::float32, ir::dtypes::float64}) {
    size_t n = 257 * static_cast<size_t>(t.itemsize());
    bool fl = t == ir::dtypes::float32;
    same(std::string(t.name()), fill(test::suite::kElementwise, {{"T", std::string(t.name())}}), {std::vector<uint8_t>(n), noise(n, 1, fl), noise(n, 2, fl)}, {}, t);
  }
  for (std::string op : {"ADD", "MAX"})
    same("reduce " + op, fill(test::suite::kReduce, {{"T", "int32"}, {"KEEP", "37"}, {"RED", "53"}, {"IDX", "o*53 + r"}, {"OP", op}}),
         {std::vector<uint8_t>(37 * 4), noise(37 * 53 * 4, 3, false)});
  for (std::string d : {"7", "-3", "n"}) same("floordiv " + d, fill(test::suite::kFloorDiv, {{"D", d}}), {std::vector<uint8_t>(400)}, {13});
  for (int64_t n : {0, 17, 1000}) same("variable loop", test::suite::kVariableLoop, {std::vector<uint8_t>(40)}, {n});
  struct Ex {
    const char* name;
    std::vector<size_t> bytes;
  };
  for (const Ex& e : {Ex{"add", {6400 * 4, 6400 * 4, 100 * 4}}, Ex{"matmul", {33 * 45 * 4, 33 * 70 * 4, 70 * 45 * 4}},
                      Ex{"matmul_upcast", {32 * 48 * 4, 32 * 64 * 4, 64 * 48 * 4}}, Ex{"softmax", {16 * 200 * 4, 16 * 200 * 4}},
                      Ex{"conv2d", {4 * 120 * 4, 2 * 120 * 4, 4 * 18 * 4}}}) {
    std::vector<std::vector<uint8_t>> in;
    for (size_t bytes : e.bytes) in.push_back(noise(bytes, static_cast<uint32_t>(in.size() + 7), true));
    in[0].assign(in[0].size(), 0);
    CAPTURE(e.name);
    const std::string text = codegen::example_kernel(e.name).text;
    auto a = run_on(gpu, text, in, {}), b = run_on(dev_cpu, text, in, {});
    // Bit-exact except where a hardware transcendental's bound applies (softmax's exp).
    int bad = 0;
    for (size_t j = 0; j + 4 <= a[0].size(); j += 4) {
      float x, y;
      std::memcpy(&x, a[0].data() + j, 4), std::memcpy(&y, b[0].data() + j, 4);
      bad += !(std::fabs(x - y) <= 4e-6f * std::fabs(y));
    }
    CHECK(bad == 0);
  }
}

}  // namespace ugpu::test
