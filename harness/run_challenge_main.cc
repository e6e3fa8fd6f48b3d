// run_challenge: the command line a kernel author types. It only parses options and hands
// them to the judge library; exit codes are listed in README.md and harness/judge.h.
#include <dirent.h>
#include <sys/stat.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <iomanip>
#include <iostream>
#include <string>
#include <vector>

#include "harness/json_read.h"
#include "harness/judge.h"
#include "harness/leaderboard.h"
#include "harness/process.h"
#include "harness/python_solution.h"
#include "harness/remote.h"
#include "harness/spec.h"
#include "harness/sweep_report.h"
#include "harness/text.h"

namespace {

using fp4arena::ExitCode;

struct CliOptions {
  /// What the judge is told, bound to the options that map onto it one to one.
  fp4arena::JudgeOptions judge;
  std::string challenge_dir;
  std::string action = "run";
  bool json = false;
  bool no_yardstick = false;
  bool no_progress = false;
  std::string board_out;
  std::string challenges_dir = "challenges";
  std::string buffers = "ring";
  std::string seccomp = "allowlist";
  std::string seed;
  std::string sweep_file;
  std::string remote;
  std::string remote_dir = "fp4arena";
  std::string remote_judge = "scripts/run_challenge";
};

int code(ExitCode c) {
  return static_cast<int>(c);
}

bool is_dir(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// "M=2048 N=18432 K=3072": a case's dims in the spec's order.
std::string dims_text(const fp4arena::Spec& s, const std::map<std::string, int64_t>& dims) {
  std::string t;
  for (const auto& dim : s.dims) {
    t += (t.empty() ? "" : " ") + dim.name + "=" + std::to_string(dims.at(dim.name));
  }
  return t;
}

// One challenge of --action list: its header line, then every case with its dims.
void list_challenge(const std::string& dir, const fp4arena::Spec& s) {
  std::cout << dir << "  " << s.name << " (spec v" << s.spec_version << "): " << s.title
            << "\n    metric " << s.metric.unit() << " (limit " << fp4arena::limit_name(s.limit)
            << "), " << s.tests.size() << " tests, " << s.benchmarks.size() << " benchmarks"
            << (s.sweep.empty() ? ""
                                : ", a sweep list of " + std::to_string(s.sweep.size()) + " shapes")
            << "\n";
  for (const auto* list : {&s.tests, &s.benchmarks}) {
    const char* kind = list == &s.tests ? "test " : "bench";
    for (const fp4arena::CaseSpec& c : *list) {
      std::cout << "    " << kind << "  " << std::left << std::setw(32) << c.name << std::right
                << "  " << dims_text(s, c.dims) << "\n";
    }
  }
  for (const auto& r : s.random_tests) {
    std::cout << "    random " << r.name << "_XXXXXXXX (" << r.count
              << " drawn afresh by run and submit; --case NAME replays one)\n";
  }
}

// --action list: the challenge given, or every folder under DIR (default: ./challenges)
// holding a spec.json, each with every case.
int list_challenges(const CliOptions& o) {
  std::string root = o.challenge_dir.empty() ? "challenges" : o.challenge_dir;
  fp4arena::Spec single;
  std::string err;
  if (fp4arena::load_spec(root, &single, &err)) {
    list_challenge(root, single);
    return 0;
  }
  DIR* d = opendir(root.c_str());
  if (!d) {
    std::cerr << "run_challenge: --action list: '" << root
              << "' is not a folder (give the challenges folder or run from the repository root)\n";
    return code(ExitCode::kUsage);
  }
  std::vector<std::string> names;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] != '.' && is_dir(root + "/" + e->d_name)) names.push_back(e->d_name);
  }
  closedir(d);
  std::sort(names.begin(), names.end());
  int found = 0;
  for (const std::string& n : names) {
    fp4arena::Spec s;
    if (!fp4arena::load_spec(root + "/" + n, &s, &err)) {
      if (err.find("cannot open") == std::string::npos) std::cerr << "warning: " << err << "\n";
      continue;
    }
    ++found;
    list_challenge(root + "/" + n, s);
  }
  if (!found)
    std::cerr << "run_challenge: no challenge (folder with spec.json) under " << root << "\n";
  return found ? 0 : code(ExitCode::kUsage);
}

// --action leaderboard: rank every record under --results into --out.
int leaderboard(const CliOptions& o) {
  fp4arena::LeaderboardOptions lo;
  lo.results_dir = o.judge.results_dir;
  lo.out_dir = o.board_out.empty() ? "leaderboard" : o.board_out;
  lo.challenges_dir = o.challenges_dir;
  fp4arena::LeaderboardReport report;
  std::string err;
  if (!fp4arena::build_leaderboard(lo, &report, &err)) {
    std::cerr << "run_challenge: --action leaderboard: " << err << "\n";
    return code(ExitCode::kUsage);
  }
  for (const std::string& r : report.rejected) std::cerr << "rejected   " << r << "\n";
  for (const std::string& r : report.not_ranked) std::cerr << "not ranked " << r << "\n";
  std::cerr << "leaderboard: " << report.records_read << " records read, " << report.records_ranked
            << " ranked, " << report.rejected.size() << " rejected"
            << (report.sweeps_skipped > 0
                    ? ", " + std::to_string(report.sweeps_skipped) + " sweep(s) passed over"
                    : std::string())
            << " -> " << lo.out_dir << "/leaderboard.{md,html,json}\n";
  return 0;
}

// --action report: a sweep's page and chart rebuilt from its sweep.json, no GPU needed.
int report(const CliOptions& o) {
  if (o.sweep_file.empty()) {
    std::cerr << "run_challenge: --action report: give the sweep's JSON with --sweep FILE\n";
    return code(ExitCode::kUsage);
  }
  std::string err;
  nlohmann::json doc;
  if (!fp4arena::read_json_file(o.sweep_file, 64u << 20, 64, "a sweep", "", &doc, &err)) {
    std::cerr << "run_challenge: --sweep: " << err << "\n";
    return code(ExitCode::kUsage);
  }
  fp4arena::SweepReport rep;
  if (!fp4arena::read_sweep_json(doc, &rep, &err)) {
    std::cerr << "run_challenge: --sweep: " << o.sweep_file << ": " << err << "\n";
    return code(ExitCode::kUsage);
  }
  // The title is not in sweep.json: the challenge's spec has it, where it is of that version.
  fp4arena::Spec spec;
  if (!o.challenges_dir.empty() &&
      fp4arena::load_spec(o.challenges_dir + "/" + rep.challenge, &spec, &err) &&
      spec.spec_version == rep.spec_version) {
    rep.title = spec.title;
  }
  err.clear();
  const std::string dir = !o.board_out.empty() ? o.board_out : fp4arena::dir_of(o.sweep_file);
  if (!fp4arena::make_dirs(dir, &err) ||
      !fp4arena::write_file_atomic(dir + "/sweep.html", fp4arena::sweep_html(rep), &err) ||
      !fp4arena::write_file_atomic(dir + "/sweep.svg", fp4arena::sweep_svg(rep), &err)) {
    std::cerr << "run_challenge: --action report: " << err << "\n";
    return code(ExitCode::kUsage);
  }
  std::cerr << "report   " << dir << "/sweep.html (the chart alone: " << dir << "/sweep.svg)\n";
  return 0;
}

}  // namespace

// --remote HOST: the same judging on a machine reached by ssh (harness/remote.h).
int remote(const CliOptions& o) {
  static const std::vector<std::string> kGpuActions = {"test",     "run",     "submit",
                                                       "sanitize", "profile", "sweep"};
  if (std::count(kGpuActions.begin(), kGpuActions.end(), o.action) == 0) {
    std::cerr << "run_challenge: --remote: for test, run, submit, sanitize, profile and sweep; "
                 "--action "
              << o.action << " needs no GPU: run it here\n";
    return code(ExitCode::kUsage);
  }
  if (!o.judge.shapes_path.empty() || !o.board_out.empty() || o.challenge_dir[0] == '/') {
    std::cerr << "run_challenge: --remote: give the challenge as the remote checkout names it "
                 "(e.g. challenges/nvfp4_matmul); --shapes and --out are not sent over\n";
    return code(ExitCode::kUsage);
  }
  fp4arena::RemoteOptions r;
  r.host = o.remote;
  r.dir = o.remote_dir;
  r.judge = o.remote_judge;
  if (const char* ssh = std::getenv("FP4ARENA_SSH")) r.ssh = ssh;
  r.challenge_dir = o.challenge_dir;
  r.solution_path = o.judge.solution_path;
  r.action = o.action;
  r.results_dir = o.judge.results_dir;
  r.output_path = o.judge.output_path;
  std::vector<std::string>& a = r.judge_args;
  for (const std::string& c : o.judge.cases) a.insert(a.end(), {"--case", c});
  for (const std::string& f : o.judge.nvcc_flags) a.insert(a.end(), {"--nvcc-flag", f});
  for (const std::string& d : o.judge.include_dirs) a.insert(a.end(), {"--include-dir", d});
  if (!o.seed.empty()) a.insert(a.end(), {"--seed", o.seed});
  if (!o.judge.arch.empty()) a.insert(a.end(), {"--arch", o.judge.arch});
  if (!o.judge.author.empty()) a.insert(a.end(), {"--author", o.judge.author});
  if (!o.judge.language.empty()) a.insert(a.end(), {"--language", o.judge.language});
  if (o.judge.max_samples != 0)
    a.insert(a.end(), {"--samples", std::to_string(o.judge.max_samples)});
  if (o.judge.call_timeout_seconds > 0)
    a.insert(a.end(), {"--timeout", std::to_string(o.judge.call_timeout_seconds)});
  if (o.no_yardstick) a.push_back("--no-yardstick");
  if (o.json) a.push_back("--json");
  a.insert(a.end(), {"--device", std::to_string(o.judge.device), "--buffers", o.buffers,
                     "--seccomp", o.seccomp, "--no-progress"});
  return fp4arena::run_remote(r, std::cerr);
}

void add_output_options(CLI::App& app, CliOptions& o);

// Every option and flag of the command line, bound to `o`.
void add_options(CLI::App& app, CliOptions& o) {
  app.add_option("challenge", o.challenge_dir,
                 "Challenge folder holding spec.json (e.g. challenges/nvfp4_matmul); for "
                 "--action list, the folder of challenges (default: challenges)");
  app.add_option("-s,--solution", o.judge.solution_path,
                 "The solution: one .cu file (CUDA C++), or one .py file (Triton or PyTorch: "
                 "--action check only, for now)");
  app.add_option("-l,--language", o.judge.language,
                 "Solution language: cuda, triton or pytorch (default: from the file name; a .py "
                 "file is Python)")
      ->capture_default_str();
  app.add_option(
         "-a,--action", o.action,
         "check: compile and check the signature (no GPU needed); test: every test case, "
         "nothing timed; run: every test and a quick benchmark; submit: the full scoring run, "
         "writes a JSON record; list: "
         "list challenges; leaderboard: rank the records under --results into --out; sanitize: "
         "the tests under compute-sanitizer (memcheck, racecheck); profile: one call of "
         "a benchmark (or --case) under Nsight Compute; dump: write one --case's inputs and "
         "expected outputs as .npy files (no solution or GPU needed); sweep: time the solution "
         "and the yardstick over a list of shapes (--shapes, else the spec's sweep list, else "
         "its benchmarks), write sweep.json and sweep.html (a chart) into --out")
      ->check(CLI::IsMember({"check", "test", "run", "submit", "list", "leaderboard", "sanitize",
                             "profile", "dump", "sweep", "report"}))
      ->capture_default_str();
  app.add_option("-d,--device", o.judge.device, "CUDA device index")->capture_default_str();
  app.add_option("--arch", o.judge.arch,
                 "Compile for this architecture (sm_90a, sm_100a, ...); default: the device's "
                 "own, or sm_90a without a GPU");
  app.add_option("-c,--case", o.judge.cases, "Only run this case (repeatable)");
  app.add_option("--seed", o.seed,
                 "Replay --case with this seed instead of its own (every failure report prints "
                 "the seed of the failing call)");
  app.add_option("-I,--include-dir", o.judge.include_dirs,
                 "An extra include folder for nvcc (repeatable), e.g. CUTLASS's include/");
  app.add_option(
         "--nvcc-flag", o.judge.nvcc_flags,
         "An extra nvcc flag (repeatable) from the allow-list: -maxrregcount=N, -DNAME[=V], "
         "-UNAME, --use_fast_math, -Xptxas=-v, --expt-relaxed-constexpr, "
         "--expt-extended-lambda, -std=c++17 or -std=c++20")
      ->allow_extra_args(false);
  app.add_flag("--json", o.json,
               "Print the record as JSON on stdout (the summary stays on stderr)");
  app.add_option("-o,--output", o.judge.output_path,
                 "submit: write the record here instead of results/<challenge>/<device>/");
  app.add_option("--results", o.judge.results_dir, "submit, leaderboard: the results folder")
      ->capture_default_str();
  app.add_option("--out", o.board_out,
                 "leaderboard: where leaderboard.{md,html,json} go (default leaderboard); dump: "
                 "the folder for the case's files (default dump/<challenge>/<case>); sweep: the "
                 "folder for sweep.json and sweep.html (default sweep/<challenge>)");
  add_output_options(app, o);
}

// The options of where things go (records, boards, sweeps, remote machines) and of how a run
// is made.
void add_output_options(CLI::App& app, CliOptions& o) {
  app.add_option("--remote", o.remote,
                 "test, run, submit, sanitize, profile, sweep: judge on HOST (ssh; $FP4ARENA_SSH "
                 "names another program) where the project is checked out in --remote-dir; the "
                 "solution and the headers beside it go over, a submit's record comes back");
  app.add_option("--remote-dir", o.remote_dir,
                 "--remote: the project's folder on HOST (relative: to the home)")
      ->capture_default_str();
  app.add_option("--remote-judge", o.remote_judge,
                 "--remote: the judge to run there, relative to --remote-dir")
      ->capture_default_str();
  app.add_option("--sweep", o.sweep_file,
                 "report: the sweep.json whose sweep.html and sweep.svg are rebuilt (beside it, "
                 "or into --out)");
  app.add_option("--shapes", o.judge.shapes_path,
                 "sweep, test: a JSON file holding an array of shapes, each like a spec's "
                 "benchmark entry (name, generator, seed, every dim, optional params), instead "
                 "of the spec's sweep list (sweep) or its tests (test)");
  app.add_option("--challenges", o.challenges_dir,
                 "leaderboard: the folder of challenges whose spec.json each record's metric must "
                 "match (an empty string: no check)")
      ->capture_default_str();
  app.add_option("--author", o.judge.author, "Author recorded in the submit record");
  app.add_flag("--no-yardstick", o.no_yardstick,
               "submit, sweep: skip the challenge's yardstick (cuBLAS, a device copy, ...)");
  app.add_flag("--no-progress", o.no_progress, "No live progress line on stderr");
  app.add_option("--timeout", o.judge.call_timeout_seconds,
                 "Per-call time limit in seconds (default: the spec's)");
  app.add_option("--samples", o.judge.max_samples,
                 "run, sweep: at most this many timed samples per benchmark (1-15; a quicker "
                 "look, every output still checked); submit keeps the spec's rule");
  app.add_option("--buffers", o.buffers,
                 "How the worker allocates argument buffers: ring (3 sets allocated once per "
                 "shape, used in turn: consecutive calls never share addresses) or fresh (new "
                 "allocations for every call)")
      ->check(CLI::IsMember({"ring", "fresh"}))
      ->capture_default_str();
  app.add_option("--seccomp", o.seccomp,
                 "The worker's system-call filter: allowlist (only the calls harness/sandbox.cc "
                 "lists; every other call answers ENOSYS) or denylist (not submit: what reaches "
                 "beyond the worker is refused, the rest allowed; to tell whether a failure is "
                 "the allowlist's)")
      ->check(CLI::IsMember({"denylist", "allowlist"}))
      ->capture_default_str();
  app.add_option("--cache-dir", o.judge.cache_dir,
                 "Compiled-solution cache (default: $FP4ARENA_CACHE_DIR or ~/.cache/fp4arena)");
  app.set_version_flag("--version", std::string("run_challenge (fp4arena) ") + FP4ARENA_VERSION);
}

// The checks CLI11 cannot make; -1 when every option is usable, else the exit code (the
// message is printed).
int check_options(const CliOptions& o) {
  fp4arena::Language lang;
  if (!o.judge.language.empty() && !fp4arena::parse_language(o.judge.language, &lang)) {
    std::cerr << "run_challenge: --language: expected cuda, triton or pytorch, got '"
              << o.judge.language << "'\n";
    return code(ExitCode::kUsage);
  }
  if (!o.judge.language.empty() && !o.judge.solution_path.empty() &&
      fp4arena::is_python(lang) != fp4arena::ends_with(o.judge.solution_path, ".py")) {
    std::cerr << "run_challenge: --language " << o.judge.language << " does not fit --solution '"
              << o.judge.solution_path
              << "': Triton and PyTorch solutions are .py files, CUDA ones are not\n";
    return code(ExitCode::kUsage);
  }
  if (o.challenge_dir.empty()) {
    std::cerr << "run_challenge: missing the challenge folder (e.g. challenges/nvfp4_matmul); "
                 "see --help\n";
    return code(ExitCode::kUsage);
  }
  if (o.judge.solution_path.empty() && o.action != "dump") {
    std::cerr << "run_challenge: --solution: missing; give the .cu (or .py) file to judge\n";
    return code(ExitCode::kUsage);
  }
  if (!o.judge.solution_path.empty() && is_dir(o.judge.solution_path)) {
    std::cerr << "run_challenge: --solution: '" << o.judge.solution_path
              << "' is a folder; give the solution's .cu (or .py) file\n";
    return code(ExitCode::kUsage);
  }
  if (!(o.judge.call_timeout_seconds >= 0) ||
      o.judge.call_timeout_seconds > fp4arena::kMaxCallTimeoutSeconds) {
    std::cerr << "run_challenge: --timeout: expected a number of seconds in (0, "
              << fp4arena::kMaxCallTimeoutSeconds << "]\n";
    return code(ExitCode::kUsage);
  }
  if (o.judge.max_samples != 0 &&
      (o.judge.max_samples < 1 || o.judge.max_samples > 15 || o.action == "submit")) {
    std::cerr << "run_challenge: --samples: expected 1 to 15 with --action run or sweep, got "
              << o.judge.max_samples << " with --action " << o.action << "\n";
    return code(ExitCode::kUsage);
  }
  // Options an action would silently ignore are refused: --json prints a record, --output
  // places a submit's record, --out places a dump's or a sweep's files.
  const struct {
    bool given;
    const char* option;
    std::vector<std::string> actions;
  } scoped[] = {
      {o.json, "--json", {"test", "run", "submit", "sanitize", "profile", "sweep"}},
      {!o.judge.output_path.empty(), "--output", {"submit"}},
      {!o.board_out.empty(), "--out", {"dump", "sweep", "profile", "leaderboard", "report"}},
  };
  for (const auto& s : scoped) {
    if (!s.given || std::count(s.actions.begin(), s.actions.end(), o.action) > 0) continue;
    std::string list;
    for (const std::string& a : s.actions) list += (list.empty() ? "" : ", ") + a;
    std::cerr << "run_challenge: " << s.option << ": not used by --action " << o.action
              << " (only by " << list << ")\n";
    return code(ExitCode::kUsage);
  }
  if (o.seccomp == "denylist" && o.action == "submit") {
    std::cerr
        << "run_challenge: --seccomp: submit always runs under the allowlist; denylist is for "
           "the other actions\n";
    return code(ExitCode::kUsage);
  }
  return -1;
}

// --seed as a number; false (the message printed) when it is not an integer in [0, 2^63).
bool parse_seed(const CliOptions& o, uint64_t* seed) {
  if (!o.seed.empty()) {
    char* end = nullptr;
    errno = 0;
    unsigned long long v = std::strtoull(o.seed.c_str(), &end, 10);
    if (errno || !end || *end || o.seed[0] == '-' || v >= (1ull << 63)) {
      std::cerr << "run_challenge: --seed: expected an integer in [0, 2^63), got '" << o.seed
                << "'\n";
      return false;
    }
    *seed = v;
  }
  return true;
}

// The judge's options: those bound one to one, and the ones the command line spells otherwise.
fp4arena::JudgeOptions judge_options(const CliOptions& o, uint64_t seed) {
  fp4arena::JudgeOptions j = o.judge;
  j.challenge_dir = o.challenge_dir;
  fp4arena::parse_action(o.action, &j.action);
  j.has_seed = !o.seed.empty();
  j.seed = seed;
  j.dump_dir = j.sweep_dir = j.profile_dir = o.board_out;
  j.yardstick = !o.no_yardstick;
  j.progress = !o.no_progress;
  j.buffers = o.buffers == "fresh" ? fp4arena::BufferMode::kFresh : fp4arena::BufferMode::kRing;
  j.seccomp_allowlist = o.seccomp == "allowlist";
  return j;
}

int main(int argc, char** argv) {
  CliOptions o;
  CLI::App app{
      "fp4arena judge: compile a CUDA solution, validate it against the challenge's FP32 "
      "oracle on every test case, and time its benchmarks.\n\n"
      "  run_challenge challenges/nvfp4_matmul --solution my.cu --action run\n\n"
      "Exit codes: 0 passed, 1 a case failed, 2 bad usage or spec, 3 compile error,\n"
      "4 crash/CUDA error/timeout in solve(), 5 no GPU (compiled and checked only),\n"
      "6 internal judge error.",
      "run_challenge"};
  add_options(app, o);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return code(ExitCode::kUsage);
  }

  while (o.challenge_dir.size() > 1 && o.challenge_dir.back() == '/') o.challenge_dir.pop_back();
  // A bare challenge name ("nvfp4_matmul") is the folder of that name under challenges/.
  if (!is_dir(o.challenge_dir) && o.challenge_dir.find('/') == std::string::npos &&
      is_dir("challenges/" + o.challenge_dir)) {
    o.challenge_dir = "challenges/" + o.challenge_dir;
  }
  if (o.action == "list") return list_challenges(o);
  if (o.action == "leaderboard") return leaderboard(o);
  if (o.action == "report") return report(o);
  if (int c = check_options(o); c >= 0) return c;
  uint64_t seed = 0;
  if (!parse_seed(o, &seed)) return code(ExitCode::kUsage);

  if (!o.remote.empty()) return remote(o);
  fp4arena::JudgeOptions j = judge_options(o, seed);
  fp4arena::JudgeOutcome out = fp4arena::judge(j, std::cerr);
  if (o.json && !out.record.is_null())
    std::cout << out.record.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  return code(out.code);
}
