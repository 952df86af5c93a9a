// OptimizerTest.cpp -- numeric tests of runtime/optim (docs/architecture.md §Tests): each
// optimizer against values worked out by hand (in the comments) for two steps
// on three elements, the fast float kernels against the double references over
// random tensors and many steps (with a cosine-scheduled rate), the state
// layout and name tables, and the hyperparameter validation messages. The
// schedules have their own ScheduleTest.cpp.
#include "runtime/optim/Optimizer.h"
#include "runtime/optim/Schedule.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <vector>

namespace netc::optim {
namespace {

/// One parameter tensor with its optimizer state, stepped by update() or
/// referenceUpdate().
struct Param {
  OptimizerKind kind;
  Hyperparameters hp;
  std::vector<float> w;
  std::vector<std::vector<float>> slots;
  std::vector<float *> slotPointers;
  int64_t step = 0;

  Param(OptimizerKind kind, Hyperparameters hp, std::vector<float> weights)
      : kind(kind), hp(hp), w(std::move(weights)) {
    slots.assign(stateSlots(kind, hp), std::vector<float>(w.size(), 0.0f));
    for (auto &slot : slots)
      slotPointers.push_back(slot.data());
  }
  void apply(const std::vector<float> &g, float lr, bool reference = false) {
    ++step;
    using Update = void (*)(OptimizerKind, float *, const float *, float *const *, int64_t,
                            const Hyperparameters &, int64_t, float);
    Update fn = reference ? Update(&referenceUpdate) : Update(&update);
    fn(kind, w.data(), g.data(), slotPointers.empty() ? nullptr : slotPointers.data(), int64_t(w.size()), hp,
       step, lr);
  }
};

const std::vector<float> kW0 = {1.0f, -2.0f, 0.5f};
const std::vector<float> kG = {0.5f, 0.25f, -1.0f};

void expectWeights(const std::vector<float> &actual, const std::vector<double> &expected, double tol = 1e-6) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i)
    EXPECT_NEAR(actual[i], expected[i], tol) << "element " << i;
}

/// Optimizer state to a relative tolerance. The closed forms below use the
/// decimal hyperparameters, but the kernels see their float values: 0.999f is
/// 0.99900001, so 1 - beta2 is off by 1.3e-5 relative (1 - 0.95f by 2.4e-7).
void expectState(const std::vector<float> &actual, const std::vector<double> &expected, double relTol) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i)
    EXPECT_NEAR(actual[i], expected[i], relTol * std::abs(expected[i])) << "element " << i;
}

// --- SGD ---------------------------------------------------------------------

TEST(Sgd, PlainStepIsLrTimesGradient) {
  // w -= 0.1 g: [1 - 0.05, -2 - 0.025, 0.5 + 0.1].
  Param p(OptimizerKind::Sgd, {}, kW0);
  EXPECT_EQ(p.slots.size(), 0u);
  p.apply(kG, 0.1f);
  expectWeights(p.w, {0.95, -2.025, 0.6});
  // Twice more: each step the same 0.1 g.
  p.apply(kG, 0.1f);
  expectWeights(p.w, {0.9, -2.05, 0.7});
}

TEST(Sgd, WeightDecayAddsToGradient) {
  // g' = g + 0.01 w = [0.51, 0.23, -0.995]; w -= 0.1 g' = [0.949, -2.023, 0.5995].
  Hyperparameters hp;
  hp.weightDecay = 0.01f;
  Param p(OptimizerKind::Sgd, hp, kW0);
  p.apply(kG, 0.1f);
  expectWeights(p.w, {0.949, -2.023, 0.5995});
}

TEST(Sgd, Momentum) {
  // mu = 0.9, the same g twice: v1 = g, w1 = w0 - 0.1 g; v2 = 0.9 g + g = 1.9 g,
  // w2 = w1 - 0.19 g = w0 - 0.29 g = [0.855, -2.0725, 0.79].
  Hyperparameters hp;
  hp.momentum = 0.9f;
  Param p(OptimizerKind::Sgd, hp, kW0);
  ASSERT_EQ(p.slots.size(), 1u);
  p.apply(kG, 0.1f);
  expectWeights(p.w, {0.95, -2.025, 0.6});
  p.apply(kG, 0.1f);
  expectWeights(p.w, {0.855, -2.0725, 0.79});
  expectWeights(p.slots[0], {0.95, 0.475, -1.9}); // v2 = 1.9 g
}

TEST(Sgd, Nesterov) {
  // mu = 0.9: v1 = g, d1 = g + 0.9 v1 = 1.9 g; v2 = 1.9 g, d2 = g + 0.9 v2 = 2.71 g.
  // w2 = w0 - 0.1 (1.9 + 2.71) g = w0 - 0.461 g = [0.7695, -2.11525, 0.961].
  Hyperparameters hp;
  hp.momentum = 0.9f;
  hp.nesterov = true;
  Param p(OptimizerKind::Sgd, hp, kW0);
  p.apply(kG, 0.1f);
  expectWeights(p.w, {0.905, -2.0475, 0.69});
  p.apply(kG, 0.1f);
  expectWeights(p.w, {0.7695, -2.11525, 0.961});
}

// --- Adam --------------------------------------------------------------------

TEST(Adam, FirstStepMovesEachWeightByAboutLrTimesSign) {
  // t = 1: m = 0.1 g, v = 0.001 g^2, so m^ = g, v^ = g^2 and the step is
  // lr g / (|g| + 1e-8) = lr sign(g) (to 1e-8 relative): w = w0 - 0.001 sign(g).
  Hyperparameters hp;
  Param p(OptimizerKind::Adam, hp, kW0);
  ASSERT_EQ(p.slots.size(), 2u);
  p.apply(kG, 0.001f);
  expectWeights(p.w, {0.999, -2.001, 0.501});
  expectState(p.slots[0], {0.05, 0.025, -0.1}, 1e-6);         // 0.1 g
  expectState(p.slots[1], {0.00025, 0.0000625, 0.001}, 2e-5); // 0.001 g^2
}

TEST(Adam, SecondStepUsesBiasCorrection) {
  // g1 = [0.5, 0.25, -1], g2 = [0.5, -0.25, 3]; 1 - b1^2 = 0.19, 1 - b2^2 = 0.001999.
  //  e0: g constant, so m^ = 0.5, v^ = 0.25 and the step is again 0.001.
  //  e1: m = 0.9 (0.025) + 0.1 (-0.25) = -0.0025, m^ = -0.0131579; v^ = 0.0625;
  //      step = 0.001 (-0.0131579) / 0.25 = -5.26316e-5.
  //  e2: m = 0.9 (-0.1) + 0.1 (3) = 0.21, m^ = 1.105263; v = 0.999 (0.001) +
  //      0.001 (9) = 0.009999, v^ = 5.002001; step = 0.001 (1.105263) / 2.236515
  //      = 4.941898e-4.
  Param p(OptimizerKind::Adam, {}, kW0);
  p.apply(kG, 0.001f);
  p.apply({0.5f, -0.25f, 3.0f}, 0.001f);
  expectWeights(p.w, {0.998, -2.0009473684, 0.5005058102});
  expectState(p.slots[0], {0.095, -0.0025, 0.21}, 1e-6);
  expectState(p.slots[1], {0.00049975, 0.0001249375, 0.009999}, 2e-5);
}

TEST(Adam, WeightDecayIsAddedToTheGradient) {
  // g' = g + wd w with wd = 0.5 turns e2's g = -1 into -0.75; the first step is
  // still lr sign(g'), so a decay that flips the sign flips the step:
  // g'0 = 0.5 + 0.5 = 1 (+), g'1 = 0.25 - 1 = -0.75 (flipped), g'2 = -0.75 (-).
  Hyperparameters hp;
  hp.weightDecay = 0.5f;
  Param p(OptimizerKind::Adam, hp, kW0);
  p.apply(kG, 0.001f);
  expectWeights(p.w, {0.999, -1.999, 0.501});
}

// --- AdaDelta ----------------------------------------------------------------

TEST(AdaDelta, FirstTwoSteps) {
  // rho = 0.95, eps = 1e-6, lr = 1, g = [1, -0.5, 2].
  // Step 1: E[g^2] = 0.05 g^2; |dx| = sqrt(eps) / sqrt(0.05 g^2 + eps) |g|
  //   = 1e-3 / sqrt(0.050001) = 4.472091e-3 (e0), 4.471957e-3 (e1), 4.472125e-3 (e2),
  //   about sqrt(eps / 0.05) for every element: AdaDelta's first step ignores |g|.
  //   E[dx^2] = 0.05 dx^2 = 9.9998e-7, 9.9992e-7, 9.99995e-7.
  // Step 2: E[g^2] = 0.0975 g^2; dx = sqrt(E[dx^2] + eps) / sqrt(E[g^2] + eps) g
  //   = 4.529062e-3, -4.528925e-3, 4.529097e-3.
  const std::vector<float> g = {1.0f, -0.5f, 2.0f};
  Param p(OptimizerKind::AdaDelta, {}, kW0);
  ASSERT_EQ(p.slots.size(), 2u);
  p.apply(g, 1.0f);
  expectWeights(p.w, {0.9955279088, -1.9955280429, 0.4955278752});
  expectState(p.slots[0], {0.05, 0.0125, 0.2}, 1e-6);
  expectState(p.slots[1], {9.999800004e-7, 9.999200064e-7, 9.99995e-7}, 1e-6);
  p.apply(g, 1.0f);
  expectWeights(p.w, {0.9909988465, -1.9909991183, 0.4909987786});
  expectState(p.slots[0], {0.0975, 0.024375, 0.39}, 1e-6);
}

TEST(AdaDelta, LearningRateScalesTheStep) {
  // lr = 0.5 halves step 1: w0 - 0.5 (4.472091e-3) for e0.
  Param p(OptimizerKind::AdaDelta, {}, {1.0f});
  p.apply({1.0f}, 0.5f);
  expectWeights(p.w, {1.0 - 0.5 * 4.4720912343e-3});
}

// --- Fast kernels against the references ----------------------------------------

struct Config {
  const char *name;
  OptimizerKind kind;
  Hyperparameters hp;
};

std::vector<Config> configs() {
  auto with = [](std::function<void(Hyperparameters &)> set) {
    Hyperparameters hp;
    set(hp);
    return hp;
  };
  return {
      {"sgd", OptimizerKind::Sgd, {}},
      {"sgd+wd", OptimizerKind::Sgd, with([](auto &hp) { hp.weightDecay = 1e-2f; })},
      {"sgd+momentum", OptimizerKind::Sgd, with([](auto &hp) { hp.momentum = 0.9f; })},
      {"sgd+nesterov+wd", OptimizerKind::Sgd, with([](auto &hp) {
         hp.momentum = 0.5f;
         hp.nesterov = true;
         hp.weightDecay = 1e-3f;
       })},
      {"adam", OptimizerKind::Adam, with([](auto &hp) { hp.learningRate = 1e-3f; })},
      {"adam+wd", OptimizerKind::Adam, with([](auto &hp) {
         hp.learningRate = 1e-2f;
         hp.weightDecay = 1e-2f;
         hp.beta2 = 0.99f;
       })},
      {"adadelta", OptimizerKind::AdaDelta, with([](auto &hp) { hp.learningRate = 1.0f; })},
      {"adadelta+wd", OptimizerKind::AdaDelta, with([](auto &hp) {
         hp.learningRate = 0.5f;
         hp.weightDecay = 1e-2f;
         hp.decay = 0.9f;
       })},
  };
}

TEST(FastVersusReference, RandomTensorsManySteps) {
  constexpr int64_t kCount = 1003; // not a multiple of any vector width
  constexpr int kSteps = 300;
  const Schedule cosine = *parseSchedule("cosine", 10);
  for (const Config &config : configs()) {
    SCOPED_TRACE(config.name);
    std::mt19937 rng(1234);
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    std::vector<float> w0(kCount);
    for (float &x : w0)
      x = uniform(rng);
    Param fast(config.kind, config.hp, w0), reference(config.kind, config.hp, w0);
    std::vector<float> g(kCount);
    for (int s = 0; s < kSteps; ++s) {
      // Gradients of varying scale, and some exact zeros.
      const float scale = std::pow(10.0f, float(s % 5) - 2);
      for (float &x : g)
        x = uniform(rng) * scale;
      g[s % kCount] = 0;
      const float lr = scheduledLearningRate(cosine, config.hp.learningRate, s / 30, (s % 30) / 30.0);
      fast.apply(g, lr);
      reference.apply(g, lr, /*reference=*/true);
    }
    double worst = 0;
    for (int64_t i = 0; i < kCount; ++i) {
      const double r = reference.w[i];
      worst = std::max(worst, std::abs(fast.w[i] - r) / std::max(1.0, std::abs(r)));
    }
    // Float rounding (6e-8 a step) over 300 steps, amplified up to 1/(1-mu) =
    // 10 by momentum, bounds the drift near 2e-4; it is about 1.6e-5 in practice.
    EXPECT_LT(worst, 5e-5);
    for (size_t slot = 0; slot < fast.slots.size(); ++slot)
      for (int64_t i = 0; i < kCount; ++i) {
        const double r = reference.slots[slot][i];
        ASSERT_NEAR(fast.slots[slot][i], r, 1e-4 * std::abs(r) + 1e-12)
            << "slot " << slot << " element " << i;
      }
  }
}

TEST(FastVersusReference, RangesUpdateIndependently) {
  // The updates are element-wise: two halves give exactly the whole.
  for (const Config &config : configs()) {
    SCOPED_TRACE(config.name);
    std::vector<float> w0 = {0.3f, -0.1f, 0.7f, 0.2f, -0.9f}, g = {0.1f, 0.2f, -0.3f, 0.4f, -0.5f};
    Param whole(config.kind, config.hp, w0), split(config.kind, config.hp, w0);
    for (int s = 1; s <= 3; ++s) {
      whole.apply(g, config.hp.learningRate);
      std::vector<float *> tail;
      for (auto &slot : split.slots)
        tail.push_back(slot.data() + 2);
      update(config.kind, split.w.data(), g.data(), split.slotPointers.data(), 2, config.hp, s,
             config.hp.learningRate);
      update(config.kind, split.w.data() + 2, g.data() + 2, tail.data(), 3, config.hp, s,
             config.hp.learningRate);
    }
    EXPECT_EQ(whole.w, split.w);
    EXPECT_EQ(whole.slots, split.slots);
  }
}

TEST(FastVersusReference, EmptyTensorIsANoOp) {
  update(OptimizerKind::Adam, nullptr, nullptr, nullptr, 0, {}, 1, 0.1f);
  referenceUpdate(OptimizerKind::AdaDelta, nullptr, nullptr, nullptr, 0, {}, 1, 1.0f);
}

// --- Tables and validation -----------------------------------------------------

TEST(OptimizerTables, NamesRoundTrip) {
  for (OptimizerKind kind : {OptimizerKind::Sgd, OptimizerKind::Adam, OptimizerKind::AdaDelta})
    EXPECT_EQ(parseOptimizer(optimizerName(kind)), kind);
  EXPECT_EQ(optimizerName(OptimizerKind::AdaDelta), "adadelta");
  EXPECT_FALSE(parseOptimizer("Adam"));
  EXPECT_FALSE(parseOptimizer("rmsprop"));
  EXPECT_FALSE(parseOptimizer(""));
  EXPECT_EQ(optimizerChoices(), "sgd, adam, adadelta");
}

TEST(OptimizerTables, StateLayoutAndDefaults) {
  Hyperparameters hp;
  EXPECT_EQ(stateSlots(OptimizerKind::Sgd, hp), 0);
  hp.momentum = 0.5f;
  EXPECT_EQ(stateSlots(OptimizerKind::Sgd, hp), 1);
  EXPECT_EQ(stateSlots(OptimizerKind::Adam, hp), 2);
  EXPECT_EQ(stateSlots(OptimizerKind::AdaDelta, hp), 2);
  EXPECT_EQ(stateSlotName(OptimizerKind::Sgd, 0), "momentum_buffer");
  EXPECT_EQ(stateSlotName(OptimizerKind::Adam, 1), "exp_avg_sq");
  EXPECT_EQ(stateSlotName(OptimizerKind::AdaDelta, 0), "square_avg");
  EXPECT_FLOAT_EQ(defaultLearningRate(OptimizerKind::Sgd), 0.1f);
  EXPECT_FLOAT_EQ(defaultLearningRate(OptimizerKind::AdaDelta), 1.0f);
}

TEST(Validation, DefaultsAreValid) {
  EXPECT_EQ(validate(Hyperparameters{}), "");
}

TEST(Validation, MessagesNameTheFlag) {
  struct Case {
    std::function<void(Hyperparameters &)> set;
    const char *message;
  };
  const Case cases[] = {
      {[](auto &hp) { hp.learningRate = -0.1f; }, "--lr must be a positive number, got -0.1"},
      {[](auto &hp) { hp.learningRate = 0; }, "--lr must be a positive number, got 0"},
      {[](auto &hp) { hp.learningRate = INFINITY; }, "--lr must be a positive number, got inf"},
      {[](auto &hp) { hp.momentum = 1; }, "--momentum must be in [0, 1), got 1"},
      {[](auto &hp) { hp.momentum = -0.5f; }, "--momentum must be in [0, 1), got -0.5"},
      {[](auto &hp) { hp.momentum = NAN; }, "--momentum must be in [0, 1), got nan"},
      {[](auto &hp) { hp.nesterov = true; }, "--nesterov needs --momentum greater than 0"},
      {[](auto &hp) { hp.weightDecay = -1e-4f; }, "--weight-decay must be a non-negative number, got -1e-04"},
      {[](auto &hp) { hp.beta1 = 1; }, "--beta1 must be in [0, 1), got 1"},
      {[](auto &hp) { hp.beta2 = 1.5f; }, "--beta2 must be in [0, 1), got 1.5"},
      {[](auto &hp) { hp.epsilon = 0; }, "--epsilon must be a positive number, got 0"},
      {[](auto &hp) { hp.decay = 0; }, "--decay must be in (0, 1), got 0"},
      {[](auto &hp) { hp.decay = 1; }, "--decay must be in (0, 1), got 1"},
      {[](auto &hp) { hp.conditioning = -1e-6f; }, "--conditioning must be a positive number, got -1e-06"},
  };
  for (const Case &c : cases) {
    Hyperparameters hp;
    c.set(hp);
    EXPECT_EQ(validate(hp), c.message);
  }
}

} // namespace
} // namespace netc::optim
