// Shuffle.h -- seeded, platform-independent sample orders. Each epoch's order
// is a Fisher-Yates shuffle driven by std::mt19937_64 (whose output the C++
// standard fixes) and our own unbiased bounded integer, so the same seed gives
// the same order with every standard library. The permutation of an epoch
// depends only on (seed, epoch, count), so a run resumed from a serialised
// (seed, epoch, position) continues exactly where it stopped. Also the seeded
// validation split.
#pragma once

#include "runtime/data/Dataset.h"
#include "support/Status.h"

#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace netc::data {

/// A uniformly distributed integer in [0, bound) (bound >= 1), without the
/// modulo bias: draws again while the draw falls in the short last interval.
uint64_t boundedRandom(std::mt19937_64 &rng, uint64_t bound);

/// Shuffles `values` in place (Fisher-Yates, from the back).
void shuffleInPlace(std::span<int64_t> values, std::mt19937_64 &rng);

/// The order of `count` samples in `epoch` for `seed`.
std::vector<int64_t> epochPermutation(int64_t count, uint64_t seed, int64_t epoch);

/// Where a shuffled pass over the data stands; enough to resume it.
struct ShuffleState {
  uint64_t seed = 0;
  int64_t epoch = 0;
  /// Samples of this epoch already handed out.
  int64_t position = 0;

  /// {"seed": S, "epoch": E, "position": P}
  std::string toJson() const;
  /// Parses toJson's output.
  static Expected<ShuffleState> fromJson(std::string_view text);
  bool operator==(const ShuffleState &) const = default;
};

/// Hands out sample indices epoch after epoch, each epoch in a fresh seeded
/// order (or in file order when shuffling is off).
class EpochShuffler {
public:
  /// Starts at epoch 0, position 0.
  EpochShuffler(int64_t count, uint64_t seed, bool shuffle = true);
  /// Continues from a saved state; fails when its position is past the end of
  /// an epoch of `count` samples or its epoch is negative.
  static Expected<EpochShuffler> resume(int64_t count, const ShuffleState &state, bool shuffle = true);

  /// The current epoch's full order.
  const std::vector<int64_t> &order() const { return order_; }
  /// The rest of the current epoch's order (from the current position).
  std::span<const int64_t> remaining() const;
  /// The next up to `n` indices of the current epoch (fewer at its end, none
  /// when it is over); advances the position.
  std::span<const int64_t> take(int64_t n);
  /// Marks `n` more samples of the current epoch as handed out (for callers
  /// that consume remaining() themselves, e.g. through a prefetcher).
  void advance(int64_t n);
  bool epochDone() const { return position_ >= count_; }
  /// Moves to the next epoch, position 0.
  void nextEpoch();

  int64_t count() const { return count_; }
  int64_t epoch() const { return epoch_; }
  int64_t position() const { return position_; }
  ShuffleState state() const { return {seed_, epoch_, position_}; }

private:
  void build();

  int64_t count_;
  uint64_t seed_;
  bool shuffle_;
  int64_t epoch_ = 0;
  int64_t position_ = 0;
  std::vector<int64_t> order_;
};

/// A training set split into the part trained on and a held-out validation
/// part.
struct ValidationSplit {
  Dataset train;
  Dataset validation;
};

/// Carves round(fraction × count) seeded-random samples out of `data` as a
/// validation set (each part keeps the samples' original order). `fraction`
/// must lie in [0, 1) and leave at least one training sample; a positive
/// fraction takes at least one sample.
Expected<ValidationSplit> splitValidation(const Dataset &data, double fraction, uint64_t seed);

} // namespace netc::data
