// harness/rng.h: the generators' normal draw is the standard normal (moments, tails, and the
// distribution function against the exact one) and the same for the same (seed, stream, index).
#include "harness/rng.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace fp4arena {
namespace {

TEST(Rng, NormalIsTheStandardNormal) {
  // 2^22 draws over 64 rows, as a generator draws them (one Rng a row).
  const int rows = 64, per_row = 1 << 16;
  std::vector<double> v;
  v.reserve(size_t(rows) * per_row);
  for (int r = 0; r < rows; ++r) {
    Rng rng(20261202, 3, uint64_t(r));
    for (int i = 0; i < per_row; ++i) v.push_back(rng.normal());
  }
  const double n = double(v.size());
  double s1 = 0, s2 = 0, s4 = 0;
  for (double x : v) {
    ASSERT_TRUE(std::isfinite(x));
    s1 += x;
    s2 += x * x;
    s4 += x * x * x * x;
  }
  // Each within five standard errors: the mean's is 1/sqrt(n), the second moment's
  // sqrt(2/n), the fourth's sqrt(96/n).
  EXPECT_NEAR(s1 / n, 0.0, 5 / std::sqrt(n));
  EXPECT_NEAR(s2 / n, 1.0, 5 * std::sqrt(2 / n));
  EXPECT_NEAR(s4 / n, 3.0, 5 * std::sqrt(96 / n));
  // The tails, the base layer's edge (3.654...) and past it among them, against
  // P(|x| > t) = erfc(t / sqrt(2)), within five binomial standard errors.
  for (double t : {0.5, 1.0, 2.0, 3.0, 3.6541528853610088, 4.0, 4.5}) {
    const double p = std::erfc(t / std::sqrt(2.0));
    const double got =
        double(std::count_if(v.begin(), v.end(), [t](double x) { return std::fabs(x) > t; })) / n;
    EXPECT_NEAR(got, p, 5 * std::sqrt(p * (1 - p) / n) + 1 / n) << "t = " << t;
  }
  // Kolmogorov-Smirnov: the largest gap between the sample's distribution function and the
  // normal's, on a grid of 321 points, under 1.95 / sqrt(n) (a 0.1% level).
  std::sort(v.begin(), v.end());
  double worst = 0;
  for (int k = -160; k <= 160; ++k) {
    const double t = k / 40.0;
    const double below = double(std::lower_bound(v.begin(), v.end(), t) - v.begin()) / n;
    worst = std::max(worst, std::fabs(below - 0.5 * std::erfc(-t / std::sqrt(2.0))));
  }
  EXPECT_LT(worst, 1.95 / std::sqrt(n));
}

TEST(Rng, TheSameSeedStreamAndIndexGiveTheSameNormals) {
  Rng a(7, 1, 42), b(7, 1, 42), c(7, 1, 43);
  bool differs = false;
  for (int i = 0; i < 1000; ++i) {
    const double x = a.normal();
    EXPECT_EQ(x, b.normal());
    differs |= x != c.normal();
  }
  EXPECT_TRUE(differs);
}

}  // namespace
}  // namespace fp4arena
