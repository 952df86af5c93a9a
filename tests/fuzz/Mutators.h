// Mutators.h -- the inputs of the mutation test (MutationTest.cpp): seeded
// mutants of the example networks and a fixed set of hostile stress inputs.
// Everything here is a pure function of its arguments (a splitmix64 PRNG, no
// std::random_device), so a run, and any one mutant, repeats exactly.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace netc::fuzz {

/// One seed file of the corpus.
struct Example {
  std::string name;
  std::string text;
  /// The feature count the example needs, from a "--input-size N" in its
  /// comments (hello-world.net has an `auto` input only the data can size).
  std::optional<int64_t> inputSize;
};

/// One mutant and how it was made.
struct Mutant {
  std::string text;
  std::string recipe; // "mnist.net: replace-number, truncate"
  uint64_t optionsSelector = 0;
  std::optional<int64_t> inputSize; // the example's hint, with selector 0
};

/// Mutant `iteration` of run `seed`: a pure function of the two (and the
/// examples), so a failure replays with `--seed S --only I`.
Mutant makeMutant(uint64_t seed, uint64_t iteration, const std::vector<Example> &examples);

/// A fixed hostile input with a name to report it by.
struct StressCase {
  std::string name;
  std::string text;
};

/// Fixed hostile inputs, checked once per run: the extremes that random
/// mutants reach too rarely or that would make every mutant slow.
std::vector<StressCase> stressCases(const std::vector<Example> &examples);

} // namespace netc::fuzz
