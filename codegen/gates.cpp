// Masked memory access: the gate moves from the index value into the INDEX node, where the renderer
// turns it into a branch around the access, so a masked-off address is never dereferenced.
#include "codegen/passes.h"
#include "common/error.h"
#include "ir/rewrite.h"
#include "ir/text.h"
#include "ir/upat.h"

namespace ugpu::codegen {
using namespace ir;
namespace {

bool gated(const UOp& index) { return index.op() == Op::INDEX && index.src().size() == 3; }

UOp index_gate(const UOp& idx) {
  const UOp& i = idx.src(1);
  if (i.op() != Op::WHERE || i.src(2).op() != Op::INVALID) return {};
  UOp gate = gated(idx) ? (i.src(0) & idx.src(2)) : i.src(0);
  return UOp::make(Op::INDEX, idx.dtype(), {idx.src(0), i.src(1), gate});
}

const PatternMatcher& gate_rules() {
  static const PatternMatcher pm("gates",
                                 {
                                     Rule(
                                         UPat(Op::INDEX), [](const Match& m) { return index_gate(m.node()); }, "gate from WHERE(c, i, INVALID)"),
                                     Rule(
                                         UPat(Op::INDEX),
                                         [](const Match& m) {
                                           const UOp& u = m.node();
                                           if (!gated(u) || !u.src(2).is_const()) return UOp();
                                           return u.src(2).const_int() ? UOp::make(Op::INDEX, u.dtype(), {u.src(0), u.src(1)}) : UOp();
                                         },
                                         "always-true gate"),
                                     Rule(
                                         UPat(Op::LOAD),
                                         [](const Match& m) {
                                           const UOp& u = m.node();
                                           if (u.src().size() != 1 || !gated(u.src(0))) return UOp();
                                           return UOp::make(Op::LOAD, u.dtype(), {u.src(0), UOp::const_like(u, 0)});
                                         },
                                         "masked load gives 0"),
                                 });
  return pm;
}

}  // namespace

UOp move_gates(const UOp& sink) {
  for (const UOp& u : sink.toposort())
    if (u.op() == Op::INDEX && (u.src().size() > 3 || (u.src().size() == 3 && !u.src(2).dtype().is_bool())))
      throw Error("INDEX takes one index and an optional bool gate: " + to_inline(u, 120));
  UOp out = graph_rewrite(sink, gate_rules());
  for (const UOp& u : out.toposort())
    for (const UOp& s : u.src())
      if (s.op() == Op::INVALID)
        throw Error("INVALID (a masked-off value) is used by " + std::string(op_name(u.op())) +
                    "; it may only be the masked branch of an index, WHERE(valid, idx, INVALID): " + to_inline(u, 120));
  return out;
}

UOp add_mask(const UOp& access, const UOp& cond) {
  const UOp& idx = access.src(0);
  UOp i = idx.src(1);
  bool masked = i.op() == Op::WHERE && i.src(2).op() == Op::INVALID;
  std::vector<UOp> isrc(idx.src().begin(), idx.src().end());
  isrc[1] = masked ? UOp::alu(Op::WHERE, {i.src(0) & cond, i.src(1), i.src(2)}) : cond.where(i, UOp::invalid(i.dtype()));
  std::vector<UOp> src(access.src().begin(), access.src().end());
  src[0] = idx.with_src(isrc);
  return access.with_src(src);
}

}  // namespace ugpu::codegen
