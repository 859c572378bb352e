//===- OperandLayouts.h - matrix operands in shared memory ------*- C++ -*-===//
//
// Where the A and B tiles of a dot on NVIDIA's tensor cores sit in shared
// memory. Both layouts keep each 16-byte chunk of a row whole (cp.async
// copies chunks) and move chunks so that the eight rows the hardware reads
// at once fall in eight different bank groups:
//
//   WgmmaOperand  wgmma reads through descriptors, so the layout is one of
//                 the hardware's canonical swizzled layouts;
//   SwizzledRows  mma.sync's operands go through ldmatrix, which takes one
//                 address per row, so any chunk permutation works: rows stay
//                 row-major with their chunks XOR-permuted.
//
// The arithmetic is written once over an `Arith` with `Int`, add, mul, div,
// rem and bitXor: the pass emits it as IR, the unit tests evaluate it on
// integers (test/unit/OperandLayoutsTest.cpp).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <initializer_list>

namespace kiln::gpu {

/// wgmma.mma_async reads A and B from shared memory through 64-bit matrix
/// descriptors (PTX ISA, "Matrix Descriptor Format" and "Shared Memory Matrix
/// Layout"; CUTLASS's make_gmma_desc spells the canonical layouts out). Kiln
/// stages both operands as rows of contiguous 16-bit elements: A (m x k)
/// K-major, one row per M index; B (k x n) N-major, one row per K index.
///
/// The rows are cut into atom columns `atomBytes` wide: every row's column j
/// comes before any row's column j + 1, rows `atomBytes` apart within a column
/// (the linear offset). With 128-, 64- or 32-byte atoms the 16-byte chunks of
/// each row are then permuted by the hardware's swizzle, address bits
/// [4, 4 + s) ^= bits [7, 7 + s) with s = log2(atomBytes / 16), so that the
/// eight rows of a group put chunk j in eight different banks; 16-byte atoms
/// are the unswizzled 8 x 8 core matrices. The swizzle acts on shared-memory
/// addresses, so each operand block starts on its period (8 atom rows, at
/// most 1024 bytes: shared buffers start on 1024) and the instruction's
/// descriptor gives the linear offset of its first element.
struct WgmmaOperand {
  static constexpr int64_t kElementBytes = 2; // f16, bf16
  /// Shared buffers holding wgmma operands start at a multiple of this many
  /// bytes, the longest swizzle period.
  static constexpr int64_t kAlignment = 1024;

  int64_t rows;      // A: m; B: k
  int64_t columns;   // contiguous elements per row: A: k; B: n
  int64_t atomBytes; // 128, 64 or 32 (swizzled) or 16 (core matrices)
  bool kMajor;       // A; B is N-major (imm-trans-b 1)

  /// The widest atom whose columns one instruction reads whole: A's K step
  /// (16 elements) lies in one atom of every width from 32 bytes, so A's atom
  /// is the widest that divides its row; B's instruction reads `instructionN`
  /// columns, which must be whole atoms.
  static WgmmaOperand forA(int64_t m, int64_t k) { return {m, k, widestAtom(k), true}; }
  static WgmmaOperand forB(int64_t k, int64_t n, int64_t instructionN) {
    return {k, n, widestAtom(instructionN), false};
  }
  static int64_t widestAtom(int64_t elements) {
    for (int64_t bytes : {128, 64, 32})
      if (elements * kElementBytes % bytes == 0)
        return bytes;
    return 16;
  }

  int64_t atomColumns() const { return atomBytes / kElementBytes; }

  /// Descriptor bits 62-63: 0 none, 1 for 128-byte, 2 for 64-byte, 3 for
  /// 32-byte swizzles.
  uint64_t swizzleMode() const {
    return atomBytes == 128 ? 1 : atomBytes == 64 ? 2 : atomBytes == 32 ? 3 : 0;
  }
  /// The descriptor's byte offsets: the next group of 8 rows is groupBytes on,
  /// the next atom column columnBytes on. K-major layouts take the first as the
  /// stride byte offset (along M or N) and the second as the leading byte
  /// offset (along K; unused when one instruction's K lies in one swizzle atom,
  /// where CUTLASS sets 16). N-major layouts have K along the row groups:
  /// swizzled, the leading offset goes along N and the stride along K;
  /// unswizzled, the other way round (CUTLASS's canonical layouts, Major::MN).
  uint64_t groupBytes() const { return 8 * atomBytes; }
  uint64_t columnBytes() const { return rows * atomBytes; }
  uint64_t leadingBytes() const {
    if (kMajor)
      return atomBytes == 16 ? columnBytes() : 16;
    return atomBytes == 16 ? groupBytes() : columnBytes();
  }
  uint64_t strideBytes() const {
    return !kMajor && atomBytes == 16 ? columnBytes() : groupBytes();
  }
  /// Every descriptor field but the start address.
  uint64_t descriptorFields() const {
    return (leadingBytes() >> 4) << 16 | (strideBytes() >> 4) << 32 | swizzleMode() << 62;
  }

  /// The unswizzled element offset of (row, column): what a descriptor's start
  /// address gives for an instruction's first element.
  template <typename Arith>
  typename Arith::Int linear(Arith &a, typename Arith::Int row,
                             typename Arith::Int column) const {
    int64_t atom = atomColumns();
    return a.add(a.add(a.mul(a.div(column, atom), rows * atom), a.mul(row, atom)),
                 a.rem(column, atom));
  }

  /// Where element (row, column) is stored, in elements from the block's start.
  template <typename Arith>
  typename Arith::Int offset(Arith &a, typename Arith::Int row,
                             typename Arith::Int column) const {
    auto at = linear(a, row, column);
    if (atomBytes == 16)
      return at;
    // Element bit 3 is address bit 4 (the 16-byte chunk), element bit 6 is
    // address bit 7 (the 128-byte row of the pattern).
    auto rowBits = a.rem(a.div(at, 128 / kElementBytes), atomBytes / 16);
    return a.bitXor(at, a.mul(rowBits, 16 / kElementBytes));
  }
};

/// An mma.sync operand tile (A: m x k, B: k x n) of `elementBytes`-byte
/// elements, row-major with each row's 16-byte chunks XOR-permuted. ldmatrix
/// reads one 16-byte piece from each of eight consecutive rows (8-aligned) at
/// the same column; 16-byte pieces share a bank group when their addresses
/// agree modulo 128 bytes. With R chunks a row, rows start R chunks apart, so
/// the chunk of row r is XORed with its phase (r / (8 / p)) % p, p the largest
/// power of two up to 8 dividing R: the eight rows then land in eight groups
/// (rows that a plain row-major layout puts 128 bytes apart differ in phase).
/// An odd R needs no swizzle. XOR with a phase below p only moves a chunk
/// within its aligned group of p, so rows keep their own chunks.
struct SwizzledRows {
  int64_t rows, columns, elementBytes;

  int64_t chunkElements() const { return 16 / elementBytes; }
  /// p above; 1 when a row is not whole chunks (no swizzle).
  int64_t phases() const {
    if (columns % chunkElements() != 0)
      return 1;
    int64_t chunks = columns / chunkElements(), p = 1;
    while (p < 8 && chunks % (2 * p) == 0)
      p *= 2;
    return p;
  }

  template <typename Arith>
  typename Arith::Int offset(Arith &a, typename Arith::Int row,
                             typename Arith::Int column) const {
    auto linear = a.add(a.mul(row, columns), column);
    int64_t p = phases();
    if (p == 1)
      return linear;
    auto phase = a.rem(a.div(row, 8 / p), p);
    return a.bitXor(linear, a.mul(phase, chunkElements()));
  }

  /// offset(row, step + lane) for the readers, whose columns are a step (the
  /// same for every lane: a K step, a tile's first column) plus a lane's part:
  /// `lane` below a power of two that divides `step`, and below p chunks. The
  /// lane's part and the row's phase then XOR into one value per lane, which
  /// LLVM keeps in a register while each step adds or XORs constants.
  template <typename Arith>
  typename Arith::Int offset(Arith &a, typename Arith::Int row, typename Arith::Int step,
                             typename Arith::Int lane) const {
    auto start = a.mul(row, columns);
    int64_t p = phases(), group = p * chunkElements();
    if (p == 1)
      return a.add(start, a.add(step, lane));
    auto phase = a.rem(a.div(row, 8 / p), p);
    auto laneBits = a.bitXor(lane, a.mul(phase, chunkElements()));
    auto groupStart = a.add(start, a.mul(a.div(step, group), group));
    return a.add(groupStart, a.bitXor(a.rem(step, group), laneBits));
  }
};

} // namespace kiln::gpu
