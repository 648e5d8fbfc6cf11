// `index` is ugpu's unbounded integer for address math; hardware has int32 and int64. A value becomes
// int32 when its bounds fit, else int64; a node takes the widest of its own need and its index
// sources' widths, and narrower sources are widened with a CAST.
#include <unordered_map>

#include "codegen/passes.h"
#include "common/error.h"
#include "ir/text.h"

namespace ugpu::codegen {
using namespace ir;

UOp lower_index_dtype(const UOp& sink) {
  std::unordered_map<const void*, UOp> done;
  auto fits32 = [](const UOp& u) { return u.vmin() >= INT32_MIN && u.vmax() <= INT32_MAX; };
  for (const UOp& u : sink.toposort()) {
    std::vector<UOp> src;
    bool wide = u.dtype() == dtypes::index && !fits32(u);
    for (const UOp& s : u.src()) {
      src.push_back(done.at(s.get()));
      if (s.dtype() == dtypes::index && src.back().dtype() == dtypes::int64) wide = true;
    }
    DType w = wide ? dtypes::int64 : dtypes::int32;
    // Index sources of arithmetic share a width; INDEX takes either, and END/REDUCE name their
    // ranges, which keep their own.
    if (is_alu(u.op()) || u.op() == Op::RANGE || u.op() == Op::SPECIAL)
      for (size_t i = 0; i < src.size(); ++i)
        if (u.src(i).dtype() == dtypes::index) src[i] = src[i].cast(w);
    UOp n;
    if (u.op() == Op::CAST && src[0].dtype() == u.dtype()) n = src[0];  // CAST:int32(index) of an int32 index
    else if (u.dtype() != dtypes::index) n = u.with_src(src);
    else if (u.op() == Op::CONST) n = UOp::const_int(w, u.const_int());
    else if (u.op() == Op::CAST) n = src[0].cast(w);
    else if (u.op() == Op::DEFINE_VAR) n = UOp::make(Op::DEFINE_VAR, w, {}, u.arg());
    else n = UOp::make(u.op(), w, src, u.arg());
    done[u.get()] = n;
  }
  return done.at(sink.get());
}

}  // namespace ugpu::codegen
