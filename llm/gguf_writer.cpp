// The GGUF writer (llm/gguf_writer.h).
#include "llm/gguf_writer.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>

#include "common/error.h"
#include "llm/quant.h"

namespace ugpu::llm {

namespace {

constexpr uint32_t kMagic = 0x46554747u;  // "GGUF"
constexpr uint32_t kVersion = 3;
constexpr size_t kMaxName = 63;  // ggml's GGML_MAX_NAME (64) with the terminating zero
constexpr size_t kMaxDims = 4;
constexpr int kMaxDepth = 4;  // the reader's limit on arrays of arrays

using Type = GgufValue::Type;

bool is_unsigned(Type t) { return t == Type::U8 || t == Type::U16 || t == Type::U32 || t == Type::U64; }
bool is_signed(Type t) { return t == Type::I8 || t == Type::I16 || t == Type::I32 || t == Type::I64; }

// The range of an integer type, as [lo, hi] in the widest types.
void int_range(Type t, int64_t& lo, uint64_t& hi) {
  switch (t) {
    case Type::U8: lo = 0, hi = 0xff; break;
    case Type::U16: lo = 0, hi = 0xffff; break;
    case Type::U32: lo = 0, hi = 0xffffffffu; break;
    case Type::U64: lo = 0, hi = std::numeric_limits<uint64_t>::max(); break;
    case Type::I8: lo = -128, hi = 127; break;
    case Type::I16: lo = -32768, hi = 32767; break;
    case Type::I32: lo = std::numeric_limits<int32_t>::min(), hi = std::numeric_limits<int32_t>::max(); break;
    default: lo = std::numeric_limits<int64_t>::min(), hi = std::numeric_limits<int64_t>::max(); break;
  }
}

uint64_t padded(uint64_t n, uint64_t align) { return (n + align - 1) / align * align; }

[[noreturn]] void fail_tensor(const std::string& name, const std::string& what) { throw Error("GGUF writer: tensor '" + name + "': " + what); }
[[noreturn]] void fail_kv(const std::string& key, const std::string& what) { throw Error("GGUF writer: metadata '" + key + "': " + what); }

std::string dims_text(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

}  // namespace

GgufWriter::GgufWriter(uint32_t alignment) : alignment_(alignment) {
  if (alignment == 0 || (alignment & (alignment - 1)) || alignment > (1u << 20))
    throw Error("GGUF writer: alignment " + std::to_string(alignment) + " is not a power of two up to 1 MiB");
  if (alignment != 32) {
    put_str("general.alignment");
    put<uint32_t>(static_cast<uint32_t>(Type::U32)), put<uint32_t>(alignment);
    keys_.insert("general.alignment");
    ++kv_count_;
  }
}

template <class T>
void GgufWriter::put(T v) {
  uint8_t tmp[sizeof(T)];
  std::memcpy(tmp, &v, sizeof(T));
  meta_.insert(meta_.end(), tmp, tmp + sizeof(T));
}

void GgufWriter::put_str(const std::string& s) {
  put<uint64_t>(s.size());
  meta_.insert(meta_.end(), s.begin(), s.end());
}

void GgufWriter::begin(const std::string& key, Type type) {
  if (key.empty()) throw Error("GGUF writer: a metadata key is empty");
  if (key == "general.alignment") throw Error("GGUF writer: general.alignment is set by the GgufWriter constructor, not added");
  if (!keys_.insert(key).second) throw Error("GGUF writer: metadata key '" + key + "' added twice");
  put_str(key);
  put<uint32_t>(static_cast<uint32_t>(type));
  ++kv_count_;
}

void GgufWriter::add_u8(const std::string& key, uint8_t v) { begin(key, Type::U8), put(v); }
void GgufWriter::add_i8(const std::string& key, int8_t v) { begin(key, Type::I8), put(v); }
void GgufWriter::add_u16(const std::string& key, uint16_t v) { begin(key, Type::U16), put(v); }
void GgufWriter::add_i16(const std::string& key, int16_t v) { begin(key, Type::I16), put(v); }
void GgufWriter::add_u32(const std::string& key, uint32_t v) { begin(key, Type::U32), put(v); }
void GgufWriter::add_i32(const std::string& key, int32_t v) { begin(key, Type::I32), put(v); }
void GgufWriter::add_u64(const std::string& key, uint64_t v) { begin(key, Type::U64), put(v); }
void GgufWriter::add_i64(const std::string& key, int64_t v) { begin(key, Type::I64), put(v); }
void GgufWriter::add_f32(const std::string& key, float v) { begin(key, Type::F32), put(v); }
void GgufWriter::add_f64(const std::string& key, double v) { begin(key, Type::F64), put(v); }
void GgufWriter::add_bool(const std::string& key, bool v) { begin(key, Type::Bool), put<uint8_t>(v ? 1 : 0); }
void GgufWriter::add_string(const std::string& key, const std::string& v) { begin(key, Type::String), put_str(v); }

void GgufWriter::add_ints(const std::string& key, Type element, const std::vector<int64_t>& values) {
  if (!is_signed(element) && !is_unsigned(element))
    throw Error("GGUF writer: '" + key + "': add_ints needs an integer element type, not " + gguf_type_name(element));
  GgufValue a;
  a.type = Type::Array, a.element = element;
  std::vector<GgufValue> items(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    items[i].type = element;
    if (is_unsigned(element) && values[i] >= 0) items[i].v = static_cast<uint64_t>(values[i]);
    else items[i].v = values[i];
  }
  a.v = std::move(items);
  add(key, a);
}

void GgufWriter::add_u64s(const std::string& key, const std::vector<uint64_t>& values) {
  begin(key, Type::Array);
  put<uint32_t>(static_cast<uint32_t>(Type::U64)), put<uint64_t>(values.size());
  for (uint64_t v : values) put(v);
}
void GgufWriter::add_f32s(const std::string& key, const std::vector<float>& values) {
  begin(key, Type::Array);
  put<uint32_t>(static_cast<uint32_t>(Type::F32)), put<uint64_t>(values.size());
  for (float v : values) put(v);
}
void GgufWriter::add_f64s(const std::string& key, const std::vector<double>& values) {
  begin(key, Type::Array);
  put<uint32_t>(static_cast<uint32_t>(Type::F64)), put<uint64_t>(values.size());
  for (double v : values) put(v);
}
void GgufWriter::add_bools(const std::string& key, const std::vector<bool>& values) {
  begin(key, Type::Array);
  put<uint32_t>(static_cast<uint32_t>(Type::Bool)), put<uint64_t>(values.size());
  for (bool v : values) put<uint8_t>(v ? 1 : 0);
}
void GgufWriter::add_strings(const std::string& key, const std::vector<std::string>& values) {
  begin(key, Type::Array);
  put<uint32_t>(static_cast<uint32_t>(Type::String)), put<uint64_t>(values.size());
  for (const std::string& v : values) put_str(v);
}

void GgufWriter::add(const std::string& key, const GgufValue& value) {
  // A bad value leaves the writer as it was.
  size_t saved = meta_.size();
  begin(key, value.type);
  try {
    put_value(value, value.type, 0, key);
  } catch (...) {
    meta_.resize(saved), --kv_count_, keys_.erase(key);
    throw;
  }
}

void GgufWriter::put_value(const GgufValue& v, Type type, int depth, const std::string& key) {
  if (v.type != type) fail_kv(key, std::string("a ") + gguf_type_name(v.type) + " value where the array holds " + gguf_type_name(type));
  if (is_unsigned(type) || is_signed(type)) {
    int64_t lo;
    uint64_t hi;
    int_range(type, lo, hi);
    uint64_t bits = 0;
    if (const auto* u = std::get_if<uint64_t>(&v.v)) {
      if (*u > hi) fail_kv(key, std::to_string(*u) + " does not fit a " + gguf_type_name(type));
      bits = *u;
    } else if (const auto* i = std::get_if<int64_t>(&v.v)) {
      if (*i < lo || (*i > 0 && static_cast<uint64_t>(*i) > hi)) fail_kv(key, std::to_string(*i) + " does not fit a " + gguf_type_name(type));
      bits = static_cast<uint64_t>(*i);
    } else {
      fail_kv(key, std::string("a ") + gguf_type_name(type) + " holds no integer");
    }
    switch (type) {
      case Type::U8:
      case Type::I8: put(static_cast<uint8_t>(bits)); break;
      case Type::U16:
      case Type::I16: put(static_cast<uint16_t>(bits)); break;
      case Type::U32:
      case Type::I32: put(static_cast<uint32_t>(bits)); break;
      default: put(bits); break;
    }
    return;
  }
  switch (type) {
    case Type::F32: put(static_cast<float>(v.as_float())); break;
    case Type::F64: put(v.as_float()); break;
    case Type::Bool: put<uint8_t>(v.as_bool() ? 1 : 0); break;
    case Type::String: put_str(v.as_string()); break;
    case Type::Array: {
      if (depth >= kMaxDepth) fail_kv(key, "arrays nested more than " + std::to_string(kMaxDepth) + " deep");
      if (static_cast<uint32_t>(v.element) > 12) fail_kv(key, "unknown array element type " + std::to_string(static_cast<uint32_t>(v.element)));
      const auto& items = v.as_array();
      put<uint32_t>(static_cast<uint32_t>(v.element)), put<uint64_t>(items.size());
      for (const GgufValue& item : items) put_value(item, v.element, depth + 1, key);
      break;
    }
    default: fail_kv(key, "unknown value type " + std::to_string(static_cast<uint32_t>(type)));
  }
}

void GgufWriter::add_tensor(const std::string& name, const std::vector<int64_t>& dims, GgmlType type, std::vector<uint8_t> bytes) {
  auto fail = [&name](const std::string& what) { fail_tensor(name, what); };
  if (name.empty()) throw Error("GGUF writer: a tensor name is empty");
  if (name.size() > kMaxName) fail("the name is " + std::to_string(name.size()) + " bytes long; ggml allows " + std::to_string(kMaxName));
  if (names_.count(name)) fail("added twice");
  if (dims.empty() || dims.size() > kMaxDims) fail(std::to_string(dims.size()) + " dimensions (1 to 4)");
  const GgmlTypeInfo* info = ggml_type_info(static_cast<uint32_t>(type));
  if (!info) fail_tensor(name, "unknown ggml type " + std::to_string(static_cast<uint32_t>(type)));
  int64_t elements = 1;
  for (int64_t d : dims) {
    if (d <= 0 || d > (int64_t{1} << 48) || elements > (int64_t{1} << 48) / d) fail("dims " + dims_text(dims) + " are not positive or too many");
    elements *= d;
  }
  if (dims[0] % info->block)
    fail("rows of " + std::to_string(dims[0]) + " values are not a multiple of " + info->name + "'s block of " + std::to_string(info->block));
  uint64_t need = quant_supported(type) ? quant_bytes(type, elements) : static_cast<uint64_t>(elements / info->block) * info->bytes;
  if (bytes.size() != need)
    fail(std::to_string(bytes.size()) + " bytes where " + dims_text(dims) + " of " + info->name + " take " + std::to_string(need));
  names_.insert(name);
  tensors_.push_back(Tensor{name, dims, type, std::move(bytes)});
}

std::vector<uint8_t> GgufWriter::head() const {
  std::vector<uint8_t> out;
  out.reserve(24 + meta_.size());  // (also keeps g++ 12 -O3 from a false stringop-overflow on the first insert)
  auto put_raw = [&](const void* p, size_t n) {
    size_t at = out.size();
    out.resize(at + n);
    std::memcpy(out.data() + at, p, n);
  };
  auto put32 = [&](uint32_t v) { put_raw(&v, 4); };
  auto put64 = [&](uint64_t v) { put_raw(&v, 8); };
  put32(kMagic), put32(kVersion), put64(tensors_.size()), put64(kv_count_);
  out.insert(out.end(), meta_.begin(), meta_.end());
  uint64_t offset = 0;  // from the start of the data; each tensor padded to the alignment, as ggml requires
  for (const Tensor& t : tensors_) {
    put64(t.name.size()), put_raw(t.name.data(), t.name.size());
    put32(static_cast<uint32_t>(t.dims.size()));
    for (int64_t d : t.dims) put64(static_cast<uint64_t>(d));
    put32(static_cast<uint32_t>(t.type)), put64(offset);
    offset += padded(t.data.size(), alignment_);
  }
  out.resize(padded(out.size(), alignment_), 0);
  return out;
}

std::vector<uint8_t> GgufWriter::bytes() const {
  std::vector<uint8_t> out = head();
  uint64_t total = out.size();
  for (const Tensor& t : tensors_) total += padded(t.data.size(), alignment_);
  out.reserve(total);
  for (const Tensor& t : tensors_) {
    out.insert(out.end(), t.data.begin(), t.data.end());
    out.resize(padded(out.size(), alignment_), 0);
  }
  return out;
}

void GgufWriter::write(const std::string& path) const {
  std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) throw Error("GGUF writer: cannot create " + tmp + ": " + std::strerror(errno));
  std::vector<uint8_t> h = head();
  const std::vector<uint8_t> zeros(alignment_, 0);
  bool ok = std::fwrite(h.data(), 1, h.size(), f) == h.size();
  for (size_t i = 0; ok && i < tensors_.size(); ++i) {
    const std::vector<uint8_t>& d = tensors_[i].data;
    size_t pad = static_cast<size_t>(padded(d.size(), alignment_) - d.size());
    ok = std::fwrite(d.data(), 1, d.size(), f) == d.size() && std::fwrite(zeros.data(), 1, pad, f) == pad;
  }
  int err = errno;
  if (std::fclose(f) != 0 && ok) ok = false, err = errno;
  if (!ok) {
    std::remove(tmp.c_str());
    throw Error("GGUF writer: cannot write " + tmp + ": " + std::strerror(err));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    err = errno;
    std::remove(tmp.c_str());
    throw Error("GGUF writer: cannot rename " + tmp + " to " + path + ": " + std::strerror(err));
  }
}

}  // namespace ugpu::llm
