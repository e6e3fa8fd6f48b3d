// Mutated spec.json files through the real loader: no input crashes it, and every refusal
// names the file. Deterministic (fixed seeds) and bounded to a few seconds.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "harness/challenge.h"
#include "harness/process.h"
#include "harness/rng.h"
#include "harness/spec.h"
#include "tests/test_util.h"

namespace fp4arena {
namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

std::string mutate(const std::string& good, Rng& rng) {
  std::string s = good;
  switch (rng.below(8)) {
    case 0:  // flip bytes
      for (int i = 0, n = 1 + int(rng.below(8)); i < n; ++i) {
        s[rng.below(uint32_t(s.size()))] ^= static_cast<char>(1u << rng.below(8));
      }
      break;
    case 1:  // truncate
      s.resize(rng.below(uint32_t(s.size())));
      break;
    case 2: {  // a huge or odd number where a digit stood
      size_t at = s.find_first_of("0123456789", rng.below(uint32_t(s.size())));
      const char* odd[] = {"1e999", "-1",     "99999999999999999999999", "1.5",
                           "-0",    "1e-999", "9223372036854775807",     "18446744073709551615"};
      if (at != std::string::npos) s.replace(at, 1, odd[rng.below(8)]);
      break;
    }
    case 3: {  // deep nesting
      size_t at = rng.below(uint32_t(s.size()));
      int depth = int(rng.below(5000));
      s.insert(at, std::string(depth, '[') + std::string(depth, ']'));
      break;
    }
    case 4: {  // invalid UTF-8 inside a string
      size_t at = s.find('"', rng.below(uint32_t(s.size())));
      if (at != std::string::npos) s.insert(at + 1, "\xff\xfe\xc3");
      break;
    }
    case 5: {  // a value of another type
      size_t at = s.find(": ", rng.below(uint32_t(s.size())));
      const char* other[] = {"null", "[]", "{}", "\"x\"", "true", "[[[[1]]]]"};
      if (at != std::string::npos) s.insert(at + 2, std::string(other[rng.below(6)]) + ", \"z\": ");
      break;
    }
    case 6: {  // delete a span
      size_t at = rng.below(uint32_t(s.size()));
      s.erase(at, rng.below(200));
      break;
    }
    default: {  // duplicate a span
      size_t at = rng.below(uint32_t(s.size()));
      s.insert(at, s.substr(rng.below(uint32_t(s.size())), rng.below(300)));
      break;
    }
  }
  return s;
}

TEST(SpecFuzz, MutatedSpecsNeverCrashTheLoaderOrTheChallenges) {
  const std::string dir = ::testing::TempDir() + "/fp4arena-spec-fuzz";
  std::string err;
  ASSERT_TRUE(make_dirs(dir, &err)) << err;
  const std::vector<std::string> sources = {testing_util::challenge_dir() + "/spec.json",
                                            testing_util::toy_challenge_dir() + "/spec.json"};
  int refused = 0, accepted = 0;
  for (size_t f = 0; f < sources.size(); ++f) {
    const std::string good = slurp(sources[f]);
    ASSERT_FALSE(good.empty());
    for (uint64_t i = 0; i < 1500; ++i) {
      Rng rng(1234, f, i);
      const std::string text = mutate(good, rng);
      {
        std::ofstream out(dir + "/spec.json", std::ios::binary | std::ios::trunc);
        out << text;
      }
      Spec s;
      if (!load_spec(dir, &s, &err)) {
        ++refused;
        ASSERT_NE(err.find(dir + "/spec.json"), std::string::npos) << err;
        continue;
      }
      ++accepted;
      // An accepted spec goes on to the challenge's own checks and a tiny generation, as
      // run_challenge would: still no crash.
      auto ch = make_challenge(s.name);
      if (!ch) continue;
      for (const CaseSpec& c : s.tests) {
        if (!ch->check_case(c, &err)) continue;
        int64_t work = 1;
        for (const auto& kv : c.dims) work *= std::max<int64_t>(1, kv.second);
        if (work > (int64_t(1) << 16)) continue;  // keep the test fast
        ProblemData in;
        ch->generate(c, c.seed, &in, &err);
      }
    }
  }
  EXPECT_GT(refused, 1000);
  EXPECT_GT(accepted, 10);  // some mutations are harmless (a digit inside a seed, ...)
}

}  // namespace
}  // namespace fp4arena
