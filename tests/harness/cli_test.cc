// run_challenge as a user runs it: options, messages and exit codes.
#include <dirent.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "harness/judge.h"
#include "tests/judge_run.h"
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

// --action list: every challenge with every case and its dims; one challenge alone when given.
TEST(Cli, ListFindsTheChallengeAndEveryCase) {
  auto r = run_cli({"--action", "list", source_dir() + "/challenges"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("nvfp4_matmul (spec v2)"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("w4a8_grouped_gemm (spec v2)"), std::string::npos) << r.output;
  for (const char* line :
       {"    bench  table5                            M=2048 N=18432 K=3072\n",
        "    test   tails_77x135x48                   M=77 N=135 K=48\n",
        "    random random_XXXXXXXX (3 drawn afresh by run and submit; --case NAME replays one)"}) {
    EXPECT_NE(r.output.find(line), std::string::npos) << line << "\n" << r.output;
  }
  r = run_cli({"--action", "list", source_dir() + "/challenges/w4a16_matmul"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("bench  decode"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("nvfp4_matmul"), std::string::npos) << r.output;
}

// Run from the repository's root, a bare challenge name is its folder under challenges/.
// --action report rebuilds a committed sweep's page and chart from its JSON, without a GPU:
// the chart comes out byte for byte as the judge wrote it.
TEST(Cli, ReportRebuildsASweepPageFromItsJson) {
  const std::string committed =
      source_dir() + "/results/nvfp4_matmul/nvidia-h200/sweeps/wgmma_thin_tile";
  const std::string dir =
      ::testing::TempDir() + "/fp4arena-sweep-report-" + std::to_string(getpid());
  std::string made;
  ASSERT_TRUE(make_dirs(dir, &made)) << made;
  std::string json, svg, err;
  ASSERT_TRUE(read_file(committed + "/sweep.json", &json, &err)) << err;
  ASSERT_TRUE(read_file(committed + "/sweep.svg", &svg, &err)) << err;
  // The committed sweep is of spec version 1; the page names the challenge from its spec
  // where the versions agree.
  nlohmann::json sweep = nlohmann::json::parse(json);
  Spec spec;
  ASSERT_TRUE(load_spec(source_dir() + "/challenges/nvfp4_matmul", &spec, &err)) << err;
  sweep["challenge"]["spec_version"] = spec.spec_version;
  ASSERT_TRUE(write_file_atomic(dir + "/sweep.json", sweep.dump(1), &err)) << err;
  auto r = run_cli({"--action", "report", "--sweep", dir + "/sweep.json", "--challenges",
                    source_dir() + "/challenges"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::string page, chart;
  ASSERT_TRUE(read_file(dir + "/sweep.svg", &chart, &err)) << err;
  EXPECT_EQ(chart, svg);
  ASSERT_TRUE(read_file(dir + "/sweep.html", &page, &err)) << err;
  EXPECT_NE(page.find("NVFP4 x NVFP4 matmul with FP16 output"), std::string::npos);
  r = run_cli({"--action", "report"});
  EXPECT_EQ(r.exit_code, int(ExitCode::kUsage));
  EXPECT_NE(r.output.find("give the sweep's JSON with --sweep FILE"), std::string::npos)
      << r.output;
  ASSERT_TRUE(write_file_atomic(dir + "/bad.json", R"({"schema": "fp4arena.sweep.v1"})", &err));
  r = run_cli({"--action", "report", "--sweep", dir + "/bad.json"});
  EXPECT_EQ(r.exit_code, int(ExitCode::kUsage));
  EXPECT_NE(r.output.find("bad.json: field judge_version: missing, or not a string"),
            std::string::npos)
      << r.output;
}

// --remote HOST through a stand-in for ssh that runs the command here: the solution goes
// over, the remote judge runs with its output shown, its exit code comes back, and the files
// sent are removed. ssh failing and a host that cannot go into a command line are errors.
TEST(Cli, RemoteJudgesThroughSshAndCleansUp) {
  // A fresh folder each run (a pid-named one left by an earlier run, killed or not, would
  // hold the symlink already), removed at the end.
  std::string home = ::testing::TempDir() + "/fp4arena-remote-home-XXXXXX";
  ASSERT_NE(mkdtemp(home.data()), nullptr) << home;
  std::string err;
  ASSERT_TRUE(make_dirs(home + "/fp4arena", &err)) << err;
  ASSERT_EQ(
      symlink((source_dir() + "/challenges").c_str(), (home + "/fp4arena/challenges").c_str()), 0);
  setenv("FP4ARENA_SSH", (source_dir() + "/tests/tools/fake_ssh").c_str(), 1);
  setenv("FAKE_SSH_HOME", home.c_str(), 1);
  const std::vector<std::string> base = {"challenges/nvfp4_matmul",
                                         "--solution",
                                         source_dir() + "/solutions/nvfp4_matmul/naive.cu",
                                         "--action",
                                         "test",
                                         "--case",
                                         "example",
                                         "--remote-judge",
                                         testing_util::run_challenge_bin()};
  std::vector<std::string> args = base;
  args.insert(args.end(), {"--remote", "gpu-box"});
  auto r = run_cli(args);
  const int want = no_gpu_reason().empty() ? 0 : int(ExitCode::kNoGpu);
  EXPECT_EQ(r.exit_code, want) << r.output;
  EXPECT_NE(r.output.find("remote   gpu-box:fp4arena ("), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("compile  ok"), std::string::npos) << r.output;
  DIR* d = opendir((home + "/fp4arena/.fp4arena-remote").c_str());
  ASSERT_NE(d, nullptr);
  int left = 0;
  while (dirent* e = readdir(d)) left += e->d_name[0] != '.';
  closedir(d);
  EXPECT_EQ(left, 0) << "the files sent stay on the remote machine";

  args = base;
  args.insert(args.end(), {"--remote", "unreachable"});
  r = run_cli(args);
  EXPECT_EQ(r.exit_code, int(ExitCode::kInternal)) << r.output;
  EXPECT_NE(r.output.find("could not send"), std::string::npos) << r.output;
  args = base;
  args.insert(args.end(), {"--remote", "box;reboot"});
  r = run_cli(args);
  EXPECT_EQ(r.exit_code, int(ExitCode::kUsage)) << r.output;
  EXPECT_NE(r.output.find("--remote: 'box;reboot' cannot go into the remote command line"),
            std::string::npos)
      << r.output;
  r = run_cli({"challenges/nvfp4_matmul", "--solution", kNaive, "--action", "check", "--remote",
               "gpu-box"});
  EXPECT_EQ(r.exit_code, int(ExitCode::kUsage)) << r.output;
  unsetenv("FP4ARENA_SSH");
  unsetenv("FAKE_SSH_HOME");
  std::error_code ec;
  std::filesystem::remove_all(home, ec);
}

TEST(Cli, ABareChallengeNameResolvesUnderChallenges) {
  std::string out;
  const std::string cmd = "cd '" + source_dir() + "' && '" + testing_util::run_challenge_bin() +
                          "' nvfp4_matmul --solution solutions/nvfp4_matmul/naive.cu --action "
                          "check --no-progress && exec '" +
                          testing_util::run_challenge_bin() + "' --action list mxfp4_quantize";
  const int rc = run_capture({"/bin/sh", "-c", cmd}, &out);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("check    ok"), std::string::npos) << out;
  EXPECT_NE(out.find("challenges/mxfp4_quantize  mxfp4_quantize (spec v2)"), std::string::npos)
      << out;
}

TEST(Cli, UsageErrorsNameTheArgument) {
  auto r = run_cli({challenge_dir(), "--solution", kNaive, "--action", "bogus"});
  EXPECT_EQ(r.exit_code, int(ExitCode::kUsage));
  EXPECT_NE(r.output.find("--action"), std::string::npos) << r.output;

  r = run_cli({challenge_dir(), "--solution", kNaive, "--language", "triton"});
  EXPECT_EQ(r.exit_code, int(ExitCode::kUsage));
  EXPECT_NE(r.output.find("--language triton does not fit --solution"), std::string::npos)
      << r.output;
  r = run_cli({challenge_dir(), "--solution", kNaive, "--language", "jax"});
  EXPECT_EQ(r.exit_code, int(ExitCode::kUsage));
  EXPECT_NE(r.output.find("--language: expected cuda, triton or pytorch, got 'jax'"),
            std::string::npos)
      << r.output;

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
  EXPECT_NE(r.output.find("; the cases: example, one_by_one_k16, "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("; table5, rev1; a random test is named like random_0a1b2c3d"),
            std::string::npos)
      << r.output;

  r = run_cli({challenge_dir(), "--solution", kNaive, "--device", "x"});
  EXPECT_EQ(r.exit_code, int(ExitCode::kUsage));
  EXPECT_NE(r.output.find("--device"), std::string::npos) << r.output;

  // --samples: a quicker run or sweep only; a record keeps the spec's stopping rule.
  r = run_cli({challenge_dir(), "--solution", kNaive, "--action", "submit", "--samples", "2"});
  EXPECT_EQ(r.exit_code, int(ExitCode::kUsage));
  EXPECT_NE(r.output.find("--samples: expected 1 to 15 with --action run or sweep, got 2 with "
                          "--action submit"),
            std::string::npos)
      << r.output;
  r = run_cli({challenge_dir(), "--solution", kNaive, "--action", "run", "--samples", "16"});
  EXPECT_EQ(r.exit_code, int(ExitCode::kUsage));
  EXPECT_NE(r.output.find("--samples: expected 1 to 15"), std::string::npos) << r.output;
  r = run_cli({challenge_dir(), "--solution", kNaive, "--action", "run", "--samples", "two"});
  EXPECT_EQ(r.exit_code, int(ExitCode::kUsage));
  EXPECT_NE(r.output.find("--samples"), std::string::npos) << r.output;
  // --action test times nothing: a benchmark named with --case is refused.
  r = run_cli({challenge_dir(), "--solution", kNaive, "--action", "test", "--case", "table5"});
  EXPECT_EQ(r.exit_code, int(ExitCode::kUsage));
  EXPECT_NE(r.output.find("--case: 'table5' is a benchmark; --action test runs test cases only"),
            std::string::npos)
      << r.output;
  // Options an action would ignore are refused, naming the actions that use them.
  r = run_cli({challenge_dir(), "--solution", kNaive, "--action", "check", "--json"});
  EXPECT_EQ(r.exit_code, int(ExitCode::kUsage));
  EXPECT_NE(r.output.find("--json: not used by --action check (only by test, run, submit, "
                          "sanitize, profile, sweep)"),
            std::string::npos)
      << r.output;
  r = run_cli({challenge_dir(), "--solution", kNaive, "--action", "run", "--output", "r.json"});
  EXPECT_EQ(r.exit_code, int(ExitCode::kUsage));
  EXPECT_NE(r.output.find("--output: not used by --action run (only by submit)"), std::string::npos)
      << r.output;
  r = run_cli({challenge_dir(), "--solution", kNaive, "--action", "check", "--out", "d"});
  EXPECT_EQ(r.exit_code, int(ExitCode::kUsage));
  EXPECT_NE(r.output.find("--out: not used by --action check"), std::string::npos) << r.output;
  // --seccomp denylist: a diagnostic for run and check; a record is always made under the
  // allowlist.
  r = run_cli(
      {challenge_dir(), "--solution", kNaive, "--action", "submit", "--seccomp", "denylist"});
  EXPECT_EQ(r.exit_code, int(ExitCode::kUsage));
  EXPECT_NE(r.output.find("--seccomp: submit always runs under the allowlist"), std::string::npos)
      << r.output;
  r = run_cli({challenge_dir(), "--solution", kNaive, "--seccomp", "none"});
  EXPECT_EQ(r.exit_code, int(ExitCode::kUsage));
  EXPECT_NE(r.output.find("--seccomp"), std::string::npos) << r.output;
  if (!testing_util::no_gpu_reason().empty()) {  // accepted: without a GPU, compiled and checked
    r = run_cli({challenge_dir(), "--solution", kNaive, "--action", "run", "--samples", "2"});
    EXPECT_EQ(r.exit_code, int(ExitCode::kNoGpu)) << r.output;
  }
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

// A Python solution is read by python3's own parser (nothing in it runs): its solve() must
// take the spec's parameters by name, in order; what a GPU run needs is named where missing.
TEST(Cli, PythonSolutionsAreCheckedByPythonsParser) {
  std::string version;
  if (run_capture({"python3", "-c", "pass"}, &version) != 0)
    GTEST_SKIP() << "python3 is not installed (scripts/setup installs it)";
  const std::string dir = source_dir() + "/tests/solutions/python/";
  auto check = [&](const std::string& file, std::vector<std::string> more = {}) {
    std::vector<std::string> args = {challenge_dir(), "--solution", file, "--action", "check"};
    args.insert(args.end(), more.begin(), more.end());
    return run_cli(args);
  };
  auto r = check(source_dir() + "/solutions/nvfp4_matmul/torch_dequant.py");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("(pytorch)"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("solve() takes the spec's parameters"), std::string::npos) << r.output;
  r = check(source_dir() + "/solutions/nvfp4_matmul/triton_dequant.py");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("(triton)"), std::string::npos) << r.output;
  r = run_cli({source_dir() + "/challenges/w4a16_matmul", "--solution",
               source_dir() + "/solutions/w4a16_matmul/triton_dequant.py", "--action", "check"});
  EXPECT_EQ(r.exit_code, 0) << r.output;

  r = check(dir + "wrong_params.py");
  EXPECT_EQ(r.exit_code, int(ExitCode::kCompileError)) << r.output;
  for (const char* want :
       {"solve() must take exactly the spec's parameters, in order:",
        "    def solve(a, a_scales, b, b_scales, alpha, c, M, N, K)",
        "wrong_params.py:5):\n    def solve(a, a_scales, b, b_scales, alpha, out, M, N)",
        "  expected 9 parameters, yours has 8", "  parameter 6: expected `c`, yours `out`",
        "  parameter 9: expected `K`, yours `(none)`"})
    EXPECT_NE(r.output.find(want), std::string::npos) << want << "\n" << r.output;

  r = check(dir + "syntax_error.py");
  EXPECT_EQ(r.exit_code, int(ExitCode::kCompileError)) << r.output;
  EXPECT_NE(r.output.find("the solution is not valid Python: " + dir + "syntax_error.py:2:"),
            std::string::npos)
      << r.output;

  // A file nested past what python3's parser can take (MemoryError or RecursionError, not a
  // SyntaxError) is refused the same way, not as the judge's own failure.
  const std::string deep = testing_util::unique_temp_dir("deep_py") + "/deep.py";
  std::ofstream(deep) << "x = " << std::string(100000, '-') << "1\n\n\ndef solve(a, a_scales, b, "
                      << "b_scales, alpha, c, M, N, K):\n    pass\n";
  r = check(deep);
  EXPECT_EQ(r.exit_code, int(ExitCode::kCompileError)) << r.output;
  EXPECT_NE(r.output.find("too deeply nested or too large for the parser"), std::string::npos)
      << r.output;

  r = check(dir + "no_solve.py");
  EXPECT_EQ(r.exit_code, int(ExitCode::kCompileError)) << r.output;
  EXPECT_NE(r.output.find("defines no top-level `def solve(...)`"), std::string::npos) << r.output;

  r = check(dir + "extra_params.py", {"--language", "triton"});
  EXPECT_EQ(r.exit_code, int(ExitCode::kCompileError)) << r.output;
  EXPECT_NE(r.output.find("(triton)"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("no other parameters: yours also has *rest, block, **options"),
            std::string::npos)
      << r.output;

  r = check(dir + "wrong_params.py", {"--language", "cuda"});
  EXPECT_EQ(r.exit_code, int(ExitCode::kUsage)) << r.output;
  EXPECT_NE(r.output.find("--language cuda does not fit --solution"), std::string::npos);

  // A GPU action without a GPU ends as a CUDA solution's does; sanitize and profile are not
  // for Python; python3 that cannot run is named.
  const std::string torch_solution = source_dir() + "/solutions/nvfp4_matmul/torch_dequant.py";
  if (!testing_util::no_gpu_reason().empty()) {
    r = run_cli({challenge_dir(), "--solution", torch_solution, "--action", "run"});
    EXPECT_EQ(r.exit_code, int(ExitCode::kNoGpu)) << r.output;
    EXPECT_NE(r.output.find("no CUDA GPU available"), std::string::npos) << r.output;
  }
  r = run_cli({challenge_dir(), "--solution", torch_solution, "--action", "profile"});
  EXPECT_EQ(r.exit_code, int(ExitCode::kUsage)) << r.output;
  EXPECT_NE(r.output.find("not for Python solutions"), std::string::npos) << r.output;
  setenv("FP4ARENA_PYTHON", "/nonexistent/python3", 1);
  r = check(torch_solution);
  unsetenv("FP4ARENA_PYTHON");
  EXPECT_EQ(r.exit_code, int(ExitCode::kInternal)) << r.output;
  EXPECT_NE(r.output.find("/nonexistent/python3 could not be run: a Python solution is read by "
                          "python3 (apt-get install python3"),
            std::string::npos)
      << r.output;
}

// CuTe needs --expt-relaxed-constexpr, which the allow-list lets through (CUTLASS is no
// dependency: the test runs where FP4ARENA_CUTLASS_DIR names a checkout).
TEST(Cli, ACuteSolutionCompilesAgainstCutlassHeaders) {
  const char* cutlass = std::getenv("FP4ARENA_CUTLASS_DIR");
  if (!cutlass || !*cutlass)
    GTEST_SKIP() << "FP4ARENA_CUTLASS_DIR is not set (a CUTLASS v4 checkout)";
  auto r = run_cli({challenge_dir(), "--solution",
                    source_dir() + "/tests/solutions/cute/nvfp4_matmul_cute.cu", "--action",
                    "check", "--include-dir", std::string(cutlass) + "/include",
                    "--nvcc-flag=--expt-relaxed-constexpr"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("cute/tensor.hpp"), std::string::npos) << r.output;
}

TEST(Cli, CompileErrorsExitWithTheirOwnCode) {
  auto r = run_cli({challenge_dir(), "--solution",
                    source_dir() + "/tests/solutions/wrong_signature.cu", "--action", "check"});
  EXPECT_EQ(r.exit_code, int(ExitCode::kCompileError)) << r.output;
  EXPECT_NE(r.output.find("expected ("), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("  parameter 6: expected `__half* c`, yours `float* c`"),
            std::string::npos)
      << r.output;
}

TEST(Cli, RunWithoutAGpuSaysSoAndStillChecks) {
  if (no_gpu_reason().empty())
    GTEST_SKIP() << "a GPU is present; this test is for machines without one";
  auto r = run_cli({challenge_dir(), "--solution", kNaive, "--action", "run"});
  EXPECT_EQ(r.exit_code, int(ExitCode::kNoGpu)) << r.output;
  EXPECT_NE(r.output.find("compile  ok"), std::string::npos) << r.output;
  // The cause in words, then what works without a GPU.
  EXPECT_NE(r.output.find("no CUDA GPU available: "), std::string::npos) << r.output;
  if (std::ifstream("/proc/driver/nvidia/version").fail()) {
    EXPECT_NE(r.output.find("no NVIDIA driver is loaded on this machine"), std::string::npos)
        << r.output;
  }
  EXPECT_NE(r.output.find("nothing was run. Without a GPU, --action check and --action dump work"),
            std::string::npos)
      << r.output;
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
  // What CuTe and CUTLASS need: C++20 and constexpr host functions in device code. The naive
  // solution plus both compiles with the two flags and fails without them.
  const std::string cute_like = ::testing::TempDir() + "/fp4arena_cute_like.cu";
  std::string source, err;
  ASSERT_TRUE(read_file(naive, &source, &err)) << err;
  ASSERT_TRUE(
      write_file_atomic(cute_like,
                        source + "\ntemplate <typename T> concept Small = sizeof(T) <= 8;\n"
                                 "static_assert(Small<int>);\n"
                                 "constexpr int twice(int x) { return 2 * x; }\n"
                                 "__global__ void fp4arena_flag_probe(int* p) { *p = twice(3); }\n",
                        &err))
      << err;
  r = run_cli({challenge_dir(), "--solution", cute_like, "--action", "check", "--nvcc-flag",
               "-std=c++20", "--nvcc-flag", "--expt-relaxed-constexpr"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  r = run_cli({challenge_dir(), "--solution", cute_like, "--action", "check"});
  EXPECT_EQ(r.exit_code, int(ExitCode::kCompileError)) << r.output;
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

namespace fp4arena {
namespace {

// --action sweep without a GPU: every refusal of a bad --shapes file or --out is a usage
// error before anything compiles; a good one compiles and says nothing was run.
class CliSweep : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/fp4arena-cli-sweep-" + std::to_string(getpid()) + "-" +
           testing::UnitTest::GetInstance()->current_test_info()->name();
    std::string err;
    ASSERT_TRUE(make_dirs(dir_, &err)) << err;
  }
  void TearDown() override { remove_tree(dir_); }
  std::string write(const std::string& name, const std::string& text) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }
  testing_util::CliResult sweep(std::vector<std::string> extra) {
    std::vector<std::string> args = {challenge_dir(), "--solution", kNaive, "--action", "sweep"};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_cli(args);
  }
  std::string dir_;
};

TEST_F(CliSweep, HelpAndListShowTheSweep) {
  auto r = run_cli({"--help"});
  EXPECT_EQ(r.exit_code, 0);
  for (const char* s : {"sweep", "--shapes", "sweep/<challenge>"})
    EXPECT_NE(r.output.find(s), std::string::npos) << s;
  r = run_cli({"--action", "list", source_dir() + "/challenges"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("a sweep list of 11 shapes"), std::string::npos) << r.output;
}

TEST_F(CliSweep, ABadShapesFileIsAUsageErrorNamingTheFileAndTheField) {
  const std::string bad_k = write("bad_k.json", R"([
    {"name": "fine", "generator": "uniform", "seed": 1, "M": 64, "N": 64, "K": 64},
    {"name": "odd", "generator": "uniform", "seed": 2, "M": 64, "N": 64, "K": 24}])");
  auto r = sweep({"--shapes", bad_k, "--out", dir_ + "/out"});
  EXPECT_EQ(r.exit_code, int(ExitCode::kUsage)) << r.output;
  EXPECT_NE(r.output.find("--shapes: " + bad_k + ": field '[1].K'"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("compile  ok"), std::string::npos) << "refused before compiling";

  const std::string no_m = write("no_m.json", R"([{"name": "x", "generator": "uniform",
    "seed": 1, "N": 64, "K": 64}])");
  r = sweep({"--shapes", no_m});
  EXPECT_EQ(r.exit_code, int(ExitCode::kUsage)) << r.output;
  EXPECT_NE(r.output.find(no_m + ": field '[0].M': expected an integer, got nothing"),
            std::string::npos)
      << r.output;

  const std::string bad_gen = write("bad_gen.json", R"([{"name": "x", "generator": "gaussian",
    "seed": 1, "M": 64, "N": 64, "K": 64}])");
  r = sweep({"--shapes", bad_gen});
  EXPECT_EQ(r.exit_code, int(ExitCode::kUsage)) << r.output;
  EXPECT_NE(r.output.find(bad_gen + ": field '[0]': case 'x': unknown generator 'gaussian'"),
            std::string::npos)
      << r.output;

  const std::string not_json = write("not_json.json", "[{");
  r = sweep({"--shapes", not_json});
  EXPECT_EQ(r.exit_code, int(ExitCode::kUsage)) << r.output;
  EXPECT_NE(r.output.find(not_json + ": not valid JSON"), std::string::npos) << r.output;

  r = sweep({"--shapes", dir_ + "/missing.json"});
  EXPECT_EQ(r.exit_code, int(ExitCode::kUsage)) << r.output;
  EXPECT_NE(r.output.find(dir_ + "/missing.json: cannot open"), std::string::npos) << r.output;

  // --shapes belongs to the sweep and to test (its shapes then are the tests, checked alike).
  r = run_cli({challenge_dir(), "--solution", kNaive, "--action", "run", "--shapes", bad_k});
  EXPECT_EQ(r.exit_code, int(ExitCode::kUsage)) << r.output;
  EXPECT_NE(r.output.find("--shapes: only with --action sweep or test"), std::string::npos)
      << r.output;
  r = run_cli({challenge_dir(), "--solution", kNaive, "--action", "test", "--shapes", bad_k});
  EXPECT_EQ(r.exit_code, int(ExitCode::kUsage)) << r.output;
  EXPECT_NE(r.output.find("--shapes: " + bad_k + ": field '[1].K'"), std::string::npos) << r.output;
  // --case picks shapes of the sweep's list.
  r = sweep({"--case", "table5x"});
  EXPECT_EQ(r.exit_code, int(ExitCode::kUsage)) << r.output;
  EXPECT_NE(r.output.find("--case: no shape named 'table5x' in the spec's sweep list"),
            std::string::npos)
      << r.output;
}

TEST_F(CliSweep, OutMustBeAFolderAndOnlyASweepIsReplaced) {
  const std::string file = write("a_file", "keep me\n");
  auto r = sweep({"--out", file});
  EXPECT_EQ(r.exit_code, int(ExitCode::kUsage)) << r.output;
  EXPECT_NE(r.output.find("--out: " + file + " exists and is not a folder"), std::string::npos)
      << r.output;
  r = sweep({"--out", file + "/below"});
  EXPECT_EQ(r.exit_code, int(ExitCode::kUsage)) << r.output;
  EXPECT_NE(r.output.find("is not a folder"), std::string::npos) << r.output;
  std::string kept, ignored;
  ASSERT_TRUE(read_file(file, &kept, &ignored));
  EXPECT_EQ(kept, "keep me\n");

  std::string err;
  ASSERT_TRUE(make_dirs(dir_ + "/taken", &err)) << err;
  write("taken/sweep.html", "<!DOCTYPE html><p>someone's page</p>\n");
  r = sweep({"--out", dir_ + "/taken"});
  EXPECT_EQ(r.exit_code, int(ExitCode::kUsage)) << r.output;
  EXPECT_NE(r.output.find("sweep.html exists and is not a sweep the judge wrote"),
            std::string::npos)
      << r.output;
  ASSERT_TRUE(make_dirs(dir_ + "/taken_svg", &err)) << err;
  write("taken_svg/sweep.svg", "<svg xmlns=\"http://www.w3.org/2000/svg\"/>\n");
  r = sweep({"--out", dir_ + "/taken_svg"});
  EXPECT_EQ(r.exit_code, int(ExitCode::kUsage)) << r.output;
  EXPECT_NE(r.output.find("sweep.svg exists and is not a sweep the judge wrote"), std::string::npos)
      << r.output;
  ASSERT_TRUE(make_dirs(dir_ + "/taken2/sweep.json", &err)) << err;
  r = sweep({"--out", dir_ + "/taken2"});
  EXPECT_EQ(r.exit_code, int(ExitCode::kUsage)) << r.output;
  EXPECT_NE(r.output.find("sweep.json exists and is not a regular file"), std::string::npos)
      << r.output;
}

TEST_F(CliSweep, AGoodShapesFileWithoutAGpuCompilesAndExits5) {
  if (no_gpu_reason().empty())
    GTEST_SKIP() << "a GPU is present; this test is for machines without one";
  const std::string good = write("good.json", R"([
    {"name": "small", "generator": "uniform", "seed": 1, "M": 64, "N": 96, "K": 128},
    {"name": "odd", "generator": "uniform", "seed": 2, "M": 1000, "N": 3000, "K": 4112}])");
  auto r = sweep({"--shapes", good, "--out", dir_ + "/out"});
  EXPECT_EQ(r.exit_code, int(ExitCode::kNoGpu)) << r.output;
  EXPECT_NE(r.output.find("compile  ok"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("no CUDA GPU available"), std::string::npos) << r.output;
  std::string text, ignored;
  EXPECT_FALSE(read_file(dir_ + "/out/sweep.json", &text, &ignored)) << "nothing ran: no sweep";
  // The spec's own sweep list, with no --shapes: the same.
  r = sweep({"--out", dir_ + "/out"});
  EXPECT_EQ(r.exit_code, int(ExitCode::kNoGpu)) << r.output;
}

}  // namespace
}  // namespace fp4arena
