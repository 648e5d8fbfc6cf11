// HWQueue (docs/design.md §4): commands recorded in the device's own encoding (dwords), with patch
// slots for values that change between submissions. A value is a constant or `var(i) + c`; each
// submit() supplies the variables and rewrites only the slots whose value changed. bind() moves the
// commands into device memory, after which a submission is one indirect command and patches are
// written there in place. Before a submit changes any slot, it waits until the device has finished
// the previous submission of this queue, which may still be reading the old values (bound commands
// and argument memory are shared by all submissions).
#pragma once
#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "hcq/allocator.h"
#include "hcq/signal.h"

namespace ugpu::hcq {

class Device;
class Program;

struct Val {
  uint64_t constant = 0;
  int var = -1;                         // >= 0: the value is vars[var] + constant
  Val(uint64_t c = 0) : constant(c) {}  // NOLINT: constants convert
  static Val variable(int id, uint64_t plus = 0) {
    Val v(plus);
    v.var = id;
    return v;
  }
};

// An exec or copy timed for the profiler: timestamps before and after it.
struct TimedCommand {
  std::string name;
  bool copy = false;
  SignalRef start, end;
};

class HWQueue {
 public:
  explicit HWQueue(Device& dev) : dev_(dev) {}
  virtual ~HWQueue();  // memory the device may still read is handed to it (Device::keep_until)
  HWQueue(const HWQueue&) = delete;
  HWQueue& operator=(const HWQueue&) = delete;

  HWQueue& wait(const Signal& s, Val value);    // until s >= value
  HWQueue& signal(const Signal& s, Val value);  // s = value, after everything before it
  HWQueue& timestamp(const Signal& s);          // s.timestamp = the device clock
  // The same with the signal's address as a value, so a bound queue can be pointed at another
  // signal per submit (a graph follows the device timeline across rollovers this way).
  HWQueue& wait_at(Val signal_address, Val value);
  HWQueue& signal_at(Val signal_address, Val value);
  HWQueue& memory_barrier();  // earlier writes visible to later commands and the host
  // Runs `p` with its arguments (buffer addresses, then variable values, in Program::params order).
  // The queue keeps `p` alive (it must be held by a shared_ptr).
  HWQueue& exec(const Program& p, std::span<const Val> args);
  HWQueue& copy(Val dst, Val src, uint64_t bytes);  // device addresses; ranges must not overlap

  void bind();  // the commands move to device memory; later submits are one indirect command
  void submit(std::span<const uint64_t> vars = {});
  bool bound() const { return bound_ != nullptr; }
  std::span<const uint32_t> commands() const { return bound_ ? std::span<const uint32_t>(bound_, size_) : std::span<const uint32_t>(cmds_); }
  Device& device() const { return dev_; }
  size_t patch_writes() const { return patch_writes_; }  // slots rewritten by submits so far

 protected:
  // The encoders: each appends one command with put32/put64.
  virtual void emit_wait(Val signal_address, Val value) = 0;
  virtual void emit_signal(Val signal_address, Val value) = 0;
  virtual void emit_timestamp(Val signal_address) = 0;
  virtual void emit_memory_barrier() = 0;
  virtual void emit_exec(const Program& p, const Kernargs& args) = 0;
  virtual void emit_copy(Val dst, Val src, uint64_t bytes) = 0;

  // An exec the profiler does not time on its own: a driver's helper kernel inside another command
  // (a copy done by a kernel on a queue without a copy engine).
  void exec_untimed(const Program& p, std::span<const Val> args);
  // A copy by the driver's byte-copy kernel `copy` (codegen::kByteCopyKernel: dst, src, n), in pieces
  // its 32-bit count holds.
  void copy_by_kernel(const Program& copy, Val dst, Val src, uint64_t bytes);
  void put32(uint32_t v) { cmds_.push_back(v); }
  void put64(Val v);  // two dwords, low first; a variable becomes a patch slot
  // One dword: bits [shift, shift + 32) of the value (a variable becomes a one-dword patch slot).
  void put32_of(Val v, unsigned shift = 0);
  size_t recorded() const { return cmds_.size(); }  // dwords recorded so far
  uint32_t* bound_ = nullptr;

 private:
  friend class Device;
  void record_exec(const Program& p, std::span<const Val> args, bool time);
  template <class F>
  void timed(const std::string& name, bool copy, F emit);  // emit(), between timestamps while profiling
  struct Patch {
    uint32_t* mem;  // null: the command stream, at `at` dwords (wherever it lives now)
    size_t at;
    Val value;
    uint64_t last;
    bool written;
    uint8_t dwords = 2, shift = 0;  // one dword holds bits [shift, shift + 32) of the value
  };
  Device& dev_;
  std::vector<uint32_t> cmds_;
  std::vector<Patch> patches_;
  std::vector<Kernargs> kernargs_;                        // from the device's kernarg ring
  std::vector<std::shared_ptr<const Program>> programs_;  // kept alive while this queue may run them
  std::vector<TimedCommand> timed_;
  std::shared_ptr<void> bound_mem_;
  bool flushed_ = false;  // host_wrote() has seen the argument blocks and bound commands
  size_t size_ = 0;
  size_t patch_writes_ = 0;
  uint64_t last_submit_ = 0;  // ring position of the previous submission (0: none)
};

}  // namespace ugpu::hcq
