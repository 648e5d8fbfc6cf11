// Movement, indexing, reductions and the nn functions against the host reference, and random chains
// of movement ops against the host model.
#include <random>

#include "tests/tensor/host.h"

namespace ugpu::test {
namespace {
namespace dt = tensor::dtypes;
using Pairs = std::vector<std::pair<int64_t, int64_t>>;

Host h_permute(const Host& a, const std::vector<int64_t>& p) {
  Shape out;
  for (int64_t x : p) out.push_back(a.shape[x]);
  return remap(a, out, [&](const std::vector<int64_t>& i) {
    std::vector<int64_t> s(i.size());
    for (size_t d = 0; d < p.size(); ++d) s[p[d]] = i[d];
    return std::optional(s);
  });
}
Host h_pad(const Host& a, const Pairs& p) {
  Shape out = a.shape;
  for (size_t d = 0; d < p.size(); ++d) out[d] += p[d].first + p[d].second;
  return remap(a, out, [&](const std::vector<int64_t>& i) -> std::optional<std::vector<int64_t>> {
    std::vector<int64_t> s = i;
    for (size_t d = 0; d < p.size(); ++d) {
      s[d] -= p[d].first;
      if (s[d] < 0 || s[d] >= a.shape[d]) return std::nullopt;
    }
    return s;
  });
}
Host h_shrink(const Host& a, const Pairs& p) {
  Shape out = a.shape;
  for (size_t d = 0; d < p.size(); ++d) out[d] = p[d].second - p[d].first;
  return remap(a, out, [&](const std::vector<int64_t>& i) {
    std::vector<int64_t> s = i;
    for (size_t d = 0; d < p.size(); ++d) s[d] += p[d].first;
    return std::optional(s);
  });
}
Host h_flip(const Host& a, int64_t ax) {
  return remap(a, a.shape, [&](const std::vector<int64_t>& i) {
    std::vector<int64_t> s = i;
    s[ax] = a.shape[ax] - 1 - i[ax];
    return std::optional(s);
  });
}
Host h_expand(const Host& a, const Shape& to) {
  return remap(a, to, [&](const std::vector<int64_t>& i) {
    std::vector<int64_t> s = i;
    for (size_t d = 0; d < to.size(); ++d)
      if (a.shape[d] == 1) s[d] = 0;
    return std::optional(s);
  });
}
Host h_step(const Host& a, int64_t ax, int64_t start, int64_t step, int64_t count) {
  Shape out = a.shape;
  out[ax] = count;
  return remap(a, out, [&](const std::vector<int64_t>& i) {
    std::vector<int64_t> s = i;
    s[ax] = start + i[ax] * step;
    return std::optional(s);
  });
}

TEST_CASE("tensor: random chains of movement ops match the host model") {
  std::mt19937_64 rng(1234);
  auto pick = [&](int64_t n) { return static_cast<int64_t>(rng() % static_cast<uint64_t>(n)); };
  for (const std::string& dev : test_devices()) {
    INFO("device " << dev);
    for (int chain = 0; chain < 12; ++chain) {
      Host h = random_host({2, 3, 4}, static_cast<uint64_t>(chain), -9, 9, true);
      Tensor t = upload(h, dev);
      std::string trail;
      for (int step = 0; step < 6; ++step) {
        int64_t rank = static_cast<int64_t>(h.shape.size());
        switch (pick(7)) {
          case 0: {  // reshape: merge two neighbours or split an axis by a divisor
            if (rank >= 2 && pick(2)) {
              int64_t d = pick(rank - 1);
              Shape s = h.shape;
              s[d] *= s[d + 1];
              s.erase(s.begin() + d + 1);
              h.shape = s;
            } else {
              int64_t d = pick(rank);
              int64_t f = h.shape[d] % 2 == 0 ? 2 : h.shape[d] % 3 == 0 ? 3 : 1;
              Shape s = h.shape;
              s[d] /= f;
              s.insert(s.begin() + d + 1, f);
              h.shape = s;
            }
            t = t.reshape(tensor::Axes(h.shape.begin(), h.shape.end()));
            trail += " reshape" + show(h.shape);
            break;
          }
          case 1: {
            std::vector<int64_t> p(rank);
            std::iota(p.begin(), p.end(), 0);
            std::shuffle(p.begin(), p.end(), rng);
            h = h_permute(h, p), t = t.permute(p);
            trail += " permute" + show(p);
            break;
          }
          case 2: {
            Pairs p;
            for (int64_t d = 0; d < rank; ++d) p.push_back({pick(2), pick(3)});
            h = h_pad(h, p), t = t.pad(p);
            trail += " pad";
            break;
          }
          case 3: {
            Pairs p;
            for (int64_t d = 0; d < rank; ++d) {
              int64_t b = pick(std::max<int64_t>(1, h.shape[d] / 2));
              p.push_back({b, b + 1 + pick(h.shape[d] - b)});
            }
            h = h_shrink(h, p), t = t.shrink(p);
            trail += " shrink";
            break;
          }
          case 4: {
            int64_t d = pick(rank);
            h = h_flip(h, d), t = t.flip({d});
            trail += " flip" + std::to_string(d);
            break;
          }
          case 5: {  // a new size-1 axis, expanded
            int64_t d = pick(rank + 1);
            Shape s = h.shape;
            s.insert(s.begin() + d, 1);
            h.shape = s;
            t = t.unsqueeze(d);
            Shape to = s;
            to[d] = 3;
            h = h_expand(h, to), t = t.expand(tensor::Axes(to.begin(), to.end()));
            trail += " expand@" + std::to_string(d);
            break;
          }
          default: {  // a slice with a step, maybe negative
            int64_t d = pick(rank), n = h.shape[d];
            int64_t step = pick(2) ? 2 : -2;
            int64_t start = step > 0 ? pick(n) : n - 1 - pick(n);
            int64_t count = step > 0 ? (n - start + 1) / 2 : (start + 2) / 2;
            h = h_step(h, d, start, step, count), t = t.slice(d, start, std::nullopt, step);
            trail += " slice" + std::to_string(d) + "[" + std::to_string(start) + "::" + std::to_string(step) + "]";
            break;
          }
        }
        if (h.numel() > 4000) break;
      }
      INFO("chain" << trail);
      check_close(t, h);
      check_close(t + 1.0, map1(h, [](double x) { return x + 1; }));  // the same chain fused into arithmetic
    }
  }
}

TEST_CASE("tensor: cat, stack, split, chunk, repeat, squeeze, flatten, select") {
  for (const std::string& dev : test_devices()) {
    INFO("device " << dev);
    Host a = random_host({2, 3}, 1, -9, 9, true), b = random_host({2, 1}, 2, -9, 9, true);
    Tensor ta = upload(a, dev), tb = upload(b, dev);
    Tensor parts[] = {ta, tb, ta};
    Host want{{2, 7}, std::vector<double>(14)};
    for (int64_t r = 0; r < 2; ++r)
      for (int64_t c = 0; c < 7; ++c) want.v[r * 7 + c] = c < 3 ? a.v[r * 3 + c] : c == 3 ? b.v[r] : a.v[r * 3 + c - 4];
    check_close(Tensor::cat(parts, 1), want);
    Tensor st[] = {ta, ta * 2.0};
    Tensor s = Tensor::stack(st, 1);
    CHECK(s.shape() == Shape{2, 2, 3});
    check_close(s.select(1, 1), map1(a, [](double x) { return 2 * x; }));
    auto sp = Tensor::cat(parts, 1).split({3, 1, 3}, 1);
    REQUIRE(sp.size() == 3);
    check_close(sp[1], b);
    check_close(sp[2], a);
    auto ch = ta.chunk(2, 1);
    REQUIRE(ch.size() == 2);
    check_close(ch[1], h_shrink(a, {{0, 2}, {2, 3}}));
    Host rep = remap(a, {4, 6}, [&](const std::vector<int64_t>& i) { return std::optional(std::vector<int64_t>{i[0] % 2, i[1] % 3}); });
    check_close(ta.repeat({2, 2}), rep);
    CHECK(ta.unsqueeze(0).unsqueeze(-1).shape() == Shape{1, 2, 3, 1});
    CHECK(ta.unsqueeze(0).unsqueeze(-1).squeeze().shape() == Shape{2, 3});
    CHECK(ta.reshape({1, 2, 3}).flatten().shape() == Shape{6});
    check_close(ta.select(-1, -1), Host{{2}, {a.v[2], a.v[5]}});
    check_close(ta.transpose(), h_permute(a, {1, 0}));
    check_close(ta.pad({{1, 0}, {0, 1}}, -1.5), [&] {
      Host p = h_pad(a, {{1, 0}, {0, 1}});
      for (int64_t k = 0; k < p.numel(); ++k) {
        auto i = unravel(k, p.shape);
        if (i[0] == 0 || i[1] == 3) p.v[k] = -1.5;
      }
      return p;
    }());
  }
}

TEST_CASE("tensor: gather, index_select and embedding read by integer tensors") {
  for (const std::string& dev : test_devices()) {
    INFO("device " << dev);
    Host table = random_host({10, 4}, 5);
    Tensor tt = upload(table, dev);
    std::vector<int32_t> ids{3, 0, 9, 3, 7, 1};
    Tensor ti = Tensor::from(ids, {2, 3}, dev);
    Host want{{2, 3, 4}, {}};
    for (int32_t id : ids)
      for (int64_t c = 0; c < 4; ++c) want.v.push_back(table.v[id * 4 + c]);
    check_close(tt.embedding(ti), want);
    check_close(tt.embedding(ti).sum({-1}), reduce(want, {2}, 0, [](double x, double y) { return x + y; }));
    std::vector<int32_t> cols{3, 0, 3};
    Host sel = remap(table, {10, 3}, [&](const std::vector<int64_t>& i) { return std::optional(std::vector<int64_t>{i[0], cols[i[1]]}); });
    check_close(tt.index_select(1, Tensor::from(cols, {3}, dev)), sel);
    std::vector<int64_t> g{1, 0, 2, 3, 3, 3, 9, 12};  // 12 is out of range: 0
    Host gathered = remap(table, {2, 4}, [&](const std::vector<int64_t>& i) -> std::optional<std::vector<int64_t>> {
      int64_t r = g[i[0] * 4 + i[1]];
      if (r >= 10) return std::nullopt;
      return std::vector<int64_t>{r, i[1]};
    });
    check_close(tt.gather(0, Tensor::from(g, {2, 4}, dev)), gathered);
  }
}

TEST_CASE("tensor: reductions over any axes") {
  auto add = [](double x, double y) { return x + y; };
  auto mul = [](double x, double y) { return x * y; };
  auto mx = [](double x, double y) { return std::max(x, y); };
  auto mn = [](double x, double y) { return std::min(x, y); };
  for (const std::string& dev : test_devices()) {
    INFO("device " << dev);
    Host a = random_host({3, 17, 5}, 21, -2, 2);
    Tensor ta = upload(a, dev);
    for (std::vector<int64_t> axes : std::vector<std::vector<int64_t>>{{0}, {1}, {2}, {0, 2}, {0, 1, 2}})
      for (bool keep : {false, true}) {
        INFO("axes " << show(axes) << " keepdim " << keep);
        tensor::Axes ax(axes.begin(), axes.end());
        check_close(ta.sum(ax, keep), reduce(a, axes, 0, add, keep), 1e-5, 1e-5);
        check_close(ta.max(ax, keep), reduce(a, axes, -INFINITY, mx, keep));
        check_close(ta.min(ax, keep), reduce(a, axes, INFINITY, mn, keep));
        int64_t n = 1;
        for (int64_t x : axes) n *= a.shape[x];
        check_close(ta.mean(ax, keep), map1(reduce(a, axes, 0, add, keep), [&](double s) { return s / double(n); }), 1e-5, 1e-6);
      }
    Host small = random_host({4, 3}, 3, 0.5, 1.5);
    check_close(upload(small, dev).prod({0}), reduce(small, {0}, 1, mul));
    Host var =
        reduce(map2(a, map1(reduce(a, {1}, 0, add, true), [](double s) { return s / 17; }), [](double x, double m) { return (x - m) * (x - m); }),
               {1}, 0, add);
    check_close(ta.var({1}), map1(var, [](double s) { return s / 16; }), 1e-4, 1e-5);
    check_close(ta.std({1}, false, 0), map1(var, [](double s) { return std::sqrt(s / 17); }), 1e-4, 1e-5);
    Host ints = random_host({3, 17}, 8, -3, 3, true);
    Tensor ti = upload(ints, dev, dt::int32);
    check_close(ti.sum({1}), reduce(ints, {1}, 0, add));
    check_close(ti.max({0}), reduce(ints, {0}, -INFINITY, mx));
    check_close(ti.min({0}), reduce(ints, {0}, INFINITY, mn));
    check_close(ti.gt(scalar_like(ti, 1)).any({1}), reduce(ints, {1}, 0, [](double acc, double x) { return double(acc || x > 1); }));
    check_close(ti.gt(scalar_like(ti, -3)).all({1}), reduce(ints, {1}, 1, [](double acc, double x) { return double(acc && x > -3); }));
    // argmax: the first maximum.
    Host arg = reduce(ints, {1}, 0, [](double, double) { return 0.0; });
    for (int64_t r = 0; r < 3; ++r) {
      int64_t best = 0;
      for (int64_t c = 1; c < 17; ++c)
        if (ints.v[r * 17 + c] > ints.v[r * 17 + best]) best = c;
      arg.v[r] = static_cast<double>(best);
    }
    check_close(ti.argmax(1), arg);
    CHECK(ti.argmax(1).dtype() == dt::int32);
    check_close((-ti).argmin(1), arg);
    check_close(ta.argmax().reshape({1}), Host{{1}, {double(std::max_element(a.v.begin(), a.v.end()) - a.v.begin())}});
    // cumsum along the middle axis.
    Host cs = a;
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t k = 0; k < 5; ++k)
        for (int64_t j = 1; j < 17; ++j) cs.v[(i * 17 + j) * 5 + k] += cs.v[(i * 17 + j - 1) * 5 + k];
    check_close(ta.cumsum(1), cs, 1e-5, 1e-5);
  }
}

TEST_CASE("tensor: softmax, log_softmax and logsumexp") {
  for (const std::string& dev : test_devices()) {
    INFO("device " << dev);
    Host a = random_host({3, 129}, 4, -10, 10);
    Tensor ta = upload(a, dev);
    Host lse = reduce(a, {1}, 0, [](double, double) { return 0.0; });
    for (int64_t r = 0; r < 3; ++r) {
      double m = -INFINITY, s = 0;
      for (int64_t c = 0; c < 129; ++c) m = std::max(m, a.v[r * 129 + c]);
      for (int64_t c = 0; c < 129; ++c) s += std::exp(a.v[r * 129 + c] - m);
      lse.v[r] = m + std::log(s);
    }
    check_close(ta.logsumexp(1), lse, 1e-5, 1e-5);
    Host sm = a, lsm = a;
    for (int64_t k = 0; k < a.numel(); ++k) {
      lsm.v[k] = a.v[k] - lse.v[k / 129];
      sm.v[k] = std::exp(lsm.v[k]);
    }
    check_close(ta.softmax(-1), sm, 1e-5, 1e-7);
    check_close(ta.log_softmax(1), lsm, 1e-5, 1e-5);
    check_close(ta.softmax(0).sum({0}), Host{{129}, std::vector<double>(129, 1.0)}, 1e-5, 1e-6);
  }
}

TEST_CASE("tensor: matmul, linear, norms, triangles and attention") {
  for (const std::string& dev : test_devices()) {
    INFO("device " << dev);
    Host a = random_host({17, 33}, 1), b = random_host({33, 3}, 2);
    Tensor ta = upload(a, dev), tb = upload(b, dev);
    check_close(ta.matmul(tb), matmul(a, b), 1e-5, 1e-5);
    // Batch broadcasting: [2, 1, 17, 33] @ [3, 33, 3] -> [2, 3, 17, 3].
    Tensor batched = ta.reshape({1, 1, 17, 33}).expand({2, 1, 17, 33}).matmul(tb.reshape({1, 33, 3}).expand({3, 33, 3}) * 2.0);
    CHECK(batched.shape() == Shape{2, 3, 17, 3});
    check_close(batched.sum({0, 1}), map1(matmul(a, b), [](double x) { return 12 * x; }), 1e-4, 1e-4);
    // 1-D operands.
    Host v = random_host({33}, 3);
    check_close(
        ta.matmul(upload(v, dev)),
        [&] {
          Host r = matmul(a, Host{{33, 1}, v.v});
          r.shape = {17};
          return r;
        }(),
        1e-5, 1e-5);
    Host w = random_host({5, 33}, 4), bias = random_host({5}, 5);
    Host wt = h_permute(w, {1, 0});
    check_close(ta.linear(upload(w, dev), upload(bias, dev)), map2(matmul(a, wt), bias, [](double x, double y) { return x + y; }), 1e-5, 1e-5);
    // layer_norm and rms_norm over the last axis.
    Host ln = a, rms = a;
    for (int64_t r = 0; r < 17; ++r) {
      double m = 0, var = 0, sq = 0;
      for (int64_t c = 0; c < 33; ++c) m += a.v[r * 33 + c] / 33, sq += a.v[r * 33 + c] * a.v[r * 33 + c] / 33;
      for (int64_t c = 0; c < 33; ++c) var += (a.v[r * 33 + c] - m) * (a.v[r * 33 + c] - m) / 33;
      for (int64_t c = 0; c < 33; ++c) {
        ln.v[r * 33 + c] = (a.v[r * 33 + c] - m) / std::sqrt(var + 1e-5) * (1 + 0.01 * c) + 0.5;
        rms.v[r * 33 + c] = a.v[r * 33 + c] / std::sqrt(sq + 1e-6) * (1 + 0.01 * c);
      }
    }
    Tensor scale = Tensor::arange(33, dt::int32, dev).cast(dt::float32) * 0.01 + 1.0;
    check_close(ta.layer_norm(scale, Tensor::full({33}, 0.5, dt::float32, dev)), ln, 1e-4, 1e-5);
    check_close(ta.rms_norm(scale), rms, 1e-4, 1e-5);
    // triu / tril.
    Host tu = a, tl = a;
    for (int64_t r = 0; r < 17; ++r)
      for (int64_t c = 0; c < 33; ++c) {
        if (c - r < 1) tu.v[r * 33 + c] = 0;
        if (c - r > -2) tl.v[r * 33 + c] = 0;
      }
    check_close(ta.triu(1), tu);
    check_close(ta.tril(-2), tl);
    // Attention: 4 query heads over 2 key/value heads, causal, Tq = 3 < Tk = 5.
    Host q = random_host({4, 3, 8}, 6), k = random_host({2, 5, 8}, 7), vv = random_host({2, 5, 8}, 8);
    Host out{{4, 3, 8}, std::vector<double>(96)};
    for (int64_t h = 0; h < 4; ++h)
      for (int64_t i = 0; i < 3; ++i) {
        std::vector<double> sc(5, -INFINITY);
        double m = -INFINITY, s = 0;
        for (int64_t j = 0; j <= i + 2; ++j) {
          double d = 0;
          for (int64_t x = 0; x < 8; ++x) d += q.v[(h * 3 + i) * 8 + x] * k.v[((h / 2) * 5 + j) * 8 + x];
          sc[j] = d / std::sqrt(8.0);
          m = std::max(m, sc[j]);
        }
        for (int64_t j = 0; j < 5; ++j) s += std::exp(sc[j] - m);
        for (int64_t x = 0; x < 8; ++x) {
          double acc = 0;
          for (int64_t j = 0; j < 5; ++j) acc += std::exp(sc[j] - m) / s * vv.v[((h / 2) * 5 + j) * 8 + x];
          out.v[(h * 3 + i) * 8 + x] = acc;
        }
      }
    check_close(upload(q, dev).scaled_dot_product_attention(upload(k, dev), upload(vv, dev), {}, true), out, 1e-4, 1e-5);
  }
}

// Direct convolution on the host: out[n, o, y, x] = sum over (c, i, j) of in[n, g*cg + c, y*s - p + i*d, x*s - p + j*d] * w[o, c, i, j].
Host host_conv2d(const Host& x, const Host& w, int64_t s, int64_t p, int64_t d, int64_t groups) {
  int64_t n = x.shape[0], cin = x.shape[1], h = x.shape[2], wd = x.shape[3], cout = w.shape[0], kh = w.shape[2], kw = w.shape[3];
  int64_t oh = (h + 2 * p - d * (kh - 1) - 1) / s + 1, ow = (wd + 2 * p - d * (kw - 1) - 1) / s + 1, cg = cin / groups, og = cout / groups;
  Host r{{n, cout, oh, ow}, std::vector<double>(static_cast<size_t>(n * cout * oh * ow))};
  for (int64_t b = 0; b < n; ++b)
    for (int64_t o = 0; o < cout; ++o)
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t xx = 0; xx < ow; ++xx) {
          double acc = 0;
          for (int64_t c = 0; c < cg; ++c)
            for (int64_t i = 0; i < kh; ++i)
              for (int64_t j = 0; j < kw; ++j) {
                int64_t iy = y * s - p + i * d, ix = xx * s - p + j * d;
                if (iy < 0 || iy >= h || ix < 0 || ix >= wd) continue;
                acc += x.v[((b * cin + (o / og) * cg + c) * h + iy) * wd + ix] * w.v[((o * cg + c) * kh + i) * kw + j];
              }
          r.v[((b * cout + o) * oh + y) * ow + xx] = acc;
        }
  return r;
}

// Transposed convolution by scattering: every input element adds w times itself to the outputs it reaches.
Host host_conv_transpose2d(const Host& x, const Host& w, int64_t s, int64_t p, int64_t op, int64_t d, int64_t groups) {
  int64_t n = x.shape[0], cin = x.shape[1], h = x.shape[2], wd = x.shape[3], og = w.shape[1], kh = w.shape[2], kw = w.shape[3];
  int64_t cout = og * groups, cg = cin / groups;
  int64_t oh = (h - 1) * s - 2 * p + d * (kh - 1) + op + 1, ow = (wd - 1) * s - 2 * p + d * (kw - 1) + op + 1;
  Host r{{n, cout, oh, ow}, std::vector<double>(static_cast<size_t>(n * cout * oh * ow))};
  for (int64_t b = 0; b < n; ++b)
    for (int64_t c = 0; c < cin; ++c)
      for (int64_t y = 0; y < h; ++y)
        for (int64_t xx = 0; xx < wd; ++xx)
          for (int64_t o = 0; o < og; ++o)
            for (int64_t i = 0; i < kh; ++i)
              for (int64_t j = 0; j < kw; ++j) {
                int64_t ty = y * s - p + i * d, tx = xx * s - p + j * d;
                if (ty < 0 || ty >= oh || tx < 0 || tx >= ow) continue;
                r.v[((b * cout + (c / cg) * og + o) * oh + ty) * ow + tx] +=
                    x.v[((b * cin + c) * h + y) * wd + xx] * w.v[((c * og + o) * kh + i) * kw + j];
              }
  return r;
}

Host host_pool(const Host& x, int64_t k, int64_t s, int64_t p, bool max, bool include_pad) {
  int64_t n = x.shape[0], c = x.shape[1], h = x.shape[2], wd = x.shape[3];
  int64_t oh = (h + 2 * p - k) / s + 1, ow = (wd + 2 * p - k) / s + 1;
  Host r{{n, c, oh, ow}, {}};
  for (int64_t b = 0; b < n * c; ++b)
    for (int64_t y = 0; y < oh; ++y)
      for (int64_t xx = 0; xx < ow; ++xx) {
        double acc = max ? -INFINITY : 0;
        int count = 0;
        for (int64_t i = 0; i < k; ++i)
          for (int64_t j = 0; j < k; ++j) {
            int64_t iy = y * s - p + i, ix = xx * s - p + j;
            bool in = iy >= 0 && iy < h && ix >= 0 && ix < wd;
            count += in || include_pad;
            if (!in) continue;
            double v = x.v[(b * h + iy) * wd + ix];
            acc = max ? std::max(acc, v) : acc + v;
          }
        r.v.push_back(max ? acc : acc / count);
      }
  return r;
}

TEST_CASE("tensor: conv2d, conv_transpose2d and pooling") {
  for (const std::string& dev : test_devices()) {
    INFO("device " << dev);
    Host x = random_host({2, 4, 9, 7}, 1);
    Tensor tx = upload(x, dev);
    struct Conv {
      int64_t cout, k, s, p, d, groups;
    };
    for (Conv c : {Conv{3, 3, 1, 0, 1, 1}, Conv{6, 3, 2, 1, 1, 2}, Conv{4, 2, 1, 2, 2, 4}, Conv{5, 1, 3, 0, 1, 1}}) {
      INFO("conv2d cout " << c.cout << " k " << c.k << " stride " << c.s << " pad " << c.p << " dilation " << c.d << " groups " << c.groups);
      Host w = random_host({c.cout, 4 / c.groups, c.k, c.k}, 2), b = random_host({c.cout}, 3);
      Tensor y = tx.conv2d(upload(w, dev), upload(b, dev), {c.s, c.s}, {c.p, c.p}, {c.d, c.d}, c.groups);
      Host want = host_conv2d(x, w, c.s, c.p, c.d, c.groups);
      for (int64_t k = 0; k < want.numel(); ++k) want.v[k] += b.v[unravel(k, want.shape)[1]];
      check_close(y, want, 1e-5, 1e-5);
      y.realize();
      CHECK(tensor::last_realize().kernels == 1);
    }
    struct Deconv {
      int64_t cout_per_group, k, s, p, op, d, groups;
    };
    for (Deconv c : {Deconv{3, 3, 2, 1, 1, 1, 1}, Deconv{2, 2, 1, 0, 0, 2, 2}, Deconv{1, 3, 3, 2, 2, 1, 4}}) {
      INFO("conv_transpose2d k " << c.k << " stride " << c.s << " pad " << c.p << " output_padding " << c.op << " dilation " << c.d << " groups "
                                 << c.groups);
      Host w = random_host({4, c.cout_per_group, c.k, c.k}, 4);
      Tensor y = tx.conv_transpose2d(upload(w, dev), {}, {c.s, c.s}, {c.p, c.p}, {c.op, c.op}, {c.d, c.d}, c.groups);
      check_close(y, host_conv_transpose2d(x, w, c.s, c.p, c.op, c.d, c.groups), 1e-5, 1e-5);
    }
    check_close(tx.max_pool2d({3, 3}, {2, 2}, {1, 1}), host_pool(x, 3, 2, 1, true, true));
    check_close(tx.max_pool2d({2, 2}), host_pool(x, 2, 2, 0, true, true));
    check_close(tx.avg_pool2d({3, 3}, {2, 2}, {1, 1}), host_pool(x, 3, 2, 1, false, true), 1e-6, 1e-6);
    check_close(tx.avg_pool2d({3, 3}, {2, 2}, {1, 1}, false), host_pool(x, 3, 2, 1, false, false), 1e-6, 1e-6);
  }
}

}  // namespace
}  // namespace ugpu::test
