// The host CPU as an HCQ device (docs/design.md §5: `cpu`). Its queues are encoded as dword commands
// (below) and pushed onto a ring that a command-processor thread executes in order, honouring waits
// and signals in memory like a GPU's CP; a kernel's launch is spread over worker threads, each running
// a contiguous piece of the outermost GLOBAL axis (codegen/llvm/host.h). The ring is never overrun: a
// submit waits for the processor to free space.
//
// A kernel that never ends is this device's GPU hang. When the device fails (a wait timed out) or
// is destroyed, threads still inside kernels are interrupted: a signal (SIGRTMIN+4, whose handler
// this device installs) makes them leave the kernel code, like a queue reset on a GPU. The device is
// then in its error state and takes no more work.
//
// A kernel's memory fault is this device's GPU page fault. Every mapping of device memory has an
// inaccessible guard page on either side; a SIGSEGV or SIGBUS on a thread inside kernel code (the
// handler this device installs, chaining to the one before it for every other fault) makes that
// thread leave the kernel, and the launch fails the device with the address and the kernel's name,
// the process alive. It catches accesses to unmapped addresses and to the guard pages; it cannot catch
// an access that lands in other memory of the process, or in another buffer of the same 64 MiB heap
// chunk (small buffers share chunks, as on the GPUs).
#pragma once
#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <thread>
#include <vector>

#include "codegen/compiler.h"
#include "codegen/llvm/host.h"
#include "hcq/device.h"

namespace ugpu::cpu {

// Command encoding: a header dword (opcode | total dwords << 8), then 64-bit fields as two dwords.
enum class Cmd : uint8_t { Wait = 1, Signal, Timestamp, Barrier, Exec, Copy, Indirect, Wrap };

class CpuProgram : public hcq::Program {
 public:
  explicit CpuProgram(std::shared_ptr<const codegen::CompiledKernel> k);
  const codegen::HostFunction& function() const { return fn_; }
  int64_t split() const { return split_; }  // iterations of the axis cut across workers
  const codegen::CompiledKernel& compiled() const { return *ck_; }

 private:
  std::shared_ptr<const codegen::CompiledKernel> ck_;
  codegen::HostFunction fn_;
  int64_t split_ = 1;
};

class CpuDevice : public hcq::Device {
 public:
  // workers = 0: one per hardware thread. ring_dwords: size of each command ring (tests use tiny
  // ones). copy_engine: copy queues get their own ring and processor thread, as a GPU's copy engine
  // (SDMA, CE); such a queue runs no kernels.
  explicit CpuDevice(int workers = 0, size_t ring_dwords = 1 << 16, bool copy_engine = false);
  ~CpuDevice() override;

  std::unique_ptr<hcq::HWQueue> compute_queue() override;
  std::unique_ptr<hcq::HWQueue> copy_queue() override;
  bool copy_ring_separate() const override { return engines_.size() > 1; }
  hcq::DeviceInfo info() const override;
  std::string target() const override { return "x86"; }
  std::shared_ptr<hcq::Program> load(std::shared_ptr<const codegen::CompiledKernel> kernel) override;
  int64_t host_time_ns(uint64_t ticks) override { return static_cast<int64_t>(ticks); }  // the host's clock
  uint64_t submit_commands(hcq::HWQueue& q) override;
  void wait_consumed(uint64_t position) override;
  bool consumed(uint64_t position) const override;
  std::shared_ptr<uint32_t[]> command_memory(size_t dwords) override;
  int workers() const { return static_cast<int>(workers_.size()) + 1; }
  uint64_t ring_waits() const override;

 protected:
  hcq::Buffer alloc_memory(size_t bytes) override;
  void sleep_for_progress(std::chrono::microseconds max) override;
  void on_fail() override { interrupt_kernels(); }

 private:
  // One ring and the thread that executes it. A position is the ring's write pointer after a
  // submission (dwords ever written), with the engine's index in the top byte.
  struct Engine {
    explicit Engine(size_t dwords) : ring(dwords) {}
    std::vector<uint32_t> ring;
    std::atomic<uint64_t> wptr{0}, rptr{0};  // dwords written / consumed, ever
    std::mutex submit_mu;
    std::thread cp;
    std::atomic<uint64_t> waits{0};
  };
  static constexpr int kEngineShift = 56;
  void processor(Engine& e);
  void execute(const uint32_t* c, bool in_ring);
  void run_exec(const CpuProgram& p, const uint64_t* args);
  // The first memory fault of a launch: where, and how (the signal's si_code).
  struct Fault {
    std::mutex mu;
    bool happened = false;
    uint64_t address = 0;
    int code = 0;
  };
  bool call_kernel(const CpuProgram& p, const uint64_t* args, int64_t part, int64_t parts, Fault& fault);  // false: interrupted or faulted
  std::string describe_address(uint64_t a) const;
  void interrupt_kernels();
  void worker_loop();
  uint64_t push(size_t engine, std::span<const uint32_t> cmds);  // returns the submission's position
  void wait_read(uint64_t position, const std::string& why);     // until the processor has read up to position

  std::vector<std::unique_ptr<Engine>> engines_;  // [0] compute, [1] copy (when separate)
  std::mutex mu_;
  std::condition_variable doorbell_, progress_;
  std::atomic<bool> stop_{false}, abort_{false};
  std::mutex running_mu_;
  std::vector<pthread_t> running_;  // threads inside kernel code now
  // The device memory mappings (start -> bytes), for naming what a faulting address was near. Shared
  // with the buffers' deleters, which may run after the device is gone.
  struct Mappings {
    std::mutex mu;
    std::map<uint64_t, size_t> by_start;
  };
  std::shared_ptr<Mappings> mappings_ = std::make_shared<Mappings>();

  // Worker pool for launches: one Job per launch, its parts taken by whoever is free.
  struct Job {
    const CpuProgram* program;
    const uint64_t* args;
    int64_t parts;
    std::atomic<int64_t> next{0}, left{0};
    Fault fault;
  };
  bool run_parts(Job& j);  // true if this call finished the job's last part
  std::vector<std::thread> workers_;
  std::mutex job_mu_;
  std::condition_variable job_cv_, job_done_;
  std::shared_ptr<Job> job_;
  uint64_t job_gen_ = 0;
};

}  // namespace ugpu::cpu
