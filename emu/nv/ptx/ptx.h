// The PTX executor of the emulated NVIDIA GPU (emu:nv). The emulated GPU's program image is PTX text
// instead of SASS (SASS is undocumented); everything around it — the QMD that launches it, constant
// bank 0 holding its parameters, shared and local memory, faults — is the hardware's path. It runs the
// PTX that LLVM's NVPTX backend emits: thread blocks of warps on host threads, shared memory per block,
// bar.sync, special registers, parameters read from constant bank 0, and every global access checked
// through the emulated GPU's address space (an unmapped address is a fault naming it).
#pragma once
#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "emu/memory.h"

namespace ugpu::emu::nv {

struct PtxModule;  // a parsed PTX module: its entries, ready to run

struct PtxParam {
  std::string name;
  uint32_t offset = 0, size = 0, align = 0;  // within the parameter block
};

struct PtxEntry {
  std::string name;
  std::vector<PtxParam> params;
  uint32_t param_bytes = 0;          // size of the parameter block (last offset + size)
  uint32_t static_shared_bytes = 0;  // .shared variables declared in the entry or the module
  uint32_t local_bytes = 0;          // .local variables per thread
};

// Module-scope .global and .const variables (LLVM's switch tables and constant arrays, `__device__`
// data) live in one image the module brings along: the .const variables first, in [0, const_bytes)
// (read-only), then the .global ones. Whoever loads the module places the image in GPU memory at an
// address aligned to `align` (emu:nv does it when it first runs the program), fills it with
// write_ptx_data, and passes that address as PtxLaunch::data_address; `mov` of a variable, and an
// access through its name, give that address plus the variable's offset (which is also its generic
// address: cvta.global and cvta.const leave it as it is).
struct PtxVariable {
  std::string name;
  bool constant = false;  // .const (else .global)
  uint64_t offset = 0, size = 0;
};
struct PtxData {
  uint64_t bytes = 0;        // the image; 0 when the module declares no .global/.const variable
  uint64_t const_bytes = 0;  // the .const part, a multiple of 4096 (the .global part starts there)
  uint64_t align = 1;
  std::vector<PtxVariable> variables;
};

// Parses a whole module. Throws ugpu::Error "PTX line N: ..." naming the line and what is wrong (a
// syntax error, an unknown directive, an instruction or type the executor does not implement) — an
// unimplemented instruction is refused here, before anything runs.
std::shared_ptr<const PtxModule> parse_ptx(std::string_view text);
const std::vector<PtxEntry>& entries(const PtxModule& m);
const PtxData& data(const PtxModule& m);
// Writes the initial values of the module's variables into `image` (data(m).bytes bytes, zeroed by the
// caller) for an image placed at GPU address `address`: initializers that hold a variable's address
// (`.u64 p = generic(tbl)`) get the address it has there. Bytes no initializer covers are left alone.
void write_ptx_data(const PtxModule& m, uint64_t address, uint8_t* image);

struct PtxLaunch {
  const PtxModule* module = nullptr;
  std::string entry;                       // empty: the module's only entry
  std::array<uint32_t, 3> grid{1, 1, 1};   // blocks per dimension (%nctaid)
  std::array<uint32_t, 3> block{1, 1, 1};  // threads per block (%ntid)
  // Constant bank 0 as the QMD points at it: `ld.param` of the entry's parameter at offset o reads
  // cbank0_address + param_base + o through `memory` (so the parameters are read from GPU memory, as
  // the hardware reads c[0x0][param_base + o]). param_base is the architecture's parameter offset
  // (0x210 on sm_90).
  uint64_t cbank0_address = 0;
  uint32_t cbank0_size = 0;  // reads past it are faults
  uint32_t param_base = 0x210;
  uint64_t data_address = 0;            // where the module's .global/.const image lies in `memory` (see PtxData)
  uint32_t shared_bytes = 0;            // shared memory per block; must cover the static .shared
  uint32_t local_bytes_per_thread = 0;  // must cover the entry's .local
  // Generic addresses inside these windows address the block's shared memory / the thread's local
  // memory (cvta.shared / cvta.local produce them); any other generic address is global.
  uint64_t shared_window = 0x7293'0000'0000ull, local_window = 0x7294'0000'0000ull;
  Memory* memory = nullptr;
};

struct PtxFault {
  enum class Kind { Memory, Illegal, Interrupted };
  Kind kind = Kind::Memory;
  std::array<uint32_t, 3> block{}, thread{};
  int line = 0;             // PTX source line of the faulting instruction
  std::string instruction;  // its text
  uint64_t address = 0;     // memory faults: the first faulting address
  Access access = Access::Read;
  std::string space;    // "global", "shared", "local", "param", "const"
  std::string message;  // one sentence naming all of the above
};

struct PtxRunOptions {
  unsigned threads = 0;                          // host threads; 0 = hardware concurrency
  const std::atomic<bool>* interrupt = nullptr;  // when it becomes true, the run stops with Kind::Interrupted
};

struct PtxRunResult {
  std::optional<PtxFault> fault;  // the first fault; the launch stopped there
  uint64_t instructions = 0;      // warp instructions executed
  uint64_t blocks_run = 0;
};

// Throws ugpu::Error for launches that are wrong before anything runs (no such entry, a block of more
// than 1024 threads, shared or local memory smaller than the entry declares, no memory, no data_address
// for an entry that uses the module's variables).
PtxRunResult run_ptx(const PtxLaunch& launch, const PtxRunOptions& options = {});

}  // namespace ugpu::emu::nv
