// ugpu decode: command packets in readable form, from the same hw/amd and hw/nv tables the drivers
// encode with and the emulators execute — a hex dump from a file, or what a driver submits for a kernel.
#include "tools/decode.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "codegen/builtin_kernels.h"
#include "codegen/target.h"
#include "common/error.h"
#include "drivers/amd/amd_device.h"
#include "drivers/devices.h"
#include "drivers/nv/nv_device.h"
#include "drivers/qcom/qcom_device.h"
#include "hw/amd/packets.h"
#include "hw/amd/reg_trace.h"
#include "hw/nv/methods.h"
#include "hw/nv/qmd_launch.h"
#include "hw/qcom/packets.h"
#include "ir/text.h"
#include "tools/args.h"
#include "tools/compile.h"
#include "tools/hex_words.h"

namespace ugpu::tools {
namespace {

constexpr const char* kDecodeUsage =
    "usage: ugpu decode [--sdma | --nv | --qcom | --qmd V | --regs] FILE|-\n"
    "       ugpu decode --kernel NAME [--device D]\n"
    "The first form reads dwords written in hex (0x optional; spaces, commas or newlines between them)\n"
    "and prints one line per PM4 packet (SDMA with --sdma; NVIDIA pushbuffer methods with --nv, taking\n"
    "ugpu's subchannels: compute on 1, copy on 4; Adreno CP type-4/type-7 packets with --qcom; the fields\n"
    "of a QMD of version V = 3, 4 or 5 with\n"
    "--qmd), stopping at the first it cannot decode and saying why; with --regs it reads a register log\n"
    "of `ugpu bringup --trace` and names every register read and written. The second runs a built-in kernel\n"
    "(`ugpu compile --help` lists them) once on a GPU device (default: emu:amd; emu:nv and nv for NVIDIA,\n"
    "emu:qcom and qcom for Adreno) and prints what the driver submitted: the commands of its launch (PM4,\n"
    "pushbuffer methods and the QMD, or CP packets) and those of a copy (SDMA, or copy-engine methods).\n";

int decode_kernel(const std::string& name, const std::string& device) {
  auto dev = drivers::open_device(device.empty() ? "emu:amd" : device);
  auto prog = drivers::load_kernel(*dev, ir::parse(codegen::builtin_kernel(name).source()), name);
  std::vector<hcq::Buffer> bufs;
  std::vector<hcq::Val> args;
  for (int i = 0; i < prog->buffers; ++i) bufs.push_back(dev->alloc(1 << 20)), args.push_back(bufs.back().va);
  for (int i = 0; i < prog->vars; ++i) args.push_back(uint64_t{1});
  uint64_t v = dev->next_timeline();
  auto q = dev->compute_queue();
  q->wait(dev->timeline(), v - 1).memory_barrier().exec(*prog, args).signal(dev->timeline(), v);
  q->submit();
  dev->synchronize();
  // NVIDIA's devices (nv, emu:nv) come with the Linux drivers: a build without them has no NV driver to ask.
  if constexpr (UGPU_LINUX_DRIVERS) {
    if (codegen::find_target(dev->target()).arch == codegen::Arch::IR3) {  // Adreno: one ring, CP packets
      std::vector<uint32_t> words = qcom::last_submission(*dev);
      std::printf("# %s on %s: the submission (CP packets, %zu dwords)\n", name.c_str(), dev->name().c_str(), words.size());
      std::fputs(hw::qcom::describe_stream(words).c_str(), stdout);
      return 0;
    }
    if (dev->target().rfind("sm_", 0) == 0) {
      nv::PushSnapshot push = nv::last_submission(*dev, false);
      std::printf("# %s on %s: the compute channel's pushbuffer (%zu dwords)\n", name.c_str(), dev->name().c_str(), push.words.size());
      std::fputs(hw::nv::describe_pushbuffer(push.words, hw::nv::kUgpuSubchannels).c_str(), stdout);
      const hw::nv::QmdLayout& layout = hw::nv::qmd_layout(push.qmd_major);
      for (const auto& qmd : push.qmds) std::printf("  %s\n", hw::nv::describe_qmd(layout, qmd).c_str());
      auto cq = dev->copy_queue();
      uint64_t w = dev->next_timeline();
      cq->wait(dev->timeline(), w - 1).copy(bufs[0].va, bufs.back().va + 4096, 4096).signal(dev->timeline(), w);
      cq->submit();
      dev->synchronize();
      nv::PushSnapshot copy = nv::last_submission(*dev, true);
      std::printf("\n# a 4 KiB copy on the copy channel (%zu dwords)\n", copy.words.size());
      std::fputs(hw::nv::describe_pushbuffer(copy.words, hw::nv::kUgpuSubchannels).c_str(), stdout);
      return 0;
    }
  }
  amd::RingSnapshot pm4 = amd::last_submission(*dev, false);
  std::printf("# %s on %s: the compute queue's submission (PM4, %zu dwords)\n", name.c_str(), dev->name().c_str(), pm4.words.size());
  std::fputs(hw::amd::describe_stream(hw::amd::Engine::Pm4, pm4.words).c_str(), stdout);
  auto cq = dev->copy_queue();
  uint64_t w = dev->next_timeline();
  cq->wait(dev->timeline(), w - 1).copy(bufs[0].va, bufs.back().va + 4096, 4096).signal(dev->timeline(), w);
  cq->submit();
  dev->synchronize();
  amd::RingSnapshot sdma = amd::last_submission(*dev, true);
  std::printf("\n# a 4 KiB copy on the SDMA queue (%zu dwords)\n", sdma.words.size());
  std::fputs(hw::amd::describe_stream(hw::amd::Engine::Sdma, sdma.words).c_str(), stdout);
  return 0;
}

}  // namespace

int decode_command(const std::vector<std::string>& args) {
  bool sdma = false, nvidia = false, qcom = false, regs = false;
  int qmd = 0;
  std::string file, kernel, device;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--sdma") sdma = true;
    else if (args[i] == "--nv") nvidia = true;
    else if (args[i] == "--qcom") qcom = true;
    else if (args[i] == "--regs") regs = true;
    else if (args[i] == "--qmd" && i + 1 < args.size()) qmd = static_cast<int>(parse_integer(args[++i], "--qmd (the QMD version)", 3, 5));
    else if (args[i] == "--kernel" && i + 1 < args.size()) kernel = args[++i];
    else if (args[i] == "--device" && i + 1 < args.size()) device = args[++i];
    else if (args[i] == "--help" || args[i] == "-h") return std::fputs(kDecodeUsage, stdout), 0;
    else if (file.empty() && (args[i] == "-" || args[i][0] != '-')) file = args[i];
    else return std::fprintf(stderr, "ugpu decode: unexpected '%s'\n%s", args[i].c_str(), kDecodeUsage), 2;
  }
  if (!kernel.empty()) return decode_kernel(kernel, device);
  if (file.empty()) return std::fputs(kDecodeUsage, stderr), 2;
  if (regs) {
    std::fputs(hw::amd::describe_reg_trace(hw::amd::parse_reg_trace(read_input(file))).c_str(), stdout);
    return 0;
  }
  std::vector<uint32_t> words = parse_hex_words(read_input(file), file);
  if (qmd) {
    const hw::nv::QmdLayout& layout = hw::nv::qmd_layout(static_cast<unsigned>(qmd));
    words.resize(std::max<size_t>(words.size(), layout.bytes / 4));
    std::printf("%s\n", hw::nv::describe_qmd(layout, words).c_str());
    hw::nv::decode_qmd(layout, words);  // throws, naming the field, for a QMD a GPU would not launch
    return 0;
  }
  if (qcom) return std::fputs(hw::qcom::describe_stream(words).c_str(), stdout), 0;  // throws, naming the dword, where it cannot decode
  if (nvidia) {
    std::string text = hw::nv::describe_pushbuffer(words, hw::nv::kUgpuSubchannels);
    std::fputs(text.c_str(), stdout);
    return text.find("  error: ") != std::string::npos ? 1 : 0;
  }
  std::string text = hw::amd::describe_stream(sdma ? hw::amd::Engine::Sdma : hw::amd::Engine::Pm4, words);
  std::fputs(text.c_str(), stdout);
  return text.find("  <") != std::string::npos ? 1 : 0;  // an undecodable packet is an error exit
}

}  // namespace ugpu::tools
