// CompileOptions.h -- the compiler's options are the public ones
// (include/netc/Types.h); this header is where compiler code picks them up.
#pragma once

#include "netc/Types.h"
