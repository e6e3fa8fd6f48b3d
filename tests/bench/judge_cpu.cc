// fp4arena_judge_cpu: a benchmark program (it reports figures; it passes or fails nothing).
// What the judge's own CPU work costs for each benchmark case of a challenge: the time to
// generate one fresh input set, to run the CPU oracle on it and to compare the oracle's own
// answer with it as a submission's outputs are compared (harness/validate.h; where every
// output is bytes or FP32 values, as the quantizers' are), then the same for --sets
// sets made side by side on as many threads (as the judge makes and checks a window's sets,
// harness/judge_calls.cc). A benchmark's sampling time cap counts this work, so where it
// dominates a case gets fewer samples than its spec asks for. Needs no GPU: a case whose
// oracle the judge runs on the GPU is timed for generation only unless --cpu-oracle. The
// host allocator is set up as the judge sets it (harness/host_memory.h) unless
// --default-malloc, which leaves glibc's defaults, to compare.
//
// Usage: fp4arena_judge_cpu [--sets N] [--cpu-oracle] [--default-malloc] CHALLENGE_DIR [CASE ...]
//   e.g. fp4arena_judge_cpu --sets 12 challenges/nvfp4_quantize activations
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "harness/challenge.h"
#include "harness/host_memory.h"
#include "harness/session.h"
#include "harness/spec.h"
#include "harness/validate.h"
#include "reference/parallel.h"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

struct SetCost {
  double generate = 0, oracle = 0, compare = -1;  // compare -1: not made
  std::string err;
};

// The oracle's own answer for output `p`, as solve() would have written it: its bytes, or its
// FP32 values. False where the comparison reads values of another type.
bool answer_bytes(const fp4arena::ParamSpec& p, const fp4arena::ExpectedOutput& e,
                  std::vector<uint8_t>* out) {
  if (!e.bytes.empty()) {
    *out = e.bytes;
    return true;
  }
  if (p.dtype != fp4arena::DType::kFp32) return false;
  out->resize(e.values.size() * sizeof(float));
  std::memcpy(out->data(), e.values.data(), out->size());
  return true;
}

// Compares the oracle's answer with itself as the judge compares a call's outputs: seconds,
// or -1 where an output is not bytes or FP32 values (*err where a comparison failed).
double compare_answers(const fp4arena::Spec& spec, const fp4arena::ProblemData& in,
                       const fp4arena::Expected& expected, std::string* err) {
  std::vector<std::vector<uint8_t>> got;
  for (const fp4arena::ParamSpec* p : spec.outputs()) {
    got.emplace_back();
    if (!answer_bytes(*p, expected.at(p->name), &got.back())) return -1;
  }
  const Clock::time_point t0 = Clock::now();
  size_t i = 0;
  for (const fp4arena::ParamSpec* p : spec.outputs()) {
    int64_t rows = 0, cols = 0;
    fp4arena::output_matrix(*p, in.dims, &rows, &cols);
    const fp4arena::OutputReport o =
        fp4arena::compare_output(*p, rows, cols, got[i++].data(), fp4arena::Poison{}, nullptr,
                                 fp4arena::Poison{}, expected.at(p->name));
    if (!o.passed) *err = "the oracle's own answer for '" + p->name + "' failed: " + o.summary;
  }
  return seconds_since(t0);
}

// Generates set `seed` of case `c` and, if `oracle`, runs the CPU oracle on it and compares
// its answer.
SetCost one_set(const fp4arena::Spec& spec, const fp4arena::Challenge& ch,
                const fp4arena::CaseSpec& c, uint64_t seed, bool oracle) {
  SetCost cost;
  fp4arena::ProblemData in;
  const Clock::time_point t0 = Clock::now();
  if (!ch.generate(c, seed, &in, &cost.err)) return cost;
  cost.generate = seconds_since(t0);
  if (!oracle) return cost;
  fp4arena::Expected expected;
  const Clock::time_point t1 = Clock::now();
  if (!ch.oracle(in, fp4arena::OracleDevice::kCpu, &expected, &cost.err)) return cost;
  cost.oracle = seconds_since(t1);
  cost.compare = compare_answers(spec, in, expected, &cost.err);
  return cost;
}

// `sets` sets made side by side, one thread each (at most the machine's threads at once, in
// the judge's parallel loop, reference/parallel.h): the wall time of all of them, or -1 with
// *err.
double side_by_side(const fp4arena::Spec& spec, const fp4arena::Challenge& ch,
                    const fp4arena::CaseSpec& c, int sets, bool oracle, std::string* err) {
  std::vector<std::string> errs(static_cast<size_t>(sets));
  const Clock::time_point t0 = Clock::now();
  fp4arena::ParallelFor(fp4arena::ResolveThreads(0), size_t(sets), [&](size_t s) {
    errs[s] = one_set(spec, ch, c, 1000 + uint64_t(s), oracle).err;
  });
  for (const std::string& e : errs) {
    if (!e.empty()) {
      *err = e;
      return -1;
    }
  }
  return seconds_since(t0);
}

int usage(const char* program) {
  std::fprintf(stderr,
               "usage: %s [--sets N] [--cpu-oracle] [--default-malloc] CHALLENGE_DIR [CASE ...]\n",
               program);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  constexpr const char* kProgram = "fp4arena_judge_cpu";
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  int sets = 12;
  bool cpu_oracle = false;
  bool default_malloc = false;
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--sets" && i + 1 < argc) {
      sets = std::atoi(argv[++i]);
      if (sets < 1 || sets > 256) {
        std::fprintf(stderr, "%s: --sets: expected 1 to 256, got '%s'\n", kProgram, argv[i]);
        return 2;
      }
    } else if (a == "--cpu-oracle") {
      cpu_oracle = true;
    } else if (a == "--default-malloc") {
      default_malloc = true;
    } else if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "%s: unknown option '%s'\n", kProgram, a.c_str());
      return usage(kProgram);
    } else {
      args.push_back(a);
    }
  }
  if (args.empty()) return usage(kProgram);
  if (!default_malloc) fp4arena::keep_freed_host_memory();
  fp4arena::Spec spec;
  std::string err;
  if (!fp4arena::load_spec(args[0], &spec, &err)) {
    std::fprintf(stderr, "%s: %s\n", kProgram, err.c_str());
    return 2;
  }
  std::unique_ptr<fp4arena::Challenge> ch = fp4arena::make_challenge(spec.name);
  if (!ch) {
    std::fprintf(stderr, "%s: no challenge named '%s' is built in\n", kProgram, spec.name.c_str());
    return 2;
  }
  std::vector<const fp4arena::CaseSpec*> cases;
  for (size_t i = 1; i < args.size(); ++i) {
    const fp4arena::CaseSpec* c = spec.find_case(args[i]);
    if (!c) {
      std::fprintf(stderr, "%s: %s has no case '%s'\n", kProgram, spec.path.c_str(),
                   args[i].c_str());
      return 2;
    }
    cases.push_back(c);
  }
  if (cases.empty()) {
    for (const fp4arena::CaseSpec& c : spec.benchmarks) cases.push_back(&c);
  }
  std::printf("%u hardware threads; %d sets side by side; %s\n",
              std::thread::hardware_concurrency(), sets,
              default_malloc ? "glibc's malloc defaults" : "the judge's malloc settings");
  std::printf("%-34s %12s %12s %12s %16s\n", "case", "generate s", "oracle s", "compare s",
              "sets wall s");
  for (const fp4arena::CaseSpec* c : cases) {
    // The judge runs the oracle of a large case on the GPU (harness/session.h); here such a
    // case's CPU oracle runs only on request.
    const bool oracle = cpu_oracle || fp4arena::case_workload(spec, c->dims) <
                                          fp4arena::judging::kGpuOracleWorkload;
    const SetCost one = one_set(spec, *ch, *c, 1, oracle);
    if (!one.err.empty()) {
      std::fprintf(stderr, "%s: case '%s': %s\n", kProgram, c->name.c_str(), one.err.c_str());
      return 1;
    }
    const double wall = side_by_side(spec, *ch, *c, sets, oracle, &err);
    if (wall < 0) {
      std::fprintf(stderr, "%s: case '%s': %s\n", kProgram, c->name.c_str(), err.c_str());
      return 1;
    }
    char oracle_s[32] = "-", compare_s[32] = "-";
    if (oracle) std::snprintf(oracle_s, sizeof oracle_s, "%.3f", one.oracle);
    if (one.compare >= 0) std::snprintf(compare_s, sizeof compare_s, "%.3f", one.compare);
    std::printf("%-34s %12.3f %12s %12s %16.3f\n", c->name.c_str(), one.generate, oracle_s,
                compare_s, wall);
  }
  return 0;
}
