// SafetensorsMalformedTest.cpp -- every kind of damaged or inconsistent
// safetensors file is refused, with a message that names the file and
// contains the key words saying what is wrong (one parameterised case per
// kind), plus the reader's file-system errors.
#include "runtime/train/Safetensors.h"
#include "tests/checkpoint/SafetensorsTestSupport.h"

#include <gtest/gtest.h>

namespace netc::train {
namespace {

using namespace test;
using Bytes = std::vector<uint8_t>;

struct Malformed {
  std::string name;
  Bytes bytes;
  std::vector<std::string> keywords;
};

std::ostream &operator<<(std::ostream &os, const Malformed &m) {
  return os << m.name;
}

/// An image whose single entry `x` is `entry` (a JSON object body), with `data`.
Bytes oneEntry(std::string_view entry, Bytes data) {
  return image(std::string(R"({"x":{)") + std::string(entry) + "}}", data);
}

std::string shapeOfOnes(size_t rank) {
  std::string out = "[";
  for (size_t i = 0; i < rank; ++i)
    out += i ? ",1" : "1";
  return out + "]";
}

std::vector<Malformed> malformedCases() {
  const Bytes four = {1, 2, 3, 4};
  return {
      {"ShorterThanLengthField", {1, 2, 3, 4, 5}, {"5 bytes long", "shorter than the 8-byte header length"}},
      {"EmptyFile", {}, {"0 bytes long", "shorter than"}},
      {"HeaderLongerThanFile",
       concat({lengthField(1000), {'{', '}'}}),
       {"header length 1000", "exceeds the 2 bytes"}},
      {"AbsurdHeaderLength",
       concat({lengthField(uint64_t(1) << 62), {'{', '}'}}),
       {"exceeds the 100000000-byte limit"}},
      {"MaxHeaderLength", lengthField(~uint64_t(0)), {"limit"}},
      {"EmptyHeader", lengthField(0), {"does not start with '{'"}},
      {"HeaderIsArray", image("[1,2]"), {"does not start with '{'"}},
      {"LeadingSpace", image(" {}"), {"does not start with '{'"}},
      {"InvalidJson", image(R"({"x":)"), {"not valid JSON"}},
      {"TrailingJunk", image("{} x"), {"not valid JSON"}},
      {"NulPadding", image(std::string("{}\0\0", 4)), {"not valid JSON", "NUL byte at offset 2"}},
      {"NulHidesGarbage", image(std::string("{}\0 garbage", 11)), {"NUL byte"}},
      {"InvalidUtf8Key", image("{\"\xff\":{}}"), {"not valid JSON"}},
      {"EntryNotObject", image(R"({"x":5})"), {"entry 'x' is 5, expected an object"}},
      {"EntryIsArray", image(R"({"x":[]})"), {"entry 'x' is an array"}},
      {"MissingDtype",
       oneEntry(R"("shape":[1],"data_offsets":[0,4])", four),
       {"'x' is missing field 'dtype'"}},
      {"MissingShape", oneEntry(R"("dtype":"F32","data_offsets":[0,4])", four), {"missing field 'shape'"}},
      {"MissingOffsets", oneEntry(R"("dtype":"F32","shape":[1])", four), {"missing field 'data_offsets'"}},
      {"UnknownField",
       oneEntry(R"("dtype":"F32","shape":[1],"data_offsets":[0,4],"offsets":[0,4])", four),
       {"unknown field 'offsets'"}},
      {"DuplicateField",
       oneEntry(R"("dtype":"F32","dtype":"F32","shape":[1],"data_offsets":[0,4])", four),
       {"field 'dtype' twice"}},
      {"DtypeNotString",
       oneEntry(R"("dtype":4,"shape":[1],"data_offsets":[0,4])", four),
       {"field 'dtype' is 4, expected a string"}},
      {"ShapeNotArray",
       oneEntry(R"("dtype":"F32","shape":"1","data_offsets":[0,4])", four),
       {"field 'shape' is a string, expected an array"}},
      {"ShapeNegative",
       oneEntry(R"("dtype":"F32","shape":[-1],"data_offsets":[0,4])", four),
       {"shape[0] is -1, expected a non-negative integer"}},
      {"ShapeFraction",
       oneEntry(R"("dtype":"F32","shape":[1,2.5],"data_offsets":[0,4])", four),
       {"shape[1] is 2.5"}},
      {"ShapeNested",
       oneEntry(R"("dtype":"F32","shape":[[1]],"data_offsets":[0,4])", four),
       {"shape[0] is an array"}},
      {"ShapeNull",
       oneEntry(R"("dtype":"F32","shape":[null],"data_offsets":[0,4])", four),
       {"shape[0] is null"}},
      {"ShapeBeyondInt64",
       oneEntry(R"("dtype":"U8","shape":[9223372036854775808],"data_offsets":[0,4])", four),
       {"shape[0] is 9223372036854775808, which overflows"}},
      {"ShapeBeyondUint64",
       oneEntry(R"("dtype":"U8","shape":[99999999999999999999],"data_offsets":[0,4])", four),
       {"shape[0] is 99999999999999999999"}},
      {"ShapeProductOverflows",
       oneEntry(R"("dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,4])", four),
       {"overflows"}},
      {"ShapeRankTooLarge",
       oneEntry(R"("dtype":"U8","shape":)" + shapeOfOnes(1025) + R"(,"data_offsets":[0,1])", {1}),
       {"more than 1024 dimensions"}},
      {"UnknownDtype",
       oneEntry(R"("dtype":"F31","shape":[1],"data_offsets":[0,4])", four),
       {"unknown dtype 'F31'"}},
      {"SubByteDtype",
       oneEntry(R"("dtype":"F4","shape":[2],"data_offsets":[0,1])", {0}),
       {"sub-byte dtype 'F4'"}},
      {"OffsetsNotArray",
       oneEntry(R"("dtype":"F32","shape":[1],"data_offsets":4)", four),
       {"field 'data_offsets' is 4, expected an array of two"}},
      {"OffsetsOneElement",
       oneEntry(R"("dtype":"F32","shape":[1],"data_offsets":[4])", four),
       {"data_offsets has 1 element, expected two"}},
      {"OffsetsThreeElements",
       oneEntry(R"("dtype":"F32","shape":[1],"data_offsets":[0,4,4])", four),
       {"more than two elements"}},
      {"OffsetNegative",
       oneEntry(R"("dtype":"F32","shape":[1],"data_offsets":[-4,0])", four),
       {"data_offsets[0] is -4"}},
      {"OffsetsReversed",
       oneEntry(R"("dtype":"F32","shape":[1],"data_offsets":[4,0])", four),
       {"[4, 0] end before they begin"}},
      {"OffsetsPastEnd",
       oneEntry(R"("dtype":"F32","shape":[2],"data_offsets":[0,8])", four),
       {"[0, 8] reach past the end of the data section (4 bytes"}},
      {"OffsetsSizeMismatch",
       oneEntry(R"("dtype":"F32","shape":[2],"data_offsets":[0,4])", four),
       {"shape [2], which need 8 bytes", "span 4"}},
      {"Overlap",
       image(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
             R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
             Bytes(12, 0)),
       {"'a' and 'b' overlap", "begins at byte 4", "ends at byte 8"}},
      {"GapBetween",
       image(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
             R"("b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
             Bytes(12, 0)),
       {"gap", "[4, 8) before tensor 'b'"}},
      {"GapAtStart",
       oneEntry(R"("dtype":"F32","shape":[1],"data_offsets":[4,8])", Bytes(8, 0)),
       {"gap", "[0, 4)"}},
      {"TrailingBytes",
       oneEntry(R"("dtype":"F32","shape":[1],"data_offsets":[0,4])", Bytes(6, 0)),
       {"2 trailing bytes"}},
      {"DataWithoutTensors", image("{}", {1}), {"1 trailing bytes"}},
      {"MetadataNotObject", image(R"({"__metadata__":5})"), {"__metadata__ is 5, expected an object"}},
      {"MetadataArray", image(R"({"__metadata__":["a"]})"), {"__metadata__ is an array"}},
      {"MetadataValueNumber",
       image(R"({"__metadata__":{"epoch":3}})"),
       {"__metadata__ value for 'epoch' is 3, expected a string"}},
      {"MetadataValueObject", image(R"({"__metadata__":{"k":{}}})"), {"value for 'k' is an object"}},
      {"MetadataDuplicateKey", image(R"({"__metadata__":{"k":"1","k":"2"}})"), {"key 'k' twice"}},
      {"MetadataTwice", image(R"({"__metadata__":{},"__metadata__":{}})"), {"two __metadata__ objects"}},
      {"DuplicateTensor",
       image(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},)"
             R"("a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}})",
             {1, 2}),
       {"lists tensor 'a' twice"}},
  };
}

class SafetensorsMalformed : public ::testing::TestWithParam<Malformed> {};

TEST_P(SafetensorsMalformed, IsRefusedWithAMessage) {
  const Malformed &m = GetParam();
  auto result = parseSafetensors(m.bytes, "bad.safetensors");
  ASSERT_FALSE(result.ok()) << m.name << " was accepted";
  const std::string &message = result.message();
  EXPECT_EQ(message.rfind("bad.safetensors: ", 0), 0u) << message;
  for (const std::string &keyword : m.keywords)
    EXPECT_NE(message.find(keyword), std::string::npos) << "missing '" << keyword << "' in: " << message;
}

INSTANTIATE_TEST_SUITE_P(Cases, SafetensorsMalformed, ::testing::ValuesIn(malformedCases()),
                         [](const ::testing::TestParamInfo<Malformed> &info) { return info.param.name; });

class SafetensorsReadErrors : public ScratchDir {};

TEST_F(SafetensorsReadErrors, MissingFileDirectoryAndDamagedFileOnDisk) {
  auto missing = readSafetensors((dir_ / "absent.safetensors").string());
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.message().find("absent.safetensors: no such file"), std::string::npos)
      << missing.message();

  auto directory = readSafetensors(dir_.string());
  ASSERT_FALSE(directory.ok());
  EXPECT_NE(directory.message().find("not a regular file"), std::string::npos) << directory.message();

  auto path = dir_ / "trailing.safetensors";
  writeBytes(path, oneEntry(R"("dtype":"F32","shape":[1],"data_offsets":[0,4])", Bytes(5, 0)));
  auto trailing = readSafetensors(path.string());
  ASSERT_FALSE(trailing.ok());
  EXPECT_NE(trailing.message().find(path.string() + ": 1 trailing bytes"), std::string::npos)
      << trailing.message();
}

} // namespace
} // namespace netc::train
