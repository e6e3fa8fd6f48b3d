#include "harness/record.h"

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
#include <utility>

#include <nlohmann/json.hpp>

#include "harness/json_read.h"
#include "harness/python_solution.h"
#include "harness/spec.h"
#include "harness/sweep_report.h"
#include "harness/text.h"
#include "harness/verdict.h"

namespace fp4arena {

const char* const kSweepNotARecord = "a sweep (fp4arena.sweep.v1), not a submit record";

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kSchemaV1 = "fp4arena.submit.v1";
constexpr const char* kSchemaV2 = kRecordSchema;
constexpr double kTolerance = 0.01;  // relative, for every figure cross-check
// No figure of a real record comes near this (a call's FLOPs stay below 1e17); anything larger
// is a forgery or a corrupted file, and would only overflow the arithmetic below.
constexpr double kAbsurd = 1e30;
constexpr size_t kMaxName = 256;        // bytes of a name, path or author the board shows
constexpr size_t kMaxExpression = 256;  // bytes of a workload expression
constexpr int kMaxExpressionDepth = 32;

// JSON text of a value from a record, for messages: never throws, whatever the strings hold.
std::string dump_text(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

bool close_to(double actual, double expected) {
  return std::fabs(actual - expected) <= kTolerance * std::fabs(expected);
}

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

// Consumes one or more digits at s[*pos]; false when there is none.
bool digits(const std::string& s, size_t* pos, size_t exactly = 0) {
  const size_t start = *pos;
  while (*pos < s.size() && is_digit(s[*pos])) ++*pos;
  if (*pos == start) return false;
  return exactly == 0 || *pos - start == exactly;
}

bool literal(const std::string& s, size_t* pos, char c) {
  if (*pos >= s.size() || s[*pos] != c) return false;
  ++*pos;
  return true;
}

// MAJOR.MINOR[.PATCH][-pre or +build of [0-9A-Za-z.+-]], e.g. "0.2.0", "1.12", "2.3.4-rc1".
bool is_version(const std::string& s) {
  size_t p = 0;
  if (!digits(s, &p) || !literal(s, &p, '.') || !digits(s, &p)) return false;
  if (p < s.size() && s[p] == '.') {
    ++p;
    if (!digits(s, &p)) return false;
  }
  if (p == s.size()) return true;
  if (s[p] != '-' && s[p] != '+') return false;
  for (++p; p < s.size(); ++p) {
    const char c = s[p];
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '+' && c != '-')
      return false;
  }
  return true;
}

// YYYY-MM-DDTHH:MM:SS[.fraction]Z
bool is_utc(const std::string& s) {
  size_t p = 0;
  if (!(digits(s, &p, 4) && literal(s, &p, '-') && digits(s, &p, 2) && literal(s, &p, '-') &&
        digits(s, &p, 2) && literal(s, &p, 'T') && digits(s, &p, 2) && literal(s, &p, ':') &&
        digits(s, &p, 2) && literal(s, &p, ':') && digits(s, &p, 2)))
    return false;
  if (p < s.size() && s[p] == '.') {
    ++p;
    if (!digits(s, &p)) return false;
  }
  return literal(s, &p, 'Z') && p == s.size();
}

bool is_hex64(const std::string& s) {
  return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) {
           return std::isxdigit(static_cast<unsigned char>(c));
         });
}

// "9.0" -> 9, 0; digits only, at most 3 each.
bool parse_compute_capability(const std::string& s, int* major, int* minor) {
  size_t p = 0;
  if (!digits(s, &p) || p > 3 || !literal(s, &p, '.')) return false;
  const size_t dot = p - 1;
  if (!digits(s, &p) || p - dot - 1 > 3 || p != s.size()) return false;
  *major = std::stoi(s.substr(0, dot));
  *minor = std::stoi(s.substr(dot + 1));
  return true;
}

// A challenge name is used as a folder name under the challenges directory: no separators,
// no "..", nothing to escape.
bool is_plain_name(const std::string& s) {
  if (s.empty() || s.size() > 64 || s == "." || s == "..") return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
  });
}

bool is_identifier(const std::string& s) {
  if (s.empty() || s.size() > 32 || is_digit(s[0])) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

// The workload expression: checked for its alphabet and depth once, when the record is read, so
// that evaluating it later can neither recurse deeply nor meet a character it does not expect.
bool check_expression_text(const std::string& e, std::string* why) {
  if (e.empty() || e.size() > kMaxExpression) {
    *why = "must be 1 to " + std::to_string(kMaxExpression) + " bytes";
    return false;
  }
  int depth = 0;
  for (char c : e) {
    if (c == '(' && ++depth > kMaxExpressionDepth) {
      *why = "nests parentheses deeper than " + std::to_string(kMaxExpressionDepth);
      return false;
    }
    if (c == ')') --depth;
    if (!std::isalnum(static_cast<unsigned char>(c)) && !std::strchr("_+-*/() ", c)) {
      *why = "may hold only names, integers, + - * / ( ) and spaces";
      return false;
    }
  }
  return true;
}

// The workload of one call: `expression` evaluated exactly on `dims` with the spec's own
// evaluator (which refuses any intermediate value int64 cannot hold).
bool evaluate_workload(const std::string& expression,
                       const std::map<std::string, std::int64_t>& dims, std::int64_t* out,
                       std::string* why) {
  return eval_expr(expression, dims, out, why);
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
  /// An object or null (the empty object then); with `optional`, the field may also be absent.
  const json* object_or_null(const json& parent, const std::string& path, const char* key,
                             bool optional = false) {
    if (optional && !parent.contains(key)) return nullptr;
    const json* j = find(parent, path, key);
    if (j && !j->is_object() && !j->is_null()) mistyped(path, key, "an object or null", *j);
    return ok_ && j && j->is_object() ? j : nullptr;
  }
  std::string string(const json& parent, const std::string& path, const char* key,
                     size_t max_bytes = kMaxName) {
    const json* j = find(parent, path, key);
    if (j && !j->is_string()) mistyped(path, key, "a string", *j);
    if (!ok_ || !j) return std::string();
    std::string s = j->get<std::string>();
    if (s.size() > max_bytes)
      fail("field " + join(path, key) + " is longer than " + std::to_string(max_bytes) + " bytes");
    return s;
  }
  std::int64_t integer(const json& parent, const std::string& path, const char* key) {
    const json* j = find(parent, path, key);
    if (j && !j->is_number_integer()) mistyped(path, key, "an integer", *j);
    if (!ok_ || !j) return 0;
    if (j->is_number_unsigned() && j->get<std::uint64_t>() > std::uint64_t(INT64_MAX)) {
      fail("field " + join(path, key) + " is out of range");
      return 0;
    }
    return j->get<std::int64_t>();
  }
  /// An integer in [lo, hi].
  std::int64_t integer_in(const json& parent, const std::string& path, const char* key,
                          std::int64_t lo, std::int64_t hi) {
    const std::int64_t v = integer(parent, path, key);
    if (ok_ && (v < lo || v > hi))
      fail("field " + join(path, key) + " must be in [" + std::to_string(lo) + ", " +
           std::to_string(hi) + "], got " + std::to_string(v));
    return ok_ ? v : 0;
  }
  double number(const json& parent, const std::string& path, const char* key) {
    const json* j = find(parent, path, key);
    if (j && !j->is_number()) mistyped(path, key, "a number", *j);
    return ok_ && j ? finite(*j, join(path, key)) : 0.0;
  }
  bool boolean(const json& parent, const std::string& path, const char* key) {
    const json* j = find(parent, path, key);
    if (j && !j->is_boolean()) mistyped(path, key, "a boolean", *j);
    return ok_ && j ? j->get<bool>() : false;
  }
  /// A number or null; with `optional`, the field may also be absent.
  std::optional<double> number_or_null(const json& parent, const std::string& path, const char* key,
                                       bool optional = false) {
    if (optional && !parent.contains(key)) return std::nullopt;
    const json* j = find(parent, path, key);
    if (j && !j->is_number() && !j->is_null()) mistyped(path, key, "a number or null", *j);
    if (!ok_ || !j || j->is_null()) return std::nullopt;
    const double v = finite(*j, join(path, key));
    return ok_ ? std::optional<double>(v) : std::nullopt;
  }

  static std::string join(const std::string& path, const std::string& key) {
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
  // 1e999 parses to infinity: a number a record can hold but no figure can be.
  double finite(const json& j, const std::string& field) {
    const double v = j.get<double>();
    if (!std::isfinite(v)) {
      fail("field " + field + " is not a finite number");
    } else if (std::fabs(v) > kAbsurd) {
      fail("field " + field + " is out of range (" + dump_text(j) + ")");
    }
    return ok_ ? v : 0.0;
  }
  void mistyped(const std::string& path, const char* key, const char* want, const json& got) {
    fail("field " + join(path, key) + " must be " + want + ", got " + shorten(dump_text(got), 40));
  }

  std::string* reason_;
  bool ok_ = true;
  const json empty_object_ = json::object();
  const json empty_array_ = json::array();
};

// A verdict name of verdict.h; a v1 record (judge 0.1) predates timing_mismatch.
bool known_verdict(const std::string& v, bool v1) {
  Verdict parsed;
  return parse_verdict(v, &parsed) && !(v1 && parsed == Verdict::kTimingMismatch);
}

std::string case_failure(const char* kind, size_t i, const std::string& name,
                         const std::string& verdict, const std::string& why) {
  std::string s = std::string(kind) + "[" + std::to_string(i) + "] '" + name + "': " + verdict;
  if (!why.empty()) s += " (" + shorten(why, 100) + ")";
  return s;
}

// The record's own field names, for messages: a reason names the field as the file spells it.
struct FieldNames {
  const char* workload;
  const char* value;
  const char* pct;
  const char* y_ms;
  const char* y_value;
  const char* y_ratio;
  const char* score;
  const char* limit;
};
constexpr FieldNames kNamesV2 = {
    "workload",        "value",           "pct_of_limit",  "yardstick.median_ms",
    "yardstick.value", "yardstick.ratio", "score.geomean", "limit.value"};
constexpr FieldNames kNamesV1 = {"flops",
                                 "tflops",
                                 "pct_of_peak",
                                 "cublas_fp16_ms",
                                 "cublas_fp16_tflops",
                                 "ratio_to_cublas",
                                 "score.tflops_geomean",
                                 "device.peak_fp16_dense_tflops"};

// What the parsers collect beyond SubmitRecord, for the checks that follow.
struct Parsed {
  SubmitRecord r;
  const FieldNames* names = &kNamesV2;
  std::optional<double> declared_limit;                          // the record's own limit figure
  std::map<std::string, std::optional<double>> declared_limits;  // v2 device.limits
  std::vector<std::pair<std::string, std::string>> tests;        // name, verdict
  std::string first_failure;  // of the tests, else of the benchmarks
};

// Fields common to both schemas at the top of a record.
void read_header(FieldReader& f, const json& root, SubmitRecord& r) {
  // Records of judge 0.2 and earlier describe their timing method in words; a record keeps
  // the name of one of the judge's window methods only (the board ranks kTimingMethod's).
  auto method = root.is_object() ? root.find("timing_method") : root.end();
  if (method != root.end() && method->is_string()) {
    for (WindowMethod m : {WindowMethod::kV1, WindowMethod::kV2}) {
      if (method->get<std::string>() == window_method_name(m))
        r.timing_method = window_method_name(m);
    }
  }
  r.judge_version = f.string(root, "", "judge_version");
  if (f.ok() && !is_version(r.judge_version))
    f.fail("field judge_version \"" + shorten(r.judge_version, 40) +
           "\" is not a version (MAJOR.MINOR[.PATCH])");
  r.created_utc = f.string(root, "", "created_utc");
  if (f.ok() && !is_utc(r.created_utc))
    f.fail("field created_utc \"" + shorten(r.created_utc, 40) +
           "\" is not a UTC time (YYYY-MM-DDTHH:MM:SSZ)");

  const json& challenge = f.object(root, "", "challenge");
  r.challenge = f.string(challenge, "challenge", "name");
  if (f.ok() && !is_plain_name(r.challenge))
    f.fail("field challenge.name \"" + shorten(r.challenge, 40) +
           "\" is not a challenge name (1 to 64 letters, digits, '_', '-', '.')");
  r.spec_version = f.integer_in(challenge, "challenge", "spec_version", 0, 1 << 20);

  const json& solution = f.object(root, "", "solution");
  r.solution_path = f.string(solution, "solution", "path", 1024);
  r.sha256 = f.string(solution, "solution", "sha256");
  if (f.ok() && !is_hex64(r.sha256))
    f.fail("field solution.sha256 \"" + shorten(r.sha256, 70) + "\" is not 64 hex digits");
  std::transform(r.sha256.begin(), r.sha256.end(), r.sha256.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (f.ok() && solution.contains("author") && !solution["author"].is_null())
    r.author = f.string(solution, "solution", "author");
  Language language = Language::kCuda;
  if (f.ok() && solution.contains("language")) {
    r.language = f.string(solution, "solution", "language");
    if (f.ok() && !parse_language(r.language, &language))
      f.fail("field solution.language \"" + shorten(r.language, 40) +
             "\" is not one of cuda, triton, pytorch");
  }
}

// The device fields the limit table needs, and the others' types.
void read_device(FieldReader& f, const json& device, bool v2, SubmitRecord& r) {
  r.device_name = f.string(device, "device", "name");
  f.integer(device, "device", "index");
  const std::string cc = f.string(device, "device", "compute_capability");
  if (f.ok() && !parse_compute_capability(cc, &r.device.cc_major, &r.device.cc_minor))
    f.fail("field device.compute_capability \"" + shorten(cc, 20) + "\" is not MAJOR.MINOR");
  f.string(device, "device", "arch");
  // Wider than any device, narrower than int: plausible_device() judges the rest.
  r.device.sm_count = static_cast<int>(f.integer_in(device, "device", "sm_count", 0, 1 << 20));
  r.device.sm_clock_max_mhz = f.number(device, "device", "sm_clock_max_mhz");
  f.number(device, "device", "sm_clock_now_mhz");
  r.device.mem_clock_max_mhz = f.number(device, "device", "mem_clock_max_mhz");
  if (v2) {
    r.device.mem_bus_width_bits =
        static_cast<int>(f.integer_in(device, "device", "mem_bus_width_bits", 0, 1 << 20));
    f.integer(device, "device", "l2_bytes");
    f.integer(device, "device", "memory_bytes");
  }
  for (const char* key : {"driver_version", "cuda_driver", "cuda_runtime", "nvcc"})
    f.string(device, "device", key);
}

void read_dims(FieldReader& f, const json& parent, const std::string& path,
               std::map<std::string, std::int64_t>* dims) {
  const json& j = f.object(parent, path, "dims");
  for (auto it = j.begin(); f.ok() && it != j.end(); ++it) {
    if (!is_identifier(it.key())) {
      f.fail("field " + path + ".dims key \"" + shorten(it.key(), 40) + "\" is not a name");
      return;
    }
    (*dims)[it.key()] = f.integer_in(j, path + ".dims", it.key().c_str(), 0, INT32_MAX);
  }
}

void read_metric_v2(FieldReader& f, const json& root, Parsed* p) {
  SubmitRecord& r = p->r;
  const json& metric = f.object(root, "", "metric");
  r.metric.name = f.string(metric, "metric", "name");
  r.metric.unit = f.string(metric, "metric", "unit");
  r.metric.workload = f.string(metric, "metric", "workload");
  r.metric.expression = f.string(metric, "metric", "expression", kMaxExpression + 1);
  const bool triple =
      (r.metric.name == "tflops" && r.metric.unit == "TF/s" && r.metric.workload == "flops") ||
      (r.metric.name == "gbps" && r.metric.unit == "GB/s" && r.metric.workload == "bytes");
  if (f.ok() && !triple)
    f.fail("field metric: name/unit/workload \"" + shorten(r.metric.name, 20) + "\"/\"" +
           shorten(r.metric.unit, 20) + "\"/\"" + shorten(r.metric.workload, 20) +
           "\" is neither tflops/TF/s/flops nor gbps/GB/s/bytes");
  std::string why;
  if (f.ok() && !check_expression_text(r.metric.expression, &why))
    f.fail("field metric.expression \"" + shorten(r.metric.expression, 40) + "\" " + why);

  const json& limit = f.object(root, "", "limit");
  r.limit_name = f.string(limit, "limit", "name");
  p->declared_limit = f.number_or_null(limit, "limit", "value");
  const std::string unit = f.string(limit, "limit", "unit");
  if (f.ok() && unit != r.metric.unit)
    f.fail("field limit.unit \"" + shorten(unit, 20) + "\" is not the metric's unit " +
           r.metric.unit);
}

// The v2 solution's headers and flags (types only: the board shows neither).
void read_solution_v2(FieldReader& f, const json& root) {
  const json& solution = f.object(root, "", "solution");
  if (f.ok() && solution.contains("headers")) {
    const json& headers = f.array(solution, "solution", "headers");
    for (size_t i = 0; f.ok() && i < headers.size(); ++i) {
      const std::string path = "solution.headers[" + std::to_string(i) + "]";
      if (!headers[i].is_object()) {
        f.fail("field " + path + " must be an object");
        break;
      }
      f.string(headers[i], path, "path", 1024);
      const std::string sha = f.string(headers[i], path, "sha256");
      if (f.ok() && !is_hex64(sha))
        f.fail("field " + path + ".sha256 \"" + shorten(sha, 70) + "\" is not 64 hex digits");
    }
  }
  if (f.ok() && solution.contains("nvcc_flags")) {
    const json& flags = f.array(solution, "solution", "nvcc_flags");
    for (size_t i = 0; f.ok() && i < flags.size(); ++i)
      if (!flags[i].is_string())
        f.fail("field solution.nvcc_flags[" + std::to_string(i) + "] must be a string");
  }
}

void read_device_v2(FieldReader& f, const json& root, Parsed* p) {
  const json& device = f.object(root, "", "device");
  read_device(f, device, true, p->r);
  const json& limits = f.object(device, "device", "limits");
  for (auto it = limits.begin(); f.ok() && it != limits.end(); ++it) {
    LimitKind kind;
    if (!parse_limit(it.key(), &kind)) {
      f.fail("field device.limits key \"" + shorten(it.key(), 40) + "\" is not a limit");
      break;
    }
    p->declared_limits[it.key()] = f.number_or_null(limits, "device.limits", it.key().c_str());
  }
}

// What the board keeps of a test case.
struct TestRow {
  std::string name, verdict, why;
};

TestRow read_test_v2(FieldReader& f, const json& t, const std::string& path) {
  TestRow row;
  row.name = f.string(t, path, "name");
  f.integer_in(t, path, "seed", 0, INT64_MAX);
  std::map<std::string, std::int64_t> dims;
  read_dims(f, t, path, &dims);
  row.verdict = f.string(t, path, "verdict");
  if (f.ok() && !known_verdict(row.verdict, false))
    f.fail("field " + path + ".verdict \"" + shorten(row.verdict, 40) + "\" is not a verdict");
  row.why = f.string(t, path, "reason", kMaxRecordBytes);
  const json& outputs = f.array(t, path, "outputs");
  for (size_t k = 0; f.ok() && k < outputs.size(); ++k) {
    const std::string opath = path + ".outputs[" + std::to_string(k) + "]";
    if (!outputs[k].is_object()) {
      f.fail("field " + opath + " must be an object");
      break;
    }
    f.string(outputs[k], opath, "name");
    f.string(outputs[k], opath, "compare");
    f.integer_in(outputs[k], opath, "elements", 0, INT64_MAX);
    f.integer_in(outputs[k], opath, "mismatches", 0, INT64_MAX);
  }
  f.number_or_null(t, path, "wall_ms");
  return row;
}

// One v2 benchmark case; *why gets its reason.
RecordCase read_benchmark_v2(FieldReader& f, const json& b, const std::string& path,
                             std::string* why) {
  RecordCase c;
  c.name = f.string(b, path, "name");
  f.integer_in(b, path, "seed", 0, INT64_MAX);
  read_dims(f, b, path, &c.dims);
  c.workload = f.number(b, path, "workload");
  c.verdict = f.string(b, path, "verdict");
  if (f.ok() && !known_verdict(c.verdict, false))
    f.fail("field " + path + ".verdict \"" + shorten(c.verdict, 40) + "\" is not a verdict");
  *why = f.string(b, path, "reason", kMaxRecordBytes);
  f.integer_in(b, path, "calls", 0, INT64_MAX);
  f.integer_in(b, path, "samples", 0, INT64_MAX);
  c.median_ms = f.number_or_null(b, path, "median_ms");
  f.number_or_null(b, path, "mean_ms");
  f.number_or_null(b, path, "std_ms");
  c.min_ms = f.number_or_null(b, path, "min_ms");
  c.max_ms = f.number_or_null(b, path, "max_ms");
  f.number_or_null(b, path, "rse");
  c.value = f.number_or_null(b, path, "value");
  c.pct_of_limit = f.number_or_null(b, path, "pct_of_limit");
  c.speed_of_light_ms = f.number_or_null(b, path, "speed_of_light_ms", true);
  c.pct_of_speed_of_light = f.number_or_null(b, path, "pct_of_speed_of_light", true);
  if (const json* y = f.object_or_null(b, path, "yardstick")) {
    const std::string ypath = path + ".yardstick";
    YardstickFigure ys;
    ys.name = f.string(*y, ypath, "name");
    ys.median_ms = f.number(*y, ypath, "median_ms");
    ys.value = f.number(*y, ypath, "value");
    ys.ratio = f.number(*y, ypath, "ratio");
    c.yardstick = ys;
  }
  if (f.ok() && c.verdict == "passed") {
    for (const auto& [field, v] :
         {std::make_pair("median_ms", c.median_ms), std::make_pair("min_ms", c.min_ms),
          std::make_pair("max_ms", c.max_ms), std::make_pair("value", c.value)})
      if (!v) f.fail("field " + path + "." + field + " must be a number when the case passed");
  }
  return c;
}

using TestReader = TestRow (*)(FieldReader&, const json&, const std::string&);
using BenchmarkReader = RecordCase (*)(FieldReader&, const json&, const std::string&, std::string*);

// The tests and benchmarks arrays, each element read by the schema's reader; the record's
// first failure is its first failed test, else its first failed benchmark.
void read_cases(FieldReader& f, const json& root, Parsed* p, TestReader read_test,
                BenchmarkReader read_benchmark) {
  std::string first_test_failure, first_bench_failure;
  for (const char* part : {"tests", "benchmarks"}) {
    const bool tests = std::strcmp(part, "tests") == 0;
    const json& list = f.array(root, "", part);
    for (size_t i = 0; f.ok() && i < list.size(); ++i) {
      const std::string path = std::string(part) + "[" + std::to_string(i) + "]";
      if (!list[i].is_object()) {
        f.fail("field " + path + " must be an object, got " + shorten(dump_text(list[i]), 40));
        break;
      }
      std::string& first = tests ? first_test_failure : first_bench_failure;
      TestRow row;
      if (tests) {
        row = read_test(f, list[i], path);
        p->tests.emplace_back(row.name, row.verdict);
      } else {
        RecordCase c = read_benchmark(f, list[i], path, &row.why);
        row.name = c.name;
        row.verdict = c.verdict;
        p->r.benchmarks.push_back(std::move(c));
      }
      if (f.ok() && row.verdict != "passed" && first.empty())
        first = case_failure(part, i, row.name, row.verdict, row.why);
    }
  }
  p->first_failure = first_test_failure.empty() ? first_bench_failure : first_test_failure;
}

// The score (its geometric mean under `geomean_key`: v2 "geomean", v1 "tflops_geomean") and
// `passed`.
void read_score(FieldReader& f, const json& root, const char* geomean_key, SubmitRecord* r) {
  const json& score = f.object(root, "", "score");
  r->score = f.number_or_null(score, "score", geomean_key);
  r->score_valid = f.boolean(score, "score", "valid");
  r->score_reason = f.string(score, "score", "reason", kMaxRecordBytes);
  if (f.ok() && r->score_valid && !r->score) {
    f.fail(std::string("field score.") + geomean_key +
           " must be a number when score.valid is true");
  }
  r->passed = f.boolean(root, "", "passed");
}

bool parse_v2(FieldReader& f, const json& root, Parsed* p) {
  SubmitRecord& r = p->r;
  r.schema = kSchemaV2;
  read_header(f, root, r);
  r.action = f.string(root, "", "action");
  read_metric_v2(f, root, p);
  read_solution_v2(f, root);
  read_device_v2(f, root, p);
  read_cases(f, root, p, read_test_v2, read_benchmark_v2);

  read_score(f, root, "geomean", &r);
  if (f.ok() && root.contains("only_cases")) r.partial = !f.array(root, "", "only_cases").empty();
  return f.ok();
}

TestRow read_test_v1(FieldReader& f, const json& t, const std::string& path) {
  TestRow row;
  row.name = f.string(t, path, "name");
  for (const char* dim : {"M", "N", "K", "seed", "mismatches", "elements"}) f.integer(t, path, dim);
  row.verdict = f.string(t, path, "verdict");
  if (f.ok() && !known_verdict(row.verdict, true))
    f.fail("field " + path + ".verdict \"" + shorten(row.verdict, 40) + "\" is not a verdict");
  row.why = f.string(t, path, "reason", kMaxRecordBytes);
  for (const char* key : {"max_abs_err", "max_rel_err", "wall_ms"}) f.number_or_null(t, path, key);
  return row;
}

// v1 benchmarks: M, N, K, the FLOPs, and the cuBLAS FP16 figures as the yardstick.
RecordCase read_benchmark_v1(FieldReader& f, const json& b, const std::string& path,
                             std::string* why) {
  RecordCase c;
  c.name = f.string(b, path, "name");
  for (const char* dim : {"M", "N", "K"}) c.dims[dim] = f.integer_in(b, path, dim, 1, INT32_MAX);
  c.workload = f.number(b, path, "flops");
  c.verdict = f.string(b, path, "verdict");
  if (f.ok() && !known_verdict(c.verdict, true))
    f.fail("field " + path + ".verdict \"" + shorten(c.verdict, 40) + "\" is not a verdict");
  *why = f.string(b, path, "reason", kMaxRecordBytes);
  f.integer(b, path, "samples");
  c.median_ms = f.number_or_null(b, path, "median_ms");
  for (const char* key : {"mean_ms", "std_ms", "rse"}) f.number_or_null(b, path, key);
  c.min_ms = f.number_or_null(b, path, "min_ms");
  c.max_ms = f.number_or_null(b, path, "max_ms", true);  // written from judge 0.1.0 on, not always
  c.pct_of_limit = f.number_or_null(b, path, "pct_of_peak");
  c.value = f.number_or_null(b, path, "tflops");
  const auto y_ms = f.number_or_null(b, path, "cublas_fp16_ms", true);
  const auto y_tflops = f.number_or_null(b, path, "cublas_fp16_tflops", true);
  const auto y_ratio = f.number_or_null(b, path, "ratio_to_cublas", true);
  if (y_ms || y_tflops || y_ratio) {
    if (f.ok() && !(y_ms && y_tflops && y_ratio))
      f.fail("field " + path +
             ": cublas_fp16_ms, cublas_fp16_tflops and ratio_to_cublas go together");
    c.yardstick = YardstickFigure{"cuBLAS FP16 GEMM", y_ms.value_or(0), y_tflops.value_or(0),
                                  y_ratio.value_or(0)};
  }
  if (f.ok() && c.verdict == "passed") {
    if (!c.median_ms) f.fail("field " + path + ".median_ms must be a number when the case passed");
    if (!c.min_ms) f.fail("field " + path + ".min_ms must be a number when the case passed");
    if (!c.value) f.fail("field " + path + ".tflops must be a number when the case passed");
  }
  return c;
}

bool parse_v1(FieldReader& f, const json& root, Parsed* p) {
  SubmitRecord& r = p->r;
  r.schema = kSchemaV1;
  r.migrated_from_v1 = true;
  p->names = &kNamesV1;
  read_header(f, root, r);
  r.metric = {"tflops", "TF/s", "flops", "2*M*N*K"};
  r.limit_name = "fp16_dense";

  const json& device = f.object(root, "", "device");
  read_device(f, device, false, r);
  p->declared_limit = f.number(device, "device", "peak_fp16_dense_tflops");
  read_cases(f, root, p, read_test_v1, read_benchmark_v1);

  read_score(f, root, "tflops_geomean", &r);
  // Not in the documented v1 schema, but the judge wrote them: they tell a full submit apart.
  if (f.ok() && root.contains("action")) r.action = f.string(root, "", "action");
  if (f.ok() && root.contains("only_cases")) r.partial = !f.array(root, "", "only_cases").empty();
  return f.ok();
}

double metric_factor(const Metric& m) {
  return m.name == "gbps" ? 1e6 : 1e9;  // workload / ms -> GB/s or TF/s
}

// The device must be one the judge's table knows, and every limit the record states must be the
// one the table gives for it: the board never takes a limit from a record.
bool check_device_and_limit(Parsed* p, std::string* reason) {
  SubmitRecord& r = p->r;
  std::string why;
  if (!plausible_device(r.device, &why)) {
    // The table names the field it found implausible, except for an unknown architecture.
    const std::string unknown = "compute capability ";
    *reason =
        "implausible device: device." + (why.compare(0, unknown.size(), unknown) == 0
                                             ? "compute_capability " + why.substr(unknown.size())
                                             : why);
    return false;
  }
  LimitKind kind;
  if (!parse_limit(r.limit_name, &kind)) {
    *reason = "field limit.name \"" + shorten(r.limit_name, 40) +
              "\" is not a limit (fp16_dense, "
              "fp8_dense, fp4_dense, dram)";
    return false;
  }
  if ((kind == LimitKind::kDram) != (r.metric.name == "gbps")) {
    *reason = "field limit.name " + r.limit_name + " does not bound the metric " + r.metric.name;
    return false;
  }
  if (kind == LimitKind::kDram &&
      (r.device.mem_bus_width_bits <= 0 || !(r.device.mem_clock_max_mhz > 0))) {
    *reason =
        "implausible device: device.mem_bus_width_bits and device.mem_clock_max_mhz must be "
        "positive for a dram limit";
    return false;
  }
  r.limit_value = limit_value(kind, r.device);

  auto check = [&](const std::string& field, LimitKind k, const std::optional<double>& declared) {
    const double want = limit_value(k, r.device);
    const bool same =
        want > 0 ? declared && close_to(*declared, want) : !declared || *declared == 0;
    if (!same) {
      *reason = "field " + field + " " + (declared ? fixed(*declared, 1) : std::string("null")) +
                " differs from the judge's own limit for this device (" + limit_name(k) + " " +
                fixed(want, 1) + ") by more than 1%";
    }
    return same;
  };
  if (!check(p->names->limit, kind, p->declared_limit)) return false;
  for (const auto& [name, declared] : p->declared_limits) {
    LimitKind k;
    parse_limit(name, &k);  // the parser admitted only limit names
    if (k == LimitKind::kDram && r.device.mem_bus_width_bits <= 0) continue;
    if (!check("device.limits." + name, k, declared)) return false;
  }
  return true;
}

// Every figure the board shows is recomputed from the record's timings and dims; a record whose
// own figures disagree with each other beyond rounding (1%) is a forgery or a judge bug.
// No benchmark name twice.
bool check_unique_names(const SubmitRecord& r, std::string* reason) {
  std::set<std::string> names;
  for (size_t i = 0; i < r.benchmarks.size(); ++i) {
    if (!names.insert(r.benchmarks[i].name).second) {
      *reason = "field benchmarks[" + std::to_string(i) + "].name '" +
                shorten(r.benchmarks[i].name, 40) + "' repeats an earlier benchmark";
      return false;
    }
  }
  return true;
}

// `passed` only with every case passed and a valid score.
bool check_passed(const Parsed& p, std::string* reason) {
  const SubmitRecord& r = p.r;
  if (!r.passed) return true;
  for (size_t i = 0; i < p.tests.size(); ++i) {
    if (p.tests[i].second != "passed") {
      *reason = "inconsistent: passed is true but tests[" + std::to_string(i) + "] '" +
                p.tests[i].first + "' has verdict " + p.tests[i].second;
      return false;
    }
  }
  for (size_t i = 0; i < r.benchmarks.size(); ++i) {
    if (r.benchmarks[i].verdict != "passed") {
      *reason = "inconsistent: passed is true but benchmarks[" + std::to_string(i) + "] '" +
                r.benchmarks[i].name + "' has verdict " + r.benchmarks[i].verdict;
      return false;
    }
  }
  if (!r.score_valid) {
    *reason = "inconsistent: passed is true but score.valid is false";
    return false;
  }
  return true;
}

// A valid score: every case passed with a value, and neither the score nor any value over
// the recomputed limit.
bool check_valid_score(const Parsed& p, std::string* reason) {
  const SubmitRecord& r = p.r;
  const FieldNames& n = *p.names;
  if (!r.score_valid) return true;
  if (r.benchmarks.empty()) {
    *reason = "inconsistent: score.valid is true but benchmarks is empty";
    return false;
  }
  const std::string& unit = r.metric.unit;
  const std::string limit =
      r.limit_name + " " + fixed(r.limit_value, 1) + " " + unit + ", from the judge's table";
  if (r.limit_value > 0 && *r.score > r.limit_value) {
    *reason = std::string(n.score) + " " + fixed(*r.score, 1) + " " + unit +
              " exceeds the device's physical limit (" + limit + ")";
    return false;
  }
  for (size_t i = 0; i < r.benchmarks.size(); ++i) {
    const RecordCase& c = r.benchmarks[i];
    const std::string where = "benchmarks[" + std::to_string(i) + "] '" + c.name + "'";
    if (c.verdict != "passed" || !c.value) {
      *reason = "inconsistent: score.valid is true but " + where + " has verdict " + c.verdict;
      return false;
    }
    if (r.limit_value > 0 && *c.value > r.limit_value) {
      *reason = where + ": " + n.value + " " + fixed(*c.value, 1) + " " + unit +
                " exceeds the device's physical limit (" + limit + ")";
      return false;
    }
  }
  return true;
}

// A case's workload is its metric expression on its dims, exactly: the judge writes the
// integer it computed (as a double where it is one; both sides round the same way beyond 2^53).
bool check_workload(const Parsed& p, const RecordCase& c, const std::string& where,
                    std::string* reason) {
  std::int64_t want = 0;
  std::string why;
  if (!evaluate_workload(p.r.metric.expression, c.dims, &want, &why)) {
    *reason = where + ": metric.expression cannot be evaluated on its dims: " + shorten(why, 100);
    return false;
  }
  if (c.workload != static_cast<double>(want)) {
    *reason = where + ": " + p.names->workload + " " + fixed(c.workload, 0) +
              " != " + p.r.metric.expression + " = " + std::to_string(want);
    return false;
  }
  return true;
}

// A rate (`value_name` = `value`) follows from the workload and a time: workload / ms /
// factor (1e9 for TF/s, 1e6 for GB/s), within 1%.
bool check_rate(const std::string& where, const std::string& value_name, double value,
                const std::string& workload_name, double workload, const std::string& ms_name,
                double ms, double factor, std::string* reason) {
  const double expect = workload / ms / factor;
  if (value > 0 && close_to(value, expect)) return true;
  *reason = where + ": " + value_name + " " + fixed(value, 1) + " != " + workload_name + "/" +
            ms_name + "/" + (factor == 1e9 ? "1e9" : "1e6") + " = " + fixed(expect, 1) +
            " (beyond 1%)";
  return false;
}

// A case's share of its speed of light follows from its median: stated only with both.
bool check_speed_of_light(const RecordCase& c, const std::string& where, std::string* reason) {
  if (!c.pct_of_speed_of_light) return true;
  if (!c.speed_of_light_ms || !(*c.speed_of_light_ms > 0)) {
    *reason = where + ": pct_of_speed_of_light is given without a positive speed_of_light_ms";
    return false;
  }
  const double pct = *c.speed_of_light_ms / *c.median_ms * 100;
  if (!close_to(*c.pct_of_speed_of_light, pct)) {
    *reason = where + ": pct_of_speed_of_light " + fixed(*c.pct_of_speed_of_light, 1) +
              " != speed_of_light_ms/median_ms*100 = " + fixed(pct, 1) + " (beyond 1%)";
    return false;
  }
  return true;
}

// A case's times are ordered, its value follows from its workload and median, and its share
// of the limit from its value and the record's own limit.
bool check_value(const Parsed& p, const RecordCase& c, const std::string& where,
                 std::string* reason) {
  const FieldNames& n = *p.names;
  const double factor = metric_factor(p.r.metric);
  if (!c.median_ms || !(*c.median_ms > 0)) {
    *reason = where + ": median_ms must be positive where " + n.value + " is given";
    return false;
  }
  if (!c.min_ms || *c.min_ms > *c.median_ms || (c.max_ms && *c.median_ms > *c.max_ms)) {
    *reason = where + ": median_ms " + fixed(*c.median_ms, 4) + " is outside [min_ms, max_ms] = [" +
              (c.min_ms ? fixed(*c.min_ms, 4) : "null") + ", " +
              (c.max_ms ? fixed(*c.max_ms, 4) : "null") + "]";
    return false;
  }
  if (!check_rate(where, n.value, *c.value, n.workload, c.workload, "median_ms", *c.median_ms,
                  factor, reason)) {
    return false;
  }
  if (!check_speed_of_light(c, where, reason)) return false;
  if (!c.pct_of_limit) return true;
  if (!(p.declared_limit && *p.declared_limit > 0)) {
    *reason = where + ": " + n.pct + " is given but the record has no limit";
    return false;
  }
  const double pct = *c.value / *p.declared_limit * 100;
  if (!close_to(*c.pct_of_limit, pct)) {
    *reason = where + ": " + n.pct + " " + fixed(*c.pct_of_limit, 1) + " != " + n.value + "/" +
              n.limit + "*100 = " + fixed(pct, 1) + " (beyond 1%)";
    return false;
  }
  return true;
}

// A case's yardstick value follows from the workload and its median, its ratio from the values.
bool check_yardstick(const Parsed& p, const RecordCase& c, const std::string& where,
                     std::string* reason) {
  const FieldNames& n = *p.names;
  const double factor = metric_factor(p.r.metric);
  const YardstickFigure& y = *c.yardstick;
  if (!(y.median_ms > 0)) {
    *reason = where + ": " + n.y_ms + " must be positive";
    return false;
  }
  if (!check_rate(where, n.y_value, y.value, n.workload, c.workload, n.y_ms, y.median_ms, factor,
                  reason)) {
    return false;
  }
  const double ratio = *c.value / y.value;
  if (!close_to(y.ratio, ratio)) {
    *reason = where + ": " + n.y_ratio + " " + fixed(y.ratio, 3) + " != " + n.value + "/" +
              n.y_value + " = " + fixed(ratio, 3) + " (beyond 1%)";
    return false;
  }
  return true;
}

bool check_figures(const Parsed& p, std::string* reason) {
  const SubmitRecord& r = p.r;
  if (!check_unique_names(r, reason) || !check_passed(p, reason) || !check_valid_score(p, reason)) {
    return false;
  }
  double log_sum = 0;
  for (size_t i = 0; i < r.benchmarks.size(); ++i) {
    const RecordCase& c = r.benchmarks[i];
    const std::string where =
        "inconsistent: benchmarks[" + std::to_string(i) + "] '" + c.name + "'";
    if (!check_workload(p, c, where, reason)) return false;
    if (!c.value) continue;
    if (!check_value(p, c, where, reason)) return false;
    if (c.yardstick && !check_yardstick(p, c, where, reason)) return false;
    log_sum += std::log(*c.value);
  }
  if (r.score_valid) {
    const double geomean = std::exp(log_sum / r.benchmarks.size());
    if (!close_to(*r.score, geomean)) {
      *reason = "inconsistent: " + std::string(p.names->score) + " " + fixed(*r.score, 1) +
                " != geometric mean of benchmarks[]." + p.names->value + " " + fixed(geomean, 1) +
                " (beyond 1%)";
      return false;
    }
  }
  return true;
}

std::string without_spaces(const std::string& s) {
  std::string out;
  for (char c : s)
    if (!std::isspace(static_cast<unsigned char>(c))) out += c;
  return out;
}

// A record of the spec's version states the spec's metric name and workload expression
// (whitespace aside); one of an older version is not compared, one of a newer is refused.
bool check_against(const SubmitRecord& r, const Spec& spec, std::string* reason) {
  if (r.spec_version > spec.spec_version) {
    *reason = "challenge.spec_version " + std::to_string(r.spec_version) +
              " is newer than the challenge's spec (v" + std::to_string(spec.spec_version) + ")";
    return false;
  }
  if (r.spec_version < spec.spec_version) return true;  // an older spec may have measured otherwise
  const std::string name = spec.metric.name(), expression = spec.metric.expression;
  if (r.metric.name != name || without_spaces(r.metric.expression) != without_spaces(expression)) {
    *reason = "metric expression differs from the challenge's spec (record: " + r.metric.name +
              " \"" + shorten(r.metric.expression, 60) + "\", spec: " + name + " \"" +
              shorten(expression, 60) + "\")";
    return false;
  }
  return true;
}

// Why a case's stated speed of light is not the one the spec allows on the record's device
// ("" when it is): the spec's own figure (within 1%) or, where the challenge counts its bytes
// from the inputs, a figure between the compute-only one and the spec's upper bound.
std::string speed_of_light_mismatch(const RecordCase& c, const Spec& spec,
                                    const DeviceShape& device) {
  const double stated = *c.speed_of_light_ms;
  const double sol = speed_of_light(spec, c.dims, device).ms;
  if (!spec.metric.bytes_from_inputs) {
    if (sol > 0 && close_to(stated, sol)) return "";
    return " != the spec's on this device, " + fixed(sol, 4) + " (beyond 1%)";
  }
  const double floor = speed_of_light(spec, c.dims, device, 0).ms;
  if (sol > 0 && stated <= sol * 1.01 && stated >= floor * 0.99) return "";
  return " is outside [" + fixed(floor, 4) + ", " + fixed(sol, 4) +
         "], the spec's compute-only and all-bytes figures on this device";
}

// Each case's speed of light from the spec on the record's device (where the challenge counts
// its bytes from the inputs, the record's own figure within the spec's bounds, else none); a
// stated one the spec does not allow refuses the record.
bool set_speed_of_light(SubmitRecord* r, const Spec& spec, std::string* reason) {
  for (size_t i = 0; i < r->benchmarks.size(); ++i) {
    RecordCase& c = r->benchmarks[i];
    double sol = 0;
    if (c.speed_of_light_ms) {
      const std::string why = speed_of_light_mismatch(c, spec, r->device);
      if (!why.empty()) {
        *reason = "inconsistent: benchmarks[" + std::to_string(i) + "] '" + c.name +
                  "': speed_of_light_ms " + fixed(*c.speed_of_light_ms, 4) + why;
        return false;
      }
      sol = *c.speed_of_light_ms;
    } else if (!spec.metric.bytes_from_inputs) {
      sol = speed_of_light(spec, c.dims, r->device).ms;
    }
    c.speed_of_light_ms.reset();
    c.pct_of_speed_of_light.reset();
    if (!(sol > 0)) continue;
    c.speed_of_light_ms = sol;
    if (c.median_ms && *c.median_ms > 0 && c.value)
      c.pct_of_speed_of_light = 100 * sol / *c.median_ms;
  }
  return true;
}

}  // namespace

std::string judge_series(const std::string& judge_version) {
  size_t p = 0;
  if (!digits(judge_version, &p) || !literal(judge_version, &p, '.')) return judge_version;
  if (!digits(judge_version, &p)) return judge_version;
  return judge_version.substr(0, p);
}

bool parse_record(const std::string& text, SubmitRecord* out, std::string* reason) {
  if (text.size() > kMaxRecordBytes) {
    *reason = "record of " + std::to_string(text.size()) +
              " bytes is larger than the board reads (" + std::to_string(kMaxRecordBytes) + ")";
    return false;
  }
  if (!prescan_json(text, kMaxRecordDepth, "record", reason)) return false;
  json root;
  try {
    root = json::parse(text);
  } catch (const json::exception& e) {
    // Drop nlohmann's "[json.exception.parse_error.101] " tag; keep the position and cause.
    std::string what = e.what();
    const size_t tag_end = what.find("] ");
    *reason =
        "invalid JSON: " +
        shorten(valid_utf8(tag_end == std::string::npos ? what : what.substr(tag_end + 2)), 300);
    return false;
  }
  if (!root.is_object()) {
    *reason = "not a submit record: the top level is " + std::string(root.type_name()) +
              ", not an object";
    return false;
  }

  // The readers check every type before they convert, so nothing below should throw; a record
  // that still makes nlohmann throw is refused like any other malformed record.
  try {
    Parsed p;
    FieldReader f(reason);
    const std::string schema = f.string(root, "", "schema");
    if (!f.ok()) return false;
    bool ok = false;
    if (schema == kSchemaV2) {
      ok = parse_v2(f, root, &p);
    } else if (schema == kSchemaV1) {
      ok = parse_v1(f, root, &p);
    } else if (schema == kSweepSchema) {
      *reason = kSweepNotARecord;
      return false;
    } else {
      *reason = "field schema is \"" + shorten(schema, 40) + "\", expected \"" + kSchemaV2 +
                "\" or \"" + kSchemaV1 + "\"";
      return false;
    }
    if (!ok) return false;

    SubmitRecord& r = p.r;
    r.solution_stem = valid_utf8(fs::path(r.solution_path).stem().string());
    if (!r.passed) {
      if (!p.first_failure.empty()) {
        r.failure = p.first_failure;
      } else {
        r.failure = r.score_reason.empty() ? "passed is false" : "score: " + r.score_reason;
      }
    }
    if (!check_device_and_limit(&p, reason) || !check_figures(p, reason)) return false;
    *out = std::move(r);
    return true;
  } catch (const std::exception& e) {
    *reason = "malformed record: " + shorten(valid_utf8(e.what()), 200);
    return false;
  }
}

std::string recorded_header_path(const std::string& resolved, const std::string& cwd) {
  if (cwd.empty()) return resolved;
  const fs::path rel = fs::path(resolved).lexically_relative(cwd);
  if (rel.empty() || rel.is_absolute() || *rel.begin() == "..") return resolved;
  return rel.string();
}

std::string record_path(const std::string& results_dir, const std::string& challenge,
                        const std::string& device_name, const std::string& solution_path,
                        const std::string& sha256) {
  std::string slug;  // "NVIDIA H100 80GB HBM3" -> "nvidia-h100-80gb-hbm3"
  for (char c : device_name) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      slug += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else if (!slug.empty() && slug.back() != '-') {
      slug += '-';
    }
  }
  while (!slug.empty() && slug.back() == '-') slug.pop_back();
  const std::string stem = fs::path(solution_path).stem().string();
  return results_dir + "/" + challenge + "/" + (slug.empty() ? "unknown" : slug) + "/" + stem +
         "-" + sha256.substr(0, 12) + ".json";
}

bool load_record(const std::string& path, SubmitRecord* out, std::string* reason) {
  std::string text;
  switch (read_bounded_file(path, kMaxRecordBytes, &text, reason)) {
    case ReadStatus::kOk:
      break;
    case ReadStatus::kTooLarge:
      *reason += " is larger than the board reads (" + std::to_string(kMaxRecordBytes) + ")";
      return false;
    case ReadStatus::kCannotRead:
      return false;
  }
  if (!parse_record(text, out, reason)) return false;
  out->file = path;
  return true;
}

bool check_record_against_spec(SubmitRecord* record, const std::string& challenges_dir,
                               std::string* reason) {
  // Only a figure the spec gives is shown: without the spec, the record's own goes.
  auto unchecked = [record] {
    for (RecordCase& c : record->benchmarks) {
      c.speed_of_light_ms.reset();
      c.pct_of_speed_of_light.reset();
    }
    return true;
  };
  if (challenges_dir.empty() || !is_plain_name(record->challenge)) return unchecked();
  const std::string dir = challenges_dir + "/" + record->challenge;
  std::error_code ec;
  if (!fs::is_regular_file(dir + "/spec.json", ec)) return unchecked();
  // The judge's own reader: a spec the judge would refuse checks no record.
  Spec spec;
  std::string err;
  if (!load_spec(dir, &spec, &err)) {
    *reason = "cannot check the metric against the challenge's spec: " + shorten(err, 300);
    return false;
  }
  if (!check_against(*record, spec, reason)) return false;
  if (record->spec_version != spec.spec_version) return unchecked();
  return set_speed_of_light(record, spec, reason);
}

}  // namespace fp4arena
