// SourceFiles.h -- what every test executable that reads the source tree
// shares: paths under NETC_SOURCE_DIR (set by CMake, or given at run time),
// whole-file reads, and
// the examples/*.net corpus as GoogleTest parameters.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace netc::testfiles {

/// Where the source tree is when not where CMake found it (a test binary
/// moved to another machine, e.g. in scripts/gpu_check.sh's bundle, which
/// passes --source-dir); empty: NETC_SOURCE_DIR.
inline std::string &sourceRootOverride() {
  static std::string root;
  return root;
}

/// The path of a file in the source tree.
inline std::string sourcePath(std::string_view relative) {
  const std::string &root = sourceRootOverride();
  return (root.empty() ? std::string(NETC_SOURCE_DIR) : root) + "/" + std::string(relative);
}

/// The whole text of a file; fails the test if it cannot be read.
inline std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot read " << path;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

/// The file names of examples/*.net, sorted (parameters of the corpus tests).
inline std::vector<std::string> exampleNames() {
  std::vector<std::string> names;
  for (const auto &entry : std::filesystem::directory_iterator(sourcePath("examples")))
    if (entry.is_regular_file() && entry.path().extension() == ".net")
      names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

/// A GoogleTest name for an example file: "mnist-no-padding.net" -> "mnist_no_padding".
inline std::string exampleTestName(const ::testing::TestParamInfo<std::string> &info) {
  std::string name = info.param.substr(0, info.param.size() - 4);
  std::replace_if(
      name.begin(), name.end(), [](char ch) { return !std::isalnum(static_cast<unsigned char>(ch)); }, '_');
  return name;
}

} // namespace netc::testfiles
