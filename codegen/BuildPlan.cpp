// BuildPlan.cpp -- lowers a checked network to a Plan: parameters (one per
// tied group after `share`; a convolution's kernel biases are their own),
// buffers per layer with their shapes, forward ops per lowered bundle in
// dependency order with their geometry, the loss op chosen by the output
// function (docs/language.md §17), then the backward ops (Autodiff.cpp), the flat
// arenas and buckets (PlanArenas.cpp), one fused update op, and memory
// planning (PlanMemory.cpp).
#include "codegen/Codegen.h"
#include "codegen/IndexTables.h"
#include "support/ByteSize.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <queue>

namespace netc::plan {

namespace {

std::string bundleName(const ir::Layer &layer, size_t bundleIndex) {
  const ir::Bundle &b = layer.bundles[bundleIndex];
  size_t sameSource = 0;
  for (size_t i = 0; i < bundleIndex; ++i)
    sameSource += layer.bundles[i].sourceName == b.sourceName ? 1 : 0;
  std::string name = layer.name + "/" + b.sourceName;
  if (sameSource)
    name += fmt::format("#{}", sameSource);
  return name;
}

/// The per-dimension geometry a backend describes a windowed op with.
std::vector<WindowDim> windowDims(const ir::Geometry &geometry) {
  std::vector<WindowDim> dims;
  for (const ir::DimGeometry &d : geometry.dims)
    dims.push_back(
        {d.input, d.kernel, d.stride, d.lowerPad, d.upperPad, d.offset, d.count, d.maps, d.sharing});
  return dims;
}

class PlanBuilder {
public:
  PlanBuilder(const ir::Network &net, const PlanOptions &options) : net_(net), options_(options) {}

  Expected<Plan> build() {
    if (Status s = checkPlannable(); !s)
      return s.message().empty() ? fail("the network cannot be planned") : Error{s.message()};
    plan_.network = net_.name;
    plan_.training = options_.training;
    createParameters();
    const bool accumulating = options_.training && options_.accumulateGradients;
    if (accumulating) {
      Op zero;
      zero.kind = OpKind::ZeroGradients;
      zero.out = {plan_.gradientArena};
      plan_.ops.push_back(std::move(zero));
    }
    plan_.stepBegin = plan_.ops.size();
    createInputs();
    for (int l : dependencyOrder(net_))
      if (net_.layers[static_cast<size_t>(l)].kind != ir::LayerKind::Input)
        if (Status s = emitLayer(l); !s)
          return Error{s.message()};
    plan_.forwardEnd = plan_.ops.size();
    emitLoss();
    plan_.lossEnd = plan_.ops.size();
    if (options_.training)
      appendBackward(plan_);
    plan_.backwardEnd = plan_.ops.size();
    if (accumulating) // every gradient op adds to what the zeroing or the last micro-batch left
      for (Op &op : plan_.ops)
        if (opRole(op.kind) == OpRole::Backward && !op.out.empty() &&
            plan_.buffers[static_cast<size_t>(op.out[0])].role == BufferRole::ParameterGrad)
          op.accumulate = true;
    const bool split = std::any_of(options_.splitParts.begin(), options_.splitParts.end(),
                                   [](int parts) { return parts > 1; });
    if (!options_.stageOf.empty() || split) {
      if (!options_.training)
        return fail(split ? "only a training plan is split over ranks"
                          : "only a training plan is cut into pipeline stages");
      // A split without stages: the whole network is one stage.
      const std::vector<int> stageOf =
          options_.stageOf.empty() ? std::vector<int>(net_.layers.size(), 0) : options_.stageOf;
      auto widths = stageWidths(net_, stageOf, options_.splitParts);
      if (!widths)
        return widths.error();
      auto remap = keepStage(plan_, net_, stageOf, options_.stage, *widths, options_.part);
      if (!remap)
        return remap.error();
      keepStageTables(*remap);
      if (split)
        if (Status s = keepPart(plan_, net_, stageOf, options_.splitParts, options_.part); !s)
          return Error{s.message()};
    }
    planArenas(plan_, options_.bucketBytes);
    if (accumulating) // the zeroing covers the whole gradient arena
      plan_.ops.front().attrs = UpdateAttrs{options_.update, plan_.arenaElements, 0};
    if (options_.training)
      emitUpdate();
    plan_.updateEnd = plan_.ops.size();
    placeCommunication(plan_, options_.replicaSync);
    if (Status s = checkFixedMemory(); !s)
      return Error{s.message()};
    if (options_.buildTables)
      fillTables();
    planMemory(plan_, options_.reuseMemory);
    return std::move(plan_);
  }

private:
  Status checkPlannable() const {
    if (net_.output < 0 || net_.inputs.empty())
      return fail("the network has no output or no input layer");
    for (const ir::Layer &layer : net_.layers) {
      if (!layer.valid || layer.nodes <= 0)
        return fail(fmt::format("layer '{}' has no valid size", layer.name));
      if (layer.nodes > INT32_MAX)
        return fail(fmt::format("layer '{}' has {} nodes; at most {} are supported", layer.name, layer.nodes,
                                INT32_MAX));
      for (const ir::Bundle &b : layer.bundles)
        if (!b.valid || !b.lowering.lowered)
          return fail(
              fmt::format("the bundle from '{}' into '{}' could not be lowered", b.sourceName, layer.name));
    }
    return Status::success();
  }

  int valuesBuffer(std::string name, std::vector<int64_t> shape, BufferRole role = BufferRole::Values) {
    Buffer b;
    b.name = std::move(name);
    b.role = role;
    b.perSample = 1;
    for (int64_t d : shape)
      b.perSample *= d;
    b.shape = std::move(shape);
    return plan_.addBuffer(std::move(b));
  }
  int fixedBuffer(std::string name, BufferRole role, std::vector<int64_t> shape) {
    Buffer b;
    b.name = std::move(name);
    b.role = role;
    b.fixed = 1;
    for (int64_t d : shape)
      b.fixed *= d;
    b.shape = std::move(shape);
    return plan_.addBuffer(std::move(b));
  }
  /// The Table buffers of bundle (l, b), sized from its geometry (filled
  /// later by fillTables, once the sizes are known to fit); the first index.
  Expected<int> tableBuffers(int l, int b, const std::string &name) {
    const ir::Layer &layer = net_.layers[static_cast<size_t>(l)];
    const ir::Bundle &bundle = layer.bundles[static_cast<size_t>(b)];
    const ir::Layer &src = net_.layers[static_cast<size_t>(bundle.source)];
    auto sizes = tableSizes(bundle, src, layer);
    if (!sizes)
      return fail(fmt::format("the index tables of the bundle from '{}' into '{}' have more entries than "
                              "can be counted",
                              bundle.sourceName, layer.name));
    static constexpr std::string_view kSparse[] = {"row-start", "column", "col-start", "row", "edge"};
    static constexpr std::string_view kConvolution[] = {"gather", "scatter"};
    static constexpr std::string_view kWindow[] = {"window", "centre"};
    const std::string_view *suffixes =
        bundle.lowering.kernel == ir::KernelKind::Sparse                               ? kSparse
        : sizes->size() == 2 && bundle.lowering.kernel != ir::KernelKind::ResponseNorm ? kConvolution
                                                                                       : kWindow;
    const int first = static_cast<int>(plan_.buffers.size());
    for (size_t t = 0; t < sizes->size(); ++t) {
      Buffer buffer;
      buffer.name = fmt::format("{}.{}", name, suffixes[t]);
      buffer.role = BufferRole::Table;
      buffer.type = ElementType::I32;
      buffer.fixed = (*sizes)[t];
      buffer.shape = {buffer.fixed};
      plan_.addBuffer(std::move(buffer));
    }
    pendingTables_.push_back({l, b, first});
    return first;
  }

  /// Refuses a plan whose fixed buffers (parameters, their gradients and
  /// optimizer state, index tables) exceed the memory limit, before any
  /// table is built; sizes are summed in checked arithmetic.
  Status checkFixedMemory() const {
    const uint64_t limit = options_.maxMemoryBytes ? options_.maxMemoryBytes : machineMemoryBytes();
    uint64_t total = 0;
    bool overflow = false;
    const Buffer *largest = nullptr;
    for (const Buffer &buffer : plan_.buffers) {
      if (buffer.batchScaled() || buffer.viewOf >= 0) // views are counted with their arena
        continue;
      uint64_t bytes = 0;
      overflow |= __builtin_mul_overflow(static_cast<uint64_t>(buffer.fixed), uint64_t{4}, &bytes);
      overflow |= __builtin_add_overflow(total, bytes, &total);
      if (!largest || buffer.fixed > largest->fixed)
        largest = &buffer;
    }
    if (!overflow && total <= limit)
      return Status::success();
    return fail(fmt::format(
        "network '{}' needs {} for its {} before any batch (the largest is {} '{}', {}); the limit is {} "
        "(--max-memory)",
        net_.name, overflow ? "more bytes than can be counted" : byteSizeText(total),
        options_.training ? "parameters, gradients, optimizer state and index tables"
                          : "parameters and index tables",
        largest->role == BufferRole::Table ? "the index table" : "the tensor", largest->name,
        byteSizeText(static_cast<uint64_t>(largest->fixed) * 4), byteSizeText(limit)));
  }

  /// The index tables a pipeline stage kept, at their new indices.
  void keepStageTables(const std::vector<int> &remap) {
    std::vector<PendingTables> kept;
    for (PendingTables pending : pendingTables_)
      if (const int first = remap[static_cast<size_t>(pending.firstBuffer)]; first >= 0) {
        pending.firstBuffer = first; // a bundle's tables are kept or dropped together, in order
        kept.push_back(pending);
      }
    pendingTables_ = std::move(kept);
  }

  /// Builds the index tables of every bundle that has them (IndexTables.cpp).
  void fillTables() {
    for (const PendingTables &pending : pendingTables_) {
      const ir::Layer &layer = net_.layers[static_cast<size_t>(pending.layer)];
      const ir::Bundle &bundle = layer.bundles[static_cast<size_t>(pending.bundle)];
      const ir::Layer &src = net_.layers[static_cast<size_t>(bundle.source)];
      std::vector<std::vector<int32_t>> tables;
      switch (bundle.lowering.kernel) {
      case ir::KernelKind::Sparse: {
        SparseTables t = sparseTables(bundle, src, layer);
        tables = {std::move(t.rowStart), std::move(t.column), std::move(t.colStart), std::move(t.row),
                  std::move(t.edge)};
        break;
      }
      case ir::KernelKind::MaxPool:
      case ir::KernelKind::MeanPool: tables = {std::move(windowTables(bundle).window)}; break;
      case ir::KernelKind::ResponseNorm: {
        WindowTables t = windowTables(bundle);
        tables = {std::move(t.window), std::move(t.centre)};
        break;
      }
      default: {
        ConvolutionTables t = convolutionTables(bundle);
        tables = {std::move(t.gather), std::move(t.scatter)};
        break;
      }
      }
      for (size_t t = 0; t < tables.size(); ++t) {
        Buffer &buffer = plan_.buffers[static_cast<size_t>(pending.firstBuffer) + t];
        buffer.fixed = static_cast<int64_t>(tables[t].size()); // equal to the planned size
        buffer.shape = {buffer.fixed};
        buffer.table = std::move(tables[t]);
      }
    }
  }

  /// One Parameter per unique trainable tensor; tied tensors share one. A
  /// convolution's kernel biases follow its weights (tied with them). The
  /// parameter and gradient buffers are views into the flat arenas, which
  /// planArenas lays out.
  void createParameters() {
    plan_.parameterArena = fixedBuffer("parameters", BufferRole::ParameterArena, {0});
    if (options_.training)
      plan_.gradientArena = fixedBuffer("gradients", BufferRole::GradientArena, {0});
    std::map<ir::ParamRef, size_t> groupOf;
    for (size_t g = 0; g < net_.shareGroups.size(); ++g)
      for (const ir::ParamRef &ref : net_.shareGroups[g])
        groupOf[ref] = g;
    std::map<size_t, int> parameterOfGroup;
    auto newParameter = [&](ir::ParamRef ref, std::string name, std::vector<int64_t> shape, bool isBias,
                            std::vector<double> given, int64_t fanIn, int64_t fanOut) {
      Parameter param;
      param.name = std::move(name);
      param.shape = std::move(shape);
      param.count = 1;
      for (int64_t d : param.shape)
        param.count *= d;
      param.owners.push_back(ref);
      param.isBias = isBias;
      param.givenValues = std::move(given);
      param.fanIn = std::max<int64_t>(1, fanIn);
      param.fanOut = std::max<int64_t>(1, fanOut);
      const ir::Layer &owner = net_.layers[static_cast<size_t>(ref.layer)];
      param.gain = owner.function == ir::Activation::Sigmoid ? 4.0 : 1.0;
      param.networkIndex = static_cast<int>(plan_.parameters.size());
      param.buffer = fixedBuffer(param.name, BufferRole::Parameter, param.shape);
      if (options_.training)
        param.gradient = fixedBuffer("d" + param.name, BufferRole::ParameterGrad, param.shape);
      plan_.parameters.push_back(std::move(param));
      return static_cast<int>(plan_.parameters.size()) - 1;
    };
    /// The parameter of `ref`: the tied group's when it has one already.
    auto add = [&](ir::ParamRef ref, std::string name, std::vector<int64_t> shape, bool isBias,
                   std::vector<double> given, int64_t fanIn, int64_t fanOut) {
      auto g = groupOf.find(ref);
      if (g != groupOf.end()) {
        auto p = parameterOfGroup.find(g->second);
        if (p != parameterOfGroup.end()) {
          plan_.parameters[static_cast<size_t>(p->second)].owners.push_back(ref);
          if (const int bias = plan_.parameters[static_cast<size_t>(p->second)].kernelBias; bias >= 0)
            plan_.parameters[static_cast<size_t>(bias)].owners.push_back(ref);
          parameterOf_[ref] = p->second;
          return p->second;
        }
      }
      const int index =
          newParameter(ref, std::move(name), std::move(shape), isBias, std::move(given), fanIn, fanOut);
      parameterOf_[ref] = index;
      if (g != groupOf.end())
        parameterOfGroup[g->second] = index;
      return index;
    };
    for (size_t l = 0; l < net_.layers.size(); ++l) {
      const ir::Layer &layer = net_.layers[l];
      for (size_t b = 0; b < layer.bundles.size(); ++b) {
        const ir::Bundle &bundle = layer.bundles[b];
        if (!ir::bundleIsTrainable(bundle.kind))
          continue;
        const ir::Layer &src = net_.layers[static_cast<size_t>(bundle.source)];
        ir::ParamRef ref{static_cast<int>(l), static_cast<int>(b)};
        std::vector<double> given = bundle.weights ? *bundle.weights : std::vector<double>{};
        std::string name = bundleName(layer, b) + "/weights";
        const ir::Fan fan = ir::bundleFan(bundle, layer.nodes, src.nodes);
        if (bundle.kind == ir::BundleKind::All) {
          add(ref, name, {layer.nodes, src.nodes}, false, given, fan.in, fan.out);
        } else if (bundle.kind == ir::BundleKind::Where) {
          add(ref, name, {bundle.edges}, false, given, fan.in, fan.out);
        } else {
          // `Weights =` lists each kernel row with its bias first (D4).
          const int64_t kernels = bundle.geometry.kernels, window = bundle.geometry.kernelSize;
          std::vector<double> weights, biases;
          if (!given.empty())
            for (int64_t r = 0; r < kernels; ++r) {
              biases.push_back(given[static_cast<size_t>(r * (1 + window))]);
              for (int64_t k = 0; k < window; ++k)
                weights.push_back(given[static_cast<size_t>(r * (1 + window) + 1 + k)]);
            }
          const size_t before = plan_.parameters.size();
          const int w = add(ref, name, {kernels, window}, false, std::move(weights), fan.in, fan.out);
          if (plan_.parameters.size() > before) { // new, not tied to an earlier bundle
            const int bias = newParameter(ref, bundleName(layer, b) + "/kernel-biases", {kernels}, true,
                                          std::move(biases), fan.in, fan.out);
            plan_.parameters[static_cast<size_t>(w)].kernelBias = bias;
            plan_.parameters[static_cast<size_t>(bias)].biasOf = w;
          }
        }
      }
      if (layer.hasBias)
        add({static_cast<int>(l), -1}, layer.name + "/biases", {layer.nodes}, true,
            layer.biases ? *layer.biases : std::vector<double>{}, layer.nodes, layer.nodes);
    }
    countRandomDraws();
  }

  /// Each parameter's place in the one random sequence initialisation
  /// draws from (runtime/train/ModelState.cpp): one value per element of
  /// its checkpoint tensor (a convolution's weights with their kernel
  /// biases) unless `Weights =` or `Biases =` gives them, and under Xavier
  /// or He none for biases.
  void countRandomDraws() {
    int64_t uniform = 0, scaled = 0;
    for (Parameter &p : plan_.parameters) {
      p.uniformDrawsBefore = uniform;
      p.scaledDrawsBefore = scaled;
      if (p.biasOf >= 0 || !p.givenValues.empty())
        continue; // drawn with its weights, or given
      const int64_t values =
          p.count + (p.kernelBias >= 0 ? plan_.parameters[static_cast<size_t>(p.kernelBias)].count : 0);
      uniform += values;
      if (!p.isBias)
        scaled += values;
    }
  }

  void createInputs() {
    plan_.featureCount = 0;
    for (int i : net_.inputs)
      plan_.featureCount += net_.layers[static_cast<size_t>(i)].nodes;
    plan_.features = valuesBuffer("features", {plan_.featureCount}, BufferRole::Features);
    plan_.labels = valuesBuffer("labels", {1}, BufferRole::Labels);
    plan_.metrics = fixedBuffer("metrics", BufferRole::Metrics, {kMetricCount});
    plan_.scalars = fixedBuffer("step-scalars", BufferRole::StepScalars, {kStepScalarCount});
    plan_.workspace = fixedBuffer("workspace", BufferRole::Workspace, {0});
    values_.assign(net_.layers.size(), -1);
    pre_.assign(net_.layers.size(), -1);
    if (net_.inputs.size() == 1) {
      values_[static_cast<size_t>(net_.inputs[0])] = plan_.features;
      return;
    }
    int64_t offset = 0;
    for (int i : net_.inputs) {
      const ir::Layer &layer = net_.layers[static_cast<size_t>(i)];
      int buffer = valuesBuffer(layer.name, layer.shape);
      values_[static_cast<size_t>(i)] = buffer;
      Op op;
      op.kind = OpKind::SliceInput;
      op.in = {plan_.features};
      op.out = {buffer};
      op.attrs = SliceAttrs{offset, layer.nodes, plan_.featureCount};
      op.layer = i;
      plan_.ops.push_back(std::move(op));
      offset += layer.nodes;
    }
  }

  Status emitLayer(int l) {
    const ir::Layer &layer = net_.layers[static_cast<size_t>(l)];
    ir::Activation fn = layer.function.value_or(ir::Activation::Linear);
    int pre = valuesBuffer(fn == ir::Activation::Linear ? layer.name : layer.name + ".pre", layer.shape);
    pre_[static_cast<size_t>(l)] = pre;
    for (size_t b = 0; b < layer.bundles.size(); ++b)
      if (Status s = emitBundle(l, static_cast<int>(b), pre, /*accumulate=*/b > 0); !s)
        return s;
    if (layer.hasBias) {
      Op op;
      op.kind = OpKind::AddBias;
      op.in = {parameterBuffer({l, -1})};
      op.out = {pre};
      op.accumulate = true;
      op.attrs = DenseAttrs{layer.nodes, layer.nodes};
      op.layer = l;
      plan_.ops.push_back(std::move(op));
    }
    if (fn == ir::Activation::Linear) {
      values_[static_cast<size_t>(l)] = pre;
      return Status::success();
    }
    int act = valuesBuffer(layer.name, layer.shape);
    values_[static_cast<size_t>(l)] = act;
    Op op;
    op.kind = OpKind::Activate;
    op.in = {pre};
    op.out = {act};
    op.attrs = ActivationAttrs{fn, layer.nodes};
    op.layer = l;
    plan_.ops.push_back(std::move(op));
    return Status::success();
  }

  int parameterBuffer(ir::ParamRef ref) const {
    return plan_.parameters[static_cast<size_t>(parameterOf_.at(ref))].buffer;
  }

  Status emitBundle(int l, int b, int out, bool accumulate) {
    const ir::Layer &layer = net_.layers[static_cast<size_t>(l)];
    const ir::Bundle &bundle = layer.bundles[static_cast<size_t>(b)];
    const ir::Layer &src = net_.layers[static_cast<size_t>(bundle.source)];
    const int x = values_[static_cast<size_t>(bundle.source)];
    const std::string name = bundleName(layer, static_cast<size_t>(b));
    const ir::Lowering &low = bundle.lowering;
    Expected<int> tables = 0;
    if (low.kernel != ir::KernelKind::Dense)
      tables = tableBuffers(l, b, name);
    if (!tables)
      return tables.status();
    Op op;
    op.out = {out};
    op.accumulate = accumulate;
    op.layer = l;
    op.bundle = b;
    switch (low.kernel) {
    case ir::KernelKind::Dense:
      op.kind = OpKind::Dense;
      op.in = {x, parameterBuffer({l, b})};
      op.attrs = DenseAttrs{src.nodes, layer.nodes, denseBlockSize(layer.nodes)};
      break;
    case ir::KernelKind::Sparse:
      op.kind = OpKind::Sparse;
      op.in = {x, parameterBuffer({l, b})};
      for (int t = 0; t < 5; ++t)
        op.in.push_back(*tables + t);
      op.attrs = SparseAttrs{src.nodes, layer.nodes, bundle.edges};
      break;
    case ir::KernelKind::MaxPool:
    case ir::KernelKind::MeanPool:
    case ir::KernelKind::ResponseNorm: {
      op.kind = low.kernel == ir::KernelKind::MaxPool    ? OpKind::MaxPool
                : low.kernel == ir::KernelKind::MeanPool ? OpKind::MeanPool
                                                         : OpKind::ResponseNorm;
      op.in = {x, *tables};
      if (op.kind == OpKind::ResponseNorm)
        op.in.push_back(*tables + 1);
      WindowAttrs attrs;
      attrs.inputs = src.nodes;
      attrs.outputs = layer.nodes;
      attrs.window = low.window;
      attrs.alpha = static_cast<float>(bundle.alpha());
      attrs.beta = static_cast<float>(bundle.beta());
      attrs.offset = static_cast<float>(bundle.offset());
      attrs.averageOverFullKernel = bundle.avgOverFullKernel;
      attrs.dims = windowDims(bundle.geometry);
      op.attrs = std::move(attrs);
      break;
    }
    default: { // every convolution kind
      op.kind = OpKind::Convolution;
      const Parameter &weights = plan_.parameters[static_cast<size_t>(parameterOf_.at({l, b}))];
      op.in = {x, weights.buffer, *tables, *tables + 1,
               plan_.parameters[static_cast<size_t>(weights.kernelBias)].buffer};
      op.attrs = ConvAttrs{low.kernel, src.nodes,  layer.nodes,
                           low.groups, low.maps,   low.positions,
                           low.window, low.padded, windowDims(bundle.geometry)};
      break;
    }
    }
    plan_.ops.push_back(std::move(op));
    return Status::success();
  }

  void emitLoss() {
    const ir::Layer &out = net_.layers[static_cast<size_t>(net_.output)];
    const ir::Activation fn = out.function.value_or(ir::Activation::Linear);
    plan_.output = values_[static_cast<size_t>(net_.output)];
    plan_.outputNodes = out.nodes;
    plan_.outputFunction = fn;
    Op op;
    op.layer = net_.output;
    op.in = {plan_.output, plan_.labels, plan_.scalars};
    int pre = pre_[static_cast<size_t>(net_.output)];
    if (fn == ir::Activation::Softmax || fn == ir::Activation::Sigmoid) {
      // Fused with the output function: the gradient is taken with respect
      // to the pre-activation values directly.
      op.kind = fn == ir::Activation::Softmax ? OpKind::SoftmaxCrossEntropy : OpKind::SigmoidCrossEntropy;
      plan_.loss = fn == ir::Activation::Softmax ? LossKind::CrossEntropy : LossKind::BinaryCrossEntropy;
      op.out = {gradientFor(pre, out.name + ".pre"), plan_.metrics};
      op.attrs = LossAttrs{out.nodes, pre};
    } else {
      op.kind = OpKind::SquaredError;
      plan_.loss = LossKind::SquaredError;
      op.out = {gradientFor(plan_.output, out.name), plan_.metrics};
      op.attrs = LossAttrs{out.nodes, plan_.output};
    }
    plan_.ops.push_back(std::move(op));
  }

  /// The gradient buffer of a values buffer, written by the loss op (the
  /// backward pass finds it through LossAttrs::gradientOf).
  int gradientFor(int values, const std::string &name) {
    const Buffer &v = plan_.buffers[static_cast<size_t>(values)];
    const int gradient = valuesBuffer("d" + name, v.shape, BufferRole::Gradient);
    plan_.buffers[static_cast<size_t>(gradient)].gradientOf = values;
    return gradient;
  }

  /// The optimizer state arenas (one per slot, each with a view per
  /// parameter) and the one fused update op over the trained range.
  void emitUpdate() {
    const int slots = stateSlots(options_.update);
    for (int s = 0; s < slots; ++s) {
      const int arena = fixedBuffer(fmt::format("state{}", s), BufferRole::StateArena, {plan_.arenaElements});
      plan_.stateArenas.push_back(arena);
      for (Parameter &param : plan_.parameters) {
        if (!param.trained) // never updated: no state (nor a checkpoint tensor for it)
          continue;
        const int view =
            fixedBuffer(fmt::format("{}.state{}", param.name, s), BufferRole::OptimizerState, param.shape);
        plan_.buffers[static_cast<size_t>(view)].viewOf = arena;
        plan_.buffers[static_cast<size_t>(view)].viewOffset = param.offset;
        param.state.push_back(view);
      }
    }
    Op op;
    op.kind = OpKind::Update;
    op.in = {plan_.gradientArena, plan_.scalars, plan_.metrics};
    op.out = {plan_.parameterArena};
    op.out.insert(op.out.end(), plan_.stateArenas.begin(), plan_.stateArenas.end());
    op.attrs = UpdateAttrs{options_.update, plan_.trainedElements, slots};
    plan_.ops.push_back(std::move(op));
  }

  /// Bundles whose Table buffers (from `firstBuffer` on) fillTables fills.
  struct PendingTables {
    int layer, bundle, firstBuffer;
  };

  const ir::Network &net_;
  PlanOptions options_;
  Plan plan_;
  std::vector<PendingTables> pendingTables_;
  std::map<ir::ParamRef, int> parameterOf_;
  std::vector<int> values_, pre_;
};

} // namespace

std::vector<int> dependencyOrder(const ir::Network &net) {
  const size_t n = net.layers.size();
  std::vector<int> pending(n, 0), order;
  std::vector<std::vector<int>> consumers(n);
  for (size_t l = 0; l < n; ++l)
    for (const ir::Bundle &b : net.layers[l].bundles) {
      ++pending[l];
      consumers[static_cast<size_t>(b.source)].push_back(static_cast<int>(l));
    }
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (size_t l = 0; l < n; ++l)
    if (pending[l] == 0)
      ready.push(static_cast<int>(l));
  while (!ready.empty()) {
    const int l = ready.top();
    ready.pop();
    order.push_back(l);
    for (int c : consumers[static_cast<size_t>(l)])
      if (--pending[static_cast<size_t>(c)] == 0)
        ready.push(c);
  }
  return order;
}

Expected<Plan> buildPlan(const ir::Network &network, const PlanOptions &options) {
  return PlanBuilder(network, options).build();
}

} // namespace netc::plan
