// Hugging Face model directories as a second source of weights: safetensors files (F32, F16, BF16)
// with config.json and tokenizer.json, turned into a GgufFile in memory — the metadata keys and
// tensor names llama.cpp's converter (convert_hf_to_gguf.py) would write — so the model, tokenizer
// and generation code read them as they read GGUF files. Nothing is converted on disk and the weights
// are not copied: each safetensors file is mapped, and the GgufFile's tensors point into it.
//
//   GgufFile f = load_hf_directory("Qwen2.5-0.5B-Instruct/");
//   Model m = Model::load(f, "cpu");  Tokenizer t = Tokenizer::from_gguf(f);
//
// safetensors: an 8-byte little-endian header length N, N bytes of JSON
// ({"name": {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {...}}), then the data,
// the offsets relative to its start. Every length, offset and shape is checked against the file: a
// malformed file is an Error naming the file, the tensor and what was wrong (byte offsets for JSON).
//
// The directory: config.json (architectures LlamaForCausalLM, MistralForCausalLM -> "llama",
// Qwen2ForCausalLM -> "qwen2", Qwen3ForCausalLM -> "qwen3"); model.safetensors, or the shards listed
// in model.safetensors.index.json; tokenizer.json (a BPE model: byte-level, or SentencePiece-style
// with byte fallback), with tokenizer_config.json for the special tokens and the chat template.
//
// Differences from llama.cpp's converter's output:
// - q/k rows stay as trained (RoPE rotating halves); the metadata key `ugpu.rope.neox` (true) tells
//   ModelConfig::from_gguf, where llama.cpp permutes llama's rows to rotate adjacent pairs.
// - SentencePiece-style vocabularies get scores from the merge ranks (the first merge that makes a
//   token: score -rank; tokens no merge makes: -1e9), so the "llama" tokenizer merges in BPE's order;
//   llama.cpp writes -1000 for every token.
// - llama 3 RoPE scaling: the per-pair factors llama.cpp writes as rope_freqs.weight are computed
//   here into a synthesized F32 tensor of that name.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "llm/gguf.h"

namespace ugpu::llm {

struct SafetensorsTensor {
  std::string name;
  std::string dtype;           // as written: "F32", "F16", "BF16", "I8" ... (one the format defines)
  std::vector<int64_t> shape;  // row-major; empty for a scalar
  uint64_t offset = 0;         // from the start of the file
  uint64_t bytes = 0;
};

class SafetensorsFile {
 public:
  // Maps the file; an Error starts with the path.
  static SafetensorsFile open(const std::string& path);
  // Parses bytes the caller keeps alive as long as the result (tests).
  static SafetensorsFile parse(std::span<const uint8_t> bytes);

  std::vector<SafetensorsTensor> tensors;                     // in the header's order
  std::vector<std::pair<std::string, std::string>> metadata;  // "__metadata__"

  const SafetensorsTensor* find(std::string_view name) const;  // null when absent
  std::span<const uint8_t> bytes() const { return bytes_; }
  const std::shared_ptr<const void>& mapping() const { return mapping_; }  // null for parse()

 private:
  std::span<const uint8_t> bytes_;
  std::shared_ptr<const void> mapping_;
};

// The bytes of one element of a safetensors dtype; 0 for a name the format does not define.
int safetensors_dtype_size(std::string_view dtype);

// A Hugging Face model directory as a GgufFile (above). Error: a missing file (named), an
// architecture ugpu does not run (named), a malformed or inconsistent file (the file, the key or
// tensor, the byte offset).
GgufFile load_hf_directory(const std::string& dir);

}  // namespace ugpu::llm
