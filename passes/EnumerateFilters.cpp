// EnumerateFilters.cpp -- counts the edges of every `where` bundle by testing
// its predicate on each (source, destination) coordinate pair of the
// declared shapes (docs/language.md §10). A budget on the number of pairs keeps a
// predicate over huge layers from running for hours: past it, the bundle is
// a located error. A predicate that fails on some pair (division by zero,
// overflow) is reported at the failing sub-expression with the coordinates.
#include "passes/Pipeline.h"
#include "support/CheckedMath.h"
#include "support/MultiIndex.h"

#include <fmt/format.h>

namespace netc {

namespace {

std::string coordinates(const std::vector<int64_t> &c) {
  std::string out = "[";
  for (size_t i = 0; i < c.size(); ++i)
    out += (i ? ", " : "") + std::to_string(c[i]);
  return out + "]";
}

} // namespace

void enumerateFilters(ir::Network &net, const CompileOptions &options, DiagnosticEngine &diags) {
  for (ir::Layer &layer : net.layers)
    for (ir::Bundle &bundle : layer.bundles) {
      if (bundle.kind != ir::BundleKind::Where || !bundle.valid || !bundle.predicate || bundle.source < 0)
        continue;
      const ir::Layer &src = net.layers[static_cast<size_t>(bundle.source)];
      if (src.nodes <= 0 || layer.nodes <= 0 || src.shape.empty() || layer.shape.empty()) {
        bundle.valid = false;
        continue;
      }
      auto pairs = checkedMul(src.nodes, layer.nodes);
      if (!pairs || *pairs > options.maxFilterPairs) {
        diags.report(DiagId::FilterTooManyPairs, bundle.kindRange,
                     pairs ? std::to_string(*pairs) : std::string("more than 2^63"), options.maxFilterPairs);
        bundle.valid = false;
        continue;
      }
      const ir::Predicate &predicate = *bundle.predicate;
      std::vector<int64_t> s(src.shape.size(), 0), d(layer.shape.size(), 0);
      int64_t edges = 0;
      bool failed = false;
      do {
        std::fill(s.begin(), s.end(), 0);
        do {
          ir::Predicate::Result r = predicate.evaluate(s, d);
          if (!r.ok) {
            const ir::PredicateNode &node = predicate.nodes[static_cast<size_t>(r.failedNode)];
            Diagnostic &diag = r.problem == "division by zero"
                                   ? diags.report(DiagId::DivisionByZero, node.range)
                                   : diags.report(DiagId::IntegerOverflow, node.range, "this predicate");
            withNote(diag, bundle.predicate->range,
                     fmt::format("when s = {} and d = {}", coordinates(s), coordinates(d)));
            failed = true;
            break;
          }
          edges += r.value ? 1 : 0;
        } while (advanceRowMajor(s, src.shape));
      } while (!failed && advanceRowMajor(d, layer.shape));
      if (failed) {
        bundle.valid = false;
        continue;
      }
      bundle.edges = edges;
      if (edges == 0)
        diags.report(DiagId::FilterNoEdges, bundle.kindRange);
    }
}

} // namespace netc
