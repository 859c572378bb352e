//===- DeviceAgreementControlFlowTest.cpp - loops, early returns and grids on every device ===//
//
// While loops, break and continue, run-time and descending steps, returns from
// inside loops and from the kernel, grids past the workgroup limit, swizzled
// program ids, and the loops lavapipe would cut short.
//
// Each kernel runs through kiln::Session on the CPU and on Vulkan (lavapipe here),
// against a C++ reference.
//
//===----------------------------------------------------------------------===//

#include "kiln/kiln.h"
#include "test/session/FreshCache.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cmath>
#include <map>

using namespace kiln;

namespace {

using DeviceAgreement = test::FreshCacheTest;
using test::forEachDevice;

TEST_F(DeviceAgreement, WhileLoopsOnEveryDevice) {
  // Per-lane Collatz walks until every lane of the block is done (a reduction
  // in the condition, a trip count that differs per block), a scalar loop, one
  // that never runs at run time, and whiles nested in a for with a fresh
  // variable per trip.
  const char *source = R"(
kernel loops(x: tensor<i32>[N], steps: tensor<i32>[N], out: tensor<i32>[3], n: i32)
    params(B: i32 = 64) grid(cdiv(N, B)) {
  let offs = program_id(0) * B + arange(0, B);
  var v = load(x[offs], other = 1);
  var count = zeros<i32>[B];
  while max(v) > 1 {
    let active = v > 1;
    v = where(active, where((v & 1) == 1, 3 * v + 1, v >> 1), v);
    count += cast<i32>(active);
  }
  store(steps[offs], count);
  if program_id(0) == 0 {
    var p = 1;
    while p < n {
      p *= 2;
    }
    var z = 7;
    var m = n;
    while m < 0 {
      z = 0;
      m += 1;
    }
    var total = 0;
    for i in range(0, 5) {
      var j = 0;
      while j < i {
        j += 1;
        total += j * 10 + i;
      }
    }
    store(out[0], p);
    store(out[1], z);
    store(out[2], total);
  }
}
)";
  const int64_t n = 1000;
  std::vector<int32_t> x(n);
  for (int64_t i = 0; i < n; ++i)
    x[i] = int32_t(i % 2 ? i : n - i); // 1000, 1, 998, 3, ...: ragged trip counts
  std::vector<int32_t> want(n);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t v = x[i]; v > 1; v = v % 2 ? 3 * v + 1 : v / 2)
      ++want[i];
  int32_t total = 0;
  for (int32_t i = 0; i < 5; ++i)
    for (int32_t j = 1; j <= i; ++j)
      total += j * 10 + i;
  forEachDevice([&](Session &s, const std::string &device) {
    Kernel k = s.compile(source, "loops");
    ASSERT_TRUE(k.ok()) << k.status().message();
    Tensor tx = s.upload(x, {n}), steps = s.empty<int32_t>({n}), out = s.empty<int32_t>({3});
    ASSERT_TRUE(k(tx, steps, out, int32_t(n)).ok()) << device;
    std::vector<int32_t> got, scalars;
    ASSERT_TRUE(steps.download(got).ok() && out.download(scalars).ok());
    EXPECT_EQ(got, want) << device;
    EXPECT_EQ(scalars, (std::vector<int32_t>{1024, 7, total})) << device;
  });
}

TEST_F(DeviceAgreement, Swizzle2dGroupsRowsOnEveryDevice) {
  // Program (i, j) of an ni x nj grid writes its row-major number at its
  // swizzled position: the positions must be Triton's (a permutation that walks
  // each group of g rows column by column, the last group shorter).
  const char *source = R"(
kernel order(out: tensor<i32>[NI, NJ]) params(G: i32 = 3) grid(NI, NJ) {
  let (i, j) = swizzle2d(program_id(0), program_id(1), NI, NJ, G);
  store(out[i, j], program_id(0) * NJ + program_id(1));
}
)";
  auto swizzled = [](int64_t i, int64_t j, int64_t ni, int64_t nj, int64_t g) {
    int64_t ij = i * nj + j, group = ij / (g * nj), first = group * g;
    int64_t rows = std::min(ni - first, g), within = ij % (g * nj);
    return std::pair{first + within % rows, within / rows};
  };
  forEachDevice([&](Session &s, const std::string &device) {
    for (auto [ni, nj, g] : {std::array<int64_t, 3>{7, 4, 3}, {8, 5, 4}, {1, 6, 3}, {5, 1, 8}}) {
      Kernel k = s.compile(source, "order", {{"G", std::to_string(g)}});
      ASSERT_TRUE(k.ok()) << k.status().message();
      Tensor out = s.upload(std::vector<int32_t>(ni * nj, -1), {ni, nj});
      ASSERT_TRUE(k(out).ok()) << device;
      std::vector<int32_t> got;
      ASSERT_TRUE(out.download(got).ok());
      std::vector<int32_t> want(ni * nj, -1);
      for (int64_t i = 0; i < ni; ++i)
        for (int64_t j = 0; j < nj; ++j) {
          auto [si, sj] = swizzled(i, j, ni, nj, g);
          want[si * nj + sj] = static_cast<int32_t>(i * nj + j);
        }
      EXPECT_EQ(got, want) << device << " " << ni << " x " << nj << " groups of " << g;
      EXPECT_EQ(std::count(want.begin(), want.end(), -1), 0) << "not a permutation";
    }
  });
}

TEST_F(DeviceAgreement, KernelsReturnEarlyOnEveryDevice) {
  // `if pid * B >= N { return; }` guards the programs past the end (the grid
  // has two extra); a compile-time `if` returns nothing; a nested return skips
  // the final store of program 1 after its own store; a var assigned in
  // branches reaches the store after them.
  const char *source = R"(
kernel k(x: tensor<f32>[N], y: tensor<f32>[N]) params(B: i32 = 4, SKIP: i1 = false)
    grid(cdiv(N, B) + 2) {
  let pid = program_id(0);
  if pid * B >= N {
    return;
  }
  if SKIP {
    return;
  }
  let o = pid * B + arange(0, B);
  var v = load(x[o]);
  if pid == 1 {
    v = v * 10.0;
    if pid > 0 {
      store(y[o], v + 1.0);
      return;
    }
  } else {
    v = v + 100.0;
  }
  store(y[o], v);
}
)";
  const int64_t n = 12;
  std::vector<float> x(n);
  for (int64_t i = 0; i < n; ++i)
    x[i] = float(i);
  forEachDevice([&](Session &s, const std::string &device) {
    for (const char *skip : {"false", "true"}) {
      Kernel k = s.compile(source, "k", {{"SKIP", skip}});
      ASSERT_TRUE(k.ok()) << k.status().message();
      Tensor tx = s.upload(x, {n}), y = s.upload(std::vector<float>(n, -1.0f), {n});
      ASSERT_TRUE(k(tx, y).ok()) << device;
      std::vector<float> got;
      ASSERT_TRUE(y.download(got).ok());
      for (int64_t i = 0; i < n; ++i) {
        float want = skip[0] == 't' ? -1.0f : i / 4 == 1 ? x[i] * 10.0f + 1.0f : x[i] + 100.0f;
        EXPECT_EQ(got[i], want) << device << " SKIP=" << skip << " element " << i;
      }
    }
  });
}

TEST_F(DeviceAgreement, HelpersReturnEarlyOnEveryDevice) {
  // Guard clauses in helpers: each path through an `if` that returns ends the
  // helper (the rest of the body runs on the paths that do not), with values,
  // tuples, a weak constant taking the other path's type, nothing (`return;`),
  // an `if` decided at compile time, returning ifs as a whole branch (`else if`,
  // `else { if ... }`) and after other statements in a branch, whose paths go
  // on after the outer `if` (where the branch's names are out of scope), and
  // statements after an `if` that two paths reach, each declaring its names.
  const char *source = R"(
fn clampish(x, lo) {
  if lo > 100.0 {
    return 0.0;
  } else {
    if lo < 0.0 {
      return x;
    }
  }
  return max(x, lo);
}
fn sign_of(v: f32) {
  if v > 0.0 { } else if v < 0.0 { return -1; }
  let zero = v == 0.0;
  if zero { return 0; }
  return 1;
}
fn scaled(v, m: i32) {
  if m == 0 {
    return v;
  } else {
    let t = v * 2.0;
    if m == 1 { return t; }
    let u = t + 1.0;
    if m == 2 { return u; }
  }
  let t = v * 3.0;
  return -t;
}
fn pair(v, flip: i32) {
  if flip == 1 {
    return (v, -v);
  } else {
    var w = v * 2.0;
    if flip == 2 { w = w + 1.0; }
    return (w, v);
  }
}
fn store_if(y, o, v, n: i32) {
  if n < 0 { return; }
  store(y[o], v);
}
fn twice(v, B) {
  if B > 8 { return v * 2.0; }
  return v;
}
kernel k(x: tensor<f32>[N], y: tensor<f32>[N], z: tensor<f32>[N], s: tensor<i32>[1],
         w: tensor<f32>[N], lo: f32, flip: i32) params(B: i32 = 64) grid(cdiv(N, B)) {
  let o = program_id(0) * B + arange(0, B);
  store(w[o], scaled(load(x[o]), flip));
  let (a, b) = pair(clampish(load(x[o]), lo), flip);
  store(y[o], twice(a, B));
  store(z[o], b);
  store(s[0], sign_of(lo));
  store_if(y, o, a + b, flip - 5);
}
)";
  const int64_t n = 100;
  std::vector<float> x(n);
  for (int64_t i = 0; i < n; ++i)
    x[i] = float(i % 7) - 3.0f;
  forEachDevice([&](Session &s, const std::string &device) {
    Kernel k = s.compile(source, "k");
    ASSERT_TRUE(k.ok()) << k.status().message();
    for (float lo : {-1.0f, 0.5f, 200.0f})
      for (int32_t flip : {0, 1, 2, 6}) {
        Tensor tx = s.upload(x, {n}), y = s.empty<float>({n}), z = s.empty<float>({n}),
               sign = s.empty<int32_t>({1}), w = s.empty<float>({n});
        ASSERT_TRUE(k(tx, y, z, sign, w, lo, flip).ok()) << device;
        std::vector<float> gy, gz, gw;
        std::vector<int32_t> gs;
        ASSERT_TRUE(y.download(gy).ok() && z.download(gz).ok() && sign.download(gs).ok() &&
                    w.download(gw).ok());
        EXPECT_EQ(gs[0], lo > 0 ? 1 : lo < 0 ? -1 : 0) << device << " lo=" << lo;
        for (int64_t i = 0; i < n; ++i) {
          float c = lo > 100 ? 0.0f : lo < 0 ? x[i] : std::max(x[i], lo);
          float a = flip == 1 ? c : c * 2.0f + (flip == 2 ? 1.0f : 0.0f);
          float b = flip == 1 ? -c : c;
          float want = flip >= 5 ? a + b : a * 2.0f;
          ASSERT_EQ(gy[i], want) << device << " lo=" << lo << " flip=" << flip << " at " << i;
          ASSERT_EQ(gz[i], b) << device << " lo=" << lo << " flip=" << flip << " at " << i;
          float scaled = flip == 0   ? x[i]
                         : flip == 1 ? x[i] * 2.0f
                         : flip == 2 ? x[i] * 2.0f + 1.0f
                                     : -(x[i] * 3.0f);
          ASSERT_EQ(gw[i], scaled) << device << " flip=" << flip << " at " << i;
        }
      }
  });
}

TEST_F(DeviceAgreement, GridsPastTheWorkgroupLimitOnEveryDevice) {
  // Vulkan devices may count workgroups only to 65535 per axis (lavapipe
  // does): a wider grid runs as several dispatches, and program_id and
  // num_programs still give the whole grid's coordinates. `ids` takes three
  // dispatches along x (the last partial), `ids3` two along y.
  const char *source = R"(
kernel ids(out: tensor<i32>[N], counts: tensor<i32>[N]) grid(N) {
  let pid = program_id(0);
  store(out[pid], pid);
  store(counts[pid], num_programs(0));
}

kernel ids3(out: tensor<i32>[Z, Y, X], counts: tensor<i32>[Z, Y, X]) grid(X, Y, Z) {
  let x = program_id(0);
  let y = program_id(1);
  let z = program_id(2);
  store(out[z, y, x], (z * num_programs(1) + y) * num_programs(0) + x);
  store(counts[z, y, x], num_programs(0) * 1000000 + num_programs(1) * 10 + num_programs(2));
}
)";
  forEachDevice([&](Session &s, const std::string &device) {
    const int64_t n = 2 * 65535 + 1234;
    Kernel ids = s.compile(source, "ids");
    ASSERT_TRUE(ids.ok()) << ids.status().message();
    Tensor out = s.upload(std::vector<int32_t>(n, -1), {n});
    Tensor counts = s.upload(std::vector<int32_t>(n, -1), {n});
    ASSERT_TRUE(ids(out, counts).ok()) << device;
    std::vector<int32_t> got, gotCounts;
    ASSERT_TRUE(out.download(got).ok());
    ASSERT_TRUE(counts.download(gotCounts).ok());
    int64_t wrong = 0;
    for (int64_t i = 0; i < n; ++i)
      if (got[i] != i || gotCounts[i] != n) {
        if (++wrong <= 3)
          ADD_FAILURE() << device << " ids: program " << i << " saw id " << got[i]
                        << " and num_programs " << gotCounts[i];
      }
    EXPECT_EQ(wrong, 0) << device;

    const int64_t x = 3, y = 65535 + 17, z = 2;
    Kernel ids3 = s.compile(source, "ids3");
    ASSERT_TRUE(ids3.ok()) << ids3.status().message();
    Tensor out3 = s.upload(std::vector<int32_t>(x * y * z, -1), {z, y, x});
    Tensor counts3 = s.upload(std::vector<int32_t>(x * y * z, -1), {z, y, x});
    ASSERT_TRUE(ids3(out3, counts3).ok()) << device;
    ASSERT_TRUE(out3.download(got).ok());
    ASSERT_TRUE(counts3.download(gotCounts).ok());
    wrong = 0;
    const int32_t wantCount = int32_t(x * 1000000 + y * 10 + z);
    for (int64_t i = 0; i < x * y * z; ++i)
      if (got[i] != i || gotCounts[i] != wantCount) {
        if (++wrong <= 3)
          ADD_FAILURE() << device << " ids3: program " << i << " saw flat id " << got[i]
                        << " and counts " << gotCounts[i];
      }
    EXPECT_EQ(wrong, 0) << device;
  });
}

TEST_F(DeviceAgreement, BreakAndContinueOnEveryDevice) {
  // The first negative element's index (break), the sum of the others
  // (continue), `while true` left by a break, and a break in a nested loop that
  // leaves only the inner one.
  const char *source = R"(
kernel k(x: tensor<i32>[N], out: tensor<i32>[4]) grid(1) {
  // first index i with x[i] < 0 (or N), by a for loop with break
  var first = N;
  for i in range(0, N) {
    if load(x[i]) < 0 {
      first = i;
      break;
    }
  }
  // sum of the non-negative elements, skipping negatives with continue
  var total = 0;
  for i in range(0, N) {
    let v = load(x[i]);
    if v < 0 {
      continue;
    }
    total += v;
  }
  // while true with break: count how many doublings of 1 stay below 1000
  var n = 0;
  var p = 1;
  while true {
    p = p * 2;
    if p >= 1000 {
      break;
    }
    n += 1;
  }
  // nested: break only leaves the inner loop
  var pairs = 0;
  for a in range(0, 4) {
    for b in range(0, 4) {
      if b > a {
        break;
      }
      pairs += 1;
    }
  }
  let o = arange(0, 4);
  store(out[o], where(o == 0, first, where(o == 1, total, where(o == 2, n, pairs))));
}
)";
  std::vector<int32_t> x = {3, 5, 0, 7, -2, 4, -9, 6};
  const int64_t n = int64_t(x.size());
  forEachDevice([&](Session &s, const std::string &device) {
    Kernel k = s.compile(source, "k");
    ASSERT_TRUE(k.ok()) << k.status().message();
    for (bool negatives : {true, false}) {
      std::vector<int32_t> in = x;
      if (!negatives)
        for (int32_t &v : in)
          v = std::abs(v);
      Tensor tx = s.upload(in, {n}), out = s.empty<int32_t>({4});
      ASSERT_TRUE(k(tx, out).ok()) << device;
      std::vector<int32_t> got;
      ASSERT_TRUE(out.download(got).ok());
      int32_t total = 0;
      for (int32_t v : in)
        total += v < 0 ? 0 : v;
      std::vector<int32_t> want = {negatives ? 4 : int32_t(n), total, 9, 10};
      EXPECT_EQ(got, want) << device << (negatives ? " with negatives" : " without");
    }
  });
}

TEST_F(DeviceAgreement, RunTimeLoopStepsOnEveryDevice) {
  // range(start, end, step) with a step known only at launch, as Python's: the
  // trips and the loop variable's sum, a tile carried through the loop, and a
  // loop that may break. A negative step counts down while i > end, a zero one
  // runs no trips, and none steps past either end of i32 (INT_MAX, INT_MIN and
  // starts beside them). Then a constant end within a step of 2^31 - 1, where
  // an scf.for would wrap past it.
  const char *source = R"(
kernel k(x: tensor<i32>[N], out: tensor<i32>[4], start: i32, step: i32) grid(1) {
  var trips = 0;
  var total = 0;
  var lanes = zeros<i32>[8];
  for i in range(start, N, step) {
    trips += 1;
    total += i;
    lanes += load(x[i * 0 + arange(0, 8)]);
  }
  var firstNegative = -1;
  for i in range(start, N, step) {
    if load(x[i]) < 0 {
      firstNegative = i;
      break;
    }
  }
  let o = arange(0, 4);
  store(out[o], where(o == 0, trips, where(o == 1, total,
                where(o == 2, sum(lanes), firstNegative))));
}

kernel top(out: tensor<i32>[2], start: i32) grid(1) {
  var trips = 0;
  var last = 0;
  for i in range(start, 2147483647, 5) {
    trips += 1;
    last = i;
  }
  store(out[arange(0, 2)], where(arange(0, 2) == 0, trips, last));
}
)";
  std::vector<int32_t> x = {3, 5, 0, 7, 2, 4, -9, 6, 1, -1, 8, 2, 5};
  const int64_t n = int64_t(x.size());
  const int32_t firstEight = 3 + 5 + 0 + 7 + 2 + 4 - 9 + 6;
  forEachDevice([&](Session &s, const std::string &device) {
    Kernel k = s.compile(source, "k");
    ASSERT_TRUE(k.ok()) << k.status().message();
    Tensor tx = s.upload(x, {n});
    for (int32_t start : {0, 2, 20, -5, INT_MAX - 3, INT_MIN + 1})
      for (int32_t step : {1, 3, 7, 0, -2, -5, INT_MAX, INT_MIN}) {
        int64_t trips = 0, firstNegative = -1;
        uint32_t total = 0; // wraps as i32 does
        for (int64_t i = start; step > 0 ? i < n : step < 0 && i > n; i += step) {
          ++trips;
          total += uint32_t(i);
          if (firstNegative < 0 && i >= 0 && i < n && x[i] < 0) // out of bounds reads 0
            firstNegative = i;
        }
        if (trips > 100) // billions of trips from the bottom of i32 up by 1
          continue;
        Tensor out = s.empty<int32_t>({4});
        ASSERT_TRUE(k(tx, out, start, step).ok()) << device << " start " << start << " step "
                                                  << step;
        std::vector<int32_t> got;
        ASSERT_TRUE(out.download(got).ok());
        std::vector<int32_t> want = {int32_t(trips), int32_t(total),
                                     int32_t(trips) * firstEight, int32_t(firstNegative)};
        EXPECT_EQ(got, want) << device << " start " << start << " step " << step;
      }
    Kernel top = s.compile(source, "top");
    ASSERT_TRUE(top.ok()) << top.status().message();
    for (int32_t start : {INT_MAX - 7, INT_MAX - 5, INT_MAX - 1, INT_MAX - 11}) {
      Tensor out = s.empty<int32_t>({2});
      ASSERT_TRUE(top(out, start).ok()) << device;
      std::vector<int32_t> got;
      ASSERT_TRUE(out.download(got).ok());
      int32_t trips = 0, last = 0;
      for (int64_t i = start; i < INT_MAX; i += 5, ++trips)
        last = int32_t(i);
      EXPECT_EQ(got, (std::vector<int32_t>{trips, last})) << device << " start " << start;
    }
  });
}

TEST_F(DeviceAgreement, DescendingLoopsOnEveryDevice) {
  // range(start, end, step) with a negative constant step counts down while
  // i > end, as Python's does: the trips and the variable's sum and last
  // value for run-time bounds up to the ends of i32 (where negating would
  // overflow), a loop that may break (a while loop), a tile carried through,
  // and static_range counting down.
  const char *source = R"(
kernel k(x: tensor<i32>[N], out: tensor<i32>[6], start: i32, end: i32) params(STEP: i32 = -1)
    grid(1) {
  var trips = 0;
  var total = 0;
  var last = 0;
  var lanes = zeros<i32>[8];
  for i in range(start, end, STEP) {
    trips += 1;
    total += i;
    last = i;
    let j = (i % N + N) % N + arange(0, 8);
    lanes += load(x[j], mask = j < N, other = 0);
  }
  var stopped = 0;
  for i in range(start, end, STEP) {
    if i % 5 == 0 {
      stopped = i;
      break;
    }
  }
  var digits = 0;
  for i in static_range(9, -3, -4) {
    digits = digits * 100 + i + 10;
  }
  let o = arange(0, 6);
  store(out[o], where(o == 0, trips, where(o == 1, total, where(o == 2, last,
                where(o == 3, sum(lanes), where(o == 4, stopped, digits))))));
}
)";
  std::vector<int32_t> x = {3, 5, 0, 7, 2, 4, -9, 6, 1, -1, 8, 2, 5};
  const int64_t n = int64_t(x.size());
  struct Bounds {
    int32_t start, end;
  };
  const Bounds bounds[] = {{12, -1}, {12, 3},  {3, 12}, {7, 7}, {0, -20},
                           {INT_MIN + 6, INT_MIN}, {INT_MIN + 5, INT_MIN},
                           {INT_MAX, INT_MAX - 7}};
  forEachDevice([&](Session &s, const std::string &device) {
    Tensor tx = s.upload(x, {n});
    for (int32_t step : {-1, -3}) {
      Kernel k = s.compile(source, "k", {{"STEP", std::to_string(step)}});
      ASSERT_TRUE(k.ok()) << k.status().message();
      for (Bounds bd : bounds) {
        Tensor out = s.empty<int32_t>({6});
        ASSERT_TRUE(k(tx, out, bd.start, bd.end).ok()) << device;
        std::vector<int32_t> got;
        ASSERT_TRUE(out.download(got).ok());
        int32_t trips = 0;
        uint32_t total = 0;
        int64_t last = 0, lanes = 0;
        for (int64_t i = bd.start; i > bd.end; i += step) {
          ++trips;
          total += uint32_t(i);
          last = i;
          for (int64_t j = (i % n + n) % n; j < (i % n + n) % n + 8; ++j)
            lanes += j < n ? x[j] : 0;
        }
        int32_t firstFive = 0;
        for (int64_t i = bd.start; i > bd.end; i += step)
          if (i % 5 == 0) {
            firstFive = int32_t(i);
            break;
          }
        std::vector<int32_t> want = {trips,          int32_t(total), int32_t(last),
                                     int32_t(lanes), firstFive,      191511};
        EXPECT_EQ(got, want) << device << " range(" << bd.start << ", " << bd.end << ", "
                             << step << ")";
      }
    }
  });
}

TEST_F(DeviceAgreement, ReturnFromInsideLoopsOnEveryDevice) {
  // A program that finds a zero returns from inside two loops: the loops stop
  // and nothing after them runs; the others store their row's sum.
  const char *source = R"(
kernel k(x: tensor<i32>[M, N], out: tensor<i32>[M]) grid(M) {
  let row = program_id(0);
  var total = 0;
  var j = 0;
  while true {
    for k in range(0, 2) {
      if j + k < N {
        let v = load(x[row, j + k]);
        if v == 0 {
          return;
        }
        total += v;
      }
    }
    j += 2;
    if j >= N {
      break;
    }
  }
  store(out[row], total);
}
)";
  const int64_t m = 4, n = 5;
  std::vector<int32_t> x = {1, 2, 3, 4, 5, 1, 0, 1, 1, 1, 2, 2, 2, 2, 0, 7, 7, 7, 7, 7};
  forEachDevice([&](Session &s, const std::string &device) {
    Kernel k = s.compile(source, "k");
    ASSERT_TRUE(k.ok()) << k.status().message();
    Tensor tx = s.upload(x, {m, n}), out = s.upload(std::vector<int32_t>(m, -1), {m});
    ASSERT_TRUE(k(tx, out).ok()) << device;
    std::vector<int32_t> got;
    ASSERT_TRUE(out.download(got).ok());
    EXPECT_EQ(got, (std::vector<int32_t>{15, -1, -1, 35})) << device;
  });
}

TEST_F(DeviceAgreement, LoopsLavapipeWouldCutFailTheLaunch) {
  // lavapipe ends every loop of an invocation once its loops have iterated
  // 65535 times in all; Kiln's lavapipe kernels record whether each loop ran
  // to its end, so what would be a wrong answer is a failed launch. Loops that
  // stay under the limit, or that NIR unrolls (an inner loop of 16 constant
  // steps under 20000 outer ones), run and agree with the CPU, as does a cumsum
  // over 4096 elements (log2 doubling steps). Loops of constant trips are
  // checked when they may pass the limit (llvmpipe counts a loop's trips + 1),
  // and so is the loop of an exact f32 `%`, added after the kernel's own.
  const char *source = R"(
kernel steps(x: tensor<i32>[N], y: tensor<i32>[1]) params(INNER: i32 = 1) grid(1) {
  var acc = 0;
  for i in range(0, N) {
    let v = load(x[i]);
    for j in range(0, INNER) {
      acc = acc + v * (j + 1);
    }
  }
  store(y[0], acc);
}
kernel fixed(x: tensor<i32>[N], y: tensor<i32>[1]) params(OUTER: i32 = 1000) grid(1) {
  var acc = 0;
  for i in range(0, OUTER) {
    for j in range(0, 64) {
      acc = acc + load(x[j]) * (i + 1);
    }
  }
  store(y[0], acc);
}
kernel remainder(x: tensor<i32>[N], y: tensor<i32>[1], r: tensor<f32>[1], a: f32, b: f32)
    grid(1) {
  var acc = 0;
  for i in range(0, N) {
    acc = acc + load(x[i]);
  }
  store(y[0], acc);
  store(r[0], a % b);
}
kernel countdown(y: tensor<i32>[1], n: i32) grid(1) {
  var left = n;
  var count = 0;
  while left > 0 {
    left = left - 1;
    count = count + 1;
  }
  store(y[0], count);
}
kernel prefix(x: tensor<i32>[N], y: tensor<i32>[N]) params(BLOCK: i32 = 4096) grid(1) {
  let i = arange(0, BLOCK);
  store(y[i], cumsum(load(x[i], mask = i < N, other = 0), axis = 0), mask = i < N);
}
)";
  forEachDevice([&](Session &s, const std::string &device) {
    bool lavapipe = s.device().target().find(":cpu") != std::string::npos;
    auto run = [&](const std::string &kernel, int64_t n, int inner) {
      std::map<std::string, std::string> params;
      if (kernel == "steps")
        params["INNER"] = std::to_string(inner);
      if (kernel == "fixed")
        params["OUTER"] = std::to_string(n);
      Kernel k = s.compile(source, kernel, params);
      EXPECT_TRUE(k.ok()) << k.status().message();
      int64_t outputs = kernel == "prefix" ? n : 1;
      Tensor y = s.upload(std::vector<int32_t>(outputs, -1), {outputs});
      rt::Status st;
      if (kernel == "countdown") {
        st = k(y, int32_t(n));
      } else {
        int64_t size = kernel == "fixed" ? 64 : n;
        Tensor x = s.upload(std::vector<int32_t>(size, 1), {size});
        st = k(x, y);
      }
      std::vector<int32_t> got;
      if (st.ok()) {
        EXPECT_TRUE(y.download(got).ok());
      }
      return std::make_pair(st, got);
    };
    struct Case {
      const char *kernel;
      int64_t n;
      int inner;
      int64_t want; // y[0], or for prefix y[n - 1]
      bool pastTheLimit;
    };
    const Case cases[] = {{"steps", 60000, 1, 60000, false},
                          {"steps", 70000, 1, 70000, true},
                          {"steps", 20000, 16, 20000 * 136, false},
                          {"steps", 1200, 64, 1200 * 2080, true},
                          {"fixed", 900, 64, 64 * 900 * 901 / 2, false},
                          {"fixed", 1000, 64, 64 * 1000 * 1001 / 2, true},
                          {"countdown", 60000, 1, 60000, false},
                          {"countdown", 70000, 1, 70000, true},
                          // 12 doubling steps (folding each prefix took up to
                          // 4096 trips per register, past the limit)
                          {"prefix", 4096, 1, 4096, false}};
    for (const Case &c : cases) {
      std::string where = device + " " + c.kernel + " n=" + std::to_string(c.n) +
                          " inner=" + std::to_string(c.inner);
      auto [status, got] = run(c.kernel, c.n, c.inner);
      if (lavapipe && c.pastTheLimit) {
        ASSERT_FALSE(status.ok()) << where << ": a cut loop went unreported";
        EXPECT_NE(status.message().find("lavapipe's limit"), std::string::npos)
            << where << ": " << status.message();
        continue;
      }
      ASSERT_TRUE(status.ok()) << where << ": " << status.message();
      EXPECT_EQ(got[c.kernel == std::string("prefix") ? c.n - 1 : 0], c.want) << where;
    }

    // 3e38 % 1e-38 takes the long division's 32 steps (33 as llvmpipe counts):
    // after 65000 trips they fit under the limit, after 65510 they are cut.
    Kernel remainder = s.compile(source, "remainder");
    ASSERT_TRUE(remainder.ok()) << remainder.status().message();
    const float a = 3e38f, b = 1e-38f;
    for (int64_t n : {65000, 65510}) {
      std::string where = device + " remainder after " + std::to_string(n) + " trips";
      Tensor x = s.upload(std::vector<int32_t>(n, 1), {n});
      Tensor y = s.empty<int32_t>({1}), r = s.empty<float>({1});
      rt::Status status = remainder(x, y, r, a, b);
      if (lavapipe && n == 65510) {
        ASSERT_FALSE(status.ok()) << where << ": a cut loop went unreported";
        EXPECT_NE(status.message().find("lavapipe's limit"), std::string::npos)
            << where << ": " << status.message();
        continue;
      }
      ASSERT_TRUE(status.ok()) << where << ": " << status.message();
      std::vector<int32_t> gy;
      std::vector<float> gr;
      ASSERT_TRUE(y.download(gy).ok() && r.download(gr).ok());
      EXPECT_EQ(gy[0], n) << where;
      EXPECT_EQ(gr[0], std::fmod(a, b)) << where;
    }
  });
}

} // namespace
