// Images.h -- single images as prediction inputs (`netc predict`): binary or
// text PGM (P5/P2) and PNG (via libpng: palette, colour and 16-bit images are
// converted to 8-bit grey). Pixels become floats 0..255, row-major, like
// IDX images, so the network's normaliser applies unchanged.
#pragma once

#include "support/Status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace netc::data {

struct Image {
  int64_t height = 0, width = 0;
  std::vector<float> pixels; // height × width, 0..255
};

/// Reads a PGM or PNG file (by its content); errors name the file and say
/// what is wrong.
Expected<Image> loadImage(const std::string &path);

} // namespace netc::data
