// NetcApi.cpp -- the public API (include/netc/netc.h) over the driver:
// converts internal diagnostics and IR into the public value types.
#include "api/Driver.h"
#include "api/NetworkImpl.h"
#include "netc/netc.h"
#include "support/DiagnosticPrinter.h"
#include "support/PrintableText.h"
#include "support/SourceFile.h"
#include "support/Version.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace netc {

Network::Network(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
const std::string &Network::name() const {
  return impl_->name;
}
const std::vector<LayerInfo> &Network::layers() const {
  return impl_->layers;
}
int64_t Network::params() const {
  return impl_->network.params;
}
int64_t Network::flops() const {
  return impl_->network.flops;
}

size_t CompileResult::errorCount() const {
  size_t n = 0;
  for (const Message &m : diagnostics)
    n += m.severity == Severity::Error;
  return n;
}

const char *version() {
  return kVersion;
}

namespace {

Range toRange(const SourceFile &file, SourceRange range) {
  LineColumn a = file.lineColumn(range.begin), b = file.lineColumn(range.end);
  return {{a.line, a.column}, {b.line, b.column}};
}

CompileResult finish(Compilation &c) {
  CompileResult result;
  for (const Diagnostic &d : c.diags.sorted()) {
    Message m;
    m.severity = d.severity;
    m.code = std::string(d.code());
    m.message = d.message;
    m.file = c.file.name();
    m.range = toRange(c.file, d.range);
    for (const DiagNote &n : d.notes)
      m.notes.push_back({toRange(c.file, n.range), n.message});
    for (const FixIt &f : d.fixits)
      m.fixits.push_back({toRange(c.file, f.range), f.replacement});
    result.diagnostics.push_back(std::move(m));
    result.formattedDiagnostics += formatDiagnosticText(c.file, d);
  }
  if (c.diags.hasErrors())
    return result;
  auto impl = std::make_shared<Network::Impl>();
  impl->name = c.network.name;
  for (const ir::Layer &layer : c.network.layers) {
    LayerInfo info;
    info.name = layer.name;
    info.kind = std::string(ir::layerKindName(layer.kind));
    info.shape = layer.shape;
    info.nodes = layer.nodes;
    if (layer.function)
      info.function = std::string(ir::activationName(*layer.function));
    info.functionIsDefault = layer.functionIsDefault;
    info.params = layer.params;
    info.flops = layer.flops;
    info.activationBytes = layer.activationBytes;
    for (const ir::Bundle &b : layer.bundles)
      info.bundles.push_back({b.sourceName, std::string(ir::bundleKindName(b.kind)), b.params, b.flops});
    impl->layers.push_back(std::move(info));
  }
  impl->network = std::move(c.network);
  result.network = Network(std::move(impl));
  return result;
}

/// The result of a source that is not compiled: one NS0001 error.
CompileResult unreadable(const std::string &name, const std::string &reason) {
  CompileResult result;
  Message m;
  m.code = std::string(diagInfo(DiagId::CannotReadFile).code);
  m.file = name;
  m.message = "cannot read '" + name + "': " + reason;
  result.formattedDiagnostics = printableText(name) + ": error: " + printableText(m.message) + "\n";
  result.diagnostics.push_back(std::move(m));
  return result;
}

} // namespace

CompileResult compile(std::string_view source, std::string_view name, const CompileOptions &options) {
  // Above the limit a text is refused, not compiled (checking costs a large
  // multiple of its size: CompileOptions::maxSourceBytes).
  if (source.size() > options.maxSourceBytes)
    return unreadable(std::string(name), sourceTooLargeReason(source.size(), options.maxSourceBytes));
  auto c = compileSource(SourceFile(std::string(name), std::string(source)), options);
  return finish(*c);
}

CompileResult compileFile(const std::string &path, const CompileOptions &options) {
  std::string error;
  auto text = readSourceText(path, options.maxSourceBytes, error);
  if (!text)
    return unreadable(path, error);
  return compile(*text, path, options);
}

} // namespace netc
