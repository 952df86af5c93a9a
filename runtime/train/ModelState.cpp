// ModelState.cpp -- initialisation and checkpoint save/load for a loaded
// plan (see ModelState.h). Random values come from std::mt19937_64 (its
// output is fixed by the standard) mapped to floats by our own arithmetic,
// so a seed gives the same weights everywhere. Both work on checkpoint
// tensors, the documented layout (docs/training.md): a convolution's kernel
// biases, a Parameter of their own in the Plan, are column 0 of its
// weights tensor's rows there, and are drawn with them in that order.
#include "runtime/train/ModelState.h"
#include "runtime/data/Normalizer.h"
#include "runtime/optim/Optimizer.h"
#include "runtime/train/Safetensors.h"
#include "support/Hash.h"
#include "support/PrintableText.h"
#include "support/Version.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <set>

namespace netc::train {

namespace {

/// Uniform in [-half, half) from 24 random bits.
float uniform(std::mt19937_64 &rng, double half) {
  double unit = static_cast<double>(rng() >> 40) / double(1 << 24); // [0, 1)
  return static_cast<float>((2 * unit - 1) * half);
}

std::string shapeText(const std::vector<int64_t> &shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    out += fmt::format("{}{}", i ? ", " : "", shape[i]);
  return out + "]";
}

/// The checkpoint name of optimizer slot `slot` of `p`: PyTorch's state key
/// ("Hid3/biases/momentum_buffer", "…/exp_avg", …) for a known optimizer.
std::string stateName(const plan::Parameter &p, size_t slot, std::string_view optimizer) {
  if (auto kind = optim::parseOptimizer(optimizer))
    return fmt::format("{}/{}", p.name, optim::stateSlotName(*kind, static_cast<int>(slot)));
  return fmt::format("{}/state{}", p.name, slot);
}

/// The index of `flat` in `shape` as "[i, j]" (row-major).
std::string indexText(const std::vector<int64_t> &shape, int64_t flat) {
  std::vector<int64_t> index(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    const int64_t extent = std::max<int64_t>(shape[d], 1);
    index[d] = flat % extent;
    flat /= extent;
  }
  return shapeText(index);
}

/// The values of tensor `name` as F32, every one finite and, for weights
/// (`bounded`), at most data::kMaxStoredMagnitude in magnitude; errors name
/// the checkpoint, the tensor and the first such index.
Expected<std::vector<float>> finiteValues(const SafetensorsFile &file, const std::string &path,
                                          const std::string &name, const std::vector<int64_t> &shape,
                                          bool bounded) {
  auto values = file.find(name)->toF32(shape);
  if (!values)
    return fail(fmt::format("{}: {}", path, values.message()));
  for (size_t i = 0; i < values->size(); ++i) {
    const float value = (*values)[i];
    if (!std::isfinite(value))
      return fail(fmt::format("{}: tensor '{}' holds {} at index {} (element {} of {}); a checkpoint with "
                              "non-finite values cannot be used (the run that wrote it diverged, or the file "
                              "is damaged)",
                              path, name, std::isnan(value) ? "NaN" : "an infinity",
                              indexText(shape, static_cast<int64_t>(i)), i, values->size()));
    if (bounded && std::fabs(value) > data::kMaxStoredMagnitude)
      return fail(
          fmt::format("{}: tensor '{}' holds {:g} at index {} (element {} of {}); a checkpoint with weights "
                      "above {:g} in magnitude cannot be used: a layer's sums would overflow 32-bit floats, "
                      "whose largest is 3.4e38 (the run that wrote it diverged, or the file is damaged)",
                      path, name, value, indexText(shape, static_cast<int64_t>(i)), i, values->size(),
                      data::kMaxStoredMagnitude));
  }
  return values;
}

/// The checkpoint tensors of a plan: every parameter but kernel biases.
bool isTensor(const plan::Parameter &p) {
  return p.biasOf < 0;
}

/// The shape of `p`'s checkpoint tensor: kernel rows gain their bias
/// column; a split layer's part holds some of its rows (partShape).
std::vector<int64_t> partShape(const plan::Parameter &p) {
  if (p.kernelBias < 0)
    return p.shape;
  return {p.shape[0], 1 + p.shape[1]};
}

/// The shape of `p`'s tensor in a checkpoint file: the whole network's.
std::vector<int64_t> tensorShape(const plan::Parameter &p) {
  std::vector<int64_t> shape = partShape(p);
  if (p.isPart())
    shape[0] = p.wholeRows;
  return shape;
}

/// A split layer's part's rows of a whole tensor's `values` (all of them
/// for a whole parameter).
std::vector<float> partRows(const plan::Parameter &p, std::vector<float> values) {
  if (!p.isPart())
    return values;
  const int64_t row = p.count / std::max<int64_t>(p.shape[0], 1);
  return std::vector<float>(values.begin() + static_cast<ptrdiff_t>(p.rowOffset * row),
                            values.begin() + static_cast<ptrdiff_t>((p.rowOffset + p.shape[0]) * row));
}

/// Reads the checkpoint tensor of `p` from the buffers `bufferOf` picks
/// (its values, or an optimizer slot).
template <class BufferOf>
std::vector<float> readTensor(const plan::Plan &plan, const runtime::Backend &backend,
                              const plan::Parameter &p, BufferOf bufferOf) {
  std::vector<float> values(static_cast<size_t>(p.count));
  backend.read(bufferOf(p), values);
  if (p.kernelBias < 0)
    return values;
  const plan::Parameter &bias = plan.parameters[static_cast<size_t>(p.kernelBias)];
  std::vector<float> biases(static_cast<size_t>(bias.count));
  backend.read(bufferOf(bias), biases);
  const size_t rows = static_cast<size_t>(p.shape[0]), window = static_cast<size_t>(p.shape[1]);
  std::vector<float> tensor(rows * (1 + window));
  for (size_t r = 0; r < rows; ++r) {
    tensor[r * (1 + window)] = biases[r];
    std::copy_n(values.begin() + static_cast<ptrdiff_t>(r * window), window,
                tensor.begin() + static_cast<ptrdiff_t>(r * (1 + window) + 1));
  }
  return tensor;
}

/// Writes checkpoint tensor `tensor` of `p` into the buffers `bufferOf` picks.
template <class BufferOf>
void writeTensor(const plan::Plan &plan, runtime::Backend &backend, const plan::Parameter &p,
                 const std::vector<float> &tensor, BufferOf bufferOf) {
  if (p.kernelBias < 0) {
    backend.write(bufferOf(p), tensor);
    return;
  }
  const plan::Parameter &bias = plan.parameters[static_cast<size_t>(p.kernelBias)];
  const size_t rows = static_cast<size_t>(p.shape[0]), window = static_cast<size_t>(p.shape[1]);
  std::vector<float> values(rows * window), biases(rows);
  for (size_t r = 0; r < rows; ++r) {
    biases[r] = tensor[r * (1 + window)];
    std::copy_n(tensor.begin() + static_cast<ptrdiff_t>(r * (1 + window) + 1), window,
                values.begin() + static_cast<ptrdiff_t>(r * window));
  }
  backend.write(bufferOf(p), values);
  backend.write(bufferOf(bias), biases);
}

/// The `Weights =` values of `p`'s tensor in checkpoint order (empty: random).
std::vector<double> givenTensor(const plan::Plan &plan, const plan::Parameter &p) {
  if (p.kernelBias < 0 || p.givenValues.empty())
    return p.givenValues;
  const std::vector<double> &biases = plan.parameters[static_cast<size_t>(p.kernelBias)].givenValues;
  const size_t rows = static_cast<size_t>(p.shape[0]), window = static_cast<size_t>(p.shape[1]);
  std::vector<double> tensor;
  for (size_t r = 0; r < rows; ++r) {
    tensor.push_back(biases[r]);
    tensor.insert(tensor.end(), p.givenValues.begin() + static_cast<ptrdiff_t>(r * window),
                  p.givenValues.begin() + static_cast<ptrdiff_t>((r + 1) * window));
  }
  return tensor;
}

int64_t elementCount(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

} // namespace

std::string_view initName(InitKind kind) {
  switch (kind) {
  case InitKind::Uniform: return "uniform";
  case InitKind::Xavier: return "xavier";
  case InitKind::He: return "he";
  }
  return "uniform";
}

Expected<InitKind> parseInit(std::string_view name) {
  for (InitKind k : {InitKind::Uniform, InitKind::Xavier, InitKind::He})
    if (initName(k) == name)
      return k;
  return fail(fmt::format("--init must be uniform, xavier or he, got '{}'", name));
}

void initializeParameters(const plan::Plan &plan, runtime::Backend &backend, const InitOptions &options) {
  std::mt19937_64 rng(options.seed);
  int64_t drawn = 0; // values drawn so far from the network's one sequence
  for (const plan::Parameter &p : plan.parameters) {
    if (!isTensor(p))
      continue; // drawn with its weights
    // A pipeline stage's plan lacks the other stages' parameters: skip their draws.
    const int64_t before = options.kind == InitKind::Uniform ? p.uniformDrawsBefore : p.scaledDrawsBefore;
    if (before > drawn) {
      rng.discard(static_cast<unsigned long long>(before - drawn));
      drawn = before;
    }
    const std::vector<int64_t> shape = partShape(p); // a split layer's part draws its rows
    std::vector<float> values(static_cast<size_t>(elementCount(shape)));
    const std::vector<double> given = givenTensor(plan, p);
    if (!given.empty()) {
      for (size_t i = 0; i < values.size() && i < given.size(); ++i)
        values[i] = static_cast<float>(given[i]);
    } else if (options.kind == InitKind::Uniform) {
      for (float &v : values)
        v = uniform(rng, options.diameter / 2.0);
      drawn += static_cast<int64_t>(values.size());
    } else if (!p.isBias) {
      double limit = options.kind == InitKind::Xavier ? p.gain * std::sqrt(6.0 / double(p.fanIn + p.fanOut))
                                                      : std::sqrt(6.0 / double(p.fanIn));
      for (float &v : values)
        v = uniform(rng, limit);
      drawn += static_cast<int64_t>(values.size());
      // A kernel's bias, first in each row of its tensor, starts at 0 too.
      if (p.kernelBias >= 0)
        for (size_t row = 0; row < values.size(); row += static_cast<size_t>(shape[1]))
          values[row] = 0.0f;
    }
    writeTensor(plan, backend, p, values, [](const plan::Parameter &q) { return q.buffer; });
  }
  // Optimizer state starts at 0 (every slot arena, padding included).
  for (int arena : plan.stateArenas)
    backend.write(arena, std::vector<float>(static_cast<size_t>(plan.arenaElements), 0.0f));
}

Expected<SafetensorsFile> stateTensors(const plan::Plan &plan, const runtime::Backend &backend,
                                       bool withOptimizerState, std::string_view optimizer, bool partsOnly) {
  // The places are keyed by name: a file's tensors come back in its own order.
  SafetensorsFile file;
  nlohmann::json order = nlohmann::json::object(), rows = nlohmann::json::object();
  auto add = [&](Tensor tensor, const plan::Parameter &p) {
    order[tensor.name] = p.networkIndex;
    if (p.isPart())
      rows[tensor.name] = nlohmann::json::array({p.rowOffset, p.wholeRows});
    file.tensors.push_back(std::move(tensor));
  };
  for (const plan::Parameter &p : plan.parameters) {
    if (!isTensor(p) || (partsOnly && !p.isPart()))
      continue;
    const std::vector<int64_t> shape = partShape(p);
    auto tensor = Tensor::fromF32(
        p.name, shape, readTensor(plan, backend, p, [](const plan::Parameter &q) { return q.buffer; }));
    if (!tensor)
      return tensor.error();
    add(std::move(*tensor), p);
    if (!withOptimizerState)
      continue;
    for (size_t s = 0; s < p.state.size(); ++s) {
      auto state =
          Tensor::fromF32(stateName(p, s, optimizer), shape,
                          readTensor(plan, backend, p, [s](const plan::Parameter &q) { return q.state[s]; }));
      if (!state)
        return state.error();
      add(std::move(*state), p);
    }
  }
  file.setMetadata(std::string(kNetworkOrderKey), order.dump());
  if (!rows.empty())
    file.setMetadata(std::string(kPartRowsKey), rows.dump());
  return file;
}

namespace {

/// One tensor of a stage's (or a part's) checkpoint tensors, with its place.
struct PartTensor {
  int order = 0;                   // Parameter::networkIndex
  int64_t firstRow = -1, rows = 0; // a split layer's part: rows [firstRow, ...) of `rows`; -1: whole
  Tensor tensor;
};

/// The part tensors of one name, in row order, as one tensor of all the
/// rows; an error says which rows are missing or given twice.
Expected<Tensor> joinRows(std::vector<PartTensor> pieces) {
  std::stable_sort(pieces.begin(), pieces.end(),
                   [](const PartTensor &a, const PartTensor &b) { return a.firstRow < b.firstRow; });
  const Tensor &first = pieces.front().tensor;
  const int64_t whole = pieces.front().rows;
  std::vector<int64_t> shape = first.shape;
  if (shape.empty())
    return fail(fmt::format("a part of tensor '{}' came as a scalar, not rows", first.name));
  const int64_t rowBytes = shape[0] > 0 ? static_cast<int64_t>(first.bytes.size()) / shape[0] : 0;
  Tensor joined{first.name, first.dtype, {}, {}};
  int64_t next = 0;
  for (PartTensor &piece : pieces) {
    const Tensor &t = piece.tensor;
    const bool sameRows =
        t.shape.size() == shape.size() && std::equal(t.shape.begin() + 1, t.shape.end(), shape.begin() + 1);
    if (piece.rows != whole || piece.firstRow != next || t.dtype != first.dtype || !sameRows ||
        t.shape[0] < 1 || static_cast<int64_t>(t.bytes.size()) != t.shape[0] * rowBytes)
      return fail(fmt::format("the parts of tensor '{}' do not tile its {} rows: one starts at row {} of {} "
                              "with {} rows where row {} was next (the ranks do not all run this version of "
                              "netc, or a message was damaged)",
                              first.name, whole, piece.firstRow, piece.rows, t.shape[0], next));
    joined.bytes.insert(joined.bytes.end(), t.bytes.begin(), t.bytes.end());
    next += t.shape[0];
  }
  if (next != whole)
    return fail(fmt::format("the parts of tensor '{}' hold rows 0 to {} of its {}: a part is missing",
                            first.name, next, whole));
  shape[0] = whole;
  joined.shape = std::move(shape);
  return joined;
}

} // namespace

Expected<SafetensorsFile> mergeStateTensors(std::vector<SafetensorsFile> parts) {
  std::vector<PartTensor> all;
  for (SafetensorsFile &part : parts) {
    auto text = part.metadataString(kNetworkOrderKey);
    const nlohmann::json order =
        text ? nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false) : nlohmann::json();
    if (!order.is_object() || order.size() != part.tensors.size())
      return fail(fmt::format("a stage's checkpoint tensors came without the order of their {} tensors",
                              part.tensors.size()));
    auto rowsText = part.metadataString(kPartRowsKey);
    const nlohmann::json rows = rowsText
                                    ? nlohmann::json::parse(*rowsText, nullptr, /*allow_exceptions=*/false)
                                    : nlohmann::json::object();
    if (!rows.is_object())
      return fail("a part's checkpoint tensors came with rows that are not an object");
    for (Tensor &tensor : part.tensors) {
      const auto index = order.find(tensor.name);
      if (index == order.end() || !index->is_number_integer())
        return fail(fmt::format("a stage's checkpoint tensor '{}' came without an integer order",
                                printableText(tensor.name.substr(0, 80))));
      PartTensor t{index->get<int>(), -1, 0, {}};
      if (const auto place = rows.find(tensor.name); place != rows.end()) {
        if (!place->is_array() || place->size() != 2 || !(*place)[0].is_number_integer() ||
            !(*place)[1].is_number_integer() || (*place)[0].get<int64_t>() < 0 ||
            (*place)[1].get<int64_t>() < 1)
          return fail(
              fmt::format("a part's checkpoint tensor '{}' came with rows that are not [first, whole]",
                          printableText(tensor.name.substr(0, 80))));
        t.firstRow = (*place)[0].get<int64_t>();
        t.rows = (*place)[1].get<int64_t>();
      }
      t.tensor = std::move(tensor);
      all.push_back(std::move(t));
    }
  }
  // The whole network's order, then by name (a parameter's values before its state); a split
  // tensor's parts, of one name, are joined in row order.
  std::stable_sort(all.begin(), all.end(), [](const PartTensor &a, const PartTensor &b) {
    return a.order != b.order ? a.order < b.order : a.tensor.name < b.tensor.name;
  });
  SafetensorsFile merged;
  for (size_t i = 0; i < all.size();) {
    size_t end = i + 1;
    while (end < all.size() && all[end].tensor.name == all[i].tensor.name)
      ++end;
    const std::string name = all[i].tensor.name;
    if (end == i + 1 && all[i].firstRow < 0) {
      merged.tensors.push_back(std::move(all[i].tensor));
      i = end;
      continue;
    }
    std::vector<PartTensor> same;
    for (size_t k = i; k < end; ++k) {
      if (all[k].firstRow < 0)
        return fail(fmt::format("tensor '{}' came twice from the ranks, or came whole and in parts",
                                printableText(name.substr(0, 80))));
      same.push_back(std::move(all[k]));
    }
    auto joined = joinRows(std::move(same));
    if (!joined)
      return joined.error();
    merged.tensors.push_back(std::move(*joined));
    i = end;
  }
  return merged;
}

Status writeCheckpoint(const std::string &path, SafetensorsFile file, const CheckpointInfo &info,
                       bool withOptimizerState) {
  file.metadata.clear();
  file.setMetadata("format", "netc-checkpoint");
  file.setMetadata("netc_version", kVersion);
  file.setMetadata("network", info.network);
  file.setMetadata("source_hash", info.sourceHash);
  file.setMetadata("optimizer", withOptimizerState ? info.optimizer : "");
  file.setMetadataInt("epoch", info.epoch);
  file.setMetadataInt("step", info.step);
  for (const auto &[key, value] : info.extra)
    file.setMetadata(key, value);
  return writeSafetensorsAtomic(path, file);
}

Status saveCheckpoint(const std::string &path, const plan::Plan &plan, const runtime::Backend &backend,
                      const CheckpointInfo &info, bool withOptimizerState) {
  auto tensors = stateTensors(plan, backend, withOptimizerState, info.optimizer);
  if (!tensors)
    return Error{tensors.message()};
  return writeCheckpoint(path, std::move(*tensors), info, withOptimizerState);
}

Status checkCheckpointFormat(const SafetensorsFile &file, const std::string &path) {
  auto format = file.metadataString("format");
  if (!format || *format != "netc-checkpoint")
    return fail(
        fmt::format("{}: not a netc checkpoint (its metadata has no \"format\": \"netc-checkpoint\")", path));
  return Status::success();
}

Expected<std::optional<int64_t>> checkpointCount(const SafetensorsFile &file, const std::string &path,
                                                 std::string_view key, int64_t min, int64_t max) {
  auto text = file.metadataString(key);
  if (!text)
    return std::optional<int64_t>();
  auto value = file.metadataInt(key);
  if (!value || *value < min || *value > max)
    return fail(fmt::format("{}: metadata \"{}\" is '{}', not an integer from {} to {} (the file is damaged "
                            "or was not written by netc train)",
                            path, key, printableText(text->substr(0, 40)), min, max));
  return std::optional<int64_t>(*value);
}

Expected<CheckpointInfo> loadCheckpoint(const std::string &path, const plan::Plan &plan,
                                        runtime::Backend &backend, bool withOptimizerState,
                                        std::string_view optimizer, const std::set<std::string> &keepAsIs,
                                        bool stageOnly) {
  auto file = readSafetensors(path);
  if (!file)
    return file.error();
  if (Status format = checkCheckpointFormat(*file, path); !format)
    return Error{format.message()};
  CheckpointInfo info;
  info.tensorsInFile = static_cast<int64_t>(file->tensors.size());
  for (const auto &[key, value] : file->metadata)
    info.extra[key] = value;
  info.network = info.extra["network"];
  info.sourceHash = info.extra["source_hash"];
  info.optimizer = info.extra["optimizer"];
  // Counts a run continues from: never negative (an epoch of -1 would make
  // a resumed run drop every line of its metrics file).
  for (auto [key, field] : {std::pair{"epoch", &info.epoch}, {"step", &info.step}}) {
    auto count = checkpointCount(*file, path, key, 0, std::numeric_limits<int64_t>::max());
    if (!count)
      return count.error();
    if (*count)
      *field = **count;
  }
  if (withOptimizerState && !optimizer.empty() && info.optimizer != optimizer)
    return fail(fmt::format("{} was trained with optimizer '{}'; resume it with --optimizer {}", path,
                            info.optimizer.empty() ? "none" : info.optimizer,
                            info.optimizer.empty() ? "sgd" : info.optimizer));
  const std::string ofNetwork = info.network.empty()
                                    ? std::string()
                                    : fmt::format(" (the checkpoint is of network '{}')", info.network);

  // Structure first: every parameter present with the right shape, no
  // extras; the first tensor that differs is named with both shapes.
  std::set<std::string> expected, states;
  for (const plan::Parameter &p : plan.parameters) {
    if (!isTensor(p))
      continue;
    const std::vector<int64_t> shape = tensorShape(p);
    expected.insert(p.name);
    for (int s = 0; s < optim::kMaxStateSlots; ++s)
      states.insert(stateName(p, static_cast<size_t>(s), info.optimizer));
    if (keepAsIs.count(p.name))
      continue;
    const Tensor *t = file->find(p.name);
    if (!t)
      return fail(fmt::format("{}: checkpoint of another network: tensor '{}' has shape {} in network '{}' "
                              "but is absent from the checkpoint{}",
                              path, p.name, shapeText(shape), plan.network, ofNetwork));
    if (t->shape != shape)
      return fail(fmt::format("{}: checkpoint of another network: tensor '{}' has shape {} in network '{}' "
                              "but {} in the checkpoint{}",
                              path, p.name, shapeText(shape), plan.network, shapeText(t->shape), ofNetwork));
    if (withOptimizerState)
      for (size_t s = 0; s < p.state.size(); ++s) {
        expected.insert(stateName(p, s, info.optimizer));
        if (!file->find(stateName(p, s, info.optimizer)))
          return fail(fmt::format("{}: it has no optimizer state '{}' (it was written with optimizer '{}'); "
                                  "resume with the same --optimizer and --momentum",
                                  path, stateName(p, s, info.optimizer),
                                  info.optimizer.empty() ? "none" : info.optimizer));
      }
  }
  for (const Tensor &t : file->tensors) {
    if (expected.count(t.name) || (!withOptimizerState && states.count(t.name))) {
      ++info.tensorsClaimed;
      continue;
    }
    if (stageOnly) // another stage's, or nobody's: the stages count what they claimed
      continue;
    if (!states.count(t.name))
      return fail(fmt::format("{}: checkpoint of another network: tensor '{}' has shape {} in the "
                              "checkpoint{} but is absent from network '{}'",
                              path, t.name, shapeText(t.shape), ofNetwork, plan.network));
    if (withOptimizerState)
      return fail(fmt::format("{}: it holds optimizer state '{}' that this run would drop (it was written "
                              "with optimizer '{}' and other settings); resume with the same --optimizer and "
                              "--momentum",
                              path, t.name, info.optimizer));
  }
  for (const plan::Parameter &p : plan.parameters) {
    if (!isTensor(p) || keepAsIs.count(p.name))
      continue;
    const std::vector<int64_t> shape = tensorShape(p);
    auto values = finiteValues(*file, path, p.name, shape, /*bounded=*/true);
    if (!values)
      return values.error();
    writeTensor(plan, backend, p, partRows(p, std::move(*values)),
                [](const plan::Parameter &q) { return q.buffer; });
    if (!withOptimizerState)
      continue;
    for (size_t s = 0; s < p.state.size(); ++s) {
      auto state = finiteValues(*file, path, stateName(p, s, info.optimizer), shape, /*bounded=*/false);
      if (!state)
        return state.error();
      writeTensor(plan, backend, p, partRows(p, std::move(*state)),
                  [s](const plan::Parameter &q) { return q.state[s]; });
    }
  }
  return info;
}

std::string hashSource(std::string_view text) {
  return fmt::format("{:016x}", fnv1a64(text));
}

} // namespace netc::train
