// run_challenge as a user runs it: options, messages and exit codes.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "harness/judge.h"
#include "tests/test_util.h"

namespace fp4arena {
namespace {

using testing_util::challenge_dir;
using testing_util::no_gpu_reason;
using testing_util::run_cli;
using testing_util::source_dir;

const std::string kNaive = source_dir() + "/solutions/nvfp4_matmul/naive.cu";

TEST(Cli, HelpListsActionsAndExitCodes) {
  auto r = run_cli({"--help"});
  EXPECT_EQ(r.exit_code, 0);
  for (const char* s : {"--solution", "--action", "--language", "check", "submit", "Exit codes"}) {
    EXPECT_NE(r.output.find(s), std::string::npos) << s;
  }
}

TEST(Cli, ListFindsTheChallenge) {
  auto r = run_cli({"--action", "list", source_dir() + "/challenges"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("nvfp4_matmul"), std::string::npos);
  EXPECT_NE(r.output.find("table5 (M=2048 N=18432 K=3072)"), std::string::npos) << r.output;
}

TEST(Cli, UsageErrorsNameTheArgument) {
  auto r = run_cli({challenge_dir(), "--solution", kNaive, "--action", "bogus"});
  EXPECT_EQ(r.exit_code, int(ExitCode::kUsage));
  EXPECT_NE(r.output.find("--action"), std::string::npos) << r.output;

  r = run_cli({challenge_dir(), "--solution", kNaive, "--language", "triton"});
  EXPECT_EQ(r.exit_code, int(ExitCode::kUsage));
  EXPECT_NE(r.output.find("--language: only 'cuda'"), std::string::npos) << r.output;

  r = run_cli({challenge_dir(), "--action", "check"});
  EXPECT_EQ(r.exit_code, int(ExitCode::kUsage));
  EXPECT_NE(r.output.find("--solution: missing"), std::string::npos) << r.output;

  r = run_cli({challenge_dir(), "--solution", "/nonexistent.cu", "--action", "check"});
  EXPECT_EQ(r.exit_code, int(ExitCode::kUsage));
  EXPECT_NE(r.output.find("/nonexistent.cu: cannot open"), std::string::npos) << r.output;

  r = run_cli({"/nonexistent", "--solution", kNaive, "--action", "check"});
  EXPECT_EQ(r.exit_code, int(ExitCode::kUsage));
  EXPECT_NE(r.output.find("/nonexistent/spec.json: cannot open"), std::string::npos) << r.output;

  r = run_cli({challenge_dir(), "--solution", kNaive, "--action", "run", "--case", "nope"});
  EXPECT_EQ(r.exit_code, int(ExitCode::kUsage));
  EXPECT_NE(r.output.find("--case: no case named 'nope'"), std::string::npos) << r.output;

  r = run_cli({challenge_dir(), "--solution", kNaive, "--device", "x"});
  EXPECT_EQ(r.exit_code, int(ExitCode::kUsage));
  EXPECT_NE(r.output.find("--device"), std::string::npos) << r.output;
}

TEST(Cli, MalformedSpecIsAUsageError) {
  std::string dir = ::testing::TempDir() + "/cli_bad_spec";
  std::string err;
  ASSERT_TRUE(make_dirs(dir, &err));
  std::ifstream in(challenge_dir() + "/spec.json");
  nlohmann::json doc = nlohmann::json::parse(in);
  doc["signature"]["params"][5]["compare"].erase("rtol");
  std::ofstream(dir + "/spec.json") << doc.dump();
  auto r = run_cli({dir, "--solution", kNaive, "--action", "check"});
  EXPECT_EQ(r.exit_code, int(ExitCode::kUsage));
  EXPECT_NE(r.output.find("field 'signature.params[5].compare.rtol': expected a number"),
            std::string::npos)
      << r.output;
}

TEST(Cli, CheckCompilesWithoutAGpu) {
  auto r = run_cli({challenge_dir(), "--solution", kNaive, "--action", "check"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("solve() matches the signature"), std::string::npos) << r.output;
}

TEST(Cli, CompileErrorsExitWithTheirOwnCode) {
  auto r = run_cli({challenge_dir(), "--solution",
                    source_dir() + "/tests/solutions/wrong_signature.cu", "--action", "check"});
  EXPECT_EQ(r.exit_code, int(ExitCode::kCompileError)) << r.output;
  EXPECT_NE(r.output.find("expected ("), std::string::npos) << r.output;
}

TEST(Cli, RunWithoutAGpuSaysSoAndStillChecks) {
  if (no_gpu_reason().empty())
    GTEST_SKIP() << "a GPU is present; this test is for machines without one";
  auto r = run_cli({challenge_dir(), "--solution", kNaive, "--action", "run"});
  EXPECT_EQ(r.exit_code, int(ExitCode::kNoGpu)) << r.output;
  EXPECT_NE(r.output.find("compile  ok"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("no CUDA GPU available"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace fp4arena

namespace fp4arena {
namespace {

TEST(Cli, NvccFlagsAreAllowListedAndKernelsAreReported) {
  using testing_util::challenge_dir;
  using testing_util::run_cli;
  const std::string naive = testing_util::source_dir() + "/solutions/nvfp4_matmul/naive.cu";
  auto r = run_cli({challenge_dir(), "--solution", naive, "--action", "check", "--nvcc-flag",
                    "-ccbin=/tmp/evil"});
  EXPECT_EQ(r.exit_code, int(ExitCode::kUsage)) << r.output;
  EXPECT_NE(r.output.find("-ccbin=/tmp/evil"), std::string::npos) << r.output;
  r = run_cli({challenge_dir(), "--solution", naive, "--action", "check", "--include-dir",
               "/nonexistent/include"});
  EXPECT_EQ(r.exit_code, int(ExitCode::kUsage)) << r.output;
  r = run_cli({challenge_dir(), "--solution", naive, "--action", "check", "--nvcc-flag",
               "-DFP4ARENA_TEST_FLAG=1", "--nvcc-flag", "-maxrregcount=128"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  // ptxas's resource report: the naive kernel's registers and shared memory.
  EXPECT_NE(r.output.find("regs"), std::string::npos) << r.output;
  r = run_cli({challenge_dir(), "--solution", testing_util::source_dir() + "/solutions", "--action",
               "check"});
  EXPECT_EQ(r.exit_code, int(ExitCode::kUsage)) << r.output;
  EXPECT_NE(r.output.find("is a folder"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace fp4arena

namespace fp4arena {
namespace {

TEST(Cli, PlantedCacheObjectIsNeverLoaded) {
  using testing_util::challenge_dir;
  using testing_util::run_cli;
  const std::string cache = ::testing::TempDir() + "/fp4arena-planted-cache";
  const std::string naive = testing_util::source_dir() + "/solutions/nvfp4_matmul/naive.cu";
  auto r =
      run_cli({challenge_dir(), "--solution", naive, "--action", "check", "--cache-dir", cache});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // Replace every cached object with other bytes, as another user's process might.
  std::string list;
  run_capture({"/bin/sh", "-c", "ls " + cache + "/*.so"}, &list);
  ASSERT_FALSE(list.empty());
  std::istringstream lines(list);
  std::string so;
  while (std::getline(lines, so)) {
    if (!so.empty()) std::ofstream(so, std::ios::trunc) << "planted";
  }
  r = run_cli({challenge_dir(), "--solution", naive, "--action", "check", "--cache-dir", cache});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("does not match the hash recorded when it was built; rebuilt"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("(cached)"), std::string::npos) << r.output;
  // A cache folder that is not a folder is a usage error.
  r = run_cli({challenge_dir(), "--solution", naive, "--action", "check", "--cache-dir", naive});
  EXPECT_EQ(r.exit_code, int(ExitCode::kUsage)) << r.output;
}

}  // namespace
}  // namespace fp4arena

namespace fp4arena {
namespace {

TEST(Cli, OutputNeverReplacesAFileThatIsNotARecord) {
  using testing_util::challenge_dir;
  using testing_util::run_cli;
  const std::string naive = testing_util::source_dir() + "/solutions/nvfp4_matmul/naive.cu";
  const std::string victim = ::testing::TempDir() + "/not-a-record.cu";
  std::ofstream(victim) << "int main() {}\n";
  auto r =
      run_cli({challenge_dir(), "--solution", naive, "--action", "submit", "--output", victim});
  EXPECT_EQ(r.exit_code, int(ExitCode::kUsage)) << r.output;
  EXPECT_NE(r.output.find("not an fp4arena submit record; refusing to replace it"),
            std::string::npos)
      << r.output;
  std::string kept;
  std::string ignored;
  ASSERT_TRUE(read_file(victim, &kept, &ignored));
  EXPECT_EQ(kept, "int main() {}\n");
  r = run_cli({challenge_dir(), "--solution", naive, "--action", "submit", "--output",
               "/nonexistent-dir/record.json"});
  EXPECT_EQ(r.exit_code, int(ExitCode::kUsage)) << r.output;
}

}  // namespace
}  // namespace fp4arena
