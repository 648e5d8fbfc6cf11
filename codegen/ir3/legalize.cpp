// Legalization: what the hardware needs between instructions (docs/qcom.md §Scheduling, after Mesa's
// description of the a6xx pipeline). An ALU result may be read only after its delay slots (3 by an ALU
// source, 1 by a mad's third source, 6 across register sizes, by a non-ALU reader, or from p0/a0);
// SFU and shared-memory results are waited for with (ss), global and private loads with (sy); a
// register a store or a pending load still reads is not overwritten before the matching wait; the
// instruction after a barrier or fence carries both. Delay slots become (nopN) on the previous ALU
// instruction or nops. At every branch and label the state is made clean (nops and both waits), so a
// label's instruction starts with nothing in flight whichever way it was reached; it carries (jp).
// The program ends with `end`, padded with nops to a multiple of 16 instructions.
#include <algorithm>
#include <array>

#include "codegen/ir3/program.h"
#include "common/error.h"

namespace ugpu::codegen::ir3 {
namespace {

using isa::Inst;
using IOp = isa::Op;

bool is_cat(const Inst& i, int c) { return isa::info(i.op).cat == c; }
bool is_flow(const Inst& i) {
  return i.op == IOp::BR || i.op == IOp::BRAO || i.op == IOp::BRAA || i.op == IOp::BANY || i.op == IOp::BALL || i.op == IOp::JUMP;
}
bool is_store(const Inst& i) { return i.op == IOp::STG || i.op == IOp::STG_A || i.op == IOp::STL || i.op == IOp::STP || i.op == IOp::STLW; }

// A register as the hazard tracker sees it: the full register it lives in (half registers share one),
// whether the access is half-sized.
struct Slot {
  int full;
  bool half;
};
void add_reg(std::vector<Slot>& v, const isa::Src& s) {
  if (s.kind != isa::Src::Kind::Reg) return;
  if (s.num >= isa::kP0 && s.num < isa::kNoReg) v.push_back({int(s.num), false});
  else if (s.num < 0xC0 || (!s.half && s.num < 0xF4)) v.push_back({s.half ? s.num >> 1 : int(s.num), s.half});
}
void add_span(std::vector<Slot>& v, int regid, int n, bool half) {
  for (int k = 0; k < n; ++k) {
    int r = regid + k;
    v.push_back({half ? r >> 1 : r, half});
  }
}

struct Access {
  std::vector<Slot> reads, writes;
  std::vector<bool> read_src3;  // per read: the third source of a mad (one delay slot)
};
Access access(const Inst& i) {
  Access a;
  auto rd = [&](const isa::Src& s, bool src3 = false) {
    size_t before = a.reads.size();
    add_reg(a.reads, s);
    if (a.reads.size() > before) a.read_src3.push_back(src3);
  };
  int cat = isa::info(i.op).cat;
  if (cat == 0) {
    if (i.op != IOp::JUMP && i.op != IOp::NOP && i.op != IOp::END) {
      a.reads.push_back({isa::kP0 + i.comp1, false}), a.read_src3.push_back(false);
      if (i.op == IOp::BRAO || i.op == IOp::BRAA) a.reads.push_back({isa::kP0 + i.comp2, false}), a.read_src3.push_back(false);
    }
    return a;
  }
  if (cat == 7) return a;
  if (cat == 6) {
    bool pair = i.op == IOp::LDG || i.op == IOp::LDG_A || i.op == IOp::STG || i.op == IOp::STG_A || (i.global && i.op >= IOp::ATOMIC_ADD);
    if (i.src[0].kind == isa::Src::Kind::Reg) {
      add_span(a.reads, i.src[0].num, pair ? 2 : 1, false);
      while (a.read_src3.size() < a.reads.size()) a.read_src3.push_back(false);
    }
    if (i.op == IOp::LDG_A || i.op == IOp::STG_A) rd(i.src[1]);
    if (i.src[2].kind == isa::Src::Kind::Reg) {
      int n = is_store(i) ? i.components : i.op == IOp::ATOMIC_CMPXCHG ? 2 : 1;
      add_span(a.reads, i.src[2].num, n, i.src[2].half);
      while (a.read_src3.size() < a.reads.size()) a.read_src3.push_back(false);
    }
    if (!is_store(i) && i.dst != isa::kNoReg) add_span(a.writes, i.dst, i.op >= IOp::ATOMIC_ADD ? 1 : i.components, i.dst_half);
    return a;
  }
  bool mad = i.op == IOp::MAD_F32 || i.op == IOp::MAD_F16 || i.op == IOp::MAD_U16 || i.op == IOp::MAD_S16 || i.op == IOp::MAD_U24 ||
             i.op == IOp::MAD_S24 || i.op == IOp::MADSH_M16 || i.op == IOp::MADSH_U16;
  for (int s = 0; s < 3; ++s) rd(i.src[size_t(s)], mad && s == 2);
  if (i.dst != isa::kNoReg) {
    if (i.dst >= isa::kP0) a.writes.push_back({int(i.dst), false});
    else a.writes.push_back({i.dst_half ? i.dst >> 1 : int(i.dst), i.dst_half});
  }
  return a;
}

class Legalizer {
 public:
  std::vector<Inst> out;
  std::vector<int> label_of;  // per output instruction: the label a branch targets (-1: none)

  void run(const std::vector<Inst>& code, const std::vector<int>& label_at) {
    std::vector<std::vector<int>> labels_before(code.size() + 1);
    for (size_t l = 0; l < label_at.size(); ++l)
      if (label_at[l] >= 0) labels_before[size_t(label_at[l])].push_back(int(l));
    label_pos_.assign(label_at.size(), -1);
    for (size_t k = 0; k <= code.size(); ++k) {
      if (!labels_before[k].empty()) {
        sync();
        for (int l : labels_before[k]) label_pos_[size_t(l)] = int(out.size());
        jp_next_ = true;
      }
      if (k == code.size()) break;
      place(code[k]);
    }
  }
  std::vector<int> label_pos_;

 private:
  struct State {
    long ready_same = 0, ready_src3 = 0, ready_other = 0;  // cycle from which each kind of reader may read
    bool half = false;                                     // the size of the last ALU write
    bool ss = false, sy = false;                           // an (ss)/(sy)-class result is pending
    bool war_ss = false, war_sy = false;                   // a store or pending load still reads it
  };
  std::array<State, 256> st_{};
  long cycle_ = 0;
  bool force_sync_ = false, jp_next_ = false;
  bool prev_can_nop_ = false;  // the last output instruction may take (nopN)

  bool pending() const {
    for (const State& s : st_)
      if (s.ss || s.sy || s.war_ss || s.war_sy || s.ready_other > cycle_) return true;
    return false;
  }
  void clear_ss() {
    for (State& s : st_) s.ss = s.war_ss = false;
  }
  void clear_sy() {
    for (State& s : st_) s.sy = s.war_sy = false;
  }
  // Nops of `cycles` cycles carrying the given waits.
  void nops(long cycles, bool ss, bool sy) {
    do {
      long n = std::clamp<long>(cycles, 1, 8);
      Inst nop;
      nop.op = IOp::NOP, nop.rpt = uint8_t(n - 1), nop.ss = ss, nop.sy = sy, nop.jp = jp_next_;
      jp_next_ = false, ss = sy = false;
      out.push_back(nop), label_of.push_back(-1);
      cycle_ += n, cycles -= n;
      prev_can_nop_ = false;
    } while (cycles > 0);
  }
  // Nothing in flight: before a branch and at a label.
  void sync() {
    if (!pending()) return;
    long wait = 0;
    bool ss = false, sy = false;
    for (const State& s : st_) wait = std::max(wait, s.ready_other - cycle_), ss = ss || s.ss || s.war_ss, sy = sy || s.sy || s.war_sy;
    nops(std::max<long>(wait, 1), ss, sy);
    clear_ss(), clear_sy();
  }
  // Delay slots: (nopN) on the previous ALU instruction where it can take them, then nops.
  void delay(long cycles) {
    if (cycles <= 0) return;
    if (prev_can_nop_) {
      Inst& p = out.back();
      long k = std::min<long>(3 - p.nop, cycles);
      p.nop = uint8_t(p.nop + k), cycle_ += k, cycles -= k;
    }
    if (cycles > 0) nops(cycles, false, false);
  }

  void place(Inst i) {
    if (is_flow(i)) sync();
    Access a = access(i);
    bool alu = isa::is_alu(i);
    bool need_ss = force_sync_, need_sy = force_sync_;
    long ready = cycle_;
    for (size_t k = 0; k < a.reads.size(); ++k) {
      const State& s = st_[size_t(a.reads[k].full)];
      need_ss = need_ss || s.ss, need_sy = need_sy || s.sy;
      long r = !alu ? s.ready_other : a.read_src3[k] ? s.ready_src3 : (s.half != a.reads[k].half ? s.ready_other : s.ready_same);
      if (a.reads[k].full >= isa::kP0) r = s.ready_other;  // p0 (and a0): six slots for any reader
      ready = std::max(ready, r);
    }
    for (const Slot& w : a.writes) {
      const State& s = st_[size_t(w.full)];
      need_ss = need_ss || s.ss || s.war_ss, need_sy = need_sy || s.sy || s.war_sy;
    }
    force_sync_ = false;
    delay(ready - cycle_);
    if (need_ss && is_cat(i, 6)) nops(1, true, false);  // cat6 has no (ss) bit
    else if (need_ss) i.ss = true;
    if (need_sy) i.sy = true;
    if (i.ss) clear_ss();
    if (i.sy) clear_sy();
    if (jp_next_) i.jp = true, jp_next_ = false;
    out.push_back(i), label_of.push_back(is_flow(i) ? i.target : -1);
    prev_can_nop_ = (is_cat(i, 2) || is_cat(i, 3)) && i.rpt == 0;
    long start = cycle_;
    if (!is_flow(i)) cycle_ += 1 + i.rpt;
    isa::SyncClass c = isa::result_class(i);
    for (const Slot& w : a.writes) {
      State& s = st_[size_t(w.full)];
      s.ss = c == isa::SyncClass::Ss, s.sy = c == isa::SyncClass::Sy;
      if (c == isa::SyncClass::Alu) {
        s.ready_same = start + 1 + 3, s.ready_src3 = start + 1 + 1, s.ready_other = start + 1 + 6, s.half = w.half;
        if (w.full >= isa::kP0) s.ready_same = s.ready_src3 = s.ready_other;
      } else {
        s.ready_same = s.ready_src3 = s.ready_other = 0;
      }
    }
    if (is_store(i) || c == isa::SyncClass::Ss || c == isa::SyncClass::Sy)
      for (const Slot& r : a.reads) (is_store(i) || c == isa::SyncClass::Ss ? st_[size_t(r.full)].war_ss : st_[size_t(r.full)].war_sy) = true;
    if (is_cat(i, 7)) force_sync_ = true;
  }
};

}  // namespace

std::vector<uint64_t> legalize(std::vector<isa::Inst> code, const std::vector<int>& label_at, std::vector<isa::Inst>* listing) {
  Legalizer l;
  l.run(code, label_at);
  // Branch targets: instructions from the branch.
  for (size_t k = 0; k < l.out.size(); ++k)
    if (l.label_of[k] >= 0) {
      int at = l.label_pos_.at(size_t(l.label_of[k]));
      if (at < 0) throw Error("internal: ir3 legalize: a branch to a label that was never placed");
      l.out[k].target = at - int(k);
    }
  // The end, then nops to a multiple of 16 instructions (and at least 4 after the end).
  auto end = std::find_if(l.out.begin(), l.out.end(), [](const isa::Inst& i) { return i.op == isa::Op::END; });
  if (end == l.out.end()) throw Error("internal: ir3 legalize: no end");
  size_t want = size_t(end - l.out.begin()) + 1 + 4;
  while (l.out.size() < want || l.out.size() % 16) l.out.push_back(isa::Inst{});
  std::vector<uint64_t> words;
  for (const isa::Inst& i : l.out) words.push_back(isa::encode(i));
  if (listing) *listing = l.out;
  return words;
}

}  // namespace ugpu::codegen::ir3
