#include "ir/text.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <memory>
#include <unordered_map>
#include <unordered_set>

namespace ugpu::ir {
namespace {

// ---- rules shared by the printer and the parser --------------------------------------------------

enum class LitKind { Int, Float, Bool };

DType default_literal(LitKind k) { return k == LitKind::Int ? dtypes::index : k == LitKind::Float ? dtypes::float32 : dtypes::bool_; }

bool is_void_op(Op op) {
  switch (op) {
    case Op::SINK:
    case Op::GROUP:
    case Op::END:
    case Op::ENDIF:
    case Op::IF:
    case Op::BARRIER:
    case Op::STORE:
    case Op::NOOP: return true;
    default: return false;
  }
}

// The dtype an op gets when the text leaves it out; nullopt where it must be written.
std::optional<DType> derived_dtype(Op op, const std::vector<DType>& src) {
  if (is_alu(op) && op != Op::CAST && op != Op::BITCAST && !src.empty()) {
    if (is_comparison(op)) return dtypes::bool_.vec(src[0].count);
    if (op == Op::WHERE) return src.size() == 3 ? std::optional(src[1]) : std::nullopt;
    return src[0];
  }
  if ((op == Op::RANGE || op == Op::AFTER) && !src.empty()) return src[0];
  if (is_void_op(op)) return dtypes::void_;
  if (op == Op::SPECIAL || op == Op::DEFINE_VAR || op == Op::INVALID) return dtypes::index;
  return std::nullopt;
}

// The dtype of an unsuffixed literal at source i. typed[j]: source j's dtype when it is known
// without inference (not an unsuffixed literal).
DType literal_dtype(Op op, std::optional<DType> explicit_dt, const std::vector<std::optional<DType>>& typed, size_t i, LitKind kind) {
  if (is_alu(op) && op != Op::CAST && op != Op::BITCAST) {
    if (op == Op::WHERE) {
      if (i == 0) return dtypes::bool_;
      size_t other = i == 1 ? 2 : 1;
      if (other < typed.size() && typed[other]) return *typed[other];
      if (explicit_dt) return *explicit_dt;
      return default_literal(kind);
    }
    for (size_t j = 0; j < typed.size(); ++j)
      if (j != i && typed[j]) return *typed[j];
    if (explicit_dt && !is_comparison(op)) return *explicit_dt;
  }
  return default_literal(kind);
}

struct Infix {
  Op op;
  const char* sym;
  int prec;
};
// Loosest first; all left-associative.
constexpr Infix kInfix[] = {
    {Op::CMPLT, "<", 1}, {Op::CMPEQ, "==", 1}, {Op::CMPNE, "!=", 1},    {Op::OR, "|", 2},       {Op::XOR, "^", 3},
    {Op::AND, "&", 4},   {Op::SHL, "<<", 5},   {Op::SHR, ">>", 5},      {Op::ADD, "+", 6},      {Op::SUB, "-", 6},
    {Op::MUL, "*", 7},   {Op::FDIV, "/", 7},   {Op::FLOORDIV, "//", 7}, {Op::FLOORMOD, "%", 7},
};
constexpr int kUnaryPrec = 8, kAtomPrec = 9;

const Infix* infix_of(Op op) {
  for (const Infix& i : kInfix)
    if (i.op == op) return &i;
  return nullptr;
}

bool is_ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_ident_char(char c) { return is_ident_start(c) || (c >= '0' && c <= '9'); }
bool reserved(std::string_view s) { return s == "true" || s == "false" || s == "inf" || s == "nan" || parse_op(s).has_value(); }

// A scalar CONST whose value has the kind its dtype needs (malformed ones print in function form).
bool is_literal(const UOp& u) {
  if (u.op() != Op::CONST || !u.dtype().is_scalar() || u.dtype().is_void()) return false;
  return u.dtype().is_float() ? std::holds_alternative<double>(u.arg()) : std::holds_alternative<int64_t>(u.arg());
}

// The shortest decimal that reads back to v in dtype t (for double: in double).
std::string float_literal(double v, DType t) {
  if (t.scalar == ScalarType::Double || !std::isfinite(v)) return float_text(v);
  for (int digits = 1; digits <= 17; ++digits) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*g", digits, v);
    double back = std::strtod(buf, nullptr);
    if (round_float(back, t) == v && std::signbit(back) == std::signbit(v)) return float_text(back);
  }
  return float_text(v);
}
LitKind literal_kind(DType t) { return t.is_bool() ? LitKind::Bool : t.is_float() ? LitKind::Float : LitKind::Int; }

std::string literal_text(const UOp& c) {
  DType t = c.dtype();
  if (t.is_bool()) return c.const_int() ? "true" : "false";
  if (t.is_float()) return float_literal(c.const_float(), t);
  if (t.is_unsigned())
    return std::to_string(static_cast<uint64_t>(c.const_int()) & (t.bitsize() == 64 ? ~uint64_t{0} : (uint64_t{1} << t.bitsize()) - 1));
  return std::to_string(c.const_int());
}

// ---- printer -------------------------------------------------------------------------------------

class Printer {
 public:
  explicit Printer(const UOp& root) : root_(root) {}

  std::string run() {
    const auto& topo = root_.toposort();
    std::unordered_map<const void*, int> uses;
    for (const UOp& n : topo)
      for (const UOp& s : n.src()) uses[s.get()]++;
    std::unordered_map<const void*, int> height;
    std::unordered_set<std::string> taken;
    int counter = 0;
    std::string out;
    for (const UOp& n : topo) {
      if (is_literal(n)) continue;
      int h = 1;
      for (const UOp& s : n.src())
        if (!names_.count(s.get())) h = std::max(h, height[s.get()] + 1);
      height[n.get()] = h;
      bool name = uses[n.get()] > 1 || h > 24 || always_named(n);
      if (!name || (n == root_ && !always_named(n))) continue;
      std::string nm = pick_name(n, taken, counter);
      out += nm + " = " + expr(n, 0) + "\n";
      names_[n.get()] = nm;
    }
    return out + expr(root_, 0) + "\n";
  }

  // One node as an expression, parenthesised if looser than `min_prec`.
  std::string expr(const UOp& n, int min_prec) {
    auto [s, prec] = render(n);
    return prec < min_prec ? "(" + s + ")" : s;
  }

 private:
  static bool always_named(const UOp& n) {
    switch (n.op()) {
      case Op::DEFINE_VAR:
      case Op::RANGE:
      case Op::SPECIAL:
      case Op::DEFINE_GLOBAL:
      case Op::DEFINE_LOCAL:
      case Op::DEFINE_REG: return true;
      default: return false;
    }
  }

  std::string pick_name(const UOp& n, std::unordered_set<std::string>& taken, int& counter) {
    std::string want;
    const Arg& a = n.arg();
    if (auto* v = std::get_if<VarArg>(&a); v && n.op() == Op::DEFINE_VAR) want = v->name;
    else if (auto* sp = std::get_if<std::string>(&a); sp && n.op() == Op::SPECIAL) want = *sp;
    else if (auto* r = std::get_if<RangeArg>(&a); r && n.op() == Op::RANGE) want = "r" + std::to_string(r->axis);
    else if (auto* slot = std::get_if<int64_t>(&a); slot && n.op() == Op::DEFINE_GLOBAL) want = "data" + std::to_string(*slot);
    bool ok = !want.empty() && is_ident_start(want[0]) && !reserved(want) && !taken.count(want);
    for (char c : want) ok = ok && is_ident_char(c);
    if (!ok) {
      do want = "x" + std::to_string(counter++);
      while (taken.count(want));
    }
    taken.insert(want);
    return want;
  }

  // Sources as text, with literal suffixes only where the parser would infer another dtype.
  std::vector<std::string> sources(const UOp& n, std::optional<DType> explicit_dt, const std::vector<int>& prec) {
    size_t k = n.src().size();
    std::vector<bool> suffix(k, false);
    for (bool changed = true; changed;) {
      changed = false;
      std::vector<std::optional<DType>> typed(k);
      for (size_t i = 0; i < k; ++i)
        if (!is_literal(n.src(i)) || suffix[i] || names_.count(n.src(i).get())) typed[i] = n.src(i).dtype();
      for (size_t i = 0; i < k; ++i) {
        const UOp& s = n.src(i);
        if (!is_literal(s) || suffix[i]) continue;
        if (literal_dtype(n.op(), explicit_dt, typed, i, literal_kind(s.dtype())) != s.dtype()) {
          suffix[i] = changed = true;  // one at a time: a suffixed literal may type the others
          break;
        }
      }
    }
    std::vector<std::string> out;
    for (size_t i = 0; i < k; ++i) {
      const UOp& s = n.src(i);
      if (is_literal(s)) out.push_back(literal_text(s) + (suffix[i] ? ":" + s.dtype().name() : ""));
      else out.push_back(expr(s, prec.empty() ? 0 : prec[i]));
    }
    return out;
  }

  std::pair<std::string, int> render(const UOp& n) {
    if (auto it = names_.find(n.get()); it != names_.end()) return {it->second, kAtomPrec};
    if (is_literal(n)) return {literal_text(n) + (n.dtype() == default_literal(literal_kind(n.dtype())) ? "" : ":" + n.dtype().name()), kAtomPrec};
    std::vector<DType> sd;
    for (const UOp& s : n.src()) sd.push_back(s.dtype());
    auto derived = derived_dtype(n.op(), sd);
    bool needs_dtype = !derived || *derived != n.dtype();
    if (!needs_dtype) {
      if (const Infix* in = infix_of(n.op()); in && n.src().size() == 2) {
        auto s = sources(n, std::nullopt, {in->prec, in->prec + 1});
        return {s[0] + " " + in->sym + " " + s[1], in->prec};
      }
      if (n.op() == Op::NEG && n.src().size() == 1 && !is_literal(n.src(0))) return {"-" + expr(n.src(0), kUnaryPrec), kUnaryPrec};
    }
    std::string s(op_name(n.op()));
    if (needs_dtype) s += ":" + n.dtype().name();
    std::optional<DType> explicit_dt = needs_dtype ? std::optional(n.dtype()) : std::nullopt;
    if (!n.src().empty()) {
      s += "(";
      auto srcs = sources(n, explicit_dt, {});
      for (size_t i = 0; i < srcs.size(); ++i) s += (i ? ", " : "") + srcs[i];
      s += ")";
    }
    if (n.op() == Op::CONST) {
      UOp scalar = UOp::make(Op::CONST, n.dtype().element(), {}, n.arg());
      s += " {" + (is_literal(scalar) ? literal_text(scalar) : arg_text(n.arg())) + "}";
    } else if (op_info(n.op()).arg != ArgKind::None) s += " {" + arg_text(n.arg()) + "}";
    return {s, kAtomPrec};
  }

  UOp root_;
  std::unordered_map<const void*, std::string> names_;
};

// ---- lexer ---------------------------------------------------------------------------------------

enum class Tok { Name, Int, Float, String, Punct, Newline, End };

struct Token {
  Tok kind;
  std::string text;
  int line, col;
};

class Lexer {
 public:
  explicit Lexer(std::string_view s) : s_(s) {}

  Token next() {
    skip_space();
    Token t{Tok::End, "", line_, col()};
    if (pos_ >= s_.size()) return t;
    char c = s_[pos_];
    if (c == '\n') {
      advance(1);
      t.kind = Tok::Newline;
      return t;
    }
    if (is_ident_start(c)) {
      size_t b = pos_;
      while (pos_ < s_.size() && is_ident_char(s_[pos_])) advance(1);
      t.kind = Tok::Name, t.text = std::string(s_.substr(b, pos_ - b));
      return t;
    }
    if (c >= '0' && c <= '9') return number(t);
    if (c == '.' && pos_ + 1 < s_.size() && s_[pos_ + 1] >= '0' && s_[pos_ + 1] <= '9') return number(t);
    if (c == '"') return string(t);
    static constexpr std::string_view kTwo[] = {"//", "==", "!=", "<<", ">>"};
    for (std::string_view p : kTwo)
      if (s_.substr(pos_, 2) == p) {
        advance(2);
        t.kind = Tok::Punct, t.text = std::string(p);
        return t;
      }
    if (std::string_view("(){},=:+-*/%<>&|^").find(c) != std::string_view::npos) {
      advance(1);
      t.kind = Tok::Punct, t.text = std::string(1, c);
      return t;
    }
    throw ParseError(std::string("unexpected character '") + c + "'", line_, col());
  }

  // A dtype right after ':' — name[.vec(n)][*|[local]*|[reg]*], written without spaces.
  std::string dtype_text() {
    size_t b = pos_;
    while (pos_ < s_.size() && is_ident_char(s_[pos_])) advance(1);
    if (s_.substr(pos_, 5) == ".vec(") {
      advance(5);
      while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') advance(1);
      if (pos_ < s_.size() && s_[pos_] == ')') advance(1);
    }
    for (std::string_view suffix : {"[local]*", "[reg]*", "*"})
      if (s_.substr(pos_, suffix.size()) == suffix) {
        advance(suffix.size());
        break;
      }
    return std::string(s_.substr(b, pos_ - b));
  }
  int line() const { return line_; }
  int col() const { return static_cast<int>(pos_ - line_start_) + 1; }

 private:
  void advance(size_t n) {
    for (size_t i = 0; i < n; ++i)
      if (s_[pos_++] == '\n') ++line_, line_start_ = pos_;
  }
  void skip_space() {
    while (pos_ < s_.size()) {
      char c = s_[pos_];
      if (c == ' ' || c == '\t' || c == '\r') advance(1);
      else if (c == '#') {
        while (pos_ < s_.size() && s_[pos_] != '\n') advance(1);
      } else break;
    }
  }
  Token number(Token t) {
    size_t b = pos_;
    bool is_float = false;
    while (pos_ < s_.size()) {
      char c = s_[pos_];
      if ((c >= '0' && c <= '9')) advance(1);
      else if (c == '.' || c == 'e' || c == 'E') {
        is_float = true;
        advance(1);
        if ((c == 'e' || c == 'E') && pos_ < s_.size() && (s_[pos_] == '-' || s_[pos_] == '+')) advance(1);
      } else break;
    }
    t.kind = is_float ? Tok::Float : Tok::Int, t.text = std::string(s_.substr(b, pos_ - b));
    return t;
  }
  Token string(Token t) {
    advance(1);
    std::string out;
    while (true) {
      if (pos_ >= s_.size() || s_[pos_] == '\n') throw ParseError("unterminated string", t.line, t.col);
      char c = s_[pos_];
      advance(1);
      if (c == '"') break;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= s_.size()) throw ParseError("unterminated string", t.line, t.col);
      char e = s_[pos_];
      advance(1);
      if (e == 'n') out += '\n';
      else if (e == 't') out += '\t';
      else if (e == 'x') {
        auto hex = [&](char h) -> int {
          if (h >= '0' && h <= '9') return h - '0';
          if (h >= 'a' && h <= 'f') return h - 'a' + 10;
          if (h >= 'A' && h <= 'F') return h - 'A' + 10;
          throw ParseError("bad \\x escape in string", line_, col());
        };
        if (pos_ + 2 > s_.size()) throw ParseError("bad \\x escape in string", line_, col());
        out += static_cast<char>(hex(s_[pos_]) * 16 + hex(s_[pos_ + 1]));
        advance(2);
      } else out += e;
    }
    t.kind = Tok::String, t.text = out;
    return t;
  }

  std::string_view s_;
  size_t pos_ = 0, line_start_ = 0;
  int line_ = 1;
};

// ---- parser --------------------------------------------------------------------------------------

// Input quoted in a message: whole if short, else its start and its length (a 10 MB literal must not
// come back as a 10 MB message).
std::string shown(std::string_view t) {
  if (t.size() <= 60) return std::string(t);
  return std::string(t.substr(0, 40)) + "... (" + std::to_string(t.size()) + " characters)";
}

struct Ast {
  enum Kind { Name, Lit, Node } kind;
  int line, col;
  Ast(Kind k, int l, int c) : kind(k), line(l), col(c) {}
  std::string name;            // Name
  LitKind lit = LitKind::Int;  // Lit
  std::string lit_text;
  bool negative = false;
  std::optional<DType> dt;  // Lit suffix, or Node's explicit dtype
  Op op = Op::NOOP;         // Node
  std::vector<std::unique_ptr<Ast>> src;
  Arg arg;
  // Freed without recursion: a chain `1+1+...` of 20,000 terms is a tree 20,000 deep.
  ~Ast() {
    std::vector<std::unique_ptr<Ast>> pending = std::move(src);
    while (!pending.empty()) {
      std::unique_ptr<Ast> a = std::move(pending.back());
      pending.pop_back();
      for (auto& c : a->src) pending.push_back(std::move(c));
      a->src.clear();
    }
  }
  Ast(const Ast&) = delete;
  Ast& operator=(const Ast&) = delete;
};
using AstPtr = std::unique_ptr<Ast>;

class Parser {
 public:
  explicit Parser(std::string_view text, SourceMap* where = nullptr) : lex_(text), where_(where) { shift(); }

  UOp run() {
    UOp last;
    while (true) {
      while (tok_.kind == Tok::Newline) shift();
      if (tok_.kind == Tok::End) break;
      std::string bind;
      int bline = tok_.line, bcol = tok_.col;
      if (tok_.kind == Tok::Name && !parse_op(tok_.text)) {
        Token save = tok_;
        Lexer probe = lex_;
        Token after = probe.next();
        if (after.kind == Tok::Punct && after.text == "=") {
          bind = save.text;
          shift();
          shift();
        }
      }
      AstPtr e = expression(0);
      UOp u = build(*e, std::nullopt);
      if (tok_.kind != Tok::Newline && tok_.kind != Tok::End) fail("expected end of line, found '" + shown(tok_.text) + "'");
      if (!bind.empty()) {
        if (reserved(bind)) throw ParseError("'" + bind + "' is reserved and cannot be a name", bline, bcol);
        if (!names_.emplace(bind, u).second) throw ParseError("name '" + shown(bind) + "' is already bound", bline, bcol);
      }
      last = u;
    }
    if (!last) throw ParseError("empty program: no expression", lex_.line(), 1);
    return last;
  }

 private:
  [[noreturn]] void fail(const std::string& msg) { throw ParseError(msg, tok_.line, tok_.col); }
  void shift() { tok_ = lex_.next(); }
  bool is(std::string_view p) const { return tok_.kind == Tok::Punct && tok_.text == p; }
  void expect(std::string_view p) {
    if (!is(p))
      fail("expected '" + std::string(p) + "', found " +
           (tok_.kind == Tok::End       ? "end of input"
            : tok_.kind == Tok::Newline ? "end of line"
                                        : "'" + shown(tok_.text) + "'"));
    shift();
  }

  AstPtr expression(int min_prec) {
    if (++depth_ > 500) fail("expression nested too deeply (over 500 levels)");
    AstPtr lhs = unary();
    while (tok_.kind == Tok::Punct) {
      const Infix* in = nullptr;
      bool swap = false;
      if (tok_.text == ">") in = infix_of(Op::CMPLT), swap = true;
      else
        for (const Infix& i : kInfix)
          if (tok_.text == i.sym) in = &i;
      if (!in || in->prec < min_prec) break;
      auto node = std::make_unique<Ast>(Ast::Node, tok_.line, tok_.col);
      node->op = in->op;
      shift();
      AstPtr rhs = expression(in->prec + 1);
      if (swap) std::swap(lhs, rhs);
      node->src.push_back(std::move(lhs));
      node->src.push_back(std::move(rhs));
      lhs = std::move(node);
    }
    --depth_;
    return lhs;
  }

  AstPtr unary() {
    if (is("-")) {
      int line = tok_.line, col = tok_.col;
      shift();
      if (tok_.kind == Tok::Int || tok_.kind == Tok::Float || (tok_.kind == Tok::Name && (tok_.text == "inf" || tok_.text == "nan"))) {
        AstPtr lit = primary();
        lit->negative = !lit->negative;
        lit->line = line, lit->col = col;
        return lit;
      }
      auto node = std::make_unique<Ast>(Ast::Node, line, col);
      node->op = Op::NEG;
      node->src.push_back(expression(kUnaryPrec));
      return node;
    }
    return primary();
  }

  std::optional<DType> dtype_suffix() {
    if (!is(":")) return std::nullopt;
    int line = lex_.line(), col = lex_.col();
    std::string text = lex_.dtype_text();
    auto dt = parse_dtype(text);
    if (!dt) throw ParseError("unknown dtype '" + shown(text) + "'", line, col);
    shift();
    return dt;
  }

  AstPtr primary() {
    auto a = std::make_unique<Ast>(Ast::Lit, tok_.line, tok_.col);
    if (tok_.kind == Tok::Int || tok_.kind == Tok::Float) {
      a->lit = tok_.kind == Tok::Int ? LitKind::Int : LitKind::Float;
      a->lit_text = tok_.text;
      shift();
      a->dt = dtype_suffix();
      return a;
    }
    if (is("(")) {
      shift();
      AstPtr e = expression(0);
      expect(")");
      return e;
    }
    if (tok_.kind != Tok::Name)
      fail(tok_.kind == Tok::End || tok_.kind == Tok::Newline ? "expected an expression" : "unexpected '" + shown(tok_.text) + "'");
    std::string name = tok_.text;
    if (name == "true" || name == "false" || name == "inf" || name == "nan") {
      a->lit = name == "true" || name == "false" ? LitKind::Bool : LitKind::Float;
      a->lit_text = name;
      shift();
      a->dt = dtype_suffix();
      return a;
    }
    if (auto op = parse_op(name)) {
      a->kind = Ast::Node, a->op = *op;
      shift();
      a->dt = dtype_suffix();
      if (is("(")) {
        shift();
        if (!is(")"))
          while (true) {
            a->src.push_back(expression(0));
            if (is(")")) break;
            expect(",");
          }
        shift();
      }
      ArgKind kind = op_info(*op).arg;
      if (kind != ArgKind::None) {
        expect("{");
        a->arg = arg_value(*op, kind, a->dt);
        expect("}");
      }
      return a;
    }
    a->kind = Ast::Name, a->name = name;
    shift();
    return a;
  }

  int64_t integer() {
    bool neg = false;
    if (is("-")) neg = true, shift();
    if (tok_.kind != Tok::Int) fail("expected an integer");
    int64_t v = parse_int(tok_.text, neg, dtypes::int64);
    shift();
    return v;
  }
  Ints int_tuple() {
    Ints v;
    expect("(");
    if (!is(")"))
      while (true) {
        v.push_back(integer());
        if (is(")")) break;
        expect(",");
      }
    shift();
    return v;
  }
  Op op_name_arg() {
    if (tok_.kind != Tok::Name || !parse_op(tok_.text)) fail("expected an op name");
    Op o = *parse_op(tok_.text);
    shift();
    return o;
  }

  Arg arg_value(Op op, ArgKind kind, std::optional<DType> dt) {
    switch (kind) {
      case ArgKind::Value: {
        if (!dt) fail(std::string(op_name(op)) + " in function form needs a dtype: CONST:float {1.5}");
        AstPtr lit = unary();
        if (lit->kind != Ast::Lit) fail("expected a literal value");
        return build(*lit, dt->element()).arg();
      }
      case ArgKind::Int: return integer();
      case ArgKind::String: {
        if (tok_.kind != Tok::String) fail("expected a string");
        std::string s = tok_.text;
        shift();
        return s;
      }
      case ArgKind::Var: {
        if (tok_.kind != Tok::String) fail("expected the variable's name as a string");
        VarArg v{tok_.text, 0, 0};
        shift();
        expect(",");
        v.min = integer();
        expect(",");
        v.max = integer();
        return v;
      }
      case ArgKind::Range: {
        RangeArg r{integer(), AxisType::LOOP};
        expect(",");
        if (tok_.kind != Tok::Name || !parse_axis_type(tok_.text)) fail("expected an axis type (GLOBAL, LOCAL, LOOP, REDUCE, ...)");
        r.type = *parse_axis_type(tok_.text);
        shift();
        return r;
      }
      case ArgKind::ReduceOp: return op_name_arg();
      case ArgKind::ReduceAxis: {
        Op o = op_name_arg();
        expect(",");
        return ReduceAxisArg{o, int_tuple()};
      }
      case ArgKind::Ints: return int_tuple();
      case ArgKind::Pairs: {
        Pairs p;
        expect("(");
        if (!is(")"))
          while (true) {
            expect("(");
            int64_t a = integer();
            expect(",");
            int64_t b = integer();
            expect(")");
            p.push_back({a, b});
            if (is(")")) break;
            expect(",");
          }
        shift();
        return p;
      }
      case ArgKind::None: break;
    }
    return {};
  }

  int64_t parse_int(const std::string& text, bool neg, DType dt) {
    uint64_t v = 0;
    auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || p != text.data() + text.size()) fail("integer literal '" + text + "' does not fit 64 bits");
    if (!neg && !dt.is_unsigned() && v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      fail("integer literal " + text + " does not fit " + dt.name());
    if (neg && v > uint64_t{1} << 63) fail("integer literal -" + text + " does not fit 64 bits");
    return static_cast<int64_t>(neg ? 0 - v : v);
  }

  UOp build_literal(const Ast& a, DType dt) {
    if (!dt.is_scalar() || dt.is_void()) throw ParseError("a literal cannot have dtype " + dt.name(), a.line, a.col);
    if (a.lit == LitKind::Bool) {
      if (!dt.is_bool()) throw ParseError(shown(a.lit_text) + " is a bool literal, not " + dt.name(), a.line, a.col);
      return UOp::const_bool(a.lit_text == "true");
    }
    if (a.lit == LitKind::Float) {
      if (!dt.is_float()) throw ParseError("float literal " + shown(a.lit_text) + " where " + dt.name() + " is expected", a.line, a.col);
      double v;
      if (a.lit_text == "inf") v = INFINITY;
      else if (a.lit_text == "nan") v = NAN;
      else {
        auto [p, ec] = std::from_chars(a.lit_text.data(), a.lit_text.data() + a.lit_text.size(), v);
        if (ec != std::errc() || p != a.lit_text.data() + a.lit_text.size())
          throw ParseError("bad float literal '" + shown(a.lit_text) + "'", a.line, a.col);
      }
      return UOp::const_float(dt, a.negative ? -v : v);
    }
    if (dt.is_float())
      throw ParseError("integer literal " + shown(a.lit_text) + " where " + dt.name() + " is expected: write " + shown(a.lit_text) + ".0", a.line,
                       a.col);
    if (dt.is_bool()) throw ParseError("integer literal where bool is expected: write true or false", a.line, a.col);
    int64_t v;
    try {
      v = parse_int(a.lit_text, a.negative, dt);
    } catch (const ParseError&) {
      throw ParseError("integer literal " + std::string(a.negative ? "-" : "") + shown(a.lit_text) + " does not fit " + dt.name(), a.line, a.col);
    }
    if (has_exact_bounds(dt) && (v < dt.min_int() || v > dt.max_int()))
      throw ParseError("integer literal " + std::to_string(v) + " does not fit " + dt.name(), a.line, a.col);
    return UOp::const_int(dt, v);
  }

  // `want`: the dtype the context gives an unsuffixed literal.
  // A name or a literal.
  UOp build_leaf(const Ast& a, std::optional<DType> want) {
    if (a.kind == Ast::Name) {
      auto it = names_.find(a.name);
      if (it == names_.end()) throw ParseError("unknown name '" + shown(a.name) + "'", a.line, a.col);
      return it->second;
    }
    return located(build_literal(a, a.dt ? *a.dt : want ? *want : default_literal(a.lit)), a);
  }
  UOp located(UOp u, const Ast& a) {
    if (where_) where_->try_emplace(u, SourcePos{a.line, a.col});
    return u;
  }

  // A node from its built sources: its dtype written or derived from theirs.
  UOp build_node(const Ast& a, const std::vector<UOp>& src) {
    std::vector<DType> sd;
    for (const UOp& s : src) sd.push_back(s.dtype());
    std::optional<DType> dt = a.dt ? a.dt : derived_dtype(a.op, sd);
    if (!dt) throw ParseError(std::string(op_name(a.op)) + " needs its dtype written: " + std::string(op_name(a.op)) + ":float(...)", a.line, a.col);
    try {
      if (a.op == Op::DEFINE_VAR) {
        const auto& v = std::get<VarArg>(a.arg);
        if (v.min > v.max) throw Error("variable '" + v.name + "': min " + std::to_string(v.min) + " > max " + std::to_string(v.max));
      }
      return located(UOp::make(a.op, *dt, src, a.arg), a);
    } catch (const ParseError&) { throw; } catch (const Error& e) {
      throw ParseError(e.what(), a.line, a.col);
    }
  }

  // The expression's UOp, built with an explicit stack (a long chain is a deep tree). A node's
  // sources are built in two passes: first those whose dtype they state themselves, then bare
  // literals, which take the dtype their typed siblings give (literal_dtype).
  UOp build(const Ast& root, std::optional<DType> want) {
    if (root.kind != Ast::Node) return build_leaf(root, want);
    struct Frame {
      const Ast* a;
      std::vector<UOp> src;
      std::vector<std::optional<DType>> typed;
      size_t i = 0;
      bool literals = false;  // the second pass
    };
    auto frame = [](const Ast& a) { return Frame{&a, std::vector<UOp>(a.src.size()), std::vector<std::optional<DType>>(a.src.size())}; };
    auto states_dtype = [](const Ast& c) { return c.kind != Ast::Lit || c.dt.has_value(); };
    std::vector<Frame> stack;
    stack.push_back(frame(root));
    UOp finished;  // the node just built, for the frame below it
    while (true) {
      Frame& f = stack.back();
      const Ast& a = *f.a;
      if (finished) {
        f.src[f.i] = finished, f.typed[f.i] = finished.dtype(), ++f.i;
        finished = UOp();
      }
      const Ast* child = nullptr;
      while (!f.literals && !child) {
        while (f.i < a.src.size() && !states_dtype(*a.src[f.i])) ++f.i;
        if (f.i == a.src.size()) {
          f.literals = true, f.i = 0;
        } else if (a.src[f.i]->kind == Ast::Node) {
          child = a.src[f.i].get();
        } else {
          f.src[f.i] = build_leaf(*a.src[f.i], std::nullopt), f.typed[f.i] = f.src[f.i].dtype(), ++f.i;
        }
      }
      if (child) {
        stack.push_back(frame(*child));  // `f` is not used past this point
        continue;
      }
      for (size_t i = 0; i < a.src.size(); ++i)
        if (!f.src[i]) f.src[i] = build_leaf(*a.src[i], literal_dtype(a.op, a.dt, f.typed, i, a.src[i]->lit));
      UOp u = build_node(a, f.src);
      stack.pop_back();
      if (stack.empty()) return u;
      finished = u;
    }
  }

  Lexer lex_;
  Token tok_{Tok::End, "", 1, 1};
  std::unordered_map<std::string, UOp> names_;
  int depth_ = 0;
  SourceMap* where_;
};

}  // namespace

std::string print(const UOp& root) { return Printer(root).run(); }

UOp parse(std::string_view text) { return Parser(text).run(); }
UOp parse(std::string_view text, SourceMap& where) { return Parser(text, &where).run(); }

std::string to_inline(const UOp& u, size_t max_len) {
  std::string s = print(u);
  for (char& c : s)
    if (c == '\n') c = ';';
  while (!s.empty() && s.back() == ';') s.pop_back();
  for (size_t p = 0; (p = s.find(";", p)) != std::string::npos; p += 2) s.replace(p, 1, "; ");
  if (s.size() > max_len) s = s.substr(0, max_len > 3 ? max_len - 3 : 0) + "...";
  return s;
}

}  // namespace ugpu::ir
