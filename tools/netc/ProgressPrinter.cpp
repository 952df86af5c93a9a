// ProgressPrinter.cpp -- progress bar, periodic lines, epoch lines and the
// training summary for `netc train`.
#include "ProgressPrinter.h"

#include "support/PrintableText.h"

#include "support/NumberText.h"
#include "support/Statistics.h"

#include <algorithm>

#include <fmt/format.h>

#include <cmath>
#include <unistd.h>

namespace netc::cli {

ProgressStyle parseProgressStyle(std::string_view flag, std::FILE *stream) {
  if (flag == "bar")
    return ProgressStyle::Bar;
  if (flag == "lines")
    return ProgressStyle::Lines;
  if (flag == "none")
    return ProgressStyle::None;
  return isatty(fileno(stream)) ? ProgressStyle::Bar : ProgressStyle::Lines;
}

std::string formatDuration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0)
    return "?";
  auto s = static_cast<int64_t>(seconds + 0.5);
  if (s >= 3600)
    return fmt::format("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60);
  return fmt::format("{}:{:02}", s / 60, s % 60);
}

void ProgressPrinter::update(const TrainProgress &p) {
  if (style_ == ProgressStyle::None)
    return;
  const auto now = std::chrono::steady_clock::now();
  const bool last = p.batchesDone == p.batchesTotal;
  const double since = std::chrono::duration<double>(now - last_).count();
  if (style_ == ProgressStyle::Bar) {
    if (since < 0.1 && !last)
      return;
    last_ = now;
    const int width = 24;
    const int filled = p.samplesTotal ? static_cast<int>(width * p.samplesDone / p.samplesTotal) : 0;
    std::string bar = std::string(static_cast<size_t>(filled), '=') +
                      (filled < width ? ">" + std::string(static_cast<size_t>(width - filled - 1), ' ') : "");
    std::fprintf(out_, "\r\033[Kepoch %lld/%lld [%s] %lld/%lld  loss %.4f  acc %5.2f%%  %.0f img/s  ETA %s",
                 static_cast<long long>(p.epoch), static_cast<long long>(p.epochs), bar.c_str(),
                 static_cast<long long>(p.batchesDone), static_cast<long long>(p.batchesTotal), p.loss,
                 100 * p.accuracy, p.imagesPerSecond, formatDuration(p.etaSeconds).c_str());
    std::fflush(out_);
    drawn_ = true;
    return;
  }
  if (last_.time_since_epoch().count() == 0) {
    last_ = now; // the first line comes after 10 s
    return;
  }
  if (since < 10 || last)
    return;
  last_ = now;
  std::fprintf(out_, "epoch %lld/%lld: batch %lld/%lld, loss %.4f, accuracy %.2f%%, %.0f img/s, ETA %s\n",
               static_cast<long long>(p.epoch), static_cast<long long>(p.epochs),
               static_cast<long long>(p.batchesDone), static_cast<long long>(p.batchesTotal), p.loss,
               100 * p.accuracy, p.imagesPerSecond, formatDuration(p.etaSeconds).c_str());
  std::fflush(out_);
}

void ProgressPrinter::clear() {
  if (!drawn_)
    return;
  std::fprintf(out_, "\r\033[K");
  std::fflush(out_);
  drawn_ = false;
}

std::string epochLine(const EpochResult &e) {
  std::string line = fmt::format("epoch {:>3}  train loss {:.4f}", e.epoch, e.trainLoss);
  if (e.classification)
    line += fmt::format(" acc {:6.2f}%", 100 * e.trainAccuracy);
  if (e.testLoss)
    line += fmt::format("  {} loss {:.4f}", e.validation ? "val" : "test", *e.testLoss);
  if (e.testLoss && e.classification)
    line += fmt::format(" acc {:6.2f}%", 100 * e.testAccuracy.value_or(0));
  line += fmt::format("  {:.0f} img/s  {:.1f} s{}", e.imagesPerSecond, e.seconds, e.best ? "  *best" : "");
  return line;
}

namespace {

/// The estimate made at the start against what was measured: the median
/// epoch's training steps, and the whole run (epochs, evaluations, final test).
std::string estimateComparison(const TrainResult &r) {
  const RunEstimate &e = *r.estimate;
  std::vector<double> epochs;
  for (const EpochResult &epoch : r.epochs)
    epochs.push_back(epoch.seconds);
  const size_t n = epochs.size();
  if (n == 0)
    return {};
  const double measured = median(epochs);
  const double total = double(n) * (e.epochSeconds + e.evaluationSeconds + e.checkpointSeconds) +
                       (r.finalTest ? e.finalTestSeconds : 0);
  auto error = [](double estimated, double measured) {
    return measured > 0 ? fmt::format("{:+.1f}%", 100 * (estimated - measured) / measured) : std::string("-");
  };
  return fmt::format("estimate (cost table '{}'): epoch {} s, measured {} s (median of {}; error {}); "
                     "total {} s, measured {} s (error {})\n",
                     e.costTable, threeDigits(e.epochSeconds), threeDigits(measured), n,
                     error(e.epochSeconds, measured), threeDigits(total), threeDigits(r.measuredTotalSeconds),
                     error(total, r.measuredTotalSeconds));
}

} // namespace

std::string trainSummary(const TrainResult &r) {
  std::string out = fmt::format("trained {} epoch(s), {} steps in {}, seed {}\n", r.epochs.size(), r.steps,
                                formatDuration(r.seconds), r.seed);
  if (r.epochs.empty())
    return out;
  const EpochResult &last = r.epochs.back();
  out += fmt::format("final: train loss {:.4f}", last.trainLoss);
  if (last.classification)
    out += fmt::format(", train accuracy {:.2f}%", 100 * last.trainAccuracy);
  if (r.finalTest) {
    out += fmt::format(", test loss {:.4f}", r.finalTest->loss);
    if (r.finalTest->classification)
      out += fmt::format(", test accuracy {:.2f}%", 100 * r.finalTest->accuracy);
    out += fmt::format(" ({} samples)", r.finalTest->samples);
  }
  out += fmt::format("\nbest epoch {}\n", r.bestEpoch);
  if (r.estimate)
    out += estimateComparison(r);
  std::string saved;
  for (const std::string &file : r.savedFiles)
    saved += (saved.empty() ? "" : ", ") + printableText(file);
  if (!saved.empty())
    out += "saved " + saved + "\n";
  return out;
}

} // namespace netc::cli
