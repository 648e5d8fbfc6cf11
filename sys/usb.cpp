#include "sys/usb.h"

#include <libusb-1.0/libusb.h>

#include <climits>
#include <cstdio>
#include <utility>

namespace ugpu::sys {
namespace {
std::string hex(unsigned v, int width) {
  char b[16];
  std::snprintf(b, sizeof b, "%0*x", width, v);
  return b;
}
void check_timeout(std::chrono::milliseconds t) {
  if (t.count() < 0 || t.count() > UINT_MAX) throw Error("USB timeout of " + std::to_string(t.count()) + " ms is out of range (0 waits forever)");
}
}  // namespace

void UsbTransport::bulk_out(uint8_t endpoint, std::span<const uint8_t> data, std::chrono::milliseconds timeout) {
  if (endpoint & 0x80) throw Error(name() + ": bulk_out on endpoint 0x" + hex(endpoint, 2) + ", which is an IN endpoint");
  check_timeout(timeout);
  // The transfer only reads an OUT buffer; the cast serves libusb's single non-const signature.
  size_t n = do_bulk(endpoint, {const_cast<uint8_t*>(data.data()), data.size()}, timeout);
  if (n != data.size())
    throw UsbError(name() + ": bulk_out on endpoint 0x" + hex(endpoint, 2) + " sent " + std::to_string(n) + " of " + std::to_string(data.size()) +
                   " bytes");
}

size_t UsbTransport::bulk_in(uint8_t endpoint, std::span<uint8_t> data, std::chrono::milliseconds timeout) {
  if (!(endpoint & 0x80)) throw Error(name() + ": bulk_in on endpoint 0x" + hex(endpoint, 2) + ", which is an OUT endpoint");
  check_timeout(timeout);
  return do_bulk(endpoint, data, timeout);
}

size_t UsbTransport::control(uint8_t request_type, uint8_t request, uint16_t value, uint16_t index, std::span<uint8_t> data,
                             std::chrono::milliseconds timeout) {
  if (data.size() > 0xffff) throw Error(name() + ": control transfer of " + std::to_string(data.size()) + " bytes; wLength allows 65535");
  check_timeout(timeout);
  return do_control(request_type, request, value, index, data, timeout);
}

LibusbTransport::LibusbTransport(uint16_t vendor, uint16_t product, int interface)
    : name_("usb " + hex(vendor, 4) + ":" + hex(product, 4)),
      vendor_(vendor),
      interface_(interface),
      ctx_(nullptr, &libusb_exit),
      handle_(nullptr, &libusb_close) {
  libusb_context* ctx = nullptr;
  if (int r = libusb_init(&ctx); r < 0)
    fail(r, "opening " + name_ + ": libusb_init",
         "this system offers no USB access (in a container, pass the host's /dev/bus/usb through; usbfs must be mounted)");
  ctx_.reset(ctx);
  libusb_device** list = nullptr;
  ssize_t n = libusb_get_device_list(ctx, &list);
  if (n < 0) fail(int(n), "opening " + name_ + ": libusb_get_device_list");
  std::unique_ptr<libusb_device*, void (*)(libusb_device**)> owned(list, [](libusb_device** l) { libusb_free_device_list(l, 1); });
  libusb_device* found = nullptr;
  for (ssize_t i = 0; i < n && !found; ++i) {
    libusb_device_descriptor d;
    if (libusb_get_device_descriptor(list[i], &d) == 0 && d.idVendor == vendor && d.idProduct == product) found = list[i];
  }
  if (!found)
    throw UsbError("opening " + name_ + ": no such device among the " + std::to_string(n) +
                   " on the USB bus — is it plugged in and powered? `lsusb` lists what the system sees");
  libusb_device_handle* h = nullptr;
  if (int r = libusb_open(found, &h); r < 0) fail(r, "opening " + name_);
  handle_.reset(h);
  std::string iface = "interface " + std::to_string(interface) + " of " + name_;
  if (libusb_kernel_driver_active(h, interface) == 1) {
    if (int r = libusb_detach_kernel_driver(h, interface); r < 0) fail(r, "detaching the kernel driver from " + iface);
    reattach_ = true;
  }
  if (int r = libusb_claim_interface(h, interface); r < 0) {
    if (reattach_) libusb_attach_kernel_driver(h, interface);
    reattach_ = false;
    fail(r, "claiming " + iface);
  }
  claimed_ = true;
}

LibusbTransport::~LibusbTransport() {
  if (claimed_) libusb_release_interface(handle_.get(), interface_);
  if (reattach_) libusb_attach_kernel_driver(handle_.get(), interface_);  // give the device back to its kernel driver
}

void LibusbTransport::fail(int code, const std::string& what, std::string_view hint) const {
  static const std::pair<int, const char*> kHints[] = {
      {LIBUSB_ERROR_ACCESS, "no permission for the device node: run as root, or add a udev rule such as SUBSYSTEM==\"usb\", "},
      {LIBUSB_ERROR_NO_DEVICE, "the device was unplugged or reset"},
      {LIBUSB_ERROR_BUSY, "another program or kernel driver holds the interface"},
      {LIBUSB_ERROR_TIMEOUT, "the device did not answer in time"},
      {LIBUSB_ERROR_PIPE, "the device stalled the endpoint: it rejected the request"},
      {LIBUSB_ERROR_OVERFLOW, "the device sent more than the buffer holds"}};
  std::string h(hint);
  for (auto [c, text] : kHints)
    if (h.empty() && c == code) h = text;
  if (hint.empty() && code == LIBUSB_ERROR_ACCESS) h += "ATTR{idVendor}==\"" + hex(vendor_, 4) + "\", MODE=\"0666\"";
  std::string msg = what + ": " + libusb_error_name(code) + " (" + libusb_strerror(code) + ")";
  throw UsbError(h.empty() ? msg : msg + " — " + h, code == LIBUSB_ERROR_TIMEOUT);
}

size_t LibusbTransport::do_bulk(uint8_t endpoint, std::span<uint8_t> data, std::chrono::milliseconds timeout) {
  if (data.size() > INT_MAX) throw Error(name_ + ": bulk transfer of " + std::to_string(data.size()) + " bytes is too large for one libusb call");
  int done = 0;
  int r = libusb_bulk_transfer(handle_.get(), endpoint, data.data(), int(data.size()), &done, unsigned(timeout.count()));
  if (r < 0)
    fail(r, name_ + ": bulk transfer of " + std::to_string(data.size()) + " bytes on endpoint 0x" + hex(endpoint, 2) + " (" + std::to_string(done) +
                " moved)");
  return size_t(done);
}

size_t LibusbTransport::do_control(uint8_t request_type, uint8_t request, uint16_t value, uint16_t index, std::span<uint8_t> data,
                                   std::chrono::milliseconds timeout) {
  int r = libusb_control_transfer(handle_.get(), request_type, request, value, index, data.data(), uint16_t(data.size()), unsigned(timeout.count()));
  if (r < 0)
    fail(r, name_ + ": control transfer (type 0x" + hex(request_type, 2) + ", request 0x" + hex(request, 2) + ", value 0x" + hex(value, 4) +
                ", index 0x" + hex(index, 4) + ")");
  return size_t(r);
}

}  // namespace ugpu::sys
