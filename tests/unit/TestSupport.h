// TestSupport.h -- helpers shared by the unit tests: compile a source string
// to a chosen stage, list the codes of its diagnostics, find a diagnostic by
// code, and turn source ranges into "line:column-line:column" text or the
// exact source slice they cover, so tests can pin codes and ranges exactly.
#pragma once

#include "api/Driver.h"
#include "ir/Network.h"
#include "tests/SourceFiles.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace netc::unittest {

using testfiles::exampleNames;
using testfiles::exampleTestName;
using testfiles::readFile;
using testfiles::sourcePath;

/// Compiles `text` as file "t.net" up to `stage`.
inline std::unique_ptr<Compilation> compileText(std::string text, Stage stage = Stage::Passes,
                                                const CompileOptions &options = CompileOptions{}) {
  return compileSource(SourceFile("t.net", std::move(text)), options, stage);
}

/// The codes of every diagnostic (errors and warnings), in report order.
inline std::vector<std::string> codesOf(const Compilation &c) {
  std::vector<std::string> out;
  for (const Diagnostic &d : c.diags.diagnostics())
    out.emplace_back(d.code());
  return out;
}

/// Every diagnostic as "code line:col message" (for failure messages).
inline std::string describeDiagnostics(const Compilation &c) {
  std::string out;
  for (const Diagnostic &d : c.diags.diagnostics()) {
    LineColumn at = c.file.lineColumn(d.range.begin);
    out += fmt::format("  {} {}:{} {}\n", d.code(), at.line, at.column, d.message);
  }
  return out.empty() ? std::string("  (no diagnostics)\n") : out;
}

/// The first diagnostic with `code`, or null.
inline const Diagnostic *findDiagnostic(const Compilation &c, std::string_view code) {
  for (const Diagnostic &d : c.diags.diagnostics())
    if (d.code() == code)
      return &d;
  return nullptr;
}

/// "line:col-line:col" of a range (both 1-based; the end is exclusive).
inline std::string position(const Compilation &c, SourceRange range) {
  LineColumn b = c.file.lineColumn(range.begin), e = c.file.lineColumn(range.end);
  return fmt::format("{}:{}-{}:{}", b.line, b.column, e.line, e.column);
}

/// The source text a range covers.
inline std::string textOf(const Compilation &c, SourceRange range) {
  return std::string(c.file.slice(range));
}

/// Expects a compilation without any diagnostic (warnings included).
#define EXPECT_CLEAN(c)                                                                                      \
  EXPECT_TRUE((c)->diags.diagnostics().empty()) << ::netc::unittest::describeDiagnostics(*(c))

/// Expects exactly these diagnostic codes, in report order.
#define EXPECT_CODES(c, ...)                                                                                 \
  EXPECT_EQ(::netc::unittest::codesOf(*(c)), (std::vector<std::string>{__VA_ARGS__}))                        \
      << ::netc::unittest::describeDiagnostics(*(c))

/// The layer named `name`; fails the test (and returns layer 0) if it is missing.
inline const ir::Layer &layerNamed(const Compilation &c, std::string_view name) {
  int index = c.network.findLayer(name);
  EXPECT_GE(index, 0) << "no layer " << name;
  return c.network.layers.at(static_cast<size_t>(index < 0 ? 0 : index));
}

/// Compiles examples/<name> under its own file name (so the network is named after it).
inline std::unique_ptr<Compilation> compileExample(std::string_view name,
                                                   const CompileOptions &options = CompileOptions{}) {
  std::string path = sourcePath("examples/" + std::string(name));
  return compileSource(SourceFile(path, readFile(path)), options, Stage::Passes);
}

} // namespace netc::unittest
