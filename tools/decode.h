#pragma once
#include <string>
#include <vector>

namespace ugpu::tools {
int decode_command(const std::vector<std::string>& args);  // ugpu decode
}
