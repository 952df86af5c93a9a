// Backends.h -- registers every execution backend built into this netc with
// the runtime's registry, once (the one place that names them).
#pragma once

namespace netc {

/// Registers "cpu" and "cpu-reference" (and later backends) on first call.
void registerBuiltinBackends();

} // namespace netc
