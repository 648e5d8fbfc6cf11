// The registers and fields the AMD driver's compute queues and scratch setup write, as one table per
// GPU generation. The driver picks the table by the GPU's GC IP version (from the KFD topology's
// gfx_target_version, or IP discovery without a kernel driver) instead of naming one generation's
// registers, so supporting gfx12 or gfx9.4 means a row here built from that generation's generated
// register header, not a change to the queues.
#pragma once
#include <cstdint>

#include "hw/amd/kernel_descriptor.h"
#include "hw/amd/registers.h"

namespace ugpu::hw::amd {

struct ComputeRegisters {
  const char* generation;  // "gfx11"
  uint32_t gc_major;       // the GC IP major version it serves (gfx_target_version / 10000)
  Register pgm_lo, pgm_rsrc1, pgm_rsrc3, tmpring_size, dispatch_scratch_base_lo, restart_x, user_data_0, resource_limits, start_x;
  Register hdp_flush_req, hdp_flush_done;                                                // NBIO: the HDP flush handshake of a memory barrier
  Field tmpring_waves, tmpring_wavesize;                                                 // COMPUTE_TMPRING_SIZE
  Field initiator_compute_shader_en, initiator_force_start_at_000, initiator_cs_w32_en;  // COMPUTE_DISPATCH_INITIATOR
};

// The table for a gfx_target_version (110000 for gfx1100); throws Error naming the generations there are.
const ComputeRegisters& compute_registers(uint32_t gfx_target_version);

}  // namespace ugpu::hw::amd
