// The w4a8_grouped_gemm adversarial fixtures (tests/solutions/adversarial/w4a8/): classic
// bugs of a grouped MoE GEMM that the judge must catch with one specific verdict, and a
// correct control that must pass (ctest label "gpu"; every test skips without a GPU). Modelled
// on gpu_adversarial_test.cc: `run_challenge ... --action run --json` with a --case filter
// that makes the bug visible; the record's per-case verdicts are asserted.
//
// Which case shows which bug (the cases' routing is asserted by the CPU test
// tests/challenges/w4a8_grouped_gemm_test.cc, HotAndEmptyExpertsWhereClaimed):
//   ignores_offsets: example (rows 0, 1, 2 go to experts 0, 1, 2 instead of 0, 0, 2) and
//     zipf_g64 (skewed routing); passes single_expert_g1 (G = 1: the even split is right).
//   first_row_scale: example (x_scales 0.5, 1, 2: rows 1 and 2 wrong, 4 of 6) and
//     gaussian_k2048 (row amplitudes 2^U(-3,3)); passes one_row_t1 (T = 1: x_scales[0] is
//     the row's own).
//   assumes_nonempty: empty_ends and one_row_t1 end with empty experts whose offset is T, so
//     the kernel writes the row past the end of y: out_of_bounds_write (which outranks any
//     wrong answer from the racing writes of empty experts in the middle); passes
//     single_expert_g1 (no empty expert).
//   half_accumulation: unscaled products reach 448 * 2688 > 65504: gaussian_k2048 and
//     zipf_g64 fail; the example (small sums, exact in FP16) passes.
#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <vector>

#include "harness/judge.h"
#include "tests/judge_run.h"
#include "tests/test_util.h"

namespace fp4arena {
namespace {

using testing_util::source_dir;

constexpr int kPassed = static_cast<int>(ExitCode::kPassed);
constexpr int kFailed = static_cast<int>(ExitCode::kFailed);

const char kOutside[] = "elements outside atol 0.1 + rtol 0.05";

std::string fixture(const std::string& stem) {
  return source_dir() + "/tests/solutions/adversarial/w4a8/" + stem + ".cu";
}

using CaseExpectation = testing_util::CaseVerdict;

struct Bug {
  std::string id;
  int exit_code;
  std::vector<CaseExpectation> cases;
};

void PrintTo(const Bug& b, std::ostream* os) {
  *os << b.id;
}

std::vector<Bug> bugs() {
  return {
      {"ignores_offsets",
       kFailed,
       {{"example", "wrong_answer", {kOutside}},
        {"zipf_g64", "wrong_answer", {kOutside}},
        {"single_expert_g1", "passed", {}}}},
      {"first_row_scale",
       kFailed,
       {{"example", "wrong_answer", {"4 of 6 " + std::string(kOutside)}},
        {"gaussian_k2048", "wrong_answer", {kOutside}},
        {"one_row_t1", "passed", {}}}},
      {"assumes_nonempty",
       kFailed,
       {{"empty_ends", "out_of_bounds_write", {"solve() wrote past the end of 'y'"}},
        {"one_row_t1", "out_of_bounds_write", {"solve() wrote past the end of 'y'"}},
        {"single_expert_g1", "passed", {}}}},
      {"half_accumulation",
       kFailed,
       {{"example", "passed", {}},
        {"gaussian_k2048", "wrong_answer", {kOutside}},
        {"zipf_g64", "wrong_answer", {kOutside}}}},
      {"correct",
       kPassed,
       {{"example", "passed", {}},
        {"one_row_t1", "passed", {}},
        {"one_expert_all_rows", "passed", {}},
        {"single_expert_g1", "passed", {}},
        {"empty_ends", "passed", {}},
        {"zipf_g64", "passed", {}},
        {"gaussian_k2048", "passed", {}},
        {"decode", "passed", {}}}},
  };
}

class GpuW4a8Adversarial : public ::testing::TestWithParam<Bug> {};

TEST_P(GpuW4a8Adversarial, GetsTheRightVerdict) {
  FP4ARENA_SKIP_WITHOUT_GPU();
  const Bug& bug = GetParam();
  testing_util::expect_verdicts(source_dir() + "/challenges/w4a8_grouped_gemm", fixture(bug.id),
                                bug.exit_code, bug.cases);
}

INSTANTIATE_TEST_SUITE_P(W4a8, GpuW4a8Adversarial, ::testing::ValuesIn(bugs()));

// The ladder: every rung passes every test case and the decode benchmark's short timing (a
// run without a benchmark has no score and does not pass; the full benchmarks are the
// submit's job). In wgmma_grouped.cu, one_row_t1, decode_like and decode take the decode
// kernel, tails_n135, zipf_g64 and gaussian_k2048 the wgmma kernel, the tests with K % 128 !=
// 0 the general path; wgmma_ring_decode.cu and wgmma_fp8_decode.cu differ only in that their
// decode kernels need K % 256 == 0, so one_row_t1 (K = 128) takes their general path.
class GpuW4a8Solutions : public ::testing::TestWithParam<std::string> {};

TEST_P(GpuW4a8Solutions, PassesEveryTest) {
  FP4ARENA_SKIP_WITHOUT_GPU();
  testing_util::expect_passes_every_test(
      source_dir() + "/challenges/w4a8_grouped_gemm",
      source_dir() + "/solutions/w4a8_grouped_gemm/" + GetParam(), "decode");
}

INSTANTIATE_TEST_SUITE_P(W4a8, GpuW4a8Solutions,
                         ::testing::Values("naive.cu", "mma_sync.cu", "wgmma_grouped.cu",
                                           "wgmma_ring_decode.cu", "wgmma_fp8_decode.cu"));

// The decode kernels (T <= 4 G) of the three wgmma rungs on shapes that the spec's tests do
// not give them (its decode-shaped tests are decode_like and the decode benchmark, both with
// N % 16 == 0): N tails (the TMA boxes of wgmma_ring_decode.cu, 16 rows, and of
// wgmma_fp8_decode.cu, 64 rows, then run into the next expert's rows or past the end of w),
// T = 1, one expert holding every row (8 token chunks: wgmma_fp8_decode.cu's 16-column items),
// empty experts at both ends, N = 8, and more work items than resident blocks (each block
// then takes several: wgmma_fp8_decode.cu claims them from a device counter). The shapes are
// in tests/data/w4a8_decode_shapes.json; --action test checks every output of a call on each.
class GpuW4a8DecodeShapes : public ::testing::TestWithParam<std::string> {};

TEST_P(GpuW4a8DecodeShapes, PassesEveryShape) {
  FP4ARENA_SKIP_WITHOUT_GPU();
  testing_util::expect_passes_every_shape(
      source_dir() + "/challenges/w4a8_grouped_gemm",
      source_dir() + "/solutions/w4a8_grouped_gemm/" + GetParam(),
      source_dir() + "/tests/data/w4a8_decode_shapes.json");
}

INSTANTIATE_TEST_SUITE_P(W4a8, GpuW4a8DecodeShapes,
                         ::testing::Values("wgmma_grouped.cu", "wgmma_ring_decode.cu",
                                           "wgmma_fp8_decode.cu"));

}  // namespace
}  // namespace fp4arena
