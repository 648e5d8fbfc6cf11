// The PTX parser: module text to pre-decoded entries (emu/nv/ptx/ptx_ir.h). It accepts what LLVM's NVPTX
// backend emits (and the rest of the ISA the executor implements); anything else — a directive, an
// instruction, a modifier or a type it does not know — is an Error naming the PTX line.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <unordered_map>

#include "common/error.h"
#include "emu/nv/ptx/ptx_float.h"
#include "emu/nv/ptx/ptx_ir.h"

namespace ugpu::emu::nv {
namespace detail {

int bits(T t) {
  switch (t) {
    case T::Pred: return 1;
    case T::B8:
    case T::U8:
    case T::S8: return 8;
    case T::B16:
    case T::U16:
    case T::S16:
    case T::F16:
    case T::BF16: return 16;
    case T::B32:
    case T::U32:
    case T::S32:
    case T::F32:
    case T::F16x2:
    case T::BF16x2: return 32;
    case T::B64:
    case T::U64:
    case T::S64:
    case T::F64: return 64;
    default: return 0;
  }
}
const char* name(T t) {
  static const char* const names[] = {"",   "pred", "b8",  "b16", "b32", "b64",   "u8",   "u16",    "u32", "u64",
                                      "s8", "s16",  "s32", "s64", "f16", "f16x2", "bf16", "bf16x2", "f32", "f64"};
  return names[static_cast<int>(t)];
}
const char* name(Space s) {
  static const char* const names[] = {"generic", "global", "shared", "local", "param", "const"};
  return names[static_cast<int>(s)];
}

namespace {

T type_named(std::string_view s) {
  for (int i = 1; i <= static_cast<int>(T::F64); ++i)
    if (s == name(static_cast<T>(i))) return static_cast<T>(i);
  return T::None;
}

// ---- tokens -----------------------------------------------------------------------------------

struct Tok {
  enum Kind : uint8_t { Ident, Num, Str, Punct, End } kind = End;
  std::string_view s;
  int line = 0;
};

[[noreturn]] void fail(int line, const std::string& what) { throw Error("PTX line " + std::to_string(line) + ": " + what); }

std::vector<Tok> lex(std::string_view src) {
  std::vector<Tok> out;
  int line = 1;
  size_t i = 0;
  auto ident_char = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$' || c == '.'; };
  while (i < src.size()) {
    char c = src[i];
    if (c == '\n') {
      ++line, ++i;
      continue;
    }
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
      continue;
    }
    if (c == '/' && i + 1 < src.size() && src[i + 1] == '/') {
      while (i < src.size() && src[i] != '\n') ++i;
      continue;
    }
    if (c == '/' && i + 1 < src.size() && src[i + 1] == '*') {
      size_t end = src.find("*/", i + 2);
      if (end == std::string_view::npos) fail(line, "unterminated /* comment");
      for (size_t k = i; k < end; ++k) line += src[k] == '\n';
      i = end + 2;
      continue;
    }
    size_t start = i;
    Tok t;
    t.line = line;
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == '$' || c == '%' || c == '.') {
      ++i;
      while (i < src.size()) {
        if (ident_char(src[i])) ++i;
        else if (src[i] == ':' && i + 1 < src.size() && src[i + 1] == ':') i += 2;
        else break;
      }
      t.kind = Tok::Ident;
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      const bool prefixed = c == '0' && i + 1 < src.size() && std::strchr("xXfFdDbB", src[i + 1]);
      ++i;
      while (i < src.size()) {
        char d = src[i];
        if (std::isalnum(static_cast<unsigned char>(d)) || d == '.') ++i;
        else if ((d == '+' || d == '-') && !prefixed && (src[i - 1] == 'e' || src[i - 1] == 'E')) ++i;
        else break;
      }
      t.kind = Tok::Num;
    } else if (c == '"') {
      ++i;
      while (i < src.size() && src[i] != '"' && src[i] != '\n') ++i;
      if (i >= src.size() || src[i] != '"') fail(line, "unterminated string");
      ++i;
      t.kind = Tok::Str;
    } else if (std::strchr(",;:{}[]()<>+-!@|=", c)) {
      ++i;
      t.kind = Tok::Punct;
    } else {
      fail(line, std::string("unexpected character '") + c + "'");
    }
    t.s = src.substr(start, i - start);
    out.push_back(t);
  }
  Tok end;
  end.line = line;
  out.push_back(end);
  return out;
}

// ---- numbers ----------------------------------------------------------------------------------

struct Number {
  enum Kind { Int, F32Bits, F64Bits, Decimal } kind = Int;
  uint64_t bits = 0;  // Int: the value (two's complement when negative)
  double value = 0;   // Decimal
};

Number parse_number(const Tok& t, bool minus) {
  std::string_view s = t.s;
  Number n;
  auto hex = [&](std::string_view h, int digits) {
    uint64_t v = 0;
    if (h.size() != static_cast<size_t>(digits)) fail(t.line, "malformed number '" + std::string(s) + "'");
    for (char c : h) {
      int d = std::isdigit(static_cast<unsigned char>(c))    ? c - '0'
              : std::isxdigit(static_cast<unsigned char>(c)) ? (std::tolower(c) - 'a' + 10)
                                                             : -1;
      if (d < 0) fail(t.line, "malformed number '" + std::string(s) + "'");
      v = v << 4 | static_cast<uint64_t>(d);
    }
    return v;
  };
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'f' || s[1] == 'F')) {
    n.kind = Number::F32Bits, n.bits = hex(s.substr(2), 8);
    if (minus) n.bits ^= 0x80000000u;
    return n;
  }
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'd' || s[1] == 'D')) {
    n.kind = Number::F64Bits, n.bits = hex(s.substr(2), 16);
    if (minus) n.bits ^= uint64_t{1} << 63;
    return n;
  }
  if (s.find_first_of(".eE") != std::string_view::npos && !(s.size() > 1 && (s[1] == 'x' || s[1] == 'X'))) {
    std::string str(s);
    char* end = nullptr;
    double v = std::strtod(str.c_str(), &end);
    if (end != str.c_str() + str.size()) fail(t.line, "malformed number '" + str + "'");
    n.kind = Number::Decimal, n.value = minus ? -v : v;
    return n;
  }
  if (!s.empty() && (s.back() == 'U' || s.back() == 'u')) s.remove_suffix(1);
  int base = 10;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) base = 16, s.remove_prefix(2);
  else if (s.size() > 2 && s[0] == '0' && (s[1] == 'b' || s[1] == 'B')) base = 2, s.remove_prefix(2);
  else if (s.size() > 1 && s[0] == '0') base = 8, s.remove_prefix(1);
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v, base);
  if (ec != std::errc() || p != s.data() + s.size()) fail(t.line, "malformed number '" + std::string(t.s) + "'");
  n.bits = minus ? 0 - v : v;
  return n;
}

// The bits an immediate has as an operand of type `t`.
uint64_t immediate(const Number& n, T t, int line) {
  if (t == T::Pred) {  // any integer: nonzero is true (LLVM writes mov.pred %p, -1)
    if (n.kind != Number::Int) fail(line, "a predicate immediate is an integer");
    return n.bits != 0;
  }
  if (is_float(t)) {
    double v = 0;
    switch (n.kind) {
      case Number::Int: v = static_cast<double>(static_cast<int64_t>(n.bits)); break;
      case Number::F32Bits: v = static_cast<double>(std::bit_cast<float>(static_cast<uint32_t>(n.bits))); break;
      case Number::F64Bits: v = std::bit_cast<double>(n.bits); break;
      case Number::Decimal: v = n.value; break;
    }
    if (t == T::F64) return n.kind == Number::F64Bits ? n.bits : std::bit_cast<uint64_t>(v);
    if (t == T::F32 && n.kind == Number::F32Bits) return n.bits;
    const fp::Format& f = t == T::F32 ? fp::kF32 : (t == T::BF16 || t == T::BF16x2) ? fp::kBf16 : fp::kHalf;
    if (t == T::F16x2 || t == T::BF16x2) fail(line, "packed immediates are not supported");
    return fp::round_to(v, 0, f, kRN);
  }
  if (n.kind == Number::Decimal) fail(line, "a decimal floating-point literal is not an integer operand");
  if (n.kind == Number::F64Bits && bits(t) < 64) fail(line, "a 0d literal is 64 bits wide; the operand is ." + std::string(name(t)));
  return n.bits;
}

// ---- operands ---------------------------------------------------------------------------------

struct Opd {
  enum Kind { Reg, Imm, Sym, Addr, Vec, Sink, Pair } kind = Imm;
  std::string_view name, name2;  // register / symbol; Pair: the second predicate
  bool neg = false;              // !%p
  Number num;                    // Imm
  int64_t off = 0;               // Addr, Sym: the added offset
  bool has_base = false;         // Addr: name is set
  std::vector<Opd> elems;        // Vec
  int line = 0;
};

struct Var {
  Space space;
  uint32_t offset;
  bool dynamic = false;
};
struct Reg {
  bool pred;
  uint32_t index;  // slot, or predicate index
  int bits;
  int depth = 1;  // the braces it was declared in: 1 the entry's body, more a nested block `{ ... }`
};

struct SregName {
  const char* name;
  Sreg reg;
};
constexpr SregName kSregs[] = {
    {"%tid.x", Sreg::TidX},
    {"%tid.y", Sreg::TidY},
    {"%tid.z", Sreg::TidZ},
    {"%ntid.x", Sreg::NtidX},
    {"%ntid.y", Sreg::NtidY},
    {"%ntid.z", Sreg::NtidZ},
    {"%ctaid.x", Sreg::CtaidX},
    {"%ctaid.y", Sreg::CtaidY},
    {"%ctaid.z", Sreg::CtaidZ},
    {"%nctaid.x", Sreg::NctaidX},
    {"%nctaid.y", Sreg::NctaidY},
    {"%nctaid.z", Sreg::NctaidZ},
    {"%laneid", Sreg::Laneid},
    {"%warpid", Sreg::Warpid},
    {"%nwarpid", Sreg::Nwarpid},
    {"%smid", Sreg::Smid},
    {"%nsmid", Sreg::Nsmid},
    {"%gridid", Sreg::Gridid},
    {"%lanemask_eq", Sreg::LanemaskEq},
    {"%lanemask_le", Sreg::LanemaskLe},
    {"%lanemask_lt", Sreg::LanemaskLt},
    {"%lanemask_ge", Sreg::LanemaskGe},
    {"%lanemask_gt", Sreg::LanemaskGt},
    {"%total_smem_size", Sreg::TotalSmem},
    {"%dynamic_smem_size", Sreg::DynamicSmem},
    {"%cluster_ctaid.x", Sreg::ClusterCtaidX},
    {"%cluster_ctaid.y", Sreg::ClusterCtaidY},
    {"%cluster_ctaid.z", Sreg::ClusterCtaidZ},
    {"%cluster_nctaid.x", Sreg::ClusterNctaidX},
    {"%cluster_nctaid.y", Sreg::ClusterNctaidY},
    {"%cluster_nctaid.z", Sreg::ClusterNctaidZ},
    {"%clusterid.x", Sreg::ClusteridX},
    {"%clusterid.y", Sreg::ClusteridY},
    {"%clusterid.z", Sreg::ClusteridZ},
    {"%nclusterid.x", Sreg::NclusteridX},
    {"%nclusterid.y", Sreg::NclusteridY},
    {"%nclusterid.z", Sreg::NclusteridZ},
    {"%cluster_ctarank", Sreg::ClusterCtarank},
    {"%cluster_nctarank", Sreg::ClusterNctarank},
};

// Modifiers of one instruction, taken one by one; what is left over is an error.
class Mods {
 public:
  Mods(std::vector<std::string_view> m, std::string_view op, int line) : m_(std::move(m)), op_(op), line_(line) {}
  bool take(std::string_view s) {
    for (auto& x : m_)
      if (x == s) {
        x = {};
        return true;
      }
    return false;
  }
  template <size_t N>
  int take_any(const char* const (&names)[N]) {
    for (size_t i = 0; i < N; ++i)
      if (*names[i] && take(names[i])) return static_cast<int>(i);
    return -1;
  }
  T type() {
    for (auto& x : m_) {
      T t = type_named(x);
      if (t != T::None) {
        x = {};
        return t;
      }
    }
    fail(line_, std::string(op_) + ": the instruction type is missing");
  }
  std::optional<T> maybe_type() {
    for (auto& x : m_)
      if (T t = type_named(x); t != T::None) {
        x = {};
        return t;
      }
    return std::nullopt;
  }
  // Rounding modifiers: .rn .rz .rm .rp, or with `integral` .rni .rzi .rmi .rpi.
  uint8_t rounding(bool* integral = nullptr) {
    static const char* const f[] = {"rn", "rz", "rm", "rp"};
    static const char* const i[] = {"rni", "rzi", "rmi", "rpi"};
    int r = take_any(f);
    if (r >= 0) return static_cast<uint8_t>(r);
    if (integral) {
      r = take_any(i);
      if (r >= 0) {
        *integral = true;
        return static_cast<uint8_t>(r);
      }
    }
    return kNoRnd;
  }
  // Cache, eviction and ordering hints that do not change what a single thread sees.
  void hints() {
    for (auto& x : m_) {
      static const char* const ignored[] = {"weak",
                                            "volatile",
                                            "relaxed",
                                            "acquire",
                                            "release",
                                            "acq_rel",
                                            "sc",
                                            "cta",
                                            "gpu",
                                            "sys",
                                            "cluster",
                                            "ca",
                                            "cg",
                                            "cs",
                                            "lu",
                                            "cv",
                                            "wb",
                                            "wt",
                                            "nc",
                                            "L1::evict_normal",
                                            "L1::evict_unchanged",
                                            "L1::evict_first",
                                            "L1::evict_last",
                                            "L1::no_allocate",
                                            "L2::evict_normal",
                                            "L2::evict_first",
                                            "L2::evict_last",
                                            "L2::64B",
                                            "L2::128B",
                                            "L2::256B",
                                            "aligned",
                                            "uni",
                                            "noftz"};
      for (const char* s : ignored)
        if (x == s) x = {};
    }
  }
  void done() {
    for (auto x : m_)
      if (!x.empty()) fail(line_, std::string(op_) + ": unknown or unsupported modifier ." + std::string(x));
  }

 private:
  std::vector<std::string_view> m_;
  std::string_view op_;
  int line_;
};

constexpr uint32_t kTemp = 0x40000000u;    // constants and specials, renumbered after the registers
constexpr uint32_t kMaxRegisters = 65536;  // each costs 256 bytes per warp
constexpr uint32_t kSinkSlot = 0, kCarrySlot = 1, kFirstRegSlot = 2;
constexpr uint32_t kFalsePred = 0, kTruePred = 1, kFirstPred = 2;

class Parser {
 public:
  explicit Parser(std::string_view src) : toks_(lex(src)) {}

  std::shared_ptr<PtxModule> module() {
    auto mod = std::make_shared<PtxModule>();
    while (peek().kind != Tok::End) {
      const Tok& t = next();
      if (t.kind != Tok::Ident) fail(t.line, "expected a directive, found '" + std::string(t.s) + "'");
      if (t.s == ".version") {
        const Tok& v = next();
        if (v.kind != Tok::Num) fail(v.line, ".version needs a number");
      } else if (t.s == ".target") {
        bool sm = false;
        do {
          const Tok& a = next();
          if (a.kind != Tok::Ident) fail(a.line, ".target needs an architecture");
          if (a.s.starts_with("sm_")) sm = true;
          else if (a.s != "texmode_unified" && a.s != "texmode_independent" && a.s != "debug" && a.s != "map_f64_to_f32")
            fail(a.line, "unknown .target option " + std::string(a.s));
        } while (accept(","));
        if (!sm) fail(t.line, ".target names no sm_ architecture");
      } else if (t.s == ".address_size") {
        const Tok& a = next();
        if (a.s != "64") fail(a.line, "only .address_size 64 is supported");
      } else if (t.s == ".file" || t.s == ".loc") {
        skip_line(t.line);
      } else if (t.s == ".pragma") {
        skip_to_semicolon();
      } else if (t.s == ".visible" || t.s == ".extern" || t.s == ".weak" || t.s == ".common" || t.s == ".entry" || t.s == ".func" ||
                 t.s == ".shared" || t.s == ".global" || t.s == ".const" || t.s == ".local") {
        bool external = false;
        Tok d = t;
        while (d.s == ".visible" || d.s == ".extern" || d.s == ".weak" || d.s == ".common") {
          external |= d.s == ".extern";
          d = next();
        }
        if (d.s == ".entry") {
          entry(*mod);
        } else if (d.s == ".func") {
          fail(d.line, "device functions (.func) and calls are not supported by the executor");
        } else if (d.s == ".shared" || d.s == ".local") {
          variable(d.s == ".shared" ? Space::Shared : Space::Local, external, d.line, module_shared_, module_local_, module_vars_);
        } else if (d.s == ".global" || d.s == ".const") {
          data_variable(d.s == ".const", external, d.line);
        } else {
          fail(d.line, "unexpected '" + std::string(d.s) + "' after a linkage directive");
        }
      } else {
        fail(t.line, "unknown directive '" + std::string(t.s) + "'");
      }
    }
    if (mod->entries.empty()) fail(toks_.back().line, "the module has no .entry");
    finish_data(*mod);
    return mod;
  }

 private:
  // ---- token helpers
  const Tok& peek(size_t k = 0) const { return toks_[std::min(pos_ + k, toks_.size() - 1)]; }
  const Tok& next() {
    const Tok& t = toks_[pos_];
    if (t.kind == Tok::End) fail(t.line, "unexpected end of the module");
    ++pos_;
    return t;
  }
  bool is(const char* p, size_t k = 0) const { return peek(k).kind == Tok::Punct && peek(k).s == p; }
  bool accept(const char* p) {
    if (!is(p)) return false;
    ++pos_;
    return true;
  }
  void expect(const char* p) {
    if (!accept(p)) fail(peek().line, std::string("expected '") + p + "', found '" + std::string(peek().s) + "'");
  }
  uint64_t number() {
    const Tok& t = next();
    if (t.kind != Tok::Num) fail(t.line, "expected a number, found '" + std::string(t.s) + "'");
    Number n = parse_number(t, false);
    if (n.kind != Number::Int) fail(t.line, "expected an integer");
    return n.bits;
  }
  void skip_line(int line) {
    while (peek().kind != Tok::End && peek().line == line) ++pos_;
  }
  void skip_to_semicolon() {
    while (!is(";")) next();
    ++pos_;
  }

  // ---- declarations
  static uint32_t align_up(uint32_t v, uint32_t a) { return a ? (v + a - 1) / a * a : v; }

  // .shared/.local [.align N] .type name[n]...; (the directive already read)
  void variable(Space space, bool external, int line, uint32_t& top, uint32_t& local_top, std::unordered_map<std::string, Var>& vars) {
    uint32_t align = 0;
    T type = T::None;
    while (peek().kind == Tok::Ident && peek().s.starts_with(".")) {
      const Tok& d = next();
      if (d.s == ".align") align = static_cast<uint32_t>(number());
      else if ((type = type_named(d.s.substr(1))) == T::None) fail(d.line, "unknown modifier " + std::string(d.s) + " in a variable declaration");
    }
    if (type == T::None || type == T::Pred) fail(line, "a variable needs a type");
    const Tok& n = next();
    if (n.kind != Tok::Ident) fail(n.line, "expected a variable name");
    uint64_t count = 1;
    bool unsized = false;
    while (accept("[")) {
      if (accept("]")) {
        unsized = true;
        continue;
      }
      if (__builtin_mul_overflow(count, number(), &count)) fail(n.line, "variable " + std::string(n.s) + " is too large");
      expect("]");
    }
    if (is("=")) fail(n.line, "initialized " + std::string(name(space)) + " variables are not supported");
    if (data_vars_.count(std::string(n.s))) fail(n.line, "variable " + std::string(n.s) + " declared twice");
    expect(";");
    const uint32_t elem = static_cast<uint32_t>(bits(type) / 8);
    if (!align) align = elem;
    if (count * elem > (uint64_t{1} << 31)) fail(n.line, "variable " + std::string(n.s) + " is too large");
    uint32_t& cursor = space == Space::Shared ? top : local_top;
    Var v{space, 0, false};
    if (unsized || external) {
      if (space != Space::Shared || !unsized) fail(n.line, "only .extern .shared arrays of no size (dynamic shared memory) may be external");
      v.dynamic = true;
      v.offset = align;  // the alignment, until the static size is known
    } else {
      v.offset = align_up(cursor, align);
      if (v.offset + count * elem > (uint64_t{1} << 31)) fail(n.line, "the " + std::string(name(space)) + " variables are too large");
      cursor = v.offset + static_cast<uint32_t>(count * elem);
      if (space == Space::Shared && dynamic_used_) fail(n.line, "static .shared variables must be declared before dynamic shared memory is used");
    }
    if (!vars.emplace(std::string(n.s), v).second) fail(n.line, "variable " + std::string(n.s) + " declared twice");
  }

  // ---- module data: .global and .const variables

  static constexpr uint64_t kMaxDataBytes = uint64_t{1} << 32;
  struct DataVar {
    std::string name;
    bool constant;
    uint64_t offset, size, align;  // offset within its part (.const or .global)
  };
  struct PendingInit {
    DataInit init;  // offset within its variable
    uint32_t owner = 0;
    std::string sym;  // an address of this variable (resolved at the end of the module)
    int line = 0;
  };
  struct DataRef {
    size_t code, index;  // mod.code[code].data_constants[index]
    uint32_t var;
    int64_t addend;
  };
  struct InitTarget {
    uint32_t var;  // the variable being initialized
    T type;
    uint64_t elem;  // bytes per element
    std::string name;
  };

  // .global/.const [.align N] [.v2/.v4] .type name[n]... [= initializer]; (the directive already read).
  // Each part (.const, .global) is laid out in declaration order; finish_data puts them together.
  void data_variable(bool constant, bool external, int line) {
    const std::string space = constant ? ".const" : ".global";
    uint64_t align = 0;
    uint64_t vec = 1;
    T type = T::None;
    while (peek().kind == Tok::Ident && peek().s.starts_with(".")) {
      const Tok& d = next();
      if (d.s == ".align") {
        align = number();
        if (!align || (align & (align - 1)) || align > 4096) fail(d.line, ".align " + std::to_string(align) + " is not a power of two up to 4096");
      } else if (d.s == ".v2" || d.s == ".v4") {
        vec = d.s == ".v2" ? 2 : 4;
      } else if ((type = type_named(d.s.substr(1))) == T::None) {
        fail(d.line, "unknown or unsupported modifier " + std::string(d.s) + " in a " + space + " variable declaration");
      }
    }
    if (type == T::None || type == T::Pred) fail(line, "a " + space + " variable needs a type");
    const Tok& n = next();
    if (n.kind != Tok::Ident || n.s.starts_with("%")) fail(n.line, "expected a variable name, found '" + std::string(n.s) + "'");
    const std::string var_name(n.s);
    if (external) fail(n.line, ".extern " + space + " variable " + var_name + " lives in another module; the executor links no modules");
    if (data_vars_.count(var_name) || module_vars_.count(var_name)) fail(n.line, "variable " + var_name + " declared twice");
    std::vector<uint64_t> dims;  // 0: the size comes from the initializer (first dimension only)
    while (accept("[")) {
      if (accept("]")) {
        if (!dims.empty()) fail(n.line, "only the first dimension of " + var_name + " may be left open");
        dims.push_back(0);
        continue;
      }
      const uint64_t d = number();
      if (d == 0) fail(n.line, "array " + var_name + " has a dimension of 0");
      dims.push_back(d);
      expect("]");
    }
    if (vec > 1) dims.push_back(vec);
    const uint64_t elem = static_cast<uint64_t>(bits(type) / 8);
    DataVar v{var_name, constant, 0, 0, align ? align : elem * vec};
    const uint32_t index = static_cast<uint32_t>(dvars_.size());
    // Elements per index of the first dimension, and in all (once the first dimension is known).
    uint64_t inner = 1, count = 1;
    auto too_large = [&] { fail(n.line, "variable " + var_name + " is too large"); };
    for (size_t i = 1; i < dims.size(); ++i)
      if (__builtin_mul_overflow(inner, dims[i], &inner) || inner > kMaxDataBytes) too_large();
    if (!dims.empty() && dims[0] && (__builtin_mul_overflow(inner, dims[0], &count) || count > kMaxDataBytes)) too_large();
    if (accept("=")) {
      InitTarget target{index, type, elem, var_name};
      if (dims.empty()) {
        if (is("{")) fail(peek().line, "scalar variable " + var_name + " takes a single value, not a list");
        init_value(target, 0);
      } else {
        const uint64_t items = init_list(target, dims, 0, 0);
        if (dims[0] == 0) dims[0] = is_nested(dims) ? items : (items + inner - 1) / inner;
      }
    } else if (!dims.empty() && dims[0] == 0) {
      fail(n.line, "array " + var_name + " has no size and no initializer");
    }
    expect(";");
    if (!dims.empty() && (__builtin_mul_overflow(inner, dims[0], &count) || count > kMaxDataBytes)) too_large();
    if (count * elem > kMaxDataBytes) too_large();
    v.size = count * elem;
    uint64_t& top = constant ? const_top_ : global_top_;
    v.offset = (top + v.align - 1) / v.align * v.align;
    top = v.offset + v.size;
    if (const_top_ + global_top_ > kMaxDataBytes)
      fail(n.line, "the module's .global and .const variables take more than " + std::to_string(kMaxDataBytes >> 20) + " MiB");
    data_align_ = std::max(data_align_, v.align);
    dvars_.push_back(std::move(v));
    data_vars_.emplace(var_name, index);
  }

  // Whether an initializer for `dims` is written with a brace level per dimension ({{1, 2}, {3, 4}})
  // rather than flat ({1, 2, 3, 4}); decided by the token after the outer brace.
  bool is_nested(const std::vector<uint64_t>& dims) const { return dims.size() > 1 && nested_; }

  // One brace level `{...}` of an initializer for dimensions dims[level..], its first element being
  // element `base` of the variable. Inner levels are braces of their own, or the elements flat.
  // Returns how many items the level held.
  uint64_t init_list(const InitTarget& t, const std::vector<uint64_t>& dims, size_t level, uint64_t base) {
    const int line = peek().line;
    expect("{");
    const std::string& var = t.name;
    if (level == 0) nested_ = dims.size() > 1 && is("{");
    uint64_t stride = 1;
    for (size_t i = level + 1; i < dims.size(); ++i) stride *= dims[i];  // checked by the caller
    const bool nested = level + 1 < dims.size() && nested_;
    uint64_t cap = dims[level];  // 0: open
    if (!nested && cap) cap *= stride;
    uint64_t n = 0;
    do {
      if (cap && n >= cap)
        fail(peek().line, "the initializer of " + var + " is longer than the array (" + std::to_string(cap) + (nested ? " rows" : " elements") +
                              (level ? " at this level)" : ")"));
      if (nested) {
        if (!is("{")) fail(peek().line, "expected '{' for a row of " + var + ", found '" + std::string(peek().s) + "'");
        init_list(t, dims, level + 1, base + n * stride);
      } else {
        if (is("{")) fail(peek().line, "unexpected '{' in the initializer of " + var);
        init_value(t, base + n);
      }
      ++n;
    } while (accept(","));
    if (!accept("}"))
      fail(peek().line, "expected ',' or '}' in the initializer of " + var + " (begun on line " + std::to_string(line) + "), found '" +
                            std::string(peek().s) + "'");
    return n;
  }

  // One element's value: a number, or a variable's address — `tbl`, `generic(tbl)`, either `+ offset`,
  // or one byte of it, `0xff00(generic(tbl))` (LLVM writes pointers into .b8 arrays that way).
  void init_value(const InitTarget& t, uint64_t index) {
    PendingInit p;
    p.owner = t.var;
    p.line = peek().line;
    p.init.offset = index * t.elem;
    p.init.size = static_cast<uint8_t>(t.elem);
    const bool minus = accept("-");
    const Tok& tok = next();
    if (tok.kind == Tok::Num && is("(")) {  // a byte mask of an address
      Number mask = parse_number(tok, false);
      int byte = -1;
      for (int b = 0; b < 8 && mask.kind == Number::Int; ++b)
        if (mask.bits == uint64_t{0xff} << (8 * b)) byte = b;
      if (minus || byte < 0)
        fail(tok.line, "'" + std::string(tok.s) + "(...)' in an initializer: only a one-byte mask 0xff << 8k of an address is supported");
      expect("(");
      address_init(t, p);
      expect(")");
      p.init.byte = static_cast<int8_t>(byte);
    } else if (tok.kind == Tok::Num) {
      const Number num = parse_number(tok, minus);
      p.init.value = immediate(num, t.type, tok.line);
      if (!is_float(t.type) && t.elem < 8) {
        const uint64_t v = num.bits;
        const int b = static_cast<int>(t.elem * 8);
        const int64_t sv = static_cast<int64_t>(v);
        const bool fits = v < (uint64_t{1} << b) || (sv < 0 && sv >= -(int64_t{1} << (b - 1)));
        if (!fits) fail(tok.line, std::string(minus ? "-" : "") + std::string(tok.s) + " does not fit in ." + name(t.type));
      }
      if (p.init.value == 0) return;  // the image starts zeroed
    } else if (tok.kind == Tok::Ident && !minus) {
      --pos_;
      address_init(t, p);
    } else {
      fail(tok.line, "unexpected '" + std::string(tok.s) + "' in the initializer of " + t.name);
    }
    inits_.push_back(std::move(p));
  }
  // `sym`, `generic(sym)`, with `+ n` inside or after the parentheses.
  void address_init(const InitTarget& t, PendingInit& p) {
    if (is_float(t.type)) fail(peek().line, "a variable's address cannot initialize ." + std::string(name(t.type)) + " " + t.name);
    const Tok& s = next();
    if (s.kind != Tok::Ident) fail(s.line, "expected a variable name in the initializer of " + t.name + ", found '" + std::string(s.s) + "'");
    const bool generic = s.s == "generic" && accept("(");
    const Tok& sym = generic ? next() : s;
    if (sym.kind != Tok::Ident) fail(sym.line, "expected a variable name in generic(...), found '" + std::string(sym.s) + "'");
    p.sym = std::string(sym.s);
    auto offset = [&] {
      while (is("+") || is("-")) {
        const bool neg = next().s == "-";
        const Tok& o = next();
        if (o.kind != Tok::Num) fail(o.line, "expected an offset after '" + std::string(neg ? "-" : "+") + "', found '" + std::string(o.s) + "'");
        const Number num = parse_number(o, neg);
        if (num.kind != Number::Int) fail(o.line, "an address offset is an integer");
        p.init.value += num.bits;
      }
    };
    offset();
    if (generic) {
      expect(")");
      offset();
    }
  }

  // Puts the .const part first and the .global part after it (page-aligned), and gives every
  // address of a variable its place in the image.
  void finish_data(PtxModule& mod) {
    PtxData& d = mod.data;
    const uint64_t const_part = (const_top_ + 4095) / 4096 * 4096;
    for (const DataVar& v : dvars_) d.variables.push_back({v.name, v.constant, (v.constant ? 0 : const_part) + v.offset, v.size});
    d.const_bytes = const_part;
    d.bytes = dvars_.empty() ? 0 : const_part + global_top_;
    d.align = data_align_;
    for (PendingInit& p : inits_) {
      DataInit x = p.init;
      x.offset += d.variables[p.owner].offset;
      if (!p.sym.empty()) {
        auto it = data_vars_.find(p.sym);
        if (it == data_vars_.end())
          fail(p.line, "unknown symbol " + p.sym + " in the initializer of " + d.variables[p.owner].name + " (a .global or .const variable's name)");
        x.var = static_cast<int32_t>(it->second);
      }
      mod.data_init.push_back(x);
    }
    for (const DataRef& r : data_refs_) mod.code[r.code].data_constants[r.index].second = d.variables[r.var].offset + static_cast<uint64_t>(r.addend);
  }

  // A constant slot holding the address of variable `var` plus `addend` (relocated at launch).
  uint32_t data_constant(uint32_t var, int64_t addend) {
    const auto key = std::make_pair(var, addend);
    if (auto it = data_slots_.find(key); it != data_slots_.end()) return it->second;
    const uint32_t s = kTemp + temps_++;
    data_slots_.emplace(key, s);
    data_refs_.push_back({entry_index_, code_.data_constants.size(), var, addend});
    code_.data_constants.push_back({s, 0});
    return s;
  }
  const uint32_t* data_var(std::string_view n) const {
    auto it = data_vars_.find(std::string(n));
    return it == data_vars_.end() ? nullptr : &it->second;
  }

  void entry(PtxModule& mod) {
    const Tok& n = next();
    if (n.kind != Tok::Ident) fail(n.line, ".entry needs a name");
    PtxEntry e;
    e.name = std::string(n.s);
    for (const PtxEntry& x : mod.entries)
      if (x.name == e.name) fail(n.line, "entry " + e.name + " defined twice");
    params_.clear();
    if (accept("(")) {
      uint32_t cursor = 0;
      while (!accept(")")) {
        const Tok& p = next();
        if (p.s != ".param") fail(p.line, "expected .param in the parameter list");
        uint32_t align = 0;
        T type = T::None;
        bool ptr = false;
        while (peek().kind == Tok::Ident && peek().s.starts_with(".")) {
          const Tok& d = next();
          if (d.s == ".align") {
            uint32_t a = static_cast<uint32_t>(number());
            if (!ptr) align = a;
          } else if (d.s == ".ptr") {
            ptr = true;
          } else if (ptr && (d.s == ".global" || d.s == ".shared" || d.s == ".const" || d.s == ".local")) {
          } else if ((type = type_named(d.s.substr(1))) == T::None || type == T::Pred) {
            fail(d.line, "unknown modifier " + std::string(d.s) + " in a parameter");
          }
        }
        if (type == T::None) fail(p.line, "a parameter needs a type");
        const Tok& pn = next();
        if (pn.kind != Tok::Ident) fail(pn.line, "expected a parameter name");
        uint64_t count = 1;
        while (accept("[")) {
          count *= number();
          expect("]");
        }
        const uint32_t elem = static_cast<uint32_t>(std::max(1, bits(type) / 8));
        if (!align) align = elem;
        PtxParam param{std::string(pn.s), align_up(cursor, align), static_cast<uint32_t>(count * elem), align};
        cursor = param.offset + param.size;
        if (!params_.emplace(param.name, param.offset).second) fail(pn.line, "parameter " + param.name + " declared twice");
        e.params.push_back(param);
        if (!accept(",")) {
          expect(")");
          break;
        }
      }
      e.param_bytes = cursor;
    }
    // Performance directives between the parameters and the body.
    while (!is("{")) {
      const Tok& d = next();
      if (d.s == ";") return;  // a declaration only
      static const char* const perf[] = {".maxntid",        ".reqntid",           ".minnctapersm", ".maxnctapersm",    ".maxnreg",
                                         ".maxclusterrank", ".reqnctapercluster", ".noreturn",     ".explicitcluster", ".blocksareclusters"};
      bool known = false;
      for (const char* s : perf) known |= d.s == s;
      if (d.s == ".pragma") {
        skip_to_semicolon();
        continue;
      }
      if (!known) fail(d.line, "unknown directive '" + std::string(d.s) + "' before the body of " + e.name);
      while (peek().kind == Tok::Num || is(",")) next();
    }
    code_ = Code{};
    code_.name = e.name;
    entry_index_ = mod.code.size();
    data_slots_.clear();
    regs_.clear();
    consts_.clear();
    labels_.clear();
    fixups_.clear();
    temps_ = 0;
    next_slot_ = kFirstRegSlot;
    next_pred_ = kFirstPred;
    entry_vars_.clear();
    entry_shared_ = module_shared_;
    entry_local_ = module_local_;
    dynamic_used_ = false;
    body();
    // Falling off the end of the body returns.
    Inst end;
    end.op = Opc::Exit;
    end.flow = Flow::Exit;
    end.line = last_line_;
    code_.insts.push_back(end);
    code_.text.push_back("(end of " + e.name + ")");
    for (const auto& [i, label, line] : fixups_) {
      auto it = labels_.find(label);
      if (it == labels_.end()) fail(line, "branch to an undefined label " + label);
      code_.insts[i].target = it->second;
    }
    // Constants and special registers go after the registers, which are zeroed per block.
    code_.reg_slots = next_slot_;
    code_.slots = next_slot_ + temps_;
    auto remap = [&](uint32_t& s) {
      if (s != kNone && s >= kTemp) s = s - kTemp + next_slot_;
    };
    for (Inst& in : code_.insts) {
      for (uint32_t& s : in.d) remap(s);
      for (uint32_t& s : in.s) remap(s);
      remap(in.base);
    }
    for (auto& [s, v] : code_.constants) remap(s);
    for (auto& [s, v] : code_.data_constants) remap(s);
    for (auto& [s, r] : code_.specials) remap(s);
    code_.preds = next_pred_;
    code_.const_preds = {{kFalsePred, false}, {kTruePred, true}};
    code_.sink_slot = kSinkSlot;
    code_.cc_slot = kCarrySlot;
    e.static_shared_bytes = entry_shared_;
    e.local_bytes = entry_local_;
    mod.entries.push_back(std::move(e));
    mod.code.push_back(std::move(code_));
  }

  // A nested block `{ .reg .b16 tmp; ... }` scopes the registers declared in it: they hide any of
  // the same name outside until its `}` (older LLVMs extract halves this way).
  void body() {
    expect("{");
    depth_ = 1;
    std::vector<size_t> scopes;  // where each open block's entries in shadowed_ begin
    shadowed_.clear();
    while (depth_ > 0) {
      const Tok& t = peek();
      last_line_ = t.line;
      if (t.kind == Tok::End) fail(t.line, "unexpected end of the module inside an entry");
      if (accept("{")) {
        ++depth_;
        scopes.push_back(shadowed_.size());
        continue;
      }
      if (accept("}")) {
        if (--depth_ > 0) {
          for (size_t i = shadowed_.size(); i-- > scopes.back();) {
            auto& [name, outer] = shadowed_[i];
            if (outer) regs_[name] = *outer;
            else regs_.erase(name);
          }
          shadowed_.resize(scopes.back());
          scopes.pop_back();
        }
        continue;
      }
      if (t.kind == Tok::Ident && t.s == ".reg") {
        next();
        registers();
        continue;
      }
      if (t.kind == Tok::Ident && (t.s == ".shared" || t.s == ".local")) {
        next();
        variable(t.s == ".shared" ? Space::Shared : Space::Local, false, t.line, entry_shared_, entry_local_, entry_vars_);
        continue;
      }
      if (t.kind == Tok::Ident && t.s == ".extern") {
        next();
        const Tok& d = next();
        if (d.s != ".shared") fail(d.line, "only .extern .shared may be declared inside an entry");
        variable(Space::Shared, true, d.line, entry_shared_, entry_local_, entry_vars_);
        continue;
      }
      if (t.kind == Tok::Ident && t.s == ".pragma") {
        next();
        skip_to_semicolon();
        continue;
      }
      if (t.kind == Tok::Ident && (t.s == ".loc" || t.s == ".file")) {
        next();
        skip_line(t.line);
        continue;
      }
      if (t.kind == Tok::Ident && t.s.starts_with(".")) fail(t.line, "unknown or unsupported directive '" + std::string(t.s) + "' in an entry");
      if (t.kind == Tok::Ident && is(":", 1)) {
        std::string label(t.s);
        pos_ += 2;
        if (!labels_.emplace(label, static_cast<uint32_t>(code_.insts.size())).second) fail(t.line, "label " + label + " defined twice");
        continue;
      }
      instruction();
    }
  }

  void registers() {
    const Tok& ty = next();
    if (ty.s == ".v2" || ty.s == ".v4") fail(ty.line, "vector registers are not supported");
    T t = ty.s.starts_with(".") ? type_named(ty.s.substr(1)) : T::None;
    if (t == T::None) fail(ty.line, "unknown register type '" + std::string(ty.s) + "'");
    do {
      const Tok& n = next();
      if (n.kind != Tok::Ident || n.s.starts_with(".")) fail(n.line, "expected a register name, found '" + std::string(n.s) + "'");
      uint64_t count = 0;
      bool ranged = false;
      if (accept("<")) {
        count = number();
        expect(">");
        ranged = true;
        if (count > kMaxRegisters) fail(n.line, "too many registers");
      }
      auto add = [&](const std::string& r) {
        if (next_slot_ + next_pred_ > kMaxRegisters) fail(n.line, "more than " + std::to_string(kMaxRegisters) + " registers in one entry");
        Reg reg{t == T::Pred, t == T::Pred ? next_pred_++ : next_slot_++, bits(t), depth_};
        auto it = regs_.find(r);
        if (it != regs_.end() && it->second.depth == depth_) fail(n.line, "register " + r + " declared twice");
        if (depth_ > 1) shadowed_.push_back({r, it == regs_.end() ? std::nullopt : std::optional<Reg>(it->second)});
        regs_[r] = reg;
      };
      if (ranged)
        for (uint64_t i = 0; i < count; ++i) add(std::string(n.s) + std::to_string(i));
      else add(std::string(n.s));
    } while (accept(","));
    expect(";");
  }

  // ---- operands
  // PTX nests operands one level at most ({a, b}, !p); a hostile module nesting them thousands deep
  // is refused before the recursion exhausts the stack.
  int operand_depth_ = 0;
  Opd operand() {
    struct Depth {
      int& d;
      explicit Depth(int& x) : d(++x) {}
      ~Depth() { --d; }
    } depth(operand_depth_);
    if (operand_depth_ > 8) fail(peek().line, "operands nested too deeply");
    Opd o;
    o.line = peek().line;
    if (accept("[")) {
      o.kind = Opd::Addr;
      if (peek().kind == Tok::Ident) {
        o.name = next().s;
        o.has_base = true;
      } else {
        bool minus = accept("-");
        const Tok& t = next();
        if (t.kind != Tok::Num) fail(t.line, "malformed address");
        o.off = static_cast<int64_t>(parse_number(t, minus).bits);
      }
      while (!accept("]")) {
        bool minus = false;
        if (accept("+")) minus = accept("-");
        else if (accept("-")) minus = true;
        else fail(peek().line, "malformed address: unexpected '" + std::string(peek().s) + "'");
        const Tok& t = next();
        if (t.kind != Tok::Num) fail(t.line, "malformed address offset");
        Number n = parse_number(t, minus);
        if (n.kind != Number::Int) fail(t.line, "an address offset is an integer");
        o.off += static_cast<int64_t>(n.bits);
      }
      return o;
    }
    if (accept("{")) {
      o.kind = Opd::Vec;
      do o.elems.push_back(operand());
      while (accept(","));
      expect("}");
      return o;
    }
    if (accept("!")) {
      o = operand();
      if (o.kind != Opd::Reg) fail(o.line, "'!' negates a predicate register only");
      o.neg = true;
      return o;
    }
    const bool minus = accept("-");
    const Tok& t = next();
    if (t.kind == Tok::Num) {
      o.kind = Opd::Imm;
      o.num = parse_number(t, minus);
      return o;
    }
    if (minus || t.kind != Tok::Ident) fail(t.line, "unexpected '" + std::string(t.s) + "' in an operand");
    o.name = t.s;
    // A register (named with % by convention, not necessarily), the sink, or a pair of predicates p|q
    // (either may be `_`).
    if (t.s.starts_with("%") || t.s == "_" || find_reg(t.s)) {
      o.kind = t.s == "_" ? Opd::Sink : Opd::Reg;
      if (accept("|")) {
        o.kind = Opd::Pair;
        const Tok& q = next();
        if (q.kind != Tok::Ident) fail(q.line, "expected a predicate after '|', found '" + std::string(q.s) + "'");
        o.name2 = q.s;
      }
      return o;
    }
    o.kind = Opd::Sym;
    if (is("+") && peek(1).kind == Tok::Num) {
      next();
      o.off = static_cast<int64_t>(parse_number(next(), false).bits);
    }
    return o;
  }

  const Reg* find_reg(std::string_view n) const {
    auto it = regs_.find(std::string(n));
    return it == regs_.end() ? nullptr : &it->second;
  }
  std::optional<Sreg> special(std::string_view n) const {
    for (const SregName& s : kSregs)
      if (n == s.name) return s.reg;
    return std::nullopt;
  }
  uint32_t constant(uint64_t v) {
    auto it = consts_.find(v);
    if (it != consts_.end()) return it->second;
    uint32_t s = kTemp + temps_++;
    consts_.emplace(v, s);
    code_.constants.push_back({s, v});
    return s;
  }
  const Var* var(std::string_view n) const {
    auto it = entry_vars_.find(std::string(n));
    if (it != entry_vars_.end()) return &it->second;
    it = module_vars_.find(std::string(n));
    return it == module_vars_.end() ? nullptr : &it->second;
  }
  // The offset of a variable in its space (dynamic shared memory starts after the static).
  uint32_t var_offset(const Var& v) {
    if (!v.dynamic) return v.offset;
    dynamic_used_ = true;
    return align_up(entry_shared_, v.offset);
  }

  // A value operand read as type t: register, special register, immediate, or the address of a
  // variable or parameter.
  uint32_t src(const Opd& o, T t) {
    switch (o.kind) {
      case Opd::Reg: {
        if (const Reg* r = find_reg(o.name)) {
          if (r->pred) fail(o.line, "predicate " + std::string(o.name) + " used where a ." + name(t) + " value is expected");
          if (r->bits < bits(t))
            fail(o.line, "register " + std::string(o.name) + " (" + std::to_string(r->bits) + " bits) is narrower than the ." + name(t) + " operand");
          return r->index;
        }
        if (auto s = special(o.name)) {
          for (const auto& [slot, reg] : code_.specials)
            if (reg == *s) return slot;
          uint32_t slot = kTemp + temps_++;
          code_.specials.push_back({slot, *s});
          return slot;
        }
        if (o.name == "%clock" || o.name == "%clock64" || o.name == "%globaltimer") fail(o.line, std::string(o.name) + " can only be read by mov");
        fail(o.line, "undeclared register " + std::string(o.name));
      }
      case Opd::Imm: return constant(immediate(o.num, t, o.line));
      case Opd::Sym: {
        if (const Var* v = var(o.name)) return constant(var_offset(*v) + static_cast<uint64_t>(o.off));
        if (const uint32_t* d = data_var(o.name)) return data_constant(*d, o.off);
        auto p = params_.find(std::string(o.name));
        if (p != params_.end()) return constant(p->second + static_cast<uint64_t>(o.off));
        fail(o.line, "unknown symbol " + std::string(o.name));
      }
      default: fail(o.line, "expected a register or an immediate");
    }
  }
  uint32_t dst(const Opd& o, T t) {
    if (o.kind == Opd::Sink) return kSinkSlot;
    if (o.kind != Opd::Reg) fail(o.line, "the destination must be a register");
    const Reg* r = find_reg(o.name);
    if (!r)
      fail(o.line, special(o.name) ? "special register " + std::string(o.name) + " is read-only" : "undeclared register " + std::string(o.name));
    if (r->pred) fail(o.line, "predicate " + std::string(o.name) + " used where a ." + name(t) + " register is expected");
    if (r->bits < bits(t))
      fail(o.line, "register " + std::string(o.name) + " (" + std::to_string(r->bits) + " bits) is narrower than the ." + name(t) + " result");
    return r->index;
  }
  uint32_t pred_of(std::string_view n, int line) {
    const Reg* r = find_reg(n);
    if (!r) fail(line, "undeclared register " + std::string(n));
    if (!r->pred) fail(line, std::string(n) + " is not a predicate");
    return r->index;
  }
  uint32_t pair_pred(std::string_view n, int line) { return n == "_" ? kNone : pred_of(n, line); }
  uint32_t psrc(const Opd& o) {
    if (o.kind == Opd::Imm) return immediate(o.num, T::Pred, o.line) ? kTruePred : kFalsePred;
    if (o.kind != Opd::Reg) fail(o.line, "expected a predicate");
    return pred_of(o.name, o.line);
  }
  uint32_t pdst(const Opd& o) {
    if (o.kind == Opd::Sink) return kNone;
    if (o.kind != Opd::Reg) fail(o.line, "expected a predicate destination");
    return pred_of(o.name, o.line);
  }
  // An address operand: register base (its width) + offset, or a variable / parameter + offset.
  void address(Inst& in, const Opd& o, Space space) {
    if (o.kind != Opd::Addr) fail(o.line, "expected an address [...]");
    in.offset = o.off;
    if (!o.has_base) return;
    if (const Reg* r = find_reg(o.name)) {
      if (r->pred || r->bits < 32) fail(o.line, "register " + std::string(o.name) + " cannot hold an address");
      in.base = r->index;
      in.addr_bits = static_cast<uint8_t>(r->bits);
      return;
    }
    if (const Var* v = var(o.name)) {
      if (v->space != space)
        fail(o.line, std::string(name(v->space)) + " variable " + std::string(o.name) + " accessed as ." + name(space) + " (give the state space)");
      in.offset += var_offset(*v);
      return;
    }
    if (const uint32_t* d = data_var(o.name)) {  // the variable's address, relocated at launch, as the base
      const DataVar& v = dvars_[*d];
      const Space vs = v.constant ? Space::Const : Space::Global;
      if (space != vs && space != Space::Generic)
        fail(o.line, std::string(name(vs)) + " variable " + std::string(o.name) + " accessed as ." + name(space) + " (give the state space)");
      in.base = data_constant(*d, 0);
      in.addr_bits = 64;
      return;
    }
    auto p = params_.find(std::string(o.name));
    if (p != params_.end()) {
      if (space != Space::Param) fail(o.line, "parameter " + std::string(o.name) + " is read with ld.param");
      in.offset += p->second;
      return;
    }
    fail(o.line, "unknown symbol " + std::string(o.name) + " in an address");
  }

  // ---- instructions
  void instruction() {
    const Tok& first = peek();
    const char* begin = first.s.data();
    Inst in;
    in.line = first.line;
    if (accept("@")) {
      bool neg = accept("!");
      const Tok& p = next();
      in.guard = pred_of(p.s, p.line);
      in.guard_neg = neg;
    }
    const Tok& op = next();
    if (op.kind != Tok::Ident) fail(op.line, "expected an instruction, found '" + std::string(op.s) + "'");
    std::vector<std::string_view> parts;
    for (size_t s = 0;;) {
      size_t dot = op.s.find('.', s);
      // "::" inside a modifier (.shared::cta) is not a separator
      parts.push_back(op.s.substr(s, dot == std::string_view::npos ? std::string_view::npos : dot - s));
      if (dot == std::string_view::npos) break;
      s = dot + 1;
    }
    std::vector<Opd> ops;
    if (!is(";")) {
      do ops.push_back(operand());
      while (accept(","));
    }
    const Tok& semi = peek();
    if (!accept(";")) fail(semi.line, "expected ';' after " + std::string(op.s) + ", found '" + std::string(semi.s) + "'");
    const char* end = semi.s.data();
    std::string text;
    for (const char* c = begin; c < end; ++c) {
      if (std::isspace(static_cast<unsigned char>(*c))) {
        if (!text.empty() && text.back() != ' ') text += ' ';
      } else {
        text += *c;
      }
    }
    while (!text.empty() && text.back() == ' ') text.pop_back();
    std::string_view base = parts[0];
    Mods mods({parts.begin() + 1, parts.end()}, op.s, op.line);
    build(in, base, mods, ops, op.s);
    code_.insts.push_back(in);
    code_.text.push_back(std::move(text));
  }

  void arity(const std::vector<Opd>& ops, size_t n, std::string_view op, int line) {
    if (ops.size() != n) fail(line, std::string(op) + " takes " + std::to_string(n) + " operands, not " + std::to_string(ops.size()));
  }
  void bind(Inst& in, std::string_view op, bool mem) {
    std::string why = mem ? bind_mem(in) : bind_alu(in);
    if (!why.empty()) fail(in.line, std::string(op) + ": " + why);
  }

  // ---- instruction builders
  //
  // A builder turns one mnemonic's modifiers and operands into `in`. The mnemonics of one family share a builder, which
  // tells them apart by `base` (the mnemonic); `op` is the whole opcode as written (add.cc.u32), for error messages.
  using Builder = void (Parser::*)(Inst& in, std::string_view base, Mods& m, const std::vector<Opd>& ops, std::string_view op);
  struct Mnemonic {
    std::string_view name;
    Builder fn;
  };

  // Looks the mnemonic up and runs its builder; an unknown mnemonic is an error naming the whole opcode.
  void build(Inst& in, std::string_view base, Mods& m, const std::vector<Opd>& ops, std::string_view op) {
    // Every instruction the parser accepts. Sorted by name, so a binary search finds the builder; a row per mnemonic
    // (not per family) so that this is the one list of what exists.
    static constexpr Mnemonic kMnemonics[] = {
        {"abs", &Parser::abs_neg},
        {"activemask", &Parser::activemask},
        {"add", &Parser::add_sub},
        {"addc", &Parser::add_sub},
        {"and", &Parser::logic},
        {"atom", &Parser::atomic},
        {"bar", &Parser::barrier},
        {"barrier", &Parser::barrier},
        {"bfe", &Parser::bfe},
        {"bfi", &Parser::bfi},
        {"bfind", &Parser::bfind},
        {"bmsk", &Parser::bmsk_szext},
        {"bra", &Parser::branch},
        {"brev", &Parser::brev},
        {"brkpt", &Parser::trap},
        {"brx", &Parser::branch},
        {"clz", &Parser::popc_clz},
        {"cnot", &Parser::logic},
        {"copysign", &Parser::copysign},
        {"cos", &Parser::sfu},
        {"cvt", &Parser::cvt},
        {"cvta", &Parser::cvta},
        {"div", &Parser::div_rem},
        {"dp2a", &Parser::dp4a_dp2a},
        {"dp4a", &Parser::dp4a_dp2a},
        {"ex2", &Parser::sfu},
        {"exit", &Parser::ret_exit},
        {"fence", &Parser::fence},
        {"fma", &Parser::fma},
        {"ld", &Parser::memory},
        {"ldu", &Parser::memory},
        {"lg2", &Parser::sfu},
        {"lop3", &Parser::lop3},
        {"mad", &Parser::mul_mad},
        {"mad24", &Parser::mul24_mad24},
        {"max", &Parser::min_max},
        {"membar", &Parser::fence},
        {"min", &Parser::min_max},
        {"mma", &Parser::mma},
        {"mov", &Parser::mov},
        {"mul", &Parser::mul_mad},
        {"mul24", &Parser::mul24_mad24},
        {"nanosleep", &Parser::nop_hint},
        {"neg", &Parser::abs_neg},
        {"not", &Parser::logic},
        {"or", &Parser::logic},
        {"pmevent", &Parser::nop_hint},
        {"popc", &Parser::popc_clz},
        {"prefetch", &Parser::prefetch},
        {"prefetchu", &Parser::prefetch},
        {"prmt", &Parser::prmt},
        {"rcp", &Parser::sfu},
        {"red", &Parser::atomic},
        {"redux", &Parser::redux},
        {"rem", &Parser::div_rem},
        {"ret", &Parser::ret_exit},
        {"rsqrt", &Parser::sfu},
        {"sad", &Parser::sad},
        {"selp", &Parser::selp},
        {"set", &Parser::setp_set},
        {"setp", &Parser::setp_set},
        {"shf", &Parser::shf},
        {"shfl", &Parser::shfl},
        {"shl", &Parser::shl_shr},
        {"shr", &Parser::shl_shr},
        {"sin", &Parser::sfu},
        {"slct", &Parser::slct},
        {"sqrt", &Parser::sfu},
        {"st", &Parser::memory},
        {"sub", &Parser::add_sub},
        {"subc", &Parser::add_sub},
        {"szext", &Parser::bmsk_szext},
        {"tanh", &Parser::sfu},
        {"testp", &Parser::testp},
        {"trap", &Parser::trap},
        {"vote", &Parser::vote},
        {"xor", &Parser::logic},
    };
    // Strictly increasing: a row out of order would be missed by the search, a repeated name would hide one builder.
    static_assert(std::ranges::adjacent_find(kMnemonics, std::ranges::greater_equal{}, &Mnemonic::name) == std::ranges::end(kMnemonics),
                  "kMnemonics must be sorted by name, each name once");
    const Mnemonic* row = std::ranges::lower_bound(kMnemonics, base, {}, &Mnemonic::name);
    if (row == std::ranges::end(kMnemonics) || row->name != base) fail(in.line, "unknown or unsupported instruction '" + std::string(op) + "'");
    (this->*row->fn)(in, base, m, ops, op);
  }

  // Plain n-source ALU forms: d, a[, b[, c[, e]]] of one type.
  void alu(Inst& in, Mods& m, const std::vector<Opd>& ops, std::string_view op, Opc opc, size_t nsrc, T dt, T st) {
    arity(ops, nsrc + 1, op, in.line);
    in.op = opc;
    in.d[0] = dst(ops[0], dt);
    for (size_t i = 0; i < nsrc; ++i) in.s[i] = src(ops[i + 1], st);
    m.done();
    bind(in, op, false);
  }
  static void ftz_sat(Inst& in, Mods& m) {
    if (m.take("ftz")) in.flags |= kFtz;
    if (m.take("sat")) in.flags |= kSat;
  }

  // ---- integer and floating-point arithmetic
  void add_sub(Inst& in, std::string_view base, Mods& m, const std::vector<Opd>& ops, std::string_view op) {
    in.op = base[0] == 'a' ? Opc::Add : Opc::Sub;
    if (base.size() == 4) in.flags |= kCarryIn;  // addc, subc
    if (m.take("cc")) in.flags |= kCC;
    in.rnd = m.rounding();
    ftz_sat(in, m);
    in.type = m.type();
    if (in.flags & (kCC | kCarryIn)) {
      arity(ops, 3, op, in.line);
      in.d[0] = dst(ops[0], in.type);
      in.s[0] = src(ops[1], in.type), in.s[1] = src(ops[2], in.type), in.s[2] = kCarrySlot;
      m.done();
      bind(in, op, false);
      return;
    }
    alu(in, m, ops, op, in.op, 2, in.type, in.type);
  }
  void mul_mad(Inst& in, std::string_view base, Mods& m, const std::vector<Opd>& ops, std::string_view op) {
    const int line = in.line;
    const bool mad = base == "mad";
    static const char* const modes[] = {"lo", "hi", "wide"};
    int mode = m.take_any(modes);
    in.rnd = m.rounding();
    ftz_sat(in, m);
    in.type = m.type();
    if (is_float(in.type)) {
      if (mode >= 0) fail(line, std::string(op) + ": ." + modes[mode] + " is for integers");
      if (mad && in.rnd == kNoRnd) in.rnd = kRN;
      return alu(in, m, ops, op, mad ? Opc::Mad : Opc::Mul, mad ? 3 : 2, in.type, in.type);
    }
    if (mode < 0) fail(line, std::string(op) + ": integer " + std::string(base) + " needs .lo, .hi or .wide");
    const T wide = bits(in.type) == 16 ? (is_signed(in.type) ? T::S32 : T::U32) : (is_signed(in.type) ? T::S64 : T::U64);
    if (mode == 2) {
      if (bits(in.type) > 32) fail(line, std::string(op) + ": .wide takes 16- or 32-bit operands");
      arity(ops, mad ? 4 : 3, op, line);
      in.op = mad ? Opc::MadWide : Opc::MulWide;
      in.d[0] = dst(ops[0], wide);
      in.s[0] = src(ops[1], in.type), in.s[1] = src(ops[2], in.type);
      if (mad) in.s[2] = src(ops[3], wide);
      m.done();
      return bind(in, op, false);
    }
    alu(in, m, ops, op, mad ? (mode == 0 ? Opc::Mad : Opc::MadHi) : (mode == 0 ? Opc::Mul : Opc::MulHi), mad ? 3 : 2, in.type, in.type);
  }
  void mul24_mad24(Inst& in, std::string_view base, Mods& m, const std::vector<Opd>& ops, std::string_view op) {
    const bool mad = base == "mad24";
    const bool hi = m.take("hi");
    if (!hi && !m.take("lo")) fail(in.line, std::string(op) + " needs .lo or .hi");
    in.type = m.type();
    alu(in, m, ops, op, mad ? (hi ? Opc::Mad24Hi : Opc::Mad24Lo) : (hi ? Opc::Mul24Hi : Opc::Mul24Lo), mad ? 3 : 2, in.type, in.type);
  }
  void sad(Inst& in, std::string_view, Mods& m, const std::vector<Opd>& ops, std::string_view op) {
    in.type = m.type();
    alu(in, m, ops, op, Opc::Sad, 3, in.type, in.type);
  }
  void div_rem(Inst& in, std::string_view base, Mods& m, const std::vector<Opd>& ops, std::string_view op) {
    in.rnd = m.rounding();
    if (m.take("approx")) in.flags |= kApprox;
    if (m.take("full")) in.flags |= kApprox;
    ftz_sat(in, m);
    in.type = m.type();
    if (base == "div" && is_float(in.type) && in.rnd == kNoRnd && !(in.flags & kApprox))
      fail(in.line, std::string(op) + ": floating-point div needs .rn/.rz/.rm/.rp, .approx or .full");
    alu(in, m, ops, op, base == "div" ? Opc::Div : Opc::Rem, 2, in.type, in.type);
  }
  void abs_neg(Inst& in, std::string_view base, Mods& m, const std::vector<Opd>& ops, std::string_view op) {
    ftz_sat(in, m);
    in.type = m.type();
    alu(in, m, ops, op, base == "abs" ? Opc::Abs : Opc::Neg, 1, in.type, in.type);
  }
  void min_max(Inst& in, std::string_view base, Mods& m, const std::vector<Opd>& ops, std::string_view op) {
    if (m.take("ftz")) in.flags |= kFtz;
    if (m.take("NaN")) in.flags |= kNaN;
    if (m.take("relu")) in.flags |= kRelu;
    const bool xorsign = m.take("xorsign"), abs = m.take("abs");
    if (xorsign != abs) fail(in.line, std::string(op) + ": .xorsign and .abs go together");
    if (xorsign) in.flags |= kXorSign;
    in.type = m.type();
    alu(in, m, ops, op, base == "min" ? Opc::Min : Opc::Max, 2, in.type, in.type);
  }

  // ---- bit manipulation
  void popc_clz(Inst& in, std::string_view base, Mods& m, const std::vector<Opd>& ops, std::string_view op) {
    in.type = m.type();
    alu(in, m, ops, op, base == "popc" ? Opc::Popc : Opc::Clz, 1, T::U32, in.type);
  }
  void brev(Inst& in, std::string_view, Mods& m, const std::vector<Opd>& ops, std::string_view op) {
    in.type = m.type();
    alu(in, m, ops, op, Opc::Brev, 1, in.type, in.type);
  }
  void bfind(Inst& in, std::string_view, Mods& m, const std::vector<Opd>& ops, std::string_view op) {
    if (m.take("shiftamt")) in.flags |= kShiftAmt;
    in.type = m.type();
    alu(in, m, ops, op, Opc::Bfind, 1, T::U32, in.type);
  }
  void bfe(Inst& in, std::string_view, Mods& m, const std::vector<Opd>& ops, std::string_view op) {
    in.type = m.type();
    arity(ops, 4, op, in.line);
    in.op = Opc::Bfe;
    in.d[0] = dst(ops[0], in.type), in.s[0] = src(ops[1], in.type), in.s[1] = src(ops[2], T::U32), in.s[2] = src(ops[3], T::U32);
    m.done();
    bind(in, op, false);
  }
  void bfi(Inst& in, std::string_view, Mods& m, const std::vector<Opd>& ops, std::string_view op) {
    in.type = m.type();
    arity(ops, 5, op, in.line);
    in.op = Opc::Bfi;
    in.d[0] = dst(ops[0], in.type), in.s[0] = src(ops[1], in.type), in.s[1] = src(ops[2], in.type);
    in.s[2] = src(ops[3], T::U32), in.s[3] = src(ops[4], T::U32);
    m.done();
    bind(in, op, false);
  }
  void prmt(Inst& in, std::string_view, Mods& m, const std::vector<Opd>& ops, std::string_view op) {
    in.type = m.type();
    in.cmp = 0;
    int mode = m.take_any(kPrmtModes);
    if (mode > 0) in.cmp = static_cast<uint8_t>(mode);
    alu(in, m, ops, op, Opc::Prmt, 3, in.type, in.type);
  }
  void bmsk_szext(Inst& in, std::string_view base, Mods& m, const std::vector<Opd>& ops, std::string_view op) {
    if (m.take("clamp")) in.cmp = 1;
    else if (m.take("wrap")) in.cmp = 0;
    else fail(in.line, std::string(op) + " needs .clamp or .wrap");
    in.type = m.type();
    alu(in, m, ops, op, base == "bmsk" ? Opc::Bmsk : Opc::Szext, 2, in.type, T::U32);
  }
  void dp4a_dp2a(Inst& in, std::string_view base, Mods& m, const std::vector<Opd>& ops, std::string_view op) {
    Opc o = Opc::Dp4a;
    if (base == "dp2a") {
      if (m.take("hi")) o = Opc::Dp2aHi;
      else if (m.take("lo")) o = Opc::Dp2aLo;
      else fail(in.line, "dp2a needs .lo or .hi");
    }
    in.type = m.type();
    in.type2 = m.type();
    arity(ops, 4, op, in.line);
    in.op = o;
    const T acc = (is_signed(in.type) || is_signed(in.type2)) ? T::S32 : T::U32;
    in.d[0] = dst(ops[0], acc), in.s[0] = src(ops[1], T::B32), in.s[1] = src(ops[2], T::B32), in.s[2] = src(ops[3], acc);
    m.done();
    bind(in, op, false);
  }
  // and, or, xor, not, cnot: on values, or on predicates with .pred.
  void logic(Inst& in, std::string_view base, Mods& m, const std::vector<Opd>& ops, std::string_view op) {
    in.type = m.type();
    const Opc o = base == "and" ? Opc::And : base == "or" ? Opc::Or : base == "xor" ? Opc::Xor : base == "not" ? Opc::Not : Opc::Cnot;
    const size_t n = (o == Opc::Not || o == Opc::Cnot) ? 1 : 2;
    if (in.type == T::Pred) {
      arity(ops, n + 1, op, in.line);
      in.op = o;
      in.d[0] = pdst(ops[0]);
      for (size_t i = 0; i < n; ++i) in.s[i] = psrc(ops[i + 1]);
      m.done();
      return bind(in, op, false);
    }
    alu(in, m, ops, op, o, n, in.type, in.type);
  }
  void lop3(Inst& in, std::string_view, Mods& m, const std::vector<Opd>& ops, std::string_view op) {
    in.type = m.type();
    arity(ops, 5, op, in.line);
    in.op = Opc::Lop3;
    in.d[0] = dst(ops[0], in.type);
    for (int i = 0; i < 3; ++i) in.s[i] = src(ops[static_cast<size_t>(i) + 1], in.type);
    if (ops[4].kind != Opd::Imm) fail(in.line, "lop3's lookup table is an immediate");
    in.offset = static_cast<int64_t>(ops[4].num.bits & 0xff);
    m.done();
    bind(in, op, false);
  }
  void shl_shr(Inst& in, std::string_view base, Mods& m, const std::vector<Opd>& ops, std::string_view op) {
    in.type = m.type();
    arity(ops, 3, op, in.line);
    in.op = base == "shl" ? Opc::Shl : Opc::Shr;
    in.d[0] = dst(ops[0], in.type), in.s[0] = src(ops[1], in.type), in.s[1] = src(ops[2], T::U32);
    m.done();
    bind(in, op, false);
  }
  void shf(Inst& in, std::string_view, Mods& m, const std::vector<Opd>& ops, std::string_view op) {
    const int line = in.line;
    const bool left = m.take("l");
    if (!left && !m.take("r")) fail(line, "shf needs .l or .r");
    if (m.take("clamp")) in.cmp = 1;
    else if (m.take("wrap")) in.cmp = 0;
    else fail(line, "shf needs .clamp or .wrap");
    in.type = m.type();
    arity(ops, 4, op, line);
    in.op = left ? Opc::ShfL : Opc::ShfR;
    in.d[0] = dst(ops[0], in.type), in.s[0] = src(ops[1], in.type), in.s[1] = src(ops[2], in.type), in.s[2] = src(ops[3], T::U32);
    m.done();
    bind(in, op, false);
  }

  // ---- floating-point functions
  void fma(Inst& in, std::string_view, Mods& m, const std::vector<Opd>& ops, std::string_view op) {
    in.rnd = m.rounding();
    if (in.rnd == kNoRnd) fail(in.line, "fma needs a rounding modifier");
    ftz_sat(in, m);
    if (m.take("relu")) in.flags |= kRelu;
    in.type = m.type();
    alu(in, m, ops, op, Opc::Fma, 3, in.type, in.type);
  }
  // rcp, sqrt (rounded or .approx) and rsqrt, sin, cos, lg2, ex2, tanh (.approx only).
  void sfu(Inst& in, std::string_view base, Mods& m, const std::vector<Opd>& ops, std::string_view op) {
    const int line = in.line;
    in.rnd = m.rounding();
    if (m.take("approx")) in.flags |= kApprox;
    ftz_sat(in, m);
    in.type = m.type();
    const Opc o = base == "rcp"     ? Opc::Rcp
                  : base == "sqrt"  ? Opc::Sqrt
                  : base == "rsqrt" ? Opc::Rsqrt
                  : base == "sin"   ? Opc::Sin
                  : base == "cos"   ? Opc::Cos
                  : base == "lg2"   ? Opc::Lg2
                  : base == "ex2"   ? Opc::Ex2
                                    : Opc::Tanh;
    if ((o == Opc::Rcp || o == Opc::Sqrt) && in.rnd == kNoRnd && !(in.flags & kApprox))
      fail(line, std::string(op) + " needs .rn/.rz/.rm/.rp or .approx");
    if (o != Opc::Rcp && o != Opc::Sqrt && !(in.flags & kApprox)) fail(line, std::string(op) + " exists only as .approx");
    if (o != Opc::Rcp && o != Opc::Sqrt) in.rnd = kNoRnd;
    alu(in, m, ops, op, o, 1, in.type, in.type);
  }
  void copysign(Inst& in, std::string_view, Mods& m, const std::vector<Opd>& ops, std::string_view op) {
    in.type = m.type();
    alu(in, m, ops, op, Opc::Copysign, 2, in.type, in.type);
  }
  void testp(Inst& in, std::string_view, Mods& m, const std::vector<Opd>& ops, std::string_view op) {
    int c = m.take_any(kTestpClasses);
    if (c < 0) fail(in.line, "testp needs a class (.finite, .infinite, .number, .notanumber, .normal, .subnormal)");
    in.cmp = static_cast<uint8_t>(c);
    in.type = m.type();
    arity(ops, 2, op, in.line);
    in.op = Opc::Testp;
    in.d[0] = pdst(ops[0]), in.s[0] = src(ops[1], in.type);
    m.done();
    bind(in, op, false);
  }

  // ---- comparison and selection
  // setp writes a predicate (or a pair, p|q); set writes a value of its first type.
  void setp_set(Inst& in, std::string_view base, Mods& m, const std::vector<Opd>& ops, std::string_view op) {
    const int line = in.line;
    static const char* const cmps[] = {"eq", "ne",  "lt",  "le",  "gt",  "ge",  "lo",  "ls",  "hi",
                                       "hs", "equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan"};
    static const char* const bops[] = {"", "and", "or", "xor"};
    int c = m.take_any(cmps);
    if (c < 0) fail(line, std::string(op) + " needs a comparison");
    in.cmp = static_cast<uint8_t>(c);
    int b = m.take_any(bops);
    in.bop = static_cast<uint8_t>(b < 0 ? kNoBool : b);
    if (m.take("ftz")) in.flags |= kFtz;
    const bool set = base == "set";
    if (set) in.type = m.type();
    in.type2 = m.type();
    if (!set) in.type = T::Pred;
    in.op = set ? Opc::Set : Opc::Setp;
    const size_t n = in.bop ? 4 : 3;
    arity(ops, n, op, line);
    const bool packed = in.type2 == T::F16x2 || in.type2 == T::BF16x2;
    if (set) {
      in.d[0] = dst(ops[0], in.type);
    } else if (packed && ops[0].kind != Opd::Pair) {
      fail(line, std::string(op) + ": a packed comparison writes two predicates, p|q (the low and the high halves)");
    } else if (ops[0].kind == Opd::Pair) {
      in.d[0] = pair_pred(ops[0].name, line), in.d[1] = pair_pred(ops[0].name2, line);
    } else {
      in.d[0] = pdst(ops[0]);
    }
    in.s[0] = src(ops[1], in.type2), in.s[1] = src(ops[2], in.type2);
    if (in.bop) in.sp = psrc(ops[3]), in.c_neg = ops[3].neg;
    m.done();
    bind(in, op, false);
  }
  void selp(Inst& in, std::string_view, Mods& m, const std::vector<Opd>& ops, std::string_view op) {
    in.type = m.type();
    arity(ops, 4, op, in.line);
    in.op = Opc::Selp;
    in.d[0] = dst(ops[0], in.type), in.s[0] = src(ops[1], in.type), in.s[1] = src(ops[2], in.type);
    in.sp = psrc(ops[3]), in.c_neg = ops[3].neg;
    m.done();
    bind(in, op, false);
  }
  void slct(Inst& in, std::string_view, Mods& m, const std::vector<Opd>& ops, std::string_view op) {
    if (m.take("ftz")) in.flags |= kFtz;
    in.type = m.type();
    in.type2 = m.type();
    arity(ops, 4, op, in.line);
    in.op = Opc::Slct;
    in.d[0] = dst(ops[0], in.type), in.s[0] = src(ops[1], in.type), in.s[1] = src(ops[2], in.type), in.s[2] = src(ops[3], in.type2);
    m.done();
    bind(in, op, false);
  }

  // ---- addresses and memory (mov, cvt, ld/st and atomics are further down)
  void cvta(Inst& in, std::string_view, Mods& m, const std::vector<Opd>& ops, std::string_view op) {
    const int line = in.line;
    in.op = m.take("to") ? Opc::CvtaTo : Opc::Cvta;
    static const char* const spaces[] = {"", "global", "shared", "local", "param", "const"};
    int s = m.take_any(spaces);
    if (s < 0) {
      if (m.take("shared::cta")) s = 2;
      else fail(line, "cvta needs a state space");
    }
    in.space = static_cast<Space>(s);
    in.type = m.type();
    if (in.type != T::U32 && in.type != T::U64) fail(line, "cvta's type is .u32 or .u64");
    arity(ops, 2, op, line);
    in.d[0] = dst(ops[0], in.type);
    in.s[0] = src(ops[1], in.type);
    if (ops[1].kind == Opd::Reg)
      if (const Reg* r = find_reg(ops[1].name)) in.addr_bits = static_cast<uint8_t>(r->bits);
    m.done();
    bind(in, op, true);
  }
  // Hints that change nothing a thread sees: they run as no-ops once their modifiers check out.
  void prefetch(Inst& in, std::string_view, Mods& m, const std::vector<Opd>& ops, std::string_view op) {
    static const char* const ignored[] = {"global", "local", "L1", "L2", "L2::evict_last", "L2::evict_normal", "tensormap"};
    while (m.take_any(ignored) >= 0) {}
    m.done();
    arity(ops, 1, op, in.line);
    in.op = Opc::Nop;
    bind(in, op, true);
  }
  void fence(Inst& in, std::string_view, Mods& m, const std::vector<Opd>& ops, std::string_view op) {
    static const char* const ignored[] = {"cta", "gl", "sys", "gpu", "cluster", "sc", "acq_rel", "proxy", "alias", "async", "generic"};
    while (m.take_any(ignored) >= 0) {}
    m.done();
    arity(ops, 0, op, in.line);
    in.op = Opc::Nop;
    bind(in, op, true);
  }
  void nop_hint(Inst& in, std::string_view, Mods& m, const std::vector<Opd>&, std::string_view op) {  // nanosleep, pmevent
    m.type();
    m.done();
    in.op = Opc::Nop;
    bind(in, op, true);
  }

  // ---- control flow
  void branch(Inst& in, std::string_view base, Mods& m, const std::vector<Opd>& ops, std::string_view op) {
    const int line = in.line;
    if (base == "brx") fail(line, "brx.idx (indirect branches) is not supported");
    m.take("uni");
    m.done();
    arity(ops, 1, op, line);
    if (ops[0].kind != Opd::Sym) fail(line, "bra needs a label");
    in.op = Opc::Bra;
    in.flow = Flow::Branch;
    fixups_.push_back({static_cast<uint32_t>(code_.insts.size()), std::string(ops[0].name), line});
  }
  void ret_exit(Inst& in, std::string_view, Mods& m, const std::vector<Opd>& ops, std::string_view op) {
    m.take("uni");
    m.done();
    arity(ops, 0, op, in.line);
    in.op = Opc::Exit;
    in.flow = Flow::Exit;
  }
  void trap(Inst& in, std::string_view, Mods& m, const std::vector<Opd>& ops, std::string_view op) {  // trap, brkpt
    m.done();
    arity(ops, 0, op, in.line);
    in.op = Opc::Trap;
    in.flow = Flow::Trap;
  }
  void barrier(Inst& in, std::string_view base, Mods& m, const std::vector<Opd>& ops, std::string_view op) {
    const int line = in.line;
    if (m.take("warp")) {  // bar.warp.sync membermask: the lanes of a warp run together here already
      if (!m.take("sync")) fail(line, "bar.warp needs .sync");
      m.done();
      arity(ops, 1, op, line);
      in.op = Opc::Nop;
      return bind(in, op, true);
    }
    m.take("cta");
    m.take("aligned");
    const bool arrive = m.take("arrive");
    if (!arrive && !m.take("sync")) {
      if (m.take("red")) fail(line, "bar.red is not implemented");
      fail(line, std::string(op) + " needs .sync or .arrive");
    }
    m.take("aligned");
    m.done();
    if (ops.empty() && base == "barrier") {
      in.s[0] = constant(0);
    } else {
      if (ops.empty() || ops.size() > 2) fail(line, std::string(op) + " takes a barrier number and optionally a thread count");
      in.s[0] = src(ops[0], T::U32);
      if (ops.size() == 2) in.s[1] = src(ops[1], T::U32);
    }
    if (arrive && in.s[1] == kNone) fail(line, "bar.arrive needs a thread count");
    in.op = arrive ? Opc::BarArrive : Opc::Bar;
    in.flow = arrive ? Flow::Arrive : Flow::Barrier;
  }

  // ---- warp-wide operations
  void shfl(Inst& in, std::string_view, Mods& m, const std::vector<Opd>& ops, std::string_view op) {
    const int line = in.line;
    if (!m.take("sync")) fail(line, "only shfl.sync is supported (PTX 6.0 and later)");
    int mode = m.take_any(kShflModes);
    if (mode < 0) fail(line, "shfl needs .up, .down, .bfly or .idx");
    in.cmp = static_cast<uint8_t>(mode);
    in.type = m.type();
    if (in.type != T::B32) fail(line, "shfl's type is .b32");
    m.done();
    arity(ops, 5, op, line);
    in.op = Opc::Shfl;
    if (ops[0].kind == Opd::Pair) {
      Opd d = ops[0];
      d.kind = d.name == "_" ? Opd::Sink : Opd::Reg;
      in.d[0] = dst(d, T::B32);
      in.d[1] = pair_pred(ops[0].name2, line);
    } else {
      in.d[0] = dst(ops[0], T::B32);
    }
    in.s[0] = src(ops[1], T::B32), in.s[1] = src(ops[2], T::B32), in.s[2] = src(ops[3], T::B32), in.s[3] = src(ops[4], T::B32);
    bind(in, op, true);
  }
  void vote(Inst& in, std::string_view, Mods& m, const std::vector<Opd>& ops, std::string_view op) {
    const int line = in.line;
    if (!m.take("sync")) fail(line, "only vote.sync is supported (PTX 6.0 and later)");
    int mode = m.take_any(kVoteModes);
    if (mode < 0) fail(line, "vote needs .all, .any, .uni or .ballot");
    in.cmp = static_cast<uint8_t>(mode);
    in.type = m.type();
    m.done();
    arity(ops, 3, op, line);
    in.op = Opc::Vote;
    in.d[0] = mode == 3 ? dst(ops[0], T::B32) : pdst(ops[0]);
    if (mode == 3 && in.type != T::B32) fail(line, "vote.ballot's type is .b32");
    if (mode != 3 && in.type != T::Pred) fail(line, "vote's type is .pred");
    in.sp = psrc(ops[1]), in.c_neg = ops[1].neg;
    in.s[1] = src(ops[2], T::B32);
    bind(in, op, true);
  }
  void activemask(Inst& in, std::string_view, Mods& m, const std::vector<Opd>& ops, std::string_view op) {
    in.type = m.type();
    m.done();
    arity(ops, 1, op, in.line);
    in.op = Opc::Activemask;
    in.d[0] = dst(ops[0], T::B32);
    bind(in, op, true);
  }
  void redux(Inst& in, std::string_view, Mods& m, const std::vector<Opd>& ops, std::string_view op) {
    const int line = in.line;
    if (!m.take("sync")) fail(line, "redux needs .sync");
    int o = m.take_any(kReduxOps);
    if (o < 0) fail(line, "redux needs an operation");
    in.cmp = static_cast<uint8_t>(o);
    in.type = m.type();
    if ((o < 3 && in.type != T::U32 && in.type != T::S32) || (o >= 3 && in.type != T::B32)) fail(line, std::string(op) + ": unsupported type");
    m.done();
    arity(ops, 3, op, line);
    in.op = Opc::Redux;
    in.d[0] = dst(ops[0], in.type), in.s[0] = src(ops[1], in.type), in.s[1] = src(ops[2], T::B32);
    bind(in, op, true);
  }

  // mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}.{f16,bf16}.f32 and
  // mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32: {d0..d3}, {a0..a3}, {b0, b1}, {c0..c3}. The
  // instruction's input type is kept in `type`, B32 standing for tf32 (which has no T of its own).
  void mma(Inst& in, std::string_view, Mods& m, const std::vector<Opd>& ops, std::string_view op) {
    const int line = in.line;
    if (!m.take("sync") || !m.take("aligned")) fail(line, "mma needs .sync.aligned");
    const bool k8 = m.take("m16n8k8");
    if ((!k8 && !m.take("m16n8k16")) || !m.take("row") || !m.take("col"))
      fail(line, "only mma.sync.aligned.m16n8k16.row.col and m16n8k8.row.col are supported");
    const bool tf32 = m.take("tf32") && m.take("tf32");
    const T d = m.type(), a = tf32 ? T::B32 : m.type(), b = tf32 ? T::B32 : m.type(), c = m.type();
    m.done();
    if (d != T::F32 || c != T::F32 || a != b || (k8 ? !tf32 : a != T::F16 && a != T::BF16))
      fail(line, std::string(op) + ": only .f32 results from .f16 or .bf16 inputs (m16n8k16) or .tf32 ones (m16n8k8) are supported");
    arity(ops, 4, op, line);
    const size_t sizes[4] = {4, 4, 2, 4};
    for (int i = 0; i < 4; ++i)
      if (ops[i].kind != Opd::Vec || ops[i].elems.size() != sizes[i])
        fail(line, std::string(op) + ": operand " + std::to_string(i + 1) + " is a vector of " + std::to_string(sizes[i]) + " registers");
    in.op = Opc::Mma;
    in.type = a;
    for (const Opd& e : ops[0].elems) in.frag.push_back(dst(e, T::B32));
    for (int i = 1; i < 4; ++i)
      for (const Opd& e : ops[i].elems) in.frag.push_back(src(e, T::B32));
    bind(in, op, true);
  }

  void mov(Inst& in, std::string_view, Mods& m, const std::vector<Opd>& ops, std::string_view op) {
    const int line = in.line;
    in.type = m.type();
    m.done();
    arity(ops, 2, op, line);
    if (in.type == T::Pred) {
      in.op = Opc::Mov;
      in.d[0] = pdst(ops[0]), in.s[0] = psrc(ops[1]);
      return bind(in, op, false);
    }
    if (ops[1].kind == Opd::Vec || ops[0].kind == Opd::Vec) {
      const bool pack = ops[1].kind == Opd::Vec;
      const Opd& v = pack ? ops[1] : ops[0];
      const size_t n = v.elems.size();
      if (n != 2 && n != 4) fail(line, "mov packs or unpacks 2 or 4 elements");
      const int ew = bits(in.type) / static_cast<int>(n);
      if (ew < 8) fail(line, "mov: ." + std::string(name(in.type)) + " cannot be split " + std::to_string(n) + " ways");
      const T et = ew == 8 ? T::B8 : ew == 16 ? T::B16 : T::B32;
      in.vec = static_cast<uint8_t>(n);
      if (pack) {
        in.op = Opc::MovPack;
        in.d[0] = dst(ops[0], in.type);
        for (size_t i = 0; i < n; ++i) in.s[i] = src(v.elems[i], et);
      } else {
        in.op = Opc::MovUnpack;
        in.s[0] = src(ops[1], in.type);
        for (size_t i = 0; i < n; ++i) in.d[i] = dst(v.elems[i], et);
      }
      return bind(in, op, false);
    }
    if (ops[1].kind == Opd::Reg && (ops[1].name == "%clock" || ops[1].name == "%clock64" || ops[1].name == "%globaltimer")) {
      in.op = ops[1].name == "%clock" ? Opc::Clock : ops[1].name == "%clock64" ? Opc::Clock64 : Opc::GlobalTimer;
      if ((in.op == Opc::Clock) != (bits(in.type) == 32)) fail(line, std::string(ops[1].name) + " is read with mov of its width");
      in.d[0] = dst(ops[0], in.type);
      return bind(in, op, true);
    }
    if (ops[1].kind == Opd::Sym && !var(ops[1].name) && !data_var(ops[1].name) && !params_.count(std::string(ops[1].name)))
      fail(line, "mov of unknown symbol " + std::string(ops[1].name));
    in.op = Opc::Mov;
    in.d[0] = dst(ops[0], in.type);
    in.s[0] = src(ops[1], in.type);
    bind(in, op, false);
  }

  void cvt(Inst& in, std::string_view, Mods& m, const std::vector<Opd>& ops, std::string_view op) {
    const int line = in.line;
    bool integral = false;
    in.rnd = m.rounding(&integral);
    if (integral) in.flags |= kIntRnd;
    if (m.take("ftz")) in.flags |= kFtz;
    if (m.take("sat")) in.flags |= kSat;
    if (m.take("relu")) in.flags |= kRelu;
    in.type = m.type();
    in.type2 = m.type();
    m.done();
    if (in.type == T::F16x2 || in.type == T::BF16x2) {
      arity(ops, 3, op, line);
      in.op = Opc::CvtPack;
      in.d[0] = dst(ops[0], in.type), in.s[0] = src(ops[1], in.type2), in.s[1] = src(ops[2], in.type2);
      return bind(in, op, false);
    }
    arity(ops, 2, op, line);
    const bool df = is_float(in.type), sf = is_float(in.type2);
    if (sf && !df && !integral) fail(line, "cvt from a float to an integer needs .rni, .rzi, .rmi or .rpi");
    if (!sf && df && in.rnd == kNoRnd) fail(line, "cvt from an integer to a float needs .rn, .rz, .rm or .rp");
    if (sf && df && bits(in.type) < bits(in.type2) && in.rnd == kNoRnd && !integral) fail(line, "cvt to a narrower float needs .rn, .rz, .rm or .rp");
    if (!sf && !df && in.rnd != kNoRnd) fail(line, "cvt between integers takes no rounding modifier");
    in.op = Opc::Cvt;
    in.d[0] = dst(ops[0], in.type);
    in.s[0] = src(ops[1], in.type2);
    bind(in, op, false);
  }

  static Space space_mod(Mods& m) {
    static const char* const spaces[] = {"", "global", "shared", "local", "param", "const"};
    int s = m.take_any(spaces);
    if (s >= 0) return static_cast<Space>(s);
    if (m.take("shared::cta") || m.take("shared::cluster")) return Space::Shared;
    if (m.take("param::entry")) return Space::Param;
    return Space::Generic;
  }

  void memory(Inst& in, std::string_view base, Mods& m, const std::vector<Opd>& ops, std::string_view op) {
    const int line = in.line;
    const bool store = base == "st";
    in.space = space_mod(m);
    if (base == "ldu" && in.space != Space::Global) fail(line, "ldu reads .global only");
    static const char* const vecs[] = {"", "", "v2", "", "v4"};
    int v = m.take_any(vecs);
    in.vec = static_cast<uint8_t>(v < 0 ? 1 : v);
    const bool hint = m.take("L2::cache_hint");
    m.hints();
    in.type = m.type();
    m.done();
    if (in.type == T::Pred) fail(line, std::string(op) + ": predicates cannot be loaded or stored");
    in.size = static_cast<uint8_t>(bits(in.type) / 8);
    arity(ops, hint ? 3 : 2, op, line);
    in.op = store ? Opc::St : Opc::Ld;
    const Opd& addr = store ? ops[0] : ops[1];
    const Opd& val = store ? ops[1] : ops[0];
    address(in, addr, in.space);
    if (in.vec == 1) {
      if (val.kind == Opd::Vec) fail(line, std::string(op) + ": a braced list needs .v2 or .v4");
      if (store) in.s[0] = src(val, in.type);
      else in.d[0] = dst(val, in.type);
    } else {
      if (val.kind != Opd::Vec || val.elems.size() != in.vec)
        fail(line, std::string(op) + ": expected {...} of " + std::to_string(in.vec) + " registers");
      for (size_t i = 0; i < in.vec; ++i) {
        if (store) in.s[i] = src(val.elems[i], in.type);
        else in.d[i] = dst(val.elems[i], in.type);
      }
    }
    bind(in, op, true);
  }

  void atomic(Inst& in, std::string_view base, Mods& m, const std::vector<Opd>& ops, std::string_view op) {
    const int line = in.line;
    in.space = space_mod(m);
    m.hints();
    int o = m.take_any(kAtomNames);
    if (o < 0) fail(line, std::string(op) + " needs an operation (.add, .min, .max, .and, .or, .xor, .exch, .cas, .inc, .dec)");
    in.cmp = static_cast<uint8_t>(o);
    in.type = m.type();
    m.done();
    const bool is_red = base == "red";
    const bool fl = in.type == T::F32 || in.type == T::F64;
    if (fl && o != kAtomAdd) fail(line, std::string(op) + ": floating-point atomics are .add only");
    if ((o == kAtomInc || o == kAtomDec) && in.type != T::U32) fail(line, std::string(op) + ": .inc and .dec take .u32");
    if ((o == kAtomAnd || o == kAtomOr || o == kAtomXor || o == kAtomExch || o == kAtomCas) && !(in.type == T::B32 || in.type == T::B64))
      fail(line, std::string(op) + ": bitwise, exchange and compare-and-swap atomics take .b32 or .b64");
    if (o == kAtomCas && is_red) fail(line, "red has no .cas");
    in.size = static_cast<uint8_t>(bits(in.type) / 8);
    const size_t nsrc = o == kAtomCas ? 2 : 1;
    arity(ops, nsrc + (is_red ? 1 : 2), op, line);
    size_t i = 0;
    in.op = is_red ? Opc::Red : Opc::Atom;
    if (!is_red) in.d[0] = dst(ops[i++], in.type);
    address(in, ops[i++], in.space);
    in.s[0] = src(ops[i++], in.type);
    if (nsrc == 2) in.s[1] = src(ops[i++], in.type);
    bind(in, op, true);
  }

  std::vector<Tok> toks_;
  size_t pos_ = 0;
  int last_line_ = 0;

  std::unordered_map<std::string, Var> module_vars_, entry_vars_;
  // Module data: the variables, their initial values (until finish_data places them), and the
  // slots of each entry that hold a variable's address.
  std::vector<DataVar> dvars_;
  std::unordered_map<std::string, uint32_t> data_vars_;
  std::vector<PendingInit> inits_;
  std::vector<DataRef> data_refs_;
  std::map<std::pair<uint32_t, int64_t>, uint32_t> data_slots_;
  uint64_t const_top_ = 0, global_top_ = 0, data_align_ = 1;
  size_t entry_index_ = 0;
  bool nested_ = false;
  uint32_t module_shared_ = 0, module_local_ = 0, entry_shared_ = 0, entry_local_ = 0;
  bool dynamic_used_ = false;
  std::unordered_map<std::string, uint32_t> params_;

  Code code_;
  std::unordered_map<std::string, Reg> regs_;
  int depth_ = 1;
  std::vector<std::pair<std::string, std::optional<Reg>>> shadowed_;  // what nested blocks' registers hid, to restore
  std::unordered_map<uint64_t, uint32_t> consts_;
  std::unordered_map<std::string, uint32_t> labels_;
  struct Fixup {
    uint32_t inst;
    std::string label;
    int line;
  };
  std::vector<Fixup> fixups_;
  uint32_t temps_ = 0, next_slot_ = kFirstRegSlot, next_pred_ = kFirstPred;
};

}  // namespace
}  // namespace detail

}  // namespace ugpu::emu::nv

namespace ugpu::emu::nv::detail {

std::shared_ptr<PtxModule> parse_module(std::string_view text) {
  Parser p(text);
  return p.module();
}

}  // namespace ugpu::emu::nv::detail
