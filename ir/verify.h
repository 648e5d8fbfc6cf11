// The verifier: every node's dtype, sources and arg obey its op's rules (ir/verify.cpp has the
// table). Tests run it after every rewrite; passes can run it in debug builds.
#pragma once
#include <string>
#include <vector>

#include "common/error.h"
#include "ir/text.h"
#include "ir/uop.h"

namespace ugpu::ir {

class VerifyError : public Error {
 public:
  using Error::Error;
};

// One message per broken node ("ADD: sources have different dtypes int32 and index: <node>").
std::vector<std::string> verify(const UOp& root);
struct Problem {
  UOp node;
  std::string message;
};
std::vector<Problem> verify_nodes(const UOp& root);  // the same, with the node each is about
// Throws VerifyError listing the first problems. Given where the nodes were parsed from (`where`, and
// the file's name for the messages), each problem starts with FILE:LINE:COL.
void verify_or_throw(const UOp& root);
void verify_or_throw(const UOp& root, const SourceMap& where, const std::string& file);

}  // namespace ugpu::ir
