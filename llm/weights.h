// Weights in device memory in their file's format, decoded by the kernels that read them.
//
// A quantized matrix is uploaded as its blocks (uint8 [rows, blocks, block bytes]) and never
// expanded in memory: Weight::value() is a lazy float32 expression of those bytes (shifts, masks,
// a half-float scale), so the scheduler fuses the decoding into whatever reads it — the matvec of a
// decode step reads each block once and decodes it in registers. F32 is used as it is; F16 and
// BF16 are converted as they are read. The host decoder (llm/quant.h) is the reference the tests
// hold these expressions to.
#pragma once
#include <string>

#include "llm/gguf.h"
#include "tensor/tensor.h"

namespace ugpu::llm {

struct Weight {
  std::string name;
  GgmlType type = GgmlType::F32;
  tensor::Shape shape;  // row-major: [out, in] for a matrix (GGUF lists the dimensions the other way)
  tensor::Tensor raw;   // F32: float32 [shape]; F16/BF16: uint16 [shape]; quantized: uint8 [rows, blocks, block bytes]
  int64_t bytes = 0;    // device memory it takes

  bool defined() const { return raw.defined(); }
  tensor::Tensor value() const;                          // float32 [shape], decoded where it is read
  tensor::Tensor rows(const tensor::Tensor& ids) const;  // float32 [n, in]: the rows ids picks (an embedding), only those decoded
  // x [..., in] @ value()^T: [..., out]. Quantized, the reduction runs block by block and group by
  // group (the values that share a scale), so a kernel decodes each scale once per group.
  tensor::Tensor matmul_t(const tensor::Tensor& x) const;
};

// The file's tensor on `device`, checked: a supported type, whole blocks per row.
Weight upload_weight(const GgufFile& f, const GgufTensor& t, const std::string& device);

// raw (uint8 [..., blocks, block bytes] of type t) as float32 [..., blocks * block values].
tensor::Tensor decode_blocks(GgmlType t, const tensor::Tensor& raw);
// The same as [..., blocks, groups, group size]: the values of a group share their scale (Q8_0 and
// Q4/Q5: 1 x 32; Q4_K, Q5_K: 8 x 32; Q6_K: 16 x 16).
tensor::Tensor decode_groups(GgmlType t, const tensor::Tensor& raw);

}  // namespace ugpu::llm
