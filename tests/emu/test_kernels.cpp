// The codegen kernel suite compiled for gfx1100 and run in the executor, compared with the same
// kernel compiled for x86 and run on the host (itself checked against scalar references in
// tests/codegen/test_kernels.cpp): bit-exact, except where a hardware transcendental's 1-ULP bound
// applies. Also: every instruction of those kernels decodes as LLVM's disassembler reads it.
// The kernel suite — every built-in kernel (codegen/builtin_kernels.cpp) in each of its runs —
// compiled for gfx1100 and run in the executor, compared with the same kernel compiled for x86 and run
// on the host (itself checked against the host references in tests/codegen/test_kernels.cpp):
// bit-exact, except where a hardware transcendental's 1-ULP bound applies (the kernel's tolerance).
// Also: every instruction of those kernels decodes as LLVM's disassembler reads it.
#include <doctest/doctest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <random>
#include <sstream>

#include "codegen/builtin_kernels.h"
#include "emu/amd/rdna3/inst.h"
#include "emu/gpu_memory.h"
#include "harness.h"
#include "ir/dtype.h"
#include "tests/codegen/run.h"

using namespace ugpu;
using namespace ugpu::test;
using codegen::fill;

namespace {

// One run in the executor, each buffer mapped exactly (a read or write outside it is a memory fault).
void run_on_executor(const codegen::BuiltinKernel& k, const codegen::KernelRun& run, codegen::Buffers& bufs) {
  std::vector<std::pair<void*, size_t>> mapped;
  for (codegen::HostData& b : bufs) mapped.push_back({b.bytes.data(), b.bytes.size()});
  Gpu gpu;
  EmuRun r = run_gfx1100(gpu, k.parse(run), mapped, run.var_values());
  if (r.result.fault) FAIL(r.result.fault->message);
}
void check(const std::string& name) { check_builtin(codegen::builtin_kernel(name), run_on_executor); }

// The built-in kernels with a case of their own below; the first case checks the rest.
const std::vector<std::string> kOwnCase = {"elementwise", "reduce", "floordiv", "variable_loop", "group_sum", "gather"};

}  // namespace

TEST_CASE("kernel suite on the executor: the built-in kernels match the host") {
  for (const codegen::BuiltinKernel* k : builtin_kernels_except(kOwnCase)) check_builtin(*k, run_on_executor);
}

TEST_CASE("kernel suite on the executor: elementwise ops in every dtype") { check("elementwise"); }

TEST_CASE("kernel suite on the executor: reductions, integer division, variables and loops") {
  for (const char* name : {"reduce", "floordiv", "variable_loop"}) check(name);
}

TEST_CASE("kernel suite on the executor: workgroup memory and a barrier (group_sum) match the host, whose work-items run in turn") {
  check("group_sum");
}

TEST_CASE("decoder: every instruction of the suite's kernels decodes as LLVM's disassembler reads it") {
  std::vector<std::string> texts;
  for (const codegen::BuiltinKernel& e : codegen::builtin_kernels()) texts.push_back(e.source());
  for (ir::DType t : {ir::dtypes::int8, ir::dtypes::int64, ir::dtypes::half, ir::dtypes::bfloat16, ir::dtypes::float64, ir::dtypes::uint16})
    texts.push_back(fill(R"(out = DEFINE_GLOBAL:{T}* {0}
a = DEFINE_GLOBAL:{T}* {1}
i = RANGE(257) {0, GLOBAL}
x = LOAD:{T}(INDEX:{T}*(a, i))
SINK(END(STORE(INDEX:{T}*(out, i), MAX(x * x + x, x)), i))
)",
                         {{"T", t.name()}}));
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
  check("gather");
  Gpu gpu;
  std::vector<float> x(1000), o(1006, 0);
  for (int i = 0; i < 1000; ++i) x[i] = static_cast<float>(i) * 0.25f;
  EmuRun r = run_gfx1100(gpu, kernel(R"(out = DEFINE_GLOBAL:float* {0}
x = DEFINE_GLOBAL:float* {1}
i = RANGE(1006) {0, GLOBAL}
v = LOAD:float(INDEX:float*(x, WHERE((i > 2) & (i < 1003), i - 3, INVALID)), -1.0)
SINK(END(STORE(INDEX:float*(out, i), v), i))
)"),
                         {{o.data(), o.size() * 4}, {x.data(), x.size() * 4}});
  if (r.result.fault) FAIL(r.result.fault->message);
  int bad = 0;
  for (int i = 0; i < 1006; ++i) bad += o[i] != ((i >= 3 && i < 1003) ? (i - 3) * 0.25f : -1.0f);
  CHECK(bad == 0);
}

TEST_CASE("emu: GPU memory: evict drops every mapping overlapping a range, the one that starts before it too") {
  emu::GpuMemory m(1 << 20);
  std::vector<uint8_t> backing(64 << 10);
  auto pages = emu::Pages::borrow(backing.data(), backing.size());
  // A TLB fill from the middle of a buffer caches its tail: [0x3000, 0x8000); another span after it.
  REQUIRE(m.map({0x3000, 0x5000, 0x3000, pages}));
  REQUIRE(m.map({0x9000, 0x1000, 0x9000, pages}));
  CHECK(!m.map({0x1000, 0x7000, 0x1000, pages}));  // the whole buffer overlaps the cached tail
  CHECK(m.evict(0x4000, 0x1000) == 1);             // starts before the range, reaches into it
  CHECK(m.map({0x1000, 0x7000, 0x1000, pages}));   // now the whole buffer is one span
  CHECK(m.host(0x1000, 0x7000, emu::Access::Read) == backing.data() + 0x1000);
  CHECK(m.evict(0x8000, 0x2000) == 1);  // [0x9000, 0xA000) only: the span ending at 0x8000 stays
  CHECK(m.mappings() == 1);
}
