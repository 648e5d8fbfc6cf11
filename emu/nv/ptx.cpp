#include "emu/nv/ptx.h"

#include "common/error.h"

namespace ugpu::emu::nv {

struct PtxModule {
  std::vector<PtxEntry> entries;
};

std::shared_ptr<const PtxModule> parse_ptx(std::string_view) { throw Error("PTX executor: not written yet"); }
const std::vector<PtxEntry>& entries(const PtxModule& m) { return m.entries; }
PtxRunResult run_ptx(const PtxLaunch&, const PtxRunOptions&) { throw Error("PTX executor: not written yet"); }

}  // namespace ugpu::emu::nv
