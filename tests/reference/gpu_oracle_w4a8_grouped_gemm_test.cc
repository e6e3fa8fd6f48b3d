// GPU W4A8 grouped oracle vs the CPU oracle and the double reference. Every test skips,
// with the reason, where no CUDA GPU is usable.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "reference/oracle_w4a8_grouped_gemm.h"
#include "tests/reference/w4_cases.h"
#include "tests/test_util.h"

namespace fp4arena {
namespace {

using testing::ExactOutputs;
using testing::ExactW4a8Grouped;
using testing::MakeRandomW4a8Grouped;
using testing::OwnedW4a8GroupedProblem;

constexpr float kNan = std::numeric_limits<float>::quiet_NaN();

// GPU within the FP32 bound of the exact result and within twice it of the CPU oracle.
void CheckAgainstCpuAndExact(const W4a8GroupedGemmProblem& p, const std::string& what) {
  std::vector<float> g(static_cast<size_t>(p.T) * p.N, kNan), c(g.size(), kNan);
  std::string err;
  ASSERT_TRUE(oracle_w4a8_grouped_gemm_gpu(p, g.data(), &err)) << what << ": " << err;
  ASSERT_TRUE(oracle_w4a8_grouped_gemm_cpu(p, c.data(), &err)) << what << ": " << err;
  const ExactOutputs exact = ExactW4a8Grouped(p);
  size_t bit_equal = 0;
  double worst = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    ASSERT_LE(std::fabs(g[i] - exact.y[i]), exact.bound[i])
        << what << " element " << i << " (row " << i / p.N << "): gpu " << g[i] << " exact "
        << exact.y[i];
    ASSERT_LE(std::fabs(static_cast<double>(g[i]) - c[i]), 2 * exact.bound[i])
        << what << " element " << i << " (row " << i / p.N << "): gpu " << g[i] << " cpu " << c[i];
    bit_equal += g[i] == c[i];
    worst = std::max(worst, std::fabs(g[i] - exact.y[i]) / exact.bound[i]);
  }
  std::printf("%s: %zu outputs, %zu bit-equal GPU vs CPU, worst |gpu - exact| / bound %.3g\n",
              what.c_str(), g.size(), bit_equal, worst);
}

TEST(GpuOracleW4a8Grouped, RandomShapesWithTailsAndEmptyExperts) {
  FP4ARENA_SKIP_WITHOUT_GPU();
  struct Case {
    std::vector<int> rows;
    int n, k;
    const char* what;
  };
  uint32_t seed = 300;
  for (const Case& c :
       {Case{{1}, 1, 16, "T=1 N=1 K=16"}, Case{{0, 3, 0, 0, 17, 1}, 33, 80, "empty experts, tails"},
        Case{{0, 0, 200, 0}, 257, 528, "one expert holds all rows"},
        Case{{0, 0, 0}, 64, 64, "no rows"},
        Case{{5, 130, 0, 64, 65, 1, 0, 7}, 300, 1024, "uneven experts"},
        Case{{300, 212, 0, 500}, 768, 2048, "larger"}}) {
    const OwnedW4a8GroupedProblem r = MakeRandomW4a8Grouped(c.rows, c.n, c.k, ++seed);
    CheckAgainstCpuAndExact(r.Problem(), c.what);
  }
}

TEST(GpuOracleW4a8Grouped, DegenerateAndMalformed) {
  FP4ARENA_SKIP_WITHOUT_GPU();
  std::string err;
  OwnedW4a8GroupedProblem r = MakeRandomW4a8Grouped({0, 0}, 8, 32, 1);
  EXPECT_TRUE(oracle_w4a8_grouped_gemm_gpu(r.Problem(), nullptr, &err)) << err;
  r = MakeRandomW4a8Grouped({2, 1}, 3, 0, 1);
  std::vector<float> y(9, kNan);
  EXPECT_TRUE(oracle_w4a8_grouped_gemm_gpu(r.Problem(), y.data(), &err)) << err;
  for (float v : y) EXPECT_EQ(v, 0.0f);
  r = MakeRandomW4a8Grouped({2, 1}, 3, 32, 1);
  const std::vector<int> bad = {0, 4, 3};
  W4a8GroupedGemmProblem p = r.Problem();
  p.group_offsets = bad.data();
  EXPECT_FALSE(oracle_w4a8_grouped_gemm_gpu(p, y.data(), &err));
  EXPECT_NE(err.find("oracle_w4a8_grouped_gemm_gpu: group_offsets decrease at expert 1"),
            std::string::npos)
      << err;
}

}  // namespace
}  // namespace fp4arena
