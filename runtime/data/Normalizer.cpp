// Normalizer.cpp -- fitting, applying and (de)serialising the per-feature
// affine normalizers (see Normalizer.h). Statistics are accumulated in
// double; the fitted offset and scale are floats, applied as
// (x - offset) * scale like ML.NET's affine normalizer. A fixed scale is a
// float division, x / S, as image pipelines write it.
#include "runtime/data/Normalizer.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <limits>

namespace netc::data {

std::string_view normalizerName(NormalizerKind kind) {
  switch (kind) {
  case NormalizerKind::None: return "none";
  case NormalizerKind::MinMax: return "minmax";
  case NormalizerKind::Gaussian: return "gaussian";
  case NormalizerKind::GlobalMinMax: return "global-minmax";
  case NormalizerKind::Scale: return "scale";
  }
  return "none";
}

Expected<NormalizerKind> parseNormalizerKind(std::string_view name) {
  auto squeeze = [](std::string_view text) {
    std::string out;
    for (char c : text)
      if (c != '-' && c != '_')
        out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
  };
  for (NormalizerKind kind : {NormalizerKind::None, NormalizerKind::MinMax, NormalizerKind::Gaussian,
                              NormalizerKind::GlobalMinMax, NormalizerKind::Scale})
    if (squeeze(name) == squeeze(normalizerName(kind)))
      return kind;
  return fail(fmt::format(
      "unknown normalizer '{}'; expected none, minmax, global-minmax, gaussian or scale:S (e.g. scale:255)",
      name));
}

std::string normalizerText(const NormalizerSpec &spec) {
  if (spec.kind == NormalizerKind::Scale)
    return fmt::format("scale:{}", spec.divisor);
  return std::string(normalizerName(spec.kind));
}

namespace {

/// The divisor of "scale:S": a positive, finite float.
Expected<float> parseDivisor(std::string_view text) {
  const std::string digits(text);
  char *end = nullptr;
  const double value = std::strtod(digits.c_str(), &end);
  const auto single = static_cast<float>(value);
  if (digits.empty() || end != digits.c_str() + digits.size() || !std::isfinite(value) ||
      !std::isfinite(single) || !(single > 0) || std::isspace(static_cast<unsigned char>(digits[0])))
    return fail(fmt::format("scale:S needs a positive, finite number S (x / S; e.g. scale:255 for 8-bit "
                            "pixels), got '{}'",
                            text));
  return single;
}

} // namespace

Expected<NormalizerSpec> parseNormalizer(std::string_view text) {
  const size_t colon = text.find(':');
  Expected<NormalizerKind> kind = parseNormalizerKind(text.substr(0, colon));
  if (!kind)
    return kind.error();
  if (*kind != NormalizerKind::Scale) {
    if (colon != std::string_view::npos)
      return fail(fmt::format("normalizer '{}' takes no setting, got '{}'", normalizerName(*kind), text));
    return NormalizerSpec(*kind);
  }
  if (colon == std::string_view::npos)
    return fail(
        "scale needs its divisor: scale:S divides every feature by S (e.g. scale:255 for 8-bit pixels)");
  Expected<float> divisor = parseDivisor(text.substr(colon + 1));
  if (!divisor)
    return divisor.error();
  return NormalizerSpec(NormalizerKind::Scale, *divisor);
}

Normalizer Normalizer::fit(const NormalizerSpec &spec, const Dataset &train) {
  Normalizer result;
  result.spec_ = spec;
  if (spec.kind == NormalizerKind::None)
    return result;
  result.features_ = train.featureCount;
  if (spec.kind == NormalizerKind::Scale)
    return result; // nothing to fit: x / divisor
  const auto features = static_cast<size_t>(train.featureCount);
  result.offset_.assign(features, 0.0f);
  result.scale_.assign(features, 0.0f);
  const NormalizerKind kind = spec.kind;

  if (kind == NormalizerKind::GlobalMinMax) {
    // One scale for every feature: 1 / the largest |value| in the training
    // set (for pixels: x / 255), so rarely-lit pixels are not amplified.
    float top = 0;
    for (float v : train.features)
      top = std::max(top, std::fabs(v));
    if (top > 0)
      std::fill(result.scale_.begin(), result.scale_.end(), 1.0f / top);
    return result;
  }

  if (kind == NormalizerKind::MinMax) {
    std::vector<float> lo(features, std::numeric_limits<float>::infinity());
    std::vector<float> hi(features, -std::numeric_limits<float>::infinity());
    for (int64_t i = 0; i < train.count; ++i) {
      std::span<const float> row = train.row(i);
      for (size_t f = 0; f < features; ++f) {
        lo[f] = std::min(lo[f], row[f]);
        hi[f] = std::max(hi[f], row[f]);
      }
    }
    // ML.NET's fixZero min-max: offset 0, scale 1 / max(|min|, |max|); a
    // feature without spread (constant, or no rows) maps to 0.
    for (size_t f = 0; f < features; ++f)
      if (hi[f] > lo[f])
        result.scale_[f] = 1.0f / std::max(std::fabs(lo[f]), std::fabs(hi[f]));
    return result;
  }

  // Gaussian: population mean and standard deviation (Welford, in double).
  std::vector<double> mean(features, 0.0), m2(features, 0.0);
  for (int64_t i = 0; i < train.count; ++i) {
    std::span<const float> row = train.row(i);
    double n = static_cast<double>(i + 1);
    for (size_t f = 0; f < features; ++f) {
      double delta = row[f] - mean[f];
      mean[f] += delta / n;
      m2[f] += delta * (row[f] - mean[f]);
    }
  }
  for (size_t f = 0; f < features; ++f) {
    double stddev = train.count > 0 ? std::sqrt(m2[f] / static_cast<double>(train.count)) : 0.0;
    result.offset_[f] = static_cast<float>(mean[f]);
    auto deviation = static_cast<float>(stddev);
    // A feature without spread is only centred.
    result.scale_[f] = deviation > 0.0f ? 1.0f / deviation : 1.0f;
  }
  return result;
}

Status Normalizer::applyRow(std::span<float> row) const {
  if (kind() == NormalizerKind::None)
    return Status::success();
  if (static_cast<int64_t>(row.size()) != featureCount())
    return fail(fmt::format("the {} normalizer was fitted on {} features but a sample has {}",
                            normalizerText(spec_), featureCount(), row.size()));
  if (kind() == NormalizerKind::Scale) {
    for (float &x : row)
      x = x / spec_.divisor;
    return Status::success();
  }
  for (size_t f = 0; f < row.size(); ++f)
    row[f] = (row[f] - offset_[f]) * scale_[f];
  return Status::success();
}

Status Normalizer::apply(Dataset &data) const {
  if (kind() == NormalizerKind::None)
    return Status::success();
  if (data.featureCount != featureCount())
    return fail(fmt::format("{}: the {} normalizer was fitted on {} features but this data set has {}",
                            data.origin, normalizerText(spec_), featureCount(), data.featureCount));
  for (int64_t i = 0; i < data.count; ++i) {
    Status status =
        applyRow({data.features.data() + i * data.featureCount, static_cast<size_t>(data.featureCount)});
    if (!status)
      return status;
  }
  return Status::success();
}

std::string Normalizer::toJson() const {
  // Each float is written as the double it widens to, whose shortest
  // round-trip text parses back to the same double and so the same float.
  nlohmann::json j = {{"normalizer", std::string(normalizerName(kind()))}, {"features", featureCount()}};
  if (kind() == NormalizerKind::Scale) {
    j["divisor"] = static_cast<double>(spec_.divisor);
    return j.dump();
  }
  j["offset"] = std::vector<double>(offset_.begin(), offset_.end());
  j["scale"] = std::vector<double>(scale_.begin(), scale_.end());
  return j.dump();
}

namespace {

Status readFloats(const nlohmann::json &j, const char *key, int64_t expected, std::vector<float> &out) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_array())
    return fail(fmt::format("normalizer: \"{}\" is missing or not an array", key));
  if (static_cast<int64_t>(it->size()) != expected)
    return fail(fmt::format("normalizer: \"{}\" has {} values; expected {} (one per feature)", key,
                            it->size(), expected));
  out.clear();
  out.reserve(it->size());
  for (const nlohmann::json &value : *it) {
    if (!value.is_number())
      return fail(fmt::format("normalizer: \"{}\" holds a non-number: {}", key, value.dump()));
    double number = value.get<double>();
    auto single = static_cast<float>(number);
    if (!std::isfinite(number) || !std::isfinite(single))
      return fail(
          fmt::format("normalizer: \"{}\" holds {}, which is not a finite 32-bit float", key, number));
    out.push_back(single);
  }
  return Status::success();
}

} // namespace

Expected<Normalizer> Normalizer::fromJson(std::string_view text) {
  nlohmann::json j = nlohmann::json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object())
    return fail("normalizer: not a JSON object");
  auto kindIt = j.find("normalizer");
  if (kindIt == j.end() || !kindIt->is_string())
    return fail("normalizer: \"normalizer\" (the kind) is missing or not a string");
  Expected<NormalizerKind> kind = parseNormalizerKind(kindIt->get_ref<const std::string &>());
  if (!kind)
    return fail("normalizer: " + kind.message());
  auto countIt = j.find("features");
  if (countIt == j.end() || !countIt->is_number_integer() || countIt->get<int64_t>() < 0)
    return fail("normalizer: \"features\" is missing or not a non-negative integer");
  int64_t count = countIt->get<int64_t>();
  if (*kind == NormalizerKind::None && count != 0)
    return fail(fmt::format("normalizer: \"none\" has no per-feature values but \"features\" is {}", count));

  Normalizer result;
  result.spec_ = NormalizerSpec(*kind);
  result.features_ = count;
  if (*kind == NormalizerKind::Scale) {
    auto divisor = j.find("divisor");
    if (divisor == j.end() || !divisor->is_number())
      return fail("normalizer: \"divisor\" (of scale) is missing or not a number");
    const double number = divisor->get<double>();
    const auto single = static_cast<float>(number);
    if (!std::isfinite(number) || !std::isfinite(single) || !(single > 0))
      return fail(
          fmt::format("normalizer: \"divisor\" is {}; it must be a positive, finite 32-bit float", number));
    result.spec_ = NormalizerSpec(NormalizerKind::Scale, single);
    return result;
  }
  if (Status status = readFloats(j, "offset", count, result.offset_); !status)
    return fail(status.message());
  if (Status status = readFloats(j, "scale", count, result.scale_); !status)
    return fail(status.message());
  return result;
}

} // namespace netc::data
