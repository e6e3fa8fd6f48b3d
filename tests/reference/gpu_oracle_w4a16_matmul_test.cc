// GPU W4A16 oracle vs the CPU oracle and the double reference. Every test skips, with the
// reason, where no CUDA GPU is usable.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "reference/oracle_w4a16_matmul.h"
#include "tests/reference/w4_cases.h"
#include "tests/test_util.h"

namespace fp4arena {
namespace {

using testing::ExactOutputs;
using testing::ExactW4a16;
using testing::MakeRandomW4a16;
using testing::OwnedW4a16Problem;

constexpr float kNan = std::numeric_limits<float>::quiet_NaN();

// GPU within the FP32 bound of the exact result and within twice it of the CPU oracle.
void CheckAgainstCpuAndExact(const W4a16MatmulProblem& p, const std::string& what) {
  std::vector<float> g(static_cast<size_t>(p.M) * p.N, kNan), c(g.size(), kNan);
  std::string err;
  ASSERT_TRUE(oracle_w4a16_matmul_gpu(p, g.data(), &err)) << what << ": " << err;
  ASSERT_TRUE(oracle_w4a16_matmul_cpu(p, c.data(), &err)) << what << ": " << err;
  const ExactOutputs exact = ExactW4a16(p);
  size_t bit_equal = 0;
  double worst = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    ASSERT_LE(std::fabs(g[i] - exact.y[i]), exact.bound[i])
        << what << " element " << i << ": gpu " << g[i] << " exact " << exact.y[i];
    ASSERT_LE(std::fabs(static_cast<double>(g[i]) - c[i]), 2 * exact.bound[i])
        << what << " element " << i << ": gpu " << g[i] << " cpu " << c[i];
    bit_equal += g[i] == c[i];
    worst = std::max(worst, std::fabs(g[i] - exact.y[i]) / exact.bound[i]);
  }
  std::printf("%s: %zu outputs, %zu bit-equal GPU vs CPU, worst |gpu - exact| / bound %.3g\n",
              what.c_str(), g.size(), bit_equal, worst);
}

TEST(GpuOracleW4a16, RandomShapesWithTails) {
  FP4ARENA_SKIP_WITHOUT_GPU();
  struct Shape {
    int m, n, k, group;
    int s_exp_lo, s_exp_hi;
  };
  uint32_t seed = 200;
  for (const Shape& s :
       {Shape{1, 1, 32, 32, 5, 16}, Shape{33, 17, 96, 32, 0, 4}, Shape{129, 257, 640, 128, 26, 30},
        Shape{70, 90, 1024, 32, 0, 30}, Shape{256, 512, 4096, 128, 10, 20}}) {
    const OwnedW4a16Problem r =
        MakeRandomW4a16(s.m, s.n, s.k, s.group, ++seed, 10, 20, s.s_exp_lo, s.s_exp_hi);
    CheckAgainstCpuAndExact(r.Problem(), std::to_string(s.m) + "x" + std::to_string(s.n) + "x" +
                                             std::to_string(s.k) + " group " +
                                             std::to_string(s.group));
  }
}

TEST(GpuOracleW4a16, DegenerateAndBadShapes) {
  FP4ARENA_SKIP_WITHOUT_GPU();
  std::string err;
  OwnedW4a16Problem r = MakeRandomW4a16(3, 0, 32, 32, 1);
  EXPECT_TRUE(oracle_w4a16_matmul_gpu(r.Problem(), nullptr, &err)) << err;
  r = MakeRandomW4a16(3, 2, 0, 32, 1);
  std::vector<float> y(6, kNan);
  EXPECT_TRUE(oracle_w4a16_matmul_gpu(r.Problem(), y.data(), &err)) << err;
  for (float v : y) EXPECT_EQ(v, 0.0f);
  r = MakeRandomW4a16(3, 2, 64, 32, 1);
  W4a16MatmulProblem p = r.Problem();
  p.group_size = 48;
  EXPECT_FALSE(oracle_w4a16_matmul_gpu(p, y.data(), &err));
  EXPECT_NE(err.find("oracle_w4a16_matmul_gpu: K must be a multiple of group_size"),
            std::string::npos)
      << err;
}

}  // namespace
}  // namespace fp4arena
