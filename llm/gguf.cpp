// The GGUF reader (llm/gguf.h).
#include "llm/gguf.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>

#include "common/error.h"

namespace ugpu::llm {

namespace {

constexpr GgmlTypeInfo kTypes[] = {
    {GgmlType::F32, "F32", 1, 4},       {GgmlType::F16, "F16", 1, 2},       {GgmlType::Q4_0, "Q4_0", 32, 18},   {GgmlType::Q4_1, "Q4_1", 32, 20},
    {GgmlType::Q5_0, "Q5_0", 32, 22},   {GgmlType::Q5_1, "Q5_1", 32, 24},   {GgmlType::Q8_0, "Q8_0", 32, 34},   {GgmlType::Q8_1, "Q8_1", 32, 36},
    {GgmlType::Q2_K, "Q2_K", 256, 84},  {GgmlType::Q3_K, "Q3_K", 256, 110}, {GgmlType::Q4_K, "Q4_K", 256, 144}, {GgmlType::Q5_K, "Q5_K", 256, 176},
    {GgmlType::Q6_K, "Q6_K", 256, 210}, {GgmlType::Q8_K, "Q8_K", 256, 292}, {GgmlType::I8, "I8", 1, 1},         {GgmlType::I16, "I16", 1, 2},
    {GgmlType::I32, "I32", 1, 4},       {GgmlType::I64, "I64", 1, 8},       {GgmlType::F64, "F64", 1, 8},       {GgmlType::BF16, "BF16", 1, 2},
};

constexpr const char* kValueNames[] = {"u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string", "array", "u64", "i64", "f64"};
constexpr int kMaxDims = 4;        // ggml's GGML_MAX_DIMS
constexpr int kMaxArrayDepth = 4;  // arrays of arrays: deeper is refused, not recursed into

// A cursor over the file with every read bounds-checked.
class Reader {
 public:
  explicit Reader(std::span<const uint8_t> b) : b_(b) {}
  size_t pos() const { return pos_; }
  size_t left() const { return b_.size() - pos_; }
  [[noreturn]] void fail(const std::string& what) const { throw Error("GGUF: at byte " + std::to_string(pos_) + ": " + what); }

  template <class T>
  T get(const char* what) {
    if (left() < sizeof(T)) fail(std::string("the file ends inside ") + what);
    T v;
    std::memcpy(&v, b_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  std::string string(const char* what) {
    uint64_t n = get<uint64_t>(what);
    if (n > left()) fail(std::string(what) + " is " + std::to_string(n) + " bytes long, past the end of the file");
    std::string s(reinterpret_cast<const char*>(b_.data() + pos_), static_cast<size_t>(n));
    pos_ += static_cast<size_t>(n);
    return s;
  }
  // A count of items each at least `min_bytes` long must fit in what is left.
  uint64_t count(const char* what, size_t min_bytes) {
    uint64_t n = get<uint64_t>(what);
    if (min_bytes && n > left() / min_bytes)
      fail(std::string(what) + " " + std::to_string(n) + " cannot fit in the " + std::to_string(left()) + " bytes left");
    return n;
  }

  GgufValue value(uint32_t type, int depth) {
    if (type > 12) fail("unknown metadata value type " + std::to_string(type));
    GgufValue v;
    v.type = static_cast<GgufValue::Type>(type);
    switch (v.type) {
      case GgufValue::Type::U8: v.v = uint64_t{get<uint8_t>("a u8")}; break;
      case GgufValue::Type::I8: v.v = int64_t{get<int8_t>("an i8")}; break;
      case GgufValue::Type::U16: v.v = uint64_t{get<uint16_t>("a u16")}; break;
      case GgufValue::Type::I16: v.v = int64_t{get<int16_t>("an i16")}; break;
      case GgufValue::Type::U32: v.v = uint64_t{get<uint32_t>("a u32")}; break;
      case GgufValue::Type::I32: v.v = int64_t{get<int32_t>("an i32")}; break;
      case GgufValue::Type::U64: v.v = get<uint64_t>("a u64"); break;
      case GgufValue::Type::I64: v.v = get<int64_t>("an i64"); break;
      case GgufValue::Type::F32: v.v = double{get<float>("an f32")}; break;
      case GgufValue::Type::F64: v.v = get<double>("an f64"); break;
      case GgufValue::Type::Bool: {
        uint8_t b = get<uint8_t>("a bool");
        if (b > 1) fail("a bool is " + std::to_string(b) + ", not 0 or 1");
        v.v = b == 1;
        break;
      }
      case GgufValue::Type::String: v.v = string("a string"); break;
      case GgufValue::Type::Array: {
        if (depth >= kMaxArrayDepth) fail("arrays nested more than " + std::to_string(kMaxArrayDepth) + " deep");
        uint32_t et = get<uint32_t>("an array's element type");
        if (et > 12) fail("unknown array element type " + std::to_string(et));
        v.element = static_cast<GgufValue::Type>(et);
        uint64_t n = count("an array's length", 1);
        std::vector<GgufValue> items;
        items.reserve(static_cast<size_t>(std::min<uint64_t>(n, 1 << 16)));  // grows only as elements are read
        for (uint64_t i = 0; i < n; ++i) items.push_back(value(et, depth + 1));
        v.v = std::move(items);
        break;
      }
    }
    return v;
  }

 private:
  std::span<const uint8_t> b_;
  size_t pos_ = 0;
};

[[noreturn]] void wrong_type(const GgufValue& v, const char* want) {
  throw Error(std::string("GGUF metadata: a ") + gguf_type_name(v.type) + " value where " + want + " was expected");
}

}  // namespace

const GgmlTypeInfo* ggml_type_info(uint32_t type) {
  for (const GgmlTypeInfo& t : kTypes)
    if (static_cast<uint32_t>(t.type) == type) return &t;
  return nullptr;
}

const char* gguf_type_name(GgufValue::Type t) {
  auto i = static_cast<uint32_t>(t);
  return i <= 12 ? kValueNames[i] : "?";
}

int64_t GgufValue::as_int() const {
  if (const auto* u = std::get_if<uint64_t>(&v)) {
    if (*u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      throw Error("GGUF metadata: the u64 " + std::to_string(*u) + " does not fit int64");
    return static_cast<int64_t>(*u);
  }
  if (const auto* i = std::get_if<int64_t>(&v)) return *i;
  wrong_type(*this, "an integer");
}
double GgufValue::as_float() const {
  if (const auto* d = std::get_if<double>(&v)) return *d;
  return static_cast<double>(as_int());
}
bool GgufValue::as_bool() const {
  if (const auto* b = std::get_if<bool>(&v)) return *b;
  wrong_type(*this, "a bool");
}
const std::string& GgufValue::as_string() const {
  if (const auto* s = std::get_if<std::string>(&v)) return *s;
  wrong_type(*this, "a string");
}
const std::vector<GgufValue>& GgufValue::as_array() const {
  if (const auto* a = std::get_if<std::vector<GgufValue>>(&v)) return *a;
  wrong_type(*this, "an array");
}

std::string GgufValue::to_string(size_t max_elements) const {
  switch (type) {
    case Type::String: {
      const std::string& s = as_string();
      return "\"" + (s.size() > 80 ? s.substr(0, 77) + "..." : s) + "\"";
    }
    case Type::Bool: return as_bool() ? "true" : "false";
    case Type::F32:
    case Type::F64: {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%g", as_float());
      return buf;
    }
    case Type::Array: {
      const auto& a = as_array();
      std::string r = std::string("[") + gguf_type_name(element) + " x " + std::to_string(a.size()) + ": ";
      for (size_t i = 0; i < a.size() && i < max_elements; ++i) r += (i ? ", " : "") + a[i].to_string(max_elements);
      return r + (a.size() > max_elements ? ", ...]" : "]");
    }
    default:
      if (const auto* u = std::get_if<uint64_t>(&v)) return std::to_string(*u);
      return std::to_string(std::get<int64_t>(v));
  }
}

int64_t GgufTensor::elements() const {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

GgufFile GgufFile::parse(std::span<const uint8_t> bytes) {
  Reader r(bytes);
  GgufFile f;
  f.sources_.push_back(bytes);
  if (r.get<uint32_t>("the magic") != 0x46554747u) throw Error("GGUF: not a GGUF file (the first 4 bytes are not \"GGUF\")");
  f.version = r.get<uint32_t>("the version");
  if (f.version == 1) throw Error("GGUF: version 1 (32-bit counts, 2023) is not supported; convert the file with a current llama.cpp");
  if (f.version != 2 && f.version != 3) throw Error("GGUF: version " + std::to_string(f.version) + " is not one this reader knows (2 and 3)");
  uint64_t tensor_count = r.count("the tensor count", 24);  // name length, dims, type, offset: 24 bytes at least
  uint64_t kv_count = r.count("the metadata count", 13);    // key length and a value type: 13 bytes at least
  for (uint64_t i = 0; i < kv_count; ++i) {
    std::string key = r.string("a metadata key");
    uint32_t type = r.get<uint32_t>("a metadata value type");
    f.metadata.emplace_back(std::move(key), r.value(type, 0));
  }
  if (const GgufValue* a = f.find("general.alignment")) {
    int64_t al = a->as_int();
    if (al <= 0 || al > (1 << 20) || (al & (al - 1)))
      throw Error("GGUF: general.alignment " + std::to_string(al) + " is not a power of two up to 1 MiB");
    f.alignment = static_cast<uint64_t>(al);
  }
  for (uint64_t i = 0; i < tensor_count; ++i) {
    GgufTensor t;
    t.name = r.string("a tensor name");
    uint32_t nd = r.get<uint32_t>("a tensor's dimension count");
    if (nd == 0 || nd > kMaxDims) r.fail("tensor '" + t.name + "' has " + std::to_string(nd) + " dimensions (1 to 4)");
    int64_t elements = 1;
    for (uint32_t d = 0; d < nd; ++d) {
      uint64_t n = r.get<uint64_t>("a tensor dimension");
      if (n == 0 || n > (uint64_t{1} << 48) || static_cast<uint64_t>(elements) > (uint64_t{1} << 48) / n)
        r.fail("tensor '" + t.name + "' has a dimension of " + std::to_string(n) + " (0, or more than 2^48 elements in all)");
      t.dims.push_back(static_cast<int64_t>(n));
      elements *= static_cast<int64_t>(n);
    }
    uint32_t type = r.get<uint32_t>("a tensor type");
    const GgmlTypeInfo* ti = ggml_type_info(type);
    if (!ti) r.fail("tensor '" + t.name + "' has ggml type " + std::to_string(type) + ", which this reader does not know");
    t.type = ti->type;
    if (t.dims[0] % ti->block)
      r.fail("tensor '" + t.name + "' has rows of " + std::to_string(t.dims[0]) + " elements, not a multiple of " + ti->name + "'s block of " +
             std::to_string(ti->block));
    t.bytes = static_cast<uint64_t>(elements / ti->block) * ti->bytes;
    t.offset = r.get<uint64_t>("a tensor offset");
    if (t.offset % f.alignment)
      r.fail("tensor '" + t.name + "' starts at " + std::to_string(t.offset) + ", not a multiple of the alignment " + std::to_string(f.alignment));
    f.tensors.push_back(std::move(t));
  }
  f.data_offset = (r.pos() + f.alignment - 1) / f.alignment * f.alignment;
  for (GgufTensor& t : f.tensors) {
    uint64_t start = f.data_offset + t.offset;
    if (t.offset > bytes.size() || start > bytes.size() || t.bytes > bytes.size() - start)
      throw Error("GGUF: tensor '" + t.name + "' (" + std::to_string(t.bytes) + " bytes at data offset " + std::to_string(t.offset) +
                  ") runs past the end of the " + std::to_string(bytes.size()) + "-byte file (truncated?)");
    t.offset = start;
  }
  return f;
}

GgufFile GgufFile::open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error("GGUF: cannot open " + path + ": " + std::strerror(errno));
  struct stat st{};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error("GGUF: " + path + " is not a regular file");
  }
  size_t n = static_cast<size_t>(st.st_size);
  if (n == 0) {
    ::close(fd);
    throw Error("GGUF: " + path + " is empty");
  }
  void* p = mmap(nullptr, n, PROT_READ, MAP_PRIVATE, fd, 0);
  int err = errno;
  ::close(fd);
  if (p == MAP_FAILED) throw Error("GGUF: cannot map " + path + ": " + std::strerror(err));
  std::shared_ptr<const void> mapping(p, [n](const void* q) { munmap(const_cast<void*>(q), n); });
  try {
    GgufFile f = parse(std::span<const uint8_t>(static_cast<const uint8_t*>(p), n));
    f.owners_.push_back(std::move(mapping));
    return f;
  } catch (const Error& e) { throw Error(path + ": " + e.what()); }
}

const GgufValue* GgufFile::find(const std::string& key) const {
  for (const auto& [k, v] : metadata)
    if (k == key) return &v;
  return nullptr;
}

const GgufTensor* GgufFile::tensor(const std::string& name) const {
  for (const GgufTensor& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

std::span<const uint8_t> GgufFile::data(const GgufTensor& t) const {
  if (t.source >= sources_.size() || t.offset > sources_[t.source].size() || t.bytes > sources_[t.source].size() - t.offset)
    throw Error("GGUF: tensor '" + t.name + "' (" + std::to_string(t.bytes) + " bytes at " + std::to_string(t.offset) + " in source " +
                std::to_string(t.source) + ") is not inside the model's data");
  return sources_[t.source].subspan(static_cast<size_t>(t.offset), static_cast<size_t>(t.bytes));
}

size_t GgufFile::size() const {
  size_t n = 0;
  for (const auto& s : sources_) n += s.size();
  return n;
}

uint32_t GgufFile::add_source(std::span<const uint8_t> bytes, std::shared_ptr<const void> owner) {
  sources_.push_back(bytes);
  if (owner) owners_.push_back(std::move(owner));
  return static_cast<uint32_t>(sources_.size() - 1);
}

}  // namespace ugpu::llm
