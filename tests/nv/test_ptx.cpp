// The PTX executor (emu/nv/ptx/ptx.h): the kernel suite (every built-in kernel, codegen/builtin_kernels.cpp,
// in each of its runs) compiled for sm_90 and run from its PTX, compared with the same kernel compiled
// for x86 and run on the host (itself checked against the host references in
// tests/codegen/test_kernels.cpp) — bit-exact, except where noted; hand-written PTX for faults,
// parse errors, interrupts, divergence, barriers, special registers, generic addressing and module
// data (.global/.const variables and their initializers); single instructions against values worked
// out from the PTX ISA; packed f16x2/bf16x2 instructions against the scalar ones on each half; and
// mma.sync against the ISA's fragment layout.
#include <doctest/doctest.h>

#include <atomic>
#include <bit>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "codegen/builtin_kernels.h"
#include "codegen/compiler.h"
#include "common/error.h"
#include "emu/nv/ptx/ptx.h"
#include "ir/dtype.h"
#include "tests/codegen/run.h"

using namespace ugpu;
using namespace ugpu::test;
using codegen::fill;
namespace nv = ugpu::emu::nv;

namespace {

// An address space of host buffers at device addresses, with unmapped gaps between them.
struct Gpu {
  emu::RangeMemory memory;
  uint64_t next = 0x1'0000'0000;
  std::deque<std::vector<uint8_t>> owned;

  uint64_t reserve(size_t bytes) {
    uint64_t a = next;
    next += (bytes + 0xffff) / 0x10000 * 0x10000 + 0x10000;
    return a;
  }
  uint64_t map(void* host, size_t bytes, bool writable = true) {
    uint64_t a = reserve(bytes);
    memory.map(a, host, bytes, writable);
    return a;
  }
  uint64_t alloc(size_t bytes, bool writable = true) {
    auto& v = owned.emplace_back(bytes + 16, 0);
    return map(v.data(), bytes, writable);
  }
  uint8_t* host(uint64_t device) {
    auto s = memory.translate(device, 1, emu::Access::Read);
    return s ? s->host + (device - s->device) : nullptr;
  }
};

constexpr uint32_t kParamBase = 0x210;

// Constant bank 0 with the parameters at 0x210, read-only as the QMD's constant buffer is to a kernel.
struct Params {
  uint64_t address = 0;
  uint32_t size = 0;
};
Params write_params(Gpu& gpu, const nv::PtxEntry& e, const std::vector<uint64_t>& values, uint32_t size = 0) {
  REQUIRE(e.params.size() == values.size());
  Params p;
  p.size = size ? size : kParamBase + std::max<uint32_t>(e.param_bytes, 8);
  p.address = gpu.alloc(p.size, false);
  for (size_t i = 0; i < values.size(); ++i)
    std::memcpy(gpu.host(p.address) + kParamBase + e.params[i].offset, &values[i], std::min<uint32_t>(e.params[i].size, 8));
  return p;
}

// Places a module's .global/.const data in the address space as a loader does (the .const part
// read-only, the .global part writable, the initial values written); returns its address, or 0 when
// the module has none (or more than max_bytes).
uint64_t place_data(Gpu& gpu, const nv::PtxModule& mod, uint64_t max_bytes = uint64_t{1} << 30) {
  const nv::PtxData& d = nv::data(mod);
  if (!d.bytes || d.bytes > max_bytes) return 0;
  std::vector<uint8_t>& image = gpu.owned.emplace_back(d.bytes, 0);
  const uint64_t a = gpu.reserve(d.bytes);
  REQUIRE(a % d.align == 0);
  nv::write_ptx_data(mod, a, image.data());
  if (d.const_bytes) gpu.memory.map(a, image.data(), d.const_bytes, false);
  if (d.bytes > d.const_bytes) gpu.memory.map(a + d.const_bytes, image.data() + d.const_bytes, d.bytes - d.const_bytes, true);
  return a;
}

struct NvRun {
  nv::PtxRunResult result;
  std::shared_ptr<const codegen::CompiledKernel> ck;
  double seconds = 0;
};

std::shared_ptr<const codegen::CompiledKernel> compile_sm90(const ir::UOp& kernel) {
  codegen::CompileOptions o;
  o.name = "kernel";
  o.cubin = false;  // the executor runs the PTX; ptxas (installed or not) is not needed
  auto ck = codegen::compile(kernel, codegen::find_target("sm_90"), o);
  REQUIRE(!ck->ptx.empty());
  return ck;
}

// A codegen kernel compiled for sm_90, its buffers mapped in place, run from its PTX.
NvRun run_sm90(Gpu& gpu, const ir::UOp& kernel, std::vector<std::pair<void*, size_t>> buffers, std::vector<int64_t> vars = {}, unsigned threads = 0) {
  NvRun r;
  r.ck = compile_sm90(kernel);
  auto mod = nv::parse_ptx(r.ck->ptx);
  const nv::PtxEntry& e = nv::entries(*mod).at(0);
  std::vector<uint64_t> values;
  size_t b = 0, v = 0;
  for (const codegen::Param& p : r.ck->kernel.params) {
    if (p.kind == codegen::Param::Kind::Buffer) values.push_back(gpu.map(buffers.at(b).first, buffers.at(b).second)), ++b;
    else values.push_back(static_cast<uint64_t>(vars.at(v++)));
  }
  Params params = write_params(gpu, e, values);
  codegen::LaunchDims dims = codegen::launch_dims(r.ck->kernel, vars);
  nv::PtxLaunch l;
  l.module = mod.get();
  for (int i = 0; i < 3; ++i) l.grid[i] = static_cast<uint32_t>(dims.global[i]), l.block[i] = static_cast<uint32_t>(dims.local[i]);
  l.cbank0_address = params.address;
  l.cbank0_size = params.size;
  l.shared_bytes = std::max<uint32_t>(e.static_shared_bytes, static_cast<uint32_t>(r.ck->kernel.shared_bytes));
  l.local_bytes_per_thread = e.local_bytes;
  l.memory = &gpu.memory;
  l.data_address = place_data(gpu, *mod);
  nv::PtxRunOptions o;
  o.threads = threads;
  auto t0 = std::chrono::steady_clock::now();
  r.result = nv::run_ptx(l, o);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

using Case = SuiteCase;

bool is_nan(uint64_t bits, ir::DType t) {
  switch (t.bitsize()) {
    case 16: return t == ir::dtypes::half ? ((bits & 0x7c00) == 0x7c00 && (bits & 0x3ff)) : ((bits & 0x7f80) == 0x7f80 && (bits & 0x7f));
    case 32: return std::isnan(std::bit_cast<float>(static_cast<uint32_t>(bits)));
    default: return std::isnan(std::bit_cast<double>(bits));
  }
}

// Runs the case on the host and from PTX; buffers are mapped exactly, so any access past them faults.
void compare(const Case& c, ir::DType t, std::vector<ir::DType> types = {}) {
  CAPTURE(c.name);
  ir::UOp k = kernel(c.text);
  std::vector<std::vector<uint8_t>> host, emu;
  for (size_t i = 0; i < c.bytes.size(); ++i)
    host.push_back(random_bytes(c.bytes[i], i < types.size() ? types[i] : t, static_cast<uint32_t>(17 + i)));
  emu = host;
  std::vector<Buf> bufs;
  for (auto& h : host) bufs.push_back(Buf{h});
  std::vector<Buf*> ptrs;
  for (Buf& b : bufs) ptrs.push_back(&b);
  run_x86(k, ptrs, c.vars);
  Gpu gpu;
  std::vector<std::pair<void*, size_t>> mapped;
  for (size_t i = 0; i < emu.size(); ++i) mapped.push_back({emu[i].data(), c.bytes[i]});
  NvRun r = run_sm90(gpu, k, mapped, c.vars);
  if (r.result.fault) FAIL(r.result.fault->message);
  for (size_t i = 0; i < c.bytes.size(); ++i) {
    CAPTURE(i);
    if (c.rel_tolerance == 0) {
      // Bit-exact, except that NaNs only need to be NaNs: the host and the GPU make different ones.
      const ir::DType bt = i < types.size() ? types[i] : t;
      const size_t sz = static_cast<size_t>(bt.itemsize());
      for (size_t j = 0; j + sz <= c.bytes[i]; j += sz) {
        uint64_t x = 0, y = 0;
        std::memcpy(&x, bufs[i].bytes.data() + j, sz), std::memcpy(&y, emu[i].data() + j, sz);
        if (x == y || (bt.is_float() && is_nan(x, bt) && is_nan(y, bt))) continue;
        FAIL_CHECK("first difference at element " << j / sz << ": host 0x" << std::hex << x << ", PTX 0x" << y << std::dec << "\n" << r.ck->ptx);
        break;
      }
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

const std::vector<ir::DType> kAllTypes = {ir::dtypes::int8,  ir::dtypes::int16,    ir::dtypes::int32,   ir::dtypes::int64,
                                          ir::dtypes::uint8, ir::dtypes::uint16,   ir::dtypes::uint32,  ir::dtypes::uint64,
                                          ir::dtypes::half,  ir::dtypes::bfloat16, ir::dtypes::float32, ir::dtypes::float64};

// ---- hand-written PTX -------------------------------------------------------------------------

const std::string kHead = ".version 7.8\n.target sm_90\n.address_size 64\n\n";

struct Text {
  Gpu gpu;
  std::shared_ptr<const nv::PtxModule> mod;
  nv::PtxLaunch launch;
  std::string text;
  // The 1-based line of the first line containing `s`.
  int line_of(const std::string& s) const {
    std::istringstream in(text);
    int n = 0;
    for (std::string l; std::getline(in, l);) {
      ++n;
      if (l.find(s) != std::string::npos) return n;
    }
    return -1;
  }
};

// Parses `text` (its only entry's parameters all .u64) and prepares a launch with these parameters.
void prepare(Text& t, const std::string& text, const std::vector<uint64_t>& params, std::array<uint32_t, 3> grid, std::array<uint32_t, 3> block,
             uint32_t shared = 0, uint32_t cbank_size = 0) {
  t.text = text;
  t.mod = nv::parse_ptx(text);
  const nv::PtxEntry& e = nv::entries(*t.mod).at(0);
  Params p = write_params(t.gpu, e, params, cbank_size);
  t.launch.module = t.mod.get();
  t.launch.grid = grid;
  t.launch.block = block;
  t.launch.cbank0_address = p.address;
  t.launch.cbank0_size = p.size;
  t.launch.shared_bytes = std::max(shared, e.static_shared_bytes);
  t.launch.local_bytes_per_thread = e.local_bytes;
  t.launch.memory = &t.gpu.memory;
  t.launch.data_address = place_data(t.gpu, *t.mod);
}

nv::PtxRunResult run(Text& t, unsigned threads = 1) {
  nv::PtxRunOptions o;
  o.threads = threads;
  return nv::run_ptx(t.launch, o);
}

std::string parse_error(const std::string& text) {
  try {
    nv::parse_ptx(text);
  } catch (const Error& e) { return e.what(); }
  return "(no error)";
}

// One instruction sequence per element: thread i reads a[i], b[i], c[i] (u64) into %rd1..%rd3 and
// their low halves into %r1..%r3 and %h1..%h3, runs `body`, and stores %rd4 to d[i].
std::vector<uint64_t> eval(const std::string& body, const std::vector<uint64_t>& a, std::vector<uint64_t> b = {}, std::vector<uint64_t> c = {}) {
  const size_t n = a.size();
  b.resize(n), c.resize(n);
  std::string text = kHead + R"(.visible .entry k(.param .u64 pa, .param .u64 pb, .param .u64 pc, .param .u64 pd)
{
  .reg .pred %p<8>;
  .reg .b16 %h<8>;
  .reg .b32 %r<8>;
  .reg .b64 %rd<8>;
  .reg .b64 %x<12>;
  ld.param.u64 %x1, [pa];
  ld.param.u64 %x2, [pb];
  ld.param.u64 %x3, [pc];
  ld.param.u64 %x4, [pd];
  mov.u32 %r7, %tid.x;
  mul.wide.u32 %x5, %r7, 8;
  add.s64 %x6, %x1, %x5;
  ld.global.u64 %rd1, [%x6];
  add.s64 %x6, %x2, %x5;
  ld.global.u64 %rd2, [%x6];
  add.s64 %x6, %x3, %x5;
  ld.global.u64 %rd3, [%x6];
  cvt.u32.u64 %r1, %rd1;
  cvt.u32.u64 %r2, %rd2;
  cvt.u32.u64 %r3, %rd3;
  cvt.u16.u64 %h1, %rd1;
  cvt.u16.u64 %h2, %rd2;
  cvt.u16.u64 %h3, %rd3;
  mov.b64 %rd4, 0;
)" + body + R"(
  add.s64 %x6, %x4, %x5;
  st.global.u64 [%x6], %rd4;
  ret;
}
)";
  Text t;
  std::vector<uint64_t> d(n, 0xdeadbeef);
  uint64_t pa = t.gpu.map(const_cast<uint64_t*>(a.data()), n * 8), pb = t.gpu.map(b.data(), n * 8), pc = t.gpu.map(c.data(), n * 8);
  uint64_t pd = t.gpu.map(d.data(), n * 8);
  prepare(t, text, {pa, pb, pc, pd}, {1, 1, 1}, {static_cast<uint32_t>(n), 1, 1});
  nv::PtxRunResult r = run(t);
  if (r.fault) FAIL(r.fault->message);
  return d;
}

// One run from PTX, each buffer mapped exactly (any access past one faults).
void run_on_executor(const codegen::BuiltinKernel& k, const codegen::KernelRun& run, codegen::Buffers& bufs, unsigned threads = 0) {
  std::vector<std::pair<void*, size_t>> mapped;
  for (codegen::HostData& b : bufs) mapped.push_back({b.bytes.data(), b.bytes.size()});
  Gpu gpu;
  NvRun r = run_sm90(gpu, k.parse(run), mapped, run.var_values(), threads);
  if (r.result.fault) FAIL(r.result.fault->message);
}
void check(const std::string& name) {
  check_builtin(codegen::builtin_kernel(name), [](const auto& k, const auto& run, auto& bufs) { run_on_executor(k, run, bufs); });
}

// The built-in kernels with a case of their own below; the first case checks the rest.
const std::vector<std::string> kOwnCase = {"elementwise", "reduce", "floordiv", "variable_loop", "group_sum", "gather"};

uint64_t f32(float f) { return std::bit_cast<uint32_t>(f); }
uint64_t f64(double f) { return std::bit_cast<uint64_t>(f); }
uint64_t u32(int64_t v) { return static_cast<uint64_t>(v) & 0xffffffff; }

}  // namespace

// ---- the kernel suite ---------------------------------------------------------------------------

TEST_CASE("PTX executor: the built-in kernels match the host") {
  for (const codegen::BuiltinKernel* k : builtin_kernels_except(kOwnCase))
    check_builtin(*k, [](const auto& kk, const auto& run, auto& bufs) { run_on_executor(kk, run, bufs); });
}

TEST_CASE("PTX executor: elementwise ops in every dtype") { check("elementwise"); }

TEST_CASE("PTX executor: reductions, integer division (by a variable of several values), variables and loops") {
  for (const char* name : {"reduce", "floordiv", "variable_loop"}) check(name);
}

TEST_CASE("PTX executor: casts between every pair of dtypes, and every ALU op in every dtype") {
  // Binary ops: CDIV/CMOD guard division by zero in the IR; shift amounts stay in range.
  const std::string two = R"(out = DEFINE_GLOBAL:{OT}* {0}
a = DEFINE_GLOBAL:{T}* {1}
b = DEFINE_GLOBAL:{T}* {2}
i = RANGE(100) {0, GLOBAL}
x = LOAD:{T}(INDEX:{T}*(a, i))
y = LOAD:{T}(INDEX:{T}*(b, i))
SINK(END(STORE(INDEX:{OT}*(out, i), {E}), i))
)";
  for (ir::DType t : kAllTypes) {
    const std::string T(t.name());
    std::vector<std::string> exprs = {"-x",
                                      "x - y",
                                      "x * y",
                                      "MAX(x, y)",
                                      "CAST:" + T + "(x < y)",
                                      "CAST:" + T + "(x != y)",
                                      "CAST:" + T + "(x == y)",
                                      "WHERE(x < y, x, y)",
                                      "MULACC(x, y, x)"};
    if (t.is_float()) {
      for (const char* e : {"x / y", "SQRT(x)", "EXP2(x)", "LOG2(x)", "SIN(x)", "RECIPROCAL(x)", "TRUNC(x)", "POW(x, y)"}) exprs.push_back(e);
    } else {
      for (const char* e : {"CDIV(x, y)", "CMOD(x, y)", "x // y", "x % y", "x ^ y", "x | y", "x & y"}) exprs.push_back(e);
      exprs.push_back("x << (y & 7)");
      exprs.push_back("x >> (y & 7)");
    }
    size_t n = 100 * static_cast<size_t>(t.itemsize());
    for (const std::string& e : exprs) compare({T + ": " + e, fill(two, {{"T", T}, {"OT", T}, {"E", e}}), {n, n, n}, {}}, t);
    std::vector<ir::DType> targets = kAllTypes;
    targets.push_back(ir::dtypes::bool_);
    for (ir::DType u : targets) {
      if (u == t) continue;
      const std::string U(u.name());
      compare({T + " -> " + U, fill(two, {{"T", T}, {"OT", U}, {"E", "CAST:" + U + "(x)"}}), {100 * static_cast<size_t>(u.itemsize()), n, n}, {}}, t,
              {u, t, t});
    }
  }
}

TEST_CASE("PTX executor: workgroup memory and a barrier (group_sum) match the host, on one and two threads") {
  for (unsigned threads : {1u, 2u})
    check_builtin(codegen::builtin_kernel("group_sum"),
                  [threads](const auto& k, const auto& run, auto& bufs) { run_on_executor(k, run, bufs, threads); });
}

TEST_CASE("PTX executor: gather with out-of-range ids and a masked load read nothing outside their buffers") { check("gather"); }

TEST_CASE("PTX executor: speed of matmul (reported, not asserted)") {
  // 256x256 @ 256x256: enough warp instructions to time.
  const std::string text = R"(c = DEFINE_GLOBAL:float* {0}
a = DEFINE_GLOBAL:float* {1}
b = DEFINE_GLOBAL:float* {2}
i = RANGE(256) {0, GLOBAL}
j = RANGE(256) {1, LOCAL}
k = RANGE(256) {2, REDUCE}
acc = REDUCE:float(LOAD:float(INDEX:float*(a, i*256 + k)) * LOAD:float(INDEX:float*(b, k*256 + j)), k) {ADD}
SINK(END(STORE(INDEX:float*(c, i*256 + j), acc), i, j))
)";
  std::vector<float> a(256 * 256), b(256 * 256), c(256 * 256);
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(i % 7) - 3, b[i] = static_cast<float>(i % 5) * 0.5f;
  for (unsigned threads : {1u, 2u}) {
    Gpu gpu;
    NvRun r = run_sm90(gpu, kernel(text), {{c.data(), c.size() * 4}, {a.data(), a.size() * 4}, {b.data(), b.size() * 4}}, {}, threads);
    if (r.result.fault) FAIL(r.result.fault->message);
    MESSAGE("matmul 256^3 on " << threads << " host thread(s): " << r.result.instructions << " warp instructions in " << r.seconds * 1e3
                               << " ms = " << static_cast<double>(r.result.instructions) / r.seconds / 1e6 << " M warp-instructions/s");
    float want = 0;
    for (int k = 0; k < 256; ++k) want += a[5 * 256 + k] * b[k * 256 + 9];
    CHECK(c[5 * 256 + 9] == want);
  }
}

// ---- faults and errors --------------------------------------------------------------------------

const std::string kCopy = kHead + R"(.visible .entry copy(
	.param .u64 copy_param_0,
	.param .u64 copy_param_1
)
{
	.reg .b32 	%r<4>;
	.reg .b64 	%rd<8>;

	ld.param.u64 	%rd1, [copy_param_0];
	ld.param.u64 	%rd2, [copy_param_1];
	mov.u32 	%r1, %tid.x;
	mul.wide.u32 	%rd3, %r1, 4;
	add.s64 	%rd4, %rd2, %rd3;
	ld.global.u32 	%r2, [%rd4];
	add.s64 	%rd5, %rd1, %rd3;
	st.global.u32 	[%rd5], %r2;
	ret;
}
)";

// Module-scope data as LLVM writes it (a switch table, constant arrays, addresses of variables in
// initializers, byte by byte too) and reads it (mov of the symbol, cvta, the symbol in an address,
// ld.const): thread i writes 15 words to out[16 i ...].
const std::string kTables = kHead + R"(.global .align 4 .b8 __switch_table[20] = {5, 0, 0, 0, 11, 0, 0, 0, 57, 0, 0, 0, 23, 1, 0, 0, 17, 0, 0, 0};
.const .align 4 .u32 ctab[5] = {105, 111, 157, 123, 117};
.global .align 8 .u64 zeros[3];
.visible .global .align 4 .u32 counter;
.global .align 8 .u64 ptrs[2] = {generic(ctab), generic(ctab)+8};
.global .align 8 .b8 ptr_bytes[8] = {0xFF(generic(ctab+4)), 0xFF00(generic(ctab+4)), 0xFF0000(generic(ctab+4)), 0xFF000000(generic(ctab+4)),
  0xFF00000000(generic(ctab+4)), 0xFF0000000000(generic(ctab+4)), 0xFF000000000000(generic(ctab+4)), 0xFF00000000000000(generic(ctab+4))};
.global .align 4 .f32 fl[3] = {1.5, 0f40000000, -2};
.global .align 2 .b16 grid2[2][3] = {{1, 2, 3}, {4, 5}};
.const .align 1 .s8 small[] = {-1, -128, 127};
.global .u16 scalar = 0x1234;

.visible .entry tables(.param .u64 out)
{
  .reg .b16 %h<4>;
  .reg .b32 %r<20>;
  .reg .b64 %rd<20>;
  .reg .f32 %f<2>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd2, %r1, 64;
  add.s64 %rd3, %rd1, %rd2;
  mul.wide.u32 %rd4, %r1, 4;
  mov.u64 %rd5, __switch_table;
  cvta.global.u64 %rd6, %rd5;
  add.s64 %rd7, %rd6, %rd4;
  ld.u32 %r2, [%rd7];
  st.global.u32 [%rd3], %r2;
  ld.global.u32 %r3, [__switch_table+12];
  st.global.u32 [%rd3+4], %r3;
  mov.u64 %rd8, ctab;
  add.s64 %rd9, %rd8, %rd4;
  ld.const.u32 %r4, [%rd9];
  st.global.u32 [%rd3+8], %r4;
  ld.const.u32 %r5, [ctab+16];
  st.global.u32 [%rd3+12], %r5;
  cvta.const.u64 %rd10, %rd8;
  ld.u32 %r6, [%rd10+4];
  st.global.u32 [%rd3+16], %r6;
  ld.global.u64 %rd11, [zeros+16];
  cvt.u32.u64 %r7, %rd11;
  st.global.u32 [%rd3+20], %r7;
  ld.global.u64 %rd12, [ptrs+8];
  ld.u32 %r8, [%rd12];
  st.global.u32 [%rd3+24], %r8;
  ld.global.u64 %rd13, [ptr_bytes];
  ld.u32 %r9, [%rd13];
  st.global.u32 [%rd3+28], %r9;
  ld.global.f32 %f1, [fl+8];
  mov.b32 %r10, %f1;
  st.global.u32 [%rd3+32], %r10;
  ld.global.u16 %h1, [grid2+10];
  cvt.u32.u16 %r11, %h1;
  st.global.u32 [%rd3+36], %r11;
  ld.global.u16 %h2, [grid2+6];
  cvt.u32.u16 %r12, %h2;
  st.global.u32 [%rd3+40], %r12;
  ld.const.s8 %r13, [small+1];
  st.global.u32 [%rd3+44], %r13;
  atom.global.add.u32 %r14, [counter], 1;
  st.global.u32 [%rd3+48], %r14;
  mov.u64 %rd14, ctab+8;
  ld.const.u32 %r15, [%rd14];
  st.global.u32 [%rd3+52], %r15;
  ld.global.u16 %h3, [scalar];
  cvt.u32.u16 %r16, %h3;
  st.global.u32 [%rd3+56], %r16;
  ret;
}
)";

TEST_CASE("PTX faults: a global read past a buffer names the address, block, thread and line") {
  Text t;
  std::vector<uint32_t> in(16, 7), out(32, 0);
  uint64_t pin = t.gpu.map(in.data(), 64), pout = t.gpu.map(out.data(), 128);
  prepare(t, kCopy, {pout, pin}, {2, 1, 1}, {32, 1, 1});
  nv::PtxRunResult r = run(t);
  REQUIRE(r.fault);
  const nv::PtxFault& f = *r.fault;
  CHECK(f.kind == nv::PtxFault::Kind::Memory);
  CHECK(f.address == pin + 64);
  CHECK(f.access == emu::Access::Read);
  CHECK(f.space == "global");
  CHECK(f.block == std::array<uint32_t, 3>{0, 0, 0});
  CHECK(f.thread == std::array<uint32_t, 3>{16, 0, 0});
  CHECK(f.line == t.line_of("ld.global.u32"));
  CHECK(f.instruction == "ld.global.u32 %r2, [%rd4]");
  char addr[32];
  std::snprintf(addr, sizeof addr, "0x%llx", static_cast<unsigned long long>(pin + 64));
  CHECK(f.message == "GPU memory fault: global read of 4 bytes at " + std::string(addr) +
                         " (not mapped) by block (0,0,0) thread (16,0,0) at PTX line " + std::to_string(f.line) + ": ld.global.u32 %r2, [%rd4]");
  // The launch stopped at the fault: the faulting warp stored nothing, and block 1 did not run.
  CHECK(out[0] == 0);
  CHECK(r.blocks_run == 0);
}

TEST_CASE("PTX faults: a store to a read-only mapping, and a misaligned access") {
  {
    Text t;
    std::vector<uint32_t> in(32, 7), out(32, 0);
    uint64_t pin = t.gpu.map(in.data(), 128), pout = t.gpu.map(out.data(), 128, false);
    prepare(t, kCopy, {pout, pin}, {1, 1, 1}, {32, 1, 1});
    nv::PtxRunResult r = run(t);
    REQUIRE(r.fault);
    CHECK(r.fault->kind == nv::PtxFault::Kind::Memory);
    CHECK(r.fault->access == emu::Access::Write);
    CHECK(r.fault->address == pout);
    CHECK(r.fault->line == t.line_of("st.global.u32"));
    CHECK(r.fault->message.find("global write of 4 bytes") != std::string::npos);
    CHECK(r.fault->message.find("(read-only)") != std::string::npos);
    CHECK(out[0] == 0);
  }
  {
    Text t;
    std::vector<uint32_t> in(40, 7), out(40, 0);
    uint64_t pin = t.gpu.map(in.data(), 160), pout = t.gpu.map(out.data(), 160);
    prepare(t, kCopy, {pout, pin + 2}, {1, 1, 1}, {32, 1, 1});
    nv::PtxRunResult r = run(t);
    REQUIRE(r.fault);
    CHECK(r.fault->address == pin + 2);
    CHECK(r.fault->message.find("misaligned address") != std::string::npos);
  }
}

TEST_CASE("PTX faults: ld.param past the end of constant bank 0") {
  Text t;
  std::vector<uint32_t> in(32, 7), out(32, 0);
  uint64_t pin = t.gpu.map(in.data(), 128), pout = t.gpu.map(out.data(), 128);
  prepare(t, kCopy, {pout, pin}, {1, 1, 1}, {32, 1, 1}, 0, kParamBase + 8);  // room for the first parameter only
  nv::PtxRunResult r = run(t);
  REQUIRE(r.fault);
  CHECK(r.fault->kind == nv::PtxFault::Kind::Memory);
  CHECK(r.fault->space == "param");
  CHECK(r.fault->address == t.launch.cbank0_address + kParamBase + 8);
  CHECK(r.fault->message.find("param read of 8 bytes at ") == 0 + std::string("GPU memory fault: ").size());
  CHECK(r.fault->message.find("(parameter offset 0x8 is past the end of the " + std::to_string(kParamBase + 8) + "-byte constant bank 0") !=
        std::string::npos);
  // Parameters are read from GPU memory: with the bank unmapped, the first ld.param faults.
  t.launch.cbank0_address = 0x1000;
  r = run(t);
  REQUIRE(r.fault);
  CHECK(r.fault->space == "param");
  CHECK(r.fault->address == 0x1000 + kParamBase);
  CHECK(r.fault->message.find("(not mapped)") != std::string::npos);
}

TEST_CASE("PTX parse errors name the line and what is wrong") {
  const std::string head = kHead + ".visible .entry k(.param .u64 p)\n{\n  .reg .b32 %r<4>;\n  .reg .pred %p<2>;\n";
  auto body = [&](const std::string& s) { return head + s + "\n  ret;\n}\n"; };
  std::string e = parse_error(body("  frobnicate.b32 %r1, %r2;"));
  CHECK(e.find("PTX line 9:") == 0);
  CHECK(e.find("frobnicate") != std::string::npos);
  e = parse_error(body("  add.s32 %r1, %r2, %r3;\n  add.xyz.s32 %r1, %r2, %r3;"));
  CHECK(e.find("PTX line 10:") == 0);
  CHECK(e.find(".xyz") != std::string::npos);
  CHECK(parse_error(body("  add.s32 %r1, %r2, %r9;")).find("undeclared register %r9") != std::string::npos);
  CHECK(parse_error(body("  bra $L__nowhere;")).find("undefined label $L__nowhere") != std::string::npos);
  CHECK(parse_error(body("  add.s32 %r1, %r2, %r3")).find("PTX line 10: expected ';'") == 0);
  CHECK(parse_error(body("  add.s64 %r1, %r2, %r3;")).find("narrower") != std::string::npos);
  CHECK(parse_error(body("  mul.s32 %r1, %r2, %r3;")).find(".lo, .hi or .wide") != std::string::npos);
  CHECK(parse_error(body("  cvt.s32.f32 %r1, %r2;")).find(".rzi") != std::string::npos);
  CHECK(parse_error(body("  cp.async.ca.shared.global [%r1], [%r2], 16;")).find("PTX line 9: unknown or unsupported instruction") == 0);
  CHECK(parse_error(body("  .maxnreg 32;")).find("PTX line 9: unknown or unsupported directive") == 0);
  CHECK(parse_error(body("  popc.b16 %r1, %r2;")).find("PTX line 9: popc.b16: this combination") == 0);
  CHECK(parse_error(kHead + ".func f()\n{\n ret;\n}\n").find("PTX line 5: device functions") == 0);
  CHECK(parse_error(kHead + ".extern .global .u32 g;\n").find("PTX line 5: .extern .global variable g lives in another module") == 0);
  CHECK(parse_error(kHead + ".visible .entry k()\n{\n  ret;\n").find("end of the module") != std::string::npos);
  CHECK(parse_error(".version 7.8\n.target sm_90\n.address_size 32\n").find("PTX line 3: only .address_size 64") == 0);
  CHECK(parse_error(kHead).find("no .entry") != std::string::npos);
  CHECK(parse_error(kHead + ".visible .entry k()\n{\n  mov.u32 %r1, 0fZZ;\n}\n").find("PTX line 7") == 0);
  // The launch is checked before anything runs.
  Text t;
  prepare(t, kCopy, {0, 0}, {1, 1, 1}, {32, 1, 1});
  t.launch.block = {33, 33, 1};
  CHECK_THROWS_WITH_AS(run(t), doctest::Contains("not a valid thread block"), Error);
  t.launch.block = {32, 1, 1};
  t.launch.entry = "nope";
  CHECK_THROWS_WITH_AS(run(t), doctest::Contains("no entry 'nope'"), Error);
}

TEST_CASE("PTX executor: an infinite loop is stopped by the interrupt flag") {
  Text t;
  prepare(t, kHead + R"(.visible .entry spin()
{
  .reg .b32 %r<3>;
  mov.u32 %r1, 0;
$L__spin:
  add.s32 %r1, %r1, 1;
  bra.uni $L__spin;
}
)",
          {}, {4, 1, 1}, {64, 1, 1});
  std::atomic<bool> stop{false};
  nv::PtxRunOptions o;
  o.threads = 2;
  o.interrupt = &stop;
  nv::PtxRunResult r;
  std::thread runner([&] { r = nv::run_ptx(t.launch, o); });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  stop = true;
  runner.join();
  REQUIRE(r.fault);
  CHECK(r.fault->kind == nv::PtxFault::Kind::Interrupted);
  CHECK(r.fault->message.find("interrupted") == 0);
  CHECK(r.instructions > 1000);
}

TEST_CASE("PTX parser and executor: mutated kernels are refused with an Error or run to a result or fault") {
  // Hostile input: every mutation either parses or throws ugpu::Error; what parses runs against
  // mapped buffers (faults are fine) under a watchdog that interrupts endless loops.
  std::vector<std::string> texts;
  for (const char* k : {"softmax", "conv2d", "group_sum", "gather"}) texts.push_back(compile_sm90(codegen::builtin_kernel(k).parse())->ptx);
  texts.push_back(compile_sm90(kernel(fill(codegen::builtin_kernel("elementwise").text, {{"T", "half"}})))->ptx);
  texts.push_back(kTables);  // module data: initializers, addresses of variables, .const
  std::mt19937 rng(1234);
  int parsed = 0, refused = 0, ran = 0, faulted = 0;
  for (int iter = 0; iter < 600; ++iter) {
    std::string t = texts[static_cast<size_t>(iter) % texts.size()];
    for (int edits = 1 + static_cast<int>(rng() % 3); edits > 0; --edits) {
      if (t.size() < 2) break;
      size_t at = rng() % t.size();
      switch (rng() % 5) {
        case 0: t.erase(at, 1 + rng() % 12); break;
        case 1: t[at] = "%{}[];,.0123456789abcdefxrp-+!@_ \n"[rng() % 34]; break;
        case 2: {
          const size_t from = rng() % t.size(), len = rng() % 40;
          t.insert(at, t.substr(from, len));
          break;
        }
        case 3: {  // a digit changed: other registers, offsets, immediates
          size_t d = t.find_first_of("0123456789", at);
          if (d != std::string::npos) t[d] = static_cast<char>('0' + rng() % 10);
          break;
        }
        default: {  // a line swapped with another
          size_t a = t.rfind('\n', at), b = t.find('\n', at);
          if (a == std::string::npos || b == std::string::npos) break;
          std::string line = t.substr(a, b - a);
          t.erase(a, b - a);
          size_t to = t.empty() ? std::string::npos : t.find('\n', rng() % t.size());
          if (to != std::string::npos) t.insert(to, line);
          break;
        }
      }
    }
    std::shared_ptr<const nv::PtxModule> mod;
    try {
      mod = nv::parse_ptx(t);
    } catch (const Error&) {
      ++refused;
      continue;
    }
    ++parsed;
    if (ran >= 80) continue;
    ++ran;
    const nv::PtxEntry& e = nv::entries(*mod).at(0);
    Gpu gpu;
    std::vector<uint64_t> params;
    for (size_t i = 0; i < e.params.size(); ++i) params.push_back(gpu.alloc(4096));
    Params p = write_params(gpu, e, params);
    nv::PtxLaunch l;
    l.module = mod.get();
    l.grid = {2, 1, 1};
    l.block = {64, 1, 1};
    l.cbank0_address = p.address;
    l.cbank0_size = p.size;
    l.shared_bytes = e.static_shared_bytes;
    l.local_bytes_per_thread = e.local_bytes;
    l.memory = &gpu.memory;
    l.data_address = place_data(gpu, *mod, 1 << 20);
    std::atomic<bool> stop{false};
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    std::thread watchdog([&] {
      std::unique_lock lock(mu);
      if (!cv.wait_for(lock, std::chrono::milliseconds(200), [&] { return done; })) stop = true;
    });
    nv::PtxRunOptions o;
    o.threads = 2;
    o.interrupt = &stop;
    try {
      nv::PtxRunResult r = nv::run_ptx(l, o);
      faulted += r.fault.has_value();
    } catch (const Error&) {}
    {
      std::lock_guard lock(mu);
      done = true;
    }
    cv.notify_all();
    watchdog.join();
  }
  MESSAGE("mutants: " << parsed << " parsed (" << ran << " run, " << faulted << " faulted), " << refused << " refused");
  CHECK(refused > 100);
  CHECK(parsed > 20);
}

// ---- control flow, barriers, special registers, address spaces ----------------------------------

TEST_CASE("PTX executor: divergent if/else and loops per lane, and barriers after divergent code") {
  // 64 threads (two warps). Odd lanes take one branch, even the other; each thread then loops tid % 5
  // times; threads >= 60 exit early (exited threads count as arrived at the barrier); the rest write
  // shared memory, meet at bar.sync, and read their neighbour's value.
  Text t;
  std::vector<uint32_t> out(64, 0xffffffff);
  uint64_t pout = t.gpu.map(out.data(), 256);
  prepare(t, kHead + R"(.visible .entry div(.param .u64 out)
{
  .reg .pred %p<5>;
  .reg .b32 %r<12>;
  .reg .b64 %rd<8>;
  .shared .align 4 .b8 sh[256];
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  and.b32 %r2, %r1, 1;
  setp.eq.b32 %p1, %r2, 0;
  @%p1 bra $EVEN;
  mul.lo.s32 %r3, %r1, 3;
  bra.uni $JOIN;
$EVEN:
  add.s32 %r3, %r1, 1000;
$JOIN:
  rem.u32 %r4, %r1, 5;
  mov.u32 %r5, 0;
$LOOP:
  setp.ge.u32 %p2, %r5, %r4;
  @%p2 bra $DONE;
  add.s32 %r3, %r3, 10000;
  add.s32 %r5, %r5, 1;
  bra.uni $LOOP;
$DONE:
  setp.ge.u32 %p3, %r1, 60;
  @%p3 ret;
  mul.wide.u32 %rd2, %r1, 4;
  mov.u64 %rd3, sh;
  add.s64 %rd4, %rd3, %rd2;
  st.shared.u32 [%rd4], %r3;
  bar.sync 0;
  add.s32 %r6, %r1, 1;
  rem.u32 %r7, %r6, 60;
  mul.wide.u32 %rd5, %r7, 4;
  add.s64 %rd6, %rd3, %rd5;
  ld.shared.u32 %r8, [%rd6];
  add.s64 %rd7, %rd1, %rd2;
  st.global.u32 [%rd7], %r8;
  ret;
}
)",
          {pout}, {3, 1, 1}, {64, 1, 1});
  for (unsigned threads : {1u, 2u}) {
    std::fill(out.begin(), out.end(), 0xffffffffu);
    nv::PtxRunResult r = run(t, threads);
    if (r.fault) FAIL(r.fault->message);
    CHECK(r.blocks_run == 3);
    auto value = [](uint32_t tid) { return (tid % 2 ? tid * 3 : tid + 1000) + 10000 * (tid % 5); };
    for (uint32_t i = 0; i < 64; ++i) {
      CAPTURE(i);
      CHECK(out[i] == (i < 60 ? value((i + 1) % 60) : 0xffffffffu));
    }
  }
}

TEST_CASE("PTX executor: a barrier only some threads reach is reported as a hang") {
  Text t;
  prepare(t, kHead + R"(.visible .entry hang()
{
  .reg .pred %p<2>;
  .reg .b32 %r<3>;
  mov.u32 %r1, %tid.x;
  setp.lt.u32 %p1, %r1, 40;
  @%p1 bra $WAIT;
$LOOP:
  bar.sync 1;
  bra.uni $LOOP;
$WAIT:
  bar.sync 0;
  ret;
}
)",
          {}, {1, 1, 1}, {64, 1, 1});
  nv::PtxRunResult r = run(t);
  REQUIRE(r.fault);
  CHECK(r.fault->kind == nv::PtxFault::Kind::Illegal);
  CHECK(r.fault->message.find("GPU hang") == 0);
}

TEST_CASE("PTX executor: special registers in a 3D grid of 3D blocks") {
  // Block 5x4x2 = 40 threads (a full warp and a partial one); grid 2x3x2.
  Text t;
  const uint32_t nthreads = 40, nblocks = 12, nvals = 14;
  std::vector<uint32_t> out(nthreads * nblocks * nvals, 0xffffffff);
  uint64_t pout = t.gpu.map(out.data(), out.size() * 4);
  std::string body;
  const char* regs[] = {"%tid.x",   "%tid.y",   "%tid.z",    "%ntid.x",   "%ntid.y",   "%ntid.z", "%ctaid.x",
                        "%ctaid.y", "%ctaid.z", "%nctaid.x", "%nctaid.y", "%nctaid.z", "%laneid", "%warpid"};
  for (uint32_t i = 0; i < nvals; ++i)
    body += "  mov.u32 %r9, " + std::string(regs[i]) + ";\n  st.global.u32 [%rd3+" + std::to_string(4 * i) + "], %r9;\n";
  prepare(t, kHead + R"(.visible .entry sregs(.param .u64 out)
{
  .reg .b32 %r<12>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %ctaid.x;
  mov.u32 %r2, %ctaid.y;
  mov.u32 %r3, %ctaid.z;
  mad.lo.s32 %r4, %r3, 3, %r2;
  mad.lo.s32 %r4, %r4, 2, %r1;
  mov.u32 %r5, %tid.x;
  mov.u32 %r6, %tid.y;
  mov.u32 %r7, %tid.z;
  mad.lo.s32 %r8, %r7, 4, %r6;
  mad.lo.s32 %r8, %r8, 5, %r5;
  mad.lo.s32 %r8, %r4, 40, %r8;
  mul.lo.s32 %r8, %r8, 14;
  mul.wide.u32 %rd2, %r8, 4;
  add.s64 %rd3, %rd1, %rd2;
)" + body + "  ret;\n}\n",
          {pout}, {2, 3, 2}, {5, 4, 2});
  nv::PtxRunResult r = run(t, 2);
  if (r.fault) FAIL(r.fault->message);
  CHECK(r.blocks_run == nblocks);
  int bad = 0;
  for (uint32_t bz = 0; bz < 2; ++bz)
    for (uint32_t by = 0; by < 3; ++by)
      for (uint32_t bx = 0; bx < 2; ++bx)
        for (uint32_t tz = 0; tz < 2; ++tz)
          for (uint32_t ty = 0; ty < 4; ++ty)
            for (uint32_t tx = 0; tx < 5; ++tx) {
              const uint32_t linear = (tz * 4 + ty) * 5 + tx, blk = (bz * 3 + by) * 2 + bx;
              const uint32_t want[] = {tx, ty, tz, 5, 4, 2, bx, by, bz, 2, 3, 2, linear % 32, linear / 32};
              for (uint32_t i = 0; i < nvals; ++i) bad += out[(blk * nthreads + linear) * nvals + i] != want[i];
            }
  CHECK(bad == 0);
}

TEST_CASE("PTX executor: generic addresses into shared and local memory through cvta") {
  Text t;
  std::vector<uint64_t> out(32 * 4, 0);
  uint64_t pout = t.gpu.map(out.data(), out.size() * 8);
  prepare(t, kHead + R"(.visible .entry gen(.param .u64 out)
{
  .reg .b32 %r<8>;
  .reg .b64 %rd<16>;
  .reg .b64 %SP;
  .reg .b64 %SPL;
  .shared .align 8 .b8 pad[24];
  .extern .shared .align 4 .b8 buf[];
  .local .align 8 .b8 __local_depot0[16];
  mov.u64 %SPL, __local_depot0;
  cvta.local.u64 %SP, %SPL;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  mov.u64 %rd2, buf;
  cvta.shared.u64 %rd3, %rd2;
  mul.wide.u32 %rd4, %r1, 4;
  add.s64 %rd5, %rd3, %rd4;
  mul.lo.s32 %r2, %r1, 7;
  st.u32 [%rd5], %r2;
  st.u32 [%SP+8], %r1;
  bar.sync 0;
  mov.u32 %r3, 31;
  sub.s32 %r4, %r3, %r1;
  mul.wide.u32 %rd6, %r4, 4;
  add.s64 %rd7, %rd2, %rd6;
  ld.shared.u32 %r5, [%rd7];
  cvta.to.shared.u64 %rd8, %rd5;
  ld.local.u32 %r6, [%SPL+8];
  mul.wide.u32 %rd9, %r1, 32;
  add.s64 %rd10, %rd1, %rd9;
  cvt.u64.u32 %rd11, %r5;
  st.global.u64 [%rd10], %rd11;
  st.global.u64 [%rd10+8], %rd8;
  st.global.u64 [%rd10+16], %rd5;
  cvt.u64.u32 %rd12, %r6;
  st.global.v2.u64 [%rd10+16], {%rd5, %rd12};
  ret;
}
)",
          {pout}, {1, 1, 1}, {32, 1, 1}, 24 + 128);
  const nv::PtxEntry& e = nv::entries(*t.mod)[0];
  CHECK(e.static_shared_bytes == 24);
  CHECK(e.local_bytes == 16);
  nv::PtxRunResult r = run(t);
  if (r.fault) FAIL(r.fault->message);
  for (uint64_t i = 0; i < 32; ++i) {
    CAPTURE(i);
    CHECK(out[i * 4] == (31 - i) * 7);
    CHECK(out[i * 4 + 1] == 24 + i * 4);
    CHECK(out[i * 4 + 2] == t.launch.shared_window + 24 + i * 4);
    CHECK(out[i * 4 + 3] == i);
  }
  // A generic address past the block's shared memory faults naming shared memory.
  t.launch.shared_bytes = 24 + 64;
  r = run(t);
  REQUIRE(r.fault);
  CHECK(r.fault->space == "shared");
  CHECK(r.fault->thread[0] == 16);
  CHECK(r.fault->message.find("past the end of the block's 88-byte shared memory") != std::string::npos);
}

// ---- single instructions ------------------------------------------------------------------------

// ---- module data ---------------------------------------------------------------------------------

TEST_CASE("PTX module data: .global and .const variables, initialized and not, by symbol, offset, mov, cvta and ld.const") {
  Text t;
  std::vector<uint32_t> out(5 * 16, 0xdeadbeef);
  uint64_t po = t.gpu.map(out.data(), out.size() * 4);
  prepare(t, kTables, {po}, {1, 1, 1}, {5, 1, 1});
  // The layout: the .const part first (read-only, a page), the .global part after it.
  const nv::PtxData& d = nv::data(*t.mod);
  CHECK(d.const_bytes == 4096);
  REQUIRE(d.variables.size() == 10);
  CHECK(d.variables[0].name == "__switch_table");
  CHECK(d.variables[0].offset == 4096);
  CHECK(d.variables[0].size == 20);
  CHECK(!d.variables[0].constant);
  CHECK(d.variables[1].name == "ctab");
  CHECK(d.variables[1].constant);
  CHECK(d.variables[1].offset == 0);
  CHECK(d.variables[8].name == "small");
  CHECK(d.variables[8].size == 3);  // its size from the initializer
  CHECK(d.variables[7].size == 12);
  CHECK(d.bytes >= 4096 + 20 + 24 + 4 + 16 + 8 + 12 + 12 + 2);
  CHECK(t.launch.data_address != 0);
  const uint64_t ctab = t.launch.data_address + d.variables[1].offset;
  nv::PtxRunResult r = run(t);
  if (r.fault) FAIL(r.fault->message);
  const uint32_t table[] = {5, 11, 57, 23 + 256, 17}, ct[] = {105, 111, 157, 123, 117};
  std::set<uint32_t> olds;
  for (uint32_t i = 0; i < 5; ++i) {
    CAPTURE(i);
    const uint32_t* w = &out[i * 16];
    CHECK(w[0] == table[i]);      // mov of the symbol, cvta.global, a generic load
    CHECK(w[1] == 279);           // [__switch_table+12]
    CHECK(w[2] == ct[i]);         // ld.const through a register
    CHECK(w[3] == 117);           // [ctab+16]
    CHECK(w[4] == 111);           // cvta.const, then generic
    CHECK(w[5] == 0);             // zero-initialized
    CHECK(w[6] == 157);           // ptrs[1] = generic(ctab)+8
    CHECK(w[7] == 111);           // the bytes of generic(ctab+4)
    CHECK(w[8] == 0xc0000000u);   // -2 as .f32
    CHECK(w[9] == 0);             // grid2[1][2]: not in the initializer
    CHECK(w[10] == 4);            // grid2[1][0]
    CHECK(w[11] == 0xffffff80u);  // small[1], sign-extended
    CHECK(w[13] == 157);          // mov of ctab+8
    CHECK(w[14] == 0x1234);       // a scalar
    olds.insert(w[12]);
  }
  CHECK(olds == std::set<uint32_t>{0, 1, 2, 3, 4});  // one counter for all threads
  // The relocated initializers hold the addresses the data got.
  uint64_t p1 = 0;
  std::memcpy(&p1, t.gpu.host(t.launch.data_address + d.variables[4].offset + 8), 8);
  CHECK(p1 == ctab + 8);
  // Variables keep their values from launch to launch, as a loaded module's do.
  r = run(t);
  if (r.fault) FAIL(r.fault->message);
  olds.clear();
  for (uint32_t i = 0; i < 5; ++i) olds.insert(out[i * 16 + 12]);
  CHECK(olds == std::set<uint32_t>{5, 6, 7, 8, 9});
  // An entry that uses the data needs it placed.
  t.launch.data_address = 0;
  CHECK_THROWS_WITH_AS(run(t), doctest::Contains("PtxLaunch::data_address is 0"), Error);
}

TEST_CASE("PTX module data: .const variables are read-only, and the data's bounds are checked") {
  Text t;
  prepare(t, kHead + R"(.const .align 4 .u32 c[2] = {1, 2};
.global .align 4 .u32 g[2];
.visible .entry w(.param .u64 which)
{
  .reg .pred %p<2>;
  .reg .b64 %rd<4>;
  .reg .b32 %r<2>;
  ld.param.u64 %rd1, [which];
  setp.eq.u64 %p1, %rd1, 0;
  mov.u64 %rd2, c;
  cvta.const.u64 %rd3, %rd2;
  @%p1 st.u32 [%rd3+4], 7;
  @%p1 ret;
  ld.global.u32 %r1, [g+4096];
  ret;
}
)",
          {0}, {1, 1, 1}, {1, 1, 1});
  const nv::PtxData& d = nv::data(*t.mod);
  nv::PtxRunResult r = run(t);
  REQUIRE(r.fault);
  CHECK(r.fault->address == t.launch.data_address + 4);
  CHECK(r.fault->message.find("read-only") != std::string::npos);
  std::memcpy(t.gpu.host(t.launch.cbank0_address) + kParamBase, "\1", 1);
  r = run(t);
  REQUIRE(r.fault);
  CHECK(r.fault->address == t.launch.data_address + d.variables[1].offset + 4096);  // g+4096: past the data
  CHECK(r.fault->message.find("not mapped") != std::string::npos);
  // Every entry of a module addresses the same variables.
  Text t2;
  std::vector<uint32_t> o2(2, 0);
  const uint64_t p2 = t2.gpu.map(o2.data(), 8);
  prepare(t2, kHead + R"(.global .align 4 .u32 g[2] = {7, 9};
.visible .entry a(.param .u64 o)
{
  .reg .b32 %r<2>;
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [o];
  ld.global.u32 %r1, [g];
  st.global.u32 [%rd1], %r1;
  ret;
}
.visible .entry b(.param .u64 o)
{
  .reg .b32 %r<2>;
  .reg .b64 %rd<3>;
  ld.param.u64 %rd1, [o];
  mov.u64 %rd2, g+4;
  ld.u32 %r1, [%rd2];
  st.global.u32 [%rd1+4], %r1;
  ret;
}
)",
          {p2}, {1, 1, 1}, {1, 1, 1});
  for (const char* e : {"a", "b"}) {
    t2.launch.entry = e;
    r = run(t2);
    if (r.fault) FAIL(r.fault->message);
  }
  CHECK(o2 == std::vector<uint32_t>{7, 9});
}

TEST_CASE("PTX module data: malformed declarations are parse errors naming the line") {
  auto err = [](const std::string& decl, const std::string& use = "") {
    return parse_error(kHead + decl + "\n.visible .entry k()\n{\n  .reg .b32 %r<2>;\n" + use + "\n  ret;\n}\n");
  };
  CHECK(err(".global .u32 t[2] = {1, 2, 3};").find("PTX line 5: the initializer of t is longer than the array (2 elements)") == 0);
  CHECK(err(".global .u32 t[2][2] = {{1, 2}, {3, 4}, {5, 6}};").find("longer than the array (2 rows)") != std::string::npos);
  CHECK(err(".global .u32 t[2][2] = {{1, 2, 3}};").find("longer than the array (2 elements at this level)") != std::string::npos);
  CHECK(err(".global .u64 p = generic(nosuch);").find("PTX line 5: unknown symbol nosuch in the initializer of p") == 0);
  CHECK(err(".global .u32 t[2] = {1, 2x};").find("PTX line 5: malformed number '2x'") == 0);
  CHECK(err(".global .b8 t[2] = {1, 256};").find("256 does not fit in .b8") != std::string::npos);
  CHECK(err(".global .s8 t[2] = {-128, -129};").find("-129 does not fit in .s8") != std::string::npos);
  CHECK(err(".global .f32 t[1] = {generic(t)};").find("cannot initialize .f32") != std::string::npos);
  CHECK(err(".global .u32 t[2] = {1, 2").find("expected ',' or '}'") != std::string::npos);
  CHECK(err(".global .u32 t[2] = {1, {2}};").find("unexpected '{'") != std::string::npos);
  CHECK(err(".global .u32 t[];").find("has no size and no initializer") != std::string::npos);
  CHECK(err(".global .u32 t[0];").find("a dimension of 0") != std::string::npos);
  CHECK(err(".global .b8 t[4294967296][2];").find("is too large") != std::string::npos);
  CHECK(err(".global .b8 t[18446744073709551615][18446744073709551615];").find("is too large") != std::string::npos);
  CHECK(err(".global .u32 t;\n.const .u32 t;").find("PTX line 6: variable t declared twice") == 0);
  CHECK(err(".global .align 3 .u32 t;").find(".align 3 is not a power of two") != std::string::npos);
  CHECK(err(".global .u32 t = {1};").find("takes a single value") != std::string::npos);
  CHECK(err(".global .u32 t[2] = {1, 0x12(t)};").find("only a one-byte mask") != std::string::npos);
  CHECK(err(".global .texref t;").find("unsupported modifier .texref") != std::string::npos);
  CHECK(err(".global .u32 t;", "  ld.global.u32 %r1, [nosuch+4];").find("unknown symbol nosuch in an address") != std::string::npos);
  CHECK(err(".global .u32 t;", "  ld.shared.u32 %r1, [t];").find("global variable t accessed as .shared") != std::string::npos);
  CHECK(err(".const .u32 t;", "  st.const.u32 [t], %r1;").find("stores to the parameter or constant space are not allowed") != std::string::npos);
  CHECK(err(".global .u32 t;", "  mov.u32 %r1, nosuch;").find("unknown symbol nosuch") != std::string::npos);
  // Truncated and garbled declarations are errors too, never a crash.
  const std::string decl = ".global .align 8 .u64 p[3] = {generic(q)+4, 0xFF00(generic(q)), -1};\n.const .b16 q[2][2] = {{1, 2}, {3}};";
  for (size_t n = 0; n < decl.size(); ++n) {
    CAPTURE(n);
    CHECK_NOTHROW(err(decl.substr(0, n)));
    std::string g = decl;
    g[n] = "{}(),;+-x0[]"[n % 12];
    CHECK_NOTHROW(err(g));
  }
}

TEST_CASE("PTX instructions: integer division, remainder, shifts and multiplies") {
  std::vector<uint64_t> a = {u32(7), u32(-7), u32(INT32_MIN), u32(5), u32(-5), 0xffffffffu};
  std::vector<uint64_t> b = {u32(2), u32(2), u32(-1), 0, 0, 0};
  auto d = eval("div.s32 %r4, %r1, %r2;\n  cvt.u64.u32 %rd4, %r4;", a, b);
  CHECK(d == std::vector<uint64_t>{3, u32(-3), u32(INT32_MIN), 0xffffffff, 0xffffffff, 0xffffffff});
  d = eval("rem.s32 %r4, %r1, %r2;\n  cvt.u64.u32 %rd4, %r4;", a, b);
  CHECK(d == std::vector<uint64_t>{1, u32(-1), 0, 5, u32(-5), 0xffffffff});
  d = eval("div.u32 %r4, %r1, %r2;\n  cvt.u64.u32 %rd4, %r4;", a, b);
  CHECK(d == std::vector<uint64_t>{3, u32(-7) / 2, 0, 0xffffffff, 0xffffffff, 0xffffffff});
  // Shift amounts are not masked: past the width, shl and shr.u give 0 and shr.s the sign.
  d = eval("shl.b32 %r4, %r1, %r2;\n  cvt.u64.u32 %rd4, %r4;", {1, 1, 1, 3}, {31, 32, 200, 1});
  CHECK(d == std::vector<uint64_t>{0x80000000u, 0, 0, 6});
  d = eval("shr.s32 %r4, %r1, %r2;\n  cvt.u64.u32 %rd4, %r4;", {u32(-8), u32(-8), 8, 8}, {1, 40, 40, 3});
  CHECK(d == std::vector<uint64_t>{u32(-4), 0xffffffff, 0, 1});
  d = eval("shr.u16 %h4, %h1, %r2;\n  cvt.u64.u16 %rd4, %h4;", {0x8000, 0x8000}, {15, 16});
  CHECK(d == std::vector<uint64_t>{1, 0});
  d = eval("shr.s64 %rd4, %rd1, %r2;", {static_cast<uint64_t>(-256)}, {64});
  CHECK(d == std::vector<uint64_t>{~uint64_t{0}});
  d = eval("mul.hi.s32 %r4, %r1, %r2;\n  cvt.u64.u32 %rd4, %r4;", {u32(-3), 0x40000000}, {u32(5), 8});
  CHECK(d == std::vector<uint64_t>{0xffffffff, 2});
  d = eval("mul.wide.s32 %rd4, %r1, %r2;", {u32(-3), 0x40000000}, {u32(5), 8});
  CHECK(d == std::vector<uint64_t>{static_cast<uint64_t>(-15), 0x200000000ull});
  d = eval("mul.hi.u64 %rd4, %rd1, %rd2;", {~uint64_t{0}}, {~uint64_t{0}});
  CHECK(d == std::vector<uint64_t>{~uint64_t{0} - 1});
  d = eval("mad.lo.s16 %h4, %h1, %h2, %h3;\n  cvt.s64.s16 %rd4, %h4;", {300}, {300}, {1});
  CHECK(d == std::vector<uint64_t>{static_cast<uint64_t>(static_cast<int16_t>(90001 & 0xffff))});
  d = eval("add.sat.s32 %r4, %r1, %r2;\n  cvt.u64.u32 %rd4, %r4;", {u32(INT32_MAX), u32(INT32_MIN)}, {1, u32(-1)});
  CHECK(d == std::vector<uint64_t>{u32(INT32_MAX), u32(INT32_MIN)});
  // A 64-bit add from 32-bit halves with the carry flag.
  d = eval("add.cc.u32 %r4, %r1, %r2;\n  addc.u32 %r5, %r3, 0;\n  mov.b64 %rd4, {%r4, %r5};", {0xffffffff, 5}, {1, 6}, {7, 7});
  CHECK(d == std::vector<uint64_t>{0x800000000ull, 0x70000000bull});
}

TEST_CASE("PTX instructions: bit manipulation") {
  auto d = eval("popc.b32 %r4, %r1;\n  clz.b32 %r5, %r1;\n  mov.b64 %rd4, {%r4, %r5};", {0, 0xf0f0, 0xffffffff});
  CHECK(d == std::vector<uint64_t>{32ull << 32, 8 | 16ull << 32, 32});
  d = eval("brev.b32 %r4, %r1;\n  cvt.u64.u32 %rd4, %r4;", {1, 0x80000001u});
  CHECK(d == std::vector<uint64_t>{0x80000000u, 0x80000001u});
  d = eval("bfe.s32 %r4, %r1, %r2, %r3;\n  cvt.u64.u32 %rd4, %r4;", {0xf0, 0xf0, 0xf0, 0x12345678}, {4, 4, 0, 8}, {4, 5, 0, 8});
  CHECK(d == std::vector<uint64_t>{0xffffffff, 0xf, 0, 0x56});
  d = eval("bfe.u32 %r4, %r1, %r2, %r3;\n  cvt.u64.u32 %rd4, %r4;", {0xf0, 0x80000000u}, {4, 28}, {4, 10});
  CHECK(d == std::vector<uint64_t>{0xf, 8});
  d = eval("bfi.b32 %r4, %r1, %r2, 8, 8;\n  cvt.u64.u32 %rd4, %r4;", {0xab}, {0x11223344});
  CHECK(d == std::vector<uint64_t>{0x1122ab44});
  d = eval("prmt.b32 %r4, %r1, %r2, %r3;\n  cvt.u64.u32 %rd4, %r4;", {0x44332211, 0x44332211, 0x44332211}, {0x88776655, 0x88776655, 0x88776655},
           {0x3210, 0x8765, 0xf765});
  CHECK(d == std::vector<uint64_t>{0x44332211, 0x00887766, 0xff887766});
  // The other modes take the selector's low two bits: f4e, b4e, rc8, ecl, ecr, rc16.
  d = eval("prmt.b32.f4e %r4, %r1, %r2, 1;\n  prmt.b32.b4e %r5, %r1, %r2, 1;\n  mov.b64 %rd4, {%r4, %r5};", {0x44332211}, {0x88776655});
  CHECK(d == std::vector<uint64_t>{0x55443322 | 0x77881122ull << 32});
  d = eval("prmt.b32.rc8 %r4, %r1, %r2, 2;\n  prmt.b32.ecl %r5, %r1, %r2, 1;\n  mov.b64 %rd4, {%r4, %r5};", {0x44332211}, {0x88776655});
  CHECK(d == std::vector<uint64_t>{0x33333333 | 0x44332222ull << 32});
  d = eval("prmt.b32.ecr %r4, %r1, %r2, 1;\n  prmt.b32.rc16 %r5, %r1, %r2, 1;\n  mov.b64 %rd4, {%r4, %r5};", {0x44332211}, {0x88776655});
  CHECK(d == std::vector<uint64_t>{0x22222211 | 0x44334433ull << 32});
  d = eval("bfind.u32 %r4, %r1;\n  bfind.shiftamt.u32 %r5, %r1;\n  mov.b64 %rd4, {%r4, %r5};", {0, 1, 0x80000000u});
  CHECK(d == std::vector<uint64_t>{0xffffffffffffffffull, 31ull << 32, 31});
  d = eval("and.b32 %r4, %r1, %r2;\n  or.b32 %r5, %r1, %r2;\n  xor.b32 %r5, %r5, %r4;\n  not.b32 %r5, %r5;\n  mov.b64 %rd4, {%r4, %r5};",
           {0xff00ff00u}, {0x0ff00ff0u});
  CHECK(d == std::vector<uint64_t>{0x0f000f00ull | uint64_t{~0xf0f0f0f0u} << 32});
  d = eval("shf.l.wrap.b32 %r4, %r1, %r2, %r3;\n  shf.r.clamp.b32 %r5, %r1, %r2, %r3;\n  mov.b64 %rd4, {%r4, %r5};", {0x80000000u, 1}, {1, 2},
           {1, 40});
  CHECK(d == std::vector<uint64_t>{3 | 0xc0000000ull << 32, 0x200 | 2ull << 32});
}

TEST_CASE("PTX instructions: conversions round and saturate as the ISA says") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto d = eval("cvt.rzi.s32.f32 %r4, %r1;\n  cvt.u64.u32 %rd4, %r4;", {f32(2.7f), f32(-2.7f), f32(3e9f), f32(-3e9f), f32(nan)});
  CHECK(d == std::vector<uint64_t>{2, u32(-2), u32(INT32_MAX), u32(INT32_MIN), 0});
  d = eval("cvt.rni.s32.f32 %r4, %r1;\n  cvt.u64.u32 %rd4, %r4;", {f32(2.5f), f32(3.5f), f32(-2.5f), f32(-0.7f)});
  CHECK(d == std::vector<uint64_t>{2, 4, u32(-2), u32(-1)});
  d = eval("cvt.rmi.s32.f32 %r4, %r1;\n  cvt.rpi.s32.f32 %r5, %r1;\n  mov.b64 %rd4, {%r4, %r5};", {f32(2.5f), f32(-2.5f)});
  CHECK(d == std::vector<uint64_t>{2 | 3ull << 32, u32(-3) | u32(-2) << 32});
  d = eval("cvt.rzi.u8.f32 %h4, %r1;\n  cvt.u64.u16 %rd4, %h4;", {f32(300.f), f32(-5.f), f32(200.9f)});
  CHECK(d == std::vector<uint64_t>{255, 0, 200});
  d = eval("cvt.rzi.u64.f64 %rd4, %rd1;", {f64(1e30), f64(-1.0), f64(12345.9)});
  CHECK(d == std::vector<uint64_t>{~uint64_t{0}, 0, 12345});
  d = eval("cvt.sat.s8.s32 %h4, %r1;\n  cvt.s64.s16 %rd4, %h4;", {u32(1000), u32(-1000), u32(-5)});
  CHECK(d == std::vector<uint64_t>{127, static_cast<uint64_t>(-128), static_cast<uint64_t>(-5)});
  d = eval("cvt.s16.s8 %h4, %h1;\n  cvt.u64.u16 %rd4, %h4;", {0x80, 0x17f});
  CHECK(d == std::vector<uint64_t>{0xff80, 0x7f});
  // f32 -> f16: ties to even, directed modes, overflow, subnormals.
  d = eval("cvt.rn.f16.f32 %h4, %r1;\n  cvt.u64.u16 %rd4, %h4;",
           {f32(1.0f + 0x1p-11f), f32(1.0f + 3 * 0x1p-11f), f32(70000.f), f32(0x1p-25f), f32(0x1.8p-24f), f32(nan)});
  CHECK(d == std::vector<uint64_t>{0x3c00, 0x3c02, 0x7c00, 0x0000, 0x0002, 0x7fff});
  d = eval("cvt.rz.f16.f32 %h4, %r1;\n  cvt.rp.f16.f32 %h5, %r1;\n  cvt.u32.u16 %r4, %h4;\n  cvt.u32.u16 %r5, %h5;\n  mov.b64 %rd4, {%r4, %r5};",
           {f32(70000.f), f32(-1.0f - 0x1p-20f)});
  CHECK(d == std::vector<uint64_t>{0x7bff | 0x7c00ull << 32, 0xbc00 | 0xbc00ull << 32});
  d = eval("cvt.f32.f16 %r4, %h1;\n  cvt.u64.u32 %rd4, %r4;", {0x3c00, 0x0001, 0xfc00});
  CHECK(d == std::vector<uint64_t>{f32(1.0f), f32(0x1p-24f), f32(-std::numeric_limits<float>::infinity())});
  d = eval("cvt.rn.bf16.f32 %h4, %r1;\n  cvt.u64.u16 %rd4, %h4;\n", {f32(1.0f + 0x1p-8f), f32(1.0f + 3 * 0x1p-8f)});
  CHECK(d == std::vector<uint64_t>{0x3f80, 0x3f82});
  // Integers to floats in every direction: 2^24 + 1 is not a float.
  d = eval("cvt.rn.f32.s64 %r4, %rd1;\n  cvt.rp.f32.s64 %r5, %rd1;\n  mov.b64 %rd4, {%r4, %r5};",
           {(1ull << 24) + 1, static_cast<uint64_t>(-(1ll << 24) - 1)});
  CHECK(d == std::vector<uint64_t>{f32(0x1p24f) | f32(0x1p24f + 2) << 32, f32(-0x1p24f) | f32(-0x1p24f) << 32});  // a tie: to the even -2^24
  d = eval("cvt.rn.f64.u64 %rd4, %rd1;", {~uint64_t{0}});
  CHECK(d == std::vector<uint64_t>{f64(0x1p64)});
  d = eval("cvt.rz.f64.u64 %rd4, %rd1;", {~uint64_t{0}});
  CHECK(d == std::vector<uint64_t>{f64(0x1.fffffffffffffp63)});
  d = eval("cvt.rn.f32.f64 %r4, %rd1;\n  cvt.u64.u32 %rd4, %r4;", {f64(1.0 + 0x1p-24), f64(1e300)});
  CHECK(d == std::vector<uint64_t>{f32(1.0f), f32(std::numeric_limits<float>::infinity())});
  d = eval("cvt.rzi.f32.f32 %r4, %r1;\n  cvt.sat.f32.f32 %r5, %r1;\n  mov.b64 %rd4, {%r4, %r5};", {f32(-2.5f), f32(0.25f), f32(nan)});
  CHECK(d == std::vector<uint64_t>{f32(-2.0f) | 0ull << 32, f32(0.0f) | f32(0.25f) << 32, 0x7fffffffull});
  d = eval("cvt.rn.f16x2.f32 %r4, %r1, %r2;\n  cvt.u64.u32 %rd4, %r4;", {f32(1.0f)}, {f32(-2.0f)});
  CHECK(d == std::vector<uint64_t>{0x3c00c000});
}

TEST_CASE("PTX instructions: floating point — rounding modes, f16, NaNs, comparisons, approximations") {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  auto d = eval("add.rn.f32 %r4, %r1, %r2;\n  add.rp.f32 %r5, %r1, %r2;\n  mov.b64 %rd4, {%r4, %r5};", {f32(1.0f), f32(-1.0f)},
                {f32(0x1p-30f), f32(-0x1p-30f)});
  CHECK(d == std::vector<uint64_t>{f32(1.0f) | f32(1.0f + 0x1p-23f) << 32, f32(-1.0f) | f32(-1.0f) << 32});
  d = eval("add.rz.f32 %r4, %r1, %r2;\n  add.rm.f32 %r5, %r1, %r2;\n  mov.b64 %rd4, {%r4, %r5};", {f32(-1.0f), f32(3e38f)},
           {f32(-0x1p-30f), f32(3e38f)});
  CHECK(d == std::vector<uint64_t>{f32(-1.0f) | f32(-1.0f - 0x1p-23f) << 32,
                                   f32(std::numeric_limits<float>::max()) | f32(std::numeric_limits<float>::max()) << 32});
  d = eval("div.rz.f32 %r4, %r1, %r2;\n  div.rn.f32 %r5, %r1, %r2;\n  mov.b64 %rd4, {%r4, %r5};", {f32(2.0f)}, {f32(3.0f)});
  CHECK(d == std::vector<uint64_t>{f32(std::nextafter(2.0f / 3.0f, 0.0f)) | f32(2.0f / 3.0f) << 32});
  d = eval("div.rp.f64 %rd4, %rd1, %rd2;", {f64(1.0)}, {f64(3.0)});
  CHECK(d == std::vector<uint64_t>{f64(std::nextafter(1.0 / 3.0, 1.0))});
  d = eval("fma.rz.f64 %rd4, %rd1, %rd2, %rd3;\n  fma.rn.f64 %rd5, %rd1, %rd2, %rd3;\n  xor.b64 %rd4, %rd4, %rd5;", {f64(1.0 / 3)}, {f64(3.0)},
           {f64(0.0)});
  CHECK(d == std::vector<uint64_t>{f64(std::nextafter(1.0, 0.0)) ^ f64(1.0)});  // (1 - 2^-54) exactly: a tie in rn, down in rz
  d = eval("sqrt.rn.f32 %r4, %r1;\n  rcp.rn.f32 %r5, %r1;\n  mov.b64 %rd4, {%r4, %r5};", {f32(2.0f), f32(-1.0f)});
  CHECK(d == std::vector<uint64_t>{f32(std::sqrt(2.0f)) | f32(0.5f) << 32, 0x7fffffffull | f32(-1.0f) << 32});
  d = eval("sqrt.rm.f64 %rd4, %rd1;", {f64(2.0)});
  CHECK(d == std::vector<uint64_t>{f64(std::sqrt(2.0)) - (std::sqrt(2.0) * std::sqrt(2.0) > 2.0 ? 1 : 0)});
  d = eval("fma.rn.f32 %r4, %r1, %r2, %r3;\n  cvt.u64.u32 %rd4, %r4;", {f32(1.0f + 0x1p-23f)}, {f32(1.0f - 0x1p-23f)}, {f32(-1.0f)});
  CHECK(d == std::vector<uint64_t>{f32(-0x1p-46f)});
  d = eval("add.f32 %r4, %r1, %r2;\n  cvt.u64.u32 %rd4, %r4;", {f32(inf)}, {f32(-inf)});
  CHECK(d == std::vector<uint64_t>{0x7fffffff});
  d = eval("mul.ftz.f32 %r4, %r1, %r2;\n  mul.f32 %r5, %r1, %r2;\n  mov.b64 %rd4, {%r4, %r5};", {f32(0x1p-100f)}, {f32(0x1p-30f)});
  CHECK(d == std::vector<uint64_t>{0 | f32(0x1p-130f) << 32});
  d = eval("mul.sat.f32 %r4, %r1, %r2;\n  cvt.u64.u32 %rd4, %r4;", {f32(3.0f), f32(-3.0f), f32(0.25f)}, {f32(3.0f), f32(3.0f), f32(2.0f)});
  CHECK(d == std::vector<uint64_t>{f32(1.0f), f32(0.0f), f32(0.5f)});
  // f16 rounds per instruction.
  d = eval("add.rn.f16 %h4, %h1, %h2;\n  mul.rn.f16 %h5, %h1, %h2;\n  cvt.u32.u16 %r4, %h4;\n  cvt.u32.u16 %r5, %h5;\n  mov.b64 %rd4, {%r4, %r5};",
           {0x3c00, 0x7bff}, {0x1000, 0x4000});  // 1 + 2^-11 (a tie), 65504 * 2
  CHECK(d == std::vector<uint64_t>{0x3c00 | 0x1000ull << 32, 0x7bff | 0x7c00ull << 32});
  d = eval("fma.rn.f16 %h4, %h1, %h2, %h3;\n  cvt.u64.u16 %rd4, %h4;", {0x3c01}, {0x3c01}, {0xbc00});  // (1+u)^2 - 1 = 2u + u^2: a tie, to even
  CHECK(d == std::vector<uint64_t>{0x1800});
  // min/max: NaN loses; -0 < +0; .NaN makes NaN win.
  d = eval("min.f32 %r4, %r1, %r2;\n  max.f32 %r5, %r1, %r2;\n  mov.b64 %rd4, {%r4, %r5};", {f32(nan), f32(-0.0f), f32(nan)},
           {f32(3.0f), f32(0.0f), f32(nan)});
  CHECK(d == std::vector<uint64_t>{f32(3.0f) | f32(3.0f) << 32, f32(-0.0f) | f32(0.0f) << 32, 0x7fffffffull | 0x7fffffffull << 32});
  d = eval("max.NaN.f32 %r4, %r1, %r2;\n  cvt.u64.u32 %rd4, %r4;", {f32(nan)}, {f32(3.0f)});
  CHECK(d == std::vector<uint64_t>{0x7fffffff});
  d = eval("neg.f32 %r4, %r1;\n  abs.f32 %r5, %r1;\n  mov.b64 %rd4, {%r4, %r5};", {f32(-2.0f)});
  CHECK(d == std::vector<uint64_t>{f32(2.0f) | f32(2.0f) << 32});
  d = eval("copysign.f32 %r4, %r1, %r2;\n  cvt.u64.u32 %rd4, %r4;", {f32(-1.0f)}, {f32(5.0f)});
  CHECK(d == std::vector<uint64_t>{f32(-5.0f)});
  // Comparisons: ordered ones are false with a NaN, unordered ones true.
  std::string cmps;
  const char* ops[] = {"lt", "ltu", "ge", "geu", "ne", "neu", "equ", "num", "nan"};
  for (int i = 0; i < 9; ++i)
    cmps +=
        "  setp." + std::string(ops[i]) + ".f32 %p1, %r1, %r2;\n  selp.u64 %x8, " + std::to_string(1 << i) + ", 0, %p1;\n  or.b64 %rd4, %rd4, %x8;\n";
  d = eval(cmps, {f32(1.0f), f32(nan), f32(2.0f)}, {f32(2.0f), f32(1.0f), f32(2.0f)});
  CHECK(d == std::vector<uint64_t>{0b010110011, 0b101101010, 0b011001100});
  d = eval("setp.lt.and.s32 %p1|%p2, %r1, %r2, %p3;\n  selp.u64 %rd4, 1, 0, %p1;\n  selp.u64 %x8, 2, 0, %p2;\n  or.b64 %rd4, %rd4, %x8;", {1, 3},
           {2, 2});
  CHECK(d == std::vector<uint64_t>{0, 0});  // %p3 is false
  d = eval(
      "setp.ne.s32 %p3, %r3, 0;\n  setp.lt.or.s32 %p1|%p2, %r1, %r2, !%p3;\n  selp.u64 %rd4, 1, 0, %p1;\n  selp.u64 %x8, 2, 0, %p2;\n  or.b64 %rd4, "
      "%rd4, %x8;",
      {1, 3, 3}, {2, 2, 2}, {1, 1, 0});
  CHECK(d == std::vector<uint64_t>{1, 2, 3});
  d = eval(
      "testp.subnormal.f32 %p1, %r1;\n  testp.finite.f32 %p2, %r1;\n  selp.u64 %rd4, 1, 0, %p1;\n  selp.u64 %x8, 2, 0, %p2;\n  or.b64 %rd4, %rd4, "
      "%x8;",
      {f32(0x1p-140f), f32(inf), f32(1.0f)});
  CHECK(d == std::vector<uint64_t>{3, 0, 2});
  d = eval("slct.s32.s32 %r4, %r1, %r2, %r3;\n  cvt.u64.u32 %rd4, %r4;", {1, 1}, {2, 2}, {u32(-1), 0});
  CHECK(d == std::vector<uint64_t>{2, 1});
  // Approximate functions are computed exactly and rounded once.
  d = eval("ex2.approx.f32 %r4, %r1;\n  lg2.approx.f32 %r5, %r1;\n  mov.b64 %rd4, {%r4, %r5};", {f32(3.0f), f32(0.0f)});
  CHECK(d == std::vector<uint64_t>{f32(8.0f) | f32(1.5849625f) << 32, f32(1.0f) | f32(-inf) << 32});
  d = eval("sin.approx.f32 %r4, %r1;\n  cos.approx.f32 %r5, %r1;\n  mov.b64 %rd4, {%r4, %r5};", {f32(0.5f)});
  CHECK(d == std::vector<uint64_t>{f32(static_cast<float>(std::sin(0.5))) | f32(static_cast<float>(std::cos(0.5))) << 32});
  d = eval("rsqrt.approx.f32 %r4, %r1;\n  cvt.u64.u32 %rd4, %r4;", {f32(4.0f)});
  CHECK(d == std::vector<uint64_t>{f32(0.5f)});
}

// ---- packed halves ---------------------------------------------------------------------------------

namespace {

// Edge values of f16 and bf16: zeros, ±1 and 1 + ulp, a value whose sum with 1 is a tie, the smallest
// and largest subnormals and the smallest normal, the largest finite, infinities, quiet and signaling
// NaNs of either sign, and some ordinary values.
const std::vector<uint64_t> kHalfEdges = {0x0000, 0x8000, 0x3c00, 0xbc00, 0x3c01, 0x1000, 0x0001, 0x8001, 0x03ff, 0x0400, 0x7bff,
                                          0xfbff, 0x7c00, 0xfc00, 0x7e00, 0x7c01, 0xfe00, 0x3555, 0x4900, 0x0200, 0xc000, 0x5bff};
const std::vector<uint64_t> kBf16Edges = {0x0000, 0x8000, 0x3f80, 0xbf80, 0x3f81, 0x3b80, 0x0001, 0x8001, 0x007f, 0x0080, 0x7f7f,
                                          0xff7f, 0x7f80, 0xff80, 0x7fc0, 0x7f81, 0xffc0, 0x3eab, 0x4120, 0xc000, 0x4b80, 0x3c00};

// Operands for every pair of edge values in the low halves (a, b), and a shuffled pair in the high ones.
struct PackedInputs {
  std::vector<uint64_t> a, b, c;
};
PackedInputs packed_inputs(const std::vector<uint64_t>& e) {
  PackedInputs in;
  const size_t n = e.size();
  for (size_t i = 0; i < n * n; ++i) {
    in.a.push_back(e[i % n] | e[(i * 7 + 3) % n] << 16);
    in.b.push_back(e[i / n] | e[(i * 5 + i / n) % n] << 16);
    in.c.push_back(e[(i * 13 + 1) % n] | e[(i * 11 + 5) % n] << 16);
  }
  return in;
}
std::vector<uint64_t> halves(const std::vector<uint64_t>& v, int shift) {
  std::vector<uint64_t> r;
  for (uint64_t x : v) r.push_back(x >> shift & 0xffff);
  return r;
}

// `op` (e.g. "fma.rn.relu") on .f16x2 (or .bf16x2) gives, in each half, what it gives on .f16 (.bf16).
void packed_matches_scalar(const std::string& op, int nsrc, bool bf) {
  CAPTURE(op);
  CAPTURE(bf);
  const std::string ty = bf ? "bf16" : "f16";
  std::string rs = "%r1", hs = "%h1";
  for (int i = 2; i <= nsrc; ++i) rs += ", %r" + std::to_string(i), hs += ", %h" + std::to_string(i);
  const PackedInputs in = packed_inputs(bf ? kBf16Edges : kHalfEdges);
  const auto d = eval(op + "." + ty + "x2 %r4, " + rs + ";\n  cvt.u64.u32 %rd4, %r4;", in.a, in.b, in.c);
  const std::string scalar = op + "." + ty + " %h4, " + hs + ";\n  cvt.u64.u16 %rd4, %h4;";
  const auto lo = eval(scalar, halves(in.a, 0), halves(in.b, 0), halves(in.c, 0));
  const auto hi = eval(scalar, halves(in.a, 16), halves(in.b, 16), halves(in.c, 16));
  int bad = 0;
  for (size_t i = 0; i < d.size(); ++i)
    if (d[i] != (lo[i] | hi[i] << 16) && ++bad < 4)
      FAIL_CHECK("lane " << i << ": a 0x" << std::hex << in.a[i] << " b 0x" << in.b[i] << " c 0x" << in.c[i] << ": packed 0x" << d[i] << ", scalar 0x"
                         << (lo[i] | hi[i] << 16));
  CHECK(bad == 0);
}

// The correctly rounded f16/bf16 encoding of a double (round to nearest even), with NVIDIA's NaN.
uint64_t rounded(double v, bool bf) {
  if (std::isnan(v)) return 0x7fff;
  return ir::float_to_bits(v, bf ? ir::dtypes::bfloat16 : ir::dtypes::half);
}

}  // namespace

TEST_CASE("PTX instructions: packed f16x2 and bf16x2 arithmetic is the scalar instruction on each half") {
  for (const char* op : {"add",
                         "add.rn",
                         "add.rn.ftz",
                         "add.rn.sat",
                         "add.ftz.sat",
                         "sub.rn",
                         "sub.rn.ftz.sat",
                         "mul.rn",
                         "mul.rn.ftz",
                         "mul.rn.sat",
                         "neg",
                         "neg.ftz",
                         "abs",
                         "abs.ftz",
                         "min",
                         "min.ftz",
                         "min.NaN",
                         "min.xorsign.abs",
                         "min.ftz.NaN.xorsign.abs",
                         "max",
                         "max.ftz",
                         "max.NaN",
                         "max.xorsign.abs",
                         "max.ftz.NaN.xorsign.abs",
                         "fma.rn",
                         "fma.rn.ftz",
                         "fma.rn.sat",
                         "fma.rn.ftz.sat",
                         "fma.rn.relu",
                         "fma.rn.ftz.relu",
                         "ex2.approx",
                         "tanh.approx"}) {
    const std::string o = op;
    const int n = o.starts_with("fma") ? 3 : (o.starts_with("neg") || o.starts_with("abs") || o.find("approx") != std::string::npos) ? 1 : 2;
    packed_matches_scalar(o, n, false);
  }
  for (const char* op : {"add.rn", "sub.rn", "mul.rn", "neg", "abs", "min", "min.NaN", "min.xorsign.abs", "max", "max.NaN", "max.NaN.xorsign.abs",
                         "fma.rn", "fma.rn.relu", "ex2.approx.ftz", "tanh.approx"}) {
    const std::string o = op;
    const int n = o.starts_with("fma") ? 3 : (o.starts_with("neg") || o.starts_with("abs") || o.find("approx") != std::string::npos) ? 1 : 2;
    packed_matches_scalar(o, n, true);
  }
}

TEST_CASE("PTX instructions: packed add, sub and mul round each half correctly (against exact arithmetic)") {
  for (bool bf : {false, true}) {
    CAPTURE(bf);
    const PackedInputs in = packed_inputs(bf ? kBf16Edges : kHalfEdges);
    const std::string ty = bf ? ".bf16x2" : ".f16x2";
    auto value = [&](uint64_t h) { return ir::float_from_bits(static_cast<uint32_t>(h & 0xffff), bf ? ir::dtypes::bfloat16 : ir::dtypes::half); };
    for (const char* op : {"add", "sub", "mul"}) {
      CAPTURE(op);
      // Sums and products of two halves are exact in double (bf16 sums round away only what is
      // below half an ulp of the larger operand), so one rounding of the double is the answer.
      const auto d = eval(std::string(op) + ".rn" + ty + " %r4, %r1, %r2;\n  cvt.u64.u32 %rd4, %r4;", in.a, in.b);
      int bad = 0;
      for (size_t i = 0; i < d.size(); ++i) {
        uint64_t want = 0;
        for (int s : {0, 16}) {
          const double x = value(in.a[i] >> s), y = value(in.b[i] >> s);
          const double r = op[0] == 'a' ? x + y : op[0] == 's' ? x - y : x * y;
          want |= rounded(r, bf) << s;
        }
        if (d[i] != want && ++bad < 4) FAIL_CHECK("a 0x" << std::hex << in.a[i] << " b 0x" << in.b[i] << ": 0x" << d[i] << ", want 0x" << want);
      }
      CHECK(bad == 0);
    }
  }
}

TEST_CASE("PTX instructions: packed halves at their edges — ties, overflow, NaN, -0, subnormals, sat, relu, xorsign") {
  auto one = [](const std::string& body, uint64_t a, uint64_t b = 0, uint64_t c = 0) {
    return eval(body + "\n  cvt.u64.u32 %rd4, %r4;", {a}, {b}, {c}).at(0);
  };
  // f16x2: 1 + 2^-11 is a tie (to even: 1); 65504 + 65504 overflows; (1 + 2^-10) + 2^-11 ties up to even.
  CHECK(one("add.rn.f16x2 %r4, %r1, %r2;", 0x7bff3c00, 0x7bff1000) == 0x7c003c00);
  CHECK(one("add.rn.f16x2 %r4, %r1, %r2;", 0x00003c01, 0x00001000) == 0x00003c02);
  // inf - inf is NVIDIA's canonical NaN; -0 - +0 is -0; x - x is +0.
  CHECK(one("sub.rn.f16x2 %r4, %r1, %r2;", 0x80007c00, 0x00007c00) == 0x80007fff);
  CHECK(one("sub.rn.f16x2 %r4, %r1, %r2;", 0x3c003555, 0x3c003555) == 0x00000000);
  // Subnormals: kept, or flushed to a zero of their sign with .ftz (inputs and results).
  CHECK(one("mul.rn.f16x2 %r4, %r1, %r2;", 0x80010001, 0x40004000) == 0x80020002);
  CHECK(one("mul.rn.ftz.f16x2 %r4, %r1, %r2;", 0x80010001, 0x40004000) == 0x80000000);
  CHECK(one("mul.rn.ftz.f16x2 %r4, %r1, %r2;", 0x04000400, 0x38003800) == 0x00000000);  // 2^-14 / 2: a subnormal result
  // .sat: [0, 1], NaN to +0.
  CHECK(one("mul.rn.sat.f16x2 %r4, %r1, %r2;", 0x42004200, 0x4200c200) == 0x3c000000);
  CHECK(one("add.sat.f16x2 %r4, %r1, %r2;", 0x7e003800, 0x00000000) == 0x00003800);
  // fma: one rounding ((1 + u)^2 - 1 = 2u + u^2 is a tie, to even); .relu: negatives to +0, NaN canonical.
  CHECK(one("fma.rn.f16x2 %r4, %r1, %r2, %r3;", 0x3c013c01, 0x3c013c01, 0xbc00bc00) == 0x18001800);
  CHECK(one("fma.rn.relu.f16x2 %r4, %r1, %r2, %r3;", 0x7c003c00, 0x0000c000, 0x00000000) == 0x7fff0000);
  // neg/abs only touch the sign bit (NaNs too); .ftz flushes first.
  CHECK(one("neg.f16x2 %r4, %r1;", 0x80007e00) == 0x0000fe00);
  CHECK(one("abs.f16x2 %r4, %r1;", 0xfc00fe01) == 0x7c007e01);
  CHECK(one("neg.ftz.f16x2 %r4, %r1;", 0x80010001) == 0x00008000);
  // min/max: a NaN loses (with .NaN wins, canonically), two NaNs give the canonical NaN, -0 < +0.
  CHECK(one("min.f16x2 %r4, %r1, %r2;", 0x00007e00, 0x80003c00) == 0x80003c00);
  CHECK(one("max.f16x2 %r4, %r1, %r2;", 0x7e007e00, 0x7c010003) == 0x7fff0003);
  CHECK(one("max.NaN.f16x2 %r4, %r1, %r2;", 0x3c007e00, 0x40003c00) == 0x40007fff);
  // .xorsign.abs: the smaller (larger) magnitude with the XOR of the signs.
  CHECK(one("min.xorsign.abs.f16x2 %r4, %r1, %r2;", 0xc000c000, 0xc2004200) == 0x4000c000);
  CHECK(one("max.xorsign.abs.f16x2 %r4, %r1, %r2;", 0xc000c000, 0xc2004200) == 0x4200c200);
  // bf16x2: the same ties and overflow in bf16's precision.
  CHECK(one("add.rn.bf16x2 %r4, %r1, %r2;", 0x3f813f80, 0x3b803b80) == 0x3f823f80);
  CHECK(one("mul.rn.bf16x2 %r4, %r1, %r2;", 0x7f7fff80, 0x40000000) == 0x7f807fff);
  CHECK(one("fma.rn.bf16x2 %r4, %r1, %r2, %r3;", 0x3f803f80, 0x3f803f80, 0x3b803b81) == 0x3f803f81);
  CHECK(one("min.NaN.bf16x2 %r4, %r1, %r2;", 0x7fc03f80, 0x3f80bf80) == 0x7fffbf80);
  // ex2 on each half.
  CHECK(one("ex2.approx.f16x2 %r4, %r1;", 0x00003c00) == 0x3c004000);
}

TEST_CASE("PTX instructions: packed comparisons — setp p|q is the low and the high half, set packs a result per half") {
  auto preds = [](const std::string& setp, uint64_t a, uint64_t b, uint64_t c = 0) {
    return eval("setp.ne.s32 %p3, %r3, 0;\n  " + setp + "\n  selp.u64 %rd4, 1, 0, %p1;\n  selp.u64 %x8, 2, 0, %p2;\n  or.b64 %rd4, %rd4, %x8;", {a},
                {b}, {c})
        .at(0);
  };
  // Low halves 1 < 2 (p), high halves 2 < 1 false (q).
  CHECK(preds("setp.lt.f16x2 %p1|%p2, %r1, %r2;", 0x40003c00, 0x3c004000) == 1);
  CHECK(preds("setp.gt.f16x2 %p1|%p2, %r1, %r2;", 0x40003c00, 0x3c004000) == 2);
  // NaN: ordered false, unordered true; .ftz makes subnormals equal to zero.
  CHECK(preds("setp.eq.f16x2 %p1|%p2, %r1, %r2;", 0x7e003c00, 0x7e003c00) == 1);
  CHECK(preds("setp.equ.f16x2 %p1|%p2, %r1, %r2;", 0x7e003c00, 0x7e003c00) == 3);
  CHECK(preds("setp.nan.bf16x2 %p1|%p2, %r1, %r2;", 0x3f807fc0, 0x3f803f80) == 1);
  CHECK(preds("setp.eq.f16x2 %p1|%p2, %r1, %r2;", 0x00010001, 0x80000000) == 0);
  CHECK(preds("setp.eq.ftz.f16x2 %p1|%p2, %r1, %r2;", 0x00010001, 0x80000000) == 3);
  CHECK(preds("setp.lt.bf16x2 %p1|%p2, %r1, %r2;", 0xbf803f80, 0x3f80bf80) == 2);
  // Combined with a predicate: each half with c (here true, then false).
  CHECK(preds("setp.lt.and.f16x2 %p1|%p2, %r1, %r2, %p3;", 0x3c003c00, 0x40004000, 1) == 3);
  CHECK(preds("setp.lt.or.f16x2 %p1|%p2, %r1, %r2, %p3;", 0x40003c00, 0x3c004000, 0) == 1);
  CHECK(preds("setp.lt.xor.f16x2 %p1|%p2, %r1, %r2, !%p3;", 0x40003c00, 0x3c004000, 0) == 2);
  // Either destination may be the sink.
  CHECK(preds("setp.lt.f16x2 %p1|_, %r1, %r2;", 0x40003c00, 0x3c004000) == 1);
  CHECK(preds("setp.lt.f16x2 _|%p2, %r1, %r2;", 0x3c004000, 0x40003c00) == 2);
  // set: 1.0 per half in the packed float type, 0xffff per half for .u32/.s32.
  auto one = [](const std::string& body, uint64_t a, uint64_t b) { return eval(body + "\n  cvt.u64.u32 %rd4, %r4;", {a}, {b}).at(0); };
  CHECK(one("set.lt.f16x2.f16x2 %r4, %r1, %r2;", 0x40003c00, 0x3c004000) == 0x00003c00);
  CHECK(one("set.lt.u32.f16x2 %r4, %r1, %r2;", 0x3c004000, 0x40003c00) == 0xffff0000);
  CHECK(one("set.ge.bf16x2.bf16x2 %r4, %r1, %r2;", 0x3f803f80, 0x3f80bf80) == 0x3f803f80);
  CHECK(one("set.num.s32.bf16x2 %r4, %r1, %r2;", 0x7fc03f80, 0x3f803f80) == 0x0000ffff);
  // Scalar half comparisons into half and 16-bit results.
  CHECK(one("set.lt.f16.f16 %h4, %h1, %h2;\n  cvt.u32.u16 %r4, %h4;", 0x3c00, 0x4000) == 0x3c00);
  CHECK(one("set.lt.bf16.s32 %h4, %r1, %r2;\n  cvt.u32.u16 %r4, %h4;", 1, 2) == 0x3f80);
  CHECK(one("set.lt.u16.f16 %h4, %h1, %h2;\n  cvt.u32.u16 %r4, %h4;", 0x3c00, 0x4000) == 0xffff);
  // What LLVM writes around them: halves unpacked, selected, repacked.
  CHECK(one("setp.lt.f16x2 %p1|%p2, %r1, %r2;\n  mov.b32 {%h1, %h2}, %r1;\n  mov.b32 {%h3, %h4}, %r2;\n  selp.b16 %h5, %h1, %h3, %p1;\n"
            "  selp.b16 %h6, %h2, %h4, %p2;\n  mov.b32 %r4, {%h5, %h6};",
            0x40003c00, 0x3c004000) == 0x3c003c00);
  // Older LLVMs extract a half in a block with a register of its own: each block's is its own, and
  // hides an outer one of the same name until the block ends.
  CHECK(one("{ .reg .b16 tmp; mov.b32 {tmp, %h5}, %r1; }\n  { .reg .b16 tmp; mov.b32 {%h6, tmp}, %r2; }\n  mov.b32 %r4, {%h6, %h5};", 0x12345678,
            0x9abcdef0) == 0x1234def0);
  CHECK(one("mov.b32 %r4, 5;\n  { .reg .b32 %r4; mov.b32 %r4, 7; }", 0, 0) == 5);
  CHECK(parse_error(kHead + ".visible .entry k()\n{\n  { .reg .b32 %t; .reg .b32 %t; }\n}\n").find("PTX line 7: register %t declared twice") == 0);
  // The forms that do not exist are refused.
  CHECK(parse_error(kHead + ".visible .entry k()\n{\n  .reg .b32 %r<3>;\n  .reg .pred %p<2>;\n  setp.lt.f16x2 %p1, %r1, %r2;\n}\n")
            .find("two predicates") != std::string::npos);
  CHECK(parse_error(kHead + ".visible .entry k()\n{\n  .reg .b32 %r<3>;\n  set.lt.f32.f16x2 %r1, %r1, %r2;\n}\n").find("not implemented") !=
        std::string::npos);
  CHECK(parse_error(kHead + ".visible .entry k()\n{\n  .reg .b32 %r<3>;\n  min.xorsign.f16x2 %r1, %r1, %r2;\n}\n").find("go together") !=
        std::string::npos);
}

TEST_CASE("PTX instructions: warp shuffles, votes and atomics") {
  std::vector<uint64_t> lanes(32);
  for (uint64_t i = 0; i < 32; ++i) lanes[i] = i * 10;
  auto d = eval("shfl.sync.down.b32 %r4, %r1, 1, 31, -1;\n  cvt.u64.u32 %rd4, %r4;", lanes);
  for (uint64_t i = 0; i < 32; ++i) CHECK(d[i] == (i < 31 ? (i + 1) * 10 : 310));
  d = eval("shfl.sync.bfly.b32 %r4, %r1, 3, 31, -1;\n  cvt.u64.u32 %rd4, %r4;", lanes);
  for (uint64_t i = 0; i < 32; ++i) CHECK(d[i] == (i ^ 3) * 10);
  d = eval("shfl.sync.idx.b32 %r4, %r1, 5, 31, -1;\n  cvt.u64.u32 %rd4, %r4;", lanes);
  for (uint64_t i = 0; i < 32; ++i) CHECK(d[i] == 50);
  d = eval(
      "setp.gt.u32 %p1, %r1, 100;\n  vote.sync.ballot.b32 %r4, %p1, -1;\n  vote.sync.any.pred %p2, %p1, -1;\n  vote.sync.all.pred %p3, %p1, -1;\n"
      "  selp.u32 %r5, 1, 0, %p2;\n  selp.u32 %r6, 2, 0, %p3;\n  or.b32 %r5, %r5, %r6;\n  mov.b64 %rd4, {%r4, %r5};",
      lanes);
  for (uint64_t i = 0; i < 32; ++i) CHECK(d[i] == (0xfffff800ull | 1ull << 32));  // lanes 11-31; any, not all
  // A named barrier with a thread count: warp 0 produces and arrives, warp 1 waits and consumes.
  {
    Text t;
    std::vector<uint32_t> out(32, 0);
    uint64_t po = t.gpu.map(out.data(), 128);
    prepare(t, kHead + R"(.visible .entry pc(.param .u64 o)
{
  .reg .pred %p<2>;
  .reg .b32 %r<6>;
  .reg .b64 %rd<6>;
  .shared .align 4 .b8 box[128];
  ld.param.u64 %rd1, [o];
  mov.u32 %r1, %tid.x;
  and.b32 %r2, %r1, 31;
  mul.wide.u32 %rd2, %r2, 4;
  mov.u64 %rd3, box;
  add.s64 %rd3, %rd3, %rd2;
  setp.ge.u32 %p1, %r1, 32;
  @%p1 bra $CONSUME;
  mul.lo.s32 %r3, %r1, 5;
  st.shared.u32 [%rd3], %r3;
  bar.arrive 1, 64;
  ret;
$CONSUME:
  bar.sync 1, 64;
  ld.shared.u32 %r4, [%rd3];
  add.s64 %rd4, %rd1, %rd2;
  st.global.u32 [%rd4], %r4;
  ret;
}
)",
            {po}, {1, 1, 1}, {64, 1, 1});
    nv::PtxRunResult r = run(t);
    if (r.fault) FAIL(r.fault->message);
    for (uint32_t i = 0; i < 32; ++i) CHECK(out[i] == i * 5);
  }
  // Atomics: every lane adds its value to one word; each gets a distinct old value.
  Text t;
  std::vector<uint32_t> counter(1, 0), olds(64, 0);
  uint64_t pc = t.gpu.map(counter.data(), 4), po = t.gpu.map(olds.data(), 256);
  prepare(t, kHead + R"(.visible .entry at(.param .u64 c, .param .u64 o)
{
  .reg .b32 %r<4>;
  .reg .b64 %rd<6>;
  ld.param.u64 %rd1, [c];
  ld.param.u64 %rd2, [o];
  mov.u32 %r1, %tid.x;
  atom.global.add.u32 %r2, [%rd1], 1;
  mul.wide.u32 %rd3, %r1, 4;
  add.s64 %rd4, %rd2, %rd3;
  st.global.u32 [%rd4], %r2;
  bar.sync 0;
  red.global.add.u32 [%rd1], 1000;
  ret;
}
)",
          {pc, po}, {1, 1, 1}, {64, 1, 1});
  nv::PtxRunResult r = run(t);
  if (r.fault) FAIL(r.fault->message);
  CHECK(counter[0] == 64 + 64 * 1000);
  std::set<uint32_t> seen(olds.begin(), olds.end());
  CHECK(seen.size() == 64);
  CHECK(*seen.rbegin() == 63);
}

namespace {

// Runs `instr` {d0..d3}, {a0..a3}, {b0, b1}, {c0..c3} on one warp: lane l's A, B and C registers
// from in[12 l ...] (A at 0, B at 16, C at 32 bytes), its D to out[4 l ...]; `guard` runs before it.
nv::PtxRunResult run_mma(const std::string& instr, const std::vector<uint32_t>& in, std::vector<uint32_t>& out, const std::string& guard = "") {
  std::string k = R"(.visible .entry mm(.param .u64 i, .param .u64 o)
{
  .reg .pred %p<2>;
  .reg .b32 %r<20>;
  .reg .f32 %f<10>;
  .reg .b64 %rd<6>;
  ld.param.u64 %rd1, [i];
  ld.param.u64 %rd2, [o];
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd3, %r1, 48;
  add.s64 %rd3, %rd1, %rd3;
  ld.global.v4.u32 {%r2, %r3, %r4, %r5}, [%rd3];
  ld.global.v2.u32 {%r6, %r7}, [%rd3+16];
  ld.global.v4.f32 {%f1, %f2, %f3, %f4}, [%rd3+32];
)" + guard + "\n  " +
                  instr +
                  R"( {%f5, %f6, %f7, %f8}, {%r2, %r3, %r4, %r5}, {%r6, %r7}, {%f1, %f2, %f3, %f4};
  mul.wide.u32 %rd4, %r1, 16;
  add.s64 %rd4, %rd2, %rd4;
  st.global.v4.f32 [%rd4], {%f5, %f6, %f7, %f8};
$END:
  ret;
}
)";
  Text t;
  uint64_t pi = t.gpu.map(const_cast<uint32_t*>(in.data()), in.size() * 4, false), po = t.gpu.map(out.data(), out.size() * 4);
  prepare(t, kHead + k, {pi, po}, {1, 1, 1}, {32, 1, 1});
  return run(t);
}

}  // namespace

TEST_CASE("PTX instructions: mma.sync m16n8k16 (f16, bf16 -> f32) in the PTX ISA's fragment layout") {
  // PTX ISA §9.7.14.5.8, with g = lane / 4 and t = lane % 4: A (16 x 16) register r holds elements
  // (g + 8 * (r % 2), 2t + 8 * (r / 2) + h) for h = 0 (low half), 1; B (16 x 8) register r holds
  // (2t + 8r + h, g); C and D element r is (g + 8 * (r / 2), 2t + r % 2).
  for (bool bf16 : {false, true}) {
    CAPTURE(bf16);
    std::mt19937 rng(bf16 ? 3 : 4);
    std::uniform_real_distribution<float> u(-2.0f, 2.0f);
    auto to16 = [&](float f) -> uint32_t { return bf16 ? std::bit_cast<uint32_t>(f) >> 16 : std::bit_cast<uint16_t>(static_cast<_Float16>(f)); };
    auto from16 = [&](uint32_t h) {
      return bf16 ? std::bit_cast<float>(h << 16) : static_cast<float>(std::bit_cast<_Float16>(static_cast<uint16_t>(h)));
    };
    uint32_t a[16][16], b[16][8];
    float c[16][8];
    for (int i = 0; i < 16; ++i)
      for (int j = 0; j < 16; ++j) a[i][j] = to16(u(rng));
    for (int i = 0; i < 16; ++i)
      for (int j = 0; j < 8; ++j) b[i][j] = to16(u(rng)), c[i][j] = u(rng);
    std::vector<uint32_t> in(32 * 12), out(32 * 4, 0);  // per lane: A at 0, B at 16, C at 32 bytes
    for (int l = 0; l < 32; ++l) {
      int g = l / 4, t = l % 4;
      for (int r = 0; r < 4; ++r) in[l * 12 + r] = a[g + 8 * (r % 2)][2 * t + 8 * (r / 2)] | a[g + 8 * (r % 2)][2 * t + 8 * (r / 2) + 1] << 16;
      for (int r = 0; r < 2; ++r) in[l * 12 + 4 + r] = b[2 * t + 8 * r][g] | b[2 * t + 8 * r + 1][g] << 16;
      for (int r = 0; r < 4; ++r) in[l * 12 + 8 + r] = std::bit_cast<uint32_t>(c[g + 8 * (r / 2)][2 * t + r % 2]);
    }
    std::string instr = bf16 ? "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32" : "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32";
    nv::PtxRunResult r = run_mma(instr, in, out);
    if (r.fault) FAIL(r.fault->message);
    int wrong = 0;
    for (int l = 0; l < 32; ++l)
      for (int e = 0; e < 4; ++e) {
        int row = l / 4 + 8 * (e / 2), col = 2 * (l % 4) + e % 2;
        double want = c[row][col];
        for (int k = 0; k < 16; ++k) want += double{from16(a[row][k])} * double{from16(b[k][col])};
        wrong += std::bit_cast<float>(out[l * 4 + e]) != static_cast<float>(want);
      }
    CHECK(wrong == 0);
    // mma.sync is warp-wide: lanes that branched away leave it incomplete, which is a fault.
    r = run_mma(instr, in, out, "  setp.ge.u32 %p1, %r1, 16;\n  @%p1 bra $END;");
    REQUIRE(r.fault);
    CHECK(r.fault->message.find("32 lanes") != std::string::npos);
  }
}

TEST_CASE("PTX instructions: mma.sync m16n8k8 tf32 reads 19 bits of each float in the PTX ISA's fragment layout") {
  // A (16 x 8): a0 at (g, t), a1 at (g + 8, t), a2 and a3 four columns on; B (8 x 8): b0 at (t, g), b1
  // at (t + 4, g); C and D as for m16n8k16. The low 13 mantissa bits of A and B are not read.
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  float a[16][8], b[8][8], c[16][8];
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 8; ++j) a[i][j] = u(rng), c[i][j] = u(rng);
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 8; ++j) b[i][j] = u(rng);
  std::vector<uint32_t> in(32 * 12), out(32 * 4, 0);
  for (int l = 0; l < 32; ++l) {
    int g = l / 4, t = l % 4;
    for (int r = 0; r < 4; ++r) in[l * 12 + r] = std::bit_cast<uint32_t>(a[g + 8 * (r % 2)][t + 4 * (r / 2)]);
    for (int r = 0; r < 2; ++r) in[l * 12 + 4 + r] = std::bit_cast<uint32_t>(b[t + 4 * r][g]);
    for (int r = 0; r < 4; ++r) in[l * 12 + 8 + r] = std::bit_cast<uint32_t>(c[g + 8 * (r / 2)][2 * t + r % 2]);
  }
  nv::PtxRunResult r = run_mma("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32", in, out);
  if (r.fault) FAIL(r.fault->message);
  auto tf32 = [](float f) { return double{std::bit_cast<float>(std::bit_cast<uint32_t>(f) & 0xffffe000u)}; };
  int wrong = 0;
  for (int l = 0; l < 32; ++l)
    for (int e = 0; e < 4; ++e) {
      int row = l / 4 + 8 * (e / 2), col = 2 * (l % 4) + e % 2;
      double want = c[row][col];
      for (int k = 0; k < 8; ++k) want += tf32(a[row][k]) * tf32(b[k][col]);
      wrong += std::bit_cast<float>(out[l * 4 + e]) != static_cast<float>(want);
    }
  CHECK(wrong == 0);
}
