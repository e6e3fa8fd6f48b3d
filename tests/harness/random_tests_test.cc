// The spec's "random_tests": recipes for test cases at shapes drawn afresh on every run and
// submit, named so that the name alone replays the case.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <set>

#include "harness/challenge.h"
#include "harness/spec.h"
#include "tests/judge_run.h"
#include "tests/test_util.h"

namespace fp4arena {
namespace {

using testing_util::challenge_dir;
using testing_util::run_cli;
using testing_util::source_dir;

nlohmann::json nvfp4_doc() {
  std::ifstream in(challenge_dir() + "/spec.json");
  return nlohmann::json::parse(in);
}

TEST(RandomTests, TheFlagshipRecipeDrawsTailedShapesInItsRangesAndNamesReplayThem) {
  Spec s;
  std::string err;
  ASSERT_TRUE(load_spec(challenge_dir(), &s, &err)) << err;
  ASSERT_EQ(s.random_tests.size(), 1u);
  const RandomTestSpec& r = s.random_tests[0];
  EXPECT_EQ(r.name, "random");
  EXPECT_EQ(r.count, 3);
  int m_tails = 0, n_tails = 0;
  std::set<std::string> shapes;
  for (uint32_t seed = 1000; seed < 1500; ++seed) {
    const CaseSpec c = random_case(r, seed);
    const int64_t M = c.dims.at("M"), N = c.dims.at("N"), K = c.dims.at("K");
    ASSERT_TRUE(M >= 1 && M <= 640 && N >= 1 && N <= 640) << c.name;
    ASSERT_TRUE(K >= 16 && K <= 1024 && K % 16 == 0) << c.name;
    ASSERT_TRUE(check_case_shape(s, c, &err)) << err;
    m_tails += M % 32 != 0;
    n_tails += N % 32 != 0;
    shapes.insert(shape_text(s, c.dims));
    EXPECT_EQ(c.seed, seed);
    EXPECT_EQ(c.generator, "uniform");
    EXPECT_FALSE(c.benchmark);
    // The name is the recipe's and the seed's; it alone gives the same case back.
    char hex[9];
    std::snprintf(hex, sizeof hex, "%08x", seed);
    ASSERT_EQ(c.name, std::string("random_") + hex);
    CaseSpec again;
    ASSERT_TRUE(random_case_named(s, c.name, &again)) << c.name;
    EXPECT_EQ(again.dims, c.dims);
    EXPECT_EQ(again.seed, c.seed);
  }
  // Uniform over the ranges: nearly every shape has an M and an N tail, and they differ.
  EXPECT_GT(m_tails, 450);
  EXPECT_GT(n_tails, 450);
  EXPECT_GT(shapes.size(), 490u);
  CaseSpec none;
  for (const char* name : {"random", "random_", "random_0a1b2c3", "random_0a1b2c3d4",
                           "random_0A1B2C3D", "random_0a1b2c3g", "other_0a1b2c3d", "example"}) {
    EXPECT_FALSE(random_case_named(s, name, &none)) << name;
  }
}

TEST(RandomTests, EveryBundledRecipeDrawsCasesItsChallengeAccepts) {
  int challenges = 0;
  for (const auto& e : std::filesystem::directory_iterator(source_dir() + "/challenges")) {
    Spec s;
    std::string err;
    if (!std::filesystem::exists(e.path() / "spec.json")) continue;
    ASSERT_TRUE(load_spec(e.path().string(), &s, &err)) << err;
    ASSERT_FALSE(s.random_tests.empty()) << s.name << " has no random_tests";
    auto challenge = make_challenge(s.name);
    ASSERT_NE(challenge, nullptr) << s.name;
    for (const RandomTestSpec& r : s.random_tests) {
      for (uint32_t seed = 0; seed < 2000; seed += 7) {
        const CaseSpec c = random_case(r, seed * 2654435761u);
        EXPECT_TRUE(check_case_shape(s, c, &err) && challenge->check_case(c, &err))
            << s.name << " " << c.name << ": " << err;
        EXPECT_EQ(s.find_case(c.name), nullptr) << "a random name repeats a case's";
      }
    }
    ++challenges;
  }
  EXPECT_EQ(challenges, 5);
}

TEST(RandomTests, EachKindOfBadRecipeNamesItsField) {
  struct Bad {
    std::function<void(nlohmann::json&)> edit;
    std::string want;
  };
  nlohmann::json& (*rt)(nlohmann::json&) = [](nlohmann::json& d) -> nlohmann::json& {
    return d["random_tests"][0];
  };
  const std::vector<Bad> bad = {
      {[](nlohmann::json& d) { d["random_tests"] = "yes"; },
       "field 'random_tests': expected a non-empty array of at most 8 recipes"},
      {[](nlohmann::json& d) { d["random_tests"] = nlohmann::json::array(); },
       "field 'random_tests': expected a non-empty array"},
      {[=](nlohmann::json& d) { rt(d).erase("name"); },
       "field 'random_tests[0].name': expected a non-empty string, got nothing"},
      {[=](nlohmann::json& d) { rt(d)["name"] = "Random"; },
       "field 'random_tests[0].name': expected at most 40 lower-case letters"},
      {[=](nlohmann::json& d) { rt(d)["count"] = 0; },
       "field 'random_tests[0].count': expected an integer in [1, 16], got 0"},
      {[=](nlohmann::json& d) { rt(d)["count"] = 17; },
       "field 'random_tests[0].count': expected an integer in [1, 16], got 17"},
      {[=](nlohmann::json& d) { rt(d).erase("generator"); },
       "field 'random_tests[0].generator': expected a non-empty string"},
      {[=](nlohmann::json& d) { rt(d)["params"] = 3; },
       "field 'random_tests[0].params': expected an object, got 3"},
      {[=](nlohmann::json& d) { rt(d)["dims"].erase("N"); },
       "field 'random_tests[0].dims.N': expected a value or a range"},
      {[=](nlohmann::json& d) { rt(d)["dims"]["Q"] = 4; },
       "field 'random_tests[0].dims': expected only the spec's dims"},
      {[=](nlohmann::json& d) { rt(d)["dims"]["K"] = "64"; },
       "field 'random_tests[0].dims.K': expected an integer, {min, max[, multiple_of]} or"},
      {[=](nlohmann::json& d) { rt(d)["dims"]["K"] = 24; },
       "field 'random_tests[0].dims.K': expected values the spec's dims allow (case "
       "'random_tests': K = 24 is outside the spec"},
      {[=](nlohmann::json& d) { rt(d)["dims"]["K"]["multiple_of"] = 8; },
       "K = 24 is outside the spec"},
      {[=](nlohmann::json& d) { rt(d)["dims"]["M"]["min"] = 0; },
       "field 'random_tests[0].dims.M': expected values the spec's dims allow"},
      {[=](nlohmann::json& d) { rt(d)["dims"]["M"]["max"] = 40000; },
       "M = 32769 is outside the spec"},
      {[=](nlohmann::json& d) {
         rt(d)["dims"]["M"] = {{"min", 9}, {"max", 3}};
       },
       "field 'random_tests[0].dims.M': expected min <= max < 2^31 and multiple_of >= 1"},
      {[=](nlohmann::json& d) {
         rt(d)["dims"]["M"] = {{"min", 1}, {"max", 1 << 30}};
       },
       "field 'random_tests[0].dims.M': expected between 1 and 2^20 values"},
      {[=](nlohmann::json& d) {
         rt(d)["dims"]["M"] = {{"one_of", {1, "2"}}};
       },
       "field 'random_tests[0].dims.M.one_of': expected integers only"},
      {[=](nlohmann::json& d) { d["random_tests"][1] = rt(d); },
       "field 'random_tests[1].name': expected a name not used by another recipe"},
  };
  for (size_t i = 0; i < bad.size(); ++i) {
    SCOPED_TRACE("bad recipe " + std::to_string(i));
    auto doc = nvfp4_doc();
    bad[i].edit(doc);
    Spec s;
    std::string err;
    EXPECT_FALSE(parse_spec(doc, "x/spec.json", &s, &err));
    EXPECT_NE(err.find(bad[i].want), std::string::npos) << err;
  }
  // Fixed values and lists are forms of their own.
  auto doc = nvfp4_doc();
  rt(doc)["dims"]["K"] = 64;
  rt(doc)["dims"]["M"] = {{"one_of", {1, 33, 97}}};
  Spec s;
  std::string err;
  ASSERT_TRUE(parse_spec(doc, "x/spec.json", &s, &err)) << err;
  const CaseSpec c = random_case(s.random_tests[0], 77);
  EXPECT_EQ(c.dims.at("K"), 64);
  EXPECT_TRUE(c.dims.at("M") == 1 || c.dims.at("M") == 33 || c.dims.at("M") == 97);
}

// Without a GPU the judge still reads --case: a random name is a case (replayed), a name of
// the recipe's form with a bad seed is not.
TEST(RandomTests, TheCommandLineAcceptsARandomNameAndNamesTheFormOfOne) {
  const std::string naive = source_dir() + "/solutions/nvfp4_matmul/naive.cu";
  auto ok = run_cli({challenge_dir(), "--solution", naive, "--action", "dump", "--case",
                     "random_0000002a", "--out", testing_util::unique_temp_dir("random-dump")});
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
  EXPECT_NE(ok.output.find("case random_0000002a ("), std::string::npos) << ok.output;
  auto bad = run_cli(
      {challenge_dir(), "--solution", naive, "--action", "run", "--case", "random_0000002"});
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("no case named 'random_0000002'"), std::string::npos) << bad.output;
  EXPECT_NE(bad.output.find("a random test is named like random_0a1b2c3d"), std::string::npos)
      << bad.output;
}

}  // namespace
}  // namespace fp4arena
