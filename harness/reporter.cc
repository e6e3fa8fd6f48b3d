#include "harness/reporter.h"

#include <cmath>
#include <sstream>

#include "harness/text.h"

namespace fp4arena {

void ConsoleReporter::banner(const std::string& solution, const std::string& after) const {
  log_ << "fp4arena " << FP4ARENA_VERSION << " | " << spec_.name << " (spec v" << spec_.spec_version
       << ") | " << solution << after << "\n";
}

void ConsoleReporter::compiled(const CompileResult& c, const std::string& arch) const {
  if (!c.ok) {
    log_ << "compile  FAILED for " << arch << " (nvcc " << c.nvcc_version << ")\n" << c.diagnostics;
    if (!c.diagnostics.empty() && c.diagnostics.back() != '\n') log_ << "\n";
    return;
  }
  log_ << "compile  ok" << (c.cached ? " (cached)" : " in " + fixed(c.seconds, 1) + " s") << "  "
       << arch << "  nvcc " << c.nvcc_version << "  sha256 " << c.source_sha256.substr(0, 12)
       << "\n";
  if (!c.diagnostics.empty()) log_ << c.diagnostics;
  if (!c.kernels.empty()) log_ << format_kernel_resources(c.kernels);
  for (const HeaderHash& h : c.headers) {
    log_ << "header   " << h.path << "  sha256 " << h.sha256.substr(0, 12) << "\n";
  }
}

void ConsoleReporter::device(const DeviceInfo& d, double limit) const {
  log_ << "device   " << d.name << " | " << d.sm_count << " SMs | " << d.sm_clock_max_mhz
       << " MHz max";
  if (d.sm_clock_now_mhz >= 0) log_ << " (" << d.sm_clock_now_mhz << " now)";
  log_ << " | driver " << (d.driver_version.empty() ? "?" : d.driver_version) << " | CUDA "
       << d.cuda_driver;
  if (limit > 0) {
    log_ << " | " << limit_name(spec_.limit) << " limit " << fixed(limit, 0) << " "
         << spec_.metric.unit();
  } else {
    log_ << " | no " << limit_name(spec_.limit) << " limit known for this device";
  }
  log_ << "\n";
}

void ConsoleReporter::no_gpu(const std::string& reason, bool python) const {
  log_ << "no CUDA GPU available: " << reason << ".\nThe solution "
       << (python ? "parses" : "compiled")
       << " and its signature matches, but nothing was run. Without a GPU, "
          "--action check and "
          "--action dump work; test, run, submit, sanitize, profile and sweep need a machine "
          "with an NVIDIA GPU and its driver (the bundled solutions are written for Hopper, "
          "sm_90a): --remote HOST judges on one reached by ssh.\n";
}

void ConsoleReporter::mismatch(const Mismatch& m) const {
  log_ << "          at (row " << m.row << ", col " << m.col << "): expected " << m.expected;
  if (m.codes) log_ << " (code 0x" << std::hex << m.expected_code << std::dec << ")";
  log_ << ", got ";
  if (m.unwritten) {
    log_ << "never written";
  } else {
    log_ << m.got;
    if (m.codes) log_ << " (code 0x" << std::hex << m.got_code << std::dec << ")";
  }
  if (!m.codes && !m.unwritten && std::isfinite(m.excess)) {
    log_ << "  [" << fixed(m.excess, 1) << "x the allowed error]";
  }
  log_ << "\n";
}

void ConsoleReporter::failure(Verdict v, const std::string& reason,
                              const std::vector<OutputReport>& outputs,
                              const std::string& replay) const {
  log_ << "        " << verdict_name(v) << ": " << reason << "\n";
  if (v == Verdict::kWrongAnswer) {
    for (const OutputReport& o : outputs) {
      if (o.passed) continue;
      log_ << "        " << o.summary << "\n";
      for (const Mismatch& m : o.worst) mismatch(m);
      for (const std::string& line : split_lines(o.tile_map)) log_ << "        " << line << "\n";
    }
  }
  // A case the judge could not run (its own failure) has nothing of the solution's to replay.
  if (v != Verdict::kNotRun) log_ << "        replay: " << replay << "\n";
}

namespace {

// `text` left-aligned in a column `width` wide, and at least one space after it when it is
// wider (a long case name or shape shifts the line rather than running into the next field).
std::string column(const std::string& text, size_t width) {
  return text.size() < width ? text + std::string(width - text.size(), ' ') : text + " ";
}

}  // namespace

void ConsoleReporter::test(const TestResult& t, const std::string& replay) const {
  log_ << "  " << (t.passed() ? "PASS" : "FAIL") << "  " << column(t.name, 24)
       << column(shape_text(spec_, t.dims), 18);
  if (!t.passed()) {
    log_ << "\n";
    return failure(t.verdict, t.reason, t.outputs, replay);
  }
  std::string sep;
  for (const OutputReport& o : t.outputs) {
    log_ << sep << o.name << ": ";
    if (o.kind == CompareKind::kExact || o.kind == CompareKind::kExactOrTie) {
      log_ << "exact";
      if (o.ties) log_ << " (" << o.ties << " ties)";
    } else {
      log_ << "max abs err " << o.max_abs_err;
    }
    sep = "  ";
  }
  log_ << "\n";
}

void ConsoleReporter::benchmark(const BenchmarkResult& b, const TimingSpec& timing,
                                const std::string& replay) const {
  log_ << "  " << (b.passed() ? "PASS" : "FAIL") << "  " << column(b.name, 10)
       << column(shape_text(spec_, b.dims), 18);
  if (!b.passed()) {
    log_ << "\n";
    return failure(b.verdict, b.reason, b.outputs, replay);
  }
  const TimingStats& s = b.stats;
  log_ << "median " << fixed(s.median_ms, 4) << " ms  " << fixed(b.value.value_or(0), 1) << " "
       << spec_.metric.unit();
  if (std::optional<double> pct = b.pct_of_speed_of_light()) {
    log_ << "  " << fixed(*pct, 1) << "% of speed of light ("
         << (b.speed_of_light.memory_bound() ? "memory" : "compute") << ")";
  }
  log_ << "  n=" << s.samples << "x" << b.calls_per_sample << " rse " << fixed(100 * s.rse, 2)
       << "%\n";
  sampling_notes(b, timing);
}

void ConsoleReporter::sampling_notes(const BenchmarkResult& b, const TimingSpec& timing) const {
  const TimingStats& s = b.stats;
  if (b.stopped == StopReason::kTimeCap && s.samples < timing.min_samples) {
    log_ << "        note: the " << fixed(timing.max_seconds, 0)
         << " s time cap ended sampling after " << s.samples
         << " samples, fewer than the spec's min_samples " << timing.min_samples
         << " (each call's generation and checking is slow at this size)\n";
  } else if (b.stopped != StopReason::kConverged) {
    log_ << "        note: sampling stopped by " << stop_reason_name(b.stopped)
         << " before the rse reached " << fixed(100 * timing.target_rse, 2) << "%\n";
  }
  if (b.synchronising_windows > 0) {
    log_ << "        note: in " << b.synchronising_windows << " of " << s.samples
         << " windows solve() had not returned " << fixed(kQueueWaitSeconds, 1)
         << " s after the calls were asked for (it waits for the device): those windows time "
            "its calls as they come, host time included\n";
  }
  if (b.host_call_median_ms > 0.2 * s.median_ms && b.host_call_median_ms > 0.05) {
    log_ << "        note: solve() spends " << fixed(b.host_call_median_ms, 3)
         << " ms on the host per call (median)\n";
  }
}

void ConsoleReporter::yardstick(const YardstickResult& y) const {
  log_ << "        " << y.name << "  " << fixed(y.stats.median_ms, 4) << " ms  "
       << fixed(y.value, 1) << " " << spec_.metric.unit();
  if (y.ratio) log_ << "  -> ratio " << fixed(*y.ratio, 2);
  log_ << "\n";
}

void ConsoleReporter::yardstick_not_measured(const std::string& why) const {
  if (!why.empty()) log_ << "        yardstick not measured: " << why << "\n";
}

void ConsoleReporter::score(const Score& s, bool tests_only) const {
  log_ << "score    ";
  if (tests_only) {
    log_ << "none (--action test times nothing)";
  } else if (s.geomean) {
    log_ << "geomean " << fixed(*s.geomean, 1) << " " << spec_.metric.unit();
    if (!s.valid) log_ << "  INVALID: " << s.reason;
  } else {
    log_ << "none (" << s.reason << ")";
  }
  log_ << "\n";
}

void ConsoleReporter::result(bool passed, int cases_passed, int cases, double seconds) const {
  log_ << "result   " << (passed ? "PASSED" : "FAILED") << "  " << cases_passed << "/" << cases
       << " cases passed in " << fixed(seconds, 1) << " s\n";
}

}  // namespace fp4arena
