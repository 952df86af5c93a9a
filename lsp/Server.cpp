// Server.cpp -- LSP dispatch (Server.h): lifecycle and protocol errors,
// incremental document sync, debounced diagnostics from the same
// compilation as `netc check` (notes as related information, or in the
// message for clients that do not declare it; fix-its as code actions),
// hover (markdown or plain text, as the client asks), definition,
// references, rename, completion in context (Completion.cpp), document
// symbols, formatting (`netc fmt`), inlay hints and semantic tokens.
// Positions are 0-based lines and UTF-16 columns, as the protocol says.
#include "lsp/Server.h"

#include "frontend/Formatter.h"
#include "frontend/Parser.h"
#include "lsp/Transport.h"
#include "support/Version.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <initializer_list>
#include <optional>
#include <stdexcept>

namespace netc::lsp {

using nlohmann::json;

namespace {

// Semantic token types, in the order of the legend sent at initialize.
enum TokenType {
  kKeyword,
  kFunction,
  kClass,
  kVariable,
  kParameter,
  kProperty,
  kNumber,
  kComment,
  kOperator
};
const char *const kTokenTypes[] = {"keyword",  "function", "class",   "variable", "parameter",
                                   "property", "number",   "comment", "operator"};

/// LSP SymbolKind values used here.
constexpr int kSymbolClass = 5, kSymbolConstant = 14, kSymbolObject = 19;

int severityCode(Severity s) {
  return s == Severity::Error ? 1 : s == Severity::Warning ? 2 : 3;
}

bool isIdentifier(const std::string &name) {
  if (name.empty() || !(std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_'))
    return false;
  return std::all_of(name.begin(), name.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

/// The value at `path` under `root`, or null when a step is missing or not
/// an object.
const json *capability(const json &root, std::initializer_list<const char *> path) {
  const json *at = &root;
  for (const char *key : path) {
    auto it = at->is_object() ? at->find(key) : at->end();
    if (it == at->end())
      return nullptr;
    at = &*it;
  }
  return at;
}

bool capabilityIsTrue(const json &root, std::initializer_list<const char *> path) {
  const json *at = capability(root, path);
  return at && at->is_boolean() && at->get<bool>();
}

/// A hover's markdown as plain text: the strong-emphasis markers and the
/// backticks around names dropped (hover texts use no other markdown but
/// "- " items, which read the same as plain text).
std::string plainTextOf(const std::string &markdown) {
  std::string out;
  out.reserve(markdown.size());
  for (size_t i = 0; i < markdown.size(); ++i) {
    if (markdown[i] == '`')
      continue;
    if (markdown.compare(i, 2, "**") == 0) {
      ++i;
      continue;
    }
    out += markdown[i];
  }
  return out;
}

/// Where `text` opens its (kMaxJsonDepth + 1)-th nested array or object,
/// counting brackets outside strings; nullopt when it nests no deeper. Run
/// before parsing, so no over-deep value is ever built (copying, dumping and
/// destroying a json value recurse over its depth).
std::optional<size_t> tooDeepAt(std::string_view text) {
  size_t depth = 0;
  bool inString = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (inString) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        inString = false;
    } else if (c == '"') {
      inString = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth)
        return i;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return std::nullopt;
}

const json &member(const json &object, const char *key) {
  if (!object.is_object() || !object.contains(key))
    throw std::invalid_argument(fmt::format("missing '{}'", key));
  return object.at(key);
}

} // namespace

// ---- plumbing ----

void Server::respond(const json &id, json result) {
  send_({{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}});
}

void Server::respondError(const json &id, int code, const std::string &message) {
  send_({{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", code}, {"message", message}}}});
}

void Server::log(const std::string &message, int type) {
  send_({{"jsonrpc", "2.0"},
         {"method", "window/logMessage"},
         {"params", {{"type", type}, {"message", message}}}});
}

void Server::reportMalformed(const std::string &problem) {
  respondError(nullptr, kParseError, "malformed message: " + problem);
}

void Server::handleText(const std::string &body) {
  if (const std::optional<size_t> at = tooDeepAt(body)) {
    respondError(
        nullptr, kParseError,
        fmt::format("the message nests arrays and objects more than {} deep (at byte offset {} of the body); "
                    "it is not read",
                    kMaxJsonDepth, *at));
    return;
  }
  json message = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (message.is_discarded()) {
    respondError(nullptr, kParseError, "the message is not valid JSON");
    return;
  }
  handle(message);
}

void Server::handle(const json &message) {
  if (!message.is_object() || message.value("jsonrpc", json()) != "2.0") {
    respondError(message.is_object() && message.contains("id") ? message["id"] : json(), kInvalidRequest,
                 "expected a JSON-RPC 2.0 object");
    return;
  }
  const bool hasId = message.contains("id");
  if (!message.contains("method")) {
    if (!hasId)
      respondError(nullptr, kInvalidRequest, "a message needs a method or an id");
    return; // a response to a request of ours: none are sent that expect one
  }
  if (!message["method"].is_string()) {
    respondError(hasId ? message["id"] : json(), kInvalidRequest, "'method' must be a string");
    return;
  }
  const std::string method = message["method"];
  const json params = message.value("params", json::object());
  if (hasId) {
    const json &id = message["id"];
    if (!id.is_number_integer() && !id.is_string()) {
      respondError(nullptr, kInvalidRequest, "'id' must be an integer or a string");
      return;
    }
    request(id, method, params);
  } else {
    notification(method, params);
  }
}

const std::string &Server::uriOf(const json &params) const {
  const json &uri = member(member(params, "textDocument"), "uri");
  if (!uri.is_string())
    throw std::invalid_argument("'textDocument.uri' must be a string");
  return uri.get_ref<const std::string &>();
}

const Analysis &Server::analysisOf(const std::string &uri) {
  const Document *doc = documents_.find(uri);
  if (!doc)
    throw ProtocolError{kInvalidParams, fmt::format("document '{}' is not open", uri)};
  Cached &c = cache_[uri];
  if (!c.analysis || c.version != doc->version || c.text != doc->text) {
    std::string name = uri;
    if (name.rfind("file://", 0) == 0)
      name = name.substr(7);
    c.analysis = std::make_unique<Analysis>(name, doc->text, options_.costTable.get(), options_.costTableName,
                                            options_.maxDocumentBytes);
    c.version = doc->version;
    c.text = doc->text;
  }
  return *c.analysis;
}

uint32_t Server::offsetAt(const Analysis &a, const json &params) const {
  const json &position = member(params, "position");
  const json &line = member(position, "line"), &character = member(position, "character");
  if (!line.is_number_integer() || !character.is_number_integer() || line.get<int64_t>() < 0 ||
      character.get<int64_t>() < 0)
    throw std::invalid_argument("'position' needs non-negative integer 'line' and 'character'");
  return a.lines().offsetOf(Position{line.get<int64_t>(), character.get<int64_t>()});
}

json Server::rangeJson(const LineIndex &lines, SourceRange range) const {
  const Position start = lines.positionOf(range.begin),
                 end = lines.positionOf(std::max(range.begin, range.end));
  return {{"start", {{"line", start.line}, {"character", start.character}}},
          {"end", {{"line", end.line}, {"character", end.character}}}};
}

json Server::diagnosticJson(const Analysis &a, const Diagnostic &d, const std::string &uri) const {
  json item = {{"range", rangeJson(a.lines(), d.range)},
               {"severity", severityCode(d.severity)},
               {"code", std::string(d.code())},
               {"source", "netc"},
               {"message", d.message}};
  if (d.notes.empty())
    return item;
  if (!relatedInformation_) {
    // One line per note: "note: LINE:COLUMN: text", 1-based.
    std::string message = d.message;
    for (const DiagNote &note : d.notes) {
      const Position p = a.lines().positionOf(note.range.begin);
      message += fmt::format("\nnote: {}:{}: {}", p.line + 1, p.character + 1, note.message);
    }
    item["message"] = std::move(message);
    return item;
  }
  json related = json::array();
  for (const DiagNote &note : d.notes)
    related.push_back({{"location", {{"uri", uri}, {"range", rangeJson(a.lines(), note.range)}}},
                       {"message", note.message}});
  item["relatedInformation"] = std::move(related);
  return item;
}

void Server::publish(const std::string &uri) {
  const Document *doc = documents_.find(uri);
  if (!doc)
    return;
  const Analysis &a = analysisOf(uri);
  json diagnostics = json::array();
  for (const Diagnostic &d : a.compilation().diags.sorted())
    diagnostics.push_back(diagnosticJson(a, d, uri));
  send_({{"jsonrpc", "2.0"},
         {"method", "textDocument/publishDiagnostics"},
         {"params", {{"uri", uri}, {"version", doc->version}, {"diagnostics", std::move(diagnostics)}}}});
}

bool Server::idle() {
  if (dirty_.empty())
    return false;
  std::set<std::string> uris;
  uris.swap(dirty_);
  for (const std::string &uri : uris)
    publish(uri);
  return true;
}

// ---- dispatch ----

void Server::request(const json &id, const std::string &method, const json &params) {
  if (shutdown_) {
    respondError(id, kInvalidRequest, "the server is shutting down");
    return;
  }
  if (!initialized_ && method != "initialize") {
    respondError(id, kServerNotInitialized, "the server has not been initialized");
    return;
  }
  try {
    if (method == "initialize") {
      if (initialized_)
        throw ProtocolError{kInvalidRequest, "the server is already initialized"};
      respond(id, initialize(params));
      initialized_ = true;
    } else if (method == "shutdown") {
      shutdown_ = true;
      respond(id, nullptr);
    } else if (method == "textDocument/hover") {
      respond(id, hover(params));
    } else if (method == "textDocument/definition") {
      respond(id, definition(params));
    } else if (method == "textDocument/references") {
      respond(id, references(params));
    } else if (method == "textDocument/prepareRename") {
      respond(id, prepareRename(params));
    } else if (method == "textDocument/rename") {
      respond(id, rename(params));
    } else if (method == "textDocument/completion") {
      respond(id, completion(params));
    } else if (method == "textDocument/documentSymbol") {
      respond(id, documentSymbols(params));
    } else if (method == "textDocument/formatting") {
      respond(id, formatting(params));
    } else if (method == "textDocument/inlayHint") {
      respond(id, inlayHints(params));
    } else if (method == "textDocument/semanticTokens/full") {
      respond(id, semanticTokens(params));
    } else if (method == "textDocument/codeAction") {
      respond(id, codeActions(params));
    } else {
      respondError(id, kMethodNotFound, fmt::format("unknown method '{}'", method));
    }
  } catch (const ProtocolError &e) {
    respondError(id, e.code, e.message);
  } catch (const std::invalid_argument &e) {
    respondError(id, kInvalidParams, fmt::format("invalid params for '{}': {}", method, e.what()));
  } catch (const json::exception &e) {
    respondError(id, kInvalidParams, fmt::format("invalid params for '{}': {}", method, e.what()));
  }
}

void Server::notification(const std::string &method, const json &params) {
  if (method == "exit") {
    exited_ = true;
    return;
  }
  if (!initialized_ || shutdown_)
    return; // dropped, as the protocol says
  try {
    if (method == "textDocument/didOpen") {
      const json &doc = member(params, "textDocument");
      const json &text = member(doc, "text");
      if (!text.is_string())
        throw std::invalid_argument("'textDocument.text' must be a string");
      const std::string &uri = uriOf(params);
      documents_.open(uri, text.get<std::string>(), doc.value("version", int64_t{0}));
      dirty_.insert(uri);
    } else if (method == "textDocument/didChange") {
      didChange(params);
    } else if (method == "textDocument/didClose") {
      const std::string uri = uriOf(params);
      documents_.close(uri);
      cache_.erase(uri);
      dirty_.erase(uri);
      // Clear what the editor shows for the closed file.
      send_({{"jsonrpc", "2.0"},
             {"method", "textDocument/publishDiagnostics"},
             {"params", {{"uri", uri}, {"diagnostics", json::array()}}}});
    }
    // initialized, didSave, $/cancelRequest, $/setTrace, workspace/*: nothing to do.
  } catch (const ProtocolError &e) {
    log(fmt::format("{}: {}", method, e.message), 1);
  } catch (const std::exception &e) {
    log(fmt::format("{}: invalid params: {}", method, e.what()), 1);
  }
}

void Server::didChange(const json &params) {
  const std::string uri = uriOf(params);
  const Document *doc = documents_.find(uri);
  if (!doc)
    throw ProtocolError{kInvalidParams, fmt::format("change to '{}', which is not open", uri)};
  const int64_t version = member(params, "textDocument").value("version", doc->version + 1);
  if (version <= doc->version)
    log(fmt::format("change to '{}' has version {}, not after the current {}; applied anyway", uri, version,
                    doc->version),
        2);
  const json &changes = member(params, "contentChanges");
  if (!changes.is_array())
    throw std::invalid_argument("'contentChanges' must be an array");
  // All the changes or none: a bad one restores the text from before.
  const std::string before = doc->text;
  struct Restore {
    Documents &documents;
    const std::string &uri, &text;
    bool done = false;
    ~Restore() {
      if (!done)
        (void)documents.edit(uri, std::nullopt, text);
    }
  } restore{documents_, uri, before};
  for (const json &change : changes) {
    const json &text = member(change, "text");
    if (!text.is_string())
      throw std::invalid_argument("a change's 'text' must be a string");
    std::optional<std::pair<Position, Position>> range;
    if (change.contains("range")) {
      auto position = [](const json &p) {
        const json &line = member(p, "line"), &character = member(p, "character");
        if (!line.is_number_integer() || !character.is_number_integer())
          throw std::invalid_argument("a position needs integer 'line' and 'character'");
        return Position{std::max<int64_t>(0, line.get<int64_t>()),
                        std::max<int64_t>(0, character.get<int64_t>())};
      };
      range = std::make_pair(position(member(change["range"], "start")),
                             position(member(change["range"], "end")));
    }
    if (Status st = documents_.edit(uri, range, text.get<std::string>()); !st)
      throw ProtocolError{kInvalidParams, st.message()};
    // Edits cannot grow a document without bound, one message at a time.
    if (const uint64_t size = documents_.find(uri)->text.size();
        size > maxMessageBytesFor(options_.maxDocumentBytes))
      throw ProtocolError{kInvalidParams,
                          fmt::format("the change makes '{}' {} bytes, more than the {} bytes a message may "
                                      "have; it is not applied",
                                      uri, size, maxMessageBytesFor(options_.maxDocumentBytes))};
  }
  restore.done = true;
  documents_.setVersion(uri, version);
  dirty_.insert(uri);
}

// ---- features ----

json Server::initialize(const json &params) {
  // What the client can show; a missing or malformed path means no.
  // textDocument.completion.completionItem.snippetSupport: only a client that
  // declares it gets snippets (insertTextFormat 2).
  snippetSupport_ = capabilityIsTrue(
      params, {"capabilities", "textDocument", "completion", "completionItem", "snippetSupport"});
  // textDocument.hover.contentFormat lists the formats in the client's order
  // of preference: markdown only when it comes first (Eglot without
  // markdown-mode asks for plaintext alone).
  const json *formats = capability(params, {"capabilities", "textDocument", "hover", "contentFormat"});
  hoverMarkdown_ = formats && formats->is_array() && !formats->empty() && (*formats)[0] == "markdown";
  // textDocument.publishDiagnostics.relatedInformation: without it notes go
  // into the message, where every client shows them.
  relatedInformation_ =
      capabilityIsTrue(params, {"capabilities", "textDocument", "publishDiagnostics", "relatedInformation"});
  json legend = json::array();
  for (const char *type : kTokenTypes)
    legend.push_back(type);
  return {
      {"capabilities",
       {{"positionEncoding", "utf-16"},
        {"textDocumentSync", {{"openClose", true}, {"change", 2}}},
        {"hoverProvider", true},
        {"definitionProvider", true},
        {"referencesProvider", true},
        {"renameProvider", {{"prepareProvider", true}}},
        {"completionProvider", {{"triggerCharacters", json::array({" ", "{", ";", "="})}}},
        {"documentSymbolProvider", true},
        {"documentFormattingProvider", true},
        {"inlayHintProvider", true},
        {"codeActionProvider", {{"codeActionKinds", json::array({"quickfix"})}}},
        {"semanticTokensProvider",
         {{"legend", {{"tokenTypes", legend}, {"tokenModifiers", json::array({"declaration", "readonly"})}}},
          {"full", true}}}}},
      {"serverInfo", {{"name", "netc"}, {"version", kVersion}}}};
}

json Server::hover(const json &params) {
  const Analysis &a = analysisOf(uriOf(params));
  auto h = a.hover(offsetAt(a, params));
  if (!h)
    return nullptr;
  if (!hoverMarkdown_)
    return {{"contents", {{"kind", "plaintext"}, {"value", plainTextOf(h->first)}}},
            {"range", rangeJson(a.lines(), h->second)}};
  return {{"contents", {{"kind", "markdown"}, {"value", h->first}}},
          {"range", rangeJson(a.lines(), h->second)}};
}

json Server::definition(const json &params) {
  const std::string &uri = uriOf(params);
  const Analysis &a = analysisOf(uri);
  const NameUse *use = a.useAt(offsetAt(a, params));
  if (!use || use->declaration < 0)
    return nullptr;
  const Declaration &d = a.declarations()[static_cast<size_t>(use->declaration)];
  return {{"uri", uri}, {"range", rangeJson(a.lines(), d.nameRange)}};
}

json Server::references(const json &params) {
  const std::string &uri = uriOf(params);
  const Analysis &a = analysisOf(uri);
  const NameUse *use = a.useAt(offsetAt(a, params));
  json out = json::array();
  if (!use || use->declaration < 0)
    return out;
  const bool withDeclaration = params.value("context", json::object()).value("includeDeclaration", true);
  for (const NameUse *u : a.usesOf(use->declaration))
    if (withDeclaration || !u->definition)
      out.push_back({{"uri", uri}, {"range", rangeJson(a.lines(), u->range)}});
  return out;
}

json Server::prepareRename(const json &params) {
  const Analysis &a = analysisOf(uriOf(params));
  const NameUse *use = a.useAt(offsetAt(a, params));
  if (!use || use->declaration < 0)
    return nullptr;
  return {{"range", rangeJson(a.lines(), use->range)}, {"placeholder", use->name}};
}

json Server::rename(const json &params) {
  const std::string &uri = uriOf(params);
  const Analysis &a = analysisOf(uri);
  const NameUse *use = a.useAt(offsetAt(a, params));
  if (!use || use->declaration < 0)
    throw ProtocolError{kRequestFailed,
                        "nothing to rename here: put the cursor on a layer, const or parameter"};
  const json &newName = member(params, "newName");
  if (!newName.is_string() || !isIdentifier(newName.get<std::string>()))
    throw ProtocolError{kRequestFailed,
                        "the new name must be an identifier (a letter or _, then letters, digits or _)"};
  const std::string name = newName;
  const Declaration &renamed = a.declarations()[static_cast<size_t>(use->declaration)];
  json edits = json::array();
  const std::vector<const NameUse *> uses = a.usesOf(use->declaration);
  if (name == renamed.name)
    return {{"changes", {{uri, edits}}}}; // nothing changes
  // A word the lexer reads as anything but an identifier (a keyword, a
  // function name, true/false) cannot name anything.
  DiagnosticEngine quiet;
  const std::vector<TokenInfo> tokens = lexTokens(SourceFile("rename", name), quiet);
  if (quiet.hasErrors() || tokens.size() != 1 || tokens[0].category != TokenInfo::Category::Identifier)
    throw ProtocolError{kRequestFailed,
                        fmt::format("'{}' is a keyword of Net# and cannot name anything", name)};
  // The new name must not clash: with a layer or const anywhere, with the
  // other parameter of the same predicate, or with a parameter of a
  // predicate in which the renamed name is used (it would be shadowed).
  for (const Declaration &d : a.declarations()) {
    if (d.name != name)
      continue;
    bool clash = d.kind != NameKind::Parameter;
    if (d.kind == NameKind::Parameter) {
      clash = renamed.kind == NameKind::Parameter && renamed.fullRange == d.fullRange;
      for (const NameUse *u : uses)
        clash = clash || (u->range.begin >= d.fullRange.begin && u->range.end <= d.fullRange.end);
    }
    if (clash)
      throw ProtocolError{kRequestFailed,
                          fmt::format("'{}' is already declared{}", name,
                                      d.kind == NameKind::Parameter ? " where the name is used" : "")};
  }
  for (const NameUse *u : uses)
    edits.push_back({{"range", rangeJson(a.lines(), u->range)}, {"newText", name}});
  return {{"changes", {{uri, edits}}}};
}

json Server::documentSymbols(const json &params) {
  const Analysis &a = analysisOf(uriOf(params));
  json out = json::array();
  for (const Declaration &d : a.declarations()) {
    if (d.kind == NameKind::Parameter)
      continue;
    std::string detail;
    if (d.kind == NameKind::Layer)
      if (const ir::Layer *layer = a.irLayer(d))
        detail = fmt::format("{} [{}]", ir::layerKindName(layer->kind), fmt::join(layer->shape, ", "));
    out.push_back({{"name", d.name},
                   {"detail", detail},
                   {"kind", d.kind == NameKind::Layer ? kSymbolClass : kSymbolConstant},
                   {"range", rangeJson(a.lines(), d.fullRange)},
                   {"selectionRange", rangeJson(a.lines(), d.nameRange)}});
  }
  for (const ast::Statement &statement : a.compilation().parse.program.statements)
    if (const auto *s = std::get_if<ast::ShareDecl>(&statement))
      out.push_back(
          {{"name", "share"},
           {"detail", fmt::format("{} item(s)", s->items.size())},
           {"kind", kSymbolObject},
           {"range", rangeJson(a.lines(), s->range)},
           {"selectionRange", rangeJson(a.lines(), s->keyword.range.empty() ? s->range : s->keyword.range)}});
  return out;
}

json Server::formatting(const json &params) {
  const Analysis &a = analysisOf(uriOf(params));
  const Compilation &c = a.compilation();
  // `netc fmt` formats only text that parses; the same holds here.
  DiagnosticEngine parseOnly;
  SourceFile file(c.file.name(), c.file.text());
  ParseResult parsed = parseProgram(file, parseOnly);
  if (parseOnly.hasErrors())
    throw ProtocolError{kRequestFailed, "the document has syntax errors; fix them to format it"};
  const std::string formatted = formatProgram(parsed.program, file);
  if (formatted == file.text())
    return json::array();
  return json::array({{{"range", rangeJson(a.lines(), {0, file.size()})}, {"newText", formatted}}});
}

json Server::inlayHints(const json &params) {
  const Analysis &a = analysisOf(uriOf(params));
  json out = json::array();
  for (const ir::Layer &layer : a.compilation().network.layers) {
    if (layer.shapeAuto && layer.nodes > 0) {
      const Position p = a.lines().positionOf(layer.shapeRange.end);
      out.push_back({{"position", {{"line", p.line}, {"character", p.character}}},
                     {"label", fmt::format(": [{}]", fmt::join(layer.shape, ", "))},
                     {"kind", 1},
                     {"paddingLeft", false}});
    }
    for (const ir::Bundle &b : layer.bundles)
      if (b.kind == ir::BundleKind::Convolve && b.valid && !b.geometry.dims.empty() && !b.kindRange.empty()) {
        std::vector<int64_t> counts;
        for (const ir::DimGeometry &d : b.geometry.dims)
          counts.push_back(d.count);
        const Position p = a.lines().positionOf(b.kindRange.end);
        out.push_back({{"position", {{"line", p.line}, {"character", p.character}}},
                       {"label", fmt::format("N=[{}]", fmt::join(counts, ", "))},
                       {"kind", 2},
                       {"paddingLeft", true}});
      }
  }
  return out;
}

json Server::semanticTokens(const json &params) {
  const Analysis &a = analysisOf(uriOf(params));
  struct Token {
    SourceRange range;
    int type;
    int modifiers;
  };
  std::vector<Token> tokens;
  std::map<uint32_t, const NameUse *> names;
  for (const NameUse &use : a.uses())
    names[use.range.begin] = &use;
  std::set<uint32_t> attributes;
  for (const AttributeUse &attr : a.attributes())
    attributes.insert(attr.range.begin);
  for (const TokenInfo &t : a.compilation().parse.tokens) {
    int type = -1, modifiers = 0;
    switch (t.category) {
    case TokenInfo::Category::Keyword: type = kKeyword; break;
    case TokenInfo::Category::Function: type = kFunction; break;
    case TokenInfo::Category::Integer:
    case TokenInfo::Category::Real: type = kNumber; break;
    case TokenInfo::Category::Comment: type = kComment; break;
    case TokenInfo::Category::Identifier:
      if (auto it = names.find(t.range.begin); it != names.end()) {
        const NameUse &use = *it->second;
        type = use.kind == NameKind::Layer ? kClass : use.kind == NameKind::Const ? kVariable : kParameter;
        modifiers = (use.definition ? 1 : 0) | (use.kind == NameKind::Const ? 2 : 0);
      } else if (attributes.count(t.range.begin)) {
        type = kProperty;
      }
      break;
    default: break;
    }
    if (type >= 0)
      tokens.push_back({t.range, type, modifiers});
  }
  // Relative encoding; a token that spans lines (a block comment) is split per line.
  json data = json::array();
  int64_t lastLine = 0, lastStart = 0;
  const LineIndex &lines = a.lines();
  for (const Token &t : tokens) {
    const Position first = lines.positionOf(t.range.begin), last = lines.positionOf(t.range.end);
    for (int64_t line = first.line; line <= last.line; ++line) {
      const Position start = line == first.line ? first : Position{line, 0};
      const Position stop = line == last.line ? last : lines.positionOf(lines.lineEnd(line));
      if (stop.character <= start.character)
        continue;
      data.push_back(start.line - lastLine);
      data.push_back(start.line == lastLine ? start.character - lastStart : start.character);
      data.push_back(stop.character - start.character);
      data.push_back(t.type);
      data.push_back(t.modifiers);
      lastLine = start.line;
      lastStart = start.character;
    }
  }
  return {{"data", data}};
}

json Server::codeActions(const json &params) {
  const std::string &uri = uriOf(params);
  const Analysis &a = analysisOf(uri);
  const json &range = member(params, "range");
  auto offset = [&](const char *key) {
    const json &p = member(range, key);
    const json &line = member(p, "line"), &character = member(p, "character");
    if (!line.is_number_integer() || !character.is_number_integer())
      throw std::invalid_argument(fmt::format("'range.{}' needs integer 'line' and 'character'", key));
    return a.lines().offsetOf(Position{line.get<int64_t>(), character.get<int64_t>()});
  };
  const uint32_t begin = offset("start"), end = offset("end");
  json out = json::array();
  for (const Diagnostic &d : a.compilation().diags.sorted()) {
    if (d.fixits.empty() || d.range.end < begin || d.range.begin > end)
      continue;
    json edits = json::array();
    std::string title;
    for (const FixIt &fix : d.fixits) {
      edits.push_back({{"range", rangeJson(a.lines(), fix.range)}, {"newText", fix.replacement}});
      if (title.empty())
        title = fix.replacement.empty() ? fmt::format("Remove '{}'", a.file().slice(fix.range))
                                        : fmt::format("Replace with '{}'", fix.replacement);
    }
    out.push_back({{"title", title},
                   {"kind", "quickfix"},
                   // The diagnostic as published, so that clients can match the two.
                   {"diagnostics", json::array({diagnosticJson(a, d, uri)})},
                   {"isPreferred", d.fixits.size() == 1},
                   {"edit", {{"changes", {{uri, edits}}}}}});
  }
  return out;
}

// ---- the stdio loop ----

int runServer(int inFd, int outFd, int debounceMilliseconds, ServerOptions options) {
  const uint64_t maxMessageBytes = maxMessageBytesFor(options.maxDocumentBytes);
  bool outputOpen = true;
  Server server(
      [&](const json &message) {
        if (outputOpen)
          outputOpen = writeMessage(outFd, message.dump(-1, ' ', false, json::error_handler_t::replace));
      },
      std::move(options));
  MessageReader reader(inFd, maxMessageBytes);
  std::string body, error;
  while (!server.exited() && outputOpen) {
    if (server.hasPendingDiagnostics() && !reader.waitReadable(debounceMilliseconds)) {
      server.idle();
      continue;
    }
    const MessageReader::Result r = reader.read(body, error);
    if (r == MessageReader::Result::EndOfInput)
      break;
    if (r == MessageReader::Result::Unusable) {
      server.reportMalformed(error);
      fmt::print(stderr, "netc lsp: {}; stopping\n", error);
      return 1;
    }
    if (r == MessageReader::Result::Malformed) {
      server.reportMalformed(error);
      continue;
    }
    server.handleText(body);
  }
  return server.exitCode(); // at `exit` or the end of input: 0 after `shutdown`
}

} // namespace netc::lsp
