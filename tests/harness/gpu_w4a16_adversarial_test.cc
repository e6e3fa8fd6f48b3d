// The w4a16_matmul adversarial suite (ctest label "gpu"; every test skips without a GPU):
// classic W4A16 bugs the judge must catch with `wrong_answer` on the cases that show them, a
// partial output, and a correct control that must pass every case the others are judged on.
// Fixtures: tests/solutions/adversarial/w4a16/ (one shared kernel, naive_kernel.cuh, with
// one Mode per bug). Modelled on gpu_adversarial_test.cc (the NVFP4 suite).
//
// Where the cases come from: the arithmetic bugs were simulated on the host against the CPU
// oracle (tests/challenges/w4a16_matmul_test.cc, W4a16Generators.FixtureBugsFailTheirCases),
// and each is judged on cases where it fails by a wide margin; only "elements outside atol"
// is asserted for those, not exact counts. The partial output's counts follow from the shape.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "harness/judge.h"
#include "harness/spec.h"
#include "tests/judge_run.h"
#include "tests/test_util.h"

namespace fp4arena {
namespace {

using testing_util::contains;
using testing_util::find_case;
using testing_util::JudgeRun;
using testing_util::run_challenge_bin;
using testing_util::source_dir;

constexpr int kPassed = static_cast<int>(ExitCode::kPassed);
constexpr int kFailed = static_cast<int>(ExitCode::kFailed);

std::string w4a16_dir() {
  return source_dir() + "/challenges/w4a16_matmul";
}
std::string fixture(const std::string& stem) {
  return source_dir() + "/tests/solutions/adversarial/w4a16/" + stem + ".cu";
}

using CaseExpectation = testing_util::CaseVerdict;

struct Bug {
  std::string id;
  std::string solution;
  int exit_code;
  std::vector<CaseExpectation> cases;
};

void PrintTo(const Bug& b, std::ostream* os) {
  *os << b.id;
}

const char kOutside[] = "elements outside atol 0.1 + rtol 0.05";

std::vector<Bug> bugs() {
  return {
      {"wrong_nibble_order",
       fixture("wrong_nibble_order"),
       kFailed,
       {{"example", "wrong_answer", {kOutside}, {"never written", "NaN/Inf"}},
        {"tails_77x135x96", "wrong_answer", {kOutside}, {"never written", "NaN/Inf"}}}},
      {"ignores_scales",
       fixture("ignores_scales"),
       kFailed,
       {{"example", "wrong_answer", {kOutside}, {"never written", "NaN/Inf"}},
        {"group32_varied_scales", "wrong_answer", {kOutside}, {"never written", "NaN/Inf"}}}},
      // Right for group 32, wrong for group 128: both kinds in one run.
      {"group_size_ignored",
       fixture("group_size_ignored"),
       kFailed,
       {{"group32_varied_scales", "passed", {}, {}},
        {"tails_129x257x384_g128", "wrong_answer", {kOutside}, {"never written"}},
        {"group128_varied_scales", "wrong_answer", {kOutside}, {"never written"}}}},
      {"half_accumulation",
       fixture("half_accumulation"),
       kFailed,
       {{"example", "passed", {}, {}},
        {"large_k_positive", "wrong_answer", {kOutside}, {"never written", "NaN/Inf"}}}},
      // Rows M/2..M-1 unwritten: 200x1 -> 100 of 200; 77x135 -> 39 rows, 5265 of 10395.
      {"half_rows",
       fixture("half_rows"),
       kFailed,
       {{"column_vector",
         "wrong_answer",
         {"100 of 200 " + std::string(kOutside) + "; 100 never written"},
         {"NaN/Inf"}},
        {"tails_77x135x96",
         "wrong_answer",
         {"5265 of 10395 " + std::string(kOutside) + "; 5265 never written"},
         {"NaN/Inf"}}}},
      // The control, plus the decode benchmark: a run without a benchmark has no score and
      // does not pass.
      {"correct",
       fixture("correct"),
       kPassed,
       {{"example", "passed", {}, {}},
        {"column_vector", "passed", {}, {}},
        {"tails_77x135x96", "passed", {}, {}},
        {"tails_129x257x384_g128", "passed", {}, {}},
        {"group32_varied_scales", "passed", {}, {}},
        {"group128_varied_scales", "passed", {}, {}},
        {"subnormal_scales", "passed", {}, {}},
        {"fp16_range_scales", "passed", {}, {}},
        {"large_k_positive", "passed", {}, {}},
        {"decode", "passed", {}, {}}}},
  };
}

class GpuW4a16Adversarial : public ::testing::TestWithParam<Bug> {};

TEST_P(GpuW4a16Adversarial, GetsTheRightVerdict) {
  FP4ARENA_SKIP_WITHOUT_GPU();
  const Bug& bug = GetParam();
  JudgeRun r = testing_util::expect_verdicts(w4a16_dir(), bug.solution, bug.exit_code, bug.cases);
  EXPECT_EQ(testing_util::judged_cases(r.record), bug.cases.size()) << "stderr:\n" << r.err;
}

INSTANTIATE_TEST_SUITE_P(W4a16, GpuW4a16Adversarial, ::testing::ValuesIn(bugs()));

// The ladder: every rung passes every test case (and the decode benchmark's short timing;
// the full benchmarks are the submit's job).
class GpuW4a16Solutions : public ::testing::TestWithParam<std::string> {};

TEST_P(GpuW4a16Solutions, PassesEveryTest) {
  FP4ARENA_SKIP_WITHOUT_GPU();
  // Every test, plus the decode benchmark (cheap even for the naive rung).
  testing_util::expect_passes_every_test(
      w4a16_dir(), source_dir() + "/solutions/w4a16_matmul/" + GetParam(), "decode");
}

INSTANTIATE_TEST_SUITE_P(W4a16, GpuW4a16Solutions,
                         ::testing::Values("naive.cu", "wgmma.cu", "wgmma_permuted.cu",
                                           "wgmma_prefetch.cu", "wgmma_decode_staged.cu",
                                           "wgmma_tma_store.cu"));

// The decode kernels (M <= 16) of wgmma_prefetch.cu (the one the dropped wgmma_decode_pairs.cu
// brought) and
// wgmma_decode_staged.cu (staged through shared memory; wgmma_tma_store.cu keeps it) on shapes the
// spec's tests do not give them: K up to 8192, so that a warp walks up to three batches of
// segments and its shared-memory slots are reused, K = 3200 and 6272 (batches of one segment),
// N tails (200, 1000), N = 64 and N = 8 (most of a block's rows clamped), M = 1, 5, 9 and 16 (x
// rows past M zero-filled). The shapes are in tests/data/w4a16_decode_shapes.json; --action
// test checks every output of a call on each.
class GpuW4a16DecodeShapes : public ::testing::TestWithParam<std::string> {};

TEST_P(GpuW4a16DecodeShapes, PassesEveryShape) {
  FP4ARENA_SKIP_WITHOUT_GPU();
  testing_util::expect_passes_every_shape(w4a16_dir(),
                                          source_dir() + "/solutions/w4a16_matmul/" + GetParam(),
                                          source_dir() + "/tests/data/w4a16_decode_shapes.json");
}

INSTANTIATE_TEST_SUITE_P(W4a16, GpuW4a16DecodeShapes,
                         ::testing::Values("wgmma_prefetch.cu", "wgmma_decode_staged.cu"));

}  // namespace
}  // namespace fp4arena
