// DiagnosticPrinter.h -- renders diagnostics for people (compiler-style text
// with the source line, an underline, notes and fix-its; colour optional) and
// for tools (the JSON shape documented in docs/cli.md).
#pragma once

#include "support/Diagnostic.h"
#include "support/SourceFile.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace netc {

struct TextPrintOptions {
  bool colour = false;
};

/// `file:line:col: error: message [code]`, the source line, an underline,
/// then each note the same way and a `fix-it:` line per suggested edit.
std::string formatDiagnosticText(const SourceFile &file, const Diagnostic &diag,
                                 const TextPrintOptions &options = {});

/// A one-line summary such as "2 errors and 1 warning generated.".
std::string formatDiagnosticSummary(size_t errors, size_t warnings);

/// A JSON range object {"start":{"line","column"},"end":{...}}, 1-based,
/// byte columns, end exclusive.
nlohmann::json rangeToJson(const SourceFile &file, SourceRange range);
/// One diagnostic as a JSON object (notes and fix-its included).
nlohmann::json diagnosticToJson(const SourceFile &file, const Diagnostic &diag);

} // namespace netc
