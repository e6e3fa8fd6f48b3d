// A challenge's spec.json (schema fp4arena.spec.v2): signature with typed buffers and their
// roles, dimensions, per-output comparison, metric and physical limit, timing, tests,
// benchmarks and an optional sweep list. The harness reads everything about a challenge from here;
// nothing is hard-coded.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/device_limits.h"

namespace fp4arena {

/// Element types of buffer parameters. Storage is in units of the C element type;
/// kE2m1x2 packs two FP4 elements into one byte (element 2j in the LOW nibble of byte j).
enum class DType { kUint8, kInt32, kFp16, kBf16, kFp32, kFp8E4m3, kFp8E8m0, kE2m1x2 };

/// "uint8", "int32", "fp16", "bf16", "fp32", "fp8_e4m3", "fp8_e8m0", "e2m1x2".
const char* dtype_name(DType t);
bool parse_dtype(const std::string& name, DType* out);
/// Bytes of one storage unit (1 for kE2m1x2: a byte holding two elements).
size_t dtype_bytes(DType t);
/// Elements per storage unit: 2 for kE2m1x2, else 1.
int dtype_elements_per_unit(DType t);
/// True where the all-ones bit pattern is a NaN (fp16, bf16, fp32, fp8_e4m3, fp8_e8m0): the
/// judge poisons such outputs with it. Other types get a random poison per call.
bool dtype_has_nan_poison(DType t);

/// How an output is compared with the oracle.
enum class CompareKind { kTolerance, kExact, kExactOrTie, kUlp };
const char* compare_name(CompareKind k);  ///< "tolerance", "exact", "exact_or_tie", "ulp"

struct CompareSpec {
  CompareKind kind = CompareKind::kTolerance;
  double atol = 0, rtol = 0;  ///< kTolerance: |got - ref| <= atol + rtol*|ref|
  int64_t max_ulp = 0;        ///< kUlp: at most this many units in the last place apart
};

/// One parameter of the solve() signature, in call order.
struct ParamSpec {
  std::string name;
  std::string c_type;              ///< as written in the prototype, e.g. "const uint8_t*"
  std::string role;                ///< "in" / "out" (device buffers), "scalar", "dim"
  DType dtype = DType::kUint8;     ///< buffers: the element type (may refine uint8_t)
  std::string scalar_type;         ///< scalars and dims: "int" or "float"
  std::vector<std::string> shape;  ///< buffers: extents (storage units) as expressions of dims
  CompareSpec compare;             ///< outputs only
  bool is_buffer() const { return role == "in" || role == "out"; }
  bool is_output() const { return role == "out"; }
};

/// A named dimension and its allowed values.
struct DimSpec {
  std::string name;
  int64_t min = 1;
  int64_t max = 1;
  int64_t multiple_of = 1;
  std::vector<int64_t> one_of;  ///< when non-empty, the only allowed values
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

/// A recipe for tests at shapes drawn afresh on every run and submit (the spec's optional
/// "random_tests"): `count` cases of `generator` (with `params`), each dim drawn uniformly
/// from the values `dims` allows (a range with a step, or a list).
struct RandomTestSpec {
  std::string name;  ///< the cases' prefix: a case is named "<name>_<8 hex digits>"
  int count = 0;
  std::string generator;
  nlohmann::json params = nlohmann::json::object();
  std::vector<DimSpec> dims;  ///< one per spec dim, in the spec's order
};

struct TimingSpec {
  int warmup_calls = 3;
  int min_samples = 10;
  int max_samples = 100;
  double target_rse = 0.005;  ///< stop when std/sqrt(n)/mean falls below this
  double max_seconds = 30;    ///< per benchmark case, samples and checks included
};

/// What a benchmark's score measures: TF/s over a FLOP count, or GB/s over bytes moved.
enum class MetricKind { kTflops, kGbps };

struct MetricSpec {
  MetricKind kind = MetricKind::kTflops;
  std::string expression;  ///< FLOPs (tflops) or bytes (gbps) of one call, over the dims
  /// A tflops metric's optional "bytes": the fewest bytes one call must move (each input read
  /// once, each output written once), over the dims; empty where the spec gives none.
  std::string min_bytes;
  /// The spec's "bytes_from_inputs": the challenge counts each call's bytes from its inputs
  /// (Challenge::min_bytes: an expert that gets no tokens need not be read), and the
  /// expression is only their upper bound.
  bool bytes_from_inputs = false;
  /// The bytes one call must move: the workload of a gbps metric, else min_bytes.
  const std::string& bytes_expression() const {
    return kind == MetricKind::kGbps ? expression : min_bytes;
  }
  const char* name() const { return kind == MetricKind::kTflops ? "tflops" : "gbps"; }
  const char* unit() const { return kind == MetricKind::kTflops ? "TF/s" : "GB/s"; }
  const char* workload() const { return kind == MetricKind::kTflops ? "flops" : "bytes"; }
  /// The metric's value for `workload` units done in `ms` milliseconds.
  double value(double workload, double ms) const {
    return ms > 0 ? workload / ms / (kind == MetricKind::kTflops ? 1e9 : 1e6) : 0;
  }
};

struct Spec {
  std::string path;      ///< spec.json as given (for messages)
  std::string dir;       ///< the challenge folder
  int spec_version = 0;  ///< the problem's revision (records of different ones never mix)
  std::string name;
  std::string title;
  std::string function;  ///< "solve"
  std::vector<ParamSpec> params;
  std::vector<DimSpec> dims;
  MetricSpec metric;
  LimitKind limit = LimitKind::kFp16Dense;
  double call_timeout_seconds = 10;
  TimingSpec timing;
  std::vector<CaseSpec> tests;
  std::vector<CaseSpec> benchmarks;
  /// The optional top-level "sweep": the shapes `--action sweep` times by default (empty:
  /// none, the sweep uses the benchmarks). Parsed like benchmarks; names are their own.
  std::vector<CaseSpec> sweep;
  /// The optional "random_tests" recipes (empty: none).
  std::vector<RandomTestSpec> random_tests;

  /// The output buffer parameters, in signature order (at least one).
  std::vector<const ParamSpec*> outputs() const;
  const ParamSpec* find_param(const std::string& name) const;
  const CaseSpec* find_case(const std::string& name) const;
};

/// The schema string a spec.json must carry.
constexpr const char* kSpecSchema = "fp4arena.spec.v2";
/// Upper bound on a per-call time limit (spec or --timeout), in seconds.
constexpr double kMaxCallTimeoutSeconds = 600;

/// Loads `<challenge_dir>/spec.json`. On error returns false and sets *err to a message that
/// names the file, the field (e.g. "tests[3].K") and what was expected.
bool load_spec(const std::string& challenge_dir, Spec* out, std::string* err);

/// The test case that recipe `r` draws from `shape_seed`: named "<r.name>_<the seed in 8 hex
/// digits>", each dim drawn from r's values by a generator seeded with `shape_seed`, its
/// first call's inputs seeded with the same number. The name alone replays the case.
CaseSpec random_case(const RandomTestSpec& r, uint32_t shape_seed);

/// The random case `name` stands for ("random_0a1b2c3d": a recipe's name, '_', 8 hex digits);
/// false when it names none.
bool random_case_named(const Spec& spec, const std::string& name, CaseSpec* out);

/// A case's dims against the spec: each in its range, every buffer extent a positive integer
/// and the metric's workload positive. On error *err says which and why.
bool check_case_shape(const Spec& spec, const CaseSpec& c, std::string* err);

/// Reads a list of shapes for `--action sweep --shapes FILE`: a JSON array of cases, each
/// as an entry of the spec's "sweep" or "benchmarks" (name, generator, seed, every dim,
/// optional params), checked against `spec` by the same code. On error returns false and
/// sets *err to a message naming the file and the field (e.g. "[3].K").
bool load_shapes_file(const std::string& path, const Spec& spec, std::vector<CaseSpec>* out,
                      std::string* err);

/// Parses an already-read JSON document; `path` is used in messages only.
bool parse_spec(const nlohmann::json& doc, const std::string& path, Spec* out, std::string* err);

/// Evaluates an integer expression over named dims: integers, names, + - * / and
/// parentheses ("K/2", "2*M*N*K"). Division must be exact; overflow is an error. False +
/// *err on any error.
bool eval_expr(const std::string& expr, const std::map<std::string, int64_t>& vars, int64_t* out,
               std::string* err);

/// Number of storage units of a buffer parameter for the given dims (product of its
/// shape); -1 if an extent cannot be evaluated.
int64_t buffer_units(const ParamSpec& p, const std::map<std::string, int64_t>& dims);
/// Bytes of a buffer parameter for the given dims; 0 if an extent cannot be evaluated.
size_t buffer_bytes(const ParamSpec& p, const std::map<std::string, int64_t>& dims);
/// An output seen as a matrix of elements: rows = product of all extents but the last,
/// cols = the last extent times the elements per storage unit.
void output_matrix(const ParamSpec& p, const std::map<std::string, int64_t>& dims, int64_t* rows,
                   int64_t* cols);

/// Checks a case's dims against the spec's DimSpecs; *err names the case and the dim.
bool check_case_dims(const Spec& spec, const CaseSpec& c, std::string* err);

/// The C prototype of the solve function, e.g.
/// `extern "C" void solve(const uint8_t* a, ..., int K)`.
std::string c_prototype(const Spec& spec);

/// The workload (FLOPs or bytes) of one call for the given dims: the metric's expression.
double case_workload(const Spec& spec, const std::map<std::string, int64_t>& dims);

/// A call's roofline time on a device: its FLOPs at the spec's compute limit (tflops metrics)
/// or its bytes at the DRAM limit, whichever takes longer. Every figure 0 where the judge's
/// table has no entry for the device or an expression does not evaluate.
struct SpeedOfLight {
  double ms = 0;          ///< max(compute_ms, memory_ms)
  double compute_ms = 0;  ///< FLOPs / the spec's *_dense limit; 0 for a gbps metric
  double memory_ms = 0;   ///< bytes / the DRAM limit; 0 where a tflops spec gives no "bytes"
  bool memory_bound() const { return memory_ms > compute_ms; }
};
/// `bytes` >= 0 replaces the spec's bytes expression (a count from the call's inputs).
SpeedOfLight speed_of_light(const Spec& spec, const std::map<std::string, int64_t>& dims,
                            const DeviceShape& device, double bytes = -1);

/// "2048x18432x3072": the case's dims in signature order.
std::string shape_text(const Spec& spec, const std::map<std::string, int64_t>& dims);

}  // namespace fp4arena
