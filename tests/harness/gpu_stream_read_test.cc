// The judge on the test-only stream_read challenge (tests/challenges/stream_read): the
// streaming-read solution passes its tests, and a solution that marks its inputs persisting in
// L2 (tests/solutions/adversarial/stream_read/persisting_l2.cu) scores as the honest one does.
#include <gtest/gtest.h>

#include <iostream>
#include <sstream>

#include "harness/judge.h"
#include "tests/test_util.h"

namespace fp4arena {
namespace {

using testing_util::binary_dir;
using testing_util::source_dir;

// The judge's record of `solution` (a path under tests/solutions) on stream_read.
JudgeOutcome judge_stream_read(const std::string& solution, Action action,
                               const std::vector<std::string>& cases, std::string* log) {
  JudgeOptions o;
  o.challenge_dir = source_dir() + "/tests/challenges/stream_read";
  o.solution_path = source_dir() + "/tests/solutions/" + solution;
  o.action = action;
  o.cases = cases;
  o.progress = false;
  o.worker_path = testing_util::worker_bin();
  o.cache_dir = binary_dir() + "/solution-cache";
  std::ostringstream os;
  JudgeOutcome r = judge(o, os);
  *log = os.str();
  return r;
}

// The judge's median of benchmark `name` in `rec`, in us; 0 when it did not pass.
double median_us(const nlohmann::json& rec, const std::string& name) {
  if (!rec.contains("benchmarks")) return 0;
  for (const auto& b : rec["benchmarks"]) {
    if (b.value("name", "") == name && b.value("verdict", "") == "passed") {
      return b.value("median_ms", 0.0) * 1000.0;
    }
  }
  return 0;
}

TEST(GpuStreamRead, TheStreamingReadPassesEveryTest) {
  FP4ARENA_SKIP_WITHOUT_GPU();
  std::string log;
  JudgeOutcome r = judge_stream_read("stream_read/read.cu", Action::kCheck, {}, &log);
  EXPECT_EQ(r.code, ExitCode::kPassed) << log;
}

// A persisting access-policy window over the inputs, with the largest set-aside the device
// allows, must not carry inputs from one window into the next: the judge's flush resets
// persisting lines (harness/pre_call.cu). The two are judged one after the other on the 1 MiB
// case, where the set-aside holds tens of the 1 MiB input sets of a window; the fixture may not
// be faster than the honest solution by more than run-to-run noise.
TEST(GpuStreamRead, PersistingL2WindowGainsNothing) {
  FP4ARENA_SKIP_WITHOUT_GPU();
  std::string log;
  JudgeOutcome honest = judge_stream_read("stream_read/read.cu", Action::kRun, {"mb1"}, &log);
  ASSERT_EQ(honest.code, ExitCode::kPassed) << log;
  JudgeOutcome cheat =
      judge_stream_read("adversarial/stream_read/persisting_l2.cu", Action::kRun, {"mb1"}, &log);
  ASSERT_EQ(cheat.code, ExitCode::kPassed) << log;
  const double h = median_us(honest.record, "mb1"), c = median_us(cheat.record, "mb1");
  std::cerr << "mb1: honest " << h << " us, persisting window " << c << " us\n";
  ASSERT_GT(h, 0);
  EXPECT_GT(c, 0.95 * h) << "honest " << h << " us, persisting window " << c << " us";
}

}  // namespace
}  // namespace fp4arena
