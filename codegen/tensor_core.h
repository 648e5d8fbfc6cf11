// Tensor cores: the matrix instructions of each GPU target, as data. One row per instruction: its
// shape (D = A x B + C with A M x K, B K x N, C and D M x N), the lanes that execute it together (a
// wave or warp), the input type, and where each lane keeps its part of each matrix (the fragment
// layouts of the ISA documents). The optimizer's TC action (codegen/opt/tc.cpp) builds the WMMA node
// from a row; the LLVM renderer names the row's intrinsic; the emulators implement the instructions
// from the ISA documents on their own (emu/amd/rdna3, emu/nv/ptx), so a layout wrong here shows up as
// a wrong result there.
#pragma once
#include <array>
#include <cstdint>
#include <span>
#include <string_view>
#include <utility>

#include "codegen/target.h"
#include "ir/uop.h"

namespace ugpu::codegen {

// One coordinate of a matrix element as a sum over bits: the element that lane l holds at position
// i (of its fragment) has coordinate sum_b lane[b] * bit b of l + sum_b elem[b] * bit b of i.
struct TcCoord {
  std::array<int8_t, 6> lane{};
  std::array<int8_t, 4> elem{};
  ir::UOp at(const ir::UOp& lane_id, int64_t i) const;  // index math over a lane value
};
// Where a lane keeps the elements of one matrix: `elems` values per lane, element i at (row, col).
struct TcLayout {
  int elems;
  TcCoord row, col;
};

struct TensorCore {
  std::string_view name;     // the WMMA node's arg, "wmma_f32_16x16x16_f16"
  std::string_view targets;  // the targets that have it, space-separated
  int m, n, k;
  int threads;             // lanes that run it together
  ir::ScalarType input;    // A and B (C and D are float): Half, BFloat16, Float (tf32)
  TcLayout a, b, c;        // A: M x K (row = m, col = k), B: K x N (row = k, col = n), C/D: M x N
  std::string_view instr;  // the instruction as the ISA names it (docs and messages)
  // The instruction rounds its inputs (tf32 keeps 10 of float32's 23 mantissa bits): used only when
  // asked for by hand (TC), never by the heuristics or BEAM.
  bool rounds_inputs = false;
  bool on(const Target& t) const;
};

std::span<const TensorCore> tensor_cores();
const TensorCore* find_tensor_core(std::string_view name);  // nullptr when there is none

}  // namespace ugpu::codegen
