// The generic judge end to end on a GPU with the test-only toy_quantize challenge: two
// outputs, an exact_or_tie comparison, unwritten bytes of a uint8 output, GB/s against the
// DRAM limit and the copy yardstick, and a record the board ranks.
#include <gtest/gtest.h>

#include <sstream>

#include "harness/judge.h"
#include "harness/leaderboard.h"
#include "tests/test_util.h"

namespace fp4arena {
namespace {

using testing_util::binary_dir;
using testing_util::source_dir;
using testing_util::toy_challenge_dir;

std::string toy_solution(const std::string& stem) {
  return source_dir() + "/tests/solutions/toy_quantize/" + stem + ".cu";
}

JudgeOutcome judge_toy(const std::string& stem, Action action, std::string* log,
                       std::vector<std::string> cases = {}) {
  JudgeOptions o;
  o.challenge_dir = toy_challenge_dir();
  o.solution_path = toy_solution(stem);
  o.action = action;
  o.cases = cases;
  o.progress = false;
  o.worker_path = testing_util::worker_bin();
  o.cache_dir = binary_dir() + "/solution-cache";
  o.output_path = ::testing::TempDir() + "/toy-" + stem + ".json";
  std::ostringstream os;
  JudgeOutcome r = judge(o, os);
  *log = os.str();
  return r;
}

const nlohmann::json* case_of(const nlohmann::json& rec, const std::string& name) {
  for (const char* list : {"tests", "benchmarks"}) {
    for (const auto& c : rec[list]) {
      if (c["name"] == name) return &c;
    }
  }
  return nullptr;
}

TEST(GpuToy, CorrectSolutionPassesWithTwoOutputsAndAGbpsScore) {
  FP4ARENA_SKIP_WITHOUT_GPU();
  std::string log;
  JudgeOutcome r = judge_toy("correct", Action::kSubmit, &log);
  std::cerr << log;
  ASSERT_EQ(r.code, ExitCode::kPassed) << log;
  const nlohmann::json& rec = r.record;
  EXPECT_EQ(rec["schema"], "fp4arena.submit.v2");
  EXPECT_EQ(rec["metric"]["unit"], "GB/s");
  EXPECT_EQ(rec["limit"]["name"], "dram");
  EXPECT_GT(rec["limit"]["value"].get<double>(), 1000);
  for (const auto& t : rec["tests"]) {
    ASSERT_EQ(t["outputs"].size(), 2u) << t.dump();
    EXPECT_EQ(t["outputs"][0]["compare"], "exact_or_tie");
    EXPECT_EQ(t["outputs"][1]["compare"], "tolerance");
  }
  const nlohmann::json& wide = *case_of(rec, "wide");
  EXPECT_EQ(wide["verdict"], "passed");
  EXPECT_LT(wide["value"].get<double>(), rec["limit"]["value"].get<double>());
  ASSERT_TRUE(wide["yardstick"].is_object()) << log;
  EXPECT_EQ(wide["yardstick"]["name"], "device-to-device copy of the same bytes");
  EXPECT_NEAR(wide["yardstick"]["ratio"].get<double>(),
              wide["value"].get<double>() / wide["yardstick"]["value"].get<double>(), 1e-9);
  EXPECT_NE(log.find("GB/s"), std::string::npos);
  // The board reads the judge's own record and ranks it.
  SubmitRecord parsed;
  std::string why;
  EXPECT_TRUE(parse_record(rec.dump(), &parsed, &why)) << why;
}

TEST(GpuToy, HalfAwayRoundingFailsOnlyTheMidpointCase) {
  FP4ARENA_SKIP_WITHOUT_GPU();
  std::string log;
  JudgeOutcome r = judge_toy("half_away", Action::kRun, &log, {"example", "midpoints"});
  EXPECT_EQ(r.code, ExitCode::kFailed) << log;
  EXPECT_EQ((*case_of(r.record, "midpoints"))["verdict"], "wrong_answer") << log;
  // example's -63.5 rounds to -64 (even) and away from zero alike; 2.5 differs: 130 vs 131.
  EXPECT_EQ((*case_of(r.record, "example"))["verdict"], "wrong_answer") << log;
  EXPECT_NE(log.find("differ from the oracle's codes"), std::string::npos) << log;
  EXPECT_NE(log.find("(code 0x"), std::string::npos) << log;
  EXPECT_NE(log.find("replay: --case midpoints --seed 2"), std::string::npos) << log;
}

TEST(GpuToy, UnwrittenUint8RowIsReportedAsNeverWritten) {
  FP4ARENA_SKIP_WITHOUT_GPU();
  std::string log;
  JudgeOutcome r = judge_toy("skip_last_row", Action::kRun, &log, {"random_tails"});
  EXPECT_EQ(r.code, ExitCode::kFailed) << log;
  const nlohmann::json& c = *case_of(r.record, "random_tails");
  EXPECT_EQ(c["verdict"], "wrong_answer");
  // The last row of q (129 bytes) and of s (1 bf16) were never written.
  EXPECT_EQ(c["outputs"][0]["unwritten"], 129) << log;
  EXPECT_EQ(c["outputs"][1]["unwritten"], 1) << log;
  EXPECT_NE(log.find("129 never written"), std::string::npos) << log;
}

}  // namespace
}  // namespace fp4arena
