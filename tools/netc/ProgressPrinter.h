// ProgressPrinter.h -- how `netc train` shows progress: a live bar redrawn
// in place on a terminal, or plain lines every few seconds otherwise; plus
// the epoch line and the final summary text.
#pragma once

#include "netc/Training.h"

#include <chrono>
#include <cstdio>
#include <string>
#include <string_view>

namespace netc::cli {

enum class ProgressStyle { Bar, Lines, None };

/// `auto` picks a bar when `stream` is a terminal, lines otherwise.
ProgressStyle parseProgressStyle(std::string_view flag, std::FILE *stream);

class ProgressPrinter {
public:
  explicit ProgressPrinter(ProgressStyle style, std::FILE *out = stderr) : style_(style), out_(out) {}
  void update(const TrainProgress &p);
  /// Erases the bar (before other output).
  void clear();
  ProgressStyle style() const { return style_; }

private:
  ProgressStyle style_;
  std::FILE *out_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point last_{};
};

std::string formatDuration(double seconds);
std::string epochLine(const EpochResult &e);
std::string trainSummary(const TrainResult &r);

} // namespace netc::cli
