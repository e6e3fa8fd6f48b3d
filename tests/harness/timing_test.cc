#include "harness/timing.h"

#include <gtest/gtest.h>

#include <cmath>

namespace fp4arena {
namespace {

TEST(Timing, Summary) {
  TimingStats s = summarize({4.0, 1.0, 3.0, 2.0});
  EXPECT_EQ(s.samples, 4);
  EXPECT_DOUBLE_EQ(s.median_ms, 2.5);
  EXPECT_DOUBLE_EQ(s.mean_ms, 2.5);
  EXPECT_DOUBLE_EQ(s.min_ms, 1.0);
  EXPECT_DOUBLE_EQ(s.max_ms, 4.0);
  EXPECT_NEAR(s.std_ms, std::sqrt(5.0 / 3.0), 1e-12);
  EXPECT_NEAR(s.rse, std::sqrt(5.0 / 3.0) / 2.0 / 2.5, 1e-12);
  EXPECT_DOUBLE_EQ(summarize({3.0, 1.0, 2.0}).median_ms, 2.0);
  EXPECT_EQ(summarize({}).samples, 0);
}

TEST(Timing, StoppingRule) {
  TimingSpec t;
  t.min_samples = 5;
  t.max_samples = 8;
  t.target_rse = 0.01;
  t.max_seconds = 10;
  std::vector<double> steady(4, 1.0);
  EXPECT_FALSE(should_stop(steady, t, 0));  // below min_samples
  steady.push_back(1.0);
  EXPECT_TRUE(should_stop(steady, t, 0));  // rse 0
  std::vector<double> noisy = {1, 2, 1, 2, 1, 2};
  EXPECT_FALSE(should_stop(noisy, t, 0));
  EXPECT_TRUE(should_stop(noisy, t, 11));  // time cap
  noisy.resize(8, 1.5);
  EXPECT_TRUE(should_stop(noisy, t, 0));  // max_samples
  EXPECT_FALSE(should_stop({}, t, 100));  // never stop with no sample at all
  EXPECT_EQ(stop_reason(steady, t, 0), StopReason::kConverged);
  EXPECT_EQ(stop_reason({1, 2, 1}, t, 11), StopReason::kTimeCap);  // under min_samples
  EXPECT_EQ(stop_reason(noisy, t, 0), StopReason::kMaxSamples);
}

TEST(Timing, SampleLoopSaysWhyItStopped) {
  TimingSpec t;
  t.warmup_calls = 2;
  t.min_samples = 3;
  t.max_samples = 5;
  t.target_rse = 1e-9;
  t.max_seconds = 100;
  int calls = 0;
  SampleRun r = sample_loop(t, [&](int, bool, double* ms, std::string*) {
    *ms = 1.0 + (calls++ % 2);  // never converges
    return true;
  });
  EXPECT_TRUE(r.ok);
  EXPECT_EQ(r.calls, 7);
  EXPECT_EQ(r.samples.size(), 5u);
  EXPECT_EQ(r.stopped, StopReason::kMaxSamples);
  t.max_seconds = 1e-9;  // the cap is reached at once: one sample
  r = sample_loop(t, [&](int, bool, double* ms, std::string*) {
    *ms = 1.0;
    return true;
  });
  EXPECT_EQ(r.stopped, StopReason::kTimeCap);
  EXPECT_EQ(r.samples.size(), 1u);
  r = sample_loop(t, [&](int call, bool, double* ms, std::string* err) {
    *ms = 1.0;
    if (call == 1) *err = "boom";
    return call != 1;
  });
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.error, "boom");
  EXPECT_EQ(r.stopped, StopReason::kNone);
}

}  // namespace
}  // namespace fp4arena
