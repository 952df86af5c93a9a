// LocalCommunicator.h -- the communicator of a single process: one rank, so
// an all-reduce, a broadcast or a barrier has nothing to exchange and
// completes at once. A run of one process uses it and needs no MPI.
#pragma once

#include "runtime/comm/Communicator.h"

#include <memory>

namespace netc::comm {

std::unique_ptr<Communicator> makeLocalCommunicator(const CommOptions &options = {});

} // namespace netc::comm
