// Images.cpp -- PGM and PNG readers for prediction inputs (Images.h). Sizes
// are checked against the file before anything is allocated, and images
// larger than 16384 pixels a side are refused.
#include "runtime/data/Images.h"

#include "support/PrintableText.h"

#include <fmt/format.h>
#include <png.h>

#include <cctype>
#include <charconv>
#include <csetjmp>
#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
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

/// The next token of a PGM header or of ASCII pixels, skipping whitespace
/// and # comments: the bytes up to the next whitespace or '#'; empty at the
/// end of the file.
std::string_view nextToken(const std::string &text, size_t &pos) {
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
  const size_t start = pos;
  while (pos < text.size() && !std::isspace(static_cast<unsigned char>(text[pos])) && text[pos] != '#')
    ++pos;
  return std::string_view(text).substr(start, pos - start);
}

/// `token` as a decimal number (digits only); nothing when it is not one or
/// does not fit in 64 bits.
std::optional<uint64_t> tokenValue(std::string_view token) {
  uint64_t value = 0;
  const char *first = token.data(), *last = first + token.size();
  auto [end, error] = std::from_chars(first, last, value);
  if (token.empty() || error != std::errc() || end != last)
    return std::nullopt;
  return value;
}

/// `token` for a message: control bytes escaped, at most 20 bytes.
std::string shownToken(std::string_view token) {
  return printableText(token.substr(0, 20)) + (token.size() > 20 ? "..." : "");
}

Expected<Image> parsePgm(const std::string &path, const std::string &text) {
  const bool binary = text[1] == '5';
  size_t pos = 2;
  static constexpr const char *kFields[] = {"width", "height", "maximum value"};
  uint64_t fields[3] = {};
  std::string_view written[3];
  for (int f = 0; f < 3; ++f) {
    written[f] = nextToken(text, pos);
    if (written[f].empty())
      return fail(fmt::format("{}: malformed PGM header: it ends before its {} (expected width, height and "
                              "maximum value)",
                              path, kFields[f]));
    auto value = tokenValue(written[f]);
    if (!value)
      return fail(fmt::format("{}: malformed PGM header: its {} is '{}', not a number", path, kFields[f],
                              shownToken(written[f])));
    fields[f] = *value;
  }
  const uint64_t width = fields[0], height = fields[1], maxValue = fields[2];
  if (width == 0 || height == 0 || width > uint64_t(kMaxSide) || height > uint64_t(kMaxSide) ||
      maxValue == 0 || maxValue > 65535)
    return fail(
        fmt::format("{}: PGM size {}×{} with maximum {} is not supported (sides 1 to {}, maximum 1 to 65535)",
                    path, shownToken(written[0]), shownToken(written[1]), shownToken(written[2]), kMaxSide));
  Image image{int64_t(height), int64_t(width), {}};
  const int64_t count = int64_t(width * height);
  const int bytesPerPixel = maxValue > 255 ? 2 : 1;
  auto aboveMaximum = [&](int64_t i, uint64_t v) {
    return fail(fmt::format("{}: pixel {} (row {}, column {}) is {}, above the maximum value {} of its PGM "
                            "header",
                            path, i, i / int64_t(width), i % int64_t(width), v, maxValue));
  };
  image.pixels.reserve(static_cast<size_t>(count));
  if (binary) {
    ++pos; // the single whitespace after the maximum
    if (text.size() < pos || int64_t(text.size() - pos) < count * bytesPerPixel)
      return fail(fmt::format("{}: truncated PGM: {}×{} pixels need {} bytes, the file has {}", path, width,
                              height, count * bytesPerPixel, text.size() > pos ? text.size() - pos : 0));
    for (int64_t i = 0; i < count; ++i) {
      const auto *p = reinterpret_cast<const unsigned char *>(text.data() + pos + i * bytesPerPixel);
      const uint64_t v = bytesPerPixel == 2 ? uint64_t(p[0] << 8 | p[1]) : p[0];
      if (v > maxValue)
        return aboveMaximum(i, v);
      image.pixels.push_back(float(v) * 255.0f / float(maxValue));
    }
    return image;
  }
  for (int64_t i = 0; i < count; ++i) {
    const std::string_view token = nextToken(text, pos);
    if (token.empty())
      return fail(fmt::format("{}: truncated PGM: expected {} pixel values, found {}", path, count, i));
    auto v = tokenValue(token);
    if (!v)
      return fail(fmt::format("{}: pixel {} (row {}, column {}) is '{}', not a number", path, i,
                              i / int64_t(width), i % int64_t(width), shownToken(token)));
    if (*v > maxValue)
      return aboveMaximum(i, *v);
    image.pixels.push_back(float(*v) * 255.0f / float(maxValue));
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
