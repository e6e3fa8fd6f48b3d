#include "harness/verdict.h"

#include <gtest/gtest.h>

#include <cmath>

namespace fp4arena {
namespace {

TEST(Verdict, NamesRoundTrip) {
  for (Verdict v : {Verdict::kPassed, Verdict::kWrongAnswer, Verdict::kOutOfBoundsWrite,
                    Verdict::kInputModified, Verdict::kTimingEscape, Verdict::kThreadEscape,
                    Verdict::kTimingMismatch, Verdict::kCrashed, Verdict::kCudaError,
                    Verdict::kTimeout, Verdict::kEarlyExit, Verdict::kNotRun}) {
    Verdict back;
    ASSERT_TRUE(parse_verdict(verdict_name(v), &back)) << verdict_name(v);
    EXPECT_EQ(back, v);
  }
  Verdict v;
  EXPECT_FALSE(parse_verdict("passed ", &v));
  EXPECT_TRUE(is_runtime_failure(Verdict::kTimeout));
  EXPECT_FALSE(is_runtime_failure(Verdict::kWrongAnswer));
}

CallFacts everything_wrong() {
  CallFacts f;
  f.canary_broken = "past the end of 'c' (8 bytes)";
  f.input_changed = "'a' (first changed byte at 0 of 8)";
  f.threads_before = 1;
  f.threads_after = 3;
  f.event_ms = 1;
  f.busy_after_us = 5000;
  f.outputs_checked = true;
  f.outputs_ok = false;
  f.outputs_summary = "'c': 1 of 4 elements outside ...";
  return f;
}

// Each check wins over every later one: remove the winner and the next one shows.
TEST(Verdict, OrderOfChecks) {
  CallFacts f = everything_wrong();
  f.end = CallEnd::kCrashed;
  f.end_detail = "killed by signal 11";
  EXPECT_EQ(decide_verdict(f).verdict, Verdict::kCrashed);
  f.end = CallEnd::kOk;
  EXPECT_EQ(decide_verdict(f).verdict, Verdict::kOutOfBoundsWrite);
  f.canary_broken.clear();
  EXPECT_EQ(decide_verdict(f).verdict, Verdict::kInputModified);
  f.input_changed.clear();
  EXPECT_EQ(decide_verdict(f).verdict, Verdict::kThreadEscape);
  f.threads_after = 1;
  EXPECT_EQ(decide_verdict(f).verdict, Verdict::kTimingEscape);
  f.busy_after_us = 10;
  Decision d = decide_verdict(f);
  EXPECT_EQ(d.verdict, Verdict::kWrongAnswer);
  EXPECT_EQ(d.reason, f.outputs_summary);
  f.outputs_ok = true;
  EXPECT_EQ(decide_verdict(f).verdict, Verdict::kPassed);
}

TEST(Verdict, EscapeThresholdIsMaxOf50UsAnd5Percent) {
  CallFacts f;
  f.event_ms = 10;  // 5% = 500 us
  f.busy_after_us = 499;
  EXPECT_EQ(decide_verdict(f).verdict, Verdict::kPassed);
  f.busy_after_us = 501;
  EXPECT_EQ(decide_verdict(f).verdict, Verdict::kTimingEscape);
  f.event_ms = 0.1;  // 5% = 5 us < 50 us
  f.busy_after_us = 49;
  EXPECT_EQ(decide_verdict(f).verdict, Verdict::kPassed);
  f.under_tool = true;  // sanitizers and profilers make both checks meaningless
  f.busy_after_us = 1e6;
  f.threads_after = 5;
  EXPECT_EQ(decide_verdict(f).verdict, Verdict::kPassed);
}

TEST(Verdict, RuntimeEndsNameTheCause) {
  CallFacts f;
  f.end = CallEnd::kTimeout;
  f.end_detail = "no answer within 3 s";
  EXPECT_EQ(decide_verdict(f).reason, "solve() gave no answer within 3 s");
  f.end = CallEnd::kEarlyExit;
  f.end_detail = "exited with status 0";
  EXPECT_EQ(decide_verdict(f).verdict, Verdict::kEarlyExit);
  f.end = CallEnd::kWorkerError;
  f.end_detail = "malformed reply";
  EXPECT_EQ(decide_verdict(f).verdict, Verdict::kCrashed);
}

TEST(Verdict, ReportedTimeLongerThanTheJudgesClockIsAMismatch) {
  CallFacts f;
  f.event_ms = 1.0;
  f.judge_wall_ms = 0.9;
  Decision d = decide_verdict(f);
  EXPECT_EQ(d.verdict, Verdict::kTimingMismatch);
  EXPECT_NE(d.reason.find("1.000 ms of device time"), std::string::npos) << d.reason;
  f.judge_wall_ms = 1.01;  // within the clocks' slack
  EXPECT_EQ(decide_verdict(f).verdict, Verdict::kPassed);
  f.judge_wall_ms = 0;  // not measured (tools)
  EXPECT_EQ(decide_verdict(f).verdict, Verdict::kPassed);
}

TEST(Verdict, BenchmarkClockBoundsTheReportFromBothSides) {
  // Honest: 0.300 ms on the device, 0.380 ms round trip, 0.060 ms calibrated overhead.
  EXPECT_EQ(check_benchmark_clock(0.300, 0.380, 0.060).verdict, Verdict::kPassed);
  // Halved by a forger: 0.150 < 0.380 - 0.060 - max(0.05, 0.038).
  Decision d = check_benchmark_clock(0.150, 0.380, 0.060);
  EXPECT_EQ(d.verdict, Verdict::kTimingMismatch);
  EXPECT_NE(d.reason.find("below what the judge's clock allows"), std::string::npos);
  // Longer than the round trip itself.
  EXPECT_EQ(check_benchmark_clock(0.500, 0.380, 0.060).verdict, Verdict::kTimingMismatch);
  // Large calls: a 10% margin. 100 ms reported as 85 ms passes the bound? 100-0.06-10 = 89.9.
  EXPECT_EQ(check_benchmark_clock(85.0, 100.0, 0.06).verdict, Verdict::kTimingMismatch);
  EXPECT_EQ(check_benchmark_clock(91.0, 100.0, 0.06).verdict, Verdict::kPassed);
}

TEST(Verdict, TheOverheadBesideTheCallsIsCappedByTheStartCalibration) {
  // A solution that slows the worker's empty round trips by 2 ms to hide a halved time: a
  // 1 ms call reported as 0.5 ms, round trip 1.35 ms, empty trips 2.35 ms beside it.
  // Uncapped, 1.35 - 2.35 - 0.135 < 0.5 would pass; capped at 0.30 + 0.25 it does not.
  EXPECT_EQ(check_benchmark_clock(0.5, 1.35, 2.35).verdict, Verdict::kPassed);
  Decision d = check_benchmark_clock(0.5, 1.35, 2.35, 0.30);
  EXPECT_EQ(d.verdict, Verdict::kTimingMismatch);
  EXPECT_NE(d.reason.find("capped at the start calibration"), std::string::npos) << d.reason;
  // Honest runs: the overhead beside the calls 0.09-0.13 ms above the start calibration.
  EXPECT_EQ(check_benchmark_clock(0.040, 0.474, 0.434, 0.344).verdict, Verdict::kPassed);
  EXPECT_EQ(check_benchmark_clock(1.000, 1.510, 0.510, 0.382).verdict, Verdict::kPassed);
  EXPECT_DOUBLE_EQ(allowed_overhead_ms(0.434, 0.344), 0.434);
  EXPECT_DOUBLE_EQ(allowed_overhead_ms(2.0, 0.3), 0.55);
  EXPECT_DOUBLE_EQ(allowed_overhead_ms(2.0, 0.0), 2.0);  // no calibration: no cap
}

TEST(Verdict, TheDeviceClockBoundsAShortKernelToMicroseconds) {
  // Figures of an H200 (harness/verdict.h): the empty window 0.7556 ms after its flush, its
  // delivery and flush 0.0309 ms, its snapshot 0.0040 ms. A 0.143 ms kernel's window: 0.9042
  // ms after the flush, 0.0462 ms before it (33 MB of inputs modelled at 0.0120 ms) and
  // 0.0100 ms of snapshot (8 MB of outputs modelled at 0.0040 ms).
  const WindowClock empty{0.0309, 0.7556, 0.0040};
  const double dev = device_clock_ms({0.0462, 0.9042, 0.0100}, empty, 0.0120, 0.0040);
  EXPECT_NEAR(dev, 0.1486, 1e-12);  // delivery and snapshot stayed within their allowances
  EXPECT_EQ(check_device_clock(0.1443, dev).verdict, Verdict::kPassed);
  // The same call reported as 0.070 ms: inside the host clock's margin, not this one's.
  EXPECT_EQ(check_benchmark_clock(0.070, 1.0046, 0.7556 + 0.1).verdict, Verdict::kPassed);
  Decision d = check_device_clock(0.070, dev);
  EXPECT_EQ(d.verdict, Verdict::kTimingMismatch);
  EXPECT_NE(d.reason.find("judge's device clock measured: 0.149 ms"), std::string::npos)
      << d.reason;
  // The margin: 0.06 ms, or 3% of long calls.
  EXPECT_DOUBLE_EQ(device_margin_ms(0.1), kDeviceMarginMs);
  EXPECT_DOUBLE_EQ(device_margin_ms(10.0), 0.3);
  EXPECT_EQ(check_device_clock(0.1486 - 0.059, dev).verdict, Verdict::kPassed);
  EXPECT_EQ(check_device_clock(0.1486 - 0.061, dev).verdict, Verdict::kTimingMismatch);
  // Work of the worker's beside the judge's delivery (after the inputs may have arrived)
  // counts once the delivery runs past its allowance: 0.0309 + 1.5 * 0.0120 + 0.03.
  EXPECT_NEAR(device_clock_ms({0.0789, 0.9042, 0.0100}, empty, 0.0120, 0.0040), 0.1486, 1e-12);
  EXPECT_NEAR(device_clock_ms({0.5789, 0.9042, 0.0100}, empty, 0.0120, 0.0040), 0.1486 + 0.5,
              1e-12);
  // So does a snapshot that waited for work the worker left running past a done word written
  // early: past 0.0040 + 1.5 * 0.0040 + 0.03.
  EXPECT_NEAR(device_clock_ms({0.0462, 0.9042, 0.0400}, empty, 0.0120, 0.0040), 0.1486, 1e-12);
  EXPECT_NEAR(device_clock_ms({0.0462, 0.9042, 0.1400}, empty, 0.0120, 0.0040), 0.1486 + 0.1,
              1e-12);
}

TEST(Score, GeometricMeanWhenEverythingPassed) {
  Score s = compute_score({100, 400}, 10, 10, 1000, "fp16_dense", "TF/s");
  ASSERT_TRUE(s.valid) << s.reason;
  EXPECT_DOUBLE_EQ(*s.geomean, 200);
}

TEST(Score, InvalidWhenACaseFailedOrOverTheLimit) {
  Score s = compute_score({100, 400}, 10, 9, 1000, "fp16_dense", "TF/s");
  EXPECT_FALSE(s.valid);
  EXPECT_FALSE(s.geomean.has_value());
  EXPECT_EQ(s.reason, "1 of 10 cases failed");
  s = compute_score({100, 1200}, 10, 10, 1000, "fp16_dense", "TF/s");
  EXPECT_FALSE(s.valid);
  ASSERT_TRUE(s.geomean.has_value());
  EXPECT_NE(s.reason.find("over_limit"), std::string::npos);
  s = compute_score({100, 1200}, 10, 10, 0, "fp16_dense", "TF/s");  // no limit known
  EXPECT_TRUE(s.valid);
  s = compute_score({}, 3, 3, 1000, "fp16_dense", "TF/s");
  EXPECT_EQ(s.reason, "no benchmark case was run");
  s = compute_score({NAN}, 3, 3, 1000, "fp16_dense", "TF/s");
  EXPECT_FALSE(s.valid);
}

}  // namespace
}  // namespace fp4arena
