// DataOnDeviceTest.cpp -- `--data-on-device` checked without a GPU: the
// gather that fills an input slot from a held data set (GatherRowsBody,
// runtime/cuda/ElementBodies.h) run by the host launcher against a naive
// gather; and the trainer's side of it through the public training API on
// a backend that holds data on the host ("cpu-held": the CPU backend with
// holdDataset, setSampleOrder and gatherInput implemented by that same body,
// as the CUDA backend runs it on its copy stream), which must give the very
// checkpoint bytes and epoch figures that the CPU's host batches give --
// plain, with --accumulate and with --deterministic chunks. The CPU backend
// itself refuses the flag as a usage error naming --device cuda.
#include "PlanHarness.h"

#include "netc/Training.h"
#include "runtime/core/Backend.h"
#include "runtime/cuda/ElementBodies.h"
#include "runtime/cuda/HostLauncher.h"

#include <array>
#include <functional>

#include <unistd.h>

namespace netc::numeric {
namespace {

using runtime::cuda::GatherRowsBody;

/// Row r of the result is row order[r] of `from` (rows of `width`), by hand.
std::vector<float> naiveGather(const std::vector<float> &from, const std::vector<int32_t> &order,
                               int64_t width) {
  std::vector<float> out;
  for (int32_t row : order)
    for (int64_t k = 0; k < width; ++k)
      out.push_back(from[static_cast<size_t>(row * width + k)]);
  return out;
}

TEST(GatherRows, MatchesANaiveGatherForEveryWidthAndOrder) {
  std::mt19937 rng(5);
  for (int64_t width : {1, 3, 64, 785}) {
    for (int64_t rows : {1, 7, 100}) {
      SCOPED_TRACE(fmt::format("width {} rows {}", width, rows));
      std::vector<float> from(static_cast<size_t>(rows * width));
      std::uniform_real_distribution<float> value(-3, 3);
      for (float &v : from)
        v = value(rng);
      // A shuffled order with repeats, read from an offset as a later micro-batch is.
      std::vector<int32_t> order(static_cast<size_t>(rows + 5));
      std::uniform_int_distribution<int32_t> pick(0, static_cast<int32_t>(rows - 1));
      for (int32_t &o : order)
        o = pick(rng);
      const int64_t first = 3, count = rows;
      std::vector<float> to(static_cast<size_t>(count * width), NAN);
      runtime::cuda::HostLauncher launch;
      launch.elements(GatherRowsBody{from.data(), order.data() + first, to.data(), width}, count * width);
      const std::vector<int32_t> used(order.begin() + first, order.begin() + first + count);
      EXPECT_TRUE(bitIdentical("gathered rows", to, naiveGather(from, used, width)));
    }
  }
}

/// The CPU backend with a data set held "on the device" (host memory here):
/// each batch is gathered by GatherRowsBody into a buffer of its slot and
/// copied in, as the CUDA backend gathers it on the GPU.
class HostHeldBackend final : public runtime::Backend {
public:
  explicit HostHeldBackend(std::unique_ptr<runtime::Backend> inner) : inner_(std::move(inner)) {}
  /// Batches gathered by every instance, to show the path was taken.
  static int64_t &gathers() {
    static int64_t count = 0;
    return count;
  }

  std::string_view name() const override { return inner_->name(); }
  runtime::BackendInfo describe() const override {
    runtime::BackendInfo info = inner_->describe();
    info.holdsData = true;
    return info;
  }
  Status load(const plan::Plan &plan, int64_t maxBatch) override {
    plan_ = &plan;
    maxBatch_ = maxBatch;
    return inner_->load(plan, maxBatch);
  }
  void write(int buffer, std::span<const float> values, int64_t offset) override {
    inner_->write(buffer, values, offset);
  }
  void read(int buffer, std::span<float> values, int64_t offset) const override {
    inner_->read(buffer, values, offset);
  }
  void writeInput(int slot, int buffer, std::span<const float> values) override {
    inner_->writeInput(slot, buffer, values);
  }
  void fence() override { inner_->fence(); }
  Status holdDataset(std::span<const float> features, std::span<const float> labels, int64_t count) override {
    features_.assign(features.begin(), features.end());
    labels_.assign(labels.begin(), labels.end());
    count_ = count;
    return Status::success();
  }
  Status setSampleOrder(std::span<const int32_t> order) override {
    for (int32_t sample : order)
      if (sample < 0 || sample >= count_)
        return fail(fmt::format("sample {} is not one of the {} held", sample, count_));
    order_.assign(order.begin(), order.end());
    return Status::success();
  }
  Status gatherInput(int slot, int64_t first, int64_t count) override {
    if (first < 0 || count > maxBatch_ || first + count > static_cast<int64_t>(order_.size()))
      return fail(fmt::format("positions [{}, {}) of an order of {}", first, first + count, order_.size()));
    const int64_t featureWidth = static_cast<int64_t>(features_.size()) / count_;
    const int64_t labelWidth = static_cast<int64_t>(labels_.size()) / count_;
    Slot &into = slots_[static_cast<size_t>(slot)];
    into.features.assign(static_cast<size_t>(count * featureWidth), NAN);
    into.labels.assign(static_cast<size_t>(count * labelWidth), NAN);
    runtime::cuda::HostLauncher launch;
    const int32_t *order = order_.data() + first;
    launch.elements(GatherRowsBody{features_.data(), order, into.features.data(), featureWidth},
                    count * featureWidth);
    launch.elements(GatherRowsBody{labels_.data(), order, into.labels.data(), labelWidth},
                    count * labelWidth);
    inner_->writeInput(slot, plan_->features, into.features);
    inner_->writeInput(slot, plan_->labels, into.labels);
    ++gathers();
    return Status::success();
  }
  void attach(comm::Communicator *communicator) override { inner_->attach(communicator); }
  Status run(size_t first, size_t last, int64_t batch, int inputSlot, int activationSlot) override {
    return inner_->run(first, last, batch, inputSlot, activationSlot);
  }
  void synchronize() override { inner_->synchronize(); }

private:
  struct Slot {
    std::vector<float> features, labels;
  };
  std::unique_ptr<runtime::Backend> inner_;
  const plan::Plan *plan_ = nullptr;
  int64_t maxBatch_ = 0, count_ = 0;
  std::vector<float> features_, labels_;
  std::vector<int32_t> order_;
  std::array<Slot, 2> slots_;
};

/// A fresh folder for one test's runs, removed at its end.
class RunFolder {
public:
  RunFolder()
      : path_(std::filesystem::temp_directory_path() /
              fmt::format("netc-data-on-device-{}-{}", ::getpid(),
                          ::testing::UnitTest::GetInstance()->current_test_info()->name())) {
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~RunFolder() { std::filesystem::remove_all(path_); }
  std::string file(const std::string &name) const { return (path_ / name).string(); }

private:
  std::filesystem::path path_;
};

TrainSettings sliceSettings(const std::string &outDir) {
  TrainSettings s;
  s.dataDir = sourcePath("tests/fixtures/mnist-slice");
  s.outDir = outDir;
  s.epochs = 2;
  s.batch = 32;
  s.learningRate = 0.1f;
  s.momentum = 0.9f;
  s.initDiameter = 1.0f;
  s.seed = 7;
  s.threads = 1;
  s.validationFraction = 0.2; // the held set is the training part of the split
  return s;
}

std::string bytesOf(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// Trains the seed network on the CPU's host batches and on the held data
/// set's gathered ones with `adjust` applied to both: the same checkpoint,
/// byte for byte, and the same figures every epoch.
void expectSameRun(const std::function<void(TrainSettings &)> &adjust) {
  static const bool registered = [] {
    runtime::registerBackend("cpu-held", [](const runtime::BackendOptions &o) {
      return std::make_unique<HostHeldBackend>(runtime::makeCpuBackend(o));
    });
    return true;
  }();
  ASSERT_TRUE(registered);
  RunFolder folder;
  TrainSettings host = sliceSettings(folder.file("host"));
  adjust(host);
  TrainSettings held = host;
  held.outDir = folder.file("held");
  held.backend = "cpu-held";
  held.dataOnDevice = true;
  const std::string seedNet = sourcePath("examples/mnist.net");
  TrainResult a = trainNetwork(seedNet, host);
  ASSERT_TRUE(a.ok()) << a.error;
  const int64_t gathersBefore = HostHeldBackend::gathers();
  TrainResult b = trainNetwork(seedNet, held);
  ASSERT_TRUE(b.ok()) << b.error;
  EXPECT_GT(HostHeldBackend::gathers(), gathersBefore) << "the batches were not gathered from the held set";
  ASSERT_EQ(a.epochs.size(), b.epochs.size());
  for (size_t e = 0; e < a.epochs.size(); ++e) {
    EXPECT_EQ(a.epochs[e].trainLoss, b.epochs[e].trainLoss) << "epoch " << e + 1;
    EXPECT_EQ(a.epochs[e].trainAccuracy, b.epochs[e].trainAccuracy) << "epoch " << e + 1;
    EXPECT_EQ(a.epochs[e].testLoss, b.epochs[e].testLoss) << "epoch " << e + 1;
  }
  const std::string last = bytesOf(folder.file("host/last.safetensors"));
  EXPECT_FALSE(last.empty());
  EXPECT_TRUE(last == bytesOf(folder.file("held/last.safetensors"))) << "the checkpoints differ";
}

TEST(DataOnDevice, GatheredBatchesTrainTheSameBitsAsHostBatches) {
  expectSameRun([](TrainSettings &) {});
}

TEST(DataOnDevice, WithAccumulatedMicroBatches) {
  expectSameRun([](TrainSettings &s) {
    s.batch = 16;
    s.accumulate = 3;
  });
}

TEST(DataOnDevice, WithDeterministicChunks) {
  expectSameRun([](TrainSettings &s) { s.deterministicChunks = 4; });
}

TEST(DataOnDevice, WithoutShuffling) {
  expectSameRun([](TrainSettings &s) { s.shuffle = false; });
}

/// The CPU backend holds no data: a usage error that names --device cuda,
/// before anything is written.
TEST(DataOnDevice, TheCpuBackendRefusesIt) {
  RunFolder folder;
  TrainSettings s = sliceSettings(folder.file("out"));
  s.device = "cpu";
  s.dataOnDevice = true;
  TrainResult r = trainNetwork(sourcePath("examples/mnist.net"), s);
  EXPECT_EQ(r.failure, FailureKind::Usage);
  EXPECT_NE(r.error.find("--data-on-device needs --device cuda"), std::string::npos) << r.error;
  EXPECT_FALSE(std::filesystem::exists(folder.file("out")));
}

} // namespace
} // namespace netc::numeric
