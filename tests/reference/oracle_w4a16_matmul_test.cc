#include "reference/oracle_w4a16_matmul.h"

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
using testing::ExactW4a16;
using testing::HalfFromBits;
using testing::MakeRandomW4a16;
using testing::OwnedW4a16Problem;

constexpr float kNan = std::numeric_limits<float>::quiet_NaN();

std::vector<float> RunCpu(const W4a16MatmulProblem& p, int threads = 0) {
  std::vector<float> y(static_cast<size_t>(p.M) * p.N, kNan);
  std::string err;
  EXPECT_TRUE(oracle_w4a16_matmul_cpu(p, y.data(), &err, threads)) << err;
  return y;
}

// A problem of constant rows: every x row, w byte and scale given per row.
OwnedW4a16Problem ConstantProblem(int M, int N, int K, int group_size,
                                  const std::vector<uint16_t>& x_row_bits,
                                  const std::vector<uint8_t>& w_row_byte,
                                  const std::vector<uint16_t>& scale_bits_row_major) {
  OwnedW4a16Problem r;
  r.M = M;
  r.N = N;
  r.K = K;
  r.group_size = group_size;
  for (int m = 0; m < M; ++m) r.x.insert(r.x.end(), K, HalfFromBits(x_row_bits[m]));
  for (int n = 0; n < N; ++n) r.w.insert(r.w.end(), K / 2, w_row_byte[n]);
  for (uint16_t bits : scale_bits_row_major) r.w_scales.push_back(HalfFromBits(bits));
  return r;
}

// The oracles convert FP16 with CUDA's __half2float (on the host here); the double
// reference decodes the bit fields itself. They agree on every finite half.
TEST(OracleW4a16Cpu, HalfConversionMatchesBitFieldsEverywhere) {
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    if (((bits >> 10) & 0x1F) == 0x1F) continue;  // infinities and NaNs
    const float got = __half2float(HalfFromBits(static_cast<uint16_t>(bits)));
    const double want = testing::HalfBitsToDouble(static_cast<uint16_t>(bits));
    ASSERT_EQ(static_cast<double>(got), want) << std::hex << "bits 0x" << bits;
    ASSERT_EQ(std::signbit(got), (bits & 0x8000) != 0) << std::hex << "bits 0x" << bits;
  }
}

TEST(OracleW4a16Cpu, HandWorkedOneGroup) {
  // K = 32, one group. x = 0.5 everywhere (half 0x3800).
  // w row 0: bytes 0x21 -> even k code 1 (0.5), odd k code 2 (1.0); scale 2.0 (0x4000):
  //   w_deq = 1, 2, 1, 2, ...; y = 16 * 0.5 * 1 + 16 * 0.5 * 2 = 8 + 16 = 24.
  // w row 1: bytes 0xF7 -> even code 7 (6), odd code 15 (-6); scale 65504 (0x7BFF):
  //   products +-0.5 * 6 * 65504 = +-196512 alternate, each pair cancels exactly: y = 0.
  const OwnedW4a16Problem r =
      ConstantProblem(1, 2, 32, 32, {0x3800}, {0x21, 0xF7}, {0x4000, 0x7BFF});
  const std::vector<float> y = RunCpu(r.Problem(), 1);
  EXPECT_EQ(y[0], 24.0f);
  EXPECT_EQ(y[1], 0.0f);
}

TEST(OracleW4a16Cpu, HandWorkedTwoGroups) {
  // K = 64, group_size 32: w all code 3 (1.5, bytes 0x33), scales 0.25 (0x3400) for
  // k < 32 and -3 (0xC200) for k >= 32; x row 0 = 1 (0x3C00), row 1 = -2 (0xC000).
  //   row 0: 32 * 1.5 * 0.25 + 32 * 1.5 * -3 = 12 - 144 = -132;  row 1: -2 * -132 = 264.
  const OwnedW4a16Problem r =
      ConstantProblem(2, 1, 64, 32, {0x3C00, 0xC000}, {0x33}, {0x3400, 0xC200});
  const std::vector<float> y = RunCpu(r.Problem(), 2);
  EXPECT_EQ(y[0], -132.0f);
  EXPECT_EQ(y[1], 264.0f);
}

TEST(OracleW4a16Cpu, SubnormalScales) {
  // Scale 2^-24 (0x0001, the smallest FP16 subnormal), x = 1024 (0x6400), w code 7 (6):
  //   each product 1024 * 6 * 2^-24 = 6 * 2^-14, K = 32 terms: y = 192 * 2^-14 = 3 * 2^-8.
  // Scale 1023 * 2^-24 (0x03FF, the largest subnormal), x = 2^-14 (0x0400, smallest
  // normal), w code 1 (0.5): each product 1023 * 2^-39, y = 32 * 1023 * 2^-39 = 1023 * 2^-34.
  const OwnedW4a16Problem a = ConstantProblem(1, 1, 32, 32, {0x6400}, {0x77}, {0x0001});
  EXPECT_EQ(RunCpu(a.Problem())[0], 3.0f * 0x1p-8f);
  const OwnedW4a16Problem b = ConstantProblem(1, 1, 32, 32, {0x0400}, {0x11}, {0x03FF});
  EXPECT_EQ(RunCpu(b.Problem())[0], 1023.0f * 0x1p-34f);
}

TEST(OracleW4a16Cpu, TopOfHalfRange) {
  // group_size 128, K = 128. x = 65504, scale 65504, and only k = 0 has a nonzero code
  // (7, i.e. 6): y = 6 * 65504^2 = 25744644096 = 3 * 2047^2 * 2^11, a 24-bit odd part, so
  // exact in FP32. The other 127 products are +-0.
  OwnedW4a16Problem r = ConstantProblem(1, 1, 128, 128, {0x7BFF}, {0x00}, {0x7BFF});
  r.w[0] = 0x07;
  EXPECT_EQ(RunCpu(r.Problem())[0], 25744644096.0f);
  // Negative scale -65504 (0xFBFF), code 15 (-6): the same magnitude, positive.
  r.w_scales[0] = HalfFromBits(0xFBFF);
  r.w[0] = 0x0F;
  EXPECT_EQ(RunCpu(r.Problem())[0], 25744644096.0f);
}

// The contract: each output is a plain FP32 sum over k in increasing order of
// x * (e2m1 * scale).
TEST(OracleW4a16Cpu, BitIdenticalToSequentialFloatLoop) {
  for (int group : {32, 128}) {
    const OwnedW4a16Problem r = MakeRandomW4a16(37, 71, 512, group, 7 + group);
    const W4a16MatmulProblem p = r.Problem();
    const std::vector<float> y = RunCpu(p, 3);
    for (int m = 0; m < p.M; ++m) {
      for (int n = 0; n < p.N; ++n) {
        float s = 0.0f;
        for (int k = 0; k < p.K; ++k) {
          const uint8_t byte = p.w[(n * p.K + k) / 2];
          const float w = e2m1_decode((k & 1) ? byte >> 4 : byte & 0xF) *
                          __half2float(p.w_scales[n * (p.K / group) + k / group]);
          s += __half2float(p.x[m * p.K + k]) * w;
        }
        const float got = y[static_cast<size_t>(m) * p.N + n];
        ASSERT_EQ(std::memcmp(&got, &s, sizeof got), 0)
            << "group " << group << " (" << m << ", " << n << "): got " << got << " want " << s;
      }
    }
  }
}

TEST(OracleW4a16Cpu, IndependentOfThreadCount) {
  // 130 x 600 spans several work items in both directions, with tails; K spans two k-blocks.
  const OwnedW4a16Problem r = MakeRandomW4a16(130, 600, 640, 128, 11);
  const std::vector<float> y1 = RunCpu(r.Problem(), 1);
  for (int threads : {2, 7, 0}) {
    const std::vector<float> yt = RunCpu(r.Problem(), threads);
    ASSERT_EQ(std::memcmp(y1.data(), yt.data(), y1.size() * sizeof(float)), 0)
        << threads << " threads";
  }
}

TEST(OracleW4a16Cpu, RandomVsFloat64) {
  struct Case {
    int m, n, k, group;
    int s_exp_lo, s_exp_hi;  // FP16 exponent fields of the scales
  };
  // Scales from subnormal (field 0) through the top binade (field 30, up to 65504).
  for (const Case& c :
       {Case{1, 1, 32, 32, 5, 16}, Case{3, 17, 96, 32, 0, 4}, Case{65, 257, 256, 128, 26, 30},
        Case{70, 90, 1024, 32, 0, 30}, Case{5, 300, 384, 128, 10, 20}}) {
    const OwnedW4a16Problem r =
        MakeRandomW4a16(c.m, c.n, c.k, c.group, c.m * 1000 + c.k, 10, 20, c.s_exp_lo, c.s_exp_hi);
    const W4a16MatmulProblem p = r.Problem();
    const std::vector<float> y = RunCpu(p, 2);
    const ExactOutputs exact = ExactW4a16(p);
    double worst = 0;
    for (size_t i = 0; i < y.size(); ++i) {
      const double err = std::fabs(y[i] - exact.y[i]);
      ASSERT_LE(err, exact.bound[i]) << c.m << "x" << c.n << "x" << c.k << " element " << i
                                     << ": got " << y[i] << " want " << exact.y[i];
      worst = std::fmax(worst, err / exact.bound[i]);
    }
    std::printf("%dx%dx%d group %d: worst |error| / bound %.3g\n", c.m, c.n, c.k, c.group, worst);
  }
}

TEST(OracleW4a16Cpu, DegenerateShapes) {
  OwnedW4a16Problem r = MakeRandomW4a16(3, 0, 32, 32, 1);
  std::string err;
  EXPECT_TRUE(oracle_w4a16_matmul_cpu(r.Problem(), nullptr, &err)) << err;  // nothing to write
  r = MakeRandomW4a16(3, 2, 0, 32, 1);
  std::vector<float> y(6, kNan);
  EXPECT_TRUE(oracle_w4a16_matmul_cpu(r.Problem(), y.data(), &err)) << err;
  for (float v : y) EXPECT_EQ(v, 0.0f);
}

TEST(OracleW4a16Cpu, InvalidProblemsRejected) {
  const OwnedW4a16Problem r = MakeRandomW4a16(2, 3, 64, 32, 1);
  struct Bad {
    const char* what;
    void (*edit)(W4a16MatmulProblem*);
  };
  const Bad bad[] = {
      {"negative M", [](W4a16MatmulProblem* p) { p->M = -1; }},
      {"odd K", [](W4a16MatmulProblem* p) { p->K = 63; }},
      {"group_size 0", [](W4a16MatmulProblem* p) { p->group_size = 0; }},
      {"K not a multiple of group_size", [](W4a16MatmulProblem* p) { p->group_size = 128; }},
      {"null x", [](W4a16MatmulProblem* p) { p->x = nullptr; }},
      {"null w_scales", [](W4a16MatmulProblem* p) { p->w_scales = nullptr; }},
  };
  for (const Bad& b : bad) {
    W4a16MatmulProblem p = r.Problem();
    b.edit(&p);
    std::vector<float> y(6, 7.0f);
    std::string err;
    EXPECT_FALSE(oracle_w4a16_matmul_cpu(p, y.data(), &err)) << b.what;
    EXPECT_NE(err.find("oracle_w4a16_matmul_cpu: "), std::string::npos) << err;
    EXPECT_FALSE(w4a16_matmul_problem_error(p).empty()) << b.what;
    for (float v : y) EXPECT_EQ(v, 7.0f) << b.what << ": output touched";
  }
  std::string err;
  EXPECT_FALSE(oracle_w4a16_matmul_cpu(r.Problem(), nullptr, &err));
  EXPECT_NE(err.find("y is null"), std::string::npos) << err;
}

}  // namespace
}  // namespace fp4arena
