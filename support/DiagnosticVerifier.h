// DiagnosticVerifier.h -- checks diagnostics against expectations written in
// the source itself (`netc check --verify`), so each negative test pins the
// code, the range and the message next to the offending line:
//
//   hidden H [10] from Nope all; // expected-error@:20-24 NS0302 {{unknown layer 'Nope'}}
//
// Form: `expected-<error|warning|note>[@LINE][:COL-COL] [CODE] {{text}}` where
// LINE is absolute (`@12`), relative (`@+1`, `@-2`) or omitted (this line);
// COL-COL is the 1-based byte range on that line, end exclusive (`:C-` means
// "starts at C"); CODE is the stable code (notes have none); text must occur
// in the message. Every diagnostic and note must be expected, and every
// expectation met.
#pragma once

#include "support/Diagnostic.h"
#include "support/SourceFile.h"

#include <string>
#include <vector>

namespace netc {

/// Returns the problems found (empty when everything matched).
std::vector<std::string> verifyDiagnostics(const SourceFile &file,
                                           const std::vector<Diagnostic> &diagnostics);

} // namespace netc
