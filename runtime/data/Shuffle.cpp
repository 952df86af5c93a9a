// Shuffle.cpp -- seeded sample orders and the validation split (see
// Shuffle.h). Every random stream is a std::mt19937_64 seeded with a
// splitmix64 mix of the user's seed and a stream number (the epoch, or a
// reserved number for the validation split), so streams are independent and
// each depends only on its inputs.
#include "runtime/data/Shuffle.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cassert>
#include <cmath>
#include <numeric>

namespace netc::data {
namespace {

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/// The generator seed of stream `stream` under the user's `seed`.
uint64_t streamSeed(uint64_t seed, uint64_t stream) {
  return splitmix64(seed ^ splitmix64(stream));
}

/// The validation split's stream (epochs use 0 .. 2^63-1).
constexpr uint64_t kValidationStream = ~uint64_t{0};

std::vector<int64_t> seededPermutation(int64_t count, uint64_t seed, uint64_t stream) {
  std::vector<int64_t> order(static_cast<size_t>(count));
  std::iota(order.begin(), order.end(), int64_t{0});
  std::mt19937_64 rng(streamSeed(seed, stream));
  shuffleInPlace(order, rng);
  return order;
}

} // namespace

uint64_t boundedRandom(std::mt19937_64 &rng, uint64_t bound) {
  assert(bound >= 1);
  // 2^64 mod bound: the draws below it would make the low results likelier.
  const uint64_t threshold = (0 - bound) % bound;
  while (true) {
    uint64_t draw = rng();
    if (draw >= threshold)
      return draw % bound;
  }
}

void shuffleInPlace(std::span<int64_t> values, std::mt19937_64 &rng) {
  for (size_t i = values.size(); i > 1; --i) {
    auto j = static_cast<size_t>(boundedRandom(rng, i));
    std::swap(values[i - 1], values[j]);
  }
}

std::vector<int64_t> epochPermutation(int64_t count, uint64_t seed, int64_t epoch) {
  assert(count >= 0 && epoch >= 0);
  return seededPermutation(count, seed, static_cast<uint64_t>(epoch));
}

std::string ShuffleState::toJson() const {
  nlohmann::json j = {{"seed", seed}, {"epoch", epoch}, {"position", position}};
  return j.dump();
}

Expected<ShuffleState> ShuffleState::fromJson(std::string_view text) {
  nlohmann::json j = nlohmann::json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object())
    return fail("shuffle state: not a JSON object");
  ShuffleState state;
  auto seed = j.find("seed");
  if (seed == j.end() || !seed->is_number_unsigned())
    return fail("shuffle state: \"seed\" is missing or not a non-negative integer");
  state.seed = seed->get<uint64_t>();
  for (auto [key, field] : {std::pair{"epoch", &state.epoch}, std::pair{"position", &state.position}}) {
    auto it = j.find(key);
    if (it == j.end() || !it->is_number_unsigned() || it->get<uint64_t>() > uint64_t{INT64_MAX})
      return fail(fmt::format("shuffle state: \"{}\" is missing or not a non-negative integer", key));
    *field = it->get<int64_t>();
  }
  return state;
}

EpochShuffler::EpochShuffler(int64_t count, uint64_t seed, bool shuffle)
    : count_(count), seed_(seed), shuffle_(shuffle) {
  assert(count >= 0);
  build();
}

Expected<EpochShuffler> EpochShuffler::resume(int64_t count, const ShuffleState &state, bool shuffle) {
  if (state.epoch < 0)
    return fail(fmt::format("shuffle state: epoch {} is negative", state.epoch));
  if (state.position < 0 || state.position > count)
    return fail(fmt::format("shuffle state: position {} is outside an epoch of {} samples (was the data set "
                            "changed since the checkpoint?)",
                            state.position, count));
  EpochShuffler shuffler(0, state.seed, shuffle);
  shuffler.count_ = count;
  shuffler.epoch_ = state.epoch;
  shuffler.build();
  shuffler.position_ = state.position;
  return shuffler;
}

void EpochShuffler::build() {
  if (shuffle_) {
    order_ = epochPermutation(count_, seed_, epoch_);
  } else {
    order_.resize(static_cast<size_t>(count_));
    std::iota(order_.begin(), order_.end(), int64_t{0});
  }
}

std::span<const int64_t> EpochShuffler::remaining() const {
  return std::span<const int64_t>(order_).subspan(static_cast<size_t>(position_));
}

std::span<const int64_t> EpochShuffler::take(int64_t n) {
  assert(n >= 0);
  int64_t k = std::min(n, count_ - position_);
  std::span<const int64_t> taken =
      std::span<const int64_t>(order_).subspan(static_cast<size_t>(position_), static_cast<size_t>(k));
  position_ += k;
  return taken;
}

void EpochShuffler::advance(int64_t n) {
  assert(n >= 0);
  position_ = std::min(count_, position_ + n);
}

void EpochShuffler::nextEpoch() {
  ++epoch_;
  position_ = 0;
  build();
}

Expected<ValidationSplit> splitValidation(const Dataset &data, double fraction, uint64_t seed) {
  if (!(fraction >= 0.0 && fraction < 1.0))
    return fail(fmt::format("validation fraction {} is out of range; expected a value in [0, 1)", fraction));
  auto validationCount = static_cast<int64_t>(std::llround(fraction * static_cast<double>(data.count)));
  if (fraction > 0.0 && validationCount == 0)
    validationCount = 1;
  if (data.count - validationCount < 1)
    return fail(fmt::format("{}: a validation fraction of {} of {} samples leaves none to train on",
                            data.origin, fraction, data.count));
  std::vector<int64_t> order = seededPermutation(data.count, seed, kValidationStream);
  auto middle = order.begin() + validationCount;
  std::sort(order.begin(), middle);
  std::sort(middle, order.end());
  ValidationSplit split;
  split.validation =
      selectRows(data, std::span<const int64_t>(order.data(), static_cast<size_t>(validationCount)));
  split.train =
      selectRows(data, std::span<const int64_t>(order).subspan(static_cast<size_t>(validationCount)));
  return split;
}

} // namespace netc::data
