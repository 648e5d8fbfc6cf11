// Every suite kernel for every GPU target: it compiles, and the launch facts read back from the
// binary (AMD kernel descriptor, cubin .nv.info) agree with what the kernel needs. NVIDIA cubins need
// ptxas; without it those checks are skipped with a message.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <random>

#include "codegen/builtin_kernels.h"
#include "codegen/cache.h"
#include "codegen/code_object.h"
#include "codegen/llvm/ptxas.h"
#include "run.h"

using namespace ugpu;
using namespace ugpu::test;
using namespace ugpu::codegen;

namespace {
int64_t explicit_kernarg_bytes(const LoweredKernel& k) {
  int64_t n = 0;
  for (const Param& p : k.params) {
    int64_t sz = p.kind == Param::Kind::Buffer ? 8 : p.dtype.itemsize();
    n = (n + sz - 1) / sz * sz + sz;
  }
  return n;
}
// Compiles every built-in kernel (its first run) for every target of `arch` and hands each result to `check`.
template <class F>
void each_compiled(Arch arch, F check) {
  for (const Target& t : all_targets()) {
    if (t.arch != arch) continue;
    for (const BuiltinKernel& e : builtin_kernels()) {
      CAPTURE(t.name);
      CAPTURE(e.name);
      CompileOptions o;
      o.name = e.name;
      check(t, e, compile(e.parse(), t, o));
    }
  }
}
}  // namespace

TEST_CASE("every suite kernel compiles for every AMDGPU target, with a descriptor that fits the kernel") {
  each_compiled(Arch::AMDGPU, [](const Target& t, const BuiltinKernel&, const std::shared_ptr<const CompiledKernel>& ck) {
    REQUIRE(ck->amd);
    const AmdKernelInfo& a = *ck->amd;
    CHECK(a.lds_bytes() == ck->kernel.shared_bytes);
    CHECK(a.kernarg_bytes() >= explicit_kernarg_bytes(ck->kernel));
    CHECK(a.wave32 == (t.wave_size == 32));
    CHECK(a.entry_offset % 256 == 0);
    CHECK(std::find(a.user_sgprs.begin(), a.user_sgprs.end(), std::string("kernarg_segment_ptr")) != a.user_sgprs.end());
    // The workgroup ids the launch uses are the ones the descriptor enables.
    for (int d = 0; d < 3; ++d) {
      bool used = false;
      for (const ir::UOp& u : ck->kernel.sink.toposort())
        used = used || (u.op() == ir::Op::SPECIAL && u.arg_as<std::string>() == "gidx" + std::to_string(d));
      hw::amd::Field f = d == 0 ? hw::amd::rsrc2::kWorkgroupIdX : d == 1 ? hw::amd::rsrc2::kWorkgroupIdY : hw::amd::rsrc2::kWorkgroupIdZ;
      if (used) CHECK(f.get(a.kd.compute_pgm_rsrc2) == 1);
    }
    std::string isa = disassembly(*ck);
    CHECK(isa.find("s_endpgm") != std::string::npos);
    CHECK(isa.find("<unknown>") == std::string::npos);
  });
}

TEST_CASE("every suite kernel compiles for every NVIDIA target; ptxas assembles it when installed") {
  auto ptxas = find_ptxas();
  if (!ptxas) MESSAGE("skipped cubin checks: ptxas not found (set UGPU_PTXAS or install the CUDA toolkit)");
  each_compiled(Arch::NVPTX, [&](const Target& t, const BuiltinKernel& e, const std::shared_ptr<const CompiledKernel>& ck) {
    CHECK(ck->ptx.find(".entry " + e.name) != std::string::npos);
    CHECK(ck->ptx.find(".target " + std::string(t.name)) != std::string::npos);
    if (!ptxas) {
      CHECK(ck->binary.empty());
      CHECK(ck->note.find("ptxas not found") != std::string::npos);
      return;
    }
    REQUIRE(ck->cubin);
    const CubinInfo& c = *ck->cubin;
    CHECK(c.param_size == explicit_kernarg_bytes(ck->kernel));
    CHECK(c.registers > 0);
    CHECK(c.registers <= 255);
    CHECK(c.shared_bytes >= ck->kernel.shared_bytes);
    CHECK(c.text_size > 0);
  });
}

TEST_CASE("x86 refuses a barrier it cannot split into loops over the work-items; GPU limits are checked with clear errors") {
  // The host runs a workgroup's work-items in turn, the work before a barrier as one loop: an END must close it.
  CHECK_THROWS_WITH(compile(kernel(R"(out = DEFINE_GLOBAL:float* {0}
tmp = DEFINE_LOCAL:float[local]* {(0, 16)}
l = RANGE(16) {0, LOCAL}
bar = BARRIER(STORE(INDEX:float[local]*(tmp, l), 1.0))
SINK(END(STORE(INDEX:float*(out, l), LOAD:float(INDEX:float[local]*(AFTER(tmp, bar), 15 - l))), l))
)"),
                            x86()),
                    doctest::Contains("BARRIER(x) needs x to be an END closing the LOCAL ranges"));
  // A value loaded before the barrier from memory the kernel stores to, used after it: computing it
  // again after the barrier would read the new value (here the work-item's own store), so x86 refuses;
  // a GPU keeps the loaded value in a register and compiles it.
  auto reload = kernel(R"(out = DEFINE_GLOBAL:float* {0}
tmp = DEFINE_LOCAL:float[local]* {(0, 16)}
l = RANGE(16) {0, LOCAL}
v = LOAD:float(INDEX:float*(out, l))
bar = BARRIER(END(STORE(INDEX:float[local]*(tmp, l), v), l))
SINK(END(STORE(INDEX:float*(out, l), v + LOAD:float(INDEX:float[local]*(AFTER(tmp, bar), 15 - l))), l))
)");
  CHECK_THROWS_WITH(compile(reload, x86()), doctest::Contains("reads or writes memory the kernel stores to"));
  CHECK_NOTHROW(compile(reload, find_target("gfx1100")));
  auto big_local = kernel(R"(out = DEFINE_GLOBAL:float* {0}
l = RANGE(2048) {0, LOCAL}
SINK(END(STORE(INDEX:float*(out, l), 1.0), l))
)");
  CHECK_THROWS_WITH(compile(big_local, find_target("sm_90")), doctest::Contains("workgroup is too large"));
  // Three axes of 2^31: their product (2^93) wraps to 0 in int64; the grid check must not see a 0.
  auto huge = kernel(R"(out = DEFINE_GLOBAL:float* {0}
a = RANGE(2147483648) {0, GLOBAL}
b = RANGE(2147483648) {1, GLOBAL}
c = RANGE(2147483648) {2, GLOBAL}
SINK(END(STORE(INDEX:float*(out, 0), 1.0), a, b, c))
)");
  CHECK_THROWS_WITH(compile(huge, find_target("sm_90")), doctest::Contains("the grid is too large"));
  // gfx1100 counts 2^32-1 work-items per dimension: the three axes fit (x cut into 128-item groups),
  // and the launch keeps every size, none wrapped.
  LaunchDims amd = launch_dims(compile(huge, find_target("gfx1100"))->kernel, {});
  CHECK(amd.global[0] * amd.local[0] == int64_t{1} << 31);
  CHECK(amd.global[1] == int64_t{1} << 31);
  CHECK(amd.global[2] == int64_t{1} << 31);
  auto shared = kernel(R"(out = DEFINE_GLOBAL:float* {0}
tmp = DEFINE_LOCAL:float[local]* {(0, 20000)}
l = RANGE(64) {0, LOCAL}
SINK(END(STORE(INDEX:float*(out, l), LOAD:float(INDEX:float[local]*(tmp, l))), l))
)");
  CHECK_THROWS_WITH(compile(shared, find_target("sm_90")), doctest::Contains("bytes of workgroup memory"));
  CHECK_THROWS_WITH(find_target("gfx9000"), doctest::Contains("the targets are x86, gfx1100"));
}

TEST_CASE("launch geometry: globals reversed onto the grid, merged past three, flattened past the limits") {
  const Target& nv = find_target("sm_90");
  auto four = kernel(R"(out = DEFINE_GLOBAL:float* {0}
a = RANGE(3) {0, GLOBAL}
b = RANGE(5) {1, GLOBAL}
c = RANGE(7) {2, GLOBAL}
d = RANGE(64) {3, GLOBAL}
SINK(END(STORE(INDEX:float*(out, ((a*5 + b)*7 + c)*64 + d), 1.0), a, b, c, d))
)");
  auto ck = compile(four, nv);
  LaunchDims dims = launch_dims(ck->kernel, {});
  CHECK(dims.local[0] == 64);  // the innermost axis, cut into workgroups
  CHECK(dims.global[0] == 1);
  CHECK(dims.global[1] == 7);
  CHECK(dims.global[2] == 15);  // a and b share z
  auto tall = kernel(R"(out = DEFINE_GLOBAL:float* {0}
a = RANGE(100000) {0, GLOBAL}
b = RANGE(3) {1, GLOBAL}
SINK(END(STORE(INDEX:float*(out, a*3 + b), 1.0), a, b))
)");
  ck = compile(tall, nv);
  dims = launch_dims(ck->kernel, {});
  CHECK(dims.global[0] * dims.local[0] == 300000);  // 100000 does not fit y (65535): all in x
  CHECK(dims.global[1] == 1);
  auto var = kernel(R"(out = DEFINE_GLOBAL:float* {0}
n = DEFINE_VAR {"n", 1, 4096}
a = RANGE(n) {0, GLOBAL}
SINK(END(STORE(INDEX:float*(out, a), 1.0), a))
)");
  ck = compile(var, nv);
  CHECK(launch_dims(ck->kernel, {1000}).global[0] == 1000);
  CHECK_THROWS_WITH(launch_dims(ck->kernel, {5000}), doctest::Contains("outside its declared bounds"));
}

TEST_CASE("compile cache: memory hits, disk round trip, damaged files ignored") {
  CacheEntry e{{"binary", std::string("\0\1\2", 3)}, {"ptx", "text"}, {"note", ""}};
  std::string enc = encode_cache_entry(e);
  CHECK(decode_cache_entry(enc) == e);
  for (size_t cut : {size_t{0}, size_t{5}, enc.size() / 2, enc.size() - 1}) CHECK(!decode_cache_entry(enc.substr(0, cut)));
  std::string flipped = enc;
  flipped[20] ^= 1;
  CHECK(!decode_cache_entry(flipped));

  std::string dir = "/tmp/ugpu-test-cache-" + std::to_string(getpid());
  DiskCache disk(dir);
  CHECK(!disk.get("ab12"));
  disk.put("ab12", e);
  CHECK(disk.get("ab12") == e);
  std::filesystem::remove_all(dir);
  DiskCache unusable("/proc/ugpu-cannot-create-this");  // put warns once and carries on
  unusable.put("ab12", e);
  CHECK(!unusable.get("ab12"));

  // Hostile caches (issue 18): an entry copied under another key is another kernel's code; a folder
  // others can write is not used; a FIFO or /dev/zero in an entry's place is a miss, not a hang.
  DiskCache mine(dir);
  mine.put("ab12", e);
  REQUIRE(mine.get("ab12") == e);
  std::filesystem::create_directories(dir + "/cd");
  std::filesystem::permissions(dir + "/cd", std::filesystem::perms::owner_all);
  std::filesystem::copy_file(dir + "/ab/ab12.bin", dir + "/cd/cd34.bin");
  CHECK(!mine.get("cd34"));
  REQUIRE(::mkfifo((dir + "/cd/cdff.bin").c_str(), 0600) == 0);
  CHECK(!mine.get("cdff"));  // returns at once
  std::filesystem::create_symlink("/dev/zero", dir + "/cd/cd00.bin");
  CHECK(!mine.get("cd00"));
  std::filesystem::permissions(dir, std::filesystem::perms::others_write, std::filesystem::perm_options::add);
  CHECK(!mine.get("ab12"));  // the same valid entry, in a folder anyone can write
  std::filesystem::remove_all(dir);

  clear_memory_cache();
  auto k = builtin_kernel("matmul").parse();
  CacheStats before = cache_stats();
  auto a = compile(k, x86());
  auto b = compile(k, x86());
  CHECK(a == b);
  CHECK(cache_stats().memory_hits == before.memory_hits + 1);
}

TEST_CASE("compile cache: processes writing and reading the same keys at once never see a torn file") {
  // Four processes each write their own 256 KiB entries under three shared keys and read them back
  // in a tight loop; every read must be absent or exactly one writer's entry.
  std::string dir = "/tmp/ugpu-test-cache-race-" + std::to_string(getpid());
  auto entry_of = [](int writer, int round) {
    return CacheEntry{{"binary", std::string(256 * 1024, static_cast<char>('a' + writer))}, {"round", std::to_string(round)}};
  };
  std::vector<pid_t> kids;
  for (int w = 0; w < 4; ++w) {
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      DiskCache disk(dir);
      int bad = 0, hits = 0;
      for (int round = 0; round < 60; ++round) {
        std::string key = "k" + std::to_string(round % 3);
        disk.put(key, entry_of(w, round));
        auto got = disk.get(key);
        if (!got) continue;
        ++hits;
        const std::string& bin = got->at("binary");
        bad += bin.size() != 256 * 1024 || bin.find_first_not_of(bin[0]) != std::string::npos || bin[0] < 'a' || bin[0] > 'd';
      }
      _exit(bad || hits == 0 ? 1 : 0);
    }
    kids.push_back(pid);
  }
  int failed = 0;
  for (pid_t pid : kids) {
    int status = 0;
    waitpid(pid, &status, 0);
    failed += !WIFEXITED(status) || WEXITSTATUS(status) != 0;
  }
  CHECK(failed == 0);
  size_t stray = 0;  // no temporary files are left behind
  for (const auto& f : std::filesystem::recursive_directory_iterator(dir)) stray += f.is_regular_file() && f.path().extension() != ".bin";
  CHECK(stray == 0);
  std::filesystem::remove_all(dir);
}
