#include "harness/validate.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

namespace fp4arena {
namespace {

const Tolerance kTol{0.1, 0.05};

uint16_t half_bits(float f) {
  // Test helper for values exactly representable in half.
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if (half_bits_to_float(uint16_t(h)) == f &&
        std::signbit(half_bits_to_float(uint16_t(h))) == std::signbit(f)) {
      return uint16_t(h);
    }
  }
  ADD_FAILURE() << f << " is not a half value";
  return 0;
}

TEST(Tolerance, BoundaryIsInclusive) {
  EXPECT_TRUE(within_tolerance(10.6, 10.0, kTol));  // 0.1 + 0.05*10 = 0.6
  EXPECT_FALSE(within_tolerance(10.6001, 10.0, kTol));
  EXPECT_TRUE(within_tolerance(9.4, 10.0, kTol));
  EXPECT_TRUE(within_tolerance(-0.1, 0.0, kTol));
  EXPECT_FALSE(within_tolerance(-0.10001, 0.0, kTol));
}

TEST(Tolerance, NanAndInfNeverPass) {
  double inf = std::numeric_limits<double>::infinity();
  EXPECT_FALSE(within_tolerance(std::nan(""), 1.0, kTol));
  EXPECT_FALSE(within_tolerance(inf, 1e300, kTol));
  EXPECT_FALSE(within_tolerance(-inf, -inf, kTol));
  EXPECT_FALSE(within_tolerance(1.0, std::nan(""), kTol));
}

TEST(Tolerance, SignedZeroesAreEqual) {
  EXPECT_TRUE(within_tolerance(-0.0, 0.0, kTol));
  EXPECT_TRUE(within_tolerance(0.0, -0.0, Tolerance{0, 0}));
}

TEST(HalfBits, DecodesEveryClassExactly) {
  EXPECT_EQ(half_bits_to_float(0x3C00), 1.0f);
  EXPECT_EQ(half_bits_to_float(0xC000), -2.0f);
  EXPECT_EQ(half_bits_to_float(0x7BFF), 65504.0f);
  EXPECT_EQ(half_bits_to_float(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(half_bits_to_float(0x03FF), std::ldexp(1023.0f, -24));
  EXPECT_TRUE(std::signbit(half_bits_to_float(0x8000)));
  EXPECT_TRUE(std::isinf(half_bits_to_float(0x7C00)));
  EXPECT_TRUE(std::isnan(half_bits_to_float(0x7E00)));
  EXPECT_TRUE(std::isnan(half_bits_to_float(0xFFFF)));
  EXPECT_EQ(bf16_bits_to_float(0x3F80), 1.0f);
  EXPECT_EQ(bf16_bits_to_float(0xC040), -3.0f);
}

TEST(ElementCodes, PackedNibblesAndWideTypes) {
  const uint8_t packed[] = {0xA5, 0x3C};
  EXPECT_EQ(element_code(DType::kE2m1x2, packed, 0), 0x5u);  // low nibble first
  EXPECT_EQ(element_code(DType::kE2m1x2, packed, 1), 0xAu);
  EXPECT_EQ(element_code(DType::kE2m1x2, packed, 3), 0x3u);
  EXPECT_EQ(element_value(DType::kE2m1x2, packed, 0), 3.0);
  EXPECT_EQ(element_value(DType::kE2m1x2, packed, 1), -1.0);
  const uint8_t e8m0[] = {127, 130, 0xFF};
  EXPECT_EQ(element_value(DType::kFp8E8m0, e8m0, 0), 1.0);
  EXPECT_EQ(element_value(DType::kFp8E8m0, e8m0, 1), 8.0);
  EXPECT_TRUE(std::isnan(element_value(DType::kFp8E8m0, e8m0, 2)));
  const int32_t ints[] = {-7, 1 << 20};
  EXPECT_EQ(element_value(DType::kInt32, reinterpret_cast<const uint8_t*>(ints), 0), -7.0);
}

ParamSpec out_param(DType t, CompareKind k, double atol = 0.1, double rtol = 0.05) {
  ParamSpec p;
  p.name = "c";
  p.role = "out";
  p.dtype = t;
  p.shape = {"R", "C"};
  p.compare.kind = k;
  p.compare.atol = atol;
  p.compare.rtol = rtol;
  return p;
}

const uint8_t* bytes(const void* p) {
  return static_cast<const uint8_t*>(p);
}

OutputReport check_half(const std::vector<uint16_t>& out, const std::vector<float>& ref,
                        int64_t rows, int64_t cols) {
  ExpectedOutput e;
  e.values = ref;
  return compare_output(out_param(DType::kFp16, CompareKind::kTolerance), rows, cols,
                        bytes(out.data()), Poison{}, nullptr, Poison{}, e);
}

TEST(Validate, PassingOutput) {
  std::vector<float> ref = {1.0f, -2.0f, 0.0f, 100.0f};
  std::vector<uint16_t> out = {half_bits(1.0f), half_bits(-2.0f), half_bits(-0.0f),
                               half_bits(104.0f)};
  OutputReport r = check_half(out, ref, 2, 2);
  EXPECT_TRUE(r.passed) << r.summary;
  EXPECT_EQ(r.mismatches, 0);
  EXPECT_DOUBLE_EQ(r.max_abs_err, 4.0);
  EXPECT_NEAR(r.max_excess, 4.0 / 5.1, 1e-12);  // 4 of the allowed 0.1 + 0.05*100
  EXPECT_TRUE(r.tile_map.empty());
}

TEST(Validate, ReportsWorstElementsUnwrittenAndNonFinite) {
  const int rows = 40, cols = 100;
  std::vector<float> ref(rows * cols, 1.0f);
  std::vector<uint16_t> out(rows * cols, half_bits(1.0f));
  out[5 * cols + 7] = half_bits(3.0f);     // off by 2 (excess 2/0.15)
  out[39 * cols + 99] = 0xFFFF;            // the poison: never written
  out[10 * cols + 50] = 0x7C00;            // +inf
  out[20 * cols + 20] = half_bits(1.25f);  // off by 0.25: excess 1.67
  OutputReport r = check_half(out, ref, rows, cols);
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.mismatches, 4);
  EXPECT_EQ(r.unwritten, 1);
  EXPECT_EQ(r.nonfinite, 1);
  ASSERT_EQ(r.worst.size(), 4u);
  // Non-finite first (infinite excess), then by excess.
  EXPECT_TRUE(std::isinf(r.worst[0].excess));
  EXPECT_EQ(r.worst[2].row, 5);
  EXPECT_EQ(r.worst[2].col, 7);
  EXPECT_NEAR(r.worst[2].excess, 2 / 0.15, 1e-9);
  EXPECT_EQ(r.worst[3].row, 20);
  EXPECT_NE(r.summary.find("4 of 4000 elements"), std::string::npos) << r.summary;
  EXPECT_NE(r.summary.find("1 never written"), std::string::npos) << r.summary;
  EXPECT_NE(r.tile_map.find('x'), std::string::npos);
}

TEST(Validate, WorstListSpansDistinctTiles) {
  // Four bad elements in one tile (a 16 x 64 map over 64 x 64: 4 rows x 1 column each) and
  // one mildly bad element in another: the list shows the worst of the first tile and the
  // lone one, not four neighbours from the same tile.
  const int rows = 64, cols = 64;
  std::vector<float> ref(rows * cols, 1.0f);
  std::vector<uint16_t> out(rows * cols, half_bits(1.0f));
  for (int r = 0; r < 4; ++r) out[r * cols] = half_bits(8.0f);
  out[0] = half_bits(16.0f);
  out[63 * cols + 63] = half_bits(1.5f);
  OutputReport r = check_half(out, ref, rows, cols);
  ASSERT_EQ(r.worst.size(), 2u);
  EXPECT_EQ(r.worst[0].row, 0);
  EXPECT_EQ(r.worst[0].col, 0);
  EXPECT_EQ(r.worst[1].row, 63);
  EXPECT_EQ(r.worst[1].col, 63);
}

TEST(Validate, TileMapShowsALastColumnBug) {
  const int rows = 64, cols = 64;
  std::vector<float> ref(rows * cols, 2.0f);
  std::vector<uint16_t> out(rows * cols, half_bits(2.0f));
  for (int r = 0; r < rows; ++r) out[r * cols + cols - 1] = half_bits(0.0f);
  OutputReport r = check_half(out, ref, rows, cols);
  EXPECT_EQ(r.mismatches, rows);
  // Every map row ends with '#' (the last column fails) and has '.' elsewhere.
  size_t start = r.tile_map.find('\n') + 1;
  int map_rows = 0;
  for (size_t pos = start; pos < r.tile_map.size();) {
    size_t end = r.tile_map.find('\n', pos);
    std::string line = r.tile_map.substr(pos, end - pos);
    EXPECT_EQ(line.back(), '#') << line;
    EXPECT_EQ(line.find('#'), line.size() - 1) << line;
    ++map_rows;
    pos = end + 1;
  }
  EXPECT_EQ(map_rows, 16);
}

TEST(Validate, FloatAndBf16Outputs) {
  ExpectedOutput e;
  e.values = {1.0f, 2.0f};
  std::vector<float> out = {1.0f, std::nanf("")};
  OutputReport r = compare_output(out_param(DType::kFp32, CompareKind::kTolerance), 1, 2,
                                  bytes(out.data()), Poison{}, nullptr, Poison{}, e);
  EXPECT_EQ(r.mismatches, 1);
  EXPECT_EQ(r.nonfinite, 1);
  // An FP32 element at an odd index left as the poison is unwritten, not a NaN the solution
  // wrote (the poison's code was once read past a 4-byte buffer for it).
  const uint32_t poison = 0xFFFFFFFFu;
  std::memcpy(&out[1], &poison, sizeof poison);
  r = compare_output(out_param(DType::kFp32, CompareKind::kTolerance), 1, 2, bytes(out.data()),
                     Poison{}, nullptr, Poison{}, e);
  EXPECT_EQ(r.unwritten, 1);
  std::vector<uint16_t> bf = {0x3F80, 0xFFFF};  // 1.0, poison
  r = compare_output(out_param(DType::kBf16, CompareKind::kTolerance), 1, 2, bytes(bf.data()),
                     Poison{}, nullptr, Poison{}, e);
  EXPECT_EQ(r.mismatches, 1);
  EXPECT_EQ(r.unwritten, 1);
}

TEST(Validate, UlpComparison) {
  ExpectedOutput e;
  e.values = {1.0f, 3.0f};
  float one_up = std::nextafter(1.0f, 2.0f), two_up = std::nextafter(one_up, 2.0f);
  std::vector<float> out = {one_up, 3.0f};
  ParamSpec p = out_param(DType::kFp32, CompareKind::kUlp);
  p.compare.max_ulp = 1;
  EXPECT_TRUE(compare_output(p, 1, 2, bytes(out.data()), Poison{}, nullptr, Poison{}, e).passed);
  out[0] = two_up;
  OutputReport r = compare_output(p, 1, 2, bytes(out.data()), Poison{}, nullptr, Poison{}, e);
  EXPECT_FALSE(r.passed);
  EXPECT_NEAR(r.worst[0].excess, 2.0, 1e-9);
}

TEST(Validate, ExactCodesOfPackedFp4) {
  ParamSpec p = out_param(DType::kE2m1x2, CompareKind::kExact);
  ExpectedOutput e;
  e.bytes = {0x21, 0x43};                   // elements 1, 2, 3, 4
  std::vector<uint8_t> got = {0x21, 0x53};  // element 3 is code 5 instead of 4
  OutputReport r = compare_output(p, 1, 4, got.data(), Poison{0x77}, nullptr, Poison{}, e);
  EXPECT_FALSE(r.passed);
  ASSERT_EQ(r.worst.size(), 1u);
  EXPECT_EQ(r.worst[0].col, 3);
  EXPECT_TRUE(r.worst[0].codes);
  EXPECT_EQ(r.worst[0].expected_code, 4u);
  EXPECT_EQ(r.worst[0].got_code, 5u);
  got[1] = 0x43;
  EXPECT_TRUE(compare_output(p, 1, 4, got.data(), Poison{0x77}, nullptr, Poison{}, e).passed);
}

TEST(Validate, ExactOrTieAcceptsOnlyTheMarkedNeighbour) {
  ParamSpec p = out_param(DType::kUint8, CompareKind::kExactOrTie);
  ExpectedOutput e;
  e.bytes = {10, 20, 30};
  e.tie = {0, 1, 0};
  e.alternatives = {{10, 21, 30}};
  std::vector<uint8_t> got = {10, 21, 30};
  OutputReport r = compare_output(p, 1, 3, got.data(), Poison{0}, nullptr, Poison{}, e);
  EXPECT_TRUE(r.passed) << r.summary;
  EXPECT_EQ(r.ties, 1);
  got = {11, 20, 30};  // a code flipped where no tie is marked
  r = compare_output(p, 1, 3, got.data(), Poison{0}, nullptr, Poison{}, e);
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.ties, 0);
  got = {10, 22, 30};  // a tie element, but neither neighbour
  EXPECT_FALSE(compare_output(p, 1, 3, got.data(), Poison{0}, nullptr, Poison{}, e).passed);
}

TEST(Validate, ExactOrTieAcceptsAnyOfSeveralAlternatives) {
  // E2M1 nibbles (two per byte): element 1 may take either of two other codes, element 2 one.
  ParamSpec p = out_param(DType::kE2m1x2, CompareKind::kExactOrTie);
  ExpectedOutput e;
  e.bytes = {0x21, 0x43};  // codes 1 2 3 4
  e.tie = {0, 1, 1, 0};
  e.alternatives = {{0x31, 0x42}, {0x11, 0x42}};  // element 1: 3 or 1; element 2: 2
  for (uint8_t b0 : {0x21, 0x31, 0x11}) {
    std::vector<uint8_t> got = {b0, 0x42};
    OutputReport r = compare_output(p, 1, 4, got.data(), Poison{0x77}, nullptr, Poison{}, e);
    EXPECT_TRUE(r.passed) << int(b0) << ": " << r.summary;
    EXPECT_EQ(r.ties, (b0 != 0x21) + 1);
  }
  std::vector<uint8_t> got = {0x51, 0x43};  // element 1 took a code no alternative has
  EXPECT_FALSE(compare_output(p, 1, 4, got.data(), Poison{0x77}, nullptr, Poison{}, e).passed);
  got = {0x21, 0x33};  // element 3 is no tie: its alternatives' codes do not count
  e.alternatives[1][1] = 0x32;
  EXPECT_FALSE(compare_output(p, 1, 4, got.data(), Poison{0x77}, nullptr, Poison{}, e).passed);
  std::string err;
  EXPECT_TRUE(check_expected(p, 4, 2, e, &err)) << err;
  e.alternatives[1].pop_back();
  EXPECT_FALSE(check_expected(p, 4, 2, e, &err));
  e.alternatives.clear();
  EXPECT_FALSE(check_expected(p, 4, 2, e, &err)) << "a tie mask needs an alternative";
}

// One mismatching element in the report, at (row, col).
void ExpectOneMismatchAt(const OutputReport& r, int64_t row, int64_t col) {
  EXPECT_EQ(r.mismatches, 1);
  ASSERT_EQ(r.worst.size(), 1u);
  EXPECT_EQ(r.worst[0].row, row);
  EXPECT_EQ(r.worst[0].col, col);
}

TEST(Validate, ExactRowsEqualToTheAnswerPassWholeAndTheRestElementByElement) {
  // Three rows of four E2M1 codes: row 0 is the answer byte for byte, row 1 takes a marked
  // tie's other code, row 2 has one wrong code. The report is the element-by-element one.
  ParamSpec p = out_param(DType::kE2m1x2, CompareKind::kExactOrTie);
  ExpectedOutput e;
  e.bytes = {0x21, 0x43, 0x21, 0x43, 0x21, 0x43};
  e.tie = {0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0};
  e.alternatives = {{0x21, 0x43, 0x31, 0x43, 0x21, 0x43}};
  std::vector<uint8_t> got = {0x21, 0x43, 0x31, 0x43, 0x21, 0x44};
  OutputReport r = compare_output(p, 3, 4, got.data(), Poison{0x77}, nullptr, Poison{}, e);
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.ties, 1);
  ExpectOneMismatchAt(r, 2, 2);
  // Rows of an odd number of E2M1 codes share a byte: checked element by element.
  ParamSpec odd = out_param(DType::kE2m1x2, CompareKind::kExact);
  ExpectedOutput oe;
  oe.bytes = {0x21, 0x43, 0x65};  // two rows of three codes: 1 2 3 | 4 5 6
  std::vector<uint8_t> og = {0x21, 0x43, 0x75};
  r = compare_output(odd, 2, 3, og.data(), Poison{0x77}, nullptr, Poison{}, oe);
  ExpectOneMismatchAt(r, 1, 2);
  // Under a NaN poison an element equal to the poison is never written, even in a row that
  // is otherwise the answer.
  ParamSpec fp8 = out_param(DType::kFp8E4m3, CompareKind::kExact);
  ExpectedOutput fe;
  fe.bytes = {0x38, 0x40};
  std::vector<uint8_t> fg = {0x38, 0xFF};
  r = compare_output(fp8, 1, 2, fg.data(), Poison{}, nullptr, Poison{}, fe);
  EXPECT_EQ(r.unwritten, 1);
  fg[1] = 0x40;
  EXPECT_TRUE(compare_output(fp8, 1, 2, fg.data(), Poison{}, nullptr, Poison{}, fe).passed);
}

TEST(Validate, UnwrittenBytesFoundWithTwoPoisons) {
  // A uint8 output whose expected value happens to equal the first poison: only the second
  // call (complementary poison) shows that the element was never written.
  ParamSpec p = out_param(DType::kUint8, CompareKind::kExact);
  ExpectedOutput e;
  e.bytes = {0x5A, 7, 9};
  std::vector<uint8_t> first = {0x5A, 7, 9}, second = {0xA5, 7, 9};
  OutputReport r =
      compare_output(p, 1, 3, first.data(), Poison{0x5A}, second.data(), Poison{0xA5}, e);
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.unwritten, 1);
  EXPECT_NE(r.summary.find("never written"), std::string::npos);
  second[0] = 0x5A;  // written both times
  EXPECT_TRUE(
      compare_output(p, 1, 3, first.data(), Poison{0x5A}, second.data(), Poison{0xA5}, e).passed);
}

TEST(Validate, CheckExpectedRejectsValuesOutsideTheOutputType) {
  ParamSpec p = out_param(DType::kFp16, CompareKind::kTolerance);
  ExpectedOutput e;
  e.values = {1.0f, 70000.0f};
  std::string err;
  EXPECT_FALSE(check_expected(p, 2, 4, e, &err));
  EXPECT_NE(err.find("outside the output type's range"), std::string::npos) << err;
  e.values = {1.0f};
  EXPECT_FALSE(check_expected(p, 2, 4, e, &err));
  ParamSpec q = out_param(DType::kUint8, CompareKind::kExactOrTie);
  ExpectedOutput x;
  x.bytes = {1, 2};
  x.tie = {1};
  EXPECT_FALSE(check_expected(q, 2, 2, x, &err));
}

}  // namespace
}  // namespace fp4arena
