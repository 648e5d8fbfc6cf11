// Data types of UOp values: scalars, short vectors of them, and pointers into an address space.
//
// Every scalar type has one row in a table (dtype.cpp) giving its size, kind and promotion priority;
// everything else here is computed from that row. `index` is the type of kernel index math: a
// mathematical integer (evaluated in 64 bits) that codegen later commits to int32 or int64 by bounds.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ugpu::ir {

enum class ScalarType : uint8_t {
  Void,
  Bool,
  Int8,
  Int16,
  Int32,
  Int64,
  UInt8,
  UInt16,
  UInt32,
  UInt64,
  FP8E4M3,
  FP8E5M2,
  Half,
  BFloat16,
  Float,
  Double,
  Index,
};
inline constexpr int kScalarTypeCount = 17;

// Where a pointer points. None means "not a pointer".
enum class AddrSpace : uint8_t { None, Global, Local, Reg };

struct DType {
  ScalarType scalar = ScalarType::Void;
  uint16_t count = 1;                     // vector lanes (1 = scalar)
  AddrSpace addrspace = AddrSpace::None;  // pointer to `count` x `scalar` when not None

  constexpr bool operator==(const DType&) const = default;
  constexpr DType vec(uint16_t n) const { return {scalar, n, addrspace}; }
  constexpr DType ptr(AddrSpace as = AddrSpace::Global) const { return {scalar, count, as}; }
  constexpr DType element() const { return {scalar, 1, AddrSpace::None}; }   // the scalar loaded
  constexpr DType base() const { return {scalar, count, AddrSpace::None}; }  // the value pointed to
  constexpr bool is_ptr() const { return addrspace != AddrSpace::None; }
  constexpr bool is_scalar() const { return count == 1 && !is_ptr(); }

  // Facts about the scalar (for pointers: about the pointee).
  int bitsize() const;  // of one lane
  int itemsize() const { return (bitsize() * count + 7) / 8; }
  bool is_float() const;
  bool is_int() const;  // signed, unsigned or index (not bool)
  bool is_unsigned() const;
  bool is_bool() const { return scalar == ScalarType::Bool; }
  bool is_index() const { return scalar == ScalarType::Index; }
  bool is_void() const { return scalar == ScalarType::Void; }
  // Integer range of the scalar (bool: [0,1]; index: the int64 range). Not for floats.
  int64_t min_int() const;
  int64_t max_int() const;   // uint64's max does not fit: it is reported as INT64_MAX
  std::string name() const;  // "float", "half.vec(4)", "float*" (global), "float[local]*"
};

namespace dtypes {
inline constexpr DType void_{ScalarType::Void}, bool_{ScalarType::Bool};
inline constexpr DType int8{ScalarType::Int8}, int16{ScalarType::Int16}, int32{ScalarType::Int32}, int64{ScalarType::Int64};
inline constexpr DType uint8{ScalarType::UInt8}, uint16{ScalarType::UInt16}, uint32{ScalarType::UInt32}, uint64{ScalarType::UInt64};
inline constexpr DType fp8e4m3{ScalarType::FP8E4M3}, fp8e5m2{ScalarType::FP8E5M2}, half{ScalarType::Half}, bfloat16{ScalarType::BFloat16},
    float32{ScalarType::Float}, float64{ScalarType::Double};
inline constexpr DType index{ScalarType::Index};
inline constexpr DType default_float = float32, default_int = int32;
}  // namespace dtypes

std::string_view scalar_name(ScalarType t);
// Parses a name produced by DType::name(); nullopt if it is not one.
std::optional<DType> parse_dtype(std::string_view name);

// Promotion: the least upper bound in the promotion lattice (JAX style), e.g. int8+uint8 -> int16,
// half+bfloat16 -> float. Integer pairs whose bound is a float (int64+uint64) become default_float.
// `index` joins only with index and bool. Throws ugpu::Error for pointers or different lane counts.
DType least_upper_dtype(DType a, DType b);
DType least_upper_float(DType t);  // t if float, else default_float (for unary float ops on ints)
DType sum_acc_dtype(DType t);      // accumulator for a sum: >=int32 / >=uint32 / >=float

// ---- exact conversions of constant values -------------------------------------------------------
// Values are held as int64 (every integer type and bool; uint64 as its bit pattern) or double (every
// float type; each fits a double exactly).

// Wraps v to the integer type's width (two's complement), as a store to that type does.
int64_t wrap_int(int64_t v, DType t);
// Rounds to the float type with round-to-nearest-even, denormals kept. On overflow: ±inf where the
// format has one; for fp8 e4m3 (no inf) NaN, or the largest finite value when `saturate`.
double round_float(double v, DType t, bool saturate = false);
// Bit encodings of the 8/16/32-bit float formats (half, bfloat16, fp8 e4m3/e5m2, float).
uint32_t float_to_bits(double v, DType t, bool saturate = false);
double float_from_bits(uint32_t bits, DType t);
// Conversions between value kinds, with ugpu's definition of what hardware leaves undefined:
// float->int truncates toward zero, NaN gives 0, out-of-range saturates; int->float rounds once.
int64_t float_to_int(double v, DType t);
double int_to_float(int64_t v, DType from, DType to);

}  // namespace ugpu::ir
