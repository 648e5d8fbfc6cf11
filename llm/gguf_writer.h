// A GGUF writer (version 3): metadata of every value type, tensors, and the file laid out as
// llama.cpp's loader expects it (llm/gguf.h describes the format). The test-model generator
// (llm/testmodel.h) writes its files with it; tests and fuzz corpora take the bytes in memory.
//
// Layout written: the header, the metadata in the order added, the tensor infos in the order added,
// padding to the alignment, then each tensor's data padded to the alignment (the file ends padded
// too). Tensor offsets are exactly those ggml computes from the sizes, which its reader requires.
#pragma once
#include <cstdint>
#include <string>
#include <unordered_set>
#include <vector>

#include "llm/gguf.h"

namespace ugpu::llm {

class GgufWriter {
 public:
  // alignment: a power of two; written as general.alignment (u32) when it is not the default 32.
  explicit GgufWriter(uint32_t alignment = 32);

  // Metadata. Each key once (a second add is an Error); "general.alignment" comes from the constructor.
  void add_u8(const std::string& key, uint8_t v);
  void add_i8(const std::string& key, int8_t v);
  void add_u16(const std::string& key, uint16_t v);
  void add_i16(const std::string& key, int16_t v);
  void add_u32(const std::string& key, uint32_t v);
  void add_i32(const std::string& key, int32_t v);
  void add_u64(const std::string& key, uint64_t v);
  void add_i64(const std::string& key, int64_t v);
  void add_f32(const std::string& key, float v);
  void add_f64(const std::string& key, double v);
  void add_bool(const std::string& key, bool v);
  void add_string(const std::string& key, const std::string& v);
  // Arrays of scalars: `element` is the stored type; each value must fit it (an Error names the index).
  void add_ints(const std::string& key, GgufValue::Type element, const std::vector<int64_t>& values);
  void add_u64s(const std::string& key, const std::vector<uint64_t>& values);  // u64 values above INT64_MAX
  void add_f32s(const std::string& key, const std::vector<float>& values);
  void add_f64s(const std::string& key, const std::vector<double>& values);
  void add_bools(const std::string& key, const std::vector<bool>& values);
  void add_strings(const std::string& key, const std::vector<std::string>& values);
  // Any value as the reader returns it, arrays of arrays included (checked: every array element has
  // the array's element type, integers fit their type).
  void add(const std::string& key, const GgufValue& value);

  // A tensor: dims with the fastest-varying first (GGUF order), 1 to 4 of them, each > 0; dims[0] a
  // multiple of the type's block; `bytes` exactly the size of that many values of that type.
  void add_tensor(const std::string& name, const std::vector<int64_t>& dims, GgmlType type, std::vector<uint8_t> bytes);

  size_t metadata_count() const { return kv_count_; }
  size_t tensor_count() const { return tensors_.size(); }

  std::vector<uint8_t> bytes() const;
  // Writes path.tmp and renames it over path, so a reader never sees half a file; an I/O failure is
  // an Error naming the path (and path.tmp is removed).
  void write(const std::string& path) const;

 private:
  struct Tensor {
    std::string name;
    std::vector<int64_t> dims;
    GgmlType type;
    std::vector<uint8_t> data;
  };
  std::vector<uint8_t> head() const;                         // header, metadata, tensor infos, padding: all before the data
  void begin(const std::string& key, GgufValue::Type type);  // checks the key, writes it and the type
  void put_value(const GgufValue& v, GgufValue::Type type, int depth, const std::string& key);
  template <class T>
  void put(T v);
  void put_str(const std::string& s);

  uint32_t alignment_;
  std::vector<uint8_t> meta_;  // the metadata pairs, serialized as added
  uint64_t kv_count_ = 0;
  std::unordered_set<std::string> keys_;
  std::vector<Tensor> tensors_;
  std::unordered_set<std::string> names_;
};

}  // namespace ugpu::llm
