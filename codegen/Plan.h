// Plan.h -- the executable form of a network (DESIGN.md §2, §5): ordered
// forward, loss, backward and update ops over buffers whose sizes and places
// memory planning has assigned. A Plan is backend-neutral data: it names no
// device, holds no pointers, and carries the constant index tables (gather
// windows, CSR structures) that every backend uploads as they are. Buffers
// that scale with the batch live in one arena at planned offsets (in values
// per sample); the rest (parameters, gradients, optimizer state, tables)
// have fixed sizes.
#pragma once

#include "ir/Network.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace netc::plan {

enum class OpKind {
#define OP(Id, Name, Role, Backward) Id,
#include "codegen/Ops.def"
#undef OP
};
enum class OpRole { Forward, Loss, Backward, Update };

std::string_view opName(OpKind kind);
OpRole opRole(OpKind kind);

enum class BufferRole {
  Features,       // the input batch [B × features]
  Labels,         // class index or target value per sample [B]
  Values,         // a layer's pre-activation or output values [B × nodes]
  Gradient,       // a gradient of the loss with respect to layer values [B × nodes]
  Parameter,      // trainable values
  ParameterGrad,  // their gradients
  OptimizerState, // per-parameter optimizer slots
  Table,          // constant int32 index table
  Metrics,        // loss sum and correct count of the last batch (2 values)
};
std::string_view bufferRoleName(BufferRole role);

enum class ElementType { F32, I32 };

struct Buffer {
  std::string name;
  BufferRole role = BufferRole::Values;
  ElementType type = ElementType::F32;
  int64_t perSample = 0; // elements per sample (batch-scaled buffers)
  int64_t fixed = 0;     // elements independent of the batch
  /// Batch-scaled buffers: offset in the arena, in elements per sample (the
  /// backend multiplies by its batch). -1 until memory planning.
  int64_t arenaOffset = -1;
  std::vector<int32_t> table; // contents of a Table buffer
  bool batchScaled() const { return perSample > 0; }
};

// ---- op attributes ----
struct NoAttrs {};
struct SliceAttrs {
  int64_t offset = 0, width = 0, total = 0;
};
struct DenseAttrs {
  int64_t inputs = 0, outputs = 0;
};
struct SparseAttrs {
  int64_t inputs = 0, outputs = 0, edges = 0;
};
/// Grouped im2col convolution (any canonical convolution kind): kernel
/// (m, u) has weights at row m·groups + u of a [kernels × (1 + window)]
/// tensor, bias first (D4). gather[u][p][k] is the source node (-1: dummy);
/// scatter[m][u][p] the destination node.
struct ConvAttrs {
  ir::KernelKind kernel = ir::KernelKind::Convolution;
  int64_t inputs = 0, outputs = 0;
  int64_t groups = 1, maps = 1, positions = 1, window = 1;
  bool padded = false; // some gather entries are -1 (dummy cells)
};
/// Pool and norm: window[o][k] is the source node of cell k of output o (-1: dummy).
struct WindowAttrs {
  int64_t inputs = 0, outputs = 0, window = 1;
  float alpha = 0, beta = 0, offset = 1; // response norm
  bool averageOverFullKernel = true;
};
struct ActivationAttrs {
  ir::Activation function = ir::Activation::Linear;
  int64_t nodes = 0;
};
struct LossAttrs {
  int64_t nodes = 0;
  int gradientOf = -1; // the values buffer whose gradient out[0] is
};
struct UpdateAttrs {
  int parameter = -1; // index into Plan::parameters
  int64_t count = 0;
};
using OpAttrs = std::variant<NoAttrs, SliceAttrs, DenseAttrs, SparseAttrs, ConvAttrs, WindowAttrs,
                             ActivationAttrs, LossAttrs, UpdateAttrs>;

struct Op {
  OpKind kind = OpKind::Dense;
  std::vector<int> in, out; // buffer indices
  bool accumulate = false;  // add into out[0] instead of overwriting it
  OpAttrs attrs;
  int layer = -1, bundle = -1; // where it comes from (-1: none)
  template <class T> const T &get() const { return std::get<T>(attrs); }
};

enum class Initializer { Uniform, Given };

/// A trainable tensor: a bundle's weights or a layer's biases, after `share`
/// (tied tensors are one Parameter with several owners).
struct Parameter {
  std::string name; // e.g. "Conv1/Pic/weights", "Hid3/biases"
  std::vector<int64_t> shape;
  int64_t count = 0;
  int buffer = -1, gradient = -1;
  std::vector<int> state; // optimizer slots (filled by the trainer's update ops)
  std::vector<ir::ParamRef> owners;
  std::vector<double> givenValues; // Weights = / Biases = (empty: random)
  int64_t fanIn = 1, fanOut = 1;   // for Xavier / He initialisation
  double gain = 1;                 // Xavier gain for the destination's function (4 for sigmoid, Glorot 2010)
  bool isBias = false;
};

enum class LossKind { CrossEntropy, BinaryCrossEntropy, SquaredError };
std::string_view lossName(LossKind kind);

struct MemorySummary {
  int64_t arenaPerSample = 0;     // elements per sample after reuse
  int64_t unplannedPerSample = 0; // elements per sample without reuse
  int64_t fixedElements = 0;      // parameters, gradients, state, tables
};

struct Plan {
  std::string network;
  bool training = true;
  std::vector<Buffer> buffers;
  std::vector<Op> ops;
  std::vector<Parameter> parameters;
  int features = -1, labels = -1, metrics = -1;
  int output = -1; // the output layer's values (probabilities for softmax)
  int64_t featureCount = 0, outputNodes = 0;
  LossKind loss = LossKind::CrossEntropy;
  ir::Activation outputFunction = ir::Activation::Softmax;
  /// Ops [0, forwardEnd) are inference; [forwardEnd, lossEnd) the loss;
  /// [lossEnd, backwardEnd) the backward pass; the rest optimizer updates.
  size_t forwardEnd = 0, lossEnd = 0, backwardEnd = 0;
  MemorySummary memory;

  int addBuffer(Buffer buffer);
  int64_t bytesPerBatch(int64_t batch) const;
};

} // namespace netc::plan
