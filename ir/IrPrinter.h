// IrPrinter.h -- a deterministic text dump of the network IR for
// `netc compile --emit=ir` and golden tests. It prints no source locations,
// so a reformatted file dumps identically.
#pragma once

#include "ir/Network.h"

#include <string>

namespace netc::ir {

std::string printNetwork(const Network &network);

} // namespace netc::ir
