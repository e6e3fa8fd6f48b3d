// --action dump on a machine without a GPU: the case's inputs and expected outputs as .npy
// files whose headers (parsed here, not by NumPy) and bytes match what the judge generates.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "harness/challenge.h"
#include "harness/dump.h"
#include "harness/npy.h"
#include "harness/process.h"
#include "harness/spec.h"
#include "reference/fp4_codecs.h"
#include "tests/test_util.h"

namespace fp4arena {
namespace {

using testing_util::challenge_dir;
using testing_util::run_cli;
using testing_util::source_dir;
using testing_util::toy_challenge_dir;

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

struct Npy {
  std::string descr;
  std::vector<int64_t> shape;
  std::string data;
};

Npy load(const std::string& path) {
  Npy n;
  std::string bytes = slurp(path), err;
  size_t offset = 0;
  EXPECT_TRUE(read_npy_header(bytes, &n.descr, &n.shape, &offset, &err)) << path << ": " << err;
  EXPECT_EQ(offset % 64, 0u) << path;
  n.data = bytes.substr(offset);
  return n;
}

TEST(Dump, Nvfp4ExampleWithoutAGpu) {
  const std::string dir = ::testing::TempDir() + "/dump-nvfp4-example";
  auto r = run_cli({challenge_dir(), "--action", "dump", "--case", "example", "--out", dir});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("load with: python3 " + dir + "/load.py"), std::string::npos);

  Spec spec;
  std::string err;
  ASSERT_TRUE(load_spec(challenge_dir(), &spec, &err)) << err;
  auto ch = make_challenge(spec.name);
  ProblemData in;
  ASSERT_TRUE(ch->generate(*spec.find_case("example"), 1, &in, &err)) << err;

  Npy a = load(dir + "/a.npy");
  EXPECT_EQ(a.descr, "|u1");
  EXPECT_EQ(a.shape, (std::vector<int64_t>{2, 16}));
  EXPECT_EQ(a.data, std::string(in.buffers["a"].begin(), in.buffers["a"].end()));
  Npy s = load(dir + "/b_scales.npy");
  EXPECT_EQ(s.shape, (std::vector<int64_t>{2, 2}));
  Npy c = load(dir + "/expected_c.npy");
  EXPECT_EQ(c.descr, "<f4");
  EXPECT_EQ(c.shape, (std::vector<int64_t>{2, 2}));
  ASSERT_EQ(c.data.size(), 16u);
  float v[4];
  std::memcpy(v, c.data.data(), 16);
  EXPECT_EQ(v[0], 8.0f);  // the README's worked example
  EXPECT_EQ(v[1], 0.3125f);
  EXPECT_EQ(v[2], 1.0f);
  EXPECT_EQ(v[3], 0.375f);
  nlohmann::json meta = nlohmann::json::parse(slurp(dir + "/case.json"));
  EXPECT_EQ(meta["seed"], 1);
  EXPECT_EQ(meta["scalars"]["alpha"], 0.5);
  EXPECT_EQ(meta["files"]["a"]["torch_view"], "torch.float4_e2m1fn_x2");
  EXPECT_NE(slurp(dir + "/load.py").find("np.load"), std::string::npos);
}

// A link planted in the output folder under a file name the dump writes is replaced, never
// written through: the file it pointed at keeps its contents.
TEST(Dump, ReplacesLinksInItsOutputFolderInsteadOfFollowingThem) {
  const std::string dir = ::testing::TempDir() + "/dump-links-" + std::to_string(getpid());
  const std::string victim = dir + "-precious.txt";
  std::string err;
  ASSERT_TRUE(make_dirs(dir, &err)) << err;
  ASSERT_TRUE(write_file_atomic(victim, "keep me\n", &err)) << err;
  for (const char* name : {"a.npy", "case.json", "load.py"}) {
    const std::string link = dir + "/" + name;
    unlink(link.c_str());
    ASSERT_EQ(symlink(victim.c_str(), link.c_str()), 0) << link;
  }
  auto r = run_cli({challenge_dir(), "--action", "dump", "--case", "example", "--out", dir});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(slurp(victim), "keep me\n");
  for (const char* name : {"a.npy", "case.json", "load.py"}) {
    struct stat st;
    ASSERT_EQ(lstat((dir + "/" + name).c_str(), &st), 0) << name;
    EXPECT_TRUE(S_ISREG(st.st_mode)) << name << " is still a link";
  }
}

TEST(Dump, SeedReplaysAnotherDrawAndBadUsageIsRefused) {
  const std::string dir = ::testing::TempDir() + "/dump-nvfp4-seed";
  auto r = run_cli(
      {challenge_dir(), "--action", "dump", "--case", "k16_only", "--seed", "77", "--out", dir});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  nlohmann::json meta = nlohmann::json::parse(slurp(dir + "/case.json"));
  EXPECT_EQ(meta["seed"], 77);
  r = run_cli({challenge_dir(), "--action", "dump", "--out", dir});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("exactly one --case"), std::string::npos) << r.output;
  r = run_cli({challenge_dir(), "--action", "dump", "--case", "k16_only", "--seed", "-3"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--seed"), std::string::npos) << r.output;
}

// load.py's NumPy decoders agree with the reference codecs on every code, and unpack the
// README's worked example. Skipped where python3 has no NumPy.
TEST(Dump, LoadPyDecodesEveryCodeAsTheReferenceDoes) {
  std::string out, python;
  for (const char* p : {"python3", "/usr/bin/python3"}) {
    if (python.empty() && run_capture({p, "-c", "import numpy"}, &out) == 0) python = p;
  }
  if (python.empty()) {
    GTEST_SKIP() << "no python3 with NumPy (apt install python3-numpy)";
  }
  const std::string dir = ::testing::TempDir() + "/dump-decoders";
  auto r = run_cli({challenge_dir(), "--action", "dump", "--case", "example", "--out", dir});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string script =
      "import sys, numpy as np; sys.path.insert(0, '" + dir +
      "'); from load import *\n"
      "codes = np.arange(256, dtype=np.uint8)\n"
      "for f in (e4m3, e8m0): print(' '.join(repr(float(v)) for v in f(codes)))\n"
      "print(' '.join(repr(float(v)) for v in e2m1(codes.reshape(1, 256))[0]))\n"
      "a, meta = load_case('" +
      dir +
      "'); print(' '.join(repr(float(v)) for v in "
      "decoded(a, meta)['a'][1][:4]))\n";
  ASSERT_EQ(run_capture({python, "-c", script}, &out), 0) << out;
  std::istringstream lines(out);
  std::string line;
  auto values = [&]() {
    std::getline(lines, line);
    std::istringstream in(line);
    std::vector<double> v;
    std::string word;
    while (in >> word) v.push_back(std::stod(word));
    return v;
  };
  auto same = [](double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; };
  const std::vector<double> e4m3 = values(), e8m0 = values(), e2m1 = values();
  ASSERT_EQ(e4m3.size(), 256u) << out;
  ASSERT_EQ(e8m0.size(), 256u) << out;
  ASSERT_EQ(e2m1.size(), 512u) << out;
  for (int c = 0; c < 256; ++c) {
    EXPECT_TRUE(same(e4m3[c], e4m3_decode(uint8_t(c)))) << "e4m3 code " << c << ": " << e4m3[c];
    EXPECT_TRUE(same(e8m0[c], e8m0_decode(uint8_t(c)))) << "e8m0 code " << c << ": " << e8m0[c];
    EXPECT_EQ(e2m1[2 * c], e2m1_decode(uint8_t(c & 0xF))) << "byte " << c << " low nibble";
    EXPECT_EQ(e2m1[2 * c + 1], e2m1_decode(uint8_t(c >> 4))) << "byte " << c << " high nibble";
  }
  // The README's example: a's row 1 is A5 00 ..: elements 3.0, -1.0, then zeros (unscaled).
  EXPECT_EQ(values(), (std::vector<double>{3.0, -1.0, 0.0, 0.0})) << out;
}

// case.json types each scalar as the signature does: nvfp4_quantize's int `rule` is 0, not
// 0.0 (the generators hold every scalar as a double).
TEST(Dump, IntScalarsAreIntegersInCaseJson) {
  const std::string dir = ::testing::TempDir() + "/dump-quantize-rule";
  auto r = run_cli({source_dir() + "/challenges/nvfp4_quantize", "--action", "dump", "--case",
                    "example", "--out", dir});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json meta = nlohmann::json::parse(slurp(dir + "/case.json"));
  ASSERT_TRUE(meta["scalars"].contains("rule")) << meta.dump();
  EXPECT_TRUE(meta["scalars"]["rule"].is_number_integer()) << meta["scalars"].dump();
}

TEST(Dump, ExactOutputsCarryTheirTieMask) {
  // toy_quantize is registered in the test binaries only: dump it through the library.
  Spec spec;
  std::string err;
  ASSERT_TRUE(load_spec(toy_challenge_dir(), &spec, &err)) << err;
  auto ch = make_challenge(spec.name);
  ASSERT_NE(ch, nullptr);
  const CaseSpec& c = *spec.find_case("random_tails");
  ProblemData in;
  ASSERT_TRUE(ch->generate(c, c.seed, &in, &err)) << err;
  Expected e;
  ASSERT_TRUE(ch->oracle(in, OracleDevice::kCpu, &e, &err)) << err;
  const std::string dir = ::testing::TempDir() + "/dump-toy";
  std::vector<std::string> files;
  ASSERT_TRUE(dump_case(spec, c, c.seed, in, e, dir, &files, &err)) << err;
  Npy x = load(dir + "/x.npy");
  EXPECT_EQ(x.descr, "<u2");  // bf16 as raw bits: NumPy has no bfloat16
  EXPECT_EQ(x.shape, (std::vector<int64_t>{37, 129}));
  Npy q = load(dir + "/expected_q.npy");
  EXPECT_EQ(q.descr, "|u1");
  Npy tie = load(dir + "/expected_q_tie.npy");
  EXPECT_EQ(tie.shape, (std::vector<int64_t>{37, 129}));
  Npy alt = load(dir + "/expected_q_alternatives.npy");
  EXPECT_EQ(alt.shape, (std::vector<int64_t>{1, 37, 129}));
  Npy s = load(dir + "/expected_s.npy");
  EXPECT_EQ(s.descr, "<f4");
  EXPECT_EQ(s.shape, (std::vector<int64_t>{37}));
}

}  // namespace
}  // namespace fp4arena
