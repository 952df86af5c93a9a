// Images.cpp -- PGM and PNG readers for prediction inputs (Images.h). Sizes
// are checked against the file before anything is allocated, and images
// larger than 16384 pixels a side are refused.
#include "runtime/data/Images.h"

#include <fmt/format.h>
#include <png.h>

#include <cctype>
#include <csetjmp>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>

namespace netc::data {

namespace {

constexpr int64_t kMaxSide = 16384;

Expected<std::string> readAll(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return fail(fmt::format("cannot read '{}': {}", path, std::strerror(errno)));
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

/// Reads the next PGM header token (skipping whitespace and # comments).
bool nextToken(const std::string &text, size_t &pos, int64_t &value) {
  while (pos < text.size()) {
    if (text[pos] == '#') {
      while (pos < text.size() && text[pos] != '\n')
        ++pos;
    } else if (std::isspace(static_cast<unsigned char>(text[pos]))) {
      ++pos;
    } else {
      break;
    }
  }
  size_t start = pos;
  value = 0;
  while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos])) && pos - start < 9)
    value = value * 10 + (text[pos++] - '0');
  return pos > start;
}

Expected<Image> parsePgm(const std::string &path, const std::string &text) {
  const bool binary = text[1] == '5';
  size_t pos = 2;
  int64_t width = 0, height = 0, maxValue = 0;
  if (!nextToken(text, pos, width) || !nextToken(text, pos, height) || !nextToken(text, pos, maxValue))
    return fail(fmt::format("{}: malformed PGM header (expected width, height and maximum value)", path));
  if (width <= 0 || height <= 0 || width > kMaxSide || height > kMaxSide || maxValue <= 0 || maxValue > 65535)
    return fail(
        fmt::format("{}: PGM size {}×{} with maximum {} is not supported (sides 1 to {}, maximum 1 to 65535)",
                    path, width, height, maxValue, kMaxSide));
  Image image{height, width, {}};
  const int64_t count = width * height;
  const int bytesPerPixel = maxValue > 255 ? 2 : 1;
  if (binary) {
    ++pos; // the single whitespace after the maximum
    if (text.size() < pos || int64_t(text.size() - pos) < count * bytesPerPixel)
      return fail(fmt::format("{}: truncated PGM: {}×{} pixels need {} bytes, the file has {}", path, width,
                              height, count * bytesPerPixel, text.size() > pos ? text.size() - pos : 0));
    image.pixels.resize(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i) {
      const auto *p = reinterpret_cast<const unsigned char *>(text.data() + pos + i * bytesPerPixel);
      int v = bytesPerPixel == 2 ? (p[0] << 8 | p[1]) : p[0];
      image.pixels[static_cast<size_t>(i)] = float(v) * 255.0f / float(maxValue);
    }
    return image;
  }
  image.pixels.reserve(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    int64_t v = 0;
    if (!nextToken(text, pos, v))
      return fail(fmt::format("{}: truncated PGM: expected {} pixel values, found {}", path, count, i));
    image.pixels.push_back(float(std::min(v, maxValue)) * 255.0f / float(maxValue));
  }
  return image;
}

struct PngReader {
  png_structp png = nullptr;
  png_infop info = nullptr;
  ~PngReader() { png_destroy_read_struct(&png, info ? &info : nullptr, nullptr); }
};

struct PngSource {
  const std::string *text;
  size_t pos;
};

void readPngData(png_structp png, png_bytep out, png_size_t length) {
  auto *src = static_cast<PngSource *>(png_get_io_ptr(png));
  if (src->pos + length > src->text->size())
    png_error(png, "the file ends early");
  std::memcpy(out, src->text->data() + src->pos, length);
  src->pos += length;
}

void pngErrorToMessage(png_structp png, png_const_charp message) {
  auto *error = static_cast<std::string *>(png_get_error_ptr(png));
  *error = message;
  png_longjmp(png, 1);
}

void pngWarning(png_structp, png_const_charp) {}

Expected<Image> parsePng(const std::string &path, const std::string &text) {
  std::string error;
  PngReader r;
  r.png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &error, pngErrorToMessage, pngWarning);
  if (!r.png)
    return fail(fmt::format("{}: cannot start the PNG reader", path));
  r.info = png_create_info_struct(r.png);
  PngSource source{&text, 0};
  std::vector<png_byte> pixels;
  std::vector<png_bytep> rows;
  png_uint_32 width = 0, height = 0;
  if (setjmp(png_jmpbuf(r.png)))
    return fail(fmt::format("{}: not a readable PNG image: {}", path, error));
  png_set_read_fn(r.png, &source, readPngData);
  png_set_user_limits(r.png, kMaxSide, kMaxSide);
  png_read_info(r.png, r.info);
  width = png_get_image_width(r.png, r.info);
  height = png_get_image_height(r.png, r.info);
  png_set_expand(r.png);
  png_set_strip_16(r.png);
  png_set_strip_alpha(r.png);
  if (png_get_color_type(r.png, r.info) & PNG_COLOR_MASK_COLOR)
    png_set_rgb_to_gray_fixed(r.png, 1, -1, -1);
  png_read_update_info(r.png, r.info);
  if (png_get_channels(r.png, r.info) != 1 || png_get_bit_depth(r.png, r.info) != 8)
    return fail(fmt::format("{}: unsupported PNG pixel format", path));
  pixels.resize(size_t(width) * height);
  rows.resize(height);
  for (png_uint_32 y = 0; y < height; ++y)
    rows[y] = pixels.data() + size_t(y) * width;
  png_read_image(r.png, rows.data());
  Image image{int64_t(height), int64_t(width), std::vector<float>(pixels.begin(), pixels.end())};
  return image;
}

} // namespace

Expected<Image> loadImage(const std::string &path) {
  auto text = readAll(path);
  if (!text)
    return text.error();
  if (text->size() >= 2 && (*text)[0] == 'P' && ((*text)[1] == '5' || (*text)[1] == '2'))
    return parsePgm(path, *text);
  if (text->size() >= 8 && png_sig_cmp(reinterpret_cast<png_const_bytep>(text->data()), 0, 8) == 0)
    return parsePng(path, *text);
  return fail(fmt::format("{}: not a PGM (P5/P2) or PNG image", path));
}

} // namespace netc::data
