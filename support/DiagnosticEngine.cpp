// DiagnosticEngine.cpp -- the diagnostic catalogue tables and the collector.
#include "support/DiagnosticEngine.h"

#include <algorithm>

namespace netc {

namespace {
const DiagInfo kInfos[] = {
#define DIAG(Id, Sev, Code, Format) {Severity::Sev, Code, Format},
#include "support/Diagnostics.def"
#undef DIAG
};
} // namespace

const DiagInfo &diagInfo(DiagId id) {
  return kInfos[static_cast<size_t>(id)];
}

const std::vector<DiagId> &allDiagIds() {
  static const std::vector<DiagId> ids = {
#define DIAG(Id, Sev, Code, Format) DiagId::Id,
#include "support/Diagnostics.def"
#undef DIAG
  };
  return ids;
}

std::string_view severityName(Severity severity) {
  switch (severity) {
  case Severity::Note: return "note";
  case Severity::Warning: return "warning";
  case Severity::Error: return "error";
  }
  return "error";
}

Diagnostic &DiagnosticEngine::add(DiagId id, SourceRange range, std::string message) {
  if (errorLimit_ > 0 && errors_ >= errorLimit_ && diagInfo(id).severity != Severity::Warning) {
    dropped_ = Diagnostic{};
    if (limitReported_ || diagInfo(id).severity != Severity::Error)
      return dropped_;
    limitReported_ = true;
    id = DiagId::TooManyErrors;
    message = fmt::format(fmt::runtime(diagInfo(id).format), errorLimit_);
  }
  Diagnostic d;
  d.id = id;
  d.severity = diagInfo(id).severity;
  d.range = range;
  d.message = std::move(message);
  if (d.severity == Severity::Error)
    ++errors_;
  else if (d.severity == Severity::Warning)
    ++warnings_;
  diagnostics_.push_back(std::move(d));
  return diagnostics_.back();
}

void DiagnosticEngine::absorb(DiagnosticEngine &&other) {
  for (Diagnostic &d : other.diagnostics_)
    diagnostics_.push_back(std::move(d));
  errors_ += other.errors_;
  warnings_ += other.warnings_;
  other = DiagnosticEngine{};
}

std::vector<Diagnostic> DiagnosticEngine::sorted() const {
  std::vector<Diagnostic> out = diagnostics_;
  std::stable_sort(out.begin(), out.end(),
                   [](const Diagnostic &a, const Diagnostic &b) { return a.range.begin < b.range.begin; });
  return out;
}

} // namespace netc
