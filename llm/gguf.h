// GGUF (llama.cpp's model file format), versions 2 and 3: the metadata, the tensor infos and the
// tensor data, read from a file mapped into memory (not copied). The file is outside input: every
// count, length, dimension and offset is checked against the file, and a malformed file is an Error
// naming the byte offset and what was wrong.
//
// Layout: "GGUF", u32 version, u64 tensor count, u64 metadata count; the metadata (string key, u32
// value type, value); the tensor infos (string name, u32 dims, u64 sizes with the fastest-varying
// first, u32 ggml type, u64 offset into the data); padding to `general.alignment` (default 32); the
// data. Strings are a u64 length and bytes; arrays a u32 element type, a u64 count and the elements.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

namespace ugpu::llm {

// ggml's tensor types (their numbers in the file) and the block each is stored in.
enum class GgmlType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q8_1 = 9,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  Q8_K = 15,
  I8 = 24,
  I16 = 25,
  I32 = 26,
  I64 = 27,
  F64 = 28,
  BF16 = 30,
};
struct GgmlTypeInfo {
  GgmlType type;
  const char* name;
  uint32_t block;  // elements per block
  uint32_t bytes;  // bytes per block
};
const GgmlTypeInfo* ggml_type_info(uint32_t type);  // null for a type this reader does not know

struct GgufValue {
  enum class Type : uint32_t {
    U8 = 0,
    I8 = 1,
    U16 = 2,
    I16 = 3,
    U32 = 4,
    I32 = 5,
    F32 = 6,
    Bool = 7,
    String = 8,
    Array = 9,
    U64 = 10,
    I64 = 11,
    F64 = 12
  };
  Type type = Type::U8;
  Type element = Type::U8;  // arrays: the elements' type
  std::variant<uint64_t, int64_t, double, bool, std::string, std::vector<GgufValue>> v;

  // Typed reads; an Error names the actual type when the value is not one.
  int64_t as_int() const;   // any integer type (a u64 above INT64_MAX is an Error)
  double as_float() const;  // floats and integers
  bool as_bool() const;
  const std::string& as_string() const;
  const std::vector<GgufValue>& as_array() const;
  std::string to_string(size_t max_elements = 8) const;  // for `ugpu llm --info`
};
const char* gguf_type_name(GgufValue::Type t);

struct GgufTensor {
  std::string name;
  std::vector<int64_t> dims;  // as stored: dims[0] varies fastest (the reverse of a row-major shape)
  GgmlType type;
  uint64_t offset = 0;  // from the start of the file (of its source, for a model assembled in memory)
  uint64_t bytes = 0;
  uint32_t source = 0;  // which of the GgufFile's byte ranges holds the data: 0, the file itself, for a GGUF file
  int64_t elements() const;
};

class GgufFile {
 public:
  // Maps the file; throws Error (with the path) when it cannot be opened or is malformed.
  static GgufFile open(const std::string& path);
  // Parses bytes the caller keeps alive as long as the GgufFile (tests, fuzzing).
  static GgufFile parse(std::span<const uint8_t> bytes);

  uint32_t version = 0;
  uint64_t alignment = 32;
  uint64_t data_offset = 0;  // where the tensor data starts
  std::vector<std::pair<std::string, GgufValue>> metadata;
  std::vector<GgufTensor> tensors;

  const GgufValue* find(const std::string& key) const;  // null when absent
  const GgufTensor* tensor(const std::string& name) const;
  // The tensor's bytes in its source (Error when they are not inside it).
  std::span<const uint8_t> data(const GgufTensor& t) const;
  size_t size() const;  // the bytes of every source

  // Models assembled in memory (llm/safetensors.h: a Hugging Face directory): another range of bytes
  // (a mapped file, synthesized data) that tensors point into with `source` = the index returned.
  // `owner` keeps the bytes alive as long as any copy of this GgufFile.
  uint32_t add_source(std::span<const uint8_t> bytes, std::shared_ptr<const void> owner);

 private:
  std::vector<std::shared_ptr<const void>> owners_;  // unmap the files when the last copy goes
  std::vector<std::span<const uint8_t>> sources_;    // [0]: a GGUF file's own bytes
};

}  // namespace ugpu::llm
