// The test-only challenge end to end on the CPU: spec, generators, oracle with its tie mask,
// validation of right and wrong answers, scoring in GB/s against the DRAM limit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "harness/challenge.h"
#include "harness/spec.h"
#include "harness/validate.h"
#include "harness/verdict.h"
#include "tests/test_util.h"

namespace fp4arena {
namespace {

class ToyQuantize : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string err;
    ASSERT_TRUE(load_spec(testing_util::toy_challenge_dir(), &spec_, &err)) << err;
    challenge_ = make_challenge(spec_.name);
    ASSERT_NE(challenge_, nullptr);
  }
  ProblemData gen(const std::string& name, uint64_t seed) {
    ProblemData d;
    std::string err;
    EXPECT_TRUE(challenge_->generate(*spec_.find_case(name), seed, &d, &err)) << err;
    return d;
  }
  Expected oracle(const ProblemData& d) {
    Expected e;
    std::string err;
    EXPECT_TRUE(challenge_->oracle(d, OracleDevice::kCpu, &e, &err)) << err;
    return e;
  }
  // A solution computed on the CPU: q from the reciprocal (another evaluation order) or
  // with half-away-from-zero rounding, s from the oracle's formula.
  std::vector<uint8_t> solve_q(const ProblemData& d, bool half_away, bool reciprocal) {
    const int64_t M = d.dims.at("M"), K = d.dims.at("K");
    std::vector<uint8_t> q(size_t(M * K));
    for (int64_t m = 0; m < M; ++m) {
      float amax = 0;
      for (int64_t k = 0; k < K; ++k) amax = std::max(amax, std::fabs(x(d, m * K + k)));
      float s = bf16_round(amax > 0 ? amax / 127.0f : 1.0f);
      for (int64_t k = 0; k < K; ++k) {
        float v = reciprocal ? x(d, m * K + k) * (1.0f / s) : x(d, m * K + k) / s;
        float r = half_away ? std::trunc(v + std::copysign(0.5f, v)) : std::nearbyint(v);
        q[size_t(m * K + k)] = uint8_t(std::max(0.0f, std::min(255.0f, 128.0f + r)));
      }
    }
    return q;
  }
  static float x(const ProblemData& d, int64_t i) {
    uint16_t h;
    std::memcpy(&h, d.buffers.at("x").data() + 2 * i, 2);
    return bf16_bits_to_float(h);
  }
  static float bf16_round(float f) {
    uint32_t b;
    std::memcpy(&b, &f, 4);
    b += 0x7FFF + ((b >> 16) & 1);
    return bf16_bits_to_float(uint16_t(b >> 16));
  }
  OutputReport check_q(const ProblemData& d, const std::vector<uint8_t>& q, const Expected& e) {
    int64_t rows = 0, cols = 0;
    output_matrix(*spec_.find_param("q"), d.dims, &rows, &cols);
    return compare_output(*spec_.find_param("q"), rows, cols, q.data(), Poison{0}, nullptr,
                          Poison{0xFF}, e.at("q"));
  }
  Spec spec_;
  std::unique_ptr<Challenge> challenge_;
};

TEST_F(ToyQuantize, SpecDeclaresTwoOutputsAndAGbpsMetric) {
  ASSERT_EQ(spec_.outputs().size(), 2u);
  EXPECT_EQ(spec_.outputs()[0]->compare.kind, CompareKind::kExactOrTie);
  EXPECT_EQ(spec_.outputs()[1]->dtype, DType::kBf16);
  EXPECT_EQ(spec_.metric.kind, MetricKind::kGbps);
  EXPECT_EQ(spec_.limit, LimitKind::kDram);
  EXPECT_EQ(c_prototype(spec_),
            "extern \"C\" void solve(const __nv_bfloat16* x, uint8_t* q, __nv_bfloat16* s, int M, "
            "int K)");
  EXPECT_DOUBLE_EQ(case_workload(spec_, spec_.benchmarks[0].dims), 3.0 * 4096 * 4096 + 2 * 4096);
}

TEST_F(ToyQuantize, ExampleWorkedByHand) {
  ProblemData d = gen("example", 1);
  Expected e = oracle(d);
  // amax 127 -> s = 1; q = 128 + rne(127, -63.5, 0.25, 2.5) = 255, 64 (-64: even), 128, 130.
  EXPECT_EQ(e["s"].values, std::vector<float>({1.0f}));
  EXPECT_EQ(e["q"].bytes, std::vector<uint8_t>({255, 64, 128, 130}));
  EXPECT_EQ(e["q"].tie, std::vector<uint8_t>({0, 0, 0, 0}));  // exact midpoints are no ties
}

TEST_F(ToyQuantize, ReciprocalOrderPassesOnlyThroughTies) {
  int64_t ties = 0, differ = 0;
  for (uint64_t seed = 0; seed < 20; ++seed) {
    ProblemData d = gen("random_tails", seed);
    Expected e = oracle(d);
    std::vector<uint8_t> q = solve_q(d, false, true);
    OutputReport r = check_q(d, q, e);
    EXPECT_TRUE(r.passed) << r.summary;
    for (size_t i = 0; i < q.size(); ++i) {
      differ += q[i] != e["q"].bytes[i];
      ties += e["q"].tie[i];
    }
  }
  EXPECT_LE(differ, ties);
  EXPECT_LT(ties, 20 * 37 * 129 / 100);  // ties are rare
}

TEST_F(ToyQuantize, HalfAwayFromZeroFailsOnMidpoints) {
  ProblemData d = gen("midpoints", 2);
  Expected e = oracle(d);
  OutputReport good = check_q(d, solve_q(d, false, false), e);
  EXPECT_TRUE(good.passed) << good.summary;
  OutputReport bad = check_q(d, solve_q(d, true, false), e);
  EXPECT_FALSE(bad.passed);
  EXPECT_GT(bad.mismatches, 10);
  ASSERT_FALSE(bad.worst.empty());
  EXPECT_TRUE(bad.worst[0].codes);
}

TEST_F(ToyQuantize, ScoreIsInGbpsAgainstTheDramLimit) {
  const double bytes = case_workload(spec_, spec_.benchmarks[0].dims);
  const double gbps = spec_.metric.value(bytes, 0.02);  // 50.3 MB in 20 us: 2517 GB/s
  EXPECT_NEAR(gbps, 2516.992, 1e-3);
  Score ok = compute_score({gbps}, 5, 5, 4917.0, "dram", "GB/s");
  EXPECT_TRUE(ok.valid) << ok.reason;
  EXPECT_DOUBLE_EQ(*ok.geomean, gbps);
  // 5 us would be 10068 GB/s: above an H200's 4917 GB/s, so no correct solution can.
  Score over = compute_score({spec_.metric.value(bytes, 0.005)}, 5, 5, 4917.0, "dram", "GB/s");
  EXPECT_FALSE(over.valid);
  EXPECT_NE(over.reason.find("over_limit"), std::string::npos) << over.reason;
  EXPECT_NE(over.reason.find("dram limit of 4917.0 GB/s"), std::string::npos) << over.reason;
}

}  // namespace
}  // namespace fp4arena
