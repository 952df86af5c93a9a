// CudnnAlgorithmsTest.cpp -- choosing a cuDNN algorithm from cudnnFind*'s
// trials and the on-disk cache of choices (runtime/cuda/CudnnAlgorithms.h),
// without a GPU: the fastest allowed deterministic trial wins, a damaged
// or foreign cache file is read as empty or without its bad lines, the
// cache folder follows the environment, and a cache that cannot be written
// says why. Also the call numbers (CudnnShapes) of the seed network's and
// LeNet-5's convolutions, pinned.
#include "PlanHarness.h"

#include "runtime/cuda/CudnnAlgorithms.h"
#include "runtime/cuda/CudnnConvolution.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <random>

namespace netc::runtime::cuda {
namespace {

constexpr int kFma = 3, kTensorOp = 1;

TEST(CudnnAlgorithms, TheFastestAllowedDeterministicTrialWithinTheWorkspaceLimitWins) {
  std::vector<AlgorithmTrial> trials = {{0, true, 0.50f, 0, true, kFma},      // deterministic, slow
                                        {1, true, 0.20f, 1024, false, kFma},  // fastest, not deterministic
                                        {2, true, 0.10f, 0, true, kTensorOp}, // fastest, but TF32 math
                                        {3, false, 0.01f, 0, true, kFma},     // failed
                                        {4, true, 0.30f, 4096, true, kFma}};  // the fastest that qualifies
  const std::vector<int> fp32 = {kFma}, any = {kFma, kTensorOp};
  EXPECT_EQ(pickTrial(trials, fp32, kWorkspaceLimit), std::optional<size_t>(4));
  EXPECT_EQ(pickTrial(trials, any, kWorkspaceLimit), std::optional<size_t>(2));
  // A workspace over the limit rules a trial out.
  EXPECT_EQ(pickTrial(trials, fp32, 1024), std::optional<size_t>(0));
  // Without a deterministic one, the fastest allowed.
  std::vector<AlgorithmTrial> racy = {{5, true, 0.4f, 0, false, kFma}, {6, true, 0.3f, 0, false, kFma}};
  EXPECT_EQ(pickTrial(racy, fp32, kWorkspaceLimit), std::optional<size_t>(1));
  // Nothing allowed: no choice (the op stays on netc's kernels).
  EXPECT_EQ(
      pickTrial(std::vector<AlgorithmTrial>{{7, true, 0.1f, 0, true, kTensorOp}}, fp32, kWorkspaceLimit),
      std::nullopt);
  EXPECT_EQ(pickTrial({}, fp32, kWorkspaceLimit), std::nullopt);
}

TEST(CudnnAlgorithms, TheCacheTextRoundTripsAndSkipsDamage) {
  AlgorithmCache cache;
  cache.entries["forward NVIDIA H200 sm90 cudnn91900 fp32 x=128,1,28,28/784,784,28,1"] = {1, kFma};
  cache.entries["backward-data NVIDIA H200 sm90 cudnn91900 fp32 x=1"] = {0, kFma};
  const std::string text = cache.format();
  EXPECT_EQ(text.substr(0, text.find('\n')), "# netc cuDNN algorithm cache v1");
  AlgorithmCache back = AlgorithmCache::parse(text);
  ASSERT_EQ(back.entries.size(), 2u);
  EXPECT_EQ(back.entries.begin()->second.algorithm, 0);
  EXPECT_FALSE(back.changed);
  // Bad lines are skipped, good ones kept.
  AlgorithmCache damaged =
      AlgorithmCache::parse(text + "no tabs here\nkey\tx\t3\nkey\t-1\t3\n\tkey-less\t1\t3\nok\t7\t3\n");
  EXPECT_EQ(damaged.entries.size(), 3u);
  EXPECT_EQ(damaged.entries.at("ok").algorithm, 7);
  // Another header (another version, or not a cache at all): nothing.
  EXPECT_TRUE(AlgorithmCache::parse("# netc cuDNN algorithm cache v0\nok\t7\t3\n").entries.empty());
  EXPECT_TRUE(AlgorithmCache::parse(std::string("\x7f"
                                                "ELF\x02\x01",
                                                6))
                  .entries.empty());
}

/// Seeded mutations of a valid cache file (bytes flipped, inserted, deleted,
/// the file cut short, a field of a line made empty, negative, huge or not a
/// number): parsing never fails, every entry it keeps is well
/// formed (a key without tab or newline, non-negative numbers), and writing
/// those entries and reading them back gives the same entries.
TEST(CudnnAlgorithms, MutatedCacheFilesParseToWellFormedEntries) {
  AlgorithmCache cache;
  for (int i = 0; i < 6; ++i)
    cache.entries[fmt::format("forward NVIDIA H200 sm90 cudnn91900 fp32 x=128,{},28,28 groups=1", i)] = {
        i, kFma};
  const std::string valid = cache.format();
  std::mt19937 rng(20261126);
  int kept = 0;
  for (int round = 0; round < 2000; ++round) {
    std::string text = valid;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits && !text.empty(); ++e) {
      const size_t at = rng() % text.size();
      switch (rng() % 5) {
      case 0: text[at] = static_cast<char>(rng() % 256); break;
      case 1: text.insert(at, 1, "\t\n-0123456789x"[rng() % 15]); break;
      case 2: text.erase(at, 1 + rng() % 80); break;
      case 3: text.resize(at); break;
      default: { // one field of one line made hostile
        const char *hostile[] = {"", "-1", "x", "99999999999", "3\t4", " 7"};
        const size_t lineStart = text.rfind('\n', at) == std::string::npos ? 0 : text.rfind('\n', at) + 1;
        const size_t lineEnd = std::min(text.find('\n', lineStart), text.size());
        std::vector<std::string> fields;
        for (size_t from = lineStart;;) {
          const size_t tab = text.find('\t', from);
          if (tab == std::string::npos || tab >= lineEnd) {
            fields.push_back(text.substr(from, lineEnd - from));
            break;
          }
          fields.push_back(text.substr(from, tab - from));
          from = tab + 1;
        }
        fields[rng() % fields.size()] = hostile[rng() % std::size(hostile)];
        std::string line;
        for (size_t f = 0; f < fields.size(); ++f)
          line += (f ? "\t" : "") + fields[f];
        text.replace(lineStart, lineEnd - lineStart, line);
        break;
      }
      }
    }
    AlgorithmCache parsed = AlgorithmCache::parse(text);
    for (const auto &[key, choice] : parsed.entries) {
      EXPECT_FALSE(key.empty());
      EXPECT_EQ(key.find_first_of("\t\n"), std::string::npos) << key;
      EXPECT_GE(choice.algorithm, 0);
      EXPECT_GE(choice.mathType, 0);
    }
    AlgorithmCache again = AlgorithmCache::parse(parsed.format());
    ASSERT_EQ(again.entries.size(), parsed.entries.size()) << text;
    kept += static_cast<int>(parsed.entries.size());
  }
  EXPECT_GT(kept, 0); // most mutations leave most lines intact
}

TEST(CudnnAlgorithms, TheCacheFolderFollowsTheEnvironment) {
  EXPECT_EQ(algorithmCachePath("/c", "/x", "/h"), "/c/cudnn-algorithms.tsv");
  EXPECT_EQ(algorithmCachePath("", "/x", "/h"), "/x/netc/cudnn-algorithms.tsv");
  EXPECT_EQ(algorithmCachePath(nullptr, nullptr, "/h"), "/h/.cache/netc/cudnn-algorithms.tsv");
  EXPECT_EQ(algorithmCachePath(nullptr, nullptr, nullptr), "");
}

TEST(CudnnAlgorithms, TheCacheFileIsWrittenWholeOrNotAtAll) {
  const auto dir = std::filesystem::temp_directory_path() / ("netc-cudnn-cache-" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  const std::string path = (dir / "sub" / "cudnn-algorithms.tsv").string();
  AlgorithmCache cache;
  cache.entries["k"] = {2, kFma};
  ASSERT_TRUE(writeAlgorithmCache(path, cache).ok());
  EXPECT_EQ(readAlgorithmCache(path).entries.at("k").algorithm, 2);
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir / "sub"), {}), 1); // no temporary left
  EXPECT_TRUE(readAlgorithmCache((dir / "missing.tsv").string()).entries.empty());
  // A folder where the file should be: an error that names the path.
  std::filesystem::create_directories(dir / "taken" / "cudnn-algorithms.tsv");
  Status s = writeAlgorithmCache((dir / "taken" / "cudnn-algorithms.tsv").string(), cache);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("cudnn-algorithms.tsv"), std::string::npos) << s.message();
  std::filesystem::remove_all(dir);
}

/// The call numbers of each described convolution of `path`, at `batch`.
std::vector<std::string> shapeKeys(const std::string &path, int64_t batch) {
  numeric::Compiled compiled = numeric::compileAndPlan(numeric::readFile(numeric::sourcePath(path)));
  std::vector<std::string> keys;
  for (const plan::Op &op : compiled.plan.ops)
    if (op.kind == plan::OpKind::Convolution) {
      auto c = describeForCudnn(op.get<plan::ConvAttrs>(), compiled.plan.buffers[size_t(op.in[2])].table,
                                compiled.plan.buffers[size_t(op.in[3])].table);
      EXPECT_TRUE(c.has_value());
      if (!c)
        continue;
      auto shapes = cudnnShapes(*c, batch);
      EXPECT_TRUE(shapes.ok());
      if (shapes.ok())
        keys.push_back(shapeKey(*shapes));
    }
  return keys;
}

TEST(CudnnShapes, TheExamplesCallNumbersArePinned) {
  // The seed network: 5 maps of 4×4 at stride 2, then a bank of 10 kernels
  // per map (grouped, 5 groups: Net#'s channel order is permuted).
  EXPECT_EQ(
      shapeKeys("examples/mnist.net", 128),
      (std::vector<std::string>{
          "x=128,1,28,28/784,784,28,1 w=5,1,4,4 y=128,5,13,13/845,169,13,1 pad=0,0 stride=2,2 groups=1",
          "x=128,5,13,13/845,169,13,1 w=50,1,5,5 y=128,50,5,5/1250,25,5,1 pad=0,0 stride=2,2 groups=5"}));
  // LeNet-5: 6 maps of 5×5 padded by 2, then 16 maps spanning all 6.
  EXPECT_EQ(
      shapeKeys("examples/lenet5.net", 128),
      (std::vector<std::string>{
          "x=128,1,28,28/784,784,28,1 w=6,1,5,5 y=128,6,28,28/4704,784,28,1 pad=2,2 stride=1,1 groups=1",
          "x=128,6,14,14/1176,196,14,1 w=16,6,5,5 y=128,16,10,10/1600,100,10,1 pad=0,0 stride=1,1 "
          "groups=1"}));
}

TEST(CudnnShapes, SizesBeyondCudnnsIntsAreRefused) {
  numeric::Compiled compiled =
      numeric::compileAndPlan(numeric::readFile(numeric::sourcePath("examples/lenet5.net")));
  for (const plan::Op &op : compiled.plan.ops)
    if (op.kind == plan::OpKind::Convolution) {
      auto c = describeForCudnn(op.get<plan::ConvAttrs>(), compiled.plan.buffers[size_t(op.in[2])].table,
                                compiled.plan.buffers[size_t(op.in[3])].table);
      ASSERT_TRUE(c.has_value());
      auto shapes = cudnnShapes(*c, int64_t{1} << 28);
      ASSERT_FALSE(shapes.ok());
      EXPECT_NE(shapes.message().find("--batch"), std::string::npos) << shapes.message();
      return;
    }
}

} // namespace
} // namespace netc::runtime::cuda
