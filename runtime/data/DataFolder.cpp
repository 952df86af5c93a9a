// DataFolder.cpp -- finds and loads a data folder's training and test sets
// (see DataFolder.h): IDX pairs under the MNIST names first, then CSV files;
// an evaluation reads the test set alone when there is one.
#include "runtime/data/DataFolder.h"

#include "runtime/data/Idx.h"

#include <fmt/format.h>

#include <filesystem>
#include <system_error>

namespace netc::data {
namespace {

namespace fs = std::filesystem;

/// The files one data set may come from.
struct SetNames {
  const char *role;   // "training" or "test"
  const char *images; // IDX images base name
  const char *labels; // IDX labels base name
  const char *csv;    // CSV file name
};

constexpr SetNames kTrain = {"training", "train-images-idx3-ubyte", "train-labels-idx1-ubyte", "train.csv"};
constexpr SetNames kTest = {"test", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte", "test.csv"};

std::string lookedFor(const SetNames &names) {
  return fmt::format("{0}[.gz] + {1}[.gz], or {2}", names.images, names.labels, names.csv);
}

/// Loads one set; nullopt (as a value) when the folder has none of its files.
Expected<std::optional<Dataset>> loadSet(const std::string &dir, const SetNames &names,
                                         const LoadOptions &options) {
  std::string images = findIdxFile(dir, names.images);
  std::string labels = findIdxFile(dir, names.labels);
  if (!images.empty() || !labels.empty()) {
    if (images.empty() || labels.empty())
      return fail(fmt::format("data folder '{}': found {} but not {}[.gz]; the {} set needs both", dir,
                              images.empty() ? labels : images, images.empty() ? names.images : names.labels,
                              names.role));
    Expected<Dataset> data = loadIdx(images, labels, options.memoryLimit);
    if (!data)
      return data.error();
    return std::optional<Dataset>(std::move(*data));
  }
  fs::path csv = fs::path(dir) / names.csv;
  std::error_code ec;
  if (fs::exists(csv, ec)) {
    Expected<Dataset> data = loadCsv(csv.string(), options.csv);
    if (!data)
      return data.error();
    return std::optional<Dataset>(std::move(*data));
  }
  return std::optional<Dataset>();
}

std::string describeShape(const std::vector<int64_t> &shape) {
  std::string text;
  for (size_t i = 0; i < shape.size(); ++i)
    text += fmt::format("{}{}", i ? " x " : "", shape[i]);
  return text;
}

Status checkFolder(const std::string &dir) {
  std::error_code ec;
  fs::file_status status = fs::status(dir, ec);
  if (ec || !fs::exists(status))
    return fail(
        fmt::format("data folder '{}' does not exist (for MNIST, run scripts/prepare_mnist.sh and pass "
                    "--data data/mnist)",
                    dir));
  if (!fs::is_directory(status))
    return fail(fmt::format("data folder '{}' is not a folder", dir));
  return Status::success();
}

} // namespace

Expected<DataFolder> loadDataFolder(const std::string &dir, const LoadOptions &options) {
  if (Status folder = checkFolder(dir); !folder)
    return fail(folder.message());
  Expected<std::optional<Dataset>> train = loadSet(dir, kTrain, options);
  if (!train)
    return train.error();
  if (!train->has_value())
    return fail(fmt::format("data folder '{}' has no training data: looked for {}", dir, lookedFor(kTrain)));

  DataFolder folder;
  folder.train = std::move(**train);
  if (!options.loadTest)
    return folder;
  Expected<std::optional<Dataset>> test = loadSet(dir, kTest, options);
  if (!test)
    return test.error();
  if (test->has_value()) {
    Dataset &t = **test;
    if (t.sampleShape != folder.train.sampleShape)
      return fail(fmt::format(
          "{}: test samples have shape {} but training samples ({}) have shape {}; expected the same shape",
          t.origin, describeShape(t.sampleShape), folder.train.origin,
          describeShape(folder.train.sampleShape)));
    folder.test = std::move(t);
  }
  return folder;
}

Expected<Dataset> loadEvaluationSet(const std::string &dir, const LoadOptions &options) {
  if (Status folder = checkFolder(dir); !folder)
    return fail(folder.message());
  for (const SetNames *names : {&kTest, &kTrain}) {
    Expected<std::optional<Dataset>> set = loadSet(dir, *names, options);
    if (!set)
      return set.error();
    if (set->has_value())
      return std::move(**set);
  }
  return fail(fmt::format("data folder '{}' has no data: looked for a test set ({}) and a training set ({})",
                          dir, lookedFor(kTest), lookedFor(kTrain)));
}

} // namespace netc::data
