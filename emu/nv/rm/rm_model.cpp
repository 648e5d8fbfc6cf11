#include "emu/nv/rm/rm_model.h"

#include <sys/ioctl.h>
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

#include "common/hex.h"
#include "emu/nv/fifo.h"
#include "emu/nv/rm/rm_memory.h"
#include "hw/nv/methods.h"
#include "hw/nv/rm_abi.h"
#include "hw/nv/rm_branch.h"

namespace ugpu::emu::nv {
namespace rm = hw::nv;

namespace {

// The classes GH100 exposes that this model implements (a subset of gpuGetEngClassDescriptorList_GH100).
constexpr uint32_t kClassList[] = {rm::NV01_ROOT_CLIENT,
                                   rm::NV01_DEVICE_0,
                                   rm::NV20_SUBDEVICE_0,
                                   rm::NV01_MEMORY_SYSTEM,
                                   rm::NV01_MEMORY_LOCAL_USER,
                                   rm::NV01_MEMORY_VIRTUAL,
                                   rm::NV01_MEMORY_SYSTEM_OS_DESCRIPTOR,
                                   rm::GT200_DEBUGGER,
                                   rm::FERMI_CONTEXT_SHARE_A,
                                   rm::FERMI_VASPACE_A,
                                   rm::KEPLER_CHANNEL_GROUP_A,
                                   rm::HOPPER_USERMODE_A,
                                   rm::AMPERE_CHANNEL_GPFIFO_A,
                                   rm::HOPPER_CHANNEL_GPFIFO_A,
                                   rm::HOPPER_COMPUTE_A,
                                   rm::HOPPER_DMA_COPY_A};

enum class Kind { Client, Device, Subdevice, Virtual, VaSpace, Usermode, Memory, Tsg, CtxShare, Channel, Engine, Debugger };

struct Object {
  Object(Kind k = Kind::Device, uint32_t c = 0, uint32_t p = 0) : kind(k), cls(c), parent(p) {}
  Kind kind;
  uint32_t cls = 0, parent = 0;
  std::shared_ptr<RmMemory> memory;  // Memory
  uint32_t flags = 0;                // VaSpace: allocation flags
  std::shared_ptr<Channel> channel;  // Channel; Engine: the channel it is bound to
  std::vector<uint32_t> children;
};

struct Card;

// An open /dev/nvidiactl or /dev/nvidia0: RM_MAP_MEMORY leaves a mapping pending on the fd it names,
// which the following mmap of that fd makes.
class RmFile : public VirtualFile {
 public:
  RmFile(std::shared_ptr<Card> card, bool control) : card_(std::move(card)), control_(control) {}
  int ioctl(unsigned long request, void* arg) override;
  void* map_pages(void* addr, uint64_t offset, size_t len, int prot, int flags) override;
  void* mmap(uint64_t offset, size_t len, int prot) override;
  const bool& control() const { return control_; }
  struct Pending {
    std::shared_ptr<RmMemory> memory;
    uint64_t offset = 0, length = 0;
    bool usermode = false;
  };
  std::mutex mu;
  std::optional<Pending> pending;
  int registered_ctl = -1;  // REGISTER_FD

 private:
  std::shared_ptr<Card> card_;
  bool control_;
};

class UvmFile : public VirtualFile {
 public:
  explicit UvmFile(std::shared_ptr<Card> card) : card_(std::move(card)) {}
  int ioctl(unsigned long request, void* arg) override;
  bool initialized = false;

 private:
  std::shared_ptr<Card> card_;
};

struct Card : NvGpu, std::enable_shared_from_this<Card> {
  NvGpuConfig cfg;
  VirtualOs* os = nullptr;
  const rm::AbiBranch* abi = nullptr;
  GpuMemory memory;  // pages and GPU mappings
  UvmRanges ranges;  // the VA UVM manages, where RM memory is mapped
  FifoContext fifo;
  std::mutex mu;                                           // the object tree
  std::map<uint32_t, std::map<uint32_t, Object>> clients;  // client handle -> objects (the client itself included)
  uint32_t next_client = 0xc1d00000, next_handle = 0xcaf00000, next_token = 1;
  std::map<uint32_t, std::shared_ptr<Channel>> channels;  // by work-submit token
  alignas(4096) uint8_t usermode[rm::NVC361_NV_USERMODE__SIZE] = {};
  std::atomic<bool> stop{false};
  std::thread doorbell_thread;
  mutable std::mutex log_mu;
  std::vector<std::string> log_lines;
  struct Fault {
    uint64_t address = 0;
    uint32_t type = 0, access = 0;
    bool mmu = false;
    std::string message;
  };
  std::optional<Fault> fault;
  uint8_t uuid[16] = {0x47, 0x50, 0x55, 0x2d, 0x65, 0x6d, 0x75, 0x2d, 0x6e, 0x76, 0x2d, 0x68, 0x31, 0x30, 0x30, 0x01};

  explicit Card(const NvGpuConfig& c) : cfg(c), memory(c.vram_bytes), fifo(memory) {
    fifo.ptx_threads = c.ptx_threads;
    fifo.on_mmu_fault = [this](const std::string& ch, uint64_t address, Access access, const std::string& message) {
      std::lock_guard lock(log_mu);
      fault = Fault{address, rm::NV_PFAULT_FAULT_TYPE_PTE, access == Access::Write ? 1u : access == Access::Atomic ? 2u : 0u, true, message};
      note("Xid 31, " + ch + ": " + message);
    };
    fifo.on_channel_error = [this](const std::string& ch, const std::string& message) {
      std::lock_guard lock(log_mu);
      if (!fault) fault = Fault{0, 0, 0, false, message};
      note("Xid 13, " + ch + ": " + message);
    };
  }
  ~Card() override {
    stop = true;
    if (doorbell_thread.joinable()) doorbell_thread.join();
    std::lock_guard lock(mu);
    channels.clear();
    clients.clear();
  }
  void note(const std::string& line) {  // log_mu held
    std::fprintf(stderr, "emu:nv: %s\n", line.c_str());
    log_lines.push_back(line);
  }
  NvGpuStats stats() const override {
    NvGpuStats s;
    s.launches = fifo.launches, s.ptx_instructions = fifo.ptx_instructions, s.methods = fifo.methods, s.gp_entries = fifo.gp_entries;
    s.copies = fifo.copies, s.copy_bytes = fifo.copy_bytes, s.vram_used = memory.vram_used(), s.gpu_mappings = memory.mappings();
    auto* self = const_cast<Card*>(this);
    std::lock_guard lock(self->mu);
    for (const auto& [h, objs] : clients) s.objects += objs.size();
    s.channels = channels.size();
    return s;
  }
  std::vector<std::string> log() const override {
    std::lock_guard lock(log_mu);
    return log_lines;
  }
  const NvGpuConfig& config() const override { return cfg; }

  // The doorbell: NOTIFY_CHANNEL_PENDING takes a work-submit token. A write is an event; the register
  // reads back 0 once the host interface has taken it.
  void doorbell_loop() {
    auto* reg = reinterpret_cast<uint32_t*>(usermode + rm::NVC361_NOTIFY_CHANNEL_PENDING);
    int idle = 0;
    while (!stop) {
      uint32_t token = __atomic_exchange_n(reg, 0u, __ATOMIC_ACQ_REL);
      if (!token) {
        if (++idle < 2000) std::this_thread::yield();
        else std::this_thread::sleep_for(std::chrono::microseconds(idle < 20000 ? 20 : 500));
        continue;
      }
      idle = 0;
      std::vector<std::shared_ptr<Channel>> kick;
      {
        std::lock_guard lock(mu);
        auto it = channels.find(token);
        if (it == channels.end()) {
          std::lock_guard l(log_mu);
          note("doorbell with work-submit token " + std::to_string(token) + ", which no channel has: ignored");
          continue;
        }
        // Two doorbells between polls leave only the last token: every channel looks at its GPPut.
        for (auto& [t, ch] : channels) kick.push_back(ch);
      }
      for (auto& ch : kick) ch->kick();
    }
  }

  // --- the object tree ---------------------------------------------------------------------------
  Object* find(uint32_t client, uint32_t handle) {
    auto c = clients.find(client);
    if (c == clients.end()) return nullptr;
    auto o = c->second.find(handle);
    return o == c->second.end() ? nullptr : &o->second;
  }
  void free_tree(std::map<uint32_t, Object>& objs, uint32_t handle) {
    auto it = objs.find(handle);
    if (it == objs.end()) return;
    for (uint32_t child : std::vector<uint32_t>(it->second.children)) free_tree(objs, child);
    it = objs.find(handle);
    Object& o = it->second;
    if (o.kind == Kind::Memory && o.memory && o.memory->vidmem) memory.release_vram(o.memory->pages->size);
    if (o.kind == Kind::Channel) o.channel->stop();  // before its USERD and ring memory can go
    if (o.kind == Kind::Channel)
      for (auto c = channels.begin(); c != channels.end(); ++c)
        if (c->second == o.channel) {
          channels.erase(c);
          break;
        }
    if (auto p = objs.find(o.parent); p != objs.end() && p->first != handle) std::erase(p->second.children, handle);
    objs.erase(it);
  }

  uint32_t alloc(rm::NVOS21_PARAMETERS& p);
  uint32_t alloc_memory(uint32_t client, uint32_t parent, uint32_t handle, uint32_t cls, void* params);
  uint32_t alloc_channel(uint32_t client, uint32_t parent, uint32_t handle, uint32_t cls, void* params);
  uint32_t control(rm::NVOS54_PARAMETERS& p);
  uint32_t map_memory(rm::nv_ioctl_nvos33_parameters_with_fd& p);
  template <class Nvos46>
  uint32_t map_dma(Nvos46& p);
  uint32_t os_descriptor(rm::nv_ioctl_nvos02_parameters_with_fd& p);
  void card_info(rm::nv_ioctl_card_info_t* cards, size_t n);
  uint32_t uvm(UvmFile& f, unsigned long nr, void* arg);
};

uint32_t Card::alloc(rm::NVOS21_PARAMETERS& p) {
  std::lock_guard lock(mu);
  void* params = reinterpret_cast<void*>(p.pAllocParms);
  if (p.hClass == rm::NV01_ROOT_CLIENT) {
    uint32_t h = p.hObjectNew ? p.hObjectNew : next_client++;
    if (clients.count(h)) return rm::NV_ERR_INVALID_OBJECT_NEW;
    clients[h][h] = Object{Kind::Client, p.hClass, 0};
    p.hObjectNew = h;
    return rm::NV_OK;
  }
  auto c = clients.find(p.hRoot);
  if (c == clients.end()) return rm::NV_ERR_INVALID_CLIENT;
  Object* parent = find(p.hRoot, p.hObjectParent);
  if (!parent) return rm::NV_ERR_INVALID_OBJECT_PARENT;
  uint32_t handle = p.hObjectNew ? p.hObjectNew : next_handle++;
  if (c->second.count(handle)) return rm::NV_ERR_INVALID_OBJECT_NEW;
  if (std::find(std::begin(kClassList), std::end(kClassList), p.hClass) == std::end(kClassList)) return rm::NV_ERR_INVALID_CLASS;
  auto need = [&](Kind k) { return parent->kind == k; };
  Object o{Kind::Device, p.hClass, p.hObjectParent};
  switch (p.hClass) {
    case rm::NV01_DEVICE_0: {
      if (!need(Kind::Client) || !params) return rm::NV_ERR_INVALID_ARGUMENT;
      if (static_cast<rm::NV0080_ALLOC_PARAMETERS*>(params)->deviceId != 0) return rm::NV_ERR_INVALID_ARGUMENT;
      o.kind = Kind::Device;
      break;
    }
    case rm::NV20_SUBDEVICE_0:
      if (!need(Kind::Device)) return rm::NV_ERR_INVALID_OBJECT_PARENT;
      o.kind = Kind::Subdevice;
      break;
    case rm::NV01_MEMORY_VIRTUAL:
      if (!need(Kind::Device)) return rm::NV_ERR_INVALID_OBJECT_PARENT;
      o.kind = Kind::Virtual;
      break;
    case rm::HOPPER_USERMODE_A:
      if (!need(Kind::Subdevice)) return rm::NV_ERR_INVALID_OBJECT_PARENT;
      o.kind = Kind::Usermode;
      break;
    case rm::FERMI_VASPACE_A:
      if (!need(Kind::Device) || !params) return rm::NV_ERR_INVALID_ARGUMENT;
      o.kind = Kind::VaSpace;
      o.flags = rm::with_branch(*abi, [&](auto t) { return static_cast<typename decltype(t)::VaSpace*>(params)->flags; });
      break;
    case rm::KEPLER_CHANNEL_GROUP_A: {
      if (!need(Kind::Device) || !params) return rm::NV_ERR_INVALID_ARGUMENT;
      auto* g = static_cast<rm::NV_CHANNEL_GROUP_ALLOCATION_PARAMETERS*>(params);
      if (g->engineType != rm::NV2080_ENGINE_TYPE_GRAPHICS) return rm::NV_ERR_INVALID_ARGUMENT;
      o.kind = Kind::Tsg;
      break;
    }
    case rm::FERMI_CONTEXT_SHARE_A: {
      if (!need(Kind::Tsg) || !params) return rm::NV_ERR_INVALID_ARGUMENT;
      auto* s = static_cast<rm::NV_CTXSHARE_ALLOCATION_PARAMETERS*>(params);
      Object* va = find(p.hRoot, s->hVASpace);
      if (!va || va->kind != Kind::VaSpace) return rm::NV_ERR_INVALID_OBJECT_HANDLE;
      o.kind = Kind::CtxShare;
      break;
    }
    case rm::NV01_MEMORY_LOCAL_USER:
    case rm::NV01_MEMORY_SYSTEM: {
      if (!need(Kind::Device)) return rm::NV_ERR_INVALID_OBJECT_PARENT;
      uint32_t st = alloc_memory(p.hRoot, p.hObjectParent, handle, p.hClass, params);
      if (st == rm::NV_OK) p.hObjectNew = handle;
      return st;
    }
    case rm::AMPERE_CHANNEL_GPFIFO_A:
    case rm::HOPPER_CHANNEL_GPFIFO_A: {
      if (!need(Kind::Tsg)) return rm::NV_ERR_INVALID_OBJECT_PARENT;
      uint32_t st = alloc_channel(p.hRoot, p.hObjectParent, handle, p.hClass, params);
      if (st == rm::NV_OK) p.hObjectNew = handle;
      return st;
    }
    case rm::HOPPER_COMPUTE_A:
    case rm::HOPPER_DMA_COPY_A:
      if (!need(Kind::Channel)) return rm::NV_ERR_INVALID_OBJECT_PARENT;
      o.kind = Kind::Engine;
      o.channel = parent->channel;
      o.channel->add_object(p.hClass);
      break;
    case rm::GT200_DEBUGGER: {
      if (!need(Kind::Device) || !params) return rm::NV_ERR_INVALID_ARGUMENT;
      auto* d = static_cast<rm::NV83DE_ALLOC_PARAMETERS*>(params);
      Object* target = find(d->hAppClient, d->hClass3dObject);
      if (!target || target->kind != Kind::Engine) return rm::NV_ERR_INVALID_OBJECT_HANDLE;
      o.kind = Kind::Debugger;
      break;
    }
    default: return rm::NV_ERR_INVALID_CLASS;
  }
  c->second[handle] = std::move(o);
  c->second[p.hObjectParent].children.push_back(handle);
  p.hObjectNew = handle;
  return rm::NV_OK;
}

uint32_t Card::alloc_memory(uint32_t client, uint32_t parent, uint32_t handle, uint32_t cls, void* params) {
  if (!params) return rm::NV_ERR_INVALID_ARGUMENT;
  auto* a = static_cast<rm::NV_MEMORY_ALLOCATION_PARAMS*>(params);
  if (!a->size || (a->alignment & (a->alignment - 1))) return rm::NV_ERR_INVALID_ARGUMENT;
  bool vidmem = cls == rm::NV01_MEMORY_LOCAL_USER;
  uint32_t location = rm::NVOS32_ATTR_LOCATION.get(a->attr);
  if (vidmem != (location == rm::NVOS32_ATTR_LOCATION_VIDMEM)) return rm::NV_ERR_INVALID_ARGUMENT;
  uint64_t page = rm::NVOS32_ATTR_PAGE_SIZE.get(a->attr) == rm::NVOS32_ATTR_PAGE_SIZE_HUGE  ? 2u << 20
                  : rm::NVOS32_ATTR_PAGE_SIZE.get(a->attr) == rm::NVOS32_ATTR_PAGE_SIZE_BIG ? 64u << 10
                                                                                            : 4096;
  uint64_t size = (a->size + page - 1) / page * page;
  if (vidmem && !memory.reserve_vram(size)) return rm::NV_ERR_NO_MEMORY;
  auto m = std::make_shared<RmMemory>();
  m->pages = Pages::create(size, vidmem ? "ugpu-emu-nv-vidmem" : "ugpu-emu-nv-sysmem");
  if (!m->pages) {
    if (vidmem) memory.release_vram(size);
    return rm::NV_ERR_NO_MEMORY;
  }
  m->vidmem = vidmem, m->page_size = page;
  m->contiguous = rm::NVOS32_ATTR_PHYSICALITY.get(a->attr) == rm::NVOS32_ATTR_PHYSICALITY_CONTIGUOUS;
  a->size = size;
  a->limit = size - 1;
  Object o{Kind::Memory, cls, parent};
  o.memory = std::move(m);
  clients[client][handle] = std::move(o);
  clients[client][parent].children.push_back(handle);
  return rm::NV_OK;
}

uint32_t Card::alloc_channel(uint32_t client, uint32_t parent, uint32_t handle, uint32_t cls, void* params) {
  if (!params) return rm::NV_ERR_INVALID_ARGUMENT;
  ChannelSetup s;
  uint32_t st = rm::with_branch(*abi, [&](auto t) -> uint32_t {
    auto* a = static_cast<typename decltype(t)::ChannelAlloc*>(params);
    if (!a->gpFifoEntries || (a->gpFifoEntries & (a->gpFifoEntries - 1)) || a->gpFifoEntries < 2) return rm::NV_ERR_INVALID_ARGUMENT;
    Object* err = find(client, a->hObjectError);
    Object* userd = find(client, a->hUserdMemory[0]);
    Object* ctx = find(client, a->hContextShare);
    if (!err || err->kind != Kind::Memory || !userd || userd->kind != Kind::Memory) return rm::NV_ERR_INVALID_OBJECT_HANDLE;
    if (!ctx || ctx->kind != Kind::CtxShare) return rm::NV_ERR_INVALID_OBJECT_HANDLE;
    if (a->userdOffset[0] % rm::kUserdBytes || a->userdOffset[0] + rm::kUserdBytes > userd->memory->pages->size) return rm::NV_ERR_INVALID_OFFSET;
    if (a->gpFifoOffset % 8) return rm::NV_ERR_INVALID_OFFSET;
    s.gpfifo_va = a->gpFifoOffset;
    s.entries = a->gpFifoEntries;
    s.userd = userd->memory->pages->host + a->userdOffset[0];
    s.error_notifier = err->memory->pages->host;
    s.error_notifier_bytes = err->memory->pages->size;
    return rm::NV_OK;
  });
  if (st != rm::NV_OK) return st;
  s.token = next_token++;
  s.name = "channel " + std::to_string(s.token);
  std::memset(s.userd, 0, rm::kUserdBytes);
  auto ch = std::make_shared<Channel>(fifo, s);
  ch->set_enabled(false);  // until the TSG is scheduled
  Object o{Kind::Channel, cls, parent};
  o.channel = ch;
  clients[client][handle] = std::move(o);
  clients[client][parent].children.push_back(handle);
  channels[s.token] = ch;
  return rm::NV_OK;
}

uint32_t Card::control(rm::NVOS54_PARAMETERS& p) {
  std::lock_guard lock(mu);
  Object* o = find(p.hClient, p.hObject);
  if (!o) return clients.count(p.hClient) ? rm::NV_ERR_INVALID_OBJECT_HANDLE : rm::NV_ERR_INVALID_CLIENT;
  void* params = reinterpret_cast<void*>(p.params);
  auto sized = [&](size_t n) { return params && p.paramsSize == n; };
  auto on = [&](Kind k) { return o->kind == k; };
  switch (p.cmd) {
    case rm::NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION_V2: {
      if (!on(Kind::Client)) return rm::NV_ERR_INVALID_OBJECT_HANDLE;
      if (!sized(sizeof(rm::NV0000_CTRL_SYSTEM_GET_BUILD_VERSION_V2_PARAMS))) return rm::NV_ERR_INVALID_PARAM_STRUCT;
      auto* v = static_cast<rm::NV0000_CTRL_SYSTEM_GET_BUILD_VERSION_V2_PARAMS*>(params);
      std::memset(v, 0, sizeof *v);
      std::snprintf(v->driverVersionBuffer, sizeof v->driverVersionBuffer, "%s", cfg.driver_version.c_str());
      std::snprintf(v->versionBuffer, sizeof v->versionBuffer, "%s", cfg.driver_version.c_str());
      std::snprintf(v->driverBranch, sizeof v->driverBranch, "r%s_00", abi->name);
      std::snprintf(v->titleBuffer, sizeof v->titleBuffer, "ugpu emulated RM %s", cfg.driver_version.c_str());
      return rm::NV_OK;
    }
    case rm::NV0000_CTRL_CMD_GPU_GET_ID_INFO_V2: {
      if (!on(Kind::Client)) return rm::NV_ERR_INVALID_OBJECT_HANDLE;
      if (!sized(sizeof(rm::NV0000_CTRL_GPU_GET_ID_INFO_V2_PARAMS))) return rm::NV_ERR_INVALID_PARAM_STRUCT;
      auto* v = static_cast<rm::NV0000_CTRL_GPU_GET_ID_INFO_V2_PARAMS*>(params);
      if (v->gpuId != cfg.gpu_id) return rm::NV_ERR_INVALID_ARGUMENT;
      v->deviceInstance = 0, v->subDeviceInstance = 0, v->gpuInstance = 0, v->numaId = -1;
      return rm::NV_OK;
    }
    case rm::NV0080_CTRL_CMD_GPU_GET_CLASSLIST: {
      if (!on(Kind::Device)) return rm::NV_ERR_INVALID_OBJECT_HANDLE;
      if (!sized(sizeof(rm::NV0080_CTRL_GPU_GET_CLASSLIST_PARAMS))) return rm::NV_ERR_INVALID_PARAM_STRUCT;
      auto* v = static_cast<rm::NV0080_CTRL_GPU_GET_CLASSLIST_PARAMS*>(params);
      if (v->classList) {
        if (v->numClasses < std::size(kClassList)) return rm::NV_ERR_INVALID_LIMIT;
        std::memcpy(reinterpret_cast<void*>(v->classList), kClassList, sizeof kClassList);
      }
      v->numClasses = static_cast<uint32_t>(std::size(kClassList));
      return rm::NV_OK;
    }
    case rm::NV2080_CTRL_CMD_GPU_GET_GID_INFO: {
      if (!on(Kind::Subdevice)) return rm::NV_ERR_INVALID_OBJECT_HANDLE;
      if (!sized(sizeof(rm::NV2080_CTRL_GPU_GET_GID_INFO_PARAMS))) return rm::NV_ERR_INVALID_PARAM_STRUCT;
      auto* v = static_cast<rm::NV2080_CTRL_GPU_GET_GID_INFO_PARAMS*>(params);
      if (rm::NV2080_GPU_CMD_GPU_GET_GID_FLAGS_FORMAT.get(v->flags) != rm::NV2080_GPU_CMD_GPU_GET_GID_FLAGS_FORMAT_BINARY) {
        std::string text = "GPU-";
        for (int i = 0; i < 16; ++i) text += hex(uuid[i]).substr(2);
        v->length = static_cast<uint32_t>(text.size() + 1);
        std::memcpy(v->data, text.c_str(), text.size() + 1);
      } else {
        v->length = 16;
        std::memcpy(v->data, uuid, 16);
      }
      return rm::NV_OK;
    }
    case rm::NV2080_CTRL_CMD_GR_GET_INFO: {
      if (!on(Kind::Subdevice)) return rm::NV_ERR_INVALID_OBJECT_HANDLE;
      if (!sized(sizeof(rm::NV2080_CTRL_GR_GET_INFO_PARAMS))) return rm::NV_ERR_INVALID_PARAM_STRUCT;
      auto* v = static_cast<rm::NV2080_CTRL_GR_GET_INFO_PARAMS*>(params);
      auto* list = reinterpret_cast<rm::NV2080_CTRL_GR_INFO*>(v->grInfoList);
      if (!list && v->grInfoListSize) return rm::NV_ERR_INVALID_POINTER;
      for (uint32_t i = 0; i < v->grInfoListSize; ++i) {
        switch (list[i].index) {
          case rm::NV2080_CTRL_GR_INFO_INDEX_SM_VERSION: list[i].data = cfg.sm_version; break;
          case rm::NV2080_CTRL_GR_INFO_INDEX_MAX_WARPS_PER_SM: list[i].data = cfg.max_warps_per_sm; break;
          case rm::NV2080_CTRL_GR_INFO_INDEX_MAX_THREADS_PER_WARP: list[i].data = 32; break;
          case rm::NV2080_CTRL_GR_INFO_INDEX_LITTER_NUM_GPCS: list[i].data = cfg.gpcs; break;
          case rm::NV2080_CTRL_GR_INFO_INDEX_LITTER_NUM_TPC_PER_GPC: list[i].data = cfg.tpcs_per_gpc; break;
          case rm::NV2080_CTRL_GR_INFO_INDEX_LITTER_NUM_SM_PER_TPC: list[i].data = cfg.sms_per_tpc; break;
          default: return rm::NV_ERR_INVALID_ARGUMENT;
        }
      }
      return rm::NV_OK;
    }
    case rm::NV2080_CTRL_CMD_PERF_BOOST:
      if (!on(Kind::Subdevice)) return rm::NV_ERR_INVALID_OBJECT_HANDLE;
      return sized(sizeof(rm::NV2080_CTRL_PERF_BOOST_PARAMS)) ? rm::NV_OK : rm::NV_ERR_INVALID_PARAM_STRUCT;
    case rm::NVA06C_CTRL_CMD_GPFIFO_SCHEDULE: {
      if (!on(Kind::Tsg)) return rm::NV_ERR_INVALID_OBJECT_HANDLE;
      if (!sized(abi->sizeof_gpfifo_schedule)) return rm::NV_ERR_INVALID_PARAM_STRUCT;
      bool enable = static_cast<const uint8_t*>(params)[0];
      for (uint32_t child : o->children)
        if (Object* ch = find(p.hClient, child); ch && ch->kind == Kind::Channel) ch->channel->set_enabled(enable);
      return rm::NV_OK;
    }
    case rm::NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN: {
      if (!on(Kind::Channel)) return rm::NV_ERR_INVALID_OBJECT_HANDLE;
      if (!sized(sizeof(rm::NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN_PARAMS))) return rm::NV_ERR_INVALID_PARAM_STRUCT;
      static_cast<rm::NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN_PARAMS*>(params)->workSubmitToken = o->channel->setup().token;
      return rm::NV_OK;
    }
    case rm::NV83DE_CTRL_CMD_DEBUG_READ_MMU_FAULT_INFO: {
      if (!on(Kind::Debugger)) return rm::NV_ERR_INVALID_OBJECT_HANDLE;
      if (!sized(sizeof(rm::NV83DE_CTRL_DEBUG_READ_MMU_FAULT_INFO_PARAMS))) return rm::NV_ERR_INVALID_PARAM_STRUCT;
      auto* v = static_cast<rm::NV83DE_CTRL_DEBUG_READ_MMU_FAULT_INFO_PARAMS*>(params);
      std::memset(v, 0, sizeof *v);
      std::lock_guard l(log_mu);
      if (fault && fault->mmu) {
        v->count = 1;
        v->mmuFaultInfoList[0] = {fault->address, fault->type, fault->access};
      }
      return rm::NV_OK;
    }
    case rm::NV83DE_CTRL_CMD_DEBUG_READ_ALL_SM_ERROR_STATES: {
      if (!on(Kind::Debugger)) return rm::NV_ERR_INVALID_OBJECT_HANDLE;
      if (!sized(sizeof(rm::NV83DE_CTRL_DEBUG_READ_ALL_SM_ERROR_STATES_PARAMS))) return rm::NV_ERR_INVALID_PARAM_STRUCT;
      auto* v = static_cast<rm::NV83DE_CTRL_DEBUG_READ_ALL_SM_ERROR_STATES_PARAMS*>(params);
      std::lock_guard l(log_mu);
      v->mmuFault.valid = fault && fault->mmu;
      v->mmuFault.faultInfo = v->mmuFaultInfo = fault ? fault->type : 0;
      return rm::NV_OK;
    }
    default: return rm::NV_ERR_NOT_SUPPORTED;
  }
}

uint32_t Card::map_memory(rm::nv_ioctl_nvos33_parameters_with_fd& w) {
  auto& p = w.params;
  std::shared_ptr<RmFile> f = std::dynamic_pointer_cast<RmFile>(os->device_of(w.fd));
  if (!f) return rm::NV_ERR_INVALID_ARGUMENT;  // not an fd of this driver
  std::lock_guard lock(mu);
  Object* o = find(p.hClient, p.hMemory);
  if (!o) return rm::NV_ERR_INVALID_OBJECT_HANDLE;
  RmFile::Pending pend;
  if (o->kind == Kind::Usermode) {
    if (p.offset || p.length > sizeof usermode) return rm::NV_ERR_INVALID_LIMIT;
    pend.usermode = true;
    pend.length = p.length;
  } else if (o->kind == Kind::Memory) {
    if (o->memory->pages->memfd < 0) return rm::NV_ERR_INVALID_ARGUMENT;  // OS descriptors are the process's own pages
    if (p.offset % 4096 || p.offset > o->memory->pages->size || p.length > o->memory->pages->size - p.offset) return rm::NV_ERR_INVALID_LIMIT;
    // Vidmem goes through a /dev/nvidiaN fd (BAR1), sysmem through a /dev/nvidiactl fd.
    if (o->memory->vidmem == f->control()) return rm::NV_ERR_INVALID_ARGUMENT;
    pend.memory = o->memory;
    pend.offset = p.offset;
    pend.length = p.length;
  } else {
    return rm::NV_ERR_INVALID_OBJECT_HANDLE;
  }
  if (!f->control() && f->registered_ctl < 0) return rm::NV_ERR_INVALID_ARGUMENT;  // REGISTER_FD first
  std::lock_guard fl(f->mu);
  f->pending = pend;
  p.pLinearAddress = 0;
  return rm::NV_OK;
}

template <class Nvos46>
uint32_t Card::map_dma(Nvos46& p) {
  std::lock_guard lock(mu);
  Object* dma = find(p.hClient, p.hDma);
  Object* m = find(p.hClient, p.hMemory);
  if (!dma || dma->kind != Kind::Virtual || !m || m->kind != Kind::Memory) return rm::NV_ERR_INVALID_OBJECT_HANDLE;
  if (p.offset > m->memory->pages->size || p.length > m->memory->pages->size - p.offset || !p.length) return rm::NV_ERR_INVALID_LIMIT;
  if (!rm::NVOS46_FLAGS_DMA_OFFSET_FIXED.get(p.flags)) return rm::NV_ERR_NOT_SUPPORTED;  // the model only places fixed offsets
  if (p.dmaOffset % 4096) return rm::NV_ERR_INVALID_OFFSET;
  return rm::NV_OK;
}

uint32_t Card::os_descriptor(rm::nv_ioctl_nvos02_parameters_with_fd& w) {
  auto& p = w.params;
  if (p.hClass != rm::NV01_MEMORY_SYSTEM_OS_DESCRIPTOR) return rm::NV_ERR_INVALID_CLASS;
  if (!p.pMemory || p.pMemory % 4096 || (p.limit + 1) % 4096) return rm::NV_ERR_INVALID_ARGUMENT;
  std::lock_guard lock(mu);
  Object* parent = find(p.hRoot, p.hObjectParent);
  if (!parent || parent->kind != Kind::Device) return rm::NV_ERR_INVALID_OBJECT_PARENT;
  uint32_t handle = p.hObjectNew ? p.hObjectNew : next_handle++;
  if (find(p.hRoot, handle)) return rm::NV_ERR_INVALID_OBJECT_NEW;
  auto m = std::make_shared<RmMemory>();
  m->pages = Pages::borrow(reinterpret_cast<void*>(p.pMemory), p.limit + 1);
  Object o{Kind::Memory, p.hClass, p.hObjectParent};
  o.memory = std::move(m);
  clients[p.hRoot][handle] = std::move(o);
  parent->children.push_back(handle);
  p.hObjectNew = handle;
  return rm::NV_OK;
}

void Card::card_info(rm::nv_ioctl_card_info_t* cards, size_t n) {
  std::memset(cards, 0, n * sizeof *cards);
  cards[0].valid = 1;
  cards[0].pci_info = {};
  cards[0].pci_info.vendor_id = 0x10de;
  cards[0].pci_info.device_id = static_cast<uint16_t>(cfg.pci_device_id);
  cards[0].gpu_id = cfg.gpu_id;
  cards[0].fb_size = cfg.vram_bytes;
  cards[0].minor_number = 0;
  std::memcpy(cards[0].dev_name, "nvidia0", 8);
}

uint32_t Card::uvm(UvmFile& f, unsigned long nr, void* arg) {
  if (nr == rm::UVM_INITIALIZE) {
    auto* p = static_cast<rm::UVM_INITIALIZE_PARAMS*>(arg);
    if (f.initialized) return rm::NV_ERR_INVALID_STATE;
    f.initialized = true;
    return p->rmStatus = rm::NV_OK;
  }
  if (nr == rm::UVM_MM_INITIALIZE) {
    auto* p = static_cast<rm::UVM_MM_INITIALIZE_PARAMS*>(arg);
    auto first = std::dynamic_pointer_cast<UvmFile>(os->device_of(p->uvmFd));
    return p->rmStatus = first && first->initialized ? rm::NV_OK : rm::NV_ERR_INVALID_ARGUMENT;
  }
  if (!f.initialized) return rm::NV_ERR_ILLEGAL_ACTION;  // every other ioctl needs UVM_INITIALIZE first
  auto uuid_ok = [&](const rm::NvProcessorUuid& u) { return std::memcmp(u.uuid, uuid, 16) == 0; };
  std::lock_guard lock(mu);
  switch (nr) {
    case rm::UVM_REGISTER_GPU: {
      auto* p = static_cast<rm::UVM_REGISTER_GPU_PARAMS*>(arg);
      return p->rmStatus = uuid_ok(p->gpu_uuid) ? rm::NV_OK : rm::NV_ERR_INVALID_DEVICE;
    }
    case rm::UVM_REGISTER_GPU_VASPACE: {
      auto* p = static_cast<rm::UVM_REGISTER_GPU_VASPACE_PARAMS*>(arg);
      Object* va = find(p->hClient, p->hVaSpace);
      if (!uuid_ok(p->gpuUuid)) return p->rmStatus = rm::NV_ERR_INVALID_DEVICE;
      if (!va || va->kind != Kind::VaSpace) return p->rmStatus = rm::NV_ERR_OBJECT_NOT_FOUND;
      if (!(va->flags & rm::NV_VASPACE_ALLOCATION_FLAGS_IS_EXTERNALLY_OWNED)) return p->rmStatus = rm::NV_ERR_INVALID_ARGUMENT;
      return p->rmStatus = rm::NV_OK;
    }
    case rm::UVM_REGISTER_CHANNEL: {
      auto* p = static_cast<rm::UVM_REGISTER_CHANNEL_PARAMS*>(arg);
      Object* ch = find(p->hClient, p->hChannel);
      return p->rmStatus = ch && ch->kind == Kind::Channel ? rm::NV_OK : rm::NV_ERR_OBJECT_NOT_FOUND;
    }
    case rm::UVM_CREATE_EXTERNAL_RANGE: {
      auto* p = static_cast<rm::UVM_CREATE_EXTERNAL_RANGE_PARAMS*>(arg);
      if (p->base % 4096 || p->length % 4096 || !p->length) return p->rmStatus = rm::NV_ERR_INVALID_ADDRESS;
      return p->rmStatus = ranges.create(p->base, p->length) ? rm::NV_OK : rm::NV_ERR_UVM_ADDRESS_IN_USE;
    }
    case rm::UVM_MAP_EXTERNAL_ALLOCATION: {
      auto* p = static_cast<rm::UVM_MAP_EXTERNAL_ALLOCATION_PARAMS*>(arg);
      Object* m = find(p->hClient, p->hMemory);
      if (!m || m->kind != Kind::Memory) return p->rmStatus = rm::NV_ERR_OBJECT_NOT_FOUND;
      if (!p->gpuAttributesCount || p->gpuAttributesCount > rm::UVM_MAX_GPUS || !uuid_ok(p->perGpuAttributes[0].gpuUuid))
        return p->rmStatus = rm::NV_ERR_INVALID_ARGUMENT;
      if (!ranges.covers(p->base, p->length)) return p->rmStatus = rm::NV_ERR_INVALID_ADDRESS;
      return p->rmStatus = memory.map({p->base, p->length, p->offset, m->memory->pages}) ? rm::NV_OK : rm::NV_ERR_INVALID_ADDRESS;
    }
    case rm::UVM_FREE:
      return rm::with_branch(*abi, [&](auto t) {
        auto* p = static_cast<typename decltype(t)::UvmFree*>(arg);
        uint64_t length = ranges.remove(p->base);
        if (!length) return p->rmStatus = rm::NV_ERR_INVALID_ADDRESS;
        memory.unmap_range(p->base, length);  // every mapping inside goes with it
        return p->rmStatus = rm::NV_OK;
      });
    default: return rm::NV_ERR_NOT_SUPPORTED;  // peer access: one emulated GPU per process
  }
}

// --- the files --------------------------------------------------------------------------------------

int RmFile::ioctl(unsigned long request, void* arg) {
  if (_IOC_TYPE(request) != rm::NV_IOCTL_MAGIC) return -ENOTTY;
  const uint32_t nr = _IOC_NR(request), size = _IOC_SIZE(request);
  Card& c = *card_;
  auto exact = [&](size_t n) { return size == n && arg; };  // RM refuses a struct of another size (EINVAL)
  switch (nr) {
    case rm::NV_ESC_CARD_INFO:
      if (!control_ || !arg || size % sizeof(rm::nv_ioctl_card_info_t) || !size) return -EINVAL;
      c.card_info(static_cast<rm::nv_ioctl_card_info_t*>(arg), size / sizeof(rm::nv_ioctl_card_info_t));
      return 0;
    case rm::NV_ESC_REGISTER_FD: {
      if (control_ || !exact(sizeof(rm::nv_ioctl_register_fd_t))) return -EINVAL;
      int ctl = static_cast<rm::nv_ioctl_register_fd_t*>(arg)->ctl_fd;
      auto ctl_file = std::dynamic_pointer_cast<RmFile>(c.os->device_of(ctl));
      if (!ctl_file || !ctl_file->control()) return -EINVAL;
      registered_ctl = ctl;
      return 0;
    }
    case rm::NV_ESC_RM_ALLOC_MEMORY:  // NV_ACTUAL_DEVICE_ONLY
      if (control_ || !exact(sizeof(rm::nv_ioctl_nvos02_parameters_with_fd))) return -EINVAL;
      static_cast<rm::nv_ioctl_nvos02_parameters_with_fd*>(arg)->params.status =
          c.os_descriptor(*static_cast<rm::nv_ioctl_nvos02_parameters_with_fd*>(arg));
      return 0;
    default: break;
  }
  if (!control_) return -EINVAL;  // NV_CTL_DEVICE_ONLY: RM escapes go to /dev/nvidiactl
  switch (nr) {
    case rm::NV_ESC_RM_ALLOC: {
      if (!exact(sizeof(rm::NVOS21_PARAMETERS))) return -EINVAL;
      auto* p = static_cast<rm::NVOS21_PARAMETERS*>(arg);
      p->status = c.alloc(*p);
      return 0;
    }
    case rm::NV_ESC_RM_CONTROL: {
      if (!exact(sizeof(rm::NVOS54_PARAMETERS))) return -EINVAL;
      auto* p = static_cast<rm::NVOS54_PARAMETERS*>(arg);
      p->status = c.control(*p);
      return 0;
    }
    case rm::NV_ESC_RM_FREE: {
      if (!exact(sizeof(rm::NVOS00_PARAMETERS))) return -EINVAL;
      auto* p = static_cast<rm::NVOS00_PARAMETERS*>(arg);
      std::lock_guard lock(c.mu);
      auto cl = c.clients.find(p->hRoot);
      if (cl == c.clients.end()) return p->status = rm::NV_ERR_INVALID_CLIENT, 0;
      if (!cl->second.count(p->hObjectOld)) return p->status = rm::NV_ERR_INVALID_OBJECT_HANDLE, 0;
      if (p->hObjectOld == p->hRoot) {
        for (uint32_t child : std::vector<uint32_t>(cl->second[p->hRoot].children)) c.free_tree(cl->second, child);
        c.clients.erase(cl);
      } else {
        c.free_tree(cl->second, p->hObjectOld);
      }
      p->status = rm::NV_OK;
      return 0;
    }
    case rm::NV_ESC_RM_MAP_MEMORY: {
      if (!exact(sizeof(rm::nv_ioctl_nvos33_parameters_with_fd))) return -EINVAL;
      auto* p = static_cast<rm::nv_ioctl_nvos33_parameters_with_fd*>(arg);
      p->params.status = c.map_memory(*p);
      return 0;
    }
    case rm::NV_ESC_RM_UNMAP_MEMORY:
      if (!exact(sizeof(rm::NVOS34_PARAMETERS))) return -EINVAL;
      static_cast<rm::NVOS34_PARAMETERS*>(arg)->status = rm::NV_OK;
      return 0;
    case rm::NV_ESC_RM_MAP_MEMORY_DMA:
      return rm::with_branch(*c.abi, [&](auto t) {
        using P = typename decltype(t)::Nvos46;
        if (!exact(sizeof(P))) return -EINVAL;
        auto* p = static_cast<P*>(arg);
        p->status = c.map_dma(*p);
        return 0;
      });
    case rm::NV_ESC_RM_UNMAP_MEMORY_DMA:
      if (!exact(sizeof(rm::NVOS47_PARAMETERS))) return -EINVAL;
      static_cast<rm::NVOS47_PARAMETERS*>(arg)->status = rm::NV_OK;
      return 0;
    default: return -EINVAL;
  }
}

void* RmFile::map_pages(void* addr, uint64_t offset, size_t len, int prot, int flags) {
  std::lock_guard lock(mu);
  if (!pending || pending->usermode || offset) return nullptr;
  Pending p = *pending;
  pending.reset();
  if (len > p.length) return nullptr;
  void* r = ::mmap(addr, len, prot, MAP_SHARED | (flags & MAP_FIXED), p.memory->pages->memfd, static_cast<off_t>(p.offset));
  return r == MAP_FAILED ? nullptr : r;
}

void* RmFile::mmap(uint64_t offset, size_t len, int) {
  std::lock_guard lock(mu);
  if (!pending || !pending->usermode || offset || len > sizeof card_->usermode) return nullptr;
  pending.reset();
  return card_->usermode;
}

int UvmFile::ioctl(unsigned long request, void* arg) {
  if (!arg) return -EFAULT;
  // Where each ioctl's struct keeps rmStatus (UVM copies its own sizeof of the struct).
  size_t at = 0;
  switch (request) {
    case rm::UVM_INITIALIZE: at = offsetof(rm::UVM_INITIALIZE_PARAMS, rmStatus); break;
    case rm::UVM_MM_INITIALIZE: at = offsetof(rm::UVM_MM_INITIALIZE_PARAMS, rmStatus); break;
    case rm::UVM_REGISTER_GPU: at = offsetof(rm::UVM_REGISTER_GPU_PARAMS, rmStatus); break;
    case rm::UVM_REGISTER_GPU_VASPACE: at = offsetof(rm::UVM_REGISTER_GPU_VASPACE_PARAMS, rmStatus); break;
    case rm::UVM_REGISTER_CHANNEL: at = offsetof(rm::UVM_REGISTER_CHANNEL_PARAMS, rmStatus); break;
    case rm::UVM_CREATE_EXTERNAL_RANGE: at = offsetof(rm::UVM_CREATE_EXTERNAL_RANGE_PARAMS, rmStatus); break;
    case rm::UVM_MAP_EXTERNAL_ALLOCATION: at = offsetof(rm::UVM_MAP_EXTERNAL_ALLOCATION_PARAMS, rmStatus); break;
    case rm::UVM_ENABLE_PEER_ACCESS: at = offsetof(rm::UVM_ENABLE_PEER_ACCESS_PARAMS, rmStatus); break;
    case rm::UVM_FREE: at = rm::with_branch(*card_->abi, [](auto t) { return offsetof(typename decltype(t)::UvmFree, rmStatus); }); break;
    default: return -ENOTTY;  // an ioctl this model does not implement
  }
  uint32_t st = card_->uvm(*this, request, arg);
  std::memcpy(static_cast<uint8_t*>(arg) + at, &st, 4);
  return 0;
}

}  // namespace

std::shared_ptr<NvGpu> install_nv_gpu(VirtualOs& os, const NvGpuConfig& cfg) {
  auto card = std::make_shared<Card>(cfg);
  card->os = &os;
  unsigned major = static_cast<unsigned>(std::atoi(cfg.driver_version.c_str()));
  // An older driver than any branch ugpu knows is still modelled (with the oldest layouts), so the
  // driver's refusal of it can be tested.
  card->abi = rm::find_branch(major);
  if (!card->abi) card->abi = &rm::kAbiBranches[0];
  card->doorbell_thread = std::thread([c = card.get()] { c->doorbell_loop(); });
  os.add_device("/dev/nvidiactl", [card](int) { return std::make_shared<RmFile>(card, true); });
  os.add_device("/dev/nvidia0", [card](int) { return std::make_shared<RmFile>(card, false); });
  os.add_device("/dev/nvidia-uvm", [card](int) { return std::make_shared<UvmFile>(card); });
  os.add_file("/proc/driver/nvidia/version",
              "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  " + cfg.driver_version + "  (ugpu emulated)\n");
  return card;
}

}  // namespace ugpu::emu::nv
