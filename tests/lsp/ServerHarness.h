// ServerHarness.h -- drives lsp::Server in-process for the C++ LSP tests:
// sends requests and notifications, collects what the server sends back,
// and finds the response to a request.
#pragma once

#include "lsp/Server.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace netc::lsp::testing {

using nlohmann::json;

class Session {
public:
  explicit Session(ServerOptions options = {})
      : server_([this](const json &m) { sent_.push_back(m); }, std::move(options)) {}

  Server &server() { return server_; }
  std::vector<json> &sent() { return sent_; }

  /// Sends a request and returns the server's response to it (null json
  /// when none came, which the caller's expectations then report).
  json request(const std::string &method, json params = json::object()) {
    const int id = nextId_++;
    const size_t before = sent_.size();
    server_.handle({{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}});
    json found;
    int responses = 0;
    for (size_t i = before; i < sent_.size(); ++i)
      if (sent_[i].contains("id") && sent_[i]["id"] == id) {
        found = sent_[i];
        ++responses;
      }
    EXPECT_EQ(responses, 1) << method << ": expected exactly one response";
    return found;
  }
  void notify(const std::string &method, json params = json::object()) {
    server_.handle({{"jsonrpc", "2.0"}, {"method", method}, {"params", std::move(params)}});
  }
  /// initialize (with the client's `capabilities`) and initialized.
  void initialize(json capabilities = json::object()) {
    json r = request("initialize", {{"capabilities", std::move(capabilities)}});
    ASSERT_TRUE(r.contains("result")) << r.dump();
    notify("initialized");
  }
  void open(const std::string &uri, const std::string &text, int version = 1) {
    notify(
        "textDocument/didOpen",
        {{"textDocument", {{"uri", uri}, {"languageId", "netsharp"}, {"version", version}, {"text", text}}}});
  }
  /// The publishDiagnostics notifications sent since message `from`.
  std::vector<json> published(size_t from = 0) const {
    std::vector<json> out;
    for (size_t i = from; i < sent_.size(); ++i)
      if (sent_[i].value("method", "") == "textDocument/publishDiagnostics")
        out.push_back(sent_[i]["params"]);
    return out;
  }

private:
  std::vector<json> sent_;
  Server server_;
  int nextId_ = 1;
};

/// The capabilities of a client like VS Code's: hovers in markdown (listed
/// first) and notes as related information. Without them the server sends
/// plain-text hovers and puts notes into the diagnostic's message.
inline json markdownClient() {
  return {{"textDocument",
           {{"hover", {{"contentFormat", json::array({"markdown", "plaintext"})}}},
            {"publishDiagnostics", {{"relatedInformation", true}}}}}};
}

inline json position(int64_t line, int64_t character) {
  return {{"line", line}, {"character", character}};
}
inline json at(const std::string &uri, int64_t line, int64_t character) {
  return {{"textDocument", {{"uri", uri}}}, {"position", position(line, character)}};
}

} // namespace netc::lsp::testing
