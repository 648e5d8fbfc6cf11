#pragma once
#include <string>
#include <vector>

namespace ugpu::tools {
// `ugpu demo`: the built-in kernel suite on a device (empty: the default one), each result checked
// against a host reference; `trace` (if not empty) receives the Chrome-trace profile. Exit code.
int demo(const std::string& device, const std::string& trace);
// `ugpu devices` and `ugpu run FILE.uop ...` (tools/run.cpp). Exit codes.
int devices_command(const std::vector<std::string>& args);
int run_command(const std::vector<std::string>& args);
// `ugpu llm --info MODEL.gguf` (tools/llm.cpp).
int llm_command(const std::vector<std::string>& args);
}  // namespace ugpu::tools
