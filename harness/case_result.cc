#include "harness/case_result.h"

#include <cmath>
#include <string>

#include "harness/json_read.h"

namespace fp4arena {

namespace {

// A non-finite figure (a NaN the solution wrote) as text: JSON has no NaN.
nlohmann::json finite_or_text(double v) {
  return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(std::to_string(v));
}

nlohmann::json mismatch_json(const Mismatch& m) {
  nlohmann::json w = {{"row", m.row},
                      {"col", m.col},
                      {"unwritten", m.unwritten},
                      {"expected", finite_or_text(m.expected)},
                      {"got", finite_or_text(m.got)},
                      {"excess", finite_or_text(m.excess)}};
  if (m.codes) {
    w["expected_code"] = m.expected_code;
    w["got_code"] = m.got_code;
  }
  return w;
}

nlohmann::json outputs_json(const std::vector<OutputReport>& outputs) {
  nlohmann::json a = nlohmann::json::array();
  for (const OutputReport& o : outputs) a.push_back(to_json(o));
  return a;
}

// The benchmark's timing fields, under the names the record has always used.
void add_timing(const BenchmarkResult& b, nlohmann::json* out) {
  nlohmann::json& j = *out;
  const TimingStats& s = b.stats;
  j["calls"] = b.calls;
  j["samples"] = s.samples;
  j["calls_per_sample"] = b.calls_per_sample;
  j["median_ms"] = s.median_ms;
  j["mean_ms"] = s.mean_ms;
  j["std_ms"] = s.std_ms;
  j["min_ms"] = s.min_ms;
  j["max_ms"] = s.max_ms;
  j["rse"] = s.rse;
  j["stopped_by"] = stop_reason_name(b.stopped);
  j["judge_window_median_ms"] = {{"delivery", b.window_median.pre_ms},
                                 {"call", b.window_median.call_ms},
                                 {"snapshot", b.window_median.post_ms}};
  j["judge_calibration_ms"] = {{"switch", b.calibration.switch_ms},
                               {"switch_spread", b.calibration.switch_spread_ms},
                               {"memops_only", b.calibration.memops_ms},
                               {"delivery", b.calibration.pre_ms},
                               {"snapshot", b.calibration.post_ms}};
  j["judge_delivery_model_ms"] = b.delivery_model_ms;
  j["judge_snapshot_model_ms"] = b.snapshot_model_ms;
  j["worker_reported_median_ms"] = b.worker_reported_median_ms;
  j["host_call_median_ms"] = b.host_call_median_ms;
  j["synchronising_windows"] = b.synchronising_windows;
}

void add_speed_of_light(const BenchmarkResult& b, nlohmann::json* j) {
  const SpeedOfLight& sol = b.speed_of_light;
  const bool known = sol.ms > 0;
  (*j)["speed_of_light_ms"] = known ? nlohmann::json(sol.ms) : nlohmann::json(nullptr);
  (*j)["bound_by"] =
      known ? nlohmann::json(sol.memory_bound() ? "memory" : "compute") : nlohmann::json(nullptr);
  (*j)["pct_of_speed_of_light"] = json_number_or_null(b.pct_of_speed_of_light());
}

}  // namespace

std::optional<double> BenchmarkResult::pct_of_speed_of_light() const {
  if (!passed() || speed_of_light.ms <= 0 || stats.median_ms <= 0) return std::nullopt;
  return 100 * speed_of_light.ms / stats.median_ms;
}

nlohmann::json to_json(const OutputReport& o) {
  nlohmann::json worst = nlohmann::json::array();
  for (const Mismatch& m : o.worst) worst.push_back(mismatch_json(m));
  nlohmann::json j = {{"name", o.name},
                      {"compare", compare_name(o.kind)},
                      {"passed", o.passed},
                      {"elements", o.elements},
                      {"mismatches", o.mismatches},
                      {"unwritten", o.unwritten},
                      {"nonfinite", o.nonfinite},
                      {"ties", o.ties},
                      {"max_abs_err", o.max_abs_err},
                      {"max_rel_err", o.max_rel_err},
                      {"max_excess", o.max_excess},
                      {"worst", worst}};
  if (!o.tile_map.empty()) j["tile_map"] = o.tile_map;
  return j;
}

nlohmann::json to_json(const YardstickResult& y) {
  return {{"name", y.name},
          {"samples", y.stats.samples},
          {"calls_per_sample", y.calls_per_sample},
          {"median_ms", y.stats.median_ms},
          {"min_ms", y.stats.min_ms},
          {"max_ms", y.stats.max_ms},
          {"value", y.value},
          {"ratio", json_number_or_null(y.ratio)}};
}

nlohmann::json to_json(const TestResult& t) {
  return {{"name", t.name},      {"seed", t.seed},
          {"dims", t.dims},      {"verdict", verdict_name(t.verdict)},
          {"reason", t.reason},  {"outputs", outputs_json(t.outputs)},
          {"wall_ms", t.wall_ms}};
}

nlohmann::json to_json(const BenchmarkResult& b) {
  nlohmann::json j = {{"name", b.name},
                      {"seed", b.seed},
                      {"dims", b.dims},
                      {"workload", b.workload},
                      {"verdict", verdict_name(b.verdict)},
                      {"reason", b.reason},
                      {"value", json_number_or_null(b.value)},
                      {"yardstick", b.yardstick ? to_json(*b.yardstick) : nlohmann::json(nullptr)}};
  if (!b.ran) return j;
  add_timing(b, &j);
  j["pct_of_limit"] = json_number_or_null(b.pct_of_limit);
  j["sm_clock_after_mhz"] = b.sm_clock_after_mhz;
  if (!b.passed()) j["outputs"] = outputs_json(b.outputs);
  add_speed_of_light(b, &j);
  j["wall_ms"] = b.wall_ms;
  const JudgeCost& jc = b.judge_cost;
  j["judge_seconds"] = {{"generate", jc.generate_s},
                        {"exchange", jc.exchange_s},
                        {"check", jc.check_s},
                        {"yardstick", jc.yardstick_s}};
  return j;
}

}  // namespace fp4arena
