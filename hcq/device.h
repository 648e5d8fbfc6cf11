// The device-agnostic part of every device (docs/design.md §4): signals and the timeline, host waits with
// a progress-aware timeout, buffers, copies through staging memory, synchronize, and the error state
// a fault or hang leaves behind. A driver supplies queues, memory and the submission itself.
#pragma once
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "hcq/allocator.h"
#include "hcq/queue.h"
#include "hcq/signal.h"

namespace ugpu::codegen {
struct CompiledKernel;  // the driver that loads one includes codegen; hcq itself does not
}

namespace ugpu::hcq {

class Profiler;

// A device that faulted or hung refuses further work with this error until it is recovered.
class DeviceError : public Error {
 public:
  using Error::Error;
};

// Device memory. `va` is the address kernels and queues use; on paths with unified addressing it is
// also the host address of `host` (null where the host cannot see the memory).
struct Buffer {
  uint64_t va = 0;
  size_t size = 0;
  void* host = nullptr;
  std::shared_ptr<void> owner;  // frees the memory when the last copy of the Buffer goes
};

// A loaded kernel. Argument layout: `buffers` addresses, then `vars` values, one 64-bit slot each
// (8-byte aligned), unless the program gives its own (`arg_layout`: where each argument goes in
// `kernarg_bytes` of argument memory, 4 or 8 bytes, as the GPU ABI lays them out). Programs are held
// by shared_ptr: a queue that runs one keeps it alive.
class Program : public std::enable_shared_from_this<Program> {
 public:
  virtual ~Program() = default;
  std::string name;
  int buffers = 0, vars = 0;
  struct ArgSlot {
    uint32_t offset, bytes;
  };
  std::vector<ArgSlot> arg_layout;
  uint32_t kernarg_bytes = 0;
  // The variables' values as an exec wrote them into its argument memory (4-byte slots sign-extended):
  // what a driver computes a launch's geometry from.
  std::vector<int64_t> recorded_vars(const Kernargs& k) const;
};

struct MemoryStats {
  size_t chunks = 0, chunk_bytes = 0;   // driver mappings the heap carves
  size_t heap_used = 0;                 // bytes of heap blocks in use
  size_t cached = 0, cached_bytes = 0;  // freed large buffers kept for reuse
  size_t large_bytes = 0;               // driver mappings of large buffers: in use, cached, or freed with work pending
  size_t peak_bytes = 0;                // the most chunk_bytes + large_bytes held at once
  uint64_t cache_hits = 0, driver_allocs = 0;
};

// What `ugpu devices` shows.
struct DeviceInfo {
  std::string kind;       // "cpu", "gpu", "emulated gpu"
  std::string arch;       // "x86_64", "gfx1100", "sm_90"
  std::string interface;  // how ugpu reaches it: "host threads", "kfd", "nvidia rm", "vfio" ...
  uint64_t memory = 0;    // bytes
};

class Device {
 public:
  explicit Device(std::string name);
  virtual ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  const std::string& name() const { return name_; }
  virtual std::unique_ptr<HWQueue> compute_queue() = 0;
  virtual std::unique_ptr<HWQueue> copy_queue() { return compute_queue(); }
  // A separate copy engine with its own ring (an SDMA / copy-engine queue); when false,
  // copy_queue() shares the compute ring and its commands run in order with the compute queue's.
  virtual bool copy_ring_separate() const { return false; }
  // Device memory. Blocks up to heap_block_max_ (4 MiB) are carved by a TLSF allocator out of
  // chunks (heap_chunk_, 64 MiB) the driver maps; bigger ones are the driver's own mappings, and when
  // freed they are kept in an LRU cache (cache_limit_, 256 MiB) for an allocation of the same size. Freed
  // memory is reused only after the timeline has passed the work submitted before the free.
  Buffer alloc(size_t bytes);
  MemoryStats memory_stats() const;
  void trim();  // hands cached and free chunk memory back to the driver
  // The most memory of freed large buffers kept for reuse (256 MiB by default), for buffers allocated
  // after the call (set it before allocating, from the thread that allocates). A larger buffer, or
  // one pushed out, goes back to the driver once the work submitted before its free has finished.
  void set_cache_limit(size_t bytes) { cache_limit_ = bytes; }
  virtual DeviceInfo info() const = 0;

  // Kernels: the codegen target this device runs (find_target name), and loading a compiled one.
  virtual std::string target() const = 0;
  virtual std::shared_ptr<Program> load(std::shared_ptr<const codegen::CompiledKernel> kernel) = 0;

  // Argument memory for exec(), from a ring in device memory (docs/design.md §4). A block belongs to
  // its queue until the queue is gone and the device has consumed the queue's last submission; the
  // ring skips blocks still held and waits (back-pressure) for blocks whose last use is in flight.
  Kernargs alloc_kernargs(size_t bytes);
  void release_kernargs(const Kernargs& k, uint64_t position);  // position 0: never submitted
  KernargStats kernarg_stats() const;
  // Submits that waited for space on a command ring (back-pressure instead of an overrun), all rings together.
  virtual uint64_t ring_waits() const = 0;
  void set_kernarg_ring_size(size_t bytes) { kernarg_ring_size_ = bytes; }  // before the first exec

  // Profiling: while a profiler is attached, queues recorded afterwards time each exec and copy
  // with device timestamps; the events reach the profiler once the device has executed them
  // (collected at synchronize(), and before a timed queue is resubmitted). Attach or detach it
  // while no other thread is recording queues on this device.
  void set_profiler(std::shared_ptr<Profiler> p);
  Profiler* profiler() const { return profiler_.get(); }
  void collect_profile(bool wait_all = false);  // wait_all: for every timed submission (synchronize)
  // Device clock ticks to host steady_clock nanoseconds. The default measures the offset once
  // (host time around a submitted timestamp) and scales by clock_hz(); a device whose clock is the
  // host's overrides it.
  virtual uint64_t clock_hz() const { return 1000000000; }
  virtual int64_t host_time_ns(uint64_t ticks);

  SignalRef new_signal(uint64_t value = 0) { return pool_->make(value); }

  // Emulated GPUs: the instructions their executor has run so far (wave instructions on emu:amd, warp
  // instructions on emu:nv), the benchmarks' measure of code quality; none on real devices.
  std::optional<uint64_t> executed_instructions() const { return instruction_counter_ ? std::optional(instruction_counter_()) : std::nullopt; }
  void set_instruction_counter(std::function<uint64_t()> f) { instruction_counter_ = std::move(f); }

  // The timeline: work submitted through launch()/copies signals it with increasing values.
  // next_timeline() hands out the value for the next piece of work; the timeline rolls over to a
  // fresh signal before 2^31 (hardware compares 32 bits), after waiting for everything before.
  Signal& timeline() const { return *timeline_cur_.load(std::memory_order_acquire); }
  uint64_t next_timeline();
  uint64_t last_timeline() const { return next_ - 1; }
  void set_rollover_for_test(uint64_t next_value, uint64_t rollover_at);

  // Waits until s >= value. The timeout (default 30 s, $UGPU_WAIT_TIMEOUT_MS) restarts whenever the
  // value moves; when it runs out the device is marked failed and Timeout names what was awaited.
  void wait(const Signal& s, uint64_t value, const std::string& what, std::chrono::milliseconds timeout = {});
  void synchronize();  // every submitted piece of work has finished (or Timeout)
  // The longest wait: 10^9 ms (11.6 days), so a deadline `now + timeout` stays inside the clock's range.
  static constexpr std::chrono::milliseconds kMaxTimeout{1'000'000'000};
  std::chrono::milliseconds default_timeout() const { return timeout_; }
  void set_default_timeout(std::chrono::milliseconds t) {
    timeout_ = std::clamp<std::chrono::milliseconds>(t, std::chrono::milliseconds(1), kMaxTimeout);
  }

  // Host memory the device reaches directly (pinned, in CUDA's words): copies to and from it need no
  // staging. What the staging buffers are made of; the CPU device and by default: device memory.
  Buffer alloc_host(size_t bytes) { return alloc_staging(bytes); }
  // Copies between host memory and a buffer in chunks through staging buffers (any size, any
  // alignment); ranges outside the buffer are refused.
  void copy_in(const Buffer& dst, size_t offset, std::span<const uint8_t> src);
  void copy_out(std::span<uint8_t> dst, const Buffer& src, size_t offset);

  bool failed() const;
  std::string error() const;
  void check_usable() const;  // throws DeviceError once failed
  // Brings a failed device back: the driver resets its queues and the device takes work again. Work
  // that was in flight is lost (the timeline moves past it; its buffers keep whatever it wrote). A
  // device whose path cannot recover throws DeviceError saying so (open it again instead). No-op when
  // the device has not failed.
  void recover();

  // Driver entry points.
  // Puts q (or an indirect command to it) on its ring; returns a position that wait_consumed()
  // takes to wait until the device has finished reading (and executing) that submission. Positions
  // of one ring grow; a device with several rings tells them apart inside the position.
  virtual uint64_t submit_commands(HWQueue& q) = 0;
  virtual bool consumed(uint64_t position) const = 0;
  // Waits until consumed(position), sleeping on progress; after the wait timeout the device fails
  // and Timeout names work_in_flight().
  virtual void wait_consumed(uint64_t position);
  virtual std::string work_in_flight() { return "the submitted work"; }  // "kernel NAME", for messages
  // Keeps `what` (argument or command memory of a queue that is gone) until the device has consumed
  // the ring up to `position`.
  void keep_until(uint64_t position, std::shared_ptr<void> what);
  virtual std::shared_ptr<uint32_t[]> command_memory(size_t dwords) = 0;  // device memory for bind()
  // The host wrote [host, host + bytes) of device memory through its host pointer (argument blocks,
  // bound commands, signals). A driver whose host pointers are copies of the memory (the GPU behind
  // the USB bridge, which the host cannot map) sends the bytes on; for the others it is a no-op.
  virtual void host_wrote(const void* /*host*/, size_t /*bytes*/) {}

 protected:
  virtual Buffer alloc_memory(size_t bytes) = 0;  // the driver's mapping: zeroed, 4 KiB aligned at least
  // Memory for the staging buffers of copy_in/copy_out: by default device memory from alloc(); a GPU
  // driver gives host memory the GPU can reach (system RAM is where the copy engine reads fastest).
  virtual Buffer alloc_staging(size_t bytes) { return alloc(bytes); }
  // Memory for kernel arguments, which the host writes through `host`: by default device memory.
  virtual Buffer alloc_argument_memory(size_t bytes) { return alloc(bytes); }
  // Zeroes memory the host cannot reach (host null) before alloc() hands it out; by default with
  // copy_in.
  virtual void clear(const Buffer& b);
  // copy_in / copy_out once the range is checked: through the staging buffers by default; a driver
  // whose copies take another path (the USB bridge's windows) overrides both.
  virtual void copy_in_at(uint64_t va, std::span<const uint8_t> src);
  virtual void copy_out_at(std::span<uint8_t> dst, uint64_t va);
  size_t heap_chunk_ = 64 << 20, heap_block_max_ = 4 << 20, cache_limit_ = 256 << 20;
  virtual void sleep_for_progress(std::chrono::microseconds max);  // default: a short sleep
  // Marks the device failed (the first reason sticks) and calls on_fail(), where a driver stops
  // what is still running (resets its queues).
  void fail(const std::string& why);
  virtual void on_fail() {}
  // recover()'s driver part: false when this device cannot bring its queues back.
  virtual bool recover_queues() { return false; }
  // Signals live in memory from `page(4096)` (memory the device can write) instead of host memory.
  // A driver calls it in its constructor, before handing out any signal.
  // `wrote`: told of every host write to a signal (see host_wrote).
  void use_signal_memory(std::function<Buffer(size_t)> page, std::function<void(const void*, size_t)> wrote = {});
  size_t staging_size_ = 2 << 20;
  int staging_count_ = 4;

 private:
  std::function<uint64_t()> instruction_counter_;
  struct Staging {
    Buffer buf;
    uint64_t done_at = 0;  // timeline value after which it is free
  };
  void make_staging();               // on first use, so a device that never copies allocates none
  Buffer take_memory(size_t bytes);  // alloc() but for zeroing memory the host does not reach
  friend class HWQueue;
  struct PendingProfile {
    uint64_t position;
    std::vector<TimedCommand> timed;
  };
  void add_pending_profile(uint64_t position, const std::vector<TimedCommand>& timed);
  std::string name_;
  std::shared_ptr<SignalPool> pool_;
  SignalRef timeline_, shadow_;
  std::atomic<Signal*> timeline_cur_{nullptr};  // timeline_, readable from any thread
  std::atomic<uint64_t> next_{1};
  uint64_t rollover_at_ = uint64_t{1} << 31;
  std::chrono::milliseconds timeout_;
  std::vector<Staging> staging_;
  size_t staging_next_ = 0;
  std::mutex keep_mu_;
  std::vector<std::pair<uint64_t, std::shared_ptr<void>>> kept_;
  mutable std::mutex err_mu_;
  std::string error_;
  struct MemoryState;
  std::shared_ptr<MemoryState> mem_;
  std::atomic<uint64_t> rollovers_{0};
  void open_memory();   // at construction
  void close_memory();  // at destruction: memory freed later goes straight back
  std::mutex kernarg_mu_;
  size_t kernarg_ring_size_ = 1 << 20;
  std::unique_ptr<KernargRing> kernarg_ring_;
  Buffer kernarg_mem_;
  std::mutex profile_mu_;
  std::shared_ptr<Profiler> profiler_;
  std::vector<PendingProfile> pending_profile_;
  bool calibrated_ = false;
  int64_t clock_offset_ns_ = 0;
};

}  // namespace ugpu::hcq
