#include "codegen/llvm/llvm.h"

#include <llvm/ADT/SmallVector.h>
#include <llvm/AsmParser/Parser.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/MC/MCAsmBackend.h>
#include <llvm/MC/MCAsmInfo.h>
#include <llvm/MC/MCCodeEmitter.h>
#include <llvm/MC/MCContext.h>
#include <llvm/MC/MCDisassembler/MCDisassembler.h>
#include <llvm/MC/MCInst.h>
#include <llvm/MC/MCInstPrinter.h>
#include <llvm/MC/MCInstrInfo.h>
#include <llvm/MC/MCObjectFileInfo.h>
#include <llvm/MC/MCObjectWriter.h>
#include <llvm/MC/MCParser/MCAsmParser.h>
#include <llvm/MC/MCParser/MCTargetAsmParser.h>
#include <llvm/MC/MCRegisterInfo.h>
#include <llvm/MC/MCStreamer.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/MC/MCTargetOptions.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Object/ELFObjectFile.h>
#include <llvm/Object/ObjectFile.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Target/TargetOptions.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/Transforms/Utils/Cloning.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>

#include "common/error.h"

extern "C" {
#define UGPU_LLVM_TARGET(T)             \
  void LLVMInitialize##T##TargetInfo(); \
  void LLVMInitialize##T##Target();     \
  void LLVMInitialize##T##TargetMC();   \
  void LLVMInitialize##T##AsmPrinter();
UGPU_LLVM_TARGET(X86)
UGPU_LLVM_TARGET(AMDGPU)
UGPU_LLVM_TARGET(NVPTX)
#undef UGPU_LLVM_TARGET
void LLVMInitializeX86Disassembler();
void LLVMInitializeAMDGPUDisassembler();
void LLVMInitializeAMDGPUAsmParser();
}

namespace ugpu::codegen {
namespace {

void init_llvm() {
  static std::once_flag once;
  std::call_once(once, [] {
#define UGPU_LLVM_INIT(T)          \
  LLVMInitialize##T##TargetInfo(); \
  LLVMInitialize##T##Target();     \
  LLVMInitialize##T##TargetMC();   \
  LLVMInitialize##T##AsmPrinter();
    UGPU_LLVM_INIT(X86)
    UGPU_LLVM_INIT(AMDGPU)
    UGPU_LLVM_INIT(NVPTX)
#undef UGPU_LLVM_INIT
    LLVMInitializeX86Disassembler();
    LLVMInitializeAMDGPUDisassembler();
    LLVMInitializeAMDGPUAsmParser();
  });
}

// What LLVM calls each target: its triple, CPU (empty for x86: this host's) and feature string.
struct LlvmTarget {
  std::string_view name, triple, cpu, features;
};
constexpr LlvmTarget kLlvmTargets[] = {
    {"x86", "x86_64-unknown-linux-gnu", "", ""},
    {"gfx1100", "amdgcn-amd-amdhsa", "gfx1100", "+cumode"},
    {"gfx1201", "amdgcn-amd-amdhsa", "gfx1201", "+cumode"},
    {"gfx942", "amdgcn-amd-amdhsa", "gfx942", ""},
    {"gfx950", "amdgcn-amd-amdhsa", "gfx950", ""},
    {"sm_80", "nvptx64-nvidia-cuda", "sm_80", "+ptx78"},
    {"sm_89", "nvptx64-nvidia-cuda", "sm_89", "+ptx78"},
    {"sm_90", "nvptx64-nvidia-cuda", "sm_90", "+ptx78"},
    {"sm_100", "nvptx64-nvidia-cuda", "sm_100", "+ptx86"},
    {"sm_120", "nvptx64-nvidia-cuda", "sm_120", "+ptx87"},
};

const llvm::Target& lookup(const Target& t) {
  init_llvm();
  std::string err, triple = target_triple(t);
  const llvm::Target* lt = llvm::TargetRegistry::lookupTarget(llvm::Triple(triple), err);
  if (!lt) throw Error("LLVM has no backend for " + triple + ": " + err);
  return *lt;
}

std::unique_ptr<llvm::TargetMachine> make_machine(const Target& t, int opt_level) {
  const llvm::Target& lt = lookup(t);
  llvm::TargetOptions opts;
  llvm::CodeGenOptLevel ol = opt_level <= 0   ? llvm::CodeGenOptLevel::None
                             : opt_level == 1 ? llvm::CodeGenOptLevel::Less
                             : opt_level == 2 ? llvm::CodeGenOptLevel::Default
                                              : llvm::CodeGenOptLevel::Aggressive;
  std::unique_ptr<llvm::TargetMachine> tm(
      lt.createTargetMachine(llvm::Triple(target_triple(t)), target_cpu(t), target_features(t), opts, llvm::Reloc::PIC_, std::nullopt, ol));
  if (!tm) throw Error("LLVM could not create a target machine for " + std::string(t.name));
  return tm;
}

// The MC layer's descriptions of a target: registers, assembler syntax, subtarget, instructions.
struct McTarget {
  std::unique_ptr<llvm::MCRegisterInfo> mri;
  std::unique_ptr<llvm::MCAsmInfo> mai;
  std::unique_ptr<llvm::MCSubtargetInfo> sti;
  std::unique_ptr<llvm::MCInstrInfo> mii;
  McTarget(const llvm::Target& lt, const Target& t, const char* what) {
    llvm::Triple triple{target_triple(t)};
    mri.reset(lt.createMCRegInfo(triple));
    if (mri) mai.reset(lt.createMCAsmInfo(*mri, triple, llvm::MCTargetOptions()));
    sti.reset(lt.createMCSubtargetInfo(triple, target_cpu(t), target_features(t)));
    mii.reset(lt.createMCInstrInfo());
    if (!mri || !mai || !sti || !mii) throw Error("LLVM has no " + std::string(what) + " for " + std::string(t.name));
  }
};

std::string diag_text(const llvm::SMDiagnostic& d) {
  std::string s;
  llvm::raw_string_ostream os(s);
  d.print("ugpu", os, false);
  return s;
}

}  // namespace

std::string llvm_version() { return LLVM_VERSION_STRING; }

namespace {
const LlvmTarget& llvm_target(const Target& t) {
  for (const LlvmTarget& l : kLlvmTargets)
    if (l.name == t.name) return l;
  throw Error("the LLVM backend has no triple for target " + std::string(t.name));
}
}  // namespace

std::string target_triple(const Target& t) { return std::string(llvm_target(t).triple); }

std::string target_cpu(const Target& t) {
  if (!llvm_target(t).cpu.empty()) return std::string(llvm_target(t).cpu);
  return llvm::sys::getHostCPUName().str();
}

std::string target_features(const Target& t) {
  if (t.arch != Arch::X86) return std::string(llvm_target(t).features);
  static const std::string host = [] {
    std::vector<std::string> on;
    for (const auto& f : llvm::sys::getHostCPUFeatures()) on.push_back((f.second ? "+" : "-") + f.first().str());
    std::sort(on.begin(), on.end());
    std::string s;
    for (const std::string& f : on) s += (s.empty() ? "" : ",") + f;
    return s;
  }();
  return host;
}

LlvmOutput compile_llvm_ir(const std::string& ir, const Target& t, const LlvmOptions& o) {
  LlvmOutput out;
  auto since = [](std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  };
  auto t0 = std::chrono::steady_clock::now();
  // One target machine per thread, target and level, kept: LLVM builds a subtarget (instruction,
  // register and legalizer tables) the first time a machine compiles a function, which on AMDGPU
  // cost more than the rest of a small kernel's compile. A machine is used by one thread at a time.
  thread_local std::map<std::pair<const Target*, int>, std::unique_ptr<llvm::TargetMachine>> machines;
  std::unique_ptr<llvm::TargetMachine>& slot = machines[{&t, o.opt_level}];
  if (!slot) slot = make_machine(t, o.opt_level);
  llvm::TargetMachine* tm = slot.get();
  out.machine_ms = since(t0);
  t0 = std::chrono::steady_clock::now();
  llvm::LLVMContext ctx;
  llvm::SMDiagnostic diag;
  std::string layout = tm->createDataLayout().getStringRepresentation();
  auto mod = llvm::parseAssembly(llvm::MemoryBufferRef(ir, "kernel.ll"), diag, ctx, nullptr,
                                 [&](llvm::StringRef, llvm::StringRef) -> std::optional<std::string> { return layout; });
  if (!mod) throw Error("internal: the generated LLVM IR does not parse: " + diag_text(diag));
  {
    std::string msg;
    llvm::raw_string_ostream os(msg);
    if (llvm::verifyModule(*mod, &os)) throw Error("internal: the generated LLVM IR is invalid: " + msg);
  }
  out.parse_ms = since(t0);
  t0 = std::chrono::steady_clock::now();
  if (o.opt_level > 0) {
    llvm::LoopAnalysisManager lam;
    llvm::FunctionAnalysisManager fam;
    llvm::CGSCCAnalysisManager cgam;
    llvm::ModuleAnalysisManager mam;
    llvm::PipelineTuningOptions pto;
    // What each part of O2 buys, measured with bench-codegen (compile time) and bench-kernels (the
    // code): the loop and SLP vectorizers make the CPU's vector code (without the loop vectorizer a
    // 512x512 sgemm runs at half speed) and cost little on GPUs. LLVM's loop unroller adds 3 ms per
    // kernel on x86 and nothing there that the optimizer's UPCAST/UNROLL axes do not already do; on
    // GPUs it still saves instructions in reduce loops (softmax, sum on the emulators), so it stays.
    pto.LoopUnrolling = t.gpu();
    pto.LoopVectorization = true;
    pto.SLPVectorization = true;
    llvm::PassBuilder pb(tm, pto);
    pb.registerModuleAnalyses(mam);
    pb.registerCGSCCAnalyses(cgam);
    pb.registerFunctionAnalyses(fam);
    pb.registerLoopAnalyses(lam);
    pb.crossRegisterProxies(lam, fam, cgam, mam);
    llvm::OptimizationLevel level = o.opt_level == 1   ? llvm::OptimizationLevel::O1
                                    : o.opt_level == 2 ? llvm::OptimizationLevel::O2
                                                       : llvm::OptimizationLevel::O3;
    llvm::ModulePassManager mpm = pb.buildPerModuleDefaultPipeline(level);
    mpm.run(*mod, mam);
  }
  out.opt_ms = since(t0);
  t0 = std::chrono::steady_clock::now();
  auto emit = [&](llvm::Module& m, llvm::CodeGenFileType kind) {
    llvm::SmallVector<char, 0> buf;
    llvm::raw_svector_ostream os(buf);
    llvm::legacy::PassManager pm;
    if (tm->addPassesToEmitFile(pm, os, nullptr, kind)) throw Error("LLVM cannot emit this file type for " + std::string(t.name));
    pm.run(m);
    return std::string(buf.begin(), buf.end());
  };
  if (t.arch == Arch::NVPTX) {
    out.assembly = emit(*mod, llvm::CodeGenFileType::AssemblyFile);
    out.emit_ms = since(t0);
    return out;
  }
  if (o.want_assembly) {
    auto copy = llvm::CloneModule(*mod);
    out.assembly = emit(*copy, llvm::CodeGenFileType::AssemblyFile);
  }
  std::string obj = emit(*mod, llvm::CodeGenFileType::ObjectFile);
  out.object.assign(obj.begin(), obj.end());
  out.emit_ms = since(t0);
  return out;
}

std::string disassemble_object(const Target& t, std::span<const uint8_t> elf) {
  if (t.arch == Arch::NVPTX) throw Error("LLVM has no disassembler for NVIDIA SASS; the PTX is the readable form");
  const llvm::Target& lt = lookup(t);
  llvm::Triple triple{target_triple(t)};
  llvm::StringRef data(reinterpret_cast<const char*>(elf.data()), elf.size());
  auto obj = llvm::object::ObjectFile::createObjectFile(llvm::MemoryBufferRef(data, "kernel"));
  if (!obj) throw Error("cannot disassemble: not a valid object file: " + llvm::toString(obj.takeError()));
  McTarget m(lt, t, "disassembler");
  llvm::MCContext mc(triple, m.mai.get(), m.mri.get(), m.sti.get());
  std::unique_ptr<llvm::MCDisassembler> dis(lt.createMCDisassembler(*m.sti, mc));
  std::unique_ptr<llvm::MCInstPrinter> printer(lt.createMCInstPrinter(triple, m.mai->getAssemblerDialect(), *m.mai, *m.mii, *m.mri));
  if (!dis || !printer) throw Error("LLVM has no disassembler for " + std::string(t.name));
  std::string out;
  llvm::raw_string_ostream os(out);
  for (const llvm::object::SectionRef& sec : (*obj)->sections()) {
    if (!sec.isText() || sec.getSize() == 0) continue;
    auto name = sec.getName();
    auto contents = sec.getContents();
    if (!name || !contents) throw Error("cannot disassemble: a section of the object cannot be read");
    std::map<uint64_t, std::string> labels;
    for (const llvm::object::SymbolRef& sym : (*obj)->symbols()) {
      auto s = sym.getSection();
      auto n = sym.getName();
      auto a = sym.getValue();
      if (s && *s == sec && n && a && !n->empty()) labels[*a] = n->str();
      else {
        if (!s) llvm::consumeError(s.takeError());
        if (!n) llvm::consumeError(n.takeError());
        if (!a) llvm::consumeError(a.takeError());
      }
    }
    os << "; section " << *name << "\n";
    llvm::ArrayRef<uint8_t> bytes(reinterpret_cast<const uint8_t*>(contents->data()), contents->size());
    size_t step = t.arch == Arch::AMDGPU ? 4 : 1;
    for (uint64_t off = 0; off < bytes.size();) {
      if (auto it = labels.find(off); it != labels.end()) os << it->second << ":\n";
      llvm::MCInst inst;
      uint64_t size = 0;
      char addr[32];
      std::snprintf(addr, sizeof addr, "  %6llx:  ", static_cast<unsigned long long>(off));
      os << addr;
      if (dis->getInstruction(inst, size, bytes.slice(off), off, llvm::nulls()) == llvm::MCDisassembler::Success && size) {
        printer->printInst(&inst, off, "", *m.sti, os);
      } else {
        size = std::min<uint64_t>(step, bytes.size() - off);
        os << "\t<unknown>";
      }
      os << "\n";
      off += size;
    }
  }
  return out;
}

std::vector<uint8_t> assemble(const Target& t, const std::string& text) {
  if (t.arch != Arch::AMDGPU) throw Error("ugpu assembles only AMDGPU code (asked for " + std::string(t.name) + ")");
  const llvm::Target& lt = lookup(t);
  llvm::Triple triple{target_triple(t)};
  McTarget m(lt, t, "assembler");
  llvm::MCTargetOptions mcopts;
  llvm::MCRegisterInfo* mri = m.mri.get();
  llvm::MCAsmInfo* mai = m.mai.get();
  llvm::MCSubtargetInfo* sti = m.sti.get();
  llvm::MCInstrInfo* mii = m.mii.get();
  llvm::SourceMgr sm;
  std::string diagnostics;
  sm.setDiagHandler([](const llvm::SMDiagnostic& d, void* ctx) { *static_cast<std::string*>(ctx) += diag_text(d); }, &diagnostics);
  sm.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBufferCopy(text, "kernel.s"), llvm::SMLoc());
  llvm::MCContext ctx(triple, mai, mri, sti, &sm);
  std::unique_ptr<llvm::MCObjectFileInfo> mofi(lt.createMCObjectFileInfo(ctx, /*PIC=*/true));
  ctx.setObjectFileInfo(mofi.get());
  llvm::SmallVector<char, 0> out;
  llvm::raw_svector_ostream os(out);
  std::unique_ptr<llvm::MCAsmBackend> backend(lt.createMCAsmBackend(*sti, *mri, mcopts));
  std::unique_ptr<llvm::MCCodeEmitter> emitter(lt.createMCCodeEmitter(*mii, ctx));
  if (!backend || !emitter) throw Error("LLVM has no assembler for " + std::string(t.name));
  std::unique_ptr<llvm::MCObjectWriter> writer = backend->createObjectWriter(os);
  std::unique_ptr<llvm::MCStreamer> streamer(lt.createMCObjectStreamer(triple, ctx, std::move(backend), std::move(writer), std::move(emitter), *sti));
  std::unique_ptr<llvm::MCAsmParser> parser(llvm::createMCAsmParser(sm, ctx, *streamer, *mai));
  std::unique_ptr<llvm::MCTargetAsmParser> target_parser(lt.createMCAsmParser(*sti, *parser, *mii, mcopts));
  if (!target_parser) throw Error("LLVM has no assembly parser for " + std::string(t.name));
  parser->setTargetParser(*target_parser);
  if (parser->Run(false) || diagnostics.find("error") != std::string::npos)
    throw Error("cannot assemble for " + std::string(t.name) + ":\n" + diagnostics);
  return std::vector<uint8_t>(out.begin(), out.end());
}

}  // namespace ugpu::codegen
