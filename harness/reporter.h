// The console's account of a run's cases: every line about a test, a benchmark, its
// yardstick and the score comes from here. The judge's steps hand it typed results
// (harness/case_result.h) and never print a case themselves.
#pragma once

#include <ostream>
#include <string>

#include "harness/case_result.h"
#include "harness/spec.h"
#include "harness/verdict.h"

namespace fp4arena {

class CaseReporter {
 public:
  CaseReporter(std::ostream& log, const Spec& spec) : log_(log), spec_(spec) {}

  /// "  PASS  name  shape  out: max abs err ..." or FAIL, the failure and `replay` (the
  /// options that make the call again).
  void test(const TestResult& t, const std::string& replay) const;
  /// The median, the metric, the share of the speed of light and the sampling, with notes
  /// on how sampling stopped and on host time; or FAIL, the failure and `replay`.
  void benchmark(const BenchmarkResult& b, const TimingSpec& timing,
                 const std::string& replay) const;
  void yardstick(const YardstickResult& y) const;
  void yardstick_not_measured(const std::string& why) const;
  /// The score line; `tests_only`: --action test, which times nothing.
  void score(const Score& s, bool tests_only) const;
  /// "result   PASSED  3/3 cases passed in 4.2 s".
  void result(bool passed, int cases_passed, int cases, double seconds) const;

 private:
  void failure(Verdict v, const std::string& reason, const std::vector<OutputReport>& outputs,
               const std::string& replay) const;
  void mismatch(const Mismatch& m) const;
  void sampling_notes(const BenchmarkResult& b, const TimingSpec& timing) const;

  std::ostream& log_;
  const Spec& spec_;
};

}  // namespace fp4arena
