#include "harness/leaderboard.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "tests/chromium.h"

namespace fp4arena {
namespace {

using testing_util::dump_dom;
using testing_util::find_chromium;

namespace fs = std::filesystem;

const std::string kRecords = std::string(FP4ARENA_SOURCE_DIR) + "/tests/data/records";

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// One <section class="group ..."> ... </section> per group, in page order.
std::vector<std::string> group_sections(const std::string& dom) {
  std::vector<std::string> out;
  size_t pos = 0;
  while ((pos = dom.find("<section class=\"group", pos)) != std::string::npos) {
    const size_t end = dom.find("</section>", pos);
    if (end == std::string::npos) break;
    out.push_back(dom.substr(pos, end - pos));
    pos = end;
  }
  return out;
}

std::vector<std::string> ranked_rows(const std::string& section) {
  static const std::regex row(
      R"re(<tr class="entry" data-rank="(\d+)" data-solution="([^"]*)">)re");
  std::vector<std::string> out;
  for (std::sregex_iterator it(section.begin(), section.end(), row), end; it != end; ++it)
    out.push_back((*it)[1].str() + ":" + (*it)[2].str());
  return out;
}

std::vector<std::string> chart_bars(const std::string& section) {
  static const std::regex bar(R"re(<rect class="bar[^"]*" data-solution="([^"]*)")re");
  std::vector<std::string> out;
  for (std::sregex_iterator it(section.begin(), section.end(), bar), end; it != end; ++it)
    out.push_back((*it)[1].str());
  return out;
}

class HtmlBoard : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(testing::TempDir()) /
           ("fp4arena_leaderboard_html_" + std::to_string(getpid()) + "_" +
            testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    LeaderboardReport report;
    std::string err;
    ASSERT_TRUE(build_leaderboard({kRecords, (dir_ / "board").string(), ""}, &report, &err)) << err;
    html_path_ = fs::absolute(dir_ / "board" / "leaderboard.html");
  }
  void TearDown() override { fs::remove_all(dir_); }

  // What the page must show, checked on the source and on the browser's DOM alike.
  void expect_board(const std::string& dom) {
    const std::vector<std::string> sections = group_sections(dom);
    // Three ranked groups, then "Not ranked" and "Rejected".
    ASSERT_EQ(sections.size(), 5u) << dom;
    const std::vector<std::vector<std::string>> want = {
        {"1:wgmma_pipelined"},
        {"1:wgmma_pipelined", "2:tiled_smem"},
        {"1:old_kernel"},
    };
    for (size_t g = 0; g < want.size(); ++g) {
      SCOPED_TRACE("group " + std::to_string(g));
      EXPECT_EQ(ranked_rows(sections[g]), want[g]);
      EXPECT_EQ(sections[g].find("<svg"), sections[g].rfind("<svg")) << "one chart per group";
      ASSERT_NE(sections[g].find("<svg"), std::string::npos);
      std::vector<std::string> bars = chart_bars(sections[g]);
      std::vector<std::string> names;
      for (const std::string& row : want[g]) names.push_back(row.substr(row.find(':') + 1));
      EXPECT_EQ(bars, names) << "one bar per entry, in rank order";
    }
    EXPECT_NE(sections[1].find("data-device=\"NVIDIA H200\""), std::string::npos);
    EXPECT_NE(sections[2].find("class=\"group superseded\""), std::string::npos);
    EXPECT_NE(sections[3].find("Not ranked"), std::string::npos);
    EXPECT_NE(sections[4].find("Rejected"), std::string::npos);
    EXPECT_NE(sections[4].find("too_fast-2423d35f36d6.json"), std::string::npos);
  }

  fs::path dir_;
  fs::path html_path_;
};

TEST_F(HtmlBoard, IsSelfContained) {
  const std::string html = read_text(html_path_);
  for (const char* banned : {"http:", "https:", "<script", "<link", "<img", "@import", "url("})
    EXPECT_EQ(html.find(banned), std::string::npos) << banned;
  EXPECT_NE(html.find("<style>"), std::string::npos);
  expect_board(html);
}

TEST_F(HtmlBoard, ChromiumRendersTheRankedRowsAndTheChart) {
  const std::string chromium = find_chromium();
  if (chromium.empty()) {
    GTEST_SKIP() << "chromium not installed: neither /usr/bin/chromium nor `command -v chromium`"
                    " (apt-get install -y chromium)";
  }
  const fs::path profile = dir_ / "profile";
  fs::create_directories(profile);
  const auto [status, dom] = dump_dom(chromium, html_path_.string(), profile.string());
  ASSERT_EQ(status, 0) << dom;
  // The dump is the browser's DOM, not the file: the parser closes and normalises the markup.
  ASSERT_NE(dom.find("<html lang=\"en\"><head>"), std::string::npos) << dom;
  ASSERT_NE(dom.find("</body></html>"), std::string::npos) << dom;
  expect_board(dom);
  EXPECT_NE(dom.find("761.9 TF/s"), std::string::npos);
}

// v2 records of a GB/s and a TF/s challenge: each group's columns, chart labels and footnote
// speak its own unit and yardstick.
TEST(HtmlBoardV2, EachGroupInItsOwnUnit) {
  const fs::path dir =
      fs::path(testing::TempDir()) / ("fp4arena_leaderboard_html_v2_" + std::to_string(getpid()));
  fs::remove_all(dir);
  LeaderboardReport report;
  std::string err;
  ASSERT_TRUE(build_leaderboard(
      {std::string(FP4ARENA_SOURCE_DIR) + "/tests/data/records_v2", (dir / "board").string(),
       std::string(FP4ARENA_SOURCE_DIR) + "/tests/data/challenge_specs"},
      &report, &err))
      << err;
  const std::string html = read_text(dir / "board" / "leaderboard.html");
  fs::remove_all(dir);
  const std::vector<std::string> sections = group_sections(html);
  ASSERT_EQ(sections.size(), 3u) << html;  // two groups, then "Not ranked"
  const std::string& gbps = sections[0];
  const std::string& tflops = sections[1];
  EXPECT_NE(gbps.find("data-challenge=\"nvfp4_quantize\""), std::string::npos);
  EXPECT_NE(gbps.find("data-metric=\"gbps\""), std::string::npos);
  EXPECT_EQ(ranked_rows(gbps), std::vector<std::string>({"1:quant_vectorized", "2:quant_scalar"}));
  EXPECT_EQ(chart_bars(gbps), std::vector<std::string>({"quant_vectorized", "quant_scalar"}));
  for (const char* want : {"<th class=\"num\">score GB/s</th>", "<th class=\"num\">wide GB/s</th>",
                           "<th class=\"num\">% of SoL</th>", "3564.5 GB/s · 72.5% SoL</text>",
                           "device-to-device copy of the same bytes"})
    EXPECT_NE(gbps.find(want), std::string::npos) << want;
  EXPECT_EQ(gbps.find("TF/s"), std::string::npos);
  EXPECT_NE(tflops.find("data-challenge=\"w4a16_matmul\""), std::string::npos);
  for (const char* want : {"<th class=\"num\">score TF/s</th>", "<th class=\"num\">% of SoL</th>",
                           "cuBLAS FP16 GEMM on dequantized weights"})
    EXPECT_NE(tflops.find(want), std::string::npos) << want;
  EXPECT_EQ(tflops.find("GB/s"), std::string::npos);
  EXPECT_EQ(html.find("cuBLAS</th>"), std::string::npos) << "no hard-coded yardstick column";
  // Each chart carries the device's limit (dashed) and the best entry's yardstick, in its unit.
  for (const std::string* s : {&gbps, &tflops}) {
    EXPECT_NE(s->find("<line class=\"limit\" data-value=\""), std::string::npos) << *s;
    EXPECT_NE(s->find("<line class=\"yardstick\" data-value=\""), std::string::npos) << *s;
  }
  EXPECT_NE(gbps.find("dram limit "), std::string::npos);
  EXPECT_NE(tflops.find("fp16_dense limit "), std::string::npos);
}

}  // namespace
}  // namespace fp4arena
