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
  f.judge_call_ms = 1;
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
  f.judge_call_ms = 10;  // 5% = 500 us
  f.busy_after_us = 499;
  EXPECT_EQ(decide_verdict(f).verdict, Verdict::kPassed);
  f.busy_after_us = 501;
  EXPECT_EQ(decide_verdict(f).verdict, Verdict::kTimingEscape);
  f.judge_call_ms = 0.1;  // 5% = 5 us < 50 us
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

// The switches come out of windows of one and of nine null kernels: the kernels cancel.
TEST(Verdict, SwitchCostCancelsTheNullKernels) {
  // H100, 2026-11-27: one null kernel 288.2 us, nine 303.3 us -> 286.3 us of switches.
  EXPECT_NEAR(switch_ms_from(0.2882, 0.3033), 0.28631, 1e-5);
  EXPECT_NEAR(switch_ms_from(0.3, 0.3), 0.3, 1e-12);  // kernels of no time
}

// A calibration on a GPU the judge has alone is used; one that another context's time slices
// inflated (switches above kMaxSwitchMs) or made erratic (rounds spread beyond
// kMaxSwitchSpreadMs) is not, and the reason names both figures.
TEST(Verdict, ACalibrationOnASharedGpuIsNotUsed) {
  // Eleven rounds that agree: one null kernel 0.300 ms +- 2 us, nine 0.320 ms.
  std::vector<double> one, nine;
  for (int i = 0; i < 11; ++i) {
    one.push_back(0.300 + 0.002 * (i % 3 - 1));
    nine.push_back(0.320);
  }
  WindowCalibration alone;
  alone.switch_ms = 0.2975;
  alone.switch_spread_ms = switch_spread_ms(one, nine);
  EXPECT_LT(alone.switch_spread_ms, 0.005);
  EXPECT_EQ(calibration_doubt(alone), "");

  // Half the one-kernel windows waited for another context's 2 ms slice.
  for (size_t i = 0; i < one.size(); i += 2) one[i] += 2.0;
  WindowCalibration erratic = alone;
  erratic.switch_spread_ms = switch_spread_ms(one, nine);
  EXPECT_GT(erratic.switch_spread_ms, 2.0);
  const std::string why = calibration_doubt(erratic);
  EXPECT_NE(why.find("not the judge's alone"), std::string::npos) << why;
  EXPECT_NE(why.find("rounds spread 2."), std::string::npos) << why;

  // Every window waited (an H200 shared by two judges, 2026-11-28): steady but too slow.
  WindowCalibration slow = alone;
  slow.switch_ms = 2.587;
  EXPECT_NE(calibration_doubt(slow).find("calibrated at 2.587 ms"), std::string::npos);

  // Fewer than two rounds have no spread.
  EXPECT_EQ(switch_spread_ms({0.3}, {0.32}), 0.0);
  EXPECT_EQ(switch_spread_ms({}, {}), 0.0);
}

// A window's time per call: the judge's events less the calibrated switches, over the calls;
// delivery and snapshot count only beyond their expectation.
TEST(Verdict, WindowCallTimeIsTheJudgesEventsLessTheSwitches) {
  WindowCalibration cal;
  cal.switch_ms = 0.280;
  cal.pre_ms = 0.050;   // the flush of an empty window
  cal.post_ms = 0.004;  // an empty snapshot kernel
  // 8 calls of 20 us: 0.160 + 0.280 between E1 and E2.
  WindowClock w{0.050 + 0.100, 0.440, 0.004 + 0.010};
  EXPECT_NEAR(window_call_ms(w, cal, 0.100, 0.010, 8), 0.020, 1e-12);
  // Delivery 0.2 ms longer than its model allows (the worker's context took the GPU beside
  // it): the excess is the calls'.
  const double allowed_pre = cal.pre_ms + kModelSlack * 0.100 + kModelSlackMs;
  w.pre_ms = allowed_pre + 0.200;
  EXPECT_NEAR(window_call_ms(w, cal, 0.100, 0.010, 8), 0.020 + 0.200 / 8, 1e-12);
  // Within the slack: nothing added.
  w.pre_ms = allowed_pre - 1e-6;
  EXPECT_NEAR(window_call_ms(w, cal, 0.100, 0.010, 8), 0.020, 1e-12);
  // A snapshot held up past a done word written early: charged the same way.
  w.post_ms = cal.post_ms + kModelSlack * 0.010 + kModelSlackMs + 0.080;
  EXPECT_NEAR(window_call_ms(w, cal, 0.100, 0.010, 8), 0.020 + 0.010, 1e-12);
  EXPECT_NEAR(window_call_ms(w, cal, 0.100, 0.010, 0), 0.160 + 0.080, 1e-12);  // calls < 1: one
}

// WindowMethod::kV2's delivery model: three model windows made from known costs give those
// costs back, copied and filled bytes told apart.
TEST(Verdict, ADeliveryModelTellsCopiedFromFilledBytes) {
  const double empty = 0.050, fixed = 0.004, copy = 2.5e-10, fill = 1.5e-10, mib = 1 << 20;
  auto part = [&](int sets, double copied, double filled) {
    return empty + fixed + sets * (copied * copy + filled * fill);
  };
  const ModelWindow one{1, 64 * mib, 64 * mib, 0, part(1, 64 * mib, 64 * mib), 0};
  const ModelWindow many{16, 64 * mib, 64 * mib, 0, part(16, 64 * mib, 64 * mib), 0};
  const ModelWindow inputs{16, 64 * mib, 0, 0, part(16, 64 * mib, 0), 0};
  CopyModel m;
  std::string err;
  ASSERT_TRUE(delivery_model_from(one, many, inputs, empty, &m, &err)) << err;
  EXPECT_NEAR(m.fixed_ms, fixed, 1e-12);
  EXPECT_NEAR(m.ms_per_byte, copy, 1e-20);
  EXPECT_NEAR(m.ms_per_fill_byte, fill, 1e-20);
  EXPECT_NEAR(m.predict(3 * mib, 5 * mib), fixed + 3 * mib * copy + 5 * mib * fill, 1e-12);

  // Noise that would make a cost negative makes it zero.
  ModelWindow quick = inputs;
  quick.delivery_ms = many.delivery_ms + 0.001;  // fills cost "less than nothing"
  ASSERT_TRUE(delivery_model_from(one, many, quick, empty, &m, &err)) << err;
  EXPECT_EQ(m.ms_per_fill_byte, 0.0);
  EXPECT_GE(m.fixed_ms, 0.0);

  // Windows that cannot tell the costs apart are refused, saying so.
  ModelWindow few = many;
  few.sets = 1;
  EXPECT_FALSE(delivery_model_from(one, few, inputs, empty, &m, &err));
  EXPECT_EQ(err, "the delivery's model windows cannot tell its costs apart");
  ModelWindow other = inputs;
  other.sets = 8;
  EXPECT_FALSE(delivery_model_from(one, many, other, empty, &m, &err));
  ModelWindow filled_inputs = inputs;
  filled_inputs.filled = 64 * mib;
  EXPECT_FALSE(delivery_model_from(one, many, filled_inputs, empty, &m, &err));
}

// The snapshot's model: the line through one set's and many sets' snapshot parts.
TEST(Verdict, ASnapshotModelIsTheLineThroughTwoWindows) {
  const double empty = 0.004, fixed = 0.003, per_byte = 3e-10, bytes = 64 << 20;
  const ModelWindow one{1, bytes, bytes, bytes, 0, empty + fixed + bytes * per_byte};
  const ModelWindow many{16, bytes, bytes, bytes, 0, empty + fixed + 16 * bytes * per_byte};
  CopyModel m;
  std::string err;
  ASSERT_TRUE(snapshot_model_from(one, many, empty, &m, &err)) << err;
  EXPECT_NEAR(m.fixed_ms, fixed, 1e-12);
  EXPECT_NEAR(m.ms_per_byte, per_byte, 1e-20);
  EXPECT_EQ(m.ms_per_fill_byte, 0.0);
  ModelWindow none = many;
  none.snapshot = 0;
  EXPECT_FALSE(snapshot_model_from(one, none, empty, &m, &err));
  EXPECT_EQ(err, "the snapshot's model windows cannot tell its costs apart");
}

TEST(Verdict, TheWindowMethodsHaveTheirNames) {
  EXPECT_STREQ(window_method_name(WindowMethod::kV1), "judge-window-v1");
  EXPECT_STREQ(window_method_name(WindowMethod::kV2), "judge-window-v2");
  EXPECT_STREQ(window_method_name(kJudgeWindowMethod), kTimingMethod);
}

TEST(Verdict, AWindowFasterThanTheSwitchesIsAMismatch) {
  WindowCalibration cal;
  cal.switch_ms = 0.280;
  WindowClock w;
  w.call_ms = 0.280 - kSwitchMarginMs + 1e-6;
  EXPECT_EQ(window_check(w, cal).verdict, Verdict::kPassed);
  w.call_ms = 0.008;  // the round trip of a worker that ran no kernel
  const Decision d = window_check(w, cal);
  EXPECT_EQ(d.verdict, Verdict::kTimingMismatch);
  EXPECT_NE(d.reason.find("faster than the two context switches"), std::string::npos) << d.reason;
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

// A run that timed nothing has no score; its result is its tests'. One that timed a benchmark
// needs a valid score; none passes without a case or with a failed one.
TEST(Score, ARunPassesOnItsTestsAloneOnlyWhenItTimedNothing) {
  const Score none = compute_score({}, 2, 2, 1000, "fp16_dense", "TF/s");
  ASSERT_FALSE(none.valid);
  EXPECT_TRUE(run_passed(2, 2, none, /*timed=*/false));
  EXPECT_FALSE(run_passed(2, 2, none, /*timed=*/true));
  const Score over = compute_score({1200}, 3, 3, 1000, "fp16_dense", "TF/s");
  EXPECT_FALSE(run_passed(3, 3, over, true));
  const Score good = compute_score({100}, 3, 3, 1000, "fp16_dense", "TF/s");
  EXPECT_TRUE(run_passed(3, 3, good, true));
  EXPECT_FALSE(run_passed(2, 3, none, false));
  EXPECT_FALSE(run_passed(0, 0, none, false));
}

}  // namespace
}  // namespace fp4arena
