// The console reporter: every line a reader sees about a run, printed from typed values.
#include "harness/reporter.h"

#include <cmath>
#include <limits>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "tests/harness/case_fixtures.h"

namespace fp4arena {
namespace {

using testing_util::failed_benchmark;

Spec flagship_spec() {
  Spec s;
  std::string err;
  EXPECT_TRUE(load_spec(std::string(FP4ARENA_SOURCE_DIR) + "/challenges/nvfp4_matmul", &s, &err))
      << err;
  return s;
}

TEST(ConsoleReporter, AFailurePrintsItsWorstElementsTileMapAndReplay) {
  const Spec spec = flagship_spec();
  std::ostringstream log;
  const BenchmarkResult b = failed_benchmark();
  ConsoleReporter(log, spec).benchmark(b, spec.timing, "--case rev1 --seed 9");
  const std::string out = log.str();
  EXPECT_NE(out.find("  FAIL  rev1"), std::string::npos) << out;
  EXPECT_NE(out.find("wrong_answer: call 3 (seed 9)"), std::string::npos) << out;
  EXPECT_NE(out.find("at (row 1, col 2): expected 3, got nan"), std::string::npos) << out;
  EXPECT_NE(out.find("        X.\n"), std::string::npos) << out;
  EXPECT_NE(out.find("replay: --case rev1 --seed 9"), std::string::npos) << out;
}

// A name or shape wider than its column still leaves a space before the next field.
TEST(ConsoleReporter, AWideNameOrShapeKeepsItsFieldsApart) {
  const Spec spec = flagship_spec();
  TestResult t;
  t.name = "a_test_name_wider_than_its_column";
  t.dims = {{"M", 100000}, {"N", 100000}, {"K", 100000}};
  t.verdict = Verdict::kPassed;
  OutputReport o;
  o.name = "c";
  o.passed = true;
  o.max_abs_err = 0.5;
  t.outputs = {o};
  std::ostringstream log;
  ConsoleReporter(log, spec).test(t, "");
  EXPECT_NE(log.str().find("a_test_name_wider_than_its_column 100000x100000x100000 c: max abs "
                           "err 0.5"),
            std::string::npos)
      << log.str();
  t.name = "short";
  t.dims = {{"M", 2}, {"N", 2}, {"K", 32}};
  std::ostringstream aligned;
  ConsoleReporter(aligned, spec).test(t, "");
  EXPECT_EQ(aligned.str(),
            "  PASS  short                   2x2x32            c: max abs err 0.5\n");
}

// A case the judge could not run (a shared GPU, an oracle that failed) says why, and offers no
// replay: nothing of the solution's went wrong.
TEST(ConsoleReporter, ACaseNotRunOffersNoReplay) {
  const Spec spec = flagship_spec();
  std::ostringstream log;
  BenchmarkResult b = failed_benchmark();
  b.verdict = Verdict::kNotRun;
  b.reason = "the GPU is not the judge's alone";
  ConsoleReporter(log, spec).benchmark(b, spec.timing, "--case rev1 --seed 9");
  const std::string out = log.str();
  EXPECT_NE(out.find("not_run: the GPU is not the judge's alone"), std::string::npos) << out;
  EXPECT_EQ(out.find("replay:"), std::string::npos) << out;
}

TEST(ConsoleReporter, APassedBenchmarkShowsItsShareOfTheSpeedOfLightAndItsNotes) {
  const Spec spec = flagship_spec();
  BenchmarkResult b;
  b.name = "table5";
  b.dims = {{"M", 2048}, {"N", 18432}, {"K", 3072}};
  b.ran = true;
  b.verdict = Verdict::kPassed;
  b.stats.samples = 3;
  b.stats.median_ms = 0.25;
  b.stats.rse = 0.004;
  b.calls_per_sample = 4;
  b.value = 927.7;
  b.speed_of_light.ms = 0.1;
  b.speed_of_light.compute_ms = 0.1;
  b.stopped = StopReason::kTimeCap;
  b.synchronising_windows = 2;
  b.host_call_median_ms = 0.2;
  std::ostringstream log;
  ConsoleReporter(log, spec).benchmark(b, spec.timing, "");
  const std::string out = log.str();
  EXPECT_NE(out.find("median 0.2500 ms  927.7 TF/s  40.0% of speed of light (compute)  n=3x4"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("time cap ended sampling after 3 samples"), std::string::npos) << out;
  EXPECT_NE(out.find("in 2 of 3 windows solve() had not returned 0.5 s"), std::string::npos) << out;
  EXPECT_NE(out.find("solve() spends 0.200 ms on the host"), std::string::npos) << out;
}

TEST(ConsoleReporter, YardstickScoreAndResultLines) {
  const Spec spec = flagship_spec();
  std::ostringstream log;
  ConsoleReporter r(log, spec);
  YardstickResult y{"cuBLAS", 1, {}, 500.0, 1.25};
  y.stats.median_ms = 0.5;
  r.yardstick(y);
  y.ratio.reset();
  r.yardstick(y);
  r.yardstick_not_measured("no cuBLAS handle");
  r.score(Score{700.0, false, "over the limit"}, false);
  r.score(Score{}, true);
  r.result(false, 2, 3, 4.25);
  EXPECT_EQ(log.str(),
            "        cuBLAS  0.5000 ms  500.0 TF/s  -> ratio 1.25\n"
            "        cuBLAS  0.5000 ms  500.0 TF/s\n"
            "        yardstick not measured: no cuBLAS handle\n"
            "score    geomean 700.0 TF/s  INVALID: over the limit\n"
            "score    none (--action test times nothing)\n"
            "result   FAILED  2/3 cases passed in 4.2 s\n");
}

TEST(ConsoleReporter, BannerCompileDeviceAndNoGpuLines) {
  const Spec spec = flagship_spec();
  std::ostringstream log;
  ConsoleReporter r(log, spec);
  r.banner("solutions/nvfp4_matmul/naive.cu", "");
  CompileResult c;
  c.ok = true;
  c.cached = true;
  c.nvcc_version = "13.0.88";
  c.source_sha256 = std::string(64, 'a');
  c.headers = {{"/src/tile.cuh", std::string(64, 'b')}};
  r.compiled(c, "sm_90a");
  DeviceInfo d;
  d.name = "NVIDIA H200";
  d.sm_count = 132;
  d.sm_clock_max_mhz = 1980;
  d.driver_version = "580.159.04";
  d.cuda_driver = "13.0";
  r.device(d, 989.4);
  d.sm_clock_now_mhz = 1755;
  r.device(d, 0);
  const std::string out = log.str();
  EXPECT_EQ(out.find("fp4arena "), 0u) << out;
  EXPECT_NE(out.find("| nvfp4_matmul (spec v"), std::string::npos) << out;
  EXPECT_NE(out.find(") | solutions/nvfp4_matmul/naive.cu\n"), std::string::npos) << out;
  EXPECT_NE(out.find("compile  ok (cached)  sm_90a  nvcc 13.0.88  sha256 aaaaaaaaaaaa\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("header   /src/tile.cuh  sha256 bbbbbbbbbbbb\n"), std::string::npos) << out;
  EXPECT_NE(out.find("device   NVIDIA H200 | 132 SMs | 1980 MHz max | driver 580.159.04 | CUDA "
                     "13.0 | fp16_dense limit 989 TF/s\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("1980 MHz max (1755 now) | driver 580.159.04 | CUDA 13.0 | no fp16_dense "
                     "limit known for this device\n"),
            std::string::npos)
      << out;

  std::ostringstream failed;
  ConsoleReporter f(failed, spec);
  c.ok = false;
  c.diagnostics = "sol.cu(3): error: expected a \";\"";
  f.compiled(c, "sm_100a");
  f.no_gpu("the driver reports no devices");
  const std::string want =
      "compile  FAILED for sm_100a (nvcc 13.0.88)\nsol.cu(3): error: expected a \";\"\nno CUDA "
      "GPU available: the driver reports no devices.\nThe solution compiled and its signature "
      "matches, but nothing was run.";
  EXPECT_EQ(failed.str().substr(0, want.size()), want);
  EXPECT_NE(failed.str().find("--remote HOST judges on one reached by ssh.\n"), std::string::npos);
}

}  // namespace
}  // namespace fp4arena
