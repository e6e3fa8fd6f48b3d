#include "harness/tools.h"

#include <gtest/gtest.h>

#include "harness/process.h"
#include "tests/test_util.h"

namespace fp4arena {
namespace {

TEST(SanitizerLog, CleanRun) {
  SanitizerSummary s =
      parse_sanitizer_log("========= COMPUTE-SANITIZER\n========= ERROR SUMMARY: 0 errors\n");
  EXPECT_TRUE(s.found_summary);
  EXPECT_EQ(s.errors, 0);
  EXPECT_TRUE(s.findings.empty());
}

TEST(SanitizerLog, FindingsWithTheirLocationAndSummedAcrossRuns) {
  const char* log =
      "========= COMPUTE-SANITIZER\n"
      "========= Invalid __global__ write of size 2 bytes\n"
      "=========     at k(const unsigned char *, __half *, int)+0x1b0 in /x/sol.cu:12\n"
      "=========     by thread (5,0,0) in block (0,0,0)\n"
      "=========     Address 0x7f0000000010 is out of bounds\n"
      "=========\n"
      "========= Program hit cudaErrorLaunchFailure (error 719) on CUDA API call\n"
      "========= ERROR SUMMARY: 1 error\n"
      "========= COMPUTE-SANITIZER\n"
      "========= Error: Race reported between Write access at k()+0x80\n"
      "=========     and Read access at k()+0x90 [16 hazards]\n"
      "========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)\n"
      "========= ERROR SUMMARY: 2 errors\n";
  SanitizerSummary s = parse_sanitizer_log(log);
  EXPECT_TRUE(s.found_summary);
  EXPECT_EQ(s.errors, 3);
  ASSERT_GE(s.findings.size(), 2u);
  EXPECT_EQ(s.findings[0],
            "Invalid __global__ write of size 2 bytes | at k(const unsigned char *, __half *, "
            "int)+0x1b0 in /x/sol.cu:12");
  EXPECT_NE(s.findings[1].find("Race reported"), std::string::npos);
}

TEST(SanitizerLog, RacecheckSummaryCounts) {
  SanitizerSummary s = parse_sanitizer_log(
      "========= COMPUTE-SANITIZER\n"
      "========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)\n");
  EXPECT_TRUE(s.found_summary);
  EXPECT_EQ(s.errors, 0);
  EXPECT_TRUE(s.findings.empty());
  s = parse_sanitizer_log(
      "========= RACECHECK SUMMARY: 3 hazards displayed (2 errors, 1 warning)\n");
  EXPECT_EQ(s.errors, 2);
}

TEST(SanitizerLog, MissingSummaryIsVisible) {
  SanitizerSummary s = parse_sanitizer_log("========= COMPUTE-SANITIZER\n");
  EXPECT_FALSE(s.found_summary);
}

TEST(NcuCsv, ReadsMetricsAndConvertsUnits) {
  const char* csv =
      "==PROF== Connected to process 123\n"
      "\"ID\",\"Process ID\",\"Kernel Name\",\"gpu__time_duration.sum\","
      "\"sm__throughput.avg.pct_of_peak_sustained_elapsed\","
      "\"sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active\","
      "\"sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active\","
      "\"dram__throughput.avg.pct_of_peak_sustained_elapsed\","
      "\"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum\","
      "\"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum\","
      "\"sm__issue_active.avg.pct_of_peak_sustained_elapsed\","
      "\"lts__throughput.avg.pct_of_peak_sustained_elapsed\"\n"
      "\"\",\"\",\"\",\"nsecond\",\"%\",\"%\",\"%\",\"%\",\"\",\"\",\"%\",\"%\"\n"
      "\"0\",\"123\",\"gemm(const unsigned char *, int)\",\"301,234\",\"85.5\",\"0\",\"91.25\","
      "\"12.5\",\"1,024\",\"0\",\"35.35\",\"45.51\"\n"
      "\"1\",\"123\",\"dequant\",\"2,000\",\"40\",\"n/a\",\"n/a\",\"80\",\"0\",\"0\",\"n/a\","
      "\"n/a\"\n";
  std::vector<KernelProfile> k;
  std::string err;
  ASSERT_TRUE(parse_ncu_raw_csv(csv, &k, &err)) << err;
  ASSERT_EQ(k.size(), 2u);
  EXPECT_EQ(k[0].name, "gemm(const unsigned char *, int)");
  EXPECT_DOUBLE_EQ(k[0].duration_us, 301.234);
  EXPECT_DOUBLE_EQ(k[0].sm_pct, 85.5);
  EXPECT_DOUBLE_EQ(k[0].tensor_pct, 91.25);  // the best tensor metric present
  EXPECT_DOUBLE_EQ(k[0].dram_pct, 12.5);
  EXPECT_DOUBLE_EQ(k[0].issue_pct, 35.35);
  EXPECT_DOUBLE_EQ(k[0].l2_pct, 45.51);
  EXPECT_DOUBLE_EQ(k[0].bank_conflicts, 1024);
  EXPECT_DOUBLE_EQ(k[1].duration_us, 2.0);
  EXPECT_DOUBLE_EQ(k[1].tensor_pct, -1);  // n/a
  EXPECT_DOUBLE_EQ(k[1].issue_pct, -1);
  EXPECT_DOUBLE_EQ(k[1].l2_pct, -1);
}

TEST(NcuCsv, HopperDramMetricName) {
  const char* csv =
      "\"ID\",\"Kernel Name\",\"gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed\"\n"
      "\"\",\"\",\"%\"\n"
      "\"0\",\"k\",\"42.5\"\n";
  std::vector<KernelProfile> k;
  std::string err;
  ASSERT_TRUE(parse_ncu_raw_csv(csv, &k, &err)) << err;
  EXPECT_DOUBLE_EQ(k[0].dram_pct, 42.5);
}

TEST(NcuCsv, TheBusiestPipeIsNamed) {
  const char* csv =
      "\"ID\",\"Kernel Name\",\"sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_active\","
      "\"sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active\","
      "\"sm__inst_executed_pipe_fma_type_fp16.avg.pct_of_peak_sustained_active\","
      "\"sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active\"\n"
      "\"\",\"\",\"%\",\"%\",\"%\",\"%\"\n"
      "\"0\",\"quantize\",\"78.86\",\"17.67\",\"99\",\"9.57\"\n"
      "\"1\",\"copy\",\"3\",\"2\",\"0\",\"41.5\"\n";
  std::vector<KernelProfile> k;
  std::string err;
  ASSERT_TRUE(parse_ncu_raw_csv(csv, &k, &err)) << err;
  ASSERT_EQ(k.size(), 2u);
  EXPECT_EQ(k[0].busiest_pipe, "alu");  // not fma_type_fp16: a sub-count of fma
  EXPECT_DOUBLE_EQ(k[0].busiest_pipe_pct, 78.86);
  EXPECT_EQ(k[1].busiest_pipe, "lsu");
}

TEST(NcuCsv, TheTwoLargestStallReasonsAreNamed) {
  const char* csv =
      "\"ID\",\"Kernel Name\","
      "\"smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio\","
      "\"smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio\","
      "\"smsp__average_warps_issue_stalled_selected_per_issue_active.ratio\","
      "\"smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio\","
      "\"smsp__average_warps_issue_stalled_wait_per_issue_active.ratio\"\n"
      "\"\",\"\",\"ratio\",\"ratio\",\"ratio\",\"ratio\",\"ratio\"\n"
      "\"0\",\"decode\",\"2.5\",\"14.25\",\"20\",\"3.5\",\"1\"\n"
      "\"1\",\"idle\",\"0\",\"n/a\",\"1\",\"0\",\"0\"\n";
  std::vector<KernelProfile> k;
  std::string err;
  ASSERT_TRUE(parse_ncu_raw_csv(csv, &k, &err)) << err;
  ASSERT_EQ(k.size(), 2u);
  ASSERT_EQ(k[0].top_stalls.size(), 2u);  // "selected" is issuing, not a stall
  EXPECT_EQ(k[0].top_stalls[0].first, "long_scoreboard");
  EXPECT_DOUBLE_EQ(k[0].top_stalls[0].second, 14.25);
  EXPECT_EQ(k[0].top_stalls[1].first, "short_scoreboard");
  EXPECT_TRUE(k[1].top_stalls.empty());  // zeros and n/a name nothing
}

// The raw page of a real profile (ncu 2025 on an NVIDIA H200, `--action profile` of
// w4a8_grouped_gemm's wgmma_fp8_decode.cu at prefill_dsv3_down, 2026-12-03): 1089 columns,
// ncu's warnings before the header, three kernels.
TEST(NcuCsv, ReadsARealHopperProfile) {
  std::string text, err;
  ASSERT_TRUE(read_file(testing_util::source_dir() + "/tests/data/ncu/h200_w4a8_prefill_raw.csv",
                        &text, &err))
      << err;
  std::vector<KernelProfile> k;
  ASSERT_TRUE(parse_ncu_raw_csv(text, &k, &err)) << err;
  ASSERT_EQ(k.size(), 3u);
  const KernelProfile& g = k[2];
  EXPECT_EQ(g.name.rfind("<unnamed>::w4a8_wgmma_grouped_kernel(", 0), 0u) << g.name;
  EXPECT_NEAR(g.duration_us, 2027.9, 0.1);
  EXPECT_DOUBLE_EQ(g.sm_pct, 53.73);
  EXPECT_DOUBLE_EQ(g.issue_pct, 35.35);
  EXPECT_DOUBLE_EQ(g.tensor_pct, 54.54);
  EXPECT_DOUBLE_EQ(g.l2_pct, 45.51);
  EXPECT_DOUBLE_EQ(g.dram_pct, 25.43);
  EXPECT_DOUBLE_EQ(g.bank_conflicts, 2813835);
  EXPECT_EQ(g.busiest_pipe, "alu");
  EXPECT_DOUBLE_EQ(g.busiest_pipe_pct, 29.63);
  ASSERT_EQ(g.top_stalls.size(), 2u);
  EXPECT_EQ(g.top_stalls[0].first, "long_scoreboard");
  EXPECT_EQ(g.top_stalls[1].first, "barrier");
  EXPECT_NEAR(k[1].duration_us, 49.1, 0.1);  // the x prologue
}

TEST(NcuCsv, NoHeaderIsAnError) {
  std::vector<KernelProfile> k;
  std::string err;
  EXPECT_FALSE(parse_ncu_raw_csv("==ERROR== something failed\n", &k, &err));
  EXPECT_NE(err.find("no CSV header"), std::string::npos);
}

}  // namespace
}  // namespace fp4arena
