// w4a8_grouped_gemm: the input generators and oracle glue of the W4A8 grouped GEMM of a
// mixture of experts. Shapes and cases live in spec.json; this file only knows how to make
// the inputs a named generator describes and how to ask reference/ for the answer.
//
// Generators:
//   example   the README's worked example (T=3, N=2, K=16, G=3, expert 1 empty).
//   moe       Gaussian activations with outliers, quantized per row to E4M3 (x_scale =
//             amax/448); Gaussian weights quantized per expert by the reference NVFP4
//             quantizer (w_global = 1/gs); routing as params say (default Zipf-like).
//   moe_fast  the same activations and routing; weights drawn directly as codes (uniform
//             E2M1 nibbles, block scales log-uniform over E4M3 16..448, w_global chosen so
//             that outputs are of order one). Used by the benchmarks, where quantizing up to
//             3.8e9 weights per timed call on the CPU would take seconds.
// Routing params: "routing": "zipf" (default) | "one_expert" (every row to "expert");
// "zipf_s" (exponent, default 1.1); "empty_fraction" (share of experts forced empty,
// default 0.125); "empty_ends" (experts 0 and G-1 forced empty).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>

#include "challenges/w4a8_grouped_gemm/yardstick.h"
#include "harness/challenge.h"
#include "harness/rng.h"
#include "reference/fp4_codecs.h"
#include "reference/nvfp4.h"
#include "reference/oracle_w4a8_grouped_gemm.h"
#include "reference/parallel.h"

namespace fp4arena {
namespace {

// Stream ids keep the tensors' random sequences independent.
enum Stream : uint64_t { kX = 1, kW = 2, kWScales = 3, kWGlobal = 4, kRouting = 5 };

struct Params {
  std::string routing = "zipf";
  int64_t expert = 0;
  double zipf_s = 1.1;
  double empty_fraction = 0.125;
  bool empty_ends = false;
};

bool read_params(const CaseSpec& c, Params* p, std::string* err) {
  const std::string where = "case '" + c.name + "': params.";
  for (auto it = c.params.begin(); it != c.params.end(); ++it) {
    const std::string& k = it.key();
    if (k == "routing") {
      if (!it->is_string() ||
          (it->get<std::string>() != "zipf" && it->get<std::string>() != "one_expert")) {
        *err = where + "routing must be \"zipf\" or \"one_expert\"";
        return false;
      }
      p->routing = it->get<std::string>();
    } else if (k == "expert") {
      if (!it->is_number_integer()) {
        *err = where + "expert must be an integer";
        return false;
      }
      p->expert = it->get<int64_t>();
    } else if (k == "zipf_s" || k == "empty_fraction") {
      if (!it->is_number()) {
        *err = where + k + " must be a number";
        return false;
      }
      (k == "zipf_s" ? p->zipf_s : p->empty_fraction) = it->get<double>();
    } else if (k == "empty_ends") {
      if (!it->is_boolean()) {
        *err = where + "empty_ends must be true or false";
        return false;
      }
      p->empty_ends = it->get<bool>();
    } else {
      *err = where + k + " is unknown (known: routing, expert, zipf_s, empty_fraction, empty_ends)";
      return false;
    }
  }
  const int64_t G = c.dims.count("G") ? c.dims.at("G") : 1;
  if (p->expert < 0 || p->expert >= G) {
    *err = where + "expert must be in [0, G)";
    return false;
  }
  if (!(p->zipf_s >= 0 && p->zipf_s <= 4) || !(p->empty_fraction >= 0 && p->empty_fraction < 1)) {
    *err = where + "need 0 <= zipf_s <= 4 and 0 <= empty_fraction < 1";
    return false;
  }
  if (p->empty_ends && G < 3) {
    *err = where + "empty_ends needs G >= 3";
    return false;
  }
  return true;
}

// Rows per expert. Zipf: a random permutation ranks the experts; the expert of rank r gets
// weight 1/(r+1)^s unless forced empty; T is split by largest remainders, so the counts sum
// to T exactly and the result is deterministic.
std::vector<int> route(const Params& p, int64_t T, int64_t G, uint64_t seed) {
  std::vector<int> counts(G, 0);
  if (p.routing == "one_expert") {
    counts[p.expert] = static_cast<int>(T);
    return counts;
  }
  Rng rng(seed, kRouting, 0);
  std::vector<int64_t> perm(G);
  for (int64_t g = 0; g < G; ++g) perm[g] = g;
  for (int64_t i = G - 1; i > 0; --i) std::swap(perm[i], perm[rng.below(uint32_t(i + 1))]);
  std::vector<char> empty(G, 0);
  for (int64_t g = 0; g < G; ++g) empty[g] = rng.uniform() < p.empty_fraction;
  if (p.empty_ends) empty[0] = empty[G - 1] = 1;
  bool any = false;
  for (int64_t g = 0; g < G; ++g) any |= !empty[g];
  if (!any) empty[p.empty_ends ? 1 : perm[0]] = 0;
  std::vector<double> weight(G, 0.0);
  double total = 0;
  for (int64_t r = 0; r < G; ++r) {
    int64_t g = perm[r];
    if (!empty[g]) total += weight[g] = std::pow(double(r + 1), -p.zipf_s);
  }
  std::vector<std::pair<double, int64_t>> remainder;
  int64_t given = 0;
  for (int64_t g = 0; g < G; ++g) {
    double share = double(T) * weight[g] / total;
    counts[g] = static_cast<int>(std::floor(share));
    given += counts[g];
    if (!empty[g]) remainder.push_back({share - counts[g], g});
  }
  std::stable_sort(remainder.begin(), remainder.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  for (size_t i = 0; given < T; ++i, ++given) ++counts[remainder[i % remainder.size()].second];
  return counts;
}

// Activations: row t is Gaussian times a row amplitude 2^U(-3,3), with rare large outliers
// and two outlier channels; quantized per row to E4M3 with x_scale = amax / 448.
void make_activations(int64_t T, int64_t K, uint64_t seed, std::vector<uint8_t>* x,
                      std::vector<float>* x_scales) {
  x->assign(T * K, 0);
  x_scales->assign(T, 1.0f);
  parallel_for(T, [&](int64_t t0, int64_t t1) {
    std::vector<float> v(K);
    for (int64_t t = t0; t < t1; ++t) {
      Rng rng(seed, kX, t);
      const double amplitude = std::exp2(6 * rng.uniform() - 3);
      float amax = 0;
      for (int64_t k = 0; k < K; ++k) {
        double s = rng.normal();
        if (rng.uniform() < 0.002) s *= 10 + 40 * rng.uniform();
        if (k == 7 || k == K / 2 + 3) s *= 10;
        v[k] = static_cast<float>(amplitude * s);
        amax = std::max(amax, std::fabs(v[k]));
      }
      const float scale = amax > 0 ? amax / 448.0f : 1.0f;
      (*x_scales)[t] = scale;
      uint8_t* row = x->data() + t * K;
      for (int64_t k = 0; k < K; ++k) {
        row[k] = e4m3_encode_rne(std::clamp(v[k] / scale, -448.0f, 448.0f));
      }
    }
  });
}

// Weights by the NVFP4 recipe, one tensor (one global scale) per expert: Gaussian with a
// standard deviation of 2/sqrt(K) times a per-expert factor in [0.5, 2).
void make_quantized_weights(int64_t G, int64_t N, int64_t K, uint64_t seed, std::vector<uint8_t>* w,
                            std::vector<uint8_t>* w_scales, std::vector<float>* w_global) {
  w->assign(G * N * K / 2, 0);
  w_scales->assign(G * N * K / 16, 0);
  w_global->assign(G, 1.0f);
  parallel_for(
      G,
      [&](int64_t g0, int64_t g1) {
        std::vector<float> f(N * K);
        for (int64_t g = g0; g < g1; ++g) {
          const double sd =
              2.0 / std::sqrt(double(K)) * std::exp2(2 * Rng(seed, kWGlobal, g).uniform() - 1);
          for (int64_t n = 0; n < N; ++n) {
            Rng rng(seed, kW, g * N + n);
            for (int64_t k = 0; k < K; ++k) f[n * K + k] = static_cast<float>(sd * rng.normal());
          }
          Nvfp4Tensor q = nvfp4_quantize(f.data(), int(N), int(K));
          std::memcpy(w->data() + g * N * K / 2, q.packed.data(), q.packed.size());
          std::memcpy(w_scales->data() + g * N * K / 16, q.scales.data(), q.scales.size());
          (*w_global)[g] = 1.0f / q.global_scale;
        }
      },
      int(std::min<int64_t>(G, 64)));
}

// Weights drawn directly as codes (the benchmarks' fast path): every nibble uniform over the
// 16 E2M1 codes (RMS value 2.93), block scales uniform over the E4M3 codes 0x58..0x7E (16 to
// 448, RMS about 200), w_global = 2^U(-1,1) / (2.93 * 200 * sqrt(K)): outputs of order one.
void make_code_weights(int64_t G, int64_t N, int64_t K, uint64_t seed, std::vector<uint8_t>* w,
                       std::vector<uint8_t>* w_scales, std::vector<float>* w_global) {
  w->assign(G * N * K / 2, 0);
  w_scales->assign(G * N * K / 16, 0);
  w_global->assign(G, 1.0f);
  const int64_t rows = G * N;
  parallel_for(rows, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      Rng rng(seed, kW, r);
      uint8_t* row = w->data() + r * K / 2;
      for (int64_t j = 0; j < K / 2; j += 8) {
        uint64_t bits = rng.next();
        std::memcpy(row + j, &bits, 8);  // K/2 is a multiple of 8
      }
      uint8_t* srow = w_scales->data() + r * K / 16;
      uint64_t bits = 0;
      for (int64_t j = 0; j < K / 16; ++j) {
        if (j % 8 == 0) bits = rng.next();
        srow[j] = static_cast<uint8_t>(0x58 + ((bits & 0xFF) * 39 >> 8));  // 0x58..0x7E
        bits >>= 8;
      }
    }
  });
  for (int64_t g = 0; g < G; ++g) {
    double f = std::exp2(2 * Rng(seed, kWGlobal, g).uniform() - 1);
    (*w_global)[g] = static_cast<float>(f / (2.93 * 200 * std::sqrt(double(K))));
  }
}

class W4a8GroupedGemm : public Challenge {
 public:
  bool check_case(const CaseSpec& c, std::string* err) const override {
    static const std::set<std::string> kGenerators = {"example", "moe", "moe_fast"};
    if (!kGenerators.count(c.generator)) {
      *err = "case '" + c.name + "': unknown generator '" + c.generator +
             "' (known: example, moe, moe_fast)";
      return false;
    }
    for (const char* d : {"T", "N", "K", "G"}) {
      if (!c.dims.count(d)) {
        *err = "case '" + c.name + "': missing dim " + d;
        return false;
      }
    }
    Params p;
    if (!read_params(c, &p, err)) return false;
    const int64_t T = c.dims.at("T"), N = c.dims.at("N"), K = c.dims.at("K"), G = c.dims.at("G");
    if (c.generator == "example" && (T != 3 || N != 2 || K != 16 || G != 3)) {
      *err = "case '" + c.name + "': generator 'example' needs T=3, N=2, K=16, G=3";
      return false;
    }
    (void)N;
    return true;
  }

  bool generate(const CaseSpec& c, uint64_t seed, ProblemData* out,
                std::string* err) const override {
    Params p;
    if (!read_params(c, &p, err)) return false;
    const int64_t T = c.dims.at("T"), N = c.dims.at("N"), K = c.dims.at("K"), G = c.dims.at("G");
    std::vector<uint8_t> x, w, w_scales;
    std::vector<float> x_scales, w_global;
    std::vector<int> counts;
    if (c.generator == "example") {
      make_example(&x, &x_scales, &w, &w_scales, &w_global);
      counts = {2, 0, 1};
    } else {
      counts = route(p, T, G, seed);
      make_activations(T, K, seed, &x, &x_scales);
      if (c.generator == "moe") {
        make_quantized_weights(G, N, K, seed, &w, &w_scales, &w_global);
      } else {
        make_code_weights(G, N, K, seed, &w, &w_scales, &w_global);
      }
    }
    std::vector<int> offsets(G + 1, 0);
    for (int64_t g = 0; g < G; ++g) offsets[g + 1] = offsets[g] + counts[g];
    out->dims = c.dims;
    out->scalars.clear();
    out->buffers.clear();
    out->buffers["x"] = std::move(x);
    out->buffers["x_scales"] = bytes_of(x_scales);
    out->buffers["w"] = std::move(w);
    out->buffers["w_scales"] = std::move(w_scales);
    out->buffers["w_global"] = bytes_of(w_global);
    out->buffers["group_offsets"] = bytes_of(offsets);
    return true;
  }

  bool oracle(const ProblemData& in, OracleDevice where, Expected* out,
              std::string* err) const override {
    W4a8GroupedGemmProblem p = problem_of(in);
    std::vector<float>& y = (*out)["y"].values;
    y.assign(static_cast<size_t>(p.T) * p.N, 0.0f);
    if (where == OracleDevice::kGpu) return oracle_w4a8_grouped_gemm_gpu(p, y.data(), err);
    return oracle_w4a8_grouped_gemm_cpu(p, y.data(), err);
  }

  std::string yardstick_name() const override {
    return "cuBLAS BF16 grouped GEMM (cublasGemmGroupedBatchedEx) on pre-dequantized operands";
  }

  std::unique_ptr<Yardstick> make_yardstick(const ProblemData& in,
                                            std::string* err) const override {
    return make_cublas_bf16_grouped_gemm(problem_of(in), err);
  }

  // The spec's "bytes" less the weights and scales of the experts that get no rows: no
  // kernel needs to read those.
  double min_bytes(const ProblemData& in) const override {
    const W4a8GroupedGemmProblem p = problem_of(in);
    const double T = p.T, N = p.N, K = p.K, G = p.G;
    double bytes = T * K + 4 * T + 4 * G + 4 * (G + 1) + 2 * T * N;
    for (int g = 0; g < p.G; ++g)
      if (p.group_offsets[g + 1] > p.group_offsets[g]) bytes += N * K / 2 + N * K / 16;
    return bytes;
  }

 private:
  template <typename T>
  static std::vector<uint8_t> bytes_of(const std::vector<T>& v) {
    std::vector<uint8_t> b(v.size() * sizeof(T));
    if (!v.empty()) std::memcpy(b.data(), v.data(), b.size());
    return b;
  }

  // The reference/ view of a generated problem (pointers into `in`).
  static W4a8GroupedGemmProblem problem_of(const ProblemData& in) {
    W4a8GroupedGemmProblem p;
    p.T = static_cast<int>(in.dims.at("T"));
    p.N = static_cast<int>(in.dims.at("N"));
    p.K = static_cast<int>(in.dims.at("K"));
    p.G = static_cast<int>(in.dims.at("G"));
    p.x = in.buffers.at("x").data();
    p.x_scales = reinterpret_cast<const float*>(in.buffers.at("x_scales").data());
    p.w = in.buffers.at("w").data();
    p.w_scales = in.buffers.at("w_scales").data();
    p.w_global = reinterpret_cast<const float*>(in.buffers.at("w_global").data());
    p.group_offsets = reinterpret_cast<const int*>(in.buffers.at("group_offsets").data());
    return p;
  }

  // The README's worked example: T=3, N=2, K=16, G=3, offsets {0, 2, 2, 3} (expert 1 has no
  // rows; its weights are large so that a kernel reading them shows it).
  //   y = [[2, 0.875], [0.25, 2.75], [-2, 12]]
  static void make_example(std::vector<uint8_t>* x, std::vector<float>* x_scales,
                           std::vector<uint8_t>* w, std::vector<uint8_t>* w_scales,
                           std::vector<float>* w_global) {
    const int K = 16, N = 2;
    x->assign(3 * K, 0);
    for (int k = 0; k < K; ++k) (*x)[0 * K + k] = 0x38;  // row 0: 1.0 everywhere
    (*x)[1 * K + 0] = 0x40;                              // row 1: 2.0, -1.0, then 0
    (*x)[1 * K + 1] = 0xB8;
    for (int k = 0; k < K; ++k) (*x)[2 * K + k] = 0x30;  // row 2: 0.5 everywhere
    *x_scales = {0.5f, 1.0f, 2.0f};
    w->assign(3 * N * K / 2, 0);
    w_scales->assign(3 * N * K / 16, 0);
    auto set = [&](int g, int n, int k, uint8_t code) {
      uint8_t& b = (*w)[(g * N + n) * K / 2 + k / 2];
      b = static_cast<uint8_t>(k % 2 ? (b & 0x0F) | code << 4 : (b & 0xF0) | code);
    };
    for (int k = 0; k < K; ++k) {
      set(0, 0, k, 0x2);  // expert 0, n 0: 1.0 everywhere, block scale 1.0
      set(1, 0, k, 0x7);  // expert 1 (no rows): 6.0 everywhere, block scale 448
      set(1, 1, k, 0x7);
      set(2, 0, k, 0x9);  // expert 2, n 0: -0.5 everywhere, block scale 0.5
      set(2, 1, k, 0x7);  // expert 2, n 1: 6.0 everywhere, block scale 0.25
    }
    set(0, 1, 0, 0x5);  // expert 0, n 1: 3.0, 0.5, then 0; block scale 2.0
    set(0, 1, 1, 0x1);
    *w_scales = {0x38, 0x40, 0x7E, 0x7E, 0x30, 0x28};
    *w_global = {0.25f, 1.0f, 0.5f};
  }
};

const bool kRegistered = register_challenge(
    "w4a8_grouped_gemm", [] { return std::unique_ptr<Challenge>(new W4a8GroupedGemm()); });

}  // namespace
}  // namespace fp4arena
