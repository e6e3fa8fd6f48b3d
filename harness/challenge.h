// The interface between the generic judge and one challenge's own C++ (its input
// generators, its oracle and its yardstick), plus the registry challenges add themselves
// to. A challenge supplies data and math only; the harness owns compile, worker, poison,
// canaries, validation, timing, verdicts, scoring and records.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "harness/spec.h"

namespace fp4arena {

/// The inputs of one call of solve(): dims, scalar arguments and input buffers, by the
/// parameter names of the spec's signature. Lives in the judge process only.
struct ProblemData {
  std::map<std::string, int64_t> dims;
  std::map<std::string, double> scalars;
  std::map<std::string, std::vector<uint8_t>> buffers;  ///< every "in" buffer, by name
};

/// What the oracle says one output must be. Which fields are filled depends on the
/// output's comparison (spec.json "compare"):
///   tolerance, ulp: `values`, one float per element;
///   exact:          `bytes`, the expected buffer exactly as solve() must write it;
///   exact_or_tie:   `bytes`, plus `tie` (one byte per element, 1 where the oracle's
///                   pre-rounding value lies within its stated FP32 error bound of a rounding
///                   boundary) and `alternatives` (one or more buffers laid out like `bytes`:
///                   at a tie element the code of any of them is accepted too, usually the
///                   other neighbour; at an element with fewer other codes, repeat one);
///                   elsewhere only `bytes` is accepted.
struct ExpectedOutput {
  std::vector<float> values;
  std::vector<uint8_t> bytes;
  std::vector<uint8_t> tie;
  std::vector<std::vector<uint8_t>> alternatives;
};

/// The oracle's answer for every output, by parameter name.
using Expected = std::map<std::string, ExpectedOutput>;

/// Where the oracle may run.
enum class OracleDevice { kCpu, kGpu };

/// A vendor-library reference run on the same inputs (cuBLAS GEMM, a device copy, ...),
/// prepared by the challenge and timed by the harness's one timing service, exactly like a
/// solution: the harness does the warm-up, the pre-call traffic and L2 flush, the events and
/// the stopping rule.
class Yardstick {
 public:
  virtual ~Yardstick() = default;
  /// Enqueues one call on the default stream of the current device. Must not synchronise.
  virtual bool launch(std::string* err) = 0;
};

class Challenge {
 public:
  virtual ~Challenge() = default;

  /// Checks a case's generator name and params before anything runs; *err names the case.
  virtual bool check_case(const CaseSpec& c, std::string* err) const = 0;

  /// Generates the inputs of case `c` from `seed` (the case's own seed for tests, a fresh
  /// random one per timed call for benchmarks). Deterministic in (c, seed).
  virtual bool generate(const CaseSpec& c, uint64_t seed, ProblemData* out,
                        std::string* err) const = 0;

  /// The expected value of every output (see ExpectedOutput for what each comparison needs).
  virtual bool oracle(const ProblemData& in, OracleDevice where, Expected* out,
                      std::string* err) const = 0;

  /// For outputs whose acceptable codes depend on a choice the solution made in another output
  /// (a quantizer's codes depend on the global scale it wrote, within that output's own
  /// tolerance): called after oracle() with every output as solve() wrote it (by name, the
  /// exact bytes), it may replace the entries of `expected` for such outputs with the oracle's
  /// answer given that choice. Each output is still compared with its own rule; the judge
  /// checks the replaced entries' sizes again. Default: nothing changes.
  virtual bool condition(const ProblemData& in,
                         const std::map<std::string, std::vector<uint8_t>>& written,
                         Expected* expected, std::string* err) const {
    (void)in, (void)written, (void)expected, (void)err;
    return true;
  }

  /// For a spec with "bytes_from_inputs": the fewest bytes this call must move, counted from
  /// its inputs (never more than the spec's "bytes"); -1 where it cannot say. Default: -1.
  virtual double min_bytes(const ProblemData& in) const {
    (void)in;
    return -1;
  }
  /// The yardstick's name as reports show it ("cuBLAS FP16 GEMM on pre-dequantized
  /// operands"); empty where the challenge has none.
  virtual std::string yardstick_name() const { return ""; }

  /// Prepares the yardstick for these inputs on the current device (uploads, conversions:
  /// untimed). nullptr + *err on failure; nullptr with *err empty where there is none.
  virtual std::unique_ptr<Yardstick> make_yardstick(const ProblemData& in, std::string* err) const {
    (void)in, (void)err;
    return nullptr;
  }
};

using ChallengeFactory = std::function<std::unique_ptr<Challenge>()>;

/// Registers a challenge under the `name` of its spec.json; called from a static
/// initializer in challenges/<name>/*.cc.
bool register_challenge(const std::string& name, ChallengeFactory factory);

/// The challenge registered under `name`, or nullptr.
std::unique_ptr<Challenge> make_challenge(const std::string& name);

/// Names of every registered challenge, sorted.
std::vector<std::string> registered_challenges();

}  // namespace fp4arena
