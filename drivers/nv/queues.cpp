// The command encoders: HCQ commands as pushbuffer methods — host semaphores for waits and signals
// on both channels, QMD launches on the compute channel (chained when kernels follow each other
// directly), copy-engine transfers and semaphores on the copy channel. Every method comes from the
// hw/nv tables; variable values (hcq::Val) become patch slots at the dwords that hold them.
#include <algorithm>
#include <array>
#include <cstring>

#include "drivers/nv/internal.h"

namespace ugpu::nv {
namespace m = hw::nv;
using hcq::Val;

namespace {

using m::kComputeSubchannel;
using m::kCopySubchannel;
constexpr uint64_t kCopyChunk = uint64_t{1} << 31;  // LINE_LENGTH_IN is 32 bits; stay well inside it

class NvQueueBase : public NvQueue {
 public:
  NvQueueBase(NvDevice& dev, bool copy) : NvQueue(dev, copy), dev_(dev) {}

 protected:
  NvDevice& dev_;
  void method(unsigned subch, uint32_t method, uint32_t count) { put32(m::method_header(m::SecOp::Inc, subch, method, count)); }
  // Host semaphore: address, 64-bit payload, then SEM_EXECUTE.
  void semaphore(Val address, Val payload, uint32_t execute) {
    method(0, m::host::SEM_ADDR_LO, 5);
    put32_of(address, 0);
    put32_of(address, 32);
    put64(payload);
    put32(execute);
  }
  void emit_wait(Val s, Val v) override { semaphore(s, v, m::host::sem::kAcqCircGeq | m::host::sem::kPayload64); }
  void emit_signal(Val s, Val v) override { semaphore(s, v, m::host::sem::kRelease | m::host::sem::kReleaseWfi | m::host::sem::kPayload64); }
  // The semaphore writes its payload at +0 and the timestamp at +8: a timestamp signal carries no value.
  void emit_timestamp(Val s) override { semaphore(s, Val(0), m::host::sem::kRelease | m::host::sem::kReleaseWfi | m::host::sem::kReleaseTimestamp); }
};

class ComputeQueue final : public NvQueueBase {
 public:
  explicit ComputeQueue(NvDevice& dev) : NvQueueBase(dev, false) {}
  void invalidate_caches() override { emit_memory_barrier(); }
  void bind_engine(uint32_t cls, uint64_t shared_window, uint64_t local_window) override {
    method(kComputeSubchannel, m::host::SET_OBJECT, 1);
    put32(cls);
    method(kComputeSubchannel, m::compute::SET_SHADER_SHARED_MEMORY_WINDOW_A, 2);
    put32(static_cast<uint32_t>(shared_window >> 32));
    put32(static_cast<uint32_t>(shared_window));
    method(kComputeSubchannel, m::compute::SET_SHADER_LOCAL_MEMORY_WINDOW_A, 2);
    put32(static_cast<uint32_t>(local_window >> 32));
    put32(static_cast<uint32_t>(local_window));
  }

 protected:
  void emit_memory_barrier() override {
    put32(m::method_header(m::SecOp::Immediate, 0, m::host::WFI, 1));
    method(kComputeSubchannel, m::compute::INVALIDATE_SHADER_CACHES_NO_WFI, 1);
    put32(m::compute::kInvalidateInstruction | m::compute::kInvalidateGlobalData | m::compute::kInvalidateConstant);
  }
  void emit_exec(const hcq::Program& hp, const hcq::Kernargs& k) override {
    const auto& p = static_cast<const NvProgram&>(hp);
    if (!kernels) kernels = std::make_shared<std::vector<std::string>>();
    if (std::find(kernels->begin(), kernels->end(), p.name) == kernels->end()) kernels->push_back(p.name);
    auto* bytes = reinterpret_cast<uint8_t*>(k.host);
    // Constant bank 0: the driver's words (shared and local windows), then the parameters HWQueue wrote.
    std::memcpy(bytes, dev_.cbank0_prefix().data(), std::min<size_t>(dev_.cbank0_prefix().size() * 4, p.param_base));
    uint64_t qmd_va = (k.va + p.cbank0_bytes + 255) / 256 * 256;
    auto* qmd = reinterpret_cast<uint32_t*>(bytes + (qmd_va - k.va));
    const m::QmdLayout& layout = dev_.qmd_layout();
    // Launch geometry from the arguments as recorded (a variable's dimension keeps its recorded value).
    codegen::LaunchDims d = p.fixed_dims ? *p.fixed_dims : codegen::launch_dims(p.kernel->kernel, p.recorded_vars(k));
    // An empty grid (a variable size of 0) launches nothing, as on every other device: no QMD, and
    // the next launch chains to the previous one as if this one were not there.
    if (d.global[0] == 0 || d.global[1] == 0 || d.global[2] == 0) return;
    std::array<uint32_t, 3> grid, block;
    for (int i = 0; i < 3; ++i) grid[i] = static_cast<uint32_t>(d.global[i]), block[i] = static_cast<uint32_t>(d.local[i]);
    if (d.local[0] * d.local[1] * d.local[2] > 1024) throw Error("kernel " + p.name + ": a block of more than 1024 threads");
    if (uint64_t{p.registers} * d.local[0] * d.local[1] * d.local[2] > 65536)
      throw Error("kernel " + p.name + ": " + std::to_string(p.registers) + " registers per thread do not fit a block of " +
                  std::to_string(d.local[0] * d.local[1] * d.local[2]) + " threads (65536 per SM)");
    // The QMD is built here and copied out whole: kernarg memory is GPU memory behind the BAR, where
    // every CPU read of a read-modify-write costs a PCIe round trip (about 15 us per launch on an H100).
    std::array<uint32_t, m::kQmdMaxDwords> words{};
    std::memcpy(words.data(), p.qmd_template.data(), layout.bytes);
    m::qmd_set_launch(layout, std::span<uint32_t>(words.data(), layout.bytes / 4), grid, block, k.va, p.cbank0_bytes);
    qmds.push_back(qmd);
    if (p.local_bytes) {
      // Shader local memory for this kernel: the channel's SLM buffer, grown when it needs more.
      NvDevice::Local local = dev_.local_memory_for(p);
      method(kComputeSubchannel, m::compute::SET_SHADER_LOCAL_MEMORY_A, 2);
      put32(static_cast<uint32_t>(local.address >> 32));
      put32(static_cast<uint32_t>(local.address));
      method(kComputeSubchannel, m::compute::SET_SHADER_LOCAL_MEMORY_NON_THROTTLED_A, 3);
      put32(static_cast<uint32_t>(local.bytes_per_tpc >> 32));
      put32(static_cast<uint32_t>(local.bytes_per_tpc));
      put32(0xff);
      chain_from_ = 0;
    }
    if (chain_from_ && chain_from_ == recorded()) {
      // Directly after another launch: that QMD starts this one when it completes.
      m::qmd_set_dependent(layout, std::span<uint32_t>(last_qmd_.data(), layout.bytes / 4), qmd_va);
      std::memcpy(qmds[qmds.size() - 2], last_qmd_.data(), layout.bytes);
    } else {
      method(kComputeSubchannel, m::compute::SEND_PCAS_A, 1);
      put32(static_cast<uint32_t>(qmd_va >> 8));
      method(kComputeSubchannel, m::compute::SEND_SIGNALING_PCAS2_B, 1);
      put32(m::compute::kPcasPrefetchSchedule);
    }
    std::memcpy(qmd, words.data(), layout.bytes);
    last_qmd_ = words;
    chain_from_ = recorded();
  }
  // The compute engine has no memory-to-memory copy: a copy here is the driver's byte-copy kernel.
  void emit_copy(Val dst, Val src, uint64_t bytes) override { copy_by_kernel(dev_.copy_program(), dst, src, bytes); }

 private:
  size_t chain_from_ = 0;                              // recorded() right after the last launch
  std::array<uint32_t, m::kQmdMaxDwords> last_qmd_{};  // a host copy of the last launch's QMD, for chaining
};

class CopyQueue final : public NvQueueBase {
 public:
  explicit CopyQueue(NvDevice& dev) : NvQueueBase(dev, true) {}
  void invalidate_caches() override {}
  void bind_engine(uint32_t cls, uint64_t, uint64_t) override {
    method(kCopySubchannel, m::host::SET_OBJECT, 1);
    put32(cls);
  }

 protected:
  void emit_memory_barrier() override { put32(m::method_header(m::SecOp::Immediate, 0, m::host::WFI, 1)); }
  void emit_exec(const hcq::Program& hp, const hcq::Kernargs&) override {
    throw Error(dev_.name() + ": the copy queue runs no kernels; exec " + hp.name + " on a compute queue");
  }
  void emit_copy(Val dst, Val src, uint64_t bytes) override {
    for (uint64_t off = 0; off < bytes; off += kCopyChunk) {
      uint64_t n = std::min(kCopyChunk, bytes - off);
      Val s = src, d = dst;
      s.constant += off, d.constant += off;
      method(kCopySubchannel, m::copy::OFFSET_IN_UPPER, 4);
      put32_of(s, 32);
      put32_of(s, 0);
      put32_of(d, 32);
      put32_of(d, 0);
      method(kCopySubchannel, m::copy::LINE_LENGTH_IN, 1);
      put32(static_cast<uint32_t>(n));
      method(kCopySubchannel, m::copy::LAUNCH_DMA, 1);
      put32(m::copy::launch::kTransferNonPipelined | m::copy::launch::kSrcPitch | m::copy::launch::kDstPitch);
    }
  }
  // On the copy channel signals are copy-engine semaphores: released after the transfers before them.
  void emit_signal(Val s, Val v) override {
    method(kCopySubchannel, m::copy::SET_SEMAPHORE_A, 4);
    put32_of(s, 32);
    put32_of(s, 0);
    put64(v);
    method(kCopySubchannel, m::copy::LAUNCH_DMA, 1);
    put32(m::copy::launch::kFlush | m::copy::launch::kSemaphoreOneWord << m::copy::launch::kSemaphoreShift | m::copy::launch::kPayload64);
  }
  void emit_timestamp(Val s) override {
    method(kCopySubchannel, m::copy::SET_SEMAPHORE_A, 3);
    put32_of(s, 32);
    put32_of(s, 0);
    put32(0);
    method(kCopySubchannel, m::copy::LAUNCH_DMA, 1);
    put32(m::copy::launch::kFlush | m::copy::launch::kSemaphoreFourWord << m::copy::launch::kSemaphoreShift);
  }
};

}  // namespace

std::unique_ptr<NvQueue> make_compute_queue(NvDevice& dev) { return std::make_unique<ComputeQueue>(dev); }
std::unique_ptr<NvQueue> make_copy_queue(NvDevice& dev) { return std::make_unique<CopyQueue>(dev); }

void append_retire(std::vector<uint32_t>& out, uint64_t address, uint64_t position) {
  out.push_back(m::method_header(m::SecOp::Inc, 0, m::host::SEM_ADDR_LO, 5));
  out.push_back(static_cast<uint32_t>(address));
  out.push_back(static_cast<uint32_t>(address >> 32));
  out.push_back(static_cast<uint32_t>(position));
  out.push_back(static_cast<uint32_t>(position >> 32));
  out.push_back(m::host::sem::kRelease | m::host::sem::kReleaseWfi | m::host::sem::kPayload64);
}

}  // namespace ugpu::nv
