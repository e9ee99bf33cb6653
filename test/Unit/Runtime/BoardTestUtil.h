//===- BoardTestUtil.h - a file: store for the board tests ------*- C++ -*-===//

#ifndef RTXRT_TEST_UNIT_RUNTIME_BOARDTESTUTIL_H
#define RTXRT_TEST_UNIT_RUNTIME_BOARDTESTUTIL_H

#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>

#include <unistd.h>

namespace rtxrt::test {

/// A file: store in a temporary folder, removed at the end of the test.
struct StoreDir {
  std::filesystem::path path;
  explicit StoreDir(const std::string &name)
      : path(std::filesystem::temp_directory_path() /
             (name + "-" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~StoreDir() { std::filesystem::remove_all(path); }
  std::string store() const { return "file:" + path.string(); }
  /// The value a board of run `run` holds under `key`, read from its file
  /// (the boards' namespace: rtx-recover/RUN beside the store).
  std::optional<std::string> value(const std::string &run,
                                   const std::string &key) const {
    std::ifstream in(path / "rtx-recover" / run / key);
    if (!in)
      return std::nullopt;
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
};

} // namespace rtxrt::test

#endif // RTXRT_TEST_UNIT_RUNTIME_BOARDTESTUTIL_H
