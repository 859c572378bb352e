//===- DeviceAgreementAtomicsTest.cpp - atomics on every device -----------===//
//
// Integer and float atomics return the old values (every add seen once), float
// exchange and compare-and-swap, atomics of every width, and bitwise reductions
// and atomics.
//
// Each kernel runs through kiln::Session on the CPU and on Vulkan (lavapipe here),
// against a C++ reference.
//
//===----------------------------------------------------------------------===//

#include "kiln/kiln.h"
#include "lib/Support/Half.h"
#include "test/session/FreshCache.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <regex>

using namespace kiln;

namespace {

using DeviceAgreement = test::FreshCacheTest;
using test::forEachDevice;

/// Each lane `i` but the masked ones added `step` to bin `bins[i]` atomically
/// and got the total before: the lanes of a bin saw start, start + step, start +
/// 2 step, ... once each (a lost update would repeat one), and the bin ends
/// after its last one. Masked lanes got 0.
template <typename T>
void expectEveryAddSeen(const std::vector<T> &olds, const std::vector<T> &finals,
                        const std::vector<int32_t> &bins,
                        const std::function<bool(int64_t)> &masked, T start, T step,
                        const std::string &where) {
  std::vector<std::vector<T>> seen(finals.size());
  for (size_t i = 0; i < olds.size(); ++i) {
    if (masked(int64_t(i)))
      EXPECT_EQ(olds[i], T(0)) << where << " masked lane " << i;
    else
      seen[bins[i]].push_back(olds[i]);
  }
  for (size_t b = 0; b < finals.size(); ++b) {
    std::sort(seen[b].begin(), seen[b].end());
    EXPECT_EQ(finals[b], start + T(seen[b].size()) * step) << where << " bin " << b;
    for (size_t j = 0; j < seen[b].size(); ++j)
      ASSERT_EQ(seen[b][j], start + T(j) * step) << where << " bin " << b;
  }
}

TEST_F(DeviceAgreement, AtomicsReturnOldValuesOnEveryDevice) {
  // Tickets: every program takes one from a scalar counter, so they are a
  // permutation of 0 .. P-1. Slots: colliding tile lanes each see a distinct
  // earlier count. Exchange returns what was there. A compare-and-swap spin
  // lock guards a read-modify-write of a whole tile by every program (and a
  // plain counter): a lost update would show in either.
  const char *source = R"(
kernel tickets(counter: tensor<i32>[1], out: tensor<i32>[P]) grid(P) {
  store(out[program_id(0)], atomic_add(counter[0], 1));
}
kernel slots(h: tensor<i64>[B], x: tensor<i32>[N], old: tensor<i64>[N])
    params(BLOCK: i32 = 128) grid(cdiv(N, BLOCK)) {
  let offs = program_id(0) * BLOCK + arange(0, BLOCK);
  store(old[offs], atomic_add(h[load(x[offs])], 1, mask = offs < N && offs % 7 != 3));
}
kernel swap(x: tensor<i32>[N], y: tensor<i32>[N]) params(BLOCK: i32 = 128) grid(cdiv(N, BLOCK)) {
  let offs = program_id(0) * BLOCK + arange(0, BLOCK);
  store(y[offs], atomic_xchg(x[offs], offs * 2));
}
kernel locked(x: tensor<f32>[N], acc: tensor<f32>[BLOCK], lock: tensor<i32>[1],
              count: tensor<i32>[1]) params(BLOCK: i32 = 64) grid(cdiv(N, BLOCK)) {
  let v = load(x[program_id(0) * BLOCK + arange(0, BLOCK)]);
  while atomic_cas(lock[0], 0, 1) == 1 {
  }
  let c = arange(0, BLOCK);
  store(acc[c], load(acc[c]) + v);
  store(count[0], load(count[0]) + 1);
  atomic_xchg(lock[0], 0);
}
)";
  const int64_t programs = 300, n = 5000, bins = 10;
  std::vector<int32_t> x(n);
  for (int64_t i = 0; i < n; ++i)
    x[i] = int32_t((i * 7919) % bins);
  std::vector<float> values(n);
  for (int64_t i = 0; i < n; ++i)
    values[i] = float(i % 61); // integers: the sums are exact in any order
  forEachDevice([&](Session &s, const std::string &device) {
    Kernel tickets = s.compile(source, "tickets"), slots = s.compile(source, "slots"),
           swap = s.compile(source, "swap"), locked = s.compile(source, "locked");
    for (Kernel *k : {&tickets, &slots, &swap, &locked})
      ASSERT_TRUE(k->ok()) << device << ": " << k->status().message();

    Tensor counter = s.upload(std::vector<int32_t>{0}, {1}),
           out = s.empty<int32_t>({programs});
    ASSERT_TRUE(tickets(counter, out).ok()) << device;
    std::vector<int32_t> got;
    ASSERT_TRUE(out.download(got).ok());
    std::sort(got.begin(), got.end());
    for (int64_t i = 0; i < programs; ++i)
      ASSERT_EQ(got[i], i) << device;

    Tensor h = s.upload(std::vector<int64_t>(bins, 100), {bins}), tx = s.upload(x, {n}),
           old = s.empty<int64_t>({n});
    ASSERT_TRUE(slots(h, tx, old).ok()) << device;
    std::vector<int64_t> olds, counts;
    ASSERT_TRUE(old.download(olds).ok() && h.download(counts).ok());
    expectEveryAddSeen<int64_t>(olds, counts, x, [](int64_t i) { return i % 7 == 3; }, 100, 1,
                                device);

    std::vector<int32_t> before(n);
    for (int64_t i = 0; i < n; ++i)
      before[i] = int32_t(i * 3 + 1);
    Tensor sx = s.upload(before, {n}), sy = s.empty<int32_t>({n});
    ASSERT_TRUE(swap(sx, sy).ok()) << device;
    std::vector<int32_t> after, returned;
    ASSERT_TRUE(sx.download(after).ok() && sy.download(returned).ok());
    EXPECT_EQ(returned, before) << device;
    for (int64_t i = 0; i < n; ++i)
      ASSERT_EQ(after[i], i * 2) << device;

    Tensor lx = s.upload(values, {n}), acc = s.upload(std::vector<float>(64, 0.0f), {64}),
           lock = s.upload(std::vector<int32_t>{0}, {1}),
           count = s.upload(std::vector<int32_t>{0}, {1});
    ASSERT_TRUE(locked(lx, acc, lock, count).ok()) << device;
    std::vector<float> sums;
    std::vector<int32_t> finalCount, finalLock;
    ASSERT_TRUE(acc.download(sums).ok() && count.download(finalCount).ok() &&
                lock.download(finalLock).ok());
    int64_t blocks = (n + 63) / 64;
    EXPECT_EQ(finalCount[0], blocks) << device;
    EXPECT_EQ(finalLock[0], 0) << device;
    for (int64_t c = 0; c < 64; ++c) {
      double want = 0;
      for (int64_t i = c; i < n; i += 64)
        want += values[i];
      ASSERT_EQ(sums[c], float(want)) << device << " column " << c;
    }
  });
}

TEST_F(DeviceAgreement, FloatExchangeAndCompareAndSwapOnEveryDevice) {
  // f32 atomic_xchg returns what each element held; atomic_cas compares bits:
  // -0.0 is not 0.0, and a NaN matches the same NaN. `count` adds 1.0 per
  // program to one float through a compare-and-swap loop under contention: a
  // lost update (a swap that succeeded on stale bits) would show in the total.
  const char *source = R"(
kernel swaps(x: tensor<f32>[N], old: tensor<f32>[N]) grid(cdiv(N, 64)) {
  let o = program_id(0) * 64 + arange(0, 64);
  store(old[o], atomic_xchg(x[o], cast<f32>(o) * 0.5, mask = o < N), mask = o < N);
}

kernel bits(x: tensor<f32>[3], seen: tensor<f32>[3]) grid(1) {
  store(seen[0], atomic_cas(x[0], 0.0, 5.0));
  store(seen[1], atomic_cas(x[1], nan, 7.0));
  store(seen[2], atomic_cas(x[2], 2.5, 9.0));
}

kernel count(total: tensor<f32>[1], tries: tensor<i32>[P]) grid(P) {
  // An atomic read: every thread of the program gets the same value (a plain
  // load of an element other programs update may differ between threads).
  var current = atomic_add(total[0], 0.0);
  var n = 1;
  while true {
    let seen = atomic_cas(total[0], current, current + 1.0);
    if seen == current {
      break;
    }
    current = seen;
    n = n + 1;
  }
  store(tries[program_id(0)], n);
}
)";
  forEachDevice([&](Session &s, const std::string &device) {
    const int64_t n = 150;
    std::vector<float> x(n);
    for (int64_t i = 0; i < n; ++i)
      x[i] = float(i) * -3.0f;
    Kernel swaps = s.compile(source, "swaps");
    ASSERT_TRUE(swaps.ok()) << swaps.status().message();
    Tensor tx = s.upload(x, {n}), old = s.empty<float>({n});
    ASSERT_TRUE(swaps(tx, old).ok()) << device;
    std::vector<float> gotX, gotOld;
    ASSERT_TRUE(tx.download(gotX).ok());
    ASSERT_TRUE(old.download(gotOld).ok());
    for (int64_t i = 0; i < n; ++i) {
      EXPECT_EQ(gotOld[i], x[i]) << device << " element " << i;
      EXPECT_EQ(gotX[i], float(i) * 0.5f) << device << " element " << i;
    }

    Kernel bits = s.compile(source, "bits");
    ASSERT_TRUE(bits.ok()) << bits.status().message();
    const float nan = std::numeric_limits<float>::quiet_NaN();
    Tensor b = s.upload(std::vector<float>{-0.0f, nan, 2.5f}, {3}), seen = s.empty<float>({3});
    ASSERT_TRUE(bits(b, seen).ok()) << device;
    std::vector<float> after, was;
    ASSERT_TRUE(b.download(after).ok());
    ASSERT_TRUE(seen.download(was).ok());
    EXPECT_TRUE(after[0] == 0.0f && std::signbit(after[0])) << device << ": -0.0 matched 0.0";
    EXPECT_TRUE(was[0] == 0.0f && std::signbit(was[0])) << device;
    EXPECT_EQ(after[1], 7.0f) << device << ": the same NaN did not match";
    EXPECT_TRUE(std::isnan(was[1])) << device;
    EXPECT_EQ(after[2], 9.0f) << device;
    EXPECT_EQ(was[2], 2.5f) << device;

    const int64_t programs = 300;
    Kernel count = s.compile(source, "count");
    ASSERT_TRUE(count.ok()) << count.status().message();
    Tensor total = s.upload(std::vector<float>{0.0f}, {1});
    Tensor tries = s.empty<int32_t>({programs});
    ASSERT_TRUE(count(total, tries).ok()) << device;
    std::vector<float> sum;
    std::vector<int32_t> attempts;
    ASSERT_TRUE(total.download(sum).ok());
    ASSERT_TRUE(tries.download(attempts).ok());
    EXPECT_EQ(sum[0], float(programs)) << device;
    EXPECT_GE(*std::min_element(attempts.begin(), attempts.end()), 1) << device;
  });
}

TEST_F(DeviceAgreement, FloatAtomicsOnEveryDevice) {
  // f32 atomics: native on the CPU, CUDA and HIP; on Vulkan the tensor is held
  // as i32 and each update is a compare-and-swap loop. Colliding lanes adding 1
  // each see a distinct earlier count (a lost update would repeat one); sums of
  // integers are exact in any order. `mixed` also loads and stores the tensor
  // that it updates atomically.
  const char *source = R"(
kernel counts(h: tensor<f32>[B], x: tensor<i32>[N], old: tensor<f32>[N])
    params(BLOCK: i32 = 128) grid(cdiv(N, BLOCK)) {
  let offs = program_id(0) * BLOCK + arange(0, BLOCK);
  store(old[offs], atomic_add(h[load(x[offs])], 1.0, mask = offs < N && offs % 5 != 2));
}
kernel totals(x: tensor<f32>[N], t: tensor<f32>[3]) params(BLOCK: i32 = 128) grid(cdiv(N, BLOCK)) {
  let offs = program_id(0) * BLOCK + arange(0, BLOCK);
  let v = load(x[offs], mask = offs < N, other = 0.0);
  atomic_add(t[0], sum(v));
  atomic_max(t[1], max(v));
  atomic_min(t[2], min(load(x[offs], mask = offs < N, other = 1e30)));
}
kernel mixed(h: tensor<f32>[M], y: tensor<f32>[K]) params(K: i32 = 64) grid(1) {
  let c = arange(0, K);
  let old = atomic_add(h[c], 1.5);
  store(y[c], load(h[c]) - old);
  store(h[c + K], old * 2.0);
}
kernel tickets(count: tensor<f32>[2], out: tensor<f32>[N]) grid(N) {
  // No tiles at all: the program's threads still share the swap loop's flags
  // and thread 0's old value through shared memory.
  store(out[program_id(0)], atomic_add(count[0], 1.0));
  atomic_max(count[1], cast<f32>(program_id(0)));
}
kernel extremes(x: tensor<f32>[N], m: tensor<f32>[4]) grid(N) {
  // Float atomic max/min propagate NaN as elementwise max/min do, whether the
  // NaN arrives or is already there (LLVM's atomicrmw fmax ignores it).
  let v = load(x[program_id(0)]);
  atomic_max(m[0], v);
  atomic_min(m[1], v);
  atomic_max(m[2], 1.0);
  atomic_min(m[3], 1.0);
}
)";
  const int64_t n = 5000, bins = 10;
  std::vector<int32_t> x(n);
  std::vector<float> values(n);
  for (int64_t i = 0; i < n; ++i) {
    x[i] = int32_t((i * 7919) % bins);
    values[i] = float((i * 37) % 101) - 50.0f;
  }
  forEachDevice([&](Session &s, const std::string &device) {
    Kernel counts = s.compile(source, "counts"), totals = s.compile(source, "totals"),
           mixed = s.compile(source, "mixed"), tickets = s.compile(source, "tickets");
    for (Kernel *k : {&counts, &totals, &mixed, &tickets})
      ASSERT_TRUE(k->ok()) << device << ": " << k->status().message();

    Tensor h = s.upload(std::vector<float>(bins, 100.0f), {bins}), tx = s.upload(x, {n}),
           old = s.empty<float>({n});
    ASSERT_TRUE(counts(h, tx, old).ok()) << device;
    std::vector<float> olds, finals;
    ASSERT_TRUE(old.download(olds).ok() && h.download(finals).ok());
    expectEveryAddSeen<float>(olds, finals, x, [](int64_t i) { return i % 5 == 2; }, 100.0f,
                              1.0f, device);

    Tensor tv = s.upload(values, {n}), t = s.upload(std::vector<float>{0.5f, -1e30f, 1e30f}, {3});
    ASSERT_TRUE(totals(tv, t).ok()) << device;
    std::vector<float> got;
    ASSERT_TRUE(t.download(got).ok());
    double sum = 0.5;
    for (float v : values)
      sum += v;
    EXPECT_EQ(got, (std::vector<float>{float(sum), 50.0f, -50.0f})) << device;

    std::vector<float> start(128);
    for (int64_t i = 0; i < 128; ++i)
      start[i] = float(i) * 0.25f;
    Tensor mh = s.upload(start, {128}), my = s.empty<float>({64});
    ASSERT_TRUE(mixed(mh, my).ok()) << device;
    std::vector<float> after, diffs;
    ASSERT_TRUE(mh.download(after).ok() && my.download(diffs).ok());
    for (int64_t i = 0; i < 64; ++i) {
      ASSERT_EQ(diffs[i], 1.5f) << device << " at " << i;
      ASSERT_EQ(after[i], start[i] + 1.5f) << device << " at " << i;
      ASSERT_EQ(after[64 + i], start[i] * 2.0f) << device << " at " << i;
    }

    const int64_t programs = 300;
    Tensor count = s.upload(std::vector<float>{0.0f, -1.0f}, {2}),
           tickets_out = s.empty<float>({programs});
    ASSERT_TRUE(tickets(count, tickets_out).ok()) << device;
    std::vector<float> counted, issued;
    ASSERT_TRUE(count.download(counted).ok() && tickets_out.download(issued).ok());
    EXPECT_EQ(counted, (std::vector<float>{float(programs), float(programs - 1)})) << device;
    std::sort(issued.begin(), issued.end());
    for (int64_t i = 0; i < programs; ++i)
      ASSERT_EQ(issued[i], float(i)) << device << ": every program gets its own ticket";

    Kernel extremes = s.compile(source, "extremes");
    ASSERT_TRUE(extremes.ok()) << device << ": " << extremes.status().message();
    const float nan = std::numeric_limits<float>::quiet_NaN();
    Tensor ex = s.upload(std::vector<float>{1.0f, nan, 3.0f, -2.0f}, {4}),
           em = s.upload(std::vector<float>{0.0f, 0.0f, nan, nan}, {4});
    ASSERT_TRUE(extremes(ex, em).ok()) << device;
    std::vector<float> m;
    ASSERT_TRUE(em.download(m).ok());
    for (int i = 0; i < 4; ++i)
      EXPECT_TRUE(std::isnan(m[i])) << device << ": element " << i << " is " << m[i];
  });
}

TEST_F(DeviceAgreement, FloatAtomicsOfEveryWidthOnEveryDevice) {
  // atomic_add, max, min, xchg and cas on f16, bf16 and f64 tensors. On the CPU,
  // CUDA and HIP they are LLVM's atomics (compare-and-swap loops where the
  // target has no such instruction); on Vulkan f64 is held as i64 and 16-bit
  // floats two to a 32-bit word, each update (and store) a compare-and-swap of
  // the word, so neighbours in `h` (an odd count: the last word is half used)
  // contend for their words as well as colliding lanes for their elements. Each
  // lane adding `step` sees a distinct earlier total (a lost update would repeat
  // one); the totals are exact in any order. `mixed` also loads and stores the
  // tensor it updates.
  const char *source = R"(
kernel counts(h: tensor<T>[B], x: tensor<i32>[N], old: tensor<f64>[N])
    params(BLOCK: i32 = 128) grid(cdiv(N, BLOCK)) {
  let offs = program_id(0) * BLOCK + arange(0, BLOCK);
  let bin = load(x[offs], mask = offs < N, other = 0);
  let was = atomic_add(h[bin], STEP, mask = offs < N && offs % 5 != 2);
  store(old[offs], cast<f64>(was), mask = offs < N);
}
kernel extremes(h: tensor<T>[8], v: tensor<f32>[N]) params(BLOCK: i32 = 64) grid(cdiv(N, BLOCK)) {
  let offs = program_id(0) * BLOCK + arange(0, BLOCK);
  let x = cast<T>(load(v[offs], mask = offs < N, other = 0.0));
  atomic_max(h[offs % 2], x, mask = offs < N);
  atomic_min(h[2 + offs % 2], x, mask = offs < N);
}
kernel mixed(h: tensor<T>[M], y: tensor<f64>[K]) params(K: i32 = 64) grid(1) {
  // Even elements are updated atomically, odd ones (their word's other half on
  // Vulkan) stored, and both loaded.
  let c = arange(0, K);
  let old = atomic_add(h[2 * c], 1.5);
  store(h[2 * c + 1], old * 2.0);
  store(y[c], cast<f64>(load(h[2 * c]) - old + load(h[2 * c + 1])));
}
kernel swaps(h: tensor<T>[8], seen: tensor<f64>[4]) grid(1) {
  store(seen[0], cast<f64>(atomic_cas(h[4], 0.0, 5.0)));
  store(seen[1], cast<f64>(atomic_cas(h[5], nan, 7.0)));
  store(seen[2], cast<f64>(atomic_cas(h[6], 2.5, 9.0)));
  store(seen[3], cast<f64>(atomic_xchg(h[7], -4.0)));
}
)";
  struct Width {
    DType dtype;
    const char *name, *step; // f64: 1 + 2^-30, which f32 cannot hold
    double stepValue;
  };
  const Width widths[] = {{DType::F16, "f16", "1.0", 1.0},
                          {DType::BF16, "bf16", "1.0", 1.0},
                          {DType::F64, "f64", "1.000000000931322574615478515625",
                           1.0 + std::ldexp(1.0, -30)}};
  auto toBits = [](DType dtype, const std::vector<double> &values) {
    std::vector<uint8_t> bytes(values.size() * dtypeBytes(dtype));
    for (size_t i = 0; i < values.size(); ++i) {
      if (dtype == DType::F64) {
        std::memcpy(&bytes[i * 8], &values[i], 8);
        continue;
      }
      uint16_t b = dtype == DType::F16 ? floatToHalfBits(float(values[i]))
                                       : floatToBF16Bits(float(values[i]));
      std::memcpy(&bytes[i * 2], &b, 2);
    }
    return bytes;
  };
  auto fromBits = [](DType dtype, const std::vector<uint8_t> &bytes) {
    std::vector<double> values(bytes.size() / dtypeBytes(dtype));
    for (size_t i = 0; i < values.size(); ++i) {
      if (dtype == DType::F64) {
        std::memcpy(&values[i], &bytes[i * 8], 8);
        continue;
      }
      uint16_t b;
      std::memcpy(&b, &bytes[i * 2], 2);
      values[i] = dtype == DType::F16 ? halfBitsToFloat(b) : bf16BitsToFloat(b);
    }
    return values;
  };
  const int64_t n = 900, bins = 7;
  std::vector<int32_t> x(n);
  std::vector<float> values(n);
  for (int64_t i = 0; i < n; ++i) {
    x[i] = int32_t((i * 7919) % bins);
    values[i] = float((i * 37) % 101) - 50.0f; // small integers: exact in bf16
  }
  const double inf = INFINITY, nan = NAN;
  forEachDevice([&](Session &s, const std::string &device) {
    for (const Width &w : widths) {
      std::string text = std::regex_replace(source, std::regex("\\bT\\b"), w.name);
      text = std::regex_replace(text, std::regex("STEP"), w.step);
      std::string where = device + " " + w.name;
      Kernel counts = s.compile(text, "counts"), extremes = s.compile(text, "extremes"),
             swaps = s.compile(text, "swaps"), mixed = s.compile(text, "mixed");
      for (Kernel *k : {&counts, &extremes, &swaps, &mixed})
        ASSERT_TRUE(k->ok()) << where << ": " << k->status().message();

      std::vector<uint8_t> zeros = toBits(w.dtype, std::vector<double>(bins, 0.0));
      Tensor h = s.upload(zeros.data(), w.dtype, {bins}), tx = s.upload(x, {n}),
             old = s.empty<double>({n});
      ASSERT_TRUE(counts(h, tx, old).ok()) << where;
      std::vector<double> olds;
      std::vector<uint8_t> finalBits(zeros.size());
      ASSERT_TRUE(old.download(olds).ok() && h.download(finalBits.data()).ok()) << where;
      expectEveryAddSeen<double>(olds, fromBits(w.dtype, finalBits), x,
                                 [](int64_t i) { return i % 5 == 2; }, 0.0, w.stepValue, where);

      std::vector<uint8_t> start = toBits(w.dtype, {-inf, -inf, inf, inf, -0.0, nan, 2.5, 1.0});
      Tensor hx = s.upload(start.data(), w.dtype, {8}), tv = s.upload(values, {n}),
             tseen = s.empty<double>({4});
      ASSERT_TRUE(extremes(hx, tv).ok()) << where;
      ASSERT_TRUE(swaps(hx, tseen).ok()) << where;
      std::vector<uint8_t> afterBits(start.size());
      std::vector<double> was;
      ASSERT_TRUE(hx.download(afterBits.data()).ok() && tseen.download(was).ok()) << where;
      std::vector<double> after = fromBits(w.dtype, afterBits);
      double most[2] = {-inf, -inf}, least[2] = {inf, inf};
      for (int64_t i = 0; i < n; ++i) {
        most[i % 2] = std::max(most[i % 2], double(values[i]));
        least[i % 2] = std::min(least[i % 2], double(values[i]));
      }
      EXPECT_EQ(after[0], most[0]) << where;
      EXPECT_EQ(after[1], most[1]) << where;
      EXPECT_EQ(after[2], least[0]) << where;
      EXPECT_EQ(after[3], least[1]) << where;
      // atomic_cas compares bits: -0.0 is not 0.0, the same NaN matches.
      EXPECT_TRUE(after[4] == 0.0 && std::signbit(after[4])) << where << ": -0.0 matched 0.0";
      EXPECT_TRUE(was[0] == 0.0 && std::signbit(was[0])) << where;
      EXPECT_EQ(after[5], 7.0) << where << ": the same NaN did not match";
      EXPECT_TRUE(std::isnan(was[1])) << where;
      EXPECT_EQ(after[6], 9.0) << where;
      EXPECT_EQ(was[2], 2.5) << where;
      EXPECT_EQ(after[7], -4.0) << where;
      EXPECT_EQ(was[3], 1.0) << where;

      std::vector<double> quarters(128);
      for (int64_t i = 0; i < 128; ++i)
        quarters[i] = double(i) * 0.25; // exact in bf16, as are the sums below
      std::vector<uint8_t> mixedBits = toBits(w.dtype, quarters);
      Tensor mh = s.upload(mixedBits.data(), w.dtype, {128}), my = s.empty<double>({64});
      ASSERT_TRUE(mixed(mh, my).ok()) << where;
      std::vector<double> sums;
      ASSERT_TRUE(mh.download(mixedBits.data()).ok() && my.download(sums).ok()) << where;
      std::vector<double> mixedAfter = fromBits(w.dtype, mixedBits);
      for (int64_t c = 0; c < 64; ++c) {
        double was = quarters[2 * c];
        ASSERT_EQ(mixedAfter[2 * c], was + 1.5) << where << " at " << 2 * c;
        ASSERT_EQ(mixedAfter[2 * c + 1], was * 2.0) << where << " at " << 2 * c + 1;
        ASSERT_EQ(sums[c], 1.5 + was * 2.0) << where << " at " << c;
      }
    }
  });
}

TEST_F(DeviceAgreement, BitwiseReductionsAndAtomicsOnEveryDevice) {
  // xor_sum along each axis and over a whole tile (Triton's tl.xor_sum), and
  // atomic_and/or/xor with colliding lanes: the final words are the and/or/xor
  // of everything each word received; an old value of `or` holds a subset of
  // the final bits, of `and` a superset.
  const char *source = R"(
kernel xors(x: tensor<i32>[M, N], r: tensor<i32>[M], c: tensor<i32>[N], t: tensor<i64>[1]) grid(1) {
  let rows = arange(0, 8);
  let cols = arange(0, 64);
  let v = load(x[rows[:, None], cols[None, :]]);
  store(r[rows], xor_sum(v, axis = 1));
  store(c[cols], xor_sum(v, axis = 0));
  store(t[0], xor_sum(cast<i64>(v) * 4294967296 + cast<i64>(v)));
}
kernel flags(h: tensor<i32>[B], x: tensor<i32>[N], ao: tensor<i32>[N], oo: tensor<i32>[N],
             g: tensor<i64>[1]) params(BLOCK: i32 = 128) grid(cdiv(N, BLOCK)) {
  let offs = program_id(0) * BLOCK + arange(0, BLOCK);
  let m = offs < N;
  let v = load(x[offs], mask = m, other = 0);
  store(ao[offs], atomic_and(h[offs % 4], v, mask = m), mask = m);
  store(oo[offs], atomic_or(h[offs % 4 + 4], v, mask = m), mask = m);
  atomic_xor(h[offs % 4 + 8], v, mask = m);
  atomic_xor(g[0], cast<i64>(xor_sum(v)) * 3);
}
)";
  std::vector<int32_t> x(8 * 64);
  uint32_t state = 12345;
  for (int32_t &v : x) {
    state = state * 1664525u + 1013904223u;
    v = int32_t(state);
  }
  const int64_t n = 3000;
  std::vector<int32_t> bits(n);
  for (int64_t i = 0; i < n; ++i) {
    state = state * 1664525u + 1013904223u;
    // Mostly-set words for `and`, sparse ones for `or`: both stay informative.
    bits[i] = int32_t(i % 2 ? state | 0x7FFF7FF0u : state & 0x01010101u);
  }
  std::vector<int32_t> start = {-1, -1, -1, -1, 0, 0, 0, 0, 7, 7, 7, 7};
  std::vector<int32_t> want = start;
  int64_t wantG = 0;
  for (int64_t i = 0; i < n; ++i) {
    want[i % 4] &= bits[i];
    want[4 + i % 4] |= bits[i];
    want[8 + i % 4] ^= bits[i];
  }
  for (int64_t p = 0; p < (n + 127) / 128; ++p) {
    int32_t block = 0;
    for (int64_t i = p * 128; i < std::min(n, p * 128 + 128); ++i)
      block ^= bits[i];
    wantG ^= int64_t(block) * 3;
  }
  forEachDevice([&](Session &s, const std::string &device) {
    Kernel xors = s.compile(source, "xors"), flags = s.compile(source, "flags");
    for (Kernel *k : {&xors, &flags})
      ASSERT_TRUE(k->ok()) << device << ": " << k->status().message();

    Tensor tx = s.upload(x, {8, 64}), r = s.empty<int32_t>({8}), c = s.empty<int32_t>({64}),
           t = s.empty<int64_t>({1});
    ASSERT_TRUE(xors(tx, r, c, t).ok()) << device;
    std::vector<int32_t> rows, cols;
    std::vector<int64_t> total;
    ASSERT_TRUE(r.download(rows).ok() && c.download(cols).ok() && t.download(total).ok());
    int64_t wantTotal = 0;
    for (int64_t i = 0; i < 8; ++i) {
      int32_t want = 0;
      for (int64_t j = 0; j < 64; ++j)
        want ^= x[i * 64 + j];
      EXPECT_EQ(rows[i], want) << device << " row " << i;
    }
    for (int64_t j = 0; j < 64; ++j) {
      int32_t want = 0;
      for (int64_t i = 0; i < 8; ++i)
        want ^= x[i * 64 + j];
      EXPECT_EQ(cols[j], want) << device << " column " << j;
    }
    for (int32_t v : x)
      wantTotal ^= int64_t(v) * 4294967296 + int64_t(v);
    EXPECT_EQ(total[0], wantTotal) << device;

    Tensor h = s.upload(start, {12}), tb = s.upload(bits, {n}), ao = s.empty<int32_t>({n}),
           oo = s.empty<int32_t>({n}), g = s.upload(std::vector<int64_t>{0}, {1});
    ASSERT_TRUE(flags(h, tb, ao, oo, g).ok()) << device;
    std::vector<int32_t> words, andOld, orOld;
    std::vector<int64_t> gs;
    ASSERT_TRUE(h.download(words).ok() && ao.download(andOld).ok() && oo.download(orOld).ok() &&
                g.download(gs).ok());
    EXPECT_EQ(words, want) << device;
    EXPECT_EQ(gs[0], wantG) << device;
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(andOld[i] & want[i % 4], want[i % 4]) << device << " and lane " << i;
      ASSERT_EQ(orOld[i] | want[4 + i % 4], want[4 + i % 4]) << device << " or lane " << i;
    }
  });
}

} // namespace
