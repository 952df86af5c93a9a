// Idx.h -- the IDX reader (the MNIST file format: a big-endian magic number
// naming the element type and rank, the dimensions, then the elements). Reads
// an images file (unsigned bytes, rank 3) and a labels file (unsigned bytes,
// rank 1), raw or gzip-compressed (recognised by content, not by name), and
// checks everything before it allocates: magic, dimensions, the header's
// claimed size against the file's real (decompressed) length and the memory
// limit, and that the two files hold the same number of samples.
#pragma once

#include "runtime/data/Dataset.h"
#include "support/Status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace netc::data {

/// IDX magic numbers: 0x08 = unsigned byte elements, low byte = rank.
inline constexpr uint32_t kIdxImagesMagic = 0x00000803;
inline constexpr uint32_t kIdxLabelsMagic = 0x00000801;

/// The contents of one IDX file of unsigned bytes.
struct IdxArray {
  /// The dimensions; dims[0] is the number of samples.
  std::vector<int64_t> dims;
  /// The elements, row-major.
  std::vector<uint8_t> bytes;
};

/// Reads an IDX file of unsigned bytes with the given magic number (whose low
/// byte is the rank). Refuses a wrong magic, a zero dimension, a header that
/// claims more or fewer bytes than the file holds (for gzip, more than its
/// compressed size can hold), data that would not fit `memoryLimit` bytes
/// as bytes and floats (5 bytes an element; 0: machineMemoryBytes()), or a
/// corrupt gzip stream; allocates no more than the file really holds.
Expected<IdxArray> readIdxFile(const std::string &path, uint32_t expectedMagic, uint64_t memoryLimit = 0);

/// Loads an images file and its labels file into a Dataset: features are the
/// pixels as floats 0..255, sampleShape the image dimensions (e.g. {28, 28}).
/// `memoryLimit` as for readIdxFile.
Expected<Dataset> loadIdx(const std::string &imagesPath, const std::string &labelsPath,
                          uint64_t memoryLimit = 0);

/// The path of `baseName` (e.g. "train-images-idx3-ubyte") in `dir`: the raw
/// file when it exists, else `baseName.gz`, else an empty string.
std::string findIdxFile(const std::string &dir, const std::string &baseName);

} // namespace netc::data
