#include "emu/amd/am/discovery_image.h"

#include <cstring>

#include "hw/amd/discovery.h"

namespace ugpu::emu::amd {
namespace d = hw::amd::discovery;
using hw::amd::Ip;

namespace {
template <class T>
void put(std::vector<uint8_t>& b, size_t at, const T& v) {
  if (b.size() < at + sizeof v) b.resize(at + sizeof v);
  std::memcpy(b.data() + at, &v, sizeof v);
}
}  // namespace

std::vector<uint8_t> discovery_binary(const DiscoveryShape& s) {
  struct Block {
    uint16_t hw_id;
    uint8_t major, minor, rev;
    const std::array<uint32_t, hw::amd::kMaxSegments>* bases;
  };
  const auto& b = s.bases;
  const Block blocks[] = {
      {d::kGcHw, s.gc_major, s.gc_minor, s.gc_rev, &b[Ip::GC]},
      {d::kSdma0, 6, 0, 0, &b[Ip::GC]},
      {d::kSdma1, 6, 0, 0, &b[Ip::GC]},
      {d::kMp0, 13, 0, 0, &b[Ip::MP0]},
      {d::kMp1, 13, 0, 0, &b[Ip::MP1]},
      {d::kNbif, 4, 3, 0, &b[Ip::NBIO]},
      {d::kOsssys, 6, 0, 0, &b[Ip::OSSSYS]},
      {d::kMmhub, 3, 0, 0, &b[Ip::MMHUB]},
      {d::kHdp, 6, 0, 0, &b[Ip::HDP]},
  };
  std::vector<uint8_t> bin(sizeof(d::BinaryHeader), 0);
  // IP table: header, one die, its entries.
  const size_t ip_at = bin.size();
  d::IpDiscoveryHeader ih{};
  ih.signature = d::kIpDiscoverySignature, ih.version = s.wide_bases ? 4 : 3, ih.num_dies = 1, ih.flags = s.wide_bases ? 1 : 0;
  size_t at = ip_at + sizeof ih;
  ih.dies[0] = {0, uint16_t(at)};
  put(bin, at, d::DieHeader{0, uint16_t(std::size(blocks))});
  at += sizeof(d::DieHeader);
  for (const Block& k : blocks) {
    int n = 0;
    while (n < hw::amd::kMaxSegments && (n == 0 || (*k.bases)[n])) ++n;
    put(bin, at, d::IpEntry{k.hw_id, 0, uint8_t(n), k.major, k.minor, k.rev, 0});
    at += sizeof(d::IpEntry);
    for (int i = 0; i < n; ++i) {
      if (s.wide_bases) put(bin, at, uint64_t((*k.bases)[i])), at += 8;
      else put(bin, at, (*k.bases)[i]), at += 4;
    }
  }
  ih.size = uint16_t(at - ip_at);
  put(bin, ip_at, ih);
  // GC info v1.0.
  const size_t gc_at = at;
  d::GcInfoV1_0 gc{};
  gc.header = {d::kGcTableId, 1, 0, sizeof gc};
  gc.num_se = s.num_se, gc.num_sa_per_se = s.sa_per_se, gc.num_wgp0_per_sa = s.wgp_per_sa, gc.num_wgp1_per_sa = 0;
  gc.wave_size = 32, gc.max_waves_per_simd = 16, gc.max_scratch_slots_per_cu = 32, gc.lds_size = 64, gc.num_rb_per_se = 4;
  put(bin, gc_at, gc);
  at += sizeof gc;
  // An empty harvest table: nothing fused off.
  const size_t hv_at = at;
  d::HarvestTable hv{};
  hv.signature = d::kHarvestSignature, hv.version = 1;
  put(bin, hv_at, hv);
  at += sizeof hv;

  d::BinaryHeader bh{};
  bh.signature = d::kBinarySignature, bh.version_major = 1, bh.size = uint16_t(at);
  bh.tables[d::kIpDiscovery] = {uint16_t(ip_at), d::checksum(bin.data() + ip_at, ih.size), ih.size, 0};
  bh.tables[d::kGc] = {uint16_t(gc_at), d::checksum(bin.data() + gc_at, sizeof gc), sizeof gc, 0};
  bh.tables[d::kHarvest] = {uint16_t(hv_at), d::checksum(bin.data() + hv_at, sizeof hv), sizeof hv, 0};
  put(bin, 0, bh);
  size_t after = offsetof(d::BinaryHeader, checksum) + sizeof bh.checksum;
  bh.checksum = d::checksum(bin.data() + after, at - after);
  put(bin, 0, bh);
  return bin;
}

}  // namespace ugpu::emu::amd
