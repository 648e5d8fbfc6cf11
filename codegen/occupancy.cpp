#include "codegen/occupancy.h"

#include <algorithm>
#include <climits>

namespace ugpu::codegen {
namespace {

// AMD, per SIMD: a lane's VGPR budget (wave32 on RDNA3/4, wave64 on CDNA3/4, AGPRs included) and the
// most waves; LDS per workgroup processor (RDNA) or CU (CDNA), each 4 SIMDs. NVIDIA, per SM: 64 K
// registers, the most warps and thread blocks, shared memory.
struct Budget {
  std::string_view target;
  int64_t regs, most, blocks, shared;
};
constexpr Budget kBudgets[] = {
    {"gfx1100", 1536, 16, 0, 131072}, {"gfx1201", 1536, 16, 0, 131072},  {"gfx942", 512, 8, 0, 65536},
    {"gfx950", 512, 8, 0, 163840},    {"sm_80", 65536, 64, 32, 167936},  {"sm_89", 65536, 48, 24, 102400},
    {"sm_90", 65536, 64, 32, 233472}, {"sm_100", 65536, 64, 32, 233472}, {"sm_120", 65536, 48, 32, 102400},
};

struct Limit {
  int64_t value;
  const char* what;
};

}  // namespace

std::optional<Occupancy> occupancy(const CompiledKernel& k) {
  const Budget* b = nullptr;
  for (const Budget& x : kBudgets)
    if (x.target == k.target->name) b = &x;
  if (!b) return std::nullopt;
  int64_t items = 1;
  for (const ir::UOp& l : k.kernel.local_size) {
    if (!l.is_const()) return std::nullopt;
    items *= std::max<int64_t>(l.const_int(), 1);
  }
  const int64_t waves = (items + k.target->wave_size - 1) / k.target->wave_size;  // per workgroup
  std::vector<Limit> limits;
  Occupancy o;
  o.most = static_cast<int>(b->most);
  if (k.amd) {
    o.unit = "waves per SIMD";
    limits.push_back({b->most, "the maximum"});
    int64_t lds = std::max<int64_t>(k.kernel.shared_bytes, k.amd->lds_bytes());
    // Workgroups that fit the LDS, their waves spread over the 4 SIMDs. (Before the registers: where
    // both give the same bound, LLVM has used the registers the LDS bound left it.)
    if (lds > 0) limits.push_back({b->shared / lds * waves / 4, "workgroup memory"});
    if (k.amd->vgprs > 0) limits.push_back({b->regs / k.amd->vgprs, "VGPRs"});
  } else if (k.cubin) {
    o.unit = "warps per SM";
    // In whole thread blocks; registers are allocated per warp in units of 256.
    int64_t regs_per_warp = (static_cast<int64_t>(k.cubin->registers) * 32 + 255) / 256 * 256;
    int64_t shared = std::max<int64_t>(k.kernel.shared_bytes, k.cubin->shared_bytes);
    limits.push_back({b->most / waves * waves, "the maximum"});
    limits.push_back({b->blocks * waves, "thread blocks per SM"});
    if (shared > 0) limits.push_back({b->shared / shared * waves, "shared memory"});
    if (regs_per_warp > 0) limits.push_back({b->regs / (regs_per_warp * waves) * waves, "registers"});
  } else {
    return std::nullopt;
  }
  // The first of equal bounds is named.
  const Limit& least = *std::min_element(limits.begin(), limits.end(), [](const Limit& a, const Limit& c) { return a.value < c.value; });
  o.resident = static_cast<int>(std::min<int64_t>(least.value, b->most));
  o.limit = least.what;
  return o;
}

}  // namespace ugpu::codegen
