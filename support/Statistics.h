// Statistics.h -- the median that benchmarks, calibration and run reports
// take of their timings (0 for no values).
#pragma once

#include <algorithm>
#include <vector>

namespace netc {

inline double median(std::vector<double> values) {
  if (values.empty())
    return 0;
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

} // namespace netc
