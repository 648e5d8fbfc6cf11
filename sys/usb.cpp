#include "sys/usb.h"

#include <libusb-1.0/libusb.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <utility>
#include <vector>

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

UsbTransport::Transfer UsbTransport::submit_bulk_out(uint8_t endpoint, std::span<const uint8_t> data, std::chrono::milliseconds timeout) {
  if (endpoint & 0x80) throw Error(name() + ": bulk_out on endpoint 0x" + hex(endpoint, 2) + ", which is an IN endpoint");
  check_timeout(timeout);
  Request r;
  r.endpoint = endpoint, r.data = {const_cast<uint8_t*>(data.data()), data.size()}, r.timeout = timeout;
  Transfer t = do_submit(r);
  std::lock_guard lock(async_mu_);
  expected_[t] = data.size();
  return t;
}

UsbTransport::Transfer UsbTransport::submit_control(uint8_t request_type, uint8_t request, uint16_t value, uint16_t index, std::span<uint8_t> data,
                                                    std::chrono::milliseconds timeout) {
  if (data.size() > 0xffff) throw Error(name() + ": control transfer of " + std::to_string(data.size()) + " bytes; wLength allows 65535");
  check_timeout(timeout);
  Request r;
  r.control = true, r.request_type = request_type, r.request = request, r.value = value, r.index = index, r.data = data, r.timeout = timeout;
  return do_submit(r);
}

size_t UsbTransport::wait(Transfer t) {
  size_t expected = 0;
  {
    std::lock_guard lock(async_mu_);
    if (auto it = expected_.find(t); it != expected_.end()) expected = it->second, expected_.erase(it);
  }
  size_t n = do_wait(t);
  if (expected && n != expected)
    throw UsbError(name() + ": an asynchronous bulk OUT sent " + std::to_string(n) + " of " + std::to_string(expected) + " bytes");
  return n;
}

UsbTransport::Transfer UsbTransport::do_submit(const Request& r) {
  Outcome o;
  try {
    o.bytes = r.control ? do_control(r.request_type, r.request, r.value, r.index, r.data, r.timeout) : do_bulk(r.endpoint, r.data, r.timeout);
  } catch (...) { o.error = std::current_exception(); }
  std::lock_guard lock(async_mu_);
  Transfer t = next_++;
  outcomes_[t] = std::move(o);
  return t;
}

size_t UsbTransport::do_wait(Transfer t) {
  Outcome o;
  {
    std::lock_guard lock(async_mu_);
    auto it = outcomes_.find(t);
    if (it == outcomes_.end()) throw Error(name() + ": wait for a transfer that was never submitted (or was waited for already)");
    o = std::move(it->second);
    outcomes_.erase(it);
  }
  if (o.error) std::rethrow_exception(o.error);
  return o.bytes;
}

LibusbTransport::LibusbTransport(uint16_t vendor, uint16_t product, int interface)
    : name_("usb " + hex(vendor, 4) + ":" + hex(product, 4)),
      vendor_(vendor),
      interface_(interface),
      ctx_(nullptr, &libusb_exit),
      handle_(nullptr, &libusb_close),
      async_(std::make_unique<Async>()) {
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
  libusb_device_descriptor d;
  if (libusb_get_device_descriptor(found, &d) == 0 && d.iProduct) {
    unsigned char text[256];
    if (int r = libusb_get_string_descriptor_ascii(h, d.iProduct, text, sizeof text); r > 0)
      product_.assign(reinterpret_cast<char*>(text), size_t(r));
  }
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

// libusb's asynchronous transfers: a pool of libusb_transfer objects, each with a control buffer
// (setup packet + data); a callback marks a transfer done, and wait() runs libusb's event loop until
// its transfer is.
struct LibusbTransport::Async {
  struct Slot {
    libusb_transfer* t = nullptr;
    std::vector<uint8_t> control;  // setup + data of a control transfer
    std::span<uint8_t> user;       // where a control IN's data goes
    int done = 0;
  };
  std::mutex mu;
  LibusbTransport::Transfer next = 1;
  std::map<LibusbTransport::Transfer, std::unique_ptr<Slot>> live;
  std::vector<std::unique_ptr<Slot>> pool;
  ~Async() {
    for (auto& s : pool) libusb_free_transfer(s->t);
  }
};

UsbTransport::Transfer LibusbTransport::do_submit(const Request& r) {
  if (r.data.size() > INT_MAX) throw Error(name_ + ": transfer of " + std::to_string(r.data.size()) + " bytes is too large for one libusb call");
  std::unique_ptr<Async::Slot> s;
  {
    std::lock_guard lock(async_->mu);
    if (!async_->pool.empty()) s = std::move(async_->pool.back()), async_->pool.pop_back();
  }
  if (!s) {
    s = std::make_unique<Async::Slot>();
    if (!(s->t = libusb_alloc_transfer(0))) throw UsbError(name_ + ": libusb could not allocate a transfer");
  }
  s->done = 0;
  auto callback = [](libusb_transfer* t) { static_cast<Async::Slot*>(t->user_data)->done = 1; };
  if (r.control) {
    s->control.assign(LIBUSB_CONTROL_SETUP_SIZE + r.data.size(), 0);
    libusb_fill_control_setup(s->control.data(), r.request_type, r.request, r.value, r.index, uint16_t(r.data.size()));
    if (!(r.request_type & 0x80)) std::copy(r.data.begin(), r.data.end(), s->control.begin() + LIBUSB_CONTROL_SETUP_SIZE);
    s->user = r.data;
    libusb_fill_control_transfer(s->t, handle_.get(), s->control.data(), callback, s.get(), unsigned(r.timeout.count()));
  } else {
    s->user = {};
    libusb_fill_bulk_transfer(s->t, handle_.get(), r.endpoint, r.data.data(), int(r.data.size()), callback, s.get(), unsigned(r.timeout.count()));
  }
  if (int e = libusb_submit_transfer(s->t); e < 0) {
    std::lock_guard lock(async_->mu);
    async_->pool.push_back(std::move(s));
    fail(e, name_ + ": submitting a transfer");
  }
  std::lock_guard lock(async_->mu);
  Transfer id = async_->next++;
  async_->live[id] = std::move(s);
  return id;
}

size_t LibusbTransport::do_wait(Transfer id) {
  Async::Slot* s;
  {
    std::lock_guard lock(async_->mu);
    auto it = async_->live.find(id);
    if (it == async_->live.end()) throw Error(name_ + ": wait for a transfer that was never submitted (or was waited for already)");
    s = it->second.get();
  }
  while (!s->done)
    if (int e = libusb_handle_events_completed(ctx_.get(), &s->done); e < 0 && e != LIBUSB_ERROR_INTERRUPTED)
      fail(e, name_ + ": waiting for a transfer");
  const libusb_transfer& t = *s->t;
  const int status = t.status;
  size_t n = size_t(t.actual_length);
  if (status == LIBUSB_TRANSFER_COMPLETED && t.type == LIBUSB_TRANSFER_TYPE_CONTROL && !s->user.empty())
    std::copy_n(s->control.begin() + LIBUSB_CONTROL_SETUP_SIZE, std::min(n, s->user.size()), s->user.begin());
  {
    std::lock_guard lock(async_->mu);
    auto it = async_->live.find(id);
    async_->pool.push_back(std::move(it->second));
    async_->live.erase(it);
  }
  static const std::pair<int, int> kErrors[] = {
      {LIBUSB_TRANSFER_TIMED_OUT, LIBUSB_ERROR_TIMEOUT},     {LIBUSB_TRANSFER_STALL, LIBUSB_ERROR_PIPE},
      {LIBUSB_TRANSFER_NO_DEVICE, LIBUSB_ERROR_NO_DEVICE},   {LIBUSB_TRANSFER_OVERFLOW, LIBUSB_ERROR_OVERFLOW},
      {LIBUSB_TRANSFER_CANCELLED, LIBUSB_ERROR_INTERRUPTED}, {LIBUSB_TRANSFER_ERROR, LIBUSB_ERROR_IO}};
  for (auto [st, code] : kErrors)
    if (status == st) fail(code, name_ + ": an asynchronous transfer (" + std::to_string(n) + " bytes moved)");
  return n;
}

std::vector<std::pair<uint16_t, uint16_t>> LibusbTransport::present() {
  libusb_context* ctx = nullptr;
  if (int r = libusb_init(&ctx); r < 0)
    throw UsbError(std::string("libusb_init: ") + libusb_error_name(r) +
                   " — this system offers no USB access (in a container, pass the host's /dev/bus/usb through)");
  std::unique_ptr<libusb_context, void (*)(libusb_context*)> owned_ctx(ctx, &libusb_exit);
  libusb_device** list = nullptr;
  ssize_t n = libusb_get_device_list(ctx, &list);
  if (n < 0) throw UsbError(std::string("libusb_get_device_list: ") + libusb_error_name(int(n)));
  std::vector<std::pair<uint16_t, uint16_t>> out;
  for (ssize_t i = 0; i < n; ++i) {
    libusb_device_descriptor d;
    if (libusb_get_device_descriptor(list[i], &d) == 0) out.emplace_back(d.idVendor, d.idProduct);
  }
  libusb_free_device_list(list, 1);
  return out;
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
