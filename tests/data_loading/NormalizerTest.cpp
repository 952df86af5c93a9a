// NormalizerTest.cpp -- min-max (ML.NET fixZero), Gaussian, a fixed scale
// (x / S as a float division) and none against hand-computed values, single
// rows, `--normalize` texts, and the JSON form: exact round trips and refusal
// of malformed text, of numbers out of range (named by field and index) and
// of values past kMaxStoredMagnitude; a normalised value that overflows.
#include "runtime/data/Normalizer.h"
#include "DataTestSupport.h"
#include "runtime/data/DataFolder.h"

#include <gmock/gmock.h>

#include <cmath>
#include <cstring>

namespace netc::data {
namespace {

using namespace netc::data::testing;
using ::testing::HasSubstr;

/// A data set from rows of features (labels 0).
Dataset table(const std::vector<std::vector<float>> &rows) {
  Dataset data;
  data.origin = "table";
  data.count = static_cast<int64_t>(rows.size());
  data.featureCount = static_cast<int64_t>(rows.at(0).size());
  data.sampleShape = {data.featureCount};
  for (const auto &row : rows)
    data.features.insert(data.features.end(), row.begin(), row.end());
  data.labels.assign(rows.size(), 0.0f);
  computeLabelInfo(data);
  return data;
}

TEST(NormalizerTest, MinMaxKeepsZeroFixed) {
  // Columns: [0, 10] -> x/10; [-4, 2] -> x/4; constant 0 -> 0; constant 7 -> 0.
  Dataset data = table({{0, -4, 0, 7}, {5, 2, 0, 7}, {10, 1, 0, 7}});
  Normalizer n = Normalizer::fit(NormalizerKind::MinMax, data);
  EXPECT_EQ(n.kind(), NormalizerKind::MinMax);
  EXPECT_EQ(n.featureCount(), 4);
  EXPECT_EQ(n.offset(), (std::vector<float>{0, 0, 0, 0}));
  EXPECT_EQ(n.scale(), (std::vector<float>{0.1f, 0.25f, 0, 0}));
  ASSERT_TRUE(n.apply(data));
  std::vector<float> expected = {0, -1, 0, 0, 0.5f, 0.5f, 0, 0, 1, 0.25f, 0, 0};
  for (size_t k = 0; k < expected.size(); ++k)
    EXPECT_FLOAT_EQ(data.features[k], expected[k]) << "value " << k;
  std::vector<float> row = {20, -8, 3, 7};
  ASSERT_TRUE(n.applyRow(row));
  EXPECT_FLOAT_EQ(row[0], 2.0f);
  EXPECT_FLOAT_EQ(row[1], -2.0f);
  EXPECT_EQ(row[2], 0.0f);
  EXPECT_EQ(row[3], 0.0f);
}

TEST(NormalizerTest, MinMaxOnPixels) {
  Expected<DataFolder> folder = loadDataFolder(sliceDir());
  ASSERT_TRUE(folder) << folder.message();
  Normalizer n = Normalizer::fit(NormalizerKind::MinMax, folder->train);
  // A corner pixel is always 0 in MNIST; busy pixels reach 255.
  EXPECT_EQ(n.scale()[0], 0.0f);
  float smallest = 1.0f;
  for (float scale : n.scale())
    if (scale > 0.0f)
      smallest = std::min(smallest, scale);
  EXPECT_EQ(smallest, 1.0f / 255.0f);
  ASSERT_TRUE(n.apply(folder->train));
  for (float v : folder->train.features)
    ASSERT_TRUE(v >= 0.0f && v <= 1.0f) << v;
  ASSERT_TRUE(n.apply(*folder->test));
  for (float v : folder->test->features)
    ASSERT_TRUE(std::isfinite(v) && v >= 0.0f) << v;
}

TEST(NormalizerTest, GaussianUsesPopulationDeviation) {
  // Column 0: 1, 2, 3 -> mean 2, deviation sqrt(2/3); column 1 constant 5.
  Dataset data = table({{1, 5}, {2, 5}, {3, 5}});
  Normalizer n = Normalizer::fit(NormalizerKind::Gaussian, data);
  const double deviation = std::sqrt(2.0 / 3.0);
  EXPECT_EQ(n.offset(), (std::vector<float>{2, 5}));
  EXPECT_FLOAT_EQ(n.scale()[0], static_cast<float>(1.0 / deviation));
  EXPECT_EQ(n.scale()[1], 1.0f); // no spread: only centred
  ASSERT_TRUE(n.apply(data));
  EXPECT_FLOAT_EQ(data.features[0], static_cast<float>(-1.0 / deviation));
  EXPECT_EQ(data.features[2], 0.0f);
  EXPECT_FLOAT_EQ(data.features[4], static_cast<float>(1.0 / deviation));
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(data.features[2 * i + 1], 0.0f);
  std::vector<float> row = {5, 6};
  ASSERT_TRUE(n.applyRow(row));
  EXPECT_FLOAT_EQ(row[0], static_cast<float>(3.0 / deviation));
  EXPECT_EQ(row[1], 1.0f);
}

TEST(NormalizerTest, NoneAndMismatch) {
  Dataset data = table({{3, 4}});
  Normalizer none;
  ASSERT_TRUE(none.apply(data));
  EXPECT_EQ(data.features, (std::vector<float>{3, 4}));
  Normalizer fitted = Normalizer::fit(NormalizerKind::None, data);
  EXPECT_EQ(fitted.featureCount(), 0);

  Normalizer minmax = Normalizer::fit(NormalizerKind::MinMax, table({{1, 2, 3}, {2, 3, 4}}));
  Status status = minmax.apply(data);
  ASSERT_FALSE(status);
  EXPECT_THAT(status.message(), HasSubstr("fitted on 3 features but this data set has 2"));
  std::vector<float> row = {1};
  status = minmax.applyRow(row);
  ASSERT_FALSE(status);
  EXPECT_THAT(status.message(), HasSubstr("fitted on 3 features but a sample has 1"));
}

TEST(NormalizerTest, Names) {
  EXPECT_EQ(*parseNormalizerKind("Min-Max"), NormalizerKind::MinMax);
  EXPECT_EQ(*parseNormalizerKind("minmax"), NormalizerKind::MinMax);
  EXPECT_EQ(*parseNormalizerKind("Gaussian"), NormalizerKind::Gaussian);
  EXPECT_EQ(*parseNormalizerKind("none"), NormalizerKind::None);
  Expected<NormalizerKind> bad = parseNormalizerKind("binning");
  ASSERT_FALSE(bad);
  EXPECT_THAT(bad.message(), HasSubstr("'binning'"));
}

TEST(NormalizerTest, FixedScaleDividesEveryFeatureExactly) {
  // x / 255 as image pipelines compute it (a float division, not a
  // multiplication by the rounded 1/255), whatever the data's maximum is.
  Dataset data = table({{0, 1, 2, 3}, {128, 200, 254, 17}});
  Expected<NormalizerSpec> spec = parseNormalizer("scale:255");
  ASSERT_TRUE(spec) << spec.message();
  EXPECT_EQ(spec->kind, NormalizerKind::Scale);
  EXPECT_EQ(spec->divisor, 255.0f);
  EXPECT_EQ(normalizerText(*spec), "scale:255");
  Normalizer n = Normalizer::fit(*spec, data);
  EXPECT_EQ(n.featureCount(), 4);
  std::vector<float> expected;
  for (float x : data.features)
    expected.push_back(x / 255.0f);
  ASSERT_TRUE(n.apply(data));
  for (size_t i = 0; i < expected.size(); ++i)
    EXPECT_EQ(std::memcmp(&data.features[i], &expected[i], sizeof(float)), 0) << i;
  // 3 / 255 and 3 * (1 / 255) differ in the last bit: the division is what is computed.
  volatile float three = 3, reciprocal = 1.0f / 255.0f;
  EXPECT_NE(three / 255.0f, three * reciprocal);
  EXPECT_EQ(data.features[3], three / 255.0f);
  std::vector<float> row = {3};
  ASSERT_FALSE(n.applyRow(row)); // fitted on 4 features
  row = {3, 0, 0, 0};
  ASSERT_TRUE(n.applyRow(row));
  EXPECT_EQ(row[0], three / 255.0f);

  Expected<NormalizerSpec> fraction = parseNormalizer("Scale:0.5");
  ASSERT_TRUE(fraction) << fraction.message();
  EXPECT_EQ(normalizerText(*fraction), "scale:0.5");
}

TEST(NormalizerTest, NormalizeTextsAreValidated) {
  EXPECT_EQ(parseNormalizer("minmax")->kind, NormalizerKind::MinMax);
  EXPECT_EQ(parseNormalizer("global-minmax")->kind, NormalizerKind::GlobalMinMax);
  EXPECT_EQ(normalizerText(*parseNormalizer("Gaussian")), "gaussian");
  struct Case {
    const char *text;
    const char *message;
  };
  for (const Case &c : {
           Case{"scale", "scale needs its divisor"},
           Case{"scale:", "positive, finite number S"},
           Case{"scale:0", "positive, finite number S"},
           Case{"scale:-255", "positive, finite number S"},
           Case{"scale:abc", "got 'abc'"},
           Case{"scale:255x", "got '255x'"},
           Case{"scale: 255", "got ' 255'"},
           Case{"scale:inf", "positive, finite number S"},
           Case{"scale:nan", "positive, finite number S"},
           Case{"scale:1e39", "positive, finite number S"},
           Case{"minmax:3", "normalizer 'minmax' takes no setting"},
           Case{"binning", "unknown normalizer 'binning'"},
           Case{"", "unknown normalizer ''"},
       }) {
    Expected<NormalizerSpec> spec = parseNormalizer(c.text);
    ASSERT_FALSE(spec) << c.text;
    EXPECT_THAT(spec.message(), HasSubstr(c.message)) << c.text;
  }
}

TEST(NormalizerTest, JsonRoundTripIsExact) {
  Dataset data = table({{0.1f, 1e-7f, 3}, {0.7f, -2e-5f, 3.3f}, {0.3f, 5e-6f, 1e6f}});
  for (NormalizerSpec kind :
       {NormalizerSpec(NormalizerKind::None), NormalizerSpec(NormalizerKind::MinMax),
        NormalizerSpec(NormalizerKind::Gaussian), NormalizerSpec(NormalizerKind::GlobalMinMax),
        NormalizerSpec(NormalizerKind::Scale, 255), NormalizerSpec(NormalizerKind::Scale, 0.1f)}) {
    Normalizer n = Normalizer::fit(kind, data);
    std::string json = n.toJson();
    Expected<Normalizer> back = Normalizer::fromJson(json);
    ASSERT_TRUE(back) << back.message() << "\n" << json;
    EXPECT_EQ(back->kind(), kind.kind);
    EXPECT_EQ(back->spec(), n.spec());
    ASSERT_EQ(back->featureCount(), n.featureCount());
    for (size_t f = 0; f < n.scale().size(); ++f) {
      EXPECT_EQ(std::memcmp(&back->scale()[f], &n.scale()[f], sizeof(float)), 0) << json;
      EXPECT_EQ(std::memcmp(&back->offset()[f], &n.offset()[f], sizeof(float)), 0) << json;
    }
  }
}

TEST(NormalizerTest, JsonIsValidated) {
  struct Case {
    const char *text;
    const char *message;
  };
  for (const Case &c : {
           Case{"", "not a JSON object"},
           Case{"[1]", "not a JSON object"},
           Case{R"({"features":0,"offset":[],"scale":[]})", "\"normalizer\""},
           Case{R"({"normalizer":"binning","features":0,"offset":[],"scale":[]})", "unknown normalizer"},
           Case{R"({"normalizer":"minmax","offset":[],"scale":[]})", "\"features\""},
           Case{R"({"normalizer":"minmax","features":-1,"offset":[],"scale":[]})", "\"features\""},
           Case{R"({"normalizer":"none","features":2,"offset":[0,0],"scale":[1,1]})", "\"none\""},
           Case{R"({"normalizer":"minmax","features":2,"offset":[0],"scale":[1,1]})",
                "has 1 values; expected 2"},
           Case{R"({"normalizer":"minmax","features":1,"offset":["0"],"scale":[1]})",
                "\"offset\"[0] is \"0\", not a number"},
           Case{R"({"normalizer":"minmax","features":1,"offset":[0],"scale":[1e300]})",
                "\"scale\"[0] is 1e+300, out of range for a 32-bit float"},
           Case{R"({"normalizer":"minmax","features":1,"offset":[0]})", "\"scale\" is missing"},
           Case{R"({"normalizer":"scale","features":1})", "\"divisor\" (of scale) is missing"},
           Case{R"({"normalizer":"scale","features":1,"divisor":"255"})", "not a number"},
           Case{R"({"normalizer":"scale","features":1,"divisor":0})", "positive, finite 32-bit float"},
           Case{R"({"normalizer":"scale","features":1,"divisor":-1})", "positive, finite 32-bit float"},
           Case{R"({"normalizer":"scale","features":1,"divisor":1e300})", "positive, finite 32-bit float"},
       }) {
    Expected<Normalizer> n = Normalizer::fromJson(c.text);
    ASSERT_FALSE(n) << c.text;
    EXPECT_THAT(n.message(), HasSubstr(c.message)) << c.text;
  }
}

TEST(NormalizerTest, ANumberOutOfRangeIsNamedByItsField) {
  // nlohmann refuses 1e999 while parsing: the place is found again.
  Expected<Normalizer> n =
      Normalizer::fromJson(R"({"normalizer":"minmax","features":3,"offset":[0,0,0],"scale":[1,2,1e999]})");
  ASSERT_FALSE(n);
  EXPECT_EQ(
      n.message(),
      "normalizer: \"scale\"[2] is 1e999, out of range for a number (a 32-bit float is at most 3.4e38)");
  n = Normalizer::fromJson(R"({"normalizer":"scale","features":1,"divisor":-1e999})");
  ASSERT_FALSE(n);
  EXPECT_EQ(
      n.message(),
      "normalizer: \"divisor\" is -1e999, out of range for a number (a 32-bit float is at most 3.4e38)");
  n = Normalizer::fromJson(R"({"normalizer":"minmax","features":1,"offset":[0],"scale":[1,]})");
  ASSERT_FALSE(n);
  EXPECT_THAT(n.message(), HasSubstr("normalizer: not a JSON object: parse error at line 1, column "));
  EXPECT_THAT(n.message(), HasSubstr("(in \"scale\"[1])"));
}

TEST(NormalizerTest, ValuesPastTheBoundAreRefused) {
  Expected<Normalizer> n =
      Normalizer::fromJson(R"({"normalizer":"minmax","features":2,"offset":[0,0],"scale":[1,3e38]})");
  ASSERT_FALSE(n);
  EXPECT_EQ(n.message(),
            "normalizer: \"scale\"[1] (feature 2) is 3e+38; netc refuses normaliser values above "
            "1e+30 in magnitude: (x - offset) * scale would overflow 32-bit floats, whose largest "
            "is 3.4e38");
  n = Normalizer::fromJson(R"({"normalizer":"gaussian","features":1,"offset":[-2e30],"scale":[1]})");
  ASSERT_FALSE(n);
  EXPECT_THAT(n.message(), HasSubstr("\"offset\"[0] (feature 1) is -2e+30;"));
  n = Normalizer::fromJson(R"({"normalizer":"scale","features":1,"divisor":1e-35})");
  ASSERT_FALSE(n);
  EXPECT_THAT(n.message(), HasSubstr("\"divisor\" is 1e-35; netc refuses divisors below 1e-30"));
  // The bound itself is accepted.
  n = Normalizer::fromJson(R"({"normalizer":"minmax","features":1,"offset":[-1e30],"scale":[1e30]})");
  EXPECT_TRUE(n) << n.message();
}

TEST(NormalizerTest, AValueThatOverflowsIsNamed) {
  Expected<Normalizer> n =
      Normalizer::fromJson(R"({"normalizer":"minmax","features":2,"offset":[0,0],"scale":[1,1e30]})");
  ASSERT_TRUE(n) << n.message();
  Dataset data = table({{1, 2}, {3, 1e9f}});
  Status applied = n->apply(data);
  ASSERT_FALSE(applied);
  EXPECT_EQ(applied.message(), "table, item 1: feature 2 is 1e+09, and (x - offset) * scale = (1e+09 - 0) * "
                               "1e+30 overflows 32-bit floats (the minmax normalizer)");
  std::vector<float> row = {1, 1e9f};
  EXPECT_FALSE(n->applyRow(row));
}

} // namespace
} // namespace netc::data
