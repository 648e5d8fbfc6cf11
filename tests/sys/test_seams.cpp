// The hardware seams (docs/design.md §3): PosixOs on real files, VirtualOs, MappedMmio, and the sysfs and
// vfio PCI paths driven through a fake sysfs / vfio tree in a VirtualOs.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <linux/vfio.h>
#include <sys/eventfd.h>
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "emu/os/virtual_os.h"
#include "sys/mmio.h"
#include "sys/pci.h"
#include "sys/usb.h"

using namespace ugpu;
using doctest::Contains;

namespace {

std::string message_of(auto&& f) {
  try {
    f();
  } catch (const Error& e) { return e.what(); }
  return "(no error)";
}
int errno_of(auto&& f) {
  try {
    f();
  } catch (const sys::OsError& e) { return e.err(); }
  return 0;
}
std::span<const uint8_t> bytes_of(const std::string& s) { return {reinterpret_cast<const uint8_t*>(s.data()), s.size()}; }
void put16(std::span<uint8_t> m, size_t at, uint16_t v) { std::memcpy(m.data() + at, &v, 2); }
uint32_t get32(std::span<uint8_t> m, size_t at) {
  uint32_t v;
  std::memcpy(&v, m.data() + at, 4);
  return v;
}

// A directory under /tmp, removed at the end of the test.
struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/ugpu-seams-XXXXXX";
    REQUIRE(::mkdtemp(tmpl));
    path = tmpl;
  }
  ~TempDir() { std::filesystem::remove_all(path); }
};

constexpr const char* kAddr = "0000:03:00.0";
const std::string kDir = std::string(sys::kPciSysfs) + "/" + kAddr;
const std::string kReal = "/sys/devices/pci0000:00/0000:00:01.0/0000:03:00.0";

// A Navi 31 at 0000:03:00.0 laid out as real sysfs is: the bus entry is a symlink to the device
// directory, `driver` a symlink into /sys/bus/pci/drivers.
struct FakePci {
  emu::VirtualOs os;
  std::span<uint8_t> config, bar0;
  explicit FakePci(const std::string& driver = "", size_t config_bytes = 4096) {
    os.add_dir(kReal);
    os.add_symlink(kDir, "../../../devices/pci0000:00/0000:00:01.0/0000:03:00.0");
    config = os.add_mmap_file(kReal + "/config", config_bytes);
    put16(config, 0, 0x1002), put16(config, 2, 0x744c);
    os.add_file(kReal + "/vendor", "0x1002\n");
    os.add_file(kReal + "/device", "0x744c\n");
    os.add_file(kReal + "/class", "0x030000\n");
    os.add_file(kReal + "/resource",
                "0x0000007800000000 0x0000007800ffffff 0x000000000014220c\n"  // BAR0: 16 MiB, 64-bit prefetchable
                "0x0000000000000000 0x0000000000000000 0x0000000000000000\n"  // BAR1: its upper half
                "0x0000007c00000000 0x0000007c001fffff 0x000000000014220c\n"  // BAR2: 2 MiB doorbells
                "0x0000000000000000 0x0000000000000000 0x0000000000000000\n"
                "0x000000000000e000 0x000000000000e0ff 0x0000000000040101\n"    // BAR4: I/O ports
                "0x00000000fcc00000 0x00000000fcc7ffff 0x0000000000040200\n"    // BAR5: 512 KiB registers
                "0x00000000fcc80000 0x00000000fcc9ffff 0x0000000000046200\n");  // expansion ROM
    bar0 = os.add_mmap_file(kReal + "/resource0", 16 << 20);
    os.add_mmap_file(kReal + "/resource5", 512 << 10);
    os.add_file(kReal + "/enable", "0\n");
    os.add_file(kReal + "/reset", "");
    if (!driver.empty()) {
      os.add_dir("/sys/bus/pci/drivers/" + driver);
      os.add_symlink(kReal + "/driver", "../../../../bus/pci/drivers/" + driver);
    }
  }
};

// /proc/self/pagemap for a root process: every page present, PFN derived from its virtual page.
uint64_t fake_pfn(uint64_t va) { return 0x80000 + (va / 4096) % 0x10000; }
std::shared_ptr<emu::FunctionFile> fake_pagemap(bool root) {
  auto f = std::make_shared<emu::FunctionFile>();
  f->on_pread = [root](std::span<uint8_t> dst, uint64_t off) -> long {
    if (dst.size() != 8 || off % 8) return -EINVAL;
    uint64_t e = uint64_t{1} << 63 | (root ? fake_pfn(off / 8 * 4096) : 0);
    std::memcpy(dst.data(), &e, 8);
    return 8;
  };
  return f;
}

}  // namespace

// ---- PosixOs ----

TEST_CASE("seams: PosixOs reads, writes, lists and follows links in a real directory") {
  TempDir t;
  sys::Os& os = sys::posix_os();
  std::ofstream(t.path + "/a.txt") << "hello\n";
  std::filesystem::create_directory(t.path + "/sub");
  std::filesystem::create_symlink("a.txt", t.path + "/link");
  std::filesystem::create_symlink("missing", t.path + "/dangling");
  CHECK(os.read_file(t.path + "/a.txt") == "hello\n");
  CHECK(os.listdir(t.path) == std::vector<std::string>{"a.txt", "dangling", "link", "sub"});
  CHECK(os.exists(t.path + "/link"));
  CHECK_FALSE(os.exists(t.path + "/dangling"));
  CHECK_FALSE(os.exists(t.path + "/nope"));
  CHECK(os.readlink(t.path + "/link") == "a.txt");
  os.write_file(t.path + "/a.txt", "bye");
  CHECK(os.read_file(t.path + "/link") == "bye");

  sys::Fd fd(os, t.path + "/a.txt", O_RDWR);
  os.pwrite(fd.get(), bytes_of("YZ"), 1);
  uint8_t buf[8] = {};
  CHECK(os.pread(fd.get(), buf, 0) == 3);
  CHECK(std::string(reinterpret_cast<char*>(buf), 3) == "bYZ");
  sys::Mapping m(os, 4096, PROT_READ, MAP_SHARED, fd.get(), 0);
  CHECK(std::memcmp(m.data(), "bYZ", 3) == 0);

  sys::Fd ev(os, os.eventfd(0, EFD_NONBLOCK));  // positionless: pread/pwrite fall back to read/write
  uint64_t v = 5;
  os.pwrite(ev.get(), {reinterpret_cast<uint8_t*>(&v), 8}, 0);
  v = 0;
  CHECK(os.pread(ev.get(), {reinterpret_cast<uint8_t*>(&v), 8}, 0) == 8);
  CHECK(v == 5);
}

TEST_CASE("seams: PosixOs errors carry the errno, its name, the path and a hint") {
  TempDir t;
  sys::Os& os = sys::posix_os();
  auto open_missing = [&] { os.open(t.path + "/none", O_RDONLY); };
  CHECK(errno_of(open_missing) == ENOENT);
  std::string m = message_of(open_missing);
  CHECK(m.find("open " + t.path + "/none: No such file or directory (ENOENT) — ") == 0);
  CHECK(errno_of([&] { os.read_file(t.path); }) == EISDIR);
  CHECK(errno_of([&] { os.listdir(t.path + "/none"); }) == ENOENT);
  CHECK(errno_of([&] { os.readlink(t.path); }) == EINVAL);
  CHECK(errno_of([&] { os.write_file(t.path + "/none", "1"); }) == ENOENT);  // sysfs-style: never creates
  CHECK(errno_of([&] { os.mmap(nullptr, 0, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0); }) == EINVAL);

  std::ofstream(t.path + "/f") << "x";
  sys::Fd fd(os, t.path + "/f", O_RDONLY);
  CHECK(os.ioctl(fd.get(), VFIO_GET_API_VERSION, nullptr) == -ENOTTY);  // ioctl reports, never throws
  CHECK_THROWS_WITH_AS(sys::check_ioctl(-EACCES, "AMDKFD_IOC_GET_VERSION on /dev/kfd"),
                       Contains("AMDKFD_IOC_GET_VERSION on /dev/kfd: Permission denied (EACCES) — check its permissions"), sys::OsError);
  CHECK(sys::check_ioctl(7, "x") == 7);
  CHECK(sys::errno_name(EBUSY) == "EBUSY");
}

// ---- Mmio ----

TEST_CASE("seams: MappedMmio reads and writes in bounds and refuses the rest") {
  std::vector<uint64_t> mem(64);  // 512 bytes
  sys::MappedMmio r(mem.data(), 512, "BAR5 of test");
  r.write32(4, 0x11223344);
  r.write64(8, 0x0123456789abcdefull);
  CHECK((mem[0] >> 32) == 0x11223344);
  CHECK(r.read64(8) == 0x0123456789abcdefull);
  CHECK(r.read32(12) == 0x01234567);
  CHECK(r.read32(508) == 0);
  CHECK_THROWS_WITH_AS(r.read32(512), Contains("outside BAR5 of test (0x200 bytes)"), Error);
  CHECK_THROWS_WITH_AS(r.write64(508, 1), Contains("outside"), Error);
  CHECK_THROWS_WITH_AS(r.read32(UINT64_MAX - 1), Contains("outside"), Error);  // no wrap-around
  CHECK_THROWS_WITH_AS(r.write32(2, 1), Contains("not 4-byte aligned"), Error);
  CHECK_THROWS_WITH_AS(r.read64(4), Contains("not 8-byte aligned"), Error);

  std::vector<uint8_t> src(11), back(11);
  for (size_t i = 0; i < src.size(); ++i) src[i] = uint8_t(0xa0 + i);
  r.copy_in(101, src);  // unaligned start and end
  r.copy_out(101, back);
  CHECK(back == src);
  CHECK(reinterpret_cast<uint8_t*>(mem.data())[101] == 0xa0);
  CHECK_THROWS_WITH_AS(r.copy_in(510, std::vector<uint8_t>(3)), Contains("copy_in of 3 bytes"), Error);
  CHECK((mem[0] >> 32) == 0x11223344);  // the refused copy wrote nothing

  uint64_t db = 0;
  sys::MappedDoorbell d32(&db, 32, "sdma0"), d64(&db, 64, "gfx");
  d32.ring(7);
  CHECK(db == 7);
  CHECK_THROWS_WITH_AS(d32.ring(uint64_t{1} << 32), Contains("32 bits wide"), Error);
  d64.ring(uint64_t{1} << 40);
  CHECK(db == uint64_t{1} << 40);
  CHECK_THROWS_AS(sys::MappedDoorbell(&db, 16, "x"), Error);
}

// ---- VirtualOs ----

TEST_CASE("seams: VirtualOs serves files, directories and symlinks like Linux") {
  emu::VirtualOs os;
  os.add_file("/sys/class/kfd/kfd/topology/nodes/1/gpu_id", "43981\n");
  os.add_symlink("/sys/gpu", "class/kfd/kfd/topology/nodes/1");
  os.add_symlink("/sys/class/kfd/kfd/up", "../kfd/topology/../topology/nodes");
  CHECK(os.read_file("/sys/gpu/gpu_id") == "43981\n");
  CHECK(os.listdir("/sys/class/kfd/kfd/up") == std::vector<std::string>{"1"});
  CHECK(os.listdir("/sys") == std::vector<std::string>{"class", "gpu"});
  CHECK(os.readlink("/sys/gpu") == "class/kfd/kfd/topology/nodes/1");
  CHECK(os.exists("/sys/gpu"));
  CHECK_FALSE(os.exists("/sys/gpu/nope"));
  CHECK(errno_of([&] { os.open("/dev/kfd", O_RDWR); }) == ENOENT);
  CHECK(errno_of([&] { os.read_file("/sys/gpu/gpu_id/x"); }) == ENOTDIR);
  CHECK(errno_of([&] { os.listdir("/sys/gpu/gpu_id"); }) == ENOTDIR);
  CHECK(errno_of([&] { os.readlink("/sys/class"); }) == EINVAL);
  CHECK(errno_of([&] { os.open("/sys", O_RDWR); }) == EISDIR);
  CHECK(errno_of([&] { os.write_file("/sys/new", "1"); }) == ENOENT);
  os.add_symlink("/loop/a", "b");
  os.add_symlink("/loop/b", "a");
  CHECK(errno_of([&] { os.open("/loop/a", O_RDONLY); }) == ELOOP);
  CHECK_FALSE(os.exists("/loop/a"));

  os.write_file("/sys/gpu/gpu_id", "7");
  CHECK(os.read_file("/sys/class/kfd/kfd/topology/nodes/1/gpu_id") == "7");
  sys::Fd w(os, "/sys/gpu/gpu_id", O_WRONLY);
  uint8_t b[4];
  CHECK(errno_of([&] { os.pread(w.get(), b, 0); }) == EBADF);
  os.set_errno_on_open("/sys/gpu/gpu_id", EACCES);
  CHECK_THROWS_WITH_AS(os.read_file("/sys/gpu/gpu_id"), Contains("open /sys/gpu/gpu_id: Permission denied (EACCES)"), sys::OsError);
  os.set_errno_on_open("/sys/gpu/gpu_id", 0);
  CHECK(os.read_file("/sys/gpu/gpu_id") == "7");
  os.remove("/sys/class/kfd");
  CHECK_FALSE(os.exists("/sys/gpu"));
  CHECK(errno_of([&] { os.read_file("/sys/gpu/gpu_id"); }) == ENOENT);
}

TEST_CASE("seams: VirtualOs mmap files share one block; devices get ioctls and mmaps; Fd and Mapping release") {
  emu::VirtualOs os;
  std::span<uint8_t> block = os.add_mmap_file("/dev/mem0", 8192);
  {
    sys::Fd fd(os, "/dev/mem0", O_RDWR);
    sys::Mapping m(os, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 4096);
    m.data()[3] = 0x5a;              // through the mapping ...
    CHECK(block[4096 + 3] == 0x5a);  // ... visible in the block ...
    uint8_t b = 0;
    CHECK(os.pread(fd.get(), {&b, 1}, 4099) == 1);
    CHECK(b == 0x5a);                                        // ... and to pread
    CHECK(os.pwrite(fd.get(), bytes_of("abc"), 8190) == 2);  // short at the end, as sysfs does
    CHECK(errno_of([&] { os.mmap(nullptr, 8192, PROT_READ, MAP_SHARED, fd.get(), 4096); }) == EINVAL);
    CHECK(os.open_fds() == 1);
    CHECK(os.mappings() == 1);
  }
  CHECK(os.open_fds() == 0);
  CHECK(os.mappings() == 0);

  int opens = 0;
  std::vector<uint32_t> regs(1024);
  os.add_device("/dev/fake", [&](int) {
    auto f = std::make_shared<emu::FunctionFile>();
    int id = ++opens;  // per-open state, as a driver keeps per-fd state
    f->on_ioctl = [id](unsigned long req, void* arg) { return req == 0x1234 ? (*static_cast<int*>(arg) = id, 0) : -EINVAL; };
    f->on_mmap = [&regs](uint64_t off, size_t len) -> void* { return off == 0 && len <= 4096 ? regs.data() : nullptr; };
    return f;
  });
  sys::Fd a(os, "/dev/fake", O_RDWR), b(os, "/dev/fake", O_RDWR);
  int out = 0;
  CHECK(os.ioctl(b.get(), 0x1234, &out) == 0);
  CHECK(out == 2);
  CHECK(os.ioctl(a.get(), 0x99, nullptr) == -EINVAL);
  CHECK(os.ioctl(12345, 0x1234, &out) == -EBADF);
  sys::Mapping m(os, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, a.get(), 0);
  CHECK(m.data() == reinterpret_cast<uint8_t*>(regs.data()));
  CHECK_THROWS_WITH_AS(os.mmap(nullptr, 4096, PROT_READ, MAP_SHARED, a.get(), 4096), Contains("ENODEV"), sys::OsError);
  CHECK(errno_of([&] { os.mmap(nullptr, 1 << 21, PROT_READ, MAP_SHARED | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0); }) == ENOMEM);
  os.add_file("/etc/x", "1");
  sys::Fd plain(os, "/etc/x", O_RDONLY);
  CHECK(os.ioctl(plain.get(), 0x1234, &out) == -ENOTTY);
  CHECK(os.fd_path(plain.get()) == "/etc/x");

  sys::Fd ev(os, os.eventfd(0, EFD_NONBLOCK));
  uint64_t v = 0;
  CHECK(errno_of([&] { os.pread(ev.get(), {reinterpret_cast<uint8_t*>(&v), 8}, 0); }) == EAGAIN);
  v = 3;
  os.pwrite(ev.get(), {reinterpret_cast<uint8_t*>(&v), 8}, 0);
  os.pwrite(ev.get(), {reinterpret_cast<uint8_t*>(&v), 8}, 0);
  CHECK(os.pread(ev.get(), {reinterpret_cast<uint8_t*>(&v), 8}, 0) == 8);
  CHECK(v == 6);
}

TEST_CASE("seams: VirtualOs takes opens, reads and tree changes from many threads") {
  emu::VirtualOs os;
  os.add_file("/sys/a", "stable");
  std::atomic<int> bad{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t)
    ts.emplace_back([&, t] {
      for (int i = 0; i < 300; ++i) {
        if (os.read_file("/sys/a") != "stable") ++bad;
        os.add_file("/sys/t" + std::to_string(t) + "/" + std::to_string(i % 5), "x");
        if (os.listdir("/sys").empty()) ++bad;
      }
    });
  for (auto& t : ts) t.join();
  CHECK(bad == 0);
  CHECK(os.open_fds() == 0);
  CHECK(os.listdir("/sys").size() == 5);
}

// ---- PCI over sysfs ----

TEST_CASE("seams: SysfsPciDevice reads config space, parses the resource table and maps BARs") {
  FakePci f;
  auto dev = sys::open_pci_device(f.os, "03:00.0");
  CHECK(dev->kind() == "sysfs");
  CHECK(dev->address() == kAddr);
  CHECK(dev->vendor_id() == 0x1002);
  CHECK(dev->device_id() == 0x744c);
  CHECK(f.os.read_file(kDir + "/enable") == "1");  // memory decoding on
  CHECK((f.config[4] & 6) == 6);                   // memory space + bus master in the command register
  CHECK(dev->bar_size(0) == 16 << 20);
  CHECK(dev->bar_size(1) == 0);
  CHECK(dev->bar_size(2) == 2 << 20);
  CHECK(dev->bar_size(5) == 512 << 10);
  sys::Mmio& bar0 = dev->bar(0);
  CHECK(&dev->bar(0) == &bar0);  // mapped once
  CHECK(bar0.size() == 16 << 20);
  bar0.write32(0x100, 0xcafef00d);
  CHECK(get32(f.bar0, 0x100) == 0xcafef00d);
  CHECK(dev->bar(5).read32(0) == 0);
  dev->config_write(0x40, 4, 0x12345678);
  CHECK(get32(f.config, 0x40) == 0x12345678);
  CHECK(dev->config_read(0x42, 2) == 0x1234);
  CHECK_THROWS_WITH_AS(dev->bar(1), Contains("has no BAR1 (absent, or the upper half of 64-bit BAR0)"), Error);
  CHECK_THROWS_WITH_AS(dev->bar(4), Contains("I/O-port BAR"), Error);
  CHECK_THROWS_WITH_AS(dev->bar(6), Contains("BARs 0 to 5"), Error);
  CHECK_THROWS_WITH_AS(dev->config_read(4094, 4), Contains("outside the 4 KiB config space"), Error);
  CHECK_THROWS_AS(dev->config_read(0, 3), Error);
  dev->reset();
  CHECK(f.os.read_file(kDir + "/reset") == "1");
  f.os.remove(kReal + "/reset");
  CHECK_THROWS_WITH_AS(dev->reset(), Contains("cannot be reset"), Error);
  dev.reset();
  CHECK(f.os.mappings() == 0);
  CHECK(f.os.open_fds() == 0);
}

TEST_CASE("seams: opening a PCI device explains missing devices, permissions and kernel drivers") {
  FakePci f;
  CHECK_THROWS_WITH_AS(sys::open_pci_device(f.os, "0000:09:00.0"),
                       Contains("PCI device 0000:09:00.0 not found (no /sys/bus/pci/devices/0000:09:00.0); display and "
                                "accelerator devices: 0000:03:00.0"),
                       Error);
  CHECK_THROWS_WITH_AS(sys::open_pci_device(f.os, "../../../etc"), Contains("is not a PCI address"), Error);
  CHECK_THROWS_WITH_AS(sys::open_pci_device(f.os, "0000:03:00.8"), Contains("is not a PCI address"), Error);
  f.os.set_errno_on_open(kDir + "/config", EACCES);
  CHECK(errno_of([&] { sys::open_pci_device(f.os, kAddr); }) == EACCES);
  CHECK_THROWS_WITH_AS(sys::open_pci_device(f.os, kAddr),
                       Contains("Permission denied (EACCES) — raw PCI access through sysfs needs root: run as root or bind to vfio-pci"),
                       sys::OsError);

  FakePci amd("amdgpu");
  std::string m = message_of([&] { sys::open_pci_device(amd.os, kAddr); });
  CHECK(m.find("bound to the kernel driver amdgpu") != std::string::npos);
  CHECK(m.find("echo 0000:03:00.0 | sudo tee /sys/bus/pci/devices/0000:03:00.0/driver/unbind") != std::string::npos);
  CHECK(m.find("amd:kfd") != std::string::npos);

  FakePci partial("", 64);  // without root, sysfs shows only the first 64 bytes of config space
  auto dev = sys::open_pci_device(partial.os, kAddr);
  CHECK_THROWS_WITH_AS(dev->config_read(0x100, 4), Contains("only its first 64 bytes: run as root"), Error);

  FakePci broken;
  broken.os.add_file(kReal + "/resource", "0x1000 zz 0x0\n");
  CHECK_THROWS_WITH_AS(sys::open_pci_device(broken.os, kAddr), Contains("malformed /sys/bus/pci/devices/0000:03:00.0/resource"), Error);
}

TEST_CASE("seams: SysfsPciDevice DMA memory takes bus addresses from /proc/self/pagemap") {
  FakePci f;
  f.os.add_device("/proc/self/pagemap", fake_pagemap(true));
  auto dev = sys::open_pci_device(f.os, kAddr);
  sys::DmaBuffer d = dev->dma_alloc(3 * 4096 + 1);
  CHECK(d.size == 4 * 4096);
  CHECK(d.page_size == 4096);
  REQUIRE(d.bus.size() == 4);
  for (size_t i = 0; i < 4; ++i) CHECK(d.bus[i] == fake_pfn(reinterpret_cast<uintptr_t>(d.host) + i * 4096) * 4096);
  CHECK(d.bus_address(4096 + 17) == d.bus[1] + 17);
  CHECK_THROWS_WITH_AS(d.bus_address(d.size), Contains("outside the 0x4000-byte DMA buffer"), Error);
  d.bytes()[d.size - 1] = 1;                     // host memory is writable
  sys::DmaBuffer big = dev->dma_alloc(4 << 20);  // no hugepages here: falls back to 4 KiB pages
  CHECK(big.page_size == 4096);
  CHECK(big.bus.size() == 1024);
  size_t maps = f.os.mappings();
  d = {};
  CHECK(f.os.mappings() == maps - 1);
  CHECK_THROWS_AS(dev->dma_alloc(0), Error);

  FakePci user;
  user.os.add_device("/proc/self/pagemap", fake_pagemap(false));
  auto udev = sys::open_pci_device(user.os, kAddr);
  CHECK_THROWS_WITH_AS(udev->dma_alloc(4096), Contains("run as root, or bind the device to vfio-pci"), sys::OsError);
  CHECK(user.os.mappings() == 0);  // the refused buffer was unmapped
}

TEST_CASE("seams: list_pci_devices reads ids, class and driver, and filters by vendor") {
  FakePci f("amdgpu");
  std::string host = "/sys/devices/pci0000:00/0000:00:00.0";
  f.os.add_file(host + "/vendor", "0x8086\n");
  f.os.add_file(host + "/device", "0x1237\n");
  f.os.add_file(host + "/class", "0x060000\n");
  f.os.add_symlink(std::string(sys::kPciSysfs) + "/0000:00:00.0", "../../../devices/pci0000:00/0000:00:00.0");
  auto all = sys::list_pci_devices(f.os);
  REQUIRE(all.size() == 2);
  CHECK(all[0].address == "0000:00:00.0");
  CHECK(all[0].vendor == 0x8086);
  CHECK(all[0].driver.empty());
  CHECK(all[1].address == kAddr);
  CHECK(all[1].device == 0x744c);
  CHECK(all[1].class_code == 0x030000);
  CHECK(all[1].driver == "amdgpu");
  auto amd = sys::list_pci_devices(f.os, 0x1002);
  REQUIRE(amd.size() == 1);
  CHECK(amd[0].address == kAddr);
  CHECK(sys::list_pci_devices(f.os, 0x10de).empty());
  emu::VirtualOs empty;
  CHECK(sys::list_pci_devices(empty).empty());  // no sysfs at all
  f.os.add_file(host + "/vendor", "intel");
  CHECK_THROWS_WITH_AS(sys::list_pci_devices(f.os), Contains("'intel' is not a hexadecimal number"), Error);
}

// ---- PCI over vfio ----

namespace {
// The kernel's vfio: a container, IOMMU group 12 (our GPU plus its HDMI audio function) and the
// device fd. It checks the order of the ioctls and every argsz, as the kernel does.
struct FakeVfio {
  FakePci pci{"vfio-pci"};
  emu::VirtualOs& os = pci.os;
  std::vector<std::string> calls;
  bool viable = true, container_set = false;
  std::vector<uint64_t> regs = std::vector<uint64_t>(2 << 17);  // BAR0 (2 MiB here)
  std::vector<std::pair<uint64_t, uint64_t>> mapped, unmapped;  // (iova, size)
  std::vector<uint8_t*> mapped_host;
  static constexpr uint64_t kRegion = uint64_t{1} << 40;  // vfio-pci puts region i at offset i << 40

  FakeVfio() {
    os.add_symlink(kReal + "/iommu_group", "../../../../kernel/iommu_groups/12");
    os.add_symlink("/sys/kernel/iommu_groups/12/devices/0000:03:00.0", "../../../../devices/pci0000:00/0000:00:01.0/0000:03:00.0");
    os.add_dir("/sys/devices/pci0000:00/0000:00:01.0/0000:03:00.1");
    os.add_symlink("/sys/devices/pci0000:00/0000:00:01.0/0000:03:00.1/driver", "../../../../bus/pci/drivers/snd_hda_intel");
    os.add_dir("/sys/bus/pci/drivers/snd_hda_intel");
    os.add_symlink(std::string(sys::kPciSysfs) + "/0000:03:00.1", "../../../devices/pci0000:00/0000:00:01.0/0000:03:00.1");
    os.add_symlink("/sys/kernel/iommu_groups/12/devices/0000:03:00.1", "../../../../devices/pci0000:00/0000:00:01.0/0000:03:00.1");

    auto container = std::make_shared<emu::FunctionFile>();
    container->on_ioctl = [this](unsigned long req, void* arg) -> int {
      auto value = reinterpret_cast<uintptr_t>(arg);
      switch (req) {
        case VFIO_GET_API_VERSION: calls.push_back("GET_API_VERSION"); return VFIO_API_VERSION;
        case VFIO_CHECK_EXTENSION:
          calls.push_back("CHECK_EXTENSION " + std::to_string(value));
          return value == VFIO_TYPE1_IOMMU || value == VFIO_TYPE1v2_IOMMU;
        case VFIO_SET_IOMMU:
          calls.push_back("SET_IOMMU " + std::to_string(value));
          return container_set ? 0 : -EINVAL;  // the kernel wants a group in the container first
        case VFIO_IOMMU_MAP_DMA: {
          auto* m = static_cast<vfio_iommu_type1_dma_map*>(arg);
          CHECK(m->argsz == sizeof *m);
          CHECK(m->flags == (VFIO_DMA_MAP_FLAG_READ | VFIO_DMA_MAP_FLAG_WRITE));
          mapped.emplace_back(m->iova, m->size);
          mapped_host.push_back(reinterpret_cast<uint8_t*>(m->vaddr));
          return 0;
        }
        case VFIO_IOMMU_UNMAP_DMA: {
          auto* u = static_cast<vfio_iommu_type1_dma_unmap*>(arg);
          CHECK(u->argsz == sizeof *u);
          unmapped.emplace_back(u->iova, u->size);
          return 0;
        }
      }
      return -ENOTTY;
    };
    auto device = std::make_shared<emu::FunctionFile>();
    device->on_ioctl = [this](unsigned long req, void* arg) -> int {
      if (req == VFIO_DEVICE_GET_INFO) {
        auto* i = static_cast<vfio_device_info*>(arg);
        CHECK(i->argsz >= 16);
        calls.push_back("DEVICE_GET_INFO");
        i->flags = VFIO_DEVICE_FLAGS_PCI | VFIO_DEVICE_FLAGS_RESET, i->num_regions = VFIO_PCI_NUM_REGIONS, i->num_irqs = 5;
        return 0;
      }
      if (req == VFIO_DEVICE_GET_REGION_INFO) {
        auto* r = static_cast<vfio_region_info*>(arg);
        CHECK(r->argsz == sizeof *r);
        calls.push_back("REGION_INFO " + std::to_string(r->index));
        r->offset = r->index * kRegion, r->size = 0, r->flags = 0;
        uint32_t rw = VFIO_REGION_INFO_FLAG_READ | VFIO_REGION_INFO_FLAG_WRITE;
        if (r->index == 0) r->size = regs.size() * 8, r->flags = rw | VFIO_REGION_INFO_FLAG_MMAP;
        if (r->index == 4) r->size = 256, r->flags = rw;  // I/O ports: no mmap
        if (r->index == VFIO_PCI_CONFIG_REGION_INDEX) r->size = 4096, r->flags = rw;
        return 0;
      }
      if (req == VFIO_DEVICE_RESET) return calls.push_back("DEVICE_RESET"), 0;
      return -ENOTTY;
    };
    auto config_at = [](uint64_t off) { return off / kRegion == VFIO_PCI_CONFIG_REGION_INDEX ? off % kRegion : ~uint64_t{0}; };
    device->on_pread = [this, config_at](std::span<uint8_t> d, uint64_t off) -> long {
      if (config_at(off) + d.size() > 4096) return -EINVAL;
      std::memcpy(d.data(), pci.config.data() + config_at(off), d.size());
      return long(d.size());
    };
    device->on_pwrite = [this, config_at](std::span<const uint8_t> s, uint64_t off) -> long {
      if (config_at(off) + s.size() > 4096) return -EINVAL;
      std::memcpy(pci.config.data() + config_at(off), s.data(), s.size());
      return long(s.size());
    };
    device->on_mmap = [this](uint64_t off, size_t len) -> void* { return off == 0 && len <= regs.size() * 8 ? regs.data() : nullptr; };
    auto group = std::make_shared<emu::FunctionFile>();
    group->on_ioctl = [this, device](unsigned long req, void* arg) -> int {
      switch (req) {
        case VFIO_GROUP_GET_STATUS: {
          auto* s = static_cast<vfio_group_status*>(arg);
          CHECK(s->argsz == sizeof *s);
          calls.push_back("GROUP_GET_STATUS");
          s->flags = viable ? VFIO_GROUP_FLAGS_VIABLE : 0;
          return 0;
        }
        case VFIO_GROUP_SET_CONTAINER:
          calls.push_back("GROUP_SET_CONTAINER");
          CHECK(os.fd_path(*static_cast<int*>(arg)) == "/dev/vfio/vfio");
          container_set = true;
          return 0;
        case VFIO_GROUP_GET_DEVICE_FD:
          calls.push_back("GROUP_GET_DEVICE_FD " + std::string(static_cast<const char*>(arg)));
          if (!container_set) return -EINVAL;
          return os.add_fd(device, "vfio device 0000:03:00.0");
      }
      return -ENOTTY;
    };
    os.add_device("/dev/vfio/vfio", container);
    os.add_device("/dev/vfio/12", group);
  }
};
}  // namespace

TEST_CASE("seams: VfioPciDevice opens through container, group and device with the kernel's ioctl sequence") {
  FakeVfio v;
  auto dev = sys::open_pci_device(v.os, kAddr);
  CHECK(dev->kind() == "vfio");
  CHECK(static_cast<sys::VfioPciDevice&>(*dev).group() == "12");
  std::vector<std::string> expect = {"GET_API_VERSION",     "CHECK_EXTENSION 3", "GROUP_GET_STATUS",
                                     "GROUP_SET_CONTAINER", "SET_IOMMU 3",       "GROUP_GET_DEVICE_FD 0000:03:00.0",
                                     "DEVICE_GET_INFO"};
  for (int i = 0; i < 8; ++i) expect.push_back("REGION_INFO " + std::to_string(i));
  CHECK(v.calls == expect);

  CHECK(dev->vendor_id() == 0x1002);  // config space through the config region
  CHECK((v.pci.config[4] & 6) == 6);
  CHECK(dev->bar_size(0) == 2 << 20);
  dev->bar(0).write64(0x2000, 0xfeedfacecafebeefull);
  CHECK(v.regs[0x2000 / 8] == 0xfeedfacecafebeefull);
  CHECK_THROWS_WITH_AS(dev->bar(4), Contains("cannot be mapped through vfio"), Error);
  CHECK_THROWS_WITH_AS(dev->bar(2), Contains("has no BAR2"), Error);

  {
    sys::DmaBuffer a = dev->dma_alloc(5000), b = dev->dma_alloc(4096);
    REQUIRE(v.mapped.size() == 2);
    CHECK(v.mapped[0] == std::pair<uint64_t, uint64_t>{uint64_t{1} << 32, 8192});
    CHECK(v.mapped[1] == std::pair<uint64_t, uint64_t>{(uint64_t{1} << 32) + 8192, 4096});
    CHECK(v.mapped_host[0] == a.host);
    CHECK(a.bus_address(100) == (uint64_t{1} << 32) + 100);
    CHECK(b.bus_address(4095) == (uint64_t{1} << 32) + 8192 + 4095);
    a.host[4999] = 9;
    CHECK(v.unmapped.empty());
  }
  std::reverse(v.mapped.begin(), v.mapped.end());  // b goes first
  CHECK(v.unmapped == v.mapped);                   // both unmapped from the IOMMU when the buffers went
  dev->reset();
  CHECK(v.calls.back() == "DEVICE_RESET");
  dev.reset();
  CHECK(v.os.open_fds() == 0);
  CHECK(v.os.mappings() == 0);
}

TEST_CASE("seams: VfioPciDevice explains a group that is not viable and a group it may not open") {
  FakeVfio v;
  v.viable = false;
  std::string m = message_of([&] { sys::open_pci_device(v.os, kAddr); });
  CHECK(m.find("IOMMU group 12 of 0000:03:00.0 is not viable") != std::string::npos);
  CHECK(m.find("0000:03:00.0 (vfio-pci), 0000:03:00.1 (snd_hda_intel)") != std::string::npos);
  CHECK(v.os.open_fds() == 0);  // the container and group fds were closed

  FakeVfio denied;
  denied.os.set_errno_on_open("/dev/vfio/12", EACCES);
  CHECK_THROWS_WITH_AS(sys::open_pci_device(denied.os, kAddr), Contains("sudo chown $USER /dev/vfio/12"), sys::OsError);
  FakeVfio nomod;
  nomod.os.remove("/dev/vfio");
  CHECK_THROWS_WITH_AS(sys::open_pci_device(nomod.os, kAddr), Contains("modprobe vfio-pci"), sys::OsError);
}

// ---- USB ----

namespace {
struct LoopbackUsb : sys::UsbTransport {
  size_t accept = SIZE_MAX;  // bytes a bulk OUT takes
  std::string name() const override { return "usb test"; }
  size_t do_bulk(uint8_t, std::span<uint8_t> d, std::chrono::milliseconds) override { return std::min(d.size(), accept); }
  size_t do_control(uint8_t, uint8_t, uint16_t, uint16_t, std::span<uint8_t> d, std::chrono::milliseconds) override { return d.size(); }
};
}  // namespace

TEST_CASE("seams: UsbTransport checks endpoint directions and reports short sends") {
  LoopbackUsb u;
  std::vector<uint8_t> buf(64);
  u.bulk_out(0x02, buf);
  CHECK(u.bulk_in(0x81, buf) == 64);
  CHECK_THROWS_WITH_AS(u.bulk_out(0x81, buf), Contains("which is an IN endpoint"), Error);
  CHECK_THROWS_WITH_AS(u.bulk_in(0x02, buf), Contains("which is an OUT endpoint"), Error);
  u.accept = 10;
  CHECK_THROWS_WITH_AS(u.bulk_out(0x02, buf), Contains("sent 10 of 64 bytes"), sys::UsbError);
  std::vector<uint8_t> huge(70000);
  CHECK_THROWS_WITH_AS(u.control(0xc0, 1, 0, 0, huge), Contains("wLength allows 65535"), Error);
}

TEST_CASE("seams: opening an absent USB device is a clear UsbError, with or without a USB bus") {
  std::string m = message_of([] { sys::LibusbTransport t(0xdead, 0xbeef); });
  CAPTURE(m);
  CHECK(m.find("opening usb dead:beef") == 0);
  CHECK((m.find("no such device") != std::string::npos || m.find("LIBUSB_ERROR_") != std::string::npos));
}
