// Plan.h -- the executable form of a network (docs/architecture.md §The Plan): ordered
// forward, loss, backward and update ops over buffers whose sizes and places
// memory planning has assigned. A Plan is backend-neutral data: it names no
// device, holds no pointers, and carries everything a backend needs -- the
// per-dimension geometry of every windowed op, every buffer's tensor shape,
// 256-byte-aligned arena offsets, the constant index tables (gather windows,
// CSR structures) that backends upload as they are, a workspace whose size
// each backend chooses at load, and the update rule. Memory: batch-scaled
// buffers share the activation arena (offsets in values per sample; the
// backend multiplies by its batch), the features and labels live in a
// double-buffered input arena, and parameters, their gradients and each
// optimizer state slot are three flat arenas with one layout, ordered by when
// the backward pass finishes each gradient and grouped into buckets.
#pragma once

#include "codegen/UpdateRule.h"
#include "ir/Network.h"

#include <algorithm>
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
enum class OpRole { Forward, Loss, Backward, Update, Communication };

std::string_view opName(OpKind kind);
struct Plan;
struct Op;
/// What a communication op exchanges, for messages: "all-reduce of gradient
/// bucket 0 (127,808 values)", "all-reduce of the parameters (averaging the
/// replicas)".
std::string communicationName(const Plan &plan, const Op &op);
/// The CLI spelling of an optimizer (Optimizers.def): "sgd", "adam", "adadelta".
std::string_view optimizerName(OptimizerKind kind);
OpRole opRole(OpKind kind);

enum class BufferRole {
  Features,       // the input batch [B × features] (input arena, double-buffered)
  Labels,         // class index or target value per sample [B] (input arena, double-buffered)
  Values,         // a layer's pre-activation or output values [B × nodes]
  Gradient,       // a gradient of the loss with respect to layer values [B × nodes]
  Parameter,      // trainable values: a view into the parameter arena
  ParameterGrad,  // their gradients: a view into the gradient arena
  OptimizerState, // a per-parameter optimizer slot: a view into a state arena
  ParameterArena, // every parameter, flat (the fused update op's weights)
  GradientArena,  // every parameter gradient, flat, in the same layout
  StateArena,     // one optimizer state slot of every parameter, same layout
  Table,          // constant int32 index table
  Metrics,        // loss and accuracy sums since the host last cleared them (Metric)
  StepScalars,    // per-step scalars the host writes before a step (StepScalar)
  Workspace,      // scratch whose size the backend chooses at load (0 in the Plan)
};
std::string_view bufferRoleName(BufferRole role);

enum class ElementType { F32, I32 };

/// Every arena offset is a multiple of this many elements (256 bytes), so
/// each buffer starts 256-byte aligned at any batch size.
inline constexpr int64_t kAlignElements = 64;
inline int64_t alignElements(int64_t n) {
  return (n + kAlignElements - 1) / kAlignElements * kAlignElements;
}

struct Buffer {
  std::string name;
  BufferRole role = BufferRole::Values;
  ElementType type = ElementType::F32;
  /// The tensor shape: per sample for batch-scaled buffers (a layer's
  /// shape), whole for the others (a parameter's shape).
  std::vector<int64_t> shape;
  int64_t perSample = 0; // elements per sample (batch-scaled buffers)
  int64_t fixed = 0;     // elements independent of the batch
  /// Batch-scaled buffers: offset in the activation arena (the input arena
  /// for Features and Labels), in elements per sample (the backend
  /// multiplies by its batch); a multiple of kAlignElements. -1 until memory
  /// planning.
  int64_t arenaOffset = -1;
  /// A view: these `fixed` elements are elements [viewOffset, ...) of buffer
  /// `viewOf` (a flat arena); -1: the buffer has its own memory.
  int viewOf = -1;
  int64_t viewOffset = 0;
  std::vector<int32_t> table; // contents of a Table buffer
  /// A Gradient buffer: the values buffer it is the gradient of (-1: none).
  int gradientOf = -1;
  bool batchScaled() const { return perSample > 0; }
  bool isInput() const { return role == BufferRole::Features || role == BufferRole::Labels; }
};

// ---- op attributes ----
struct NoAttrs {};
struct SliceAttrs {
  int64_t offset = 0, width = 0, total = 0;
};
/// A dense op (and its two gradients; add-bias and bias-grad use `inputs` =
/// `outputs` = the layer's nodes) over `outputs` destination nodes. Wide
/// layers are computed `block` outputs at a time, one matrix product per
/// block in order (0: all at once): the input gradient adds the blocks'
/// products into dx one after another (the CPU's own kernels run each
/// value's sum on through the blocks; OpenBLAS, cuBLAS and the reference
/// round each block's sum on its own).
/// A layer split over the ranks of a pipeline stage (`--split`,
/// codegen/PlanSplit.cpp) gives each rank whole blocks, so that its products
/// and the running sum it passes on are those one process computes.
struct DenseAttrs {
  int64_t inputs = 0, outputs = 0;
  int64_t block = 0;
};
/// A dense op computes at most this many outputs in one product.
inline constexpr int64_t kMaxDenseBlock = 1024;
/// The block of a dense op over `outputs` nodes: the fewest blocks of at
/// most kMaxDenseBlock, of equal size but the last; 0 (one product) for
/// kMaxDenseBlock nodes or fewer.
int64_t denseBlockSize(int64_t outputs);
/// Calls f(first, size) for each block of outputs of `a`, in order.
template <class F> void forEachDenseBlock(const DenseAttrs &a, F &&f) {
  const int64_t block = a.block > 0 ? a.block : a.outputs;
  for (int64_t first = 0; first < a.outputs; first += block)
    f(first, std::min(block, a.outputs - first));
}
struct SparseAttrs {
  int64_t inputs = 0, outputs = 0, edges = 0;
};
/// One dimension of a windowed op's geometry (docs/language.md §11): the source
/// extent, the kernel and stride, the dummy cells before and after the
/// source (padding), the source coordinate of the first window's first cell,
/// the windows along it, and (convolution) its map count and sharing.
struct WindowDim {
  int64_t input = 0, kernel = 1, stride = 1;
  int64_t padLow = 0, padHigh = 0;
  int64_t offset = 0; // may be negative (padding)
  int64_t count = 1;  // windows along this dimension
  int64_t maps = 1;
  bool shared = true;
};

/// Grouped convolution (any canonical convolution kind): kernel (m, u) has
/// weights at row m·groups + u of a [kernels × window] tensor and its bias at
/// element m·groups + u of the kernel-bias parameter (in {.., bias}). gather[u][p][k] is the source node (-1:
/// dummy); scatter[m][u][p] the destination node. `dims` is the geometry the tables were built from, for
/// backends that describe the op instead (cuDNN).
struct ConvAttrs {
  ir::KernelKind kernel = ir::KernelKind::Convolution;
  int64_t inputs = 0, outputs = 0;
  int64_t groups = 1, maps = 1, positions = 1, window = 1;
  bool padded = false; // some gather entries are -1 (dummy cells)
  std::vector<WindowDim> dims;
};
/// Pool and norm: window[o][k] is the source node of cell k of output o (-1: dummy).
struct WindowAttrs {
  int64_t inputs = 0, outputs = 0, window = 1;
  float alpha = 0, beta = 0, offset = 1; // response norm
  bool averageOverFullKernel = true;
  std::vector<WindowDim> dims;
};
struct ActivationAttrs {
  ir::Activation function = ir::Activation::Linear;
  int64_t nodes = 0;
};
struct LossAttrs {
  int64_t nodes = 0;
  int gradientOf = -1; // the values buffer whose gradient out[0] is
};
/// The fused optimizer step over elements [0, count) of the flat arenas.
struct UpdateAttrs {
  UpdateRule rule;
  int64_t count = 0;
  int stateSlots = 0;
};
/// An all-reduce over the replicas of a data-parallel run: elements
/// [offset, offset + count) of the flat arena its op reads (in[0]).
struct CommAttrs {
  int64_t offset = 0, count = 0;
  /// Divide by the number of replicas once waited for (averaging the
  /// replicas' parameters); otherwise a sum (their gradients).
  bool mean = false;
  int bucket = -1; // the gradient bucket it reduces (-1: not a bucket)
};
/// What a send or receive moves (TransferAttrs).
enum class TransferKind {
  Values,   // a layer's values, to the next stage (forward)
  Gradient, // their gradient, to the previous stage (backward)
  /// One part of a split layer's values (`--split`), to the other parts of
  /// its stage, which put the parts together (concat-nodes).
  Part,
  /// A split layer's input gradient summed over the parts so far, to the
  /// next part, which adds its own; the last part sends the whole sum back
  /// to the others.
  PartialGradient,
};
/// A send or receive of one micro-batch between the ranks of a pipeline
/// (codegen/PlanStages.cpp between neighbouring stages, codegen/PlanSplit.cpp
/// between the parts of a stage whose layer is split over its ranks).
struct TransferAttrs {
  /// The rank sent to or received from in the pipeline's communicator,
  /// where stage s holds ranks [first, first + its parts) (pipelineRank).
  int peer = -1;
  int layer = -1; // the network layer whose values (or their gradient) move
  TransferKind what = TransferKind::Values;
  int peerStage = 0, peerPart = 0; // where the peer is, for messages
  bool gradient() const { return what == TransferKind::Gradient || what == TransferKind::PartialGradient; }
};
/// Concat-nodes: the parts' node counts, in order (their sum is the output's nodes).
struct ConcatAttrs {
  std::vector<int64_t> widths;
};
using OpAttrs = std::variant<NoAttrs, SliceAttrs, DenseAttrs, SparseAttrs, ConvAttrs, WindowAttrs,
                             ActivationAttrs, LossAttrs, UpdateAttrs, CommAttrs, TransferAttrs, ConcatAttrs>;

struct Op {
  OpKind kind = OpKind::Dense;
  std::vector<int> in, out; // buffer indices
  bool accumulate = false;  // add into out[0] instead of overwriting it
  OpAttrs attrs;
  int layer = -1, bundle = -1; // where it comes from (-1: none)
  template <class T> const T &get() const { return std::get<T>(attrs); }
};

enum class Initializer { Uniform, Given };

/// A trainable tensor: a bundle's weights or kernel biases, or a layer's
/// biases, after `share` (tied tensors are one Parameter with several owners).
/// A convolution's kernel biases are a Parameter of their own; checkpoints
/// keep the documented layout, where they are column 0 of the kernel rows
/// (`kernelBias` / `biasOf` link the two).
struct Parameter {
  std::string name; // e.g. "Conv1/Pic/weights", "Conv1/Pic/kernel-biases", "Hid3/biases"
  std::vector<int64_t> shape;
  int64_t count = 0;
  int buffer = -1, gradient = -1; // views into the parameter and gradient arenas
  std::vector<int> state;         // views into the state arenas, one per optimizer slot
  int64_t offset = 0;             // in every flat arena (a multiple of kAlignElements)
  bool trained = false;           // some backward op writes its gradient
  size_t readyAfter = 0;          // trained: the backward op after which its gradient is final
  std::vector<ir::ParamRef> owners;
  std::vector<double> givenValues; // Weights = / Biases = (empty: random); kernel rows with the bias first
  int64_t fanIn = 1, fanOut = 1;   // for Xavier / He initialisation
  /// Random values drawn for the network's parameters before this one, in
  /// the order of the whole network's plan: under uniform initialisation,
  /// and under Xavier or He (which draw none for biases). A pipeline
  /// stage's plan holds some of the parameters; starting each at its place
  /// in the one random sequence gives every stage the values one process would.
  int64_t uniformDrawsBefore = 0, scaledDrawsBefore = 0;
  /// Its index among the whole network's parameters (a pipeline stage's
  /// plan holds some of them): the stages' checkpoint tensors, gathered, go
  /// into one file in the whole network's order.
  int networkIndex = 0;
  /// A layer split over the ranks of its stage (`--split`) holds rows
  /// [rowOffset, rowOffset + shape[0]) of the network's tensor of
  /// `wholeRows` rows (checkpoints hold the whole; the stage's ranks send
  /// rank 0 their rows); wholeRows 0: the whole tensor.
  int64_t rowOffset = 0, wholeRows = 0;
  bool isPart() const { return wholeRows > 0; }
  double gain = 1; // Xavier gain for the destination's function (4 for sigmoid, Glorot 2010)
  bool isBias = false;
  int kernelBias = -1; // convolution weights: the Parameter holding their kernel biases
  int biasOf = -1;     // kernel biases: the weights Parameter whose checkpoint tensor holds them
};

/// A range of the gradient arena that is final once op `readyAfter` has run:
/// what a data-parallel run all-reduces while the backward pass goes on.
struct Bucket {
  int64_t offset = 0, count = 0; // elements of the flat arenas
  size_t readyAfter = 0;         // index into Plan::ops
  std::vector<int> parameters;   // in arena order
};

enum class LossKind { CrossEntropy, BinaryCrossEntropy, SquaredError };

/// How the replicas of a data-parallel run agree: not at all (one process),
/// by all-reducing the gradients of every step (synchronous SGD), or by
/// averaging their parameters every few steps (local SGD).
enum class ReplicaSync { None, AllReduceGradients, AverageReplicas };
std::string_view replicaSyncName(ReplicaSync sync);
std::string_view lossName(LossKind kind);

struct MemorySummary {
  int64_t arenaPerSample = 0;     // activation arena: elements per sample after reuse
  int64_t unplannedPerSample = 0; // elements per sample without reuse
  int64_t inputsPerSample = 0;    // one slot of the input arena (features, labels)
  int64_t fixedElements = 0;      // parameters, gradients, state, tables, metrics, scalars
};

struct Plan {
  std::string network;
  bool training = true;
  std::vector<Buffer> buffers;
  std::vector<Op> ops;
  std::vector<Parameter> parameters;
  int features = -1, labels = -1, metrics = -1, scalars = -1, workspace = -1;
  int output = -1; // the output layer's values (probabilities for softmax)
  /// The flat arenas (-1 where absent: no gradients in an inference plan).
  int parameterArena = -1, gradientArena = -1;
  std::vector<int> stateArenas;
  int64_t arenaElements = 0;   // each flat arena's size
  int64_t trainedElements = 0; // [0, trainedElements): the parameters the update op trains
  std::vector<Bucket> buckets;
  /// The input arena holds this many copies of the features and labels: the
  /// host fills one while a step reads another.
  int inputSlots = 2;
  /// The activation arena holds this many copies: a pipeline stage keeps
  /// each micro-batch in flight in one (train/PipelineSchedule.h); 1 elsewhere.
  int activationSlots = 1;
  int64_t featureCount = 0, outputNodes = 0;
  LossKind loss = LossKind::CrossEntropy;
  ir::Activation outputFunction = ir::Activation::Softmax;
  /// Ops [0, stepBegin) zero the gradients (gradient accumulation only);
  /// [stepBegin, forwardEnd) are inference; [forwardEnd, lossEnd) the loss;
  /// [lossEnd, backwardEnd) the backward pass (with the gradient buckets'
  /// all-reduces of a data-parallel plan, each right after the op that
  /// finishes its bucket, and a wait at the end); [backwardEnd, updateEnd)
  /// the optimizer update; [updateEnd, end) averages the replicas' parameters
  /// and optimizer state (local SGD only), run every few steps.
  size_t stepBegin = 0, forwardEnd = 0, lossEnd = 0, backwardEnd = 0, updateEnd = 0;
  /// How the replicas of a data-parallel run stay together (PlanOptions).
  ReplicaSync replicaSync = ReplicaSync::None;
  /// A pipeline stage's plan: stage `stage` of `stages` (codegen/PlanStages.cpp);
  /// a whole network's plan is stage 0 of 1.
  int stage = 0, stages = 1;
  /// A stage whose layers are split over its ranks (`--split`,
  /// codegen/PlanSplit.cpp): this plan is part `part` of `parts`; every part
  /// computes the stage's other layers whole, and only part 0 sends to the
  /// neighbouring stages and counts the loss.
  int part = 0, parts = 1;
  /// Its rank in its pipeline's communicator (stage s's parts follow the
  /// earlier stages' ranks), and the pipeline's ranks: what send and
  /// receive ops name as peers.
  int pipelineRank = 0, pipelineRanks = 1;
  MemorySummary memory;

  int addBuffer(Buffer buffer);
  /// Planned bytes at `batch` samples (the backend's workspace excluded).
  int64_t bytesPerBatch(int64_t batch) const;
  /// Batch-scaled elements per sample: every activation and input slot.
  int64_t elementsPerSample() const {
    return activationSlots * memory.arenaPerSample + inputSlots * memory.inputsPerSample;
  }
};

} // namespace netc::plan
