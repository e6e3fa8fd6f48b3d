// A challenge's spec.json: signature, dimensions, tolerances, test and benchmark cases.
// The harness reads everything about a challenge from here; nothing is hard-coded.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace fp4arena {

/// One parameter of the solve() signature, in call order.
struct ParamSpec {
  std::string name;
  std::string c_type;              ///< as written in the prototype, e.g. "const uint8_t*"
  std::string role;                ///< "in" / "out" (device buffers), "scalar", "dim"
  std::string elem_type;           ///< "uint8_t", "__half", "float" or "int"
  size_t elem_bytes = 0;           ///< size of elem_type
  std::vector<std::string> shape;  ///< buffers only: extents as expressions of the dims
  bool is_buffer() const { return role == "in" || role == "out"; }
};

/// A named dimension (M, N, K) and its allowed values.
struct DimSpec {
  std::string name;
  int64_t min = 1;
  int64_t max = 1;
  int64_t multiple_of = 1;
};

/// One named test or benchmark case.
struct CaseSpec {
  std::string name;
  std::map<std::string, int64_t> dims;
  uint64_t seed = 0;
  std::string generator;
  nlohmann::json params = nlohmann::json::object();  ///< generator-specific extras
  bool benchmark = false;
};

struct TimingSpec {
  int warmup_calls = 3;
  int min_samples = 10;
  int max_samples = 100;
  double target_rse = 0.005;  ///< stop when std/sqrt(n)/mean falls below this
  double max_seconds = 30;    ///< per benchmark case, samples and checks included
};

struct Spec {
  std::string path;  ///< spec.json as given (for messages)
  std::string dir;   ///< the challenge folder
  int spec_version = 0;
  std::string name;
  std::string title;
  std::string function;  ///< "solve"
  std::vector<ParamSpec> params;
  std::vector<DimSpec> dims;
  double atol = 0;
  double rtol = 0;
  std::string flops;  ///< expression of the dims, e.g. "2*M*N*K"
  double call_timeout_seconds = 10;
  TimingSpec timing;
  std::vector<CaseSpec> tests;
  std::vector<CaseSpec> benchmarks;

  /// The single output buffer parameter (specs have exactly one).
  const ParamSpec& output() const;
  const CaseSpec* find_case(const std::string& name) const;
};

/// Loads `<challenge_dir>/spec.json`. On error returns false and sets *err to a message that
/// names the file, the field (e.g. "tests[3].K") and what was expected.
bool load_spec(const std::string& challenge_dir, Spec* out, std::string* err);

/// Parses an already-read JSON document; `path` is used in messages only.
bool parse_spec(const nlohmann::json& doc, const std::string& path, Spec* out, std::string* err);

/// Evaluates an integer expression over named dims: integers, names, + - * / and
/// parentheses ("K/2", "2*M*N*K"). Division must be exact. False + *err on any error.
bool eval_expr(const std::string& expr, const std::map<std::string, int64_t>& vars, int64_t* out,
               std::string* err);

/// Number of elements of a buffer parameter for the given dims (product of its shape).
int64_t buffer_elements(const ParamSpec& p, const std::map<std::string, int64_t>& dims);

/// Checks a case's dims against the spec's DimSpecs; *err names the case and the dim.
bool check_case_dims(const Spec& spec, const CaseSpec& c, std::string* err);

/// The C prototype of the solve function, e.g.
/// `extern "C" void solve(const uint8_t* a, ..., int K)`.
std::string c_prototype(const Spec& spec);

/// FLOP count of one call for the given dims (the spec's `flops` expression).
double case_flops(const Spec& spec, const std::map<std::string, int64_t>& dims);

}  // namespace fp4arena
