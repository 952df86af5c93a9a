// NumberTupleFoldTest.cpp -- long tuples of plain numbers reach the parser
// as one NUMBER_LIST token (frontend/Lexer.h, foldNumberTuples) so that a
// tuple of millions of weights builds no parse tree. Folding must change
// nothing a user sees: on every example and golden input, and on hand-made
// cases (negative numbers, reals, out-of-range literals, shapes, comments,
// syntax errors around a tuple), parsing with every tuple folded gives the
// same AST and the same diagnostics as parsing with none folded. With a
// syntax error, ANTLR's recovery may skip a folded tuple as one token where
// it would have skipped its pieces: there the syntax errors must agree.
#include "TestSupport.h"
#include "frontend/AstDump.h"
#include "frontend/Lexer.h"
#include "frontend/Parser.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <limits>

namespace {

constexpr size_t kFoldEvery = 1;
constexpr size_t kFoldNone = std::numeric_limits<size_t>::max();

/// The AST dump and every diagnostic (code, range, message) of parsing
/// `text`; with syntax errors, those alone.
std::string parsed(const std::string &text, size_t foldFrom) {
  netc::SourceFile file("t.net", text);
  netc::DiagnosticEngine diags;
  netc::ParseResult result = netc::parseProgram(file, diags, foldFrom);
  std::string out = diags.hasErrors() ? std::string("syntax errors:\n") : netc::dumpAst(result.program, file);
  for (const netc::Diagnostic &d : diags.sorted())
    out += std::string(d.code()) + " [" + std::to_string(d.range.begin) + ", " + std::to_string(d.range.end) +
           ") " + d.message + "\n";
  return out;
}

void expectFoldingChangesNothing(const std::string &text, const std::string &label) {
  EXPECT_EQ(parsed(text, kFoldEvery), parsed(text, kFoldNone)) << label;
}

/// The token types after folding `text` from `minItems` items, by name.
std::string foldedTypes(std::string_view text, size_t minItems) {
  std::vector<netc::LexedToken> tokens = netc::lexSource(text);
  netc::foldNumberTuples(tokens, minItems);
  std::string out;
  for (const netc::LexedToken &t : tokens)
    out += std::string(netc::tokenTypeName(t.type)) + " ";
  return out;
}

TEST(NumberTupleFold, FoldsOnlyClosedTuplesOfPlainNumbers) {
  EXPECT_EQ(foldedTypes("[1, -2.5, 3e2]", 3), "NUMBER_LIST ");
  EXPECT_EQ(foldedTypes("[1, -2.5, 3e2]", 4), "LBRACK INT COMMA MINUS REAL COMMA REAL RBRACK ");
  EXPECT_EQ(foldedTypes("x = [[1, 2], [3, 4]]", 2),
            "IDENT ASSIGN LBRACK NUMBER_LIST COMMA NUMBER_LIST RBRACK ");
  // Not folded: an operator, a name, a comment, a missing ']' or a doubled minus.
  EXPECT_EQ(foldedTypes("[1, 2 - 3]", 1), "LBRACK INT COMMA INT MINUS INT RBRACK ");
  EXPECT_EQ(foldedTypes("[1, N]", 1), "LBRACK INT COMMA IDENT RBRACK ");
  EXPECT_EQ(foldedTypes("T[1]", 1), "IDENT LBRACK INT RBRACK "); // an index
  EXPECT_EQ(foldedTypes("T /* c */ [1]", 1), "IDENT BLOCK_COMMENT LBRACK INT RBRACK ");
  EXPECT_EQ(foldedTypes("input I [1, 2]", 1), "INPUT IDENT LBRACK INT COMMA INT RBRACK "); // a shape
  EXPECT_EQ(foldedTypes("[1, /* c */ 2]", 1), "LBRACK INT COMMA BLOCK_COMMENT INT RBRACK ");
  EXPECT_EQ(foldedTypes("[1, 2", 1), "LBRACK INT COMMA INT ");
  EXPECT_EQ(foldedTypes("[--1]", 1), "LBRACK MINUS MINUS INT RBRACK ");
  EXPECT_EQ(foldedTypes("[]", 0), "LBRACK RBRACK ");
}

TEST(NumberTupleFold, ChangesNothingOnHandMadeCases) {
  const char *cases[] = {
      "const W = [1, -2, 3.5, -4e-3, 0];\ninput I [2];\noutput O [1] from I all;\n",
      "const T = [1, 99999999999999999999, 1e999];\n", // NS0106 inside a tuple
      "input I [28, 28];\nhidden H [5, 13, 13] from I all;\noutput O [10] from H all;\n", // shapes
      "input I [1, 2 - 1];\n",         // a shape that is not folded
      "const T = [1, 2, 3] [4, 5];\n", // a syntax error after a tuple
      "const T = 7 [1, 2, 3];\n",      // a syntax error at a tuple
      "hidden H [3] from I convolve { KernelShape = [1, 2]; Stride = [1, 1] MapCount = 2; }\n",
      "const { A = [1, 2]; B = A[1]; }\ninput I [2];\noutput O [1] from I where (s, d) => s[0] == [1, "
      "2][0];\n",
      "input I [2];\noutput O [1] from I all;\nconst X = [[1, 2], [3]];\n", // nested tuples: NS error
  };
  for (const char *text : cases)
    expectFoldingChangesNothing(text, text);
}

TEST(NumberTupleFold, ChangesNothingOnEveryExampleAndGoldenInput) {
  size_t files = 0;
  for (const char *folder : {"examples", "tests/golden"})
    for (const auto &entry :
         std::filesystem::recursive_directory_iterator(netc::unittest::sourcePath(folder))) {
      if (entry.path().extension() != ".net")
        continue;
      expectFoldingChangesNothing(netc::unittest::readFile(entry.path().string()), entry.path().string());
      ++files;
    }
  EXPECT_GT(files, 70u);
}

TEST(NumberTupleFold, AMillionWeightsParseToOneTuple) {
  std::string text = "const W = [";
  for (int i = 0; i < 1000000; ++i)
    text += i % 3 == 0 ? "-1, " : i % 3 == 1 ? "0.5, " : "2, ";
  text += "7];\n";
  netc::SourceFile file("t.net", text);
  netc::DiagnosticEngine diags;
  netc::ParseResult result = netc::parseProgram(file, diags);
  EXPECT_FALSE(diags.hasErrors());
  ASSERT_EQ(result.program.statements.size(), 1u);
  const auto &decl = std::get<netc::ast::ConstDecl>(result.program.statements[0]);
  ASSERT_EQ(decl.items.size(), 1u);
  const netc::ast::Expr &tuple = *decl.items[0].value;
  EXPECT_EQ(tuple.kind, netc::ast::ExprKind::Tuple);
  ASSERT_EQ(tuple.operands.size(), 1000001u);
  EXPECT_EQ(tuple.operands[0]->kind, netc::ast::ExprKind::Unary);
  EXPECT_EQ(tuple.operands[1]->kind, netc::ast::ExprKind::Real);
  EXPECT_EQ(tuple.operands[1000000]->intValue, 7);
  EXPECT_EQ(file.slice(tuple.operands[1]->range), "0.5");
}

} // namespace
