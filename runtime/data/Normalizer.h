// Normalizer.h -- per-feature affine normalisation fitted on the training set
// and applied to every data set and to single rows at prediction time:
// x' = (x - offset) * scale. Min-max follows Azure ML / ML.NET's default
// ("fixZero": offset 0, scale 1 / max(|min|, |max|), so 0 stays 0; a constant
// feature maps to 0); Gaussian uses the population mean and standard deviation
// (a feature with zero deviation is only centred); a fixed scale divides every
// feature by a given number (`scale:255` is x / 255, the usual image input, as
// a float division so that other frameworks' inputs are reproduced exactly).
// The fitted values serialise to a JSON string for checkpoint metadata and
// parse back exactly. Values past kMaxStoredMagnitude are refused, and a
// normalised value that overflows is an error naming the feature.
#pragma once

#include "runtime/data/Dataset.h"
#include "support/Status.h"

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace netc::data {

/// The largest magnitude netc accepts for a stored weight or normaliser value
/// (checkpoint tensors, a normaliser's offset, scale and 1 / divisor). The
/// largest float is 3.4e38: 1e30 leaves a factor of 3.4e8 for a layer's sum
/// over its inputs (2^24 of them of magnitude 20) before it overflows. Trained
/// weights and fitted normalisers stay many orders of magnitude below it;
/// values past it come from a damaged or hand-made file.
inline constexpr float kMaxStoredMagnitude = 1e30f;

/// The normalisation methods.
enum class NormalizerKind { None, MinMax, Gaussian, GlobalMinMax, Scale };

/// "none", "minmax", "gaussian", "global-minmax" or "scale".
std::string_view normalizerName(NormalizerKind kind);
/// Parses a name written by normalizerName (case-insensitive; "min-max" too).
Expected<NormalizerKind> parseNormalizerKind(std::string_view name);

/// A normalisation method with its setting, as `--normalize` names it.
struct NormalizerSpec {
  NormalizerKind kind = NormalizerKind::MinMax;
  float divisor = 1; ///< Scale only: x' = x / divisor
  NormalizerSpec() = default;
  NormalizerSpec(NormalizerKind k, float d = 1) : kind(k), divisor(k == NormalizerKind::Scale ? d : 1) {}
  bool operator==(const NormalizerSpec &) const = default;
};

/// "minmax", "gaussian", ..., or "scale:255".
std::string normalizerText(const NormalizerSpec &spec);
/// Parses `--normalize`: a kind name, or "scale:S" with S a positive, finite
/// number; the message says what is accepted.
Expected<NormalizerSpec> parseNormalizer(std::string_view text);

/// A fitted per-feature normalizer.
class Normalizer {
public:
  /// The identity (kind None); applies to any feature count.
  Normalizer() = default;

  /// Fits `spec` on `train`'s features.
  static Normalizer fit(const NormalizerSpec &spec, const Dataset &train);

  NormalizerKind kind() const { return spec_.kind; }
  /// The method and its setting (what `--normalize` would name).
  const NormalizerSpec &spec() const { return spec_; }
  /// The feature count it was fitted on (0 for None).
  int64_t featureCount() const { return features_; }
  /// Per-feature values of the affine kinds (empty for None and Scale).
  const std::vector<float> &offset() const { return offset_; }
  const std::vector<float> &scale() const { return scale_; }

  /// Normalises every row of `data` in place; fails when the feature count
  /// differs from the fitted one, or a value overflows (naming the sample
  /// and the feature).
  Status apply(Dataset &data) const;
  /// Normalises one sample's features in place; fails as apply does.
  Status applyRow(std::span<float> row) const;

  /// Fails when an offset or scale exceeds kMaxStoredMagnitude in magnitude,
  /// or a divisor is below its reciprocal, naming the value and its index.
  Status checkRange() const;

  /// A JSON object: {"normalizer": "...", "features": N, "offset": [...],
  /// "scale": [...]}, or for Scale {"normalizer": "scale", "features": N,
  /// "divisor": S}; floats are written so that they parse back bit-exactly.
  std::string toJson() const;
  /// Parses toJson's output, checking kind, sizes, that numbers are finite
  /// 32-bit floats (a number out of range names its field and index) and
  /// checkRange.
  static Expected<Normalizer> fromJson(std::string_view text);

private:
  NormalizerSpec spec_{NormalizerKind::None};
  int64_t features_ = 0;
  std::vector<float> offset_;
  std::vector<float> scale_;
};

} // namespace netc::data
