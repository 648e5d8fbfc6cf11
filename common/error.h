// ugpu::Error — the base of every exception ugpu throws (docs/design.md §7).
// Messages say what was being done, what failed, and what the user can do about it.
#pragma once
#include <stdexcept>
#include <string>

namespace ugpu {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace ugpu
