// The committed records under results/: each one names a solution whose current source has
// the record's sha256, and the board ranks every passing one without rejecting any.
#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "harness/leaderboard.h"
#include "harness/process.h"
#include "harness/sha256.h"
#include "harness/verdict.h"
#include "tests/test_util.h"

namespace fp4arena {
namespace {

void find_json(const std::string& dir, std::vector<std::string>* out) {
  DIR* d = opendir(dir.c_str());
  if (!d) return;
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name[0] == '.') continue;
    std::string path = dir + "/" + name;
    struct stat st;
    if (stat(path.c_str(), &st) != 0) continue;
    if (S_ISDIR(st.st_mode)) {
      find_json(path, out);
    } else if (name.size() > 5 && name.substr(name.size() - 5) == ".json") {
      out->push_back(path);
    }
  }
  closedir(d);
}

TEST(CommittedResults, RecordsMatchTheirSources) {
  std::vector<std::string> files;
  find_json(testing_util::source_dir() + "/results", &files);
  if (files.empty()) GTEST_SKIP() << "no committed records under results/";
  for (const std::string& f : files) {
    SCOPED_TRACE(f);
    std::ifstream in(f);
    nlohmann::json r = nlohmann::json::parse(in);
    std::string source, err;
    ASSERT_TRUE(read_file(
        testing_util::source_dir() + "/" + r["solution"]["path"].get<std::string>(), &source, &err))
        << err;
    EXPECT_EQ(sha256_hex(source), r["solution"]["sha256"].get<std::string>())
        << "the solution changed since it was judged: judge it again";
    // A header of the ladder's own (solutions/...) is part of what was judged: the record
    // names it from the judge's working folder (a judge older than recorded_header_path()
    // wrote the judging machine's absolute path), so it is found here by its path from
    // solutions/.
    for (const nlohmann::json& h : r["solution"].value("headers", nlohmann::json::array())) {
      const std::string path = h["path"];
      const size_t at = path.rfind("/solutions/");
      const std::string rel = path.rfind("solutions/", 0) == 0 ? path
                              : at != std::string::npos        ? path.substr(at + 1)
                                                               : "";
      if (rel.empty()) continue;
      std::string header;
      ASSERT_TRUE(read_file(testing_util::source_dir() + "/" + rel, &header, &err)) << err;
      EXPECT_EQ(sha256_hex(header), h["sha256"].get<std::string>())
          << rel << " changed since the solution was judged: judge it again";
    }
  }
}

// Every committed record is read without rejection; those timed by the judge's method
// (kTimingMethod) are ranked, and those of an earlier method (the worker's events, or the
// judge's other window method) are listed apart with the reason, never ranked beside them.
TEST(CommittedResults, BoardRanksEveryRecordOfTheCurrentMethod) {
  LeaderboardOptions o;
  o.results_dir = testing_util::source_dir() + "/results";
  o.out_dir = ::testing::TempDir() + "/committed-board";
  // As the CLI does: each record's metric must be its challenge's.
  o.challenges_dir = testing_util::source_dir() + "/challenges";
  LeaderboardReport rep;
  std::string err;
  ASSERT_TRUE(build_leaderboard(o, &rep, &err)) << err;
  EXPECT_TRUE(rep.rejected.empty()) << rep.rejected.front();
  std::vector<std::string> files;
  find_json(o.results_dir, &files);
  int current = 0;
  for (const std::string& f : files) {
    std::ifstream in(f);
    const nlohmann::json r = nlohmann::json::parse(in);
    current += r.value("schema", "").rfind("fp4arena.submit.", 0) == 0 &&
               r.value("timing_method", "") == kTimingMethod;
  }
  EXPECT_EQ(rep.records_ranked, current);
  int earlier = 0;
  for (const std::string& line : rep.not_ranked) {
    earlier += line.find("not ranked: timed by an earlier method") != std::string::npos ||
               line.find("not ranked: timed by judge-window-") != std::string::npos;
  }
  EXPECT_EQ(earlier + current, rep.records_read);
}

}  // namespace
}  // namespace fp4arena
