// The w4a8_grouped_gemm challenge's spec and generators: the spec loads, every case is
// deterministic and within the spec, offsets are valid, the example equals the README's
// numbers, hot and empty experts are where the cases claim them. Also the README's claim about
// a mixed-input FP8 kernel (weights rounded to E4M3), simulated on the host.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "harness/challenge.h"
#include "harness/spec.h"
#include "reference/fp4_codecs.h"
#include "reference/oracle_w4a8_grouped_gemm.h"
#include "tests/challenge_test.h"
#include "tests/test_util.h"

namespace fp4arena {
namespace {

std::string w4a8_dir() {
  return testing_util::source_dir() + "/challenges/w4a8_grouped_gemm";
}

template <typename T>
std::vector<T> as(const std::vector<uint8_t>& bytes) {
  std::vector<T> v(bytes.size() / sizeof(T));
  if (!v.empty()) std::memcpy(v.data(), bytes.data(), v.size() * sizeof(T));
  return v;
}

class W4a8Generators : public testing_util::ChallengeTest {
 protected:
  W4a8Generators() : ChallengeTest(w4a8_dir(), "y") {}

  // Rows per expert of a generated problem.
  static std::vector<int> counts(const ProblemData& d) {
    std::vector<int> o = as<int>(d.buffers.at("group_offsets"));
    std::vector<int> c;
    for (size_t g = 0; g + 1 < o.size(); ++g) c.push_back(o[g + 1] - o[g]);
    return c;
  }
};

TEST_F(W4a8Generators, SpecLoads) {
  EXPECT_EQ(spec_.name, "w4a8_grouped_gemm");
  EXPECT_EQ(spec_.limit, LimitKind::kFp8Dense);
  EXPECT_EQ(spec_.metric.kind, MetricKind::kTflops);
  EXPECT_EQ(spec_.outputs().size(), 1u);
  EXPECT_EQ(spec_.outputs()[0]->dtype, DType::kBf16);
  EXPECT_EQ(spec_.outputs()[0]->compare.atol, 0.1);
  EXPECT_EQ(spec_.outputs()[0]->compare.rtol, 0.05);
  EXPECT_EQ(spec_.find_param("group_offsets")->dtype, DType::kInt32);
  EXPECT_EQ(spec_.find_param("w")->dtype, DType::kE2m1x2);
  ASSERT_NE(spec_.find_case("prefill_qwen3moe"), nullptr);
  ASSERT_NE(spec_.find_case("prefill_dsv3_down"), nullptr);
  ASSERT_NE(spec_.find_case("decode"), nullptr);
  EXPECT_EQ(case_workload(spec_, spec_.find_case("prefill_dsv3_down")->dims),
            2.0 * 32768 * 7168 * 2048);
  for (const auto* list : {&spec_.tests, &spec_.benchmarks}) {
    for (const CaseSpec& c : *list) {
      std::string err;
      EXPECT_TRUE(check_case_dims(spec_, c, &err)) << err;
      EXPECT_TRUE(challenge_->check_case(c, &err)) << err;
    }
  }
}

TEST_F(W4a8Generators, ExampleMatchesTheReadme) {
  ProblemData d = gen(find("example"), 1);
  EXPECT_EQ(as<int>(d.buffers["group_offsets"]), (std::vector<int>{0, 2, 2, 3}));
  EXPECT_EQ(d.buffers["w"][8], 0x15);  // expert 0, n 1, byte 0: element 0 = 3 (low), 1 = 0.5
  std::vector<float> y = expect(d);
  EXPECT_EQ(y, (std::vector<float>{2.0f, 0.875f, 0.25f, 2.75f, -2.0f, 12.0f}));
}

// The speed of light counts the weights of the experts that get rows only: in the example,
// experts 0 and 2 (18 bytes each: 16 of codes, 2 of scales), not the empty expert 1.
TEST_F(W4a8Generators, MinBytesSkipTheEmptyExperts) {
  ASSERT_TRUE(spec_.metric.bytes_from_inputs);
  const CaseSpec& c = find("example");
  const ProblemData d = gen(c, 1);
  // x 3x16, x_scales 3 floats, w_global 3 floats, offsets 4 ints, y 3x2 BF16.
  const double shared = 3 * 16 + 4 * 3 + 4 * 3 + 4 * 4 + 2 * 3 * 2;
  EXPECT_EQ(challenge_->min_bytes(d), shared + 2 * (2 * 16 / 2 + 2 * 16 / 16));
  int64_t all = 0;
  std::string err;
  ASSERT_TRUE(eval_expr(spec_.metric.min_bytes, c.dims, &all, &err)) << err;
  EXPECT_EQ(double(all), shared + 3 * (2 * 16 / 2 + 2 * 16 / 16));  // the spec's upper bound
}

// Benchmarks: only `decode` (its weights are 200 MB); the prefill ones are generated on the
// GPU machine by every submit.
TEST_F(W4a8Generators, EveryCaseIsDeterministicAndWithinSpec) {
  std::vector<const CaseSpec*> cases;
  for (const CaseSpec& c : spec_.tests) cases.push_back(&c);
  cases.push_back(&find("decode"));
  for (const CaseSpec* cp : cases) {
    const CaseSpec& c = *cp;
    SCOPED_TRACE(c.name);
    ProblemData d1 = gen(c, c.seed), d2 = gen(c, c.seed);
    EXPECT_EQ(d1.buffers, d2.buffers);
    for (const ParamSpec& p : spec_.params) {
      if (p.role != "in") continue;
      ASSERT_EQ(d1.buffers[p.name].size(), buffer_bytes(p, c.dims)) << p.name;
    }
    for (const char* s : {"x", "w_scales"}) {
      for (uint8_t code : d1.buffers[s]) ASSERT_FALSE(e4m3_is_nan(code)) << s;
    }
    for (const char* s : {"x_scales", "w_global"}) {
      for (float v : as<float>(d1.buffers[s])) ASSERT_TRUE(std::isfinite(v) && v > 0) << s;
    }
    std::vector<int> o = as<int>(d1.buffers["group_offsets"]);
    const int T = int(c.dims.at("T")), G = int(c.dims.at("G"));
    ASSERT_EQ(int(o.size()), G + 1);
    EXPECT_EQ(o.front(), 0);
    EXPECT_EQ(o.back(), T);
    for (int g = 0; g < G; ++g) ASSERT_LE(o[g], o[g + 1]) << "expert " << g;
    if (c.benchmark) continue;  // its CPU oracle would take minutes here
    std::vector<float> y = expect(d1);
    double amax = 0;
    for (float v : y) {
      ASSERT_TRUE(std::isfinite(v));
      amax = std::max(amax, double(std::fabs(v)));
    }
    EXPECT_LT(amax, 1e6);  // far inside BF16's range (3.4e38), and not all zero
    EXPECT_GT(amax, 0.5);
  }
}

TEST_F(W4a8Generators, SeedsChangeTheData) {
  const CaseSpec& c = find("zipf_g64");
  ProblemData a = gen(c, 1), b = gen(c, 2);
  EXPECT_NE(a.buffers["x"], b.buffers["x"]);
  EXPECT_NE(a.buffers["w"], b.buffers["w"]);
  EXPECT_NE(a.buffers["group_offsets"], b.buffers["group_offsets"]);
}

TEST_F(W4a8Generators, HotAndEmptyExpertsWhereClaimed) {
  auto empties = [](const std::vector<int>& n) { return std::count(n.begin(), n.end(), 0); };
  {
    std::vector<int> n = counts(gen(find("zipf_g64"), find("zipf_g64").seed));
    EXPECT_GE(empties(n), 3);
    EXPECT_GE(*std::max_element(n.begin(), n.end()), 4 * 700 / 64);  // a hot expert
  }
  {
    std::vector<int> n = counts(gen(find("empty_ends"), find("empty_ends").seed));
    EXPECT_EQ(n.front(), 0);
    EXPECT_EQ(n.back(), 0);
  }
  {
    std::vector<int> n = counts(gen(find("one_expert_all_rows"), 102));
    EXPECT_EQ(n[5], 200);
    EXPECT_EQ(empties(n), 7);
  }
  {
    std::vector<int> n = counts(gen(find("one_row_t1"), 101));
    EXPECT_EQ(n[9], 1);
    EXPECT_EQ(empties(n), 15);
  }
  {
    std::vector<int> n = counts(gen(find("decode"), find("decode").seed));
    EXPECT_GE(empties(n), 10);
    EXPECT_GE(*std::max_element(n.begin(), n.end()), 16);
  }
}

// ---- A mixed-input FP8 kernel, simulated --------------------------------------------
//
// An FP8 tensor-core path must round each dequantized weight e2m1 * e4m3 (up to 6
// significant bits, up to 2688) to E4M3 (4 bits, up to 448). The simulation gives the kernel
// its best chance: per expert a power-of-two factor s_g moves the weights into E4M3's range
// (folded back exactly into the epilogue), products are exact, the sum is FP32. It counts the
// outputs outside atol 0.1 + rtol 0.05 of the oracle.
int64_t fp8_weight_failures(const ProblemData& d, const std::vector<float>& ref) {
  const int N = int(d.dims.at("N")), K = int(d.dims.at("K")), G = int(d.dims.at("G"));
  const std::vector<uint8_t>& x = d.buffers.at("x");
  const std::vector<uint8_t>& w = d.buffers.at("w");
  const std::vector<uint8_t>& ws = d.buffers.at("w_scales");
  std::vector<float> xs = as<float>(d.buffers.at("x_scales"));
  std::vector<float> wg = as<float>(d.buffers.at("w_global"));
  std::vector<int> o = as<int>(d.buffers.at("group_offsets"));
  int64_t bad = 0;
  for (int g = 0; g < G; ++g) {
    if (o[g] == o[g + 1]) continue;
    std::vector<float> wq(size_t(N) * K);
    float amax = 0;
    for (int n = 0; n < N; ++n) {
      for (int k = 0; k < K; ++k) {
        uint8_t byte = w[(size_t(g) * N + n) * (K / 2) + k / 2];
        float v = e2m1_decode(k % 2 ? byte >> 4 : byte & 0xF) *
                  e4m3_decode(ws[(size_t(g) * N + n) * (K / 16) + k / 16]);
        wq[size_t(n) * K + k] = v;
        amax = std::max(amax, std::fabs(v));
      }
    }
    const float s = amax > 448 ? std::exp2(std::ceil(std::log2(amax / 448))) : 1.0f;
    for (float& v : wq) v = e4m3_decode(e4m3_encode_rne(v / s));
    for (int t = o[g]; t < o[g + 1]; ++t) {
      for (int n = 0; n < N; ++n) {
        float acc = 0;
        for (int k = 0; k < K; ++k)
          acc += e4m3_decode(x[size_t(t) * K + k]) * wq[size_t(n) * K + k];
        float got = xs[t] * (wg[g] * s * acc);
        float want = ref[size_t(t) * N + n];
        bad += !(std::fabs(got - want) <= 0.1f + 0.05f * std::fabs(want));
      }
    }
  }
  return bad;
}

// Recorded in the README ("Exactness"): the simulated FP8-weight kernel fails on realistic
// cases. The counts are printed so that the README's figures can be checked.
TEST_F(W4a8Generators, Fp8RoundedWeightsFailTheTolerance) {
  for (const CaseSpec& c : spec_.tests) {
    ProblemData d = gen(c, c.seed);
    std::vector<float> ref = expect(d);
    int64_t bad = fp8_weight_failures(d, ref);
    std::printf("fp8-rounded weights: %-22s %8lld of %8zu outside tolerance\n", c.name.c_str(),
                static_cast<long long>(bad), ref.size());
    // The example's sums are exact even so; every realistic case fails somewhere.
    if (c.name != "example") {
      EXPECT_GT(bad, 0) << c.name;
    }
  }
}

}  // namespace
}  // namespace fp4arena
