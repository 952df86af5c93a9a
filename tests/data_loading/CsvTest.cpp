// CsvTest.cpp -- the CSV reader (header detection and the note that says why,
// a byte-order mark, rows without a label, the label column, errors located
// as file:line:column) and the data-folder loader's messages for a missing
// folder, a folder without data and incomplete file pairs, and the set an
// evaluation reads.
#include "runtime/data/Csv.h"
#include "DataTestSupport.h"
#include "runtime/data/DataFolder.h"

#include <gmock/gmock.h>

namespace netc::data {
namespace {

using namespace netc::data::testing;
using ::testing::AllOf;
using ::testing::HasSubstr;

TEST(CsvTest, ReadsRowsWithAHeader) {
  Expected<Dataset> data = parseCsv("label,a,b\n1, 2.5 ,3\r\n0,\"-4\",+1e2\n\n", "t.csv");
  ASSERT_TRUE(data) << data.message();
  EXPECT_EQ(data->count, 2);
  EXPECT_EQ(data->featureCount, 2);
  EXPECT_EQ(data->sampleShape, std::vector<int64_t>{2});
  EXPECT_EQ(data->features, (std::vector<float>{2.5f, 3.0f, -4.0f, 100.0f}));
  EXPECT_EQ(data->labels, (std::vector<float>{1.0f, 0.0f}));
  EXPECT_TRUE(data->integerLabels);
  EXPECT_EQ(data->classCount, 2);
  EXPECT_EQ(data->origin, "t.csv");
}

TEST(CsvTest, LabelsAreLocatedByLineAfterBlankLinesAndRowSelection) {
  Expected<Dataset> data = parseCsv("label,a\n\n1,2\n\n3,4\n5,6\n", "t.csv");
  ASSERT_TRUE(data) << data.message();
  ASSERT_EQ(data->count, 3);
  EXPECT_EQ(data->sourceRows, (std::vector<int64_t>{3, 5, 6}));
  EXPECT_EQ(labelLocation(*data, 1), "t.csv:5");
  // A validation split keeps each sample's line.
  const std::vector<int64_t> picked = {2, 0};
  Dataset subset = selectRows(*data, picked);
  EXPECT_EQ(labelLocation(subset, 0), "t.csv:6");
  EXPECT_EQ(labelLocation(subset, 1), "t.csv:3");
  EXPECT_EQ(firstLabelOutside(subset, 5), 0); // label 5 of line 6
  EXPECT_EQ(firstLabelOutside(subset, 6), -1);
  // IDX-like data: sample i is item i, also after selection.
  Dataset idx;
  idx.labelsOrigin = "labels";
  idx.count = 3;
  idx.featureCount = 1;
  idx.features = {0, 0, 0};
  idx.labels = {0, 1, 2};
  EXPECT_EQ(labelLocation(idx, 2), "labels, item 2");
  const std::vector<int64_t> last = {2};
  EXPECT_EQ(labelLocation(selectRows(idx, last), 0), "labels, item 2");
}

TEST(CsvTest, ARowOfNaNIsDataNotAHeader) {
  Expected<Dataset> data = parseCsv("NaN,1,2\n", "t.csv");
  ASSERT_FALSE(data);
  EXPECT_EQ(data.message(), "t.csv:1:1: the label (field 1) 'NaN' is not a finite number");
  data = parseCsv("1,inf,2\n", "t.csv");
  ASSERT_FALSE(data);
  EXPECT_EQ(data.message(), "t.csv:1:3: feature field 2 'inf' is not a finite number");
}

TEST(CsvTest, AByteOrderMarkIsSkipped) {
  // As spreadsheets save "CSV UTF-8": the first row is still data.
  Expected<Dataset> data = parseCsv("\xEF\xBB\xBF"
                                    "5,0.1,0.2\n1,0.3,0.4\n2,0.5,0.6\n",
                                    "t.csv");
  ASSERT_TRUE(data) << data.message();
  EXPECT_EQ(data->count, 3);
  EXPECT_EQ(data->labels, (std::vector<float>{5, 1, 2}));
  EXPECT_EQ(data->sourceRows, (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(data->headerNote, "");
  // And a header after it is a header, its first field without the mark.
  data = parseCsv("\xEF\xBB\xBF"
                  "label,a\n1,2\n",
                  "t.csv");
  ASSERT_TRUE(data) << data.message();
  EXPECT_EQ(data->count, 1);
  EXPECT_EQ(data->headerNote, "line 1 of t.csv is a header: field 1 'label' is not a number");
  // A first row with text after the mark is a header, and said to be one when nothing follows it.
  data = parseCsv("\xEF\xBB\xBF"
                  "x5,1\n",
                  "t.csv");
  ASSERT_FALSE(data);
  EXPECT_EQ(data.message(), "t.csv: a header row but no data rows (line 1 of t.csv is a header: field 1 'x5' "
                            "is not a number)");
  // UTF-16 is refused, not read as fields of NUL bytes.
  data = parseCsv(std::string("\xFF\xFE"
                              "1\0,\0"
                              "2\0",
                              8),
                  "w.csv");
  ASSERT_FALSE(data);
  EXPECT_EQ(data.message(),
            "w.csv: UTF-16 text (it starts with a UTF-16 byte-order mark); save it as UTF-8 or ASCII CSV");
}

TEST(CsvTest, AHeaderNeedsAFieldWrittenAsText) {
  // A number out of float range is a number: the row is data, and its bad
  // value gets the located error.
  Expected<Dataset> data = parseCsv("1,1e400,2\n0,1,2\n", "t.csv");
  ASSERT_FALSE(data);
  EXPECT_EQ(data.message(), "t.csv:1:3: feature field 2 '1e400' is out of range for a 32-bit float");
  data = parseCsv("1,,2\n0,1,2\n", "t.csv");
  ASSERT_FALSE(data);
  EXPECT_EQ(data.message(), "t.csv:1:3: feature field 2 is empty; expected a number");
  // A field written as text decides, and the note says which.
  data = parseCsv("label,pixel0,\n0,1,2\n", "t.csv");
  ASSERT_TRUE(data) << data.message();
  EXPECT_EQ(data->count, 1);
  EXPECT_EQ(data->headerNote, "line 1 of t.csv is a header: field 1 'label' is not a number");
  data = parseCsv("\n7,pixel0,1e400\n0,1,2\n", "t.csv");
  ASSERT_TRUE(data) << data.message();
  EXPECT_EQ(data->headerNote, "line 2 of t.csv is a header: field 2 'pixel0' is not a number");
  // A subset (a validation split) keeps the note.
  const std::vector<int64_t> first = {0};
  EXPECT_EQ(selectRows(*data, first).headerNote, data->headerNote);
}

TEST(CsvTest, RowsWithoutALabel) {
  // netc predict: rows of the input size have no label, so the first field
  // is a feature (and named so); rows of one more have a leading label.
  CsvOptions options;
  options.unlabelledWidth = 3;
  Expected<Dataset> data = parseCsv("1,2,3\n4,5,6\n", "t.csv", options);
  ASSERT_TRUE(data) << data.message();
  EXPECT_EQ(data->featureCount, 3);
  EXPECT_EQ(data->features, (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_TRUE(data->labels.empty());
  data = parseCsv("nan,2,3\n", "t.csv", options);
  ASSERT_FALSE(data);
  EXPECT_EQ(data.message(), "t.csv:1:1: feature field 1 'nan' is not a finite number");
  data = parseCsv("9,1,2,3\n", "t.csv", options);
  ASSERT_TRUE(data) << data.message();
  EXPECT_EQ(data->featureCount, 3);
  EXPECT_EQ(data->labels, std::vector<float>{9});
  data = parseCsv("nan,1,2,3\n", "t.csv", options);
  ASSERT_FALSE(data);
  EXPECT_EQ(data.message(), "t.csv:1:1: the label (field 1) 'nan' is not a finite number");
}

TEST(CsvTest, ControlBytesInAFieldAreEscaped) {
  using namespace std::string_literals;
  Expected<Dataset> data = parseCsv("1,2\n3,\0\x1b[2J\n"s, "t.csv");
  ASSERT_FALSE(data);
  EXPECT_EQ(data.message(), "t.csv:2:3: feature field 2 '\\x00\\x1B[2J' is not a number");
}

TEST(CsvTest, ReadsRowsWithoutAHeaderAndALastLabelColumn) {
  CsvOptions options;
  options.labelColumn = -1;
  Expected<Dataset> data = parseCsv("1,2,0.5\n3,4,1.5\n", "t.csv", options);
  ASSERT_TRUE(data) << data.message();
  EXPECT_EQ(data->count, 2);
  EXPECT_EQ(data->features, (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(data->labels, (std::vector<float>{0.5f, 1.5f}));
  EXPECT_FALSE(data->integerLabels);
  EXPECT_EQ(data->classCount, 0);
}

TEST(CsvTest, ForcedHeaderAndSeparator) {
  CsvOptions options;
  options.header = CsvHeader::Present;
  options.separator = ';';
  Expected<Dataset> data = parseCsv("1;2;3\n7;8;9\n", "t.csv", options);
  ASSERT_TRUE(data) << data.message();
  EXPECT_EQ(data->count, 1);
  EXPECT_EQ(data->labels, std::vector<float>{7});
  EXPECT_EQ(data->classCount, 8);
}

TEST(CsvTest, NonNumberIsLocated) {
  Expected<Dataset> data = parseCsv("1,2,3\n0,4,x5\n", "bad.csv");
  ASSERT_FALSE(data);
  EXPECT_THAT(data.message(), AllOf(HasSubstr("bad.csv:2:5:"), HasSubstr("'x5' is not a number")));
  data = parseCsv("1,2,3\n 0 , ,5\n", "bad.csv");
  ASSERT_FALSE(data);
  EXPECT_THAT(data.message(), AllOf(HasSubstr("bad.csv:2:5:"), HasSubstr("is empty")));
  data = parseCsv("1,2,3\nnan,1,5\n", "bad.csv");
  ASSERT_FALSE(data);
  EXPECT_THAT(data.message(), AllOf(HasSubstr("bad.csv:2:1:"),
                                    HasSubstr("the label (field 1) 'nan' is not a finite number")));
}

TEST(CsvTest, WrongWidth) {
  Expected<Dataset> data = parseCsv("a,b,c\n1,2,3\n4,5\n", "wide.csv");
  ASSERT_FALSE(data);
  EXPECT_THAT(data.message(),
              AllOf(HasSubstr("wide.csv:3:"), HasSubstr("expected 3 fields"), HasSubstr("found 2")));
}

TEST(CsvTest, EmptyAndHeaderOnly) {
  for (const char *text : {"", "\n\n  \n"}) {
    Expected<Dataset> data = parseCsv(text, "empty.csv");
    ASSERT_FALSE(data);
    EXPECT_THAT(data.message(), AllOf(HasSubstr("empty.csv"), HasSubstr("empty file")));
  }
  Expected<Dataset> data = parseCsv("label,x\n", "head.csv");
  ASSERT_FALSE(data);
  EXPECT_THAT(data.message(), AllOf(HasSubstr("head.csv"), HasSubstr("header row but no data rows")));
}

TEST(CsvTest, LabelColumnOutOfRangeAndSingleColumn) {
  CsvOptions options;
  options.labelColumn = 3;
  Expected<Dataset> data = parseCsv("1,2,3\n", "t.csv", options);
  ASSERT_FALSE(data);
  EXPECT_THAT(data.message(),
              AllOf(HasSubstr("t.csv:1:"), HasSubstr("label column 3"), HasSubstr("3 fields")));
  data = parseCsv("1\n2\n", "one.csv");
  ASSERT_FALSE(data);
  EXPECT_THAT(data.message(), AllOf(HasSubstr("one.csv:1:"), HasSubstr("at least one feature")));
}

TEST(CsvTest, LoadsAFileAndReportsMissingOnes) {
  TempFolder tmp;
  writeText(tmp.file("d.csv"), "y,x\n1,0.25\n");
  Expected<Dataset> data = loadCsv(tmp.file("d.csv"));
  ASSERT_TRUE(data) << data.message();
  EXPECT_EQ(data->origin, tmp.file("d.csv"));
  writeText(tmp.file("bad.csv"), "1,2\n3,y\n");
  data = loadCsv(tmp.file("bad.csv"));
  ASSERT_FALSE(data);
  EXPECT_THAT(data.message(), HasSubstr(tmp.file("bad.csv") + ":2:3:"));
  data = loadCsv(tmp.file("none.csv"));
  ASSERT_FALSE(data);
  EXPECT_THAT(data.message(), AllOf(HasSubstr(tmp.file("none.csv")), HasSubstr("no such file")));
  writeText(tmp.file("empty.csv"), "");
  data = loadCsv(tmp.file("empty.csv"));
  ASSERT_FALSE(data);
  EXPECT_THAT(data.message(), AllOf(HasSubstr(tmp.file("empty.csv")), HasSubstr("empty file")));
}

TEST(DataFolderTest, MissingFolder) {
  TempFolder tmp;
  Expected<DataFolder> folder = loadDataFolder(tmp.file("nope"));
  ASSERT_FALSE(folder);
  EXPECT_THAT(folder.message(), AllOf(HasSubstr(tmp.file("nope")), HasSubstr("does not exist")));
  writeText(tmp.file("plain"), "x");
  folder = loadDataFolder(tmp.file("plain"));
  ASSERT_FALSE(folder);
  EXPECT_THAT(folder.message(), AllOf(HasSubstr(tmp.file("plain")), HasSubstr("is not a folder")));
}

TEST(DataFolderTest, FolderWithoutDataFiles) {
  TempFolder tmp;
  writeText(tmp.file("notes.txt"), "hello");
  Expected<DataFolder> folder = loadDataFolder(tmp.dir());
  ASSERT_FALSE(folder);
  EXPECT_THAT(folder.message(), AllOf(HasSubstr(tmp.dir()), HasSubstr("no training data"),
                                      HasSubstr("train-images-idx3-ubyte[.gz]"),
                                      HasSubstr("train-labels-idx1-ubyte[.gz]"), HasSubstr("train.csv")));
}

TEST(DataFolderTest, AnEvaluationReadsTheTestSetAlone) {
  TempFolder tmp;
  // A folder with a test set only.
  writeText(tmp.file("test.csv"), "1,0.5,0.5\n0,1,1\n");
  Expected<Dataset> set = loadEvaluationSet(tmp.dir());
  ASSERT_TRUE(set) << set.message();
  EXPECT_EQ(set->origin, tmp.file("test.csv"));
  EXPECT_EQ(set->count, 2);
  // With a training set too, the test set; the training set is not read.
  writeText(tmp.file("train.csv"), "1,x,0.5\n");
  set = loadEvaluationSet(tmp.dir());
  ASSERT_TRUE(set) << set.message();
  EXPECT_EQ(set->origin, tmp.file("test.csv"));
  // Without a test set, the training set.
  std::filesystem::remove(tmp.file("test.csv"));
  writeText(tmp.file("train.csv"), "label,a,b\n1,0.5,0.5\n");
  set = loadEvaluationSet(tmp.dir());
  ASSERT_TRUE(set) << set.message();
  EXPECT_EQ(set->origin, tmp.file("train.csv"));
  EXPECT_EQ(set->headerNote,
            "line 1 of " + tmp.file("train.csv") + " is a header: field 1 'label' is not a number");
  std::filesystem::remove(tmp.file("train.csv"));
  set = loadEvaluationSet(tmp.dir());
  ASSERT_FALSE(set);
  EXPECT_EQ(set.message(), "data folder '" + tmp.dir() +
                               "' has no data: looked for a test set (t10k-images-idx3-ubyte[.gz] + "
                               "t10k-labels-idx1-ubyte[.gz], or test.csv) and a training set "
                               "(train-images-idx3-ubyte[.gz] + train-labels-idx1-ubyte[.gz], or train.csv)");
}

TEST(DataFolderTest, HalfAnIdxPair) {
  TempFolder tmp;
  writeGzip(tmp.file("train-images-idx3-ubyte.gz"), idxImages(4));
  Expected<DataFolder> folder = loadDataFolder(tmp.dir());
  ASSERT_FALSE(folder);
  EXPECT_THAT(folder.message(), AllOf(HasSubstr(tmp.file("train-images-idx3-ubyte.gz")),
                                      HasSubstr("not train-labels-idx1-ubyte[.gz]")));
}

TEST(DataFolderTest, CsvFolderAndTestShape) {
  TempFolder tmp;
  writeText(tmp.file("train.csv"), "0,1,2\n1,3,4\n2,5,6\n");
  writeText(tmp.file("test.csv"), "2,9,9\n");
  Expected<DataFolder> folder = loadDataFolder(tmp.dir());
  ASSERT_TRUE(folder) << folder.message();
  EXPECT_EQ(folder->train.count, 3);
  EXPECT_EQ(folder->train.classCount, 3);
  ASSERT_TRUE(folder->test);
  EXPECT_EQ(folder->test->count, 1);

  LoadOptions noTest;
  noTest.loadTest = false;
  folder = loadDataFolder(tmp.dir(), noTest);
  ASSERT_TRUE(folder) << folder.message();
  EXPECT_FALSE(folder->test);

  writeText(tmp.file("test.csv"), "2,9\n");
  folder = loadDataFolder(tmp.dir());
  ASSERT_FALSE(folder);
  EXPECT_THAT(folder.message(), AllOf(HasSubstr(tmp.file("test.csv")), HasSubstr("test samples have shape 1"),
                                      HasSubstr("training samples"), HasSubstr("have shape 2")));
}

} // namespace
} // namespace netc::data
