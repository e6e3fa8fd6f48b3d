#include "harness/leaderboard.h"

#include "harness/html.h"
#include "harness/process.h"
#include "harness/text.h"
#include "harness/verdict.h"

#include <algorithm>
#include <cctype>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <tuple>
#include <utility>

#include <nlohmann/json.hpp>

#include "harness/spec.h"
#include "harness/sweep_report.h"

namespace fp4arena {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using nlohmann::ordered_json;

constexpr const char* kBoardSchema = "fp4arena.leaderboard.v2";

std::pair<long, long> series_key(const std::string& series) {
  long major = 0, minor = 0;
  std::sscanf(series.c_str(), "%ld.%ld", &major, &minor);
  return {major, minor};
}

std::string md_escape(const std::string& s) {
  std::string out;
  for (char ch : s) {
    if (static_cast<unsigned char>(ch) < 0x20) {
      out += ' ';
      continue;
    }
    if (std::string("\\`*_[]<>|#").find(ch) != std::string::npos) out += '\\';
    out += ch;
  }
  return out;
}

// A file name as a code span where it can be one, so that it reads as typed.
std::string md_code(const std::string& s) {
  for (char ch : s)
    if (ch == '`' || static_cast<unsigned char>(ch) < 0x20) return md_escape(s);
  return "`" + s + "`";
}

std::string group_title(const BoardGroup& g) {
  return g.challenge + " · spec v" + std::to_string(g.spec_version) + " · judge " + g.judge_series +
         " · " + g.device + " · " + g.unit;
}

const RecordCase* find_case(const SubmitRecord& r, const std::string& name) {
  for (const RecordCase& c : r.benchmarks)
    if (c.name == name) return &c;
  return nullptr;
}

// A case's value, then its yardstick ratio and share of its speed of light where known
// ("811.7 (1.01×, 75.8% SoL)"); `open` and `close` set the second part apart.
std::string case_cell(const SubmitRecord& r, const std::string& name, const std::string& open,
                      const std::string& close) {
  const RecordCase* c = find_case(r, name);
  if (!c || !c->value) return "—";
  std::string more;
  if (c->yardstick) more = fixed(c->yardstick->ratio, 2) + "×";
  if (c->pct_of_speed_of_light)
    more += (more.empty() ? "" : ", ") + fixed(*c->pct_of_speed_of_light, 1) + "% SoL";
  return fixed(*c->value, 1) + (more.empty() ? "" : open + "(" + more + ")" + close);
}

// The solution as the board names it: its file's stem, and its language where it is not CUDA
// ("triton_dequant (triton)").
std::string solution_name(const SubmitRecord& r) {
  return r.solution_stem + (r.language == "cuda" ? "" : " (" + r.language + ")");
}

// True when some entry of `g` names its author (has a note): the column is shown only then
// (the notes column in the HTML page).
bool has_authors(const BoardGroup& g) {
  return std::any_of(g.entries.begin(), g.entries.end(),
                     [](const BoardEntry& e) { return !e.record.author.empty(); });
}
bool has_notes(const BoardGroup& g) {
  return std::any_of(g.entries.begin(), g.entries.end(),
                     [](const BoardEntry& e) { return !e.notes.empty(); });
}

std::string ratio_cell(const BoardEntry& e) {
  return e.ratio_to_yardstick ? fixed(*e.ratio_to_yardstick, 2) + "×" : "—";
}

std::string sol_cell(const BoardEntry& e) {
  return e.pct_of_speed_of_light ? fixed(*e.pct_of_speed_of_light, 1) + "%" : "—";
}

std::string notes_cell(const BoardEntry& e) {
  std::string s;
  for (const std::string& n : e.notes) s += (s.empty() ? "" : "; ") + n;
  return s;
}

// The line under a group's table that says what "vs yardstick" and "% of limit" compare with.
std::string group_footnote(const BoardGroup& g) {
  std::string s = "vs yardstick: the geometric mean of the cases' ratios to ";
  if (g.yardsticks.empty()) {
    s = "vs yardstick: no yardstick was timed in these records";
  } else {
    for (size_t i = 0; i < g.yardsticks.size(); ++i)
      s += (i ? (i + 1 == g.yardsticks.size() ? " or " : ", ") : "") + g.yardsticks[i];
    s += ", timed in the same run (per case in parentheses)";
  }
  return s +
         ". % of speed of light (SoL): the geometric mean of the cases' roofline times over "
         "their medians; a case's roofline time is the larger of its FLOPs at the device's " +
         (g.metric == "tflops" ? g.limit_name + " rate" : std::string("(no compute term)")) +
         " and its bytes at the DRAM rate, recomputed from the challenge's spec and the judge's "
         "table.";
}

std::string date_of(const std::string& created_utc) {
  return created_utc.substr(0, 10);
}

const std::string kRules =
    std::string(
        "Only records with passed and score.valid, timed by the judge's own clock "
        "(timing_method ") +
    kTimingMethod +
    "), are ranked, one entry per solution source "
    "(sha256, its best record), by the geometric mean of the benchmark cases' metric (TF/s or "
    "GB/s, as the challenge declares); on one device this orders exactly as the geometric mean "
    "of % of speed of light does (each case's roofline time is a constant of the device), and "
    "unlike the ratio to a yardstick it rests on no second measurement. Each challenge spec "
    "version, judge series (major.minor), "
    "device kind and metric is ranked apart. Every figure is recomputed from the record's "
    "timings, and limits from the judge's own table.";

// Through a temporary file renamed into place: a link planted at the name in the output
// folder is replaced, never written through.
bool write_file(const fs::path& path, const std::string& content, std::string* err) {
  std::string why;
  if (write_file_atomic(path.string(), content, &why)) return true;
  if (err) *err = "cannot write " + valid_utf8(path.generic_string()) + ": " + valid_utf8(why);
  return false;
}

}  // namespace

namespace {

using GroupKey = std::tuple<std::string, std::int64_t, std::string, std::string, std::string>;
using LatestOf = std::map<std::string, std::pair<std::int64_t, std::pair<long, long>>>;

// Why `r` is not ranked, or "" when it may be.
std::string unranked_reason(const SubmitRecord& r) {
  if (!r.passed) return "not ranked: failed (" + r.failure + ")";
  if (!r.action.empty() && r.action != "submit") {
    return "not ranked: a record of --action " + r.action + ", not submit";
  }
  if (r.partial) return "not ranked: a partial run (only_cases)";
  if (!r.score_valid || !r.score) return "not ranked: score invalid (" + r.score_reason + ")";
  if (r.timing_method.empty()) {
    return std::string(
               "not ranked: timed by an earlier method (the worker's own events, held to the "
               "judge's clocks by a margin), not by the judge's own clock (") +
           kTimingMethod + "): submit it again to rank it";
  }
  if (r.timing_method != kTimingMethod) {
    return "not ranked: timed by " + r.timing_method +
           ", the judge's earlier window method (docs/judging.md): submit it again to rank it "
           "under " +
           kTimingMethod;
  }
  return "";
}

// `r` as an entry of `g` (whose case and yardstick lists it extends).
BoardEntry make_entry(SubmitRecord&& r, BoardGroup* g) {
  BoardEntry e;
  e.rank = static_cast<int>(g->entries.size()) + 1;
  double log_ratio = 0;
  bool all_ratios = !r.benchmarks.empty();
  for (const RecordCase& c : r.benchmarks) {
    if (std::find(g->cases.begin(), g->cases.end(), c.name) == g->cases.end())
      g->cases.push_back(c.name);
    if (c.yardstick && c.yardstick->ratio > 0) {
      log_ratio += std::log(c.yardstick->ratio);
      if (std::find(g->yardsticks.begin(), g->yardsticks.end(), c.yardstick->name) ==
          g->yardsticks.end())
        g->yardsticks.push_back(c.yardstick->name);
    } else {
      all_ratios = false;
    }
  }
  if (all_ratios) e.ratio_to_yardstick = std::exp(log_ratio / r.benchmarks.size());
  if (r.limit_value > 0) e.pct_of_limit = *r.score / r.limit_value * 100;
  double log_sol = 0;
  bool all_sol = !r.benchmarks.empty();
  for (const RecordCase& c : r.benchmarks) {
    all_sol = all_sol && c.pct_of_speed_of_light && *c.pct_of_speed_of_light > 0;
    if (all_sol) log_sol += std::log(*c.pct_of_speed_of_light);
  }
  if (all_sol) e.pct_of_speed_of_light = std::exp(log_sol / r.benchmarks.size());
  if (r.limit_name != g->limit_name) e.notes.push_back("limit " + r.limit_name);
  if (r.migrated_from_v1) e.notes.push_back("v1 record");
  e.record = std::move(r);
  return e;
}

// One group's entries: by descending score, one per source (sha256); the other records of a
// source go to `board->not_ranked` as duplicates.
BoardGroup make_group(const GroupKey& key, std::vector<SubmitRecord>& list, Board* board) {
  std::sort(list.begin(), list.end(), [](const SubmitRecord& a, const SubmitRecord& b) {
    return std::make_tuple(-*a.score, a.created_utc, a.solution_stem, a.file) <
           std::make_tuple(-*b.score, b.created_utc, b.solution_stem, b.file);
  });
  BoardGroup g;
  std::tie(g.challenge, g.spec_version, g.judge_series, g.device, g.metric) = key;
  g.unit = list.front().metric.unit;
  g.limit_name = list.front().limit_name;
  std::map<std::string, std::pair<std::string, double>> best;  // sha256 -> file, score
  for (SubmitRecord& r : list) {
    auto [it, fresh] = best.emplace(r.sha256, std::make_pair(r.file, *r.score));
    if (fresh) {
      g.entries.push_back(make_entry(std::move(r), &g));
      continue;
    }
    const auto& [kept_file, kept_score] = it->second;
    board->not_ranked.push_back({r.file, "not ranked: duplicate of " + kept_file +
                                             " (same source sha256 " + r.sha256.substr(0, 12) +
                                             "; " + fixed(*r.score, 1) + " " + g.unit + " here, " +
                                             fixed(kept_score, 1) + " " + g.unit + " there)"});
  }
  return g;
}

// Marks a group that is not of its challenge's latest spec and judge series, saying why.
void mark_older(const LatestOf& latest, BoardGroup* g) {
  const auto& [spec, series] = latest.at(g->challenge);
  if (g->spec_version != spec) {
    g->latest = false;
    g->note = "Older challenge spec v" + std::to_string(g->spec_version) + " (latest is v" +
              std::to_string(spec) + "): ranked apart, not comparable with the latest spec.";
  } else if (series_key(g->judge_series) != series) {
    g->latest = false;
    g->note = "Older judge " + g->judge_series + " (latest is " + std::to_string(series.first) +
              "." + std::to_string(series.second) +
              "): ranked apart, not comparable with the latest judge.";
  }
}

}  // namespace

Board rank_records(std::vector<SubmitRecord> records) {
  Board board;
  // A challenge's latest groups are those of its highest spec version and, within it, of its
  // highest judge series, over every record (a newer spec that nobody passes yet still makes
  // the older boards old). Older groups are kept apart and marked, never merged.
  LatestOf latest;
  for (const SubmitRecord& r : records) {
    auto mine = std::make_pair(r.spec_version, series_key(judge_series(r.judge_version)));
    auto [it, fresh] = latest.emplace(r.challenge, mine);
    if (!fresh && it->second < mine) it->second = mine;
  }
  std::map<GroupKey, std::vector<SubmitRecord>> candidates;
  for (SubmitRecord& r : records) {
    const std::string why = unranked_reason(r);
    if (!why.empty()) {
      board.not_ranked.push_back({r.file, why});
      continue;
    }
    GroupKey key{r.challenge, r.spec_version, judge_series(r.judge_version), r.device_name,
                 r.metric.name};
    candidates[key].push_back(std::move(r));
  }
  for (auto& [key, list] : candidates) board.groups.push_back(make_group(key, list, &board));
  for (BoardGroup& g : board.groups) mark_older(latest, &g);
  auto order = [](const BoardGroup& g) {
    const auto [major, minor] = series_key(g.judge_series);
    return std::make_tuple(g.challenge, -g.spec_version, -major, -minor, g.device, g.metric);
  };
  std::sort(board.groups.begin(), board.groups.end(),
            [&](const BoardGroup& a, const BoardGroup& b) { return order(a) < order(b); });
  std::sort(board.not_ranked.begin(), board.not_ranked.end(),
            [](const RecordNote& a, const RecordNote& b) { return a.file < b.file; });
  return board;
}

std::string render_json(const Board& board) {
  auto opt = [](const std::optional<double>& v) { return v ? ordered_json(*v) : ordered_json(); };
  ordered_json doc;
  doc["schema"] = kBoardSchema;
  doc["ranking"] = kRules;
  doc["groups"] = ordered_json::array();
  for (const BoardGroup& g : board.groups) {
    ordered_json jg;
    jg["challenge"] = g.challenge;
    jg["spec_version"] = g.spec_version;
    jg["judge_series"] = g.judge_series;
    jg["device"] = g.device;
    jg["metric"] = g.metric;
    jg["unit"] = g.unit;
    jg["limit"] = g.limit_name;
    jg["latest"] = g.latest;
    jg["note"] = g.note;
    jg["cases"] = g.cases;
    jg["yardsticks"] = g.yardsticks;
    jg["entries"] = ordered_json::array();
    for (const BoardEntry& e : g.entries) {
      const SubmitRecord& r = e.record;
      ordered_json je;
      je["rank"] = e.rank;
      je["solution"] = r.solution_stem;
      je["path"] = r.solution_path;
      je["author"] = r.author;
      je["language"] = r.language;
      je["score"] = *r.score;
      je["pct_of_limit"] = opt(e.pct_of_limit);
      je["pct_of_speed_of_light"] = opt(e.pct_of_speed_of_light);
      je["ratio_to_yardstick"] = opt(e.ratio_to_yardstick);
      je["cases"] = ordered_json::array();
      for (const RecordCase& c : r.benchmarks) {
        ordered_json jc;
        jc["name"] = c.name;
        jc["value"] = opt(c.value);
        jc["ratio_to_yardstick"] = c.yardstick ? ordered_json(c.yardstick->ratio) : ordered_json();
        jc["speed_of_light_ms"] = opt(c.speed_of_light_ms);
        jc["pct_of_speed_of_light"] = opt(c.pct_of_speed_of_light);
        je["cases"].push_back(std::move(jc));
      }
      je["created_utc"] = r.created_utc;
      je["sha256"] = r.sha256;
      je["judge_version"] = r.judge_version;
      je["schema"] = r.schema;
      je["limit_value"] = r.limit_value;
      je["notes"] = e.notes;
      je["file"] = r.file;
      jg["entries"].push_back(std::move(je));
    }
    doc["groups"].push_back(std::move(jg));
  }
  for (const char* key : {"not_ranked", "rejected"}) {
    const auto& notes = std::string(key) == "rejected" ? board.rejected : board.not_ranked;
    doc[key] = ordered_json::array();
    for (const RecordNote& n : notes) doc[key].push_back({{"file", n.file}, {"reason", n.reason}});
  }
  return doc.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

std::string render_markdown(const Board& board) {
  std::ostringstream md;
  size_t ranked = 0;
  for (const BoardGroup& g : board.groups) ranked += g.entries.size();
  md << "# fp4arena leaderboard\n\n"
     << kRules << "\n\n"
     << ranked << " ranked, " << board.not_ranked.size() << " not ranked, " << board.rejected.size()
     << " rejected.\n";
  for (const BoardGroup& g : board.groups) {
    const std::string unit = md_escape(g.unit);
    md << "\n## " << md_escape(group_title(g)) << "\n\n";
    if (!g.note.empty()) md << "> " << md_escape(g.note) << "\n\n";
    const bool authors = has_authors(g);
    md << "| rank | solution |" << (authors ? " author |" : "") << " score " << unit << " |";
    for (const std::string& c : g.cases) md << " " << md_escape(c) << " " << unit << " |";
    md << " % of SoL | vs yardstick | date | sha256 | notes |\n"
       << "|---:|---|" << (authors ? "---|" : "") << "---:|";
    for (size_t i = 0; i < g.cases.size(); ++i) md << "---:|";
    md << "---:|---:|---|---|---|\n";
    for (const BoardEntry& e : g.entries) {
      const SubmitRecord& r = e.record;
      md << "| " << e.rank << " | " << md_escape(solution_name(r)) << " | "
         << (authors ? md_escape(r.author) + " | " : "") << fixed(*r.score, 1) << " |";
      for (const std::string& c : g.cases) md << " " << case_cell(r, c, " ", "") << " |";
      md << " " << sol_cell(e) << " | " << ratio_cell(e) << " | "
         << md_escape(date_of(r.created_utc)) << " | `" << r.sha256.substr(0, 12) << "` | "
         << md_escape(notes_cell(e)) << " |\n";
    }
    md << "\n" << md_escape(group_footnote(g)) << "\n";
  }
  const std::pair<const char*, const std::vector<RecordNote>*> lists[] = {
      {"Not ranked", &board.not_ranked}, {"Rejected", &board.rejected}};
  for (const auto& [title, notes] : lists) {
    if (notes->empty()) continue;
    md << "\n## " << title << "\n\n";
    for (const RecordNote& n : *notes)
      md << "- " << md_code(n.file) << ": " << md_escape(n.reason) << "\n";
  }
  return md.str();
}

namespace {

// The page's head and title, its inline style included.
void html_head(std::ostringstream& h) {
  h << R"(<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>fp4arena leaderboard</title>
<style>
body { margin: 0; background: #f6f7f9; color: #1d2330;
  font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }
main { max-width: 1360px; margin: 0 auto; padding: 24px 20px 48px; }
h1 { font-size: 26px; margin: 0 0 4px; }
.rules, .summary { color: #4a5366; margin: 4px 0; }
section.group { background: #fff; border: 1px solid #dde1e8; border-radius: 8px;
  padding: 16px 20px; margin: 20px 0; }
section.group.superseded { opacity: 0.8; }
h2 { font-size: 18px; margin: 0 0 8px; }
.tag { display: inline-block; font-size: 12px; font-weight: 600; padding: 1px 8px;
  border-radius: 10px; background: #e8edf7; color: #31456e; margin-left: 6px; }
.note { background: #fff6e0; border-left: 3px solid #e0a800; padding: 6px 10px; margin: 8px 0; }
svg.chart { display: block; max-width: 100%; height: auto; margin: 8px 0 12px; }
svg.chart .label { font-size: 13px; fill: #1d2330; }
svg.chart .value { font-size: 12px; fill: #4a5366; }
svg.chart .bar { fill: #3d6fd6; }
svg.chart .bar.first { fill: #1f4fb4; }
svg.chart .limit { stroke: #c0262d; stroke-width: 2; stroke-dasharray: 6 4; }
svg.chart .yardstick { stroke: #e08a1e; stroke-width: 2; }
svg.chart text.limit-label { fill: #c0262d; font-size: 12px; }
svg.chart text.yardstick-label { fill: #b06a10; font-size: 12px; }
section.superseded svg.chart .bar { fill: #9aa3b5; }
table { border-collapse: collapse; width: 100%; font-size: 14px; }
th, td { padding: 6px 8px; border-bottom: 1px solid #eceff4; text-align: left;
  white-space: nowrap; }
th { background: #f1f3f7; font-weight: 600; white-space: normal; vertical-align: bottom; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
td .sub { color: #4a5366; font-size: 12px; }
tr.entry:first-child td { font-weight: 600; }
code { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 13px; }
.scroll { overflow-x: auto; }
ul.notes li { margin: 4px 0; }
.footnote { color: #4a5366; font-size: 13px; margin: 8px 0 0; }
</style>
</head>
<body>
<main>
<h1>fp4arena leaderboard</h1>
)";
}

// The geometric mean of the yardstick's values behind an entry's score (its score over its
// ratio), or 0 where the entry has no ratio.
double yardstick_value(const BoardEntry& e) {
  return e.ratio_to_yardstick && *e.ratio_to_yardstick > 0 ? *e.record.score / *e.ratio_to_yardstick
                                                           : 0;
}

// The words after an entry's bar: its score, its share of the speed of light, and how far it
// is behind the first (so that close bars still read apart).
std::string bar_text(const BoardGroup& g, const BoardEntry& e) {
  const double score = *e.record.score, first = *g.entries.front().record.score;
  std::string s = fixed(score, 1) + " " + html_escape(g.unit);
  if (e.pct_of_speed_of_light) s += " · " + fixed(*e.pct_of_speed_of_light, 1) + "% SoL";
  if (e.rank > 1 && first > 0) s += " · −" + fixed(100 * (1 - score / first), 1) + "%";
  return s;
}

// A group's bar chart: one bar per entry, the device's limit as a dashed line and the
// yardstick (the best entry's) as a solid one, on one scale.
void html_chart(std::ostringstream& h, const BoardGroup& g) {
  constexpr int kWidth = 900, kLabel = 200, kValue = 250, kRow = 28, kBar = 20, kPad = 8;
  const std::string unit = html_escape(g.unit);
  const double limit = g.entries.empty() ? 0 : g.entries.front().record.limit_value;
  const double yard = g.entries.empty() ? 0 : yardstick_value(g.entries.front());
  double top = std::max(limit, yard);
  for (const BoardEntry& e : g.entries) top = std::max(top, *e.record.score);
  const int lines = (limit > 0) + (yard > 0);
  const int height = kPad * 2 + kRow * static_cast<int>(g.entries.size()) + 16 * lines;
  const double span = kWidth - kLabel - kValue;
  auto x_of = [&](double v) { return kLabel + (top > 0 ? span * v / top : 0); };
  h << "<svg class=\"chart\" width=\"" << kWidth << "\" height=\"" << height << "\" viewBox=\"0 0 "
    << kWidth << " " << height << "\" role=\"img\" aria-label=\"score " << unit
    << " per solution\">\n";
  for (const BoardEntry& e : g.entries) {
    const SubmitRecord& r = e.record;
    const int y = kPad + kRow * (e.rank - 1);
    const double w = std::max(2.0, x_of(*r.score) - kLabel);
    const std::string name = html_escape(shorten(solution_name(r), 24));
    h << "<text class=\"label\" x=\"" << kLabel - 10 << "\" y=\"" << y + kBar / 2 + 5
      << "\" text-anchor=\"end\">" << e.rank << ". " << name << "</text>"
      << "<rect class=\"bar" << (e.rank == 1 ? " first" : "") << "\" data-solution=\""
      << html_escape(r.solution_stem) << "\" x=\"" << kLabel << "\" y=\"" << y << "\" width=\""
      << fixed(w, 1) << "\" height=\"" << kBar << "\" rx=\"3\"><title>"
      << html_escape(r.solution_stem) << ": " << fixed(*r.score, 1) << " " << unit
      << "</title></rect>"
      << "<text class=\"value\" x=\"" << fixed(kLabel + span + 12, 1) << "\" y=\""
      << y + kBar / 2 + 4 << "\">" << bar_text(g, e) << "</text>\n";
  }
  const int bottom = kPad + kRow * static_cast<int>(g.entries.size());
  int label_y = bottom + 12;
  const std::pair<const char*, double> marks[] = {{"limit", limit}, {"yardstick", yard}};
  for (const auto& [kind, v] : marks) {
    if (!(v > 0)) continue;
    const bool is_limit = std::string(kind) == "limit";
    h << "<line class=\"" << kind << "\" data-value=\"" << fixed(v, 1) << "\" x1=\""
      << fixed(x_of(v), 1) << "\" y1=\"" << kPad - 4 << "\" x2=\"" << fixed(x_of(v), 1)
      << "\" y2=\"" << bottom << "\"/><text class=\"" << kind << "-label\" x=\""
      << fixed(x_of(v), 1) << "\" y=\"" << label_y << "\" text-anchor=\"end\">"
      << (is_limit ? html_escape(g.limit_name) + " limit " : std::string("yardstick "))
      << fixed(v, 1) << " " << unit << "</text>\n";
    label_y += 16;
  }
  h << "</svg>\n";
}

// A case name that may wrap after each '_' (long names would widen the table past the page).
std::string breakable(const std::string& name) {
  std::string out;
  for (char ch : html_escape(name)) out += ch == '_' ? std::string("_<wbr>") : std::string(1, ch);
  return out;
}

// A group's table: one row per entry, a column per benchmark case.
void html_table(std::ostringstream& h, const BoardGroup& g) {
  const std::string unit = html_escape(g.unit);
  const bool authors = has_authors(g), notes = has_notes(g);
  h << "<div class=\"scroll\"><table>\n<thead><tr><th class=\"num\">rank</th>"
    << "<th>solution</th>" << (authors ? "<th>author</th>" : "") << "<th class=\"num\">score "
    << unit << "</th>";
  for (const std::string& c : g.cases)
    h << "<th class=\"num\">" << breakable(c) << " " << unit << "</th>";
  h << "<th class=\"num\">% of SoL</th><th class=\"num\" title=\"" << html_escape(group_footnote(g))
    << "\">vs yardstick</th><th>date</th><th>sha256</th>" << (notes ? "<th>notes</th>" : "")
    << "</tr></thead>\n<tbody>\n";
  for (const BoardEntry& e : g.entries) {
    const SubmitRecord& r = e.record;
    h << "<tr class=\"entry\" data-rank=\"" << e.rank << "\" data-solution=\""
      << html_escape(r.solution_stem) << "\"><td class=\"num\">" << e.rank << "</td><td>"
      << html_escape(solution_name(r)) << "</td>"
      << (authors ? "<td>" + html_escape(r.author) + "</td>" : "") << "<td class=\"num\">"
      << fixed(*r.score, 1) << "</td>";
    for (const std::string& c : g.cases)
      h << "<td class=\"num\">" << case_cell(r, c, "<br><span class=\"sub\">", "</span>")
        << "</td>";
    h << "<td class=\"num\">" << sol_cell(e) << "</td><td class=\"num\">" << ratio_cell(e)
      << "</td><td title=\"" << html_escape(r.created_utc) << "\">"
      << html_escape(date_of(r.created_utc)) << "</td><td><code title=\"" << r.sha256 << "\">"
      << r.sha256.substr(0, 12) << "</code></td>"
      << (notes ? "<td>" + html_escape(notes_cell(e)) + "</td>" : "") << "</tr>\n";
  }
  h << "</tbody>\n</table></div>\n";
}

void html_group(std::ostringstream& h, const BoardGroup& g) {
  const std::string unit = html_escape(g.unit);
  h << "<section class=\"group" << (g.latest ? "" : " superseded") << "\" data-challenge=\""
    << html_escape(g.challenge) << "\" data-spec=\"" << g.spec_version << "\" data-judge=\""
    << html_escape(g.judge_series) << "\" data-device=\"" << html_escape(g.device)
    << "\" data-metric=\"" << html_escape(g.metric) << "\">\n"
    << "<h2>" << html_escape(g.challenge) << " on " << html_escape(g.device)
    << "<span class=\"tag\">spec v" << g.spec_version << "</span><span class=\"tag\">judge "
    << html_escape(g.judge_series) << "</span><span class=\"tag\">" << unit << "</span></h2>\n";
  if (!g.note.empty()) h << "<p class=\"note\">" << html_escape(g.note) << "</p>\n";
  html_chart(h, g);
  html_table(h, g);
  h << "<p class=\"footnote\">" << html_escape(group_footnote(g)) << "</p>\n</section>\n";
}

}  // namespace

std::string render_html(const Board& board) {
  std::ostringstream h;
  size_t ranked = 0;
  for (const BoardGroup& g : board.groups) ranked += g.entries.size();
  html_head(h);
  h << "<p class=\"rules\">" << html_escape(kRules) << "</p>\n"
    << "<p class=\"summary\">" << ranked << " ranked, " << board.not_ranked.size()
    << " not ranked, " << board.rejected.size() << " rejected.</p>\n";
  if (board.groups.empty()) h << "<p>No ranked records.</p>\n";
  for (const BoardGroup& g : board.groups) html_group(h, g);
  const std::pair<const char*, const std::vector<RecordNote>*> lists[] = {
      {"Not ranked", &board.not_ranked}, {"Rejected", &board.rejected}};
  for (const auto& [title, notes] : lists) {
    if (notes->empty()) continue;
    h << "<section class=\"group\"><h2>" << title << "</h2>\n<ul class=\"notes\">\n";
    for (const RecordNote& n : *notes)
      h << "<li><code>" << html_escape(n.file) << "</code>: " << html_escape(n.reason) << "</li>\n";
    h << "</ul></section>\n";
  }
  h << "</main>\n</body>\n</html>\n";
  return h.str();
}

namespace {

// Every *.json file under `results` (relative to it, sorted), skipping the folder `out_dir`
// where it lies inside: the board's own JSON is no record.
bool record_files(const fs::path& results, const std::string& out_dir, std::vector<fs::path>* files,
                  std::string* error) {
  std::error_code ec;
  const fs::path out_canonical = fs::weakly_canonical(out_dir, ec);
  fs::recursive_directory_iterator it(results, fs::directory_options::skip_permission_denied, ec);
  for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    std::error_code entry_ec;
    if (it->is_directory(entry_ec) && !out_canonical.empty() &&
        fs::weakly_canonical(it->path(), entry_ec) == out_canonical) {
      it.disable_recursion_pending();
      continue;
    }
    if (it->path().extension() == ".json" && it->is_regular_file(entry_ec))
      files->push_back(it->path().lexically_relative(results));
  }
  if (ec) {
    *error = "cannot read " + valid_utf8(results.generic_string()) + ": " + ec.message();
    return false;
  }
  std::sort(files->begin(), files->end());
  return true;
}

// Reads each file as a record checked against its challenge's spec: the accepted ones go to
// `records`, the refused ones to `rejected`; sweeps are counted in `rep`.
void read_records(const fs::path& results, const std::vector<fs::path>& files,
                  const std::string& challenges_dir, std::vector<SubmitRecord>* records,
                  std::vector<RecordNote>* rejected, LeaderboardReport* rep) {
  for (const fs::path& rel : files) {
    SubmitRecord r;
    std::string reason;
    const std::string shown = valid_utf8(rel.generic_string());
    bool ok = false;
    // parse_record() catches what the JSON library throws; this is the last net, so that one
    // file (or an allocation it asks for) can never take the whole board down.
    try {
      ok = load_record((results / rel).string(), &r, &reason);
      ok = ok && check_record_against_spec(&r, challenges_dir, &reason);
    } catch (const std::exception& e) {
      ok = false;
      reason = "cannot read the record: " + shorten(valid_utf8(e.what()), 200);
    }
    if (ok) {
      r.file = shown;
      records->push_back(std::move(r));
    } else if (reason == kSweepNotARecord) {
      ++rep->sweeps_skipped;
    } else {
      rejected->push_back({shown, valid_utf8(reason)});
    }
  }
  rep->records_read = static_cast<int>(files.size()) - rep->sweeps_skipped;
}

}  // namespace

bool build_leaderboard(const LeaderboardOptions& options, LeaderboardReport* report,
                       std::string* err) {
  LeaderboardReport local;
  LeaderboardReport& rep = report ? *report : local;
  rep = LeaderboardReport();
  std::string ignored;
  std::string& error = err ? *err : ignored;
  const fs::path results(options.results_dir);
  std::error_code ec;
  if (!fs::is_directory(results, ec)) {
    error = "results directory " + valid_utf8(results.generic_string()) + " does not exist";
    return false;
  }
  std::vector<fs::path> files;
  if (!record_files(results, options.out_dir, &files, &error)) return false;
  std::vector<SubmitRecord> records;
  std::vector<RecordNote> rejected;
  read_records(results, files, options.challenges_dir, &records, &rejected, &rep);
  Board board = rank_records(std::move(records));
  board.rejected = std::move(rejected);
  const std::string prefix = valid_utf8(results.generic_string());
  auto shown_path = [&](const std::string& file) {
    return prefix + (prefix.empty() || prefix.back() == '/' ? "" : "/") + file;
  };
  for (const BoardGroup& g : board.groups) rep.records_ranked += static_cast<int>(g.entries.size());
  for (const RecordNote& n : board.rejected)
    rep.rejected.push_back(shown_path(n.file) + ": " + n.reason);
  for (const RecordNote& n : board.not_ranked)
    rep.not_ranked.push_back(shown_path(n.file) + ": " + n.reason);

  const fs::path out(options.out_dir);
  fs::create_directories(out, ec);
  if (ec) {
    error = "cannot create " + valid_utf8(out.generic_string()) + ": " + ec.message();
    return false;
  }
  return write_file(out / "leaderboard.json", render_json(board), err) &&
         write_file(out / "leaderboard.md", render_markdown(board), err) &&
         write_file(out / "leaderboard.html", render_html(board), err);
}

}  // namespace fp4arena
