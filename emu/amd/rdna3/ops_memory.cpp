// Vector memory: LDS (DS), GLOBAL, FLAT and SCRATCH loads, stores and atomics. Every lane's address
// is translated and checked — device memory through the dispatch's Memory, LDS against the
// workgroup's allocation, scratch against the lane's private segment — and a failed check is a fault
// naming the address and the kind of access.
#include <atomic>
#include <cmath>
#include <cstring>
#include <vector>

#include "emu/amd/rdna3/ops.h"
#include "emu/amd/rdna3/wave.h"

namespace ugpu::emu::amd {
namespace {

using enum Ty;
namespace fl = op_flag;

enum class Space { Global, Flat, Scratch, Lds };

// The host address of `bytes` at lane l's address for this instruction.
template <Space S>
uint8_t* lane_ptr(Wave& w, const Inst& in, int l, uint32_t bytes, Access acc, int32_t extra = 0) {
  if constexpr (S == Space::Lds) {
    const uint64_t off = uint64_t{w.v[in.addr][l]} + static_cast<uint32_t>(extra);
    if (off + bytes > w.wg->lds_bytes) throw WaveFault{Fault::Kind::Memory, "", off, acc, "LDS"};
    return w.wg->lds + off;
  } else if constexpr (S == Space::Scratch) {
    const uint64_t off = uint64_t{in.saddr != kNull ? w.s[in.saddr & 127] : 0u} + (in.sve ? w.v[in.addr][l] : 0u) + static_cast<int64_t>(in.imm);
    if (off + bytes > w.scratch_per_lane || static_cast<int64_t>(off) < 0) throw WaveFault{Fault::Kind::Memory, "", off, acc, "scratch"};
    return w.scratch + static_cast<size_t>(l) * w.scratch_per_lane + off;
  } else {
    uint64_t a =
        (S == Space::Global && in.saddr != kNull) ? w.sgpr64(in.saddr) + w.v[in.addr][l] : (uint64_t{w.v[in.addr + 1][l]} << 32 | w.v[in.addr][l]);
    return w.translate(a + static_cast<int64_t>(in.imm), bytes, acc, S == Space::Flat ? "flat" : "global");
  }
}

// The loaded bytes into the destination VGPRs of lane l: whole dwords, or a sub-dword value
// extended to 32 bits, or into one half (d16).
void put(Wave& w, const Inst& in, int l, const uint8_t* p) {
  const uint32_t n = in.op->mem_bytes;
  const uint16_t f = in.op->flags;
  if (n >= 4) {
    for (uint32_t i = 0; i < n / 4; ++i) std::memcpy(&w.v[(in.dst + i) & 255][l], p + 4 * i, 4);
    return;
  }
  uint32_t v = n == 1 ? p[0] : static_cast<uint32_t>(p[0] | p[1] << 8);
  if (f & fl::kSigned) v = n == 1 ? static_cast<uint32_t>(static_cast<int8_t>(v)) : static_cast<uint32_t>(static_cast<int16_t>(v));
  uint32_t& r = w.v[in.dst][l];
  if (f & fl::kD16) r = (r & 0xffff0000u) | (v & 0xffff);
  else if (f & fl::kD16Hi) r = (r & 0xffffu) | v << 16;
  else r = v;
}

void get(const Wave& w, const Inst& in, int l, uint8_t* p, uint16_t data) {
  const uint32_t n = in.op->mem_bytes;
  if (n >= 4) {
    for (uint32_t i = 0; i < n / 4; ++i) std::memcpy(p + 4 * i, &w.v[(data + i) & 255][l], 4);
    return;
  }
  uint32_t v = w.v[data][l];
  if (in.op->flags & fl::kD16Hi) v >>= 16;
  std::memcpy(p, &v, n);
}

template <Space S>
int32_t ds_offset(const Inst& in) {
  return S == Space::Lds ? (in.offset1 << 8 | in.imm) : 0;
}

template <Space S>
void load(Wave& w, const Inst& in) {
  const uint32_t exec = w.exec();
  for (int l = 0; l < kLanes; ++l)
    if (exec >> l & 1) put(w, in, l, lane_ptr<S>(w, in, l, in.op->mem_bytes, Access::Read, ds_offset<S>(in)));
}
template <Space S>
void store(Wave& w, const Inst& in) {
  const uint32_t exec = w.exec();
  for (int l = 0; l < kLanes; ++l)
    if (exec >> l & 1) get(w, in, l, lane_ptr<S>(w, in, l, in.op->mem_bytes, Access::Write, ds_offset<S>(in)), in.data0);
}

// DS two-address forms: offset0 and offset1 in units of the element size (x64 for stride64).
template <int Stride64>
void ds_load_2addr(Wave& w, const Inst& in) {
  const uint32_t n = in.op->mem_bytes / 2, unit = n * (Stride64 ? 64 : 1);
  const uint32_t exec = w.exec();
  for (int l = 0; l < kLanes; ++l) {
    if (!(exec >> l & 1)) continue;
    const uint8_t* a = lane_ptr<Space::Lds>(w, in, l, n, Access::Read, static_cast<int32_t>(in.imm * unit));
    const uint8_t* b = lane_ptr<Space::Lds>(w, in, l, n, Access::Read, static_cast<int32_t>(in.offset1 * unit));
    for (uint32_t i = 0; i < n / 4; ++i) std::memcpy(&w.v[(in.dst + i) & 255][l], a + 4 * i, 4);
    for (uint32_t i = 0; i < n / 4; ++i) std::memcpy(&w.v[(in.dst + n / 4 + i) & 255][l], b + 4 * i, 4);
  }
}
template <int Stride64>
void ds_store_2addr(Wave& w, const Inst& in) {
  const uint32_t n = in.op->mem_bytes / 2, unit = n * (Stride64 ? 64 : 1);
  const uint32_t exec = w.exec();
  for (int l = 0; l < kLanes; ++l) {
    if (!(exec >> l & 1)) continue;
    uint8_t* a = lane_ptr<Space::Lds>(w, in, l, n, Access::Write, static_cast<int32_t>(in.imm * unit));
    uint8_t* b = lane_ptr<Space::Lds>(w, in, l, n, Access::Write, static_cast<int32_t>(in.offset1 * unit));
    for (uint32_t i = 0; i < n / 4; ++i) std::memcpy(a + 4 * i, &w.v[(in.data0 + i) & 255][l], 4);
    for (uint32_t i = 0; i < n / 4; ++i) std::memcpy(b + 4 * i, &w.v[(in.data1 + i) & 255][l], 4);
  }
}

// Read-modify-write: F(old, src, cmp) -> new. Returns the old value to vdst when the op returns data.
template <Space S, class T, auto F>
void atomic(Wave& w, const Inst& in) {
  const uint32_t exec = w.exec();
  const bool ret = (in.op->flags & fl::kLoad) && (S == Space::Lds || in.glc);
  const int words = sizeof(T) / 4;
  // cmpswap: data holds {new, compare} for memory ops; DS keeps compare in data1.
  const uint16_t cmp_reg = S == Space::Lds ? in.data1 : static_cast<uint16_t>(in.data0 + words);
  for (int l = 0; l < kLanes; ++l) {
    if (!(exec >> l & 1)) continue;
    uint8_t* p = lane_ptr<S>(w, in, l, sizeof(T), Access::Atomic, ds_offset<S>(in));
    if (reinterpret_cast<uintptr_t>(p) % sizeof(T))
      throw WaveFault{Fault::Kind::Memory, "misaligned atomic", 0, Access::Atomic, S == Space::Lds ? "LDS" : "global"};
    T src = 0, cmp = 0;
    for (int i = 0; i < words; ++i) {
      src |= static_cast<T>(w.v[(in.data0 + i) & 255][l]) << (32 * i);
      cmp |= static_cast<T>(w.v[(cmp_reg + i) & 255][l]) << (32 * i);
    }
    std::atomic_ref<T> ref(*reinterpret_cast<T*>(p));
    T old = ref.load(std::memory_order_relaxed);
    while (!ref.compare_exchange_weak(old, F(old, src, cmp), std::memory_order_acq_rel)) {}
    if (ret)
      for (int i = 0; i < words; ++i) w.v[(in.dst + i) & 255][l] = static_cast<uint32_t>(old >> (32 * i));
  }
}

#define RMW(...)                                       \
  ([](auto old, auto src, auto cmp) -> decltype(old) { \
    (void)old, (void)src, (void)cmp;                   \
    return __VA_ARGS__;                                \
  })

OpDef mem(std::string_view name, Handler h, uint8_t bytes, uint16_t flags) { return OpDef{name, h, nullptr, None, {None, None, None}, flags, bytes}; }

float as_f(uint32_t x) { return std::bit_cast<float>(x); }
uint32_t as_u(float x) { return std::bit_cast<uint32_t>(x); }

// The loads and stores of one address space, under its prefix ("global_", "flat_", "scratch_", "ds_").
template <Space S>
void loads_and_stores(std::vector<OpDef>& v, const char* prefix) {
  std::string p = prefix;
  auto add = [&](const std::string& n, Handler h, uint8_t bytes, uint16_t flags) { v.push_back(mem(keep_name(p + n), h, bytes, flags)); };
  const bool ds = S == Space::Lds;
  const char* ld = ds ? "load_" : "load_";
  for (int bytes : {4, 8, 12, 16}) {
    add(std::string(ld) + "b" + std::to_string(bytes * 8), load<S>, static_cast<uint8_t>(bytes), fl::kLoad);
    add("store_b" + std::to_string(bytes * 8), store<S>, static_cast<uint8_t>(bytes), fl::kStore);
  }
  add("load_u8", load<S>, 1, fl::kLoad);
  add("load_i8", load<S>, 1, fl::kLoad | fl::kSigned);
  add("load_u16", load<S>, 2, fl::kLoad);
  add("load_i16", load<S>, 2, fl::kLoad | fl::kSigned);
  add(ds ? "load_u8_d16" : "load_d16_u8", load<S>, 1, fl::kLoad | fl::kD16);
  add(ds ? "load_i8_d16" : "load_d16_i8", load<S>, 1, fl::kLoad | fl::kD16 | fl::kSigned);
  add(ds ? "load_u16_d16" : "load_d16_b16", load<S>, 2, fl::kLoad | fl::kD16);
  add(ds ? "load_u8_d16_hi" : "load_d16_hi_u8", load<S>, 1, fl::kLoad | fl::kD16Hi);
  add(ds ? "load_i8_d16_hi" : "load_d16_hi_i8", load<S>, 1, fl::kLoad | fl::kD16Hi | fl::kSigned);
  add(ds ? "load_u16_d16_hi" : "load_d16_hi_b16", load<S>, 2, fl::kLoad | fl::kD16Hi);
  add("store_b8", store<S>, 1, fl::kStore);
  add("store_b16", store<S>, 2, fl::kStore);
  add(ds ? "store_b8_d16_hi" : "store_d16_hi_b8", store<S>, 1, fl::kStore | fl::kD16Hi);
  add(ds ? "store_b16_d16_hi" : "store_d16_hi_b16", store<S>, 2, fl::kStore | fl::kD16Hi);
}

template <Space S>
void atomics(std::vector<OpDef>& v, const char* prefix) {
  std::string p = prefix;
  const bool ds = S == Space::Lds;
  auto add = [&](const std::string& n, Handler h, uint8_t bytes, bool returns) {
    v.push_back(mem(keep_name(p + n), h, bytes, static_cast<uint16_t>(fl::kStore | (returns ? fl::kLoad : 0))));
  };
  // Memory atomics return data when GLC is set; DS has separate _rtn opcodes.
  auto both = [&](const std::string& n32, const std::string& n64, Handler h32, Handler h64) {
    if (ds) {
      add(n32, h32, 4, false), add(n32.substr(0, n32.rfind('_')) + "_rtn" + n32.substr(n32.rfind('_')), h32, 4, true);
      if (!n64.empty()) add(n64, h64, 8, false), add(n64.substr(0, n64.rfind('_')) + "_rtn" + n64.substr(n64.rfind('_')), h64, 8, true);
    } else {
      add((ds ? "" : "atomic_") + n32, h32, 4, true);
      if (!n64.empty()) add("atomic_" + n64, h64, 8, true);
    }
  };
  both("add_u32", "add_u64", atomic<S, uint32_t, RMW(old + src)>, atomic<S, uint64_t, RMW(old + src)>);
  both("sub_u32", "sub_u64", atomic<S, uint32_t, RMW(old - src)>, atomic<S, uint64_t, RMW(old - src)>);
  both("min_i32", "min_i64", atomic<S, uint32_t, RMW(static_cast<int32_t>(src) < static_cast<int32_t>(old) ? src : old)>,
       atomic<S, uint64_t, RMW(static_cast<int64_t>(src) < static_cast<int64_t>(old) ? src : old)>);
  both("max_i32", "max_i64", atomic<S, uint32_t, RMW(static_cast<int32_t>(src) > static_cast<int32_t>(old) ? src : old)>,
       atomic<S, uint64_t, RMW(static_cast<int64_t>(src) > static_cast<int64_t>(old) ? src : old)>);
  both("min_u32", "min_u64", atomic<S, uint32_t, RMW(src < old ? src : old)>, atomic<S, uint64_t, RMW(src < old ? src : old)>);
  both("max_u32", "max_u64", atomic<S, uint32_t, RMW(src > old ? src : old)>, atomic<S, uint64_t, RMW(src > old ? src : old)>);
  both("and_b32", "and_b64", atomic<S, uint32_t, RMW(old & src)>, atomic<S, uint64_t, RMW(old & src)>);
  both("or_b32", "or_b64", atomic<S, uint32_t, RMW(old | src)>, atomic<S, uint64_t, RMW(old | src)>);
  both("xor_b32", "xor_b64", atomic<S, uint32_t, RMW(old ^ src)>, atomic<S, uint64_t, RMW(old ^ src)>);
  both("inc_u32", "inc_u64", atomic<S, uint32_t, RMW(old >= src ? 0u : old + 1)>, atomic<S, uint64_t, RMW(old >= src ? uint64_t{0} : old + 1)>);
  both("dec_u32", "dec_u64", atomic<S, uint32_t, RMW(old == 0 || old > src ? src : old - 1)>,
       atomic<S, uint64_t, RMW(old == 0 || old > src ? src : old - 1)>);
  both("add_f32", "", atomic<S, uint32_t, RMW(as_u(as_f(old) + as_f(src)))>, nullptr);
  if (ds) {
    add("storexchg_rtn_b32", atomic<S, uint32_t, RMW(src)>, 4, true);
    add("storexchg_rtn_b64", atomic<S, uint64_t, RMW(src)>, 8, true);
    add("cmpstore_b32", atomic<S, uint32_t, RMW(old == cmp ? src : old)>, 4, false);
    add("cmpstore_rtn_b32", atomic<S, uint32_t, RMW(old == cmp ? src : old)>, 4, true);
    add("cmpstore_b64", atomic<S, uint64_t, RMW(old == cmp ? src : old)>, 8, false);
    add("cmpstore_rtn_b64", atomic<S, uint64_t, RMW(old == cmp ? src : old)>, 8, true);
  } else {
    add("atomic_swap_b32", atomic<S, uint32_t, RMW(src)>, 4, true);
    add("atomic_swap_b64", atomic<S, uint64_t, RMW(src)>, 8, true);
    add("atomic_cmpswap_b32", atomic<S, uint32_t, RMW(old == cmp ? src : old)>, 4, true);
    add("atomic_cmpswap_b64", atomic<S, uint64_t, RMW(old == cmp ? src : old)>, 8, true);
  }
}

// ds_bpermute_b32: each lane reads data0 of the lane its address (in bytes) names.
void ds_bpermute(Wave& w, const Inst& in) {
  uint32_t src[kLanes], out[kLanes];
  std::memcpy(src, w.v[in.data0], sizeof src);
  for (int l = 0; l < kLanes; ++l) out[l] = src[((w.v[in.addr][l] + static_cast<uint32_t>(in.offset1 << 8 | in.imm)) / 4) % kLanes];
  const uint32_t exec = w.exec();
  for (int l = 0; l < kLanes; ++l)
    if (exec >> l & 1) w.v[in.dst][l] = out[l];
}
// ds_permute_b32: each lane writes its data0 to the lane its address names.
void ds_permute(Wave& w, const Inst& in) {
  uint32_t out[kLanes] = {};
  const uint32_t exec = w.exec();
  for (int l = 0; l < kLanes; ++l)
    if (exec >> l & 1) out[((w.v[in.addr][l] + static_cast<uint32_t>(in.offset1 << 8 | in.imm)) / 4) % kLanes] = w.v[in.data0][l];
  for (int l = 0; l < kLanes; ++l)
    if (exec >> l & 1) w.v[in.dst][l] = out[l];
}

void ds_nop(Wave&, const Inst&) {}

std::vector<OpDef> build() {
  std::vector<OpDef> v;
  loads_and_stores<Space::Global>(v, "global_");
  loads_and_stores<Space::Flat>(v, "flat_");
  loads_and_stores<Space::Scratch>(v, "scratch_");
  loads_and_stores<Space::Lds>(v, "ds_");
  atomics<Space::Global>(v, "global_");
  atomics<Space::Flat>(v, "flat_");
  atomics<Space::Lds>(v, "ds_");
  v.push_back(mem("ds_load_2addr_b32", ds_load_2addr<0>, 8, fl::kLoad));
  v.push_back(mem("ds_load_2addr_b64", ds_load_2addr<0>, 16, fl::kLoad));
  v.push_back(mem("ds_load_2addr_stride64_b32", ds_load_2addr<1>, 8, fl::kLoad));
  v.push_back(mem("ds_load_2addr_stride64_b64", ds_load_2addr<1>, 16, fl::kLoad));
  v.push_back(mem("ds_store_2addr_b32", ds_store_2addr<0>, 8, fl::kStore));
  v.push_back(mem("ds_store_2addr_b64", ds_store_2addr<0>, 16, fl::kStore));
  v.push_back(mem("ds_store_2addr_stride64_b32", ds_store_2addr<1>, 8, fl::kStore));
  v.push_back(mem("ds_store_2addr_stride64_b64", ds_store_2addr<1>, 16, fl::kStore));
  v.push_back(mem("ds_bpermute_b32", ds_bpermute, 4, fl::kLoad));
  v.push_back(mem("ds_permute_b32", ds_permute, 4, fl::kLoad));
  v.push_back(mem("ds_nop", ds_nop, 0, 0));
  return v;
}

}  // namespace

std::span<const OpDef> memory_ops() {
  static const std::vector<OpDef> ops = build();
  return ops;
}

}  // namespace ugpu::emu::amd
