// The UsbTransport seam (docs/design.md §3): bulk and control transfers to one claimed interface of a USB
// device — libusb on real hardware (LibusbTransport), the emulated ASM24xx bridge (emu/usb/) in tests.
// The bridge's protocol client is sys/asm24.h.
//
// Endpoints carry their direction bit (0x81 is IN 1, 0x02 is OUT 2); a transfer on an endpoint of the
// wrong direction is an Error before anything is sent. A timeout of 0 waits forever. Failures throw
// UsbError; a transfer that ran out of time has timed_out() set.
#pragma once
#include <chrono>
#include <cstdint>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/error.h"

struct libusb_context;
struct libusb_device_handle;

namespace ugpu::sys {

class UsbError : public Error {
 public:
  explicit UsbError(const std::string& msg, bool timed_out = false) : Error(msg), timed_out_(timed_out) {}
  bool timed_out() const { return timed_out_; }

 private:
  bool timed_out_;
};

class UsbTransport {
 public:
  static constexpr std::chrono::milliseconds kDefaultTimeout{1000};
  virtual ~UsbTransport() = default;
  // Sends all of data or throws (a partial send is an error naming how much went out).
  void bulk_out(uint8_t endpoint, std::span<const uint8_t> data, std::chrono::milliseconds timeout = kDefaultTimeout);
  // Receives up to data.size() bytes; returns how many came (the device may send a short packet).
  size_t bulk_in(uint8_t endpoint, std::span<uint8_t> data, std::chrono::milliseconds timeout = kDefaultTimeout);
  // A control transfer on endpoint 0; bit 7 of request_type picks the direction of `data`. Returns the bytes moved.
  size_t control(uint8_t request_type, uint8_t request, uint16_t value, uint16_t index, std::span<uint8_t> data,
                 std::chrono::milliseconds timeout = kDefaultTimeout);
  virtual std::string name() const = 0;  // "usb 174c:2464" — for messages

  // Asynchronous transfers, so requests pipeline (the bridge's copies keep the link busy with them):
  // submitted at once, finished by wait(), which returns the bytes moved or throws the transfer's
  // error (a bulk OUT that sent less than all of its data is one). Transfers on one endpoint complete
  // in the order submitted; `data` must stay alive and untouched until the wait, and every transfer
  // must be waited for. The base class runs each one as it is submitted (a transport without a queue
  // of its own, such as the emulated bridge); LibusbTransport queues them in libusb.
  using Transfer = uint64_t;
  Transfer submit_bulk_out(uint8_t endpoint, std::span<const uint8_t> data, std::chrono::milliseconds timeout = kDefaultTimeout);
  Transfer submit_control(uint8_t request_type, uint8_t request, uint16_t value, uint16_t index, std::span<uint8_t> data,
                          std::chrono::milliseconds timeout = kDefaultTimeout);
  size_t wait(Transfer t);

 protected:
  // Implementations; the public calls have already checked the endpoint direction.
  virtual size_t do_bulk(uint8_t endpoint, std::span<uint8_t> data, std::chrono::milliseconds timeout) = 0;
  virtual size_t do_control(uint8_t request_type, uint8_t request, uint16_t value, uint16_t index, std::span<uint8_t> data,
                            std::chrono::milliseconds timeout) = 0;
  struct Request {
    bool control = false;
    uint8_t endpoint = 0;  // bulk
    uint8_t request_type = 0, request = 0;
    uint16_t value = 0, index = 0;
    std::span<uint8_t> data;
    std::chrono::milliseconds timeout{};
  };
  // The asynchronous path; by default the transfer runs now and wait() hands over its outcome.
  virtual Transfer do_submit(const Request& r);
  virtual size_t do_wait(Transfer t);

 private:
  std::mutex async_mu_;
  Transfer next_ = 1;
  struct Outcome {
    size_t bytes = 0;
    std::exception_ptr error;
  };
  std::map<Transfer, Outcome> outcomes_;  // of transfers the base class ran
  std::map<Transfer, size_t> expected_;   // bulk OUT lengths, checked at the wait
};

// Opens the first device with vendor:product, detaches a kernel driver bound to `interface` (and
// reattaches it on close), and claims the interface. Each transport has its own libusb context.
class LibusbTransport final : public UsbTransport {
 public:
  LibusbTransport(uint16_t vendor, uint16_t product, int interface = 0);
  ~LibusbTransport() override;
  LibusbTransport(const LibusbTransport&) = delete;
  LibusbTransport& operator=(const LibusbTransport&) = delete;
  std::string name() const override { return name_; }
  const std::string& product() const { return product_; }  // the iProduct string ("" when the device has none)
  // The vendor:product of every device on the USB bus (UsbError when the system offers no USB access).
  static std::vector<std::pair<uint16_t, uint16_t>> present();

 protected:
  size_t do_bulk(uint8_t endpoint, std::span<uint8_t> data, std::chrono::milliseconds timeout) override;
  size_t do_control(uint8_t request_type, uint8_t request, uint16_t value, uint16_t index, std::span<uint8_t> data,
                    std::chrono::milliseconds timeout) override;
  Transfer do_submit(const Request& r) override;  // libusb's asynchronous transfers, from a pool
  size_t do_wait(Transfer t) override;

 private:
  [[noreturn]] void fail(int code, const std::string& what, std::string_view hint = {}) const;
  struct Async;
  std::string name_, product_;
  uint16_t vendor_;
  int interface_;
  bool reattach_ = false, claimed_ = false;
  std::unique_ptr<libusb_context, void (*)(libusb_context*)> ctx_;  // declared first: closed last
  std::unique_ptr<libusb_device_handle, void (*)(libusb_device_handle*)> handle_;
  std::unique_ptr<Async> async_;  // the transfer pool: freed before the handle closes
};

}  // namespace ugpu::sys
