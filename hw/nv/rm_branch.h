// The per-branch RM/UVM structs of rm_abi.h as types, for code that fills or reads them: with_branch
// calls a generic function with the tag of the running driver's branch, so one function body serves
// every branch and the compiler checks each branch's fields.
#pragma once
#include "common/error.h"
#include "hw/nv/rm_abi.h"

namespace ugpu::hw::nv {

#define UGPU_NV_ABI(NS)                                              \
  struct Abi##NS {                                                   \
    using Nvos46 = NS::NVOS46_PARAMETERS;                            \
    using VaSpace = NS::NV_VASPACE_ALLOCATION_PARAMETERS;            \
    using Schedule = NS::NVA06C_CTRL_GPFIFO_SCHEDULE_PARAMS;         \
    using ClassListV2 = NS::NV0080_CTRL_GPU_GET_CLASSLIST_V2_PARAMS; \
    using ChannelAlloc = NS::NV_CHANNEL_ALLOC_PARAMS;                \
    using UvmFree = NS::UVM_FREE_PARAMS;                             \
  };
UGPU_NV_ABI(v570)
UGPU_NV_ABI(v575)
UGPU_NV_ABI(v580)
UGPU_NV_ABI(v590)
UGPU_NV_ABI(v610)
#undef UGPU_NV_ABI

// f(AbiV570{}) ... f(AbiV610{}) for the branch `b` (an entry of kAbiBranches).
template <class F>
decltype(auto) with_branch(const AbiBranch& b, F&& f) {
  switch (b.major) {
    case 570: return f(Abiv570{});
    case 575: return f(Abiv575{});
    case 580: return f(Abiv580{});
    case 590: return f(Abiv590{});
    case 610: return f(Abiv610{});
  }
  throw Error(std::string("no struct layouts for driver branch ") + b.name);
}

}  // namespace ugpu::hw::nv
