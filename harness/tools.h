// The NVIDIA tools the judge can run a worker under (compute-sanitizer, Nsight Compute),
// and the parsers that turn their output into short summaries.
#pragma once

#include <string>
#include <vector>

namespace fp4arena {

/// Finds `name` (e.g. "ncu", "compute-sanitizer") on PATH, next to nvcc, under $CUDA_HOME
/// or /usr/local/cuda, or in /opt/nvidia/nsight-compute/*; empty when absent.
std::string find_tool(const std::string& name);

struct SanitizerSummary {
  bool found_summary = false;         ///< the log had an "ERROR SUMMARY" line
  int errors = 0;                     ///< sum of the ERROR SUMMARY counts
  std::vector<std::string> findings;  ///< first lines of each reported error, with its "at"
};

/// Reads compute-sanitizer's log text (one or several runs concatenated).
SanitizerSummary parse_sanitizer_log(const std::string& log, size_t max_findings = 10);

struct KernelProfile {
  std::string name;
  double duration_us = -1;     ///< gpu__time_duration.sum
  double sm_pct = -1;          ///< SM throughput, % of peak
  double issue_pct = -1;       ///< issue slots used: % of the schedulers' cycles that issued
  double tensor_pct = -1;      ///< tensor pipe activity, % of peak (best tensor metric found)
  double l2_pct = -1;          ///< L2 throughput, % of peak
  double dram_pct = -1;        ///< DRAM throughput, % of peak
  double bank_conflicts = -1;  ///< shared-memory bank conflicts (loads + stores)
  /// The SM pipe with the highest issue rate, % of its peak while the SM was active
  /// (sm__inst_executed_pipe_<name>.avg.pct_of_peak_sustained_active; tensor pipes are in
  /// tensor_pct): "alu" near 80% says integer and compare work, not memory, sets the time.
  std::string busiest_pipe;
  double busiest_pipe_pct = -1;
  /// Why warps waited, from ncu's WarpStateStats: the two largest stall reasons (e.g.
  /// "long_scoreboard": waiting on a global or local memory result), each in cycles per
  /// issued instruction (smsp__average_warps_issue_stalled_<reason>_per_issue_active.ratio),
  /// largest first; "selected" (issuing) is not a stall and is left out.
  std::vector<std::pair<std::string, double>> top_stalls;
};

/// Parses `ncu --csv --page raw` output (lines before the header are ignored). Metrics the
/// installed ncu does not report stay at -1. False + *err when no kernel row is found.
bool parse_ncu_raw_csv(const std::string& text, std::vector<KernelProfile>* out, std::string* err);

}  // namespace fp4arena
