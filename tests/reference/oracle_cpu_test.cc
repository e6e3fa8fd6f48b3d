#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "reference/nvfp4.h"
#include "reference/oracle.h"
#include "tests/reference/golden_cases.h"

namespace fp4arena {
namespace {

using testing::ExactMatmul;
using testing::ExactResult;
using testing::GoldenCase;
using testing::MakeRandomProblem;
using testing::RandomProblem;

// Round-half-even of a non-negative double below 2^52, independent of the rounding mode.
double RoundHalfEven(double q) {
  const double fl = std::floor(q);
  const double frac = q - fl;
  if (frac > 0.5 || (frac == 0.5 && std::fmod(fl, 2.0) != 0.0)) return fl + 1;
  return fl;
}

// x rounded to IEEE half (round to nearest even, overflow to infinity), as a signed ordinal
// of its bit pattern: neighbouring halves differ by 1, +-0 are both 0, +-inf are +-0x7C00.
int64_t HalfOrdinal(double x) {
  const double a = std::fabs(x);
  int64_t bits;
  if (a >= 65520.0) {  // the 65504 | 65536 midpoint rounds up (65504 has an odd mantissa)
    bits = 0x7C00;
  } else if (a < 0x1p-14) {
    bits = static_cast<int64_t>(RoundHalfEven(a * 0x1p24));  // subnormal quanta of 2^-24
  } else {
    int e2;
    std::frexp(a, &e2);
    const int e = e2 - 1;  // a in [2^e, 2^(e+1))
    const int64_t n = static_cast<int64_t>(RoundHalfEven(std::ldexp(a, 10 - e)));
    bits = (static_cast<int64_t>(e + 15) << 10) + (n - 1024);  // n == 2048 carries over
  }
  return std::signbit(x) ? -bits : bits;
}

std::vector<float> RunCpu(const Nvfp4MatmulProblem& p, int threads = 0) {
  std::vector<float> c(static_cast<size_t>(p.M) * p.N, std::numeric_limits<float>::quiet_NaN());
  oracle_fp32_cpu(p, c.data(), threads);
  return c;
}

TEST(HalfOrdinal, KnownValues) {
  EXPECT_EQ(HalfOrdinal(1.0), 0x3C00);
  EXPECT_EQ(HalfOrdinal(-2.0), -0x4000);
  EXPECT_EQ(HalfOrdinal(65504.0), 0x7BFF);
  EXPECT_EQ(HalfOrdinal(65519.99), 0x7BFF);
  EXPECT_EQ(HalfOrdinal(65520.0), 0x7C00);
  EXPECT_EQ(HalfOrdinal(-INFINITY), -0x7C00);
  EXPECT_EQ(HalfOrdinal(0x1p-24), 1);
  EXPECT_EQ(HalfOrdinal(1.0 + 0x1p-11), 0x3C00);      // tie -> even
  EXPECT_EQ(HalfOrdinal(1.0 + 3 * 0x1p-11), 0x3C02);  // tie -> even
  EXPECT_EQ(HalfOrdinal(2048.0 - 0x1p-1), 0x6800);    // carries into 2^11
  EXPECT_EQ(HalfOrdinal(0x1p-14 - 0x1p-25), 0x0400);  // subnormal -> min normal
}

TEST(OracleCpu, GoldenCases) {
  std::vector<GoldenCase> cases;
  std::string err;
  ASSERT_TRUE(testing::LoadGoldenCases(&cases, &err)) << err;
  ASSERT_FALSE(cases.empty());
  for (const GoldenCase& g : cases) {
    SCOPED_TRACE(g.name);
    const Nvfp4MatmulProblem p = g.Problem();
    const std::vector<float> c = RunCpu(p);
    const ExactResult exact = ExactMatmul(p);
    int half_exact = 0, cancelling = 0;
    for (size_t i = 0; i < c.size(); ++i) {
      // Our own double evaluation agrees with the file's, so the decoders and the layout
      // are read the same way as the generator's.
      ASSERT_LE(std::fabs(exact.c[i] - g.c_fp64[i]), 1e-12 * exact.bound[i] + 1e-300)
          << "element " << i;
      ASSERT_LE(std::fabs(c[i] - g.c_fp64[i]), exact.bound[i])
          << "element " << i << ": got " << c[i] << " want " << g.c_fp64[i];
      // Rounded to half, the FP32 result matches c_fp16 within one half ulp wherever the
      // FP32 error bound cannot reach past a neighbouring half (no heavy cancellation).
      // Elsewhere rounding's monotonicity still pins it between the halves of ref -+ bound.
      const int64_t got_h = HalfOrdinal(c[i]), want_h = HalfOrdinal(g.c_fp16[i]);
      ASSERT_EQ(want_h, HalfOrdinal(g.c_fp64[i])) << "c_fp16 is not c_fp64 rounded to half";
      const int64_t lo_h = HalfOrdinal(g.c_fp64[i] - exact.bound[i]);
      const int64_t hi_h = HalfOrdinal(g.c_fp64[i] + exact.bound[i]);
      if (lo_h >= want_h - 1 && hi_h <= want_h + 1) {
        ASSERT_LE(std::llabs(got_h - want_h), 1)
            << "element " << i << ": got " << c[i] << " want half " << g.c_fp16[i];
      } else {
        ++cancelling;
        ASSERT_TRUE(lo_h <= got_h && got_h <= hi_h) << "element " << i;
      }
      half_exact += got_h == want_h;
    }
    std::printf(
        "%s: %zu outputs, %d equal to c_fp16 after rounding to half, %d with an FP32 "
        "bound wider than a half ulp\n",
        g.name.c_str(), c.size(), half_exact, cancelling);
  }
}

// The contract: each output is a plain FP32 sum over k in increasing order, then * alpha.
TEST(OracleCpu, BitIdenticalToSequentialFloatLoop) {
  const RandomProblem r = MakeRandomProblem(37, 71, 528, 0.3f, 7, 0, 15);
  const Nvfp4MatmulProblem p = r.Problem();
  const std::vector<float> a = nvfp4_dequantize(p.a, p.a_scales, p.M, p.K);
  const std::vector<float> b = nvfp4_dequantize(p.b, p.b_scales, p.N, p.K);
  const std::vector<float> c = RunCpu(p, 3);
  for (int m = 0; m < p.M; ++m) {
    for (int n = 0; n < p.N; ++n) {
      float s = 0.0f;
      for (int k = 0; k < p.K; ++k) s += a[static_cast<size_t>(m) * p.K + k] * b[n * p.K + k];
      const float want = p.alpha * s;
      const float got = c[static_cast<size_t>(m) * p.N + n];
      ASSERT_EQ(std::memcmp(&got, &want, sizeof got), 0)
          << "(" << m << ", " << n << "): got " << got << " want " << want;
    }
  }
}

TEST(OracleCpu, IndependentOfThreadCount) {
  // 200 x 600 spans several work items in both directions, with tails.
  const RandomProblem r = MakeRandomProblem(200, 600, 1040, 1.0f, 11);
  const std::vector<float> c1 = RunCpu(r.Problem(), 1);
  const std::vector<float> c2 = RunCpu(r.Problem(), 2);
  const std::vector<float> c7 = RunCpu(r.Problem(), 7);
  const std::vector<float> c0 = RunCpu(r.Problem(), 0);
  ASSERT_EQ(std::memcmp(c1.data(), c2.data(), c1.size() * sizeof(float)), 0);
  ASSERT_EQ(std::memcmp(c1.data(), c7.data(), c1.size() * sizeof(float)), 0);
  ASSERT_EQ(std::memcmp(c1.data(), c0.data(), c1.size() * sizeof(float)), 0);
}

TEST(OracleCpu, RandomMediumVsFloat64) {
  const RandomProblem r = MakeRandomProblem(131, 97, 1552, 0.7f, 23, 2, 12);
  const Nvfp4MatmulProblem p = r.Problem();
  const std::vector<float> c = RunCpu(p);
  const ExactResult exact = ExactMatmul(p);
  double worst = 0.0;
  for (size_t i = 0; i < c.size(); ++i) {
    const double err = std::fabs(c[i] - exact.c[i]);
    ASSERT_LE(err, exact.bound[i]) << "element " << i;
    if (exact.bound[i] > 0) worst = std::fmax(worst, err / exact.bound[i]);
  }
  std::printf("worst |error| / bound: %g\n", worst);
}

TEST(OracleCpu, SmallShapesAndTails) {
  struct Shape {
    int m, n, k;
  };
  for (const Shape& s : {Shape{1, 1, 16}, Shape{3, 5, 32}, Shape{4, 16, 16}, Shape{65, 257, 48},
                         Shape{1, 300, 96}}) {
    const RandomProblem r = MakeRandomProblem(s.m, s.n, s.k, 2.0f, 5);
    const Nvfp4MatmulProblem p = r.Problem();
    const std::vector<float> c = RunCpu(p, 2);
    const ExactResult exact = ExactMatmul(p);
    for (size_t i = 0; i < c.size(); ++i) {
      ASSERT_LE(std::fabs(c[i] - exact.c[i]), exact.bound[i])
          << s.m << "x" << s.n << "x" << s.k << " element " << i;
    }
  }
}

TEST(OracleCpu, KnownTinyProblem) {
  // a = [1 x 16] all code 2 (1.0) with scale 2.0; b row 0 all code 1 (0.5) with scale 1.0,
  // row 1 codes alternating 7 (6) and 15 (-6) with scale 448: c = [16, 0] * alpha.
  const std::vector<uint8_t> a(8, 0x22), a_scales = {0x40};
  std::vector<uint8_t> b(16);
  for (int j = 0; j < 8; ++j) {
    b[j] = 0x11;
    b[8 + j] = 0xF7;
  }
  const std::vector<uint8_t> b_scales = {0x38, 0x7E};
  Nvfp4MatmulProblem p;
  p.M = 1;
  p.N = 2;
  p.K = 16;
  p.a = a.data();
  p.a_scales = a_scales.data();
  p.b = b.data();
  p.b_scales = b_scales.data();
  p.alpha = 0.5f;
  const std::vector<float> c = RunCpu(p, 1);
  EXPECT_EQ(c[0], 8.0f);
  EXPECT_EQ(c[1], 0.0f);
}

TEST(OracleCpu, NanScalePropagatesToItsRowOnly) {
  RandomProblem r = MakeRandomProblem(5, 9, 64, 1.0f, 3);
  r.a_scales[1 * 4 + 2] = 0x7F;  // row 1, block 2
  const std::vector<float> c = RunCpu(r.Problem(), 2);
  for (int m = 0; m < 5; ++m) {
    for (int n = 0; n < 9; ++n) {
      EXPECT_EQ(std::isnan(c[m * 9 + n]), m == 1) << m << ", " << n;
    }
  }
}

}  // namespace
}  // namespace fp4arena
