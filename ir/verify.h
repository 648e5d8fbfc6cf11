// The verifier: every node's dtype, sources and arg obey its op's rules (ir/verify.cpp has the
// table). Tests run it after every rewrite; passes can run it in debug builds.
#pragma once
#include <string>
#include <vector>

#include "common/error.h"
#include "ir/uop.h"

namespace ugpu::ir {

class VerifyError : public Error {
 public:
  using Error::Error;
};

// One message per broken node ("ADD: sources have different dtypes int32 and index: <node>").
std::vector<std::string> verify(const UOp& root);
// Throws VerifyError listing the first problems.
void verify_or_throw(const UOp& root);

}  // namespace ugpu::ir
