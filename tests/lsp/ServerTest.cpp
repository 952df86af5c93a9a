// ServerTest.cpp -- the language server in-process: UTF-16 position
// conversions against an independent decoder, incremental edits, debounced
// diagnostics (one publish for a burst of edits, the same diagnostics as the
// `netc check` driver, notes as related information or in the message, as
// the client declares), hovers in markdown or plain text (the client's
// contentFormat), and the lifecycle
// rules (nothing before initialize, nothing after shutdown, exit status),
// and hostile input: over-deep JSON, and the stdio loop over a stream with
// an oversized message or one that ends inside a skipped body.
#include "ServerHarness.h"

#include "api/Driver.h"
#include "lsp/Transport.h"
#include "tests/SourceFiles.h"

#include <unistd.h>

#include <random>
#include <thread>

namespace netc::lsp::testing {
namespace {

/// UTF-16 length of each code point of valid UTF-8 `text`, decoded by hand.
std::vector<std::pair<size_t, int>> codePoints(const std::string &text) {
  std::vector<std::pair<size_t, int>> out; // (byte offset, UTF-16 units)
  for (size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    const size_t length = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    out.push_back({i, length == 4 ? 2 : 1});
    i += length;
  }
  return out;
}

TEST(Positions, Utf16ColumnsMatchAnIndependentDecoder) {
  const std::string text = "ab\n// größe 😀 x\r\n\n😀😀z\nend";
  const LineIndex lines(text);
  // Walk every code point: positionOf and offsetOf agree with a manual count.
  int64_t line = 0, column = 0;
  for (auto [offset, units] : codePoints(text)) {
    if (text[offset] == '\r')
      continue; // "\r\n" is one line break: positions end before it
    if (text[offset] == '\n' && offset > 0 && text[offset - 1] == '\r') {
      ++line;
      column = 0;
      continue;
    }
    const Position p = lines.positionOf(static_cast<uint32_t>(offset));
    EXPECT_EQ(p.line, line) << offset;
    EXPECT_EQ(p.character, column) << offset;
    EXPECT_EQ(offsetOf(text, {line, column}), offset) << line << ":" << column;
    if (text[offset] == '\n') {
      ++line;
      column = 0;
    } else {
      column += units;
    }
  }
  // Past the end of a line clamps to the line's end (before "\r\n"); past the last line to the text's end.
  EXPECT_EQ(offsetOf(text, {1, 999}), text.find("\r\n"));
  EXPECT_EQ(offsetOf(text, {99, 0}), text.size());
  // Inside a surrogate pair: the whole emoji is skipped.
  const size_t emoji = text.find("😀😀");
  EXPECT_EQ(offsetOf(text, {3, 1}), emoji + 4);
  // A lone "\r" ends a line too, as the protocol says.
  const std::string mac = "a😀\rbc\r\nd\re";
  const LineIndex macLines(mac);
  EXPECT_EQ(macLines.lineCount(), 4);
  EXPECT_EQ(macLines.positionOf(static_cast<uint32_t>(mac.find('b'))).line, 1);
  EXPECT_EQ(macLines.positionOf(static_cast<uint32_t>(mac.find('e'))).line, 3);
  EXPECT_EQ(macLines.positionOf(static_cast<uint32_t>(mac.find('\r'))).character, 3); // after "a😀"
  EXPECT_EQ(macLines.offsetOf({2, 0}), mac.find('d'));
  EXPECT_EQ(macLines.offsetOf({1, 9}), mac.find("\r\n"));
}

TEST(Documents, IncrementalEditsAtUtf16Positions) {
  Documents docs;
  docs.open("u", "input X [4];\n/* 😀 */ hidden H [2] from X all;\n", 1);
  // Replace "H" (line 1, UTF-16 column 16: "/* 😀 */ hidden " is 16 units) with "Hid".
  ASSERT_TRUE(docs.edit("u", std::make_pair(Position{1, 16}, Position{1, 17}), "Hid").ok());
  EXPECT_EQ(docs.find("u")->text, "input X [4];\n/* 😀 */ hidden Hid [2] from X all;\n");
  // Insert at the very end, then delete across a line break.
  ASSERT_TRUE(
      docs.edit("u", std::make_pair(Position{2, 0}, Position{2, 0}), "output O [1] from Hid all;").ok());
  ASSERT_TRUE(docs.edit("u", std::make_pair(Position{0, 12}, Position{1, 0}), " ").ok());
  EXPECT_EQ(docs.find("u")->text,
            "input X [4]; /* 😀 */ hidden Hid [2] from X all;\noutput O [1] from Hid all;");
  // A reversed range is refused and changes nothing; so is an unknown document.
  EXPECT_FALSE(docs.edit("u", std::make_pair(Position{1, 5}, Position{0, 2}), "x").ok());
  EXPECT_FALSE(docs.edit("other", std::nullopt, "x").ok());
  EXPECT_EQ(docs.find("u")->text,
            "input X [4]; /* 😀 */ hidden Hid [2] from X all;\noutput O [1] from Hid all;");
}

TEST(Server, RequestsBeforeInitializeAndAfterShutdownAreRefused) {
  Session s;
  json r = s.request("textDocument/hover", at("file:///a.net", 0, 0));
  EXPECT_EQ(r["error"]["code"], kServerNotInitialized);
  s.initialize();
  EXPECT_EQ(s.request("initialize")["error"]["code"], kInvalidRequest);
  EXPECT_EQ(s.request("no/such/method")["error"]["code"], kMethodNotFound);
  EXPECT_TRUE(s.request("shutdown").contains("result"));
  EXPECT_EQ(s.request("textDocument/hover", at("file:///a.net", 0, 0))["error"]["code"], kInvalidRequest);
  EXPECT_FALSE(s.server().exited());
  s.notify("exit");
  EXPECT_TRUE(s.server().exited());
  EXPECT_EQ(s.server().exitCode(), 0);
}

TEST(Server, ExitWithoutShutdownFails) {
  Session s;
  s.initialize();
  s.notify("exit");
  EXPECT_TRUE(s.server().exited());
  EXPECT_EQ(s.server().exitCode(), 1);
}

TEST(Server, MalformedMessagesGetProtocolErrors) {
  Session s;
  s.initialize();
  const size_t before = s.sent().size();
  s.server().handleText("{not json");
  s.server().handleText("[1, 2]");
  s.server().handleText(R"({"jsonrpc": "2.0", "id": {"x": 1}, "method": "shutdown"})");
  s.server().handleText(R"({"jsonrpc": "2.0", "id": 7, "method": 42})");
  s.server().handleText(R"({"jsonrpc": "1.0", "id": 8, "method": "shutdown"})");
  ASSERT_EQ(s.sent().size(), before + 5);
  EXPECT_EQ(s.sent()[before]["error"]["code"], kParseError);
  EXPECT_TRUE(s.sent()[before]["id"].is_null());
  EXPECT_EQ(s.sent()[before + 1]["error"]["code"], kInvalidRequest);
  EXPECT_EQ(s.sent()[before + 2]["error"]["code"], kInvalidRequest);
  EXPECT_EQ(s.sent()[before + 3]["error"]["code"], kInvalidRequest);
  EXPECT_EQ(s.sent()[before + 3]["id"], 7);
  EXPECT_EQ(s.sent()[before + 4]["error"]["code"], kInvalidRequest);
  // Wrong parameter types: InvalidParams naming the problem, and the server goes on.
  json r = s.request("textDocument/hover", {{"textDocument", {{"uri", 5}}}, {"position", position(0, 0)}});
  EXPECT_EQ(r["error"]["code"], kInvalidParams);
  r = s.request("textDocument/hover",
                {{"textDocument", {{"uri", "file:///closed.net"}}}, {"position", position(0, 0)}});
  EXPECT_EQ(r["error"]["code"], kInvalidParams);
  EXPECT_NE(r["error"]["message"].get<std::string>().find("is not open"), std::string::npos);
  EXPECT_TRUE(s.request("shutdown").contains("result"));
}

TEST(Server, DiagnosticsAreDebouncedAndMatchTheDriver) {
  Session s;
  s.initialize(markdownClient());
  const std::string uri = "file:///work/m.net";
  std::string text = testfiles::readFile(testfiles::sourcePath("examples/mnist.net"));
  s.open(uri, text);
  // Ten edits in a burst: one publish when the server goes idle, for the last version.
  for (int v = 2; v <= 11; ++v)
    s.notify(
        "textDocument/didChange",
        {{"textDocument", {{"uri", uri}, {"version", v}}},
         {"contentChanges",
          json::array({{{"range", {{"start", position(0, 0)}, {"end", position(0, 0)}}}, {"text", "x"}}})}});
  const size_t before = s.sent().size();
  EXPECT_TRUE(s.server().idle());
  EXPECT_FALSE(s.server().idle());
  std::vector<json> published = s.published(before);
  ASSERT_EQ(published.size(), 1u);
  EXPECT_EQ(published[0]["version"], 11);
  // The same diagnostics as the driver behind `netc check` for that text.
  auto c = compileSource(SourceFile("/work/m.net", std::string(10, 'x') + text), CompileOptions{});
  const std::vector<Diagnostic> expected = c->diags.sorted();
  ASSERT_EQ(published[0]["diagnostics"].size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    const json &d = published[0]["diagnostics"][i];
    EXPECT_EQ(d["code"], std::string(expected[i].code()));
    EXPECT_EQ(d["message"], expected[i].message);
    const LineColumn start = c->file.lineColumnUtf16(expected[i].range.begin);
    EXPECT_EQ(d["range"]["start"]["line"], start.line - 1);
    EXPECT_EQ(d["range"]["start"]["character"], start.column - 1);
    EXPECT_EQ(d.value("relatedInformation", json::array()).size(), expected[i].notes.size());
  }
  EXPECT_FALSE(expected.empty());
}

TEST(Server, HoverDefinitionReferencesAndRenameAgree) {
  Session s;
  s.initialize(markdownClient());
  const std::string uri = "file:///n.net";
  s.open(uri, "const N = 2 * 5;\ninput X [N];\nhidden H [N] from X all;\noutput O [3] from H all;\n");
  json hover = s.request("textDocument/hover", at(uri, 1, 9));
  EXPECT_EQ(hover["result"]["contents"]["value"], "**const** `N` = 10 (an integer)");
  json definition = s.request("textDocument/definition", at(uri, 3, 19));
  EXPECT_EQ(definition["result"]["range"]["start"], position(2, 7));
  json references = s.request("textDocument/references", at(uri, 0, 6));
  EXPECT_EQ(references["result"].size(), 3u); // the definition and two uses
  json rename =
      s.request("textDocument/rename",
                {{"textDocument", {{"uri", uri}}}, {"position", position(2, 7)}, {"newName", "Hidden"}});
  EXPECT_EQ(rename["result"]["changes"][uri].size(), 2u);
  EXPECT_EQ(s.request("textDocument/rename", {{"textDocument", {{"uri", uri}}},
                                              {"position", position(2, 7)},
                                              {"newName", "X"}})["error"]["code"],
            kRequestFailed);
  EXPECT_EQ(s.request("textDocument/rename", {{"textDocument", {{"uri", uri}}},
                                              {"position", position(2, 7)},
                                              {"newName", "2x"}})["error"]["code"],
            kRequestFailed);
}

TEST(Server, HoverOnAnAttributeShowsItsValueAsWrittenAndAsUsed) {
  Session s;
  s.initialize(markdownClient());
  const std::string uri = "file:///a.net";
  s.open(uri, testfiles::readFile(testfiles::sourcePath("examples/mnist.net")));
  // Line 2: "  InputShape = [28, 28]; KernelShape = [4, 4]; Stride = [2, 2]; MapCount = 5; }"
  // (MapCount at columns 64-72); line 5 starts with "  Sharing".
  json hover = s.request("textDocument/hover", at(uri, 2, 66));
  EXPECT_EQ(
      hover["result"]["contents"]["value"],
      "`MapCount` of the **convolve** bundle from `Pic` to `Conv1`: [5]\n\nper dimension, as used: [5, 1]");
  EXPECT_EQ(hover["result"]["range"]["start"], position(2, 64));
  EXPECT_EQ(hover["result"]["range"]["end"], position(2, 72));
  hover = s.request("textDocument/hover", at(uri, 5, 3));
  EXPECT_EQ(hover["result"]["contents"]["value"],
            "`Sharing` of the **convolve** bundle from `Conv1` to `Conv2`: "
            "[false, true, true]\n\nper dimension, as used: [false, true, true]");
}

TEST(Server, HoverIsPlainTextUnlessTheClientListsMarkdownFirst) {
  const std::string text =
      "const N = 2 * 5;\ninput X [N];\nhidden H [N] from X all;\noutput O [3] from H all;\n";
  auto hoverFormat = [](json formats) {
    return json{{"textDocument", {{"hover", {{"contentFormat", std::move(formats)}}}}}};
  };
  struct Case {
    json capabilities;
    bool markdown;
  };
  const Case cases[] = {
      {json::object(), false},                                      // nothing declared
      {hoverFormat(json::array({"plaintext"})), false},             // Eglot without markdown-mode
      {hoverFormat(json::array({"plaintext", "markdown"})), false}, // plain text preferred
      {hoverFormat(json::array()), false},
      {hoverFormat("markdown"), false}, // malformed: not a list
      {hoverFormat(json::array({"markdown", "plaintext"})), true},
      {hoverFormat(json::array({"markdown"})), true},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.capabilities.dump());
    Session s;
    s.initialize(c.capabilities);
    const std::string uri = "file:///n.net";
    s.open(uri, text);
    const json constHover = s.request("textDocument/hover", at(uri, 1, 9))["result"];
    const json layerHover = s.request("textDocument/hover", at(uri, 2, 7))["result"];
    if (c.markdown) {
      EXPECT_EQ(constHover["contents"]["kind"], "markdown");
      EXPECT_EQ(constHover["contents"]["value"], "**const** `N` = 10 (an integer)");
      EXPECT_EQ(layerHover["contents"]["kind"], "markdown");
      EXPECT_EQ(layerHover["contents"]["value"].get<std::string>().rfind("**hidden** layer `H` [10]\n\n", 0),
                0u)
          << layerHover.dump();
      continue;
    }
    EXPECT_EQ(constHover["contents"]["kind"], "plaintext");
    EXPECT_EQ(constHover["contents"]["value"], "const N = 10 (an integer)");
    EXPECT_EQ(layerHover["contents"]["kind"], "plaintext");
    const std::string layer = layerHover["contents"]["value"].get<std::string>();
    EXPECT_EQ(layer.rfind("hidden layer H [10]\n\n- nodes: 10\n", 0), 0u) << layer;
    EXPECT_NE(layer.find("- from X: all\n"), std::string::npos) << layer;
    // No markdown syntax is left: no emphasis, no code spans or fences.
    EXPECT_EQ(layer.find_first_of("*`"), std::string::npos) << layer;
    // The range is the same in both formats.
    EXPECT_EQ(layerHover["range"]["start"], position(2, 7));
  }
}

TEST(Server, NotesGoIntoTheMessageUnlessTheClientShowsRelatedInformation) {
  // A second definition of H: an error with a note at the first one (line 2, column 8).
  const std::string text = "input X [4];\nhidden H [2] from X all;\nhidden H [3] from X all;\n"
                           "output O [1] from H all;\n";
  auto related = [](json value) {
    return json{{"textDocument", {{"publishDiagnostics", {{"relatedInformation", std::move(value)}}}}}};
  };
  for (const json &capabilities : {json::object(), related(false), related("yes"), related(true)}) {
    SCOPED_TRACE(capabilities.dump());
    const bool supported = capabilities == related(true);
    Session s;
    s.initialize(capabilities);
    const std::string uri = "file:///dup.net";
    s.open(uri, text);
    const size_t before = s.sent().size();
    ASSERT_TRUE(s.server().idle());
    const std::vector<json> published = s.published(before);
    ASSERT_EQ(published.size(), 1u);
    const json &diagnostics = published[0]["diagnostics"];
    ASSERT_EQ(diagnostics.size(), 1u) << diagnostics.dump();
    const json &d = diagnostics[0];
    EXPECT_EQ(d["code"], "NS0301");
    EXPECT_EQ(d["range"]["start"], position(2, 7));
    if (supported) {
      EXPECT_EQ(d["message"], "redefinition of layer 'H'");
      ASSERT_EQ(d["relatedInformation"].size(), 1u) << d.dump();
      EXPECT_EQ(d["relatedInformation"][0]["message"], "previous definition is here");
      EXPECT_EQ(d["relatedInformation"][0]["location"]["uri"], uri);
      EXPECT_EQ(d["relatedInformation"][0]["location"]["range"]["start"], position(1, 7));
    } else {
      EXPECT_EQ(d["message"], "redefinition of layer 'H'\nnote: 2:8: previous definition is here");
      EXPECT_FALSE(d.contains("relatedInformation")) << d.dump();
    }
  }
}

TEST(Server, CompletionSendsSnippetsOnlyToClientsThatSupportThem) {
  // Positions where completion offers snippets: after `from Pic ` (bundle
  // kinds), inside `convolve { ` (attributes), between statements ("hidden layer").
  const std::string text =
      "input Pic [28, 28];\n"
      "hidden C [5, 13, 13] from Pic convolve { InputShape = [28, 28]; KernelShape = [4, 4]; "
      "Stride = [2, 2]; MapCount = 5; }\n"
      "output Out [10] from C all;\n";
  const json snippets = {
      {"textDocument", {{"completion", {{"completionItem", {{"snippetSupport", true}}}}}}}};
  const json noSnippets = {
      {"textDocument", {{"completion", {{"completionItem", {{"snippetSupport", false}}}}}}}};
  const json malformed = {
      {"textDocument", {{"completion", {{"completionItem", {{"snippetSupport", "yes"}}}}}}}};
  for (const json &capabilities : {json::object(), noSnippets, malformed, json(5), snippets}) {
    SCOPED_TRACE(capabilities.dump());
    const bool supported = capabilities == snippets;
    Session s;
    s.initialize(capabilities);
    const std::string uri = "file:///c.net";
    s.open(uri, text);
    size_t withInsertText = 0;
    for (const json &where : {at(uri, 1, 30), at(uri, 1, 41), at(uri, 3, 0)}) {
      json r = s.request("textDocument/completion", where);
      ASSERT_TRUE(r["result"]["items"].is_array()) << r.dump();
      for (const json &item : r["result"]["items"]) {
        if (!item.contains("insertText"))
          continue;
        ++withInsertText;
        const std::string insert = item["insertText"].get<std::string>();
        if (supported) {
          EXPECT_EQ(item["insertTextFormat"], 2) << item.dump();
        } else {
          EXPECT_EQ(item["insertTextFormat"], 1) << item.dump();
          EXPECT_EQ(insert.find('$'), std::string::npos) << item.dump();
        }
      }
    }
    EXPECT_GT(withInsertText, 10u);
  }
}

TEST(Server, UnfinishedWhereGetsOnlyItsSyntaxError) {
  // Typing a `where` bundle: each unfinished state has exactly one error, the
  // syntax error, and nothing from the names error recovery left empty.
  Session s;
  s.initialize();
  const std::string uri = "file:///w.net";
  const std::string head = "input In [3];\nhidden H [3] from In ";
  const std::string tail = "\noutput Out [2] from H all;\n";
  int version = 1;
  for (const char *typed : {"where", "where;", "where (", "where (s", "where (s,", "where (s, d",
                            "where (s, d)", "where (s, d) =>", "where (s, d) =>;", "where (s, ) => s == d;",
                            "where (, d) => s == d;", "where (s, d) => s ==;"}) {
    SCOPED_TRACE(typed);
    if (version == 1)
      s.open(uri, head + typed + tail);
    else
      s.notify("textDocument/didChange",
               {{"textDocument", {{"uri", uri}, {"version", version}}},
                {"contentChanges", json::array({{{"text", head + typed + tail}}})}});
    ++version;
    const size_t before = s.sent().size();
    EXPECT_TRUE(s.server().idle());
    std::vector<json> published = s.published(before);
    ASSERT_EQ(published.size(), 1u);
    const json &diagnostics = published[0]["diagnostics"];
    ASSERT_EQ(diagnostics.size(), 1u) << diagnostics.dump();
    EXPECT_EQ(diagnostics[0]["code"], "NS0101") << diagnostics.dump();
    EXPECT_GE(diagnostics[0]["range"]["start"]["line"], 1) << diagnostics.dump(); // not at 1:1
  }
}

TEST(Server, HugeDocumentIsServed) {
  // 20,000 layers in a chain (about 1 MB): checked, indexed and answered.
  std::string text = "input L0 [8];\n";
  const int layers = 20000;
  for (int i = 1; i < layers; ++i)
    text += "hidden L" + std::to_string(i) + " [8] from L" + std::to_string(i - 1) + " all;\n";
  text += "output Out [2] from L" + std::to_string(layers - 1) + " all;\n";
  Session s;
  s.initialize(markdownClient());
  const std::string uri = "file:///huge.net";
  s.open(uri, text);
  const size_t before = s.sent().size();
  EXPECT_TRUE(s.server().idle());
  std::vector<json> published = s.published(before);
  ASSERT_EQ(published.size(), 1u);
  EXPECT_TRUE(published[0]["diagnostics"].empty()) << published[0]["diagnostics"][0].dump();
  json hover = s.request("textDocument/hover", at(uri, layers - 1, 8));
  EXPECT_NE(hover["result"]["contents"]["value"].get<std::string>().find("`L" + std::to_string(layers - 1) +
                                                                         "` [8]"),
            std::string::npos);
  json references = s.request("textDocument/references", at(uri, 5000, 8));
  EXPECT_EQ(references["result"].size(), 2u); // its declaration and the next layer's `from`
  json symbols = s.request("textDocument/documentSymbol", {{"textDocument", {{"uri", uri}}}});
  EXPECT_EQ(symbols["result"].size(), static_cast<size_t>(layers + 1));
}

TEST(Server, DocumentOverTheSizeLimitGetsOneDiagnosticAndIsNotParsed) {
  // Over the 4 MiB default: one NS0001 error at 1:1 saying so (the
  // message `netc check` gives for such a file), nothing parsed, and the
  // requests answered as for an empty document.
  const uint64_t limit = CompileOptions{}.maxSourceBytes;
  ASSERT_EQ(limit, uint64_t{4} << 20);
  std::string text = "input I [2];\noutput O [1] from Missing all;\n";
  text += std::string(limit + 200 * 1024 - text.size(), '\n');
  Session s;
  s.initialize();
  const std::string uri = "file:///tmp/big.net";
  s.open(uri, text);
  const size_t before = s.sent().size();
  EXPECT_TRUE(s.server().idle());
  std::vector<json> published = s.published(before);
  ASSERT_EQ(published.size(), 1u);
  const json &diagnostics = published[0]["diagnostics"];
  ASSERT_EQ(diagnostics.size(), 1u) << diagnostics.dump();
  EXPECT_EQ(diagnostics[0]["code"], "NS0001");
  EXPECT_EQ(diagnostics[0]["message"],
            "cannot read '/tmp/big.net': it is 4.2 MiB, more than the 4.0 MiB a Net# source file may have "
            "(raise the limit with --max-source-size)");
  EXPECT_EQ(diagnostics[0]["range"]["start"], position(0, 0));
  EXPECT_TRUE(s.request("textDocument/hover", at(uri, 1, 20))["result"].is_null());
  EXPECT_TRUE(s.request("textDocument/documentSymbol", {{"textDocument", {{"uri", uri}}}})["result"].empty());

  // An edit that brings it under the limit: analysed as usual.
  s.notify("textDocument/didChange",
           {{"textDocument", {{"uri", uri}, {"version", 2}}},
            {"contentChanges", json::array({{{"text", "input I [2];\noutput O [1] from Missing all;\n"}}})}});
  const size_t edited = s.sent().size();
  EXPECT_TRUE(s.server().idle());
  published = s.published(edited);
  ASSERT_EQ(published.size(), 1u);
  ASSERT_EQ(published[0]["diagnostics"].size(), 1u) << published[0].dump();
  EXPECT_EQ(published[0]["diagnostics"][0]["code"], "NS0302");
}

TEST(Server, TheDocumentLimitIsAnOptionAndEditsCannotGrowADocumentWithoutBound) {
  ServerOptions options;
  options.maxDocumentBytes = 1024; // netc lsp --max-source-size 1K
  Session s(std::move(options));
  s.initialize();
  const std::string uri = "file:///grow.net";
  s.open(uri, std::string(2000, ' '));
  EXPECT_TRUE(s.server().idle());
  std::vector<json> published = s.published();
  ASSERT_EQ(published.size(), 1u);
  EXPECT_EQ(
      published[0]["diagnostics"][0]["message"],
      "cannot read '/grow.net': it is 2.0 KiB, more than the 1.0 KiB a Net# source file may have (raise "
      "the limit with --max-source-size)");
  // Appending 9 MiB twice would pass the 16 MiB a message may have: the
  // second change is refused (logged) and the document keeps its text.
  const json append = {{"range", {{"start", position(0, 2000)}, {"end", position(0, 2000)}}},
                       {"text", std::string(9 << 20, ' ')}};
  s.notify("textDocument/didChange",
           {{"textDocument", {{"uri", uri}, {"version", 2}}}, {"contentChanges", json::array({append})}});
  const size_t before = s.sent().size();
  s.notify("textDocument/didChange",
           {{"textDocument", {{"uri", uri}, {"version", 3}}}, {"contentChanges", json::array({append})}});
  ASSERT_EQ(s.sent().size(), before + 1);
  EXPECT_EQ(s.sent().back()["method"], "window/logMessage");
  EXPECT_EQ(
      s.sent().back()["params"]["message"],
      "textDocument/didChange: the change makes 'file:///grow.net' 18876368 bytes, more than the 16777216 "
      "bytes a message may have; it is not applied");
}

TEST(Server, OverDeepJsonIsRefusedWithoutBeingBuilt) {
  // 150,000 nested arrays as params, before initialize: a ParseError with id
  // null (not a stack overflow), and the server goes on.
  Session s;
  const std::string deep = R"({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": )" +
                           std::string(150000, '[') + std::string(150000, ']') + "}";
  s.server().handleText(deep);
  ASSERT_EQ(s.sent().size(), 1u);
  EXPECT_TRUE(s.sent()[0]["id"].is_null());
  EXPECT_EQ(s.sent()[0]["error"]["code"], kParseError);
  EXPECT_EQ(s.sent()[0]["error"]["message"], "the message nests arrays and objects more than 512 deep (at "
                                             "byte offset 573 of the body); it is not read");
  // Objects count too; exactly the limit is fine, and brackets inside
  // strings (escaped quotes included) do not count.
  std::string objects = R"({"jsonrpc": "2.0", "method": "x", "params": )";
  for (int i = 0; i < 1000; ++i)
    objects += R"({"a": )";
  objects += "1" + std::string(1000, '}') + "}";
  s.server().handleText(objects);
  ASSERT_EQ(s.sent().size(), 2u);
  EXPECT_EQ(s.sent()[1]["error"]["code"], kParseError);
  const std::string atLimit =
      R"({"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": {"capabilities": {},)"
      R"( "x": "\"[[[[{{{{", "deep": )" +
      std::string(kMaxJsonDepth - 2, '[') + std::string(kMaxJsonDepth - 2, ']') + "}}";
  s.server().handleText(atLimit);
  ASSERT_EQ(s.sent().size(), 3u) << s.sent().back().dump();
  EXPECT_EQ(s.sent()[2]["id"], 2);
  EXPECT_TRUE(s.sent()[2].contains("result")) << s.sent()[2].dump();
}

/// Runs the stdio loop over `input` (fed by a thread); returns the exit
/// status and the messages written.
std::pair<int, std::vector<json>> serveStream(const std::string &input) {
  int in[2], out[2];
  EXPECT_EQ(::pipe(in), 0);
  EXPECT_EQ(::pipe(out), 0);
  std::thread writer([fd = in[1], &input] {
    size_t done = 0;
    while (done < input.size()) {
      const ssize_t n = ::write(fd, input.data() + done, input.size() - done);
      if (n <= 0)
        break;
      done += static_cast<size_t>(n);
    }
    ::close(fd);
  });
  std::vector<json> messages;
  std::thread reader([fd = out[0], &messages] {
    MessageReader replies(fd);
    std::string body, error;
    while (replies.read(body, error) == MessageReader::Result::Message)
      messages.push_back(json::parse(body));
  });
  const int status = runServer(in[0], out[1], 0);
  ::close(out[1]);
  writer.join();
  reader.join();
  ::close(in[0]);
  ::close(out[0]);
  return {status, messages};
}

std::string framedMessage(const json &message) {
  const std::string body = message.dump();
  return "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

TEST(Server, StdioLoopAnswersAfterDeepJsonAndAnOversizedLength) {
  const std::string deep = R"({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": )" +
                           std::string(150000, '[') + std::string(150000, ']') + "}";
  const std::string input =
      "Content-Length: " + std::to_string(deep.size()) + "\r\n\r\n" + deep +
      "Content-Length: 1000000000000\r\n\r\n{\"jsonrpc\": \"2.0\", \"id\": 9, \"params\": [" +
      framedMessage({{"jsonrpc", "2.0"}, {"id", 2}, {"method", "initialize"}, {"params", json::object()}}) +
      framedMessage({{"jsonrpc", "2.0"}, {"id", 3}, {"method", "shutdown"}}) +
      framedMessage({{"jsonrpc", "2.0"}, {"method", "exit"}});
  const auto [status, messages] = serveStream(input);
  EXPECT_EQ(status, 0);
  std::vector<json> replies;
  for (const json &m : messages)
    if (m.contains("id"))
      replies.push_back(m);
  ASSERT_EQ(replies.size(), 4u);
  EXPECT_TRUE(replies[0]["id"].is_null());
  EXPECT_EQ(replies[0]["error"]["code"], kParseError);
  EXPECT_TRUE(replies[1]["id"].is_null());
  EXPECT_EQ(replies[1]["error"]["code"], kParseError);
  EXPECT_NE(replies[1]["error"]["message"].get<std::string>().find("a message of 1000000000000 bytes"),
            std::string::npos);
  EXPECT_EQ(replies[2]["id"], 2);
  EXPECT_TRUE(replies[2].contains("result"));
  EXPECT_EQ(replies[3]["id"], 3);
}

TEST(Server, StdioLoopStopsWithStatus1WhenTheInputEndsInASkippedBody) {
  // Even after shutdown: the stream broke, so the status is not 0.
  const std::string input =
      framedMessage({{"jsonrpc", "2.0"}, {"id", 1}, {"method", "initialize"}, {"params", json::object()}}) +
      framedMessage({{"jsonrpc", "2.0"}, {"id", 2}, {"method", "shutdown"}}) +
      "Content-Length: 1000000000000\r\n\r\n" + std::string(1000, 'x');
  const auto [status, messages] = serveStream(input);
  EXPECT_EQ(status, 1);
  ASSERT_FALSE(messages.empty());
  EXPECT_EQ(messages.back()["error"]["message"],
            "malformed message: the input ended inside the body of the 1000000000000-byte message being "
            "skipped; the stream is unusable");
}

// A layer's hover gives its training time on the cost table the server was
// started with, from the table alone (nothing runs); without one, none.
TEST(Server, LayerHoverGivesTheTrainingTimeOnTheCostTable) {
  const std::string text = "input X [100];\nhidden H [50] from X all;\noutput O [10] from H all;\n";
  auto table = cost::builtinCostTable("cpu");
  ASSERT_TRUE(table);
  // Hovering the hidden layer H (line 1), then the input layer X (line 0).
  Session with(ServerOptions{std::make_shared<const cost::CostTable>(*table), "cpu"});
  with.initialize();
  with.open("file:///a.net", text);
  const std::string hover =
      with.request("textDocument/hover", at("file:///a.net", 1, 8))["result"]["contents"]["value"];
  EXPECT_NE(hover.find("- training time: about "), std::string::npos) << hover;
  EXPECT_NE(
      hover.find("us per step of 32 samples (forward, backward and update; cost table 'cpu', 1 thread(s))"),
      std::string::npos)
      << hover;
  // The input layer has no time of its own.
  const std::string input =
      with.request("textDocument/hover", at("file:///a.net", 0, 7))["result"]["contents"]["value"];
  EXPECT_EQ(input.find("training time"), std::string::npos) << input;
  Session without;
  without.initialize();
  without.open("file:///a.net", text);
  const std::string plain =
      without.request("textDocument/hover", at("file:///a.net", 1, 8))["result"]["contents"]["value"];
  EXPECT_EQ(plain.find("training time"), std::string::npos) << plain;
}

} // namespace
} // namespace netc::lsp::testing
