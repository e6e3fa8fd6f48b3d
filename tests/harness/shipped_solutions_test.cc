// Every shipped solution (solutions/<challenge>/*.cu) compiles for its challenge with the
// judge's own compile path and matches the challenge's signature: on every machine that
// builds fp4arena, GPU or not, so that no rung of a ladder rots unnoticed between GPU runs.
// (Whether each one passes its tests is the GPU suites' job.)
#include <dirent.h>
#include <gtest/gtest.h>

#include <algorithm>
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
using testing_util::source_dir;

std::vector<std::string> entries(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = opendir(dir.c_str());
  if (!d) return out;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] != '.') out.push_back(e->d_name);
  }
  closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

// (challenge, file) for every solutions/<challenge>/<file>.cu.
std::vector<std::pair<std::string, std::string>> shipped() {
  std::vector<std::pair<std::string, std::string>> out;
  for (const std::string& ch : entries(source_dir() + "/solutions")) {
    for (const std::string& f : entries(source_dir() + "/solutions/" + ch)) {
      if (f.size() > 3 && f.compare(f.size() - 3, 3, ".cu") == 0) out.emplace_back(ch, f);
    }
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
