// The leaderboard: reads `fp4arena.submit.v1` records, validates them, ranks them and renders
// the board as JSON, Markdown and a self-contained HTML page.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fp4arena {

/// One benchmark case of a submit record, reduced to what the board shows.
struct RecordCase {
  std::string name;
  std::int64_t m = 0, n = 0, k = 0;
  double flops = 0;
  std::string verdict;
  std::optional<double> median_ms;        ///< null where the case did not run
  std::optional<double> tflops;           ///< null where the case did not run
  std::optional<double> ratio_to_cublas;  ///< present only where the judge timed cuBLAS
};

/// The fields of one submit record that the board uses. `file` is not part of the record: the
/// loader's caller sets it (the path relative to the results directory).
struct SubmitRecord {
  std::string file;
  std::string judge_version;  ///< e.g. "0.1.0"
  std::string created_utc;    ///< e.g. "2026-11-22T03:00:00Z"
  std::string challenge;
  std::int64_t spec_version = 0;
  std::string solution_path;
  std::string solution_stem;  ///< file name of solution_path without its extension
  std::string sha256;         ///< 64 lowercase hex digits
  std::string author;         ///< empty where the record has none
  std::string device_name;
  double peak_tflops = 0;  ///< device.peak_fp16_dense_tflops
  std::vector<RecordCase> benchmarks;
  std::optional<double> score_tflops;  ///< score.tflops_geomean; null when the score is invalid
  bool score_valid = false;
  std::string score_reason;
  bool passed = false;
  /// The judge's "action" where the record has one ("submit"; empty when absent).
  std::string action;
  /// True when the record has a non-empty "only_cases": a run over some cases only.
  bool partial = false;
  /// For a record that did not pass: the first failed test or benchmark case ("tests[1]
  /// 'odd_5x7x48': wrong_answer"), else the score's reason. Empty for a passing record.
  std::string failure;
};

/// Parses `text` as an `fp4arena.submit.v1` record into `*out`. Returns false with a one-line
/// `*reason` when the text is not JSON ("invalid JSON: ..."), when a field the schema requires is
/// missing or has the wrong type (the reason names the field, e.g. "missing field
/// device.peak_fp16_dense_tflops"), when a record that claims a valid score exceeds the device's
/// dense FP16 peak, or when its figures disagree (tflops vs flops/median_ms/1e9 or the geomean
/// beyond 1%, flops != 2*M*N*K, `passed` with a failed case). Records that honestly failed are
/// valid: they parse, with `passed` false.
bool parse_record(const std::string& text, SubmitRecord* out, std::string* reason);

/// Reads the file at `path` and parses it as parse_record() does; a file that cannot be read is
/// refused with its reason. Sets `out->file` to `path`.
bool load_record(const std::string& path, SubmitRecord* out, std::string* reason);

/// "0.1.7" -> "0.1": the judge series whose records are comparable.
std::string judge_series(const std::string& judge_version);

/// One ranked solution: the best record of one source (sha256) within its group.
struct BoardEntry {
  int rank = 0;  ///< 1-based, by descending score
  SubmitRecord record;
  /// Geometric mean of the cases' ratio_to_cublas where every case has one.
  std::optional<double> ratio_to_cublas;
};

/// The records of one challenge, spec version, judge series and device kind.
struct BoardGroup {
  std::string challenge;
  std::int64_t spec_version = 0;
  std::string judge_series;
  std::string device;
  /// True when this group has the highest spec version among its challenge's records (ranked or
  /// not) and, within that, the highest judge series; older groups stay on the board, marked.
  bool latest = true;
  std::string note;                ///< why the group is not the latest; empty when it is
  std::vector<std::string> cases;  ///< benchmark case names, in the order records list them
  std::vector<BoardEntry> entries;
};

/// A record that is on no board, and why.
struct RecordNote {
  std::string file;
  std::string reason;
};

/// The whole board.
struct Board {
  std::vector<BoardGroup> groups;      ///< by challenge, newest spec and judge first, then device
  std::vector<RecordNote> not_ranked;  ///< failed, invalid score, or a lower-scoring duplicate
  std::vector<RecordNote>
      rejected;  ///< records refused by parse_record(); rank_records() leaves it
};

/// Ranks valid records: only records with `passed` and `score_valid` are ranked (and not those
/// of a partial run or of an action other than "submit"), one entry per sha256 per group (its best
/// score; ties go to the earlier created_utc), by descending score with ties broken by created_utc
/// then solution stem. The others land in `not_ranked`, each with its reason ("not ranked: failed
/// (...)", "not ranked: duplicate of FILE ...").
Board rank_records(std::vector<SubmitRecord> records);

/// The board as JSON (schema "fp4arena.leaderboard.v1"), deterministic for a given board.
std::string render_json(const Board& board);
/// The board as a Markdown document: a table per group, then the unranked and rejected records.
std::string render_markdown(const Board& board);
/// The board as one self-contained HTML page: inline CSS, an inline SVG bar chart per group
/// (one `<rect class="bar">` per entry), a table per group; no scripts and no external fetches.
std::string render_html(const Board& board);

struct LeaderboardOptions {
  std::string results_dir;  ///< read recursively: every *.json file is taken for a record
  std::string out_dir;      ///< receives leaderboard.json, leaderboard.md and leaderboard.html
};

struct LeaderboardReport {
  int records_read = 0;                 ///< *.json files found, rejected ones included
  int records_ranked = 0;               ///< entries on the board
  std::vector<std::string> rejected;    ///< "FILE: reason", FILE under results_dir
  std::vector<std::string> not_ranked;  ///< "FILE: not ranked: ..."
};

/// Reads every record under `options.results_dir` (skipping `options.out_dir` if it lies inside),
/// ranks them and writes the three board files into `options.out_dir`, creating it. Rejected
/// records do not make it fail: they are listed in `*report` and on the board. Returns false
/// with `*err` only when the results directory cannot be read or an output cannot be written.
/// `report` and `err` may be null.
bool build_leaderboard(const LeaderboardOptions& options, LeaderboardReport* report,
                       std::string* err);

}  // namespace fp4arena
