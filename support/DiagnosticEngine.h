// DiagnosticEngine.h -- collects diagnostics from every stage of one
// compilation. Stages report through it and always continue; it never prints.
#pragma once

#include "support/Diagnostic.h"

#include <fmt/format.h>

#include <cstddef>
#include <vector>

namespace netc {

class DiagnosticEngine {
public:
  /// Report a diagnostic; the message is formatted from the catalogue format
  /// with `args`. Returns it so the caller can attach notes and fix-its.
  template <typename... Args> Diagnostic &report(DiagId id, SourceRange range, const Args &...args) {
    return add(id, range, fmt::format(fmt::runtime(diagInfo(id).format), args...));
  }

  Diagnostic &add(DiagId id, SourceRange range, std::string message);
  /// After `limit` errors (0: none), further errors are dropped and one
  /// NS0107 "too many errors" is reported in their place.
  void setErrorLimit(size_t limit) { errorLimit_ = limit; }
  /// Whether the error limit was passed (NS0107 reported): stages stop then.
  bool errorLimitReached() const { return limitReported_; }
  /// Moves every diagnostic of `other` into this engine.
  void absorb(DiagnosticEngine &&other);
  /// Lets a later stage explain an earlier diagnostic: appends the notes
  /// `notesFor(d)` returns (a std::vector<DiagNote>) to each diagnostic `d`
  /// reported with `id`, in report order. Nothing else of it changes.
  template <typename NotesFor> void addNotes(DiagId id, NotesFor &&notesFor) {
    for (Diagnostic &d : diagnostics_)
      if (d.id == id)
        for (DiagNote &note : notesFor(static_cast<const Diagnostic &>(d)))
          d.notes.push_back(std::move(note));
  }

  const std::vector<Diagnostic> &diagnostics() const { return diagnostics_; }
  std::vector<Diagnostic> take() { return std::move(diagnostics_); }
  size_t errorCount() const { return errors_; }
  size_t warningCount() const { return warnings_; }
  bool hasErrors() const { return errors_ > 0; }

  /// Diagnostics sorted by position (stable for equal positions).
  std::vector<Diagnostic> sorted() const;

private:
  std::vector<Diagnostic> diagnostics_;
  size_t errors_ = 0;
  size_t warnings_ = 0;
  size_t errorLimit_ = 0;
  bool limitReported_ = false;
  Diagnostic dropped_; // what report() hands back for a dropped diagnostic
};

/// Convenience for attaching notes and fix-its fluently.
inline Diagnostic &withNote(Diagnostic &d, SourceRange range, std::string message) {
  d.notes.push_back({range, std::move(message)});
  return d;
}
inline Diagnostic &withFixIt(Diagnostic &d, SourceRange range, std::string replacement) {
  d.fixits.push_back({range, std::move(replacement)});
  return d;
}

} // namespace netc
