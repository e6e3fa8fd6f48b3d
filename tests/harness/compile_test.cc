// The compile path with the real nvcc (installed on every machine that builds fp4arena).
#include "harness/compile.h"

#include <gtest/gtest.h>

#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <regex>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <utility>

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
  void expect_stopped_in_time(const std::string& hang, const std::string& message);
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
  // ptxas's report: at least one kernel, and none of its info lines in the diagnostics.
  EXPECT_FALSE(r.kernels.empty());
  EXPECT_EQ(r.diagnostics.find("ptxas info"), std::string::npos) << r.diagnostics;
  EXPECT_NE(r.command.find("-Xptxas -v"), std::string::npos) << r.command;
  CompileResult again = compile(source_dir() + "/solutions/nvfp4_matmul/naive.cu");
  EXPECT_TRUE(again.cached);
  EXPECT_EQ(again.so_path, r.so_path);
  // A cache hit returns the same report.
  EXPECT_EQ(kernel_resources_json(again.kernels), kernel_resources_json(r.kernels));
  EXPECT_EQ(again.command, r.command) << "a hit records the compile, not the dependency scan";
  // An object whose report is damaged is compiled again.
  std::string report = r.so_path.substr(0, r.so_path.size() - 3) + ".kernels.json";
  std::string err;
  ASSERT_TRUE(
      write_file_atomic(report, "{\"version\": 1, \"kernels\": [{\"registers\": \"x\"}]}", &err))
      << err;
  CompileResult rebuilt = compile(source_dir() + "/solutions/nvfp4_matmul/naive.cu");
  EXPECT_TRUE(rebuilt.ok) << rebuilt.diagnostics;
  EXPECT_FALSE(rebuilt.cached);
  EXPECT_EQ(kernel_resources_json(rebuilt.kernels), kernel_resources_json(r.kernels));
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

// Writes `files` (name -> text) into a fresh folder next to the cache; returns its path.
std::string write_tree(const std::string& dir,
                       const std::vector<std::pair<std::string, std::string>>& files) {
  std::string err;
  for (const auto& [name, text] : files) {
    std::string path = dir + "/" + name;
    EXPECT_TRUE(make_dirs(path.substr(0, path.rfind('/')), &err)) << err;
    EXPECT_TRUE(write_file_atomic(path, text, &err)) << err;
  }
  return dir;
}

std::string starter_source() {
  std::string text, err;
  EXPECT_TRUE(read_file(challenge_dir() + "/starter.cu", &text, &err)) << err;
  return text;
}

bool lists_header(const CompileResult& r, const std::string& suffix) {
  for (const HeaderHash& h : r.headers) {
    if (h.path.size() >= suffix.size() &&
        h.path.compare(h.path.size() - suffix.size(), suffix.size(), suffix) == 0) {
      return h.sha256.size() == 64;
    }
  }
  return false;
}

TEST_F(Compile, EditingAnyHeaderTheSolutionReadsInvalidatesTheCache) {
  // Three ways to reach a header: a quoted local include, a folder given with -I (whose name
  // holds a space-free subfolder), and an include that only the device pass sees.
  std::string dir = write_tree(opts_.cache_dir + "-src",
                               {{"scale.cuh", "constexpr float kScale = 1.0f;\n"},
                                {"inc/tile.cuh", "constexpr int kTile = 16;\n"},
                                {"dev.cuh", "__device__ int dev_only() { return 1; }\n"},
                                {"sol.cu",
                                 "#include \"scale.cuh\"\n#include <tile.cuh>\n"
                                 "#ifdef __CUDA_ARCH__\n#include \"dev.cuh\"\n#endif\n" +
                                     starter_source()}});
  opts_.include_dirs = {dir + "/inc"};
  CompileResult a = compile(dir + "/sol.cu");
  ASSERT_TRUE(a.ok) << a.diagnostics;
  EXPECT_TRUE(lists_header(a, "/scale.cuh"));
  EXPECT_TRUE(lists_header(a, "/inc/tile.cuh"));
  EXPECT_TRUE(lists_header(a, "/dev.cuh"));
  std::string listed;
  for (const HeaderHash& h : a.headers) listed += "\n  " + h.path;
  EXPECT_EQ(a.headers.size(), 3u) << "system headers, the prototype and the source itself are "
                                     "not listed; listed:"
                                  << listed;
  EXPECT_NE(a.command.find("-I " + a.include_dirs[0]), std::string::npos) << a.command;

  std::string so = a.so_path;
  for (const char* name : {"scale.cuh", "inc/tile.cuh", "dev.cuh"}) {
    std::string err, text;
    ASSERT_TRUE(read_file(dir + "/" + name, &text, &err)) << err;
    ASSERT_TRUE(write_file_atomic(dir + "/" + name, text + "// edited\n", &err)) << err;
    CompileResult b = compile(dir + "/sol.cu");
    EXPECT_TRUE(b.ok) << b.diagnostics;
    EXPECT_FALSE(b.cached) << name;
    EXPECT_NE(b.so_path, so) << name;
    so = b.so_path;
  }
  CompileResult again = compile(dir + "/sol.cu");
  EXPECT_TRUE(again.cached);
  EXPECT_EQ(again.so_path, so);
  std::string out;
  run_capture({"rm", "-rf", dir}, &out);
}

// Bytes embedded with the assembler's .incbin (in host code) come from a file the
// preprocessor never sees: it is listed with the headers, and a change to it rebuilds the
// object instead of loading the stale one from the cache.
TEST_F(Compile, AFileEmbeddedWithIncbinIsListedAndInvalidatesTheCache) {
  std::string dir = write_tree(opts_.cache_dir + "-incbin",
                               {{"blob.bin", "first bytes\n"},
                                {"sol.cu",
                                 "__asm__(\".section .rodata\\n.globl fp4arena_blob\\n"
                                 "fp4arena_blob:\\n.inc\" \"bin \\\"blob.bin\\\"\\n"
                                 ".text\\n\");\n" +
                                     starter_source()}});
  // The path is relative to the assembler's working folder: the compile runs in the source's.
  std::string err, text;
  ASSERT_TRUE(read_file(dir + "/sol.cu", &text, &err)) << err;
  ASSERT_TRUE(write_file_atomic(
      dir + "/sol.cu", std::regex_replace(text, std::regex("blob\\.bin"), dir + "/blob.bin"), &err))
      << err;
  CompileResult a = compile(dir + "/sol.cu");
  ASSERT_TRUE(a.ok) << a.diagnostics;
  EXPECT_TRUE(lists_header(a, "/blob.bin"));
  CompileResult hit = compile(dir + "/sol.cu");
  EXPECT_TRUE(hit.cached);
  EXPECT_TRUE(lists_header(hit, "/blob.bin")) << "a cache hit lists it too";
  ASSERT_TRUE(write_file_atomic(dir + "/blob.bin", "other bytes\n", &err)) << err;
  CompileResult b = compile(dir + "/sol.cu");
  EXPECT_TRUE(b.ok) << b.diagnostics;
  EXPECT_FALSE(b.cached);
  EXPECT_NE(b.diagnostics.find("blob.bin (read by the assembler) changed"), std::string::npos)
      << b.diagnostics;
  std::string out;
  run_capture({"rm", "-rf", dir}, &out);
}

TEST_F(Compile, ToolkitHeadersStayUnlistedWhenNvccIsAWrapperScript) {
  // Some installs put a script named nvcc on PATH that runs the real one from elsewhere; the
  // toolkit's own headers must still count as system headers.
  std::string real = find_nvcc();
  ASSERT_FALSE(real.empty());
  std::string dir = write_tree(opts_.cache_dir + "-wrap",
                               {{"bin/nvcc", "#!/bin/sh\nexec '" + real + "' \"$@\"\n"},
                                {"sol.cu", "#include \"local.cuh\"\n" + starter_source()},
                                {"local.cuh", "constexpr int kLocal = 1;\n"}});
  ASSERT_EQ(chmod((dir + "/bin/nvcc").c_str(), 0755), 0);
  opts_.nvcc = dir + "/bin/nvcc";
  CompileResult r = compile(dir + "/sol.cu");
  ASSERT_TRUE(r.ok) << r.diagnostics;
  std::string listed;
  for (const HeaderHash& h : r.headers) listed += "\n  " + h.path;
  EXPECT_EQ(r.headers.size(), 1u) << "listed:" << listed;
  EXPECT_TRUE(lists_header(r, "/local.cuh")) << listed;
  std::string out;
  run_capture({"rm", "-rf", dir}, &out);
}

TEST_F(Compile, HeaderThatIsNotARegularFileIsRefused) {
  std::string dir = write_tree(opts_.cache_dir + "-src",
                               {{"sol.cu", "#include \"/dev/null\"\n" + starter_source()}});
  CompileResult r = compile(dir + "/sol.cu");
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.diagnostics.find("/dev/null: a header the solution reads must be a regular file"),
            std::string::npos)
      << r.diagnostics;
  std::string out;
  run_capture({"rm", "-rf", dir}, &out);
}

TEST_F(Compile, ExtraFlagsReachNvccChangeTheKeyAndAreRecorded) {
  // The solution fails to compile unless -DFP4ARENA_TEST_TILE=... reaches nvcc.
  std::string dir = write_tree(
      opts_.cache_dir + "-src",
      {{"sol.cu", starter_source() +
                      "\nstatic_assert(FP4ARENA_TEST_TILE == 64, \"needs the define\");\n"
                      "template <int N> __global__ void staged(float* x) {\n"
                      "  __shared__ float s[N];\n"
                      "  s[threadIdx.x] = x[threadIdx.x];\n"
                      "  __syncthreads();\n"
                      "  x[threadIdx.x] = s[N - 1 - threadIdx.x];\n"
                      "}\n"
                      "template __global__ void staged<256>(float*);\n"}});
  CompileResult without = compile(dir + "/sol.cu");
  EXPECT_FALSE(without.ok);
  opts_.extra_flags = {"-DFP4ARENA_TEST_TILE=64", "-maxrregcount=64", "-Xptxas", "-v"};
  CompileResult with = compile(dir + "/sol.cu");
  ASSERT_TRUE(with.ok) << with.diagnostics;
  EXPECT_EQ(with.nvcc_flags, opts_.extra_flags);
  EXPECT_NE(with.command.find("-DFP4ARENA_TEST_TILE=64 -maxrregcount=64"), std::string::npos);
  EXPECT_EQ(with.diagnostics.find("ptxas info"), std::string::npos) << with.diagnostics;
  const KernelResources* staged = nullptr;
  for (const KernelResources& k : with.kernels) {
    if (k.name == "void staged<256>(float*)") staged = &k;
  }
  ASSERT_NE(staged, nullptr) << format_kernel_resources(with.kernels);
  EXPECT_EQ(staged->shared_bytes, 1024);
  EXPECT_EQ(staged->barriers, 1);
  EXPECT_GT(staged->registers, 0);
  EXPECT_LE(staged->registers, 64);
  EXPECT_EQ(staged->arch, opts_.arch);
  opts_.extra_flags = {"-DFP4ARENA_TEST_TILE=64", "-maxrregcount=32"};
  CompileResult other = compile(dir + "/sol.cu");
  EXPECT_TRUE(other.ok) << other.diagnostics;
  EXPECT_NE(other.so_path, with.so_path);
  std::string out;
  run_capture({"rm", "-rf", dir}, &out);
}

TEST_F(Compile, TheTimeLimitCoversTheDependencyScan) {
  opts_.timeout_seconds = 0.05;
  auto t0 = std::chrono::steady_clock::now();
  CompileResult r = compile(challenge_dir() + "/starter.cu");
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(r.timed_out);
  EXPECT_NE(r.diagnostics.find("(nvcc -M) ran past the compile time limit of 0.05 s"),
            std::string::npos)
      << r.diagnostics;
  EXPECT_LT(s, 5.0);
}

// A stand-in nvcc that answers --version, --dryrun and the dependency scan at once and hangs
// (in a child of its own, which must die too) in the step named `hang`: "dryrun" or "compile".
// Compiles the starter with a 2 s limit and checks that it stops in time with `message`.
void Compile::expect_stopped_in_time(const std::string& hang, const std::string& message) {
  std::string dryrun = hang == "dryrun" ? "sleep 60" : "echo '#$ INCLUDES=\"-I/nonexistent\"'";
  std::string compile_step = hang == "compile" ? "sleep 60" : "exit 1";
  std::string dir =
      write_tree(opts_.cache_dir + "-src",
                 {{"nvcc",
                   "#!/bin/sh\n"
                   "case \" $* \" in\n"
                   "  *\" --version \"*) echo 'Cuda compilation tools, release 99.0, V99.0.1';;\n"
                   "  *\" --dryrun \"*) " +
                       dryrun +
                       ";;\n"
                       "  *\" -M \"*) while [ $# -gt 0 ]; do\n"
                       "      if [ \"$1\" = -MF ]; then echo 'fp4arena_deps :' > \"$2\"; fi\n"
                       "      shift\n"
                       "    done;;\n"
                       "  *) " +
                       compile_step + ";;\nesac\n"}});
  ASSERT_EQ(chmod((dir + "/nvcc").c_str(), 0755), 0);
  opts_.nvcc = dir + "/nvcc";
  opts_.timeout_seconds = 2;
  auto t0 = std::chrono::steady_clock::now();
  CompileResult r = compile(challenge_dir() + "/starter.cu");
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(r.timed_out);
  EXPECT_NE(r.diagnostics.find(message), std::string::npos) << r.diagnostics;
  EXPECT_GE(s, 1.5);
  EXPECT_LT(s, 10.0);
  std::string out;
  run_capture({"rm", "-rf", dir}, &out);
}

TEST_F(Compile, TheTimeLimitStopsAHangingCompile) {
  expect_stopped_in_time("compile", "fp4arena: nvcc ran past the compile time limit of 2 s");
}

TEST_F(Compile, TheTimeLimitCoversTheIncludeFolderQuery) {
  expect_stopped_in_time("dryrun",
                         "fp4arena: nvcc --dryrun (asked for its include folders) ran past the "
                         "compile time limit of 2 s");
}

// The peak resident memory of this process so far, in bytes.
uint64_t peak_rss_bytes() {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return uint64_t(ru.ru_maxrss) * 1024;
}

TEST_F(Compile, APreprocessorBombRunsOutOfMemoryNotTheMachine) {
  // 2^32 tokens built in memory by the preprocessor: with 1 GiB of address space per program
  // it fails within seconds, and says which limit it hit.
  opts_.memory_limit_bytes = uint64_t(1) << 30;
  opts_.timeout_seconds = 240;
  const uint64_t rss_before = peak_rss_bytes();
  auto t0 = std::chrono::steady_clock::now();
  CompileResult r = compile(source_dir() + "/tests/solutions/adversarial/preprocessor_bomb.cu");
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_FALSE(r.ok);
  EXPECT_FALSE(r.timed_out) << s << " s";
  EXPECT_NE(r.diagnostics.find("fp4arena: a compiler step ran out of memory: nvcc and every "
                               "program it starts may use at most 1 GiB of address space"),
            std::string::npos)
      << r.diagnostics.substr(0, 4000);
  EXPECT_LT(peak_rss_bytes() - rss_before, uint64_t(256) << 20) << "the judge itself grew";
}

TEST_F(Compile, APreprocessorBombStopsWithinTheTimeLimit) {
  // With the default memory limit (8 GiB) the time limit usually comes first; whichever
  // defense triggers, the compile stops in time and says which.
  opts_.timeout_seconds = 3;
  const uint64_t rss_before = peak_rss_bytes();
  auto t0 = std::chrono::steady_clock::now();
  CompileResult r = compile(source_dir() + "/tests/solutions/adversarial/preprocessor_bomb.cu");
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_FALSE(r.ok);
  EXPECT_LT(s, 3 + 5.0);
  if (r.timed_out) {
    EXPECT_NE(r.diagnostics.find("ran past the compile time limit of 3 s"), std::string::npos)
        << r.diagnostics.substr(0, 4000);
  } else {
    EXPECT_NE(r.diagnostics.find("may use at most 8 GiB of address space"), std::string::npos)
        << r.diagnostics.substr(0, 4000);
  }
  EXPECT_LT(peak_rss_bytes() - rss_before, uint64_t(256) << 20) << "the judge itself grew";
}

TEST_F(Compile, ASourceWithA200KiBLineIsHandled) {
  // A wrong signature after one very long line: the diagnostics, the signature finder and
  // the dependency scan all read it.
  std::string wrong, err;
  ASSERT_TRUE(read_file(source_dir() + "/tests/solutions/wrong_signature.cu", &wrong, &err));
  std::string dir = write_tree(opts_.cache_dir + "-src",
                               {{"sol.cu", "// " + std::string(200 * 1024, 'x') + "\n" + wrong}});
  CompileResult r = compile(dir + "/sol.cu");
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.diagnostics.find("solve() must be defined with exactly this signature"),
            std::string::npos)
      << r.diagnostics.substr(0, 2000);
  EXPECT_NE(r.diagnostics.find("sol.cu:5"), std::string::npos) << r.diagnostics.substr(0, 2000);
  std::string out;
  run_capture({"rm", "-rf", dir}, &out);
}

TEST_F(Compile, BadOptionsAreUsageErrors) {
  CompileResult r;
  std::string err;
  opts_.extra_flags = {"-ccbin", "/tmp/evil"};
  EXPECT_FALSE(compile_solution(spec_, challenge_dir() + "/starter.cu", opts_, &r, &err));
  EXPECT_TRUE(r.usage_error);
  EXPECT_NE(err.find("'-ccbin'"), std::string::npos) << err;
  opts_.extra_flags.clear();
  opts_.include_dirs = {"/nonexistent/fp4arena-include"};
  EXPECT_FALSE(compile_solution(spec_, challenge_dir() + "/starter.cu", opts_, &r, &err));
  EXPECT_TRUE(r.usage_error);
  EXPECT_NE(err.find("/nonexistent/fp4arena-include"), std::string::npos) << err;
}

TEST_F(Compile, BadArchIsAnError) {
  opts_.arch = "hopper";
  CompileResult r;
  std::string err;
  EXPECT_FALSE(compile_solution(spec_, challenge_dir() + "/starter.cu", opts_, &r, &err));
  EXPECT_NE(err.find("--arch"), std::string::npos) << err;
  EXPECT_TRUE(r.usage_error);
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

// A wrong signature is shown parameter by parameter, blanks around '*' aside.
TEST(CompileHelpers, SignatureDifferencesNameEachParameter) {
  const std::string want = "extern \"C\" void solve(const uint8_t* a, __half* c, int M)";
  EXPECT_EQ(signature_differences(want, "void solve(const uint8_t *a, __half * c, int  M)"), "");
  EXPECT_EQ(signature_differences(want, "void solve(const uint8_t* a, float* c, int M)"),
            "  parameter 2: expected `__half* c`, yours `float* c`\n");
  EXPECT_EQ(
      signature_differences(want, "void solve(const uint8_t* a, __half* c)"),
      "  expected 3 parameters, yours has 2\n  parameter 3: expected `int M`, yours `(none)`\n");
  EXPECT_EQ(signature_differences(want, "(no function named solve found)"), "");
  EXPECT_EQ(signature_differences(want, "void solve()"),
            "  expected 3 parameters, yours has 0\n"
            "  parameter 1: expected `const uint8_t* a`, yours `(none)`\n"
            "  parameter 2: expected `__half* c`, yours `(none)`\n"
            "  parameter 3: expected `int M`, yours `(none)`\n");
}

TEST(CompileHelpers, NvccFlagsAllowList) {
  std::string err;
  EXPECT_TRUE(check_nvcc_flags({}, &err));
  EXPECT_TRUE(check_nvcc_flags(
      {"-maxrregcount=128", "-DTILE", "-DTILE_M=128", "-DX=", "-DV=1.5f", "-DNEG=-1",
       "-D__CUDA_NO_HALF_OPERATORS__", "-UNDEBUG", "--use_fast_math", "-Xptxas", "-v", "-Xptxas=-v",
       "--expt-relaxed-constexpr", "--expt-extended-lambda", "-std=c++20", "-std=c++17"},
      &err))
      << err;
  struct Bad {
    std::vector<std::string> flags;
    std::string named;  // the refused token, as the message quotes it
  };
  const std::vector<Bad> bad = {
      {{"-DX -o /etc/passwd"}, "'-DX -o /etc/passwd'"},
      {{"-DX=1 -o /etc/passwd"}, "'-DX=1 -o /etc/passwd'"},
      {{"-DX=a;rm -rf ~"}, "'-DX=a;rm -rf ~'"},
      {{"-DX=a,B=2"}, "'-DX=a,B=2'"},
      {{"-DX=\"s\""}, "'-DX=\"s\"'"},
      {{"-DX=$(id)"}, "'-DX=$(id)'"},
      {{"-D", "X"}, "'-D'"},
      {{"-D1X"}, "'-D1X'"},
      {{"-UX=1"}, "'-UX=1'"},
      {{"--compiler-bindir=/tmp"}, "'--compiler-bindir=/tmp'"},
      {{"--compiler-bindir", "/tmp"}, "'--compiler-bindir'"},
      {{"-ccbin", "/tmp/gcc"}, "'-ccbin'"},
      {{"-Xcompiler", "-fplugin=/tmp/x.so"}, "'-Xcompiler'"},
      {{"-Xptxas", "-O0"}, "'-Xptxas'"},
      {{"-Xptxas"}, "'-Xptxas'"},
      {{"-Xptxas=-v,-O0"}, "'-Xptxas=-v,-O0'"},
      {{"-maxrregcount=abc"}, "'-maxrregcount=abc'"},
      {{"-maxrregcount=0"}, "'-maxrregcount=0'"},
      {{"-maxrregcount=256"}, "'-maxrregcount=256'"},
      {{"-maxrregcount=+32"}, "'-maxrregcount=+32'"},
      {{"-maxrregcount", "32"}, "'-maxrregcount'"},
      {{"-maxrregcount=32 -o x"}, "'-maxrregcount=32 -o x'"},
      {{"-o", "/etc/passwd"}, "'-o'"},
      {{"-I/etc"}, "'-I/etc'"},
      {{"-include", "/etc/passwd"}, "'-include'"},
      {{"--use_fast_math=false"}, "'--use_fast_math=false'"},
      {{"-Dgood", "-lcrypt"}, "'-lcrypt'"},
      {{""}, "''"},
      {{"-std=c++14"}, "'-std=c++14'"},
      {{"-std=gnu++20"}, "'-std=gnu++20'"},
      {{"--expt-relaxed-constexpr=1"}, "'--expt-relaxed-constexpr=1'"},
  };
  for (const Bad& b : bad) {
    err.clear();
    EXPECT_FALSE(check_nvcc_flags(b.flags, &err)) << b.named;
    EXPECT_NE(err.find(b.named), std::string::npos) << err;
    EXPECT_NE(err.find("allowed nvcc flags: -maxrregcount=N"), std::string::npos) << err;
  }
}

TEST(CompileHelpers, IncludeDirsMustBeHarmlessExistingDirectories) {
  std::string err;
  std::string dir = binary_dir() + "/test-include-dirs-" + std::to_string(getpid());
  ASSERT_TRUE(make_dirs(dir + "/ok", &err)) << err;
  ASSERT_TRUE(write_file_atomic(dir + "/file.h", "", &err)) << err;
  EXPECT_TRUE(check_include_dirs({}, &err));
  EXPECT_TRUE(check_include_dirs({dir + "/ok", source_dir()}, &err)) << err;
  for (const std::string& bad : {dir + "/missing", dir + "/file.h", dir + "/ok,/etc",
                                 dir + "/ok;true", dir + "/ok $(id)", std::string("")}) {
    EXPECT_FALSE(check_include_dirs({dir + "/ok", bad}, &err)) << bad;
    EXPECT_NE(err.find("'" + bad + "'"), std::string::npos) << err;
  }
  std::string out;
  run_capture({"rm", "-rf", dir}, &out);
}

TEST(CompileHelpers, MakeDependencyScanner) {
  std::vector<std::string> files;
  std::string err;
  ASSERT_TRUE(
      parse_make_dependencies("t : a.cu \\\n    /x/b.h \\\n    my\\ dir/c\\ d.h \\\n"
                              "    e\\#f.h g$$h.h\n",
                              &files, &err))
      << err;
  EXPECT_EQ(files, (std::vector<std::string>{"a.cu", "/x/b.h", "my dir/c d.h", "e#f.h", "g$h.h"}));
  // gcc's spelling (no blank before ':'), CRLF continuations, a later (phony) rule ignored.
  ASSERT_TRUE(parse_make_dependencies("out.o: a.cu \\\r\n b.h\r\nb.h:\n", &files, &err)) << err;
  EXPECT_EQ(files, (std::vector<std::string>{"a.cu", "b.h"}));
  // A name holding ':' that is not the separator, no trailing newline.
  ASSERT_TRUE(parse_make_dependencies("t: dir:x/a.h", &files, &err)) << err;
  EXPECT_EQ(files, (std::vector<std::string>{"dir:x/a.h"}));
  ASSERT_TRUE(parse_make_dependencies("t:\n", &files, &err)) << err;
  EXPECT_TRUE(files.empty());
  EXPECT_FALSE(parse_make_dependencies("", &files, &err));
  EXPECT_FALSE(parse_make_dependencies("no rule here\n", &files, &err));
  EXPECT_NE(err.find("no 'target:'"), std::string::npos) << err;
  // Long input: linear, no recursion.
  std::string many = "t :";
  for (int i = 0; i < 20000; ++i) many += " \\\n  /h/" + std::to_string(i) + ".h";
  ASSERT_TRUE(parse_make_dependencies(many + "\n", &files, &err));
  EXPECT_EQ(files.size(), 20000u);
}

// A report written for these tests in the shape ptxas prints with -v: two translation
// units, a kernel that spills, a template kernel with shared memory, an extern "C" kernel,
// a non-inlined device function's block (not a kernel), and a warning that must stay.
const char kReport[] =
    "ptxas info    : 0 bytes gmem\n"
    "ptxas info    : Compiling entry function '_Z6spillyPf' for 'sm_90a'\n"
    "ptxas info    : Function properties for _Z6spillyPf\n"
    "    96 bytes stack frame, 120 bytes spill stores, 136 bytes spill loads\n"
    "ptxas info    : Used 40 registers, used 0 barriers, 96 bytes cumulative stack size\n"
    "ptxas info    : Compile time = 12.500 ms\n"
    "ptxas info    : Function properties for _Z5twicef\n"
    "    8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads\n"
    "ptxas warning : Registers are spilled to local memory in function '_Z6spillyPf'\n"
    "ptxas info    : Compiling entry function '_Z4tileILi128EEvPKtPf' for 'sm_90a'\n"
    "ptxas info    : Function properties for _Z4tileILi128EEvPKtPf\n"
    "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
    "ptxas info    : Used 128 registers, used 2 barriers, 49152 bytes smem\n"
    "ptxas info    : 0 bytes gmem\n"
    "ptxas info    : Compiling entry function 'plain_c_kernel' for 'sm_90a'\n"
    "ptxas info    : Function properties for plain_c_kernel\n"
    "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
    "ptxas info    : Used 8 registers, 384 bytes cmem[0]\n"
    "sol.cu:3: warning: variable \"unused\" was declared but never referenced\n";

TEST(CompileHelpers, PtxasReportParser) {
  std::vector<KernelResources> ks = parse_ptxas_report(kReport);
  ASSERT_EQ(ks.size(), 3u);
  EXPECT_EQ(ks[0].name, "spilly(float*)");
  EXPECT_EQ(ks[0].mangled_name, "_Z6spillyPf");
  EXPECT_EQ(ks[0].arch, "sm_90a");
  EXPECT_EQ(ks[0].registers, 40);
  EXPECT_EQ(ks[0].stack_bytes, 96);
  EXPECT_EQ(ks[0].spill_store_bytes, 120);
  EXPECT_EQ(ks[0].spill_load_bytes, 136);
  EXPECT_EQ(ks[0].shared_bytes, 0);
  EXPECT_EQ(ks[0].barriers, 0);
  EXPECT_EQ(ks[1].name, "void tile<128>(unsigned short const*, float*)");
  EXPECT_EQ(ks[1].registers, 128);
  EXPECT_EQ(ks[1].barriers, 2);
  EXPECT_EQ(ks[1].shared_bytes, 49152);
  EXPECT_EQ(ks[1].spill_store_bytes, 0);
  EXPECT_EQ(ks[2].name, "plain_c_kernel");
  EXPECT_EQ(ks[2].registers, 8);
  EXPECT_EQ(ks[2].shared_bytes, 0);

  EXPECT_TRUE(parse_ptxas_report("").empty());
  EXPECT_TRUE(parse_ptxas_report("ptxas info    : 0 bytes gmem\nsome other text\n").empty());
  // A device function alone is not a kernel.
  EXPECT_TRUE(parse_ptxas_report("ptxas info    : Function properties for _Z5twicef\n"
                                 "    8 bytes stack frame, 4 bytes spill stores, 4 bytes spill "
                                 "loads\n")
                  .empty());
  // A long single line is read in linear time.
  EXPECT_TRUE(parse_ptxas_report(std::string(200 * 1024, 'p')).empty());
}

TEST(CompileHelpers, PtxasInfoIsStrippedWarningsStay) {
  std::string kept = strip_ptxas_info(kReport);
  EXPECT_EQ(kept,
            "ptxas warning : Registers are spilled to local memory in function '_Z6spillyPf'\n"
            "sol.cu:3: warning: variable \"unused\" was declared but never referenced\n");
  EXPECT_EQ(strip_ptxas_info("error: x\n    8 bytes stack frame\nlast"),
            "error: x\n    8 bytes stack frame\nlast");
}

TEST(CompileHelpers, KernelResourcesTableAndJson) {
  std::vector<KernelResources> ks = parse_ptxas_report(kReport);
  std::string table = format_kernel_resources(ks);
  EXPECT_NE(table.find("kernel"), std::string::npos) << table;
  EXPECT_NE(table.find("regs"), std::string::npos) << table;
  EXPECT_NE(table.find("spilly(float*)"), std::string::npos) << table;
  EXPECT_NE(table.find("120/136"), std::string::npos) << table;
  EXPECT_NE(table.find("49152"), std::string::npos) << table;
  EXPECT_EQ(std::count(table.begin(), table.end(), '\n'), 4) << table;
  EXPECT_NE(format_kernel_resources({}).find("no kernels"), std::string::npos);
  KernelResources long_name;
  long_name.name = "void f<" + std::string(300, 'T') + ">(int)";
  std::string shortened = format_kernel_resources({long_name});
  EXPECT_NE(shortened.find("..."), std::string::npos);
  EXPECT_LT(shortened.size(), 250u) << shortened;
  // The parameter list goes first, so the kernel's own name stays readable.
  KernelResources anon;
  anon.name =
      "(anonymous namespace)::nvfp4_matmul_naive(unsigned char const*, unsigned char "
      "const*, float, __half*, int, int, int)";
  EXPECT_NE(format_kernel_resources({anon}).find("  (anon)::nvfp4_matmul_naive(...) "),
            std::string::npos)
      << format_kernel_resources({anon});

  nlohmann::json j = kernel_resources_json(ks);
  ASSERT_TRUE(j.is_array());
  ASSERT_EQ(j.size(), 3u);
  EXPECT_EQ(j[0]["name"], "spilly(float*)");
  EXPECT_EQ(j[0]["mangled_name"], "_Z6spillyPf");
  EXPECT_EQ(j[0]["spill_store_bytes"], 120);
  EXPECT_EQ(j[0]["spill_load_bytes"], 136);
  EXPECT_EQ(j[0]["stack_bytes"], 96);
  EXPECT_EQ(j[1]["shared_bytes"], 49152);
  EXPECT_EQ(j[1]["barriers"], 2);
  EXPECT_EQ(j[2]["registers"], 8);
  EXPECT_EQ(j[2]["arch"], "sm_90a");
}

TEST(CompileHelpers, AuthorLine) {
  EXPECT_EQ(author_of("// author: Ada Lovelace\nint x;\n"), "Ada Lovelace");
  EXPECT_EQ(author_of("#include <x>\n  //author:grace  \r\n// author: second\n"), "grace");
  EXPECT_EQ(author_of("int x;  // author:\tTab Person\t\n"), "Tab Person");
  EXPECT_EQ(author_of("// author:\n// author:   \nint x;\n"), "") << "an empty name is no name";
  EXPECT_EQ(author_of("// author:\nlater\n"), "") << "the name never comes from the next line";
  EXPECT_EQ(author_of("/* author: x */\n"), "");
  EXPECT_EQ(author_of(""), "");
  EXPECT_EQ(author_of("// author: last line, no newline"), "last line, no newline");
  // A 200 KiB single line (many '//' in it, none an author line), then the author.
  std::string huge;
  for (int i = 0; i < 200 * 1024 / 8; ++i) huge += "// a// b";
  EXPECT_EQ(author_of(huge + "\n// author: after the long line\n"), "after the long line");
  EXPECT_EQ(author_of(huge), "");
  EXPECT_EQ(author_of(std::string(200 * 1024, '/') + " author: slashes"), "slashes");
}

TEST(CompileHelpers, NvccVersionIsReadWithoutRegex) {
  std::string nvcc = find_nvcc();
  if (nvcc.empty()) GTEST_SKIP() << "nvcc not found";
  std::string v = nvcc_version(nvcc);
  ASSERT_FALSE(v.empty());
  EXPECT_TRUE(std::all_of(v.begin(), v.end(), [](char c) {
    return (c >= '0' && c <= '9') || c == '.';
  })) << v;
}

TEST(CompileHelpers, RunWithTimeoutKillsTheWholeProcessGroup) {
  std::string out;
  bool timed_out = false;
  auto t0 = std::chrono::steady_clock::now();
  // The grandchild holds the output pipe too; it must die with its parent.
  int status = run_capture_with_timeout({"sh", "-c", "echo started; sleep 30 & sleep 30"}, 0.5,
                                        &out, &timed_out);
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_TRUE(timed_out);
  EXPECT_EQ(status, 128 + 9);
  EXPECT_EQ(out, "started\n");
  EXPECT_LT(s, 5.0);
  status = run_capture_with_timeout({"sh", "-c", "echo fine; exit 3"}, 10, &out, &timed_out);
  EXPECT_FALSE(timed_out);
  EXPECT_EQ(status, 3);
  EXPECT_EQ(out, "fine\n");
}

TEST(CompileHelpers, ChildLimitsReachTheChildAndWhatItStarts) {
  std::string out;
  bool timed_out = false;
  ChildLimits limits;
  limits.timeout_seconds = 30;
  limits.address_space_bytes = uint64_t(1) << 30;
  limits.file_size_bytes = uint64_t(1) << 20;
  // ulimit -v reports KiB; the shell's child inherits the limit.
  EXPECT_EQ(run_capture_limited({"sh", "-c", "sh -c 'ulimit -v'"}, limits, &out, &timed_out), 0);
  EXPECT_EQ(out, "1048576\n");
  // A file written past the size limit: the writer dies of SIGXFSZ, the file stops at 1 MiB.
  std::string dir = binary_dir() + "/test-child-limits-" + std::to_string(getpid());
  std::string err;
  ASSERT_TRUE(make_dirs(dir, &err)) << err;
  int status = run_capture_limited({"sh", "-c", "head -c 3000000 /dev/zero > " + dir + "/big"},
                                   limits, &out, &timed_out);
  EXPECT_EQ(status, 128 + SIGXFSZ) << out;
  struct stat st;
  ASSERT_EQ(stat((dir + "/big").c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 1 << 20);
  EXPECT_TRUE(remove_tree(dir));
}

// The forked child lowers RLIMIT_AS below what the judge's own process already maps (a
// sanitizer build maps terabytes of shadow), so it may not allocate after that: here 50000
// arguments, an argument array of 400 KB, which malloc would take with a fresh mmap.
TEST(CompileHelpers, ALimitBelowTheJudgesOwnSizeStillStartsTheChild) {
  std::ifstream status("/proc/self/status");
  std::string line;
  uint64_t vm_kib = 0;
  while (std::getline(status, line)) {
    if (line.rfind("VmSize:", 0) == 0) vm_kib = std::stoull(line.substr(7));
  }
  const uint64_t limit_bytes = uint64_t(48) << 20;
  if (vm_kib * 1024 <= limit_bytes) GTEST_SKIP() << "this process maps only " << vm_kib << " KiB";
  ChildLimits limits;
  limits.timeout_seconds = 30;
  limits.address_space_bytes = limit_bytes;
  std::vector<std::string> argv = {"true"};
  argv.resize(50000, "x");
  std::string out;
  bool timed_out = false;
  EXPECT_EQ(run_capture_limited(argv, limits, &out, &timed_out), 0) << out;
}

TEST(CompileHelpers, CapturedOutputIsCapped) {
  // A child that prints 40 MiB: the caller keeps the first 16 MiB and a line about the rest,
  // and the child still runs to its end (its exit status comes back).
  std::string out;
  bool timed_out = false;
  int status = run_capture_with_timeout({"sh", "-c", "head -c 41943040 /dev/zero; exit 7"}, 60,
                                        &out, &timed_out);
  EXPECT_EQ(status, 7);
  EXPECT_FALSE(timed_out);
  EXPECT_LT(out.size(), kMaxCapturedOutput + 200);
  EXPECT_EQ(out.find('\0'), 0u);
  EXPECT_NE(out.find("[25165824 more bytes of output left out: at most 16 MiB are kept]"),
            std::string::npos)
      << out.substr(kMaxCapturedOutput);
}

}  // namespace
}  // namespace fp4arena
