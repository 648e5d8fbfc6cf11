// The kgsl ABI (Qualcomm's Adreno kernel driver, /dev/kgsl-3d0) for the calls ugpu's Adreno path
// makes: the ioctl numbers (type 0x09) and argument structs of the msm_kgsl uapi header as 64-bit
// Android/Linux kernels lay them out, written from the header's definitions with our own names. Each
// struct's size is asserted; each request number is built here the way _IOW/_IOWR build it and
// asserted against the value measured on a device (shared/reference/nv-qcom-stack.md §7.1).
#pragma once
#include <cstddef>
#include <cstdint>

namespace ugpu::hw::qcom::kgsl {

inline constexpr uint32_t kIocType = 0x09;
// dir: 1 = write (the kernel reads the struct), 3 = read and write; size in bits 29:16.
constexpr uint32_t ioc(uint32_t dir, uint32_t nr, size_t size) { return dir << 30 | uint32_t(size) << 16 | kIocType << 8 | nr; }

// Context flags (DRAWCTXT_CREATE).
inline constexpr uint32_t kContextNoGmemAlloc = 0x2, kContextPreamble = 0x10, kContextNoFaultTolerance = 0x200, kContextPwrConstraint = 0x800;
inline constexpr uint32_t kContextPriorityShift = 12, kContextPriorityMask = 0xF000;
inline constexpr uint32_t kContextPreemptStyleShift = 25, kContextPreemptFinegrain = 2;
// Memory flags (GPUOBJ_ALLOC).
inline constexpr uint64_t kMemAlignShift = 16, kCacheModeShift = 26, kCacheModeUncached = 1, kMemUseCpuMap = 0x10000000;
inline constexpr uint32_t kUserMemTypeAddr = 2;  // MAP_USER_MEM of a process address
inline constexpr uint32_t kCmdlistIb = 1;        // a command object that is an IB
inline constexpr uint32_t kPropDeviceInfo = 0x1, kPropGpuResetStat = 0x9, kPropPwrConstraint = 0x12;
// What GPU_RESET_STAT answers for a context (and then clears): whether a GPU reset happened since the
// last query, and whether this context caused it.
inline constexpr uint32_t kCtxStatNoError = 0, kCtxStatGuilty = 1, kCtxStatInnocent = 2, kCtxStatUnknown = 3;
inline constexpr uint32_t kConstraintPwrlevel = 1, kConstraintPwrMax = 1;  // SETPROPERTY(PWR_CONSTRAINT): the highest power level

struct DeviceGetProperty {  // kgsl_device_getproperty
  uint32_t type;
  uint32_t pad;
  uint64_t value;  // user pointer
  uint64_t sizebytes;
};
struct DevInfo {  // kgsl_devinfo (KGSL_PROP_DEVICE_INFO)
  uint32_t device_id, chip_id, mmu_enabled, pad0;
  uint64_t gmem_gpubaseaddr;
  uint32_t gpu_id, pad1;
  uint64_t gmem_sizebytes;
};
struct DeviceConstraint {  // kgsl_device_constraint (SETPROPERTY PWR_CONSTRAINT)
  uint32_t type, context_id;
  uint64_t data;  // user pointer to a kgsl_device_constraint_pwrlevel {uint32_t level}
  uint64_t size;
};
struct WaitTimestampCtxtid {  // kgsl_device_waittimestamp_ctxtid; timeout in ms
  uint32_t context_id, timestamp, timeout;
};
struct DrawctxtCreate {  // kgsl_drawctxt_create
  uint32_t flags, drawctxt_id;
};
struct DrawctxtDestroy {  // kgsl_drawctxt_destroy
  uint32_t drawctxt_id;
};
struct MapUserMem {  // kgsl_map_user_mem
  int32_t fd;
  uint32_t pad;
  uint64_t gpuaddr, len, offset, hostptr;
  uint32_t memtype, flags;
};
struct SharedmemFree {  // kgsl_sharedmem_free
  uint64_t gpuaddr;
};
struct GpuobjAlloc {  // kgsl_gpuobj_alloc
  uint64_t size, flags, va_len, mmapsize;
  uint32_t id, metadata_len;
  uint64_t metadata;
};
struct GpuobjFree {  // kgsl_gpuobj_free
  uint64_t flags, priv;
  uint32_t id, type, len, pad;
};
struct CommandObject {  // kgsl_command_object
  uint64_t offset, gpuaddr, size;
  uint32_t flags, id;
};
struct GpuCommand {  // kgsl_gpu_command
  uint64_t flags, cmdlist;
  uint32_t cmdsize, numcmds;
  uint64_t objlist;
  uint32_t objsize, numobjs;
  uint64_t synclist;
  uint32_t syncsize, numsyncs, context_id, timestamp;
};

static_assert(sizeof(DeviceGetProperty) == 24 && sizeof(DevInfo) == 40 && sizeof(WaitTimestampCtxtid) == 12 && sizeof(DrawctxtCreate) == 8);
static_assert(sizeof(MapUserMem) == 48 && sizeof(SharedmemFree) == 8 && sizeof(GpuobjAlloc) == 48 && sizeof(GpuobjFree) == 32);
static_assert(sizeof(DeviceConstraint) == 24 && offsetof(DeviceConstraint, data) == 8);
static_assert(sizeof(CommandObject) == 32 && sizeof(GpuCommand) == 64);
static_assert(offsetof(MapUserMem, gpuaddr) == 8 && offsetof(MapUserMem, memtype) == 40);
static_assert(offsetof(GpuCommand, context_id) == 56 && offsetof(GpuCommand, timestamp) == 60);
static_assert(offsetof(GpuobjAlloc, id) == 32 && offsetof(DevInfo, chip_id) == 4 && offsetof(DevInfo, gpu_id) == 24);

inline constexpr uint32_t kDeviceGetProperty = ioc(3, 0x02, sizeof(DeviceGetProperty));
inline constexpr uint32_t kWaitTimestampCtxtid = ioc(1, 0x07, sizeof(WaitTimestampCtxtid));
inline constexpr uint32_t kDrawctxtCreate = ioc(3, 0x13, sizeof(DrawctxtCreate));
inline constexpr uint32_t kDrawctxtDestroy = ioc(1, 0x14, sizeof(DrawctxtDestroy));
inline constexpr uint32_t kMapUserMem = ioc(3, 0x15, sizeof(MapUserMem));
inline constexpr uint32_t kSharedmemFree = ioc(1, 0x21, sizeof(SharedmemFree));
inline constexpr uint32_t kSetProperty = ioc(1, 0x32, sizeof(DeviceGetProperty));
inline constexpr uint32_t kGpuobjAlloc = ioc(3, 0x45, sizeof(GpuobjAlloc));
inline constexpr uint32_t kGpuobjFree = ioc(1, 0x46, sizeof(GpuobjFree));
inline constexpr uint32_t kGpuCommand = ioc(3, 0x4A, sizeof(GpuCommand));
// The request numbers measured on a device (the reference's table).
static_assert(kDeviceGetProperty == 0xC0180902 && kWaitTimestampCtxtid == 0x400C0907 && kDrawctxtCreate == 0xC0080913);
static_assert(kMapUserMem == 0xC0300915 && kSharedmemFree == 0x40080921 && kSetProperty == 0x40180932);
static_assert(kGpuobjAlloc == 0xC0300945 && kGpuobjFree == 0x40200946 && kGpuCommand == 0xC040094A);

}  // namespace ugpu::hw::qcom::kgsl
