// A solution built on CUTLASS's CuTe headers is compiled and judged like any other (ctest
// label "gpu"). CUTLASS is not a dependency: the test runs where FP4ARENA_CUTLASS_DIR names a
// CUTLASS checkout (v4.x; its include/ folder is what the solution needs) and skips, saying
// so, where it does not.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <string>

#include "harness/judge.h"
#include "tests/test_util.h"

namespace fp4arena {
namespace {

using testing_util::challenge_dir;
using testing_util::no_gpu_reason;
using testing_util::run_cli;
using testing_util::source_dir;

TEST(GpuCute, ACuteSolutionPassesEveryTest) {
  FP4ARENA_SKIP_WITHOUT_GPU();
  const char* cutlass = std::getenv("FP4ARENA_CUTLASS_DIR");
  struct stat st;
  if (!cutlass || !*cutlass)
    GTEST_SKIP() << "FP4ARENA_CUTLASS_DIR is not set (a CUTLASS v4 checkout: git clone "
                    "https://github.com/NVIDIA/cutlass)";
  const std::string include = std::string(cutlass) + "/include";
  if (stat((include + "/cute/tensor.hpp").c_str(), &st) != 0)
    GTEST_SKIP() << "FP4ARENA_CUTLASS_DIR has no include/cute/tensor.hpp: " << cutlass;
  auto r = run_cli({challenge_dir(), "--solution",
                    source_dir() + "/tests/solutions/cute/nvfp4_matmul_cute.cu", "--action", "test",
                    "--include-dir", include, "--nvcc-flag=--expt-relaxed-constexpr"});
  EXPECT_EQ(r.exit_code, int(ExitCode::kPassed)) << r.output;
  EXPECT_NE(r.output.find("cute/tensor.hpp"), std::string::npos) << "headers listed\n" << r.output;
}

}  // namespace
}  // namespace fp4arena
