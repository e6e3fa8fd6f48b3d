// The console's account of a run: its banner, the compile, the device, every line about a
// test, a benchmark, its yardstick, the score, the result and the record come from here. The
// judge's steps hand it typed values (harness/case_result.h, CompileResult, DeviceInfo) and
// never print those themselves; a failure that ends the run is Session::fail's one line.
#pragma once

#include <ostream>
#include <string>

#include "harness/case_result.h"
#include "harness/compile.h"
#include "harness/device_info.h"
#include "harness/spec.h"
#include "harness/verdict.h"

namespace fp4arena {

class ConsoleReporter {
 public:
  ConsoleReporter(std::ostream& log, const Spec& spec) : log_(log), spec_(spec) {}

  /// "fp4arena VERSION | challenge (spec vN) | solution`after`".
  void banner(const std::string& solution, const std::string& after) const;
  /// "compile  ok (cached)  sm_90a  nvcc 13.0  sha256 ...", nvcc's warnings, the kernels'
  /// resources and every header read; or "compile  FAILED ..." with nvcc's diagnostics.
  void compiled(const CompileResult& c, const std::string& arch) const;
  /// "device   NAME | N SMs | clocks | driver | CUDA | the spec's limit" (`limit` 0: none known).
  void device(const DeviceInfo& d, double limit) const;
  /// Why nothing ran: no GPU (`reason`), and what works without one.
  /// `python`: the solution was parsed (a Python file), not compiled.
  void no_gpu(const std::string& reason, bool python = false) const;
  /// "tests" or "benchmarks", above their cases.
  void section(const char* name) const { log_ << name << "\n"; }
  void record(const std::string& path) const { log_ << "record   " << path << "\n"; }

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
