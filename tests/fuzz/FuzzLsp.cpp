// FuzzLsp.cpp -- libFuzzer target for the language server (built with
// -DNETC_FUZZ=ON; scripts/fuzz.sh runs it after the check target). The input
// is split at 0x01 bytes: the first piece is a document opened in the
// server, every later piece is one operation chosen by its first byte -- an
// incremental edit at positions taken from the next bytes, a request of any
// kind at such a position, an idle point that publishes diagnostics, or the
// rest of the piece sent as a raw (usually malformed) message. Any crash,
// sanitizer report, exception or missing response is a finding.
#include "lsp/Server.h"

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

using nlohmann::json;

namespace {

const char *const kMethods[] = {"textDocument/hover",          "textDocument/definition",
                                "textDocument/references",     "textDocument/completion",
                                "textDocument/documentSymbol", "textDocument/formatting",
                                "textDocument/inlayHint",      "textDocument/semanticTokens/full",
                                "textDocument/codeAction",     "textDocument/prepareRename",
                                "textDocument/rename"};

json position(const std::string &piece, size_t at) {
  auto byte = [&](size_t i) { return i < piece.size() ? static_cast<unsigned char>(piece[i]) : 0; };
  return {{"line", byte(at) % 64}, {"character", byte(at + 1) % 128}};
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::vector<std::string> pieces(1);
  for (size_t i = 0; i < size; ++i) {
    if (data[i] == 1)
      pieces.emplace_back();
    else
      pieces.back() += static_cast<char>(data[i]);
  }
  int responses = 0, requests = 0;
  netc::lsp::Server server([&](const json &m) {
    if (m.contains("id") && !m["id"].is_null())
      ++responses;
  });
  const std::string uri = "file:///fuzz.net";
  auto request = [&](const std::string &method, json params) {
    ++requests;
    server.handle({{"jsonrpc", "2.0"}, {"id", requests}, {"method", method}, {"params", std::move(params)}});
  };
  request("initialize", json::object());
  // Document texts must be valid UTF-8 JSON strings: replace what is not.
  auto text = [](const std::string &s) {
    return json(s).dump(-1, ' ', false, json::error_handler_t::replace);
  };
  server.handle(
      {{"jsonrpc", "2.0"},
       {"method", "textDocument/didOpen"},
       {"params",
        {{"textDocument", {{"uri", uri}, {"version", 1}, {"text", json::parse(text(pieces[0]))}}}}}});
  int version = 1;
  for (size_t p = 1; p < pieces.size(); ++p) {
    const std::string &piece = pieces[p];
    const unsigned op = piece.empty() ? 0 : static_cast<unsigned char>(piece[0]) % 16;
    if (op < 6) { // an edit
      json change = {{"range", {{"start", position(piece, 1)}, {"end", position(piece, 3)}}},
                     {"text", json::parse(text(piece.size() > 5 ? piece.substr(5) : ""))}};
      server.handle({{"jsonrpc", "2.0"},
                     {"method", "textDocument/didChange"},
                     {"params",
                      {{"textDocument", {{"uri", uri}, {"version", ++version}}},
                       {"contentChanges", json::array({change})}}}});
    } else if (op < 13) { // a request
      const char *method =
          kMethods[(piece.size() > 1 ? static_cast<unsigned char>(piece[1]) : 0) % std::size(kMethods)];
      request(method, {{"textDocument", {{"uri", uri}}},
                       {"position", position(piece, 2)},
                       {"range", {{"start", position(piece, 2)}, {"end", position(piece, 4)}}},
                       {"newName", "Renamed"},
                       {"context", {{"includeDeclaration", true}}}});
    } else if (op < 15) {
      server.idle();
    } else {
      server.handleText(piece.substr(1));
    }
  }
  request("shutdown", nullptr);
  server.idle();
  if (responses != requests)
    std::abort(); // every request gets exactly one response
  return 0;
}
