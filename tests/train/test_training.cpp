// Training end to end: an MLP on a two-class spiral and a small CNN (with BatchNorm) on 8x8 digit
// images, both generated here, reach a stated accuracy in a fixed number of steps; the same seed gives
// the same losses bit for bit; the memory of one step is bounded; a checkpoint resumes bit-identically;
// a Jit-captured step replays as one graph with the same losses.
#include <doctest/doctest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "llm/checkpoint.h"
#include "tensor/examples.h"
#include "tensor/grad.h"
#include "tensor/jit.h"
#include "tensor/nn.h"
#include "tensor/optim.h"
#include "tests/tensor/host.h"
#include "tests/train/common.h"

namespace ugpu::test {
namespace {
namespace dt = tensor::dtypes;
namespace nn = tensor::nn;
namespace optim = tensor::optim;
namespace examples = tensor::examples;
using optim::LR;

// ---- data ----------------------------------------------------------------------------------------

using Data = examples::Dataset;
using Mlp = examples::SpiralMlp;
using examples::accuracy;
using examples::spiral;

uint64_t lcg(uint64_t& s) {
  s = s * 6364136223846793005ull + 1442695040888963407ull;
  return s >> 11;
}
double uniform01(uint64_t& s) { return static_cast<double>(lcg(s)) / 9007199254740992.0; }

// 8x8 images of the digits 0-9 (a 5x7 font), shifted by up to one pixel, with noise.
Data digits(int64_t count, uint64_t seed) {
  static const char* font[10][7] = {
      {".###.", "#...#", "#..##", "#.#.#", "##..#", "#...#", ".###."}, {"..#..", ".##..", "..#..", "..#..", "..#..", "..#..", ".###."},
      {".###.", "#...#", "....#", "...#.", "..#..", ".#...", "#####"}, {"####.", "....#", "....#", ".###.", "....#", "....#", "####."},
      {"...#.", "..##.", ".#.#.", "#..#.", "#####", "...#.", "...#."}, {"#####", "#....", "####.", "....#", "....#", "#...#", ".###."},
      {".###.", "#....", "#....", "####.", "#...#", "#...#", ".###."}, {"#####", "....#", "...#.", "..#..", ".#...", ".#...", ".#..."},
      {".###.", "#...#", "#...#", ".###.", "#...#", "#...#", ".###."}, {".###.", "#...#", "#...#", ".####", "....#", "....#", ".###."},
  };
  Data d;
  uint64_t s = seed;
  for (int64_t k = 0; k < count; ++k) {
    int c = static_cast<int>(lcg(s) % 10);
    int dx = static_cast<int>(lcg(s) % 3) - 1 + 1, dy = static_cast<int>(lcg(s) % 2);  // column offset 0..2, row offset 0..1
    for (int r = 0; r < 8; ++r)
      for (int col = 0; col < 8; ++col) {
        int fr = r - dy, fc = col - dx;
        bool on = fr >= 0 && fr < 7 && fc >= 0 && fc < 5 && font[c][fr][fc] == '#';
        d.x.push_back(static_cast<float>((on ? 1.0 : 0.0) + 0.3 * (uniform01(s) - 0.5)));
      }
    d.y.push_back(c);
  }
  d.n = count;
  return d;
}

// ---- models ----------------------------------------------------------------------------------------

struct Cnn {
  nn::Conv2d c1, c2;
  nn::BatchNorm2d bn;
  nn::Linear fc;
  Cnn(uint64_t seed, const std::string& dev)
      : c1(1, 8, {3, 3}, seed, {1, 1}, {1, 1}, {1, 1}, 1, true, dt::float32, dev),
        c2(8, 16, {3, 3}, seed + 1, {1, 1}, {1, 1}, {1, 1}, 1, true, dt::float32, dev),
        bn(8, 1e-5, 0.1, dt::float32, dev),
        fc(16 * 2 * 2, 10, seed + 2, true, dt::float32, dev) {}
  Tensor operator()(const Tensor& x) {
    Tensor h = bn(c1(x)).relu().max_pool2d({2, 2});
    h = c2(h).relu().max_pool2d({2, 2});
    return fc(h.flatten(1));
  }
  nn::Params params() const { return nn::parameters({{"c1", &c1}, {"bn", &bn}, {"c2", &c2}, {"fc", &fc}}); }
};

// Full-batch Adam on the spiral, each step replayed by a Jit from the third on: the losses of
// `steps` steps, and what the realize of an eager step did.
std::vector<float> train_mlp(Mlp& m, const Data& d, const std::string& dev, int steps, tensor::RealizeStats* eager = nullptr) {
  Tensor x = Tensor::from(d.x, {d.n, 2}, dev), y = Tensor::from(d.y, {d.n}, dev);
  optim::Adam opt(m.params(), LR::constant(0.02));
  tensor::Jit step([&](const std::vector<Tensor>& in, const tensor::Jit::Vars&) {
    Tensor loss = nn::cross_entropy(m(in[0]), in[1]);
    opt.zero_grad();
    loss.backward();
    opt.step({loss});
    return std::vector<Tensor>{loss};
  });
  std::vector<float> losses;
  for (int s = 0; s < steps; ++s) {
    losses.push_back(step({x, y})[0].to_vector<float>()[0]);
    if (s == 0 && eager) *eager = tensor::last_realize();
  }
  return losses;
}

std::vector<std::string> train_devices() {
  std::vector<std::string> d = train_test_devices();
  if (std::erase(d, std::string("emu:qcom")))
    MESSAGE("emu:qcom: the training runs are not repeated there (its executor is too slow for hundreds of steps)");
  return d;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("training: an MLP learns a two-class spiral; the same seed gives the same losses bit for bit") {
  const Data train = spiral(100, 1), test = spiral(100, 2);
  for (const std::string& dev : train_devices()) {
    CAPTURE(dev);
    Mlp m(7, dev);
    tensor::RealizeStats last;
    std::vector<float> losses = train_mlp(m, train, dev, 80, &last);
    MESSAGE(dev << ": spiral loss " << losses.front() << " -> " << losses.back());
    CHECK(losses.back() < 0.1 * losses.front());
    double acc = accuracy(m(Tensor::from(test.x, {test.n, 2}, dev)), test.y);
    MESSAGE(dev << ": spiral test accuracy " << acc);
    CHECK(acc >= 0.95);
    // One step's realize: the intermediates (arena) and the gradients and loss it writes. Its
    // activations are 200 x (32 + 32 + 2) floats; gradients as many as parameters (1190).
    const int64_t activations = 200 * (32 + 32 + 2) * 4, params = (2 * 32 + 32 + 32 * 32 + 32 + 32 * 2 + 2) * 4;
    MESSAGE(dev << ": one step: arena " << last.arena_bytes << " bytes, outputs " << last.output_bytes << " bytes, " << last.kernels << " kernels");
    CHECK(last.arena_bytes <= 4 * activations);
    CHECK(last.output_bytes <= params + 64);
    // The same seed, again: the same losses, bit for bit.
    Mlp again(7, dev);
    CHECK(same_bits(train_mlp(again, train, dev, 10), std::vector<float>(losses.begin(), losses.begin() + 10)));
  }
}

TEST_CASE("training: a small CNN with BatchNorm learns 8x8 digits") {
  const Data train = digits(512, 3), test = digits(256, 4);
  const std::string dev = "cpu";
  constexpr int kSteps = 80;
  Cnn m(11, dev);
  optim::SGD opt(m.params(), LR::cosine(0.05, kSteps, 0.005), {0.9, 0, 1e-4, true});
  // Each step a Jit replay from the third on; BatchNorm's running statistics are updated in it.
  tensor::Jit step([&](const std::vector<Tensor>& in, const tensor::Jit::Vars&) {
    Tensor loss = nn::cross_entropy(m(in[0]), in[1]);
    opt.zero_grad();
    loss.backward();
    opt.step({loss, m.bn.running_mean, m.bn.running_var, m.bn.num_batches_tracked});
    return std::vector<Tensor>{loss};
  });
  const int64_t batch = 64;
  std::vector<float> losses;
  for (int s = 0; s < kSteps; ++s) {
    int64_t at = (s * batch) % train.n;
    Tensor x = Tensor::from(std::vector<float>(train.x.begin() + at * 64, train.x.begin() + (at + batch) * 64), {batch, 1, 8, 8}, dev);
    Tensor y = Tensor::from(std::vector<int32_t>(train.y.begin() + at, train.y.begin() + at + batch), {batch}, dev);
    losses.push_back(step({x, y})[0].to_vector<float>()[0]);
  }
  CHECK(m.bn.num_batches_tracked.item() == kSteps);
  m.bn.training = false;
  double acc = accuracy(m(Tensor::from(test.x, {test.n, 1, 8, 8}, dev)), test.y);
  MESSAGE("digits: loss " << losses.front() << " -> " << losses.back() << ", test accuracy (BatchNorm in eval) " << acc);
  CHECK(acc >= 0.9);
}

TEST_CASE("training: a checkpoint resumes bit-identically; a bad file changes nothing") {
  const Data d = spiral(50, 5);
  for (const std::string& dev : train_devices()) {
    CAPTURE(dev);
    Tensor x = Tensor::from(d.x, {d.n, 2}, dev), y = Tensor::from(d.y, {d.n}, dev);
    auto make = [&](Mlp& m) { return std::make_unique<optim::AdamW>(m.params(), LR::cosine(0.01, 20)); };
    auto everything = [](const Mlp& m, const optim::Optimizer& o) {
      nn::Params all = m.params();
      for (auto& [n, t] : o.state()) all.push_back({"optimizer." + n, t});
      return all;
    };
    auto steps = [&](Mlp& m, optim::Optimizer& o, int n) {
      std::vector<float> losses;
      for (int s = 0; s < n; ++s) {
        Tensor loss = nn::cross_entropy(m(x), y);
        o.zero_grad();
        loss.backward();
        o.step({loss});
        losses.push_back(loss.to_vector<float>()[0]);
      }
      return losses;
    };
    Mlp m(3, dev);
    auto opt = make(m);
    steps(m, *opt, 3);
    const std::string path = (std::filesystem::temp_directory_path() / ("ugpu-ckpt-" + std::to_string(getpid()) + ".safetensors")).string();
    nn::Params all = everything(m, *opt);
    llm::save_safetensors(path, all, {{"format", "ugpu"}});
    std::vector<float> first = steps(m, *opt, 3);
    llm::load_safetensors(path, all);
    CHECK(opt->steps() == 3);
    CHECK(same_bits(steps(m, *opt, 3), first));
    // A new model and optimizer (other seeds) loaded from the file continue the same way.
    Mlp fresh(99, dev);
    auto opt2 = make(fresh);
    llm::load_safetensors(path, everything(fresh, *opt2));
    CHECK(same_bits(steps(fresh, *opt2, 3), first));

    // Bad files: an Error naming the problem, and nothing written.
    std::vector<float> before = m.l1.weight.to_vector<float>();
    const std::string bad = path + ".bad";
    {
      std::ifstream in(path, std::ios::binary);
      std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      std::ofstream out(bad, std::ios::binary);
      out.write(bytes.data(), static_cast<std::streamsize>(bytes.size() / 2));
    }
    CHECK(error_of([&] { llm::load_safetensors(bad, all); }).find(bad) == 0);
    nn::Params wrong_shape = all;
    wrong_shape[0].second = Tensor::zeros({3, 3}, dt::float32, dev);
    llm::save_safetensors(bad, wrong_shape);
    CHECK(error_of([&] { llm::load_safetensors(bad, all); }).find("tensor 'l1.weight' has shape [3,3]") != std::string::npos);
    nn::Params more = all;
    more.push_back({"extra", Tensor::zeros({1}, dt::float32, dev)});
    CHECK(error_of([&] { llm::load_safetensors(path, more); }).find("has no tensor 'extra'") != std::string::npos);
    llm::save_safetensors(bad, more);
    CHECK(error_of([&] { llm::load_safetensors(bad, all); }).find("holds tensor 'extra', which nothing loads") != std::string::npos);
    CHECK(m.l1.weight.to_vector<float>() == before);
    m.l1.weight.assign(Tensor::zeros({32, 2}, dt::float32, dev)).realize();
    llm::load_safetensors(bad, all, false);  // not strict: what is asked for loads, the rest is ignored
    CHECK(m.l1.weight.to_vector<float>() == before);
    CHECK(error_of([&] { llm::save_safetensors(bad, {{"a", x}, {"a", x}}); }).find("given twice") != std::string::npos);
    std::filesystem::remove(path);
    std::filesystem::remove(bad);
  }
}

TEST_CASE("training: a Jit-captured step replays as one graph with the same losses") {
  const Data d = spiral(50, 6);
  for (const std::string& dev : train_devices()) {
    CAPTURE(dev);
    auto run = [&](bool jit) {
      Mlp m(5, dev);
      optim::SGD opt(m.params(), LR::step(0.1, 4, 0.5), {0.9, 0, 0, false});
      Tensor x = Tensor::from(d.x, {d.n, 2}, dev), y = Tensor::from(d.y, {d.n}, dev);
      auto body = [&](const std::vector<Tensor>& in, const tensor::Jit::Vars&) {
        Tensor loss = nn::cross_entropy(m(in[0]), in[1]);
        opt.zero_grad();
        loss.backward();
        opt.step({loss});
        return std::vector<Tensor>{loss};
      };
      tensor::Jit step(body);
      std::vector<float> losses;
      for (int s = 0; s < 8; ++s) losses.push_back((jit ? step({x, y}) : body({x, y}, {}))[0].to_vector<float>()[0]);
      if (jit) {
        CHECK(step.captured());
        MESSAGE(dev << ": a training step is " << step.kernels() << " kernels in one graph");
        CHECK(step.kernels() > 0);
        CHECK(opt.steps() == 8);
      }
      return losses;
    };
    CHECK(same_bits(run(false), run(true)));
  }
}

}  // namespace ugpu::test
