//===- DeviceAgreementTileOpsTest.cpp - reductions, scans and tile shuffles on every device ===//
//
// argmax/argmin, gather, sort, new axes and slices, masked block views, scans (reverse,
// custom, long), custom reductions over tuples, join/split/interleave/cat, flip and ravel, and
// reductions along either axis of tiles of every shape.
//
// Each kernel runs through kiln::Session on the CPU and on Vulkan (lavapipe here),
// against a C++ reference.
//
//===----------------------------------------------------------------------===//

#include "kiln/kiln.h"
#include "lib/Support/Half.h"
#include "test/Common/Compare.h"
#include "test/session/FreshCache.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cmath>
#include <map>
#include <numeric>
#include <random>

using namespace kiln;

namespace {

using DeviceAgreement = test::FreshCacheTest;
using test::forEachDevice;

TEST_F(DeviceAgreement, ArgMaxAndArgMinOnEveryDevice) {
  // The first index of the largest / smallest element; NaN counts as the extreme
  // (as max and min propagate it), ties go to the lowest index. Rows of 1024
  // cover the CPU's chunked reductions; the i32 kernel has no NaN. On Vulkan the
  // f32 and i32 exchanges of the 4 x 1024 tile share one 16 KiB buffer.
  const char *source = R"(
kernel arg(x: tensor<f32>[M, N], rmax: tensor<i32>[M], cmin: tensor<i32>[N],
           flat: tensor<i32>[1], kept: tensor<i32>[M])
    params(BM: i32 = 4, BN: i32 = 1024) grid(1) {
  let r = arange(0, BM);
  let c = arange(0, BN);
  let t = load(x[expand_dims(r, 1), expand_dims(c, 0)], other = -inf);
  store(rmax[r], argmax(t, axis = 1));
  store(cmin[c], argmin(t, axis = -2));
  store(flat[0], argmax(t));
  let k = argmin(t, axis = 1, keepdims = true);
  store(kept[expand_dims(r, 1)], k);
}
kernel iarg(x: tensor<i32>[N], out: tensor<i32>[2]) params(B: i32 = 64) grid(1) {
  let v = load(x[arange(0, B)], other = 0);
  store(out[0], argmax(v));
  store(out[1], argmin(v, axis = 0));
}
)";
  const int64_t m = 4, n = 1024;
  std::vector<float> x(m * n);
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> small(-50, 50);
  for (float &v : x)
    v = float(small(rng)); // many ties
  x[1 * n + 700] = NAN;    // row 1: NaN wins argmax and argmin
  x[1 * n + 900] = NAN;
  x[0 * n + 5] = 1000;     // row 0: a clear maximum
  x[0 * n + 6] = 1000;     // tied later: index 5 wins
  auto first = [&](int64_t count, auto at, bool isMax) {
    int64_t best = 0;
    for (int64_t i = 0; i < count; ++i) {
      float v = at(i), b = at(best);
      if (std::isnan(b))
        break;
      if (std::isnan(v) || (isMax ? v > b : v < b))
        best = i;
    }
    return int32_t(best);
  };
  std::vector<int32_t> xi(50);
  for (size_t i = 0; i < xi.size(); ++i)
    xi[i] = (int32_t(i) * 7919) % 61 - 30;
  forEachDevice([&](Session &s, const std::string &device) {
    Kernel k = s.compile(source, "arg"), ki = s.compile(source, "iarg");
    ASSERT_TRUE(k.ok()) << k.status().message();
    ASSERT_TRUE(ki.ok()) << ki.status().message();
    Tensor tx = s.upload(x, {m, n}), rmax = s.empty<int32_t>({m}), cmin = s.empty<int32_t>({n}),
           flat = s.empty<int32_t>({1}), kept = s.empty<int32_t>({m});
    ASSERT_TRUE(k(tx, rmax, cmin, flat, kept).ok()) << device;
    std::vector<int32_t> ro, co, fo, ko;
    ASSERT_TRUE(rmax.download(ro).ok() && cmin.download(co).ok() && flat.download(fo).ok() &&
                kept.download(ko).ok());
    for (int64_t i = 0; i < m; ++i) {
      auto row = [&](int64_t j) { return x[i * n + j]; };
      EXPECT_EQ(ro[i], first(n, row, true)) << device << " row " << i;
      EXPECT_EQ(ko[i], first(n, row, false)) << device << " row " << i;
    }
    EXPECT_EQ(ro[1], 700) << device;
    EXPECT_EQ(ro[0], 5) << device;
    for (int64_t j = 0; j < n; ++j)
      EXPECT_EQ(co[j], first(m, [&](int64_t i) { return x[i * n + j]; }, false))
          << device << " column " << j;
    EXPECT_EQ(fo[0], first(m * n, [&](int64_t e) { return x[e]; }, true)) << device;
    EXPECT_EQ(fo[0], 1 * n + 700) << device;

    Tensor ti = s.upload(xi, {int64_t(xi.size())}), out = s.empty<int32_t>({2});
    ASSERT_TRUE(ki(ti, out).ok()) << device;
    std::vector<int32_t> io;
    ASSERT_TRUE(out.download(io).ok());
    // Lanes past the 50 loaded read 0, which neither wins nor ties first.
    auto lane = [&](int64_t i) { return float(i < 50 ? xi[i] : 0); };
    EXPECT_EQ(io[0], first(64, lane, true)) << device;
    EXPECT_EQ(io[1], first(64, lane, false)) << device;
  });
}

TEST_F(DeviceAgreement, GatherOnEveryDevice) {
  // Along the last axis with a wider index tile than the source, along the first
  // axis, and on a rank-1 i32 tile; indices past either end give 0.
  const char *source = R"(
kernel pick(x: tensor<f32>[M, N], idx: tensor<i32>[M, P], out: tensor<f32>[M, P],
            rows: tensor<f32>[R, N], v: tensor<i32>[N], vout: tensor<i32>[N])
    params(BM: i32 = 4, BN: i32 = 64, BP: i32 = 100, BR: i32 = 3) grid(1) {
  let r = expand_dims(arange(0, BM), 1);
  let c = expand_dims(arange(0, BN), 0);
  let p = expand_dims(arange(0, BP), 0);
  let t = load(x[r, c]);
  store(out[r, p], gather(t, load(idx[r, p]), 1));
  let which = broadcast_to(expand_dims((arange(0, BR) * 3 + 1) % 5 - 1, 1), [BR, BN]);
  store(rows[expand_dims(arange(0, BR), 1), c], gather(t, which, axis = 0));
  let lanes = arange(0, BN);
  store(vout[lanes], gather(load(v[lanes]), BN - 1 - lanes));
}
)";
  const int64_t m = 4, n = 64, p = 100, r = 3;
  std::vector<float> x(m * n);
  for (int64_t i = 0; i < m * n; ++i)
    x[i] = float(i) * 0.5f - 7.0f;
  std::vector<int32_t> idx(m * p), v(n);
  for (int64_t i = 0; i < m * p; ++i)
    idx[i] = int32_t((i * 37) % 80) - 8; // -8 .. 71: some below 0, some past 63
  for (int64_t i = 0; i < n; ++i)
    v[i] = int32_t(i * i) - 100;
  forEachDevice([&](Session &s, const std::string &device) {
    Kernel k = s.compile(source, "pick");
    ASSERT_TRUE(k.ok()) << k.status().message();
    Tensor tx = s.upload(x, {m, n}), ti = s.upload(idx, {m, p}), out = s.empty<float>({m, p}),
           rows = s.empty<float>({r, n}), tv = s.upload(v, {n}), vout = s.empty<int32_t>({n});
    ASSERT_TRUE(k(tx, ti, out, rows, tv, vout).ok()) << device;
    std::vector<float> got, gotRows;
    std::vector<int32_t> gotV;
    ASSERT_TRUE(out.download(got).ok() && rows.download(gotRows).ok() &&
                vout.download(gotV).ok());
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < p; ++j) {
        int32_t at = idx[i * p + j];
        float want = at >= 0 && at < n ? x[i * n + at] : 0.0f;
        ASSERT_EQ(got[i * p + j], want) << device << " [" << i << ", " << j << "] index " << at;
      }
    for (int64_t i = 0; i < r; ++i)
      for (int64_t j = 0; j < n; ++j) {
        int64_t at = (i * 3 + 1) % 5 - 1; // 0, 3, 1
        ASSERT_EQ(gotRows[i * n + j], at < m ? x[at * n + j] : 0.0f) << device;
      }
    for (int64_t i = 0; i < n; ++i)
      ASSERT_EQ(gotV[i], v[n - 1 - i]) << device;
  });
}

TEST_F(DeviceAgreement, SortOnEveryDevice) {
  // Rows sorted both ways (NaN last ascending, first descending, as torch.sort),
  // columns of the same tile (axis 0), and i32 extremes; ragged rows padded with
  // other = inf stay at the end. argsort is the stable order: equal keys keep
  // their positions' order, both ways.
  const char *source = R"(
kernel sort_rows(x: tensor<f32>[M, N], up: tensor<f32>[M, N], down: tensor<f32>[M, N],
                 cols: tensor<f32>[M, N], v: tensor<i32>[L], vs: tensor<i32>[L])
    params(BM: i32 = 4, BN: i32 = 32, BL: i32 = 64) grid(1) {
  let r = expand_dims(arange(0, BM), 1);
  let c = expand_dims(arange(0, BN), 0);
  let t = load(x[r, c], other = inf);
  store(up[r, c], sort(t));
  store(down[r, c], sort(t, descending = true));
  store(cols[r, c], sort(t, axis = 0));
  let lanes = arange(0, BL);
  store(vs[lanes], sort(load(v[lanes])));
}
kernel orders(x: tensor<f32>[M, N], order: tensor<i32>[M, N], rorder: tensor<i32>[M, N])
    params(BM: i32 = 2, BN: i32 = 16) grid(1) {
  let r = expand_dims(arange(0, BM), 1);
  let c = expand_dims(arange(0, BN), 0);
  let t = load(x[r, c], other = inf);
  store(order[r, c], argsort(t));
  store(rorder[r, c], argsort(t, descending = true));
}
)";
  const int64_t m = 4, n = 30, len = 64;
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> small(-20, 20);
  std::vector<float> x(m * n);
  for (float &f : x)
    f = float(small(rng)) * 0.25f; // many ties
  x[3] = NAN, x[40] = NAN, x[41] = -INFINITY, x[70] = INFINITY, x[71] = -0.0f;
  std::vector<int32_t> v(len);
  for (int64_t i = 0; i < len; ++i)
    v[i] = int32_t(uint32_t(i) * 2654435761u);
  v[5] = INT_MIN, v[6] = INT_MAX;
  auto nanLast = [](float a, float b) { return a < b || (std::isnan(b) && !std::isnan(a)); };
  auto same = [](float a, float b) { return a == b || (std::isnan(a) && std::isnan(b)); };
  // The tile is 4 x 32: lanes past column 30 hold inf.
  std::vector<std::vector<float>> rows(m), columns(n);
  for (int64_t i = 0; i < m; ++i) {
    rows[i].assign(x.begin() + i * n, x.begin() + (i + 1) * n);
    rows[i].resize(32, INFINITY);
    std::sort(rows[i].begin(), rows[i].end(), nanLast);
  }
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t i = 0; i < m; ++i)
      columns[j].push_back(x[i * n + j]);
    std::sort(columns[j].begin(), columns[j].end(), nanLast);
  }
  std::vector<int32_t> sortedV = v;
  std::sort(sortedV.begin(), sortedV.end());
  // argsort over the first 2 rows' first 16 columns (a 2 x 14 tensor, so the
  // last two positions are inf padding): the stable orders.
  const int64_t om = 2, on = 14;
  std::vector<float> ox(om * on);
  for (int64_t i = 0; i < om; ++i)
    for (int64_t j = 0; j < on; ++j)
      ox[i * on + j] = x[i * n + j];
  std::vector<std::vector<int32_t>> order(om), rorder(om);
  for (int64_t i = 0; i < om; ++i) {
    auto key = [&](int32_t j) { return j < on ? ox[i * on + j] : INFINITY; };
    order[i].resize(16);
    std::iota(order[i].begin(), order[i].end(), 0);
    rorder[i] = order[i];
    std::stable_sort(order[i].begin(), order[i].end(),
                     [&](int32_t a, int32_t b) { return nanLast(key(a), key(b)); });
    std::stable_sort(rorder[i].begin(), rorder[i].end(),
                     [&](int32_t a, int32_t b) { return nanLast(key(b), key(a)); });
  }
  forEachDevice([&](Session &s, const std::string &device) {
    Kernel k = s.compile(source, "sort_rows");
    ASSERT_TRUE(k.ok()) << k.status().message();
    Tensor tx = s.upload(x, {m, n}), up = s.empty<float>({m, n}), down = s.empty<float>({m, n}),
           cols = s.empty<float>({m, n}), tv = s.upload(v, {len}), vs = s.empty<int32_t>({len});
    ASSERT_TRUE(k(tx, up, down, cols, tv, vs).ok()) << device;
    std::vector<float> gotUp, gotDown, gotCols;
    std::vector<int32_t> gotV;
    ASSERT_TRUE(up.download(gotUp).ok() && down.download(gotDown).ok() &&
                cols.download(gotCols).ok() && vs.download(gotV).ok());
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        ASSERT_TRUE(same(gotUp[i * n + j], rows[i][j]))
            << device << " ascending [" << i << ", " << j << "]: " << gotUp[i * n + j];
        // Descending: the 32-wide row reversed, whose first 2 are the inf padding.
        ASSERT_TRUE(same(gotDown[i * n + j], rows[i][31 - j]))
            << device << " descending [" << i << ", " << j << "]: " << gotDown[i * n + j];
        ASSERT_TRUE(same(gotCols[i * n + j], columns[j][i]))
            << device << " column [" << i << ", " << j << "]: " << gotCols[i * n + j];
      }
    EXPECT_EQ(gotV, sortedV) << device;
    Kernel ko = s.compile(source, "orders");
    ASSERT_TRUE(ko.ok()) << ko.status().message();
    Tensor tox = s.upload(ox, {om, on}), to = s.empty<int32_t>({om, on}),
           tro = s.empty<int32_t>({om, on});
    ASSERT_TRUE(ko(tox, to, tro).ok()) << device;
    std::vector<int32_t> gotOrder, gotROrder;
    ASSERT_TRUE(to.download(gotOrder).ok() && tro.download(gotROrder).ok());
    for (int64_t i = 0; i < om; ++i)
      for (int64_t j = 0; j < on; ++j) {
        ASSERT_EQ(gotOrder[i * on + j], order[i][j]) << device << " argsort row " << i;
        ASSERT_EQ(gotROrder[i * on + j], rorder[i][j]) << device << " descending row " << i;
      }
  });
}

TEST_F(DeviceAgreement, MaxMinReturnIndicesOnEveryDevice) {
  // max/min(x, axis, return_indices = true) give Triton's (values, indices):
  // the extreme of each row and the first position holding it (ties included).
  const char *source = R"(
kernel k(x: tensor<i32>[4, 16], out: tensor<i32>[4, 4]) grid(1) {
  let r = arange(0, 4);
  let v = load(x[r[:, None], arange(0, 16)[None, :]]);
  let (hi, at_hi) = max(v, axis = 1, return_indices = true);
  let (lo, at_lo) = min(v, axis = 1, return_indices = true);
  store(out[r, 0], hi);
  store(out[r, 1], at_hi);
  store(out[r, 2], lo);
  store(out[r, 3], at_lo);
}
)";
  std::vector<int32_t> x(64);
  std::mt19937 rng(4);
  for (int32_t &v : x)
    v = static_cast<int32_t>(rng() % 7); // many ties
  std::vector<int32_t> want(16);
  for (int i = 0; i < 4; ++i) {
    auto row = x.begin() + i * 16;
    auto hi = std::max_element(row, row + 16), lo = std::min_element(row, row + 16);
    want[i * 4 + 0] = *hi, want[i * 4 + 1] = static_cast<int32_t>(hi - row);
    want[i * 4 + 2] = *lo, want[i * 4 + 3] = static_cast<int32_t>(lo - row);
  }
  forEachDevice([&](Session &s, const std::string &device) {
    Kernel k = s.compile(source, "k");
    ASSERT_TRUE(k.ok()) << k.status().message();
    Tensor tx = s.upload(x, {4, 16}), out = s.empty<int32_t>({4, 4});
    ASSERT_TRUE(k(tx, out).ok()) << device;
    std::vector<int32_t> got;
    ASSERT_TRUE(out.download(got).ok());
    EXPECT_EQ(got, want) << device;
  });
}

TEST_F(DeviceAgreement, NewAxisIndexingOnEveryDevice) {
  // Triton's pointer-grid idiom, x[rm[:, None], rn[None, :]], reads a 12 x 20
  // block (edges masked by the bounds) and writes it transposed.
  const char *source = R"(
kernel t(x: tensor<f32>[M, N], y: tensor<f32>[N, M]) grid(1) {
  let rm = arange(0, 16);
  let rn = arange(0, 32);
  let v = load(x[rm[:, None], rn[None, :]]);
  store(y[rn[None, :], rm[:, None]], v);
}
)";
  const int64_t m = 12, n = 20;
  std::vector<float> x(m * n);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = static_cast<float>(i);
  forEachDevice([&](Session &s, const std::string &device) {
    Kernel k = s.compile(source, "t");
    ASSERT_TRUE(k.ok()) << k.status().message();
    Tensor tx = s.upload(x, {m, n}), ty = s.empty<float>({n, m});
    ASSERT_TRUE(k(tx, ty).ok()) << device;
    std::vector<float> got;
    ASSERT_TRUE(ty.download(got).ok());
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j)
        EXPECT_EQ(got[j * m + i], x[i * n + j]) << device << " at (" << i << ", " << j << ")";
  });
}

TEST_F(DeviceAgreement, TileSlicesOnEveryDevice) {
  // numpy's basic indexing of tiles: rotate-half rotary embedding from the
  // halves t[:, :8] and t[:, 8:], the even and odd columns, a row t[3, ...] plus
  // the last row reversed, the last column t[..., -1], single elements, and
  // slices with steps around a new axis.
  const char *source = R"(
kernel slices(x: tensor<f32>[R, C], cs: tensor<f32>[R, C], y: tensor<f32>[R, C],
              eo: tensor<f32>[R, C], row: tensor<f32>[C], last: tensor<f32>[R],
              one: tensor<f32>[1], mix: tensor<f32>[2, 4]) grid(1) {
  let r = arange(0, 8)[:, None];
  let c = arange(0, 16)[None, :];
  let t = load(x[r, c]);
  let angles = load(cs[r, c]);
  let (cos, sin) = (angles[:, :8], angles[:, 8:]);
  let (x1, x2) = (t[:, :8], t[:, -8:]);
  store(y[r, c], cat(x1 * cos - x2 * sin, x2 * cos + x1 * sin, axis = 1));
  store(eo[r, c], cat(t[:, ::2], t[:, 1::2], axis = 1));
  store(row[arange(0, 16)], t[3, ...] + t[-1, ::-1]);
  store(last[arange(0, 8)], t[..., -1]);
  store(one[0], t[2, 5] + t[-8][0]);
  store(mix[arange(0, 2)[:, None], arange(0, 4)[None, :]], t[1:5:2, None, 3::4][:, 0, :]);
}
)";
  const int64_t R = 8, C = 16;
  std::vector<float> x(R * C), cs(R * C);
  for (int64_t k = 0; k < R * C; ++k) {
    x[k] = float(k) * 0.5f - 20.0f;
    cs[k] = float(k % 7) * 0.125f;
  }
  auto at = [&](const std::vector<float> &v, int64_t r, int64_t c) { return v[r * C + c]; };
  forEachDevice([&](Session &s, const std::string &device) {
    Kernel k = s.compile(source, "slices");
    ASSERT_TRUE(k.ok()) << device << ": " << k.status().message();
    Tensor tx = s.upload(x, {R, C}), tcs = s.upload(cs, {R, C}), ty = s.empty<float>({R, C}),
           teo = s.empty<float>({R, C}), trow = s.empty<float>({C}),
           tlast = s.empty<float>({R}), tone = s.empty<float>({1}),
           tmix = s.empty<float>({2, 4});
    ASSERT_TRUE(k(tx, tcs, ty, teo, trow, tlast, tone, tmix).ok()) << device;
    std::vector<float> y, eo, row, last, one, mix;
    ASSERT_TRUE(ty.download(y).ok() && teo.download(eo).ok() && trow.download(row).ok() &&
                tlast.download(last).ok() && tone.download(one).ok() &&
                tmix.download(mix).ok());
    for (int64_t r = 0; r < R; ++r) {
      for (int64_t c = 0; c < 8; ++c) {
        float x1 = at(x, r, c), x2 = at(x, r, c + 8), cos = at(cs, r, c),
              sin = at(cs, r, c + 8);
        // FMA contraction may differ from these roundings: compare loosely.
        EXPECT_NEAR(at(y, r, c), x1 * cos - x2 * sin, 1e-4f) << device << " " << r << "," << c;
        EXPECT_NEAR(at(y, r, c + 8), x2 * cos + x1 * sin, 1e-4f) << device;
        EXPECT_EQ(at(eo, r, c), at(x, r, 2 * c)) << device << " even " << r << "," << c;
        EXPECT_EQ(at(eo, r, c + 8), at(x, r, 2 * c + 1)) << device << " odd " << r << "," << c;
      }
      EXPECT_EQ(last[r], at(x, r, C - 1)) << device << " row " << r;
    }
    for (int64_t c = 0; c < C; ++c)
      EXPECT_EQ(row[c], at(x, 3, c) + at(x, R - 1, C - 1 - c)) << device << " column " << c;
    EXPECT_EQ(one[0], at(x, 2, 5) + at(x, 0, 0)) << device;
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = 0; j < 4; ++j)
        EXPECT_EQ(mix[i * 4 + j], at(x, 1 + 2 * i, 3 + 4 * j)) << device << " " << i << "," << j;
  });
}

TEST_F(DeviceAgreement, BlockViewsTakeMasksTileOthersAndAtomicsOnEveryDevice) {
  // Block views with what gather views take: a mask on a load (the lower
  // triangle; elsewhere each column's fill value, a tile `other`), a mask on a
  // store, a tile `other` alone (lanes past the ragged edge), and a masked
  // atomic through a block, returning the old values (0 where masked).
  const char *source = R"(
kernel blocks(x: tensor<f32>[M, N], fill: tensor<f32>[N], y: tensor<f32>[M, N],
              pad: tensor<f32>[P, Q], h: tensor<i32>[M, N], old: tensor<i32>[M, N])
    params(B: i32 = 16) grid(cdiv(M, B), cdiv(N, B)) {
  let i = program_id(0) * B;
  let j = program_id(1) * B;
  let r = (i + arange(0, B))[:, None];
  let c = (j + arange(0, B))[None, :];
  let lower = c <= r;
  let v = load(x.tile([B, B], [i, j]), mask = lower, other = load(fill.tile([B], [j]))[None, :]);
  store(y.tile([B, B], [i, j]), v * 2.0, mask = r + c < 40);
  store(pad.tile([B, B], [i, j]), load(x.tile([B, B], [i, j]), other = cast<f32>(r * 100 + c)));
  store(old.tile([B, B], [i, j]), atomic_add(h.tile([B, B], [i, j]), 1, mask = lower));
}
)";
  const int64_t m = 37, n = 29, p = 48, q = 32; // p, q: the grid's blocks cover this
  std::vector<float> x(m * n), fill(n);
  for (size_t k = 0; k < x.size(); ++k)
    x[k] = float(k % 97) * 0.25f;
  for (int64_t c = 0; c < n; ++c)
    fill[c] = -float(c) - 1.0f;
  forEachDevice([&](Session &s, const std::string &device) {
    Kernel k = s.compile(source, "blocks");
    ASSERT_TRUE(k.ok()) << device << ": " << k.status().message();
    Tensor tx = s.upload(x, {m, n}), tf = s.upload(fill, {n}),
           ty = s.upload(std::vector<float>(m * n, -7.0f), {m, n}), tp = s.empty<float>({p, q}),
           th = s.upload(std::vector<int32_t>(m * n, 5), {m, n}), to = s.empty<int32_t>({m, n});
    ASSERT_TRUE(k(tx, tf, ty, tp, th, to).ok()) << device;
    std::vector<float> y, pad;
    std::vector<int32_t> h, old;
    ASSERT_TRUE(ty.download(y).ok() && tp.download(pad).ok() && th.download(h).ok() &&
                to.download(old).ok());
    for (int64_t r = 0; r < p; ++r)
      for (int64_t c = 0; c < q; ++c) {
        std::string at = device + " at (" + std::to_string(r) + ", " + std::to_string(c) + ")";
        bool inside = r < m && c < n;
        ASSERT_EQ(pad[r * q + c], inside ? x[r * n + c] : float(r * 100 + c)) << at;
        if (!inside)
          continue;
        float v = c <= r ? x[r * n + c] : fill[c];
        ASSERT_EQ(y[r * n + c], r + c < 40 ? v * 2.0f : -7.0f) << at;
        ASSERT_EQ(h[r * n + c], c <= r ? 6 : 5) << at;
        ASSERT_EQ(old[r * n + c], c <= r ? 5 : 0) << at;
      }
  });
}

TEST_F(DeviceAgreement, BlocksAcrossTheEdgeTakeScalarOthersOnEveryDevice) {
  // A block view's lanes outside the tensor take a scalar `other` (on the CPU the
  // path across the edge had read them as 0), in 2-D blocks shifted past the top
  // and right edges; and an arange with a negative start (the verifier had read
  // -3 as 4294967293) reads a block that begins before the tensor.
  const char *source = R"(
kernel edges(x: tensor<f32>[M, N], y: tensor<f32>[P, Q]) params(B: i32 = 16)
    grid(cdiv(M, B), cdiv(N, B)) {
  let i = program_id(0) * B;
  let j = program_id(1) * B;
  store(y.tile([B, B], [i, j]), load(x.tile([B, B], [i - 3, j + 5]), other = -1.0));
}
kernel shift(x: tensor<f32>[N], z: tensor<f32>[L]) params(B: i32 = 32) grid(1) {
  store(z[arange(0, B)], load(x[arange(-3, B - 3)], other = -2.0));
}
)";
  const int64_t m = 37, n = 29, p = 48, q = 32, l = 32;
  std::vector<float> x(m * n);
  for (size_t k = 0; k < x.size(); ++k)
    x[k] = float(k) * 0.5f;
  forEachDevice([&](Session &s, const std::string &device) {
    Kernel edges = s.compile(source, "edges"), shift = s.compile(source, "shift");
    ASSERT_TRUE(edges.ok()) << device << ": " << edges.status().message();
    ASSERT_TRUE(shift.ok()) << device << ": " << shift.status().message();
    Tensor tx = s.upload(x, {m, n}), ty = s.empty<float>({p, q}),
           row = s.upload(std::vector<float>(x.begin(), x.begin() + n), {n}),
           tz = s.empty<float>({l});
    ASSERT_TRUE(edges(tx, ty).ok() && shift(row, tz).ok()) << device;
    std::vector<float> y, z;
    ASSERT_TRUE(ty.download(y).ok() && tz.download(z).ok());
    for (int64_t r = 0; r < p; ++r)
      for (int64_t c = 0; c < q; ++c) {
        int64_t sr = r - 3, sc = c + 5;
        bool inside = sr >= 0 && sr < m && sc < n;
        ASSERT_EQ(y[r * q + c], inside ? x[sr * n + sc] : -1.0f)
            << device << " at (" << r << ", " << c << ")";
      }
    for (int64_t k = 0; k < l; ++k)
      ASSERT_EQ(z[k], k - 3 >= 0 && k - 3 < n ? x[k - 3] : -2.0f) << device << " at " << k;
  });
}

TEST_F(DeviceAgreement, RowsPickedByComputedIndicesOnEveryDevice) {
  // x[p, arange(0, D)] with the row p from a scalar load, a reduction, a tile
  // pick and an atomic, loaded and stored, and an expert's weights picked by a
  // loaded id (MoE): the CPU's block access kept the op that computed p after
  // that op was lowered (a crash, or a verifier error for bf16).
  const char *source = R"(
kernel rows(pos: tensor<i32>[B], x: tensor<f32>[S, D], y: tensor<f32>[5, D],
            counter: tensor<i32>[1], w: tensor<bf16>[E, K, D], wy: tensor<bf16>[K, D])
    grid(1) {
  let cols = arange(0, 64);
  let ids = load(pos[arange(0, 4)]);
  let p = load(pos[0]);
  store(y[0, cols], load(x[p, cols]));
  store(y[1, cols], load(x[sum(ids) % 8, cols]));
  store(y[2, cols], load(x[ids[1], cols]));
  store(y[3, cols], load(x[atomic_add(counter[0], 1), cols]));
  store(y[p, cols], load(x[4, cols]), mask = p == 4);
  let k = arange(0, 4);
  store(wy[k[:, None], cols[None, :]], load(w[ids[3], k[:, None], cols[None, :]]));
}
)";
  const int64_t s8 = 8, d = 64, e = 3, k = 4;
  std::vector<int32_t> pos = {4, 6, 1, 2}; // sum 13 % 8 = 5; ids[1] = 6; ids[3] = 2
  std::vector<float> x(s8 * d);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = float(i) * 0.5f;
  std::vector<uint16_t> w(e * k * d);
  for (size_t i = 0; i < w.size(); ++i)
    w[i] = floatToBF16Bits(float(i % 251));
  forEachDevice([&](Session &s, const std::string &device) {
    Kernel kernel = s.compile(source, "rows");
    ASSERT_TRUE(kernel.ok()) << device << ": " << kernel.status().message();
    Tensor tpos = s.upload(pos, {4}), tx = s.upload(x, {s8, d}),
           ty = s.upload(std::vector<float>(5 * d, -1.0f), {5, d}),
           tc = s.upload(std::vector<int32_t>{7}, {1}),
           tw = s.upload(w.data(), w.size(), DType::BF16, {e, k, d}),
           twy = s.empty(DType::BF16, {k, d});
    ASSERT_TRUE(kernel(tpos, tx, ty, tc, tw, twy).ok()) << device;
    std::vector<float> y;
    std::vector<uint16_t> wy;
    ASSERT_TRUE(ty.download(y).ok() && twy.download(wy).ok());
    const int64_t row[5] = {4, 5, 6, 7, 4};
    for (int64_t r = 0; r < 5; ++r)
      for (int64_t c = 0; c < d; ++c)
        ASSERT_EQ(y[r * d + c], x[row[r] * d + c]) << device << " row " << r << " col " << c;
    for (int64_t i = 0; i < k * d; ++i)
      ASSERT_EQ(wy[i], w[2 * k * d + i]) << device << " weight " << i;
  });
}

TEST_F(DeviceAgreement, ReverseScansOnEveryDevice) {
  // cumsum/cumprod/cummax/cummin with reverse = true run from the end of the
  // axis: out[i] combines x[i], x[i + 1], ..., along rows and down columns of a
  // 4 x 16 tile of small integers (exact in every order).
  const char *source = R"(
kernel k(x: tensor<i32>[4, 16], rows: tensor<i32>[4, 4, 16], cols: tensor<i32>[4, 4, 16])
    grid(1) {
  let r = expand_dims(arange(0, 4), 1);
  let c = expand_dims(arange(0, 16), 0);
  let v = load(x[r, c]);
  store(rows[0, r, c], cumsum(v, axis = 1, reverse = true));
  store(rows[1, r, c], cumprod(v, axis = 1, reverse = true));
  store(rows[2, r, c], cummax(v, axis = 1, reverse = true));
  store(rows[3, r, c], cummin(v, axis = 1, reverse = true));
  store(cols[0, r, c], cumsum(v, axis = 0, reverse = true));
  store(cols[1, r, c], cumprod(v, axis = 0, reverse = true));
  store(cols[2, r, c], cummax(v, axis = 0, reverse = true));
  store(cols[3, r, c], cummin(v, axis = 0, reverse = true));
}
)";
  std::vector<int32_t> x(64);
  std::mt19937 rng(9);
  for (int32_t &v : x)
    v = static_cast<int32_t>(rng() % 5) - 2; // products of up to 16 stay in i32
  auto combine = [](int k, int64_t a, int64_t b) {
    return k == 0 ? a + b : k == 1 ? a * b : k == 2 ? std::max(a, b) : std::min(a, b);
  };
  std::vector<int32_t> wantRows(4 * 64), wantCols(4 * 64);
  for (int k = 0; k < 4; ++k)
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 16; ++j) {
        int64_t acc = x[i * 16 + j];
        for (int t = j + 1; t < 16; ++t)
          acc = combine(k, acc, x[i * 16 + t]);
        wantRows[k * 64 + i * 16 + j] = static_cast<int32_t>(acc);
        acc = x[i * 16 + j];
        for (int t = i + 1; t < 4; ++t)
          acc = combine(k, acc, x[t * 16 + j]);
        wantCols[k * 64 + i * 16 + j] = static_cast<int32_t>(acc);
      }
  forEachDevice([&](Session &s, const std::string &device) {
    Kernel k = s.compile(source, "k");
    ASSERT_TRUE(k.ok()) << k.status().message();
    Tensor tx = s.upload(x, {4, 16}), rows = s.empty<int32_t>({4, 4, 16}),
           cols = s.empty<int32_t>({4, 4, 16});
    ASSERT_TRUE(k(tx, rows, cols).ok()) << device;
    std::vector<int32_t> gotRows, gotCols;
    ASSERT_TRUE(rows.download(gotRows).ok() && cols.download(gotCols).ok());
    EXPECT_EQ(gotRows, wantRows) << device << ": along rows";
    EXPECT_EQ(gotCols, wantCols) << device << ": down columns";
  });
}

TEST_F(DeviceAgreement, SumsOfNegativeZerosStayNegativeOnEveryDevice) {
  // -0.0 + -0.0 is -0.0: sums and prefix sums of negative zeros start from
  // -0.0, the additive identity (they started from 0.0 and came out positive),
  // and a whole-tile sum on Vulkan, whose subgroup add starts from 0.0 in
  // lavapipe, keeps the sign when every lane's partial is -0.0.
  const char *source = R"(
kernel k(x: tensor<f32>[4, 8], s: tensor<f32>[2, 8], c: tensor<f32>[4, 4, 8],
         all: tensor<f32>[1]) grid(1) {
  let r = expand_dims(arange(0, 4), 1);
  let col = expand_dims(arange(0, 8), 0);
  let v = load(x[r, col]);
  store(s[0, arange(0, 8)], sum(v, axis = 0));
  store(s[1, arange(0, 4)], sum(v, axis = 1));
  store(c[0, r, col], cumsum(v, axis = 1));
  store(c[1, r, col], cumsum(v, axis = 0));
  store(c[2, r, col], cumsum(v, axis = 1, reverse = true));
  store(c[3, r, col], cumsum(v, axis = 0, reverse = true));
  store(all[0], sum(v));
}
)";
  std::vector<float> x(32, -0.0f);
  forEachDevice([&](Session &s, const std::string &device) {
    Kernel k = s.compile(source, "k");
    ASSERT_TRUE(k.ok()) << k.status().message();
    // NaN where nothing should remain: every checked value is one the kernel wrote.
    Tensor tx = s.upload(x, {4, 8}), sums = s.upload(std::vector<float>(16, NAN), {2, 8}),
           scans = s.upload(std::vector<float>(128, NAN), {4, 4, 8}),
           all = s.upload(std::vector<float>(1, NAN), {1});
    ASSERT_TRUE(k(tx, sums, scans, all).ok()) << device;
    std::vector<float> gotSums, gotScans, gotAll;
    ASSERT_TRUE(sums.download(gotSums).ok() && scans.download(gotScans).ok() &&
                all.download(gotAll).ok());
    for (size_t i = 0; i < 12; ++i) // row 0: 8 column sums; row 1: 4 row sums
      EXPECT_TRUE(gotSums[i] == 0 && std::signbit(gotSums[i])) << device << ": sum " << i;
    for (size_t i = 0; i < gotScans.size(); ++i)
      EXPECT_TRUE(gotScans[i] == 0 && std::signbit(gotScans[i])) << device << ": cumsum " << i;
    EXPECT_TRUE(gotAll[0] == 0 && std::signbit(gotAll[0])) << device << ": whole-tile sum";
  });
}

TEST_F(DeviceAgreement, CustomReductionsAndScansOnEveryDevice) {
  // reduce and associative_scan with combine functions: an argmax over (value,
  // index) pairs along a ragged axis of 24, "last non-zero" down the columns (it
  // does not commute, so the order must hold), a first-order linear recurrence
  // h = a h + b scanned forwards and backwards (JAX's reverse), an "any" over
  // bools to a scalar, and a max over every element of a 2-D tile.
  const char *source = R"(
fn argmax_pair(v1, i1, v2, i2) {
  let second = v2 > v1 || (v2 == v1 && i2 < i1);
  return (where(second, v2, v1), where(second, i2, i1));
}
fn last_nonzero(a, b) { return where(b != 0, b, a); }
fn recurrence(a1, b1, a2, b2) { return (a1 * a2, b1 * a2 + b2); }
fn any(p, q) { return p || q; }
fn imax(a, b) { return max(a, b); }
kernel reductions(x: tensor<f32>[M, N], best: tensor<f32>[M], at: tensor<i32>[M],
                  z: tensor<i32>[M, N], last: tensor<i32>[1, N], flags: tensor<i32>[2])
    params(BM: i32 = 5, BN: i32 = 24) grid(1) {
  let rows = arange(0, BM);
  let r = expand_dims(rows, 1);
  let c = expand_dims(arange(0, BN), 0);
  let (m, i) = reduce((load(x[r, c]), broadcast_to(c, [BM, BN])), 1, argmax_pair);
  store(best[rows], m);
  store(at[rows], i);
  let zt = load(z[r, c]);
  store(last[expand_dims(arange(0, 1), 1), c],
        reduce(zt, axis = 0, combine = last_nonzero, keepdims = true));
  let pick = arange(0, 2);
  let found = cast<i32>(reduce(zt == 7, axis = 1, combine = any));
  store(flags[pick], where(pick == 0, reduce(found, combine = imax), reduce(zt, combine = imax)));
}
kernel scans(a: tensor<f32>[M, N], b: tensor<f32>[M, N], h: tensor<f32>[M, N],
             hr: tensor<f32>[M, N]) params(BM: i32 = 5, BN: i32 = 24) grid(1) {
  let r = expand_dims(arange(0, BM), 1);
  let c = expand_dims(arange(0, BN), 0);
  let (ta, tb) = (load(a[r, c]), load(b[r, c]));
  let (pa, fwd) = associative_scan((ta, tb), 1, recurrence);
  let (ra, back) = associative_scan((ta, tb), axis = 1, combine = recurrence, reverse = true);
  store(h[r, c], fwd);
  store(hr[r, c], back);
}
)";
  const int64_t m = 5, n = 24;
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> small(-6, 6);
  std::uniform_real_distribution<float> decay(0.5f, 1.0f);
  std::vector<float> x(m * n), a(m * n), b(m * n);
  std::vector<int32_t> z(m * n);
  for (int64_t i = 0; i < m * n; ++i) {
    x[i] = float(small(rng)); // ties: the first index must win
    z[i] = small(rng) % 3 == 0 ? 0 : small(rng);
    a[i] = decay(rng), b[i] = float(small(rng)) * 0.25f;
  }
  x[2 * n + 17] = 100.0f, z[3 * n + 5] = 7;
  for (int64_t i = 0; i < m; ++i) // a zero at the bottom of column i
    z[(m - 1) * n + i] = 0;
  forEachDevice([&](Session &s, const std::string &device) {
    Kernel reductions = s.compile(source, "reductions"), scans = s.compile(source, "scans");
    ASSERT_TRUE(reductions.ok()) << reductions.status().message();
    ASSERT_TRUE(scans.ok()) << scans.status().message();
    Tensor tx = s.upload(x, {m, n}), best = s.empty<float>({m}), at = s.empty<int32_t>({m}),
           tz = s.upload(z, {m, n}), last = s.empty<int32_t>({1, n}), ta = s.upload(a, {m, n}),
           tb = s.upload(b, {m, n}), h = s.empty<float>({m, n}), hr = s.empty<float>({m, n}),
           flags = s.empty<int32_t>({2});
    ASSERT_TRUE(reductions(tx, best, at, tz, last, flags).ok()) << device;
    ASSERT_TRUE(scans(ta, tb, h, hr).ok()) << device;
    std::vector<float> gotBest, gotH, gotHr;
    std::vector<int32_t> gotAt, gotLast, gotFlags;
    ASSERT_TRUE(best.download(gotBest).ok() && at.download(gotAt).ok() &&
                last.download(gotLast).ok() && h.download(gotH).ok() &&
                hr.download(gotHr).ok() && flags.download(gotFlags).ok());
    for (int64_t i = 0; i < m; ++i) {
      auto row = x.begin() + i * n;
      auto top = std::max_element(row, row + n); // the first largest
      EXPECT_EQ(gotBest[i], *top) << device << " row " << i;
      EXPECT_EQ(gotAt[i], top - row) << device << " row " << i;
    }
    for (int64_t j = 0; j < n; ++j) {
      int32_t want = 0;
      for (int64_t i = 0; i < m; ++i)
        want = z[i * n + j] != 0 ? z[i * n + j] : want;
      EXPECT_EQ(gotLast[j], want) << device << " column " << j;
    }
    std::vector<double> wantH(m * n), wantHr(m * n);
    for (int64_t i = 0; i < m; ++i) {
      double fwd = 0, back = 0;
      for (int64_t j = 0; j < n; ++j)
        wantH[i * n + j] = fwd = a[i * n + j] * fwd + b[i * n + j];
      for (int64_t j = n - 1; j >= 0; --j)
        wantHr[i * n + j] = back = a[i * n + j] * back + b[i * n + j];
    }
    EXPECT_TRUE(test::allClose(gotH, wantH, 1e-5, 1e-5)) << device;
    EXPECT_TRUE(test::allClose(gotHr, wantHr, 1e-5, 1e-5)) << device;
    EXPECT_EQ(gotFlags[0], 1) << device;
    EXPECT_EQ(gotFlags[1], *std::max_element(z.begin(), z.end())) << device;
  });
}

TEST_F(DeviceAgreement, TuplesOnEveryDevice) {
  // A helper returning a tuple carries an online-softmax state (running max and
  // rescaled sum) through a loop by tuple assignment; (a, b) = (b, a) swaps,
  // because the whole right side is computed before any variable changes.
  const char *source = R"(
fn step(m, l, x) {
  let m2 = max(m, x);
  return (m2, l * exp(m - m2) + exp(x - m2));
}
kernel k(x: tensor<f32>[N], out: tensor<f32>[2]) grid(1) {
  var (m, l) = (-inf, 0.0);
  var a = 1;
  var b = 2;
  for i in range(0, N) {
    (m, l) = step(m, l, load(x[i]));
    (a, b) = (b, a);
  }
  let o = arange(0, 2);
  store(out[o], where(o == 0, m, l + cast<f32>(a * 10)));
}
)";
  std::vector<float> x = {0.5f, -3.0f, 2.25f, 1.0f, 2.0f};
  double m = *std::max_element(x.begin(), x.end()), l = 0;
  for (float v : x)
    l += std::exp(double(v) - m);
  forEachDevice([&](Session &s, const std::string &device) {
    Kernel k = s.compile(source, "k");
    ASSERT_TRUE(k.ok()) << k.status().message();
    Tensor tx = s.upload(x, {5}), out = s.empty<float>({2});
    ASSERT_TRUE(k(tx, out).ok()) << device;
    std::vector<float> got;
    ASSERT_TRUE(out.download(got).ok());
    EXPECT_EQ(got[0], 2.25f) << device;
    EXPECT_NEAR(got[1], l + 20.0, 1e-5) << device; // five swaps leave a = 2
  });
}

TEST_F(DeviceAgreement, JoinSplitInterleaveCatOnEveryDevice) {
  // join stacks two tiles along a new last dimension, interleave alternates
  // their elements, split takes the pairs apart again (into a tuple), and cat
  // concatenates along an axis (a 1 x 8 and a 2 x 8 tile; two rank-1 tiles).
  const char *source = R"(
kernel k(x: tensor<f32>[N], y: tensor<f32>[N], j: tensor<f32>[N, 2], il: tensor<f32>[L],
         c: tensor<f32>[3, N], s: tensor<f32>[N], cc: tensor<f32>[L]) grid(1) {
  let o = arange(0, 8);
  let a = load(x[o]);
  let b = load(y[o]);
  let jt = join(a, b);
  store(j[expand_dims(o, 1), expand_dims(arange(0, 2), 0)], jt);
  store(il[arange(0, 16)], interleave(a, b));
  let ct = cat(expand_dims(a, 0), broadcast_to(expand_dims(b * 2.0, 0), [2, 8]));
  store(c[expand_dims(arange(0, 3), 1), expand_dims(o, 0)], ct);
  let (p, q) = split(jt);
  let (u, w) = split(join(q, 1.5));
  store(s[o], p * 100.0 + u * 10.0 + w);
  store(cc[arange(0, 16)], cat(b, a, axis = 0));
}
)";
  const int64_t n = 8;
  std::vector<float> x(n), y(n);
  for (int64_t i = 0; i < n; ++i)
    x[i] = float(i) + 0.25f, y[i] = -float(i) * 3.0f;
  forEachDevice([&](Session &s, const std::string &device) {
    Kernel k = s.compile(source, "k");
    ASSERT_TRUE(k.ok()) << k.status().message();
    Tensor tx = s.upload(x, {n}), ty = s.upload(y, {n}), j = s.empty<float>({n, 2}),
           il = s.empty<float>({2 * n}), c = s.empty<float>({3, n}), sp = s.empty<float>({n}),
           cc = s.empty<float>({2 * n});
    ASSERT_TRUE(k(tx, ty, j, il, c, sp, cc).ok()) << device;
    std::vector<float> gotJ, gotIl, gotC, gotS, gotCc;
    ASSERT_TRUE(j.download(gotJ).ok() && il.download(gotIl).ok() && c.download(gotC).ok() &&
                sp.download(gotS).ok() && cc.download(gotCc).ok());
    for (int64_t i = 0; i < n; ++i) {
      EXPECT_EQ(gotJ[2 * i], x[i]) << device << " join " << i;
      EXPECT_EQ(gotJ[2 * i + 1], y[i]) << device << " join " << i;
      EXPECT_EQ(gotIl[2 * i], x[i]) << device << " interleave " << i;
      EXPECT_EQ(gotIl[2 * i + 1], y[i]) << device << " interleave " << i;
      EXPECT_EQ(gotC[i], x[i]) << device << " cat row 0, " << i;
      EXPECT_EQ(gotC[n + i], y[i] * 2.0f) << device << " cat row 1, " << i;
      EXPECT_EQ(gotC[2 * n + i], y[i] * 2.0f) << device << " cat row 2, " << i;
      EXPECT_EQ(gotS[i], x[i] * 100.0f + y[i] * 10.0f + 1.5f) << device << " split " << i;
      EXPECT_EQ(gotCc[i], y[i]) << device << " cat " << i;
      EXPECT_EQ(gotCc[n + i], x[i]) << device << " cat " << n + i;
    }
  });
}

TEST_F(DeviceAgreement, FlipRavelHistogramOnEveryDevice) {
  // flip along each axis of a 3 x 8 tile, ravel it, and count i32 values in 5
  // bins (values below 0 or past 4 are not counted).
  const char *source = R"(
kernel k(x: tensor<f32>[3, N], rows: tensor<f32>[3, N], cols: tensor<f32>[3, N],
         flat: tensor<f32>[L], v: tensor<i32>[M], counts: tensor<i32>[B]) grid(1) {
  let r = expand_dims(arange(0, 3), 1);
  let c = expand_dims(arange(0, 8), 0);
  let t = load(x[r, c]);
  store(rows[r, c], flip(t, 0));
  store(cols[r, c], flip(t));
  store(flat[arange(0, 24)], ravel(t));
  store(counts[arange(0, 5)], histogram(load(v[arange(0, 64)]), 5));
}
)";
  const int64_t n = 8, m = 64;
  std::vector<float> x(3 * n);
  for (int64_t i = 0; i < 3 * n; ++i)
    x[i] = float(i) * 1.5f - 4.0f;
  std::vector<int32_t> v(m), want(5, 0);
  for (int64_t i = 0; i < m; ++i) {
    v[i] = int32_t((i * 7) % 9) - 2; // -2 .. 6
    if (v[i] >= 0 && v[i] < 5)
      ++want[v[i]];
  }
  forEachDevice([&](Session &s, const std::string &device) {
    Kernel k = s.compile(source, "k");
    ASSERT_TRUE(k.ok()) << k.status().message();
    Tensor tx = s.upload(x, {3, n}), rows = s.empty<float>({3, n}), cols = s.empty<float>({3, n}),
           flat = s.empty<float>({3 * n}), tv = s.upload(v, {m}), counts = s.empty<int32_t>({5});
    ASSERT_TRUE(k(tx, rows, cols, flat, tv, counts).ok()) << device;
    std::vector<float> gotRows, gotCols, gotFlat;
    std::vector<int32_t> gotCounts;
    ASSERT_TRUE(rows.download(gotRows).ok() && cols.download(gotCols).ok() &&
                flat.download(gotFlat).ok() && counts.download(gotCounts).ok());
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t j = 0; j < n; ++j) {
        EXPECT_EQ(gotRows[i * n + j], x[(2 - i) * n + j]) << device << " flip 0";
        EXPECT_EQ(gotCols[i * n + j], x[i * n + n - 1 - j]) << device << " flip 1";
      }
    EXPECT_EQ(gotFlat, x) << device;
    EXPECT_EQ(gotCounts, want) << device;
  });
}

TEST_F(DeviceAgreement, NarrowIntegerReductionsOfSmallTilesOnEveryDevice) {
  // An 8-element tile leaves most of a GPU program's threads without an
  // element; their partials must be the identity of the tile's own type (on
  // Vulkan, min of non-negative i8 values was -1 and max of negative ones 0).
  const char *source = R"(
kernel k(a: tensor<i8>[M, 8], b: tensor<u8>[M, 8], c: tensor<i16>[M, 8], d: tensor<u16>[M, 8],
         o: tensor<i32>[M, 12]) grid(M) {
  let r = program_id(0);
  let j = arange(0, 8);
  let va = load(a[r, j]);
  let vb = load(b[r, j]);
  let vc = load(c[r, j]);
  let vd = load(d[r, j]);
  store(o[r, 0], cast<i32>(min(va)));
  store(o[r, 1], cast<i32>(max(va)));
  store(o[r, 2], cast<i32>(sum(va)));
  store(o[r, 3], cast<i32>(min(vb)));
  store(o[r, 4], cast<i32>(max(vb)));
  store(o[r, 5], cast<i32>(sum(vb)));
  store(o[r, 6], cast<i32>(min(vc)));
  store(o[r, 7], cast<i32>(max(vc)));
  store(o[r, 8], cast<i32>(sum(vc)));
  store(o[r, 9], cast<i32>(min(vd)));
  store(o[r, 10], cast<i32>(max(vd)));
  store(o[r, 11], cast<i32>(argmin(va, axis=0)));
}
)";
  // Rows: all positive, all negative, zeros, mixed, extremes.
  std::vector<std::array<int, 8>> rows = {{5, 9, 3, 7, 100, 12, 8, 6},
                                          {-5, -9, -3, -7, -100, -12, -8, -6},
                                          {0, 0, 0, 0, 0, 0, 0, 0},
                                          {-1, 2, -3, 4, -5, 6, -7, 8},
                                          {127, -128, 1, 0, 127, -128, 5, 9}};
  const int64_t m = rows.size();
  std::vector<int8_t> a;
  std::vector<uint8_t> b;
  std::vector<int16_t> c;
  std::vector<uint16_t> d;
  for (auto &row : rows)
    for (int v : row) {
      a.push_back(int8_t(v));
      b.push_back(uint8_t(v));
      c.push_back(int16_t(v * 200));
      d.push_back(uint16_t(v * 200));
    }
  forEachDevice([&](Session &s, const std::string &device) {
    Kernel k = s.compile(source, "k");
    ASSERT_TRUE(k.ok()) << k.status().message();
    Tensor ta = s.upload(a.data(), DType::I8, {m, 8}), tb = s.upload(b.data(), DType::U8, {m, 8}),
           tc = s.upload(c.data(), DType::I16, {m, 8}), td = s.upload(d.data(), DType::U16, {m, 8}),
           out = s.empty<int32_t>({m, 12});
    ASSERT_TRUE(k(ta, tb, tc, td, out).ok()) << device;
    std::vector<int32_t> got;
    ASSERT_TRUE(out.download(got).ok());
    for (int64_t r = 0; r < m; ++r) {
      auto row = [&](auto &v) { return std::vector<int64_t>(v.begin() + r * 8, v.begin() + r * 8 + 8); };
      auto ra = row(a), rb = row(b), rc = row(c), rd = row(d);
      auto lo = [](auto &v) { return *std::min_element(v.begin(), v.end()); };
      auto hi = [](auto &v) { return *std::max_element(v.begin(), v.end()); };
      auto total = [](auto &v) { return std::accumulate(v.begin(), v.end(), int64_t(0)); };
      int64_t want[12] = {lo(ra), hi(ra), int8_t(total(ra)), lo(rb), hi(rb), uint8_t(total(rb)),
                          lo(rc), hi(rc), int16_t(total(rc)), lo(rd), hi(rd),
                          std::min_element(ra.begin(), ra.end()) - ra.begin()};
      for (int col = 0; col < 12; ++col)
        EXPECT_EQ(got[r * 12 + col], want[col]) << device << " row " << r << " column " << col;
    }
  });
}

TEST_F(DeviceAgreement, RowReductionsOfEveryShapeOnEveryDevice) {
  // Reductions along a tile's last axis. GPU targets fold the runs of a row
  // each thread holds in registers first and exchange one partial per run, when
  // the row and the layout's run length (4 here with 32-bit memory, 8 with
  // 16-bit) share a factor; rows of odd length take the element-wise exchange.
  // Rows that span whole waves of the program's threads are each reduced like
  // a whole tile (registers, subgroup, shared memory) and every thread keeps
  // every row's total, so broadcasting them back takes no exchange. Shapes
  // cover rows shorter and longer than a run and than a wave, tiles smaller
  // than the program's threads, and tiles several runs per thread deep; values
  // are small integers (exact sums in f16 too), with a NaN in row 1.
  const char *source = R"(
kernel wide(x: tensor<f32>[M, N], o: tensor<f32>[M, 3], n: tensor<i32>[M, 3])
    params(BR: i32 = 4, BD: i32 = 8) grid(1) {
  let v = load(x.tile([BR, BD], [0, 0]));
  let rows = arange(0, BR);
  store(o[rows, 0], sum(v, axis = 1));
  store(o[rows, 1], max(v, axis = 1));
  store(o[rows, 2], min(v, axis = 1));
  let i = cast<i32>(v);
  store(n[rows, 0], xor_sum(i * -1640531535, axis = 1));
  store(n[rows, 1], cast<i32>(sum(cast<i8>(i * 9), axis = 1)));
  store(n[rows, 2], max(i, axis = 1));
}
kernel back(x: tensor<f32>[M, N], y: tensor<f32>[M, N], z: tensor<i32>[N, M])
    params(BR: i32 = 4, BD: i32 = 8) grid(1) {
  let v = load(x.tile([BR, BD], [0, 0]));
  let total = sum(v, axis = 1);
  store(y.tile([BR, BD], [0, 0]), v * 2.0 - total[:, None]);
  store(z.tile([BD, BR], [0, 0]), broadcast_to(sum(cast<i32>(v), axis = 1)[None, :], [BD, BR]));
}
kernel narrow(x: tensor<f16>[M, N], o: tensor<f16>[M, 2], n: tensor<i16>[M, 2])
    params(BR: i32 = 4, BD: i32 = 8) grid(1) {
  let v = load(x.tile([BR, BD], [0, 0]));
  let rows = arange(0, BR);
  store(o[rows, 0], sum(v, axis = 1));
  store(o[rows, 1], max(v, axis = 1));
  let i = cast<i16>(v);
  store(n[rows, 0], sum(i * 1000, axis = 1));
  store(n[rows, 1], cast<i16>(min(cast<u8>(i), axis = 1)));
}
)";
  struct Shape {
    int64_t rows, cols;
  };
  const Shape shapes[] = {{4, 8}, {3, 16}, {16, 16}, {5, 4}, {8, 2}, {2, 64}, {7, 6},
                          {3, 5}, {1, 24}, {32, 64}, {2, 512}, {4, 1024}, {1, 4096}};
  auto same = [](double got, double want) {
    return got == want || (std::isnan(got) && std::isnan(want));
  };
  forEachDevice([&](Session &s, const std::string &device) {
    for (Shape sh : shapes) {
      const int64_t m = sh.rows, d = sh.cols;
      std::vector<float> x(m * d);
      for (int64_t e = 0; e < m * d; ++e)
        x[e] = float(int64_t(e * 7919 % 41) - 20);
      if (m > 1)
        x[1 * d + d - 1] = NAN;
      std::vector<uint16_t> h(x.size());
      for (size_t e = 0; e < x.size(); ++e)
        h[e] = floatToHalfBits(x[e]);
      std::string where = device + " " + std::to_string(m) + "x" + std::to_string(d);
      std::map<std::string, std::string> params = {{"BR", std::to_string(m)},
                                                    {"BD", std::to_string(d)}};
      Kernel wide = s.compile(source, "wide", params);
      Kernel narrow = s.compile(source, "narrow", params);
      Kernel back = s.compile(source, "back", params);
      ASSERT_TRUE(wide.ok()) << where << ": " << wide.status().message();
      ASSERT_TRUE(back.ok()) << where << ": " << back.status().message();
      ASSERT_TRUE(narrow.ok()) << where << ": " << narrow.status().message();
      Tensor tx = s.upload(x, {m, d}), th = s.upload(h.data(), DType::F16, {m, d});
      Tensor wo = s.empty<float>({m, 3}), wn = s.empty<int32_t>({m, 3});
      Tensor no = s.empty(DType::F16, {m, 2}), nn = s.empty(DType::I16, {m, 2});
      ASSERT_TRUE(wide(tx, wo, wn).ok()) << where;
      ASSERT_TRUE(narrow(th, no, nn).ok()) << where;
      Tensor by = s.empty<float>({m, d}), bz = s.empty<int32_t>({d, m});
      ASSERT_TRUE(back(tx, by, bz).ok()) << where;
      std::vector<float> gotBy;
      std::vector<int32_t> gotBz;
      ASSERT_TRUE(by.download(gotBy).ok() && bz.download(gotBz).ok());
      int64_t wrongBack = 0;
      std::vector<float> gotWo;
      std::vector<int32_t> gotWn;
      std::vector<uint16_t> gotNo;
      std::vector<int16_t> gotNn;
      ASSERT_TRUE(wo.download(gotWo).ok() && wn.download(gotWn).ok());
      ASSERT_TRUE(no.download(gotNo).ok() && nn.download(gotNn).ok());
      for (int64_t r = 0; r < m; ++r) {
        double total = 0, hi = -INFINITY, lo = INFINITY;
        int32_t bits = 0, hiInt = INT32_MIN;
        int64_t bytes = 0, shorts = 0, loByte = 255;
        for (int64_t c = 0; c < d; ++c) {
          float v = x[r * d + c];
          total += v;
          hi = std::isnan(v) || std::isnan(hi) ? NAN : std::max<double>(hi, v);
          lo = std::isnan(v) || std::isnan(lo) ? NAN : std::min<double>(lo, v);
          int32_t i = std::isnan(v) ? 0 : int32_t(v); // saturating casts take NaN to 0
          bits ^= int32_t(uint32_t(i) * 2654435761u);
          bytes += int8_t(i * 9);
          hiInt = std::max(hiInt, i);
          shorts += i * 1000;
          loByte = std::min<int64_t>(loByte, uint8_t(i));
        }
        EXPECT_TRUE(same(gotWo[r * 3 + 0], total)) << where << " row " << r << " sum";
        EXPECT_TRUE(same(gotWo[r * 3 + 1], hi)) << where << " row " << r << " max";
        EXPECT_TRUE(same(gotWo[r * 3 + 2], lo)) << where << " row " << r << " min";
        EXPECT_EQ(gotWn[r * 3 + 0], bits) << where << " row " << r << " xor_sum";
        EXPECT_EQ(gotWn[r * 3 + 1], int8_t(bytes)) << where << " row " << r << " i8 sum";
        EXPECT_EQ(gotWn[r * 3 + 2], hiInt) << where << " row " << r << " i32 max";
        EXPECT_TRUE(same(halfBitsToFloat(gotNo[r * 2 + 0]), total))
            << where << " row " << r << " f16 sum";
        EXPECT_TRUE(same(halfBitsToFloat(gotNo[r * 2 + 1]), hi))
            << where << " row " << r << " f16 max";
        EXPECT_EQ(gotNn[r * 2 + 0], int16_t(shorts)) << where << " row " << r << " i16 sum";
        EXPECT_EQ(gotNn[r * 2 + 1], loByte) << where << " row " << r << " u8 min";
        int32_t intTotal = 0;
        for (int64_t c = 0; c < d; ++c)
          intTotal += std::isnan(x[r * d + c]) ? 0 : int32_t(x[r * d + c]);
        for (int64_t c = 0; c < d; ++c) {
          bool ok = same(gotBy[r * d + c], double(x[r * d + c]) * 2 - total) &&
                    gotBz[c * m + r] == intTotal;
          if (!ok && wrongBack++ < 5)
            ADD_FAILURE() << where << " broadcast back at (" << r << ", " << c << "): "
                          << gotBy[r * d + c] << " want " << double(x[r * d + c]) * 2 - total
                          << ", i32 sum " << gotBz[c * m + r] << " want " << intTotal;
        }
      }
    }
  });
}

TEST_F(DeviceAgreement, ColumnReductionsOfEveryShapeOnEveryDevice) {
  // Reductions along the first and middle axes of 3-D tiles. Where the tile
  // repeats the threads' layout along the axis, GPU targets fold a thread's
  // elements of one result in registers and exchange one partial per group (a
  // result then reads the first positions of the axis only); elsewhere the
  // elements are exchanged. Shapes cover both, axes longer and shorter than the
  // threads' reach, and rows shorter and longer than it; values are small
  // integers (exact sums), with a NaN in one column.
  const char *source = R"(
kernel cols(x: tensor<f32>[A, B, C], o0: tensor<f32>[B, C, 2], o1: tensor<f32>[A, C, 2],
            n0: tensor<i32>[B, C, 2], n1: tensor<i32>[A, C, 2])
    params(BA: i32 = 2, BB: i32 = 2, BC: i32 = 2) grid(1) {
  let v = load(x.tile([BA, BB, BC], [0, 0, 0]));
  let a = arange(0, BA)[:, None];
  let b = arange(0, BB)[:, None];
  let c = arange(0, BC)[None, :];
  store(o0[b, c, 0], sum(v, axis = 0));
  store(o0[b, c, 1], max(v, axis = 0));
  store(o1[a, c, 0], sum(v, axis = 1));
  store(o1[a, c, 1], min(v, axis = 1));
  let i = cast<i32>(v);
  store(n0[b, c, 0], xor_sum(i * -1640531535, axis = 0));
  store(n0[b, c, 1], cast<i32>(sum(cast<i8>(i * 9), axis = 0)));
  store(n1[a, c, 0], xor_sum(i * -1640531535, axis = 1));
  store(n1[a, c, 1], cast<i32>(sum(cast<i8>(i * 9), axis = 1)));
}
)";
  struct Shape {
    int64_t a, b, c;
  };
  const Shape shapes[] = {{32, 8, 8}, {4, 4, 256}, {2, 128, 4}, {3, 5, 7},
                          {64, 2, 2}, {8, 1, 512}, {8, 32, 3}};
  auto same = [](double got, double want) {
    return got == want || (std::isnan(got) && std::isnan(want));
  };
  forEachDevice([&](Session &s, const std::string &device) {
    for (Shape sh : shapes) {
      const int64_t A = sh.a, B = sh.b, C = sh.c;
      std::vector<float> x(A * B * C);
      for (size_t e = 0; e < x.size(); ++e)
        x[e] = float(int64_t(e * 7919 % 41) - 20);
      x[x.size() / 2] = NAN;
      std::string where = device + " " + std::to_string(A) + "x" + std::to_string(B) + "x" +
                          std::to_string(C);
      Kernel k = s.compile(source, "cols",
                           {{"BA", std::to_string(A)},
                            {"BB", std::to_string(B)},
                            {"BC", std::to_string(C)}});
      ASSERT_TRUE(k.ok()) << where << ": " << k.status().message();
      Tensor tx = s.upload(x, {A, B, C});
      Tensor o0 = s.empty<float>({B, C, 2}), o1 = s.empty<float>({A, C, 2});
      Tensor n0 = s.empty<int32_t>({B, C, 2}), n1 = s.empty<int32_t>({A, C, 2});
      ASSERT_TRUE(k(tx, o0, o1, n0, n1).ok()) << where;
      std::vector<float> g0, g1;
      std::vector<int32_t> h0, h1;
      ASSERT_TRUE(o0.download(g0).ok() && o1.download(g1).ok() && n0.download(h0).ok() &&
                  n1.download(h1).ok());
      // The reductions of x along `axis` at the other two coordinates (p, q).
      int64_t wrong = 0;
      auto check = [&](int axis, int64_t p, int64_t q, const std::vector<float> &got,
                       const std::vector<int32_t> &gotInt, int64_t slot) {
        int64_t length = axis == 0 ? A : B;
        double total = 0, extreme = axis == 0 ? -INFINITY : INFINITY;
        int32_t bits = 0;
        int64_t bytes = 0;
        for (int64_t k = 0; k < length; ++k) {
          float v = axis == 0 ? x[(k * B + p) * C + q] : x[(p * B + k) * C + q];
          total += v;
          extreme = std::isnan(v) || std::isnan(extreme) ? NAN
                    : axis == 0                          ? std::max<double>(extreme, v)
                                                         : std::min<double>(extreme, v);
          int32_t i = std::isnan(v) ? 0 : int32_t(v); // saturating casts take NaN to 0
          bits ^= int32_t(uint32_t(i) * 2654435761u);
          bytes += int8_t(i * 9);
        }
        bool ok = same(got[slot * 2], total) && same(got[slot * 2 + 1], extreme) &&
                  gotInt[slot * 2] == bits && gotInt[slot * 2 + 1] == int8_t(bytes);
        if (!ok && wrong++ < 5)
          ADD_FAILURE() << where << " axis " << axis << " at (" << p << ", " << q
                        << "): sum " << got[slot * 2] << " want " << total << ", "
                        << (axis == 0 ? "max " : "min ") << got[slot * 2 + 1] << " want "
                        << extreme << ", xor_sum " << gotInt[slot * 2] << " want " << bits
                        << ", i8 sum " << gotInt[slot * 2 + 1] << " want "
                        << int(int8_t(bytes));
      };
      for (int64_t p = 0; p < B; ++p)
        for (int64_t q = 0; q < C; ++q)
          check(0, p, q, g0, h0, p * C + q);
      for (int64_t p = 0; p < A; ++p)
        for (int64_t q = 0; q < C; ++q)
          check(1, p, q, g1, h1, p * C + q);
      EXPECT_EQ(wrong, 0) << where;
    }
  });
}

TEST_F(DeviceAgreement, LongScansOnEveryDevice) {
  // Scans along an axis of 128 elements or more take log2(n) doubling steps
  // on GPUs and Vulkan: along the last axis and a middle one (stride 2), over a
  // tile larger than the program's threads, forward and reversed, with tails
  // masked off. Values are integers below 2^13, so f32 sums are exact and every
  // device must give the exact prefix. They are drawn at random but for new
  // highs (lows in `flat`) at positions 4^k - 1, which a running max (min) must
  // carry over up to 3 * 4^k elements (past half the axis), and odd factors
  // keep a product from settling at zero, so each scan needs its long reaches.
  const char *source = R"(
kernel scans(x: tensor<i32>[R, N, C], s: tensor<f32>[R, N, C], p: tensor<i32>[R, N, C],
             hi: tensor<f32>[R, N, C], back: tensor<i32>[R, N, C])
    params(BR: i32 = 2, BN: i32 = 256, BC: i32 = 2) grid(1) {
  let r = arange(0, BR)[:, None, None];
  let n = arange(0, BN)[None, :, None];
  let c = arange(0, BC)[None, None, :];
  let m = n < N;
  let v = load(x[r, n, c], mask = m, other = 0);
  let f = cast<f32>(v);
  store(s[r, n, c], cumsum(f, axis = 1), mask = m);
  store(p[r, n, c], cumprod(2 * (v % 3) + 1, axis = 1), mask = m);
  store(hi[r, n, c], cummax(f, axis = 1), mask = m);
  store(back[r, n, c], cumsum(v, axis = 1, reverse = true), mask = m);
}
kernel rows(x: tensor<i32>[M], y: tensor<i32>[M], z: tensor<i32>[M])
    params(BLOCK: i32 = 4096) grid(1) {
  let i = arange(0, BLOCK);
  let v = load(x[i], mask = i < M, other = 0);
  store(y[i], cumsum(v), mask = i < M);
  store(z[i], cummin(v), mask = i < M);
}
)";
  const int64_t R = 2, N = 250, C = 2, M = 4000;
  std::vector<int32_t> x(R * N * C), flat(M);
  auto draw = [](uint32_t e) { // in [-4096, 4096]
    uint32_t h = e * 2654435761u;
    h = (h ^ (h >> 15)) * 2246822519u;
    return int32_t((h ^ (h >> 13)) % 8193) - 4096;
  };
  auto record = [](int64_t e) { // k at e = 4^k - 1, else 0
    int32_t k = 0;
    while ((int64_t(1) << 2 * k) < e + 1)
      ++k;
    return (int64_t(1) << 2 * k) == e + 1 ? k : 0;
  };
  for (size_t e = 0; e < x.size(); ++e) {
    int64_t n = int64_t(e) / C % N;
    x[e] = record(n) ? 5000 + record(n) : draw(uint32_t(e));
  }
  for (int64_t e = 0; e < M; ++e)
    flat[e] = record(e) ? -5000 - record(e) : draw(uint32_t(e + 100000));
  forEachDevice([&](Session &s, const std::string &device) {
    Kernel scans = s.compile(source, "scans"), rows = s.compile(source, "rows");
    ASSERT_TRUE(scans.ok()) << scans.status().message();
    ASSERT_TRUE(rows.ok()) << rows.status().message();
    Tensor tx = s.upload(x, {R, N, C});
    Tensor ts = s.empty<float>({R, N, C}), tp = s.empty<int32_t>({R, N, C}),
           th = s.empty<float>({R, N, C}), tb = s.empty<int32_t>({R, N, C});
    ASSERT_TRUE(scans(tx, ts, tp, th, tb).ok()) << device;
    Tensor tf = s.upload(flat, {M}), ty = s.empty<int32_t>({M}), tz = s.empty<int32_t>({M});
    ASSERT_TRUE(rows(tf, ty, tz).ok()) << device;
    std::vector<float> gs, gh;
    std::vector<int32_t> gp, gb, gy, gz;
    ASSERT_TRUE(ts.download(gs).ok() && tp.download(gp).ok() && th.download(gh).ok() &&
                tb.download(gb).ok() && ty.download(gy).ok() && tz.download(gz).ok());
    int64_t wrong = 0;
    for (int64_t r = 0; r < R; ++r)
      for (int64_t c = 0; c < C; ++c) {
        int64_t total = 0, back = 0;
        uint32_t product = 1;
        int32_t hi = INT32_MIN;
        auto at = [&](int64_t n) { return (r * N + n) * C + c; };
        for (int64_t n = 0; n < N; ++n)
          back += x[at(n)];
        for (int64_t n = 0; n < N; ++n) {
          int32_t v = x[at(n)];
          total += v;
          product *= uint32_t(2 * (v % 3) + 1); // % truncates, as C++'s
          hi = std::max(hi, v);
          bool ok = gs[at(n)] == float(total) && gp[at(n)] == int32_t(product) &&
                    gh[at(n)] == float(hi) && gb[at(n)] == int32_t(back);
          if (!ok && wrong++ < 5)
            ADD_FAILURE() << device << " r=" << r << " n=" << n << " c=" << c << ": sum "
                          << gs[at(n)] << " want " << total << ", prod " << gp[at(n)]
                          << " want " << int32_t(product) << ", max " << gh[at(n)] << " want "
                          << hi << ", reversed sum " << gb[at(n)] << " want " << back;
          back -= v;
        }
      }
    int64_t total = 0;
    int32_t lo = INT32_MAX;
    for (int64_t e = 0; e < M; ++e) {
      total += flat[e];
      lo = std::min(lo, flat[e]);
      if ((gy[e] != total || gz[e] != lo) && wrong++ < 10)
        ADD_FAILURE() << device << " rows e=" << e << ": sum " << gy[e] << " want " << total
                      << ", min " << gz[e] << " want " << lo;
    }
    EXPECT_EQ(wrong, 0) << device;
  });
}

} // namespace
