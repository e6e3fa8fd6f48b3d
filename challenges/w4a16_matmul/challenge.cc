// w4a16_matmul: the input generators and oracle glue of the W4A16 matmul (FP16 activations
// times E2M1 weights with one FP16 scale per group of k). Everything about the cases is in
// spec.json; this file only knows how to make the inputs a named generator describes, and how
// to ask reference/ for the answer.
#include <cmath>
#include <cstring>
#include <set>

#include "challenges/w4a16_matmul/yardstick.h"
#include "harness/challenge.h"
#include "harness/generate.h"
#include "harness/rng.h"
#include "reference/oracle_w4a16_matmul.h"
#include "reference/parallel.h"
#include "reference/w4a16_quantize.h"

namespace fp4arena {
namespace {

// Stream ids keep the tensors' random sequences independent.
enum Stream : uint64_t { kX = 1, kW = 2, kScales = 3, kValues = 4 };

struct Inputs {
  std::vector<__half> x;       // M x K
  std::vector<uint8_t> w;      // N x K/2
  std::vector<__half> scales;  // N x K/group_size
};

template <typename T>
std::vector<uint8_t> bytes_of(const std::vector<T>& v) {
  std::vector<uint8_t> out(v.size() * sizeof(T));
  if (!v.empty()) std::memcpy(out.data(), v.data(), out.size());
  return out;
}

// rows x cols FP16 values fn(rng, r, c), one generator per row.
template <typename ValueFn>
std::vector<__half> make_halves(int64_t rows, int64_t cols, uint64_t seed, uint64_t stream,
                                ValueFn fn) {
  std::vector<__half> out(rows * cols);
  parallel_for(rows, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      Rng rng(seed, stream, r);
      for (int64_t c = 0; c < cols; ++c) out[r * cols + c] = fn(rng, r, c);
    }
  });
  return out;
}

__half h(double v) {
  return __float2half_rn(static_cast<float>(v));
}

// FP16 of a value uniform in [lo, hi).
auto uniform_half(double lo, double hi) {
  return [lo, hi](Rng& rng, int64_t, int64_t) { return h(lo + (hi - lo) * rng.uniform()); };
}

uint8_t random_code(Rng& rng, int64_t, int64_t) {
  return static_cast<uint8_t>(rng.next() >> 60);
}

uint8_t positive_code(Rng& rng, int64_t, int64_t) {
  return static_cast<uint8_t>(rng.next() >> 61);  // codes 0..7: non-negative values
}

class W4a16Matmul : public Challenge {
 public:
  bool check_case(const CaseSpec& c, std::string* err) const override {
    static const std::set<std::string> kGenerators = {
        "example",          "uniform",           "varied_scales",     "all_e2m1_codes",
        "subnormal_scales", "fp16_range_scales", "gaussian_outliers", "positive"};
    if (!kGenerators.count(c.generator)) {
      *err = "case '" + c.name + "': unknown generator '" + c.generator +
             "' (known: example, uniform, varied_scales, all_e2m1_codes, subnormal_scales, "
             "fp16_range_scales, gaussian_outliers, positive)";
      return false;
    }
    if (!c.params.empty()) {
      *err = "case '" + c.name + "': generator '" + c.generator + "' takes no params";
      return false;
    }
    const int64_t M = c.dims.at("M"), N = c.dims.at("N"), K = c.dims.at("K");
    const int64_t group = c.dims.at("group_size");
    if (K % group != 0) {
      *err = "case '" + c.name + "': K (" + std::to_string(K) +
             ") must be a multiple of group_size (" + std::to_string(group) + ")";
      return false;
    }
    if (c.generator == "example" && (M != 2 || N != 2 || K != 64 || group != 32)) {
      *err = "case '" + c.name + "': generator 'example' needs M=2, N=2, K=64, group_size=32";
      return false;
    }
    return true;
  }

  bool generate(const CaseSpec& c, uint64_t seed, ProblemData* out,
                std::string* err) const override {
    if (!check_case(c, err)) return false;
    const int64_t M = c.dims.at("M"), N = c.dims.at("N"), K = c.dims.at("K");
    const int64_t G = K / c.dims.at("group_size");  // groups per row
    const std::string& g = c.generator;
    Inputs in;
    if (g == "example") {
      in = make_example();
    } else if (g == "uniform" || g == "varied_scales") {
      in.x = make_halves(M, K, seed, kX, uniform_half(-1, 1));
      in.w = make_codes(N, K, seed, kW, random_code);
      if (g == "uniform") {
        in.scales = make_halves(N, G, seed, kScales, uniform_half(1.0 / 32, 1.0 / 8));
      } else {
        // Log-uniform over 2^-10 .. 2^0: neighbouring groups differ by large factors, so a
        // kernel that reads the scale of the wrong group is far off.
        in.scales = make_halves(N, G, seed, kScales, [](Rng& rng, int64_t, int64_t) {
          return h(std::ldexp(1.0 + rng.uniform(), int(rng.below(10)) - 10));
        });
      }
    } else if (g == "all_e2m1_codes") {
      in.x = make_halves(M, K, seed, kX, uniform_half(-1, 1));
      in.w = make_codes(N, K, seed, kW, [](Rng&, int64_t r, int64_t k) {
        return static_cast<uint8_t>((k + 3 * r) % 16);
      });
      in.scales = make_halves(N, G, seed, kScales, uniform_half(1.0 / 32, 1.0 / 8));
    } else if (g == "subnormal_scales") {
      // Scales are FP16 subnormals (bits 0x0040..0x03FF: 2^-18 .. 2^-14 - 2^-24) and
      // activations large (|x| < 8192), so outputs are of order 1-10: a kernel that
      // flushes subnormal scales to zero writes zeros.
      in.x = make_halves(M, K, seed, kX, uniform_half(-8192, 8192));
      in.w = make_codes(N, K, seed, kW, random_code);
      in.scales = make_halves(N, G, seed, kScales, [](Rng& rng, int64_t, int64_t) {
        return __ushort_as_half(static_cast<unsigned short>(0x0040 + rng.below(0x03FF - 0x40 + 1)));
      });
    } else if (g == "fp16_range_scales") {
      // Scales up to 10912, the largest FP16 with 6 * s <= 65504: dequantized weights reach
      // 65472, the top of FP16's range; activations |x| < 2^-14 (FP16 subnormals among them)
      // keep outputs of order 10.
      in.x = make_halves(M, K, seed, kX, uniform_half(-1.0 / 16384, 1.0 / 16384));
      in.w = make_codes(N, K, seed, kW, random_code);
      in.scales = make_halves(N, G, seed, kScales, uniform_half(8192, 10912));
    } else if (g == "positive") {
      in.x = make_halves(M, K, seed, kX, uniform_half(0, 1));
      in.w = make_codes(N, K, seed, kW, positive_code);
      in.scales = make_halves(N, G, seed, kScales, uniform_half(0.5, 2));
    } else if (g == "gaussian_outliers") {
      make_gaussian(M, N, K, c.dims.at("group_size"), seed, &in);
    }
    out->dims = c.dims;
    out->buffers["x"] = bytes_of(in.x);
    out->buffers["w"] = std::move(in.w);
    out->buffers["w_scales"] = bytes_of(in.scales);
    return true;
  }

  bool oracle(const ProblemData& in, OracleDevice where, Expected* out,
              std::string* err) const override {
    W4a16MatmulProblem p = problem_of(in);
    std::vector<float>& y = (*out)["y"].values;
    y.assign(static_cast<size_t>(p.M) * p.N, 0.0f);
    if (where == OracleDevice::kGpu) return oracle_w4a16_matmul_gpu(p, y.data(), err);
    return oracle_w4a16_matmul_cpu(p, y.data(), err);
  }

  std::string yardstick_name() const override {
    return "cuBLAS FP16 GEMM on weights dequantized to FP16 beforehand";
  }

  std::unique_ptr<Yardstick> make_yardstick(const ProblemData& in,
                                            std::string* err) const override {
    return make_cublas_w4a16_yardstick(problem_of(in), err);
  }

 private:
  // The reference/ view of a generated problem (pointers into `in`).
  static W4a16MatmulProblem problem_of(const ProblemData& in) {
    W4a16MatmulProblem p;
    p.M = static_cast<int>(in.dims.at("M"));
    p.N = static_cast<int>(in.dims.at("N"));
    p.K = static_cast<int>(in.dims.at("K"));
    p.group_size = static_cast<int>(in.dims.at("group_size"));
    p.x = reinterpret_cast<const __half*>(in.buffers.at("x").data());
    p.w = in.buffers.at("w").data();
    p.w_scales = reinterpret_cast<const __half*>(in.buffers.at("w_scales").data());
    return p;
  }

  // The README's worked example (M=2, N=2, K=64, group_size=32):
  //   y = [[3.5, 4.5], [0.625, 24]].
  static Inputs make_example() {
    Inputs in;
    in.x.assign(2 * 64, h(0));
    in.x[0] = h(1);                                      // x[0][0]
    in.x[1] = h(2);                                      // x[0][1]
    in.x[32] = h(3);                                     // x[0][32]
    for (int k = 0; k < 64; ++k) in.x[64 + k] = h(0.5);  // row 1: all 0.5
    in.w.assign(2 * 32, 0);
    in.w[0] = 0xB2;   // w[0][0] = code 0x2 (1.0, low nibble), w[0][1] = 0xB (-1.5, high)
    in.w[16] = 0x07;  // w[0][32] = code 0x7 (6.0), w[0][33] = 0
    for (int j = 32; j < 64; ++j) in.w[j] = 0x11;   // row 1: every element 0.5
    in.scales = {h(0.5), h(0.25), h(2.0), h(1.0)};  // row 0: 0.5, 0.25; row 1: 2, 1
    return in;
  }

  // Realistic data: Gaussian activations with rare large outliers and two outlier channels,
  // rounded to FP16; Gaussian weights quantized by the reference quantizer (scale = group
  // amax / 6 in FP16, E2M1 round-to-nearest-even).
  static void make_gaussian(int64_t M, int64_t N, int64_t K, int64_t group, uint64_t seed,
                            Inputs* in) {
    in->x = make_halves(M, K, seed, kValues, [K](Rng& rng, int64_t, int64_t k) {
      double v = rng.normal();
      if (rng.uniform() < 0.005) v *= 10 + 40 * rng.uniform();
      if (k == 7 || k == K / 2 + 3) v *= 20;
      return h(v);
    });
    std::vector<float> w(N * K);
    parallel_for(N, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        Rng rng(seed, kValues + 1, r);
        for (int64_t k = 0; k < K; ++k) w[r * K + k] = static_cast<float>(0.05 * rng.normal());
      }
    });
    W4a16Weights q = w4a16_quantize(w.data(), int(N), int(K), int(group));
    in->w = std::move(q.packed);
    in->scales = std::move(q.scales);
  }
};

const bool kRegistered = register_challenge(
    "w4a16_matmul", [] { return std::unique_ptr<Challenge>(new W4a16Matmul()); });

}  // namespace
}  // namespace fp4arena
