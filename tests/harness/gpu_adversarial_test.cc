// The adversarial suite: regression tests for the judge (ctest label "gpu"; every test skips
// without a GPU). Each fixture in tests/solutions/adversarial/ is a cheat or a classic bug that
// the judge must catch with one specific verdict and reason (harness/judge.cc,
// Session::call_once); two controls (correct.cu, correct_plus_100us.cu) must pass, and the
// second must time about 100 us slower than the first.
//
// Every run is `run_challenge ... --action run --json` with a --case filter that makes the
// cheat visible and keeps the run short: functional cases are cheap, a benchmark with the naive
// kernel costs ~100-265 ms per call and `run` makes up to 2 warm-up + 15 timed calls, so at
// most one benchmark (rev1, the smaller) per fixture. stdout (the record) and stderr (the
// human summary, plus anything the worker prints) are captured separately. The worker's
// default --buffers ring is assumed except where a test says otherwise.
//
// Where the expected mismatch counts come from: the structural cheats (rows never written,
// one NaN, a byte past the end, a zeroed input) give counts that follow from the case's shape
// alone. The arithmetic cheats (half accumulation, FP8 products, nibble order, ignored scales)
// were simulated on the host with the same __host__ __device__ code as the kernel
// (naive_kernel.cuh) against the CPU oracle, and the cases below are ones where they fail by a
// wide margin; only "elements outside atol" is asserted for those, not exact counts.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <future>
#include <iostream>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "harness/judge.h"
#include "harness/process.h"
#include "tests/judge_run.h"
#include "tests/test_util.h"

namespace fp4arena {
namespace {

using testing_util::challenge_dir;
using testing_util::contains;
using testing_util::find_case;
using testing_util::JudgeRun;
using testing_util::no_gpu_reason;
using testing_util::read_all;
using testing_util::run_challenge_bin;
using testing_util::run_judge;
using testing_util::source_dir;
using testing_util::text_of;
using testing_util::unique_temp_dir;
using testing_util::worker_processes;

constexpr int kPassed = static_cast<int>(ExitCode::kPassed);
constexpr int kFailed = static_cast<int>(ExitCode::kFailed);              // wrong answer, integrity
constexpr int kRuntimeError = static_cast<int>(ExitCode::kRuntimeError);  // crash, CUDA, timeout

std::string adversarial(const std::string& stem) {
  return source_dir() + "/tests/solutions/adversarial/" + stem + ".cu";
}

// ---- The table: one fixture, the cases it is judged on, what each case must get ---------

// A case's verdict, phrases its reason must contain, and phrases it must not.
using CaseExpectation = testing_util::CaseVerdict;

struct Cheat {
  std::string id;                  // test name suffix
  std::string solution;            // path of the fixture
  std::vector<std::string> extra;  // more options (--timeout 3)
  int exit_code;                   // run_challenge's exit status
  std::vector<CaseExpectation> cases;
};

void PrintTo(const Cheat& c, std::ostream* os) {
  *os << c.id;
}

// Reasons, as Session::call_once and validate_output word them (harness/judge.cc,
// harness/validate.cc, harness/worker_client.cc); a benchmark's reason is prefixed with
// "call N (seed S): ".
const char kOutside[] = "elements outside atol 0.1 + rtol 0.05";
const char kEscape[] = "work was left running outside the default stream";

std::vector<Cheat> cheats() {
  return {
      // Work on a private non-blocking stream: the stop event completes at once and the
      // device stays busy for the whole kernel (~25 ms on large_k_positive, ~100 ms on rev1),
      // far above max(50 us, 5% of the ~0 us timed).
      {"stream_escape",
       adversarial("stream_escape"),
       {},
       kFailed,
       {{"large_k_positive", "timing_escape", {"the GPU stayed busy for", kEscape}, {}},
        {"rev1", "timing_escape", {"call 1 (seed 202): the GPU stayed busy for", kEscape}, {}}}},
      // The detached thread sleeps 50 ms; a call of the 2x2x32 example is over long before.
      {"thread_escape",
       adversarial("thread_escape"),
       {},
       kFailed,
       {{"example",
         "thread_escape",
         {"solve() returned with", "thread(s) it started still running"},
         {}}}},
      // alpha_1 and alpha_1_64 share the shape 100x120x256 (run in spec order); rev1's first
      // call computes (case seed 202), its second (a warm-up) writes nothing.
      {"work_only_first_call",
       adversarial("work_only_first_call"),
       {},
       kFailed,
       {{"alpha_1", "passed", {}, {}},
        {"alpha_1_64",
         "wrong_answer",
         {"12000 of 12000 " + std::string(kOutside) + "; 12000 never written"},
         {}},
        {"rev1",
         "wrong_answer",
         {"call 2 (seed ",
          "16777216 of 16777216 " + std::string(kOutside) + "; 16777216 never written"},
         {}}}},
      // b_scales is N*K/16 = 135*3 = 405 bytes; its byte 0 is a scale in [0.5, 2), never 0.
      {"input_tamper",
       adversarial("input_tamper"),
       {},
       kFailed,
       {{"tails_77x135x48",
         "input_modified",
         {"solve() modified its input 'b_scales' (first changed byte at 0 of 405)"},
         {}}}},
      // c is 77*135 halves = 20790 bytes; the flipped half is the trailing canary's first.
      {"write_past_end",
       adversarial("write_past_end"),
       {},
       kFailed,
       {{"tails_77x135x48",
         "out_of_bounds_write",
         {"solve() wrote past the end of 'c' (20790 bytes)"},
         {}}}},
      // Rows M/2..M-1 unwritten: 200x1 -> 100 of 200; 77x135 -> 39 rows, 5265 of 10395.
      {"half_rows",
       adversarial("half_rows"),
       {},
       kFailed,
       {{"column_vector",
         "wrong_answer",
         {"100 of 200 " + std::string(kOutside) + "; 100 never written"},
         {"NaN/Inf"}},
        {"tails_77x135x48",
         "wrong_answer",
         {"5265 of 10395 " + std::string(kOutside) + "; 5265 never written"},
         {"NaN/Inf"}}}},
      {"nan_output",
       adversarial("nan_output"),
       {},
       kFailed,
       {{"tails_77x135x48",
         "wrong_answer",
         {"1 of 10395 " + std::string(kOutside) + "; 1 NaN/Inf"},
         {"never written"}}}},
      // Two cases: the judge kills the hung worker and starts a fresh one for the second.
      {"infinite_loop",
       adversarial("infinite_loop"),
       {"--timeout", "3"},
       kRuntimeError,
       {{"example", "timeout", {"solve() gave no answer within 3"}, {}},
        {"k16_only", "timeout", {"solve() gave no answer within 3"}, {}}}},
      // SIGSTOP on itself: a stopped worker answers nothing, so it is a timeout (3 s here),
      // killed though stopped; a fresh worker takes the second case (and stops again).
      {"stop_self",
       adversarial("stop_self"),
       {"--timeout", "3"},
       kRuntimeError,
       {{"example", "timeout", {"solve() gave no answer within 3"}, {}},
        {"k16_only", "timeout", {"solve() gave no answer within 3"}, {}}}},
      // A length prefix of almost 4 GiB and junk on the channel: a broken channel (nothing of
      // that size allocated), the worker's failure, a fresh worker for the second case.
      {"garbage_channel",
       adversarial("garbage_channel"),
       {},
       kRuntimeError,
       {{"example", "crashed", {"broken channel", "message too large (4294967280 bytes)"}, {}},
        {"k16_only", "crashed", {"broken channel"}, {}}}},
      // The existing host-crash fixture (not duplicated here).
      {"host_segfault",
       source_dir() + "/tests/solutions/crash_host_segfault.cu",
       {},
       kRuntimeError,
       {{"example", "crashed", {"the worker running solve() was killed by signal 11"}, {}}}},
      // The fault surfaces at cudaEventSynchronize(stop) in the worker (cuda_failure).
      {"illegal_address",
       adversarial("illegal_address"),
       {},
       kRuntimeError,
       {{"example", "cuda_error", {"cudaErrorIllegalAddress", "illegal memory access"}, {}},
        {"k16_only", "cuda_error", {"cudaErrorIllegalAddress", "illegal memory access"}, {}}}},
      {"exit_zero",
       adversarial("exit_zero"),
       {},
       kRuntimeError,
       {{"example",
         "early_exit",
         {"the worker exited with status 0 while solve() was running"},
         {}}}},
      // Simulated: 74% of sampled large_k_positive outputs out of tolerance (finite; the half
      // sum stalls), every gaussian_outliers output Inf (the half sum overflows).
      {"half_accumulation",
       adversarial("half_accumulation"),
       {},
       kFailed,
       {{"large_k_positive", "wrong_answer", {kOutside}, {"never written"}},
        {"gaussian_outliers", "wrong_answer", {kOutside, "NaN/Inf"}, {"never written"}}}},
      // Simulated: alpha_1 3635 of 12000, tails_383x511x528 23220 of 195713 out of tolerance.
      // (large_k_positive passes: with all terms positive the FP8 rounding errors stay well
      // inside rtol 0.05.)
      {"fp8_products",
       adversarial("fp8_products"),
       {},
       kFailed,
       {{"alpha_1", "wrong_answer", {kOutside}, {"never written", "NaN/Inf"}},
        {"tails_383x511x528", "wrong_answer", {kOutside}, {"never written", "NaN/Inf"}}}},
      // Simulated: 9792 of 10395 and 4056 of 4608.
      {"wrong_nibble_order_b",
       adversarial("wrong_nibble_order_b"),
       {},
       kFailed,
       {{"tails_77x135x48", "wrong_answer", {kOutside}, {"never written", "NaN/Inf"}},
        {"k16_only", "wrong_answer", {kOutside}, {"never written", "NaN/Inf"}}}},
      // Simulated: 4 of 4 and 8399 of 10395.
      {"ignores_scales",
       adversarial("ignores_scales"),
       {},
       kFailed,
       {{"example", "wrong_answer", {kOutside}, {"never written", "NaN/Inf"}},
        {"tails_77x135x48", "wrong_answer", {kOutside}, {"never written", "NaN/Inf"}}}},
      // A load-time constructor halves every time the worker measures (it overwrites the
      // start of the worker's static cudaEventElapsedTime with a jump; a GOT patch where the
      // runtime is dynamic). The worker's report is a diagnostic: every case passes at its
      // honest speed (ForgedReportsGainNothing compares the figures).
      {"forge_event_time",
       adversarial("forge_event_time"),
       {},
       kPassed,
       {{"example", "passed", {}, {}}, {"rev1", "passed", {}, {}}}},
      // Socket, fork, exec and files written outside the private folder, from inside solve():
      // the sandbox refuses them all; the fixture writes a NaN (wrong_answer) if any got
      // through, or if its private folder ($TMPDIR) is not writable.
      // (A run of tests alone has no score; its result is the tests'.)
      {"escape_sandbox",
       adversarial("escape_sandbox"),
       {},
       kPassed,
       {{"example", "passed", {}, {}}, {"k16_only", "passed", {}, {}}}},
      // A constructor that crashes when the worker loads the solution: the solution's crash.
      {"constructor_crash",
       adversarial("constructor_crash"),
       {},
       kRuntimeError,
       {{"example", "crashed", {"killed by signal 11", "while loading the solution"}, {}}}},
      // The control: the shared kernel passes every case the cheats above are judged on.
      {"correct",
       adversarial("correct"),
       {},
       kPassed,
       {{"example", "passed", {}, {}},
        {"k16_only", "passed", {}, {}},
        {"column_vector", "passed", {}, {}},
        {"tails_77x135x48", "passed", {}, {}},
        {"tails_383x511x528", "passed", {}, {}},
        {"alpha_1", "passed", {}, {}},
        {"alpha_1_64", "passed", {}, {}},
        {"gaussian_outliers", "passed", {}, {}},
        {"large_k_positive", "passed", {}, {}},
        {"rev1", "passed", {}, {}}}},
  };
}

class GpuAdversarial : public ::testing::TestWithParam<Cheat> {};

TEST_P(GpuAdversarial, GetsTheRightVerdict) {
  FP4ARENA_SKIP_WITHOUT_GPU();
  const Cheat& cheat = GetParam();
  JudgeRun r = testing_util::expect_verdicts(challenge_dir(), cheat.solution, cheat.exit_code,
                                             cheat.cases, cheat.extra);
  const std::string log = "stderr:\n" + r.err;
  EXPECT_EQ(testing_util::judged_cases(r.record), cheat.cases.size()) << log;
  for (const CaseExpectation& want : cheat.cases) {
    const nlohmann::json* got = find_case(r.record, want.name);
    if (!got || want.verdict == "passed") continue;
    // The summary a person reads says the same (Session's print_failure).
    EXPECT_TRUE(contains(r.err, text_of(*got, "verdict") + ": " + text_of(*got, "reason")))
        << "case " << want.name << "\n"
        << log;
  }
  EXPECT_EQ(worker_processes(), 0);
}

// Test names end in the fixture's index; ctest shows the fixture's id instead (PrintTo and
// gtest_discover_tests' pretty values), e.g. Adversarial/GpuAdversarial.GetsTheRightVerdict/
// stream_escape.
INSTANTIATE_TEST_SUITE_P(Adversarial, GpuAdversarial, ::testing::ValuesIn(cheats()));

// ---- Replays ------------------------------------------------------------------------------

// The calls on which a fixture printed "<tag>: REPLAYED an earlier output on call N".
std::vector<int> replayed_calls(const std::string& err, const std::string& tag) {
  std::vector<int> calls;
  std::regex re(tag + R"(: REPLAYED an earlier output on call (\d+))");
  for (std::sregex_iterator it(err.begin(), err.end(), re), end; it != end; ++it) {
    calls.push_back(std::stoi((*it)[1].str()));
  }
  return calls;
}

// Replay keyed by the (a, c) pointers; every benchmark call after the first gets fresh random
// inputs (judge.cc, run_benchmark), so a replay can never pass.
//
// --buffers ring (the default): the worker keeps a window's buffer sets while the window's
// shape and number of calls stay the same, so on rev1 (the naive kernel: about 0.1 s a call,
// one call per window) every window gets the first window's pointers: the replay is certain,
// on the second call, and must fail there.
TEST(GpuAdversarial, ReplayByPointerFailsOnTheFirstReuse) {
  FP4ARENA_SKIP_WITHOUT_GPU();
  JudgeRun r = run_judge({challenge_dir(), "--solution", adversarial("replay_by_pointer"),
                          "--action", "run", "--json", "--case", "rev1"});
  const std::string log = "stderr:\n" + r.err;
  EXPECT_EQ(r.exit_code, kFailed) << log;
  ASSERT_FALSE(r.record.is_null()) << log;
  EXPECT_EQ(r.record.value("buffers", ""), "ring");
  const nlohmann::json* rev1 = find_case(r.record, "rev1");
  ASSERT_NE(rev1, nullptr) << log;
  std::string verdict = text_of(*rev1, "verdict"), reason = text_of(*rev1, "reason");
  EXPECT_EQ(replayed_calls(r.err, "replay_by_pointer"), std::vector<int>{2}) << log;
  EXPECT_EQ(verdict, "wrong_answer") << reason << "\n" << log;
  EXPECT_EQ(reason.rfind("call 2 (seed ", 0), 0u) << reason;
  EXPECT_TRUE(contains(reason, kOutside)) << reason;
  EXPECT_EQ(worker_processes(), 0);
}

// --buffers fresh: new allocations every window, the previous window's kept until this
// window's exist. Whether the allocator ever hands a later call an earlier call's addresses is not
// the judge's to decide, so what is assertable is: no replay on call 2 (never the addresses of the
// call before), and a replay never passes. Without any replay the fixture computes honestly
// and passes.
TEST(GpuAdversarial, ReplayByPointerNeverPassesWithFreshBuffers) {
  FP4ARENA_SKIP_WITHOUT_GPU();
  JudgeRun r = run_judge({challenge_dir(), "--solution", adversarial("replay_by_pointer"),
                          "--action", "run", "--json", "--case", "rev1", "--buffers", "fresh"});
  const std::string log = "stderr:\n" + r.err;
  ASSERT_FALSE(r.record.is_null()) << log;
  EXPECT_EQ(r.record.value("buffers", ""), "fresh");
  const nlohmann::json* rev1 = find_case(r.record, "rev1");
  ASSERT_NE(rev1, nullptr) << log;
  std::string verdict = text_of(*rev1, "verdict"), reason = text_of(*rev1, "reason");
  std::vector<int> replays = replayed_calls(r.err, "replay_by_pointer");
  if (replays.empty()) {
    std::cerr << "note: the allocator never repeated an (a, c) pair, so nothing was replayed\n";
    EXPECT_EQ(verdict, "passed") << reason << "\n" << log;
    EXPECT_EQ(r.exit_code, kPassed) << log;
  } else {
    EXPECT_GE(replays.front(), 3) << "call " << replays.front()
                                  << " got the buffers of the call before it\n"
                                  << log;
    EXPECT_EQ(verdict, "wrong_answer") << reason << "\n" << log;
    EXPECT_TRUE(contains(reason, kOutside)) << reason;
    // The first replay is the call that failed (the benchmark stops there).
    EXPECT_EQ(reason.rfind("call " + std::to_string(replays.front()) + " (seed ", 0), 0u) << reason;
    EXPECT_EQ(r.exit_code, kFailed) << log;
  }
  EXPECT_EQ(worker_processes(), 0);
}

// Replay keyed by 64 bytes of `a`: the judge draws fresh inputs for every benchmark call
// (judge.cc, run_benchmark), so the key never repeats and the fixture computes every call:
// it gains nothing and passes. A replay would mean the judge repeated a call's inputs; it
// must then at least not pass.
TEST(GpuAdversarial, ReplayByContentGainsNothing) {
  FP4ARENA_SKIP_WITHOUT_GPU();
  JudgeRun r = run_judge({challenge_dir(), "--solution", adversarial("replay_by_content"),
                          "--action", "run", "--json", "--case", "rev1"});
  const std::string log = "stderr:\n" + r.err;
  ASSERT_FALSE(r.record.is_null()) << log;
  const nlohmann::json* rev1 = find_case(r.record, "rev1");
  ASSERT_NE(rev1, nullptr) << log;
  std::string verdict = text_of(*rev1, "verdict"), reason = text_of(*rev1, "reason");
  std::vector<int> replays = replayed_calls(r.err, "replay_by_content");
  EXPECT_TRUE(replays.empty()) << "the judge repeated a benchmark call's inputs\n" << log;
  if (!replays.empty()) {
    EXPECT_EQ(verdict, "wrong_answer") << reason << "\n" << log;
  } else {
    EXPECT_EQ(verdict, "passed") << reason << "\n" << log;
    EXPECT_EQ(r.exit_code, kPassed) << log;
    // run's quick rule: 2 warm-ups and at least 5 timed calls, each with new inputs.
    EXPECT_GE(rev1->value("samples", 0), 5);
    EXPECT_GE(rev1->value("calls", 0), 7);
  }
  EXPECT_EQ(worker_processes(), 0);
}

// ---- Channel takeover ---------------------------------------------------------------------

// channel_takeover.cu answers its first call by hand (it never returns from solve()) and then
// serves the worker's channel itself. With the judge's window the worker must say "queued",
// then stay silent until the judge's "settle": the fixture's reply arrives while the window
// still waits for a done word nobody wrote, so the judge ends the window itself and reports
// the worker's failure; a fresh worker gets the same for the next case. The judge's clock and
// its snapshot of the outputs never depend on what the worker says.
TEST(GpuAdversarial, ChannelTakeoverGainsNothing) {
  FP4ARENA_SKIP_WITHOUT_GPU();
  JudgeRun r = run_judge({challenge_dir(), "--solution", adversarial("channel_takeover"),
                          "--action", "run", "--json", "--case", "example", "--case", "rev1"});
  const std::string log = "stderr:\n" + r.err;
  EXPECT_NE(r.exit_code, kPassed) << log;
  ASSERT_FALSE(r.record.is_null()) << log;
  for (const char* name : {"example", "rev1"}) {
    const nlohmann::json* c = find_case(r.record, name);
    ASSERT_NE(c, nullptr) << name << "\n" << log;
    const std::string verdict = text_of(*c, "verdict"), reason = text_of(*c, "reason");
    EXPECT_EQ(verdict, "crashed") << name << ": " << reason << "\n" << log;
    EXPECT_TRUE(contains(reason, "answered before the judge's window had ended"))
        << name << ": " << reason;
  }
  EXPECT_EQ(worker_processes(), 0);
}

// ---- Timing control ---------------------------------------------------------------------

// The timing fixtures run on a copy of the spec whose only benchmark is 128x128x256 (a few
// tens of us with the naive kernel, where the spec's benchmarks take ~0.1 s and 100 us is
// noise), with submit's full stopping rule (cheap on so small a case).
// reach_the_judge.cu probes, from inside solve(), what could read the judge's seed, stop or
// kill it, or leave the worker; every probe must be refused and the solution still passes.
// Reading the judge's /proc environ is refused by the worker's own user (a root judge) or by
// the judge being not dumpable (a judge of the worker's user); only a root judge whose worker
// had to keep the judge's user (the record's sandbox says why) lets it through.
// The probes reach_the_judge printed ("reach_the_judge: NAME refused" or "... ALLOWED"): how
// many were refused, counting as refused the judge's /proc environ that only a root judge whose
// worker had to keep the judge's user (the record's sandbox says why) lets through. Any other
// probe let through fails the test.
int refused_probes(const JudgeRun& r, const std::string& log) {
  const bool root_as_root =
      geteuid() == 0 && !contains(text_of(r.record, "sandbox"), "its own user");
  std::regex line(R"(reach_the_judge: (.+) (refused|ALLOWED))");
  int refused = 0;
  for (auto it = std::sregex_iterator(r.err.begin(), r.err.end(), line);
       it != std::sregex_iterator(); ++it) {
    const std::string name = (*it)[1], answer = (*it)[2];
    if (answer == "refused") {
      ++refused;
    } else {
      EXPECT_TRUE(root_as_root && contains(name, "environ")) << name << " got through\n" << log;
    }
  }
  return refused + (root_as_root ? 1 : 0);
}

TEST(GpuAdversarial, ProbesOfTheJudgeAreRefused) {
  FP4ARENA_SKIP_WITHOUT_GPU();
  JudgeRun r = run_judge({challenge_dir(), "--solution", adversarial("reach_the_judge"), "--action",
                          "run", "--json", "--case", "example", "--case", "rev1"});
  const std::string log = "stderr:\n" + r.err;
  ASSERT_EQ(r.exit_code, kPassed) << log;
  const int refused = refused_probes(r, log);
  EXPECT_EQ(refused >= 19, true) << "probes seen: " << refused << "\n" << log;
  EXPECT_EQ(worker_processes(), 0);
}

// Two judges on one GPU, as ci_leaderboard --gpus runs them side by side: while one judges the
// honest kernel on every case, the other judges reach_the_judge, whose probes include signal 0
// to every other judge and worker it finds. Every probe is refused, and the honest judge's
// record is complete and passed.
TEST(GpuAdversarial, TwoJudgesOnOneGpuCannotReachEachOther) {
  FP4ARENA_SKIP_WITHOUT_GPU();
  auto honest = std::async(std::launch::async, [] {
    return run_judge(
        {challenge_dir(), "--solution", adversarial("correct"), "--action", "run", "--json"});
  });
  for (int i = 0; i < 600 && worker_processes() == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  JudgeRun attacker = run_judge({challenge_dir(), "--solution", adversarial("reach_the_judge"),
                                 "--action", "run", "--json", "--case", "example"});
  JudgeRun other = honest.get();
  EXPECT_TRUE(contains(attacker.err, "reach_the_judge: kill(another judge or worker, 0) refused"))
      << attacker.err;
  EXPECT_FALSE(contains(attacker.err, "kill(another judge or worker, 0) ALLOWED")) << attacker.err;
  EXPECT_TRUE(contains(attacker.err, "PASS  example")) << attacker.err;
  const std::string log = "stderr:\n" + other.err;
  ASSERT_EQ(other.exit_code, kPassed) << log;
  Spec spec;
  std::string err;
  ASSERT_TRUE(load_spec(challenge_dir(), &spec, &err)) << err;
  EXPECT_EQ(other.record["tests"].size(), spec.tests.size() + testing_util::random_test_count(spec))
      << log;
  EXPECT_EQ(other.record["benchmarks"].size(), spec.benchmarks.size()) << log;
  for (const char* part : {"tests", "benchmarks"}) {
    for (const auto& c : other.record[part]) EXPECT_EQ(text_of(c, "verdict"), "passed") << log;
  }
  EXPECT_EQ(worker_processes(), 0);
}

// The allowlist filter, the default, leaves every call CUDA and a solution's host code make
// on a real GPU working, and still refuses every probe of the judge.
TEST(GpuAdversarial, TheAllowlistFilterRunsASolutionAndRefusesTheProbes) {
  FP4ARENA_SKIP_WITHOUT_GPU();
  JudgeRun r =
      run_judge({challenge_dir(), "--solution", adversarial("reach_the_judge"), "--action", "run",
                 "--json", "--case", "example", "--case", "tails_77x135x48", "--case", "rev1"});
  const std::string log = "stderr:\n" + r.err;
  ASSERT_EQ(r.exit_code, kPassed) << log;
  EXPECT_TRUE(contains(text_of(r.record, "sandbox"), "seccomp allowlist")) << log;
  refused_probes(r, log);
  EXPECT_EQ(worker_processes(), 0);
}

// shutdown_channel.cu shuts the worker's end of the channel down on its second call: the
// judge must not die of SIGPIPE (exit 141), must give that case the worker's failure, and
// must finish the run with a record of every case.
TEST(GpuAdversarial, AWorkerThatShutsItsChannelDownCannotEndTheJudge) {
  FP4ARENA_SKIP_WITHOUT_GPU();
  JudgeRun r = run_judge({challenge_dir(), "--solution", adversarial("shutdown_channel"),
                          "--action", "run", "--json", "--case", "example", "--case", "rev1"});
  const std::string log = "stderr:\n" + r.err;
  ASSERT_NE(r.exit_code, 141) << "the judge died of SIGPIPE\n" << log;
  ASSERT_FALSE(r.record.is_null()) << log;
  EXPECT_EQ(r.exit_code, kRuntimeError) << log;
  int failed = 0, passed = 0;
  for (const char* part : {"tests", "benchmarks"}) {
    for (const auto& t : r.record.value(part, nlohmann::json::array())) {
      const std::string v = text_of(t, "verdict");
      failed += v == "crashed" || v == "early_exit" || v == "timeout";
      passed += v == "passed";
    }
  }
  EXPECT_GE(failed, 1) << log;
  EXPECT_GE(passed, 1) << "the run went on with a fresh worker\n" << log;
  EXPECT_EQ(worker_processes(), 0);
}

// tails_only_listed.cu writes all of c at the shapes spec.json names and leaves the M % 32
// tail rows unwritten at any other: every named case passes, and the run's random tests
// (shapes drawn afresh) fail exactly where M % 32 != 0. The failing case's name replays it.
TEST(GpuAdversarial, RandomShapesCatchAKernelTunedToTheListedOnes) {
  FP4ARENA_SKIP_WITHOUT_GPU();
  Spec spec;
  std::string err;
  ASSERT_TRUE(load_spec(challenge_dir(), &spec, &err)) << err;
  JudgeRun r = run_judge({challenge_dir(), "--solution", adversarial("tails_only_listed"),
                          "--action", "run", "--json"});
  const std::string log = "stderr:\n" + r.err;
  ASSERT_FALSE(r.record.is_null()) << log;
  size_t random = 0, tails = 0, caught = 0;
  std::string replay;
  for (const auto& t : r.record["tests"]) {
    const std::string name = text_of(t, "name"), verdict = text_of(t, "verdict");
    CaseSpec drawn;
    if (!random_case_named(spec, name, &drawn)) {
      EXPECT_EQ(verdict, "passed") << name << ": " << text_of(t, "reason");
      continue;
    }
    ++random;
    EXPECT_EQ(t["dims"]["M"].get<int64_t>(), drawn.dims.at("M")) << name;
    const bool tail = drawn.dims.at("M") % 32 != 0;
    tails += tail;
    if (verdict == "wrong_answer" && contains(text_of(t, "reason"), "never written")) {
      ++caught;
      if (replay.empty()) replay = name;
    }
    EXPECT_EQ(verdict, tail ? "wrong_answer" : "passed") << name;
  }
  EXPECT_EQ(random, 3u) << log;
  EXPECT_EQ(caught, tails) << log;
  EXPECT_EQ(r.exit_code, tails > 0 ? kFailed : kPassed) << log;
  if (replay.empty()) return;  // all three drawn M a multiple of 32: about 1 run in 33000
  JudgeRun again = run_judge({challenge_dir(), "--solution", adversarial("tails_only_listed"),
                              "--action", "run", "--json", "--case", replay});
  ASSERT_FALSE(again.record.is_null()) << again.err;
  ASSERT_EQ(again.record["tests"].size(), 1u) << again.err;
  EXPECT_EQ(text_of(again.record["tests"][0], "name"), replay);
  EXPECT_EQ(text_of(again.record["tests"][0], "verdict"), "wrong_answer") << again.err;
  EXPECT_EQ(worker_processes(), 0);
}

// exit_between_calls.cu arms a one-second alarm on its first call: each worker dies of
// SIGALRM a second later, between calls or in one. Every case still gets a verdict, the first
// (quick) ones pass, and the death is the solution's: exit kRuntimeError, never a judge crash.
TEST(GpuAdversarial, AWorkerThatDiesBetweenCallsCannotEndTheJudge) {
  FP4ARENA_SKIP_WITHOUT_GPU();
  JudgeRun r = run_judge({challenge_dir(), "--solution", adversarial("exit_between_calls"),
                          "--action", "run", "--json", "--case", "example", "--case", "k16_only",
                          "--case", "large_k_positive", "--case", "rev1"});
  const std::string log = "stderr:\n" + r.err;
  ASSERT_FALSE(r.record.is_null()) << log;
  EXPECT_EQ(r.exit_code, kRuntimeError) << log;
  EXPECT_EQ(testing_util::judged_cases(r.record), 4u) << log;
  int died = 0;
  for (const char* name : {"example", "k16_only", "large_k_positive", "rev1"}) {
    const nlohmann::json* c = find_case(r.record, name);
    ASSERT_NE(c, nullptr) << name << "\n" << log;
    const std::string verdict = text_of(*c, "verdict");
    EXPECT_TRUE(verdict == "passed" || verdict == "crashed" || verdict == "early_exit")
        << name << ": " << verdict << ": " << text_of(*c, "reason");
    died += verdict != "passed";
  }
  EXPECT_EQ(text_of(*find_case(r.record, "example"), "verdict"), "passed") << log;
  EXPECT_GE(died, 1) << log;
  EXPECT_TRUE(contains(r.err, "signal 14")) << log;
  EXPECT_EQ(worker_processes(), 0);
}

class GpuSmallBenchmark : public ::testing::Test {
 protected:
  void SetUp() override {
    FP4ARENA_SKIP_WITHOUT_GPU();
    dir_ = unique_temp_dir("adversarial-timing");
    ASSERT_FALSE(dir_.empty()) << "mkdtemp failed";
    std::string err;
    ASSERT_TRUE(make_dirs(dir_, &err)) << err;
    std::ifstream in(challenge_dir() + "/spec.json");
    nlohmann::json spec = nlohmann::json::parse(in);
    spec["tests"] = nlohmann::json::array({{{"name", "tiny"},
                                            {"generator", "uniform"},
                                            {"seed", 300},
                                            {"M", 16},
                                            {"N", 16},
                                            {"K", 32}}});
    spec["benchmarks"] = nlohmann::json::array({{{"name", "small"},
                                                 {"generator", "uniform"},
                                                 {"seed", 301},
                                                 {"M", 128},
                                                 {"N", 128},
                                                 {"K", 256}}});
    std::ofstream out(dir_ + "/spec.json");
    out << spec.dump(2) << "\n";
    ASSERT_TRUE(out.good());
  }
  void TearDown() override {
    if (dir_.empty()) return;
    std::remove((dir_ + "/spec.json").c_str());
    rmdir(dir_.c_str());
  }
  // The "small" benchmark entry of a submit of adversarial fixture `stem`.
  void judged(const std::string& stem, nlohmann::json* small, std::string* stderr_text = nullptr) {
    std::string record = dir_ + "/" + stem + ".json";
    JudgeRun r = run_judge({dir_, "--solution", adversarial(stem), "--action", "submit",
                            "--no-yardstick", "--output", record});
    std::string log = "stderr:\n" + r.err;
    if (stderr_text) *stderr_text = r.err;
    ASSERT_EQ(r.exit_code, kPassed) << log;
    std::ifstream in(record);
    ASSERT_TRUE(in.good()) << "no record at " << record << "\n" << log;
    nlohmann::json rec = nlohmann::json::parse(in);
    std::remove(record.c_str());
    const nlohmann::json* b = find_case(rec, "small");
    ASSERT_NE(b, nullptr) << log;
    ASSERT_EQ(text_of(*b, "verdict"), "passed") << log;
    EXPECT_GE(b->value("samples", 0), 10);  // submit's min_samples
    *small = *b;
    std::cerr << stem << ": median " << b->value("median_ms", 0.0) * 1000.0 << " us, the worker "
              << "said " << b->value("worker_reported_median_ms", 0.0) * 1000.0 << " us, "
              << b->value("samples", 0) << " samples of " << b->value("calls_per_sample", 0)
              << " calls\n";
  }
  std::string dir_;
};

// correct_plus_100us.cu spins 100 us of %globaltimer after the real work on the same stream;
// the judge's events must see it.
TEST_F(GpuSmallBenchmark, TimedWindowCoversAllDefaultStreamWork) {
  nlohmann::json base, slow;
  ASSERT_NO_FATAL_FAILURE(judged("correct", &base));
  ASSERT_NO_FATAL_FAILURE(judged("correct_plus_100us", &slow));
  const double base_us = base["median_ms"].get<double>() * 1000.0;
  const double slow_us = slow["median_ms"].get<double>() * 1000.0;
  EXPECT_NEAR(slow_us - base_us, 100.0, 15.0)
      << "correct " << base_us << " us, +100 us " << slow_us;
  EXPECT_EQ(worker_processes(), 0);
}

// The worker's own times are forged in two ways (forge_elapsed.cuh's code route): halved
// (forge_event_time.cu), and 45 us less, never below 8% (forge_elapsed_offset.cu, just under
// the margins the judge once held the worker's report to). Each must score as the honest
// kernel does: the figure is the judge's own clock; the forged reports stay in the record.
TEST_F(GpuSmallBenchmark, ForgedReportsGainNothing) {
  nlohmann::json honest, halved, offset;
  std::string offset_err;
  ASSERT_NO_FATAL_FAILURE(judged("correct", &honest));
  ASSERT_NO_FATAL_FAILURE(judged("forge_event_time", &halved));
  ASSERT_NO_FATAL_FAILURE(judged("forge_elapsed_offset", &offset, &offset_err));
  const double h = honest["median_ms"].get<double>() * 1000.0;
  for (const nlohmann::json* f : {&halved, &offset}) {
    const double us = (*f)["median_ms"].get<double>() * 1000.0;
    // Run-to-run noise of a ~50 us kernel: a few percent.
    EXPECT_NEAR(us, h, std::max(3.0, 0.05 * h)) << "honest " << h << " us, forged " << us << " us";
  }
  // The forgeries did reach the worker's report (else this test would prove nothing).
  EXPECT_LT(halved["worker_reported_median_ms"].get<double>() * 1000.0, 0.7 * h);
  // The 45 us come off each window's events, R calls long: a little per call, so the patch's
  // own word that it took is checked, and that the report is below the judge's figure.
  EXPECT_NE(offset_err.find("cudaEventElapsedTime redirected"), std::string::npos) << offset_err;
  EXPECT_LT(offset["worker_reported_median_ms"].get<double>(), offset["median_ms"].get<double>());
  EXPECT_EQ(worker_processes(), 0);
}

// claim_hold_timeout.cu spins 200 us after the real work while its patched worker says
// "hold_timed_out" and takes the spin off its own time. A judge once subtracted 200 ms on that
// word; this one reads no such flag, so the spin is charged in full.
TEST_F(GpuSmallBenchmark, HoldTimeoutClaimGainsNothing) {
  nlohmann::json base, claim;
  ASSERT_NO_FATAL_FAILURE(judged("correct", &base));
  ASSERT_NO_FATAL_FAILURE(judged("claim_hold_timeout", &claim));
  const double base_us = base["median_ms"].get<double>() * 1000.0;
  const double claim_us = claim["median_ms"].get<double>() * 1000.0;
  EXPECT_NEAR(claim_us - base_us, 200.0, 20.0) << "correct " << base_us << " us, " << claim_us;
  // The claim did reach the worker's report (else this test would prove nothing).
  EXPECT_LT(claim["worker_reported_median_ms"].get<double>() * 1000.0, claim_us - 150.0);
  EXPECT_EQ(worker_processes(), 0);
}

}  // namespace
}  // namespace fp4arena
