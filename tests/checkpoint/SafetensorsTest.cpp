// SafetensorsTest.cpp -- the safetensors format (runtime/train/Safetensors.h):
// round trips of several dtypes, scalars and empty tensors; byte-exact images
// built by hand (the first three are the reference implementation's own
// serialization vectors, which is the evidence that Python's `safetensors`
// reads and writes the same bytes); the Tensor and metadata helpers; and the
// writer's refusals. Malformed files are in SafetensorsMalformedTest.cpp,
// robustness and atomic writing in SafetensorsRobustnessTest.cpp.
#include "runtime/train/Safetensors.h"
#include "runtime/train/ModelState.h"
#include "tests/checkpoint/SafetensorsTestSupport.h"

#include <gtest/gtest.h>

#include <cstring>
#include <limits>

namespace netc::train {
namespace {

using namespace test;
using Bytes = std::vector<uint8_t>;

class SafetensorsRoundTrip : public ScratchDir {};

TEST_F(SafetensorsRoundTrip, SeveralDtypesScalarAndEmptyTensors) {
  SafetensorsFile file;
  file.setMetadata("source_hash", "abc123");
  file.setMetadata("optimizer", "momentum(0.9)");
  file.setMetadata("unicode", "\xc3\xa9t\xc3\xa9 \"quoted\" \\ \n tab\t");
  std::vector<float> f32 = {1.0f, -2.5f, 3.25f, std::numeric_limits<float>::infinity(), -0.0f, 7.0f};
  std::vector<double> f64 = {0.1, -1e300};
  std::vector<int64_t> i64 = {std::numeric_limits<int64_t>::min(), 0, std::numeric_limits<int64_t>::max()};
  std::vector<float> scalar = {42.0f};
  file.tensors.push_back(*Tensor::fromF32("w.f32", {2, 3}, f32));
  file.tensors.push_back(*Tensor::fromF64("w.f64", {2}, f64));
  file.tensors.push_back(*Tensor::fromI64("w.i64", {3}, i64));
  file.tensors.push_back(*Tensor::fromBytes("w.i32", "I32", {2, 1}, bytesOf<int32_t>({-7, 9})));
  file.tensors.push_back(*Tensor::fromBytes("w.u8", "U8", {5}, {0, 1, 2, 254, 255}));
  file.tensors.push_back(*Tensor::fromBytes("w.bf16", "BF16", {1}, {0x80, 0x3f}));
  file.tensors.push_back(*Tensor::fromF32("scalar", {}, scalar));
  file.tensors.push_back(*Tensor::fromF32("empty", {0, 4}, {}));

  auto path = (dir_ / "model.safetensors").string();
  ASSERT_TRUE(writeSafetensorsAtomic(path, file).ok());
  auto read = readSafetensors(path);
  ASSERT_TRUE(read.ok()) << read.message();
  EXPECT_EQ(read->metadata, file.metadata);
  ASSERT_EQ(read->tensors.size(), file.tensors.size());
  for (const Tensor &t : file.tensors) {
    const Tensor *back = read->find(t.name);
    ASSERT_NE(back, nullptr) << t.name;
    EXPECT_EQ(back->dtype, t.dtype) << t.name;
    EXPECT_EQ(back->shape, t.shape) << t.name;
    EXPECT_EQ(back->bytes, t.bytes) << t.name;
  }
  EXPECT_EQ(*read->find("w.f32")->toF32({2, 3}), f32);
  EXPECT_EQ(*read->find("w.f64")->toF64({2}), f64);
  EXPECT_EQ(*read->find("w.i64")->toI64({3}), i64);
  EXPECT_EQ(*read->find("scalar")->toF32({}), scalar);
  EXPECT_TRUE(read->find("empty")->toF32({0, 4})->empty());
  EXPECT_EQ(read->find("scalar")->elementCount(), 1);
  EXPECT_EQ(read->find("empty")->elementCount(), 0);

  // Read back in file order: 8-byte dtypes first, so every tensor's data is
  // aligned to its element size within the file.
  Bytes raw = readBytes(path);
  uint64_t offset = 8 + (raw[0] | uint64_t(raw[1]) << 8 | uint64_t(raw[2]) << 16);
  EXPECT_EQ(offset % 8, 0u);
  for (const Tensor &t : read->tensors) {
    EXPECT_EQ(offset % *dtypeSize(t.dtype), 0u) << t.name;
    offset += t.bytes.size();
  }
  EXPECT_EQ(offset, raw.size());

  // The same contents in another order give the same bytes.
  SafetensorsFile shuffled = file;
  std::reverse(shuffled.tensors.begin(), shuffled.tensors.end());
  EXPECT_EQ(*serializeSafetensors(shuffled), raw);
  EXPECT_EQ(*serializeSafetensors(*read), raw);
}

TEST(SafetensorsBytes, ReferenceVectorSingleF32) {
  SafetensorsFile file;
  std::vector<float> values = {0, 1, 2, 3, 4, 5};
  file.tensors.push_back(*Tensor::fromF32("attn.0", {1, 2, 3}, values));
  // 64 header bytes, already a multiple of 8: no padding.
  Bytes expected = image(R"({"attn.0":{"dtype":"F32","shape":[1,2,3],"data_offsets":[0,24]}})",
                         bytesOf<float>({0, 1, 2, 3, 4, 5}));
  ASSERT_EQ(expected[0], 64);
  EXPECT_EQ(*serializeSafetensors(file), expected);
  auto parsed = parseSafetensors(expected, "ref");
  ASSERT_TRUE(parsed.ok()) << parsed.message();
  EXPECT_EQ(*parsed->find("attn.0")->toF32({1, 2, 3}), values);
}

TEST(SafetensorsBytes, ReferenceVectorsEmptyFiles) {
  EXPECT_EQ(*serializeSafetensors({}), image("{}      "));
  SafetensorsFile withMetadata;
  withMetadata.setMetadata("framework", "pt");
  Bytes expected = image(R"({"__metadata__":{"framework":"pt"}}     )");
  ASSERT_EQ(expected[0], 40);
  EXPECT_EQ(*serializeSafetensors(withMetadata), expected);
  auto parsed = parseSafetensors(expected, "ref");
  ASSERT_TRUE(parsed.ok()) << parsed.message();
  EXPECT_EQ(parsed->metadata.at("framework"), "pt");
  EXPECT_TRUE(parsed->tensors.empty());
}

TEST(SafetensorsBytes, MixedDtypesOrderedByRankThenName) {
  SafetensorsFile file;
  file.setMetadata("netc", "0.1.0");
  file.setMetadataInt("epoch", 3);
  file.tensors.push_back(*Tensor::fromBytes("b", "U8", {2}, {1, 2}));
  file.tensors.push_back(*Tensor::fromBytes("a", "I32", {1}, bytesOf<int32_t>({7})));
  std::vector<double> c = {1.5};
  file.tensors.push_back(*Tensor::fromF64("c", {}, c));
  file.tensors.push_back(*Tensor::fromI64("d", {0}, {}));
  Bytes expected = image(R"({"__metadata__":{"epoch":"3","netc":"0.1.0"},)"
                         R"("d":{"dtype":"I64","shape":[0],"data_offsets":[0,0]},)"
                         R"("c":{"dtype":"F64","shape":[],"data_offsets":[0,8]},)"
                         R"("a":{"dtype":"I32","shape":[1],"data_offsets":[8,12]},)"
                         R"("b":{"dtype":"U8","shape":[2],"data_offsets":[12,14]}})"
                         "      ",
                         concat({{0, 0, 0, 0, 0, 0, 0xf8, 0x3f}, {7, 0, 0, 0}, {1, 2}}));
  ASSERT_EQ(expected[0], 8);
  ASSERT_EQ(expected[1], 1); // 264 = 0x108
  EXPECT_EQ(*serializeSafetensors(file), expected);
  auto parsed = parseSafetensors(expected, "mixed");
  ASSERT_TRUE(parsed.ok()) << parsed.message();
  std::vector<std::string> order;
  for (const Tensor &t : parsed->tensors)
    order.push_back(t.name);
  EXPECT_EQ(order, (std::vector<std::string>{"d", "c", "a", "b"}));
}

TEST(SafetensorsBytes, ReaderAcceptsAnyEntryOrderAndUnpaddedHeaders) {
  // Entries listed out of offset order, header not padded: both are valid.
  Bytes bytes = image(R"({"y":{"dtype":"U8","shape":[1],"data_offsets":[4,5]},)"
                      R"("x":{"shape":[1],"data_offsets":[0,4],"dtype":"F32"}})",
                      concat({bytesOf<float>({2.0f}), {9}}));
  auto parsed = parseSafetensors(bytes, "order");
  ASSERT_TRUE(parsed.ok()) << parsed.message();
  ASSERT_EQ(parsed->tensors.size(), 2u);
  EXPECT_EQ(parsed->tensors[0].name, "x");
  EXPECT_EQ(parsed->tensors[1].bytes, Bytes{9});
}

TEST(SafetensorsTensor, HelpersCheckShapeAndDtype) {
  std::vector<float> values = {1, 2, 3};
  auto wrongCount = Tensor::fromF32("w", {2, 2}, values);
  ASSERT_FALSE(wrongCount.ok());
  EXPECT_NE(wrongCount.message().find("'w'"), std::string::npos) << wrongCount.message();
  EXPECT_NE(wrongCount.message().find("3 values"), std::string::npos) << wrongCount.message();
  EXPECT_FALSE(Tensor::fromF32("w", {-1, -3}, values).ok());
  EXPECT_FALSE(Tensor::fromBytes("w", "F17", {1}, {0}).ok());
  EXPECT_FALSE(Tensor::fromBytes("w", "F16", {1}, {0}).ok());

  Tensor t = *Tensor::fromF32("w", {3}, values);
  auto wrongShape = t.toF32({1, 3});
  ASSERT_FALSE(wrongShape.ok());
  EXPECT_NE(wrongShape.message().find("expected dtype F32 with shape [1, 3], found 'F32' with shape [3]"),
            std::string::npos)
      << wrongShape.message();
  auto wrongDtype = t.toI64({3});
  ASSERT_FALSE(wrongDtype.ok());
  EXPECT_NE(wrongDtype.message().find("expected dtype I64"), std::string::npos) << wrongDtype.message();
  t.bytes.pop_back();
  auto shortBytes = t.toF32({3});
  ASSERT_FALSE(shortBytes.ok());
  EXPECT_NE(shortBytes.message().find("need 12 bytes, but holds 11"), std::string::npos)
      << shortBytes.message();
}

TEST(SafetensorsFileHelpers, MetadataAndLookup) {
  SafetensorsFile file = sampleFile();
  file.setMetadataUnsigned("rng", std::numeric_limits<uint64_t>::max());
  file.setMetadataInt("step", -5);
  file.setMetadata("bad", "12a");
  EXPECT_EQ(*file.metadataUnsigned("rng"), std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(*file.metadataInt("step"), -5);
  EXPECT_EQ(*file.metadataInt("epoch"), 3);
  EXPECT_EQ(*file.metadataString("netc_version"), "0.1.0");
  auto missing = file.metadataInt("nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.message().find("no key 'nope'"), std::string::npos) << missing.message();
  auto malformed = file.metadataInt("bad");
  ASSERT_FALSE(malformed.ok());
  EXPECT_NE(malformed.message().find("'12a', expected a 64-bit integer"), std::string::npos)
      << malformed.message();
  EXPECT_FALSE(file.metadataUnsigned("step").ok());
  EXPECT_FALSE(file.metadataInt("rng").ok()); // out of int64 range
  file.setMetadata("empty", "");
  EXPECT_FALSE(file.metadataInt("empty").ok());

  EXPECT_NE(file.find("step"), nullptr);
  EXPECT_EQ(file.find("missing"), nullptr);
  auto required = file.require("missing");
  ASSERT_FALSE(required.ok());
  EXPECT_NE(required.message().find("no tensor named 'missing'"), std::string::npos) << required.message();
  EXPECT_EQ(*file.require("mask"), file.find("mask"));
}

TEST(SafetensorsWriter, RefusesInvalidContents) {
  auto refused = [](SafetensorsFile file, std::string_view keyword) {
    auto bytes = serializeSafetensors(file);
    ASSERT_FALSE(bytes.ok()) << keyword;
    EXPECT_NE(bytes.message().find(keyword), std::string::npos) << bytes.message();
  };
  SafetensorsFile base = sampleFile();
  SafetensorsFile duplicate = base;
  duplicate.tensors.push_back(base.tensors[0]);
  refused(duplicate, "two tensors named 'layer.W'");
  SafetensorsFile reserved = base;
  reserved.tensors[0].name = "__metadata__";
  refused(reserved, "reserved");
  SafetensorsFile empty = base;
  empty.tensors[0].name = "";
  refused(empty, "empty");
  SafetensorsFile dtype = base;
  dtype.tensors[0].dtype = "float32";
  refused(dtype, "unknown dtype 'float32'");
  SafetensorsFile size = base;
  size.tensors[0].bytes.push_back(0);
  refused(size, "need 24 bytes, but holds 25");
  SafetensorsFile negative = base;
  negative.tensors[0].shape = {-2, -3};
  refused(negative, "shape[0] is -2");
  SafetensorsFile utf8 = base;
  utf8.tensors[0].name = "bad\xff";
  refused(utf8, "not valid UTF-8");
  SafetensorsFile metadataUtf8 = base;
  metadataUtf8.setMetadata("k", "\xc3");
  refused(metadataUtf8, "not valid UTF-8");
}

/// A stage's checkpoint tensors: one scalar tensor per name, and the
/// network order that stateTensors would record with them.
SafetensorsFile stagePart(const std::vector<std::string> &names, const std::string &order,
                          const std::vector<std::vector<float>> &values = {}, const std::string &rows = "") {
  SafetensorsFile part;
  for (size_t i = 0; i < names.size(); ++i) {
    const std::vector<float> v = i < values.size() ? values[i] : std::vector<float>{1.0f};
    auto tensor = Tensor::fromF32(names[i], {static_cast<int64_t>(v.size())}, v);
    EXPECT_TRUE(tensor.ok()) << tensor.message();
    part.tensors.push_back(std::move(*tensor));
  }
  part.setMetadata(std::string(kNetworkOrderKey), order);
  if (!rows.empty())
    part.setMetadata(std::string(kPartRowsKey), rows);
  return part;
}

// Pipeline checkpoints (Trainer's gather): the stages' tensors go into one
// file in the whole network's order; a part whose order a peer sent wrong
// (missing, for other tensors, not integers) is refused, never guessed.
TEST(StateTensors, StagesMergeInTheNetworksOrderAndBadOrdersAreRefused) {
  std::vector<SafetensorsFile> parts = {stagePart({"C", "A", "A/state"}, R"({"C": 2, "A": 0, "A/state": 0})"),
                                        stagePart({"B", "D"}, R"({"B": 1, "D": 3})")};
  auto merged = mergeStateTensors(std::move(parts));
  ASSERT_TRUE(merged.ok()) << merged.message();
  std::vector<std::string> names;
  for (const Tensor &t : merged->tensors)
    names.push_back(t.name);
  EXPECT_EQ(names, (std::vector<std::string>{"A", "A/state", "B", "C", "D"}));
  for (const std::string &bad : {std::string(), std::string(R"({"A": 0})"), std::string(R"({"A": 0, "B": "x"})"),
                                 std::string(R"({"A": 0, "C": 1})"), std::string("[0, 1]"),
                                 std::string(R"({"A": 0, "B": 1, "C": 2})"), std::string(R"({"A": 0, "B": 1)")}) {
    std::vector<SafetensorsFile> one;
    one.push_back(stagePart({"A", "B"}, bad));
    if (bad.empty())
      one.back().metadata.clear();
    auto refused = mergeStateTensors(std::move(one));
    EXPECT_FALSE(refused.ok()) << "order '" << bad << "' was accepted";
  }
}

// A split layer's parts (--split) each send their rows of its tensors: rank
// 0 joins them in row order, whatever order they come in; rows that do not
// tile the whole tensor (a gap, an overlap, another size, a whole copy with
// the parts) are refused with a message naming the tensor.
TEST(StateTensors, SplitLayersPartsAreJoinedInRowOrder) {
  auto parts = [](const std::string &secondRows) {
    std::vector<SafetensorsFile> p;
    p.push_back(stagePart({"W", "Out"}, R"({"W": 0, "Out": 1})", {{4, 5}, {9}}, R"({"W": [2, 5]})"));
    p.push_back(stagePart({"W"}, R"({"W": 0})", {{1, 2}}, secondRows));
    p.push_back(stagePart({"W"}, R"({"W": 0})", {{3}}, R"({"W": [4, 5]})"));
    return p;
  };
  auto merged = mergeStateTensors(parts(R"({"W": [0, 5]})"));
  ASSERT_TRUE(merged.ok()) << merged.message();
  ASSERT_EQ(merged->tensors.size(), 2u);
  EXPECT_EQ(merged->tensors[0].name, "W");
  EXPECT_EQ(merged->tensors[0].shape, (std::vector<int64_t>{5}));
  EXPECT_EQ(*merged->tensors[0].toF32({5}), (std::vector<float>{1, 2, 4, 5, 3}));
  EXPECT_EQ(merged->tensors[1].name, "Out");
  const std::pair<std::string, std::string> refusals[] = {
      {R"({"W": [1, 5]})", "do not tile its 5 rows"},     // overlap
      {R"({"W": [0, 6]})", "do not tile its"},           // another whole
      {R"({"W": [0]})", "rows that are not [first, whole]"},
      {R"({"W": [-1, 5]})", "rows that are not [first, whole]"},
      {R"(["W"])", "rows that are not an object"},
      {"{}", "came whole and in parts"},
  };
  for (const auto &[rows, message] : refusals) {
    auto refused = mergeStateTensors(parts(rows));
    ASSERT_FALSE(refused.ok()) << rows;
    EXPECT_NE(refused.message().find(message), std::string::npos) << rows << ": " << refused.message();
  }
  std::vector<SafetensorsFile> gap = parts(R"({"W": [0, 5]})");
  gap.pop_back(); // row 4 is nobody's
  auto missing = mergeStateTensors(std::move(gap));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.message(), "the parts of tensor 'W' hold rows 0 to 4 of its 5: a part is missing");
}

} // namespace
} // namespace netc::train
