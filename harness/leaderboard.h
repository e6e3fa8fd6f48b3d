// The leaderboard: reads submit records through harness/record.h (which recomputes every
// figure they claim), ranks them and renders the board as JSON, Markdown and a self-contained
// HTML page.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "harness/record.h"

namespace fp4arena {

/// One ranked solution: the best record of one source (sha256) within its group.
struct BoardEntry {
  int rank = 0;  ///< 1-based, by descending score
  SubmitRecord record;
  /// Geometric mean of the cases' yardstick ratios where every case has a yardstick.
  std::optional<double> ratio_to_yardstick;
  /// The score as a percentage of the recomputed limit; null where the table has no limit.
  std::optional<double> pct_of_limit;
  /// Geometric mean of the cases' shares of their speed of light (recomputed from the spec on
  /// the record's device); null unless every case has one.
  std::optional<double> pct_of_speed_of_light;
  std::vector<std::string> notes;  ///< e.g. "v1 record" for a migrated record
};

/// The records of one challenge, spec version, judge series, device kind and metric.
struct BoardGroup {
  std::string challenge;
  std::int64_t spec_version = 0;
  std::string judge_series;
  std::string device;
  std::string metric;      ///< "tflops" or "gbps"
  std::string unit;        ///< "TF/s" or "GB/s": every figure of the group is in this unit
  std::string limit_name;  ///< the limit of the group's entries (the first entry's)
  /// True when this group has the highest spec version among its challenge's records (ranked or
  /// not) and, within that, the highest judge series; older groups stay on the board, marked.
  bool latest = true;
  std::string note;                     ///< why the group is not the latest; empty when it is
  std::vector<std::string> cases;       ///< benchmark case names, in the order records list them
  std::vector<std::string> yardsticks;  ///< distinct yardstick names of the entries, in order
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
  std::vector<RecordNote> rejected;    ///< records refused by the loader; rank_records() leaves it
};

/// Ranks valid records: only records with `passed` and `score_valid` are ranked (and not those
/// of a partial run or of an action other than "submit"), one entry per sha256 per group (its best
/// score; ties go to the earlier created_utc), by descending score with ties broken by created_utc
/// then solution stem. The others land in `not_ranked`, each with its reason ("not ranked: failed
/// (...)", "not ranked: duplicate of FILE ...").
Board rank_records(std::vector<SubmitRecord> records);

/// The board as JSON (schema "fp4arena.leaderboard.v2"), deterministic for a given board.
std::string render_json(const Board& board);
/// The board as a Markdown document: a table per group, then the unranked and rejected records.
std::string render_markdown(const Board& board);
/// The board as one self-contained HTML page: inline CSS, an inline SVG bar chart per group
/// (one `<rect class="bar">` per entry), a table per group; no scripts and no external fetches.
std::string render_html(const Board& board);

struct LeaderboardOptions {
  std::string results_dir;  ///< read recursively: every *.json file is taken for a record
  std::string out_dir;      ///< receives leaderboard.json, leaderboard.md and leaderboard.html
  /// Where `<challenge>/spec.json` files are looked up for check_record_against_spec(); empty:
  /// no spec check. The CLI passes "challenges" unless told otherwise.
  std::string challenges_dir;
};

struct LeaderboardReport {
  int records_read = 0;                 ///< *.json files found, rejected ones included, sweeps not
  int sweeps_skipped = 0;               ///< sweep.json files (schema fp4arena.sweep.v1) passed over
  int records_ranked = 0;               ///< entries on the board
  std::vector<std::string> rejected;    ///< "FILE: reason", FILE under results_dir
  std::vector<std::string> not_ranked;  ///< "FILE: not ranked: ..."
};

/// Reads every record under `options.results_dir` (skipping `options.out_dir` if it lies inside),
/// checks each against its challenge's spec where `options.challenges_dir` has one, ranks them and
/// writes the three board files into `options.out_dir`, creating it. Rejected records do not make
/// it fail: they are listed in `*report` and on the board. File names that are not UTF-8 are shown
/// with U+FFFD in place of the bad bytes. Returns false with `*err` only when the results
/// directory cannot be read or an output cannot be written. `report` and `err` may be null.
bool build_leaderboard(const LeaderboardOptions& options, LeaderboardReport* report,
                       std::string* err);

}  // namespace fp4arena
