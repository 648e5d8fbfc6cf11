#include "ir/ops.h"

#include <array>

namespace ugpu::ir {
namespace {

constexpr std::array<OpInfo, kOpCount> kOps{{
#define UGPU_OP_INFO(name, group, flags, arg) {#name, OpGroup::group, flags, ArgKind::arg},
    UGPU_OPS(UGPU_OP_INFO)
#undef UGPU_OP_INFO
}};

constexpr std::string_view kAxisNames[] = {
#define UGPU_AXIS_NAME(name) #name,
    UGPU_AXIS_TYPES(UGPU_AXIS_NAME)
#undef UGPU_AXIS_NAME
};

}  // namespace

const OpInfo& op_info(Op op) { return kOps[static_cast<size_t>(op)]; }

std::optional<Op> parse_op(std::string_view name) {
  for (int i = 0; i < kOpCount; ++i)
    if (kOps[i].name == name) return static_cast<Op>(i);
  return std::nullopt;
}

OpSet OpSet::group(OpGroup g) {
  OpSet s;
  for (int i = 0; i < kOpCount; ++i)
    if (kOps[i].group == g) s.bits |= OpSet::bit(static_cast<Op>(i));
  return s;
}

std::string_view axis_type_name(AxisType t) { return kAxisNames[static_cast<size_t>(t)]; }

std::optional<AxisType> parse_axis_type(std::string_view name) {
  for (size_t i = 0; i < std::size(kAxisNames); ++i)
    if (kAxisNames[i] == name) return static_cast<AxisType>(i);
  return std::nullopt;
}

}  // namespace ugpu::ir
