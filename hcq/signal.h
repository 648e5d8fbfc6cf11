// Signals: 16-byte slots in memory the device and the host both see (DESIGN.md §4): the value at +0,
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
  Signal(SignalSlot* slot, std::shared_ptr<SignalPool> pool) : slot_(slot), pool_(std::move(pool)) {}
  ~Signal();
  Signal(const Signal&) = delete;
  Signal& operator=(const Signal&) = delete;

  uint64_t value() const { return slot_->value.load(std::memory_order_acquire); }
  uint64_t timestamp() const { return slot_->timestamp.load(std::memory_order_acquire); }
  void set(uint64_t v) { slot_->value.store(v, std::memory_order_release); }  // from the host
  uint64_t address() const { return reinterpret_cast<uint64_t>(slot_); }  // device VA (== host VA)
  SignalSlot* slot() const { return slot_; }

 private:
  SignalSlot* slot_;
  std::shared_ptr<SignalPool> pool_;
};
using SignalRef = std::shared_ptr<Signal>;

// Slots carved from 4 KiB pages; a freed slot is reused. The pages live as long as any signal.
class SignalPool : public std::enable_shared_from_this<SignalPool> {
 public:
  // page(): a 4096-byte, 16-byte aligned block the device can write, kept alive by the returned owner;
  // by default host memory.
  using PageSource = std::function<std::pair<void*, std::shared_ptr<void>>()>;
  static std::shared_ptr<SignalPool> create(PageSource page = {}) { return std::shared_ptr<SignalPool>(new SignalPool(std::move(page))); }
  SignalRef make(uint64_t initial = 0);
  size_t free_slots() const;

 private:
  friend class Signal;
  explicit SignalPool(PageSource page) : page_(std::move(page)) {}
  void release(SignalSlot* s);
  PageSource page_;
  mutable std::mutex mu_;
  std::vector<std::shared_ptr<void>> pages_;
  std::vector<SignalSlot*> free_;
};

}  // namespace ugpu::hcq
