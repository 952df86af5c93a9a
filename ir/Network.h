// Network.h -- the network IR: layers, bundles (one definition per kind, from
// BundleKinds.def), their evaluated attributes and, after the passes, their
// geometry, parameter counts, FLOPs and memory. Values keep their source
// ranges so every later check can point at the user's text. No AST types here.
#pragma once

#include "ir/Predicate.h"
#include "netc/Types.h"
#include "support/SourceRange.h"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace netc::ir {

enum class LayerKind { Input, Hidden, Output };

enum class Attr {
#define ATTRIBUTE(Name, Kind) Name,
#include "ir/Attributes.def"
#undef ATTRIBUTE
};
enum class AttrValueKind { IntTuple, BoolOrTuple, IntOrTuple, Numbers, Number, Bool };
using AttrMask = uint32_t;
constexpr AttrMask attrBit(Attr a) {
  return AttrMask{1} << static_cast<unsigned>(a);
}

enum class BundleKind {
#define BUNDLE_KIND(Id, Spelling, Trainable, Geometric, Allowed, Required) Id,
#include "ir/BundleKinds.def"
#undef BUNDLE_KIND
};

enum class Activation {
#define ACTIVATION(Id, Spelling) Id,
#include "ir/Activations.def"
#undef ACTIVATION
};

/// The canonical kernel a bundle lowers to (KernelKinds.def).
enum class KernelKind {
#define KERNEL_KIND(Id, Spelling, Description) Id,
#include "ir/KernelKinds.def"
#undef KERNEL_KIND
};

/// The learning task (public type): output defaults, `auto` outputs, losses.
using Task = ::netc::Task;

std::string_view layerKindName(LayerKind kind);
std::string_view bundleKindName(BundleKind kind);
/// "an 'all'", "a 'convolve'", ... (for messages).
std::string bundleKindWithArticle(BundleKind kind);
std::string_view activationName(Activation fn);
std::string_view attrName(Attr attr);
std::string_view taskName(Task task);
std::string_view kernelKindName(KernelKind kind);
AttrValueKind attrValueKind(Attr attr);
bool bundleIsTrainable(BundleKind kind);
bool bundleIsGeometric(BundleKind kind);
AttrMask bundleAllowedAttrs(BundleKind kind);
AttrMask bundleRequiredAttrs(BundleKind kind);
const std::vector<Attr> &allAttrs();
const std::vector<Activation> &allActivations();
const std::vector<BundleKind> &allBundleKinds();

/// Per-dimension geometry of a convolve/pool/norm bundle (D7-D9).
struct DimGeometry {
  int64_t input = 0;    // I
  int64_t kernel = 0;   // K
  int64_t stride = 1;   // S
  int64_t maps = 1;     // MapCount[d]
  bool sharing = true;  // Sharing[d]
  bool padded = false;  // Padding[d] = true
  int64_t lowerPad = 0; // effective low-end padding (dummy nodes before source 0)
  int64_t upperPad = 0; // effective high-end padding
  int64_t count = 0;    // N[d], kernel applications along d
  int64_t offset = 0;   // source coordinate of kernel 0's first cell (may be negative)
};

struct Geometry {
  std::vector<DimGeometry> dims;
  int64_t inputNodes = 0;  // Π I
  int64_t outputNodes = 0; // Π maps·N (convolve) or Π N (pool/norm)
  int64_t kernelSize = 0;  // Π K
  int64_t maps = 1;        // Π MapCount
  int64_t kernels = 0;     // maps · Π_{unshared d} N[d] (convolve)
};

/// How a bundle is computed: its canonical kernel and the sizes of the
/// grouped matrix products it becomes (set by the `lower` pass). For a
/// convolution, kernel (m, u) -- map m, position u along the unshared
/// dimensions -- applies to `positions` places; `groups` = the number of u.
struct Lowering {
  bool lowered = false;
  KernelKind kernel = KernelKind::Dense;
  int64_t groups = 1;    // Π N[d] over unshared dimensions (convolution)
  int64_t maps = 1;      // Π MapCount (convolution)
  int64_t positions = 1; // Π N[d] over shared dimensions; pool/norm: output count
  int64_t window = 1;    // Π K (geometric kinds)
  bool padded = false;   // some window reaches dummy (padding) cells
};

/// One connection bundle, owned by its destination layer.
struct Bundle {
  BundleKind kind = BundleKind::All;
  std::string sourceName;
  int source = -1; // layer index, -1 when unresolved
  SourceRange range, sourceRange, kindRange;

  /// Attributes as written, evaluated. Absent attributes are not in the maps.
  std::map<Attr, SourceRange> attrRanges;
  std::map<Attr, std::vector<int64_t>> intAttrs; // shapes, strides, pads, MapCount
  std::map<Attr, std::vector<bool>> boolAttrs;   // Padding, Sharing (broadcast later)
  std::map<Attr, double> numberAttrs;            // Alpha, Beta, Offset
  AttrMask givenAsScalar = 0;                    // Padding/Sharing/MapCount written as one value
  bool avgOverFullKernel = true;                 // D11
  std::optional<std::vector<double>> weights;    // Weights = ...
  std::shared_ptr<const Predicate> predicate;    // where (s, d) => ...

  // ---- computed by the passes ----
  bool valid = true;  // false once an error makes counts meaningless
  Geometry geometry;  // geometric kinds
  int64_t edges = 0;  // where: true (s, d) pairs; all: src·dst
  int64_t params = 0; // weights (and per-kernel biases) of this bundle
  int64_t flops = 0;  // forward multiply-adds counted as 2
  Lowering lowering;  // canonical kernel (lower pass)
  double alpha() const { return numberAttr(Attr::Alpha, 0); }
  double beta() const { return numberAttr(Attr::Beta, 0); }
  double offset() const { return numberAttr(Attr::Offset, 1); } // D11
  double numberAttr(Attr a, double fallback) const {
    auto it = numberAttrs.find(a);
    return it == numberAttrs.end() ? fallback : it->second;
  }
  bool has(Attr a) const { return attrRanges.count(a) > 0; }
  SourceRange rangeOf(Attr a) const {
    auto it = attrRanges.find(a);
    return it == attrRanges.end() ? range : it->second;
  }
};

/// The fan-in and fan-out of a trainable bundle's weights, which --init xavier
/// (Glorot: ±gain·√(6/(in+out))) and --init he (±√(6/in)) read; documented in
/// docs/training.md ("How the weights start"). `all`: in = the source's nodes,
/// out = the destination's. `where`: the average edges into a destination node
/// and out of a source node. `convolve`: in = Π KernelShape (the window), out
/// = Π MapCount × Π_d min(KernelShape[d], N[d]) with N[d] the kernel positions
/// along d -- the output maps times the kernel positions that can cover one
/// input node, PyTorch's out_channels × kh × kw for the usual layouts (a
/// dimension the kernel spans whole, the input's maps, has one position).
struct Fan {
  int64_t in = 1, out = 1;
};
Fan bundleFan(const Bundle &bundle, int64_t destinationNodes, int64_t sourceNodes);

struct Layer {
  std::string name;
  LayerKind kind = LayerKind::Hidden;
  SourceRange range, nameRange, shapeRange;

  bool shapeAuto = false;
  std::vector<int64_t> shape; // resolved shape ([n] for auto once inferred)
  int64_t nodes = 0;          // 0 while unknown (auto unresolved or invalid)

  std::optional<Activation> function; // as written; the default is filled in by a pass
  SourceRange functionRange;
  bool functionIsDefault = false;

  std::optional<std::vector<double>> biases; // Biases = ...
  SourceRange biasesRange;
  std::vector<Bundle> bundles;

  // ---- computed by the passes ----
  bool hasBias = false;        // D5: at least one all/where bundle
  int64_t params = 0;          // Σ bundle params + biases (before share)
  int64_t flops = 0;           // forward FLOPs per sample (bundles + bias + function)
  int64_t activationBytes = 0; // float32 values per sample
  int depth = -1;              // distance to the output in layers (output = 0)
  bool valid = true;
};

/// A trainable tensor that `share` can tie: a bundle's weights or a layer's biases.
struct ParamRef {
  int layer = -1;
  int bundle = -1; // -1: the layer's biases
  bool operator<(const ParamRef &o) const { return layer != o.layer ? layer < o.layer : bundle < o.bundle; }
  bool operator==(const ParamRef &) const = default;
};

/// One item of a `share { ... }` as resolved by Sema.
struct ShareItem {
  enum class Form { Layer, Bundle, Bias } form = Form::Layer;
  int layer = -1;  // the layer (Layer form) or destination layer (Bundle, Bias)
  int bundle = -1; // Bundle form: index within the destination layer
  SourceRange range;
};
struct ShareDecl {
  SourceRange range;
  std::vector<ShareItem> items;
};

struct Network {
  std::string name;
  std::vector<Layer> layers; // declaration order
  std::vector<ShareDecl> shares;
  int output = -1;
  std::vector<int> inputs; // declaration order = feature order (D12)
  Task task = Task::Unspecified;
  /// The text had syntax errors, so statements may be missing: whole-network
  /// checks that would only repeat that (no output, no input) stay quiet.
  bool fromIncompleteSource = false;

  // ---- computed by the passes ----
  /// Tied parameter groups after share resolution (each of size >= 2).
  std::vector<std::vector<ParamRef>> shareGroups;
  int64_t totalParams = 0; // Σ layer params (shared values counted each time)
  int64_t params = 0;      // unique trainable values after share (D5)
  int64_t flops = 0;       // forward FLOPs per sample
  int64_t activationBytes = 0;

  int findLayer(std::string_view name) const;
};

} // namespace netc::ir
