// Small helpers shared by the ir tests.
#pragma once
#include <string>

#include "ir/symbolic.h"
#include "ir/text.h"
#include "ir/verify.h"

namespace ugpu::ir::test {

// The last line of a printed graph (the root's expression), for compact expectations.
inline std::string last_line(const std::string& printed) {
  std::string s = printed;
  while (!s.empty() && s.back() == '\n') s.pop_back();
  size_t nl = s.rfind('\n');
  return nl == std::string::npos ? s : s.substr(nl + 1);
}

// Parses `prelude + expr`, simplifies, verifies, and returns the root's printed expression.
inline std::string simp(const std::string& text) {
  UOp u = parse(text);
  UOp s = simplify(u);
  verify_or_throw(s);
  return last_line(print(s));
}

// Variables most tests use.
inline const char* kVars =
    "x = DEFINE_VAR {\"x\", 0, 100}\n"
    "y = DEFINE_VAR {\"y\", 0, 100}\n"
    "n = DEFINE_VAR {\"n\", -50, 50}\n"
    "r0 = RANGE(16) {0, LOOP}\n"
    "r1 = RANGE(4) {1, LOOP}\n"
    "r2 = RANGE(3) {2, REDUCE}\n";

}  // namespace ugpu::ir::test
