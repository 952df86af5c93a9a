// Calibrate.cpp -- `netc calibrate` (include/netc/Estimate.h): measures a
// cost table with short micro-benchmarks. A handful of small networks that
// between them hold every op kind run their training plans op by op, at two
// batch sizes and each thread count; each op kind's overhead and rate come
// from a least-squares fit of its times against its work (relative errors
// weighted alike). A step's host overhead is a whole step's time less its
// ops', and a sample's is the trainer's gather of a batch; checkpoint writes
// are timed in the table's folder. With several
// ranks, all-reduces of a few sizes measure the link between them (α + n/β)
// first; rank 0 then measures the rest alone and writes the table. The output
// is checked before anything is measured: only a regular file is replaced
// (never a folder, a device or a symbolic link), and its folder must take a
// new file; the table is then written to a temporary file and renamed.
#include "api/Backends.h"
#include "api/DataParallel.h"
#include "codegen/CostModel.h"
#include "netc/Estimate.h"
#include "netc/netc.h"
#include "runtime/optim/Optimizer.h"
#include "runtime/train/Evaluate.h"
#include "runtime/train/ModelState.h"
#include "support/ByteSize.h"
#include "support/InputFile.h"
#include "support/Statistics.h"
#include "support/Version.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <random>
#include <span>
#include <thread>

#include <fcntl.h>
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

namespace netc {

namespace {

using Clock = std::chrono::steady_clock;

double microsecondsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
}

/// A calibration network: its source and how it is compiled and planned.
struct Probe {
  const char *name;
  const char *source;
  Task task = Task::Multiclass;
  int classes = 10;
  bool accumulate = false; // plan with gradient accumulation (the zero-gradients op)
};

/// Between them every op kind with a rate: dense, sparse, the convolution
/// kinds, both pools, response normalization, several inputs, each loss.
const Probe kProbes[] = {
    {"dense-small",
     "input In [64]; hidden H1 [128] sigmoid from In all; hidden H2 [64] tanh from H1 all;\n"
     "output Out [10] softmax from H2 all;\n",
     Task::Multiclass, 10, true},
    {"dense-large",
     "input In [784]; hidden H1 [1024] rlinear from In all; hidden H2 [256] sigmoid from H1 all;\n"
     "output Out [10] softmax from H2 all;\n"},
    {"convolution",
     "input Pic [28, 28];\n"
     "hidden C1 [8, 12, 12] from Pic convolve { InputShape = [28, 28]; KernelShape = [5, 5];\n"
     "  Stride = [2, 2]; MapCount = 8; }\n"
     "hidden C2 [32, 4, 4] from C1 convolve { InputShape = [8, 12, 12]; KernelShape = [1, 5, 5];\n"
     "  Stride = [1, 2, 2]; Sharing = [false, true, true]; MapCount = 4; }\n"
     "hidden H3 [64] from C2 all;\noutput Out [10] softmax from H3 all;\n"},
    {"pool-norm",
     "input Pic [28, 28];\n"
     "hidden C1 [6, 28, 28] rlinear from Pic convolve { InputShape = [28, 28]; KernelShape = [5, 5];\n"
     "  Padding = true; MapCount = 6; }\n"
     "hidden P1 [6, 14, 14] from C1 max pool { InputShape = [6, 28, 28]; KernelShape = [1, 2, 2];\n"
     "  Stride = [1, 2, 2]; }\n"
     "hidden C2 [12, 10, 10] rlinear from P1 convolve { InputShape = [6, 14, 14]; KernelShape = [6, 5, 5];\n"
     "  MapCount = 12; }\n"
     "hidden P2 [12, 5, 5] from C2 mean pool { InputShape = [12, 10, 10]; KernelShape = [1, 2, 2];\n"
     "  Stride = [1, 2, 2]; }\n"
     "hidden N3 [12, 3, 3] from P2 response norm { InputShape = [12, 5, 5]; KernelShape = [1, 3, 3];\n"
     "  Alpha = 0.001; Beta = 0.75; }\n"
     "output Out [10] softmax from N3 all;\n"},
    {"sparse", "input Pixels [16, 32]; input Meta [12];\n"
               "hidden Rows [16, 32] tanh from Pixels where (s, d) => s[0] == d[0];\n"
               "hidden ByRow [16, 24] from Rows where (s, d) => s[0] == d[0];\n"
               "hidden ByCol [8, 32] from Rows where (s, d) => abs(s[1] - d[1]) <= 1;\n"
               "hidden Join [128] { from ByRow all; from ByCol all; }\n"
               "output Out [10] softmax { from Join all; from Meta all; }\n"},
    {"binary", "input In [100]; hidden H [200] tanh from In all; output Out [1] sigmoid from H all;\n",
     Task::Binary, 2},
    {"regression", "input In [50]; hidden H [100] sigmoid from In all; output Out [1] linear from H all;\n",
     Task::Regression, 0},
};

const std::vector<int64_t> kBatches = {8, 32, 128, 256};
constexpr int64_t kMaxCalibrationBatch = 4096;

/// One op's time at a batch, with its work: FLOPs or bytes (its measure),
/// and for an arithmetic op also its bytes.
struct Sample {
  double work = 0, bytes = 0, microseconds = 0;
};

/// Weighted least squares of t over the columns `use` of [1, work, bytes]
/// (weights 1 / t²: relative errors count alike); the coefficients, zero
/// where unused, and the weighted squared residual. Nothing when singular.
std::optional<std::pair<std::array<double, 3>, double>> leastSquares(const std::vector<Sample> &samples,
                                                                     const std::array<bool, 3> &use) {
  std::vector<int> columns;
  for (int c = 0; c < 3; ++c)
    if (use[static_cast<size_t>(c)])
      columns.push_back(c);
  const size_t n = columns.size();
  // Normal equations A x = b, solved by Gaussian elimination with pivoting.
  std::array<std::array<double, 4>, 3> a{};
  auto value = [](const Sample &s, int c) { return c == 0 ? 1.0 : c == 1 ? s.work : s.bytes; };
  for (const Sample &s : samples) {
    const double t = std::max(s.microseconds, 1e-3), w = 1 / (t * t);
    for (size_t i = 0; i < n; ++i) {
      for (size_t k = 0; k < n; ++k)
        a[i][k] += w * value(s, columns[i]) * value(s, columns[k]);
      a[i][3] += w * value(s, columns[i]) * t;
    }
  }
  for (size_t i = 0; i < n; ++i) {
    size_t pivot = i;
    for (size_t r = i + 1; r < n; ++r)
      if (std::abs(a[r][i]) > std::abs(a[pivot][i]))
        pivot = r;
    std::swap(a[i], a[pivot]);
    if (!(std::abs(a[i][i]) > 1e-300))
      return std::nullopt;
    for (size_t r = 0; r < n; ++r) {
      if (r == i)
        continue;
      const double f = a[r][i] / a[i][i];
      for (size_t k = i; k < 4; ++k)
        a[r][k] -= f * a[i][k];
    }
  }
  std::array<double, 3> x{};
  for (size_t i = 0; i < n; ++i)
    x[static_cast<size_t>(columns[i])] = a[i][3] / a[i][i];
  double residual = 0;
  for (const Sample &s : samples) {
    const double t = std::max(s.microseconds, 1e-3);
    const double e = (x[0] + x[1] * s.work + x[2] * s.bytes - t) / t;
    residual += e * e;
  }
  return std::make_pair(x, residual);
}

/// overhead + work / rate (+ bytes / byteRate for an arithmetic op) fitted to
/// `samples` with every coefficient at least 0: the best of the fits over
/// each subset of the terms whose coefficients all come out so.
cost::OpRate fitRate(const std::vector<Sample> &samples, bool withBytes) {
  std::optional<std::array<double, 3>> best;
  double bestResidual = 0;
  for (int mask = 1; mask < 8; ++mask) {
    const std::array<bool, 3> use = {(mask & 1) != 0, (mask & 2) != 0, (mask & 4) != 0};
    if ((use[2] && !withBytes) || !use[1])
      continue; // the work term always; the bytes term for arithmetic ops only
    auto fit = leastSquares(samples, use);
    if (!fit || fit->first[0] < 0 || fit->first[1] <= 0 || fit->first[2] < 0)
      continue;
    if (!best || fit->second < bestResidual) {
      best = fit->first;
      bestResidual = fit->second;
    }
  }
  if (!best) { // noise: through the origin
    double work = 0, time = 0;
    for (const Sample &s : samples) {
      work += s.work;
      time += s.microseconds;
    }
    best = std::array<double, 3>{0, work > 0 ? time / work : 1e-6, 0};
  }
  cost::OpRate rate;
  rate.overheadUs = (*best)[0];
  // Within what a table may hold (rates from 1 to 1e18 per second).
  rate.rate = std::clamp(1e6 / std::max((*best)[1], 1e-12), 1.0, 1e18);
  rate.byteRate = (*best)[2] > 0 ? std::clamp(1e6 / (*best)[2], 1.0, 1e18) : 0;
  return rate;
}

std::vector<float> randomValues(size_t count, std::mt19937_64 &rng) {
  std::uniform_real_distribution<float> value(0.0f, 1.0f);
  std::vector<float> out(count);
  for (float &f : out)
    f = value(rng);
  return out;
}

/// What one thread count's measurements collect.
struct ProfileSamples {
  std::map<plan::OpKind, std::vector<Sample>> ops;
  std::vector<double> stepOverheads;
};

/// One probe at one batch: each op's work and its median time in each
/// round, and the median of a whole step in each round.
struct ProbeTimes {
  std::vector<plan::OpKind> kinds;
  std::vector<Sample> ops;                 ///< work and bytes, by op
  std::vector<std::vector<double>> opRuns; ///< by op, a median per round
  std::vector<double> stepRuns;            ///< a median per round

  /// Adds the median of each time over the rounds to `samples`: a burst of
  /// load on a shared machine that hits one round of three does not move it.
  void addTo(ProfileSamples &samples) const {
    double opsTotal = 0;
    for (size_t i = 0; i < ops.size(); ++i) {
      Sample sample = ops[i];
      sample.microseconds = median(opRuns[i]);
      samples.ops[kinds[i]].push_back(sample);
      opsTotal += sample.microseconds;
    }
    samples.stepOverheads.push_back(std::max(0.0, median(stepRuns) - opsTotal));
  }
};

/// A probe's training plan loaded on a backend at a batch (the backend
/// holds the plan's address: it stays where it was made).
struct LoadedProbe {
  plan::PlanOptions options;
  std::unique_ptr<plan::Plan> plan;
  std::unique_ptr<runtime::Backend> backend;
};

/// Compiles `probe`, plans its training and loads the plan on a backend of
/// `s`'s device with `threads` threads at `batch`, parameters initialised.
Expected<LoadedProbe> loadProbe(const Probe &probe, int64_t batch, int threads, const CalibrateSettings &s) {
  CompileOptions options;
  options.task = probe.task;
  if (probe.classes > 0 && probe.task == Task::Multiclass)
    options.classCount = probe.classes;
  CompileResult compiled =
      compile(probe.source, fmt::format("<calibration network '{}'>", probe.name), options);
  if (!compiled.network)
    return fail(fmt::format("calibration network '{}' does not compile: {}", probe.name,
                            compiled.formattedDiagnostics));
  plan::PlanOptions planOptions;
  planOptions.update.hyper.momentum = 0.9f;
  planOptions.accumulateGradients = probe.accumulate;
  auto plan = plan::buildPlan(compiled.network->impl().network, planOptions);
  if (!plan)
    return fail(plan.message());
  auto setup = backendSetup({s.device, "", "fp32", s.cpuIsa, s.denseKernel, false, true, threads, 0});
  if (!setup)
    return fail(setup.message());
  auto backend = runtime::createBackend(setup->backend, setup->options);
  if (!backend)
    return fail(backend.message());
  LoadedProbe loaded{planOptions, std::make_unique<plan::Plan>(std::move(*plan)), std::move(*backend)};
  if (Status st = loaded.backend->load(*loaded.plan, batch); !st)
    return fail(st.message());
  train::initializeParameters(*loaded.plan, *loaded.backend, {train::InitKind::Xavier, 0.1f, 1});
  return loaded;
}

/// Runs probe `probe`'s training plan at `batch` on `threads` threads:
/// `iterations` steps op by op, and as many whole steps.
Status measureProbe(const Probe &probe, int64_t batch, int threads, const CalibrateSettings &s,
                    ProbeTimes &times, std::string &device) {
  auto loaded = loadProbe(probe, batch, threads, s);
  if (!loaded)
    return loaded.status();
  const plan::PlanOptions &planOptions = loaded->options;
  const plan::Plan &plan = *loaded->plan;
  runtime::Backend &backend = *loaded->backend;
  device = backend.describe().device;
  std::mt19937_64 rng(7);
  const std::vector<float> features = randomValues(static_cast<size_t>(batch * plan.featureCount), rng);
  std::vector<float> labels(static_cast<size_t>(batch));
  for (size_t i = 0; i < labels.size(); ++i)
    labels[i] =
        probe.task == Task::Regression ? float(i % 7) / 7.0f : float(i % size_t(std::max(2, probe.classes)));
  int64_t stepCount = 0;
  auto prepare = [&] {
    train::writeStepScalars(
        plan, backend, optim::stepScalars(planOptions.update, 0.001f, ++stepCount, double(batch), batch));
    backend.writeInput(0, plan.features, features);
    backend.writeInput(0, plan.labels, labels);
    backend.fence();
  };
  const size_t ops = plan.ops.size();
  std::vector<std::vector<double>> opTimes(ops);
  std::vector<double> steps;
  for (int64_t i = 0; i < s.iterations + 2; ++i) {
    // A whole step as the trainer runs it, then the same op by op.
    prepare();
    const auto start = Clock::now();
    if (Status st = backend.run(0, ops, batch); !st)
      return st;
    train::takeMetrics(plan, backend);
    backend.synchronize();
    const double whole = microsecondsSince(start);
    prepare();
    std::vector<double> these(ops);
    for (size_t op = 0; op < ops; ++op) {
      const auto opStart = Clock::now();
      if (Status st = backend.run(op, op + 1, batch); !st)
        return st;
      backend.synchronize();
      these[op] = microsecondsSince(opStart);
    }
    train::takeMetrics(plan, backend);
    if (i < 2)
      continue; // warm-up
    for (size_t op = 0; op < ops; ++op)
      opTimes[op].push_back(these[op]);
    steps.push_back(whole);
  }
  const bool first = times.ops.empty();
  for (size_t op = 0, i = 0; op < ops; ++op) {
    const plan::Op &o = plan.ops[op];
    if (!cost::hasRate(o.kind))
      continue;
    if (first) {
      const cost::OpWork work = cost::opWork(plan, o);
      times.kinds.push_back(o.kind);
      times.ops.push_back(
          {work.at(cost::workMeasure(o.kind), batch), work.at(cost::WorkMeasure::Bytes, batch), 0});
      times.opRuns.emplace_back();
    }
    times.opRuns[i++].push_back(median(opTimes[op]));
  }
  times.stepRuns.push_back(median(steps));
  return Status::success();
}

/// Microseconds per sample of the trainer's batch gathering: copying a
/// sample's features and label from the training set to the batch.
double gatherMicrosecondsPerSample() {
  const int64_t count = 20000, features = 784, batch = 128;
  std::mt19937_64 rng(3);
  const std::vector<float> set = randomValues(static_cast<size_t>(count * features), rng);
  std::vector<float> out(static_cast<size_t>(batch * features));
  std::uniform_int_distribution<int64_t> pick(0, count - 1);
  std::vector<double> perSample;
  for (int rep = 0; rep < 20; ++rep) {
    std::vector<int64_t> order(static_cast<size_t>(batch));
    for (int64_t &o : order)
      o = pick(rng);
    const auto start = Clock::now();
    for (int64_t i = 0; i < batch; ++i)
      std::copy_n(set.data() + order[static_cast<size_t>(i)] * features, features, out.data() + i * features);
    perSample.push_back(microsecondsSince(start) / double(batch) * 784.0 / double(features));
  }
  return median(perSample);
}

/// The link between the job's ranks: all-reduces of 1 KiB to 16 MiB, and α and β fitted to them.
Expected<cost::Link> measureLink(comm::Communicator &comm, int64_t rounds, std::vector<std::string> &lines) {
  const int n = comm.size();
  // Sizes by 4x from 1 KiB to 16 MiB: a library switches algorithm between
  // them, and a gradient bucket can be any of them.
  std::vector<int64_t> counts;
  for (int64_t count = 256; count <= 4 * 1024 * 1024; count *= 4)
    counts.push_back(count);
  // Each of the rounds times every size (the sizes interleaved, so a burst
  // of load on a shared machine hits one round, not one size); a size's time
  // is the median of its rounds' medians.
  constexpr int kRepeats = 24, kWarmUp = 4;
  std::vector<std::vector<double>> roundMedians(counts.size());
  std::vector<float> data(static_cast<size_t>(counts.back()));
  for (int64_t round = 0; round < rounds; ++round)
    for (size_t i = 0; i < counts.size(); ++i) {
      const int64_t count = counts[i];
      std::fill(data.begin(), data.begin() + count, 1.0f / float(n)); // sums stay 1
      std::vector<double> runs;
      for (int rep = 0; rep < kWarmUp + kRepeats; ++rep) {
        if (Status st = comm.barrier("barrier before a timed all-reduce"); !st)
          return st.message().empty() ? fail("barrier failed") : fail(st.message());
        const auto start = Clock::now();
        auto request = comm.startAllReduce(data.data(), count, comm::DataType::F32, comm::ReduceOp::Sum,
                                           "calibration all-reduce");
        if (!request)
          return request.error();
        if (Status st = comm.wait(*request); !st)
          return fail(st.message());
        if (rep >= kWarmUp)
          runs.push_back(microsecondsSince(start));
      }
      roundMedians[i].push_back(median(runs));
    }
  std::vector<double> sizeUs(counts.size());
  for (size_t i = 0; i < counts.size(); ++i)
    sizeUs[i] = median(roundMedians[i]);
  // The slowest rank's time: the all-reduce ends for all when it ends for it.
  if (Status st = comm.allReduce(std::span<double>(sizeUs), comm::ReduceOp::Max, "calibration times"); !st)
    return fail(st.message());
  cost::Link link;
  std::vector<Sample> samples;
  for (size_t i = 0; i < counts.size(); ++i) {
    const double bytes = 4.0 * double(counts[i]);
    samples.push_back({bytes, 0, sizeUs[i]});
    link.allReduces.push_back({bytes, n, sizeUs[i]});
    lines.push_back(
        fmt::format("all-reduce of {} bytes over {} ranks: {:.1f} us", 4 * counts[i], n, sizeUs[i]));
  }
  // t = A + B n for a ring: A = 2 (N - 1) α, B = 2 (N - 1) / N / β.
  const cost::OpRate fit = fitRate(samples, false);
  // Within what a table may hold (1 PB/s).
  link.alphaUs = std::min(1e9, fit.overheadUs / (2.0 * (n - 1)));
  link.bytesPerSecond = std::clamp(fit.rate * 2.0 * (n - 1) / n, 1.0, 1e15);
  return link;
}

std::string today();

/// Writes `bytes` bytes as a checkpoint is written (a temporary file,
/// fsync, rename, fsync of the folder) in `folder`; the microseconds it took.
Expected<double> timeCheckpointWrite(const std::filesystem::path &folder, const std::vector<char> &bytes) {
  const std::string name = fmt::format(".netc-calibrate-{}", ::getpid());
  const std::filesystem::path temporary = folder / (name + ".tmp"), target = folder / name;
  const auto start = Clock::now();
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0)
    return fail(fmt::format("cannot write in {} to time checkpoint writes: {}", folder.string(),
                            std::strerror(errno)));
  size_t written = 0;
  int error = 0;
  while (written < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
    if (n <= 0) {
      error = n < 0 ? errno : ENOSPC; // nothing written: a full device
      break;
    }
    written += static_cast<size_t>(n);
  }
  if (error == 0 && ::fsync(fd) != 0)
    error = errno;
  ::close(fd);
  if (error == 0 && ::rename(temporary.c_str(), target.c_str()) != 0)
    error = errno;
  std::error_code ec;
  if (error != 0) {
    std::filesystem::remove(temporary, ec);
    return fail(fmt::format("cannot write in {} to time checkpoint writes: {}", folder.string(),
                            std::strerror(error)));
  }
  if (const int dir = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dir >= 0) {
    (void)::fsync(dir);
    ::close(dir);
  }
  const double us = microsecondsSince(start);
  std::filesystem::remove(target, ec);
  return us;
}

/// The storage of the folder a run would write in: checkpoint writes of 64 KiB and 4 MiB.
Expected<cost::Storage> measureStorage(const std::filesystem::path &folder, std::vector<std::string> &lines) {
  std::vector<Sample> samples;
  for (size_t size : {size_t{64} << 10, size_t{4} << 20}) {
    const std::vector<char> bytes(size, 'x');
    std::vector<double> runs;
    for (int rep = 0; rep < 5; ++rep) {
      auto us = timeCheckpointWrite(folder, bytes);
      if (!us)
        return us.error();
      runs.push_back(*us);
    }
    samples.push_back({double(size), 0, median(runs)});
    lines.push_back(fmt::format("checkpoint write of {} bytes in {}: {:.0f} us", size, folder.string(),
                                samples.back().microseconds));
  }
  const cost::OpRate fit = fitRate(samples, false);
  cost::Storage storage;
  storage.overheadUs = std::min(1e9, fit.overheadUs); // within what a table may hold
  storage.bytesPerSecond = std::clamp(fit.rate, 1.0, 1e15);
  storage.source = fmt::format("measured by netc calibrate in {} on {}", folder.string(), today());
  return storage;
}

std::string today() {
  const std::time_t now = std::time(nullptr);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d", std::gmtime(&now));
  return text;
}

/// The folder `path` goes in ("." for a bare name).
std::filesystem::path folderOf(const std::string &path) {
  const std::filesystem::path folder = std::filesystem::path(path).parent_path();
  return folder.empty() ? std::filesystem::path(".") : folder;
}

/// Fails unless the table may go to `path`: nothing there, or (with
/// `overwrite`) a regular file -- never a folder, a device or a symbolic link,
/// which a rename would replace -- in a folder where a new file can be made.
/// Called before measuring, so a refusal costs no minutes.
Status checkTablePath(const std::string &path, bool overwrite) {
  struct stat info {};
  if (::lstat(path.c_str(), &info) == 0) {
    if (!S_ISREG(info.st_mode))
      return fail(
          fmt::format("-o {}: it is {}; netc calibrate replaces only a regular file (never a folder, a "
                      "device or a symbolic link, nor the file a link points to); name another file",
                      path, fileKindText(info.st_mode)));
    if (!overwrite)
      return fail(fmt::format("{} exists; pass --overwrite to replace it", path));
  } else if (const int error = errno; error != ENOENT) {
    return fail(fmt::format("-o {}: cannot check it: {}", path, std::strerror(error)));
  }
  const std::filesystem::path folder = folderOf(path);
  const std::string probe = (folder / fmt::format(".netc-calibrate-{}.probe", ::getpid())).string();
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    const int error = errno;
    return fail(fmt::format("-o {}: cannot make a file in {}: {}; name a file in a folder you can write to",
                            path, folder.string(), std::strerror(error)));
  }
  ::close(fd);
  ::unlink(probe.c_str());
  return Status::success();
}

/// Writes `text` to `path` whole or not at all: a new temporary file in its
/// folder, fsync, a last check that `path` is still nothing or a regular
/// file, rename.
Status writeTable(const std::string &path, const std::string &text, bool overwrite) {
  const std::string temporary =
      (folderOf(path) /
       fmt::format(".{}.{}.tmp", std::filesystem::path(path).filename().string(), ::getpid()))
          .string();
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) {
    const int error = errno;
    return fail(fmt::format("cannot write {}: {}", temporary, std::strerror(error)));
  }
  int error = 0;
  for (size_t written = 0; written < text.size() && error == 0;) {
    const ssize_t n = ::write(fd, text.data() + written, text.size() - written);
    if (n > 0)
      written += static_cast<size_t>(n);
    else
      error = n < 0 ? errno : ENOSPC; // nothing written: a full device
  }
  if (error == 0 && ::fsync(fd) != 0)
    error = errno;
  if (::close(fd) != 0 && error == 0)
    error = errno;
  Status ready = error != 0
                     ? fail(fmt::format("cannot write {}: {}", temporary, std::strerror(error)))
                     : checkTablePath(path, overwrite); // what the minutes of measuring may have changed
  if (ready && ::rename(temporary.c_str(), path.c_str()) != 0) {
    error = errno;
    ready = fail(fmt::format("cannot write {}: {}", path, std::strerror(error)));
  }
  if (!ready)
    ::unlink(temporary.c_str());
  return ready;
}

} // namespace

CalibrateResult calibrate(const CalibrateSettings &s, CalibrateProgress progress, void *context) {
  registerBuiltinBackends();
  CalibrateResult result;
  result.outPath = s.outPath;
  auto refuse = [&](FailureKind kind, std::string message) {
    result.failure = kind;
    result.error = std::move(message);
    return result;
  };
  const auto started = Clock::now();
  if (s.outPath.empty())
    return refuse(FailureKind::Usage, "-o FILE is required: where the cost table goes");
  if (s.iterations < 1 || s.iterations > 1000)
    return refuse(FailureKind::Usage,
                  fmt::format("--iterations must be from 1 to 1000, got {}", s.iterations));
  if (s.rounds < 1 || s.rounds > 20)
    return refuse(FailureKind::Usage, fmt::format("--rounds must be from 1 to 20, got {}", s.rounds));
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  // A GPU has one profile (threads 0: the host's threads do not matter).
  const bool gpu = s.device.rfind("cuda", 0) == 0;
  if (gpu && (!s.threads.empty() || s.launch.size > 1))
    return refuse(FailureKind::Usage,
                  "--device cuda measures one GPU: --threads-list and --ranks are for the "
                  "CPU (a GPU table's links come from public figures until NCCL's are "
                  "measured)");
  std::vector<int> threads = s.threads;
  if (gpu)
    threads = {0};
  else if (threads.empty())
    threads = cores > 1 ? std::vector<int>{1, cores} : std::vector<int>{1};
  for (int t : threads)
    if (!gpu && (t < 1 || t > kMaxThreads))
      return refuse(FailureKind::Usage,
                    fmt::format("--threads-list: each count must be from 1 to {}, got {}", kMaxThreads, t));
  std::sort(threads.begin(), threads.end());
  threads.erase(std::unique(threads.begin(), threads.end()), threads.end());
  std::vector<int64_t> batches = s.batches.empty() ? kBatches : s.batches;
  std::sort(batches.begin(), batches.end());
  batches.erase(std::unique(batches.begin(), batches.end()), batches.end());
  // Two batches at least: an op's overhead and rate are a line through its times.
  if (batches.size() < 2 || batches.front() < 1 || batches.back() > kMaxCalibrationBatch)
    return refuse(FailureKind::Usage,
                  fmt::format("the calibration batches must be two or more different sizes from 1 to {}",
                              kMaxCalibrationBatch));
  // Every rank checks (they share the machine): none waits for a rank 0 that refused.
  if (Status out = checkTablePath(s.outPath, s.overwrite); !out)
    return refuse(FailureKind::Usage, out.message());

  cost::CostTable table;
  // The links: measured between the ranks of a job, else the built-in table's.
  const auto builtin = cost::builtinCostTable(gpu ? kDefaultGpuCostTable : kDefaultCpuCostTable);
  if (builtin)
    table.links = builtin->links;
  auto joined = training::joinCommunicator(s.launch, "cpu", "", s.commTimeout); // MPI between CPU ranks
  if (!joined)
    return refuse(FailureKind::Input, joined.message());
  comm::Communicator &comm = **joined;
  // One profile: every probe at every batch on `t` threads, by `ranks`
  // ranks computing at once (each measures its own; rank 0's is kept).
  const int concurrent = comm.size() > 1 ? std::max(1, cores / comm.size()) : 0;
  const int total = static_cast<int>((threads.size() + (concurrent > 0 ? 1 : 0)) * std::size(kProbes) *
                                     batches.size() * s.rounds);
  int done = 0;
  // The other tasks running before each measurement alone (the job's own
  // ranks are not others): a table measured beside other work is slow.
  std::vector<double> otherTasks;
  std::string deviceName;
  const std::string backendName = gpu ? "cuda" : "cpu";
  auto measureProfile = [&](int t, int ranks) -> Status {
    // Every probe at every batch, round after round, so that a burst of
    // load lands in one round of many measurements, not in all rounds of one.
    std::vector<ProbeTimes> times(std::size(kProbes) * batches.size());
    for (int64_t round = 0; round < s.rounds; ++round)
      for (size_t p = 0; p < std::size(kProbes); ++p)
        for (size_t b = 0; b < batches.size(); ++b) {
          const Probe &probe = kProbes[p];
          const int64_t batch = batches[b];
          if (progress && comm.rank() == 0)
            progress(context, done, total,
                     gpu          ? fmt::format("{} at batch {}", probe.name, batch)
                     : ranks == 1 ? fmt::format("{} at batch {} on {} thread(s)", probe.name, batch, t)
                                  : fmt::format("{} at batch {} on {} thread(s), {} ranks at once",
                                                probe.name, batch, t, ranks));
          if (ranks == 1 && !gpu)
            otherTasks.push_back(hostOtherRunnableTasks());
          if (Status st = measureProbe(probe, batch, t, s, times[p * batches.size() + b], deviceName); !st)
            return st;
          ++done;
        }
    ProfileSamples samples;
    for (const ProbeTimes &probeTimes : times)
      probeTimes.addTo(samples);
    cost::ComputeProfile profile;
    profile.threads = t;
    profile.ranks = ranks;
    for (const auto &[kind, list] : samples.ops)
      profile.ops[kind] = fitRate(list, cost::workMeasure(kind) == cost::WorkMeasure::Flops);
    profile.stepOverheadUs = median(samples.stepOverheads);
    profile.sampleOverheadUs = gatherMicrosecondsPerSample();
    table.profiles.push_back(std::move(profile));
    result.lines.push_back(fmt::format("{}: {} op kinds fitted, step overhead {:.1f} us",
                                       gpu          ? std::string("the GPU")
                                       : ranks == 1 ? fmt::format("{} thread(s)", t)
                                                    : fmt::format("{} thread(s), {} ranks at once", t, ranks),
                                       samples.ops.size(), table.profiles.back().stepOverheadUs));
    return Status::success();
  };
  if (comm.size() > 1) {
    auto link = measureLink(comm, s.rounds, result.lines);
    if (!link)
      return refuse(FailureKind::Input, link.message());
    link->source =
        fmt::format("measured by netc calibrate over {} ranks of one machine on {}", comm.size(), today());
    table.links[std::string(cost::kIntraNode)] = *link;
    // The compute of data-parallel ranks sharing the machine: all at once.
    // (The ranks run unbound, so that rank 0 can then measure every core's
    // threads alone; binding one-thread ranks to a core, as training does,
    // changed this profile by less than its noise here.)
    Status busy = measureProfile(concurrent, comm.size());
    // Then the other ranks leave the job and exit, rather than poll in MPI's
    // shutdown and take cycles from rank 0's measurements alone.
    if (Status st = comm.finish("end of the ranks' measurements"); !st)
      return refuse(FailureKind::Input, st.message());
    if (!busy)
      return refuse(FailureKind::Input, busy.message());
    if (comm.rank() != 0) { // rank 0 measures the rest alone
      result.seconds = microsecondsSince(started) * 1e-6;
      return result;
    }
  }
  // Threads beyond the CPUs this process may run on (taskset, or a launcher
  // that bound the rank) share them: those profiles are not the machine's.
  if (cpu_set_t allowed;
      !gpu && ::sched_getaffinity(0, sizeof allowed, &allowed) == 0 && CPU_COUNT(&allowed) < threads.back())
    result.warnings.push_back(fmt::format(
        "this process may run on {} CPU(s) only, so the {}-thread profile shares them and is slower than "
        "the machine's; run netc calibrate without taskset or numactl, and under your own mpirun with "
        "--bind-to none (netc calibrate --ranks N does this)",
        CPU_COUNT(&allowed), threads.back()));
  for (int t : threads)
    if (Status st = measureProfile(t, 1); !st)
      return refuse(FailureKind::Input, st.message());
  if (progress)
    progress(context, total, total, "done");
  // Every op kind must have a rate; one no probe ran is a bug in the probes.
  for (const cost::ComputeProfile &profile : table.profiles)
    for (const plan::OpKind kind : {
#define OP(Id, Name, Role, Backward) plan::OpKind::Id,
#include "codegen/Ops.def"
#undef OP
         }) {
      if (cost::hasRate(kind) && !profile.ops.count(kind))
        return refuse(FailureKind::Input,
                      fmt::format("no calibration network ran op '{}'", plan::opName(kind)));
    }
  table.backend = backendName;
  table.device = gpu ? deviceName : fmt::format("{}, {} cores", deviceName, cores);
  const int busy = otherTasks.empty() ? 0 : static_cast<int>(median(otherTasks));
  table.source = fmt::format("measured by `{}` on {}{}", s.command.empty() ? "netc calibrate" : s.command,
                             today(), busy > 0 ? fmt::format(" while {} other task(s) ran", busy) : "");
  if (busy > 0)
    result.warnings.push_back(fmt::format(
        "{} other task(s) were running while the table was measured (the median of {} counts, from "
        "/proc/loadavg or NETC_OTHER_TASKS): its rates may be slower than this machine's; measure it again "
        "when the machine is quiet (netc's cached table is measured again by the first estimate that finds "
        "it quiet)",
        busy, otherTasks.size()));
  // A GPU's memory is not queried here: the built-in GPU table's (80 GiB).
  table.memoryBytes = gpu && builtin ? builtin->memoryBytes : machineMemoryBytes();
  table.devicesPerNode = gpu && builtin ? builtin->devicesPerNode : cores;
  if (gpu) {
    table.machine = cost::MachineDescription{deviceName, "", "", kVersion, cores, 0, 0};
  } else if (auto machine = describeHostMachine(s.cpuIsa, s.denseKernel)) {
    // The peak probe of netc bench --profile, on one thread.
    if (auto loaded = loadProbe(kProbes[0], 8, 1, s)) {
      const runtime::PeakRates peak = loaded->backend->measurePeak();
      machine->peakGflopsPerCore = peak.flopsPerCore;
      machine->peakCopyGbPerSecond = peak.gbPerSecond;
      result.lines.push_back(fmt::format("peak of one thread: {:.1f} GFLOP/s of multiply-adds, {:.1f} GB/s "
                                         "copying through memory",
                                         peak.flopsPerCore, peak.gbPerSecond));
    }
    machine->busyTasks = busy;
    table.machine = std::move(*machine);
    // "Intel(R) Xeon(R) Processor, host (avx512), 2 cores"
    table.device = fmt::format("{}, {}", table.machine->cpu, table.device);
  }
  {
    auto storage = measureStorage(folderOf(s.outPath), result.lines);
    if (!storage)
      return refuse(FailureKind::Input, storage.message());
    table.storage = std::move(*storage);
  }
  const std::string text = cost::costTableJson(table);
  // Check what is written reads back, then write it whole or not at all.
  if (auto back = cost::parseCostTable(text, s.outPath); !back)
    return refuse(FailureKind::Input, "the measured table does not read back: " + back.message());
  if (Status written = writeTable(s.outPath, text, s.overwrite); !written)
    return refuse(FailureKind::Input, written.message());
  result.seconds = microsecondsSince(started) * 1e-6;
  return result;
}

} // namespace netc
