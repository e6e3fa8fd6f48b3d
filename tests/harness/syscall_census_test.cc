// fp4arena_syscall_census (tests/tools/syscall_census.cc) follows a command's processes and
// counts the system calls of those running a worker (fp4arena_worker, or python3 running the
// Python worker's script). Without a GPU the worker stops
// before its filter; a worker started by hand exits at once, which is enough to see the
// census follow an exec through a shell and count the worker's calls alone.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "harness/process.h"
#include "tests/judge_run.h"
#include "tests/test_util.h"

namespace fp4arena {
namespace {

using testing_util::binary_dir;
using testing_util::unique_temp_dir;

// The census of `shell_command` (run by /bin/sh) into a fresh folder's census.json: the
// census's exit code, its output in *text and the JSON in *census (null when none was
// written). *ptrace_refused where this machine does not let the census trace.
int census_of(const std::string& shell_command, std::string* text, nlohmann::json* census,
              bool* ptrace_refused) {
  const std::string dir = unique_temp_dir("census");
  const std::string out = dir + "/census.json";
  const int code = run_capture(
      {binary_dir() + "/fp4arena_syscall_census", out, "--", "/bin/sh", "-c", shell_command}, text);
  *ptrace_refused = code == 2 && text->find("did not stop for tracing") != std::string::npos;
  std::ifstream in(out);
  *census = in.good() ? nlohmann::json::parse(in, nullptr, false) : nlohmann::json();
  if (!dir.empty()) remove_tree(dir);
  return code;
}

TEST(SyscallCensus, CountsTheWorkersCallsThroughAShellAndPassesItsExitStatusOn) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "built with the sanitizers: their runtime makes calls of its own in the worker "
                  "(LeakSanitizer's tracer), which this census would count";
#endif
  std::string text;
  nlohmann::json census;
  bool ptrace_refused = false;
  const int code = census_of("echo shell; " + binary_dir() + "/fp4arena_worker", &text, &census,
                             &ptrace_refused);
  if (ptrace_refused) GTEST_SKIP() << "ptrace is not allowed here: " << text;
  // The worker started by hand says so and exits 2; the shell passes that on, and so does the
  // census.
  EXPECT_EQ(code, 2) << text;
  EXPECT_NE(text.find("started by run_challenge, not by hand"), std::string::npos) << text;
  ASSERT_TRUE(census.is_object()) << text;
  EXPECT_EQ(census["workers"], 1) << census.dump();
  // Only the worker's own calls: it wrote its message and exited; the shell's fork is not
  // among them (the shell execs the worker in a child it forked).
  const nlohmann::json& before = census["before_filter"];
  EXPECT_FALSE(before.empty()) << census.dump();
  EXPECT_TRUE(before.contains("write") || before.contains("1")) << census.dump();
  EXPECT_TRUE(before.contains("exit_group") || before.contains("231")) << census.dump();
  EXPECT_FALSE(before.contains("wait4") || before.contains("61")) << census.dump();
  EXPECT_TRUE(census["after_filter"].empty()) << census.dump();
  auto usage = run_capture({binary_dir() + "/fp4arena_syscall_census", "census.json"}, &text);
  EXPECT_EQ(usage, 2);
  EXPECT_NE(text.find("usage: fp4arena_syscall_census OUT.json -- COMMAND"), std::string::npos);
}

// python3 running the Python worker's host script is a worker too (started by hand, the
// script says so and exits 2); python3 running anything else is not.
TEST(SyscallCensus, CountsThePythonWorker) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "built with the sanitizers (see the test above)";
#endif
  std::string text;
  nlohmann::json census;
  bool ptrace_refused = false;
  const int code =
      census_of("python3 -c 'print(1)'; python3 " + binary_dir() + "/fp4arena_python_worker.py",
                &text, &census, &ptrace_refused);
  if (ptrace_refused) GTEST_SKIP() << "ptrace is not allowed here: " << text;
  EXPECT_EQ(code, 2) << text;
  EXPECT_NE(text.find("started by run_challenge, not by hand"), std::string::npos) << text;
  ASSERT_TRUE(census.is_object()) << text;
  EXPECT_EQ(census["workers"], 1) << census.dump();
  EXPECT_FALSE(census["before_filter"].empty()) << census.dump();
}

}  // namespace
}  // namespace fp4arena
