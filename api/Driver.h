// Driver.h -- one compilation from text to checked IR: parse, Sema, passes.
// The CLI and the public API (include/netc/netc.h) are both built on it.
#pragma once

#include "frontend/Parser.h"
#include "ir/CompileOptions.h"
#include "ir/Network.h"
#include "support/DiagnosticEngine.h"
#include "support/SourceFile.h"

#include <memory>
#include <string>
#include <string_view>

namespace netc {

/// Everything one compilation produced; the source outlives the ranges in it.
struct Compilation {
  explicit Compilation(SourceFile source) : file(std::move(source)) {}
  SourceFile file;
  DiagnosticEngine diags;
  ParseResult parse;
  ir::Network network;
};

/// How far to go: parsing only, Sema, or the passes (optionally stopping
/// after the named pass of Passes.def).
enum class Stage { Parse, Sema, Passes };

std::unique_ptr<Compilation> compileSource(SourceFile source, const CompileOptions &options,
                                           Stage stage = Stage::Passes, std::string_view stopAfterPass = {});

/// The network name used for a file: its base name without extension.
std::string networkNameFor(std::string_view path);

} // namespace netc
