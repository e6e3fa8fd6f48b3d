// --action sanitize and --action profile on a GPU (ctest label "gpu"). Each test skips
// without a GPU, and says so when the tool itself is missing.
#include <gtest/gtest.h>

#include "harness/judge.h"
#include "harness/tools.h"
#include "tests/test_util.h"

namespace fp4arena {
namespace {

using testing_util::challenge_dir;
using testing_util::no_gpu_reason;
using testing_util::run_cli;
using testing_util::source_dir;

TEST(GpuTools, SanitizeCleanSolution) {
  FP4ARENA_SKIP_WITHOUT_GPU();
  if (find_tool("compute-sanitizer").empty()) GTEST_SKIP() << "compute-sanitizer not installed";
  auto r =
      run_cli({challenge_dir(), "--solution", source_dir() + "/solutions/nvfp4_matmul/naive.cu",
               "--action", "sanitize", "--case", "example", "--case", "tails_77x135x48"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("memcheck: 0 errors"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("racecheck: 0 errors"), std::string::npos) << r.output;
}

TEST(GpuTools, SanitizeNamesAnInvalidWrite) {
  FP4ARENA_SKIP_WITHOUT_GPU();
  if (find_tool("compute-sanitizer").empty()) GTEST_SKIP() << "compute-sanitizer not installed";
  auto r = run_cli({challenge_dir(), "--solution", source_dir() + "/tests/solutions/wild_write.cu",
                    "--action", "sanitize", "--case", "example"});
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("Invalid __global__ write"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("wild"), std::string::npos) << r.output;
}

TEST(GpuTools, ProfileSummarisesTheKernels) {
  FP4ARENA_SKIP_WITHOUT_GPU();
  if (find_tool("ncu").empty()) GTEST_SKIP() << "ncu (Nsight Compute) not installed";
  auto r =
      run_cli({challenge_dir(), "--solution", source_dir() + "/solutions/nvfp4_matmul/naive.cu",
               "--action", "profile", "--case", "rev1"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("the profiled call's output: passed"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("nvfp4_matmul_naive"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("tensor %"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace fp4arena
