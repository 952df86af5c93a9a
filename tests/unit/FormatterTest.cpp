// FormatterTest.cpp -- `netc fmt` (formatProgram): for every example and for
// hand-written inputs with messy layout, the output parses without errors,
// formatting is idempotent, the IR dump after all passes is unchanged, and
// every comment survives; a few inputs (messy layout with const blocks,
// grouped layers, where lambdas, share and Weights/Biases blocks; trailing
// and block comments; CRLF line ends) are pinned to their exact canonical
// output.
#include "TestSupport.h"

#include "frontend/Formatter.h"
#include "ir/IrPrinter.h"

#include <algorithm>
#include <filesystem>

namespace netc::unittest {
namespace {

/// Formats `text` (which must parse cleanly) as file `name`.
std::string format(const std::string &text, const std::string &name = "t.net") {
  auto c = compileSource(SourceFile(name, text), CompileOptions{}, Stage::Parse);
  EXPECT_FALSE(c->diags.hasErrors()) << "input does not parse:\n" << describeDiagnostics(*c);
  return formatProgram(c->parse.program, c->file);
}

/// The IR dump and diagnostic codes after all passes.
std::string irOf(const std::string &text, const std::string &name) {
  auto c = compileSource(SourceFile(name, text), CompileOptions{}, Stage::Passes);
  std::string codes;
  for (const std::string &code : codesOf(*c))
    codes += code + " ";
  return ir::printNetwork(c->network) + "\ndiagnostics: " + codes;
}

/// Every comment of `text`, without trailing blanks and line ends.
std::vector<std::string> commentsOf(const std::string &text) {
  auto c = compileSource(SourceFile("t.net", text), CompileOptions{}, Stage::Parse);
  std::vector<std::string> out;
  for (const ast::Comment &comment : c->parse.program.comments) {
    std::string s(c->file.slice(comment.range));
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ' || s.back() == '\t'))
      s.pop_back();
    out.push_back(s);
  }
  return out;
}

/// The properties every formatting must have.
void expectSoundFormatting(const std::string &text, const std::string &name = "t.net") {
  const std::string once = format(text, name);
  // The output parses without errors.
  auto reparsed = compileSource(SourceFile(name, once), CompileOptions{}, Stage::Parse);
  EXPECT_FALSE(reparsed->diags.hasErrors()) << "formatted text does not parse:\n"
                                            << describeDiagnostics(*reparsed) << once;
  // Idempotent.
  EXPECT_EQ(format(once, name), once);
  // Same meaning.
  EXPECT_EQ(irOf(once, name), irOf(text, name)) << once;
  // Every comment kept, in order.
  std::vector<std::string> before = commentsOf(text), after = commentsOf(once);
  EXPECT_EQ(after, before) << once;
  for (const std::string &comment : before)
    EXPECT_NE(once.find(comment), std::string::npos) << "lost comment: " << comment << "\n" << once;
  // Canonical layout: no trailing blanks, no tabs, ends with one newline.
  if (!once.empty()) {
    EXPECT_EQ(once.back(), '\n');
    EXPECT_EQ(once.find(" \n"), std::string::npos) << once;
    EXPECT_EQ(once.find('\t'), std::string::npos) << once;
    EXPECT_EQ(once.find("\n\n\n"), std::string::npos) << once;
  }
}

// ---- the examples corpus ------------------------------------------------------------

class FormatExample : public ::testing::TestWithParam<std::string> {};

TEST_P(FormatExample, IsSoundAndKeepsEveryComment) {
  std::string text = readFile(sourcePath("examples/" + GetParam()));
  ASSERT_FALSE(text.empty());
  expectSoundFormatting(text, GetParam());
}

TEST_P(FormatExample, KeepsTheNetworkFigures) {
  std::string text = readFile(sourcePath("examples/" + GetParam()));
  CompileOptions options;
  options.inputSize = GetParam() == "hello-world.net" ? std::optional<int64_t>(100) : std::nullopt;
  auto original = compileSource(SourceFile(GetParam(), text), options, Stage::Passes);
  auto formatted = compileSource(SourceFile(GetParam(), format(text, GetParam())), options, Stage::Passes);
  EXPECT_CLEAN(formatted);
  EXPECT_EQ(ir::printNetwork(formatted->network), ir::printNetwork(original->network));
}

INSTANTIATE_TEST_SUITE_P(Corpus, FormatExample, ::testing::ValuesIn(exampleNames()), exampleTestName);

// ---- exact canonical output ---------------------------------------------------------------

TEST(Formatter, MessyLayoutBecomesCanonical) {
  const std::string messy =
      "// header comment\n"
      "const   X=28 ;   const {T=true;F=false;}  // trailing after const block\n"
      "\n"
      "\n"
      "/* block\n"
      "   comment */\n"
      "input   Pic [ X,X ] ;input Meta[3];\n"
      "hidden C1 [5,12,12] rlinear from Pic convolve {InputShape=[X,X];KernelShape=[5,5];\n"
      "   Stride=[2,2]; // stride comment\n"
      "   Sharing=[T,T];MapCount=5;};\n"
      "hidden {  A [10] from C1 all; B [10] from Meta where (s,d)=>s[0]<=d[0]&&!(d[0]==1) ; }\n"
      "hidden W [2] { Biases = [0.1, -0.2]; from A all { Weights = [1,2,3,4,5,6,7,8,9,10,"
      "11,12,13,14,15,16,17,18,19,20]; } }\n"
      "output Out [2] softmax {from W all;from B all;} ;\n"
      "share { 1=>A , 1=>B }   /* trailing block */\n"
      "// final comment\n";
  const std::string canonical =
      "// header comment\n"
      "const X = 28;\n"
      "const {\n"
      "  T = true;\n"
      "  F = false;\n"
      "} // trailing after const block\n"
      "\n"
      "/* block\n"
      "   comment */\n"
      "input Pic [X, X];\n"
      "input Meta [3];\n"
      "hidden C1 [5, 12, 12] rlinear from Pic convolve {\n"
      "  InputShape = [X, X];\n"
      "  KernelShape = [5, 5];\n"
      "  Stride = [2, 2]; // stride comment\n"
      "  Sharing = [T, T];\n"
      "  MapCount = 5;\n"
      "}\n"
      "hidden {\n"
      "  A [10] from C1 all;\n"
      "  B [10] from Meta where (s, d) => s[0] <= d[0] && !(d[0] == 1);\n"
      "}\n"
      "hidden W [2] {\n"
      "  Biases = [0.1, -0.2];\n"
      "  from A all {\n"
      "    Weights = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20];\n"
      "  }\n"
      "}\n"
      "output Out [2] softmax {\n"
      "  from W all;\n"
      "  from B all;\n"
      "}\n"
      "share { 1 => A, 1 => B } /* trailing block */\n"
      "// final comment\n";
  EXPECT_EQ(format(messy), canonical);
  expectSoundFormatting(messy);
  auto c = compileText(messy);
  EXPECT_CLEAN(c);
}

TEST(Formatter, ExpressionsKeepTheirSpellingAndParentheses) {
  const std::string messy =
      "const{K=(5);Alpha=1e-3;Beta=0.750;N=-2^2+(-2)^2*3-  -1;Ok=!false||1<2&&2>=2;}\n"
      "input   Pixels[10,20];\n"
      "hidden  ByCol[5,20]   from Pixels   where(s,d)=>abs(s[1]-d[1])<=1&&max(s[0],0)>=min(d[0],9);\n"
      "hidden P [5, 10] from ByCol max    pool{InputShape=[5,20];KernelShape=[1,K-3];Stride=[1,2];}\n"
      "hidden R [5,10] from P response   norm {InputShape=[5,10];KernelShape=[1,3];Padding=true;"
      "Alpha=Alpha;Beta=Beta;}\n"
      "output O [2] from R all;\n";
  const std::string canonical = "const {\n"
                                "  K = (5);\n"
                                "  Alpha = 1e-3;\n"
                                "  Beta = 0.750;\n"
                                "  N = -2^2 + (-2)^2 * 3 - -1;\n"
                                "  Ok = !false || 1 < 2 && 2 >= 2;\n"
                                "}\n"
                                "input Pixels [10, 20];\n"
                                "hidden ByCol [5, 20] from Pixels where (s, d) => abs(s[1] - d[1]) <= 1 && "
                                "max(s[0], 0) >= min(d[0], 9);\n"
                                "hidden P [5, 10] from ByCol max pool {\n"
                                "  InputShape = [5, 20];\n"
                                "  KernelShape = [1, K - 3];\n"
                                "  Stride = [1, 2];\n"
                                "}\n"
                                "hidden R [5, 10] from P response norm {\n"
                                "  InputShape = [5, 10];\n"
                                "  KernelShape = [1, 3];\n"
                                "  Padding = true;\n"
                                "  Alpha = Alpha;\n"
                                "  Beta = Beta;\n"
                                "}\n"
                                "output O [2] from R all;\n";
  EXPECT_EQ(format(messy), canonical);
  expectSoundFormatting(messy);
  auto c = compileText(messy);
  EXPECT_CLEAN(c);
}

TEST(Formatter, TrailingAndBlockCommentsStayInPlace) {
  const std::string messy = "input X [4];   // features\n"
                            "/* a block comment\n"
                            "   over two lines */\n"
                            "hidden H [3] { // open\n"
                            "  from X all; /* after bundle */\n"
                            "  // before close\n"
                            "}\n"
                            "\n"
                            "\n"
                            "\n"
                            "// about the output\n"
                            "output O [2] from H all; // the end";
  const std::string canonical = "input X [4]; // features\n"
                                "/* a block comment\n"
                                "   over two lines */\n"
                                "hidden H [3] { // open\n"
                                "  from X all; /* after bundle */\n"
                                "  // before close\n"
                                "}\n"
                                "\n"
                                "// about the output\n"
                                "output O [2] from H all; // the end\n";
  EXPECT_EQ(format(messy), canonical);
  expectSoundFormatting(messy);
}

TEST(Formatter, CrLfLineEndsBecomeLf) {
  const std::string text = "input X [4];\r\n// a comment\r\noutput O [2] from X all; // trailing\r\n";
  EXPECT_EQ(format(text), "input X [4];\n// a comment\noutput O [2] from X all; // trailing\n");
  expectSoundFormatting(text);
}

TEST(Formatter, TrailingCommentOfAJoinedStatementStaysTrailing) {
  // The statement spans two lines in the source and one in the output; its
  // trailing comment should stay on its line, not move before the next statement.
  const std::string text = "const W = [1, 2,\n  3, 4]; // weights\ninput X [4];\noutput O [2] from X all;\n";
  EXPECT_EQ(format(text), "const W = [1, 2, 3, 4]; // weights\ninput X [4];\noutput O [2] from X all;\n");
  expectSoundFormatting(text);
}

TEST(Formatter, CommentOnlyAndEmptyPrograms) {
  EXPECT_EQ(format(""), "");
  EXPECT_EQ(format("// only a comment"), "// only a comment\n");
  EXPECT_EQ(format("\n\n/* one */\n\n\n// two\n"), "/* one */\n\n// two\n");
}

// ---- round-trip properties on hand-written inputs -----------------------------------------------

TEST(Formatter, StraySemicolonsAndBundleBlockSemicolonsAreDropped) {
  const std::string text =
      ";\ninput X [4, 4];;\nhidden H [4] from X convolve { InputShape = [4, 4]; KernelShape = [2, 2]; "
      "Stride = [2, 2]; };\n;output O [2] from H all;\n";
  std::string once = format(text);
  EXPECT_EQ(once.find(";;"), std::string::npos) << once;
  EXPECT_EQ(once.find("};"), std::string::npos) << once;
  expectSoundFormatting(text);
}

TEST(Formatter, CommentsInsideExpressionsAndLists) {
  expectSoundFormatting("input X [4 /* four */, 2]; // a\n"
                        "hidden H [3] // c1\n"
                        "  from X all;\n"
                        "output O [2] {from H all;} share { H, // tie\n"
                        " O }\n");
  expectSoundFormatting("const { A = 1 + // one\n  2; /* between */ B = [A, // first\n A]; }\n"
                        "input X [A];\noutput O [B[0]] from X where (s, d) => // lambda\n  s[0] >= d[0];\n");
}

TEST(Formatter, GroupedLayersAndShareForms) {
  expectSoundFormatting("const { InputSize = 37; HiddenSize = 50; }\n"
                        "input { Data1 [InputSize]; // first\n Data2 [InputSize]; }\n"
                        "hidden { H1 [HiddenSize] from Data1 all;\n\n H2 [HiddenSize] from Data2 all; }\n"
                        "output Result [2] { from H1 all; from H2 all; }\n"
                        "share { Data1 => H1, Data2 => H2 }\nshare { 1 => H1, 1 => H2 }\n");
}

TEST(Formatter, WeightsOnWhereAndConvolveBundles) {
  expectSoundFormatting(
      "const B = [0.5, 0.25];\n"
      "input X [4];\ninput Y [2, 2];\n"
      "hidden H [2] { Biases = B; from X where (s, d) => s[0] / 2 == d[0] { Weights = [1, 2, 3, 4]; } }\n"
      "hidden C [1] from Y convolve { InputShape = [2, 2]; KernelShape = [2, 2]; Weights = [0, 1, 2, 3, 4]; "
      "}\n"
      "output O [2] { from H all; from C all; }\n");
}

} // namespace
} // namespace netc::unittest
