// FuzzPipeline.h -- the one robustness check shared by the seeded mutation
// test (MutationTest.cpp) and the libFuzzer target (FuzzCheck.cpp): compile
// arbitrary bytes through every stage, render every dump and diagnostic, and
// when the text parsed cleanly, format it and recompile the formatted text.
// It returns the broken invariant as text; crashes, hangs and sanitizer
// reports are left to the caller's process (and the sanitizers) to catch.
#pragma once

#include "ir/CompileOptions.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace netc::fuzz {

/// What one check saw, for the callers' statistics.
struct PipelineStats {
  bool parseErrors = false; // the parse stage reported an error
  bool errors = false;      // some stage reported an error
  bool formatted = false;   // the formatter ran and its output was recompiled
};

/// Compile options derived from a few selector bits, so every run of a fuzzer
/// also varies the task and the data sizes that resolve `auto`. The limits
/// are lowered from the defaults so no single input takes seconds under the
/// sanitizers (the limit diagnostics are exercised all the same).
CompileOptions fuzzOptions(uint64_t selector);

/// Runs the whole pipeline on `text` and checks its invariants:
///  - no exception escapes any stage;
///  - every diagnostic, note and fix-it range lies within the file
///    (begin <= end <= size) and the error count matches the diagnostics;
///  - an error-free compile has a valid network: an output layer, and
///    every layer with nodes > 0;
///  - the token and AST dumps, the IR printer and the text and JSON
///    diagnostic printers all run;
///  - a parse-only compile reports errors exactly when the full compile
///    marks its network fromIncompleteSource, and its diagnostics begin the
///    full compile's (checked on one input in eight, picked by a hash);
///  - when parsing reported no error, the formatted text compiles with the
///    same diagnostics (kind and message), formats to itself, and, when the
///    input had no error, compiles to the same IR (printNetwork).
/// Returns a description of the first broken invariant, or nothing.
std::optional<std::string> checkPipeline(std::string_view text, const CompileOptions &options,
                                         PipelineStats *stats = nullptr);

} // namespace netc::fuzz
