// The vector-ALU machinery shared by every VOP1/VOP2/VOPC/VOP3/VOP3SD/VOPD op: sources fetched into
// lane arrays (inline constants, SGPRs and VGPRs alike, with abs/neg and denormal flushing), a lane
// function, then output modifiers and an EXEC-masked write. Internal to emu/amd.
#pragma once
#include <cmath>
#include <limits>

#include "emu/amd/rdna3/wave.h"

namespace ugpu::emu::amd {

inline uint64_t sign_bit(Ty t) { return uint64_t{1} << (bits(t) - 1); }

inline bool is_denorm_bits(uint64_t b, Ty t) {
  switch (t) {
    case Ty::F32: return (b & 0x7f800000u) == 0 && (b & 0x7fffffu);
    case Ty::F16: return (b & 0x7c00u) == 0 && (b & 0x3ffu);
    case Ty::F64: return (b & 0x7ff0000000000000ull) == 0 && (b & 0xfffffffffffffull);
    default: return false;
  }
}

inline bool flushes(const Wave& w, Ty t) { return t == Ty::F32 ? w.flush_f32 : (t == Ty::F16 || t == Ty::F64) && w.flush_f16_f64; }

// Source k of every lane as raw bits (16-bit sources in the low half), modifiers applied.
inline void fetch(const Wave& w, const Inst& in, int k, uint64_t* a) {
  const Ty t = in.op->src[k];
  if (in.src_kind[k] == Src::Vgpr) {
    const uint32_t* r = w.v[in.src_reg[k]];
    if (bits(t) == 64) {
      const uint32_t* r1 = w.v[in.src_reg[k] + 1];
      for (int l = 0; l < kLanes; ++l) a[l] = r[l] | uint64_t{r1[l]} << 32;
    } else if (bits(t) == 16) {
      const int sh = in.src_hi[k] ? 16 : 0;
      for (int l = 0; l < kLanes; ++l) a[l] = (r[l] >> sh) & 0xffff;
    } else {
      for (int l = 0; l < kLanes; ++l) a[l] = r[l];
    }
  } else if (t == Ty::Mask) {
    const uint32_t m = static_cast<uint32_t>(scalar_src(w, in, k));
    for (int l = 0; l < kLanes; ++l) a[l] = (m >> l) & 1;
    return;
  } else {
    const uint64_t v = scalar_src(w, in, k);
    for (int l = 0; l < kLanes; ++l) a[l] = v;
  }
  if (!is_float(t) && !(in.op->flags & op_flag::kBitMods)) return;
  if ((in.abs | in.neg) >> k & 1) {
    const uint64_t s = sign_bit(t), clear = (in.abs >> k & 1) ? ~s : ~uint64_t{0}, flip = (in.neg >> k & 1) ? s : 0;
    for (int l = 0; l < kLanes; ++l) a[l] = (a[l] & clear) ^ flip;
  }
  if (is_float(t) && flushes(w, t))
    for (int l = 0; l < kLanes; ++l)
      if (is_denorm_bits(a[l], t)) a[l] &= sign_bit(t);
}

inline uint64_t clamp_float(uint64_t b, Ty t) {
  // Clamp to [0, 1]; NaN becomes 0 (DX10 clamp, which LLVM's kernels enable).
  if (t == Ty::F32) {
    float f = f32(b);
    return bits_of(std::isnan(f) ? 0.0f : std::fmin(std::fmax(f, 0.0f), 1.0f));
  }
  if (t == Ty::F64) {
    double f = f64(b);
    return bits_of(std::isnan(f) ? 0.0 : std::fmin(std::fmax(f, 0.0), 1.0));
  }
  float f = f16(b);
  return bits_f16(std::isnan(f) ? 0.0f : std::fmin(std::fmax(f, 0.0f), 1.0f));
}

inline uint64_t output_modifier(uint64_t b, Ty t, int omod) {
  static constexpr double kScale[] = {1.0, 2.0, 4.0, 0.5};
  if (t == Ty::F32) return bits_of(static_cast<float>(f32(b) * kScale[omod]));
  if (t == Ty::F64) return bits_of(f64(b) * kScale[omod]);
  return bits_f16(f16(b) * static_cast<float>(kScale[omod]));
}

// Writes the lane results: a lane mask for compares and carries, else VGPRs under EXEC.
inline void commit(Wave& w, const Inst& in, const uint64_t* d, uint32_t mask_out) {
  const OpDef& op = *in.op;
  const uint32_t exec = w.exec();
  if (op.flags & op_flag::kCompare) {
    w.write_sgpr(in.sdst, mask_out & exec);
    return;
  }
  if (op.flags & op_flag::kCarryOut) w.write_sgpr(in.sdst, mask_out & exec);
  if (op.flags & op_flag::kScalarDst) {
    w.write_sgpr(in.dst, static_cast<uint32_t>(d[0]));
    return;
  }
  const Ty t = op.dst;
  uint64_t tmp[kLanes];
  if (is_float(t) && (in.omod || in.clamp || flushes(w, t))) {
    for (int l = 0; l < kLanes; ++l) {
      uint64_t b = in.omod ? output_modifier(d[l], t, in.omod) : d[l];
      if (in.clamp) b = clamp_float(b, t);
      if (flushes(w, t) && is_denorm_bits(b, t)) b &= sign_bit(t);
      tmp[l] = b;
    }
    d = tmp;
  }
  uint32_t* r = w.v[in.dst];
  if (bits(t) == 64) {
    uint32_t* r1 = w.v[in.dst + 1];
    if (exec == ~0u) {
      for (int l = 0; l < kLanes; ++l) r[l] = static_cast<uint32_t>(d[l]), r1[l] = static_cast<uint32_t>(d[l] >> 32);
    } else {
      for (int l = 0; l < kLanes; ++l)
        if (exec >> l & 1) r[l] = static_cast<uint32_t>(d[l]), r1[l] = static_cast<uint32_t>(d[l] >> 32);
    }
  } else if (bits(t) == 16) {
    const int sh = in.dst_hi ? 16 : 0;
    const uint32_t keep = in.dst_hi ? 0xffffu : 0xffff0000u;
    for (int l = 0; l < kLanes; ++l)
      if (exec >> l & 1) r[l] = (r[l] & keep) | static_cast<uint32_t>((d[l] & 0xffff) << sh);
  } else if (exec == ~0u) {
    for (int l = 0; l < kLanes; ++l) r[l] = static_cast<uint32_t>(d[l]);
  } else {
    for (int l = 0; l < kLanes; ++l)
      if (exec >> l & 1) r[l] = static_cast<uint32_t>(d[l]);
  }
}

// F(a, b, c, flag, inst) -> result bits; `flag` is the lane's carry / compare bit out (and its VCC
// bit in, for kVccIn ops).
template <auto F>
void valu_compute(Wave& w, const Inst& in, uint64_t* d, uint32_t& mask_out) {
  alignas(64) uint64_t a[kLanes], b[kLanes], c[kLanes];
  const OpDef& op = *in.op;
  uint64_t* srcs[3] = {a, b, c};
  for (int k = 0; k < 3; ++k) {
    if (op.src[k] != Ty::None) fetch(w, in, k, srcs[k]);
    else std::memset(srcs[k], 0, sizeof a);
  }
  uint32_t m = 0;
  const uint32_t vcc_in = (op.flags & op_flag::kVccIn) ? w.vcc() : 0;
  for (int l = 0; l < kLanes; ++l) {
    bool f = vcc_in >> l & 1;
    d[l] = F(a[l], b[l], c[l], f, in);
    m |= static_cast<uint32_t>(f) << l;
  }
  mask_out = m;
}

template <auto F>
void valu(Wave& w, const Inst& in) {
  alignas(64) uint64_t d[kLanes];
  uint32_t m = 0;
  valu_compute<F>(w, in, d, m);
  commit(w, in, d, m);
}

}  // namespace ugpu::emu::amd
