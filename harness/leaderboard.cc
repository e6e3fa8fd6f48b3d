#include "harness/leaderboard.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <tuple>
#include <utility>

#include <nlohmann/json.hpp>

namespace fp4arena {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using nlohmann::ordered_json;

constexpr const char* kSchema = "fp4arena.submit.v1";
constexpr const char* kBoardSchema = "fp4arena.leaderboard.v1";
constexpr double kTolerance = 0.01;  // relative, for every figure cross-check

const char* const kVerdicts[] = {"passed",         "wrong_answer",  "out_of_bounds_write",
                                 "input_modified", "timing_escape", "thread_escape",
                                 "crashed",        "cuda_error",    "timeout",
                                 "early_exit",     "not_run"};

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string shorten(const std::string& s, size_t max) {
  return s.size() <= max ? s : s.substr(0, max) + "...";
}

bool close_to(double actual, double expected) {
  return std::fabs(actual - expected) <= kTolerance * std::fabs(expected);
}

// Reads typed fields and remembers only the first problem, so that a caller can read a whole
// object and test ok() once. After a failure every getter returns a harmless default (an empty
// object or array where a node is asked for), which keeps the caller free of null checks.
class FieldReader {
 public:
  explicit FieldReader(std::string* reason) : reason_(reason) {}

  bool ok() const { return ok_; }
  void fail(const std::string& message) {
    if (ok_) *reason_ = message;
    ok_ = false;
  }

  const json& object(const json& parent, const std::string& path, const char* key) {
    const json* j = find(parent, path, key);
    if (j && !j->is_object()) mistyped(path, key, "an object", *j);
    return ok_ && j ? *j : empty_object_;
  }
  const json& array(const json& parent, const std::string& path, const char* key) {
    const json* j = find(parent, path, key);
    if (j && !j->is_array()) mistyped(path, key, "an array", *j);
    return ok_ && j ? *j : empty_array_;
  }
  std::string string(const json& parent, const std::string& path, const char* key) {
    const json* j = find(parent, path, key);
    if (j && !j->is_string()) mistyped(path, key, "a string", *j);
    return ok_ && j ? j->get<std::string>() : std::string();
  }
  std::int64_t integer(const json& parent, const std::string& path, const char* key) {
    const json* j = find(parent, path, key);
    if (j && !j->is_number_integer()) mistyped(path, key, "an integer", *j);
    return ok_ && j ? j->get<std::int64_t>() : 0;
  }
  double number(const json& parent, const std::string& path, const char* key) {
    const json* j = find(parent, path, key);
    if (j && !j->is_number()) mistyped(path, key, "a number", *j);
    return ok_ && j ? j->get<double>() : 0.0;
  }
  bool boolean(const json& parent, const std::string& path, const char* key) {
    const json* j = find(parent, path, key);
    if (j && !j->is_boolean()) mistyped(path, key, "a boolean", *j);
    return ok_ && j ? j->get<bool>() : false;
  }
  /// A number or null; with `optional`, the field may also be absent.
  std::optional<double> number_or_null(const json& parent, const std::string& path, const char* key,
                                       bool optional = false) {
    if (optional && (!parent.is_object() || !parent.contains(key))) return std::nullopt;
    const json* j = find(parent, path, key);
    if (j && !j->is_number() && !j->is_null()) mistyped(path, key, "a number or null", *j);
    if (!ok_ || !j || j->is_null()) return std::nullopt;
    return j->get<double>();
  }

  static std::string join(const std::string& path, const char* key) {
    return path.empty() ? key : path + "." + key;
  }

 private:
  const json* find(const json& parent, const std::string& path, const char* key) {
    if (!ok_) return nullptr;
    auto it = parent.find(key);
    if (it == parent.end()) {
      fail("missing field " + join(path, key));
      return nullptr;
    }
    return &*it;
  }
  void mistyped(const std::string& path, const char* key, const char* want, const json& got) {
    fail("field " + join(path, key) + " must be " + want + ", got " + shorten(got.dump(), 40));
  }

  std::string* reason_;
  bool ok_ = true;
  const json empty_object_ = json::object();
  const json empty_array_ = json::array();
};

bool known_verdict(const std::string& v) {
  return std::find(std::begin(kVerdicts), std::end(kVerdicts), v) != std::end(kVerdicts);
}

std::string case_failure(const char* kind, size_t i, const std::string& name,
                         const std::string& verdict, const std::string& why) {
  std::string s = std::string(kind) + "[" + std::to_string(i) + "] '" + name + "': " + verdict;
  if (!why.empty()) s += " (" + shorten(why, 100) + ")";
  return s;
}

// The checks that only make sense once the schema holds: a claimed score must be physically
// possible and must follow from the timings the record itself reports.
bool check_figures(const SubmitRecord& r, const json& root, std::string* reason) {
  if (r.passed) {
    const json& tests = root["tests"];
    for (size_t i = 0; i < tests.size(); ++i) {
      if (tests[i]["verdict"] != "passed") {
        *reason = "inconsistent: passed is true but tests[" + std::to_string(i) + "] '" +
                  tests[i]["name"].get<std::string>() + "' has verdict " +
                  tests[i]["verdict"].get<std::string>();
        return false;
      }
    }
    if (!r.score_valid) {
      *reason = "inconsistent: passed is true but score.valid is false";
      return false;
    }
  }
  if (!r.score_valid) return true;

  const double peak = r.peak_tflops;
  if (*r.score_tflops > peak) {
    *reason = "score.tflops_geomean " + fixed(*r.score_tflops, 1) +
              " TF/s exceeds the device's physical limit (device.peak_fp16_dense_tflops " +
              fixed(peak, 1) + " TF/s)";
    return false;
  }
  for (size_t i = 0; i < r.benchmarks.size(); ++i) {
    const RecordCase& c = r.benchmarks[i];
    if (c.tflops && *c.tflops > peak) {
      *reason = "benchmarks[" + std::to_string(i) + "] '" + c.name + "': tflops " +
                fixed(*c.tflops, 1) +
                " exceeds the device's physical limit (device.peak_fp16_dense_tflops " +
                fixed(peak, 1) + ")";
      return false;
    }
  }

  if (r.benchmarks.empty()) {
    *reason = "inconsistent: score.valid is true but benchmarks is empty";
    return false;
  }
  double log_sum = 0;
  for (size_t i = 0; i < r.benchmarks.size(); ++i) {
    const RecordCase& c = r.benchmarks[i];
    const std::string where = "benchmarks[" + std::to_string(i) + "] '" + c.name + "'";
    if (c.verdict != "passed" || !c.tflops || !c.median_ms) {
      *reason = "inconsistent: score.valid is true but " + where + " has verdict " + c.verdict;
      return false;
    }
    // long double: 2*M*N*K of real shapes exceeds 2^53 only far beyond any benchmark, but the
    // product must not overflow on a hostile record either.
    const long double want = 2.0L * c.m * c.n * c.k;
    if (std::fabs(static_cast<long double>(c.flops) - want) > std::max(0.5L, want * 1e-15L)) {
      *reason = "inconsistent: " + where + ": flops " + fixed(c.flops, 0) +
                " != 2*M*N*K = " + fixed(static_cast<double>(want), 0);
      return false;
    }
    if (*c.median_ms <= 0) {
      *reason = "inconsistent: " + where + ": median_ms must be positive";
      return false;
    }
    const double expect = c.flops / *c.median_ms / 1e9;
    if (*c.tflops <= 0 || !close_to(*c.tflops, expect)) {
      *reason = "inconsistent: " + where + ": tflops " + fixed(*c.tflops, 1) +
                " != flops/median_ms/1e9 = " + fixed(expect, 1) + " (beyond 1%)";
      return false;
    }
    log_sum += std::log(*c.tflops);
  }
  const double geomean = std::exp(log_sum / r.benchmarks.size());
  if (!close_to(*r.score_tflops, geomean)) {
    *reason = "inconsistent: score.tflops_geomean " + fixed(*r.score_tflops, 1) +
              " != geometric mean of benchmarks[].tflops " + fixed(geomean, 1) + " (beyond 1%)";
    return false;
  }
  return true;
}

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

std::string html_escape(const std::string& s) {
  std::string out;
  for (char ch : s) {
    switch (ch) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += static_cast<unsigned char>(ch) < 0x20 ? ' ' : ch;
    }
  }
  return out;
}

std::string group_title(const BoardGroup& g) {
  return g.challenge + " · spec v" + std::to_string(g.spec_version) + " · judge " + g.judge_series +
         " · " + g.device;
}

const RecordCase* find_case(const SubmitRecord& r, const std::string& name) {
  for (const RecordCase& c : r.benchmarks)
    if (c.name == name) return &c;
  return nullptr;
}

std::string case_cell(const SubmitRecord& r, const std::string& name) {
  const RecordCase* c = find_case(r, name);
  if (!c || !c->tflops) return "—";
  std::string s = fixed(*c->tflops, 1);
  if (c->ratio_to_cublas) s += " (" + fixed(*c->ratio_to_cublas, 2) + "×)";
  return s;
}

std::string ratio_cell(const BoardEntry& e) {
  return e.ratio_to_cublas ? fixed(*e.ratio_to_cublas, 2) + "×" : "—";
}

std::string date_of(const std::string& created_utc) {
  return created_utc.substr(0, 10);
}

constexpr const char* kRules =
    "Only records with passed and score.valid are ranked, one entry per solution source "
    "(sha256, its best record), by the geometric mean of the benchmark cases' TF/s. Each "
    "challenge spec version, judge series (major.minor) and device kind is ranked apart.";

bool write_file(const fs::path& path, const std::string& content, std::string* err) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
  out.close();
  if (!out) {
    if (err) *err = "cannot write " + path.generic_string();
    return false;
  }
  return true;
}

}  // namespace

std::string judge_series(const std::string& judge_version) {
  static const std::regex re(R"(^(\d+)\.(\d+).*)");
  std::smatch m;
  if (!std::regex_match(judge_version, m, re)) return judge_version;
  return m[1].str() + "." + m[2].str();
}

bool parse_record(const std::string& text, SubmitRecord* out, std::string* reason) {
  json root;
  try {
    root = json::parse(text);
  } catch (const json::parse_error& e) {
    // Drop nlohmann's "[json.exception.parse_error.101] " tag; keep the position and cause.
    std::string what = e.what();
    const size_t tag_end = what.find("] ");
    *reason = "invalid JSON: " + (tag_end == std::string::npos ? what : what.substr(tag_end + 2));
    return false;
  }
  if (!root.is_object()) {
    *reason = "not a submit record: the top level is " + std::string(root.type_name()) +
              ", not an object";
    return false;
  }

  SubmitRecord r;
  FieldReader f(reason);
  const std::string schema = f.string(root, "", "schema");
  if (f.ok() && schema != kSchema)
    f.fail("field schema is \"" + shorten(schema, 40) + "\", expected \"" + kSchema + "\"");

  r.judge_version = f.string(root, "", "judge_version");
  static const std::regex version_re(R"(^\d+\.\d+(\.\d+)?([-+][0-9A-Za-z.+-]*)?$)");
  if (f.ok() && !std::regex_match(r.judge_version, version_re))
    f.fail("field judge_version \"" + shorten(r.judge_version, 40) +
           "\" is not a version (MAJOR.MINOR[.PATCH])");
  r.created_utc = f.string(root, "", "created_utc");
  static const std::regex utc_re(R"(^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$)");
  if (f.ok() && !std::regex_match(r.created_utc, utc_re))
    f.fail("field created_utc \"" + shorten(r.created_utc, 40) +
           "\" is not a UTC time (YYYY-MM-DDTHH:MM:SSZ)");

  const json& challenge = f.object(root, "", "challenge");
  r.challenge = f.string(challenge, "challenge", "name");
  if (f.ok() && r.challenge.empty()) f.fail("field challenge.name is empty");
  r.spec_version = f.integer(challenge, "challenge", "spec_version");

  const json& solution = f.object(root, "", "solution");
  r.solution_path = f.string(solution, "solution", "path");
  r.sha256 = f.string(solution, "solution", "sha256");
  static const std::regex sha_re("^[0-9a-fA-F]{64}$");
  if (f.ok() && !std::regex_match(r.sha256, sha_re))
    f.fail("field solution.sha256 \"" + shorten(r.sha256, 70) + "\" is not 64 hex digits");
  std::transform(r.sha256.begin(), r.sha256.end(), r.sha256.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (f.ok() && solution.contains("author") && !solution["author"].is_null()) {
    r.author = f.string(solution, "solution", "author");
  }

  const json& device = f.object(root, "", "device");
  r.device_name = f.string(device, "device", "name");
  f.integer(device, "device", "index");
  f.string(device, "device", "compute_capability");
  f.string(device, "device", "arch");
  f.integer(device, "device", "sm_count");
  f.number(device, "device", "sm_clock_max_mhz");
  f.number(device, "device", "sm_clock_now_mhz");
  f.number(device, "device", "mem_clock_max_mhz");
  f.string(device, "device", "driver_version");
  f.string(device, "device", "cuda_driver");
  f.string(device, "device", "cuda_runtime");
  f.string(device, "device", "nvcc");
  r.peak_tflops = f.number(device, "device", "peak_fp16_dense_tflops");
  if (f.ok() && !(r.peak_tflops > 0)) f.fail("field device.peak_fp16_dense_tflops must be > 0");

  std::string first_failure;
  const json& tests = f.array(root, "", "tests");
  for (size_t i = 0; f.ok() && i < tests.size(); ++i) {
    const std::string path = "tests[" + std::to_string(i) + "]";
    const json& t = tests[i];
    if (!t.is_object()) {
      f.fail("field " + path + " must be an object, got " + shorten(t.dump(), 40));
      break;
    }
    const std::string name = f.string(t, path, "name");
    for (const char* dim : {"M", "N", "K", "seed", "mismatches", "elements"})
      f.integer(t, path, dim);
    const std::string verdict = f.string(t, path, "verdict");
    if (f.ok() && !known_verdict(verdict))
      f.fail("field " + path + ".verdict \"" + shorten(verdict, 40) + "\" is not a verdict");
    const std::string why = f.string(t, path, "reason");
    for (const char* key : {"max_abs_err", "max_rel_err", "wall_ms"})
      f.number_or_null(t, path, key);
    if (f.ok() && verdict != "passed" && first_failure.empty())
      first_failure = case_failure("tests", i, name, verdict, why);
  }

  std::string first_bench_failure;
  const json& benchmarks = f.array(root, "", "benchmarks");
  for (size_t i = 0; f.ok() && i < benchmarks.size(); ++i) {
    const std::string path = "benchmarks[" + std::to_string(i) + "]";
    const json& b = benchmarks[i];
    if (!b.is_object()) {
      f.fail("field " + path + " must be an object, got " + shorten(b.dump(), 40));
      break;
    }
    RecordCase c;
    c.name = f.string(b, path, "name");
    c.m = f.integer(b, path, "M");
    c.n = f.integer(b, path, "N");
    c.k = f.integer(b, path, "K");
    if (f.ok() && (c.m <= 0 || c.n <= 0 || c.k <= 0))
      f.fail("field " + path + ".M/N/K must be positive");
    c.flops = f.number(b, path, "flops");
    c.verdict = f.string(b, path, "verdict");
    if (f.ok() && !known_verdict(c.verdict))
      f.fail("field " + path + ".verdict \"" + shorten(c.verdict, 40) + "\" is not a verdict");
    const std::string why = f.string(b, path, "reason");
    f.integer(b, path, "samples");
    c.median_ms = f.number_or_null(b, path, "median_ms");
    for (const char* key : {"mean_ms", "std_ms", "min_ms", "rse", "pct_of_peak"})
      f.number_or_null(b, path, key);
    c.tflops = f.number_or_null(b, path, "tflops");
    f.number_or_null(b, path, "cublas_fp16_ms", true);
    f.number_or_null(b, path, "cublas_fp16_tflops", true);
    c.ratio_to_cublas = f.number_or_null(b, path, "ratio_to_cublas", true);
    if (f.ok() && c.verdict == "passed") {
      if (!c.median_ms)
        f.fail("field " + path + ".median_ms must be a number when the case passed");
      if (!c.tflops) f.fail("field " + path + ".tflops must be a number when the case passed");
    }
    if (f.ok() && c.verdict != "passed" && first_bench_failure.empty())
      first_bench_failure = case_failure("benchmarks", i, c.name, c.verdict, why);
    r.benchmarks.push_back(std::move(c));
  }

  const json& score = f.object(root, "", "score");
  r.score_tflops = f.number_or_null(score, "score", "tflops_geomean");
  r.score_valid = f.boolean(score, "score", "valid");
  r.score_reason = f.string(score, "score", "reason");
  if (f.ok() && r.score_valid && !r.score_tflops)
    f.fail("field score.tflops_geomean must be a number when score.valid is true");
  r.passed = f.boolean(root, "", "passed");
  // Not in the documented schema, but the judge writes them: they tell a full submit apart.
  if (f.ok() && root.contains("action")) r.action = f.string(root, "", "action");
  if (f.ok() && root.contains("only_cases")) r.partial = !f.array(root, "", "only_cases").empty();
  if (!f.ok()) return false;

  r.solution_stem = fs::path(r.solution_path).stem().string();
  if (!r.passed) {
    if (!first_failure.empty()) {
      r.failure = first_failure;
    } else if (!first_bench_failure.empty()) {
      r.failure = first_bench_failure;
    } else {
      r.failure = r.score_reason.empty() ? "passed is false" : "score: " + r.score_reason;
    }
  }
  if (!check_figures(r, root, reason)) return false;
  *out = std::move(r);
  return true;
}

bool load_record(const std::string& path, SubmitRecord* out, std::string* reason) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in) {
    *reason = "cannot read the file";
    return false;
  }
  if (!parse_record(text.str(), out, reason)) return false;
  out->file = path;
  return true;
}

Board rank_records(std::vector<SubmitRecord> records) {
  Board board;
  // A challenge's latest groups are those of its highest spec version and, within it, of its
  // highest judge series, over every record (a newer spec that nobody passes yet still makes
  // the older boards old). Older groups are kept apart and marked, never merged.
  std::map<std::string, std::pair<std::int64_t, std::pair<long, long>>> latest;
  for (const SubmitRecord& r : records) {
    auto mine = std::make_pair(r.spec_version, series_key(judge_series(r.judge_version)));
    auto [it, fresh] = latest.emplace(r.challenge, mine);
    if (!fresh && it->second < mine) it->second = mine;
  }

  using Key = std::tuple<std::string, std::int64_t, std::string, std::string>;
  std::map<Key, std::vector<SubmitRecord>> candidates;
  for (SubmitRecord& r : records) {
    if (!r.passed) {
      board.not_ranked.push_back({r.file, "not ranked: failed (" + r.failure + ")"});
    } else if (!r.action.empty() && r.action != "submit") {
      board.not_ranked.push_back(
          {r.file, "not ranked: a record of --action " + r.action + ", not submit"});
    } else if (r.partial) {
      board.not_ranked.push_back({r.file, "not ranked: a partial run (only_cases)"});
    } else if (!r.score_valid || !r.score_tflops) {
      board.not_ranked.push_back({r.file, "not ranked: score invalid (" + r.score_reason + ")"});
    } else {
      Key key{r.challenge, r.spec_version, judge_series(r.judge_version), r.device_name};
      candidates[key].push_back(std::move(r));
    }
  }

  for (auto& [key, list] : candidates) {
    std::sort(list.begin(), list.end(), [](const SubmitRecord& a, const SubmitRecord& b) {
      return std::make_tuple(-*a.score_tflops, a.created_utc, a.solution_stem, a.file) <
             std::make_tuple(-*b.score_tflops, b.created_utc, b.solution_stem, b.file);
    });
    BoardGroup g;
    std::tie(g.challenge, g.spec_version, g.judge_series, g.device) = key;
    // sha256 -> file and score of its entry
    std::map<std::string, std::pair<std::string, double>> best;
    for (SubmitRecord& r : list) {
      auto [it, fresh] = best.emplace(r.sha256, std::make_pair(r.file, *r.score_tflops));
      if (!fresh) {
        const auto& [kept_file, kept_score] = it->second;
        board.not_ranked.push_back({r.file, "not ranked: duplicate of " + kept_file +
                                                " (same source sha256 " + r.sha256.substr(0, 12) +
                                                "; " + fixed(*r.score_tflops, 1) + " TF/s here, " +
                                                fixed(kept_score, 1) + " TF/s there)"});
        continue;
      }
      BoardEntry e;
      e.rank = static_cast<int>(g.entries.size()) + 1;
      double log_ratio = 0;
      bool all_ratios = !r.benchmarks.empty();
      for (const RecordCase& c : r.benchmarks) {
        if (std::find(g.cases.begin(), g.cases.end(), c.name) == g.cases.end())
          g.cases.push_back(c.name);
        if (c.ratio_to_cublas && *c.ratio_to_cublas > 0) {
          log_ratio += std::log(*c.ratio_to_cublas);
        } else {
          all_ratios = false;
        }
      }
      if (all_ratios) e.ratio_to_cublas = std::exp(log_ratio / r.benchmarks.size());
      e.record = std::move(r);
      g.entries.push_back(std::move(e));
    }
    board.groups.push_back(std::move(g));
  }

  for (BoardGroup& g : board.groups) {
    const auto& [spec, series] = latest[g.challenge];
    if (g.spec_version != spec) {
      g.latest = false;
      g.note = "Older challenge spec v" + std::to_string(g.spec_version) + " (latest is v" +
               std::to_string(spec) + "): ranked apart, not comparable with the latest spec.";
    } else if (series_key(g.judge_series) != series) {
      g.latest = false;
      g.note = "Older judge " + g.judge_series + " (latest is " + std::to_string(series.first) +
               "." + std::to_string(series.second) +
               "): ranked apart, not comparable with the latest judge.";
    }
  }
  auto order = [](const BoardGroup& g) {
    const auto [major, minor] = series_key(g.judge_series);
    return std::make_tuple(g.challenge, -g.spec_version, -major, -minor, g.device);
  };
  std::sort(board.groups.begin(), board.groups.end(),
            [&](const BoardGroup& a, const BoardGroup& b) { return order(a) < order(b); });
  std::sort(board.not_ranked.begin(), board.not_ranked.end(),
            [](const RecordNote& a, const RecordNote& b) { return a.file < b.file; });
  return board;
}

std::string render_json(const Board& board) {
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
    jg["latest"] = g.latest;
    jg["note"] = g.note;
    jg["cases"] = g.cases;
    jg["entries"] = ordered_json::array();
    for (const BoardEntry& e : g.entries) {
      const SubmitRecord& r = e.record;
      ordered_json je;
      je["rank"] = e.rank;
      je["solution"] = r.solution_stem;
      je["path"] = r.solution_path;
      je["author"] = r.author;
      je["score_tflops"] = *r.score_tflops;
      je["ratio_to_cublas"] = e.ratio_to_cublas ? ordered_json(*e.ratio_to_cublas) : nullptr;
      je["cases"] = ordered_json::array();
      for (const RecordCase& c : r.benchmarks) {
        ordered_json jc;
        jc["name"] = c.name;
        jc["tflops"] = c.tflops ? ordered_json(*c.tflops) : nullptr;
        jc["ratio_to_cublas"] = c.ratio_to_cublas ? ordered_json(*c.ratio_to_cublas) : nullptr;
        je["cases"].push_back(std::move(jc));
      }
      je["created_utc"] = r.created_utc;
      je["sha256"] = r.sha256;
      je["judge_version"] = r.judge_version;
      je["peak_fp16_dense_tflops"] = r.peak_tflops;
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
  return doc.dump(2) + "\n";
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
    md << "\n## " << md_escape(group_title(g)) << "\n\n";
    if (!g.note.empty()) md << "> " << md_escape(g.note) << "\n\n";
    md << "| rank | solution | author | score TF/s |";
    for (const std::string& c : g.cases) md << " " << md_escape(c) << " TF/s |";
    md << " vs cuBLAS | date | sha256 |\n|---:|---|---|---:|";
    for (size_t i = 0; i < g.cases.size(); ++i) md << "---:|";
    md << "---:|---|---|\n";
    for (const BoardEntry& e : g.entries) {
      const SubmitRecord& r = e.record;
      md << "| " << e.rank << " | " << md_escape(r.solution_stem) << " | " << md_escape(r.author)
         << " | " << fixed(*r.score_tflops, 1) << " |";
      for (const std::string& c : g.cases) md << " " << case_cell(r, c) << " |";
      md << " " << ratio_cell(e) << " | " << md_escape(date_of(r.created_utc)) << " | `"
         << r.sha256.substr(0, 12) << "` |\n";
    }
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

std::string render_html(const Board& board) {
  constexpr int kWidth = 760, kLabel = 200, kValue = 100, kRow = 28, kBar = 20, kPad = 8;
  std::ostringstream h;
  size_t ranked = 0;
  for (const BoardGroup& g : board.groups) ranked += g.entries.size();
  h << R"(<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>fp4arena leaderboard</title>
<style>
body { margin: 0; background: #f6f7f9; color: #1d2330;
  font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }
main { max-width: 1100px; margin: 0 auto; padding: 24px 20px 48px; }
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
section.superseded svg.chart .bar { fill: #9aa3b5; }
table { border-collapse: collapse; width: 100%; font-size: 14px; }
th, td { padding: 6px 10px; border-bottom: 1px solid #eceff4; text-align: left;
  white-space: nowrap; }
th { background: #f1f3f7; font-weight: 600; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.entry:first-child td { font-weight: 600; }
code { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 13px; }
.scroll { overflow-x: auto; }
ul.notes li { margin: 4px 0; }
</style>
</head>
<body>
<main>
<h1>fp4arena leaderboard</h1>
)";
  h << "<p class=\"rules\">" << html_escape(kRules) << "</p>\n"
    << "<p class=\"summary\">" << ranked << " ranked, " << board.not_ranked.size()
    << " not ranked, " << board.rejected.size() << " rejected.</p>\n";
  if (board.groups.empty()) h << "<p>No ranked records.</p>\n";

  for (const BoardGroup& g : board.groups) {
    h << "<section class=\"group" << (g.latest ? "" : " superseded") << "\" data-challenge=\""
      << html_escape(g.challenge) << "\" data-spec=\"" << g.spec_version << "\" data-judge=\""
      << html_escape(g.judge_series) << "\" data-device=\"" << html_escape(g.device) << "\">\n"
      << "<h2>" << html_escape(g.challenge) << " on " << html_escape(g.device)
      << "<span class=\"tag\">spec v" << g.spec_version << "</span><span class=\"tag\">judge "
      << html_escape(g.judge_series) << "</span></h2>\n";
    if (!g.note.empty()) h << "<p class=\"note\">" << html_escape(g.note) << "</p>\n";

    double max_score = 0;
    for (const BoardEntry& e : g.entries) max_score = std::max(max_score, *e.record.score_tflops);
    const int height = kPad * 2 + kRow * static_cast<int>(g.entries.size());
    const double span = kWidth - kLabel - kValue;
    h << "<svg class=\"chart\" width=\"" << kWidth << "\" height=\"" << height
      << "\" viewBox=\"0 0 " << kWidth << " " << height
      << "\" role=\"img\" aria-label=\"score TF/s per solution\">\n";
    for (const BoardEntry& e : g.entries) {
      const SubmitRecord& r = e.record;
      const int y = kPad + kRow * (e.rank - 1);
      const double w = max_score > 0 ? std::max(2.0, span * *r.score_tflops / max_score) : 2.0;
      const std::string name = html_escape(shorten(r.solution_stem, 24));
      h << "<text class=\"label\" x=\"" << kLabel - 10 << "\" y=\"" << y + kBar / 2 + 5
        << "\" text-anchor=\"end\">" << e.rank << ". " << name << "</text>"
        << "<rect class=\"bar" << (e.rank == 1 ? " first" : "") << "\" data-solution=\""
        << html_escape(r.solution_stem) << "\" x=\"" << kLabel << "\" y=\"" << y << "\" width=\""
        << fixed(w, 1) << "\" height=\"" << kBar << "\" rx=\"3\"><title>"
        << html_escape(r.solution_stem) << ": " << fixed(*r.score_tflops, 1)
        << " TF/s</title></rect>"
        << "<text class=\"value\" x=\"" << fixed(kLabel + w + 6, 1) << "\" y=\"" << y + kBar / 2 + 4
        << "\">" << fixed(*r.score_tflops, 1) << " TF/s</text>\n";
    }
    h << "</svg>\n<div class=\"scroll\"><table>\n<thead><tr><th class=\"num\">rank</th>"
      << "<th>solution</th><th>author</th><th class=\"num\">score TF/s</th>";
    for (const std::string& c : g.cases)
      h << "<th class=\"num\">" << html_escape(c) << " TF/s</th>";
    h << "<th class=\"num\">vs cuBLAS</th><th>date</th><th>sha256</th></tr></thead>\n<tbody>\n";
    for (const BoardEntry& e : g.entries) {
      const SubmitRecord& r = e.record;
      h << "<tr class=\"entry\" data-rank=\"" << e.rank << "\" data-solution=\""
        << html_escape(r.solution_stem) << "\"><td class=\"num\">" << e.rank << "</td><td>"
        << html_escape(r.solution_stem) << "</td><td>" << html_escape(r.author)
        << "</td><td class=\"num\">" << fixed(*r.score_tflops, 1) << "</td>";
      for (const std::string& c : g.cases) h << "<td class=\"num\">" << case_cell(r, c) << "</td>";
      h << "<td class=\"num\">" << ratio_cell(e) << "</td><td title=\""
        << html_escape(r.created_utc) << "\">" << html_escape(date_of(r.created_utc))
        << "</td><td><code title=\"" << r.sha256 << "\">" << r.sha256.substr(0, 12)
        << "</code></td></tr>\n";
    }
    h << "</tbody>\n</table></div>\n</section>\n";
  }

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
    error = "results directory " + results.generic_string() + " does not exist";
    return false;
  }
  // The board may be written inside the results directory; its own JSON is no record.
  const fs::path out_canonical = fs::weakly_canonical(options.out_dir, ec);

  std::vector<fs::path> files;
  fs::recursive_directory_iterator it(results, fs::directory_options::skip_permission_denied, ec);
  for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    std::error_code entry_ec;
    if (it->is_directory(entry_ec) && !out_canonical.empty() &&
        fs::weakly_canonical(it->path(), entry_ec) == out_canonical) {
      it.disable_recursion_pending();
      continue;
    }
    if (it->path().extension() == ".json" && it->is_regular_file(entry_ec))
      files.push_back(it->path().lexically_relative(results));
  }
  if (ec) {
    error = "cannot read " + results.generic_string() + ": " + ec.message();
    return false;
  }
  std::sort(files.begin(), files.end());

  Board board;
  std::vector<SubmitRecord> records;
  std::vector<RecordNote> rejected;
  for (const fs::path& rel : files) {
    SubmitRecord r;
    std::string reason;
    if (load_record((results / rel).string(), &r, &reason)) {
      r.file = rel.generic_string();
      records.push_back(std::move(r));
    } else {
      rejected.push_back({rel.generic_string(), reason});
    }
  }
  rep.records_read = static_cast<int>(files.size());
  board = rank_records(std::move(records));
  board.rejected = std::move(rejected);
  for (const BoardGroup& g : board.groups) rep.records_ranked += static_cast<int>(g.entries.size());
  for (const RecordNote& n : board.rejected)
    rep.rejected.push_back((results / n.file).generic_string() + ": " + n.reason);
  for (const RecordNote& n : board.not_ranked)
    rep.not_ranked.push_back((results / n.file).generic_string() + ": " + n.reason);

  const fs::path out(options.out_dir);
  fs::create_directories(out, ec);
  if (ec) {
    error = "cannot create " + out.generic_string() + ": " + ec.message();
    return false;
  }
  return write_file(out / "leaderboard.json", render_json(board), err) &&
         write_file(out / "leaderboard.md", render_markdown(board), err) &&
         write_file(out / "leaderboard.html", render_html(board), err);
}

}  // namespace fp4arena
