// fp4arena_timing_check: a benchmark program (it reports figures; it passes or fails nothing).
// Is the judge's figure the solution's own time? For each case it prints the judge's median
// per call (--action run: windows of back-to-back calls in the worker, timed by the judge's
// own events in its own process) beside the same shared object's time in this one process
// (the same number of back-to-back calls on the very inputs the judge's samples timed, their
// seeds replayed in turn, after the same warm-up and clean L2 flush, between two CUDA
// events), their difference, and the judge's target: within max(1 us, 2%). --samples sets
// how many in-process samples cycle through the judge's; --window-method judges with that
// method (harness/verdict.h, WindowMethod; default the judge's, v2 since judge 0.4): v1, the
// copy model from copies within the judge's own memory, is there to compare.
//
// Usage: fp4arena_timing_check [--samples N] [--window-method v1|v2] CHALLENGE_DIR SOLUTION
//                              CASE [CASE ...]
//   e.g. fp4arena_timing_check challenges/nvfp4_matmul solutions/nvfp4_matmul/naive.cu rev1
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "tests/bench/judge_timing.cuh"

int main(int argc, char** argv) {
  // Line-buffered even into a file: a run cut short by a time limit keeps its finished rows.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  constexpr const char* kProgram = "fp4arena_timing_check";
  int samples = 21;
  fp4arena::WindowMethod method = fp4arena::kJudgeWindowMethod;
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--samples" && i + 1 < argc) {
      samples = std::atoi(argv[++i]);
      if (samples < 1 || samples > 1000) {
        std::fprintf(stderr, "%s: --samples: expected 1 to 1000, got '%s'\n", kProgram, argv[i]);
        return 2;
      }
    } else if (a == "--window-method" && i + 1 < argc) {
      const std::string m = argv[++i];
      if (!fp4arena::bench::parse_window_method(m, &method)) {
        std::fprintf(stderr, "%s: --window-method: expected v1 or v2, got '%s'\n", kProgram,
                     m.c_str());
        return 2;
      }
    } else {
      args.push_back(a);
    }
  }
  if (args.size() < 3) {
    std::fprintf(stderr,
                 "usage: %s [--samples N] [--window-method v1|v2] CHALLENGE_DIR SOLUTION CASE "
                 "[CASE ...]\n",
                 kProgram);
    return 2;
  }
  int sms = 0;
  cudaDeviceProp prop;
  fp4arena::PreCall pre;
  fp4arena::bench::start_or_exit(kProgram, "the bundled solutions", &sms, &prop, &pre);
  std::string err;
  std::printf("%s; %s on %s; judged with %s\n", prop.name, args[1].c_str(), args[0].c_str(),
              fp4arena::window_method_name(method));
  std::printf("%-22s %5s %12s %12s %10s %10s %8s %12s\n", "case", "calls", "judged us",
              "in-proc us", "diff us", "allowed", "within", "worker us");
  for (size_t k = 2; k < args.size(); ++k) {
    fp4arena::bench::JudgedFigure j;
    double mine_us = 0;
    if (!fp4arena::bench::judged_figure(args[0], args[1], args[k], &j, &err, 1.0, method) ||
        !fp4arena::bench::in_process_figure(pre, args[0], args[1], args[k], j.calls_per_sample,
                                            samples, &mine_us, &err, j.sample_seeds)) {
      std::fprintf(stderr, "%s: %s: %s\n", kProgram, args[k].c_str(), err.c_str());
      return 2;
    }
    const double judged_us = j.median_ms * 1000.0, diff = judged_us - mine_us;
    const double allowed = std::max(1.0, 0.02 * mine_us);
    std::printf("%-22s %5d %12.2f %12.2f %+10.2f %10.2f %8s %12.2f\n", args[k].c_str(),
                j.calls_per_sample, judged_us, mine_us, diff, allowed,
                std::fabs(diff) <= allowed ? "yes" : "NO", j.worker_reported_ms * 1000.0);
  }
  return 0;
}
