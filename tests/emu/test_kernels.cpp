// The codegen kernel suite compiled for gfx1100 and run in the executor, compared with the same
// kernel compiled for x86 and run on the host (itself checked against scalar references in
// tests/codegen/test_kernels.cpp): bit-exact, except where a hardware transcendental's 1-ULP bound
// applies. Also: every instruction of those kernels decodes as LLVM's disassembler reads it.
#include <doctest/doctest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <random>
#include <sstream>

#include "tests/codegen/run.h"
#include "tests/codegen/suite.h"
#include "codegen/examples.h"
#include "emu/amd/rdna3/inst.h"
#include "harness.h"
#include "ir/dtype.h"

using namespace ugpu;
using namespace ugpu::test;
using codegen::fill;

namespace {

using Case = SuiteCase;

// The dtype of each buffer slot, from the compiled kernel's parameters.
void compare(const Case& c, ir::DType t) {
  CAPTURE(c.name);
  ir::UOp k = kernel(c.text);
  std::vector<std::vector<uint8_t>> host, emu;
  for (size_t i = 0; i < c.bytes.size(); ++i) host.push_back(random_bytes(c.bytes[i], t, static_cast<uint32_t>(17 + i)));
  emu = host;
  std::vector<Buf> bufs;
  for (auto& h : host) bufs.push_back(Buf{h});
  std::vector<Buf*> ptrs;
  for (Buf& b : bufs) ptrs.push_back(&b);
  run_x86(k, ptrs, c.vars);
  Gpu gpu;
  std::vector<std::pair<void*, size_t>> mapped;
  for (auto& e : emu) mapped.push_back({e.data(), e.size()});
  EmuRun r = run_gfx1100(gpu, k, mapped, c.vars);
  if (r.result.fault) FAIL(r.result.fault->message);
  for (size_t i = 0; i < c.bytes.size(); ++i) {
    CAPTURE(i);
    if (c.rel_tolerance == 0) {
      CHECK(std::memcmp(bufs[i].bytes.data(), emu[i].data(), c.bytes[i]) == 0);
      continue;
    }
    int bad = 0;
    for (size_t j = 0; j + 4 <= c.bytes[i]; j += 4) {
      float a, b;
      std::memcpy(&a, bufs[i].bytes.data() + j, 4), std::memcpy(&b, emu[i].data() + j, 4);
      bad += !(std::fabs(a - b) <= c.rel_tolerance * std::fabs(a));
    }
    CHECK(bad == 0);
  }
}

}  // namespace

TEST_CASE("kernel suite on the executor: the built-in examples match the host") {
  compare({"add", codegen::example_kernel("add").text, {6400 * 4, 6400 * 4, 100 * 4}, {}}, ir::dtypes::float32);
  compare({"matmul", codegen::example_kernel("matmul").text, {33 * 45 * 4, 33 * 70 * 4, 70 * 45 * 4}, {}}, ir::dtypes::float32);
  compare({"matmul_upcast", codegen::example_kernel("matmul_upcast").text, {32 * 48 * 4, 32 * 64 * 4, 64 * 48 * 4}, {}}, ir::dtypes::float32);
  compare({"softmax", codegen::example_kernel("softmax").text, {16 * 200 * 4, 16 * 200 * 4}, {}, 4e-6}, ir::dtypes::float32);
  compare({"conv2d", codegen::example_kernel("conv2d").text, {4 * 120 * 4, 2 * 120 * 4, 4 * 18 * 4}, {}}, ir::dtypes::float32);
}

TEST_CASE("kernel suite on the executor: elementwise ops in every dtype") {
  const std::string tmpl = suite::kElementwise;
  for (ir::DType t : {ir::dtypes::int8, ir::dtypes::int16, ir::dtypes::int32, ir::dtypes::int64, ir::dtypes::uint8, ir::dtypes::uint16,
                      ir::dtypes::uint32, ir::dtypes::uint64, ir::dtypes::half, ir::dtypes::bfloat16, ir::dtypes::float32, ir::dtypes::float64}) {
    size_t n = 257 * static_cast<size_t>(t.itemsize());
    compare({std::string(t.name()), fill(tmpl, {{"T", t.name()}}), {n, n, n}, {}}, t);
  }
}

TEST_CASE("kernel suite on the executor: reductions, integer division, variables and loops") {
  const std::string red = suite::kReduce;
  for (bool inner : {true, false})
    for (std::string op : {"ADD", "MAX"})
      for (ir::DType t : {ir::dtypes::float32, ir::dtypes::int32}) {
        int keep = inner ? 37 : 53, n = inner ? 53 : 37;
        std::string text = fill(red, {{"T", t.name()}, {"KEEP", std::to_string(keep)}, {"RED", std::to_string(n)},
                                      {"IDX", inner ? "o*53 + r" : "r*53 + o"}, {"OP", op}});
        compare({"reduce " + op, text, {static_cast<size_t>(keep) * 4, 37 * 53 * 4}, {}}, t);
      }
  for (std::string d : {"7", "8", "1", "-3", "n"}) {
    std::string text = fill(suite::kFloorDiv, {{"D", d}});
    compare({"floordiv " + d, text, {400}, {13}}, ir::dtypes::int32);
  }
  const std::string loop = suite::kVariableLoop;
  for (int64_t n : {0, 1, 17, 1000}) compare({"variable loop", loop, {40}, {n}}, ir::dtypes::int32);
}

TEST_CASE("kernel suite on the executor: workgroup memory and a barrier (group_sum) against a host sum") {
  std::vector<float> in(32 * 64), out(32, 0);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i % 97) * 0.5f;
  Gpu gpu;
  EmuRun r = run_gfx1100(gpu, kernel(codegen::example_kernel("group_sum").text), {{out.data(), out.size() * 4}, {in.data(), in.size() * 4}});
  REQUIRE(!r.result.fault);
  for (int g = 0; g < 32; ++g) {
    float want = 0;
    for (int i = 0; i < 64; ++i) want += in[g * 64 + i];
    CHECK(out[g] == want);
  }
}

TEST_CASE("decoder: every instruction of the suite's kernels decodes as LLVM's disassembler reads it") {
  std::vector<std::string> texts;
  for (const auto& e : codegen::example_kernels()) texts.push_back(e.text);
  for (ir::DType t : {ir::dtypes::int8, ir::dtypes::int64, ir::dtypes::half, ir::dtypes::bfloat16, ir::dtypes::float64, ir::dtypes::uint16})
    texts.push_back(fill(R"(out = DEFINE_GLOBAL:{T}* {0}
a = DEFINE_GLOBAL:{T}* {1}
i = RANGE(257) {0, GLOBAL}
x = LOAD:{T}(INDEX:{T}*(a, i))
SINK(END(STORE(INDEX:{T}*(out, i), MAX(x * x + x, x)), i))
)", {{"T", t.name()}}));
  int checked = 0;
  for (const std::string& text : texts) {
    codegen::CompileOptions o;
    o.name = "kernel";
    auto ck = codegen::compile(kernel(text), gfx1100(), o);
    codegen::ElfImage img = codegen::link_elf(ck->binary, codegen::ElfMachine::AMDGPU, 0);
    const codegen::ElfSection* sec = img.section(".text");
    REQUIRE(sec);
    std::istringstream dis(codegen::disassembly(*ck));
    std::vector<std::pair<uint64_t, std::string>> insts;
    for (std::string l; std::getline(dis, l);) {  // "   1c:  \tv_lshlrev_b32_e32 v0, 2, v0"
      size_t colon = l.find(':'), first = l.find_first_not_of(' ');
      if (colon == std::string::npos || first >= colon || l.find_first_not_of("0123456789abcdef", first) != colon) continue;
      size_t text = l.find_first_not_of(" \t", colon + 1);
      if (text != std::string::npos) insts.push_back({std::stoull(l.substr(first, colon - first), nullptr, 16), l.substr(text)});
    }
    for (size_t i = 0; i < insts.size(); ++i) {
      auto [off, llvm_text] = insts[i];
      const uint32_t* words = reinterpret_cast<const uint32_t*>(img.bytes.data() + sec->offset + off);
      int avail = static_cast<int>((sec->size - off) / 4);
      emu::amd::Inst x, y;
      emu::amd::decode(words, std::min(avail, 3), x, y);
      std::string ours = emu::amd::format(x);
      CAPTURE(llvm_text);
      CAPTURE(ours);
      if (i + 1 < insts.size()) CHECK(x.size == insts[i + 1].first - off);
      std::string mn = llvm_text.substr(0, llvm_text.find_first_of(" \t"));
      for (const char* suffix : {"_e32", "_e64"})
        if (mn.size() > 4 && mn.ends_with(suffix)) mn.resize(mn.size() - 4);
      CHECK(std::string(emu::amd::mnemonic(x)) == mn);
      CHECK(x.problem.empty());
      auto regs = [](const std::string& s) {  // the register operands, sorted
        std::vector<std::string> v;
        std::string tok;
        std::istringstream in(s);
        while (in >> tok) {
          while (!tok.empty() && (tok.back() == ',' || tok.back() == '|')) tok.pop_back();
          while (!tok.empty() && (tok[0] == '-' || tok[0] == '|')) tok.erase(0, 1);
          bool reg = tok == "vcc_lo" || tok == "vcc" || tok == "exec_lo" || tok == "exec" || tok == "m0" || tok == "null" ||
                     (tok.size() > 1 && (tok[0] == 'v' || tok[0] == 's') && (std::isdigit(static_cast<unsigned char>(tok[1])) || tok[1] == '['));
          if (reg) v.push_back(tok);
        }
        std::sort(v.begin(), v.end());
        return v;
      };
      // Registers as operands: compare the sets LLVM prints and we print (instid/offset words excluded).
      if (mn != "s_delay_alu" && mn != "s_waitcnt") CHECK(regs(llvm_text.substr(mn.size())) == regs(ours.substr(mn.size())));
      ++checked;
    }
  }
  MESSAGE("instructions checked against LLVM: " << checked);
  CHECK(checked > 500);
}

TEST_CASE("kernel suite on the executor: gather with out-of-range ids and a masked load read nothing outside their buffers") {
  // Buffers are mapped exactly, so any read outside them would be a memory fault.
  std::vector<uint16_t> table(1000 * 24), out(40 * 24, 0);
  for (size_t i = 0; i < table.size(); ++i) table[i] = static_cast<uint16_t>(ir::float_to_bits(static_cast<double>(i % 977) / 8, ir::dtypes::half));
  std::vector<int32_t> ids(40);
  for (int t = 0; t < 40; ++t) ids[t] = (t * 97) % 1000;
  ids[3] = -1, ids[7] = 1000, ids[11] = INT32_MIN, ids[13] = 999;
  Gpu gpu;
  EmuRun r = run_gfx1100(gpu, kernel(codegen::example_kernel("gather").text),
                         {{out.data(), out.size() * 2}, {table.data(), table.size() * 2}, {ids.data(), ids.size() * 4}});
  if (r.result.fault) FAIL(r.result.fault->message);
  int bad = 0;
  for (int t = 0; t < 40; ++t)
    for (int d = 0; d < 24; ++d) bad += out[t * 24 + d] != ((ids[t] >= 0 && ids[t] < 1000) ? table[ids[t] * 24 + d] : 0);
  CHECK(bad == 0);

  std::vector<float> x(1000), o(1006, 0);
  for (int i = 0; i < 1000; ++i) x[i] = static_cast<float>(i) * 0.25f;
  r = run_gfx1100(gpu, kernel(R"(out = DEFINE_GLOBAL:float* {0}
x = DEFINE_GLOBAL:float* {1}
i = RANGE(1006) {0, GLOBAL}
v = LOAD:float(INDEX:float*(x, WHERE((i > 2) & (i < 1003), i - 3, INVALID)), -1.0)
SINK(END(STORE(INDEX:float*(out, i), v), i))
)"), {{o.data(), o.size() * 4}, {x.data(), x.size() * 4}});
  if (r.result.fault) FAIL(r.result.fault->message);
  bad = 0;
  for (int i = 0; i < 1006; ++i) bad += o[i] != ((i >= 3 && i < 1003) ? (i - 3) * 0.25f : -1.0f);
  CHECK(bad == 0);
}
