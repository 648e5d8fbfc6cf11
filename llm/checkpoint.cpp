// Checkpoints as safetensors files (llm/checkpoint.h).
#include "llm/checkpoint.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "common/error.h"
#include "common/json_quote.h"
#include "llm/safetensors.h"

namespace ugpu::llm {
namespace dt = tensor::dtypes;
using tensor::DType;
using tensor::Tensor;

namespace {

struct Name {
  DType dtype;
  const char* name;
};
const Name kNames[] = {{dt::bool_, "BOOL"}, {dt::uint8, "U8"},      {dt::int8, "I8"},     {dt::int16, "I16"},       {dt::uint16, "U16"},
                       {dt::half, "F16"},   {dt::bfloat16, "BF16"}, {dt::int32, "I32"},   {dt::uint32, "U32"},      {dt::float32, "F32"},
                       {dt::int64, "I64"},  {dt::uint64, "U64"},    {dt::float64, "F64"}, {dt::fp8e4m3, "F8_E4M3"}, {dt::fp8e5m2, "F8_E5M2"}};

std::string shape_json(const tensor::Shape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? "," : "") + std::to_string(s[i]);
  return r + "]";
}

}  // namespace

std::string safetensors_dtype(DType d) {
  for (const Name& n : kNames)
    if (n.dtype == d) return n.name;
  throw Error("safetensors has no dtype for " + d.name());
}
DType dtype_of_safetensors(const std::string& name) {
  for (const Name& n : kNames)
    if (name == n.name) return n.dtype;
  throw Error("safetensors dtype " + name + " is not one ugpu tensors have");
}

void save_safetensors(const std::string& path, const tensor::nn::Params& tensors, const Metadata& metadata) {
  std::set<std::string> seen;
  std::vector<std::vector<uint8_t>> data;
  std::string header = "{";
  uint64_t at = 0;
  if (!metadata.empty()) {
    header += "\"__metadata__\":{";
    for (size_t i = 0; i < metadata.size(); ++i) header += (i ? "," : "") + json_quote(metadata[i].first) + ":" + json_quote(metadata[i].second);
    header += "}";
  }
  for (const auto& [name, t] : tensors) {
    if (!t.defined()) throw Error("save_safetensors: tensor '" + name + "' is undefined");
    if (name.empty() || name == "__metadata__") throw Error("save_safetensors: '" + name + "' is not a tensor name safetensors allows");
    if (!seen.insert(name).second) throw Error("save_safetensors: the name '" + name + "' is given twice");
    data.push_back(t.to_bytes());
    uint64_t n = data.back().size();
    header += std::string(header.size() > 1 ? "," : "") + json_quote(name) + ":{\"dtype\":\"" + safetensors_dtype(t.dtype()) +
              "\",\"shape\":" + shape_json(t.shape()) + ",\"data_offsets\":[" + std::to_string(at) + "," + std::to_string(at + n) + "]}";
    at += n;
  }
  header += "}";
  while (header.size() % 8) header += ' ';  // the data starts 8-byte aligned
  std::string tmp = path + ".tmp." + std::to_string(getpid());
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) throw Error(path + ": cannot write (" + tmp + " could not be created)");
    uint64_t len = header.size();
    uint8_t le[8];
    for (int i = 0; i < 8; ++i) le[i] = static_cast<uint8_t>(len >> (8 * i));
    f.write(reinterpret_cast<const char*>(le), 8);
    f.write(header.data(), static_cast<std::streamsize>(header.size()));
    for (const auto& d : data) f.write(reinterpret_cast<const char*>(d.data()), static_cast<std::streamsize>(d.size()));
    f.flush();
    if (!f) {
      std::filesystem::remove(tmp);
      throw Error(path + ": writing the checkpoint failed (disk full?); the previous file is unchanged");
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp);
    throw Error(path + ": cannot replace the file: " + ec.message());
  }
}

void load_safetensors(const std::string& path, const tensor::nn::Params& into, bool strict) {
  SafetensorsFile f = SafetensorsFile::open(path);
  std::set<std::string> wanted;
  // Every check first: nothing is written unless everything fits.
  std::vector<std::pair<Tensor, Tensor>> writes;
  for (const auto& [name, t] : into) {
    wanted.insert(name);
    const SafetensorsTensor* s = f.find(name);
    if (!s) throw Error(path + ": has no tensor '" + name + "'");
    DType d = dtype_of_safetensors(s->dtype);
    if (d != t.dtype()) throw Error(path + ": tensor '" + name + "' is " + s->dtype + ", the tensor it loads into is " + t.dtype().name());
    if (tensor::Shape(s->shape.begin(), s->shape.end()) != t.shape())
      throw Error(path + ": tensor '" + name + "' has shape " + shape_json(s->shape) + ", the tensor it loads into " + shape_json(t.shape()));
    writes.push_back({t, Tensor::from_bytes(f.bytes().subspan(s->offset, s->bytes), d, t.shape(), t.device())});
  }
  if (strict)
    for (const SafetensorsTensor& s : f.tensors)
      if (!wanted.count(s.name)) throw Error(path + ": holds tensor '" + s.name + "', which nothing loads (strict)");
  std::vector<Tensor> targets;
  for (auto& [t, v] : writes) {
    Tensor target = t;
    target.assign(v);
    targets.push_back(target);
  }
  Tensor::realize(targets);
}

}  // namespace ugpu::llm
