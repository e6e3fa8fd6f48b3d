// A test fixture over one challenge folder: its spec, its registered code, and the
// generate/oracle calls every challenge's CPU tests make.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "harness/challenge.h"
#include "harness/spec.h"

namespace fp4arena::testing_util {

class ChallengeTest : public ::testing::Test {
 protected:
  /// `dir`: the challenge folder; `output`: the output whose oracle values expect() returns.
  ChallengeTest(std::string dir, std::string output)
      : dir_(std::move(dir)), output_(std::move(output)) {}

  void SetUp() override {
    std::string err;
    ASSERT_TRUE(load_spec(dir_, &spec_, &err)) << err;
    challenge_ = make_challenge(spec_.name);
    ASSERT_NE(challenge_, nullptr);
  }
  const CaseSpec& find(const std::string& name) {
    const CaseSpec* c = spec_.find_case(name);
    EXPECT_NE(c, nullptr) << name;
    return *c;
  }
  ProblemData gen(const CaseSpec& c, uint64_t seed) {
    ProblemData d;
    std::string err;
    EXPECT_TRUE(challenge_->generate(c, seed, &d, &err)) << err;
    return d;
  }
  /// The CPU oracle's values of the fixture's output.
  std::vector<float> expect(const ProblemData& d) {
    Expected out;
    std::string err;
    EXPECT_TRUE(challenge_->oracle(d, OracleDevice::kCpu, &out, &err)) << err;
    return out[output_].values;
  }

  Spec spec_;
  std::unique_ptr<Challenge> challenge_;

 private:
  std::string dir_, output_;
};

}  // namespace fp4arena::testing_util
