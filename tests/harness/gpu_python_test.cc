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

// The bundled PyTorch solution with `cheat` appended (the cheat wraps its solve() and keeps
// the spec's parameters: the judge checks the signature of the last solve()), written
// as a solution file of its own.
std::string with_cheat(const std::string& name, const std::string& cheat) {
  std::string text, err;
  const std::string honest = source_dir() + "/solutions/nvfp4_matmul/torch_dequant.py";
  EXPECT_TRUE(read_file(honest, &text, &err)) << err;
  const std::string path = ::testing::TempDir() + "/python-" + name + ".py";
  EXPECT_TRUE(write_file_atomic(path, text + "\n" + cheat, &err)) << err;
  return path;
}

// A case's entry in a record, test or benchmark.
const nlohmann::json* case_in(const nlohmann::json& record, const std::string& name) {
  for (const char* list : {"tests", "benchmarks"}) {
    if (!record.contains(list)) continue;
    for (const nlohmann::json& c : record[list])
      if (c.value("name", "") == name) return &c;
  }
  return nullptr;
}

// The Python forms of the CUDA fixtures' cheats, on an honest solution: each gets the verdict
// its CUDA counterpart gets (gpu_adversarial_test.cc).
TEST(GpuPython, CheatsGetTheCudaFixturesVerdicts) {
  SKIP_WITHOUT_GPU_AND_TORCH();
  const struct {
    const char* name;
    const char* cheat;
    const char* case_name;
    const char* verdict;
    const char* reason_has;
    ExitCode code;
    const char* or_verdict = nullptr;  // another verdict as good (then reason_has is not asked)
  } cases[] = {
      // torch's event clock halved: the judge times with its own events; the report is a
      // diagnostic (forge_event_time).
      {"forge_elapsed",
       "_elapsed = torch.cuda.Event.elapsed_time\n"
       "torch.cuda.Event.elapsed_time = lambda self, end: 0.5 * _elapsed(self, end)\n",
       "rev1", "passed", "", ExitCode::kPassed},
      // The work enqueued on a torch side stream (non-blocking) and left running
      // (stream_escape): timing_escape when it ran inside the window, wrong_answer when the
      // judge's snapshot came first (the H200, 2026-11-28: 16437048 of 16777216 elements).
      {"side_stream",
       "_honest, _side = solve, []\n"
       "def solve(a, a_scales, b, b_scales, alpha, c, M, N, K):\n"
       "    if not _side:\n"
       "        _side.append(torch.cuda.Stream())\n"
       "    with torch.cuda.stream(_side[0]):\n"
       "        _honest(a, a_scales, b, b_scales, alpha, c, M, N, K)\n",
       "rev1", "timing_escape", "the GPU stayed busy for", ExitCode::kFailed, "wrong_answer"},
      // A thread started in solve() and still running when it returns (thread_escape).
      {"thread_left",
       "import threading, time\n"
       "_honest = solve\n"
       "def solve(a, a_scales, b, b_scales, alpha, c, M, N, K):\n"
       "    _honest(a, a_scales, b, b_scales, alpha, c, M, N, K)\n"
       "    threading.Thread(target=time.sleep, args=(0.05,), daemon=True).start()\n",
       "example", "thread_escape", "thread(s) it started still running", ExitCode::kFailed},
      // Nothing computed for buffers seen before, trusting the earlier answer to be there
      // (replay_by_pointer): the judge's ring of buffers and its poison catch it.
      {"replay",
       "_honest, _seen = solve, set()\n"
       "def solve(a, a_scales, b, b_scales, alpha, c, M, N, K):\n"
       "    key = (a.data_ptr(), c.data_ptr())\n"
       "    if key not in _seen:\n"
       "        _seen.add(key)\n"
       "        _honest(a, a_scales, b, b_scales, alpha, c, M, N, K)\n",
       "rev1", "wrong_answer", "", ExitCode::kFailed},
  };
  for (const auto& c : cases) {
    std::string log;
    JudgeOutcome r = judge_python(with_cheat(c.name, c.cheat), Action::kRun, &log, {c.case_name});
    EXPECT_EQ(r.code, c.code) << c.name << "\n" << log;
    const nlohmann::json* got = case_in(r.record, c.case_name);
    ASSERT_NE(got, nullptr) << c.name << "\n" << log;
    const std::string verdict = got->value("verdict", "");
    if (c.or_verdict && verdict == c.or_verdict) continue;
    EXPECT_EQ(verdict, c.verdict) << c.name << "\n" << log;
    EXPECT_NE(got->value("reason", "").find(c.reason_has), std::string::npos)
        << c.name << ": " << got->value("reason", "") << "\n"
        << log;
  }
}

}  // namespace
}  // namespace fp4arena
