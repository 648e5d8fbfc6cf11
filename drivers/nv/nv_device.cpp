// Opening an NVIDIA GPU through RM and UVM (the sequence of reference/nv-qcom-stack.md §1.2, with
// Hopper's classes), memory, channels, and submission with flow control on the GPFIFO ring and the
// pushbuffer ring.
#include <fcntl.h>
#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "drivers/nv/internal.h"
#include "hw/nv/rm_branch.h"
#include "ir/text.h"

namespace ugpu::nv {
namespace rm = hw::nv;
namespace m = hw::nv;

namespace {

std::string hex(uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(v));
  return b;
}

// Classes by preference, newest first: the first the GPU lists is used.
constexpr uint32_t kUsermode[] = {rm::BLACKWELL_USERMODE_A, rm::HOPPER_USERMODE_A, rm::AMPERE_USERMODE_A, rm::TURING_USERMODE_A};
constexpr uint32_t kGpfifo[] = {rm::AMPERE_CHANNEL_GPFIFO_A, rm::HOPPER_CHANNEL_GPFIFO_A, rm::BLACKWELL_CHANNEL_GPFIFO_A};
constexpr uint32_t kCompute[] = {rm::BLACKWELL_COMPUTE_B, rm::BLACKWELL_COMPUTE_A, rm::HOPPER_COMPUTE_A, rm::ADA_COMPUTE_A,
                                 rm::AMPERE_COMPUTE_B, rm::AMPERE_COMPUTE_A};
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
constexpr uint64_t kSharedWindow = 0x7293'0000'0000ull, kLocalWindow = 0x7294'0000'0000ull;  // 4 GiB aligned, above every buffer

}  // namespace

const ArchFacts& arch_facts(const std::string& arch) {
  // Parameter offsets measured with ptxas 13.0 (reference/nv-qcom-stack.md §0.3); the largest SM
  // shared-memory configuration per architecture (A100 164 KiB, Ada 100 KiB, H100 228 KiB).
  static const ArchFacts kFacts[] = {
      {"sm_80", 0x160, 164, 12}, {"sm_86", 0x160, 100, 12}, {"sm_89", 0x160, 100, 12},
      {"sm_90", 0x210, 228, 12}, {"sm_100", 0x380, 228, 12}, {"sm_120", 0x380, 100, 12},
  };
  for (const ArchFacts& f : kFacts)
    if (arch == f.arch) return f;
  throw Error("NVIDIA architecture " + arch + " is not one ugpu launches kernels on (sm_80, sm_86, sm_89, sm_90, sm_100, sm_120)");
}

uint64_t Channel::gp_read() const {
  uint32_t get = __atomic_load_n(&userd->gp_get, __ATOMIC_ACQUIRE);
  return gp_written - ((gp_written - get) % entries);  // the ring never fills completely
}

NvDevice::NvDevice(std::shared_ptr<sys::Os> os, const NvOptions& o) : Device(o.name), ptx_images_(o.ptx_images), opts_(o) {
  // A launch's argument block holds constant bank 0 (0x210 bytes of driver words on sm_90 before the
  // parameters) and its QMD: about 1 KiB, so the kernarg ring is 16 MiB, not the default 1 MiB.
  set_kernarg_ring_size(16u << 20);
  rm_ = Rm::open(std::move(os), o.name);
  Rm& r = *rm_;
  // The card, its /dev/nvidiaN, and the RM device tree.
  std::vector<rm::nv_ioctl_card_info_t> cards(rm::kMaxCards);
  sys::check_ioctl(r.os->ioctl(r.ctl.get(), rm::rm_ioctl(rm::NV_ESC_CARD_INFO, static_cast<uint32_t>(cards.size() * sizeof cards[0])), cards.data()),
                   "NV_ESC_CARD_INFO on /dev/nvidiactl (" + name() + ")");
  const rm::nv_ioctl_card_info_t* card = nullptr;
  int seen = 0;
  for (const auto& c : cards)
    if (c.valid && seen++ == o.index) card = &c;
  if (!card) throw Error(name() + ": the NVIDIA driver lists " + std::to_string(seen) + " GPU(s); there is no GPU " + std::to_string(o.index));
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
  facts_.usermode_class = pick(classes, kUsermode, "usermode (doorbell)", name());
  facts_.gpfifo_class = pick(classes, kGpfifo, "GPFIFO channel", name());
  facts_.compute_class = pick(classes, kCompute, "compute", name());
  facts_.copy_class = pick(classes, kCopy, "copy engine", name());
  facts_.driver_version = r.version;
  facts_.abi_branch = r.abi->name;
  // QMD version: V05 on Blackwell, V04 on Hopper, V03 on Ampere and Ada. An H100 (driver 580) ran V03
  // launches without an error but computed wrong results (docs/hardware-results.md); UGPU_NV_QMD=3
  // still builds V03 there, for experiments on hardware.
  const uint32_t cls = facts_.compute_class & 0xff00;
  unsigned qmd = cls >= 0xcd00 ? 5 : cls >= 0xcb00 ? 4 : 3;
  if (const char* e = std::getenv("UGPU_NV_QMD"); e && *e && facts_.compute_class == rm::HOPPER_COMPUTE_A) {
    std::string v = e;
    if (v != "3" && v != "4") throw Error(name() + ": UGPU_NV_QMD=" + v + ": a Hopper GPU takes QMD version 3 or 4");
    qmd = static_cast<unsigned>(v[0] - '0');
  }
  qmd_layout_ = &m::qmd_layout(qmd);
  facts_.qmd_major = qmd;

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
    doorbell_ = std::make_unique<sys::MappedDoorbell>(page.data() + rm::NVC361_NOTIFY_CHANNEL_PENDING, 32, name() + " doorbell");
    doorbell_page_ = std::move(page);
  }
  rm::NV2080_CTRL_PERF_BOOST_PARAMS boost{};
  boost.flags = rm::NV2080_CTRL_PERF_BOOST_FLAGS_CMD.num(rm::NV2080_CTRL_PERF_BOOST_FLAGS_CMD_BOOST_TO_MAX) | rm::NV2080_CTRL_PERF_BOOST_FLAGS_CUDA.num(1) |
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
  rm::NV2080_CTRL_GR_INFO gi[] = {{rm::NV2080_CTRL_GR_INFO_INDEX_SM_VERSION, 0}, {rm::NV2080_CTRL_GR_INFO_INDEX_LITTER_NUM_GPCS, 0},
                                   {rm::NV2080_CTRL_GR_INFO_INDEX_LITTER_NUM_TPC_PER_GPC, 0}, {rm::NV2080_CTRL_GR_INFO_INDEX_LITTER_NUM_SM_PER_TPC, 0},
                                   {rm::NV2080_CTRL_GR_INFO_INDEX_MAX_WARPS_PER_SM, 0}};
  rm::NV2080_CTRL_GR_GET_INFO_PARAMS gp{};
  gp.grInfoListSize = static_cast<uint32_t>(std::size(gi));
  gp.grInfoList = reinterpret_cast<uint64_t>(gi);
  r.control(r.subdevice, rm::NV2080_CTRL_CMD_GR_GET_INFO, &gp, sizeof gp, "GR_GET_INFO");
  facts_.sm_version = gi[0].data;
  gpcs_ = std::max(1u, gi[1].data), tpcs_per_gpc_ = std::max(1u, gi[2].data), sms_per_tpc_ = std::max(1u, gi[3].data);
  max_warps_per_sm_ = std::max(1u, gi[4].data);
  arch_ = "sm_" + std::to_string(facts_.sm_version >> 8) + std::to_string(facts_.sm_version & 0xf);
  arch_facts_ = &arch_facts(arch_);
  sass_version_ = ((facts_.sm_version & 0xf00) >> 4) | (facts_.sm_version & 0xf);

  // Signals: host memory the GPU writes.
  use_signal_memory([rmp = rm_](size_t n) {
    auto mem = rmp->alloc_memory(n, Rm::Where::Host);
    hcq::Buffer b;
    b.va = mem->va, b.size = n, b.host = mem->host, b.owner = mem;
    return b;
  });

  // The channel group, its subcontext, the compute and copy channels; then schedule the group.
  rm::NV_CHANNEL_GROUP_ALLOCATION_PARAMETERS tg{};
  tg.engineType = rm::NV2080_ENGINE_TYPE_GRAPHICS;
  tsg_ = r.alloc(r.device, rm::KEPLER_CHANNEL_GROUP_A, &tg, "the channel group", r.new_handle());
  rm::NV_CTXSHARE_ALLOCATION_PARAMETERS cs{};
  cs.hVASpace = r.vaspace, cs.flags = rm::NV_CTXSHARE_ALLOCATION_FLAGS_SUBCONTEXT.num(rm::NV_CTXSHARE_ALLOCATION_FLAGS_SUBCONTEXT_ASYNC);
  ctxshare_ = r.alloc(tsg_, rm::FERMI_CONTEXT_SHARE_A, &cs, "the subcontext", r.new_handle());
  compute_ = create_channel(false, facts_.compute_class);
  copy_ = create_channel(true, facts_.copy_class);
  schedule(true);

  shared_window_ = kSharedWindow, local_window_ = kLocalWindow;
  cbank0_prefix_.assign(arch_facts_->cbank0_prefix_words, 0);
  cbank0_prefix_[6] = static_cast<uint32_t>(shared_window_), cbank0_prefix_[7] = static_cast<uint32_t>(shared_window_ >> 32);
  cbank0_prefix_[8] = static_cast<uint32_t>(local_window_), cbank0_prefix_[9] = static_cast<uint32_t>(local_window_ >> 32);
  cbank0_prefix_[10] = 0xfffdc0;
  init_channels();

  facts_.gpu_name = std::string(o.kind == "gpu" ? "NVIDIA GPU" : "emulated NVIDIA GPU") + " " + hex(card->pci_info.device_id);
  info_.kind = o.kind;
  info_.arch = arch_ + " (" + std::to_string(gpcs_ * tpcs_per_gpc_ * sms_per_tpc_) + " SMs, device " + hex(card->pci_info.device_id) + ")";
  info_.interface = "nvidia rm " + r.version + " (branch " + r.abi->name + "), " + r.dev_path;
  info_.memory = card->fb_size;
}

std::unique_ptr<Channel> NvDevice::create_channel(bool copy, uint32_t engine_class) {
  Rm& r = *rm_;
  auto c = std::make_unique<Channel>();
  c->copy = copy;
  c->entries = opts_.gpfifo_entries;
  // The GPFIFO ring with USERD right after it, in write-combined vidmem (tinygrad's layout).
  const uint64_t userd_at = (uint64_t{c->entries} * 8 + m::kUserdBytes - 1) / m::kUserdBytes * m::kUserdBytes;  // USERD is 512-byte aligned
  c->area = r.alloc_memory(userd_at + m::kUserdBytes, Rm::Where::Vidmem, true);
  c->notifier = r.alloc_memory(kNotifierBytes, Rm::Where::Sysmem);
  c->gpfifo = static_cast<uint64_t*>(c->area->host);
  c->gpfifo_va = c->area->va;
  c->userd = reinterpret_cast<m::Userd*>(static_cast<uint8_t*>(c->area->host) + userd_at);
  c->handle = rm::with_branch(*r.abi, [&](auto t) {
    typename decltype(t)::ChannelAlloc a{};
    a.hObjectError = c->notifier->handle, a.hObjectBuffer = c->area->handle;
    a.gpFifoOffset = c->area->va, a.gpFifoEntries = c->entries;
    a.hContextShare = ctxshare_;
    a.hUserdMemory[0] = c->area->handle, a.userdOffset[0] = userd_at;
    return r.alloc(tsg_, facts_.gpfifo_class, &a, copy ? "the copy channel" : "the compute channel", r.new_handle());
  });
  uint32_t engine = r.alloc(c->handle, engine_class, nullptr, copy ? "the copy-engine object" : "the compute object", r.new_handle());
  if (!copy) {
    rm::NV83DE_ALLOC_PARAMETERS d{};
    d.hAppClient = r.root, d.hClass3dObject = engine;
    debugger_ = r.alloc(r.device, rm::GT200_DEBUGGER, &d, "the debugger object (fault reports)", r.new_handle());
  }
  rm::NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN_PARAMS tok{};
  r.control(c->handle, rm::NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN, &tok, sizeof tok, "GPFIFO_GET_WORK_SUBMIT_TOKEN");
  c->token = tok.workSubmitToken;
  rm::UVM_REGISTER_CHANNEL_PARAMS uc{};
  std::memcpy(uc.gpuUuid.uuid, r.uuid, 16);
  uc.rmCtrlFd = r.ctl.get(), uc.hClient = r.root, uc.hChannel = c->handle;
  uc.base = r.reserve_va(kChannelUvmRange), uc.length = kChannelUvmRange;
  r.uvm_call(rm::UVM_REGISTER_CHANNEL, uc, "UVM_REGISTER_CHANNEL");
  auto pb = r.alloc_memory(opts_.pushbuffer_bytes, Rm::Where::Vidmem, true);
  c->pb = static_cast<uint32_t*>(pb->host), c->pb_va = pb->va, c->pb_dwords = pb->size / 4;
  c->pushbuffer = pb;
  c->retired = new_signal(0);
  return c;
}

void NvDevice::schedule(bool enable) {
  rm::with_branch(*rm_->abi, [&](auto t) {
    typename decltype(t)::Schedule s{};
    s.bEnable = enable;
    rm_->control(tsg_, rm::NVA06C_CTRL_CMD_GPFIFO_SCHEDULE, &s, sizeof s, enable ? "GPFIFO_SCHEDULE (enable)" : "GPFIFO_SCHEDULE (disable)");
  });
}

void NvDevice::init_channels() {
  // Bind the engines to their subchannels; the compute engine learns the shared and local windows.
  for (bool copy : {false, true}) {
    auto q = copy ? make_copy_queue(*this) : make_compute_queue(*this);
    q->bind_engine(copy ? facts_.copy_class : facts_.compute_class, shared_window_, local_window_);
    uint64_t v = next_timeline();
    q->signal(timeline(), v);
    q->submit();
    wait(timeline(), v, copy ? "setting up the copy channel" : "setting up the compute channel");
  }
}

NvDevice::~NvDevice() { on_fail(); }

hcq::Buffer NvDevice::alloc_memory(size_t bytes) {
  auto mem = rm_->alloc_memory(bytes, Rm::Where::Vidmem);
  hcq::Buffer b;
  b.va = mem->va, b.size = bytes, b.host = mem->host, b.owner = mem;
  return b;
}

hcq::Buffer NvDevice::alloc_staging(size_t bytes) {
  auto mem = rm_->alloc_memory(bytes, Rm::Where::Host);
  hcq::Buffer b;
  b.va = mem->va, b.size = bytes, b.host = mem->host, b.owner = mem;
  return b;
}

std::shared_ptr<uint32_t[]> NvDevice::command_memory(size_t dwords) {
  hcq::Buffer b = alloc(std::max<size_t>(dwords, 1) * 4);
  // A bound queue knows its commands by their host address; the GPFIFO entry needs the GPU's.
  {
    std::lock_guard lock(command_va_->mu);
    command_va_->va[b.host] = b.va;
  }
  return std::shared_ptr<uint32_t[]>(static_cast<uint32_t*>(b.host), [owner = b.owner, map = command_va_](uint32_t* p) {
    std::lock_guard lock(map->mu);
    map->va.erase(p);
  });
}

uint64_t NvDevice::command_address(const uint32_t* host) const {
  std::lock_guard lock(command_va_->mu);
  auto it = command_va_->va.find(host);
  if (it == command_va_->va.end()) throw Error(name() + ": a bound queue's commands are not in this device's command memory");
  return it->second;
}

uint64_t NvDevice::submit_commands(hcq::HWQueue& hq) {
  check_usable();
  auto& q = static_cast<NvQueue&>(hq);
  Channel& c = channel(q.copy);
  std::span<const uint32_t> cmds = q.commands();
  const bool bound = q.bound();
  // What goes into the pushbuffer ring: the commands (unless bound, then they run where they are),
  // then the retire record. The GPFIFO gets one entry per segment.
  std::vector<uint32_t> tail;
  append_retire(tail, 0, 0);
  const size_t n = (bound ? 0 : cmds.size()) + tail.size();
  const uint32_t gp_needed = bound ? 2 : 1;
  if (n > c.pb_dwords / 2)
    throw Error(name() + ": a queue of " + std::to_string(n) + " dwords does not fit the " + std::to_string(c.pb_dwords) +
                "-dword pushbuffer ring; bind() it so a submit is one GPFIFO entry");
  auto deadline = std::chrono::steady_clock::now() + default_timeout();
  uint64_t seen_gp = ~uint64_t{0}, seen_done = ~uint64_t{0};  // progress seen while waiting for space
  for (bool waited = false;; waited = true) {
    {
      std::lock_guard lock(c.mu);
      // Pushbuffer space: segments are contiguous, so a segment that would cross the end starts at 0.
      uint64_t at = c.pb_written % c.pb_dwords;
      uint64_t pad = at + n > c.pb_dwords ? c.pb_dwords - at : 0;
      uint64_t end = c.pb_written + pad + n;
      // Retired pushbuffer: everything written before the last finished submission.
      uint64_t done = c.done(), freed = 0;
      while (!c.pb_marks.empty() && c.pb_marks.front().first <= done) freed = c.pb_marks.front().second, c.pb_marks.pop_front();
      if (freed) c.pb_freed = std::max(c.pb_freed, freed);
      bool pb_ok = end - c.pb_freed <= c.pb_dwords;
      // GPGet is in USERD, GPU memory behind the BAR (a slow read): read only when the last value seen
      // leaves no room.
      bool gp_ok = c.gp_written + gp_needed - c.gp_seen <= c.entries - 1;
      if (!gp_ok) c.gp_seen = c.gp_read(), gp_ok = c.gp_written + gp_needed - c.gp_seen <= c.entries - 1;
      if (pb_ok && gp_ok) {
        uint64_t position = ++c.submitted;
        uint32_t* seg = c.pb + (at + pad) % c.pb_dwords;
        uint64_t seg_va = c.pb_va + ((at + pad) % c.pb_dwords) * 4;
        size_t k = 0;
        if (!bound) {
          std::memcpy(seg, cmds.data(), cmds.size() * 4);
          k = cmds.size();
        }
        tail.clear();
        append_retire(tail, c.retired->address(), position);
        std::memcpy(seg + k, tail.data(), tail.size() * 4);
        c.pb_written = end;
        c.pb_marks.emplace_back(position, end);
        auto put_entry = [&](uint64_t va, size_t dwords) {
          c.gpfifo[c.gp_written % c.entries] = m::encode_gp_entry({va, static_cast<uint32_t>(dwords)});
          ++c.gp_written;
        };
        if (bound) put_entry(command_address(cmds.data()), cmds.size());
        put_entry(seg_va, n);
        // Where the last submission is, for tests and `ugpu decode --nv` (copied only when asked).
        c.last_words = bound ? cmds.data() : seg;
        c.last_dwords = cmds.size();
        c.last_qmds = q.qmds;
        if (q.kernels) c.kernels.add(position, q.kernels, done);
        // GPPut, then the doorbell (the ring and GPPut are write-combined: the doorbell's fence orders them).
        __atomic_store_n(&c.userd->gp_put, static_cast<uint32_t>(c.gp_written % c.entries), __ATOMIC_RELEASE);
        doorbell_->ring(c.token);
        return (q.copy ? uint64_t{1} << 56 : 0) | position;
      }
      if (!waited) ++c.waits;
    }
    // Back-pressure: wait (without the lock) for the channel to fetch entries or retire submissions.
    check_errors();
    check_usable();
    if (c.gp_read() != seen_gp || c.done() != seen_done)
      seen_gp = c.gp_read(), seen_done = c.done(), deadline = std::chrono::steady_clock::now() + default_timeout();
    if (std::chrono::steady_clock::now() > deadline) {
      fail("ring full");
      throw hcq::Timeout(name() + ": waiting for space on the " + (q.copy ? "copy" : "compute") + " channel: the GPU consumed nothing for " +
                         std::to_string(default_timeout().count()) + " ms; the device is marked failed");
    }
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

bool NvDevice::consumed(uint64_t position) const {
  const Channel& c = position >> 56 ? *copy_ : *compute_;
  return c.done() >= (position & ((uint64_t{1} << 56) - 1));
}

// No interrupt wakes a waiter yet (the non-stall interrupt is not wired to an OS event): short sleeps,
// so a wait ends within about 20 us of the signal.
void NvDevice::sleep_for_progress(std::chrono::microseconds max) {
  check_errors();
  if (max.count() > 0) std::this_thread::sleep_for(std::min<std::chrono::microseconds>(max, std::chrono::microseconds(20)));
}

void NvDevice::check_errors() {
  if (!channels_live_ || failed()) return;
  for (Channel* c : {compute_.get(), copy_.get()}) {
    if (!c) continue;
    const auto* n = static_cast<const rm::NvNotification*>(c->notifier->host);
    uint16_t status = __atomic_load_n(&n->status, __ATOMIC_ACQUIRE);
    if (!status) continue;
    uint32_t rc = n->info32;
    std::string what = "the " + std::string(c->copy ? "copy" : "compute") + " channel stopped with error " + std::to_string(rc);
    if (const char* nm = rm::rc_error_name(rc)) what += std::string(" (") + nm + ")";
    rm::NV83DE_CTRL_DEBUG_READ_MMU_FAULT_INFO_PARAMS f{};
    try {
      rm_->control(debugger_, rm::NV83DE_CTRL_CMD_DEBUG_READ_MMU_FAULT_INFO, &f, sizeof f, "DEBUG_READ_MMU_FAULT_INFO");
    } catch (const RmError&) {
      f.count = 0;
    }
    if (f.count) {
      const auto& e = f.mmuFaultInfoList[0];
      const char* access = e.accessType == 1 ? "write" : e.accessType == 2 ? "atomic" : "read";
      fail("GPU MMU fault at " + hex(e.faultAddress) + " (" + access + " of an unmapped address) while running " + work_in_flight() + "; " + what);
    } else {
      fail(what + " while running " + work_in_flight() + "; the kernel log (dmesg Xid lines; for emu:nv the emu:nv lines on stderr) says more");
    }
    return;
  }
}

std::string NvDevice::work_in_flight() {
  std::lock_guard lock(compute_->mu);
  return compute_->kernels.describe(compute_->done());
}

void NvDevice::on_fail() {
  if (!channels_live_.exchange(false)) return;
  // Freeing the channel group stops its channels and whatever runs on them.
  if (tsg_) rm_->free(rm_->device, tsg_);
}

NvDevice::Local NvDevice::local_memory_for(const NvProgram& p) {
  std::lock_guard lock(local_mu_);
  if (p.local_bytes > local_per_thread_) {
    // Per TPC: bytes per thread for a warp, rounded, times every warp of its SMs (tinygrad's sizing).
    uint64_t per_warp = (uint64_t{p.local_bytes} * 32 + 0x1ff) / 0x200 * 0x200;
    uint64_t per_tpc = (per_warp * max_warps_per_sm_ * sms_per_tpc_ + 0x7fff) / 0x8000 * 0x8000;
    uint64_t total = (per_tpc * tpcs_per_gpc_ * gpcs_ + (128u << 10) - 1) / (128u << 10) * (128u << 10);
    if (local_.owner) old_local_.push_back(local_);  // queues recorded earlier may still use it
    local_ = alloc(total);
    local_per_thread_ = p.local_bytes, local_per_tpc_ = per_tpc;
  }
  return {local_.va, local_per_tpc_};
}

const hcq::Program& NvDevice::copy_program() {
  std::lock_guard lock(copy_mu_);
  if (!copy_program_) {
    static constexpr const char* kCopy = R"(dst = DEFINE_GLOBAL:uint8* {0}
src = DEFINE_GLOBAL:uint8* {1}
n = DEFINE_VAR:index {"n", 1, 2147483647}
i = RANGE(n) {0, GLOBAL}
SINK(END(STORE(INDEX:uint8*(dst, i), LOAD:uint8(INDEX:uint8*(src, i))), i))
)";
    codegen::CompileOptions o;
    o.name = "ugpu_copy";
    copy_program_ = load(codegen::compile(ir::parse(kCopy), codegen::find_target(arch_), o));
  }
  return *copy_program_;
}

// The invalidation runs in order on the compute channel, before any launch submitted after it, so it
// neither waits for earlier work nor takes a timeline value: a program can be loaded while another
// queue is being recorded (the byte-copy kernel is loaded on the first compute-queue copy).
void NvDevice::invalidate_code() {
  auto q = make_compute_queue(*this);
  q->invalidate_caches();
  q->submit();
}

std::shared_ptr<hcq::Program> NvDevice::load(std::shared_ptr<const codegen::CompiledKernel> kernel) {
  if (!kernel || kernel->target->name != arch_)
    throw Error(name() + ": load needs a kernel compiled for " + arch_ + ", not " + (kernel ? std::string(kernel->target->name) : std::string("nothing")));
  return std::make_shared<NvProgram>(*this, std::move(kernel));
}

std::unique_ptr<hcq::Device> open_nv(std::shared_ptr<sys::Os> os, const NvOptions& o) { return std::make_unique<NvDevice>(std::move(os), o); }

PushSnapshot last_submission(hcq::Device& dev, bool copy) {
  auto* d = dynamic_cast<NvDevice*>(&dev);
  if (!d) throw Error(dev.name() + " is not an NVIDIA device");
  Channel& c = d->channel(copy);
  std::lock_guard lock(c.mu);
  PushSnapshot s;
  s.copy = copy;
  s.qmd_major = d->facts().qmd_major;
  if (c.last_words) s.words.assign(c.last_words, c.last_words + c.last_dwords);
  for (const uint32_t* qmd : c.last_qmds) s.qmds.emplace_back(qmd, qmd + d->qmd_layout().bytes / 4);
  return s;
}

NvFacts facts(hcq::Device& dev) {
  auto* d = dynamic_cast<NvDevice*>(&dev);
  if (!d) throw Error(dev.name() + " is not an NVIDIA device");
  NvFacts f = d->facts();
  for (bool copy : {false, true}) {
    Channel& c = d->channel(copy);
    std::lock_guard lock(c.mu);
    f.ring_waits += c.waits;
  }
  return f;
}

}  // namespace ugpu::nv
