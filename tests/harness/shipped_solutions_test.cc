// Every shipped solution (solutions/<challenge>/*.cu) compiles for its challenge with the
// judge's own compile path and matches the challenge's signature: on every machine that
// builds fp4arena, GPU or not, so that no rung of a ladder rots unnoticed between GPU runs.
// (Whether each one passes its tests is the GPU suites' job.)
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "harness/compile.h"
#include "harness/process.h"
#include "harness/spec.h"
#include "tests/test_util.h"

namespace fp4arena {
namespace {

using testing_util::binary_dir;
using testing_util::shipped_solutions;
using testing_util::source_dir;

// (challenge, file) for every solutions/<challenge>/<file>.cu.
std::vector<std::pair<std::string, std::string>> shipped() {
  std::vector<std::string> challenges;
  for (const auto& e : std::filesystem::directory_iterator(source_dir() + "/solutions")) {
    if (e.is_directory()) challenges.push_back(e.path().filename().string());
  }
  std::sort(challenges.begin(), challenges.end());
  std::vector<std::pair<std::string, std::string>> out;
  for (const std::string& ch : challenges) {
    for (const std::string& f : shipped_solutions(ch)) out.emplace_back(ch, f);
  }
  return out;
}

class ShippedSolution : public ::testing::TestWithParam<std::pair<std::string, std::string>> {};

TEST_P(ShippedSolution, CompilesForItsChallenge) {
  const auto& [challenge, file] = GetParam();
  if (find_nvcc().empty()) GTEST_SKIP() << "nvcc not found";
  Spec spec;
  std::string err;
  ASSERT_TRUE(load_spec(source_dir() + "/challenges/" + challenge, &spec, &err))
      << "solutions/" << challenge << "/ has no challenge of that name: " << err;
  CompileOptions opts;
  opts.cache_dir = binary_dir() + "/test-shipped-cache-" + challenge + "-" + file;
  CompileResult r;
  ASSERT_TRUE(
      compile_solution(spec, source_dir() + "/solutions/" + challenge + "/" + file, opts, &r, &err))
      << err;
  EXPECT_TRUE(r.ok) << r.diagnostics;
  EXPECT_FALSE(r.kernels.empty()) << "ptxas reported no kernel";
  std::string out;
  run_capture({"rm", "-rf", opts.cache_dir}, &out);
}

INSTANTIATE_TEST_SUITE_P(
    Solutions, ShippedSolution, ::testing::ValuesIn(shipped()),
    [](const ::testing::TestParamInfo<std::pair<std::string, std::string>>& info) {
      std::string n =
          info.param.first + "_" + info.param.second.substr(0, info.param.second.size() - 3);
      for (char& c : n) {
        if (!isalnum(static_cast<unsigned char>(c))) c = '_';
      }
      return n;
    });

}  // namespace
}  // namespace fp4arena
