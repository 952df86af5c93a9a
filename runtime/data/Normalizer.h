// Normalizer.h -- per-feature affine normalisation fitted on the training set
// and applied to every data set and to single rows at prediction time:
// x' = (x - offset) * scale. Min-max follows Azure ML / ML.NET's default
// ("fixZero": offset 0, scale 1 / max(|min|, |max|), so 0 stays 0; a constant
// feature maps to 0); Gaussian uses the population mean and standard deviation
// (a feature with zero deviation is only centred). The fitted values
// serialise to a JSON string for checkpoint metadata and parse back exactly.
#pragma once

#include "runtime/data/Dataset.h"
#include "support/Status.h"

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace netc::data {

/// The normalisation methods.
enum class NormalizerKind { None, MinMax, Gaussian, GlobalMinMax };

/// "none", "minmax", "gaussian" or "global-minmax".
std::string_view normalizerName(NormalizerKind kind);
/// Parses a name written by normalizerName (case-insensitive; "min-max" too).
Expected<NormalizerKind> parseNormalizerKind(std::string_view name);

/// A fitted per-feature normalizer.
class Normalizer {
public:
  /// The identity (kind None); applies to any feature count.
  Normalizer() = default;

  /// Fits `kind` on `train`'s features.
  static Normalizer fit(NormalizerKind kind, const Dataset &train);

  NormalizerKind kind() const { return kind_; }
  /// The feature count it was fitted on (0 for None).
  int64_t featureCount() const { return static_cast<int64_t>(offset_.size()); }
  const std::vector<float> &offset() const { return offset_; }
  const std::vector<float> &scale() const { return scale_; }

  /// Normalises every row of `data` in place; fails when the feature count
  /// differs from the fitted one.
  Status apply(Dataset &data) const;
  /// Normalises one sample's features in place.
  Status applyRow(std::span<float> row) const;

  /// A JSON object: {"normalizer": "...", "features": N, "offset": [...],
  /// "scale": [...]}; floats are written so that they parse back bit-exactly.
  std::string toJson() const;
  /// Parses toJson's output, checking kind, sizes and that numbers are finite.
  static Expected<Normalizer> fromJson(std::string_view text);

private:
  NormalizerKind kind_ = NormalizerKind::None;
  std::vector<float> offset_;
  std::vector<float> scale_;
};

} // namespace netc::data
