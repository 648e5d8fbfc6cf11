// The binary readers take untrusted input: truncated and corrupted objects and cubins must give an
// ElfError (or a valid result), never a crash or an out-of-bounds read (CI runs this under ASan).
#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>

#include "codegen/builtin_kernels.h"
#include "codegen/code_object.h"
#include "codegen/elf.h"
#include "codegen/llvm/host.h"
#include "run.h"

using namespace ugpu;
using namespace ugpu::test;
using namespace ugpu::codegen;

namespace {

std::vector<uint8_t> fixture(const std::string& name) {
  const char* root = std::getenv("UGPU_SOURCE_ROOT");
  std::ifstream f(std::string(root ? root : ".") + "/tests/codegen/data/" + name, std::ios::binary);
  REQUIRE(f);
  std::stringstream s;
  s << f.rdbuf();
  std::string b = s.str();
  return {b.begin(), b.end()};
}

// Calls read(bytes) on truncations and random corruptions of `good`; counts outcomes.
template <class F>
void fuzz(const std::vector<uint8_t>& good, F read, uint32_t seed) {
  std::mt19937 rng(seed);
  int ok = 0, rejected = 0;
  auto attempt = [&](const std::vector<uint8_t>& b) {
    try {
      read(b);
      ++ok;
    } catch (const Error&) { ++rejected; }
  };
  for (size_t len = 0; len < good.size(); len += std::max<size_t>(1, good.size() / 300))
    attempt({good.begin(), good.begin() + static_cast<long>(len)});
  for (int i = 0; i < 3000; ++i) {
    std::vector<uint8_t> b = good;
    int flips = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < flips; ++f) {
      size_t at = rng() % b.size();
      b[at] = (rng() & 1) ? static_cast<uint8_t>(rng()) : static_cast<uint8_t>(b[at] ^ (1u << (rng() % 8)));
    }
    attempt(b);
  }
  MESSAGE("fuzz: " << ok << " accepted, " << rejected << " rejected with an error");
  CHECK(rejected > 0);
}

}  // namespace

TEST_CASE("cubin reader: launch facts of a ptxas-built sm_90 cubin") {
  CubinInfo c = read_cubin(fixture("matmul_sm90.cubin"), "matmul");
  CHECK(c.param_offset == 0x210);
  CHECK(c.param_size == 24);
  CHECK(c.registers > 0);
  CHECK(c.shared_bytes == 0);
  CHECK(c.text_size > 0);
  CHECK_THROWS_WITH_AS(read_cubin(fixture("matmul_sm90.cubin"), "other"), doctest::Contains("no code for kernel 'other'"), ElfError);
}

TEST_CASE("readers reject what is not an ELF of theirs, clearly") {
  std::vector<uint8_t> junk(100, 0x41);
  CHECK_THROWS_WITH_AS(link_elf(junk, ElfMachine::X86_64, 0), doctest::Contains("bad magic"), ElfError);
  CHECK_THROWS_WITH_AS(link_elf({}, ElfMachine::X86_64, 0), doctest::Contains("too short"), ElfError);
  auto ck = compile(builtin_kernel("add").parse(), find_target("gfx1100"));
  CHECK_THROWS_WITH_AS(link_elf(ck->binary, ElfMachine::X86_64, 0), doctest::Contains("is not the expected"), ElfError);
  CHECK_THROWS_WITH_AS(read_amd_kernel(link_elf(ck->binary, ElfMachine::AMDGPU, 0), "nope"), doctest::Contains("nope.kd"), ElfError);
  CHECK_THROWS_WITH_AS(HostFunction::load(compile(builtin_kernel("add").parse(), x86())->binary, "nope"), doctest::Contains("no symbol 'nope'"),
                       ElfError);
}

TEST_CASE("fuzz: AMDGPU code object reader") {
  auto ck = compile(builtin_kernel("softmax").parse(), find_target("gfx1100"));
  fuzz(ck->binary, [](const std::vector<uint8_t>& b) { read_amd_kernel(link_elf(b, ElfMachine::AMDGPU, 0x100000), "kernel"); }, 1);
}

TEST_CASE("fuzz: cubin reader") {
  fuzz(fixture("matmul_sm90.cubin"), [](const std::vector<uint8_t>& b) { read_cubin(b, "matmul"); }, 2);
}

TEST_CASE("fuzz: x86 object linker") {
  auto ck = compile(builtin_kernel("conv2d").parse(), x86());
  fuzz(ck->binary, [](const std::vector<uint8_t>& b) { link_elf(b, ElfMachine::X86_64, 0x7f0000000000); }, 3);
}
