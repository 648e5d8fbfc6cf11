#pragma once
#include <string>

namespace ugpu::tools {
// `ugpu demo`: what ugpu can do today, run end to end and checked. Returns the exit code.
int demo(const std::string& device);
}  // namespace ugpu::tools
