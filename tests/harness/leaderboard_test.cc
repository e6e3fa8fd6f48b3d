#include "harness/leaderboard.h"

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace fp4arena {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kRecords = std::string(FP4ARENA_SOURCE_DIR) + "/tests/data/records";
const std::string kH200 = "nvfp4_matmul/nvidia-h200/";
const std::string kBest = kH200 + "wgmma_pipelined-448ceb3e818e.json";

std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// A fresh directory per test, so that tests never see each other's boards.
fs::path fresh_dir(const std::string& name) {
  fs::path dir = fs::path(testing::TempDir()) /
                 ("fp4arena_leaderboard_" + std::to_string(getpid()) + "_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

// The reason build_leaderboard() gave for `file`, from "FILE: reason" lines.
std::map<std::string, std::string> by_file(const std::vector<std::string>& lines) {
  std::map<std::string, std::string> out;
  for (const std::string& line : lines) {
    EXPECT_TRUE(starts_with(line, kRecords + "/")) << line;
    const size_t colon = line.find(".json: ");
    EXPECT_NE(colon, std::string::npos) << line;
    if (colon == std::string::npos) continue;
    out[line.substr(kRecords.size() + 1, colon + 5 - kRecords.size() - 1)] = line.substr(colon + 7);
  }
  return out;
}

class FixtureBoard : public testing::Test {
 protected:
  void SetUp() override {
    out_ = fresh_dir(testing::UnitTest::GetInstance()->current_test_info()->name());
    ASSERT_TRUE(build_leaderboard({kRecords, out_.string()}, &report_, &err_)) << err_;
  }
  fs::path out_;
  LeaderboardReport report_;
  std::string err_;
};

TEST_F(FixtureBoard, CountsRecords) {
  EXPECT_EQ(report_.records_read, 10);
  EXPECT_EQ(report_.records_ranked, 4);
  EXPECT_EQ(report_.rejected.size(), 4u);
  EXPECT_EQ(report_.not_ranked.size(), 2u);
  for (const char* name : {"leaderboard.json", "leaderboard.md", "leaderboard.html"})
    EXPECT_TRUE(fs::is_regular_file(out_ / name)) << name;
}

TEST_F(FixtureBoard, RejectsNameTheFileAndTheReason) {
  const auto rejected = by_file(report_.rejected);
  const std::map<std::string, std::string> want = {
      {kH200 + "truncated-81545cc478e8.json", "invalid JSON: parse error at line 51"},
      {kH200 + "no_sha-37be5675d3b9.json", "missing field solution.sha256"},
      {kH200 + "too_fast-2423d35f36d6.json",
       "score.tflops_geomean 2361.9 TF/s exceeds the device's physical limit "
       "(device.peak_fp16_dense_tflops 1070.4 TF/s)"},
      {kH200 + "fudged-e7660c910fb5.json",
       "inconsistent: benchmarks[0] 'table5': tflops 500.0 != flops/median_ms/1e9 = 231.9 "
       "(beyond 1%)"},
  };
  ASSERT_EQ(rejected.size(), want.size());
  for (const auto& [file, reason] : want) {
    ASSERT_EQ(rejected.count(file), 1u) << file;
    EXPECT_TRUE(starts_with(rejected.at(file), reason)) << file << ": " << rejected.at(file);
  }
}

TEST_F(FixtureBoard, FailedAndDuplicateRecordsAreNotRanked) {
  const auto not_ranked = by_file(report_.not_ranked);
  ASSERT_EQ(not_ranked.size(), 2u);
  EXPECT_EQ(not_ranked.at(kH200 + "naive_broken-4be22510ceaa.json"),
            "not ranked: failed (tests[1] 'odd_5x7x48': wrong_answer (3 of 35 elements outside "
            "atol + rtol*|ref|))");
  EXPECT_EQ(not_ranked.at(kH200 + "wgmma_copy-448ceb3e818e.json"),
            "not ranked: duplicate of " + kBest +
                " (same source sha256 448ceb3e818e; 590.5 TF/s here, 761.9 TF/s there)");
}

TEST_F(FixtureBoard, JsonHasTheExactRanking) {
  const json board = json::parse(slurp(out_ / "leaderboard.json"));
  EXPECT_EQ(board["schema"], "fp4arena.leaderboard.v1");
  struct Want {
    std::string device;
    int spec;
    bool latest;
    std::vector<std::string> solutions;
    std::vector<double> scores;
  };
  const std::vector<Want> want = {
      {"NVIDIA H100 80GB HBM3", 2, true, {"wgmma_pipelined"}, {660.6}},
      {"NVIDIA H200", 2, true, {"wgmma_pipelined", "tiled_smem"}, {761.9, 192.8}},
      {"NVIDIA H200", 1, false, {"old_kernel"}, {472.4}},
  };
  ASSERT_EQ(board["groups"].size(), want.size());
  for (size_t g = 0; g < want.size(); ++g) {
    const json& group = board["groups"][g];
    SCOPED_TRACE("group " + std::to_string(g));
    EXPECT_EQ(group["challenge"], "nvfp4_matmul");
    EXPECT_EQ(group["device"], want[g].device);
    EXPECT_EQ(group["spec_version"], want[g].spec);
    EXPECT_EQ(group["judge_series"], "0.1");
    EXPECT_EQ(group["latest"], want[g].latest);
    EXPECT_EQ(group["cases"], json({"table5", "llama_ffn"}));
    ASSERT_EQ(group["entries"].size(), want[g].solutions.size());
    for (size_t i = 0; i < want[g].solutions.size(); ++i) {
      const json& e = group["entries"][i];
      EXPECT_EQ(e["rank"], i + 1);
      EXPECT_EQ(e["solution"], want[g].solutions[i]);
      EXPECT_DOUBLE_EQ(e["score_tflops"].get<double>(), want[g].scores[i]);
    }
  }
  EXPECT_EQ(board["groups"][2]["note"],
            "Older challenge spec v1 (latest is v2): ranked apart, not comparable with the latest "
            "spec.");

  const json& best = board["groups"][1]["entries"][0];
  EXPECT_EQ(best["author"], "Ada Lovelace");
  EXPECT_EQ(best["file"], kBest);
  EXPECT_EQ(best["created_utc"], "2026-11-20T14:05:31Z");
  EXPECT_EQ(best["sha256"], "448ceb3e818e34bfbc0ce691bd65a636a930d38868171e185b63717cb7cb1526");
  EXPECT_NEAR(best["ratio_to_cublas"].get<double>(), std::sqrt(0.935 * 0.968), 1e-12);
  EXPECT_EQ(best["cases"][1],
            json({{"name", "llama_ffn"}, {"tflops", 775.9}, {"ratio_to_cublas", 0.968}}));
  EXPECT_TRUE(board["groups"][1]["entries"][1]["ratio_to_cublas"].is_null());
  EXPECT_EQ(board["rejected"].size(), 4u);
  EXPECT_EQ(board["not_ranked"].size(), 2u);
  EXPECT_EQ(board["rejected"][0]["file"], kH200 + "fudged-e7660c910fb5.json");
}

TEST_F(FixtureBoard, MarkdownHasATablePerGroup) {
  const std::string md = slurp(out_ / "leaderboard.md");
  const std::string h200 =
      "## nvfp4\\_matmul · spec v2 · judge 0.1 · NVIDIA H200\n"
      "\n"
      "| rank | solution | author | score TF/s | table5 TF/s | llama\\_ffn TF/s | vs cuBLAS | date "
      "| sha256 |\n"
      "|---:|---|---|---:|---:|---:|---:|---|---|\n"
      "| 1 | wgmma\\_pipelined | Ada Lovelace | 761.9 | 748.2 (0.94×) | 775.9 (0.97×) | 0.95× | "
      "2026-11-20 | `448ceb3e818e` |\n"
      "| 2 | tiled\\_smem | Grace Hopper | 192.8 | 193.3 | 192.4 | — | 2026-11-19 | "
      "`086ccc75ff18` |\n";
  EXPECT_NE(md.find(h200), std::string::npos) << md;
  EXPECT_NE(md.find("4 ranked, 2 not ranked, 4 rejected.\n"), std::string::npos);
  EXPECT_NE(md.find("## nvfp4\\_matmul · spec v1 · judge 0.1 · NVIDIA H200\n\n> Older challenge "
                    "spec v1 (latest is v2)"),
            std::string::npos);
  EXPECT_NE(md.find("| 1 | wgmma\\_pipelined | Ada Lovelace | 660.6 |"), std::string::npos);
  EXPECT_NE(md.find("## Rejected\n\n- `" + kH200 + "fudged-e7660c910fb5.json`: inconsistent: "),
            std::string::npos);
  EXPECT_NE(md.find("- `" + kH200 + "no_sha-37be5675d3b9.json`: missing field solution.sha256\n"),
            std::string::npos);
  // Groups appear in board order: H100, H200 spec 2, H200 spec 1.
  const size_t h100 = md.find("NVIDIA H100 80GB HBM3\n");
  const size_t spec2 = md.find("spec v2 · judge 0.1 · NVIDIA H200\n");
  const size_t spec1 = md.find("spec v1 · judge 0.1 · NVIDIA H200\n");
  EXPECT_LT(h100, spec2);
  EXPECT_LT(spec2, spec1);
  EXPECT_LT(spec1, md.find("## Not ranked"));
}

// parse_record() on a fixture record changed by `edit`.
std::string reason_for(const std::function<void(json&)>& edit) {
  json record = json::parse(slurp(kRecords + "/" + kBest));
  edit(record);
  SubmitRecord r;
  std::string reason;
  if (parse_record(record.dump(), &r, &reason)) return "accepted";
  return reason;
}

TEST(ParseRecord, AcceptsTheFixture) {
  SubmitRecord r;
  std::string reason;
  ASSERT_TRUE(load_record(kRecords + "/" + kBest, &r, &reason)) << reason;
  EXPECT_EQ(r.file, kRecords + "/" + kBest);
  EXPECT_EQ(r.challenge, "nvfp4_matmul");
  EXPECT_EQ(r.spec_version, 2);
  EXPECT_EQ(r.solution_stem, "wgmma_pipelined");
  EXPECT_EQ(r.device_name, "NVIDIA H200");
  EXPECT_DOUBLE_EQ(r.peak_tflops, 1070.4);
  EXPECT_TRUE(r.passed);
  EXPECT_TRUE(r.score_valid);
  EXPECT_DOUBLE_EQ(*r.score_tflops, 761.9);
  ASSERT_EQ(r.benchmarks.size(), 2u);
  EXPECT_EQ(r.benchmarks[0].m, 2048);
  EXPECT_DOUBLE_EQ(*r.benchmarks[0].ratio_to_cublas, 0.935);
  EXPECT_TRUE(r.failure.empty());
}

TEST(ParseRecord, NamesTheMissingOrMistypedField) {
  EXPECT_EQ(reason_for([](json& r) { r["device"].erase("peak_fp16_dense_tflops"); }),
            "missing field device.peak_fp16_dense_tflops");
  EXPECT_EQ(reason_for([](json& r) { r.erase("passed"); }), "missing field passed");
  EXPECT_EQ(reason_for([](json& r) { r["benchmarks"][0]["M"] = "2048"; }),
            "field benchmarks[0].M must be an integer, got \"2048\"");
  EXPECT_EQ(reason_for([](json& r) { r["tests"][1]["verdict"] = "ok"; }),
            "field tests[1].verdict \"ok\" is not a verdict");
  EXPECT_EQ(reason_for([](json& r) { r["challenge"] = "nvfp4_matmul"; }),
            "field challenge must be an object, got \"nvfp4_matmul\"");
  EXPECT_EQ(reason_for([](json& r) { r["schema"] = "fp4arena.submit.v0"; }),
            "field schema is \"fp4arena.submit.v0\", expected \"fp4arena.submit.v1\"");
  EXPECT_EQ(reason_for([](json& r) { r["solution"]["sha256"] = "abc"; }),
            "field solution.sha256 \"abc\" is not 64 hex digits");
  EXPECT_EQ(reason_for([](json& r) { r["benchmarks"][1]["tflops"] = nullptr; }),
            "field benchmarks[1].tflops must be a number when the case passed");
  EXPECT_EQ(reason_for([](json& r) { r["score"]["tflops_geomean"] = nullptr; }),
            "field score.tflops_geomean must be a number when score.valid is true");
  EXPECT_EQ(reason_for([](json& r) { r["created_utc"] = "yesterday"; }),
            "field created_utc \"yesterday\" is not a UTC time (YYYY-MM-DDTHH:MM:SSZ)");
  SubmitRecord r;
  std::string reason;
  EXPECT_FALSE(parse_record("[1, 2]", &r, &reason));
  EXPECT_EQ(reason, "not a submit record: the top level is array, not an object");
  EXPECT_FALSE(parse_record("", &r, &reason));
  EXPECT_TRUE(starts_with(reason, "invalid JSON: ")) << reason;
}

TEST(ParseRecord, OptionalFieldsMayBeAbsentOrNull) {
  EXPECT_EQ(reason_for([](json& r) { r["solution"].erase("author"); }), "accepted");
  EXPECT_EQ(reason_for([](json& r) { r["solution"]["author"] = nullptr; }), "accepted");
  EXPECT_EQ(reason_for([](json& r) {
              for (json& b : r["benchmarks"]) {
                b.erase("cublas_fp16_ms");
                b.erase("cublas_fp16_tflops");
                b.erase("ratio_to_cublas");
              }
            }),
            "accepted");
  EXPECT_EQ(reason_for([](json& r) { r["benchmarks"][0]["flops"] = 231928233984.0; }), "accepted");
}

TEST(ParseRecord, AcceptsWhatTheJudgeAddsBeyondTheSchema) {
  EXPECT_EQ(reason_for([](json& r) {
              r["action"] = "submit";
              r["tolerance"] = {{"atol", 0.1}, {"rtol", 0.05}};
              r["wall_seconds"] = 81.5;
              r["device"]["l2_bytes"] = 62914560;
              r["device"]["memory_bytes"] = 150011871232;
              for (json& t : r["tests"]) {
                t["unwritten"] = 0;
                t["nonfinite"] = 0;
                t["worst"] = json::array();
              }
              for (json& b : r["benchmarks"]) {
                b["flops"] = b["flops"].get<double>();
                b["seed"] = 7;
                b["calls"] = 43;
                b["max_ms"] = 0.7;
                b["sm_clock_after_mhz"] = 1755;
              }
            }),
            "accepted");
}

TEST(ParseRecord, RejectsImpossibleOrInconsistentFigures) {
  // The score is under the peak but one case is not.
  EXPECT_EQ(reason_for([](json& r) { r["device"]["peak_fp16_dense_tflops"] = 770.0; }),
            "benchmarks[1] 'llama_ffn': tflops 775.9 exceeds the device's physical limit "
            "(device.peak_fp16_dense_tflops 770.0)");
  EXPECT_EQ(reason_for([](json& r) { r["benchmarks"][0]["flops"] = 231928233985; }),
            "inconsistent: benchmarks[0] 'table5': flops 231928233985 != 2*M*N*K = 231928233984");
  EXPECT_EQ(reason_for([](json& r) { r["benchmarks"][0]["K"] = 4096; }),
            "inconsistent: benchmarks[0] 'table5': flops 231928233984 != 2*M*N*K = 309237645312");
  EXPECT_EQ(reason_for([](json& r) { r["score"]["tflops_geomean"] = 780.0; }),
            "inconsistent: score.tflops_geomean 780.0 != geometric mean of benchmarks[].tflops "
            "761.9 (beyond 1%)");
  // Within 1% is the judge's rounding, not a lie.
  EXPECT_EQ(reason_for([](json& r) { r["score"]["tflops_geomean"] = 765.0; }), "accepted");
  EXPECT_EQ(reason_for([](json& r) { r["benchmarks"][0]["tflops"] = 754.0; }), "accepted");
  EXPECT_EQ(reason_for([](json& r) { r["tests"][0]["verdict"] = "wrong_answer"; }),
            "inconsistent: passed is true but tests[0] 'example' has verdict wrong_answer");
  EXPECT_EQ(reason_for([](json& r) { r["score"]["valid"] = false; }),
            "inconsistent: passed is true but score.valid is false");
  EXPECT_EQ(reason_for([](json& r) { r["benchmarks"] = json::array(); }),
            "inconsistent: score.valid is true but benchmarks is empty");
}

TEST(ParseRecord, AnHonestFailureIsValid) {
  // The judge's own over_peak verdict: a failed record, not a lie.
  EXPECT_EQ(reason_for([](json& r) {
              r["device"]["peak_fp16_dense_tflops"] = 700.0;
              r["score"] = {{"tflops_geomean", nullptr}, {"valid", false}, {"reason", "over_peak"}};
              r["passed"] = false;
            }),
            "accepted");
}

SubmitRecord make(const std::string& file, const std::string& sha_char, double score,
                  const std::string& device = "NVIDIA H200", const std::string& judge = "0.1.0",
                  const std::string& date = "2026-11-20T00:00:00Z") {
  SubmitRecord r;
  r.file = file;
  r.judge_version = judge;
  r.created_utc = date;
  r.challenge = "nvfp4_matmul";
  r.spec_version = 1;
  r.solution_path = "solutions/nvfp4_matmul/" + file + ".cu";
  r.solution_stem = file;
  r.sha256 = std::string(64, sha_char[0]);
  r.device_name = device;
  r.peak_tflops = 1070.4;
  r.benchmarks.push_back({"square", 1024, 1024, 1024, 2.0 * (1 << 30), "passed", 1.0, score, {}});
  r.score_tflops = score;
  r.score_valid = true;
  r.passed = true;
  return r;
}

TEST(RankRecords, SeparatesJudgeSeriesAndMarksTheOlder) {
  const Board board = rank_records({make("a", "a", 100, "NVIDIA H200", "0.1.0"),
                                    make("b", "b", 200, "NVIDIA H200", "0.1.9"),
                                    make("c", "c", 50, "NVIDIA H200", "0.2.0")});
  ASSERT_EQ(board.groups.size(), 2u);
  EXPECT_EQ(board.groups[0].judge_series, "0.2");
  EXPECT_TRUE(board.groups[0].latest);
  EXPECT_EQ(board.groups[0].entries.size(), 1u);
  EXPECT_EQ(board.groups[1].judge_series, "0.1");
  EXPECT_FALSE(board.groups[1].latest);
  EXPECT_EQ(board.groups[1].note,
            "Older judge 0.1 (latest is 0.2): ranked apart, not comparable with the latest judge.");
  ASSERT_EQ(board.groups[1].entries.size(), 2u);
  EXPECT_EQ(board.groups[1].entries[0].record.file, "b");
  EXPECT_EQ(board.groups[1].entries[1].record.file, "a");
}

TEST(RankRecords, AFailedRecordOfANewerSpecStillMarksTheOlderBoard) {
  SubmitRecord newer = make("newer", "b", 100);
  newer.spec_version = 2;
  newer.passed = false;
  newer.failure = "tests[0] 'example': wrong_answer";
  const Board board = rank_records({make("older", "a", 100), newer});
  ASSERT_EQ(board.groups.size(), 1u);
  EXPECT_FALSE(board.groups[0].latest);
  EXPECT_EQ(board.groups[0].spec_version, 1);
  ASSERT_EQ(board.not_ranked.size(), 1u);
  EXPECT_EQ(board.not_ranked[0].reason, "not ranked: failed (tests[0] 'example': wrong_answer)");
}

TEST(RankRecords, TiesGoToTheEarlierRecord) {
  const Board board =
      rank_records({make("late", "a", 100, "NVIDIA H200", "0.1.0", "2026-11-21T00:00:00Z"),
                    make("early", "b", 100, "NVIDIA H200", "0.1.0", "2026-11-20T00:00:00Z"),
                    make("late_dup", "b", 100, "NVIDIA H200", "0.1.0", "2026-11-22T00:00:00Z")});
  ASSERT_EQ(board.groups.size(), 1u);
  ASSERT_EQ(board.groups[0].entries.size(), 2u);
  EXPECT_EQ(board.groups[0].entries[0].record.file, "early");
  EXPECT_EQ(board.groups[0].entries[0].rank, 1);
  EXPECT_EQ(board.groups[0].entries[1].record.file, "late");
  EXPECT_EQ(board.groups[0].entries[1].rank, 2);
  ASSERT_EQ(board.not_ranked.size(), 1u);
  EXPECT_EQ(board.not_ranked[0].file, "late_dup");
  EXPECT_TRUE(starts_with(board.not_ranked[0].reason, "not ranked: duplicate of early "));
}

TEST(RankRecords, PartialRunsAndOtherActionsAreNotRanked) {
  SubmitRecord partial = make("partial", "a", 100);
  partial.partial = true;
  SubmitRecord run = make("run", "b", 100);
  run.action = "run";
  SubmitRecord submit = make("submit", "c", 100);
  submit.action = "submit";
  const Board board = rank_records({partial, run, submit});
  ASSERT_EQ(board.groups.size(), 1u);
  ASSERT_EQ(board.groups[0].entries.size(), 1u);
  EXPECT_EQ(board.groups[0].entries[0].record.file, "submit");
  ASSERT_EQ(board.not_ranked.size(), 2u);
  EXPECT_EQ(board.not_ranked[0].file, "partial");
  EXPECT_EQ(board.not_ranked[0].reason, "not ranked: a partial run (only_cases)");
  EXPECT_EQ(board.not_ranked[1].reason, "not ranked: a record of --action run, not submit");
}

TEST(RankRecords, OneSourceIsRankedOnEveryDevice) {
  const Board board = rank_records(
      {make("k", "a", 100, "NVIDIA H100 80GB HBM3"), make("k", "a", 120, "NVIDIA H200")});
  ASSERT_EQ(board.groups.size(), 2u);
  EXPECT_EQ(board.groups[0].device, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(board.groups[1].device, "NVIDIA H200");
  EXPECT_TRUE(board.not_ranked.empty());
}

TEST(JudgeSeries, KeepsMajorAndMinor) {
  EXPECT_EQ(judge_series("0.1.7"), "0.1");
  EXPECT_EQ(judge_series("1.12"), "1.12");
  EXPECT_EQ(judge_series("2.3.4-rc1"), "2.3");
}

TEST(Render, EscapesWhatRecordsControl) {
  SubmitRecord r = make("x", "a", 100);
  r.author = "<script>alert(1)</script> | *you*";
  Board board = rank_records({r});
  board.rejected.push_back({"evil<b>.json", "invalid JSON: <img src=x>"});
  const std::string html = render_html(board);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("<img"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;alert(1)&lt;/script&gt; | *you*"), std::string::npos);
  const std::string md = render_markdown(board);
  EXPECT_NE(md.find("| \\<script\\>alert(1)\\</script\\> \\| \\*you\\* |"), std::string::npos)
      << md;
  EXPECT_EQ(json::parse(render_json(board))["groups"][0]["entries"][0]["author"], r.author);
}

TEST(Render, EmptyBoard) {
  const Board board;
  EXPECT_NE(render_markdown(board).find("0 ranked, 0 not ranked, 0 rejected."), std::string::npos);
  EXPECT_NE(render_html(board).find("No ranked records."), std::string::npos);
  EXPECT_EQ(json::parse(render_json(board))["groups"], json::array());
}

TEST(BuildLeaderboard, FailsOnAMissingResultsDirectory) {
  LeaderboardReport report;
  std::string err;
  const fs::path out = fresh_dir("missing");
  EXPECT_FALSE(build_leaderboard({(out / "nope").string(), out.string()}, &report, &err));
  EXPECT_EQ(err, "results directory " + (out / "nope").generic_string() + " does not exist");
}

TEST(BuildLeaderboard, SkipsItsOwnOutputInsideTheResults) {
  const fs::path results = fresh_dir("inside");
  fs::copy(kRecords, results, fs::copy_options::recursive);
  for (int run = 0; run < 2; ++run) {
    LeaderboardReport report;
    std::string err;
    ASSERT_TRUE(build_leaderboard({results.string(), (results / "board").string()}, &report, &err))
        << err;
    EXPECT_EQ(report.records_read, 10) << "run " << run;
    EXPECT_EQ(report.records_ranked, 4) << "run " << run;
  }
  EXPECT_TRUE(fs::is_regular_file(results / "board" / "leaderboard.json"));
}

}  // namespace
}  // namespace fp4arena
