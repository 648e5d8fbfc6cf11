// `ugpu llm --info MODEL.gguf`: what a GGUF file holds — architecture, size, quantization mix,
// tokenizer, every metadata key and every tensor. (Generation from the file is the rest of issue 20.)
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "llm/gguf.h"
#include "tools/demo.h"

namespace ugpu::tools {

int llm_command(const std::vector<std::string>& args) {
  std::string path;
  bool info = false;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--info") info = true;
    else if (!args[i].empty() && args[i][0] == '-') {
      std::fprintf(stderr, "ugpu llm: unknown option '%s'\nusage: ugpu llm --info MODEL.gguf\n", args[i].c_str());
      return 2;
    } else if (path.empty()) path = args[i];
    else {
      std::fprintf(stderr, "ugpu llm: one model file, please ('%s' and '%s' given)\n", path.c_str(), args[i].c_str());
      return 2;
    }
  }
  if (path.empty()) {
    std::fprintf(stderr, "usage: ugpu llm --info MODEL.gguf\n");
    return 2;
  }
  if (!info) {
    std::fprintf(stderr, "ugpu llm: generating text is not built yet; `ugpu llm --info %s` shows what the file holds\n", path.c_str());
    return 2;
  }
  llm::GgufFile f = llm::GgufFile::open(path);
  auto str = [&](const std::string& key) -> std::string {
    const llm::GgufValue* v = f.find(key);
    return v && v->type == llm::GgufValue::Type::String ? v->as_string() : "?";
  };
  std::printf("file: %s (%zu bytes, GGUF version %u, alignment %lu)\n", path.c_str(), f.size(), f.version, static_cast<unsigned long>(f.alignment));
  std::string arch = str("general.architecture");
  std::printf("architecture: %s    name: %s\n", arch.c_str(), str("general.name").c_str());
  int64_t params = 0;
  uint64_t bytes = 0;
  std::map<std::string, std::pair<int, uint64_t>> mix;  // type -> (tensors, bytes)
  for (const llm::GgufTensor& t : f.tensors) {
    params += t.elements();
    bytes += t.bytes;
    auto& m = mix[llm::ggml_type_info(static_cast<uint32_t>(t.type))->name];
    m.first += 1, m.second += t.bytes;
  }
  std::printf("tensors: %zu, %.3f billion parameters, %.1f MiB of weights (%.2f bits per parameter)\n", f.tensors.size(),
              static_cast<double>(params) / 1e9, static_cast<double>(bytes) / (1 << 20),
              params ? 8.0 * static_cast<double>(bytes) / static_cast<double>(params) : 0.0);
  std::printf("quantization:");
  for (const auto& [type, m] : mix) std::printf(" %s %d tensors (%.1f MiB);", type.c_str(), m.first, static_cast<double>(m.second) / (1 << 20));
  std::printf("\n");
  const llm::GgufValue* tokens = f.find("tokenizer.ggml.tokens");
  std::printf("tokenizer: %s, %zu tokens\n", str("tokenizer.ggml.model").c_str(),
              tokens && tokens->type == llm::GgufValue::Type::Array ? tokens->as_array().size() : size_t{0});
  std::printf("\nmetadata (%zu keys):\n", f.metadata.size());
  for (const auto& [key, value] : f.metadata) std::printf("  %-40s %s\n", key.c_str(), value.to_string().c_str());
  std::printf("\ntensors (dimensions fastest-varying first, as stored):\n");
  for (const llm::GgufTensor& t : f.tensors) {
    std::string dims;
    for (int64_t d : t.dims) dims += (dims.empty() ? "" : ", ") + std::to_string(d);
    std::printf("  %-40s %-5s [%s]  %lu bytes at %lu\n", t.name.c_str(), llm::ggml_type_info(static_cast<uint32_t>(t.type))->name, dims.c_str(),
                static_cast<unsigned long>(t.bytes), static_cast<unsigned long>(t.offset));
  }
  return 0;
}

}  // namespace ugpu::tools
