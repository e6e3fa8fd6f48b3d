// The nvfp4_matmul challenge's generators: deterministic, within the spec, and each one
// doing what its case promises.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "harness/challenge.h"
#include "harness/spec.h"
#include "reference/fp4_codecs.h"
#include "tests/challenge_test.h"
#include "tests/test_util.h"

namespace fp4arena {
namespace {

class Nvfp4Generators : public testing_util::ChallengeTest {
 protected:
  Nvfp4Generators() : ChallengeTest(testing_util::challenge_dir(), "c") {}

  std::set<uint8_t> nibbles(const std::vector<uint8_t>& packed) {
    std::set<uint8_t> s;
    for (uint8_t b : packed) {
      s.insert(b & 0xF);
      s.insert(b >> 4);
    }
    return s;
  }
};

TEST_F(Nvfp4Generators, ExampleMatchesTheReadme) {
  ProblemData d = gen(find("example"), 1);
  EXPECT_EQ(d.buffers["a"][16], 0xA5);  // row 1: element 0 = 3 (low), element 1 = -1 (high)
  std::vector<float> c = expect(d);
  ASSERT_EQ(c.size(), 4u);
  EXPECT_EQ(c[0], 8.0f);
  EXPECT_EQ(c[1], 0.3125f);
  EXPECT_EQ(c[2], 1.0f);
  EXPECT_EQ(c[3], 0.375f);
}

TEST_F(Nvfp4Generators, EveryCaseIsDeterministicAndWithinSpec) {
  for (const auto* list : {&spec_.tests, &spec_.benchmarks}) {
    for (const CaseSpec& c : *list) {
      SCOPED_TRACE(c.name);
      std::string err;
      ASSERT_TRUE(challenge_->check_case(c, &err)) << err;
      ProblemData d1 = gen(c, c.seed), d2 = gen(c, c.seed);
      EXPECT_EQ(d1.buffers, d2.buffers);
      EXPECT_EQ(d1.scalars, d2.scalars);
      for (const ParamSpec& p : spec_.params) {
        if (p.role != "in") continue;
        ASSERT_EQ(d1.buffers[p.name].size(), buffer_bytes(p, c.dims));
      }
      for (const char* s : {"a_scales", "b_scales"}) {
        for (uint8_t code : d1.buffers[s]) ASSERT_FALSE(e4m3_is_nan(code)) << s;
      }
      double alpha = d1.scalars.at("alpha");
      EXPECT_TRUE(std::isfinite(alpha) && alpha > 0);
      if (c.generator != "example" && c.generator != "all_e2m1_codes" &&
          c.generator != "all_scale_codes" && c.generator != "zero_a") {
        ProblemData d3 = gen(c, c.seed + 1);
        EXPECT_NE(d1.buffers["b"], d3.buffers["b"]) << "another seed must give other data";
      }
    }
  }
}

TEST_F(Nvfp4Generators, ExpectedValuesAreFiniteHalfValuesAndNotTrivial) {
  for (const CaseSpec& c : spec_.tests) {
    SCOPED_TRACE(c.name);
    ProblemData d = gen(c, c.seed);
    std::vector<float> out = expect(d);
    double amax = 0;
    for (float v : out) {
      ASSERT_TRUE(std::isfinite(v));
      amax = std::max(amax, std::fabs(double(v)));
    }
    EXPECT_LE(amax, 65504.0);
    if (c.generator == "zero_a") {
      EXPECT_EQ(amax, 0.0);
    } else {
      // Outputs well above atol, so that errors are visible through the tolerance.
      EXPECT_GT(amax, 1.0);
    }
    if (c.generator == "near_fp16_limit") {
      EXPECT_GT(amax, 59000.0);
    }
  }
}

TEST_F(Nvfp4Generators, AlphaCasesUseTheirAlpha) {
  EXPECT_EQ(gen(find("alpha_1"), 1).scalars.at("alpha"), 1.0);
  EXPECT_EQ(gen(find("alpha_1_64"), 1).scalars.at("alpha"), 0.015625);
  EXPECT_EQ(gen(find("alpha_0_125"), 1).scalars.at("alpha"), 0.125);
  EXPECT_EQ(gen(find("alpha_2e-10"), 1).scalars.at("alpha"), std::ldexp(1.0, -10));
}

TEST_F(Nvfp4Generators, AllScaleCodesCoversEveryPositiveFiniteCode) {
  for (const char* name : {"all_scale_codes_a", "all_scale_codes_b"}) {
    SCOPED_TRACE(name);
    const CaseSpec& c = find(name);
    ProblemData d = gen(c, c.seed);
    const auto& scales = d.buffers[std::string(name).back() == 'a' ? "a_scales" : "b_scales"];
    std::set<uint8_t> codes(scales.begin(), scales.end());
    for (int code = 0x01; code <= 0x7E; ++code) EXPECT_TRUE(codes.count(uint8_t(code))) << code;
    // Every output of order one: a misdecoded scale would be far outside the tolerance.
    std::vector<float> out = expect(d);
    int small = 0;
    for (float v : out) small += std::fabs(v) < 0.5f;
    EXPECT_LT(small, int(out.size()) / 20);
  }
}

TEST_F(Nvfp4Generators, AllE2m1CodesCoversEveryCodeIncludingNegativeZero) {
  ProblemData d = gen(find("all_e2m1_codes"), 1);
  EXPECT_EQ(nibbles(d.buffers["a"]).size(), 16u);
  EXPECT_EQ(nibbles(d.buffers["b"]).size(), 16u);
}

TEST_F(Nvfp4Generators, ZeroAHasOnlySignedZeroes) {
  ProblemData d = gen(find("all_zero_a"), 1);
  std::set<uint8_t> n = nibbles(d.buffers["a"]);
  EXPECT_EQ(n, (std::set<uint8_t>{0, 8}));
}

TEST_F(Nvfp4Generators, LargeKCaseDefeatsHalfPrecisionAccumulation) {
  const CaseSpec& c = find("large_k_positive");
  ASSERT_GE(c.dims.at("K"), 3072);
  ASSERT_GE(c.dims.at("M") * c.dims.at("N"), 4 << 20);
  ProblemData d = gen(c, c.seed);
  const int64_t K = c.dims.at("K"), N = c.dims.at("N");
  const float alpha = float(d.scalars.at("alpha"));
  auto deq = [&](const char* v, const char* s, int64_t row, int64_t k) {
    uint8_t byte = d.buffers[v][row * K / 2 + k / 2];
    return e2m1_decode(k % 2 ? byte >> 4 : byte & 0xF) *
           e4m3_decode(d.buffers[s][row * K / 16 + k / 16]);
  };
  int failures = 0, checked = 0;
  for (int64_t m = 0; m < 2048; m += 257) {
    for (int64_t n = 0; n < N; n += 311) {
      _Float16 acc = 0;  // what a kernel accumulating in half would compute
      double exact = 0;
      for (int64_t k = 0; k < K; ++k) {
        float p = deq("a", "a_scales", m, k) * deq("b", "b_scales", n, k);
        acc = _Float16(float(acc) + p);
        exact += p;
      }
      float got = float(_Float16(alpha * float(acc)));
      double ref = alpha * exact;
      failures += std::fabs(got - ref) > 0.1 + 0.05 * std::fabs(ref);
      ++checked;
    }
  }
  EXPECT_GT(failures, checked / 2) << failures << " of " << checked;
}

TEST_F(Nvfp4Generators, GaussianCaseFollowsTheNvfp4Recipe) {
  const CaseSpec& c = find("gaussian_outliers");
  ProblemData d = gen(c, c.seed);
  double alpha = d.scalars.at("alpha");
  // alpha = 1/(gs_a*gs_b) with gs = 448*6/amax: amax values of O(10..1000) give alpha << 1.
  EXPECT_LT(alpha, 1e-3);
  EXPECT_GT(alpha, 1e-9);
  std::set<uint8_t> scales(d.buffers["a_scales"].begin(), d.buffers["a_scales"].end());
  EXPECT_GT(scales.size(), 10u);    // outliers spread the block scales
  EXPECT_TRUE(scales.count(0x7E));  // the block holding amax gets the largest scale, 448
}

}  // namespace
}  // namespace fp4arena
