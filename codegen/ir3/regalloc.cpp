// Register allocation: linear scan over live intervals in instruction order. A value live where a loop
// starts stays live to the loop's back edge (the next iteration reads it); a group takes consecutive
// registers. r0.x..w hold the local ids the dispatch delivers and r48+ are the shared registers of the
// workgroup ids: neither is handed out. Half registers alias the low 16 bits of full ones (merged
// registers), so a value used as a half register sits below r24 where its alias is addressable.
#include <algorithm>
#include <bitset>

#include "codegen/ir3/program.h"
#include "common/error.h"

namespace ugpu::codegen::ir3 {
namespace {

constexpr int kFirst = 4, kEnd = 48 * 4, kLowEnd = 24 * 4;

struct Unit {
  int first;  // vreg
  int size;
  bool low = false;
  long start = -1, end = -1;
  int phys = -1;
};

}  // namespace

int allocate(VProgram& p, std::vector<isa::Inst>& out, std::vector<int>& label_at, const std::string& kernel) {
  // Units: groups and single vregs.
  std::vector<int> unit_of(size_t(p.vregs), -1);
  std::vector<Unit> units;
  for (int v = 0; v < p.vregs;) {
    int n = std::max(1, p.group_size[size_t(v)]);
    Unit u{v, n};
    for (int k = 0; k < n; ++k) unit_of[size_t(v + k)] = int(units.size()), u.low = u.low || p.low[size_t(v + k)];
    units.push_back(u);
    v += n;
  }
  auto touch = [&](int v, long at) {
    Unit& u = units[size_t(unit_of[size_t(v)])];
    if (u.start < 0 || at < u.start) u.start = at;
    u.end = std::max(u.end, at);
  };
  std::vector<long> label_pos(size_t(p.labels), -1);
  for (size_t i = 0; i < p.code.size(); ++i) {
    const VInst& vi = p.code[i];
    if (vi.label >= 0) {
      label_pos[size_t(vi.label)] = long(i);
      continue;
    }
    int n = std::max<int>(1, vi.inst.components);
    if (vi.dst >= 0)
      for (int k = 0; k < n; ++k) touch(vi.dst + (vi.inst.op == isa::Op::LDG || vi.inst.op == isa::Op::LDL ? k : 0), long(i));
    for (int s = 0; s < 3; ++s)
      if (vi.src[s].kind == VSrc::Kind::Virt) {
        int v = vi.src[s].v;
        touch(v, long(i));
        int g = std::max(1, p.group_size[size_t(v)]);  // a group read as a whole (a pair, store values)
        for (int k = 1; k < g; ++k) touch(v + k, long(i));
      }
  }
  // Loops: what is live at the head and used inside or after stays live to the back edge. Nested
  // loops feed each other: repeat until nothing changes.
  for (bool changed = true; changed;) {
    changed = false;
    for (auto [head, jump] : p.loops) {
      long h = label_pos[size_t(head)], j = long(jump);
      for (Unit& u : units)
        if (u.start >= 0 && u.start < h && u.end >= h && u.end < j) u.end = j, changed = true;
    }
  }
  std::vector<int> order;
  for (size_t k = 0; k < units.size(); ++k)
    if (units[k].start >= 0) order.push_back(int(k));
  std::sort(order.begin(), order.end(), [&](int a, int b) { return units[size_t(a)].start < units[size_t(b)].start; });
  std::bitset<256> busy;
  std::vector<int> active;
  int top = kFirst;
  for (int k : order) {
    Unit& u = units[size_t(k)];
    std::erase_if(active, [&](int a) {
      const Unit& x = units[size_t(a)];
      if (x.end >= u.start) return false;
      for (int r = 0; r < x.size; ++r) busy.reset(size_t(x.phys + r));
      return true;
    });
    int limit = u.low ? kLowEnd : kEnd;
    for (int r = kFirst; r + u.size <= limit; ++r) {
      bool ok = true;
      for (int q = 0; q < u.size && ok; ++q) ok = !busy.test(size_t(r + q));
      if (ok) {
        u.phys = r;
        break;
      }
    }
    if (u.phys < 0)
      throw Error("kernel " + kernel + ": needs more registers than an Adreno fiber has (r1..r47; " + std::to_string(active.size()) +
                  " values live at once): ugpu's ir3 backend does not spill; give it a smaller kernel (fewer UPCAST/UNROLL lanes)");
    for (int r = 0; r < u.size; ++r) busy.set(size_t(u.phys + r));
    top = std::max(top, u.phys + u.size);
    active.push_back(k);
  }
  auto phys = [&](int v) {
    const Unit& u = units[size_t(unit_of[size_t(v)])];
    return u.phys + (v - u.first);
  };
  // Rewrite.
  out.clear();
  label_at.assign(size_t(p.labels), -1);
  for (const VInst& vi : p.code) {
    if (vi.label >= 0) {
      label_at[size_t(vi.label)] = int(out.size());
      continue;
    }
    isa::Inst i = vi.inst;
    if (vi.dst >= 0) i.dst = uint8_t(vi.dst_half ? 2 * phys(vi.dst) : phys(vi.dst)), i.dst_half = vi.dst_half;
    else if (vi.dst_phys >= 0) i.dst = uint8_t(vi.dst_phys), i.dst_half = false;
    for (int s = 0; s < 3; ++s) {
      const VSrc& v = vi.src[s];
      isa::Src& d = i.src[size_t(s)];
      switch (v.kind) {
        case VSrc::Kind::None: continue;
        case VSrc::Kind::Virt: d = isa::Src::gpr(uint8_t(v.half ? 2 * phys(v.v) : phys(v.v)), v.half); break;
        case VSrc::Kind::Phys: d = isa::Src::gpr(uint8_t(v.v)); break;
        case VSrc::Kind::Const: d = isa::Src::cnst(uint16_t(v.v)); break;
        case VSrc::Kind::Imm: d = isa::Src::immed(v.v); break;
        case VSrc::Kind::Flut: d.kind = isa::Src::Kind::Flut, d.num = uint16_t(v.v); break;
      }
      d.neg = v.neg, d.abs = v.abs;
    }
    if (vi.target >= 0) i.target = vi.target;  // a label until legalize() places it
    out.push_back(i);
  }
  return (top + 3) / 4;
}

}  // namespace ugpu::codegen::ir3
