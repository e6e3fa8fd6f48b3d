// nvfp4_matmul: the input generators and oracle glue of the NVFP4 x NVFP4 matmul.
// Everything about the problem's shape and cases is in spec.json; this file only knows how
// to make the inputs a named generator describes, and how to ask reference/ for the answer.
#include <cmath>
#include <cstring>
#include <set>

#include "challenges/nvfp4_matmul/yardstick.h"
#include "harness/challenge.h"
#include "harness/generate.h"
#include "harness/rng.h"
#include "reference/fp4_codecs.h"
#include "reference/nvfp4.h"
#include "reference/oracle.h"
#include "reference/parallel.h"

namespace fp4arena {
namespace {

// Stream ids keep the four tensors' random sequences independent.
enum Stream : uint64_t { kA = 1, kAScales = 2, kB = 3, kBScales = 4, kValues = 5 };

struct Operand {
  std::vector<uint8_t> packed;  // rows x K/2
  std::vector<uint8_t> scales;  // rows x K/16
};

struct Params {
  double alpha = 1.0 / 64;
  double scale_lo = 0.5;
  double scale_hi = 2.0;
  std::string side = "a";
};

bool read_params(const CaseSpec& c, Params* p, std::string* err) {
  for (auto it = c.params.begin(); it != c.params.end(); ++it) {
    const std::string& k = it.key();
    if (k == "alpha" || k == "scale_lo" || k == "scale_hi") {
      if (!it->is_number()) {
        *err = "case '" + c.name + "': params." + k + " must be a number";
        return false;
      }
      double v = it->get<double>();
      (k == "alpha" ? p->alpha : k == "scale_lo" ? p->scale_lo : p->scale_hi) = v;
    } else if (k == "side") {
      if (!it->is_string() || (it->get<std::string>() != "a" && it->get<std::string>() != "b")) {
        *err = "case '" + c.name + "': params.side must be \"a\" or \"b\"";
        return false;
      }
      p->side = it->get<std::string>();
    } else {
      *err = "case '" + c.name + "': unknown params." + k +
             " (known: alpha, scale_lo, scale_hi, side)";
      return false;
    }
  }
  if (!(p->alpha > 0) || !std::isfinite(p->alpha) || !(p->scale_lo > 0) ||
      !(p->scale_hi > p->scale_lo) || p->scale_hi > 448) {
    *err = "case '" + c.name + "': need alpha > 0 and 0 < scale_lo < scale_hi <= 448";
    return false;
  }
  return true;
}

// Scale codes: E4M3 round-to-nearest-even of a uniform value in [lo, hi).
std::vector<uint8_t> make_uniform_scales(int64_t rows, int64_t K, uint64_t seed, uint64_t stream,
                                         double lo, double hi) {
  std::vector<uint8_t> out(rows * K / 16);
  parallel_for(rows, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      Rng rng(seed, stream, r);
      for (int64_t j = 0; j < K / 16; ++j) {
        out[r * K / 16 + j] = e4m3_encode_rne(static_cast<float>(lo + (hi - lo) * rng.uniform()));
      }
    }
  });
  return out;
}

uint8_t random_code(Rng& rng, int64_t, int64_t) {
  return static_cast<uint8_t>(rng.next() >> 60);
}

// The largest E4M3 code whose value is at most `v` (v > 0): used to pick compensating
// scales in the all_scale_codes generator.
uint8_t e4m3_floor_code(double v) {
  uint8_t best = 0x01;
  for (int code = 0x01; code <= 0x7E; ++code) {
    if (e4m3_decode(static_cast<uint8_t>(code)) <= v) best = static_cast<uint8_t>(code);
  }
  return best;
}

class Nvfp4Matmul : public Challenge {
 public:
  bool check_case(const CaseSpec& c, std::string* err) const override {
    static const std::set<std::string> kGenerators = {
        "example",        "uniform",         "zero_a",   "all_scale_codes",
        "all_e2m1_codes", "near_fp16_limit", "positive", "gaussian_outliers"};
    if (!kGenerators.count(c.generator)) {
      *err = "case '" + c.name + "': unknown generator '" + c.generator +
             "' (known: example, uniform, zero_a, all_scale_codes, all_e2m1_codes, "
             "near_fp16_limit, positive, gaussian_outliers)";
      return false;
    }
    Params p;
    if (!read_params(c, &p, err)) return false;
    int64_t M = c.dims.at("M"), N = c.dims.at("N"), K = c.dims.at("K");
    if (c.generator == "example" && (M != 2 || N != 2 || K != 32)) {
      *err = "case '" + c.name + "': generator 'example' needs M=2, N=2, K=32";
      return false;
    }
    if (c.generator == "all_scale_codes") {
      int64_t other = p.side == "a" ? N : M;
      if (K != 126 * 16 || other % 126 != 0) {
        *err = "case '" + c.name +
               "': generator 'all_scale_codes' needs K = 2016 (126 scale blocks) and the "
               "other operand's rows a multiple of 126";
        return false;
      }
    }
    return true;
  }

  bool generate(const CaseSpec& c, uint64_t seed, ProblemData* out,
                std::string* err) const override {
    Params p;
    if (!read_params(c, &p, err)) return false;
    const int64_t M = c.dims.at("M"), N = c.dims.at("N"), K = c.dims.at("K");
    Operand a, b;
    double alpha = p.alpha;
    const std::string& g = c.generator;
    if (g == "example") {
      make_example(&a, &b);
      alpha = 0.5;
    } else if (g == "uniform" || g == "zero_a" || g == "positive") {
      auto positive = [](Rng& rng, int64_t, int64_t) {
        return static_cast<uint8_t>(rng.next() >> 61);  // codes 0..7: non-negative values
      };
      if (g == "zero_a") {
        // Only +0 (code 0) and -0 (code 8) in A.
        a.packed = make_codes(M, K, seed, kA, [](Rng& rng, int64_t, int64_t) {
          return static_cast<uint8_t>((rng.next() >> 63) << 3);
        });
      } else if (g == "positive") {
        a.packed = make_codes(M, K, seed, kA, positive);
      } else {
        a.packed = make_codes(M, K, seed, kA, random_code);
      }
      b.packed = g == "positive" ? make_codes(N, K, seed, kB, positive)
                                 : make_codes(N, K, seed, kB, random_code);
      a.scales = make_uniform_scales(M, K, seed, kAScales, p.scale_lo, p.scale_hi);
      b.scales = make_uniform_scales(N, K, seed, kBScales, p.scale_lo, p.scale_hi);
    } else if (g == "all_e2m1_codes") {
      a.packed = make_codes(M, K, seed, kA,
                            [](Rng&, int64_t r, int64_t k) { return uint8_t((k + r) % 16); });
      b.packed = make_codes(
          N, K, seed, kB, [](Rng&, int64_t r, int64_t k) { return uint8_t((k * 7 + r * 3) % 16); });
      a.scales = make_uniform_scales(M, K, seed, kAScales, p.scale_lo, p.scale_hi);
      b.scales = make_uniform_scales(N, K, seed, kBScales, p.scale_lo, p.scale_hi);
    } else if (g == "all_scale_codes") {
      make_all_scale_codes(M, N, K, seed, p.side == "a", &a, &b);
      alpha = 1.0;
    } else if (g == "near_fp16_limit") {
      a.packed = make_codes(M, K, seed, kA, random_code);
      b.packed = make_codes(N, K, seed, kB, random_code);
      a.scales = make_uniform_scales(M, K, seed, kAScales, p.scale_lo, p.scale_hi);
      b.scales = make_uniform_scales(N, K, seed, kBScales, p.scale_lo, p.scale_hi);
      // Scale so that the largest |c| is 60000, close to FP16's largest finite 65504.
      std::vector<float> c1(M * N);
      Nvfp4MatmulProblem prob{int(M),          int(N),          int(K),          a.packed.data(),
                              a.scales.data(), b.packed.data(), b.scales.data(), 1.0f};
      oracle_fp32_cpu(prob, c1.data());
      double amax = 0;
      for (float v : c1) amax = std::max(amax, std::fabs(double(v)));
      if (amax == 0) {
        *err = "case '" + c.name + "': generated an all-zero product";
        return false;
      }
      alpha = 60000.0 / amax;
    } else if (g == "gaussian_outliers") {
      make_gaussian(M, N, K, seed, &a, &b, &alpha);
    }
    out->dims = c.dims;
    out->scalars["alpha"] = static_cast<float>(alpha);
    out->buffers["a"] = std::move(a.packed);
    out->buffers["a_scales"] = std::move(a.scales);
    out->buffers["b"] = std::move(b.packed);
    out->buffers["b_scales"] = std::move(b.scales);
    return true;
  }

  bool oracle(const ProblemData& in, OracleDevice where, Expected* out,
              std::string* err) const override {
    Nvfp4MatmulProblem p = problem_of(in);
    std::vector<float>& c = (*out)["c"].values;
    c.assign(static_cast<size_t>(p.M) * p.N, 0.0f);
    if (where == OracleDevice::kGpu) return oracle_fp32_gpu(p, c.data(), err);
    oracle_fp32_cpu(p, c.data());
    return true;
  }

  std::string yardstick_name() const override {
    return "cuBLAS FP16 GEMM on pre-dequantized operands";
  }

  std::unique_ptr<Yardstick> make_yardstick(const ProblemData& in,
                                            std::string* err) const override {
    return make_cublas_fp16_gemm(problem_of(in), err);
  }

 private:
  // The reference/ view of a generated problem (pointers into `in`).
  static Nvfp4MatmulProblem problem_of(const ProblemData& in) {
    Nvfp4MatmulProblem p;
    p.M = static_cast<int>(in.dims.at("M"));
    p.N = static_cast<int>(in.dims.at("N"));
    p.K = static_cast<int>(in.dims.at("K"));
    p.a = in.buffers.at("a").data();
    p.a_scales = in.buffers.at("a_scales").data();
    p.b = in.buffers.at("b").data();
    p.b_scales = in.buffers.at("b_scales").data();
    p.alpha = static_cast<float>(in.scalars.at("alpha"));
    return p;
  }

  // The README's worked example (M=2, N=2, K=32, alpha=0.5): c = [[8, 0.3125], [1, 0.375]].
  static void make_example(Operand* a, Operand* b) {
    auto pack = [](std::vector<uint8_t>& row, int k, uint8_t code) {
      row[k / 2] |= static_cast<uint8_t>((code & 0xF) << (k % 2 ? 4 : 0));
    };
    std::vector<uint8_t> a0(16, 0), a1(16, 0), b0(16, 0), b1(16, 0);
    for (int k = 0; k < 32; ++k) pack(a0, k, k < 16 ? 0x2 : 0x4);  // 1.0 then 2.0
    pack(a1, 0, 0x5);                                              // 3.0
    pack(a1, 1, 0xA);                                              // -1.0
    for (int k = 0; k < 32; ++k) pack(b0, k, 0x1);                 // 0.5
    pack(b1, 0, 0x2);                                              // 1.0
    pack(b1, 1, 0x3);                                              // 1.5
    a->packed = a0;
    a->packed.insert(a->packed.end(), a1.begin(), a1.end());
    b->packed = b0;
    b->packed.insert(b->packed.end(), b1.begin(), b1.end());
    a->scales = {0x38, 0x30, 0x40, 0x38};  // row 0: 1.0, 0.5; row 1: 2.0, 1.0
    b->scales = {0x38, 0x38, 0x28, 0x38};  // row 0: 1.0, 1.0; row 1: 0.25, 1.0
  }

  // Every positive finite E4M3 code 0x01..0x7E appears as a scale of the tested operand:
  // block j of every row uses code j+1. Each row of the other operand is zero outside one
  // block j and carries there a scale close to 1/e4m3(j+1), so every output is of order
  // one and a misdecoded scale code shows as an error far above the tolerance.
  static void make_all_scale_codes(int64_t M, int64_t N, int64_t K, uint64_t seed, bool test_a,
                                   Operand* a, Operand* b) {
    int64_t rows_t = test_a ? M : N, rows_o = test_a ? N : M;
    Operand t, o;
    t.packed = make_codes(rows_t, K, seed, kA, [](Rng& rng, int64_t, int64_t) {
      uint8_t code = static_cast<uint8_t>(rng.next() >> 60);
      return static_cast<uint8_t>(code & 7 ? code : code | 2);  // nonzero values
    });
    t.scales.resize(rows_t * K / 16);
    for (int64_t r = 0; r < rows_t; ++r) {
      for (int64_t j = 0; j < K / 16; ++j) t.scales[r * K / 16 + j] = uint8_t(j + 1);
    }
    o.packed = make_codes(rows_o, K, seed, kB, [](Rng& rng, int64_t r, int64_t k) {
      uint8_t code = static_cast<uint8_t>(rng.next() >> 60);
      if (k / 16 != r % 126) return uint8_t(0);
      return static_cast<uint8_t>(code & 7 ? code : code | 2);
    });
    o.scales = make_uniform_scales(rows_o, K, seed, kBScales, 0.5, 2.0);
    for (int64_t r = 0; r < rows_o; ++r) {
      int64_t j = r % 126;
      o.scales[r * K / 16 + j] = e4m3_floor_code(1.0 / e4m3_decode(uint8_t(j + 1)));
    }
    *a = test_a ? t : o;
    *b = test_a ? o : t;
  }

  // Realistic data by the standard NVFP4 recipe: Gaussian activations with rare large
  // outliers and two outlier channels, Gaussian weights; alpha = 1 / (gs_a * gs_b).
  static void make_gaussian(int64_t M, int64_t N, int64_t K, uint64_t seed, Operand* a, Operand* b,
                            double* alpha) {
    std::vector<float> x(M * K), w(N * K);
    for (int64_t r = 0; r < M; ++r) {
      Rng rng(seed, kValues, r);
      for (int64_t k = 0; k < K; ++k) {
        double v = rng.normal();
        if (rng.uniform() < 0.005) v *= 10 + 40 * rng.uniform();
        if (k == 7 || k == K / 2 + 3) v *= 20;
        x[r * K + k] = static_cast<float>(v);
      }
    }
    for (int64_t r = 0; r < N; ++r) {
      Rng rng(seed, kValues + 1, r);
      for (int64_t k = 0; k < K; ++k) w[r * K + k] = static_cast<float>(0.5 * rng.normal());
    }
    Nvfp4Tensor qa = nvfp4_quantize(x.data(), int(M), int(K));
    Nvfp4Tensor qb = nvfp4_quantize(w.data(), int(N), int(K));
    a->packed = std::move(qa.packed);
    a->scales = std::move(qa.scales);
    b->packed = std::move(qb.packed);
    b->scales = std::move(qb.scales);
    *alpha = 1.0 / (double(qa.global_scale) * double(qb.global_scale));
  }
};

const bool kRegistered = register_challenge(
    "nvfp4_matmul", [] { return std::unique_ptr<Challenge>(new Nvfp4Matmul()); });

}  // namespace
}  // namespace fp4arena
