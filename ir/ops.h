// The UOp operations, as one table: name, group, algebraic properties and the kind of `arg` each takes.
// The table order is meaningful: it is the first key of the canonical order of terms (ir/order.h).
#pragma once
#include <cstdint>
#include <optional>
#include <string_view>

namespace ugpu::ir {

enum class OpGroup : uint8_t { Define, Structure, Memory, Control, Reduce, Movement, Unary, Binary, Ternary };

// What an op's `arg` holds (see Arg in uop.h).
enum class ArgKind : uint8_t {
  None,        // no arg
  Value,       // CONST: int64 (ints, bool) or double (floats)
  Int,         // slot / id; GATHER and ASSIGN: the axis
  String,      // SPECIAL: "gidx0", "lidx1"; WMMA: the tensor core (codegen/tensor_core.h)
  Var,         // DEFINE_VAR: name and bounds
  Range,       // RANGE: axis id and AxisType
  ReduceOp,    // REDUCE: which binary op reduces
  ReduceAxis,  // REDUCE_AXIS: op and axes
  Ints,        // shapes, permutations, flip axes, GEP lanes; DEFINE_LOCAL/REG and BUFFER: (id, element count); IOTA: (n)
  Pairs,       // PAD (before, after), SHRINK (begin, end) per axis
};

// Properties, as bit flags.
enum : uint8_t { kCommutative = 1, kAssociative = 2, kIdempotent = 4 };

// X(name, group, flags, arg kind)
#define UGPU_OPS(X)                                               \
  X(CONST, Define, 0, Value)                                      \
  X(INVALID, Define, 0, None)                                     \
  X(DEFINE_GLOBAL, Define, 0, Int)                                \
  X(DEFINE_LOCAL, Define, 0, Ints)                                \
  X(DEFINE_REG, Define, 0, Ints)                                  \
  X(DEFINE_VAR, Define, 0, Var)                                   \
  X(BUFFER, Define, 0, Ints)                                      \
  X(IOTA, Define, 0, Ints)                                        \
  X(SPECIAL, Define, 0, String)                                   \
  X(RANGE, Control, 0, Range)                                     \
  X(END, Control, 0, None)                                        \
  X(IF, Control, 0, None)                                         \
  X(ENDIF, Control, 0, None)                                      \
  X(BARRIER, Control, 0, None)                                    \
  X(SINK, Structure, 0, None)                                     \
  X(NOOP, Structure, 0, None)                                     \
  X(GROUP, Structure, 0, None)                                    \
  X(AFTER, Structure, 0, None)                                    \
  X(VECTORIZE, Structure, 0, None)                                \
  X(GEP, Structure, 0, Ints)                                      \
  X(INDEX, Memory, 0, None)                                       \
  X(LOAD, Memory, 0, None)                                        \
  X(STORE, Memory, 0, None)                                       \
  X(REDUCE, Reduce, 0, ReduceOp)                                  \
  X(REDUCE_AXIS, Reduce, 0, ReduceAxis)                           \
  X(RESHAPE, Movement, 0, Ints)                                   \
  X(EXPAND, Movement, 0, Ints)                                    \
  X(PERMUTE, Movement, 0, Ints)                                   \
  X(PAD, Movement, 0, Pairs)                                      \
  X(SHRINK, Movement, 0, Pairs)                                   \
  X(FLIP, Movement, 0, Ints)                                      \
  X(CONTIGUOUS, Movement, 0, None)                                \
  X(GATHER, Movement, 0, Int)                                     \
  X(ASSIGN, Movement, 0, Int)                                     \
  X(CAST, Unary, 0, None)                                         \
  X(BITCAST, Unary, 0, None)                                      \
  X(EXP2, Unary, 0, None)                                         \
  X(LOG2, Unary, 0, None)                                         \
  X(SIN, Unary, 0, None)                                          \
  X(SQRT, Unary, 0, None)                                         \
  X(RECIPROCAL, Unary, 0, None)                                   \
  X(NEG, Unary, 0, None)                                          \
  X(TRUNC, Unary, 0, None)                                        \
  X(ADD, Binary, kCommutative | kAssociative, None)               \
  X(SUB, Binary, 0, None)                                         \
  X(MUL, Binary, kCommutative | kAssociative, None)               \
  X(FDIV, Binary, 0, None)                                        \
  X(CDIV, Binary, 0, None)                                        \
  X(CMOD, Binary, 0, None)                                        \
  X(FLOORDIV, Binary, 0, None)                                    \
  X(FLOORMOD, Binary, 0, None)                                    \
  X(MAX, Binary, kCommutative | kAssociative | kIdempotent, None) \
  X(SHL, Binary, 0, None)                                         \
  X(SHR, Binary, 0, None)                                         \
  X(CMPLT, Binary, 0, None)                                       \
  X(CMPNE, Binary, kCommutative, None)                            \
  X(CMPEQ, Binary, kCommutative, None)                            \
  X(XOR, Binary, kCommutative | kAssociative, None)               \
  X(OR, Binary, kCommutative | kAssociative | kIdempotent, None)  \
  X(AND, Binary, kCommutative | kAssociative | kIdempotent, None) \
  X(POW, Binary, 0, None)                                         \
  X(WHERE, Ternary, 0, None)                                      \
  X(MULACC, Ternary, 0, None)                                     \
  X(FMA, Ternary, 0, None)                                        \
  X(WMMA, Reduce, 0, String)                                      \
  X(DETACH, Movement, 0, None)

enum class Op : uint8_t {
#define UGPU_OP_ENUM(name, group, flags, arg) name,
  UGPU_OPS(UGPU_OP_ENUM)
#undef UGPU_OP_ENUM
};
inline constexpr int kOpCount = 0
#define UGPU_OP_COUNT(name, group, flags, arg) +1
    UGPU_OPS(UGPU_OP_COUNT)
#undef UGPU_OP_COUNT
    ;

struct OpInfo {
  std::string_view name;
  OpGroup group;
  uint8_t flags;
  ArgKind arg;
};
const OpInfo& op_info(Op op);
inline std::string_view op_name(Op op) { return op_info(op).name; }
std::optional<Op> parse_op(std::string_view name);

inline bool is_alu(Op op) {
  OpGroup g = op_info(op).group;
  return g == OpGroup::Unary || g == OpGroup::Binary || g == OpGroup::Ternary;
}
// Ops of tensor graphs only (docs/tensor.md): the scheduler turns them into kernel ops.
inline bool is_tensor_op(Op op) {
  OpGroup g = op_info(op).group;
  return g == OpGroup::Movement || op == Op::REDUCE_AXIS || op == Op::BUFFER || op == Op::IOTA;
}
inline bool is_comparison(Op op) { return op == Op::CMPLT || op == Op::CMPNE || op == Op::CMPEQ; }
inline bool is_commutative(Op op) { return op_info(op).flags & kCommutative; }
inline bool is_associative(Op op) { return op_info(op).flags & kAssociative; }

// A set of ops (bit i = Op i), used by patterns.
struct OpSet {
  using Bits = unsigned __int128;
  Bits bits = 0;
  static_assert(kOpCount <= 128);
  static constexpr Bits bit(Op o) { return Bits{1} << static_cast<int>(o); }
  constexpr OpSet() = default;
  constexpr OpSet(Op o) : bits(bit(o)) {}  // NOLINT: one op is a set
  constexpr OpSet(std::initializer_list<Op> ops) {
    for (Op o : ops) bits |= bit(o);
  }
  constexpr bool has(Op o) const { return (bits >> static_cast<int>(o)) & 1; }
  int count() const { return __builtin_popcountll(static_cast<uint64_t>(bits)) + __builtin_popcountll(static_cast<uint64_t>(bits >> 64)); }
  constexpr bool empty() const { return bits == 0; }
  constexpr OpSet operator|(OpSet o) const {
    OpSet r;
    r.bits = bits | o.bits;
    return r;
  }
  static OpSet group(OpGroup g);
};

// How a RANGE is used; codegen maps GLOBAL/LOCAL to workgroup and workitem ids.
#define UGPU_AXIS_TYPES(X) X(GLOBAL) X(LOCAL) X(LOOP) X(REDUCE) X(UPCAST) X(UNROLL) X(GROUP_REDUCE) X(WARP) X(THREAD)
enum class AxisType : uint8_t {
#define UGPU_AXIS_ENUM(name) name,
  UGPU_AXIS_TYPES(UGPU_AXIS_ENUM)
#undef UGPU_AXIS_ENUM
};
std::string_view axis_type_name(AxisType t);
std::optional<AxisType> parse_axis_type(std::string_view name);

}  // namespace ugpu::ir
