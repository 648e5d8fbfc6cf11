#include "drivers/amd/am/discovery.h"

#include <cstring>

#include "common/error.h"
#include "common/hex.h"

namespace ugpu::amd::am {
namespace d = hw::amd::discovery;
using hw::amd::Ip;

namespace {
struct Reader {
  std::span<const uint8_t> bin;
  template <class T>
  T at(size_t offset, const char* what) const {
    if (offset > bin.size() || sizeof(T) > bin.size() - offset)
      throw Error(std::string("IP discovery: the ") + what + " at byte " + hex(offset) + " runs past the " + std::to_string(bin.size()) +
                  "-byte table (a damaged table, or VRAM size misread)");
    T t;
    std::memcpy(&t, bin.data() + offset, sizeof t);
    return t;
  }
  void check_sum(size_t offset, size_t size, uint16_t expected, const char* what) const {
    if (offset > bin.size() || size > bin.size() - offset)
      throw Error(std::string("IP discovery: the ") + what + " (" + std::to_string(size) + " bytes at " + hex(offset) + ") runs past the table");
    uint16_t got = d::checksum(bin.data() + offset, size);
    if (got != expected)
      throw Error(std::string("IP discovery: the ") + what + " checksum is " + hex(got) + ", the table says " + hex(expected) + " (a damaged table)");
  }
};

// Which register table each discovered block feeds.
struct Feeds {
  uint16_t hw_id;
  Ip ip;
};
constexpr Feeds kFeeds[] = {{d::kGcHw, Ip::GC},       {d::kNbif, Ip::NBIO},   {d::kMp0, Ip::MP0}, {d::kMp1, Ip::MP1},
                            {d::kOsssys, Ip::OSSSYS}, {d::kMmhub, Ip::MMHUB}, {d::kHdp, Ip::HDP}};
}  // namespace

std::string IpVersion::str() const { return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(revision); }

const char* hw_id_name(uint16_t id) {
  switch (id) {
    case d::kMp1: return "MP1 (SMU)";
    case d::kGcHw: return "GC";
    case d::kMmhub: return "MMHUB";
    case d::kAthub: return "ATHUB";
    case d::kOsssys: return "OSSSYS (IH)";
    case d::kHdp: return "HDP";
    case d::kSdma0: return "SDMA0";
    case d::kSdma1: return "SDMA1";
    case d::kDf: return "DF";
    case d::kUmc: return "UMC";
    case d::kNbif: return "NBIF";
    case d::kMp0: return "MP0 (PSP)";
  }
  return nullptr;
}

IpVersion Discovery::version(uint16_t hw_id) const {
  auto it = blocks.find(hw_id);
  return it == blocks.end() ? IpVersion{} : it->second.version;
}

std::string Discovery::describe() const {
  std::string s;
  for (const auto& [id, b] : blocks) {
    const char* n = hw_id_name(id);
    s += "  " + (n ? std::string(n) : "hw id " + std::to_string(id)) + " " + b.version.str();
    if (b.instances > 1) s += " x" + std::to_string(b.instances);
    s += "\n";
  }
  for (auto [id, inst] : harvested) {
    const char* n = hw_id_name(id);
    s += "  harvested: " + (n ? std::string(n) : "hw id " + std::to_string(id)) + " instance " + std::to_string(inst) + "\n";
  }
  return s;
}

Discovery parse_discovery(std::span<const uint8_t> table) {
  Reader r{table};
  auto bh = r.at<d::BinaryHeader>(0, "binary header");
  if (bh.signature != d::kBinarySignature)
    throw Error("IP discovery: no table at the top of VRAM (signature " + hex(bh.signature) + ", expected " + hex(d::kBinarySignature) +
                "): the VRAM size register was misread, VRAM is not reachable through BAR0, or this is not a discovery-era AMD GPU");
  if (bh.size > table.size() || bh.size < sizeof bh)
    throw Error("IP discovery: the binary claims " + std::to_string(bh.size) + " bytes; " + std::to_string(table.size()) + " were read");
  r.bin = table.first(bh.size);
  size_t after = offsetof(d::BinaryHeader, checksum) + sizeof bh.checksum;
  r.check_sum(after, bh.size - after, bh.checksum, "binary");

  Discovery out;
  // The IP list.
  size_t ihdr_at = bh.tables[d::kIpDiscovery].offset;
  auto ih = r.at<d::IpDiscoveryHeader>(ihdr_at, "IP discovery header");
  if (ih.signature != d::kIpDiscoverySignature) throw Error("IP discovery: the IP table's signature is " + hex(ih.signature) + ", not 'IPDS'");
  r.check_sum(ihdr_at, ih.size, bh.tables[d::kIpDiscovery].checksum, "IP table");
  if (ih.num_dies < 1 || ih.num_dies > 16) throw Error("IP discovery: " + std::to_string(ih.num_dies) + " dies (1 to 16 expected)");
  bool wide = ih.version >= 4 && (ih.flags & 1);
  for (int die = 0; die < ih.num_dies; ++die) {
    size_t at = ih.dies[die].die_offset;
    auto dh = r.at<d::DieHeader>(at, "die header");
    if (dh.die_id != die) throw Error("IP discovery: die " + std::to_string(die) + " is numbered " + std::to_string(dh.die_id));
    at += sizeof dh;
    for (int i = 0; i < dh.num_ips; ++i) {
      auto e = r.at<d::IpEntry>(at, "IP entry");
      at += sizeof e;
      if (e.num_base_address > 16)
        throw Error("IP discovery: block hw id " + std::to_string(e.hw_id) + " lists " + std::to_string(e.num_base_address) + " base addresses");
      std::vector<uint32_t> bases;
      for (int k = 0; k < e.num_base_address; ++k) {
        // 64-bit entries keep the dword base in the low 30 bits; the rest is chip-specific.
        uint32_t v = wide ? uint32_t(r.at<uint64_t>(at, "base address")) & 0x3FFFFFFF : r.at<uint32_t>(at, "base address");
        at += wide ? 8 : 4;
        bases.push_back(v);
      }
      if (die != 0) continue;  // one-die parts only (gfx11, gfx12); the multi-die MI300 lists more
      auto [it, fresh] = out.blocks.try_emplace(e.hw_id);
      ++it->second.instances;
      if (e.instance == 0 || fresh) it->second.version = {e.major, e.minor, e.revision}, it->second.bases = std::move(bases);
    }
  }
  for (const Feeds& f : kFeeds) {
    auto it = out.blocks.find(f.hw_id);
    if (it == out.blocks.end())
      throw Error(std::string("IP discovery: the chip lists no ") + hw_id_name(f.hw_id) + " block; ugpu cannot program it without one");
    auto& dst = out.bases[f.ip];
    dst.fill(0);
    for (size_t k = 0; k < it->second.bases.size() && k < dst.size(); ++k) dst[k] = it->second.bases[k];
  }

  // The GC shape.
  size_t gc_at = bh.tables[d::kGc].offset;
  auto gh = r.at<d::GpuInfoHeader>(gc_at, "GC info header");
  if (gh.table_id != d::kGcTableId) throw Error("IP discovery: the GC table's id is " + hex(gh.table_id) + ", not 'GC'");
  r.check_sum(gc_at, gh.size, bh.tables[d::kGc].checksum, "GC table");
  if (gh.version_major == 1) {
    if (gh.size < sizeof(d::GcInfoV1_0)) throw Error("IP discovery: GC info v1 of " + std::to_string(gh.size) + " bytes is too short");
    auto g = r.at<d::GcInfoV1_0>(gc_at, "GC info");
    out.num_se = g.num_se, out.sa_per_se = g.num_sa_per_se, out.cu_per_sa = 2 * (g.num_wgp0_per_sa + g.num_wgp1_per_sa);
    out.wave_size = g.wave_size, out.lds_bytes = g.lds_size, out.scratch_slots = g.max_scratch_slots_per_cu;
  } else if (gh.version_major == 2) {
    if (gh.size < sizeof(d::GcInfoV2_1) - 7 * 4) throw Error("IP discovery: GC info v2 of " + std::to_string(gh.size) + " bytes is too short");
    auto g = r.at<d::GcInfoV2_1>(gc_at, "GC info");
    out.num_se = g.num_se, out.sa_per_se = g.num_sh_per_se, out.cu_per_sa = g.num_cu_per_sh;
    out.wave_size = g.wave_size, out.lds_bytes = g.lds_size, out.scratch_slots = g.max_scratch_slots_per_cu;
  } else {
    throw Error("IP discovery: GC info version " + std::to_string(gh.version_major) + "." + std::to_string(gh.version_minor) + " is unknown");
  }
  if (!out.cu_count()) throw Error("IP discovery: the GC table reports no compute units");

  // Fused-off blocks (optional table).
  if (size_t hv_at = bh.tables[d::kHarvest].offset) {
    auto hv = r.at<d::HarvestTable>(hv_at, "harvest table");
    if (hv.signature != d::kHarvestSignature) throw Error("IP discovery: the harvest table's signature is " + hex(hv.signature));
    r.check_sum(hv_at, sizeof hv, bh.tables[d::kHarvest].checksum, "harvest table");
    for (const auto& e : hv.list) {
      if (!e.hw_id) break;
      out.harvested.emplace_back(e.hw_id, e.instance);
    }
  }
  return out;
}

}  // namespace ugpu::amd::am
