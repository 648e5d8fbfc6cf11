#pragma once
#include <string>
#include <vector>

namespace ugpu::tools {
int compile_command(const std::vector<std::string>& args);  // `ugpu compile ...`; returns the exit code
}
