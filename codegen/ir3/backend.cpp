// The ir3 backend (docs/qcom.md §Compiler): Adreno machine code from ugpu's own instruction selector,
// register allocator and legalizer — no Mesa, no vendor compiler. Its "source" is the listing of the
// final program (facts, then one line per instruction: index, the encoded word, the disassembly), so
// what the disk cache keys on is the machine code itself; compile() reads the words back into the
// binary (codegen/ir3/object.h).
#include "codegen/backend.h"

#include <cinttypes>
#include <cstdio>
#include <sstream>

#include "codegen/compiler.h"
#include "codegen/ir3/program.h"
#include "common/error.h"

namespace ugpu::codegen {
namespace {

class Ir3Backend final : public Backend {
 public:
  const char* name() const override { return "ir3"; }
  std::string render(const LoweredKernel& k, const Target& t) const override {
    ir3::VProgram p = ir3::select(k, t);
    std::vector<ir3::isa::Inst> code, listing;
    std::vector<int> labels;
    Ir3Object o = p.facts;
    o.full_regs = uint32_t(ir3::allocate(p, code, labels, k.name));
    o.branch_stack = uint32_t((std::min(p.max_depth, 64) + 1) / 2);
    o.code = ir3::legalize(std::move(code), labels, &listing);
    std::ostringstream s;
    s << "; ugpu ir3 for " << t.name << ": kernel " << k.name << "\n";
    s << "; facts " << o.full_regs << " " << o.threadsize << " " << o.branch_stack << " " << o.shared_bytes << " " << o.const_vec4 << " "
      << o.local_id_reg << " " << o.wg_id_reg << " " << o.kernarg_bytes << "\n";
    for (const Ir3Object::Arg& a : o.args) s << "; arg " << a.offset << " " << a.bytes << "\n";
    for (size_t i = 0; i < o.code.size(); ++i) {
      char b[48];
      std::snprintf(b, sizeof b, "%5zu  %016" PRIx64 "  ", i, o.code[i]);
      s << b << ir3::isa::format(listing[i]) << "\n";
    }
    return s.str();
  }
  std::string toolchain_key(const Target&, const CompileOptions&) const override { return "ugpu-ir3-1"; }
  Output compile(const std::string& source, const Target& t, const CompileOptions&) const override {
    Ir3Object o;
    std::istringstream in(source);
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("; facts ", 0) == 0) {
        std::istringstream f(line.substr(8));
        f >> o.full_regs >> o.threadsize >> o.branch_stack >> o.shared_bytes >> o.const_vec4 >> o.local_id_reg >> o.wg_id_reg >> o.kernarg_bytes;
      } else if (line.rfind("; arg ", 0) == 0) {
        Ir3Object::Arg a{};
        std::istringstream(line.substr(6)) >> a.offset >> a.bytes;
        o.args.push_back(a);
      } else if (!line.empty() && line[0] != ';') {
        size_t index;
        uint64_t word;
        if (std::sscanf(line.c_str(), "%zu %" SCNx64, &index, &word) != 2 || index != o.code.size())
          throw Error("ir3 listing for " + std::string(t.name) + ": cannot read line '" + line + "'");
        o.code.push_back(word);
      }
    }
    Output out;
    out.binary = write_ir3_object(o);
    read_ir3_object(out.binary);  // the same checks a driver makes
    return out;
  }
  std::string disassemble(const Target&, const std::vector<uint8_t>& binary, const std::string&) const override {
    Ir3Object o = read_ir3_object(binary);
    return "; " + describe(o) + "\n" + ir3::isa::disassemble(o.code);
  }
};

}  // namespace

const Backend& ir3_backend() {
  static const Ir3Backend b;
  return b;
}

}  // namespace ugpu::codegen
