// The text helpers every message and page uses.
#include "harness/text.h"

#include <string>

#include <gtest/gtest.h>

namespace fp4arena {
namespace {

TEST(Text, FixedKeepsEveryDigitOfAnyNumber) {
  EXPECT_EQ(fixed(0.25, 4), "0.2500");
  EXPECT_EQ(fixed(927.66, 1), "927.7");
  EXPECT_EQ(fixed(-3.0, 0), "-3");
  const std::string big = fixed(1e300, 3);  // past any fixed buffer
  EXPECT_EQ(big.size(), 301u + 4u) << big;
  EXPECT_EQ(big.substr(0, 2), "10");
  EXPECT_EQ(big.substr(big.size() - 4), ".000");
  EXPECT_EQ(fixed(1.0 / 0.0, 2), "inf");
}

TEST(Text, SplitLinesShortenAndPaths) {
  EXPECT_EQ(split_lines("a\nb\n"), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(split_lines("a\n\nb"), (std::vector<std::string>{"a", "", "b"}));
  EXPECT_TRUE(split_lines("").empty());
  EXPECT_EQ(dir_of("/x/y/z.cu"), "/x/y");
  EXPECT_EQ(base_name("/x/y/z.cu"), "z.cu");
  EXPECT_TRUE(starts_with("fp4arena", "fp4"));
  EXPECT_TRUE(ends_with("solve.cu", ".cu"));
  EXPECT_FALSE(ends_with("cu", ".cu"));
}

}  // namespace
}  // namespace fp4arena
