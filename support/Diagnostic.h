// Diagnostic.h -- a diagnostic is data: an id from Diagnostics.def, its
// severity and stable code, a located message, located notes and fix-its.
// Printers (text, JSON, LSP) and the test verifier consume this one type.
#pragma once

#include "netc/Types.h"
#include "support/SourceRange.h"

#include <string>
#include <string_view>
#include <vector>

namespace netc {

/// Every diagnostic kind, generated from Diagnostics.def.
enum class DiagId {
#define DIAG(Id, Sev, Code, Format) Id,
#include "support/Diagnostics.def"
#undef DIAG
};

/// Catalogue lookups for an id.
struct DiagInfo {
  Severity severity;
  std::string_view code;
  std::string_view format;
};
const DiagInfo &diagInfo(DiagId id);
/// All catalogue entries, in declaration order (for docs and tests).
const std::vector<DiagId> &allDiagIds();
std::string_view severityName(Severity severity);

/// A secondary location that explains a diagnostic.
struct DiagNote {
  SourceRange range;
  std::string message;
};

/// A suggested edit: replace `range` with `replacement`.
struct FixIt {
  SourceRange range;
  std::string replacement;
};

struct Diagnostic {
  DiagId id{};
  Severity severity = Severity::Error;
  SourceRange range;
  std::string message;
  std::vector<DiagNote> notes;
  std::vector<FixIt> fixits;

  std::string_view code() const { return diagInfo(id).code; }
};

} // namespace netc
