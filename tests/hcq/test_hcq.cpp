// The HCQ conformance suite: the same checks for every device the build knows (drivers/devices.h),
// so each device that joins the table is held to all of them. Where devices differ — what an
// out-of-bounds kernel reports, what an emulated GPU's own log and queues show, how to open one with
// small rings — the per-device table below says what each must do.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <thread>

#include "codegen/builtin_kernels.h"
#include "codegen/compiler.h"
#include "common/split.h"
#include "drivers/amd/am/am.h"
#include "drivers/amd/kfd/kfd.h"
#include "drivers/cpu/cpu_device.h"
#include "drivers/devices.h"
#include "drivers/nv/rm/rm_gpu.h"
#include "drivers/qcom/qcom_device.h"
#include "emu/amd/am/am_card.h"
#include "emu/amd/kfd/kfd_model.h"
#include "emu/nv/rm/rm_model.h"
#include "emu/qcom/ir3_exec.h"
#include "emu/qcom/kgsl_model.h"
#include "emu/usb/asm24_model.h"
#include "hcq/graph.h"
#include "hcq/profiler.h"
#include "ir/text.h"
#include "llvm/Support/JSON.h"

using namespace ugpu;
using hcq::Val;

namespace {

// A device opened for a test and, for an emulated GPU, the emulator's own view of it.
struct Opened {
  std::unique_ptr<hcq::Device> dev;
  std::function<std::vector<std::string>()> gpu_log;  // what the emulated GPU logged (faults, overruns); empty: no emulator
  std::function<uint64_t()> gpu_queues;               // hardware queues (channels) it still has; empty: no emulator
};
// `small_rings`: command rings that a few dozen submissions fill, for the back-pressure cases.
using Opener = std::function<Opened(bool small_rings)>;

Opened open_cpu(bool small_rings, bool copy_engine) {
  return {std::make_unique<cpu::CpuDevice>(small_rings ? 2 : 0, small_rings ? 64 : 1 << 16, copy_engine), {}, {}};
}
std::shared_ptr<sys::Os> host_os() {
  return std::shared_ptr<sys::Os>(&sys::posix_os(), [](sys::Os*) {});
}
amd::AmdOptions amd_options(bool small_rings) {
  amd::AmdOptions o;
  if (small_rings) o.compute_ring_bytes = o.sdma_ring_bytes = 4096;  // 1024 dwords
  return o;
}
nv::NvOptions nv_options(bool small_rings) {
  nv::NvOptions o;
  if (small_rings) o.gpfifo_entries = 16, o.pushbuffer_bytes = 4096;
  return o;
}
// Real GPUs through the host's kernel drivers (the silicon suite), as drivers/devices.cpp opens them.
Opened open_amd_kfd(bool small_rings) { return {amd::open_kfd(host_os(), amd_options(small_rings)), {}, {}}; }
Opened open_amd_pci(bool small_rings) {
  amd::AmdOptions o = amd_options(small_rings);
  o.name = "amd:pci";
  return {amd::open_am(host_os(), o), {}, {}};
}
Opened open_amd_usb(bool small_rings) {
  amd::AmdOptions o = amd_options(small_rings);
  o.name = "amd:usb";
  if (!small_rings) o.compute_ring_bytes = amd::kUsbComputeRingBytes;
  return {amd::open_am_usb(host_os(), drivers::open_usb_bridge(), o), {}, {}};
}
Opened open_nv_rm(bool small_rings) { return {nv::open_nv(host_os(), nv_options(small_rings)), {}, {}}; }
// The emulated GPUs as drivers/devices.cpp opens them, keeping the emulator for its log and stats.
Opened open_emu_amd(bool small_rings) {
  auto os = std::make_shared<emu::VirtualOs>();
  auto gpu = emu::amd::install_kfd_gpu(*os);
  amd::AmdOptions o = amd_options(small_rings);
  o.name = "emu:amd", o.kind = "emulated gpu";
  return {amd::open_kfd(os, o), [gpu] { return gpu->log(); }, [gpu] { return gpu->stats().queues; }};
}
Opened open_emu_amd_pci(bool small_rings) {
  drivers::EmuAmPci e = drivers::make_emu_am_pci();
  amd::AmdOptions o = amd_options(small_rings);
  o.name = "emu:amd:pci", o.kind = "emulated gpu";
  return {amd::open_am(e.os, o, e.options), [gpu = e.card] { return gpu->faults(); }, [gpu = e.card] { return gpu->stats().queues; }};
}
Opened open_emu_amd_usb(bool small_rings) {
  drivers::EmuAmUsb e = drivers::make_emu_am_usb();
  amd::AmdOptions o = amd_options(small_rings);
  o.name = "emu:amd:usb", o.kind = "emulated gpu";
  if (!small_rings) o.compute_ring_bytes = amd::kUsbComputeRingBytes;  // as drivers/devices.cpp opens it
  return {amd::open_am_usb(e.os, e.bridge, o, e.options), [gpu = e.card] { return gpu->faults(); }, [gpu = e.card] { return gpu->stats().queues; }};
}
Opened open_emu_nv(bool small_rings) {
  auto os = std::make_shared<emu::VirtualOs>();
  auto gpu = emu::nv::install_nv_gpu(*os);
  nv::NvOptions o = nv_options(small_rings);
  o.name = "emu:nv", o.kind = "emulated gpu", o.emulator_runs_ptx = true;
  return {nv::open_nv(os, o), [gpu] { return gpu->log(); }, [gpu] { return gpu->stats().channels; }};
}
qcom::QcomOptions qcom_options(bool small_rings) {
  qcom::QcomOptions o;
  if (small_rings) o.ring_bytes = 4096;
  return o;
}
Opened open_qcom(bool small_rings) { return {qcom::open_qcom(host_os(), qcom_options(small_rings)), {}, {}}; }
Opened open_emu_qcom(bool small_rings) {
  auto os = std::make_shared<emu::VirtualOs>();
  emu::qcom::AdrenoConfig cfg;
  cfg.shader = std::make_shared<emu::qcom::Ir3Executor>();
  auto gpu = emu::qcom::install_kgsl_gpu(*os, cfg);
  qcom::QcomOptions o = qcom_options(small_rings);
  o.name = "emu:qcom", o.kind = "emulated gpu";
  return {qcom::open_qcom(os, o), [gpu] { return gpu->log(); }, [gpu] { return gpu->stats().contexts; }};
}

// What each device must do where devices differ, by its name in drivers/devices.h. A device without a
// row fails the cases that need one: a new device states its expectations here.
struct DeviceRow {
  std::string device;
  // A kernel storing to an unmapped address: texts the device's error must contain (the first one also
  // the DeviceError's message) — or none, where the device cannot detect it, and `undetected` says why.
  std::vector<std::string> fault{};
  std::string undetected{};
  std::string fault_instruction{};  // what the emulated GPU's log calls the faulting instruction
  Opener open;
};
const std::vector<DeviceRow>& device_rows() {
  static const std::vector<std::string> amd_fault = {"GPU page fault at 0x10", "kernel add_one", "an unmapped address"};
  // The RC error's name too: the channel stopped on robust-channel error 31.
  static const std::vector<std::string> nv_fault = {"GPU MMU fault at 0x10", "kernel add_one", "write of an unmapped address",
                                                    "FIFO_ERROR_MMU_ERR_FLT"};
  static const std::vector<DeviceRow> rows = {
      {.device = "cpu",
       .fault = {"page fault at 0x10", "kernel add_one", "an unmapped address"},
       .open = [](bool small) { return open_cpu(small, false); }},
      {.device = "emu:amd", .fault = amd_fault, .fault_instruction = "global_store", .open = open_emu_amd},
      {.device = "emu:amd:pci",
       .fault = {"GPU page fault at 0x10", "kernel add_one", "a write of unmapped memory"},
       .fault_instruction = "global_store",
       .open = open_emu_amd_pci},
      {.device = "emu:amd:usb",
       .fault = {"GPU page fault at 0x10", "kernel add_one", "a write of unmapped memory"},
       .fault_instruction = "global_store",
       .open = open_emu_amd_usb},
      {.device = "amd:kfd", .fault = amd_fault, .open = open_amd_kfd},
      {.device = "amd:pci", .fault = {"GPU page fault at 0x10", "kernel add_one", "a write of unmapped memory"}, .open = open_amd_pci},
      {.device = "amd:usb", .fault = {"GPU page fault at 0x10", "kernel add_one", "a write of unmapped memory"}, .open = open_amd_usb},
      {.device = "amd", .fault = amd_fault, .open = open_amd_kfd},
      {.device = "emu:nv", .fault = nv_fault, .fault_instruction = "st.global", .open = open_emu_nv},
      {.device = "nv", .fault = nv_fault, .open = open_nv_rm},
      // kgsl reports a fault only as a context reset; the emulated GPU's log has the address.
      {.device = "emu:qcom", .fault = {"kgsl reset the context", "kernel add_one"}, .fault_instruction = "stg", .open = open_emu_qcom},
      {.device = "qcom", .fault = {"kgsl reset the context", "kernel add_one"}, .open = open_qcom},
  };
  return rows;
}
const DeviceRow& row_of(const std::string& device) {
  for (const DeviceRow& r : device_rows())
    if (r.device == device) return r;
  throw Error("tests/hcq/test_hcq.cpp has no row for device '" + device + "': add one to device_rows()");
}

struct TestDevice {
  std::string label;  // for messages
  std::string row;    // its row in device_rows()
  Opener open;
};
TestDevice by_name(const std::string& name) { return {name, name, row_of(name).open}; }
// Every known device, plus the CPU with a separate copy engine (two rings, as GPUs have); or the
// devices $UGPU_TEST_DEVICES names (comma-separated), as the silicon suite runs it on real GPUs.
std::vector<TestDevice> devices() {
  std::vector<TestDevice> d;
  if (const char* env = std::getenv("UGPU_TEST_DEVICES"); env && *env) {
    for (const std::string& n : split_list(env)) d.push_back(by_name(n));
    return d;
  }
  for (const drivers::DeviceEntry& e : drivers::known_devices())
    if (!e.hardware) d.push_back(by_name(e.name));
  d.push_back({"cpu with a copy engine", "cpu", [](bool small) { return open_cpu(small, true); }});
  return d;
}

template <class F>
void each_device(F f) {
  for (const TestDevice& d : devices()) {
    CAPTURE(d.label);
    auto dev = d.open(false).dev;
    f(*dev);
  }
}

const std::string& add_one_text() { return codegen::builtin_kernel("add_one").text; }
std::shared_ptr<hcq::Program> add_one(hcq::Device& dev) { return drivers::load_kernel(dev, ir::parse(add_one_text()), "add_one"); }
// A buffer's contents, read and written through the device (copy_out, copy_in), so the checks hold
// on devices whose buffers the host cannot map (emu:amd:usb) as well.
std::vector<int32_t> ints(hcq::Device& dev, const hcq::Buffer& b) {
  std::vector<int32_t> v(b.size / 4);
  dev.copy_out({reinterpret_cast<uint8_t*>(v.data()), v.size() * 4}, b, 0);
  return v;
}
std::vector<uint8_t> bytes_of(hcq::Device& dev, const hcq::Buffer& b) {
  std::vector<uint8_t> v(b.size);
  dev.copy_out(v, b, 0);
  return v;
}
void put(hcq::Device& dev, const hcq::Buffer& b, std::span<const int32_t> v, size_t first = 0) {
  dev.copy_in(b, first * 4, {reinterpret_cast<const uint8_t*>(v.data()), v.size() * 4});
}
template <class F>
std::vector<int32_t> make_ints(size_t n, F f) {
  std::vector<int32_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = f(int(i));
  return v;
}
bool has_line(const std::vector<std::string>& log, const std::string& text) {
  return std::any_of(log.begin(), log.end(), [&](const std::string& l) { return l.find(text) != std::string::npos; });
}
// add_one on a fresh buffer: the device runs kernels.
void runs_a_kernel(hcq::Device& dev) {
  auto inc = add_one(dev);
  hcq::Buffer a = dev.alloc(4000), b = dev.alloc(4000);
  uint64_t w = dev.next_timeline();
  auto q = dev.compute_queue();
  Val args[] = {b.va, a.va};
  q->exec(*inc, args).memory_barrier().signal(dev.timeline(), w);
  q->submit();
  dev.synchronize();
  CHECK(ints(dev, b)[999] == 1);
}

}  // namespace

TEST_CASE("hcq: a wait issued before its signal holds the queue until the host sets it") {
  each_device([](hcq::Device& dev) {
    auto a = dev.new_signal(), b = dev.new_signal();
    auto q = dev.compute_queue();
    q->wait(*a, 1).signal(*b, 7);
    q->submit();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    CHECK(b->value() == 0);
    a->set(1);
    dev.wait(*b, 7, "test signal");
    CHECK(b->value() == 7);
  });
}

TEST_CASE("hcq: a wait that is never satisfied ends in Timeout and a device error state") {
  each_device([](hcq::Device& dev) {
    auto s = dev.new_signal();
    CHECK_THROWS_WITH_AS(dev.wait(*s, 1, "a signal nobody sets", std::chrono::milliseconds(50)), doctest::Contains("did not reach 1 within 50 ms"),
                         hcq::Timeout);
    CHECK(dev.failed());
    auto q = dev.compute_queue();
    q->signal(*s, 1);
    CHECK_THROWS_AS(q->submit(), hcq::DeviceError);
  });
  // Another device is unaffected.
  auto other = devices()[0].open(false).dev;
  auto s = other->new_signal();
  auto q = other->compute_queue();
  q->signal(*s, 3);
  q->submit();
  other->wait(*s, 3, "other device");
}

TEST_CASE("hcq: patch slots take each submit's values and only changed ones are rewritten") {
  each_device([](hcq::Device& dev) {
    auto s = dev.new_signal(), t = dev.new_signal();
    auto q = dev.compute_queue();
    q->signal(*s, Val::variable(0)).signal(*t, Val::variable(1, 100));
    uint64_t v1[] = {5, 1};
    q->submit(v1);
    dev.wait(*t, 101, "t");
    CHECK(s->value() == 5);
    CHECK(q->patch_writes() == 2);
    uint64_t v2[] = {5, 2};
    q->submit(v2);
    dev.wait(*t, 102, "t");
    CHECK(q->patch_writes() == 3);
    CHECK_THROWS_WITH(q->submit(), doctest::Contains("uses variable"));
  });
}

TEST_CASE("hcq: 2 x 100 resubmits of a bound queue running a kernel, with patched arguments") {
  each_device([](hcq::Device& dev) {
    auto prog = add_one(dev);
    hcq::Buffer a = dev.alloc(4000), b = dev.alloc(4000);
    auto q = dev.compute_queue();
    Val args[] = {Val::variable(1), Val::variable(2)};
    q->wait(dev.timeline(), Val::variable(0)).exec(*prog, args).memory_barrier().signal(dev.timeline(), Val::variable(0, 1));
    q->bind();
    CHECK(q->bound());
    for (int round = 0; round < 2; ++round) {
      // ping-pong between a and b: after 100 launches every element has grown by 100
      put(dev, a, make_ints(1000, [&](int i) { return i * round; }));
      for (int n = 0; n < 100; ++n) {
        uint64_t v = dev.next_timeline();
        bool even = n % 2 == 0;
        uint64_t vars[] = {v - 1, even ? b.va : a.va, even ? a.va : b.va};
        q->submit(vars);
      }
      dev.synchronize();
      int bad = 0;
      auto got = ints(dev, a);
      for (int i = 0; i < 1000; ++i) bad += got[i] != i * round + 100;
      CHECK(bad == 0);
    }
  });
}

TEST_CASE("hcq: copies in and out of any size through small staging buffers; overlaps refused") {
  each_device([](hcq::Device& dev) {
    std::mt19937 rng(3);
    for (size_t n : {size_t{1}, size_t{3}, size_t{4097}, size_t{(5 << 20) + 7}}) {
      CAPTURE(n);
      std::vector<uint8_t> in(n), out(n);
      for (auto& x : in) x = static_cast<uint8_t>(rng());
      hcq::Buffer b = dev.alloc(n + 5);
      dev.copy_in(b, 5, in);
      dev.copy_out(out, b, 5);
      CHECK(in == out);
    }
    hcq::Buffer b = dev.alloc(64);
    std::vector<uint8_t> big(65);
    CHECK_THROWS_WITH(dev.copy_in(b, 0, big), doctest::Contains("outside the 64-byte buffer"));
    auto q = dev.compute_queue();
    CHECK_THROWS_WITH(q->copy(b.va, b.va + 8, 16), doctest::Contains("overlapping"));
  });
}

TEST_CASE("hcq: timeline rollover near 2^31 keeps ordering and values") {
  each_device([](hcq::Device& dev) {
    auto prog = add_one(dev);
    hcq::Buffer a = dev.alloc(4000), b = dev.alloc(4000);
    dev.set_rollover_for_test((uint64_t{1} << 31) - 5, uint64_t{1} << 31);
    for (int n = 0; n < 12; ++n) {
      uint64_t v = dev.next_timeline();
      auto q = dev.compute_queue();
      Val args[] = {n % 2 ? a.va : b.va, n % 2 ? b.va : a.va};
      q->wait(dev.timeline(), v - 1).exec(*prog, args).memory_barrier().signal(dev.timeline(), v);
      q->submit();
    }
    dev.synchronize();
    CHECK(dev.last_timeline() < 100);  // rolled over
    int bad = 0;
    auto got = ints(dev, a);
    for (int i = 0; i < 1000; ++i) bad += got[i] != 12;
    CHECK(bad == 0);
  });
}

TEST_CASE("hcq: more submissions than the rings hold wait for space and lose nothing") {
  for (const TestDevice& d : devices()) {
    CAPTURE(d.label);
    Opened o = d.open(true);
    hcq::Device& dev = *o.dev;
    auto inc = add_one(dev);
    hcq::Buffer a = dev.alloc(4000), b = dev.alloc(4000), c = dev.alloc(4000);
    auto gate = dev.new_signal();
    std::jthread opener;
    for (int n = 0; n < 400; ++n) {
      uint64_t v = dev.next_timeline();
      auto q = dev.compute_queue();
      if (n == 0) q->wait(*gate, 1);  // nothing runs until the rings have filled
      Val args[] = {n % 2 ? a.va : b.va, n % 2 ? b.va : a.va};
      q->wait(dev.timeline(), v - 1).exec(*inc, args).memory_barrier().signal(dev.timeline(), v);
      q->submit();
      if (n == 0) opener = std::jthread([&gate] { std::this_thread::sleep_for(std::chrono::milliseconds(100)), gate->set(1); });
    }
    for (int n = 0; n < 200; ++n) {  // and the copy ring (the compute ring where copies share it), copy after copy
      uint64_t v = dev.next_timeline();
      auto q = dev.copy_queue();
      q->wait(dev.timeline(), v - 1).copy(c.va + 4 * (n % 10), a.va + 4 * (n % 10), 4).signal(dev.timeline(), v);
      q->submit();
    }
    dev.synchronize();
    CHECK(ints(dev, a)[7] == 400);
    CHECK(ints(dev, c)[3] == 400);
    CHECK(!dev.failed());
    CHECK(dev.ring_waits() > 0);                // back-pressure happened
    if (o.gpu_log) CHECK(o.gpu_log().empty());  // and the GPU never saw an overrun or a bad packet
  }
}

TEST_CASE("hcq: a queue larger than half a ring is refused until it is bound, then runs as one indirect command") {
  for (const TestDevice& d : devices()) {
    CAPTURE(d.label);
    Opened o = d.open(true);
    hcq::Device& dev = *o.dev;
    auto s = dev.new_signal();
    auto big = dev.compute_queue();
    for (int i = 1; i <= 300; ++i) big->signal(*s, i);
    CHECK_THROWS_WITH(big->submit(), doctest::Contains("bind() it"));
    big->bind();
    big->submit();
    dev.wait(*s, 300, "the bound queue");
    big->submit();  // again: the same indirect command
    dev.synchronize();
    CHECK(!dev.failed());
  }
}

namespace {
// scale: out[i] = in[i] * 2 + 1 over 4096 elements; chained kernels only see correct values when
// each one runs after the previous one's writes are visible.
const char* kScale = R"(out = DEFINE_GLOBAL:int32* {0}
in = DEFINE_GLOBAL:int32* {1}
i = RANGE(4096) {0, GLOBAL}
SINK(END(STORE(INDEX:int32*(out, i), LOAD:int32(INDEX:int32*(in, i)) * 2 + 1), i))
)";
// A loop of n steps that cannot be folded away (each step reads the other slot): n = 2^62 never ends,
// the hang of the hang case (a kernel for that test alone, not a built-in one).
const char* kSpin = R"(out = DEFINE_GLOBAL:uint32* {0}
n = DEFINE_VAR:index {"n", 1, 4611686018427387904}
i = RANGE(n) {0, LOOP}
SINK(END(STORE(INDEX:uint32*(out, i % 2), LOAD:uint32(INDEX:uint32*(out, (i + 1) % 2)) * 3 + 1), i))
)";
int64_t host_ns() { return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
}  // namespace

TEST_CASE("hcq: memory barriers order dependent kernels and copies") {
  each_device([](hcq::Device& dev) {
    auto scale = drivers::load_kernel(dev, ir::parse(kScale), "scale");
    hcq::Buffer a = dev.alloc(4 * 4096), b = dev.alloc(4 * 4096), c = dev.alloc(4 * 4096);
    for (int round = 0; round < 20; ++round) {
      put(dev, a, make_ints(4096, [&](int i) { return i + round; }));
      uint64_t v = dev.next_timeline();
      auto q = dev.compute_queue();
      Val ab[] = {b.va, a.va}, ba[] = {a.va, b.va};
      q->wait(dev.timeline(), v - 1).exec(*scale, ab).memory_barrier().exec(*scale, ba).memory_barrier();
      q->copy(c.va, a.va, 4 * 4096).memory_barrier().signal(dev.timeline(), v);
      q->submit();
      dev.synchronize();
      int bad = 0;
      auto got = ints(dev, c);
      for (int i = 0; i < 4096; ++i) bad += got[i] != ((i + round) * 2 + 1) * 2 + 1;
      CHECK(bad == 0);
    }
  });
}

TEST_CASE("hcq: an empty launch (a grid size of 0 from a variable) is a no-op on every device, between launches that run") {
  static constexpr const char* kFill = R"(out = DEFINE_GLOBAL:int32* {0}
n = DEFINE_VAR:index {"n", 0, 4096}
i = RANGE(n) {0, GLOBAL}
SINK(END(STORE(INDEX:int32*(out, i), CONST:int32 {7}), i))
)";
  each_device([](hcq::Device& dev) {
    auto fill = drivers::load_kernel(dev, ir::parse(kFill), "fill");
    hcq::Buffer a = dev.alloc(4 * 4096), b = dev.alloc(4 * 4096);
    uint64_t v = dev.next_timeline();
    auto q = dev.compute_queue();
    Val none[] = {a.va, uint64_t{0}}, some[] = {a.va, uint64_t{100}}, b_none[] = {b.va, uint64_t{0}};
    q->wait(dev.timeline(), v - 1).exec(*fill, none).exec(*fill, some).exec(*fill, b_none).signal(dev.timeline(), v);
    q->submit();
    dev.synchronize();
    CHECK(!dev.failed());
    auto got = ints(dev, a);  // alloc hands out zeroed memory
    CHECK(got[0] == 7);
    CHECK(got[99] == 7);
    CHECK(got[100] == 0);
    CHECK(ints(dev, b)[0] == 0);
  });
}

TEST_CASE("hcq: a bool in memory is a byte, true when it is not 0, and a stored bool is 0 or 1, on every device") {
  // in[i] holds the byte i (0..255); out[i] = in[i] as int32, flags[i] = NOT in[i] stored as bool.
  // Scalar loads (j) and 4-wide vector loads and stores (u, UPCAST) both.
  static constexpr const char* kBools = R"(out = DEFINE_GLOBAL:int32* {0}
flags = DEFINE_GLOBAL:bool* {1}
in = DEFINE_GLOBAL:bool* {2}
j = RANGE(64) {0, GLOBAL}
u = RANGE(4) {1, UPCAST}
b = LOAD:bool(INDEX:bool*(in, j*4 + u))
SINK(END(STORE(INDEX:int32*(out, j*4 + u), CAST:int32(b)), j, u), END(STORE(INDEX:bool*(flags, j*4 + u), CMPNE:bool(b, CONST:bool {true})), j, u))
)";
  each_device([](hcq::Device& dev) {
    auto k = drivers::load_kernel(dev, ir::parse(kBools), "bools");
    hcq::Buffer out = dev.alloc(4 * 256), flags = dev.alloc(256), in = dev.alloc(256);
    std::vector<uint8_t> junk(4 * 256, 0x55), counting(256);
    for (int i = 0; i < 256; ++i) counting[i] = static_cast<uint8_t>(i);
    dev.copy_in(out, 0, junk), dev.copy_in(flags, 0, std::span(junk).first(256)), dev.copy_in(in, 0, counting);
    uint64_t v = dev.next_timeline();
    auto q = dev.compute_queue();
    Val args[] = {out.va, flags.va, in.va};
    q->wait(dev.timeline(), v - 1).memory_barrier().exec(*k, args).memory_barrier().signal(dev.timeline(), v);
    q->submit();
    dev.synchronize();
    REQUIRE(!dev.failed());
    auto got = ints(dev, out);
    auto got_flags = bytes_of(dev, flags);
    for (int i = 0; i < 256; ++i) {
      CAPTURE(i);
      CHECK(got[i] == (i != 0 ? 1 : 0));
      CHECK(got_flags[i] == (i != 0 ? 0 : 1));
    }
  });
}

TEST_CASE("hcq: a graph of 100 kernels replays with new inputs by patching") {
  each_device([](hcq::Device& dev) {
    auto inc = add_one(dev);
    hcq::Buffer x = dev.alloc(4000), y = dev.alloc(4000), z = dev.alloc(4000);
    hcq::Graph g;
    // var 0 = input, var 1 = output; the middle ping-pongs through y and z.
    for (int n = 0; n < 100; ++n) {
      Val out = n == 99 ? Val::variable(1) : Val(n % 2 ? z.va : y.va);
      Val in = n == 0 ? Val::variable(0) : Val(n % 2 ? y.va : z.va);
      g.exec(dev, inc, {out, in});
    }
    CHECK(g.variables() == 2);
    hcq::Buffer in1 = dev.alloc(4000), in2 = dev.alloc(4000), out1 = dev.alloc(4000), out2 = dev.alloc(4000);
    put(dev, in1, make_ints(1000, [](int i) { return i; })), put(dev, in2, make_ints(1000, [](int i) { return -i; }));
    for (int rep = 0; rep < 10; ++rep) {
      bool odd = rep % 2;
      uint64_t vars[] = {odd ? in2.va : in1.va, odd ? out2.va : out1.va};
      g.replay(vars);
      g.wait();
      int bad = 0;
      auto got = ints(dev, odd ? out2 : out1);
      for (int i = 0; i < 1000; ++i) bad += got[i] != (odd ? -i : i) + 100;
      CHECK(bad == 0);
      const int32_t junk[] = {12345};  // each replay must write its output again
      put(dev, out1, junk), put(dev, out2, junk);
    }
    CHECK(g.queues() == 1);
    // Progress values grow by 101 per replay; near 2^31 they start over and replays stay correct.
    g.set_replays_for_test((uint64_t{1} << 31) / 101 - 3);
    for (int rep = 0; rep < 6; ++rep) {
      put(dev, in1, make_ints(1000, [&](int i) { return i * rep; }));
      uint64_t vars[] = {in1.va, out1.va};
      g.replay(vars);
      g.wait();
      int bad = 0;
      auto got = ints(dev, out1);
      for (int i = 0; i < 1000; ++i) bad += got[i] != i * rep + 100;
      CHECK(bad == 0);
    }
    put(dev, in1, make_ints(1000, [](int i) { return i; }));
    // The replay is on the device's timeline: synchronize covers it, later work runs after it.
    uint64_t vars[] = {in1.va, out1.va};
    g.replay(vars);
    dev.synchronize();
    CHECK(ints(dev, out1)[7] == 107);
    CHECK_THROWS_WITH(g.replay({}), doctest::Contains("needs 2 variables"));
  });
}

TEST_CASE("hcq: a graph over compute and copy queues orders them with waits") {
  each_device([](hcq::Device& dev) {
    auto scale = drivers::load_kernel(dev, ir::parse(kScale), "scale");
    const uint64_t n = 4 * 4096;
    hcq::Buffer a = dev.alloc(n), b = dev.alloc(n), c = dev.alloc(n), d = dev.alloc(n), e = dev.alloc(n);
    hcq::Graph g;
    int k1 = g.exec(dev, scale, {b.va, Val::variable(0)});
    int c1 = g.copy(dev, c.va, b.va, n, std::vector<int>{k1});
    int k2 = g.exec(dev, scale, {d.va, c.va}, std::vector<int>{c1});
    g.copy(dev, e.va, d.va, n, std::vector<int>{k2});
    for (int rep = 0; rep < 20; ++rep) {
      put(dev, a, make_ints(4096, [&](int i) { return i - rep; }));
      uint64_t vars[] = {a.va};
      g.replay(vars);
      g.wait();
      int bad = 0;
      auto got = ints(dev, e);
      for (int i = 0; i < 4096; ++i) bad += got[i] != ((i - rep) * 2 + 1) * 2 + 1;
      CHECK(bad == 0);
    }
    CHECK(g.queues() == (dev.copy_ring_separate() ? 2u : 1u));
    auto cq = dev.copy_queue();
    if (dev.copy_ring_separate()) CHECK_THROWS_WITH(cq->exec(*scale, std::vector<Val>{a.va, b.va}), doctest::Contains("runs no kernels"));
  });
}

TEST_CASE("hcq: a graph across two devices waits across them") {
  auto d0 = devices()[0].open(false).dev, d1 = devices().back().open(false).dev;
  auto s0 = drivers::load_kernel(*d0, ir::parse(kScale), "scale"), s1 = drivers::load_kernel(*d1, ir::parse(kScale), "scale");
  hcq::Buffer a = d0->alloc(4 * 4096), b = d0->alloc(4 * 4096), c = d1->alloc(4 * 4096), d = d1->alloc(4 * 4096);
  if (!b.host || !c.host) {  // device 1 reads device 0's memory and waits on its signals
    MESSAGE("not run: " << (b.host ? d1->name() : d0->name()) << " keeps its memory where another device cannot reach it (behind the USB bridge)");
    return;
  }
  hcq::Graph g;
  int first = g.exec(*d0, s0, {b.va, Val::variable(0)});
  int copy = g.copy(*d1, c.va, b.va, 4 * 4096, std::vector<int>{first});  // device 1 reads device 0's result
  g.exec(*d1, s1, {d.va, c.va}, std::vector<int>{copy});
  for (int rep = 0; rep < 5; ++rep) {
    put(*d0, a, make_ints(4096, [&](int i) { return i * rep; }));
    uint64_t vars[] = {a.va};
    g.replay(vars);
    g.wait();
    int bad = 0;
    auto got = ints(*d1, d);
    for (int i = 0; i < 4096; ++i) bad += got[i] != (i * rep * 2 + 1) * 2 + 1;
    CHECK(bad == 0);
  }
  CHECK(g.queues() == (d1->copy_ring_separate() ? 3u : 2u));  // d1 copies on its own ring
}

TEST_CASE("hcq: profiler timestamps are monotone, aligned to host time, and written as Chrome trace") {
  each_device([](hcq::Device& dev) {
    auto prof = std::make_shared<hcq::Profiler>();
    dev.set_profiler(prof);
    auto scale = drivers::load_kernel(dev, ir::parse(kScale), "scale");
    hcq::Buffer a = dev.alloc(4 * 4096), b = dev.alloc(4 * 4096);
    int64_t before = host_ns();
    auto q = dev.compute_queue();
    Val ab[] = {b.va, a.va}, ba[] = {a.va, b.va};
    uint64_t v = dev.next_timeline();
    q->wait(dev.timeline(), v - 1);
    for (int k = 0; k < 5; ++k) q->exec(*scale, ab).memory_barrier().exec(*scale, ba).memory_barrier();
    q->copy(b.va, a.va, 4096).signal(dev.timeline(), v);
    q->submit();
    dev.synchronize();
    int64_t after = host_ns();
    auto ev = prof->events();
    REQUIRE(ev.size() == 11);
    int64_t slack = 2'000'000;  // the clock offset is measured to within a submit's round trip
    for (size_t i = 0; i < ev.size(); ++i) {
      CAPTURE(i);
      CHECK(ev[i].device == dev.name());
      CHECK(ev[i].start_ns <= ev[i].end_ns);
      if (i) CHECK(ev[i - 1].end_ns <= ev[i].start_ns);  // one queue: in order, no overlap
      CHECK(ev[i].start_ns >= before - slack);
      CHECK(ev[i].end_ns <= after + slack);
    }
    CHECK(ev[0].name == "scale");
    CHECK(ev.back().copy);
    auto json = llvm::json::parse(prof->chrome_trace());
    REQUIRE(static_cast<bool>(json));
    const llvm::json::Array* events = json->getAsObject()->getArray("traceEvents");
    REQUIRE(events);
    int complete = 0;
    for (const llvm::json::Value& e : *events) complete += e.getAsObject()->getString("ph") == llvm::StringRef("X");
    CHECK(complete == 11);
    dev.set_profiler(nullptr);
  });
}

TEST_CASE("hcq: a hung kernel ends in Timeout and an error state, its queues stopped; other devices keep working") {
  for (const TestDevice& d : devices()) {
    CAPTURE(d.label);
    Opened o = d.open(false);
    hcq::Device& dev = *o.dev;
    auto spin = drivers::load_kernel(dev, ir::parse(kSpin), "spin");
    hcq::Buffer out = dev.alloc(64);
    // The same kernel with a short loop finishes: the recurrence is really computed.
    uint64_t v = dev.next_timeline();
    auto q = dev.compute_queue();
    Val few[] = {out.va, 3};
    q->exec(*spin, few).memory_barrier().signal(dev.timeline(), v);
    q->submit();
    dev.synchronize();
    CHECK(ints(dev, out)[0] == 13);
    v = dev.next_timeline();
    auto hang = dev.compute_queue();
    Val forever[] = {out.va, uint64_t{1} << 62};
    hang->exec(*spin, forever).signal(dev.timeline(), v);
    hang->submit();
    std::string message;
    try {
      dev.wait(dev.timeline(), v, "the hung kernel", std::chrono::milliseconds(300));
    } catch (const hcq::Timeout& e) { message = e.what(); }
    CHECK(message.find("the hung kernel") != std::string::npos);
    // The GPU drivers know which kernel hung and say so (issue 18: the message named only a signal).
    if (o.gpu_queues) CHECK(message.find("while running kernel spin") != std::string::npos);
    CHECK(dev.failed());
    CHECK_THROWS_AS(dev.synchronize(), hcq::DeviceError);
    if (o.gpu_queues) CHECK(o.gpu_queues() == 0);  // the driver destroyed its queues (channels), which stopped the kernel
    // Independent devices run while this one is failed: another of its kind, and the first of the list.
    runs_a_kernel(*d.open(false).dev);
    runs_a_kernel(*devices()[0].open(false).dev);
  }  // destroying the failed device returns: the hung kernel was stopped
}

TEST_CASE("hcq: an out-of-bounds kernel is a device fault naming the kernel and the address, on every device that can detect one") {
  for (const TestDevice& d : devices()) {
    CAPTURE(d.label);
    const DeviceRow& row = row_of(d.row);
    REQUIRE_MESSAGE(row.fault.empty() != row.undetected.empty(), "a row gives either the fault's texts or why the device cannot detect it");
    if (row.fault.empty()) {
      MESSAGE(d.label << ": not run: " << row.undetected);
      continue;
    }
    Opened o = d.open(false);
    hcq::Device& dev = *o.dev;
    auto prog = add_one(dev);
    hcq::Buffer in = dev.alloc(4000);
    uint64_t v = dev.next_timeline();
    auto q = dev.compute_queue();
    Val args[] = {uint64_t{0x10000}, in.va};  // the output buffer address is not mapped
    q->exec(*prog, args).signal(dev.timeline(), v);
    q->submit();
    CHECK_THROWS_WITH_AS(dev.synchronize(), doctest::Contains(row.fault[0].c_str()), hcq::DeviceError);
    CHECK(dev.failed());
    for (const std::string& text : row.fault) CHECK_MESSAGE(dev.error().find(text) != std::string::npos, dev.error() << " lacks " << text);
    if (!row.fault_instruction.empty()) {
      REQUIRE(o.gpu_log);
      CHECK_MESSAGE(has_line(o.gpu_log(), row.fault_instruction), "the emulator's log names the faulting instruction");
    }
    CHECK_THROWS_AS(dev.alloc(64), hcq::DeviceError);
  }
}

TEST_CASE("hcq: on the cpu device a store running off the end of a buffer hits its guard page: a device fault, the process alive") {
  cpu::CpuDevice dev;
  auto prog = add_one(dev);
  hcq::Buffer big = dev.alloc(8 << 20), in = dev.alloc(4000);  // a buffer this large is its own mapping
  uint64_t v = dev.next_timeline();
  auto q = dev.compute_queue();
  Val args[] = {big.va + big.size - 400, in.va};  // add_one writes 1000 int32: 3600 bytes too many
  q->exec(*prog, args).signal(dev.timeline(), v);
  q->submit();
  CHECK_THROWS_WITH_AS(dev.synchronize(), doctest::Contains("page fault at 0x"), hcq::DeviceError);
  CHECK(dev.failed());
  CHECK_MESSAGE(dev.error().find("bytes past the end of device memory at") != std::string::npos, dev.error());
  CHECK_MESSAGE(dev.error().find("kernel add_one") != std::string::npos, dev.error());
  CHECK(static_cast<int32_t*>(big.host)[big.size / 4 - 100] == 1);  // the part inside the buffer was written before the fault
}

TEST_CASE("hcq: the kernarg ring waits for the device instead of overwriting, and steps over live queues") {
  each_device([](hcq::Device& dev) {
    dev.set_kernarg_ring_size(4096);  // 64 blocks of 64 bytes
    auto inc = add_one(dev);
    hcq::Buffer a = dev.alloc(4000), b = dev.alloc(4000);
    auto keeper = dev.compute_queue();  // holds its block for the whole test
    Val keep_args[] = {b.va, a.va};
    keeper->exec(*inc, keep_args);
    auto gate = dev.new_signal();
    std::thread opener([&] { std::this_thread::sleep_for(std::chrono::milliseconds(50)), gate->set(1); });
    for (int n = 0; n < 300; ++n) {
      uint64_t v = dev.next_timeline();
      auto q = dev.compute_queue();
      Val args[] = {n % 2 ? a.va : b.va, n % 2 ? b.va : a.va};
      if (n == 0) q->wait(*gate, 1);  // the device is held back while the ring fills
      q->wait(dev.timeline(), v - 1).exec(*inc, args).memory_barrier().signal(dev.timeline(), v);
      q->submit();
    }
    opener.join();
    dev.synchronize();
    CHECK(ints(dev, a)[5] == 300);
    hcq::KernargStats st = dev.kernarg_stats();
    CHECK(st.waits > 0);
    CHECK(st.skips > 0);
    CHECK(st.overflows == 0);
    // Live queues holding the whole ring: allocations go outside it, and still work.
    std::vector<std::unique_ptr<hcq::HWQueue>> held;
    for (int n = 0; n < 70; ++n) {
      held.push_back(dev.compute_queue());
      held.back()->exec(*inc, keep_args);
    }
    CHECK(dev.kernarg_stats().overflows > 0);
    uint64_t v = dev.next_timeline();
    held.back()->memory_barrier().signal(dev.timeline(), v);
    held.back()->submit();
    dev.synchronize();
    CHECK(ints(dev, b)[5] == 301);
  });
}

TEST_CASE("hcq: device memory: small blocks share chunks, large ones are reused from the LRU cache after their work") {
  each_device([](hcq::Device& dev) {
    std::vector<hcq::Buffer> small;
    for (int i = 0; i < 100; ++i) small.push_back(dev.alloc(1000 + i));
    CHECK(dev.memory_stats().chunks == 1);
    for (size_t i = 1; i < small.size(); ++i) CHECK(small[i].va % 256 == 0);
    small.clear();
    dev.synchronize();
    hcq::Buffer again = dev.alloc(1000);  // freed heap ranges come back once the work before the free is done
    CHECK(dev.memory_stats().chunks == 1);
    CHECK(dev.memory_stats().heap_used == 1024);

    uint64_t big_va;
    {
      hcq::Buffer big = dev.alloc(16 << 20);
      big_va = big.va;
      const int32_t seven[] = {7};
      put(dev, big, seven, 1);
      dev.synchronize();  // the copy is done before the free, so the cache may hand the buffer out at once
    }
    uint64_t hits = dev.memory_stats().cache_hits;
    hcq::Buffer big2 = dev.alloc(16 << 20);
    CHECK(big2.va == big_va);
    CHECK(dev.memory_stats().cache_hits == hits + 1);
    CHECK(ints(dev, big2)[1] == 0);  // handed out zeroed

    // Freed while queued work may still use it: not handed out again until that work is done.
    auto gate = dev.new_signal();
    uint64_t v = dev.next_timeline();
    auto q = dev.compute_queue();
    q->wait(*gate, 1).signal(dev.timeline(), v);
    q->submit();
    uint64_t va2 = big2.va;
    big2 = {};
    hcq::Buffer other = dev.alloc(16 << 20);
    CHECK(other.va != va2);
    gate->set(1);
    dev.synchronize();
    hcq::Buffer third = dev.alloc(16 << 20);
    CHECK(third.va == va2);
  });
}

TEST_CASE("hcq: device memory: a large buffer the cache does not keep stays mapped until the work that uses it is done") {
  // Above the cache limit (an LLM prefill's arena) or pushed out of the cache: freed while a queued
  // kernel still writes it, the memory must not go back to the driver under that kernel.
  each_device([](hcq::Device& dev) {
    dev.set_cache_limit(8 << 20);
    auto inc = add_one(dev);
    for (bool pushed_out : {false, true}) {
      CAPTURE(pushed_out);
      hcq::Buffer big = dev.alloc(pushed_out ? 6 << 20 : 12 << 20), src = dev.alloc(4000);
      auto gate = dev.new_signal();
      uint64_t v = dev.next_timeline();
      auto q = dev.compute_queue();
      Val args[] = {big.va, src.va};
      q->wait(*gate, 1).exec(*inc, args).memory_barrier().signal(dev.timeline(), v);
      q->submit();
      big = {};  // dropped while the kernel waits to write it
      if (pushed_out) {
        hcq::Buffer b1 = dev.alloc(6 << 20), b2 = dev.alloc(6 << 20);  // freed in turn: the first freed goes out of the cache
      }
      hcq::Buffer more = dev.alloc(12 << 20);  // an allocation reclaims what is done (nothing yet)
      gate->set(1);
      dev.synchronize();
      CHECK_FALSE(dev.failed());
      hcq::Buffer after = dev.alloc(4000);  // and now releases it
    }
    dev.set_cache_limit(256 << 20);
  });
}

TEST_CASE("hcq: range allocator (TLSF) against a reference: no overlaps, alignment, full coalescing") {
  hcq::RangeAllocator r(1 << 20, 64 << 20, 256);
  std::mt19937_64 rng(11);
  std::map<uint64_t, uint64_t> live;  // addr -> size
  for (int step = 0; step < 20000; ++step) {
    if (live.empty() || rng() % 3) {
      uint64_t size = rng() % 4 ? rng() % 5000 + 1 : rng() % (2 << 20) + 1;
      uint64_t align = uint64_t{256} << (rng() % 6);
      auto a = r.alloc(size, align);
      if (!a) continue;
      CHECK(*a % align == 0);
      CHECK(*a >= (1u << 20));
      CHECK(*a + size <= (1u << 20) + (64u << 20));
      auto next = live.lower_bound(*a);
      if (next != live.end()) CHECK(*a + size <= next->first);
      if (next != live.begin()) CHECK(std::prev(next)->first + std::prev(next)->second <= *a);
      live[*a] = size;
    } else {
      auto it = live.begin();
      std::advance(it, static_cast<long>(rng() % live.size()));
      r.free(it->first);
      live.erase(it);
    }
  }
  for (auto& [a, s] : live) r.free(a);
  CHECK(r.free_bytes() == 64u << 20);
  CHECK(r.largest_free() == 64u << 20);  // everything merged back into one range
  CHECK_THROWS_WITH(r.free(12345), doctest::Contains("not allocated"));
  CHECK_FALSE(r.alloc(65u << 20));
}

TEST_CASE("hcq: misuse is refused with a clear error: graph nodes, arguments, programs, targets") {
  each_device([](hcq::Device& dev) {
    auto inc = add_one(dev);
    hcq::Buffer a = dev.alloc(4000);
    hcq::Graph empty;
    CHECK_THROWS_WITH(empty.replay(), doctest::Contains("no nodes"));
    hcq::Graph g;
    CHECK_THROWS_WITH(g.exec(dev, inc, {a.va}), doctest::Contains("takes 2 arguments; 1 given"));
    CHECK_THROWS_WITH(g.exec(dev, nullptr, {}), doctest::Contains("null program"));
    CHECK_THROWS_WITH(g.exec(dev, inc, {a.va, a.va}, std::vector<int>{0}), doctest::Contains("only earlier nodes"));
    g.exec(dev, inc, {a.va, a.va});
    g.replay();
    g.wait();
    CHECK_THROWS_WITH(g.copy(dev, a.va, a.va + 8, 8), doctest::Contains("after the first replay"));
    // A program the queue cannot keep alive, and a kernel for another target.
    struct Loose : hcq::Program {};
    Loose loose;
    loose.name = "loose";
    auto q = dev.compute_queue();
    CHECK_THROWS_WITH(q->exec(loose, {}), doctest::Contains("held by a shared_ptr"));
    codegen::CompileOptions o;
    auto other = codegen::compile(ir::parse(add_one_text()), codegen::find_target(dev.target() == "x86" ? "gfx1100" : "x86"), o);
    CHECK_THROWS_AS(dev.load(other), Error);
  });
}
