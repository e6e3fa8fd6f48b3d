#include "harness/spec.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <fstream>
#include <functional>
#include <limits>
#include <set>

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
  EXPECT_EQ(s.spec_version, 2);
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

TEST(Spec, AMetricsBytesAreAnExpressionOfTheDims) {
  auto doc = good_spec();
  doc["metric"]["bytes"] = "M*K/2 + N*Q";
  std::string err = parse_error(doc);
  EXPECT_NE(err.find("field 'metric.bytes'"), std::string::npos) << err;
  EXPECT_NE(err.find("unknown name 'Q'"), std::string::npos) << err;
  doc["metric"]["bytes"] = 7;
  EXPECT_NE(parse_error(doc).find("field 'metric.bytes'"), std::string::npos);
  doc["metric"]["bytes"] = "M*K/2 + N*K/2 + 2*M*N";
  Spec s;
  ASSERT_TRUE(parse_spec(doc, "x/spec.json", &s, &err)) << err;
  EXPECT_EQ(s.metric.min_bytes, "M*K/2 + N*K/2 + 2*M*N");
  EXPECT_EQ(s.metric.bytes_expression(), s.metric.min_bytes);
  EXPECT_FALSE(s.metric.bytes_from_inputs);
  doc["metric"]["bytes_from_inputs"] = true;
  ASSERT_TRUE(parse_spec(doc, "x/spec.json", &s, &err)) << err;
  EXPECT_TRUE(s.metric.bytes_from_inputs);
  doc["metric"]["bytes_from_inputs"] = "yes";
  EXPECT_NE(parse_error(doc).find("field 'metric.bytes_from_inputs'"), std::string::npos);
  doc["metric"]["bytes_from_inputs"] = true;
  doc["metric"].erase("bytes");  // an upper bound is needed
  EXPECT_NE(parse_error(doc).find("field 'metric.bytes_from_inputs'"), std::string::npos);
}

// An H200 as the judge sees it: 132 SMs at 1980 MHz, HBM3e at 3201 MHz on a 6016-bit bus.
const DeviceShape kH200{9, 0, 132, 1980, 3201, 6016};

TEST(SpeedOfLight, IsTheSlowerOfTheComputeAndTheMemoryTime) {
  Spec spec;
  std::string err;
  ASSERT_TRUE(load_spec(std::string(FP4ARENA_SOURCE_DIR) + "/challenges/w4a16_matmul", &spec, &err))
      << err;
  const double fp16 = limit_value(LimitKind::kFp16Dense, kH200);  // TF/s
  const double dram = limit_value(LimitKind::kDram, kH200);       // GB/s
  ASSERT_GT(fp16, 0);
  ASSERT_GT(dram, 0);
  // rev1 (2048x8192x3072): 2*M*N*K FLOPs take longer than its bytes.
  const SpeedOfLight rev1 = speed_of_light(spec, spec.find_case("rev1")->dims, kH200);
  EXPECT_DOUBLE_EQ(rev1.compute_ms, 2.0 * 2048 * 8192 * 3072 / (fp16 * 1e9));
  EXPECT_DOUBLE_EQ(rev1.ms, rev1.compute_ms);
  EXPECT_FALSE(rev1.memory_bound());
  // decode (16 rows): the weights, their scales, x and y at the DRAM rate.
  const SpeedOfLight decode = speed_of_light(spec, spec.find_case("decode")->dims, kH200);
  const double bytes = 2.0 * 16 * 3072 + 8192 * 3072 / 2 + 2.0 * 8192 * 3072 / 32 + 2.0 * 16 * 8192;
  EXPECT_DOUBLE_EQ(decode.memory_ms, bytes / (dram * 1e6));
  EXPECT_TRUE(decode.memory_bound());
  EXPECT_DOUBLE_EQ(decode.ms, decode.memory_ms);
  // An architecture the table does not know has no speed of light.
  EXPECT_EQ(
      speed_of_light(spec, spec.find_case("rev1")->dims, DeviceShape{7, 0, 80, 1530, 877, 4096}).ms,
      0);
}

TEST(SpeedOfLight, AGbpsChallengeHasNoComputeTerm) {
  Spec spec;
  std::string err;
  ASSERT_TRUE(
      load_spec(std::string(FP4ARENA_SOURCE_DIR) + "/challenges/mxfp4_quantize", &spec, &err))
      << err;
  const CaseSpec* c = spec.find_case("activations");
  ASSERT_NE(c, nullptr);
  const SpeedOfLight sol = speed_of_light(spec, c->dims, kH200);
  EXPECT_EQ(sol.compute_ms, 0);
  EXPECT_DOUBLE_EQ(sol.ms,
                   case_workload(spec, c->dims) / (limit_value(LimitKind::kDram, kH200) * 1e6));
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
  EXPECT_EQ(err, dir + "/spec.json: not a spec: JSON nested deeper than 32 levels");
}

// The same pass over the text as a record's (harness/json_read.h): a number beyond a double's
// range is refused naming its field, where the parser would not say where it is.
TEST(Spec, ANumberBeyondADoubleIsRefusedByItsField) {
  std::string dir = ::testing::TempDir() + "/huge_number_challenge";
  std::string e;
  ASSERT_TRUE(make_dirs(dir, &e));
  std::ofstream(dir + "/spec.json") << R"({"spec_version": 1, "tests": [{"seed": 1e999}]})";
  Spec s;
  std::string err;
  EXPECT_FALSE(load_spec(dir, &s, &err));
  EXPECT_EQ(err,
            dir + "/spec.json: not a spec: field tests[0].seed is not a finite number (1e999)");
}

TEST(Spec, ErrorsNameTheFieldAndTheExpectation) {
  auto doc = good_spec();
  doc["tests"][3].erase("seed");
  EXPECT_NE(parse_error(doc).find("field 'tests[3].seed': expected an integer, got nothing"),
            std::string::npos);

  doc = good_spec();
  doc["tests"][2]["K"] = 20;
  std::string err = parse_error(doc);
  EXPECT_NE(err.find("field 'tests[2].K'"), std::string::npos) << err;
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

TEST(SpecSweep, TheNvfp4SweepListIsParsedAsBenchmarks) {
  Spec s;
  std::string err;
  ASSERT_TRUE(load_spec(challenge_dir(), &s, &err)) << err;
  ASSERT_EQ(s.sweep.size(), 11u);
  std::set<std::string> names, shapes;
  for (const CaseSpec& c : s.sweep) {
    EXPECT_TRUE(names.insert(c.name).second) << c.name;
    EXPECT_TRUE(c.benchmark) << c.name;
    EXPECT_EQ(c.generator, s.benchmarks[0].generator) << c.name;
    EXPECT_EQ(c.dims.at("K") % 16, 0) << c.name;
    shapes.insert(shape_text(s, c.dims));
  }
  for (const char* want : {"1024x1024x1024", "2048x2048x2048", "4096x4096x4096", "8192x8192x8192",
                           "2048x18432x3072", "2048x8192x3072", "1000x3000x4112", "3000x5000x1040",
                           "2048x2880x2880", "4096x4096x8192", "5120x5184x1040"})
    EXPECT_EQ(shapes.count(want), 1u) << want;
  // The sweep list is not among the cases --case or the records know.
  EXPECT_EQ(s.find_case("square_1024"), nullptr);
  EXPECT_EQ(s.benchmarks.size(), 2u);
}

TEST(SpecSweep, TheListIsOptional) {
  auto doc = good_spec();
  doc.erase("sweep");
  Spec s;
  std::string err;
  ASSERT_TRUE(parse_spec(doc, "x/spec.json", &s, &err)) << err;
  EXPECT_TRUE(s.sweep.empty());
  EXPECT_EQ(s.spec_version, doc["spec_version"].get<int>());
}

TEST(SpecSweep, EachKindOfBadEntryNamesItsField) {
  struct Bad {
    std::function<void(nlohmann::json&)> edit;
    std::string want;
  };
  const std::vector<Bad> bad = {
      {[](nlohmann::json& d) { d["sweep"] = "square"; },
       "field 'sweep': expected a non-empty array of at most 1000 cases, got \"square\""},
      {[](nlohmann::json& d) { d["sweep"] = nlohmann::json::array(); },
       "field 'sweep': expected a non-empty array"},
      {[](nlohmann::json& d) { d["sweep"][2] = 7; }, "field 'sweep[2]': expected an object"},
      {[](nlohmann::json& d) { d["sweep"][1].erase("name"); },
       "field 'sweep[1].name': expected a non-empty string, got nothing"},
      {[](nlohmann::json& d) { d["sweep"][1]["name"] = "<b>"; },
       "field 'sweep[1].name': expected at most 64 letters"},
      {[](nlohmann::json& d) { d["sweep"][4].erase("generator"); },
       "field 'sweep[4].generator': expected a non-empty string"},
      {[](nlohmann::json& d) { d["sweep"][0]["seed"] = -3; },
       "field 'sweep[0].seed': expected a non-negative integer"},
      {[](nlohmann::json& d) { d["sweep"][0].erase("seed"); },
       "field 'sweep[0].seed': expected an integer, got nothing"},
      {[](nlohmann::json& d) { d["sweep"][3].erase("N"); },
       "field 'sweep[3].N': expected an integer, got nothing"},
      {[](nlohmann::json& d) { d["sweep"][3]["K"] = "8192"; },
       "field 'sweep[3].K': expected an integer, got \"8192\""},
      {[](nlohmann::json& d) { d["sweep"][3]["K"] = 8200; },
       "field 'sweep[3].K': case 'square_8192': K = 8200 is outside the spec"},
      {[](nlohmann::json& d) { d["sweep"][2]["M"] = 0; },
       "field 'sweep[2].M': case 'square_4096': M = 0 is outside the spec"},
      {[](nlohmann::json& d) { d["sweep"][5]["params"] = 1; },
       "field 'sweep[5].params': expected an object"},
      {[](nlohmann::json& d) { d["sweep"][6]["name"] = d["sweep"][0]["name"]; },
       "field 'sweep[6].name': expected a name not used before in this list"},
  };
  for (size_t i = 0; i < bad.size(); ++i) {
    SCOPED_TRACE("bad entry " + std::to_string(i));
    auto doc = good_spec();
    bad[i].edit(doc);
    const std::string err = parse_error(doc);
    EXPECT_NE(err.find("x/spec.json: " + bad[i].want), std::string::npos) << err;
  }
  // Names may repeat those of the tests and benchmarks: the list is its own.
  auto doc = good_spec();
  doc["sweep"][0]["name"] = "example";
  Spec s;
  std::string err;
  EXPECT_TRUE(parse_spec(doc, "x/spec.json", &s, &err)) << err;
}

class ShapesFile : public testing::Test {
 protected:
  void SetUp() override {
    std::string err;
    ASSERT_TRUE(load_spec(challenge_dir(), &spec_, &err)) << err;
    dir_ = ::testing::TempDir() + "/fp4arena_shapes_" + std::to_string(getpid());
    ASSERT_TRUE(make_dirs(dir_, &err)) << err;
  }
  std::string write(const std::string& name, const std::string& text) {
    std::string path = dir_ + "/" + name;
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }
  std::string error_of(const std::string& path) {
    std::vector<CaseSpec> out;
    std::string err;
    EXPECT_FALSE(load_shapes_file(path, spec_, &out, &err));
    return err;
  }
  Spec spec_;
  std::string dir_;
};

TEST_F(ShapesFile, AGoodFileGivesItsShapesInOrder) {
  const std::string path = write("good.json", R"([
    {"name": "b", "generator": "uniform", "seed": 7, "M": 64, "N": 96, "K": 128},
    {"name": "a", "generator": "uniform", "seed": 8, "M": 1000, "N": 3000, "K": 4112,
     "params": {"alpha": 1.0}}
  ])");
  std::vector<CaseSpec> out;
  std::string err;
  ASSERT_TRUE(load_shapes_file(path, spec_, &out, &err)) << err;
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].name, "b");
  EXPECT_EQ(out[1].name, "a");
  EXPECT_EQ(shape_text(spec_, out[1].dims), "1000x3000x4112");
  EXPECT_EQ(out[1].seed, 8u);
  EXPECT_TRUE(out[1].benchmark);
  EXPECT_EQ(out[1].params["alpha"], 1.0);
}

TEST_F(ShapesFile, ErrorsNameTheFileAndTheField) {
  std::string err = error_of(dir_ + "/missing.json");
  EXPECT_NE(err.find(dir_ + "/missing.json: cannot open"), std::string::npos) << err;
  std::string path = write("bad_json.json", "[{\"name\": ");
  err = error_of(path);
  EXPECT_NE(err.find(path + ": not valid JSON"), std::string::npos) << err;
  path = write("object.json", R"({"sweep": []})");
  err = error_of(path);
  EXPECT_NE(err.find(path + ": field '(top level)': expected a non-empty array"), std::string::npos)
      << err;
  path = write("empty.json", "[]");
  EXPECT_NE(error_of(path).find(path + ": field '(top level)'"), std::string::npos);
  path = write("bad_k.json", R"([
    {"name": "ok", "generator": "uniform", "seed": 1, "M": 64, "N": 64, "K": 64},
    {"name": "bad", "generator": "uniform", "seed": 2, "M": 64, "N": 64, "K": 20}])");
  err = error_of(path);
  EXPECT_NE(err.find(path + ": field '[1].K': case 'bad': K = 20 is outside the spec"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("multiple of 16"), std::string::npos) << err;
  path =
      write("no_seed.json", R"([{"name": "x", "generator": "uniform", "M": 1, "N": 1, "K": 16}])");
  EXPECT_NE(error_of(path).find(path + ": field '[0].seed': expected an integer, got nothing"),
            std::string::npos);
  path = write("deep.json", std::string(5000, '[') + std::string(5000, ']'));
  err = error_of(path);
  EXPECT_NE(err.find(path + ": not a list of shapes: JSON nested"), std::string::npos) << err;
  path = write("dup.json", R"([
    {"name": "x", "generator": "uniform", "seed": 1, "M": 64, "N": 64, "K": 64},
    {"name": "x", "generator": "uniform", "seed": 2, "M": 64, "N": 64, "K": 64}])");
  EXPECT_NE(error_of(path).find(path + ": field '[1].name'"), std::string::npos);
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
