// JobReport.cpp -- rank 0's report to the netc that launched its job
// (JobReport.h).
#include "JobReport.h"

#include <charconv>
#include <fcntl.h>
#include <fstream>
#include <unistd.h>

namespace netc::cli {

void reportToLauncher(const Launch &launch, const std::string &line) {
  if (launch.rank != 0 || launch.statusFile.empty())
    return;
  const int fd = ::open(launch.statusFile.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fd < 0)
    return;
  const std::string text = line + "\n"; // one write: lines never interleave
  [[maybe_unused]] ssize_t written = ::write(fd, text.data(), text.size());
  ::close(fd);
}

JobReport readJobReport(const std::string &path) {
  JobReport report;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line == "started") {
      report.started = true;
    } else if (line == "training") {
      report.training = true;
    } else if (line.starts_with("checkpoint ")) { // "checkpoint STEP PATH"
      const size_t space = line.find(' ', 11);
      int64_t step = 0;
      if (space == std::string::npos)
        continue;
      auto [end, error] = std::from_chars(line.data() + 11, line.data() + space, step);
      if (error == std::errc() && end == line.data() + space && space + 1 < line.size()) {
        report.checkpoint = line.substr(space + 1);
        report.checkpointStep = step;
      }
    } else if (line.starts_with("ended ")) { // "ended STATUS KIND"
      const size_t space = line.find(' ', 6);
      int status = 0;
      if (space == std::string::npos)
        continue;
      auto [end, error] = std::from_chars(line.data() + 6, line.data() + space, status);
      if (error == std::errc() && end == line.data() + space) {
        report.ended = true;
        report.endStatus = status;
        report.endKind = line.substr(space + 1);
      }
    }
  }
  return report;
}

} // namespace netc::cli
