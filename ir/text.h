// The text form of UOp graphs: how users and tests write kernels and index expressions down.
//
//   # comments run to the end of the line
//   i = DEFINE_VAR {"i", 0, 15}          # name = expression binds a name
//   r0 = RANGE(16) {0, LOOP}
//   x = LOAD:float(INDEX:float*(DEFINE_GLOBAL:float* {0}, i*16 + r0))
//   (i*16 + r0) // 4 < 10                # the last line is the graph's root
//
// Expressions: names; literals (`42`, `-3`, `1.5`, `inf`, `nan`, `true`, with an optional `:dtype`
// suffix); `OP:dtype(sources){arg}` for any op (the dtype may be left out where it follows from the
// sources: ALU ops, RANGE, AFTER, and void ops such as SINK and STORE); and infix operators, loosest
// first: `< > == !=`, `|`, `^`, `&`, `<< >>`, `+ -`, `* / // %`, unary `-`. `//` and `%` are floor
// division and modulo (FLOORDIV, FLOORMOD), `/` is FDIV, `a > b` is `b < a`. Write spaces around `*`
// after a literal's dtype suffix. A literal without a suffix takes the dtype of the other operand
// (of WHERE's other branch, or of the op's explicit dtype); alone it is index, float or bool.
//
// Printing then parsing gives back the identical graph (hash-consing makes that pointer equality).
#pragma once
#include <string>
#include <string_view>
#include <unordered_map>

#include "common/error.h"
#include "ir/uop.h"

namespace ugpu::ir {

class ParseError : public Error {
 public:
  ParseError(const std::string& msg, int line, int col)
      : Error("line " + std::to_string(line) + ", column " + std::to_string(col) + ": " + clipped(msg)), line(line), col(col), detail(clipped(msg)) {}
  int line, col;
  std::string detail;  // the message without the position

 private:
  static std::string clipped(const std::string& m) {  // a message never echoes megabytes of input
    return m.size() <= 1000 ? m : m.substr(0, 600) + "... (" + std::to_string(m.size()) + " characters)";
  }
};

std::string print(const UOp& root);
UOp parse(std::string_view text);  // throws ParseError

// Where each node of a parsed graph is first written in the text (1-based), for messages about the
// graph (verification problems) that point into the file.
struct SourcePos {
  int line = 0, col = 0;
};
using SourceMap = std::unordered_map<UOp, SourcePos, UOpHash>;
UOp parse(std::string_view text, SourceMap& where);
// One line, at most max_len characters (elided with "..."), for error messages.
std::string to_inline(const UOp& u, size_t max_len = 200);

}  // namespace ugpu::ir
