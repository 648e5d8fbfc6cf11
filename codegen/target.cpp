#include "codegen/target.h"

#include "common/error.h"

namespace ugpu::codegen {
namespace {

using ir::Op;
constexpr int64_t kNoLimit = INT64_MAX;
// AMD: grid dimensions are 32-bit work-item counts in the dispatch packet; 1024 work-items per group;
// 64 KiB LDS per workgroup (gfx950 has 160 KiB). NVIDIA: grid (2^31-1, 65535, 65535), block (1024,
// 1024, 64) and 1024 threads; 48 KiB static shared memory per block.
constexpr std::array<int64_t, 3> kAmdGrid{0xffffffffll, 0xffffffffll, 0xffffffffll};
constexpr std::array<int64_t, 3> kNvGrid{0x7fffffffll, 65535, 65535};

const Target kTargets[] = {
    {"x86", Arch::X86, {kNoLimit, kNoLimit, kNoLimit}, {kNoLimit, kNoLimit, kNoLimit}, kNoLimit, kNoLimit, 1, 1, {Op::SQRT}, {Op::SQRT}},
    {"gfx1100", Arch::AMDGPU, kAmdGrid, {1024, 1024, 1024}, 1024, 65536, 128, 32, {Op::SQRT, Op::EXP2, Op::LOG2}, {Op::SQRT}},
    {"gfx1201", Arch::AMDGPU, kAmdGrid, {1024, 1024, 1024}, 1024, 65536, 128, 32, {Op::SQRT, Op::EXP2, Op::LOG2}, {Op::SQRT}},
    {"gfx942", Arch::AMDGPU, kAmdGrid, {1024, 1024, 1024}, 1024, 65536, 256, 64, {Op::SQRT, Op::EXP2, Op::LOG2}, {Op::SQRT}},
    {"gfx950", Arch::AMDGPU, kAmdGrid, {1024, 1024, 1024}, 1024, 163840, 256, 64, {Op::SQRT, Op::EXP2, Op::LOG2}, {Op::SQRT}},
    {"sm_80", Arch::NVPTX, kNvGrid, {1024, 1024, 64}, 1024, 49152, 128, 32, {Op::SQRT}, {Op::SQRT}},
    {"sm_89", Arch::NVPTX, kNvGrid, {1024, 1024, 64}, 1024, 49152, 128, 32, {Op::SQRT}, {Op::SQRT}},
    {"sm_90", Arch::NVPTX, kNvGrid, {1024, 1024, 64}, 1024, 49152, 128, 32, {Op::SQRT}, {Op::SQRT}},
    {"sm_100", Arch::NVPTX, kNvGrid, {1024, 1024, 64}, 1024, 49152, 128, 32, {Op::SQRT}, {Op::SQRT}},
    {"sm_120", Arch::NVPTX, kNvGrid, {1024, 1024, 64}, 1024, 49152, 128, 32, {Op::SQRT}, {Op::SQRT}},
    // Adreno 630 and 660 (the same ir3 encodings for what the backend emits): 32-bit group counts (CP_EXEC_CS), 10-bit local sizes, 1024 fibers per
    // workgroup, 32 KiB of shared memory, waves of 64; the SFU has sqrt, exp2, log2 and sin (its input range-reduced by the backend); there is no
    // 64-bit float.
    {"a630", Arch::IR3, kAmdGrid, {1024, 1024, 1024}, 1024, 32768, 64, 64, {Op::SQRT, Op::EXP2, Op::LOG2, Op::SIN}, {}, false},
    {"a660", Arch::IR3, kAmdGrid, {1024, 1024, 1024}, 1024, 32768, 64, 64, {Op::SQRT, Op::EXP2, Op::LOG2, Op::SIN}, {}, false},
};

}  // namespace

std::string_view Target::arch_name() const {
  switch (arch) {
    case Arch::X86: return "x86-64";
    case Arch::AMDGPU: return "AMDGPU";
    case Arch::NVPTX: return "NVPTX";
    case Arch::IR3: return "Adreno ir3";
  }
  return "?";
}

int Target::vector_bytes() const {
  if (gpu()) return 16;
  static const int host = [] {
#if defined(__x86_64__)
    if (__builtin_cpu_supports("avx512f")) return 64;
    if (__builtin_cpu_supports("avx2")) return 32;
#endif
    return 16;
  }();
  return host;
}

std::span<const Target> all_targets() { return kTargets; }

std::string target_names() {
  std::string s;
  for (const Target& t : kTargets) s += (s.empty() ? "" : ", ") + std::string(t.name);
  return s;
}

const Target& find_target(std::string_view name) {
  for (const Target& t : kTargets)
    if (t.name == name) return t;
  throw Error("unknown target '" + std::string(name) + "': the targets are " + target_names());
}

}  // namespace ugpu::codegen
