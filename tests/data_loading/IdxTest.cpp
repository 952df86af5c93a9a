// IdxTest.cpp -- the IDX reader: the committed slice of real digits, gzip and
// raw giving the same data, the real data sets when present (data/mnist from
// scripts/prepare_mnist.sh, Debian's fashion-mnist), and every kind of bad
// file, each message naming the file and saying what was expected and found.
#include "runtime/data/Idx.h"
#include "DataTestSupport.h"
#include "runtime/data/DataFolder.h"

#include <gmock/gmock.h>

#include <filesystem>
#include <numeric>

namespace netc::data {
namespace {

using namespace netc::data::testing;
using ::testing::AllOf;
using ::testing::HasSubstr;

const char *const kIdxNames[] = {"train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                                 "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"};

TEST(IdxTest, LoadsTheMnistSlice) {
  Expected<DataFolder> folder = loadDataFolder(sliceDir());
  ASSERT_TRUE(folder) << folder.message();
  const Dataset &train = folder->train;
  EXPECT_EQ(train.count, 500);
  EXPECT_EQ(train.featureCount, 784);
  EXPECT_EQ(train.sampleShape, (std::vector<int64_t>{28, 28}));
  EXPECT_TRUE(train.integerLabels);
  EXPECT_EQ(train.classCount, 10);
  ASSERT_EQ(train.features.size(), 500u * 784u);
  for (int64_t i = 0; i < train.count; ++i)
    ASSERT_EQ(train.labels[i], static_cast<float>(i / 50)) << "sample " << i;
  // Pixels are the file's bytes as floats 0..255.
  Bytes raw = readBytes(sliceDir() + "/train-images-idx3-ubyte");
  ASSERT_EQ(raw.size(), 16u + 500u * 784u);
  for (size_t k = 0; k < train.features.size(); ++k)
    ASSERT_EQ(train.features[k], static_cast<float>(raw[16 + k])) << "pixel " << k;
  EXPECT_EQ(*std::max_element(train.features.begin(), train.features.end()), 255.0f);

  ASSERT_TRUE(folder->test.has_value());
  const Dataset &test = *folder->test;
  EXPECT_EQ(test.count, 100);
  EXPECT_EQ(test.sampleShape, (std::vector<int64_t>{28, 28}));
  EXPECT_EQ(test.classCount, 10);
  for (int64_t i = 0; i < test.count; ++i)
    ASSERT_EQ(test.labels[i], static_cast<float>(i / 10)) << "sample " << i;
}

TEST(IdxTest, GzipAndRawGiveTheSameData) {
  TempFolder tmp;
  for (const char *name : kIdxNames)
    writeGzip(tmp.file(std::string(name) + ".gz"), readBytes(sliceDir() + "/" + name));
  Expected<DataFolder> gz = loadDataFolder(tmp.dir());
  Expected<DataFolder> raw = loadDataFolder(sliceDir());
  ASSERT_TRUE(gz) << gz.message();
  ASSERT_TRUE(raw) << raw.message();
  EXPECT_EQ(gz->train.features, raw->train.features);
  EXPECT_EQ(gz->train.labels, raw->train.labels);
  EXPECT_EQ(gz->train.sampleShape, raw->train.sampleShape);
  ASSERT_TRUE(gz->test && raw->test);
  EXPECT_EQ(gz->test->features, raw->test->features);
  EXPECT_EQ(gz->test->labels, raw->test->labels);
}

TEST(IdxTest, PrefersTheRawFileWhenBothExist) {
  TempFolder tmp;
  for (const char *name : kIdxNames) {
    writeBytes(tmp.file(name), readBytes(sliceDir() + "/" + name));
    writeText(tmp.file(std::string(name) + ".gz"), "not gzip and not IDX");
  }
  EXPECT_EQ(findIdxFile(tmp.dir(), "train-images-idx3-ubyte"), tmp.file("train-images-idx3-ubyte"));
  Expected<DataFolder> folder = loadDataFolder(tmp.dir());
  ASSERT_TRUE(folder) << folder.message();
  EXPECT_EQ(folder->train.count, 500);
}

TEST(IdxTest, RecognisesGzipByContent) {
  // A gzip stream under the raw name is still read.
  TempFolder tmp;
  writeGzip(tmp.file("images"), idxImages(3));
  writeBytes(tmp.file("labels"), idxLabels(3));
  Expected<Dataset> data = loadIdx(tmp.file("images"), tmp.file("labels"));
  ASSERT_TRUE(data) << data.message();
  EXPECT_EQ(data->count, 3);
  EXPECT_EQ(data->featureCount, 12);
  EXPECT_EQ(data->features[12 + 1], 8.0f); // image 1, pixel 1: 1*7 + 1
}

TEST(IdxTest, WrongMagic) {
  TempFolder tmp;
  writeBytes(tmp.file("train-images-idx3-ubyte"), idxLabels(5)); // a labels file in the images slot
  writeBytes(tmp.file("train-labels-idx1-ubyte"), idxLabels(5));
  Expected<DataFolder> folder = loadDataFolder(tmp.dir());
  ASSERT_FALSE(folder);
  EXPECT_THAT(folder.message(),
              AllOf(HasSubstr(tmp.file("train-images-idx3-ubyte")), HasSubstr("0x00000801"),
                    HasSubstr("expected 0x00000803"), HasSubstr("looks like a labels file")));
}

TEST(IdxTest, TruncatedImages) {
  TempFolder tmp;
  Bytes images = idxImages(10);
  images.resize(16 + 5 * 12); // the header claims 10 images of 4 x 3, the file holds 5
  writeBytes(tmp.file("images"), images);
  writeGzip(tmp.file("images.gz"), images);
  writeBytes(tmp.file("labels"), idxLabels(10));
  for (const char *name : {"images", "images.gz"}) {
    Expected<Dataset> data = loadIdx(tmp.file(name), tmp.file("labels"));
    ASSERT_FALSE(data) << name;
    EXPECT_THAT(data.message(),
                AllOf(HasSubstr(tmp.file(name)), HasSubstr("truncated"), HasSubstr("10 x 4 x 3"),
                      HasSubstr("needs 136 bytes"), HasSubstr(" 76 bytes")));
  }
}

TEST(IdxTest, TruncatedGzipStream) {
  // The compressed stream itself is cut: zlib reports an early end.
  TempFolder tmp;
  writeGzip(tmp.file("full.gz"), idxImages(200, 28, 28));
  Bytes gz = readBytes(tmp.file("full.gz"));
  gz.resize(gz.size() / 2);
  writeBytes(tmp.file("images.gz"), gz);
  writeBytes(tmp.file("labels"), idxLabels(200));
  Expected<Dataset> data = loadIdx(tmp.file("images.gz"), tmp.file("labels"));
  ASSERT_FALSE(data);
  EXPECT_THAT(data.message(), AllOf(HasSubstr(tmp.file("images.gz")), HasSubstr("needs 156816 bytes"),
                                    HasSubstr("cut short")));
}

TEST(IdxTest, TruncatedLabels) {
  TempFolder tmp;
  Bytes labels = idxLabels(10);
  labels.resize(8 + 5);
  writeBytes(tmp.file("images"), idxImages(10));
  writeBytes(tmp.file("labels"), labels);
  Expected<Dataset> data = loadIdx(tmp.file("images"), tmp.file("labels"));
  ASSERT_FALSE(data);
  EXPECT_THAT(data.message(), AllOf(HasSubstr(tmp.file("labels")), HasSubstr("truncated"),
                                    HasSubstr("needs 18 bytes"), HasSubstr("has 13 bytes")));
}

TEST(IdxTest, TruncatedHeader) {
  TempFolder tmp;
  writeBytes(tmp.file("images"), Bytes{0, 0, 8, 3, 0, 0});
  writeBytes(tmp.file("labels"), idxLabels(1));
  Expected<Dataset> data = loadIdx(tmp.file("images"), tmp.file("labels"));
  ASSERT_FALSE(data);
  EXPECT_THAT(data.message(),
              AllOf(HasSubstr(tmp.file("images")), HasSubstr("needs 16 bytes"), HasSubstr("has 6 bytes")));
  writeBytes(tmp.file("empty"), {});
  data = loadIdx(tmp.file("empty"), tmp.file("labels"));
  ASSERT_FALSE(data);
  EXPECT_THAT(data.message(), AllOf(HasSubstr(tmp.file("empty")), HasSubstr("has 0 bytes")));
}

TEST(IdxTest, CountMismatch) {
  TempFolder tmp;
  writeBytes(tmp.file("train-images-idx3-ubyte"), idxImages(10));
  writeBytes(tmp.file("train-labels-idx1-ubyte"), idxLabels(9));
  Expected<DataFolder> folder = loadDataFolder(tmp.dir());
  ASSERT_FALSE(folder);
  EXPECT_THAT(folder.message(), AllOf(HasSubstr(tmp.file("train-images-idx3-ubyte")), HasSubstr("10 images"),
                                      HasSubstr(tmp.file("train-labels-idx1-ubyte")), HasSubstr("9 labels")));
}

TEST(IdxTest, HugeClaimedSizeDoesNotAllocate) {
  // 1024 x 1024 x 1048576 = 2^40 bytes claimed by a file of a few bytes; under
  // ASan an attempt to allocate that would abort the test.
  TempFolder tmp;
  Bytes huge = idxHeader(0x00000803, {1024, 1024, 1048576});
  huge.resize(huge.size() + 100, 7);
  writeBytes(tmp.file("images"), huge);
  writeGzip(tmp.file("images.gz"), huge);
  writeBytes(tmp.file("labels"), idxLabels(1024));
  Expected<Dataset> raw = loadIdx(tmp.file("images"), tmp.file("labels"));
  ASSERT_FALSE(raw);
  EXPECT_THAT(raw.message(), AllOf(HasSubstr(tmp.file("images")), HasSubstr("needs 1099511627792 bytes"),
                                   HasSubstr(" 116 bytes")));
  // A gzip file is refused by what its size can hold, before inflating.
  Expected<Dataset> gz = loadIdx(tmp.file("images.gz"), tmp.file("labels"));
  ASSERT_FALSE(gz);
  const uint64_t gzSize = readBytes(tmp.file("images.gz")).size();
  EXPECT_EQ(
      gz.message(),
      tmp.file("images.gz") +
          ": truncated: the header (1024 x 1024 x 1048576) needs 1099511627792 bytes after decompression "
          "but a gzip file of " +
          std::to_string(gzSize) + " bytes decompresses to at most " + std::to_string(gzSize * 1032) +
          " (deflate expands at most 1032:1); re-download it");
  // Dimensions whose product overflows 64 bits.
  writeBytes(tmp.file("overflow"), idxHeader(0x00000803, {0xffffffff, 0xffffffff, 0xffffffff}));
  Expected<Dataset> data = loadIdx(tmp.file("overflow"), tmp.file("labels"));
  ASSERT_FALSE(data);
  EXPECT_THAT(data.message(), AllOf(HasSubstr(tmp.file("overflow")), HasSubstr("overflow")));
}

TEST(IdxTest, AGzipBombIsRefusedBeforeItIsInflated) {
  // 64 MiB of zeros compress to about 64 KiB: a header claiming 1 GiB is more
  // than that file can hold, so nothing is inflated.
  TempFolder tmp;
  Bytes bomb = idxHeader(0x00000803, {1024, 1024, 1024});
  bomb.resize(bomb.size() + (size_t{64} << 20), 0);
  writeGzip(tmp.file("bomb.gz"), bomb);
  Expected<IdxArray> array = readIdxFile(tmp.file("bomb.gz"), kIdxImagesMagic);
  ASSERT_FALSE(array);
  EXPECT_THAT(array.message(), AllOf(HasSubstr(tmp.file("bomb.gz") +
                                               ": truncated: the header (1024 x 1024 x "
                                               "1024) needs 1073741840 bytes after decompression but a gzip "
                                               "file of "),
                                     HasSubstr("(deflate expands at most 1032:1); re-download it")));
}

TEST(IdxTest, DataPastTheMemoryLimitIsRefusedBeforeItIsRead) {
  // 100 images of 4 x 3 take 1,200 bytes and 4,800 as floats.
  TempFolder tmp;
  writeBytes(tmp.file("images"), idxImages(100));
  writeGzip(tmp.file("images.gz"), idxImages(100));
  for (const char *name : {"images", "images.gz"}) {
    Expected<IdxArray> array = readIdxFile(tmp.file(name), kIdxImagesMagic, 4096);
    ASSERT_FALSE(array) << name;
    EXPECT_EQ(array.message(), tmp.file(name) + ": the header (100 x 4 x 3) declares 1200 elements, 5.9 KiB "
                                                "once read and converted to floats; that is more than the "
                                                "memory limit of 4.0 KiB; use a smaller file");
    array = readIdxFile(tmp.file(name), kIdxImagesMagic, 6000);
    ASSERT_TRUE(array) << array.message();
    EXPECT_EQ(array->bytes.size(), 1200u);
  }
}

TEST(IdxTest, ZeroDimension) {
  TempFolder tmp;
  writeBytes(tmp.file("images"), idxHeader(0x00000803, {5, 0, 28}));
  writeBytes(tmp.file("labels"), idxLabels(5));
  Expected<Dataset> data = loadIdx(tmp.file("images"), tmp.file("labels"));
  ASSERT_FALSE(data);
  EXPECT_THAT(data.message(),
              AllOf(HasSubstr(tmp.file("images")), HasSubstr("dimension 1"), HasSubstr("is 0")));
}

TEST(IdxTest, DataPastTheClaimedSize) {
  TempFolder tmp;
  Bytes images = idxImages(3);
  Bytes longer = images;
  longer.insert(longer.end(), 12, 1); // one more image than the header says
  writeBytes(tmp.file("images"), longer);
  writeGzip(tmp.file("images.gz"), longer);
  writeBytes(tmp.file("labels"), idxLabels(3));
  Expected<Dataset> raw = loadIdx(tmp.file("images"), tmp.file("labels"));
  ASSERT_FALSE(raw);
  EXPECT_THAT(raw.message(), AllOf(HasSubstr(tmp.file("images")), HasSubstr("12 bytes after the 52"),
                                   HasSubstr("expected exactly 52 bytes")));
  Expected<Dataset> gz = loadIdx(tmp.file("images.gz"), tmp.file("labels"));
  ASSERT_FALSE(gz);
  EXPECT_THAT(gz.message(),
              AllOf(HasSubstr(tmp.file("images.gz")), HasSubstr("continues past the 52 bytes")));
}

TEST(IdxTest, CorruptGzip) {
  TempFolder tmp;
  writeGzip(tmp.file("good.gz"), idxImages(50, 28, 28));
  Bytes gz = readBytes(tmp.file("good.gz"));
  for (size_t k = 20; k < gz.size() - 8; k += 3)
    gz[k] ^= 0x5a;
  writeBytes(tmp.file("images.gz"), gz);
  writeBytes(tmp.file("labels"), idxLabels(50));
  Expected<Dataset> data = loadIdx(tmp.file("images.gz"), tmp.file("labels"));
  ASSERT_FALSE(data);
  EXPECT_THAT(data.message(), AllOf(HasSubstr(tmp.file("images.gz")), HasSubstr("corrupt gzip data")));
}

TEST(IdxTest, MissingAndUnreadableFiles) {
  TempFolder tmp;
  writeBytes(tmp.file("labels"), idxLabels(1));
  Expected<Dataset> data = loadIdx(tmp.file("nowhere"), tmp.file("labels"));
  ASSERT_FALSE(data);
  EXPECT_THAT(data.message(), AllOf(HasSubstr(tmp.file("nowhere")), HasSubstr("no such file")));
  std::filesystem::create_directory(tmp.file("folder"));
  data = loadIdx(tmp.file("folder"), tmp.file("labels"));
  ASSERT_FALSE(data);
  EXPECT_THAT(data.message(), AllOf(HasSubstr(tmp.file("folder")), HasSubstr("not a regular file")));
}

/// Counts of each label 0..9.
std::vector<int64_t> labelHistogram(const Dataset &data) {
  std::vector<int64_t> counts(10, 0);
  for (float label : data.labels)
    ++counts.at(static_cast<size_t>(label));
  return counts;
}

TEST(IdxTest, PreparedMnist) {
  const std::string dir = std::string(NETC_SOURCE_DIR) + "/data/mnist";
  if (!std::filesystem::exists(dir))
    GTEST_SKIP() << dir << " does not exist; run scripts/prepare_mnist.sh to test the full 10,000 digits";
  Expected<DataFolder> folder = loadDataFolder(dir);
  ASSERT_TRUE(folder) << folder.message();
  EXPECT_EQ(folder->train.count, 8004);
  EXPECT_EQ(labelHistogram(folder->train),
            (std::vector<int64_t>{801, 902, 793, 826, 784, 691, 812, 856, 756, 783}));
  ASSERT_TRUE(folder->test);
  EXPECT_EQ(folder->test->count, 1996);
  EXPECT_EQ(labelHistogram(*folder->test),
            (std::vector<int64_t>{200, 225, 198, 206, 196, 172, 202, 214, 188, 195}));
  EXPECT_EQ(folder->train.classCount, 10);
  EXPECT_EQ(folder->train.sampleShape, (std::vector<int64_t>{28, 28}));

  // The committed slice is the first 50 training / 10 test samples of each digit.
  Expected<DataFolder> slice = loadDataFolder(sliceDir());
  ASSERT_TRUE(slice) << slice.message();
  for (const auto &[full, part, perDigit] :
       {std::tuple{&folder->train, &slice->train, 50}, std::tuple{&*folder->test, &*slice->test, 10}}) {
    int64_t start = 0;
    std::vector<int64_t> counts = labelHistogram(*full);
    for (int digit = 0; digit < 10; ++digit) {
      for (int k = 0; k < perDigit; ++k) {
        auto a = full->row(start + k);
        auto b = part->row(digit * perDigit + k);
        ASSERT_TRUE(std::equal(a.begin(), a.end(), b.begin())) << "digit " << digit << " sample " << k;
      }
      start += counts[digit];
    }
  }
}

TEST(IdxTest, DebianFashionMnist) {
  const std::string dir = "/usr/share/datasets/fashion-mnist";
  if (!std::filesystem::exists(dir))
    GTEST_SKIP() << dir << " does not exist; install the Debian package dataset-fashion-mnist to test it";
  Expected<DataFolder> folder = loadDataFolder(dir);
  ASSERT_TRUE(folder) << folder.message();
  EXPECT_EQ(folder->train.count, 60000);
  EXPECT_EQ(folder->train.sampleShape, (std::vector<int64_t>{28, 28}));
  EXPECT_EQ(folder->train.classCount, 10);
  ASSERT_TRUE(folder->test);
  EXPECT_EQ(folder->test->count, 10000);
  EXPECT_EQ(labelHistogram(*folder->test), std::vector<int64_t>(10, 1000));
}

} // namespace
} // namespace netc::data
