// Shared helpers for fp4arena's tests: repository paths and running the CLI.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "harness/process.h"

namespace fp4arena::testing_util {

inline std::string source_dir() {
  return FP4ARENA_SOURCE_DIR;
}
inline std::string binary_dir() {
  return FP4ARENA_BINARY_DIR;
}
inline std::string run_challenge_bin() {
  return binary_dir() + "/run_challenge";
}
/// The flagship challenge's folder (the tests that exercise its cases use it).
inline std::string challenge_dir() {
  return source_dir() + "/challenges/nvfp4_matmul";
}
/// The test-only challenge with two outputs, a tie mask and a GB/s metric.
inline std::string toy_challenge_dir() {
  return source_dir() + "/tests/challenges/toy_quantize";
}
inline std::string worker_bin() {
  return binary_dir() + "/fp4arena_worker";
}

/// The file names of the shipped solutions of `challenge` (solutions/<challenge>/*.cu), sorted;
/// empty when the folder does not exist.
inline std::vector<std::string> shipped_solutions(const std::string& challenge) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e :
       std::filesystem::directory_iterator(source_dir() + "/solutions/" + challenge, ec)) {
    if (e.path().extension() == ".cu") out.push_back(e.path().filename().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

/// The committed record of `rung` in results/<challenge>/<device>/ (the first whose name starts
/// with "<rung>-"; its hash changes with every re-record), or "" when there is none.
inline std::string committed_record_file(const std::string& challenge, const std::string& device,
                                         const std::string& rung) {
  std::error_code ec;
  const std::filesystem::path dir =
      std::filesystem::path(source_dir()) / "results" / challenge / device;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(rung + "-", 0) == 0 && e.path().extension() == ".json") return e.path().string();
  }
  return "";
}

struct CliResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

/// Runs run_challenge with `args` (no shell), with the compile cache inside the build tree.
inline CliResult run_cli(const std::vector<std::string>& args) {
  if (!std::getenv("FP4ARENA_CACHE_DIR")) {
    setenv("FP4ARENA_CACHE_DIR", (binary_dir() + "/solution-cache").c_str(), 1);
  }
  std::vector<std::string> argv = {run_challenge_bin()};
  argv.insert(argv.end(), args.begin(), args.end());
  argv.push_back("--no-progress");
  CliResult r;
  r.exit_code = run_capture(argv, &r.output);
  return r;
}

/// Empty when a CUDA GPU is usable; otherwise the reason, for GTEST_SKIP().
inline std::string no_gpu_reason() {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) return std::string("no CUDA GPU available: ") + cudaGetErrorString(e);
  if (n == 0) return "no CUDA GPU available: the driver reports no devices";
  return "";
}

}  // namespace fp4arena::testing_util

/// Skips the current test, with the reason, where no CUDA GPU is usable.
#define FP4ARENA_SKIP_WITHOUT_GPU()                                       \
  do {                                                                    \
    std::string fp4arena_why = ::fp4arena::testing_util::no_gpu_reason(); \
    if (!fp4arena_why.empty()) GTEST_SKIP() << fp4arena_why;              \
  } while (0)
