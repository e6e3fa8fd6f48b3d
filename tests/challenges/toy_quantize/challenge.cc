// toy_quantize: a test-only challenge that exercises what nvfp4_matmul does not: two
// outputs (an exact uint8 code with a tie mask, a BF16 scale with a tolerance), a GB/s
// metric with the DRAM limit, and a device-copy yardstick. Linked into the test binaries
// only; tests/solutions/toy_quantize/ has its solutions.
//
//   s[m]    = max_k |x[m][k]| / 127            (BF16 output, rtol 0.01; 1 where the row is 0)
//   q[m][k] = 128 + rne(x[m][k] / s32[m])       (uint8, exact; s32 the FP32 value of s[m])
//
// x / s32 is one FP32 division; an implementation that multiplies by a reciprocal may land
// on the other side of a .5 boundary when the quotient is within 2 FP32 ulps of it, so there
// either neighbour passes (the tie mask). So may it on an exact midpoint where s32 is not a
// power of two (its reciprocal is then rounded: x = 2.625 and s32 = 1.75 give 1.5, but
// x * (1 / s32) gives 1.50000012), so that is a tie too; where s32 is a power of two the
// reciprocal is exact and an exact midpoint must round to even.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstring>

#include "challenges/nvfp4_quantize/quantize_inputs.h"
#include "harness/challenge.h"
#include "harness/copy_yardstick.h"
#include "harness/rng.h"
#include "harness/validate.h"

namespace fp4arena {
namespace {

// BF16 bits of the nearest BF16 value (the quantize challenges' codec helpers).
uint16_t bf16_rne(float f) {
  return bf16_bits(bf16_round(f));
}

class ToyQuantize : public Challenge {
 public:
  bool check_case(const CaseSpec& c, std::string* err) const override {
    if (c.generator != "example" && c.generator != "midpoints" && c.generator != "normal" &&
        c.generator != "zero_rows") {
      *err = "case '" + c.name + "': unknown generator '" + c.generator + "'";
      return false;
    }
    return true;
  }

  bool generate(const CaseSpec& c, uint64_t seed, ProblemData* out,
                std::string* err) const override {
    (void)err;
    const int64_t M = c.dims.at("M"), K = c.dims.at("K");
    std::vector<uint16_t> x(size_t(M * K));
    for (int64_t m = 0; m < M; ++m) {
      Rng rng(seed, 1, uint64_t(m));
      for (int64_t k = 0; k < K; ++k) {
        float v = 0;
        if (c.generator == "example") {
          const float ex[4] = {127.0f, -63.5f, 0.25f, 2.5f};  // s = 1: q = 255, 64, 128, 130
          v = ex[k % 4];
        } else if (c.generator == "midpoints") {
          // Row amax 127 (s = 1 exactly) and every other element an exact .5 midpoint.
          v = k == 0 ? 127.0f : float(int64_t(rng.below(200)) - 100) + 0.5f;
        } else if (c.generator == "zero_rows") {
          v = m % 2 ? float(rng.normal()) : 0.0f;
        } else {
          v = float(rng.normal());
        }
        x[size_t(m * K + k)] = bf16_rne(v);
      }
    }
    out->dims = c.dims;
    out->buffers["x"].resize(x.size() * 2);
    std::memcpy(out->buffers["x"].data(), x.data(), x.size() * 2);
    return true;
  }

  bool oracle(const ProblemData& in, OracleDevice, Expected* out, std::string* err) const override {
    (void)err;
    const int64_t M = in.dims.at("M"), K = in.dims.at("K");
    const uint8_t* xb = in.buffers.at("x").data();
    ExpectedOutput& q = (*out)["q"];
    ExpectedOutput& s = (*out)["s"];
    q.bytes.assign(size_t(M * K), 0);
    q.alternatives.assign(1, std::vector<uint8_t>(size_t(M * K), 0));
    std::vector<uint8_t>& alt = q.alternatives[0];
    q.tie.assign(size_t(M * K), 0);
    s.values.assign(size_t(M), 0);
    for (int64_t m = 0; m < M; ++m) {
      float amax = 0;
      for (int64_t k = 0; k < K; ++k) {
        uint16_t h;
        std::memcpy(&h, xb + 2 * (m * K + k), 2);
        amax = std::max(amax, std::fabs(bf16_bits_to_float(h)));
      }
      const float s32 = bf16_bits_to_float(bf16_rne(amax > 0 ? amax / 127.0f : 1.0f));
      s.values[size_t(m)] = s32;
      int e = 0;
      const bool exact_reciprocal = std::frexp(s32, &e) == 0.5f;  // s32 a power of two
      for (int64_t k = 0; k < K; ++k) {
        uint16_t h;
        std::memcpy(&h, xb + 2 * (m * K + k), 2);
        const float v = bf16_bits_to_float(h) / s32;
        const float r = std::nearbyint(v);  // round half to even (default rounding mode)
        const size_t i = size_t(m * K + k);
        q.bytes[i] = uint8_t(std::max(0.0f, std::min(255.0f, 128.0f + r)));
        alt[i] = q.bytes[i];
        const float boundary = std::floor(v) + 0.5f;
        const float ulp = std::nextafter(std::fabs(v), INFINITY) - std::fabs(v);
        if (std::fabs(v - boundary) <= 2 * ulp && (v != boundary || !exact_reciprocal)) {
          const float other = r > v ? r - 1 : r + 1;
          q.tie[i] = 1;
          alt[i] = uint8_t(std::max(0.0f, std::min(255.0f, 128.0f + other)));
        }
      }
    }
    return true;
  }

  std::string yardstick_name() const override { return "device-to-device copy of the same bytes"; }

  std::unique_ptr<Yardstick> make_yardstick(const ProblemData& in,
                                            std::string* err) const override {
    const int64_t M = in.dims.at("M"), K = in.dims.at("K");
    return make_copy_yardstick(size_t(2 * M * K + M * K + 2 * M), err);
  }
};

const bool kRegistered = register_challenge(
    "toy_quantize", [] { return std::unique_ptr<Challenge>(new ToyQuantize()); });

}  // namespace
}  // namespace fp4arena
