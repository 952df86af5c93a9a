// RandomEditTest.cpp -- the language server under seeded random sessions
// (run under ASan and UBSan in CI): thousands of incremental edits at random
// positions (inside and past lines, across line breaks, with multi-byte and
// surrogate-pair characters, full replacements, reversed ranges), random
// requests of every kind at random positions, idle points that publish
// diagnostics, and malformed messages. Checked: the server never crashes or
// throws; every request gets exactly one response, a result or a known
// protocol error; the text the server holds matches a shadow copy edited by
// an independent UTF-16 implementation (through the ranges it reports: every
// range, symbol and semantic token lies inside the shadow text).
#include "ServerHarness.h"

#include "tests/SourceFiles.h"

#include <random>

namespace netc::lsp::testing {
namespace {

/// The lines of `text` as the protocol counts them ("\n", "\r\n" or a lone
/// "\r" end a line): (first byte, first byte of the line break), decoded
/// independently of lsp/Documents.cpp.
std::vector<std::pair<size_t, size_t>> shadowLines(const std::string &text) {
  std::vector<std::pair<size_t, size_t>> lines;
  size_t start = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\n' && text[i] != '\r')
      continue;
    lines.push_back({start, i});
    if (text[i] == '\r' && i + 1 < text.size() && text[i + 1] == '\n')
      ++i;
    start = i + 1;
  }
  lines.push_back({start, text.size()});
  return lines;
}

size_t utf8Length(unsigned char lead) {
  return lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
}

/// Byte offset of an LSP position in `text`, code point by code point (a
/// 4-byte sequence being two UTF-16 units), clamped as the protocol asks.
size_t shadowOffset(const std::string &text, int64_t line, int64_t character) {
  const auto lines = shadowLines(text);
  if (line >= static_cast<int64_t>(lines.size()))
    return text.size();
  auto [i, end] = lines[static_cast<size_t>(line)];
  int64_t units = 0;
  while (i < end && units < character) {
    const size_t length = utf8Length(static_cast<unsigned char>(text[i]));
    units += length == 4 ? 2 : 1;
    i += length;
  }
  return std::min(i, end);
}

/// The UTF-16 length of each line of `text`, without its line break.
std::vector<int64_t> lineLengths(const std::string &text) {
  std::vector<int64_t> out;
  for (auto [start, end] : shadowLines(text)) {
    int64_t units = 0;
    for (size_t i = start; i < end;) {
      const size_t length = utf8Length(static_cast<unsigned char>(text[i]));
      units += length == 4 ? 2 : 1;
      i += length;
    }
    out.push_back(units);
  }
  return out;
}

bool insideText(const std::vector<int64_t> &lines, const json &p) {
  const int64_t line = p["line"], character = p["character"];
  return line >= 0 && line < static_cast<int64_t>(lines.size()) && character >= 0 &&
         character <= lines[static_cast<size_t>(line)];
}

const char *const kPieces[] = {"hidden ",
                               "input ",
                               "output ",
                               "const ",
                               "share ",
                               "from ",
                               " all",
                               " convolve",
                               " max pool",
                               " where (s, d) => s == d",
                               "{",
                               "}",
                               "[",
                               "]",
                               ";",
                               "=",
                               ",",
                               "\n",
                               "\r\n",
                               "\r",
                               " ",
                               "X",
                               "H1",
                               "Conv",
                               "5",
                               "0",
                               "-3",
                               "2.5",
                               "KernelShape = [3, 3];",
                               "InputShape",
                               "Stride",
                               "sigmoid",
                               "auto",
                               "// é",
                               "/*",
                               "*/",
                               "😀",
                               "ü",
                               "\t",
                               "true",
                               "MapCount = 4;",
                               "Padding = true;",
                               "#"};

class RandomEdits : public ::testing::TestWithParam<uint32_t> {};

TEST_P(RandomEdits, ServerStaysConsistent) {
  std::mt19937 rng(GetParam());
  auto pick = [&](int64_t n) { return std::uniform_int_distribution<int64_t>(0, n - 1)(rng); };
  Session s;
  s.initialize();
  const std::string uri = "file:///random.net";
  const std::vector<std::string> examples = testfiles::exampleNames();
  std::string shadow = testfiles::readFile(testfiles::sourcePath(
      "examples/" + examples[static_cast<size_t>(pick(static_cast<int64_t>(examples.size())))]));
  int64_t version = 1, accepted = 1; // the last version sent; the last one the server applied
  s.open(uri, shadow, 1);
  const char *const methods[] = {"textDocument/hover",          "textDocument/definition",
                                 "textDocument/references",     "textDocument/completion",
                                 "textDocument/documentSymbol", "textDocument/formatting",
                                 "textDocument/inlayHint",      "textDocument/semanticTokens/full",
                                 "textDocument/codeAction",     "textDocument/prepareRename",
                                 "textDocument/rename"};
  const int edits = 3000;
  int results = 0, nonEmpty = 0, publishes = 0; // evidence that the session did real work
  for (int step = 0; step < edits; ++step) {
    // ---- an edit ----
    std::vector<int64_t> lines = lineLengths(shadow);
    const int64_t lineCount = static_cast<int64_t>(lines.size());
    auto randomPosition = [&] {
      int64_t line = pick(lineCount + 2); // sometimes past the end
      int64_t character =
          pick((line < lineCount ? lines[static_cast<size_t>(line)] : 0) + 3); // sometimes past the line
      return std::make_pair(line, character);
    };
    json change;
    bool applied = true;
    const int64_t kind = pick(20);
    if (kind == 0) { // replace everything
      std::string text;
      for (int64_t i = pick(30); i > 0; --i)
        text += kPieces[pick(std::size(kPieces))];
      change = {{"text", text}};
      shadow = text;
    } else {
      auto a = randomPosition(), b = randomPosition();
      if (kind != 1 && (a.first > b.first || (a.first == b.first && a.second > b.second)))
        std::swap(a, b); // kind 1 keeps reversed ranges: refused by the server
      if (pick(3) == 0)
        b = a; // a pure insertion
      std::string text;
      for (int64_t i = pick(3); i > 0; --i)
        text += kPieces[pick(std::size(kPieces))];
      change = {{"range", {{"start", position(a.first, a.second)}, {"end", position(b.first, b.second)}}},
                {"text", text}};
      const size_t begin = shadowOffset(shadow, a.first, a.second),
                   end = shadowOffset(shadow, b.first, b.second);
      if (begin <= end)
        shadow.replace(begin, end - begin, text);
      else
        applied = false; // a reversed range: refused, the server keeps its version
    }
    ++version;
    if (applied)
      accepted = version;
    s.notify("textDocument/didChange", {{"textDocument", {{"uri", uri}, {"version", version}}},
                                        {"contentChanges", json::array({change})}});
    // ---- now and then: requests, idle, malformed input ----
    if (pick(3) == 0) {
      lines = lineLengths(shadow);
      auto [line, character] = std::make_pair(pick(static_cast<int64_t>(lines.size()) + 1), int64_t{0});
      character =
          pick((line < static_cast<int64_t>(lines.size()) ? lines[static_cast<size_t>(line)] : 0) + 2);
      const std::string method = methods[pick(std::size(methods))];
      json params = at(uri, line, character);
      params["newName"] = pick(2) ? "Renamed" : "hidden";
      params["range"] = {{"start", position(0, 0)}, {"end", position(line, character)}};
      params["context"] = {{"diagnostics", json::array()}};
      const json r = s.request(method, params);
      ASSERT_TRUE(r.contains("result") || r.contains("error")) << method << " " << r.dump();
      if (r.contains("error")) {
        const int code = r["error"]["code"];
        EXPECT_TRUE(code == kRequestFailed || code == kInvalidParams) << method << " " << r.dump();
        if (code == kInvalidParams)
          ADD_FAILURE() << method << " rejected well-formed params: " << r.dump();
        continue;
      }
      ++results;
      if (!r["result"].is_null() && !(r["result"].is_array() && r["result"].empty()))
        ++nonEmpty;
      // Every range the server reports lies inside the shadow text.
      std::vector<const json *> stack{&r["result"]};
      while (!stack.empty()) {
        const json *j = stack.back();
        stack.pop_back();
        if (j->is_object() && j->contains("start") && j->contains("end") && (*j)["start"].is_object()) {
          EXPECT_TRUE(insideText(lines, (*j)["start"]) && insideText(lines, (*j)["end"]))
              << method << " range " << j->dump() << " outside the text at step " << step;
        }
        if (j->is_object() || j->is_array())
          for (const json &child : *j)
            stack.push_back(&child);
      }
      if (method == "textDocument/semanticTokens/full") {
        const json &data = r["result"]["data"];
        ASSERT_EQ(data.size() % 5, 0u);
        int64_t line0 = 0, start = 0;
        for (size_t i = 0; i < data.size(); i += 5) {
          line0 += data[i].get<int64_t>();
          start =
              data[i].get<int64_t>() == 0 ? start + data[i + 1].get<int64_t>() : data[i + 1].get<int64_t>();
          ASSERT_LT(line0, static_cast<int64_t>(lines.size()));
          EXPECT_LE(start + data[i + 2].get<int64_t>(), lines[static_cast<size_t>(line0)])
              << "token past its line";
        }
      }
    }
    if (pick(10) == 0) {
      lines = lineLengths(shadow);
      const size_t before = s.sent().size();
      s.server().idle();
      for (const json &p : s.published(before)) {
        ++publishes;
        EXPECT_EQ(p["version"], accepted);
        for (const json &d : p["diagnostics"])
          EXPECT_TRUE(insideText(lines, d["range"]["start"]) && insideText(lines, d["range"]["end"]))
              << d.dump() << " at step " << step;
      }
    }
    if (pick(50) == 0) {
      const size_t before = s.sent().size();
      s.server().handleText(pick(2) ? "{\"jsonrpc\":\"2.0\",\"id\":" : "[]");
      ASSERT_EQ(s.sent().size(), before + 1);
      EXPECT_TRUE(s.sent().back().contains("error"));
    }
  }
  EXPECT_GT(results, edits / 5);
  EXPECT_GT(nonEmpty, edits / 20);
  EXPECT_GT(publishes, edits / 20);
  // The server's text equals the shadow: the shadow text opened as a second
  // document gets the same symbols and semantic tokens as the edited one.
  s.open("file:///shadow.net", shadow);
  json mine = s.request("textDocument/documentSymbol", {{"textDocument", {{"uri", uri}}}});
  json theirs = s.request("textDocument/documentSymbol", {{"textDocument", {{"uri", "file:///shadow.net"}}}});
  EXPECT_EQ(mine["result"], theirs["result"]);
  json a = s.request("textDocument/semanticTokens/full", {{"textDocument", {{"uri", uri}}}});
  json b = s.request("textDocument/semanticTokens/full", {{"textDocument", {{"uri", "file:///shadow.net"}}}});
  EXPECT_EQ(a["result"], b["result"]);
  EXPECT_TRUE(s.request("shutdown").contains("result"));
  s.notify("exit");
  EXPECT_EQ(s.server().exitCode(), 0);
}

INSTANTIATE_TEST_SUITE_P(Seeds, RandomEdits, ::testing::Values(1u, 2u, 3u, 4u));

} // namespace
} // namespace netc::lsp::testing
