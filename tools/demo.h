#pragma once
#include <string>
#include <vector>

namespace ugpu::hcq {
class Device;
}
namespace ugpu::codegen {
struct BuiltinKernel;
}

namespace ugpu::tools {
// Runs every run of a built-in kernel on the device against its host reference; true when all match.
bool check_builtin(hcq::Device& dev, const codegen::BuiltinKernel& k);
// `ugpu demo`: the built-in kernel suite on a device (empty: the default one), each result checked
// against a host reference; `trace` (if not empty) receives the Chrome-trace profile. Exit code.
int demo(const std::string& device, const std::string& trace);
// `ugpu devices` and `ugpu run FILE.uop ...` (tools/run.cpp). Exit codes.
int devices_command(const std::vector<std::string>& args);
int run_command(const std::vector<std::string>& args);
// `ugpu bringup` (tools/bringup.cpp): boot an AMD GPU with no kernel driver, step by step.
int bringup_command(const std::vector<std::string>& args);
// `ugpu llm --info MODEL.gguf` (tools/llm.cpp).
int llm_command(const std::vector<std::string>& args);
}  // namespace ugpu::tools
