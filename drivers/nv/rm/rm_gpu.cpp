// The RM way in: opening an NVIDIA GPU through RM and UVM (the sequence of docs/nv.md, "Opening",
// with Hopper's classes), memory, channels in a channel group, the doorbell page, and the faults a
// channel reports through its error notifier and the debugger object.
#include "drivers/nv/rm/rm_gpu.h"

#include <fcntl.h>
#include <sys/mman.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>

#include "common/hex.h"
#include "drivers/nv/rm/rm.h"
#include "hw/nv/rm_branch.h"

namespace ugpu::nv {
namespace rm = hw::nv;

namespace {

// Classes by preference, newest first: the first the GPU lists is used.
constexpr uint32_t kUsermode[] = {rm::BLACKWELL_USERMODE_A, rm::HOPPER_USERMODE_A, rm::AMPERE_USERMODE_A, rm::TURING_USERMODE_A};
constexpr uint32_t kGpfifo[] = {rm::AMPERE_CHANNEL_GPFIFO_A, rm::HOPPER_CHANNEL_GPFIFO_A, rm::BLACKWELL_CHANNEL_GPFIFO_A};
constexpr uint32_t kCompute[] = {rm::BLACKWELL_COMPUTE_B, rm::BLACKWELL_COMPUTE_A, rm::HOPPER_COMPUTE_A,
                                 rm::ADA_COMPUTE_A,       rm::AMPERE_COMPUTE_B,    rm::AMPERE_COMPUTE_A};
constexpr uint32_t kCopy[] = {rm::BLACKWELL_DMA_COPY_B, rm::BLACKWELL_DMA_COPY_A, rm::HOPPER_DMA_COPY_A, rm::AMPERE_DMA_COPY_B,
                              rm::AMPERE_DMA_COPY_A};

template <size_t N>
uint32_t pick(const std::vector<uint32_t>& have, const uint32_t (&want)[N], const char* what, const std::string& dev) {
  for (uint32_t c : want)
    if (std::find(have.begin(), have.end(), c) != have.end()) return c;
  std::string list;
  for (uint32_t c : have) list += " " + hex(c);
  throw Error(dev + ": the GPU offers no " + what + " class ugpu knows (it lists:" + list + ")");
}

constexpr uint64_t kChannelUvmRange = 64u << 20;  // VA UVM may use for a channel's RM-internal buffers
constexpr uint64_t kNotifierBytes = 64u << 10;

struct RmMemory : NvInterface::Memory {
  std::shared_ptr<Rm::Memory> rm;
};

// A channel's RM side: its GPFIFO + USERD area and its error notifier.
struct RmChannel {
  bool copy = false;
  uint32_t handle = 0;
  std::shared_ptr<Rm::Memory> area, notifier;
};

class RmInterface final : public NvInterface {
 public:
  RmInterface(std::shared_ptr<sys::Os> os, const NvOptions& o);
  ~RmInterface() override { stop_channels(); }

  const Facts& facts() const override { return facts_; }
  std::shared_ptr<Memory> alloc(uint64_t bytes, MemoryKind kind) override;
  Channel create_channel(const ChannelSpec& c) override;
  void start_channels() override { schedule(true); }
  void stop_channels() noexcept override;
  sys::Doorbell& doorbell() override { return *doorbell_; }
  std::optional<Fault> check_faults() override;

 private:
  void schedule(bool enable);  // GPFIFO_SCHEDULE of the channel group

  std::shared_ptr<Rm> rm_;
  std::string name_;
  Facts facts_;
  std::unique_ptr<sys::Doorbell> doorbell_;
  sys::Mapping doorbell_page_;
  uint32_t tsg_ = 0, ctxshare_ = 0, debugger_ = 0;
  std::vector<std::shared_ptr<RmChannel>> channels_;
  bool live_ = true;
};

RmInterface::RmInterface(std::shared_ptr<sys::Os> os, const NvOptions& o) : name_(o.name) {
  rm_ = Rm::open(std::move(os), o.name);
  Rm& r = *rm_;
  // The card, its /dev/nvidiaN, and the RM device tree.
  std::vector<rm::nv_ioctl_card_info_t> cards(rm::kMaxCards);
  sys::check_ioctl(r.os->ioctl(r.ctl.get(), rm::rm_ioctl(rm::NV_ESC_CARD_INFO, static_cast<uint32_t>(cards.size() * sizeof cards[0])), cards.data()),
                   "NV_ESC_CARD_INFO on /dev/nvidiactl (" + name_ + ")");
  const rm::nv_ioctl_card_info_t* card = nullptr;
  int seen = 0;
  for (const auto& c : cards)
    if (c.valid && seen++ == o.index) card = &c;
  if (!card) throw Error(name_ + ": the NVIDIA driver lists " + std::to_string(seen) + " GPU(s); there is no GPU " + std::to_string(o.index));
  r.dev_path = "/dev/nvidia" + std::to_string(card->minor_number);
  r.dev = sys::Fd(*r.os, r.dev_path, O_RDWR);
  rm::nv_ioctl_register_fd_t reg{r.ctl.get()};
  sys::check_ioctl(r.os->ioctl(r.dev.get(), rm::rm_ioctl(rm::NV_ESC_REGISTER_FD, sizeof reg), &reg), "NV_ESC_REGISTER_FD on " + r.dev_path);
  rm::NV0000_CTRL_GPU_GET_ID_INFO_V2_PARAMS id{};
  id.gpuId = card->gpu_id;
  r.control(r.root, rm::NV0000_CTRL_CMD_GPU_GET_ID_INFO_V2, &id, sizeof id, "GPU_GET_ID_INFO_V2");
  rm::NV0080_ALLOC_PARAMETERS dp{};
  dp.deviceId = id.deviceInstance, dp.hClientShare = r.root, dp.vaMode = rm::NV_DEVICE_ALLOCATION_VAMODE_OPTIONAL_MULTIPLE_VASPACES;
  r.device = r.alloc(r.root, rm::NV01_DEVICE_0, &dp, "the device", r.new_handle());
  rm::NV2080_ALLOC_PARAMETERS sp{};
  r.subdevice = r.alloc(r.device, rm::NV20_SUBDEVICE_0, &sp, "the subdevice", r.new_handle());
  rm::NV_MEMORY_VIRTUAL_ALLOCATION_PARAMS vp{};
  vp.limit = 0x1ffffffffffffull;
  r.virtmem = r.alloc(r.device, rm::NV01_MEMORY_VIRTUAL, &vp, "the virtual memory object", r.new_handle());

  // Classes.
  rm::NV0080_CTRL_GPU_GET_CLASSLIST_PARAMS cl{};
  r.control(r.device, rm::NV0080_CTRL_CMD_GPU_GET_CLASSLIST, &cl, sizeof cl, "GPU_GET_CLASSLIST (count)");
  std::vector<uint32_t> classes(cl.numClasses);
  cl.classList = reinterpret_cast<uint64_t>(classes.data());
  r.control(r.device, rm::NV0080_CTRL_CMD_GPU_GET_CLASSLIST, &cl, sizeof cl, "GPU_GET_CLASSLIST");
  facts_.usermode_class = pick(classes, kUsermode, "usermode (doorbell)", name_);
  facts_.gpfifo_class = pick(classes, kGpfifo, "GPFIFO channel", name_);
  facts_.compute_class = pick(classes, kCompute, "compute", name_);
  facts_.copy_class = pick(classes, kCopy, "copy engine", name_);
  facts_.driver_version = r.version;
  facts_.abi_branch = r.abi->name;

  // The doorbell page.
  uint32_t usermode = r.alloc(r.subdevice, facts_.usermode_class, nullptr, "the usermode (doorbell) object", r.new_handle());
  {
    sys::Fd fd(*r.os, r.dev_path, O_RDWR);
    sys::check_ioctl(r.os->ioctl(fd.get(), rm::rm_ioctl(rm::NV_ESC_REGISTER_FD, sizeof reg), &reg), "NV_ESC_REGISTER_FD on " + r.dev_path);
    rm::nv_ioctl_nvos33_parameters_with_fd mp{};
    mp.params.hClient = r.root, mp.params.hDevice = r.device, mp.params.hMemory = usermode, mp.params.length = rm::NVC361_NV_USERMODE__SIZE;
    mp.fd = fd.get();
    sys::check_ioctl(r.os->ioctl(r.ctl.get(), rm::rm_ioctl(rm::NV_ESC_RM_MAP_MEMORY, sizeof mp), &mp), "NV_ESC_RM_MAP_MEMORY of the doorbell page");
    if (mp.params.status != rm::NV_OK) r.fail(mp.params.status, "RM_MAP_MEMORY of the doorbell page");
    sys::Mapping page(*r.os, rm::NVC361_NV_USERMODE__SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
    doorbell_ = std::make_unique<sys::MappedDoorbell>(page.data() + rm::NVC361_NOTIFY_CHANNEL_PENDING, 32, name_ + " doorbell");
    doorbell_page_ = std::move(page);
  }
  rm::NV2080_CTRL_PERF_BOOST_PARAMS boost{};
  boost.flags = rm::NV2080_CTRL_PERF_BOOST_FLAGS_CMD.num(rm::NV2080_CTRL_PERF_BOOST_FLAGS_CMD_BOOST_TO_MAX) |
                rm::NV2080_CTRL_PERF_BOOST_FLAGS_CUDA.num(1) |
                rm::NV2080_CTRL_PERF_BOOST_FLAGS_CUDA_PRIORITY.num(rm::NV2080_CTRL_PERF_BOOST_FLAGS_CUDA_PRIORITY_HIGH);
  boost.duration = rm::NV2080_CTRL_PERF_BOOST_DURATION_INFINITE;
  try {
    r.control(r.subdevice, rm::NV2080_CTRL_CMD_PERF_BOOST, &boost, sizeof boost, "PERF_BOOST");
  } catch (const RmError&) {
    // Clocks stay where the driver keeps them; nothing else depends on it.
  }

  // The VA space UVM owns, the GPU registered with UVM.
  r.vaspace = rm::with_branch(*r.abi, [&](auto t) {
    typename decltype(t)::VaSpace v{};
    v.vaBase = 0x1000, v.vaSize = 0x1fffffb000000ull;
    v.flags = rm::NV_VASPACE_ALLOCATION_FLAGS_ENABLE_PAGE_FAULTING | rm::NV_VASPACE_ALLOCATION_FLAGS_IS_EXTERNALLY_OWNED;
    return r.alloc(r.device, rm::FERMI_VASPACE_A, &v, "the VA space", r.new_handle());
  });
  rm::NV2080_CTRL_GPU_GET_GID_INFO_PARAMS gid{};
  gid.flags = rm::NV2080_GPU_CMD_GPU_GET_GID_FLAGS_FORMAT.num(rm::NV2080_GPU_CMD_GPU_GET_GID_FLAGS_FORMAT_BINARY);
  r.control(r.subdevice, rm::NV2080_CTRL_CMD_GPU_GET_GID_INFO, &gid, sizeof gid, "GPU_GET_GID_INFO");
  std::memcpy(r.uuid, gid.data, 16);
  rm::UVM_REGISTER_GPU_PARAMS rg{};
  std::memcpy(rg.gpu_uuid.uuid, r.uuid, 16);
  rg.rmCtrlFd = -1;
  r.uvm_call(rm::UVM_REGISTER_GPU, rg, "UVM_REGISTER_GPU");
  rm::UVM_REGISTER_GPU_VASPACE_PARAMS rv{};
  std::memcpy(rv.gpuUuid.uuid, r.uuid, 16);
  rv.rmCtrlFd = r.ctl.get(), rv.hClient = r.root, rv.hVaSpace = r.vaspace;
  r.uvm_call(rm::UVM_REGISTER_GPU_VASPACE, rv, "UVM_REGISTER_GPU_VASPACE");

  // GR facts: the architecture and the SM counts that size shader local memory.
  rm::NV2080_CTRL_GR_INFO gi[] = {{rm::NV2080_CTRL_GR_INFO_INDEX_SM_VERSION, 0},
                                  {rm::NV2080_CTRL_GR_INFO_INDEX_LITTER_NUM_GPCS, 0},
                                  {rm::NV2080_CTRL_GR_INFO_INDEX_LITTER_NUM_TPC_PER_GPC, 0},
                                  {rm::NV2080_CTRL_GR_INFO_INDEX_LITTER_NUM_SM_PER_TPC, 0},
                                  {rm::NV2080_CTRL_GR_INFO_INDEX_MAX_WARPS_PER_SM, 0}};
  rm::NV2080_CTRL_GR_GET_INFO_PARAMS gp{};
  gp.grInfoListSize = static_cast<uint32_t>(std::size(gi));
  gp.grInfoList = reinterpret_cast<uint64_t>(gi);
  r.control(r.subdevice, rm::NV2080_CTRL_CMD_GR_GET_INFO, &gp, sizeof gp, "GR_GET_INFO");
  facts_.sm_version = gi[0].data;
  facts_.gpcs = std::max(1u, gi[1].data), facts_.tpcs_per_gpc = std::max(1u, gi[2].data), facts_.sms_per_tpc = std::max(1u, gi[3].data);
  facts_.max_warps_per_sm = std::max(1u, gi[4].data);
  facts_.arch = "sm_" + std::to_string(facts_.sm_version >> 8) + std::to_string(facts_.sm_version & 0xf);

  // The channel group and its subcontext; channels join it in create_channel.
  rm::NV_CHANNEL_GROUP_ALLOCATION_PARAMETERS tg{};
  tg.engineType = rm::NV2080_ENGINE_TYPE_GRAPHICS;
  tsg_ = r.alloc(r.device, rm::KEPLER_CHANNEL_GROUP_A, &tg, "the channel group", r.new_handle());
  rm::NV_CTXSHARE_ALLOCATION_PARAMETERS cs{};
  cs.hVASpace = r.vaspace, cs.flags = rm::NV_CTXSHARE_ALLOCATION_FLAGS_SUBCONTEXT.num(rm::NV_CTXSHARE_ALLOCATION_FLAGS_SUBCONTEXT_ASYNC);
  ctxshare_ = r.alloc(tsg_, rm::FERMI_CONTEXT_SHARE_A, &cs, "the subcontext", r.new_handle());

  facts_.device_id = card->pci_info.device_id;
  facts_.memory_bytes = card->fb_size;
  facts_.interface = "nvidia rm " + r.version + " (branch " + r.abi->name + "), " + r.dev_path;
}

std::shared_ptr<NvInterface::Memory> RmInterface::alloc(uint64_t bytes, MemoryKind kind) {
  static constexpr Rm::Where kWhere[] = {Rm::Where::Vidmem, Rm::Where::Vidmem, Rm::Where::Sysmem, Rm::Where::Host};
  auto m = std::make_shared<RmMemory>();
  m->rm = rm_->alloc_memory(bytes, kWhere[static_cast<int>(kind)], kind == MemoryKind::VidmemWc);
  m->va = m->rm->va, m->size = bytes, m->host = m->rm->host;
  return m;
}

NvInterface::Channel RmInterface::create_channel(const ChannelSpec& spec) {
  Rm& r = *rm_;
  auto c = std::make_shared<RmChannel>();
  c->copy = spec.copy;
  // The GPFIFO ring with USERD right after it, in write-combined vidmem (tinygrad's layout).
  const uint64_t userd_at =
      (uint64_t{spec.gpfifo_entries} * 8 + hw::nv::kUserdBytes - 1) / hw::nv::kUserdBytes * hw::nv::kUserdBytes;  // USERD is 512-byte aligned
  c->area = r.alloc_memory(userd_at + hw::nv::kUserdBytes, Rm::Where::Vidmem, true);
  c->notifier = r.alloc_memory(kNotifierBytes, Rm::Where::Sysmem);
  c->handle = rm::with_branch(*r.abi, [&](auto t) {
    typename decltype(t)::ChannelAlloc a{};
    a.hObjectError = c->notifier->handle, a.hObjectBuffer = c->area->handle;
    a.gpFifoOffset = c->area->va, a.gpFifoEntries = spec.gpfifo_entries;
    a.hContextShare = ctxshare_;
    a.hUserdMemory[0] = c->area->handle, a.userdOffset[0] = userd_at;
    return r.alloc(tsg_, facts_.gpfifo_class, &a, spec.copy ? "the copy channel" : "the compute channel", r.new_handle());
  });
  uint32_t engine = r.alloc(c->handle, spec.engine_class, nullptr, spec.copy ? "the copy-engine object" : "the compute object", r.new_handle());
  if (!spec.copy) {
    rm::NV83DE_ALLOC_PARAMETERS d{};
    d.hAppClient = r.root, d.hClass3dObject = engine;
    debugger_ = r.alloc(r.device, rm::GT200_DEBUGGER, &d, "the debugger object (fault reports)", r.new_handle());
  }
  rm::NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN_PARAMS tok{};
  r.control(c->handle, rm::NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN, &tok, sizeof tok, "GPFIFO_GET_WORK_SUBMIT_TOKEN");
  rm::UVM_REGISTER_CHANNEL_PARAMS uc{};
  std::memcpy(uc.gpuUuid.uuid, r.uuid, 16);
  uc.rmCtrlFd = r.ctl.get(), uc.hClient = r.root, uc.hChannel = c->handle;
  uc.base = r.reserve_va(kChannelUvmRange), uc.length = kChannelUvmRange;
  r.uvm_call(rm::UVM_REGISTER_CHANNEL, uc, "UVM_REGISTER_CHANNEL");
  channels_.push_back(c);
  Channel out;
  out.token = tok.workSubmitToken;
  out.gpfifo = static_cast<uint64_t*>(c->area->host);
  out.gpfifo_va = c->area->va;
  out.userd = reinterpret_cast<hw::nv::Userd*>(static_cast<uint8_t*>(c->area->host) + userd_at);
  out.owner = c;
  return out;
}

void RmInterface::schedule(bool enable) {
  rm::with_branch(*rm_->abi, [&](auto t) {
    typename decltype(t)::Schedule s{};
    s.bEnable = enable;
    rm_->control(tsg_, rm::NVA06C_CTRL_CMD_GPFIFO_SCHEDULE, &s, sizeof s, enable ? "GPFIFO_SCHEDULE (enable)" : "GPFIFO_SCHEDULE (disable)");
  });
}

void RmInterface::stop_channels() noexcept {
  if (!live_) return;
  live_ = false;
  // Freeing the channel group stops its channels and whatever runs on them.
  if (tsg_) rm_->free(rm_->device, tsg_);
}

std::optional<NvInterface::Fault> RmInterface::check_faults() {
  if (!live_) return std::nullopt;
  for (const auto& c : channels_) {
    const auto* n = static_cast<const rm::NvNotification*>(c->notifier->host);
    uint16_t status = __atomic_load_n(&n->status, __ATOMIC_ACQUIRE);
    if (!status) continue;
    uint32_t rc = n->info32;
    std::string what = "the " + std::string(c->copy ? "copy" : "compute") + " channel stopped with error " + std::to_string(rc);
    if (const char* nm = rm::rc_error_name(rc)) what += std::string(" (") + nm + ")";
    rm::NV83DE_CTRL_DEBUG_READ_MMU_FAULT_INFO_PARAMS f{};
    try {
      rm_->control(debugger_, rm::NV83DE_CTRL_CMD_DEBUG_READ_MMU_FAULT_INFO, &f, sizeof f, "DEBUG_READ_MMU_FAULT_INFO");
    } catch (const RmError&) { f.count = 0; }
    if (f.count) {
      const auto& e = f.mmuFaultInfoList[0];
      const char* access = e.accessType == 1 ? "write" : e.accessType == 2 ? "atomic" : "read";
      return Fault{"GPU MMU fault at " + hex(e.faultAddress) + " (" + access + " of an unmapped address)", what};
    }
    return Fault{what, "the kernel log (dmesg Xid lines; for emu:nv the emu:nv lines on stderr) says more"};
  }
  return std::nullopt;
}

}  // namespace

std::unique_ptr<NvInterface> open_rm_interface(std::shared_ptr<sys::Os> os, const NvOptions& o) {
  return std::make_unique<RmInterface>(std::move(os), o);
}

std::unique_ptr<hcq::Device> open_nv(std::shared_ptr<sys::Os> os, const NvOptions& o) { return open_nv(open_rm_interface(std::move(os), o), o); }

}  // namespace ugpu::nv
