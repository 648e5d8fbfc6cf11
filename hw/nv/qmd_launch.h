// What a QMD (Queue Meta Data: the compute launch descriptor) says, independent of its version, and
// its encoding into and out of the versioned bitfield tables of qmd.h. The driver encodes a launch
// with encode_qmd; the emulator decodes what it fetched with decode_qmd; `ugpu decode` prints it. A
// value a version cannot express (an address above its field, a size that is not a multiple of the
// field's unit) is an Error, never silently truncated.
#pragma once
#include <array>
#include <cstdint>
#include <span>
#include <string>

#include "hw/nv/qmd.h"

namespace ugpu::hw::nv {

struct QmdLaunch {
  uint64_t program_address = 0;            // first instruction
  uint32_t program_prefetch_bytes = 0;     // 0: no instruction prefetch
  std::array<uint32_t, 3> grid{1, 1, 1};   // CTAs per dimension
  std::array<uint32_t, 3> block{1, 1, 1};  // threads per CTA
  uint32_t shared_bytes = 0;               // shared memory per CTA
  uint32_t sm_shared_config = 0;           // min/target SM shared-memory configuration (KiB/4 + 1)
  uint32_t sm_shared_config_max = 0x1a;
  uint32_t registers = 0;  // per thread
  uint32_t barriers = 1;
  uint32_t local_low_bytes = 0;  // shader local memory per thread
  uint32_t local_high_bytes = 0;
  uint32_t sass_version = 0;  // 0x90 for sm_90
  struct Cbank {
    bool valid = false;
    uint64_t address = 0;
    uint32_t size = 0;  // bytes
  };
  std::array<Cbank, 8> cbanks{};
  struct Release {
    bool enable = false;
    uint64_t address = 0;
    uint64_t payload = 0;
    bool payload64 = false;  // V04+: a 64-bit payload; V03 writes 32 bits
    bool timestamp = true;   // four-word structure: the payload then the timestamp at +8
  };
  std::array<Release, 2> releases{};
  struct Dependent {
    bool enable = false;
    uint64_t qmd_address = 0;  // 256-byte aligned
    bool prefetch = false;
  };
  Dependent dependent{};
  bool invalidate_caches = true;  // texture/shader data/instruction/constant caches before the launch
};

// The layout of a major version (3, 4 or 5); throws Error for others.
const QmdLayout& qmd_layout(unsigned major);
// Which of `accepted` a fetched QMD is: the first whose own version fields (major, minor) hold its
// version. The fields do not sit at the same bits in every version (V05 moved them), so the engine's
// class decides what to try. nullptr: none.
const QmdLayout* qmd_layout_of(std::span<const uint32_t> words, std::span<const QmdLayout* const> accepted);
constexpr unsigned kQmdMaxDwords = 96;

void encode_qmd(const QmdLayout& layout, const QmdLaunch& l, std::span<uint32_t> words);
// Throws Error naming the field for a QMD this code cannot interpret (an unknown version, a
// non-compute QMD type, a field value that makes no sense).
QmdLaunch decode_qmd(const QmdLayout& layout, std::span<const uint32_t> words);
std::string describe_qmd(const QmdLayout& layout, std::span<const uint32_t> words);  // one "name=value" per non-zero field

// What changes between launches of one program — the grid, the block and constant bank 0 — written
// into a copy of a QMD encoded once (encode_qmd of the program's fields): the driver's per-launch path.
// Field lookups are resolved once per layout. Throws Error like encode_qmd for values that do not fit.
void qmd_set_launch(const QmdLayout& layout, std::span<uint32_t> words, const std::array<uint32_t, 3>& grid, const std::array<uint32_t, 3>& block,
                    uint64_t cbank0_address, uint32_t cbank0_size);

// Points a QMD at the one to start when it completes (QMD chaining): dependent QMD 0, SCHEDULE.
void qmd_set_dependent(const QmdLayout& layout, std::span<uint32_t> words, uint64_t next_qmd);

// Field access by name on a raw QMD (the names of qmd.h's tables); throws Error for an unknown name or
// a value that does not fit the field.
void qmd_set_named(const QmdLayout& layout, std::span<uint32_t> words, const char* field, uint64_t value);
uint64_t qmd_get_named(const QmdLayout& layout, std::span<const uint32_t> words, const char* field);

}  // namespace ugpu::hw::nv
