// The emulated GPU's channels: each GPFIFO channel runs on its own thread like a PBDMA plus the engine
// bound to it. A doorbell (the channel's work-submit token written to the usermode page) makes it
// fetch GPFIFO entries up to GPPut from USERD, read each entry's pushbuffer segment through the GPU's
// memory, decode the methods with the hw/nv tables and execute them: host semaphores (release with a
// timestamp, acquires that poll memory), compute launches (SEND_PCAS_A + SEND_SIGNALING_PCAS2_B → a
// QMD, decoded bit-exactly, run by the PTX executor, then its releases and its dependent QMD), and
// copy-engine transfers with their semaphores. Anything it cannot decode or does not model stops the
// channel with an error the driver sees through the channel's error notifier, as RM reports robust-
// channel errors.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "emu/gpu_memory.h"
#include "emu/nv/ptx/ptx.h"
#include "hw/nv/methods.h"

namespace ugpu::emu::nv {

// What the channels of one GPU share.
struct FifoContext {
  GpuMemory& memory;
  // The .global/.const data of the programs this GPU has run (PtxData), by program address: placed
  // in GPU memory the first time the program runs, kept while the same program text is there (as a
  // driver keeps a loaded module's data until it unloads it), replaced when another program takes
  // its address. Shared by the channels: a variable a kernel writes is seen by later launches.
  struct ModuleData {
    std::string text;  // the program it belongs to
    uint64_t va = 0, bytes = 0;
  };
  std::mutex data_mu;
  std::map<uint64_t, ModuleData> module_data;
  uint64_t next_data_va = 0;
  unsigned ptx_threads = 0;
  uint32_t param_base = 0x210;  // sm_90: kernel parameters start at c[0x0][0x210]
  // Error reports: an MMU fault (address, access) or another channel error, with a decoded message.
  std::function<void(const std::string& channel, uint64_t address, Access access, const std::string& message)> on_mmu_fault;
  std::function<void(const std::string& channel, const std::string& message)> on_channel_error;
  std::atomic<uint64_t> launches{0}, ptx_instructions{0}, methods{0}, copies{0}, copy_bytes{0}, gp_entries{0};
  explicit FifoContext(GpuMemory& m) : memory(m) {}
  ~FifoContext();  // unmaps the module data
  FifoContext(const FifoContext&) = delete;
  FifoContext& operator=(const FifoContext&) = delete;
  static uint64_t timestamp_ns();  // the GPU's globaltimer: nanoseconds
};

struct ChannelSetup {
  std::string name;        // "channel 2 (HOPPER_COMPUTE_A)" in messages
  uint32_t token = 0;      // work-submit token
  uint64_t gpfifo_va = 0;  // the GPFIFO ring, GPU address
  uint32_t entries = 0;
  uint8_t* userd = nullptr;           // USERD (host view of the RM memory holding it)
  uint8_t* error_notifier = nullptr;  // NvNotification slots (host view); null: none
  uint64_t error_notifier_bytes = 0;
};

class Channel {
 public:
  Channel(FifoContext& fifo, ChannelSetup s);
  ~Channel();  // stop()
  // Stops the channel (a running kernel is interrupted) and joins its thread: after it returns the
  // channel touches no memory, even while someone still holds the object (RM freeing the channel).
  void stop();
  Channel(const Channel&) = delete;
  Channel& operator=(const Channel&) = delete;

  // A class the RM allocated on this channel; SET_OBJECT accepts only these.
  void add_object(uint32_t cls);
  void kick();                     // the doorbell
  void set_enabled(bool enabled);  // GPFIFO_SCHEDULE: a disabled channel fetches nothing
  const ChannelSetup& setup() const { return s_; }
  bool faulted() const { return faulted_; }

 private:
  struct Subchannel {
    uint32_t cls = 0;
    hw::nv::Engine engine = hw::nv::Engine::Other;
  };
  void loop();
  bool run_entry(uint64_t raw, uint32_t index);
  bool method(const hw::nv::MethodWrite& w, uint64_t segment_va);
  bool host_method(const hw::nv::MethodWrite& w);
  bool compute_method(const hw::nv::MethodWrite& w);
  bool copy_method(const hw::nv::MethodWrite& w);
  bool semaphore(uint64_t address, uint64_t payload, uint32_t execute);
  bool launch(uint64_t qmd_address);
  bool run_qmd(uint64_t qmd_address, uint64_t& next);
  bool copy(uint64_t dst, uint64_t src, uint64_t bytes);
  bool write_mem(uint64_t address, const void* data, size_t bytes, const char* what);
  bool read_mem(uint64_t address, void* data, size_t bytes, const char* what);
  bool wait_until(const std::function<bool()>& ready);  // false if the channel is stopped meanwhile
  bool fault(const std::string& message);               // stops the channel
  bool mmu_fault(uint64_t address, Access access, const std::string& what);
  void notify_error(uint32_t rc_error);

  FifoContext& fifo_;
  ChannelSetup s_;
  std::vector<uint32_t> objects_;
  Subchannel sub_[hw::nv::kSubchannels];
  // Method state: host semaphore, compute and copy registers, by method address.
  std::map<uint32_t, uint32_t> host_, compute_, copy_;
  bool load_data(uint64_t program, std::string_view text, const PtxModule& module, uint64_t& address);
  struct Program {
    std::shared_ptr<const PtxModule> module;
    uint64_t data_address = 0;  // where its .global/.const data is (0: it has none)
  };
  std::map<uint64_t, Program> programs_;  // the instruction cache
  struct Location {                       // the method being executed, turned into text only for a message
    uint32_t entry = 0;
    uint64_t segment = 0;
    uint32_t dword = 0;
    uint64_t qmd = 0;
  } at_;
  std::string where() const;
  uint32_t gp_get_ = 0;
  std::atomic<bool> stop_{false}, enabled_{true}, faulted_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  uint64_t kicks_ = 0;
  std::mutex join_mu_;
  std::thread thread_;
};

}  // namespace ugpu::emu::nv
