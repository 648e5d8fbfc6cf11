// Weights on the device in their file format, and the tensor expressions that decode ggml's blocks
// (llm/weights.h). Each format's layout is described once, in llm/quant.h and llm/quant.cpp; the
// expressions below are the same layouts written as whole-tensor index math.
#include "llm/weights.h"

#include "common/error.h"
#include "llm/quant.h"

namespace ugpu::llm {
using tensor::Axes;
using tensor::Tensor;
namespace dt = tensor::dtypes;

namespace {

// Bytes [a, b) of every block, as int32 [..., blocks, b - a].
Tensor field(const Tensor& raw, int64_t a, int64_t b) { return raw.slice(-1, a, b).cast(dt::int32); }

// The half float at byte i of every block, as float32 [..., blocks, 1].
Tensor half_at(const Tensor& raw, int64_t i) {
  Tensor lo = raw.slice(-1, i, i + 1).cast(dt::uint16), hi = raw.slice(-1, i + 1, i + 2).cast(dt::uint16).lshift(8);
  return lo.bitwise_or(hi).bitcast(dt::half).cast(dt::float32);
}

// The leading axes of raw (all but the block bytes) followed by `tail`.
Axes with(const Tensor& raw, Axes tail) {
  Axes a(raw.shape().begin(), raw.shape().end() - 1);
  a.insert(a.end(), tail.begin(), tail.end());
  return a;
}

// Nibbles of 16 bytes: the low ones are values 0-15, the high ones 16-31.
Tensor nibbles32(const Tensor& qs) {
  Tensor parts[] = {qs.bitwise_and(scalar_like(qs, 15)), qs.rshift(4)};
  return Tensor::cat(parts, -1);
}

// The little-endian u32 at bytes [i, i+4) of every block, bit j taken for value j: int32 [..., blocks, 32].
Tensor high_bits32(const Tensor& raw, int64_t i) {
  Tensor h = raw.slice(-1, i, i + 1).cast(dt::uint32);
  for (int64_t k = 1; k < 4; ++k) h = h.bitwise_or(raw.slice(-1, i + k, i + k + 1).cast(dt::uint32).lshift(8 * k));
  Tensor j = Tensor::arange(32, dt::uint32, raw.device());
  return h.rshift(j).bitwise_and(scalar_like(h, 1)).cast(dt::int32);
}

// The eight 6-bit scales and mins of a Q4_K/Q5_K block's 12 bytes at offset 4: float32 [..., blocks, 8] each.
std::pair<Tensor, Tensor> scales_mins_k4(const Tensor& raw) {
  Tensor s03 = field(raw, 4, 8), s47 = field(raw, 8, 12), s811 = field(raw, 12, 16);
  Tensor c63 = scalar_like(s03, 63), c15 = scalar_like(s03, 15);
  Tensor sc[] = {s03.bitwise_and(c63), s811.bitwise_and(c15).bitwise_or(s03.rshift(6).lshift(4))};
  Tensor mn[] = {s47.bitwise_and(c63), s811.rshift(4).bitwise_or(s47.rshift(6).lshift(4))};
  return {Tensor::cat(sc, -1).cast(dt::float32), Tensor::cat(mn, -1).cast(dt::float32)};
}

Tensor decode_k45(const Tensor& raw, bool five) {
  Tensor d = half_at(raw, 0), dmin = half_at(raw, 2);
  auto [sc, mn] = scales_mins_k4(raw);
  int64_t q0 = five ? 48 : 16;
  // Chunk c of 64 values reads 32 bytes: sub-block 2c from the low nibbles, 2c+1 from the high.
  Tensor qs = field(raw, q0, q0 + 128).reshape(with(raw, {4, 1, 32}));
  Tensor halves[] = {qs.bitwise_and(scalar_like(qs, 15)), qs.rshift(4)};
  Tensor q = Tensor::cat(halves, -2);  // [..., 4, 2, 32]
  if (five) {                          // bit 2c + h of high byte l
    Tensor qh = field(raw, 16, 48).reshape(with(raw, {1, 1, 32}));
    Tensor shift = Tensor::arange(8, dt::int32, raw.device()).reshape({4, 2, 1});
    q = q.bitwise_or(qh.rshift(shift).bitwise_and(scalar_like(qh, 1)).lshift(4));
  }
  q = q.reshape(with(raw, {8, 32})).cast(dt::float32);
  Tensor x = (d * sc).unsqueeze(-1) * q - (dmin * mn).unsqueeze(-1);
  return x;  // [..., 8, 32]
}

Tensor decode_q6_k(const Tensor& raw) {
  // Value 32g + l of half n: nibble (g >= 2 ? high : low) of ql[64n + 32(g & 1) + l], bits 2g..2g+1
  // of qh[32n + l], scale 8n + 2g + l/16.
  Tensor ql = field(raw, 0, 128).reshape(with(raw, {2, 1, 2, 32}));
  Tensor nib_shift = Tensor::arange(2, dt::int32, raw.device()).reshape({2, 1, 1}) * 4;
  Tensor lo = ql.rshift(nib_shift).bitwise_and(scalar_like(ql, 15)).reshape(with(raw, {2, 4, 32}));
  Tensor qh = field(raw, 128, 192).reshape(with(raw, {2, 1, 32}));
  Tensor hi_shift = Tensor::arange(4, dt::int32, raw.device()).reshape({4, 1}) * 2;
  Tensor hi = qh.rshift(hi_shift).bitwise_and(scalar_like(qh, 3));
  Tensor q = (lo.bitwise_or(hi.lshift(4)) - 32).cast(dt::float32);
  Tensor sc = raw.slice(-1, 192, 208).bitcast(dt::int8).cast(dt::float32).reshape(with(raw, {2, 4, 2, 1}));
  sc = sc.expand(with(raw, {2, 4, 2, 16})).reshape(with(raw, {2, 4, 32}));
  Tensor d = half_at(raw, 208).reshape(with(raw, {1, 1, 1}));
  return (d * sc * q).reshape(with(raw, {16, 16}));
}

}  // namespace

Tensor decode_groups(GgmlType t, const Tensor& raw) {
  auto one = [&](const Tensor& x) { return x.unsqueeze(-2); };  // one group of 32 per block
  switch (t) {
    case GgmlType::Q8_0: return one(raw.slice(-1, 2, 34).bitcast(dt::int8).cast(dt::float32) * half_at(raw, 0));
    case GgmlType::Q4_0: return one((nibbles32(field(raw, 2, 18)) - 8).cast(dt::float32) * half_at(raw, 0));
    case GgmlType::Q4_1: return one(nibbles32(field(raw, 4, 20)).cast(dt::float32) * half_at(raw, 0) + half_at(raw, 2));
    case GgmlType::Q5_0: {
      Tensor q = nibbles32(field(raw, 6, 22)).bitwise_or(high_bits32(raw, 2).lshift(4));
      return one((q - 16).cast(dt::float32) * half_at(raw, 0));
    }
    case GgmlType::Q5_1: {
      Tensor q = nibbles32(field(raw, 8, 24)).bitwise_or(high_bits32(raw, 4).lshift(4));
      return one(q.cast(dt::float32) * half_at(raw, 0) + half_at(raw, 2));
    }
    case GgmlType::Q4_K: return decode_k45(raw, false);
    case GgmlType::Q5_K: return decode_k45(raw, true);
    case GgmlType::Q6_K: return decode_q6_k(raw);
    default: break;
  }
  const GgmlTypeInfo* info = ggml_type_info(static_cast<uint32_t>(t));
  throw Error(std::string("decode_blocks: ") + (info ? info->name : "this type") + " is not a block format ugpu decodes");
}

Tensor decode_blocks(GgmlType t, const Tensor& raw) {
  const GgmlTypeInfo* info = ggml_type_info(static_cast<uint32_t>(t));
  return decode_groups(t, raw).reshape(with(raw, {info ? static_cast<int64_t>(info->block) : -1}));
}

Tensor Weight::matmul_t(const Tensor& x) const {
  if (type == GgmlType::F32 || type == GgmlType::F16 || type == GgmlType::BF16 || shape.size() != 2) return x.linear(value());
  // x [..., K] against [N, blocks, groups, size]: the reduction runs over blocks, then the groups that
  // share a scale, then the values of one group — innermost, where the scale does not change.
  Tensor w = decode_groups(type, raw);
  Axes xs(x.shape().begin(), x.shape().end() - 1);
  Axes ws(w.shape().begin(), w.shape().end());
  xs.push_back(1);
  xs.insert(xs.end(), ws.begin() + 1, ws.end());
  return (x.reshape(xs) * w).sum({-3, -2, -1});
}

Tensor Weight::value() const {
  switch (type) {
    case GgmlType::F32: return raw;
    case GgmlType::F16: return raw.bitcast(dt::half).cast(dt::float32);
    case GgmlType::BF16: return raw.cast(dt::uint32).lshift(16).bitcast(dt::float32);
    default: return decode_blocks(type, raw).reshape(Axes(shape.begin(), shape.end()));
  }
}

Tensor Weight::rows(const Tensor& ids) const {
  if (shape.size() != 2) throw Error("weight " + name + ": rows() needs a matrix");
  Tensor picked = raw.index_select(0, ids);
  Weight w = *this;
  w.raw = picked;
  w.shape = {ids.shape()[0], shape[1]};
  return w.value();
}

Weight upload_weight(const GgufFile& f, const GgufTensor& t, const std::string& device) {
  if (t.dims.empty()) throw Error("tensor '" + t.name + "' has no dimensions");
  int64_t row = t.dims[0], rows = t.elements() / std::max<int64_t>(row, 1);
  try {
    quant_bytes(t.type, row);  // a type ugpu decodes, rows of whole blocks
  } catch (const Error& e) { throw Error("tensor '" + t.name + "': " + e.what()); }
  const GgmlTypeInfo* info = ggml_type_info(static_cast<uint32_t>(t.type));
  Weight w;
  w.name = t.name;
  w.type = t.type;
  for (size_t i = t.dims.size(); i-- > 0;) w.shape.push_back(t.dims[i]);
  std::span<const uint8_t> bytes = f.data(t);
  w.bytes = static_cast<int64_t>(bytes.size());
  Axes shape(w.shape.begin(), w.shape.end());
  switch (t.type) {
    case GgmlType::F32: w.raw = Tensor::from_bytes(bytes, dt::float32, w.shape, device); break;
    case GgmlType::F16:
    case GgmlType::BF16: w.raw = Tensor::from_bytes(bytes, dt::uint16, w.shape, device); break;
    default: w.raw = Tensor::from_bytes(bytes, dt::uint8, {rows, row / info->block, info->bytes}, device); break;
  }
  return w;
}

}  // namespace ugpu::llm
