// The PTX executor's memory and warp-level instructions: ld/st/atom/red in every state space
// (global through the emulated GPU's address space, shared per block, local per thread, parameters
// from constant bank 0, generic addresses decoded by window), cvta, shfl, vote, redux, activemask, mma.
#include <atomic>
#include <bit>
#include <chrono>
#include <cstring>

#include "common/hex.h"
#include "emu/nv/ptx/ptx_exec.h"
#include "emu/nv/ptx/ptx_float.h"

namespace ugpu::emu::nv::detail {
namespace {

// Generic addresses in [window, window + kWindow) are shared (or local) memory.
constexpr uint64_t kWindow = uint64_t{1} << 32;

uint8_t* global_ptr(Warp& w, const Inst& in, int lane, uint64_t addr, unsigned bytes, Access acc, Space reported) {
  Block& b = *w.block;
  if (addr & (bytes - 1)) memory_fault(w, in, lane, addr, bytes, acc, reported, "misaligned address");
  const bool write = acc != Access::Read;
  for (unsigned i = 0; i < b.span_count; ++i) {
    const SpanCache& c = b.spans[i];
    if (addr >= c.lo && addr < c.hi && bytes <= c.hi - addr && (!write || c.writable)) return c.host + (addr - c.lo);
  }
  Memory& mem = *b.run->launch->memory;
  std::optional<Memory::Span> s = mem.translate(addr, bytes, acc);
  if (!s) {
    const bool readable = write && mem.translate(addr, bytes, Access::Read).has_value();
    memory_fault(w, in, lane, addr, bytes, acc, reported, readable ? "read-only" : "not mapped");
  }
  SpanCache& c = b.spans[b.span_count < b.spans.size() ? b.span_count++ : (b.span_next++ % b.spans.size())];
  c = SpanCache{s->device, s->device + s->size, s->host, s->writable};
  return s->host + (addr - s->device);
}

uint8_t* shared_ptr(Warp& w, const Inst& in, int lane, uint64_t off, unsigned bytes, Access acc) {
  Block& b = *w.block;
  if (off & (bytes - 1)) memory_fault(w, in, lane, off, bytes, acc, Space::Shared, "misaligned address");
  if (off >= b.shared.size() || bytes > b.shared.size() - off)
    memory_fault(w, in, lane, off, bytes, acc, Space::Shared,
                 "past the end of the block's " + std::to_string(b.shared.size()) + "-byte shared memory");
  return b.shared.data() + off;
}

uint8_t* local_ptr(Warp& w, const Inst& in, int lane, uint64_t off, unsigned bytes, Access acc) {
  Block& b = *w.block;
  if (off & (bytes - 1)) memory_fault(w, in, lane, off, bytes, acc, Space::Local, "misaligned address");
  if (off >= b.local_bytes || bytes > b.local_bytes - off)
    memory_fault(w, in, lane, off, bytes, acc, Space::Local, "past the end of the thread's " + std::to_string(b.local_bytes) + "-byte local memory");
  return b.local.data() + (static_cast<size_t>(w.index) * 32 + static_cast<size_t>(lane)) * b.local_bytes + off;
}

// Parameters: offset `off` of the parameter space is byte param_base + off of constant bank 0.
// Faults give the bank's GPU address of the access.
uint8_t* param_ptr(Warp& w, const Inst& in, int lane, uint64_t off, unsigned bytes) {
  const PtxLaunch& L = *w.block->run->launch;
  const uint64_t at = L.param_base + off, va = L.cbank0_address + at;
  if (off & (bytes - 1)) memory_fault(w, in, lane, va, bytes, Access::Read, Space::Param, "misaligned address");
  if (off >= L.cbank0_size || at >= L.cbank0_size || bytes > L.cbank0_size - at)
    memory_fault(w, in, lane, va, bytes, Access::Read, Space::Param,
                 "parameter offset " + hex(off) + " is past the end of the " + std::to_string(L.cbank0_size) + "-byte constant bank 0 at " +
                     hex(L.cbank0_address) + ", whose parameters start at " + hex(L.param_base));
  return global_ptr(w, in, lane, va, bytes, Access::Read, Space::Param);
}

template <Space S>
uint8_t* resolve(Warp& w, const Inst& in, int lane, uint64_t addr, unsigned bytes, Access acc) {
  if constexpr (S == Space::Global || S == Space::Const) {  // .const: the module's .const variables (PtxData), read-only
    return global_ptr(w, in, lane, addr, bytes, acc, S);
  } else if constexpr (S == Space::Shared) {
    return shared_ptr(w, in, lane, addr, bytes, acc);
  } else if constexpr (S == Space::Local) {
    return local_ptr(w, in, lane, addr, bytes, acc);
  } else if constexpr (S == Space::Param) {
    return param_ptr(w, in, lane, addr, bytes);
  } else {
    const PtxLaunch& L = *w.block->run->launch;
    if (addr - L.shared_window < kWindow) return shared_ptr(w, in, lane, addr - L.shared_window, bytes, acc);
    if (addr - L.local_window < kWindow) return local_ptr(w, in, lane, addr - L.local_window, bytes, acc);
    return global_ptr(w, in, lane, addr, bytes, acc, Space::Global);
  }
}

inline uint64_t address(const Inst& in, const uint64_t* base, int lane) {
  if (!base) return static_cast<uint64_t>(in.offset);
  uint64_t a = base[lane];
  if (in.addr_bits < 64) a &= (uint64_t{1} << in.addr_bits) - 1;
  return a + static_cast<uint64_t>(in.offset);
}

template <unsigned Size, bool Signed>
uint64_t load_value(const uint8_t* p) {
  if constexpr (Size == 1) {
    uint8_t v = *p;
    return Signed ? static_cast<uint64_t>(static_cast<int64_t>(static_cast<int8_t>(v))) : v;
  } else if constexpr (Size == 2) {
    uint16_t v;
    std::memcpy(&v, p, 2);
    return Signed ? static_cast<uint64_t>(static_cast<int64_t>(static_cast<int16_t>(v))) : v;
  } else if constexpr (Size == 4) {
    uint32_t v;
    std::memcpy(&v, p, 4);
    return Signed ? static_cast<uint64_t>(static_cast<int64_t>(static_cast<int32_t>(v))) : v;
  } else {
    uint64_t v;
    std::memcpy(&v, p, 8);
    return v;
  }
}

// The warp's addresses, and whether they all lie, aligned, in one cached global mapping: then the
// lanes go straight to host memory (the common case), else each lane is checked on its own.
template <Space S>
const SpanCache* fast_span(Warp& w, const Inst& in, uint32_t m, const uint64_t* base, uint64_t* addr, unsigned bytes, bool write) {
  uint64_t lo = ~uint64_t{0}, hi = 0, bits = 0;
  const uint64_t amask = in.addr_bits < 64 ? (uint64_t{1} << in.addr_bits) - 1 : ~uint64_t{0}, off = static_cast<uint64_t>(in.offset);
  if (m == 0xffffffffu && base) {
    for (int l = 0; l < 32; ++l) addr[l] = (base[l] & amask) + off;
    for (int l = 0; l < 32; ++l) lo = std::min(lo, addr[l]), hi = std::max(hi, addr[l]), bits |= addr[l];
  } else {
    for_lanes(m, [&](int l) {
      const uint64_t a = base ? (base[l] & amask) + off : off;
      addr[l] = a;
      lo = std::min(lo, a), hi = std::max(hi, a), bits |= a;
    });
  }
  if constexpr (S != Space::Global && S != Space::Generic && S != Space::Const) return nullptr;
  if (bits & (bytes - 1)) return nullptr;
  if constexpr (S == Space::Generic) {
    const PtxLaunch& L = *w.block->run->launch;
    for (uint64_t win : {L.shared_window, L.local_window})
      if (hi >= win && lo < win + kWindow) return nullptr;
  }
  Block& b = *w.block;
  for (unsigned i = 0; i < b.span_count; ++i) {
    const SpanCache& c = b.spans[i];
    if (lo >= c.lo && hi < c.hi && bytes <= c.hi - hi && (!write || c.writable)) return &c;
  }
  return nullptr;
}

template <Space S, unsigned Size, bool Signed>
void ld(Warp& w, const Inst& in, uint32_t m) {
  const uint64_t* base = in.base != kNone ? slot(w, in.base) : nullptr;
  const unsigned total = Size * in.vec;
  uint64_t addr[32];
  const SpanCache* span = fast_span<S>(w, in, m, base, addr, total, false);
  if (in.vec == 1) {
    uint64_t* d = slot(w, in.d[0]);
    if (span) for_lanes(m, [&](int l) { d[l] = load_value<Size, Signed>(span->host + (addr[l] - span->lo)); });
    else for_lanes(m, [&](int l) { d[l] = load_value<Size, Signed>(resolve<S>(w, in, l, addr[l], Size, Access::Read)); });
    return;
  }
  for_lanes(m, [&](int l) {
    const uint8_t* p = span ? span->host + (addr[l] - span->lo) : resolve<S>(w, in, l, addr[l], total, Access::Read);
    for (unsigned i = 0; i < in.vec; ++i) slot(w, in.d[i])[l] = load_value<Size, Signed>(p + i * Size);
  });
}

template <Space S, unsigned Size>
void st(Warp& w, const Inst& in, uint32_t m) {
  const uint64_t* base = in.base != kNone ? slot(w, in.base) : nullptr;
  const unsigned total = Size * in.vec;
  uint64_t addr[32];
  const SpanCache* span = fast_span<S>(w, in, m, base, addr, total, true);
  for_lanes(m, [&](int l) {
    uint8_t* p = span ? span->host + (addr[l] - span->lo) : resolve<S>(w, in, l, addr[l], total, Access::Write);
    for (unsigned i = 0; i < in.vec; ++i) {
      uint64_t v = slot(w, in.s[i])[l];
      std::memcpy(p + i * Size, &v, Size);  // little-endian: the low bytes
    }
  });
}

template <Space S>
ExecFn pick_ld(unsigned size, bool sign) {
  switch (size) {
    case 1: return sign ? &ld<S, 1, true> : &ld<S, 1, false>;
    case 2: return sign ? &ld<S, 2, true> : &ld<S, 2, false>;
    case 4: return sign ? &ld<S, 4, true> : &ld<S, 4, false>;
    default: return &ld<S, 8, false>;
  }
}
template <Space S>
ExecFn pick_st(unsigned size) {
  switch (size) {
    case 1: return &st<S, 1>;
    case 2: return &st<S, 2>;
    case 4: return &st<S, 4>;
    default: return &st<S, 8>;
  }
}

// ---- atomics ----------------------------------------------------------------------------------

template <class U>
U atomic_apply(U* p, const Inst& in, U b, U c) {
  std::atomic_ref<U> ref(*p);
  U old = ref.load(std::memory_order_relaxed);
  for (;;) {
    U next = old;
    switch (in.cmp) {
      case kAtomAdd:
        if constexpr (sizeof(U) == 4) {
          if (in.type == T::F32) next = std::bit_cast<U>(std::bit_cast<float>(old) + std::bit_cast<float>(b));
          else next = static_cast<U>(old + b);
        } else {
          if (in.type == T::F64) next = std::bit_cast<U>(std::bit_cast<double>(old) + std::bit_cast<double>(b));
          else next = static_cast<U>(old + b);
        }
        break;
      case kAtomMin:
      case kAtomMax: {
        bool less;
        if (is_signed(in.type)) less = static_cast<std::make_signed_t<U>>(old) < static_cast<std::make_signed_t<U>>(b);
        else less = old < b;
        next = (in.cmp == kAtomMin) == less ? old : b;
        break;
      }
      case kAtomAnd: next = old & b; break;
      case kAtomOr: next = old | b; break;
      case kAtomXor: next = old ^ b; break;
      case kAtomExch: next = b; break;
      case kAtomCas: next = old == b ? c : old; break;
      case kAtomInc: next = old >= b ? 0 : static_cast<U>(old + 1); break;
      default: next = (old == 0 || old > b) ? b : static_cast<U>(old - 1); break;  // dec
    }
    if (ref.compare_exchange_weak(old, next, std::memory_order_relaxed)) return old;
  }
}

template <Space S>
void atom(Warp& w, const Inst& in, uint32_t m) {
  const uint64_t* base = in.base != kNone ? slot(w, in.base) : nullptr;
  const uint64_t *b = slot(w, in.s[0]), *c = in.s[1] != kNone ? slot(w, in.s[1]) : nullptr;
  uint64_t* d = in.d[0] != kNone ? slot(w, in.d[0]) : nullptr;
  for_lanes(m, [&](int l) {  // lanes in order, each atomically
    uint8_t* p = resolve<S>(w, in, l, address(in, base, l), in.size, Access::Atomic);
    uint64_t old;
    if (in.size == 4)
      old = atomic_apply<uint32_t>(reinterpret_cast<uint32_t*>(p), in, static_cast<uint32_t>(b[l]), c ? static_cast<uint32_t>(c[l]) : 0);
    else old = atomic_apply<uint64_t>(reinterpret_cast<uint64_t*>(p), in, b[l], c ? c[l] : 0);
    if (d) d[l] = is_signed(in.type) && in.size == 4 ? static_cast<uint64_t>(static_cast<int64_t>(static_cast<int32_t>(old))) : old;
  });
}

// ---- address conversion -----------------------------------------------------------------------

void cvta(Warp& w, const Inst& in, uint32_t m) {
  const PtxLaunch& L = *w.block->run->launch;
  uint64_t* d = slot(w, in.d[0]);
  const uint64_t* a = slot(w, in.s[0]);
  const uint64_t window = in.space == Space::Shared ? L.shared_window : in.space == Space::Local ? L.local_window : 0;
  const bool to = in.op == Opc::CvtaTo;
  const uint64_t mask = bits(in.type) == 32 ? 0xffffffffull : ~uint64_t{0};
  const uint64_t amask = in.addr_bits < 64 ? (uint64_t{1} << in.addr_bits) - 1 : ~uint64_t{0};
  for_lanes(m, [&](int l) { d[l] = ((to ? (a[l] & amask) - window : (a[l] & amask) + window)) & mask; });
}

// ---- warp-level -------------------------------------------------------------------------------

void shfl(Warp& w, const Inst& in, uint32_t m) {
  const uint64_t *a = slot(w, in.s[0]), *b = slot(w, in.s[1]), *c = slot(w, in.s[2]);
  uint64_t out[32];
  uint32_t valid = 0;
  for_lanes(m, [&](int l) {
    const uint32_t lane = static_cast<uint32_t>(l), bval = static_cast<uint32_t>(b[l]) & 31, cv = static_cast<uint32_t>(c[l]);
    const uint32_t clamp = cv & 31, seg = cv >> 8 & 31;
    const uint32_t max_lane = (lane & seg) | (clamp & ~seg), min_lane = lane & seg;
    uint32_t j = lane;
    bool ok = false;
    switch (in.cmp) {
      case 0: j = lane - bval, ok = static_cast<int32_t>(j) >= static_cast<int32_t>(max_lane); break;  // up
      case 1: j = lane + bval, ok = j <= max_lane; break;                                              // down
      case 2: j = lane ^ bval, ok = j <= max_lane; break;                                              // bfly
      default: j = min_lane | (bval & ~seg), ok = j <= max_lane; break;                                // idx
    }
    if (!ok) j = lane;
    out[l] = a[j & 31];
    if (ok) valid |= 1u << l;
  });
  uint64_t* d = slot(w, in.d[0]);
  for_lanes(m, [&](int l) { d[l] = out[l] & 0xffffffff; });
  if (in.d[1] != kNone) w.p[in.d[1]] = (w.p[in.d[1]] & ~m) | (valid & m);
}

inline uint32_t pred_operand(const Warp& w, const Inst& in) { return w.p[in.sp] ^ (in.c_neg ? 0xffffffffu : 0); }
inline uint32_t member_mask(Warp& w, const Inst& in, uint32_t m) {
  return in.s[1] == kNone ? 0xffffffffu : static_cast<uint32_t>(slot(w, in.s[1])[__builtin_ctz(m)]);
}

// mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16} (PTX ISA §9.7.14.5.8): D = A x B + C with A
// 16x16 (row-major), B 16x8 (column-major), C and D 16x8, spread over the warp. With g = lane / 4 and
// t = lane % 4: A's registers a0..a3 hold two elements each (low half first) at rows g (a0, a2) and
// g + 8 (a1, a3), columns 2t, 2t + 1 (a0, a1) and 8 on (a2, a3); B's b0 and b1 hold rows 2t, 2t + 1
// and 8 on, column g; C's and D's c0..c3 are (g, 2t), (g, 2t + 1), (g + 8, 2t), (g + 8, 2t + 1).
// The products are exact; each element's 16 products and C are summed in double and rounded to float
// once (the hardware's order is not documented: sums that are not exact can differ in the last bit).
//
// mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32: A 16x8, B 8x8, one tf32 per register (a
// float32 whose low 13 mantissa bits are not read): a0 at (g, t), a1 at (g + 8, t), a2 and a3 four
// columns on; b0 at (t, g), b1 four rows on; C and D as above.
void mma(Warp& w, const Inst& in, uint32_t m) {
  if (m != 0xffffffffu) illegal(w, in, -1, "mma.sync needs the warp's 32 lanes together (" + std::to_string(__builtin_popcount(m)) + " arrived)");
  double (*elem)(uint64_t) = in.type == T::BF16 ? &fp::bf16_to_double : &fp::half_to_double;
  const bool tf32 = in.type == T::B32;
  const int kk = tf32 ? 8 : 16;
  double a[16][16], b[16][8], c[16][8];
  auto tf32_of = [](uint64_t bits) { return double{std::bit_cast<float>(static_cast<uint32_t>(bits) & 0xffffe000u)}; };
  for (int l = 0; l < 32; ++l) {
    const int g = l / 4, t = l % 4;
    if (tf32) {
      for (int r = 0; r < 4; ++r) a[g + 8 * (r % 2)][t + 4 * (r / 2)] = tf32_of(slot(w, in.frag[4 + r])[l]);
      for (int r = 0; r < 2; ++r) b[t + 4 * r][g] = tf32_of(slot(w, in.frag[8 + r])[l]);
    } else {
      for (int r = 0; r < 4; ++r)
        for (int h = 0; h < 2; ++h) a[g + 8 * (r % 2)][2 * t + h + 8 * (r / 2)] = elem(slot(w, in.frag[4 + r])[l] >> (16 * h));
      for (int r = 0; r < 2; ++r)
        for (int h = 0; h < 2; ++h) b[2 * t + h + 8 * r][g] = elem(slot(w, in.frag[8 + r])[l] >> (16 * h));
    }
    for (int r = 0; r < 4; ++r) c[g + 8 * (r / 2)][2 * t + r % 2] = std::bit_cast<float>(static_cast<uint32_t>(slot(w, in.frag[10 + r])[l]));
  }
  uint32_t d[4][32];
  for (int l = 0; l < 32; ++l) {
    const int g = l / 4, t = l % 4;
    for (int r = 0; r < 4; ++r) {
      const int row = g + 8 * (r / 2), col = 2 * t + r % 2;
      double sum = c[row][col];
      for (int k = 0; k < kk; ++k) sum += a[row][k] * b[k][col];
      d[r][l] = std::bit_cast<uint32_t>(static_cast<float>(sum));
    }
  }
  for (int r = 0; r < 4; ++r) {
    uint64_t* out = slot(w, in.frag[r]);
    for (int l = 0; l < 32; ++l) out[l] = d[r][l];
  }
}

void vote(Warp& w, const Inst& in, uint32_t m) {
  const uint32_t act = m & member_mask(w, in, m), a = pred_operand(w, in) & act;
  switch (in.cmp) {
    case 0: {
      const uint32_t r = a == act ? ~0u : 0;
      w.p[in.d[0]] = (w.p[in.d[0]] & ~m) | (r & m);
      break;
    }  // all
    case 1: {
      const uint32_t r = a != 0 ? ~0u : 0;
      w.p[in.d[0]] = (w.p[in.d[0]] & ~m) | (r & m);
      break;
    }  // any
    case 2: {
      const uint32_t r = (a == act || a == 0) ? ~0u : 0;
      w.p[in.d[0]] = (w.p[in.d[0]] & ~m) | (r & m);
      break;
    }  // uni
    default: {
      uint64_t* d = slot(w, in.d[0]);
      for_lanes(m, [&](int l) { d[l] = a; });
      break;
    }  // ballot
  }
}

void activemask(Warp& w, const Inst& in, uint32_t m) {
  uint64_t* d = slot(w, in.d[0]);
  for_lanes(m, [&](int l) { d[l] = m; });
}

void redux(Warp& w, const Inst& in, uint32_t m) {
  const uint32_t act = m & member_mask(w, in, m);
  const uint64_t* a = slot(w, in.s[0]);
  const bool sign = in.type == T::S32;
  uint32_t r = 0;
  bool first = true;
  for_lanes(act, [&](int l) {
    const uint32_t v = static_cast<uint32_t>(a[l]);
    if (first) {
      r = v, first = false;
      return;
    }
    switch (in.cmp) {
      case 0: r += v; break;
      case 1: r = sign ? static_cast<uint32_t>(std::min(static_cast<int32_t>(r), static_cast<int32_t>(v))) : std::min(r, v); break;
      case 2: r = sign ? static_cast<uint32_t>(std::max(static_cast<int32_t>(r), static_cast<int32_t>(v))) : std::max(r, v); break;
      case 3: r &= v; break;
      case 4: r |= v; break;
      default: r ^= v; break;
    }
  });
  uint64_t* d = slot(w, in.d[0]);
  for_lanes(m, [&](int l) { d[l] = r; });
}

void clock(Warp& w, const Inst& in, uint32_t m) {
  uint64_t* d = slot(w, in.d[0]);
  uint64_t v = w.executed;
  if (in.op == Opc::GlobalTimer)
    v = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
  if (in.op == Opc::Clock) v &= 0xffffffff;
  for_lanes(m, [&](int l) { d[l] = v; });
}

void nop(Warp&, const Inst&, uint32_t) {}

template <template <Space> class P>
ExecFn by_space(Space s, auto... args) {
  switch (s) {
    case Space::Global: return P<Space::Global>::get(args...);
    case Space::Shared: return P<Space::Shared>::get(args...);
    case Space::Local: return P<Space::Local>::get(args...);
    case Space::Param: return P<Space::Param>::get(args...);
    case Space::Generic: return P<Space::Generic>::get(args...);
    case Space::Const: return P<Space::Const>::get(args...);
    default: return nullptr;
  }
}
template <Space S>
struct LdP {
  static ExecFn get(unsigned size, bool sign) { return pick_ld<S>(size, sign); }
};
template <Space S>
struct StP {
  static ExecFn get(unsigned size) { return pick_st<S>(size); }
};
template <Space S>
struct AtomP {
  static ExecFn get() { return &atom<S>; }
};

}  // namespace

std::string bind_mem(Inst& in) {
  switch (in.op) {
    case Opc::Ld: in.fn = by_space<LdP>(in.space, static_cast<unsigned>(in.size), is_signed(in.type)); break;
    case Opc::St:
      if (in.space == Space::Param || in.space == Space::Const) return "stores to the parameter or constant space are not allowed";
      in.fn = by_space<StP>(in.space, static_cast<unsigned>(in.size));
      break;
    case Opc::Atom:
    case Opc::Red:
      if (in.space == Space::Param || in.space == Space::Const || in.space == Space::Local) return "atomics work on global or shared memory only";
      if (in.size != 4 && in.size != 8) return "atomics on this type are not implemented";
      in.fn = by_space<AtomP>(in.space);
      break;
    case Opc::Cvta:
    case Opc::CvtaTo:
      if (in.space != Space::Shared && in.space != Space::Local && in.space != Space::Global && in.space != Space::Const)
        return std::string("cvta for the .") + name(in.space) + " space is not implemented";
      in.fn = &cvta;
      break;
    case Opc::Shfl: in.fn = &shfl; break;
    case Opc::Vote: in.fn = &vote; break;
    case Opc::Activemask: in.fn = &activemask; break;
    case Opc::Redux: in.fn = &redux; break;
    case Opc::Mma: in.fn = &mma; break;
    case Opc::Clock:
    case Opc::Clock64:
    case Opc::GlobalTimer: in.fn = &clock; break;
    case Opc::Nop: in.fn = &nop; break;
    default: return "not a memory or warp instruction";
  }
  if (!in.fn) return "this combination is not implemented";
  return {};
}

}  // namespace ugpu::emu::nv::detail
