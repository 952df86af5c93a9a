// FixedOrderSum.h -- the gradient sum of `--deterministic`: bit-identical
// at any power-of-two rank count that divides the number of chunks. A
// step's samples are K fixed chunks (K a power of two; the chunk is the
// global batch / K); each chunk's gradient is computed alone and the K are
// added in one fixed balanced tree: leaf pairs, then pairs of pairs. Rank r
// of R owns the consecutive leaves [r·K/R, (r+1)·K/R), a whole subtree, so it
// adds them exactly as the tree does; the R subtree sums are all-gathered
// and every rank adds them up the same tree. Float addition is commutative,
// so only the tree's shape matters, and it is the same for every R: the
// sum, and so the weights, are the same bits. Leaves past the step's last
// chunk (a short last step) are zeros, which add exactly.
#pragma once

#include "runtime/comm/Communicator.h"
#include "support/Status.h"

#include <cstdint>
#include <span>
#include <vector>

namespace netc::train {

/// Adds `leaves` (a power of two of equal-length arrays) pairwise, level by
/// level, into leaves[0]; the others are overwritten.
void addPairwise(std::vector<std::span<float>> leaves);

class FixedOrderSum {
public:
  /// Sums of `elements` floats over `chunks` leaves, of which rank `rank` of
  /// `ranks` owns chunks [first(), end()). `chunks` is a power of two that
  /// `ranks` (a power of two) divides.
  FixedOrderSum(int64_t elements, int chunks, int rank, int ranks);
  int first() const { return first_; }
  int end() const { return end_; }
  /// The buffer of owned chunk `chunk` (zeros until written).
  std::span<float> leaf(int chunk);
  /// Zeros every owned leaf (a new step).
  void reset();
  /// The sum of every rank's leaves into `out`, the same bits on every rank.
  Status sum(comm::Communicator *comm, std::span<float> out);

private:
  int64_t elements_;
  int ranks_, first_, end_;
  std::vector<std::vector<float>> leaves_;
  std::vector<float> roots_; // every rank's subtree sum, gathered
};

} // namespace netc::train
