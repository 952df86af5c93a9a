// CudnnAlgorithms.cpp -- choosing a cuDNN algorithm from its trials, and the
// on-disk cache of choices (CudnnAlgorithms.h).
#include "runtime/cuda/CudnnAlgorithms.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

namespace netc::runtime::cuda {

namespace {

constexpr std::string_view kHeader = "# netc cuDNN algorithm cache v1";

bool parseInt(std::string_view text, int &value) {
  const char *end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  return ec == std::errc() && ptr == end;
}

} // namespace

std::optional<size_t> pickTrial(std::span<const AlgorithmTrial> trials, std::span<const int> allowedMathTypes,
                                size_t workspaceLimit) {
  std::optional<size_t> best, bestDeterministic;
  for (size_t i = 0; i < trials.size(); ++i) {
    const AlgorithmTrial &t = trials[i];
    if (!t.ok || t.memory > workspaceLimit ||
        std::find(allowedMathTypes.begin(), allowedMathTypes.end(), t.mathType) == allowedMathTypes.end())
      continue;
    if (!best || t.milliseconds < trials[*best].milliseconds)
      best = i;
    if (t.deterministic && (!bestDeterministic || t.milliseconds < trials[*bestDeterministic].milliseconds))
      bestDeterministic = i;
  }
  return bestDeterministic ? bestDeterministic : best;
}

AlgorithmCache AlgorithmCache::parse(std::string_view text) {
  AlgorithmCache cache;
  bool first = true;
  while (!text.empty()) {
    const size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    if (first) {
      first = false;
      if (line != kHeader)
        return {};
      continue;
    }
    const size_t tab1 = line.find('\t');
    const size_t tab2 = tab1 == std::string_view::npos ? tab1 : line.find('\t', tab1 + 1);
    if (tab2 == std::string_view::npos || tab1 == 0)
      continue;
    CachedAlgorithm choice;
    if (!parseInt(line.substr(tab1 + 1, tab2 - tab1 - 1), choice.algorithm) ||
        !parseInt(line.substr(tab2 + 1), choice.mathType) || choice.algorithm < 0 || choice.mathType < 0)
      continue;
    cache.entries[std::string(line.substr(0, tab1))] = choice;
  }
  return cache;
}

std::string AlgorithmCache::format() const {
  std::string out = std::string(kHeader) + "\n";
  for (const auto &[key, choice] : entries)
    out += fmt::format("{}\t{}\t{}\n", key, choice.algorithm, choice.mathType);
  return out;
}

std::string algorithmCachePath(const char *netcCacheDir, const char *xdgCacheHome, const char *home) {
  auto set = [](const char *v) { return v && *v; };
  std::filesystem::path dir;
  if (set(netcCacheDir))
    dir = netcCacheDir;
  else if (set(xdgCacheHome))
    dir = std::filesystem::path(xdgCacheHome) / "netc";
  else if (set(home))
    dir = std::filesystem::path(home) / ".cache" / "netc";
  else
    return {};
  return (dir / "cudnn-algorithms.tsv").string();
}

AlgorithmCache readAlgorithmCache(const std::string &path) {
  if (path.empty())
    return {};
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return {};
  std::ostringstream text;
  text << in.rdbuf();
  return AlgorithmCache::parse(text.str());
}

Status writeAlgorithmCache(const std::string &path, const AlgorithmCache &cache) {
  std::error_code ec;
  const std::filesystem::path file(path);
  if (file.has_parent_path())
    std::filesystem::create_directories(file.parent_path(), ec);
  if (ec)
    return fail(fmt::format("cannot create {}: {}", file.parent_path().string(), ec.message()));
  const std::string temporary = fmt::format("{}.{}.tmp", path, getpid());
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out << cache.format();
    if (!out.flush())
      return fail(fmt::format("cannot write {}", temporary));
  }
  std::filesystem::rename(temporary, file, ec);
  if (ec) {
    const std::string why = ec.message();
    std::filesystem::remove(temporary, ec);
    return fail(fmt::format("cannot replace {}: {}", path, why));
  }
  return Status::success();
}

} // namespace netc::runtime::cuda
