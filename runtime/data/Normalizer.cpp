// Normalizer.cpp -- fitting, applying and (de)serialising the per-feature
// affine normalizers (see Normalizer.h). Statistics are accumulated in
// double; the fitted offset and scale are floats, applied as
// (x - offset) * scale like ML.NET's affine normalizer. A fixed scale is a
// float division, x / S, as image pipelines write it. JSON that does not
// parse is parsed again by a SAX handler that only tracks where it is, so a
// number out of range is reported with its field and index.
#include "runtime/data/Normalizer.h"

#include "support/PrintableText.h"

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
    for (size_t f = 0; f < row.size(); ++f) {
      const float x = row[f];
      row[f] = x / spec_.divisor;
      if (!std::isfinite(row[f]) && std::isfinite(x))
        return fail(
            fmt::format("feature {} is {:g}, and {:g} / {:g} overflows 32-bit floats (the {} normalizer)",
                        f + 1, x, x, spec_.divisor, normalizerText(spec_)));
    }
    return Status::success();
  }
  for (size_t f = 0; f < row.size(); ++f) {
    const float x = row[f];
    row[f] = (x - offset_[f]) * scale_[f];
    if (!std::isfinite(row[f]) && std::isfinite(x))
      return fail(fmt::format("feature {} is {:g}, and (x - offset) * scale = ({:g} - {:g}) * {:g} overflows "
                              "32-bit floats (the {} normalizer)",
                              f + 1, x, x, offset_[f], scale_[f], normalizerText(spec_)));
  }
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
      return fail(fmt::format("{}: {}", sampleLocation(data, i), status.message()));
  }
  return Status::success();
}

Status Normalizer::checkRange() const {
  const std::string_view why = "(x - offset) * scale would overflow 32-bit floats, whose largest is 3.4e38";
  if (kind() == NormalizerKind::Scale) {
    if (spec_.divisor < 1 / kMaxStoredMagnitude)
      return fail(
          fmt::format("normalizer: \"divisor\" is {:g}; netc refuses divisors below {:g}: x / divisor "
                      "would overflow 32-bit floats, whose largest is 3.4e38",
                      spec_.divisor, 1 / kMaxStoredMagnitude));
    return Status::success();
  }
  for (const auto &[key, values] : {std::pair{"offset", &offset_}, {"scale", &scale_}})
    for (size_t i = 0; i < values->size(); ++i)
      if (std::fabs((*values)[i]) > kMaxStoredMagnitude)
        return fail(fmt::format("normalizer: \"{}\"[{}] (feature {}) is {:g}; netc refuses normaliser values "
                                "above {:g} in magnitude: {}",
                                key, i, i + 1, (*values)[i], kMaxStoredMagnitude, why));
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
      return fail(fmt::format("normalizer: \"{}\"[{}] is {}, not a number", key, out.size(),
                              value.dump().substr(0, 40)));
    double number = value.get<double>();
    auto single = static_cast<float>(number);
    if (!std::isfinite(number) || !std::isfinite(single))
      return fail(fmt::format("normalizer: \"{}\"[{}] is {}, out of range for a 32-bit float", key,
                              out.size(), number));
    out.push_back(single);
  }
  return Status::success();
}

/// Follows a JSON text's structure without keeping it, to say where a parse
/// that failed stopped: the key path of the value being read ("scale"[3])
/// and the parser's reason.
class JsonErrorLocator : public nlohmann::json_sax<nlohmann::json> {
public:
  /// "\"scale\"[3]", or "" at the top level.
  std::string where;
  /// The parser's message, without its "[json.exception...]" prefix.
  std::string reason;
  /// The failing token: for a number out of range, its text.
  std::string token;
  /// The value is a number too large for a double.
  bool outOfRange = false;

  bool null() override { return value(); }
  bool boolean(bool) override { return value(); }
  bool number_integer(number_integer_t) override { return value(); }
  bool number_unsigned(number_unsigned_t) override { return value(); }
  bool number_float(number_float_t, const string_t &) override { return value(); }
  bool string(string_t &) override { return value(); }
  bool binary(binary_t &) override { return value(); }
  bool start_object(std::size_t) override {
    value();
    frames_.push_back({false, {}, -1});
    return true;
  }
  bool key(string_t &name) override {
    frames_.back().key = name;
    return true;
  }
  bool end_object() override {
    frames_.pop_back();
    return true;
  }
  bool start_array(std::size_t) override {
    value();
    frames_.push_back({true, {}, -1});
    return true;
  }
  bool end_array() override {
    frames_.pop_back();
    return true;
  }
  bool parse_error(std::size_t, const std::string &lastToken,
                   const nlohmann::detail::exception &ex) override {
    for (size_t i = 0; i < frames_.size(); ++i) {
      const Frame &frame = frames_[i];
      if (frame.array) // the innermost array's failing element comes after its last one
        where += fmt::format("[{}]", frame.index + (i + 1 == frames_.size() ? 1 : 0));
      else if (!frame.key.empty())
        where += fmt::format("{}\"{}\"", where.empty() ? "" : ".", frame.key);
    }
    reason = ex.what();
    if (const size_t end = reason.find("] ");
        reason.starts_with("[json.exception") && end != std::string::npos)
      reason.erase(0, end + 2);
    token = lastToken.substr(0, 40);
    outOfRange = ex.id == 406; // nlohmann's "number overflow parsing ..."
    return false;
  }

private:
  struct Frame {
    bool array;
    std::string key;
    int64_t index;
  };
  bool value() {
    if (!frames_.empty() && frames_.back().array)
      ++frames_.back().index;
    return true;
  }
  std::vector<Frame> frames_;
};

/// Why `text` is not a JSON object: a number out of range named with its
/// place, else the parser's reason.
std::string jsonProblem(std::string_view text) {
  JsonErrorLocator locator;
  if (nlohmann::json::sax_parse(text.begin(), text.end(), &locator) || locator.reason.empty())
    return "normalizer: not a JSON object";
  if (locator.outOfRange)
    return fmt::format("normalizer: {} is {}, out of range for a number (a 32-bit float is at most 3.4e38)",
                       locator.where.empty() ? "a value" : locator.where, printableText(locator.token));
  return fmt::format("normalizer: not a JSON object: {}{}", printableText(locator.reason),
                     locator.where.empty() ? "" : fmt::format(" (in {})", locator.where));
}

} // namespace

Expected<Normalizer> Normalizer::fromJson(std::string_view text) {
  nlohmann::json j = nlohmann::json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded())
    return fail(jsonProblem(text));
  if (!j.is_object())
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
  } else {
    if (Status status = readFloats(j, "offset", count, result.offset_); !status)
      return fail(status.message());
    if (Status status = readFloats(j, "scale", count, result.scale_); !status)
      return fail(status.message());
  }
  if (Status range = result.checkRange(); !range)
    return fail(range.message());
  return result;
}

} // namespace netc::data
