// Shared by the files of the NVIDIA driver: the device, its channels, queues and programs.
#pragma once
#include <atomic>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "codegen/code_object.h"
#include "codegen/compiler.h"
#include "drivers/nv/interface.h"
#include "drivers/nv/nv_device.h"
#include "hcq/in_flight.h"
#include "hw/nv/methods.h"
#include "hw/nv/qmd_launch.h"
#include "sys/mmio.h"

namespace ugpu::nv {

class NvDevice;

// Per-architecture launch facts the cubin does not carry.
struct ArchFacts {
  const char* arch;              // "sm_90"
  uint32_t param_base;           // where kernel parameters start in constant bank 0
  uint32_t max_shared_kib;       // the largest SM shared-memory configuration
  uint32_t cbank0_prefix_words;  // driver words before the parameters that ugpu fills
};
const ArchFacts& arch_facts(const std::string& arch);  // throws Error for an arch ugpu does not know

// A kernel loaded into GPU memory, and the QMD fields every launch of it shares.
class NvProgram : public hcq::Program {
 public:
  NvProgram(NvDevice& dev, std::shared_ptr<const codegen::CompiledKernel> k);
  std::shared_ptr<const codegen::CompiledKernel> kernel;
  hcq::Buffer code;
  uint32_t param_base = 0;    // parameters in constant bank 0
  uint32_t cbank0_bytes = 0;  // driver prefix + parameters, 16-byte multiple
  uint32_t local_bytes = 0;   // shader local memory per thread (0: none)
  uint32_t registers = 0;
  hw::nv::QmdLaunch launch;                       // everything but the grid, the block and constant bank 0
  std::vector<uint32_t> qmd_template;             // `launch` encoded once; a launch patches in its grid, block and bank 0
  std::optional<codegen::LaunchDims> fixed_dims;  // when the launch geometry depends on no variable
};

// One GPFIFO channel with its pushbuffer ring.
struct Channel {
  bool copy = false;
  uint32_t token = 0;
  uint64_t* gpfifo = nullptr;  // host view of the GPFIFO ring
  uint64_t gpfifo_va = 0;
  uint32_t entries = 0;
  hw::nv::Userd* userd = nullptr;
  uint32_t* pb = nullptr;  // the pushbuffer ring unbound queues are copied into
  uint64_t pb_va = 0, pb_dwords = 0;
  uint64_t pb_written = 0;                             // dwords ever written to the pushbuffer ring
  uint64_t gp_written = 0;                             // GPFIFO entries ever written
  uint64_t gp_seen = 0;                                // GPFIFO entries the channel had fetched when GPGet was last read
  std::deque<std::pair<uint64_t, uint64_t>> pb_marks;  // (submission position, pushbuffer dwords written after it)
  std::shared_ptr<void> owner;                         // the way in's side of the channel (its ring, USERD, error reporting)
  std::shared_ptr<NvInterface::Memory> pushbuffer;
  uint64_t pb_freed = 0;               // pushbuffer dwords the GPU is done with, ever
  hcq::SignalRef retired;              // the position of the last finished submission (a semaphore release)
  std::atomic<uint64_t> submitted{0};  // positions handed out
  std::mutex mu;
  hcq::KernelsInFlight kernels;          // what its submissions run, for fault messages
  const uint32_t* last_words = nullptr;  // the last submission's commands (in the ring or bound memory)
  size_t last_dwords = 0;
  std::vector<uint32_t*> last_qmds;
  uint64_t waits = 0;        // submits that waited for GPFIFO or pushbuffer space
  uint64_t gp_read() const;  // GPFIFO entries the channel has fetched, ever
  uint64_t done() const { return retired->value(); }
};

// A queue of this driver: the compute channel's or the copy channel's (queues.cpp).
class NvQueue : public hcq::HWQueue {
 public:
  NvQueue(hcq::Device& dev, bool copy) : HWQueue(dev), copy(copy) {}
  const bool copy;
  std::shared_ptr<std::vector<std::string>> kernels;  // names of the kernels it runs, for fault messages
  std::vector<uint32_t*> qmds;                        // the QMDs it launches (in kernarg memory)
  virtual void invalidate_caches() = 0;
  // SET_OBJECT of the channel's engine on its subchannel (and, for compute, the shared and local
  // memory windows): the first commands a channel runs.
  virtual void bind_engine(uint32_t cls, uint64_t shared_window, uint64_t local_window) = 0;
};
std::unique_ptr<NvQueue> make_compute_queue(NvDevice& dev);
std::unique_ptr<NvQueue> make_copy_queue(NvDevice& dev);
// The methods that record a finished submission: a 64-bit semaphore release of `position`.
void append_retire(std::vector<uint32_t>& out, uint64_t address, uint64_t position);

// The device: everything but the way in (drivers/nv/interface.h), which it owns.
class NvDevice : public hcq::Device {
 public:
  NvDevice(std::unique_ptr<NvInterface> way_in, const NvOptions& o);
  ~NvDevice() override;

  std::unique_ptr<hcq::HWQueue> compute_queue() override { return make_compute_queue(*this); }
  std::unique_ptr<hcq::HWQueue> copy_queue() override { return make_copy_queue(*this); }
  bool copy_ring_separate() const override { return true; }
  uint64_t ring_waits() const override;  // GPFIFO or pushbuffer space, both channels
  hcq::DeviceInfo info() const override { return info_; }
  std::string target() const override { return way_in_->facts().arch; }
  std::shared_ptr<hcq::Program> load(std::shared_ptr<const codegen::CompiledKernel> kernel) override;
  uint64_t submit_commands(hcq::HWQueue& q) override;
  bool consumed(uint64_t position) const override;
  std::string work_in_flight() override;
  std::shared_ptr<uint32_t[]> command_memory(size_t dwords) override;

  // Used by queues and programs.
  const hw::nv::QmdLayout& qmd_layout() const { return *qmd_layout_; }
  const ArchFacts& arch() const { return *arch_facts_; }
  uint32_t sass_version() const { return sass_version_; }
  bool emulator_runs_ptx() const { return opts_.emulator_runs_ptx; }
  const std::vector<uint32_t>& cbank0_prefix() const { return cbank0_prefix_; }
  struct Local {
    uint64_t address = 0, bytes_per_tpc = 0;
  };
  Local local_memory_for(const NvProgram& p);  // grows the shader local memory when p needs more
  const hcq::Program& copy_program();          // the byte-copy kernel behind compute-queue copies
  void invalidate_code();                      // instruction and constant caches, after code was written
  Channel& channel(bool copy) { return copy ? *copy_ : *compute_; }
  NvFacts facts() const { return facts_; }

 protected:
  hcq::Buffer alloc_memory(size_t bytes) override;
  hcq::Buffer alloc_staging(size_t bytes) override;  // the process's own pages: what the copy engine reads fastest
  void sleep_for_progress(std::chrono::microseconds max) override;
  void on_fail() override;

 private:
  std::unique_ptr<Channel> create_channel(bool copy, uint32_t engine_class);
  hcq::Buffer buffer(uint64_t bytes, NvInterface::MemoryKind kind);
  void check_errors();   // turns a channel's reported fault into fail()
  void init_channels();  // SET_OBJECT and the windows

  std::unique_ptr<NvInterface> way_in_;
  hcq::DeviceInfo info_;
  NvFacts facts_;
  const ArchFacts* arch_facts_ = nullptr;
  const hw::nv::QmdLayout* qmd_layout_ = nullptr;
  uint32_t sass_version_ = 0;
  NvOptions opts_;
  std::vector<uint32_t> cbank0_prefix_;
  uint64_t shared_window_ = 0, local_window_ = 0;
  std::unique_ptr<Channel> compute_, copy_;
  std::mutex local_mu_;
  hcq::Buffer local_;
  std::vector<hcq::Buffer> old_local_;
  uint32_t local_per_thread_ = 0;
  uint64_t local_per_tpc_ = 0;
  std::mutex copy_mu_;
  std::shared_ptr<hcq::Program> copy_program_;
  std::atomic<bool> channels_live_{true};
  struct CommandVa {
    std::mutex mu;
    std::map<const void*, uint64_t> va;
  };
  std::shared_ptr<CommandVa> command_va_ = std::make_shared<CommandVa>();
  uint64_t command_address(const uint32_t* host) const;
};

}  // namespace ugpu::nv
