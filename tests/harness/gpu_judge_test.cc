// The judge end to end on a GPU (ctest label "gpu"; each test skips without a GPU).
#include <dirent.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <future>
#include <thread>

#include "harness/challenge.h"
#include "harness/judge.h"
#include "harness/process.h"
#include "harness/spec.h"
#include "reference/fp4_codecs.h"
#include "tests/judge_run.h"
#include "tests/test_util.h"

namespace fp4arena {
namespace {

using testing_util::challenge_dir;
using testing_util::no_gpu_reason;
using testing_util::run_cli;
using testing_util::source_dir;

// Processes whose command line mentions fp4arena_worker (left behind by a judge run).
int worker_processes() {
  int n = 0;
  DIR* d = opendir("/proc");
  while (dirent* e = readdir(d)) {
    if (!std::isdigit(static_cast<unsigned char>(e->d_name[0]))) continue;
    std::ifstream f(std::string("/proc/") + e->d_name + "/cmdline");
    std::string cmd((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    n += cmd.find("fp4arena_worker") != std::string::npos;
  }
  closedir(d);
  return n;
}

nlohmann::json submit(const std::string& solution, std::vector<std::string> extra, int* code,
                      std::string* log) {
  std::string out = ::testing::TempDir() + "/record-" + std::to_string(getpid()) + ".json";
  std::vector<std::string> args = {challenge_dir(), "--solution", solution, "--action",
                                   "submit",        "--output",   out};
  args.insert(args.end(), extra.begin(), extra.end());
  auto r = run_cli(args);
  *code = r.exit_code;
  *log = r.output;
  std::ifstream in(out);
  if (!in) return nlohmann::json();
  nlohmann::json j = nlohmann::json::parse(in);
  std::remove(out.c_str());
  return j;
}

TEST(GpuJudge, NaivePassesEveryCaseAndWritesTheRecord) {
  FP4ARENA_SKIP_WITHOUT_GPU();
  int code;
  std::string log;
  nlohmann::json rec =
      submit(source_dir() + "/solutions/nvfp4_matmul/naive.cu", {"--no-yardstick"}, &code, &log);
  std::cerr << log;
  ASSERT_EQ(code, 0) << log;
  ASSERT_FALSE(rec.is_null());
  EXPECT_EQ(rec["schema"], "fp4arena.submit.v2");
  EXPECT_EQ(rec["metric"]["name"], "tflops");
  EXPECT_EQ(rec["limit"]["name"], "fp16_dense");
  EXPECT_GT(rec["limit"]["value"].get<double>(), 0);
  EXPECT_TRUE(rec["passed"].get<bool>());
  Spec spec;
  std::string err;
  ASSERT_TRUE(load_spec(challenge_dir(), &spec, &err));
  // The spec's tests, then the random_tests drawn for this run.
  ASSERT_EQ(rec["tests"].size(), spec.tests.size() + testing_util::random_test_count(spec));
  for (size_t i = spec.tests.size(); i < rec["tests"].size(); ++i) {
    CaseSpec c;
    EXPECT_TRUE(random_case_named(spec, rec["tests"][i]["name"].get<std::string>(), &c))
        << rec["tests"][i].dump();
  }
  EXPECT_NE(log.find("drawn for this run (replay one with --case NAME): random_"),
            std::string::npos);
  EXPECT_EQ(rec["benchmarks"].size(), spec.benchmarks.size());
  for (const char* list : {"tests", "benchmarks"}) {
    for (const auto& c : rec[list]) EXPECT_EQ(c["verdict"], "passed") << c.dump();
  }
  for (const auto& b : rec["benchmarks"]) {
    EXPECT_GT(b["samples"].get<int>(), 0);
    EXPECT_NEAR(b["value"].get<double>(),
                b["workload"].get<double>() / b["median_ms"].get<double>() / 1e9, 1e-6);
    EXPECT_LE(b["min_ms"].get<double>(), b["median_ms"].get<double>());
    // The judge's own work: every part made (no yardstick: --no-yardstick), none past the
    // case's wall time.
    const auto& js = b["judge_seconds"];
    double parts = 0;
    for (const char* k : {"generate", "exchange", "check"}) {
      EXPECT_GT(js[k].get<double>(), 0) << k;
      parts += js[k].get<double>();
    }
    EXPECT_EQ(js["yardstick"].get<double>(), 0);
    EXPECT_LE(parts, b["wall_ms"].get<double>() / 1000.0);
  }
  for (const auto& t : rec["tests"]) {
    ASSERT_EQ(t["outputs"].size(), 1u);
    EXPECT_EQ(t["outputs"][0]["name"], "c");
  }
  EXPECT_GT(rec["score"]["geomean"].get<double>(), 0);
  EXPECT_GT(rec["device"]["sm_count"].get<int>(), 0);
  EXPECT_EQ(rec["solution"]["sha256"].get<std::string>().size(), 64u);
  EXPECT_EQ(worker_processes(), 0);
}

// --action test: every test case (random ones included), nothing timed, the result the
// tests' alone.
TEST(GpuJudge, ActionTestRunsTheTestsAndTimesNothing) {
  FP4ARENA_SKIP_WITHOUT_GPU();
  auto r =
      run_cli({challenge_dir(), "--solution", source_dir() + "/solutions/nvfp4_matmul/naive.cu",
               "--action", "test", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("\nbenchmarks\n"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("score    none (--action test times nothing)"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("result   PASSED"), std::string::npos) << r.output;
  const size_t brace = r.output.find("{\n");
  ASSERT_NE(brace, std::string::npos) << r.output;
  const nlohmann::json rec = nlohmann::json::parse(r.output.substr(brace), nullptr, false);
  ASSERT_FALSE(rec.is_discarded()) << r.output;
  EXPECT_EQ(rec["action"], "test");
  EXPECT_TRUE(rec["benchmarks"].empty());
  EXPECT_TRUE(rec["passed"].get<bool>());
}

// Another process keeping the GPU busy (tests/tools/gpu_busy.cu, one-millisecond kernels from
// a context of its own) time-slices with the judge's windows and inflates the calibration of
// its switches. The judge does not time with it: the test still runs and passes, the run stops
// before its benchmark with exit 6 naming the shared GPU, and nothing is left running.
TEST(GpuJudge, ASharedGpuStopsTheTimingNotTheTests) {
  FP4ARENA_SKIP_WITHOUT_GPU();
  const std::string dir = testing_util::unique_temp_dir("busy");
  ASSERT_FALSE(dir.empty());
  const std::string ready = dir + "/ready", stop = dir + "/stop";
  auto busy = std::async(std::launch::async, [&] {
    std::string out;
    bool timed_out = false;
    return run_capture_with_timeout(
        {testing_util::binary_dir() + "/fp4arena_gpu_busy", ready, stop, "120"}, 180, &out,
        &timed_out);
  });
  for (int i = 0; i < 600 && access(ready.c_str(), F_OK) != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_EQ(access(ready.c_str(), F_OK), 0) << "fp4arena_gpu_busy never started";
  const auto r =
      run_cli({challenge_dir(), "--solution", source_dir() + "/solutions/nvfp4_matmul/naive.cu",
               "--action", "run", "--case", "example", "--case", "rev1", "--samples", "1"});
  std::string err;
  ASSERT_TRUE(write_file_atomic(stop, "", &err)) << err;
  EXPECT_EQ(busy.get(), 0);
  EXPECT_EQ(r.exit_code, static_cast<int>(ExitCode::kInternal)) << r.output;
  EXPECT_NE(r.output.find("PASS  example"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("the GPU is not the judge's alone"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("3 calibrations"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("PASS  rev1"), std::string::npos) << r.output;
  EXPECT_EQ(worker_processes(), 0);
  remove_tree(dir);
}

TEST(GpuJudge, TailBugGetsAUsefulReport) {
  FP4ARENA_SKIP_WITHOUT_GPU();
  auto r = run_cli({challenge_dir(), "--solution",
                    source_dir() + "/tests/solutions/wrong_last_column.cu", "--action", "run",
                    "--case", "tails_77x135x48", "--case", "example"});
  EXPECT_EQ(r.exit_code, int(ExitCode::kFailed)) << r.output;
  EXPECT_NE(r.output.find("FAIL  tails_77x135x48"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("77 of 10395 elements"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("77 never written"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("(row 0, col 134)"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("failing tiles"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(".#\n"), std::string::npos) << "the map's last column fails";
}

TEST(GpuJudge, HostCrashIsReportedAndTheJudgeCarriesOn) {
  FP4ARENA_SKIP_WITHOUT_GPU();
  auto r = run_cli({challenge_dir(), "--solution",
                    source_dir() + "/tests/solutions/crash_host_segfault.cu", "--action", "run",
                    "--case", "example", "--case", "k16_only"});
  EXPECT_EQ(r.exit_code, int(ExitCode::kRuntimeError)) << r.output;
  EXPECT_NE(r.output.find("crashed: the worker running solve() was killed by signal 11"),
            std::string::npos)
      << r.output;
  // Both cases ran, each in a fresh worker.
  EXPECT_NE(r.output.find("FAIL  k16_only"), std::string::npos) << r.output;
  EXPECT_EQ(worker_processes(), 0);
}

TEST(GpuJudge, HangingKernelTimesOutAndLeavesNoProcess) {
  FP4ARENA_SKIP_WITHOUT_GPU();
  auto t0 = std::chrono::steady_clock::now();
  auto r = run_cli({challenge_dir(), "--solution", source_dir() + "/tests/solutions/hang_kernel.cu",
                    "--action", "run", "--case", "example", "--timeout", "3"});
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.exit_code, int(ExitCode::kRuntimeError)) << r.output;
  EXPECT_NE(r.output.find("timeout: solve() gave no answer within 3"), std::string::npos)
      << r.output;
  EXPECT_LT(s, 60.0);
  EXPECT_EQ(worker_processes(), 0);
}

// The GPU oracle against the CPU oracle on every functional case: both are FP32 dot
// products (in different orders), so they differ by at most twice the FP32 bound.
TEST(GpuJudge, GpuAndCpuOraclesAgreeOnEveryFunctionalCase) {
  FP4ARENA_SKIP_WITHOUT_GPU();
  Spec spec;
  std::string err;
  ASSERT_TRUE(load_spec(challenge_dir(), &spec, &err));
  auto ch = make_challenge(spec.name);
  for (const CaseSpec& c : spec.tests) {
    SCOPED_TRACE(c.name);
    ProblemData in;
    ASSERT_TRUE(ch->generate(c, c.seed, &in, &err)) << err;
    Expected cpu_out, gpu_out;
    ASSERT_TRUE(ch->oracle(in, OracleDevice::kCpu, &cpu_out, &err)) << err;
    ASSERT_TRUE(ch->oracle(in, OracleDevice::kGpu, &gpu_out, &err)) << err;
    const std::vector<float>& cpu = cpu_out["c"].values;
    const std::vector<float>& gpu = gpu_out["c"].values;
    const int64_t N = c.dims.at("N"), K = c.dims.at("K"), M = c.dims.at("M");
    const double alpha = in.scalars.at("alpha");
    const int64_t row_step = M > 256 ? 61 : 1;  // sample rows of the largest case
    auto deq = [&](const char* v, const char* s, int64_t row, int64_t k) {
      uint8_t byte = in.buffers[v][row * K / 2 + k / 2];
      return double(e2m1_decode(k % 2 ? byte >> 4 : byte & 0xF)) *
             e4m3_decode(in.buffers[s][row * K / 16 + k / 16]);
    };
    int64_t bad = 0;
    for (int64_t m = 0; m < M; m += row_step) {
      std::vector<double> arow(K);
      for (int64_t k = 0; k < K; ++k) arow[k] = deq("a", "a_scales", m, k);
      for (int64_t n = 0; n < N; ++n) {
        double s_abs = 0;
        for (int64_t k = 0; k < K; ++k) s_abs += std::fabs(arow[k] * deq("b", "b_scales", n, k));
        double bound = 2 * double(K) * std::ldexp(1.0, -24) * alpha * s_abs + 1e-30;
        bad += std::fabs(double(cpu[m * N + n]) - double(gpu[m * N + n])) > bound;
      }
    }
    EXPECT_EQ(bad, 0);
  }
}

}  // namespace
}  // namespace fp4arena
