// The tables behind hw/nv/rm_abi.h: driver branches, status codes, RC error and MMU fault names.
#include "hw/nv/rm_abi.h"

#include <algorithm>
#include <iterator>

namespace ugpu::hw::nv {

namespace {

template <class Nvos46, class Vaspace, class Schedule, class ClasslistV2, class ChannelAlloc, class UvmFree, class UnregisterChannel>
constexpr AbiBranch make_branch(unsigned major, const char* name, const char* checked_against) {
  uint32_t flags2 = 0;
  if constexpr (requires(Nvos46 p) { p.flags2; }) flags2 = offsetof(Nvos46, flags2);
  return AbiBranch{major,
                   name,
                   checked_against,
                   sizeof(Nvos46),
                   sizeof(Vaspace),
                   sizeof(ChannelAlloc),
                   sizeof(Schedule),
                   sizeof(ClasslistV2),
                   sizeof(UvmFree),
                   sizeof(UnregisterChannel),
                   flags2,
                   offsetof(Nvos46, dmaOffset),
                   offsetof(Nvos46, status),
                   offsetof(ChannelAlloc, hUserdMemory),
                   offsetof(ChannelAlloc, userdOffset),
                   offsetof(ChannelAlloc, engineType),
                   offsetof(ChannelAlloc, hObjectError),
                   offsetof(UvmFree, rmStatus)};
}

// One branch namespace's structs (a namespace cannot be a template argument).
#define UGPU_NV_BRANCH(ns, major, checked)                                                                                                       \
  make_branch<ns::NVOS46_PARAMETERS, ns::NV_VASPACE_ALLOCATION_PARAMETERS, ns::NVA06F_CTRL_GPFIFO_SCHEDULE_PARAMS,                               \
              ns::NV0080_CTRL_GPU_GET_CLASSLIST_V2_PARAMS, ns::NV_CHANNEL_ALLOC_PARAMS, ns::UVM_FREE_PARAMS, ns::UVM_UNREGISTER_CHANNEL_PARAMS>( \
      major, #major, checked)

}  // namespace

const AbiBranch kAbiBranches[5] = {
    UGPU_NV_BRANCH(v570, 570, "OGKM 570.86.15, 570.86.16, 570.211.01; tinygrad nv_570"),
    UGPU_NV_BRANCH(v575, 575, "OGKM 575.51.02, 575.64.05"),
    UGPU_NV_BRANCH(v580, 580, "OGKM 580.65.06, 580.105.08, 580.142; tinygrad nv_580"),
    UGPU_NV_BRANCH(v590, 590, "OGKM 590.44.01, 590.48.01, 595.45.04"),
    UGPU_NV_BRANCH(v610, 610, "tinygrad nv_610 (OGKM 610.43.03)"),
};
#undef UGPU_NV_BRANCH

const AbiBranch* find_branch(unsigned driver_major) {
  for (auto it = std::rbegin(kAbiBranches); it != std::rend(kAbiBranches); ++it)
    if (it->major <= driver_major) return &*it;
  return nullptr;
}

// nvstatuscodes.h of OGKM 595.45.04, plus the two codes tinygrad's nv_610 adds (their text is ours).
const RmStatus kRmStatuses[] = {
    {0x00000000, "NV_OK", "Success"},
    {0x00000001, "NV_ERR_BROKEN_FB", "Frame-Buffer broken"},
    {0x00000002, "NV_ERR_BUFFER_TOO_SMALL", "Buffer passed in is too small"},
    {0x00000003, "NV_ERR_BUSY_RETRY", "System is busy, retry later"},
    {0x00000004, "NV_ERR_CALLBACK_NOT_SCHEDULED", "The requested callback API not scheduled"},
    {0x00000005, "NV_ERR_CARD_NOT_PRESENT", "Card not detected"},
    {0x00000006, "NV_ERR_CYCLE_DETECTED", "Call cycle detected"},
    {0x00000007, "NV_ERR_DMA_IN_USE", "Requested DMA is in use"},
    {0x00000008, "NV_ERR_DMA_MEM_NOT_LOCKED", "Requested DMA memory is not locked"},
    {0x00000009, "NV_ERR_DMA_MEM_NOT_UNLOCKED", "Requested DMA memory is not unlocked"},
    {0x0000000a, "NV_ERR_DUAL_LINK_INUSE", "Dual-Link is in use"},
    {0x0000000b, "NV_ERR_ECC_ERROR", "Generic ECC error"},
    {0x0000000c, "NV_ERR_FIFO_BAD_ACCESS", "FIFO: Invalid access"},
    {0x0000000d, "NV_ERR_FREQ_NOT_SUPPORTED", "Requested frequency is not supported"},
    {0x0000000e, "NV_ERR_GPU_DMA_NOT_INITIALIZED", "Requested DMA not initialized"},
    {0x0000000f, "NV_ERR_GPU_IS_LOST", "GPU lost from the bus"},
    {0x00000010, "NV_ERR_GPU_IN_FULLCHIP_RESET", "GPU currently in full-chip reset"},
    {0x00000011, "NV_ERR_GPU_NOT_FULL_POWER", "GPU not in full power"},
    {0x00000012, "NV_ERR_GPU_UUID_NOT_FOUND", "GPU UUID not found"},
    {0x00000013, "NV_ERR_HOT_SWITCH", "System in hot switch"},
    {0x00000014, "NV_ERR_I2C_ERROR", "I2C Error"},
    {0x00000015, "NV_ERR_I2C_SPEED_TOO_HIGH", "I2C Error: Speed too high"},
    {0x00000016, "NV_ERR_ILLEGAL_ACTION", "Current action is not allowed"},
    {0x00000017, "NV_ERR_IN_USE", "Generic busy error"},
    {0x00000018, "NV_ERR_INFLATE_COMPRESSED_DATA_FAILED", "Failed to inflate compressed data"},
    {0x00000019, "NV_ERR_INSERT_DUPLICATE_NAME", "Found a duplicate entry in the requested btree"},
    {0x0000001a, "NV_ERR_INSUFFICIENT_RESOURCES", "Ran out of a critical resource, other than memory"},
    {0x0000001b, "NV_ERR_INSUFFICIENT_PERMISSIONS", "The requester does not have sufficient permissions"},
    {0x0000001c, "NV_ERR_INSUFFICIENT_POWER", "Generic Error: Low power"},
    {0x0000001d, "NV_ERR_INVALID_ACCESS_TYPE", "This type of access is not allowed"},
    {0x0000001e, "NV_ERR_INVALID_ADDRESS", "Address not valid"},
    {0x0000001f, "NV_ERR_INVALID_ARGUMENT", "Invalid argument to call"},
    {0x00000020, "NV_ERR_INVALID_BASE", "Invalid base"},
    {0x00000021, "NV_ERR_INVALID_CHANNEL", "Given channel-id not valid"},
    {0x00000022, "NV_ERR_INVALID_CLASS", "Given class-id not valid"},
    {0x00000023, "NV_ERR_INVALID_CLIENT", "Given client not valid"},
    {0x00000024, "NV_ERR_INVALID_COMMAND", "Command passed is not valid"},
    {0x00000025, "NV_ERR_INVALID_DATA", "Invalid data passed"},
    {0x00000026, "NV_ERR_INVALID_DEVICE", "Current device is not valid"},
    {0x00000027, "NV_ERR_INVALID_DMA_SPECIFIER", "The requested DMA specifier is not valid"},
    {0x00000028, "NV_ERR_INVALID_EVENT", "Invalid event occurred"},
    {0x00000029, "NV_ERR_INVALID_FLAGS", "Invalid flags passed"},
    {0x0000002a, "NV_ERR_INVALID_FUNCTION", "Called function is not valid"},
    {0x0000002b, "NV_ERR_INVALID_HEAP", "Heap corrupted"},
    {0x0000002c, "NV_ERR_INVALID_INDEX", "Index invalid"},
    {0x0000002d, "NV_ERR_INVALID_IRQ_LEVEL", "Requested IRQ level is not valid"},
    {0x0000002e, "NV_ERR_INVALID_LIMIT", "Generic Error: Invalid limit"},
    {0x0000002f, "NV_ERR_INVALID_LOCK_STATE", "Requested lock state not valid"},
    {0x00000030, "NV_ERR_INVALID_METHOD", "Requested method not valid"},
    {0x00000031, "NV_ERR_INVALID_OBJECT", "Object not valid"},
    {0x00000032, "NV_ERR_INVALID_OBJECT_BUFFER", "Object buffer passed is not valid"},
    {0x00000033, "NV_ERR_INVALID_OBJECT_HANDLE", "Object handle is not valid"},
    {0x00000034, "NV_ERR_INVALID_OBJECT_NEW", "New object is not valid"},
    {0x00000035, "NV_ERR_INVALID_OBJECT_OLD", "Old object is not valid"},
    {0x00000036, "NV_ERR_INVALID_OBJECT_PARENT", "Object parent is not valid"},
    {0x00000037, "NV_ERR_INVALID_OFFSET", "The offset passed is not valid"},
    {0x00000038, "NV_ERR_INVALID_OPERATION", "Requested operation is not valid"},
    {0x00000039, "NV_ERR_INVALID_OWNER", "Owner not valid"},
    {0x0000003a, "NV_ERR_INVALID_PARAM_STRUCT", "Invalid structure parameter"},
    {0x0000003b, "NV_ERR_INVALID_PARAMETER", "At least one of the parameters passed is not valid"},
    {0x0000003c, "NV_ERR_INVALID_PATH", "The requested path is not valid"},
    {0x0000003d, "NV_ERR_INVALID_POINTER", "Pointer not valid"},
    {0x0000003e, "NV_ERR_INVALID_REGISTRY_KEY", "Found an invalid registry key"},
    {0x0000003f, "NV_ERR_INVALID_REQUEST", "Generic Error: Invalid request"},
    {0x00000040, "NV_ERR_INVALID_STATE", "Generic Error: Invalid state"},
    {0x00000041, "NV_ERR_INVALID_STRING_LENGTH", "The string length is not valid"},
    {0x00000042, "NV_ERR_INVALID_READ", "The requested read operation is not valid"},
    {0x00000043, "NV_ERR_INVALID_WRITE", "The requested write operation is not valid"},
    {0x00000044, "NV_ERR_INVALID_XLATE", "The requested translate operation is not valid"},
    {0x00000045, "NV_ERR_IRQ_NOT_FIRING", "Requested IRQ is not firing"},
    {0x00000046, "NV_ERR_IRQ_EDGE_TRIGGERED", "IRQ is edge triggered"},
    {0x00000047, "NV_ERR_MEMORY_TRAINING_FAILED", "Failed memory training sequence"},
    {0x00000048, "NV_ERR_MISMATCHED_SLAVE", "Slave mismatch"},
    {0x00000049, "NV_ERR_MISMATCHED_TARGET", "Target mismatch"},
    {0x0000004a, "NV_ERR_MISSING_TABLE_ENTRY", "Requested entry missing not found in the table"},
    {0x0000004b, "NV_ERR_MODULE_LOAD_FAILED", "Failed to load the requested module"},
    {0x0000004c, "NV_ERR_MORE_DATA_AVAILABLE", "There is more data available"},
    {0x0000004d, "NV_ERR_MORE_PROCESSING_REQUIRED", "More processing required for the given call"},
    {0x0000004e, "NV_ERR_MULTIPLE_MEMORY_TYPES", "Multiple memory types found"},
    {0x0000004f, "NV_ERR_NO_FREE_FIFOS", "No more free FIFOs found"},
    {0x00000050, "NV_ERR_NO_INTR_PENDING", "No interrupt pending"},
    {0x00000051, "NV_ERR_NO_MEMORY", "Out of memory"},
    {0x00000052, "NV_ERR_NO_SUCH_DOMAIN", "Requested domain does not exist"},
    {0x00000053, "NV_ERR_NO_VALID_PATH", "Caller did not specify a valid path"},
    {0x00000054, "NV_ERR_NOT_COMPATIBLE", "Generic Error: Incompatible types"},
    {0x00000055, "NV_ERR_NOT_READY", "Generic Error: Not ready"},
    {0x00000056, "NV_ERR_NOT_SUPPORTED", "Call not supported"},
    {0x00000057, "NV_ERR_OBJECT_NOT_FOUND", "Requested object not found"},
    {0x00000058, "NV_ERR_OBJECT_TYPE_MISMATCH", "Specified objects do not match"},
    {0x00000059, "NV_ERR_OPERATING_SYSTEM", "Generic operating system error"},
    {0x0000005a, "NV_ERR_OTHER_DEVICE_FOUND", "Found other device instead of the requested one"},
    {0x0000005b, "NV_ERR_OUT_OF_RANGE", "The specified value is out of bounds"},
    {0x0000005c, "NV_ERR_OVERLAPPING_UVM_COMMIT", "Overlapping unified virtual memory commit"},
    {0x0000005d, "NV_ERR_PAGE_TABLE_NOT_AVAIL", "Requested page table not available"},
    {0x0000005e, "NV_ERR_PID_NOT_FOUND", "Process-Id not found"},
    {0x0000005f, "NV_ERR_PROTECTION_FAULT", "Protection fault"},
    {0x00000060, "NV_ERR_RC_ERROR", "Generic RC error"},
    {0x00000061, "NV_ERR_REJECTED_VBIOS", "Given Video BIOS rejected/invalid"},
    {0x00000062, "NV_ERR_RESET_REQUIRED", "Reset required"},
    {0x00000063, "NV_ERR_STATE_IN_USE", "State in use"},
    {0x00000064, "NV_ERR_SIGNAL_PENDING", "Signal pending"},
    {0x00000065, "NV_ERR_TIMEOUT", "Call timed out"},
    {0x00000066, "NV_ERR_TIMEOUT_RETRY", "Call timed out, please retry later"},
    {0x00000067, "NV_ERR_TOO_MANY_PRIMARIES", "Too many primaries"},
    {0x00000068, "NV_ERR_UVM_ADDRESS_IN_USE", "Unified virtual memory requested address already in use"},
    {0x00000069, "NV_ERR_MAX_SESSION_LIMIT_REACHED", "Maximum number of sessions reached"},
    {0x0000006a, "NV_ERR_LIB_RM_VERSION_MISMATCH", "Library version doesn't match driver version"},
    {0x0000006b, "NV_ERR_PRIV_SEC_VIOLATION", "Priv security violation"},
    {0x0000006c, "NV_ERR_GPU_IN_DEBUG_MODE", "GPU currently in debug mode"},
    {0x0000006d, "NV_ERR_FEATURE_NOT_ENABLED", "Requested Feature functionality is not enabled"},
    {0x0000006e, "NV_ERR_RESOURCE_LOST", "Requested resource has been destroyed"},
    {0x0000006f, "NV_ERR_PMU_NOT_READY", "PMU is not ready or has not yet been initialized"},
    {0x00000070, "NV_ERR_FLCN_ERROR", "Generic falcon assert or halt"},
    {0x00000071, "NV_ERR_FATAL_ERROR", "Fatal/unrecoverable error"},
    {0x00000072, "NV_ERR_MEMORY_ERROR", "Generic memory error"},
    {0x00000073, "NV_ERR_INVALID_LICENSE", "License provided is rejected or invalid"},
    {0x00000074, "NV_ERR_NVLINK_INIT_ERROR", "Nvlink Init Error"},
    {0x00000075, "NV_ERR_NVLINK_MINION_ERROR", "Nvlink Minion Error"},
    {0x00000076, "NV_ERR_NVLINK_CLOCK_ERROR", "Nvlink Clock Error"},
    {0x00000077, "NV_ERR_NVLINK_TRAINING_ERROR", "Nvlink Training Error"},
    {0x00000078, "NV_ERR_NVLINK_CONFIGURATION_ERROR", "Nvlink Configuration Error"},
    {0x00000079, "NV_ERR_RISCV_ERROR", "Generic RISC-V assert or halt"},
    {0x0000007a, "NV_ERR_FABRIC_MANAGER_NOT_PRESENT", "Fabric Manager is not loaded"},
    {0x0000007b, "NV_ERR_ALREADY_SIGNALLED", "Semaphore Surface value already >= requested wait value"},
    {0x0000007c, "NV_ERR_QUEUE_TASK_SLOT_NOT_AVAILABLE", "PMU RPC error due to no queue slot available for this event"},
    {0x0000007d, "NV_ERR_KEY_ROTATION_IN_PROGRESS", "Operation not allowed as key rotation is in progress"},
    {0x0000007e, "NV_ERR_TEST_ONLY_CODE_NOT_ENABLED", "Test-only code path not enabled"},
    {0x0000007f, "NV_ERR_SECURE_BOOT_FAILED", "GFW secure boot failed"},
    {0x00000080, "NV_ERR_INSUFFICIENT_ZBC_ENTRY", "No more ZBC entry for the client"},
    {0x00000081, "NV_ERR_NVLINK_FABRIC_NOT_READY", "Nvlink Fabric Status or Fabric Probe is not yet complete, caller needs to retry"},
    {0x00000082, "NV_ERR_NVLINK_FABRIC_FAILURE", "Nvlink Fabric Probe failed"},
    {0x00000083, "NV_ERR_GPU_MEMORY_ONLINING_FAILURE", "GPU Memory Onlining failed"},
    {0x00000084, "NV_ERR_REDUCTION_MANAGER_NOT_AVAILABLE", "Reduction Manager is not available"},
    {0x00000085, "NV_ERR_THRESHOLD_CROSSED", "A fatal threshold has been crossed"},
    {0x00000086, "NV_ERR_RESOURCE_RETIREMENT_ERROR", "An error occurred while trying to retire a resource"},
    {0x00000087, "NV_ERR_FABRIC_STATE_OUT_OF_SYNC", "NVLink fabric state cached by the driver is out of sync"},
    {0x00000088, "NV_ERR_BUFFER_FULL", "Buffer is full"},
    {0x00000089, "NV_ERR_BUFFER_EMPTY", "Buffer is empty"},
    {0x0000008a, "NV_ERR_MC_FLA_OFFSET_TABLE_FULL", "Multicast FLA offset table has no available slots"},
    {0x0000008b, "NV_ERR_OPERATION_ABORTED", "Operation has aborted"},
    {0x0000008c, "NV_ERR_DMA_XFER_FAILED", "DMA transfer failed"},
    {0x0000008d, "NV_ERR_RESOURCE_ACCOUNTING_HARD_LIMIT_EXCEEDED", "Resource accounting hard limit exceeded"},
    {0x0000ffff, "NV_ERR_GENERIC", "Failure: Generic Error"},
    {0x00010001, "NV_WARN_HOT_SWITCH", "WARNING Hot switch"},
    {0x00010002, "NV_WARN_INCORRECT_PERFMON_DATA", "WARNING Incorrect performance monitor data"},
    {0x00010003, "NV_WARN_MISMATCHED_SLAVE", "WARNING Slave mismatch"},
    {0x00010004, "NV_WARN_MISMATCHED_TARGET", "WARNING Target mismatch"},
    {0x00010005, "NV_WARN_MORE_PROCESSING_REQUIRED", "WARNING More processing required for the call"},
    {0x00010006, "NV_WARN_NOTHING_TO_DO", "WARNING Nothing to do"},
    {0x00010007, "NV_WARN_NULL_OBJECT", "WARNING NULL object found"},
    {0x00010008, "NV_WARN_OUT_OF_RANGE", "WARNING value out of range"},
    {0x00010009, "NV_WARN_THRESHOLD_CROSSED", "WARNING Threshold has been crossed"},
    {0x0001000a, "NV_WARN_RESOURCE_ACCOUNTING_SOFT_LIMIT_EXCEEDED", "WARNING Resource accounting soft limit exceeded"},
};
const size_t kRmStatusCount = std::size(kRmStatuses);

const RmStatus* find_status(uint32_t code) {
  const RmStatus* end = kRmStatuses + kRmStatusCount;
  const RmStatus* it = std::lower_bound(kRmStatuses, end, code, [](const RmStatus& s, uint32_t c) { return s.code < c; });
  return it != end && it->code == code ? it : nullptr;
}

const char* status_name(uint32_t code) {
  const RmStatus* s = find_status(code);
  return s ? s->name : "NV_ERR_UNKNOWN_STATUS";
}

const char* status_text(uint32_t code) {
  const RmStatus* s = find_status(code);
  return s ? s->text : "Unknown status code";
}

namespace {
struct RcError {
  uint32_t code;
  const char* name;
};
// nverror.h of OGKM 595.45.04; ROBUST_CHANNEL_ dropped from the names.
constexpr RcError kRcErrors[] = {
    {0, "ERROR_RECOVERY_LEVEL_INFO"},
    {1, "ERROR_RECOVERY_LEVEL_NON_FATAL"},
    {2, "ERROR_RECOVERY_LEVEL_FATAL"},
    {13, "GR_EXCEPTION"},
    {14, "FAKE_ERROR"},
    {16, "VBLANK_CALLBACK_TIMEOUT"},
    {19, "DISP_MISSED_NOTIFIER"},
    {20, "MPEG_ERROR_SW_METHOD"},
    {21, "ME_ERROR_SW_METHOD"},
    {22, "VP_ERROR_SW_METHOD"},
    {23, "RC_LOGGING_ENABLED"},
    {27, "VP_ERROR"},
    {28, "VP2_ERROR"},
    {29, "BSP_ERROR"},
    {30, "UNUSED_ERROR_30"},
    {31, "FIFO_ERROR_MMU_ERR_FLT"},
    {32, "PBDMA_ERROR"},
    {33, "SEC_ERROR"},
    {34, "MSVLD_ERROR"},
    {35, "MSPDEC_ERROR"},
    {36, "MSPPP_ERROR"},
    {39, "CE0_ERROR"},
    {40, "CE1_ERROR"},
    {41, "CE2_ERROR"},
    {42, "VIC_ERROR"},
    {43, "RESETCHANNEL_VERIF_ERROR"},
    {44, "GR_FAULT_DURING_CTXSW"},
    {45, "PREEMPTIVE_REMOVAL"},
    {47, "NVENC0_ERROR"},
    {48, "GPU_ECC_DBE"},
    {58, "FB_MEMORY_ERROR"},
    {59, "PMU_ERROR"},
    {60, "SEC2_ERROR"},
    {61, "PMU_BREAKPOINT"},
    {62, "PMU_HALT_ERROR"},
    {63, "INFOROM_PAGE_RETIREMENT_EVENT"},
    {64, "INFOROM_PAGE_RETIREMENT_FAILURE"},
    {65, "NVENC1_ERROR"},
    {68, "NVDEC0_ERROR"},
    {69, "GR_CLASS_ERROR"},
    {70, "CE3_ERROR"},
    {71, "CE4_ERROR"},
    {72, "CE5_ERROR"},
    {73, "NVENC2_ERROR"},
    {74, "NVLINK_ERROR"},
    {75, "CE6_ERROR"},
    {76, "CE7_ERROR"},
    {77, "CE8_ERROR"},
    {78, "VGPU_START_ERROR"},
    {79, "GPU_HAS_FALLEN_OFF_THE_BUS"},
    {80, "PBDMA_PUSHBUFFER_CRC_MISMATCH"},
    {81, "VGA_SUBSYSTEM_ERROR"},
    {82, "NVJPG0_ERROR"},
    {83, "NVDEC1_ERROR"},
    {84, "NVDEC2_ERROR"},
    {85, "CE9_ERROR"},
    {86, "OFA0_ERROR"},
    {87, "NVTELEMETRY_DRIVER_REPORT"},
    {88, "NVDEC3_ERROR"},
    {89, "NVDEC4_ERROR"},
    {90, "LTC_ERROR"},
    {91, "RESERVED_XID"},
    {92, "EXCESSIVE_SBE_INTERRUPTS"},
    {93, "INFOROM_ERASE_LIMIT_EXCEEDED"},
    {94, "CONTAINED_ERROR"},
    {95, "UNCONTAINED_ERROR"},
    {96, "NVDEC5_ERROR"},
    {97, "NVDEC6_ERROR"},
    {98, "NVDEC7_ERROR"},
    {99, "NVJPG1_ERROR"},
    {100, "NVJPG2_ERROR"},
    {101, "NVJPG3_ERROR"},
    {102, "NVJPG4_ERROR"},
    {103, "NVJPG5_ERROR"},
    {104, "NVJPG6_ERROR"},
    {105, "NVJPG7_ERROR"},
    {108, "NVLINK_REMOTE_TRANSLATION_ERROR"},
    {110, "SEC_FAULT_ERROR"},
    {119, "GSP_RPC_TIMEOUT"},
    {120, "GSP_ERROR"},
    {121, "C2C_ERROR"},
    {122, "SPI_PMU_RPC_READ_FAIL"},
    {123, "SPI_PMU_RPC_WRITE_FAIL"},
    {124, "SPI_PMU_RPC_ERASE_FAIL"},
    {125, "INFOROM_FS_ERROR"},
    {126, "CE10_ERROR"},
    {127, "CE11_ERROR"},
    {128, "CE12_ERROR"},
    {129, "CE13_ERROR"},
    {130, "CE14_ERROR"},
    {131, "CE15_ERROR"},
    {132, "CE16_ERROR"},
    {133, "CE17_ERROR"},
    {134, "CE18_ERROR"},
    {135, "CE19_ERROR"},
    {136, "ALI_TRAINING_FAIL"},
    {137, "NVLINK_PRIV_ERR"},
    {138, "DLA_ERROR"},
    {139, "OFA1_ERROR"},
    {140, "UNRECOVERABLE_ECC_ERROR_ESCAPE"},
    {141, "FAST_PATH_ERROR"},
    {142, "NVENC3_ERROR"},
    {143, "GPU_INIT_ERROR"},
    {144, "NVLINK_SAW_ERROR"},
    {145, "NVLINK_RLW_ERROR"},
    {146, "NVLINK_TLW_ERROR"},
    {147, "NVLINK_TREX_ERROR"},
    {148, "NVLINK_NVLPW_CTRL_ERROR"},
    {149, "NVLINK_NETIR_ERROR"},
    {150, "NVLINK_MSE_ERROR"},
    {151, "KEY_ROTATION_ERROR"},
    {152, "RESERVED7_ERROR"},
    {153, "RESERVED8_ERROR"},
    {154, "GPU_RECOVERY_ACTION_CHANGED"},
    {155, "NVLINK_SW_DEFINED_ERROR"},
    {156, "RESOURCE_RETIREMENT_EVENT"},
    {157, "RESOURCE_RETIREMENT_FAILURE"},
    {158, "GPU_FATAL_TIMEOUT"},
    {159, "CHI_NON_DATA_ERROR"},
    {160, "CHANNEL_RETIREMENT_EVENT"},
    {161, "CHANNEL_RETIREMENT_FAILURE"},
    {162, "ISINK_REENGAGED"},
    {163, "ISINK_DISENGAGED"},
    {164, "ISINK_LOW_LIFETIME"},
    {165, "ISINK_ZERO_LIFETIME"},
    {166, "NVLINK_SECURE_NVLE_ERROR"},
    {167, "PCIE_FATAL_TIMEOUT"},
    {168, "REDUCED_GPU_MEMORY_CAPACITY"},
    {169, "SEC2_HALT_ERROR"},
    {170, "NVLINK_SECURE_ERROR"},
    {171, "UNCORRECTABLE_DRAM_ERROR"},
    {172, "UNCORRECTABLE_SRAM_ERROR"},
    {173, "C2C_FATAL_LINK_FAILURE"},
    {174, "RESETCHANNEL_KILL_PROCESS_SILENT"},
    {175, "MEMORY_SUBSYSTEM_ERROR"},
    {176, "PCIE_CORRECTABLE_ERROR_FAULT"},
};
}  // namespace

const char* rc_error_name(uint32_t rc_error) {
  for (const RcError& e : kRcErrors)
    if (e.code == rc_error) return e.name;
  return nullptr;
}

const char* mmu_fault_type_name(uint32_t fault_type) {
  static constexpr const char* kNames[] = {"PDE",
                                           "PDE_SIZE",
                                           "PTE",
                                           "VA_LIMIT_VIOLATION",
                                           "UNBOUND_INST_BLOCK",
                                           "PRIV_VIOLATION",
                                           "RO_VIOLATION",
                                           "WO_VIOLATION",
                                           "PITCH_MASK_VIOLATION",
                                           "WORK_CREATION",
                                           "UNSUPPORTED_APERTURE",
                                           "COMPRESSION_FAILURE",
                                           "UNSUPPORTED_KIND",
                                           "REGION_VIOLATION",
                                           "POISONED",
                                           "ATOMIC_VIOLATION"};
  return fault_type < std::size(kNames) ? kNames[fault_type] : nullptr;
}

const char* mmu_access_type_name(uint32_t access_type) {
  static constexpr const char* kNames[] = {"VIRT_READ", "VIRT_WRITE", "VIRT_ATOMIC_STRONG", "VIRT_PREFETCH", "VIRT_ATOMIC_WEAK", nullptr,
                                           nullptr,     nullptr,      "PHYS_READ",          "PHYS_WRITE",    "PHYS_ATOMIC",      "PHYS_PREFETCH"};
  return access_type < std::size(kNames) ? kNames[access_type] : nullptr;
}

}  // namespace ugpu::hw::nv
