// Typed case results: their JSON form is the record's, field for field, as the committed
// records have it.
#include "harness/case_result.h"

#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "tests/harness/case_fixtures.h"
#include "tests/test_util.h"

#include "harness/record.h"

namespace fp4arena {
namespace {

using testing_util::failed_benchmark;

using nlohmann::json;

// A committed record of the flagship's best rung (a v2 record of the current timing method).
json committed_record() {
  const std::string file =
      testing_util::committed_record_file("nvfp4_matmul", "nvidia-h200", "wgmma_thin_tile");
  if (file.empty()) {
    ADD_FAILURE() << "no wgmma_thin_tile record in results/nvfp4_matmul/nvidia-h200";
    return json::object();
  }
  std::ifstream in(file);
  return json::parse(in);
}

CompareKind compare_kind(const std::string& name) {
  for (CompareKind k : {CompareKind::kTolerance, CompareKind::kExact, CompareKind::kExactOrTie,
                        CompareKind::kUlp}) {
    if (name == compare_name(k)) return k;
  }
  ADD_FAILURE() << "unknown compare " << name;
  return CompareKind::kTolerance;
}

OutputReport output_from(const json& j) {
  OutputReport o;
  o.name = j.at("name");
  o.kind = compare_kind(j.at("compare"));
  o.passed = j.at("passed");
  o.elements = j.at("elements");
  o.mismatches = j.at("mismatches");
  o.unwritten = j.at("unwritten");
  o.nonfinite = j.at("nonfinite");
  o.ties = j.at("ties");
  o.max_abs_err = j.at("max_abs_err");
  o.max_rel_err = j.at("max_rel_err");
  o.max_excess = j.at("max_excess");
  return o;
}

// The fields every case has (a benchmark's outputs are absent when it passed).
void case_from(const json& j, CaseResult* r) {
  r->name = j.at("name");
  r->seed = j.at("seed");
  r->dims = j.at("dims").get<std::map<std::string, int64_t>>();
  EXPECT_TRUE(parse_verdict(j.at("verdict"), &r->verdict));
  r->reason = j.at("reason");
  for (const json& o : j.value("outputs", json::array())) r->outputs.push_back(output_from(o));
  r->wall_ms = j.at("wall_ms");
}

TestResult test_from(const json& j) {
  TestResult t;
  case_from(j, &t);
  return t;
}

TimingStats stats_from(const json& j) {
  TimingStats s;
  s.samples = j.at("samples");
  s.median_ms = j.at("median_ms");
  s.min_ms = j.at("min_ms");
  s.max_ms = j.at("max_ms");
  s.mean_ms = j.value("mean_ms", 0.0);
  s.std_ms = j.value("std_ms", 0.0);
  s.rse = j.value("rse", 0.0);
  return s;
}

BenchmarkResult benchmark_from(const json& j) {
  BenchmarkResult b;
  case_from(j, &b);
  b.workload = j.at("workload");
  b.ran = true;
  b.calls = j.at("calls");
  b.calls_per_sample = j.at("calls_per_sample");
  b.stats = stats_from(j);
  b.stopped = StopReason::kConverged;
  EXPECT_EQ(j.at("stopped_by"), "converged");
  const json& w = j.at("judge_window_median_ms");
  b.window_median = {w.at("delivery"), w.at("call"), w.at("snapshot")};
  const json& c = j.at("judge_calibration_ms");
  b.calibration.switch_ms = c.at("switch");
  b.calibration.switch_spread_ms = c.value("switch_spread", 0.0);
  b.calibration.memops_ms = c.at("memops_only");
  b.calibration.pre_ms = c.at("delivery");
  b.calibration.post_ms = c.at("snapshot");
  b.delivery_model_ms = j.at("judge_delivery_model_ms");
  b.snapshot_model_ms = j.at("judge_snapshot_model_ms");
  b.worker_reported_median_ms = j.at("worker_reported_median_ms");
  b.host_call_median_ms = j.at("host_call_median_ms");
  b.synchronising_windows = j.at("synchronising_windows");
  b.value = j.at("value").get<double>();
  b.pct_of_limit = j.at("pct_of_limit").get<double>();
  b.sm_clock_after_mhz = j.at("sm_clock_after_mhz");
  if (j.contains("speed_of_light_ms") && !j.at("speed_of_light_ms").is_null()) {
    b.speed_of_light.ms = j.at("speed_of_light_ms");
    (j.at("bound_by") == "memory" ? b.speed_of_light.memory_ms : b.speed_of_light.compute_ms) =
        b.speed_of_light.ms;
  }
  if (j.contains("judge_seconds")) {
    const json& js = j.at("judge_seconds");
    b.judge_cost = {js.at("generate"), js.at("exchange"), js.at("check"), js.at("yardstick")};
  }
  const json& y = j.at("yardstick");
  b.yardstick = YardstickResult{y.at("name"), y.at("calls_per_sample"), stats_from(y),
                                y.at("value"), y.at("ratio").get<double>()};
  return b;
}

TEST(CaseResult, TheJsonFormIsTheCommittedRecordsFieldForField) {
  const json record = committed_record();
  ASSERT_FALSE(record.at("tests").empty());
  for (const json& t : record.at("tests")) EXPECT_EQ(to_json(test_from(t)), t);
  ASSERT_FALSE(record.at("benchmarks").empty());
  for (const json& want : record.at("benchmarks")) {
    json expected = want;
    if (!expected.contains("speed_of_light_ms")) {  // a record older than the field
      expected["speed_of_light_ms"] = nullptr;
      expected["bound_by"] = nullptr;
      expected["pct_of_speed_of_light"] = nullptr;
    }
    if (!expected["judge_calibration_ms"].contains("switch_spread")) {  // older than the field
      expected["judge_calibration_ms"]["switch_spread"] = 0.0;
    }
    if (!expected.contains("judge_seconds")) {  // older than the field
      expected["judge_seconds"] = {
          {"generate", 0.0}, {"exchange", 0.0}, {"check", 0.0}, {"yardstick", 0.0}};
    }
    EXPECT_EQ(to_json(benchmark_from(want)), expected) << want.at("name");
  }
}

TEST(CaseResult, RecordsWrittenFromTypedResultsAreReadBack) {
  json record = committed_record();
  json benches = json::array();
  for (const json& b : record.at("benchmarks")) {
    BenchmarkResult r = benchmark_from(b);
    r.speed_of_light.ms = 0.5 * r.stats.median_ms;
    r.speed_of_light.compute_ms = r.speed_of_light.ms;
    benches.push_back(to_json(r));
  }
  record["benchmarks"] = benches;
  SubmitRecord parsed;
  std::string reason;
  ASSERT_TRUE(parse_record(record.dump(), &parsed, &reason)) << reason;
  ASSERT_EQ(parsed.benchmarks.size(), benches.size());
  EXPECT_TRUE(parsed.passed);
  for (size_t i = 0; i < benches.size(); ++i) {
    EXPECT_DOUBLE_EQ(*parsed.benchmarks[i].median_ms, benches[i]["median_ms"].get<double>());
    EXPECT_NEAR(*parsed.benchmarks[i].pct_of_speed_of_light, 50.0, 1e-9);
    EXPECT_EQ(benches[i]["bound_by"], "compute");
  }
}

TEST(CaseResult, AFailedBenchmarkHasItsOutputsAndNoFigures) {
  const json j = to_json(failed_benchmark());
  EXPECT_EQ(j["verdict"], "wrong_answer");
  EXPECT_TRUE(j["value"].is_null());
  EXPECT_TRUE(j["pct_of_limit"].is_null());
  EXPECT_TRUE(j["pct_of_speed_of_light"].is_null()) << "no share of a failed time";
  EXPECT_EQ(j["speed_of_light_ms"], 0.01);
  ASSERT_EQ(j["outputs"].size(), 1u);
  EXPECT_EQ(j["outputs"][0]["worst"][0]["got"], "nan") << "JSON has no NaN: it is text";
  EXPECT_EQ(j["outputs"][0]["worst"][0]["excess"], "inf");
  EXPECT_EQ(j["outputs"][0]["tile_map"], "tile map\nX.\n");
}

TEST(CaseResult, ACaseThatNeverRanHasOnlyItsNameAndReason) {
  BenchmarkResult b;
  b.name = "table5";
  b.workload = 10;
  b.reason = "the worker could not start";
  const json j = to_json(b);
  for (const char* key :
       {"name", "seed", "dims", "workload", "verdict", "reason", "value", "yardstick"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j.size(), 8u) << j.dump();
  EXPECT_EQ(j["verdict"], "not_run");
}

}  // namespace
}  // namespace fp4arena
