#include "ir/dtype.h"

#include <array>
#include <bit>
#include <cmath>
#include <limits>
#include <tuple>

#include "common/error.h"

namespace ugpu::ir {
namespace {

enum class Kind : uint8_t { Void, Bool, SInt, UInt, Float, Index };

struct ScalarInfo {
  const char* name;
  int bits;
  int priority;  // promotion tie-break, lowest first
  Kind kind;
  int ebits, mbits;  // float formats only
  bool has_inf;
};

// One row per ScalarType, in enum order.
constexpr std::array<ScalarInfo, kScalarTypeCount> kInfo{{
    {"void", 0, -1, Kind::Void, 0, 0, false},
    {"bool", 1, 0, Kind::Bool, 0, 0, false},
    {"int8", 8, 1, Kind::SInt, 0, 0, false},
    {"int16", 16, 3, Kind::SInt, 0, 0, false},
    {"int32", 32, 5, Kind::SInt, 0, 0, false},
    {"int64", 64, 7, Kind::SInt, 0, 0, false},
    {"uint8", 8, 2, Kind::UInt, 0, 0, false},
    {"uint16", 16, 4, Kind::UInt, 0, 0, false},
    {"uint32", 32, 6, Kind::UInt, 0, 0, false},
    {"uint64", 64, 8, Kind::UInt, 0, 0, false},
    {"fp8e4m3", 8, 9, Kind::Float, 4, 3, false},
    {"fp8e5m2", 8, 10, Kind::Float, 5, 2, true},
    {"half", 16, 11, Kind::Float, 5, 10, true},
    {"bfloat16", 16, 12, Kind::Float, 8, 7, true},
    {"float", 32, 13, Kind::Float, 8, 23, true},
    {"double", 64, 14, Kind::Float, 11, 52, true},
    {"index", 64, 15, Kind::Index, 0, 0, false},
}};

const ScalarInfo& info(ScalarType t) { return kInfo[static_cast<size_t>(t)]; }

using S = ScalarType;
// The promotion lattice: each type's direct parents.
struct Edge {
  S from, to;
};
constexpr Edge kLattice[] = {
    {S::Bool, S::Int8},      {S::Bool, S::UInt8},       {S::Int8, S::Int16},    {S::Int16, S::Int32},      {S::Int32, S::Int64},
    {S::Int64, S::FP8E4M3},  {S::Int64, S::FP8E5M2},    {S::UInt8, S::Int16},   {S::UInt8, S::UInt16},     {S::UInt16, S::Int32},
    {S::UInt16, S::UInt32},  {S::UInt32, S::Int64},     {S::UInt32, S::UInt64}, {S::UInt64, S::FP8E4M3},   {S::UInt64, S::FP8E5M2},
    {S::FP8E4M3, S::Half},   {S::FP8E4M3, S::BFloat16}, {S::FP8E5M2, S::Half},  {S::FP8E5M2, S::BFloat16}, {S::Half, S::Float},
    {S::BFloat16, S::Float}, {S::Float, S::Double},
};

// Bit i of ancestors(t): type i is t or above t in the lattice.
uint32_t ancestors(S t) {
  uint32_t set = 1u << static_cast<int>(t);
  for (const Edge& e : kLattice)
    if (e.from == t) set |= ancestors(e.to);
  return set;
}

}  // namespace

int DType::bitsize() const { return info(scalar).bits; }
bool DType::is_float() const { return info(scalar).kind == Kind::Float; }
bool DType::is_int() const {
  Kind k = info(scalar).kind;
  return k == Kind::SInt || k == Kind::UInt || k == Kind::Index;
}
bool DType::is_unsigned() const { return info(scalar).kind == Kind::UInt; }

int64_t DType::min_int() const {
  switch (info(scalar).kind) {
    case Kind::Bool:
    case Kind::UInt: return 0;
    case Kind::SInt: return bitsize() == 64 ? std::numeric_limits<int64_t>::min() : -(int64_t{1} << (bitsize() - 1));
    case Kind::Index: return std::numeric_limits<int64_t>::min();
    default: throw Error("min_int of non-integer dtype " + name());
  }
}
int64_t DType::max_int() const {
  switch (info(scalar).kind) {
    case Kind::Bool: return 1;
    case Kind::UInt: return bitsize() == 64 ? std::numeric_limits<int64_t>::max() : (int64_t{1} << bitsize()) - 1;
    case Kind::SInt: return bitsize() == 64 ? std::numeric_limits<int64_t>::max() : (int64_t{1} << (bitsize() - 1)) - 1;
    case Kind::Index: return std::numeric_limits<int64_t>::max();
    default: throw Error("max_int of non-integer dtype " + name());
  }
}

std::string_view scalar_name(ScalarType t) { return info(t).name; }

std::string DType::name() const {
  std::string s = info(scalar).name;
  if (count != 1) s += ".vec(" + std::to_string(count) + ")";
  switch (addrspace) {
    case AddrSpace::None: break;
    case AddrSpace::Global: s += "*"; break;
    case AddrSpace::Local: s += "[local]*"; break;
    case AddrSpace::Reg: s += "[reg]*"; break;
  }
  return s;
}

std::optional<DType> parse_dtype(std::string_view s) {
  DType t;
  auto strip = [&](std::string_view suffix) {
    if (s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix) {
      s.remove_suffix(suffix.size());
      return true;
    }
    return false;
  };
  if (strip("[local]*")) t.addrspace = AddrSpace::Local;
  else if (strip("[reg]*")) t.addrspace = AddrSpace::Reg;
  else if (strip("*")) t.addrspace = AddrSpace::Global;
  if (strip(")")) {
    size_t open = s.rfind(".vec(");
    if (open == std::string_view::npos) return std::nullopt;
    std::string_view digits = s.substr(open + 5);
    if (digits.empty() || digits.size() > 5) return std::nullopt;
    uint32_t n = 0;
    for (char c : digits) {
      if (c < '0' || c > '9') return std::nullopt;
      n = n * 10 + static_cast<uint32_t>(c - '0');
    }
    if (n < 1 || n > 65535) return std::nullopt;
    t.count = static_cast<uint16_t>(n);
    s = s.substr(0, open);
  }
  for (int i = 0; i < kScalarTypeCount; ++i)
    if (s == kInfo[i].name) {
      t.scalar = static_cast<ScalarType>(i);
      return t;
    }
  return std::nullopt;
}

DType least_upper_dtype(DType a, DType b) {
  if (a.is_ptr() || b.is_ptr() || a.count != b.count)
    throw Error("cannot promote " + a.name() + " with " + b.name() + ": only values of equal lane count promote");
  if (a.scalar == b.scalar) return a;
  if (a.is_index() || b.is_index()) {
    if (a.is_bool() || b.is_bool()) return dtypes::index.vec(a.count);
    throw Error("index math does not mix with " + (a.is_index() ? b : a).name() + ": cast explicitly");
  }
  if (a.is_void() || b.is_void()) throw Error("cannot promote void");
  uint32_t common = ancestors(a.scalar) & ancestors(b.scalar);
  const ScalarInfo* best = nullptr;
  int best_i = 0;
  for (int i = 0; i < kScalarTypeCount; ++i) {
    if (!(common >> i & 1)) continue;
    const ScalarInfo& c = kInfo[i];
    if (!best || std::tie(c.priority, c.bits) < std::tie(best->priority, best->bits)) best = &c, best_i = i;
  }
  DType r{static_cast<ScalarType>(best_i), a.count};
  // Two integers never meet in a narrow float: the observable rule is "ints that don't fit -> float".
  if (r.is_float() && !a.is_float() && !b.is_float()) return dtypes::default_float.vec(a.count);
  return r;
}

DType least_upper_float(DType t) { return t.is_float() ? t : dtypes::default_float.vec(t.count); }

DType sum_acc_dtype(DType t) {
  DType floor = t.is_unsigned() ? dtypes::uint32 : (t.is_int() || t.is_bool()) ? dtypes::int32 : dtypes::float32;
  if (t.is_index()) return t;
  return least_upper_dtype(t.element(), floor).vec(t.count);
}

// ---- conversions ---------------------------------------------------------------------------------

int64_t wrap_int(int64_t v, DType t) {
  const ScalarInfo& i = info(t.scalar);
  if (i.kind == Kind::Bool) return v != 0;
  if (i.kind == Kind::Index || i.bits == 64) return v;
  uint64_t mask = (uint64_t{1} << i.bits) - 1;
  uint64_t u = static_cast<uint64_t>(v) & mask;
  if (i.kind == Kind::SInt && (u >> (i.bits - 1)) & 1) u |= ~mask;
  return static_cast<int64_t>(u);
}

namespace {

// Round a non-negative finite double to an integer, ties to even.
double round_half_even(double q) {
  double f = std::floor(q);
  double diff = q - f;
  if (diff > 0.5) return f + 1;
  if (diff < 0.5) return f;
  return std::fmod(f, 2.0) == 0 ? f : f + 1;
}

struct Format {
  int ebits, mbits;
  bool has_inf;
  int bias() const { return (1 << (ebits - 1)) - 1; }
  int emin() const { return 1 - bias(); }
  // e4m3 (no inf) uses the all-ones exponent for numbers, except mantissa all-ones (NaN).
  int emax() const { return has_inf ? bias() : (1 << ebits) - 1 - bias(); }
  double max_finite() const {
    double top_mantissa = has_inf ? 2.0 - std::ldexp(1.0, -mbits) : 2.0 - std::ldexp(2.0, -mbits);
    return std::ldexp(top_mantissa, emax());
  }
};

Format format_of(DType t) {
  const ScalarInfo& i = info(t.scalar);
  if (i.kind != Kind::Float) throw Error("not a float dtype: " + t.name());
  return {i.ebits, i.mbits, i.has_inf};
}

// Rounds |a| (finite, > 0) to the format's precision. Result may exceed max_finite (overflow).
double round_magnitude(double a, const Format& f) {
  int e = std::ilogb(a);
  int q_exp = std::max(e, f.emin()) - f.mbits;  // exponent of one unit in the last place
  double q = std::ldexp(a, -q_exp);
  return std::ldexp(round_half_even(q), q_exp);
}

}  // namespace

double round_float(double v, DType t, bool saturate) {
  if (t.scalar == ScalarType::Double || std::isnan(v)) return v;
  if (t.scalar == ScalarType::Float && !saturate) return static_cast<double>(static_cast<float>(v));
  Format f = format_of(t);
  double mag = std::fabs(v);
  double sign = std::signbit(v) ? -1.0 : 1.0;
  if (mag == 0) return v;
  double r = std::isinf(mag) ? mag : round_magnitude(mag, f);
  if (r > f.max_finite()) {
    if (saturate) return sign * f.max_finite();
    return f.has_inf ? sign * INFINITY : std::copysign(NAN, sign);
  }
  return sign * r;
}

uint32_t float_to_bits(double v, DType t, bool saturate) {
  if (t.scalar == ScalarType::Float) return std::bit_cast<uint32_t>(static_cast<float>(round_float(v, t, saturate)));
  Format f = format_of(t);
  if (f.ebits + f.mbits + 1 > 16) throw Error("float_to_bits: no 32-bit encoding of " + t.name());
  uint32_t sign = std::signbit(v) ? 1u << (f.ebits + f.mbits) : 0;
  uint32_t exp_all = (1u << f.ebits) - 1, man_all = (1u << f.mbits) - 1;
  double r = round_float(v, t, saturate);
  if (std::isnan(r)) return sign | exp_all << f.mbits | (f.has_inf ? 1u << (f.mbits - 1) : man_all);
  if (std::isinf(r)) return sign | exp_all << f.mbits;
  double mag = std::fabs(r);
  if (mag == 0) return sign;
  int e = std::ilogb(mag);
  if (e < f.emin()) return sign | static_cast<uint32_t>(std::ldexp(mag, f.mbits - f.emin()));
  uint32_t man = static_cast<uint32_t>(std::ldexp(mag, f.mbits - e)) & man_all;
  return sign | static_cast<uint32_t>(e + f.bias()) << f.mbits | man;
}

double float_from_bits(uint32_t bits, DType t) {
  if (t.scalar == ScalarType::Float) return std::bit_cast<float>(bits);
  Format f = format_of(t);
  uint32_t man_all = (1u << f.mbits) - 1, exp_all = (1u << f.ebits) - 1;
  uint32_t man = bits & man_all, exp = (bits >> f.mbits) & exp_all;
  double sign = (bits >> (f.ebits + f.mbits)) & 1 ? -1.0 : 1.0;
  if (exp == exp_all) {
    if (f.has_inf) return man == 0 ? sign * INFINITY : std::copysign(NAN, sign);
    if (man == man_all) return std::copysign(NAN, sign);
  }
  if (exp == 0) return sign * std::ldexp(static_cast<double>(man), f.emin() - f.mbits);
  return sign * std::ldexp(static_cast<double>(man | (1u << f.mbits)), static_cast<int>(exp) - f.bias() - f.mbits);
}

int64_t float_to_int(double v, DType t) {
  if (t.is_bool()) return v != 0;  // NaN != 0 is true, as hardware's compare gives
  if (std::isnan(v)) return 0;
  double tv = std::trunc(v);
  if (t.is_unsigned() && t.bitsize() == 64) {
    if (tv <= 0) return 0;
    if (tv >= 18446744073709551616.0) return -1;  // UINT64_MAX as a bit pattern
    return static_cast<int64_t>(static_cast<uint64_t>(tv));
  }
  double lo = static_cast<double>(t.min_int()), hi = static_cast<double>(t.max_int());
  if (tv <= lo) return t.min_int();
  if (tv >= hi) return t.max_int();  // for 64-bit types hi rounds up to 2^63, so >= catches it
  return static_cast<int64_t>(tv);
}

double int_to_float(int64_t v, DType from, DType to) {
  bool negative = !from.is_unsigned() && v < 0;
  uint64_t mag = negative ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
  if (from.is_bool()) mag = v != 0, negative = false;
  // Converting the 64-bit magnitude to double rounds once (that is the answer for double). For the
  // narrower formats keep 53 bits plus a sticky bit instead, so their single rounding stays correct.
  if (to.scalar == ScalarType::Double) return negative ? -static_cast<double>(mag) : static_cast<double>(mag);
  int shift = 0;
  while (mag >> 53) {
    mag = (mag >> 1) | (mag & 1);
    ++shift;
  }
  double d = std::ldexp(static_cast<double>(mag), shift);
  return round_float(negative ? -d : d, to);
}

}  // namespace ugpu::ir
