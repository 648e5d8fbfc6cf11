// The ugpu command-line program.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "common/error.h"
#include "ir/symbolic.h"
#include "ir/text.h"
#include "ir/verify.h"
#include "tools/compile.h"
#include "tools/decode.h"
#include "tools/demo.h"

namespace {

constexpr const char* kUsage =
    "usage: ugpu <command> [options]\n"
    "\n"
    "commands:\n"
    "  devices                the devices this build knows: kind, arch, interface, memory\n"
    "  demo [--device D] [--trace out.json]\n"
    "                         run the built-in kernel suite on a device, every result checked against\n"
    "                         a host reference; --trace writes a Chrome-trace timeline (Perfetto)\n"
    "  run FILE.uop [--device D] [--var N=V] [--trace out.json]\n"
    "                         run one kernel with deterministic inputs; prints output checksums\n"
    "  simplify FILE|-        read a UOp graph in the text form, verify it, print it simplified\n"
    "  print FILE|-           read a UOp graph and print it back in canonical form\n"
    "  compile FILE|--kernel NAME [--target T] [--emit uops|llvm|asm|obj|info] [-o FILE]\n"
    "                         compile a kernel for x86, AMDGPU (gfx1100 ...) or NVIDIA (sm_90 ...);\n"
    "                         `ugpu compile --help` for the options\n"
    "  decode [--sdma | --regs] FILE|- | --kernel NAME [--device D]\n"
    "                         print PM4/SDMA command packets readably: a hex dump, or what the AMD\n"
    "                         driver submits for a built-in kernel (`ugpu decode --help`)\n"
    "  bringup [--device amd:pci|emu:amd:pci|amd:usb|emu:amd:usb] [--trace FILE] [--reset]\n"
    "                         boot an AMD GPU with no kernel driver step by step (IP discovery, PSP,\n"
    "                         SMU, GMC, IH, MEC, SDMA) with each step's time; --trace logs every register\n"
    "                         access (`ugpu decode --regs FILE`)\n"
    "  llm --info MODEL.gguf  what a GGUF model file holds: architecture, size, quantization, tokenizer,\n"
    "                         metadata, tensors\n"
    "  help                   this text\n"
    "\n"
    "The device can also be chosen with UGPU_DEVICE. The text form is described in docs/ir.md.\n";

int graph_command(const std::string& cmd, const std::vector<std::string>& args) {
  if (args.size() != 1) {
    std::fprintf(stderr, "ugpu %s: expected one FILE (or - for standard input)\n", cmd.c_str());
    return 2;
  }
  std::optional<ugpu::ir::UOp> parsed = ugpu::tools::read_graph(args[0], ugpu::tools::read_input(args[0]));
  if (!parsed) return 1;
  ugpu::ir::UOp u = *parsed;
  if (cmd == "simplify") {
    u = ugpu::ir::simplify(u);
    ugpu::ir::verify_or_throw(u);
  }
  std::fputs(ugpu::ir::print(u).c_str(), stdout);
  return 0;
}

int run_main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "help" || args[0] == "--help" || args[0] == "-h") {
    std::fputs(kUsage, args.empty() ? stderr : stdout);
    return args.empty() ? 2 : 0;
  }
  std::string cmd = args[0];
  args.erase(args.begin());
  try {
    if (cmd == "demo") {
      std::string device, trace;
      for (size_t i = 0; i < args.size(); ++i) {
        if (args[i] == "--device" && i + 1 < args.size()) device = args[++i];
        else if (args[i].rfind("--device=", 0) == 0) device = args[i].substr(9);
        else if (args[i] == "--trace" && i + 1 < args.size()) trace = args[++i];
        else {
          std::fprintf(stderr, "ugpu demo: unknown option '%s'\n%s", args[i].c_str(), kUsage);
          return 2;
        }
      }
      return ugpu::tools::demo(device, trace);
    }
    if (cmd == "devices") return ugpu::tools::devices_command(args);
    if (cmd == "decode") return ugpu::tools::decode_command(args);
    if (cmd == "bringup") return ugpu::tools::bringup_command(args);
    if (cmd == "run") return ugpu::tools::run_command(args);
    if (cmd == "simplify" || cmd == "print") return graph_command(cmd, args);
    if (cmd == "compile") return ugpu::tools::compile_command(args);
    if (cmd == "llm") return ugpu::tools::llm_command(args);
    std::fprintf(stderr, "ugpu: unknown command '%s'\n%s", cmd.c_str(), kUsage);
    return 2;
  } catch (const ugpu::Error& e) {
    std::fprintf(stderr, "ugpu %s: %s\n", cmd.c_str(), e.what());
    return 1;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "ugpu %s: out of memory\n", cmd.c_str());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ugpu %s: %s\n", cmd.c_str(), e.what());
    return 1;
  }
}

}  // namespace

// Every subcommand's output goes to stdout: a write that failed (a full disk, a closed pipe, /dev/full)
// is an error exit, not a silent loss.
int main(int argc, char** argv) {
  int rc = run_main(argc, argv);
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
    std::fprintf(stderr, "ugpu: writing the output failed: %s\n", std::strerror(errno));
    return 1;
  }
  return rc;
}
