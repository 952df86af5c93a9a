// Completion.cpp -- `textDocument/completion` (Server.h): what may come next
// at the cursor, from the tokens before it: statement keywords and a layer
// snippet at the start of a statement, layer names after `from` (output
// layers left out: NS0308), bundle kinds after a source, const names and
// functions in expressions, attribute names in a bundle block. Snippets
// (insertTextFormat 2) go only to clients that declare snippetSupport; other
// clients get the same text with the placeholders filled in.
#include "lsp/Server.h"

#include "frontend/Parser.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace netc::lsp {

using nlohmann::json;

namespace {

/// LSP CompletionItemKind values used here.
constexpr int kCompletionKeyword = 14, kCompletionFunction = 3, kCompletionClass = 7,
              kCompletionProperty = 10, kCompletionConstant = 21, kCompletionSnippet = 15;

/// The text a snippet inserts, for a client without snippet support: each
/// placeholder `${1:text}` becomes its text, tab stops `$1`/`${1}` vanish and
/// `\$`, `\}`, `\\` lose their backslash.
std::string snippetAsPlainText(std::string_view snippet) {
  std::string out;
  size_t placeholders = 0; // `${n:` opened and not yet closed
  for (size_t i = 0; i < snippet.size(); ++i) {
    const char c = snippet[i];
    if (c == '\\' && i + 1 < snippet.size() &&
        (snippet[i + 1] == '$' || snippet[i + 1] == '}' || snippet[i + 1] == '\\')) {
      out += snippet[++i];
    } else if (c == '$' && i + 1 < snippet.size() &&
               std::isdigit(static_cast<unsigned char>(snippet[i + 1]))) {
      while (i + 1 < snippet.size() && std::isdigit(static_cast<unsigned char>(snippet[i + 1])))
        ++i;
    } else if (c == '$' && i + 1 < snippet.size() && snippet[i + 1] == '{') {
      size_t j = i + 2;
      while (j < snippet.size() && std::isdigit(static_cast<unsigned char>(snippet[j])))
        ++j;
      if (j < snippet.size() && snippet[j] == '}') {
        i = j; // ${1}
      } else if (j < snippet.size() && snippet[j] == ':') {
        i = j; // ${1:text}: keep the text, drop the closing brace below
        ++placeholders;
      } else {
        out += c;
      }
    } else if (c == '}' && placeholders > 0) {
      --placeholders;
    } else {
      out += c;
    }
  }
  return out;
}

} // namespace

json Server::completion(const json &params) {
  const Analysis &a = analysisOf(uriOf(params));
  const uint32_t offset = offsetAt(a, params);
  // The tokens before the cursor decide the context.
  DiagnosticEngine quiet;
  SourceFile prefix(a.file().name(), std::string(a.file().text().substr(0, offset)));
  std::vector<TokenInfo> tokens;
  for (const TokenInfo &t : lexTokens(prefix, quiet))
    if (t.category != TokenInfo::Category::Comment)
      tokens.push_back(t);
  // Drop a word being typed: completions replace it.
  if (!tokens.empty() && tokens.back().range.end == offset &&
      (tokens.back().category == TokenInfo::Category::Identifier ||
       tokens.back().category == TokenInfo::Category::Keyword ||
       tokens.back().category == TokenInfo::Category::Function))
    tokens.pop_back();
  auto kindAt = [&](size_t back) -> std::string_view {
    return back < tokens.size() ? tokens[tokens.size() - 1 - back].kind() : std::string_view();
  };
  json items = json::array();
  auto add = [&](const std::string &label, int kind, const std::string &detail,
                 const std::string &snippet = {}) {
    json item = {{"label", label}, {"kind", kind}, {"detail", detail}};
    if (!snippet.empty() && snippetSupport_)
      item["insertText"] = snippet, item["insertTextFormat"] = 2;
    else if (!snippet.empty())
      item["insertText"] = snippetAsPlainText(snippet), item["insertTextFormat"] = 1;
    items.push_back(std::move(item));
  };
  // The layer being written (a bundle from itself is an error): the first
  // name of the current statement, after its layer keyword if any.
  std::string_view self;
  {
    size_t i = tokens.size();
    while (i > 0 && tokens[i - 1].kind() != "SEMI" && tokens[i - 1].kind() != "LBRACE" &&
           tokens[i - 1].kind() != "RBRACE")
      --i;
    if (i < tokens.size() &&
        (tokens[i].kind() == "INPUT" || tokens[i].kind() == "HIDDEN" || tokens[i].kind() == "OUTPUT"))
      ++i;
    if (i < tokens.size() && tokens[i].kind() == "IDENT")
      self = a.file().slice(tokens[i].range);
  }
  // Sources for a bundle: not the layer being written (NS0306) and not an
  // output layer (NS0308).
  auto layers = [&] {
    for (const Declaration &d : a.declarations())
      if (d.kind == NameKind::Layer && d.name != self &&
          !(d.layer && d.layer->kind == ast::LayerKind::Output))
        add(d.name, kCompletionClass, "layer");
  };
  auto consts = [&] {
    for (const Declaration &d : a.declarations())
      if (d.kind == NameKind::Const)
        add(d.name, kCompletionConstant, "const");
  };
  // Brace depth and the bundle kind that opened the innermost block.
  int depth = 0;
  std::string blockKind;
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i].kind() == "LBRACE") {
      ++depth;
      blockKind.clear();
      for (size_t j = i; j-- > 0 && j + 4 > i;) {
        const std::string_view k = tokens[j].kind();
        if (k == "CONVOLVE" || k == "POOL" || k == "NORM" || k == "ALL" || k == "WHERE") {
          blockKind = std::string(k);
          if (k == "POOL" && j > 0)
            blockKind = std::string(tokens[j - 1].kind()) + " POOL";
          break;
        }
      }
    } else if (tokens[i].kind() == "RBRACE") {
      depth = std::max(0, depth - 1);
      blockKind.clear();
    }
  }
  const std::string_view last = kindAt(0);
  if (last == "FROM") {
    layers();
  } else if (last == "IDENT" && kindAt(1) == "FROM") {
    for (const ir::BundleKind k : ir::allBundleKinds()) {
      const std::string spelling(ir::bundleKindName(k));
      if (k == ir::BundleKind::Where)
        add("where", kCompletionKeyword, "filtered bundle", "where (${1:s}, ${2:d}) => ${3:true}");
      else if (ir::bundleIsGeometric(k))
        add(spelling, kCompletionKeyword, "bundle",
            spelling + " {\n  InputShape = [$1];\n  KernelShape = [$2];\n}");
      else
        add(spelling, kCompletionKeyword, "bundle");
    }
  } else if (last == "ASSIGN" || last == "LBRACK" || last == "COMMA" || last == "LPAREN" || last == "ADD" ||
             last == "SUB" || last == "MUL" || last == "DIV") {
    consts();
  } else if (depth > 0 && !blockKind.empty() && (last == "LBRACE" || last == "SEMI")) {
    for (const ir::BundleKind k : ir::allBundleKinds()) {
      std::string spelling(ir::bundleKindName(k));
      std::string upper;
      for (char ch : spelling)
        upper += ch == ' ' ? ' ' : static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
      const bool matches = upper == blockKind || (blockKind == "NORM" && k == ir::BundleKind::ResponseNorm) ||
                           (blockKind.find("POOL") != std::string::npos && upper == blockKind);
      if (!matches)
        continue;
      for (const ir::Attr attr : ir::allAttrs())
        if (ir::bundleAllowedAttrs(k) & ir::attrBit(attr)) {
          const std::string name(ir::attrName(attr));
          const ir::AttrValueKind vk = ir::attrValueKind(attr);
          const std::string value = vk == ir::AttrValueKind::Number ? "${1:1}"
                                    : vk == ir::AttrValueKind::Bool ? "${1:true}"
                                                                    : "[${1}]";
          add(name, kCompletionProperty, fmt::format("attribute of {}", spelling),
              name + " = " + value + ";");
        }
    }
  } else if ((last == "RBRACK" || last == "AUTO") && depth == 0) {
    for (const ir::Activation fn : ir::allActivations())
      add(std::string(ir::activationName(fn)), kCompletionFunction, "output function");
    add("from", kCompletionKeyword, "connect from a layer");
  } else if (depth == 0 && (last.empty() || last == "SEMI" || last == "RBRACE")) {
    for (std::string_view keyword : statementKeywords())
      add(std::string(keyword), kCompletionKeyword, "statement");
    add("hidden layer", kCompletionSnippet, "a hidden layer",
        "hidden ${1:Name} [${2:100}] from ${3:Source} all;");
  } else if (last == "IDENT" || last == "RBRACK") {
    add("from", kCompletionKeyword, "connect from a layer");
  }
  return {{"isIncomplete", false}, {"items", items}};
}

} // namespace netc::lsp
