// The AMD KFD path end to end on the emulated GPU (meson suite `amd`): the packet tables, the
// emulated amdkfd's validation (the kernel's errnos), the driver's error messages for the bad cases a
// user meets (no /dev/kfd, permissions, KFD version), device faults on malformed packets, and the
// codegen kernel suite run through the driver against the CPU device. Page faults, hangs and full
// rings are cases of the HCQ conformance suite (tests/hcq/test_hcq.cpp), with emu:amd's expectations.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/mman.h>

#include <cmath>
#include <cstring>
#include <random>
#include <thread>

#include "codegen/builtin_kernels.h"
#include "codegen/compiler.h"
#include "codegen/llvm/llvm.h"
#include "drivers/amd/kfd/kfd.h"
#include "drivers/devices.h"
#include "emu/amd/kfd/kfd_model.h"
#include "hw/amd/compute_regs.h"
#include "hw/amd/gfx11_regs.h"
#include "hw/amd/kfd.h"
#include "hw/amd/pm4.h"
#include "hw/amd/sdma6_packets.h"
#include "ir/dtype.h"
#include "ir/text.h"
#include "tests/emu/harness.h"
#include "tests/hcq/device_suite.h"

using namespace ugpu;
namespace pm4 = hw::amd::pm4;
namespace sdma = hw::amd::sdma6;
namespace kfd = hw::amd::kfd;
using hcq::Val;
using hw::amd::Packet;

namespace {

struct EmuSystem {
  std::shared_ptr<emu::VirtualOs> os = std::make_shared<emu::VirtualOs>();
  std::shared_ptr<emu::amd::KfdGpu> gpu;
  explicit EmuSystem(const emu::amd::GpuConfig& cfg = {}) { gpu = emu::amd::install_kfd_gpu(*os, cfg); }
  std::unique_ptr<hcq::Device> open(amd::AmdOptions o = {}) {
    o.name = "emu:amd";
    return amd::open_kfd(os, o);
  }
};

// A minimal KFD client of its own, to hand the emulated kernel driver exactly the arguments a test
// wants (the driver under test would never send these).
struct RawKfd {
  emu::VirtualOs& os;
  sys::Fd kfd, render;
  uint32_t gpu_id = 0;
  explicit RawKfd(emu::VirtualOs& o, bool acquire = true) : os(o), kfd(o, "/dev/kfd", O_RDWR), render(o, "/dev/dri/renderD128", O_RDWR) {
    gpu_id = static_cast<uint32_t>(std::stoul(os.read_file("/sys/devices/virtual/kfd/kfd/topology/nodes/1/gpu_id")));
    if (acquire) {
      kfd::AcquireVm vm{static_cast<uint32_t>(render.get()), gpu_id};
      REQUIRE(io(kfd::kAcquireVm, &vm) == 0);
    }
  }
  int io(unsigned long req, void* arg) { return os.ioctl(kfd.get(), req, arg); }
  struct Mem {
    uint64_t va, handle;
    uint8_t* host;
  };
  Mem alloc(uint64_t size, uint32_t flags = kfd::mem::kGtt | kfd::mem::kWritable | kfd::mem::kExecutable) {
    void* va = os.mmap(nullptr, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    kfd::AllocMemoryOfGpu a{reinterpret_cast<uint64_t>(va), size, 0, 0, gpu_id, flags};
    REQUIRE(io(kfd::kAllocMemoryOfGpu, &a) == 0);
    os.mmap(va, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, render.get(), a.mmap_offset);
    kfd::MapMemoryToGpu m{a.handle, reinterpret_cast<uint64_t>(&gpu_id), 1, 0};
    REQUIRE(io(kfd::kMapMemoryToGpu, &m) == 0);
    return {a.va_addr, a.handle, static_cast<uint8_t*>(va)};
  }
};

// A raw queue of the emulated GPU: ring, pointers, doorbell; `push` writes words and rings.
struct RawQueue {
  RawKfd& k;
  RawKfd::Mem ring, gart, eop{}, cwsr{};
  kfd::CreateQueue args{};
  uint64_t* doorbell = nullptr;
  uint64_t written = 0;
  bool sdma;
  RawQueue(RawKfd& kk, bool is_sdma, uint32_t ring_bytes = 4096) : k(kk), ring(kk.alloc(ring_bytes)), gart(kk.alloc(4096)), sdma(is_sdma) {
    args.ring_base_address = ring.va, args.ring_size = ring_bytes, args.gpu_id = k.gpu_id;
    args.queue_type = sdma ? kfd::kQueueSdma : kfd::kQueueCompute, args.queue_percentage = 100;
    args.write_pointer_address = gart.va, args.read_pointer_address = gart.va + 64;
    if (!sdma) {
      kfd::CwsrSizes s = kfd::cwsr_sizes(110000, 96);
      eop = k.alloc(4096), cwsr = k.alloc(kfd::align_up(uint64_t{s.cwsr} + s.debug_memory, 4096));
      args.eop_buffer_address = eop.va, args.eop_buffer_size = 4096;
      args.ctx_save_restore_address = cwsr.va, args.ctx_save_restore_size = s.cwsr, args.ctl_stack_size = s.ctl_stack;
    }
  }
  int create() { return k.io(kfd::kCreateQueue, &args); }
  void map_doorbell() {
    auto* page = static_cast<uint8_t*>(k.os.mmap(nullptr, kfd::kDoorbellPagesSize, PROT_READ | PROT_WRITE, MAP_SHARED, k.kfd.get(),
                                                 args.doorbell_offset & ~(kfd::kDoorbellPagesSize - 1)));
    doorbell = reinterpret_cast<uint64_t*>(page + (args.doorbell_offset & (kfd::kDoorbellPagesSize - 1)));
  }
  void push(std::span<const uint32_t> w) {
    auto* words = reinterpret_cast<uint32_t*>(ring.host);
    for (uint32_t x : w) words[written++ % (args.ring_size / 4)] = x;
    __atomic_store_n(doorbell, sdma ? written * 4 : written, __ATOMIC_RELEASE);
  }
};

bool wait_for(const std::function<bool()>& f, int ms = 5000) {
  for (int i = 0; i < ms; ++i) {
    if (f()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return f();
}

bool log_has(const emu::amd::KfdGpu& g, const std::string& s) {
  for (const std::string& l : g.log())
    if (l.find(s) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("amd packets: every table encodes and decodes to the same fields, and describes them") {
  Packet<pm4::ReleaseMem> r;
  r.set(pm4::ReleaseMem::event_type, pm4::kEventCacheFlushAndInvTs).set(pm4::ReleaseMem::event_index, 5).set(pm4::ReleaseMem::data_sel, 2);
  r.set(pm4::ReleaseMem::address, 0x7f0000001000).set(pm4::ReleaseMem::data, 0x123456789).set(pm4::ReleaseMem::int_ctxid, 9);
  CHECK(r.dw[0] == 0xC0064900u);  // type 3, 6 + 2 dwords, opcode 0x49 (nvd.h)
  CHECK(r.dw[1] == (20u | 5u << 8));
  CHECK(r.dw[2] == 2u << 29);
  hw::amd::DecodedPacket d = hw::amd::decode_packet(hw::amd::Engine::Pm4, r.dw);
  REQUIRE(d.ok());
  CHECK(d.format == &pm4::ReleaseMem::format);
  CHECK(d.get(pm4::ReleaseMem::address) == 0x7f0000001000);
  CHECK(d.get(pm4::ReleaseMem::data) == 0x123456789);
  std::string text = hw::amd::describe_packet(d);
  CHECK(text.find("RELEASE_MEM event_type=CACHE_FLUSH_AND_INV_TS_EVENT") == 0);
  CHECK(text.find("data_sel=DATA64") != std::string::npos);
  CHECK(text.find("address=0x7f0000001000") != std::string::npos);

  // Every format: each field set to a distinct value comes back from the decoder.
  std::mt19937_64 rng(5);
  using Formats = std::span<const hw::amd::PacketFormat* const>;
  for (Formats list : {Formats(pm4::kFormats), Formats(sdma::kFormats)}) {
    for (const hw::amd::PacketFormat* f : list) {
      CAPTURE(f->name);
      std::vector<uint32_t> w(f->dwords + (f->variable ? 3 : 0), 0);
      w[0] = hw::amd::packet_header(*f, w.size());
      std::vector<uint64_t> want(f->fields.size());
      for (size_t i = 0; i < f->fields.size(); ++i) {
        const auto& fl = f->fields[i];
        std::string_view n = fl.name;
        if (n == "op" || n == "sub_op") continue;  // the header's identity
        uint64_t v = rng() & (fl.width == 64 ? ~uint64_t{0} : (uint64_t{1} << fl.width) - 1);
        v &= ~((uint64_t{1} << fl.align_bits) - 1);
        if (n == "count" && f->variable) v = f == &sdma::Nop::format ? 3 : 2;  // the data that follows
        want[i] = v;
        hw::amd::put_field(w, *f, fl, v);
      }
      hw::amd::DecodedPacket p = hw::amd::decode_packet(f->engine, w);
      REQUIRE_MESSAGE(p.ok(), p.error);
      CHECK(p.format == f);
      for (size_t i = 0; i < f->fields.size(); ++i)
        if (std::string_view(f->fields[i].name) != "op" && std::string_view(f->fields[i].name) != "sub_op") CHECK(p.get(i) == want[i]);
    }
  }
  // Values that do not fit, misaligned addresses, unknown opcodes, wrong lengths, truncated streams.
  CHECK_THROWS_WITH(r.set(pm4::ReleaseMem::event_index, 16), doctest::Contains("does not fit the 4-bit field"));
  CHECK_THROWS_WITH(r.set(pm4::ReleaseMem::address, 0x1002), doctest::Contains("4-byte aligned"));
  uint32_t bad[] = {0xC0009900u, 0};
  CHECK(hw::amd::decode_packet(hw::amd::Engine::Pm4, bad).error.find("unknown PM4 opcode 0x99") != std::string::npos);
  uint32_t shortrel[] = {0xC0054900u, 0, 0, 0, 0, 0, 0};
  CHECK(hw::amd::decode_packet(hw::amd::Engine::Pm4, shortrel).error.find("RELEASE_MEM with 7 dwords") != std::string::npos);
  CHECK(hw::amd::decode_packet(hw::amd::Engine::Pm4, std::span<const uint32_t>(r.dw).first(5)).truncated);
  uint32_t type2[] = {0x80000000u};
  CHECK(hw::amd::decode_packet(hw::amd::Engine::Pm4, type2).error.find("type-2") != std::string::npos);
  uint32_t sdma_bad[] = {0x00000077u};
  CHECK(hw::amd::decode_packet(hw::amd::Engine::Sdma, sdma_bad).error.find("unknown SDMA packet op 119") != std::string::npos);
  // SET_SH_REG names the registers it writes.
  uint32_t sh[] = {hw::amd::packet_header(pm4::SetShReg::format, 4), 0x20c, 0x1234, 0};  // COMPUTE_PGM_LO at GC base 0x1260
  CHECK(hw::amd::describe_packet(hw::amd::decode_packet(hw::amd::Engine::Pm4, sh)).find("COMPUTE_PGM_LO=0x1234, COMPUTE_PGM_HI=0x0") !=
        std::string::npos);
}

TEST_CASE("amd registers: the compute register table is chosen by GC version; a generation without one is a clear error") {
  const hw::amd::ComputeRegisters& r = hw::amd::compute_registers(110000);
  CHECK(std::string(r.generation) == "gfx11");
  CHECK(r.pgm_lo.offset == hw::amd::gfx11::COMPUTE_PGM_LO.offset);
  CHECK(hw::amd::address_of(r.pgm_lo, {}) == 0x1260 + 0x1bac);  // Navi31's GC base + the gfx11 offset
  CHECK(&hw::amd::compute_registers(110003) == &r);             // every gfx11 chip (gfx1103 ...) shares it
  CHECK_THROWS_WITH(hw::amd::compute_registers(120001), doctest::Contains("no compute register table for GC 12"));
  CHECK_THROWS_WITH(hw::amd::compute_registers(90402), doctest::Contains("ugpu has: gfx11"));
}

TEST_CASE("amd emu: the emulated amdkfd validates ioctls as the kernel does (same errno)") {
  EmuSystem sys;
  {
    RawKfd early(*sys.os, false);
    kfd::AllocMemoryOfGpu a{0x100000, 4096, 0, 0, early.gpu_id, kfd::mem::kGtt};
    CHECK(early.io(kfd::kAllocMemoryOfGpu, &a) == -EINVAL);  // before ACQUIRE_VM
    kfd::AcquireVm vm{static_cast<uint32_t>(early.kfd.get()), early.gpu_id};
    CHECK(early.io(kfd::kAcquireVm, &vm) == -EINVAL);  // not a render node
  }
  RawKfd k(*sys.os);
  CHECK(k.io(_IOWR('K', 0x40, kfd::GetVersion), nullptr) == -EINVAL);  // past the last command
  kfd::GetVersion small{};
  CHECK(k.io(_IOR('K', 0x01, uint32_t), &small) == 0);  // a shorter struct is accepted: what fits is copied
  CHECK(small.major_version == 1);
  CHECK(small.minor_version == 0);
  void* va = sys.os->mmap(nullptr, 8192, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  uint64_t base = reinterpret_cast<uint64_t>(va);
  kfd::AllocMemoryOfGpu a{base, 0, 0, 0, k.gpu_id, kfd::mem::kGtt};
  CHECK(k.io(kfd::kAllocMemoryOfGpu, &a) == -EINVAL);  // size 0
  a = {base, 4096, 0, 0, k.gpu_id, kfd::mem::kGtt | kfd::mem::kVram};
  CHECK(k.io(kfd::kAllocMemoryOfGpu, &a) == -EINVAL);  // two domains
  a = {base + 12, 4096, 0, 0, k.gpu_id, kfd::mem::kGtt};
  CHECK(k.io(kfd::kAllocMemoryOfGpu, &a) == -EINVAL);  // unaligned
  a = {base, 4096, 0, 0, k.gpu_id + 1, kfd::mem::kGtt};
  CHECK(k.io(kfd::kAllocMemoryOfGpu, &a) == -EINVAL);  // unknown GPU
  a = {base, 8192, 0, 0, k.gpu_id, kfd::mem::kGtt};
  CHECK(k.io(kfd::kAllocMemoryOfGpu, &a) == 0);
  kfd::AllocMemoryOfGpu overlap{base + 4096, 4096, 0, 0, k.gpu_id, kfd::mem::kGtt};
  CHECK(k.io(kfd::kAllocMemoryOfGpu, &overlap) == -EINVAL);  // overlaps the first
  kfd::AllocMemoryOfGpu huge{uint64_t{1} << 46, uint64_t{64} << 30, 0, 0, k.gpu_id, kfd::mem::kVram};
  CHECK(k.io(kfd::kAllocMemoryOfGpu, &huge) == -ENOMEM);  // more than the card's 24 GiB
  kfd::FreeMemoryOfGpu f{a.handle + 1000};
  CHECK(k.io(kfd::kFreeMemoryOfGpu, &f) == -EINVAL);

  // Queues: ring size, percentage, priority, and the buffers' exact sizes (kfd_queue_acquire_buffers).
  RawQueue q(k, false);
  q.args.ring_size = 3000;
  CHECK(q.create() == -EINVAL);
  q.args.ring_size = 4096, q.args.queue_priority = 16;
  CHECK(q.create() == -EINVAL);
  q.args.queue_priority = 7, q.args.ctl_stack_size += 4096;
  CHECK(q.create() == -EINVAL);  // control stack size differs from the node's
  q.args.ctl_stack_size -= 4096, q.args.ctx_save_restore_size -= 4096;
  CHECK(q.create() == -EINVAL);  // CWSR area too small
  q.args.ctx_save_restore_size += 4096, q.args.eop_buffer_size = 2048;
  CHECK(q.create() == -EINVAL);  // EOP buffer smaller than the node's
  q.args.eop_buffer_size = 4096, q.args.ring_base_address += 4096;
  CHECK(q.create() == -EINVAL);  // the ring must be a whole mapping
  q.args.ring_base_address -= 4096, q.args.queue_type = 9;
  CHECK(q.create() == -EINVAL);
  q.args.queue_type = kfd::kQueueCompute;
  CHECK(q.create() == 0);
  kfd::FreeMemoryOfGpu busy{q.ring.handle};
  CHECK(k.io(kfd::kFreeMemoryOfGpu, &busy) == -EBUSY);  // a live queue's ring
  kfd::RuntimeEnable re{};
  CHECK(k.io(kfd::kRuntimeEnable, &re) == -EEXIST);  // queues already exist
  kfd::DestroyQueue d{q.args.queue_id + 5, 0};
  CHECK(k.io(kfd::kDestroyQueue, &d) == -EINVAL);
  d.queue_id = q.args.queue_id;
  CHECK(k.io(kfd::kDestroyQueue, &d) == 0);
  CHECK(k.io(kfd::kFreeMemoryOfGpu, &busy) == 0);
  kfd::CreateEvent ev{};
  ev.event_type = kfd::kEventSignal;
  CHECK(k.io(kfd::kCreateEvent, &ev) == -EINVAL);  // no event page yet
  kfd::WaitEvents w{0, 1, 0, 0, 0};
  CHECK(k.io(kfd::kWaitEvents, &w) == -EINVAL);
}

TEST_CASE("amd emu: malformed packets, overruns and straddling SDMA packets are device faults naming the packet") {
  EmuSystem sys;
  RawKfd k(*sys.os);
  {
    RawQueue q(k, false);
    REQUIRE(q.create() == 0);
    q.map_doorbell();
    uint32_t nop[] = {hw::amd::packet_header(pm4::Nop::format, 3), 0, 0};
    q.push(nop);
    uint64_t* rptr = reinterpret_cast<uint64_t*>(q.gart.host + 64);
    CHECK(wait_for([&] { return __atomic_load_n(rptr, __ATOMIC_ACQUIRE) == 3; }));  // read back as consumed
    uint32_t bad[] = {0xC0009900u, 0};
    q.push(bad);
    CHECK(wait_for([&] { return log_has(*sys.gpu, "unknown PM4 opcode 0x99"); }));
    CHECK(log_has(*sys.gpu, "compute queue 0 at ring dword 0x3"));
  }
  {
    RawQueue q(k, false);
    REQUIRE(q.create() == 0);
    q.map_doorbell();
    __atomic_store_n(q.doorbell, uint64_t{5000}, __ATOMIC_RELEASE);  // more than the 1024-dword ring ahead
    CHECK(wait_for([&] { return log_has(*sys.gpu, "the ring was overrun"); }));
  }
  {
    RawQueue q(k, true);
    REQUIRE(q.create() == 0);
    q.map_doorbell();
    std::vector<uint32_t> pad(1016, 0);  // NOPs up to 8 dwords before the end of the ring
    hw::amd::Packet<sdma::Fence> fence;
    fence.set(sdma::Fence::addr, q.gart.va + 256).set(sdma::Fence::data, 7);
    q.push(pad);
    q.push(fence.dw);  // 4 dwords fit exactly: fine
    CHECK(wait_for([&] { return *reinterpret_cast<uint32_t*>(q.gart.host + 256) == 7; }));
    // Userptr: the caller's own pages, mapped for the GPU at their address.
    auto* user = static_cast<uint8_t*>(sys.os->mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    uint64_t ua = reinterpret_cast<uint64_t>(user);
    kfd::AllocMemoryOfGpu up{ua, 4096, 0, ua + 4096, k.gpu_id, kfd::mem::kUserptr | kfd::mem::kWritable};
    CHECK(k.io(kfd::kAllocMemoryOfGpu, &up) == -EINVAL);  // the user address must be the GPU address
    up.mmap_offset = ua;
    REQUIRE(k.io(kfd::kAllocMemoryOfGpu, &up) == 0);
    kfd::MapMemoryToGpu um{up.handle, reinterpret_cast<uint64_t>(&k.gpu_id), 1, 0};
    REQUIRE(k.io(kfd::kMapMemoryToGpu, &um) == 0);
    hw::amd::Packet<sdma::Fence> uf;
    uf.set(sdma::Fence::addr, ua + 8).set(sdma::Fence::data, 0xabcd);
    q.push(uf.dw);
    CHECK(wait_for([&] { return __atomic_load_n(reinterpret_cast<uint32_t*>(user + 8), __ATOMIC_ACQUIRE) == 0xabcd; }));
    std::vector<uint32_t> pad2(1022, 0);
    q.push(pad2);
    uint64_t* rptr = reinterpret_cast<uint64_t*>(q.gart.host + 64);
    CHECK(wait_for([&] { return __atomic_load_n(rptr, __ATOMIC_ACQUIRE) == (1024 + 1022) * 4; }));
    hw::amd::Packet<sdma::CopyLinear> copy;  // 7 dwords from 2 before the end
    copy.set(sdma::CopyLinear::count, 3).set(sdma::CopyLinear::src_addr, q.gart.va).set(sdma::CopyLinear::dst_addr, q.gart.va + 512);
    q.push(copy.dw);
    CHECK(wait_for([&] { return log_has(*sys.gpu, "COPY_LINEAR straddles the end of the ring"); }));
  }
}

TEST_CASE("amd kfd: a missing /dev/kfd, a permission problem and an old KFD are clear errors") {
  {
    auto os = std::make_shared<emu::VirtualOs>();  // a machine with no AMD GPU
    CHECK_THROWS_WITH(amd::open_kfd(os), doctest::Contains("/dev/kfd does not exist: no AMD GPU with the amdgpu kernel driver"));
  }
  {
    EmuSystem sys;
    sys.os->set_errno_on_open("/dev/kfd", EACCES);
    CHECK_THROWS_WITH(sys.open(), doctest::Contains("add your user to the render group"));
  }
  {
    emu::amd::GpuConfig old;
    old.kfd_minor = 6;
    EmuSystem sys(old);
    CHECK_THROWS_WITH(sys.open(), doctest::Contains("KFD interface is 1.6; ugpu supports 1.11"));
  }
  {
    emu::amd::GpuConfig gfx9;
    gfx9.gfx_target_version = 90400;
    EmuSystem sys(gfx9);
    CHECK_THROWS_WITH(sys.open(), doctest::Contains("this GPU is gfx940"));
  }
  {
    emu::amd::GpuConfig v111;  // Linux 6.1: no RUNTIME_ENABLE, which the driver then skips
    v111.kfd_minor = 11;
    EmuSystem sys(v111);
    auto dev = sys.open();
    auto s = dev->new_signal();
    auto q = dev->compute_queue();
    q->signal(*s, 4);
    q->submit();
    dev->wait(*s, 4, "signal on KFD 1.11");
  }
}

TEST_CASE("amd kfd: the submitted PM4 stream decodes into the dispatch the driver meant") {
  EmuSystem sys;
  auto dev = sys.open();
  auto prog = drivers::load_kernel(*dev, codegen::builtin_kernel("add_one").parse(), "add_one");
  hcq::Buffer a = dev->alloc(4000), b = dev->alloc(4000);
  uint64_t v = dev->next_timeline();
  auto q = dev->compute_queue();
  Val args[] = {a.va, b.va};
  q->wait(dev->timeline(), v - 1).exec(*prog, args).signal(dev->timeline(), v);
  q->submit();
  dev->synchronize();
  amd::RingSnapshot snap = amd::last_submission(*dev, false);
  std::string text = hw::amd::describe_stream(hw::amd::Engine::Pm4, snap.words);
  CAPTURE(text);
  for (const char* want :
       {"WAIT_REG_MEM function=GEQUAL mem_space=1", "ACQUIRE_MEM", "COMPUTE_PGM_LO=", "COMPUTE_PGM_RSRC1=", "COMPUTE_USER_DATA_0=",
        "COMPUTE_NUM_THREAD_X=", "DISPATCH_DIRECT dim_x=", "EVENT_WRITE event_type=CS_PARTIAL_FLUSH", "RELEASE_MEM", "int_sel=INT_AFTER_WRITE"})
    CHECK_MESSAGE(text.find(want) != std::string::npos, want);
  CHECK(text.find("<") == std::string::npos);  // every packet decoded
  auto cq = dev->copy_queue();
  cq->copy(b.va, a.va, 64).signal(dev->timeline(), dev->next_timeline());
  cq->submit();
  dev->synchronize();
  std::string copy = hw::amd::describe_stream(hw::amd::Engine::Sdma, amd::last_submission(*dev, true).words);
  CHECK(copy.find("COPY_LINEAR count=0x3f") != std::string::npos);
  CHECK(copy.find("TRAP") != std::string::npos);
}

TEST_CASE("amd kfd: the codegen kernel suite through the driver matches the CPU device") {
  auto gpu = drivers::open_device("emu:amd");
  test::kernel_suite_matches_cpu(*gpu);
}

TEST_CASE("amd kfd: a kernel with private (scratch) memory gets the scratch area and its registers") {
  auto dev = drivers::open_device("emu:amd");
  // A codegen kernel gives the launch geometry and argument list; its code is replaced by assembly
  // that keeps each lane's value in scratch on the way to the output.
  const char* text = R"(out = DEFINE_GLOBAL:int32* {0}
i = RANGE(64) {0, GLOBAL}
SINK(END(STORE(INDEX:int32*(out, i), CAST:int32(i)), i))
)";
  codegen::CompileOptions o;
  o.name = "scratchy";
  auto ck = codegen::compile(ir::parse(text), codegen::find_target("gfx1100"), o);
  codegen::LaunchDims dims = codegen::launch_dims(ck->kernel, {});
  REQUIRE(dims.global[0] * dims.local[0] == 64);
  std::string body = R"(
  s_load_b64 s[4:5], s[0:1], 0x0
  s_mul_i32 s3, s2, )" +
                     std::to_string(dims.local[0]) + R"(
  v_add_nc_u32 v1, s3, v0
  v_mul_lo_u32 v2, v1, 3
  v_add_nc_u32 v2, 7, v2
  v_lshlrev_b32 v11, 2, v0
  scratch_store_b32 v11, v2, off offset:16
  scratch_load_b32 v3, v11, off offset:16
  v_lshlrev_b32 v12, 2, v1
  s_waitcnt vmcnt(0) lgkmcnt(0)
  global_store_b32 v12, v3, s[4:5]
)";
  auto asm_ck = std::make_shared<codegen::CompiledKernel>(*ck);
  asm_ck->binary = codegen::assemble(codegen::find_target("gfx1100"), test::asm_kernel(body, 0, 256, ck->kernel.name));
  auto prog = dev->load(asm_ck);
  hcq::Buffer out = dev->alloc(64 * 4);
  uint64_t v = dev->next_timeline();
  auto q = dev->compute_queue();
  Val args[] = {out.va};
  q->wait(dev->timeline(), v - 1).exec(*prog, args).signal(dev->timeline(), v);
  q->submit();
  dev->synchronize();
  int bad = 0;
  for (int i = 0; i < 64; ++i) bad += static_cast<int32_t*>(out.host)[i] != 3 * i + 7;
  CHECK(bad == 0);
  std::string pm4 = hw::amd::describe_stream(hw::amd::Engine::Pm4, amd::last_submission(*dev, false).words);
  CAPTURE(pm4);
  CHECK(pm4.find("COMPUTE_TMPRING_SIZE=0x") != std::string::npos);
  CHECK(pm4.find("COMPUTE_TMPRING_SIZE=0x0\n") == std::string::npos);  // WAVES and WAVESIZE set
  CHECK(pm4.find("COMPUTE_DISPATCH_SCRATCH_BASE_LO=") != std::string::npos);
}

TEST_CASE("amd emu: an LDS access past the workgroup's allocation is a hardware exception naming LDS, the instruction and the wave") {
  EmuSystem sys;
  auto dev = sys.open();
  // tmp holds 64 floats; the index comes from memory, so nothing bounds it at compile time.
  const char* text = R"(out = DEFINE_GLOBAL:float* {0}
where = DEFINE_GLOBAL:int32* {1}
tmp = DEFINE_LOCAL:float[local]* {(0, 64)}
g = RANGE(2) {0, GLOBAL}
l = RANGE(64) {1, LOCAL}
put = STORE(INDEX:float[local]*(tmp, CAST:index(LOAD:int32(INDEX:int32*(where, g*64 + l)))), 1.0)
bar = BARRIER(END(put, l))
SINK(END(STORE(INDEX:float*(out, g*64 + l), LOAD:float(INDEX:float[local]*(AFTER(tmp, bar), l))), g, l))
)";
  auto prog = drivers::load_kernel(*dev, ir::parse(text), "lds_overrun");
  hcq::Buffer out = dev->alloc(128 * 4), where = dev->alloc(128 * 4);
  for (int i = 0; i < 128; ++i) static_cast<int32_t*>(where.host)[i] = i % 64;
  static_cast<int32_t*>(where.host)[70] = 100000;  // workgroup 1's work-item 6 stores 400 KB past the 256 bytes
  uint64_t v = dev->next_timeline();
  auto q = dev->compute_queue();
  Val args[] = {out.va, where.va};
  q->wait(dev->timeline(), v - 1).exec(*prog, args).signal(dev->timeline(), v);
  q->submit();
  CHECK_THROWS_WITH_AS(dev->synchronize(), doctest::Contains("LDS or scratch access out of range"), hcq::DeviceError);
  CHECK_MESSAGE(dev->error().find("page fault") == std::string::npos, dev->error());
  CHECK(log_has(*sys.gpu, "write of LDS address"));
  CHECK(log_has(*sys.gpu, "ds_store"));
  CHECK(log_has(*sys.gpu, "workgroup 1,0,0, wave"));
}
