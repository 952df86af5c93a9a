// LexerTest.cpp -- the hand-written lexer (frontend/Lexer.cpp, the fast path)
// against the ANTLR-generated lexer of grammar/NetSharp.g4 (the reference):
// identical token types and byte ranges on every example, every golden test
// input, hand-picked edge cases, and thousands of seeded random inputs.
#include "frontend/Lexer.h"
#include "TestSupport.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <random>

namespace {

using netc::LexedToken;

std::string describe(const std::vector<LexedToken> &tokens, std::string_view text) {
  std::string out;
  for (const LexedToken &t : tokens)
    out += std::string(netc::tokenTypeName(t.type)) + "(" +
           std::string(text.substr(t.begin, t.end - t.begin)) + ")" + (t.hidden ? "h " : " ");
  return out;
}

/// Replaces bytes that are not valid UTF-8 by 0x1A, one for one, as the
/// reference lexer requires; the fast lexer treats each such byte as a stray
/// character, exactly as the reference treats 0x1A.
std::string validUtf8(std::string text) {
  for (size_t i = 0; i < text.size();) {
    auto c = static_cast<unsigned char>(text[i]);
    size_t length = c < 0x80                 ? 1
                    : c >= 0xC2 && c <= 0xDF ? 2
                    : c >= 0xE0 && c <= 0xEF ? 3
                    : c >= 0xF0 && c <= 0xF4 ? 4
                                             : 0;
    bool ok = length > 0 && i + length <= text.size();
    for (size_t k = 1; ok && k < length; ++k)
      ok = (static_cast<unsigned char>(text[i + k]) & 0xC0) == 0x80;
    if (ok && length >= 3) {
      auto c1 = static_cast<unsigned char>(text[i + 1]);
      ok = !((c == 0xE0 && c1 < 0xA0) || (c == 0xED && c1 >= 0xA0) || (c == 0xF0 && c1 < 0x90) ||
             (c == 0xF4 && c1 >= 0x90));
    }
    if (!ok) {
      text[i] = '\x1a';
      ++i;
    } else {
      i += length;
    }
  }
  return text;
}

void expectSameTokens(const std::string &raw, const std::string &label) {
  std::string text = validUtf8(raw);
  std::vector<LexedToken> fast = netc::lexSource(text);
  std::vector<LexedToken> reference = netc::lexSourceWithAntlr(text);
  ASSERT_EQ(describe(fast, text), describe(reference, text)) << label;
  ASSERT_EQ(fast.size(), reference.size()) << label;
  for (size_t i = 0; i < fast.size(); ++i) {
    EXPECT_EQ(fast[i].type, reference[i].type) << label << " token " << i;
    EXPECT_EQ(fast[i].begin, reference[i].begin) << label << " token " << i;
    EXPECT_EQ(fast[i].end, reference[i].end) << label << " token " << i;
    EXPECT_EQ(fast[i].hidden, reference[i].hidden) << label << " token " << i;
  }
}

TEST(Lexer, MatchesTheReferenceOnEdgeCases) {
  const char *cases[] = {
      "1. 1.5 .5 1e3 1E+3 1e-3 1e 1e+ .e5 1.e5 1..2 . 0x1F 007 1_000",
      "a_b _c c9 Const constant const consts hidden hiddenX max maxpool max pool",
      "=> == != <= >= && || = < > ! + - * / % ^ ; , { } [ ] ( ) & | $ # @ ~ ? : \\ ` ' \"",
      "// line\r\n/* block */ /* multi\nline */ /**/ /*/ unterminated",
      "/* never closed",
      "x //",
      "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80 \xFF \xC3 \x80 \xED\xA0\x80 \xF4\x90\x80\x80",
      "\t\f\v\x01\x7f",
      "",
      "s[0]==d[0]&&!(s[1]<=2)||abs(-3)^2",
  };
  for (const char *c : cases)
    expectSameTokens(c, std::string("case: ") + c);
}

TEST(Lexer, MatchesTheReferenceOnEveryExampleAndGoldenInput) {
  size_t files = 0;
  for (const char *folder : {"examples", "tests/golden"}) {
    for (const auto &entry :
         std::filesystem::recursive_directory_iterator(netc::unittest::sourcePath(folder))) {
      if (entry.path().extension() != ".net")
        continue;
      expectSameTokens(netc::unittest::readFile(entry.path().string()), entry.path().string());
      ++files;
    }
  }
  EXPECT_GT(files, 70u);
}

TEST(Lexer, MatchesTheReferenceOnSeededRandomInputs) {
  std::mt19937_64 rng(20261121);
  const std::string alphabet = "abzAZ_09 \t\n\r./*+-=<>!&|^%;,{}[]()eE$\"\x1a\xc3\xa9\xff";
  const char *words[] = {"const ", "hidden ", "from ", "all", "1.5",      "1e-3",
                         "//",     "/*",      "*/",    "=>",  "max pool "};
  for (int round = 0; round < 3000; ++round) {
    std::string text;
    size_t length = rng() % 60;
    for (size_t i = 0; i < length; ++i) {
      if (rng() % 5 == 0)
        text += words[rng() % std::size(words)];
      else
        text += alphabet[rng() % alphabet.size()];
    }
    expectSameTokens(text, "random round " + std::to_string(round));
    if (HasFatalFailure())
      return;
  }
}

} // namespace
