#include "harness/leaderboard.h"

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "harness/spec.h"
#include "harness/verdict.h"
#include "tests/test_util.h"

namespace fp4arena {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// v1 records (fp4arena.submit.v1, the NVFP4 matmul only): read through the migration.
const std::string kRecords = std::string(FP4ARENA_SOURCE_DIR) + "/tests/data/records";
const std::string kH200 = "nvfp4_matmul/nvidia-h200/";
const std::string kBest = kH200 + "wgmma_pipelined-448ceb3e818e.json";
// v2 records of two challenges with different metrics, and the specs they are checked against
// (the challenges' own, the quantizer's with the workload expression of the records' day).
const std::string kRecordsV2 = std::string(FP4ARENA_SOURCE_DIR) + "/tests/data/records_v2";
const std::string kSpecs = std::string(FP4ARENA_SOURCE_DIR) + "/tests/data/challenge_specs";
const std::string kW4a16 = "w4a16_matmul/nvidia-h200/w4a16_wgmma-5a5a5a5a5a5a.json";
const std::string kQuant = "nvfp4_quantize/nvidia-h200/quant_vectorized-7c7c7c7c7c7c.json";

std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void spit(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
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

// The reason build_leaderboard() gave for each file, from "DIR/FILE: reason" lines.
std::map<std::string, std::string> by_file(const std::vector<std::string>& lines,
                                           const std::string& dir = kRecords) {
  std::map<std::string, std::string> out;
  for (const std::string& line : lines) {
    EXPECT_TRUE(starts_with(line, dir + "/")) << line;
    const size_t colon = line.find(".json: ");
    EXPECT_NE(colon, std::string::npos) << line;
    if (colon == std::string::npos) continue;
    out[line.substr(dir.size() + 1, colon + 5 - dir.size() - 1)] = line.substr(colon + 7);
  }
  return out;
}

bool valid_utf8(const std::string& s) {
  try {
    (void)json(s).dump();  // strict: throws on ill-formed UTF-8
    return true;
  } catch (const json::exception&) {
    return false;
  }
}

class FixtureBoard : public testing::Test {
 protected:
  void SetUp() override {
    out_ = fresh_dir(testing::UnitTest::GetInstance()->current_test_info()->name());
    ASSERT_TRUE(build_leaderboard({kRecords, out_.string(), ""}, &report_, &err_)) << err_;
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
      // The limit is the judge's (132 SMs x 1980 MHz x 4096 FLOP/clk), not the record's.
      {kH200 + "too_fast-2423d35f36d6.json",
       "score.tflops_geomean 2361.9 TF/s exceeds the device's physical limit (fp16_dense 1070.5 "
       "TF/s, from the judge's table)"},
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
  EXPECT_EQ(board["schema"], "fp4arena.leaderboard.v2");
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
    EXPECT_EQ(group["metric"], "tflops");
    EXPECT_EQ(group["unit"], "TF/s");
    EXPECT_EQ(group["limit"], "fp16_dense");
    EXPECT_EQ(group["latest"], want[g].latest);
    EXPECT_EQ(group["cases"], json({"table5", "llama_ffn"}));
    ASSERT_EQ(group["entries"].size(), want[g].solutions.size());
    for (size_t i = 0; i < want[g].solutions.size(); ++i) {
      const json& e = group["entries"][i];
      EXPECT_EQ(e["rank"], i + 1);
      EXPECT_EQ(e["solution"], want[g].solutions[i]);
      EXPECT_DOUBLE_EQ(e["score"].get<double>(), want[g].scores[i]);
      EXPECT_EQ(e["notes"], json({"v1 record"}));
      EXPECT_EQ(e["schema"], "fp4arena.submit.v1");
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
  EXPECT_NEAR(best["ratio_to_yardstick"].get<double>(), std::sqrt(0.935 * 0.968), 1e-12);
  // Recomputed: 132 SMs x 1980 MHz x 4096 FLOP/clk, not the record's 1070.4.
  EXPECT_NEAR(best["limit_value"].get<double>(), 1070.53056, 1e-9);
  EXPECT_NEAR(best["pct_of_limit"].get<double>(), 761.9 / 1070.53056 * 100, 1e-9);
  EXPECT_EQ(best["cases"][1], json({{"name", "llama_ffn"},
                                    {"value", 775.9},
                                    {"ratio_to_yardstick", 0.968},
                                    {"speed_of_light_ms", nullptr},
                                    {"pct_of_speed_of_light", nullptr}}));
  EXPECT_EQ(board["groups"][1]["yardsticks"], json({"cuBLAS FP16 GEMM"}));
  EXPECT_TRUE(board["groups"][1]["entries"][1]["ratio_to_yardstick"].is_null());
  EXPECT_EQ(board["rejected"].size(), 4u);
  EXPECT_EQ(board["not_ranked"].size(), 2u);
  EXPECT_EQ(board["rejected"][0]["file"], kH200 + "fudged-e7660c910fb5.json");
}

TEST_F(FixtureBoard, MarkdownHasATablePerGroup) {
  const std::string md = slurp(out_ / "leaderboard.md");
  const std::string h200 =
      "## nvfp4\\_matmul · spec v2 · judge 0.1 · NVIDIA H200 · TF/s\n"
      "\n"
      "| rank | solution | author | score TF/s | table5 TF/s | llama\\_ffn TF/s | % of SoL | "
      "vs yardstick | date | sha256 | notes |\n"
      "|---:|---|---|---:|---:|---:|---:|---:|---|---|---|\n"
      "| 1 | wgmma\\_pipelined | Ada Lovelace | 761.9 | 748.2 (0.94×) | 775.9 (0.97×) | — | "
      "0.95× | 2026-11-20 | `448ceb3e818e` | v1 record |\n"
      "| 2 | tiled\\_smem | Grace Hopper | 192.8 | 193.3 | 192.4 | — | — | 2026-11-19 | "
      "`086ccc75ff18` | v1 record |\n"
      "\n"
      "vs yardstick: the geometric mean of the cases' ratios to cuBLAS FP16 GEMM, timed in the "
      "same run (per case in parentheses). % of speed of light (SoL): the geometric mean of the "
      "cases' roofline times over their medians; a case's roofline time is the larger of its "
      "FLOPs at the device's fp16\\_dense rate and its bytes at the DRAM rate, recomputed from "
      "the challenge's spec and the judge's table.\n";
  EXPECT_NE(md.find(h200), std::string::npos) << md;
  EXPECT_NE(md.find("4 ranked, 2 not ranked, 4 rejected.\n"), std::string::npos);
  EXPECT_NE(md.find("## nvfp4\\_matmul · spec v1 · judge 0.1 · NVIDIA H200 · TF/s\n\n> Older "
                    "challenge spec v1 (latest is v2)"),
            std::string::npos);
  EXPECT_NE(md.find("| 1 | wgmma\\_pipelined | Ada Lovelace | 660.6 |"), std::string::npos);
  EXPECT_NE(md.find("## Rejected\n\n- `" + kH200 + "fudged-e7660c910fb5.json`: inconsistent: "),
            std::string::npos);
  EXPECT_NE(md.find("- `" + kH200 + "no_sha-37be5675d3b9.json`: missing field solution.sha256\n"),
            std::string::npos);
  // Groups appear in board order: H100, H200 spec 2, H200 spec 1.
  const size_t h100 = md.find("NVIDIA H100 80GB HBM3 · TF/s\n");
  const size_t spec2 = md.find("spec v2 · judge 0.1 · NVIDIA H200 · TF/s\n");
  const size_t spec1 = md.find("spec v1 · judge 0.1 · NVIDIA H200 · TF/s\n");
  EXPECT_LT(h100, spec2);
  EXPECT_LT(spec2, spec1);
  EXPECT_LT(spec1, md.find("## Not ranked"));
  EXPECT_EQ(md.find("cuBLAS |"), std::string::npos) << "no hard-coded yardstick column";
}

// v2 records of a TF/s challenge and a GB/s challenge, checked against their specs.
class V2Board : public testing::Test {
 protected:
  void SetUp() override {
    out_ = fresh_dir(testing::UnitTest::GetInstance()->current_test_info()->name());
    ASSERT_TRUE(build_leaderboard({kRecordsV2, out_.string(), kSpecs}, &report_, &err_)) << err_;
  }
  fs::path out_;
  LeaderboardReport report_;
  std::string err_;
};

TEST_F(V2Board, RanksEachChallengeApartInItsOwnUnit) {
  EXPECT_EQ(report_.records_read, 5);
  EXPECT_EQ(report_.records_ranked, 4);
  EXPECT_TRUE(report_.rejected.empty()) << report_.rejected.front();
  const auto not_ranked = by_file(report_.not_ranked, kRecordsV2);
  ASSERT_EQ(not_ranked.size(), 1u);
  EXPECT_EQ(not_ranked.at("nvfp4_quantize/nvidia-h200/quant_broken-9e9e9e9e9e9e.json"),
            "not ranked: failed (tests[1] 'tails': wrong_answer (3 of 35 elements outside atol + "
            "rtol*|ref|))");

  const json board = json::parse(slurp(out_ / "leaderboard.json"));
  ASSERT_EQ(board["groups"].size(), 2u);
  const json& quant = board["groups"][0];
  EXPECT_EQ(quant["challenge"], "nvfp4_quantize");
  EXPECT_EQ(quant["metric"], "gbps");
  EXPECT_EQ(quant["unit"], "GB/s");
  EXPECT_EQ(quant["limit"], "dram");
  EXPECT_EQ(quant["judge_series"], "0.2");
  EXPECT_EQ(quant["cases"], json({"llama_act", "wide"}));
  EXPECT_EQ(quant["yardsticks"], json({"device-to-device copy of the same bytes"}));
  ASSERT_EQ(quant["entries"].size(), 2u);
  EXPECT_EQ(quant["entries"][0]["solution"], "quant_vectorized");
  EXPECT_EQ(quant["entries"][1]["solution"], "quant_scalar");
  EXPECT_NEAR(quant["entries"][0]["score"].get<double>(), 3564.5, 1e-9);
  // 2 x 3201 MHz x 6144 bits / 8.
  EXPECT_NEAR(quant["entries"][0]["limit_value"].get<double>(), 4916.736, 1e-6);
  EXPECT_TRUE(quant["entries"][1]["ratio_to_yardstick"].is_null());
  EXPECT_EQ(quant["entries"][0]["notes"], json::array());

  const json& w4a16 = board["groups"][1];
  EXPECT_EQ(w4a16["challenge"], "w4a16_matmul");
  EXPECT_EQ(w4a16["unit"], "TF/s");
  EXPECT_EQ(w4a16["limit"], "fp16_dense");
  EXPECT_EQ(w4a16["yardsticks"], json({"cuBLAS FP16 GEMM on dequantized weights"}));
  ASSERT_EQ(w4a16["entries"].size(), 2u);
  EXPECT_EQ(w4a16["entries"][0]["solution"], "w4a16_wgmma");
  EXPECT_EQ(w4a16["entries"][0]["author"], "Ada Lovelace");
  EXPECT_EQ(w4a16["entries"][1]["author"], "");

  const std::string md = slurp(out_ / "leaderboard.md");
  EXPECT_NE(md.find("## nvfp4\\_quantize · spec v1 · judge 0.2 · NVIDIA H200 · GB/s\n\n| rank | "
                    "solution | author | score GB/s | llama\\_act GB/s | wide GB/s | % of SoL | "
                    "vs yardstick |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("ratios to device-to-device copy of the same bytes, timed in the same run"),
            std::string::npos);
  // No TF/s figure in the GB/s board.
  EXPECT_GT(md.find("TF/s", md.find("## nvfp4\\_quantize")), md.find("## w4a16")) << md;
  const std::string html = slurp(out_ / "leaderboard.html");
  EXPECT_NE(html.find("3564.5 GB/s · 72.5% SoL</text>"), std::string::npos);
  EXPECT_NE(html.find("data-metric=\"gbps\""), std::string::npos);
}

TEST(MixedBoard, V1AndV2RecordsRankSideBySideAndV1IsNoted) {
  const fs::path results = fresh_dir("mixed");
  fs::copy(kRecords, results, fs::copy_options::recursive);
  fs::copy(kRecordsV2, results, fs::copy_options::recursive);
  LeaderboardReport report;
  std::string err;
  ASSERT_TRUE(
      build_leaderboard({results.string(), (results / "board").string(), kSpecs}, &report, &err))
      << err;
  EXPECT_EQ(report.records_read, 15);
  EXPECT_EQ(report.records_ranked, 8);
  const json board = json::parse(slurp(results / "board" / "leaderboard.json"));
  ASSERT_EQ(board["groups"].size(), 5u);
  for (const json& g : board["groups"]) {
    const bool v1 = g["challenge"] == "nvfp4_matmul";
    for (const json& e : g["entries"])
      EXPECT_EQ(e["notes"], v1 ? json({"v1 record"}) : json::array()) << e["file"];
  }
}

// A record's solution.language (the judge writes it since the Python worker): the board names
// a solution that is not CUDA with its language, in every form.
TEST(MixedBoard, ASolutionThatIsNotCudaIsNamedWithItsLanguage) {
  const fs::path results = fresh_dir("language");
  fs::copy(kRecordsV2, results, fs::copy_options::recursive);
  json record = json::parse(slurp(results / kQuant));
  record["solution"]["language"] = "triton";
  spit(results / kQuant, record.dump(1));
  LeaderboardReport report;
  std::string err;
  ASSERT_TRUE(
      build_leaderboard({results.string(), (results / "board").string(), kSpecs}, &report, &err))
      << err;
  EXPECT_TRUE(report.rejected.empty()) << report.rejected.front();
  const json board = json::parse(slurp(results / "board" / "leaderboard.json"));
  const json& quant = board["groups"][0];
  ASSERT_EQ(quant["entries"].size(), 2u);
  EXPECT_EQ(quant["entries"][0]["solution"], "quant_vectorized");
  EXPECT_EQ(quant["entries"][0]["language"], "triton");
  EXPECT_EQ(quant["entries"][1]["language"], "cuda");
  const std::string md = slurp(results / "board" / "leaderboard.md");
  EXPECT_NE(md.find("| 1 | quant\\_vectorized (triton) |"), std::string::npos) << md;
  EXPECT_NE(md.find("| 2 | quant\\_scalar |"), std::string::npos) << md;
  const std::string html = slurp(results / "board" / "leaderboard.html");
  EXPECT_NE(html.find("<td>quant_vectorized (triton)</td>"), std::string::npos);
}

// parse_record() on a fixture record (v1 by default) changed by `edit`.
std::string reason_for(const std::function<void(json&)>& edit,
                       const std::string& file = kRecords + "/" + kBest) {
  json record = json::parse(slurp(file));
  edit(record);
  SubmitRecord r;
  std::string reason;
  if (parse_record(record.dump(), &r, &reason)) return "accepted";
  return reason;
}

std::string v2_reason(const std::function<void(json&)>& edit, const std::string& file = kW4a16) {
  return reason_for(edit, kRecordsV2 + "/" + file);
}

// The reason for raw text, or "accepted".
std::string text_reason(const std::string& text) {
  SubmitRecord r;
  std::string reason;
  return parse_record(text, &r, &reason) ? "accepted" : reason;
}

TEST(ParseRecord, MigratesAV1Record) {
  SubmitRecord r;
  std::string reason;
  ASSERT_TRUE(load_record(kRecords + "/" + kBest, &r, &reason)) << reason;
  EXPECT_EQ(r.file, kRecords + "/" + kBest);
  EXPECT_EQ(r.schema, "fp4arena.submit.v1");
  EXPECT_TRUE(r.migrated_from_v1);
  EXPECT_EQ(r.challenge, "nvfp4_matmul");
  EXPECT_EQ(r.spec_version, 2);
  EXPECT_EQ(r.solution_stem, "wgmma_pipelined");
  EXPECT_EQ(r.device_name, "NVIDIA H200");
  EXPECT_EQ(r.metric.name, "tflops");
  EXPECT_EQ(r.metric.unit, "TF/s");
  EXPECT_EQ(r.metric.workload, "flops");
  EXPECT_EQ(r.metric.expression, "2*M*N*K");
  EXPECT_EQ(r.limit_name, "fp16_dense");
  EXPECT_NEAR(r.limit_value, 1070.53056, 1e-9);  // recomputed, not the record's 1070.4
  EXPECT_EQ(r.device.mem_bus_width_bits, 0);     // v1 has none
  EXPECT_TRUE(r.passed);
  EXPECT_TRUE(r.score_valid);
  EXPECT_DOUBLE_EQ(*r.score, 761.9);
  ASSERT_EQ(r.benchmarks.size(), 2u);
  const RecordCase& c = r.benchmarks[0];
  EXPECT_EQ(c.dims, (std::map<std::string, std::int64_t>{{"M", 2048}, {"N", 18432}, {"K", 3072}}));
  EXPECT_DOUBLE_EQ(c.workload, 231928233984.0);
  EXPECT_DOUBLE_EQ(*c.value, 748.2);
  ASSERT_TRUE(c.yardstick);
  EXPECT_EQ(c.yardstick->name, "cuBLAS FP16 GEMM");
  EXPECT_DOUBLE_EQ(c.yardstick->median_ms, 0.29);
  EXPECT_DOUBLE_EQ(c.yardstick->value, 799.8);
  EXPECT_DOUBLE_EQ(c.yardstick->ratio, 0.935);
  EXPECT_TRUE(r.failure.empty());
}

TEST(ParseRecord, ReadsAV2Record) {
  SubmitRecord r;
  std::string reason;
  ASSERT_TRUE(load_record(kRecordsV2 + "/" + kQuant, &r, &reason)) << reason;
  EXPECT_EQ(r.schema, "fp4arena.submit.v2");
  EXPECT_FALSE(r.migrated_from_v1);
  EXPECT_EQ(r.action, "submit");
  EXPECT_EQ(r.metric.name, "gbps");
  EXPECT_EQ(r.metric.unit, "GB/s");
  EXPECT_EQ(r.metric.expression, "M*K*2 + M*K/2 + M*K/16");
  EXPECT_EQ(r.limit_name, "dram");
  EXPECT_NEAR(r.limit_value, 4916.736, 1e-9);
  EXPECT_EQ(r.device.mem_bus_width_bits, 6144);
  ASSERT_EQ(r.benchmarks.size(), 2u);
  EXPECT_EQ(r.benchmarks[0].dims, (std::map<std::string, std::int64_t>{{"M", 8192}, {"K", 4096}}));
  EXPECT_DOUBLE_EQ(r.benchmarks[0].workload, 8192.0 * 4096 * (2 + 0.5 + 0.0625));
  EXPECT_EQ(r.benchmarks[0].yardstick->name, "device-to-device copy of the same bytes");
  EXPECT_NEAR(*r.score, 3564.5, 1e-9);
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
            "field schema is \"fp4arena.submit.v0\", expected \"fp4arena.submit.v2\" or "
            "\"fp4arena.submit.v1\"");
  EXPECT_EQ(reason_for([](json& r) { r["solution"]["sha256"] = "abc"; }),
            "field solution.sha256 \"abc\" is not 64 hex digits");
  EXPECT_EQ(reason_for([](json& r) { r["benchmarks"][1]["tflops"] = nullptr; }),
            "field benchmarks[1].tflops must be a number when the case passed");
  EXPECT_EQ(reason_for([](json& r) { r["score"]["tflops_geomean"] = nullptr; }),
            "field score.tflops_geomean must be a number when score.valid is true");
  EXPECT_EQ(reason_for([](json& r) { r["created_utc"] = "yesterday"; }),
            "field created_utc \"yesterday\" is not a UTC time (YYYY-MM-DDTHH:MM:SSZ)");
  EXPECT_EQ(reason_for([](json& r) { r["challenge"]["name"] = "../../etc"; }),
            "field challenge.name \"../../etc\" is not a challenge name (1 to 64 letters, "
            "digits, '_', '-', '.')");
  EXPECT_EQ(v2_reason([](json& r) { r["benchmarks"][0].erase("yardstick"); }),
            "missing field benchmarks[0].yardstick");
  EXPECT_EQ(v2_reason([](json& r) { r["benchmarks"][0]["dims"]["M"] = -1; }),
            "field benchmarks[0].dims.M must be in [0, 2147483647], got -1");
  EXPECT_EQ(v2_reason([](json& r) { r["tests"][0]["seed"] = -1; }),
            "field tests[0].seed must be in [0, 9223372036854775807], got -1");
  EXPECT_EQ(v2_reason([](json& r) { r["device"]["compute_capability"] = "nine"; }),
            "field device.compute_capability \"nine\" is not MAJOR.MINOR");
  EXPECT_EQ(v2_reason([](json& r) { r["benchmarks"][0]["verdict"] = "fast"; }),
            "field benchmarks[0].verdict \"fast\" is not a verdict");
  // timing_mismatch is a v2 verdict only.
  EXPECT_EQ(v2_reason([](json& r) {
              r["tests"][0]["verdict"] = "timing_mismatch";
              r["passed"] = false;
            }),
            "accepted");
  EXPECT_EQ(reason_for([](json& r) {
              r["tests"][0]["verdict"] = "timing_mismatch";
              r["passed"] = false;
            }),
            "field tests[0].verdict \"timing_mismatch\" is not a verdict");
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
  EXPECT_EQ(v2_reason([](json& r) { r["benchmarks"][0]["yardstick"] = nullptr; }), "accepted");
  EXPECT_EQ(v2_reason([](json& r) { r["solution"]["author"] = nullptr; }), "accepted");
  EXPECT_EQ(v2_reason([](json& r) { r["solution"]["language"] = "pytorch"; }), "accepted");
  EXPECT_EQ(v2_reason([](json& r) { r["solution"]["language"] = "fortran"; }),
            "field solution.language \"fortran\" is not one of cuda, triton, pytorch");
  EXPECT_EQ(v2_reason([](json& r) {
              r["solution"].erase("headers");
              r["solution"].erase("nvcc_flags");
            }),
            "accepted");
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
  EXPECT_EQ(v2_reason([](json& r) {
              r["timing_method"] = "text";
              r["benchmarks"][0]["host_call_median_ms"] = 0.01;
              r["tests"][0]["outputs"][0]["max_abs_err"] = 0.0;
            }),
            "accepted");
}

// One rejection per rule the board enforces on v2 records.
TEST(ParseRecordV2, RejectsASelfDeclaredLimit) {
  EXPECT_EQ(v2_reason([](json& r) { r["limit"]["value"] = 3000.0; }),
            "field limit.value 3000.0 differs from the judge's own limit for this device "
            "(fp16_dense 1070.5) by more than 1%");
  EXPECT_EQ(v2_reason([](json& r) { r["device"]["limits"]["fp8_dense"] = 9999.0; }),
            "field device.limits.fp8_dense 9999.0 differs from the judge's own limit for this "
            "device (fp8_dense 2141.1) by more than 1%");
  EXPECT_EQ(v2_reason([](json& r) { r["limit"]["value"] = nullptr; }),
            "field limit.value null differs from the judge's own limit for this device "
            "(fp16_dense 1070.5) by more than 1%");
  // A limit that does not bound the metric, or a unit that is not the metric's.
  EXPECT_EQ(v2_reason([](json& r) {
              r["limit"] = {{"name", "dram"}, {"value", 4916.7}, {"unit", "TF/s"}};
            }),
            "field limit.name dram does not bound the metric tflops");
  EXPECT_EQ(v2_reason([](json& r) { r["limit"]["unit"] = "GB/s"; }),
            "field limit.unit \"GB/s\" is not the metric's unit TF/s");
  EXPECT_EQ(v2_reason([](json& r) { r["limit"]["name"] = "warp_speed"; }),
            "field limit.name \"warp_speed\" is not a limit (fp16_dense, fp8_dense, fp4_dense, "
            "dram)");
}

TEST(ParseRecordV2, RejectsAnImplausibleDevice) {
  EXPECT_EQ(v2_reason([](json& r) { r["device"]["sm_count"] = 500; }),
            "implausible device: device.sm_count 500 is outside 1..144 for this architecture");
  EXPECT_EQ(
      v2_reason([](json& r) { r["device"]["compute_capability"] = "7.5"; }),
      "implausible device: device.compute_capability 7.5 is not in the judge's table of limits");
  EXPECT_EQ(v2_reason([](json& r) { r["device"]["mem_bus_width_bits"] = 0; }, kQuant),
            "implausible device: device.mem_bus_width_bits and device.mem_clock_max_mhz must be "
            "positive for a dram limit");
  // A faster clock would raise the limit: the table bounds it.
  EXPECT_TRUE(starts_with(v2_reason([](json& r) { r["device"]["sm_clock_max_mhz"] = 9000; }),
                          "implausible device: device.sm_clock_max_mhz"));
}

TEST(ParseRecordV2, RejectsAValueAboveTheLimit) {
  // Every figure consistent, the limit matching the (slower) device: still impossible.
  EXPECT_EQ(v2_reason([](json& r) {
              r["device"]["sm_clock_max_mhz"] = 1000;
              r["limit"]["value"] = 132 * 1000 * 4096 / 1e6;
              r["device"]["limits"] = json::object();
              for (json& b : r["benchmarks"]) b["pct_of_limit"] = nullptr;
            }),
            "benchmarks[0] 'prefill': value 612.0 TF/s exceeds the device's physical limit "
            "(fp16_dense 540.7 TF/s, from the judge's table)");
}

TEST(ParseRecordV2, RejectsInconsistentFigures) {
  EXPECT_EQ(v2_reason([](json& r) { r["benchmarks"][1]["value"] = 500.0; }),
            "inconsistent: benchmarks[1] 'decode': value 500.0 != workload/median_ms/1e9 = 433.0 "
            "(beyond 1%)");
  EXPECT_EQ(v2_reason([](json& r) { r["benchmarks"][0]["value"] = 3600.0; }, kQuant),
            "inconsistent: benchmarks[0] 'llama_act': value 3600.0 != workload/median_ms/1e6 = "
            "3509.5 (beyond 1%)");
  // Within 1% is the judge's rounding, not a lie.
  EXPECT_EQ(v2_reason([](json& r) { r["benchmarks"][1]["value"] = 435.0; }), "accepted");
}

TEST(ParseRecordV2, RejectsAMedianOutsideMinMax) {
  EXPECT_EQ(v2_reason([](json& r) { r["benchmarks"][0]["min_ms"] = 0.3; }),
            "inconsistent: benchmarks[0] 'prefill': median_ms 0.2246 is outside [min_ms, max_ms] "
            "= [0.3000, 0.2291]");
  EXPECT_EQ(v2_reason([](json& r) { r["benchmarks"][0]["max_ms"] = 0.1; }),
            "inconsistent: benchmarks[0] 'prefill': median_ms 0.2246 is outside [min_ms, max_ms] "
            "= [0.2212, 0.1000]");
  EXPECT_EQ(v2_reason([](json& r) { r["benchmarks"][0]["median_ms"] = 0.0; }),
            "inconsistent: benchmarks[0] 'prefill': median_ms must be positive where value is "
            "given");
}

TEST(ParseRecordV2, RejectsABadYardstick) {
  EXPECT_EQ(v2_reason([](json& r) { r["benchmarks"][0]["yardstick"]["ratio"] = 0.95; }),
            "inconsistent: benchmarks[0] 'prefill': yardstick.ratio 0.950 != "
            "value/yardstick.value = 0.785 (beyond 1%)");
  EXPECT_EQ(v2_reason([](json& r) { r["benchmarks"][0]["yardstick"]["value"] = 650.0; }),
            "inconsistent: benchmarks[0] 'prefill': yardstick.value 650.0 != "
            "workload/yardstick.median_ms/1e9 = 780.0 (beyond 1%)");
  EXPECT_EQ(v2_reason([](json& r) { r["benchmarks"][0]["yardstick"]["median_ms"] = -1.0; }),
            "inconsistent: benchmarks[0] 'prefill': yardstick.median_ms must be positive");
  // v1: the same rule on its own field names.
  EXPECT_EQ(reason_for([](json& r) { r["benchmarks"][0]["ratio_to_cublas"] = 0.8; }),
            "inconsistent: benchmarks[0] 'table5': ratio_to_cublas 0.800 != "
            "tflops/cublas_fp16_tflops = 0.935 (beyond 1%)");
}

TEST(ParseRecordV2, RejectsABadGeomeanOrPassed) {
  EXPECT_EQ(v2_reason([](json& r) { r["score"]["geomean"] = 600.0; }),
            "inconsistent: score.geomean 600.0 != geometric mean of benchmarks[].value 514.8 "
            "(beyond 1%)");
  EXPECT_EQ(v2_reason([](json& r) { r["tests"][1]["verdict"] = "wrong_answer"; }),
            "inconsistent: passed is true but tests[1] 'tails' has verdict wrong_answer");
  EXPECT_EQ(v2_reason([](json& r) { r["benchmarks"][1]["verdict"] = "timeout"; }),
            "inconsistent: passed is true but benchmarks[1] 'decode' has verdict timeout");
  EXPECT_EQ(v2_reason([](json& r) { r["score"]["valid"] = false; }),
            "inconsistent: passed is true but score.valid is false");
  EXPECT_EQ(v2_reason([](json& r) { r["benchmarks"][1]["pct_of_limit"] = 80.0; }),
            "inconsistent: benchmarks[1] 'decode': pct_of_limit 80.0 != value/limit.value*100 = "
            "40.4 (beyond 1%)");
}

TEST(ParseRecordV2, RejectsAWorkloadMismatch) {
  EXPECT_EQ(v2_reason([](json& r) { r["benchmarks"][0]["workload"] = 137438953473.0; }),
            "inconsistent: benchmarks[0] 'prefill': workload 137438953473 != 2*M*N*K = "
            "137438953472");
  EXPECT_EQ(v2_reason([](json& r) { r["benchmarks"][0]["dims"]["K"] = 8192; }),
            "inconsistent: benchmarks[0] 'prefill': workload 137438953472 != 2*M*N*K = "
            "274877906944");
  EXPECT_EQ(v2_reason([](json& r) { r["benchmarks"][0]["dims"].erase("K"); }),
            "inconsistent: benchmarks[0] 'prefill': metric.expression cannot be evaluated on its "
            "dims: expression \"2*M*N*K\": unknown name 'K'");
  // A product that would overflow int64 is refused, not computed (the spec's own evaluator).
  EXPECT_EQ(v2_reason([](json& r) {
              r["metric"]["expression"] = "M*N*K*M*N*K";
              r["limit"]["value"] = 1070.5;
            }),
            "inconsistent: benchmarks[0] 'prefill': metric.expression cannot be evaluated on its "
            "dims: expression \"M*N*K*M*N*K\": overflow");
  // Also a number too large for int64, before the evaluator reaches the unknown name.
  EXPECT_EQ(v2_reason([](json& r) { r["metric"]["expression"] = "99999999999999999999*nope"; }),
            "inconsistent: benchmarks[0] 'prefill': metric.expression cannot be evaluated on its "
            "dims: expression \"99999999999999999999*nope\": number too large");
  EXPECT_EQ(v2_reason([](json& r) { r["metric"]["expression"] = "2*M*N*K; rm -rf /"; }),
            "field metric.expression \"2*M*N*K; rm -rf /\" may hold only names, integers, + - * "
            "/ ( ) and spaces");
  EXPECT_EQ(v2_reason([](json& r) {
              r["metric"]["expression"] = std::string(40, '(') + "M" + std::string(40, ')');
            }),
            "field metric.expression \"((((((((((((((((((((((((((((((((((((((((...\" nests "
            "parentheses deeper than 32");
  EXPECT_EQ(v2_reason([](json& r) { r["metric"]["unit"] = "GB/s"; }),
            "field metric: name/unit/workload \"tflops\"/\"GB/s\"/\"flops\" is neither "
            "tflops/TF/s/flops nor gbps/GB/s/bytes");
}

TEST(ParseRecordV2, NonFiniteAndAbsurdNumbersNameTheField) {
  const std::string text = slurp(kRecordsV2 + "/" + kW4a16);
  auto replaced = [&](const std::string& from, const std::string& to) {
    std::string t = text;
    const size_t at = t.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return at == std::string::npos ? std::string() : t.replace(at, from.size(), to);
  };
  // nlohmann refuses 1e999 ("number overflow") without saying where: the board's scan does.
  EXPECT_EQ(text_reason(replaced("\"median_ms\": 0.22457", "\"median_ms\": 1e999")),
            "field benchmarks[0].median_ms is not a finite number (1e999)");
  EXPECT_EQ(text_reason(replaced("\"geomean\": 514.76", "\"geomean\": -1e999")),
            "field score.geomean is not a finite number (-1e999)");
  EXPECT_EQ(text_reason(replaced("\"wall_ms\": 0.2", "\"wall_ms\": 1e999")),
            "field tests[0].wall_ms is not a finite number (1e999)");
  EXPECT_EQ(text_reason("1e999"), "field (top level) is not a finite number (1e999)");
  EXPECT_EQ(text_reason(replaced("\"geomean\": 514.76", "\"geomean\": 1e40")),
            "field score.geomean is out of range (1e+40)");
  EXPECT_EQ(text_reason(replaced("\"sm_count\": 132", "\"sm_count\": 99999999999999999999")),
            "field device.sm_count must be an integer, got 1e+20");
  EXPECT_EQ(text_reason(replaced("\"sm_count\": 132", "\"sm_count\": 18446744073709551615")),
            "field device.sm_count is out of range");
}

TEST(ParseRecordV2, RefusesDeepNestingTruncatedUtf8AndHugeText) {
  const std::string text = slurp(kRecordsV2 + "/" + kW4a16);
  std::string deep = text;
  deep.insert(deep.rfind('}'), ", \"extra\": " + std::string(100, '[') + std::string(100, ']'));
  EXPECT_EQ(text_reason(deep), "record nested deeper than 64 levels");
  // Far deeper than any recursion could survive: refused by the scan, not by a crash.
  EXPECT_EQ(text_reason(std::string(1 << 20, '[')), "record nested deeper than 64 levels");
  // Brackets inside strings do not count.
  std::string quoted = text;
  quoted.insert(quoted.rfind('}'), ", \"extra\": \"" + std::string(100, '[') + "\"");
  EXPECT_EQ(text_reason(quoted), "accepted");

  std::string truncated = text;
  const size_t author = truncated.find("Ada Lovelace");
  truncated.replace(author, 12, "Ada \xC3");  // the first byte of a two-byte sequence
  const std::string reason = text_reason(truncated);
  EXPECT_TRUE(starts_with(reason, "invalid JSON: ")) << reason;
  EXPECT_TRUE(valid_utf8(reason)) << reason;

  std::string huge = text;
  huge.insert(huge.rfind('}'), ", \"pad\": \"" + std::string(kMaxRecordBytes, ' ') + "\"");
  EXPECT_EQ(text_reason(huge), "record of " + std::to_string(huge.size()) +
                                   " bytes is larger than the board reads (16777216)");
}

TEST(ParseRecordV2, ShortensWithoutCuttingUtf8) {
  std::string verdict = "a";
  for (int i = 0; i < 30; ++i) verdict += "\xC3\xA9";  // é
  const std::string reason = v2_reason([&](json& r) { r["tests"][0]["verdict"] = verdict; });
  EXPECT_TRUE(starts_with(reason, "field tests[0].verdict \"a\xC3\xA9")) << reason;
  EXPECT_TRUE(valid_utf8(reason)) << reason;
  EXPECT_NE(reason.find("...\" is not a verdict"), std::string::npos) << reason;
}

TEST(ParseRecordV2, NoInputCrashesTheParser) {
  // Cuts and byte flips of a valid record: every one is accepted or refused with a reason.
  const std::string text = slurp(kRecordsV2 + "/" + kQuant);
  std::mt19937 rng(7);
  int refused = 0;
  for (int i = 0; i < 400; ++i) {
    std::string t = text;
    if (i % 2) {
      t.resize(rng() % t.size());
    } else {
      for (int k = 0; k < 3; ++k) t[rng() % t.size()] = static_cast<char>(rng());
    }
    const std::string reason = text_reason(t);
    if (reason != "accepted") ++refused;
    EXPECT_FALSE(reason.empty());
    EXPECT_TRUE(valid_utf8(reason)) << reason;
  }
  EXPECT_GT(refused, 200);
}

TEST(ParseRecord, RejectsImpossibleOrInconsistentV1Figures) {
  // The record's own peak is not the judge's: refused, whatever it is.
  EXPECT_EQ(reason_for([](json& r) { r["device"]["peak_fp16_dense_tflops"] = 770.0; }),
            "field device.peak_fp16_dense_tflops 770.0 differs from the judge's own limit for "
            "this device (fp16_dense 1070.5) by more than 1%");
  // A device whose limit (770 TF/s) is under one case but above the score.
  EXPECT_EQ(reason_for([](json& r) {
              r["device"]["sm_clock_max_mhz"] = 1424.2;
              r["device"]["peak_fp16_dense_tflops"] = 770.0;
            }),
            "benchmarks[1] 'llama_ffn': tflops 775.9 TF/s exceeds the device's physical limit "
            "(fp16_dense 770.0 TF/s, from the judge's table)");
  EXPECT_EQ(reason_for([](json& r) { r["benchmarks"][0]["flops"] = 231928233985; }),
            "inconsistent: benchmarks[0] 'table5': flops 231928233985 != 2*M*N*K = 231928233984");
  EXPECT_EQ(reason_for([](json& r) { r["benchmarks"][0]["K"] = 4096; }),
            "inconsistent: benchmarks[0] 'table5': flops 231928233984 != 2*M*N*K = 309237645312");
  EXPECT_EQ(reason_for([](json& r) { r["score"]["tflops_geomean"] = 780.0; }),
            "inconsistent: score.tflops_geomean 780.0 != geometric mean of benchmarks[].tflops "
            "761.9 (beyond 1%)");
  EXPECT_EQ(reason_for([](json& r) { r["benchmarks"][0]["min_ms"] = 0.32; }),
            "inconsistent: benchmarks[0] 'table5': median_ms 0.3100 is outside [min_ms, max_ms] = "
            "[0.3200, null]");
  // Within 1% is the judge's rounding, not a lie.
  EXPECT_EQ(reason_for([](json& r) { r["score"]["tflops_geomean"] = 765.0; }), "accepted");
  EXPECT_EQ(reason_for([](json& r) { r["benchmarks"][0]["tflops"] = 754.0; }), "accepted");
  EXPECT_EQ(reason_for([](json& r) { r["tests"][0]["verdict"] = "wrong_answer"; }),
            "inconsistent: passed is true but tests[0] 'example' has verdict wrong_answer");
  EXPECT_EQ(reason_for([](json& r) { r["score"]["valid"] = false; }),
            "inconsistent: passed is true but score.valid is false");
  EXPECT_EQ(reason_for([](json& r) { r["benchmarks"] = json::array(); }),
            "inconsistent: score.valid is true but benchmarks is empty");
  EXPECT_EQ(reason_for([](json& r) { r["benchmarks"][0].erase("ratio_to_cublas"); }),
            "field benchmarks[0]: cublas_fp16_ms, cublas_fp16_tflops and ratio_to_cublas go "
            "together");
}

TEST(ParseRecord, AnHonestFailureIsValid) {
  // The judge's own over-the-limit verdict on a slower device: a failed record, not a lie.
  EXPECT_EQ(reason_for([](json& r) {
              const double limit = 132 * 1200 * 4096 / 1e6;
              r["device"]["sm_clock_max_mhz"] = 1200;
              r["device"]["peak_fp16_dense_tflops"] = limit;
              for (json& b : r["benchmarks"])
                b["pct_of_peak"] = b["tflops"].get<double>() / limit * 100;
              r["score"] = {{"tflops_geomean", nullptr}, {"valid", false}, {"reason", "over_peak"}};
              r["passed"] = false;
            }),
            "accepted");
}

// testing_util::committed_record_file, with a failure when there is none.
std::string committed_record_file(const std::string& challenge, const std::string& device,
                                  const std::string& rung) {
  const std::string file = testing_util::committed_record_file(challenge, device, rung);
  if (file.empty())
    ADD_FAILURE() << "no " << rung << " record in results/" << challenge << "/" << device;
  return file;
}

// Where a submit record is kept: the committed records' own names.
TEST(RecordPath, NamesTheFileAsTheCommittedRecordsAre) {
  EXPECT_EQ(record_path("results", "nvfp4_matmul", "NVIDIA H100 80GB HBM3",
                        "solutions/nvfp4_matmul/wgmma_thin_tile.cu",
                        "d1395247a2fc" + std::string(52, '0')),
            "results/nvfp4_matmul/nvidia-h100-80gb-hbm3/wgmma_thin_tile-d1395247a2fc.json");
  EXPECT_EQ(record_path("r", "c", "  ", "a.b.cu", std::string(64, 'f')),
            "r/c/unknown/a.b-ffffffffffff.json");
  // A committed record's own name is the one record_path gives its device, rung and hash.
  const fs::path file = committed_record_file("nvfp4_matmul", "nvidia-h200", "wgmma_thin_tile");
  const std::string stem = file.stem().string();
  const std::string hash = stem.substr(stem.rfind('-') + 1);
  EXPECT_EQ(fs::path(FP4ARENA_SOURCE_DIR) /
                record_path("results", "nvfp4_matmul", "NVIDIA H200", "wgmma_thin_tile.cu", hash),
            file);
}

// A record names a header below the judge's working folder by its path from there, as it names
// the solution; one elsewhere keeps its absolute path.
TEST(RecordPath, AHeaderBelowTheWorkingFolderIsNamedFromIt) {
  EXPECT_EQ(recorded_header_path("/home/alice/fp4arena/solutions/nvfp4_matmul/hopper.cuh",
                                 "/home/alice/fp4arena"),
            "solutions/nvfp4_matmul/hopper.cuh");
  EXPECT_EQ(recorded_header_path("/home/alice/fp4arena/solutions/x.cuh", "/home/alice/fp4arena/"),
            "solutions/x.cuh");
  EXPECT_EQ(recorded_header_path("/opt/cutlass/include/cute/tensor.hpp", "/home/alice/fp4arena"),
            "/opt/cutlass/include/cute/tensor.hpp");
  EXPECT_EQ(recorded_header_path("/home/alice/fp4arena-old/a.cuh", "/home/alice/fp4arena"),
            "/home/alice/fp4arena-old/a.cuh");
  EXPECT_EQ(recorded_header_path("/home/alice/fp4arena/a.cuh", ""), "/home/alice/fp4arena/a.cuh");
}

TEST(CheckAgainstSpec, TheMetricMustBeTheSpecs) {
  auto check = [](const std::function<void(json&)>& edit, const std::string& file = kW4a16) {
    json j = json::parse(slurp(kRecordsV2 + "/" + file));
    edit(j);
    SubmitRecord r;
    std::string reason;
    if (!parse_record(j.dump(), &r, &reason)) return "parse: " + reason;
    return check_record_against_spec(&r, kSpecs, &reason) ? std::string("accepted") : reason;
  };
  EXPECT_EQ(check([](json&) {}), "accepted");
  EXPECT_EQ(check([](json&) {}, kQuant), "accepted");
  // Same value on every benchmark, another expression: still not the challenge's metric.
  EXPECT_EQ(check([](json& r) { r["metric"]["expression"] = "2*K*N*M"; }),
            "metric expression differs from the challenge's spec (record: tflops \"2*K*N*M\", "
            "spec: tflops \"2*M*N*K\")");
  EXPECT_EQ(check([](json& r) { r["metric"]["expression"] = " 2 * M*N*K "; }), "accepted");
  EXPECT_EQ(check([](json& r) { r["challenge"]["spec_version"] = 7; }),
            "challenge.spec_version 7 is newer than the challenge's spec (v1)");
  EXPECT_EQ(check([](json& r) {
              r["challenge"]["spec_version"] = 0;
              r["metric"]["expression"] = "2*K*N*M";
            }),
            "accepted");  // an older spec is not compared
  EXPECT_EQ(check([](json& r) { r["challenge"]["name"] = "no_such_challenge"; }), "accepted");

  // The spec is read by the judge's own reader: one the judge refuses checks no record, though
  // its metric alone would have matched.
  const fs::path specs = fresh_dir("partial_spec");
  spit(specs / "w4a16_matmul" / "spec.json",
       R"({"spec_version": 1, "name": "w4a16_matmul", "metric": {"name": "tflops", )"
       R"("flops": "2*M*N*K"}, "limit": "fp16_dense"})");
  SubmitRecord w4a16;
  std::string why;
  ASSERT_TRUE(load_record(kRecordsV2 + "/" + kW4a16, &w4a16, &why)) << why;
  EXPECT_FALSE(check_record_against_spec(&w4a16, specs.string(), &why));
  EXPECT_TRUE(starts_with(why, "cannot check the metric against the challenge's spec: " +
                                   (specs / "w4a16_matmul" / "spec.json").string()))
      << why;

  // v1 records carry the NVFP4 matmul's metric, which its spec states.
  SubmitRecord v1;
  std::string reason;
  ASSERT_TRUE(load_record(kRecords + "/" + kBest, &v1, &reason)) << reason;
  v1.spec_version = 1;
  EXPECT_TRUE(
      check_record_against_spec(&v1, std::string(FP4ARENA_SOURCE_DIR) + "/challenges", &reason))
      << reason;
}

TEST(CheckAgainstSpec, TheSpeedOfLightIsTheSpecsOnTheRecordsDevice) {
  auto read = [](const std::function<void(json&)>& edit, SubmitRecord* r, std::string* reason,
                 const std::string& specs = kSpecs) {
    json j = json::parse(slurp(kRecordsV2 + "/" + kW4a16));
    edit(j);
    return parse_record(j.dump(), r, reason) && check_record_against_spec(r, specs, reason);
  };
  SubmitRecord r;
  std::string reason;
  ASSERT_TRUE(read([](json&) {}, &r, &reason)) << reason;  // a record older than the field
  Spec spec;
  ASSERT_TRUE(load_spec(kSpecs + "/w4a16_matmul", &spec, &reason)) << reason;
  for (const RecordCase& c : r.benchmarks) {
    const double sol = speed_of_light(spec, c.dims, r.device).ms;
    ASSERT_GT(sol, 0);
    ASSERT_TRUE(c.speed_of_light_ms && c.pct_of_speed_of_light) << c.name;
    EXPECT_DOUBLE_EQ(*c.speed_of_light_ms, sol);
    EXPECT_DOUBLE_EQ(*c.pct_of_speed_of_light, 100 * sol / *c.median_ms);
  }
  const double sol0 = *r.benchmarks[0].speed_of_light_ms;
  const double median0 = *r.benchmarks[0].median_ms;
  // The judge's own figures are accepted; a larger speed of light (a higher share) is not.
  auto state = [](double sol, double pct) {
    return [=](json& j) {
      j["benchmarks"][0]["speed_of_light_ms"] = sol;
      j["benchmarks"][0]["pct_of_speed_of_light"] = pct;
    };
  };
  EXPECT_TRUE(read(state(sol0, 100 * sol0 / median0), &r, &reason)) << reason;
  EXPECT_FALSE(read(state(2 * sol0, 200 * sol0 / median0), &r, &reason));
  EXPECT_TRUE(starts_with(reason, "inconsistent: benchmarks[0] 'prefill': speed_of_light_ms "))
      << reason;
  // A share that does not follow from the record's own median is refused when it is read.
  EXPECT_FALSE(read(state(sol0, 150 * sol0 / median0), &r, &reason));
  EXPECT_TRUE(starts_with(reason,
                          "inconsistent: benchmarks[0] 'prefill': "
                          "pct_of_speed_of_light "))
      << reason;
  // Without the challenge's spec the record's own figure is not shown.
  ASSERT_TRUE(read(state(sol0, 100 * sol0 / median0), &r, &reason, "")) << reason;
  EXPECT_FALSE(r.benchmarks[0].speed_of_light_ms);
  EXPECT_FALSE(r.benchmarks[0].pct_of_speed_of_light);
}

// W4A8's bytes come from each call's routing: the board shows the judge's figure where it lies
// within the spec's bounds, and none for a record that states none.
TEST(CheckAgainstSpec, ASpeedOfLightFromTheInputsIsHeldToTheSpecsBounds) {
  const std::string file =
      committed_record_file("w4a8_grouped_gemm", "nvidia-h200", "wgmma_fp8_decode");
  const std::string challenges = std::string(FP4ARENA_SOURCE_DIR) + "/challenges";
  Spec spec;
  std::string reason;
  ASSERT_TRUE(load_spec(challenges + "/w4a8_grouped_gemm", &spec, &reason)) << reason;
  // `scale` places each stated figure between the compute-only one (0) and the spec's (1).
  auto read = [&](double scale, SubmitRecord* r) {
    json j = json::parse(slurp(file));
    j["challenge"]["spec_version"] = spec.spec_version;  // the committed record is of spec 1
    for (json& b : j["benchmarks"]) {  // the record as one that states no speed of light
      for (const char* k : {"speed_of_light_ms", "pct_of_speed_of_light", "bound_by"}) b.erase(k);
    }
    if (scale >= 0) {
      SubmitRecord plain;
      EXPECT_TRUE(parse_record(j.dump(), &plain, &reason)) << reason;
      for (size_t i = 0; i < plain.benchmarks.size(); ++i) {
        const RecordCase& c = plain.benchmarks[i];
        const double all = speed_of_light(spec, c.dims, plain.device).ms;
        const double compute = speed_of_light(spec, c.dims, plain.device, 0).ms;
        const double sol = compute + scale * (all - compute);
        j["benchmarks"][i]["speed_of_light_ms"] = sol;
        j["benchmarks"][i]["pct_of_speed_of_light"] = 100 * sol / *c.median_ms;
      }
    }
    return parse_record(j.dump(), r, &reason) && check_record_against_spec(r, challenges, &reason);
  };
  SubmitRecord r;
  ASSERT_TRUE(read(-1, &r)) << reason;  // states none
  for (const RecordCase& c : r.benchmarks) EXPECT_FALSE(c.pct_of_speed_of_light) << c.name;
  ASSERT_TRUE(read(0.9, &r)) << reason;
  for (const RecordCase& c : r.benchmarks) EXPECT_TRUE(c.pct_of_speed_of_light) << c.name;
  EXPECT_FALSE(read(1.5, &r));  // more than every expert's weights
  EXPECT_NE(reason.find("the spec's compute-only and all-bytes figures"), std::string::npos)
      << reason;
}

TEST(BuildLeaderboard, RejectsFilesTheBoardCannotTrust) {
  const fs::path results = fresh_dir("untrusted");
  const std::string good = slurp(kRecordsV2 + "/" + kW4a16);
  json other = json::parse(good);
  other["metric"]["expression"] = "2*K*N*M";
  other["solution"]["sha256"] = std::string(64, 'f');
  spit(results / "w4a16_matmul" / "expr.json", other.dump(1));
  {
    // A file just over the cap: refused unread.
    std::ofstream huge(results / "w4a16_matmul" / "huge.json", std::ios::binary);
    huge << good;
    huge << std::string(kMaxRecordBytes + 1 - good.size(), ' ');
  }
  spit(results / "w4a16_matmul" / "deep.json", std::string(200000, '{'));
  // A file name that is not UTF-8 is shown with U+FFFD; the record is ranked.
  spit(results / "w4a16_matmul" / "caf\xE9.json", good);
  // A sweep kept beside the records is passed over: neither a record read nor a rejection.
  spit(results / "w4a16_matmul" / "sweeps" / "sweep.json",
       R"({"schema": "fp4arena.sweep.v1", "shapes": []})");
  LeaderboardReport report;
  std::string err;
  ASSERT_TRUE(
      build_leaderboard({results.string(), (results / "board").string(), kSpecs}, &report, &err))
      << err;
  EXPECT_EQ(report.records_read, 4);
  EXPECT_EQ(report.sweeps_skipped, 1);
  EXPECT_EQ(report.records_ranked, 1);
  const auto rejected = by_file(report.rejected, results.generic_string());
  ASSERT_EQ(rejected.size(), 3u);
  EXPECT_EQ(rejected.at("w4a16_matmul/expr.json"),
            "metric expression differs from the challenge's spec (record: tflops \"2*K*N*M\", "
            "spec: tflops \"2*M*N*K\")");
  EXPECT_EQ(rejected.at("w4a16_matmul/huge.json"),
            "file of 16777217 bytes is larger than the board reads (16777216)");
  EXPECT_EQ(rejected.at("w4a16_matmul/deep.json"), "record nested deeper than 64 levels");
  const json board = json::parse(slurp(results / "board" / "leaderboard.json"));
  EXPECT_EQ(board["groups"][0]["entries"][0]["file"], "w4a16_matmul/caf\xEF\xBF\xBD.json");
  for (const char* name : {"leaderboard.md", "leaderboard.html"})
    EXPECT_TRUE(valid_utf8(slurp(results / "board" / name))) << name;
  // Without a challenges folder the spec is not consulted.
  ASSERT_TRUE(
      build_leaderboard({results.string(), (results / "board").string(), ""}, &report, &err));
  EXPECT_EQ(report.records_ranked, 2);
}

SubmitRecord make(const std::string& file, const std::string& sha_char, double score,
                  const std::string& device = "NVIDIA H200", const std::string& judge = "0.1.0",
                  const std::string& date = "2026-11-20T00:00:00Z") {
  SubmitRecord r;
  r.file = file;
  r.schema = "fp4arena.submit.v2";
  r.judge_version = judge;
  r.created_utc = date;
  r.challenge = "nvfp4_matmul";
  r.spec_version = 1;
  r.solution_path = "solutions/nvfp4_matmul/" + file + ".cu";
  r.solution_stem = file;
  r.sha256 = std::string(64, sha_char[0]);
  r.device_name = device;
  r.metric = {"tflops", "TF/s", "flops", "2*M*N*K"};
  r.limit_name = "fp16_dense";
  r.limit_value = 1070.5;
  RecordCase c;
  c.name = "square";
  c.dims = {{"M", 1024}, {"N", 1024}, {"K", 1024}};
  c.workload = 2.0 * (1 << 30);
  c.verdict = "passed";
  c.median_ms = c.min_ms = c.max_ms = 1.0;
  c.value = score;
  r.benchmarks.push_back(c);
  r.score = score;
  r.score_valid = true;
  r.passed = true;
  r.timing_method = kTimingMethod;
  return r;
}

// A record timed by an earlier method (the worker's own events held to the judge's clocks,
// before judge-window-v1) is listed apart and never ranked beside the judge's own figures.
TEST(RankRecords, RecordsOfAnEarlierTimingMethodAreNotRanked) {
  SubmitRecord old = make("old", "a", 900.0);
  old.timing_method.clear();
  const Board b = rank_records({old, make("new", "b", 500.0)});
  ASSERT_EQ(b.groups.size(), 1u);
  ASSERT_EQ(b.groups[0].entries.size(), 1u);
  EXPECT_EQ(b.groups[0].entries[0].record.solution_stem, "new");
  ASSERT_EQ(b.not_ranked.size(), 1u);
  EXPECT_EQ(b.not_ranked[0].file, "old");
  EXPECT_TRUE(starts_with(b.not_ranked[0].reason, "not ranked: timed by an earlier method"))
      << b.not_ranked[0].reason;
}

// A record's "timing_method" is kept only where it names one of the judge's window methods
// exactly; records of judge 0.2 and earlier describe theirs in words.
TEST(ParseRecord, OnlyAWindowMethodsNameIsKept) {
  json j = json::parse(slurp(kRecordsV2 + "/" + kW4a16));
  const std::vector<std::pair<std::string, std::string>> read_as = {
      {"judge-window-v1", "judge-window-v1"},
      {"judge-window-v2", "judge-window-v2"},
      {"judge-window-v3", ""},
      {"per call: a blocking kernel ...", ""},
      {"", ""}};
  for (const auto& [method, kept] : read_as) {
    j["timing_method"] = method;
    const fs::path path = fresh_dir("method") / "r.json";
    spit(path, j.dump(2));
    SubmitRecord r;
    std::string reason;
    ASSERT_TRUE(load_record(path.string(), &r, &reason)) << reason;
    EXPECT_EQ(r.timing_method, kept) << method;
  }
}

// A record of the judge's other window method is listed apart, named by its method, and never
// ranked beside the judge's own figures: the two methods charge the judge's copies differently.
TEST(RankRecords, RecordsOfTheOtherWindowMethodAreNotRanked) {
  const char* other =
      kJudgeWindowMethod == WindowMethod::kV1 ? "judge-window-v2" : "judge-window-v1";
  SubmitRecord old = make("old", "a", 900.0);
  old.timing_method = other;
  const Board b = rank_records({old, make("new", "b", 500.0)});
  ASSERT_EQ(b.groups.size(), 1u);
  ASSERT_EQ(b.groups[0].entries.size(), 1u);
  EXPECT_EQ(b.groups[0].entries[0].record.solution_stem, "new");
  ASSERT_EQ(b.not_ranked.size(), 1u);
  EXPECT_TRUE(starts_with(b.not_ranked[0].reason, std::string("not ranked: timed by ") + other))
      << b.not_ranked[0].reason;
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

TEST(RankRecords, NeverMixesMetrics) {
  SubmitRecord gbps = make("g", "b", 3000);
  gbps.metric = {"gbps", "GB/s", "bytes", "M*N*K"};
  gbps.limit_name = "dram";
  const Board board = rank_records({make("t", "a", 100), gbps});
  ASSERT_EQ(board.groups.size(), 2u);
  EXPECT_EQ(board.groups[0].unit, "GB/s");
  EXPECT_EQ(board.groups[0].limit_name, "dram");
  EXPECT_EQ(board.groups[1].unit, "TF/s");
  EXPECT_NE(render_markdown(board).find("| rank | solution | score GB/s | square GB/s |"),
            std::string::npos);
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
  EXPECT_EQ(judge_series("weird"), "weird");
  EXPECT_EQ(judge_series(std::string(100000, '1') + ".2"), std::string(100000, '1') + ".2");
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
  EXPECT_FALSE(build_leaderboard({(out / "nope").string(), out.string(), ""}, &report, &err));
  EXPECT_EQ(err, "results directory " + (out / "nope").generic_string() + " does not exist");
}

TEST(BuildLeaderboard, SkipsItsOwnOutputInsideTheResults) {
  const fs::path results = fresh_dir("inside");
  fs::copy(kRecords, results, fs::copy_options::recursive);
  for (int run = 0; run < 2; ++run) {
    LeaderboardReport report;
    std::string err;
    ASSERT_TRUE(
        build_leaderboard({results.string(), (results / "board").string(), ""}, &report, &err))
        << err;
    EXPECT_EQ(report.records_read, 10) << "run " << run;
    EXPECT_EQ(report.records_ranked, 4) << "run " << run;
  }
  EXPECT_TRUE(fs::is_regular_file(results / "board" / "leaderboard.json"));
}

// Links planted in the output folder under the board's file names are replaced by the board's
// files, never written through: the file a link pointed at keeps its contents.
TEST(BuildLeaderboard, ReplacesLinksInItsOutputFolderInsteadOfFollowingThem) {
  const fs::path results = fresh_dir("links-results"), out = fresh_dir("links-out");
  fs::copy(kRecords, results, fs::copy_options::recursive);
  const fs::path victim = fresh_dir("links-victim") / "precious.txt";
  std::ofstream(victim) << "keep me\n";
  for (const char* name : {"leaderboard.json", "leaderboard.md", "leaderboard.html"}) {
    fs::create_symlink(victim, out / name);
  }
  LeaderboardReport report;
  std::string err;
  ASSERT_TRUE(build_leaderboard({results.string(), out.string(), ""}, &report, &err)) << err;
  std::ifstream in(victim);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "keep me\n");
  for (const char* name : {"leaderboard.json", "leaderboard.md", "leaderboard.html"}) {
    EXPECT_FALSE(fs::is_symlink(out / name)) << name;
    EXPECT_TRUE(fs::is_regular_file(out / name)) << name;
  }
}

}  // namespace
}  // namespace fp4arena
