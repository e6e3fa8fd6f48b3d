// The .npy writer and its header reader.
#include "harness/npy.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>

#include "harness/process.h"
#include "tests/test_util.h"

namespace fp4arena {
namespace {

using testing_util::binary_dir;

class Npy : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = binary_dir() + "/test-npy-" + std::to_string(getpid());
    std::string err;
    ASSERT_TRUE(make_dirs(dir_, &err)) << err;
  }
  void TearDown() override {
    std::string out;
    run_capture({"rm", "-rf", dir_}, &out);
  }
  std::string slurp(const std::string& path) {
    std::string text, err;
    EXPECT_TRUE(read_file(path, &text, &err)) << err;
    return text;
  }
  std::string dir_;
};

TEST_F(Npy, ExactHeaderBytesOfAKnownCase) {
  const float data[6] = {0, 1, 2, 3, 4, 5};
  std::string err, path = dir_ + "/a.npy";
  ASSERT_TRUE(write_npy(path, "<f4", {2, 3}, data, sizeof data, &err)) << err;
  std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  // 10 prefix bytes + 60 dict bytes = 70; padded to 128 with spaces, the last one '\n'.
  std::string expected = std::string("\x93NUMPY\x01\x00", 8) + std::string("\x76\x00", 2) + dict +
                         std::string(128 - 10 - dict.size() - 1, ' ') + "\n";
  ASSERT_EQ(expected.size(), 128u);
  std::string file = slurp(path);
  ASSERT_EQ(file.size(), 128u + sizeof data);
  EXPECT_EQ(file.substr(0, 128), expected);
  EXPECT_EQ(std::memcmp(file.data() + 128, data, sizeof data), 0);
}

TEST_F(Npy, RoundTripsShapesAndDtypesWithAlignedData) {
  struct Case {
    std::string dtype;
    std::vector<int64_t> shape;
    std::string shape_text;
  };
  const std::vector<Case> cases = {
      {"fp32", {2, 3}, "(2, 3)"},
      {"fp16", {7}, "(7,)"},
      {"bf16", {4, 1, 5}, "(4, 1, 5)"},
      {"int32", {}, "()"},
      {"uint8", {0}, "(0,)"},
      {"e2m1x2", {3, 8}, "(3, 8)"},
      {"fp8_e4m3", {128, 96}, "(128, 96)"},
      {"fp8_e8m0", {1, 1, 1, 1}, "(1, 1, 1, 1)"},
  };
  for (const Case& c : cases) {
    std::string descr = npy_descr(c.dtype);
    ASSERT_FALSE(descr.empty()) << c.dtype;
    size_t item = static_cast<size_t>(descr[2] - '0');
    size_t count = 1;
    for (int64_t d : c.shape) count *= static_cast<size_t>(d);
    std::string data(count * item, '\0');
    for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 37 + 11);
    std::string err, path = dir_ + "/" + c.dtype + ".npy";
    ASSERT_TRUE(write_npy(path, descr, c.shape, data.data(), data.size(), &err)) << err;
    std::string file = slurp(path);
    std::string got_descr;
    std::vector<int64_t> got_shape;
    size_t offset = 0;
    ASSERT_TRUE(read_npy_header(file, &got_descr, &got_shape, &offset, &err)) << c.dtype << err;
    EXPECT_EQ(got_descr, descr);
    EXPECT_EQ(got_shape, c.shape) << c.dtype;
    EXPECT_EQ(offset % 64, 0u) << c.dtype;
    EXPECT_EQ(file[offset - 1], '\n');
    EXPECT_NE(file.find("'shape': " + c.shape_text + ", }"), std::string::npos)
        << file.substr(0, offset);
    EXPECT_EQ(file.substr(offset), data) << c.dtype;
  }
}

TEST(NpyHelpers, DescrOfEachDtype) {
  EXPECT_EQ(npy_descr("uint8"), "|u1");
  EXPECT_EQ(npy_descr("int32"), "<i4");
  EXPECT_EQ(npy_descr("fp16"), "<f2");
  EXPECT_EQ(npy_descr("bf16"), "<u2");
  EXPECT_EQ(npy_descr("fp32"), "<f4");
  EXPECT_EQ(npy_descr("fp8_e4m3"), "|u1");
  EXPECT_EQ(npy_descr("fp8_e8m0"), "|u1");
  EXPECT_EQ(npy_descr("e2m1x2"), "|u1");
  EXPECT_EQ(npy_descr("float"), "");
}

TEST_F(Npy, RefusesInconsistentArguments) {
  const float data[4] = {};
  std::string err;
  EXPECT_FALSE(write_npy(dir_ + "/x.npy", "<f4", {2, 3}, data, sizeof data, &err));
  EXPECT_NE(err.find("16 bytes do not hold 6 elements"), std::string::npos) << err;
  EXPECT_FALSE(write_npy(dir_ + "/x.npy", "float32", {4}, data, sizeof data, &err));
  EXPECT_FALSE(write_npy(dir_ + "/x.npy", "<f4", {-4}, data, sizeof data, &err));
  EXPECT_FALSE(write_npy(dir_ + "/no/such/dir/x.npy", "<f4", {4}, data, sizeof data, &err));
  EXPECT_NE(err.find("no/such/dir"), std::string::npos) << err;
}

TEST(NpyHelpers, HeaderReaderRefusesDamagedFiles) {
  std::string descr, err;
  std::vector<int64_t> shape;
  size_t offset = 0;
  auto read = [&](const std::string& dict) {
    std::string len(2, '\0');
    len[0] = static_cast<char>(dict.size() & 0xff);
    len[1] = static_cast<char>(dict.size() >> 8);
    return read_npy_header(std::string("\x93NUMPY\x01\x00", 8) + len + dict, &descr, &shape,
                           &offset, &err);
  };
  EXPECT_TRUE(read("{'descr': '<i4', 'fortran_order': False, 'shape': (5, 6)}\n")) << err;
  EXPECT_EQ(shape, (std::vector<int64_t>{5, 6}));
  EXPECT_FALSE(read("{'descr': '<i4', 'fortran_order': True, 'shape': (5, 6), }\n"));
  EXPECT_FALSE(read("{'descr': '<i4', 'shape': (5, 6), }\n"));
  EXPECT_FALSE(read("{'descr': '<i4', 'fortran_order': False, 'shape': (5, x), }\n"));
  EXPECT_FALSE(read("{'descr': '<i4', 'fortran_order': False, 'shape': (5 6), }\n"));
  EXPECT_FALSE(read("{'descr': '<i4', 'fortran_order': False, 'shape': (5, 6), 'x': 1}\n"));
  EXPECT_FALSE(read("not a dict"));
  EXPECT_FALSE(read_npy_header("\x93NUMP", &descr, &shape, &offset, &err));
  EXPECT_FALSE(
      read_npy_header(std::string("\x93NUMPY\x02\x00\x10\x00", 10), &descr, &shape, &offset, &err));
  EXPECT_NE(err.find("2.0"), std::string::npos) << err;
  EXPECT_FALSE(read_npy_header(std::string("\x93NUMPY\x01\x00\xff\x00{}", 12), &descr, &shape,
                               &offset, &err));
}

}  // namespace
}  // namespace fp4arena
