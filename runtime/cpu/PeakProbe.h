// PeakProbe.h -- this CPU's peak rates, measured by short probes: the
// multiply-add throughput of the fast kernels' register tile (and, for a run
// of --precision bf16, of its VDPBF16PS products), a streaming copy through
// memory and copies within each cache level. `netc bench --profile` holds
// each op to them (its roofline); `netc calibrate` records the first two in
// the cost table's machine description.
#pragma once

#include "runtime/core/Backend.h"
#include "runtime/cpu/Kernels.h"

namespace netc::runtime::cpu {

/// The peak rates on `threads` threads (the one-thread probes times the
/// threads) of `kernels`, a fast table; with `bf16Products` also the bf16
/// products' peak and the op kinds held to it (bf16::kProductKinds).
PeakRates measurePeak(const KernelTable &kernels, int threads, bool bf16Products);

} // namespace netc::runtime::cpu
