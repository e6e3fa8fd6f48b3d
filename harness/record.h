// Submit records as typed values: the one reader of `fp4arena.submit.v2` records (and of
// `fp4arena.submit.v1` ones, migrated into the same shape), which recomputes every figure a
// record claims before it is believed. The board reads records only through it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "harness/device_limits.h"

namespace fp4arena {

/// The schema of every record the judge writes (Session::record_json, harness/judge.cc) and
/// parse_record() reads; `fp4arena.submit.v1` records are still read, migrated.
inline constexpr const char* kRecordSchema = "fp4arena.submit.v2";

/// The same-run comparison the judge timed on one benchmark case (v2 `yardstick`; v1
/// `cublas_fp16_ms`, `cublas_fp16_tflops`, `ratio_to_cublas`).
struct YardstickFigure {
  std::string name;  ///< e.g. "cuBLAS FP16 GEMM on dequantized operands"
  double median_ms = 0;
  double value = 0;  ///< in the record's metric unit
  double ratio = 0;  ///< the case's value / the yardstick's value
};

/// What a record's figures measure (v2 `metric`). The two valid triples are
/// {"tflops", "TF/s", "flops"} and {"gbps", "GB/s", "bytes"}.
struct Metric {
  std::string name;        ///< "tflops" or "gbps"
  std::string unit;        ///< "TF/s" or "GB/s"
  std::string workload;    ///< "flops" or "bytes"
  std::string expression;  ///< the workload of one call, an expression of the dims ("2*M*N*K")
};

/// One benchmark case of a submit record, reduced to what the board shows and checks.
struct RecordCase {
  std::string name;
  std::map<std::string, std::int64_t> dims;  ///< v1: M, N, K
  double workload = 0;                       ///< FLOPs or bytes of one call
  std::string verdict;
  std::optional<double> median_ms;     ///< null where the case did not run
  std::optional<double> min_ms;        ///< null where the case did not run
  std::optional<double> max_ms;        ///< null where the case did not run (absent in old v1)
  std::optional<double> value;         ///< the metric's value; null where the case did not run
  std::optional<double> pct_of_limit;  ///< as the record states it (v1: pct_of_peak)
  std::optional<YardstickFigure> yardstick;  ///< present only where the judge timed one
  /// The case's roofline time on the record's device (spec.h, speed_of_light): as the record
  /// states it, replaced by check_record_against_spec() with the figure recomputed from the
  /// challenge's spec. Null where neither gives one (records older than the field).
  std::optional<double> speed_of_light_ms;
  std::optional<double> pct_of_speed_of_light;  ///< 100 * speed_of_light_ms / median_ms
};

/// The fields of one submit record that the board uses, whichever schema it was written in.
/// `file` is not part of the record: the loader's caller sets it.
struct SubmitRecord {
  std::string file;
  std::string schema;             ///< "fp4arena.submit.v2" or "fp4arena.submit.v1"
  bool migrated_from_v1 = false;  ///< read from a v1 record (the board notes "v1 record")
  std::string judge_version;      ///< e.g. "0.2.0"
  std::string created_utc;        ///< e.g. "2026-11-22T03:00:00Z"
  std::string challenge;          ///< a plain name: letters, digits, '_', '-', '.'
  std::int64_t spec_version = 0;
  std::string solution_path;
  std::string solution_stem;      ///< file name of solution_path without its extension
  std::string sha256;             ///< 64 lowercase hex digits
  std::string author;             ///< empty where the record has none
  std::string language = "cuda";  ///< the solution's: "cuda", "triton" or "pytorch"
  std::string device_name;
  DeviceShape device;      ///< from the record's device fields (v1: no bus width, 0)
  Metric metric;           ///< v1: tflops, TF/s, flops, "2*M*N*K"
  std::string limit_name;  ///< "fp16_dense", "fp8_dense", "fp4_dense" or "dram" (v1: fp16_dense)
  /// The limit recomputed by the board from the judge's table (device_limits.h) and the device
  /// fields; never the record's own figure. 0 where the table has no entry.
  double limit_value = 0;
  std::vector<RecordCase> benchmarks;
  std::optional<double> score;  ///< score.geomean (v1: tflops_geomean); null when not computed
  bool score_valid = false;
  std::string score_reason;
  bool passed = false;
  /// The judge's "action" where the record has one ("submit"; empty when absent).
  std::string action;
  /// The record's "timing_method" where it names one of the judge's window methods
  /// (verdict.h, window_method_name); empty for records of judge 0.2 and earlier, whose
  /// "timing_method" is a description. Only records of kTimingMethod are ranked.
  std::string timing_method;
  /// True when the record has a non-empty "only_cases": a run over some cases only.
  bool partial = false;
  /// For a record that did not pass: the first failed test or benchmark case ("tests[1]
  /// 'odd_5x7x48': wrong_answer"), else the score's reason. Empty for a passing record.
  std::string failure;
};

/// The largest record file or text the board reads (bytes).
constexpr std::size_t kMaxRecordBytes = 16u << 20;
/// The deepest nesting of arrays and objects the board parses.
constexpr int kMaxRecordDepth = 64;

/// Parses `text` as an `fp4arena.submit.v2` or `fp4arena.submit.v1` record into `*out` (v1 is
/// migrated: see SubmitRecord). Returns false with a one-line `*reason` that names the field
/// when:
/// - the text is larger than kMaxRecordBytes, nested deeper than kMaxRecordDepth, or not JSON
///   ("invalid JSON: ...", which includes ill-formed UTF-8);
/// - a field the schema requires is missing, has the wrong type, or holds a non-finite or absurd
///   number ("missing field device.sm_count", "field benchmarks[0].median_ms must be finite");
/// - the device is not plausible for the judge's table (plausible_device()), or the record's
///   own limit (v2 limit.value and device.limits.*, v1 device.peak_fp16_dense_tflops) differs
///   from the one recomputed from the device fields by more than 1%;
/// - a figure does not follow from the others: a benchmark's workload != its metric expression
///   evaluated on its dims (exactly), value != workload/median_ms/factor (1e9 for TF/s, 1e6 for
///   GB/s) beyond 1%, min_ms <= median_ms <= max_ms fails or median_ms <= 0, the yardstick's
///   value or ratio beyond 1%, pct_of_limit beyond 1%, the score's geomean beyond 1%, `passed`
///   with a failed case or an invalid score;
/// - a valid score, or a benchmark value of a record with a valid score, exceeds the limit.
/// Records that honestly failed are valid: they parse, with `passed` false.
bool parse_record(const std::string& text, SubmitRecord* out, std::string* reason);

/// Where a submit record of `solution_path` (source `sha256`) on `device_name` is kept:
/// `<results_dir>/<challenge>/<device slug>/<solution stem>-<sha256's first 12>.json`, the
/// slug the device's name in lower case with '-' for every other run of characters.
std::string record_path(const std::string& results_dir, const std::string& challenge,
                        const std::string& device_name, const std::string& solution_path,
                        const std::string& sha256);

/// A header's path as a record names it: relative to `cwd` (the judge's working folder, where
/// the solution's own path is relative to) when the header lies below it, so that a committed
/// record names the repository's file and not the judging machine's folders; `resolved` (an
/// absolute path) otherwise.
std::string recorded_header_path(const std::string& resolved, const std::string& cwd);

/// Reads the file at `path` (refused when over kMaxRecordBytes or unreadable, with the reason)
/// and parses it as parse_record() does. Sets `out->file` to `path`.
bool load_record(const std::string& path, SubmitRecord* out, std::string* reason);

/// Checks a parsed record against `<challenges_dir>/<record.challenge>/spec.json` where that
/// file exists (true where it does not), read by the judge's own load_spec(): a spec the judge
/// refuses is a refusal that names it. A record whose challenge.spec_version is the spec's
/// must state the spec's metric name and workload expression (whitespace aside) and, where it
/// states a case's speed_of_light_ms, the one the spec gives on the record's device (within
/// 1%); each case's speed of light is then set from the spec (older records gain it). A record
/// of a newer spec version than the file's is refused; one of an older version is not compared.
bool check_record_against_spec(SubmitRecord* record, const std::string& challenges_dir,
                               std::string* reason);

/// "0.1.7" -> "0.1": the judge series whose records are comparable.
std::string judge_series(const std::string& judge_version);

/// parse_record()'s reason for a sweep.json (schema fp4arena.sweep.v1): documentation that may
/// sit beside the records, skipped rather than rejected.
extern const char* const kSweepNotARecord;

}  // namespace fp4arena
