// --action sweep end to end on a GPU with the test-only toy_quantize challenge: two shapes
// from a --shapes file, the copy yardstick beside each, sweep.json, sweep.html and sweep.svg
// written; a solution that fails every shape still gets the yardstick timed and exits 1.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "harness/judge.h"
#include "harness/process.h"
#include "tests/test_util.h"

namespace fp4arena {
namespace {

using testing_util::binary_dir;
using testing_util::source_dir;
using testing_util::toy_challenge_dir;

class GpuSweep : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/fp4arena-gpu-sweep-" + std::to_string(getpid()) + "-" +
           testing::UnitTest::GetInstance()->current_test_info()->name();
    std::string err;
    ASSERT_TRUE(make_dirs(dir_, &err)) << err;
    shapes_ = dir_ + "/shapes.json";
    std::ofstream(shapes_) << R"([
      {"name": "small", "generator": "normal", "seed": 31, "M": 256, "K": 1024},
      {"name": "rect", "generator": "normal", "seed": 32, "M": 1000, "K": 4100}
    ])";
  }
  void TearDown() override { remove_tree(dir_); }

  JudgeOutcome sweep(const std::string& stem, std::string* log) {
    JudgeOptions o;
    o.challenge_dir = toy_challenge_dir();
    o.solution_path = source_dir() + "/tests/solutions/toy_quantize/" + stem + ".cu";
    o.action = Action::kSweep;
    o.shapes_path = shapes_;
    o.sweep_dir = dir_ + "/out";
    o.progress = false;
    o.worker_path = testing_util::worker_bin();
    o.cache_dir = binary_dir() + "/solution-cache";
    std::ostringstream os;
    JudgeOutcome r = judge(o, os);
    *log = os.str();
    return r;
  }

  nlohmann::json written_json() {
    std::string text, err;
    EXPECT_TRUE(read_file(dir_ + "/out/sweep.json", &text, &err)) << err;
    return nlohmann::json::parse(text, nullptr, false);
  }

  std::string dir_, shapes_;
};

TEST_F(GpuSweep, CorrectSolutionPassesEveryShapeBesideTheYardstick) {
  FP4ARENA_SKIP_WITHOUT_GPU();
  std::string log;
  JudgeOutcome r = sweep("correct", &log);
  std::cerr << log;
  ASSERT_EQ(r.code, ExitCode::kPassed) << log;
  EXPECT_EQ(r.record_path, dir_ + "/out/sweep.json");
  const nlohmann::json j = written_json();
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j, r.record);
  EXPECT_EQ(j["schema"], "fp4arena.sweep.v1");
  EXPECT_EQ(j["judge_version"], FP4ARENA_VERSION);
  EXPECT_EQ(j["challenge"]["name"], "toy_quantize");
  EXPECT_EQ(j["challenge"]["spec_version"], 2);
  EXPECT_EQ(j["solution"]["sha256"].get<std::string>().size(), 64u);
  EXPECT_GT(j["device"]["sm_count"].get<int>(), 0);
  EXPECT_GT(j["device"]["sm_clock_max_mhz"].get<int>(), 0);
  EXPECT_EQ(j["metric"]["name"], "gbps");
  EXPECT_EQ(j["metric"]["unit"], "GB/s");
  EXPECT_EQ(j["limit"]["name"], "dram");
  const double limit = j["limit"]["value"].get<double>();
  EXPECT_GT(limit, 1000);
  EXPECT_EQ(j["passed"], true);
  EXPECT_NE(j["shapes_source"].get<std::string>().find(shapes_), std::string::npos);
  ASSERT_EQ(j["shapes"].size(), 2u);
  const char* names[] = {"small", "rect"};
  const char* labels[] = {"256x1024", "1000x4100"};
  for (size_t i = 0; i < 2; ++i) {
    const nlohmann::json& s = j["shapes"][i];
    SCOPED_TRACE(s.dump());
    EXPECT_EQ(s["name"], names[i]);
    EXPECT_EQ(s["shape"], labels[i]);
    EXPECT_EQ(s["verdict"], "passed");
    EXPECT_EQ(s["reason"], "");
    EXPECT_GE(s["samples"].get<int>(), 1);
    EXPECT_LE(s["samples"].get<int>(), 15) << "the short timing of --action run";
    const double ms = s["median_ms"].get<double>(), value = s["value"].get<double>();
    EXPECT_GT(ms, 0);
    EXPECT_NEAR(value, s["workload"].get<double>() / ms / 1e6, 1e-6 * value);
    EXPECT_LT(value, limit);
    ASSERT_TRUE(s["yardstick"].is_object());
    EXPECT_EQ(s["yardstick"]["name"], "device-to-device copy of the same bytes");
    EXPECT_GT(s["yardstick"]["value"].get<double>(), 0);
    EXPECT_NEAR(s["yardstick"]["ratio"].get<double>(),
                value / s["yardstick"]["value"].get<double>(), 1e-9);
  }
  EXPECT_EQ(j["shapes"][1]["dims"], nlohmann::json({{"M", 1000}, {"K", 4100}}));
  std::string html, err;
  ASSERT_TRUE(read_file(dir_ + "/out/sweep.html", &html, &err)) << err;
  EXPECT_NE(html.find("<svg class=\"chart\""), std::string::npos);
  EXPECT_NE(html.find(">1000x4100<"), std::string::npos);
  EXPECT_NE(html.find("<line class=\"limit\" data-value"), std::string::npos);
  EXPECT_NE(html.find("2 of 2 shapes passed"), std::string::npos);
  EXPECT_NE(log.find("sweep    " + dir_ + "/out/sweep.json"), std::string::npos) << log;
  std::string svg;
  ASSERT_TRUE(read_file(dir_ + "/out/sweep.svg", &svg, &err)) << err;
  EXPECT_NE(svg.find("xmlns=\"http://www.w3.org/2000/svg\""), std::string::npos);
  EXPECT_NE(svg.find(">1000x4100<"), std::string::npos);
  EXPECT_NE(log.find("(the chart alone: " + dir_ + "/out/sweep.svg)"), std::string::npos) << log;

  // A second sweep into the same folder replaces the judge's own files.
  r = sweep("correct", &log);
  EXPECT_EQ(r.code, ExitCode::kPassed) << log;
}

TEST_F(GpuSweep, AFailingSolutionIsRecordedPerShapeAndTheSweepGoesOn) {
  FP4ARENA_SKIP_WITHOUT_GPU();
  std::string log;
  JudgeOutcome r = sweep("skip_last_row", &log);
  std::cerr << log;
  EXPECT_EQ(r.code, ExitCode::kFailed) << log;
  const nlohmann::json j = written_json();
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j["passed"], false);
  ASSERT_EQ(j["shapes"].size(), 2u) << "every shape judged";
  for (const nlohmann::json& s : j["shapes"]) {
    SCOPED_TRACE(s.dump());
    EXPECT_EQ(s["verdict"], "wrong_answer");
    EXPECT_FALSE(s["reason"].get<std::string>().empty());
    EXPECT_TRUE(s["value"].is_null());
    ASSERT_TRUE(s["yardstick"].is_object()) << "timed where the solution failed";
    EXPECT_GT(s["yardstick"]["value"].get<double>(), 0);
    EXPECT_TRUE(s["yardstick"]["ratio"].is_null());
  }
  EXPECT_NE(log.find("replay: --action sweep --shapes " + shapes_ + " --case small --seed 31"),
            std::string::npos)
      << log;
  std::string html, err;
  ASSERT_TRUE(read_file(dir_ + "/out/sweep.html", &html, &err)) << err;
  EXPECT_NE(html.find("0 of 2 shapes passed"), std::string::npos);
}

}  // namespace
}  // namespace fp4arena
