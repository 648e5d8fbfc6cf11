// The NVIDIA driver (drivers/nv) on the emulated Hopper (emu/nv): the emulated RM's checks, opening
// on every driver branch, the bad cases (no driver, permissions, an old branch, RM statuses), the
// submitted methods and QMDs, the kernel suite against the CPU (and half kernels LLVM packs into f16x2),
// a program's .global/.const data placed by the GPU. MMU faults, hangs and full rings
// are cases of the HCQ conformance suite (tests/hcq/test_hcq.cpp), with emu:nv's expectations.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/mman.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>

#include "codegen/builtin_kernels.h"
#include "codegen/compiler.h"
#include "codegen/llvm/ptxas.h"
#include "drivers/devices.h"
#include "drivers/nv/rm/rm.h"
#include "drivers/nv/rm/rm_gpu.h"
#include "emu/nv/rm/rm_model.h"
#include "hw/nv/methods.h"
#include "hw/nv/qmd_launch.h"
#include "hw/nv/rm_abi.h"
#include "ir/dtype.h"
#include "ir/text.h"
#include "tests/hcq/device_suite.h"

using namespace ugpu;
using namespace ugpu::test;
using hcq::Val;
namespace rm = hw::nv;

namespace {

struct EmuSystem {
  std::shared_ptr<emu::VirtualOs> os = std::make_shared<emu::VirtualOs>();
  std::shared_ptr<emu::nv::NvGpu> gpu;
  explicit EmuSystem(const emu::nv::NvGpuConfig& c = {}) { gpu = emu::nv::install_nv_gpu(*os, c); }
  std::unique_ptr<hcq::Device> open(nv::NvOptions o = {}) {
    o.name = "emu:nv", o.kind = "emulated gpu", o.emulator_runs_ptx = true;
    return nv::open_nv(os, o);
  }
};

bool log_has(const emu::nv::NvGpu& g, const std::string& s) {
  for (const std::string& l : g.log())
    if (l.find(s) != std::string::npos) return true;
  return false;
}

// A raw RM client for the emulated RM's own checks.
struct RawRm {
  emu::VirtualOs& os;
  int ctl;
  explicit RawRm(emu::VirtualOs& o) : os(o), ctl(o.open("/dev/nvidiactl", O_RDWR)) {}
  ~RawRm() { os.close(ctl); }
  uint32_t alloc(uint32_t root, uint32_t parent, uint32_t cls, void* params, uint32_t handle = 0, uint32_t* out = nullptr) {
    rm::NVOS21_PARAMETERS p{};
    p.hRoot = root, p.hObjectParent = parent, p.hObjectNew = handle, p.hClass = cls, p.pAllocParms = reinterpret_cast<uint64_t>(params);
    REQUIRE(os.ioctl(ctl, rm::rm_ioctl(rm::NV_ESC_RM_ALLOC, sizeof p), &p) == 0);
    if (out) *out = p.hObjectNew;
    return p.status;
  }
  uint32_t control(uint32_t client, uint32_t object, uint32_t cmd, void* params, uint32_t size) {
    rm::NVOS54_PARAMETERS p{};
    p.hClient = client, p.hObject = object, p.cmd = cmd, p.params = reinterpret_cast<uint64_t>(params), p.paramsSize = size;
    REQUIRE(os.ioctl(ctl, rm::rm_ioctl(rm::NV_ESC_RM_CONTROL, sizeof p), &p) == 0);
    return p.status;
  }
};

}  // namespace

TEST_CASE("nv emu: the emulated RM and UVM check escapes and parameters as the driver does") {
  EmuSystem sys;
  RawRm r(*sys.os);
  uint32_t root = 0;
  CHECK(r.alloc(0, 0, rm::NV01_ROOT_CLIENT, nullptr, 0, &root) == rm::NV_OK);
  CHECK(root != 0);
  // An escape struct of the wrong size is refused by the kernel module (EINVAL), not misread.
  rm::NVOS21_PARAMETERS small{};
  CHECK(sys.os->ioctl(r.ctl, rm::rm_ioctl(rm::NV_ESC_RM_ALLOC, sizeof small - 4), &small) == -EINVAL);
  // A control's parameter size is checked: NV_ERR_INVALID_PARAM_STRUCT.
  rm::NV0000_CTRL_SYSTEM_GET_BUILD_VERSION_V2_PARAMS v{};
  CHECK(r.control(root, root, rm::NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION_V2, &v, sizeof v - 8) == rm::NV_ERR_INVALID_PARAM_STRUCT);
  CHECK(r.control(root, root, rm::NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION_V2, &v, sizeof v) == rm::NV_OK);
  CHECK(std::string(v.driverVersionBuffer) == "580.105.08");
  CHECK(r.control(root, root, 0x12345678, &v, sizeof v) == rm::NV_ERR_NOT_SUPPORTED);
  CHECK(r.control(root + 1, root, rm::NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION_V2, &v, sizeof v) == rm::NV_ERR_INVALID_CLIENT);
  // Objects: parents, classes, handles.
  rm::NV0080_ALLOC_PARAMETERS dp{};
  CHECK(r.alloc(root, root, rm::NV01_DEVICE_0, &dp, 0x2000) == rm::NV_OK);
  CHECK(r.alloc(root, root, rm::NV01_DEVICE_0, &dp, 0x2000) == rm::NV_ERR_INVALID_OBJECT_NEW);
  CHECK(r.alloc(root, 0x2000, rm::AMPERE_COMPUTE_A, nullptr, 0x2001) == rm::NV_ERR_INVALID_CLASS);  // not a class GH100 offers
  CHECK(r.alloc(root, 0x7777, rm::NV20_SUBDEVICE_0, nullptr, 0x2002) == rm::NV_ERR_INVALID_OBJECT_PARENT);
  rm::NV_MEMORY_ALLOCATION_PARAMS big{};
  big.size = uint64_t{64} << 30;  // more than the emulated card's 16 GiB
  CHECK(r.alloc(root, 0x2000, rm::NV01_MEMORY_LOCAL_USER, &big, 0x2003) == rm::NV_ERR_NO_MEMORY);
  // OS-descriptor memory only on a device fd, and that fd only after REGISTER_FD.
  rm::nv_ioctl_nvos02_parameters_with_fd os02{};
  CHECK(sys.os->ioctl(r.ctl, rm::rm_ioctl(rm::NV_ESC_RM_ALLOC_MEMORY, sizeof os02), &os02) == -EINVAL);
  int dev = sys.os->open("/dev/nvidia0", O_RDWR);
  rm::NVOS54_PARAMETERS c{};
  CHECK(sys.os->ioctl(dev, rm::rm_ioctl(rm::NV_ESC_RM_CONTROL, sizeof c), &c) == -EINVAL);  // RM escapes belong to nvidiactl
  sys.os->close(dev);
  // UVM: nothing before UVM_INITIALIZE.
  int uvm = sys.os->open("/dev/nvidia-uvm", O_RDWR);
  rm::UVM_CREATE_EXTERNAL_RANGE_PARAMS range{};
  range.base = 0x10'0000'0000, range.length = 0x10000;
  sys.os->ioctl(uvm, rm::UVM_CREATE_EXTERNAL_RANGE, &range);
  CHECK(range.rmStatus == rm::NV_ERR_ILLEGAL_ACTION);
  rm::UVM_INITIALIZE_PARAMS init{};
  CHECK(sys.os->ioctl(uvm, rm::UVM_INITIALIZE, &init) == 0);
  CHECK(sys.os->ioctl(uvm, rm::UVM_CREATE_EXTERNAL_RANGE, &range) == 0);
  CHECK(range.rmStatus == rm::NV_OK);
  CHECK(sys.os->ioctl(uvm, rm::UVM_CREATE_EXTERNAL_RANGE, &range) == 0);
  CHECK(range.rmStatus == rm::NV_ERR_UVM_ADDRESS_IN_USE);
  sys.os->close(uvm);
}

TEST_CASE("nv: no driver, no permission and an unsupported driver branch are clear errors") {
  {
    auto os = std::make_shared<emu::VirtualOs>();  // a machine without the nvidia module
    CHECK_THROWS_WITH(nv::open_nv(os), doctest::Contains("/dev/nvidiactl does not exist"));
  }
  {
    EmuSystem sys;
    sys.os->set_errno_on_open("/dev/nvidiactl", EACCES);
    CHECK_THROWS_WITH(sys.open(), doctest::Contains("permissions of /dev/nvidia*"));
  }
  {
    emu::nv::NvGpuConfig old;
    old.driver_version = "535.113.01";
    EmuSystem sys(old);
    CHECK_THROWS_WITH(sys.open(), doctest::Contains("NVIDIA driver 535.113.01 is not supported"));
    CHECK_THROWS_WITH(sys.open(), doctest::Contains("570, 575, 580"));
  }
}

TEST_CASE("nv: every driver branch opens the emulated H100 and runs a kernel, with Hopper's classes") {
  for (const char* version : {"570.86.15", "575.64.05", "580.105.08", "595.45.04", "610.43.03"}) {
    CAPTURE(version);
    emu::nv::NvGpuConfig c;
    c.driver_version = version;
    EmuSystem sys(c);
    auto dev = sys.open();
    nv::NvFacts f = nv::facts(*dev);
    CHECK(f.driver_version == version);
    CHECK(f.abi_branch == rm::find_branch(static_cast<unsigned>(std::atoi(version)))->name);
    CHECK(f.compute_class == rm::HOPPER_COMPUTE_A);
    CHECK(f.copy_class == rm::HOPPER_DMA_COPY_A);
    CHECK(f.usermode_class == rm::HOPPER_USERMODE_A);
    CHECK(dev->target() == "sm_90");
    auto prog = drivers::load_kernel(*dev, codegen::builtin_kernel("add_one").parse(), "add_one");
    hcq::Buffer in = dev->alloc(4000), out = dev->alloc(4000);
    for (int i = 0; i < 1000; ++i) static_cast<int32_t*>(in.host)[i] = i * 3;
    uint64_t v = dev->next_timeline();
    auto q = dev->compute_queue();
    Val args[] = {out.va, in.va};
    q->wait(dev->timeline(), v - 1).exec(*prog, args).signal(dev->timeline(), v);
    q->submit();
    dev->synchronize();
    CHECK(static_cast<int32_t*>(out.host)[999] == 999 * 3 + 1);
  }
}

TEST_CASE("nv: RM statuses are errors that name the status and the call") {
  EmuSystem sys;
  auto dev = sys.open();
  CHECK_THROWS_WITH_AS(dev->alloc(size_t{40} << 30), doctest::Contains("NV_ERR_NO_MEMORY"), nv::RmError);
  CHECK_THROWS_WITH(dev->alloc(size_t{40} << 30), doctest::Contains("RM_ALLOC of 42949672960 bytes of video memory"));
  CHECK(!dev->failed());  // an allocation failure is not a device failure
  hcq::Buffer ok = dev->alloc(4096);
  CHECK(ok.va < (uint64_t{1} << 40));  // one address for CPU and GPU, below 1 TiB
}

TEST_CASE("nv: an H100 builds V04 QMDs; V03 (UGPU_NV_QMD=3) is refused by the emulated H100, as the real one runs it wrongly") {
  {
    EmuSystem sys;
    auto dev = sys.open();
    CHECK(nv::facts(*dev).qmd_major == 4);
  }
  setenv("UGPU_NV_QMD", "3", 1);
  EmuSystem sys;
  auto dev = sys.open();
  unsetenv("UGPU_NV_QMD");
  CHECK(nv::facts(*dev).qmd_major == 3);
  auto prog = drivers::load_kernel(*dev, codegen::builtin_kernel("add_one").parse(), "add_one");
  hcq::Buffer a = dev->alloc(4000), b = dev->alloc(4000);
  uint64_t v = dev->next_timeline();
  auto q = dev->compute_queue();
  Val args[] = {b.va, a.va};
  q->exec(*prog, args).signal(dev->timeline(), v);
  q->submit();
  CHECK_THROWS_AS(dev->synchronize(), hcq::DeviceError);
  CHECK(log_has(*sys.gpu, "is V03_00: HOPPER_COMPUTE_A runs V04_00 QMDs"));
  setenv("UGPU_NV_QMD", "7", 1);
  CHECK_THROWS_WITH(EmuSystem().open(), doctest::Contains("UGPU_NV_QMD=7"));
  unsetenv("UGPU_NV_QMD");
}

TEST_CASE("nv: the submitted methods and QMDs decode into the launch the driver meant; back-to-back kernels chain") {
  for (const char* qmd : {"4"}) {
    CAPTURE(qmd);
    setenv("UGPU_NV_QMD", qmd, 1);
    EmuSystem sys;
    auto dev = sys.open();
    unsetenv("UGPU_NV_QMD");
    const hw::nv::QmdLayout& layout = hw::nv::qmd_layout(static_cast<unsigned>(std::atoi(qmd)));
    CHECK(nv::facts(*dev).qmd_major == layout.major);
    auto prog = drivers::load_kernel(*dev, codegen::builtin_kernel("add_one").parse(), "add_one");
    hcq::Buffer a = dev->alloc(4000), b = dev->alloc(4000);
    uint64_t v = dev->next_timeline();
    auto q = dev->compute_queue();
    Val ab[] = {b.va, a.va}, ba[] = {a.va, b.va};
    q->wait(dev->timeline(), v - 1).exec(*prog, ab).exec(*prog, ba).signal(dev->timeline(), v);
    q->submit();
    dev->synchronize();
    CHECK(static_cast<int32_t*>(a.host)[500] == 2);  // the chained second launch ran after the first
    nv::PushSnapshot s = nv::last_submission(*dev, false);
    std::string text = hw::nv::describe_pushbuffer(s.words, hw::nv::kUgpuSubchannels);
    CAPTURE(text);
    size_t first = text.find("SEND_PCAS_A");
    CHECK(first != std::string::npos);
    CHECK(text.find("SEND_PCAS_A", first + 1) == std::string::npos);  // one launch method: the second QMD is chained
    CHECK(text.find("SEM_EXECUTE operation=0x3(ACQ_CIRC_GEQ)") != std::string::npos);
    CHECK(text.find("SEM_EXECUTE operation=0x1(RELEASE) release_wfi=0x1 payload_size_64=0x1") != std::string::npos);
    REQUIRE(s.qmds.size() == 2);
    hw::nv::QmdLaunch l0 = hw::nv::decode_qmd(layout, s.qmds[0]), l1 = hw::nv::decode_qmd(layout, s.qmds[1]);
    CHECK(l0.dependent.enable);
    CHECK(!l1.dependent.enable);
    CHECK(l0.program_address == l1.program_address);
    CHECK(l0.grid[0] * l0.block[0] >= 1000);
    CHECK(l0.cbanks[0].valid);
    CHECK(l0.cbanks[0].size >= 0x210 + 16);  // the parameters follow sm_90's driver words
  }
}

TEST_CASE("nv: the codegen kernel suite through the driver matches the CPU device") {
  auto gpu = drivers::open_device("emu:nv");
  kernel_suite_matches_cpu(*gpu);
}

TEST_CASE("nv: half and bfloat16 kernels on an UPCAST axis (packed f16x2 arithmetic in the PTX) give the CPU's bytes") {
  const std::string text = R"(out = DEFINE_GLOBAL:{T}* {0}
a = DEFINE_GLOBAL:{T}* {1}
b = DEFINE_GLOBAL:{T}* {2}
j = RANGE(64) {0, GLOBAL}
u = RANGE(4) {1, UPCAST}
x = LOAD:{T}(INDEX:{T}*(a, j*4 + u))
y = LOAD:{T}(INDEX:{T}*(b, j*4 + u))
SINK(END(STORE(INDEX:{T}*(out, j*4 + u), WHERE:{T}(CMPLT:bool(x, y), x * y + x, y - x)), j, u))
)";
  auto gpu = drivers::open_device("emu:nv");
  auto cpu = drivers::open_device("cpu");
  for (const char* t : {"half", "bfloat16"}) {
    CAPTURE(t);
    const std::string k = codegen::fill(text, {{"T", t}});
    const ir::DType dt = std::string(t) == "half" ? ir::dtypes::half : ir::dtypes::bfloat16;
    if (dt == ir::dtypes::half) {  // what makes this case: LLVM packs the four halves two by two
      codegen::CompileOptions o;
      o.cubin = false;
      const std::string ptx = codegen::compile(ir::parse(k), codegen::find_target("sm_90"), o)->ptx;
      CHECK(ptx.find("mul.rn.f16x2") != std::string::npos);
      CHECK(ptx.find("sub.rn.f16x2") != std::string::npos);
    }
    // Finite inputs with ties, subnormal products, -0 and equal pairs: the results are finite, so
    // every byte must match (NaN payloads, which GPUs choose, do not come up).
    std::mt19937 rng(7);
    std::vector<std::vector<uint8_t>> in(3, std::vector<uint8_t>(512));
    for (size_t i = 0; i < 256; ++i)
      for (size_t s = 1; s < 3; ++s) {
        double v = std::ldexp(static_cast<double>(static_cast<int>(rng() % 4001) - 2000), -static_cast<int>(rng() % 24));
        if (i % 17 == 3) v = s == 1 ? -0.0 : 0x1p-14;
        if (i % 19 == 5) v = 1.0 + (s == 1 ? 0.0 : 0x1p-11);
        const uint16_t bits = static_cast<uint16_t>(ir::float_to_bits(v, dt));
        std::memcpy(in[s].data() + 2 * i, &bits, 2);
      }
    CHECK(run_on(*gpu, k, in, {}) == run_on(*cpu, k, in, {}));
  }
}

TEST_CASE("nv emu: a program's .global and .const data is placed when it first runs and kept while the program stays") {
  // The parameters of add_one (out, in), and PTX that reads a switch table and a .const value and
  // counts its launches in a .global variable.
  codegen::CompileOptions co;
  co.name = "add_one";
  co.cubin = false;
  auto ck =
      std::make_shared<codegen::CompiledKernel>(*codegen::compile(codegen::builtin_kernel("add_one").parse(), codegen::find_target("sm_90"), co));
  ck->ptx = R"(.version 7.8
.target sm_90
.address_size 64
.global .align 4 .b8 __switch_table[16] = {5, 0, 0, 0, 11, 0, 0, 0, 57, 0, 0, 0, 23, 1, 0, 0};
.const .align 4 .u32 bias = 1000;
.global .align 4 .u32 launches;
.visible .entry add_one(.param .u64 out, .param .u64 in)
{
  .reg .pred %p<3>;
  .reg .b32 %r<12>;
  .reg .b64 %rd<12>;
  ld.param.u64 %rd1, [out];
  ld.param.u64 %rd2, [in];
  mov.u32 %r1, %ctaid.x;
  mov.u32 %r2, %ntid.x;
  mov.u32 %r3, %tid.x;
  mad.lo.s32 %r4, %r1, %r2, %r3;
  setp.ge.u32 %p1, %r4, 16;
  @%p1 ret;
  mul.wide.u32 %rd3, %r4, 4;
  add.s64 %rd4, %rd2, %rd3;
  ld.global.u32 %r5, [%rd4];
  and.b32 %r6, %r5, 3;
  mul.wide.u32 %rd5, %r6, 4;
  mov.u64 %rd6, __switch_table;
  cvta.global.u64 %rd7, %rd6;
  add.s64 %rd8, %rd7, %rd5;
  ld.u32 %r7, [%rd8];
  ld.const.u32 %r8, [bias];
  add.s32 %r9, %r7, %r8;
  add.s64 %rd9, %rd1, %rd3;
  st.global.u32 [%rd9], %r9;
  setp.ne.u32 %p2, %r4, 0;
  @%p2 ret;
  atom.global.add.u32 %r10, [launches], 1;
  st.global.u32 [%rd1+64], %r10;
  ret;
}
)";
  EmuSystem sys;
  auto dev = sys.open();
  auto prog = dev->load(ck);
  hcq::Buffer in = dev->alloc(4000), out = dev->alloc(4000);
  for (int i = 0; i < 16; ++i) static_cast<int32_t*>(in.host)[i] = i;
  const auto before = sys.gpu->stats();
  auto first = before;
  const int32_t table[] = {5, 11, 57, 23 + 256};
  for (int round = 0; round < 3; ++round) {
    CAPTURE(round);
    uint64_t v = dev->next_timeline();
    auto q = dev->compute_queue();
    Val args[] = {out.va, in.va};
    q->wait(dev->timeline(), v - 1).memory_barrier().exec(*prog, args).memory_barrier().signal(dev->timeline(), v);
    q->submit();
    dev->synchronize();
    for (int i = 0; i < 16; ++i) CHECK(static_cast<int32_t*>(out.host)[i] == table[i % 4] + 1000);
    CHECK(static_cast<int32_t*>(out.host)[16] == round);  // the count survives the instruction cache's invalidations
    // Placed once, at the first launch: a .const (read-only) and a .global mapping, and VRAM.
    if (round == 0) first = sys.gpu->stats();
    CHECK(sys.gpu->stats().gpu_mappings == first.gpu_mappings);
    CHECK(sys.gpu->stats().vram_used == first.vram_used);
  }
  CHECK(first.gpu_mappings >= before.gpu_mappings + 2);
  CHECK(first.vram_used >= before.vram_used + 0x10000);
  CHECK(!log_has(*sys.gpu, "Xid"));
}

TEST_CASE("nv: where the address window below 1 TiB is taken (as AddressSanitizer takes it), CPU mappings go elsewhere") {
  // Occupy the window in this process (under AddressSanitizer its shadow already does).
  const uint64_t base = uint64_t{0x10} << 32, size = (uint64_t{1} << 40) - base;
  void* block = ::mmap(reinterpret_cast<void*>(base), size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
  bool ours = block == reinterpret_cast<void*>(base);
  if (block != MAP_FAILED && !ours) ::munmap(block, size);
  {
    auto dev = drivers::open_device("emu:nv");
    hcq::Buffer a = dev->alloc(4000), b = dev->alloc(4000);
    CHECK(a.va < (uint64_t{1} << 40));                  // the GPU address stays below 1 TiB
    CHECK(reinterpret_cast<uint64_t>(a.host) != a.va);  // the CPU one does not
    for (int i = 0; i < 1000; ++i) static_cast<int32_t*>(a.host)[i] = i;
    auto prog = drivers::load_kernel(*dev, codegen::builtin_kernel("add_one").parse(), "add_one");
    uint64_t v = dev->next_timeline();
    auto q = dev->compute_queue();
    Val args[] = {b.va, a.va};
    q->wait(dev->timeline(), v - 1).exec(*prog, args).signal(dev->timeline(), v);
    q->bind();  // bound commands are found by their GPU address
    q->submit();
    dev->synchronize();
    CHECK(static_cast<int32_t*>(b.host)[999] == 1000);
    std::vector<uint8_t> back(4000);
    dev->copy_out(back, b, 0);
    CHECK(back[4] == 2);
  }
  if (ours) ::munmap(block, size);
}

TEST_CASE("nv: large buffers get large pages, and freed memory returns its GPU mapping, VRAM and address range") {
  EmuSystem sys;
  auto dev = sys.open();
  const auto before = sys.gpu->stats();
  uint64_t first = 0;
  for (int round = 0; round < 3; ++round) {
    std::vector<hcq::Buffer> bufs;
    for (int i = 0; i < 4; ++i) bufs.push_back(dev->alloc(size_t{64} << 20));
    for (const auto& b : bufs) CHECK(b.va % (2u << 20) == 0);  // 2 MiB pages from 8 MiB up
    CHECK(sys.gpu->stats().vram_used >= before.vram_used + (uint64_t{256} << 20));
    if (round == 0) first = bufs[0].va;
    else CHECK(bufs[0].va == first);  // the same range again: freeing returned it
    bufs.clear();
    dev->synchronize();
    dev->trim();  // hand the cached buffers back to the driver
    CHECK(sys.gpu->stats().vram_used == before.vram_used);
    CHECK(sys.gpu->stats().gpu_mappings == before.gpu_mappings);
  }
}

TEST_CASE("nv: with ptxas, a cubin loads as real hardware needs it: .nv.info facts into the QMD, code at its address") {
  if (!codegen::find_ptxas()) {
    MESSAGE("no ptxas here: the cubin path is checked where CUDA's ptxas is installed (and on the silicon suite)");
    return;
  }
  EmuSystem sys;
  nv::NvOptions o;
  o.name = "emu:nv", o.kind = "emulated gpu", o.emulator_runs_ptx = false;  // what `nv` does: SASS in a cubin
  auto dev = nv::open_nv(sys.os, o);
  codegen::CompileOptions co;
  co.name = "add_one";
  auto ck = codegen::compile(codegen::builtin_kernel("add_one").parse(), codegen::find_target("sm_90"), co);
  REQUIRE(ck->cubin);
  auto prog = dev->load(ck);
  hcq::Buffer in = dev->alloc(4000), out = dev->alloc(4000);
  uint64_t v = dev->next_timeline();
  auto q = dev->compute_queue();
  Val args[] = {out.va, in.va};
  q->exec(*prog, args).signal(dev->timeline(), v);
  q->submit();
  // The emulated GPU runs PTX, not SASS: it refuses the image — after the driver built the launch.
  CHECK_THROWS_AS(dev->synchronize(), hcq::DeviceError);
  CHECK(log_has(*sys.gpu, "is not PTX this GPU model runs"));
  nv::PushSnapshot s = nv::last_submission(*dev, false);
  REQUIRE(s.qmds.size() == 1);
  hw::nv::QmdLaunch l = hw::nv::decode_qmd(hw::nv::qmd_layout(s.qmd_major), s.qmds[0]);
  CHECK(l.registers == ck->cubin->registers);
  CHECK(l.local_high_bytes == (ck->cubin->stack_bytes + 0x240 + 31) / 32 * 32);  // SASS's ABI local memory
  CHECK(l.program_address % 128 == 0);
  CHECK(l.cbanks[0].size >= ck->cubin->param_offset + ck->cubin->param_size);
  CHECK(std::string(hw::nv::describe_pushbuffer(s.words, hw::nv::kUgpuSubchannels)).find("SET_SHADER_LOCAL_MEMORY_A") != std::string::npos);
}
