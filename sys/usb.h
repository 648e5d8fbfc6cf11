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
#include <memory>
#include <span>
#include <string>
#include <string_view>

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

 protected:
  // Implementations; the public calls have already checked the endpoint direction.
  virtual size_t do_bulk(uint8_t endpoint, std::span<uint8_t> data, std::chrono::milliseconds timeout) = 0;
  virtual size_t do_control(uint8_t request_type, uint8_t request, uint16_t value, uint16_t index, std::span<uint8_t> data,
                            std::chrono::milliseconds timeout) = 0;
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

 protected:
  size_t do_bulk(uint8_t endpoint, std::span<uint8_t> data, std::chrono::milliseconds timeout) override;
  size_t do_control(uint8_t request_type, uint8_t request, uint16_t value, uint16_t index, std::span<uint8_t> data,
                    std::chrono::milliseconds timeout) override;

 private:
  [[noreturn]] void fail(int code, const std::string& what, std::string_view hint = {}) const;
  std::string name_;
  uint16_t vendor_;
  int interface_;
  bool reattach_ = false, claimed_ = false;
  std::unique_ptr<libusb_context, void (*)(libusb_context*)> ctx_;  // declared first: closed last
  std::unique_ptr<libusb_device_handle, void (*)(libusb_device_handle*)> handle_;
};

}  // namespace ugpu::sys
