#include "reference/oracle_w4a8_grouped_gemm.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "reference/fp4_codecs.h"
#include "tests/reference/w4_cases.h"

namespace fp4arena {
namespace {

using testing::ExactOutputs;
using testing::ExactW4a8Grouped;
using testing::MakeRandomW4a8Grouped;
using testing::OwnedW4a8GroupedProblem;

constexpr float kNan = std::numeric_limits<float>::quiet_NaN();

std::vector<float> RunCpu(const W4a8GroupedGemmProblem& p, int threads = 0) {
  std::vector<float> y(static_cast<size_t>(p.T) * p.N, kNan);
  std::string err;
  EXPECT_TRUE(oracle_w4a8_grouped_gemm_cpu(p, y.data(), &err, threads)) << err;
  return y;
}

// The oracle against the double reference, every element within the FP32 bound.
void ExpectWithinBound(const W4a8GroupedGemmProblem& p, const std::string& what) {
  const std::vector<float> y = RunCpu(p, 3);
  const ExactOutputs exact = ExactW4a8Grouped(p);
  double worst = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    const double err = std::fabs(y[i] - exact.y[i]);
    ASSERT_LE(err, exact.bound[i]) << what << " element " << i << " (row " << i / p.N << "): got "
                                   << y[i] << " want " << exact.y[i];
    worst = std::fmax(worst, err / exact.bound[i]);
  }
  std::printf("%s: T=%d N=%d K=%d G=%d, worst |error| / bound %.3g\n", what.c_str(), p.T, p.N, p.K,
              p.G, worst);
}

TEST(OracleW4a8GroupedCpu, HandWorked) {
  // T = 3, N = 2, K = 16, G = 3, offsets {0, 2, 2, 3}: rows 0-1 expert 0, expert 1 empty,
  // row 2 expert 2. E4M3: 0x38 = 1, 0x40 = 2, 0x30 = 0.5, 0x7E = 448, 0x01 = 2^-9.
  OwnedW4a8GroupedProblem r;
  r.T = 3;
  r.N = 2;
  r.K = 16;
  r.G = 3;
  r.group_offsets = {0, 2, 2, 3};
  r.x.assign(3 * 16, 0x00);
  for (int k = 0; k < 16; ++k) {
    r.x[k] = 0x38;       // row 0: all 1
    r.x[16 + k] = 0x40;  // row 1: all 2
  }
  r.x[32] = 0x7E;  // row 2: 448 at k = 0, zeros after
  r.x_scales = {0.5f, 1.0f, 0.25f};
  r.w.assign(3 * 2 * 8, 0x00);
  r.w_scales.assign(3 * 2, 0x00);
  // Expert 0, n = 0: code 2 (1) everywhere, scale 1: w_deq = 1.
  // Expert 0, n = 1: bytes 0x71 -> even k code 1 (0.5), odd k code 7 (6); scale 0.5:
  //   w_deq = 0.25, 3, 0.25, 3, ...
  for (int j = 0; j < 8; ++j) {
    r.w[0 * 8 + j] = 0x22;
    r.w[1 * 8 + j] = 0x71;
  }
  r.w_scales[0] = 0x38;
  r.w_scales[1] = 0x30;
  // Expert 1 is empty: NaN scales and a NaN global scale must not reach any output.
  r.w_scales[2] = r.w_scales[3] = 0x7F;
  // Expert 2, n = 0: code 7 (6), scale 448; n = 1: code 9 (-0.5), scale 2^-9.
  for (int j = 0; j < 8; ++j) {
    r.w[4 * 8 + j] = 0x77;
    r.w[5 * 8 + j] = 0x99;
  }
  r.w_scales[4] = 0x7E;
  r.w_scales[5] = 0x01;
  r.w_global = {2.0f, kNan, 0.125f};
  // row 0, n 0: s = 16 * 1 * 1 = 16;                y = 0.5 * (2 * 16) = 16
  // row 0, n 1: s = 8 * 0.25 + 8 * 3 = 26;          y = 0.5 * (2 * 26) = 26
  // row 1, n 0: s = 16 * 2 * 1 = 32;                y = 1 * (2 * 32) = 64
  // row 1, n 1: s = 8 * 2 * 0.25 + 8 * 2 * 3 = 52;  y = 1 * (2 * 52) = 104
  // row 2, n 0: s = 448 * 6 * 448 = 1204224;        y = 0.25 * (0.125 * 1204224) = 37632
  // row 2, n 1: s = 448 * -0.5 * 2^-9 = -0.4375;    y = 0.25 * (0.125 * -0.4375)
  //                                                   = -0.013671875
  const std::vector<float> y = RunCpu(r.Problem(), 2);
  const std::vector<float> want = {16, 26, 64, 104, 37632, -0.013671875f};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(y[i], want[i]) << "element " << i;
}

// The contract: each output is a plain FP32 sum over k in increasing order of
// e4m3(x) * (e2m1 * e4m3(scale)), then x_scale * (w_global * s).
TEST(OracleW4a8GroupedCpu, BitIdenticalToSequentialFloatLoop) {
  const OwnedW4a8GroupedProblem r = MakeRandomW4a8Grouped({5, 0, 70, 1, 0, 33}, 41, 528, 3);
  const W4a8GroupedGemmProblem p = r.Problem();
  const std::vector<float> y = RunCpu(p, 3);
  for (int g = 0; g < p.G; ++g) {
    for (int t = p.group_offsets[g]; t < p.group_offsets[g + 1]; ++t) {
      for (int n = 0; n < p.N; ++n) {
        const size_t wrow = static_cast<size_t>(g) * p.N + n;
        float s = 0.0f;
        for (int k = 0; k < p.K; ++k) {
          const uint8_t byte = p.w[wrow * p.K / 2 + k / 2];
          const float w = e2m1_decode((k & 1) ? byte >> 4 : byte & 0xF) *
                          e4m3_decode(p.w_scales[wrow * p.K / 16 + k / 16]);
          s += e4m3_decode(p.x[static_cast<size_t>(t) * p.K + k]) * w;
        }
        const float want = p.x_scales[t] * (p.w_global[g] * s);
        const float got = y[static_cast<size_t>(t) * p.N + n];
        ASSERT_EQ(std::memcmp(&got, &want, sizeof got), 0)
            << "(" << t << ", " << n << "): got " << got << " want " << want;
      }
    }
  }
}

TEST(OracleW4a8GroupedCpu, IndependentOfThreadCount) {
  // Uneven experts, some spanning several row tiles, empty ones between; N with a tail.
  const OwnedW4a8GroupedProblem r =
      MakeRandomW4a8Grouped({0, 130, 3, 0, 0, 64, 65, 1, 0}, 300, 640, 11);
  const std::vector<float> y1 = RunCpu(r.Problem(), 1);
  for (int threads : {2, 7, 0}) {
    const std::vector<float> yt = RunCpu(r.Problem(), threads);
    ASSERT_EQ(std::memcmp(y1.data(), yt.data(), y1.size() * sizeof(float)), 0)
        << threads << " threads";
  }
}

TEST(OracleW4a8GroupedCpu, RandomVsFloat64) {
  ExpectWithinBound(MakeRandomW4a8Grouped({17, 0, 40, 9}, 70, 1024, 21).Problem(), "mixed");
  ExpectWithinBound(MakeRandomW4a8Grouped({0, 0, 0}, 33, 64, 22).Problem(), "no rows");
  ExpectWithinBound(MakeRandomW4a8Grouped({0, 0, 0, 100, 0}, 45, 256, 23).Problem(),
                    "one expert holds all rows");
  ExpectWithinBound(MakeRandomW4a8Grouped({1}, 19, 16, 24).Problem(), "T=1, K=16");
  ExpectWithinBound(MakeRandomW4a8Grouped({0, 1, 0}, 300, 16, 25).Problem(),
                    "T=1 in the middle expert, K=16");
  ExpectWithinBound(MakeRandomW4a8Grouped({3, 1, 4, 1, 5, 9, 2, 6}, 17, 48, 26).Problem(),
                    "eight small experts");
}

TEST(OracleW4a8GroupedCpu, EmptyExpertsNeverTouchOutputs) {
  // NaN weights in every empty expert: no output may become NaN.
  OwnedW4a8GroupedProblem r = MakeRandomW4a8Grouped({0, 6, 0, 0, 5, 0}, 20, 32, 31);
  for (int g : {0, 2, 3, 5}) {
    for (size_t i = 0; i < static_cast<size_t>(r.N) * r.K / 16; ++i) {
      r.w_scales[g * r.N * r.K / 16 + i] = 0x7F;
    }
    r.w_global[g] = kNan;
  }
  for (float v : RunCpu(r.Problem())) EXPECT_FALSE(std::isnan(v));
}

TEST(OracleW4a8GroupedCpu, DegenerateShapes) {
  std::string err;
  // T = 0: offsets all 0, nothing to write.
  OwnedW4a8GroupedProblem r = MakeRandomW4a8Grouped({0, 0}, 8, 32, 1);
  EXPECT_TRUE(oracle_w4a8_grouped_gemm_cpu(r.Problem(), nullptr, &err)) << err;
  // K = 0: every sum is 0, so y = x_scale * (w_global * 0) = 0.
  r = MakeRandomW4a8Grouped({2, 1}, 3, 0, 1);
  std::vector<float> y(9, kNan);
  EXPECT_TRUE(oracle_w4a8_grouped_gemm_cpu(r.Problem(), y.data(), &err)) << err;
  for (float v : y) EXPECT_EQ(v, 0.0f);
}

TEST(OracleW4a8GroupedCpu, MalformedProblemsRejected) {
  const OwnedW4a8GroupedProblem r = MakeRandomW4a8Grouped({2, 0, 3}, 4, 32, 1);
  struct Bad {
    const char* what;
    std::vector<int> offsets;  // empty: keep r's
    void (*edit)(W4a8GroupedGemmProblem*);
    const char* message;  // expected in the error
  };
  const Bad bad[] = {
      {"offsets[0] != 0", {1, 2, 2, 5}, nullptr, "group_offsets[0] is 1"},
      {"decreasing", {0, 3, 2, 5}, nullptr, "decrease at expert 1"},
      {"last != T", {0, 2, 2, 4}, nullptr, "group_offsets[G] is 4, not T = 5"},
      {"past T", {0, 2, 6, 6}, nullptr, "group_offsets[G] is 6"},
      {"negative offset", {0, -1, 2, 5}, nullptr, "decrease at expert 0"},
      {"null offsets",
       {},
       [](W4a8GroupedGemmProblem* p) { p->group_offsets = nullptr; },
       "group_offsets is null"},
      {"K % 16", {}, [](W4a8GroupedGemmProblem* p) { p->K = 24; }, "multiple of 16"},
      {"negative G", {}, [](W4a8GroupedGemmProblem* p) { p->G = -1; }, ">= 0"},
      {"null x_scales",
       {},
       [](W4a8GroupedGemmProblem* p) { p->x_scales = nullptr; },
       "x_scales is null"},
      {"null w_global",
       {},
       [](W4a8GroupedGemmProblem* p) { p->w_global = nullptr; },
       "w_global is null"},
  };
  for (const Bad& b : bad) {
    W4a8GroupedGemmProblem p = r.Problem();
    if (!b.offsets.empty()) p.group_offsets = b.offsets.data();
    if (b.edit != nullptr) b.edit(&p);
    std::vector<float> y(20, 7.0f);
    std::string err;
    EXPECT_FALSE(oracle_w4a8_grouped_gemm_cpu(p, y.data(), &err)) << b.what;
    EXPECT_NE(err.find("oracle_w4a8_grouped_gemm_cpu: "), std::string::npos) << err;
    EXPECT_NE(err.find(b.message), std::string::npos) << b.what << ": " << err;
    for (float v : y) EXPECT_EQ(v, 7.0f) << b.what << ": output touched";
  }
  std::string err;
  EXPECT_FALSE(oracle_w4a8_grouped_gemm_cpu(r.Problem(), nullptr, &err));
  EXPECT_NE(err.find("y is null"), std::string::npos) << err;
}

}  // namespace
}  // namespace fp4arena
