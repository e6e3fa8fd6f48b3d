#include "harness/device_limits.h"

#include <gtest/gtest.h>

namespace fp4arena {
namespace {

DeviceShape h200() {
  return {9, 0, 132, 1980, 3201, 6144};
}

TEST(DeviceLimits, HopperFromItsOwnTable) {
  EXPECT_NEAR(limit_value(LimitKind::kFp16Dense, h200()), 1070.53, 0.01);
  EXPECT_NEAR(limit_value(LimitKind::kFp8Dense, h200()), 2141.06, 0.01);
  // No FP4 tensor cores on sm_90: the FP8 rate bounds any exact FP4 path.
  EXPECT_DOUBLE_EQ(limit_value(LimitKind::kFp4Dense, h200()),
                   limit_value(LimitKind::kFp8Dense, h200()));
  EXPECT_NEAR(limit_value(LimitKind::kDram, h200()), 4917.0, 1.0);
  DeviceShape h100 = {9, 0, 132, 1980, 2619, 5120};
  EXPECT_NEAR(limit_value(LimitKind::kDram, h100), 3352.3, 0.1);
}

TEST(DeviceLimits, BlackwellDoublesEachRate) {
  DeviceShape b200 = {10, 0, 148, 1965, 4000, 8192};
  EXPECT_DOUBLE_EQ(dense_flops_per_clock_per_sm(LimitKind::kFp16Dense, 10, 0), 8192);
  EXPECT_DOUBLE_EQ(dense_flops_per_clock_per_sm(LimitKind::kFp4Dense, 10, 0), 32768);
  EXPECT_GT(limit_value(LimitKind::kFp4Dense, b200), 9000);  // datasheet: 9 PFLOPS dense
}

TEST(DeviceLimits, UnknownArchitectureHasNoLimit) {
  DeviceShape x = {7, 5, 40, 1500, 5000, 256};
  EXPECT_EQ(limit_value(LimitKind::kFp16Dense, x), 0);
  EXPECT_EQ(limit_value(LimitKind::kDram, x), 0);
  std::string why;
  EXPECT_FALSE(plausible_device(x, &why));
}

TEST(DeviceLimits, ImplausibleDevicesAreNamed) {
  std::string why;
  EXPECT_TRUE(plausible_device(h200(), &why)) << why;
  DeviceShape d = h200();
  d.sm_count = 100000;
  EXPECT_FALSE(plausible_device(d, &why));
  EXPECT_NE(why.find("sm_count"), std::string::npos);
  d = h200();
  d.sm_clock_max_mhz = 1e9;
  EXPECT_FALSE(plausible_device(d, &why));
  EXPECT_NE(why.find("sm_clock_max_mhz"), std::string::npos);
}

TEST(DeviceLimits, NamesRoundTrip) {
  for (const std::string& n : limit_names()) {
    LimitKind k;
    ASSERT_TRUE(parse_limit(n, &k)) << n;
    EXPECT_EQ(limit_name(k), n);
  }
  LimitKind k;
  EXPECT_FALSE(parse_limit("fp2_dense", &k));
}

}  // namespace
}  // namespace fp4arena
