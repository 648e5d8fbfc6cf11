// The Adreno driver over kgsl (drivers/qcom) against the emulated Adreno (emu/qcom): the kgsl model
// validating ioctls as kgsl does, the CP executing what the driver records (signals, waits across
// queues, timestamps, barriers, CP_MEMCPY copies, bound queues with patched values), back-pressure on a
// small command ring, and faults: a GPU page fault becomes a context reset the device names, a hang
// times out, and recover() brings the device back in both cases.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <numeric>
#include <thread>

#include "codegen/builtin_kernels.h"
#include "codegen/compiler.h"
#include "drivers/devices.h"
#include "drivers/qcom/qcom_device.h"
#include "emu/os/virtual_os.h"
#include "emu/qcom/ir3_exec.h"
#include "emu/qcom/kgsl_model.h"
#include "hw/qcom/kgsl.h"
#include "hw/qcom/packets.h"
#include "hw/qcom/pm4_opcodes.h"
#include "ir/text.h"
#include "tests/hcq/device_suite.h"

using namespace ugpu;
namespace kgsl = hw::qcom::kgsl;
using doctest::Contains;

namespace {
struct Emu {
  std::shared_ptr<emu::VirtualOs> os = std::make_shared<emu::VirtualOs>();
  std::shared_ptr<emu::qcom::AdrenoGpu> gpu;
  explicit Emu(emu::qcom::AdrenoConfig cfg = {}) {
    if (!cfg.shader) cfg.shader = std::make_shared<emu::qcom::Ir3Executor>();
    gpu = emu::qcom::install_kgsl_gpu(*os, cfg);
  }
  std::unique_ptr<hcq::Device> open(qcom::QcomOptions o = {}) {
    o.name = "emu:qcom", o.kind = "emulated gpu";
    return qcom::open_qcom(os, o);
  }
};

struct Raw {  // the kgsl model without the driver
  Emu e;
  int fd;
  explicit Raw(emu::qcom::AdrenoConfig cfg = {}) : e(cfg), fd(e.os->open("/dev/kgsl-3d0", O_RDWR)) {}
  int ioctl(unsigned long r, void* a) { return e.os->ioctl(fd, r, a); }
  uint32_t context() {
    kgsl::DrawctxtCreate c{kgsl::kContextNoGmemAlloc, 0};
    REQUIRE(ioctl(kgsl::kDrawctxtCreate, &c) == 0);
    return c.drawctxt_id;
  }
  std::pair<uint32_t, uint32_t*> alloc(uint64_t bytes) {
    kgsl::GpuobjAlloc a{};
    a.size = bytes, a.flags = kgsl::kMemUseCpuMap;
    REQUIRE(ioctl(kgsl::kGpuobjAlloc, &a) == 0);
    void* p = e.os->mmap(nullptr, a.mmapsize, PROT_READ | PROT_WRITE, MAP_SHARED, fd, uint64_t{a.id} * 4096);
    return {a.id, static_cast<uint32_t*>(p)};
  }
  int submit(uint32_t ctx, const void* ib, uint64_t bytes, uint32_t* ts = nullptr) {
    kgsl::CommandObject o{0, reinterpret_cast<uint64_t>(ib), bytes, kgsl::kCmdlistIb, 0};
    kgsl::GpuCommand c{};
    c.cmdlist = reinterpret_cast<uint64_t>(&o), c.cmdsize = sizeof o, c.numcmds = 1, c.context_id = ctx;
    int r = ioctl(kgsl::kGpuCommand, &c);
    if (ts) *ts = c.timestamp;
    return r;
  }
  int wait(uint32_t ctx, uint32_t ts, uint32_t ms = 2000) {
    kgsl::WaitTimestampCtxtid w{ctx, ts, ms};
    return ioctl(kgsl::kWaitTimestampCtxtid, &w);
  }
};
}  // namespace

TEST_CASE("qcom emu: kgsl's validation — request numbers, ids, addresses, properties") {
  Raw k;
  kgsl::DevInfo info{};
  kgsl::DeviceGetProperty p{kgsl::kPropDeviceInfo, 0, reinterpret_cast<uint64_t>(&info), sizeof info};
  REQUIRE(k.ioctl(kgsl::kDeviceGetProperty, &p) == 0);
  CHECK(info.chip_id == 0x06030001u);
  CHECK(info.gpu_id == 630);
  p.sizebytes = 8;
  CHECK(k.ioctl(kgsl::kDeviceGetProperty, &p) == -EINVAL);
  CHECK(k.ioctl(kgsl::kDeviceGetProperty & ~(0x3fffu << 16), &p) == -ENOTTY);  // another size: another request
  uint32_t ctx = k.context();
  kgsl::DrawctxtCreate bad{0x1u, 0};  // a flag kgsl does not take for this path
  CHECK(k.ioctl(kgsl::kDrawctxtCreate, &bad) == -EINVAL);

  // The power constraint: a context, a level up to the maximum.
  uint32_t level = kgsl::kConstraintPwrMax;
  kgsl::DeviceConstraint c{kgsl::kConstraintPwrlevel, ctx, reinterpret_cast<uint64_t>(&level), 4};
  kgsl::DeviceGetProperty sp{kgsl::kPropPwrConstraint, 0, reinterpret_cast<uint64_t>(&c), sizeof c};
  CHECK(k.ioctl(kgsl::kSetProperty, &sp) == 0);
  level = 7;
  CHECK(k.ioctl(kgsl::kSetProperty, &sp) == -EINVAL);
  c.context_id = 99, level = 1;
  CHECK(k.ioctl(kgsl::kSetProperty, &sp) == -EINVAL);

  // Memory: the GPU address is the CPU mapping's; a wrapped pointer that is already GPU memory is EFAULT.
  auto [id, words] = k.alloc(8192);
  REQUIRE(words);
  kgsl::MapUserMem u{};
  u.hostptr = reinterpret_cast<uint64_t>(words), u.len = 4096, u.memtype = kgsl::kUserMemTypeAddr, u.flags = kgsl::kMemUseCpuMap;
  CHECK(k.ioctl(kgsl::kMapUserMem, &u) == -EFAULT);
  std::vector<uint8_t> host(3 * 4096);
  auto* page = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(host.data()) + 4095) / 4096 * 4096);
  u.hostptr = reinterpret_cast<uint64_t>(page);
  REQUIRE(k.ioctl(kgsl::kMapUserMem, &u) == 0);
  CHECK(u.gpuaddr == u.hostptr);
  kgsl::SharedmemFree f{u.gpuaddr};
  CHECK(k.ioctl(kgsl::kSharedmemFree, &f) == 0);
  CHECK(k.ioctl(kgsl::kSharedmemFree, &f) == -EINVAL);

  // Submissions: IBs inside GPU memory, dword sized; timestamps count per context; a wait for one
  // never issued is EINVAL.
  words[0] = hw::qcom::type7_header(hw::qcom::pm4::CP_NOP, 0);
  uint32_t ts = 0;
  CHECK(k.submit(ctx, page, 4) == -EINVAL);   // not GPU memory any more
  CHECK(k.submit(ctx, words, 6) == -EINVAL);  // not whole dwords
  CHECK(k.submit(99, words, 4) == -EINVAL);   // no such context
  REQUIRE(k.submit(ctx, words, 4, &ts) == 0);
  CHECK(ts == 1);
  CHECK(k.wait(ctx, ts) == 0);
  CHECK(k.wait(ctx, ts + 1) == -EINVAL);
  kgsl::GpuobjFree gf{};
  gf.id = id;
  CHECK(k.ioctl(kgsl::kGpuobjFree, &gf) == 0);
  CHECK(k.ioctl(kgsl::kGpuobjFree, &gf) == -EINVAL);
  k.e.os->munmap(words, 8192);
}

TEST_CASE("qcom emu: a bad packet resets the context that sent it: guilty, its later work refused with EDEADLK") {
  Raw k;
  uint32_t ctx = k.context(), other = k.context();
  auto [id, words] = k.alloc(4096);
  words[0] = hw::qcom::type7_header(hw::qcom::pm4::CP_NOP, 0) ^ (1u << 15);  // parity broken
  words[1] = hw::qcom::type7_header(hw::qcom::pm4::CP_NOP, 0);
  uint32_t ts = 0;
  REQUIRE(k.submit(ctx, words, 4, &ts) == 0);
  CHECK(k.wait(ctx, ts) == -EDEADLK);
  auto log = k.e.gpu->log();
  REQUIRE(log.size() == 1);
  CHECK_MESSAGE(log[0].find("not a packet header") != std::string::npos, log[0]);
  CHECK_MESSAGE(log[0].find("bad parity") != std::string::npos, log[0]);
  uint32_t v = ctx;
  kgsl::DeviceGetProperty p{kgsl::kPropGpuResetStat, 0, reinterpret_cast<uint64_t>(&v), 4};
  REQUIRE(k.ioctl(kgsl::kDeviceGetProperty, &p) == 0);
  CHECK(v == kgsl::kCtxStatGuilty);
  v = ctx;
  REQUIRE(k.ioctl(kgsl::kDeviceGetProperty, &p) == 0);
  CHECK(v == kgsl::kCtxStatNoError);  // the query clears it
  CHECK(k.submit(ctx, words + 1, 4) == -EDEADLK);
  REQUIRE(k.submit(other, words + 1, 4, &ts) == 0);  // another context is unaffected
  CHECK(k.wait(other, ts) == 0);
  CHECK(k.e.gpu->stats().faults == 1);
  k.e.os->munmap(words, 4096);
}

TEST_CASE("qcom: no /dev/kgsl-3d0, and a chip ugpu does not compile for, are clear errors") {
  auto os = std::make_shared<emu::VirtualOs>();
  CHECK_THROWS_WITH_AS(qcom::open_qcom(os, {}), Contains("no /dev/kgsl-3d0"), Error);
  emu::qcom::AdrenoConfig a7;
  a7.chip_id = 0x07030001, a7.gpu_id = 730;
  Emu e(a7);
  CHECK_THROWS_WITH_AS(e.open(), Contains("chip id 0x7030001 (a730)"), Error);
  CHECK_THROWS_WITH_AS(e.open(), Contains("compiles for a630, a660 only"), Error);
  emu::qcom::AdrenoConfig unknown;
  unknown.chip_id = 0x05040001;
  Emu u(unknown);
  CHECK_THROWS_WITH_AS(u.open(), Contains("(unknown)"), Error);
}

TEST_CASE("qcom: signals, waits across queues, timestamps, barriers and CP_MEMCPY copies run on the emulated Adreno") {
  Emu e;
  auto dev = e.open();
  auto f = qcom::facts(*dev);
  CHECK(f.chip == "a630");
  CHECK(dev->info().arch == "a630");
  CHECK(dev->clock_hz() == 19200000);

  // A 64-bit signal value: the high half by a memory write, the low half by the flush event.
  auto s = dev->new_signal(0);
  auto q = dev->compute_queue();
  q->signal(*s, 0x100000007ull).submit();
  dev->wait(*s, 0x100000007ull, "signal");
  CHECK(s->value() == 0x100000007ull);

  // One queue waits on the CP for a value the host sets later; the other signals behind it.
  auto gate = dev->new_signal(0), done = dev->new_signal(0), t0 = dev->new_signal(0), t1 = dev->new_signal(0);
  auto a = dev->compute_queue();
  a->wait(*gate, 3).timestamp(*t0).memory_barrier().timestamp(*t1).signal(*done, 1).submit();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  CHECK(done->value() == 0);
  gate->set(3);
  dev->wait(*done, 1, "done");
  CHECK(t0->timestamp() > 0);
  CHECK(t1->timestamp() >= t0->timestamp());

  // Copies: dword-aligned with CP_MEMCPY; through the staging buffers with copy_in/copy_out.
  hcq::Buffer x = dev->alloc(1 << 20), y = dev->alloc(1 << 20);
  std::vector<uint8_t> in(1 << 20), out(1 << 20);
  std::iota(in.begin(), in.end(), uint8_t{7});
  dev->copy_in(x, 0, in);
  auto c = dev->compute_queue();
  c->copy(y.va + 4096, x.va, (1 << 20) - 4096).signal(*done, 2).submit();
  dev->wait(*done, 2, "copy");
  dev->copy_out(out, y, 0);
  CHECK(std::equal(out.begin() + 4096, out.end(), in.begin()));
  CHECK(std::all_of(out.begin(), out.begin() + 4096, [](uint8_t b) { return b == 0; }));
  // Bytes at odd addresses: the driver's byte-copy kernel (ir3, compiled by ugpu) instead of CP_MEMCPY.
  auto odd = dev->compute_queue();
  odd->copy(y.va + 1, x.va + 3, 1001).signal(*done, 3).submit();
  dev->wait(*done, 3, "byte copy");
  dev->copy_out(out, y, 0);
  CHECK(std::equal(out.begin() + 1, out.begin() + 1002, in.begin() + 3));
  CHECK(out[0] == 0);
  CHECK(out[1002] == 0);
  CHECK(e.gpu->stats().submissions >= 4);
}

TEST_CASE("qcom: a bound queue runs where it is, with values patched per submit") {
  Emu e;
  auto dev = e.open();
  auto s = dev->new_signal(0);
  auto q = dev->compute_queue();
  q->signal(*s, hcq::Val::variable(0, 10));
  q->bind();
  for (uint64_t v : {1, 2, 5}) {
    q->submit(std::vector<uint64_t>{v});
    dev->wait(*s, v + 10, "patched signal");
    CHECK(s->value() == v + 10);
  }
}

TEST_CASE("qcom: a full command ring makes submits wait (back-pressure) instead of overwriting work in flight") {
  Emu e;
  qcom::QcomOptions o;
  o.ring_bytes = 4096;
  auto dev = e.open(o);
  auto gate = dev->new_signal(0), s = dev->new_signal(0);
  dev->compute_queue()->wait(*gate, 1).submit();
  std::thread release([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    gate->set(1);
  });
  for (uint64_t i = 1; i <= 200; ++i) dev->compute_queue()->signal(*s, i).submit();
  release.join();
  dev->wait(*s, 200, "last signal");
  CHECK(qcom::facts(*dev).ring_waits > 0);
  CHECK(dev->ring_waits() > 0);
}

TEST_CASE("qcom: a GPU page fault is a named device error; a hang times out; recover() brings the device back") {
  Emu e;
  auto dev = e.open();
  hcq::Buffer x = dev->alloc(4096);
  auto s = dev->new_signal(0);
  dev->compute_queue()->copy(0x1000, x.va, 64).signal(*s, 1).submit();  // nothing is mapped at 0x1000
  CHECK_THROWS_WITH_AS(dev->wait(*s, 1, "after the bad copy"), Contains("kgsl reset the context"), hcq::DeviceError);
  CHECK(dev->failed());
  CHECK_MESSAGE(dev->error().find("dmesg") != std::string::npos, dev->error());
  auto log = e.gpu->log();
  REQUIRE(!log.empty());
  CHECK_MESSAGE(log.back().find("page fault: write of 64 bytes at 0x1000") != std::string::npos, log.back());
  CHECK_MESSAGE(log.back().find("CP_MEMCPY") != std::string::npos, log.back());
  CHECK_THROWS_AS(dev->compute_queue()->signal(*s, 2).submit(), hcq::DeviceError);
  dev->recover();
  dev->compute_queue()->signal(*s, 2).submit();
  dev->wait(*s, 2, "after recover");

  // A wait nobody satisfies: the device times out, then recovers (the stuck context is destroyed).
  auto never = dev->new_signal(0), after = dev->new_signal(0);
  dev->compute_queue()->wait(*never, 1).signal(*after, 1).submit();
  CHECK_THROWS_AS(dev->wait(*after, 1, "behind the stuck wait", std::chrono::milliseconds(200)), hcq::Timeout);
  CHECK(dev->failed());
  dev->recover();
  dev->compute_queue()->signal(*after, 2).submit();
  dev->wait(*after, 2, "after the second recover");
  CHECK(after->value() == 2);
}

TEST_CASE("qcom: the codegen kernel suite through the driver matches the CPU device, every kernel checked for hazards") {
  auto dev = drivers::open_emu_qcom({});
  test::kernel_suite_matches_cpu(*dev);
  CHECK(dev->executed_instructions().value_or(0) > 0);
}

TEST_CASE("qcom: a kernel's binary is checked before it is loaded: truncated, foreign or inconsistent ones are errors") {
  auto ck = codegen::compile(ir::parse(codegen::builtin_kernel("add_one").text), codegen::find_target("a630"));
  REQUIRE(ck->ir3);
  CHECK(ck->ir3->code.size() % 16 == 0);
  CHECK(ck->ir3->full_regs >= 1);
  CHECK(codegen::read_ir3_object(ck->binary).code == ck->ir3->code);
  std::vector<uint8_t> b = ck->binary;
  CHECK_THROWS_WITH_AS(codegen::read_ir3_object(std::span(b).first(b.size() - 8)), Contains("the code is"), Error);
  CHECK_THROWS_WITH_AS(codegen::read_ir3_object(std::span(b).first(10)), Contains("ends at byte 10"), Error);
  auto bad = b;
  bad[0] = 'X';
  CHECK_THROWS_WITH_AS(codegen::read_ir3_object(bad), Contains("no UIR3 magic"), Error);
  bad = b;
  bad[8] = 49;  // 49 full registers
  CHECK_THROWS_WITH_AS(codegen::read_ir3_object(bad), Contains("49 full registers"), Error);
  bad = b;
  bad[4] = 2;  // version 2
  CHECK_THROWS_WITH_AS(codegen::read_ir3_object(bad), Contains("version 2"), Error);
  // The disassembly is ugpu's own: every word decodes, the kernel ends.
  std::string text = codegen::disassembly(*ck);
  CHECK(text.find("not decoded") == std::string::npos);
  CHECK(text.find("end") != std::string::npos);
  CHECK(text.find("ldg.u32") != std::string::npos);
  CHECK(text.find("stg.u32") != std::string::npos);
  // 64-bit floats are refused by name.
  const char* f64 = R"(out = DEFINE_GLOBAL:double* {0}
i = RANGE(4) {0, GLOBAL}
SINK(END(STORE(INDEX:double*(out, i), CAST:double(i)), i))
)";
  CHECK_THROWS_WITH_AS(codegen::compile(ir::parse(f64), codegen::find_target("a630")), Contains("has no double arithmetic"), Error);
}

TEST_CASE("qcom: an Adreno 660 (gen 4) gets the SP_CS_CNTL_0/1 copies of the id registers and runs the kernel suite") {
  emu::qcom::AdrenoConfig a660;
  a660.chip_id = 0x06060001, a660.gpu_id = 660;
  Emu e(a660);
  auto dev = e.open();
  CHECK(dev->target() == "a660");
  CHECK(qcom::facts(*dev).chip == "a660");
  test::kernel_suite_matches_cpu(*dev);
  // The launch carries the copies (the emulated a660 faults when they differ from HLSQ_CS_CNTL_0/1).
  auto prog = drivers::load_kernel(*dev, ir::parse(codegen::builtin_kernel("add_one").text), "add_one");
  hcq::Buffer a = dev->alloc(4000), b = dev->alloc(4000);
  auto q = dev->compute_queue();
  hcq::Val args[] = {a.va, b.va};
  q->exec(*prog, args);
  q->submit();
  dev->synchronize();
  std::string text = hw::qcom::describe_stream(qcom::last_submission(*dev));
  CHECK(text.find("SP_CS_CNTL_0 = ") != std::string::npos);
  CHECK(text.find("SP_CS_CNTL_1 = ") != std::string::npos);
}

TEST_CASE("qcom emu: on an a660 a dispatch whose SP_CS_CNTL_0/1 do not repeat HLSQ_CS_CNTL_0/1 is a fault naming them") {
  emu::qcom::AdrenoConfig a660;
  a660.chip_id = 0x06060001, a660.gpu_id = 660;
  Raw k(a660);
  uint32_t ctx = k.context();
  auto [id, words] = k.alloc(4096);
  size_t n = 0;
  words[n++] = hw::qcom::type4_header(0xb997, 1);  // HLSQ_CS_CNTL_0, without the SP_CS_CNTL_0 copy
  words[n++] = 0xfcfcc0;
  words[n++] = hw::qcom::type7_header(hw::qcom::pm4::CP_EXEC_CS, 4);
  for (uint32_t v : {0u, 1u, 1u, 1u}) words[n++] = v;
  uint32_t ts = 0;
  REQUIRE(k.submit(ctx, words, n * 4, &ts) == 0);
  CHECK(k.wait(ctx, ts) == -EDEADLK);
  auto log = k.e.gpu->log();
  REQUIRE(!log.empty());
  CHECK_MESSAGE(log.back().find("SP_CS_CNTL_0/1") != std::string::npos, log.back());
  k.e.os->munmap(words, 4096);
}
