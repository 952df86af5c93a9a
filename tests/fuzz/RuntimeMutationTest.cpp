// RuntimeMutationTest.cpp -- seeded mutation tests for everything the
// runtime reads from disk (docs/architecture.md §Error policy): IDX files (raw and gzipped),
// CSV files (with and without a UTF-8 byte-order mark), PGM and PNG images,
// netc checkpoints and the JSON metadata inside them, and cost tables
// (codegen/CostTable.h: as text, and as the files netc calibrate writes). Each
// mutant must either load or fail with a message; a crash, hang, leak or
// sanitizer report fails the test (it runs under ASan and UBSan in CI).
#include "codegen/CostTable.h"
#include "netc/Training.h"
#include "runtime/data/Csv.h"
#include "runtime/data/DataFolder.h"
#include "runtime/data/Images.h"
#include "runtime/data/Normalizer.h"
#include "runtime/data/Shuffle.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>

namespace fs = std::filesystem;

namespace {

std::vector<char> readBytes(const fs::path &path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void writeBytes(const fs::path &path, const std::vector<char> &bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::vector<char> gzip(const std::vector<char> &raw) {
  uLongf size = compressBound(raw.size()) + 32;
  std::vector<char> out(size);
  z_stream z{};
  deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
  z.next_in = reinterpret_cast<Bytef *>(const_cast<char *>(raw.data()));
  z.avail_in = static_cast<uInt>(raw.size());
  z.next_out = reinterpret_cast<Bytef *>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

/// One random change: flip bytes (mostly in the first `hot` bytes, where the
/// headers are), truncate, or append.
std::vector<char> mutate(std::vector<char> bytes, std::mt19937 &rng, size_t hot) {
  std::uniform_int_distribution<int> kind(0, 9);
  const int k = kind(rng);
  if (bytes.empty() || k == 0) {
    bytes.push_back(static_cast<char>(rng()));
    return bytes;
  }
  if (k == 1) {
    bytes.resize(std::uniform_int_distribution<size_t>(0, bytes.size() - 1)(rng));
    return bytes;
  }
  if (k == 2) {
    bytes.insert(bytes.end(), std::uniform_int_distribution<size_t>(1, 64)(rng), static_cast<char>(rng()));
    return bytes;
  }
  const int flips = std::uniform_int_distribution<int>(1, 4)(rng);
  for (int i = 0; i < flips; ++i) {
    size_t limit = k < 7 ? std::min(hot, bytes.size()) : bytes.size();
    size_t at = std::uniform_int_distribution<size_t>(0, limit - 1)(rng);
    bytes[at] = static_cast<char>(k % 2 ? rng() : bytes[at] ^ (1 << (rng() % 8)));
  }
  return bytes;
}

fs::path freshDir(const std::string &name) {
  fs::path dir = fs::path(::testing::TempDir()) / ("netc-runtime-mutation-" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

const fs::path kSlice = fs::path(NETC_SOURCE_DIR) / "tests/fixtures/mnist-slice";

} // namespace

TEST(RuntimeMutation, IdxFilesLoadOrFailWithAMessage) {
  const fs::path dir = freshDir("idx");
  const auto images = readBytes(kSlice / "t10k-images-idx3-ubyte");
  const auto labels = readBytes(kSlice / "t10k-labels-idx1-ubyte");
  ASSERT_FALSE(images.empty());
  std::mt19937 rng(20261121);
  int failures = 0;
  for (int i = 0; i < 600; ++i) {
    fs::remove_all(dir);
    fs::create_directories(dir);
    const bool zipped = i % 3 == 2;
    auto mutantImages = i % 2 ? mutate(images, rng, 16) : images;
    auto mutantLabels = i % 2 ? labels : mutate(labels, rng, 8);
    if (zipped) {
      mutantImages = mutate(gzip(images), rng, 32);
      writeBytes(dir / "train-images-idx3-ubyte.gz", mutantImages);
    } else {
      writeBytes(dir / "train-images-idx3-ubyte", mutantImages);
    }
    writeBytes(dir / "train-labels-idx1-ubyte", mutantLabels);
    auto loaded = netc::data::loadDataFolder(dir.string());
    if (!loaded) {
      ++failures;
      EXPECT_FALSE(loaded.message().empty());
      EXPECT_NE(loaded.message().find(dir.string()), std::string::npos) << loaded.message();
    } else {
      EXPECT_EQ(loaded->train.features.size(),
                static_cast<size_t>(loaded->train.count * loaded->train.featureCount));
    }
  }
  EXPECT_GT(failures, 100); // most mutants are refused
}

TEST(RuntimeMutation, CsvFilesLoadOrFailWithAMessage) {
  const fs::path dir = freshDir("csv");
  const std::string text = "label,a,b,c\n0,1.5,2,3\n1,-4,5e2,6\n0,7,8,9.25\n1,0,0,1\n";
  std::vector<char> bytes(text.begin(), text.end());
  std::mt19937 rng(7);
  for (int i = 0; i < 800; ++i) {
    writeBytes(dir / "train.csv", mutate(bytes, rng, bytes.size()));
    auto loaded = netc::data::loadDataFolder(dir.string());
    if (!loaded) {
      EXPECT_NE(loaded.message().find("train.csv"), std::string::npos) << loaded.message();
    } else {
      EXPECT_EQ(loaded->train.labels.size(), static_cast<size_t>(loaded->train.count));
    }
  }
}

TEST(RuntimeMutation, CsvFilesWithAByteOrderMarkLoadOrFailWithAMessage) {
  // As spreadsheets save "CSV UTF-8": a mark, then rows with and without a
  // header; read as a data folder and as predict reads rows (3 values, or a
  // label and 3).
  const fs::path dir = freshDir("csv-bom");
  std::mt19937 rng(12);
  for (const std::string text :
       {"\xEF\xBB\xBFlabel,a,b,c\n0,1.5,2,3\n1,-4,5e2,6\n", "\xEF\xBB\xBF"
                                                            "5,1,2,3\n1,1e30,-2,0\n2,0,0,1\n"}) {
    std::vector<char> bytes(text.begin(), text.end());
    for (int i = 0; i < 600; ++i) {
      const std::vector<char> mutant = mutate(bytes, rng, 12);
      writeBytes(dir / "train.csv", mutant);
      auto loaded = netc::data::loadDataFolder(dir.string());
      if (!loaded) {
        EXPECT_NE(loaded.message().find("train.csv"), std::string::npos) << loaded.message();
      } else {
        EXPECT_EQ(loaded->train.labels.size(), static_cast<size_t>(loaded->train.count));
        EXPECT_EQ(loaded->train.features.size(),
                  static_cast<size_t>(loaded->train.count * loaded->train.featureCount));
      }
      netc::data::CsvOptions rows;
      rows.unlabelledWidth = 3;
      auto parsed = netc::data::parseCsv(std::string_view(mutant.data(), mutant.size()), "rows.csv", rows);
      if (!parsed) {
        EXPECT_EQ(parsed.message().rfind("rows.csv", 0), 0u) << parsed.message();
      } else {
        EXPECT_EQ(parsed->features.size(), static_cast<size_t>(parsed->count * parsed->featureCount));
        EXPECT_TRUE(parsed->labels.empty() || parsed->labels.size() == static_cast<size_t>(parsed->count));
      }
    }
  }
}

TEST(RuntimeMutation, ImagesLoadOrFailWithAMessage) {
  // A 6x5 gradient as binary PGM, text PGM with a comment, and a PGM of
  // 16-bit pixels; every mutant loads with its pixels in [0, 255] or is
  // refused naming the file.
  const fs::path dir = freshDir("images");
  std::string p5 = "P5\n6 5\n200\n", p2 = "P2\n# made by hand\n6 5\n200\n", wide = "P5 6 5 1000\n";
  for (int i = 0; i < 30; ++i) {
    p5 += static_cast<char>(i * 6);
    p2 += std::to_string(i * 6) + (i % 6 == 5 ? "\n" : " ");
    wide += static_cast<char>((i * 30) >> 8);
    wide += static_cast<char>((i * 30) & 0xFF);
  }
  std::mt19937 rng(31);
  int refused = 0;
  for (const std::string &image : {p5, p2, wide})
    for (int i = 0; i < 400; ++i) {
      const fs::path path = dir / "mutant.pgm";
      writeBytes(path, mutate(std::vector<char>(image.begin(), image.end()), rng, 16));
      auto loaded = netc::data::loadImage(path.string());
      if (!loaded) {
        ++refused;
        EXPECT_NE(loaded.message().find("mutant.pgm"), std::string::npos) << loaded.message();
        continue;
      }
      EXPECT_EQ(loaded->pixels.size(), static_cast<size_t>(loaded->width * loaded->height));
      for (float v : loaded->pixels)
        ASSERT_TRUE(v >= 0.0f && v <= 255.0f) << v;
    }
  EXPECT_GT(refused, 100);
}

TEST(RuntimeMutation, MetadataJsonParsesOrFails) {
  netc::data::Dataset d;
  d.count = 2;
  d.featureCount = 3;
  d.features = {0, 1, 2, 3, 4, 5};
  d.labels = {0, 1};
  const std::string normalizer = netc::data::Normalizer::fit(netc::data::NormalizerKind::MinMax, d).toJson();
  const std::string shuffle = netc::data::ShuffleState{42, 3, 0}.toJson();
  std::mt19937 rng(11);
  for (const std::string &text : {normalizer, shuffle})
    for (int i = 0; i < 1000; ++i) {
      auto mutant = mutate(std::vector<char>(text.begin(), text.end()), rng, text.size());
      std::string_view view(mutant.data(), mutant.size());
      auto n = netc::data::Normalizer::fromJson(view);
      auto s = netc::data::ShuffleState::fromJson(view);
      if (!n) {
        EXPECT_FALSE(n.message().empty());
      }
      if (!s) {
        EXPECT_FALSE(s.message().empty());
      }
    }
}

TEST(RuntimeMutation, CheckpointsLoadOrFailWithAMessage) {
  // A real checkpoint of a small network trained for one epoch on a CSV set.
  const fs::path dir = freshDir("checkpoint");
  fs::create_directories(dir / "data");
  {
    std::ofstream csv(dir / "data/train.csv");
    for (int i = 0; i < 64; ++i)
      csv << (i % 3) << "," << i % 5 << "," << (i * 7) % 11 << "," << (i * 3) % 4 << "\n";
    std::ofstream net(dir / "tiny.net");
    net << "input X [3];\nhidden H [4] from X all;\noutput Y [3] from H all;\n";
  }
  netc::TrainSettings settings;
  settings.dataDir = (dir / "data").string();
  settings.epochs = 1;
  settings.batch = 8;
  settings.seed = 1;
  settings.threads = 1;
  settings.momentum = 0.9f;
  settings.outDir = (dir / "run").string();
  netc::TrainResult trained = netc::trainNetwork((dir / "tiny.net").string(), settings);
  ASSERT_TRUE(trained.ok()) << trained.error << trained.diagnostics;
  const auto checkpoint = readBytes(dir / "run/last.safetensors");
  ASSERT_GT(checkpoint.size(), 100u);
  std::mt19937 rng(5);
  int refused = 0;
  for (int i = 0; i < 300; ++i) {
    const fs::path mutant = dir / "mutant.safetensors";
    writeBytes(mutant, mutate(checkpoint, rng, 400));
    netc::ModelResult loaded = netc::Model::load((dir / "tiny.net").string(), mutant.string());
    if (!loaded.model) {
      ++refused;
      EXPECT_NE(loaded.error.find("mutant.safetensors"), std::string::npos) << loaded.error;
    } else {
      std::vector<float> features = {1, 2, 3};
      EXPECT_EQ(loaded.model->predict(features).size(), 3u);
    }
  }
  EXPECT_GT(refused, 50);
}

namespace {

/// One to three byte-level edits of `text`: flip a bit, overwrite a byte
/// (often with a JSON-significant one), insert, delete or duplicate a span,
/// or truncate.
std::string mutateText(std::string text, std::mt19937 &rng) {
  static constexpr char kSignificant[] = "{}[]:,\"\\-+.eE0123456789 \ntfn";
  const int edits = std::uniform_int_distribution<int>(1, 3)(rng);
  for (int e = 0; e < edits; ++e) {
    if (text.empty()) {
      text.push_back(kSignificant[rng() % (sizeof kSignificant - 1)]);
      continue;
    }
    auto at = [&](size_t limit) { return std::uniform_int_distribution<size_t>(0, limit)(rng); };
    const size_t pos = at(text.size() - 1);
    const size_t span = std::min(text.size() - pos, std::uniform_int_distribution<size_t>(1, 40)(rng));
    switch (rng() % 7) {
    case 0: text[pos] = static_cast<char>(text[pos] ^ (1 << (rng() % 8))); break;
    case 1: text[pos] = kSignificant[rng() % (sizeof kSignificant - 1)]; break;
    case 2: text[pos] = static_cast<char>(rng()); break;
    case 3: text.insert(pos, 1, kSignificant[rng() % (sizeof kSignificant - 1)]); break;
    case 4: text.erase(pos, span); break;
    case 5: text.insert(at(text.size()), text.substr(pos, span)); break;
    default: text.resize(pos); break;
    }
  }
  return text;
}

} // namespace

TEST(RuntimeMutation, CostTablesParseOrFailNamingTheFile) {
  const std::optional<netc::cost::CostTable> cpu = netc::cost::builtinCostTable("cpu");
  ASSERT_TRUE(cpu.has_value());
  const std::string text = netc::cost::costTableJson(*cpu);
  std::mt19937 rng(2026);
  int parsed = 0, refused = 0;
  for (int i = 0; i < 4000; ++i) {
    const std::string mutant = mutateText(text, rng);
    netc::Expected<netc::cost::CostTable> table = netc::cost::parseCostTable(mutant, "cost.json");
    if (!table) {
      ++refused;
      ASSERT_EQ(table.message().rfind("cost.json: ", 0), 0u) << table.message();
      ASSERT_LT(table.message().size(), 1000u) << table.message();
      continue;
    }
    ++parsed;
    // What was accepted is a whole table: every op, both links, sorted profiles.
    ASSERT_FALSE(table->profiles.empty());
    for (size_t p = 1; p < table->profiles.size(); ++p) {
      const auto &a = table->profiles[p - 1], &b = table->profiles[p];
      ASSERT_TRUE(a.ranks < b.ranks || (a.ranks == b.ranks && a.threads < b.threads));
    }
    for (const netc::cost::ComputeProfile &profile : table->profiles)
      for (const auto &[kind, rate] : profile.ops)
        ASSERT_TRUE(rate.rate > 0 && rate.overheadUs >= 0) << netc::plan::opName(kind);
    std::string note;
    EXPECT_GT(table->profileFor(3, &note).ops.size(), 0u);
    EXPECT_GE(table->linkFor(64).allReduceUs(1e6, 64), 0.0);
    // And writing it reads back to the same text.
    netc::Expected<netc::cost::CostTable> again =
        netc::cost::parseCostTable(netc::cost::costTableJson(*table), "again.json");
    ASSERT_TRUE(again.ok()) << again.message();
    EXPECT_EQ(netc::cost::costTableJson(*again), netc::cost::costTableJson(*table));
  }
  EXPECT_GT(parsed, 100);
  EXPECT_GT(refused, 1000);
}

TEST(RuntimeMutation, CostTableFilesReadOrFailNamingTheFile) {
  // The files netc calibrate writes (the built-in tables are such files),
  // damaged byte by byte and read as --cost-model reads them.
  const fs::path dir = freshDir("cost-table");
  std::mt19937 rng(2027);
  int refused = 0;
  for (const char *name : {"cpu", "h100"}) {
    const std::optional<netc::cost::CostTable> builtin = netc::cost::builtinCostTable(name);
    ASSERT_TRUE(builtin.has_value()) << name;
    const std::string text = netc::cost::costTableJson(*builtin);
    const std::vector<char> bytes(text.begin(), text.end());
    for (int i = 0; i < 500; ++i) {
      const fs::path path = dir / "table.json";
      writeBytes(path, mutate(bytes, rng, bytes.size()));
      netc::Expected<netc::cost::CostTable> table = netc::cost::readCostTable(path.string());
      if (!table) {
        ++refused;
        ASSERT_NE(table.message().find("table.json"), std::string::npos) << table.message();
        ASSERT_LT(table.message().size(), 1000u) << table.message();
        continue;
      }
      ASSERT_FALSE(table->profiles.empty());
      for (const netc::cost::ComputeProfile &profile : table->profiles)
        for (const auto &[kind, rate] : profile.ops)
          ASSERT_TRUE(rate.rate > 0 && rate.overheadUs >= 0) << netc::plan::opName(kind);
    }
  }
  EXPECT_GT(refused, 100);
}
