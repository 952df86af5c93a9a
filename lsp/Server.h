// Server.h -- the Net# language server: JSON-RPC dispatch over LSP messages
// (lifecycle, document sync, and the language features), independent of the
// transport so tests can drive it message by message. Diagnostics are
// published when the server goes idle (the stdio loop calls idle() once no
// input has arrived for the debounce interval), so a burst of edits
// compiles once.
#pragma once

#include "lsp/Analysis.h"
#include "lsp/Documents.h"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>

namespace netc::lsp {

/// JSON-RPC and LSP error codes.
enum ErrorCode : int {
  kParseError = -32700,
  kInvalidRequest = -32600,
  kMethodNotFound = -32601,
  kInvalidParams = -32602,
  kInternalError = -32603,
  kServerNotInitialized = -32002,
  kRequestFailed = -32803,
};

/// The deepest nesting of arrays and objects a message may have; deeper
/// ones are answered with a ParseError and never parsed.
constexpr size_t kMaxJsonDepth = 512;

/// What the server is started with: the cost table its layer hovers give a
/// training time from (none: no times; it never measures anything), and the
/// largest document it analyses (`netc lsp --max-source-size`): a larger one
/// gets one diagnostic saying so. Messages may be 4 times that
/// (maxMessageBytesFor), and no edit may make a document larger than that.
struct ServerOptions {
  std::shared_ptr<const cost::CostTable> costTable;
  std::string costTableName;
  uint64_t maxDocumentBytes = CompileOptions{}.maxSourceBytes;
};

class Server {
public:
  using Send = std::function<void(const nlohmann::json &message)>;
  explicit Server(Send send, ServerOptions options = {})
      : send_(std::move(send)), options_(std::move(options)) {}

  /// Handles one message body as read from the transport (a JSON parse
  /// error, or nesting deeper than kMaxJsonDepth, is answered with a
  /// ParseError response with id null).
  void handleText(const std::string &body);
  void handle(const nlohmann::json &message);
  /// Reports a framing problem the transport found.
  void reportMalformed(const std::string &problem);
  /// Publishes diagnostics for documents changed since the last call;
  /// returns whether it published any.
  bool idle();
  bool hasPendingDiagnostics() const { return !dirty_.empty(); }

  bool exited() const { return exited_; }
  /// The process exit status (after `exit`, or at the end of input): 0 if
  /// `shutdown` came first, else 1.
  int exitCode() const { return shutdown_ ? 0 : 1; }

private:
  struct ProtocolError {
    int code;
    std::string message;
  };

  void request(const nlohmann::json &id, const std::string &method, const nlohmann::json &params);
  void notification(const std::string &method, const nlohmann::json &params);
  void respond(const nlohmann::json &id, nlohmann::json result);
  void respondError(const nlohmann::json &id, int code, const std::string &message);
  void log(const std::string &message, int type = 3);

  /// The analysis of an open document's current version (cached).
  const Analysis &analysisOf(const std::string &uri);
  const std::string &uriOf(const nlohmann::json &params) const;
  uint32_t offsetAt(const Analysis &a, const nlohmann::json &params) const;
  nlohmann::json rangeJson(const LineIndex &lines, SourceRange range) const;
  /// A diagnostic as the client gets it: its notes as related information
  /// or in the message, as the client declared at initialize.
  nlohmann::json diagnosticJson(const Analysis &a, const Diagnostic &d, const std::string &uri) const;
  void publish(const std::string &uri);

  nlohmann::json initialize(const nlohmann::json &params);
  nlohmann::json hover(const nlohmann::json &params);
  nlohmann::json definition(const nlohmann::json &params);
  nlohmann::json references(const nlohmann::json &params);
  nlohmann::json prepareRename(const nlohmann::json &params);
  nlohmann::json rename(const nlohmann::json &params);
  nlohmann::json completion(const nlohmann::json &params);
  nlohmann::json documentSymbols(const nlohmann::json &params);
  nlohmann::json formatting(const nlohmann::json &params);
  nlohmann::json inlayHints(const nlohmann::json &params);
  nlohmann::json semanticTokens(const nlohmann::json &params);
  nlohmann::json codeActions(const nlohmann::json &params);
  void didChange(const nlohmann::json &params);

  Send send_;
  ServerOptions options_;
  Documents documents_;
  struct Cached {
    int64_t version = -1;
    std::string text;
    std::unique_ptr<Analysis> analysis;
  };
  std::map<std::string, Cached> cache_;
  std::set<std::string> dirty_;
  bool initialized_ = false, shutdown_ = false, exited_ = false;
  /// The client declared completionItem.snippetSupport at initialize.
  bool snippetSupport_ = false;
  /// The client listed "markdown" first in textDocument.hover.contentFormat;
  /// otherwise hovers are plain text.
  bool hoverMarkdown_ = false;
  /// The client declared publishDiagnostics.relatedInformation; otherwise a
  /// diagnostic's notes are appended to its message.
  bool relatedInformation_ = false;
};

/// Serves LSP over file descriptors until `exit` or the end of input;
/// returns the process exit status. Diagnostics are published once no
/// message has arrived for `debounceMilliseconds`.
int runServer(int inFd, int outFd, int debounceMilliseconds, ServerOptions options = {});

} // namespace netc::lsp
