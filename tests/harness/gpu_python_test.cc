// Python solutions judged on a GPU through the Python worker (python3 hosting the CUDA
// worker's protocol): the bundled PyTorch solution passes the flagship's tests and is timed
// by the judge's clock; the Python fixtures get the verdicts their CUDA counterparts get.
#include <gtest/gtest.h>

#include <sstream>

#include "harness/judge.h"
#include "harness/process.h"
#include "harness/python_solution.h"
#include "tests/test_util.h"

namespace fp4arena {
namespace {

using testing_util::binary_dir;
using testing_util::challenge_dir;
using testing_util::source_dir;

// Empty when this machine's python3 imports torch; otherwise why not.
std::string no_torch_reason() {
  std::string out;
  const int rc = run_capture({python_program(), "-I", "-c", "import torch"}, &out);
  return rc == 0 ? "" : python_program() + " cannot import torch: " + out;
}

#define SKIP_WITHOUT_GPU_AND_TORCH()           \
  do {                                         \
    FP4ARENA_SKIP_WITHOUT_GPU();               \
    const std::string why = no_torch_reason(); \
    if (!why.empty()) GTEST_SKIP() << why;     \
  } while (0)

JudgeOutcome judge_python(const std::string& path, Action action, std::string* log,
                          std::vector<std::string> cases = {},
                          const std::string& challenge = challenge_dir()) {
  JudgeOptions o;
  o.challenge_dir = challenge;
  o.solution_path = path;
  o.action = action;
  o.cases = std::move(cases);
  o.progress = false;
  o.max_samples = 3;
  o.output_path = ::testing::TempDir() + "/python-solution.json";
  std::ostringstream os;
  JudgeOutcome r = judge(o, os);
  *log = os.str();
  return r;
}

std::string fixture(const std::string& name) {
  return source_dir() + "/tests/solutions/python/" + name + ".py";
}

TEST(GpuPython, ThePytorchSolutionPassesAndIsTimedByTheJudge) {
  SKIP_WITHOUT_GPU_AND_TORCH();
  std::string log;
  JudgeOutcome r = judge_python(source_dir() + "/solutions/nvfp4_matmul/torch_dequant.py",
                                Action::kRun, &log, {"example", "tails_77x135x48", "rev1"});
  std::cerr << log;
  ASSERT_EQ(r.code, ExitCode::kPassed) << log;
  EXPECT_EQ(r.record["solution"]["language"], "pytorch");
  EXPECT_NE(r.record["sandbox"].get<std::string>().find("seccomp"), std::string::npos)
      << r.record["sandbox"];
  const nlohmann::json& b = r.record["benchmarks"][0];
  EXPECT_EQ(b["verdict"], "passed");
  EXPECT_GT(b["median_ms"].get<double>(), 0);
  EXPECT_GT(b["value"].get<double>(), 0);
}

// The Triton rungs compile inside the worker's sandbox (Triton's ptxas and C compiler are
// the only programs it may run) and pass every test case of their challenge.
TEST(GpuPython, TheTritonSolutionsCompileInTheSandboxAndPassEveryTest) {
  SKIP_WITHOUT_GPU_AND_TORCH();
  std::string out;
  if (run_capture({python_program(), "-I", "-c", "import triton"}, &out) != 0)
    GTEST_SKIP() << python_program() << " cannot import triton: " << out;
  for (const char* challenge : {"nvfp4_matmul", "w4a16_matmul"}) {
    std::string log;
    JudgeOutcome r =
        judge_python(source_dir() + "/solutions/" + challenge + "/triton_dequant.py", Action::kTest,
                     &log, {}, source_dir() + "/challenges/" + challenge);
    std::cerr << log;
    EXPECT_EQ(r.code, ExitCode::kPassed) << challenge << "\n" << log;
    EXPECT_EQ(r.record["solution"]["language"], "triton");
    EXPECT_NE(r.record["sandbox"].get<std::string>().find("programs run only from"),
              std::string::npos)
        << r.record["sandbox"];
  }
}

TEST(GpuPython, FixturesGetTheCudaFixturesVerdicts) {
  SKIP_WITHOUT_GPU_AND_TORCH();
  const struct {
    const char* name;
    const char* verdict;
    ExitCode code;
  } cases[] = {
      {"writes_nothing", "wrong_answer", ExitCode::kFailed},
      {"scribbles_input", "input_modified", ExitCode::kFailed},
      {"raises", "early_exit", ExitCode::kRuntimeError},
      {"exits", "early_exit", ExitCode::kRuntimeError},
      {"import_fails", "crashed", ExitCode::kRuntimeError},
  };
  for (const auto& c : cases) {
    std::string log;
    JudgeOutcome r = judge_python(fixture(c.name), Action::kTest, &log, {"tails_77x135x48"});
    EXPECT_EQ(r.code, c.code) << c.name << "\n" << log;
    ASSERT_FALSE(r.record["tests"].empty()) << c.name << "\n" << log;
    EXPECT_EQ(r.record["tests"][0]["verdict"], c.verdict) << c.name << "\n" << log;
  }
}

}  // namespace
}  // namespace fp4arena
