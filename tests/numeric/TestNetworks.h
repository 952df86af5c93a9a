// TestNetworks.h -- the small Net# networks the numeric tests run: together
// they cover every op of codegen/Ops.def, every canonical kernel of
// ir/KernelKinds.def (ordinary 2-D and multi-channel convolution, grouped,
// maps-in-batch, 3-D, locally connected), Padding on some dimensions,
// LowerPad/UpperPad, the D7 stride remainder, MapCount as a scalar and a
// tuple, max/mean pooling over dummy cells, response norm with
// AvgOverFullKernel true and false, even kernels and padding, `where`
// bundles, several bundles into one layer, several input layers, every
// `share` form, all ten output functions on hidden layers and the three
// losses, and a layer computed in blocks of outputs. A seeded generator adds random convolution/pool/norm
// geometries. Every op sits after a trainable layer, so each backward op's input gradient reaches a parameter
// (the finite-difference test relies on it).
#pragma once

#include "codegen/Codegen.h"
#include "netc/Types.h"

#include <fmt/format.h>

#include <cstdint>
#include <ostream>
#include <random>
#include <string>
#include <vector>

namespace netc::numeric {

struct NetCase {
  std::string name; // GoogleTest-safe
  std::string text;
  CompileOptions options;
  /// Plan it for gradient accumulation (a zero-gradients op, gradient ops that add).
  bool accumulate = false;
  /// Plan part `part` of the layers split over the ranks (PlanOptions::splitParts, by layer index).
  std::vector<int> splitParts = {};
  int part = 0;
};

/// The training plan options of `net`: no memory reuse (every buffer keeps
/// its value), accumulation and the split part as the case asks.
inline plan::PlanOptions planOptionsOf(const NetCase &net) {
  plan::PlanOptions options{true, {}, false};
  options.accumulateGradients = net.accumulate;
  options.splitParts = net.splitParts;
  options.part = net.part;
  return options;
}

/// GoogleTest prints a case by its name (not as bytes).
inline void PrintTo(const NetCase &net, std::ostream *os) {
  *os << net.name;
}

/// All ten output functions on parallel hidden layers (each fed from the
/// input by its own `all` bundle) summed into one output layer by ten
/// bundles; `output` picks the output function and node count (and so the loss).
inline std::string functionsNetwork(std::string_view outputFunction, int outputNodes) {
  return fmt::format(R"(input X [6];
hidden A [4] sigmoid from X all;
hidden B [4] tanh from X all;
hidden C [4] linear from X all;
hidden D [4] softmax from X all;
hidden E [4] rlinear from X all;
hidden F [4] brlinear from X all;
hidden G [4] srlinear from X all;
hidden H [4] square from X all;
hidden I [4] sqrt from X all;
hidden J [4] abs from X all;
output O [{}] {} {{
  from A all; from B all; from C all; from D all; from E all;
  from F all; from G all; from H all; from I all; from J all;
}}
)",
                     outputNodes, outputFunction);
}

/// Ordinary 2-D convolution with the D7 remainder (dim 0: I=11, K=3, S=3 ->
/// N=3, r=2: one node left out at each end, offset 1) and Padding on dim 1 only;
/// a 1-D convolution with UpperPad; two input layers (slice-input).
inline const char *kConv2dNet = R"(input Img [11, 6];
hidden C1 [6, 3] tanh from Img convolve {
  InputShape = [11, 6]; KernelShape = [3, 3]; Stride = [3, 2]; Padding = [false, true]; MapCount = 2; }
input Seq [10];
hidden C0 [10] sigmoid from Seq convolve {
  InputShape = [10]; KernelShape = [3]; Stride = [2]; UpperPad = [1]; MapCount = 2; }
output O [3] { from C1 all; from C0 all; }
)";

/// Multi-channel convolution (K0 = I0) with LowerPad/UpperPad (2U = K on
/// dim 2) and a MapCount tuple with maps along dims 0 and 2.
inline const char *kMultiChannelNet = R"(input Img [2, 6, 7];
hidden C [2, 3, 8] srlinear from Img convolve {
  InputShape = [2, 6, 7]; KernelShape = [2, 3, 4]; Stride = [1, 2, 2];
  LowerPad = [0, 1, 1]; UpperPad = [0, 1, 2]; MapCount = [2, 1, 2]; }
hidden H [5] tanh from C all;
output O [3] from H all;
)";

/// A padded multi-channel convolution, then grouped (K0 = 1, unshared, as
/// the seed network's Conv2) with Padding on one dimension, and maps-in-batch
/// (K0 = 1, shared) from the same layer.
inline const char *kGroupedNet = R"(input Img [3, 5, 5];
hidden P [3, 5, 5] tanh from Img convolve {
  InputShape = [3, 5, 5]; KernelShape = [3, 3, 3]; Padding = [false, true, true]; MapCount = 3; }
hidden G [6, 3, 2] tanh from P convolve {
  InputShape = [3, 5, 5]; KernelShape = [1, 3, 3]; Stride = [1, 2, 2];
  Sharing = [false, true, true]; Padding = [false, true, false]; MapCount = 2; }
hidden M [6, 2, 2] sigmoid from P convolve {
  InputShape = [3, 5, 5]; KernelShape = [1, 3, 3]; Stride = [1, 2, 2]; MapCount = 2; }
output O [3] { from G all; from M all; }
)";

/// 3-D convolutions (1 < K0 < I0), one with UpperPad; a sigmoid output
/// (binary cross-entropy over two nodes).
inline const char *kConv3dNet = R"(input Vol [4, 5, 5];
hidden V [4, 2, 2] tanh from Vol convolve {
  InputShape = [4, 5, 5]; KernelShape = [2, 3, 3]; Stride = [2, 2, 2]; MapCount = 2; }
hidden W [4, 2, 2] tanh from V convolve {
  InputShape = [4, 2, 2]; KernelShape = [2, 2, 1]; UpperPad = [1, 1, 0]; }
output O [2] sigmoid from W all;
)";

/// Locally connected: rank 2 with dim 0 unshared; rank 3 with unshared,
/// padded spatial dims; and K0 = I0 with Sharing[0] = false (irrelevant:
/// an ordinary convolution). Linear output: squared error.
inline const char *kLocalNet = R"(input Img [6, 6];
hidden L [8, 2] tanh from Img convolve {
  InputShape = [6, 6]; KernelShape = [3, 3]; Stride = [1, 2]; Sharing = [false, true]; MapCount = 2; }
hidden L3 [8] tanh from L convolve {
  InputShape = [2, 4, 2]; KernelShape = [2, 2, 2]; Padding = [false, true, true]; Sharing = [true, false, false]; }
hidden U [4] sigmoid from L convolve {
  InputShape = [2, 4, 2]; KernelShape = [2, 2, 2]; Stride = [1, 2, 1]; Sharing = [false, true, true];
  MapCount = [2, 1, 1]; }
output O [3] linear { from L3 all; from U all; }
)";

/// Max and mean pooling with Padding (dummy cells at the high end), with
/// LowerPad/UpperPad, with an even kernel padded on every dimension, with the
/// D7 remainder; a function on a pool-only layer; a tanh output (squared error).
inline const char *kPoolNet = R"(input Img [7, 7];
hidden C [2, 7, 7] tanh from Img convolve {
  InputShape = [7, 7]; KernelShape = [3, 3]; Padding = true; MapCount = 2; }
hidden P [2, 4, 4] from C max pool {
  InputShape = [2, 7, 7]; KernelShape = [1, 3, 3]; Stride = [1, 2, 2]; Padding = [false, true, true]; }
hidden Q [2, 4, 4] from C mean pool {
  InputShape = [2, 7, 7]; KernelShape = [1, 2, 3]; Stride = [1, 2, 2]; LowerPad = [0, 0, 1]; UpperPad = [0, 1, 1]; }
hidden E [2, 7, 7] rlinear from C max pool {
  InputShape = [2, 7, 7]; KernelShape = [2, 2, 2]; Padding = true; }
hidden F [2, 2, 1] from C mean pool {
  InputShape = [2, 7, 7]; KernelShape = [1, 3, 4]; Stride = [1, 3, 4]; }
output O [3] tanh { from P all; from Q all; from E all; from F all; }
)";

/// Response normalization: within maps with padding and AvgOverFullKernel
/// false; across maps padded; strided with an even kernel and Offset 2;
/// an even kernel padded; LowerPad/UpperPad across maps, AvgOverFullKernel false.
inline const char *kNormNet = R"(input Img [6, 6];
hidden C [3, 6, 6] tanh from Img convolve {
  InputShape = [6, 6]; KernelShape = [3, 3]; Padding = true; MapCount = 3; }
hidden R1 [3, 6, 6] from C response norm {
  InputShape = [3, 6, 6]; KernelShape = [1, 3, 3]; Padding = [false, true, true];
  Alpha = 0.5; Beta = 0.75; Offset = 1; AvgOverFullKernel = false; }
hidden R2 [3, 6, 6] from C response norm {
  InputShape = [3, 6, 6]; KernelShape = [3, 1, 1]; Padding = true; Alpha = 0.3; Beta = 0.6; }
hidden R3 [3, 2, 2] from C response norm {
  InputShape = [3, 6, 6]; KernelShape = [1, 4, 4]; Stride = [1, 2, 2]; Alpha = 0.2; Beta = 0.75; Offset = 2; }
hidden R4 [3, 6, 6] from C response norm {
  InputShape = [3, 6, 6]; KernelShape = [1, 2, 2]; Padding = [false, true, true]; Alpha = 0.4; Beta = 0.5;
  AvgOverFullKernel = true; }
hidden R5 [3, 5, 5] from C response norm {
  InputShape = [3, 6, 6]; KernelShape = [2, 3, 3]; LowerPad = [0, 1, 0]; UpperPad = [1, 0, 1];
  Alpha = 0.6; Beta = 0.9; AvgOverFullKernel = false; }
output O [4] sigmoid { from R1 all; from R2 all; from R3 all; from R4 all; from R5 all; }
)";

/// `where` bundles between hidden layers (so sparse-grad-input matters),
/// mixed with `all` bundles into one layer, one from an input slice.
inline const char *kSparseNet = R"(input A [4, 5];
input B [6];
hidden R [4, 3] tanh from A where (s, d) => s[0] == d[0] && s[1] >= d[1];
hidden S [5] sigmoid { from R where (s, d) => (s[0] + s[1]) % 5 == d[0]; from B all; }
hidden T [3] srlinear { from S where (s, d) => s != d; from R where (s, d) => s[1] == d; }
output O [3] { from T all; from S all; from B where (s, d) => s < 4 || d == 2; }
)";

/// Every `share` form: layer list (weights and biases), bundle list on a
/// convolution, a full and a `where` bundle, bias list.
inline const char *kShareNet = R"(input { D1 [5]; D2 [5]; V1 [2, 4, 4]; V2 [2, 4, 4]; }
hidden { H1 [4] tanh from D1 all; H2 [4] tanh from D2 all; }
hidden K1 [2, 2, 2] tanh from V1 convolve { InputShape = [2, 4, 4]; KernelShape = [2, 3, 3]; MapCount = 2; }
hidden K2 [2, 2, 2] tanh from V2 convolve { InputShape = [2, 4, 4]; KernelShape = [2, 3, 3]; MapCount = 2; }
hidden J1 [3] sigmoid { from K1 all; from H1 all; }
hidden J2 [3] sigmoid { from K2 all; from H2 all; }
hidden W1 [3] tanh from H1 where (s, d) => s >= d;
hidden W2 [3] tanh from H2 where (s, d) => s >= d;
output O [3] { from J1 all; from J2 all; from H1 all; from W1 all; from W2 all; }
share { H1, H2 }
share { V1 => K1, V2 => K2 }
share { 1 => J1, 1 => J2 }
share { K1 => J1, K2 => J2 }
share { H1 => W1, H2 => W2 }
)";

/// A layer wider than a dense op computes at once (plan::kMaxDenseBlock):
/// W's products come in three blocks of outputs (684, 684 and 682), and the
/// gradient of A adds them one after another.
inline const char *kWideNet = R"(input X [5];
hidden A [6] tanh from X all;
hidden W [2050] tanh from A all;
output O [3] softmax from W all;
)";

/// The fixed corpus: the structural networks plus the functions network
/// under each kind of output (softmax, sigmoid, linear, another function;
/// one-node binary and regression outputs).
inline std::vector<NetCase> fixedNetworks() {
  std::vector<NetCase> cases = {
      {"functions_softmax", functionsNetwork("softmax", 3), {}},
      {"functions_sigmoid", functionsNetwork("sigmoid", 3), {}},
      {"functions_linear", functionsNetwork("linear", 3), {}},
      {"functions_tanh", functionsNetwork("tanh", 3), {}},
      {"functions_binary", functionsNetwork("sigmoid", 1), {}},
      {"functions_regression", functionsNetwork("linear", 1), {}},
      {"conv2d", kConv2dNet, {}},
      {"multichannel", kMultiChannelNet, {}},
      {"grouped_maps_in_batch", kGroupedNet, {}},
      {"conv3d", kConv3dNet, {}},
      {"locally_connected", kLocalNet, {}},
      {"pooling", kPoolNet, {}},
      {"response_norm", kNormNet, {}},
      {"sparse", kSparseNet, {}},
      {"share", kShareNet, {}},
      {"wide_blocks", kWideNet, {}},
  };
  return cases;
}

/// The tuple text "[a, b, c]".
inline std::string tuple(const std::vector<int64_t> &v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i)
    out += fmt::format("{}{}", i ? ", " : "", v[i]);
  return out + "]";
}
inline std::string boolTuple(const std::vector<bool> &v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i)
    out += fmt::format("{}{}", i ? ", " : "", v[i] ? "true" : "false");
  return out + "]";
}

/// Geometry attributes of one random convolve/pool/norm bundle over input
/// shape `input`, and the counts the test computes itself (D7, D8).
struct RandomWindow {
  std::string attributes;
  std::vector<int64_t> counts; // N[d]
};

/// `kernel0` (if positive) fixes KernelShape[0].
inline RandomWindow randomWindow(std::mt19937 &rng, const std::vector<int64_t> &input, int maxKernel,
                                 int64_t kernel0 = 0) {
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  const size_t rank = input.size();
  std::vector<int64_t> kernel(rank), stride(rank), lower(rank, 0), upper(rank, 0), counts(rank);
  std::vector<bool> padding(rank, false);
  const int64_t mode = pick(0, 2); // 0 none, 1 Padding, 2 LowerPad/UpperPad
  for (size_t d = 0; d < rank; ++d) {
    kernel[d] = d == 0 && kernel0 > 0 ? kernel0 : pick(1, std::min<int64_t>(input[d], maxKernel));
    stride[d] = pick(1, kernel[d]);
    if (mode == 1)
      padding[d] = pick(0, 1) == 1;
    if (mode == 2) {
      lower[d] = pick(0, (kernel[d] - 1) / 2);
      upper[d] = pick(0, kernel[d] / 2);
    }
    if (padding[d])
      counts[d] = (input[d] - 1) / stride[d] + 1;
    else
      counts[d] = (input[d] + lower[d] + upper[d] - kernel[d]) / stride[d] + 1;
  }
  std::string text = fmt::format("InputShape = {}; KernelShape = {}; Stride = {};", tuple(input),
                                 tuple(kernel), tuple(stride));
  if (mode == 1)
    text += fmt::format(" Padding = {};", boolTuple(padding));
  if (mode == 2)
    text += fmt::format(" LowerPad = {}; UpperPad = {};", tuple(lower), tuple(upper));
  return {text, counts};
}

/// A random network: input -> a random convolution (rank 1-3, pads, strides,
/// sharing, MapCount scalar or tuple) -> optionally a random max pool, mean
/// pool or response norm over its natural output shape -> output. The node
/// counts are computed here from D7-D9, independently of the compiler.
inline NetCase randomGeometryNetwork(uint32_t seed) {
  std::mt19937 rng(seed);
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  // Rank 3 half the time, with a maps dimension whose kernel spans one map
  // (grouped / maps-in-batch), all maps (multi-channel) or some (3-D).
  const size_t rank = pick(0, 1) ? 3 : static_cast<size_t>(pick(1, 2));
  std::vector<int64_t> input(rank);
  for (size_t d = 0; d < rank; ++d)
    input[d] = rank == 3 && d == 0 ? pick(1, 4) : pick(rank == 1 ? 3 : 2, rank == 1 ? 12 : 6);
  int64_t kernel0 = 0;
  if (rank == 3) {
    const int64_t choice = pick(0, 2);
    kernel0 = choice == 0 ? 1 : choice == 1 ? input[0] : pick(1, input[0]);
  }
  RandomWindow conv = randomWindow(rng, input, 4, kernel0);
  std::vector<bool> sharing(rank);
  for (size_t d = 0; d < rank; ++d)
    sharing[d] = pick(0, 3) != 0;
  std::vector<int64_t> maps(rank, 1);
  std::string mapText;
  if (pick(0, 1) == 0) {
    maps[0] = pick(1, 3);
    mapText = fmt::format("MapCount = {};", maps[0]);
  } else {
    for (auto &m : maps)
      m = pick(1, 2);
    mapText = fmt::format("MapCount = {};", tuple(maps));
  }
  std::vector<int64_t> natural(rank);
  int64_t convNodes = 1;
  for (size_t d = 0; d < rank; ++d) {
    natural[d] = maps[d] * conv.counts[d];
    convNodes *= natural[d];
  }
  std::string text = fmt::format("input X {};\n", tuple(input));
  text += fmt::format("hidden C [{}] tanh from X convolve {{ {} Sharing = {}; {} }}\n", convNodes,
                      conv.attributes, boolTuple(sharing), mapText);
  std::string outputBundles = "from C all;";
  const int64_t follow = pick(0, 3); // 0 none, 1 max, 2 mean, 3 norm
  if (follow > 0) {
    RandomWindow window = randomWindow(rng, natural, 3);
    int64_t nodes = 1;
    for (int64_t n : window.counts)
      nodes *= n;
    if (follow == 3) {
      std::uniform_real_distribution<double> u(0, 1);
      text += fmt::format(
          "hidden W [{}] from C response norm {{ {} Alpha = {:.3f}; Beta = {:.3f}; Offset = {:.3f}; "
          "AvgOverFullKernel = {}; }}\n",
          nodes, window.attributes, 0.1 + 0.9 * u(rng), 0.3 + 0.7 * u(rng), 0.5 + u(rng),
          pick(0, 1) ? "true" : "false");
    } else {
      text += fmt::format("hidden W [{}] from C {} pool {{ {} }}\n", nodes, follow == 1 ? "max" : "mean",
                          window.attributes);
    }
    outputBundles += " from W all;";
  }
  text += fmt::format("output O [3] softmax {{ {} }}\n", outputBundles);
  return {fmt::format("random_{}", seed), text, {}};
}

/// The networks of the parity tests (CPU fast kernels, the CUDA dispatch on
/// the host, the cuDNN descriptions): every fixed network, `randomCount`
/// random geometries, and the first fixed network planned for gradient
/// accumulation (the zeroing op, every gradient op adding).
inline std::vector<NetCase> parityCases(uint32_t randomCount = 24) {
  std::vector<NetCase> cases = fixedNetworks();
  for (uint32_t seed = 1; seed <= randomCount; ++seed)
    cases.push_back(randomGeometryNetwork(seed));
  NetCase accumulating = cases.front();
  accumulating.name += "_accumulate";
  accumulating.accumulate = true;
  cases.push_back(accumulating);
  return cases;
}

/// Parts of kWideNet's W split over three ranks (PlanSplit.cpp): the ops
/// on a part's nodes -- dense and add-bias into a part, concat-nodes, the
/// gradient's slice, the part's weight, bias and input gradients (part 1's
/// adding to a received sum) -- op by op; the plans' sends and receives
/// have no kernels and are left out there.
inline std::vector<NetCase> splitPartCases() {
  std::vector<NetCase> cases;
  for (int part : {0, 1}) {
    NetCase c{fmt::format("wide_part{}_of_3", part), kWideNet, {}};
    c.splitParts = {0, 0, 3, 0};
    c.part = part;
    cases.push_back(std::move(c));
  }
  return cases;
}

} // namespace netc::numeric
