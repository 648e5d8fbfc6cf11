#pragma once
#include <string>
#include <vector>

namespace ugpu::tools {
int compile_command(const std::vector<std::string>& args);  // `ugpu compile ...`; returns the exit code
std::string read_input(const std::string& path);            // a file's text, or standard input for "-"
}  // namespace ugpu::tools
