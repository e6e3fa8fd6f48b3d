// The sweep's JSON and HTML page from a made-up report: fields, escaping, the chart's
// geometry, and the page as headless Chromium renders it (skipped where Chromium is absent).
#include "harness/sweep_report.h"
#include "harness/html.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
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

SweepShape shape(const std::string& name, int64_t m, int64_t n, int64_t k) {
  SweepShape s;
  s.name = name;
  s.label = std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
  s.dims = {{"M", m}, {"N", n}, {"K", k}};
  s.workload = 2.0 * double(m) * double(n) * double(k);
  return s;
}

void pass(SweepShape* s, double value) {
  s->verdict = "passed";
  s->samples = 15;
  s->value = value;
  s->median_ms = s->workload / value / 1e9;
}

void yardstick(SweepShape* s, const std::string& name, double value) {
  s->yardstick = SweepYardstickResult{name, s->workload / value / 1e9, value};
}

// Three shapes on a made-up device whose limit is 1000 TF/s: two passed, one wrong answer
// whose name, reason and the solution's path need escaping.
SweepReport fake_report() {
  SweepReport r;
  r.judge_version = "0.2.0";
  r.created_utc = "2026-11-30T12:00:00Z";
  r.challenge = "nvfp4_matmul";
  r.spec_version = 1;
  r.title = "NVFP4 x NVFP4 matmul <with> FP16 output";
  r.solution_path = "solutions/nvfp4_matmul/tiled<&>'q\".cu";
  r.solution_sha256 = std::string(64, 'a');
  r.device = {{"name", "Fake GPU <80GB>"}, {"sm_count", 132}, {"sm_clock_max_mhz", 1980}};
  r.metric_name = "tflops";
  r.metric_unit = "TF/s";
  r.workload_kind = "flops";
  r.expression = "2*M*N*K";
  r.limit_name = "fp16_dense";
  r.limit_value = 1000;
  r.shapes_source = "the spec's sweep list";
  r.timing = "short timing";
  r.yardstick_name = "cuBLAS <FP16> & co";
  SweepShape a = shape("square_1024", 1024, 1024, 1024);
  pass(&a, 400);
  yardstick(&a, r.yardstick_name, 600);
  SweepShape b = shape("odd_1000x3000x4112", 1000, 3000, 4112);
  pass(&b, 600);
  yardstick(&b, r.yardstick_name, 500);
  SweepShape c = shape("<script>alert(1)</script>", 3000, 5000, 1040);
  c.verdict = "wrong_answer";
  c.reason = "call 1 (seed 7): c: 12 of 100 elements <wrong> & \"far\" off";
  yardstick(&c, r.yardstick_name, 550);
  r.shapes = {a, b, c};
  r.wall_seconds = 42;
  return r;
}

// sweep.json read back gives the same page and chart (less the title, which it does not
// hold); a missing or mistyped field is named.
TEST(SweepReport, JsonReadsBackToTheSamePage) {
  SweepReport r = fake_report();
  r.title.clear();
  SweepReport back;
  std::string err;
  ASSERT_TRUE(read_sweep_json(sweep_json(r), &back, &err)) << err;
  EXPECT_EQ(sweep_html(back), sweep_html(r));
  EXPECT_EQ(sweep_svg(back), sweep_svg(r));
  nlohmann::json doc = sweep_json(r);
  doc["shapes"][1].erase("workload");
  EXPECT_FALSE(read_sweep_json(doc, &back, &err));
  EXPECT_EQ(err, "field shapes[1].workload: missing, or not a number");
  doc = sweep_json(r);
  doc["limit"]["name"] = 7;
  EXPECT_FALSE(read_sweep_json(doc, &back, &err));
  EXPECT_EQ(err, "field limit.name: missing, or not a string");
  doc = sweep_json(r);
  doc["schema"] = "fp4arena.submit.v2";
  EXPECT_FALSE(read_sweep_json(doc, &back, &err));
  EXPECT_EQ(err, "field schema: expected \"fp4arena.sweep.v1\"");
}

// Where the judge gave each shape its speed of light, the table's share column is of it (and
// sweep.json keeps it); a sweep without the field keeps the share of the limit.
TEST(SweepReport, TheShareIsOfTheSpeedOfLightWhereKnown) {
  SweepReport r = fake_report();
  r.title.clear();  // sweep.json does not hold it
  const std::string plain = sweep_html(r);
  EXPECT_NE(plain.find("<th class=\"num\">% of fp16_dense</th>"), std::string::npos);
  EXPECT_EQ(plain.find("% of SoL"), std::string::npos);
  r.shapes[0].speed_of_light_ms = *r.shapes[0].median_ms * 0.25;  // 25% of its speed of light
  const std::string html = sweep_html(r);
  EXPECT_NE(html.find("<th class=\"num\">% of SoL</th>"), std::string::npos) << html;
  EXPECT_NE(html.find("<td class=\"num\">25.0</td>"), std::string::npos) << html;
  const nlohmann::json j = sweep_json(r);
  EXPECT_DOUBLE_EQ(j["shapes"][0]["pct_of_speed_of_light"].get<double>(), 25.0);
  EXPECT_TRUE(j["shapes"][1]["speed_of_light_ms"].is_null());
  SweepReport back;
  std::string err;
  ASSERT_TRUE(read_sweep_json(j, &back, &err)) << err;
  EXPECT_EQ(sweep_html(back), html);
}

TEST(SweepReport, JsonCarriesEveryShapeAndTheLimit) {
  const SweepReport r = fake_report();
  const nlohmann::json j = sweep_json(r);
  EXPECT_EQ(j["schema"], "fp4arena.sweep.v1");
  EXPECT_EQ(j["judge_version"], "0.2.0");
  EXPECT_EQ(j["challenge"]["name"], "nvfp4_matmul");
  EXPECT_EQ(j["challenge"]["spec_version"], 1);
  EXPECT_EQ(j["solution"]["path"], r.solution_path);
  EXPECT_EQ(j["solution"]["sha256"], r.solution_sha256);
  EXPECT_EQ(j["device"]["sm_count"], 132);
  EXPECT_EQ(j["metric"]["name"], "tflops");
  EXPECT_EQ(j["metric"]["unit"], "TF/s");
  EXPECT_EQ(j["limit"]["name"], "fp16_dense");
  EXPECT_EQ(j["limit"]["value"], 1000.0);
  EXPECT_EQ(j["passed"], false);
  ASSERT_EQ(j["shapes"].size(), 3u);
  const nlohmann::json& a = j["shapes"][0];
  EXPECT_EQ(a["name"], "square_1024");
  EXPECT_EQ(a["shape"], "1024x1024x1024");
  EXPECT_EQ(a["dims"], nlohmann::json({{"M", 1024}, {"N", 1024}, {"K", 1024}}));
  EXPECT_EQ(a["verdict"], "passed");
  EXPECT_EQ(a["reason"], "");
  EXPECT_EQ(a["passed"], true);
  EXPECT_DOUBLE_EQ(a["value"].get<double>(), 400);
  EXPECT_DOUBLE_EQ(a["median_ms"].get<double>(), 2.0 * 1024 * 1024 * 1024 / 400 / 1e9);
  EXPECT_DOUBLE_EQ(a["pct_of_limit"].get<double>(), 40);
  EXPECT_EQ(a["yardstick"]["name"], "cuBLAS <FP16> & co");
  EXPECT_DOUBLE_EQ(a["yardstick"]["value"].get<double>(), 600);
  EXPECT_DOUBLE_EQ(a["yardstick"]["ratio"].get<double>(), 400.0 / 600.0);
  const nlohmann::json& c = j["shapes"][2];
  EXPECT_EQ(c["verdict"], "wrong_answer");
  EXPECT_EQ(c["passed"], false);
  EXPECT_NE(c["reason"].get<std::string>().find("12 of 100"), std::string::npos);
  EXPECT_TRUE(c["value"].is_null());
  EXPECT_TRUE(c["median_ms"].is_null());
  EXPECT_TRUE(c["pct_of_limit"].is_null());
  EXPECT_DOUBLE_EQ(c["yardstick"]["value"].get<double>(), 550) << "timed where the solution failed";
  EXPECT_TRUE(c["yardstick"]["ratio"].is_null());

  SweepReport ok = r;
  ok.shapes.pop_back();
  EXPECT_TRUE(ok.passed());
  EXPECT_EQ(sweep_json(ok)["passed"], true);
  ok.shapes[1].over_limit = true;  // a value the device cannot reach is no pass
  EXPECT_FALSE(ok.passed());
  ok.shapes.clear();
  EXPECT_FALSE(ok.passed()) << "an empty sweep passes nothing";
  SweepReport unknown = r;
  unknown.limit_value = 0;
  EXPECT_TRUE(sweep_json(unknown)["limit"]["value"].is_null());
}

TEST(SweepReport, EscapingCoversMarkupQuotesBadUtf8AndControls) {
  EXPECT_EQ(html_escape("<a href=\"x\">'&'</a>"),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;");
  EXPECT_EQ(html_escape("caf\xc3\xa9 \xe2\x9c\x97"), "caf\xc3\xa9 \xe2\x9c\x97");
  EXPECT_EQ(html_escape("a\xff"
                        "b"),
            "a\xef\xbf\xbd"
            "b");
  EXPECT_EQ(html_escape("\xc3"), "\xef\xbf\xbd");  // cut short
  EXPECT_EQ(html_escape("\xed\xa0\x80"),
            "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");               // surrogate
  EXPECT_EQ(html_escape("\xc0\xaf"), "\xef\xbf\xbd\xef\xbf\xbd");  // overlong '/'
  EXPECT_EQ(html_escape(std::string("x\0y\x1b", 4)), "x\xef\xbf\xbdy\xef\xbf\xbd");
  EXPECT_EQ(html_escape("tab\tnew\nline"), "tab\tnew\nline");
}

TEST(SweepReport, PageIsSelfContainedAndEscapesEverything) {
  const std::string html = sweep_html(fake_report());
  for (const char* banned :
       {"http:", "https:", "<script", "<link", "<img", "@import", "url(", "<iframe", "src="})
    EXPECT_EQ(html.find(banned), std::string::npos) << banned;
  EXPECT_NE(html.find("<style>"), std::string::npos);
  EXPECT_NE(html.find("<meta name=\"generator\" content=\"fp4arena sweep\">"), std::string::npos);
  for (const char* raw : {"<with>", "<80GB>", "<FP16>", "<wrong>", "tiled<&>"})
    EXPECT_EQ(html.find(raw), std::string::npos) << raw;
  for (const char* escaped :
       {"&lt;script&gt;alert(1)&lt;/script&gt;", "Fake GPU &lt;80GB&gt;",
        "cuBLAS &lt;FP16&gt; &amp; co", "elements &lt;wrong&gt; &amp; &quot;far&quot; off",
        "tiled&lt;&amp;&gt;&#39;q&quot;.cu"})
    EXPECT_NE(html.find(escaped), std::string::npos) << escaped;
  // One chart, with both series and a legend naming them.
  EXPECT_EQ(html.find("<svg"), html.rfind("<svg"));
  const std::regex solution_bar(R"re(<rect class="solution" x=)re");
  const std::regex yardstick_bar(R"re(<rect class="yardstick" x=)re");
  auto count = [&](const std::regex& re) {
    return std::distance(std::sregex_iterator(html.begin(), html.end(), re),
                         std::sregex_iterator());
  };
  EXPECT_EQ(count(solution_bar), 1 + 2) << "the legend's swatch and the two passed shapes";
  EXPECT_EQ(count(yardstick_bar), 1 + 3) << "the legend's swatch and every shape";
  EXPECT_NE(html.find("solution: tiled&lt;&amp;&gt;&#39;q&quot;.cu</text>"), std::string::npos);
  EXPECT_NE(html.find("yardstick: cuBLAS &lt;FP16&gt; &amp; co</text>"), std::string::npos);
  // The failed shape: a mark in the chart, its verdict and reason in the table.
  EXPECT_NE(html.find("<text class=\"failed\""), std::string::npos);
  EXPECT_NE(html.find("<tr class=\"failed\" data-shape=\"&lt;script&gt;"), std::string::npos);
  EXPECT_NE(html.find(">wrong_answer</td>"), std::string::npos);
  EXPECT_NE(html.find("2 of 3 shapes passed"), std::string::npos);
  // Shapes on the x axis by their dims.
  for (const char* label : {">1024x1024x1024<", ">1000x3000x4112<", ">3000x5000x1040<"})
    EXPECT_NE(html.find(label), std::string::npos) << label;
}

TEST(SweepReport, SvgIsTheSameChartAsAStandaloneDocument) {
  const SweepReport r = fake_report();
  const std::string svg = sweep_svg(r);
  const std::string html = sweep_html(r);
  // A document of its own: the SVG namespace, its own style rules, the generator comment the
  // judge looks for before replacing it, nothing fetched or run.
  ASSERT_EQ(svg.rfind("<svg class=\"chart\"", 0), 0u) << svg.substr(0, 200);
  EXPECT_NE(svg.find("xmlns=\"http://www.w3.org/2000/svg\""), std::string::npos);
  EXPECT_NE(svg.find("<!-- fp4arena sweep -->"), std::string::npos);
  EXPECT_NE(svg.find("<style>"), std::string::npos);
  EXPECT_NE(svg.find("svg.chart .solution { fill: #1f4fb4; }"), std::string::npos);
  EXPECT_EQ(svg.find("</svg>"), svg.size() - std::string("</svg>\n").size());
  for (const char* banned : {"https:", "<script", "@import", "url(", "<html", "<table"})
    EXPECT_EQ(svg.find(banned), std::string::npos) << banned;
  // The page's chart, bar for bar: every bar, label and the limit line of the one is in the
  // other; only the standalone legend names the device.
  const std::regex element(R"re(<(rect|line) class="[a-z]+"[^>]*>)re");
  std::vector<std::string> in_svg, in_html;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), element);
       it != std::sregex_iterator(); ++it)
    in_svg.push_back(it->str());
  for (auto it = std::sregex_iterator(html.begin(), html.end(), element);
       it != std::sregex_iterator(); ++it)
    in_html.push_back(it->str());
  EXPECT_EQ(in_svg, in_html);
  EXPECT_GE(in_svg.size(), 8u);
  EXPECT_NE(
      svg.find("solution: tiled&lt;&amp;&gt;&#39;q&quot;.cu, on Fake GPU &lt;80GB&gt;</text>"),
      std::string::npos);
  EXPECT_NE(html.find("solution: tiled&lt;&amp;&gt;&#39;q&quot;.cu</text>"), std::string::npos);
  EXPECT_EQ(svg.find("<with>"), std::string::npos);
}

TEST(SweepReport, ChartGeometryPutsTheLimitWhereTheScaleSays) {
  const SweepReport r = fake_report();
  const SweepChartLayout l = sweep_chart_layout(r);
  // The highest of the limit (1000) and every value, plus 8% headroom: 1080; a step of
  // 250 (the nice number above 1080/5) and an axis to 1250.
  EXPECT_DOUBLE_EQ(l.y_step, 250);
  EXPECT_DOUBLE_EQ(l.y_max, 1250);
  EXPECT_DOUBLE_EQ(l.plot_top, 84);
  EXPECT_DOUBLE_EQ(l.plot_bottom, 344);
  EXPECT_DOUBLE_EQ(l.y_of(0), 344);
  EXPECT_DOUBLE_EQ(l.y_of(1250), 84);
  EXPECT_DOUBLE_EQ(l.y_of(1000), 136);  // 344 - 260 * 1000/1250
  EXPECT_GE(l.width, 680);
  EXPECT_DOUBLE_EQ(l.x_center(0), l.plot_left + l.group_width / 2);
  EXPECT_LE(l.x_center(2) + l.group_width / 2, l.plot_right + 1e-9);

  const std::string html = sweep_html(r);
  const std::regex limit(
      R"re(<line class="limit" data-value="1000" x1="([0-9.]+)" y1="([0-9.]+)" x2="([0-9.]+)" y2="([0-9.]+)")re");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(html, m, limit)) << html;
  EXPECT_EQ(m[1].str(), "78.0");
  EXPECT_EQ(m[2].str(), "136.0");
  EXPECT_EQ(m[4].str(), "136.0");
  EXPECT_NE(html.find("fp16_dense limit 1000.0 TF/s</text>"), std::string::npos);
  // The first shape's solution bar: 400 TF/s is 260 * 400/1250 = 83.2 units tall.
  const std::regex bar(
      R"re(data-shape="square_1024"[^>]*><rect class="solution" x="[0-9.]+" y="([0-9.]+)" width="[0-9.]+" height="([0-9.]+)")re");
  ASSERT_TRUE(std::regex_search(html, m, bar)) << html;
  EXPECT_EQ(m[1].str(), "260.8");
  EXPECT_EQ(m[2].str(), "83.2");
  // Ticks every 250 up to 1250.
  for (const char* tick : {">0</text>", ">250</text>", ">1250</text>"})
    EXPECT_NE(html.find(tick), std::string::npos) << tick;

  // No known limit: no line, and the scale follows the values alone (600 * 1.08 = 648:
  // step 200, axis to 800).
  SweepReport none = r;
  none.limit_value = 0;
  const SweepChartLayout n = sweep_chart_layout(none);
  EXPECT_DOUBLE_EQ(n.y_step, 200);
  EXPECT_DOUBLE_EQ(n.y_max, 800);
  EXPECT_EQ(sweep_html(none).find("<line class=\"limit\" data-value"), std::string::npos);
  // Nothing measured at all still gives a drawable axis.
  none.shapes.clear();
  EXPECT_DOUBLE_EQ(sweep_chart_layout(none).y_max, 1);
}

// Values two decades apart or more (a naive kernel beside cuBLAS) get a log axis, one tick
// per decade, so that no bar is invisible; a ratio below 0.1 keeps three significant digits.
TEST(SweepReport, ValuesDecadesApartGetALogAxis) {
  SweepReport r = fake_report();
  pass(&r.shapes[0], 1.5);  // against a yardstick of 600 and a limit of 1000
  const SweepChartLayout l = sweep_chart_layout(r);
  EXPECT_TRUE(l.log_scale);
  EXPECT_DOUBLE_EQ(l.y_min, 1);
  EXPECT_DOUBLE_EQ(l.y_max, 10000);  // 1000 * 1.08 rounded up to a decade
  EXPECT_DOUBLE_EQ(l.y_of(1), l.plot_bottom);
  EXPECT_DOUBLE_EQ(l.y_of(10000), l.plot_top);
  EXPECT_DOUBLE_EQ(l.y_of(100), (l.plot_top + l.plot_bottom) / 2);
  const std::string html = sweep_html(r);
  EXPECT_NE(html.find("TF/s (log scale)"), std::string::npos);
  for (const char* tick :
       {">1</text>", ">10</text>", ">100</text>", ">1000</text>", ">10000</text>"})
    EXPECT_NE(html.find(tick), std::string::npos) << tick;
  EXPECT_NE(html.find("<td class=\"num\">0.0025</td>"), std::string::npos);  // 1.5 / 600
  // Within two decades the axis stays linear from 0.
  EXPECT_FALSE(sweep_chart_layout(fake_report()).log_scale);
}

TEST(SweepReport, ChromiumRendersTheChartAndTheTable) {
  const std::string chromium = find_chromium();
  if (chromium.empty()) {
    GTEST_SKIP() << "chromium not installed: neither /usr/bin/chromium nor `command -v chromium`"
                    " (apt-get install -y chromium, or scripts/setup --with-chromium)";
  }
  const fs::path dir =
      fs::path(testing::TempDir()) / ("fp4arena_sweep_html_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "profile");
  const fs::path page = fs::absolute(dir / "sweep.html");
  std::ofstream(page, std::ios::binary) << sweep_html(fake_report());
  const auto [status, dom] = dump_dom(chromium, page.string(), (dir / "profile").string());
  fs::remove_all(dir);
  ASSERT_EQ(status, 0) << dom;
  ASSERT_NE(dom.find("</body></html>"), std::string::npos) << dom;
  // The browser's DOM: the SVG survived parsing, with its bars, limit line and labels.
  EXPECT_NE(dom.find("<svg class=\"chart\""), std::string::npos) << dom;
  EXPECT_NE(dom.find("</svg>"), std::string::npos) << dom;
  EXPECT_NE(dom.find("<line class=\"limit\" data-value=\"1000\""), std::string::npos) << dom;
  EXPECT_NE(dom.find("<rect class=\"yardstick\""), std::string::npos) << dom;
  EXPECT_NE(dom.find("<text class=\"failed\""), std::string::npos) << dom;
  for (const char* text : {"1000x3000x4112", "fp16_dense limit 1000.0 TF/s", "2 of 3 shapes passed",
                           "wrong_answer", "Fake GPU &lt;80GB&gt;"})
    EXPECT_NE(dom.find(text), std::string::npos) << text;
  // The hostile name stays text: no script element was made of it.
  EXPECT_EQ(dom.find("<script"), std::string::npos) << dom;
  EXPECT_NE(dom.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos) << dom;
}

TEST(SweepReport, ChromiumOpensTheSvgAsAnImageDocument) {
  const std::string chromium = find_chromium();
  if (chromium.empty()) {
    GTEST_SKIP() << "chromium not installed: neither /usr/bin/chromium nor `command -v chromium`"
                    " (apt-get install -y chromium, or scripts/setup --with-chromium)";
  }
  const fs::path dir =
      fs::path(testing::TempDir()) / ("fp4arena_sweep_svg_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "profile");
  const fs::path file = fs::absolute(dir / "sweep.svg");
  std::ofstream(file, std::ios::binary) << sweep_svg(fake_report());
  const auto [status, dom] = dump_dom(chromium, file.string(), (dir / "profile").string());
  fs::remove_all(dir);
  ASSERT_EQ(status, 0) << dom;
  // Parsed as SVG (an XML parse error would leave a parsererror element instead).
  EXPECT_EQ(dom.find("parsererror"), std::string::npos) << dom;
  EXPECT_NE(dom.find("<line class=\"limit\" data-value=\"1000\""), std::string::npos) << dom;
  EXPECT_NE(dom.find("<rect class=\"solution\""), std::string::npos) << dom;
  EXPECT_NE(dom.find("on Fake GPU &lt;80GB&gt;"), std::string::npos) << dom;
}

}  // namespace
}  // namespace fp4arena
