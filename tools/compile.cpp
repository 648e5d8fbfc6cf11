// `ugpu compile`: a kernel through every codegen stage, printing the one asked for.
#include "tools/compile.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>

#include "codegen/builtin_kernels.h"
#include "codegen/compiler.h"
#include "codegen/occupancy.h"
#include "common/error.h"
#include "ir/text.h"
#include "ir/verify.h"
#include "tools/args.h"

namespace ugpu::tools {
namespace {

constexpr const char* kCompileUsage =
    "usage: ugpu compile (FILE.uop | - | --kernel NAME) [--target T] [--emit STAGE] [-o FILE] [--name N] [-O 0-3] [--no-cache]\n"
    "                    [--opt | --opts ACTIONS]\n"
    "  --target   x86 (default), gfx1100, gfx1201, gfx942, gfx950, sm_80, sm_89, sm_90, sm_100, sm_120\n"
    "  --emit     uops (the lowered instruction list), llvm (LLVM IR), asm (ISA from LLVM's disassembler;\n"
    "             PTX for NVIDIA), obj (the binary: ELF object, or cubin for NVIDIA), info (launch facts);\n"
    "             without --emit every text stage is printed\n"
    "  --kernel   a built-in kernel (codegen/builtin_kernels.cpp), in its first run's sizes; `--kernel list` lists them\n"
    "  --opt      shape the kernel's loops with the optimizer's heuristics for the target first (kernels whose\n"
    "             axes are already marked stay as written); the actions chosen are printed\n"
    "  --opts     apply these actions instead, e.g. \"UPCAST(1, 4) UNROLL(2, 4) LOCAL(0, 16)\": NAME(axis, amount)\n"
    "             with NAME one of LOCAL, UPCAST, UNROLL, GROUP, PADTO, SWAP, TILE, LANES, TC (SWAP's amount: the other\n"
    "             axis; TC(k, 0): reduce axis k on the target's tensor core, see docs/optimizer.md)\n";

std::string info(const codegen::CompiledKernel& ck) {
  const codegen::LoweredKernel& k = ck.kernel;
  std::ostringstream o;
  o << "kernel " << k.name << " for " << ck.target->name << " (" << ck.target->arch_name() << ")\n";
  o << "  optimizer actions: " << codegen::opt::opts_text(ck.opts) << "\n  arguments:";
  for (const codegen::Param& p : k.params)
    o << " " << p.name << ":" << p.dtype.name()
      << (p.kind == codegen::Param::Kind::Buffer ? (p.written ? (p.read ? " (in/out)" : " (out)") : " (in)") : "");
  o << "\n";
  if (ck.target->gpu()) {
    auto dims = [](const std::array<ir::UOp, 3>& d) {
      std::string s;
      for (const ir::UOp& u : d) s += (s.empty() ? "" : " x ") + ir::to_inline(u, 40);
      return s;
    };
    o << "  grid " << dims(k.global_size) << " workgroups of " << dims(k.local_size) << " work-items\n";
    o << "  workgroup memory " << k.shared_bytes << " B\n";
  }
  if (ck.amd) o << codegen::describe(*ck.amd);
  if (ck.cubin) o << codegen::describe(*ck.cubin);
  if (auto occ = codegen::occupancy(ck))
    o << "  occupancy (estimate): " << occ->resident << " of " << occ->most << " " << occ->unit << ", limited by " << occ->limit << "\n";
  if (!ck.note.empty()) o << "  note: " << ck.note << "\n";
  return o.str();
}

}  // namespace

std::string read_input(const std::string& path) {
  std::stringstream ss;
  if (path == "-") {
    ss << std::cin.rdbuf();
    return ss.str();
  }
  std::ifstream in(path);
  if (!in) throw Error("cannot open '" + path + "': " + std::strerror(errno));
  ss << in.rdbuf();
  return ss.str();
}

std::optional<ir::UOp> read_graph(const std::string& where, const std::string& text) {
  ir::SourceMap at;
  ir::UOp u;
  try {
    u = ir::parse(text, at);
  } catch (const ir::ParseError& e) {
    std::fprintf(stderr, "%s:%d:%d: %s\n", where.c_str(), e.line, e.col, e.detail.c_str());
    return std::nullopt;
  }
  ir::verify_or_throw(u, at, where);
  return u;
}

int compile_command(const std::vector<std::string>& args) {
  std::string file, kernel_name, target = "x86", emit, out_path, name;
  int opt = 2;
  bool cache = true;
  codegen::CompileOptions o;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&](const char* what) -> std::string {
      if (i + 1 >= args.size()) throw Error(std::string("ugpu compile: ") + what + " needs a value\n" + kCompileUsage);
      return args[++i];
    };
    if (a == "--target") target = value("--target");
    else if (a == "--emit") emit = value("--emit");
    else if (a == "-o") out_path = value("-o");
    else if (a == "--kernel") kernel_name = value("--kernel");
    else if (a == "--name") name = value("--name");
    else if (a == "-O") opt = static_cast<int>(parse_integer(value("-O"), "-O", 0, 3));
    else if (a.size() == 3 && a.rfind("-O", 0) == 0 && a[2] >= '0' && a[2] <= '3') opt = a[2] - '0';
    else if (a == "--no-cache") cache = false;
    else if (a == "--opt") o.heuristic = true;
    else if (a == "--opts") o.opts = codegen::opt::parse_opts(value("--opts"));
    else if (a == "-h" || a == "--help") {
      std::fputs(kCompileUsage, stdout);
      return 0;
    } else if (!a.empty() && a[0] == '-' && a != "-") {
      std::fprintf(stderr, "ugpu compile: unknown option '%s'\n%s", a.c_str(), kCompileUsage);
      return 2;
    } else if (file.empty()) file = a;
    else {
      std::fprintf(stderr, "ugpu compile: more than one input ('%s' and '%s')\n", file.c_str(), a.c_str());
      return 2;
    }
  }
  if (kernel_name == "list") {
    for (const codegen::BuiltinKernel& k : codegen::builtin_kernels()) std::printf("%-14s %s\n", k.name.c_str(), k.description.c_str());
    return 0;
  }
  if (file.empty() == kernel_name.empty()) {
    std::fprintf(stderr, "ugpu compile: give either a FILE or --kernel NAME\n%s", kCompileUsage);
    return 2;
  }
  static const char* stages[] = {"", "uops", "llvm", "asm", "obj", "info"};
  if (std::find(std::begin(stages), std::end(stages), emit) == std::end(stages)) {
    std::fprintf(stderr, "ugpu compile: --emit takes uops, llvm, asm, obj or info, not '%s'\n", emit.c_str());
    return 2;
  }
  if (opt < 0 || opt > 3) throw Error("-O takes 0, 1, 2 or 3");
  const codegen::Target& t = codegen::find_target(target);
  std::string text = kernel_name.empty() ? read_input(file) : codegen::builtin_kernel(kernel_name).source();
  std::string where = kernel_name.empty() ? file : "kernel " + kernel_name;
  std::optional<ir::UOp> parsed = read_graph(where, text);
  if (!parsed) return 1;
  ir::UOp kernel = *parsed;
  o.name = !name.empty() ? name : !kernel_name.empty() ? kernel_name : "kernel";
  o.opt_level = opt;
  o.cache = cache;
  auto ck = codegen::compile(kernel, t, o);
  if (o.heuristic || !o.opts.empty()) std::fprintf(stderr, "ugpu compile: optimizer actions: %s\n", codegen::opt::opts_text(ck->opts).c_str());

  std::string result;
  bool binary = emit == "obj";
  if (emit == "uops") result = codegen::format_linear(ck->kernel);
  else if (emit == "llvm") result = ck->source;
  else if (emit == "asm") result = codegen::disassembly(*ck);
  else if (emit == "info") result = info(*ck);
  else if (binary) {
    if (ck->binary.empty()) throw Error("no binary for " + std::string(t.name) + ": " + ck->note);
    result.assign(ck->binary.begin(), ck->binary.end());
  } else {
    result = "=== instruction list ===\n" + codegen::format_linear(ck->kernel) + "\n=== LLVM IR ===\n" + ck->source +
             "\n=== " + (t.arch == codegen::Arch::NVPTX ? "PTX" : "ISA") + " ===\n" +
             (ck->binary.empty() && t.arch != codegen::Arch::NVPTX ? "" : codegen::disassembly(*ck)) + "\n=== launch ===\n" + info(*ck);
  }
  if (out_path.empty()) {
    if (binary && isatty(STDOUT_FILENO)) throw Error("not writing a binary to the terminal: use -o FILE");
    std::fwrite(result.data(), 1, result.size(), stdout);
  } else {
    std::ofstream f(out_path, std::ios::binary);
    f << result;
    f.close();  // a write error may only show when the buffer is flushed
    if (!f) throw Error("cannot write '" + out_path + "': " + std::strerror(errno));
  }
  if (!ck->note.empty() && emit != "info" && !emit.empty()) std::fprintf(stderr, "ugpu compile: note: %s\n", ck->note.c_str());
  return 0;
}

}  // namespace ugpu::tools
