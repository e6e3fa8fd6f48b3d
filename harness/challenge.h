// The interface between the generic judge and one challenge's own C++ (its input
// generators and its oracle glue), plus the registry challenges add themselves to.
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

/// Where the oracle may run.
enum class OracleDevice { kCpu, kGpu };

class Challenge {
 public:
  virtual ~Challenge() = default;

  /// Checks a case's generator name and params before anything runs; *err names the case.
  virtual bool check_case(const CaseSpec& c, std::string* err) const = 0;

  /// Generates the inputs of case `c` from `seed` (the case's own seed for tests, a fresh
  /// random one per timed call for benchmarks). Deterministic in (c, seed).
  virtual bool generate(const CaseSpec& c, uint64_t seed, ProblemData* out,
                        std::string* err) const = 0;

  /// The expected value of every output element, as float, in output order.
  virtual bool expected(const ProblemData& in, OracleDevice where, std::vector<float>* out,
                        std::string* err) const = 0;

  /// Time of the vendor-library yardstick for these inputs' shape in milliseconds (cuBLAS
  /// FP16 GEMM on pre-dequantized operands for the NVFP4 matmul), measured with the same
  /// L2 flush as the solution; false where the challenge has none.
  virtual bool yardstick_ms(const ProblemData& in, int samples, double* median_ms,
                            std::string* err) const {
    (void)in, (void)samples, (void)median_ms, (void)err;
    return false;
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
