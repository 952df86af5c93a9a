// ConstEvalTest.cpp -- constant evaluation per docs/language.md §4-§5: operator
// precedence and associativity (`^` right-associative and tighter than unary
// minus), integer division and modulo truncating toward zero, int/real
// promotion, exponent literals, abs/min/max, tuples and indexing, forward
// references, and every located error: const cycles (with a note per link),
// redefinitions, division by zero, 64-bit overflow, negative integer
// exponents, non-finite reals and type errors. Values are read both from a
// ConstEvaluator driven directly and from layer shapes after Sema; errors are
// checked by code, by the exact source text of their range and by line/column.
#include "TestSupport.h"

#include "frontend/ConstEvaluator.h"
#include "frontend/Parser.h"

#include <cmath>
#include <cstdint>
#include <limits>

namespace netc::unittest {
namespace {

/// A tiny valid network to append to const declarations.
constexpr const char *kNet = "input I [1];\noutput O [1] from I all;\n";

/// Parses `text` and declares its consts in a ConstEvaluator, so values can
/// be read back directly. The program outlives the evaluator's pointers.
class ConstScope {
public:
  explicit ConstScope(std::string text) : file_("t.net", std::move(text)), eval_(diags_) {
    parse_ = parseProgram(file_, diags_);
    for (const ast::Statement &statement : parse_.program.statements)
      if (auto *c = std::get_if<ast::ConstDecl>(&statement))
        for (const ast::ConstItem &item : c->items)
          eval_.declare(item);
  }
  ConstScope(const ConstScope &) = delete;
  ConstScope &operator=(const ConstScope &) = delete;

  Value value(std::string_view name) { return eval_.valueOf(name, eval_.declaration(name)); }
  const DiagnosticEngine &diags() const { return diags_; }
  std::vector<std::string> codes() const {
    std::vector<std::string> out;
    for (const Diagnostic &d : diags_.diagnostics())
      out.emplace_back(d.code());
    return out;
  }

private:
  SourceFile file_;
  DiagnosticEngine diags_;
  ParseResult parse_;
  ConstEvaluator eval_;
};

/// Evaluates one expression as `const X = <expr>;` and expects no diagnostic.
Value evalExpr(const std::string &expr) {
  ConstScope scope("const X = " + expr + ";");
  Value v = scope.value("X");
  EXPECT_TRUE(scope.diags().diagnostics().empty()) << "diagnostics for: " << expr;
  return v;
}

int64_t intOf(const std::string &expr) {
  Value v = evalExpr(expr);
  EXPECT_EQ(v.type, ValueType::Int) << expr << " gave " << v.toString();
  return v.i;
}

double realOf(const std::string &expr) {
  Value v = evalExpr(expr);
  EXPECT_EQ(v.type, ValueType::Real) << expr << " gave " << v.toString();
  return v.r;
}

bool boolOf(const std::string &expr) {
  Value v = evalExpr(expr);
  EXPECT_EQ(v.type, ValueType::Bool) << expr << " gave " << v.toString();
  return v.i != 0;
}

/// Compiles `consts` followed by the tiny network through Sema.
std::unique_ptr<Compilation> semaOf(const std::string &consts) {
  return compileText(consts + "\n" + kNet, Stage::Sema);
}

// ---- precedence and associativity --------------------------------------------

TEST(ConstEval, MultiplicationBindsTighterThanAddition) {
  EXPECT_EQ(intOf("1 + 2 * 3"), 7);
  EXPECT_EQ(intOf("(1 + 2) * 3"), 9);
  EXPECT_EQ(intOf("2 * 3 + 4 * 5"), 26);
  EXPECT_EQ(intOf("7 - 2 * 3"), 1);
}

TEST(ConstEval, SameLevelOperatorsAreLeftAssociative) {
  EXPECT_EQ(intOf("10 - 4 - 3"), 3);
  EXPECT_EQ(intOf("100 / 10 / 5"), 2);
  EXPECT_EQ(intOf("7 % 4 * 2"), 6);
  EXPECT_EQ(intOf("12 / 4 * 3"), 9);
  EXPECT_EQ(intOf("2 * 7 % 4"), 2);
}

TEST(ConstEval, PowerIsRightAssociativeAndTighterThanMultiplication) {
  EXPECT_EQ(intOf("2^3^2"), 512);
  EXPECT_EQ(intOf("(2^3)^2"), 64);
  EXPECT_EQ(intOf("2 * 3^2"), 18);
  EXPECT_EQ(intOf("5 * 13^2"), 845);
  EXPECT_EQ(intOf("2^10"), 1024);
  EXPECT_EQ(intOf("7^0"), 1);
  EXPECT_EQ(intOf("0^0"), 1);
}

TEST(ConstEval, PowerBindsTighterThanUnaryMinus) {
  EXPECT_EQ(intOf("-2^2"), -4);
  EXPECT_EQ(intOf("(-2)^2"), 4);
  EXPECT_EQ(intOf("-2^3"), -8);
  EXPECT_EQ(intOf("(-2)^3"), -8);
  EXPECT_EQ(intOf("- -3"), 3);
}

TEST(ConstEval, UnaryMinusBindsTighterThanMultiplication) {
  EXPECT_EQ(intOf("-3 * -2"), 6);
  EXPECT_EQ(intOf("-7 / 2"), -3);
  EXPECT_EQ(intOf("2 - -3"), 5);
}

TEST(ConstEval, ComparisonEqualityAndLogicPrecedence) {
  EXPECT_TRUE(boolOf("1 + 2 < 4"));      // (1 + 2) < 4
  EXPECT_TRUE(boolOf("1 < 2 == 3 < 4")); // (1 < 2) == (3 < 4)
  EXPECT_TRUE(boolOf("true == 1 < 2"));  // true == (1 < 2)
  EXPECT_TRUE(boolOf("2 + 3 == 5 && 1 < 2"));
  EXPECT_TRUE(boolOf("true || false && false")); // && binds tighter than ||
  EXPECT_TRUE(boolOf("false && true || true"));  // (false && true) || true
  EXPECT_FALSE(boolOf("false && (true || true)"));
  EXPECT_TRUE(boolOf("!false && true"));
  EXPECT_FALSE(boolOf("!(true || true)"));
  EXPECT_TRUE(boolOf("!true || true"));
  EXPECT_TRUE(boolOf("3 != 4"));
  EXPECT_TRUE(boolOf("3 >= 3 && 3 <= 3 && 4 > 3"));
  EXPECT_FALSE(boolOf("2.5 < 2"));
  EXPECT_TRUE(boolOf("2 == 2.0"));
}

// ---- arithmetic ------------------------------------------------------------------

TEST(ConstEval, IntegerDivisionAndModuloTruncateTowardZero) {
  EXPECT_EQ(intOf("7 / 2"), 3);
  EXPECT_EQ(intOf("-7 / 2"), -3);
  EXPECT_EQ(intOf("7 / -2"), -3);
  EXPECT_EQ(intOf("-7 / -2"), 3);
  EXPECT_EQ(intOf("7 % 2"), 1);
  EXPECT_EQ(intOf("-7 % 2"), -1);
  EXPECT_EQ(intOf("7 % -2"), 1);
  EXPECT_EQ(intOf("-7 % -2"), -1);
  EXPECT_EQ(intOf("(28 - 5) / 2 + 1"), 12);
}

TEST(ConstEval, IntCombinedWithRealGivesReal) {
  EXPECT_DOUBLE_EQ(realOf("1 + 0.5"), 1.5);
  EXPECT_DOUBLE_EQ(realOf("3 / 2.0"), 1.5);
  EXPECT_DOUBLE_EQ(realOf("2 * 1.5"), 3.0);
  EXPECT_DOUBLE_EQ(realOf("2.0 * 3"), 6.0); // a real even when the value is whole
  EXPECT_DOUBLE_EQ(realOf("2.0^3"), 8.0);
  EXPECT_DOUBLE_EQ(realOf("2^0.5"), std::sqrt(2.0));
  EXPECT_DOUBLE_EQ(realOf("2.0^-1"), 0.5);
  EXPECT_DOUBLE_EQ(realOf("-0.25"), -0.25);
  EXPECT_DOUBLE_EQ(realOf("7.5 / 2.5"), 3.0);
}

TEST(ConstEval, RealLiteralsWithExponents) {
  EXPECT_DOUBLE_EQ(realOf("1e-3"), 0.001);
  EXPECT_DOUBLE_EQ(realOf("2.5e2"), 250.0);
  EXPECT_DOUBLE_EQ(realOf("0.0188045055"), 0.0188045055);
  EXPECT_DOUBLE_EQ(realOf("1e-3 * 1000"), 1.0);
}

TEST(ConstEval, AbsMinMax) {
  EXPECT_EQ(intOf("abs(-3)"), 3);
  EXPECT_EQ(intOf("abs(3)"), 3);
  EXPECT_DOUBLE_EQ(realOf("abs(-2.5)"), 2.5);
  EXPECT_EQ(intOf("min(3, 2)"), 2);
  EXPECT_EQ(intOf("max(3, 2)"), 3);
  EXPECT_EQ(intOf("min(-1, -2)"), -2);
  EXPECT_EQ(intOf("max(2 * 3, 2^3)"), 8);
  EXPECT_DOUBLE_EQ(realOf("max(3, 2.5)"), 3.0); // int with real gives real
  EXPECT_DOUBLE_EQ(realOf("min(3, 2.5)"), 2.5);
  EXPECT_EQ(intOf("abs(2 - 7) + min(4, max(1, 9))"), 9);
}

TEST(ConstEval, BooleansAndTuples) {
  EXPECT_TRUE(boolOf("true"));
  EXPECT_FALSE(boolOf("false"));
  Value t = evalExpr("[1, 2 + 3, 2.5, true]");
  ASSERT_EQ(t.type, ValueType::Tuple);
  ASSERT_EQ(t.items.size(), 4u);
  EXPECT_EQ(t.items[0].type, ValueType::Int);
  EXPECT_EQ(t.items[0].i, 1);
  EXPECT_EQ(t.items[1].type, ValueType::Int);
  EXPECT_EQ(t.items[1].i, 5);
  EXPECT_EQ(t.items[2].type, ValueType::Real);
  EXPECT_DOUBLE_EQ(t.items[2].r, 2.5);
  EXPECT_EQ(t.items[3].type, ValueType::Bool);
  EXPECT_EQ(t.items[3].i, 1);
  EXPECT_EQ(t.toString(), "[1, 5, 2.5, true]");
}

TEST(ConstEval, TupleIndexing) {
  ConstScope scope(
      "const { T = [10, 20, 30]; A = T[0]; B = T[1 + 1]; C = T[0] + T[2] * 2; F = [false, true]; "
      "G = F[1]; }");
  EXPECT_EQ(scope.value("A").i, 10);
  EXPECT_EQ(scope.value("B").i, 30);
  EXPECT_EQ(scope.value("C").i, 70);
  Value g = scope.value("G");
  EXPECT_EQ(g.type, ValueType::Bool);
  EXPECT_EQ(g.i, 1);
  EXPECT_TRUE(scope.diags().diagnostics().empty());
}

// ---- forward references ---------------------------------------------------------

TEST(ConstEval, ConstUsedBeforeItsDefinition) {
  ConstScope scope("const A = B * 2;\nconst B = C + 1;\nconst C = 4;");
  Value a = scope.value("A");
  EXPECT_EQ(a.type, ValueType::Int);
  EXPECT_EQ(a.i, 10);
  EXPECT_EQ(scope.value("B").i, 5);
  EXPECT_TRUE(scope.diags().diagnostics().empty());
}

TEST(ConstEval, ForwardReferencesInShapes) {
  auto c = compileText("input X [N, M];\n"
                       "hidden H [Size] from X all;\n"
                       "output O [2] from H all;\n"
                       "const { N = M + 1; Size = N * M; }\n"
                       "const M = 3;\n",
                       Stage::Sema);
  EXPECT_CLEAN(c);
  ASSERT_EQ(c->network.layers.size(), 3u);
  EXPECT_EQ(c->network.layers[0].shape, (std::vector<int64_t>{4, 3}));
  EXPECT_EQ(c->network.layers[0].nodes, 12);
  EXPECT_EQ(c->network.layers[1].shape, (std::vector<int64_t>{12}));
}

TEST(ConstEval, ValuesInShapesAfterSema) {
  auto c = compileText("const { W = 28; K = 5; S = 2; }\n"
                       "input X [(W - K) / S + 1, 5 * 13^2, -2^2 + 8, 2^3^2 / 256, -7 / 2 + 5, -7 % 2 + 2, "
                       "abs(-3), min(4, 9), max(1, 2)];\n"
                       "output O [1] from X all;\n",
                       Stage::Sema);
  EXPECT_CLEAN(c);
  ASSERT_FALSE(c->network.layers.empty());
  EXPECT_EQ(c->network.layers[0].shape, (std::vector<int64_t>{12, 845, 4, 2, 2, 1, 3, 4, 2}));
}

// ---- cycles and redefinitions -------------------------------------------------------

TEST(ConstEval, CycleIsReportedOnceWithANotePerLink) {
  auto c = semaOf("const { A = B + 1; B = C * 2; C = A; }");
  EXPECT_CODES(c, "NS0202");
  const Diagnostic *d = findDiagnostic(*c, "NS0202");
  ASSERT_NE(d, nullptr);
  // Reported at the use that closes the cycle: `A` in `C = A`.
  EXPECT_EQ(d->message, "const 'A' depends on itself");
  EXPECT_EQ(position(*c, d->range), "1:35-1:36");
  EXPECT_EQ(textOf(*c, d->range), "A");
  ASSERT_EQ(d->notes.size(), 3u);
  EXPECT_EQ(d->notes[0].message, "'A' is defined here and uses 'B'");
  EXPECT_EQ(position(*c, d->notes[0].range), "1:9-1:10");
  EXPECT_EQ(d->notes[1].message, "'B' is defined here and uses 'C'");
  EXPECT_EQ(position(*c, d->notes[1].range), "1:20-1:21");
  EXPECT_EQ(d->notes[2].message, "'C' is defined here and uses 'A'");
  EXPECT_EQ(position(*c, d->notes[2].range), "1:31-1:32");
}

TEST(ConstEval, SelfReferenceIsACycle) {
  auto c = semaOf("const A = A + 1;");
  EXPECT_CODES(c, "NS0202");
  const Diagnostic *d = findDiagnostic(*c, "NS0202");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(position(*c, d->range), "1:11-1:12");
  ASSERT_EQ(d->notes.size(), 1u);
  EXPECT_EQ(d->notes[0].message, "'A' is defined here and uses 'A'");
  EXPECT_EQ(position(*c, d->notes[0].range), "1:7-1:8");
}

TEST(ConstEval, UsingACycleInAShapeReportsNothingMore) {
  auto c = compileText("const { A = B; B = A; }\ninput X [A];\noutput O [1] from X all;\n", Stage::Sema);
  EXPECT_CODES(c, "NS0202");
  EXPECT_FALSE(c->network.layers[0].valid);
}

TEST(ConstEval, ConstOutsideTheCycleThatUsesItIsNotReportedAgain) {
  auto c = semaOf("const { D = A * 2; A = B; B = A; }");
  EXPECT_CODES(c, "NS0202");
}

TEST(ConstEval, RedefinitionPointsAtBothDefinitions) {
  auto c = semaOf("const A = 1;\nconst { B = 2; A = 3; }");
  EXPECT_CODES(c, "NS0203");
  const Diagnostic *d = findDiagnostic(*c, "NS0203");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->message, "redefinition of const 'A'");
  EXPECT_EQ(position(*c, d->range), "2:16-2:17");
  ASSERT_EQ(d->notes.size(), 1u);
  EXPECT_EQ(d->notes[0].message, "previous definition is here");
  EXPECT_EQ(position(*c, d->notes[0].range), "1:7-1:8");
}

TEST(ConstEval, RedefinitionKeepsTheFirstValue) {
  ConstScope scope("const A = 1;\nconst A = 2;");
  EXPECT_EQ(scope.value("A").i, 1);
  EXPECT_EQ(scope.codes(), (std::vector<std::string>{"NS0203"}));
}

TEST(ConstEval, ConstNamedLikeALayer) {
  auto c = semaOf("const O = 3;");
  EXPECT_CODES(c, "NS0204");
  const Diagnostic *d = findDiagnostic(*c, "NS0204");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(position(*c, d->range), "1:7-1:8");
  ASSERT_EQ(d->notes.size(), 1u);
  EXPECT_EQ(position(*c, d->notes[0].range), "3:8-3:9"); // `O` in `output O [1] ...`
}

TEST(ConstEval, UndeclaredNameWithSuggestion) {
  auto c = semaOf("const { Width = 3; A = Widht + 1; }");
  EXPECT_CODES(c, "NS0201");
  const Diagnostic *d = findDiagnostic(*c, "NS0201");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(textOf(*c, d->range), "Widht");
  EXPECT_EQ(d->message, "use of undeclared name 'Widht'; did you mean 'Width'?");
  ASSERT_EQ(d->fixits.size(), 1u);
  EXPECT_EQ(d->fixits[0].replacement, "Width");
}

// ---- located errors ------------------------------------------------------------------

TEST(ConstEval, DivisionByZero) {
  auto c = semaOf("const A = 1 + 6 / (3 - 3);\nconst B = 5 % 0;\nconst C = 1.5 / 0;");
  EXPECT_CODES(c, "NS0205", "NS0205", "NS0205");
  const auto &all = c->diags.diagnostics();
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(textOf(*c, all[0].range), "6 / (3 - 3)");
  EXPECT_EQ(position(*c, all[0].range), "1:15-1:26");
  EXPECT_EQ(textOf(*c, all[1].range), "5 % 0");
  EXPECT_EQ(position(*c, all[1].range), "2:11-2:16");
  EXPECT_EQ(textOf(*c, all[2].range), "1.5 / 0");
  EXPECT_EQ(all[0].message, "division by zero");
}

TEST(ConstEval, ErrorsPropagateWithoutRepeating) {
  // B and C use the failed A; only A's division is reported.
  auto c = semaOf("const { A = 1 / 0; B = A + 1; C = [B, 2]; }");
  EXPECT_CODES(c, "NS0205");
}

TEST(ConstEval, IntegerOverflow) {
  auto c = semaOf("const A = 2^63;\n"
                  "const B = 9223372036854775807 + 1;\n"
                  "const C = 3037000500 * 3037000500;\n"
                  "const D = -9223372036854775807 - 2;\n"
                  "const E = abs(-9223372036854775807 - 1);\n"
                  "const F = -(-9223372036854775807 - 1);\n"
                  "const G = (-9223372036854775807 - 1) / -1;");
  EXPECT_CODES(c, "NS0206", "NS0206", "NS0206", "NS0206", "NS0206", "NS0206", "NS0206");
  const auto &all = c->diags.diagnostics();
  ASSERT_EQ(all.size(), 7u);
  EXPECT_EQ(textOf(*c, all[0].range), "2^63");
  EXPECT_EQ(position(*c, all[0].range), "1:11-1:15");
  EXPECT_EQ(all[0].message, "integer overflow: 2 ^ 63 does not fit in 64 bits");
  EXPECT_EQ(textOf(*c, all[1].range), "9223372036854775807 + 1");
  EXPECT_EQ(position(*c, all[1].range), "2:11-2:34");
  EXPECT_EQ(textOf(*c, all[2].range), "3037000500 * 3037000500");
  EXPECT_EQ(textOf(*c, all[3].range), "-9223372036854775807 - 2");
  EXPECT_EQ(textOf(*c, all[4].range), "abs(-9223372036854775807 - 1)");
  EXPECT_EQ(textOf(*c, all[5].range), "-(-9223372036854775807 - 1)");
  EXPECT_EQ(textOf(*c, all[6].range), "(-9223372036854775807 - 1) / -1");
}

TEST(ConstEval, LargestIntegersStillFit) {
  EXPECT_EQ(intOf("2^62"), int64_t{1} << 62);
  EXPECT_EQ(intOf("9223372036854775807"), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(intOf("-9223372036854775807 - 1"), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(intOf("(-2)^63"), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(intOf("3^39"), 4052555153018976267);
  EXPECT_EQ(intOf("(-9223372036854775807 - 1) % -1"), 0);
  EXPECT_EQ(intOf("(-1)^1000001"), -1);
}

TEST(ConstEval, NegativeIntegerExponent) {
  auto c = semaOf("const A = 2^(0 - 1);\nconst B = 10^(-3);");
  EXPECT_CODES(c, "NS0213", "NS0213");
  const auto &all = c->diags.diagnostics();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(textOf(*c, all[0].range), "2^(0 - 1)");
  EXPECT_EQ(position(*c, all[0].range), "1:11-1:20");
  EXPECT_EQ(all[0].message, "integer power with negative exponent -1; write a real base such as 2.0");
  EXPECT_EQ(textOf(*c, all[1].range), "10^(-3)");
}

TEST(ConstEval, RealNotFinite) {
  auto c = semaOf("const A = 1e308 * 10;\nconst B = 10.0^400;\nconst C = (-8.0)^0.5;");
  EXPECT_CODES(c, "NS0214", "NS0214", "NS0214");
  const auto &all = c->diags.diagnostics();
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(textOf(*c, all[0].range), "1e308 * 10");
  EXPECT_EQ(position(*c, all[0].range), "1:11-1:21");
  EXPECT_EQ(all[0].message, "real arithmetic produced an infinity");
  EXPECT_EQ(textOf(*c, all[1].range), "10.0^400");
  EXPECT_EQ(textOf(*c, all[2].range), "(-8.0)^0.5");
  EXPECT_EQ(all[2].message, "real arithmetic produced NaN");
}

TEST(ConstEval, InvalidOperands) {
  auto c = semaOf("const A = true + 1;\n"
                  "const B = -false;\n"
                  "const C = !3;\n"
                  "const D = 1 && true;\n"
                  "const E = [1, 2] * 2;\n"
                  "const F = 1 < true;\n"
                  "const G = true == 1;");
  EXPECT_CODES(c, "NS0208", "NS0208", "NS0208", "NS0208", "NS0208", "NS0208", "NS0208");
  const auto &all = c->diags.diagnostics();
  ASSERT_EQ(all.size(), 7u);
  EXPECT_EQ(textOf(*c, all[0].range), "true + 1");
  EXPECT_EQ(position(*c, all[0].range), "1:11-1:19");
  EXPECT_EQ(all[0].message, "operator '+' cannot be applied to a boolean and an integer");
  EXPECT_EQ(textOf(*c, all[1].range), "-false");
  EXPECT_EQ(textOf(*c, all[2].range), "!3");
  EXPECT_EQ(textOf(*c, all[3].range), "1 && true");
  EXPECT_EQ(textOf(*c, all[4].range), "[1, 2] * 2");
  EXPECT_EQ(textOf(*c, all[5].range), "1 < true");
  EXPECT_EQ(textOf(*c, all[6].range), "true == 1");
}

TEST(ConstEval, TypeMismatches) {
  auto c = semaOf("const { T = [1, 2, 3]; A = T[1.0]; B = abs(true); C = min(1, [2]); }");
  EXPECT_CODES(c, "NS0207", "NS0207", "NS0207");
  const auto &all = c->diags.diagnostics();
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(textOf(*c, all[0].range), "1.0");
  EXPECT_EQ(all[0].message, "expected an integer index, found a real");
  EXPECT_EQ(textOf(*c, all[1].range), "true");
  EXPECT_EQ(all[1].message, "expected a number, found a boolean");
  EXPECT_EQ(textOf(*c, all[2].range), "[2]");
  EXPECT_EQ(all[2].message, "expected a number, found a tuple");
}

TEST(ConstEval, IndexingErrors) {
  auto c = semaOf("const { T = [1, 2, 3]; N = 4; A = T[3]; B = T[-1]; C = N[0]; D = [T, 1]; }");
  EXPECT_CODES(c, "NS0211", "NS0211", "NS0212", "NS0217");
  const auto &all = c->diags.diagnostics();
  ASSERT_EQ(all.size(), 4u);
  EXPECT_EQ(textOf(*c, all[0].range), "3");
  EXPECT_EQ(position(*c, all[0].range), "1:37-1:38");
  EXPECT_EQ(all[0].message, "index 3 is out of range for a tuple of 3 element(s)");
  EXPECT_EQ(textOf(*c, all[1].range), "-1");
  EXPECT_EQ(textOf(*c, all[2].range), "N");
  EXPECT_EQ(all[2].message, "'N' is an integer and cannot be indexed");
  EXPECT_EQ(textOf(*c, all[3].range), "T");
}

TEST(ConstEval, CallErrors) {
  auto c = semaOf("const { A = floor(4); B = abs(1, 2); C = max(1); }");
  EXPECT_CODES(c, "NS0209", "NS0210", "NS0210");
  const auto &all = c->diags.diagnostics();
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(textOf(*c, all[0].range), "floor");
  EXPECT_EQ(all[0].message, "unknown function 'floor'; expressions may call abs, min and max");
  EXPECT_EQ(textOf(*c, all[1].range), "abs(1, 2)");
  EXPECT_EQ(all[1].message, "'abs' takes 1 argument, but 2 given");
  EXPECT_EQ(textOf(*c, all[2].range), "max(1)");
}

TEST(ConstEval, RealWhereAnIntegerIsRequired) {
  auto c = compileText(
      "const R = 2.5;\n"
      "input X [R, 2];\n"
      "hidden H [4] from X convolve { InputShape = [2, 2]; KernelShape = [1, 1]; MapCount = 1.0; }\n"
      "output O [1] from H all;\n",
      Stage::Sema);
  EXPECT_CODES(c, "NS0322", "NS0406");
  const auto &all = c->diags.diagnostics();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(textOf(*c, all[0].range), "R");
  EXPECT_EQ(position(*c, all[0].range), "2:10-2:11");
  EXPECT_EQ(all[0].message, "a shape component must be a positive integer, found a real");
  EXPECT_EQ(textOf(*c, all[1].range), "1.0");
  EXPECT_EQ(all[1].message, "'MapCount' must be an integer or a tuple of integers, found a real");
}

TEST(ConstEval, NonPositiveShapeComponent) {
  auto c = compileText("input X [3 - 3, 2];\noutput O [1] from X all;\n", Stage::Sema);
  EXPECT_CODES(c, "NS0322");
  const Diagnostic *d = findDiagnostic(*c, "NS0322");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(textOf(*c, d->range), "3 - 3");
  EXPECT_EQ(d->message, "a shape component must be a positive integer, found 0");
}

TEST(ConstEval, UnusedConstsAreStillChecked) {
  auto c = semaOf("const Unused = 1 / 0;");
  EXPECT_CODES(c, "NS0205");
}

TEST(ConstEval, LiteralsOutOfRange) {
  auto c = semaOf("const A = 9223372036854775808;\nconst B = 1e400;\nconst C = A + 1;");
  EXPECT_CODES(c, "NS0106", "NS0106");
  const auto &all = c->diags.diagnostics();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].message, "number '9223372036854775808' is out of range");
  EXPECT_EQ(position(*c, all[0].range), "1:11-1:30");
  EXPECT_EQ(textOf(*c, all[1].range), "1e400");
}

TEST(ConstEval, RealModuloAndZeroDivisors) {
  EXPECT_DOUBLE_EQ(realOf("7.5 % 2"), 1.5);
  EXPECT_DOUBLE_EQ(realOf("-7.5 % 2"), -1.5);
  auto c = semaOf("const A = 0.0 / 0.0;\nconst B = 2.5 % 0.0;");
  EXPECT_CODES(c, "NS0205", "NS0205");
}

TEST(ConstEval, ShortCircuitSkipsTheRightOperand) {
  // D2 logic: `false && x` and `true || x` do not evaluate x.
  EXPECT_FALSE(boolOf("false && 1 / 0 == 0"));
  EXPECT_TRUE(boolOf("true || 1 / 0 == 0"));
}

} // namespace
} // namespace netc::unittest
