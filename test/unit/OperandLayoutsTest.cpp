//===- OperandLayoutsTest.cpp - wgmma operand layouts against the PTX model --===//
//
// No GPU runs here, so the shared-memory layouts Kiln writes for wgmma are
// checked against a model of what the hardware reads: the descriptor decoded
// field by field and the canonical layouts of the PTX ISA ("Shared Memory
// Matrix Layout", in CUTLASS's notation for make_gmma_desc), written out
// separately from OperandLayouts.h. For every instruction of a tile, each element
// the model says wgmma reads must be where Kiln stored it.
//
//===----------------------------------------------------------------------===//

#include "passes/GPU/OperandLayouts.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

using kiln::gpu::WgmmaOperand;

namespace {

struct Ints {
  using Int = int64_t;
  int64_t add(int64_t x, int64_t y) { return x + y; }
  int64_t mul(int64_t x, int64_t y) { return x * y; }
  int64_t div(int64_t x, int64_t y) { return x / y; }
  int64_t rem(int64_t x, int64_t y) { return x % y; }
  int64_t bitXor(int64_t x, int64_t y) { return x ^ y; }
};

/// The byte address wgmma reads for element (mn, kk) of its operand (mn along
/// M or N, kk < 16 along K) from descriptor `desc`.
int64_t hardwareAddress(uint64_t desc, bool kMajor, int64_t mn, int64_t kk) {
  int64_t start = int64_t(desc & 0x3FFF) << 4;
  int64_t lbo = int64_t((desc >> 16) & 0x3FFF) << 4;
  int64_t sbo = int64_t((desc >> 32) & 0x3FFF) << 4;
  int64_t mode = int64_t(desc >> 62);
  int64_t width = mode == 0 ? 16 : mode == 1 ? 128 : mode == 2 ? 64 : 32; // swizzle bytes
  int64_t address;
  if (kMajor && mode == 0) // ((8,m),(T,2)):((1T,SBO),(1,LBO))
    address = start + mn % 8 * 16 + mn / 8 * sbo + kk % 8 * 2 + kk / 8 * lbo;
  else if (kMajor) // ((8,m),(T,2)):((wT,SBO),(1,T)), w = width / 16
    address = start + mn % 8 * width + mn / 8 * sbo + kk * 2;
  else if (mode == 0) // ((T,1,n),(8,k)):((1,T,SBO),(1T,LBO))
    address = start + mn % 8 * 2 + mn / 8 * sbo + kk % 8 * 16 + kk / 8 * lbo;
  else // ((T,w,n),(8,k)):((1,T,LBO),(wT,SBO))
    address = start + mn % (width / 2) * 2 + mn / (width / 2) * lbo + kk % 8 * width +
              kk / 8 * sbo;
  if (mode != 0) // Swizzle<log2(width / 16), 4, 3> on the byte address
    address ^= (address >> 7 & (width / 16 - 1)) << 4;
  return address;
}

uint64_t descriptor(const WgmmaOperand &layout, int64_t base, int64_t startElement) {
  uint64_t address = uint64_t(base + startElement * WgmmaOperand::kElementBytes);
  return (address >> 4 & 0x3FFF) | layout.descriptorFields();
}

/// Kiln's offsets fill the tile exactly once, and 16-byte chunks stay
/// contiguous (cp.async copies them whole).
void expectPermutation(const WgmmaOperand &layout) {
  Ints ints;
  std::set<int64_t> seen;
  for (int64_t r = 0; r < layout.rows; ++r)
    for (int64_t c = 0; c < layout.columns; ++c) {
      int64_t at = layout.offset(ints, r, c);
      EXPECT_TRUE(seen.insert(at).second) << "(" << r << ", " << c << ") collides";
      if (c % 8 != 0) {
        EXPECT_EQ(at, layout.offset(ints, r, c - 1) + 1);
      }
    }
  ASSERT_EQ(int64_t(seen.size()), layout.rows * layout.columns);
  EXPECT_EQ(*seen.begin(), 0);
  EXPECT_EQ(*seen.rbegin(), layout.rows * layout.columns - 1);
  EXPECT_LT(layout.leadingBytes() >> 4, 1u << 14);
  EXPECT_LT(layout.strideBytes() >> 4, 1u << 14);
}

// Any 1024-aligned block start works: the swizzle repeats every 1024 bytes.
constexpr int64_t kBase = 3 * WgmmaOperand::kAlignment;

TEST(WgmmaOperand, OperandAMatchesTheHardwareRead) {
  Ints ints;
  for (int64_t m : {64, 128, 192})
    for (int64_t k : {16, 32, 48, 64, 96, 128, 256}) {
      WgmmaOperand a = WgmmaOperand::forA(m, k);
      SCOPED_TRACE("A " + std::to_string(m) + " x " + std::to_string(k) + ", " +
                   std::to_string(a.atomBytes) + "-byte atoms");
      EXPECT_EQ(a.atomBytes, k % 64 == 0 ? 128 : k % 32 == 0 ? 64 : 32);
      expectPermutation(a);
      for (int64_t row0 = 0; row0 < m; row0 += 64)
        for (int64_t k0 = 0; k0 < k; k0 += 16) {
          uint64_t desc = descriptor(a, kBase, a.linear(ints, row0, k0));
          for (int64_t i = 0; i < 64; ++i)
            for (int64_t kk = 0; kk < 16; ++kk)
              ASSERT_EQ(hardwareAddress(desc, true, i, kk),
                        kBase + 2 * a.offset(ints, row0 + i, k0 + kk))
                  << "row " << row0 + i << ", k " << k0 + kk;
        }
    }
}

TEST(WgmmaOperand, OperandBMatchesTheHardwareRead) {
  Ints ints;
  for (int64_t k : {16, 32, 48, 64, 128})
    for (int64_t n : {8, 16, 24, 32, 64, 96, 128, 192, 256})
      for (int64_t instructionN : {8, 16, 32, 64, 128, 256}) {
        if (n % instructionN != 0)
          continue;
        WgmmaOperand b = WgmmaOperand::forB(k, n, instructionN);
        SCOPED_TRACE("B " + std::to_string(k) + " x " + std::to_string(n) + ", m64n" +
                     std::to_string(instructionN) + ", " + std::to_string(b.atomBytes) +
                     "-byte atoms");
        EXPECT_EQ(b.atomBytes, std::min<int64_t>(128, instructionN * 2));
        expectPermutation(b);
        for (int64_t col0 = 0; col0 < n; col0 += instructionN)
          for (int64_t k0 = 0; k0 < k; k0 += 16) {
            uint64_t desc = descriptor(b, kBase, b.linear(ints, k0, col0));
            for (int64_t i = 0; i < instructionN; ++i)
              for (int64_t kk = 0; kk < 16; ++kk)
                ASSERT_EQ(hardwareAddress(desc, false, i, kk),
                          kBase + 2 * b.offset(ints, k0 + kk, col0 + i))
                    << "k " << k0 + kk << ", column " << col0 + i;
          }
      }
}

// A pipelined dot keeps one A and B block per stage, B after A: every block
// must start on its swizzle's period when the first does.
TEST(WgmmaOperand, StagesKeepBlocksAligned) {
  for (int64_t m : {64, 128})
    for (int64_t k : {16, 32, 48, 64, 128})
      for (int64_t n : {8, 16, 24, 32, 64, 128, 256}) {
        int64_t instructionN = 8;
        for (int64_t width : {128, 64, 32, 16, 8})
          if (n % width == 0) {
            instructionN = width;
            break;
          }
        WgmmaOperand a = WgmmaOperand::forA(m, k), b = WgmmaOperand::forB(k, n, instructionN);
        int64_t aBytes = m * k * 2, stageBytes = (m * k + k * n) * 2;
        EXPECT_EQ(aBytes % (8 * b.atomBytes), 0) << m << " " << k << " " << n;
        EXPECT_EQ(stageBytes % (8 * a.atomBytes), 0) << m << " " << k << " " << n;
        EXPECT_EQ(stageBytes % (8 * b.atomBytes), 0) << m << " " << k << " " << n;
      }
}

// The fields of the default matmul_f16 tile (64 x 32 by 32 x 64, m64n64k16),
// as tensor-cores.test finds them in the PTX.
TEST(WgmmaOperand, DescriptorFields) {
  WgmmaOperand a = WgmmaOperand::forA(64, 32), b = WgmmaOperand::forB(32, 64, 64);
  EXPECT_EQ(a.descriptorFields(), 2ull << 62 | 32ull << 32 | 1ull << 16); // 64B, SBO 512
  EXPECT_EQ(b.descriptorFields(), 1ull << 62 | 64ull << 32 | 256ull << 16); // 128B, LBO 4096
}

/// The most 16-byte pieces of one ldmatrix phase (rows row0 .. row0 + 7 at
/// column `col`) that fall in one bank group.
int64_t ldmatrixConflicts(const kiln::gpu::SwizzledRows &layout, int64_t row0, int64_t col) {
  Ints ints;
  int64_t groups[8] = {}, worst = 0;
  for (int64_t r = row0; r < row0 + 8; ++r) {
    int64_t bytes = layout.offset(ints, r, col) * layout.elementBytes;
    worst = std::max(worst, ++groups[bytes / 16 % 8]);
  }
  return worst;
}

TEST(SwizzledRows, PermutesWholeChunksWithoutBankConflicts) {
  Ints ints;
  for (int64_t elementBytes : {1, 2, 4})
    for (int64_t chunks = 1; chunks <= 32; ++chunks) {
      kiln::gpu::SwizzledRows layout{32, chunks * 16 / elementBytes, elementBytes};
      SCOPED_TRACE(std::to_string(layout.columns) + " columns of " +
                   std::to_string(elementBytes) + "-byte elements");
      std::set<int64_t> seen;
      for (int64_t r = 0; r < layout.rows; ++r)
        for (int64_t c = 0; c < layout.columns; ++c) {
          int64_t at = layout.offset(ints, r, c);
          // Rows keep their own elements; chunks stay whole.
          ASSERT_EQ(at / layout.columns, r);
          if (c % layout.chunkElements() != 0) {
            ASSERT_EQ(at, layout.offset(ints, r, c - 1) + 1);
          }
          seen.insert(at);
        }
      ASSERT_EQ(int64_t(seen.size()), layout.rows * layout.columns);
      for (int64_t row0 = 0; row0 < layout.rows; row0 += 8)
        for (int64_t c = 0; c < layout.columns; c += layout.chunkElements())
          ASSERT_EQ(ldmatrixConflicts(layout, row0, c), 1) << "rows " << row0 << ", column " << c;
    }
}

// The readers' form (a step plus a lane's part) finds what the writers' form
// stored, for the steps and lane parts the readers use: K steps of 8, 16 or 32
// with lanes within them, tile columns of 8 with lanes below 8.
TEST(SwizzledRows, ReadersFindTheWritersElements) {
  Ints ints;
  for (int64_t elementBytes : {1, 2, 4})
    for (int64_t chunks = 1; chunks <= 32; ++chunks) {
      kiln::gpu::SwizzledRows layout{32, chunks * 16 / elementBytes, elementBytes};
      int64_t group = layout.phases() * layout.chunkElements();
      for (int64_t unit : {8, 16, 32})
        for (int64_t step = 0; step < layout.columns; step += unit)
          for (int64_t lane = 0; lane < unit && step + lane < layout.columns; ++lane) {
            if (layout.phases() > 1 && lane >= group)
              continue;
            for (int64_t r = 0; r < layout.rows; ++r)
              ASSERT_EQ(layout.offset(ints, r, step, lane), layout.offset(ints, r, step + lane))
                  << layout.columns << " columns of " << elementBytes << "-byte elements, row "
                  << r << ", step " << step << " + " << lane;
          }
    }
}

// What the swizzle buys on the default matmul_f16 tiles on sm_80: A is 64 x 32
// f16 (64-byte rows: row-major, rows r and r + 2 share banks, four to a group)
// and B 32 x 64 (128-byte rows: all eight rows in one group).
TEST(SwizzledRows, RowMajorConflictsItRemoves) {
  kiln::gpu::SwizzledRows a{64, 32, 2}, b{32, 64, 2};
  auto rowMajor = [](int64_t columns, int64_t elementBytes) {
    int64_t groups[8] = {}, worst = 0;
    for (int64_t r = 0; r < 8; ++r)
      worst = std::max(worst, ++groups[r * columns * elementBytes / 16 % 8]);
    return worst;
  };
  EXPECT_EQ(rowMajor(a.columns, 2), 4);
  EXPECT_EQ(rowMajor(b.columns, 2), 8);
  EXPECT_EQ(ldmatrixConflicts(a, 0, 8), 1);
  EXPECT_EQ(ldmatrixConflicts(b, 8, 16), 1);
}

} // namespace
