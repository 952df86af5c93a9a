// PeakProbe.cpp -- the peak probes of PeakProbe.h: each the best of three
// short runs on one thread, so that a burst of load on a shared machine
// does not lower the roof.
#include "runtime/cpu/PeakProbe.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <new>
#include <string>

#include <unistd.h>

namespace netc::runtime::cpu {

namespace {

/// The unified cache levels past the first, smallest first, in bytes
/// (Linux's /sys/devices/system/cpu/cpu0/cache; sysconf where it is missing,
/// though a virtual machine's sysconf may name its host's).
std::vector<int64_t> cacheSizes() {
  std::vector<int64_t> sizes;
  for (int index = 0; index < 8; ++index) {
    const std::string base = fmt::format("/sys/devices/system/cpu/cpu0/cache/index{}/", index);
    std::ifstream levelFile(base + "level"), typeFile(base + "type"), sizeFile(base + "size");
    int level = 0;
    std::string type, size;
    if (!(levelFile >> level) || !(typeFile >> type) || !(sizeFile >> size) || level < 2 || type != "Unified")
      continue;
    char *end = nullptr;
    const long long value = std::strtoll(size.c_str(), &end, 10);
    const int64_t scale = *end == 'K' ? 1024 : *end == 'M' ? 1 << 20 : *end == 'G' ? 1 << 30 : 1;
    if (value > 0)
      sizes.push_back(value * scale);
  }
  if (sizes.empty())
    for (const int level : {_SC_LEVEL2_CACHE_SIZE, _SC_LEVEL3_CACHE_SIZE})
      if (const long size = sysconf(level); size > 0)
        sizes.push_back(size);
  std::sort(sizes.begin(), sizes.end());
  return sizes;
}

using Clock = std::chrono::steady_clock;

/// The best of three runs of `probe(steps)` (about 15 ms each, after a
/// warm-up), in FLOPs per second: `perStep` of them a step (two per multiply-add).
template <class Probe> double bestRate(Probe probe, int64_t steps, double perStep) {
  volatile float sink = probe(steps / 32); // warm up
  double best = 0;
  for (int run = 0; run < 3; ++run) {
    const auto start = Clock::now();
    sink = sink + probe(steps);
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    best = std::max(best, double(steps) * perStep / seconds);
  }
  return best;
}

} // namespace

PeakRates measurePeak(const KernelTable &kernels, int threads, bool bf16Products) {
  PeakRates peak;
  const int64_t steps = int64_t{1} << 21;
  peak.flopsPerCore = bestRate([&](int64_t n) { return kernels.fmaProbe(n, 0.999f); }, steps,
                               double(kernels.fmaProbeChains()) * kLaneChunk * 2) /
                      1e9;
  peak.gflops = peak.flopsPerCore * threads;
#if defined(__x86_64__)
  // VDPBF16PS: two multiply-adds per lane.
  if (bf16Products) {
    peak.bf16FlopsPerCore =
        bestRate(bf16::productProbe, steps, double(bf16::productProbeChains()) * kLaneChunk * 4) / 1e9;
    peak.bf16Gflops = peak.bf16FlopsPerCore * threads;
    peak.bf16Kinds.assign(std::begin(bf16::kProductKinds), std::end(bf16::kProductKinds));
  }
#else
  (void)bf16Products;
#endif
  try {
    const std::vector<int64_t> caches = cacheSizes();
    // Each way twice the largest cache (64-128 MiB, past one core's share of
    // any cache; a VM's sysconf may name its host's whole L3), pages touched first.
    const size_t bytes = static_cast<size_t>(
        std::clamp<int64_t>(2 * (caches.empty() ? 0 : caches.back()), int64_t{64} << 20, int64_t{128} << 20));
    const size_t count = bytes / sizeof(float);
    const std::unique_ptr<float[]> from(new float[count]()), to(new float[count]()); // zeroed: touched
    double fastest = 0;
    for (int run = 0; run < 3; ++run) {
      const auto start = Clock::now();
      std::memcpy(to.get(), from.get(), bytes);
      const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
      fastest = std::max(fastest, 2.0 * double(bytes) / seconds);
      from[run] = to[count - 1 - size_t(run)]; // the copies stay observable
    }
    peak.gbPerSecond = fastest / 1e9;
    // Each cache level the buffer holds: copies of half its size, 64 MiB moved in all.
    for (const int64_t size : caches) {
      if (size_t(size) > bytes)
        continue; // not one core's cache (a VM's host's)
      const size_t quarter = size_t(size) / 4 / sizeof(float);
      const int copies =
          static_cast<int>(std::max<size_t>(2, (size_t{32} << 20) / (quarter * sizeof(float))));
      fastest = 0;
      for (int run = 0; run < 3; ++run) {
        const auto start = Clock::now();
        for (int copy = 0; copy < copies; ++copy)
          std::memcpy(to.get(), from.get() + (copy % 2) * quarter, quarter * sizeof(float));
        const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
        fastest = std::max(fastest, copies * 2.0 * double(quarter * sizeof(float)) / seconds);
        from[run] = to[size_t(run)];
      }
      peak.caches.push_back({size, fastest / 1e9});
    }
  } catch (const std::bad_alloc &) { // no room for the probe: the bandwidth stays unmeasured
  }
  return peak;
}

} // namespace netc::runtime::cpu
