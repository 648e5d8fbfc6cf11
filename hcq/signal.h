// Signals: 16-byte slots in memory the device and the host both see (docs/design.md §4): the value at +0,
// a timestamp at +8. The device writes them from its queues; the host reads them and waits on them.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/error.h"

namespace ugpu::hcq {

// A wait that ran out of time: names the device, the queue and the value awaited.
class Timeout : public Error {
 public:
  using Error::Error;
};

struct SignalSlot {
  std::atomic<uint64_t> value{0};
  std::atomic<uint64_t> timestamp{0};  // nanoseconds of the device's clock
};
static_assert(sizeof(SignalSlot) == 16 && alignof(SignalSlot) <= 16);

class SignalPool;

// One slot, returned to its pool when the last owner lets go.
class Signal {
 public:
  Signal(SignalSlot* slot, std::shared_ptr<SignalPool> pool, int64_t device_delta = 0) : slot_(slot), pool_(std::move(pool)), delta_(device_delta) {}
  ~Signal();
  Signal(const Signal&) = delete;
  Signal& operator=(const Signal&) = delete;

  uint64_t value() const { return slot_->value.load(std::memory_order_acquire); }
  uint64_t timestamp() const { return slot_->timestamp.load(std::memory_order_acquire); }
  void set(uint64_t v);  // from the host
  // The device's address of the slot: the host's, unless the memory sits elsewhere for the device
  // (a driver that cannot place the host mapping at the device address).
  uint64_t address() const { return reinterpret_cast<uint64_t>(slot_) + static_cast<uint64_t>(delta_); }
  SignalSlot* slot() const { return slot_; }

 private:
  SignalSlot* slot_;
  std::shared_ptr<SignalPool> pool_;
  int64_t delta_;
};
using SignalRef = std::shared_ptr<Signal>;

// Slots carved from 4 KiB pages; a freed slot is reused. The pages live as long as any signal.
class SignalPool : public std::enable_shared_from_this<SignalPool> {
 public:
  // page(): a 4096-byte, 16-byte aligned block the device can write, kept alive by `owner`, at
  // `device` for the device (0: the host address); by default host memory.
  struct Page {
    void* host = nullptr;
    std::shared_ptr<void> owner;
    uint64_t device = 0;
  };
  using PageSource = std::function<Page()>;
  // `wrote`: called after each host write to a slot (the value), for memory whose host view is a copy.
  using WriteHook = std::function<void(const void*, size_t)>;
  static std::shared_ptr<SignalPool> create(PageSource page = {}, WriteHook wrote = {}) {
    return std::shared_ptr<SignalPool>(new SignalPool(std::move(page), std::move(wrote)));
  }
  SignalRef make(uint64_t initial = 0);
  size_t free_slots() const;

 private:
  friend class Signal;
  SignalPool(PageSource page, WriteHook wrote) : page_(std::move(page)), wrote_(std::move(wrote)) {}
  void release(SignalSlot* s);
  PageSource page_;
  WriteHook wrote_;
  mutable std::mutex mu_;
  std::vector<std::shared_ptr<void>> pages_;
  std::vector<std::pair<uintptr_t, int64_t>> deltas_;  // page host address -> device delta (pages that have one)
  std::vector<SignalSlot*> free_;
  int64_t delta_of(const SignalSlot* s) const;
};

}  // namespace ugpu::hcq
