// The nvfp4_matmul ladder's rungs with host-side path choices (ctest label "gpu"; every test
// skips without a GPU): each passes every test case of the challenge and the rev1 benchmark's
// short timing, through `run_challenge ... --action run --json`. The full benchmarks and
// their figures are the submit's job.
//
// Which case takes which path: the tests of at most 2^21 multiply-adds with K <= 128
// (example, one_by_one_k16, row_vector, column_vector, tails_77x135x48, k16_only) take the
// one-kernel general path of wgmma_tma_store.cu and wgmma_thin_tile.cu; large_k_positive (128
// wide tiles) and rev1 stay on the wide tile; all_scale_codes_* (2 tiles of 9 units of K) take
// stream-K. Both store C by TMA where N % 8 == 0 and through the load/store unit elsewhere
// (tails_129x257x80, tails_383x511x528, all_scale_codes_a).
//
// wgmma_thin_tile.cu moves the small cases that took the narrow tile without stream-K onto its
// 64-row thin tile (tails_129x257x80, tails_383x511x528, all_zero_a, all_e2m1_codes,
// near_fp16_limit, the alpha_* cases, gaussian_outliers; both epilogues among them), and
// all_scale_codes_a (M = 40) onto it with stream-K, while all_scale_codes_b keeps the narrow
// tile with stream-K. No test case is large enough for its other paths, so three shape files
// judge them with --action test --shapes (every output of a call checked on each):
// - tests/data/nvfp4_tile_shapes.json, the 144- and 192-row tiles: 1536^3 (144, one wave),
//   2048x2880x2880 (192, two waves, N and K tails, TMA store), 2048x2300x2080 (192 with
//   stream-K, N and K tails, the load/store-unit epilogue), 2040x2304x2048 (192 with stream-K,
//   an M tail, TMA store) and 2000x2300x2080 (144 with M, N and K tails, Gaussian data with
//   outliers);
// - tests/data/nvfp4_aligned_split_shapes.json, stream-K grids of one-wave shapes cut into
//   whole parts of a tile: 1024x1024x4096 (halves, TMA store), 100x4096x4096 (quarters, an M
//   tail, Gaussian data with outliers) and 1000x1004x3968 (halves, 15 chunks and a K tail of 8
//   steps, M and N tails, the load/store-unit epilogue);
// - tests/data/nvfp4_thin_tile_shapes.json, the thin tile: 64x8192x4096 (64 thin tiles in
//   aligned halves, TMA store), 40x1003x2064 (stream-K over 8 tiles, M, N and K tails, the
//   load/store-unit epilogue, Gaussian data with outliers) and 1000x1024x1040 (128 thin tiles
//   in one wave, M and K tails, TMA store).
// These shapes were written for the rungs that brought each path (wgmma_tile_fit.cu and
// wgmma_aligned_split.cu, now in the ladder README's history); the thin tile may take some of
// them instead, which the same checks then cover.
#include <gtest/gtest.h>

#include <string>

#include "tests/judge_run.h"
#include "tests/test_util.h"

namespace fp4arena {
namespace {

using testing_util::expect_passes_every_test;
using testing_util::JudgeRun;
using testing_util::source_dir;

class GpuNvfp4Solutions : public ::testing::TestWithParam<std::string> {};

TEST_P(GpuNvfp4Solutions, PassesEveryTest) {
  FP4ARENA_SKIP_WITHOUT_GPU();
  const JudgeRun r =
      expect_passes_every_test(source_dir() + "/challenges/nvfp4_matmul",
                               source_dir() + "/solutions/nvfp4_matmul/" + GetParam(), "rev1");
  if (!r.record.is_null()) {
    EXPECT_EQ(r.record["benchmarks"].size(), 1u);
  }
}

INSTANTIATE_TEST_SUITE_P(Nvfp4, GpuNvfp4Solutions,
                         ::testing::Values("wgmma_fast_prologue.cu", "wgmma_tma_store.cu",
                                           "wgmma_thin_tile.cu"));

TEST(GpuNvfp4ThinTile, PassesTheTileWidthShapes) {
  FP4ARENA_SKIP_WITHOUT_GPU();
  testing_util::expect_passes_every_shape(
      source_dir() + "/challenges/nvfp4_matmul",
      source_dir() + "/solutions/nvfp4_matmul/wgmma_thin_tile.cu",
      source_dir() + "/tests/data/nvfp4_tile_shapes.json");
}

TEST(GpuNvfp4ThinTile, PassesTheAlignedSplitShapes) {
  FP4ARENA_SKIP_WITHOUT_GPU();
  testing_util::expect_passes_every_shape(
      source_dir() + "/challenges/nvfp4_matmul",
      source_dir() + "/solutions/nvfp4_matmul/wgmma_thin_tile.cu",
      source_dir() + "/tests/data/nvfp4_aligned_split_shapes.json");
}

TEST(GpuNvfp4ThinTile, PassesTheThinTileShapes) {
  FP4ARENA_SKIP_WITHOUT_GPU();
  testing_util::expect_passes_every_shape(
      source_dir() + "/challenges/nvfp4_matmul",
      source_dir() + "/solutions/nvfp4_matmul/wgmma_thin_tile.cu",
      source_dir() + "/tests/data/nvfp4_thin_tile_shapes.json");
}

}  // namespace
}  // namespace fp4arena
