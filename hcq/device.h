// The device-agnostic part of every device (DESIGN.md §4): signals and the timeline, host waits with
// a progress-aware timeout, buffers, copies through staging memory, synchronize, and the error state
// a fault or hang leaves behind. A driver supplies queues, memory and the submission itself.
#pragma once
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "hcq/queue.h"
#include "hcq/signal.h"

namespace ugpu::hcq {

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

// A loaded kernel: its arguments are `buffers` addresses, then `vars` values (64-bit slots).
class Program {
 public:
  virtual ~Program() = default;
  std::string name;
  int buffers = 0, vars = 0;
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
  virtual Buffer alloc(size_t bytes) = 0;

  SignalRef new_signal(uint64_t value = 0) { return pool_->make(value); }

  // The timeline: work submitted through launch()/copies signals it with increasing values.
  // next_timeline() hands out the value for the next piece of work; the timeline rolls over to a
  // fresh signal before 2^31 (hardware compares 32 bits), after waiting for everything before.
  Signal& timeline() { return *timeline_; }
  uint64_t next_timeline();
  uint64_t last_timeline() const { return next_ - 1; }
  void set_rollover_for_test(uint64_t next_value, uint64_t rollover_at);

  // Waits until s >= value. The timeout (default 30 s, $UGPU_WAIT_TIMEOUT_MS) restarts whenever the
  // value moves; when it runs out the device is marked failed and Timeout names what was awaited.
  void wait(const Signal& s, uint64_t value, const std::string& what, std::chrono::milliseconds timeout = {});
  void synchronize();  // every submitted piece of work has finished (or Timeout)
  std::chrono::milliseconds default_timeout() const { return timeout_; }
  void set_default_timeout(std::chrono::milliseconds t) { timeout_ = t; }

  // Copies between host memory and a buffer in chunks through staging buffers (any size, any
  // alignment); ranges outside the buffer are refused.
  void copy_in(const Buffer& dst, size_t offset, std::span<const uint8_t> src);
  void copy_out(std::span<uint8_t> dst, const Buffer& src, size_t offset);

  bool failed() const;
  std::string error() const;
  void check_usable() const;  // throws DeviceError once failed

  // Driver entry points.
  // Puts q (or an indirect command to it) on the ring; returns a position that wait_consumed()
  // takes to wait until the device has finished reading (and executing) that submission.
  virtual uint64_t submit_commands(HWQueue& q) = 0;
  virtual void wait_consumed(uint64_t position) = 0;
  virtual uint64_t consumed_position() const = 0;
  // Keeps `what` (argument or command memory of a queue that is gone) until the device has consumed
  // the ring up to `position`.
  void keep_until(uint64_t position, std::shared_ptr<void> what);
  virtual std::shared_ptr<uint32_t[]> command_memory(size_t dwords) = 0;  // device memory for bind()
 protected:
  virtual void sleep_for_progress(std::chrono::microseconds max);  // default: a short sleep
  void fail(const std::string& why);
  size_t staging_size_ = 2 << 20;
  int staging_count_ = 4;

 private:
  struct Staging {
    Buffer buf;
    uint64_t done_at = 0;  // timeline value after which it is free
  };
  void make_staging();  // on first use, so a device that never copies allocates none
  std::string name_;
  std::shared_ptr<SignalPool> pool_;
  SignalRef timeline_, shadow_;
  uint64_t next_ = 1, rollover_at_ = uint64_t{1} << 31;
  std::chrono::milliseconds timeout_;
  std::vector<Staging> staging_;
  size_t staging_next_ = 0;
  std::mutex keep_mu_;
  std::vector<std::pair<uint64_t, std::shared_ptr<void>>> kept_;
  mutable std::mutex err_mu_;
  std::string error_;
};

}  // namespace ugpu::hcq
