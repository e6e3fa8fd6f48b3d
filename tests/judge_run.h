// Running run_challenge from GPU tests as a user would, and reading what it printed: the
// helpers every adversarial suite shares (tests/harness/gpu_*adversarial_test.cc).
#pragma once

#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/judge.h"
#include "harness/spec.h"
#include "tests/test_util.h"

namespace fp4arena::testing_util {

inline std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Live processes whose program (argv[0]) is fp4arena_worker.
inline int worker_processes() {
  int n = 0;
  DIR* d = opendir("/proc");
  if (!d) return 0;
  while (dirent* e = readdir(d)) {
    if (!std::isdigit(static_cast<unsigned char>(e->d_name[0]))) continue;
    std::string cmd = read_all(std::string("/proc/") + e->d_name + "/cmdline");
    std::string prog = cmd.substr(0, cmd.find('\0'));
    size_t slash = prog.rfind('/');
    n += (slash == std::string::npos ? prog : prog.substr(slash + 1)) == "fp4arena_worker";
  }
  closedir(d);
  return n;
}

struct JudgeRun {
  int exit_code = -1;
  std::string out;        // stdout: the record (--json)
  std::string err;        // stderr: the summary, and whatever the worker printed
  nlohmann::json record;  // null when stdout held no record
};

/// A new empty folder under the test temp dir whose name starts with fp4arena-`tag`- (mkdtemp),
/// or "" on failure. Names made from process ids collide between test binaries running side
/// by side, each in its own PID namespace.
inline std::string unique_temp_dir(const std::string& tag) {
  std::string ignored, dir = ::testing::TempDir();
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return make_private_dir(dir, "fp4arena-" + tag + "-", &ignored);
}

// Runs run_challenge with `args` (plus --no-progress), stdout and stderr into separate
// temporary files, with the compile cache inside the build tree (as testing_util::run_cli).
inline JudgeRun run_judge(const std::vector<std::string>& args) {
  if (!std::getenv("FP4ARENA_CACHE_DIR")) {
    setenv("FP4ARENA_CACHE_DIR", (testing_util::binary_dir() + "/solution-cache").c_str(), 1);
  }
  const std::string tmpl = unique_temp_dir("judge-run");
  if (tmpl.empty()) {
    JudgeRun failed;
    failed.err = std::string("mkdtemp failed: ") + std::strerror(errno);
    return failed;
  }
  std::string out_path = tmpl + "/out", err_path = tmpl + "/err";
  std::vector<std::string> argv_s = {run_challenge_bin()};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  argv_s.push_back("--no-progress");
  std::vector<char*> argv;
  for (std::string& a : argv_s) argv.push_back(&a[0]);
  argv.push_back(nullptr);

  JudgeRun r;
  pid_t pid = fork();
  if (pid < 0) {
    r.err = std::string("fork failed: ") + std::strerror(errno);
    return r;
  }
  if (pid == 0) {
    int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (out < 0 || err < 0) _exit(126);
    dup2(out, 1);
    dup2(err, 2);
    execv(argv[0], argv.data());
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = read_all(out_path);
  r.err = read_all(err_path);
  std::remove(out_path.c_str());
  std::remove(err_path.c_str());
  rmdir(tmpl.c_str());
  // The record (dump(2)) starts at the first line that is exactly "{"; anything the worker
  // printed on stdout comes before it.
  size_t start = r.out.rfind("{\n", 0) == 0 ? 0 : r.out.find("\n{\n");
  if (start != std::string::npos && start != 0) ++start;
  r.record = nlohmann::json::parse(start == std::string::npos ? r.out : r.out.substr(start),
                                   nullptr, /*allow_exceptions=*/false);
  if (r.record.is_discarded()) r.record = nlohmann::json();
  return r;
}

// The record's entry for case `name` (tests and benchmarks), or nullptr.
inline const nlohmann::json* find_case(const nlohmann::json& record, const std::string& name) {
  for (const char* list : {"tests", "benchmarks"}) {
    if (!record.contains(list)) continue;
    for (const nlohmann::json& c : record[list]) {
      if (c.value("name", "") == name) return &c;
    }
  }
  return nullptr;
}

inline std::string text_of(const nlohmann::json& c, const char* key) {
  return c.contains(key) && c[key].is_string() ? c[key].get<std::string>() : "";
}

/// One case's expected verdict, with phrases its reason must and must not contain.
struct CaseVerdict {
  std::string name;
  std::string verdict;
  std::vector<std::string> reason_has = {};
  std::vector<std::string> reason_lacks = {};
};

/// Judges `solution` on exactly `cases` of the challenge in `challenge_dir` with
/// `--action run --json` (plus `extra` arguments), and checks the exit code, the record's
/// `passed`, and each case's verdict and reason. Returns the run for further checks.
inline JudgeRun expect_verdicts(const std::string& challenge_dir, const std::string& solution,
                                int exit_code, const std::vector<CaseVerdict>& cases,
                                const std::vector<std::string>& extra = {}) {
  std::vector<std::string> args = {challenge_dir, "--solution", solution,
                                   "--action",    "run",        "--json"};
  for (const CaseVerdict& c : cases) {
    args.push_back("--case");
    args.push_back(c.name);
  }
  args.insert(args.end(), extra.begin(), extra.end());
  JudgeRun r = run_judge(args);
  const std::string log = "stderr:\n" + r.err;
  EXPECT_EQ(r.exit_code, exit_code) << log;
  if (r.record.is_null()) {
    ADD_FAILURE() << "no record on stdout:\n" << r.out << log;
    return r;
  }
  EXPECT_EQ(r.record.value("passed", true), exit_code == 0) << log;
  for (const CaseVerdict& want : cases) {
    SCOPED_TRACE("case " + want.name);
    const nlohmann::json* got = find_case(r.record, want.name);
    if (!got) {
      ADD_FAILURE() << "not judged\n" << log;
      continue;
    }
    const std::string verdict = text_of(*got, "verdict"), reason = text_of(*got, "reason");
    EXPECT_EQ(verdict, want.verdict) << "reason: " << reason << "\n" << log;
    for (const std::string& part : want.reason_has) {
      EXPECT_TRUE(contains(reason, part)) << "reason: " << reason << "\nmissing: " << part;
    }
    for (const std::string& part : want.reason_lacks) {
      EXPECT_FALSE(contains(reason, part)) << "reason: " << reason << "\nshould not say: " << part;
    }
  }
  return r;
}

/// How many random tests a run or submit of `spec` without --case draws.
inline size_t random_test_count(const Spec& spec) {
  size_t n = 0;
  for (const RandomTestSpec& r : spec.random_tests) n += size_t(r.count);
  return n;
}

/// One fresh case of each random_tests recipe of `spec`, as the names --case takes
/// ("random_0a1b2c3d"): a rung's check meets shapes nobody chose, and its failure report
/// names the case that replays it.
inline std::vector<std::string> fresh_random_cases(const Spec& spec) {
  std::vector<std::string> names;
  std::random_device rd;
  for (const RandomTestSpec& r : spec.random_tests) names.push_back(random_case(r, rd()).name);
  return names;
}

/// A ladder rung's check: judges `solution` with `--action run --json` on every test case of
/// the challenge in `challenge_dir` plus the benchmark `benchmark` (a run without a benchmark
/// has no score, and the judge then reports it as not passed; the run timing keeps it cheap),
/// and expects exit code 0, a record holding every test, and every case passed. Returns the
/// run for further checks.
inline JudgeRun expect_passes_every_test(const std::string& challenge_dir,
                                         const std::string& solution,
                                         const std::string& benchmark) {
  JudgeRun r;
  Spec spec;
  std::string err;
  if (!load_spec(challenge_dir, &spec, &err)) {
    ADD_FAILURE() << err;
    return r;
  }
  // Two timed samples: the check is of correctness (every output of every call is
  // checked), not of speed.
  std::vector<std::string> args = {challenge_dir, "--solution", solution,    "--action",
                                   "run",         "--json",     "--samples", "2"};
  std::vector<std::string> names = fresh_random_cases(spec);
  for (const CaseSpec& c : spec.tests) names.push_back(c.name);
  for (const std::string& name : names) {
    args.push_back("--case");
    args.push_back(name);
  }
  args.push_back("--case");
  args.push_back(benchmark);
  r = run_judge(args);
  EXPECT_EQ(r.exit_code, static_cast<int>(ExitCode::kPassed)) << "stderr:\n" << r.err;
  if (r.record.is_null()) {
    ADD_FAILURE() << "no record on stdout:\n" << r.out << r.err;
    return r;
  }
  EXPECT_EQ(r.record["tests"].size(), names.size());
  for (const char* part : {"tests", "benchmarks"}) {
    for (const nlohmann::json& c : r.record[part]) {
      EXPECT_EQ(text_of(c, "verdict"), "passed")
          << text_of(c, "name") << ": " << text_of(c, "reason");
    }
  }
  return r;
}

/// A kernel's check on shapes the spec's tests do not give it: judges `solution` with
/// `--action test --shapes shapes_file` (every output of one call per shape checked, nothing
/// timed) and expects exit code 0 and a record with every listed shape passed.
inline void expect_passes_every_shape(const std::string& challenge_dir, const std::string& solution,
                                      const std::string& shapes_file) {
  // --action test: every output of one call per shape checked, nothing timed.
  const JudgeRun r = run_judge({challenge_dir, "--solution", solution, "--action", "test",
                                "--shapes", shapes_file, "--json"});
  EXPECT_EQ(r.exit_code, static_cast<int>(ExitCode::kPassed)) << "stderr:\n" << r.err;
  ASSERT_TRUE(r.record.is_object()) << "no record; stderr:\n" << r.err;
  std::ifstream shapes_in(shapes_file);
  const nlohmann::json listed = nlohmann::json::parse(shapes_in);
  ASSERT_EQ(r.record["tests"].size(), listed.size()) << "stderr:\n" << r.err;
  for (const nlohmann::json& s : r.record["tests"]) {
    EXPECT_EQ(s["verdict"], "passed") << s["name"] << ": " << s["reason"];
  }
}

/// How many cases the record judged (tests and benchmarks).
inline size_t judged_cases(const nlohmann::json& record) {
  size_t n = 0;
  for (const char* list : {"tests", "benchmarks"}) {
    if (record.contains(list) && record[list].is_array()) n += record[list].size();
  }
  return n;
}

}  // namespace fp4arena::testing_util
