#pragma once
#include <optional>
#include <string>
#include <vector>

#include "ir/uop.h"

namespace ugpu::tools {
int compile_command(const std::vector<std::string>& args);  // `ugpu compile ...`; returns the exit code
std::string read_input(const std::string& path);            // a file's text, or standard input for "-"
// A UOp graph from text that came from `where` (a file name): parsed and verified. A parse error is
// printed as WHERE:LINE:COL: ... and gives nullopt (exit 1); verification problems throw, each with
// its WHERE:LINE:COL.
std::optional<ir::UOp> read_graph(const std::string& where, const std::string& text);
}  // namespace ugpu::tools
