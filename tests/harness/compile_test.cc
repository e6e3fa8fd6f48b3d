// The compile path with the real nvcc (installed on every machine that builds fp4arena).
#include "harness/compile.h"

#include <gtest/gtest.h>

#include "tests/test_util.h"

namespace fp4arena {
namespace {

using testing_util::binary_dir;
using testing_util::challenge_dir;
using testing_util::source_dir;

class Compile : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string err;
    ASSERT_TRUE(load_spec(challenge_dir(), &spec_, &err)) << err;
    opts_.cache_dir = binary_dir() + "/test-compile-cache-" + std::to_string(getpid());
    if (find_nvcc().empty()) GTEST_SKIP() << "nvcc not found";
  }
  void TearDown() override {
    std::string out;
    run_capture({"rm", "-rf", opts_.cache_dir}, &out);
  }
  CompileResult compile(const std::string& file) {
    CompileResult r;
    std::string err;
    EXPECT_TRUE(compile_solution(spec_, file, opts_, &r, &err)) << err;
    return r;
  }
  Spec spec_;
  CompileOptions opts_;
};

TEST_F(Compile, StarterAndNaiveCompileAndAreCached) {
  CompileResult r = compile(challenge_dir() + "/starter.cu");
  EXPECT_TRUE(r.ok) << r.diagnostics;
  r = compile(source_dir() + "/solutions/nvfp4_matmul/naive.cu");
  ASSERT_TRUE(r.ok) << r.diagnostics;
  EXPECT_FALSE(r.cached);
  EXPECT_EQ(r.source_sha256.size(), 64u);
  // The object exports the call shim.
  std::string nm;
  run_capture({"nm", "-D", "--defined-only", r.so_path}, &nm);
  EXPECT_NE(nm.find("fp4arena_call"), std::string::npos) << nm;
  EXPECT_NE(nm.find(" solve"), std::string::npos) << nm;
  CompileResult again = compile(source_dir() + "/solutions/nvfp4_matmul/naive.cu");
  EXPECT_TRUE(again.cached);
  EXPECT_EQ(again.so_path, r.so_path);
}

TEST_F(Compile, ArchitectureChangesTheCacheKey) {
  CompileResult a = compile(challenge_dir() + "/starter.cu");
  opts_.arch = "sm_80";
  CompileResult b = compile(challenge_dir() + "/starter.cu");
  EXPECT_TRUE(b.ok) << b.diagnostics;
  EXPECT_NE(a.so_path, b.so_path);
}

TEST_F(Compile, WrongSignatureShowsBothSignatures) {
  CompileResult r = compile(source_dir() + "/tests/solutions/wrong_signature.cu");
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.diagnostics.find("solve() must be defined with exactly this signature"),
            std::string::npos)
      << r.diagnostics;
  EXPECT_NE(r.diagnostics.find("__half* c, int M, int N, int K)"), std::string::npos);
  EXPECT_NE(r.diagnostics.find("float alpha, float* c"), std::string::npos) << r.diagnostics;
  EXPECT_NE(r.diagnostics.find("wrong_signature.cu:4"), std::string::npos) << r.diagnostics;
}

TEST_F(Compile, MissingCLinkageSolveIsRejectedAtLink) {
  CompileResult r = compile(source_dir() + "/tests/solutions/no_extern_c.cu");
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.diagnostics.find("solve() must be defined with exactly this signature"),
            std::string::npos)
      << r.diagnostics;
}

TEST_F(Compile, ErrorsCarryFileAndLine) {
  CompileResult r = compile(source_dir() + "/tests/solutions/syntax_error.cu");
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.diagnostics.find("syntax_error.cu:5: error"), std::string::npos) << r.diagnostics;
  EXPECT_NE(r.diagnostics.find("undeclared_variable"), std::string::npos);
  EXPECT_EQ(r.diagnostics.find("signature"), std::string::npos) << r.diagnostics;
}

TEST_F(Compile, EditingALocalHeaderInvalidatesTheCache) {
  std::string dir = opts_.cache_dir + "-src";
  std::string err;
  ASSERT_TRUE(make_dirs(dir, &err)) << err;
  ASSERT_TRUE(write_file_atomic(dir + "/scale.cuh", "constexpr float kScale = 1.0f;\n", &err));
  std::string starter;
  ASSERT_TRUE(read_file(challenge_dir() + "/starter.cu", &starter, &err));
  ASSERT_TRUE(write_file_atomic(dir + "/sol.cu", "#include \"scale.cuh\"\n" + starter, &err));
  CompileResult a = compile(dir + "/sol.cu");
  ASSERT_TRUE(a.ok) << a.diagnostics;
  ASSERT_TRUE(write_file_atomic(dir + "/scale.cuh", "constexpr float kScale = 2.0f;\n", &err));
  CompileResult b = compile(dir + "/sol.cu");
  EXPECT_TRUE(b.ok) << b.diagnostics;
  EXPECT_FALSE(b.cached);
  EXPECT_NE(a.so_path, b.so_path);
  std::string out;
  run_capture({"rm", "-rf", dir}, &out);
}

TEST_F(Compile, BadArchIsAnError) {
  opts_.arch = "hopper";
  CompileResult r;
  std::string err;
  EXPECT_FALSE(compile_solution(spec_, challenge_dir() + "/starter.cu", opts_, &r, &err));
  EXPECT_NE(err.find("--arch"), std::string::npos) << err;
}

TEST(CompileHelpers, ArchForComputeCapability) {
  EXPECT_EQ(arch_for_compute_capability(9, 0), "sm_90a");
  EXPECT_EQ(arch_for_compute_capability(10, 0), "sm_100a");
  EXPECT_EQ(arch_for_compute_capability(8, 9), "sm_89");
  EXPECT_TRUE(valid_arch("sm_90a"));
  EXPECT_TRUE(valid_arch("sm_120f"));
  EXPECT_FALSE(valid_arch("sm90"));
  EXPECT_FALSE(valid_arch("sm_90;rm -rf /"));
}

TEST(CompileHelpers, ShimUnpacksEveryParameterInOrder) {
  Spec spec;
  std::string err;
  ASSERT_TRUE(load_spec(challenge_dir(), &spec, &err)) << err;
  std::string shim = call_shim(spec);
  EXPECT_NE(shim.find("*static_cast<const uint8_t* const*>(args[0])"), std::string::npos) << shim;
  EXPECT_NE(shim.find("*static_cast<float const*>(args[4])"), std::string::npos) << shim;
  EXPECT_NE(shim.find("*static_cast<int const*>(args[8])"), std::string::npos) << shim;
  EXPECT_NE(prototype_header(spec).find(c_prototype(spec) + ";"), std::string::npos);
}

}  // namespace
}  // namespace fp4arena
