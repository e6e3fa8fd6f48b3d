#include "harness/spec.h"

#include <gtest/gtest.h>

#include <fstream>
#include <limits>

#include "tests/test_util.h"

namespace fp4arena {
namespace {

using testing_util::challenge_dir;

nlohmann::json good_spec() {
  std::ifstream in(challenge_dir() + "/spec.json");
  return nlohmann::json::parse(in);
}

std::string parse_error(const nlohmann::json& doc) {
  Spec s;
  std::string err;
  EXPECT_FALSE(parse_spec(doc, "x/spec.json", &s, &err));
  return err;
}

TEST(Spec, LoadsTheNvfp4Challenge) {
  Spec s;
  std::string err;
  ASSERT_TRUE(load_spec(challenge_dir(), &s, &err)) << err;
  EXPECT_EQ(s.name, "nvfp4_matmul");
  EXPECT_EQ(s.spec_version, 1);
  EXPECT_EQ(s.function, "solve");
  ASSERT_EQ(s.params.size(), 9u);
  ASSERT_EQ(s.outputs().size(), 1u);
  const ParamSpec& c = *s.outputs()[0];
  EXPECT_EQ(c.name, "c");
  EXPECT_EQ(c.dtype, DType::kFp16);
  EXPECT_EQ(c.compare.kind, CompareKind::kTolerance);
  EXPECT_DOUBLE_EQ(c.compare.atol, 0.1);
  EXPECT_DOUBLE_EQ(c.compare.rtol, 0.05);
  EXPECT_EQ(s.find_param("a")->dtype, DType::kE2m1x2);
  EXPECT_EQ(s.find_param("a_scales")->dtype, DType::kFp8E4m3);
  EXPECT_EQ(s.metric.kind, MetricKind::kTflops);
  EXPECT_EQ(s.limit, LimitKind::kFp16Dense);
  EXPECT_GE(s.tests.size(), 13u);
  ASSERT_EQ(s.benchmarks.size(), 2u);
  EXPECT_EQ(s.benchmarks[0].name, "table5");
  EXPECT_EQ(s.benchmarks[0].dims.at("N"), 18432);
  EXPECT_DOUBLE_EQ(case_workload(s, s.benchmarks[0].dims), 2.0 * 2048 * 18432 * 3072);
  int64_t rows = 0, cols = 0;
  output_matrix(*s.find_param("a"), s.benchmarks[0].dims, &rows, &cols);
  EXPECT_EQ(rows, 2048);
  EXPECT_EQ(cols, 3072);  // elements: two per byte
  ASSERT_EQ(s.dims.size(), 3u);
  EXPECT_EQ(s.dims[0].name, "M");  // signature order, not JSON key order
  EXPECT_EQ(s.dims[2].name, "K");
  EXPECT_EQ(c_prototype(s),
            "extern \"C\" void solve(const uint8_t* a, const uint8_t* a_scales, const uint8_t* b, "
            "const uint8_t* b_scales, float alpha, __half* c, int M, int N, int K)");
}

TEST(Spec, EveryCaseHasAUniqueNameAndSeed) {
  Spec s;
  std::string err;
  ASSERT_TRUE(load_spec(challenge_dir(), &s, &err)) << err;
  std::set<uint64_t> seeds;
  for (const auto* list : {&s.tests, &s.benchmarks}) {
    for (const CaseSpec& c : *list) EXPECT_TRUE(seeds.insert(c.seed).second) << c.name;
  }
}

TEST(Spec, MissingFileNamesThePath) {
  Spec s;
  std::string err;
  EXPECT_FALSE(load_spec("/nonexistent/challenge", &s, &err));
  EXPECT_NE(err.find("/nonexistent/challenge/spec.json"), std::string::npos) << err;
}

TEST(Spec, InvalidJsonNamesTheFile) {
  std::string dir = ::testing::TempDir() + "/bad_json_challenge";
  std::string e;
  ASSERT_TRUE(make_dirs(dir, &e));
  std::ofstream(dir + "/spec.json") << "{ \"name\": ";
  Spec s;
  std::string err;
  EXPECT_FALSE(load_spec(dir, &s, &err));
  EXPECT_NE(err.find("spec.json: not valid JSON"), std::string::npos) << err;
}

TEST(Spec, WrongSchemaIsRejected) {
  auto doc = good_spec();
  doc["schema"] = "fp4arena.spec.v1";
  std::string err = parse_error(doc);
  EXPECT_NE(err.find("x/spec.json: field 'schema': expected \"fp4arena.spec.v2\""),
            std::string::npos)
      << err;
  doc = good_spec();
  doc.erase("schema");
  EXPECT_NE(parse_error(doc).find("field 'schema'"), std::string::npos);
  doc = good_spec();
  doc["spec_version"] = 0;
  EXPECT_NE(parse_error(doc).find("field 'spec_version'"), std::string::npos);
}

TEST(Spec, MetricLimitAndCompareAreChecked) {
  auto doc = good_spec();
  doc["metric"] = {{"name", "gbps"}, {"bytes", "M*K/2"}};
  std::string err = parse_error(doc);  // gbps needs the dram limit
  EXPECT_NE(err.find("field 'limit'"), std::string::npos) << err;
  doc["limit"] = "dram";
  Spec s;
  ASSERT_TRUE(parse_spec(doc, "x/spec.json", &s, &err)) << err;
  EXPECT_EQ(s.metric.kind, MetricKind::kGbps);
  EXPECT_DOUBLE_EQ(s.metric.value(2e6, 1.0), 2.0);  // 2 MB in 1 ms = 2 GB/s

  doc = good_spec();
  doc["limit"] = "fp2_dense";
  EXPECT_NE(parse_error(doc).find("field 'limit'"), std::string::npos);
  doc = good_spec();
  doc["metric"] = {{"name", "tflops"}, {"flops", "2*M*N*Q"}};
  EXPECT_NE(parse_error(doc).find("unknown name 'Q'"), std::string::npos);
  doc = good_spec();
  doc["signature"]["params"][5]["compare"] = {{"kind", "close"}};
  EXPECT_NE(parse_error(doc).find("field 'signature.params[5].compare.kind'"), std::string::npos);
  doc = good_spec();
  doc["signature"]["params"][5]["compare"].erase("atol");
  EXPECT_NE(parse_error(doc).find("signature.params[5].compare.atol"), std::string::npos);
  doc = good_spec();
  doc["signature"]["params"][5].erase("compare");
  EXPECT_NE(parse_error(doc).find("signature.params[5].compare"), std::string::npos);
  doc = good_spec();
  doc["signature"]["params"][0]["dtype"] = "bf16";  // not stored as uint8_t
  EXPECT_NE(parse_error(doc).find("signature.params[0].dtype"), std::string::npos);
}

TEST(Spec, HostileValuesGiveErrorsNotCrashes) {
  auto doc = good_spec();
  doc["timeouts"]["call_seconds"] = 1e300;
  EXPECT_NE(parse_error(doc).find("timeouts.call_seconds"), std::string::npos);
  doc = good_spec();
  doc["signature"]["params"][5]["compare"]["atol"] = std::numeric_limits<double>::infinity();
  EXPECT_NE(parse_error(doc).find("compare.atol"), std::string::npos);
  doc = good_spec();
  doc["dims"]["M"]["max"] = int64_t(1) << 40;
  EXPECT_NE(parse_error(doc).find("dims.M"), std::string::npos);
  doc = good_spec();
  doc["dims"]["Q"] = doc["dims"]["M"];  // a dim that is not a parameter
  EXPECT_NE(parse_error(doc).find("dims.Q"), std::string::npos);
  doc = good_spec();
  doc["tests"][0]["seed"] = uint64_t(1) << 63;
  EXPECT_NE(parse_error(doc).find("tests[0].seed"), std::string::npos);
  doc = good_spec();
  doc["metric"]["flops"] = "99999999999999999999*M";
  EXPECT_NE(parse_error(doc).find("metric"), std::string::npos);
  doc = good_spec();
  doc["signature"]["params"] = "a";
  EXPECT_NE(parse_error(doc).find("signature.params"), std::string::npos);
  doc = good_spec();
  doc["tests"][0]["name"] = "a/../b";
  EXPECT_NE(parse_error(doc).find("tests[0].name"), std::string::npos);
}

TEST(Spec, DeepNestingIsRefusedBeforeParsing) {
  std::string dir = ::testing::TempDir() + "/deep_challenge";
  std::string e;
  ASSERT_TRUE(make_dirs(dir, &e));
  std::ofstream(dir + "/spec.json") << std::string(100000, '[') << std::string(100000, ']');
  Spec s;
  std::string err;
  EXPECT_FALSE(load_spec(dir, &s, &err));
  EXPECT_NE(err.find("nested"), std::string::npos) << err;
}

TEST(Spec, ErrorsNameTheFieldAndTheExpectation) {
  auto doc = good_spec();
  doc["tests"][3].erase("seed");
  EXPECT_NE(parse_error(doc).find("field 'tests[3].seed': expected an integer, got nothing"),
            std::string::npos);

  doc = good_spec();
  doc["tests"][2]["K"] = 20;
  std::string err = parse_error(doc);
  EXPECT_NE(err.find("field 'tests[2]'"), std::string::npos) << err;
  EXPECT_NE(err.find("K = 20"), std::string::npos) << err;
  EXPECT_NE(err.find("multiple of 16"), std::string::npos) << err;

  doc = good_spec();
  doc["signature"]["params"][5]["type"] = "double*";
  err = parse_error(doc);
  EXPECT_NE(err.find("field 'signature.params[5].type'"), std::string::npos) << err;

  doc = good_spec();
  doc["signature"]["params"][0]["shape"] = {"M", "K/Q"};
  err = parse_error(doc);
  EXPECT_NE(err.find("signature.params[0].shape[1]"), std::string::npos) << err;
  EXPECT_NE(err.find("unknown name 'Q'"), std::string::npos) << err;

  doc = good_spec();
  doc["signature"]["params"][5]["compare"]["atol"] = "0.1";
  err = parse_error(doc);
  EXPECT_NE(err.find("field 'signature.params[5].compare.atol': expected a finite number, got "
                     "\"0.1\""),
            std::string::npos)
      << err;

  doc = good_spec();
  doc["tests"][1]["name"] = doc["tests"][0]["name"];
  err = parse_error(doc);
  EXPECT_NE(err.find("field 'tests[1].name': expected a case name not used before"),
            std::string::npos)
      << err;

  doc = good_spec();
  doc["signature"]["params"][0]["type"] = "uint8_t*";
  err = parse_error(doc);
  EXPECT_NE(err.find("a const pointer for an input"), std::string::npos) << err;

  doc = good_spec();
  doc["benchmarks"] = nlohmann::json::array();
  err = parse_error(doc);
  EXPECT_NE(err.find("field 'benchmarks': expected a non-empty array"), std::string::npos) << err;
}

TEST(Spec, ExpressionsEvaluate) {
  std::map<std::string, int64_t> v = {{"M", 6}, {"N", 7}, {"K", 48}};
  int64_t out = 0;
  std::string err;
  ASSERT_TRUE(eval_expr("2*M*N*K", v, &out, &err)) << err;
  EXPECT_EQ(out, 2 * 6 * 7 * 48);
  ASSERT_TRUE(eval_expr("K/16", v, &out, &err));
  EXPECT_EQ(out, 3);
  ASSERT_TRUE(eval_expr("(M + 2) * 3 - N", v, &out, &err));
  EXPECT_EQ(out, 17);
  EXPECT_FALSE(eval_expr("K/5", v, &out, &err));
  EXPECT_NE(err.find("not divisible"), std::string::npos);
  EXPECT_FALSE(eval_expr("M*", v, &out, &err));
  EXPECT_FALSE(eval_expr("M)", v, &out, &err));
  EXPECT_FALSE(eval_expr("X", v, &out, &err));
  EXPECT_FALSE(eval_expr("9223372036854775807*2", v, &out, &err));
  EXPECT_NE(err.find("overflow"), std::string::npos) << err;
  EXPECT_FALSE(eval_expr(std::string(200, '(') + "1" + std::string(200, ')'), v, &out, &err));
}

}  // namespace
}  // namespace fp4arena
