// --action sanitize and --action profile on a GPU (ctest label "gpu"). Each test skips
// without a GPU, and says so when the tool itself is missing.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

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
  const std::string out = testing_util::binary_dir() + "/profile-test";
  std::remove((out + "/rev1.ncu-rep").c_str());
  auto r =
      run_cli({challenge_dir(), "--solution", source_dir() + "/solutions/nvfp4_matmul/naive.cu",
               "--action", "profile", "--case", "rev1", "--out", out});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("the profiled call's output: passed"), std::string::npos) << r.output;
  // --out keeps ncu's own report beside the summary, for Nsight Compute's UI.
  EXPECT_NE(r.output.find("report   " + out + "/rev1.ncu-rep"), std::string::npos) << r.output;
  std::ifstream rep(out + "/rev1.ncu-rep", std::ios::binary);
  EXPECT_TRUE(rep.good()) << out << "/rev1.ncu-rep was not written";
  EXPECT_NE(r.output.find("nvfp4_matmul_naive"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("tensor %"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("issue %"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("L2 %"), std::string::npos) << r.output;
  // The kernel's row names its largest stall reasons (ncu's WarpStateStats), not "n/a".
  const size_t table = r.output.find("top stalls");
  ASSERT_NE(table, std::string::npos) << r.output;
  const size_t at = r.output.find("nvfp4_matmul_naive", table);  // past the compile table
  ASSERT_NE(at, std::string::npos) << r.output;
  const std::string row = r.output.substr(at, r.output.find('\n', at) - at);
  EXPECT_NE(row.substr(row.size() >= 3 ? row.size() - 3 : 0), "n/a") << row;
  EXPECT_TRUE(row.find("scoreboard") != std::string::npos ||
              row.find("wait") != std::string::npos || row.find("throttle") != std::string::npos ||
              row.find("barrier") != std::string::npos ||
              row.find("not_selected") != std::string::npos)
      << row;
}

}  // namespace
}  // namespace fp4arena
